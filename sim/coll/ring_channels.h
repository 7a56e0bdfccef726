/*
 * NCCL's ring channels on one node where some pair of GPUs is joined by a
 * direct link (DGX-1's hybrid cube-mesh, a uniform NVLink mesh such as
 * 4gpu, a 2-GPU NVLink pair): which rings NCCL's protocols run, one per
 * channel, and at what per-channel speed. In the spirit of NCCL's
 * ncclTopoCompute and ncclTopoSearchRec (src/graph/search.cc, v2.30.7),
 * read, not copied:
 *
 *   - NCCL's units: every link at NCCL's rate for its class
 *     (ds_nccl_link_bw: NVLink 20 of 25 GB/s on Volta and Ampere, 12 of
 *     14.0625 on compute capability 8.6, ds_nccl_nvlink_of; PCIe 12 of
 *     16); a hop is its route (ds_topo_route), a direct GPU-to-GPU link
 *     where there is one;
 *   - maxBw, the largest hop bandwidth between two members; totalBw, the
 *     largest over members of max(its NVLinks to members or switches
 *     summed, its PCIe link) (search.cc getMaxBw, getTotalBw; NCCL trims
 *     the GPUs outside the communicator, and their links, first);
 *   - speeds from NCCL's list for the architecture (ds_nccl_search_speeds),
 *     from the first not above maxBw (nor totalBw). At each speed s, rings
 *     are packed: a ring is an order of the members (member 0 first), and
 *     it charges s on every directed link of each of its hops, 6/5 s on
 *     the PCIe links of a hop through an Intel CPU's root complex
 *     (ds__ring_pci_overhead, NCCL's followPath); a link holds what fits
 *     in bw (counted in fifths of s: floor(5 bw / s), a hop charging 5 or
 *     6). First over direct links alone (NCCL's PATH_NVL),
 *     then, while no ring has been found over direct links at any speed,
 *     with the route of any pair that has none (NCCL raises typeIntra
 *     before it lowers the speed); at most 32 rings (NCCL's maxChannels,
 *     DS_NCCL_SEARCH_MAX_CHANNELS);
 *   - the best is the most bandwidth, rings x s (strictly more), then the
 *     fewest links crossed; the search stops once rings x s reaches
 *     totalBw or 32 rings are found, and lowers the speed while none is
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
 * Where it runs (ds__ring_has_direct_link). NCCL searches every intra-node
 * graph (ncclTopoCompute, search.cc:1074 at v2.30.7-1, 73cf1122); nothing
 * in it treats a uniform mesh apart: the speed list is per architecture
 * only (search.cc:1051-1067, chosen at :1154-1161), maxBw and totalBw are
 * read from the links (:20-53), and the only topology special in the
 * choice of next GPU is NVSwitch's (ncclTopoSearchNextGpuSort :253-325,
 * its NVS case :293-324: only the next and previous GPU). So ddpsim
 * searches wherever a member pair has a direct GPU-to-GPU link, uniform or
 * not. On a full mesh every pair's path is one NVLink (PATH_NVL; a
 * PATH_NVB path, through a third GPU's NVLinks, is a worse type and never
 * replaces a pair's own NVLink, paths.cc:90-100).
 * On a uniform mesh of n GPUs, b per pair in NCCL's units, at speed s
 * each directed link holds floor(b/s) rings and a ring crosses each GPU's
 * out-links once, so at most (n-1) floor(b/s) rings fit; 4gpu (b = 4 x 20
 * = 80, totalBw 240): at 40 the 6 directed rings of 4 GPUs cross every
 * directed link exactly twice, 6 x 40 = 240 = totalBw, then
 * ncclTopoDupChannels (:1036-1049; Ampere is ccMin 80, not > 80) gives 12
 * channels of 20, against 2 x 40 -> 4 x 20 from one route. On a 2-GPU pair
 * the search equals the one-route count except where a lower speed packs
 * more (b = 60: 2 x 30 against 1 x 40). Boxes without GPU-to-GPU links
 * keep the one-route count (nccl_model.c): on NVSwitch, where every ring
 * crosses each GPU's switch links once each way, it is the search's
 * (dgx-a100 6 x 40, dgx-h100 6 x 60); PCIe trees are not checked.
 *
 * Not modelled: NCCL's paths through a third GPU (PATH_NVB; ddpsim routes
 * never cross a GPU, so such a pair's rings take PCIe; only the LL128
 * default that NVB paths give is, ds__ring_nvb_bridged), its sameChannels
 * replay (an exhaustive search needs none; ds_ring_channels_same says
 * whether the rings found are one order repeated, what NCCL's replay-first
 * search keeps when it reaches the same bandwidth), the PCI-order and
 * replay trials that NCCL runs before its free search (they can only find
 * what the free search finds), and NCCL's
 * step budget (NCCL_SEARCH_TIMEOUT 2^14 per search, :332-335): a budgeted
 * depth-first search can stop short of the exhaustive packing (on an
 * 8-GPU full mesh, 6 rings against 7; docs/collectives.md).
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

/* Whether some ordered pair of the members is joined by a direct
 * GPU-to-GPU link: where NCCL's channels are searched (NVSwitch and PCIe
 * boxes, without such links, are not). */
int ds__ring_has_direct_link(const struct ds_topo *t, const int32_t *gpus, int32_t n);
/* Whether every ordered pair of the members (one node) without an NVLink
 * of its own has a member GPU with NVLinks to both: the pair's path in
 * NCCL is then PATH_NVB, through that GPU (paths.cc ncclTopoSetPaths
 * :72-93 at v2.30.7: a path may cross one GPU, NVLink in and NVLink out;
 * NCCL's topology holds the communicator's GPUs only, topo.cc:1800-1803,
 * so the GPU is a member), and every pair's path is NVB or better, so the
 * ring graph's typeIntra is at most PATH_NVB (search.cc:1092, the largest
 * GPU-to-GPU path type bounds it) and LL128 is on by default (tuning.cc
 * :531). Not checked: NCCL_P2P_LEVEL below NVB, NCCL_NVB_DISABLE=1, or P2P
 * reported off by NVML (ncclTopoCheckP2p :298-405), which move such paths
 * through the CPU; ddpsim models no such environment. */
int ds__ring_nvb_bridged(const struct ds_topo *t, const int32_t *gpus, int32_t n);
/* Whether NCCL's search, on hosts of CPU vendor v, charges 6/5 of the
 * speed on the PCIe links of a GPU's path through a CPU's root complex:
 * search.cc followPath (:81-92 at v2.30.7) does where that CPU is x86 and
 * Intel (topo.h INTEL_P2P_OVERHEAD(bw) = bw * 6 / 5, "P2P inefficiency
 * through Intel CPU RC"). NCCL reads the local CPU (cpuid), so on mixed
 * hosts every Intel node's search charges it, and the graphs' bandwidth
 * and channels are the least over ranks (init.cc:1439-1442): an Intel
 * node's binds, so mixed is charged (assuming one of its hosts is x86
 * Intel; mixed Arm and AMD hosts would not be). Not on AMD, nor on Arm
 * (cpu.arch not x86). */
int ds__ring_intel_root_complex(enum ds_cpu_vendor v);
/* The factor NCCL's search charges on the PCIe links of a GPU-to-GPU hop
 * of class cls over route[0 .. len): 6/5 where the hosts are
 * ds__ring_intel_root_complex, the hop is PCIe and it passes a CPU vertex
 * (a host bridge, or the host memory behind it) and no inter-socket (qpi)
 * link (NCCL's PATH_PHB; across sockets it is PATH_SYS, not charged); a
 * GPU pair without peer-to-peer gets such a path (paths.cc: addInterStep
 * through the CPU), as does peer-to-peer across root ports. Else 1. Both
 * the one-route model (nccl_model.c rings_share_gbps) and the channel
 * search charge it. */
double ds__ring_pci_overhead(const struct ds_topo *t, const int32_t *route, int32_t len,
                             enum ds_hop_class cls);
/* Whether the rings found are one order repeated (NCCL's sameChannels: its
 * search replays the first ring before it tries others, search.cc:1106,
 * :849-881, and keeps the replay unless another packing is strictly
 * better, ncclTopoCompareGraphs :445-468). */
int ds_ring_channels_same(const struct ds_ring_channels *c);

#ifdef __cplusplus
}
#endif

#endif /* DS_RING_CHANNELS_H */
