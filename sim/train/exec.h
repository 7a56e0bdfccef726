/*
 * The discrete-event executor: runs a schedule on the engine, the network
 * model and the collectives, and records when every op started and ended.
 *
 * An op starts when (1) all its dependencies have ended, (2) every earlier
 * op of its (rank, stream) has ended (streams are in-order queues), and (3)
 * its rank has been released (the end of the rank's previous iteration).
 * Compute-like ops last their schedule dur_us; a compute-stream op runs
 * slower while NCCL collectives run on its GPU (interference.h), re-rated
 * whenever one starts or ends beside it, so the trace shows each op's
 * slowdown as end - start beyond its dur_us. Collective ops take what the
 * network model says.
 *
 * It runs the shared form (traces/shared_schedule.h: ops stored once per
 * distinct rank program); ranks that run in lockstep share their streams'
 * heads and events (a cohort, split where collectives end its members at
 * different times), so the events are per op and cohort, not per op and
 * rank; a full schedule runs as one-rank blocks (ds_exec_run).
 */
#ifndef DS_EXEC_H
#define DS_EXEC_H

#include <stdint.h>

#include "traces/schedule.h"
#include "traces/shared_schedule.h"
#include "base/status.h"
#include "sim/coll/coll.h"
#include "sim/net/net.h"
#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_nccl_model;

struct ds_exec_options {
  enum ds_net_mode net_mode;
  /* The bound on a run's work (events + flows started + flow rates
   * re-solved; sim/net/engine.h ds_engine_set_work_limit), foreseen once a
   * run is one iteration in as its work so far times the ops left over
   * the ops done; 0: none. iters: the schedule's iterations (1: the
   * foresight waits for half the ops). work_advice (borrowed, may be NULL):
   * what the refusal tells the user to change. */
  uint64_t work_limit;
  int32_t iters;
  const char *work_advice;
  enum ds_coll_model coll_model;
  int32_t ring_chunks; /* pipelined pieces per ring step, >= 1 */
  /* NCCL's model for all-reduces whose algo names a protocol ("ring/LL128");
   * NULL refuses them. It must describe rings of every collective's size
   * (DDP: all ranks). Borrowed. */
  const struct ds_nccl_model *nccl;
  /* Per-op multiplier of the duration of non-collective ops, indexed like
   * the schedule given to ds_exec_run (the full-schedule index for
   * ds_exec_run_shared; --jitter fills it); NULL: 1 for every op. Borrowed;
   * must hold sched->n_ops values for each run. */
  const double *dur_scale;
  /* Per-rank multiplier of the duration of compute-stream ops (--straggler),
   * applied as one factor with dur_scale's: dur_scale[i] * rank_scale[r];
   * NULL: 1. Borrowed; world_size values. */
  const double *rank_scale;
  /* A ring the caller has built already (ds_ring_build_rails; run_setup.c builds
   * the world's for its closed forms and NCCL's model), used for
   * collectives over exactly its members instead of building it again:
   * rails over thousands of GPUs cost route searches. Borrowed; NULL: none. */
  const struct ds_ring *prebuilt_ring;
  /* The compute model the schedule's durations came from, for what a
   * kernel is bound by and the GPU's SMs and HBM (interference.h);
   * borrowed; NULL: no interference. */
  const struct ds_compute *compute;
  /* The model whose layers the schedule's fwd/bwd ops name (op.layer), for
   * each op's class; borrowed; NULL: every op of unknown class. */
  const struct ds_model *model;
  /* The samples per GPU of the layers' passes, for what bounds each part of
   * a pass (ds_interference_sm_share); 0: each op as one kernel. */
  int64_t batch;
  /* Rank 0's compute-stream ops' time added by interference
   * (interference.h): slowed_ns[t], for template op t (on_op's t), set as
   * the op ends to its duration less its stand-alone one (the schedule's
   * times --jitter's and --straggler's factors), 0 where nothing slowed it.
   * Borrowed, one value per template op; NULL: not recorded. */
  int64_t *r0_slowed_ns;
  /* Every rank its own cohort: the per-rank execution, which the lockstep
   * one must equal event for event in its results (tests). */
  int no_lockstep;
};

struct ds_exec;

/* Creates an executor at simulated time 0 over topo (borrowed). */
ds_status ds_exec_new(struct ds_topo *topo, const struct ds_exec_options *opt,
                      struct ds_exec **out, struct ds_err *err);
void ds_exec_free(struct ds_exec *ex);

/* Runs one iteration of sched (validated; ranks must be < topo->n_gpus;
 * rank r runs on GPU r). rank_time_ns[r] holds on entry the time rank r may
 * start and on return the time its last op ended (unchanged for a rank
 * without ops). op_start_ns / op_end_ns (arrays of sched->n_ops) receive
 * the times of every op. Fails with DS_EINTERNAL if ops are left that can
 * never start (a dependency cycle or a collective some rank never enters). */
ds_status ds_exec_run(struct ds_exec *ex, struct ds_schedule *sched,
                      int64_t *rank_time_ns, int64_t *op_start_ns,
                      int64_t *op_end_ns, struct ds_err *err);

/* Called as each op ends: rank's copy of template op t of block `block`
 * (traces/shared_schedule.h) ran from start_ns to end_ns. */
typedef void (*ds_exec_op_fn)(void *ctx, size_t block, int32_t rank, uint32_t t,
                              int64_t start_ns, int64_t end_ns);

/* Runs one iteration of a shared schedule (ds_shared_validate'd; ranks
 * must be < topo->n_gpus), as ds_exec_run runs the full schedule it stands
 * for, with memory O(template + ranks + collective members). Each op's
 * times go to on_op (may be NULL) as it ends; dur_scale is indexed by
 * full-schedule index. */
ds_status ds_exec_run_shared(struct ds_exec *ex, struct ds_shared_schedule *sched,
                             int64_t *rank_time_ns, ds_exec_op_fn on_op, void *ctx,
                             struct ds_err *err);

/* Engine events fired so far (for benchmarks). */
uint64_t ds_exec_events(const struct ds_exec *ex);

/* Cohorts of the last run (exec.c: ranks of one class in lockstep): how
 * many it began with (ranks grouped by class, release time and compute
 * factor) and ended with (after the splits where collectives ended their
 * members apart). */
struct ds_exec_lockstep {
  int32_t initial, final;
};
struct ds_exec_lockstep ds_exec_lockstep(const struct ds_exec *ex);

#ifdef __cplusplus
}
#endif

#endif /* DS_EXEC_H */
