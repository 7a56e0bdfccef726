/*
 * The simulate command: loads the files, builds each strategy's schedules
 * (single, dp, ddp; ps its own loop), runs them on the executor for every
 * requested configuration, prints the summary and writes the requested
 * trace and schedule files.
 */
#ifndef DS_RUN_H
#define DS_RUN_H

#include <stdio.h>

#include "base/status.h"
#include "sim/cli/options.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DS_VERSION "0.1.0"

/* Runs the command described by opt, printing the summary to out. */
ds_status ds_run(const struct ds_options *opt, FILE *out, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_RUN_H */
