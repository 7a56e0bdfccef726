/*
 * User strings in ddpsim's CSV and JSON (base/textout.c, the summary's
 * writer in sim/cli/report_csv_json.c, `ddpsim buckets`): a GPU, a topology and a
 * model named with a quote, a comma, a semicolon and a backslash
 * (tests/data/oddname) come back from a strict CSV parse (libcsv,
 * CSV_STRICT) and a strict JSON parse as written, and every row keeps as
 * many fields as the header. Names are bounded where they are read (127
 * bytes, base/config.h DS_NAME_CAP), never cut in the outputs; JSON
 * strings are well-formed UTF-8 whatever the bytes. The texts (the
 * summary, `ddpsim collective`, `ddpsim analyze`) show a name's control
 * characters as '?'.
 */
#include <criterion/criterion.h>
#include <csv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "base/textout.h"
#include "sim/cmd/bucketcmd.h"
#include "sim/cli/options.h"
#include "sim/cli/run.h"
#include "tests/json_check.h"
#include "tests/support.h"
#include "traces/schedule.h"
#include "traces/trace.h"

#define ODD_GPU "My \"GPU\", a;b\\ x"
#define ODD_TOPO "odd \"topo\", x;y\\ z"
#define ODD_MODEL "odd \"model\", m;n\\ o"
#define ODD_ARGS "--topo tests/data/oddname/topo.yaml --model tests/data/oddname/model.yaml"

/* ---- a strict CSV parse: libcsv, each record's fields kept ---- */

#define MAX_FIELDS 96 /* the summary has 52 to 62 columns */
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

/* The string value of "key" in text's first object, decoded, into out. */
static void json_str(const char *text, const char *key, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(text, pat);
  cr_assert(p, "no %s in %s", key, text);
  p += strlen(pat);
  cr_assert(ds_test_json_string(&p, out, cap), "%s is no string", key);
}

/* The summary CSV: the names come back whole from a strict parse, and the
 * row has the header's fields. A sweep's rows too. */
Test(output_escaping, summary_csv_quotes_user_names) {
  struct ds_test_result r = ds_test_cli_ok(ODD_ARGS " --format csv --bucket-mb 1,25");
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
  struct ds_test_result r = ds_test_cli_ok(ODD_ARGS " --format json");
  ds_test_assert_json(r.out);
  char s[128];
  json_str(r.out, "gpu", s, sizeof s);
  cr_assert_str_eq(s, ODD_GPU);
  json_str(r.out, "topology", s, sizeof s);
  cr_assert_str_eq(s, ODD_TOPO);
  json_str(r.out, "model", s, sizeof s);
  cr_assert_str_eq(s, ODD_MODEL);
  ds_test_release(&r);
}

/* --calib's path, as given, in the calib column (sim/cli/report_csv_json.c): a
 * name with a quote, a comma, a semicolon, a backslash and a space comes
 * back whole from the strict CSV parse and the strict JSON parse; without
 * --calib the CSV field is empty and the JSON value null; the stragglers
 * list and the numbers of the provenance columns parse strictly too. */
#define ODD_CALIB_NAME "cal \"x\", a;b\\ c.yaml"
Test(output_escaping, calib_path_and_provenance_parse_strictly) {
  char dir[64] = "/tmp/ddpsim-oddcalib-XXXXXX", path[160], args[400], s[160];
  cr_assert(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/" ODD_CALIB_NAME, dir);
  char *text = ds_test_slurp("tests/data/tiny-calib.yaml");
  FILE *fp = fopen(path, "w");
  cr_assert(fp && text);
  fputs(text, fp);
  cr_assert_eq(fclose(fp), 0);
  free(text);
  /* single quotes for the shell: the name has none */
  snprintf(args, sizeof args, "--topo 4gpu --world-size 2 --straggler 1:1.5 --calib '%s' "
           "--format csv --bucket-mb 1,25", path);
  struct ds_test_result r = ds_test_cli_ok(args);
  struct table t;
  parse_csv(r.out, &t);
  cr_assert_eq(t.n_records, 3, "a header and two rows: %s", r.out);
  for (int row = 1; row <= 2; row++) {
    cr_assert_eq(t.n_fields[row], t.n_fields[0], "row %d: %s", row, r.out);
    cr_assert_str_eq(column(&t, row, "calib"), path);
    cr_assert_str_eq(column(&t, row, "calib_gpu"), "not_named");
    cr_assert_str_eq(column(&t, row, "stragglers"), "1:1.5");
  }
  free_table(&t);
  ds_test_release(&r);
  snprintf(args, sizeof args, "--topo 4gpu --world-size 2 --straggler 1:1.5 --calib '%s' "
           "--format json", path);
  r = ds_test_cli_ok(args);
  ds_test_assert_json(r.out);
  json_str(r.out, "calib", s, sizeof s);
  cr_assert_str_eq(s, path);
  cr_assert(strstr(r.out, "\"stragglers\": [{\"rank\": 1, \"factor\": 1.5}]"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 4gpu --world-size 2 --host-scale 1.1 --format json");
  ds_test_assert_json(r.out);
  cr_assert(strstr(r.out, "\"calib\": null, \"calib_gpu\": null"), "%s", r.out);
  cr_assert(strstr(r.out, "\"host_scale\": 1.1, "), "%s", r.out);
  cr_assert(strstr(r.out, "\"stragglers\": []"), "%s", r.out);
  ds_test_release(&r);
  cr_assert_eq(unlink(path), 0);
  cr_assert_eq(rmdir(dir), 0);
}

/* `ddpsim buckets` writes the model's name in its CSV's first column. */
Test(output_escaping, buckets_csv_quotes_the_model_name) {
  struct ds_test_result r = ds_test_cli_ok("buckets --model tests/data/oddname/model.yaml");
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
  cr_assert_eq(used, 13u, "the whole text's length, counted past the buffer");
}

/* JSON numbers (ds_textout_json_number, `ddpsim topo --format json`): the
 * shortest of 15 to 17 digits that reads back as the double (0.1 + 0.2
 * needs 17), whole numbers without a point, and null for what JSON cannot
 * hold (NaN, infinities). */
Test(output_escaping, json_numbers_read_back_exactly) {
  char *buf = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&buf, &len);
  cr_assert(fp);
  const double in[] = {0.882, 0.1 + 0.2, 100e9 / 1e9, 85520809984 / 1073741824.0, 3400 / 1e3,
                       NAN, INFINITY, -INFINITY};
  for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
    cr_assert_eq(ds_textout_json_number(fp, in[i]), 0);
    fputc('|', fp);
  }
  fclose(fp);
  cr_assert_str_eq(buf, "0.882|0.30000000000000004|100|79.6474609375|3.4|null|null|null|");
  free(buf);
}

/* ds_textout_utf8_invalid and the JSON writer on hand-made bytes: well
 * formed 1- to 4-byte sequences (U+007F, U+0080, U+07FF, U+0800, U+FFFD,
 * U+10000, U+10FFFF) pass unchanged; each ill-formed kind is one \ufffd per
 * maximal subpart (Unicode 15 section 3.9, "U+FFFD Substitution of Maximal
 * Subparts"). */
Test(output_escaping, json_strings_are_well_formed_utf8) {
  static const char valid[] = "a\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbd\xf0\x90\x80\x80"
                              "\xf4\x8f\xbf\xbf \xc3\xbc\xe2\x82\xac";
  cr_assert_null(ds_textout_utf8_invalid(valid));
  static const struct {
    const char *in, *json;
  } cases[] = {
      {"a\xff" "b", "\"a\\ufffdb\""},                          /* never a UTF-8 byte */
      {"\x80x", "\"\\ufffdx\""},                               /* a stray continuation */
      {"\xc0\xaf", "\"\\ufffd\\ufffd\""},                      /* overlong '/' (C0 never leads) */
      {"\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\""},           /* overlong 3-byte '/' */
      {"\xf0\x8f\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* overlong U+FFFF */
      {"\xed\xa0\x80z", "\"\\ufffd\\ufffd\\ufffdz\""},         /* the surrogate U+D800 */
      {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* U+110000, past the last */
      {"\xe2\x82", "\"\\ufffd\""},                             /* cut at the end: one subpart */
      {"\xe2\x82z", "\"\\ufffdz\""},                           /* cut before an ASCII byte */
      {"\xf0\x9f\x98", "\"\\ufffd\""},                         /* a 4-byte sequence cut */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cr_assert_not_null(ds_textout_utf8_invalid(cases[i].in), "case %zu", i);
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    cr_assert(fp);
    ds_textout_json_string(fp, cases[i].in);
    fclose(fp);
    cr_assert_str_eq(buf, cases[i].json, "case %zu", i);
    free(buf);
  }
  cr_assert_eq(ds_textout_utf8_invalid("ok\xc3\xbc\xff") - "ok\xc3\xbc\xff", 4, "the first bad byte");
  char *buf = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&buf, &len);
  cr_assert(fp);
  ds_textout_json_string(fp, valid);
  fclose(fp);
  cr_assert_eq(len, strlen(valid) + 2);
  cr_assert(memcmp(buf + 1, valid, strlen(valid)) == 0, "well-formed bytes pass unchanged");
  free(buf);
}

/* tests/data/oddname/FILE.yaml with its top-level name replaced, written
 * into dir (which gets gpus.yaml too, so a topology finds its GPU). */
static void write_named(const char *dir, const char *file, const char *name, char *out,
                        size_t cap) {
  char src[256];
  snprintf(src, sizeof src, "tests/data/oddname/%s", file);
  char *text = ds_test_slurp(src);
  char *line = strstr(text, "\nname: ");
  cr_assert(line, "%s has no name line", src);
  char *end = strchr(line + 1, '\n');
  snprintf(out, cap, "%s/%s", dir, file);
  FILE *fp = fopen(out, "w");
  cr_assert(fp, "%s", out);
  fprintf(fp, "%.*s\nname: %s%s", (int)(line - text), text, name, end);
  cr_assert_eq(fclose(fp), 0);
  free(text);
  char gpus[300];
  snprintf(gpus, sizeof gpus, "%s/gpus.yaml", dir);
  text = ds_test_slurp("tests/data/oddname/gpus.yaml");
  ds_test_write_file(gpus, text);
  free(text);
}

/* A model or topology name of 128 bytes or more is refused where it is
 * read (file:line:col and the key, exit 2): a sweep row keeps names in
 * 128-byte buffers, which used to cut them, mid-character for a name with
 * a 'ü' across byte 127 (and the JSON was then invalid). 127 bytes, the
 * 'ü' included, come back whole in CSV and JSON. */
Test(output_escaping, long_names_are_refused_where_they_are_read) {
  char dir[] = "/tmp/ddpsim-names-XXXXXX", model[300], topo[300], args[1200], msg[600];
  cr_assert_not_null(mkdtemp(dir));
  char long_name[201], fits[128];
  memset(long_name, 'a', 200);
  long_name[200] = '\0';
  memset(fits, 'a', 124);
  snprintf(fits + 124, sizeof fits - 124, "\xc3\xbc" "b"); /* 127 bytes */
  cr_assert_eq(strlen(fits), 127u);

  write_named(dir, "model.yaml", long_name, model, sizeof model);
  snprintf(args, sizeof args, "--topo tests/data/oddname/topo.yaml --model %s", model);
  snprintf(msg, sizeof msg, "%s:6:7: key 'name': expected a model name of 1 to 127 bytes, got 200",
           model);
  ds_test_ddpsim_refuses(args, msg);
  write_named(dir, "topo.yaml", long_name, topo, sizeof topo);
  snprintf(args, sizeof args, "--topo %s --model tests/data/oddname/model.yaml", topo);
  snprintf(msg, sizeof msg, "%s:", topo);
  ds_test_ddpsim_refuses(args, msg);
  ds_test_ddpsim_refuses(args, "key 'name': expected a topology name of 1 to 127 bytes, got 200");
  snprintf(args, sizeof args, "topo import tests/data/topo_import/dgx-a100.xml --name %s",
           long_name);
  ds_test_ddpsim_refuses(args, "option --name: expected a topology name of 1 to 127 bytes");

  write_named(dir, "model.yaml", fits, model, sizeof model);
  write_named(dir, "topo.yaml", fits, topo, sizeof topo);
  snprintf(args, sizeof args, "--topo %s --model %s --bucket-mb 1,25", topo, model);
  char json_args[1300];
  snprintf(json_args, sizeof json_args, "%s --format json", args);
  struct ds_test_result r = ds_test_cli_ok(json_args);
  ds_test_assert_json(r.out);
  char s[256];
  json_str(r.out, "model", s, sizeof s);
  cr_assert_str_eq(s, fits);
  json_str(r.out, "topology", s, sizeof s);
  cr_assert_str_eq(s, fits);
  ds_test_release(&r);
  snprintf(json_args, sizeof json_args, "%s --format csv", args);
  r = ds_test_cli_ok(json_args);
  struct table t;
  parse_csv(r.out, &t);
  cr_assert_eq(t.n_records, 3, "%s", r.out);
  cr_assert_str_eq(column(&t, 2, "model"), fits);
  cr_assert_str_eq(column(&t, 2, "topology"), fits);
  free_table(&t);
  ds_test_release(&r);
  unlink(model);
  unlink(topo);
  snprintf(model, sizeof model, "%s/gpus.yaml", dir);
  unlink(model);
  rmdir(dir);
}

/* Ill-formed UTF-8 in a trace's op name is refused at its line, naming
 * the column (exit 2); a path from the command line that is not UTF-8
 * still gives valid JSON (its bad byte written as \ufffd). */
Test(output_escaping, a_trace_with_ill_formed_utf8_is_refused) {
  char dir[] = "/tmp/ddpsim-utf8-XXXXXX", t[300], bad[300], args[1000], msg[400];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(t, sizeof t, "%s/t.csv", dir);
  snprintf(args, sizeof args, "--topo 4gpu --model tests/data/tiny-model.yaml --trace %s", t);
  struct ds_test_result r = ds_test_cli_ok(args);
  ds_test_release(&r);
  char *text = ds_test_slurp(t);
  /* Line 6 is the first op row (4 '#' lines, the header). */
  char *row = text;
  for (int i = 0; i < 5; i++) row = strchr(row, '\n') + 1;
  char *name = row;
  for (int k = 0; k < 4; k++) name = strchr(name, ',') + 1; /* id,rank,stream,kind, */
  char *end = strchr(name, ',');
  snprintf(bad, sizeof bad, "%s/bad.csv", dir);
  FILE *fp = fopen(bad, "w");
  cr_assert(fp);
  fprintf(fp, "%.*sl0\xff\xfe%s", (int)(name - text), text, end);
  cr_assert_eq(fclose(fp), 0);
  snprintf(args, sizeof args, "analyze %s --format json --per-op", bad);
  snprintf(msg, sizeof msg, "%s:6: column 'name': invalid UTF-8 (byte 0xff", bad);
  ds_test_ddpsim_refuses(args, msg);

  snprintf(bad, sizeof bad, "%s/t\xff.csv", dir);
  cr_assert_eq(rename(t, bad), 0);
  snprintf(args, sizeof args, "analyze '%s' --format json", bad);
  r = ds_test_cli_ok(args);
  ds_test_assert_json(r.out);
  cr_assert(strstr(r.out, "t\\ufffd.csv"), "%s", r.out);
  ds_test_release(&r);
  free(text);
  unlink(bad);
  snprintf(bad, sizeof bad, "%s/bad.csv", dir);
  unlink(bad);
  rmdir(dir);
}

/* An unbuffered /dev/full: every write fails at once (ENOSPC). */
static FILE *full_device(void) {
  FILE *fp = fopen("/dev/full", "w");
  cr_assert(fp);
  setvbuf(fp, NULL, _IONBF, 0);
  return fp;
}

/* A write error in the summary's CSV and JSON (each field's write checked,
 * the model's name through ds_textout_csv_field) and in `ddpsim buckets`
 * is DS_EIO with a message, as the trace writer's is. */
Test(output_escaping, write_errors_are_failures) {
  static const char *const formats[] = {"csv", "json", "text"};
  for (size_t i = 0; i < 3; i++) {
    char args[200];
    snprintf(args, sizeof args, ODD_ARGS " --format %s", formats[i]);
    struct ds_options o;
    ds_test_options_ok(args, &o);
    struct ds_err err = {0};
    FILE *fp = full_device();
    cr_assert_eq(ds_run(&o, fp, &err), DS_EIO, "%s: %s", formats[i], err.msg);
    cr_assert(strstr(err.msg, "writing the report failed: No space left on device"), "%s",
              err.msg);
    fclose(fp);
  }
  char *argv[] = {"buckets", "--model", "tests/data/oddname/model.yaml", NULL};
  struct ds_err err = {0};
  FILE *fp = full_device();
  cr_assert_eq(ds_bucketcmd_main(3, argv, fp, &err), DS_EIO, "%s", err.msg);
  cr_assert(strstr(err.msg, "writing the bucket layout failed: No space left on device"), "%s",
            err.msg);
  fclose(fp);
}

/* text with every occurrence of `from` replaced by `to` (owned). */
static char *replaced(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  cr_assert(at, "no %s", from);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  cr_assert(out);
  snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  return out;
}

static void write_text_file(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  cr_assert(fp, "%s", path);
  fputs(text, fp);
  cr_assert_eq(fclose(fp), 0);
}

/* The text summary shows a name's control characters as '?': a GPU named
 * with a CR and an ESC sequence, a model with a tab, reach the terminal as
 * "My?GPU?[31m" and "odd?model" (CSV and JSON keep them, quoted and
 * escaped). By hand: a cut never splits a UTF-8 character. */
Test(output_escaping, the_text_summary_shows_control_characters_as_question_marks) {
  char buf[8];
  cr_assert_str_eq(ds_textout_printable("a\rb\x1b[c\x7f", buf, sizeof buf), "a?b?[c?");
  cr_assert_str_eq(ds_textout_printable("abcdef\xc3\xbc", buf, sizeof buf), "abcdef",
                   "the 'u' with its dots would end past byte 7: cut before it");
  cr_assert_str_eq(ds_textout_printable("abcde\xc3\xbcx", buf, sizeof buf), "abcde\xc3\xbc");
  cr_assert_str_eq(ds_textout_printable("ab\xc3\xbc", buf, sizeof buf), "ab\xc3\xbc");

  char dir[] = "/tmp/ddpsim-ctl-XXXXXX", model[300], path[300], args[800];
  cr_assert_not_null(mkdtemp(dir));
  write_named(dir, "model.yaml", "\"odd\\tmodel\"", model, sizeof model);
  char *gpus = ds_test_slurp("tests/data/oddname/gpus.yaml");
  char *g = replaced(gpus, "name: 'My \"GPU\", a;b\\ x'", "name: \"My\\rGPU\\e[31m\"");
  snprintf(path, sizeof path, "%s/gpus.yaml", dir);
  write_text_file(path, g);
  char *topo = ds_test_slurp("tests/data/oddname/topo.yaml");
  char *t = replaced(topo, "gpu: 'My \"GPU\", a;b\\ x'", "gpu: \"My\\rGPU\\e[31m\"");
  snprintf(path, sizeof path, "%s/topo.yaml", dir);
  write_text_file(path, t);
  snprintf(args, sizeof args, "--topo %s --model %s", path, model);
  struct ds_test_result r = ds_test_cli_ok(args);
  cr_assert_null(strpbrk(r.out, "\r\x1b\t"), "a control character reached the text: %s", r.out);
  cr_assert(strstr(r.out, "odd?model on odd \"topo\", x;y\\ z (2 x My?GPU?[31m)"), "%s", r.out);
  ds_test_release(&r);
  free(gpus), free(g), free(topo), free(t);
  unlink(path);
  unlink(model);
  snprintf(path, sizeof path, "%s/gpus.yaml", dir);
  unlink(path);
  rmdir(dir);
}

/* `ddpsim collective`'s text on a topology named with a tab and its GPU
 * with a CR and an ESC sequence: the header line shows them as '?', and so
 * does the line saying why NCCL's model is unavailable (the GPU's
 * architecture, "Test", is none NCCL knows: nccl_model.c), which names the
 * GPU. */
Test(output_escaping, collective_text_shows_control_characters_as_question_marks) {
  char dir[] = "/tmp/ddpsim-ctlcoll-XXXXXX", path[300], args[400];
  cr_assert_not_null(mkdtemp(dir));
  char *gpus = ds_test_slurp("tests/data/oddname/gpus.yaml");
  char *g = replaced(gpus, "name: 'My \"GPU\", a;b\\ x'", "name: \"My\\rGPU\\e[31m\"");
  snprintf(path, sizeof path, "%s/gpus.yaml", dir);
  write_text_file(path, g);
  char *topo = ds_test_slurp("tests/data/oddname/topo.yaml");
  char *t1 = replaced(topo, "gpu: 'My \"GPU\", a;b\\ x'", "gpu: \"My\\rGPU\\e[31m\"");
  char *t2 = replaced(t1, "name: 'odd \"topo\", x;y\\ z'", "name: \"odd\\ttopo\"");
  snprintf(path, sizeof path, "%s/topo.yaml", dir);
  write_text_file(path, t2);
  snprintf(args, sizeof args, "--topo %s -b 1K -e 1K --proto auto", path);
  char *text = NULL;
  struct ds_err err;
  cr_assert_eq(ds_test_collective(args, &text, &err), DS_OK, "%s", err.msg);
  cr_assert_null(strpbrk(text, "\r\x1b\t"), "a control character reached the text: %s", text);
  cr_assert(strstr(text, "2 ranks on odd?topo (2 x My?GPU?[31m)\n"), "%s", text);
  cr_assert(strstr(text, "\n# NCCL's model is unavailable for GPU 'My?GPU?[31m'"), "%s", text);
  free(text);
  free(gpus), free(g), free(topo), free(t1), free(t2);
  unlink(path);
  snprintf(path, sizeof path, "%s/gpus.yaml", dir);
  unlink(path);
  rmdir(dir);
}

/* A trace of one iteration of one backward op, named name, on rank 0
 * from 0 to dur_us, written to path. */
static void write_one_op_trace(const char *path, const char *source, const char *name,
                               int64_t dur_us) {
  struct ds_schedule *s = NULL;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_op b = {.id = 0, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = name,
                    .layer = 0, .bucket = -1, .coll = -1, .root = -1, .algo = ""};
  cr_assert_eq(ds_schedule_add(s, &b, NULL, 0, NULL), DS_OK);
  struct ds_trace *t = NULL;
  cr_assert_eq(ds_trace_new(source, &t), DS_OK);
  struct ds_trace_row row = {s, 0, 0, 0, dur_us * 1000};
  cr_assert_eq(ds_trace_add(t, &row), DS_OK);
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_write_csv(path, t, NULL, &err), DS_OK, "%s", err.msg);
  ds_trace_free(t);
  ds_schedule_free(s);
}

/* c's text with its per-op table (owned). */
static char *compare_text(const struct ds_compare *c) {
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&text, &len);
  cr_assert(fp);
  ds_compare_print(fp, c, DS_COMPARE_TEXT, 1);
  cr_assert_eq(fclose(fp), 0);
  return text;
}

/* `ddpsim analyze`'s text on traces whose op is named with an ESC
 * sequence and a CR: the largest-errors and per-op tables of two traces,
 * and one trace's per-op table, show them as '?', padded to the name
 * column's 28 bytes as before. */
Test(output_escaping, analyze_text_shows_control_characters_as_question_marks) {
  char pred[64], meas[64];
  snprintf(pred, sizeof pred, "/tmp/ddpsim-ctl-pred-%d.csv", (int)getpid());
  snprintf(meas, sizeof meas, "/tmp/ddpsim-ctl-meas-%d.csv", (int)getpid());
  write_one_op_trace(pred, "sim", "fc\x1b[31m\rx", 100);
  write_one_op_trace(meas, "real", "fc\x1b[31m\rx", 120);
  struct ds_compare_options opt = {.pred_iter = -1};
  struct ds_compare *c = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_compare_load(pred, meas, &opt, &c, &err), DS_OK, "%s", err.msg);
  char *text = compare_text(c);
  cr_assert_null(strpbrk(text, "\r\x1b"), "a control character reached the text: %s", text);
  const char *shown = "bwd        fc?[31m?x                    ";
  cr_assert(strstr(text, shown), "the largest errors' row: %s", text);
  cr_assert(strstr(strstr(text, shown) + 1, shown), "the per-op row: %s", text);
  free(text);
  ds_compare_free(c);
  c = NULL;
  cr_assert_eq(ds_compare_load_one(pred, &opt, &c, &err), DS_OK, "%s", err.msg);
  text = compare_text(c);
  cr_assert_null(strpbrk(text, "\r\x1b"), "a control character reached the text: %s", text);
  cr_assert(strstr(text, shown), "one trace's per-op row: %s", text);
  free(text);
  ds_compare_free(c);
  unlink(pred);
  unlink(meas);
}

/* `ddpsim analyze`'s text names its traces as given: a path with an ESC
 * sequence and a CR in it is shown with them as '?' in the header lines
 * of two traces and of one (they went out raw), and in an error message
 * about it on standard error. */
Test(output_escaping, analyze_shows_control_characters_in_paths_as_question_marks) {
  char pred[96], meas[96], shown[96];
  snprintf(pred, sizeof pred, "/tmp/ddpsim-ctl-\x1b[31m\r-%d-pred.csv", (int)getpid());
  snprintf(meas, sizeof meas, "/tmp/ddpsim-ctl-\x1b[31m\r-%d-meas.csv", (int)getpid());
  write_one_op_trace(pred, "sim", "fc", 100);
  write_one_op_trace(meas, "real", "fc", 120);
  struct ds_compare_options opt = {.pred_iter = -1};
  struct ds_compare *c = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_compare_load(pred, meas, &opt, &c, &err), DS_OK, "%s", err.msg);
  char *text = compare_text(c);
  cr_assert_null(strpbrk(text, "\r\x1b"), "a control character reached the text: %s", text);
  snprintf(shown, sizeof shown, "predicted  /tmp/ddpsim-ctl-?[31m?-%d-pred.csv (sim)",
           (int)getpid());
  cr_assert(strstr(text, shown), "%s", text);
  snprintf(shown, sizeof shown, "measured   /tmp/ddpsim-ctl-?[31m?-%d-meas.csv (real)",
           (int)getpid());
  cr_assert(strstr(text, shown), "%s", text);
  free(text);
  ds_compare_free(c);
  c = NULL;
  cr_assert_eq(ds_compare_load_one(meas, &opt, &c, &err), DS_OK, "%s", err.msg);
  text = compare_text(c);
  cr_assert_null(strpbrk(text, "\r\x1b"), "a control character reached the text: %s", text);
  snprintf(shown, sizeof shown, "trace      /tmp/ddpsim-ctl-?[31m?-%d-meas.csv (real)",
           (int)getpid());
  cr_assert(strstr(text, shown), "%s", text);
  free(text);
  ds_compare_free(c);
  /* end to end, and an error naming such a path (a trace missing) */
  char args[256];
  snprintf(args, sizeof args, "analyze '%s' '%s'", pred, meas);
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_null(strpbrk(r.out, "\r\x1b"), "%s", r.out);
  ds_test_release(&r);
  unlink(meas);
  r = ds_test_run("", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert_null(strpbrk(r.err, "\r\x1b"), "a control character reached stderr: %s", r.err);
  cr_assert(strstr(r.err, "/tmp/ddpsim-ctl-?[31m?-"), "%s", r.err);
  ds_test_release(&r);
  unlink(pred);
}

/* libyaml's reader accepts tab, LF, CR, 20-7E, NEL, A0-D7FF, E000-FFFD and
 * 10000-10FFFF (reader.c:411-415) and breaks lines at CR, LF, NEL, LS, PS
 * (IS_BREAK): what may stand raw in a YAML comment or quoted scalar is the
 * rest, less BOM and the control characters; each edge by hand. */
Test(output_escaping, yaml_unsafe_code_points_at_their_edges) {
  static const uint32_t unsafe[] = {0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x7F, 0x80, 0x85, 0x9F,
                                    0x2028, 0x2029, 0xD800, 0xDFFF, 0xFEFF, 0xFFFE, 0xFFFF,
                                    0x110000};
  static const uint32_t safe[] = {0x20, 0x7E, 0xA0, 0xFC, 0x2027, 0x202A, 0xD7FF,
                                  0xE000, 0xFEFE, 0xFFFD, 0x10000, 0x10FFFF};
  for (size_t i = 0; i < sizeof unsafe / sizeof *unsafe; i++)
    cr_assert(ds_textout_yaml_unsafe(unsafe[i]), "U+%04X", unsafe[i]);
  for (size_t i = 0; i < sizeof safe / sizeof *safe; i++)
    cr_assert_not(ds_textout_yaml_unsafe(safe[i]), "U+%04X", safe[i]);
  /* a comment: each unsafe character one '?', an ill-formed sequence one
   * '?', the rest as is (u-umlaut, the euro sign) */
  char *buf = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&buf, &len);
  cr_assert_not_null(fp);
  cr_assert_eq(ds_textout_put_comment(fp, "a\xc2\x85" "b\xe2\x80\xa8" "c\xe2\x80\xa9"
                                          "d\xc2\x80" "e\xef\xbf\xbe" "f\xe2\x80"
                                          "g\xc3\xbc\xe2\x82\xac"),
               0);
  ds_textout_yaml_quoted(fp, "\"\\\xc2\x85\xe2\x80\xa8\xe2\x80\xa9\xc2\x80"
                             "\xef\xbf\xbe\x01\xff\xc3\xbc");
  cr_assert_eq(fclose(fp), 0);
  cr_assert_str_eq(buf, "a?b?c?d?e?f?g\xc3\xbc\xe2\x82\xac"
                        "\"\\\"\\\\\\N\\L\\P\\x80\\ufffe\\x01?\xc3\xbc\"");
  free(buf);
}
