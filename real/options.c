/*
 * Option parsing for `ddpreal`. Every flag is listed once in OPTION_MAP with
 * whether it takes a value; the parser and the unknown-flag message both
 * come from it. Nothing here touches MPI: under mpirun every rank parses the
 * same argv and reaches the same verdict.
 */
#include "options.h"
#include "launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/outputs.h"
#include "base/units.h"

static const char usage[] =
    "usage: ddpreal --schedule SCHEDULE.csv --trace MEASURED.csv [options]\n"
    "       ddpreal collective ...   (collective benchmark; cuda device only)\n"
    "       ddpreal calibrate ...    (measure this node for ddpsim --calib; cuda only)\n"
    "\n"
    "Replays a schedule written by `ddpsim --schedule` on real devices and\n"
    "writes the measured timeline in the trace schema (source \"real\").\n"
    "\n"
    "  --schedule FILE.csv    the schedule to execute (required; a file, not -:\n"
    "                         every rank reads it from its path)\n"
    "  --trace FILE.csv       where to write the measured trace (required)\n"
    "  --iters N              measured iterations (default 5)\n"
    "  --warmup N             iterations run first and not recorded (default 1)\n"
#ifdef DS_HAVE_CUDA
    "  --device cpu|cuda      cpu: MPI ranks (run under mpirun -np N); cuda: one\n"
    "                         process per GPU (default cuda)\n"
#else
    "  --device cpu           MPI ranks, run under mpirun -np N (this build has\n"
    "                         no cuda device: nvcc or nccl.h was not found)\n"
#endif
    "  --compute spin|gemm    compute ops busy-wait their dur_us, or run GEMMs of\n"
    "                         their flops (default spin)\n"
    "  --share-gpus           allow several ranks on one GPU (cuda)\n"
    "  --max-seconds S        the longest the whole replay may spin (default 3600):\n"
    "                         a schedule whose iteration's longest chain of dur_us\n"
    "                         (collectives joining the ranks) times --warmup +\n"
    "                         --iters is longer is refused before anything runs\n"
    "                         (exit 2), naming that time\n"
    "  --timeout S            the longest one step may take, in seconds (default 300;\n"
    "                         env DDPREAL_TIMEOUT_S): a collective, a barrier or a\n"
    "                         GPU wait that takes longer ends the job, naming the\n"
    "                         rank that did not arrive. Spins (dur_us: every op but\n"
    "                         collectives and, under --compute gemm, compute ops\n"
    "                         with flops) that would keep a wait longer are refused\n"
    "                         before anything runs (exit 2): one op; a rank's chain\n"
    "                         of ops from its previous collective to its next (or\n"
    "                         to its iteration's end), which the others wait for;\n"
    "                         cuda: an iteration's longest chain\n"
    "  --help, --version\n";

const char *ds_real_options_usage(void) { return usage; }

static ds_status parse_int(const char *flag, const char *v, int64_t lo,
                           int64_t hi, int32_t *out, struct ds_err *err) {
  int64_t x;
  DS_CHECK(ds_cli_parse_int(flag, v, lo, hi, &x, err));
  *out = (int32_t)x;
  return DS_OK;
}

/* Every flag ddpreal knows, and whether a value follows it (base/cli.h). */
static const struct ds_cli_option options[] = {
    {"--schedule", 1, NULL}, {"--trace", 1, NULL}, {"--iters", 1, NULL}, {"--warmup", 1, NULL},
    {"--device", 1, NULL}, {"--compute", 1, NULL}, {"--share-gpus", 0, NULL},
    {"--timeout", 1, NULL}, {"--max-seconds", 1, NULL}, {"--help", 0, NULL},
    {"--version", 0, NULL}, {"-h", 0, "--help"},
    {NULL, 0, NULL}};

const struct ds_cli_option *ds_real_options_flags(void) { return options; }

/* --timeout's rule, which DDPREAL_TIMEOUT_S set by hand obeys too. */
static int timeout_valid(const char *v, double *seconds) {
  /* decimal only (ds_units_parse_number): strtod alone took "0x10" as 16 s */
  double x;
  if (ds_units_parse_number(v, &x) != DS_OK || !(x > 0 && x <= 1e6)) return 0;
  *seconds = x;
  return 1;
}

ds_status ds_real_schedule_refuse_stdin(const char *value, struct ds_err *err) {
  return ds_cli_refuse_stdin(err, "option --schedule", value, "every rank reads the schedule "
                             "from its path", "the file ddpsim --schedule wrote");
}

static ds_status apply(struct ds_real_options *o, const char *flag,
                       const char *v, struct ds_err *err) {
  if (strcmp(flag, "--schedule") == 0) {
    DS_CHECK(ds_real_schedule_refuse_stdin(v, err));
    o->schedule = v;
  }
  else if (strcmp(flag, "--trace") == 0) o->trace = v;
  else if (strcmp(flag, "--iters") == 0) DS_CHECK(parse_int(flag, v, 1, 100000, &o->iters, err));
  else if (strcmp(flag, "--warmup") == 0) DS_CHECK(parse_int(flag, v, 0, 100000, &o->warmup, err));
  else if (strcmp(flag, "--device") == 0) {
    if (strcmp(v, "cpu") == 0) o->device = DS_REAL_DEVICE_CPU;
    else if (strcmp(v, "cuda") == 0) {
#ifdef DS_HAVE_CUDA
      o->device = DS_REAL_DEVICE_CUDA;
#else
      return ds_err_set(err, DS_EUSAGE,
                        "option --device: this ddpreal was built without the cuda "
                        "device (nvcc or nccl.h not found; see make info): use --device cpu");
#endif
    } else {
      return ds_cli_bad_value(err, flag, "cpu or cuda", v);
    }
  } else if (strcmp(flag, "--compute") == 0) {
    if (strcmp(v, "spin") == 0) o->compute = DS_COMPUTE_SPIN;
    else if (strcmp(v, "gemm") == 0) o->compute = DS_COMPUTE_GEMM;
    else return ds_cli_bad_value(err, flag, "spin or gemm", v);
  } else if (strcmp(flag, "--share-gpus") == 0) {
    o->share_gpus = 1;
  } else if (strcmp(flag, "--timeout") == 0) {
    /* Read by both devices from the environment, which forked and
     * mpirun'd ranks share (each mpirun'd rank parses its own argv). */
    double seconds;
    if (!timeout_valid(v, &seconds))
      return ds_cli_bad_value(err, flag, "a number of seconds above 0, at most 1e6, e.g. 60", v);
    if (setenv("DDPREAL_TIMEOUT_S", v, 1) != 0)
      return ds_err_set(err, DS_ENOMEM, "option --timeout: out of memory");
  } else if (strcmp(flag, "--max-seconds") == 0) {
    double x;
    if (ds_units_parse_number(v, &x) != DS_OK || !(x > 0 && x <= DS_REAL_MAX_SECONDS_CAP))
      return ds_cli_bad_value(err, flag, "a number of seconds above 0, at most 1e9, e.g. 7200",
                              v);
    o->max_seconds = x;
  } else if (ds_cli_is_help(flag)) o->help = 1;
  else if (strcmp(flag, "--version") == 0) o->version = 1;
  else return ds_cli_unhandled(err, flag);
  return DS_OK;
}

ds_status ds_real_options_parse(int argc, char **argv, struct ds_real_options *o,
                                struct ds_err *err) {
  memset(o, 0, sizeof *o);
  o->iters = 5;
  o->warmup = 1;
#ifdef DS_HAVE_CUDA
  o->device = DS_REAL_DEVICE_CUDA;
#else
  o->device = DS_REAL_DEVICE_CPU;
#endif
  o->compute = DS_COMPUTE_SPIN;
  o->max_seconds = DS_REAL_MAX_SECONDS;
  struct ds_cli_walk walk = {.program = "ddpreal", .options = options};
  for (int i = 1; i < argc; i++) {
    char flag[64];
    const char *value;
    DS_CHECK(ds_cli_next_option(&walk, argc, argv, &i, flag, sizeof flag, &value, err));
    DS_CHECK(apply(o, flag, value, err));
  }
  if (o->help || o->version) return DS_OK;
  /* Set in the environment rather than by --timeout: a value that is not
   * a number of seconds is refused here, not replaced by the default. */
  const char *env_timeout = getenv("DDPREAL_TIMEOUT_S");
  double env_seconds;
  if (env_timeout && *env_timeout && !timeout_valid(env_timeout, &env_seconds))
    return ds_err_set(err, DS_EUSAGE,
                      "environment DDPREAL_TIMEOUT_S=\"%s\": expected a number of seconds "
                      "above 0, at most 1e6, e.g. 60 (or unset it for the default %g s)",
                      env_timeout, (double)DS_REAL_TIMEOUT_S);
  if (!o->schedule)
    return ds_err_set(err, DS_EUSAGE,
                      "missing --schedule (a file written by ddpsim --schedule; see ddpreal --help)");
  if (!o->trace)
    return ds_err_set(err, DS_EUSAGE,
                      "missing --trace (where to write the measured trace; see ddpreal --help)");
  /* the cpu device has no GPU to share (launch_fork.c is cuda's) */
  if (o->share_gpus && o->device == DS_REAL_DEVICE_CPU)
    return ds_err_set(err, DS_EUSAGE, "option --share-gpus: the cpu device runs one process "
                      "per rank and no GPU; it would be ignored (drop it%s)",
#ifdef DS_HAVE_CUDA
                      ", or give --device cuda"
#else
                      ""
#endif
    );
  return DS_OK;
}

double ds_real_timeout_s(void) {
  const char *v = getenv("DDPREAL_TIMEOUT_S");
  if (!v || !*v) return DS_REAL_TIMEOUT_S;
  /* Checked by ds_real_options_parse before any rank runs. */
  double seconds;
  return timeout_valid(v, &seconds) ? seconds : DS_REAL_TIMEOUT_S;
}

ds_status ds_real_options_check_trace(const struct ds_real_options *o, struct ds_err *err) {
  /* Before any iteration runs: the trace can be written and is not the
   * schedule (issue #15, defects 4 and 11). */
  const struct ds_path_arg out = {"--trace", o->trace}, in = {"--schedule", o->schedule};
  return ds_outputs_check(&out, 1, &in, 1, err);
}
