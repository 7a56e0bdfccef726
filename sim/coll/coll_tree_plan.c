/*
 * The plans of the tree all-reduces (sim/coll/coll_tree.c's header has the
 * shapes and the engine that runs them): NCCL's binary trees, the members'
 * layout by node and NIC, each shape's parents, edges and routes, the
 * plans cached on the ring, and the aggregate's streams per link.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/coll/coll_tree_impl.h"
#include "sim/coll/node_path.h"
#include "sim/coll/ring_rails.h"

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
  int32_t *chain;   /* [rails * n] or NULL: rail r's chain on node j, head
                       first, at chain[r * n + first[j] ..] (layout_chains) */
};

static void layout_release(struct dbtree_layout *g) {
  free(g->first);
  free(g->order);
  free(g->head);
  free(g->chain);
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

/* Across nodes with rails (g->rails >= 2): each node's chain for each rail,
 * from the rail's head over the node's members, as the rings' rails are
 * laid (ring_rails.h): member order from the head (cyclically) unless a
 * chain scores strictly better (node_path.h: its smallest hop share, then
 * latency sum), searched where the node's GPUs have links of their own
 * (not every order alike: ds__ring_all_orders_equal) and it holds 4 to
 * DS_NODE_PATH_SEARCH_MAX members. NCCL searches its tree graph NVLink first as its ring graph
 * (search.cc ncclTopoCompute, typeIntra from PATH_NVL): a DGX-1's chains
 * stay on NVLink. g->chain stays NULL where no node searches. */
static ds_status layout_chains(struct ds_topo *topo, const int32_t *gpus,
                               struct dbtree_layout *g, struct ds_err *err) {
  int32_t n = g->first[g->m], any = 0;
  for (int32_t j = 0; j < g->m && !any; j++) {
    int32_t l = g->first[j + 1] - g->first[j], sel[DS_NODE_PATH_SEARCH_MAX];
    if (l < 4 || l > DS_NODE_PATH_SEARCH_MAX) continue;
    for (int32_t q = 0; q < l; q++) sel[q] = gpus[g->order[g->first[j] + q]];
    any = !ds__ring_all_orders_equal(topo, sel, l);
  }
  if (g->rails < 2 || !any) return DS_OK;
  g->chain = malloc((size_t)g->rails * n * sizeof *g->chain);
  uint32_t *load = calloc((size_t)topo->n_links + 1, sizeof *load);
  ds_status st = DS_OK;
  if (!g->chain || !load) st = ds_err_set(err, DS_ENOMEM, "all-reduce tree: out of memory");
  for (int32_t j = 0; j < g->m && st == DS_OK; j++) {
    int32_t f = g->first[j], l = g->first[j + 1] - f, sel[DS_NODE_PATH_SEARCH_MAX];
    /* member order from each rail's head, the default */
    for (int32_t r = 0; r < g->rails; r++) {
      int32_t h = g->head[r * g->m + j] - f;
      for (int32_t q = 0; q < l; q++) g->chain[(size_t)r * n + f + q] = g->order[f + (h + q) % l];
    }
    if (l < 4 || l > DS_NODE_PATH_SEARCH_MAX) continue;
    for (int32_t q = 0; q < l; q++) sel[q] = gpus[g->order[f + q]];
    struct ds_node_hops hops;
    st = ds_node_hops_of(topo, sel, l, load, "all-reduce tree", &hops, err);
    for (int32_t r = 0; r < g->rails && st == DS_OK && hops.l > 0; r++) {
      int32_t *ch = g->chain + (size_t)r * n + f, path[DS_NODE_PATH_SEARCH_MAX];
      /* local index q of member order[f + q] */
      for (int32_t q = 0; q < l; q++)
        for (int32_t p = 0; p < l; p++)
          if (g->order[f + p] == ch[q]) path[q] = p;
      /* the chain carries both ways: its hops load their links each way */
      ds_node_path_search(&hops, path, 0, 1);
      for (int32_t q = 0; q < l; q++) ch[q] = g->order[f + path[q]];
    }
    ds_node_hops_release(&hops);
  }
  free(load);
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
     * head and the others cyclically after it (or layout_chains' chain);
     * with one rail, tree 0 from the first member, tree 1 from the last,
     * backwards. */
    for (int32_t q = 1; q < len; q++) {
      int32_t at, up;
      if (g->rails > 1 && g->chain) {
        at = g->chain[(size_t)r * n + f + q];
        up = g->chain[(size_t)r * n + f + q - 1];
      } else if (g->rails > 1) {
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
void ds__coll_tree_release(struct tree *t) {
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

static void plan_free(struct ds__tree_plan *p) {
  for (int32_t i = 0; p->trees && i < p->n_trees; i++) ds__coll_tree_release(&p->trees[i]);
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
  if (run == SHAPE_DBTREE && lay.rails > 1)
    DS_CHECK_GOTO(layout_chains(topo, gpus, &lay, err), st, fail);
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
ds_status ds__coll_tree_plan_get(struct ds_topo *topo, const struct ds_ring *r,
                                 enum tree_shape shape, int32_t root,
                                 struct ds__tree_plan **out, struct ds_err *err) {
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
ds_status ds__coll_tree_plan_agg(struct ds__tree_plan *p, const struct ds_topo *topo,
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
