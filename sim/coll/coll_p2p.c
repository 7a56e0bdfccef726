/*
 * Gather, scatter and send (one message) as point-to-point flows, as NCCL 2.28's
 * ncclGather/ncclScatter run them (a group of ncclSend/ncclRecv between the
 * root and every other rank, all at once): gather sends bytes/N from every
 * non-root member straight to the root, scatter bytes/N from the root to
 * each, send `bytes` from member 0 to member 1 (nccl-tests' sendrecv and
 * alltoall: sim/coll/coll_alltoall.c). A flow starts when both
 * its ends have entered (NCCL's p2p rendezvous), follows the topology's
 * route between the two GPUs with the route's latency trailing, and a
 * member finishes once every flow it sends or receives has been delivered.
 * A flow staged in host memory (no peer-to-peer: its route passes a CPU)
 * first waits one chunk's store and forward (ds__coll_stage_fill_ns).
 * Uncontended on a switch where every GPU has one link of bandwidth B:
 * the root's link carries (N-1) S/N, so T = a + (N-1)/N S/B.
 */
#include <math.h>
#include <stdlib.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"


struct p2p_flow {
  int32_t src, dst;   /* members */
  int32_t first, len; /* route: links[first .. first+len) */
  double lat_ns;
  double fill_ns; /* staged in host memory: one chunk's store and forward */
  uint8_t started;
};

struct p2p_coll {
  struct ds_coll base; /* first: see coll_impl.h */
  struct ds_net *net;
  int32_t n;
  double flow_bytes;
  uint64_t tag_base;
  ds_coll_done_fn on_done;
  void *owner;
  struct p2p_flow *flows;
  int32_t n_flows;
  int32_t *links;
  int32_t *pending;  /* [n] flows of each member not yet delivered */
  uint8_t *entered;  /* [n] */
  uint8_t *done;     /* [n] */
};

static void check_done(struct p2p_coll *c, int32_t m) {
  if (c->done[m] || !c->entered[m] || c->pending[m] > 0) return;
  c->done[m] = 1;
  c->on_done(c->owner, m);
}

static ds_status p2p_enter(struct ds_coll *base, int32_t member) {
  struct p2p_coll *c = (struct p2p_coll *)base;
  c->entered[member] = 1;
  for (int32_t k = 0; k < c->n_flows; k++) {
    struct p2p_flow *f = &c->flows[k];
    if (f->started || !c->entered[f->src] || !c->entered[f->dst]) continue;
    f->started = 1;
    DS_CHECK(ds_net_flow_start(c->net, c->links + f->first, NULL, f->len, c->flow_bytes,
                               f->fill_ns, f->lat_ns, c->tag_base | (uint64_t)k));
  }
  check_done(c, member);
  return DS_OK;
}

static ds_status p2p_flow_sent(struct ds_coll *base, int32_t k) {
  (void)base;
  (void)k;
  return DS_OK;
}

static ds_status p2p_flow_done(struct ds_coll *base, int32_t k) {
  struct p2p_coll *c = (struct p2p_coll *)base;
  const struct p2p_flow *f = &c->flows[k];
  c->pending[f->src]--;
  c->pending[f->dst]--;
  check_done(c, f->src);
  check_done(c, f->dst);
  return DS_OK;
}

static void p2p_destroy(struct ds_coll *base) {
  struct p2p_coll *c = (struct p2p_coll *)base;
  free(c->flows);
  free(c->links);
  free(c->pending);
  free(c->entered);
  free(c->done);
  free(c);
}

static const struct ds__coll_vtbl p2p_vtbl = {
    .enter = p2p_enter,
    .flow_sent = p2p_flow_sent,
    .flow_done = p2p_flow_done,
    .destroy = p2p_destroy,
};

ds_status ds__coll_p2p_new(const struct ds_coll_spec *spec, enum ds_coll_kind kind,
                           struct ds_coll **out, struct ds_err *err) {
  const struct ds_ring *r = spec->ring;
  int32_t n = r->n, root = spec->root;
  int32_t n_flows = kind == DS_COLL_SEND ? 1 : n - 1;
  ds_status st = DS_ENOMEM;
  struct p2p_coll *c = calloc(1, sizeof *c);
  if (!c) return ds_err_set(err, DS_ENOMEM, "collective: out of memory");
  c->base.vt = &p2p_vtbl;
  c->flows = calloc((size_t)n_flows + 1, sizeof *c->flows);
  c->links = malloc(((size_t)n_flows * DS_TOPO_MAX_ROUTE + 1) * sizeof *c->links);
  c->pending = calloc((size_t)n, sizeof *c->pending);
  c->entered = calloc((size_t)n, 1);
  c->done = calloc((size_t)n, 1);
  if (!c->flows || !c->links || !c->pending || !c->entered || !c->done) goto fail;
  c->net = spec->net;
  c->n = n;
  c->flow_bytes = kind == DS_COLL_SEND ? spec->bytes : spec->bytes / n;
  c->tag_base = spec->tag_base;
  c->on_done = spec->on_done;
  c->owner = spec->owner;
  for (int32_t m = 0, used = 0; m < n; m++) {
    struct p2p_flow f = {0};
    if (kind == DS_COLL_SEND) {
      if (m > 0) break;
      f.src = 0, f.dst = 1;
    } else if (m == root) {
      continue;
    } else if (kind == DS_COLL_GATHER) {
      f.src = m, f.dst = root;
    } else {
      f.src = root, f.dst = m;
    }
    f.first = used;
    DS_CHECK_GOTO(ds_topo_route(spec->topo, r->gpus[f.src], r->gpus[f.dst],
                                c->links + used, DS_TOPO_MAX_ROUTE, &f.len, err), st, fail);
    for (int32_t k = 0; k < f.len; k++) f.lat_ns += spec->topo->links[c->links[used + k]].lat_ns;
    f.fill_ns = ds__coll_stage_fill_ns(spec->topo, c->links + used, f.len, c->flow_bytes,
                                       INFINITY);
    used += f.len;
    c->pending[f.src]++;
    c->pending[f.dst]++;
    c->flows[c->n_flows++] = f;
  }
  *out = &c->base;
  return DS_OK;
fail:
  if (st == DS_ENOMEM) ds_err_set(err, st, "collective: out of memory");
  p2p_destroy(&c->base);
  return st;
}
