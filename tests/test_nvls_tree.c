/*
 * NCCL's NVLSTree across nodes (sim/coll/coll_tree.c SHAPE_NVLS_TREE, the
 * model in sim/coll/nccl_model.c): its closed form on a toy cluster worked by
 * hand, its network bound, determinism, NCCL's own numbers on 2node-ib and
 * cluster-64x8-h100 worked from tuning.cc, and which algorithm `--algo
 * auto` picks across nodes.
 */
#include "tests/coll_harness.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/coll/nccl_model.h"
#include "tests/support.h"

/* 2 nodes x 4 TestGPUs on an NVLS-capable NVSwitch (100 GB/s, 1 us per
 * link); a NIC per GPU, 5 GB/s and 2 us to one IB switch, 20 GB/s and
 * 0.5 us of PCIe between a GPU and its NIC. */
static const char twonode_nvls[] =
    "schema_version: 1\nname: twonode-nvls\ngpu: TestGPU\nnodes: 2\ngpus_per_node: 4\n"
    "intra_node:\n  template: nvswitch\n  link_bw: 100GBps\n  link_lat: 1us\n  nvls: true\n"
    "inter_node:\n  template: ib\n  nics_per_node: 4\n  nic_bw: 5GBps\n  nic_lat: 2us\n"
    "  gpu_nic_bw: 20GBps\n  gpu_nic_lat: 0.5us\n"
    "compute:\n  flops_efficiency: 1\n  mem_efficiency: 1\n  kernel_overhead: 0us\n"
    "  fp32_math: fp32\n";

/* NCCL's model over every GPU of h's topology, with the ring's rails. */
static void model_of(struct harness *h, struct ds_nccl_model *m) {
  struct ds_err err = {0};
  struct ds_ring r;
  int32_t n = h->topo->n_gpus;
  int32_t *gpus = malloc((size_t)n * sizeof *gpus);
  cr_assert_not_null(gpus);
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  cr_assert_eq(ds_ring_build_rails(h->topo, gpus, n, &r, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_nccl_model_build(h->topo, &r, DS_NCCL_EXTRA_NONE, m, &err), DS_OK, "%s",
               err.msg);
  ds_ring_release(&r);
  free(gpus);
}

Test(nvls_tree, closed_form_on_two_nodes) {
  /* twonode-nvls, 8 ranks, a protocol by hand: C = 4 channels (one head per
   * NIC: K = 4), each capped at c = 1 GB/s, no NVLink latency, 5 us per
   * network hop, start 3 us.
   *
   * What runs: vertices 0..7 the GPUs, 8 and 9 the switches of nodes 0 and
   * 1. In each of the 2K = 8 trees (rail r: tree 0 and its mirror) every
   * GPU's parent is its node's switch; tree 0 joins switch 9 under switch
   * 8 through head r of each node (local GPU r), tree 1 switch 8 under 9.
   * Each tree carries S/8; each flow is one channel at C c / (2K) = 0.5
   * GB/s. Loads: a GPU's switch link carries its 8 up-flows (+1 down-flow
   * as a head), 4.5 GB/s <= 100; a NIC each way 2 flows, 1 GB/s <= 5: every
   * flow runs at its cap, a piece of S/(8P) takes t = S/(8P) / 0.5 GB/s on
   * every hop.
   *
   * Closed form (as the double binary tree's): the deepest path is a GPU of
   * the child node: up to its switch (NVLink, 0 us), over the network to
   * the root switch (5 us), and the same down: H = 4 hops, 10 us. The last
   * piece reaches it at T = start + 10 us + (P + H - 1) t.
   * S = 64 MiB: S/8 = 8 MiB in P = max(8 MiB / 512 KiB, 8 x depth 2) = 16
   * pieces; t = 1048576 ns; T = 13000 + 19 t = 19935944 ns (+- 1 ns per
   * piece and hop, rounding). */
  struct harness h;
  harness_load_text(&h, twonode_nvls, "tests/data/gpus.yaml");
  struct ds_coll_proto cp = {.proto = DS_PROTO_SIMPLE, .channels = 4, .wire_factor = 1,
                             .chan_cap_bytes_per_s = 1e9,
                             .hop_lat_ns = {[DS_HOP_NET] = 5000},
                             .start_lat_ns = 3000};
  double s = 64.0 * 1024 * 1024;
  int32_t p = ds_coll_tree_pieces(s / 8, 2, 1, DS_TREE_MIN_PIECE_BYTES);
  cr_assert_eq(p, 16);
  double t = s / (8.0 * p) / 0.5;
  double expect = 3000 + 10000 + (p + 4 - 1) * t;
  cr_assert_float_eq(expect, 19935944, 1e-3);
  int64_t got = harness_run(&h, DS_AR_NVLS, 8, s, -1, 1, DS_COLL_FLOW, &cp);
  cr_assert_leq(fabs((double)got - expect), p + 4, "%lld vs %.1f", (long long)got, expect);
  /* Determinism: the same run gives the same time to the ns. */
  cr_assert_eq(harness_run(&h, DS_AR_NVLS, 8, s, -1, 1, DS_COLL_FLOW, &cp), got);
  ds_topo_free(h.topo);
}

Test(nvls_tree, bounded_by_the_nics) {
  /* With caps that never bind (1 PB/s per channel) the NICs do: on 2 nodes
   * each node roots one tree of every rail and is the leaf of the other, so
   * head r's NIC sends S/(2K) up in one and S/(2K) down in the other: S/K
   * each way at 5 GB/s, T >= S / (K 5 GB/s), algbw S/T <= 20 GB/s. The
   * switch links (100 GB/s, about S + S/K each way) bind far later, so T
   * stays within 3% of the NIC bound at S = 256 MiB. */
  struct harness h;
  harness_load_text(&h, twonode_nvls, "tests/data/gpus.yaml");
  struct ds_coll_proto cp = {.proto = DS_PROTO_SIMPLE, .channels = 4, .wire_factor = 1,
                             .chan_cap_bytes_per_s = 1e15};
  double s = 256.0 * (1 << 20), bound = s / (4 * 5.0);
  int64_t got = harness_run(&h, DS_AR_NVLS, 8, s, -1, 1, DS_COLL_FLOW, &cp);
  cr_assert_geq((double)got, bound, "%lld vs %.1f", (long long)got, bound);
  cr_assert_lt((double)got, 1.03 * bound, "%lld vs %.1f", (long long)got, bound);
  ds_topo_free(h.topo);
}

Test(nvls_tree, nccls_model_on_2node_ib) {
  /* 2node-ib (2 x 8 H100, 8 NICs of 50 GB/s per node, 450 GB/s switch
   * links), tuning.cc for NVLSTree: K = 8 heads; NCCL sees the switch link
   * at 450 x 20.6/25 = 370.8 GB/s, charged (K + 1) times, so speed <=
   * min(50, 41.2): 40 GB/s (sm90 inter list). Per channel min(40 x 0.85 x
   * 7/8 x 2 = 59.5, 40 x 2 (2 nodes) = 80, perChMaxNVLSTreeBw 57.7) = 57.7:
   * busBw = 461.6 GB/s. Latency 25 us + 2 log2(2) x 20.9 us = 66.8 us. */
  struct harness h;
  harness_load(&h, "topologies/2node-ib.yaml");
  struct ds_nccl_model m;
  model_of(&h, &m);
  cr_assert(m.nvls_ok, "%s", m.nvls_why);
  cr_assert(m.nvls_tree);
  cr_assert_eq(m.nvls_channels, 8);
  cr_assert_float_eq(m.nvls_chan_bw_bytes_per_s, 40e9, 1);
  cr_assert_float_eq(m.nvls_busbw_bytes_per_s, 461.6e9, 1e3);
  /* 8 GPUs per node: a balanced tree, no 0.85 */
  cr_assert(!m.tree_pattern_tree);
  cr_assert_float_eq(m.nvls_lat_ns, 66800, 1e-6);
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&m, DS_AR_NVLS, DS_PROTO_SIMPLE, 0), 66800,
                     1e-6);
  /* The simulation charges the network part per hop, NVLink's at the start. */
  struct ds_coll_proto cp;
  ds_nccl_algo_proto(&m, DS_AR_NVLS, DS_PROTO_SIMPLE, 1 << 30, &cp);
  cr_assert_float_eq(cp.hop_lat_ns[DS_HOP_NET], 20900, 1e-6);
  cr_assert_float_eq(cp.start_lat_ns, 25000, 1e-6);
  cr_assert_eq(cp.channels, 8);
  ds_topo_free(h.topo);
}

Test(nvls_tree, nccls_model_on_64_nodes) {
  /* cluster-64x8-h100: as 2node-ib with 64 nodes: nodes index >2, so the
   * inter-node bandwidth is not doubled and the cap is 45.5: per channel
   * min(59.5, 40, 45.5) = 40, busBw = 8 x 40 = 320 GB/s; latency 25 +
   * 2 log2(64) x 20.9 = 275.8 us. */
  struct harness h;
  harness_load(&h, "topologies/cluster-64x8-h100.yaml");
  struct ds_nccl_model m;
  model_of(&h, &m);
  cr_assert(m.nvls_ok && m.nvls_tree, "%s", m.nvls_why);
  cr_assert_eq(m.nnodes, 64);
  cr_assert_float_eq(m.nvls_busbw_bytes_per_s, 320e9, 1e3);
  cr_assert_float_eq(m.nvls_lat_ns, 275800, 1e-6);
  ds_topo_free(h.topo);
}

Test(nvls_tree, auto_picks_as_nccls_table_on_2node_ib) {
  /* NCCL's times on 2node-ib (N = 16, 8 channels of 48 GB/s), worked from
   * tuning.cc:
   *   8 B:   tree/LL 6.8 + 2 (7 x 0.6 + 1 x 5.0) = 25.2 us; ring/LL 6.6 +
   *          28 x max(0.6, 1.0 net overhead) + 2 x 2.7 = 40.0 us; NVLSTree
   *          66.8 us: tree.
   *   32 KiB: tree/LL 25.2 us + 32768 B / (min(384 x 0.92, 8 x 41.4) / 3.8
   *          / 2 x 0.5 (correction at 2^9 x 64 B)) = 25.2 + 1.5 = 26.7 us
   *          against ring/LL 40.0 + 32768 / (min(45, 192) x 16/30) = 41.4 us:
   *          tree.
   *   1 GiB: NVLSTree 66.8 us + 2^30 / (461.6 x 16/30 GB/s) = 4428.3 us;
   *          ring/Simple 1.4 x (8.4 + 28 x max(3.4, 3.0) + 2 x 14) us + 2^30 / (384 x
   *          16/30 GB/s) = 5420.6 us; tree/Simple 2^30 / (331.2/2) = 6484 us:
   *          NVLSTree ("nvls"). */
  struct harness h;
  harness_load(&h, "topologies/2node-ib.yaml");
  struct ds_nccl_model m;
  model_of(&h, &m);
  enum ds_ar_algo a;
  enum ds_proto p;
  ds_nccl_choose_algo(&m, 8, &a, &p);
  cr_assert(a == DS_AR_TREE && p == DS_PROTO_LL, "%d %d", a, p);
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&m, DS_AR_TREE, DS_PROTO_LL, 8), 25200, 1);
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&m, DS_AR_RING, DS_PROTO_LL, 8), 40000, 1);
  ds_nccl_choose_algo(&m, 32768, &a, &p);
  cr_assert(a == DS_AR_TREE && p == DS_PROTO_LL, "%d %d", a, p);
  double gib = 1 << 30;
  ds_nccl_choose_algo(&m, gib, &a, &p);
  cr_assert(a == DS_AR_NVLS && p == DS_PROTO_SIMPLE, "%d %d", a, p);
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&m, DS_AR_NVLS, DS_PROTO_SIMPLE, gib),
                     66800 + gib / (461.6 * 16 / 30), 1);
  ds_topo_free(h.topo);
}

/* 2 nodes x 4 H100 on an NVSwitch, one NIC per node. */
static const char twonode_one_nic[] =
    "schema_version: 1\nname: twonode-one-nic\ngpu: H100-SXM5-80GB\nnodes: 2\n"
    "gpus_per_node: 4\n"
    "intra_node:\n  template: nvswitch\n  link_bw: 450GBps\n  link_lat: 1us\n"
    "inter_node:\n  template: ib\n  nics_per_node: 1\n  nic_bw: 50GBps\n  nic_lat: 2us\n"
    "  gpu_nic_bw: 64GBps\n  gpu_nic_lat: 0.5us\n"
    "compute:\n  flops_efficiency: 1\n  mem_efficiency: 1\n  kernel_overhead: 0us\n"
    "  fp32_math: fp32\n";

Test(nvls_tree, needs_two_heads_per_node) {
  /* One NIC per node: NCCL's NVLSTree needs at least 2 channels (heads),
   * so NCCL's model refuses it and says why. */
  struct harness h;
  harness_load_text(&h, twonode_one_nic, "topologies/gpus.yaml");
  cr_assert(h.topo->nvls);
  struct ds_nccl_model m;
  model_of(&h, &m);
  cr_assert(!m.nvls_ok);
  cr_assert(strstr(m.nvls_why, "2 heads"), "%s", m.nvls_why);
  const char *why = NULL;
  cr_assert(!ds_nccl_algo_available(&m, DS_AR_NVLS, DS_PROTO_SIMPLE, &why));
  enum ds_ar_algo a;
  enum ds_proto p;
  ds_nccl_choose_algo(&m, 1 << 30, &a, &p);
  cr_assert_neq(a, DS_AR_NVLS);
  ds_topo_free(h.topo);
}

/* 4 nodes x 1 H100, one 50 GB/s NIC each (64 GB/s of PCIe to it), one IB
 * switch: the smallest cluster where NCCL's tree spans nodes. */
static const char fournode_one_gpu[] =
    "schema_version: 1\nname: fournode-one-gpu\ngpu: H100-SXM5-80GB\nnodes: 4\n"
    "gpus_per_node: 1\n"
    "intra_node:\n  template: nvswitch\n  link_bw: 450GBps\n  link_lat: 1us\n"
    "inter_node:\n  template: ib\n  nics_per_node: 1\n  nic_bw: 50GBps\n  nic_lat: 2us\n"
    "  gpu_nic_bw: 64GBps\n  gpu_nic_lat: 0.5us\n"
    "compute:\n  flops_efficiency: 1\n  mem_efficiency: 1\n  kernel_overhead: 0us\n"
    "  fp32_math: fp32\n";

Test(nvls_tree, double_binary_tree_over_four_single_gpu_nodes) {
  /* fournode-one-gpu, tree/Simple under NCCL's model (no extras).
   *
   * NCCL's numbers: the ring's one network hop per node is 50 GB/s, so 1
   * channel of 48 GB/s, duplicated (48 >= 25, one channel) to 2 of 24:
   * busBw 48 GB/s; tree busBw min(48 x 0.92, 2 x 36.0 (Hopper, > 2 nodes))
   * = 44.16 GB/s, times 0.85 (tuning.cc: one GPU per node makes the tree
   * graph's pattern NCCL_TOPO_PATTERN_TREE, search.cc) = 37.536 GB/s; at S
   * = 64 MiB the correction is 0.8 (2^20 x 64 B): A = 37.536 / 2 x 0.8 =
   * 15.0144 GB/s. Latency 8.4 + 2 (0 + log2(4) x 14) = 64.4 us. NCCL: T =
   * 64.4 us + S/A = 4534033.4 ns (the old model, without the 0.85:
   * 3863587.3).
   *
   * What runs: NCCL's trees over 4 nodes, 0 <- 2 <- {1, 3} and its mirror
   * 3 <- 1 <- {2, 0}, S/2 each; one channel per tree (C = ceil(2/2)), its
   * cap A/2 per stream: node 2 sends 4 streams (up and two down in tree 0,
   * up in tree 1), 2A = 30.0 GB/s <= 50, so every stream runs at A/2 and a
   * piece of S/(2P) takes t = (S/(2P)) / (A/2) on every hop. The deepest
   * path is a leaf's: 2 network hops up, 2 down (H = 4), each charged
   * hwLat[NET][Tree][Simple] = 14 us, and baseLat 8.4 us at the start:
   *   T = 8.4 us + 4 x 14 us + (P + H - 1) t,
   * NCCL's time plus the pipeline's fill (H - 1) t. P = 64 (32 MiB / 512
   * KiB), t = 69838.0 ns, T = 4743547.5 ns (+- 1 ns per piece and hop). */
  struct harness h;
  harness_load_text(&h, fournode_one_gpu, "topologies/gpus.yaml");
  struct ds_nccl_model m;
  model_of(&h, &m);
  cr_assert_eq(m.nnodes, 4);
  cr_assert_eq(m.channels, 2);
  cr_assert(m.tree_pattern_tree);
  cr_assert_float_eq(m.tree_busbw_bytes_per_s[DS_PROTO_SIMPLE], 37.536e9, 1e3);
  cr_assert_float_eq(m.tree_lat_ns[DS_PROTO_SIMPLE], 64400, 1e-6);
  double s = 64.0 * 1024 * 1024, a = 15.0144; /* GB/s = bytes per ns */
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&m, DS_AR_TREE, DS_PROTO_SIMPLE, s), 4534033.4,
                     1);
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&m, DS_AR_TREE, DS_PROTO_SIMPLE, s),
                     64400 + s / a, 1);
  struct ds_coll_proto cp;
  ds_nccl_algo_proto(&m, DS_AR_TREE, DS_PROTO_SIMPLE, s, &cp);
  int32_t p = ds_coll_tree_pieces(s / 2, 2, 1, DS_TREE_MIN_PIECE_BYTES);
  cr_assert_eq(p, 64);
  double t = s / (2.0 * p) / (a / 2);
  double expect = 8400 + 4 * 14000 + (p + 3) * t;
  int64_t got = harness_run(&h, DS_AR_TREE, 4, s, -1, 1, DS_COLL_FLOW, &cp);
  cr_assert_leq(fabs((double)got - expect), p + 4, "%lld vs %.1f", (long long)got, expect);
  cr_assert_eq(harness_run(&h, DS_AR_TREE, 4, s, -1, 1, DS_COLL_FLOW, &cp), got);
  /* busbw never above the bottleneck: every rank sends at least 2(N-1)/N S
   * (Patarasuk and Yuan) through its one 50 GB/s NIC: busbw <= 50 GB/s. */
  cr_assert_leq(harness_busbw(4, s, got), 50e9);
  ds_topo_free(h.topo);
}

Test(nvls_tree, auto_picks_the_tree_on_single_gpu_nodes) {
  /* fournode-one-gpu: with one GPU per node NCCL charges the ring's
   * network steps the tree's network latency ("latencies are fully
   * exposed"): ring/LL 6.6 + 6 x 5.0 = 36.6 us against tree/LL 6.8 + 2 x
   * log2(4) x 5.0 = 26.8 us; NCCL runs the tree at small sizes (with the
   * ring's own 2.7 us the ring would win at 22.8 us). No NVLSTree: one
   * NIC (head) per node. */
  struct harness h;
  harness_load_text(&h, fournode_one_gpu, "topologies/gpus.yaml");
  struct ds_nccl_model m;
  model_of(&h, &m);
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&m, DS_AR_RING, DS_PROTO_LL, 0), 36600, 1e-6);
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&m, DS_AR_TREE, DS_PROTO_LL, 0), 26800, 1e-6);
  enum ds_ar_algo a;
  enum ds_proto pr;
  ds_nccl_choose_algo(&m, 1024, &a, &pr);
  cr_assert(a == DS_AR_TREE && pr == DS_PROTO_LL, "%d %d", a, pr);
  cr_assert(!m.nvls_ok);
  ds_topo_free(h.topo);
}

Test(nvls_tree, aggregate_equals_per_flow_where_caps_bind) {
  /* 2node-ib under NCCL's NVLSTree numbers (no extras): a flow's cap is
   * A/(2K) = 246.2/16 = 15.4 GB/s; the busiest links (a head's switch link,
   * 16 up-streams and its multicast store: 17 x 15.4 = 262 GB/s <= 450; a
   * NIC, 2 streams) leave every stream at its cap, so the aggregated
   * execution (one flow per tree after the per-flow tree's lead, sim/coll/
   * coll_tree.c) ends when the per-flow one does, to rounding. */
  struct harness h;
  harness_load(&h, "topologies/2node-ib.yaml");
  struct ds_nccl_model m;
  model_of(&h, &m);
  double s = 64.0 * 1024 * 1024;
  struct ds_coll_proto cp;
  ds_nccl_algo_proto(&m, DS_AR_NVLS, DS_PROTO_SIMPLE, s, &cp);
  int64_t flow = harness_run(&h, DS_AR_NVLS, 16, s, -1, 1, DS_COLL_FLOW, &cp);
  int64_t agg = harness_run(&h, DS_AR_NVLS, 16, s, -1, 1, DS_COLL_AGGREGATE, &cp);
  cr_assert_leq(llabs(flow - agg), 64, "flow %lld aggregate %lld", (long long)flow,
                (long long)agg);
  ds_topo_free(h.topo);
}
