/*
 * A row's peak memory per GPU under its strategy (run.c), and, when that
 * exceeds the GPU's, the largest batch per GPU that fits under the same
 * memory model (no simulation). Internal to sim/cli/run*.c.
 */
#ifndef DS_RUN_MEMORY_H
#define DS_RUN_MEMORY_H

#include "base/status.h"
#include "sim/cli/options.h"
#include "sim/cli/report.h"
#include "sim/cli/run_setup.h"

/* Configuration c's memory at c->batch into s (o holds its values): mem,
 * peak_mem_gib, peak_mem_gib_gpu0 and _other, dp_mem under dp, gpu_mem_gib. */
ds_status ds__run_memory(const struct config_run *c, const struct ds_options *o,
                         struct ds_summary *s, struct ds_err *err);

/* When s (ds__run_memory's, at c->batch) does not fit: the largest batch per
 * GPU below c->batch whose peak fits (ds_report_fits_memory), bisected, into
 * s->fit_batch (0: not even batch 1 fits) and its peak into
 * s->fit_batch_mem_gib, s->fit_searched set. When s fits but not with the
 * margin (ds_report_fits_memory_with_margin): the largest that fits with
 * it, s->fit_searched_with_margin set. Bisection is exact because
 * every term of the peak is nondecreasing in the batch: the saved
 * activations, the output, the loss's gradients and DataParallel's scattered
 * inputs grow with it; parameters, gradients, buckets, optimizer state, the
 * step's temporaries and the hook's buffers do not depend on it. */
ds_status ds__run_fit_batch(const struct config_run *c, const struct ds_options *o,
                            struct ds_summary *s, struct ds_err *err);

#endif /* DS_RUN_MEMORY_H */
