/*
 * The aggregated double binary tree (sim/coll/coll_tree.c's header says what it
 * is): per tree, the distinct links of its streams with their weights and
 * the lead that makes one flow end when the per-flow tree would, exactly
 * where NCCL's per-channel caps bind and a lower bound elsewhere
 * (docs/collectives.md, "Aggregated tree").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/coll_tree_impl.h"

/* A stream crossing a link, for the aggregate's link bound (ds__coll_tree_agg_setup). */
struct crossing {
  int32_t link;
  double head_ns; /* its first piece is at its sender */
  double tail_ns; /* the least the collective lasts after its last byte */
};

/* Latest tail first (crossings of one link). */
static int cmp_crossing(const void *a, const void *b) {
  const struct crossing *x = a, *y = b;
  return (x->tail_ns < y->tail_ns) - (x->tail_ns > y->tail_ns);
}

/* The link bound over the m crossings of one link (sorted latest tail
 * first) that start at h or later: h + their bytes at bw (stream_ns each)
 * + the least tail, over every set of them with tail >= u. */
static double link_bound_from(const struct crossing *x, int32_t m, double h,
                              double stream_ns) {
  double best = 0;
  int32_t k = 0;
  for (int32_t i = 0; i < m; i++) {
    if (x[i].head_ns < h) continue;
    double b = h + ++k * stream_ns + x[i].tail_ns;
    if (b > best) best = b;
  }
  return best;
}

/* The link bound over one link: every head as h, O(m^2); past 256
 * crossings only the earliest, O(m), a weaker bound but still one. */
static double link_bound_ns(const struct crossing *x, int32_t m, double stream_ns) {
  double first = INFINITY;
  for (int32_t i = 0; i < m; i++) first = fmin(first, x[i].head_ns);
  double best = link_bound_from(x, m, first, stream_ns);
  for (int32_t j = 0; m <= 256 && j < m; j++)
    best = fmax(best, link_bound_from(x, m, x[j].head_ns, stream_ns));
  return best;
}

/* The aggregated double binary tree: per tree, its links and weights and
 * its leading latency, from two lower bounds on the per-flow tree, both
 * uncontended (every tree of the collective running, nothing else). A
 * stream s (an edge's pieces up, or down) has its first piece at its
 * sender at head_s at the earliest; a piece holds its links at least t_s
 * = a piece's bytes / min(cap, bw / channels) on its slowest link (the
 * stream alone; with its twins, below, sharing it), then its latency a_s
 * trails; after its last byte the collective lasts at least tail_s. With
 * up(v) the largest sum of (t + a) over the streams from a leaf to v,
 * dn(v) that sum from the root down to v, rest(v) from v up to the root
 * and deep(v) from v down to its deepest descendant: v's up-stream has
 * head up(v) and tail a_s + rest(parent) + max dn; the down-stream to v
 * head up(root) + dn(parent) and tail a_s + deep(v).
 *   - The streams: T_pipe = start + max over s (head_s + P t_s + tail_s)
 *     (the last piece passing the stream P - 1 pieces after the first).
 *   - The links: the streams crossing a link carry X each (channels
 *     times X on the link), so for any set of them
 *       T_link = start + their earliest head + their bytes / bw
 *                + their least tail  (the largest over links and sets).
 * The one flow moves X at r = min(cap, bw / (m x channels)) over the
 * tree's links (m: the streams of every tree crossing the link), so lead =
 * max(T_pipe, T_link) - X / r. Where the caps bind (cap <= bw / (m x
 * channels) on every link) every stream moves a piece in t = X / (P cap)
 * and r = cap: T_pipe = start + lat + (P + H - 1) t along the deepest path
 * is the per-flow time exactly (the top of the file), T_link below it.
 * Elsewhere the per-flow tree lies above both; docs/collectives.md has how
 * far. chan: the channels a flow stands for. */
ds_status ds__coll_tree_agg_setup(struct tree_coll *c, const struct ds_topo *topo,
                                  uint32_t chan, const uint32_t *load, struct ds_err *err) {
  ds_status st = DS_OK;
  int32_t nv = c->nv, ne = c->ne;
  double bytes = c->flow_bytes * c->pieces; /* X */
  double link_ns = 0;
  int64_t n_cross = 0;
  for (int32_t ti = 0; ti < c->n_trees; ti++) n_cross += c->trees[ti].route_first[2 * ne];
  struct crossing *cross = malloc(((size_t)n_cross + 1) * sizeof *cross);
  /* crossings grouped by link (load[] counts them), each group sorted by
   * tail below: link_bound_ns does not depend on the order of equal tails */
  int64_t *slot = malloc(((size_t)topo->n_links + 1) * sizeof *slot);
  double *pipe = malloc((size_t)c->n_trees * sizeof *pipe);
  double *t_ns = malloc(2 * (size_t)ne * sizeof *t_ns);
  double *up = malloc((size_t)nv * sizeof *up), *dn = malloc((size_t)nv * sizeof *dn);
  double *rest = malloc((size_t)nv * sizeof *rest), *deep = malloc((size_t)nv * sizeof *deep);
  int32_t *order = malloc((size_t)nv * sizeof *order);
  if (!cross || !slot || !pipe || !t_ns || !up || !dn || !rest || !deep || !order) goto oom;
  for (int32_t l = 0, sum = 0; l <= topo->n_links; l++) {
    slot[l] = sum;
    if (l < topo->n_links) sum += (int32_t)load[l];
  }
  for (int32_t ti = 0; ti < c->n_trees; ti++) {
    struct tree *t = &c->trees[ti];
    const double *lat = t->route_lat_ns;
    double dn_max = 0;
    /* Trees with the same parents and routes (both trees on one node) move
     * in lockstep: their streams share every link. (NVLSTree's rails have
     * the same parents but other heads, so other routes.) */
    int32_t twins = 0;
    for (int32_t tj = 0; tj < c->n_trees; tj++) {
      const struct tree *u = &c->trees[tj];
      twins += memcmp(t->parent, u->parent, (size_t)nv * sizeof *t->parent) == 0 &&
               t->route_first[2 * ne] == u->route_first[2 * ne] &&
               memcmp(t->route_links, u->route_links,
                      (size_t)t->route_first[2 * ne] * sizeof *t->route_links) == 0;
    }
    for (int32_t r = 0; r < 2 * ne; r++) {
      double alone = c->cap;
      for (int32_t k = t->route_first[r]; k < t->route_first[r + 1]; k++) {
        double bw = topo->links[t->route_links[k]].bw_bytes_per_s / ((double)chan * twins);
        if (bw < alone) alone = bw;
      }
      if (!(alone > 0)) {
        st = ds_err_set(err, DS_EINTERNAL, "aggregated tree: stream %d has no rate", r);
        goto out;
      }
      t_ns[r] = c->flow_bytes / alone * 1e9; /* 0 over no link and no cap */
    }
    /* Vertices breadth first from the root: parents before children. */
    int32_t n_order = 1;
    order[0] = t->root;
    for (int32_t h = 0; h < n_order; h++)
      for (int32_t k = t->child_first[order[h]]; k < t->child_first[order[h] + 1]; k++)
        order[n_order++] = t->edge_child[t->child_edge[k]];
    if (n_order != nv) {
      st = ds_err_set(err, DS_EINTERNAL, "aggregated tree: %d of %d vertices reached",
                      n_order, nv);
      goto out;
    }
    /* up: from the leaves; deep: the longest way down below v. */
    for (int32_t v = 0; v < nv; v++) up[v] = deep[v] = 0;
    for (int32_t h = nv - 1; h > 0; h--) {
      int32_t v = order[h], p = t->parent[v], e = t->edge_of[v];
      double at = up[v] + t_ns[2 * e] + lat[2 * e];
      double below = deep[v] + t_ns[2 * e + 1] + lat[2 * e + 1];
      if (at > up[p]) up[p] = at;
      if (below > deep[p]) deep[p] = below;
    }
    /* dn: from the root; rest: v's way up to the root. */
    dn[t->root] = rest[t->root] = 0;
    for (int32_t h = 1; h < nv; h++) {
      int32_t v = order[h], p = t->parent[v], e = t->edge_of[v];
      dn[v] = dn[p] + t_ns[2 * e + 1] + lat[2 * e + 1];
      rest[v] = rest[p] + t_ns[2 * e] + lat[2 * e];
      if (dn[v] > dn_max) dn_max = dn[v];
    }
    pipe[ti] = 0;
    for (int32_t h = 1; h < nv; h++) {
      int32_t v = order[h], p = t->parent[v], e = t->edge_of[v];
      for (int dir = 0; dir < 2; dir++) {
        int32_t r = 2 * e + dir;
        double hd = dir == 0 ? up[v] : up[t->root] + dn[p];
        double tl = lat[r] + (dir == 0 ? rest[p] + dn_max : deep[v]);
        pipe[ti] = fmax(pipe[ti], hd + c->pieces * t_ns[r] + tl);
        for (int32_t k = t->route_first[r]; k < t->route_first[r + 1]; k++)
          cross[slot[t->route_links[k]]++] = (struct crossing){t->route_links[k], hd, tl};
      }
    }
  }
  for (int64_t a = 0, b; a < n_cross; a = b) {
    int32_t l = cross[a].link;
    for (b = a; b < n_cross && cross[b].link == l; b++) continue;
    qsort(cross + a, (size_t)(b - a), sizeof *cross, cmp_crossing);
    double busy = link_bound_ns(cross + a, (int32_t)(b - a),
                                bytes * chan / topo->links[l].bw_bytes_per_s * 1e9);
    if (busy > link_ns) link_ns = busy;
  }
  for (int32_t ti = 0; ti < c->n_trees; ti++) {
    struct tree *t = &c->trees[ti];
    int32_t used = t->route_first[2 * ne];
    double rate = c->cap;
    for (int32_t k = 0; k < used; k++) {
      int32_t l = t->route_links[k];
      double share = topo->links[l].bw_bytes_per_s / ((double)load[l] * chan);
      if (share < rate) rate = share;
    }
    double data_ns = bytes / rate * 1e9;
    t->agg_lead_ns =
        c->start_lat_ns + (pipe[ti] > link_ns ? pipe[ti] : link_ns) - data_ns;
  }
  goto out;
oom:
  st = ds_err_set(err, DS_ENOMEM, "all-reduce: out of memory");
out:
  free(cross), free(slot), free(pipe), free(t_ns), free(up), free(dn), free(rest),
      free(deep), free(order);
  return st;
}
