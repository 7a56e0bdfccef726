#include "sim/train/host.h"

double ds_host_fwd_ns(const struct ds_compute *c, const struct ds_model *m, int32_t l,
                      double per_layer_ns) {
  if (!m->host_counts) return per_layer_ns;
  const struct ds_layer *ly = &m->layers[l];
  /* per dispatched aten op where the file counts them: a top-level op costs
   * what it decomposes into; of those, the ones that launch no kernel
   * (host_views: views, aliases, empty tensors) cost nothing measurable
   * (sim/net/topo_compute.c); else per top-level op */
  double ns = m->host_dispatch_counts
                  ? (ly->host_dispatches - ly->host_syncs - ly->host_views) *
                        c->params.host_dispatch_ns
                  : ly->host_ops * c->params.host_op_ns;
  /* autocast's casts nest inside the ops that need them (aten::linear's
   * aten::to): a cost of their own, with no Python around them */
  if (c->amp != DS_AMP_NONE) ns += ly->host_amp_casts * c->params.host_cast_ns;
  return ns;
}

int ds_host_syncs(const struct ds_model *m, int32_t l) {
  return m->host_counts && m->layers[l].host_syncs > 0;
}

double ds_host_sync_ns(const struct ds_compute *c, const struct ds_model *m, int32_t l) {
  return ds_host_syncs(m, l) ? m->layers[l].host_syncs * c->params.host_dispatch_ns : 0;
}

double ds_host_bwd_ns(const struct ds_compute *c, const struct ds_model *m, int32_t l,
                      double per_layer_ns) {
  if (!m->host_counts) return per_layer_ns;
  const struct ds_layer *ly = &m->layers[l];
  /* a node that launches nothing (host_view_nodes: a view's backward,
   * clone's, add's without broadcasting) costs nothing measurable
   * (sim/net/topo_compute.c); under --amp those of host_view_nodes_amp,
   * where the file has it (an add of a half and an fp32 input casts a
   * gradient: model.h) */
  int amp = c->amp != DS_AMP_NONE;
  double free_nodes =
      amp && m->host_view_node_amp_counts ? ly->host_view_nodes_amp : ly->host_view_nodes;
  double nodes = ly->host_nodes - free_nodes + (amp ? ly->host_amp_nodes : 0);
  return nodes * c->params.host_node_ns;
}

/* A step kernel's dependencies: the GPU ops it follows (as many as fit,
 * one slot kept) and the host op that launched it; their count. */
static size_t kernel_deps(int64_t *deps, size_t cap, const int64_t *gpu_deps,
                          size_t n_gpu_deps, int64_t host) {
  size_t n = 0;
  for (size_t i = 0; i < n_gpu_deps && n + 1 < cap; i++) deps[n++] = gpu_deps[i];
  deps[n++] = host;
  return n;
}

/* GradScaler.step's unscale_ (compute.h ds_compute_unscale_ns): its
 * Python ops on the host stream, then its kernels on the compute stream
 * after them and after gpu_deps (the GPU's tail of backward); *kernels
 * gets the kernels' op. */
static ds_status emit_unscale(struct ds_schedule_builder *bd, const struct ds_compute *c,
                              const struct ds_model *m, int32_t rank, const int64_t *gpu_deps,
                              size_t n_gpu_deps, int64_t *kernels) {
  /* zero ops (the foreach step's unscale_, not modelled) still orders
   * the kernels after backward() has returned on the host */
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_STEP,
                     .name = "unscale_", .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                     .dur_us = ds_compute_unscale_host_ops(c) *
                               ds_compute_step_host_op_ns(c) / 1000};
  DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
  int64_t deps[8];
  size_t n = kernel_deps(deps, sizeof deps / sizeof *deps, gpu_deps, n_gpu_deps, op.id);
  op.stream = DS_STREAM_COMPUTE;
  op.dur_us = ds_compute_unscale_ns(c, m, &op.bytes) / 1000;
  DS_CHECK(ds_schedule_emit(bd, &op, deps, n));
  *kernels = op.id;
  return DS_OK;
}

/* One host op of `launches` launches at `each` ns (named launch_name), the
 * kernels they start (kernel_ns, bytes) after it and after gpu_deps, then
 * a host .item() (sync_name, one call) waiting for those kernels: the shape
 * of amp's unscale and of the clipper's norm. */
static ds_status emit_kernels_then_item(struct ds_schedule_builder *bd, int32_t rank,
                                        const char *launch_name, int launches, double each,
                                        double kernel_ns, double bytes, const char *sync_name,
                                        const int64_t *gpu_deps, size_t n_gpu_deps) {
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_STEP,
                     .name = launch_name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                     .dur_us = launches * each / 1000};
  DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
  int64_t deps[8];
  size_t n = kernel_deps(deps, sizeof deps / sizeof *deps, gpu_deps, n_gpu_deps, op.id);
  op.stream = DS_STREAM_COMPUTE;
  op.dur_us = kernel_ns / 1000;
  op.bytes = bytes;
  DS_CHECK(ds_schedule_emit(bd, &op, deps, n));
  int64_t kernels = op.id;
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_STEP,
                      .name = sync_name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                      .dur_us = each / 1000};
  return ds_schedule_emit(bd, &op, &kernels, 1);
}

/* amp.scale_loss's exit under --optimizer apex-o2-fusedadam (compute.h
 * ds_compute_amp_unscale_ns): the overflow flag's zero_ and the unscale's
 * launches from the host (one host op, a launch each at
 * ds_compute_step_host_op_ns; post_backward_with_master_weights's
 * empty_like per gradient allocates and launches nothing, uncharged as
 * the forward's kernel-less ops are), the kernels after them and after
 * gpu_deps, then update_scale's _overflow_buf.item() (apex/amp/scaler.py:200
 * at 25bfcb91) waiting for those kernels. */
static ds_status emit_amp_unscale(struct ds_schedule_builder *bd, const struct ds_compute *c,
                                  const struct ds_model *m, int32_t rank,
                                  const int64_t *gpu_deps, size_t n_gpu_deps) {
  double bytes = 0, ns = ds_compute_amp_unscale_ns(c, m, &bytes);
  return emit_kernels_then_item(bd, rank, "amp.unscale", ds_compute_amp_unscale_launches(c, m),
                                ds_compute_step_host_op_ns(c), ns, bytes, "overflow.item",
                                gpu_deps, n_gpu_deps);
}

/* run_squad.py's GradientClipper.step under --optimizer bertadam and
 * apex-o2-fusedadam (compute.h ds_compute_clip_norm_ns): the l2norm's launches from the host
 * (one host op, a launch each at ds_compute_step_host_op_ns), its kernels
 * after them and after gpu_deps, total_norm.item() (:720) waiting for
 * those kernels, then multi_tensor_scale's launches (a host op) and
 * kernels; *last gets the scale's host op, which the loop's first launch
 * follows on the host stream. */
static ds_status emit_clipper(struct ds_schedule_builder *bd, const struct ds_compute *c,
                              const struct ds_model *m, int32_t rank, const int64_t *gpu_deps,
                              size_t n_gpu_deps, int64_t *last) {
  double each = ds_compute_step_host_op_ns(c);
  double bytes = 0, ns = ds_compute_clip_norm_ns(c, m, &bytes);
  DS_CHECK(emit_kernels_then_item(bd, rank, "clip.l2norm", ds_compute_clip_norm_launches(c, m),
                                  each, ns, bytes, "total_norm.item", gpu_deps, n_gpu_deps));
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_STEP,
                     .name = "clip.scale", .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                     .dur_us = ds_compute_clip_scale_launches(c, m) * each / 1000};
  DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
  int64_t launch = op.id;
  op.stream = DS_STREAM_COMPUTE;
  op.dur_us = ds_compute_clip_scale_ns(c, m, &op.bytes) / 1000;
  DS_CHECK(ds_schedule_emit(bd, &op, &launch, 1));
  *last = launch;
  return DS_OK;
}

double ds_host_foreach_step_tensors_ns(const struct ds_compute *c, enum ds_optimizer opt,
                                       int32_t tensors) {
  if (c->optimizer_loop || tensors <= 0 || opt == DS_OPT_NONE || opt == DS_OPT_BERTADAM ||
      opt == DS_OPT_APEX_O2)
    return 0;
  double each = opt == DS_OPT_ADAM ? c->params.host_step_param_adam_ns
                                   : c->params.host_step_param_ns;
  return c->params.host_step_call_ns + tensors * each;
}

double ds_host_foreach_step_ns(const struct ds_compute *c, const struct ds_model *m) {
  return ds_host_foreach_step_tensors_ns(c, m->optimizer, m->n_params);
}

ds_status ds_host_emit_step(struct ds_schedule_builder *bd, const struct ds_compute *c,
                            const struct ds_model *m, int32_t rank, const int64_t *gpu_deps,
                            size_t n_gpu_deps, int64_t *first) {
  *first = -1;
  int32_t ops = ds_compute_step_host_ops(c, m);
  double each = ds_compute_step_host_op_ns(c);
  /* --optimizer none: no step, so no GradScaler.step either (its unscale_
   * and found_inf.item() exist only for the step); what stays is 1.9's
   * zero_grad launches, the user's own code (ds_compute_step_host_ops) */
  int none = m->optimizer == DS_OPT_NONE;
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_STEP,
                     .name = none ? "zero_grad" : "optimizer", .layer = -1, .bucket = -1,
                     .coll = -1, .root = -1, .dur_us = each / 1000};
  if (c->amp == DS_AMP_FP16 && !none) {
    int64_t unscale;
    DS_CHECK(emit_unscale(bd, c, m, rank, gpu_deps, n_gpu_deps, &unscale));
    /* found_inf.item() (torch/amp/grad_scaler.py GradScaler._maybe_opt_step,
     * before it calls optimizer.step()): an aten op of its own whose copy
     * waits for unscale_'s kernels, under every loop and step, so that the
     * step's host work, the loop's launches or the foreach step's Python,
     * starts only once the GPU has finished backward and unscale_; the
     * step's kernels wait for it where nothing follows it (host.h) */
    op.name = "found_inf.item";
    DS_CHECK(ds_schedule_emit(bd, &op, &unscale, 1));
    *first = op.id;
    op.name = "optimizer";
  }
  if (m->optimizer == DS_OPT_APEX_O2)
    DS_CHECK(emit_amp_unscale(bd, c, m, rank, gpu_deps, n_gpu_deps));
  if (m->optimizer == DS_OPT_BERTADAM || m->optimizer == DS_OPT_APEX_O2)
    DS_CHECK(emit_clipper(bd, c, m, rank, gpu_deps, n_gpu_deps, first));
  double foreach_ns = ds_host_foreach_step_ns(c, m);
  if (foreach_ns > 0) {
    /* one op: the foreach calls launch their kernels once the Python
     * loops over the parameters are done, so the step's kernels wait for
     * all of it */
    op.dur_us = foreach_ns / 1000;
    DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
    *first = op.id;
    return DS_OK;
  }
  if (ops <= 0 || each <= 0) return DS_OK;
  DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
  *first = op.id;
  if (ops > 1) {
    op.dur_us = (ops - 1) * each / 1000;
    DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
  }
  return DS_OK;
}

ds_status ds_host_emit_loop_sync(struct ds_schedule_builder *bd, int32_t rank,
                                 const int64_t *gpu_deps, size_t n_gpu_deps) {
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_STEP,
                     .name = "synchronize", .layer = -1, .bucket = -1, .coll = -1,
                     .root = -1, .dur_us = 0};
  return ds_schedule_emit(bd, &op, gpu_deps, n_gpu_deps);
}

void ds_host_loop_anchors(const struct ds_schedule *s, int free_loop, int32_t n_ranks,
                          int64_t *ids) {
  if (free_loop)
    ds_schedule_last_on_stream(s, DS_STREAM_HOST, n_ranks, ids);
  else
    ds_schedule_last_of_kind(s, DS_OP_STEP, n_ranks, ids);
}
