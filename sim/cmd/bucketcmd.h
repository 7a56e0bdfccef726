/*
 * `ddpsim buckets`: DDP's bucket layouts of a model under PyTorch's rules
 * (sim/train/ddp.h), one CSV row per bucket and phase, in the format of
 * tests/data/conformance/buckets.csv (captured from real PyTorch by
 * tools/capture_conformance.py), so that the two compare byte for byte.
 */
#ifndef DS_BUCKETCMD_H
#define DS_BUCKETCMD_H

#include <stdio.h>

#include "base/cli.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the subcommand with argv[0] == "buckets"; prints to out. */
ds_status ds_bucketcmd_main(int argc, char **argv, FILE *out, struct ds_err *err);

/* Parses and validates argv as ds_bucketcmd_main does, then stops: no
 * model is read. What the `subcmd` fuzz reader drives (fuzz/README.md). */
ds_status ds_bucketcmd_check_args(int argc, char **argv, struct ds_err *err);

/* Every flag `ddpsim buckets` knows, with whether it takes a value (ending with
 * {NULL}): what its parser accepts, for the tests that compare it with
 * its --help. */
const struct ds_cli_option *ds_bucketcmd_options(void);

#ifdef __cplusplus
}
#endif

#endif /* DS_BUCKETCMD_H */
