/*
 * `ddpsim analyze PREDICTED MEASURED`: compares a predicted trace with a
 * measured trace of the same schedule (compare.h), prints the report and
 * optionally writes Chrome-trace JSON and a timeline plot (export.h).
 * `ddpsim analyze TRACE`: the same for one trace alone.
 * docs/analysis.md has the usage and every metric's definition.
 */
#ifndef DS_ANALYZE_H
#define DS_ANALYZE_H

#include <stdio.h>

#include "base/cli.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the subcommand with argv[0] == "analyze"; prints to out. Usage and
 * input errors are DS_EUSAGE / DS_EINPUT (exit 2) naming the flag or file;
 * a missing or failing gnuplot is DS_EIO (exit 1). */
ds_status ds_analyze_main(int argc, char **argv, FILE *out, struct ds_err *err);

/* Parses and validates argv as ds_analyze_main does, then stops: no trace
 * is read and the outputs are not checked. What the `subcmd` fuzz reader
 * drives (fuzz/README.md). */
ds_status ds_analyze_check_args(int argc, char **argv, struct ds_err *err);

/* Every flag `ddpsim analyze` knows, with whether it takes a value (ending with
 * {NULL}): what its parser accepts, for the tests that compare it with
 * its --help. */
const struct ds_cli_option *ds_analyze_options(void);

#ifdef __cplusplus
}
#endif

#endif /* DS_ANALYZE_H */
