/*
 * The parameter-server row (run.c, --strategy ps): sim/train/ps.c's own
 * event loop, once per --samples seed, its row, memory and files.
 * Internal to sim/cli/run*.c.
 */
#ifndef DS_RUN_PS_H
#define DS_RUN_PS_H

#include "base/status.h"
#include "sim/cli/report.h"
#include "sim/cli/run_setup.h"

/* Runs configuration c under --strategy ps into s. */
ds_status ds__run_ps(struct config_run *c, struct ds_summary *s, struct ds_err *err);

#endif /* DS_RUN_PS_H */
