/*
 * Topology construction from YAML templates. Explicit device and link
 * lists are read by topo_list.c, the compute section by topo_compute.c;
 * routes are topo_route.c's.
 *
 * Template vertex ids: GPUs first (vertex g is GPU g, node g / gpus_per_node),
 * then per-node switches or CPUs, then NICs, then the PCIe switches in front
 * of NICs (gpus_per_nic), then the inter-node switches (leaves, then the
 * spine). Every cable is two directed links created together; intra-node
 * links are created before NIC links so that breadth-first search prefers
 * them when hop counts tie. A switch that must not carry GPU-to-GPU traffic
 * (pcie-switch with p2p: false, a NIC's PCIe switch) is two vertices, its
 * upstream and downstream halves, joined only through what lies above it.
 */
#include "sim/net/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "sim/net/file_kinds.h"
#include "sim/net/gpu_table.h"
#include "sim/net/topo_build.h"

/* The supported size (issue #15, defect 9). When a route was a breadth-
 * first search over the whole fabric (a single IB switch reaches every
 * NIC), loading and running grew with the square of the GPU count: 8,192
 * GPUs took about 2 s, 16,384 about 7 s, 65,536 took 40-90 s. Searches now
 * expand hubs lazily and stop early (ds__topo_search, issue #14); the cap
 * stays until larger runs are measured. */
#define MAX_GPUS DS_TOPO_MAX_GPUS
/* A node of one switch may hold many GPUs (a whole cluster behind one
 * non-blocking switch is how the SimGrid peer is described); a full mesh
 * has gpn * (gpn - 1) links and is capped lower. */
#define MAX_GPUS_PER_NODE 4096
#define MAX_MESH_GPUS 64

static const char *const intra_keys[] = {"template", "link_bw", "link_lat",
                                         "gpus_per_switch", "uplink_bw",
                                         "uplink_lat", "p2p", "nvls", "host_mem_bw",
                                         NULL};
static const char *const inter_keys[] = {"template", "nics_per_node", "nic_bw",
                                         "nic_lat", "gpu_nic_bw",
                                         "gpu_nic_lat", "gpus_per_nic",
                                         "rail_optimized", "fat_tree", NULL};
static const char *const fat_tree_keys[] = {"nodes_per_leaf", "oversubscription",
                                            "uplink_lat", NULL};

const char *ds_vertex_kind_name(enum ds_vertex_kind kind) {
  static const char *const names[] = {
#define DS__VK_NAME(e, s) s,
      DS_VERTEX_KIND_MAP(DS__VK_NAME)
#undef DS__VK_NAME
  };
  return (unsigned)kind < DS_VERTEX_KIND_COUNT ? names[kind] : "?";
}

/* GPUs whose NVSwitch generation supports NVLS multicast/reduction (NVLink
 * 4 onwards): H100, H200 and the Blackwell parts, by the table's name. */
static int hopper_or_later(const char *gpu) {
  const char *const prefixes[] = {"H100", "H200", "H20", "B100", "B200", "GB200"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (strncmp(gpu, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

/* Link parameters read from the file, before vertices exist. */
struct intra_spec {
  char template_name[16];
  double link_bw, link_lat;
  int64_t gpus_per_switch;
  double uplink_bw, uplink_lat;
  int p2p; /* pcie-switch: peers copy through the switch (1) or host memory */
  double host_mem_bw; /* pcie-switch without p2p: host memory's bandwidth, 0: none */
  int nvls; /* nvswitch: the switch reduces in place (1), not (0), unset (-1) */
};

struct inter_spec {
  char template_name[16];
  int64_t nics_per_node;
  double nic_bw, nic_lat, gpu_nic_bw, gpu_nic_lat;
  int64_t gpus_per_nic;   /* 0: GPU-NIC links, no PCIe switch in front */
  int rail_optimized;     /* NIC k of every node on the leaves of rail k */
  int64_t nodes_per_leaf; /* nodes under one leaf (one rail's leaf if rails) */
  double oversubscription; /* leaf downlink / uplink capacity */
  double uplink_lat;       /* leaf <-> spine */
};

/* Arrays grow by doubling; the capacity follows from the count (16, then
 * the next power of two), so none is stored. */
static int needs_growth(int32_t n) { return n == 0 || (n >= 16 && (n & (n - 1)) == 0); }
static size_t grown(int32_t n) { return n == 0 ? 16 : 2 * (size_t)n; }

ds_status ds__topo_add_vertex(struct ds_topo *t, enum ds_vertex_kind kind,
                              int32_t node, int32_t *out) {
  int32_t n = t->n_vertices;
  if (needs_growth(n)) {
    enum ds_vertex_kind *k = realloc(t->vertex_kind, grown(n) * sizeof *k);
    if (!k) return DS_ENOMEM;
    t->vertex_kind = k;
    int32_t *nd = realloc(t->vertex_node, grown(n) * sizeof *nd);
    if (!nd) return DS_ENOMEM;
    t->vertex_node = nd;
  }
  t->vertex_kind[n] = kind;
  t->vertex_node[n] = node;
  *out = t->n_vertices++;
  return DS_OK;
}

ds_status ds__topo_add_link(struct ds_topo *t, int32_t a, int32_t b, double bw,
                            double lat, const char *kind) {
  int32_t n = t->n_links;
  if (needs_growth(n)) {
    struct ds_link *l = realloc(t->links, grown(n) * sizeof *l);
    if (!l) return DS_ENOMEM;
    t->links = l;
  }
  t->links[n] = (struct ds_link){a, b, bw, lat, kind};
  t->n_links++;
  return DS_OK;
}

static ds_status add_cable(struct ds_topo *t, int32_t a, int32_t b, double bw,
                           double lat, const char *kind) {
  DS_CHECK(ds__topo_add_link(t, a, b, bw, lat, kind));
  return ds__topo_add_link(t, b, a, bw, lat, kind);
}

/* The GPUs of node n and their intra-node network. */
static ds_status build_node(struct ds_topo *t, int32_t n,
                            const struct intra_spec *intra) {
  int32_t gpn = t->gpus_per_node, first_gpu = n * gpn;
  if (strcmp(intra->template_name, "nvlink-mesh") == 0) {
    for (int32_t a = 0; a < gpn; a++)
      for (int32_t b = a + 1; b < gpn; b++)
        DS_CHECK(add_cable(t, first_gpu + a, first_gpu + b, intra->link_bw,
                           intra->link_lat, "nvlink"));
  } else if (strcmp(intra->template_name, "nvswitch") == 0) {
    int32_t sw;
    DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_SWITCH, n, &sw));
    for (int32_t a = 0; a < gpn; a++)
      DS_CHECK(add_cable(t, first_gpu + a, sw, intra->link_bw, intra->link_lat,
                         "nvlink"));
  } else {
    /* pcie-switch. Without p2p a peer copy goes to host memory and back
     * (the CUDA driver stages it there): the switch's halves meet only at
     * the CPU, so even two GPUs of one switch route through the root. With
     * host_mem_bw the downward links leave from a second CPU vertex, the
     * host memory, reached from the root by one link of host_mem_bw / 2:
     * every staged byte is written to DRAM and read back, so the copies of
     * all GPUs of the node share half the memory's bandwidth. */
    int32_t cpu, up = -1, down = -1, mem;
    DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_CPU, n, &cpu));
    mem = cpu;
    if (!intra->p2p && intra->host_mem_bw > 0) {
      DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_CPU, n, &mem));
      DS_CHECK(ds__topo_add_link(t, cpu, mem, intra->host_mem_bw / 2, 0, "mem"));
    }
    /* a new switch every gpus_per_switch GPUs: when that does not divide
     * gpus_per_node the last switch holds the rest (docs/topologies.md) */
    for (int32_t a = 0; a < gpn; a++) {
      if (a % intra->gpus_per_switch == 0) {
        DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_SWITCH, n, &up));
        down = up;
        if (intra->p2p) {
          DS_CHECK(add_cable(t, up, cpu, intra->uplink_bw, intra->uplink_lat, "pcie"));
        } else {
          DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_SWITCH, n, &down));
          DS_CHECK(ds__topo_add_link(t, up, cpu, intra->uplink_bw, intra->uplink_lat,
                                     "pcie"));
          DS_CHECK(ds__topo_add_link(t, mem, down, intra->uplink_bw,
                                     intra->uplink_lat, "pcie"));
        }
      }
      if (intra->p2p) {
        DS_CHECK(add_cable(t, first_gpu + a, up, intra->link_bw, intra->link_lat,
                           "pcie"));
      } else {
        DS_CHECK(ds__topo_add_link(t, first_gpu + a, up, intra->link_bw,
                                   intra->link_lat, "pcie"));
        DS_CHECK(ds__topo_add_link(t, down, first_gpu + a, intra->link_bw,
                                   intra->link_lat, "pcie"));
      }
    }
  }
  return DS_OK;
}

/* NICs, the PCIe switches in front of them, and the fabric: one switch, or
 * leaves (per group of nodes_per_leaf nodes, and per rail when
 * rail-optimized) under one spine. The spine stands for every spine switch
 * together: routes are single paths, so ECMP over several spines is taken
 * as perfectly balanced and a leaf's uplinks as one link of their total
 * capacity, its downlink capacity / oversubscription. */
static ds_status build_fabric(struct ds_topo *t, const struct inter_spec *s) {
  int32_t nodes = t->n_nodes, gpn = t->gpus_per_node;
  int32_t nics = (int32_t)s->nics_per_node, v;
  int32_t first_nic = t->n_vertices;
  for (int32_t n = 0; n < nodes; n++)
    for (int32_t k = 0; k < nics; k++)
      DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_NIC, n, &v));
  int32_t first_psw = t->n_vertices; /* [node][nic]: upstream, downstream half */
  if (s->gpus_per_nic)
    for (int32_t n = 0; n < nodes; n++)
      for (int32_t k = 0; k < 2 * nics; k++)
        DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_SWITCH, n, &v));
  int32_t rails = s->rail_optimized ? nics : 1;
  int32_t per_leaf = s->nodes_per_leaf ? (int32_t)s->nodes_per_leaf : nodes;
  int32_t groups = (nodes + per_leaf - 1) / per_leaf;
  int32_t n_leaves = groups * rails, first_leaf = t->n_vertices, spine = -1;
  for (int32_t i = 0; i < n_leaves; i++)
    DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_SWITCH, -1, &v));
  if (n_leaves > 1) DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_SWITCH, -1, &spine));
  for (int32_t n = 0; n < nodes; n++) {
    int32_t node_nic = first_nic + n * nics;
    if (s->gpus_per_nic) {
      /* The GPUs of NIC k share one PCIe link into it. */
      int32_t node_psw = first_psw + n * 2 * nics;
      for (int32_t a = 0; a < gpn; a++) {
        int32_t up = node_psw + 2 * (a / (int32_t)s->gpus_per_nic);
        DS_CHECK(ds__topo_add_link(t, n * gpn + a, up, s->gpu_nic_bw,
                                   s->gpu_nic_lat, "pcie"));
        DS_CHECK(ds__topo_add_link(t, up + 1, n * gpn + a, s->gpu_nic_bw,
                                   s->gpu_nic_lat, "pcie"));
      }
      for (int32_t k = 0; k < nics; k++) {
        DS_CHECK(ds__topo_add_link(t, node_psw + 2 * k, node_nic + k, s->gpu_nic_bw,
                                   s->gpu_nic_lat, "pcie"));
        DS_CHECK(ds__topo_add_link(t, node_nic + k, node_psw + 2 * k + 1,
                                   s->gpu_nic_bw, s->gpu_nic_lat, "pcie"));
      }
    } else {
      /* GPU i of a node uses NIC i * nics / gpn: the GPU-NIC affinity of
       * DGX-style boxes, where GPU pairs share a PCIe switch with a NIC. */
      for (int32_t a = 0; a < gpn; a++) {
        int32_t nic = node_nic + (int32_t)((int64_t)a * nics / gpn);
        DS_CHECK(add_cable(t, n * gpn + a, nic, s->gpu_nic_bw, s->gpu_nic_lat, "pcie"));
      }
    }
    for (int32_t k = 0; k < nics; k++) {
      int32_t leaf = first_leaf + (n / per_leaf) * rails + (rails > 1 ? k : 0);
      DS_CHECK(add_cable(t, node_nic + k, leaf, s->nic_bw, s->nic_lat, "ib"));
    }
  }
  for (int32_t i = 0; spine >= 0 && i < n_leaves; i++) {
    int32_t g = i / rails;
    int32_t under = per_leaf < nodes - g * per_leaf ? per_leaf : nodes - g * per_leaf;
    double down_bw = (double)under * (rails > 1 ? 1 : nics) * s->nic_bw;
    DS_CHECK(add_cable(t, first_leaf + i, spine, down_bw / s->oversubscription,
                       s->uplink_lat, "ib"));
  }
  return DS_OK;
}

static ds_status build(struct ds_topo *t, const struct intra_spec *intra,
                       const struct inter_spec *inter) {
  t->gpu_vertex = malloc((size_t)t->n_gpus * sizeof *t->gpu_vertex);
  if (!t->gpu_vertex) return DS_ENOMEM;
  int32_t v;
  for (int32_t g = 0; g < t->n_gpus; g++) {
    DS_CHECK(ds__topo_add_vertex(t, DS_VERTEX_GPU, g / t->gpus_per_node, &v));
    t->gpu_vertex[g] = v;
  }
  for (int32_t n = 0; n < t->n_nodes; n++) DS_CHECK(build_node(t, n, intra));
  if (t->n_nodes > 1) DS_CHECK(build_fabric(t, inter));
  return ds__topo_build_adjacency(t);
}

/* allowed is "a or b or c"; hint (may be "") follows the error, saying
 * what to write for a value a user is likely to try. */
static ds_status read_template(const struct ds_cnode *map, const char *allowed,
                               const char *hint, char out[16], struct ds_err *err) {
  struct ds_cnode node;
  const char *s;
  DS_CHECK(ds_cmap_require(map, "template", allowed, &node, err));
  DS_CHECK(ds_cnode_string(&node, &s, err));
  /* allowed is "a or b or c"; match whole words only. */
  char buf[128];
  snprintf(buf, sizeof buf, "%s", allowed);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    if (strcmp(tok, "or") != 0 && strcmp(tok, s) == 0) {
      snprintf(out, 16, "%s", s);
      return DS_OK;
    }
  }
  return ds_cnode_error(&node, err, "expected %s, got \"%s\"%s", allowed, s, hint);
}

static ds_status read_bw(const struct ds_cnode *map, const char *key,
                         double *out, struct ds_err *err) {
  struct ds_cnode node;
  DS_CHECK(ds_cmap_require(map, key, "a bandwidth like \"25GBps\"", &node, err));
  return ds_cnode_bw(&node, out, err);
}

static ds_status read_lat(const struct ds_cnode *map, const char *key,
                          double *out, struct ds_err *err) {
  struct ds_cnode node;
  DS_CHECK(ds_cmap_require(map, key, "a time like \"1.5us\"", &node, err));
  return ds_cnode_time_ns(&node, out, err);
}

static ds_status read_count(const struct ds_cnode *map, const char *key,
                            int64_t max, int64_t *out, struct ds_err *err) {
  struct ds_cnode node;
  DS_CHECK(ds_cmap_require(map, key, "a positive integer", &node, err));
  return ds_cnode_int_range(&node, 1, max, out, err);
}

static ds_status read_bool(const struct ds_cnode *map, const char *key, int *inout,
                           struct ds_err *err) {
  struct ds_cnode node;
  if (!ds_cmap_get(map, key, &node)) return DS_OK;
  return ds_cnode_bool(&node, inout, err);
}

const char *ds_topo_cpu_vendor_name(enum ds_cpu_vendor v) {
  return v == DS_CPU_VENDOR_AMD     ? "amd"
         : v == DS_CPU_VENDOR_MIXED ? "mixed"
         : v == DS_CPU_VENDOR_ARM   ? "arm"
                                    : "intel";
}

/* Key cpu_vendor: intel (the default), amd, mixed or arm. */
static ds_status read_cpu_vendor(const struct ds_cnode *root, enum ds_cpu_vendor *out,
                                 struct ds_err *err) {
  static const enum ds_cpu_vendor all[] = {DS_CPU_VENDOR_INTEL, DS_CPU_VENDOR_AMD,
                                           DS_CPU_VENDOR_MIXED, DS_CPU_VENDOR_ARM};
  struct ds_cnode node;
  const char *s;
  *out = DS_CPU_VENDOR_INTEL;
  if (!ds_cmap_get(root, "cpu_vendor", &node)) return DS_OK;
  DS_CHECK(ds_cnode_string(&node, &s, err));
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(s, ds_topo_cpu_vendor_name(all[i])) == 0) {
      *out = all[i];
      return DS_OK;
    }
  return ds_cnode_error(&node, err,
                        "expected intel, amd, mixed or arm (the hosts' CPU vendor), not '%s'", s);
}

static ds_status read_intra(const struct ds_cnode *root, int64_t gpn,
                            struct intra_spec *s, struct ds_err *err) {
  struct ds_cnode map;
  DS_CHECK(ds_cmap_require(root, "intra_node", "a mapping with template, link_bw, link_lat",
                           &map, err));
  DS_CHECK(ds_cmap_check_keys(&map, intra_keys, err));
  DS_CHECK(read_template(&map, "nvlink-mesh or nvswitch or pcie-switch", "",
                         s->template_name, err));
  DS_CHECK(read_bw(&map, "link_bw", &s->link_bw, err));
  DS_CHECK(read_lat(&map, "link_lat", &s->link_lat, err));
  if (strcmp(s->template_name, "nvlink-mesh") == 0 && gpn > MAX_MESH_GPUS)
    return ds_cnode_error(&map, err,
                          "template nvlink-mesh joins every pair of GPUs: at most "
                          "%d gpus_per_node, got %lld (use nvswitch)",
                          MAX_MESH_GPUS, (long long)gpn);
  s->p2p = 1;
  s->nvls = -1;
  struct ds_cnode nvls_node;
  if (ds_cmap_get(&map, "nvls", &nvls_node)) {
    if (strcmp(s->template_name, "nvswitch") != 0)
      return ds_cnode_error(&nvls_node, err, "only valid with template nvswitch");
    DS_CHECK(ds_cnode_bool(&nvls_node, &s->nvls, err));
  }
  if (strcmp(s->template_name, "pcie-switch") == 0) {
    DS_CHECK(read_count(&map, "gpus_per_switch", gpn, &s->gpus_per_switch, err));
    DS_CHECK(read_bw(&map, "uplink_bw", &s->uplink_bw, err));
    DS_CHECK(read_lat(&map, "uplink_lat", &s->uplink_lat, err));
    DS_CHECK(read_bool(&map, "p2p", &s->p2p, err));
    struct ds_cnode mem;
    if (ds_cmap_get(&map, "host_mem_bw", &mem)) {
      if (s->p2p)
        return ds_cnode_error(&mem, err, "only valid with p2p: false (peer copies stage "
                              "in host memory only without peer-to-peer)");
      DS_CHECK(ds_cnode_bw(&mem, &s->host_mem_bw, err));
    }
  } else {
    struct ds_cnode node;
    const char *pcie_only[] = {"gpus_per_switch", "uplink_bw", "uplink_lat", "p2p",
                               "host_mem_bw"};
    for (size_t i = 0; i < sizeof pcie_only / sizeof *pcie_only; i++)
      if (ds_cmap_get(&map, pcie_only[i], &node))
        return ds_cnode_error(&node, err, "only valid with template pcie-switch");
  }
  return DS_OK;
}

static ds_status read_fat_tree(const struct ds_cnode *inter, int64_t nodes,
                               struct inter_spec *s, struct ds_err *err) {
  struct ds_cnode map, node;
  /* Without fat_tree: one leaf for all nodes (per rail), non-blocking. */
  s->nodes_per_leaf = nodes;
  s->oversubscription = 1;
  s->uplink_lat = s->nic_lat;
  if (!ds_cmap_get(inter, "fat_tree", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, fat_tree_keys, err));
  DS_CHECK(read_count(&map, "nodes_per_leaf", nodes, &s->nodes_per_leaf, err));
  if (ds_cmap_get(&map, "oversubscription", &node)) {
    DS_CHECK(ds_cnode_number(&node, &s->oversubscription, err));
    if (!(s->oversubscription >= 1 && s->oversubscription <= 1000))
      return ds_cnode_error(&node, err, "expected a ratio of downlink to uplink "
                            "capacity from 1 to 1000 (2 means 2:1), got %g",
                            s->oversubscription);
  }
  DS_CHECK(read_lat(&map, "uplink_lat", &s->uplink_lat, err));
  return DS_OK;
}

static ds_status read_inter(const struct ds_cnode *root, int64_t nodes,
                            int64_t gpn, struct inter_spec *s,
                            struct ds_err *err) {
  struct ds_cnode map, node;
  if (nodes == 1) {
    if (ds_cmap_get(root, "inter_node", &map))
      return ds_cnode_error(&map, err, "only valid when nodes > 1");
    return DS_OK;
  }
  DS_CHECK(ds_cmap_require(root, "inter_node",
                           "a mapping (nodes > 1 need an inter-node network)",
                           &map, err));
  DS_CHECK(ds_cmap_check_keys(&map, inter_keys, err));
  /* NCCL's IB transport drives RoCE NICs too (the same verbs, NCCL's
   * src/transport/net_ib.cc), and its tuning has no RoCE row: one model. */
  DS_CHECK(read_template(&map, "ib",
                         ": ib stands for every NIC fabric NCCL's IB transport drives, "
                         "RoCE included (the same verbs and model); write template: ib "
                         "with the NICs' nic_bw (docs/topologies.md)",
                         s->template_name, err));
  DS_CHECK(read_count(&map, "nics_per_node", gpn, &s->nics_per_node, err));
  DS_CHECK(read_bw(&map, "nic_bw", &s->nic_bw, err));
  DS_CHECK(read_lat(&map, "nic_lat", &s->nic_lat, err));
  DS_CHECK(read_bw(&map, "gpu_nic_bw", &s->gpu_nic_bw, err));
  DS_CHECK(read_lat(&map, "gpu_nic_lat", &s->gpu_nic_lat, err));
  if (ds_cmap_get(&map, "gpus_per_nic", &node)) {
    DS_CHECK(read_count(&map, "gpus_per_nic", gpn, &s->gpus_per_nic, err));
    if (s->gpus_per_nic * s->nics_per_node != gpn)
      return ds_cnode_error(&node, err,
                            "gpus_per_nic x nics_per_node must be gpus_per_node: "
                            "%lld x %lld is not %lld", (long long)s->gpus_per_nic,
                            (long long)s->nics_per_node, (long long)gpn);
  }
  DS_CHECK(read_bool(&map, "rail_optimized", &s->rail_optimized, err));
  DS_CHECK(read_fat_tree(&map, nodes, s, err));
  /* "ib", "ib-rail", "ib-fattree", "ib-rail-fattree" for ddpsim topo. */
  snprintf(s->template_name, sizeof s->template_name, "ib%s%s",
           s->rail_optimized ? "-rail" : "",
           ds_cmap_get(&map, "fat_tree", &node) ? "-fattree" : "");
  return DS_OK;
}

static ds_status gpu_table_path(const char *topo_path, char *out, size_t cap) {
  const char *slash = strrchr(topo_path, '/');
  int dir_len = slash ? (int)(slash - topo_path) : 1;
  const char *dir = slash ? topo_path : ".";
  int n = snprintf(out, cap, "%.*s/gpus.yaml", dir_len, dir);
  return n > 0 && (size_t)n < cap ? DS_OK : DS_EINTERNAL;
}

static ds_status load(struct ds_topo *t, const char *path,
                      const char *gpus_path, struct ds_err *err) {
  struct ds_config *cfg = NULL;
  struct ds_cnode root, node, gpu_node;
  struct intra_spec intra = {0};
  struct inter_spec inter = {0};
  int64_t nodes, gpn;
  int explicit_list;
  const char *s;
  char table[4096];
  ds_status st;

  DS_CHECK_GOTO(ds_file_kind_open(path, DS_FILE_TOPOLOGY, &cfg, &root, err), st, out);
  DS_CHECK_GOTO(ds_cmap_require(&root, "name", "a name", &node, err), st, out);
  DS_CHECK_GOTO(ds_cnode_name(&node, "a topology name", &s, err), st, out);
  t->name = strdup(s);
  if (!t->name) { st = DS_ENOMEM; goto out; }
  DS_CHECK_GOTO(read_count(&root, "nodes", 1 << 16, &nodes, err), st, out);
  DS_CHECK_GOTO(read_count(&root, "gpus_per_node", MAX_GPUS_PER_NODE, &gpn, err), st, out);
  if (nodes * gpn > MAX_GPUS) {
    ds_cmap_get(&root, "nodes", &node);
    st = ds_cnode_error(&node, err,
                        "%lld nodes x %lld gpus_per_node = %lld GPUs; at most %d are "
                        "supported (routes are searched per GPU pair: the time grows "
                        "with the square of the GPU count)",
                        (long long)nodes, (long long)gpn, (long long)(nodes * gpn), MAX_GPUS);
    goto out;
  }
  t->n_nodes = (int32_t)nodes;
  t->gpus_per_node = (int32_t)gpn;
  t->n_gpus = (int32_t)(nodes * gpn);
  explicit_list = ds_cmap_get(&root, "devices", &node);
  if (explicit_list) {
    /* An explicit list describes every device: no templates beside it. */
    const char *templates[] = {"intra_node", "inter_node"};
    for (size_t i = 0; i < 2; i++)
      if (ds_cmap_get(&root, templates[i], &node)) {
        st = ds_cnode_error(&node, err, "not valid with an explicit 'devices' list "
                            "(describe every device and link there)");
        goto out;
      }
    snprintf(intra.template_name, sizeof intra.template_name, "explicit");
    snprintf(inter.template_name, sizeof inter.template_name, "explicit");
  } else {
    if (ds_cmap_get(&root, "links", &node)) {
      st = ds_cnode_error(&node, err, "only valid with an explicit 'devices' list");
      goto out;
    }
    DS_CHECK_GOTO(read_intra(&root, gpn, &intra, err), st, out);
    DS_CHECK_GOTO(read_inter(&root, nodes, gpn, &inter, err), st, out);
  }
  DS_CHECK_GOTO(ds__topo_read_compute(&root, &t->compute, err), st, out);
  DS_CHECK_GOTO(read_cpu_vendor(&root, &t->cpu_vendor, err), st, out);
  snprintf(t->intra_template, sizeof t->intra_template, "%s", intra.template_name);
  if (strcmp(intra.template_name, "pcie-switch") == 0)
    t->gpus_per_switch = (int32_t)intra.gpus_per_switch;
  snprintf(t->inter_template, sizeof t->inter_template, "%s",
           nodes > 1 ? inter.template_name : "none");

  DS_CHECK_GOTO(ds_cmap_require(&root, "gpu", "a GPU name from gpus.yaml",
                                &gpu_node, err), st, out);
  DS_CHECK_GOTO(ds_cnode_string(&gpu_node, &s, err), st, out);
  if (gpus_path == NULL) {
    DS_CHECK_GOTO(gpu_table_path(path, table, sizeof table), st, out);
    gpus_path = table;
  }
  st = ds_gpu_table_lookup(gpus_path, s, &t->gpu, err);
  if (st != DS_OK) {
    /* Locate the problem at the topology's 'gpu' key as well. */
    char inner[DS_ERR_MSG_MAX];
    snprintf(inner, sizeof inner, "%s", err ? err->msg : "");
    st = ds_cnode_error(&gpu_node, err, "%s", inner);
    goto out;
  }
  /* mem_efficiency: the topology's key, else what a copy measured on this
   * GPU (the table's efficiency.memory), else 0.7 (docs/architecture.md):
   * a guess, "typical, not yet calibrated" (c3e1cfc2; topo_compute.c) */
  if (t->compute.mem_efficiency == 0 && t->gpu.eff.memory > 0) {
    t->compute.mem_efficiency = t->gpu.eff.memory;
    /* a value the table marks a stand-in says so (compute.c class_proxy) */
    t->compute.mem_efficiency_source =
        t->gpu.eff_proxy[DS_GPU_EFF_MEMORY][0] ? DS_RATE_GPU_PROXY : DS_RATE_GPU_TABLE;
  } else if (t->compute.mem_efficiency == 0) {
    t->compute.mem_efficiency = 0.7;
  }
  st = explicit_list ? ds__topo_build_list(t, &root, err) : build(t, &intra, &inter);
  /* NVLS (in-switch reduction) needs NVSwitch 3 (Hopper) or later: by
   * default on for nvswitch boxes of those GPUs; explicit lists never. */
  if (!explicit_list && strcmp(intra.template_name, "nvswitch") == 0)
    t->nvls = intra.nvls >= 0 ? intra.nvls : hopper_or_later(t->gpu.name);
out:
  ds_config_free(cfg);
  return st;
}

ds_status ds_topo_load(const char *path, const char *gpus_path,
                       struct ds_topo **out, struct ds_err *err) {
  struct ds_topo *t = calloc(1, sizeof *t);
  if (!t) return DS_ENOMEM;
  t->path = strdup(path);
  ds_status st = t->path ? load(t, path, gpus_path, err) : DS_ENOMEM;
  if (st == DS_ENOMEM) ds_err_set(err, st, "%s: out of memory", path);
  if (st != DS_OK) {
    ds_topo_free(t);
    return st;
  }
  *out = t;
  return DS_OK;
}

void ds_topo_free(struct ds_topo *t) {
  if (!t) return;
  free(t->name);
  free(t->path);
  free(t->vertex_kind);
  free(t->vertex_node);
  free(t->gpu_vertex);
  for (int32_t v = 0; t->vertex_name && v < t->n_vertices; v++) free(t->vertex_name[v]);
  free(t->vertex_name);
  free(t->links);
  free(t->out_first);
  free(t->out_links);
  free(t->scratch_prev);
  free(t->scratch_seen);
  free(t->scratch_queue);
  free(t->scratch_hub);
  free(t->scratch_hub_out);
  free(t->scratch_inn);
  free(t->scratch_inn_link);
  free(t->in_first);
  free(t->in_links);
  free(t->hub_in_first);
  free(t->hub_in);
  free(t->route_cache);
  free(t);
}
