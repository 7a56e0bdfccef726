/*
 * `ddpsim buckets`: DDP's bucket layouts of a model under PyTorch's rules
 * (sim/train/ddp.h), one CSV row per bucket and phase, in the format of
 * tests/data/conformance/buckets.csv (captured from real PyTorch by
 * tools/capture_conformance.py), so that the two compare byte for byte.
 */
#ifndef DS_BUCKETCMD_H
#define DS_BUCKETCMD_H

#include <stdio.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the subcommand with argv[0] == "buckets"; prints to out. */
ds_status ds_bucketcmd_main(int argc, char **argv, FILE *out, struct ds_err *err);

/* Parses and validates argv as ds_bucketcmd_main does, then stops: no
 * model is read. What the `subcmd` fuzz reader drives (fuzz/README.md). */
ds_status ds_bucketcmd_check_args(int argc, char **argv, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_BUCKETCMD_H */
