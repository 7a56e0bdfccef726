/* A strict JSON parse (RFC 8259) for the tests of ddpsim's JSON outputs
 * (json_check.h): every value, nothing after. */
#include "tests/json_check.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/textout.h"

/* Bytes 0x80 and up must be well-formed UTF-8 (RFC 8259 section 8.1). */
static int utf8_ok(const char *p, size_t n) {
  char *s = strndup(p, n);
  int ok = s && ds_textout_utf8_invalid(s) == NULL;
  free(s);
  return ok;
}

static void ws(const char **p) {
  while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r') (*p)++;
}

static int value(const char **p);

/* A string into out (cap bytes, or NULL): escapes decoded (\uXXXX below 0x80). */
int ds_test_json_string(const char **p, char *out, size_t cap) {
  size_t n = 0;
  if (**p != '"') return 0;
  for ((*p)++; **p != '"'; (*p)++) {
    unsigned char ch = (unsigned char)**p;
    if (ch < 0x20) return 0; /* a raw control character */
    if (ch == '\\') {
      (*p)++;
      const char *esc = strchr("\"\\/bfnrtu", **p);
      if (!**p || !esc) return 0;
      static const char decoded[] = "\"\\/\b\f\n\r\t";
      if (**p == 'u') {
        unsigned v = 0;
        for (int i = 1; i <= 4; i++) {
          char h = (*p)[i];
          if (!strchr("0123456789abcdefABCDEF", h) || !h) return 0;
          v = v * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
        }
        *p += 4;
        ch = (unsigned char)(v < 0x80 ? v : '?');
      } else {
        ch = (unsigned char)decoded[esc - "\"\\/bfnrtu"];
      }
    }
    if (out && n + 1 < cap) out[n++] = (char)ch;
  }
  (*p)++;
  if (out) out[n] = '\0';
  return 1;
}

static int number(const char **p) {
  const char *s = *p;
  if (**p == '-') (*p)++;
  if (**p == '0') (*p)++;
  else if (**p >= '1' && **p <= '9') while (**p >= '0' && **p <= '9') (*p)++;
  else return 0;
  if (**p == '.') {
    (*p)++;
    if (!(**p >= '0' && **p <= '9')) return 0;
    while (**p >= '0' && **p <= '9') (*p)++;
  }
  if (**p == 'e' || **p == 'E') {
    (*p)++;
    if (**p == '+' || **p == '-') (*p)++;
    if (!(**p >= '0' && **p <= '9')) return 0;
    while (**p >= '0' && **p <= '9') (*p)++;
  }
  return *p > s;
}

static int value(const char **p) {
  ws(p);
  if (**p == '{' || **p == '[') {
    char close = **p == '{' ? '}' : ']';
    int object = close == '}';
    (*p)++;
    ws(p);
    if (**p == close) return (*p)++, 1;
    for (;;) {
      if (object) {
        ws(p);
        if (!ds_test_json_string(p, NULL, 0)) return 0;
        ws(p);
        if (**p != ':') return 0;
        (*p)++;
      }
      if (!value(p)) return 0;
      ws(p);
      if (**p == close) return (*p)++, 1;
      if (**p != ',') return 0;
      (*p)++;
    }
  }
  if (**p == '"') return ds_test_json_string(p, NULL, 0);
  if (strncmp(*p, "true", 4) == 0) return *p += 4, 1;
  if (strncmp(*p, "false", 5) == 0) return *p += 5, 1;
  if (strncmp(*p, "null", 4) == 0) return *p += 4, 1;
  return number(p);
}

void ds_test_assert_json(const char *text) {
  cr_assert(utf8_ok(text, strlen(text)), "ill-formed UTF-8 in: %s", text);
  const char *p = text;
  cr_assert(value(&p), "invalid JSON near: %.60s", p);
  ws(&p);
  cr_assert_eq(*p, '\0', "text after the JSON value: %.60s", p);
}


/* Past the value at *p (which must parse). */
static void skip(const char **p) { cr_assert(value(p), "invalid JSON near: %.60s", *p); }

const char *ds_test_json_at(const char *text, const char *path) {
  const char *p = text;
  char seg[64];
  while (*path) {
    size_t n = strcspn(path, ".");
    cr_assert_lt(n, sizeof seg);
    memcpy(seg, path, n);
    seg[n] = '\0';
    path += n + (path[n] == '.');
    ws(&p);
    if (*p == '[') {
      char *end;
      long want = strtol(seg, &end, 10);
      if (*end) return NULL;
      p++;
      for (long k = 0;; k++) {
        ws(&p);
        if (*p == ']') return NULL;
        if (k == want) break;
        skip(&p);
        ws(&p);
        if (*p == ',') p++;
      }
    } else if (*p == '{') {
      p++;
      for (;;) {
        char key[64];
        ws(&p);
        if (*p == '}') return NULL;
        cr_assert(ds_test_json_string(&p, key, sizeof key), "no key near: %.60s", p);
        ws(&p);
        cr_assert_eq(*p, ':');
        p++;
        ws(&p);
        if (strcmp(key, seg) == 0) break;
        skip(&p);
        ws(&p);
        if (*p == ',') p++;
      }
    } else {
      return NULL;
    }
  }
  ws(&p);
  return p;
}

double ds_test_json_number(const char *text, const char *path) {
  const char *p = ds_test_json_at(text, path);
  cr_assert(p, "no %s in: %s", path, text);
  const char *s = p;
  cr_assert(number(&p), "%s is no number: %.40s", path, s);
  return strtod(s, NULL);
}
