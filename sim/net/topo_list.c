/*
 * Explicit topologies: a `devices:` list (name, kind, node) and a `links:`
 * list (from, to, bw, lat, kind, duplex, count) at the root of a topology
 * file, for machines the templates do not describe.
 *
 * GPUs are numbered 0..N-1 in their order of appearance in `devices`, node
 * by node (GPU g must be on node g / gpus_per_node); they are vertices
 * 0..N-1, the other devices follow in order of appearance; the topology
 * keeps each device's name (vertex_name, what `ddpsim topo` prints). Links are
 * created in file order (a duplex link: from -> to, then to -> from), which
 * is the tie-break order of routes. Once built, every GPU must reach every
 * other one without passing through a third: otherwise the load fails and
 * names the GPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "sim/net/topo_build.h"

#define MAX_DEVICES (1 << 22)
#define MAX_LINKS (1 << 24)
/* Unreachable GPUs named in one message, at most. */
#define MAX_NAMED 6

static const char *const device_keys[] = {"name", "kind", "node", NULL};
static const char *const link_keys[] = {"from", "to", "bw", "lat", "kind",
                                        "duplex", "count", NULL};
/* Link kinds; the strings are the static ones struct ds_link points to.
 * Collectives class a route by them (sim/coll/coll_ring.c): ib is the network,
 * pcie (and qpi with it, as NCCL's PATH_SYS) is PCI, the rest NVLink. */
static const char *const link_kinds[] = {"nvlink", "pcie", "qpi", "ib", NULL};

struct device {
  const char *name; /* borrowed from the config */
  int32_t vertex;
  int line;
};

struct named {
  const char *name;
  int32_t index; /* into list.dev */
};

struct list {
  struct device *dev;    /* [n] in file order */
  struct named *by_name; /* [n] sorted by name, then file order */
  size_t n;
};

static int cmp_name(const void *x, const void *y) {
  const struct named *a = x, *b = y;
  int c = strcmp(a->name, b->name);
  return c ? c : (a->index > b->index) - (a->index < b->index);
}

static const struct device *find(const struct list *d, const char *name) {
  size_t lo = 0, hi = d->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(d->by_name[mid].name, name);
    if (c == 0) return &d->dev[d->by_name[mid].index];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static ds_status read_kind(const struct ds_cnode *item, enum ds_vertex_kind *out,
                           struct ds_err *err) {
  struct ds_cnode node;
  const char *s;
  DS_CHECK(ds_cmap_require(item, "kind", "gpu, switch, nic or cpu", &node, err));
  DS_CHECK(ds_cnode_string(&node, &s, err));
  for (int k = 0; k < DS_VERTEX_KIND_COUNT; k++)
    if (strcmp(s, ds_vertex_kind_name((enum ds_vertex_kind)k)) == 0) {
      *out = (enum ds_vertex_kind)k;
      return DS_OK;
    }
  return ds_cnode_error(&node, err, "expected gpu, switch, nic or cpu, got \"%s\"", s);
}

/* A device's node: required on several nodes except for switches, whose
 * absent node means the fabric between nodes (-1). */
static ds_status read_node(const struct ds_topo *t, const struct ds_cnode *item,
                           enum ds_vertex_kind kind, int32_t *out, struct ds_err *err) {
  struct ds_cnode node;
  int64_t n;
  if (!ds_cmap_get(item, "node", &node)) {
    if (t->n_nodes == 1) *out = 0;
    else if (kind == DS_VERTEX_SWITCH) *out = -1;
    else
      return ds_cnode_error(item, err, "missing key 'node' (a %s needs its node, 0 to %d)",
                            ds_vertex_kind_name(kind), t->n_nodes - 1);
    return DS_OK;
  }
  DS_CHECK(ds_cnode_int_range(&node, 0, t->n_nodes - 1, &n, err));
  *out = (int32_t)n;
  return DS_OK;
}

static ds_status read_devices(struct ds_topo *t, const struct ds_cnode *root,
                              struct list *d, struct ds_err *err) {
  struct ds_cnode seq, item, node;
  DS_CHECK(ds_cmap_require(root, "devices", "a list of devices", &seq, err));
  DS_CHECK(ds_cseq_len(&seq, &d->n, err));
  if (d->n < 1 || d->n > MAX_DEVICES)
    return ds_cnode_error(&seq, err, "expected 1 to %d devices, got %zu", MAX_DEVICES, d->n);
  d->dev = calloc(d->n, sizeof *d->dev);
  d->by_name = malloc(d->n * sizeof *d->by_name);
  enum ds_vertex_kind *kind = malloc(d->n * sizeof *kind);
  int32_t *node_of = malloc(d->n * sizeof *node_of);
  ds_status st = DS_OK;
  if (!d->dev || !d->by_name || !kind || !node_of) { st = DS_ENOMEM; goto out; }
  int32_t gpus = 0;
  for (size_t i = 0; i < d->n; i++) {
    DS_CHECK_GOTO(ds_cseq_at(&seq, i, &item, err), st, out);
    DS_CHECK_GOTO(ds_cmap_check_keys(&item, device_keys, err), st, out);
    DS_CHECK_GOTO(ds_cmap_require(&item, "name", "a device name", &node, err), st, out);
    DS_CHECK_GOTO(ds_cnode_string(&node, &d->dev[i].name, err), st, out);
    if (d->dev[i].name[0] == '\0') {
      st = ds_cnode_error(&node, err, "expected a non-empty name");
      goto out;
    }
    d->dev[i].line = ds_cnode_line(&node);
    DS_CHECK_GOTO(read_kind(&item, &kind[i], err), st, out);
    DS_CHECK_GOTO(read_node(t, &item, kind[i], &node_of[i], err), st, out);
    if (kind[i] == DS_VERTEX_GPU) {
      int32_t want = gpus / t->gpus_per_node; /* past n_gpus: the count check */
      if (gpus < t->n_gpus && node_of[i] != want) {
        st = ds_cnode_error(&item, err,
                            "GPU %d ('%s') is on node %d, but GPUs are numbered in order "
                            "of appearance, node by node: GPU %d belongs to node %d "
                            "(gpus_per_node %d)", gpus, d->dev[i].name, node_of[i], gpus,
                            want, t->gpus_per_node);
        goto out;
      }
      gpus++;
    }
  }
  if (gpus != t->n_gpus) {
    st = ds_cnode_error(&seq, err, "expected nodes x gpus_per_node = %d GPUs, got %d",
                        t->n_gpus, gpus);
    goto out;
  }
  /* Names, sorted, for duplicates and for the links' lookups. */
  for (size_t i = 0; i < d->n; i++) d->by_name[i] = (struct named){d->dev[i].name, (int32_t)i};
  qsort(d->by_name, d->n, sizeof *d->by_name, cmp_name);
  for (size_t i = 1; i < d->n; i++) {
    const struct named *a = &d->by_name[i - 1], *b = &d->by_name[i];
    if (strcmp(a->name, b->name) == 0) { /* b comes later in the file */
      DS_CHECK_GOTO(ds_cseq_at(&seq, (size_t)b->index, &item, err), st, out);
      ds_cmap_get(&item, "name", &node);
      st = ds_cnode_error(&node, err, "duplicate device name '%s' (first at line %d)",
                          b->name, d->dev[a->index].line);
      goto out;
    }
  }
  /* Vertices: GPUs first, in order, then the rest in order. */
  t->gpu_vertex = malloc((size_t)t->n_gpus * sizeof *t->gpu_vertex);
  if (!t->gpu_vertex) { st = DS_ENOMEM; goto out; }
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < d->n; i++) {
      if ((kind[i] == DS_VERTEX_GPU) != (pass == 0)) continue;
      DS_CHECK_GOTO(ds__topo_add_vertex(t, kind[i], node_of[i], &d->dev[i].vertex), st, out);
      if (pass == 0) t->gpu_vertex[d->dev[i].vertex] = d->dev[i].vertex;
    }
  /* the file's names, for `ddpsim topo` (the config's strings die with it) */
  t->vertex_name = calloc((size_t)t->n_vertices, sizeof *t->vertex_name);
  if (!t->vertex_name) { st = DS_ENOMEM; goto out; }
  for (size_t i = 0; i < d->n; i++) {
    t->vertex_name[d->dev[i].vertex] = strdup(d->dev[i].name);
    if (!t->vertex_name[d->dev[i].vertex]) { st = DS_ENOMEM; goto out; }
  }
out:
  free(kind);
  free(node_of);
  return st;
}

static ds_status read_endpoint(const struct list *d, const struct ds_cnode *item,
                               const char *key, int32_t *out, struct ds_err *err) {
  struct ds_cnode node;
  const char *s;
  DS_CHECK(ds_cmap_require(item, key, "a device name from 'devices'", &node, err));
  DS_CHECK(ds_cnode_string(&node, &s, err));
  const struct device *dev = find(d, s);
  if (!dev) return ds_cnode_error(&node, err, "unknown device '%s' (not in 'devices')", s);
  *out = dev->vertex;
  return DS_OK;
}

static ds_status read_link(struct ds_topo *t, const struct list *d,
                           const struct ds_cnode *item, struct ds_err *err) {
  struct ds_cnode node;
  int32_t a, b;
  double bw, lat;
  int64_t count = 1;
  int duplex = 1;
  const char *s, *kind = NULL;
  DS_CHECK(ds_cmap_check_keys(item, link_keys, err));
  DS_CHECK(read_endpoint(d, item, "from", &a, err));
  DS_CHECK(read_endpoint(d, item, "to", &b, err));
  if (a == b) {
    ds_cmap_get(item, "to", &node);
    return ds_cnode_error(&node, err, "a link joins two different devices");
  }
  DS_CHECK(ds_cmap_require(item, "bw", "a bandwidth like \"25GBps\"", &node, err));
  DS_CHECK(ds_cnode_bw(&node, &bw, err));
  DS_CHECK(ds_cmap_require(item, "lat", "a time like \"1.5us\"", &node, err));
  DS_CHECK(ds_cnode_time_ns(&node, &lat, err));
  DS_CHECK(ds_cmap_require(item, "kind", "nvlink, pcie, qpi or ib", &node, err));
  DS_CHECK(ds_cnode_string(&node, &s, err));
  for (size_t k = 0; link_kinds[k]; k++)
    if (strcmp(s, link_kinds[k]) == 0) kind = link_kinds[k];
  if (!kind) return ds_cnode_error(&node, err, "expected nvlink, pcie, qpi or ib, got \"%s\"", s);
  if (ds_cmap_get(item, "duplex", &node)) DS_CHECK(ds_cnode_bool(&node, &duplex, err));
  if (ds_cmap_get(item, "count", &node)) DS_CHECK(ds_cnode_int_range(&node, 1, 1024, &count, err));
  /* count links bonded between one pair act as one of count x bw: routes
   * are single paths, so parallel links would leave all but one idle. */
  DS_CHECK(ds__topo_add_link(t, a, b, bw * (double)count, lat, kind));
  if (duplex) DS_CHECK(ds__topo_add_link(t, b, a, bw * (double)count, lat, kind));
  return DS_OK;
}

/* A directed link and the file's entry that made it. */
struct pair {
  int32_t src, dst, entry;
};

static int cmp_pair(const void *x, const void *y) {
  const struct pair *a = x, *b = y;
  if (a->src != b->src) return a->src < b->src ? -1 : 1;
  if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
  return (a->entry > b->entry) - (a->entry < b->entry);
}

static ds_status read_links(struct ds_topo *t, const struct ds_cnode *root,
                            const struct list *d, struct ds_err *err) {
  struct ds_cnode seq, item;
  size_t n;
  DS_CHECK(ds_cmap_require(root, "links", "a list of links", &seq, err));
  DS_CHECK(ds_cseq_len(&seq, &n, err));
  if (n > MAX_LINKS)
    return ds_cnode_error(&seq, err, "expected at most %d links, got %zu", MAX_LINKS, n);
  struct pair *pairs = malloc((2 * n + 1) * sizeof *pairs);
  ds_status st = DS_OK;
  if (!pairs) return DS_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    int32_t before = t->n_links;
    DS_CHECK_GOTO(ds_cseq_at(&seq, i, &item, err), st, out);
    DS_CHECK_GOTO(read_link(t, d, &item, err), st, out);
    for (int32_t l = before; l < t->n_links; l++)
      pairs[l] = (struct pair){t->links[l].src, t->links[l].dst, (int32_t)i};
  }
  /* Two links in the same direction between one pair: the second would
   * never carry anything (routes take the first). */
  qsort(pairs, (size_t)t->n_links, sizeof *pairs, cmp_pair);
  for (int32_t k = 1; k < t->n_links; k++) {
    const struct pair *p = &pairs[k - 1], *q = &pairs[k];
    if (p->src != q->src || p->dst != q->dst) continue;
    struct ds_cnode first;
    DS_CHECK_GOTO(ds_cseq_at(&seq, (size_t)q->entry, &item, err), st, out);
    DS_CHECK_GOTO(ds_cseq_at(&seq, (size_t)p->entry, &first, err), st, out);
    st = ds_cnode_error(&item, err, "a second link %s -> %s (the first at line %d); "
                        "write one link with count: 2 for bonded links",
                        t->vertex_name[q->src], t->vertex_name[q->dst],
                        ds_cnode_line(&first));
    goto out;
  }
out:
  free(pairs);
  return st;
}

/* The GPUs GPU a cannot reach, named in names (at most MAX_NAMED); their
 * count. One search. */
static int32_t unreached(struct ds_topo *t, int32_t a, char *names, size_t cap) {
  uint32_t stamp = ds__topo_search(t, t->gpu_vertex[a], -1);
  int32_t missing = 0;
  size_t used = 0;
  names[0] = '\0';
  for (int32_t b = 0; b < t->n_gpus; b++) {
    if (b == a || t->scratch_seen[t->gpu_vertex[b]] == stamp) continue;
    if (missing++ < MAX_NAMED && used < cap) {
      int w = snprintf(names + used, cap - used, "%s%d '%s'", used ? ", " : "", b,
                       t->vertex_name[t->gpu_vertex[b]]);
      if (w > 0) used += (size_t)w;
    }
  }
  return missing;
}

/* A GPU's out links as a key: GPUs of one node whose out links lead to the
 * same vertices in the same order reach the same vertices, but for each
 * other (a search from either expands the same vertices in the same order,
 * entered from the same node). */
struct gpu_key {
  uint64_t hash;
  int32_t gpu;
};

static int cmp_gpu_key(const void *x, const void *y) {
  const struct gpu_key *a = x, *b = y;
  if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
  return (a->gpu > b->gpu) - (a->gpu < b->gpu);
}

static int same_out(const struct ds_topo *t, int32_t a, int32_t b) {
  int32_t va = t->gpu_vertex[a], vb = t->gpu_vertex[b];
  int32_t n = t->out_first[va + 1] - t->out_first[va];
  if (t->vertex_node[va] != t->vertex_node[vb] || t->out_first[vb + 1] - t->out_first[vb] != n)
    return 0;
  for (int32_t i = 0; i < n; i++)
    if (t->links[t->out_links[t->out_first[va] + i]].dst !=
        t->links[t->out_links[t->out_first[vb] + i]].dst)
      return 0;
  return 1;
}

/* Whether a search from another GPU of a's class (which reaches what a's
 * reaches, stamp) reaches a: through a vertex it expands with a link into a. */
static int reached_back(const struct ds_topo *t, int32_t a, uint32_t stamp) {
  int32_t va = t->gpu_vertex[a];
  for (int32_t i = t->in_first[va]; i < t->in_first[va + 1]; i++) {
    int32_t x = t->links[t->in_links[i]].src;
    if (x == va || t->scratch_seen[x] != stamp || t->vertex_kind[x] == DS_VERTEX_GPU) continue;
    int inside = t->scratch_prev[x] >= 0 &&
                 t->vertex_node[t->links[t->scratch_prev[x]].src] == t->vertex_node[x];
    if (t->vertex_kind[x] == DS_VERTEX_NIC && inside && t->vertex_node[va] == t->vertex_node[x])
      continue;
    return 1;
  }
  return 0;
}

/* topo_build.h: one search per class of GPUs with the same out links (a
 * switch's GPUs: one search, not one per GPU; issue #14). */
ds_status ds__topo_first_unreached(struct ds_topo *t, int32_t *out) {
  int32_t n = t->n_gpus, first_bad = -1;
  struct gpu_key *keys = malloc(((size_t)n + 1) * sizeof *keys);
  if (!keys) return DS_ENOMEM;
  for (int32_t g = 0; g < n; g++) {
    int32_t v = t->gpu_vertex[g];
    uint64_t h = 1469598103934665603u ^ (uint64_t)(uint32_t)t->vertex_node[v];
    for (int32_t i = t->out_first[v]; i < t->out_first[v + 1]; i++)
      h = (h ^ (uint64_t)(uint32_t)t->links[t->out_links[i]].dst) * 1099511628211u;
    keys[g] = (struct gpu_key){h, g};
  }
  qsort(keys, (size_t)n, sizeof *keys, cmp_gpu_key);
  for (int32_t i = 0; i < n;) {
    /* the class of keys[i]: the run of equal hashes with equal out links */
    int32_t a = keys[i].gpu, j = i + 1;
    while (j < n && keys[j].hash == keys[i].hash && same_out(t, a, keys[j].gpu)) j++;
    uint32_t stamp = ds__topo_search(t, t->gpu_vertex[a], -1);
    int32_t missing = 0; /* GPUs other than a that a does not reach */
    for (int32_t b = 0; b < n; b++)
      missing += b != a && t->scratch_seen[t->gpu_vertex[b]] != stamp;
    int back = j - i > 1 ? reached_back(t, a, stamp) : 1;
    for (int32_t k = i; k < j; k++) {
      /* b reaches what a reaches but b itself, and a when `back` */
      int32_t b = keys[k].gpu;
      int bad = b == a ? missing > 0
                       : missing - (t->scratch_seen[t->gpu_vertex[b]] != stamp) > 0 || !back;
      if (bad && (first_bad < 0 || b < first_bad)) first_bad = b;
    }
    i = j;
  }
  free(keys);
  *out = first_bad;
  return DS_OK;
}

/* Every GPU must reach every other one; the first GPU that cannot is named
 * with the GPUs it cannot reach. */
static ds_status check_reachable(struct ds_topo *t, struct ds_err *err) {
  int32_t first_bad;
  DS_CHECK(ds__topo_first_unreached(t, &first_bad));
  if (first_bad < 0) return DS_OK;
  char names[DS_ERR_MSG_MAX / 2];
  int32_t missing = unreached(t, first_bad, names, sizeof names);
  return ds_err_set(err, DS_EINPUT,
                    "%s: GPU %d '%s' cannot reach GPU%s %s%s: no path of links "
                    "that avoids passing through another GPU (routes never "
                    "transit a GPU; add the PCIe/CPU links that join them)",
                    t->path, first_bad, t->vertex_name[t->gpu_vertex[first_bad]],
                    missing > 1 ? "s" : "", names, missing > MAX_NAMED ? " and more" : "");
}

/* A GPU with no link at all cannot take part in any collective: refused at
 * its entry in `devices` (issue #12: it was refused only by the search,
 * with the file's name alone). A one-GPU topology needs none; a switch,
 * NIC or CPU without links carries nothing and is left alone. */
static ds_status check_linked(const struct ds_topo *t, const struct ds_cnode *root,
                              const struct list *d, struct ds_err *err) {
  if (t->n_gpus < 2) return DS_OK;
  for (size_t i = 0; i < d->n; i++) {
    int32_t v = d->dev[i].vertex;
    if (v >= t->n_gpus || t->out_first[v + 1] > t->out_first[v] ||
        t->in_first[v + 1] > t->in_first[v])
      continue;
    struct ds_cnode seq, item, node;
    DS_CHECK(ds_cmap_require(root, "devices", "a list of devices", &seq, err));
    DS_CHECK(ds_cseq_at(&seq, i, &item, err));
    DS_CHECK(ds_cmap_require(&item, "name", "a device name", &node, err));
    char others[32] = "GPU";
    if (t->n_gpus > 2) snprintf(others, sizeof others, "%d GPUs", t->n_gpus - 1);
    return ds_cnode_error(&node, err,
                          "GPU %d '%s' has no links, so it cannot communicate with the "
                          "other %s (only a one-GPU topology may have none): add the links "
                          "that join it, or leave it out (and lower gpus_per_node)",
                          v, d->dev[i].name, others);
  }
  return DS_OK;
}

ds_status ds__topo_build_list(struct ds_topo *t, const struct ds_cnode *root,
                              struct ds_err *err) {
  struct list d = {0};
  ds_status st;
  DS_CHECK_GOTO(read_devices(t, root, &d, err), st, out);
  DS_CHECK_GOTO(read_links(t, root, &d, err), st, out);
  DS_CHECK_GOTO(ds__topo_build_adjacency(t), st, out);
  DS_CHECK_GOTO(check_linked(t, root, &d, err), st, out);
  st = check_reachable(t, err);
out:
  free(d.dev);
  free(d.by_name);
  return st;
}
