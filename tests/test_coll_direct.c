/*
 * The direct all-reduce (sim/coll/coll_direct.c): all-to-all reduce-scatter then
 * all-to-all all-gather, against its closed form on a star, the bus
 * bandwidth bound, and contention with the links' real routes.
 */
#include "tests/coll_harness.h"

Test(coll_direct, closed_form_on_a_switch) {
  /* ring8: every GPU one 12.5 GB/s, 1 us link each way to a switch (a = 2 us
   * rank to rank). Each phase, a rank's uplink carries N-1 shards of S/N and
   * its downlink N-1 shards, every flow at B/(N-1): a phase takes
   * (N-1)/N S/B + a, T = 2 a + 2 (N-1)/N S/B. S = 80 MB, N = 8: 4 us +
   * 2 x 7/8 x 6.4 ms = 11.204 ms; N = 2..8 within a ns per phase. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  cr_assert_eq(harness_run(&h, DS_AR_DIRECT, 8, 80e6, -1, 1, DS_COLL_FLOW, NULL), 11204000);
  for (int32_t n = 2; n <= 8; n++) {
    double s = 1e6 + 3, expect = 2 * 2000 + 2.0 * (n - 1) / n * s / 12.5;
    int64_t got = harness_run(&h, DS_AR_DIRECT, n, s, -1, 1, DS_COLL_FLOW, NULL);
    cr_assert_leq(fabs((double)got - expect), 2, "N=%d: %lld vs %.1f", n, (long long)got,
                  expect);
  }
  ds_topo_free(h.topo);
}

Test(coll_direct, busbw_never_exceeds_the_bottleneck) {
  /* busbw = 2(N-1)/N S/T <= what a GPU injects (harness_inject_bw): its one
   * switch link on ring8, pcie4 and twonode's NVSwitch plus NIC link there;
   * on mesh4 its three links, all of which the direct algorithm uses. */
  const char *files[] = {"tests/data/ring8.yaml", "tests/data/mesh4.yaml",
                         "tests/data/twonode.yaml", "tests/data/pcie4.yaml",
                         "tests/data/twonode-nic.yaml"};
  for (size_t f = 0; f < sizeof files / sizeof *files; f++)
    harness_check_inject_bound(files[f], DS_AR_DIRECT, -1);
}

Test(coll_direct, twonode_is_paced_by_the_nics) {
  /* twonode: 4 GPUs per node, 2 NICs per node at 5 GB/s (2 GPUs each).
   * Each phase, every GPU sends 4 shards of S/8 to the other node: a NIC
   * carries 2 GPUs x 4 shards = S bytes per phase each way, every other
   * link is faster: T >= 2 S / 5 GB/s. */
  struct harness h;
  harness_load(&h, "tests/data/twonode.yaml");
  double s = 64e6;
  int64_t t = harness_run(&h, DS_AR_DIRECT, 8, s, -1, 1, DS_COLL_FLOW, NULL);
  cr_assert_geq((double)t, 2 * s / 5.0, "%lld", (long long)t);
  cr_assert_leq((double)t, 2 * s / 5.0 * 1.01 + 20000, "%lld", (long long)t);
  ds_topo_free(h.topo);
}
