/*
 * The one definition of every timing metric of an iteration (docs/analysis.md,
 * "Metrics"): ddpsim's summary (sim/cli/report.c) and `ddpsim analyze`
 * (analysis/compare.c) both measure an iteration's ops with
 * ds_metrics_measure_among (ds_metrics_measure is it without other
 * iterations' ops), so analyze of a run's own trace prints the run's summary.
 *
 * Which op counts as what is ds_metrics_class's alone: comm-stream ops are
 * communication; host-stream ops (launches, DataParallel's replicate, DDP's
 * hooks) are neither compute nor communication, they show only through the
 * ops they delay; every other stream (compute, copy) is compute. A
 * parameter server's work on its GPU is compute whatever the stream the
 * trace gives it: its update (a `step` of the server's index, on the host
 * stream) and a worker's push and pull to the server on its own GPU
 * (device-local copies, on the comm stream). The optimizer step counts its
 * compute ops.
 *
 * Where rank 0's iteration goes: gpu_busy_ms, the union of its compute and
 * copy ops; exposed_comm_ms, communication while no compute runs;
 * host_exposed_ms, host ops while neither compute nor communication runs
 * (the GPU waits for the host: host-bound time); the rest of iter_ms is
 * idle (waiting on other ranks). The first and last are clipped to rank
 * 0's window of the iteration (below); with communication inside it (every
 * strategy's steady state) the three and the rest add up to iter_ms.
 *
 * An iteration's time runs from its start to its last op's end, over all
 * ranks. Its start is its first op's start, or the previous iteration's last
 * op end when that is later: a strategy whose ranks enter the next iteration
 * before the slowest one has finished (dp's GPU 0 still steps while the
 * others wait on the next input scatter) is measured by its period, and a
 * replay's iterations, separated by barriers, by their span.
 *
 * Rank 0's window is as long as the iteration and starts where rank 0's own
 * step does: its first op of the iteration, or its own previous iteration's
 * last op end when that is later (--loop free's launches run while the
 * GPU still works on the previous step), or the iteration's start when
 * that is earlier. Rank 0 may enter a step before the slowest rank has
 * ended the previous one (a parameter server's rank 0 when its own pull
 * ends; DDP with a straggler or --jitter): a window from the
 * iteration's start would cut the start of its step off and count it as
 * waiting. In the steady state the windows of consecutive iterations tile
 * rank 0's timeline, so each op counts in one iteration.
 *
 * An asynchronous parameter server's iteration is no common step: each
 * worker runs its steps at its own pace, and the iteration, step i of
 * every worker, runs from the earliest worker's to the slowest one's (a
 * straggler's step i ends long after the others' step i + 1 or i + 5).
 * Rank 0 then has no share of that span to measure, and its server's
 * updates of step i (one per worker's gradient, each when that worker's
 * push arrives) run anywhere in it: a window from rank 0's previous op
 * end held one straggler's update and called the rest waiting. So in such
 * an iteration (a server applies more than one update: one per worker;
 * sync applies one) rank 0's window is its own step: from its first op of
 * the iteration that is not a server's update to the end of its last (its
 * pull), rank0_window_ms long, and the lines add up to that. Its step
 * starts where its previous step's pull ended (its forward waits for the
 * parameters), so consecutive windows tile rank 0's timeline as a worker.
 * Its server's updates of the iteration count where they fall inside, and
 * so does any op of another iteration on rank 0 that runs there (an update
 * of another worker's other step: a straggler's earlier one), when the
 * caller passes the other iterations' ops (ds_metrics_measure_among).
 */
#ifndef DS_METRICS_H
#define DS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "traces/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* No previous iteration (the trace's first, or the only one). */
#define DS_METRICS_NO_PREVIOUS INT64_MIN

/* One op of an iteration and when it ran. op is borrowed. */
struct ds_timed_op {
  const struct ds_op *op;
  int64_t start_ns, end_ns;
};

enum ds_metrics_class { DS_METRICS_COMPUTE, DS_METRICS_COMM, DS_METRICS_HOST };

/* The per-iteration metrics, in report order: X(name). */
#define DS_METRICS_LIST(X) \
  X(iter_ms)               \
  X(fwd_ms)                \
  X(bwd_ms)                \
  X(step_ms)               \
  X(comm_ms)               \
  X(exposed_comm_ms)       \
  X(overlap_pct)           \
  X(gpu_busy_ms)           \
  X(host_exposed_ms)       \
  X(ddp_bwd_compute_ms)    \
  X(ddp_bwd_comm_ms)       \
  X(ddp_overlap_ms)        \
  X(ddp_overlap_pct)

enum ds_metric_id {
#define DS__METRIC_ENUM(n) DS_METRIC_##n,
  DS_METRICS_LIST(DS__METRIC_ENUM)
#undef DS__METRIC_ENUM
  DS_METRIC_COUNT
};

/* Values indexed by enum ds_metric_id; t0_ns is the iteration's first op
 * start, the origin of its per-op times (bucket starts). rank0_window_ms:
 * the length of rank 0's window, which gpu_busy_ms, exposed_comm_ms,
 * host_exposed_ms and the idle rest add up to: iter_ms, or with
 * rank0_own_step (an asynchronous parameter server, above) rank 0's own
 * step. */
struct ds_metrics {
  double v[DS_METRIC_COUNT];
  int64_t t0_ns;
  double rank0_window_ms;
  int rank0_own_step;
};

/* The metric's name ("iter_ms"). */
const char *ds_metrics_name(enum ds_metric_id id);

/* What op counts as (see above). */
enum ds_metrics_class ds_metrics_class(const struct ds_op *op);

/* The bucket whose per-bucket times (start from t0_ns, duration) op gives:
 * a rank-0 communication op with a bucket; -1 for any other op. */
int32_t ds_metrics_bucket(const struct ds_op *op);

/* The latest op end among ops[0..n): the previous iteration's end when they
 * are every op of the earlier iterations; DS_METRICS_NO_PREVIOUS when n is 0. */
int64_t ds_metrics_last_end(const struct ds_timed_op *ops, size_t n);
/* The same among rank 0's ops alone: rank 0's previous iteration's end. */
int64_t ds_metrics_rank0_last_end(const struct ds_timed_op *ops, size_t n);

/* Measures one iteration: ops[0..n) (every rank's ops of it, any order),
 * prev_end_ns the previous iteration's last op end over every rank and
 * prev_rank0_end_ns rank 0's own (DS_METRICS_NO_PREVIOUS when none; the
 * two equal give a window from the iteration's start). DS_ENOMEM when
 * scratch space cannot be had (m untouched). */
ds_status ds_metrics_measure(const struct ds_timed_op *ops, size_t n, int64_t prev_end_ns,
                             int64_t prev_rank0_end_ns, struct ds_metrics *m);
/* The same, where other[0..n_other) (may be NULL) are ops of the run's
 * other iterations: where rank 0's window is its own step (rank0_own_step),
 * their rank-0 ops inside it count in gpu_busy_ms and host_exposed_ms as
 * the iteration's do; nothing else reads them. */
ds_status ds_metrics_measure_among(const struct ds_timed_op *ops, size_t n,
                                   const struct ds_timed_op *other, size_t n_other,
                                   int64_t prev_end_ns, int64_t prev_rank0_end_ns,
                                   struct ds_metrics *m);

#ifdef __cplusplus
}
#endif

#endif /* DS_METRICS_H */
