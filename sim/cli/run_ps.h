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

/* Per-GPU memory of the ps row at c->batch into s: GPU 0, the fullest other
 * GPU, and the breakdown of the fullest of all (a server's GPU). */
ds_status ds__run_ps_memory(const struct config_run *c, struct ds_summary *s,
                            struct ds_err *err);

#endif /* DS_RUN_PS_H */
