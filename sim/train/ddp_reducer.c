/*
 * DDP's reducer, per bucket (reducer.cpp): the gradients' copies into
 * their bucket, the bucket's communication (the comm hook's plan, or its
 * all-reduce alone, comm_hook.h), and finalize_backward's copies back.
 */
#include "sim/train/ddp.h"
#include "sim/train/ddp_impl.h"

#include <stdio.h>

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
  DS_CHECK(ds__ddp_emit_host(rank, DS_OP_BWD, name, -1, b, c->params.host_grad_copy_ns, t, bd,
                             &host));
  double bytes = 2 * bk->b[b].bytes;
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                     .name = name, .layer = -1, .bucket = b, .coll = -1, .root = -1,
                     .bytes = bytes, .dur_us = ds_compute_kernel_ns(c, 0, bytes) / 1000};
  return ds__ddp_emit_compute(&op, t, bd);
}

/* Bucket b's communication (the hook's plan, or its all-reduce alone),
 * each op after the one before; the first after the rank's compute tail. */
ds_status ds__ddp_emit_bucket(const struct ds_model *m, const struct ds_compute *c,
                              const struct ds_ddp_options *opt, const struct ds_buckets *bk,
                              int32_t b, int32_t rank, int64_t coll_base, struct rank_tails *t,
                              struct ds_schedule_builder *bd, int64_t *last) {
  struct ds_hook_plan plan;
  enum ds_hook_warmup warmup = opt->iter != 0                      ? DS_HOOK_NO_WARMUP
                               : opt->rules == DS_DDP_RULES_TORCH_1_9 ? DS_HOOK_WARMUP_DIV_AFTER
                                                                      : DS_HOOK_WARMUP_DIV_FIRST;
  ds_comm_hook_plan(&opt->hook, m, c, &bk->order[bk->b[b].first], bk->b[b].count, warmup,
                    &plan);
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
  DS_CHECK(ds__ddp_emit_host(rank, DS_OP_BWD, call_name, -1, b,
                             calls * c->params.host_collective_ns, t, bd, &call));
  t->launch = -1;
  for (int32_t k = 0; k < plan.n; k++) {
    const struct ds_hook_op *h = &plan.op[k];
    char name[64];
    if (h->what[0]) snprintf(name, sizeof name, "bucket%d.%s", b, h->what);
    else snprintf(name, sizeof name, "bucket%d", b);
    int64_t deps[3];
    size_t n = 0;
    if (h->where == DS_HOOK_ALLREDUCE) {
      ds__ddp_add_dep(deps, &n, prev);
      ds__ddp_add_dep(deps, &n, t->comm);
      ds__ddp_add_dep(deps, &n, call);
      call = -1;
      DS_CHECK(ds__ddp_emit_allreduce(opt, h->bytes, name, rank, b, (coll_base + b) * per + j++,
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
      DS_CHECK(ds__ddp_emit_compute(&op, t, bd));
    } else {
      op.stream = DS_STREAM_COPY;
      ds__ddp_add_dep(deps, &n, prev);
      ds__ddp_add_dep(deps, &n, call);
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
    ds__ddp_add_dep(deps, &n, t->compute);
    ds__ddp_add_dep(deps, &n, t->comm);
    ds__ddp_add_dep(deps, &n, t->callback);
    if (prev != t->callback && prev != t->compute && prev != t->comm)
      ds__ddp_add_dep(deps, &n, prev);
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
double ds__ddp_reducer_copy_ns(const struct ds_model *m, const struct ds_compute *c, int32_t p,
                               double *bytes) {
  double b = 2.0 * (double)m->params[p].numel * c->precision.param_bytes;
  *bytes += b;
  return ds_compute_kernel_ns(c, 0, b);
}

/* The reducer's work as its autograd hook fires for layer l's gradients
 * (reducer.cpp, mark_variable_ready_dense): copy_grad_to_bucket writes
 * each gradient into its bucket's flat buffer, dividing by the world size
 * in the same kernel (at::mul_out; a plain copy_ under a comm hook, which
 * divides itself, and under PyTorch 1.4, which divides the whole bucket
 * after: emit_bucket_div); with gradient_as_bucket_view, where the
 * gradient already is the bucket view (grad_is_view), it is divided in
 * place (div_), unless a comm hook runs: then nothing. Same bytes either
 * way: read and write every element. */
ds_status ds__ddp_emit_to_bucket(const struct ds_model *m, const struct ds_compute *c,
                                 const struct ds_ddp_options *opt, int32_t l, int grad_is_view,
                                 int32_t rank, struct rank_tails *t,
                                 struct ds_schedule_builder *bd) {
  const struct ds_layer *ly = &m->layers[l];
  int hook = opt->hook.kind != DS_HOOK_NONE;
  if (ly->param_count == 0) return DS_OK;
  /* mark_variable_ready_dense divides in place (nothing under a hook) only
   * where .grad already is the bucket's view (grad.is_alias_of(
   * bucket_view)); otherwise it copies (mul_out, copy_ under a hook) and
   * points .grad at the view (ddp.c says which). */
  int in_place = opt->grad_as_bucket_view && grad_is_view;
  /* The hooks on the autograd thread (mark_variable_ready, the kernel's
   * launch): host_grad_hook per gradient; the copies start after the
   * first (ds__ddp_emit_host_rest). */
  int64_t host;
  if (in_place && hook) {
    DS_CHECK(ds__ddp_emit_host(rank, DS_OP_BWD, "hook", l, -1,
                               ly->param_count * c->params.host_grad_hook_ns, t, bd, &host));
    t->launch = -1;
    return DS_OK;
  }
  DS_CHECK(ds__ddp_emit_host(rank, DS_OP_BWD, "hook", l, -1, c->params.host_grad_hook_ns, t, bd,
                             &host));
  double ns = 0, bytes = 0;
  for (int32_t k = 0; k < ly->param_count; k++)
    ns += ds__ddp_reducer_copy_ns(m, c, ly->param_first + k, &bytes);
  char name[DS_OP_NAME_CAP];
  snprintf(name, sizeof name, "%s.%s", ly->name,
           in_place ? "grad_div" : "to_bucket");
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                     .name = name, .layer = l, .bucket = -1, .coll = -1, .root = -1,
                     .bytes = bytes, .dur_us = ns / 1000};
  DS_CHECK(ds__ddp_emit_compute(&op, t, bd));
  return ds__ddp_emit_host_rest(rank, DS_OP_BWD, "hook", l, -1, ly->param_count,
                                c->params.host_grad_hook_ns, t, bd);
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
ds_status ds__ddp_emit_from_bucket(const struct ds_model *m, const struct ds_compute *c,
                                   const struct ds_ddp_options *opt, const struct ds_buckets *bk,
                                   int32_t b, int64_t comm_done, int32_t rank,
                                   struct rank_tails *t, struct ds_schedule_builder *bd) {
  if (opt->grad_as_bucket_view) return DS_OK;
  double ns = 0, bytes = 0;
  for (int32_t k = 0; k < bk->b[b].count; k++)
    ns += ds__ddp_reducer_copy_ns(m, c, bk->order[bk->b[b].first + k], &bytes);
  char name[32];
  snprintf(name, sizeof name, "bucket%d.to_grad", b);
  /* copy_bucket_to_grad's launches on the autograd thread (finalize_
   * backward runs there, as the engine's final callback) */
  int64_t host;
  DS_CHECK(ds__ddp_emit_host(rank, DS_OP_BWD, name, -1, b, c->params.host_grad_copy_ns, t, bd,
                             &host));
  t->launch = -1;
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                     .name = name, .layer = -1, .bucket = b, .coll = -1, .root = -1,
                     .bytes = bytes, .dur_us = ns / 1000};
  int64_t deps[4];
  size_t n = 0;
  ds__ddp_add_dep(deps, &n, t->compute);
  ds__ddp_add_dep(deps, &n, t->sync);
  ds__ddp_add_dep(deps, &n, comm_done);
  ds__ddp_add_dep(deps, &n, host);
  DS_CHECK(ds_schedule_emit(bd, &op, deps, n));
  t->compute = op.id;
  t->sync = -1;
  return ds__ddp_emit_host_rest(rank, DS_OP_BWD, name, -1, b, bk->b[b].count,
                                c->params.host_grad_copy_ns, t, bd);
}
