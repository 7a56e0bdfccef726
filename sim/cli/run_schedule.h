/*
 * A configuration's run on the executor (run.c): its strategy's schedule
 * of every iteration (single, dp, ddp), run once per --samples seed, the
 * row's timing and bucket fields, and the --trace and --schedule files.
 * Internal to sim/cli/run*.c.
 */
#ifndef DS_RUN_SCHEDULE_H
#define DS_RUN_SCHEDULE_H

#include <stdint.h>

#include "base/status.h"
#include "sim/cli/report.h"
#include "sim/cli/run.h"
#include "sim/cli/run_setup.h"
#include "traces/trace.h"

/* Runs configuration c (single, dp or ddp) at bucket cap bucket_mb into
 * sum; *bucket_bytes receives the row's bucket sizes (malloc'd, the
 * caller's to free), which sum->bucket_bytes points at. */
ds_status ds__run_schedule(struct config_run *c, double bucket_mb, struct ds_summary *sum,
                           double **bucket_bytes, struct ds_err *err);

/* Keeps a copy of the run's trace t in c's ds_run_capture, when c has one
 * (meta: the trace's header, its inputs and seed). */
ds_status ds__run_trace_capture(const struct config_run *c, const struct ds_trace *t,
                                const struct ds_csv_meta *meta);
/* Writes the run's trace t to c's --trace file (meta: its header) and
 * keeps a copy in c's ds_run_capture, whichever c asks for; the one
 * finisher of single's, dp's and ddp's traces and of ps's trace kept in
 * memory (sim/cli/run_ps.c). */
ds_status ds__run_trace_outputs(const struct config_run *c, const struct ds_trace *t,
                                const struct ds_csv_meta *meta, struct ds_err *err);

#endif /* DS_RUN_SCHEDULE_H */
