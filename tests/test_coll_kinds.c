/*
 * Every collective kind through the generic interface (ds_coll_new): closed
 * forms on a uniform switch (ring8: a rank-to-rank hop crosses two 12.5
 * GB/s, 1 us links, so alpha = 2 us, B = 12.5 GB/s), the bus bandwidth
 * bound, and what ds_coll_new refuses.
 */
#include "tests/coll_harness.h"

#define ALPHA 2000.0  /* ns */
#define BW 12.5       /* bytes per ns */

Test(coll_kinds, allgather_and_reducescatter_closed_form) {
  /* N-1 ring steps of S/N each. Expected, because every step waits one hop
   * latency after its S/N bytes (trailing latency, one chunk), the same on
   * every rank: T = (N-1) alpha + (N-1)/N S/B. ring8, S = 80 MB: 7 * 2 us +
   * 7 * 0.8 ms = 5.614 ms, per flow and aggregated (whose latency is the
   * largest sum of N-1 consecutive hops: 7 * 2 us). N = 2..8 and odd sizes
   * within half a ns per step. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  const enum ds_coll_kind kinds[] = {DS_COLL_ALLGATHER, DS_COLL_REDUCESCATTER};
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(harness_run_kind(&h, kinds[k], 8, 80e6, -1, 1, DS_COLL_FLOW), 5614000);
    cr_assert_eq(harness_run_kind(&h, kinds[k], 8, 80e6, -1, 1, DS_COLL_AGGREGATE), 5614000);
    const double sizes[] = {1, 123457, 8388608, 1e9 + 7};
    for (int32_t n = 2; n <= 8; n++)
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int m = 0; m < 2; m++) {
          double expect = (n - 1) * ALPHA + (double)(n - 1) / n * sizes[s] / BW;
          int64_t got = harness_run_kind(&h, kinds[k], n, sizes[s], -1, 1,
                                 m ? DS_COLL_AGGREGATE : DS_COLL_FLOW);
          cr_assert_leq(fabs((double)got - expect), n, "kind %d N=%d S=%g m=%d: %lld vs %.1f",
                        kinds[k], n, sizes[s], m, (long long)got, expect);
        }
  }
  ds_topo_free(h.topo);
}

Test(coll_kinds, allgather_pipelined_chunks) {
  /* As the all-reduce's pipelined form with N-1 steps instead of 2(N-1):
   * T = (N-2) max(C t, t + alpha) + C t + alpha, t = S/(N C B). ring8,
   * S = 80 MB, C = 4: t = 200 us, C t = 800 us wins: 6 * 800 + 800 + 2 us
   * = 5.602 ms. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  cr_assert_eq(harness_run_kind(&h, DS_COLL_ALLGATHER, 8, 80e6, -1, 4, DS_COLL_FLOW), 5602000);
  ds_topo_free(h.topo);
}

Test(coll_kinds, broadcast_and_reduce_chain_closed_form) {
  /* A chain of N ranks along the ring, C chunks of t = S/(C B). Position p
   * sends chunk c at p (t + alpha) + c t (its link frees after t, the
   * latency is trailing), so the last position holds everything at
   *   T = (N-1) alpha + (N+C-2) S/(C B).
   * ring8, S = 100 MB (t = 8 ms / C):
   *   C = 1: 7 * 2 us + 7 * 8 ms   = 56.014 ms  (store and forward);
   *   C = 4: 7 * 2 us + 10 * 2 ms  = 20.014 ms;
   *   C = 100: 14 us + 106 * 80 us = 8.494 ms   (-> S/B as C grows).
   * Every rooted position alike: root 0 and root 5, broadcast and reduce. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  const enum ds_coll_kind kinds[] = {DS_COLL_BROADCAST, DS_COLL_REDUCE};
  for (int k = 0; k < 2; k++)
    for (int32_t root = 0; root <= 5; root += 5) {
      cr_assert_eq(harness_run_kind(&h, kinds[k], 8, 100e6, root, 1, DS_COLL_FLOW), 56014000);
      cr_assert_eq(harness_run_kind(&h, kinds[k], 8, 100e6, root, 4, DS_COLL_FLOW), 20014000);
      cr_assert_eq(harness_run_kind(&h, kinds[k], 8, 100e6, root, 100, DS_COLL_FLOW), 8494000);
    }
  ds_topo_free(h.topo);
}

Test(coll_kinds, broadcast_chain_under_a_protocol) {
  /* NCCL's ring broadcast (ds_nccl_chain_proto's parameters, set by hand):
   * C = 4 channels of cap 1 GB/s (4 GB/s together, under the 12.5 GB/s
   * links), LL's wire factor 2, 0.6 us per hop in place of the links' 2
   * us, 20.6 us at the start. ring8, S = 1 MB in K = 4 pieces: each flow
   * carries S/K * 2 / C = 125 kB at its cap, t = 125 us, so
   *   T = 20.6 + 7 * 0.6 + (N+K-2) t = 24.8 + 10 * 125 = 1274.8 us;
   * the root finishes when its last piece has left: 20.6 + 4 * 125 =
   * 520.6 us (the hop latency trails). */
  struct harness h;
  struct ds_err err = {0};
  harness_load(&h, "tests/data/ring8.yaml");
  struct ds_coll_proto p = {.proto = DS_PROTO_LL, .channels = 4, .wire_factor = 2,
                            .chan_cap_bytes_per_s = 1e9, .start_lat_ns = 20600,
                            .hop_lat_ns = {600, 600, 600}};
  struct ds_coll_spec spec = {.kind = DS_COLL_BROADCAST, .chunks = 4, .bytes = 1e6,
                              .root = 0, .proto = &p};
  cr_assert_eq(harness_new_spec(&h, 8, spec, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(harness_finish(&h, 8, "broadcast"), 1274800);
  cr_assert_eq(h.done_ns[0], 520600);
  harness_release(&h);
  ds_topo_free(h.topo);
}

Test(coll_kinds, broadcast_chain_of_whole_pieces_and_a_rest) {
  /* NCCL cuts a channel's share into whole pieces and a shorter last one
   * (broadcast.h runRing; proto.piece_bytes). 4 ranks of ring8, C = 2
   * channels of cap 1 GB/s, wire factor 2, 0.6 us per hop, 20.6 us at the
   * start; S = 2.5 MB: a share of 1.25 MB per channel in K = 3 pieces of
   * P = 500 kB, 500 kB and r = 250 kB, i.e. flows of 1 MB, 1 MB, 0.5 MB:
   * 1000, 1000 and 500 us at the cap (2 GB/s together, under the links).
   * By hand: the root sends at 20.6, 1020.6, 2020.6; position 1 gets each
   * 0.6 us after it leaves and forwards at 1021.2, 2021.2, 3021.2 (its
   * link is busy until then); position 2 at 2021.8, 3021.8, 4021.8; the
   * last piece reaches position 3 at 4521.8 + 0.6 = 4522.4 us
   *   = start + (N-1) h + ((N-1) P + (K-2) P + r) w / c.
   * Three equal pieces of 416.7 kB would take 22.4 + (N+K-2) 833.3 = 4189.1
   * us. Pieces that do not make the share are refused.
   * NCCL's plan gives its first channels whole cells and the last the rest
   * (proto.share_bytes): with the fullest channel's share 1.4 MB (the other
   * 1.1 MB) the chain runs as that channel, r = 1.4 MB - 2 P = 400 kB, a
   * flow of 800 us: the root sends at 20.6, 1020.6, 2020.6 (until 2820.6);
   * position 1 forwards at 1021.2, 2021.2 and, its link busy, 3021.2 (until
   * 3821.2); position 2 at 2021.8, 3021.8, 4021.8 (until 4821.8); position
   * 3 has it at 4822.4 us = 22.4 + (3 P + P + 400 kB) 2 / 1 GB/s. A share
   * above S or below S / C is refused. */
  struct harness h;
  struct ds_err err = {0};
  harness_load(&h, "tests/data/ring8.yaml");
  struct ds_coll_proto p = {.proto = DS_PROTO_SIMPLE, .channels = 2, .wire_factor = 2,
                            .chan_cap_bytes_per_s = 1e9, .start_lat_ns = 20600,
                            .hop_lat_ns = {600, 600, 600}, .piece_bytes = 500e3};
  struct ds_coll_spec spec = {.kind = DS_COLL_BROADCAST, .chunks = 3, .bytes = 2.5e6,
                              .root = 0, .proto = &p};
  cr_assert_eq(harness_new_spec(&h, 4, spec, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(harness_finish(&h, 4, "broadcast"), 4522400);
  cr_assert_eq(h.done_ns[0], 2520600); /* its last send has left */
  harness_release(&h);
  p.piece_bytes = 0;
  cr_assert_eq(harness_new_spec(&h, 4, spec, &err), DS_OK, "%s", err.msg);
  /* each of the 5 flows on the critical path ends on a whole ns */
  int64_t eq = harness_finish(&h, 4, "broadcast");
  cr_assert_leq(llabs(eq - 4189067), 3, "%lld", (long long)eq);
  harness_release(&h);
  p.piece_bytes = 500e3;
  p.share_bytes = 1.4e6;
  cr_assert_eq(harness_new_spec(&h, 4, spec, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(harness_finish(&h, 4, "broadcast"), 4822400);
  cr_assert_eq(h.done_ns[0], 2820600);
  harness_release(&h);
  const double bad_shares[] = {2.6e6, 1.2e6};
  for (int i = 0; i < 2; i++) {
    p.share_bytes = bad_shares[i];
    cr_assert_eq(harness_new_spec(&h, 4, spec, &err), DS_EINTERNAL, "%g", bad_shares[i]);
    harness_release(&h);
  }
  p.share_bytes = 0;
  p.piece_bytes = 400e3; /* 3 pieces of 400 kB leave 450 kB for the last */
  cr_assert_eq(harness_new_spec(&h, 4, spec, &err), DS_EINTERNAL);
  harness_release(&h);
  ds_topo_free(h.topo);
}

Test(coll_kinds, broadcast_members_finish_along_the_chain) {
  /* Broadcast from root 6 over 8 ranks, C = 4, S = 100 MB (t = 2 ms):
   * position p (rank (6 + p) mod 8) has sent its last chunk at
   * p (t + alpha) + C t; the last position has received it at
   * (N-1)(t + alpha) + (C-1) t. Root: 8 ms; rank 7: 10.002 ms; rank 0:
   * 12.004 ms; ... rank 4 (p = 6): 20.012 ms; rank 5 (last): 20.014 ms.
   * Reduce to root 6 runs the chain 7, 0, ..., 5, 6: rank 7 first (8 ms),
   * the root last (20.014 ms). */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  harness_run_kind(&h, DS_COLL_BROADCAST, 8, 100e6, 6, 4, DS_COLL_FLOW);
  for (int32_t p = 0; p < 7; p++)
    cr_assert_eq(h.done_ns[(6 + p) % 8], p * 2002000 + 8000000, "position %d", p);
  cr_assert_eq(h.done_ns[5], 20014000);
  harness_run_kind(&h, DS_COLL_REDUCE, 8, 100e6, 6, 4, DS_COLL_FLOW);
  for (int32_t p = 0; p < 7; p++)
    cr_assert_eq(h.done_ns[(7 + p) % 8], p * 2002000 + 8000000, "position %d", p);
  cr_assert_eq(h.done_ns[6], 20014000);
  ds_topo_free(h.topo);
}

Test(coll_kinds, gather_and_scatter_closed_form) {
  /* N-1 flows of S/N between the root and every other rank, all at once;
   * they share the root's one link (12.5 GB/s), each getting B/(N-1), and
   * nothing else is shared. Expected, because the root's link carries
   * (N-1) S/N bytes and each flow then waits its route's 2 us:
   *   T = alpha + (N-1)/N S/B; ring8, S = 80 MB: 2 us + 5.6 ms, and every
   * member finishes then (each flow ends at the same instant). */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  const enum ds_coll_kind kinds[] = {DS_COLL_GATHER, DS_COLL_SCATTER};
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(harness_run_kind(&h, kinds[k], 8, 80e6, 3, 1, DS_COLL_FLOW), 5602000);
    for (int32_t m = 0; m < 8; m++) cr_assert_eq(h.done_ns[m], 5602000);
    for (int32_t n = 2; n <= 8; n++) {
      double expect = ALPHA + (double)(n - 1) / n * 1e9 / BW;
      int64_t got = harness_run_kind(&h, kinds[k], n, 1e9, n - 1, 1, DS_COLL_FLOW);
      cr_assert_leq(fabs((double)got - expect), 1, "N=%d: %lld vs %.1f", n, (long long)got,
                    expect);
    }
  }
  ds_topo_free(h.topo);
}

Test(coll_kinds, send_closed_form) {
  /* One flow of S from member 0 to member 1: T = alpha + S/B = 2 us + 8 ms
   * for 100 MB, both ends finishing at delivery. */
  struct harness h;
  harness_load(&h, "tests/data/ring8.yaml");
  cr_assert_eq(harness_run_kind(&h, DS_COLL_SEND, 2, 100e6, 0, 1, DS_COLL_FLOW), 8002000);
  cr_assert_eq(h.done_ns[0], 8002000);
  ds_topo_free(h.topo);
}

/* nccl-tests' busbw = S/T * factor must never exceed the bottleneck link. */
static void check_busbw(const char *file, int32_t n) {
  struct harness h;
  harness_load(&h, file);
  struct ds_err err = {0};
  struct ds_ring r;
  harness_ring(h.topo, n, &r);
  double bottleneck = r.min_bw;
  ds_ring_release(&r);
  for (int k = 0; k < DS_COLL_KIND_COUNT; k++) {
    if (k == DS_COLL_SEND) continue;
    const struct ds_coll_desc *d = ds_coll_desc_of((enum ds_coll_kind)k);
    for (double s = 1024; s <= 1.1e9; s *= 16) {
      int32_t chunks = k == DS_COLL_BROADCAST || k == DS_COLL_REDUCE
                           ? ds_coll_chain_chunks(s, 1) : 1;
      int64_t t = harness_run_kind(&h, (enum ds_coll_kind)k, n, s, n - 1, chunks, DS_COLL_FLOW);
      double busbw = s / (t * 1e-9) * d->bus_factor(n), bound = bottleneck;
      if (k == DS_COLL_GATHER || k == DS_COLL_SCATTER) {
        /* what bounds these is the root's own link, not the ring's */
        int32_t route[64], len;
        int32_t other = n - 1 == 0 ? 1 : 0;
        cr_assert_eq(ds_topo_route(h.topo, k == DS_COLL_GATHER ? other : n - 1,
                                   k == DS_COLL_GATHER ? n - 1 : other, route, 64, &len,
                                   &err), DS_OK);
        bound = h.topo->links[route[k == DS_COLL_GATHER ? len - 1 : 0]].bw_bytes_per_s;
      }
      /* Expected, because busbw counts the bytes the busiest link must
       * carry per rank ((N-1)/N S for the ring halves and the root's link
       * of gather/scatter, S for a chain hop, 2(N-1)/N S for all-reduce),
       * and no link carries more than its capacity: the ring's slowest for
       * the ring kinds, the root's link for gather and scatter. */
      cr_assert_leq(busbw, bound * (1 + 1e-9), "%s %s S=%g: busbw %g > %g", file,
                    d->name, s, busbw, bound);
      if (s > 1e9 && strcmp(file, "tests/data/ring8.yaml") == 0)
        cr_assert_geq(busbw, 0.99 * bottleneck, "%s reaches %g at 1 GB", d->name, busbw);
    }
  }
  ds_topo_free(h.topo);
}

Test(coll_kinds, busbw_never_exceeds_the_bottleneck_link) {
  check_busbw("tests/data/ring8.yaml", 8);
  check_busbw("tests/data/twonode.yaml", 8);
  check_busbw("tests/data/pcie4.yaml", 4);
}

Test(coll_kinds, table_names_and_bus_factors) {
  /* nccl-tests' factors at N = 8. */
  const struct {
    const char *name;
    double factor;
    const char *algo;
  } want[] = {{"allreduce", 14.0 / 8, "ring"}, {"broadcast", 1, "ring"},
              {"reduce", 1, "ring"},           {"allgather", 7.0 / 8, "ring"},
              {"reducescatter", 7.0 / 8, "ring"}, {"gather", 7.0 / 8, "p2p"},
              {"scatter", 7.0 / 8, "p2p"},     {"sendrecv", 1, "p2p"},
              {"alltoall", 7.0 / 8, "p2p"},    {"send", 1, "p2p"}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    const struct ds_coll_desc *d = ds_coll_desc_find(want[i].name);
    cr_assert(d != NULL, "%s", want[i].name);
    cr_assert_eq(ds_coll_desc_of(d->kind), d);
    cr_assert_float_eq(d->bus_factor(8), want[i].factor, 1e-12, "%s", want[i].name);
    cr_assert_str_eq(d->algo, want[i].algo);
  }
  cr_assert_null(ds_coll_desc_find("alltoallv"));
  cr_assert_null(ds_coll_desc_of(DS_COLL_KIND_COUNT));
  /* 512 KiB chunks as NCCL's Simple steps, at least the minimum. */
  cr_assert_eq(ds_coll_chain_chunks(1, 1), 1);
  cr_assert_eq(ds_coll_chain_chunks(524288, 1), 1);
  cr_assert_eq(ds_coll_chain_chunks(524289, 1), 2);
  cr_assert_eq(ds_coll_chain_chunks(100e6, 1), 191);
  cr_assert_eq(ds_coll_chain_chunks(1000, 4), 4);
  cr_assert_eq(ds_coll_chain_chunks(0, 0), 1);
}

Test(coll_kinds, chain_cut_never_leaves_a_rest_larger_than_a_piece) {
  /* The plain chain's pieces (ds_coll_chain_cut): NCCL's whole 512 KiB and
   * a last of the rest where the count is ceil(S / 512 KiB); equal pieces
   * where more were asked for, and where ds_coll_chain_chunks' cap of 2^24
   * holds fewer than S needs (S > 2^24 x 512 KiB = 8.796e12 B). Expected,
   * because a chain is pipelined only while its last piece is no larger than
   * the others: a rest of S - (2^24-1) 512 KiB = 9.91e14 B at S = 1e15
   * crossed each hop whole (ddpsim collective --op broadcast -b 1e15 -e 1e15
   * on tests/data/tiny-topo.yaml: busbw 3.35 GB/s of 10). */
  const struct {
    double bytes;
    int32_t chunks;
    double piece, last;
  } cases[] = {
      {640000, 2, 524288, 115712},             /* NCCL's cut */
      {524288, 1, 524288, 524288},             /* one piece */
      {1000, 4, 250, 250},                     /* --ring-chunks 4: equal */
      {16777216.0 * 524288, 16777216, 524288, 524288}, /* the cap, exactly */
      {1e15, 16777216, 1e15 / 16777216, 1e15 / 16777216}, /* past it: equal */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int32_t c = cases[i].chunks;
    if (i != 2) cr_assert_eq(ds_coll_chain_chunks(cases[i].bytes, 1), c, "case %zu", i);
    double piece, last;
    ds_coll_chain_cut(cases[i].bytes, c, &piece, &last);
    cr_assert_float_eq(piece, cases[i].piece, 1e-9 * piece, "case %zu: piece %g", i, piece);
    cr_assert_float_eq(last, cases[i].last, 1e-9 * piece, "case %zu: last %g", i, last);
    cr_assert_leq(last, piece * (1 + 1e-12), "case %zu", i);
    cr_assert_float_eq((c - 1) * piece + last, cases[i].bytes, 1e-12 * cases[i].bytes);
  }
}

Test(coll_kinds, refusals_name_the_problem) {
  struct harness h;
  struct ds_err err = {0};
  int32_t gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  harness_load(&h, "tests/data/ring8.yaml");
  cr_assert_eq(ds_ring_build(h.topo, gpus, 8, &h.ring, &err), DS_OK);
  struct ds_coll_proto p = {.proto = DS_PROTO_SIMPLE, .channels = 1, .wire_factor = 1,
                            .chan_cap_bytes_per_s = 1e9};
  struct ds_coll_spec spec = {.kind = DS_COLL_BROADCAST, .topo = h.topo, .ring = &h.ring,
                              .chunks = 1, .bytes = 1e6, .root = 8, .on_done = harness_on_member,
                              .owner = &h};
  struct ds_coll *c = NULL;
  cr_assert_eq(ds_coll_new(&spec, &c, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "root 8"), "%s", err.msg);
  spec.root = 0;
  spec.proto = &p;
  spec.kind = DS_COLL_GATHER; /* broadcast and reduce take one (ds_nccl_chain); gather not */
  cr_assert_eq(ds_coll_new(&spec, &c, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "gather") && strstr(err.msg, "broadcast, reduce"), "%s", err.msg);
  spec.kind = DS_COLL_ALLTOALL;
  p.proto = DS_PROTO_LL128;
  cr_assert_eq(ds_coll_new(&spec, &c, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "alltoall") && strstr(err.msg, "LL128"), "%s", err.msg);
  spec.proto = NULL;
  spec.kind = DS_COLL_SEND;
  cr_assert_eq(ds_coll_new(&spec, &c, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "2 members"), "%s", err.msg);
  cr_assert_null(c);
  ds_coll_free(NULL);
  ds_ring_release(&h.ring);
  ds_topo_free(h.topo);
}
