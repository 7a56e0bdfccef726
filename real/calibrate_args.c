/*
 * `ddpreal calibrate`'s options (calibrate_args.h). Every flag is listed
 * once in `options` with whether it takes a value: a flag not in it is
 * unknown before any dispatch, and "needs a value" comes from it
 * (base/cli.h), so a made-up flag given last is named as unknown. The
 * value messages are the command's own ("--iters 'x': expected ...").
 */
#include "calibrate_args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/outputs.h"
#include "base/textout.h"
#include "base/units.h"
#include "collective_args.h"
#include "options.h"

#define PROGRAM "ddpreal calibrate"

static const char usage[] =
    "usage: ddpreal calibrate --schedule S.csv --out calib.yaml [options]\n"
    "Measures this node's GPU (GEMMs of the schedule's compute ops, memory copy,\n"
    "kernel launch) and all-reduce, fits the roofline's efficiency factors and\n"
    "alpha/bus_bw, and writes a calibration file for `ddpsim --calib`.\n"
    "  --schedule FILE      a schedule written by ddpsim --schedule (its fwd/bwd\n"
    "                       ops' flops give the GEMM sizes; a file, not -)\n"
    "  --out FILE           the calibration file (written atomically)\n"
    "  --device cuda        the only device calibrate measures\n"
    "  -g, --nranks N       all-reduce ranks, one process each (default 1)\n"
    "  --share-gpus         allow more ranks than GPUs (the collective numbers\n"
    "                       then do not represent separate GPUs)\n"
    "  --fp32-math M        tf32 or fp32: the math flops_efficiency is of (default\n"
    "                       tf32 when cuBLAS has it, as the topologies' default)\n"
    "  --peak-tflops X      peak of that math in TFLOP/s (default: the GPU table)\n"
    "  --mem-bw GBPS        peak memory bandwidth in GB/s (default: the GPU table)\n"
    "  --iters N            timed executions per GEMM shape (default 10)\n"
    "  --nccl-blocks N      blocks of the copy kernel run beside a GEMM to measure\n"
    "                       interference: NCCL's channels on the machine modelled\n"
    "                       (one block each; default 16)\n"
    "  -b, --minbytes SIZE  all-reduce sizes: the smallest, >= 4 (default 8; units\n"
    "                       as nccl-tests: 1K, 1M, 1G binary, k/m/g too, 1MB = 1M)\n"
    "  -e, --maxbytes SIZE  the largest (default 256M)\n"
    "  -f, --stepfactor X   multiply the size by X each step (default 2; at most 64\n"
    "                       sizes, the fit's)\n"
    "  -h, --help           this text\n";

const char *ds_calibrate_args_usage(void) { return usage; }

/* Every flag calibrate knows (base/cli.h). */
static const struct ds_cli_option options[] = {
    {"--schedule", 1, NULL}, {"--out", 1, NULL}, {"--device", 1, NULL}, {"-g", 1, "--nranks"},
    {"--nranks", 1, NULL}, {"--share-gpus", 0, NULL}, {"--fp32-math", 1, NULL},
    {"--peak-tflops", 1, NULL}, {"--mem-bw", 1, NULL}, {"--iters", 1, NULL},
    {"--nccl-blocks", 1, NULL}, {"-b", 1, "--minbytes"}, {"--minbytes", 1, NULL},
    {"-e", 1, "--maxbytes"}, {"--maxbytes", 1, NULL}, {"-f", 1, "--stepfactor"},
    {"--stepfactor", 1, NULL}, {"--help", 0, NULL}, {"-h", 0, "--help"}, {NULL, 0, NULL}};

const struct ds_cli_option *ds_calibrate_args_flags(void) { return options; }

/* A size as ddpreal collective (and nccl-tests) reads one, up to 16 GiB. */
static int parse_size(const char *s, size_t *out) {
  return ds_collective_parse_size(s, 16.0 * 1024 * 1024 * 1024, out);
}

/* A finite decimal number above lo (ds_units_parse_number: strtod alone
 * also took hex, "0x4" as 4 ranks, and leading blanks). */
static int parse_num(const char *s, double lo, double *out) {
  double v;
  if (ds_units_parse_number(s, &v) != DS_OK || !(v > lo)) return -1;
  *out = v;
  return 0;
}

/* A whole number from 1 to hi into *out, else *what says what was expected. */
static void parse_count(const char *v, double hi, const char *expected, int32_t *out,
                        const char **what) {
  double x;
  if (parse_num(v, 0, &x) || x != floor(x) || x > hi) *what = expected;
  else *out = (int32_t)x;
}

/* The value v of flag f (a flag of `options` that takes one) into a. */
static ds_status apply(struct ds_calibrate_args *a, const char *f, const char *v,
                       struct ds_err *err) {
  const char *what = NULL;
  if (!strcmp(f, "--schedule")) {
    DS_CHECK(ds_real_schedule_refuse_stdin(v, err));
    a->schedule = v;
  } else if (!strcmp(f, "--out")) {
    a->out = v;
  } else if (!strcmp(f, "--device")) {
    if (strcmp(v, "cuda") != 0)
      return ds_err_set(err, DS_EUSAGE, "option --device: expected cuda, got \"%s\" (calibrate "
                        "measures a GPU: a CPU has no roofline to fit)", v);
  } else if (!strcmp(f, "-g") || !strcmp(f, "--nranks")) {
    parse_count(v, 4096, "a rank count from 1 to 4096", &a->nranks, &what);
  } else if (!strcmp(f, "--iters")) {
    parse_count(v, 1000, "an integer from 1 to 1000", &a->iters, &what);
  } else if (!strcmp(f, "--nccl-blocks")) {
    parse_count(v, 1024, "an integer from 1 to 1024", &a->nccl_blocks, &what);
  } else if (!strcmp(f, "--fp32-math")) {
    if (!strcmp(v, "tf32")) a->fp32_math = 1;
    else if (!strcmp(v, "fp32")) a->fp32_math = 0;
    else what = "tf32 or fp32";
  } else if (!strcmp(f, "--peak-tflops")) {
    if (parse_num(v, 0, &a->peak_tflops)) what = "a positive number of TFLOP/s";
  } else if (!strcmp(f, "--mem-bw")) {
    if (parse_num(v, 0, &a->mem_gbps)) what = "a positive number of GB/s";
  } else if (!strcmp(f, "-b") || !strcmp(f, "--minbytes")) {
    if (parse_size(v, &a->min_bytes) || a->min_bytes < 4) what = "a size like 8 or 1K (>= 4)";
  } else if (!strcmp(f, "-e") || !strcmp(f, "--maxbytes")) {
    if (parse_size(v, &a->max_bytes)) what = "a size like 256M";
  } else if (!strcmp(f, "-f") || !strcmp(f, "--stepfactor")) {
    if (parse_num(v, 1, &a->factor)) what = "a factor > 1";
  } else {
    return ds_cli_unhandled(err, f);
  }
  if (what) return ds_err_set(err, DS_EUSAGE, "%s '%s': expected %s", f, v, what);
  return DS_OK;
}

/* ds_cli_walk_flags' callback: --share-gpus, the one flag without a
 * value, or a flag's value. */
static ds_status on_flag(void *ctx, const char *f, const char *v, struct ds_err *err) {
  struct ds_calibrate_args *a = ctx;
  if (v) return apply(a, f, v, err);
  if (strcmp(f, "--share-gpus") != 0) return ds_cli_unhandled(err, f);
  a->share_gpus = 1;
  return DS_OK;
}

/* The flags into a, defaults first (ds_cli_walk_flags reads "--flag=value"
 * as ds_cli_next_option does), and what they must say together. */
static ds_status parse_flags(int argc, char **argv, struct ds_calibrate_args *a,
                             struct ds_err *err) {
  memset(a, 0, sizeof *a);
  a->nranks = 1;
  a->fp32_math = -1;
  a->iters = 10;
  a->nccl_blocks = 16;
  a->min_bytes = 8;
  a->max_bytes = (size_t)256 << 20;
  a->factor = 2;
  /* "-b8M" as nccl-tests takes it (collective_args.h) */
  static const char *const shorts[] = {"-b", "-e", "-f", "-g", NULL};
  char **words;
  int n_words;
  if (ds_collective_split_attached(argc, argv, shorts, &n_words, &words))
    return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = ds_cli_walk_flags(options, PROGRAM, n_words, words, on_flag, a, &a->help, err);
  free(words);
  DS_CHECK(st);
  if (a->help) return DS_OK;
  if (!a->schedule)
    return ds_err_set(err, DS_EUSAGE, "missing --schedule (a file written by "
                      "ddpsim --schedule: its compute ops give the GEMM sizes)");
  if (!a->out)
    return ds_err_set(err, DS_EUSAGE, "missing --out (where to write the "
                      "calibration file)");
  if (a->max_bytes < a->min_bytes)
    return ds_err_set(err, DS_EUSAGE, "-e %zu is below -b %zu", a->max_bytes, a->min_bytes);
  /* every size is a point of the fit, which keeps DS_CALIBRATE_MAX_POINTS */
  if (ds_collective_sweep_steps(a->min_bytes, a->max_bytes, a->factor,
                                DS_CALIBRATE_MAX_POINTS) > DS_CALIBRATE_MAX_POINTS)
    return ds_err_set(err, DS_EUSAGE,
                      "-f %.10g: the sweep from %zu to %zu bytes would take more than %d sizes, "
                      "the most the fit keeps; use -f %.5f or more",
                      a->factor, a->min_bytes, a->max_bytes, DS_CALIBRATE_MAX_POINTS,
                      ds_collective_min_factor(a->min_bytes, a->max_bytes,
                                               DS_CALIBRATE_MAX_POINTS));
  return DS_OK;
}

ds_status ds_calibrate_args_parse(int argc, char **argv, struct ds_calibrate_args *a,
                                  struct ds_err *err) {
  ds_status st = parse_flags(argc, argv, a, err);
  /* the command as given, for the calibration file's header: a comment
   * line, so each word as ds_textout_comment_text shows it (a newline, NEL,
   * LS or PS in a path would end the comment and start a line the reader
   * parses, as in topo import's comments) */
  size_t used = (size_t)snprintf(a->command, sizeof a->command, "ddpreal");
  for (int i = 0; i < argc && used + 1 < sizeof a->command; i++) {
    a->command[used++] = ' ';
    ds_textout_comment_text(argv[i], a->command + used, sizeof a->command - used);
    used += strlen(a->command + used);
  }
  /* before the GPU is measured (issue #15): the output can be written, is
   * not the schedule read, and is not where standard output goes
   * (calibrate prints its tables there), as every command checks */
  if (st == DS_OK && !a->help) {
    const struct ds_path_arg out = {"--out", a->out}, in = {"--schedule", a->schedule};
    st = ds_outputs_check(&out, 1, &in, 1, err);
  }
  return st;
}
