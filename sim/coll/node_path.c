/*
 * The best path through one node's GPUs for a rail or a chain
 * (node_path.h). Invariant: the path stays a permutation of the node's
 * members with its fixed ends in place.
 */
#include "sim/coll/node_path.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/ring_rails.h"

/* node_path.h */
int ds_path_better(double bw, double lat, double best_bw, double best_lat) {
  const double rel = 1e-9;
  if (bw > best_bw * (1 + rel)) return 1;
  return bw >= best_bw * (1 - rel) && lat < best_lat * (1 - rel) - 1e-6;
}

/* node_path.h */
ds_status ds_node_hops_of(struct ds_topo *t, const int32_t *gpus, int32_t l, uint32_t *load,
                          const char *what, struct ds_node_hops *h, struct ds_err *err) {
  memset(h, 0, sizeof *h);
  if (l < 4 || l > DS_NODE_PATH_SEARCH_MAX) return DS_OK; /* 2 or 3: one path */
  if (ds__ring_all_orders_equal(t, gpus, l)) return DS_OK;
  size_t ll = (size_t)l * l;
  h->lat = malloc(ll * sizeof *h->lat);
  h->route = malloc(ll * DS_TOPO_MAX_ROUTE * sizeof *h->route);
  h->len = malloc(ll * sizeof *h->len);
  ds_status st = DS_OK;
  if (!h->lat || !h->route || !h->len)
    st = ds_err_set(err, DS_ENOMEM, "%s: out of memory", what);
  for (int32_t a = 0; a < l && st == DS_OK; a++)
    for (int32_t b = 0; b < l && st == DS_OK; b++) {
      size_t ab = (size_t)a * l + b;
      int32_t *route = h->route + ab * DS_TOPO_MAX_ROUTE;
      h->lat[ab] = 0;
      h->len[ab] = 0;
      if (a == b) continue;
      st = ds_topo_route(t, gpus[a], gpus[b], route, DS_TOPO_MAX_ROUTE, &h->len[ab], err);
      for (int32_t k = 0; st == DS_OK && k < h->len[ab]; k++)
        h->lat[ab] += t->links[route[k]].lat_ns;
    }
  if (st != DS_OK) {
    ds_node_hops_release(h);
    return st;
  }
  h->l = l;
  h->t = t;
  h->load = load;
  return DS_OK;
}

void ds_node_hops_release(struct ds_node_hops *h) {
  free(h->lat);
  free(h->route);
  free(h->len);
  memset(h, 0, sizeof *h);
}

/* The hop a -> b's share for one more path: the least over its route's
 * links of the link's bandwidth over the earlier paths' hops crossing it,
 * plus this one. */
static double hop_share(const struct ds_node_hops *h, int32_t a, int32_t b) {
  size_t ab = (size_t)a * h->l + b;
  const int32_t *route = h->route + ab * DS_TOPO_MAX_ROUTE;
  double bw = INFINITY;
  for (int32_t k = 0; k < h->len[ab]; k++)
    bw = fmin(bw, h->t->links[route[k]].bw_bytes_per_s / (1.0 + h->load[route[k]]));
  return bw;
}

struct path_search {
  const struct ds_node_hops *h;
  int fix_end;
  int32_t cur[DS_NODE_PATH_SEARCH_MAX], best[DS_NODE_PATH_SEARCH_MAX];
  uint8_t used[DS_NODE_PATH_SEARCH_MAX];
  double best_bw, best_lat;
};

static void keep_if_better(struct path_search *s, double bw, double lat) {
  if (ds_path_better(bw, lat, s->best_bw, s->best_lat)) {
    s->best_bw = bw;
    s->best_lat = lat;
    memcpy(s->best, s->cur, sizeof s->cur);
  }
}

static void path_dfs(struct path_search *s, int32_t depth, double bw, double lat) {
  int32_t l = s->h->l, last = s->cur[depth - 1];
  if (s->fix_end && depth == l - 1) { /* the exit closes the path */
    int32_t end = s->cur[l - 1];
    keep_if_better(s, fmin(bw, hop_share(s->h, last, end)), lat + s->h->lat[last * l + end]);
    return;
  }
  if (depth == l) {
    keep_if_better(s, bw, lat);
    return;
  }
  for (int32_t b = 0; b < l; b++) {
    if (s->used[b]) continue;
    double nb = fmin(bw, hop_share(s->h, last, b)), nl = lat + s->h->lat[last * l + b];
    /* a partial path only loses bandwidth and gains latency */
    if (nb < s->best_bw * (1 - 1e-9) ||
        (nb <= s->best_bw * (1 + 1e-9) && nl >= s->best_lat * (1 - 1e-9) - 1e-6))
      continue;
    s->used[b] = 1;
    s->cur[depth] = b;
    path_dfs(s, depth + 1, nb, nl);
    s->used[b] = 0;
  }
}

static void load_hop(const struct ds_node_hops *h, int32_t a, int32_t b) {
  size_t ab = (size_t)a * h->l + b;
  for (int32_t k = 0; k < h->len[ab]; k++) h->load[h->route[ab * DS_TOPO_MAX_ROUTE + k]]++;
}

/* node_path.h */
void ds_node_path_search(const struct ds_node_hops *h, int32_t *path, int fix_end,
                         int both_ways) {
  int32_t l = h->l;
  struct path_search s = {.h = h, .fix_end = fix_end, .best_bw = INFINITY, .best_lat = 0};
  for (int32_t q = 0; q < l; q++) {
    s.best[q] = s.cur[q] = path[q];
    if (q + 1 < l) {
      s.best_bw = fmin(s.best_bw, hop_share(h, path[q], path[q + 1]));
      s.best_lat += h->lat[path[q] * l + path[q + 1]];
    }
  }
  s.used[path[0]] = 1;
  if (fix_end) s.used[path[l - 1]] = 1;
  path_dfs(&s, 1, INFINITY, 0);
  memcpy(path, s.best, (size_t)l * sizeof *path);
  for (int32_t q = 0; q + 1 < l; q++) {
    load_hop(h, s.best[q], s.best[q + 1]);
    if (both_ways) load_hop(h, s.best[q + 1], s.best[q]);
  }
}
