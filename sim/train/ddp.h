/*
 * DistributedDataParallel as PyTorch implements it (torch/nn/parallel/
 * distributed.py, c10d/reducer.cpp):
 *
 *   - the reducer is built with one bucket of every gradient (bucket limit
 *     sys.maxsize), unless find_unused_parameters=True without a static
 *     graph: then the gradients are binned in registration order from the
 *     first parameter, with the caps below, and the bucket list is reversed
 *     (the small first bucket is all-reduced last); those buckets are never
 *     rebuilt;
 *   - otherwise the buckets are rebuilt once, in the order the gradients
 *     became ready in backward (the model's grad_ready order, or reverse
 *     registration order): before iteration 1 by default, before iteration
 *     2 with static_graph=True (iterations 0 and 1 both run one bucket);
 *   - the caps: bucket_cap_mb=C makes every bucket's cap C, the first one's
 *     too; with bucket_cap_mb unset the cap is 25 MiB and the first
 *     bucket's dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB (distributed.py);
 *     a bucket closes as soon as its size reaches its cap (so it may
 *     overshoot by one tensor);
 *   - a bucket's all-reduce starts when its last gradient is ready and not
 *     before the previous bucket's (one in-order communication stream);
 *   - the optimizer step waits for the last all-reduce.
 *
 * Those are current PyTorch's rules. PyTorch 1.4's reducer (the one the
 * DDP benchmark in pytorch/pytorch benchmarks/distributed/ddp ran;
 * DS_DDP_RULES_TORCH_1_4, ddpsim --pytorch-version 1.4) differs in three
 * (torch/csrc/distributed/c10d/reducer.cpp and nn/parallel/distributed.py
 * of that release):
 *   - the buckets are binned in registration order with the limits
 *     [_DEFAULT_FIRST_BUCKET_BYTES, bucket_cap], whatever bucket_cap_mb,
 *     the list reversed, and never rebuilt (there was no rebuild);
 *   - mark_variable_ready copies each gradient into its bucket with a
 *     plain copy_, and once a bucket's last gradient is in, divides the
 *     whole bucket by the world size with one div_ kernel
 *     (replica.contents.div_) before the all-reduce call;
 *   - no gradient_as_bucket_view, comm hooks or static_graph existed.
 *
 * PyTorch 1.9's (DS_DDP_RULES_TORCH_1_9, --pytorch-version 1.9; the
 * release DeepLearningExamples' 21.03 container ran) differs from current
 * PyTorch in the buckets only:
 *   - the initial buckets are binned in registration order with the
 *     limits [dist._DEFAULT_FIRST_BUCKET_BYTES, bucket_bytes_cap] and the
 *     list reversed (distributed.py __init__: _compute_bucket_assignment_
 *     by_size, then list(reversed(bucket_indices))), not one bucket;
 *   - they are rebuilt once in gradient-ready order before iteration 1
 *     unless find_unused_parameters (reducer.cpp should_rebuild_buckets:
 *     (static_graph_ || !find_unused_parameters_) && !has_rebuilt_bucket_),
 *     with the limits [kDefaultFirstBucketBytes, bucket_bytes_cap_]
 *     (rebuild_buckets): the first bucket is 1 MiB whatever bucket_cap_mb
 *     or distributed.py's _DEFAULT_FIRST_BUCKET_BYTES (--first-bucket-mb
 *     shapes iteration 0's buckets only);
 *   - static_graph was an experimental _set_static_graph(): refused.
 * As current PyTorch: copy_grad_to_bucket divides while it copies
 * (at::mul_out(bucket_view, grad, 1 / divFactor_), a plain copy_ under a
 * comm hook), finalize_backward copies the buckets back to .grad, and
 * gradient_as_bucket_view and comm hooks exist. Its optimizer and
 * zero_grad differ (compute.h).
 */
#ifndef DS_DDP_H
#define DS_DDP_H

#include <stdint.h>

#include "traces/schedule.h"
#include "base/status.h"
#include "sim/coll/coll.h"
#include "sim/train/comm_hook.h"
#include "sim/train/compute.h"
#include "sim/train/memory.h"
#include "sim/train/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_bucket {
  int32_t first;       /* into ds_buckets.order */
  int32_t count;       /* tensors */
  double bytes;
  int32_t ready_layer; /* its all-reduce may start after this layer's backward
                        * (the lowest layer of its tensors: backward runs the
                        * layers in reverse) */
};

struct ds_buckets {
  int32_t *order;      /* parameter indices, bucket by bucket, each bucket's
                        * tensors in the reducer's order (owned) */
  int32_t n_order;
  struct ds_bucket *b; /* owned; b[0] is all-reduced first */
  int32_t n;
};

/* How a layout is made (see the rules above). */
enum ds_bucket_layout {
  DS_BUCKETS_ONE,          /* the reducer's initial single bucket */
  DS_BUCKETS_REGISTRATION, /* find_unused_parameters: registration order, reversed */
  DS_BUCKETS_READY,        /* the rebuild: gradient-ready order */
};

/* Assigns gradients to buckets by `layout`; the caps (bytes) apply to the
 * two binned layouts: the first bucket binned gets first_bucket_bytes,
 * every later one bucket_cap_bytes. */
ds_status ds_ddp_buckets(const struct ds_model *model, int dtype_bytes,
                         double first_bucket_bytes, double bucket_cap_bytes,
                         enum ds_bucket_layout layout, struct ds_buckets *out);
void ds_ddp_buckets_release(struct ds_buckets *b);

/* Which PyTorch's DDP rules a run follows (see above). */
enum ds_ddp_rules {
  DS_DDP_RULES_CURRENT = 0, /* current PyTorch (the default) */
  DS_DDP_RULES_TORCH_1_4,   /* PyTorch 1.4's reducer */
  DS_DDP_RULES_TORCH_1_9,   /* PyTorch 1.9's reducer */
};

/* --first-bucket-mb under --pytorch-version 1.9, refused (exit 2) by ddpsim
 * and `ddpsim buckets`. What the option models: assigning
 * torch.distributed._DEFAULT_FIRST_BUCKET_BYTES before DDP is built (no
 * release has a DDP argument for it; distributed.py reads the attribute and,
 * after 1.9, passes it to the Reducer's rebuild, current releases only with
 * bucket_cap_mb unset). 1.9's Reducer has no such argument: its
 * rebuild_buckets takes C++'s kDefaultFirstBucketBytes, so only iteration
 * 0's layout would change, never the reported iteration's. */
#define DS_DDP_TORCH19_FIRST_BUCKET_REFUSAL                                                   \
  "option --pytorch-version 1.9: PyTorch 1.9 has no --first-bucket-mb (its rebuilt buckets, " \
  "those of every iteration after the first, take C++'s kDefaultFirstBucketBytes, 1 MiB, "   \
  "whatever torch.distributed._DEFAULT_FIRST_BUCKET_BYTES is)"

/* The first bucket's cap in MiB by distributed.py's rule: first_bucket_mb
 * when given (> 0; _DEFAULT_FIRST_BUCKET_BYTES tuning), else bucket_cap_mb
 * when given (> 0: a given cap caps the first bucket too), else 1 MiB
 * (_DEFAULT_FIRST_BUCKET_BYTES with bucket_cap_mb unset). Under PyTorch
 * 1.4's and 1.9's rules a given bucket_cap_mb leaves the first bucket at
 * 1 MiB. */
double ds_ddp_first_bucket_mb(enum ds_ddp_rules rules, double bucket_cap_mb,
                              double first_bucket_mb);

/* The layouts of a DDP run: `initial` until iteration rebuild_iter, then
 * `rebuilt` (rebuild_iter 0 when the buckets are never rebuilt: rebuilt is
 * then the initial layout, used from iteration 0). rule says in words which
 * of PyTorch's rules applied (static storage). */
struct ds_ddp_plan {
  struct ds_buckets initial;
  struct ds_buckets rebuilt;
  int32_t rebuild_iter;
  const char *rule;
};

ds_status ds_ddp_plan(const struct ds_model *model, int dtype_bytes,
                      double first_bucket_bytes, double bucket_cap_bytes,
                      int find_unused_parameters, int static_graph,
                      struct ds_ddp_plan *out);
/* The same under `rules`: PyTorch 1.4's is find_unused_parameters's layout
 * (registration order, reversed, never rebuilt) whatever the flags;
 * 1.9's starts from that layout and is rebuilt in gradient-ready order
 * before iteration 1 (never with find_unused_parameters); static_graph is
 * refused under both (DS_EUSAGE). */
ds_status ds_ddp_plan_rules(const struct ds_model *model, int dtype_bytes,
                            double first_bucket_bytes, double bucket_cap_bytes,
                            int find_unused_parameters, int static_graph,
                            enum ds_ddp_rules rules, struct ds_ddp_plan *out);
void ds_ddp_plan_release(struct ds_ddp_plan *plan);

/* The layout iteration `iter` runs. */
const struct ds_buckets *ds_ddp_plan_layout(const struct ds_ddp_plan *plan, int32_t iter);

struct ds_nccl_model;

struct ds_ddp_options {
  int32_t world_size;
  int64_t batch; /* per GPU */
  const struct ds_ring *ring; /* for the all-reduce's predicted dur_us; may be NULL */
  /* NULL: every all-reduce is the plain ring ("ring"). Otherwise NCCL's
   * protocols: proto_fixed, or NCCL's choice per bucket size when it is
   * DS_PROTO_COUNT; the op's algo names it ("ring/LL128"). Borrowed. */
  const struct ds_nccl_model *nccl;
  enum ds_proto proto_fixed;
  /* DDP options: no_overlap makes every all-reduce wait for the end of
   * backward (the baseline overlap is measured against); accum_steps K > 1
   * is no_sync: K-1 micro-steps of forward and backward that only
   * accumulate, then one that synchronises, then the optimizer step. */
  int no_overlap;
  int32_t accum_steps;
  /* --comm-hook (comm_hook.h); iter: the simulated iteration (PowerSGD's
   * iteration 0 is its warm-up's vanilla all-reduce). */
  struct ds_comm_hook hook;
  int32_t iter;
  /* The all-reduce algorithm (coll.h), or, with algo_auto and nccl, NCCL's
   * choice of algorithm per bucket (of the fixed protocol's algorithms when
   * proto_fixed is one); the op's algo names what runs ("tree/LL128",
   * "direct"). dur_us: the ring's closed form, NCCL's prediction plus its
   * extras for tree and nvls, 0 for the others (no closed form in general). */
  enum ds_ar_algo algo;
  int algo_auto;
  /* gradient_as_bucket_view=True: the reducer copies nothing back, and
   * divides in place instead of copying into the bucket where .grad already
   * is the bucket's view (kept by 1.9's zero_grad, or a --grad-accum
   * micro-step after the first; current rules' set_to_none drops it) */
  int grad_as_bucket_view;
  /* 1: build rank 0's ops only, the template every rank runs
   * (traces/shared_schedule.h): rank r's ops are rank 0's but for their
   * rank, ids (+ r * the ops per rank) and dependencies (its own copies) */
  int template_only;
  /* broadcast_buffers=True (PyTorch's default): before the first
   * micro-step's forward, the model's buffers go from rank 0 to every rank
   * (ds_ddp_buffer_buckets) */
  int broadcast_buffers;
  /* DS_DDP_RULES_TORCH_1_4: a bucketK.div kernel per bucket (the bucket's
   * div_ by the world size) after its last copy, before its all-reduce
   * call, and the copies into the bucket are plain copy_ (same bytes).
   * Comm hooks and grad_as_bucket_view are not combined with it (the
   * caller refuses them). */
  enum ds_ddp_rules rules;
  /* grad_accum K > 1 (--grad-accum): K micro-steps of forward and
   * backward outside no_sync, each with the reducer's copies, every
   * bucket's all-reduce and the copies back (as DDP runs every backward
   * outside no_sync), then the optimizer step. Micro-steps after the
   * first, of either kind, add into .grad (ds_compute_accum_grad_ns), and
   * every one does where the rules keep .grad (1.4, 1.9). Not combined
   * with accum_steps > 1. */
  int32_t grad_accum;
  /* The reducer all-reduces its map of the parameters used locally (an
   * int32 per parameter), and the step waits for it (ds_ddp_build): 1 in
   * every synchronising micro-step (find_unused_parameters=True), once the
   * last bucket is ready, after the buckets; 2 in the first only
   * (static_graph's first backward, static_graph_first_iteration), where
   * delay_all_reduce sends it after the whole backward, before the copies
   * into the buckets and their all-reduces (reducer.cpp). One
   * more collective id per synchronising micro-step either way, after the
   * buffers' (with 2 the later ones go unused). */
  int local_used_map;
  /* --loop free: a training loop that never waits for the GPU (no
   * loss.item() per iteration) lets the host run ahead, so each rank's
   * first host op waits for its previous iteration's last host op (the
   * optimizer step's host work: ds_host_emit_step) instead of the step's
   * GPU op; the kernels still follow the step's on their streams. 0 (sync,
   * the default): the host waits for the step's GPU op, as a loop that
   * reads the loss every iteration (PyTorch's DDP benchmark) does. */
  int free_loop;
  /* 1: this iteration's first forward is the bucket rebuild's (the first
   * on the rebuilt layout `buckets`; reducer.cpp rebuild_buckets, called by
   * _pre_forward after DDP's per-iteration host work, before the buffers'
   * broadcast): sync_bucket_indices's two int32 broadcasts from rank 0,
   * rebuild.indices (parameters + 1 ints) and rebuild.sizes (one int per
   * bucket), each a host op (its copies' launches and the call), a copy to
   * the device, the broadcast, a copy back that the compute stream runs
   * after the broadcast, and the host's wait for it (rebuild.X.wait, the
   * blocking copy); then under grad_as_bucket_view where .grad is kept
   * (ds_compute grad_kept: 1.9's zero_grad) bucketK.view_copy, the copy of
   * every .grad into its new bucket view (initialize_bucket_views). Two
   * more collective ids (ds_ddp_colls_per_iteration), after the
   * iteration's others. */
  int rebuild_forward;
};

/* DDP's broadcast of module buffers (distributed.py _sync_buffers ->
 * dist._broadcast_coalesced, c10d comm.cpp broadcast_coalesced): the
 * buffers in buckets of one dtype each, a bucket closing once it reaches
 * DS_DDP_BROADCAST_BUCKET_BYTES (DDP's broadcast_bucket_size, 250 MiB),
 * numbered by their first buffer. group[i] gets buffer i's bucket (group
 * may be NULL); returns the number of buckets, -1 when out of memory. */
#define DS_DDP_BROADCAST_BUCKET_BYTES (250.0 * 1024 * 1024)
int32_t ds_ddp_buffer_buckets(const struct ds_model *model, int32_t *group);

/* Builds one iteration's schedule: per rank, with broadcast_buffers and a
 * model with buffers, first the buffers' broadcast (per buffer bucket K:
 * buffersK.flatten, the broadcast from rank 0, buffersK.copy back into
 * the buffers, each after its host op); then forward of every layer, loss,
 * backward in reverse, each layer's followed by the reducer's copy of its
 * gradients into their buckets (LAYER.to_bucket, or LAYER.grad_div where
 * gradient_as_bucket_view finds .grad the view), with each bucket's all-reduce right after the
 * copy that completes it (after the last backward with no_overlap; the
 * micro-steps of no_sync first, without the reducer); then, bucket by
 * bucket after its all-reduce, the copy of the averaged gradients back to
 * .grad (bucketK.to_grad, none with gradient_as_bucket_view), then the
 * optimizer step. With a
 * communication hook the bucket's ops are the hook's plan (comm_hook.h):
 * its kernels in backward on the compute stream, its all-reduces on the
 * comm stream, its future callbacks on the copy stream, each after the
 * one before; the step waits for the last of every stream. Op ids are
 * id_base + index; collective ids are (coll_base + bucket) * K + j, with K
 * the hook's all-reduces per bucket (1 without a hook, so coll_base +
 * bucket); buffer bucket k's broadcast is (coll_base + buckets->n + k) *
 * K, so an iteration uses buckets->n + ds_ddp_buffer_buckets ids of
 * coll_base's unit when broadcast_buffers is set (and local_used_map's
 * all-reduce (coll_base + buckets->n + buffer buckets) * K, one more id
 * when set); with grad_accum G > 1
 * micro-step s uses those ids from coll_base + s * (that count), G times
 * as many (ds_ddp_colls_per_iteration). Each kernel and
 * collective waits for its op on the host stream (host costs of the
 * topology's compute section, docs/strategies.md). With template_only, rank 0's ops alone, with the ids they have
 * in the full build. */
ds_status ds_ddp_build(const struct ds_model *model,
                       const struct ds_compute *compute,
                       const struct ds_ddp_options *opt,
                       const struct ds_buckets *buckets, int64_t id_base,
                       int64_t coll_base, struct ds_schedule *out);

/* Collective ids (coll_base's unit) one iteration of ds_ddp_build uses:
 * (buckets + buffer buckets when broadcast_buffers + 1 with local_used_map)
 * x grad_accum micro-steps, + DS_DDP_REBUILD_COLLS with rebuild_forward. */
int64_t ds_ddp_colls_per_iteration(const struct ds_ddp_options *opt, int32_t n_buckets,
                                   int32_t n_buffer_buckets);
/* sync_bucket_indices's broadcasts in the rebuild's forward (rebuild_forward):
 * the last two ids of ds_ddp_colls_per_iteration's count. */
#define DS_DDP_REBUILD_COLLS 2

#ifdef __cplusplus
}
#endif

#endif /* DS_DDP_H */
