/*
 * `ddpsim topo import FILE... [--nodes N] [--nic COUNTxBW] [--gpu NAME]
 * [--gpus TABLE] [--name NAME] [-o OUT]`: an NCCL topology XML or an
 * `nvidia-smi topo -m` matrix per node, written as a topology YAML
 * (sim/net/topo_import.h, docs/topologies.md).
 */
#ifndef DS_IMPORTCMD_H
#define DS_IMPORTCMD_H

#include <stdio.h>

#include "base/cli.h"
#include "base/status.h"

/* argv[0] is "import". Writes the YAML to out (or -o's file). */
ds_status ds_importcmd_main(int argc, char **argv, FILE *out, struct ds_err *err);

/* Parses and validates argv as ds_importcmd_main does, then stops: no file
 * is read or checked. What the `subcmd` fuzz reader drives. */
ds_status ds_importcmd_check_args(int argc, char **argv, struct ds_err *err);

/* Every flag `ddpsim topo import` knows, with whether it takes a value (ending with
 * {NULL}): what its parser accepts, for the tests that compare it with
 * its --help. */
const struct ds_cli_option *ds_importcmd_options(void);

#endif /* DS_IMPORTCMD_H */
