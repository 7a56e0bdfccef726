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
  if (p < min_pieces) p = min_pieces;
  return p >= 1 ? (int32_t)p : 1;
}

double ds_coll_tree_min_piece_bytes(const struct ds_coll_proto *p) {
  double unit = p ? ds_coll_forward_unit_bytes(p->proto) : 0;
  if (unit > 0) return unit;
  return DS_TREE_MIN_PIECE_BYTES;
}

/* NCCL's binary tree over m nodes (trees.cc ncclGetBtree): the parent of
 * node r, -1 for node 0. */
static int32_t btree_parent(int32_t r, int32_t m) {
  if (r == 0) return -1;
  int32_t bit = r & -r;
  int32_t up = (r ^ bit) | (bit << 1);
  return up >= m ? (r ^ bit) : up;
}

/* The complementary tree (ncclGetDtree): mirrored for even m, shifted by
 * one for odd m. */
static int32_t dtree_parent(int32_t r, int32_t m) {
  if (m % 2 == 0) {
    int32_t p = btree_parent(m - 1 - r, m);
    return p < 0 ? -1 : m - 1 - p;
  }
  int32_t p = btree_parent((r - 1 + m) % m, m);
  return p < 0 ? -1 : (p + 1) % m;
}

int32_t ds_coll_dtree_parent(int tree, int32_t r, int32_t m) {
  return tree == 0 ? btree_parent(r, m) : dtree_parent(r, m);
}

static int32_t depth_of(const int32_t *parent, int32_t nv) {
  int32_t best = 0;
  for (int32_t v = 0; v < nv; v++) {
    int32_t d = 0;
    for (int32_t u = v; parent[u] >= 0 && d <= nv; u = parent[u]) d++;
    if (d > best) best = d;
  }
  return best;
}

/* Members grouped by node (nodes in order of first appearance, members in
 * member order) and the tree channels across them. */
struct dbtree_layout {
  int32_t m;        /* nodes */
  int32_t rails;    /* K: one per NIC when every node reaches K >= 2; else 1 */
  int32_t *first;   /* [m+1] node j's members: order[first[j] .. first[j+1]) */
  int32_t *order;   /* [n] */
  int32_t *head;    /* [rails * m] rail r's head on node j (rails >= 2) */
};

static void layout_release(struct dbtree_layout *g) {
  free(g->first);
  free(g->order);
  free(g->head);
}

/* Groups the members by node and, across nodes, finds the rails: K = the
 * fewest distinct NICs among a node's members; with K >= 2, rail r's head
 * on node j is node j's first member on its r-th NIC (NICs in order of
 * their first member). */
static ds_status layout_build(const struct ds_topo *topo, const int32_t *gpus, int32_t n,
                              struct dbtree_layout *g, struct ds_err *err) {
  ds_status st = DS_OK;
  int32_t k_min = INT32_MAX;
  int32_t *node_id = malloc((size_t)n * sizeof *node_id); /* topology node per node */
  int32_t *nic = malloc((size_t)n * sizeof *nic);
  int32_t *nics = malloc((size_t)n * sizeof *nics);       /* distinct, per node */
  int32_t *fill = malloc((size_t)n * sizeof *fill);
  int32_t *node_of = malloc((size_t)n * sizeof *node_of);
  struct ds_nic_search ns = {.queue = malloc((size_t)topo->n_vertices * sizeof *ns.queue),
                             .seen = calloc((size_t)topo->n_vertices, sizeof *ns.seen)};
  memset(g, 0, sizeof *g);
  g->first = calloc((size_t)n + 1, sizeof *g->first);
  g->order = malloc((size_t)n * sizeof *g->order);
  if (!node_id || !nic || !nics || !fill || !node_of || !ns.queue || !ns.seen || !g->first ||
      !g->order) {
    st = ds_err_set(err, DS_ENOMEM, "all-reduce tree: out of memory");
    goto out;
  }
  for (int32_t i = 0; i < n; i++) {
    int32_t tn = topo->vertex_node[topo->gpu_vertex[gpus[i]]], k = 0;
    while (k < g->m && node_id[k] != tn) k++;
    if (k == g->m) node_id[g->m++] = tn;
    node_of[i] = k;
    g->first[k + 1]++;
  }
  for (int32_t j = 0; j < g->m; j++) g->first[j + 1] += g->first[j];
  for (int32_t j = 0; j < g->m; j++) fill[j] = g->first[j];
  for (int32_t i = 0; i < n; i++) g->order[fill[node_of[i]]++] = i;
  g->rails = 1;
  if (g->m < 2) goto out;
  /* Node j's distinct NICs: nics[first[j] .. first[j] + cnt). */
  for (int32_t j = 0; j < g->m; j++) {
    int32_t cnt = 0;
    for (int32_t q = g->first[j]; q < g->first[j + 1]; q++) {
      int32_t i = g->order[q], dup = 0;
      nic[i] = ds_nearest_nic(topo, &ns, gpus[i]);
      for (int32_t p = 0; p < cnt && !dup; p++) dup = nics[g->first[j] + p] == nic[i];
      if (nic[i] >= 0 && !dup) nics[g->first[j] + cnt++] = nic[i];
    }
    if (cnt < k_min) k_min = cnt;
  }
  if (k_min < 2) goto out;
  g->head = malloc((size_t)k_min * g->m * sizeof *g->head);
  if (!g->head) {
    st = ds_err_set(err, DS_ENOMEM, "all-reduce tree: out of memory");
    goto out;
  }
  g->rails = k_min;
  for (int32_t j = 0; j < g->m; j++)
    for (int32_t r = 0; r < k_min; r++) {
      int32_t q = g->first[j];
      while (nic[g->order[q]] != nics[g->first[j] + r]) q++;
      g->head[r * g->m + j] = q; /* position in order[] */
    }
out:
  free(node_id), free(nic), free(nics), free(fill), free(node_of), free(ns.queue),
      free(ns.seen);
  return st;
}

/* Parents of tree t (0 or 1) of rail r of the double binary tree. */
static void dbtree_parents(const struct dbtree_layout *g, int32_t r, int t, int32_t *parent) {
  int32_t n = g->first[g->m];
  for (int32_t i = 0; i < n; i++) parent[i] = -1;
  /* One node: both trees are the same chain (NCCL's tree inside a node). */
  if (g->m == 1) t = 0;
  for (int32_t j = 0; j < g->m; j++) {
    int32_t f = g->first[j], len = g->first[j + 1] - f;
    /* The node's chain, from the member facing the other nodes: rail r's
     * head and the others cyclically after it; with one rail, tree 0 from
     * the first member, tree 1 from the last, backwards. */
    for (int32_t q = 1; q < len; q++) {
      int32_t at, up;
      if (g->rails > 1) {
        int32_t h = g->head[r * g->m + j] - f;
        at = g->order[f + (h + q) % len];
        up = g->order[f + (h + q - 1) % len];
      } else if (t == 0) {
        at = g->order[f + q];
        up = g->order[f + q - 1];
      } else {
        at = g->order[f + len - 1 - q];
        up = g->order[f + len - q];
      }
      parent[at] = up;
    }
  }
  if (g->m == 1) return;
  for (int32_t j = 0; j < g->m; j++) {
    int32_t pj = ds_coll_dtree_parent(t, j, g->m);
    if (pj < 0) continue;
    int32_t head, up;
    if (g->rails > 1) {
      head = g->order[g->head[r * g->m + j]];
      up = g->order[g->head[r * g->m + pj]];
    } else {
      head = g->order[t == 0 ? g->first[j] : g->first[j + 1] - 1];
      up = g->order[t == 0 ? g->first[pj] : g->first[pj + 1] - 1];
    }
    parent[head] = up;
  }
}

/* The switch vertex of NVLS: every member's route to another member must be
 * GPU -> switch -> GPU through one switch. Fills up/down links per member. */
static ds_status hub_routes(struct ds_topo *topo, const int32_t *gpus, int32_t n,
                            int32_t *up_link, int32_t *down_link, struct ds_err *err) {
  int32_t route[DS_TOPO_MAX_ROUTE], len, hub = -1;
  for (int32_t i = 0; i < n; i++) {
    int32_t j = (i + 1) % n;
    DS_CHECK(ds_topo_route(topo, gpus[i], gpus[j], route, DS_TOPO_MAX_ROUTE, &len, err));
    int32_t sw = topo->links[route[0]].dst;
    if (len != 2 || topo->vertex_kind[sw] != DS_VERTEX_SWITCH || (hub >= 0 && sw != hub))
      return ds_err_set(err, DS_EUSAGE,
                        "all-reduce nvls: GPUs %d and %d do not meet at one NVSwitch "
                        "(NVLS needs every GPU on the same switch)", gpus[i], gpus[j]);
    hub = sw;
    up_link[i] = route[0];
    down_link[j] = route[1];
  }
  return DS_OK;
}

static int cmp_link(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* A collective's tree: its own arrays, and the shape's too unless shared. */
static void tree_release(struct tree *t) {
  free(t->route_lat_ns);
  free(t->v);
  free(t->e);
  free(t->agg_mult);
  if (t->shared) return;
  free(t->parent);
  free(t->edge_of);
  free(t->child_first);
  free(t->child_edge);
  free(t->edge_child);
  free(t->route_first);
  free(t->route_links);
  free(t->route_class);
  free(t->agg_links);
}

/* NVLSTree: the route of the edge from switch vertex `child` up to its
 * parent (dir 0) or down (dir 1): heads[j] is node j's head in this tree. */
static ds_status switch_route(struct ds_topo *topo, const int32_t *gpus, int32_t n,
                              const int32_t *hub_up, const int32_t *hub_down,
                              const int32_t *heads, int32_t child, int32_t par, int dir,
                              int32_t *links, int32_t *len, struct ds_err *err) {
  int32_t h = heads[child - n], hp = heads[par - n], net = 0;
  if (dir == 0) {
    links[0] = hub_down[h];
    DS_CHECK(ds_topo_route(topo, gpus[h], gpus[hp], links + 1, DS_TOPO_MAX_ROUTE - 2, &net,
                           err));
  } else {
    DS_CHECK(ds_topo_route(topo, gpus[hp], gpus[h], links, DS_TOPO_MAX_ROUTE - 2, &net, err));
    links[net] = hub_up[h];
  }
  *len = net + 1;
  return DS_OK;
}

/* Edges, children and routes of a plan's tree whose parent[] is filled;
 * route_lat_ns: each route's link latency sum. n: the members (vertices
 * from n on are switches); heads: NVLSTree's heads of this tree per node,
 * else NULL. */
static ds_status tree_setup(struct tree *t, int32_t nv, int32_t n, struct ds_topo *topo,
                            const int32_t *gpus, const int32_t *hub_up,
                            const int32_t *hub_down, const int32_t *heads,
                            struct ds_err *err) {
  int32_t ne = nv - 1;
  t->edge_of = malloc((size_t)nv * sizeof *t->edge_of);
  t->child_first = calloc((size_t)nv + 1, sizeof *t->child_first);
  t->child_edge = malloc(((size_t)ne + 1) * sizeof *t->child_edge);
  t->edge_child = malloc(((size_t)ne + 1) * sizeof *t->edge_child);
  t->route_first = malloc((2 * (size_t)ne + 1) * sizeof *t->route_first);
  t->route_links = malloc((2 * (size_t)ne * DS_TOPO_MAX_ROUTE + 1) * sizeof *t->route_links);
  t->route_lat_ns = malloc((2 * (size_t)ne + 1) * sizeof *t->route_lat_ns);
  t->route_class = malloc(2 * (size_t)ne + 1);
  if (!t->edge_of || !t->child_first || !t->child_edge || !t->edge_child ||
      !t->route_first || !t->route_links || !t->route_lat_ns || !t->route_class)
    return ds_err_set(err, DS_ENOMEM, "all-reduce: out of memory");
  int32_t e = 0, used = 0;
  t->root = -1;
  for (int32_t v = 0; v < nv; v++) {
    t->edge_of[v] = -1;
    if (t->parent[v] < 0) {
      if (t->root >= 0) return ds_err_set(err, DS_EINTERNAL, "tree with two roots");
      t->root = v;
      continue;
    }
    t->edge_of[v] = e;
    t->edge_child[e] = v;
    t->child_first[t->parent[v] + 1]++;
    e++;
  }
  if (e != ne || t->root < 0 || depth_of(t->parent, nv) > nv)
    return ds_err_set(err, DS_EINTERNAL, "malformed tree");
  for (int32_t v = 0; v < nv; v++) t->child_first[v + 1] += t->child_first[v];
  int32_t *fill = calloc((size_t)nv, sizeof *fill);
  if (!fill) return ds_err_set(err, DS_ENOMEM, "all-reduce: out of memory");
  for (int32_t k = 0; k < ne; k++) {
    int32_t p = t->parent[t->edge_child[k]];
    t->child_edge[t->child_first[p] + fill[p]++] = k;
  }
  free(fill);
  for (int32_t k = 0; k < ne; k++) {
    int32_t child = t->edge_child[k], par = t->parent[child];
    for (int dir = 0; dir < 2; dir++) {
      int32_t r = 2 * k + dir, len = 0;
      int32_t *links = t->route_links + used;
      t->route_first[r] = used;
      if (heads && child >= n) {
        DS_CHECK(switch_route(topo, gpus, n, hub_up, hub_down, heads, child, par, dir, links,
                              &len, err));
      } else if (hub_up && dir == 0) {
        links[0] = hub_up[child];
        len = 1;
      } else if (hub_up) {
        links[0] = hub_down[child];
        len = 1;
      } else {
        int32_t src = dir == 0 ? child : par, dst = dir == 0 ? par : child;
        DS_CHECK(
            ds_topo_route(topo, gpus[src], gpus[dst], links, DS_TOPO_MAX_ROUTE, &len, err));
      }
      double lat = 0;
      for (int32_t q = 0; q < len; q++) lat += topo->links[links[q]].lat_ns;
      t->route_lat_ns[r] = lat;
      t->route_class[r] = (uint8_t)ds_route_hop_class(topo, links, len);
      used += len;
    }
  }
  t->route_first[2 * ne] = used;
  /* Most routes are shorter than DS_TOPO_MAX_ROUTE: keep what they use. */
  int32_t *fit = realloc(t->route_links, ((size_t)used + 1) * sizeof *fit);
  if (fit) t->route_links = fit;
  return DS_OK;
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
  for (int32_t i = 0; c->trees && i < c->n_trees; i++) tree_release(&c->trees[i]);
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

static void plan_free(struct ds__tree_plan *p) {
  for (int32_t i = 0; p->trees && i < p->n_trees; i++) tree_release(&p->trees[i]);
  free(p->trees);
  free(p->load);
  for (int i = 0; i < TREE_AGG_MEMO; i++) free(p->memo[i].lead);
  free(p);
}

void ds__coll_tree_plans_free(struct ds__tree_plan *plans) {
  while (plans) {
    struct ds__tree_plan *next = plans->next;
    plan_free(plans);
    plans = next;
  }
}

/* NVLSTree: each member's links to and from its node's switch (hub_routes
 * node by node; every node needs two members on one NVSwitch). */
static ds_status node_hub_routes(struct ds_topo *topo, const int32_t *gpus,
                                 const struct dbtree_layout *g, int32_t *up, int32_t *down,
                                 struct ds_err *err) {
  int32_t n = g->first[g->m];
  ds_status st = DS_OK;
  int32_t *tg = malloc(3 * (size_t)n * sizeof *tg);
  if (!tg) return ds_err_set(err, DS_ENOMEM, "all-reduce nvls: out of memory");
  for (int32_t j = 0; j < g->m && st == DS_OK; j++) {
    int32_t f = g->first[j], len = g->first[j + 1] - f;
    if (len < 2) {
      st = ds_err_set(err, DS_EUSAGE,
                      "all-reduce nvls: node %d has one member; NVLSTree needs every node "
                      "to hold at least two GPUs on its NVSwitch", j);
      break;
    }
    for (int32_t q = 0; q < len; q++) tg[q] = gpus[g->order[f + q]];
    st = hub_routes(topo, tg, len, tg + n, tg + 2 * n, err);
    for (int32_t q = 0; q < len && st == DS_OK; q++) {
      up[g->order[f + q]] = tg[n + q];
      down[g->order[f + q]] = tg[2 * n + q];
    }
  }
  free(tg);
  return st;
}

/* NVLSTree: parents of tree t (members under their node's switch, the
 * switches in NCCL's tree t over the nodes) and its head on each node. */
static void nvls_tree_parents(const struct dbtree_layout *g, int32_t r, int t,
                              int32_t *parent, int32_t *heads) {
  int32_t n = g->first[g->m];
  for (int32_t j = 0; j < g->m; j++) {
    for (int32_t q = g->first[j]; q < g->first[j + 1]; q++) parent[g->order[q]] = n + j;
    int32_t pj = ds_coll_dtree_parent(t, j, g->m);
    parent[n + j] = pj < 0 ? -1 : n + pj;
    if (g->rails > 1)
      heads[j] = g->order[g->head[r * g->m + j]];
    else
      heads[j] = g->order[t == 0 ? g->first[j] : g->first[j + 1] - 1];
  }
}

/* The trees of a shape over the ring's members, with their routes (nvls
 * over members on several nodes is NCCL's NVLSTree: run_shape says). */
static ds_status plan_build(struct ds_topo *topo, const struct ds_ring *r, enum tree_shape shape,
                            int32_t root, struct ds__tree_plan **out, struct ds_err *err) {
  const int32_t *gpus = r->gpus;
  int32_t n = r->n;
  ds_status st = DS_ENOMEM;
  int32_t *hub_up = NULL, *hub_down = NULL, *heads = NULL;
  struct dbtree_layout lay = {0};
  *out = NULL;
  struct ds__tree_plan *p = calloc(1, sizeof *p);
  if (!p) return ds_err_set(err, DS_ENOMEM, "all-reduce: out of memory");
  p->shape = shape;
  p->root = shape == SHAPE_STAR ? root : -1;
  if (shape == SHAPE_DBTREE || (shape == SHAPE_HUB && n > 1))
    DS_CHECK_GOTO(layout_build(topo, gpus, n, &lay, err), st, fail);
  enum tree_shape run = shape == SHAPE_HUB && lay.m > 1 ? SHAPE_NVLS_TREE : shape;
  int tree_like = run == SHAPE_DBTREE || run == SHAPE_NVLS_TREE;
  int32_t nodes = run == SHAPE_NVLS_TREE ? lay.m : 0;
  p->run_shape = run;
  p->nv = n + (run == SHAPE_HUB) + nodes;
  p->ne = p->nv - 1;
  p->rails = tree_like ? lay.rails : 1;
  p->n_trees = tree_like ? 2 * p->rails : 1;
  p->trees = calloc((size_t)p->n_trees, sizeof *p->trees);
  if (!p->trees) goto oom;
  if (run == SHAPE_HUB || run == SHAPE_NVLS_TREE) {
    hub_up = malloc((size_t)n * sizeof *hub_up);
    hub_down = malloc((size_t)n * sizeof *hub_down);
    if (!hub_up || !hub_down) goto oom;
    if (run == SHAPE_NVLS_TREE)
      DS_CHECK_GOTO(node_hub_routes(topo, gpus, &lay, hub_up, hub_down, err), st, fail);
    else if (n > 1)
      DS_CHECK_GOTO(hub_routes(topo, gpus, n, hub_up, hub_down, err), st, fail);
  }
  if (run == SHAPE_NVLS_TREE) {
    heads = malloc((size_t)p->n_trees * nodes * sizeof *heads);
    if (!heads) goto oom;
  }
  for (int32_t ti = 0; ti < p->n_trees; ti++) {
    struct tree *t = &p->trees[ti];
    t->parent = malloc((size_t)p->nv * sizeof *t->parent);
    if (!t->parent) goto oom;
    if (run == SHAPE_DBTREE)
      dbtree_parents(&lay, ti / 2, ti % 2, t->parent);
    else if (run == SHAPE_NVLS_TREE)
      nvls_tree_parents(&lay, ti / 2, ti % 2, t->parent, heads + (size_t)ti * nodes);
    else
      for (int32_t v = 0; v < p->nv; v++)
        t->parent[v] = run == SHAPE_STAR ? (v == root ? -1 : root) : (v == n ? -1 : n);
    int32_t d = depth_of(t->parent, p->nv);
    if (d > p->depth) p->depth = d;
  }
  if (n > 1)
    for (int32_t ti = 0; ti < p->n_trees; ti++)
      DS_CHECK_GOTO(tree_setup(&p->trees[ti], p->nv, n, topo, gpus, hub_up, hub_down,
                               heads ? heads + (size_t)ti * nodes : NULL, err),
                    st, fail);
  layout_release(&lay);
  free(hub_up);
  free(hub_down);
  free(heads);
  *out = p;
  return DS_OK;
oom:
  st = ds_err_set(err, DS_ENOMEM, "all-reduce: out of memory");
fail:
  layout_release(&lay);
  free(hub_up);
  free(hub_down);
  free(heads);
  plan_free(p);
  return st;
}

/* The plan of a shape over the ring's members: cached on the ring. The
 * cache is a memo (a plan is what plan_build would build again), so the
 * ring stays const to its users. */
static ds_status plan_get(struct ds_topo *topo, const struct ds_ring *r, enum tree_shape shape,
                          int32_t root, struct ds__tree_plan **out, struct ds_err *err) {
  struct ds_ring *memo = (struct ds_ring *)r;
  int32_t key_root = shape == SHAPE_STAR ? root : -1;
  for (struct ds__tree_plan *p = memo->tree_plans; p; p = p->next)
    if (p->shape == shape && p->root == key_root) {
      *out = p;
      return DS_OK;
    }
  DS_CHECK(plan_build(topo, r, shape, root, out, err));
  (*out)->next = memo->tree_plans;
  memo->tree_plans = *out;
  return DS_OK;
}

/* The aggregate's plan part: streams per link, each tree's links. */
static ds_status plan_agg(struct ds__tree_plan *p, const struct ds_topo *topo,
                          struct ds_err *err) {
  if (p->load) return DS_OK;
  uint32_t *load = calloc((size_t)topo->n_links + 1, sizeof *load);
  if (!load) return ds_err_set(err, DS_ENOMEM, "all-reduce: out of memory");
  for (int32_t ti = 0; ti < p->n_trees; ti++) {
    struct tree *t = &p->trees[ti];
    int32_t used = t->route_first[2 * p->ne];
    for (int32_t k = 0; k < used; k++) load[t->route_links[k]]++;
    /* Its links in order, each with the streams crossing it: a counting
     * pass over the links (route links are link ids below n_links). */
    free(t->agg_links);
    free(t->agg_mult);
    t->agg_links = malloc(((size_t)used + 1) * sizeof *t->agg_links);
    t->agg_mult = malloc(((size_t)used + 1) * sizeof *t->agg_mult);
    int32_t *sorted = malloc(((size_t)used + 1) * sizeof *sorted);
    if (!t->agg_links || !t->agg_mult || !sorted) {
      free(sorted);
      free(load);
      return ds_err_set(err, DS_ENOMEM, "all-reduce: out of memory");
    }
    memcpy(sorted, t->route_links, (size_t)used * sizeof *sorted);
    qsort(sorted, (size_t)used, sizeof *sorted, cmp_link);
    t->n_agg = 0;
    for (int32_t k = 0; k < used; k++) {
      if (t->n_agg > 0 && t->agg_links[t->n_agg - 1] == sorted[k]) {
        t->agg_mult[t->n_agg - 1]++;
      } else {
        t->agg_links[t->n_agg] = sorted[k];
        t->agg_mult[t->n_agg++] = 1;
      }
    }
    free(sorted);
  }
  p->load = load;
  return DS_OK;
}

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
  DS_CHECK(plan_get(s->topo, s->ring, shape, root, &plan, err));
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
   * (the file's top); the others run per flow whatever the model. */
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
    DS_CHECK_GOTO(plan_agg(plan, s->topo, err), st, fail);
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
