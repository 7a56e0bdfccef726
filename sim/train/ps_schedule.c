/*
 * The parameter server's schedule (see ps.c for the layout of an
 * iteration's ops): each server's update cost, the workers' program (the
 * layers' launches and kernels, the pushes), and one iteration's ops with
 * their dependencies, built once; the event loop (ps.c) only times them.
 */
#include "sim/train/ps.h"
#include "sim/train/ps_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "sim/train/host.h"
#include "sim/train/norm.h"

/* ---- the schedule ---- */

/* A server's update is several launches, each paying kernel_overhead, as
 * a rank's own step does (ds_compute_step_ns, compute.h): the optimizer's
 * over the shard -- PyTorch's foreach calls (SGD with momentum 3, Adam 7,
 * one more with weight decay), each split by multi_tensor_apply into
 * launches over the shard's own tensors and chunks
 * (ds_compute_step_launches_of; GradScaler's unscale_ left out, compute.h;
 * one parameter group: ps refuses --no-bn-weight-decay), or under
 * --pytorch-version 1.4's loop a kernel per op per tensor of the shard --
 * and in sync mode with several workers first the sum of their gradients,
 * one kernel. The update's roofline
 * (ds_compute_kernel_ns) charges one overhead; this returns the K servers'
 * others, plus each server's foreach step host (malloc'd; NULL when out of
 * memory), counting each server's tensors in a pass over the parameters
 * (K passes, K <= world), once for all the updates of every iteration. A server
 * holding no tensor runs one empty kernel. */
double *ds__ps_update_extra_ns(const struct ds_model *m, const struct ds_compute *c,
                               const struct ds_ps_shards *sh, enum ds_ps_mode mode,
                               int32_t world) {
  double *out = calloc((size_t)sh->n + 1, sizeof *out);
  int32_t *tensors = calloc((size_t)sh->n + 1, sizeof *tensors);
  if (!out || !tensors) {
    free(out);
    free(tensors);
    return NULL;
  }
  int sum = mode == DS_PS_SYNC && world > 1;
  for (int32_t p = 0; p < m->n_params; p++) tensors[sh->server_of_param[p]]++;
  for (int32_t k = 0; k < sh->n && m->n_params > 0; k++) {
    if (tensors[k] == 0) continue;
    int kernels = ds_compute_step_launches_of(c, m, sh->server_of_param, k);
    /* and, before its kernels, the server's Python running optimizer.step()
     * over its shard, as a rank's foreach step does (host.h; 0 under the
     * loop, whose launches ps does not charge) */
    out[k] = (double)(kernels + sum - 1) * c->params.kernel_overhead_ns +
             ds_host_foreach_step_tensors_ns(c, m->optimizer, tensors[k]);
  }
  free(tensors);
  return out;
}

static double transfer_ns(const struct ps_sim *s, const struct route *r, double bytes) {
  return ds__ps_route_lat_ns(s, r) + bytes / ds__ps_route_bw(s, r) * 1e9;
}

/* One iteration's ops, ids 0..n_step-1: what every iteration runs (the
 * event loop times iteration i's op j as this op j; a worker's first
 * forward waiting for its pulls of the step before is the loop's). */
ds_status ds__ps_build_iteration(const struct ps_sim *s, struct ds_schedule *out) {
  const struct layout *y = &s->y;
  const struct ds_model *m = s->model;
  const struct ds_compute *c = s->c;
  const struct ds_ps_options *o = s->opt;
  enum ds_ps_mode mode = o->mode;
  struct ds_schedule_builder bd = {out, 0};
  int dsz = ds_dtype_bytes(c->dtype);
  char name[DS_OP_NAME_CAP];
  int64_t *deps = malloc(((size_t)y->K + 2) * sizeof *deps);
  ds_status st = DS_ENOMEM;
  if (!deps) return st;
  /* one step is workers x servers pushes and pulls: its size is known, so
   * it is allocated once, not up to twice over by doubling (the deps once
   * worker 0's program has told how many a worker's take) */
  DS_CHECK_GOTO(ds_schedule_reserve(out, y->n_step, 0), st, out);
  for (int32_t w = 0; w < y->W; w++) {
    if (w == 1)
      DS_CHECK_GOTO(ds_schedule_reserve(out, y->n_step,
                                        out->n_deps * (size_t)y->W + (size_t)y->n_update +
                                            (size_t)y->W * (size_t)y->K + (size_t)y->K),
                    st, out);
    /* deps of the next op: a compute op waits for the one before it and
     * its launch; a launch for the host stream's op before it alone
     * (single's: dp.c) */
    size_t nd = 0;
    int64_t prev = -1;
    for (int32_t j = 0; j < y->per_w; j++) {
      const struct entry *e = &s->prog[j];
      const struct ds_layer *ly = e->layer >= 0 ? &m->layers[e->layer] : NULL;
      struct ds_op op = {.rank = w, .stream = DS_STREAM_COMPUTE, .kind = e->kind,
                         .name = ly ? ly->name : "loss", .layer = e->layer, .bucket = -1,
                         .coll = -1, .root = -1};
      if (e->host) {
        op.stream = DS_STREAM_HOST;
        op.name = e->sync ? "sync" : "launch";
        op.dur_us = (double)(e->host_to_ns - e->host_from_ns) / 1000;
        /* deps holds the worker's last compute op (not the launch's),
         * which only a sync waits for */
        DS_CHECK_GOTO(ds_schedule_emit(&bd, &op, deps, prev < 0 || e->sync ? nd : 0), st,
                      out);
        nd = 0;
        if (prev >= 0) deps[nd++] = prev;
        deps[nd++] = op.id;
        continue;
      }
      if (e->kind == DS_OP_PUSH) {
        /* after the compute op before it; compute ops chain among themselves */
        if (ly) snprintf(name, sizeof name, "shard%d.%s", e->k, ly->name);
        else snprintf(name, sizeof name, "shard%d", e->k);
        op.stream = DS_STREAM_COMM;
        op.name = name;
        op.bucket = e->k;
        op.root = s->sh.gpu[e->k];
        op.bytes = e->bytes;
        op.dur_us = transfer_ns(s, ds__ps_route_of(s, w, e->k, 0), e->bytes) / 1000;
        DS_CHECK_GOTO(ds_schedule_emit(&bd, &op, &prev, 1), st, out);
        continue;
      }
      /* cuDNN's layout transposes of a convolution (compute.h), and a
       * BatchNorm's num_batches_tracked.add_(1) before its kernel (norm.h),
       * join the layer's op here: the program's ids count one op per entry.
       * The counter's bytes go with its time, as ddp's and dp's counter op
       * carries them (the layer's own op has none). */
      if (e->kind == DS_OP_FWD) {
        double counter_bytes = 0;
        op.flops = ly->fwd_flops * (double)o->batch;
        op.dur_us = (ds_batch_norm_counter_ns(c, ly, &counter_bytes) +
                     ds_compute_fwd_ns(c, ly, o->batch) +
                     ds_compute_conv_transpose_ns(c, m, e->layer, o->batch, 0)) / 1000;
        op.bytes = counter_bytes;
      } else if (e->kind == DS_OP_BWD) {
        op.flops = ly->bwd_flops * (double)o->batch;
        op.dur_us = (ds_compute_bwd_ns(c, ly, o->batch) +
                     ds_compute_conv_transpose_ns(c, m, e->layer, o->batch, 1)) / 1000;
      } else {
        op.dur_us = ds_compute_loss_ns(c, m, (double)o->batch, &op.bytes) / 1000;
      }
      DS_CHECK_GOTO(ds_schedule_emit(&bd, &op, deps, nd), st, out);
      deps[0] = prev = op.id;
      nd = 1;
    }
  }
  for (size_t u = 0; u < (size_t)y->n_update; u++) {
    int32_t k = (int32_t)(u % (size_t)y->K);
    int32_t w = mode == DS_PS_SYNC ? -1 : (int32_t)(u / (size_t)y->K);
    int32_t g = s->sh.gpu[k];
    double bytes = ds_ps_update_bytes(m, c, s->sh.numel[k], mode, y->W);
    if (w < 0) snprintf(name, sizeof name, "ps%d.update", k);
    else snprintf(name, sizeof name, "ps%d.update.w%d", k, w);
    /* The server's own worker's push is the one same-rank dependency. */
    int64_t dep = (int64_t)ds__ps_ix_prog(y, g, s->last_push[k]);
    struct ds_op op = {.rank = g, .stream = DS_STREAM_HOST, .kind = DS_OP_STEP,
                       .name = name, .layer = -1, .bucket = k, .coll = -1,
                       .root = -1, .bytes = bytes,
                       .dur_us = (ds_compute_kernel_ns(c, 0, bytes) +
                                  s->update_extra_ns[k]) / 1000};
    DS_CHECK_GOTO(ds_schedule_emit(&bd, &op, &dep, w < 0 || w == g), st, out);
  }
  for (int32_t w = 0; w < y->W; w++)
    for (int32_t k = 0; k < y->K; k++) {
      double bytes = (double)s->sh.numel[k] * dsz;
      snprintf(name, sizeof name, "shard%d", k);
      int64_t d[2] = {(int64_t)ds__ps_ix_prog(y, w, s->last_push[k]),
                      (int64_t)ds__ps_ix_update(y, w, k)};
      struct ds_op op = {.rank = w, .stream = DS_STREAM_COMM, .kind = DS_OP_PULL,
                         .name = name, .layer = -1, .bucket = k, .coll = -1,
                         .root = s->sh.gpu[k], .bytes = bytes,
                         .dur_us = transfer_ns(s, ds__ps_route_of(s, w, k, 1), bytes) / 1000};
      /* The update is a same-rank op only for the server's own worker. */
      DS_CHECK_GOTO(ds_schedule_emit(&bd, &op, d, w == s->sh.gpu[k] ? 2 : 1), st, out);
    }
  st = DS_OK;
out:
  free(deps);
  return st;
}

/* A host launch of layer l's kernel taking ns after the host's work so
 * far (*host, ns from the step's start; rounded as the sum, so that the
 * rounding does not add up over the layers). */
static void host_entry(struct entry *e, enum ds_op_kind kind, int32_t l, double *host,
                       double ns) {
  int64_t from = ds_units_round_ns(*host);
  *host += ns;
  *e = (struct entry){.kind = kind, .layer = l, .k = -1, .host = 1, .host_from_ns = from,
                      .host_to_ns = ds_units_round_ns(*host)};
}

/* The worker's program: forward, loss, backward in reverse, each layer's
 * kernel after its host launch (host.h: the Python thread launches the
 * forward, then the autograd engine's thread the backward, each node's
 * host_node, as single's and DDP's ranks do: a PS worker is such a
 * process; no launch op for a backward of no host time), and the
 * pushes, after backward (one per server, its whole shard) or per layer
 * (after each layer's backward, its tensors grouped by server; a server
 * holding none of the layers' tensors -- more servers than tensors --
 * still gets an empty push after backward, so that every server hears
 * from every worker). */
ds_status ds__ps_build_program(struct ps_sim *s) {
  const struct ds_model *m = s->model;
  int32_t K = s->sh.n, L = m->n_layers, n = 0;
  int dsz = ds_dtype_bytes(s->c->dtype);
  int per_layer = s->opt->push == DS_PS_PUSH_PER_LAYER;
  size_t cap = 5 * (size_t)L + 1 + (size_t)(L + 1) * (size_t)K;
  double *bytes = calloc((size_t)K, sizeof *bytes);
  int32_t *count = calloc((size_t)K, sizeof *count);
  s->prog = malloc(cap * sizeof *s->prog);
  s->pieces = calloc((size_t)K, sizeof *s->pieces);
  s->last_push = calloc((size_t)K, sizeof *s->last_push);
  ds_status st = DS_ENOMEM;
  if (!bytes || !count || !s->prog || !s->pieces || !s->last_push) goto out;
  double host = 0;
  for (int32_t l = 0; l < L; l++) {
    host_entry(s->prog + n++, DS_OP_FWD, l, &host,
               ds_host_fwd_ns(s->c, m, l, s->c->params.host_launch_ns));
    s->prog[n++] = (struct entry){.kind = DS_OP_FWD, .layer = l, .k = -1};
    if (ds_host_syncs(m, l)) {
      host_entry(s->prog + n, DS_OP_FWD, l, &host, ds_host_sync_ns(s->c, m, l));
      s->prog[n++].sync = 1;
    }
  }
  s->prog[n++] = (struct entry){.kind = DS_OP_LOSS, .layer = -1, .k = -1};
  for (int32_t l = L - 1; l >= 0; l--) {
    double bwd_host = ds_host_bwd_ns(s->c, m, l, s->c->params.host_backward_ns);
    if (bwd_host > 0) host_entry(s->prog + n++, DS_OP_BWD, l, &host, bwd_host);
    s->prog[n++] = (struct entry){.kind = DS_OP_BWD, .layer = l, .k = -1};
    if (!per_layer) continue;
    const struct ds_layer *ly = &m->layers[l];
    memset(bytes, 0, (size_t)K * sizeof *bytes);
    memset(count, 0, (size_t)K * sizeof *count);
    for (int32_t p = ly->param_first; p < ly->param_first + ly->param_count; p++) {
      int32_t k = s->sh.server_of_param[p];
      bytes[k] += (double)m->params[p].numel * dsz;
      count[k]++;
    }
    for (int32_t k = 0; k < K; k++)
      if (count[k] > 0) {
        s->prog[n++] = (struct entry){.kind = DS_OP_PUSH, .layer = l, .k = k, .bytes = bytes[k]};
        s->pieces[k]++;
        s->last_push[k] = n - 1;
      }
  }
  for (int32_t k = 0; k < K; k++)
    if (!per_layer || s->pieces[k] == 0) {
      double b = per_layer ? 0 : (double)s->sh.numel[k] * dsz;
      s->prog[n++] = (struct entry){.kind = DS_OP_PUSH, .layer = -1, .k = k, .bytes = b};
      s->pieces[k]++;
      s->last_push[k] = n - 1;
    }
  s->n_prog = n;
  st = DS_OK;
out:
  free(bytes);
  free(count);
  return st;
}

