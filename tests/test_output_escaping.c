/*
 * User strings in ddpsim's CSV and JSON (base/textout.c, the summary's
 * writer in sim/cli/report.c, `ddpsim buckets`): a GPU, a topology and a
 * model named with a quote, a comma, a semicolon and a backslash
 * (tests/data/oddname) come back from a strict CSV parse (libcsv,
 * CSV_STRICT) and a strict JSON parse as written, and every row keeps as
 * many fields as the header.
 */
#include <criterion/criterion.h>
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/textout.h"
#include "tests/support.h"

#define ODD_GPU "My \"GPU\", a;b\\ x"
#define ODD_TOPO "odd \"topo\", x;y\\ z"
#define ODD_MODEL "odd \"model\", m;n\\ o"
#define ODD_ARGS "--topo tests/data/oddname/topo.yaml --model tests/data/oddname/model.yaml"

/* ---- a strict CSV parse: libcsv, each record's fields kept ---- */

#define MAX_FIELDS 64
#define MAX_RECORDS 16

struct table {
  char *field[MAX_RECORDS][MAX_FIELDS];
  int n_fields[MAX_RECORDS];
  int n_records;
};

static void on_field(void *s, size_t len, void *data) {
  struct table *t = data;
  int r = t->n_records;
  cr_assert_lt(r, MAX_RECORDS);
  cr_assert_lt(t->n_fields[r], MAX_FIELDS);
  char *f = malloc(len + 1);
  cr_assert(f);
  memcpy(f, s, len);
  f[len] = '\0';
  t->field[r][t->n_fields[r]++] = f;
}

static void on_record(int c, void *data) {
  (void)c;
  ((struct table *)data)->n_records++;
}

static void parse_csv(const char *text, struct table *t) {
  memset(t, 0, sizeof *t);
  struct csv_parser p;
  cr_assert_eq(csv_init(&p, CSV_STRICT | CSV_STRICT_FINI), 0);
  size_t n = strlen(text);
  cr_assert_eq(csv_parse(&p, text, n, on_field, on_record, t), n, "%s: %s",
               csv_strerror(csv_error(&p)), text);
  cr_assert_eq(csv_fini(&p, on_field, on_record, t), 0, "%s", csv_strerror(csv_error(&p)));
  csv_free(&p);
}

static void free_table(struct table *t) {
  for (int r = 0; r < MAX_RECORDS; r++)
    for (int k = 0; k < t->n_fields[r]; k++) free(t->field[r][k]);
}

static const char *column(const struct table *t, int row, const char *name) {
  for (int k = 0; k < t->n_fields[0]; k++)
    if (strcmp(t->field[0][k], name) == 0) return t->field[row][k];
  cr_assert_fail("no column %s", name);
  return NULL;
}

/* ---- a strict JSON parse (RFC 8259): every value, nothing after ---- */

static void ws(const char **p) {
  while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r') (*p)++;
}

static int value(const char **p);

/* A string into out (cap bytes, or NULL): escapes decoded (\uXXXX below 0x80). */
static int string(const char **p, char *out, size_t cap) {
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
        if (!string(p, NULL, 0)) return 0;
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
  if (**p == '"') return string(p, NULL, 0);
  if (strncmp(*p, "true", 4) == 0) return *p += 4, 1;
  if (strncmp(*p, "false", 5) == 0) return *p += 5, 1;
  if (strncmp(*p, "null", 4) == 0) return *p += 4, 1;
  return number(p);
}

static void assert_json(const char *text) {
  const char *p = text;
  cr_assert(value(&p), "invalid JSON near: %.60s", p);
  ws(&p);
  cr_assert_eq(*p, '\0', "text after the JSON value: %.60s", p);
}

/* The string value of "key" in text's first object, decoded, into out. */
static void json_str(const char *text, const char *key, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(text, pat);
  cr_assert(p, "no %s in %s", key, text);
  p += strlen(pat);
  cr_assert(string(&p, out, cap), "%s is no string", key);
}

static struct ds_test_result ddpsim(const char *args) {
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "ddpsim %s: %s", args, r.err);
  return r;
}

/* The summary CSV: the names come back whole from a strict parse, and the
 * row has the header's fields. A sweep's rows too. */
Test(output_escaping, summary_csv_quotes_user_names) {
  struct ds_test_result r = ddpsim(ODD_ARGS " --format csv --bucket-mb 1,25");
  struct table t;
  parse_csv(r.out, &t);
  cr_assert_eq(t.n_records, 3, "a header and two rows: %s", r.out);
  for (int row = 1; row <= 2; row++) {
    cr_assert_eq(t.n_fields[row], t.n_fields[0], "row %d: %s", row, r.out);
    cr_assert_str_eq(column(&t, row, "gpu"), ODD_GPU);
    cr_assert_str_eq(column(&t, row, "topology"), ODD_TOPO);
    cr_assert_str_eq(column(&t, row, "model"), ODD_MODEL);
    cr_assert_str_eq(column(&t, row, "strategy"), "ddp");
  }
  free_table(&t);
  ds_test_release(&r);
}

/* The summary JSON parses strictly and its strings decode to the names. */
Test(output_escaping, summary_json_escapes_user_names) {
  struct ds_test_result r = ddpsim(ODD_ARGS " --format json");
  assert_json(r.out);
  char s[128];
  json_str(r.out, "gpu", s, sizeof s);
  cr_assert_str_eq(s, ODD_GPU);
  json_str(r.out, "topology", s, sizeof s);
  cr_assert_str_eq(s, ODD_TOPO);
  json_str(r.out, "model", s, sizeof s);
  cr_assert_str_eq(s, ODD_MODEL);
  ds_test_release(&r);
}

/* `ddpsim buckets` writes the model's name in its CSV's first column. */
Test(output_escaping, buckets_csv_quotes_the_model_name) {
  struct ds_test_result r = ddpsim("buckets --model tests/data/oddname/model.yaml");
  const char *body = r.out;
  while (*body == '#') body = strchr(body, '\n') + 1; /* the comment lines */
  struct table t;
  parse_csv(body, &t);
  cr_assert_geq(t.n_records, 2, "%s", r.out);
  for (int row = 1; row < t.n_records; row++) {
    cr_assert_eq(t.n_fields[row], t.n_fields[0], "row %d: %s", row, r.out);
    cr_assert_str_eq(column(&t, row, "model"), ODD_MODEL);
  }
  free_table(&t);
  ds_test_release(&r);
}

/* The helpers by hand: plain text as is, a field that needs quotes quoted
 * with its quotes doubled (RFC 4180), JSON's escapes. */
Test(output_escaping, textout_by_hand) {
  cr_assert(!ds_textout_csv_needs_quotes("H100-SXM5-80GB"));
  cr_assert(!ds_textout_csv_needs_quotes("a;b\\c"), "';' and '\\' are plain CSV");
  cr_assert(!ds_textout_csv_needs_quotes(""));
  cr_assert(ds_textout_csv_needs_quotes("a,b"));
  cr_assert(ds_textout_csv_needs_quotes("a\"b"));
  cr_assert(ds_textout_csv_needs_quotes("a\nb"));
  cr_assert(ds_textout_csv_needs_quotes(" a"));
  cr_assert(ds_textout_csv_needs_quotes("a\t"));
  char *buf = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&buf, &len);
  cr_assert(fp);
  ds_textout_csv_field(fp, "plain");
  fputc('|', fp);
  ds_textout_csv_field(fp, "say \"hi\", x");
  fputc('|', fp);
  ds_textout_json_string(fp, "q\" b\\ n\n t\t c\x01 d\x7f");
  fclose(fp);
  cr_assert_str_eq(buf, "plain|\"say \"\"hi\"\", x\"|\"q\\\" b\\\\ n\\n t\\t c\\u0001 d\\u007f\"");
  free(buf);
  char out[8];
  size_t used = 0;
  ds_textout_append(out, sizeof out, &used, "%s", "abcd");
  ds_textout_append(out, sizeof out, &used, "%d", 12345);
  cr_assert_str_eq(out, "abcd123", "cut at the buffer, terminated");
  cr_assert_eq(used, 9u);
  ds_textout_append(out, sizeof out, &used, "more");
  cr_assert_str_eq(out, "abcd123", "a full buffer stays full");
}
