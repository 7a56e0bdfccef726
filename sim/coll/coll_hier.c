/*
 * Hierarchical all-reduce: three ring phases, composed per rank.
 *   1. reduce-scatter inside each node: a ring over the node's L ranks,
 *      L-1 steps of S/L (local rank l ends with the node's sum of shard l);
 *   2. all-reduce across nodes: for each local rank l, a ring over local
 *      rank l of every node (M ranks), 2(M-1) steps of S/(L M): one ring per
 *      local rank, so every GPU's NIC carries traffic at once;
 *   3. all-gather inside each node: a ring over the node's ranks, L-1 steps
 *      of S/L.
 * A rank enters the next phase as soon as its part of the previous one is
 * done (no barrier). Each phase is sim/coll/coll_ring.c's ring (per flow or
 * aggregated, links' own bandwidth and latency, no NCCL protocol). Nodes
 * come from the topology, members grouped by node in member order; every
 * node must hold the same number of members.
 *
 * Uniform inside (hop latency a, bandwidth B) and across (a', B'), rings
 * uncontended:
 *   T = 2 [(L-1) a + (L-1)/L S/B] + 2(M-1) a' + 2(M-1)/M S/(L B').
 */
#include <stdlib.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"
#include "sim/coll/ring_rails.h"

struct sub {
  struct hier_coll *h;
  int32_t index;        /* which sub-collective */
  struct ds_coll *coll;
};

struct hier_coll {
  struct ds_coll base; /* first: see coll_impl.h */
  int32_t n, m, l;     /* members, nodes, members per node */
  int32_t *member;     /* [m*l] member at (node k, local j): member[k*l + j] */
  int32_t *node_of;    /* [n] */
  int32_t *local_of;   /* [n] */
  struct ds_ring *rings; /* [m + l]: node rings, then cross-node rings */
  int32_t n_rings;
  struct sub *subs;    /* [2m + l]: RS per node, AR per local rank, AG per node */
  int32_t n_subs;
  int bits;            /* flow index: sub << bits | the sub's own index */
  ds_status failure;   /* entering a next phase failed (inside a callback) */
  ds_coll_done_fn on_done;
  void *owner;
};

static void sub_done(void *owner, int32_t member) {
  struct sub *s = owner;
  struct hier_coll *h = s->h;
  int32_t m = h->m;
  ds_status st = DS_OK;
  if (s->index < m) {               /* RS of node k done for local rank `member` */
    int32_t k = s->index;
    st = ds_coll_enter(h->subs[m + member].coll, k);
  } else if (s->index < m + h->l) { /* AR of local rank j done for node `member` */
    int32_t j = s->index - m;
    st = ds_coll_enter(h->subs[m + h->l + member].coll, j);
  } else {                          /* AG of node k done for local rank `member` */
    int32_t k = s->index - m - h->l;
    h->on_done(h->owner, h->member[k * h->l + member]);
  }
  /* a failure inside the callback surfaces at the next call that returns */
  if (h->failure == DS_OK) h->failure = st;
}

static ds_status hier_enter(struct ds_coll *base, int32_t member) {
  struct hier_coll *h = (struct hier_coll *)base;
  DS_CHECK(ds_coll_enter(h->subs[h->node_of[member]].coll, h->local_of[member]));
  return h->failure;
}

static ds_status hier_flow_sent(struct ds_coll *base, int32_t idx) {
  struct hier_coll *h = (struct hier_coll *)base;
  uint32_t u = (uint32_t)idx;
  DS_CHECK(ds_coll_flow_sent(h->subs[u >> h->bits].coll,
                             (int32_t)(u & ((1u << h->bits) - 1))));
  return h->failure;
}

static ds_status hier_flow_done(struct ds_coll *base, int32_t idx) {
  struct hier_coll *h = (struct hier_coll *)base;
  uint32_t u = (uint32_t)idx;
  DS_CHECK(ds_coll_flow_done(h->subs[u >> h->bits].coll,
                             (int32_t)(u & ((1u << h->bits) - 1))));
  return h->failure;
}

static void hier_destroy(struct ds_coll *base) {
  struct hier_coll *h = (struct hier_coll *)base;
  for (int32_t i = 0; i < h->n_subs; i++) ds_coll_free(h->subs[i].coll);
  for (int32_t i = 0; i < h->n_rings; i++) ds_ring_release(&h->rings[i]);
  free(h->subs);
  free(h->rings);
  free(h->member);
  free(h->node_of);
  free(h->local_of);
  free(h);
}

static const struct ds__coll_vtbl hier_vtbl = {
    .enter = hier_enter,
    .flow_sent = hier_flow_sent,
    .flow_done = hier_flow_done,
    .destroy = hier_destroy,
};

/* Groups members by node (sim/coll/ring_rails.h, shared with the rails): h->m,
 * h->l, member, node_of, local_of; every node must hold as many. */
static ds_status group(struct hier_coll *h, const struct ds_topo *topo,
                       const int32_t *gpus, struct ds_err *err) {
  struct ds_ring_nodes g;
  ds_status st = ds_ring_nodes_group(topo, gpus, h->n, &g, err);
  if (st != DS_OK) return ds_err_set(err, st, "all-reduce hierarchical: out of memory");
  h->m = g.m;
  h->l = g.count[0];
  for (int32_t k = 1; k < g.m && st == DS_OK; k++)
    if (g.count[k] != h->l)
      st = ds_err_set(err, DS_EUSAGE,
                      "all-reduce hierarchical: needs the same number of ranks on every "
                      "node, but node %d has %d and node %d has %d (give a multiple of %d "
                      "ranks, --world-size or collective's -g, or another --algo)",
                      g.node_id[0], h->l, g.node_id[k], g.count[k], h->l);
  /* take the arrays the collective keeps */
  h->member = g.member;
  h->node_of = g.node_of;
  h->local_of = g.local_of;
  g.member = g.node_of = g.local_of = NULL;
  ds_ring_nodes_release(&g);
  return st;
}

ds_status ds__coll_hier_new(const struct ds_coll_spec *s, struct ds_coll **out,
                            struct ds_err *err) {
  struct hier_coll *h = calloc(1, sizeof *h);
  if (!h) return ds_err_set(err, DS_ENOMEM, "all-reduce hierarchical: out of memory");
  h->base.vt = &hier_vtbl;
  h->n = s->ring->n;
  h->on_done = s->on_done;
  h->owner = s->owner;
  ds_status st = group(h, s->topo, s->ring->gpus, err);
  int32_t m = h->m, l = h->l;
  int32_t *gpus = NULL;
  if (st != DS_OK) goto fail;
  int32_t biggest = m > l ? m : l;
  while ((1 << h->bits) < biggest) h->bits++;
  if ((int64_t)(2 * m + l) << h->bits > INT32_MAX) {
    st = ds_err_set(err, DS_EUSAGE, "all-reduce hierarchical: %d nodes of %d ranks is "
                    "too many", m, l);
    goto fail;
  }
  h->rings = calloc((size_t)(m + l), sizeof *h->rings);
  h->subs = calloc((size_t)(2 * m + l), sizeof *h->subs);
  gpus = malloc((size_t)biggest * sizeof *gpus);
  if (!h->rings || !h->subs || !gpus) {
    st = ds_err_set(err, DS_ENOMEM, "all-reduce hierarchical: out of memory");
    goto fail;
  }
  for (int32_t r = 0; r < m + l; r++) {
    int32_t len = r < m ? l : m;
    for (int32_t q = 0; q < len; q++)
      gpus[q] = s->ring->gpus[r < m ? h->member[r * l + q] : h->member[q * l + (r - m)]];
    DS_CHECK_GOTO(ds_ring_build(s->topo, gpus, len, &h->rings[r], err), st, fail);
    h->n_rings++;
  }
  /* RS_k and AG_k on node ring k; AR_j on cross ring j. Bytes as each ring
   * kind counts them (coll.h): reduce-scatter the send buffer S, the
   * cross-node all-reduce the shard S/L, all-gather the receive buffer S. */
  for (int32_t i = 0; i < 2 * m + l; i++) {
    int is_ar = i >= m && i < m + l;
    const struct ds_ring *ring = is_ar ? &h->rings[i] : &h->rings[i < m ? i : i - m - l];
    struct sub *sb = &h->subs[i];
    sb->h = h;
    sb->index = i;
    st = ds__coll_ring_new(ring, s->net, s->model, s->chunks,
                           is_ar ? 2 * (ring->n - 1) : ring->n - 1,
                           is_ar ? s->bytes / l : s->bytes, NULL,
                           s->tag_base | ((uint64_t)i << h->bits), sub_done, sb, &sb->coll);
    if (st != DS_OK) {
      ds_err_set(err, st, "all-reduce hierarchical: cannot create its rings");
      goto fail;
    }
    h->n_subs++;
  }
  free(gpus);
  *out = &h->base;
  return DS_OK;
fail:
  free(gpus);
  hier_destroy(&h->base);
  return st;
}
