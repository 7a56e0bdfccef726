/*
 * Tree all-reduces on the flow network: NCCL's double binary tree, the
 * naive reduce + broadcast (a star around the root) and NVLS (a star around
 * the NVSwitch, which reduces in place). One engine runs them all: one or
 * two trees over the members (and, for NVLS, the switch as an extra
 * vertex), each carrying its share of the buffer cut into pieces. A vertex
 * sends piece c up to its parent once every child has delivered piece c to
 * it (leaves at once) and its previous up-send has left its link; the root
 * (and any vertex that has received piece c from its parent) sends piece c
 * down to each child once its previous down-send to that child has left.
 * Reduction up and broadcast down therefore overlap, piece by piece, as in
 * NCCL's tree kernels. Latencies are trailing (propagation), as in the ring.
 *
 * Invariant: a member finishes when, in every tree, it holds every reduced
 * piece (root: delivered by all children; others: delivered by the parent)
 * and all its up- and down-sends have left their links. A sender must have
 * waited out the start latency (a zero-link flow per member, under a
 * protocol) and its receiver must have entered.
 *
 * Shapes (docs/collectives.md has the closed forms and NCCL's own):
 *   - double binary tree: members grouped by node (in member order); on one
 *     node both trees are the chain m0 <- m1 <- ... (NCCL's tree inside a
 *     node is a chain); across M nodes tree 0 is NCCL's binary tree over
 *     node indices (trees.cc ncclGetBtree: parent of r is (r ^ b) | 2b, or
 *     r ^ b past the end, b the lowest set bit of r; node 0 the root), tree
 *     1 its mirror (M even: r -> M-1-r) or its shift (M odd: r -> r-1), as
 *     ncclGetDtree builds the complementary tree.
 *     Across nodes whose members reach K >= 2 NICs each: K tree channels
 *     ("rails"), one per NIC, as NCCL's tree graph has one channel per NIC
 *     and runs channel c's two trees (c and c + nChannels, connect.cc
 *     connectTrees) over the same chain: rail r chains each node's members
 *     towards the node's first member on its r-th NIC (the head), which
 *     faces the other nodes in both trees (NCCL_TOPO_PATTERN_TREE). Each of
 *     the 2K trees: S/(2K), the protocol's channels spread C/K per rail.
 *     Otherwise (one NIC per node): tree 0 chains local ranks 0 <- 1 <- ...
 *     with local rank 0 facing the other nodes, tree 1 the reverse chain
 *     with the last local rank facing them. Each tree: S/2.
 *   - reduce-broadcast: every member's parent is the root; one piece of S
 *     (not pipelined): the root's link carries (N-1) S each way.
 *   - nvls: every member's parent is the switch; one tree of S, pipelined.
 *   - NVLSTree (nvls whose members span nodes; NCCL's NVLS_TREE): one
 *     switch vertex per node, every member's parent is its node's switch
 *     (NVLS inside the node), and the switches form the double binary tree
 *     over the nodes, through the heads: K heads per node (one per NIC, as
 *     the double binary tree's rails; with one NIC the first and last
 *     member), 2K trees of S/(2K). A switch's edge to its parent runs from
 *     the switch down to its head (the head's multimem reduce-load), then
 *     over the network to the parent node's head; down, from the parent's
 *     head to the head and up to the switch (the head's multicast store).
 *
 * Aggregated (DS_COLL_AGGREGATE, the double binary tree and NVLSTree;
 * reduce-broadcast and one-node nvls always run per flow): each tree is one flow over the
 * links its streams use (a stream: an edge's pieces up, or down), each link
 * weighted by the streams of that tree crossing it (times the channels a
 * flow stands for), moving a stream's bytes at most at the per-flow cap,
 * after a lead standing for the per-flow tree's critical path and pipeline
 * fill; every member finishes when the last tree's flow is delivered. With
 * every stream at its cap, a piece of time t on every hop, the per-flow
 * tree delivers the last piece to its last member at start + lat +
 * (P + H - 1) t (H hops and lat the latency of the deepest path up and
 * down), so the lead is start + lat + (H - 1) t and the flow's P t follows:
 * equal to the per-flow tree wherever the caps bind. Elsewhere the lead
 * comes from lower bounds on the per-flow tree (sim/coll/coll_tree_agg.c);
 * docs/collectives.md says how far below it the aggregate then is.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/coll_tree_impl.h"
#include "sim/coll/ring_rails.h"

int32_t ds_coll_tree_pieces(double bytes, int32_t depth, int32_t min_pieces,
                            double min_piece_bytes) {
  double p = ceil(bytes / DS_TREE_PIECE_BYTES);
  double lo = fmin(8.0 * depth, floor(bytes / min_piece_bytes));
  if (p < lo) p = lo;
  if (p > DS_TREE_MAX_PIECES) p = DS_TREE_MAX_PIECES;
  if (p < min_pieces) p = fmax(p, ds_coll_pieces_bound(min_pieces, bytes));
  return p >= 1 ? (int32_t)p : 1;
}

double ds_coll_tree_min_piece_bytes(const struct ds_coll_proto *p) {
  double unit = p ? ds_coll_forward_unit_bytes(p->proto) : 0;
  if (unit > 0) return unit;
  return DS_TREE_MIN_PIECE_BYTES;
}

/* Whether vertex v holds the reduced piece: the root once every child has
 * delivered it, any other vertex once its parent has sent it down. */
static int has_final(const struct tree *t, int32_t v, int32_t piece) {
  if (v != t->root) return t->v[v].down_recv > piece;
  for (int32_t k = t->child_first[v]; k < t->child_first[v + 1]; k++)
    if (t->e[t->child_edge[k]].up_recv <= piece) return 0;
  return 1;
}

static ds_status start_flow(struct tree_coll *c, const struct tree *t, int32_t ti,
                            int32_t edge, int dir) {
  int32_t r = 2 * edge + dir;
  int32_t first = t->route_first[r], len = t->route_first[r + 1] - first;
  uint64_t idx = ((uint64_t)ti * (uint64_t)c->ne + (uint64_t)edge) * 2 + (uint64_t)dir;
  if (c->has_proto)
    return ds_net_flow_start_capped(c->net, t->route_links + first, c->mult, len,
                                    c->flow_bytes, 0, t->route_lat_ns[r], c->cap,
                                    c->tag_base | idx);
  return ds_net_flow_start(c->net, t->route_links + first, NULL, len, c->flow_bytes, 0,
                           t->route_lat_ns[r], c->tag_base | idx);
}

static ds_status try_up(struct tree_coll *c, int32_t ti, int32_t v) {
  struct tree *t = &c->trees[ti];
  if (v == t->root) return DS_OK;
  struct vstate *s = &t->v[v];
  if (!c->ready[v] || !c->entered[t->parent[v]] || s->up_busy || s->up_started >= c->pieces)
    return DS_OK;
  for (int32_t k = t->child_first[v]; k < t->child_first[v + 1]; k++)
    if (t->e[t->child_edge[k]].up_recv <= s->up_started) return DS_OK;
  s->up_busy = 1;
  s->up_started++;
  return start_flow(c, t, ti, t->edge_of[v], 0);
}

static ds_status try_down(struct tree_coll *c, int32_t ti, int32_t v) {
  struct tree *t = &c->trees[ti];
  if (!c->ready[v]) return DS_OK;
  for (int32_t k = t->child_first[v]; k < t->child_first[v + 1]; k++) {
    int32_t edge = t->child_edge[k];
    struct estate *s = &t->e[edge];
    if (s->dn_busy || s->dn_started >= c->pieces || !c->entered[t->edge_child[edge]] ||
        !has_final(t, v, s->dn_started))
      continue;
    s->dn_busy = 1;
    s->dn_started++;
    DS_CHECK(start_flow(c, t, ti, edge, 1));
  }
  return DS_OK;
}

static void check_done(struct tree_coll *c, int32_t v) {
  if (v >= c->n || c->done[v] || !c->ready[v]) return;
  for (int32_t ti = 0; ti < c->n_trees; ti++) {
    const struct tree *t = &c->trees[ti];
    if (!has_final(t, v, c->pieces - 1)) return;
    if (v != t->root && t->v[v].up_sent < c->pieces) return;
    for (int32_t k = t->child_first[v]; k < t->child_first[v + 1]; k++)
      if (t->e[t->child_edge[k]].dn_sent < c->pieces) return;
  }
  c->done[v] = 1;
  c->on_done(c->owner, v);
}

/* Everything vertex v (and its neighbours, which may have waited for it)
 * can start now. */
static ds_status wake(struct tree_coll *c, int32_t v) {
  for (int32_t ti = 0; ti < c->n_trees; ti++) {
    struct tree *t = &c->trees[ti];
    DS_CHECK(try_up(c, ti, v));
    DS_CHECK(try_down(c, ti, v));
    for (int32_t k = t->child_first[v]; k < t->child_first[v + 1]; k++)
      DS_CHECK(try_up(c, ti, t->edge_child[t->child_edge[k]]));
    if (v != t->root) DS_CHECK(try_down(c, ti, t->parent[v]));
  }
  check_done(c, v);
  return DS_OK;
}

static ds_status tree_enter(struct ds_coll *base, int32_t member) {
  struct tree_coll *c = (struct tree_coll *)base;
  c->entered[member] = 1;
  if (c->n == 1) {
    c->ready[member] = 1;
    c->done[member] = 1;
    c->on_done(c->owner, member);
    return DS_OK;
  }
  if (c->agg) {
    /* every tree's flow once the last member is there; the lead holds the
     * start latency */
    if (++c->n_entered < c->n) return DS_OK;
    double bytes = c->flow_bytes * c->pieces;
    for (int32_t ti = 0; ti < c->n_trees; ti++) {
      const struct tree *t = &c->trees[ti];
      if (c->has_proto)
        DS_CHECK(ds_net_flow_start_capped(c->net, t->agg_links, t->agg_mult, t->n_agg, bytes,
                                          t->agg_lead_ns, 0, c->cap,
                                          c->tag_base | (uint64_t)ti));
      else
        DS_CHECK(ds_net_flow_start(c->net, t->agg_links, t->agg_mult, t->n_agg, bytes,
                                   t->agg_lead_ns, 0, c->tag_base | (uint64_t)ti));
    }
    return DS_OK;
  }
  if (c->start_lat_ns > 0) {
    /* the start latency: a flow over no links, index past the edges' */
    uint64_t idx = (uint64_t)c->n_trees * (uint64_t)c->ne * 2 + (uint64_t)member;
    return ds_net_flow_start(c->net, NULL, NULL, 0, 0, c->start_lat_ns, 0,
                             c->tag_base | idx);
  }
  c->ready[member] = 1;
  return wake(c, member);
}

static ds_status tree_flow_sent(struct ds_coll *base, int32_t idx) {
  struct tree_coll *c = (struct tree_coll *)base;
  if (c->agg) return DS_OK;
  int64_t edges = (int64_t)c->n_trees * c->ne * 2;
  if (idx >= edges) return DS_OK; /* start latency: handled at delivery */
  int32_t ti = idx / (2 * c->ne), edge = (idx / 2) % c->ne, dir = idx % 2;
  struct tree *t = &c->trees[ti];
  int32_t child = t->edge_child[edge];
  if (dir == 0) {
    t->v[child].up_busy = 0;
    t->v[child].up_sent++;
    DS_CHECK(try_up(c, ti, child));
    check_done(c, child);
  } else {
    int32_t par = t->parent[child];
    t->e[edge].dn_busy = 0;
    t->e[edge].dn_sent++;
    DS_CHECK(try_down(c, ti, par));
    check_done(c, par);
  }
  return DS_OK;
}

static ds_status tree_flow_done(struct ds_coll *base, int32_t idx) {
  struct tree_coll *c = (struct tree_coll *)base;
  if (c->agg) {
    if (++c->agg_done < c->n_trees) return DS_OK;
    for (int32_t v = 0; v < c->n; v++) {
      c->done[v] = 1;
      c->on_done(c->owner, v);
    }
    return DS_OK;
  }
  int64_t edges = (int64_t)c->n_trees * c->ne * 2;
  if (idx >= edges) {
    int32_t member = (int32_t)(idx - edges);
    c->ready[member] = 1;
    return wake(c, member);
  }
  int32_t ti = idx / (2 * c->ne), edge = (idx / 2) % c->ne, dir = idx % 2;
  struct tree *t = &c->trees[ti];
  int32_t child = t->edge_child[edge];
  if (dir == 0) {
    int32_t par = t->parent[child];
    t->e[edge].up_recv++;
    DS_CHECK(try_up(c, ti, par));
    DS_CHECK(try_down(c, ti, par));
    check_done(c, par);
  } else {
    t->v[child].down_recv++;
    DS_CHECK(try_down(c, ti, child));
    check_done(c, child);
  }
  return DS_OK;
}

static void tree_destroy(struct ds_coll *base) {
  struct tree_coll *c = (struct tree_coll *)base;
  for (int32_t i = 0; c->trees && i < c->n_trees; i++) ds__coll_tree_release(&c->trees[i]);
  free(c->trees);
  free(c->mult);
  free(c->entered);
  free(c->ready);
  free(c->done);
  free(c);
}

/* Aggregated, the last tree's flow finishes every member in one loop
 * (tree_flow_done). */
static int tree_together(const struct ds_coll *base) {
  return ((const struct tree_coll *)base)->agg;
}

static const struct ds__coll_vtbl tree_vtbl = {
    .enter = tree_enter,
    .flow_sent = tree_flow_sent,
    .flow_done = tree_flow_done,
    .destroy = tree_destroy,
    .together = tree_together,
};

/* The aggregate's leads: computed once per setting of what they depend on
 * (the last TREE_AGG_MEMO settings are kept). */
static ds_status agg_leads(struct tree_coll *c, struct ds__tree_plan *p, struct ds_topo *topo,
                           uint32_t chan, const struct ds_coll_proto *proto,
                           struct ds_err *err) {
  double key[9] = {c->flow_bytes, c->pieces, c->cap, chan, c->start_lat_ns,
                   proto ? 1 : 0, proto ? proto->hop_lat_ns[0] : 0,
                   proto ? proto->hop_lat_ns[1] : 0, proto ? proto->hop_lat_ns[2] : 0};
  for (int i = 0; i < TREE_AGG_MEMO; i++) {
    struct tree_agg_memo *m = &p->memo[i];
    if (!m->lead || memcmp(m->key, key, sizeof key) != 0) continue;
    for (int32_t ti = 0; ti < c->n_trees; ti++) c->trees[ti].agg_lead_ns = m->lead[ti];
    return DS_OK;
  }
  DS_CHECK(ds__coll_tree_agg_setup(c, topo, chan, p->load, err));
  struct tree_agg_memo *m = &p->memo[p->memo_next];
  if (!m->lead) m->lead = malloc((size_t)p->n_trees * sizeof *m->lead);
  if (!m->lead) return DS_OK; /* no memo: computed again next time */
  memcpy(m->key, key, sizeof key);
  for (int32_t ti = 0; ti < c->n_trees; ti++) m->lead[ti] = c->trees[ti].agg_lead_ns;
  p->memo_next = (p->memo_next + 1) % TREE_AGG_MEMO;
  return DS_OK;
}

static ds_status create(const struct ds_coll_spec *s, enum tree_shape shape,
                        struct ds_coll **out, struct ds_err *err) {
  int32_t n = s->ring->n;
  const struct ds_coll_proto *p = s->proto;
  if (p && (p->channels < 1 || !(p->wire_factor >= 1) || !(p->chan_cap_bytes_per_s > 0) ||
            !(p->start_lat_ns >= 0)))
    return ds_err_set(err, DS_EINTERNAL, "all-reduce: bad protocol parameters");
  /* reduce-broadcast: the spec's root, member 0 when it has none */
  int32_t root = s->root >= 0 && s->root < n ? s->root : 0;
  struct ds__tree_plan *plan = NULL;
  DS_CHECK(ds__coll_tree_plan_get(s->topo, s->ring, shape, root, &plan, err));
  ds_status st = DS_ENOMEM;
  struct tree_coll *c = calloc(1, sizeof *c);
  if (!c) return ds_err_set(err, DS_ENOMEM, "all-reduce: out of memory");
  c->base.vt = &tree_vtbl;
  c->net = s->net;
  c->n = n;
  c->nv = plan->nv;
  c->ne = plan->ne;
  c->tag_base = s->tag_base;
  c->on_done = s->on_done;
  c->owner = s->owner;
  int32_t rails = plan->rails;
  c->n_trees = plan->n_trees;
  c->trees = calloc((size_t)c->n_trees, sizeof *c->trees);
  c->entered = calloc((size_t)c->nv, 1);
  c->ready = calloc((size_t)c->nv, 1);
  c->done = calloc((size_t)n, 1);
  c->mult = malloc(DS_TOPO_MAX_ROUTE * sizeof *c->mult);
  if (!c->trees || !c->entered || !c->ready || !c->done || !c->mult) goto oom;
  enum tree_shape run = plan->run_shape;
  int tree_like = run == SHAPE_DBTREE || run == SHAPE_NVLS_TREE;
  for (int32_t v = n; v < c->nv; v++) c->entered[v] = c->ready[v] = 1; /* switches */
  /* Only the double binary tree and NVLSTree have an aggregated execution
   * (the file's top); the others run per flow whatever the model. The
   * labels' rule, ds_coll_aggregates, says the same (test_collbench's
   * coll_model_label_says_flow_only_where_aggregate_changes_nothing). */
  int agg = s->model == DS_COLL_AGGREGATE && tree_like && n > 1;
  for (int32_t ti = 0; ti < c->n_trees; ti++) {
    const struct tree *pt = &plan->trees[ti];
    struct tree *t = &c->trees[ti];
    *t = (struct tree){.parent = pt->parent, .edge_of = pt->edge_of,
                       .child_first = pt->child_first, .child_edge = pt->child_edge,
                       .edge_child = pt->edge_child, .route_first = pt->route_first,
                       .route_links = pt->route_links, .root = pt->root, .shared = 1};
    if (n < 2) continue;
    t->route_lat_ns = malloc((2 * (size_t)c->ne + 1) * sizeof *t->route_lat_ns);
    if (!t->route_lat_ns) goto oom;
    for (int32_t r = 0; r < 2 * c->ne; r++)
      t->route_lat_ns[r] = p ? p->hop_lat_ns[pt->route_class[r]] : pt->route_lat_ns[r];
    if (agg) continue; /* one flow per tree: no per-piece state */
    t->v = calloc((size_t)c->nv, sizeof *t->v);
    t->e = calloc((size_t)c->ne + 1, sizeof *t->e);
    if (!t->v || !t->e) goto oom;
  }
  double tree_bytes = s->bytes / c->n_trees;
  c->pieces = run == SHAPE_STAR ? 1
                                : ds_coll_tree_pieces(tree_bytes, plan->depth, s->chunks,
                                                      ds_coll_tree_min_piece_bytes(p));
  c->flow_bytes = tree_bytes / c->pieces;
  c->cap = INFINITY;
  if (p) {
    /* The C channels of a tree spread over its rails, C/K each (at least
     * 1), each capped so that a rail carries 1/K of the tree's C caps.
     * NVLSTree: C channels (heads) in all, each head's two trees sharing
     * its cap: every flow stands for one channel at C cap / (2K). */
    int32_t per_rail = run == SHAPE_NVLS_TREE ? 1 : ds__ring_rail_channels(p->channels, rails);
    c->has_proto = 1;
    c->flow_bytes *= p->wire_factor / per_rail;
    c->cap = run == SHAPE_NVLS_TREE
                 ? p->chan_cap_bytes_per_s * p->channels / c->n_trees
                 : p->chan_cap_bytes_per_s * p->channels / ((double)rails * per_rail);
    c->start_lat_ns = p->start_lat_ns;
    for (int k = 0; k < DS_TOPO_MAX_ROUTE; k++) c->mult[k] = (uint32_t)per_rail;
  }
  if (agg) {
    uint32_t chan = c->has_proto ? c->mult[0] : 1;
    c->agg = 1;
    DS_CHECK_GOTO(ds__coll_tree_plan_agg(plan, s->topo, err), st, fail);
    for (int32_t ti = 0; ti < c->n_trees; ti++) {
      const struct tree *pt = &plan->trees[ti];
      struct tree *t = &c->trees[ti];
      t->agg_links = pt->agg_links;
      t->n_agg = pt->n_agg;
      t->agg_mult = malloc(((size_t)pt->n_agg + 1) * sizeof *t->agg_mult);
      if (!t->agg_mult) goto oom;
      for (int32_t k = 0; k < pt->n_agg; k++) t->agg_mult[k] = pt->agg_mult[k] * chan;
    }
    DS_CHECK_GOTO(agg_leads(c, plan, s->topo, chan, p, err), st, fail);
    for (int32_t ti = 0; ti < c->n_trees; ti++) { /* needed for the leads only */
      free(c->trees[ti].route_lat_ns);
      c->trees[ti].route_lat_ns = NULL;
    }
  }
  *out = &c->base;
  return DS_OK;
oom:
  st = ds_err_set(err, DS_ENOMEM, "all-reduce: out of memory");
fail:
  tree_destroy(&c->base);
  return st;
}

ds_status ds__coll_tree_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                            struct ds_err *err) {
  return create(spec, SHAPE_DBTREE, out, err);
}

ds_status ds__coll_reduce_bcast_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                                    struct ds_err *err) {
  return create(spec, SHAPE_STAR, out, err);
}

ds_status ds__coll_nvls_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                            struct ds_err *err) {
  if (!spec->topo->nvls)
    return ds_err_set(err, DS_EUSAGE,
                      "all-reduce nvls: topology %s has no NVLS-capable switch (NVLS "
                      "needs an nvswitch of Hopper or later GPUs; key intra_node.nvls, "
                      "docs/topologies.md)", spec->topo->name);
  return create(spec, SHAPE_HUB, out, err);
}
