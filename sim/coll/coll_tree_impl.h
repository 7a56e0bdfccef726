/*
 * What sim/coll/coll_tree.c, sim/coll/coll_tree_plan.c and
 * sim/coll/coll_tree_agg.c share: the trees a tree collective runs (double
 * binary tree, star, hub) and the collective's state. Private to those
 * three files.
 */
#ifndef DS_COLL_TREE_IMPL_H
#define DS_COLL_TREE_IMPL_H

#include <stdint.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"


enum tree_shape { SHAPE_DBTREE, SHAPE_STAR, SHAPE_HUB, SHAPE_NVLS_TREE };

struct vstate {            /* per tree and vertex */
  int32_t up_started;
  int32_t up_sent;
  int32_t down_recv;
  uint8_t up_busy;
};

struct estate {            /* per tree and edge (child -> parent) */
  int32_t up_recv;         /* pieces the parent has from this child */
  int32_t dn_started;
  int32_t dn_sent;
  uint8_t dn_busy;
};

/* One tree of a collective. Its shape (parent .. route_links, agg_links)
 * belongs to a cached struct ds__tree_plan and is shared by every collective
 * over the same members (shared = 1); route_lat_ns, v, e and agg_mult are
 * the collective's own. */
struct tree {
  int32_t *parent;      /* [V] -1 for the root */
  int32_t *edge_of;     /* [V] edge index of v's link to its parent, -1 */
  int32_t *child_first; /* [V+1] CSR of edges by parent */
  int32_t *child_edge;  /* [E] edge indices */
  int32_t *edge_child;  /* [E] child vertex of edge e */
  int32_t *route_first; /* [2E+1] routes: edge e up at 2e, down at 2e+1 */
  int32_t *route_links;
  double *route_lat_ns; /* [2E]; in a plan: the routes' link latency sums */
  uint8_t *route_class; /* [2E] enum ds_hop_class of each route (plan only) */
  struct vstate *v;
  struct estate *e;
  int32_t root;
  /* Aggregated (ds__coll_tree_agg_setup): distinct links of its streams, sorted; the
   * streams crossing each, times a flow's channels; the leading latency. */
  int32_t *agg_links;
  uint32_t *agg_mult;
  int32_t n_agg;
  double agg_lead_ns;
  int shared;           /* the shape fields belong to a plan */
};

/* What a tree collective over one member list does not owe to its bytes or
 * protocol: its trees, their edges and routes, and for the aggregate the
 * streams crossing each link. Built once per ring, shape and root and kept
 * on the ring (ds_ring.tree_plans), as the collectives of a training run
 * repeat over the same members (issue #14: GPT-2 on 4096 GPUs rebuilt 16
 * trees' routes for every bucket). */
#define TREE_AGG_MEMO 8
struct tree_agg_memo {
  double key[9];  /* flow_bytes, pieces, cap, chan, start, proto, hop lats */
  double *lead;   /* [n_trees] agg_lead_ns; NULL: empty */
};

struct ds__tree_plan {
  struct ds__tree_plan *next;
  enum tree_shape shape;     /* the shape asked for: the cache's key */
  enum tree_shape run_shape; /* what runs: nvls over several nodes is NVLSTree */
  int32_t root;         /* SHAPE_STAR's root; -1 for the others */
  int32_t nv, ne, n_trees, rails, depth;
  struct tree *trees;   /* [n_trees] shape fields only */
  /* Aggregated, filled on first use: per link, the streams of every tree
   * crossing it; each tree's agg_links with agg_mult counting its streams. */
  uint32_t *load;
  struct tree_agg_memo memo[TREE_AGG_MEMO]; /* leads of the last settings */
  int32_t memo_next;
};

struct tree_coll {
  struct ds_coll base; /* first: see coll_impl.h */
  struct ds_net *net;
  int32_t n;           /* members */
  int32_t nv;          /* vertices: members, plus the switch for nvls (one per
                        * node for NVLSTree) */
  int32_t ne;          /* edges per tree: nv - 1 */
  int32_t n_trees;
  struct tree *trees;  /* [n_trees]: double binary tree: rail r's at 2r, 2r+1 */
  int32_t pieces;
  double flow_bytes;   /* per flow (per channel under a protocol) */
  int has_proto;
  double cap;          /* per flow, INFINITY for none */
  double start_lat_ns;
  uint32_t *mult;      /* [DS_TOPO_MAX_ROUTE] channels */
  uint8_t *entered;    /* [nv] */
  uint8_t *ready;      /* [nv] start latency waited out */
  uint8_t *done;       /* [n] */
  int agg;             /* aggregated: one flow per tree, tagged by its index */
  int32_t n_entered;   /* aggregated: members entered */
  int32_t agg_done;    /* aggregated: trees delivered */
  uint64_t tag_base;
  ds_coll_done_fn on_done;
  void *owner;
};

/* The aggregated double binary tree's per-tree lead, agg_lead_ns
 * (sim/coll/coll_tree_agg.c says how); chan: the channels a flow stands for;
 * load: per link, the streams of every tree crossing it. */
ds_status ds__coll_tree_agg_setup(struct tree_coll *c, const struct ds_topo *topo,
                                  uint32_t chan, const uint32_t *load, struct ds_err *err);

/* sim/coll/coll_tree_plan.c: frees a tree's own arrays (and its shape's
 * unless shared); the plan of a shape over the ring's members, cached on
 * the ring; the aggregate's part of a plan (streams per link, each tree's
 * links), filled on first use. */
void ds__coll_tree_release(struct tree *t);
ds_status ds__coll_tree_plan_get(struct ds_topo *topo, const struct ds_ring *r,
                                 enum tree_shape shape, int32_t root,
                                 struct ds__tree_plan **out, struct ds_err *err);
ds_status ds__coll_tree_plan_agg(struct ds__tree_plan *p, const struct ds_topo *topo,
                                 struct ds_err *err);

#endif /* DS_COLL_TREE_IMPL_H */
