/*
 * ddpreal: replays a ddpsim schedule on real devices and writes the
 * measured trace. `ddpreal collective ...` is the collective benchmark of
 * the cuda device, `ddpreal calibrate ...` measures the machine for ddpsim
 * (calibrate.h). Maps statuses to exit codes: 0 ok, 2 usage or input
 * error, 1 failure. Under mpirun every rank runs this; --help and
 * --version print on rank 0 only, and an error found before the launcher
 * starts (a flag, the schedule) prints on every rank that finds it, after
 * "rank R:" when the job has several ranks (a rank may fail alone: its
 * node may lack a file). Only rank 0 checks --trace, which only it writes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/textout.h"
#include "launch.h"
#include "options.h"
#include "replay.h"
#ifdef DS_HAVE_CUDA
#include "calibrate.h"
#include "collective.h"
#endif
#include "calibrate_args.h"
#include "collective_args.h"

/* A standard output that cannot take what was printed (`> /dev/full`) is
 * a failure with a message, for --help too (issue #15, defect 12). */
static int flush_stdout(void) {
  struct ds_err err = {0};
  if (ds_textout_flush(stdout, 0, &err) == DS_OK) return 0;
  fprintf(stderr, "ddpreal: %s\n", err.msg);
  return 1;
}

#ifndef DS_HAVE_CUDA
/* collective or calibrate in a build without the cuda device: their
 * options are plain C (collective_args.c, calibrate_args.c), so --help and
 * a usage error answer as in a cuda build; only a run is refused. */
static int without_cuda(const char *name, int argc, char **argv) {
  struct ds_err err = {0};
  ds_status st;
  int help;
  const char *usage;
  if (strcmp(name, "collective") == 0) {
    struct ds_collective_args a;
    st = ds_collective_args_parse(argc, argv, &a, &err);
    help = st == DS_OK && a.help;
    usage = ds_collective_args_usage();
  } else {
    struct ds_calibrate_args a;
    st = ds_calibrate_args_parse(argc, argv, &a, &err);
    help = st == DS_OK && a.help;
    usage = ds_calibrate_args_usage();
  }
  if (help) {
    fputs(usage, stdout);
    return flush_stdout();
  }
  if (st != DS_OK) {
    fprintf(stderr, "ddpreal %s: %s\n", name, err.msg);
    return ds_status_exit_code(st);
  }
  fprintf(stderr, "ddpreal %s: needs the cuda device, and this ddpreal was built without it "
          "(nvcc or nccl.h not found; see make info)\n", name);
  return 2;
}
#endif

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "collective") == 0) {
#ifdef DS_HAVE_CUDA
    return ds_collective_main(argc - 1, argv + 1);
#else
    return without_cuda("collective", argc - 1, argv + 1);
#endif
  }
  if (argc > 1 && strcmp(argv[1], "calibrate") == 0) {
#ifdef DS_HAVE_CUDA
    return ds_calibrate_main(argc - 1, argv + 1);
#else
    return without_cuda("calibrate", argc - 1, argv + 1);
#endif
  }
  struct ds_real_options opt;
  struct ds_err err = {0};
  ds_status st = ds_real_options_parse(argc, argv, &opt, &err);
  int32_t env_rank = ds_under_mpi() ? ds_mpi_env_rank() : -1;
  int quiet = env_rank > 0;
  if (st == DS_OK && opt.help) {
    if (!quiet) fputs(ds_real_options_usage(), stdout);
    return flush_stdout();
  }
  if (st == DS_OK && opt.version) {
    if (!quiet) puts("ddpreal " DS_REAL_VERSION);
    return flush_stdout();
  }
  if (st == DS_OK && !quiet) st = ds_real_options_check_trace(&opt, &err);
  if (st == DS_OK) st = ds_replay_command(&argc, &argv, &opt, stdout, &err);
  if (st != DS_OK) {
    const char *msg = err.msg[0] ? err.msg : ds_status_message(st);
    char prefix[32];
    int n = snprintf(prefix, sizeof prefix, "rank %d:", (int)env_rank);
    if (env_rank >= 0 && ds_mpi_env_world() != 1 && strncmp(msg, prefix, (size_t)n) != 0)
      fprintf(stderr, "ddpreal: %s %s\n", prefix, msg);
    else
      fprintf(stderr, "ddpreal: %s\n", msg);
    return ds_status_exit_code(st);
  }
  return flush_stdout();
}
