/*
 * The executor's collective instances: one per coll id of the run (its
 * members in rank order, its ring built once per member list) and one per
 * matched send/recv pair, each checked against what the collectives and
 * NCCL's model simulate; and the network's callbacks, passed on to the
 * instance a flow's tag names.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/nccl_model.h"
#include "sim/train/exec_impl.h"
#include "traces/coll_key.h"

/* A flow's tag: its instance above this bit, its member below. */
#define TAG_SHIFT 32

void ds__exec_on_flow_sent(void *owner, uint64_t tag) {
  struct ds_exec *ex = owner;
  int32_t inst = (int32_t)(tag >> TAG_SHIFT);
  int32_t member = (int32_t)(tag & 0xffffffffu);
  ds_status st = ds_coll_flow_sent(ex->colls[inst].coll, member);
  if (st != DS_OK) fail(ex, st);
}

void ds__exec_on_flow_done(void *owner, uint64_t tag) {
  struct ds_exec *ex = owner;
  int32_t inst = (int32_t)(tag >> TAG_SHIFT);
  int32_t member = (int32_t)(tag & 0xffffffffu);
  ds_status st = ds_coll_flow_done(ex->colls[inst].coll, member);
  if (st != DS_OK) fail(ex, st);
}

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

/* A send or a recv, by (source rank, destination rank, order on its rank). */
struct p2p_key {
  int32_t src, dst;
  int32_t rank;
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

/* Registers instance idx over the members keys[0..n) (member k: rank
 * gpus[k]'s local op) and creates its collective from *spec (ring and tag
 * filled here). */
static ds_status add_inst(struct ds_exec *ex, struct coll_owner *owners, int64_t coll_id,
                          const struct ds_coll_key *keys, const int32_t *gpus, int32_t n,
                          struct ds_coll_spec *spec, struct ds_err *err) {
  int32_t idx = ex->n_colls;
  struct coll_inst *ci = &ex->colls[ex->n_colls++];
  ci->coll_id = coll_id;
  ci->n = n;
  ci->rank_of = malloc((size_t)n * sizeof *ci->rank_of);
  ci->op_of = malloc((size_t)n * sizeof *ci->op_of);
  if (!ci->rank_of || !ci->op_of) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  for (int32_t k = 0; k < n; k++) {
    ci->rank_of[k] = keys[k].rank;
    ci->op_of[k] = keys[k].op;
    class_of(ex, keys[k].rank)->inst[keys[k].op] = idx;
  }
  DS_CHECK(get_ring(ex, gpus, n, &spec->ring, err));
  owners[idx] = (struct coll_owner){ex, idx};
  spec->topo = ex->topo;
  spec->net = ex->net;
  spec->tag_base = (uint64_t)idx << TAG_SHIFT;
  spec->on_done = ds__exec_on_member_done;
  spec->owner = &owners[idx];
  DS_CHECK(ds_coll_new(spec, &ci->coll, err));
  ci->together = ds_coll_finishes_together(ci->coll);
  return DS_OK;
}

/* One instance per coll id of a collective kind. */
static ds_status build_group(struct ds_exec *ex, struct coll_owner *owners,
                             const struct ds_coll_key *keys, int32_t n, int32_t *gpus,
                             struct ds_err *err) {
  const struct rank_class *c0 = class_of(ex, keys[0].rank);
  const struct ds_op *o = op_at(ex, c0, keys[0].op);
  int64_t o_id = op_id(ex, c0, keys[0].rank, keys[0].op);
  enum ds_coll_kind ck = coll_kind_of(o->kind);
  const struct ds_coll_desc *d = ds_coll_desc_of(ck);
  /* ring_chunks pipelines the plain algorithms' steps; under an NCCL
   * protocol (below) the pieces are NCCL's, which its model derives */
  struct ds_coll_spec spec = {.kind = ck, .model = ex->opt.coll_model,
                              .chunks = ex->opt.ring_chunks, .bytes = o->bytes, .root = -1};
  struct ds_coll_proto cp;
  enum ds_proto bcast_proto = DS_PROTO_COUNT;
  if (!d)
    return ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s is not a collective but has coll %" PRId64
                      " (collectives: %s; send/recv pair without coll ids)",
                      o_id, ds_op_kind_name(o->kind), o->coll, ds_coll_kind_names());
  if (ck == DS_COLL_ALLREDUCE) {
    enum ds_proto proto;
    if (ds_allreduce_algo_parse(o->algo, &spec.algo, &proto) != DS_OK)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": allreduce with algo '%s' is not simulated (%s; "
                        "ring, tree and nvls also with /LL, /LL128 or /Simple)",
                        o_id, o->algo, ds_ar_algo_names());
    if (proto < DS_PROTO_COUNT && (!ex->opt.nccl || ex->opt.nccl->nranks != n))
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": algo '%s' needs NCCL's model for a ring of %d "
                        "ranks, and %s", o_id, o->algo, n,
                        ex->opt.nccl ? "the model describes another ring size"
                                     : "none is available (unknown GPU architecture?)");
    const char *why;
    if (proto < DS_PROTO_COUNT && !ds_nccl_algo_available(ex->opt.nccl, spec.algo, proto, &why))
      return ds_err_set(err, DS_EUSAGE, "op %" PRId64 ": algo '%s' cannot run here: %s",
                        o_id, o->algo, why);
    if (proto < DS_PROTO_COUNT) {
      ds_nccl_algo_proto(ex->opt.nccl, spec.algo, proto, o->bytes, &cp);
      spec.proto = &cp;
      spec.chunks = 1;
    }
  } else if (ds_coll_kind_is_chain(ck) && o->algo[0] && strcmp(o->algo, d->algo) != 0) {
    /* under an NCCL protocol ("ring/LL": DDP's buffer broadcast, dp's
     * replicate broadcasts and gradient reduces), the chain of NCCL's ring
     * broadcast or reduce with its channels, latencies and launch */
    if (ds_ring_algo_parse(o->algo, &bcast_proto) != DS_OK)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": %s with algo '%s' is not simulated (ring, "
                        "or ring/LL, ring/LL128, ring/Simple)", o_id, d->name, o->algo);
    if (!ex->opt.nccl || ex->opt.nccl->nranks != n)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": algo '%s' needs NCCL's model for a ring of %d "
                        "ranks, and %s", o_id, o->algo, n,
                        ex->opt.nccl ? "the model describes another ring size"
                                     : "none is available (unknown GPU architecture?)");
    spec.chunks = ds_nccl_chain(ex->opt.nccl, bcast_proto, o->bytes, &cp);
    spec.proto = &cp;
  } else if (o->algo[0] && strcmp(o->algo, d->algo) != 0) {
    return ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s with algo '%s' is not simulated by this "
                      "version (%s runs '%s'; NCCL protocols: allreduce, broadcast and reduce)",
                      o_id, d->name, o->algo, d->name, d->algo);
  }
  for (int32_t k = 0; k < n; k++) {
    const struct rank_class *c = class_of(ex, keys[k].rank);
    const struct ds_op *m = op_at(ex, c, keys[k].op);
    gpus[k] = keys[k].rank;
    if (d->rooted && m->root == o->root && keys[k].rank == o->root) spec.root = k;
    if (d->rooted && m->root != o->root)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": %s of coll %" PRId64 " has root %d but op %"
                        PRId64 " of the same coll has root %d",
                        op_id(ex, c, keys[k].rank, keys[k].op), d->name, o->coll, m->root,
                        o_id, o->root);
  }
  if (d->rooted && spec.root < 0)
    return ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s of coll %" PRId64 " has root %d, which is "
                      "not one of its ranks", o_id, d->name, o->coll, o->root);
  if (bcast_proto >= DS_PROTO_COUNT && ds_coll_kind_is_chain(ck))
    spec.chunks = ds_coll_chain_chunks(o->bytes, ex->opt.ring_chunks);
  return add_inst(ex, owners, o->coll, keys, gpus, n, &spec, err);
}

struct p2p_scan {
  struct p2p_key *keys;
  size_t n_send, n_recv, n;
  struct ds_err *err;
  ds_status st;
};

static int p2p_check(struct ds_exec *ex, int32_t r, uint32_t e, void *ctx) {
  struct p2p_scan *ps = ctx;
  const struct rank_class *c = class_of(ex, r);
  const struct ds_op *o = op_at(ex, c, e);
  if (!is_p2p(o->kind)) return 0;
  if (o->root < 0 || o->root == r) {
    ps->st = ds_err_set(ps->err, DS_EUSAGE,
                        "op %" PRId64 ": %s needs its peer rank in root (a rank other "
                        "than its own %d), got %d", op_id(ex, c, r, e),
                        ds_op_kind_name(o->kind), r, o->root);
    return 1;
  }
  ps->n++;
  if (o->kind == DS_OP_SEND) ps->n_send++;
  return 0;
}

static int p2p_collect(struct ds_exec *ex, int32_t r, uint32_t e, void *ctx) {
  struct p2p_scan *ps = ctx;
  const struct ds_op *o = op_at(ex, class_of(ex, r), e);
  if (o->kind == DS_OP_SEND) ps->keys[ps->n++] = (struct p2p_key){r, o->root, r, e};
  if (o->kind == DS_OP_RECV)
    ps->keys[ps->n_send + ps->n_recv++] = (struct p2p_key){o->root, r, r, e};
  return 0;
}

/* Send/recv pairs: the k-th send from rank a to rank b (its root is b)
 * meets the k-th recv on b from a (its root is a), in schedule order, as
 * MPI and NCCL match point-to-point messages; `coll` plays no part. */
static ds_status build_p2p(struct ds_exec *ex, struct coll_owner *owners,
                           struct ds_err *err) {
  struct p2p_scan ps = {.err = err, .st = DS_OK};
  const struct ds_schedule *t = ex->sched->tmpl;
  size_t any = 0; /* look at the copies only when the template has some */
  for (size_t i = 0; i < t->n_ops && !any; i++) any = is_p2p(t->ops[i].kind);
  if (!any) return DS_OK;
  if (ds__exec_for_each_op(ex, p2p_check, &ps)) return ps.st;
  size_t n = ps.n, n_send = ps.n_send;
  if (n == 0) return DS_OK;
  ps.keys = malloc(n * sizeof *ps.keys);
  if (!ps.keys) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  ps.n = ps.n_recv = 0;
  ds__exec_for_each_op(ex, p2p_collect, &ps);
  struct p2p_key *keys = ps.keys;
  size_t n_recv = ps.n_recv;
  ds_status st = DS_OK;
  /* sends first, then recvs, each sorted by (src, dst, order) */
  qsort(keys, n_send, sizeof *keys, cmp_p2p_key);
  qsort(keys + n_send, n_recv, sizeof *keys, cmp_p2p_key);
  size_t a = 0, b = n_send;
  while (a < n_send || b < n) {
    const struct p2p_key *x = a < n_send ? &keys[a] : NULL, *y = b < n ? &keys[b] : NULL;
    if (!x || !y || x->src != y->src || x->dst != y->dst) {
      /* the side with the smaller (src, dst) has no partner */
      const struct p2p_key *lone =
          !y ? x : !x ? y : (x->src < y->src || (x->src == y->src && x->dst < y->dst)) ? x : y;
      const struct rank_class *c = class_of(ex, lone->rank);
      const struct ds_op *o = op_at(ex, c, lone->op);
      st = ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s on rank %d %s rank %d has no matching %s "
                      "(the k-th send from a to b meets the k-th recv on b from a)",
                      op_id(ex, c, lone->rank, lone->op), ds_op_kind_name(o->kind),
                      lone->rank, o->kind == DS_OP_SEND ? "to" : "from", o->root,
                      o->kind == DS_OP_SEND ? "recv" : "send");
      goto out;
    }
    const struct rank_class *sc = class_of(ex, keys[a].rank), *rc = class_of(ex, keys[b].rank);
    const struct ds_op *so = op_at(ex, sc, keys[a].op), *ro = op_at(ex, rc, keys[b].op);
    if (so->bytes != ro->bytes) {
      st = ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": send of %.17g bytes meets recv op %" PRId64
                      " of %.17g bytes", op_id(ex, sc, keys[a].rank, keys[a].op), so->bytes,
                      op_id(ex, rc, keys[b].rank, keys[b].op), ro->bytes);
      goto out;
    }
    struct ds_coll_key members[2] = {{-1, keys[a].rank, keys[a].op}, {-1, keys[b].rank, keys[b].op}};
    int32_t gpus[2] = {keys[a].rank, keys[b].rank};
    struct ds_coll_spec spec = {.kind = DS_COLL_SEND, .model = ex->opt.coll_model,
                                .chunks = 1, .bytes = so->bytes, .root = 0};
    st = add_inst(ex, owners, -1, members, gpus, 2, &spec, err);
    if (st != DS_OK) goto out;
    a++, b++;
  }
out:
  free(keys);
  return st;
}

ds_status ds__exec_build_colls(struct ds_exec *ex, struct coll_owner **owners,
                               struct ds_err *err) {
  size_t n_keys = 0, n_p2p = 0;
  for (int32_t ci = 0; ci < ex->n_classes; ci++) {
    const struct rank_class *c = &ex->classes[ci];
    for (uint32_t e = 0; e < c->n; e++) {
      const struct ds_op *o = op_at(ex, c, e);
      n_p2p += (size_t)c->n_ranks * is_p2p(o->kind);
      n_keys += (size_t)c->n_ranks * (o->coll >= 0 && !is_p2p(o->kind));
    }
  }
  struct ds_coll_key *keys = malloc((n_keys + 1) * sizeof *keys);
  int32_t *gpus = malloc(((size_t)ex->sched->world_size + 1) * sizeof *gpus);
  ex->colls = calloc(n_keys + n_p2p + 1, sizeof *ex->colls);
  *owners = calloc(n_keys + n_p2p + 1, sizeof **owners);
  ds_status st = DS_OK;
  if (!keys || !gpus || !ex->colls || !*owners) {
    st = ds_err_set(err, DS_ENOMEM, "executor: out of memory");
    goto out;
  }
  n_keys = 0;
  for (int32_t ci = 0; ci < ex->n_classes; ci++) {
    const struct rank_class *c = &ex->classes[ci];
    for (uint32_t e = 0; e < c->n; e++) {
      const struct ds_op *o = op_at(ex, c, e);
      if (o->coll < 0 || is_p2p(o->kind)) continue;
      for (int32_t j = 0; j < c->n_ranks; j++) /* a member: rank's local op e */
        keys[n_keys++] = (struct ds_coll_key){o->coll, c->first_rank + j, e};
    }
  }
  qsort(keys, n_keys, sizeof *keys, ds_coll_key_cmp);
  for (size_t i = 0; i < n_keys && st == DS_OK;) {
    size_t j = i;
    while (j < n_keys && keys[j].coll == keys[i].coll) j++;
    st = build_group(ex, *owners, keys + i, (int32_t)(j - i), gpus, err);
    i = j;
  }
  if (st == DS_OK) st = build_p2p(ex, *owners, err);
out:
  free(keys);
  free(gpus);
  return st;
}
