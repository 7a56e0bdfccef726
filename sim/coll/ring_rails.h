/*
 * Which rings run in place of a ring over a list of GPUs (struct ds_ring's
 * rails, sim/coll/coll.h), as NCCL's topology search chooses them
 * (ds_ring_build_rails; the ring itself stays the members in their order).
 *
 * Across nodes (M >= 2 nodes, each holding 2 or more members, K_j >= 2
 * distinct NICs among node j's members; nodes may hold different counts):
 * K = min K_j rails, one per NIC, each carrying S/K. NCCL's inter-node
 * search (src/graph/search.cc, v2.30.7) starts every channel at a NIC,
 * walks the node's GPUs and leaves through a NIC; NCCL_CROSS_NIC=2 (its
 * default) keeps a channel on the same NIC index on every node when it
 * can, so its node-boundary traffic stays on one rail
 * of a rail-optimized fabric; channels are spread over the NICs (DGX H100:
 * 8 NICs, a ring per NIC). Here a GPU sends only through its own NIC (no
 * PXN), so a ring cannot enter and leave a node through one NIC with one
 * GPU per NIC; instead rail k snakes between NIC a = k and NIC b = k+1 mod
 * K: even nodes (in the members' node order) are entered through a GPU of
 * NIC a and left through a GPU of NIC b, odd nodes the other way round, so
 * every node-to-node hop goes from NIC q of one node to NIC q of the next
 * (the same rail) and each NIC carries one rail in each direction. Inside a
 * node the ring visits the entry GPU, the node's other members in member
 * order (cyclically after the entry), then the exit GPU; where the node's
 * GPUs have links of their own (not every order alike:
 * ds__ring_all_orders_equal) and it holds 4 to 10 members, the path from
 * entry to exit of best score instead (smallest hop bandwidth, each hop's
 * links shared with the node's rails laid before; then latency sum) when it
 * beats member order strictly: a DGX-1's rails stay on NVLink. With an odd number
 * of nodes the hop from the last node back to the first goes from NIC b to
 * NIC a (crosses rails once). Ranks keep their GPUs; only ring positions
 * change. A member's NIC is the first NIC on its route to another node.
 *
 * On one node (more than 2 members), where links differ (DGX-1's hybrid
 * cube-mesh): one ring in the order of largest bottleneck hop bandwidth,
 * then least hop latency sum, when it beats rank order strictly (uniform
 * boxes keep rank order). Up to 10 members every cycle with member 0 first
 * is searched (depth first, cutting partial rings that can no longer win:
 * at most 9! leaves); above, the greedy nearest-fastest neighbour from
 * member 0. A hop's bandwidth is its route's bottleneck link. No search
 * where every order is provably equal (every member on one switch by alike
 * links: ds__ring_all_orders_equal), so a 1024-GPU switch costs no route
 * per pair. That one ring is what the plain ring runs. Where the members'
 * direct GPU-to-GPU links differ and NCCL's model knows the GPU, NCCL's
 * channel search (sim/coll/ring_channels.h) fills ring->chan too: a ring
 * over the same members whose rails are the rings it packs, one channel
 * each, which NCCL's protocols run (ds_ring_nccl).
 */
#ifndef DS_RING_RAILS_H
#define DS_RING_RAILS_H

#include "sim/coll/coll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Members grouped by node, nodes in order of first appearance, members of
 * a node in member order (shared with sim/coll/coll_hier.c). */
struct ds_ring_nodes {
  int32_t m;         /* nodes */
  int32_t l;         /* members per node; 0 when nodes hold different counts */
  int32_t *member;   /* [n] node 0's members, then node 1's, ...: member at
                        (node j, local q) is member[first[j] + q] (= [j*l + q]
                        when l > 0) */
  int32_t *first;    /* [m+1] where node j's members start in member */
  int32_t *node_of;  /* [n] node index of each member */
  int32_t *local_of; /* [n] its index among its node's members */
  int32_t *count;    /* [m] members of each node */
  int32_t *node_id;  /* [m] the topology's node of each */
};

/* Whether the route between any two of the n GPUs crosses one vertex (a
 * switch or CPU) by links of one bandwidth and latency each way, so that
 * every ring order over them scores the same (ring_rails.c says why):
 * checked in O(n) links, no route searched. 0 when unsure. */
/* The rails of r (n_rails >= 2) as one ring, when they are provably
 * interchangeable (ring_rails.c says the checks and why they suffice): rail 0
 * with every link folded onto one link of its class and crossed as often as
 * all rails together cross each link of the class, so that rail 0 alone
 * has every flow's max-min rate of the K rails run together, provided all
 * members enter at once and no other flow shares the rails' links. *out is
 * NULL when they are not; built on first use and cached on r. */
ds_status ds__ring_rails_quotient(const struct ds_topo *topo, const struct ds_ring *r,
                                  const struct ds_ring **out);

int ds__ring_all_orders_equal(const struct ds_topo *topo, const int32_t *gpus, int32_t n);

/* Groups the n members on gpus (GPU of each) by topology node. */
ds_status ds_ring_nodes_group(const struct ds_topo *topo, const int32_t *gpus, int32_t n,
                              struct ds_ring_nodes *out, struct ds_err *err);
void ds_ring_nodes_release(struct ds_ring_nodes *g);

/* Whether the n GPUs span two or more nodes holding different numbers of
 * them and run no rails (ds_ring_plan_rails): a node holds one of them or
 * reaches one NIC (9 ranks on two 8-GPU nodes: 8 + 1; 12, 8 + 4, run 4
 * rails). Then the ring runs in rank order and crosses each node boundary
 * through one NIC, where NCCL may spread its channels over more NICs, so
 * the model's bandwidth is a fallback's. Writes each node's count ("8 +
 * 1"; runs of equal counts as "125 x 8 + 1"; cut to cap, ending "...")
 * into buf, "" otherwise; -1 out of memory. */
int ds_ring_nodes_uneven(const struct ds_topo *t, const int32_t *gpus, int32_t n, char *buf,
                         size_t cap);

/* Each node's distinct NICs among the n GPUs on it (a GPU's NIC:
 * ds_nearest_nic), nodes in order of first appearance: what NCCL's search
 * on that node spreads its channels over (sim/coll/nccl_model.c searches
 * each node alone, then takes the least, as init.cc does). nics[j] is 0
 * where no rails run (one node, or a node holding fewer than 2 GPUs). */
struct ds_node_nics {
  int32_t m;
  int32_t *node_id; /* [m] the topology's node */
  int32_t *nics;    /* [m] distinct NICs of node j's GPUs */
};
ds_status ds_ring_node_nics(const struct ds_topo *topo, const int32_t *gpus, int32_t n,
                            struct ds_node_nics *out, struct ds_err *err);
void ds_node_nics_release(struct ds_node_nics *x);

/* NCCL's search on one node of r, whose rails run (ds_ring_plan_rails:
 * one per NIC of the node with fewest), as if every node were like it:
 * out is r's ring with k_rails rails (that node's NIC count), node i
 * running rail k between its NICs k and k+1 mod k_rails where it has
 * k_rails or more, else between k mod K_i and the next (its K_i NICs);
 * sim/coll/nccl_model.c measures the node's own links under them.
 * DS_EINPUT where r's members run no rails across nodes. Release out with
 * ds_ring_release. */
ds_status ds_ring_search_rails(struct ds_topo *topo, const struct ds_ring *r, int32_t k_rails,
                               struct ds_ring *out, struct ds_err *err);

/* Scratch of ds_nearest_nic: a breadth-first queue and visit stamps, each
 * [topo->n_vertices]; seen zeroed and stamp 0 before the first search. */
struct ds_nic_search {
  int32_t *queue;
  uint32_t *seen;
  uint32_t stamp;
};

/* The NIC vertex nearest to `gpu` inside its node (fewest links, ties by
 * link creation order, never through another GPU): where its routes to
 * other nodes leave (templates wire each GPU, or its PCIe switch, to its
 * NIC); -1 if none. Searching the node only keeps this O(node) per GPU,
 * where a route to another node would walk the fabric. Rails and trees
 * (sim/coll/coll_tree.c) place their channels with it. */
int32_t ds_nearest_nic(const struct ds_topo *topo, struct ds_nic_search *s, int32_t gpu);

/* Fills ring->n_rails, rails, rail_member, rail_pos and rails_busbw of a
 * ring built by ds_ring_build on topo (ds_ring_build_rails calls it);
 * leaves n_rails 0 where the ring itself is what runs. */
ds_status ds_ring_plan_rails(struct ds_topo *topo, struct ds_ring *ring,
                             struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_RING_RAILS_H */
