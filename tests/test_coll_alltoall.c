/*
 * sendrecv and alltoall (sim/coll/coll_alltoall.c), all-gather and
 * reduce-scatter under NCCL's protocols, and NCCL's p2p rules
 * (nccl_model.h ds_nccl_p2p_*): closed forms on the uniform switch ring8
 * (a rank-to-rank route crosses two 12.5 GB/s, 1 us links: alpha = 2 us,
 * B = 12.5 GB/s), host staging on pcie4-nop2p, the busbw bound and
 * determinism.
 */
#include "sim/coll/nccl_model.h"
#include "tests/coll_harness.h"
#include "tests/support.h"

#include <unistd.h>

#define ALPHA 2000.0 /* ns */
#define BW 12.5      /* bytes per ns */

Test(coll_alltoall, sendrecv_ring_closed_form) {
  /* Every member sends S to its successor: each GPU's link up and down
   * carries one flow of S, so T = alpha + S/B for every N, every member
   * finishing together. 100 MB: 2 us + 8 ms. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  for (int32_t n = 2; n <= 8; n++) {
    cr_assert_eq(harness_run_kind(&h, DS_COLL_SENDRECV, n, 100e6, -1, 1, DS_COLL_FLOW), 8002000);
    for (int32_t m = 0; m < n; m++) cr_assert_eq(h.done_ns[m], 8002000, "N=%d m=%d", n, m);
  }
  ds_topo_free(h.topo);
}

Test(coll_alltoall, alltoall_closed_form) {
  /* Every member sends S/N to each of the N-1 others at once: its link up
   * carries (N-1) flows sharing B, so T = alpha + (N-1)/N S/B. N = 8,
   * S = 80 MB: 2 us + 5.6 ms; N = 2..8 within 1 ns. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  cr_assert_eq(harness_run_kind(&h, DS_COLL_ALLTOALL, 8, 80e6, -1, 1, DS_COLL_FLOW), 5602000);
  for (int32_t n = 2; n <= 8; n++) {
    double expect = ALPHA + (double)(n - 1) / n * 1e9 / BW;
    int64_t got = harness_run_kind(&h, DS_COLL_ALLTOALL, n, 1e9, -1, 1, DS_COLL_FLOW);
    cr_assert_leq(fabs((double)got - expect), 1, "N=%d: %lld vs %.1f", n, (long long)got,
                  expect);
  }
  ds_topo_free(h.topo);
}

static int64_t run_model(struct harness *h, enum ds_coll_kind kind, int32_t n, double bytes,
                         const struct ds_coll_proto *p, enum ds_coll_model model) {
  struct ds_err err = {0};
  struct ds_coll_spec spec = {.kind = kind, .model = model, .chunks = 1,
                              .bytes = bytes, .proto = p};
  cr_assert_eq(harness_new_spec(h, n, spec, &err), DS_OK, "%s", err.msg);
  int64_t t = harness_finish(h, n, "proto");
  harness_release(h);
  return t;
}

static int64_t run_proto(struct harness *h, enum ds_coll_kind kind, int32_t n, double bytes,
                         const struct ds_coll_proto *p) {
  return run_model(h, kind, n, bytes, p, DS_COLL_FLOW);
}

Test(coll_alltoall, p2p_under_a_protocol_closed_form) {
  /* LL by hand: wire factor 2, 1 channel capped at 1 GB/s, 5 us at the
   * start, 700 ns per NVLink-class hop (replacing the links' 2 us).
   * alltoall N = 8, S = 80 MB: each of a GPU's 7 transfers moves 2 * 10 MB
   * at its 1 GB/s cap (7 GB/s < 12.5 GB/s of link): T = 5 us + 20 ms +
   * 0.7 us. With 4 channels the caps (4 GB/s each, 28 in all) exceed the
   * link, which binds: T = 5 us + 7 * 20 MB / 12.5 GB/s + 0.7 us. sendrecv
   * 10 MB with 4 channels: 20 MB at 4 GB/s = 5 ms. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  struct ds_coll_proto p = {.proto = DS_PROTO_LL, .channels = 1, .wire_factor = 2,
                            .chan_cap_bytes_per_s = 1e9, .start_lat_ns = 5000,
                            .hop_lat_ns = {700, 900, 1100}};
  cr_assert_eq(run_proto(&h, DS_COLL_ALLTOALL, 8, 80e6, &p), 5000 + 20000000 + 700);
  p.channels = 4;
  cr_assert_eq(run_proto(&h, DS_COLL_ALLTOALL, 8, 80e6, &p), 5000 + 11200000 + 700);
  cr_assert_eq(run_proto(&h, DS_COLL_SENDRECV, 8, 10e6, &p), 5000 + 5000000 + 700);
  ds_topo_free(h.topo);
}

Test(coll_alltoall, allgather_under_a_protocol_closed_form) {
  /* The ring of N-1 steps under a protocol (coll.h): T = start + (N-1) h +
   * (N-1)/N S w / min(C cap, B). Simple by hand, 2 channels of 5 GB/s (10
   * < 12.5), h = 700 ns, start 5 us; N = 8, S = 80 MB: 5 us + 4.9 us +
   * 7 ms = 7.0099 ms, all-gather and reduce-scatter alike. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  struct ds_coll_proto p = {.proto = DS_PROTO_SIMPLE, .channels = 2, .wire_factor = 1,
                            .chan_cap_bytes_per_s = 5e9, .start_lat_ns = 5000,
                            .hop_lat_ns = {700, 900, 1100}};
  cr_assert_eq(run_proto(&h, DS_COLL_ALLGATHER, 8, 80e6, &p), 7009900);
  cr_assert_eq(run_proto(&h, DS_COLL_REDUCESCATTER, 8, 80e6, &p), 7009900);
  /* aggregated: one flow after N-1 (not 2(N-1)) per-step latencies */
  cr_assert_eq(run_model(&h, DS_COLL_ALLGATHER, 8, 80e6, &p, DS_COLL_AGGREGATE), 7009900);
  ds_topo_free(h.topo);
  /* twonode (rails across two nodes, NVLink and IB hops): a small LL
   * all-gather is nearly latency only, and the aggregate pays the same N-1
   * hops as the per-flow ring (within the per-step transmission of a few
   * bytes, which the aggregate paces differently; paying 2(N-1) hops would
   * add at least (N-1) * 700 ns) */
  harness_load(&h, "tests/data/twonode.yaml");
  p = (struct ds_coll_proto){.proto = DS_PROTO_LL, .channels = 2, .wire_factor = 2,
                             .chan_cap_bytes_per_s = 5e9, .start_lat_ns = 5000,
                             .hop_lat_ns = {700, 900, 4000}};
  int32_t n = h.topo->n_gpus;
  int64_t flow = run_model(&h, DS_COLL_ALLGATHER, n, 1024, &p, DS_COLL_FLOW);
  int64_t agg = run_model(&h, DS_COLL_ALLGATHER, n, 1024, &p, DS_COLL_AGGREGATE);
  cr_assert_leq(llabs(flow - agg), 500, "flow %lld, aggregate %lld", (long long)flow,
                (long long)agg);
  ds_topo_free(h.topo);
}

Test(coll_alltoall, host_staged_transfer_pays_one_chunk) {
  /* pcie4-nop2p: GPU 0 to GPU 1 goes up its switch to the CPU and down
   * (10 GB/s GPU links, 8 GB/s uplink halves, 1 + 2 + 2 + 1 us). sendrecv
   * N = 2 runs both directions, so each uplink half carries two flows at
   * 4 GB/s each; the staged chunk, 128 KiB at the 8 GB/s bottleneck alone,
   * is 16.384 us: T = 16.384 us + 100 MB / 4 GB/s + 6 us. */
  struct harness h;
  harness_load(&h, "tests/data/pcie4-nop2p.yaml");
  cr_assert_eq(harness_run_kind(&h, DS_COLL_SENDRECV, 2, 100e6, -1, 1, DS_COLL_FLOW),
               16384 + 25000000 + 6000);
  /* a message below the chunk is stored whole: 64 KiB / 8 GB/s = 8.192 us */
  cr_assert_eq(harness_run_kind(&h, DS_COLL_SENDRECV, 2, 65536, -1, 1, DS_COLL_FLOW),
               8192 + 16384 + 6000);
  ds_topo_free(h.topo);
}

/* busbw = S/T * factor never passes the bottleneck link a rank sends on. */
Test(coll_alltoall, busbw_never_exceeds_the_bottleneck_link) {
  const char *files[] = {"tests/data/ring8.yaml", "tests/data/pcie4.yaml",
                         "tests/data/pcie4-nop2p.yaml", "tests/data/twonode.yaml"};
  const enum ds_coll_kind kinds[] = {DS_COLL_SENDRECV, DS_COLL_ALLTOALL};
  for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
    struct harness h;
    harness_load(&h, files[f]);
    int32_t n = h.topo->n_gpus;
    double bound = harness_inject_bw(h.topo, n);
    for (int k = 0; k < 2; k++) {
      const struct ds_coll_desc *d = ds_coll_desc_of(kinds[k]);
      for (double s = 1024; s <= 1.1e9; s *= 16) {
        int64_t t = harness_run_kind(&h, kinds[k], n, s, -1, 1, DS_COLL_FLOW);
        double busbw = s / (t * 1e-9) * d->bus_factor(n);
        /* Expected, because busbw counts what one rank sends (S for
         * sendrecv, (N-1)/N S for alltoall), and it cannot send faster
         * than its own links carry. */
        cr_assert_leq(busbw, bound * (1 + 1e-9), "%s %s S=%g: %g > %g", files[f], d->name, s,
                      busbw, bound);
      }
    }
    ds_topo_free(h.topo);
  }
}

Test(coll_alltoall, deterministic) {
  struct harness h;
  harness_load(&h, "tests/data/twonode.yaml");
  int64_t first[HARNESS_MAXR];
  int32_t n = h.topo->n_gpus;
  const enum ds_coll_kind kinds[] = {DS_COLL_ALLTOALL, DS_COLL_SENDRECV};
  for (int k = 0; k < 2; k++) {
    int64_t t0 = harness_run_kind(&h, kinds[k], n, 3e6 + 7, -1, 1, DS_COLL_FLOW);
    memcpy(first, h.done_ns, sizeof first);
    for (int i = 0; i < 3; i++) {
      cr_assert_eq(harness_run_kind(&h, kinds[k], n, 3e6 + 7, -1, 1, DS_COLL_FLOW), t0);
      cr_assert_eq(memcmp(first, h.done_ns, (size_t)n * sizeof *first), 0);
    }
  }
  /* one member keeps its own data: nothing moves, done at 0 */
  cr_assert_eq(harness_run_kind(&h, DS_COLL_ALLTOALL, 1, 1e6, -1, 1, DS_COLL_FLOW), 0);
  cr_assert_eq(harness_run_kind(&h, DS_COLL_SENDRECV, 1, 1e6, -1, 1, DS_COLL_FLOW), 0);
  ds_topo_free(h.topo);
}

Test(coll_alltoall, nccl_p2p_channel_and_protocol_rules) {
  /* addP2pToPlan by hand, one node, 16 p2p channels, 16 per peer, 512 KiB
   * chunks, 8 ranks: nMin = 16 halved while 8 nMin > 16: 2. 1 KiB: one
   * part (chunk/8 = 64 KiB); 32 MiB: 2 parts of 16 MiB = 32 chunks, not
   * above, so 2; 1 GiB: 512 MiB parts, doubled to 4, 8, 16 (no further:
   * 16 > per_peer/2). LL up to channels * 16 KiB. */
  struct ds_nccl_p2p q = {.p2p_channels = 16, .per_peer_channels = 16,
                          .chunk_bytes = 512.0 * 1024, .nranks = 8, .nnodes = 1};
  cr_assert_eq(ds_nccl_p2p_channels(&q, 1024), 1);
  cr_assert_eq(ds_nccl_p2p_channels(&q, 32.0 * 1024 * 1024), 2);
  cr_assert_eq(ds_nccl_p2p_channels(&q, 1024.0 * 1024 * 1024), 16);
  cr_assert_eq(ds_nccl_p2p_choose(&q, 16384), DS_PROTO_LL);
  cr_assert_eq(ds_nccl_p2p_choose(&q, 16385), DS_PROTO_SIMPLE);   /* 1 channel */
  cr_assert_eq(ds_nccl_p2p_choose(&q, 32768), DS_PROTO_SIMPLE);   /* 1: 32K < 64K part */
  cr_assert_eq(ds_nccl_p2p_choose(&q, 100000), DS_PROTO_SIMPLE);  /* 2 channels, 32 KiB */
  /* across nodes: parts of chunk/2 up to one chunk (128 KiB chunks) */
  q = (struct ds_nccl_p2p){.p2p_channels = 16, .per_peer_channels = 8,
                           .chunk_bytes = 128.0 * 1024, .nranks = 2, .nnodes = 2};
  cr_assert_eq(ds_nccl_p2p_channels(&q, 64.0 * 1024), 1);
  cr_assert_eq(ds_nccl_p2p_channels(&q, 256.0 * 1024), 4);   /* min(8, 4 parts) */
  cr_assert_eq(ds_nccl_p2p_channels(&q, 4.0 * 1024 * 1024), 8);
}

Test(coll_alltoall, nccl_allgather_prediction_is_the_ring_with_half_the_steps) {
  /* tuning.cc with nsteps N-1 instead of 2(N-1): on one node the all-gather
   * of S costs the base latency plus half the all-reduce's per-step
   * latencies and half its bandwidth term (algbw busBw N/(N-1) against
   * busBw N/(2(N-1))): AG(S) - base = (AR(S) - base) / 2, for every
   * protocol (no plateau on one node). */
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("topologies/dgx-a100.yaml", NULL, &t, &err), DS_OK, "%s", err.msg);
  struct ds_ring r;
  harness_ring(t, 8, &r);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
  for (int p = 0; p < DS_PROTO_COUNT; p++)
    for (double s = 1024; s < 1e10; s *= 64) {
      double base = m.base_lat_ns[p];
      double ag = ds_nccl_predict_coll_ns(&m, DS_COLL_ALLGATHER, (enum ds_proto)p, s);
      double rs = ds_nccl_predict_coll_ns(&m, DS_COLL_REDUCESCATTER, (enum ds_proto)p, s);
      double ar = ds_nccl_predict_ns(&m, (enum ds_proto)p, s);
      cr_assert_float_eq(ag - base, (ar - base) / 2, 1e-6 * ar, "p %d S %g", p, s);
      cr_assert_float_eq(rs, ag, 1e-9);
    }
  /* gather has no row in tuning.cc (broadcast's: tests/test_nccl_model_plan.c) */
  cr_assert(isinf(ds_nccl_predict_coll_ns(&m, DS_COLL_GATHER, DS_PROTO_SIMPLE, 1e6)));
  /* the cheapest protocol: LL for 1 KiB, Simple for 1 GiB */
  cr_assert_eq(ds_nccl_choose_coll_proto(&m, DS_COLL_ALLGATHER, 1024), DS_PROTO_LL);
  cr_assert_eq(ds_nccl_choose_coll_proto(&m, DS_COLL_ALLGATHER, 1 << 30), DS_PROTO_SIMPLE);
  ds_ring_release(&r);
  ds_topo_free(t);
}

Test(coll_alltoall, host_memory_is_one_shared_link) {
  /* pcie4-nop2p-mem: the staged route GPU 0 -> GPU 3 is GPU -> switch ->
   * CPU -> host memory -> switch -> GPU, the memory link carrying 16/2 =
   * 8 GB/s at no latency. alltoall N = 4, S = 1 GB: 12 transfers of
   * 0.25 GB all cross it (3 GB at 8 GB/s = 375 ms), more than any GPU
   * link (0.75 GB at 10 GB/s) or uplink half (1.5 GB at 8 GB/s) carries,
   * so all share it equally and end together: T = 128 KiB / 8 GB/s +
   * 375 ms + 6 us. Without the key (pcie4-nop2p) the uplink halves bind:
   * 1.5 GB at 8 GB/s = 187.5 ms. */
  struct harness h;
  harness_load(&h, "tests/data/pcie4-nop2p-mem.yaml");
  int32_t links[16], len;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_route(h.topo, 0, 3, links, 16, &len, &err), DS_OK);
  cr_assert_eq(len, 5);
  cr_assert_str_eq(h.topo->links[links[2]].kind, "mem");
  cr_assert_float_eq(h.topo->links[links[2]].bw_bytes_per_s, 8e9, 1);
  cr_assert_eq(harness_run_kind(&h, DS_COLL_ALLTOALL, 4, 1e9, -1, 1, DS_COLL_FLOW),
               16384 + 375000000 + 6000);
  ds_topo_free(h.topo);
  harness_load(&h, "tests/data/pcie4-nop2p.yaml");
  cr_assert_eq(harness_run_kind(&h, DS_COLL_ALLTOALL, 4, 1e9, -1, 1, DS_COLL_FLOW),
               16384 + 187500000 + 6000);
  ds_topo_free(h.topo);
}

static ds_status load_text(const char *text, struct ds_err *err) {
  char path[64];
  strcpy(path, "/tmp/ddpsim-hostmem-XXXXXX");
  ds_test_write_temp(path, text);
  struct ds_topo *t = NULL;
  ds_status st = ds_topo_load(path, "tests/data/gpus.yaml", &t, err);
  ds_topo_free(t);
  unlink(path);
  return st;
}

Test(coll_alltoall, host_mem_bw_is_refused_where_nothing_is_staged) {
  /* host_mem_bw needs pcie-switch and p2p: false; a bad value is located */
  const char *head = "schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 1\ngpus_per_node: 2\n"
                     "intra_node:\n";
  const char *pcie = "  template: pcie-switch\n  link_bw: 1GBps\n  link_lat: 1us\n"
                     "  gpus_per_switch: 2\n  uplink_bw: 1GBps\n  uplink_lat: 1us\n";
  char text[1024];
  struct ds_err err = {0};
  snprintf(text, sizeof text, "%s%s  host_mem_bw: 10GBps\n", head, pcie);
  cr_assert_eq(load_text(text, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, ":13:") && strstr(err.msg, "key 'intra_node.host_mem_bw'") &&
            strstr(err.msg, "p2p: false"), "%s", err.msg);
  snprintf(text, sizeof text, "%s%s  p2p: false\n  host_mem_bw: lots\n", head, pcie);
  cr_assert_eq(load_text(text, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, ":14:") && strstr(err.msg, "host_mem_bw") &&
            strstr(err.msg, "bandwidth"), "%s", err.msg);
  snprintf(text, sizeof text,
           "%s  template: nvswitch\n  link_bw: 1GBps\n  link_lat: 1us\n  host_mem_bw: 1GBps\n",
           head);
  cr_assert_eq(load_text(text, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'intra_node.host_mem_bw': only valid with template pcie-switch"),
            "%s", err.msg);
  snprintf(text, sizeof text, "%s%s  p2p: false\n  host_mem_bw: 10GBps\n", head, pcie);
  cr_assert_eq(load_text(text, &err), DS_OK, "%s", err.msg);
}

static void p2p_of(const char *path, int32_t n, struct ds_nccl_p2p *q) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(path, "topologies/gpus.yaml", &t, &err), DS_OK, "%s", err.msg);
  struct ds_ring r;
  int32_t gpus[64];
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  cr_assert_eq(ds_ring_build_rails(t, gpus, n, &r, &err), DS_OK, "%s", err.msg);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_nccl_p2p_build(t, &r, &m, q, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(q->nranks, n);
  ds_ring_release(&r);
  ds_topo_free(t);
}

Test(coll_alltoall, nccl_p2p_setup_of_shipped_machines) {
  /* By hand from paths.cc and init.cc:
   * dgx-a100: each peer 300 GB/s of NVLink = 12 links -> 24 channels ->
   *   pow2Up 32, capped at p2pnChannels = pow2Up(12 ring channels) = 16;
   *   chunk 512 KiB (all NVLink).
   * 2080ti-2x-nop2p: PCIe through the CPU -> 2, capped at pow2Up(1) = 1;
   *   chunk 128 KiB.
   * 2node-ib: the remote peer over a 50 GB/s NIC -> max(2, ceil(50/14)) =
   *   4, less than an NVLink peer's 36; p2pnChannels pow2Up(8) = 8, and 4 x
   *   ceil(16/8) = 8 fits; chunk 128 KiB across nodes. */
  struct ds_nccl_p2p q;
  p2p_of("topologies/dgx-a100.yaml", 8, &q);
  cr_assert_eq(q.p2p_channels, 16);
  cr_assert_eq(q.per_peer_channels, 16);
  cr_assert_float_eq(q.chunk_bytes, 524288, 0);
  p2p_of("validation/topologies/2080ti-2x-nop2p.yaml", 2, &q);
  cr_assert_eq(q.p2p_channels, 1);
  cr_assert_eq(q.per_peer_channels, 1);
  cr_assert_float_eq(q.chunk_bytes, 131072, 0);
  p2p_of("topologies/2node-ib.yaml", 16, &q);
  cr_assert_eq(q.p2p_channels, 8);
  cr_assert_eq(q.per_peer_channels, 4);
  cr_assert_float_eq(q.chunk_bytes, 131072, 0);
  cr_assert_eq(q.nnodes, 2);
}
