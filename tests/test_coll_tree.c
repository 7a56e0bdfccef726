/*
 * Tree all-reduces (sim/coll/coll_tree.c): NCCL's double binary tree, the naive
 * reduce + broadcast and NVLS, against closed forms derived here, the bus
 * bandwidth bound, and what they refuse; the aggregated double binary tree
 * against the per-flow one.
 */
#include "tests/coll_harness.h"

#include <stdlib.h>
#include <unistd.h>

#include "sim/cmd/collbench.h"
#include "sim/coll/nccl_model.h"
#include "tests/support.h"

Test(coll_tree, pieces_follow_the_rule) {
  /* ceil(S / 512 KiB), raised to min(8 depth, S / m), at most 1024; m = 1 KiB
   * (Simple, the plain tree) or a line (LL, LL128). */
  const double kib = DS_TREE_MIN_PIECE_BYTES;
  cr_assert_eq(ds_coll_tree_pieces(8, 7, 1, kib), 1);                 /* below 1 KiB */
  cr_assert_eq(ds_coll_tree_pieces(10240, 7, 1, kib), 10);            /* 10 KiB / 1 KiB */
  cr_assert_eq(ds_coll_tree_pieces(1 << 20, 7, 1, kib), 56);          /* 8 x depth 7 */
  cr_assert_eq(ds_coll_tree_pieces(64.0 * (1 << 20), 3, 1, kib), 128); /* 64 MiB / 512 KiB */
  cr_assert_eq(ds_coll_tree_pieces(8.0 * (1 << 30), 3, 1, kib), 1024); /* capped */
  cr_assert_eq(ds_coll_tree_pieces(80, 7, 5, kib), 5);                /* --ring-chunks */
  /* at most a 4-byte element a piece: 8 B holds two (ds_coll_pieces_bound) */
  cr_assert_eq(ds_coll_tree_pieces(8, 7, 5, kib), 2);
  /* LL forwards line by line (8 B of payload), LL128 warp slice by warp
   * slice (1920 B: recvReduceSendCopy waits on all 16 lines of a warp's
   * 2 KiB): 512 B of LL at depth 8 is 64 lines, so 8 x depth = 64 pieces;
   * 8 B is one line; 15360 B of LL128 is 8 slices, 960 B under one. Simple
   * and the plain tree keep 1 KiB. */
  struct ds_coll_proto ll = {.proto = DS_PROTO_LL}, ll128 = {.proto = DS_PROTO_LL128};
  struct ds_coll_proto simple = {.proto = DS_PROTO_SIMPLE};
  cr_assert_float_eq(ds_coll_tree_min_piece_bytes(&ll), 8, 1e-12);
  cr_assert_float_eq(ds_coll_tree_min_piece_bytes(&ll128), 1920, 1e-12);
  cr_assert_float_eq(ds_coll_tree_min_piece_bytes(&simple), 1024, 1e-12);
  cr_assert_float_eq(ds_coll_tree_min_piece_bytes(NULL), 1024, 1e-12);
  cr_assert_eq(ds_coll_tree_pieces(512, 8, 1, ds_coll_tree_min_piece_bytes(&ll)), 64);
  cr_assert_eq(ds_coll_tree_pieces(8, 8, 1, ds_coll_tree_min_piece_bytes(&ll)), 1);
  cr_assert_eq(ds_coll_tree_pieces(15360, 8, 1, ds_coll_tree_min_piece_bytes(&ll128)), 8);
  cr_assert_eq(ds_coll_tree_pieces(960, 8, 1, ds_coll_tree_min_piece_bytes(&ll128)), 1);
  cr_assert_eq(ds_coll_tree_pieces(512, 8, 1, ds_coll_tree_min_piece_bytes(&simple)), 1);
}

Test(coll_tree, nccls_double_binary_tree) {
  /* trees.cc: tree 0's parent of r is (r ^ b) | 2b, or r ^ b past the end
   * (b: r's lowest set bit), node 0 the root. 8 nodes: 0 <- 4, 4 <- 2, 6,
   * 2 <- 1, 3, 6 <- 5, 7. Tree 1 mirrors it (even count): r's parent is
   * 7 - parent0(7 - r), so the odd nodes, leaves of tree 0, are tree 1's
   * inner nodes and the other way round. 5 nodes (odd): tree 1 shifts
   * tree 0 by one, parent1(r) = parent0(r - 1) + 1 (mod 5). */
  const int32_t t0_8[] = {-1, 2, 4, 2, 0, 6, 4, 6}, t1_8[] = {1, 3, 1, 7, 5, 3, 5, -1};
  const int32_t t0_5[] = {-1, 2, 4, 2, 0}, t1_5[] = {1, -1, 3, 0, 3};
  for (int32_t r = 0; r < 8; r++) {
    cr_assert_eq(ds_coll_dtree_parent(0, r, 8), t0_8[r], "tree 0 of 8, node %d", r);
    cr_assert_eq(ds_coll_dtree_parent(1, r, 8), t1_8[r], "tree 1 of 8, node %d", r);
  }
  for (int32_t r = 0; r < 5; r++) {
    cr_assert_eq(ds_coll_dtree_parent(0, r, 5), t0_5[r], "tree 0 of 5, node %d", r);
    cr_assert_eq(ds_coll_dtree_parent(1, r, 5), t1_5[r], "tree 1 of 5, node %d", r);
  }
  /* 2 nodes: each tree's root is the other's leaf. */
  cr_assert_eq(ds_coll_dtree_parent(0, 1, 2), 0);
  cr_assert_eq(ds_coll_dtree_parent(1, 0, 2), 1);
}

Test(coll_tree, pipelined_chain_closed_form_on_a_mesh) {
  /* mesh4: every ordered pair of GPUs has its own 10 GB/s, 2 us link. On one
   * node both trees are the chain 0 <- 1 <- 2 <- 3, each carrying S/2 in C
   * pieces; their flows on a link go together, each at B/2, so a piece
   * holds its link t = (S/2C) / (B/2) = S/(C B). Up streams (i -> i-1) and
   * down streams (i-1 -> i) never share a link here. Member 3 - p (p hops
   * from the leaf) sends piece c up at p (t + a) + c t (its previous piece
   * has left, and piece c arrives t + a after its child sent it); the root
   * has piece c at (N-1)(t + a) + c t and sends it down at once; the member
   * q hops below the root sends it at (N-1+q)(t + a) + c t. The leaf gets
   * the last piece at 2(N-1)(t + a) + (C-1) t, after everyone else is done:
   *   T = 2(N-1) a + (2N + C - 3) t,  t = S/(C B).
   * S = 64 MiB: S/2 = 32 MiB in C = 64 pieces of 512 KiB (depth 3: 8 x 3 =
   * 24 < 64); t = 67108864 / (64 x 10) = 104857.6 ns;
   * T = 6 x 2000 + 69 x 104857.6 = 7247174.4 ns, within 1 ns per step
   * (each data phase rounds to the ns). */
  struct harness h;
  harness_load(&h, "tests/data/mesh4.yaml");
  double s = 64.0 * 1024 * 1024, b = 10, a = 2000;
  int32_t n = 4, c = ds_coll_tree_pieces(s / 2, n - 1, 1, DS_TREE_MIN_PIECE_BYTES);
  cr_assert_eq(c, 64);
  double t = s / (c * b);
  double expect = 2 * (n - 1) * a + (2 * n + c - 3) * t;
  int64_t got = harness_run(&h, DS_AR_TREE, n, s, -1, 1, DS_COLL_FLOW, NULL);
  cr_assert_leq(fabs((double)got - expect), 2 * n + c, "%lld vs %.1f", (long long)got, expect);
  /* The same with two ranks: one hop up, one down. */
  c = ds_coll_tree_pieces(s / 2, 1, 1, DS_TREE_MIN_PIECE_BYTES);
  expect = 2 * a + (4 + c - 3) * (s / (c * b));
  got = harness_run(&h, DS_AR_TREE, 2, s, -1, 1, DS_COLL_FLOW, NULL);
  cr_assert_leq(fabs((double)got - expect), 2 * 2 + c, "%lld vs %.1f", (long long)got, expect);
  ds_topo_free(h.topo);
}

Test(coll_tree, one_piece_on_a_switch) {
  /* ring8 (a star: every GPU one 12.5 GB/s, 1 us link each way to the
   * switch, alpha = 2 us rank to rank). S = 2 KiB: each tree's 1 KiB is one
   * piece, so data moves one hop at a time: up 7 hops, down 7 hops, both
   * trees' pieces sharing the sender's link (B/2 each for S/2):
   *   T = 2(N-1) (a + S/B) = 14 x (2000 + 163.84) = 30293.8 ns (+- 1 per hop). */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  double expect = 14 * (2000 + 2048 / 12.5);
  int64_t got = harness_run(&h, DS_AR_TREE, 8, 2048, -1, 1, DS_COLL_FLOW, NULL);
  cr_assert_leq(fabs((double)got - expect), 14, "%lld vs %.1f", (long long)got, expect);
  ds_topo_free(h.topo);
}

Test(coll_tree, reduce_broadcast_is_bottlenecked_by_the_root) {
  /* Not pipelined: the N-1 others send S to the root at once, sharing the
   * root's downlink (B/(N-1) each), then the root sends S to each, sharing
   * its uplink: T = 2 a + 2 (N-1) S/B. ring8, S = 80 MB: 4 us + 14 x 6.4 ms
   * = 89.604 ms; every root gives the same; N = 2..8. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  for (int32_t root = 0; root < 8; root += 3)
    cr_assert_eq(harness_run(&h, DS_AR_REDUCE_BCAST, 8, 80e6, root, 1, DS_COLL_FLOW, NULL),
                 89604000);
  for (int32_t n = 2; n <= 8; n++) {
    double expect = 2 * 2000 + 2.0 * (n - 1) * 1e6 / 12.5;
    int64_t got = harness_run(&h, DS_AR_REDUCE_BCAST, n, 1e6, 0, 1, DS_COLL_FLOW, NULL);
    cr_assert_leq(fabs((double)got - expect), 2, "N=%d: %lld vs %.1f", n, (long long)got,
                  expect);
  }
  ds_topo_free(h.topo);
}

Test(coll_tree, busbw_never_exceeds_the_bottleneck) {
  /* Tree and reduce-broadcast reduce in the GPUs: busbw = 2(N-1)/N S/T <=
   * what a GPU injects (harness_inject_bw: on ring8, twonode and pcie4 the
   * GPU's one switch link, also the ring's bottleneck there; on mesh4 its
   * three links, of which the tree's chain uses two). */
  const char *files[] = {"tests/data/ring8.yaml", "tests/data/mesh4.yaml",
                         "tests/data/twonode.yaml", "tests/data/pcie4.yaml",
                         "tests/data/twonode-nic.yaml"};
  const enum ds_ar_algo algos[] = {DS_AR_TREE, DS_AR_REDUCE_BCAST};
  for (size_t f = 0; f < sizeof files / sizeof *files; f++)
    for (size_t a = 0; a < 2; a++) harness_check_inject_bound(files[f], algos[a], 0);
}

Test(coll_tree, double_tree_uses_both_nics_across_nodes) {
  /* twonode-nic: 2 nodes x 4 GPUs on a 100 GB/s NVSwitch, 2 NICs per node
   * at 5 GB/s (GPUs 0,1 on NIC 0; 2,3 on NIC 1). Two rails, one per NIC:
   * rail r's two trees join the nodes at GPU 2r of each, S/4 per tree. On 2
   * nodes each node is the root of one tree and the leaf of the other, so
   * each NIC carries S/4 + S/4 = S/2 each way, (S/2)/5 GB/s = 26.8 ms for
   * S = 256 MiB, while a GPU's switch link carries 2S at 100 GB/s (5.4 ms),
   * concurrently. Expected: T within 3% above (S/2)/5 GB/s, where a tree
   * through one NIC pair would take twice that. */
  struct harness h;
  harness_load(&h, "tests/data/twonode-nic.yaml");
  double s = 256.0 * (1 << 20);
  int64_t t = harness_run(&h, DS_AR_TREE, 8, s, -1, 1, DS_COLL_FLOW, NULL);
  cr_assert_geq((double)t, s / 2 / 5.0, "%lld", (long long)t);
  cr_assert_lt((double)t, 1.03 * s / 2 / 5.0, "%lld", (long long)t);
  ds_topo_free(h.topo);
}

/* 4 nodes x 4 TestGPUs: NVSwitch 100 GB/s, 1 us per link; a NIC per GPU,
 * 5 GB/s and 2 us to one non-blocking IB switch, 20 GB/s and 0.5 us of PCIe
 * between a GPU and its NIC. */
static const char fournode_nic[] =
    "schema_version: 1\nname: fournode-nic\ngpu: TestGPU\nnodes: 4\ngpus_per_node: 4\n"
    "intra_node:\n  template: nvswitch\n  link_bw: 100GBps\n  link_lat: 1us\n"
    "inter_node:\n  template: ib\n  nics_per_node: 4\n  nic_bw: 5GBps\n  nic_lat: 2us\n"
    "  gpu_nic_bw: 20GBps\n  gpu_nic_lat: 0.5us\n"
    "compute:\n  flops_efficiency: 1\n  mem_efficiency: 1\n  kernel_overhead: 0us\n"
    "  fp32_math: fp32\n";

Test(coll_tree, double_tree_runs_a_rail_per_nic_closed_form) {
  /* fournode-nic (above), 16 ranks, a protocol by hand: C = 4 channels per
   * tree, each capped at c = 1 GB/s, per-hop latency 1 us inside a node
   * (NVLINK) and 5 us across (NET), start 3 us.
   *
   * What runs (NCCL's tree graph has a channel per NIC and runs both trees
   * of a channel over its chain, connect.cc): K = 4 rails; rail r chains
   * each node's GPUs towards local GPU r (r, r+1, ... cyclically), which
   * faces the other nodes in both trees; 2K = 8 trees of S/8, the C
   * channels spread C/K = 1 per rail, capped at C c / K = 1 GB/s. Over the
   * nodes tree 0 is 0 <- 2 <- {1, 3}, tree 1 its mirror 3 <- 1 <- {2, 0}.
   * A NIC of a node inner in one tree and leaf in the other sends 4 flows
   * (up and two down in one, up in the other) and receives 4: 4 c = 4 GB/s
   * <= 5 GB/s, so every flow runs at its cap and a piece of S/(8P) takes
   * t = S/(8 P c) on every hop.
   *
   * Closed form: a vertex h hops above its deepest leaf sends piece p up at
   * start + h t + (latencies below it) + p t; the deepest path is a leaf
   * node's chain (3 NVLINK hops) and 2 node hops (NET) up, the same down,
   * H = 10 hops, latency 6 x 1 + 4 x 5 = 26 us. The last piece reaches the
   * deepest leaf at
   *   T = start + 26 us + (P + H - 1) t.
   * S = 64 MiB: S/8 = 8 MiB in P = max(8 MiB / 512 KiB, 8 x depth 5) = 40
   * pieces; t = 209715.2 ns; T = 29000 + 49 t = 10305044.8 ns (+- 1 ns per
   * piece and hop, rounding).
   *
   * Before (one tree per NIC: tree 0 through local GPU 0's NIC, tree 1
   * through GPU 3's), tree 0's flows of C c = 4 GB/s each met 3 to a NIC at
   * its inner node, 12 GB/s on 5: 21.47 ms, 2.1 x this T. */
  struct harness h;
  harness_load_text(&h, fournode_nic, "tests/data/gpus.yaml");
  struct ds_coll_proto cp = {.proto = DS_PROTO_SIMPLE, .channels = 4, .wire_factor = 1,
                             .chan_cap_bytes_per_s = 1e9,
                             .hop_lat_ns = {[DS_HOP_NVLINK] = 1000, [DS_HOP_NET] = 5000},
                             .start_lat_ns = 3000};
  double s = 64.0 * 1024 * 1024;
  int32_t p = ds_coll_tree_pieces(s / 8, 5, 1, DS_TREE_MIN_PIECE_BYTES);
  cr_assert_eq(p, 40);
  double t = s / (8.0 * p);
  double expect = 3000 + 26000 + (p + 10 - 1) * t;
  int64_t got = harness_run(&h, DS_AR_TREE, 16, s, -1, 1, DS_COLL_FLOW, &cp);
  cr_assert_leq(fabs((double)got - expect), p + 10, "%lld vs %.1f", (long long)got, expect);
  ds_topo_free(h.topo);
}

Test(coll_tree, double_tree_carries_2s_over_k_per_nic) {
  /* The same cluster on its links' own bandwidth: every node is inner in
   * one tree and a leaf (or the one-child root) in the other, so a NIC
   * sends at most (3 + 1) S/(2K) = 2S/K: with K = 4, S/2 at 5 GB/s, 26.8 ms
   * for S = 256 MiB (its chain's NVSwitch hops at 100 GB/s cost little
   * beside it). Expected: T within 3% above (S/2)/5 GB/s; with one tree per
   * NIC a NIC carried 3 S/2 (80.5 ms; 81.1 ms simulated before). */
  struct harness h;
  harness_load_text(&h, fournode_nic, "tests/data/gpus.yaml");
  double s = 256.0 * (1 << 20);
  int64_t t = harness_run(&h, DS_AR_TREE, 16, s, -1, 1, DS_COLL_FLOW, NULL);
  cr_assert_geq((double)t, s / 2 / 5.0, "%lld", (long long)t);
  cr_assert_lt((double)t, 1.03 * s / 2 / 5.0, "%lld", (long long)t);
  ds_topo_free(h.topo);
}

static void nccl_model_of(struct harness *h, struct ds_nccl_model *m) {
  struct ds_err err = {0};
  struct ds_ring r;
  harness_ring(h->topo, h->topo->n_gpus, &r);
  cr_assert_eq(ds_nccl_model_build(h->topo, &r, DS_NCCL_EXTRA_NONE, m, &err), DS_OK, "%s",
               err.msg);
  ds_ring_release(&r);
}

Test(coll_tree, nvls_closed_form_on_dgx_h100) {
  /* NVLS on dgx-h100 (NCCL's model, no extras): every GPU sends its pieces
   * up to the switch, capped at NCCL's NVLS algorithm bandwidth A =
   * busBw N/(2(N-1)) with busBw = 8 x 40 GB/s x 0.85 x 7/8 x 2 = 476 GB/s:
   * A = 272 GB/s (below the 450 GB/s link); the switch sends piece c down
   * once all 8 have delivered it, again at A. No per-hop latency; the start
   * is NCCL's NVLS latency, 25 us. With C pieces of S/C, t = S/(C A):
   *   T = 25 us + (C + 1) t.
   * S = 64 MiB: C = 128, t = 1927.5 ns, T = 25000 + 129 t = 273651.3 ns. */
  struct harness h;
  harness_load(&h, "topologies/dgx-h100.yaml");
  struct ds_nccl_model m;
  nccl_model_of(&h, &m);
  cr_assert(m.nvls_ok, "%s", m.nvls_why);
  cr_assert_float_eq(m.nvls_busbw_bytes_per_s, 476e9, 1e3);
  double s = 64.0 * 1024 * 1024;
  struct ds_coll_proto cp;
  ds_nccl_algo_proto(&m, DS_AR_NVLS, DS_PROTO_SIMPLE, s, &cp);
  int32_t c = ds_coll_tree_pieces(s, 1, 1, DS_TREE_MIN_PIECE_BYTES);
  cr_assert_eq(c, 128);
  double t = s / c / 272.0;
  double expect = 25000 + (c + 1) * t;
  int64_t got = harness_run(&h, DS_AR_NVLS, 8, s, -1, 1, DS_COLL_FLOW, &cp);
  cr_assert_leq(fabs((double)got - expect), c + 2, "%lld vs %.1f", (long long)got, expect);
  /* Its own bound: every GPU sends and receives S through its one link, so
   * algbw = S/T <= B = 450 GB/s, while its busbw 2(N-1)/N S/T may pass B. */
  cr_assert_leq(s / (double)got, 450.0);
  ds_topo_free(h.topo);
}

Test(coll_tree, tree_under_nccl_protocols_is_nccls_time_on_one_node) {
  /* dgx-a100, tree/Simple at 1 GiB (no extras): each of the four streams a
   * GPU carries (each tree's S/2 up and down) is capped at half NCCL's tree
   * algorithm bandwidth A = busBw/2, so (the 300 GB/s links carrying the
   * four, 2A = 220.8 GB/s, without binding) a stream takes (S/2)/(A/2) =
   * S/A: T = NCCL's time plus the pipeline fill, about 2 x depth of the
   * C = 1024 pieces: within 14/1024 + 0.1% above NCCL's time. */
  struct harness h;
  harness_load(&h, "topologies/dgx-a100.yaml");
  struct ds_nccl_model m;
  nccl_model_of(&h, &m);
  double s = 1024.0 * 1024 * 1024;
  struct ds_coll_proto cp;
  ds_nccl_algo_proto(&m, DS_AR_TREE, DS_PROTO_SIMPLE, s, &cp);
  double nccl = ds_nccl_predict_algo_ns(&m, DS_AR_TREE, DS_PROTO_SIMPLE, s);
  int64_t got = harness_run(&h, DS_AR_TREE, 8, s, -1, 1, DS_COLL_FLOW, &cp);
  cr_assert_geq((double)got, nccl * 0.999, "%lld vs %.1f", (long long)got, nccl);
  cr_assert_leq((double)got, nccl * (1 + 14.0 / 1024 + 0.001), "%lld vs %.1f",
                (long long)got, nccl);
  ds_topo_free(h.topo);
}

Test(coll_tree, refusals_name_the_algorithm) {
  struct harness h;
  struct ds_err err = {0};
  /* NVLS without NCCL's model, and on a topology without an NVLS switch. */
  harness_load(&h, "topologies/dgx-h100.yaml");
  cr_assert_eq(harness_new(&h, DS_AR_NVLS, 8, 1e6, -1, 1, DS_COLL_FLOW, NULL, &err),
               DS_EUSAGE);
  cr_assert(strstr(err.msg, "nvls"), "%s", err.msg);
  harness_release(&h);
  ds_topo_free(h.topo);
  harness_load(&h, "topologies/dgx-a100.yaml");
  cr_assert(!h.topo->nvls);
  struct ds_coll_proto cp = {.proto = DS_PROTO_SIMPLE, .channels = 1, .wire_factor = 1,
                             .chan_cap_bytes_per_s = 1e9};
  err.msg[0] = '\0';
  cr_assert_eq(harness_new(&h, DS_AR_NVLS, 8, 1e6, -1, 1, DS_COLL_FLOW, &cp, &err),
               DS_EUSAGE);
  cr_assert(strstr(err.msg, "nvls") && strstr(err.msg, "dgx-a100"), "%s", err.msg);
  harness_release(&h);
  /* A protocol on reduce-broadcast (NCCL has no such algorithm). */
  err.msg[0] = '\0';
  cr_assert_eq(harness_new(&h, DS_AR_REDUCE_BCAST, 8, 1e6, 0, 1, DS_COLL_FLOW, &cp, &err),
               DS_EUSAGE);
  cr_assert(strstr(err.msg, "reduce-broadcast"), "%s", err.msg);
  harness_release(&h);
  ds_topo_free(h.topo);
}

Test(coll_tree, algo_names_round_trip) {
  char name[DS_AR_ALGO_NAME_MAX];
  for (int a = 0; a < DS_AR_ALGO_COUNT; a++)
    for (int p = 0; p <= DS_PROTO_COUNT; p++) {
      ds_allreduce_algo_name((enum ds_ar_algo)a, (enum ds_proto)p, name);
      enum ds_ar_algo ga;
      enum ds_proto gp;
      cr_assert_eq(ds_allreduce_algo_parse(name, &ga, &gp), DS_OK, "%s", name);
      cr_assert_eq(ga, a, "%s", name);
      int has = a == DS_AR_RING || a == DS_AR_TREE || a == DS_AR_NVLS;
      cr_assert_eq(gp, has ? p : DS_PROTO_COUNT, "%s", name);
    }
  enum ds_ar_algo ga;
  enum ds_proto gp;
  cr_assert_eq(ds_allreduce_algo_parse("direct/LL", &ga, &gp), DS_EINPUT);
  cr_assert_eq(ds_allreduce_algo_parse("tree/LL64", &ga, &gp), DS_EINPUT);
  cr_assert_eq(ds_allreduce_algo_parse("bogus", &ga, &gp), DS_EINPUT);
  cr_assert_eq(ds_allreduce_algo_parse("", &ga, &gp), DS_OK);
  cr_assert_eq(ga, DS_AR_RING);
}

/* The aggregated double binary tree (DS_COLL_AGGREGATE; sim/coll/coll_tree.c,
 * agg_setup): one flow per tree after a lead standing for the per-flow
 * tree's critical path and pipeline fill. */

static const struct ds_coll_proto hand_proto = {
    .proto = DS_PROTO_SIMPLE, .channels = 4, .wire_factor = 1, .chan_cap_bytes_per_s = 1e9,
    .hop_lat_ns = {[DS_HOP_NVLINK] = 1000, [DS_HOP_NET] = 5000}, .start_lat_ns = 3000};

Test(coll_tree, aggregate_is_the_per_flow_tree_where_the_caps_bind) {
  /* fournode-nic and the protocol of double_tree_runs_a_rail_per_nic_closed_form:
   * every stream runs at its cap c = 1 GB/s (a NIC carries 4 c <= 5 GB/s, a GPU's
   * NVSwitch link at most 16 c <= 100 GB/s), so per flow
   *   T = start + lat + (P + H - 1) t,   t = S/(8 P c), H = 10 hops, lat = 26 us,
   * and the aggregate's lead, start + lat + (H - 1) t, then P t of data at the cap
   * is the same. Expected: the two within the per-flow tree's rounding (1 ns per
   * piece time and hop: P + H) from 1 MiB (P = 40: 8 x depth 5) to 1 GiB
   * (P = 256); at 64 MiB also the closed form (10305044.8 ns); every member
   * finishes when the aggregate does. */
  struct harness h;
  harness_load_text(&h, fournode_nic, "tests/data/gpus.yaml");
  for (double s = 1 << 20; s <= 1024.0 * (1 << 20); s *= 4) {
    int32_t p = ds_coll_tree_pieces(s / 8, 5, 1, DS_TREE_MIN_PIECE_BYTES);
    int64_t flow = harness_run(&h, DS_AR_TREE, 16, s, -1, 1, DS_COLL_FLOW, &hand_proto);
    int64_t agg = harness_run(&h, DS_AR_TREE, 16, s, -1, 1, DS_COLL_AGGREGATE, &hand_proto);
    cr_assert_leq(llabs(agg - flow), p + 10, "S=%g: aggregate %lld, per flow %lld", s,
                  (long long)agg, (long long)flow);
    for (int32_t i = 0; i < 16; i++) cr_assert_eq(h.done_ns[i], agg, "member %d", i);
    if (s == 64.0 * (1 << 20)) {
      double expect = 3000 + 26000 + (p + 10 - 1) * (s / (8.0 * p));
      cr_assert_leq(fabs((double)agg - expect), p + 10, "%lld vs %.1f", (long long)agg,
                    expect);
    }
  }
  ds_topo_free(h.topo);
}

Test(coll_tree, aggregate_is_the_per_flow_tree_under_nccls_model) {
  /* dgx-a100, one node (both trees the chain 0 <- 1 <- ... <- 7, depth 7),
   * NCCL's model without extras: each protocol's per-channel cap binds below
   * the 300 GB/s links (tree_under_nccl_protocols_is_nccls_time_on_one_node),
   * so aggregated and per flow agree within rounding: P + 2 x 7 ns, P the
   * pieces of S/2. */
  struct harness h;
  harness_load(&h, "topologies/dgx-a100.yaml");
  struct ds_nccl_model m;
  nccl_model_of(&h, &m);
  const double sizes[] = {1 << 20, 64.0 * (1 << 20), 1024.0 * (1 << 20)};
  for (int pr = 0; pr < DS_PROTO_COUNT; pr++)
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
      struct ds_coll_proto cp;
      ds_nccl_algo_proto(&m, DS_AR_TREE, (enum ds_proto)pr, sizes[k], &cp);
      int32_t p = ds_coll_tree_pieces(sizes[k] / 2, 7, 1, ds_coll_tree_min_piece_bytes(&cp));
      int64_t flow = harness_run(&h, DS_AR_TREE, 8, sizes[k], -1, 1, DS_COLL_FLOW, &cp);
      int64_t agg = harness_run(&h, DS_AR_TREE, 8, sizes[k], -1, 1, DS_COLL_AGGREGATE, &cp);
      cr_assert_leq(llabs(agg - flow), p + 14, "%s S=%g: aggregate %lld, per flow %lld",
                    ds_proto_name((enum ds_proto)pr), sizes[k], (long long)agg,
                    (long long)flow);
    }
  ds_topo_free(h.topo);
}

Test(coll_tree, aggregate_of_the_plain_tree_on_one_node) {
  /* Without a protocol the links bind, not a cap. On one node both trees
   * are the same chain and move in lockstep, so a stream's piece shares
   * every link with its twin: t = (S/2C)/(B/2). mesh4 (up and down streams
   * on different links): the aggregate's pipeline bound is then
   * pipelined_chain_closed_form_on_a_mesh's T = 2(N-1) a + (2N + C - 3) t
   * exactly (7247174.4 ns at 64 MiB); ring8 with one piece of 1 KiB per tree:
   * one_piece_on_a_switch's 2(N-1)(a + S/B) = 30293.8 ns. */
  struct harness h;
  harness_load(&h, "tests/data/mesh4.yaml");
  double s = 64.0 * 1024 * 1024, a = 2000;
  int32_t c = ds_coll_tree_pieces(s / 2, 3, 1, DS_TREE_MIN_PIECE_BYTES);
  double expect = 6 * a + (8 + c - 3) * (s / (c * 10.0));
  int64_t got = harness_run(&h, DS_AR_TREE, 4, s, -1, 1, DS_COLL_AGGREGATE, NULL);
  cr_assert_leq(fabs((double)got - expect), 2, "%lld vs %.1f", (long long)got, expect);
  ds_topo_free(h.topo);
  harness_load(&h, "tests/data/ring8.yaml");
  expect = 14 * (2000 + 2048 / 12.5);
  got = harness_run(&h, DS_AR_TREE, 8, 2048, -1, 1, DS_COLL_AGGREGATE, NULL);
  cr_assert_leq(fabs((double)got - expect), 2, "%lld vs %.1f", (long long)got, expect);
  ds_topo_free(h.topo);
}

Test(coll_tree, aggregate_of_the_plain_tree_across_nodes_is_a_lower_bound) {
  /* Across nodes without a protocol the streams through a link are not all
   * moving at once while the pipeline fills and drains, and the aggregate
   * takes the larger of two lower bounds on the per-flow tree (agg_setup:
   * the pipeline at each stream's own rate, the links' busy time). Expected:
   * never above per flow (but for its rounding, P + 2 depth ns), and at most
   * 8% below it: docs/collectives.md, where cluster-512x8-h100 at 16 and 64
   * GPUs stays within 6.4%. */
  const char *files[] = {"tests/data/twonode-nic.yaml", NULL};
  for (int f = 0; f < 2; f++) {
    struct harness h;
    int32_t n = f == 0 ? 8 : 16, depth = f == 0 ? 4 : 5, k = f == 0 ? 2 : 4;
    if (files[f]) harness_load(&h, files[f]);
    else harness_load_text(&h, fournode_nic, "tests/data/gpus.yaml");
    for (double s = 1 << 20; s <= 256.0 * (1 << 20); s *= 4) {
      int32_t p = ds_coll_tree_pieces(s / (2 * k), depth, 1, DS_TREE_MIN_PIECE_BYTES);
      int64_t flow = harness_run(&h, DS_AR_TREE, n, s, -1, 1, DS_COLL_FLOW, NULL);
      int64_t agg = harness_run(&h, DS_AR_TREE, n, s, -1, 1, DS_COLL_AGGREGATE, NULL);
      cr_assert_leq(agg, flow + p + 2 * depth, "%d ranks, S=%g: aggregate %lld, per flow %lld",
                    n, s, (long long)agg, (long long)flow);
      cr_assert_geq((double)agg, 0.92 * (double)flow,
                    "%d ranks, S=%g: aggregate %lld, per flow %lld", n, s, (long long)agg,
                    (long long)flow);
    }
    ds_topo_free(h.topo);
  }
}

Test(coll_tree, aggregate_is_deterministic_and_keeps_the_bounds) {
  /* Over sizes 4 KiB .. 1 GiB (x 4), plain and under the hand protocol, on
   * fournode-nic: the same run twice gives the same time; time grows with
   * size; busbw stays under what a GPU injects (harness_inject_bw), and
   * algbw under the NICs' K B_nic / 2 = 10 GB/s (a NIC carries 2S/K,
   * double_tree_carries_2s_over_k_per_nic). The same GPU bound on the
   * single-switch and mesh topologies of busbw_never_exceeds_the_bottleneck. */
  struct harness h;
  harness_load_text(&h, fournode_nic, "tests/data/gpus.yaml");
  double inject = harness_inject_bw(h.topo, 16);
  for (int pr = 0; pr < 2; pr++) {
    const struct ds_coll_proto *cp = pr ? &hand_proto : NULL;
    int64_t prev = 0;
    for (double s = 4096; s <= 1024.0 * (1 << 20); s *= 4) {
      int64_t t = harness_run(&h, DS_AR_TREE, 16, s, -1, 1, DS_COLL_AGGREGATE, cp);
      cr_assert_eq(harness_run(&h, DS_AR_TREE, 16, s, -1, 1, DS_COLL_AGGREGATE, cp), t,
                   "S=%g: not deterministic", s);
      cr_assert_gt(t, prev, "S=%g: %lld after %lld", s, (long long)t, (long long)prev);
      cr_assert_leq(harness_busbw(16, s, t), inject * (1 + 1e-9), "S=%g", s);
      cr_assert_leq(s / (double)t, 10.0 * (1 + 1e-9), "S=%g: algbw %g GB/s", s,
                    s / (double)t);
      prev = t;
    }
  }
  ds_topo_free(h.topo);
  const char *files[] = {"tests/data/ring8.yaml", "tests/data/mesh4.yaml",
                         "tests/data/twonode.yaml", "tests/data/pcie4.yaml",
                         "tests/data/twonode-nic.yaml"};
  for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
    harness_load(&h, files[f]);
    int32_t n = h.topo->n_gpus;
    double bound = harness_inject_bw(h.topo, n);
    for (double s = 4096; s <= 256.0 * (1 << 20); s *= 16) {
      int64_t t = harness_run(&h, DS_AR_TREE, n, s, -1, 1, DS_COLL_AGGREGATE, NULL);
      cr_assert_leq(harness_busbw(n, s, t), bound * (1 + 1e-9), "%s S=%g", files[f], s);
    }
    ds_topo_free(h.topo);
  }
}

/* Two all-reduces on one network at once (tags 0 | idx and 1 << 32 | idx),
 * every member entering both at t = 0. */
struct two_colls {
  struct ds_engine *eng;
  struct ds_net *net;
  struct ds_coll *coll[2];
  int32_t left;
  int64_t last_ns;
};

static void two_sent(void *owner, uint64_t tag) {
  struct two_colls *w = owner;
  cr_assert_eq(ds_coll_flow_sent(w->coll[tag >> 32], (int32_t)(tag & 0xffffffffu)), DS_OK);
}

static void two_done(void *owner, uint64_t tag) {
  struct two_colls *w = owner;
  cr_assert_eq(ds_coll_flow_done(w->coll[tag >> 32], (int32_t)(tag & 0xffffffffu)), DS_OK);
}

static void two_member(void *owner, int32_t member) {
  struct two_colls *w = owner;
  (void)member;
  w->left--;
  w->last_ns = ds_engine_now(w->eng);
}

static void two_handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)eng;
  ds_net_handle_event(((struct two_colls *)ctx)->net, ev);
}

static int64_t run_two_trees(struct ds_topo *topo, int32_t n, double bytes,
                             enum ds_coll_model model, const struct ds_coll_proto *cp) {
  struct two_colls w = {.left = 2 * n};
  struct ds_ring ring;
  struct ds_err err = {0};
  harness_ring(topo, n, &ring);
  cr_assert_eq(ds_engine_new(0, two_handle, &w, &w.eng), DS_OK);
  cr_assert_eq(ds_net_new(topo, w.eng, DS_NET_MAXMIN, two_done, two_sent, &w, &w.net), DS_OK);
  for (int k = 0; k < 2; k++) {
    struct ds_coll_spec spec = {.kind = DS_COLL_ALLREDUCE, .topo = topo, .ring = &ring,
                                .net = w.net, .model = model, .chunks = 1, .bytes = bytes,
                                .root = -1, .proto = cp, .algo = DS_AR_TREE,
                                .tag_base = (uint64_t)k << 32, .on_done = two_member,
                                .owner = &w};
    cr_assert_eq(ds_coll_new(&spec, &w.coll[k], &err), DS_OK, "%s", err.msg);
  }
  for (int k = 0; k < 2; k++)
    for (int32_t i = 0; i < n; i++) cr_assert_eq(ds_coll_enter(w.coll[k], i), DS_OK);
  cr_assert_eq(ds_engine_run(w.eng, INT64_MAX), DS_OK);
  cr_assert_eq(w.left, 0);
  for (int k = 0; k < 2; k++) ds_coll_free(w.coll[k]);
  ds_net_free(w.net);
  ds_engine_free(w.eng);
  ds_ring_release(&ring);
  return w.last_ns;
}

Test(coll_tree, aggregate_under_contention) {
  /* Two tree all-reduces at once on fournode-nic under the hand protocol:
   * a NIC now carries 8 streams of c = 1 GB/s on 5 GB/s, so the NICs bind,
   * not the caps. The aggregate's flows share the NICs by max-min as the
   * per-flow streams do on average, with a lead computed uncontended.
   * Expected: within 5% of per flow (docs/collectives.md), and no faster
   * than the NICs allow: each NIC moves 2 x 2S/K = S bytes, T >= S/B_nic. */
  struct harness h;
  harness_load_text(&h, fournode_nic, "tests/data/gpus.yaml");
  for (double s = 4 << 20; s <= 256.0 * (1 << 20); s *= 4) {
    int64_t flow = run_two_trees(h.topo, 16, s, DS_COLL_FLOW, &hand_proto);
    int64_t agg = run_two_trees(h.topo, 16, s, DS_COLL_AGGREGATE, &hand_proto);
    cr_assert_leq(fabs((double)(agg - flow)), 0.05 * (double)flow,
                  "S=%g: aggregate %lld, per flow %lld", s, (long long)agg, (long long)flow);
    cr_assert_geq((double)agg, s / 5.0, "S=%g: %lld", s, (long long)agg);
  }
  ds_topo_free(h.topo);
}

/* `ddpsim collective` with args; its csv's coll_model column of every row
 * must read `want`. */
static void coll_model_column_is(const char *args, const char *want) {
  char buf[512], *text;
  struct ds_err err;
  snprintf(buf, sizeof buf, "%s --format csv", args);
  cr_assert_eq(ds_test_collective(buf, &text, &err), DS_OK, "%s: %s", args, err.msg);
  int rows = 0;
  for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
    char *end = strchr(line + 1, '\n'), field[16] = "";
    const char *f = line + 1;
    for (int col = 0; col < 11 && f; col++) f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
    cr_assert(f != NULL && (!end || f < end), "%s: %s", args, text);
    sscanf(f, "%15[^,]", field);
    cr_assert_str_eq(field, want, "%s: %s", args, text);
    rows++;
  }
  cr_assert_gt(rows, 0, "%s", args);
  free(text);
}

Test(coll_tree, collbench_says_which_execution_ran) {
  /* The tree aggregates under --coll-model aggregate, and under auto above
   * 64 ranks; nvls, reduce-broadcast and direct always run per flow, and say
   * so (the same time either way). */
  coll_model_column_is("--topo tests/data/ring8.yaml --algo tree --coll-model aggregate "
                       "-b 1M -e 4M", "aggregate");
  coll_model_column_is("--topo tests/data/ring8.yaml --algo tree -b 1M -e 4M", "flow");
  coll_model_column_is("--topo cluster-512x8-h100 -g 128 --algo tree -b 1M -e 1M",
                       "aggregate");
  coll_model_column_is("--topo cluster-512x8-h100 -g 128 --algo tree --proto Simple "
                       "-b 1M -e 1M", "aggregate");
  coll_model_column_is("--topo cluster-512x8-h100 -g 64 --algo tree -b 1M -e 1M", "flow");
  const char *others[] = {"reduce-broadcast", "direct"};
  for (int a = 0; a < 2; a++) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --algo %s --coll-model "
             "aggregate -b 1M -e 4M", others[a]);
    coll_model_column_is(args, "flow");
  }
  coll_model_column_is("--topo dgx-h100 --algo nvls --coll-model aggregate -b 1M -e 4M",
                       "flow");
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  cr_assert_eq(harness_run(&h, DS_AR_REDUCE_BCAST, 8, 1e6, 0, 1, DS_COLL_AGGREGATE, NULL),
               harness_run(&h, DS_AR_REDUCE_BCAST, 8, 1e6, 0, 1, DS_COLL_FLOW, NULL));
  ds_topo_free(h.topo);
}

Test(coll_tree, small_ll_tree_across_nodes_is_nccls_time_plus_a_short_fill) {
  /* 2node-ib, tree/LL without extras (NCCL v2.30.7 tuning.cc): latency
   * baseLat 6.8 + 2 x (7 x hwLat[NVLINK] 0.6 + log2(2) x hwLat[NET] 5.0) =
   * 25.2 us, NCCL's time = 25.2 + S/A (the nccl column). Depth D = 7 + 1 = 8,
   * so 2D - 1 = 15 hops follow the first on the deepest path up and down.
   * LL forwards line by line (8 B of payload), so a tree's share (S/16: 512 B
   * at 8 KiB) is cut into min(8 D, 512 / 8) = 64 pieces, and the simulation
   * is NCCL's time plus a fill of 15/64 of S/A: 25.84 us at 8 KiB (with
   * pieces of at least 1 KiB it was one piece crossing every hop whole:
   * 25.72 + 15 x 0.52 = 33.52), 31.19 at 64 KiB. Tolerance: per-flow
   * rounding, 1 ns per piece and hop (64 + 16 ns). */
  char *text;
  struct ds_err err;
  cr_assert_eq(ds_test_collective("--topo 2node-ib --algo tree --proto LL --nccl-extra none "
                                  "-b 8K -e 64K -f 8 --format csv", &text, &err),
               DS_OK, "%s", err.msg);
  int rows = 0;
  for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
    const char *f = line + 1;
    double field[14] = {0};
    for (int col = 0; col < 14 && f; col++) {
      field[col] = atof(f);
      f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
    }
    double size = field[4], time_us = field[7], nccl_us = field[13];
    double expect = nccl_us + 15.0 / 64 * (nccl_us - 25.2);
    cr_assert_leq(fabs(time_us - expect), 0.08 + 0.0015, "S=%g: %.3f us vs %.3f (%s)", size,
                  time_us, expect, text);
    rows++;
  }
  cr_assert_eq(rows, 2, "%s", text);
  free(text);
}
