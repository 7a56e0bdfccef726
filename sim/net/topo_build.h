/*
 * Internal to the topology module (sim/net/topo.c, sim/net/topo_list.c,
 * sim/net/topo_route.c, sim/net/topo_compute.c): building the vertex and
 * link arrays of a struct ds_topo, the route search both the router and the
 * load-time reachability check use, and reading the compute section. Not
 * for other modules.
 */
#ifndef DS_TOPO_BUILD_H
#define DS_TOPO_BUILD_H

#include <stdint.h>

#include "base/status.h"
#include "base/config.h"
#include "sim/net/topo.h"

/* Appends a vertex; arrays grow as needed. DS_ENOMEM on failure. */
ds_status ds__topo_add_vertex(struct ds_topo *t, enum ds_vertex_kind kind,
                              int32_t node, int32_t *out);
/* Appends one directed link a -> b. kind is a static string. */
ds_status ds__topo_add_link(struct ds_topo *t, int32_t a, int32_t b, double bw,
                            double lat, const char *kind);
/* Builds the CSR adjacency and the route scratch arrays, once every link
 * exists. */
ds_status ds__topo_build_adjacency(struct ds_topo *t);

/* Breadth-first search from vertex `from` under the routing rules (see
 * topo.h), stopping as soon as the link that reaches vertex `to` is known,
 * or visiting everything reachable when to < 0. Returns the stamp that
 * marks, in scratch_seen, the vertices reached (with a target: `to` and
 * the vertices of its route among others); scratch_prev holds the link
 * that reached each. The links are those of a plain breadth-first search
 * (out links in creation order; topo_route.c says how hubs are expanded
 * lazily). */
uint32_t ds__topo_search(struct ds_topo *t, int32_t from, int32_t to);

/* Vertices of more than `degree` out links are expanded lazily by the
 * search (default 16); for tests, which check that any degree finds the
 * same routes. */
ds_status ds__topo_set_hub_degree(struct ds_topo *t, int32_t degree);

/* The first GPU (lowest index) that cannot reach every other GPU, or -1,
 * into *out: what one search from every GPU finds, with one search per
 * class of GPUs whose out links lead to the same vertices (topo_list.c). */
ds_status ds__topo_first_unreached(struct ds_topo *t, int32_t *out);

/* Explicit device and link lists (`devices:` and `links:` at the root of a
 * topology file): builds every vertex and link of t, whose n_nodes,
 * gpus_per_node and n_gpus are set, and checks that every GPU reaches every
 * other. */
ds_status ds__topo_build_list(struct ds_topo *t, const struct ds_cnode *root,
                              struct ds_err *err);

/* The `compute` section at the root of a topology file into *c, every key
 * it leaves out at its default (sim/net/topo_compute.c says where each one
 * comes from); mem_efficiency 0 when absent (ds_topo_load resolves it after
 * the GPU table). */
ds_status ds__topo_read_compute(const struct ds_cnode *root,
                                struct ds_compute_params *c, struct ds_err *err);

#endif /* DS_TOPO_BUILD_H */
