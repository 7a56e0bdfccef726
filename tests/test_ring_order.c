/*
 * The one-node ring order (sim/coll/ring_rails.c) skips its search where
 * every order scores alike (ds__ring_all_orders_equal, issue #14). Where the
 * check says so, every pair's route must have the same bottleneck
 * bandwidth and latency sum (so every order, the exhaustive search's pick
 * included, ties with rank order, which the search keeps); it must say so
 * on the switch boxes and a 1024-GPU switch, and not where links differ.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/coll/ring_rails.h"

static struct ds_topo *load(const char *path) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(path, "topologies/gpus.yaml", &t, &err), DS_OK, "%s: %s", path,
               err.msg);
  return t;
}

/* Whether every ordered pair of gpus[0..n) has the route cost of the first
 * pair (every pair when n <= 64; else each member to a sample). */
static int costs_equal(struct ds_topo *t, const int32_t *gpus, int32_t n) {
  double bw0 = -1, lat0 = -1;
  int32_t step = n > 64 ? n / 31 : 1;
  for (int32_t a = 0; a < n; a++)
    for (int32_t b = a % step; b < n; b += step) {
      if (a == b) continue;
      int32_t route[64], len;
      struct ds_err err = {0};
      cr_assert_eq(ds_topo_route(t, gpus[a], gpus[b], route, 64, &len, &err), DS_OK, "%s",
                   err.msg);
      double bw = INFINITY, lat = 0;
      for (int32_t k = 0; k < len; k++) {
        if (t->links[route[k]].bw_bytes_per_s < bw) bw = t->links[route[k]].bw_bytes_per_s;
        lat += t->links[route[k]].lat_ns;
      }
      if (bw0 < 0) bw0 = bw, lat0 = lat;
      if (bw != bw0 || lat != lat0) return 0;
    }
  return 1;
}

/* The check on the first n GPUs and on every other GPU of the first 2n:
 * when it says equal, the routes agree. Returns its answer on the first n. */
static int check(struct ds_topo *t, int32_t n) {
  int32_t *gpus = malloc((size_t)n * sizeof *gpus);
  cr_assert(gpus);
  int answer = 0;
  for (int pass = 0; pass < 2; pass++) {
    int32_t stride = pass + 1;
    if ((n - 1) * stride >= t->n_gpus) break;
    for (int32_t i = 0; i < n; i++) gpus[i] = i * stride;
    int eq = ds__ring_all_orders_equal(t, gpus, n);
    if (eq) cr_assert(costs_equal(t, gpus, n), "%s: %d GPUs, stride %d", t->path, n, stride);
    if (pass == 0) answer = eq;
  }
  free(gpus);
  return answer;
}

Test(ring_order, switch_boxes_skip_the_search_and_their_routes_agree) {
  const char *yes[] = {"topologies/dgx-a100.yaml", "topologies/dgx-h100.yaml",
                       "topologies/cluster-512x8-h100.yaml", "topologies/cluster-64x8-h100.yaml"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    struct ds_topo *t = load(yes[i]);
    for (int32_t n = 3; n <= 8; n++) cr_assert(check(t, n), "%s, %d GPUs", yes[i], n);
    ds_topo_free(t);
  }
}

Test(ring_order, unequal_links_are_searched) {
  const char *no[] = {"topologies/dgx1-v100.yaml", "topologies/4gpu.yaml",
                      "tests/data/list4.yaml", "tests/data/pcie4-nop2p.yaml",
                      "tests/data/pcie12.yaml", "tests/data/mesh4.yaml"};
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
    struct ds_topo *t = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_topo_load(no[i], NULL, &t, &err), DS_OK, "%s: %s", no[i], err.msg);
    int32_t n = t->n_gpus < 8 ? t->n_gpus : 8;
    cr_assert_not(check(t, n), "%s", no[i]);
    for (int32_t m = 3; m < n; m++) check(t, m); /* equal only where the routes agree */
    ds_topo_free(t);
  }
}

Test(ring_order, a_1024_gpu_switch_skips_the_search) {
  char path[] = "/tmp/ds-ring-order-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  cr_assert(f);
  fprintf(f, "schema_version: 1\nname: star1024\ngpu: A100-SXM4-80GB\nnodes: 1\n"
             "gpus_per_node: 1024\nintra_node:\n  template: nvswitch\n  link_bw: 12.5GBps\n"
             "  link_lat: 1us\n");
  fclose(f);
  struct ds_topo *t = load(path);
  unlink(path);
  cr_assert(check(t, 1024));
  cr_assert(check(t, 300));
  ds_topo_free(t);
}
