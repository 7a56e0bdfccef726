/*
 * DDP strategy builder (see ddp.h for the PyTorch behaviour it follows).
 * Everything here is deterministic arithmetic on the model file: no event
 * is simulated, the schedule is the output. This file builds each rank's
 * iteration (forward, backward, the step) with the op emitters the others
 * share (ddp_impl.h); the bucket assignment is ddp_buckets.c, the
 * reducer's per-bucket ops ddp_reducer.c, the buffers' broadcasts
 * ddp_buffers.c.
 */
#include "sim/train/ddp.h"
#include "sim/train/ddp_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "sim/coll/nccl_model.h"
#include "sim/train/host.h"
#include "sim/train/norm.h"

/* An all-reduce of `bytes` on the rank's comm stream, after deps. */
ds_status ds__ddp_emit_allreduce(const struct ds_ddp_options *opt, double bytes,
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

/* Host work of dur_ns on the rank's host stream (the autograd engine's
 * thread in backward; docs/strategies.md, "The host costs"), after the host
 * stream's last op; the next compute op waits for it (t->launch). Nothing
 * when dur_ns is 0. *id gets the op's id, or -1. */
ds_status ds__ddp_emit_host(int32_t rank, enum ds_op_kind kind, const char *name,
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
ds_status ds__ddp_emit_host_rest(int32_t rank, enum ds_op_kind kind, const char *name,
                                 int32_t layer, int32_t bucket, int32_t n, double each_ns,
                                 struct rank_tails *t, struct ds_schedule_builder *bd) {
  int64_t launch = t->launch, id;
  DS_CHECK(ds__ddp_emit_host(rank, kind, name, layer, bucket, (n - 1) * each_ns, t, bd, &id));
  t->launch = launch;
  return DS_OK;
}

/* One compute-stream op after the stream's last op and any pending sync. */
ds_status ds__ddp_emit_compute(struct ds_op *op, struct rank_tails *t,
                               struct ds_schedule_builder *bd) {
  int64_t deps[3];
  size_t n = 0;
  ds__ddp_add_dep(deps, &n, t->compute);
  ds__ddp_add_dep(deps, &n, t->sync);
  ds__ddp_add_dep(deps, &n, t->launch);
  DS_CHECK(ds_schedule_emit(bd, op, deps, n));
  t->compute = op->id;
  t->sync = -1;
  t->launch = -1;
  return DS_OK;
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
  return ds__ddp_emit_compute(&op, t, bd);
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
  return ds__ddp_emit_compute(&op, t, bd);
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
  return ds__ddp_emit_compute(&op, t, bd);
}

int64_t ds_ddp_colls_per_iteration(const struct ds_ddp_options *opt, int32_t n_buckets,
                                   int32_t n_buffer_buckets) {
  int64_t per_step = n_buckets + (opt->broadcast_buffers ? n_buffer_buckets : 0) +
                     (opt->local_used_map ? 1 : 0);
  return per_step * (opt->grad_accum > 1 ? opt->grad_accum : 1) +
         (opt->rebuild_forward ? DS_DDP_REBUILD_COLLS : 0);
}

/* find_unused_parameters: when the last bucket is marked ready the
 * reducer sends its map of the parameters this rank used (reducer.cpp all_reduce_local_used_map: a copy_ into a
 * pinned tensor and a non_blocking copy_ to the GPU's int32 map, an int
 * per parameter, then the process group's allreduce, after the buckets'
 * on its stream), and finalize_backward's local_used_work_->wait() makes
 * the compute stream wait for it, so the step does (t->comm). static_graph's
 * first backward sends it before the copies into the buckets and their
 * all-reduces (delay_all_reduce; build_rank's `delayed`). Host: the
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
  DS_CHECK(ds__ddp_emit_host(rank, DS_OP_BWD, "local_used", -1, -1,
                             2 * c->params.host_grad_copy_ns + c->params.host_collective_ns, t, bd,
                             &host));
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                     .name = "local_used.copy", .layer = -1, .bucket = -1, .coll = -1,
                     .root = -1, .bytes = bytes,
                     .dur_us = ds_compute_kernel_ns(c, 0, bytes) / 1000};
  DS_CHECK(ds__ddp_emit_compute(&op, t, bd));
  int64_t deps[2];
  size_t n = 0;
  ds__ddp_add_dep(deps, &n, t->compute);
  ds__ddp_add_dep(deps, &n, t->comm);
  return ds__ddp_emit_allreduce(opt, bytes, "local_used", rank, -1, coll, deps, n, bd, &t->comm);
}

/* Appends the rank's last GPU work (compute tail, all-reduces, callbacks,
 * a pending sync) to deps: what a host-device sync waits for. */
static void add_gpu_tails(int64_t *deps, size_t *n, const struct rank_tails *t) {
  ds__ddp_add_dep(deps, n, t->compute);
  ds__ddp_add_dep(deps, n, t->comm);
  ds__ddp_add_dep(deps, n, t->callback);
  if (t->sync != t->callback) ds__ddp_add_dep(deps, n, t->sync);
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
    /* the local-used map's id: after the buckets' and the buffers' */
    int64_t local_used_coll = (cb + bk->n + n_bb) * ds_comm_hook_colls_per_bucket(&opt->hook);
    /* .grad is allocated when backward runs (AccumulateGrad adds into it)
     * where the rules keep it (1.4, 1.9), and in every micro-step after the
     * first of --no-sync's or --grad-accum's (the first one's backward
     * creates it) */
    int accum_grad = c->grad_kept || step > 0;
    /* static_graph's first synchronising backward (local_used_map 2): its
     * autograd hooks only count (reducer.cpp autograd_hook returns at
     * static_graph_first_iteration) and _DDPSink queues delay_all_reduce,
     * which after the whole backward all-reduces the local-used map, then
     * copies every gradient into its bucket, then all-reduces every bucket:
     * the map first, the copies and buckets after backward. */
    int delayed = sync && opt->local_used_map == 2 && !local_used_sent;
    /* gradient_as_bucket_view: .grad is the bucket's view when backward
     * reaches the hook where it survived since the last synchronising
     * backward pointed it there: kept by zero_grad(set_to_none=False) (1.9,
     * from iteration 1 on), or the previous --grad-accum micro-step's; under
     * current rules zero_grad(set_to_none=True) drops it after every step,
     * so the first micro-step's AccumulateGrad makes a new tensor and the
     * reducer copies it (reducer.cpp mark_variable_ready_dense) */
    int grad_is_view = (c->grad_kept && opt->iter > 0) || (accum > 1 && step > 0);
    /* DDP's per-iteration host work (host_ddp_iter: _pre_forward,
     * _post_forward's prepare_for_backward, the finalize_backward
     * callback; sim/net/topo_compute.c) in each synchronising micro-step,
     * before its buffers and first launch: under no_sync _pre_forward and
     * _post_forward skip the reducer (require_backward_grad_sync) and no
     * backward queues the callback */
    if (sync && c->params.host_ddp_iter_ns > 0) {
      op = (struct ds_op){.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                          .name = "ddp_iter", .layer = -1, .bucket = -1, .coll = -1,
                          .root = -1, .dur_us = c->params.host_ddp_iter_ns / 1000};
      DS_CHECK_GOTO(ds_schedule_emit(bd, &op, host_deps, n_host_deps), st, out);
      t.host = op.id;
      host_deps[0] = op.id;
      n_host_deps = 1;
    }
    /* The bucket rebuild (rebuild_forward), in the first micro-step's
     * forward only (the reducer rebuilds once; under no_sync too: its
     * _pre_forward calls _rebuild_buckets whenever grad is enabled), its
     * two broadcasts after every other collective of the iteration. */
    if (step == 0 && opt->rebuild_forward) {
      int64_t host_dep = n_host_deps ? host_deps[0] : -1;
      int64_t rebuild_coll =
          coll_base + (int64_t)(bk->n + n_bb + !!opt->local_used_map) * accum;
      DS_CHECK_GOTO(ds__ddp_emit_rebuild(m, c, opt, bk, rebuild_coll, &host_dep, &t, rank, bd),
                    st, out);
      n_host_deps = 0;
    }
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
      DS_CHECK_GOTO(ds__ddp_emit_buffers(c, opt, bk, bb, n_bb, rank, cb, &host_dep, &t, bd),
                    st, out);
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
      DS_CHECK_GOTO(ds__ddp_emit_compute(&op, &t, bd), st, out);
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
    DS_CHECK_GOTO(ds__ddp_emit_compute(&op, &t, bd), st, out);
    for (int32_t l = m->n_layers - 1; l >= 0; l--) {
      const struct ds_layer *ly = &m->layers[l];
      /* The autograd engine's thread runs the layer's backward nodes
       * (host_node each, or host_backward per layer: sim/train/host.h); the
       * kernel waits for them. */
      int64_t host;
      DS_CHECK_GOTO(ds__ddp_emit_host(rank, DS_OP_BWD, "launch", l, -1,
                                      ds_host_bwd_ns(c, m, l, c->params.host_backward_ns), &t, bd,
                                      &host), st, out);
      op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE,
                          .kind = DS_OP_BWD, .name = ly->name, .layer = l,
                          .bucket = -1, .coll = -1, .root = -1,
                          .flops = ly->bwd_flops * (double)opt->batch,
                          .dur_us = ds_compute_bwd_ns(c, ly, opt->batch) / 1000};
      DS_CHECK_GOTO(ds__ddp_emit_compute(&op, &t, bd), st, out);
      DS_CHECK_GOTO(emit_transposes(m, c, rank, DS_OP_BWD, l, opt->batch, &t, bd), st, out);
      if (accum_grad) DS_CHECK_GOTO(emit_accum_grad(m, c, l, rank, &t, bd), st, out);
      /* no_sync's accumulating micro-steps run no reducer hook */
      if (sync && !delayed)
        DS_CHECK_GOTO(ds__ddp_emit_to_bucket(m, c, opt, l, grad_is_view, rank, &t, bd), st,
                      out);
      /* Overlapped: a bucket goes once its last gradient is ready. */
      while (sync && !delayed && !opt->no_overlap && next_bucket < bk->n &&
             bk->b[next_bucket].ready_layer >= l) {
        DS_CHECK_GOTO(ds__ddp_emit_bucket(m, c, opt, bk, next_bucket, rank, cb, &t, bd,
                                          &comm_done[next_bucket]), st, out);
        next_bucket++;
      }
    }
    if (!sync) continue;
    if (delayed) { /* delay_all_reduce: the map, then the copies, layer by layer */
      local_used_sent = 1;
      DS_CHECK_GOTO(emit_local_used(m, c, opt, rank, local_used_coll, &t, bd), st, out);
      for (int32_t l = 0; l < m->n_layers; l++)
        DS_CHECK_GOTO(ds__ddp_emit_to_bucket(m, c, opt, l, grad_is_view, rank, &t, bd), st,
                      out);
    }
    /* --no-overlap: every bucket waits for the end of backward. */
    while (next_bucket < bk->n) {
      DS_CHECK_GOTO(ds__ddp_emit_bucket(m, c, opt, bk, next_bucket, rank, cb, &t, bd,
                                        &comm_done[next_bucket]), st, out);
      next_bucket++;
    }
    if (opt->local_used_map == 1 || (opt->local_used_map == 2 && !local_used_sent++))
      DS_CHECK_GOTO(emit_local_used(m, c, opt, rank, local_used_coll, &t, bd), st, out);
    for (int32_t b = 0; b < bk->n; b++)
      DS_CHECK_GOTO(ds__ddp_emit_from_bucket(m, c, opt, bk, b, comm_done[b], rank, &t, bd),
                    st, out);
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
  ds__ddp_add_dep(deps, &n, step_host >= 0 ? step_host : t.host);
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
  /* Only the ranks built here are anchored: a template holds rank 0 alone,
   * and asking for every rank scanned the whole schedule each iteration
   * for ranks it never has (--iters 1000 on 4gpu: 17 s, quadratic). */
  int32_t n_built = opt->template_only ? 1 : opt->world_size;
  ds_host_loop_anchors(out, opt->free_loop, n_built, prev_step);
  struct buffer_bucket *bb = NULL;
  int32_t n_bb = 0;
  ds_status st = opt->broadcast_buffers ? ds__ddp_buffer_buckets(m, c, &bb, &n_bb) : DS_OK;
  for (int32_t r = 0; r < n_built && st == DS_OK; r++)
    st = build_rank(m, c, opt, bk, bb, n_bb, r, coll_base, prev_step[r], &bd);
  free(bb);
  free(prev_step);
  return st;
}
