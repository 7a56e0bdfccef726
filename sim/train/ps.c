/*
 * Parameter-server training (see ps.h for the model).
 *
 * The schedule of every iteration is built first (ops never change; only
 * when they run does), then an event loop on the engine walks it: each
 * worker's compute ops one after another, its pushes as flows on the
 * network model, each server's updates through a FIFO queue, the pulls as
 * flows back. Layout of one iteration's ops (the same in every iteration,
 * offset by i * n_step):
 *
 *   per worker w: its program, per_w ops: the compute ops (fwd..., loss,
 *     bwd...), each layer's after its host launch (a host op, timed when
 *     the step starts, or, after a layer's host-device sync, when the
 *     sync's wait ends), with the pushes where they are issued (after backward: one
 *     per server at the end; per layer: after each layer's backward, one
 *     per server holding tensors of that layer)
 *   updates: K (sync: one per server) or W * K (async: per worker and server)
 *   per worker w: K pulls
 */
#include "sim/train/ps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net/engine.h"
#include "sim/train/host.h"
#include "sim/net/events.h"
#include "sim/train/jitter.h"
#include "sim/train/norm.h"
#include "base/units.h"

const char *ds_ps_mode_name(enum ds_ps_mode mode) {
  return mode == DS_PS_ASYNC ? "async" : "sync";
}

int ds_ps_mode_parse(const char *name, enum ds_ps_mode *out) {
  if (strcmp(name, "sync") == 0) *out = DS_PS_SYNC;
  else if (strcmp(name, "async") == 0) *out = DS_PS_ASYNC;
  else return -1;
  return 0;
}

const char *ds_ps_push_name(enum ds_ps_push push) {
  return push == DS_PS_PUSH_PER_LAYER ? "per-layer" : "after-backward";
}

int ds_ps_push_parse(const char *name, enum ds_ps_push *out) {
  if (strcmp(name, "after-backward") == 0) *out = DS_PS_PUSH_AFTER_BACKWARD;
  else if (strcmp(name, "per-layer") == 0) *out = DS_PS_PUSH_PER_LAYER;
  else return -1;
  return 0;
}

void ds_ps_shards_release(struct ds_ps_shards *s) {
  if (!s) return;
  free(s->server_of_param);
  free(s->numel);
  free(s->gpu);
  memset(s, 0, sizeof *s);
}

ds_status ds_ps_shard(const struct ds_model *m, int32_t n_servers, int32_t world,
                      struct ds_ps_shards *out, struct ds_err *err) {
  memset(out, 0, sizeof *out);
  if (world < 1 || n_servers < 1 || n_servers > world)
    return ds_err_set(err, DS_EUSAGE,
                      "option --ps-servers: expected 1 to %d (one server per rank at "
                      "most: servers are colocated on the ranks' GPUs), got %d",
                      world, n_servers);
  out->n = n_servers;
  out->server_of_param = malloc(((size_t)m->n_params + 1) * sizeof *out->server_of_param);
  out->numel = calloc((size_t)n_servers, sizeof *out->numel);
  out->gpu = malloc((size_t)n_servers * sizeof *out->gpu);
  if (!out->server_of_param || !out->numel || !out->gpu) {
    ds_ps_shards_release(out);
    return ds_err_set(err, DS_ENOMEM, "parameter server: out of memory");
  }
  for (int32_t k = 0; k < n_servers; k++)
    out->gpu[k] = (int32_t)((int64_t)k * world / n_servers);
  /* whole tensors in registration order (ds_model_registered; the
   * file's order is the forward's), each to the least-loaded server */
  for (int32_t i = 0; i < m->n_params; i++) {
    int32_t p = ds_model_registered(m, i), best = 0;
    for (int32_t k = 1; k < n_servers; k++)
      if (out->numel[k] < out->numel[best]) best = k;
    out->server_of_param[p] = best;
    out->numel[best] += m->params[p].numel;
  }
  return DS_OK;
}

double ds_ps_update_bytes(const struct ds_model *m, const struct ds_compute *c,
                          int64_t shard_numel, enum ds_ps_mode mode, int32_t world) {
  double passes = ds_compute_optimizer_passes(c, m->optimizer); /* as a worker's step */
  /* Sync: the N pushed gradients are first summed (read N, write 1). */
  if (mode == DS_PS_SYNC && world > 1) passes += world + 1;
  return (double)shard_numel * ds_dtype_bytes(c->dtype) * passes;
}

void ds_ps_memory(const struct ds_model *m, const struct ds_precision *pr, int64_t batch,
                  const struct ds_memory_options *opt, const struct ds_ps_shards *sh,
                  int32_t world, int32_t gpu, struct ds_ddp_memory *out) {
  /* the workers step nothing; a server's GPU steps its shards */
  double stepped = 0;
  for (int32_t k = 0; k < sh->n; k++)
    if (sh->gpu[k] == gpu) stepped += (double)sh->numel[k];
  struct ds_memory_options mo = *opt;
  mo.ddp = 0;
  mo.step_numel = stepped;
  ds_ddp_memory(m, pr, batch, &mo, out);
  /* the shards' master copies and optimizer state (workers keep none: the
   * servers step); every worker's pushed gradient lands in a buffer of its
   * own (a push writes while the server works on the others): sync sums
   * the `world` of them in one kernel after the last push, in place into
   * the first (ds_ps_update_bytes: read N, write 1), so all are resident
   * then; async holds each until its update, one per worker at most (a
   * worker pushes again only after its pull), all of them when the pushes
   * arrive together, as in the first step */
  double shards = stepped * pr->param_bytes;
  out->params += shards;
  out->optimizer = shards * ds_optimizer_states(m->optimizer);
  out->buckets = shards * world;
  ds_ddp_memory_total(out);
}

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
 * memory), counting every server's tensors in one pass over the
 * parameters, once for all the updates of every iteration. A server
 * holding no tensor runs one empty kernel. */
static double *update_extra_ns(const struct ds_model *m, const struct ds_compute *c,
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

struct layout {
  int32_t W, K;
  int32_t per_w;    /* program length: compute ops and pushes */
  int32_t n_update; /* K or W * K */
  size_t n_step;    /* ops per iteration */
};

/* One entry of a worker's program (the same for every worker). */
struct entry {
  enum ds_op_kind kind; /* fwd, loss, bwd or push */
  int32_t layer;        /* -1 for the loss and whole-shard pushes */
  int32_t k;            /* push: the server */
  double bytes;         /* push: gradient bytes */
  int host;             /* a host launch (fwd: the Python thread's, bwd: the
                           autograd thread's) of the next entry's kernel */
  int sync;             /* host: a sync after the entry before it (host.h), which
                           waits for that kernel; the launches after it are timed
                           from its wait's end */
  int64_t host_from_ns, host_to_ns; /* host: when it runs, from the step's start,
                                       its host work alone (no wait) */
};

static void layout_init(struct layout *y, int32_t W, int32_t K, int32_t per_w,
                        enum ds_ps_mode mode) {
  y->W = W;
  y->K = K;
  y->per_w = per_w;
  y->n_update = mode == DS_PS_SYNC ? K : W * K;
  y->n_step = (size_t)W * (size_t)y->per_w + (size_t)y->n_update + (size_t)W * (size_t)K;
}

static size_t ix_prog(const struct layout *y, int32_t w, int32_t j) {
  return (size_t)w * (size_t)y->per_w + (size_t)j;
}
/* w is ignored in sync mode (one update per server). */
static size_t ix_update(const struct layout *y, int32_t w, int32_t k) {
  size_t base = (size_t)y->W * (size_t)y->per_w;
  return base + (y->n_update == y->K ? (size_t)k : (size_t)w * (size_t)y->K + (size_t)k);
}
static size_t ix_pull(const struct layout *y, int32_t w, int32_t k) {
  return (size_t)y->W * (size_t)y->per_w + (size_t)y->n_update +
         (size_t)w * (size_t)y->K + (size_t)k;
}

/* A worker-server route, one per direction. */
struct route {
  int32_t first, len; /* into ps_sim.links; len 0: device-local copy */
  double lat_ns;
  double bw;          /* bottleneck alone (local: the copy rate) */
};

struct ps_sim {
  struct ds_topo *topo;
  const struct ds_model *model;
  const struct ds_compute *c;
  const struct ds_ps_options *opt;
  struct ds_ps_shards sh;
  struct layout y;
  struct entry *prog;     /* [n_prog] */
  int32_t n_prog;
  int32_t *pieces;        /* [K] pushes per worker to server k */
  int32_t *last_push;     /* [K] program index of the last push to server k */
  /* [K] server k's update beyond its roofline: its other kernels'
   * overheads and its foreach step's host (update_extra_ns) */
  double *update_extra_ns;
  struct ds_schedule *all;
  double *scale;          /* [all->n_ops] jitter x straggler, compute ops */
  int32_t *links;         /* route link ids */
  struct route *routes;   /* [(w * K + k) * 2 + dir], dir 0 push, 1 pull */
  double local_bw;
  struct ds_engine *eng;
  struct ds_net *net;
  ds_status failure;
  int64_t *start, *end;
  /* workers */
  int32_t *iter;          /* [W] current iteration */
  int32_t *pos;           /* [W] next program entry of the iteration */
  int32_t *pulls_left;    /* [W] */
  int64_t *iter_end;      /* [W * iters] */
  /* servers */
  int32_t *arrived;       /* sync: [K] pushes of the step; async: [W * K] */
  int64_t *version;       /* [K] updates applied */
  int64_t *pulled;        /* [W * K] version each worker last pulled */
  size_t *queue;          /* [K * (W + 1)] FIFO of update op indices */
  int32_t *q_head, *q_len;
  uint8_t *busy;          /* [K] */
  double stale_sum;
  int64_t stale_max, n_updates;
};

static void fail(struct ps_sim *s, ds_status st) {
  if (s->failure == DS_OK) s->failure = st;
}

static const struct route *route_of(const struct ps_sim *s, int32_t w, int32_t k, int pull) {
  return &s->routes[((size_t)w * (size_t)s->y.K + (size_t)k) * 2 + (size_t)pull];
}

static double transfer_ns(const struct route *r, double bytes) {
  return r->lat_ns + bytes / r->bw * 1e9;
}

/* One iteration's ops with ids id_base + index. prev_pull_base >= 0: ids of
 * the previous iteration's first op, so that each worker's first forward
 * depends on its pulls (the full schedule); < 0 for the one-step schedule. */
static ds_status build_iteration(const struct ps_sim *s, int64_t id_base,
                                 int64_t prev_base, struct ds_schedule *out) {
  const struct layout *y = &s->y;
  const struct ds_model *m = s->model;
  const struct ds_compute *c = s->c;
  const struct ds_ps_options *o = s->opt;
  enum ds_ps_mode mode = o->mode;
  struct ds_schedule_builder bd = {out, id_base};
  int dsz = ds_dtype_bytes(c->dtype);
  char name[DS_OP_NAME_CAP];
  /* a worker's first forward waits for its K pulls of the previous step */
  int64_t *deps = malloc(((size_t)y->K + 2) * sizeof *deps);
  ds_status st = DS_ENOMEM;
  if (!deps) return st;
  for (int32_t w = 0; w < y->W; w++) {
    /* deps of the next op: the worker's first waits for its pulls; a
     * compute op for the one before it and its launch; a launch for the
     * host stream's op before it alone (single's: dp.c) */
    size_t nd = 0;
    if (prev_base >= 0)
      for (int32_t k = 0; k < y->K; k++) deps[nd++] = prev_base + (int64_t)ix_pull(y, w, k);
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
        /* deps holds the pulls before the worker's first op, else its last
         * compute op (not the launch's), which only a sync waits for */
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
        op.dur_us = transfer_ns(route_of(s, w, e->k, 0), e->bytes) / 1000;
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
    int64_t dep = id_base + (int64_t)ix_prog(y, g, s->last_push[k]);
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
      int64_t d[2] = {id_base + (int64_t)ix_prog(y, w, s->last_push[k]),
                      id_base + (int64_t)ix_update(y, w, k)};
      struct ds_op op = {.rank = w, .stream = DS_STREAM_COMM, .kind = DS_OP_PULL,
                         .name = name, .layer = -1, .bucket = k, .coll = -1,
                         .root = s->sh.gpu[k], .bytes = bytes,
                         .dur_us = transfer_ns(route_of(s, w, k, 1), bytes) / 1000};
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
static ds_status build_program(struct ps_sim *s) {
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

/* ---- routes ---- */

static ds_status build_routes(struct ps_sim *s, struct ds_err *err) {
  const struct layout *y = &s->y;
  size_t n_pairs = (size_t)y->W * (size_t)y->K * 2, used = 0, cap = 64;
  int32_t scratch_cap = s->topo->n_links + 1;
  int32_t *scratch = malloc((size_t)scratch_cap * sizeof *scratch);
  s->routes = calloc(n_pairs, sizeof *s->routes);
  s->links = malloc(cap * sizeof *s->links);
  ds_status st = DS_ENOMEM;
  if (!scratch || !s->routes || !s->links) goto out;
  s->local_bw = s->c->mem_bw_bytes_per_s * s->c->params.mem_efficiency / 2;
  for (int32_t w = 0; w < y->W; w++)
    for (int32_t k = 0; k < y->K; k++)
      for (int dir = 0; dir < 2; dir++) {
        struct route *r = &s->routes[((size_t)w * (size_t)y->K + (size_t)k) * 2 + (size_t)dir];
        int32_t g = s->sh.gpu[k], n = 0;
        r->first = (int32_t)used;
        r->bw = s->local_bw;
        if (g == w) continue;
        st = ds_topo_route(s->topo, dir ? g : w, dir ? w : g, scratch, scratch_cap, &n, err);
        if (st != DS_OK) goto fail;
        if (used + (size_t)n > cap) {
          while (used + (size_t)n > cap) cap *= 2;
          int32_t *grown = realloc(s->links, cap * sizeof *grown);
          st = DS_ENOMEM;
          if (!grown) goto out;
          s->links = grown;
        }
        r->len = n;
        r->bw = INFINITY;
        for (int32_t i = 0; i < n; i++) {
          const struct ds_link *lk = &s->topo->links[scratch[i]];
          s->links[used + (size_t)i] = scratch[i];
          r->lat_ns += lk->lat_ns;
          if (lk->bw_bytes_per_s < r->bw) r->bw = lk->bw_bytes_per_s;
        }
        used += (size_t)n;
      }
  st = DS_OK;
out:
  if (st == DS_ENOMEM) ds_err_set(err, st, "parameter server: out of memory");
fail:
  free(scratch);
  return st;
}

/* ---- the event loop ---- */

static void start_compute(struct ps_sim *s, int32_t w);
static void try_update(struct ps_sim *s, int32_t k);

static size_t block(const struct ps_sim *s, int32_t iter) {
  return (size_t)iter * s->y.n_step;
}

static void start_flow(struct ps_sim *s, size_t op, int32_t w, int32_t k, int pull) {
  const struct route *r = route_of(s, w, k, pull);
  s->start[op] = ds_engine_now(s->eng);
  double bytes = s->all->ops[op].bytes;
  ds_status st = r->len
      ? ds_net_flow_start(s->net, s->links + r->first, NULL, r->len, bytes, 0, r->lat_ns, op)
      : ds_net_flow_start_capped(s->net, NULL, NULL, 0, bytes, 0, 0, s->local_bw, op);
  if (st != DS_OK) fail(s, st);
}

/* Times worker w's host entries from program entry j on, up to the next
 * sync (j itself may be one), the first starting at `at`: the host threads
 * run them one after another, ahead of the GPU (nothing they launch holds
 * them back), so their times are known from there (build_program). */
static void time_host(struct ps_sim *s, int32_t w, int32_t j, int64_t at) {
  size_t base = block(s, s->iter[w]);
  int64_t from = -1;
  for (int32_t i = j; i < s->y.per_w; i++) {
    const struct entry *e = &s->prog[i];
    if (!e->host) continue;
    if (from >= 0 && e->sync) break;
    if (from < 0) from = e->host_from_ns;
    size_t op = base + ix_prog(&s->y, w, i);
    s->start[op] = at + e->host_from_ns - from;
    s->end[op] = at + e->host_to_ns - from;
  }
}

/* The worker's step starts now (its pulls in): its host launches up to the
 * first sync are timed from here. */
static void begin_step(struct ps_sim *s, int32_t w) {
  time_host(s, w, 0, ds_engine_now(s->eng));
}

/* Entry j is a sync whose kernel, the entry before it, has just ended: the
 * host's wait ends now, or when its own work before the sync does, and it
 * goes on with the launches up to the next sync. */
static void end_sync(struct ps_sim *s, int32_t w, int32_t j) {
  size_t base = block(s, s->iter[w]);
  int64_t at = ds_engine_now(s->eng);
  for (int32_t i = j - 1; i >= 0; i--)
    if (s->prog[i].host) {
      int64_t e = s->end[base + ix_prog(&s->y, w, i)];
      if (e > at) at = e;
      break;
    }
  time_host(s, w, j, at);
}

/* A worker's compute op starts when the op before it has ended and its
 * host launch, the program's entry before it when it has one, has. */
static void start_compute(struct ps_sim *s, int32_t w) {
  size_t op = block(s, s->iter[w]) + ix_prog(&s->y, w, s->pos[w]);
  int64_t start = ds_engine_now(s->eng);
  if (s->pos[w] > 0 && s->prog[s->pos[w] - 1].host && s->end[op - 1] > start)
    start = s->end[op - 1];
  s->start[op] = start;
  double ns = s->all->ops[op].dur_us * 1000.0 * s->scale[op];
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .a = w, .b = (int64_t)op};
  ds_status st = ds_engine_schedule(s->eng, start + ds_units_round_ns(ns), &ev, NULL);
  if (st != DS_OK) fail(s, st);
}

static void start_pull(struct ps_sim *s, int32_t iter, int32_t w, int32_t k) {
  s->pulled[(size_t)w * (size_t)s->y.K + (size_t)k] = s->version[k];
  start_flow(s, block(s, iter) + ix_pull(&s->y, w, k), w, k, 1);
}

/* Update op u (a global index) has been applied on server k. */
static void update_done(struct ps_sim *s, size_t u, int32_t k) {
  size_t local = u % s->y.n_step;
  int32_t iter = (int32_t)(u / s->y.n_step);
  s->busy[k] = 0;
  s->version[k]++;
  if (s->opt->mode == DS_PS_SYNC) {
    for (int32_t w = 0; w < s->y.W; w++) start_pull(s, iter, w, k);
  } else {
    size_t base = (size_t)s->y.W * (size_t)s->y.per_w;
    int32_t w = (int32_t)((local - base) / (size_t)s->y.K);
    start_pull(s, iter, w, k);
  }
  try_update(s, k);
}

static void try_update(struct ps_sim *s, int32_t k) {
  if (s->busy[k] || s->q_len[k] == 0) return;
  size_t qcap = (size_t)s->y.W + 1;
  size_t u = s->queue[(size_t)k * qcap + (size_t)s->q_head[k]];
  s->q_head[k] = (int32_t)(((size_t)s->q_head[k] + 1) % qcap);
  s->q_len[k]--;
  s->busy[k] = 1;
  if (s->opt->mode == DS_PS_ASYNC) {
    size_t base = (size_t)s->y.W * (size_t)s->y.per_w;
    int32_t w = (int32_t)((u % s->y.n_step - base) / (size_t)s->y.K);
    int64_t stale = s->version[k] - s->pulled[(size_t)w * (size_t)s->y.K + (size_t)k];
    s->stale_sum += (double)stale;
    if (stale > s->stale_max) s->stale_max = stale;
  }
  s->n_updates++;
  int64_t now = ds_engine_now(s->eng);
  s->start[u] = now;
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .a = -1 - k, .b = (int64_t)u};
  ds_status st = ds_engine_schedule(
      s->eng, now + ds_units_round_ns(s->all->ops[u].dur_us * 1000.0), &ev, NULL);
  if (st != DS_OK) fail(s, st);
}

static void enqueue_update(struct ps_sim *s, int32_t k, size_t u) {
  size_t qcap = (size_t)s->y.W + 1;
  if ((size_t)s->q_len[k] + 1 >= qcap) {
    fail(s, DS_EINTERNAL);
    return;
  }
  s->queue[(size_t)k * qcap + ((size_t)s->q_head[k] + (size_t)s->q_len[k]) % qcap] = u;
  s->q_len[k]++;
  try_update(s, k);
}

/* Issues the pushes at the worker's position in its program, then starts
 * its next compute op, if any: pushes never hold compute back. */
static void advance(struct ps_sim *s, int32_t w);

/* A worker's step ends once its program has run and every pull has
 * arrived (per layer, a server holding only late layers may answer before
 * the worker's backward is over); then its next step starts. */
static void maybe_finish(struct ps_sim *s, int32_t w) {
  if (s->pos[w] < s->y.per_w || s->pulls_left[w] > 0) return;
  int32_t iter = s->iter[w];
  s->iter_end[(size_t)w * (size_t)s->opt->iters + (size_t)iter] = ds_engine_now(s->eng);
  if (iter + 1 >= s->opt->iters) return;
  s->iter[w] = iter + 1;
  s->pos[w] = 0;
  s->pulls_left[w] = s->y.K;
  begin_step(s, w);
  advance(s, w);
}

static void advance(struct ps_sim *s, int32_t w) {
  size_t base = block(s, s->iter[w]);
  while (s->pos[w] < s->y.per_w &&
         (s->prog[s->pos[w]].kind == DS_OP_PUSH || s->prog[s->pos[w]].host)) {
    const struct entry *e = &s->prog[s->pos[w]];
    if (!e->host) start_flow(s, base + ix_prog(&s->y, w, s->pos[w]), w, e->k, 0);
    /* a sync follows its layer's kernel, which has just ended (a sync is
     * never first); a launch was timed by begin_step or end_sync */
    if (e->sync) end_sync(s, w, s->pos[w]);
    s->pos[w]++;
  }
  if (s->pos[w] < s->y.per_w) start_compute(s, w);
  else maybe_finish(s, w);
}

static void compute_done(struct ps_sim *s, int32_t w, size_t op) {
  s->end[op] = ds_engine_now(s->eng);
  s->pos[w]++;
  advance(s, w);
}

static void on_flow_done(void *owner, uint64_t tag) {
  struct ps_sim *s = owner;
  size_t op = (size_t)tag;
  const struct ds_op *o = &s->all->ops[op];
  int32_t iter = (int32_t)(op / s->y.n_step);
  int32_t k = o->bucket;
  s->end[op] = ds_engine_now(s->eng);
  if (o->kind == DS_OP_PUSH) {
    /* an update waits for every piece: the worker's (async) or everyone's */
    if (s->opt->mode == DS_PS_ASYNC) {
      int32_t *n = &s->arrived[(size_t)o->rank * (size_t)s->y.K + (size_t)k];
      if (++*n < s->pieces[k]) return;
      *n = 0;
      enqueue_update(s, k, block(s, iter) + ix_update(&s->y, o->rank, k));
    } else if (++s->arrived[k] == s->y.W * s->pieces[k]) {
      s->arrived[k] = 0;
      enqueue_update(s, k, block(s, iter) + ix_update(&s->y, 0, k));
    }
    return;
  }
  s->pulls_left[o->rank]--;
  maybe_finish(s, o->rank);
}

static void handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  struct ps_sim *s = ctx;
  (void)eng;
  if (ev->kind != DS_EV_OP_DONE) {
    ds_net_handle_event(s->net, ev);
    return;
  }
  size_t op = (size_t)ev->b;
  if (ev->a >= 0) {
    compute_done(s, ev->a, op);
  } else {
    s->end[op] = ds_engine_now(s->eng);
    update_done(s, op, -1 - ev->a);
  }
}

/* ---- measurement ---- */

/* The per-worker step times, their throughput and the staleness; the
 * iteration metrics are analysis/metrics.c's, on the ops' times (ps.h). */
static ds_status measure(struct ps_sim *s, struct ds_ps_result *r) {
  const struct layout *y = &s->y;
  int32_t it = s->opt->iters;
  r->worker_step_ms = malloc((size_t)y->W * sizeof *r->worker_step_ms);
  if (!r->worker_step_ms) return DS_ENOMEM;
  double sum_step = 0, rate = 0;
  for (int32_t w = 0; w < y->W; w++) {
    const int64_t *e = &s->iter_end[(size_t)w * (size_t)it];
    double step_ms = (double)(e[it - 1] - e[0]) / 1e6 / (it - 1);
    r->worker_step_ms[w] = step_ms;
    sum_step += step_ms;
    if (step_ms > 0) rate += (double)s->opt->batch / (step_ms / 1e3);
  }
  r->mean_step_ms = sum_step / y->W;
  r->samples_per_s = rate;
  r->n_updates = s->n_updates;
  r->staleness_mean = s->n_updates ? s->stale_sum / (double)s->n_updates : 0;
  r->staleness_max = s->stale_max;
  r->events = ds_engine_fired(s->eng);
  return DS_OK;
}

/* ---- setup ---- */

static ds_status check_options(const struct ds_topo *topo, const struct ds_ps_options *o,
                               struct ds_err *err) {
  if (o->world_size < 1 || o->world_size > topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE,
                      "option --world-size: %d ranks but topology %s has %d GPUs",
                      o->world_size, topo->name, topo->n_gpus);
  if (o->iters < 2)
    return ds_err_set(err, DS_EUSAGE,
                      "option --iters: the parameter server needs at least 2 steps, got %d",
                      o->iters);
  if (o->batch < 1)
    return ds_err_set(err, DS_EUSAGE, "option --batch: expected >= 1, got %lld",
                      (long long)o->batch);
  for (int32_t w = 0; o->rank_factor && w < o->world_size; w++)
    if (!(o->rank_factor[w] > 0) || !isfinite(o->rank_factor[w]))
      return ds_err_set(err, DS_EUSAGE,
                        "option --straggler: rank %d: expected a factor > 0, got %g", w,
                        o->rank_factor[w]);
  return DS_OK;
}

static ds_status alloc_state(struct ps_sim *s) {
  size_t W = (size_t)s->y.W, K = (size_t)s->y.K, n = s->all->n_ops;
  s->scale = malloc(n * sizeof *s->scale);
  s->iter = calloc(W, sizeof *s->iter);
  s->pos = calloc(W, sizeof *s->pos);
  s->pulls_left = malloc(W * sizeof *s->pulls_left);
  s->iter_end = calloc(W * (size_t)s->opt->iters, sizeof *s->iter_end);
  s->arrived = calloc(W * K, sizeof *s->arrived);
  s->version = calloc(K, sizeof *s->version);
  s->pulled = calloc(W * K, sizeof *s->pulled);
  s->queue = malloc(K * (W + 1) * sizeof *s->queue);
  s->q_head = calloc(K, sizeof *s->q_head);
  s->q_len = calloc(K, sizeof *s->q_len);
  s->busy = calloc(K, 1);
  if (!s->scale || !s->iter || !s->pos || !s->pulls_left || !s->iter_end || !s->arrived ||
      !s->version || !s->pulled || !s->queue || !s->q_head || !s->q_len || !s->busy)
    return DS_ENOMEM;
  return DS_OK;
}

static void free_state(struct ps_sim *s) {
  ds_net_free(s->net);
  ds_engine_free(s->eng);
  ds_ps_shards_release(&s->sh);
  free(s->scale);
  free(s->links);
  free(s->routes);
  free(s->iter);
  free(s->pos);
  free(s->pulls_left);
  free(s->iter_end);
  free(s->arrived);
  free(s->version);
  free(s->pulled);
  free(s->queue);
  free(s->q_head);
  free(s->q_len);
  free(s->busy);
  free(s->prog);
  free(s->pieces);
  free(s->last_push);
  free(s->update_extra_ns);
}

ds_status ds_ps_run(struct ds_topo *topo, const struct ds_model *model,
                    const struct ds_compute *compute, const struct ds_ps_options *o,
                    struct ds_ps_result *r, struct ds_err *err) {
  struct ps_sim s = {.topo = topo, .model = model, .c = compute, .opt = o};
  ds_status st;
  memset(r, 0, sizeof *r);
  DS_CHECK(check_options(topo, o, err));
  DS_CHECK(ds_ps_shard(model, o->n_servers, o->world_size, &s.sh, err));
  DS_CHECK_GOTO(build_program(&s), st, oom);
  s.update_extra_ns = update_extra_ns(model, compute, &s.sh, o->mode, o->world_size);
  if (!s.update_extra_ns) {
    st = DS_ENOMEM;
    goto oom;
  }
  layout_init(&s.y, o->world_size, o->n_servers, s.n_prog, o->mode);
  DS_CHECK_GOTO(build_routes(&s, err), st, out);
  DS_CHECK_GOTO(ds_schedule_new(o->world_size, &r->step), st, oom);
  DS_CHECK_GOTO(ds_schedule_new(o->world_size, &r->all), st, oom);
  DS_CHECK_GOTO(build_iteration(&s, 0, -1, r->step), st, oom);
  for (int32_t i = 0; i < o->iters; i++)
    DS_CHECK_GOTO(build_iteration(&s, (int64_t)i * (int64_t)s.y.n_step,
                                  i ? (int64_t)(i - 1) * (int64_t)s.y.n_step : -1, r->all),
                  st, oom);
  DS_CHECK_GOTO(ds_schedule_validate(r->all, err), st, out);
  s.all = r->all;
  r->op_start_ns = malloc(r->all->n_ops * sizeof *r->op_start_ns);
  r->op_end_ns = malloc(r->all->n_ops * sizeof *r->op_end_ns);
  if (!r->op_start_ns || !r->op_end_ns) {
    st = DS_ENOMEM;
    goto oom;
  }
  s.start = r->op_start_ns;
  s.end = r->op_end_ns;
  for (size_t i = 0; i < r->all->n_ops; i++) s.start[i] = s.end[i] = -1;
  DS_CHECK_GOTO(alloc_state(&s), st, oom);
  if (o->jitter) DS_CHECK_GOTO(ds_jitter_fill(r->all, o->jitter_cv, o->seed, s.scale), st, oom);
  else for (size_t i = 0; i < r->all->n_ops; i++) s.scale[i] = 1.0;
  for (size_t i = 0; o->rank_factor && i < r->all->n_ops; i++)
    if (r->all->ops[i].stream == DS_STREAM_COMPUTE)
      s.scale[i] *= o->rank_factor[r->all->ops[i].rank];
  DS_CHECK_GOTO(ds_engine_new(0, handle, &s, &s.eng), st, oom);
  DS_CHECK_GOTO(ds_net_new(topo, s.eng, o->net_mode, on_flow_done, NULL, &s, &s.net), st, oom);
  for (int32_t w = 0; w < s.y.W; w++) {
    s.pulls_left[w] = s.y.K;
    begin_step(&s, w);
    advance(&s, w);
  }
  if (ds_engine_run(s.eng, INT64_MAX) != DS_OK || ds_engine_overflowed(s.eng)) {
    st = ds_err_set(err, DS_EINPUT, "%s", DS_ENGINE_OVERFLOW_MSG);
    goto out;
  }
  if (s.failure != DS_OK) {
    st = ds_err_set(err, s.failure, "parameter server simulation failed: %s",
                    ds_status_message(s.failure));
    goto out;
  }
  for (size_t i = 0; i < r->all->n_ops; i++)
    if (s.end[i] < 0) {
      st = ds_err_set(err, DS_EINTERNAL, "parameter server: op %zu (%s %s) never ran", i,
                      ds_op_kind_name(r->all->ops[i].kind), r->all->ops[i].name);
      goto out;
    }
  DS_CHECK_GOTO(measure(&s, r), st, oom);
  st = DS_OK;
  goto out;
oom:
  ds_err_set(err, st, "parameter server: %s", ds_status_message(st));
out:
  free_state(&s);
  if (st != DS_OK) ds_ps_result_release(r);
  return st;
}

void ds_ps_result_release(struct ds_ps_result *r) {
  if (!r) return;
  ds_schedule_free(r->step);
  ds_schedule_free(r->all);
  free(r->op_start_ns);
  free(r->op_end_ns);
  free(r->worker_step_ms);
  memset(r, 0, sizeof *r);
}
