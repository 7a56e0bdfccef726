/*
 * `ddpsim topo FILE`: prints what a topology file describes -- the GPU and
 * its rates, the compute factors, the devices and links, the route between
 * a chosen pair of GPUs, and the ring the collectives use with its
 * bottleneck -- so a user can check it before trusting a prediction. A
 * topology in which some GPU cannot reach another is an error naming them.
 */
#ifndef DS_TOPOCMD_H
#define DS_TOPOCMD_H

#include <stdio.h>

#include "base/cli.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the subcommand with argv[0] == "topo"; prints to out. */
ds_status ds_topocmd_main(int argc, char **argv, FILE *out, struct ds_err *err);

/* Parses and validates argv as ds_topocmd_main does (`topo import`'s by
 * ds_importcmd_check_args), then stops: no file is read. What the `subcmd`
 * fuzz reader drives (fuzz/README.md). */
ds_status ds_topocmd_check_args(int argc, char **argv, struct ds_err *err);

/* Every flag `ddpsim topo` knows, with whether it takes a value (ending with
 * {NULL}): what its parser accepts, for the tests that compare it with
 * its --help. */
const struct ds_cli_option *ds_topocmd_options(void);

#ifdef __cplusplus
}
#endif

#endif /* DS_TOPOCMD_H */
