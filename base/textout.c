/* Bounded appends and user strings in CSV and JSON (textout.h). */
#include "base/textout.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ds_textout_append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  /* once full, only counted: *used ends as the whole text's length */
  int k = *used >= size ? vsnprintf(NULL, 0, fmt, ap)
                        : vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (k > 0) *used += (size_t)k;
}

int ds_textout_csv_needs_quotes(const char *s) {
  size_t n = strlen(s);
  if (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t')) return 1;
  return strpbrk(s, "\",\r\n") != NULL;
}

int ds_textout_csv_field(FILE *fp, const char *s) {
  if (!ds_textout_csv_needs_quotes(s)) return fputs(s, fp) == EOF ? EOF : 0;
  return csv_fwrite(fp, s, strlen(s));
}

/* The length of the UTF-8 sequence at p when it is well formed (RFC 3629
 * section 4's table: no overlong form, no surrogate D800-DFFF, nothing past
 * U+10FFFF), with *ok set; else the length of its longest prefix that
 * could begin a well-formed sequence (at least 1: Unicode's "maximal
 * subpart", which is replaced by one U+FFFD), with *ok cleared. A NUL ends
 * the sequence as any other byte outside the continuation range would. */
static size_t utf8_sequence(const unsigned char *p, int *ok) {
  unsigned c = p[0], lo = 0x80, hi = 0xBF;
  int more;
  *ok = 0;
  if (c < 0x80) more = 0;
  else if (c >= 0xC2 && c <= 0xDF) more = 1;
  else if (c == 0xE0) more = 2, lo = 0xA0;               /* overlong below */
  else if (c == 0xED) more = 2, hi = 0x9F;               /* surrogates above */
  else if (c >= 0xE1 && c <= 0xEF) more = 2;
  else if (c == 0xF0) more = 3, lo = 0x90;               /* overlong below */
  else if (c >= 0xF1 && c <= 0xF3) more = 3;
  else if (c == 0xF4) more = 3, hi = 0x8F;               /* past U+10FFFF above */
  else return 1; /* 80-C1 (a continuation, an overlong lead), F5-FF */
  for (int i = 1; i <= more; i++) {
    if (p[i] < lo || p[i] > hi) return (size_t)i;
    lo = 0x80, hi = 0xBF;
  }
  *ok = 1;
  return (size_t)more + 1;
}

/* The code point of the well-formed sequence of n bytes at p. */
static uint32_t utf8_decode(const unsigned char *p, size_t n) {
  static const unsigned lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = p[0] & lead_mask[n];
  for (size_t i = 1; i < n; i++) cp = cp << 6 | (p[i] & 0x3F);
  return cp;
}

/* textout.h */
void ds_textout_yaml_quoted(FILE *fp, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  int ok;
  fputc('"', fp);
  while (*p) {
    size_t n = utf8_sequence(p, &ok);
    uint32_t cp = ok ? utf8_decode(p, n) : 0;
    if (!ok) fputc('?', fp);
    else if (cp == '"' || cp == '\\') fprintf(fp, "\\%c", (int)cp);
    else if (cp == 0x85) fputs("\\N", fp);
    else if (cp == 0x2028) fputs("\\L", fp);
    else if (cp == 0x2029) fputs("\\P", fp);
    else if (ds_textout_yaml_unsafe(cp) && cp <= 0xFF) fprintf(fp, "\\x%02x", (unsigned)cp);
    else if (ds_textout_yaml_unsafe(cp)) fprintf(fp, "\\u%04x", (unsigned)cp);
    else fwrite(p, 1, n, fp);
    p += n;
  }
  fputc('"', fp);
}

/* textout.h */
int ds_textout_yaml_unsafe(uint32_t cp) {
  /* libyaml's reader (reader.c:411-415, 0.2.5) refuses anything but tab,
   * LF, CR, 20-7E, NEL, A0-D7FF, E000-FFFD and 10000-10FFFF; its scanner
   * breaks a line at CR, LF, NEL, LS and PS (yaml_private.h IS_BREAK); a
   * BOM is skipped where a line starts (scanner.c:1930). Control
   * characters (C0, DEL) go too: a terminal shows the file. */
  if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) return 1; /* C0, DEL, C1, NEL */
  if (cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF) return 1;           /* LS, PS, BOM */
  if (cp >= 0xD800 && cp <= 0xDFFF) return 1;
  return cp == 0xFFFE || cp == 0xFFFF || cp > 0x10FFFF;
}

/* The byte a terminal is shown for c: c, or '?' for a control character. */
static char printable_byte(char c) {
  unsigned char u = (unsigned char)c;
  return u < 0x20 || u == 0x7f ? '?' : c;
}

const char *ds_textout_printable(const char *s, char *buf, size_t size) {
  size_t n = strlen(s);
  if (n >= size) {
    n = size - 1;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--; /* s[n] starts a character */
  }
  for (size_t i = 0; i < n; i++) buf[i] = printable_byte(s[i]);
  buf[n] = '\0';
  return buf;
}

int ds_textout_put_printable(FILE *fp, const char *s, int width) {
  size_t n = 0;
  for (; s[n]; n++)
    if (putc(printable_byte(s[n]), fp) == EOF) return EOF;
  for (; width > 0 && n < (size_t)width; n++)
    if (putc(' ', fp) == EOF) return EOF;
  return 0;
}

const char *ds_textout_utf8_invalid(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  int ok;
  while (*p) {
    size_t n = utf8_sequence(p, &ok);
    if (!ok) return (const char *)p;
    p += n;
  }
  return NULL;
}

/* What the character at p shows as in a comment: itself (*len bytes at p)
 * or "?"; *n is the bytes it takes in s. */
static const char *comment_piece(const unsigned char *p, size_t *n, size_t *len) {
  int ok;
  *n = utf8_sequence(p, &ok);
  if (!ok || ds_textout_yaml_unsafe(utf8_decode(p, *n))) {
    *len = 1;
    return "?";
  }
  *len = *n;
  return (const char *)p;
}

int ds_textout_put_comment(FILE *fp, const char *s) {
  size_t n, len;
  for (const unsigned char *p = (const unsigned char *)s; *p; p += n) {
    const char *piece = comment_piece(p, &n, &len);
    if (fwrite(piece, 1, len, fp) != len) return EOF;
  }
  return 0;
}

const char *ds_textout_comment_text(const char *s, char *buf, size_t size) {
  size_t used = 0, n, len;
  for (const unsigned char *p = (const unsigned char *)s; *p; p += n) {
    const char *piece = comment_piece(p, &n, &len);
    if (used + len >= size) break; /* whole characters only */
    memcpy(buf + used, piece, len);
    used += len;
  }
  if (size > 0) buf[used] = '\0';
  return buf;
}

void ds_textout_json_string(FILE *fp, const char *s) {
  fputc('"', fp);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p >= 0x80) {
      int ok;
      size_t n = utf8_sequence(p, &ok);
      if (ok) fwrite(p, 1, n, fp);
      else fputs("\\ufffd", fp);
      p += n - 1;
      continue;
    }
    switch (*p) {
    case '"': fputs("\\\"", fp); break;
    case '\\': fputs("\\\\", fp); break;
    case '\n': fputs("\\n", fp); break;
    case '\r': fputs("\\r", fp); break;
    case '\t': fputs("\\t", fp); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        fprintf(fp, "\\u%04x", *p);
      else
        fputc(*p, fp);
    }
  }
  fputc('"', fp);
}

int ds_textout_exact_digits(double x) {
  char buf[40];
  for (int digits = 15; digits < 17; digits++) {
    snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (strtod(buf, NULL) == x) return digits;
  }
  return 17;
}

int ds_textout_json_number(FILE *fp, double x) {
  if (!isfinite(x)) return fputs("null", fp) == EOF ? EOF : 0;
  return fprintf(fp, "%.*g", ds_textout_exact_digits(x), x) < 0 ? EOF : 0;
}

ds_status ds_textout_flush(FILE *fp, int earlier_errno, struct ds_err *err) {
  errno = 0;
  if (fflush(fp) == 0 && !ferror(fp)) return DS_OK;
  int e = errno ? errno : earlier_errno;
  return ds_err_set(err, DS_EIO, "writing to %s failed: %s",
                    fp == stderr ? "standard error" : "standard output",
                    e ? strerror(e) : "write error");
}
