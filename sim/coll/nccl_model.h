/*
 * NCCL's cost model for all-reduce (NVIDIA/nccl src/graph/tuning.cc,
 * v2.30.7; constants in sim/coll/nccl_constants.c, generated
 * from ../shared/data/nccl_tuning_constants.csv), NCCL's chunking and the
 * mechanisms its cost model leaves out (struct ds_nccl_extra below), and the
 * parameters with which sim/coll/coll_ring.c simulates a ring of a given
 * protocol.
 *
 * NCCL predicts, per algorithm a and protocol p (one node; nsteps = 2(N-1)):
 *   latency   lat(p)   = baseLat[a][p] + nsteps * hwLat[hw][a][p]
 *   bus bw    busBw(p) = nChannels * bwIntra, then
 *               LL:     min(llMaxBw, busBw * 1/2)   (half of each 16 B line is flags)
 *               LL128:  min(busBw * 0.92, nChannels * perChMaxRingLL128Bw)  (120 of 128 B)
 *               Simple: busBw
 *   algbw     = busBw * N / nsteps
 *   time(S)   = lat(p) + S / algbw(p)
 * and runs the (algorithm, protocol) of least time. hw is the class of the
 * ring's links: NVLINK, PCI, or NET once the ring leaves a node (then the
 * inter-node hops cost hwLat[NET]: (nsteps - nInterSteps) intra + nInterSteps
 * inter, as NCCL counts them). llMaxBw's row is the GPU architecture's on
 * one node, the hosts' CPU vendor's on several (ds_nccl_ll_max_bw_gbps).
 * LL128 is off by default where the rings cross PCIe inside a node
 * (ll128_off_by_default; NCCL_PROTO, --proto, can name it).
 *
 * nChannels and bwIntra come from NCCL's topology search; this model does
 * it in spirit (ds_nccl_model_build says exactly how). Where the ring runs
 * as K rails (coll.h, ds_ring_build_rails), NCCL spreads its channels over
 * the NICs: the bandwidth searched is a channel's share of the links the
 * rails cross (each link's derated bandwidth over the rail hops crossing
 * it), each rail gets floor(share / speed) channels, nChannels is K times
 * that. Each node searches alone (its own links under one rail per NIC of
 * its own, K_j; the fabric's under the rails that run) and nChannels and
 * the speed are the least over the nodes, as init.cc keeps them: on nodes
 * filled alike every node finds the same, on uneven ones (8 + 4 GPUs) the
 * smaller node's duplicated channels bind (docs/collectives.md, "Nodes
 * filled unevenly"). One reordered ring is searched as the ring, and a single ring
 * likewise: its share of the links its hops cross (hops that share a link,
 * as without peer-to-peer every GPU's hop climbs its switch's uplink,
 * share it), PCIe links of a hop through an Intel root complex charged 6/5
 * (NCCL's INTEL_P2P_OVERHEAD). On one node whose GPU
 * links differ the channel search itself runs (sim/coll/ring_channels.h,
 * ring->chan): nChannels is its rings, bwIntra its speed, and the
 * intra-node class that of its rings.
 *
 * Tree (src/graph/tuning.cc; the trees: src/graph/trees.cc), the double
 * binary tree, with the ring's channels and per-channel bandwidth bw
 * (NCCL's tree graph has the ring's channel count; its speed is taken as
 * the ring's):
 *   busBw = min(nCh bw 0.92, nCh perChMaxTreeBw), then
 *     LL:    min(busBw / 3.8, llMaxBw)
 *     LL128: min(busBw * (1 node ? 7/9 : 120/128), nCh perChMaxTreeLL128Bw)
 *   then every protocol's busBw * 0.85 when a node holds one GPU (the tree
 *     graph's pattern NCCL_TOPO_PATTERN_TREE: tree_pattern_tree)
 *   algbw = busBw / 2, times treeCorrectionFactor[p][log2(S >> 6)] (< 23)
 *   lat   = baseLat[Tree][p] + 2 ((N/nNodes - 1) hwLat[intra] + log2(nNodes) hwLat[NET])
 * NVLS (src/graph/tuning.cc), one node of Hopper or later on an NVLS-capable
 * switch (topology key nvls), Simple only. Its graph has one channel per GPU
 * (each GPU heads one); the search charges a channel's speed on every GPU's
 * switch link and twice on its head's, so speed is the first listed speed
 * not above bw(GPU) / (N + 1):
 *   busBw = nCh speed nvlsEfficiency (nCh - 1)/nCh 2, algbw = busBw N / (2(N-1))
 *   lat   = hwLat[NVLINK][NVLS][Simple]   (25 us; NCCL replaces the base latency)
 * (nvls.cc also takes the minimum with the graph's inter-node bandwidth; on
 * one node that does not bind here.) Across nodes NVLS runs as NVLSTree
 * (tuning.cc disables plain NVLS on several nodes without CollNet, and
 * NVLSTree on one node): NVLS inside each node, a double binary tree over
 * the nodes between the heads, one head (channel) per NIC: K = the ring's
 * rails (at least 2: "NVLS/NVLStree needs at least 2 channels"). The NVLS
 * search charges a channel's speed on every GPU's switch link and twice on
 * its head's, and on the head's NIC, so speed is the first listed
 * inter-node speed not above min(bw(NET), bw(GPU) / (K + 1)):
 *   busBw = K min(speed eff (K-1)/K 2, speed (nNodes <= 2 ? 2 : 1),
 *                 perChMaxNVLSTreeBw[arch][nodes]),  algbw = busBw N / (2(N-1))
 *   lat   = hwLat[NVLINK][NVLSTree] + 2 log2(nNodes) interLat, interLat =
 *           hwLat[NET][NVLSTree] (hwLat[NET][Tree] with one GPU per node)
 * `--algo nvls` on several nodes is this algorithm. Ring on several nodes, Simple: the
 * latency is multiplied by 1.4 (1.9 before Ampere) when S / (nCh N) >= 64,
 * NCCL's "plateau" (tuning.cc:647-650). `auto` runs the (algorithm, protocol) of
 * least predicted time, in NCCL's order (Tree, Ring, NVLS; LL, LL128,
 * Simple; the first on ties).
 *
 * The GPU architecture comes from the GPU table's name (V100 -> Volta,
 * A100 -> Ampere, H100/H200 -> Hopper); for any other GPU the model is
 * unavailable (ds_nccl_model_build says why) and callers fall back to the
 * plain ring.
 */
#ifndef DS_NCCL_MODEL_H
#define DS_NCCL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "sim/coll/coll.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_nccl_arch {
  DS_NCCL_ARCH_VOLTA,
  DS_NCCL_ARCH_AMPERE,
  DS_NCCL_ARCH_HOPPER,
  DS_NCCL_ARCH_BLACKWELL,
  DS_NCCL_ARCH_COUNT,
  DS_NCCL_ARCH_UNKNOWN = -1
};

/* What NCCL's cost model leaves out, as mechanisms read in NCCL's source
 * (v2.30.7: src/enqueue.cc calcCollChunking, src/device/all_reduce.h,
 * prims_simple.h, src/transport/nvls.cc; docs/collectives.md derives each):
 *   launch_ns  per call: enqueueing and launching the kernel and seeing it
 *              complete, beyond NCCL's base latency (fitted);
 *   sync_ns    per Simple slice, per channel: a channel's CTA waits for its
 *              peer's step flag, barriers, fences and posts its own flag
 *              around each slice it copies, in series with the copy (fitted);
 *   pipeline   1: model the pipeline (NCCL's chunking gives the slices and
 *              the loops; NVLS's first loop fills its scatter-reduce-gather
 *              pipeline, and each NVLS chunk crosses three NVLink hops
 *              instead of NCCL's 25 us NVLS latency); 0: NCCL's model alone.
 * They are added once per all-reduce, before its first step. They never
 * change NCCL's choice (NCCL chooses by its own model). */
struct ds_nccl_extra {
  double launch_ns;
  double sync_ns;
  int pipeline;
};

/* Fitted to the 8x A100 table alone (../shared/data/nccl_allreduce_8xa100_azure.csv,
 * sizes >= 1 MiB, least median error; tests/test_nccl_fit.c reproduces it,
 * docs/collectives.md gives the fit and its hold-out check). */
#define DS_NCCL_EXTRA_MEASURED \
  ((struct ds_nccl_extra){.launch_ns = 14000, .sync_ns = 2500, .pipeline = 1})
#define DS_NCCL_EXTRA_NONE ((struct ds_nccl_extra){0, 0, 0})

/* NCCL's chunking of an all-reduce (what ds_nccl_chunking fills):
 *   ctas          CTAs (channels) that run it: the ring's and tree's
 *                 nChannels, NVLS's nvlsChannels (16 on Hopper, 24 on Blackwell);
 *   chunk_bytes   payload per chunk of a full loop: ring Simple stepSize *
 *                 ALLREDUCE_CHUNKSTEPS (2 MiB), LL stepSize / 2, LL128
 *                 stepSize * 15/16; NVLS 128 KiB halved down to 16 KiB for
 *                 small buffers; tree stepSize;
 *   loops         loops of a channel over its share of the buffer;
 *   syncs         Simple slice synchronisations one channel's CTA runs in
 *                 series: ring loops * 2(N-1) steps * 2 slices per chunk;
 *                 NVLS and tree one per loop (their stages run on separate
 *                 warps); 0 for LL and LL128 (flags travel with the data);
 *   fill_ns       pipeline fill beyond the steady rate: NVLS one loop at
 *                 its algorithm bandwidth; 0 for the ring (every rank
 *                 starts on its own chunk) and the tree (its flows model
 *                 the hops). */
struct ds_nccl_chunking {
  int32_t ctas;
  double chunk_bytes;
  double loops;
  double syncs;
  double fill_ns;
};

/* One NVLink as NCCL's topology rates it, and the raw rate a topology's
 * NVLink bandwidths count links in, GB/s per direction. NCCL gives a GPU
 * pair count x ncclTopoNVLinkBw(cudaCompCap) (src/graph/topo.cc:830-842 at
 * v2.30.7-1, 73cf1122): topo.h:274-281 takes the figure by compute
 * capability, SM100_NVLINK_BW 40.1 from 10.0, SM90 20.6 from 9.0,
 * SM86_NVLINK_BW 12.0 for exactly 8.6 (GA102/GA10x: RTX 3090, RTX A6000,
 * A40, whose links run at 14.0625 GB/s, not the 25 of GA100's), SM80 20
 * from 8.0 (Ada's 8.9 too), SM70 20 from 7.0 (Turing's 7.5 too) (topo.h:
 * 19-24). nccl_gbps is that figure; raw_gbps the GPU table's nvlink_bw
 * over nvlink_links, else 25 GB/s (50 on Blackwell, NVLink 5). */
struct ds_nccl_nvlink {
  double nccl_gbps;
  double raw_gbps;
};

struct ds_nccl_model {
  enum ds_nccl_arch arch;
  struct ds_nccl_nvlink nvlink; /* NCCL's NVLink for the topology's GPUs */
  int32_t nranks;
  int32_t nnodes;
  int32_t hw_intra;              /* DS_HOP_NVLINK or DS_HOP_PCI */
  int32_t channels;              /* NCCL's nChannels for the ring */
  double chan_bw_bytes_per_s;    /* NCCL's bwIntra (per channel) */
  double ll_max_bw_bytes_per_s;  /* llMaxBw */
  double ll128_per_ch_max_bytes_per_s; /* perChMaxRingLL128Bw */
  double lat_ns[DS_PROTO_COUNT];       /* NCCL's predicted latency */
  double busbw_bytes_per_s[DS_PROTO_COUNT]; /* NCCL's bus bandwidth */
  double base_lat_ns[DS_PROTO_COUNT];
  double hw_lat_ns[DS_HOP_CLASS_COUNT][DS_PROTO_COUNT];
  struct ds_nccl_extra extra;
  /* Tree */
  double tree_lat_ns[DS_PROTO_COUNT];
  double tree_busbw_bytes_per_s[DS_PROTO_COUNT]; /* before the size correction */
  double tree_base_lat_ns[DS_PROTO_COUNT];
  double tree_hw_lat_ns[DS_HOP_CLASS_COUNT][DS_PROTO_COUNT];
  /* NVLS (valid when nvls_ok) */
  int nvls_ok;
  char nvls_why[160];            /* why not, when !nvls_ok */
  int32_t nvls_channels;
  double nvls_chan_bw_bytes_per_s;
  double nvls_busbw_bytes_per_s;
  double nvls_lat_ns;             /* NCCL's NVLS latency (its choice) */
  double nvls_hops_lat_ns;        /* three NVLink Simple steps (simulation) */
  /* Across nodes NCCL runs NVLS as NVLSTree (nvls_tree 1; plain NVLS
   * across nodes needs CollNet): NVLS inside each node, a double binary
   * tree over the nodes between the heads (one per NIC, nvls_channels).
   * nvls_lat_ns is then NCCL's whole latency, nvls_intra_lat_ns its NVLink
   * part (hwLat[NVLINK][NVLSTree]) and nvls_net_hop_lat_ns what it charges
   * per tree level and direction (the simulation pays it per network hop). */
  int nvls_tree;
  int nvls_tree_size_corrected;   /* NVLSTree's bandwidth takes the tree's size
                                     correction (Blackwell on x86 hosts) */
  double nvls_intra_lat_ns;
  double nvls_net_hop_lat_ns;
  /* NCCL's graph->sameChannels for the ring: 1 when every channel runs the
   * same ring order (search.cc tries that first and keeps it when it finds
   * the bandwidth), 0 where this model's channel search packed rings of
   * different orders (ring->chan with chan_same 0: one node with direct
   * GPU-to-GPU links, e.g. dgx1-v100, 4gpu; a 2-GPU pair's rings are one
   * order, so 1 there, as NCCL's replay finds them). tuning.cc charges
   * a broadcast or reduce one hop latency with it, nsteps without. */
  int same_channels;
  /* NCCL's default leaves LL128 off here (a ring crossing PCIe inside a
   * node: tuning.cc enables it by default only up to PATH_NVB; not where
   * NCCL bridges every such pair through a member GPU, ring->chan_nvb). */
  int ll128_off_by_default;
  /* The tree's graph pattern is NCCL_TOPO_PATTERN_TREE (a node with one
   * GPU): its busBw takes tuning.cc's 0.85. */
  int tree_pattern_tree;
  /* NCCL_PROTO's disabled protocols (--proto LL,Simple; bit 1u << p):
   * tuning.cc ncclTopoTuneModel zeroes their bandwidth, so no choice picks
   * them. ds_nccl_model_build leaves NCCL's default (NCCL_PROTO unset:
   * LL128 where ll128_off_by_default); callers set a --proto set with
   * ds_nccl_model_proto_env. ds_nccl_algo_available refuses them, and
   * every prediction by algorithm or collective kind is then INFINITY
   * (ds_nccl_predict_ns is the bare cost model and ignores it). */
  unsigned proto_disabled;
  int proto_set; /* proto_disabled is a set's (NCCL_PROTO given), not the default */
};

/* NCCL's channel limit, MAXCHANNELS (src/include/device.h:91 at v2.30.7;
 * 64 since v2.25, 32 before). */
#define DS_NCCL_MAXCHANNELS 64
/* NCCL's ring search packs at most this many channels, and
 * ncclTopoDupChannels duplicates up to it (init.cc:1177 at v2.30.7:
 * ringGraph->maxChannels = MAXCHANNELS / 2; search.cc:1042). */
#define DS_NCCL_SEARCH_MAX_CHANNELS (DS_NCCL_MAXCHANNELS / 2)

/* NCCL_PROTO on m: set 0 (unset) gives NCCL's default, every protocol but
 * LL128 where ll128_off_by_default; set 1 gives the set's disabled mask
 * (bit 1u << p), a set naming LL128 enabling it anywhere (parseList writes
 * 1 or 0 over LL128's default 2). */
void ds_nccl_model_proto_env(struct ds_nccl_model *m, int set, unsigned disabled);

/* LL's bus bandwidth cap (llMaxBw), GB/s: on one node by the GPUs'
 * architecture, on several by the hosts' CPU vendor (Intel row 39.0 / 20.4
 * at 2 / more nodes, AMD 22.5 / 19.0), as tuning.cc picks it. */
double ds_nccl_ll_max_bw_gbps(enum ds_nccl_arch arch, enum ds_cpu_vendor vendor,
                              int32_t nnodes);

/* The architecture of a GPU table name, DS_NCCL_ARCH_UNKNOWN if none. */
enum ds_nccl_arch ds_nccl_arch_of_gpu(const char *gpu_name);
/* NCCL's tuning row for a GPU table family ("Volta", "Turing", "Ampere",
 * "Ada", "Hopper", "Blackwell"); DS_NCCL_ARCH_UNKNOWN otherwise. */
enum ds_nccl_arch ds_nccl_arch_of_family(const char *family);
const char *ds_nccl_arch_name(enum ds_nccl_arch arch);
/* The architecture of a topology's GPUs: by the GPU table's name, else its
 * family (arch); DS_NCCL_ARCH_UNKNOWN when neither is known. */
enum ds_nccl_arch ds_nccl_arch_of_topo(const struct ds_topo *topo);
/* NCCL's NVLink for a GPU of architecture arch (its tuning row) and table
 * entry gpu (compute_capability, nvlink_link_bw_bytes_per_s; 0s: by arch
 * alone). */
struct ds_nccl_nvlink ds_nccl_nvlink_of(enum ds_nccl_arch arch, const struct ds_gpu_spec *gpu);
/* A link of bandwidth bw crossed by a hop of class cls as NCCL rates it
 * (bytes/s): NVLink as bw / nv->raw_gbps links of nv->nccl_gbps each, PCIe
 * at PCI_BW over Gen3 x16, the network as given. */
double ds_nccl_link_bw(const struct ds_nccl_nvlink *nv, enum ds_hop_class cls, double bw);
/* The per-channel speeds NCCL's search tries (GB/s, highest first;
 * search.cc speedArrayIntra/Inter, sm90 and sm100 arrays), inside one node
 * (inter 0) or across nodes; *n gets their count. */
const double *ds_nccl_search_speeds(enum ds_nccl_arch arch, int inter, size_t *n);

/* Builds NCCL's model for a ring all-reduce over ring (built on topo).
 * DS_EINPUT when unavailable (unknown architecture, fewer than 2 ranks):
 * err says why. */
ds_status ds_nccl_model_build(struct ds_topo *topo,
                              const struct ds_ring *ring,
                              struct ds_nccl_extra extra,
                              struct ds_nccl_model *out, struct ds_err *err);

/* NCCL's predicted time of an all-reduce of `bytes` with protocol p, ns
 * (the cost model alone, without the extra effects). */
double ds_nccl_predict_ns(const struct ds_nccl_model *m, enum ds_proto p,
                          double bytes);
/* The protocol NCCL runs for `bytes` on the ring: least predicted time
 * among the enabled ones (LL on ties, then LL128). */
enum ds_proto ds_nccl_choose(const struct ds_nccl_model *m, double bytes);
/* NCCL's chunking of an all-reduce of `bytes` by (a, p) (see above). */
void ds_nccl_chunking(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                      double bytes, struct ds_nccl_chunking *out);
/* The CTAs an NVLS or NVLSTree kernel launches, one per NVLS channel:
 * NCCL's nvlsChannels (src/transport/nvls.cc:209-214 and :238, NVLS_NCHANNELS_SM90 16
 * on Hopper), which enqueue.cc:2084-2090 gives the collective as its
 * channels and enqueue.cc:1756-1758 launches as the grid; each channel
 * works on every head. The heads (nvls_channels) where the table has no
 * count for the architecture. */
int32_t ds_nccl_nvls_ctas(const struct ds_nccl_model *m);
/* The extra effects of an all-reduce of `bytes` by (a, p), ns: launch +
 * syncs * sync + fill (0 with DS_NCCL_EXTRA_NONE). */
double ds_nccl_extra_ns(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                        double bytes);
/* The uncontended time the simulation gives an all-reduce of `bytes` by
 * (a, p) on one uniform route set: NCCL's prediction with the simulated
 * latency (NVLS: nvls_hops_lat_ns when pipeline is on) plus the extra, ns. */
double ds_nccl_sim_algo_ns(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                           double bytes);

/* Fills the simulation parameters of protocol p for `bytes` (coll.h):
 *   channels        nChannels;
 *   wire_factor     bytes on the wire per payload byte: LL 2 (a 4 B flag
 *                   per 4 B of data), LL128 128/120, Simple 1;
 *   chan_cap        per-channel rate cap on wire bytes: Simple bwIntra;
 *                   LL min(bwIntra, 2 llMaxBw / nChannels); LL128
 *                   min(bwIntra, perChMaxRingLL128Bw * 128/120);
 *   hop_lat_ns[h]   hwLat[h][Ring][p] per step of a hop of class h;
 *   start_lat_ns    baseLat[Ring][p] + ds_nccl_extra_ns(m, ring, p, bytes).
 * Uncontended on a uniform ring this runs in
 *   start + 2(N-1) hwLat + 2(N-1)/N * S * wire / min(C * cap, link bw),
 * which is NCCL's time(S) for Simple and LL exactly, and 2% faster for
 * LL128 (NCCL derates by 0.92 where the wire carries 120/128 = 0.9375). */
void ds_nccl_coll_proto(const struct ds_nccl_model *m, enum ds_proto p,
                        double bytes, struct ds_coll_proto *out);
/* ds_nccl_coll_proto for ring collective k of `bytes` (the buffer as
 * nccl-tests counts it): all-gather and reduce-scatter walk N-1 steps a
 * loop where the all-reduce walks 2(N-1) (enqueue.cc ncclPatternRing /
 * RingTwice), so Simple's slice syncs in start_lat_ns are loops * (N-1) * 2;
 * any other kind: ds_nccl_coll_proto. */
void ds_nccl_ring_kind_proto(const struct ds_nccl_model *m, enum ds_coll_kind k,
                             enum ds_proto p, double bytes, struct ds_coll_proto *out);

/* NCCL's predicted time of an all-reduce by algorithm a (ring, tree or
 * nvls) and protocol p, ns; INFINITY where NCCL would not run it (NVLS not
 * available or not Simple; any other algorithm). */
double ds_nccl_predict_algo_ns(const struct ds_nccl_model *m, enum ds_ar_algo a,
                               enum ds_proto p, double bytes);
/* Whether NCCL can run (a, p) here; when not, *why says why (may be NULL). */
int ds_nccl_algo_available(const struct ds_nccl_model *m, enum ds_ar_algo a,
                           enum ds_proto p, const char **why);
/* NCCL's choice for `bytes` among the available (algorithm, protocol)
 * pairs, by least predicted time in NCCL's order (see above). */
void ds_nccl_choose_algo(const struct ds_nccl_model *m, double bytes,
                         enum ds_ar_algo *a, enum ds_proto *p);
/* With the protocol fixed (--algo auto --proto P): the algorithm of least
 * predicted time that NCCL runs with p (the ring when none but it does). */
enum ds_ar_algo ds_nccl_choose_algo_with(const struct ds_nccl_model *m, double bytes,
                                         enum ds_proto p);
/* NCCL's choice of protocol for algorithm a (least time among a's
 * available protocols; DS_PROTO_COUNT when a has none here). */
enum ds_proto ds_nccl_choose_proto(const struct ds_nccl_model *m, enum ds_ar_algo a,
                                   double bytes);
/* Simulation parameters of (a, p) for `bytes`: the ring's as
 * ds_nccl_coll_proto; the tree's: C = ceil(nCh/2) channels per tree, the
 * wire factors of the ring, per-channel cap w busBw(p) corr(S) / (4 C) (on
 * a GPU four streams, up and down of each tree, share the algorithm
 * bandwidth busBw corr / 2; across nodes sim/coll/coll_tree.c spreads a tree's
 * C channels over its K rails, one per NIC, each rail carrying 1/K of the
 * C caps), hwLat[h][Tree][p] per hop, baseLat[Tree][p] + extras at the
 * start; NVLS's: nCh channels, cap algbw / nCh, no per-hop
 * latency, at the start the NVLS latency (NCCL's, or three NVLink Simple
 * steps when the pipeline is modelled) + extras. */
void ds_nccl_algo_proto(const struct ds_nccl_model *m, enum ds_ar_algo a,
                        enum ds_proto p, double bytes, struct ds_coll_proto *out);

/* All-gather and reduce-scatter on the ring (tuning.cc with nsteps = N-1,
 * `bytes` the whole buffer as nccl-tests counts it, which is NCCL's nBytes):
 *   lat   = baseLat[Ring][p] + (N-1 - nInter) hwLat[intra] + nInter hwLat[NET],
 *           nInter = nNodes - 1 across nodes, else 0
 *   algbw = busBw(p) N / (N-1)   (busBw(p) as the all-reduce ring's)
 * and no plateau (that is all-reduce's). They run with ds_nccl_ring_kind_proto's
 * parameters (the ring's channels, wire factors, caps, latencies; Simple's
 * slice syncs for N-1 steps a loop) over N-1 steps. kind DS_COLL_ALLREDUCE is ds_nccl_predict_ns; other kinds INFINITY;
 * a protocol of proto_disabled INFINITY for every kind. */
double ds_nccl_predict_coll_ns(const struct ds_nccl_model *m, enum ds_coll_kind kind,
                               enum ds_proto p, double bytes);
/* Broadcast and reduce (tuning.cc: Ring only, nsteps = N, algbw = busBw):
 *   lat   = baseLat[Ring][p] + hwLat[hw][Ring][p]        (same_channels)
 *         = baseLat[Ring][p] + N hwLat[hw][a'][p]         (otherwise; a' is
 *           Tree for Simple, "waiting for proper chunk modeling")
 *   time  = lat + S / busBw(p),  busBw(p) as the all-reduce ring's,
 * hw the intra-node class on one node, NET across nodes (no network
 * overhead: tuning.cc adds that to the other ring kinds only). The same
 * function answers for these kinds. */
/* The protocol of least predicted time (LL on ties, then LL128). */
enum ds_proto ds_nccl_choose_coll_proto(const struct ds_nccl_model *m, enum ds_coll_kind kind,
                                        double bytes);

/* Simulation parameters of a broadcast or reduce chain (sim/coll/coll_chain.c)
 * of `bytes` under protocol p: the channels the plan puts it on
 * (src/enqueue.cc scheduleCollTasksToPlan: cells of 32 KiB of traffic, LL's
 * 8 KiB; each channel takes the whole cells that reach
 * divUp(max(32 KiB, traffic) / nc, 16) * 16, nc = ds_nccl_ring_channels; so
 * ceil(cells / cells per channel) channels, at most nChannels: a 512 KiB
 * Simple broadcast on 12 channels runs on 8 of 64 KiB) and the fullest
 * channel's share (share_bytes: the first and middle channels take whole
 * cells, the last the rest, so 1 MiB Simple on 12 channels runs 11, the
 * fullest 3 cells, 98,304 B, not 1 MiB / 11), ds_nccl_coll_proto's wire factor and
 * per-channel cap; per hop, hwLat[class][Ring][p] as NCCL's tables give it
 * (the chain pays one per hop a chunk crosses, N-1 in all, where NCCL's
 * model charges one); at the start baseLat[Ring][p] + the measured launch
 * (as p2p: the all-reduce's size ramp was fitted on all-reduce rings). */
void ds_nccl_chain_proto(const struct ds_nccl_model *m, enum ds_proto p, double bytes,
                         struct ds_coll_proto *out);
/* The channels NCCL runs a ring collective of nBytes `bytes` on under p
 * (src/enqueue.cc topoGetAlgoInfo, its ring/tree channel tuning): one less
 * while bytes < nc * nt * threadThreshold, so
 *   nc = min(nChannels, max(1, floor(bytes / (nt * threshold)))),
 * nt * threshold per channel (tuning.cc's maxThreads and threadThresholds):
 * LL 512 * 8 * N, LL128 640 * 8, Simple 512 * 64 (256 * 64 where
 * bwIntra * nChannels <= 12 GB/s). Broadcast and reduce use it (the plan's
 * split of ds_nccl_chain_proto starts from it); the all-reduce, all-gather
 * and reduce-scatter still run on every channel. */
int32_t ds_nccl_ring_channels(const struct ds_nccl_model *m, enum ds_proto p, double bytes);
/* Pieces of a chain of `bytes` under p, per channel (spec.chunks): what a
 * rank must hold before the next can start on it (NCCL v2.30.7; nccl_chunking.c
 * chain_piece_bytes cites each line). Simple: one 512 KiB step
 * (buffSize / NCCL_STEPS, BROADCAST_CHUNKSTEPS = 1). runRing hands the
 * primitives one chunk per call, at most a step and never shrunk for the
 * ring at small sizes, and genericOp (SlicePerChunk = 1) posts the step
 * flag the next rank waits on only after copying all of it: a channel's
 * share under a step crosses every hop whole (store and forward). LL and
 * LL128 forward per line (8 B) and per warp slice (1920 B) as the tree does
 * (coll.h ds_coll_forward_unit_bytes), so ceil(s / unit), at most 16 (N-1)
 * and 1024 (simulation cost; nccl_chunking.c CHAIN_PIECES_PER_HOP says what the
 * cap costs). Simple: ceil(s / step). s = ds_nccl_chain_proto's share_bytes
 * (the fullest channel's); at least 1. */
int32_t ds_nccl_chain_chunks(const struct ds_nccl_model *m, enum ds_proto p, double bytes);
/* A broadcast or reduce of `bytes` under p as NCCL runs it, the one entry
 * DDP's buffer broadcast (sim/train/exec_colls.c) and `ddpsim collective --op
 * broadcast|reduce` share: fills *out (ds_nccl_chain_proto) and returns the
 * pieces (ds_nccl_chain_chunks). NCCL's loop cuts whole pieces and a last
 * one of the rest (runRing: nelem = min(chunkCount, what is left)):
 * out->piece_bytes is the piece when there are two or more and they are
 * whole; 0 (equal pieces) where the cap on pieces makes them larger. The
 * pieces are NCCL's alone: --ring-chunks pipelines the plain chain only. */
int32_t ds_nccl_chain(const struct ds_nccl_model *m, enum ds_proto p, double bytes,
                      struct ds_coll_proto *out);

/* NCCL's point-to-point setup (sendrecv, alltoall): src/graph/paths.cc and
 * src/enqueue.cc. NCCL has no cost model for p2p; these are its channel,
 * chunk and protocol rules. */
struct ds_nccl_p2p {
  int32_t p2p_channels;      /* p2pnChannels: pow2Up(the ring's nChannels) */
  int32_t per_peer_channels; /* p2pnChannelsPerPeer: pow2Up of the least over
                                peers of 2 per NVLink of the path (NVLink), 2
                                (PCIe), max(2, NIC bw / 14 GB/s) (network);
                                across nodes halved until per_peer *
                                ceil(N / 8) <= p2p_channels */
  double chunk_bytes;        /* p2pChunkSize: 512 KiB all-NVLink, else 128 KiB */
  int32_t nranks, nnodes;
};
/* Fills q for the members of ring (routes from member 0 to each). */
ds_status ds_nccl_p2p_build(struct ds_topo *topo, const struct ds_ring *ring,
                            const struct ds_nccl_model *m, struct ds_nccl_p2p *q,
                            struct ds_err *err);
/* Channels of one transfer of `bytes` (addP2pToPlan): nMin = per_peer halved
 * while nMin * N > p2p_channels; min(nMin, ceil(bytes / (chunk/8))) (chunk/2
 * across nodes), doubled while a part exceeds 32 chunks (1 across nodes)
 * and the doubled count stays within per_peer. */
int32_t ds_nccl_p2p_channels(const struct ds_nccl_p2p *q, double bytes);
/* LL when bytes <= channels * NCCL_P2P_LL_THRESHOLD (16 KiB), else Simple. */
enum ds_proto ds_nccl_p2p_choose(const struct ds_nccl_p2p *q, double bytes);
/* Simulation parameters of one transfer of `bytes` under p (LL or Simple):
 * ds_nccl_coll_proto's wire factor, per-channel cap and hop latencies, with
 * ds_nccl_p2p_channels channels and start baseLat[Ring][p] + the measured
 * launch (not the all-reduce's size ramp). */
void ds_nccl_p2p_proto(const struct ds_nccl_model *m, const struct ds_nccl_p2p *q,
                       enum ds_proto p, double bytes, struct ds_coll_proto *out);

/* Version of NCCL the constants come from ("v2.30.7"). */
const char *ds_nccl_constants_version(void);

/* Generated tables (sim/coll/nccl_constants.c). Indices: algo 0 Tree, 1 Ring;
 * proto as enum ds_proto; hw as enum ds_hop_class; arch as enum
 * ds_nccl_arch (Volta, Ampere, Hopper, Blackwell); nodes 1, 2, >2. */
extern const char ds__nccl_constants_version[];
extern const double ds__nccl_base_lat_us[2][3];
extern const double ds__nccl_hw_lat_us[3][2][3];
extern const double ds__nccl_ll_max_bw_gbps[4][3];
extern const double ds__nccl_ring_ll128_per_ch_max_bw_gbps[4][3];
extern const double ds__nccl_volta_nvlink_gbps;
extern const double ds__nccl_ampere_nvlink_gbps;
extern const double ds__nccl_sm86_nvlink_gbps;
extern const double ds__nccl_hopper_nvlink_gbps;
extern const double ds__nccl_blackwell_nvlink_gbps;
extern const double ds__nccl_pci_gen3_x16_gbps;
extern const double ds__nccl_net_100g_gbps;
extern const double ds__nccl_tree_per_ch_max_bw_gbps[4][3];
extern const double ds__nccl_tree_ll128_per_ch_max_bw_gbps[4][3];
extern const double ds__nccl_tree_correction[3][24];
extern const double ds__nccl_nvls_efficiency[4];
extern const double ds__nccl_nvls_base_lat_us;
extern const double ds__nccl_nvls_hw_lat_us[3];
extern const double ds__nccl_nvls_tree_base_lat_us;
extern const double ds__nccl_nvls_tree_hw_lat_us[3];
extern const double ds__nccl_nvls_tree_per_ch_max_bw_gbps[4][3];
/* Chunking (src/include/device.h, collectives.h, src/init.cc,
 * src/transport/nvls.cc): NCCL_STEPS; default buffer bytes per protocol
 * [LL, LL128, Simple]; ALLREDUCE_CHUNKSTEPS and _SLICESTEPS; NVLS chunk
 * bytes; NVLS CTAs per architecture (0: no NVLS). */
extern const int ds__nccl_steps;
extern const double ds__nccl_buff_bytes[3];
extern const int ds__nccl_allreduce_chunk_steps;
extern const int ds__nccl_allreduce_slice_steps;
extern const double ds__nccl_nvls_chunk_bytes;
extern const int ds__nccl_nvls_ctas[4];

#ifdef __cplusplus
}
#endif

#endif /* DS_NCCL_MODEL_H */
