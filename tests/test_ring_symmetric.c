/*
 * The symmetric per-flow ring (sim/coll/coll_ring.c,
 * ds__coll_ring_fold_symmetric): where every hop crosses links of its own,
 * alike hop for hop, and the members enter at once on a net of their own,
 * only member 0's flows run and stand for every member's. Checked against
 * the ring that runs every member: each member's finish to the nanosecond,
 * with 1/N of the flows solved.
 */
#include "coll_harness.h"

#include "sim/coll/coll_impl.h"

#define MB 1e6

/* Runs `kind` per flow over GPUs 0..n-1 of h's topology on a net of `mode`
 * (proto: NULL for none), under the alone promise when `alone`; every member's finish into
 * done[0..n). Returns the flow rates the net computed (ds__net_solved). */
static uint64_t run_ring(struct harness *h, enum ds_net_mode mode, enum ds_coll_kind kind,
                         int32_t n, double bytes, int32_t chunks,
                         const struct ds_coll_proto *proto, int alone, int64_t *done) {
  struct ds_err err = {0};
  harness_open(h, NULL, n, mode);
  struct ds_coll_spec spec = {.kind = kind, .topo = h->topo, .ring = &h->ring, .net = h->net,
                              .model = DS_COLL_FLOW, .chunks = chunks, .bytes = bytes,
                              .root = -1, .proto = proto, .on_done = harness_on_member,
                              .owner = h, .alone = alone};
  cr_assert_eq(ds_coll_new(&spec, &h->coll, &err), DS_OK, "%s", err.msg);
  for (int32_t i = 0; i < n; i++) cr_assert_eq(ds_coll_enter(h->coll, i), DS_OK);
  cr_assert_eq(ds_engine_run(h->eng, INT64_MAX), DS_OK);
  cr_assert_eq(ds_net_flows_pending(h->net), 0);
  uint64_t solved = ds__net_solved(h->net);
  for (int32_t i = 0; i < n; i++) {
    cr_assert_geq(h->done_ns[i], 0, "member %d never finished", i);
    done[i] = h->done_ns[i];
  }
  harness_release(h);
  return solved;
}

/* Every member's finish folded and not, alike, under max-min and
 * alpha-beta; the folded run solves 1/n of the flows when `folds`, all of
 * them otherwise. */
static void check_ring(struct harness *h, int32_t n, int folds) {
  struct ds_coll_proto p = {.proto = DS_PROTO_SIMPLE, .channels = 2, .wire_factor = 1.2,
                            .chan_cap_bytes_per_s = 5e9, .hop_lat_ns = {600, 1000, 2700},
                            .start_lat_ns = 5000};
  const struct ds_coll_proto *protos[] = {NULL, &p};
  const enum ds_coll_kind kinds[] = {DS_COLL_ALLREDUCE, DS_COLL_ALLGATHER,
                                     DS_COLL_REDUCESCATTER};
  const double sizes[] = {0, 4, 1000, 24 * MB + 7};
  const int32_t chunks[] = {1, 3};
  const enum ds_net_mode modes[] = {DS_NET_MAXMIN, DS_NET_CONSTANT};
  for (int md = 0; md < 2; md++)
    for (int k = 0; k < 3; k++)
      for (int q = 0; q < 2; q++)
        for (int s = 0; s < 4; s++)
          for (int c = 0; c < 2; c++) {
            int64_t all[HARNESS_MAXR], one[HARNESS_MAXR];
            uint64_t n_all =
                run_ring(h, modes[md], kinds[k], n, sizes[s], chunks[c], protos[q], 0, all);
            uint64_t n_one =
                run_ring(h, modes[md], kinds[k], n, sizes[s], chunks[c], protos[q], 1, one);
            for (int32_t i = 0; i < n; i++)
              cr_assert_eq(one[i], all[i],
                           "%s n %d net %d kind %d proto %d bytes %.0f chunks %d member %d: "
                           "%lld alone, %lld not",
                           h->topo->path, n, md, k, q, sizes[s], chunks[c], i, (long long)one[i],
                           (long long)all[i]);
            cr_assert_eq(n_all, folds ? n * n_one : n_one, "%s n %d: %llu flows, %llu alone",
                         h->topo->path, n, (unsigned long long)n_all,
                         (unsigned long long)n_one);
          }
}

/* Whether the ring over GPUs 0..n-1 of h's topology is symmetric. */
static int symmetric(struct harness *h, int32_t n) {
  struct ds_ring r;
  harness_ring(h->topo, n, &r);
  int s = ds__ring_symmetric(h->topo, &r);
  ds_ring_release(&r);
  return s;
}

Test(ring_symmetric, one_switch_runs_member_zero_for_all) {
  /* ring8: every GPU behind its own 12.5 GB/s, 1 us up and down links to
   * one switch; hop i crosses GPU i's up link and GPU i+1's down link, no
   * other hop does, and all hops are alike. Expected: every member's
   * finish as when all run, to the ns, under both network models, every
   * kind, protocol, size
   * (0 and 4 bytes included) and chunking, with N times fewer flows. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  for (int32_t n = 2; n <= 8; n += 3) {
    cr_assert(symmetric(&h, n), "ring8 over %d GPUs", n);
    check_ring(&h, n, 1);
  }
  ds_topo_free(h.topo);
  /* an NVSwitch machine: each GPU's links to the switch fabric alike */
  harness_load(&h, "topologies/dgx-h100.yaml");
  cr_assert(symmetric(&h, 8));
  check_ring(&h, 8, 1);
  ds_topo_free(h.topo);
}

Test(ring_symmetric, unlike_hops_run_every_member) {
  /* One GPU's up link at half speed: its hop is unlike the others, so
   * every member runs even under the alone promise, with the same finishes
   * as without it. A PCIe tree (hops share the switches' links), the
   * hybrid cube-mesh and two nodes (NVLink and network hops) do not fold. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  struct ds_ring r;
  harness_ring(h.topo, 8, &r);
  h.topo->links[r.hop_links[r.hop_first[3]]].bw_bytes_per_s /= 2;
  cr_assert(!ds__ring_symmetric(h.topo, &r));
  ds_ring_release(&r);
  check_ring(&h, 8, 0);
  ds_topo_free(h.topo);
  const char *paths[] = {"tests/data/pcie4.yaml", "topologies/dgx1-v100.yaml",
                         "topologies/2node-ib.yaml"};
  const int32_t ns[] = {4, 8, 16};
  for (int t = 0; t < 3; t++) {
    harness_load(&h, paths[t]);
    cr_assert(!symmetric(&h, ns[t]), "%s", paths[t]);
    ds_topo_free(h.topo);
  }
}

Test(ring_symmetric, only_a_fresh_per_flow_ring_folds) {
  /* The aggregated ring is one flow already; a ring a member has entered
   * has started its flows. Neither is changed. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  harness_open(&h, NULL, 8, DS_NET_MAXMIN);
  struct ds_coll *c = NULL;
  cr_assert_eq(ds__coll_ring_new(&h.ring, h.net, DS_COLL_AGGREGATE, 1, 14, MB, NULL, 0,
                                 harness_on_member, &h, &c), DS_OK);
  cr_assert(!ds__coll_ring_fold_symmetric(c, h.topo));
  ds_coll_free(c);
  cr_assert_eq(ds__coll_ring_new(&h.ring, h.net, DS_COLL_FLOW, 1, 14, MB, NULL, 0,
                                 harness_on_member, &h, &c), DS_OK);
  cr_assert_eq(ds_coll_enter(c, 0), DS_OK);
  cr_assert(!ds__coll_ring_fold_symmetric(c, h.topo));
  ds_coll_free(c);
  cr_assert_eq(ds__coll_ring_new(&h.ring, h.net, DS_COLL_FLOW, 1, 14, MB, NULL, 0,
                                 harness_on_member, &h, &c), DS_OK);
  cr_assert(ds__coll_ring_fold_symmetric(c, h.topo));
  ds_coll_free(c);
  harness_release(&h);
  ds_topo_free(h.topo);
}
