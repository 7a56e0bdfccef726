/*
 * Executor of schedules on the discrete-event engine (see exec.h).
 *
 * Per run it builds, from the schedule: the number of unfinished
 * dependencies of every op, the reverse edges (who waits for whom), one
 * in-order queue per (rank, stream), and one collective instance per coll
 * id. Invariant: a (rank, stream) runs at most one op at a time, and its
 * head op is started the moment its last dependency ends.
 */
#include "sim/train/exec.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "sim/coll/nccl_model.h"
#include "sim/train/interference.h"
#include "base/units.h"

#define TAG_SHIFT 32

struct coll_inst {
  int64_t coll_id;
  int32_t n;          /* members */
  uint32_t *op_of;    /* [n] op index of each member (ring position) */
  struct ds_coll *coll;
};

struct ring_cache {
  struct ds_ring ring;
  int used;
};

struct ds_exec {
  struct ds_topo *topo;
  struct ds_exec_options opt;
  struct ds_engine *eng;
  struct ds_net *net;
  struct ring_cache *rings;
  int32_t n_rings;
  struct ds_err *err; /* of the running call */
  ds_status failure;  /* first failure inside a handler */
  /* per run */
  struct ds_schedule *sched;
  int64_t *op_start;
  int64_t *op_end;
  int32_t *deps_left;
  uint32_t *waiter_first; /* CSR: ops waiting for op i */
  uint32_t *waiters;
  uint32_t *queue_first;  /* CSR: ops of (rank, stream) q in order */
  uint32_t *queue;
  uint32_t *queue_head;   /* next position to start in each queue */
  uint8_t *queue_busy;
  uint8_t *released;
  int32_t *comm_busy;     /* collectives running per rank */
  struct ds_coll_load *held; /* per rank: what its running collectives hold */
  struct running *running;   /* per rank: its compute stream's running op */
  int32_t *coll_of_op;    /* instance index, -1 */
  int32_t *member_of_op;
  struct coll_inst *colls;
  int32_t n_colls;
  size_t ops_done;
  int64_t *rank_time;
};

/* A compute-stream op in flight: its work left at full speed, the rate it
 * runs at since `since`, and its completion event. */
struct running {
  uint32_t op;        /* UINT32_MAX: none */
  int memory_bound;
  double left_ns;     /* at factor 1 */
  double factor;      /* >= 1 */
  int64_t since;
  uint64_t handle;
};

static void fail(struct ds_exec *ex, ds_status st) {
  if (ex->failure == DS_OK) ex->failure = st;
}

static uint32_t queue_index(int32_t rank, enum ds_stream s) {
  return (uint32_t)rank * DS_STREAM_COUNT + (uint32_t)s;
}

static void try_start_queue(struct ds_exec *ex, uint32_t q);

/* Schedules the running op of rank r to end when its work left is done at
 * its factor. */
static void schedule_running(struct ds_exec *ex, int32_t r) {
  struct running *run = &ex->running[r];
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .b = run->op};
  int64_t now = ds_engine_now(ex->eng);
  ds_status st = ds_engine_schedule(ex->eng, now + ds_units_round_ns(run->left_ns * run->factor),
                                    &ev, &run->handle);
  if (st != DS_OK) fail(ex, st);
}

/* A collective op o starts (sign +1) or ends (-1) on its rank: what it
 * holds changes, and so does the rate of the compute op running there. */
static void change_load(struct ds_exec *ex, const struct ds_op *o, int sign) {
  if (!ex->opt.compute) return;
  struct ds_coll_load l = ds_interference_load(ex->opt.nccl, o);
  struct ds_coll_load *h = &ex->held[o->rank];
  h->sms += sign * l.sms;
  h->hbm_bytes_per_s += sign * l.hbm_bytes_per_s;
  if (ex->comm_busy[o->rank] == 0) *h = (struct ds_coll_load){0, 0}; /* no drift */
  struct running *run = &ex->running[o->rank];
  if (run->op == UINT32_MAX) return;
  double f = ds_interference_factor(ex->opt.compute, run->memory_bound, *h,
                                    ex->comm_busy[o->rank] > 0);
  if (f == run->factor) return;
  int64_t now = ds_engine_now(ex->eng);
  run->left_ns -= (double)(now - run->since) / run->factor;
  if (run->left_ns < 0) run->left_ns = 0;
  run->factor = f;
  run->since = now;
  ds_engine_cancel(ex->eng, run->handle);
  schedule_running(ex, o->rank);
}

static void finish_op(struct ds_exec *ex, uint32_t op) {
  const struct ds_op *o = &ex->sched->ops[op];
  int64_t now = ds_engine_now(ex->eng);
  uint32_t q = queue_index(o->rank, o->stream);
  ex->op_end[op] = now;
  ex->ops_done++;
  if (now > ex->rank_time[o->rank]) ex->rank_time[o->rank] = now;
  if (ex->running[o->rank].op == op) ex->running[o->rank].op = UINT32_MAX;
  if (ex->coll_of_op[op] >= 0) {
    ex->comm_busy[o->rank]--;
    change_load(ex, o, -1);
  }
  ex->queue_busy[q] = 0;
  ex->queue_head[q]++;
  for (uint32_t k = ex->waiter_first[op]; k < ex->waiter_first[op + 1]; k++) {
    uint32_t w = ex->waiters[k];
    if (--ex->deps_left[w] == 0) {
      const struct ds_op *wo = &ex->sched->ops[w];
      try_start_queue(ex, queue_index(wo->rank, wo->stream));
    }
  }
  try_start_queue(ex, q);
}

static void start_op(struct ds_exec *ex, uint32_t op) {
  const struct ds_op *o = &ex->sched->ops[op];
  int64_t now = ds_engine_now(ex->eng);
  ex->op_start[op] = now;
  if (ex->coll_of_op[op] >= 0) { /* a collective, or a send/recv */
    struct coll_inst *ci = &ex->colls[ex->coll_of_op[op]];
    ex->comm_busy[o->rank]++;
    change_load(ex, o, +1);
    ds_status st = ds_coll_enter(ci->coll, ex->member_of_op[op]);
    if (st != DS_OK) fail(ex, st);
    return;
  }
  double dur_ns = o->dur_us * 1000.0;
  if (ex->opt.dur_scale) dur_ns *= ex->opt.dur_scale[op];
  if (o->stream == DS_STREAM_COMPUTE && ex->opt.compute) {
    struct running *run = &ex->running[o->rank];
    run->op = op;
    enum ds_layer_class cls = DS_LAYER_UNKNOWN;
    if (ex->opt.model && (o->kind == DS_OP_FWD || o->kind == DS_OP_BWD) && o->layer >= 0 &&
        o->layer < ex->opt.model->n_layers)
      cls = ex->opt.model->layers[o->layer].cls;
    run->memory_bound = ds_interference_memory_bound(ex->opt.compute, cls, o, dur_ns);
    run->left_ns = dur_ns;
    run->factor = ds_interference_factor(ex->opt.compute, run->memory_bound,
                                         ex->held[o->rank], ex->comm_busy[o->rank] > 0);
    run->since = now;
    schedule_running(ex, o->rank);
    return;
  }
  if (o->stream == DS_STREAM_COMPUTE && ex->comm_busy[o->rank] > 0)
    dur_ns *= 1.0 + ex->topo->compute.comm_interference;
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .b = op};
  ds_status st = ds_engine_schedule(ex->eng, now + ds_units_round_ns(dur_ns), &ev, NULL);
  if (st != DS_OK) fail(ex, st);
}

static void try_start_queue(struct ds_exec *ex, uint32_t q) {
  uint32_t rank = q / DS_STREAM_COUNT;
  if (ex->queue_busy[q] || !ex->released[rank]) return;
  uint32_t pos = ex->queue_first[q] + ex->queue_head[q];
  if (pos >= ex->queue_first[q + 1]) return;
  uint32_t op = ex->queue[pos];
  if (ex->deps_left[op] != 0) return;
  ex->queue_busy[q] = 1;
  start_op(ex, op);
}

static void on_member_done(void *owner, int32_t member);

/* Collective callbacks carry the instance through a small trampoline so
 * that the coll module only knows (owner, member). */
struct coll_owner {
  struct ds_exec *ex;
  int32_t inst;
};

static void on_member_done(void *owner, int32_t member) {
  struct coll_owner *co = owner;
  finish_op(co->ex, co->ex->colls[co->inst].op_of[member]);
}

static void on_flow_sent(void *owner, uint64_t tag) {
  struct ds_exec *ex = owner;
  int32_t inst = (int32_t)(tag >> TAG_SHIFT);
  int32_t member = (int32_t)(tag & 0xffffffffu);
  ds_status st = ds_coll_flow_sent(ex->colls[inst].coll, member);
  if (st != DS_OK) fail(ex, st);
}

static void on_flow_done(void *owner, uint64_t tag) {
  struct ds_exec *ex = owner;
  int32_t inst = (int32_t)(tag >> TAG_SHIFT);
  int32_t member = (int32_t)(tag & 0xffffffffu);
  ds_status st = ds_coll_flow_done(ex->colls[inst].coll, member);
  if (st != DS_OK) fail(ex, st);
}

static void handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  struct ds_exec *ex = ctx;
  (void)eng;
  switch (ev->kind) {
  case DS_EV_OP_DONE:
    finish_op(ex, (uint32_t)ev->b);
    break;
  case DS_EV_RANK_RELEASE:
    ex->released[ev->a] = 1;
    for (uint32_t s = 0; s < DS_STREAM_COUNT; s++)
      try_start_queue(ex, queue_index(ev->a, (enum ds_stream)s));
    break;
  default:
    ds_net_handle_event(ex->net, ev);
    break;
  }
}

ds_status ds_exec_new(struct ds_topo *topo, const struct ds_exec_options *opt,
                      struct ds_exec **out, struct ds_err *err) {
  struct ds_exec *ex = calloc(1, sizeof *ex);
  if (!ex) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  ex->topo = topo;
  ex->opt = *opt;
  if (ex->opt.ring_chunks < 1) ex->opt.ring_chunks = 1;
  ds_status st = ds_engine_new(1024, handle, ex, &ex->eng);
  if (st == DS_OK)
    st = ds_net_new(topo, ex->eng, opt->net_mode, on_flow_done,
                    on_flow_sent, ex, &ex->net);
  if (st != DS_OK) {
    ds_exec_free(ex);
    return ds_err_set(err, st, "executor: out of memory");
  }
  *out = ex;
  return DS_OK;
}

static void free_run(struct ds_exec *ex) {
  for (int32_t i = 0; i < ex->n_colls; i++) {
    ds_coll_free(ex->colls[i].coll);
    free(ex->colls[i].op_of);
  }
  free(ex->colls);
  ex->colls = NULL;
  ex->n_colls = 0;
  free(ex->deps_left);
  free(ex->waiter_first);
  free(ex->waiters);
  free(ex->queue_first);
  free(ex->queue);
  free(ex->queue_head);
  free(ex->queue_busy);
  free(ex->released);
  free(ex->comm_busy);
  free(ex->held);
  free(ex->running);
  free(ex->coll_of_op);
  free(ex->member_of_op);
  ex->deps_left = NULL;
  ex->waiter_first = ex->waiters = ex->queue_first = ex->queue = NULL;
  ex->queue_head = NULL;
  ex->queue_busy = ex->released = NULL;
  ex->comm_busy = ex->coll_of_op = ex->member_of_op = NULL;
  ex->held = NULL;
  ex->running = NULL;
}

void ds_exec_free(struct ds_exec *ex) {
  if (!ex) return;
  free_run(ex);
  for (int32_t i = 0; i < ex->n_rings; i++) ds_ring_release(&ex->rings[i].ring);
  free(ex->rings);
  ds_net_free(ex->net);
  ds_engine_free(ex->eng);
  free(ex);
}

uint64_t ds_exec_events(const struct ds_exec *ex) { return ds_engine_fired(ex->eng); }

/* Returns a ring over gpus, built once per distinct member list. */
static ds_status get_ring(struct ds_exec *ex, const int32_t *gpus, int32_t n,
                          const struct ds_ring **out, struct ds_err *err) {
  const struct ds_ring *pre = ex->opt.prebuilt_ring;
  if (pre && pre->n == n && memcmp(pre->gpus, gpus, (size_t)n * sizeof *gpus) == 0) {
    *out = pre;
    return DS_OK;
  }
  for (int32_t i = 0; i < ex->n_rings; i++) {
    struct ds_ring *r = &ex->rings[i].ring;
    if (r->n == n && memcmp(r->gpus, gpus, (size_t)n * sizeof *gpus) == 0) {
      *out = r;
      return DS_OK;
    }
  }
  struct ring_cache *rc = realloc(ex->rings, ((size_t)ex->n_rings + 1) * sizeof *rc);
  if (!rc) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  ex->rings = rc;
  DS_CHECK(ds_ring_build_rails(ex->topo, gpus, n, &rc[ex->n_rings].ring, err));
  *out = &rc[ex->n_rings++].ring;
  return DS_OK;
}

struct coll_key {
  int64_t coll;
  int32_t rank;
  uint32_t op;
};

static int cmp_coll_key(const void *a, const void *b) {
  const struct coll_key *x = a, *y = b;
  if (x->coll != y->coll) return x->coll < y->coll ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A send or a recv, by (source rank, destination rank, schedule order). */
struct p2p_key {
  int32_t src, dst;
  uint32_t op;
};

static int cmp_p2p_key(const void *a, const void *b) {
  const struct p2p_key *x = a, *y = b;
  if (x->src != y->src) return x->src < y->src ? -1 : 1;
  if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
  return (x->op > y->op) - (x->op < y->op);
}

static int is_p2p(enum ds_op_kind k) { return k == DS_OP_SEND || k == DS_OP_RECV; }

/* The collective a schedule kind runs; DS_COLL_KIND_COUNT for none. */
static enum ds_coll_kind coll_kind_of(enum ds_op_kind k) {
  switch (k) {
  case DS_OP_ALLREDUCE: return DS_COLL_ALLREDUCE;
  case DS_OP_BROADCAST: return DS_COLL_BROADCAST;
  case DS_OP_REDUCE: return DS_COLL_REDUCE;
  case DS_OP_ALLGATHER: return DS_COLL_ALLGATHER;
  case DS_OP_REDUCESCATTER: return DS_COLL_REDUCESCATTER;
  case DS_OP_GATHER: return DS_COLL_GATHER;
  case DS_OP_SCATTER: return DS_COLL_SCATTER;
  default: return DS_COLL_KIND_COUNT;
  }
}

/* Registers instance idx over the ops ops[0..n) (member k runs on rank
 * gpus[k]) and creates its collective from *spec (ring and tag filled here). */
static ds_status add_inst(struct ds_exec *ex, struct coll_owner *owners, int64_t coll_id,
                          const uint32_t *ops, const int32_t *gpus, int32_t n,
                          struct ds_coll_spec *spec, struct ds_err *err) {
  int32_t idx = ex->n_colls;
  struct coll_inst *ci = &ex->colls[ex->n_colls++];
  ci->coll_id = coll_id;
  ci->n = n;
  ci->op_of = malloc((size_t)n * sizeof *ci->op_of);
  if (!ci->op_of) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  for (int32_t k = 0; k < n; k++) {
    ci->op_of[k] = ops[k];
    ex->coll_of_op[ops[k]] = idx;
    ex->member_of_op[ops[k]] = k;
  }
  DS_CHECK(get_ring(ex, gpus, n, &spec->ring, err));
  owners[idx] = (struct coll_owner){ex, idx};
  spec->topo = ex->topo;
  spec->net = ex->net;
  spec->tag_base = (uint64_t)idx << TAG_SHIFT;
  spec->on_done = on_member_done;
  spec->owner = &owners[idx];
  return ds_coll_new(spec, &ci->coll, err);
}

/* One instance per coll id of a collective kind. */
static ds_status build_group(struct ds_exec *ex, struct coll_owner *owners,
                             const struct coll_key *keys, int32_t n, uint32_t *ops,
                             int32_t *gpus, struct ds_err *err) {
  struct ds_schedule *s = ex->sched;
  const struct ds_op *o = &s->ops[keys[0].op];
  enum ds_coll_kind ck = coll_kind_of(o->kind);
  const struct ds_coll_desc *d = ds_coll_desc_of(ck);
  struct ds_coll_spec spec = {.kind = ck, .model = ex->opt.coll_model,
                              .chunks = ex->opt.ring_chunks, .bytes = o->bytes, .root = -1};
  struct ds_coll_proto cp;
  if (!d)
    return ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s is not a collective but has coll %" PRId64
                      " (collectives: %s; send/recv pair without coll ids)",
                      o->id, ds_op_kind_name(o->kind), o->coll, ds_coll_kind_names());
  if (ck == DS_COLL_ALLREDUCE) {
    enum ds_proto proto;
    if (ds_allreduce_algo_parse(o->algo, &spec.algo, &proto) != DS_OK)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": allreduce with algo '%s' is not simulated (%s; "
                        "ring, tree and nvls also with /LL, /LL128 or /Simple)",
                        o->id, o->algo, ds_ar_algo_names());
    if (proto < DS_PROTO_COUNT && (!ex->opt.nccl || ex->opt.nccl->nranks != n))
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": algo '%s' needs NCCL's model for a ring of %d "
                        "ranks, and %s", o->id, o->algo, n,
                        ex->opt.nccl ? "the model describes another ring size"
                                     : "none is available (unknown GPU architecture?)");
    const char *why;
    if (proto < DS_PROTO_COUNT && !ds_nccl_algo_available(ex->opt.nccl, spec.algo, proto, &why))
      return ds_err_set(err, DS_EUSAGE, "op %" PRId64 ": algo '%s' cannot run here: %s",
                        o->id, o->algo, why);
    if (proto < DS_PROTO_COUNT) {
      ds_nccl_algo_proto(ex->opt.nccl, spec.algo, proto, o->bytes, &cp);
      spec.proto = &cp;
    }
  } else if (o->algo[0] && strcmp(o->algo, d->algo) != 0) {
    return ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s with algo '%s' is not simulated by this "
                      "version (%s runs '%s'; NCCL protocols: allreduce only)",
                      o->id, d->name, o->algo, d->name, d->algo);
  }
  for (int32_t k = 0; k < n; k++) {
    const struct ds_op *m = &s->ops[keys[k].op];
    ops[k] = keys[k].op;
    gpus[k] = keys[k].rank;
    if (d->rooted && m->root == o->root && m->rank == o->root) spec.root = k;
    if (d->rooted && m->root != o->root)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": %s of coll %" PRId64 " has root %d but op %"
                        PRId64 " of the same coll has root %d", m->id, d->name, o->coll,
                        m->root, o->id, o->root);
  }
  if (d->rooted && spec.root < 0)
    return ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s of coll %" PRId64 " has root %d, which is "
                      "not one of its ranks", o->id, d->name, o->coll, o->root);
  if (ck == DS_COLL_BROADCAST || ck == DS_COLL_REDUCE)
    spec.chunks = ds_coll_chain_chunks(o->bytes, ex->opt.ring_chunks);
  return add_inst(ex, owners, o->coll, ops, gpus, n, &spec, err);
}

/* Send/recv pairs: the k-th send from rank a to rank b (its root is b)
 * meets the k-th recv on b from a (its root is a), in schedule order, as
 * MPI and NCCL match point-to-point messages; `coll` plays no part. */
static ds_status build_p2p(struct ds_exec *ex, struct coll_owner *owners,
                           struct ds_err *err) {
  struct ds_schedule *s = ex->sched;
  size_t n_send = 0, n_recv = 0, n = 0;
  for (size_t i = 0; i < s->n_ops; i++) n += is_p2p(s->ops[i].kind);
  if (n == 0) return DS_OK;
  struct p2p_key *keys = malloc(n * sizeof *keys);
  if (!keys) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  ds_status st = DS_OK;
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (!is_p2p(o->kind)) continue;
    if (o->root < 0 || o->root == o->rank) {
      st = ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s needs its peer rank in root (a rank other "
                      "than its own %d), got %d", o->id, ds_op_kind_name(o->kind),
                      o->rank, o->root);
      goto out;
    }
    n_send += o->kind == DS_OP_SEND;
  }
  /* sends first, then recvs, each sorted by (src, dst, order) */
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (o->kind == DS_OP_SEND)
      keys[n_recv++] = (struct p2p_key){o->rank, o->root, (uint32_t)i};
  }
  n_recv = 0;
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (o->kind == DS_OP_RECV)
      keys[n_send + n_recv++] = (struct p2p_key){o->root, o->rank, (uint32_t)i};
  }
  qsort(keys, n_send, sizeof *keys, cmp_p2p_key);
  qsort(keys + n_send, n_recv, sizeof *keys, cmp_p2p_key);
  size_t a = 0, b = n_send;
  while (a < n_send || b < n) {
    const struct p2p_key *x = a < n_send ? &keys[a] : NULL, *y = b < n ? &keys[b] : NULL;
    if (!x || !y || x->src != y->src || x->dst != y->dst) {
      /* the side with the smaller (src, dst) has no partner */
      const struct p2p_key *lone =
          !y ? x : !x ? y : (x->src < y->src || (x->src == y->src && x->dst < y->dst)) ? x : y;
      const struct ds_op *o = &s->ops[lone->op];
      st = ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s on rank %d %s rank %d has no matching %s "
                      "(the k-th send from a to b meets the k-th recv on b from a)",
                      o->id, ds_op_kind_name(o->kind), o->rank,
                      o->kind == DS_OP_SEND ? "to" : "from", o->root,
                      o->kind == DS_OP_SEND ? "recv" : "send");
      goto out;
    }
    const struct ds_op *so = &s->ops[keys[a].op], *ro = &s->ops[keys[b].op];
    if (so->bytes != ro->bytes) {
      st = ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": send of %.17g bytes meets recv op %" PRId64
                      " of %.17g bytes", so->id, so->bytes, ro->id, ro->bytes);
      goto out;
    }
    uint32_t ops[2] = {keys[a].op, keys[b].op};
    int32_t gpus[2] = {so->rank, ro->rank};
    struct ds_coll_spec spec = {.kind = DS_COLL_SEND, .model = ex->opt.coll_model,
                                .chunks = 1, .bytes = so->bytes, .root = 0};
    st = add_inst(ex, owners, -1, ops, gpus, 2, &spec, err);
    if (st != DS_OK) goto out;
    a++, b++;
  }
out:
  free(keys);
  return st;
}

static ds_status build_colls(struct ds_exec *ex, struct coll_owner **owners,
                             struct ds_err *err) {
  struct ds_schedule *s = ex->sched;
  size_t n_keys = 0, n_p2p = 0;
  for (size_t i = 0; i < s->n_ops; i++) {
    n_p2p += is_p2p(s->ops[i].kind);
    n_keys += s->ops[i].coll >= 0 && !is_p2p(s->ops[i].kind);
  }
  struct coll_key *keys = malloc((n_keys + 1) * sizeof *keys);
  int32_t *gpus = malloc(((size_t)s->world_size + 1) * sizeof *gpus);
  uint32_t *ops = malloc(((size_t)s->world_size + 1) * sizeof *ops);
  ex->colls = calloc(n_keys + n_p2p + 1, sizeof *ex->colls);
  *owners = calloc(n_keys + n_p2p + 1, sizeof **owners);
  ds_status st = DS_OK;
  if (!keys || !gpus || !ops || !ex->colls || !*owners) {
    st = ds_err_set(err, DS_ENOMEM, "executor: out of memory");
    goto out;
  }
  n_keys = 0;
  for (size_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].coll >= 0 && !is_p2p(s->ops[i].kind))
      keys[n_keys++] = (struct coll_key){s->ops[i].coll, s->ops[i].rank, (uint32_t)i};
  qsort(keys, n_keys, sizeof *keys, cmp_coll_key);
  for (size_t i = 0; i < n_keys && st == DS_OK;) {
    size_t j = i;
    while (j < n_keys && keys[j].coll == keys[i].coll) j++;
    st = build_group(ex, *owners, keys + i, (int32_t)(j - i), ops, gpus, err);
    i = j;
  }
  if (st == DS_OK) st = build_p2p(ex, *owners, err);
out:
  free(keys);
  free(gpus);
  free(ops);
  return st;
}

static ds_status build_run(struct ds_exec *ex, struct ds_err *err) {
  struct ds_schedule *s = ex->sched;
  size_t n = s->n_ops;
  size_t nq = (size_t)s->world_size * DS_STREAM_COUNT;
  ex->deps_left = calloc(n + 1, sizeof *ex->deps_left);
  ex->waiter_first = calloc(n + 2, sizeof *ex->waiter_first);
  ex->waiters = malloc((s->n_deps + 1) * sizeof *ex->waiters);
  ex->queue_first = calloc(nq + 2, sizeof *ex->queue_first);
  ex->queue = malloc((n + 1) * sizeof *ex->queue);
  ex->queue_head = calloc(nq + 1, sizeof *ex->queue_head);
  ex->queue_busy = calloc(nq + 1, 1);
  ex->released = calloc((size_t)s->world_size + 1, 1);
  ex->comm_busy = calloc((size_t)s->world_size + 1, sizeof *ex->comm_busy);
  ex->held = calloc((size_t)s->world_size + 1, sizeof *ex->held);
  ex->running = malloc(((size_t)s->world_size + 1) * sizeof *ex->running);
  ex->coll_of_op = malloc((n + 1) * sizeof *ex->coll_of_op);
  ex->member_of_op = malloc((n + 1) * sizeof *ex->member_of_op);
  if (!ex->deps_left || !ex->waiter_first || !ex->waiters || !ex->queue_first ||
      !ex->queue || !ex->queue_head || !ex->queue_busy || !ex->released ||
      !ex->comm_busy || !ex->coll_of_op || !ex->member_of_op || !ex->held || !ex->running)
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  for (int32_t r = 0; r <= s->world_size; r++) ex->running[r].op = UINT32_MAX;
  /* Dependencies were checked by ds_schedule_validate: each names an
   * earlier op of the same rank. */
  for (size_t i = 0; i < n; i++) {
    const struct ds_op *o = &s->ops[i];
    const int64_t *deps = ds_schedule_deps(s, o);
    ex->deps_left[i] = (int32_t)o->dep_count;
    for (uint32_t k = 0; k < o->dep_count; k++) {
      size_t d;
      if (ds_schedule_find(s, deps[k], &d) != 0)
        return ds_err_set(err, DS_EINTERNAL, "op %" PRId64 ": unknown dependency", o->id);
      ex->waiter_first[d + 2]++;
    }
    ex->queue_first[queue_index(o->rank, o->stream) + 2]++;
    ex->coll_of_op[i] = -1;
    ex->member_of_op[i] = -1;
  }
  for (size_t i = 2; i < n + 2; i++) ex->waiter_first[i] += ex->waiter_first[i - 1];
  for (size_t i = 2; i < nq + 2; i++) ex->queue_first[i] += ex->queue_first[i - 1];
  for (size_t i = 0; i < n; i++) {
    const struct ds_op *o = &s->ops[i];
    const int64_t *deps = ds_schedule_deps(s, o);
    for (uint32_t k = 0; k < o->dep_count; k++) {
      size_t d;
      ds_schedule_find(s, deps[k], &d);
      ex->waiters[ex->waiter_first[d + 1]++] = (uint32_t)i;
    }
    ex->queue[ex->queue_first[queue_index(o->rank, o->stream) + 1]++] = (uint32_t)i;
  }
  return DS_OK;
}

ds_status ds_exec_run(struct ds_exec *ex, struct ds_schedule *sched,
                      int64_t *rank_time_ns, int64_t *op_start_ns,
                      int64_t *op_end_ns, struct ds_err *err) {
  struct coll_owner *owners = NULL;
  ds_status st;
  if (sched->world_size > ex->topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE, "schedule has %d ranks but topology %s has %d GPUs",
                      sched->world_size, ex->topo->name, ex->topo->n_gpus);
  ex->sched = sched;
  ex->op_start = op_start_ns;
  ex->op_end = op_end_ns;
  ex->rank_time = rank_time_ns;
  ex->ops_done = 0;
  ex->failure = DS_OK;
  ex->err = err;
  for (size_t i = 0; i < sched->n_ops; i++) op_start_ns[i] = op_end_ns[i] = -1;
  DS_CHECK_GOTO(build_run(ex, err), st, out);
  DS_CHECK_GOTO(build_colls(ex, &owners, err), st, out);
  for (int32_t r = 0; r < sched->world_size; r++) {
    struct ds_event ev = {.kind = DS_EV_RANK_RELEASE, .a = r};
    int64_t t = rank_time_ns[r] > ds_engine_now(ex->eng) ? rank_time_ns[r]
                                                         : ds_engine_now(ex->eng);
    DS_CHECK_GOTO(ds_engine_schedule(ex->eng, t, &ev, NULL), st, out);
  }
  if (ds_engine_run(ex->eng, INT64_MAX) != DS_OK || ds_engine_overflowed(ex->eng)) {
    st = ds_err_set(err, DS_EINPUT, "%s", DS_ENGINE_OVERFLOW_MSG);
    goto out;
  }
  if (ex->failure != DS_OK) {
    st = ds_err_set(err, ex->failure, "simulation failed: %s",
                    ds_status_message(ex->failure));
    goto out;
  }
  if (ex->ops_done != sched->n_ops) {
    for (size_t i = 0; i < sched->n_ops; i++)
      if (op_end_ns[i] < 0) {
        st = ds_err_set(err, DS_EINPUT,
                        "schedule deadlocks: op %" PRId64 " (rank %d, %s %s) never %s",
                        sched->ops[i].id, sched->ops[i].rank,
                        ds_op_kind_name(sched->ops[i].kind), sched->ops[i].name,
                        op_start_ns[i] < 0 ? "starts" : "ends");
        break;
      }
    goto out;
  }
  st = DS_OK;
out:
  free_run(ex);
  free(owners);
  return st;
}
