/*
 * Broadcast and reduce on a ring's rails (sim/coll/coll_chain_rails.c):
 * NCCL runs their chain on the ring channels the all-reduce runs, each rail
 * a chain in its own order carrying S/K, the root the same GPU in every
 * rail. A closed form on two rails, and DGX-1's reordered ring.
 */
#include "coll_harness.h"

#include "sim/coll/ring_rails.h"

#define MB 1e6

/* Opens h over GPUs 0..n-1 with the ring's rails planned; expects n_rails. */
static void open_rails(struct harness *h, int32_t n, int32_t n_rails) {
  struct ds_err err = {0};
  harness_open(h, NULL, n, DS_NET_MAXMIN);
  cr_assert_eq(ds_ring_plan_rails(h->topo, &h->ring, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(h->ring.n_rails, n_rails, "%s: %d rails", h->topo->path, h->ring.n_rails);
}

/* Runs a plain (no protocol) broadcast or reduce of `bytes` in `chunks`
 * pieces from root on h's ring; returns the last member's finish (ns). */
static int64_t run_chain(struct harness *h, enum ds_coll_kind kind, int32_t n, double bytes,
                         int32_t chunks, int32_t root) {
  struct ds_err err = {0};
  struct ds_coll_spec spec = {.kind = kind, .topo = h->topo, .ring = &h->ring, .net = h->net,
                              .model = DS_COLL_FLOW, .chunks = chunks, .bytes = bytes,
                              .root = root, .on_done = harness_on_member, .owner = h};
  cr_assert_eq(ds_coll_new(&spec, &h->coll, &err), DS_OK, "%s", err.msg);
  return harness_finish(h, n, "chain");
}

Test(coll_chain_rails, two_rails_closed_form) {
  /* twonode-2x2 (tests/test_ring_rails.c two_nodes_two_nics_closed_form):
   * K = 2 rails, 0 1 3 2 and 1 0 2 3; every link at B = 5 GB/s, a hop
   * inside a node a = 2 us, across nodes a' = 5 us; no link carries two
   * hops. From any root, one rail's chain crosses the nodes twice
   * (broadcast from 0: rail 0 runs 0 1 3 2, a + a' + a = 9 us; rail 1 runs
   * 0 2 3 1, a' + a + a' = 12 us), the other once. Each rail is
   * coll_chain.c's chain of S/K in C equal pieces (C = 4 is not NCCL's
   * 512 KiB cut of 80 MB), so, the slower rail finishing last:
   *   T = 12 us + (N+C-2) (S/K) / (C B) = 12 us + 6 * 40 MB / 20 GB/s
   *     = 12.012 ms.
   * Reduce alike (from root+1 in each rail's order). In rank order, one
   * chain of all of S, it took (N+C-2) S / (C B) = 24 ms and more. */
  struct harness h;
  harness_load(&h, "tests/data/twonode-2x2.yaml");
  const enum ds_coll_kind kinds[] = {DS_COLL_BROADCAST, DS_COLL_REDUCE};
  for (int k = 0; k < 2; k++)
    for (int32_t root = 0; root < 4; root++) {
      open_rails(&h, 4, 2);
      int64_t t = run_chain(&h, kinds[k], 4, 80 * MB, 4, root);
      cr_assert(llabs(t - 12012000) <= 2, "kind %d root %d: %lld ns", kinds[k], root,
                (long long)t);
      harness_release(&h);
    }
  ds_topo_free(h.topo);
}

Test(coll_chain_rails, dgx1_broadcast_runs_at_the_reordered_rings_bottleneck) {
  /* dgx1-v100: rank order's hop 3 -> 4 has no NVLink (PCIe and QPI, 16
   * GB/s); the ring's one rail, a reordered ring (0 3 2 1 5 6 7 4), is all
   * NVLink, its bottleneck 50 GB/s. A 1 GiB broadcast in NCCL's 512 KiB
   * pieces (2048) runs at that rail's pace: T = 7 a + (N+C-3) P / B +
   * r / B, so busbw = S / T is under the rail's bottleneck and within 1 %
   * of it (2053 pieces' time for 2048's bytes, plus 7 hop latencies);
   * rank order's chain ran at 15.97 GB/s. */
  struct harness h;
  harness_load(&h, "topologies/dgx1-v100.yaml");
  open_rails(&h, 8, 1);
  double bound = h.ring.rails[0].min_bw;
  cr_assert_float_eq(bound, 50e9, 1);
  double bytes = 1073741824.0;
  int64_t t = run_chain(&h, DS_COLL_BROADCAST, 8, bytes, ds_coll_chain_chunks(bytes, 1), 0);
  double busbw = bytes / ((double)t * 1e-9);
  cr_assert(busbw <= bound && busbw >= 0.99 * bound, "busbw %.3f GB/s", busbw / 1e9);
  harness_release(&h);
  ds_topo_free(h.topo);
}

Test(coll_chain_rails, protocol_channels_spread_over_the_rails) {
  /* twonode-2x2 under a protocol (parameters by hand, as
   * tests/test_coll_kinds.c broadcast_chain_under_a_protocol): channels of
   * cap 4 GB/s, wire factor 1, 0.6 us per hop, no start latency; S = 8 MB
   * in K = 4 pieces per channel. C = 2 channels: one per rail (NCCL's
   * channel j on ring channel j), a share of 4 MB, pieces of 1 MB at the
   * cap (under the 5 GB/s links), t = 250 us:
   *   T = 3 * 0.6 us + (N+K-2) t = 1.8 + 6 * 250 = 1501.8 us
   * (in rank order both channels shared each 5 GB/s hop: 2401.8 us). C = 3
   * over 2 rails: one each (3 / 2), the channel left out's part carried by
   * the others, a share of S/2: the same 1501.8 us. C = 1: only rail 0
   * runs, the whole S, pieces of 2 MB: 1.8 + 6 * 500 = 3001.8 us. */
  struct harness h;
  struct ds_err err = {0};
  harness_load(&h, "tests/data/twonode-2x2.yaml");
  const int32_t channels[] = {2, 3, 1};
  const int64_t want[] = {1501800, 1501800, 3001800};
  for (int i = 0; i < 3; i++) {
    struct ds_coll_proto p = {.proto = DS_PROTO_SIMPLE, .channels = channels[i],
                              .wire_factor = 1, .chan_cap_bytes_per_s = 4e9,
                              .hop_lat_ns = {600, 600, 600}};
    open_rails(&h, 4, 2);
    struct ds_coll_spec spec = {.kind = DS_COLL_BROADCAST, .topo = h.topo, .ring = &h.ring,
                                .net = h.net, .model = DS_COLL_FLOW, .chunks = 4,
                                .bytes = 8 * MB, .root = 0, .proto = &p,
                                .on_done = harness_on_member, .owner = &h};
    cr_assert_eq(ds_coll_new(&spec, &h.coll, &err), DS_OK, "%s", err.msg);
    int64_t t = harness_finish(&h, 4, "chain");
    cr_assert(llabs(t - want[i]) <= 2, "%d channels: %lld ns", channels[i], (long long)t);
    harness_release(&h);
  }
  ds_topo_free(h.topo);
}
