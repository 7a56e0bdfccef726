/*
 * The route search (sim/net/topo_route.c ds__topo_search) expands hubs lazily and
 * stops once the target's link is known (issue #14); it must find exactly
 * the links of the plain breadth-first search it replaced, written out
 * again here: on every shipped topology and test topology, with hubs at
 * several degrees (1: every vertex with two out links is a hub), and on
 * random explicit lists with NICs across nodes.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/net/topo_build.h"

/* The plain search: FIFO queue, out links in creation order, GPUs do not
 * forward, a NIC entered from inside its node leads only out of it. */
struct plain {
  int32_t *prev, *queue;
  uint8_t *seen;
};

static void plain_search(const struct ds_topo *t, struct plain *p, int32_t from, int32_t to) {
  int32_t head = 0, tail = 0;
  memset(p->seen, 0, (size_t)t->n_vertices);
  p->queue[tail++] = from;
  p->seen[from] = 1;
  p->prev[from] = -1;
  while (head < tail && (to < 0 || !p->seen[to])) {
    int32_t v = p->queue[head++];
    if (v != from && t->vertex_kind[v] == DS_VERTEX_GPU) continue;
    int inside = p->prev[v] >= 0 &&
                 t->vertex_node[t->links[p->prev[v]].src] == t->vertex_node[v];
    int out = t->vertex_kind[v] == DS_VERTEX_NIC && inside;
    for (int32_t i = t->out_first[v]; i < t->out_first[v + 1]; i++) {
      int32_t l = t->out_links[i], w = t->links[l].dst;
      if (p->seen[w] || (out && t->vertex_node[w] == t->vertex_node[v])) continue;
      p->seen[w] = 1;
      p->prev[w] = l;
      p->queue[tail++] = w;
    }
  }
}

/* Every GPU pair (a sample past 64 GPUs; every dst_step-th destination),
 * and every vertex a full search
 * reaches, against the plain search. Returns the pairs compared. */
static int64_t compare_all(struct ds_topo *t, const char *what, int32_t dst_step) {
  struct plain p = {malloc((size_t)t->n_vertices * sizeof *p.prev),
                    malloc((size_t)t->n_vertices * sizeof *p.queue),
                    malloc((size_t)t->n_vertices)};
  cr_assert(p.prev && p.queue && p.seen);
  int64_t pairs = 0;
  int32_t n = t->n_gpus, step = n > 64 ? n / 61 : 1;
  for (int32_t a = 0; a < n; a += step) {
    int32_t from = t->gpu_vertex[a];
    plain_search(t, &p, from, -1);
    uint32_t st = ds__topo_search(t, from, -1);
    for (int32_t v = 0; v < t->n_vertices; v++) {
      cr_assert_eq(t->scratch_seen[v] == st, p.seen[v] == 1, "%s: GPU %d reaches vertex %d",
                   what, a, v);
      if (p.seen[v])
        cr_assert_eq(t->scratch_prev[v], p.prev[v], "%s: GPU %d, vertex %d", what, a, v);
    }
    for (int32_t b = a % dst_step; b < n; b += dst_step) {
      if (b == a) continue;
      int32_t to = t->gpu_vertex[b];
      plain_search(t, &p, from, to);
      st = ds__topo_search(t, from, to);
      cr_assert_eq(t->scratch_seen[to] == st, p.seen[to] == 1, "%s: %d -> %d reached", what,
                   a, b);
      if (!p.seen[to]) continue;
      int32_t hops = 0;
      for (int32_t v = to; v != from; v = t->links[p.prev[v]].src, hops++) {
        cr_assert(hops < t->n_vertices, "%s: %d -> %d loops", what, a, b);
        cr_assert_eq(t->scratch_seen[v], st, "%s: %d -> %d: vertex %d", what, a, b, v);
        cr_assert_eq(t->scratch_prev[v], p.prev[v], "%s: %d -> %d: link into vertex %d",
                     what, a, b, v);
      }
      pairs++;
    }
  }
  free(p.prev);
  free(p.queue);
  free(p.seen);
  return pairs;
}

static void check_file(const char *path) {
  const int32_t degrees[] = {1, 2, 3, 8, 16, 1 << 30};
  for (size_t d = 0; d < sizeof degrees / sizeof *degrees; d++) {
    struct ds_topo *t = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_topo_load(path, NULL, &t, &err), DS_OK, "%s: %s", path, err.msg);
    cr_assert_eq(ds__topo_set_hub_degree(t, degrees[d]), DS_OK);
    char what[256];
    snprintf(what, sizeof what, "%s, hubs above %d links", path, degrees[d]);
    cr_assert_gt(compare_all(t, what, t->n_gpus > 64 ? 5 : 1), 0, "%s", what);
    ds_topo_free(t);
  }
}

Test(topo_search, shipped_topologies_route_as_the_plain_search) {
  const char *files[] = {"topologies/4gpu.yaml", "topologies/2node-ib.yaml",
                         "topologies/dgx-a100.yaml", "topologies/dgx-h100.yaml",
                         "topologies/dgx1-v100.yaml", "topologies/pcie-8gpu.yaml",
                         "topologies/cluster-64x8-h100.yaml"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) check_file(files[i]);
}

Test(topo_search, test_topologies_route_as_the_plain_search) {
  const char *files[] = {"tests/data/fattree.yaml", "tests/data/list4.yaml",
                         "tests/data/mesh4.yaml",
                         "tests/data/pcie12.yaml", "tests/data/pcie4-nop2p.yaml",
                         "tests/data/rails.yaml", "tests/data/twonode-2x2.yaml",
                         "tests/data/twonode-nic.yaml", "tests/data/twonode.yaml"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) check_file(files[i]);
}

Test(topo_search, the_4096_gpu_cluster_routes_as_the_plain_search) {
  /* One switch reaching 4096 NICs: the hub the lazy expansion is for. */
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("topologies/cluster-512x8-h100.yaml", NULL, &t, &err), DS_OK,
               "%s", err.msg);
  cr_assert_gt(compare_all(t, "cluster-512x8-h100", 7), 60 * 500);
  ds_topo_free(t);
}

/* A deterministic generator (xorshift), for random explicit lists. */
static uint32_t next_random(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

Test(topo_search, random_explicit_lists_route_as_the_plain_search) {
  /* Two nodes of 3 GPUs, switches and NICs on each node and in the fabric,
   * random links (some one-way): the NIC rule and GPUs that do not forward
   * meet hubs of every degree. Lists whose GPUs cannot all reach each other
   * fail to load and are skipped; enough load. */
  char path[] = "/tmp/ds-topo-search-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  uint32_t seed = 12345;
  int loaded = 0;
  const char *kinds[] = {"gpu", "switch", "nic", "switch"};
  for (int trial = 0; trial < 400; trial++) {
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "schema_version: 1\nname: random\ngpu: TestGPU\nnodes: 2\n"
               "gpus_per_node: 3\ndevices:\n");
    /* devices 0..5 GPUs (node d / 3), then 8 others on a node or the fabric */
    int node_of[14];
    for (int d = 0; d < 14; d++) {
      int kind = d < 6 ? 0 : 1 + (int)(next_random(&seed) % 3);
      node_of[d] = d < 6 ? d / 3 : (int)(next_random(&seed) % 3) - (kind != 2);
      if (kind == 2 && node_of[d] < 0) node_of[d] = 0;
      if (kind == 3 && node_of[d] < 0) kind = 1; /* fabric switch */
      if (node_of[d] >= 0)
        fprintf(f, "  - {name: d%d, kind: %s, node: %d}\n", d, kinds[kind], node_of[d]);
      else
        fprintf(f, "  - {name: d%d, kind: %s}\n", d, kinds[kind]);
    }
    fprintf(f, "links:\n");
    int n_links = 30 + (int)(next_random(&seed) % 30);
    uint8_t used[14][14] = {{0}};
    for (int k = 0; k < n_links; k++) {
      int a = (int)(next_random(&seed) % 14), b = (int)(next_random(&seed) % 14);
      int duplex = next_random(&seed) % 4 != 0;
      if (a == b || used[a][b] || (duplex && used[b][a])) continue;
      used[a][b] = 1;
      if (duplex) used[b][a] = 1;
      fprintf(f, "  - {from: d%d, to: d%d, bw: %uGBps, lat: 1us, kind: %s%s}\n", a, b,
              1 + next_random(&seed) % 50, (node_of[a] < 0 || node_of[b] < 0) ? "ib" : "pcie",
              duplex ? "" : ", duplex: false");
    }
    fclose(f);
    const int32_t degrees[] = {1, 2, 3, 1 << 30};
    for (size_t d = 0; d < sizeof degrees / sizeof *degrees; d++) {
      struct ds_topo *t = NULL;
      struct ds_err err = {0};
      if (ds_topo_load(path, "tests/data/gpus.yaml", &t, &err) != DS_OK) break;
      cr_assert_eq(ds__topo_set_hub_degree(t, degrees[d]), DS_OK);
      char what[64];
      snprintf(what, sizeof what, "random list %d, hubs above %d links", trial, degrees[d]);
      compare_all(t, what, 1);
      loaded += d == 0;
      ds_topo_free(t);
    }
  }
  unlink(path);
  cr_assert_gt(loaded, 50, "only %d random lists loaded", loaded);
}

/* A random topology built in memory (it need not load: its GPUs may not all
 * reach each other): 2 nodes of 4 GPUs, GPUs of a node sharing switches so
 * that several have the same out links, NICs, fabric switches. */
static struct ds_topo *random_topo(uint32_t *seed) {
  struct ds_topo *t = calloc(1, sizeof *t);
  cr_assert(t);
  t->path = strdup("random");
  t->n_nodes = 2;
  t->gpus_per_node = 4;
  t->n_gpus = 8;
  t->gpu_vertex = malloc(8 * sizeof *t->gpu_vertex);
  int32_t v;
  for (int32_t g = 0; g < 8; g++) {
    cr_assert_eq(ds__topo_add_vertex(t, DS_VERTEX_GPU, g / 4, &v), DS_OK);
    t->gpu_vertex[g] = v;
  }
  for (int32_t k = 0; k < 8; k++) {
    enum ds_vertex_kind kind = k % 3 == 0 ? DS_VERTEX_NIC : DS_VERTEX_SWITCH;
    int32_t node = k < 6 ? k % 2 : -1;
    cr_assert_eq(ds__topo_add_vertex(t, kind, node < 0 && kind == DS_VERTEX_NIC ? 0 : node, &v),
                 DS_OK);
  }
  /* each GPU's links: copy another GPU's of its node half the time */
  int32_t out[8][4], n_out[8];
  for (int32_t g = 0; g < 8; g++) {
    int32_t like = g % 4 ? g - 1 - (int32_t)(next_random(seed) % (uint32_t)(g % 4)) : -1;
    if (like >= 0 && next_random(seed) % 2) {
      n_out[g] = n_out[like];
      memcpy(out[g], out[like], sizeof out[g]);
    } else {
      n_out[g] = 1 + (int32_t)(next_random(seed) % 3);
      for (int32_t k = 0; k < n_out[g]; k++) out[g][k] = 8 + (int32_t)(next_random(seed) % 8);
    }
  }
  uint8_t used[16][16] = {{0}};
  for (int32_t g = 0; g < 8; g++)
    for (int32_t k = 0; k < n_out[g]; k++) {
      int32_t w = out[g][k];
      if (used[g][w]) continue;
      used[g][w] = 1;
      cr_assert_eq(ds__topo_add_link(t, g, w, 1e9, 1e3, "pcie"), DS_OK);
      if (next_random(seed) % 3 && !used[w][g]) {
        used[w][g] = 1;
        cr_assert_eq(ds__topo_add_link(t, w, g, 1e9, 1e3, "pcie"), DS_OK);
      }
    }
  int32_t extra = 10 + (int32_t)(next_random(seed) % 40);
  for (int32_t k = 0; k < extra; k++) {
    int32_t a = 8 + (int32_t)(next_random(seed) % 8), b = (int32_t)(next_random(seed) % 16);
    if (a == b || used[a][b]) continue;
    used[a][b] = 1;
    cr_assert_eq(ds__topo_add_link(t, a, b, 1e9, 1e3, "pcie"), DS_OK);
  }
  cr_assert_eq(ds__topo_build_adjacency(t), DS_OK);
  return t;
}

Test(topo_search, reachability_by_gpu_class_is_one_search_per_gpu) {
  /* ds__topo_first_unreached (the load's check of explicit lists) against
   * the plain search from every GPU, on random topologies, most of which
   * leave some GPU unreached. */
  uint32_t seed = 777;
  int bad = 0, good = 0;
  for (int trial = 0; trial < 3000; trial++) {
    struct ds_topo *t = random_topo(&seed);
    struct plain p = {malloc((size_t)t->n_vertices * sizeof *p.prev),
                      malloc((size_t)t->n_vertices * sizeof *p.queue),
                      malloc((size_t)t->n_vertices)};
    int32_t want = -1;
    for (int32_t a = 0; a < t->n_gpus && want < 0; a++) {
      plain_search(t, &p, t->gpu_vertex[a], -1);
      for (int32_t b = 0; b < t->n_gpus; b++)
        if (b != a && !p.seen[t->gpu_vertex[b]]) want = a;
    }
    int32_t got;
    cr_assert_eq(ds__topo_first_unreached(t, &got), DS_OK);
    cr_assert_eq(got, want, "trial %d: first unreached GPU %d, the plain search says %d",
                 trial, got, want);
    if (want < 0) good++;
    else bad++;
    free(p.prev);
    free(p.queue);
    free(p.seen);
    ds_topo_free(t);
  }
  cr_assert(good > 30 && bad > 30, "%d reach all, %d do not", good, bad);
}
