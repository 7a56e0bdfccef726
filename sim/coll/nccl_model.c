/*
 * NCCL's all-reduce cost model (see nccl_model.h). Invariant: the model's
 * numbers are NCCL's formulas over the generated constants; everything this
 * file approximates (the topology search) is in ds_nccl_model_build's
 * comment, and the extra mechanisms (launch, slice syncs, pipeline fill) are
 * kept apart from NCCL's prediction.
 */
#include "sim/coll/nccl_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "sim/coll/ring_rails.h"

#define US 1e3
#define TREE 0 /* algorithm indices of the generated tables */
#define RING 1

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

/* search.cc: the per-channel bandwidths the ring search tries, in order. */
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

/* topo.h INTEL_P2P_OVERHEAD(bw) = bw * 6 / 5: search.cc followPath charges
 * the PCI links of a GPU's path through an Intel x86 CPU (PATH_PHB: it
 * passes the host bridge, not the link between sockets) 6/5 of the
 * channel's speed, "P2P inefficiency through Intel CPU RC". A GPU pair
 * without peer-to-peer gets such a path (paths.cc: addInterStep through
 * the CPU, typed PATH_PHB), as does peer-to-peer across root ports. */
#define INTEL_P2P_OVERHEAD 1.2

/* The weight NCCL's search charges on hop i's PCIe links: the Intel root
 * complex's overhead where the hop's route passes a CPU vertex (a host
 * bridge, or the host memory behind it) and no inter-socket (qpi) link,
 * on an Intel host (the topology's cpu_vendor; NCCL tells the vendor from
 * cpuid); else 1. */
static double hop_pci_weight(const struct ds_topo *topo, const struct ds_ring *r, int32_t i) {
  if (topo->cpu_vendor != DS_CPU_VENDOR_INTEL || r->hop_class[i] != DS_HOP_PCI) return 1;
  int via_cpu = 0;
  for (int32_t h = r->hop_first[i]; h < r->hop_first[i + 1]; h++) {
    const struct ds_link *l = &topo->links[r->hop_links[h]];
    if (l->kind && strcmp(l->kind, "qpi") == 0) return 1; /* PATH_SYS */
    if (topo->vertex_kind[l->dst] == DS_VERTEX_CPU) via_cpu = 1;
  }
  return via_cpu ? INTEL_P2P_OVERHEAD : 1;
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

/* ncclTopoDupChannels (search.cc): twice the channels at half the speed
 * when the speed is at least 25 GB/s, unless from compute capability 8.1
 * (Hopper and Blackwell here) below 50 GB/s with more than 4 channels. */
static void dup_channels(enum ds_nccl_arch arch, int32_t *nch, double *speed) {
  if (*nch > DS_NCCL_SEARCH_MAX_CHANNELS) *nch = DS_NCCL_SEARCH_MAX_CHANNELS;
  int sm90_up = arch == DS_NCCL_ARCH_HOPPER || arch == DS_NCCL_ARCH_BLACKWELL;
  if (*speed >= 25.0 && !(sm90_up && *speed < 50.0 && *nch > 4)) {
    int32_t dup = 2 * *nch > DS_NCCL_SEARCH_MAX_CHANNELS ? DS_NCCL_SEARCH_MAX_CHANNELS : 2 * *nch;
    *speed /= (dup + *nch - 1) / *nch;
    *nch = dup;
  }
}

/* One search (nccl_model.h): the first listed speed not above the share
 * `bw` a channel gets, floor(bw / speed) channels on each of k NICs (k 1
 * for a ring without rails), then dup_channels. */
static void search_channels(enum ds_nccl_arch arch, const double *speeds, size_t n_speeds,
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
  dup_channels(arch, nch, speed);
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
                            const struct ds_ring *ring, double eff, int nidx,
                            int32_t nics_max) {
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
  /* tuning.cc ncclTopoGetAlgoTime: on Blackwell with x86 hosts NVLSTree's
   * bandwidth takes the tree's size correction too. Told from the GPU's
   * name, not the topology's cpu_vendor (intel or amd, no Arm value): GB200
   * superchips have Grace (Arm) hosts, other Blackwell boards (DGX B200)
   * x86 ones. */
  m->nvls_tree_size_corrected = m->arch == DS_NCCL_ARCH_BLACKWELL &&
                                strncmp(gpu_name, "GB", 2) != 0;
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
   * ncclTopoDupChannels does: when the speed is at least 25 GB/s (from
   * compute capability 8.1, Hopper and Blackwell here, unless below 50
   * GB/s with more than 4 channels), twice the channels at half the
   * speed. */
  size_t n_speeds;
  const double *speeds = ds_nccl_search_speeds(m->arch, m->nnodes > 1, &n_speeds);
  double speed;
  int32_t nch, nics_max = ring->n_rails;
  if (ring->chan) {
    speed = ring->chan_speed_bytes_per_s / DS_UNITS_GBPS;
    nch = ring->chan->n_rails;
    dup_channels(m->arch, &nch, &speed);
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
        search_channels(m->arch, speeds, n_speeds,
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
    search_channels(m->arch, speeds, n_speeds, bw_gbps, 1, &nch, &speed);
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

  /* tuning.cc / ring.cc: latencies and bus bandwidths per protocol. */
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

  /* tree.cc: the double binary tree with the ring's channels and speed. */
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
    nvls_tree_build(m, topo->gpu.name, ring, eff, nidx, nics_max);
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

double ds_nccl_predict_ns(const struct ds_nccl_model *m, enum ds_proto p,
                          double bytes) {
  double algbw = m->busbw_bytes_per_s[p] * m->nranks / (2.0 * (m->nranks - 1));
  double lat = m->lat_ns[p];
  /* ring.cc: the ring's plateau on several nodes (Simple). */
  if (p == DS_PROTO_SIMPLE && m->nnodes > 1 &&
      floor(bytes / ((double)m->channels * m->nranks)) >= 64)
    lat *= m->arch == DS_NCCL_ARCH_VOLTA ? 1.9 : 1.4;
  return lat + bytes / algbw * 1e9;
}

/* tree.cc: the size correction of the tree's bandwidth. */
static double tree_correction(enum ds_proto p, double bytes) {
  double units = floor(bytes / 64);
  if (units < 1) return 1;
  int log_size = (int)floor(log2(units));
  return log_size < 23 ? ds__nccl_tree_correction[p][log_size] : 1;
}

/* tuning.cc: NVLSTree's size correction (Blackwell, x86): the same table
 * as the tree's, its last entry (log size 23) included. */
static double nvls_tree_correction(enum ds_proto p, double bytes) {
  double units = floor(bytes / 64);
  if (units < 1) return 1;
  int log_size = (int)floor(log2(units));
  return log_size < 24 ? ds__nccl_tree_correction[p][log_size] : 1;
}

void ds_nccl_model_proto_env(struct ds_nccl_model *m, int set, unsigned disabled) {
  m->proto_set = set != 0;
  m->proto_disabled =
      set ? disabled : m->ll128_off_by_default ? 1u << DS_PROTO_LL128 : 0u;
}

int ds_nccl_algo_available(const struct ds_nccl_model *m, enum ds_ar_algo a,
                           enum ds_proto p, const char **why) {
  const char *no = NULL;
  if ((int)p < 0 || p >= DS_PROTO_COUNT) no = "no NCCL protocol";
  else if (m->proto_disabled & (1u << p))
    no = !m->proto_set && p == DS_PROTO_LL128 && m->ll128_off_by_default
             ? "NCCL enables LL128 by default only over NVLink inside a node (--proto LL128 "
               "forces it, as NCCL_PROTO=LL128)"
             : "the protocol is not in --proto's set (NCCL_PROTO)";
  else if (a == DS_AR_NVLS && !m->nvls_ok) no = m->nvls_why;
  else if (a == DS_AR_NVLS && p != DS_PROTO_SIMPLE) no = "NCCL runs NVLS with Simple only";
  else if (a != DS_AR_RING && a != DS_AR_TREE && a != DS_AR_NVLS)
    no = "not an NCCL algorithm (NCCL never runs it)";
  if (why) *why = no;
  return no == NULL;
}

double ds_nccl_predict_algo_ns(const struct ds_nccl_model *m, enum ds_ar_algo a,
                               enum ds_proto p, double bytes) {
  if (!ds_nccl_algo_available(m, a, p, NULL)) return INFINITY;
  if (a == DS_AR_RING) return ds_nccl_predict_ns(m, p, bytes);
  if (a == DS_AR_TREE) {
    double algbw = m->tree_busbw_bytes_per_s[p] * 0.5 * tree_correction(p, bytes);
    return m->tree_lat_ns[p] + bytes / algbw * 1e9;
  }
  double algbw = m->nvls_busbw_bytes_per_s * m->nranks / (2.0 * (m->nranks - 1));
  if (m->nvls_tree_size_corrected) algbw *= nvls_tree_correction(p, bytes);
  return m->nvls_lat_ns + bytes / algbw * 1e9;
}

enum ds_ar_algo ds_nccl_choose_algo_with(const struct ds_nccl_model *m, double bytes,
                                         enum ds_proto p) {
  static const enum ds_ar_algo order[] = {DS_AR_TREE, DS_AR_RING, DS_AR_NVLS};
  enum ds_ar_algo best = DS_AR_RING;
  double best_ns = INFINITY;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    double t = ds_nccl_predict_algo_ns(m, order[i], p, bytes);
    if (t < best_ns) {
      best_ns = t;
      best = order[i];
    }
  }
  return best;
}

/* The protocol of least predicted time (NCCL's order on ties: LL, LL128,
 * Simple), or `none` when every protocol is unavailable (infinite time).
 * `algo` < 0 asks ds_nccl_predict_coll_ns for `kind`; else the all-reduce
 * algorithm's prediction. */
static enum ds_proto fastest_proto(const struct ds_nccl_model *m, int algo,
                                   enum ds_coll_kind kind, double bytes, enum ds_proto none) {
  enum ds_proto best = none;
  double best_ns = INFINITY;
  for (int p = 0; p < DS_PROTO_COUNT; p++) {
    double t = algo >= 0 ? ds_nccl_predict_algo_ns(m, (enum ds_ar_algo)algo, (enum ds_proto)p, bytes)
                         : ds_nccl_predict_coll_ns(m, kind, (enum ds_proto)p, bytes);
    if (t < best_ns) {
      best_ns = t;
      best = (enum ds_proto)p;
    }
  }
  return best;
}

enum ds_proto ds_nccl_choose_proto(const struct ds_nccl_model *m, enum ds_ar_algo a,
                                   double bytes) {
  return fastest_proto(m, (int)a, (enum ds_coll_kind)0, bytes, DS_PROTO_COUNT);
}

void ds_nccl_choose_algo(const struct ds_nccl_model *m, double bytes,
                         enum ds_ar_algo *a, enum ds_proto *p) {
  /* NCCL's algorithm order: Tree 0, Ring 1, ..., NVLS 4. */
  static const enum ds_ar_algo order[] = {DS_AR_TREE, DS_AR_RING, DS_AR_NVLS};
  double best_ns = INFINITY;
  *a = DS_AR_RING;
  *p = DS_PROTO_LL;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++)
    for (int q = 0; q < DS_PROTO_COUNT; q++) {
      double t = ds_nccl_predict_algo_ns(m, order[i], (enum ds_proto)q, bytes);
      if (t < best_ns) {
        best_ns = t;
        *a = order[i];
        *p = (enum ds_proto)q;
      }
    }
}

enum ds_proto ds_nccl_choose(const struct ds_nccl_model *m, double bytes) {
  return fastest_proto(m, DS_AR_RING, (enum ds_coll_kind)0, bytes, DS_PROTO_LL);
}

/* NCCL's per-step payload of protocol p (src/enqueue.cc calcCollChunking:
 * buffSize / NCCL_STEPS, LL carries half its lines' bytes, LL128 15 of 16
 * words of each line). */
static double step_payload_bytes(enum ds_proto p) {
  double step = ds__nccl_buff_bytes[p] / ds__nccl_steps;
  if (p == DS_PROTO_LL) return step / 2;
  if (p == DS_PROTO_LL128) return step * 15 / 16;
  return step;
}

int32_t ds_nccl_nvls_ctas(const struct ds_nccl_model *m) {
  int32_t ctas = (unsigned)m->arch < DS_NCCL_ARCH_COUNT ? ds__nccl_nvls_ctas[m->arch] : 0;
  if (ctas < 1) ctas = m->nvls_channels > 0 ? m->nvls_channels : 1;
  return ctas;
}

void ds_nccl_chunking(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                      double bytes, struct ds_nccl_chunking *out) {
  memset(out, 0, sizeof *out);
  if (!(bytes > 0) || (int)p < 0 || p >= DS_PROTO_COUNT) return;
  int32_t n = m->nranks;
  if (a == DS_AR_NVLS) {
    /* calcCollChunking: nvlsChunkSize, halved while the buffer is small
     * against concurrentOps = CTAs * heads chunks; all_reduce.h: a loop
     * covers concurrentOps chunks, each CTA's scatter, reduce and gather
     * warps take one slice of it (ProtoSimple<1, 1>). */
    int32_t ctas = ds_nccl_nvls_ctas(m);
    double ops = (double)ctas * n, c = ds__nccl_nvls_chunk_bytes;
    if (m->nvls_tree) {
      /* NVLSTree: concurrentOps = CTAs * heads; the chunk starts at
       * nvlsTreeMaxChunkSize (src/transport/nvls.cc: 64 KiB from 4 nodes,
       * else the NVLS chunk) and halves at 32, 16, 4 and 1 loops. */
      ops = (double)ctas * m->nvls_channels;
      if (m->nnodes >= 4) c = 65536;
      if (bytes < 32 * ops * c && c > 262144) c = 262144;
      if (bytes < 16 * ops * c && c > 131072) c = 131072;
      if (bytes < 4 * ops * c && c > 65536) c = 65536;
      if (bytes < 1 * ops * c && c > 32768) c = 32768;
    } else {
      if (bytes < 64 * ops * c && c > 65536) c = 65536;
      if (bytes < 8 * ops * c && c > 32768) c = 32768;
      if (bytes < 2 * ops * c && c > 16384) c = 16384;
    }
    double loop = ops * c;
    double algbw = m->nvls_busbw_bytes_per_s * n / (2.0 * (n - 1));
    out->ctas = ctas;
    out->chunk_bytes = c;
    out->loops = ceil(bytes / loop);
    out->syncs = out->loops;
    /* The first loop passes scatter, then reduce, then gather; the steady
     * rate overlaps them, so the pipeline is one loop's time longer. */
    out->fill_ns = algbw > 0 ? fmin(bytes, loop) / algbw * 1e9 : 0;
    return;
  }
  int32_t ctas = m->channels > 0 ? m->channels : 1;
  double per_cta = bytes / ctas;
  out->ctas = ctas;
  if (a == DS_AR_TREE) {
    /* One chunk (stepSize) per loop; up and down on separate warps. */
    out->chunk_bytes = step_payload_bytes(p);
    out->loops = ceil(per_cta / out->chunk_bytes);
    out->syncs = p == DS_PROTO_SIMPLE ? out->loops : 0;
    return;
  }
  /* The ring (all_reduce.h runRing): a CTA's share in loops of N chunks,
   * 2(N-1) steps each; Simple splits a chunk into CHUNKSTEPS/SLICESTEPS
   * slices (prims_simple.h genericOp: empty slices still synchronise). */
  out->chunk_bytes = step_payload_bytes(p) *
                     (p == DS_PROTO_SIMPLE ? ds__nccl_allreduce_chunk_steps : 1);
  out->loops = ceil(per_cta / (n * out->chunk_bytes));
  if (p == DS_PROTO_SIMPLE)
    out->syncs = out->loops * 2.0 * (n - 1) *
                 (ds__nccl_allreduce_chunk_steps / ds__nccl_allreduce_slice_steps);
}

double ds_nccl_extra_ns(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                        double bytes) {
  const struct ds_nccl_extra *e = &m->extra;
  double t = e->launch_ns;
  if (e->pipeline) {
    struct ds_nccl_chunking c;
    ds_nccl_chunking(m, a, p, bytes, &c);
    t += c.syncs * e->sync_ns + c.fill_ns;
  }
  return t;
}

/* The NVLS latency the simulation charges at the start: the NVLink part
 * (NVLSTree's network part is paid per network hop of its trees). */
static double nvls_sim_lat_ns(const struct ds_nccl_model *m) {
  return m->extra.pipeline ? m->nvls_hops_lat_ns : m->nvls_intra_lat_ns;
}

double ds_nccl_sim_algo_ns(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                           double bytes) {
  double t = ds_nccl_predict_algo_ns(m, a, p, bytes);
  if (a == DS_AR_NVLS) t += nvls_sim_lat_ns(m) - m->nvls_intra_lat_ns;
  return t + ds_nccl_extra_ns(m, a, p, bytes);
}

void ds_nccl_coll_proto(const struct ds_nccl_model *m, enum ds_proto p,
                        double bytes, struct ds_coll_proto *out) {
  double bw = m->chan_bw_bytes_per_s, cap = bw, wire = 1;
  if (p == DS_PROTO_LL) {
    wire = 2;
    cap = fmin(bw, 2 * m->ll_max_bw_bytes_per_s / m->channels);
  } else if (p == DS_PROTO_LL128) {
    wire = 128.0 / 120.0;
    cap = fmin(bw, m->ll128_per_ch_max_bytes_per_s * wire);
  }
  *out = (struct ds_coll_proto){.proto = p, .channels = m->channels,
                                .wire_factor = wire, .chan_cap_bytes_per_s = cap,
                                .start_lat_ns = m->base_lat_ns[p] +
                                                ds_nccl_extra_ns(m, DS_AR_RING, p, bytes)};
  for (int h = 0; h < DS_HOP_CLASS_COUNT; h++) out->hop_lat_ns[h] = m->hw_lat_ns[h][p];
}

void ds_nccl_algo_proto(const struct ds_nccl_model *m, enum ds_ar_algo a,
                        enum ds_proto p, double bytes, struct ds_coll_proto *out) {
  if (a == DS_AR_TREE) {
    double wire = p == DS_PROTO_LL ? 2 : p == DS_PROTO_LL128 ? 128.0 / 120.0 : 1;
    int32_t per_tree = (m->channels + 1) / 2;
    double algbw = m->tree_busbw_bytes_per_s[p] * 0.5 * tree_correction(p, bytes);
    *out = (struct ds_coll_proto){.proto = p, .channels = per_tree, .wire_factor = wire,
                                  .chan_cap_bytes_per_s = wire * algbw / (2.0 * per_tree),
                                  .start_lat_ns = m->tree_base_lat_ns[p] +
                                                  ds_nccl_extra_ns(m, DS_AR_TREE, p, bytes)};
    for (int h = 0; h < DS_HOP_CLASS_COUNT; h++) out->hop_lat_ns[h] = m->tree_hw_lat_ns[h][p];
    return;
  }
  if (a == DS_AR_NVLS) {
    double algbw = m->nvls_busbw_bytes_per_s * m->nranks / (2.0 * (m->nranks - 1));
    if (m->nvls_tree_size_corrected) algbw *= nvls_tree_correction(p, bytes);
    int32_t nch = m->nvls_channels > 0 ? m->nvls_channels : 1;
    *out = (struct ds_coll_proto){.proto = DS_PROTO_SIMPLE, .channels = nch,
                                  .wire_factor = 1,
                                  .chan_cap_bytes_per_s = algbw > 0 ? algbw / nch : INFINITY,
                                  .start_lat_ns = nvls_sim_lat_ns(m) +
                                                  ds_nccl_extra_ns(m, DS_AR_NVLS, p, bytes)};
    if (m->nvls_tree) out->hop_lat_ns[DS_HOP_NET] = m->nvls_net_hop_lat_ns;
    return;
  }
  ds_nccl_coll_proto(m, p, bytes, out);
}

/* ---- all-gather and reduce-scatter on the ring (tuning.cc, nsteps N-1) ---- */

double ds_nccl_predict_coll_ns(const struct ds_nccl_model *m, enum ds_coll_kind kind,
                               enum ds_proto p, double bytes) {
  if ((int)p >= 0 && p < DS_PROTO_COUNT && (m->proto_disabled & (1u << p))) return INFINITY;
  if (kind == DS_COLL_ALLREDUCE) return ds_nccl_predict_ns(m, p, bytes);
  if (ds_coll_kind_is_chain(kind) && (int)p >= 0 &&
      p < DS_PROTO_COUNT) {
    int hw = m->nnodes > 1 ? DS_HOP_NET : m->hw_intra;
    double hop = m->same_channels
                     ? ds__nccl_hw_lat_us[hw][RING][p]
                     : m->nranks * ds__nccl_hw_lat_us[hw][p == DS_PROTO_SIMPLE ? TREE : RING][p];
    double lat = m->base_lat_ns[p] + hop * US;
    return lat + bytes / m->busbw_bytes_per_s[p] * 1e9;
  }
  if ((kind != DS_COLL_ALLGATHER && kind != DS_COLL_REDUCESCATTER) || (int)p < 0 ||
      p >= DS_PROTO_COUNT)
    return INFINITY;
  int32_t nsteps = m->nranks - 1;
  int32_t ninter = m->nnodes > 1 ? m->nnodes - 1 : 0;
  double intra = m->hw_lat_ns[m->hw_intra][p];
  double inter = m->nnodes > 1 ? m->hw_lat_ns[DS_HOP_NET][p] : intra;
  double lat = m->base_lat_ns[p] + (nsteps - ninter) * intra + ninter * inter;
  double algbw = m->busbw_bytes_per_s[p] * m->nranks / (double)nsteps;
  return lat + bytes / algbw * 1e9;
}

enum ds_proto ds_nccl_choose_coll_proto(const struct ds_nccl_model *m, enum ds_coll_kind kind,
                                        double bytes) {
  return fastest_proto(m, -1, kind, bytes, DS_PROTO_LL);
}

/* src/graph/tuning.cc ncclTopoTuneModel: maxThreads (Ring: Simple 512, or
 * 256 where bwIntra * nChannels <= PCI_BW, 12 GB/s; LL 512; LL128 640;
 * NCCL_*_MAX_NTHREADS in src/include/device.h) and threadThresholds
 * (NCCL_LL_/LL128_/SIMPLE_THREAD_THRESHOLD in src/include/comm.h: 8, 8, 64
 * bytes per thread, Ring/LL's times nRanks). */
#define LL_THREADS 512
#define LL128_THREADS 640
#define PCI_BW_BYTES_PER_S 12e9
#define SIMPLE_THREADS 512
#define SIMPLE_THREADS_PCI 256

static double per_channel_threshold_bytes(const struct ds_nccl_model *m, enum ds_proto p) {
  if (p == DS_PROTO_LL) return LL_THREADS * 8.0 * m->nranks;
  if (p == DS_PROTO_LL128) return LL128_THREADS * 8.0;
  int nt = m->chan_bw_bytes_per_s * m->channels <= PCI_BW_BYTES_PER_S ? SIMPLE_THREADS_PCI
                                                                      : SIMPLE_THREADS;
  return nt * 64.0;
}

int32_t ds_nccl_ring_channels(const struct ds_nccl_model *m, enum ds_proto p, double bytes) {
  /* src/enqueue.cc topoGetAlgoInfo, "Ring/Tree channel tuning": one channel
   * less while nBytes < nc * nt * threadThreshold, down to one. */
  double per = per_channel_threshold_bytes(m, p);
  double nc = floor(bytes / per);
  if (nc < 1) nc = 1;
  return nc < m->channels ? (int32_t)nc : m->channels;
}

/* The channels a lone broadcast or reduce of `bytes` lands on (src/enqueue.cc
 * scheduleCollTasksToPlan): the plan cuts the buffer into cells of
 * MinTrafficPerChannel = 32 KiB of traffic (a broadcast's or reduce's traffic
 * is its bytes, ncclFuncTrafficPerByte 1; LL's counts four times, so its
 * cells hold 8 KiB); each channel takes the whole cells that reach
 * trafficPerChannel = divUp(max(32 KiB, traffic) / nc, 16) * 16 (nc =
 * ds_nccl_ring_channels, topoGetAlgoInfo's count) and the next channel the
 * rest: ceil(cells / cells per channel) channels, at most nChannels. A 512
 * KiB Simple broadcast on 12 channels: 43696 B of traffic per channel is 2
 * cells, so 8 channels of 64 KiB. The channels need not carry equal shares: the first and
 * middle channels take cells_per_channel whole cells and the last the rest
 * (less the last cell's padding), so 1 MiB Simple on 12 channels runs 11
 * channels, ten of 3 cells (98,304 B) and one of 2, not 11 of S/11 = 95,325
 * B. The slowest channel sets the finish, so the chain is paced by the
 * fullest channel's share (*fullest_bytes). */
#define MIN_TRAFFIC_PER_CHANNEL 32768.0
#define LL_TRAFFIC_PER_BYTE 4.0
static int32_t chain_split(const struct ds_nccl_model *m, enum ds_proto p, double bytes,
                           double *fullest_bytes) {
  int32_t nc = ds_nccl_ring_channels(m, p, bytes);
  double per_byte = p == DS_PROTO_LL ? LL_TRAFFIC_PER_BYTE : 1;
  double cell = ceil(ceil(MIN_TRAFFIC_PER_CHANNEL / per_byte) / 16) * 16;
  double cells = ceil(bytes / cell);
  double traffic = fmax(MIN_TRAFFIC_PER_CHANNEL, bytes * per_byte);
  double per_channel = ceil(floor(traffic / nc) / 16) * 16;
  double cells_per_channel = fmin(cells, ceil(per_channel / (cell * per_byte)));
  if (!(cells_per_channel >= 1)) {
    *fullest_bytes = bytes;
    return 1;
  }
  /* a lone task from channel 0: cellsLo = cellsPerChannel, the middle
   * channels cellsPerChannel each, cellsHi the rest (fewer), the last
   * cell's padding off the last channel. NCCL's overflow past nChannels
   * cannot arise here: cells_per_channel x nc x the cell's traffic >=
   * traffic, so cells_per_channel x nc >= cells. */
  *fullest_bytes = fmin(bytes, cells_per_channel * cell);
  double used = ceil(cells / cells_per_channel);
  return used < m->channels ? (int32_t)used : m->channels;
}

void ds_nccl_chain_proto(const struct ds_nccl_model *m, enum ds_proto p, double bytes,
                         struct ds_coll_proto *out) {
  ds_nccl_coll_proto(m, p, 0, out);
  out->channels = chain_split(m, p, bytes, &out->share_bytes);
  for (int h = 0; h < DS_HOP_CLASS_COUNT; h++)
    out->hop_lat_ns[h] = ds__nccl_hw_lat_us[h][RING][p] * US;
  out->start_lat_ns = m->base_lat_ns[p] + m->extra.launch_ns;
}

/* What a rank of the chain must hold before the next rank can start on it,
 * per channel (payload). Simple: one chunk, i.e. one step. broadcast.h and
 * reduce.h runRing hand prims one chunk per call (nelem = min(chunkCount,
 * what is left of the channel's share); chunkCount is calcCollChunking's
 * stepSize * BROADCAST_CHUNKSTEPS (1), which the ring gets unshrunk at any
 * size: only CollNet, NVLS, NVLSTree, Tree/LL128 and PAT halve it), and
 * prims_simple.h genericOp with SlicePerChunk = CHUNKSTEPS / SLICESTEPS = 1
 * copies that call as one slice (sliceSize at least nelem) and posts the
 * step flag the next rank waits on (postPeer) only after it: a share under
 * a step crosses each hop whole, store and forward. LL and LL128: the line
 * (8 B) and the warp's slice (1920 B) of ds_coll_forward_unit_bytes, as the
 * tree's: runRing's recvCopySend hands LLGenericOp / GenericOp a chunk, but
 * within it each thread (LL) or warp (LL128) forwards its own line or slice
 * as soon as its flags show, and the next rank's thread or warp of the same
 * index polls exactly those flags; nothing waits on the rest of the chunk
 * or on the other threads' trip. */
static double chain_piece_bytes(enum ds_proto p) {
  double unit = ds_coll_forward_unit_bytes(p);
  return unit > 0 ? unit : step_payload_bytes(p);
}

/* Simulation cost: a chain of N ranks cut into K pieces runs (N-1) K
 * flows. LL's 8 B lines would make a 4 MiB broadcast hundreds of thousands
 * of pieces, so LL and LL128 cut at most CHAIN_PIECES_PER_HOP (N-1) pieces
 * per channel, and at most DS_TREE_MAX_PIECES, as the tree caps its own
 * (8 per level, ds_coll_tree_pieces). Equal pieces of s/K cost a fill of
 * (N-1) s/K per chain where lines cost (N-1) lines: the bandwidth term is
 * (N+K-2)/K of s w / c against (s + (N-2) line) w / c, at most
 * (N-2)/(16(N-1)) < 1/16 more (8 ranks, K = 112: 6/112 = 5.4%). 16, not
 * the tree's 8: the chain's hops are N-1, not a tree's log2 N levels, and
 * 16 keeps an 8-rank LL chain up to 4 MiB (a share of 350 KiB on 12
 * channels) in more pieces than the 4 KiB trip it was cut into before. */
#define CHAIN_PIECES_PER_HOP 16

/* The pieces of a channel's share (chain_split's fullest) under p. */
static int32_t chain_pieces(const struct ds_nccl_model *m, enum ds_proto p, double share) {
  double c = ceil(share / chain_piece_bytes(p));
  if (ds_coll_forward_unit_bytes(p) > 0) {
    double cap = fmin(CHAIN_PIECES_PER_HOP * (double)(m->nranks - 1), DS_TREE_MAX_PIECES);
    if (c > cap) c = cap;
  }
  if (c > (1 << 24)) c = 1 << 24;
  return c >= 1 ? (int32_t)c : 1;
}

int32_t ds_nccl_chain_chunks(const struct ds_nccl_model *m, enum ds_proto p, double bytes) {
  double share;
  chain_split(m, p, bytes, &share);
  return chain_pieces(m, p, share);
}

int32_t ds_nccl_chain(const struct ds_nccl_model *m, enum ds_proto p, double bytes,
                      struct ds_coll_proto *out) {
  ds_nccl_chain_proto(m, p, bytes, out);
  int32_t c = chain_pieces(m, p, out->share_bytes); /* the share chain_split just gave */
  /* NCCL's pieces are whole but the last (runRing's nelem), unless the cap
   * on pieces made them equal and larger. */
  double piece = chain_piece_bytes(p);
  if (c > 1 && c * piece >= out->share_bytes) out->piece_bytes = piece;
  return c;
}

/* ---- point-to-point (src/enqueue.cc addP2pToPlan, src/graph/paths.cc) ---- */

/* p2p (src/graph/paths.cc, src/enqueue.cc, src/include/device.h):
 * NCCL_P2P_PER_CHANNEL_NET_BW, NCCL_P2P_LL_THRESHOLD,
 * NCCL_MAX_DEV_WORK_P2P_PER_BATCH. */
#define P2P_PER_CHANNEL_NET_GBPS 14.0
#define P2P_LL_THRESHOLD_BYTES 16384.0
#define P2P_PER_BATCH 8

static int32_t pow2_up(int32_t x) {
  int32_t p = 1;
  while (p < x && p < (1 << 30)) p <<= 1;
  return p;
}

/* ncclTopoGetNchannels for a peer reached by `route`: NVLink: 2 per NVLink
 * of the path (at least 2); PCIe (or host memory): 2; network: 2, or one
 * per NIC, or one per 14 GB/s of NIC (NCCL_P2P_PER_CHANNEL_NET_BW), the
 * most. The NVLink count is the path's bandwidth over the raw per-link rate
 * (paths.cc:935-936 at v2.30.7-1: NCCL's path bandwidth, count x
 * ncclTopoNVLinkBw, over ncclTopoNVLinkBw, the same ratio; a 3090 pair's
 * 56.25 GB/s is 4 links of 14.0625, 8 channels). */
static int32_t peer_channels(const struct ds_topo *t, const struct ds_nccl_nvlink *nv,
                             const int32_t *route, int32_t len) {
  double bw = INFINITY, nic_bw = 0;
  int pci = 0, net = 0;
  for (int32_t k = 0; k < len; k++) {
    const struct ds_link *l = &t->links[route[k]];
    bw = fmin(bw, l->bw_bytes_per_s);
    if (strcmp(l->kind, "ib") == 0) {
      net = 1;
      if (nic_bw == 0) nic_bw = l->bw_bytes_per_s;
    } else if (strcmp(l->kind, "nvlink") != 0) {
      pci = 1;
    }
  }
  if (net) {
    int32_t per_bw = (int32_t)ceil(nic_bw / (P2P_PER_CHANNEL_NET_GBPS * DS_UNITS_GBPS) - 1e-9);
    return per_bw > 2 ? per_bw : 2;
  }
  if (pci) return 2;
  int32_t links = (int32_t)floor(bw / (nv->raw_gbps * DS_UNITS_GBPS) + 1e-9);
  return 2 * (links > 1 ? links : 1);
}

ds_status ds_nccl_p2p_build(struct ds_topo *topo, const struct ds_ring *ring,
                            const struct ds_nccl_model *m, struct ds_nccl_p2p *out,
                            struct ds_err *err) {
  memset(out, 0, sizeof *out);
  /* paths.cc ncclTopoComputeP2pChannelsPerPeer: the least over the peers
   * (here: of member 0, whose routes are every member's on the shipped
   * templates), a power of two */
  int32_t route[64], len, per_peer = 1 << 30;
  for (int32_t i = 1; i < ring->n; i++) {
    DS_CHECK(ds_topo_route(topo, ring->gpus[0], ring->gpus[i], route, 64, &len, err));
    int32_t c = peer_channels(topo, &m->nvlink, route, len);
    if (c < per_peer) per_peer = c;
  }
  per_peer = pow2_up(per_peer);
  /* ncclTopoComputeP2pChannels: p2pnChannels = pow2Up(nChannels) */
  int32_t p2p_channels =
      pow2_up(m->channels < DS_NCCL_MAXCHANNELS ? m->channels : DS_NCCL_MAXCHANNELS);
  if (m->nnodes > 1) {
    int32_t batches = (ring->n + P2P_PER_BATCH - 1) / P2P_PER_BATCH;
    while (per_peer * batches > p2p_channels && per_peer > 1) per_peer /= 2;
  } else if (per_peer > p2p_channels) {
    per_peer = p2p_channels;
  }
  out->p2p_channels = p2p_channels;
  out->per_peer_channels = per_peer;
  /* init.cc computeBuffSizes: 128 KiB across nodes and off NVLink, 512 KiB
   * when every GPU pair is on NVLink */
  out->chunk_bytes = m->nnodes > 1 || m->hw_intra != DS_HOP_NVLINK ? 128.0 * 1024
                                                                     : 512.0 * 1024;
  out->nranks = ring->n;
  out->nnodes = m->nnodes;
  return DS_OK;
}

int32_t ds_nccl_p2p_channels(const struct ds_nccl_p2p *q, double bytes) {
  /* scheduleP2pTasksToPlan: one channel per op when all peers would not
   * fit on p2pnChannels */
  int32_t nmin = q->per_peer_channels;
  while ((int64_t)nmin * q->nranks > q->p2p_channels && nmin > 1) nmin /= 2;
  if (!(bytes > 0)) return 1;
  /* addP2pToPlan: parts of at least chunk/8 (chunk/2 across nodes), split
   * further while a part exceeds 32 chunks (one chunk across nodes) */
  double min_part = q->nnodes > 1 ? q->chunk_bytes / 2 : q->chunk_bytes / 8;
  double max_part = q->nnodes > 1 ? q->chunk_bytes : q->chunk_bytes * 32;
  double by_size = ceil(bytes / min_part);
  int32_t nch = by_size < nmin ? (int32_t)by_size : nmin;
  if (nch < 1) nch = 1;
  double part = fmax(min_part, ceil(bytes / nch));
  while (part > max_part && nch <= q->per_peer_channels / 2) {
    nch *= 2;
    part = ceil(bytes / nch);
  }
  return nch;
}

enum ds_proto ds_nccl_p2p_choose(const struct ds_nccl_p2p *q, double bytes) {
  return bytes <= ds_nccl_p2p_channels(q, bytes) * P2P_LL_THRESHOLD_BYTES ? DS_PROTO_LL
                                                                           : DS_PROTO_SIMPLE;
}

void ds_nccl_p2p_proto(const struct ds_nccl_model *m, const struct ds_nccl_p2p *q,
                       enum ds_proto p, double bytes, struct ds_coll_proto *out) {
  ds_nccl_coll_proto(m, p, bytes, out);
  out->channels = ds_nccl_p2p_channels(q, bytes);
  /* no size ramp: it was measured on all-reduce rings */
  out->start_lat_ns = m->base_lat_ns[p] + m->extra.launch_ns;
}
