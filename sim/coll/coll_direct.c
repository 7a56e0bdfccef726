/*
 * Direct all-reduce: a reduce-scatter then an all-gather, each all-to-all.
 * Phase 1: every rank i sends shard j (S/N bytes) straight to rank j; a
 * rank holding all N-1 shards of its own index has reduced it. Phase 2: it
 * sends its reduced shard (S/N) straight to every other rank. A rank starts
 * phase 2 as soon as it has its N-1 phase-1 shards (no barrier), and
 * finishes when it has the N-1 reduced shards of the others and its own
 * sends have left. A phase-1 flow starts once both ends have entered.
 *
 * On a star (every GPU one link of bandwidth B to a switch, route latency
 * a): each rank's uplink carries N-1 flows of S/N per phase, each of its
 * downlinks as many, every flow at B/(N-1):
 *   T = 2 a + 2 (N-1)/N S/B.
 * Always per flow: 2 N (N-1) flows. Routes are the topology's, latency
 * trailing; no NCCL protocol (NCCL has no such algorithm).
 */
#include <stdlib.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"

#define MAX_DIRECT_RANKS 30000 /* 2 N^2 flow indices fit in 31 bits */

struct rank_state {
  int32_t p1_sent, p1_recv, p2_sent, p2_recv;
  uint8_t entered, p2_started, done;
};

struct direct_coll {
  struct ds_coll base; /* first: see coll_impl.h */
  struct ds_net *net;
  int32_t n;
  double shard_bytes;
  int32_t *route_first; /* [n*n+1] route i -> j at i*n + j (empty for i == j) */
  int32_t *route_links;
  double *route_lat_ns; /* [n*n] */
  struct rank_state *r;
  uint64_t tag_base;
  ds_coll_done_fn on_done;
  void *owner;
};

static ds_status send_shard(struct direct_coll *c, int phase, int32_t i, int32_t j) {
  int64_t k = (int64_t)i * c->n + j;
  int32_t first = c->route_first[k];
  uint64_t idx = (uint64_t)phase * (uint64_t)c->n * (uint64_t)c->n + (uint64_t)k;
  return ds_net_flow_start(c->net, c->route_links + first, NULL,
                           c->route_first[k + 1] - first, c->shard_bytes, 0,
                           c->route_lat_ns[k], c->tag_base | idx);
}

static void check_done(struct direct_coll *c, int32_t i) {
  struct rank_state *s = &c->r[i];
  int32_t others = c->n - 1;
  if (s->done || !s->entered || s->p1_sent < others || s->p2_sent < others ||
      s->p2_recv < others)
    return;
  s->done = 1;
  c->on_done(c->owner, i);
}

static ds_status try_phase2(struct direct_coll *c, int32_t i) {
  struct rank_state *s = &c->r[i];
  if (s->p2_started || s->p1_recv < c->n - 1) return DS_OK;
  s->p2_started = 1;
  for (int32_t j = 0; j < c->n; j++)
    if (j != i) DS_CHECK(send_shard(c, 1, i, j));
  return DS_OK;
}

static ds_status direct_enter(struct ds_coll *base, int32_t i) {
  struct direct_coll *c = (struct direct_coll *)base;
  c->r[i].entered = 1;
  for (int32_t j = 0; j < c->n; j++) {
    if (j == i || !c->r[j].entered) continue;
    DS_CHECK(send_shard(c, 0, i, j));
    DS_CHECK(send_shard(c, 0, j, i));
  }
  DS_CHECK(try_phase2(c, i)); /* n == 1: nothing to wait for */
  check_done(c, i);
  return DS_OK;
}

static ds_status direct_flow_sent(struct ds_coll *base, int32_t idx) {
  struct direct_coll *c = (struct direct_coll *)base;
  int64_t nn = (int64_t)c->n * c->n;
  int32_t i = (int32_t)((idx % nn) / c->n);
  if (idx < nn) c->r[i].p1_sent++;
  else c->r[i].p2_sent++;
  check_done(c, i);
  return DS_OK;
}

static ds_status direct_flow_done(struct ds_coll *base, int32_t idx) {
  struct direct_coll *c = (struct direct_coll *)base;
  int64_t nn = (int64_t)c->n * c->n;
  int32_t j = (int32_t)(idx % c->n);
  if (idx < nn) {
    c->r[j].p1_recv++;
    DS_CHECK(try_phase2(c, j));
  } else {
    c->r[j].p2_recv++;
  }
  check_done(c, j);
  return DS_OK;
}

static void direct_destroy(struct ds_coll *base) {
  struct direct_coll *c = (struct direct_coll *)base;
  free(c->route_first);
  free(c->route_links);
  free(c->route_lat_ns);
  free(c->r);
  free(c);
}

static const struct ds__coll_vtbl direct_vtbl = {
    .enter = direct_enter,
    .flow_sent = direct_flow_sent,
    .flow_done = direct_flow_done,
    .destroy = direct_destroy,
};

ds_status ds__coll_direct_new(const struct ds_coll_spec *s, struct ds_coll **out,
                              struct ds_err *err) {
  int32_t n = s->ring->n;
  if (n > MAX_DIRECT_RANKS)
    return ds_err_set(err, DS_EUSAGE, "all-reduce direct: %d ranks, at most %d", n,
                      MAX_DIRECT_RANKS);
  size_t nn = (size_t)n * (size_t)n;
  size_t cap = nn * 4 + 1, used = 0;
  ds_status st = DS_ENOMEM;
  struct direct_coll *c = calloc(1, sizeof *c);
  if (!c) return ds_err_set(err, DS_ENOMEM, "all-reduce direct: out of memory");
  c->base.vt = &direct_vtbl;
  c->net = s->net;
  c->n = n;
  c->shard_bytes = s->bytes / n;
  c->tag_base = s->tag_base;
  c->on_done = s->on_done;
  c->owner = s->owner;
  c->route_first = malloc((nn + 1) * sizeof *c->route_first);
  c->route_links = malloc(cap * sizeof *c->route_links);
  c->route_lat_ns = calloc(nn + 1, sizeof *c->route_lat_ns);
  c->r = calloc((size_t)n, sizeof *c->r);
  if (!c->route_first || !c->route_links || !c->route_lat_ns || !c->r) goto fail;
  for (int32_t i = 0; i < n; i++)
    for (int32_t j = 0; j < n; j++) {
      size_t k = (size_t)i * (size_t)n + (size_t)j;
      c->route_first[k] = (int32_t)used;
      if (i == j) continue;
      if (used + DS_TOPO_MAX_ROUTE > cap) {
        cap = 2 * cap + DS_TOPO_MAX_ROUTE;
        int32_t *p = realloc(c->route_links, cap * sizeof *p);
        if (!p) goto fail;
        c->route_links = p;
      }
      int32_t len;
      DS_CHECK_GOTO(ds_topo_route(s->topo, s->ring->gpus[i], s->ring->gpus[j],
                                  c->route_links + used, DS_TOPO_MAX_ROUTE, &len, err),
                    st, out);
      for (int32_t q = 0; q < len; q++)
        c->route_lat_ns[k] += s->topo->links[c->route_links[used + q]].lat_ns;
      used += (size_t)len;
    }
  c->route_first[nn] = (int32_t)used;
  *out = &c->base;
  return DS_OK;
fail:
  st = ds_err_set(err, DS_ENOMEM, "all-reduce direct: out of memory");
out:
  direct_destroy(&c->base);
  return st;
}
