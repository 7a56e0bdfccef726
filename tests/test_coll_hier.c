/*
 * The hierarchical all-reduce (sim/coll/coll_hier.c): ring reduce-scatter in
 * each node, ring all-reduce across nodes per local rank, ring all-gather
 * in each node; against a hand computation on 2node-ib, its bounds, and
 * the uneven nodes it refuses.
 */
#include "tests/coll_harness.h"

Test(coll_hier, two_dgx_h100_by_hand) {
  /* topologies/2node-ib.yaml, 16 ranks, L = 8 per node, M = 2 nodes.
   * Inside: GPU -> NVSwitch -> GPU, two 450 GB/s, 1.7 us links: a = 3.4 us,
   * B = 450 GB/s. Across: GPU -> its own NIC (64 GB/s, 1 us) -> IB switch
   * (400 Gb/s = 50 GB/s, 6 us) -> the peer's NIC -> GPU: a' = 14 us,
   * B' = 50 GB/s; the 8 cross-node rings (one per local rank) use 8
   * different NICs per node and share nothing. Every rank finishes each
   * phase at the same instant (uniform), so
   *   RS = AG = (L-1) a + (L-1)/L S/B,  AR = 2(M-1) a' + 2(M-1)/M (S/L)/B',
   *   T = 2 RS + AR.
   * S = 256 MiB: RS = 23800 + 521957.7 ns, AR = 28000 + 671088.6 ns,
   * T = 1790604.1 ns, within a ns per ring step. The same with the rings
   * aggregated (exact on uniform rings). */
  struct harness h;
  harness_load(&h, "topologies/2node-ib.yaml");
  double s = 256.0 * 1024 * 1024, l = 8, m = 2;
  double rs = (l - 1) * 3400 + (l - 1) / l * s / 450;
  double ar = 2 * (m - 1) * 14000 + 2 * (m - 1) / m * (s / l) / 50;
  double expect = 2 * rs + ar;
  for (int agg = 0; agg < 2; agg++) {
    int64_t got = harness_run(&h, DS_AR_HIER, 16, s, -1, 1,
                              agg ? DS_COLL_AGGREGATE : DS_COLL_FLOW, NULL);
    cr_assert_leq(fabs((double)got - expect), 20, "agg %d: %lld vs %.1f", agg,
                  (long long)got, expect);
  }
  /* One node (-g 8): no cross-node phase, RS + AG = the ring's 2(N-1) steps. */
  int64_t one = harness_run(&h, DS_AR_HIER, 8, s, -1, 1, DS_COLL_FLOW, NULL);
  cr_assert_leq(fabs((double)one - 2 * rs), 20, "%lld vs %.1f", (long long)one, 2 * rs);
  ds_topo_free(h.topo);
}

Test(coll_hier, busbw_never_exceeds_the_bottleneck) {
  /* busbw = 2(N-1)/N S/T <= what a GPU injects (harness_inject_bw). Not
   * the rank-order ring's slowest hop across nodes: only S/L per rank
   * crosses the NICs, so on twonode busbw passes the 5 GB/s NIC. */
  const char *files[] = {"tests/data/twonode.yaml", "tests/data/ring8.yaml",
                         "topologies/2node-ib.yaml", "tests/data/twonode-nic.yaml"};
  for (size_t f = 0; f < sizeof files / sizeof *files; f++)
    harness_check_inject_bound(files[f], DS_AR_HIER, -1);
}

Test(coll_hier, uneven_nodes_are_refused) {
  /* twonode with 6 ranks: 4 on node 0, 2 on node 1. */
  struct harness h;
  struct ds_err err = {0};
  harness_load(&h, "tests/data/twonode.yaml");
  cr_assert_eq(harness_new(&h, DS_AR_HIER, 6, 1e6, -1, 1, DS_COLL_FLOW, NULL, &err),
               DS_EUSAGE);
  cr_assert(strstr(err.msg, "hierarchical") && strstr(err.msg, "same number"), "%s",
            err.msg);
  harness_release(&h);
  ds_topo_free(h.topo);
}
