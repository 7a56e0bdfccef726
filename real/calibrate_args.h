/*
 * The command line of `ddpreal calibrate` (calibrate.cu): the flags it
 * knows, its --help text and its parser. Plain C without CUDA or MPI, so
 * that it is built, tested (tests/test_real_calibrate_args.c) and fuzzed
 * (fuzz/readers.c, `subcmd`) whether or not the cuda device is; the
 * measurements themselves need the cuda device.
 *
 *   ddpreal calibrate --schedule S.csv --out calib.yaml [--device cuda]
 *                     [-g N] [--share-gpus] [--fp32-math tf32|fp32]
 *                     [--peak-tflops X] [--mem-bw GBPS] [--iters N]
 *                     [--nccl-blocks N] [-b 8] [-e 256M] [-f 2]
 */
#ifndef DS_REAL_CALIBRATE_ARGS_H
#define DS_REAL_CALIBRATE_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "base/cli.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The all-reduce sizes one calibration fits, at most (-b, -e, -f are
 * refused beyond). */
#define DS_CALIBRATE_MAX_POINTS 64

struct ds_calibrate_args {
  const char *schedule, *out; /* required unless help; borrowed from argv */
  int32_t nranks;             /* -g, default 1 */
  int share_gpus;
  int fp32_math; /* -1: tf32 when cuBLAS has it, else fp32; 0 fp32; 1 tf32 */
  double peak_tflops, mem_gbps; /* 0: from the GPU table */
  int32_t iters;                /* default 10 */
  int32_t nccl_blocks;          /* the interference copy's blocks (NCCL's channels), 16 */
  size_t min_bytes, max_bytes;  /* the all-reduce sweep: 8 .. 256 MiB, at most
                                 * DS_CALIBRATE_MAX_POINTS sizes */
  double factor;                /* 2 */
  char command[1024];           /* "ddpreal calibrate ...", for the file's header */
  int help;                     /* -h, --help: nothing after it is read */
};

/* Parses argv[1..argc) (argv[0] is "calibrate"); argv is borrowed. Usage
 * errors are DS_EUSAGE with a message naming the flag (ddpreal prefixes
 * "ddpreal calibrate: "); --schedule and --out are required unless --help
 * is given. Nothing is read: the schedule is calibrate.cu's to open. */
ds_status ds_calibrate_args_parse(int argc, char **argv, struct ds_calibrate_args *a,
                                  struct ds_err *err);

/* The --help text. */
const char *ds_calibrate_args_usage(void);

/* Every flag the parser knows, with whether it takes a value (ending with
 * {NULL}), for the tests that compare it with --help. */
const struct ds_cli_option *ds_calibrate_args_flags(void);

#ifdef __cplusplus
}
#endif

#endif /* DS_REAL_CALIBRATE_ARGS_H */
