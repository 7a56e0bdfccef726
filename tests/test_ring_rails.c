/*
 * Rails (sim/coll/ring_rails.c, sim/coll/coll_rails.c): a ring across nodes runs as
 * one ring per NIC, each carrying S/K; its closed form, both executions,
 * the rails' routes on a rail-optimized fabric, and where no rails are
 * made.
 */
#include "coll_harness.h"

#include "sim/coll/nccl_model.h"
#include "sim/coll/ring_rails.h"

#define MB 1e6

/* The member maps of every rail are inverse permutations. */
static void check_maps(const struct ds_ring *r) {
  for (int32_t k = 0; k < r->n_rails; k++)
    for (int32_t p = 0; p < r->n; p++) {
      int32_t i = r->rail_member[k * r->n + p];
      cr_assert(i >= 0 && i < r->n);
      cr_assert_eq(r->rail_pos[k * r->n + i], p);
      cr_assert_eq(r->rails[k].gpus[p], r->gpus[i]);
    }
}

/* Opens h over gpus[0..n-1] (NULL: GPUs 0..n-1) with the ring's rails
 * planned; expects n_rails of them, their member maps checked. */
static void open_rails(struct harness *h, const int32_t *gpus, int32_t n, int32_t n_rails) {
  struct ds_err err = {0};
  harness_open(h, gpus, n, DS_NET_MAXMIN);
  cr_assert_eq(ds_ring_plan_rails(h->topo, &h->ring, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(h->ring.n_rails, n_rails, "%s: %d rails", h->topo->path, h->ring.n_rails);
  check_maps(&h->ring);
}

/* Loads path into h, then open_rails over GPUs 0..n-1; returns the ring. */
static const struct ds_ring *load_rails(struct harness *h, const char *path, int32_t n,
                                        int32_t n_rails) {
  harness_load(h, path);
  open_rails(h, NULL, n, n_rails);
  return &h->ring;
}

/* Frees h and its topology. */
static void unload(struct harness *h) {
  harness_release(h);
  ds_topo_free(h->topo);
}

/* Runs a collective of kind on h's ring (proto: NULL for none). */
static int64_t run_kind(struct harness *h, enum ds_coll_kind kind, int32_t n, double bytes,
                        enum ds_coll_model model, const struct ds_coll_proto *proto) {
  struct ds_err err = {0};
  struct ds_coll_spec spec = {.kind = kind, .topo = h->topo, .ring = &h->ring, .net = h->net,
                              .model = model, .chunks = 1, .bytes = bytes, .root = -1,
                              .proto = proto, .on_done = harness_on_member, .owner = h};
  cr_assert_eq(ds_coll_new(&spec, &h->coll, &err), DS_OK, "%s", err.msg);
  return harness_finish(h, n, "rails");
}

Test(ring_rails, two_nodes_two_nics_closed_form) {
  /* twonode-2x2: 2 nodes x 2 GPUs, NIC 0 for local GPU 0, NIC 1 for local
   * GPU 1; every link a ring crosses runs at B = 5 GB/s. K = 2 rails:
   *   rail 0: node 0 in by NIC 0 (GPU 0), out by NIC 1 (GPU 1); node 1 in
   *           by NIC 1 (GPU 3), out by NIC 0 (GPU 2):  0 1 | 3 2
   *   rail 1: the other way round:                     1 0 | 2 3
   * Each hop goes NIC q -> NIC q; no link is crossed by two hops, so each
   * rail is a uniform ring of B with hop latencies a = 2 x 1 us (NVSwitch)
   * and a' = 2 x (0.5 + 2) us = 5 us (GPU -> NIC -> switch -> NIC -> GPU),
   * alternating. Expected, because one chunk per step pipelines nothing:
   *   T = 2 sum(lat) - min(adjacent pair) + 2(N-1)/N * (S/K) / B
   *     = 2 (2 + 5 + 2 + 5) - 7 + 1.5 * 40 MB / 5 GB/s = 21 us + 12 ms,
   * per flow and aggregated; the rank-order ring (one NIC each way) needs
   * 21 us + 24 ms. busbw bound K * B_nic = 10 GB/s. */
  struct harness h;
  const struct ds_ring *r = load_rails(&h, "tests/data/twonode-2x2.yaml", 4, 2);
  const int32_t want[2][4] = {{0, 1, 3, 2}, {1, 0, 2, 3}};
  for (int k = 0; k < 2; k++)
    for (int p = 0; p < 4; p++) cr_assert_eq(r->rails[k].gpus[p], want[k][p], "rail %d", k);
  cr_assert_float_eq(ds_ring_busbw(r), 10e9, 1);
  cr_assert_float_eq(r->min_bw, 5e9, 1); /* the rank-order ring */
  cr_assert_float_eq(ds_ring_path_lat_ns(r), 21000, 1e-6);
  double expect = 21000 + 1.5 * 40 * MB / 5e9 * 1e9;
  cr_assert_float_eq(ds_ring_allreduce_ns(r, 80 * MB), expect, 1e-3);
  int64_t flow = run_kind(&h, DS_COLL_ALLREDUCE, 4, 80 * MB, DS_COLL_FLOW, NULL);
  cr_assert(llabs(flow - (int64_t)llround(expect)) <= 2, "per flow %lld", (long long)flow);
  harness_release(&h);
  open_rails(&h, NULL, 4, 2);
  int64_t agg = run_kind(&h, DS_COLL_ALLREDUCE, 4, 80 * MB, DS_COLL_AGGREGATE, NULL);
  cr_assert(llabs(agg - (int64_t)llround(expect)) <= 2, "aggregate %lld", (long long)agg);
  harness_release(&h);
  /* The plain ring in rank order, for contrast: twice the transfer time. */
  harness_open(&h, NULL, 4, DS_NET_MAXMIN);
  cr_assert_eq(h.ring.n_rails, 0);
  int64_t plain = run_kind(&h, DS_COLL_ALLREDUCE, 4, 80 * MB, DS_COLL_AGGREGATE, NULL);
  cr_assert(llabs(plain - (int64_t)llround(21000 + 1.5 * 80 * MB / 5e9 * 1e9)) <= 2);
  unload(&h);
}

Test(ring_rails, all_gather_runs_on_the_rails_too) {
  /* twonode-2x2, all-gather of S = 80 MB (the receive buffer): N-1 = 3
   * steps of S/N/K = 10 MB per rail at 5 GB/s; the largest latency of 3
   * consecutive hops is 5 + 2 + 5 = 12 us. Expected, because each step
   * waits for the previous one's chunk: T = 3 * 2 ms + 12 us. */
  struct harness h;
  load_rails(&h, "tests/data/twonode-2x2.yaml", 4, 2);
  int64_t t = run_kind(&h, DS_COLL_ALLGATHER, 4, 80 * MB, DS_COLL_FLOW, NULL);
  cr_assert(llabs(t - 6012000) <= 2, "all-gather %lld", (long long)t);
  unload(&h);
}

Test(ring_rails, rail_optimized_fabric_keeps_each_hop_on_its_rail) {
  /* rails.yaml: 2 nodes x 4 GPUs, NIC 0 for local GPUs 0-1, NIC 1 for 2-3,
   * a leaf per rail joined by a spine. K = 2 rails; every node-crossing hop
   * goes from NIC q of one node to NIC q of the other, so it stays on rail
   * q's leaf: GPU -> PCIe switch -> NIC -> leaf -> NIC -> PCIe switch ->
   * GPU, 6 links, never the spine (8 links). */
  struct harness h;
  const struct ds_ring *r = load_rails(&h, "tests/data/rails.yaml", 8, 2);
  int crossings = 0;
  for (int32_t k = 0; k < 2; k++)
    for (int32_t i = 0; i < 8; i++) {
      const struct ds_ring *q = &r->rails[k];
      if (q->hop_class[i] != DS_HOP_NET) continue;
      crossings++;
      cr_assert_eq(q->hop_first[i + 1] - q->hop_first[i], 6, "rail %d hop %d", k, i);
    }
  cr_assert_eq(crossings, 4); /* 2 per rail */
  /* Each NIC carries one rail each way: bound 2 x 5 GB/s (NVSwitch 10). */
  cr_assert_float_eq(ds_ring_busbw(r), 10e9, 1);
  unload(&h);
}

Test(ring_rails, dgx1_rails_stay_on_nvlink_inside_a_node) {
  /* dgx1-v100-2node: 2 DGX-1 (hybrid cube-mesh: 0-1 0-2 0-3 0-4 1-2 1-3
   * 1-5 2-3 2-6 3-7 4-5 4-6 4-7 5-6 5-7 6-7), NIC q for local GPUs 2q and
   * 2q+1 (12.5 GB/s each; GPU to NIC through a PCIe switch, 16 GB/s).
   * Rail k enters a node at a GPU of one NIC and leaves at one of the next;
   * in member order rail 0 went 0 1 2 4 ..., and 2 -> 4 has no NVLink: PCIe
   * and QPI (10 GB/s), the rails' bottleneck, 4 channels of 2.4 GB/s in
   * NCCL's model. NCCL walks a node's GPUs over NVLink first (search.cc
   * ncclTopoCompute, typeIntra from PATH_NVL), and a path over NVLinks
   * between the entry and exit GPUs exists for every rail (rail 0: 0 4 7 6
   * 5 1 2 3). Expected, because every intra-node hop is then one NVLink and
   * each link carries at most as many rails as its NCCL rate holds at the
   * NIC's speed: every hop NVLink or network, each rail's bottleneck the
   * NIC (12.5 GB/s), and NCCL's model the NIC-bound 4 channels of 12 GB/s
   * (PCIe's 16 GB/s at NCCL's 12/16, not duplicated below 25). */
  struct harness h = {0};
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("validation/topologies/dgx1-v100-2node.yaml", "topologies/gpus.yaml",
                            &h.topo, &err),
               DS_OK, "%s", err.msg);
  open_rails(&h, NULL, 16, 4);
  const struct ds_ring *r = &h.ring;
  for (int32_t k = 0; k < 4; k++) {
    const struct ds_ring *q = &r->rails[k];
    for (int32_t i = 0; i < 16; i++)
      cr_assert(q->hop_class[i] == DS_HOP_NVLINK || q->hop_class[i] == DS_HOP_NET,
                "rail %d hop %d: class %d", k, i, q->hop_class[i]);
    cr_assert_float_eq(q->min_bw, 12.5e9, 1, "rail %d: %g", k, q->min_bw);
  }
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(h.topo, &h.ring, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(m.channels, 4);
  cr_assert_float_eq(m.chan_bw_bytes_per_s, 12e9, 1, "%g", m.chan_bw_bytes_per_s);
  unload(&h);
}

Test(ring_rails, none_on_one_node_or_one_nic) {
  /* ring8 is one node: the ring itself runs. twonode (2 NICs per node, 2
   * GPUs on each) with 6 ranks: node 0 holds GPUs 0-3 (NICs 0 and 1),
   * node 1 GPUs 4 and 5, both on its NIC 0: a node reaching one NIC runs
   * no rails (the fewest NICs is 1), and the uneven nodes get the note
   * (ds_ring_nodes_uneven), as 9 ranks on 2node-ib do (8 + 1: a node
   * holding one GPU); 12 there (8 + 4) run rails, no note. */
  struct harness h;
  const struct ds_ring *r = load_rails(&h, "tests/data/ring8.yaml", 8, 0);
  cr_assert_float_eq(ds_ring_busbw(r), r->min_bw, 1e-9);
  unload(&h);
  load_rails(&h, "tests/data/twonode.yaml", 6, 0);
  char buf[32];
  cr_assert_eq(ds_ring_nodes_uneven(h.topo, h.ring.gpus, 6, buf, sizeof buf), 1);
  cr_assert_str_eq(buf, "4 + 2");
  unload(&h);
  load_rails(&h, "topologies/2node-ib.yaml", 9, 0);
  cr_assert_eq(ds_ring_nodes_uneven(h.topo, h.ring.gpus, 9, buf, sizeof buf), 1);
  cr_assert_str_eq(buf, "8 + 1");
  unload(&h);
  load_rails(&h, "topologies/2node-ib.yaml", 12, 4);
  cr_assert_eq(ds_ring_nodes_uneven(h.topo, h.ring.gpus, 12, buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "");
  unload(&h);
}

Test(ring_rails, the_uneven_note_writes_runs_of_equal_counts) {
  /* 57 ranks on cluster-64x8-h100 (8 GPUs a node): 7 nodes of 8 and one
   * of 1, written "7 x 8 + 1" so the node that stops the rails is kept; a
   * buffer too small for it ends in "..." (its last 4 bytes). */
  struct harness h;
  load_rails(&h, "topologies/cluster-64x8-h100.yaml", 57, 0);
  char buf[48], small[8];
  cr_assert_eq(ds_ring_nodes_uneven(h.topo, h.ring.gpus, 57, buf, sizeof buf), 1);
  cr_assert_str_eq(buf, "7 x 8 + 1");
  cr_assert_eq(ds_ring_nodes_uneven(h.topo, h.ring.gpus, 57, small, sizeof small), 1);
  cr_assert_str_eq(small, "7 x ...");
  unload(&h);
}

Test(ring_rails, uneven_nodes_run_one_rail_per_nic_of_the_fewest) {
  /* 2node-ib with 12 ranks: node 0 holds GPUs 0-7 (8 NICs), node 1 GPUs
   * 8-11 (NICs 0-3 of node 1): K = 4 rails, rail k between NICs k and k+1
   * of each node (entering node 0 through GPU k, node 1 through GPU 8 +
   * (k+1) mod 4). Each used NIC carries one rail each way: bound 4 x 50 =
   * 200 GB/s (a node-0 GPU's NVSwitch link carries at most 4 rail hops:
   * 450 / 4; node 1's 3 of 4: 450 / 3; the PCIe 64 / 1). Each rail crosses
   * the nodes twice; node 0's NICs 4-7 carry nothing. */
  struct harness h;
  const struct ds_ring *r = load_rails(&h, "topologies/2node-ib.yaml", 12, 4);
  cr_assert_float_eq(ds_ring_busbw(r), 200e9, 1);
  for (int32_t k = 0; k < 4; k++) {
    const struct ds_ring *q = &r->rails[k];
    int32_t net = 0;
    for (int32_t i = 0; i < q->n; i++) net += q->hop_class[i] == DS_HOP_NET;
    cr_assert_eq(net, 2, "rail %d", k);
    cr_assert_eq(q->gpus[0], k, "rail %d enters node 0 through GPU %d", k, k);
    cr_assert_eq(q->gpus[8], 8 + (k + 1) % 4, "rail %d enters node 1 at %d", k, q->gpus[8]);
    cr_assert_eq(q->gpus[11], 8 + k, "rail %d leaves node 1 at %d", k, q->gpus[11]);
  }
  unload(&h);
}

Test(ring_rails, a_nodes_own_search_wraps_the_nodes_with_fewer_nics) {
  /* Node 0's own search on 2node-ib with 12 ranks: 8 rails, node 0 running
   * rail k between its NICs k and k+1 mod 8 (entered through GPU k), node
   * 1 (4 NICs, odd) between NICs k mod 4 and the next, entered through the
   * latter (GPU 8 + (k mod 4 + 1) mod 4) and left through the former. Node
   * 0's NICs each carry one rail each way, node 1's two. */
  struct ds_err err = {0};
  struct harness h;
  load_rails(&h, "topologies/2node-ib.yaml", 12, 4);
  struct ds_ring own;
  cr_assert_eq(ds_ring_search_rails(h.topo, &h.ring, 8, &own, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(own.n_rails, 8);
  check_maps(&own);
  for (int32_t k = 0; k < 8; k++) {
    cr_assert_eq(own.rails[k].gpus[0], k, "rail %d", k);
    cr_assert_eq(own.rails[k].gpus[8], 8 + (k % 4 + 1) % 4, "rail %d", k);
    cr_assert_eq(own.rails[k].gpus[11], 8 + k % 4, "rail %d", k);
  }
  ds_ring_release(&own);
  /* no rails across nodes: refused */
  unload(&h);
  load_rails(&h, "topologies/2node-ib.yaml", 9, 0);
  cr_assert_eq(ds_ring_search_rails(h.topo, &h.ring, 8, &own, &err), DS_EINPUT);
  unload(&h);
}

Test(ring_rails, nccl_model_takes_the_least_over_uneven_nodes) {
  /* 12 ranks on 2node-ib (8 + 4). NCCL searches each node alone
   * (search.cc) and keeps the least nChannels and bwIntra over the ranks
   * (init.cc:1439-1442). Node 0 (8 GPUs, 8 NICs), as 16 ranks: share 50
   * GB/s (NIC; NVSwitch 370.8 / 7 = 53), speed 48, one channel per NIC: 8
   * x 48, no duplication (Hopper, below 50 GB/s, more than 4). Node 1 (4
   * GPUs, 4 NICs): share 50 (NIC; NVSwitch 370.8 / 3, PCIe 64), speed 48,
   * 4 channels, duplicated (4 is not more than 4): 8 x 24. Least: 8
   * channels x 24 GB/s = 192 GB/s of Simple busbw (the rank-order ring
   * alone: 2 x 24). NVLSTree: a head per NIC on each node, speed the
   * first inter-node speed not above min(50, 370.8 / (heads + 1)): node 0
   * 41.2 -> 40, node 1 74.2 -> 48; least 40, heads the least, 4. */
  struct ds_err err = {0};
  struct harness h;
  load_rails(&h, "topologies/2node-ib.yaml", 12, 4);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(h.topo, &h.ring, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK,
               "%s", err.msg);
  cr_assert_eq(m.nnodes, 2);
  cr_assert_eq(m.channels, 8);
  cr_assert_float_eq(m.chan_bw_bytes_per_s, 24e9, 1);
  cr_assert_float_eq(m.busbw_bytes_per_s[DS_PROTO_SIMPLE], 192e9, 1);
  cr_assert_eq(m.nvls_channels, 4);
  cr_assert_float_eq(m.nvls_chan_bw_bytes_per_s, 40e9, 1);
  unload(&h);
}

Test(ring_rails, two_dgx_h100_use_eight_nics) {
  /* 2node-ib: 8 NICs per node at 400 Gb/s = 50 GB/s, one per GPU. K = 8
   * rails, each NIC carrying one rail each way: the bound is 8 x 50 = 400
   * GB/s, under the NVSwitch's 8 x 450 / 7 (a GPU sends over NVLink in the
   * 7 rails where it is not its node's exit) and the GPU-NIC PCIe's 8 x 64. */
  struct harness h;
  const struct ds_ring *r = load_rails(&h, "topologies/2node-ib.yaml", 16, 8);
  cr_assert_float_eq(ds_ring_busbw(r), 400e9, 1);
  unload(&h);
}

Test(ring_rails, nccl_model_spreads_channels_over_the_nics) {
  /* 2node-ib, NCCL's model over the 8 rails: each channel gets the share of
   * every link its rail crosses, as NCCL sees it: a NIC link 50 GB/s / 1
   * hop; a GPU's NVSwitch link 450 GB/s derated to 450 x 20.6/25 = 370.8,
   * over the 7 rails that cross it = 53.0; the GPU-NIC PCIe 64 / 1. Share
   * 50 GB/s: the first inter-node speed of sm90's list not above it is 48,
   * one channel per rail, 8 channels (no duplication on Hopper below 50
   * GB/s with more than 4). Expected: 8 x 48 = 384 GB/s of Simple busbw,
   * against 2 x 24 for the rank-order ring alone. */
  struct ds_err err = {0};
  struct harness h;
  load_rails(&h, "topologies/2node-ib.yaml", 16, 8);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(h.topo, &h.ring, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK,
               "%s", err.msg);
  cr_assert_eq(m.channels, 8);
  cr_assert_float_eq(m.chan_bw_bytes_per_s, 48e9, 1);
  cr_assert_float_eq(m.busbw_bytes_per_s[DS_PROTO_SIMPLE], 384e9, 1);
  /* The simulated ring: 1 channel per rail at 48 GB/s, under the rails'
   * 400 GB/s: busbw 8 x 48 in the closed form. */
  struct ds_coll_proto cp;
  ds_nccl_coll_proto(&m, DS_PROTO_SIMPLE, 64 * MB, &cp);
  double t = ds_ring_allreduce_proto_ns(&h.ring, &cp, 64 * MB);
  /* Each rail's path: 2(N-1) = 30 steps over hops of 14 NVLink steps and 2
   * NET steps per ring; the largest 30 consecutive: 2 x (14 x 3.4 + 2 x 14)
   * - (3.4 + 3.4) = 140.4 us. */
  double lat = cp.start_lat_ns + 2 * (14 * 3400.0 + 2 * 14000) - 2 * 3400;
  cr_assert_float_eq(t, lat + 30.0 / 16 * 64 * MB / 384e9 * 1e9, 1e-3);
  unload(&h);
}

Test(ring_rails, dgx1_v100_ring_runs_on_doubled_nvlinks) {
  /* dgx1-v100: rank order crosses the sockets (3 -> 4 and 7 -> 0 have no
   * NVLink: 16 GB/s PCIe). The doubled NVLink pairs (0-3 0-4 1-2 1-5 2-3
   * 4-7 5-6 6-7, 50 GB/s each) form the one cycle 0-3-2-1-5-6-7-4 (and its
   * reverse): every hop one 3.4 us NVLink, so the search keeps the first
   * it finds from member 0 upwards. Expected bottleneck 50 GB/s. */
  struct harness h;
  const struct ds_ring *r = load_rails(&h, "topologies/dgx1-v100.yaml", 8, 1);
  cr_assert_float_eq(r->min_bw, 16e9, 1);
  const int32_t want[8] = {0, 3, 2, 1, 5, 6, 7, 4};
  for (int p = 0; p < 8; p++) cr_assert_eq(r->rails[0].gpus[p], want[p], "position %d", p);
  cr_assert_float_eq(ds_ring_busbw(r), 50e9, 1);
  cr_assert_float_eq(ds_ring_path_lat_ns(r), 14 * 3400.0, 1e-6);
  unload(&h);
}

Test(ring_rails, rank_order_stays_where_it_is_optimal) {
  /* Uniform boxes (NVSwitch: every hop the same) and 4gpu: no order beats
   * rank order strictly, so the ring itself runs. */
  const char *files[] = {"topologies/dgx-a100.yaml", "topologies/4gpu.yaml",
                         "topologies/dgx-h100.yaml", "topologies/pcie-8gpu.yaml"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    struct harness h;
    harness_load(&h, files[i]);
    open_rails(&h, NULL, h.topo->n_gpus, 0);
    unload(&h);
  }
}

Test(ring_rails, protocol_channels_are_spread_over_the_rails) {
  /* twonode-2x2 under a protocol by hand: C = 4 channels capped at 2 GB/s,
   * wire factor 1, per-step latency 600 ns (NVLINK class) and 2700 ns
   * (NET), 5 us at the start. K = 2 rails get C/K = 2 channels each: a
   * rail moves at 2 x 2 = 4 GB/s, under its 5 GB/s links. Each rail's
   * path alternates NVLINK and NET steps: 2 (600 + 2700 + 600 + 2700) -
   * 3300 = 9.9 us. Expected, because each step moves S/K/N/2 = 5 MB per
   * channel at 2 GB/s and waits its hop's latency:
   *   T = 5 us + 9.9 us + 2(N-1)/N * S / (K * 2 * 2 GB/s)
   *     = 14.9 us + 1.5 * 80 MB / 8 GB/s = 14.9 us + 15 ms,
   * per flow and aggregated, as the closed-form helper says. */
  struct ds_coll_proto p = {.proto = DS_PROTO_SIMPLE, .channels = 4, .wire_factor = 1,
                            .chan_cap_bytes_per_s = 2e9, .hop_lat_ns = {600, 1000, 2700},
                            .start_lat_ns = 5000};
  double expect = 14900 + 1.5 * 80 * MB / 8e9 * 1e9;
  enum ds_coll_model models[] = {DS_COLL_FLOW, DS_COLL_AGGREGATE};
  struct harness h;
  harness_load(&h, "tests/data/twonode-2x2.yaml");
  for (int i = 0; i < 2; i++) {
    open_rails(&h, NULL, 4, 2);
    cr_assert_float_eq(ds_ring_allreduce_proto_ns(&h.ring, &p, 80 * MB), expect, 1e-3);
    int64_t t = run_kind(&h, DS_COLL_ALLREDUCE, 4, 80 * MB, models[i], &p);
    cr_assert(llabs(t - (int64_t)llround(expect)) <= 2, "model %d: %lld", i, (long long)t);
    harness_release(&h);
  }
  ds_topo_free(h.topo);
}

Test(ring_rails, greedy_order_above_ten_gpus) {
  /* pcie12 with members on GPUs 0 2 4 6 8 10 1 3 5 7 9 11: in rank order
   * every hop changes switch (12 x 4 us = 48 us), all hops at 10 GB/s. 12
   * members: the greedy nearest-fastest neighbour from member 0 (GPU 0)
   * takes, at equal bandwidth, the least latency, then the lowest member
   * index: GPU 1 (same switch, 2 us), then GPU 2 (member 1, first of the
   * 4 us ones), GPU 3, ... so the ring runs on GPUs 0 1 2 ... 11: 6 hops
   * of 2 us and 6 of 4 us = 36 us < 48 us, strictly better. */
  const int32_t gpus[12] = {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11};
  struct harness h;
  harness_load(&h, "tests/data/pcie12.yaml");
  open_rails(&h, gpus, 12, 1);
  for (int32_t p = 0; p < 12; p++) cr_assert_eq(h.ring.rails[0].gpus[p], p, "position %d", p);
  double sum = 0;
  for (int32_t i = 0; i < 12; i++) sum += h.ring.rails[0].hop_lat_ns[i];
  cr_assert_float_eq(sum, 36000, 1e-6);
  unload(&h);
}

/* Runs an all-reduce of bytes in `chunks` pieces on h's ring (proto: NULL
 * for none), per flow, with every member's finish into done[0..n). */
static void run_folded(struct harness *h, int32_t n, double bytes, int32_t chunks,
                       const struct ds_coll_proto *proto, int alone, int64_t *done) {
  struct ds_err err = {0};
  struct ds_coll_spec spec = {.kind = DS_COLL_ALLREDUCE, .topo = h->topo, .ring = &h->ring,
                              .net = h->net, .model = DS_COLL_FLOW, .chunks = chunks,
                              .bytes = bytes, .root = -1, .proto = proto,
                              .on_done = harness_on_member, .owner = h, .alone = alone};
  cr_assert_eq(ds_coll_new(&spec, &h->coll, &err), DS_OK, "%s", err.msg);
  harness_finish(h, n, alone ? "folded rails" : "rails");
  for (int32_t i = 0; i < n; i++) done[i] = h->done_ns[i];
}

/* Every member's finish, the K rails run together and folded into one,
 * alike to the nanosecond; `folds` whether the rails fold at all. */
static void check_fold(const char *path, int32_t n, int32_t k_rails, int folds,
                       int32_t slow_link_of_rail1) {
  struct ds_coll_proto p = {.proto = DS_PROTO_SIMPLE, .channels = 2 * k_rails,
                            .wire_factor = 1.2, .chan_cap_bytes_per_s = 20e9,
                            .hop_lat_ns = {600, 1000, 2700}, .start_lat_ns = 5000};
  const struct ds_coll_proto *protos[] = {NULL, &p};
  const int32_t chunks[] = {1, 4};
  struct harness h;
  harness_load(&h, path);
  for (int c = 0; c < 2; c++)
    for (int q = 0; q < 2; q++) {
      int64_t all[HARNESS_MAXR], one[HARNESS_MAXR];
      open_rails(&h, NULL, n, k_rails);
      if (slow_link_of_rail1 && c == 0 && q == 0) {
        /* rail 1's first node-crossing link at half speed: unlike rail 0's */
        const struct ds_ring *r1 = &h.ring.rails[1];
        int32_t i = 0;
        while (r1->hop_class[i] != DS_HOP_NET) i++;
        h.topo->links[r1->hop_links[r1->hop_first[i] + 1]].bw_bytes_per_s /= 2;
      }
      run_folded(&h, n, 24 * MB, chunks[c], protos[q], 0, all);
      harness_release(&h);
      open_rails(&h, NULL, n, k_rails);
      const struct ds_ring *one_ring = NULL;
      cr_assert_eq(ds__ring_rails_quotient(h.topo, &h.ring, &one_ring), DS_OK);
      cr_assert_eq(one_ring != NULL, folds, "%s: folds %d", path, one_ring != NULL);
      if (one_ring) cr_assert_eq(one_ring->n, n);
      run_folded(&h, n, 24 * MB, chunks[c], protos[q], 1, one);
      harness_release(&h);
      for (int32_t i = 0; i < n; i++)
        cr_assert_eq(one[i], all[i], "%s chunks %d proto %d member %d: %lld folded, %lld not",
                     path, chunks[c], q, i, (long long)one[i], (long long)all[i]);
    }
  ds_topo_free(h.topo);
}

Test(ring_rails, interchangeable_rails_fold_into_one) {
  /* 2node-ib: 8 rails whose NIC links are their own but whose NVSwitch
   * links are shared (a GPU sends over NVLink in 7 of the 8 rails, at a
   * different ring position in each): every NVSwitch up link of a node is
   * crossed once by each of the 7 positions that cross any of them in rail
   * 0, so they fold onto one link crossed once per position (c = 8/8).
   * Expected, because the folded max-min rates are the rails' own
   * (ring_rails.c): the same finish for every member, to the ns, plain
   * and under a protocol, one chunk per step or four. rails.yaml: 2 rails
   * through per-rail leaves under a spine; twonode-2x2: 2 rails. */
  check_fold("topologies/2node-ib.yaml", 16, 8, 1, 0);
  check_fold("tests/data/rails.yaml", 8, 2, 1, 0);
  check_fold("tests/data/twonode-2x2.yaml", 4, 2, 1, 0);
}

Test(ring_rails, unlike_rails_do_not_fold) {
  /* 2node-ib with one link of rail 1 at half speed: position by position
   * the rails differ, so they run unfolded even when the caller allows
   * folding, and finish as they do without it. */
  check_fold("topologies/2node-ib.yaml", 16, 8, 0, 1);
}

/* 2 nodes x 4 GPUs on an NVSwitch of 9 GB/s links (1.5 us each way, so 3 us
 * a GPU-to-GPU hop), a NIC per GPU at 10 GB/s; the GPU-NIC link (PCIe) at
 * pcie_gbps. */
static void load_port_bound(struct harness *h, int pcie_gbps) {
  char text[1024];
  snprintf(text, sizeof text,
           "schema_version: 1\nname: port-bound\ngpu: TestGPU\nnodes: 2\n"
           "gpus_per_node: 4\nintra_node:\n  template: nvswitch\n  link_bw: 9GBps\n"
           "  link_lat: 1.5us\ninter_node:\n  template: ib\n  nics_per_node: 4\n"
           "  nic_bw: 10GBps\n  nic_lat: 5us\n  gpu_nic_bw: %dGBps\n  gpu_nic_lat: 1us\n"
           "compute:\n  flops_efficiency: 1\n  mem_efficiency: 1\n  kernel_overhead: 0us\n"
           "  fp32_math: fp32\n",
           pcie_gbps);
  harness_load_text(h, text, "tests/data/gpus.yaml");
}

Test(ring_rails, a_faster_link_never_slows_the_aggregated_rails) {
  /* port-bound: K = 4 rails; in a node each rail crosses 3 NVSwitch hops,
   * so a GPU's port up to the switch carries 3 of the 4 rails: 3 GB/s each
   * when all send at once, below any rail's own hops (9 GB/s NVLink;
   * min(PCIe, 10) across). Raising PCIe 3 -> 4 -> 6 -> 10 GB/s must never
   * slow the aggregated all-reduce. The aggregate once took its latency
   * from a rail alone (paced by its own slowest hop) and its pace from the
   * rails' shares (the port's 3 GB/s): as PCIe rose the rail alone hid less
   * of its NVLink latency behind the network hop, while the port kept the
   * pace, so 1 MiB went 164.9 -> 187.0 -> 212.7 -> 229.5 us and 8 MiB
   * 1235.3 -> 1289.7 us at 10 GB/s (per flow 1226.3). Now a waiting send
   * moves at the rails' share (164.9, 158.6, 155.9, 155.9 us at 1 MiB).
   * Expected at 8 MiB, PCIe 10 GB/s, because the port paces
   * every step and no run of hops adds latency beyond one NVLink hop's
   * (each hop's own step, 29.1 us NVLink or 26.2 us network, plus its 3 or
   * 12 us latency, is below the 87.4 us pace):
   *   T = 14 steps * (8 MiB / 4 rails / 8) / 3 GB/s + 3 us = 1226.339 us,
   * aggregated and per flow alike. */
  const int pcie[] = {3, 4, 6, 10};
  const double sizes[] = {1 << 20, 8 << 20};
  for (int s = 0; s < 2; s++) {
    int64_t last = INT64_MAX;
    for (int k = 0; k < 4; k++) {
      struct harness h;
      load_port_bound(&h, pcie[k]);
      open_rails(&h, NULL, 8, 4);
      int64_t agg = run_kind(&h, DS_COLL_ALLREDUCE, 8, sizes[s], DS_COLL_AGGREGATE, NULL);
      cr_assert_leq(agg, last, "%.0f bytes, PCIe %d GB/s: %lld ns, slower than %lld ns",
                    sizes[s], pcie[k], (long long)agg, (long long)last);
      last = agg;
      if (sizes[s] == 8 << 20 && pcie[k] == 10) {
        double step = (8 << 20) / 4.0 / 8;
        int64_t want = llround(14 * step / 3e9 * 1e9 + 3000);
        cr_assert(llabs(agg - want) <= 2, "aggregate %lld, want %lld", (long long)agg,
                  (long long)want);
        cr_assert_float_eq(ds_ring_allreduce_ns(&h.ring, sizes[s]), (double)want, 2.0);
        harness_release(&h);
        open_rails(&h, NULL, 8, 4);
        int64_t flow = run_kind(&h, DS_COLL_ALLREDUCE, 8, sizes[s], DS_COLL_FLOW, NULL);
        cr_assert(llabs(flow - want) <= 10, "per flow %lld, want %lld", (long long)flow,
                  (long long)want);
      }
      unload(&h);
    }
  }
}

/* Sets the bandwidth of every network link on rail k's hops (as planned
 * now) to bw. */
/* Two nodes of 4 GPUs on NVLink so fast (900 GB/s) that the NICs (10 GB/s,
 * one per rail) pace every rail. */
static const char NIC_BOUND_TOPO[] =
    "schema_version: 1\nname: nic-bound\ngpu: TestGPU\nnodes: 2\n"
    "gpus_per_node: 4\nintra_node:\n  template: nvswitch\n  link_bw: 900GBps\n"
    "  link_lat: 1.5us\ninter_node:\n  template: ib\n  nics_per_node: 4\n"
    "  nic_bw: 10GBps\n  nic_lat: 5us\n  gpu_nic_bw: 100GBps\n"
    "  gpu_nic_lat: 1us\ncompute:\n  flops_efficiency: 1\n  mem_efficiency: 1\n"
    "  kernel_overhead: 0us\n  fp32_math: fp32\n";

static void set_rail_nics(struct harness *h, int32_t k, double bw) {
  open_rails(h, NULL, 8, 4);
  const struct ds_ring *rail = &h->ring.rails[k];
  int32_t links[64], n = 0;
  for (int32_t j = 0; j < rail->hop_first[rail->n]; j++)
    if (!strcmp(h->topo->links[rail->hop_links[j]].kind, "ib") && n < 64)
      links[n++] = rail->hop_links[j];
  harness_release(h);
  cr_assert_gt(n, 0, "rail %d crosses no network link", k);
  for (int32_t j = 0; j < n; j++) h->topo->links[links[j]].bw_bytes_per_s = bw;
}

Test(ring_rails, a_faster_rail_never_slows_unequal_rails) {
  /* nic-bound: NVLink so fast (900 GB/s) that the NICs (10 GB/s) pace
   * every rail; rail 0's network links cut to 3 GB/s pace the aggregate,
   * rail 1's raised 10 -> 15 -> 30 GB/s. The closed form once charged
   * each rail's latency against its own pace, t_k - steps * p_k, then
   * added the global pace: a faster rail 1 lowered p_1 by more than its
   * t_1, so 1 MiB rose 198.8 -> 209.4 -> 220.4 us. Now every rail's
   * latency is what is left of t_k after the global pace, which only
   * falls as any link speeds up; the form then meets the aggregated run
   * (164.9 us at 1 MiB however fast rail 1). */
  struct harness h;
  harness_load_text(&h, NIC_BOUND_TOPO,
                    "tests/data/gpus.yaml");
  set_rail_nics(&h, 0, 3e9);
  const double sizes[] = {1 << 16, 1 << 20, 8 << 20};
  const double rail1_bw[] = {10e9, 15e9, 30e9};
  for (int s = 0; s < 3; s++) {
    double last_closed = INFINITY;
    int64_t last_agg = INT64_MAX;
    for (int x = 0; x < 3; x++) {
      set_rail_nics(&h, 1, rail1_bw[x]);
      open_rails(&h, NULL, 8, 4);
      double closed = ds_ring_allreduce_ns(&h.ring, sizes[s]);
      int64_t agg = run_kind(&h, DS_COLL_ALLREDUCE, 8, sizes[s], DS_COLL_AGGREGATE, NULL);
      cr_assert_leq(closed, last_closed + 1e-6, "%.0f bytes, rail 1 at %.0f GB/s: %.1f ns > %.1f",
                    sizes[s], rail1_bw[x] / 1e9, closed, last_closed);
      cr_assert_leq(agg, last_agg, "%.0f bytes, rail 1 at %.0f GB/s: aggregate %lld > %lld ns",
                    sizes[s], rail1_bw[x] / 1e9, (long long)agg, (long long)last_agg);
      cr_assert(fabs(closed - (double)agg) <= 1, "closed form %.1f, aggregated %lld ns", closed,
                (long long)agg);
      last_closed = closed;
      last_agg = agg;
      harness_release(&h);
    }
  }
  ds_topo_free(h.topo);
}

/* A rail takes the rail before's time only when their steps are alike
 * (ds__ring_steps_alike): the slow rail first or last must give one time,
 * in the closed form and aggregated. With the slow rail last a check that
 * called every rail of the same length alike had the three fast rails'
 * time stand for it (164917 ns first, 152917 last, at 1 MiB). */
Test(ring_rails, the_slow_rail_paces_wherever_it_sits) {
  struct harness h;
  harness_load_text(&h, NIC_BOUND_TOPO,
                    "tests/data/gpus.yaml");
  double closed[2];
  int64_t agg[2];
  const int32_t slow[2] = {0, 3};
  for (int x = 0; x < 2; x++) {
    set_rail_nics(&h, slow[1 - x], 10e9); /* the other end back to the NICs' own */
    set_rail_nics(&h, slow[x], 3e9);
    open_rails(&h, NULL, 8, 4);
    cr_assert_eq(h.ring.n_rails, 4);
    closed[x] = ds_ring_allreduce_ns(&h.ring, 1 << 20);
    agg[x] = run_kind(&h, DS_COLL_ALLREDUCE, 8, 1 << 20, DS_COLL_AGGREGATE, NULL);
    harness_release(&h);
  }
  cr_assert(fabs(closed[0] - closed[1]) <= 1, "slow rail first %.1f, last %.1f ns", closed[0],
            closed[1]);
  cr_assert(llabs(agg[0] - agg[1]) <= 1, "aggregated: slow rail first %lld, last %lld ns",
            (long long)agg[0], (long long)agg[1]);
  cr_assert(fabs(closed[1] - (double)agg[1]) <= 1, "closed form %.1f, aggregated %lld ns",
            closed[1], (long long)agg[1]);
  ds_topo_free(h.topo);
}

/* ds_ring_busbw is a bound on what runs: each hop carries 2(N-1)/N
 * of the buffer, so no ring beats a link's bandwidth over the hops crossing
 * it. The plain ring per flow at 1 GiB on every shipped topology small
 * enough to run here and both docs/examples boxes stays under it, within 2%
 * (one chunk a step: the pipeline's fill and the latencies; dgx-h100's
 * 444.9 of 450 is the farthest). On the host-staged 4090 box the
 * slowest hop's own 32 GB/s was the bound: 11.2 (4 hops x host memory's
 * 44.8 / 4), which the ring reaches. */
Test(ring_rails, the_busbw_bound_holds_what_runs_and_is_tight) {
  static const struct { const char *path; int32_t n, n_rails; double bound; } cases[] = {
      {"topologies/4gpu.yaml", 4, 0, 100e9},
      {"topologies/dgx-a100.yaml", 8, 0, 300e9},
      {"topologies/dgx-h100.yaml", 8, 0, 450e9},
      {"topologies/dgx1-v100.yaml", 8, 1, 50e9},
      {"topologies/pcie-8gpu.yaml", 8, 0, 32e9},
      {"topologies/2node-ib.yaml", 16, 8, 400e9},
      {"docs/examples/4x-rtx4090-nop2p.yaml", 4, 0, 11.2e9},
      {"docs/examples/8x-l40s-2socket.yaml", 8, 0, 22e9},
  };
  const double bytes = 1024.0 * (1 << 20);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    struct harness h = {0};
    struct ds_err err = {0};
    /* the examples have no GPU table beside them: the shipped one's */
    cr_assert_eq(ds_topo_load(cases[c].path, "topologies/gpus.yaml", &h.topo, &err), DS_OK,
                 "%s", err.msg);
    open_rails(&h, NULL, cases[c].n, cases[c].n_rails);
    const struct ds_ring *r = &h.ring;
    double bound = ds_ring_busbw(r);
    cr_assert_float_eq(bound, cases[c].bound, 1, "%s: %g", cases[c].path, bound);
    int32_t n = cases[c].n;
    int64_t t = run_kind(&h, DS_COLL_ALLREDUCE, n, bytes, DS_COLL_FLOW, NULL);
    double busbw = 2.0 * (n - 1) / n * bytes / (t * 1e-9);
    cr_assert(busbw <= bound * (1 + 1e-9), "%s: busbw %g above the bound %g", cases[c].path,
              busbw, bound);
    cr_assert(busbw >= 0.98 * bound, "%s: busbw %g, bound %g", cases[c].path, busbw, bound);
    unload(&h);
  }
}

/* Under a protocol the closed form paces a host-staged ring at the shared
 * link, not at the slowest hop's own bandwidth. pcie4-nop2p: 4 GPUs, two
 * under each switch, every copy staged through the CPU root (GPU ->
 * switch -> cpu0 -> switch -> GPU), so the ring 0 -> 1 -> 2 -> 3 -> 0
 * crosses each 8 GB/s uplink twice one way (switch0 -> cpu0: hops 0 -> 1
 * and 1 -> 2; cpu0 -> switch0: hops 3 -> 0 and 0 -> 1; alike on switch1).
 * Every hop carries the same 2(N-1)/N of the buffer a step behind the
 * last, so the two hops on an uplink move at 8 / 2 = 4 GB/s each, under
 * both the hops' own 8 and the channel's 6 GB/s cap. By hand, C = 1
 * channel capped at 6 GB/s, wire factor 1, 1 us per PCI step, 5 us at the
 * start: path 2(N-1) = 6 steps of 1 us; expected
 *   T = 5 us + 6 us + 2(N-1)/N * S / min(C x 6, 8 / 2 GB/s)
 *     = 11 us + 1.5 * 80 MB / 4 GB/s = 11 us + 30 ms
 * (the slowest hop's own 8 GB/s gave min(6, 8): 11 us + 20 ms). The ring
 * per flow and aggregated runs at those shares: the same time. */
Test(ring_rails, protocol_paces_a_host_staged_ring_at_the_shared_link) {
  struct ds_coll_proto p = {.proto = DS_PROTO_SIMPLE, .channels = 1, .wire_factor = 1,
                            .chan_cap_bytes_per_s = 6e9, .hop_lat_ns = {600, 1000, 2700},
                            .start_lat_ns = 5000};
  double expect = 11000 + 1.5 * 80 * MB / 4e9 * 1e9;
  enum ds_coll_model models[] = {DS_COLL_FLOW, DS_COLL_AGGREGATE};
  struct harness h;
  harness_load(&h, "tests/data/pcie4-nop2p.yaml");
  for (int i = 0; i < 2; i++) {
    open_rails(&h, NULL, 4, 0);
    cr_assert_float_eq(ds_ring_busbw(&h.ring), 4e9, 1, "%g", ds_ring_busbw(&h.ring));
    double closed = ds_ring_allreduce_proto_ns(&h.ring, &p, 80 * MB);
    cr_assert_float_eq(closed, expect, 1e-3, "closed form %.1f ns", closed);
    int64_t t = run_kind(&h, DS_COLL_ALLREDUCE, 4, 80 * MB, models[i], &p);
    cr_assert(llabs(t - (int64_t)llround(expect)) <= 2, "model %d: %lld", i, (long long)t);
    harness_release(&h);
  }
  ds_topo_free(h.topo);
}
