/*
 * A path through one node's GPUs for a channel that crosses the node: a
 * ring's rail from its entry GPU to its exit GPU (ring_rails.c) or a
 * tree's chain from its head (coll_tree_plan.c). NCCL searches both graphs
 * over the fastest path type first (src/graph/search.cc ncclTopoCompute
 * starts typeIntra at PATH_NVL, v2.30.7) and charges each channel's speed on
 * every link of its path (followPath), so a later channel takes other
 * links where they are faster: a DGX-1's rails and chains stay on NVLink.
 *
 * Scored as the ring orders are: (the smallest hop share, higher first;
 * then the hops' latency sum, lower first), a hop's share the least over
 * its route's links of bandwidth / (1 + the hops of earlier paths crossing
 * it). Searched exhaustively, depth first, cutting a partial path that can
 * no longer win; the given path is kept unless one scores strictly better.
 */
#ifndef DS_SIM_COLL_NODE_PATH_H
#define DS_SIM_COLL_NODE_PATH_H

#include <stdint.h>

#include "base/status.h"
#include "sim/net/topo.h"

/* Above this many members a node keeps the path it is given (no search). */
#define DS_NODE_PATH_SEARCH_MAX 10

/* One node's hops between its members (local indices 0..l-1). */
struct ds_node_hops {
  int32_t l;            /* 0: nothing to search (see ds_node_hops_of) */
  double *lat;          /* [l*l] the route's latency sum, a -> b */
  int32_t *route, *len; /* [l*l*DS_TOPO_MAX_ROUTE], [l*l]: the hop's links */
  const struct ds_topo *t;
  uint32_t *load;       /* [t->n_links] the hops of the paths laid so far */
};

/* Whether (bw, lat) beats (best_bw, best_lat) strictly: bandwidth first,
 * then latency (relative 1e-9, latency 1e-6 ns absolute). */
int ds_path_better(double bw, double lat, double best_bw, double best_lat);

/* Fills h for the l members on GPUs gpus[0..l) (local index q: gpus[q]),
 * sharing `load` (n_links entries, zeroed by the caller before a node's
 * first path and kept across nodes); leaves h->l 0 where no path can beat
 * another: fewer than 4 members, more than DS_NODE_PATH_SEARCH_MAX, or
 * every order alike (ds__ring_all_orders_equal: the NVSwitch boxes). `what`
 * names the collective in an out-of-memory message. */
ds_status ds_node_hops_of(struct ds_topo *t, const int32_t *gpus, int32_t l, uint32_t *load,
                          const char *what, struct ds_node_hops *h, struct ds_err *err);
void ds_node_hops_release(struct ds_node_hops *h);

/* The best path over h's members in local indices, in place: path[0] kept
 * (the entry or head) and, with fix_end, path[l-1] (the exit); path holds
 * the default on entry, kept unless beaten strictly. Then the chosen hops
 * load their links (both ways with both_ways: a tree's chain carries data
 * up and down). */
void ds_node_path_search(const struct ds_node_hops *h, int32_t *path, int fix_end,
                         int both_ways);

#endif
