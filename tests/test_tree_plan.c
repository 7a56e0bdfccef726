/*
 * Tree collectives cache their trees and routes on the ring (struct
 * ds_ring.tree_plans) and the aggregate's leads per setting (issue #14).
 * A collective built from the cache must finish every member at the time a
 * collective on a freshly built ring does, for every tree shape, both
 * executions, with and without a protocol, sizes alternating so that the
 * memo is both hit and missed.
 */
#include "coll_harness.h"

/* Runs spec over ring (its plans kept there) or, ring NULL, over a fresh
 * ring; every member's finish into done. */
static void run(struct harness *h, struct ds_ring *ring, struct ds_coll_spec spec, int32_t n,
                int64_t *done) {
  struct ds_err err = {0};
  harness_open(h, NULL, n, DS_NET_MAXMIN);
  if (ring) {
    ds_ring_release(&h->ring);
    h->ring = *ring;
  }
  spec.topo = h->topo;
  spec.ring = &h->ring;
  spec.net = h->net;
  spec.on_done = harness_on_member;
  spec.owner = h;
  cr_assert_eq(ds_coll_new(&spec, &h->coll, &err), DS_OK, "%s", err.msg);
  harness_finish(h, n, "tree plan");
  memcpy(done, h->done_ns, (size_t)n * sizeof *done);
  if (ring) *ring = h->ring;
  else ds_ring_release(&h->ring);
  memset(&h->ring, 0, sizeof h->ring);
}

static void check(const char *path, int32_t n, enum ds_ar_algo algo) {
  struct harness h;
  harness_load(&h, path);
  struct ds_ring ring;
  harness_ring(h.topo, n, &ring);
  struct ds_coll_proto proto = {.proto = DS_PROTO_SIMPLE, .channels = 4, .wire_factor = 1.1,
                                .chan_cap_bytes_per_s = 20e9,
                                .hop_lat_ns = {600, 1000, 3000}, .start_lat_ns = 5000};
  const double sizes[] = {3e6, 64e6, 1e5, 3e6, 64e6};
  for (int model = 0; model < 2; model++)
    for (int with_proto = algo == DS_AR_NVLS; with_proto < (algo == DS_AR_REDUCE_BCAST ? 1 : 2);
         with_proto++)
      for (int root = 0; root < (algo == DS_AR_REDUCE_BCAST ? 2 : 1); root++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
          struct ds_coll_spec spec = {.kind = DS_COLL_ALLREDUCE,
                                      .model = model ? DS_COLL_AGGREGATE : DS_COLL_FLOW,
                                      .chunks = 1, .bytes = sizes[i], .root = root * (n - 1),
                                      .proto = with_proto ? &proto : NULL, .algo = algo};
          int64_t fresh[HARNESS_MAXR], cached[HARNESS_MAXR];
          run(&h, NULL, spec, n, fresh);
          run(&h, &ring, spec, n, cached);
          for (int32_t m = 0; m < n; m++)
            cr_assert_eq(cached[m], fresh[m],
                         "%s %s model %d proto %d root %d size %g: member %d %lld vs %lld",
                         path, ds_ar_algo_name(algo), model, with_proto, root, sizes[i], m,
                         (long long)cached[m], (long long)fresh[m]);
        }
  cr_assert_not_null(ring.tree_plans, "%s: no plan was cached", path);
  ds_ring_release(&ring);
  cr_assert_null(ring.tree_plans);
  ds_topo_free(h.topo);
}

Test(tree_plan, cached_double_binary_trees_run_as_fresh_ones) {
  check("topologies/2node-ib.yaml", 16, DS_AR_TREE);
  check("tests/data/twonode-nic.yaml", 4, DS_AR_TREE);
  check("topologies/dgx1-v100.yaml", 8, DS_AR_TREE);
  check("topologies/cluster-64x8-h100.yaml", 64, DS_AR_TREE);
}

Test(tree_plan, cached_stars_and_nvls_run_as_fresh_ones) {
  check("topologies/dgx-a100.yaml", 8, DS_AR_REDUCE_BCAST);
  check("topologies/dgx-h100.yaml", 8, DS_AR_NVLS);
}
