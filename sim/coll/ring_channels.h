/*
 * NCCL's ring channels on one node whose GPU links differ (DGX-1's hybrid
 * cube-mesh): which rings NCCL's protocols run, one per channel, and at
 * what per-channel speed. In the spirit of NCCL's ncclTopoCompute and
 * ncclTopoSearchRec (src/graph/search.cc, v2.30.7), read, not copied:
 *
 *   - NCCL's units: every link at NCCL's rate for its class
 *     (ds_nccl_link_gbps: NVLink 20 of 25 GB/s on Volta and Ampere, PCIe
 *     12 of 16); a hop is its route (ds_topo_route), a direct GPU-to-GPU
 *     link where there is one;
 *   - maxBw, the largest hop bandwidth between two members; totalBw, the
 *     largest over members of max(its NVLinks to members or switches
 *     summed, its PCIe link) (search.cc getMaxBw, getTotalBw; NCCL trims
 *     the GPUs outside the communicator, and their links, first);
 *   - speeds from NCCL's list for the architecture (ds_nccl_search_speeds),
 *     from the first not above maxBw (nor totalBw). At each speed s, rings
 *     are packed: a ring is an order of the members (member 0 first), and
 *     it charges s on every directed link of each of its hops; a link holds
 *     floor(bw / s) rings. First over direct links alone (NCCL's PATH_NVL),
 *     then, while no ring has been found over direct links at any speed,
 *     with the route of any pair that has none (NCCL raises typeIntra
 *     before it lowers the speed); at most 16 rings (NCCL's maxChannels);
 *   - the best is the most bandwidth, rings x s (strictly more), then the
 *     fewest links crossed; the search stops once rings x s reaches
 *     totalBw or 16 rings are found, and lowers the speed while none is
 *     found or the next speed is above 0.49 of the best's (NCCL's pass 1;
 *     its pass 2, raising the speed, finds nothing an exhaustive pass 1
 *     missed).
 *
 * Packing at one speed, as NCCL's search does it, ring by ring: a ring is
 * built depth first from member 0 over what the links still hold, each hop
 * charged as it is taken, and once closed the next ring is built on the
 * rest. Up to DS_RING_CHANNELS_EXHAUSTIVE_MAX members this is a branch and
 * bound over multisets of rings (each met once: a ring's choices are no
 * earlier than the previous ring's; bound: the fewest rings any member's
 * outgoing links still hold), exact unless it spends
 * DS_RING_CHANNELS_BUDGET steps (then the best found so far). Above,
 * greedily: the first ring that fits is kept, at most
 * DS_RING_CHANNELS_RING_BUDGET steps each (NCCL's NCCL_SEARCH_TIMEOUT),
 * until none fits. Next members are tried as NCCL's
 * ncclTopoSearchNextGpuSort orders them: faster hop first, then fewer
 * links, then the next index after the current member's.
 *
 * Not modelled: NCCL's paths through a third GPU (PATH_NVB; ddpsim routes
 * never cross a GPU), its sameChannels replay (an exhaustive search needs
 * none), and the search on uniform boxes (ds__ring_links_differ: ddpsim
 * keeps its earlier channel count there, docs/collectives.md says why).
 */
#ifndef DS_RING_CHANNELS_H
#define DS_RING_CHANNELS_H

#include <stdint.h>

#include "base/status.h"
#include "sim/coll/nccl_model.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DS_RING_CHANNELS_EXHAUSTIVE_MAX 10
#define DS_RING_CHANNELS_BUDGET (1 << 20)
#define DS_RING_CHANNELS_RING_BUDGET (1 << 14)

/* What the search found (owned orders; ds_ring_channels_release). */
struct ds_ring_channels {
  int32_t n;          /* members */
  int32_t n_rings;    /* channels (0: no ring fits at any speed) */
  int32_t *orders;    /* [n_rings * n]: ring c visits members orders[c*n ..], member 0 first */
  double speed_gbps;  /* per channel, NCCL's units */
  double max_gbps;    /* NCCL's maxBw */
  double total_gbps;  /* NCCL's totalBw */
  int routed;         /* 1: the rings use routes of pairs without a direct link */
  int exhausted;      /* 1: a packing spent its budget (best found kept) */
};

/* Searches NCCL's channels over the n members on gpus (one node, n >= 2) for
 * a GPU of architecture arch. DS_EINPUT when a pair has no route. */
ds_status ds_ring_channels_search(struct ds_topo *t, const int32_t *gpus, int32_t n,
                                  enum ds_nccl_arch arch, struct ds_ring_channels *out,
                                  struct ds_err *err);
void ds_ring_channels_release(struct ds_ring_channels *c);

/* Whether the members' direct GPU-to-GPU links differ: some pair has one,
 * and not every ordered pair is joined by direct links of one bandwidth
 * (a uniform NVLink mesh, and boxes without GPU-to-GPU links, are not
 * searched). */
int ds__ring_links_differ(const struct ds_topo *t, const int32_t *gpus, int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* DS_RING_CHANNELS_H */
