/*
 * Parameter-server training (--strategy ps): workers push gradients to
 * servers that hold the parameters, apply the optimizer and send the
 * parameters back (docs/strategies.md, "Parameter server").
 *
 *   - Workers are the ranks, one per GPU (rank r on GPU r), each a PyTorch
 *     process. Per step a worker runs forward (every layer, then the loss)
 *     and backward (every layer in reverse), each layer's kernel after its
 *     host launch (sim/train/host.h: the Python thread's forward launches
 *     from the step's start, then the autograd engine thread's backward
 *     nodes, host_node each, as single's and DDP's ranks), and pushes its
 *     gradients to their servers:
 *     after backward, each shard at once (DS_PS_PUSH_AFTER_BACKWARD), or
 *     after each layer's backward, that layer's tensors grouped by server
 *     (DS_PS_PUSH_PER_LAYER, as TensorFlow sends each gradient when it is
 *     ready; pushes never hold compute back, several fly at once). It then
 *     waits for the parameters of every shard to come back (pull) before
 *     its next forward.
 *   - Servers: n_servers, server k colocated on GPU k * world / n_servers
 *     (spread evenly over the ranks, so over nodes too), as TensorFlow's and
 *     BytePS's colocated servers run. A push or pull between a worker and a
 *     remote server is one flow over the route between their GPUs (latency
 *     trailing, as send/recv); with the worker on the server's own GPU it
 *     is a device-local copy at memory speed: no links, rate mem_bw *
 *     mem_efficiency / 2 (read and write).
 *   - Sharding: whole tensors, in registration order, each to the server
 *     with the fewest bytes so far (ties: the lowest index), as
 *     TensorFlow's GreedyLoadBalancingStrategy places variables.
 *   - The server's update is memory-bound kernels on its GPU (the
 *     roofline of compute.h with no FLOPs over all their bytes, plus
 *     kernel_overhead per kernel, as a rank's foreach step: compute.h): the
 *     optimizer step over its shard, the passes of PyTorch's foreach
 *     optimizer (compute.h: 8 for SGD with momentum in 3 kernels, 18 for
 *     Adam in 7) over the shard's bytes, and in sync mode with N > 1
 *     workers first the sum of the N gradients, one kernel (read N, write
 *     1: N + 1 passes), after the server's Python optimizer.step() over its
 *     shard (host.h ds_host_foreach_step_tensors_ns: host_step_call plus
 *     its tensors times host_step_param), in the update's time. Updates of
 *     one server run one at a time, in arrival
 *     order, on a queue of their own: they do not slow the colocated
 *     worker's compute (approximation).
 *   - Sync: server k applies once all pushes of the step have arrived,
 *     then sends shard k to every worker: a barrier per step, per server.
 *     Async: server k applies each worker's gradient as soon as all its
 *     pushes to k (one, or one per layer) have arrived, and sends shard k
 *     back to that worker only; each worker runs at its own pace.
 *     Staleness of an applied gradient: the number of updates server k
 *     applied between the worker's pull of the parameters the gradient was
 *     computed on (iteration 0: the initial parameters, version 0) and this
 *     update. Always 0 in sync mode and with one worker.
 *   - Stragglers: per-rank factors multiply the duration of that rank's
 *     compute ops (forward, loss, backward; a server's update is not a
 *     worker's compute), times the jitter multiplier
 *     of the op when there is one.
 *
 * The asynchronous order of updates cannot be written as a static
 * schedule, so this module runs its own event loop on the engine and the
 * network model (not sim/train/exec.c). It still builds a schedule of one
 * iteration's ops, which every iteration runs (push and pull kinds, each
 * server update a `step` on the server's GPU on the `host` stream, its
 * bucket the server's index, as traces/SCHEMA.md has it;
 * analysis/metrics.c counts it as the GPU's work; the host launches
 * `launch` ops on the host stream, as single's) with same-rank
 * dependencies only: the cross-rank order (a server waits for pushes, a
 * worker for pulls, a worker's next step for its pulls) is this module's.
 */
#ifndef DS_PS_H
#define DS_PS_H

#include <stdint.h>

#include "traces/schedule.h"
#include "base/status.h"
#include "sim/train/compute.h"
#include "sim/train/ddp.h"
#include "sim/train/model.h"
#include "sim/net/net.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_ps_mode { DS_PS_SYNC, DS_PS_ASYNC };
/* When a worker pushes: each shard once after backward, or each layer's
 * gradients (grouped by server) as soon as that layer's backward ends. */
enum ds_ps_push { DS_PS_PUSH_AFTER_BACKWARD, DS_PS_PUSH_PER_LAYER };

const char *ds_ps_mode_name(enum ds_ps_mode mode);
/* Returns 0 and sets *out for "sync" or "async"; -1 otherwise. */
int ds_ps_mode_parse(const char *name, enum ds_ps_mode *out);
/* "after-backward", "per-layer"; parse returns -1 for anything else. */
const char *ds_ps_push_name(enum ds_ps_push push);
int ds_ps_push_parse(const char *name, enum ds_ps_push *out);

/* Where the parameters live. */
struct ds_ps_shards {
  int32_t n;                /* servers */
  int32_t *server_of_param; /* [model->n_params] (owned) */
  int64_t *numel;           /* [n] elements of each shard (owned) */
  int32_t *gpu;             /* [n] GPU (= rank) hosting server k (owned) */
};

/* Shards model's tensors over n_servers servers of a world of `world`
 * ranks (1 <= n_servers <= world). DS_EUSAGE otherwise (message in err). */
ds_status ds_ps_shard(const struct ds_model *model, int32_t n_servers, int32_t world,
                      struct ds_ps_shards *out, struct ds_err *err);
void ds_ps_shards_release(struct ds_ps_shards *s);

/* Bytes one server update moves (the kernel's memory traffic). */
double ds_ps_update_bytes(const struct ds_model *model, const struct ds_compute *c,
                          int64_t shard_numel, enum ds_ps_mode mode, int32_t world);

/* Per-GPU memory of GPU g: the worker's parameters, and at its peak
 * (ds_ddp_memory, walked through the iteration; opt's grads_kept,
 * optimizer_loop and weight_decay, its step_numel set here to the shards g
 * steps) activations, output and gradients, no optimizer state; plus for
 * every server on g its master copy of the shard (params), its optimizer
 * state (optimizer) and the buffers the `world` workers' pushes land in
 * (buckets), allocated once as a server's receive buffers, in either mode:
 * sync sums all of them after the last push, async holds each worker's
 * until its update, one per worker at most, all at once when the pushes
 * arrive together. */
void ds_ps_memory(const struct ds_model *model, const struct ds_precision *pr, int64_t batch,
                  const struct ds_memory_options *opt, const struct ds_ps_shards *shards,
                  int32_t world, int32_t gpu, struct ds_ddp_memory *out);
/* The same for a GPU whose servers hold `stepped` parameters in all (the
 * sum of their shards' numel, in server order), so that a caller asking
 * for every GPU sums the shards once (world + servers, not world x
 * servers: 16384 GPUs x 16384 servers took 0.3 s). */
void ds_ps_memory_stepped(const struct ds_model *model, const struct ds_precision *pr,
                          int64_t batch, const struct ds_memory_options *opt, double stepped,
                          int32_t world, struct ds_ddp_memory *out);

/* Called with each iteration's op times once every op of it has run, in
 * iteration order 0 .. iters-1: start_ns[j], end_ns[j] of the iteration's
 * op j, step's op j (the result's one-step schedule); all borrowed for the
 * call. A status other than DS_OK (message in err) stops the run, which
 * returns it. */
typedef ds_status (*ds_ps_iter_fn)(void *ctx, const struct ds_schedule *step, int32_t iter,
                                   const int64_t *start_ns, const int64_t *end_ns,
                                   struct ds_err *err);

struct ds_ps_options {
  int32_t world_size;         /* workers = ranks, <= topo->n_gpus */
  int64_t batch;              /* per worker */
  int32_t n_servers;
  enum ds_ps_mode mode;
  enum ds_ps_push push;
  int32_t iters;              /* steps every worker runs, >= 2 */
  enum ds_net_mode net_mode;
  /* [world_size] duration factor of each rank's compute ops (stragglers);
   * NULL: 1. Borrowed. */
  const double *rank_factor;
  /* Jitter (jitter.h): when jitter != 0, every compute op's duration is
   * also multiplied by a lognormal draw of CV jitter_cv from seed. */
  int jitter;
  double jitter_cv;
  uint64_t seed;
  /* The bound on the run's work (events + flows started + flow rates
   * re-solved, sim/net/engine.h), foreseen once a step's worth of ops
   * has ended, 0: none; work_advice (borrowed, may be NULL): what the
   * refusal tells the user to change. */
  uint64_t work_limit;
  const char *work_advice;
  /* Each iteration's times as it ends (a trace); NULL: none. */
  ds_ps_iter_fn on_iter;
  void *on_iter_ctx;
  /* Each worker holds its ops of the step it is in; the run holds a
   * window of iterations only where a step's ops are needed together
   * after their workers have moved on (sync: two, for its updates; with
   * on_iter, async: those between its slowest and fastest worker, which a
   * straggler makes grow with iters: the consumer gets a step's ops once
   * every worker has ended it), and with jitter each worker's draws of
   * the steps from its own to the fastest's (also growing with a
   * straggler's lag); a caller keeping every op's times in memory (a
   * trace written once the run has ended) says how many bytes per op it
   * keeps. mem_limit (0: no bound) bounds each: what the caller keeps is
   * refused before the run, naming the iterations that fit and kept_by,
   * what keeps them ("--trace -"); what the run holds (held_bytes: the
   * ops, the window and the draws together), when a step laid out would
   * take it past the limit, DS_EINPUT naming the --iters that would fit
   * and what holds the steps (--jitter, the trace), or --world-size when
   * one step's would not fit. */
  double kept_bytes_per_op;
  uint64_t mem_limit;
  const char *kept_by;
  /* The bound on one step's own memory (0: none), held for the whole run
   * whatever --iters: its ops, the worker-server routes and the flows in
   * flight, which grow as world_size x n_servers (every worker pushes to
   * and pulls from every server each step). A step estimated past it is
   * refused before anything is allocated, DS_EINPUT naming the product,
   * the estimate and the --ps-servers that would fit. Where it is set, the
   * step's estimate is taken from mem_limit too: what the caller keeps,
   * and the window, are each bounded by mem_limit less the estimate, so
   * the step and either stay within mem_limit together. */
  uint64_t step_mem_limit;
};

/* An op of one iteration (its index in ds_ps_result.step's ops) and when
 * it ran. */
struct ds_ps_op_time {
  size_t op;
  int64_t start_ns, end_ns;
};

/* What a run measured. Times in ms. Per-worker step time: from the end of
 * its iteration 0 (its last pull delivered) to the end of its last
 * iteration, divided by iters - 1. */
/* What only the parameter server's loop knows: per-worker step times, the
 * throughput they give, the staleness. The timing metrics of an iteration
 * (iteration, forward, communication, exposed, ...) are analysis/metrics.c's,
 * computed on `all` and the op times as for every strategy. */
struct ds_ps_result {
  struct ds_schedule *step;  /* one iteration's ops, ids 0..n-1: every
                                iteration runs these (owned) */
  /* [step->n_ops] (owned): the times of iteration 0's ops and of the last
   * iteration's (the others went to on_iter) */
  int64_t *first_start_ns, *first_end_ns;
  int64_t *last_start_ns, *last_end_ns;
  int64_t before_last_end_ns; /* the latest end of the earlier iterations' ops */
  int64_t before_last_rank0_end_ns; /* the same of rank 0's ops alone */
  /* Async: GPU 0's ops of the earlier iterations that may run inside rank
   * 0's own step of the last (analysis/metrics.h: a lagging worker's
   * updates on GPU 0), [n_before_last_rank0] (owned; NULL when none): rank
   * 0's ops of the earlier iterations that end after its own previous step
   * (its worker's ops there) and start before its last step's end. At most
   * the updates GPU 0 runs in one of rank 0's steps, whatever the lag. */
  struct ds_ps_op_time *before_last_rank0;
  size_t n_before_last_rank0;
  double *worker_step_ms;    /* [world] (owned): from the end of the worker's
                                step 0 to the end of its last, over iters - 1 */
  double mean_step_ms;       /* mean over workers of worker_step_ms */
  double samples_per_s;      /* sum over workers of batch / step time */
  double staleness_mean;     /* over every applied gradient (all iterations) */
  int64_t staleness_max;
  int64_t n_updates;         /* updates applied, all servers */
  uint64_t events;           /* engine events fired */
  size_t blocks;             /* iterations' blocks held at once, at most: sync's
                                updates, a consumer's (on_iter) copy of every op
                                (ps_window.c); 0 for async with no consumer */
  /* Bytes the run's per-step state held at once, at most: each worker's
   * ops of its step (16 per op of one iteration, whatever --iters), the
   * blocks, and with jitter each worker's draws of the steps from its own
   * to the latest any worker has entered (8 per compute op of a worker's
   * step and a pointer; a step's reused once its worker has ended it, so
   * the most steps the workers were behind together when a step was laid
   * out). What mem_limit bounds. */
  double held_bytes;
};

/* Builds and runs opt->iters steps of every worker, each holding its ops
 * of the step it is in (memory for one step's ops, and the window above,
 * not for --iters). compute is the roofline
 * of topo's GPU; topo and model are borrowed (topo's route scratch is used).
 * DS_EUSAGE for options out of range (message names the flag). */
ds_status ds_ps_run(struct ds_topo *topo, const struct ds_model *model,
                    const struct ds_compute *compute, const struct ds_ps_options *opt,
                    struct ds_ps_result *out, struct ds_err *err);
void ds_ps_result_release(struct ds_ps_result *r);

#ifdef __cplusplus
}
#endif

#endif /* DS_PS_H */
