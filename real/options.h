/*
 * Command-line options of `ddpreal` (the replay command).
 */
#ifndef DS_REAL_OPTIONS_H
#define DS_REAL_OPTIONS_H

#include <stdint.h>

#include "base/cli.h"
#include "base/status.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kept equal to DS_VERSION in sim/cli/run.h: both commands ship together. */
#define DS_REAL_VERSION "0.1.0"

enum ds_real_device { DS_REAL_DEVICE_CPU, DS_REAL_DEVICE_CUDA };

/* --max-seconds' default: an hour of spins in all (replay_check.c). */
#define DS_REAL_MAX_SECONDS 3600.0
/* --max-seconds' largest value (about 31 years): beyond it no limit is meant. */
#define DS_REAL_MAX_SECONDS_CAP 1e9

struct ds_real_options {
  const char *schedule; /* required */
  const char *trace;    /* required */
  int32_t iters;        /* measured iterations, default 5 */
  int32_t warmup;       /* iterations run first and not recorded, default 1 */
  enum ds_real_device device; /* default cuda when built with it, else cpu */
  enum ds_compute_mode compute; /* default spin */
  int share_gpus;       /* --share-gpus: several ranks per GPU allowed */
  double max_seconds;   /* --max-seconds: the most the warmup and measured
                           iterations' spins may take in all (replay_check.c),
                           default DS_REAL_MAX_SECONDS */
  int help;
  int version;
};

/* Parses argv[1..argc) ("--flag value" and "--flag=value"). Usage errors
 * are DS_EUSAGE with a message naming the flag and what was expected;
 * --schedule and --trace are required unless --help or --version is given. */
ds_status ds_real_options_parse(int argc, char **argv, struct ds_real_options *opt,
                                struct ds_err *err);

/* "-" for --schedule, in both commands that read one (the replay,
 * options.c; calibrate, calibrate_args.c): refused, DS_EUSAGE, by
 * base/cli.h's ds_cli_refuse_stdin with one reason, so both say it alike.
 * DS_OK for any other value. */
ds_status ds_real_schedule_refuse_stdin(const char *value, struct ds_err *err);

/* Checks before anything runs that --trace can be written (its directory
 * exists and is writable) and is not the schedule. Only the process that
 * writes it (rank 0) calls it: under mpirun on several nodes the other
 * ranks may have no such directory. */
ds_status ds_real_options_check_trace(const struct ds_real_options *opt, struct ds_err *err);

/* The --help text. */
const char *ds_real_options_usage(void);

/* Every flag ddpreal knows, with whether it takes a value (ending with
 * {NULL}): what the parser accepts, for the tests that compare it with
 * --help. */
const struct ds_cli_option *ds_real_options_flags(void);

/* The limit in seconds on any wait for other ranks (the launchers'
 * barriers, the devices' collectives): DDPREAL_TIMEOUT_S, which --timeout
 * sets in the environment that forked and mpirun'd ranks share, else
 * DS_REAL_TIMEOUT_S (launch.h). */
double ds_real_timeout_s(void);

#ifdef __cplusplus
}
#endif

#endif /* DS_REAL_OPTIONS_H */
