/*
 * Ring all-reduce: closed forms on uniform rings, the pipelined form with
 * chunks, the bus-bandwidth bound, agreement of the per-flow and the
 * aggregated executions, and contention on a shared PCIe uplink.
 */
#include "tests/coll_harness.h"

/* Runs one all-reduce of `bytes` over the ring `gpus` (all ranks enter at
 * t = 0) through ds_coll_allreduce_new and returns the time the last rank
 * finished. */
static int64_t run_allreduce(struct harness *h, const int32_t *gpus, int32_t n,
                             double bytes, enum ds_coll_model model,
                             enum ds_net_mode mode, int32_t chunks) {
  harness_open(h, gpus, n, mode);
  cr_assert_eq(ds_coll_allreduce_new(&h->ring, h->net, model, chunks, bytes, 0,
                                     harness_on_member, h, &h->coll), DS_OK);
  int64_t last = harness_finish(h, n, "ring");
  ds_ring_release(&h->ring);
  return last;
}

static void identity(int32_t *gpus, int32_t n) {
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
}

Test(coll, ring_closed_form_uniform_ring) {
  /* ring8: 8 ranks, 12.5 GB/s links, 1 us per link, a hop crosses 2 links
   * (alpha = 2 us, B = 12.5 GB/s). S = 100 MB: each step moves S/N =
   * 12.5 MB in 1 ms. Expected, because T = 2(N-1)*alpha + 2(N-1)/N * S/B:
   * 14 * 2 us + 14 * 1 ms = 14.028 ms, in both executions. */
  struct harness h;
  int32_t gpus[8];
  harness_load(&h, "tests/data/ring8.yaml");
  identity(gpus, 8);
  cr_assert_eq(run_allreduce(&h, gpus, 8, 100e6, DS_COLL_FLOW, DS_NET_MAXMIN, 1),
               14028000);
  cr_assert_eq(run_allreduce(&h, gpus, 8, 100e6, DS_COLL_AGGREGATE, DS_NET_MAXMIN, 1),
               14028000);
  cr_assert_eq(run_allreduce(&h, gpus, 8, 100e6, DS_COLL_FLOW, DS_NET_CONSTANT, 1),
               14028000);
  ds_topo_free(h.topo);
}

Test(coll, ring_closed_form_many_sizes_and_ranks) {
  /* Same formula for N = 2..8 and odd sizes; per-step rounding to the
   * nanosecond may add at most half a ns per step. */
  struct harness h;
  int32_t gpus[8];
  harness_load(&h, "tests/data/ring8.yaml");
  identity(gpus, 8);
  const double sizes[] = {1, 1000, 123457, 8388608, 1e9 + 7};
  for (int32_t n = 2; n <= 8; n++)
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
      double s = sizes[k];
      double expect = 2.0 * (n - 1) * 2000 + 2.0 * (n - 1) / n * s / 12.5e9 * 1e9;
      for (int m = 0; m < 2; m++) {
        int64_t got = run_allreduce(&h, gpus, n, s, m ? DS_COLL_AGGREGATE : DS_COLL_FLOW,
                                    DS_NET_MAXMIN, 1);
        cr_assert_leq(fabs((double)got - expect), (n - 1) * 1.0 + 1,
                      "N=%d S=%g model=%d: got %lld, expected %.1f", n, s, m,
                      (long long)got, expect);
      }
    }
  ds_topo_free(h.topo);
}

Test(coll, ring_pipelined_chunks) {
  /* With C chunks per step (t = S/(N C B) per chunk), rank i sends chunk
   * (k, c) once (k-1, c) arrived and its link is free. Symmetric ranks
   * give start(k) = start(k-1) + max(C t, t + alpha), so
   *   T = (2N-3) max(C t, t + alpha) + C t + alpha.
   * ring8, S = 100 MB, C = 4: t = 250 us, alpha = 2 us: C t wins:
   * 13 * 1000 us + 1000 us + 2 us = 14.002 ms. */
  struct harness h;
  int32_t gpus[8];
  harness_load(&h, "tests/data/ring8.yaml");
  identity(gpus, 8);
  cr_assert_eq(run_allreduce(&h, gpus, 8, 100e6, DS_COLL_FLOW, DS_NET_MAXMIN, 4),
               14002000);
  /* Tiny message, latency bound: t = 10 ns, C = 4: max(40 ns, 2010 ns):
   * 13 * 2010 + 40 + 2000 = 28170 ns. */
  cr_assert_eq(run_allreduce(&h, gpus, 8, 8 * 4 * 125, DS_COLL_FLOW, DS_NET_MAXMIN, 4),
               28170);
  ds_topo_free(h.topo);
}

static void check_busbw(const char *file, int32_t n) {
  struct harness h;
  int32_t gpus[HARNESS_MAXR];
  harness_load(&h, file);
  identity(gpus, n);
  struct ds_ring r;
  harness_ring(h.topo, n, &r);
  double bottleneck = r.min_bw;
  ds_ring_release(&r);
  for (double s = 1024; s <= 1.1e9; s *= 8)
    for (int m = 0; m < 2; m++) {
      int64_t t = run_allreduce(&h, gpus, n, s, m ? DS_COLL_AGGREGATE : DS_COLL_FLOW,
                                DS_NET_MAXMIN, 1);
      double busbw = s / (t * 1e-9) * 2.0 * (n - 1) / n;
      /* Expected, because every byte of the 2(N-1)/N * S a rank sends
       * crosses the bottleneck link at most at its capacity. */
      cr_assert_leq(busbw, bottleneck * (1 + 1e-9), "%s S=%g: busbw %g > %g", file,
                    s, busbw, bottleneck);
    }
  ds_topo_free(h.topo);
}

Test(coll, busbw_never_exceeds_the_bottleneck_link) {
  check_busbw("tests/data/ring8.yaml", 8);
  check_busbw("tests/data/twonode.yaml", 8);
  check_busbw("tests/data/pcie4.yaml", 4);
}

Test(coll, aggregate_matches_flow_on_two_nodes) {
  /* twonode: 6 NVSwitch hops (10 GB/s, 2 us) and 2 network hops (5 GB/s
   * bottleneck, 0.5+2+2+0.5 = 5 us). 64 MB: a step moves 8 MB, 0.8 ms on
   * NVSwitch, 1.6 ms on the network. Expected, because the slowest sender
   * paces all 14 steps and only its own hop's latency is not hidden
   * (ds_ring_steps_ns: a run of hops scores sum (d + l - 1.6 ms) + 14 *
   * 1.6 ms; a network hop adds 5 us, an NVSwitch hop 0.8 + 0.002 - 1.6 < 0,
   * so the best run is one network hop):
   *   T = 14 * 1.6 ms + 5 us = 22.405 ms,
   * aggregated (the form) and per flow (within a ns of rounding per step).
   * The aggregate once charged 14 hops' latency, 40 us, on top. */
  struct harness h;
  int32_t gpus[8];
  harness_load(&h, "tests/data/twonode.yaml");
  identity(gpus, 8);
  int64_t flow = run_allreduce(&h, gpus, 8, 64e6, DS_COLL_FLOW, DS_NET_MAXMIN, 1);
  harness_ring(h.topo, 8, &h.ring);
  double closed = ds_ring_allreduce_ns(&h.ring, 64e6);
  ds_ring_release(&h.ring);
  int64_t agg = run_allreduce(&h, gpus, 8, 64e6, DS_COLL_AGGREGATE, DS_NET_MAXMIN, 1);
  cr_assert_float_eq(closed, 22405000, 1e-3);
  cr_assert_leq(llabs(agg - 22405000), 1, "aggregate %lld", (long long)agg);
  cr_assert_leq(llabs(flow - agg), 14, "flow %lld agg %lld", (long long)flow, (long long)agg);
  ds_topo_free(h.topo);
}

Test(coll, shared_pcie_uplink_halves_the_ring) {
  /* pcie4: GPUs 0,1 under switch A, 2,3 under switch B. The ring 0-1-2-3
   * crosses each uplink direction once: no sharing. The ring 0-2-1-3 sends
   * 0->2 and 1->3 both up through A's uplink (and down into B), so those
   * hops get 5 GB/s each.
   *   ring 0-1-2-3: hops of 2, 4, 2, 4 links (1 us each), B 10 GB/s; the
   *     6 steps cross 6 consecutive hops, at most 2 * 12 - (2 + 4) = 18 us:
   *     T = 18 us + 6 * (40 MB/4) / 10 GB/s = 18 us + 6 ms
   *   ring 0-2-1-3: every hop crosses 4 links (4 us), B = 5 GB/s:
   *     T = 24 us + 12 ms (aggregate: the link is crossed twice; per flow:
   *     two flows share it). */
  struct harness h;
  harness_load(&h, "tests/data/pcie4.yaml");
  const int32_t straight[] = {0, 1, 2, 3}, crossed[] = {0, 2, 1, 3};
  cr_assert_eq(run_allreduce(&h, straight, 4, 40e6, DS_COLL_AGGREGATE, DS_NET_MAXMIN, 1),
               6018000);
  cr_assert_eq(run_allreduce(&h, straight, 4, 40e6, DS_COLL_FLOW, DS_NET_MAXMIN, 1),
               6018000);
  cr_assert_eq(run_allreduce(&h, crossed, 4, 40e6, DS_COLL_AGGREGATE, DS_NET_MAXMIN, 1),
               12024000);
  cr_assert_eq(run_allreduce(&h, crossed, 4, 40e6, DS_COLL_FLOW, DS_NET_MAXMIN, 1),
               12024000);
  /* alpha-beta ignores the sharing: 6 ms again. */
  cr_assert_eq(run_allreduce(&h, crossed, 4, 40e6, DS_COLL_FLOW, DS_NET_CONSTANT, 1),
               6024000);
  ds_topo_free(h.topo);
}

Test(coll, single_rank_is_free) {
  struct harness h;
  int32_t gpus[1] = {0};
  harness_load(&h, "tests/data/ring8.yaml");
  cr_assert_eq(run_allreduce(&h, gpus, 1, 1e6, DS_COLL_FLOW, DS_NET_MAXMIN, 1), 0);
  ds_topo_free(h.topo);
}

/* NCCL protocols and channels (struct ds_coll_proto, by hand). */

/* As run_allreduce through ds_coll_allreduce_new_proto, one chunk, the
 * max-min network; keeps h->ring for the caller to read and release. */
static int64_t run_proto(struct harness *h, const int32_t *gpus, int32_t n, double bytes,
                         enum ds_coll_model model, const struct ds_coll_proto *p) {
  harness_open(h, gpus, n, DS_NET_MAXMIN);
  cr_assert_eq(ds_coll_allreduce_new_proto(&h->ring, h->net, model, 1, bytes, p, 0,
                                           harness_on_member, h, &h->coll), DS_OK);
  return harness_finish(h, n, "ring/proto");
}

static struct ds_coll_proto hand_proto(int32_t channels, double cap, double wire) {
  struct ds_coll_proto p = {.proto = DS_PROTO_LL, .channels = channels,
                            .wire_factor = wire, .chan_cap_bytes_per_s = cap,
                            .hop_lat_ns = {600, 1000, 2700}, .start_lat_ns = 5000};
  return p;
}

Test(coll, proto_closed_form_capped_channels) {
  /* ring8 (NVSwitch, 12.5 GB/s links), LL-like protocol: C = 4 channels
   * capped at 2 GB/s (C * cap = 8 GB/s < 12.5), wire factor 2, 600 ns per
   * step (NVLINK class), 5 us at the start. S = 80 MB. Expected, because
   * every step moves S/N * w / C = 5 MB per channel at its 2 GB/s cap
   * (2.5 ms) and waits one hop latency:
   *   T = 5 us + 14 * 0.6 us + 14/8 * 80 MB * 2 / 8 GB/s = 35.0134 ms,
   * per flow and aggregated, and the closed-form helper agrees. */
  struct harness h;
  int32_t gpus[8];
  harness_load(&h, "tests/data/ring8.yaml");
  identity(gpus, 8);
  struct ds_coll_proto p = hand_proto(4, 2e9, 2);
  cr_assert_eq(run_proto(&h, gpus, 8, 80e6, DS_COLL_FLOW, &p), 35013400);
  double closed = ds_ring_allreduce_proto_ns(&h.ring, &p, 80e6);
  ds_ring_release(&h.ring);
  cr_assert_float_eq(closed, 35013400, 1e-3);
  cr_assert_eq(run_proto(&h, gpus, 8, 80e6, DS_COLL_AGGREGATE, &p), 35013400);
  ds_ring_release(&h.ring);
  ds_topo_free(h.topo);
}

Test(coll, proto_link_bound_when_channels_exceed_it) {
  /* C = 8 channels capped at 2 GB/s (16 GB/s > the 12.5 GB/s link): the C
   * flows of a hop share the link, 12.5/8 GB/s each, and the caps do not
   * bind. Simple-like (w = 1). Expected, because
   *   T = 5 us + 14 * 0.6 us + 14/8 * 100 MB / 12.5 GB/s = 14.0134 ms,
   * for N = 2..8 the same with 2(N-1) steps (within a ns per step). */
  struct harness h;
  int32_t gpus[8];
  harness_load(&h, "tests/data/ring8.yaml");
  identity(gpus, 8);
  struct ds_coll_proto p = hand_proto(8, 2e9, 1);
  for (int32_t n = 2; n <= 8; n++)
    for (int m = 0; m < 2; m++) {
      double expect = 5000 + 2.0 * (n - 1) * 600 + 2.0 * (n - 1) / n * 100e6 / 12.5e9 * 1e9;
      int64_t got = run_proto(&h, gpus, n, 100e6, m ? DS_COLL_AGGREGATE : DS_COLL_FLOW, &p);
      ds_ring_release(&h.ring);
      cr_assert_leq(fabs((double)got - expect), n, "N=%d m=%d: %lld vs %.0f", n, m,
                    (long long)got, expect);
    }
  ds_topo_free(h.topo);
}

Test(coll, proto_contention_stays_real) {
  /* pcie4, ring 0-2-1-3: hops 0->2 and 1->3 both cross switch A's uplink
   * (and B's downlink), so a link carries 2 hops x C = 2 channels = 4 flows
   * of 10/4 GB/s; caps of 4 GB/s do not bind. Every hop is PCI class
   * (1 us per step) and its latency is the same, so the 6 steps cost 6 us.
   * Expected, because T = 5 us + 6 * 1 us + 6/4 * 40 MB / (2 * 2.5 GB/s)
   * = 12.011 ms: the same halving as the plain ring, now with channels. */
  struct harness h;
  harness_load(&h, "tests/data/pcie4.yaml");
  const int32_t crossed[] = {0, 2, 1, 3};
  struct ds_coll_proto p = hand_proto(2, 4e9, 1);
  cr_assert_eq(run_proto(&h, crossed, 4, 40e6, DS_COLL_FLOW, &p), 12011000);
  ds_ring_release(&h.ring);
  cr_assert_eq(run_proto(&h, crossed, 4, 40e6, DS_COLL_AGGREGATE, &p), 12011000);
  ds_ring_release(&h.ring);
  ds_topo_free(h.topo);
}

Test(coll, proto_null_is_the_plain_ring) {
  /* ds_coll_allreduce_new_proto(NULL) is ds_coll_allreduce_new: 14.028 ms
   * on ring8 at 100 MB (see ring_closed_form_uniform_ring). */
  struct harness h;
  int32_t gpus[8];
  harness_load(&h, "tests/data/ring8.yaml");
  identity(gpus, 8);
  cr_assert_eq(run_proto(&h, gpus, 8, 100e6, DS_COLL_FLOW, NULL), 14028000);
  ds_ring_release(&h.ring);
  ds_topo_free(h.topo);
}

Test(coll, hop_classes_and_proto_names) {
  /* ring8 hops are NVLink; pcie4's PCIe; twonode's boundary hops cross IB. */
  struct harness h;
  struct ds_err err = {0};
  int32_t gpus[8];
  identity(gpus, 8);
  harness_load(&h, "tests/data/twonode.yaml");
  cr_assert_eq(ds_ring_build(h.topo, gpus, 8, &h.ring, &err), DS_OK);
  int net = 0;
  for (int32_t i = 0; i < 8; i++) net += h.ring.hop_class[i] == DS_HOP_NET;
  cr_assert_eq(net, 2);
  ds_ring_release(&h.ring);
  ds_topo_free(h.topo);
  harness_load(&h, "tests/data/pcie4.yaml");
  cr_assert_eq(ds_ring_build(h.topo, gpus, 4, &h.ring, &err), DS_OK);
  cr_assert_eq(h.ring.hop_class[0], DS_HOP_PCI);
  ds_ring_release(&h.ring);
  ds_topo_free(h.topo);
  enum ds_proto p;
  cr_assert_eq(ds_proto_parse("ll128", &p), DS_OK);
  cr_assert_eq(p, DS_PROTO_LL128);
  cr_assert_str_eq(ds_proto_name(DS_PROTO_SIMPLE), "Simple");
  cr_assert_str_eq(ds_proto_name(DS_PROTO_COUNT), "none");
  cr_assert_eq(ds_proto_parse("tree", &p), DS_EUSAGE);
}

/* The per-flow ring's time from NCCL's step dataflow, worked apart from the
 * simulator. NCCL's ring all-reduce (src/device/all_reduce.h, runRing) has
 * every rank run its 2(N-1) steps in order, each step a send of one chunk
 * that needs the chunk of the step before from the previous rank
 * (prims_simple.h waits on the peer's FIFO step counter); nothing else
 * paces it. With one piece per step, rank i's send s starts at
 *   S(i,s) = max(S(i,s-1) + d_i, S(i-1,s-1) + d_(i-1) + l_(i-1)),
 * d_i the hop's data time (chunk / bottleneck, alone on its links) and l_i
 * its latency, each rounded to the ns as the network does; rank i is done
 * when its last send has left and the last chunk has arrived. */
static int64_t ring_dataflow_ns(const struct ds_ring *r, double chunk_bytes) {
  int32_t n = r->n, steps = 2 * (n - 1);
  int64_t d[HARNESS_MAXR], l[HARNESS_MAXR], s[HARNESS_MAXR], next[HARNESS_MAXR];
  for (int32_t i = 0; i < n; i++) {
    d[i] = llround(chunk_bytes / r->hop_bw[i] * 1e9);
    l[i] = llround(r->hop_lat_ns[i]);
    s[i] = 0;
  }
  for (int32_t k = 1; k < steps; k++) {
    for (int32_t i = 0; i < n; i++) {
      int32_t p = (i + n - 1) % n;
      int64_t own = s[i] + d[i], in = s[p] + d[p] + l[p];
      next[i] = own > in ? own : in;
    }
    memcpy(s, next, (size_t)n * sizeof *s);
  }
  int64_t last = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t p = (i + n - 1) % n;
    int64_t own = s[i] + d[i], in = s[p] + d[p] + l[p];
    int64_t done = own > in ? own : in;
    if (done > last) last = done;
  }
  return last;
}

Test(coll, per_flow_ring_is_the_step_dataflow_and_the_aggregate_its_closed_form) {
  /* twonode: 6 NVSwitch hops (10 GB/s, 2 us) and 2 network hops (5 GB/s,
   * 5 us). Per flow, the ring is the dataflow above, to the ns. The
   * aggregate runs ds_ring_steps_ns, that dataflow's longest path: within a
   * ns per step of rounding of it. At 80 kB (10 kB chunks: 1 us on
   * NVSwitch, 2 us on the network) every hop's d + l is above the slowest
   * d, so the path crosses 14 consecutive hops: 2 * (6 * 3 + 2 * 7) - (3 +
   * 3) = 58 us; the aggregate once charged the 14 latencies (40 us) on top
   * of 14 steps at the bottleneck (28 us): 68 us, +17 %. From 8 MB the
   * slowest hop paces every step and only its latency shows (14 d_net +
   * 5 us). Issue #14 decided the per-flow ring is NCCL's mechanism. */
  const double sizes[] = {80e3, 8e6, 64e6};
  const double want_ns[] = {58000, 14 * 0.2e6 + 5000, 14 * 1.6e6 + 5000};
  for (int k = 0; k < 3; k++) {
    struct harness h;
    int32_t gpus[8];
    harness_load(&h, "tests/data/twonode.yaml");
    identity(gpus, 8);
    harness_open(&h, gpus, 8, DS_NET_MAXMIN);
    int64_t want = ring_dataflow_ns(&h.ring, sizes[k] / 8);
    cr_assert_float_eq(ds_ring_steps_ns(&h.ring, 14, sizes[k] / 8), want_ns[k], 1e-3);
    cr_assert_eq(ds_coll_allreduce_new(&h.ring, h.net, DS_COLL_FLOW, 1, sizes[k], 0,
                                       harness_on_member, &h, &h.coll), DS_OK);
    int64_t flow = harness_finish(&h, 8, "ring");
    ds_ring_release(&h.ring);
    int32_t ids[8];
    identity(ids, 8);
    int64_t agg = run_allreduce(&h, ids, 8, sizes[k], DS_COLL_AGGREGATE, DS_NET_MAXMIN, 1);
    cr_assert_eq(flow, want, "%g B: per flow %lld, dataflow %lld", sizes[k], (long long)flow,
                 (long long)want);
    cr_assert_leq(fabs((double)agg - want_ns[k]), 1, "%g B: aggregate %lld vs %g", sizes[k],
                  (long long)agg, want_ns[k]);
    cr_assert_leq(llabs(agg - flow), 14, "%g B: aggregate %lld, per flow %lld", sizes[k],
                  (long long)agg, (long long)flow);
    ds_topo_free(h.topo);
  }
}

/* The step dataflow of ring_dataflow_ns for `steps` steps, in doubles (no
 * rounding), on hops of data time d and latency l. */
static double dataflow_steps(const double *d, const double *l, int32_t n, int32_t steps) {
  double s[HARNESS_MAXR] = {0}, next[HARNESS_MAXR];
  for (int32_t k = 1; k < steps; k++) {
    for (int32_t i = 0; i < n; i++) {
      int32_t p = (i + n - 1) % n;
      next[i] = fmax(s[i] + d[i], s[p] + d[p] + l[p]);
    }
    memcpy(s, next, (size_t)n * sizeof *s);
  }
  double last = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t p = (i + n - 1) % n;
    last = fmax(last, fmax(s[i] + d[i], s[p] + d[p] + l[p]));
  }
  return last;
}

Test(coll, ring_steps_closed_form_is_the_dataflow_on_irregular_rings) {
  /* ds_ring_steps_ns's window form against the dataflow stepped through,
   * on rings of 2..40 hops with bandwidths and latencies drawn from a few
   * values (ties, runs of slow hops, slow hops with short latencies) and
   * from a continuum, for 2(N-1) steps (all-reduce), N-1 (all-gather) and
   * 1. Expected, because the dataflow's longest path crosses a run of
   * consecutive hops and waits out its other steps on the run's slowest
   * hop, and the form maximizes exactly that. */
  const double bws[] = {5e9, 10e9, 12.5e9, 50e9};
  const double lats[] = {0, 500, 2000, 14000};
  uint64_t x = 88172645463325252ull;
  for (int trial = 0; trial < 600; trial++) {
    int32_t n = 2 + (int32_t)(trial % 39);
    double lat[HARNESS_MAXR], bw[HARNESS_MAXR], d[HARNESS_MAXR];
    for (int32_t i = 0; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if (trial % 3 == 2) {
        bw[i] = 1e9 + (double)(x % 100000) * 1e6;
        lat[i] = (double)((x >> 20) % 20000);
      } else {
        bw[i] = bws[x % 4];
        lat[i] = lats[(x >> 8) % 4];
      }
    }
    struct ds_ring r = {.n = n, .hop_lat_ns = lat, .hop_bw = bw};
    const double step_bytes[] = {1e3, 1e5, 1e7};
    const int32_t steps[] = {2 * (n - 1), n - 1, 1};
    for (int b = 0; b < 3; b++)
      for (int k = 0; k < 3; k++) {
        for (int32_t i = 0; i < n; i++) d[i] = step_bytes[b] / bw[i] * 1e9;
        double want = dataflow_steps(d, lat, n, steps[k]);
        double got = ds_ring_steps_ns(&r, steps[k], step_bytes[b]);
        cr_assert_leq(fabs(got - want), 1e-9 * want + 1e-6,
                      "trial %d n=%d steps=%d %g B: form %.3f, dataflow %.3f", trial, n,
                      steps[k], step_bytes[b], got, want);
      }
  }
}

/* --ring-chunks' one rule for both commands: it cuts ring steps and
 * chains; there are none in the p2p kinds and the direct and
 * reduce-broadcast all-reduces, and NCCL's model pipelines by its own
 * pieces (the no-step reason comes first, as `ddpsim collective` says it
 * before it builds the model). */
Test(coll, ring_chunks_cut_ring_steps_and_chains_only) {
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_ALLREDUCE, DS_AR_RING, 0), DS_RING_CHUNKS_CUT);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_ALLREDUCE, DS_AR_TREE, 0), DS_RING_CHUNKS_CUT);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_ALLREDUCE, DS_AR_HIER, 0), DS_RING_CHUNKS_CUT);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_BROADCAST, DS_AR_DIRECT, 0), DS_RING_CHUNKS_CUT);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_ALLGATHER, DS_AR_RING, 0), DS_RING_CHUNKS_CUT);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_ALLREDUCE, DS_AR_RING, 1), DS_RING_CHUNKS_NCCL);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_REDUCE, DS_AR_RING, 1), DS_RING_CHUNKS_NCCL);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_ALLREDUCE, DS_AR_DIRECT, 0),
               DS_RING_CHUNKS_NO_STEP);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_ALLREDUCE, DS_AR_REDUCE_BCAST, 1),
               DS_RING_CHUNKS_NO_STEP);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_GATHER, DS_AR_RING, 0), DS_RING_CHUNKS_NO_STEP);
  cr_assert_eq(ds_coll_ring_chunks_use(DS_COLL_ALLTOALL, DS_AR_RING, 1),
               DS_RING_CHUNKS_NO_STEP);
}

/* Flows the network re-solved over one all-reduce of `bytes` on ring8 with
 * `chunks` pieces per step: every piece is a flow, solved once at least. */
static uint64_t ring_flows_solved(double bytes, int32_t chunks) {
  struct harness h;
  int32_t gpus[8];
  harness_load(&h, "tests/data/ring8.yaml");
  identity(gpus, 8);
  harness_open(&h, gpus, 8, DS_NET_MAXMIN);
  cr_assert_eq(ds_coll_allreduce_new(&h.ring, h.net, DS_COLL_FLOW, chunks, bytes, 0,
                                     harness_on_member, &h, &h.coll), DS_OK);
  for (int32_t i = 0; i < 8; i++) cr_assert_eq(ds_coll_enter(h.coll, i), DS_OK);
  cr_assert_eq(ds_engine_run(h.eng, INT64_MAX), DS_OK);
  uint64_t solved = ds__net_solved(h.net);
  harness_release(&h);
  ds_topo_free(h.topo);
  return solved;
}

/* --ring-chunks N cuts a step into at most floor(step / 4 B) pieces (one
 * fp32 element each, NCCL's runRing never cuts a chunk of nothing), at
 * least 1 (issue #12: an 8-byte all-reduce with --ring-chunks 4096 ran
 * 8 x 14 x 4096 flows of 1/512 byte each). */
Test(coll, ring_chunks_are_bounded_by_the_message) {
  cr_assert_eq(ds_coll_pieces_bound(4096, 8.0 / 8), 1);
  cr_assert_eq(ds_coll_pieces_bound(4096, 4000), 1000);
  cr_assert_eq(ds_coll_pieces_bound(4, 4000), 4);
  cr_assert_eq(ds_coll_pieces_bound(3, 3.99), 1);
  cr_assert_eq(ds_coll_pieces_bound(4096, 0), 1);
  /* 8 B over 8 ranks: 1 byte a step, one piece whatever was asked */
  cr_assert_eq(ring_flows_solved(8, 4096), ring_flows_solved(8, 1));
  /* 96 B: 12 B, three floats a step, so three pieces at most */
  uint64_t three = ring_flows_solved(96, 3);
  cr_assert_eq(ring_flows_solved(96, 4096), three);
  cr_assert_gt(three, ring_flows_solved(96, 1));
  /* large messages keep every piece asked for */
  cr_assert_gt(ring_flows_solved(8e6, 4096), ring_flows_solved(8e6, 1000));
  /* the plain tree's pieces likewise (8 B, depth 3: two floats, two
   * pieces, was 4096) */
  cr_assert_eq(ds_coll_tree_pieces(8, 3, 4096, DS_TREE_MIN_PIECE_BYTES), 2);
  cr_assert_eq(ds_coll_tree_pieces(2, 3, 4096, DS_TREE_MIN_PIECE_BYTES), 1);
  cr_assert_eq(ds_coll_tree_pieces(4096, 3, 4096, DS_TREE_MIN_PIECE_BYTES), 1024);
  cr_assert_eq(ds_coll_tree_pieces(64e6, 3, 4096, DS_TREE_MIN_PIECE_BYTES), 4096);
}
