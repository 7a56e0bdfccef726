/*
 * What `ddpsim topo`'s text (topocmd.c) and JSON (topocmd_json.c) share:
 * the vertices' labels, the links grouped as both list them, and the
 * facts the command settled before printing (the route, the ring), so the
 * two forms cannot tell different stories.
 */
#ifndef DS_TOPOCMD_IMPL_H
#define DS_TOPOCMD_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"
#include "sim/coll/coll.h"
#include "sim/net/topo.h"

/* "gpu3", "switch0", "nic2@node1", "switch0@fabric", a device list's own
 * names (topocmd.c). printable: a name's control characters as '?' (the
 * text); 0: the name as the file gives it (the JSON escapes it). */
void ds__topocmd_vertex_label(const struct ds_topo *t, int32_t v, int printable, char *buf,
                              size_t cap);

/* Whether efficiency key k of g is a stand-in (gpus.yaml efficiency_proxy)
 * and the first key with its reason: the text and the JSON list the keys
 * of one reason together, under that first one (topocmd.c). */
int ds__topocmd_first_of_reason(const struct ds_gpu_spec *g, int k);

/* Links grouped by (kind, bandwidth, latency), in order of first
 * appearance: first[g] is the group's first link, count[g] its links. */
struct ds__topocmd_link_groups {
  int32_t *first, *count; /* [n] (owned) */
  int32_t n;
};
ds_status ds__topocmd_link_groups(const struct ds_topo *t, struct ds__topocmd_link_groups *g,
                                  struct ds_err *err);
void ds__topocmd_link_groups_free(struct ds__topocmd_link_groups *g);

/* The link several hops of the ring that runs (r, or its one reordered
 * rail) cross where it, not the slowest hop's own bandwidth, sets the
 * plain ring all-reduce's bound (coll.h ds_ring_busbw): its index in
 * t->links, *hops the hops that cross it; -1 where no link does or the
 * rails run together. The text names it, the JSON's busbw_bound_link. */
int32_t ds__topocmd_bound_link(const struct ds_topo *t, const struct ds_ring *r,
                               uint32_t *hops);

/* Where the ring NCCL's protocols run (ds_ring_nccl) cannot reach NCCL's
 * model's busbw nccl_busbw because several of its hops share a link
 * (ds__topocmd_bound_link): that link, *hops and *cap_bw its busbw
 * (ds_ring_busbw, which the simulation and the closed form pace by); -1
 * where it can. NCCL's model does not share links between a ring's hops,
 * so on a host-staged box it says more than the ring runs at: the text
 * says so after the `NCCL model` line, the JSON's nccl_model.ring_cap. */
int32_t ds__topocmd_nccl_cap_link(const struct ds_topo *t, const struct ds_ring *r,
                                  double nccl_busbw, uint32_t *hops, double *cap_bw);

/* What describe() settled: the GPUs routed (from == to: no link), the
 * route's links, the ranks, and the ring over them (NULL for one rank). */
struct ds__topocmd_facts {
  int32_t from, to, world;
  const int32_t *route; /* [n_route] link indices (borrowed) */
  int32_t n_route;
  const struct ds_ring *ring; /* borrowed; NULL: one rank */
};

/* Writes the JSON object `ddpsim topo --format json` prints
 * (docs/topologies.md; t is not const: NCCL's model routes on it). */
ds_status ds__topocmd_json(FILE *out, struct ds_topo *t,
                           const struct ds__topocmd_facts *f, struct ds_err *err);

#endif /* DS_TOPOCMD_IMPL_H */
