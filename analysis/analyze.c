/*
 * `ddpsim analyze` (analyze.h): argument parsing and the order of work.
 * Two traces are compared; one alone is measured by the same code
 * (compare.h), without a measured side. The files (--chrome, --plot) are
 * written before the report is printed, so a failure to write one leaves
 * no report that looks like success.
 */
#include "analysis/analyze.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "analysis/export.h"
#include "base/atomic_file.h"
#include "base/cli.h"
#include "base/outputs.h"
#include "base/textout.h"

static const char usage[] =
    "usage: ddpsim analyze PREDICTED.csv MEASURED.csv [options]\n"
    "       ddpsim analyze TRACE.csv [options]\n"
    "\n"
    "Compares a predicted trace (ddpsim --trace) with a measured one (ddpreal\n"
    "--trace) of the same schedule, op by op, joined on (rank, op id): the\n"
    "predicted iteration stands for every measured iteration, and measured\n"
    "values are means over the measured iterations (docs/analysis.md).\n"
    "With one trace: that trace's own metrics of one iteration (a ddpsim\n"
    "trace's last, the reported one; a ddpreal trace's of median iteration\n"
    "time), and --chrome and --plot draw that trace alone.\n"
    "The prediction comes first: a measured trace (source real) before a\n"
    "predicted one (sim) is refused; two of one source are compared as given.\n"
    "A trace given as - is read from standard input (one of the two at most:\n"
    "ddpsim --trace - ... | ddpsim analyze -).\n"
    "\n"
    "  --format text|csv|json  report format (default text); csv: one row per\n"
    "                         metric: metric,predicted,measured,abs_error,rel_error\n"
    "                         (one trace: metric,value)\n"
    "  --per-op               add every op's row (csv: print the per-op table\n"
    "                         instead of the metrics)\n"
    "  --chrome FILE          write the trace(s) as Chrome trace JSON (Perfetto); -:\n"
    "                         standard output, the JSON alone (the report to stderr)\n"
    "  --plot FILE.png|.svg   draw the iteration(s) as a timeline with gnuplot\n"
    "  --pred-iter N          predicted iteration to compare (default: the last;\n"
    "                         a ddpreal first trace's of median time, as --iter)\n"
    "  --skip-measured N      ignore the first N measured iterations and join every\n"
    "                         later one (default: leave out the leading iterations\n"
    "                         of another schedule, e.g. DDP's before the rebuild)\n"
    "  --iter N               one trace: the iteration to report and draw\n"
    "  --help\n"
    "\n"
    "Exit status: 0 ok; 2 bad usage, an unreadable or malformed trace, or two\n"
    "traces of different schedules or a measured one first; 1 a file could\n"
    "not be written or gnuplot is missing or failed.\n";

struct analyze_options {
  const char *pred, *meas, *chrome, *plot;
  enum ds_compare_format format;
  int per_op, help;
  const char *two_only, *one_only; /* a flag given that needs two traces, one */
  struct ds_compare_options cmp;
};

static ds_status parse_count(const char *flag, const char *v, int32_t min,
                             int32_t *out, struct ds_err *err) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < min || x > INT_MAX)
    return ds_err_set(err, DS_EUSAGE, "option %s: expected an integer >= %d, got "
                      "\"%s\"", flag, min, v);
  *out = (int32_t)x;
  return DS_OK;
}

/* Every flag analyze knows (base/cli.h): its parser refuses the others and
 * says which of these is missing its value. */
static const struct ds_cli_option options[] = {
    {"--format", 1, NULL}, {"--chrome", 1, NULL}, {"--plot", 1, NULL}, {"--pred-iter", 1, NULL},
    {"--iter", 1, NULL}, {"--skip-measured", 1, NULL}, {"--per-op", 0, NULL}, {"--help", 0, NULL},
    {"-h", 0, "--help"}, {NULL, 0, NULL}};

const struct ds_cli_option *ds_analyze_options(void) { return options; }

/* ds_cli_parse_split's parse: the words, "--flag=value" already split. */
static ds_status parse_words(int argc, char **argv, void *ctx, struct ds_err *err) {
  struct analyze_options *o = ctx;
  *o = (struct analyze_options){.cmp = {.pred_iter = -1, .skip_measured = -1}};
  int positional = 0;
  struct ds_cli_walk w = {.program = "ddpsim analyze", .options = options,
                          .positionals = DS_CLI_POSITIONALS_PLAIN_OR_DASH};
  for (int i = 1; i < argc; i++) {
    const char *f, *v;
    DS_CHECK(ds_cli_next_word(&w, argc, argv, &i, &f, &v, err));
    if (!f) {
      if (positional == 2)
        return ds_err_set(err, DS_EUSAGE, "unexpected argument \"%s\": analyze takes "
                          "one trace or two (see ddpsim analyze --help)", v);
      if (positional++ == 0) o->pred = v;
      else o->meas = v;
    } else if (ds_cli_is_help(f)) o->help = 1;
    else if (strcmp(f, "--per-op") == 0) o->per_op = 1;
    else if (strcmp(f, "--format") == 0) {
      if (strcmp(v, "text") == 0) o->format = DS_COMPARE_TEXT;
      else if (strcmp(v, "csv") == 0) o->format = DS_COMPARE_CSV;
      else if (strcmp(v, "json") == 0) o->format = DS_COMPARE_JSON;
      else return ds_err_set(err, DS_EUSAGE, "option --format: expected one of text, "
                             "csv, json, got \"%s\"", v);
    } else if (strcmp(f, "--chrome") == 0) o->chrome = v;
    else if (strcmp(f, "--plot") == 0) o->plot = v;
    else if (strcmp(f, "--pred-iter") == 0 || strcmp(f, "--skip-measured") == 0) {
      int pred = strcmp(f, "--pred-iter") == 0;
      o->two_only = f;
      DS_CHECK(parse_count(f, v, 0, pred ? &o->cmp.pred_iter : &o->cmp.skip_measured, err));
    } else if (strcmp(f, "--iter") == 0) {
      o->one_only = "--iter";
      DS_CHECK(parse_count(f, v, 0, &o->cmp.pred_iter, err));
    } else
      return ds_cli_unhandled(err, f);
  }
  if (o->help) return DS_OK;
  if (positional == 0)
    return ds_err_set(err, DS_EUSAGE, "analyze needs a trace: TRACE.csv, or two: "
                      "PREDICTED.csv MEASURED.csv (see ddpsim analyze --help)");
  if (positional == 2 && strcmp(o->pred, "-") == 0 && strcmp(o->meas, "-") == 0)
    return ds_err_set(err, DS_EUSAGE, "analyze - -: standard input holds one trace; give "
                      "the other as a file");
  if (positional == 1 && o->two_only)
    return ds_err_set(err, DS_EUSAGE, "option %s needs two traces (PREDICTED.csv "
                      "MEASURED.csv); with one trace, --iter N picks its iteration",
                      o->two_only);
  if (positional == 2 && o->one_only)
    return ds_err_set(err, DS_EUSAGE, "option --iter is for one trace; with two, "
                      "--pred-iter N and --skip-measured N pick the iterations");
  if (o->plot) { /* a bad extension is a usage error before any work */
    const char *dot = strrchr(o->plot, '.');
    if (!dot || (strcmp(dot, ".png") != 0 && strcmp(dot, ".svg") != 0))
      return ds_err_set(err, DS_EUSAGE, "option --plot: expected a file name ending "
                        "in .png or .svg, got \"%s\"", o->plot);
  }
  return DS_OK;
}

ds_status ds_analyze_check_args(int argc, char **argv, struct ds_err *err) {
  struct analyze_options o;
  return ds_cli_parse_split(options, argc, argv, parse_words, &o, err);
}

ds_status ds_analyze_main(int argc, char **argv, FILE *out, struct ds_err *err) {
  struct analyze_options o;
  DS_CHECK(ds_cli_parse_split(options, argc, argv, parse_words, &o, err));
  if (o.help) {
    fputs(usage, out);
    return DS_OK;
  }
  /* the outputs can be written and overwrite neither trace (issue #15) */
  const struct ds_path_arg outs[] = {{"--chrome", o.chrome}, {"--plot", o.plot}},
                           ins[] = {{"predicted trace", o.pred}, {"measured trace", o.meas}};
  DS_CHECK(ds_outputs_check(outs, 2, ins, 2, err));
  /* Both outputs or neither: each is renamed into place only once both
   * were written, and a user's old files stay as they were on failure. */
  struct ds_compare *c = NULL;
  ds_status st = DS_OK;
  for (size_t i = 0; i < 2; i++)
    if (outs[i].path) DS_CHECK_GOTO(ds_atomic_file_defer(outs[i].path, err), st, done);
  if (o.meas) DS_CHECK_GOTO(ds_compare_load(o.pred, o.meas, &o.cmp, &c, err), st, done);
  else DS_CHECK_GOTO(ds_compare_load_one(o.pred, &o.cmp, &c, err), st, done);
  DS_CHECK_GOTO(ds_export_write(c, o.plot, o.chrome, err), st, done);
  /* --chrome - has standard output alone (the JSON whole): the report goes
   * to standard error, as ddpsim's does beside an output on "-". It is
   * printed, and flushed, before the outputs are renamed into place: a
   * report that cannot be written fails the command whole, old files kept. */
  FILE *report = o.chrome && strcmp(o.chrome, "-") == 0 ? stderr : out;
  errno = 0;
  ds_compare_print(report, c, o.format, o.per_op);
  DS_CHECK_GOTO(ds_textout_flush(report, errno, err), st, done);
  DS_CHECK_GOTO(ds_atomic_file_finish(1, err), st, done);
done:
  ds_atomic_file_finish(0, NULL); /* on failure: removes what is pending */
  ds_compare_free(c);
  return st;
}
