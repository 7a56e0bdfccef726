/*
 * NCCL's cost model (sim/coll/nccl_model.c), its choices: NCCL's latencies
 * and bus bandwidths per algorithm and protocol (hand-computed from
 * tuning.cc v2.30.7's constants) against its auto choice, a protocol set
 * (NCCL_PROTO) changing and limiting the choice, LL's cap across nodes by
 * CPU vendor, and LL128 off where rings cross PCIe. What the model derives:
 * test_nccl_model_plan.c; the constants: test_nccl_model_tuning.c; the
 * fixture: tests/nccl_fixture.h.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/coll/coll.h"
#include "sim/coll/nccl_model.h"
#include "sim/net/topo.h"
#include "tests/nccl_fixture.h"
#include "tests/support.h"

/* NCCL v2.30.7's time of (algorithm, protocol) for S bytes, recomputed here
 * from the CSV's constants as tree.cc, nvls.cc and ring.cc write them, for
 * one node of 8 Hopper GPUs (dgx-h100: 12 ring channels of 30 GB/s, the
 * NVLS graph 8 channels of 40 GB/s) or two (2node-ib; NVLS is then
 * NVLSTree: 16 ranks over the 8
 * NIC rails the program's ring runs, ds_ring_build_rails: a rail's
 * bottleneck is its 400 Gb/s = 50 GB/s NIC, the first speed of NCCL's
 * Hopper inter-node list not above it is 48 GB/s, one channel per rail, and
 * no duplication (Hopper, under 50 GB/s, more than 4 channels): 8 channels
 * of 48 GB/s). Returns INFINITY where NCCL does not run it. */
static double nccl_time_us(int nodes, int a /* 0 tree 1 ring 2 nvls */, int p, double s) {
  const double base[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
  const double nvlink[2][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};
  const double net[2][3] = {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}};
  const double corr[3][23] = {
      {1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7,
       0.8, 0.9, 1.0, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8,
       0.9, 0.9, 0.9, 0.9, 1.0, 1.0},
      {0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7,
       0.8, 0.7, 0.7, 0.8, 0.9, 0.9}};
  int n = 8 * nodes, nch = nodes == 1 ? 12 : 8;
  /* llMaxBws: one node, the Hopper row; two, the CPU vendor's row, Intel's
   * (the shipped topologies' default) 39.0, not the Hopper row's 45 */
  double bw = nodes == 1 ? 30 : 48, llmax = nodes == 1 ? 141 : 39.0;
  double lat, busbw, algbw;
  if (a == 2) {
    if (p != 2) return INFINITY;
    busbw = 8 * 40 * 0.85 * 7.0 / 8 * 2; /* 476 GB/s */
    lat = 25;
    if (nodes > 1) {
      /* NVLSTree: 8 heads (NICs) of 40 GB/s, each min(59.5, 2 x 40,
       * perChMaxNVLSTreeBw 57.7); 25 us + 2 log2(2) x 20.9 us */
      busbw = 8 * 57.7;
      lat = 25 + 2 * 20.9;
    }
    return lat + s / (busbw * n / (2.0 * (n - 1)) * 1e3);
  }
  if (a == 0) {
    busbw = fmin(nch * bw * 0.92, nch * 38.7 * (nodes == 1) + nch * 41.4 * (nodes == 2));
    if (p == 0) busbw = fmin(busbw / 3.8, llmax);
    if (p == 1) busbw = fmin(busbw * (nodes == 1 ? 7.0 / 9 : 120.0 / 128), nch * 36.7);
    algbw = busbw * 0.5;
    int lg = (int)floor(log2(floor(s / 64)));
    if (s >= 64 && lg < 23) algbw *= corr[p][lg];
    lat = base[0][p] + 2 * ((n / nodes - 1) * nvlink[0][p] + (nodes == 2) * net[0][p]);
    return lat + s / (algbw * 1e3);
  }
  busbw = nch * bw;
  if (p == 0) busbw = fmin(llmax, busbw * 0.5);
  if (p == 1) busbw = fmin(busbw * 0.92, nch * 36.7);
  int inter = nodes == 1 ? 0 : 2;
  /* across nodes an intra-node step costs at least the net overhead, 1 us
   * (3 us for Simple) */
  double intra = nodes == 1 ? nvlink[1][p] : fmax(nvlink[1][p], p == 2 ? 3.0 : 1.0);
  lat = base[1][p] + (2 * (n - 1) - inter) * intra + inter * net[1][p];
  if (p == 2 && nodes > 1 && floor(s / (nch * n)) >= 64) lat *= 1.4; /* plateau */
  return lat + s / (busbw * n / (2.0 * (n - 1)) * 1e3);
}

Test(nccl_model, tree_and_nvls_formulas_on_dgx_h100) {
  /* dgx-h100 (Hopper, one node, N = 8, 12 channels of 30 GB/s):
   *   tree busBw Simple min(360 x .92, 12 x 38.7) = 331.2 GB/s,
   *     LL min(331.2 / 3.8, 141) = 87.16, LL128 min(331.2 x 7/9, 12 x 36.7)
   *     = 257.6; lat LL 6.8 + 2 x 7 x 0.6 = 15.2 us, Simple 8.4 + 14 x 4 = 64.4;
   *   NVLS: 8 channels (one per GPU) of 40 GB/s (370.8 / 9 = 41.2 -> 40),
   *     busBw 8 x 40 x 0.85 x 7/8 x 2 = 476 GB/s, lat 25 us. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-h100.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(f.m.tree_busbw_bytes_per_s[DS_PROTO_SIMPLE], 331.2e9, 1e3);
  cr_assert_float_eq(f.m.tree_busbw_bytes_per_s[DS_PROTO_LL], 331.2e9 / 3.8, 1e3);
  cr_assert_float_eq(f.m.tree_busbw_bytes_per_s[DS_PROTO_LL128], 331.2e9 * 7 / 9, 1e3);
  cr_assert_float_eq(f.m.tree_lat_ns[DS_PROTO_LL], 15200, 1e-6);
  cr_assert_float_eq(f.m.tree_lat_ns[DS_PROTO_SIMPLE], 64400, 1e-6);
  cr_assert(f.m.nvls_ok, "%s", f.m.nvls_why);
  cr_assert_eq(f.m.nvls_channels, 8);
  cr_assert_float_eq(f.m.nvls_chan_bw_bytes_per_s, 40e9, 1);
  cr_assert_float_eq(f.m.nvls_busbw_bytes_per_s, 476e9, 1e3);
  cr_assert_float_eq(f.m.nvls_lat_ns, 25000, 1e-6);
  /* NCCL runs NVLS with Simple only. */
  const char *why;
  cr_assert(!ds_nccl_algo_available(&f.m, DS_AR_NVLS, DS_PROTO_LL, &why));
  cr_assert(!ds_nccl_algo_available(&f.m, DS_AR_DIRECT, DS_PROTO_SIMPLE, &why));
  release(&f);
  /* No NVLS on A100 (no NVLS switch); across nodes NVLSTree
   * (tests/test_nvls_tree.c works its numbers). */
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert(!f.m.nvls_ok);
  cr_assert(strstr(f.m.nvls_why, "NVLS"), "%s", f.m.nvls_why);
  release(&f);
  cr_assert_eq(build(&f, "topologies/2node-ib.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert(f.m.nvls_ok && f.m.nvls_tree, "%s", f.m.nvls_why);
  release(&f);
}

Test(nccl_model, auto_choices_match_nccls_formula) {
  /* At each size, the (algorithm, protocol) of least time by nccl_time_us
   * above, in NCCL's order (tree, ring, nvls; LL, LL128, Simple; first on
   * ties), is what ds_nccl_choose_algo picks, and its predicted time is
   * the formula's. dgx-h100: ring/LL while latency rules, NVLS from a few
   * MiB; 2node-ib: tree/LL at the smallest sizes (tree latency grows with
   * log2 of the nodes, the ring's with every rank and at least NCCL's
   * 1 us net overhead per step), the tree up to 2 MiB, NVLSTree above. */
  const char *files[] = {"topologies/dgx-h100.yaml", "topologies/2node-ib.yaml"};
  const enum ds_ar_algo algo_of[] = {DS_AR_TREE, DS_AR_RING, DS_AR_NVLS};
  const double sizes[] = {1024, 32768, 1 << 20, 4 << 20, 64.0 * (1 << 20), 1024.0 * (1 << 20)};
  int seen_nvls = 0, seen_tree = 0;
  for (int k = 0; k < 2; k++) {
    struct ds_err err = {0};
    struct fixture f;
    cr_assert_eq(build(&f, files[k], 0, &err), DS_OK, "%s", err.msg);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
      double best = INFINITY;
      int ba = 0, bp = 0;
      for (int a = 0; a < 3; a++)
        for (int p = 0; p < 3; p++) {
          double t = nccl_time_us(k + 1, a, p, sizes[i]);
          if (t < best) best = t, ba = a, bp = p;
        }
      enum ds_ar_algo ga;
      enum ds_proto gp;
      ds_nccl_choose_algo(&f.m, sizes[i], &ga, &gp);
      cr_assert_eq(ga, algo_of[ba], "%s S=%g: %s, expected %s", files[k], sizes[i],
                   ds_ar_algo_name(ga), ds_ar_algo_name(algo_of[ba]));
      cr_assert_eq((int)gp, bp, "%s S=%g: %s", files[k], sizes[i], ds_proto_name(gp));
      cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, ga, gp, sizes[i]) / 1e3, best,
                         1e-6 * best);
      seen_nvls += ga == DS_AR_NVLS;
      seen_tree += ga == DS_AR_TREE;
    }
    release(&f);
  }
  cr_assert(seen_nvls > 0 && seen_tree > 0, "nvls %d tree %d", seen_nvls, seen_tree);
}

Test(nccl_model, a_protocol_set_changes_the_ring_choice_by_hand) {
  /* NCCL_PROTO=LL,Simple (--proto LL,Simple): tuning.cc zeroes LL128's
   * bandwidth, so the choice is the least time of the others. dgx-a100's
   * ring (dgx_a100_channels_and_tuning_table: lat 15.0 / 40.6 / 56.0 us,
   * algbw busBw * 8/14 = 50.11 / 126.17 / 137.14 GB/s). Expected, because:
   *   S = 3 MB: LL 15 + 59.87 = 74.87, LL128 40.6 + 23.78 = 64.38,
   *             Simple 56 + 21.88 = 77.88 us: auto LL128, the set LL;
   *   S = 8 MB: LL 15 + 159.65 = 174.65, LL128 40.6 + 63.41 = 104.01,
   *             Simple 56 + 58.33 = 114.33 us: auto LL128, the set Simple;
   *   S = 1 MB: LL 34.96 us is the least of all: both LL. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK, "%s", err.msg);
  const double lat_us[] = {15.0, 40.6, 56.0};
  const double algbw[] = {87.7e9 * 8 / 14, 220.8e9 * 8 / 14, 240e9 * 8 / 14};
  const struct {
    double bytes;
    enum ds_proto all, set;
  } cases[] = {{3e6, DS_PROTO_LL128, DS_PROTO_LL},
               {8e6, DS_PROTO_LL128, DS_PROTO_SIMPLE},
               {1e6, DS_PROTO_LL, DS_PROTO_LL}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    double s = cases[i].bytes;
    f.m.proto_disabled = 0;
    cr_assert_eq(ds_nccl_choose(&f.m, s), cases[i].all, "S=%g", s);
    cr_assert_eq(ds_nccl_choose_proto(&f.m, DS_AR_RING, s), cases[i].all, "S=%g", s);
    f.m.proto_disabled = 1u << DS_PROTO_LL128;
    cr_assert_eq(ds_nccl_choose(&f.m, s), cases[i].set, "S=%g", s);
    cr_assert_eq(ds_nccl_choose_proto(&f.m, DS_AR_RING, s), cases[i].set, "S=%g", s);
    enum ds_proto p = cases[i].set;
    cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, DS_AR_RING, p, s) / 1e3,
                       lat_us[p] + s / algbw[p] * 1e6, 1e-6);
    /* the left-out protocol is unavailable, with the reason */
    const char *why = NULL;
    cr_assert(!ds_nccl_algo_available(&f.m, DS_AR_RING, DS_PROTO_LL128, &why));
    cr_assert(why && strstr(why, "--proto"), "%s", why ? why : "(null)");
    cr_assert(isinf(ds_nccl_predict_algo_ns(&f.m, DS_AR_RING, DS_PROTO_LL128, s)));
    cr_assert(isinf(ds_nccl_predict_coll_ns(&f.m, DS_COLL_BROADCAST, DS_PROTO_LL128, s)));
  }
  release(&f);
}

Test(nccl_model, a_protocol_set_limits_the_algorithm_choice) {
  /* With LL128 left out (NCCL_PROTO=LL,Simple, or ^LL128), the (algorithm,
   * protocol) ds_nccl_choose_algo picks is the least of nccl_time_us over
   * LL and Simple alone, in NCCL's order; and with only Simple, NVLS and
   * the tree compete with the ring on Simple. */
  const char *files[] = {"topologies/dgx-h100.yaml", "topologies/2node-ib.yaml"};
  const enum ds_ar_algo algo_of[] = {DS_AR_TREE, DS_AR_RING, DS_AR_NVLS};
  const double sizes[] = {1024, 32768, 1 << 20, 4 << 20, 64.0 * (1 << 20), 1024.0 * (1 << 20)};
  const unsigned sets[] = {1u << DS_PROTO_LL128, (1u << DS_PROTO_LL) | (1u << DS_PROTO_LL128)};
  int moved = 0;
  for (int k = 0; k < 2; k++) {
    struct ds_err err = {0};
    struct fixture f;
    cr_assert_eq(build(&f, files[k], 0, &err), DS_OK, "%s", err.msg);
    for (size_t j = 0; j < sizeof sets / sizeof *sets; j++)
      for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        double best = INFINITY;
        int ba = 0, bp = 0, all_p = -1;
        enum ds_ar_algo ga;
        enum ds_proto gp;
        f.m.proto_disabled = 0;
        ds_nccl_choose_algo(&f.m, sizes[i], &ga, &gp);
        all_p = (int)gp;
        for (int a = 0; a < 3; a++)
          for (int p = 0; p < 3; p++) {
            if (sets[j] & (1u << p)) continue;
            double t = nccl_time_us(k + 1, a, p, sizes[i]);
            if (t < best) best = t, ba = a, bp = p;
          }
        f.m.proto_disabled = sets[j];
        ds_nccl_choose_algo(&f.m, sizes[i], &ga, &gp);
        cr_assert_eq(ga, algo_of[ba], "%s S=%g set %u: %s", files[k], sizes[i], sets[j],
                     ds_ar_algo_name(ga));
        cr_assert_eq((int)gp, bp, "%s S=%g set %u: %s", files[k], sizes[i], sets[j],
                     ds_proto_name(gp));
        cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, ga, gp, sizes[i]) / 1e3, best,
                           1e-6 * best);
        moved += (int)gp != all_p;
      }
    release(&f);
  }
  cr_assert_gt(moved, 0); /* some size's choice was a left-out protocol */
}

/* A two-node H100 cluster as 2node-ib (8 GPUs and 8 NICs of 400 Gb/s per
 * node) with `nodes` nodes and, when vendor is not NULL, cpu_vendor. */
static void build_cluster(struct fixture *f, int nodes, const char *vendor) {
  char text[1024], path[] = "/tmp/ddpsim-cpu-vendor-XXXXXX";
  snprintf(text, sizeof text,
           "schema_version: 1\nname: h100-cluster\ngpu: H100-SXM5-80GB\nnodes: %d\n"
           "gpus_per_node: 8\n%s%s%s"
           "intra_node:\n  template: nvswitch\n  link_bw: 450GBps\n  link_lat: 1.7us\n"
           "inter_node:\n  template: ib\n  nics_per_node: 8\n  nic_bw: 400Gbps\n"
           "  nic_lat: 6us\n  gpu_nic_bw: 64GBps\n  gpu_nic_lat: 1us\n",
           nodes, vendor ? "cpu_vendor: " : "", vendor ? vendor : "", vendor ? "\n" : "");
  ds_test_write_temp(path, text);
  struct ds_err err = {0};
  ds_status st = build_with_table(f, path, "topologies/gpus.yaml", 0, &err);
  unlink(path);
  cr_assert_eq(st, DS_OK, "%s", err.msg);
}

Test(nccl_model, lls_cap_across_nodes_is_the_cpu_vendors) {
  /* tuning.cc: llMaxBws[index1][index2], index1 the GPU architecture on one
   * node but the CPU vendor on several (0 Intel and by default, 1 AMD).
   * Expected, because the Hopper row (141, 45, 35) is read on one node
   * only: 2 nodes Intel 39.0, AMD 22.5; 4 nodes Intel 20.4, AMD 19.0 GB/s.
   * The ring's LL busBw is min(llMaxBw, 8 channels x 48 GB/s / 2 = 192):
   * the cap. (The old model read the Hopper row: 45 and 35.) The vendor
   * also sets getNetOverhead, what a ring step inside a node costs at
   * least across nodes: 1 us Intel, 2 us AMD (x 3 for Simple), against
   * NVLink's 0.6 (LL) and 3.4 us (Simple): 1.0 / 3.4 us Intel, 2.0 / 6.0
   * us AMD. Mixed hosts (init.cc: every rank's vendor MIXED) take AMD's LL
   * row (tuning.cc reads index1 1 for AMD or MIXED) but getNetOverhead's 1
   * us (2 only for AMD itself): 22.5 / 19.0 GB/s with 1.0 / 3.4 us. */
  const struct {
    int nodes;
    const char *vendor;
    double cap_gbps, ll_step_us, simple_step_us;
  } cases[] = {{2, NULL, 39.0, 1.0, 3.4},  {2, "intel", 39.0, 1.0, 3.4},
               {2, "amd", 22.5, 2.0, 6.0}, {4, NULL, 20.4, 1.0, 3.4},
               {4, "amd", 19.0, 2.0, 6.0}, {2, "mixed", 22.5, 1.0, 3.4},
               {4, "mixed", 19.0, 1.0, 3.4}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct fixture f;
    build_cluster(&f, cases[i].nodes, cases[i].vendor);
    cr_assert_eq(f.m.nnodes, cases[i].nodes);
    cr_assert_float_eq(f.m.ll_max_bw_bytes_per_s, cases[i].cap_gbps * 1e9, 1, "case %zu", i);
    cr_assert_float_eq(f.m.busbw_bytes_per_s[DS_PROTO_LL], cases[i].cap_gbps * 1e9, 1,
                       "case %zu", i);
    cr_assert_float_eq(f.m.hw_lat_ns[DS_HOP_NVLINK][DS_PROTO_LL], cases[i].ll_step_us * 1e3,
                       1e-6, "case %zu", i);
    cr_assert_float_eq(f.m.hw_lat_ns[DS_HOP_NVLINK][DS_PROTO_SIMPLE],
                       cases[i].simple_step_us * 1e3, 1e-6, "case %zu", i);
    /* the floor is the ring's: NVLSTree's NVLink hops (the pipeline term)
     * keep the table's 3.4 us Simple step whatever the host, base latency
     * plus three of them (the old model took the ring's floored 6.0 on AMD) */
    cr_assert(f.m.nvls_ok, "case %zu", i);
    cr_assert_float_eq(f.m.nvls_hops_lat_ns, ds__nccl_nvls_base_lat_us * 1e3 + 3 * 3.4e3, 1e-6,
                       "case %zu", i);
    release(&f);
  }
  /* one node: the architecture's row whatever the host */
  cr_assert_float_eq(ds_nccl_ll_max_bw_gbps(DS_NCCL_ARCH_HOPPER, DS_CPU_VENDOR_AMD, 1), 141.0,
                     0);
  cr_assert_float_eq(ds_nccl_ll_max_bw_gbps(DS_NCCL_ARCH_BLACKWELL, DS_CPU_VENDOR_INTEL, 2),
                     39.0, 0);
  /* a vendor ddpsim does not know is refused at its key */
  char path[] = "/tmp/ddpsim-cpu-vendor-XXXXXX";
  ds_test_write_temp(path, "schema_version: 1\nname: x\ngpu: H100-SXM5-80GB\nnodes: 1\n"
                           "gpus_per_node: 2\ncpu_vendor: power\nintra_node:\n"
                           "  template: nvswitch\n  link_bw: 450GBps\n  link_lat: 1.7us\n");
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(path, "topologies/gpus.yaml", &t, &err), DS_EINPUT);
  unlink(path);
  cr_assert(strstr(err.msg, ":6:") && strstr(err.msg, "cpu_vendor") &&
                strstr(err.msg, "expected intel, amd, mixed or arm"),
            "%s", err.msg);
}

Test(nccl_model, ll128_is_off_by_default_where_rings_cross_pcie) {
  /* tuning.cc, NCCL_PROTO unset: LL128 only where the graph's typeIntra <=
   * PATH_NVB. pcie-8gpu (8 A100 behind PCIe switches): 1 ring channel of
   * 20 GB/s over PCI. At S = 512 KiB, N = 8 (nsteps 14, algbw = busBw x
   * 8/14):
   *   LL     6.6 + 14 x 1.0 = 20.6 us + S / (min(87.7, 10) x 8/14) = 112.35 us
   *   LL128  14 + 14 x 2.5 = 49 us + S / (min(18.4, 20) x 8/14)   =  98.86 us
   *   Simple 8.4 + 14 x 5.7 = 88.2 us + S / (20 x 8/14)            = 134.07 us
   * so NCCL picks LL (the old model, with LL128 on, picked LL128); with
   * LL128 named (NCCL_PROTO=LL128, or a set naming it) it is LL128. On
   * dgx-a100 (NVSwitch) LL128 stays on. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/pcie-8gpu.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.channels, 1);
  cr_assert_eq(f.m.hw_intra, DS_HOP_PCI);
  cr_assert(f.m.ll128_off_by_default);
  double s = 524288;
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, DS_AR_RING, DS_PROTO_LL, s) / 1e3,
                     20.6 + s / (10e3 * 8 / 14), 1e-6);
  cr_assert(isinf(ds_nccl_predict_algo_ns(&f.m, DS_AR_RING, DS_PROTO_LL128, s)));
  cr_assert_eq(ds_nccl_choose_proto(&f.m, DS_AR_RING, s), DS_PROTO_LL);
  const char *why = NULL;
  cr_assert(!ds_nccl_algo_available(&f.m, DS_AR_RING, DS_PROTO_LL128, &why));
  cr_assert(why && strstr(why, "only over NVLink"), "%s", why ? why : "(null)");
  ds_nccl_model_proto_env(&f.m, 1, 0); /* NCCL_PROTO naming every protocol */
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, DS_AR_RING, DS_PROTO_LL128, s) / 1e3,
                     49 + s / (18.4e3 * 8 / 14), 1e-6);
  cr_assert_eq(ds_nccl_choose_proto(&f.m, DS_AR_RING, s), DS_PROTO_LL128);
  ds_nccl_model_proto_env(&f.m, 0, 0); /* unset again: NCCL's default */
  cr_assert_eq(f.m.proto_disabled, 1u << DS_PROTO_LL128);
  release(&f);
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert(!f.m.ll128_off_by_default);
  cr_assert_eq(f.m.proto_disabled, 0u);
  release(&f);
}
