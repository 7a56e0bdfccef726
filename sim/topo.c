/*
 * Topology construction from YAML templates, and routing.
 *
 * Vertex ids: GPUs first (vertex g is GPU g, node g / gpus_per_node), then
 * per-node switches or CPUs, then NICs, then the inter-node switch. Every
 * cable is two directed links created together; intra-node links are
 * created before NIC links so that breadth-first search prefers them when
 * hop counts tie.
 */
#include "topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gpu_table.h"

#define MAX_GPUS (1 << 20)
/* A node of one switch may hold many GPUs (a whole cluster behind one
 * non-blocking switch is how the SimGrid peer is described); a full mesh
 * has gpn * (gpn - 1) links and is capped lower. */
#define MAX_GPUS_PER_NODE 4096
#define MAX_MESH_GPUS 64

static const char *const root_keys[] = {
    "schema_version", "name", "gpu", "nodes", "gpus_per_node",
    "intra_node", "inter_node", "compute", NULL};
static const char *const intra_keys[] = {"template", "link_bw", "link_lat",
                                         "gpus_per_switch", "uplink_bw",
                                         "uplink_lat", NULL};
static const char *const inter_keys[] = {"template", "nics_per_node", "nic_bw",
                                         "nic_lat", "gpu_nic_bw",
                                         "gpu_nic_lat", NULL};
static const char *const compute_keys[] = {
    "flops_efficiency", "mem_efficiency", "kernel_overhead",
    "comm_interference", "fp32_math", NULL};

const char *ds_vertex_kind_name(enum ds_vertex_kind kind) {
  static const char *const names[] = {
#define DS__VK_NAME(e, s) s,
      DS_VERTEX_KIND_MAP(DS__VK_NAME)
#undef DS__VK_NAME
  };
  return (unsigned)kind < DS_VERTEX_KIND_COUNT ? names[kind] : "?";
}

/* Link parameters read from the file, before vertices exist. */
struct intra_spec {
  char template_name[16];
  double link_bw, link_lat;
  int64_t gpus_per_switch;
  double uplink_bw, uplink_lat;
};

struct inter_spec {
  char template_name[16];
  int64_t nics_per_node;
  double nic_bw, nic_lat, gpu_nic_bw, gpu_nic_lat;
};

static ds_status add_vertex(struct ds_topo *t, enum ds_vertex_kind kind,
                            int32_t node, int32_t *out) {
  /* Vertex arrays are sized up front by build(); this only fills them. */
  t->vertex_kind[t->n_vertices] = kind;
  t->vertex_node[t->n_vertices] = node;
  *out = t->n_vertices++;
  return DS_OK;
}

static void add_cable(struct ds_topo *t, int32_t a, int32_t b, double bw,
                      double lat, const char *kind) {
  struct ds_link *l = &t->links[t->n_links++];
  *l = (struct ds_link){a, b, bw, lat, kind};
  l = &t->links[t->n_links++];
  *l = (struct ds_link){b, a, bw, lat, kind};
}

static ds_status build_adjacency(struct ds_topo *t) {
  t->out_first = calloc((size_t)t->n_vertices + 1, sizeof *t->out_first);
  t->out_links = malloc(((size_t)t->n_links + 1) * sizeof *t->out_links);
  t->scratch_prev = malloc((size_t)t->n_vertices * sizeof *t->scratch_prev);
  t->scratch_seen = calloc((size_t)t->n_vertices, sizeof *t->scratch_seen);
  t->scratch_queue = malloc((size_t)t->n_vertices * sizeof *t->scratch_queue);
  if (!t->out_first || !t->out_links || !t->scratch_prev || !t->scratch_seen ||
      !t->scratch_queue)
    return DS_ENOMEM;
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
  return DS_OK;
}

static ds_status build(struct ds_topo *t, const struct intra_spec *intra,
                       const struct inter_spec *inter) {
  int32_t gpn = t->gpus_per_node, nodes = t->n_nodes;
  int64_t nics = nodes > 1 ? inter->nics_per_node : 0;
  int64_t per_node_switches = 1;
  int64_t per_node_links;
  if (strcmp(intra->template_name, "nvlink-mesh") == 0) {
    per_node_switches = 0;
    per_node_links = (int64_t)gpn * (gpn - 1);
  } else if (strcmp(intra->template_name, "nvswitch") == 0) {
    per_node_links = 2 * (int64_t)gpn;
  } else { /* pcie-switch: switches + one CPU root complex */
    int64_t sw = (gpn + intra->gpus_per_switch - 1) / intra->gpus_per_switch;
    per_node_switches = sw + 1;
    per_node_links = 2 * (int64_t)gpn + 2 * sw;
  }
  int64_t n_vertices = (int64_t)nodes * (gpn + per_node_switches + nics) +
                       (nodes > 1 ? 1 : 0);
  int64_t n_links = nodes * per_node_links + (int64_t)nodes * nics * 2 +
                    (nodes > 1 ? (int64_t)nodes * gpn * 2 : 0);
  t->vertex_kind = malloc((size_t)n_vertices * sizeof *t->vertex_kind);
  t->vertex_node = malloc((size_t)n_vertices * sizeof *t->vertex_node);
  t->gpu_vertex = malloc((size_t)t->n_gpus * sizeof *t->gpu_vertex);
  t->links = malloc((size_t)n_links * sizeof *t->links);
  if (!t->vertex_kind || !t->vertex_node || !t->gpu_vertex || !t->links)
    return DS_ENOMEM;

  int32_t v;
  for (int32_t g = 0; g < t->n_gpus; g++) {
    add_vertex(t, DS_VERTEX_GPU, g / gpn, &v);
    t->gpu_vertex[g] = v;
  }
  for (int32_t n = 0; n < nodes; n++) {
    int32_t first_gpu = n * gpn;
    if (per_node_switches == 0) {
      for (int32_t a = 0; a < gpn; a++)
        for (int32_t b = a + 1; b < gpn; b++)
          add_cable(t, first_gpu + a, first_gpu + b, intra->link_bw,
                    intra->link_lat, "nvlink");
    } else if (strcmp(intra->template_name, "nvswitch") == 0) {
      int32_t sw;
      add_vertex(t, DS_VERTEX_SWITCH, n, &sw);
      for (int32_t a = 0; a < gpn; a++)
        add_cable(t, first_gpu + a, sw, intra->link_bw, intra->link_lat,
                  "nvlink");
    } else {
      int32_t cpu, sw = -1;
      add_vertex(t, DS_VERTEX_CPU, n, &cpu);
      for (int32_t a = 0; a < gpn; a++) {
        if (a % intra->gpus_per_switch == 0) {
          add_vertex(t, DS_VERTEX_SWITCH, n, &sw);
          add_cable(t, sw, cpu, intra->uplink_bw, intra->uplink_lat, "pcie");
        }
        add_cable(t, first_gpu + a, sw, intra->link_bw, intra->link_lat, "pcie");
      }
    }
  }
  if (nodes > 1) {
    int32_t fabric_first_nic = t->n_vertices;
    for (int32_t n = 0; n < nodes; n++)
      for (int64_t k = 0; k < nics; k++) add_vertex(t, DS_VERTEX_NIC, n, &v);
    int32_t fabric;
    add_vertex(t, DS_VERTEX_SWITCH, -1, &fabric);
    for (int32_t n = 0; n < nodes; n++) {
      /* GPU i of a node uses NIC i * nics / gpn: the GPU-NIC affinity of
       * DGX-style boxes, where GPU pairs share a PCIe switch with a NIC. */
      for (int32_t a = 0; a < gpn; a++) {
        int32_t nic = fabric_first_nic + n * (int32_t)nics +
                      (int32_t)((int64_t)a * nics / gpn);
        add_cable(t, n * gpn + a, nic, inter->gpu_nic_bw, inter->gpu_nic_lat,
                  "pcie");
      }
      for (int64_t k = 0; k < nics; k++)
        add_cable(t, fabric_first_nic + n * (int32_t)nics + (int32_t)k, fabric,
                  inter->nic_bw, inter->nic_lat, "ib");
    }
  }
  return build_adjacency(t);
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
  DS_CHECK(ds_cnode_int64(&node, out, err));
  if (*out < 1 || *out > max)
    return ds_cnode_error(&node, err, "expected an integer from 1 to %lld, got %lld",
                          (long long)max, (long long)*out);
  return DS_OK;
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

static ds_status read_compute(const struct ds_cnode *root,
                              struct ds_compute_params *c, struct ds_err *err) {
  struct ds_cnode map, node;
  /* Defaults: see docs/architecture.md ("Compute model"). */
  c->flops_efficiency = 0.5;
  c->mem_efficiency = 0.7;
  c->kernel_overhead_ns = 4000;
  c->comm_interference = 0.0;
  c->fp32_uses_tf32 = 1;
  if (!ds_cmap_get(root, "compute", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, compute_keys, err));
  DS_CHECK(read_fraction(&map, "flops_efficiency", 0, 1, &c->flops_efficiency, err));
  DS_CHECK(read_fraction(&map, "mem_efficiency", 0, 1, &c->mem_efficiency, err));
  if (ds_cmap_get(&map, "kernel_overhead", &node))
    DS_CHECK(ds_cnode_time_ns(&node, &c->kernel_overhead_ns, err));
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
  if (strcmp(s->template_name, "pcie-switch") == 0) {
    DS_CHECK(read_count(&map, "gpus_per_switch", gpn, &s->gpus_per_switch, err));
    DS_CHECK(read_bw(&map, "uplink_bw", &s->uplink_bw, err));
    DS_CHECK(read_lat(&map, "uplink_lat", &s->uplink_lat, err));
  } else {
    struct ds_cnode node;
    const char *pcie_only[] = {"gpus_per_switch", "uplink_bw", "uplink_lat"};
    for (size_t i = 0; i < 3; i++)
      if (ds_cmap_get(&map, pcie_only[i], &node))
        return ds_cnode_error(&node, err, "only valid with template pcie-switch");
  }
  return DS_OK;
}

static ds_status read_inter(const struct ds_cnode *root, int64_t nodes,
                            int64_t gpn, struct inter_spec *s,
                            struct ds_err *err) {
  struct ds_cnode map;
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
  const char *s;
  char table[4096];
  ds_status st;

  DS_CHECK_GOTO(ds_config_open(path, root_keys, &cfg, &root, err), st, out);
  DS_CHECK_GOTO(ds_cmap_require(&root, "name", "a name", &node, err), st, out);
  DS_CHECK_GOTO(ds_cnode_string(&node, &s, err), st, out);
  t->name = strdup(s);
  if (!t->name) { st = DS_ENOMEM; goto out; }
  DS_CHECK_GOTO(read_count(&root, "nodes", 1 << 16, &nodes, err), st, out);
  DS_CHECK_GOTO(read_count(&root, "gpus_per_node", MAX_GPUS_PER_NODE, &gpn, err), st, out);
  if (nodes * gpn > MAX_GPUS) {
    st = ds_err_set(err, DS_EINPUT, "%s: %lld GPUs is more than the %d supported",
                    path, (long long)(nodes * gpn), MAX_GPUS);
    goto out;
  }
  t->n_nodes = (int32_t)nodes;
  t->gpus_per_node = (int32_t)gpn;
  t->n_gpus = (int32_t)(nodes * gpn);
  DS_CHECK_GOTO(read_intra(&root, gpn, &intra, err), st, out);
  DS_CHECK_GOTO(read_inter(&root, nodes, gpn, &inter, err), st, out);
  DS_CHECK_GOTO(read_compute(&root, &t->compute, err), st, out);
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
  st = build(t, &intra, &inter);
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
  free(t);
}

ds_status ds_topo_route(struct ds_topo *t, int32_t src, int32_t dst,
                        int32_t *links, int32_t cap, int32_t *n_links,
                        struct ds_err *err) {
  if (src < 0 || dst < 0 || src >= t->n_gpus || dst >= t->n_gpus || src == dst)
    return ds_err_set(err, DS_EINTERNAL, "route: bad GPU pair %d -> %d", src, dst);
  int32_t from = t->gpu_vertex[src], to = t->gpu_vertex[dst];
  uint32_t stamp = ++t->scratch_stamp;
  int32_t head = 0, tail = 0;
  t->scratch_queue[tail++] = from;
  t->scratch_seen[from] = stamp;
  t->scratch_prev[from] = -1;
  while (head < tail && t->scratch_seen[to] != stamp) {
    int32_t v = t->scratch_queue[head++];
    /* GPUs do not forward traffic (a route only starts or ends at one). */
    if (v != from && t->vertex_kind[v] == DS_VERTEX_GPU) continue;
    /* A NIC entered from a GPU leads only into the fabric, never back to
     * another GPU of the same node. */
    int came_from_gpu = t->scratch_prev[v] >= 0 &&
        t->vertex_kind[t->links[t->scratch_prev[v]].src] == DS_VERTEX_GPU;
    int nic_outbound = t->vertex_kind[v] == DS_VERTEX_NIC && came_from_gpu;
    for (int32_t i = t->out_first[v]; i < t->out_first[v + 1]; i++) {
      int32_t l = t->out_links[i], w = t->links[l].dst;
      if (t->scratch_seen[w] == stamp) continue;
      if (nic_outbound && t->vertex_kind[w] == DS_VERTEX_GPU) continue;
      t->scratch_seen[w] = stamp;
      t->scratch_prev[w] = l;
      t->scratch_queue[tail++] = w;
    }
  }
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
  return DS_OK;
}
