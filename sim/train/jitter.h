/*
 * Per-kernel noise (--jitter) and the quantiles of sampled iteration
 * times (--samples): docs/sweeps.md.
 */
#ifndef DS_JITTER_H
#define DS_JITTER_H

#include <stddef.h>
#include <stdint.h>

#include "traces/schedule.h"
#include "traces/shared_schedule.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills scale[0 .. sched->n_ops) with one multiplier per op: a lognormal
 * draw of mean 1 and coefficient of variation cv for every compute-stream
 * op (sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2), in op order, from GSL's
 * mt19937 seeded with seed; 1 for every other op. cv = 0 gives exactly 1
 * everywhere. DS_ENOMEM when the generator cannot be allocated. */
ds_status ds_jitter_fill(const struct ds_schedule *sched, double cv, uint64_t seed,
                         double *scale);

/* The same draws one op at a time, for a run that lays its ops out as it
 * goes (sim/train/ps.c): ds_jitter_next gives the multiplier of the next op
 * in the order ds_jitter_fill walks them, so that calling it on every op of
 * a schedule, in order, gives ds_jitter_fill's scale[]. ds_jitter_new:
 * DS_ENOMEM when the generator cannot be allocated; free accepts NULL. */
struct ds_jitter;
ds_status ds_jitter_new(double cv, uint64_t seed, struct ds_jitter **out);
double ds_jitter_next(struct ds_jitter *j, const struct ds_op *op);
void ds_jitter_free(struct ds_jitter *j);

/* The same for the full schedule sched stands for (traces/shared_schedule.h):
 * scale[0 .. sched->n_ops), by full-schedule index, the same draws as
 * ds_jitter_fill of its expansion. Per-rank state where ranks differ:
 * O(ops x ranks) values. */
ds_status ds_jitter_fill_shared(const struct ds_shared_schedule *sched, double cv,
                                uint64_t seed, double *scale);

/* --straggler's multiplier of op o's duration on rank `rank` (o may be a
 * template op that several ranks run: rank names the one that runs it):
 * rank_factor[rank] on a compute-stream op, 1 on any other op (collectives,
 * host ops, copies on their own streams) and when rank_factor is NULL.
 * The one rule: the executor (exec_ops.c), the parameter server's loop
 * (ps.c) and the --schedule file (run_setup.c) all ask it, so the file a
 * replay runs carries exactly the slowdown the simulation gave. */
double ds_straggler_op_factor(const double *rank_factor, int32_t rank, const struct ds_op *o);

/* Sorts x[0 .. n) (n >= 1) in place and returns its 0.50, 0.95 and 0.99
 * quantiles (GSL's linear interpolation between order statistics). */
void ds_jitter_quantiles(double *x, size_t n, double *p50, double *p95, double *p99);

#ifdef __cplusplus
}
#endif

#endif /* DS_JITTER_H */
