/*
 * Topology construction from YAML templates, and routing. Explicit device
 * and link lists are read by topo_list.c.
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
#define MAX_GPUS 16384
/* A node of one switch may hold many GPUs (a whole cluster behind one
 * non-blocking switch is how the SimGrid peer is described); a full mesh
 * has gpn * (gpn - 1) links and is capped lower. */
#define MAX_GPUS_PER_NODE 4096
#define MAX_MESH_GPUS 64
/* A vertex of more out links than this is a hub: a route search expands it
 * lazily (ds__topo_search). A one-switch fabric's switch reaches every NIC;
 * a node's NVSwitch has one link per GPU (8 in the shipped boxes). */
#define HUB_DEGREE 16

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
static const char *const compute_keys[] = {
    "flops_efficiency", "mem_efficiency", "kernel_overhead",
    "comm_interference", "fp32_math", "host_launch", "host_replicate",
    "host_backward", "host_grad_hook", "host_grad_copy", "host_collective",
    "host_buffer", "host_op", "host_dispatch", "host_cast", "host_node",
    "host_step_call", "host_step_param", "host_step_param_adam",
    "conv_efficiency", "matmul_efficiency", "attention_efficiency", NULL};

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

/* The in links of every vertex and those from hubs, in link order. */
static ds_status build_in_links(struct ds_topo *t) {
  int32_t nv = t->n_vertices, n_hub = 0;
  memset(t->in_first, 0, ((size_t)nv + 1) * sizeof *t->in_first);
  memset(t->hub_in_first, 0, ((size_t)nv + 1) * sizeof *t->hub_in_first);
  free(t->hub_in);
  for (int32_t i = 0; i < t->n_links; i++) {
    int32_t w = t->links[i].dst, h = t->links[i].src;
    t->in_first[w + 1]++;
    if (t->out_first[h + 1] - t->out_first[h] > t->hub_degree) {
      t->hub_in_first[w + 1]++;
      n_hub++;
    }
  }
  for (int32_t v = 0; v < nv; v++) {
    t->in_first[v + 1] += t->in_first[v];
    t->hub_in_first[v + 1] += t->hub_in_first[v];
  }
  t->hub_in = malloc(((size_t)n_hub + 1) * sizeof *t->hub_in);
  int32_t *fill = calloc((size_t)nv, sizeof *fill), *hub_fill = calloc((size_t)nv, sizeof *fill);
  if (!t->hub_in || !fill || !hub_fill) {
    free(fill);
    free(hub_fill);
    return DS_ENOMEM;
  }
  for (int32_t i = 0; i < t->n_links; i++) {
    int32_t w = t->links[i].dst, h = t->links[i].src;
    t->in_links[t->in_first[w] + fill[w]++] = i;
    if (t->out_first[h + 1] - t->out_first[h] > t->hub_degree)
      t->hub_in[t->hub_in_first[w] + hub_fill[w]++] = i;
  }
  free(fill);
  free(hub_fill);
  return DS_OK;
}

ds_status ds__topo_set_hub_degree(struct ds_topo *t, int32_t degree) {
  t->hub_degree = degree;
  return build_in_links(t);
}

ds_status ds__topo_build_adjacency(struct ds_topo *t) {
  t->out_first = calloc((size_t)t->n_vertices + 1, sizeof *t->out_first);
  t->out_links = malloc(((size_t)t->n_links + 1) * sizeof *t->out_links);
  t->scratch_prev = malloc((size_t)t->n_vertices * sizeof *t->scratch_prev);
  t->scratch_seen = calloc((size_t)t->n_vertices, sizeof *t->scratch_seen);
  t->scratch_queue = malloc((2 * (size_t)t->n_vertices + 1) * sizeof *t->scratch_queue);
  t->scratch_hub = calloc((size_t)t->n_vertices, sizeof *t->scratch_hub);
  t->scratch_hub_out = calloc((size_t)t->n_vertices, sizeof *t->scratch_hub_out);
  t->scratch_inn = calloc((size_t)t->n_vertices, sizeof *t->scratch_inn);
  t->scratch_inn_link = malloc((size_t)t->n_vertices * sizeof *t->scratch_inn_link);
  t->in_first = calloc((size_t)t->n_vertices + 1, sizeof *t->in_first);
  t->in_links = malloc(((size_t)t->n_links + 1) * sizeof *t->in_links);
  t->hub_in_first = calloc((size_t)t->n_vertices + 1, sizeof *t->hub_in_first);
  if (!t->out_first || !t->out_links || !t->scratch_prev || !t->scratch_seen ||
      !t->scratch_queue || !t->scratch_hub || !t->scratch_hub_out || !t->scratch_inn ||
      !t->scratch_inn_link || !t->in_first || !t->in_links || !t->hub_in_first)
    return DS_ENOMEM;
  if (t->hub_degree == 0) t->hub_degree = HUB_DEGREE;
  for (int32_t i = 0; i < t->n_links; i++) t->out_first[t->links[i].src + 1]++;
  for (int32_t v = 0; v < t->n_vertices; v++)
    t->out_first[v + 1] += t->out_first[v];
  int32_t *fill = calloc((size_t)t->n_vertices, sizeof *fill);
  if (!fill) return DS_ENOMEM;
  /* Filling in link order keeps each vertex's out links in creation order,
   * which is the tie-break order of route search. */
  for (int32_t i = 0; i < t->n_links; i++) {
    int32_t v = t->links[i].src;
    t->out_links[t->out_first[v] + fill[v]++] = i;
  }
  free(fill);
  return build_in_links(t);
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

static ds_status read_template(const struct ds_cnode *map, const char *allowed,
                               char out[16], struct ds_err *err) {
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
  return ds_cnode_error(&node, err, "expected %s, got \"%s\"", allowed, s);
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

static ds_status read_fraction(const struct ds_cnode *map, const char *key,
                               double lo, double hi, double *inout,
                               struct ds_err *err) {
  struct ds_cnode node;
  if (!ds_cmap_get(map, key, &node)) return DS_OK;
  DS_CHECK(ds_cnode_number(&node, inout, err));
  if (!(*inout > lo && *inout <= hi))
    return ds_cnode_error(&node, err, "expected a number in (%g, %g], got %g",
                          lo, hi, *inout);
  return DS_OK;
}

/* An optional time key of the compute section, e.g. "4us": *inout keeps its
 * default when the key is absent. */
static ds_status read_time(const struct ds_cnode *map, const char *key, double *inout,
                           struct ds_err *err) {
  struct ds_cnode node;
  if (!ds_cmap_get(map, key, &node)) return DS_OK;
  return ds_cnode_time_ns(&node, inout, err);
}

/* The measured hosts' range around the pooled host_dispatch and host_node
 * (read_compute below): per host (a folder of host_calibrate runs), the
 * mean of its dispatch and node figures over the pool's, as
 * `python3 bench/host_pool.py` over the twelve CSVs named there prints them:
 *   2026-11-26d call2  23.05 / 30.73 = 0.7500, 21.90 / 29.05 = 0.7539: 0.752
 *   2026-11-27         29.00 / 30.73 = 0.9436, 31.29 / 29.05 = 1.0770: 1.010
 *   2026-11-27c        39.70 / 30.73 = 1.2918, 34.29 / 29.05 = 1.1802: 1.236
 *   2026-11-27d        24.41 / 30.73 = 0.7942, 30.89 / 29.05 = 1.0631: 0.929
 *   2026-11-27e        31.52 / 30.73 = 1.0257, 30.44 / 29.05 = 1.0479: 1.037
 * The fastest and the slowest of the five lends (27d and 27e may be one
 * machine lent twice, an hour apart: a lend is what a folder records). One
 * factor per host for every host_* cost (not one per cost): the other costs
 * were not measured per host, and a host's Python and dispatcher are slower
 * or faster as a whole (its dispatch and node ratios differ by at most
 * 0.27). A host also moves
 * within that range between processes (docs/strategies.md, "The host
 * costs"), so the range is where a run on a lent H200 lands, not a bound. */
const double ds_topo_host_factor_fastest = 0.752;
const double ds_topo_host_factor_slowest = 1.236;

void ds_topo_scale_host(struct ds_compute_params *p, double factor) {
  double *const host[] = {&p->host_launch_ns, &p->host_replicate_ns, &p->host_backward_ns,
                          &p->host_op_ns, &p->host_dispatch_ns, &p->host_cast_ns,
                          &p->host_node_ns, &p->host_grad_hook_ns, &p->host_grad_copy_ns,
                          &p->host_collective_ns, &p->host_buffer_ns,
                          &p->host_step_call_ns, &p->host_step_param_ns,
                          &p->host_step_param_adam_ns};
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) *host[i] *= factor;
}

static ds_status read_compute(const struct ds_cnode *root,
                              struct ds_compute_params *c, struct ds_err *err) {
  struct ds_cnode map, node;
  /* Defaults: see docs/architecture.md ("Compute model"). */
  c->flops_efficiency = 0.5;
  c->mem_efficiency = 0; /* resolved after the GPU table: ds_topo_load */
  c->flops_efficiency_source = c->mem_efficiency_source = DS_RATE_TYPICAL;
  c->kernel_overhead_ns = 4000;
  c->comm_interference = 0.0;
  c->fp32_uses_tf32 = 1;
  c->host_launch_ns = 20000;   /* docs/strategies.md: why these values */
  c->host_replicate_ns = 5000;
  c->host_backward_ns = 46000;
  /* Per op, cast and node: torch.profiler traces of two host-bound runs on
   * H200 (bench/results/gpu-2026-11-26-h200/prof), each scaled by its own
   * run's unprofiled iteration over the profiled one (the profiler's
   * inflation), pooled; `python3 bench/host_costs.py
   * prof/resnet50-fp32-b32.json.gz=18.048 prof/bert-base-amp-b32-p.json.gz=58.325`
   * (gpu_ms of torch.csv's and torch2.csv's rows) prints every term:
   *   ResNet-50 fp32 b32: s = 18048 / 28777 = 0.6272; forward 14245 us over
   *     234 top-level ops, backward 12709 us over 340 nodes;
   *   BERT-base AMP b32: s = 58325 / 84467 = 0.6905; forward 37599 us, of it
   *     7271 us in 212 autocast casts, over 360 ops; backward 35174 us over
   *     1137 nodes;
   *   per op (0.6272 x 14244 + 0.6905 x 30328) / 594 = 50.3 us; per cast
   *   0.6905 x 7271 / 212 (+ ResNet's one of 1 us) = 23.6 us; per node
   *   (0.6272 x 12709 + 0.6905 x 35174) / 1477 = 21.8 us (host_node is now
   *   measured directly: below).
   * So the H200 ResNet-50 fp32 batch 32 row of validation/training.csv is
   * fit (its run's 18.048 ms sets s); docs/strategies.md, "The host costs". */
  c->host_op_ns = 50300;
  /* Per aten op dispatched in forward, nested ones included (model files
   * with host_dispatches), and per autograd node in backward: measured on
   * five lent H200s' hosts with the GPU held behind a spin kernel per phase,
   * so the host never waits for it (bench/host_calibrate.py, default mode),
   * medians of 10 iterations over the model files' counts, batch 32 fp32,
   * every phase whose spin outlasted it, pooled as total ms over total units:
   *   bench/results/gpu-2026-11-26d-h200/call2: forward ResNet-50 6.823 ms /
   *     282, ResNeXt-101 32x4d 12.445 / 554 (23.05 us on this host);
   *     backward ResNet-50 12.417 / 337, ResNeXt-101 15.200 / 660, BERT-base
   *     14.439 / 923 (21.90 us);
   *   bench/results/gpu-2026-11-27-h200: forward ResNet-50 7.508 / 282,
   *     ResNet-101 16.438 / 554, ResNeXt-101 15.542 / 554, SE-ResNeXt-101
   *     21.676 / 719 (29.00 us); backward ResNet-50 9.747 / 337, ResNet-101
   *     17.610 / 660, ResNeXt-101 24.490 / 660 (31.29 us);
   *   bench/results/gpu-2026-11-27c-h200 (unpinned): forward ResNet-101
   *     21.609 / 554 (host-resnet101.csv), SE-ResNeXt-101 28.931 / 719
   *     (host-se-pauses.csv, --pauses 8: the pauses' drains subtracted by
   *     host_calibrate itself) (39.70 us); backward ResNet-101 19.134 / 660,
   *     SE-ResNeXt-101 36.308 / 957 (--pauses 8) (34.29 us);
   *   bench/results/gpu-2026-11-27d-h200/hostcalib (unpinned, the run that
   *     also wrote host-resnet50.yaml with --calib-out): forward ResNet-50
   *     6.883 / 282 (24.41 us), backward 10.409 / 337 (30.89 us);
   *   bench/results/gpu-2026-11-27e-h200 (two fresh processes, an hour
   *     later): forward ResNet-50 9.149 and 8.630 / 282 (31.52 us), backward
   *     10.663 and 9.856 / 337 (30.44 us);
   *   pooled: forward 155.636 ms / 5064 = 30.73 us a dispatch, backward
   *     180.273 ms / 6205 = 29.05 us a node. `python3 bench/host_pool.py`
   *     over the twelve CSVs named above (R=bench/results:
   *     $R/gpu-2026-11-26d-h200/call2/host-{resnet50,resnext101_32x4d,
   *     bert-base}.csv $R/gpu-2026-11-27-h200/host-{resnet50,resnet101,
   *     resnext101_32x4d,se_resnext101_32x4d}.csv
   *     $R/gpu-2026-11-27c-h200/host-{resnet101,se-pauses}.csv
   *     $R/gpu-2026-11-27d-h200/hostcalib/host-resnet50.csv
   *     $R/gpu-2026-11-27e-h200/host-resnet50-r{1,2}.csv) prints
   *     every term, each host's, the pool and each host's factor (below).
   * Left out: phases whose spin ended first (BERT's forward waits at its mask
   * check; SE-ResNeXt's backward without pauses, ~1358 launches, fills the
   * driver's launch queue, 1020-1021 deep (27c launch_queue.csv), behind the
   * spin: 309.9 ms, the spin's), the 26d part h run (one spin per
   * iteration), 26b's host_phases.py (phases the GPU can gate) and 27c's run
   * pinned to two CPUs (host-resnet101-pinned.csv, 22.3 / 24.5 us: taskset
   * is not how PyTorch runs by default, and pinning did not make training
   * faster on that host: 27c notes-host2.md).
   * The hosts differ (23.05, 29.00, 39.70, 24.41, 31.52 us a dispatch;
   * 21.90, 31.29, 34.29, 30.89, 30.44 a node) and each switches speed within a run
   * (ResNet-101's forward 22.6-54.6 us a dispatch on 2026-11-27, 34.6-52.1
   * on 27c) and between fresh processes (the fit row's command: 24.55,
   * 22.03, 18.03 ms on 27d) while running, not descheduled (27c: CPU time =
   * wall time, no run-queue wait, no steal):
   * bench/results/gpu-2026-11-27-h200/notes-host.md and
   * bench/results/gpu-2026-11-27c-h200/notes-host2.md. So a host-bound
   * answer has a range: ds_topo_host_factor_fastest and _slowest below.
   * The traces' estimates (bench/host_kinds.py, docs/strategies.md "The
   * host costs") put the forward at 29.6 us a dispatch (ResNet-50 31.7,
   * BERT AMP 28.8, ResNeXt-101 46.2) and the node at 21.8 us. No validation
   * row sets either. A user's own host: `bench/host_calibrate.py --calib-out
   * FILE`, whose host section --calib applies over these (sim/train/calib.h). */
  c->host_dispatch_ns = 30730;
  c->host_cast_ns = 23600;
  c->host_node_ns = 29050;
  c->host_grad_hook_ns = 7700;  /* docs/strategies.md "The host costs": measured */
  c->host_grad_copy_ns = 5800;
  c->host_collective_ns = 21000;
  /* Per buffer that broadcast_buffers syncs before each forward, beyond the
   * per-bucket cat launch and broadcast call (host_grad_copy +
   * host_collective, sim/train/ddp.c emit_buffers): _sync_buffers' walk
   * (named_buffers over the modules, the version counters), the flatten's
   * view, BroadcastWork::finish's narrow and view, and the copy_ back's
   * launch (comm.cpp). Measured unprofiled on two lent H200 hosts,
   * `python3 bench/torch_ddp_host.py --layers 161 --width 512 --buffers 53`
   * (bench/results/gpu-2026-11-27g-h200/ddp_host_161x512_b53.csv and
   * gpu-2026-11-27h-h200/ddp_host_161x512_b53_view.csv: 159 buffers in two
   * dtype buckets, as ResNet-50's). Each run interleaves its configs rep by
   * rep, so each of the ten reps gives a paired difference: broadcast_buffers
   * adds (ddp-one-bcast - ddp-one) a median 3.526 ms, 22.18 us a buffer, and
   * DDP adds (ddp-one - plain) a median 4.089 ms, 25.40 us a gradient (27h's
   * README works both). Those hosts were slower than the one that set the
   * per-gradient defaults (host_grad_hook + host_grad_copy = 13.5 us), so
   * only the ratio transfers: 3526 * 13.5 / 25.40 = 1874 us for the toy's
   * buffers on the defaults' footing; less its two buckets' 2 * (5.8 + 21)
   * = 53.6 us, over 159 buffers: 11.45 us. (Each run alone, paired the same
   * way: 27g 10.4 us, 27h 16.4 us.) */
  c->host_buffer_ns = 11450;
  /* The foreach optimizer step's Python thread: optimizer.step()'s wrapper
   * (torch/optim/optimizer.py profile_hook_step: record_function, the
   * hooks), per group _init_group's Python loop over the parameters
   * (sgd.py: the grad and momentum_buffer lists; adam.py: exp_avg,
   * exp_avg_sq, step), _group_tensors_by_device_and_dtype over those lists,
   * the foreach calls (each checks and packs every tensor, then launches
   * multi_tensor_apply's kernels), and SGD's loop writing each
   * momentum_buffer back; Adam's non-capturable path also adds 1 to every
   * CPU step tensor and reads each back in Python four times for its bias
   * corrections (_get_value). Read in torch 2.15's sgd.py and adam.py; the
   * lends ran 2.11. Measured with the same twelve host_calibrate CSVs as
   * host_dispatch above (each phase behind its own spin; every step phase
   * ran unblocked, 10 of 10 iterations), each file's median step_ms over
   * the model's parameter tensors (model files' params: ResNet-50 161,
   * ResNet-101 and ResNeXt-101 32x4d 314, SE-ResNeXt-101 446, BERT-base
   * 201): `python3 bench/host_pool.py` over them prints every term:
   *   SGD with momentum, 11 files: ResNet-50 1.181, 1.269, 1.030, 1.371,
   *     1.012 ms; ResNet-101 2.449, 2.628; ResNeXt-101 1.802, 2.111;
   *     SE-ResNeXt-101 2.580, 2.589 (5.74-8.51 us a tensor). Total over
   *     total, 20.023 ms / 2953 = 6.78 us a tensor, leaves residuals
   *     -0.444..+0.499 ms (rms 0.297); the least-squares line over the
   *     files' medians, 0.370 ms a call + 5.403 us a tensor, rms 0.257
   *     (-0.264..+0.562). The line is taken: every lend with two tensor
   *     counts gives a positive intercept (26d 0.53 ms, 27 0.66), and so do
   *     the check runs below, which the line predicts better.
   *   Adam, BERT-base's one file (26d call2): 3.046 ms; less the call's
   *     0.370, over 201 tensors: 13.31 us a tensor (one lend, one model:
   *     no line of its own).
   * Check, not fit (bench/spin_bias.py stream mode, consecutive training
   * iterations, other processes and lends 27g and 27h): ResNet-50 1.418
   * and 1.373 ms, ResNet-101 2.545, ResNeXt-101 2.349, MobileNetV2 (158)
   * 1.195; the line predicts 1.240 (-13 %, -10 %), 2.067 (-19 %), 2.067
   * (-12 %), 1.224 (+2 %); per tensor alone -23, -21, -16, -9, -10 %.
   * Only one call per step: the data have one parameter group each (a
   * second group, --no-bn-weight-decay's, repeats part of the call's work
   * and is not charged). zero_grad's own loop over the parameters and
   * GradScaler.unscale_'s are not measured and not charged. */
  c->host_step_call_ns = 370000;
  c->host_step_param_ns = 5403;
  c->host_step_param_adam_ns = 13310;
  if (!ds_cmap_get(root, "compute", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, compute_keys, err));
  DS_CHECK(read_fraction(&map, "flops_efficiency", 0, 1, &c->flops_efficiency, err));
  DS_CHECK(read_fraction(&map, "mem_efficiency", 0, 1, &c->mem_efficiency, err));
  DS_CHECK(read_fraction(&map, "conv_efficiency", 0, 1, &c->conv_efficiency, err));
  DS_CHECK(read_fraction(&map, "matmul_efficiency", 0, 1, &c->matmul_efficiency, err));
  DS_CHECK(read_fraction(&map, "attention_efficiency", 0, 1, &c->attention_efficiency, err));
  const struct {
    const char *key;
    double *ns;
  } times[] = {
      {"kernel_overhead", &c->kernel_overhead_ns},
      {"host_launch", &c->host_launch_ns},
      {"host_replicate", &c->host_replicate_ns},
      {"host_backward", &c->host_backward_ns},
      {"host_op", &c->host_op_ns},
      {"host_dispatch", &c->host_dispatch_ns},
      {"host_cast", &c->host_cast_ns},
      {"host_node", &c->host_node_ns},
      {"host_grad_hook", &c->host_grad_hook_ns},
      {"host_grad_copy", &c->host_grad_copy_ns},
      {"host_collective", &c->host_collective_ns},
      {"host_buffer", &c->host_buffer_ns},
      {"host_step_call", &c->host_step_call_ns},
      {"host_step_param", &c->host_step_param_ns},
      {"host_step_param_adam", &c->host_step_param_adam_ns},
  };
  for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
    DS_CHECK(read_time(&map, times[i].key, times[i].ns, err));
  if (ds_cmap_get(&map, "comm_interference", &node)) {
    DS_CHECK(ds_cnode_number(&node, &c->comm_interference, err));
    if (c->comm_interference < 0 || c->comm_interference > 10)
      return ds_cnode_error(&node, err, "expected a slowdown fraction from 0 to 10, got %g",
                            c->comm_interference);
  }
  if (ds_cmap_get(&map, "fp32_math", &node)) {
    const char *s;
    DS_CHECK(ds_cnode_string(&node, &s, err));
    if (strcmp(s, "tf32") == 0) c->fp32_uses_tf32 = 1;
    else if (strcmp(s, "fp32") == 0) c->fp32_uses_tf32 = 0;
    else return ds_cnode_error(&node, err, "expected tf32 or fp32, got \"%s\"", s);
  }
  return DS_OK;
}

static ds_status read_bool(const struct ds_cnode *map, const char *key, int *inout,
                           struct ds_err *err) {
  struct ds_cnode node;
  if (!ds_cmap_get(map, key, &node)) return DS_OK;
  return ds_cnode_bool(&node, inout, err);
}

const char *ds_topo_cpu_vendor_name(enum ds_cpu_vendor v) {
  return v == DS_CPU_VENDOR_AMD ? "amd" : v == DS_CPU_VENDOR_MIXED ? "mixed" : "intel";
}

/* Key cpu_vendor: intel (the default), amd or mixed. */
static ds_status read_cpu_vendor(const struct ds_cnode *root, enum ds_cpu_vendor *out,
                                 struct ds_err *err) {
  static const enum ds_cpu_vendor all[] = {DS_CPU_VENDOR_INTEL, DS_CPU_VENDOR_AMD,
                                           DS_CPU_VENDOR_MIXED};
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
                        "expected intel, amd or mixed (the hosts' CPU vendor), not '%s'", s);
}

static ds_status read_intra(const struct ds_cnode *root, int64_t gpn,
                            struct intra_spec *s, struct ds_err *err) {
  struct ds_cnode map;
  DS_CHECK(ds_cmap_require(root, "intra_node", "a mapping with template, link_bw, link_lat",
                           &map, err));
  DS_CHECK(ds_cmap_check_keys(&map, intra_keys, err));
  DS_CHECK(read_template(&map, "nvlink-mesh or nvswitch or pcie-switch",
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
  DS_CHECK(read_template(&map, "ib", s->template_name, err));
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
  DS_CHECK_GOTO(read_compute(&root, &t->compute, err), st, out);
  DS_CHECK_GOTO(read_cpu_vendor(&root, &t->cpu_vendor, err), st, out);
  snprintf(t->intra_template, sizeof t->intra_template, "%s", intra.template_name);
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
   * GPU (the table's efficiency.memory), else 0.7 (docs/architecture.md) */
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

/*
 * Breadth-first search, as the plain one: a FIFO queue, each vertex's out
 * links in creation order, a vertex reached first through the link of the
 * earliest vertex. Two changes find the same prev links in less time:
 *   - A hub (more than hub_degree out links: a fabric switch reaching
 *     every NIC) is expanded lazily: its out links go into the queue as one
 *     entry (-1 - hub), and the vertices they reach are marked only when
 *     that entry comes out of the queue, in link order, each expanded right
 *     away (the plain search would take them out next, in that order). A
 *     vertex that a hub expanded earlier reaches is that hub's ("pending"):
 *     no other vertex takes it in the meantime.
 *   - With a target, the search stops as soon as the vertex that will reach
 *     the target is known: the first vertex marked that has a link into the
 *     target and may use it (not a GPU, not a NIC leading only out of the
 *     target's node) is the first such vertex out of the queue, so its link
 *     reaches the target. A hub expanded lazily checks the target's in
 *     links against its own links at once.
 * A route therefore costs the vertices near its two ends, not the whole
 * fabric (issue #14: 4096 GPUs on one switch took ~4096 steps per route).
 */

/* Whether hub h, expanded in this search, leads to w (the NIC rule). */
static int hub_leads(const struct ds_topo *t, int32_t h, int32_t w, uint32_t stamp) {
  return t->scratch_hub[h] == stamp &&
         !(t->scratch_hub_out[h] && t->vertex_node[w] == t->vertex_node[h]);
}

/* Whether w waits in the out links of a hub expanded in this search (other
 * than `except`). */
static int pending(const struct ds_topo *t, int32_t w, int32_t except, uint32_t stamp) {
  for (int32_t i = t->hub_in_first[w]; i < t->hub_in_first[w + 1]; i++) {
    int32_t h = t->links[t->hub_in[i]].src;
    if (h != except && hub_leads(t, h, w, stamp)) return 1;
  }
  return 0;
}

/* Whether v, marked with its prev link, leads only out of its node (a NIC
 * entered from inside it). */
static int nic_outbound(const struct ds_topo *t, int32_t v) {
  return t->vertex_kind[v] == DS_VERTEX_NIC && t->scratch_prev[v] >= 0 &&
         t->vertex_node[t->links[t->scratch_prev[v]].src] == t->vertex_node[v];
}

/* Marks w reached by link l; with a target, whether w's link into it is
 * the target's (the search may stop). */
static int mark(struct ds_topo *t, int32_t w, int32_t l, int32_t to, uint32_t stamp,
                int32_t *tail) {
  t->scratch_seen[w] = stamp;
  t->scratch_prev[w] = l;
  if (w == to) return 1;
  if (to >= 0 && t->scratch_inn[w] == stamp && t->vertex_kind[w] != DS_VERTEX_GPU &&
      !(nic_outbound(t, w) && t->vertex_node[to] == t->vertex_node[w])) {
    t->scratch_seen[to] = stamp;
    t->scratch_prev[to] = t->scratch_inn_link[w];
    return 1;
  }
  if (tail) t->scratch_queue[(*tail)++] = w;
  return 0;
}

/* Expands v (taken out of the queue, or out of a hub's entry): 1 once the
 * target is reached. */
static int expand(struct ds_topo *t, int32_t v, int32_t from, int32_t to, uint32_t stamp,
                  int32_t *tail) {
  /* GPUs do not forward traffic (a route only starts or ends at one). */
  if (v != from && t->vertex_kind[v] == DS_VERTEX_GPU) return 0;
  /* A NIC entered from inside its node (from a GPU, or the PCIe switch in
   * front of it) leads only into the fabric, never back into the node. */
  int out = nic_outbound(t, v);
  if (t->out_first[v + 1] - t->out_first[v] > t->hub_degree) {
    t->scratch_hub[v] = stamp;
    t->scratch_hub_out[v] = (uint8_t)out;
    if (to >= 0) {
      /* The target, or the first of its in-neighbours v reaches and that
       * may lead into it: v's entry would mark it before anything else
       * that could. */
      int32_t best = -1, best_in = -1;
      for (int32_t i = t->in_first[to]; i < t->in_first[to + 1]; i++) {
        int32_t lu = t->in_links[i], u = t->links[lu].src, lv = -1;
        if (u == v) {
          if (!hub_leads(t, v, to, stamp) || t->scratch_seen[to] == stamp) continue;
          t->scratch_seen[to] = stamp;
          t->scratch_prev[to] = lu;
          return 1;
        }
        if (t->scratch_seen[u] == stamp || t->vertex_kind[u] == DS_VERTEX_GPU ||
            !hub_leads(t, v, u, stamp) || pending(t, u, v, stamp))
          continue;
        for (int32_t k = t->hub_in_first[u]; k < t->hub_in_first[u + 1] && lv < 0; k++)
          if (t->links[t->hub_in[k]].src == v) lv = t->hub_in[k];
        if (lv < 0) continue;
        /* u entered from v: a NIC from inside its node cannot go back in */
        if (t->vertex_kind[u] == DS_VERTEX_NIC &&
            t->vertex_node[v] == t->vertex_node[u] && t->vertex_node[to] == t->vertex_node[u])
          continue;
        if (best < 0 || lv < best) best = lv, best_in = lu;
      }
      /* v's links into u come before its link into the target only if u's
       * link id is smaller; the target itself was handled above. */
      if (best >= 0) {
        int32_t u = t->links[best].dst;
        t->scratch_seen[u] = stamp;
        t->scratch_prev[u] = best;
        t->scratch_seen[to] = stamp;
        t->scratch_prev[to] = best_in;
        return 1;
      }
    }
    t->scratch_queue[(*tail)++] = -1 - v;
    return 0;
  }
  for (int32_t i = t->out_first[v]; i < t->out_first[v + 1]; i++) {
    int32_t l = t->out_links[i], w = t->links[l].dst;
    if (t->scratch_seen[w] == stamp) continue;
    if (out && t->vertex_node[w] == t->vertex_node[v]) continue;
    if (t->hub_in_first[w] < t->hub_in_first[w + 1] && pending(t, w, -1, stamp)) continue;
    if (mark(t, w, l, to, stamp, tail)) return 1;
  }
  return 0;
}

uint32_t ds__topo_search(struct ds_topo *t, int32_t from, int32_t to) {
  uint32_t stamp = ++t->scratch_stamp;
  int32_t head = 0, tail = 0;
  t->scratch_seen[from] = stamp;
  t->scratch_prev[from] = -1;
  if (to >= 0)
    for (int32_t i = t->in_first[to]; i < t->in_first[to + 1]; i++) {
      int32_t u = t->links[t->in_links[i]].src;
      t->scratch_inn[u] = stamp;
      t->scratch_inn_link[u] = t->in_links[i];
    }
  if (to >= 0 && t->scratch_inn[from] == stamp) {
    /* from's own link reaches the target as from is expanded first: the
     * rule below (the first vertex marked with a link into the target)
     * holds for the vertices from reaches, not for from */
    t->scratch_seen[to] = stamp;
    t->scratch_prev[to] = t->scratch_inn_link[from];
    return stamp;
  }
  t->scratch_queue[tail++] = from;
  while (head < tail) {
    int32_t q = t->scratch_queue[head++];
    if (q >= 0) {
      if (expand(t, q, from, to, stamp, &tail)) break;
      continue;
    }
    /* A hub's entry: the vertices it reaches that nothing reached before,
     * in link order, each expanded as the plain search would take it out. */
    int32_t h = -1 - q, done = 0;
    for (int32_t i = t->out_first[h]; i < t->out_first[h + 1] && !done; i++) {
      int32_t l = t->out_links[i], w = t->links[l].dst;
      if (t->scratch_seen[w] == stamp || !hub_leads(t, h, w, stamp)) continue;
      if (mark(t, w, l, to, stamp, NULL)) done = 1;
      else done = expand(t, w, from, to, stamp, &tail);
    }
    if (done) break;
  }
  return stamp;
}

/* Routes of up to ROUTE_CACHE_LINKS links are cached, 64 slots per GPU
 * (a power of two, at most 2^20 slots of 68 bytes): the collectives of one
 * run ask for the same GPU pairs again and again (a 1024-GPU tree sweep
 * spent 79 % of its time in route searches; its trees and rails use about
 * 40 routes per GPU). A longer route is searched every time. */
#define ROUTE_CACHE_PER_GPU 64
#define ROUTE_CACHE_MAX_SLOTS (1u << 20)
#define ROUTE_CACHE_LINKS 14

struct ds_route_cache_entry {
  int32_t src, dst; /* src == dst (calloc's zeros): empty; no route has src == dst */
  int32_t n;
  int32_t links[ROUTE_CACHE_LINKS];
};

static struct ds_route_cache_entry *cache_slot(struct ds_topo *t, int32_t src, int32_t dst) {
  if (!t->route_cache) {
    uint32_t slots = 1;
    while (slots < ROUTE_CACHE_MAX_SLOTS && slots < (uint32_t)t->n_gpus * ROUTE_CACHE_PER_GPU)
      slots <<= 1;
    /* calloc: zeroed pages cost no memory until a route is cached in them,
     * so a small run on a large topology stays small (issue #14) */
    t->route_cache = calloc(slots, sizeof *t->route_cache);
    if (!t->route_cache) return NULL;
    t->route_cache_slots = slots;
  }
  uint32_t h = ((uint32_t)src * 2654435761u) ^ ((uint32_t)dst * 2246822519u);
  return &t->route_cache[(h ^ (h >> 16)) & (t->route_cache_slots - 1)];
}

ds_status ds_topo_route(struct ds_topo *t, int32_t src, int32_t dst,
                        int32_t *links, int32_t cap, int32_t *n_links,
                        struct ds_err *err) {
  if (src < 0 || dst < 0 || src >= t->n_gpus || dst >= t->n_gpus || src == dst)
    return ds_err_set(err, DS_EINTERNAL, "route: bad GPU pair %d -> %d", src, dst);
  struct ds_route_cache_entry *slot = cache_slot(t, src, dst);
  if (slot && slot->src == src && slot->dst == dst) {
    if (slot->n > cap)
      return ds_err_set(err, DS_EINTERNAL, "route: %d links exceed buffer of %d", slot->n,
                        cap);
    memcpy(links, slot->links, (size_t)slot->n * sizeof *links);
    *n_links = slot->n;
    return DS_OK;
  }
  int32_t from = t->gpu_vertex[src], to = t->gpu_vertex[dst];
  uint32_t stamp = ds__topo_search(t, from, to);
  if (t->scratch_seen[to] != stamp)
    return ds_err_set(err, DS_EINPUT, "%s: GPU %d cannot reach GPU %d", t->path,
                      src, dst);
  int32_t n = 0;
  for (int32_t v = to; v != from; v = t->links[t->scratch_prev[v]].src) n++;
  if (n > cap)
    return ds_err_set(err, DS_EINTERNAL, "route: %d links exceed buffer of %d", n, cap);
  int32_t i = n;
  for (int32_t v = to; v != from; v = t->links[t->scratch_prev[v]].src)
    links[--i] = t->scratch_prev[v];
  *n_links = n;
  if (slot && n <= ROUTE_CACHE_LINKS) {
    *slot = (struct ds_route_cache_entry){.src = src, .dst = dst, .n = n};
    memcpy(slot->links, links, (size_t)n * sizeof *links);
  }
  return DS_OK;
}
