/*
 * The rings that run in place of a ring (ring_rails.h): rails over every
 * NIC across nodes, the best ring order on one node. Invariant: every rail is a permutation of the ring's
 * members, rail_member and rail_pos are inverse maps, and a ring with
 * n_rails 0 runs exactly as before.
 */
#include "sim/coll/ring_rails.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/nccl_model.h"
#include "sim/coll/node_path.h"
#include "sim/coll/ring_channels.h"


static int32_t node_of(const struct ds_topo *t, int32_t gpu) {
  return t->vertex_node[t->gpu_vertex[gpu]];
}

/* ring_rails.h */
int32_t ds_nearest_nic(const struct ds_topo *t, struct ds_nic_search *s, int32_t gpu) {
  int32_t from = t->gpu_vertex[gpu], home = t->vertex_node[from], head = 0, tail = 0;
  uint32_t stamp = ++s->stamp;
  s->queue[tail++] = from;
  s->seen[from] = stamp;
  while (head < tail) {
    int32_t v = s->queue[head++];
    if (t->vertex_kind[v] == DS_VERTEX_NIC) return v;
    if (v != from && t->vertex_kind[v] == DS_VERTEX_GPU) continue;
    for (int32_t i = t->out_first[v]; i < t->out_first[v + 1]; i++) {
      int32_t w = t->links[t->out_links[i]].dst;
      if (s->seen[w] == stamp || t->vertex_node[w] != home) continue;
      s->seen[w] = stamp;
      s->queue[tail++] = w;
    }
  }
  return -1;
}

ds_status ds_ring_nodes_group(const struct ds_topo *t, const int32_t *gpus, int32_t n,
                              struct ds_ring_nodes *g, struct ds_err *err) {
  memset(g, 0, sizeof *g);
  g->node_id = malloc((size_t)n * sizeof *g->node_id);
  g->count = calloc((size_t)n, sizeof *g->count);
  g->node_of = malloc((size_t)n * sizeof *g->node_of);
  g->local_of = malloc((size_t)n * sizeof *g->local_of);
  g->member = malloc((size_t)n * sizeof *g->member);
  g->first = malloc(((size_t)n + 1) * sizeof *g->first);
  if (!g->node_id || !g->count || !g->node_of || !g->local_of || !g->member || !g->first) {
    ds_ring_nodes_release(g);
    return ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", n);
  }
  for (int32_t i = 0; i < n; i++) {
    int32_t tn = node_of(t, gpus[i]), j = 0;
    while (j < g->m && g->node_id[j] != tn) j++;
    if (j == g->m) g->node_id[g->m++] = tn;
    g->node_of[i] = j;
    g->local_of[i] = g->count[j]++;
  }
  g->l = n > 0 ? g->count[0] : 0;
  for (int32_t j = 1; j < g->m; j++)
    if (g->count[j] != g->l) g->l = 0;
  g->first[0] = 0;
  for (int32_t j = 0; j < g->m; j++) g->first[j + 1] = g->first[j] + g->count[j];
  for (int32_t i = 0; i < n; i++) g->member[g->first[g->node_of[i]] + g->local_of[i]] = i;
  return DS_OK;
}

void ds_ring_nodes_release(struct ds_ring_nodes *g) {
  if (!g) return;
  free(g->node_id);
  free(g->count);
  free(g->node_of);
  free(g->local_of);
  free(g->member);
  free(g->first);
  memset(g, 0, sizeof *g);
}

/* Members grouped by node (ds_ring_nodes) and each member's NIC. */
struct groups {
  int32_t m;             /* nodes */
  int32_t min_count;     /* the fewest members a node holds */
  const int32_t *member, *first, *count; /* as struct ds_ring_nodes */
  int32_t *nic;          /* [n] NIC vertex of each member, -1 if none */
  struct ds_ring_nodes nodes;
};

static void groups_free(struct groups *g) {
  free(g->nic);
  ds_ring_nodes_release(&g->nodes);
}

/* Groups the n GPUs by node; finds each one's NIC where rails may run
 * (two or more nodes, each holding two or more members). */
static ds_status group_gpus(const struct ds_topo *t, const int32_t *gpus, int32_t n,
                            struct groups *g, struct ds_err *err) {
  memset(g, 0, sizeof *g);
  DS_CHECK(ds_ring_nodes_group(t, gpus, n, &g->nodes, err));
  g->m = g->nodes.m;
  g->member = g->nodes.member;
  g->first = g->nodes.first;
  g->count = g->nodes.count;
  g->min_count = n;
  for (int32_t j = 0; j < g->m; j++)
    if (g->count[j] < g->min_count) g->min_count = g->count[j];
  if (g->m < 2 || g->min_count < 2) return DS_OK;
  g->nic = malloc((size_t)n * sizeof *g->nic);
  struct ds_nic_search ns = {.queue = malloc((size_t)t->n_vertices * sizeof *ns.queue),
                          .seen = calloc((size_t)t->n_vertices, sizeof *ns.seen)};
  ds_status st = DS_OK;
  if (!g->nic || !ns.queue || !ns.seen)
    st = ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", n);
  for (int32_t i = 0; i < n && st == DS_OK; i++) g->nic[i] = ds_nearest_nic(t, &ns, gpus[i]);
  free(ns.queue);
  free(ns.seen);
  return st;
}

/* The distinct NICs of node j's members, in member order; their count. */
static int32_t node_nics(const struct groups *g, int32_t j, int32_t *nics) {
  int32_t k = 0;
  for (int32_t q = 0; q < g->count[j]; q++) {
    int32_t v = g->nic[g->member[g->first[j] + q]], seen = 0;
    for (int32_t p = 0; p < k && !seen; p++) seen = nics[p] == v;
    if (v >= 0 && !seen) nics[k++] = v;
  }
  return k;
}

/* The rails a ring over these members runs across nodes: the fewest
 * distinct NICs of a node (ring_rails.h); 0 where no rails run (one node,
 * a node with fewer than 2 members, or with fewer than 2 NICs). */
static int32_t rails_of(const struct groups *g, int32_t *nics) {
  if (g->m < 2 || g->min_count < 2) return 0;
  int32_t k_rails = g->min_count;
  for (int32_t j = 0; j < g->m; j++) {
    int32_t kj = node_nics(g, j, nics + g->first[j]);
    if (kj < k_rails) k_rails = kj;
  }
  return k_rails >= 2 ? k_rails : 0;
}

int ds_ring_nodes_uneven(const struct ds_topo *t, const int32_t *gpus, int32_t n, char *buf,
                         size_t cap) {
  struct groups g;
  struct ds_err err;
  if (cap > 0) buf[0] = '\0';
  if (group_gpus(t, gpus, n, &g, &err) != DS_OK) return -1;
  int32_t *nics = g.nic ? malloc((size_t)n * sizeof *nics) : NULL;
  if (g.nic && !nics) {
    groups_free(&g);
    return -1;
  }
  int uneven = g.m >= 2 && g.nodes.l == 0 && (!nics || rails_of(&g, nics) == 0);
  /* runs of equal counts as "R x C" ("125 x 8 + 1"), so the node that
   * stops the rails stays in a short buffer; "..." where it is cut */
  size_t used = 0;
  for (int32_t j = 0, r; uneven && j < g.m && used < cap; j += r) {
    for (r = 1; j + r < g.m && g.count[j + r] == g.count[j]; r++) continue;
    int k = r > 1 ? snprintf(buf + used, cap - used, "%s%d x %d", j ? " + " : "", r, g.count[j])
                  : snprintf(buf + used, cap - used, "%s%d", j ? " + " : "", g.count[j]);
    if (k < 0) break;
    used += (size_t)k;
  }
  if (uneven && used >= cap && cap >= 4) memcpy(buf + cap - 4, "...", 4);
  free(nics);
  groups_free(&g);
  return uneven;
}

/* ring_rails.h */
ds_status ds_ring_node_nics(const struct ds_topo *t, const int32_t *gpus, int32_t n,
                            struct ds_node_nics *out, struct ds_err *err) {
  struct groups g;
  memset(out, 0, sizeof *out);
  DS_CHECK(group_gpus(t, gpus, n, &g, err));
  int32_t *nics = g.nic ? malloc((size_t)n * sizeof *nics) : NULL;
  out->node_id = malloc((size_t)g.m * sizeof *out->node_id);
  out->nics = malloc((size_t)g.m * sizeof *out->nics);
  ds_status st = DS_OK;
  if ((g.nic && !nics) || !out->node_id || !out->nics) {
    st = ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", n);
  } else {
    out->m = g.m;
    for (int32_t j = 0; j < g.m; j++) {
      out->node_id[j] = g.nodes.node_id[j];
      out->nics[j] = nics ? node_nics(&g, j, nics + g.first[j]) : 0;
    }
  }
  free(nics);
  groups_free(&g);
  if (st != DS_OK) ds_node_nics_release(out);
  return st;
}

void ds_node_nics_release(struct ds_node_nics *x) {
  free(x->node_id);
  free(x->nics);
  memset(x, 0, sizeof *x);
}

/* Node j's members in rail k's order: the entry GPU (first member on NIC
 * in), the others cyclically after it, the exit GPU (last member on NIC
 * out) last. */
static void node_order(const struct groups *g, int32_t j, int32_t nic_in, int32_t nic_out,
                       int32_t *out) {
  const int32_t *mem = g->member + g->first[j];
  int32_t l = g->count[j], entry = -1, leave = -1;
  for (int32_t q = 0; q < l; q++) {
    if (entry < 0 && g->nic[mem[q]] == nic_in) entry = q;
    if (g->nic[mem[q]] == nic_out) leave = q;
  }
  int32_t w = 0;
  out[w++] = mem[entry];
  for (int32_t d = 1; d < l; d++) {
    int32_t q = (entry + d) % l;
    if (q != leave) out[w++] = mem[q];
  }
  out[w] = mem[leave];
}

/* Node j's hops for node_path (node_path.h: h->l 0 where no search). */
static ds_status node_hops_of(struct ds_topo *t, const int32_t *gpus, const struct groups *g,
                              int32_t j, uint32_t *load, struct ds_node_hops *h,
                              struct ds_err *err) {
  int32_t l = g->count[j], sel[DS_NODE_PATH_SEARCH_MAX];
  const int32_t *mem = g->member + g->first[j];
  char what[48];
  memset(h, 0, sizeof *h);
  if (l < 4 || l > DS_NODE_PATH_SEARCH_MAX) return DS_OK;
  for (int32_t q = 0; q < l; q++) sel[q] = gpus[mem[q]];
  snprintf(what, sizeof what, "ring of %d GPUs", l);
  return ds_node_hops_of(t, sel, l, load, what, h, err);
}

/* Node j's path in a rail, entry out[0] and exit out[l-1] kept: the order
 * of the members between them of best score (node_path.h), in place of
 * node_order's cyclic one where it scores strictly better. NCCL walks a
 * node's GPUs from the NIC's GPU to the next NIC's over the fastest path
 * type it can (search.cc ncclTopoCompute starts typeIntra at PATH_NVL and
 * raises it only when nothing is found; ncclTopoSearchRecGpu), so on a
 * DGX-1 its rails stay on NVLink where member order would cross PCIe and
 * QPI (hop 2 -> 4). A rail's hops load their links one way. */
static void node_path(const struct ds_node_hops *h, const struct groups *g, int32_t *out) {
  int32_t l = h->l, local[DS_NODE_PATH_SEARCH_MAX], member_of_local[DS_NODE_PATH_SEARCH_MAX];
  for (int32_t q = 0; q < l; q++) {
    local[q] = g->nodes.local_of[out[q]];
    member_of_local[local[q]] = out[q];
  }
  ds_node_path_search(h, local, 1, 0);
  for (int32_t q = 0; q < l; q++) out[q] = member_of_local[local[q]];
}

/* rails_busbw: K * min over links of bw / (hops of all rails crossing it);
 * one rail: its own hops' (ds_ring_busbw, a rail running no rails). */
static ds_status rails_bound(const struct ds_topo *t, struct ds_ring *r, struct ds_err *err) {
  if (r->n_rails == 1) {
    r->rails_busbw = ds_ring_busbw(&r->rails[0]);
    return DS_OK;
  }
  uint32_t *hops = calloc((size_t)t->n_links + 1, sizeof *hops);
  if (!hops) return ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", r->n);
  for (int32_t k = 0; k < r->n_rails; k++)
    for (int32_t a = 0; a < r->rails[k].n_agg; a++)
      hops[r->rails[k].agg_links[a]] += r->rails[k].agg_mult[a];
  double share = -1;
  for (int32_t l = 0; l < t->n_links; l++)
    if (hops[l] > 0) {
      double s = t->links[l].bw_bytes_per_s / hops[l];
      if (share < 0 || s < share) share = s;
    }
  for (int32_t k = 0; k < r->n_rails; k++) {
    struct ds_ring *rail = &r->rails[k];
    free(rail->hop_rails_bw);
    rail->hop_rails_bw = malloc((size_t)rail->n * sizeof *rail->hop_rails_bw);
    if (!rail->hop_rails_bw) {
      free(hops);
      return ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", r->n);
    }
    for (int32_t i = 0; i < rail->n; i++) {
      double b = -1;
      for (int32_t j = rail->hop_first[i]; j < rail->hop_first[i + 1]; j++) {
        double s = t->links[rail->hop_links[j]].bw_bytes_per_s / hops[rail->hop_links[j]];
        if (b < 0 || s < b) b = s;
      }
      rail->hop_rails_bw[i] = b > 0 ? b : rail->hop_bw[i];
    }
  }
  free(hops);
  r->rails_busbw = r->n_rails * share;
  return DS_OK;
}

/* Allocates the rails of r and builds rail k over orders[k*n ..]. */
static ds_status set_rails(struct ds_topo *t, struct ds_ring *r, int32_t k_rails,
                           const int32_t *orders, struct ds_err *err) {
  int32_t n = r->n;
  int32_t *gpus = malloc((size_t)n * sizeof *gpus);
  r->rails = calloc((size_t)k_rails, sizeof *r->rails);
  r->rail_member = malloc((size_t)k_rails * n * sizeof *r->rail_member);
  r->rail_pos = malloc((size_t)k_rails * n * sizeof *r->rail_pos);
  if (!gpus || !r->rails || !r->rail_member || !r->rail_pos) {
    free(gpus);
    return ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", n);
  }
  ds_status st = DS_OK;
  for (int32_t k = 0; k < k_rails && st == DS_OK; k++) {
    const int32_t *ord = orders + (size_t)k * n;
    for (int32_t p = 0; p < n; p++) {
      gpus[p] = r->gpus[ord[p]];
      r->rail_member[(size_t)k * n + p] = ord[p];
      r->rail_pos[(size_t)k * n + ord[p]] = p;
    }
    st = ds_ring_build(t, gpus, n, &r->rails[k], err);
    if (st == DS_OK) r->n_rails++;
  }
  free(gpus);
  DS_CHECK(st);
  return rails_bound(t, r, err);
}

/* k_rails >= 2 rails over g's nodes into r (ring_rails.h): node i, with
 * K_i distinct NICs (nics, at first[i]), runs rail k between its NICs
 * a = k and b = k+1 mod k_rails where K_i >= k_rails (all nodes for the
 * rails that run: k_rails is the least K_i), else a = k mod K_i and b = a+1
 * mod K_i (a node's own search laid out over nodes with fewer NICs:
 * ds_ring_search_rails). */
static ds_status lay_rails(struct ds_topo *t, struct ds_ring *r, const struct groups *g,
                           const int32_t *nics, int32_t k_rails, struct ds_err *err) {
  int32_t n = r->n;
  int32_t *orders = malloc((size_t)k_rails * n * sizeof *orders);
  int32_t *kn = malloc((size_t)g->m * sizeof *kn);
  if (!orders || !kn) {
    free(orders);
    free(kn);
    return ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", n);
  }
  for (int32_t j = 0; j < g->m; j++) {
    int32_t k = 0;
    const int32_t *nj = nics + g->first[j];
    while (k < g->count[j] && nj[k] >= 0) k++;
    kn[j] = k;
  }
  ds_status st = DS_OK;
  uint32_t *load = NULL; /* node_path's link loads, on first use */
  for (int32_t j = 0; j < g->m && st == DS_OK; j++) {
    struct ds_node_hops h;
    int32_t l = g->count[j];
    if (!load && l >= 4 && l <= DS_NODE_PATH_SEARCH_MAX) {
      load = calloc((size_t)t->n_links + 1, sizeof *load);
      if (!load) st = ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", n);
    }
    if (st == DS_OK) st = node_hops_of(t, r->gpus, g, j, load, &h, err);
    else memset(&h, 0, sizeof h);
    for (int32_t k = 0; k < k_rails && st == DS_OK; k++) {
      const int32_t *nj = nics + g->first[j];
      int32_t ia = kn[j] >= k_rails ? k : k % kn[j];
      int32_t ib = kn[j] >= k_rails ? (k + 1) % k_rails : (ia + 1) % kn[j];
      int32_t *out = orders + (size_t)k * n + g->first[j];
      node_order(g, j, j % 2 ? nj[ib] : nj[ia], j % 2 ? nj[ia] : nj[ib], out);
      if (h.l > 0) node_path(&h, g, out);
    }
    ds_node_hops_release(&h);
  }
  free(load);
  if (st == DS_OK) st = set_rails(t, r, k_rails, orders, err);
  free(orders);
  free(kn);
  return st;
}

/* Each node's distinct NICs at nics + first[j], the rest of its slots -1. */
static void fill_nics(const struct groups *g, int32_t *nics) {
  for (int32_t i = 0; i < g->nodes.first[g->m]; i++) nics[i] = -1;
  for (int32_t j = 0; j < g->m; j++) (void)node_nics(g, j, nics + g->first[j]);
}

/* K >= 2 rails across nodes (ring_rails.h); none where rails_of finds
 * none. */
static ds_status plan_nodes(struct ds_topo *t, struct ds_ring *r, const struct groups *g,
                            struct ds_err *err) {
  int32_t n = r->n;
  int32_t *nics = malloc((size_t)n * sizeof *nics);
  if (!nics) return ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", n);
  int32_t k_rails = rails_of(g, nics);
  ds_status st = DS_OK;
  if (k_rails >= 2) {
    fill_nics(g, nics);
    st = lay_rails(t, r, g, nics, k_rails, err);
  }
  free(nics);
  return st;
}

/* ring_rails.h */
ds_status ds_ring_search_rails(struct ds_topo *t, const struct ds_ring *r, int32_t k_rails,
                               struct ds_ring *out, struct ds_err *err) {
  struct groups g;
  memset(out, 0, sizeof *out);
  DS_CHECK(group_gpus(t, r->gpus, r->n, &g, err));
  int32_t *nics = g.nic ? malloc((size_t)r->n * sizeof *nics) : NULL;
  ds_status st = DS_OK;
  if (g.nic && !nics)
    st = ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", r->n);
  else if (!g.nic || k_rails < 2 || rails_of(&g, nics) < 2)
    st = ds_err_set(err, DS_EINPUT, "ring of %d GPUs: no rails across nodes", r->n);
  if (st == DS_OK) {
    fill_nics(&g, nics);
    st = ds_ring_build(t, r->gpus, r->n, out, err);
    if (st == DS_OK) st = lay_rails(t, out, &g, nics, k_rails, err);
    if (st != DS_OK) ds_ring_release(out);
  }
  free(nics);
  groups_free(&g);
  return st;
}

/* Ring order on one node (ring_rails.h). The hop between members a and b
 * costs its route's bottleneck bandwidth and latency sum; a ring's score is
 * (its smallest hop bandwidth, higher first; then its hop latency sum,
 * lower first). Up to ORDER_EXHAUSTIVE_MAX members every cycle with member
 * 0 first is searched, depth first, cutting a partial ring that can no
 * longer win; above, the greedy nearest-fastest neighbour (from member 0,
 * the unvisited member of the fastest hop, then the lowest latency, then
 * the lowest index). An order replaces rank order only when its score is
 * strictly better. */
#define ORDER_EXHAUSTIVE_MAX 10

struct order_search {
  int32_t n;
  const double *bw, *lat; /* [n*n] hop a -> b */
  int32_t *cur, *best;    /* [n] */
  uint8_t *used;          /* [n] */
  double best_bw, best_lat;
};

static void order_dfs(struct order_search *s, int32_t depth, double bw, double lat) {
  int32_t n = s->n, last = s->cur[depth - 1];
  if (depth == n) {
    double b = fmin(bw, s->bw[last * n + s->cur[0]]);
    double l = lat + s->lat[last * n + s->cur[0]];
    if (ds_path_better(b, l, s->best_bw, s->best_lat)) {
      s->best_bw = b;
      s->best_lat = l;
      memcpy(s->best, s->cur, (size_t)n * sizeof *s->cur);
    }
    return;
  }
  for (int32_t b = 1; b < n; b++) {
    if (s->used[b]) continue;
    double nb = fmin(bw, s->bw[last * n + b]), nl = lat + s->lat[last * n + b];
    /* a partial ring only loses bandwidth and gains latency */
    if (nb < s->best_bw * (1 - 1e-9) ||
        (nb <= s->best_bw * (1 + 1e-9) && nl >= s->best_lat * (1 - 1e-9) - 1e-6))
      continue;
    s->used[b] = 1;
    s->cur[depth] = b;
    order_dfs(s, depth + 1, nb, nl);
    s->used[b] = 0;
  }
}

static void order_greedy(struct order_search *s) {
  int32_t n = s->n;
  memset(s->used, 0, (size_t)n);
  s->cur[0] = 0;
  s->used[0] = 1;
  double bw = INFINITY, lat = 0;
  for (int32_t d = 1; d < n; d++) {
    int32_t last = s->cur[d - 1], pick = -1;
    for (int32_t b = 1; b < n; b++)
      if (!s->used[b] && (pick < 0 || s->bw[last * n + b] > s->bw[last * n + pick] ||
                          (s->bw[last * n + b] == s->bw[last * n + pick] &&
                           s->lat[last * n + b] < s->lat[last * n + pick])))
        pick = b;
    s->cur[d] = pick;
    s->used[pick] = 1;
    bw = fmin(bw, s->bw[last * n + pick]);
    lat += s->lat[last * n + pick];
  }
  bw = fmin(bw, s->bw[s->cur[n - 1] * n]);
  lat += s->lat[s->cur[n - 1] * n];
  if (ds_path_better(bw, lat, s->best_bw, s->best_lat)) {
    s->best_bw = bw;
    s->best_lat = lat;
    memcpy(s->best, s->cur, (size_t)n * sizeof *s->cur);
  }
}

/* ring_rails.h. Whether every ring order scores the same, found without a
 * route per pair (issue #14: n^2 routes made a 1024-GPU switch's set-up
 * cubic): the
 * members all hang off one vertex S (a switch or CPU), each by links of
 * the same bandwidth and latency each way, with no links between GPUs and
 * nothing else out of a member but NICs of its node. Then the route a -> b
 * is a -> S -> b for every pair (a search from a meets b first through S: a
 * NIC entered from a's node leads only out of it), so every hop, and every
 * order, scores alike; rank order stands, as the search keeps it unless an
 * order is strictly better. */
int ds__ring_all_orders_equal(const struct ds_topo *t, const int32_t *gpus, int32_t n) {
  int32_t hub = -1, home = -1;
  double up_bw = 0, up_lat = 0, down_bw = 0, down_lat = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t a = t->gpu_vertex[gpus[i]], up = -1, down = -1;
    if (i == 0) home = t->vertex_node[a];
    for (int32_t k = t->out_first[a]; k < t->out_first[a + 1]; k++) {
      int32_t l = t->out_links[k], w = t->links[l].dst;
      if (t->vertex_kind[w] == DS_VERTEX_NIC && t->vertex_node[w] == home) continue;
      if (up >= 0 || t->vertex_kind[w] == DS_VERTEX_GPU || t->vertex_kind[w] == DS_VERTEX_NIC)
        return 0;
      up = l;
    }
    if (up < 0 || t->vertex_node[a] != home) return 0;
    if (hub < 0) hub = t->links[up].dst;
    if (t->links[up].dst != hub) return 0;
    /* S's link back to a, among a's in links (S may reach other GPUs too) */
    for (int32_t k = t->in_first[a]; k < t->in_first[a + 1] && down < 0; k++)
      if (t->links[t->in_links[k]].src == hub) down = t->in_links[k];
    if (down < 0) return 0;
    const struct ds_link *u = &t->links[up], *d = &t->links[down];
    if (i == 0) {
      up_bw = u->bw_bytes_per_s, up_lat = u->lat_ns;
      down_bw = d->bw_bytes_per_s, down_lat = d->lat_ns;
    } else if (u->bw_bytes_per_s != up_bw || u->lat_ns != up_lat ||
               d->bw_bytes_per_s != down_bw || d->lat_ns != down_lat) {
      return 0;
    }
  }
  return 1;
}

static ds_status plan_order(struct ds_topo *t, struct ds_ring *r, struct ds_err *err) {
  int32_t n = r->n;
  if (ds__ring_all_orders_equal(t, r->gpus, n)) return DS_OK;
  size_t nn = (size_t)n * n;
  double *bw = malloc(nn * sizeof *bw), *lat = malloc(nn * sizeof *lat);
  int32_t *cur = malloc((size_t)n * sizeof *cur), *best = malloc((size_t)n * sizeof *best);
  uint8_t *used = calloc((size_t)n, 1);
  ds_status st = DS_OK;
  if (!bw || !lat || !cur || !best || !used) {
    st = ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", n);
    goto out;
  }
  for (int32_t a = 0; a < n; a++)
    for (int32_t b = 0; b < n; b++) {
      int32_t route[DS_TOPO_MAX_ROUTE], len;
      bw[a * n + b] = INFINITY;
      lat[a * n + b] = 0;
      if (a == b) continue;
      DS_CHECK_GOTO(
          ds_topo_route(t, r->gpus[a], r->gpus[b], route, DS_TOPO_MAX_ROUTE, &len, err), st, out);
      for (int32_t k = 0; k < len; k++) {
        bw[a * n + b] = fmin(bw[a * n + b], t->links[route[k]].bw_bytes_per_s);
        lat[a * n + b] += t->links[route[k]].lat_ns;
      }
    }
  struct order_search s = {.n = n, .bw = bw, .lat = lat, .cur = cur, .best = best,
                           .used = used, .best_bw = INFINITY, .best_lat = 0};
  /* rank order first: the score to beat */
  for (int32_t i = 0; i < n; i++) {
    best[i] = i;
    s.best_bw = fmin(s.best_bw, bw[i * n + (i + 1) % n]);
    s.best_lat += lat[i * n + (i + 1) % n];
  }
  cur[0] = 0;
  used[0] = 1;
  if (n <= ORDER_EXHAUSTIVE_MAX) order_dfs(&s, 1, INFINITY, 0);
  else order_greedy(&s);
  int moved = 0;
  for (int32_t i = 0; i < n; i++) moved |= best[i] != i;
  if (moved) st = set_rails(t, r, 1, best, err);
out:
  free(bw);
  free(lat);
  free(cur);
  free(best);
  free(used);
  return st;
}

/* NCCL's channels on one node where some pair of members has a direct
 * GPU-to-GPU link, for a GPU NCCL's model knows (ring_channels.h): r->chan,
 * a ring over r's members whose rails are the rings found, one per
 * channel. */
static ds_status plan_channels(struct ds_topo *t, struct ds_ring *r, struct ds_err *err) {
  enum ds_nccl_arch arch = ds_nccl_arch_of_topo(t);
  if (arch == DS_NCCL_ARCH_UNKNOWN || !ds__ring_has_direct_link(t, r->gpus, r->n)) return DS_OK;
  struct ds_ring_channels c;
  DS_CHECK(ds_ring_channels_search(t, r->gpus, r->n, arch, &c, err));
  ds_status st = DS_OK;
  struct ds_ring *q = c.n_rings > 0 ? calloc(1, sizeof *q) : NULL;
  if (c.n_rings > 0 && !q) st = ds_err_set(err, DS_ENOMEM, "ring of %d GPUs: out of memory", r->n);
  if (q) {
    st = ds_ring_build(t, r->gpus, r->n, q, err);
    if (st == DS_OK) st = set_rails(t, q, c.n_rings, c.orders, err);
    if (st == DS_OK) {
      r->chan = q;
      r->chan_speed_bytes_per_s = c.speed_gbps * 1e9;
      r->chan_total_bytes_per_s = c.total_gbps * 1e9;
      r->chan_routed = c.routed;
      r->chan_same = ds_ring_channels_same(&c);
      r->chan_nvb = ds__ring_nvb_bridged(t, r->gpus, r->n);
    } else {
      ds_ring_release(q);
      free(q);
    }
  }
  ds_ring_channels_release(&c);
  return st;
}

ds_status ds_ring_plan_rails(struct ds_topo *t, struct ds_ring *r, struct ds_err *err) {
  if (r->n < 2 || r->n_rails > 0) return DS_OK;
  struct groups g;
  ds_status st = group_gpus(t, r->gpus, r->n, &g, err);
  if (st == DS_OK && g.m >= 2 && g.min_count >= 2) st = plan_nodes(t, r, &g, err);
  else if (st == DS_OK && g.m == 1 && r->n > 2) st = plan_order(t, r, err);
  if (st == DS_OK && g.m == 1 && !r->chan) st = plan_channels(t, r, err);
  groups_free(&g);
  return st;
}

ds_status ds_ring_build_rails(struct ds_topo *topo, const int32_t *gpus, int32_t n,
                              struct ds_ring *out, struct ds_err *err) {
  DS_CHECK(ds_ring_build(topo, gpus, n, out, err));
  ds_status st = ds_ring_plan_rails(topo, out, err);
  if (st != DS_OK) ds_ring_release(out);
  return st;
}

/* ring_rails.h. Rail k's hop at position p must match rail 0's link by
 * link (same count, bandwidth, latency; same hop latency and class); links
 * matched at some position form a class O (union-find). Each link l of O
 * must be crossed, over all rails, by exactly c = K/|O| copies of the
 * positions that cross O in rail 0 (as multisets). Then, while every rail
 * holds the same flows at each position (they enter together and nothing
 * else shares their links), the load of every link of O is c times rail
 * 0's load on O, so rail 0 alone with O folded onto one link crossed c
 * times per crossing has the same max-min rates, flow by flow (a
 * saturated link of O is a bottleneck of the same positions), and by
 * induction over events every rail runs as rail 0 does. */
static int32_t uf_find(int32_t *up, int32_t x) {
  while (up[x] != x) x = up[x] = up[up[x]];
  return x;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Whether the rails pass the checks above; fills rep[l] (the class's
 * smallest link) and fold[l] (c) for every link crossed. */
static int rails_interchangeable(const struct ds_topo *t, const struct ds_ring *r,
                                 int32_t *up, uint32_t *fold, uint64_t *hits,
                                 uint64_t *hits0, int32_t *size) {
  int32_t n = r->n, k_rails = r->n_rails;
  const struct ds_ring *r0 = &r->rails[0];
  for (int32_t l = 0; l < t->n_links; l++) up[l] = l, size[l] = 0, fold[l] = 0;
  for (int32_t k = 1; k < k_rails; k++) {
    const struct ds_ring *rk = &r->rails[k];
    for (int32_t p = 0; p < n; p++) {
      if (rk->hop_first[p + 1] - rk->hop_first[p] != r0->hop_first[p + 1] - r0->hop_first[p] ||
          rk->hop_lat_ns[p] != r0->hop_lat_ns[p] || rk->hop_class[p] != r0->hop_class[p])
        return 0;
      for (int32_t j = 0; j < r0->hop_first[p + 1] - r0->hop_first[p]; j++) {
        int32_t a = r0->hop_links[r0->hop_first[p] + j], b = rk->hop_links[rk->hop_first[p] + j];
        if (t->links[a].bw_bytes_per_s != t->links[b].bw_bytes_per_s ||
            t->links[a].lat_ns != t->links[b].lat_ns)
          return 0;
        a = uf_find(up, a), b = uf_find(up, b);
        if (a != b) up[a > b ? a : b] = a < b ? a : b; /* the smallest link roots */
      }
    }
  }
  /* hits: (link, position) over all rails; hits0: (class, position), rail 0 */
  size_t nh = 0, nh0 = 0;
  for (int32_t k = 0; k < k_rails; k++)
    for (int32_t j = 0; j < r->rails[k].hop_first[n]; j++) {
      int32_t l = r->rails[k].hop_links[j];
      if (!fold[l]) fold[l] = 1, size[uf_find(up, l)]++;
    }
  for (int32_t k = 0; k < k_rails; k++)
    for (int32_t p = 0; p < n; p++)
      for (int32_t j = r->rails[k].hop_first[p]; j < r->rails[k].hop_first[p + 1]; j++) {
        int32_t l = r->rails[k].hop_links[j];
        hits[nh++] = (uint64_t)l << 32 | (uint32_t)p;
        if (k == 0) hits0[nh0++] = (uint64_t)uf_find(up, l) << 32 | (uint32_t)p;
      }
  qsort(hits, nh, sizeof *hits, cmp_u64);
  qsort(hits0, nh0, sizeof *hits0, cmp_u64);
  size_t i = 0;
  while (i < nh) {
    int32_t l = (int32_t)(hits[i] >> 32), root = uf_find(up, l);
    if (k_rails % size[root] != 0) return 0;
    uint32_t c = (uint32_t)(k_rails / size[root]);
    size_t e = i;
    while (e < nh && (int32_t)(hits[e] >> 32) == l) e++;
    /* rail 0's hits on the class: a run of hits0 starting at the root */
    size_t lo = 0, hi = nh0;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if ((int32_t)(hits0[mid] >> 32) < root) lo = mid + 1;
      else hi = mid;
    }
    size_t b = lo;
    while (b < nh0 && (int32_t)(hits0[b] >> 32) == root) b++;
    if (e - i != c * (b - lo)) return 0;
    for (size_t q = 0; q < e - i; q++)
      if ((uint32_t)hits[i + q] != (uint32_t)hits0[lo + q / c]) return 0;
    fold[l] = c;
    i = e;
  }
  return 1;
}

/* Rail 0 with every link replaced by its class's root, crossed fold times
 * per crossing (repeats within a hop merged, in first-seen order). */
static ds_status fold_rail(const struct ds_ring *r0, const int32_t *up, const uint32_t *fold,
                           struct ds_ring *q) {
  int32_t n = r0->n, total = r0->hop_first[n];
  memset(q, 0, sizeof *q);
  q->n = n;
  q->gpus = malloc((size_t)n * sizeof *q->gpus);
  q->hop_first = malloc(((size_t)n + 1) * sizeof *q->hop_first);
  q->hop_links = malloc(((size_t)total + 1) * sizeof *q->hop_links);
  q->hop_mult = malloc(((size_t)total + 1) * sizeof *q->hop_mult);
  q->hop_lat_ns = malloc((size_t)n * sizeof *q->hop_lat_ns);
  q->hop_bw = malloc((size_t)n * sizeof *q->hop_bw);
  q->hop_class = malloc((size_t)n + 1);
  if (!q->gpus || !q->hop_first || !q->hop_links || !q->hop_mult || !q->hop_lat_ns ||
      !q->hop_bw || !q->hop_class)
    return DS_ENOMEM;
  memcpy(q->gpus, r0->gpus, (size_t)n * sizeof *q->gpus);
  memcpy(q->hop_lat_ns, r0->hop_lat_ns, (size_t)n * sizeof *q->hop_lat_ns);
  memcpy(q->hop_bw, r0->hop_bw, (size_t)n * sizeof *q->hop_bw);
  memcpy(q->hop_class, r0->hop_class, (size_t)n);
  q->max_lat_ns = r0->max_lat_ns;
  q->path_lat_ns = r0->path_lat_ns;
  q->min_bw = r0->min_bw;
  int32_t w = 0, all_once = 1;
  for (int32_t p = 0; p < n; p++) {
    int32_t first = w;
    q->hop_first[p] = w;
    for (int32_t j = r0->hop_first[p]; j < r0->hop_first[p + 1]; j++) {
      int32_t root = uf_find((int32_t *)up, r0->hop_links[j]), s = first;
      while (s < w && q->hop_links[s] != root) s++;
      if (s == w) q->hop_links[w] = root, q->hop_mult[w++] = 0;
      q->hop_mult[s] += fold[r0->hop_links[j]];
    }
    if (w - first > q->max_hop_links) q->max_hop_links = w - first;
  }
  q->hop_first[n] = w;
  for (int32_t j = 0; j < w; j++) all_once &= q->hop_mult[j] == 1;
  if (all_once) { /* as a plain ring: NULL multiplicities */
    free(q->hop_mult);
    q->hop_mult = NULL;
  }
  return DS_OK;
}

ds_status ds__ring_rails_quotient(const struct ds_topo *t, const struct ds_ring *r,
                                  const struct ds_ring **out) {
  struct ds_ring *memo = (struct ds_ring *)r; /* a memo: the ring stays const */
  *out = NULL;
  if (r->n_rails < 2) return DS_OK;
  if (memo->rails_one_state == 0) {
    size_t nh = 0;
    for (int32_t k = 0; k < r->n_rails; k++) nh += (size_t)r->rails[k].hop_first[r->n];
    int32_t *up = malloc(((size_t)t->n_links + 1) * sizeof *up);
    int32_t *size = malloc(((size_t)t->n_links + 1) * sizeof *size);
    uint32_t *fold = malloc(((size_t)t->n_links + 1) * sizeof *fold);
    uint64_t *hits = malloc((nh + 1) * sizeof *hits);
    uint64_t *hits0 = malloc((nh + 1) * sizeof *hits0);
    struct ds_ring *q = calloc(1, sizeof *q);
    ds_status st = DS_ENOMEM;
    if (up && size && fold && hits && hits0 && q) {
      st = DS_OK;
      memo->rails_one_state = 1;
      if (rails_interchangeable(t, r, up, fold, hits, hits0, size)) {
        st = fold_rail(&r->rails[0], up, fold, q);
        if (st == DS_OK) {
          memo->rails_one = q;
          memo->rails_one_state = 2;
          q = NULL;
        } else {
          memo->rails_one_state = 0;
        }
      }
    }
    if (q) ds_ring_release(q);
    free(q);
    free(up);
    free(size);
    free(fold);
    free(hits);
    free(hits0);
    DS_CHECK(st);
  }
  *out = memo->rails_one;
  return DS_OK;
}
