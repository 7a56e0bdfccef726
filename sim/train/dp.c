/*
 * DataParallel and single-GPU schedule builder (see dp.h for the PyTorch
 * behaviour). Like sim/train/ddp.c this is arithmetic on the model file; the
 * executor decides the times. Invariant: every rank's ops are emitted in
 * the order they run, rank 0 last, so its optimizer step is the last op of
 * the iteration; the next iteration finds it as DDP finds each rank's step
 * (ds_schedule_last_of_kind).
 */
#include "sim/train/dp.h"
#include "sim/train/ddp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/nccl_model.h"
#include "sim/train/host.h"
#include "sim/train/memory.h"
#include "sim/train/norm.h"

ds_status ds_dp_chunks(const struct ds_model *m, int dtype_bytes, double cap,
                       struct ds_dp_chunks *out) {
  memset(out, 0, sizeof *out);
  out->bytes = calloc((size_t)m->n_params + 1, sizeof *out->bytes);
  out->bcast_bytes = calloc((size_t)m->n_params + 1, sizeof *out->bcast_bytes);
  if (!out->bytes || !out->bcast_bytes) {
    ds_dp_chunks_release(out);
    return DS_ENOMEM;
  }
  int open_bcast = 0;
  /* both walk module.parameters(), registration order (the file's order
   * is the forward's: ds_model_registered) */
  for (int32_t i = 0; i < m->n_params; i++) {
    double b = (double)m->params[ds_model_registered(m, i)].numel * dtype_bytes;
    /* _take_tensors (torch/_utils.py): flush before a tensor would pass
     * the limit */
    if (out->n == 0 || (out->bytes[out->n - 1] > 0 && out->bytes[out->n - 1] + b > cap))
      out->n++;
    out->bytes[out->n - 1] += b;
    /* take_tensors (torch/csrc/utils/tensor_flatten.cpp, not fine
     * grained): `type_group.size += tensor_size; if (type_group.size >=
     * size_limit)` the group goes out */
    if (!open_bcast) out->n_bcast++;
    out->bcast_bytes[out->n_bcast - 1] += b;
    open_bcast = out->bcast_bytes[out->n_bcast - 1] < cap;
  }
  return DS_OK;
}

void ds_dp_chunks_release(struct ds_dp_chunks *c) {
  if (!c) return;
  free(c->bytes);
  free(c->bcast_bytes);
  memset(c, 0, sizeof *c);
}

struct builder {
  struct ds_schedule_builder out;
  const struct ds_model *m;
  const struct ds_compute *c;
  const struct ds_dp_options *opt;
  const struct ds_dp_chunks *chunks;
  int64_t coll_base;
};

/* Appends op after the n deps (ids; negative ones are skipped); *id gets
 * its id. */
static ds_status emit(struct builder *bd, struct ds_op *op, int64_t d0, int64_t d1,
                      int64_t *id) {
  int64_t deps[2];
  size_t n = 0;
  if (d0 >= 0) deps[n++] = d0;
  if (d1 >= 0) deps[n++] = d1;
  DS_CHECK(ds_schedule_emit(&bd->out, op, deps, n));
  if (id) *id = op->id;
  return DS_OK;
}

static ds_status emit_coll(struct builder *bd, int32_t rank, enum ds_op_kind kind,
                           const char *name, int64_t coll, int32_t root, double bytes,
                           int64_t dep, int64_t *id) {
  /* broadcast_coalesced's and reduce_add_coalesced's groups go to NCCL
   * (comm.cpp's broadcast, comm.py's reduce_add: nccl::is_available holds
   * for a flattened dense CUDA tensor per device): under NCCL's model its
   * ring with the protocol its tuning picks for the group's bytes (or the
   * fixed one), run by the executor (exec_colls.c, ds_nccl_chain); else
   * the plain chain */
  char algo[DS_RING_ALGO_MAX] = "";
  const struct ds_dp_options *o = bd->opt;
  if (o->nccl && (kind == DS_OP_BROADCAST || kind == DS_OP_REDUCE))
    ds_ring_algo_name(o->proto_fixed < DS_PROTO_COUNT
                          ? o->proto_fixed
                          : ds_nccl_choose_coll_proto(o->nccl, kind == DS_OP_BROADCAST
                                                                   ? DS_COLL_BROADCAST
                                                                   : DS_COLL_REDUCE,
                                                      bytes),
                      algo);
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMM, .kind = kind, .name = name,
                     .layer = -1, .bucket = -1, .coll = bd->coll_base + coll, .root = root,
                     .algo = algo, .bytes = bytes};
  return emit(bd, &op, dep, -1, id);
}

static ds_status emit_compute(struct builder *bd, int32_t rank, enum ds_op_kind kind,
                              const char *name, int32_t layer, double flops, double bytes,
                              double dur_ns, int64_t d0, int64_t d1, int64_t *id) {
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = kind, .name = name,
                     .layer = layer, .bucket = -1, .coll = -1, .root = -1, .bytes = bytes,
                     .flops = flops, .dur_us = dur_ns / 1000};
  return emit(bd, &op, d0, d1, id);
}

/* The loss (and its gradient) over n samples' outputs: one kernel reading
 * the outputs and writing their gradient. */
static double loss_ns(const struct builder *bd, double samples, double *bytes) {
  return ds_compute_loss_ns(bd->c, bd->m, samples, bytes);
}

/* cuDNN's layout transposes of layer l's convolution (compute.h), an op
 * after the layer's kernel when there are any. */
static ds_status transposes(struct builder *bd, int32_t rank, enum ds_op_kind kind, int32_t l,
                            int64_t batch, int64_t *prev) {
  int bwd = kind == DS_OP_BWD;
  double bytes, ns = ds_compute_conv_transpose(bd->c, bd->m, l, batch, bwd, &bytes);
  if (ns <= 0) return DS_OK;
  char name[DS_OP_NAME_CAP];
  snprintf(name, sizeof name, "%s.transpose", bd->m->layers[l].name);
  return emit_compute(bd, rank, kind, name, l, 0, bytes, ns, *prev, -1, prev);
}

/* A BatchNorm's num_batches_tracked.add_(1) (norm.h), an op before the
 * layer's kernel, after its launch and *prev, when the layer has one. */
static ds_status bn_counter(struct builder *bd, int32_t rank, int32_t l, int64_t launch,
                            int64_t *prev) {
  double bytes, ns = ds_batch_norm_counter_ns(bd->c, &bd->m->layers[l], &bytes);
  if (ns <= 0) return DS_OK;
  char name[DS_OP_NAME_CAP];
  snprintf(name, sizeof name, "%s.num_batches_tracked", bd->m->layers[l].name);
  return emit_compute(bd, rank, DS_OP_FWD, name, l, 0, bytes, ns, launch, *prev, prev);
}

/* Forward of every layer, each kernel after its host launch; the first
 * after first_dep (the input, the replicated parameters). */
static ds_status forward(struct builder *bd, int32_t rank, int64_t launch_dep,
                         int64_t first_dep, int64_t *last) {
  const struct ds_dp_options *o = bd->opt;
  int32_t w = o->single ? 1 : o->world_size;
  int64_t prev = first_dep, launch = launch_dep;
  for (int32_t l = 0; l < bd->m->n_layers; l++) {
    const struct ds_layer *ly = &bd->m->layers[l];
    /* The GIL round robin: rank r's first launch waits for the r launches
     * of the ranks before it, then takes its own turn and the rest of its
     * host time. Only the layer's Python holds the GIL (host_launch, g);
     * PyTorch's bindings release it around the op's dispatch (the generated
     * wrappers of torch/csrc/autograd/generated/
     * python_torch_functions_dispatch.h, "release the GIL"), so the rest of
     * the layer's host time (its ops times host_dispatch: sim/train/host.h)
     * runs beside the other threads' turns: afterwards a thread's launches
     * come every W g (the GIL is the bottleneck) or every own (its own host
     * time is), whichever is longer. Without host counts the layer's time
     * is g; single (W = 1) pays exactly the layer's host time. */
    double own = ds_host_fwd_ns(bd->c, bd->m, l, o->launch_ns);
    double gil = own < o->launch_ns ? own : o->launch_ns;
    double turns = (double)w * gil;
    double host_ns = l == 0 ? (double)(rank + 1) * gil + (own - gil) : turns > own ? turns : own;
    struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                       .name = "launch", .layer = l, .bucket = -1, .coll = -1, .root = -1,
                       .dur_us = host_ns / 1000};
    DS_CHECK(emit(bd, &op, l == 0 ? launch : -1, -1, &launch));
    DS_CHECK(bn_counter(bd, rank, l, launch, &prev));
    DS_CHECK(emit_compute(bd, rank, DS_OP_FWD, ly->name, l, ly->fwd_flops * (double)o->batch,
                          0, ds_compute_fwd_ns(bd->c, ly, o->batch), launch, prev, &prev));
    DS_CHECK(transposes(bd, rank, DS_OP_FWD, l, o->batch, &prev));
    /* a host-device sync in the layer (host.h): this thread waits for its
     * GPU's stream, the layer's kernels included (with the GIL released,
     * as every op's dispatch), then launches on */
    if (ds_host_syncs(bd->m, l)) {
      struct ds_op sync = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                           .name = "sync", .layer = l, .bucket = -1, .coll = -1, .root = -1,
                           .dur_us = ds_host_sync_ns(bd->c, bd->m, l) / 1000};
      DS_CHECK(emit(bd, &sync, prev, -1, NULL));
    }
  }
  *last = prev;
  return DS_OK;
}

/* Layer l's AccumulateGrad adding its gradients into an allocated .grad
 * (compute.h), after *prev; *prev becomes it. None for a layer without
 * parameters. */
static ds_status accum_grad_op(struct builder *bd, int32_t rank, int32_t l, int64_t *prev) {
  double bytes, ns = ds_compute_accum_grad_ns(bd->c, bd->m, l, &bytes);
  if (ns <= 0) return DS_OK;
  char name[DS_OP_NAME_CAP];
  snprintf(name, sizeof name, "%s.accum_grad", bd->m->layers[l].name);
  return emit_compute(bd, rank, DS_OP_BWD, name, l, 0, bytes, ns, *prev, -1, prev);
}

/* Backward of every layer in reverse, each kernel after the one before and
 * after its launch by the autograd engine's thread of the rank's GPU (one
 * per device: DataParallel's replicas do not share it), the layer's host
 * time on the host stream (sim/train/host.h; none when 0). */
static ds_status backward(struct builder *bd, int32_t rank, int64_t first_dep,
                          int accum_grad, int64_t *last) {
  int64_t prev = first_dep;
  for (int32_t l = bd->m->n_layers - 1; l >= 0; l--) {
    const struct ds_layer *ly = &bd->m->layers[l];
    int64_t launch = -1;
    double host_ns = ds_host_bwd_ns(bd->c, bd->m, l, bd->opt->backward_ns);
    if (host_ns > 0) {
      struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_BWD,
                         .name = "launch", .layer = l, .bucket = -1, .coll = -1,
                         .root = -1, .dur_us = host_ns / 1000};
      DS_CHECK(emit(bd, &op, -1, -1, &launch));
    }
    DS_CHECK(emit_compute(bd, rank, DS_OP_BWD, ly->name, l,
                          ly->bwd_flops * (double)bd->opt->batch, 0,
                          ds_compute_bwd_ns(bd->c, ly, bd->opt->batch), prev, launch,
                          &prev));
    DS_CHECK(transposes(bd, rank, DS_OP_BWD, l, bd->opt->batch, &prev));
    if (accum_grad) DS_CHECK(accum_grad_op(bd, rank, l, &prev));
  }
  *last = prev;
  return DS_OK;
}

/* GPU 0's optimizer step after dep (its last GPU work), after its host ops
 * (ds_host_emit_step: the loop of PyTorch 1.4 and 1.9, or the foreach
 * step's; under --amp fp16 they wait for dep, GradScaler's sync), then
 * 1.9's zero_grad fills (compute.h), the iteration's last step op. Under
 * --optimizer none no step: zero_grad's fills wait for dep and their first
 * launch, and under --loop sync the loop's "synchronize" (host.h) waits
 * for the last of them, or dep, as the next iteration's anchor. */
static ds_status step(struct builder *bd, int64_t dep) {
  int64_t host, id = dep;
  int none = bd->m->optimizer == DS_OPT_NONE;
  DS_CHECK(ds_host_emit_step(&bd->out, bd->c, bd->m, 0, &dep, dep >= 0 ? 1 : 0, &host));
  if (!none)
    DS_CHECK(emit_compute(bd, 0, DS_OP_STEP, "optimizer", -1, 0,
                          ds_compute_step_bytes(bd->c, bd->m), ds_compute_step_ns(bd->c, bd->m),
                          dep, host, &id));
  double zbytes, zns = ds_compute_zero_grad_ns(bd->c, bd->m, &zbytes);
  if (zns > 0)
    DS_CHECK(emit_compute(bd, 0, DS_OP_STEP, "zero_grad", -1, 0, zbytes, zns, id,
                          none ? host : -1, &id));
  if (!none || (bd->opt->single && bd->opt->free_loop)) return DS_OK;
  return ds_host_emit_loop_sync(&bd->out, 0, &id, id >= 0 ? 1 : 0);
}

static ds_status build_single(struct builder *bd, int64_t prev_step) {
  int64_t last = -1, launch_dep = prev_step;
  double bytes;
  int32_t k = bd->opt->grad_accum > 1 ? bd->opt->grad_accum : 1;
  for (int32_t s = 0; s < k; s++) {
    /* each micro-step's forward is launched once the previous one's GPU
     * work has ended, as the next iteration's once the step has */
    DS_CHECK(forward(bd, 0, launch_dep, -1, &last));
    double ns = loss_ns(bd, (double)bd->opt->batch, &bytes);
    DS_CHECK(emit_compute(bd, 0, DS_OP_LOSS, "loss", -1, 0, bytes, ns, last, -1, &last));
    DS_CHECK(backward(bd, 0, last, bd->c->grad_kept || s > 0, &last));
    launch_dep = last;
  }
  return step(bd, last);
}

/* Collective ids within the iteration: 0 input scatter, 1..B broadcasts
 * (B = n_bcast), B+1 gather, B+2 output-gradient scatter, B+3.. the K
 * reduces (K = n). */
static ds_status build_rank(struct builder *bd, int32_t r, int64_t prev_step,
                            int64_t host_start) {
  const struct ds_dp_options *o = bd->opt;
  const struct ds_model *m = bd->m;
  int32_t k_n = bd->chunks->n, b_n = bd->chunks->n_bcast, w = o->world_size;
  int32_t od = o->output_device;
  double samples = (double)w * (double)o->batch;
  int64_t scatter, last, id;
  DS_CHECK(emit_coll(bd, r, DS_OP_SCATTER, "input", 0, 0, samples * m->input_bytes,
                     r == 0 ? prev_step : -1, &scatter));
  int64_t bcast = scatter;
  for (int32_t k = 0; k < b_n; k++)
    DS_CHECK(emit_coll(bd, r, DS_OP_BROADCAST, "replicate", 1 + k, 0,
                       bd->chunks->bcast_bytes[k], -1, &bcast));
  /* replicate()'s Python (module copies, parameter rebinding) runs on the
   * main thread before parallel_apply starts any replica's thread, right
   * after the scatter's launch: its copies are non_blocking (comm.cpp's
   * scatter, `.to(device, non_blocking=true)`), so the host does not wait
   * for them; each replica's first kernel does, in stream order. The main
   * thread is one, but a schedule's dependencies stay on one rank: GPU 0's
   * host starts it after the previous step (host_start = prev_step), the
   * other ranks' after their last reduce of the previous iteration, the
   * closest point of theirs (earlier by GPU 0's step and the step's host
   * work before it, under --amp fp16 GradScaler's found_inf.item() too;
   * their kernels wait for the broadcasts anyway, so the iteration, GPU
   * 0's, keeps them). */
  struct ds_op rep = {.rank = r, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                      .name = "replicate", .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                      .dur_us = o->replicate_ns * (double)m->n_params * w / 1000};
  int64_t host;
  DS_CHECK(emit(bd, &rep, host_start, -1, &host));
  DS_CHECK(forward(bd, r, host, bcast, &last));
  /* the outputs in the dtype the last layer writes (half under autocast
   * where it casts, ds_output_bytes), as DDP's memory walk counts them */
  double out_bytes = samples * ds_output_bytes(m, &bd->c->precision), lbytes;
  if (o->parallel_loss) {
    /* Each replica's loss over its own outputs; only the scalars (fp32)
     * travel. */
    double ns = loss_ns(bd, (double)o->batch, &lbytes);
    DS_CHECK(emit_compute(bd, r, DS_OP_LOSS, "loss", -1, 0, lbytes, ns, last, -1, &last));
    out_bytes = 4.0 * w;
  }
  DS_CHECK(emit_coll(bd, r, DS_OP_GATHER, "outputs", b_n + 1, od, out_bytes, last, &id));
  if (!o->parallel_loss && r == od) {
    double ns = loss_ns(bd, samples, &lbytes);
    DS_CHECK(emit_compute(bd, r, DS_OP_LOSS, "loss", -1, 0, lbytes, ns, id, -1, &id));
  }
  DS_CHECK(emit_coll(bd, r, DS_OP_SCATTER, "output_grad", b_n + 2, od, out_bytes, id, &id));
  /* DataParallel's replicas are fresh each iteration: their gradients are
   * new tensors, never added into */
  DS_CHECK(backward(bd, r, id, 0, &last));
  /* ReduceAddCoalesced runs once every replica's gradients exist: the
   * first reduce waits for this rank's whole backward, the collective for
   * every other rank's. */
  for (int32_t k = 0; k < k_n; k++)
    DS_CHECK(emit_coll(bd, r, DS_OP_REDUCE, "grads", b_n + 3 + k, 0, bd->chunks->bytes[k],
                       k == 0 ? last : -1, &last));
  if (r != 0) return DS_OK;
  /* The reduced gradients reach the module's own parameters through
   * Broadcast's backward (ReduceAddCoalesced, whose outputs exist once
   * every chunk is reduced) and their AccumulateGrad nodes: where .grad is
   * kept (PyTorch 1.4, 1.9) each adds into it on GPU 0, per layer. */
  if (bd->c->grad_kept)
    for (int32_t l = m->n_layers - 1; l >= 0; l--) DS_CHECK(accum_grad_op(bd, 0, l, &last));
  DS_CHECK(step(bd, last));
  return DS_OK;
}

ds_status ds_dp_build(const struct ds_model *m, const struct ds_compute *c,
                      const struct ds_dp_options *opt, const struct ds_dp_chunks *chunks,
                      int64_t id_base, int64_t coll_base, struct ds_schedule *out,
                      int64_t *n_coll) {
  struct builder bd = {{out, id_base}, m, c, opt, chunks, coll_base};
  /* The previous iteration already in out (none in a schedule of its own):
   * the host starts this one when GPU 0's step has ended, found as DDP
   * finds each rank's (ds_host_loop_anchors); under --loop free
   * (single only, dp.h) when its host has ended its own last op. */
  int64_t prev_step = -1;
  ds_host_loop_anchors(out, opt->single && opt->free_loop, 1, &prev_step);
  /* DataParallel with one device calls the module itself: forward's
   * `if len(self.device_ids) == 1: return self.module(*inputs[0],
   * **kwargs[0])` (torch/nn/parallel/data_parallel.py, DataParallel.forward)
   * comes before replicate, parallel_apply and gather, and the scatter to
   * the device the input is on copies nothing (comm.cpp's scatter,
   * `.to(device, non_blocking, copy=false)`): single's iteration. */
  if (opt->single || opt->world_size == 1) {
    *n_coll = 0;
    return build_single(&bd, prev_step);
  }
  int64_t *prev_reduce = malloc((size_t)opt->world_size * sizeof *prev_reduce);
  if (!prev_reduce) return DS_ENOMEM;
  ds_schedule_last_of_kind(out, DS_OP_REDUCE, opt->world_size, prev_reduce);
  ds_status st = DS_OK;
  for (int32_t r = 1; r < opt->world_size && st == DS_OK; r++)
    st = build_rank(&bd, r, -1, prev_reduce[r]);
  if (st == DS_OK) st = build_rank(&bd, 0, prev_step, prev_step);
  free(prev_reduce);
  DS_CHECK(st);
  *n_coll = (int64_t)chunks->n_bcast + chunks->n + 3;
  return DS_OK;
}

static void sum(struct ds_dp_gpu_memory *g) {
  g->total =
      g->params + g->grads + g->optimizer + g->activations + g->inputs + g->outputs + g->step;
}

/* Keeps in *best the fuller of it and the state now. */
static void keep_fuller(struct ds_dp_gpu_memory *best, struct ds_dp_gpu_memory now) {
  sum(&now);
  if (now.total > best->total) *best = now;
}

/* One GPU's walk (dp.h): held are its static terms (params, optimizer,
 * inputs, kept .grad); loss_out the outputs' terms at the loss's backward,
 * loss_act the loss's log-probs there; held_out what stays of the outputs
 * after it (the gathered outputs on the output device); reduced the sum
 * GPU 0 receives; step_temp, on GPU 0 (steps), the optimizer's
 * temporaries. */
static struct ds_dp_gpu_memory walk(const struct ds_model *m, const struct ds_precision *pr,
                                    int64_t batch, struct ds_dp_gpu_memory held,
                                    double loss_out, double loss_act, double held_out,
                                    double reduced, int steps, double step_temp) {
  double saved = 0;
  for (int32_t l = 0; l < m->n_layers; l++) saved += ds_layer_saved_bytes(m, pr, l, batch);
  double kept = held.grads;
  struct ds_dp_gpu_memory best = held, now = held;
  best.total = -1;
  now.activations = saved + loss_act;
  now.outputs = loss_out;
  now.peak_at = "the loss's backward";
  keep_fuller(&best, now);
  double grads = kept;
  for (int32_t l = m->n_layers - 1; l >= 0; l--) {
    saved -= ds_layer_saved_bytes(m, pr, l, batch);
    if (saved < 0) saved = 0; /* the sums' rounding, past the first layer */
    grads += (double)m->layers[l].param_numel * pr->param_bytes;
    now.activations = saved;
    now.outputs = held_out;
    now.grads = grads;
    now.peak_at = "backward";
    now.peak_layer_name = m->layers[l].name;
    keep_fuller(&best, now);
  }
  now.activations = 0;
  now.grads = grads + reduced;
  now.peak_at = "the reduce";
  now.peak_layer_name = NULL;
  keep_fuller(&best, now);
  if (steps) {
    /* the step: the replicas' gradients (ReduceAddCoalesced's inputs) are
     * freed with the graph; the sum is .grad (a kept one added into), one
     * copy of the parameters' bytes; the step's new tensors beside it */
    now.grads = (double)m->total_numel * pr->param_bytes;
    now.step = step_temp;
    now.peak_at = "the step";
    keep_fuller(&best, now);
  }
  return best;
}

void ds_dp_memory(const struct ds_model *m, const struct ds_precision *pr,
                  const struct ds_dp_options *opt, struct ds_dp_memory *out) {
  double p = (double)m->total_numel * pr->param_bytes;
  double w = opt->world_size, b = (double)opt->batch;
  double out_b = ds_output_bytes(m, pr); /* per sample, as the gather moves it */
  memset(out, 0, sizeof *out);
  /* GPU 0 holds the module, the optimizer state and the input batch; a
   * kept .grad (PyTorch 1.4, 1.9) lives on while the reduce writes the sum
   * that its AccumulateGrad then adds in */
  struct ds_dp_gpu_memory held0 = {.params = p, .optimizer = p * ds_optimizer_states(m->optimizer),
                                   .inputs = (w - 1) * b * m->input_bytes,
                                   .grads = opt->grad_kept && opt->world_size > 1 ? p : 0};
  struct ds_dp_gpu_memory held = {.params = p};
  /* What the loss's backward holds, per GPU, and what stays after it. With
   * parallel_loss every replica runs its loss over its own outputs: its
   * log-probs and nll_loss's gradient (each the loss's saved size) and its
   * outputs' gradient; the W scalars and theirs are negligible beside
   * them (2 x 4 W bytes, counted). Otherwise the output device runs it over
   * the gathered batch: the gathered outputs (held until the next forward),
   * their gradient, the log-probs and nll_loss's gradient; every other
   * replica gets its chunk of the outputs' gradient scattered to it (on the
   * output device the chunk is a view). */
  double own_loss = ds_loss_saved_bytes(m, pr, b);
  double all_loss = ds_loss_saved_bytes(m, pr, w * b);
  double od_out, od_act, od_held, rest_out, rest_act;
  if (opt->parallel_loss) {
    od_out = rest_out = own_loss + b * out_b + 2 * 4.0 * w;
    od_act = rest_act = own_loss;
    od_held = 2 * 4.0 * w;
  } else {
    od_out = 2 * w * b * out_b + all_loss;
    od_act = all_loss;
    od_held = w * b * out_b;
    rest_out = b * out_b;
    rest_act = 0;
  }
  int od0 = opt->output_device == 0 || opt->world_size < 2;
  /* GPU 0's optimizer steps every parameter, as single's does */
  struct ds_memory_options mo = {.step_numel = (double)m->total_numel,
                                 .optimizer_loop = opt->optimizer_loop,
                                 .weight_decay = opt->weight_decay};
  out->gpu0 = walk(m, pr, opt->batch, held0, od0 ? od_out : rest_out, od0 ? od_act : rest_act,
                   od0 ? od_held : (opt->parallel_loss ? 2 * 4.0 * w : 0),
                   opt->world_size > 1 ? p : 0, 1, ds_step_temporaries(m, pr, &mo));
  if (opt->world_size < 2) return;
  /* the fullest other GPU: the output device when it is not GPU 0 */
  int od_other = !od0;
  out->other = walk(m, pr, opt->batch, held, od_other ? od_out : rest_out,
                    od_other ? od_act : rest_act, od_other ? od_held : 0, 0, 0, 0);
}
