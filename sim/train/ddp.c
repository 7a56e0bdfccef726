/*
 * DDP strategy builder (see ddp.h for the PyTorch behaviour it follows).
 * Everything here is deterministic arithmetic on the model file: no event
 * is simulated, the schedule is the output.
 */
#include "sim/train/ddp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "sim/coll/nccl_model.h"
#include "sim/train/host.h"
#include "sim/train/norm.h"

/* Bins params[order[0..n)] as compute_bucket_assignment_by_size does
 * (c10d/reducer.cpp): a bucket closes once its bytes reach its limit, the
 * first bucket's limit is first_cap and every later one's cap; cap <= 0
 * means no limit (one bucket). */
static void bin(const struct ds_model *m, int dtype_bytes, double first_cap, double cap,
                struct ds_buckets *out) {
  struct ds_bucket *cur = NULL;
  for (int32_t i = 0; i < out->n_order; i++) {
    const struct ds_param *p = &m->params[out->order[i]];
    if (cur == NULL) {
      cur = &out->b[out->n++];
      cur->first = i;
      cur->ready_layer = p->layer;
    }
    cur->count++;
    cur->bytes += (double)p->numel * dtype_bytes;
    if (p->layer < cur->ready_layer) cur->ready_layer = p->layer;
    double limit = out->n == 1 ? first_cap : cap;
    if (cap > 0 && cur->bytes >= limit) cur = NULL;
  }
}

/* Reverses the bucket list in place, keeping each bucket's tensors in
 * their order (Python's reversed(bucket_indices) in distributed.py). */
static ds_status reverse_buckets(struct ds_buckets *bk) {
  int32_t *order = malloc((size_t)bk->n_order * sizeof *order);
  if (!order) return DS_ENOMEM;
  int32_t at = 0;
  for (int32_t lo = 0, hi = bk->n - 1; lo <= hi; lo++, hi--) {
    struct ds_bucket t = bk->b[lo];
    bk->b[lo] = bk->b[hi];
    bk->b[hi] = t;
  }
  for (int32_t k = 0; k < bk->n; k++) {
    memcpy(order + at, bk->order + bk->b[k].first, (size_t)bk->b[k].count * sizeof *order);
    bk->b[k].first = at;
    at += bk->b[k].count;
  }
  free(bk->order);
  bk->order = order;
  return DS_OK;
}

ds_status ds_ddp_buckets(const struct ds_model *m, int dtype_bytes,
                         double first_cap, double cap, enum ds_bucket_layout layout,
                         struct ds_buckets *out) {
  memset(out, 0, sizeof *out);
  out->order = malloc((size_t)m->n_params * sizeof *out->order);
  out->b = calloc((size_t)m->n_params, sizeof *out->b);
  if (!out->order || !out->b) {
    ds_ddp_buckets_release(out);
    return DS_ENOMEM;
  }
  out->n_order = m->n_params;
  for (int32_t i = 0; i < m->n_params; i++)
    out->order[i] = layout != DS_BUCKETS_READY ? ds_model_registered(m, i)
                    : m->grad_ready          ? m->grad_ready[i]
                                             : ds_model_registered(m, m->n_params - 1 - i);
  bin(m, dtype_bytes, first_cap, layout == DS_BUCKETS_ONE ? 0 : cap, out);
  if (layout == DS_BUCKETS_REGISTRATION && reverse_buckets(out) != DS_OK) {
    ds_ddp_buckets_release(out);
    return DS_ENOMEM;
  }
  return DS_OK;
}

double ds_ddp_first_bucket_mb(enum ds_ddp_rules rules, double bucket_cap_mb,
                              double first_bucket_mb) {
  if (first_bucket_mb > 0) return first_bucket_mb;
  /* PyTorch 1.4's and 1.9's distributed.py always pass
   * [_DEFAULT_FIRST_BUCKET_BYTES, bucket_bytes_cap] to the binning (1.9's
   * rebuild too: reducer.cpp rebuild_buckets' kDefaultFirstBucketBytes) */
  if (rules != DS_DDP_RULES_CURRENT) return 1;
  return bucket_cap_mb > 0 ? bucket_cap_mb : 1;
}

ds_status ds_ddp_plan(const struct ds_model *m, int dtype_bytes, double first_cap,
                      double cap, int find_unused, int static_graph,
                      struct ds_ddp_plan *out) {
  return ds_ddp_plan_rules(m, dtype_bytes, first_cap, cap, find_unused, static_graph,
                           DS_DDP_RULES_CURRENT, out);
}

ds_status ds_ddp_plan_rules(const struct ds_model *m, int dtype_bytes, double first_cap,
                            double cap, int find_unused, int static_graph,
                            enum ds_ddp_rules rules, struct ds_ddp_plan *out) {
  memset(out, 0, sizeof *out);
  ds_status st;
  if (rules != DS_DDP_RULES_CURRENT && static_graph) return DS_EUSAGE;
  /* Binned in registration order first: PyTorch 1.4 and find_unused never
   * rebuild; 1.9 rebuilds in gradient-ready order before iteration 1. */
  int never_rebuilt = (find_unused && !static_graph) || rules == DS_DDP_RULES_TORCH_1_4;
  if (never_rebuilt || rules == DS_DDP_RULES_TORCH_1_9) {
    out->rule = rules == DS_DDP_RULES_TORCH_1_4
                    ? "PyTorch 1.4: binned in registration order, bucket list reversed, "
                      "no rebuild"
                : never_rebuilt
                    ? "find_unused_parameters: binned in registration order, bucket list "
                      "reversed, never rebuilt"
                    : "PyTorch 1.9: binned in registration order (bucket list reversed) in "
                      "iteration 0, rebuilt in gradient-ready order before iteration 1";
    if (!never_rebuilt) out->rebuild_iter = 1;
    DS_CHECK_GOTO(ds_ddp_buckets(m, dtype_bytes, first_cap, cap, DS_BUCKETS_REGISTRATION,
                                 &out->initial), st, fail);
    /* 1.9's rebuild takes the C++ kDefaultFirstBucketBytes, 1 MiB, whatever
     * distributed.py's _DEFAULT_FIRST_BUCKET_BYTES (--first-bucket-mb) was */
    DS_CHECK_GOTO(ds_ddp_buckets(m, dtype_bytes, never_rebuilt ? first_cap : DS_UNITS_MIB, cap,
                                 never_rebuilt ? DS_BUCKETS_REGISTRATION : DS_BUCKETS_READY,
                                 &out->rebuilt), st, fail);
    return DS_OK;
  }
  out->rebuild_iter = static_graph ? 2 : 1;
  out->rule = static_graph ? "static_graph: one bucket in iterations 0 and 1, rebuilt in "
                             "gradient-ready order before iteration 2"
                           : "one bucket in iteration 0, rebuilt in gradient-ready order "
                             "before iteration 1";
  DS_CHECK_GOTO(ds_ddp_buckets(m, dtype_bytes, first_cap, cap, DS_BUCKETS_ONE,
                               &out->initial), st, fail);
  DS_CHECK_GOTO(ds_ddp_buckets(m, dtype_bytes, first_cap, cap, DS_BUCKETS_READY,
                               &out->rebuilt), st, fail);
  return DS_OK;
fail:
  ds_ddp_plan_release(out);
  return st;
}

void ds_ddp_plan_release(struct ds_ddp_plan *plan) {
  if (!plan) return;
  ds_ddp_buckets_release(&plan->initial);
  ds_ddp_buckets_release(&plan->rebuilt);
}

const struct ds_buckets *ds_ddp_plan_layout(const struct ds_ddp_plan *plan, int32_t iter) {
  return iter < plan->rebuild_iter ? &plan->initial : &plan->rebuilt;
}

void ds_ddp_buckets_release(struct ds_buckets *b) {
  if (!b) return;
  free(b->order);
  free(b->b);
  memset(b, 0, sizeof *b);
}

/* An all-reduce of `bytes` on the rank's comm stream, after deps. */
static ds_status emit_allreduce(const struct ds_ddp_options *opt, double bytes,
                                const char *name, int32_t rank, int32_t bucket, int64_t coll,
                                const int64_t *deps, size_t n_deps,
                                struct ds_schedule_builder *bd, int64_t *out_id) {
  char algo[DS_AR_ALGO_NAME_MAX];
  double dur_ns = 0;
  enum ds_ar_algo a = opt->algo;
  if (opt->nccl) {
    enum ds_proto p = opt->proto_fixed;
    if (opt->algo_auto && p < DS_PROTO_COUNT) a = ds_nccl_choose_algo_with(opt->nccl, bytes, p);
    else if (opt->algo_auto) ds_nccl_choose_algo(opt->nccl, bytes, &a, &p);
    else if (p >= DS_PROTO_COUNT) p = ds_nccl_choose_proto(opt->nccl, a, bytes);
    struct ds_coll_proto cp;
    ds_nccl_algo_proto(opt->nccl, a, p, bytes, &cp);
    ds_allreduce_algo_name(a, p, algo);
    if (a != DS_AR_RING)
      dur_ns = ds_nccl_sim_algo_ns(opt->nccl, a, p, bytes);
    else if (opt->ring)
      dur_ns = ds_ring_allreduce_proto_ns(opt->ring, &cp, bytes);
  } else {
    ds_allreduce_algo_name(a, DS_PROTO_COUNT, algo);
    if (opt->ring && a == DS_AR_RING) dur_ns = ds_ring_allreduce_ns(opt->ring, bytes);
  }
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE,
                     .name = name, .layer = -1, .bucket = bucket,
                     .coll = coll, .root = -1, .algo = algo,
                     .bytes = bytes, .dur_us = dur_ns / 1000};
  DS_CHECK(ds_schedule_emit(bd, &op, deps, n_deps));
  *out_id = op.id;
  return DS_OK;
}

/* What a rank's streams last ran: the ids later ops wait for (-1: none). */
struct rank_tails {
  int64_t compute;  /* last op on the compute stream */
  int64_t comm;     /* last all-reduce */
  int64_t callback; /* last hook callback (copy stream) */
  int64_t sync;     /* the next compute op waits for this (PowerSGD's synchronize) */
  int64_t launch;   /* the next compute op waits for this host launch */
  int64_t host;     /* last op on the host stream (the step's launch follows) */
};

/* Appends id to deps when it is an op (>= 0). */
static void add_dep(int64_t *deps, size_t *n, int64_t id) {
  if (id >= 0) deps[(*n)++] = id;
}

/* Host work of dur_ns on the rank's host stream (the autograd engine's
 * thread in backward; docs/strategies.md, "The host costs"), after the host
 * stream's last op; the next compute op waits for it (t->launch). Nothing
 * when dur_ns is 0. *id gets the op's id, or -1. */
static ds_status emit_host(int32_t rank, enum ds_op_kind kind, const char *name,
                           int32_t layer, int32_t bucket, double dur_ns, struct rank_tails *t,
                           struct ds_schedule_builder *bd, int64_t *id) {
  *id = -1;
  if (dur_ns <= 0) return DS_OK;
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = kind, .name = name,
                     .layer = layer, .bucket = bucket, .coll = -1, .root = -1,
                     .dur_us = dur_ns / 1000};
  DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
  t->launch = op.id;
  t->host = op.id;
  *id = op.id;
  return DS_OK;
}

/* The rest of a run of n launches after its first (n - 1 times each_ns),
 * emitted after the kernels they launch: those start once the first is
 * launched and the host launches the others while the GPU runs them (a
 * kernel of the run may so start before its own launch ends; the next
 * op the host launches still waits for all of them). Nothing waits for
 * this op but the host stream's order. */
static ds_status emit_host_rest(int32_t rank, const char *name, int32_t layer, int32_t bucket,
                                int32_t n, double each_ns, struct rank_tails *t,
                                struct ds_schedule_builder *bd) {
  int64_t launch = t->launch, id;
  DS_CHECK(emit_host(rank, DS_OP_BWD, name, layer, bucket, (n - 1) * each_ns, t, bd, &id));
  t->launch = launch;
  return DS_OK;
}

/* One compute-stream op after the stream's last op and any pending sync. */
static ds_status emit_compute(struct ds_op *op, struct rank_tails *t,
                              struct ds_schedule_builder *bd) {
  int64_t deps[3];
  size_t n = 0;
  add_dep(deps, &n, t->compute);
  add_dep(deps, &n, t->sync);
  add_dep(deps, &n, t->launch);
  DS_CHECK(ds_schedule_emit(bd, op, deps, n));
  t->compute = op->id;
  t->sync = -1;
  t->launch = -1;
  return DS_OK;
}

/* PyTorch 1.4's mark_variable_ready, once bucket b's last gradient is
 * copied in: replica.contents.div_(world size), one kernel over the whole
 * bucket (reads and writes its bytes) on the compute stream, launched from
 * the autograd thread (host_grad_copy: the launch of one elementwise op, as
 * for the copies); the all-reduce call comes after it, and ProcessGroupNCCL
 * makes the NCCL stream wait for the compute stream, so for the kernel. */
static ds_status emit_bucket_div(const struct ds_compute *c, const struct ds_buckets *bk,
                                 int32_t b, int32_t rank, struct rank_tails *t,
                                 struct ds_schedule_builder *bd) {
  char name[32];
  snprintf(name, sizeof name, "bucket%d.div", b);
  int64_t host;
  DS_CHECK(emit_host(rank, DS_OP_BWD, name, -1, b, c->params.host_grad_copy_ns, t, bd, &host));
  double bytes = 2 * bk->b[b].bytes;
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                     .name = name, .layer = -1, .bucket = b, .coll = -1, .root = -1,
                     .bytes = bytes, .dur_us = ds_compute_kernel_ns(c, 0, bytes) / 1000};
  return emit_compute(&op, t, bd);
}

/* cuDNN's layout transposes of layer l's convolution (compute.h), an op
 * on the compute stream after the layer's kernel when there are any. */
static ds_status emit_transposes(const struct ds_model *m, const struct ds_compute *c,
                                 int32_t rank, enum ds_op_kind kind, int32_t l, int64_t batch,
                                 struct rank_tails *t, struct ds_schedule_builder *bd) {
  int bwd = kind == DS_OP_BWD;
  double bytes, ns = ds_compute_conv_transpose(c, m, l, batch, bwd, &bytes);
  if (ns <= 0) return DS_OK;
  char name[DS_OP_NAME_CAP];
  snprintf(name, sizeof name, "%s.transpose", m->layers[l].name);
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = kind, .name = name,
                     .layer = l, .bucket = -1, .coll = -1, .root = -1,
                     .bytes = bytes,
                     .dur_us = ns / 1000};
  return emit_compute(&op, t, bd);
}

/* A BatchNorm's num_batches_tracked.add_(1) (norm.h), an op on the
 * compute stream before the layer's kernel, as _BatchNorm.forward runs it,
 * when the layer has one. Its launch is the layer's host op (the add_ is
 * one of its host_dispatches). */
static ds_status emit_bn_counter(const struct ds_model *m, const struct ds_compute *c,
                                 int32_t rank, int32_t l, struct rank_tails *t,
                                 struct ds_schedule_builder *bd) {
  double bytes, ns = ds_batch_norm_counter_ns(c, &m->layers[l], &bytes);
  if (ns <= 0) return DS_OK;
  char name[DS_OP_NAME_CAP];
  snprintf(name, sizeof name, "%s.num_batches_tracked", m->layers[l].name);
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                     .name = name, .layer = l, .bucket = -1, .coll = -1, .root = -1,
                     .bytes = bytes, .dur_us = ns / 1000};
  return emit_compute(&op, t, bd);
}

/* Bucket b's communication (the hook's plan, or its all-reduce alone),
 * each op after the one before; the first after the rank's compute tail. */
static ds_status emit_bucket(const struct ds_model *m, const struct ds_compute *c,
                             const struct ds_ddp_options *opt, const struct ds_buckets *bk,
                             int32_t b, int32_t rank, int64_t coll_base, struct rank_tails *t,
                             struct ds_schedule_builder *bd, int64_t *last) {
  struct ds_hook_plan plan;
  ds_comm_hook_plan(&opt->hook, m, c, &bk->order[bk->b[b].first], bk->b[b].count,
                    opt->iter == 0, &plan);
  int32_t per = ds_comm_hook_colls_per_bucket(&opt->hook), j = 0;
  if (opt->rules == DS_DDP_RULES_TORCH_1_4) DS_CHECK(emit_bucket_div(c, bk, b, rank, t, bd));
  int64_t prev = t->compute;
  /* The reducer calls the process group once per all-reduce of the bucket
   * (ProcessGroupNCCL: work and events, the stream wait, the NCCL enqueue):
   * host_collective each, before the bucket's first op; PowerSGD's of an
   * empty buffer too (comm_hook.h pg_calls). */
  int32_t calls = plan.pg_calls;
  char call_name[48];
  snprintf(call_name, sizeof call_name, "bucket%d.call", b);
  int64_t call;
  DS_CHECK(emit_host(rank, DS_OP_BWD, call_name, -1, b, calls * c->params.host_collective_ns,
                     t, bd, &call));
  t->launch = -1;
  for (int32_t k = 0; k < plan.n; k++) {
    const struct ds_hook_op *h = &plan.op[k];
    char name[64];
    if (h->what[0]) snprintf(name, sizeof name, "bucket%d.%s", b, h->what);
    else snprintf(name, sizeof name, "bucket%d", b);
    int64_t deps[3];
    size_t n = 0;
    if (h->where == DS_HOOK_ALLREDUCE) {
      add_dep(deps, &n, prev);
      add_dep(deps, &n, t->comm);
      add_dep(deps, &n, call);
      call = -1;
      DS_CHECK(emit_allreduce(opt, h->bytes, name, rank, b, (coll_base + b) * per + j++,
                              deps, n, bd, &t->comm));
      prev = t->comm;
      continue;
    }
    /* Compute kernels of the hook: backward-kind work with the bucket's
     * name (the schema has no hook kind). */
    struct ds_op op = {.rank = rank, .kind = DS_OP_BWD, .name = name, .layer = -1,
                       .bucket = b, .coll = -1, .root = -1, .bytes = h->bytes,
                       .flops = h->flops, .dur_us = h->dur_ns / 1000};
    if (h->where == DS_HOOK_IN_BACKWARD) {
      op.stream = DS_STREAM_COMPUTE;
      t->launch = call;
      DS_CHECK(emit_compute(&op, t, bd));
    } else {
      op.stream = DS_STREAM_COPY;
      add_dep(deps, &n, prev);
      add_dep(deps, &n, call);
      DS_CHECK(ds_schedule_emit(bd, &op, deps, n));
      t->callback = op.id;
    }
    call = -1;
    prev = op.id;
  }
  if (plan.blocks_backward) {
    /* PowerSGD's decompress ends with torch.cuda.synchronize(device)
     * (powerSGD_hook.py, decompress). ProcessGroupNCCL marks a
     * collective's future completed as soon as it is enqueued
     * (ProcessGroupNCCL.cpp, collective: work->future_->markCompleted), so
     * the hook's `then` callbacks run inline on the autograd thread that
     * called the hook, and the synchronize holds that thread until the
     * device is idle: a 0 us host op after every stream's tail. Nothing
     * later on the host (the next layer's launch, its hooks) starts
     * before; the next compute op also waits on the GPU side (t->sync). */
    char sync_name[48];
    snprintf(sync_name, sizeof sync_name, "bucket%d.psgd_sync", b);
    struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_BWD,
                       .name = sync_name, .layer = -1, .bucket = b, .coll = -1, .root = -1};
    int64_t deps[4];
    size_t n = 0;
    add_dep(deps, &n, t->compute);
    add_dep(deps, &n, t->comm);
    add_dep(deps, &n, t->callback);
    if (prev != t->callback && prev != t->compute && prev != t->comm) add_dep(deps, &n, prev);
    DS_CHECK(ds_schedule_emit(bd, &op, deps, n));
    t->host = op.id;
    t->sync = prev;
  }
  *last = prev;
  return DS_OK;
}

/* One of the reducer's per-parameter kernels on tensor p: it reads and
 * writes numel elements of the gradient's dtype (memory-bound, with its
 * overhead); *bytes grows by what it moves. */
static double reducer_copy_ns(const struct ds_model *m, const struct ds_compute *c, int32_t p,
                              double *bytes) {
  double b = 2.0 * (double)m->params[p].numel * c->precision.param_bytes;
  *bytes += b;
  return ds_compute_kernel_ns(c, 0, b);
}

/* AccumulateGrad's adds into layer l's allocated .grad tensors
 * (ds_compute_accum_grad_ns), one op on the compute stream after the
 * layer's backward, before the reducer's hook sees the gradients; launched
 * by the node whose host time host_node already charges. */
static ds_status emit_accum_grad(const struct ds_model *m, const struct ds_compute *c,
                                 int32_t l, int32_t rank, struct rank_tails *t,
                                 struct ds_schedule_builder *bd) {
  double bytes, ns = ds_compute_accum_grad_ns(c, m, l, &bytes);
  if (ns <= 0) return DS_OK;
  char name[DS_OP_NAME_CAP];
  snprintf(name, sizeof name, "%s.accum_grad", m->layers[l].name);
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                     .name = name, .layer = l, .bucket = -1, .coll = -1, .root = -1,
                     .bytes = bytes, .dur_us = ns / 1000};
  return emit_compute(&op, t, bd);
}

/* The reducer's work as its autograd hook fires for layer l's gradients
 * (reducer.cpp, mark_variable_ready_dense): copy_grad_to_bucket writes
 * each gradient into its bucket's flat buffer, dividing by the world size
 * in the same kernel (at::mul_out; a plain copy_ under a comm hook, which
 * divides itself, and under PyTorch 1.4, which divides the whole bucket
 * after: emit_bucket_div); with gradient_as_bucket_view the gradient
 * already is the bucket view and is divided in place (div_), unless a comm
 * hook runs: then nothing. Same bytes either way: read and write every
 * element. */
static ds_status emit_to_bucket(const struct ds_model *m, const struct ds_compute *c,
                                const struct ds_ddp_options *opt, int32_t l, int32_t rank,
                                struct rank_tails *t, struct ds_schedule_builder *bd) {
  const struct ds_layer *ly = &m->layers[l];
  int hook = opt->hook.kind != DS_HOOK_NONE;
  if (ly->param_count == 0) return DS_OK;
  /* The hooks on the autograd thread (mark_variable_ready, the kernel's
   * launch): host_grad_hook per gradient; the copies start after the
   * first (emit_host_rest). */
  int64_t host;
  if (opt->grad_as_bucket_view && hook) {
    DS_CHECK(emit_host(rank, DS_OP_BWD, "hook", l, -1,
                       ly->param_count * c->params.host_grad_hook_ns, t, bd, &host));
    t->launch = -1;
    return DS_OK;
  }
  DS_CHECK(emit_host(rank, DS_OP_BWD, "hook", l, -1, c->params.host_grad_hook_ns, t, bd,
                     &host));
  double ns = 0, bytes = 0;
  for (int32_t k = 0; k < ly->param_count; k++)
    ns += reducer_copy_ns(m, c, ly->param_first + k, &bytes);
  char name[DS_OP_NAME_CAP];
  snprintf(name, sizeof name, "%s.%s", ly->name,
           opt->grad_as_bucket_view ? "grad_div" : "to_bucket");
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                     .name = name, .layer = l, .bucket = -1, .coll = -1, .root = -1,
                     .bytes = bytes, .dur_us = ns / 1000};
  DS_CHECK(emit_compute(&op, t, bd));
  return emit_host_rest(rank, "hook", l, -1, ly->param_count, c->params.host_grad_hook_ns, t,
                        bd);
}

/* finalize_backward (reducer.cpp), after the last backward op: bucket by
 * bucket, the compute stream waits for the bucket's communication, then
 * copy_bucket_to_grad copies each averaged gradient back to its .grad;
 * with gradient_as_bucket_view there is nothing to copy unless a comm hook
 * returned a new tensor (reducer.cpp, finalize_bucket_dense: `if
 * (!bucket_view_in.is_alias_of(bucket_view_out)) bucket_view_in.copy_(
 * bucket_view_out)`). None of the hooks modelled does: fp16/bf16's
 * decompress copies into bucket.buffer() and returns it (default_hooks.py,
 * "Decompress in place", pytorch#45968), PowerSGD's returns input_tensor,
 * the bucket's buffer (powerSGD_hook.py, decompress: `return
 * [input_tensor]`), and its warm-up's _allreduce_fut the all-reduced
 * buffer itself (div_ in place). So with gradient_as_bucket_view there is
 * never a copy back; the step still waits for every stream's tail. */
static ds_status emit_from_bucket(const struct ds_model *m, const struct ds_compute *c,
                                  const struct ds_ddp_options *opt, const struct ds_buckets *bk,
                                  int32_t b, int64_t comm_done, int32_t rank,
                                  struct rank_tails *t, struct ds_schedule_builder *bd) {
  if (opt->grad_as_bucket_view) return DS_OK;
  double ns = 0, bytes = 0;
  for (int32_t k = 0; k < bk->b[b].count; k++)
    ns += reducer_copy_ns(m, c, bk->order[bk->b[b].first + k], &bytes);
  char name[32];
  snprintf(name, sizeof name, "bucket%d.to_grad", b);
  /* copy_bucket_to_grad's launches on the autograd thread (finalize_
   * backward runs there, as the engine's final callback) */
  int64_t host;
  DS_CHECK(emit_host(rank, DS_OP_BWD, name, -1, b, c->params.host_grad_copy_ns, t, bd, &host));
  t->launch = -1;
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                     .name = name, .layer = -1, .bucket = b, .coll = -1, .root = -1,
                     .bytes = bytes, .dur_us = ns / 1000};
  int64_t deps[4];
  size_t n = 0;
  add_dep(deps, &n, t->compute);
  add_dep(deps, &n, t->sync);
  add_dep(deps, &n, comm_done);
  add_dep(deps, &n, host);
  DS_CHECK(ds_schedule_emit(bd, &op, deps, n));
  t->compute = op.id;
  t->sync = -1;
  return emit_host_rest(rank, name, -1, b, bk->b[b].count, c->params.host_grad_copy_ns, t, bd);
}

int32_t ds_ddp_buffer_buckets(const struct ds_model *m, int32_t *group) {
  /* Each dtype's open bucket and its bytes so far: at most one per buffer. */
  struct open_bucket {
    const char *dtype;
    int32_t id;
    double bytes;
  } *open = malloc(((size_t)m->n_buffers + 1) * sizeof *open);
  if (!open) return -1;
  int32_t n = 0, n_dtypes = 0;
  for (int32_t i = 0; i < m->n_buffers; i++) {
    const struct ds_buffer *buf = &m->buffers[i];
    struct open_bucket *o = NULL;
    for (int32_t d = 0; d < n_dtypes && !o; d++)
      if (strcmp(open[d].dtype, buf->dtype) == 0) o = &open[d];
    if (!o) {
      o = &open[n_dtypes++];
      *o = (struct open_bucket){buf->dtype, -1, 0};
    }
    if (o->id < 0 || o->bytes >= DS_DDP_BROADCAST_BUCKET_BYTES) *o = (struct open_bucket){
        buf->dtype, n++, 0};
    o->bytes += buf->bytes;
    if (group) group[i] = o->id;
  }
  free(open);
  return n;
}

/* One bucket of buffers as _broadcast_coalesced sends it: its bytes, and
 * the copies back into its buffers (one kernel each). */
struct buffer_bucket {
  double bytes;
  double copy_ns;
  int32_t count;
};

/* The model's buffer buckets (ds_ddp_buffer_buckets) with their totals,
 * once per build: every rank sends the same ones. *out is NULL when the
 * model has none; the caller frees it. */
static ds_status buffer_buckets(const struct ds_model *m, const struct ds_compute *c,
                                struct buffer_bucket **out, int32_t *n_out) {
  *out = NULL;
  *n_out = 0;
  if (m->n_buffers == 0) return DS_OK;
  int32_t *group = malloc((size_t)m->n_buffers * sizeof *group);
  if (!group) return DS_ENOMEM;
  int32_t n = ds_ddp_buffer_buckets(m, group);
  struct buffer_bucket *bb = n < 0 ? NULL : calloc((size_t)n, sizeof *bb);
  if (!bb) {
    free(group);
    return DS_ENOMEM;
  }
  for (int32_t i = 0; i < m->n_buffers; i++) {
    struct buffer_bucket *k = &bb[group[i]];
    k->bytes += m->buffers[i].bytes;
    k->copy_ns += ds_compute_kernel_ns(c, 0, 2 * m->buffers[i].bytes);
    k->count++;
  }
  free(group);
  *out = bb;
  *n_out = n;
  return DS_OK;
}

/* _sync_buffers before the forward (broadcast_buffers=True):
 * broadcast_coalesced (c10d comm.cpp) keeps at most two broadcasts in
 * flight. Issuing bucket k (BroadcastWork's constructor), on the Python
 * thread: flatten_dense_tensors's cat (one launch, host_grad_copy) and the
 * process group's broadcast call (host_collective); the cat reads and
 * writes the bucket's bytes; the broadcast from rank 0 waits for it.
 * Before bucket k is issued, once two are in flight, the oldest (k - 2) is
 * finished (BroadcastWork::finish): it copies each buffer back from the
 * flat tensor on every rank (one kernel per buffer), after its broadcast;
 * the last two are finished after the loop, oldest first. So two buckets
 * (BatchNorm's float32 and int64 ones) run flatten0, broadcast0, flatten1,
 * broadcast1, copies0, copies1: broadcast1 overlaps copies0's host work.
 * The host's per-buffer work, host_buffer each (sim/net/topo_compute.c: measured as
 * a whole), is charged at the copies: the copy_'s launch, unflatten's
 * narrow and view, and also what runs before the cat (the flatten's view,
 * _sync_buffers' walk over the modules' buffers). All of it is serial on
 * the Python thread before the first forward launch, which waits for the
 * sum wherever it sits. */

/* Issues buffer bucket k: the flatten's launch and the broadcast's call on
 * the host, the flatten's kernel, the broadcast; *bcast gets its id. */
static ds_status issue_buffer_bucket(const struct ds_compute *c,
                                     const struct ds_ddp_options *opt,
                                     const struct ds_buckets *bk,
                                     const struct buffer_bucket *bb, int32_t k, int32_t rank,
                                     int64_t coll_base, int64_t *host_dep, struct rank_tails *t,
                                     struct ds_schedule_builder *bd, int64_t *bcast) {
  int32_t per = ds_comm_hook_colls_per_bucket(&opt->hook);
  double bytes = bb[k].bytes;
  char name[48];
  /* a host cost of 0 still emits the op (0 us): the flatten's kernel
   * waits for it either way */
  snprintf(name, sizeof name, "buffers%d.flatten", k);
  /* the host op: the cat's launch and the broadcast's call */
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                     .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                     .dur_us = (c->params.host_grad_copy_ns + c->params.host_collective_ns) /
                               1000};
  DS_CHECK(ds_schedule_emit(bd, &op, host_dep, *host_dep >= 0 ? 1 : 0));
  *host_dep = -1;
  t->launch = t->host = op.id;
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                      .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                      .bytes = 2 * bytes, .dur_us = ds_compute_kernel_ns(c, 0, 2 * bytes) / 1000};
  DS_CHECK(emit_compute(&op, t, bd));
  snprintf(name, sizeof name, "buffers%d", k);
  /* under NCCL's model (the all-reduces' --algo auto or a --proto), NCCL's
   * ring broadcast: the protocol NCCL's tuning picks for a broadcast of
   * these bytes (or the fixed one), its channels, latencies and launch
   * (exec_colls.c, ds_nccl_chain_proto); else the plain chain */
  char algo[DS_RING_ALGO_MAX] = "";
  if (opt->nccl)
    ds_ring_algo_name(opt->proto_fixed < DS_PROTO_COUNT
                          ? opt->proto_fixed
                          : ds_nccl_choose_coll_proto(opt->nccl, DS_COLL_BROADCAST, bytes),
                      algo);
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMM, .kind = DS_OP_BROADCAST,
                      .name = name, .layer = -1, .bucket = -1,
                      .coll = (coll_base + bk->n + k) * per, .root = 0, .algo = algo,
                      .bytes = bytes};
  int64_t deps[2];
  size_t nd = 0;
  add_dep(deps, &nd, t->compute);
  add_dep(deps, &nd, t->comm);
  DS_CHECK(ds_schedule_emit(bd, &op, deps, nd));
  *bcast = t->comm = op.id;
  return DS_OK;
}

/* Finishes buffer bucket k (BroadcastWork::finish) once its broadcast
 * `bcast` is issued: the first buffer's host work, its copy back's kernel
 * (all the bucket's copies as one), then the other buffers' host work while
 * the GPU runs them (emit_host_rest). */
static ds_status finish_buffer_bucket(const struct ds_compute *c,
                                      const struct buffer_bucket *bb, int32_t k, int32_t rank,
                                      int64_t bcast, struct rank_tails *t,
                                      struct ds_schedule_builder *bd) {
  char name[48];
  snprintf(name, sizeof name, "buffers%d.copy", k);
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                     .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                     .dur_us = c->params.host_buffer_ns / 1000};
  DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
  int64_t host = t->host = op.id;
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                      .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                      .bytes = 2 * bb[k].bytes, .dur_us = bb[k].copy_ns / 1000};
  int64_t deps[3];
  size_t nd = 0;
  add_dep(deps, &nd, t->compute);
  add_dep(deps, &nd, bcast);
  add_dep(deps, &nd, host);
  DS_CHECK(ds_schedule_emit(bd, &op, deps, nd));
  t->compute = op.id;
  t->launch = -1;
  if (bb[k].count > 1) {
    op = (struct ds_op){.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                        .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                        .dur_us = (bb[k].count - 1) * c->params.host_buffer_ns / 1000};
    DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
    t->host = op.id;
  }
  return DS_OK;
}

/* comm.cpp's max_in_flight */
#define BUFFER_BROADCASTS_IN_FLIGHT 2

static ds_status emit_buffers(const struct ds_compute *c, const struct ds_ddp_options *opt,
                              const struct ds_buckets *bk, const struct buffer_bucket *bb,
                              int32_t n, int32_t rank, int64_t coll_base, int64_t *host_dep,
                              struct rank_tails *t, struct ds_schedule_builder *bd) {
  /* the broadcasts in flight, by bucket index modulo the cap */
  int64_t bcast[BUFFER_BROADCASTS_IN_FLIGHT];
  for (int32_t k = 0; k < n; k++) {
    int32_t slot = k % BUFFER_BROADCASTS_IN_FLIGHT;
    if (k >= BUFFER_BROADCASTS_IN_FLIGHT)
      DS_CHECK(finish_buffer_bucket(c, bb, k - BUFFER_BROADCASTS_IN_FLIGHT, rank, bcast[slot],
                                    t, bd));
    DS_CHECK(issue_buffer_bucket(c, opt, bk, bb, k, rank, coll_base, host_dep, t, bd,
                                 &bcast[slot]));
  }
  for (int32_t k = n > BUFFER_BROADCASTS_IN_FLIGHT ? n - BUFFER_BROADCASTS_IN_FLIGHT : 0;
       k < n; k++)
    DS_CHECK(finish_buffer_bucket(c, bb, k, rank, bcast[k % BUFFER_BROADCASTS_IN_FLIGHT], t,
                                  bd));
  return DS_OK;
}

int64_t ds_ddp_colls_per_iteration(const struct ds_ddp_options *opt, int32_t n_buckets,
                                   int32_t n_buffer_buckets) {
  int64_t per_step = n_buckets + (opt->broadcast_buffers ? n_buffer_buckets : 0) +
                     (opt->local_used_map ? 1 : 0);
  return per_step * (opt->grad_accum > 1 ? opt->grad_accum : 1);
}

/* find_unused_parameters (and static_graph's first iteration): when the
 * last bucket is marked ready the reducer sends its map of the parameters
 * this rank used (reducer.cpp all_reduce_local_used_map: a copy_ into a
 * pinned tensor and a non_blocking copy_ to the GPU's int32 map, an int
 * per parameter, then the process group's allreduce, after the buckets'
 * on its stream), and finalize_backward's local_used_work_->wait() makes
 * the compute stream wait for it, so the step does (t->comm). Host: the
 * two copies' launches (host_grad_copy each) and the call
 * (host_collective); the device copy at the memory roofline.
 * A locally unused parameter never delays its bucket: the reducer marks
 * every one ready at backward's first autograd hook (reducer.cpp
 * autograd_hook: `if (!has_marked_unused_parameters_) { ... for (unused_index
 * : unused_parameters_) mark_variable_ready(unused_index); }`, the list
 * found by prepare_for_backward's search_unused_parameters). Model files
 * have no unused parameter, so each bucket launches when its last gradient
 * is ready, with or without the option, and waits for nothing of the map's
 * (test_ddp find_unused_launches_every_bucket_when_its_last_gradient_is_ready). */
static ds_status emit_local_used(const struct ds_model *m, const struct ds_compute *c,
                                 const struct ds_ddp_options *opt, int32_t rank, int64_t coll,
                                 struct rank_tails *t, struct ds_schedule_builder *bd) {
  double bytes = 4.0 * (double)m->n_params;
  int64_t host;
  DS_CHECK(emit_host(rank, DS_OP_BWD, "local_used", -1, -1,
                     2 * c->params.host_grad_copy_ns + c->params.host_collective_ns, t, bd,
                     &host));
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                     .name = "local_used.copy", .layer = -1, .bucket = -1, .coll = -1,
                     .root = -1, .bytes = bytes,
                     .dur_us = ds_compute_kernel_ns(c, 0, bytes) / 1000};
  DS_CHECK(emit_compute(&op, t, bd));
  int64_t deps[2];
  size_t n = 0;
  add_dep(deps, &n, t->compute);
  add_dep(deps, &n, t->comm);
  return emit_allreduce(opt, bytes, "local_used", rank, -1, coll, deps, n, bd, &t->comm);
}

/* Appends the rank's last GPU work (compute tail, all-reduces, callbacks,
 * a pending sync) to deps: what a host-device sync waits for. */
static void add_gpu_tails(int64_t *deps, size_t *n, const struct rank_tails *t) {
  add_dep(deps, n, t->compute);
  add_dep(deps, n, t->comm);
  add_dep(deps, n, t->callback);
  if (t->sync != t->callback) add_dep(deps, n, t->sync);
}

static ds_status build_rank(const struct ds_model *m, const struct ds_compute *c,
                            const struct ds_ddp_options *opt,
                            const struct ds_buckets *bk, const struct buffer_bucket *bb,
                            int32_t n_bb, int32_t rank, int64_t coll_base, int64_t prev_step,
                            struct ds_schedule_builder *bd) {
  struct rank_tails t = {-1, -1, -1, -1, -1, -1};
  /* what the first forward launch waits for: the previous iteration's
   * step, then (--grad-accum) the previous micro-step's GPU work */
  int64_t host_deps[4] = {prev_step};
  size_t n_host_deps = prev_step >= 0 ? 1 : 0;
  /* each bucket's last communication op, for finalize_backward's copies */
  int64_t *comm_done = malloc(((size_t)bk->n + 1) * sizeof *comm_done);
  if (!comm_done) return DS_ENOMEM;
  ds_status st = DS_OK;
  int32_t next_bucket = 0, local_used_sent = 0;
  int32_t accum = opt->grad_accum > 1 ? opt->grad_accum : 1;
  int32_t steps = opt->accum_steps > 1 ? opt->accum_steps : accum;
  struct ds_op op;
  for (int32_t step = 0; step < steps; step++) {
    /* Under no_sync, every micro-step but the last accumulates locally;
     * outside it (--grad-accum) every micro-step synchronises. */
    int sync = step == steps - 1 || accum > 1;
    /* --grad-accum: each micro-step's collectives get ids of their own */
    int64_t cb =
        coll_base + (accum > 1 ? step * (int64_t)(bk->n + n_bb + !!opt->local_used_map) : 0);
    /* .grad is allocated when backward runs (AccumulateGrad adds into it)
     * where the rules keep it (1.4, 1.9), and in every micro-step after the
     * first of --no-sync's or --grad-accum's (the first one's backward
     * creates it) */
    int accum_grad = c->grad_kept || step > 0;
    /* The buffers go before the first micro-step only under no_sync: a
     * forward under no_sync clears require_forward_param_sync, which the
     * next forward's _check_sync_bufs_pre_fwd reads (distributed.py);
     * outside it, before every forward. */
    if ((step == 0 || accum > 1) && opt->broadcast_buffers && n_bb > 0) {
      int64_t host_dep = n_host_deps ? host_deps[0] : -1;
      if (n_host_deps > 1) { /* the micro-step boundary: one op holds the wait */
        op = (struct ds_op){.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                            .name = "micro_step", .layer = -1, .bucket = -1, .coll = -1,
                            .root = -1};
        DS_CHECK_GOTO(ds_schedule_emit(bd, &op, host_deps, n_host_deps), st, out);
        host_dep = op.id;
      }
      DS_CHECK_GOTO(emit_buffers(c, opt, bk, bb, n_bb, rank, cb, &host_dep, &t, bd), st, out);
      n_host_deps = 0;
    }
    for (int32_t l = 0; l < m->n_layers; l++) {
      const struct ds_layer *ly = &m->layers[l];
      /* The process's Python thread launches the layer (its ops times
       * host_op, or host_launch per layer: sim/train/host.h, as single and
       * dp charge it; docs/strategies.md): the host runs ahead of the GPU,
       * so a launch shows only where kernels are shorter. */
      op = (struct ds_op){.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                          .name = "launch", .layer = l, .bucket = -1, .coll = -1,
                          .root = -1,
                          .dur_us = ds_host_fwd_ns(c, m, l, c->params.host_launch_ns) / 1000};
      DS_CHECK_GOTO(ds_schedule_emit(bd, &op, host_deps, n_host_deps), st, out);
      n_host_deps = 0;
      t.launch = t.host = op.id;
      DS_CHECK_GOTO(emit_bn_counter(m, c, rank, l, &t, bd), st, out);
      op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE,
                          .kind = DS_OP_FWD, .name = ly->name, .layer = l,
                          .bucket = -1, .coll = -1, .root = -1,
                          .flops = ly->fwd_flops * (double)opt->batch,
                          .dur_us = ds_compute_fwd_ns(c, ly, opt->batch) / 1000};
      DS_CHECK_GOTO(emit_compute(&op, &t, bd), st, out);
      DS_CHECK_GOTO(emit_transposes(m, c, rank, DS_OP_FWD, l, opt->batch, &t, bd), st, out);
      /* a host-device sync in the layer (host.h): the host waits for the
       * compute stream, the layer's kernels included */
      if (ds_host_syncs(m, l)) {
        op = (struct ds_op){.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                            .name = "sync", .layer = l, .bucket = -1, .coll = -1, .root = -1,
                            .dur_us = ds_host_sync_ns(c, m, l) / 1000};
        DS_CHECK_GOTO(ds_schedule_emit(bd, &op, &t.compute, 1), st, out);
        t.host = op.id;
      }
    }
    op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE,
                        .kind = DS_OP_LOSS, .name = "loss", .layer = -1,
                        .bucket = -1, .coll = -1, .root = -1};
    op.dur_us = ds_compute_loss_ns(c, m, (double)opt->batch, &op.bytes) / 1000;
    DS_CHECK_GOTO(emit_compute(&op, &t, bd), st, out);
    for (int32_t l = m->n_layers - 1; l >= 0; l--) {
      const struct ds_layer *ly = &m->layers[l];
      /* The autograd engine's thread runs the layer's backward nodes
       * (host_node each, or host_backward per layer: sim/train/host.h); the
       * kernel waits for them. */
      int64_t host;
      DS_CHECK_GOTO(emit_host(rank, DS_OP_BWD, "launch", l, -1,
                              ds_host_bwd_ns(c, m, l, c->params.host_backward_ns), &t, bd,
                              &host), st, out);
      op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE,
                          .kind = DS_OP_BWD, .name = ly->name, .layer = l,
                          .bucket = -1, .coll = -1, .root = -1,
                          .flops = ly->bwd_flops * (double)opt->batch,
                          .dur_us = ds_compute_bwd_ns(c, ly, opt->batch) / 1000};
      DS_CHECK_GOTO(emit_compute(&op, &t, bd), st, out);
      DS_CHECK_GOTO(emit_transposes(m, c, rank, DS_OP_BWD, l, opt->batch, &t, bd), st, out);
      if (accum_grad) DS_CHECK_GOTO(emit_accum_grad(m, c, l, rank, &t, bd), st, out);
      /* no_sync's accumulating micro-steps run no reducer hook */
      if (sync) DS_CHECK_GOTO(emit_to_bucket(m, c, opt, l, rank, &t, bd), st, out);
      /* Overlapped: a bucket goes once its last gradient is ready. */
      while (sync && !opt->no_overlap && next_bucket < bk->n &&
             bk->b[next_bucket].ready_layer >= l) {
        DS_CHECK_GOTO(emit_bucket(m, c, opt, bk, next_bucket, rank, cb, &t, bd,
                                  &comm_done[next_bucket]), st, out);
        next_bucket++;
      }
    }
    if (!sync) continue;
    /* --no-overlap: every bucket waits for the end of backward. */
    while (next_bucket < bk->n) {
      DS_CHECK_GOTO(emit_bucket(m, c, opt, bk, next_bucket, rank, cb, &t, bd,
                                &comm_done[next_bucket]), st, out);
      next_bucket++;
    }
    if (opt->local_used_map == 1 || (opt->local_used_map == 2 && !local_used_sent++))
      DS_CHECK_GOTO(emit_local_used(m, c, opt, rank,
                                    (cb + bk->n + n_bb) *
                                        ds_comm_hook_colls_per_bucket(&opt->hook),
                                    &t, bd), st, out);
    for (int32_t b = 0; b < bk->n; b++)
      DS_CHECK_GOTO(emit_from_bucket(m, c, opt, bk, b, comm_done[b], rank, &t, bd), st, out);
    next_bucket = 0;
    /* --grad-accum: the next micro-step's forward starts once this one's
     * GPU work has ended, as the next iteration's waits for the step (a
     * training loop that reads each micro-step's loss) */
    n_host_deps = 0;
    add_gpu_tails(host_deps, &n_host_deps, &t);
  }
  /* The step's host work, PyTorch 1.4's and 1.9's Python loop that
   * dispatches each of its kernels or the foreach step's Python
   * (ds_host_emit_step; under --amp fp16 after GradScaler's sync on the
   * GPU's tail, under either loop): before the step's op, so it stays the
   * rank's last step op, which the next iteration waits for. */
  int64_t step_host, gpu[5];
  size_t n_gpu = 0;
  add_gpu_tails(gpu, &n_gpu, &t);
  DS_CHECK_GOTO(ds_host_emit_step(bd, c, m, rank, gpu, n_gpu, &step_host), st, out);
  int64_t deps[5];
  size_t n = 0;
  add_gpu_tails(deps, &n, &t);
  /* optimizer.step() runs once backward() has returned: after the
   * autograd thread's last host op (under 1.4, the loop's first launch,
   * which follows it on the host stream); under --optimizer none there is
   * no step, and zero_grad's fills wait for the same (host.h) */
  add_dep(deps, &n, step_host >= 0 ? step_host : t.host);
  if (m->optimizer != DS_OPT_NONE) {
    op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE,
                        .kind = DS_OP_STEP, .name = "optimizer", .layer = -1,
                        .bucket = -1, .coll = -1, .root = -1,
                        .bytes = ds_compute_step_bytes(c, m),
                        .dur_us = ds_compute_step_ns(c, m) / 1000};
    DS_CHECK_GOTO(ds_schedule_emit(bd, &op, deps, n), st, out);
    deps[0] = op.id;
    n = 1;
  }
  /* 1.9's zero_grad(): a fill per gradient after the step (compute.h);
   * the last step op, which the next iteration waits for */
  double zbytes, zns = ds_compute_zero_grad_ns(c, m, &zbytes);
  if (zns > 0) {
    op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_STEP,
                        .name = "zero_grad", .layer = -1, .bucket = -1, .coll = -1,
                        .root = -1, .bytes = zbytes, .dur_us = zns / 1000};
    DS_CHECK_GOTO(ds_schedule_emit(bd, &op, deps, n), st, out);
  }
  /* no step op for the next iteration to wait for: the loop's own wait
   * for the GPU (host.h ds_host_emit_loop_sync), after its last work */
  if (m->optimizer == DS_OPT_NONE && !opt->free_loop) {
    n_gpu = 0;
    add_gpu_tails(gpu, &n_gpu, &t);
    if (zns > 0) gpu[n_gpu++] = op.id;
    st = ds_host_emit_loop_sync(bd, rank, gpu, n_gpu);
  }
out:
  free(comm_done);
  return st;
}

ds_status ds_ddp_build(const struct ds_model *m, const struct ds_compute *c,
                       const struct ds_ddp_options *opt,
                       const struct ds_buckets *bk, int64_t id_base,
                       int64_t coll_base, struct ds_schedule *out) {
  struct ds_schedule_builder bd = {out, id_base};
  /* Each rank's optimizer step of the previous iteration already in out
   * (none in a schedule of its own): the host launches the next forward
   * once it has ended, as single and dp's host does (--loop sync). */
  int64_t *prev_step = malloc(((size_t)opt->world_size + 1) * sizeof *prev_step);
  if (!prev_step) return DS_ENOMEM;
  /* --loop free: the host runs ahead, waiting only for its own last op of
   * the previous iteration (ddp.h free_loop) */
  ds_host_loop_anchors(out, opt->free_loop, opt->world_size, prev_step);
  struct buffer_bucket *bb = NULL;
  int32_t n_bb = 0;
  ds_status st = opt->broadcast_buffers ? buffer_buckets(m, c, &bb, &n_bb) : DS_OK;
  int32_t n_built = opt->template_only ? 1 : opt->world_size;
  for (int32_t r = 0; r < n_built && st == DS_OK; r++)
    st = build_rank(m, c, opt, bk, bb, n_bb, r, coll_base, prev_step[r], &bd);
  free(bb);
  free(prev_step);
  return st;
}
