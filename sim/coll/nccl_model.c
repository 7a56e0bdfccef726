/*
 * NCCL's all-reduce cost model (see nccl_model.h): the architecture, the
 * link rates NCCL sees, the rings' share of their links, the channel search
 * and ds_nccl_model_build. Invariant: the model's numbers are NCCL's
 * formulas over the generated constants; everything this file approximates
 * (the topology search) is in ds_nccl_model_build's comment. The
 * predictions and the choice are in nccl_tuning.c; the extra mechanisms
 * (launch, slice syncs, pipeline fill), kept apart from NCCL's prediction,
 * and the chunking in nccl_chunking.c; point-to-point in nccl_p2p.c.
 */
#include "sim/coll/nccl_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "sim/coll/nccl_model_impl.h"
#include "sim/coll/ring_channels.h"
#include "sim/coll/ring_rails.h"

/* Raw per-link, per-direction NVLink bandwidth of NVLink 2, 3 and 4 (V100,
 * A100, H100 datasheets: 25 GB/s per link per direction) and of NVLink 5
 * (B200/GB200: 1.8 TB/s over 18 links both ways, 50 GB/s per link per
 * direction; the GPU table's nvlink_bw 900 GBps over nvlink_links 18): the
 * rate a topology's NVLink bandwidth is counted in where the GPU table
 * gives no link count (ds_nccl_nvlink_of). */
#define RAW_NVLINK_GBPS 25.0
#define RAW_NVLINK5_GBPS 50.0
/* Raw PCIe Gen3 x16 per direction, against NCCL's PCI_BW (12 GB/s). */
#define RAW_PCI_GEN3_GBPS 16.0
/* tuning.cc getNetOverhead (:228-233): 1 us on Intel x86 and by default
 * (mixed hosts among them: their vendor is MIXED, not AMD), 2 on AMD x86
 * (the topology's cpu_vendor). */
#define NET_OVERHEAD_INTEL_US 1.0
#define NET_OVERHEAD_AMD_US 2.0

/* search.cc: the per-channel bandwidths the ring search tries, in order
 * (speedArrayIntra/Inter, sm90SpeedArray*, sm100SpeedArray*: NCCL
 * v2.30.7-1 src/graph/search.cc:1051-1065). */
static const double speed_intra[] = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
static const double speed_inter[] = {48, 30, 28, 24, 20, 18, 15, 12, 10, 9,
                                     7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};
static const double sm90_speed_intra[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
static const double sm90_speed_inter[] = {48, 45, 42, 40, 30, 24, 22, 20, 17.5,
                                          15, 12, 6,  3,  2.4, 1.2, 0.24, 0.12};
static const double sm100_speed_intra[] = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
static const double sm100_speed_inter[] = {96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22,
                                           20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};

/* nccl_model.h. The speeds NCCL's search tries for an architecture
 * (search.cc: sm100 arrays from compute capability 10.0, sm90 from 9.0,
 * else the defaults), inside one node (intra) or across nodes. */
const double *ds_nccl_search_speeds(enum ds_nccl_arch arch, int inter, size_t *n) {
#define DS__SPEEDS(a) (*n = sizeof(a) / sizeof *(a), (a))
  if (arch == DS_NCCL_ARCH_BLACKWELL)
    return inter ? DS__SPEEDS(sm100_speed_inter) : DS__SPEEDS(sm100_speed_intra);
  if (arch == DS_NCCL_ARCH_HOPPER)
    return inter ? DS__SPEEDS(sm90_speed_inter) : DS__SPEEDS(sm90_speed_intra);
  return inter ? DS__SPEEDS(speed_inter) : DS__SPEEDS(speed_intra);
#undef DS__SPEEDS
}

const char *ds_nccl_constants_version(void) { return ds__nccl_constants_version; }

enum ds_nccl_arch ds_nccl_arch_of_gpu(const char *name) {
  if (strncmp(name, "V100", 4) == 0) return DS_NCCL_ARCH_VOLTA;
  if (strncmp(name, "A100", 4) == 0) return DS_NCCL_ARCH_AMPERE;
  if (strncmp(name, "H100", 4) == 0 || strncmp(name, "H200", 4) == 0)
    return DS_NCCL_ARCH_HOPPER;
  if (strncmp(name, "B100", 4) == 0 || strncmp(name, "B200", 4) == 0 ||
      strncmp(name, "GB200", 5) == 0)
    return DS_NCCL_ARCH_BLACKWELL;
  return DS_NCCL_ARCH_UNKNOWN;
}

/* NCCL's tuning row for a GPU family, as tuning.cc indexes it by the lowest
 * compute capability: >= 10.0 Blackwell (sm_100 and the sm_120 GeForce
 * parts alike), >= 9.0 Hopper, >= 8.0 Ampere (so Ada, sm_89, and the GA10x
 * cards use Ampere's row), below that Volta (Turing, sm_75, too). */
enum ds_nccl_arch ds_nccl_arch_of_family(const char *family) {
  if (strcmp(family, "Volta") == 0 || strcmp(family, "Turing") == 0) return DS_NCCL_ARCH_VOLTA;
  if (strcmp(family, "Ampere") == 0 || strcmp(family, "Ada") == 0) return DS_NCCL_ARCH_AMPERE;
  if (strcmp(family, "Hopper") == 0) return DS_NCCL_ARCH_HOPPER;
  if (strcmp(family, "Blackwell") == 0) return DS_NCCL_ARCH_BLACKWELL;
  return DS_NCCL_ARCH_UNKNOWN;
}

enum ds_nccl_arch ds_nccl_arch_of_topo(const struct ds_topo *topo) {
  enum ds_nccl_arch a = ds_nccl_arch_of_gpu(topo->gpu.name);
  return a != DS_NCCL_ARCH_UNKNOWN ? a : ds_nccl_arch_of_family(topo->gpu.arch);
}

const char *ds_nccl_arch_name(enum ds_nccl_arch a) {
  switch (a) {
  case DS_NCCL_ARCH_VOLTA: return "Volta";
  case DS_NCCL_ARCH_AMPERE: return "Ampere";
  case DS_NCCL_ARCH_HOPPER: return "Hopper";
  case DS_NCCL_ARCH_BLACKWELL: return "Blackwell";
  default: return "unknown";
  }
}

/* nccl_model.h. tuning.cc ncclTopoTuneModel: llMaxBws[index1][index2],
 * index1 the GPU architecture on one node, the CPU vendor on several (1 for
 * AMD or mixed hosts, else 0), index2 the node count (1, 2, more). */
double ds_nccl_ll_max_bw_gbps(enum ds_nccl_arch arch, enum ds_cpu_vendor vendor,
                              int32_t nnodes) {
  if (nnodes <= 1) return ds__nccl_ll_max_bw_gbps[arch][0];
  int row = vendor == DS_CPU_VENDOR_AMD || vendor == DS_CPU_VENDOR_MIXED ? 1 : 0;
  return ds__nccl_ll_max_bw_gbps[row][nnodes == 2 ? 1 : 2];
}

/* nccl_model.h. topo.h ncclTopoNVLinkBw's order: compute capability 8.6
 * exactly takes SM86_NVLINK_BW before the >= 8.0 row; every other
 * capability the GPU table knows falls in its architecture's row (Turing
 * 7.5 in SM70's, Ada 8.9 in SM80's, sm_120 in SM100's), as arch indexes
 * them. */
struct ds_nccl_nvlink ds_nccl_nvlink_of(enum ds_nccl_arch arch, const struct ds_gpu_spec *gpu) {
  struct ds_nccl_nvlink nv;
  nv.nccl_gbps = gpu->compute_capability == 86   ? ds__nccl_sm86_nvlink_gbps
                 : arch == DS_NCCL_ARCH_VOLTA    ? ds__nccl_volta_nvlink_gbps
                 : arch == DS_NCCL_ARCH_AMPERE   ? ds__nccl_ampere_nvlink_gbps
                 : arch == DS_NCCL_ARCH_HOPPER   ? ds__nccl_hopper_nvlink_gbps
                                                 : ds__nccl_blackwell_nvlink_gbps;
  nv.raw_gbps = gpu->nvlink_link_bw_bytes_per_s > 0
                    ? gpu->nvlink_link_bw_bytes_per_s / DS_UNITS_GBPS
                    : arch == DS_NCCL_ARCH_BLACKWELL ? RAW_NVLINK5_GBPS : RAW_NVLINK_GBPS;
  return nv;
}

/* nccl_model.h. NCCL's view of a hop's bandwidth: the topology's figure
 * derated as NCCL derates the link (bw counts bw / raw_gbps links, NCCL
 * gives each nccl_gbps). */
double ds_nccl_link_bw(const struct ds_nccl_nvlink *nv, enum ds_hop_class cls, double bw) {
  switch (cls) {
  case DS_HOP_NVLINK:
    return bw * nv->nccl_gbps / nv->raw_gbps;
  case DS_HOP_PCI:
    return bw * ds__nccl_pci_gen3_x16_gbps / RAW_PCI_GEN3_GBPS;
  default:
    return bw; /* NCCL takes the NIC's reported speed */
  }
}

/* The weight NCCL's search charges on hop i's PCIe links: 6/5 through an
 * Intel root complex (ring_channels.h ds__ring_pci_overhead), else 1. */
static double hop_pci_weight(const struct ds_topo *topo, const struct ds_ring *r, int32_t i) {
  return ds__ring_pci_overhead(topo, r->hop_links + r->hop_first[i],
                               r->hop_first[i + 1] - r->hop_first[i],
                               (enum ds_hop_class)r->hop_class[i]);
}

/* K rings together (rails, or one ring): min over links of the link's
 * bandwidth (derated by the class of a hop crossing it) over the load the
 * hops of all rings put on it, in GB/s; -1 when out of memory. Each hop
 * loads every link of its route once (NCCL's followPath charges a
 * channel's speed on each link of a hop's path: a switch uplink that the
 * hops of several GPUs cross, as without peer-to-peer, is shared), its
 * PCIe links hop_pci_weight. Host memory (kind mem) is not a link of
 * NCCL's graph (topo.cc has CPU nodes, no memory): left out. by_node, when
 * not NULL ([topo->n_nodes + 1]), gets the same min over the fabric's
 * links (slot 0: between vertices of no node) and over each node v's
 * (slot v + 1: links with an end in it), INFINITY where none is loaded. */
static double rings_share_gbps(const struct ds_nccl_nvlink *nv, const struct ds_topo *topo,
                               const struct ds_ring *rings, int32_t n_rings, double *by_node) {
  double *load = calloc((size_t)topo->n_links + 1, sizeof *load);
  double *bw = malloc(((size_t)topo->n_links + 1) * sizeof *bw);
  if (!load || !bw) {
    free(load);
    free(bw);
    return -1;
  }
  for (int32_t k = 0; k < n_rings; k++) {
    const struct ds_ring *r = &rings[k];
    for (int32_t i = 0; i < r->n; i++) {
      double pci_weight = hop_pci_weight(topo, r, i);
      for (int32_t h = r->hop_first[i]; h < r->hop_first[i + 1]; h++) {
        int32_t l = r->hop_links[h];
        const char *kind = topo->links[l].kind;
        if (kind && strcmp(kind, "mem") == 0) continue;
        double b = ds_nccl_link_bw(nv, (enum ds_hop_class)r->hop_class[i],
                                   topo->links[l].bw_bytes_per_s) / DS_UNITS_GBPS;
        if (load[l] == 0 || b < bw[l]) bw[l] = b;
        load[l] += kind && strcmp(kind, "pcie") == 0 ? pci_weight : 1;
      }
    }
  }
  double share = INFINITY;
  for (int32_t v = 0; by_node && v <= topo->n_nodes; v++) by_node[v] = INFINITY;
  for (int32_t l = 0; l < topo->n_links; l++) {
    if (load[l] == 0) continue;
    double s = bw[l] / load[l];
    if (s < share) share = s;
    if (!by_node) continue;
    int32_t a = topo->vertex_node[topo->links[l].src], b = topo->vertex_node[topo->links[l].dst];
    if (a < 0 && b < 0 && s < by_node[0]) by_node[0] = s;
    if (a >= 0 && s < by_node[a + 1]) by_node[a + 1] = s;
    if (b >= 0 && s < by_node[b + 1]) by_node[b + 1] = s;
  }
  free(load);
  free(bw);
  return share;
}

/* ncclTopoDupChannels (search.cc:1036-1046, v2.30.7): twice the channels at
 * half the speed when the speed is at least 25 GB/s, unless the lowest
 * compute capability is above 8.0 (ccMin > 80: sm_86 and sm_89 as well as
 * Hopper and Blackwell) and the speed below 50 GB/s with more than 4
 * channels. cc: 10 x major + minor (dup_cc). */
static void dup_channels(int32_t cc, int32_t *nch, double *speed) {
  if (*nch > DS_NCCL_SEARCH_MAX_CHANNELS) *nch = DS_NCCL_SEARCH_MAX_CHANNELS;
  if (*speed >= 25.0 && !(cc > 80 && *speed < 50.0 && *nch > 4)) {
    int32_t dup = 2 * *nch > DS_NCCL_SEARCH_MAX_CHANNELS ? DS_NCCL_SEARCH_MAX_CHANNELS : 2 * *nch;
    *speed /= (dup + *nch - 1) / *nch;
    *nch = dup;
  }
}

/* The compute capability dup_channels tests: the GPU table's, else the
 * lowest of the architecture's row (Ampere 8.0, Hopper 9.0, Blackwell 10.0;
 * Volta's row 7.0), as tuning.cc indexes rows by it. */
static int32_t dup_cc(const struct ds_topo *topo, enum ds_nccl_arch arch) {
  if (topo->gpu.compute_capability > 0) return topo->gpu.compute_capability;
  switch (arch) {
  case DS_NCCL_ARCH_BLACKWELL: return 100;
  case DS_NCCL_ARCH_HOPPER: return 90;
  case DS_NCCL_ARCH_AMPERE: return 80;
  default: return 70;
  }
}

/* One search (nccl_model.h): the first listed speed not above the share
 * `bw` a channel gets, floor(bw / speed) channels on each of k NICs (k 1
 * for a ring without rails), then dup_channels. */
static void search_channels(int32_t cc, const double *speeds, size_t n_speeds,
                            double bw, int32_t k, int32_t *nch, double *speed) {
  *speed = speeds[n_speeds - 1];
  for (size_t i = 0; i < n_speeds; i++)
    if (speeds[i] <= bw * (1 + 1e-9)) {
      *speed = speeds[i];
      break;
    }
  double fit = floor(bw / *speed * (1 + 1e-9)); /* capped below: no int overflow */
  *nch = fit >= DS_NCCL_SEARCH_MAX_CHANNELS ? DS_NCCL_SEARCH_MAX_CHANNELS
         : fit < 1                          ? 1
                                            : (int32_t)fit;
  if (k > 1) *nch *= k; /* channels spread over the NICs */
  dup_channels(cc, nch, speed);
}

/* log2i of NCCL (floor of log2; 0 for 1). */
static int log2_floor(int32_t v) {
  int l = 0;
  while ((int64_t)1 << (l + 1) <= v) l++;
  return l;
}

/* NVLSTree across nodes (nccl_model.h): heads, speed, bus bandwidth and
 * latency; nvls_why says why not where it is unavailable. */
static void nvls_tree_build(struct ds_nccl_model *m, const char *gpu_name,
                            enum ds_cpu_vendor cpu_vendor, const struct ds_ring *ring,
                            double eff, int nidx, int32_t nics_max) {
  int32_t heads = ring->n_rails > 1 ? ring->n_rails : 1;
  if (heads < 2) {
    snprintf(m->nvls_why, sizeof m->nvls_why,
             "NVLSTree needs at least 2 heads (NICs) per node; the nodes reach %d", heads);
    return;
  }
  /* The GPU's switch link and the NIC as NCCL sees them: the least of each
   * class over the hops of the ring (every GPU's switch link is crossed). */
  double intra = INFINITY, net = INFINITY;
  for (int32_t i = 0; i < ring->n; i++) {
    enum ds_hop_class cls = (enum ds_hop_class)ring->hop_class[i];
    double b = ds_nccl_link_bw(&m->nvlink, cls, ring->hop_bw[i]) / DS_UNITS_GBPS;
    if (cls == DS_HOP_NET && b < net) net = b;
    if (cls != DS_HOP_NET && b < intra) intra = b;
  }
  /* Each node searches its NVLS graph alone (a head per NIC: its own
   * nics), init.cc keeps the least speed: that of the node with the most
   * NICs (nics_max; every node's on even nodes), the heads the least
   * count (the rails). */
  double limit = fmin(net, intra / ((nics_max > heads ? nics_max : heads) + 1)), speed = 0;
  size_t ns;
  const double *sp = ds_nccl_search_speeds(m->arch, 1, &ns);
  for (size_t k = 0; k < ns; k++)
    if (sp[k] <= limit * (1 + 1e-9)) {
      speed = sp[k];
      break;
    }
  if (speed <= 0) {
    snprintf(m->nvls_why, sizeof m->nvls_why, "NVLSTree search finds no channel");
    return;
  }
  double per_ch = fmin(fmin(speed * eff * (heads - 1) / heads * 2,
                            speed * (m->nnodes <= 2 ? 2 : 1)),
                       ds__nccl_nvls_tree_per_ch_max_bw_gbps[m->arch][nidx]);
  int one_per_node = m->nranks == m->nnodes;
  double inter = one_per_node ? ds__nccl_hw_lat_us[DS_HOP_NET][TREE][DS_PROTO_SIMPLE]
                              : ds__nccl_nvls_tree_hw_lat_us[DS_HOP_NET];
  m->nvls_ok = 1;
  m->nvls_tree = 1;
  /* tuning.cc ncclTopoGetAlgoTime (:644): on Blackwell with x86 hosts
   * NVLSTree's bandwidth takes the tree's size correction too. Not x86: a
   * topology's cpu_vendor arm (what topo import writes for non-x86 hosts),
   * or a GB-named GPU, whatever the file says (GB200 superchips have Grace
   * hosts; a hand-written file may lack arm); other Blackwell boards (DGX
   * B200) are x86. */
  m->nvls_tree_size_corrected = m->arch == DS_NCCL_ARCH_BLACKWELL &&
                                strncmp(gpu_name, "GB", 2) != 0 &&
                                cpu_vendor != DS_CPU_VENDOR_ARM;
  m->nvls_channels = heads;
  m->nvls_chan_bw_bytes_per_s = speed * DS_UNITS_GBPS;
  m->nvls_busbw_bytes_per_s = heads * per_ch * DS_UNITS_GBPS;
  m->nvls_intra_lat_ns = ds__nccl_nvls_tree_hw_lat_us[DS_HOP_NVLINK] * US;
  m->nvls_net_hop_lat_ns = inter * US;
  m->nvls_lat_ns = ds__nccl_nvls_tree_base_lat_us * US + m->nvls_intra_lat_ns +
                   2 * log2_floor(m->nnodes) * m->nvls_net_hop_lat_ns;
  /* the NVLink part as on one node: three synchronised NVLink Simple
   * steps at the table's latency (the floor the ring's steps take across
   * nodes, getNetOverhead's, is the ring's alone in tuning.cc) */
  m->nvls_hops_lat_ns = ds__nccl_nvls_base_lat_us * US +
                        3 * ds__nccl_hw_lat_us[DS_HOP_NVLINK][RING][DS_PROTO_SIMPLE] * US;
}

ds_status ds_nccl_model_build(struct ds_topo *topo,
                              const struct ds_ring *ring,
                              struct ds_nccl_extra extra,
                              struct ds_nccl_model *m, struct ds_err *err) {
  memset(m, 0, sizeof *m);
  m->arch = ds_nccl_arch_of_topo(topo);
  m->nvlink = ds_nccl_nvlink_of(m->arch, &topo->gpu);
  if (m->arch == DS_NCCL_ARCH_UNKNOWN)
    return ds_err_set(err, DS_EINPUT,
                      "NCCL's model is unavailable for GPU '%s': unknown architecture "
                      "'%s' (known: Volta, Turing, Ampere, Ada, Hopper, Blackwell)",
                      topo->gpu.name, topo->gpu.arch[0] ? topo->gpu.arch : "not given");
  if (ring->n < 2)
    return ds_err_set(err, DS_EINPUT, "NCCL's model needs at least 2 ranks");
  m->nranks = ring->n;
  m->extra = extra;

  /* Nodes, the intra-node link class, and the ring's bottleneck as NCCL
   * would see it (derated per class). */
  /* The ring enters and leaves each node once when ranks are numbered node
   * by node (as here): one network hop per node, or none on one node. */
  int32_t net_hops = 0;
  m->hw_intra = DS_HOP_NVLINK;
  double bw_gbps = INFINITY;
  for (int32_t i = 0; i < ring->n; i++) {
    enum ds_hop_class cls = (enum ds_hop_class)ring->hop_class[i];
    if (cls == DS_HOP_NET) net_hops++;
    if (cls == DS_HOP_PCI) m->hw_intra = DS_HOP_PCI;
    double b = ds_nccl_link_bw(&m->nvlink, cls, ring->hop_bw[i]) / DS_UNITS_GBPS;
    if (b < bw_gbps) bw_gbps = b;
  }
  m->nnodes = net_hops > 0 ? net_hops : 1;
  int nidx = m->nnodes <= 1 ? 0 : m->nnodes == 2 ? 1 : 2;
  /* On one node the intra-node class is that of the rings that run: the
   * channel rings, or the one reordered ring (rank order may cross PCIe
   * where they do not: dgx1-v100's 3 -> 4). */
  const struct ds_ring *runs = ds_ring_nccl(ring);
  if (m->nnodes == 1 && runs->n_rails > 0 && (ring->chan || ring->n_rails == 1)) {
    m->hw_intra = DS_HOP_NVLINK;
    for (int32_t k = 0; k < runs->n_rails; k++)
      for (int32_t i = 0; i < runs->rails[k].n; i++)
        if (runs->rails[k].hop_class[i] == DS_HOP_PCI) m->hw_intra = DS_HOP_PCI;
  }
  /* The rings that run (coll.h rails; the ring itself where it has none):
   * they share the links, each channel of a ring getting its share of
   * every link its ring crosses (ncclTopoSearch charges a channel's speed
   * on each link of its path, search.cc followPath). On one ring this is
   * its bottleneck hop unless hops share a link: without peer-to-peer
   * every GPU's hop climbs its switch's uplink to the CPU. */
  {
    double share = runs->n_rails > 0
                       ? rings_share_gbps(&m->nvlink, topo, runs->rails, runs->n_rails, NULL)
                       : rings_share_gbps(&m->nvlink, topo, runs, 1, NULL);
    if (share < 0) return ds_err_set(err, DS_ENOMEM, "NCCL's model: out of memory");
    bw_gbps = share;
  }

  /* The ring search, in spirit: NCCL tries per-channel bandwidths from a
   * fixed list, highest first, and packs as many rings as the GPU's links
   * carry at that speed (at most 32). Here the GPU's bandwidth is the
   * rings' share of their most loaded link (rings_share_gbps: all channels
   * share the rings' routes), the first listed speed not above it is
   * taken, and nChannels =
   * floor(bw / speed). Where the channel search ran (one node where some
   * pair of GPUs has a direct link, sim/coll/ring_channels.h), its rings
   * are the channels and its speed theirs. Then channels are duplicated as
   * ncclTopoDupChannels does: when the speed is at least 25 GB/s (above
   * compute capability 8.0, sm_86 and sm_89 too, unless below 50 GB/s with
   * more than 4 channels), twice the channels at half the speed. */
  size_t n_speeds;
  int32_t cc = dup_cc(topo, m->arch);
  const double *speeds = ds_nccl_search_speeds(m->arch, m->nnodes > 1, &n_speeds);
  double speed;
  int32_t nch, nics_max = ring->n_rails;
  if (ring->chan) {
    speed = ring->chan_speed_bytes_per_s / DS_UNITS_GBPS;
    nch = ring->chan->n_rails;
    dup_channels(cc, &nch, &speed);
  } else if (m->nnodes > 1 && ring->n_rails > 1) {
    /* Across nodes each node searches alone, over its own GPUs and NICs
     * (search.cc ncclTopoCompute on the node's system, ncclTopoDupChannels
     * at its end), and init.cc:1439-1442 (v2.30.7) keeps the least
     * nChannels and the least bwIntra/bwInter over the ranks. Node j's
     * search is the one above on its own links under K_j rails, one per
     * NIC of its own (ds_ring_search_rails; the rails that run where K_j
     * is their count, as on even nodes), the fabric's links under the
     * rails that run (NCCL's search does not see them; the rails cross
     * them), and floor(share_j / speed_j) channels per NIC. */
    struct ds_node_nics nn;
    DS_CHECK(ds_ring_node_nics(topo, ring->gpus, ring->n, &nn, err));
    /* the shares of each node's links and (slot 0) the fabric's */
    size_t slots = (size_t)topo->n_nodes + 1;
    double *runs_share = malloc(slots * sizeof *runs_share);
    double *own_share = malloc(slots * sizeof *own_share);
    uint8_t *done = calloc((size_t)nn.m, 1);
    ds_status st = DS_OK;
    if (!runs_share || !own_share || !done ||
        rings_share_gbps(&m->nvlink, topo, ring->rails, ring->n_rails, runs_share) < 0)
      st = ds_err_set(err, DS_ENOMEM, "NCCL's model: out of memory");
    nch = DS_NCCL_SEARCH_MAX_CHANNELS;
    speed = INFINITY;
    /* one layout per distinct NIC count (the rails that run for theirs) */
    for (int32_t j = 0; j < nn.m && st == DS_OK; j++) {
      if (done[j]) continue;
      int32_t kj = nn.nics[j];
      const double *share = runs_share;
      struct ds_ring own = {0};
      if (kj != ring->n_rails) {
        st = ds_ring_search_rails(topo, ring, kj, &own, err);
        if (st == DS_OK && rings_share_gbps(&m->nvlink, topo, own.rails, own.n_rails, own_share) < 0)
          st = ds_err_set(err, DS_ENOMEM, "NCCL's model: out of memory");
        ds_ring_release(&own);
        share = own_share;
      }
      if (kj > nics_max) nics_max = kj;
      for (int32_t i = j; i < nn.m && st == DS_OK; i++) {
        if (done[i] || nn.nics[i] != kj) continue;
        done[i] = 1;
        int32_t ni;
        double vi;
        search_channels(cc, speeds, n_speeds,
                        fmin(share[nn.node_id[i] + 1], runs_share[0]), kj, &ni, &vi);
        if (ni < nch) nch = ni;
        if (vi < speed) speed = vi;
      }
    }
    free(runs_share);
    free(own_share);
    free(done);
    ds_node_nics_release(&nn);
    DS_CHECK(st);
  } else {
    search_channels(cc, speeds, n_speeds, bw_gbps, 1, &nch, &speed);
  }
  m->channels = nch;
  m->same_channels = ring->chan == NULL || ring->chan_same;
  m->chan_bw_bytes_per_s = speed * DS_UNITS_GBPS;
  m->ll_max_bw_bytes_per_s =
      ds_nccl_ll_max_bw_gbps(m->arch, topo->cpu_vendor, m->nnodes) * DS_UNITS_GBPS;
  m->ll128_per_ch_max_bytes_per_s =
      ds__nccl_ring_ll128_per_ch_max_bw_gbps[m->arch][nidx] * DS_UNITS_GBPS;
  /* tuning.cc ncclTopoTuneModel, NCCL_PROTO unset (protoEnable 2): LL128
   * is on only where the graph's intra-node path type is PATH_NVB or
   * better (:531: every intra-node hop NVLink, direct or through one GPU),
   * so a ring crossing PCIe inside a node has none -- unless NCCL would
   * not cross PCIe there: on one node where every member pair without an
   * NVLink is bridged through a member GPU (ring->chan_nvb, a DGX-1 subset
   * such as GPUs 0-4), every pair's path is NVB or better and LL128 is on,
   * although ddpsim's rings, which never cross a GPU, take PCIe (their
   * bandwidth and hop latency stay PCIe's: NCCL's PCI latency row is what
   * an NVB graph gets too, tuning.cc:285). Its other conditions hold here:
   * GPU to NIC at most PATH_PXB (PATH_PXN from sm90) -- the ib templates
   * give each GPU its own PCIe link to its NIC --, one compute capability,
   * sm70 or later. */
  m->ll128_off_by_default = m->hw_intra == DS_HOP_PCI && !(m->nnodes == 1 && ring->chan_nvb);
  ds_nccl_model_proto_env(m, 0, 0);

  /* NCCL v2.30.7-1 src/graph/tuning.cc ncclTopoTuneModel: latencies and bus
   * bandwidths per protocol (the ring's latency :384-412, the protocol
   * refinements below, Ring LL's * .5 and LL128's * 0.92, :326-329). */
  int32_t nsteps = 2 * (m->nranks - 1);
  int32_t ninter = m->nnodes > 1 ? 2 * (m->nnodes - 1) : 0;
  double bus = m->channels * m->chan_bw_bytes_per_s;
  double net_over_us =
      topo->cpu_vendor == DS_CPU_VENDOR_AMD ? NET_OVERHEAD_AMD_US : NET_OVERHEAD_INTEL_US;
  for (int p = 0; p < DS_PROTO_COUNT; p++) {
    m->base_lat_ns[p] = ds__nccl_base_lat_us[RING][p] * US;
    for (int h = 0; h < DS_HOP_CLASS_COUNT; h++)
      m->hw_lat_ns[h][p] = ds__nccl_hw_lat_us[h][RING][p] * US;
    if (m->nnodes > 1) {
      /* tuning.cc across nodes: a ring step inside a node costs at least
       * the network overhead (tripled for Simple); with one GPU per node
       * the network steps cost the tree's network latency ("latencies are
       * fully exposed"). */
      double over = (p == DS_PROTO_SIMPLE ? 3 : 1) * net_over_us * US;
      m->hw_lat_ns[DS_HOP_NVLINK][p] = fmax(m->hw_lat_ns[DS_HOP_NVLINK][p], over);
      m->hw_lat_ns[DS_HOP_PCI][p] = fmax(m->hw_lat_ns[DS_HOP_PCI][p], over);
      if (m->nranks == m->nnodes)
        m->hw_lat_ns[DS_HOP_NET][p] = ds__nccl_hw_lat_us[DS_HOP_NET][TREE][p] * US;
    }
    double intra = m->hw_lat_ns[m->hw_intra][p];
    double inter = m->nnodes > 1 ? m->hw_lat_ns[DS_HOP_NET][p] : intra;
    m->lat_ns[p] = m->base_lat_ns[p] + (nsteps - ninter) * intra + ninter * inter;
  }
  m->busbw_bytes_per_s[DS_PROTO_LL] = fmin(m->ll_max_bw_bytes_per_s, bus * 0.5);
  m->busbw_bytes_per_s[DS_PROTO_LL128] =
      fmin(bus * 0.92, m->channels * m->ll128_per_ch_max_bytes_per_s);
  m->busbw_bytes_per_s[DS_PROTO_SIMPLE] = bus;

  /* The double binary tree with the ring's channels and speed; its caps
   * are tuning.cc's refinements (v2.30.7-1 :330-335: busBw * .92 capped at
   * nChannels perChMaxTreeBw, LL * 1.0 / 3.8 capped at llMaxBw, LL128 *
   * 7.0 / 9.0 on one node else 120.0 / 128.0). */
  double tree_bus = fmin(bus * 0.92, m->channels *
                         ds__nccl_tree_per_ch_max_bw_gbps[m->arch][nidx] * DS_UNITS_GBPS);
  m->tree_busbw_bytes_per_s[DS_PROTO_SIMPLE] = tree_bus;
  m->tree_busbw_bytes_per_s[DS_PROTO_LL] = fmin(tree_bus / 3.8, m->ll_max_bw_bytes_per_s);
  m->tree_busbw_bytes_per_s[DS_PROTO_LL128] =
      fmin(tree_bus * (m->nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
           m->channels * ds__nccl_tree_ll128_per_ch_max_bw_gbps[m->arch][nidx] * DS_UNITS_GBPS);
  /* tuning.cc: after those caps, every protocol's tree busBw *= 0.85 when
   * comm->maxTreePattern is NCCL_TOPO_PATTERN_TREE, the largest tree graph
   * pattern over the ranks (init.cc). search.cc forces that pattern on a
   * rank whose node holds one GPU of the communicator (ngpus == 1); the
   * one-GPU node is a member whose ring hops in and out are both network
   * hops. (On sm90 and later the search can also fall back from the
   * balanced tree to TREE when it finds no ideal graph; the tree's graph
   * is not searched here, so that case is not modelled.) */
  m->tree_pattern_tree = 0;
  for (int32_t i = 0; m->nnodes > 1 && i < ring->n; i++)
    if (ring->hop_class[i] == DS_HOP_NET && ring->hop_class[(i + 1) % ring->n] == DS_HOP_NET)
      m->tree_pattern_tree = 1;
  if (m->tree_pattern_tree)
    for (int p = 0; p < DS_PROTO_COUNT; p++) m->tree_busbw_bytes_per_s[p] *= 0.85;
  int32_t log2_nodes = 0;
  while ((1 << (log2_nodes + 1)) <= m->nnodes) log2_nodes++;
  for (int p = 0; p < DS_PROTO_COUNT; p++) {
    m->tree_base_lat_ns[p] = ds__nccl_base_lat_us[TREE][p] * US;
    for (int h = 0; h < DS_HOP_CLASS_COUNT; h++)
      m->tree_hw_lat_ns[h][p] = ds__nccl_hw_lat_us[h][TREE][p] * US;
    double intra = m->tree_hw_lat_ns[m->hw_intra][p];
    double inter = m->nnodes > 1 ? m->tree_hw_lat_ns[DS_HOP_NET][p] : intra;
    m->tree_lat_ns[p] = m->tree_base_lat_ns[p] +
                        2 * ((m->nranks / m->nnodes - 1) * intra + log2_nodes * inter);
  }

  /* nvls.cc: one node, an NVLS switch, an architecture with an efficiency. */
  double eff = ds__nccl_nvls_efficiency[m->arch];
  if (!topo->nvls)
    snprintf(m->nvls_why, sizeof m->nvls_why,
             "topology %s has no NVLS-capable NVSwitch (key intra_node.nvls)", topo->name);
  else if (!(eff > 0))
    snprintf(m->nvls_why, sizeof m->nvls_why, "NCCL has no NVLS on %s",
             ds_nccl_arch_name(m->arch));
  else if (m->nnodes > 1)
    nvls_tree_build(m, topo->gpu.name, topo->cpu_vendor, ring, eff, nidx, nics_max);
  else {
    /* The NVLS search: a channel per GPU (its head), its speed charged on
     * every GPU's switch link and twice on the head's. */
    double per_gpu = bw_gbps / (m->nranks + 1);
    double nvls_speed = 0;
    size_t ns;
    const double *sp = ds_nccl_search_speeds(m->arch, 0, &ns);
    for (size_t k = 0; k < ns; k++)
      if (sp[k] <= per_gpu * (1 + 1e-9)) {
        nvls_speed = sp[k];
        break;
      }
    if (nvls_speed <= 0 || m->nranks < 2) {
      snprintf(m->nvls_why, sizeof m->nvls_why,
               "NVLS search finds no channel (%.1f GB/s per GPU)", bw_gbps);
    } else {
      int32_t heads = m->nranks;
      m->nvls_ok = 1;
      m->nvls_channels = heads;
      m->nvls_chan_bw_bytes_per_s = nvls_speed * DS_UNITS_GBPS;
      m->nvls_busbw_bytes_per_s =
          heads * nvls_speed * DS_UNITS_GBPS * eff * (heads - 1) / heads * 2;
      m->nvls_lat_ns = ds__nccl_nvls_hw_lat_us[DS_HOP_NVLINK] * US;
      m->nvls_intra_lat_ns = m->nvls_lat_ns;
      /* A chunk's three synchronised NVLink hops (scatter to its head,
       * reduce and multicast through the switch, gather), each charged as
       * NCCL charges a ring's NVLink Simple step. */
      m->nvls_hops_lat_ns = ds__nccl_nvls_base_lat_us * US +
                            3 * ds__nccl_hw_lat_us[DS_HOP_NVLINK][RING][DS_PROTO_SIMPLE] * US;
    }
  }
  return DS_OK;
}
