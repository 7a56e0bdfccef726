/*
 * NCCL's cost model: architecture from the GPU name, the channel search on
 * shipped topologies, NCCL's latencies and bus bandwidths per protocol
 * (hand-computed from tuning.cc v2.30.7's constants), its protocol choice,
 * and the simulation parameters derived from it.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/coll/coll.h"
#include "sim/coll/nccl_model.h"
#include "sim/coll/ring_rails.h"
#include "sim/net/topo.h"
#include "tests/support.h"

struct fixture {
  struct ds_topo *topo;
  struct ds_ring ring;
  struct ds_nccl_model m;
};

/* The model of the ring the program runs (sim/cli/run_setup.c, collbench.c):
 * ds_ring_build_rails, so that across nodes the oracle below sees the NIC
 * rails NCCL spreads its channels over. */
static ds_status build_with_table(struct fixture *f, const char *path, const char *table,
                                  int32_t n, struct ds_err *err) {
  int32_t gpus[64];
  memset(f, 0, sizeof *f);
  cr_assert_eq(ds_topo_load(path, table, &f->topo, err), DS_OK, "%s", err->msg);
  if (n == 0) n = f->topo->n_gpus;
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  cr_assert_eq(ds_ring_build_rails(f->topo, gpus, n, &f->ring, err), DS_OK, "%s", err->msg);
  return ds_nccl_model_build(f->topo, &f->ring, DS_NCCL_EXTRA_NONE, &f->m, err);
}

/* The same with the GPU table beside the topology file. */
static ds_status build(struct fixture *f, const char *path, int32_t n, struct ds_err *err) {
  return build_with_table(f, path, NULL, n, err);
}

static void release(struct fixture *f) {
  ds_ring_release(&f->ring);
  ds_topo_free(f->topo);
}

Test(nccl_model, arch_from_gpu_name) {
  cr_assert_eq(ds_nccl_arch_of_gpu("V100-SXM2-32GB"), DS_NCCL_ARCH_VOLTA);
  cr_assert_eq(ds_nccl_arch_of_gpu("A100-SXM4-80GB"), DS_NCCL_ARCH_AMPERE);
  cr_assert_eq(ds_nccl_arch_of_gpu("H100-SXM5-80GB"), DS_NCCL_ARCH_HOPPER);
  cr_assert_eq(ds_nccl_arch_of_gpu("H200-SXM-141GB"), DS_NCCL_ARCH_HOPPER);
  cr_assert_eq(ds_nccl_arch_of_gpu("B200-SXM-180GB"), DS_NCCL_ARCH_BLACKWELL);
  cr_assert_eq(ds_nccl_arch_of_gpu("GB200-186GB"), DS_NCCL_ARCH_BLACKWELL);
  cr_assert_eq(ds_nccl_arch_of_gpu("TestGPU"), DS_NCCL_ARCH_UNKNOWN);
  cr_assert_str_eq(ds_nccl_constants_version(), "v2.30.7");
}

Test(nccl_model, dgx_a100_channels_and_tuning_table) {
  /* dgx-a100: 300 GB/s of NVLink per GPU; NCCL counts 20 of each link's
   * 25 GB/s (SM80_NVLINK_BW): 240 GB/s. Search: 40 GB/s per channel, 6
   * channels, duplicated (40 >= 25) to 12 of 20 GB/s.
   * Expected, because (N = 8, 14 steps, NVLink):
   *   LL     lat 6.6 + 14 * 0.6 = 15.0 us,  busBw min(87.7, 240/2) = 87.7
   *   LL128  lat 14 + 14 * 1.9 = 40.6 us,   busBw min(240 * .92, 12 * 20) = 220.8
   *   Simple lat 8.4 + 14 * 3.4 = 56.0 us,  busBw 240 GB/s. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.arch, DS_NCCL_ARCH_AMPERE);
  cr_assert_eq(f.m.nnodes, 1);
  cr_assert_eq(f.m.channels, 12);
  cr_assert_float_eq(f.m.chan_bw_bytes_per_s, 20e9, 1);
  cr_assert_float_eq(f.m.lat_ns[DS_PROTO_LL], 15000, 1e-6);
  cr_assert_float_eq(f.m.lat_ns[DS_PROTO_LL128], 40600, 1e-6);
  cr_assert_float_eq(f.m.lat_ns[DS_PROTO_SIMPLE], 56000, 1e-6);
  cr_assert_float_eq(f.m.busbw_bytes_per_s[DS_PROTO_LL], 87.7e9, 1e3);
  cr_assert_float_eq(f.m.busbw_bytes_per_s[DS_PROTO_LL128], 220.8e9, 1e3);
  cr_assert_float_eq(f.m.busbw_bytes_per_s[DS_PROTO_SIMPLE], 240e9, 1e3);
  /* time(S) = lat + S / (busBw * 8/14): Simple at 1 GiB = 56 us + 7829.4 us. */
  double t = ds_nccl_predict_ns(&f.m, DS_PROTO_SIMPLE, 1073741824.0);
  cr_assert_float_eq(t, 56000 + 1073741824.0 / (240e9 * 8 / 14) * 1e9, 1);
  release(&f);
}

Test(nccl_model, protocol_choice_by_size) {
  /* Least predicted time: LL while latency dominates, LL128 in between,
   * Simple for large sizes. Crossovers from the table above: LL = LL128 at
   * S = 25.6 us / (1/50.11 - 1/126.17 GB/s) ~ 2.1 MB; LL128 = Simple at
   * 15.4 us / (1/126.17 - 1/137.14 GB/s) ~ 24.3 MB. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK);
  cr_assert_eq(ds_nccl_choose(&f.m, 1024), DS_PROTO_LL);
  cr_assert_eq(ds_nccl_choose(&f.m, 2e6), DS_PROTO_LL);
  cr_assert_eq(ds_nccl_choose(&f.m, 2.3e6), DS_PROTO_LL128);
  cr_assert_eq(ds_nccl_choose(&f.m, 24e6), DS_PROTO_LL128);
  cr_assert_eq(ds_nccl_choose(&f.m, 25e6), DS_PROTO_SIMPLE);
  cr_assert_eq(ds_nccl_choose(&f.m, 8e9), DS_PROTO_SIMPLE);
  release(&f);
}

Test(nccl_model, simulation_parameters) {
  /* LL: 2 wire bytes per payload byte, channel cap min(20, 2 * 87.7 / 12)
   * GB/s so that C * cap / 2 = llMaxBw; LL128: 128/120 on the wire, cap
   * min(20, 20 * 128/120) = 20; Simple: 1, 20. Latencies per hop class from
   * hwLat[.][Ring][p]; the start is baseLat plus the extra effects. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK);
  struct ds_coll_proto p;
  ds_nccl_coll_proto(&f.m, DS_PROTO_LL, 1e6, &p);
  cr_assert_eq(p.channels, 12);
  cr_assert_float_eq(p.wire_factor, 2, 1e-12);
  cr_assert_float_eq(p.chan_cap_bytes_per_s * 12 / 2, 87.7e9, 1e3);
  cr_assert_float_eq(p.hop_lat_ns[DS_HOP_NVLINK], 600, 1e-9);
  cr_assert_float_eq(p.hop_lat_ns[DS_HOP_PCI], 1000, 1e-9);
  cr_assert_float_eq(p.hop_lat_ns[DS_HOP_NET], 2700, 1e-9);
  cr_assert_float_eq(p.start_lat_ns, 6600, 1e-9);
  ds_nccl_coll_proto(&f.m, DS_PROTO_LL128, 1e6, &p);
  cr_assert_float_eq(p.wire_factor, 128.0 / 120, 1e-12);
  cr_assert_float_eq(p.chan_cap_bytes_per_s, 20e9, 1);
  ds_nccl_coll_proto(&f.m, DS_PROTO_SIMPLE, 1e6, &p);
  cr_assert_float_eq(p.wire_factor, 1, 1e-12);
  cr_assert_float_eq(p.hop_lat_ns[DS_HOP_NVLINK], 3400, 1e-9);
  /* Extra effects: launch + Simple slice syncs (28 per loop per channel). */
  f.m.extra = DS_NCCL_EXTRA_MEASURED;
  ds_nccl_coll_proto(&f.m, DS_PROTO_SIMPLE, 16 << 20, &p);
  cr_assert_float_eq(p.start_lat_ns, 8400 + f.m.extra.launch_ns + 28 * f.m.extra.sync_ns, 1e-6);
  ds_nccl_coll_proto(&f.m, DS_PROTO_LL128, 16 << 20, &p);
  cr_assert_float_eq(p.start_lat_ns, 14000 + f.m.extra.launch_ns, 1e-6);
  release(&f);
}

Test(nccl_model, all_gather_syncs_walk_n_minus_1_steps_a_loop) {
  /* dgx-a100 (8 ranks, 12 channels), Simple, 1 GiB, measured extras
   * (launch 14 us, 2.5 us a slice sync). A channel's share 1 GiB / 12 in
   * loops of N = 8 chunks of 2 MiB (4 steps of 512 KiB): ceil(89478485.3 /
   * 16 MiB) = 6 loops. Expected, because a loop walks 2(N-1) = 14 steps in
   * the all-reduce (enqueue.cc ncclPatternRingTwice) and N-1 = 7 in
   * all-gather and reduce-scatter (ncclPatternRing), 2 slices a step
   * (ALLGATHER_ and REDUCESCATTER_CHUNKSTEPS / SLICESTEPS = 4 / 2, as the
   * all-reduce's): 6 * 14 * 2 = 168 syncs (420 us) against 6 * 7 * 2 = 84
   * (210 us), each on top of baseLat 8.4 us and the launch. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK);
  f.m.extra = DS_NCCL_EXTRA_MEASURED;
  double s = 1 << 30;
  struct ds_coll_proto ar, ag, rs, bc;
  ds_nccl_ring_kind_proto(&f.m, DS_COLL_ALLREDUCE, DS_PROTO_SIMPLE, s, &ar);
  ds_nccl_ring_kind_proto(&f.m, DS_COLL_ALLGATHER, DS_PROTO_SIMPLE, s, &ag);
  ds_nccl_ring_kind_proto(&f.m, DS_COLL_REDUCESCATTER, DS_PROTO_SIMPLE, s, &rs);
  ds_nccl_coll_proto(&f.m, DS_PROTO_SIMPLE, s, &bc);
  cr_assert_float_eq(ar.start_lat_ns, 8400 + 14000 + 168 * 2500.0, 1e-6);
  cr_assert_float_eq(bc.start_lat_ns, ar.start_lat_ns, 1e-6);
  cr_assert_float_eq(ag.start_lat_ns, 8400 + 14000 + 84 * 2500.0, 1e-6, "%g", ag.start_lat_ns);
  cr_assert_float_eq(rs.start_lat_ns, ag.start_lat_ns, 1e-6);
  /* LL and LL128 have no slice syncs: the launch alone, for every kind */
  ds_nccl_ring_kind_proto(&f.m, DS_COLL_ALLGATHER, DS_PROTO_LL128, s, &ag);
  ds_nccl_coll_proto(&f.m, DS_PROTO_LL128, s, &bc);
  cr_assert_float_eq(ag.start_lat_ns, bc.start_lat_ns, 1e-6);
  release(&f);
}

Test(nccl_model, ring_chunking_on_dgx_a100) {
  /* all_reduce.h runRing on 12 channels of 8 ranks: a channel's share in
   * loops of 8 chunks. Expected, by hand:
   *   Simple chunk = 4 MiB / 8 steps * 4 chunk steps = 2 MiB, 2 slices;
   *     16 MiB: 16 MiB / 12 per channel < 8 * 2 MiB: 1 loop, 14 * 2 = 28 syncs;
   *     8 GiB: 715827882.7 B per channel / 16 MiB = 42.7: 43 loops, 1204 syncs;
   *   LL chunk = 524288 / 8 / 2 = 32 KiB; LL128 = 4915200 / 8 * 15/16 = 576000 B;
   *     no slice syncs (the flags travel with the data); no fill on the ring. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK, "%s", err.msg);
  struct ds_nccl_chunking c;
  ds_nccl_chunking(&f.m, DS_AR_RING, DS_PROTO_SIMPLE, 16 << 20, &c);
  cr_assert_eq(c.ctas, 12);
  cr_assert_float_eq(c.chunk_bytes, 2 << 20, 1e-9);
  cr_assert_float_eq(c.loops, 1, 1e-12);
  cr_assert_float_eq(c.syncs, 28, 1e-12);
  cr_assert_float_eq(c.fill_ns, 0, 1e-12);
  ds_nccl_chunking(&f.m, DS_AR_RING, DS_PROTO_SIMPLE, 8589934592.0, &c);
  cr_assert_float_eq(c.loops, 43, 1e-12);
  cr_assert_float_eq(c.syncs, 1204, 1e-12);
  ds_nccl_chunking(&f.m, DS_AR_RING, DS_PROTO_LL, 16 << 20, &c);
  cr_assert_float_eq(c.chunk_bytes, 32768, 1e-9);
  cr_assert_float_eq(c.loops, ceil((16 << 20) / 12.0 / (8 * 32768.0)), 1e-12);
  cr_assert_float_eq(c.syncs, 0, 1e-12);
  ds_nccl_chunking(&f.m, DS_AR_RING, DS_PROTO_LL128, 16 << 20, &c);
  cr_assert_float_eq(c.chunk_bytes, 576000, 1e-9);
  cr_assert_float_eq(c.syncs, 0, 1e-12);
  /* NCCL's model alone adds nothing; the fitted extras add launch + syncs. */
  cr_assert_float_eq(ds_nccl_extra_ns(&f.m, DS_AR_RING, DS_PROTO_SIMPLE, 16 << 20), 0, 1e-12);
  f.m.extra = DS_NCCL_EXTRA_MEASURED;
  cr_assert_float_eq(ds_nccl_extra_ns(&f.m, DS_AR_RING, DS_PROTO_SIMPLE, 8589934592.0),
                     f.m.extra.launch_ns + 1204 * f.m.extra.sync_ns, 1e-6);
  cr_assert_float_eq(ds_nccl_sim_algo_ns(&f.m, DS_AR_RING, DS_PROTO_SIMPLE, 16 << 20),
                     ds_nccl_predict_ns(&f.m, DS_PROTO_SIMPLE, 16 << 20) +
                         f.m.extra.launch_ns + 28 * f.m.extra.sync_ns,
                     1e-6);
  release(&f);
}

Test(nccl_model, broadcast_cost_and_chain_on_dgx_a100) {
  /* tuning.cc, broadcast (Ring only, nsteps = N, algbw = busBw): with
   * sameChannels (uniform box: every channel the same ring) one hop's
   * latency. dgx-a100 (12 channels, busBw as the all-reduce ring's):
   *   LL     6.6 + 0.6 = 7.2 us,   87.7 GB/s
   *   LL128  14 + 1.9  = 15.9 us,  220.8 GB/s
   *   Simple 8.4 + 3.4 = 11.8 us,  240 GB/s
   * LL = Simple at 4.6 us / (1/87.7 - 1/240 GB/s) = 635.7 kB; LL128 never
   * wins (more latency than Simple and less bandwidth). */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.same_channels, 1);
  cr_assert_float_eq(ds_nccl_predict_coll_ns(&f.m, DS_COLL_BROADCAST, DS_PROTO_LL, 1e6),
                     7200 + 1e6 / 87.7e9 * 1e9, 1e-3);
  cr_assert_float_eq(ds_nccl_predict_coll_ns(&f.m, DS_COLL_BROADCAST, DS_PROTO_LL128, 1e6),
                     15900 + 1e6 / 220.8e9 * 1e9, 1e-3);
  cr_assert_float_eq(ds_nccl_predict_coll_ns(&f.m, DS_COLL_REDUCE, DS_PROTO_SIMPLE, 1e6),
                     11800 + 1e6 / 240e9 * 1e9, 1e-3);
  cr_assert_eq(ds_nccl_choose_coll_proto(&f.m, DS_COLL_BROADCAST, 424), DS_PROTO_LL);
  cr_assert_eq(ds_nccl_choose_coll_proto(&f.m, DS_COLL_BROADCAST, 630e3), DS_PROTO_LL);
  cr_assert_eq(ds_nccl_choose_coll_proto(&f.m, DS_COLL_BROADCAST, 640e3), DS_PROTO_SIMPLE);
  cr_assert_eq(ds_nccl_choose_coll_proto(&f.m, DS_COLL_BROADCAST, 1e9), DS_PROTO_SIMPLE);
  /* The chain's parameters: the ring's channels, wires and caps; per hop
   * the raw hwLat[class][Ring][p]; at the start baseLat + the launch (not
   * the all-reduce's slice syncs). Pieces: a channel forwards LL per 16 B
   * line (8 B of payload), LL128 per warp slice of 2 KiB (1920 B of
   * payload), at most 16 (N-1) = 112 pieces on 8 ranks, Simple per 512 KiB
   * step, over the fullest channel's share (share_bytes): the
   * plan's cells_per_channel = ceil(divUp(traffic / nc, 16) * 16 / the
   * cell's traffic) whole cells:
   *   1 MB LL: traffic 4e6 / 12 -> 333344, cells of 8192 B (32768 of
   *   traffic): 11 a channel, 123 cells on ceil(123 / 11) = 12 channels;
   *   the fullest 11 * 8192 = 90112 B, / 8 = 11264 lines, capped at 112;
   *   1 MB LL128: 1e6 / 12 -> 83344, cells of 32768 B: 3 a channel, 31
   *   cells on 11 channels, the fullest 98304 B / 1920 = 51.2 -> 52;
   *   1 MiB Simple: 1048576 / 12 -> 87392: 3 cells, 32 on 11 channels, the
   *   fullest 98304 B (not 1048576 / 11 = 95325);
   *   100 MB Simple: 1e8 / 12 -> 8333344: 255 cells, 3052 on 12 channels,
   *   the fullest 8355840 B / 524288 = 15.9 -> 16; LL 424 B on one
   *   channel: 424 / 8 = 53 lines.
   * The pieces are whole but the last (piece_bytes): 8 MiB Simple is 22
   * cells (699056 / 32768 = 21.3 -> 22) = 720896 B on the fullest channel,
   * a step of 524288 B and 196608 B after it; one piece (4 MiB: 349536 /
   * 32768 -> 11 cells, 360448 B) crosses each hop whole. */
  f.m.extra = DS_NCCL_EXTRA_MEASURED;
  struct ds_coll_proto p;
  ds_nccl_chain_proto(&f.m, DS_PROTO_SIMPLE, 1e8, &p);
  cr_assert_eq(p.channels, 12);
  cr_assert_float_eq(p.start_lat_ns, 8400 + f.m.extra.launch_ns, 1e-9);
  cr_assert_float_eq(p.hop_lat_ns[DS_HOP_NVLINK], 3400, 1e-9);
  cr_assert_float_eq(p.hop_lat_ns[DS_HOP_NET], 14000, 1e-9);
  cr_assert_float_eq(p.share_bytes, 8355840, 1e-9);
  ds_nccl_chain_proto(&f.m, DS_PROTO_SIMPLE, 1048576, &p);
  cr_assert_eq(p.channels, 11);
  cr_assert_float_eq(p.share_bytes, 98304, 1e-9);
  ds_nccl_chain_proto(&f.m, DS_PROTO_LL128, 1e6, &p);
  cr_assert_eq(p.channels, 11);
  cr_assert_float_eq(p.share_bytes, 98304, 1e-9);
  ds_nccl_chain_proto(&f.m, DS_PROTO_LL, 1e6, &p);
  cr_assert_eq(p.channels, 12);
  cr_assert_float_eq(p.share_bytes, 90112, 1e-9);
  cr_assert_float_eq(p.wire_factor, 2, 1e-12);
  cr_assert_float_eq(p.chan_cap_bytes_per_s * 12 / 2, 87.7e9, 1e3);
  cr_assert_float_eq(p.start_lat_ns, 6600 + f.m.extra.launch_ns, 1e-9);
  cr_assert_float_eq(p.hop_lat_ns[DS_HOP_NVLINK], 600, 1e-9);
  cr_assert_eq(ds_nccl_chain_chunks(&f.m, DS_PROTO_LL, 1e6), 112);
  cr_assert_eq(ds_nccl_chain_chunks(&f.m, DS_PROTO_SIMPLE, 1e8), 16);
  cr_assert_eq(ds_nccl_chain_chunks(&f.m, DS_PROTO_LL, 424), 53);
  cr_assert_eq(ds_nccl_chain_chunks(&f.m, DS_PROTO_LL128, 0), 1);
  cr_assert_eq(ds_nccl_chain_chunks(&f.m, DS_PROTO_LL128, 1e6), 52);
  cr_assert_eq(ds_nccl_chain(&f.m, DS_PROTO_SIMPLE, 8388608, &p), 2);
  cr_assert_eq(p.channels, 12);
  cr_assert_float_eq(p.piece_bytes, 524288, 1e-9);
  cr_assert_float_eq(p.share_bytes, 720896, 1e-9);
  cr_assert_eq(ds_nccl_chain(&f.m, DS_PROTO_SIMPLE, 4194304, &p), 1);
  cr_assert_float_eq(p.piece_bytes, 0, 1e-9);
  cr_assert_eq(ds_nccl_chain(&f.m, DS_PROTO_LL128, 1e6, &p), 52);
  cr_assert_float_eq(p.piece_bytes, 1920, 1e-9);
  cr_assert_eq(ds_nccl_chain(&f.m, DS_PROTO_LL, 1e6, &p), 112); /* capped: equal */
  cr_assert_float_eq(p.piece_bytes, 0, 1e-9);
  release(&f);
}

Test(nccl_model, a_chain_lands_on_the_plans_cells) {
  /* src/enqueue.cc scheduleCollTasksToPlan on dgx-a100 (12 channels): cells
   * of 32 KiB of traffic (LL's traffic is 4 per byte: 8 KiB cells), each
   * channel taking the whole cells that reach divUp(traffic / nc, 16) * 16:
   *   Simple 512 KiB: nc 12, 43696 B -> 2 cells, 16 cells on 8 channels;
   *   Simple 1 MiB:   87392 B -> 3 cells, 32 cells on 11 channels;
   *   Simple 4 MiB:   349536 B -> 11 cells, 128 cells on 12 channels;
   *   LL 512 KiB:     2 MiB of traffic, 174768 B -> 6 cells, 64 on 11;
   *   Simple 256 KiB: nc 8, 32768 B -> 1 cell, 8 cells on 8 channels;
   *   Simple 1 KiB:   1 cell on 1 channel. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK, "%s", err.msg);
  struct ds_coll_proto p;
  const struct {
    enum ds_proto proto;
    double bytes;
    int32_t channels;
  } cases[] = {{DS_PROTO_SIMPLE, 524288, 8}, {DS_PROTO_SIMPLE, 1048576, 11},
               {DS_PROTO_SIMPLE, 4194304, 12}, {DS_PROTO_LL, 524288, 11},
               {DS_PROTO_SIMPLE, 262144, 8},  {DS_PROTO_SIMPLE, 1024, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ds_nccl_chain_proto(&f.m, cases[i].proto, cases[i].bytes, &p);
    cr_assert_eq(p.channels, cases[i].channels, "case %zu: %d", i, (int)p.channels);
  }
  /* Simple 512 KiB: one piece of 64 KiB per channel (store and forward). */
  cr_assert_eq(ds_nccl_chain(&f.m, DS_PROTO_SIMPLE, 524288, &p), 1);
  release(&f);
}

Test(nccl_model, small_ring_collectives_run_on_fewer_channels) {
  /* src/enqueue.cc topoGetAlgoInfo: one channel less while nBytes < nc *
   * nt * threadThreshold. Per channel, on dgx-a100 (8 ranks, 12 channels
   * of 20 GB/s, so 512 Simple threads): LL 512 * 8 * 8 = 32768 B, LL128
   * 640 * 8 = 5120 B, Simple 512 * 64 = 32768 B. So nc = floor(S / that)
   * within [1, 12]: LL 65536 -> 2, 65535 -> 1, 1 B -> 1, 1 GB -> 12;
   * LL128 15360 -> 3, 15359 -> 2; Simple 163840 -> 5, 393216 -> 12.
   * The chain's pieces follow: LL 64 KiB on 2 channels is 32 KiB a channel,
   * 4096 lines, capped at 16 (N-1) = 112 pieces; 424 B of LL on 1 channel
   * is 53 lines of 8 B (uncapped: whole lines, a last of the rest). */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-a100.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_nccl_ring_channels(&f.m, DS_PROTO_LL, 65536), 2);
  cr_assert_eq(ds_nccl_ring_channels(&f.m, DS_PROTO_LL, 65535), 1);
  cr_assert_eq(ds_nccl_ring_channels(&f.m, DS_PROTO_LL, 1), 1);
  cr_assert_eq(ds_nccl_ring_channels(&f.m, DS_PROTO_LL, 1e9), 12);
  cr_assert_eq(ds_nccl_ring_channels(&f.m, DS_PROTO_LL128, 15360), 3);
  cr_assert_eq(ds_nccl_ring_channels(&f.m, DS_PROTO_LL128, 15359), 2);
  cr_assert_eq(ds_nccl_ring_channels(&f.m, DS_PROTO_SIMPLE, 163840), 5);
  cr_assert_eq(ds_nccl_ring_channels(&f.m, DS_PROTO_SIMPLE, 393216), 12);
  struct ds_coll_proto p;
  cr_assert_eq(ds_nccl_chain(&f.m, DS_PROTO_LL, 65536, &p), 112);
  cr_assert_eq(p.channels, 2);
  cr_assert_eq(ds_nccl_chain(&f.m, DS_PROTO_LL, 424, &p), 53);
  cr_assert_float_eq(p.piece_bytes, 8, 1e-12);
  /* Simple with bwIntra * nChannels <= 12 GB/s (PCIe) runs 256 threads:
   * 16 KiB per channel. */
  f.m.chan_bw_bytes_per_s = 1e9;
  cr_assert_eq(ds_nccl_ring_channels(&f.m, DS_PROTO_SIMPLE, 163840), 10);
  release(&f);
}

Test(nccl_model, broadcast_without_same_channels_on_dgx1) {
  /* dgx1-v100: the channel search packs rings of their own orders
   * (sameChannels 0), so tuning.cc charges nsteps = N hop latencies, the
   * tree's for Simple: LL 6.6 + 8 * 0.6 = 11.4 us, Simple 8.4 + 8 * 4.0
   * = 40.4 us (plus S / busBw). */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx1-v100.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.same_channels, 0);
  cr_assert_float_eq(ds_nccl_predict_coll_ns(&f.m, DS_COLL_BROADCAST, DS_PROTO_LL, 0), 11400,
                     1e-6);
  cr_assert_float_eq(ds_nccl_predict_coll_ns(&f.m, DS_COLL_BROADCAST, DS_PROTO_SIMPLE, 0),
                     40400, 1e-6);
  release(&f);
}

Test(nccl_model, nvls_chunking_and_pipeline_on_dgx_h100) {
  /* NVLS on dgx-h100: 16 CTAs (NVLS_NCHANNELS_SM90) x 8 heads = 128
   * concurrent chunks; NCCL's NVLS bus bandwidth 8 * 40 * 0.85 * 7/8 * 2 =
   * 476 GB/s, algbw 476 * 8/14 = 272 GB/s. Expected, by hand:
   *   2 MiB: 2 MiB < 2 * 128 * 32 KiB: chunk 16 KiB, loop 2 MiB: 1 loop,
   *          1 sync, fill 2 MiB / 272 GB/s;
   *   64 MiB: not < 8 * 128 * 64 KiB: chunk 64 KiB, loop 8 MiB: 8 loops,
   *          fill one loop, 8 MiB / 272 GB/s;
   *   1 GiB: not < 64 * 128 * 128 KiB (= 1 GiB): chunk 128 KiB, 64 loops.
   * The simulation's NVLS latency is three NVLink Simple steps, 3 * 3.4 us,
   * with the pipeline on, NCCL's 25 us without it. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-h100.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert(f.m.nvls_ok, "%s", f.m.nvls_why);
  double algbw = 476e9 * 8 / 14;
  struct ds_nccl_chunking c;
  ds_nccl_chunking(&f.m, DS_AR_NVLS, DS_PROTO_SIMPLE, 2 << 20, &c);
  cr_assert_eq(c.ctas, 16);
  cr_assert_float_eq(c.chunk_bytes, 16384, 1e-9);
  cr_assert_float_eq(c.loops, 1, 1e-12);
  cr_assert_float_eq(c.syncs, 1, 1e-12);
  cr_assert_float_eq(c.fill_ns, (2 << 20) / algbw * 1e9, 1e-3);
  ds_nccl_chunking(&f.m, DS_AR_NVLS, DS_PROTO_SIMPLE, 64 << 20, &c);
  cr_assert_float_eq(c.chunk_bytes, 65536, 1e-9);
  cr_assert_float_eq(c.loops, 8, 1e-12);
  cr_assert_float_eq(c.fill_ns, (8 << 20) / algbw * 1e9, 1e-3);
  ds_nccl_chunking(&f.m, DS_AR_NVLS, DS_PROTO_SIMPLE, 1 << 30, &c);
  cr_assert_float_eq(c.chunk_bytes, 131072, 1e-9);
  cr_assert_float_eq(c.loops, 64, 1e-12);
  struct ds_coll_proto p;
  ds_nccl_algo_proto(&f.m, DS_AR_NVLS, DS_PROTO_SIMPLE, 2 << 20, &p);
  cr_assert_float_eq(p.start_lat_ns, 25000, 1e-6);
  f.m.extra = DS_NCCL_EXTRA_MEASURED;
  ds_nccl_algo_proto(&f.m, DS_AR_NVLS, DS_PROTO_SIMPLE, 2 << 20, &p);
  cr_assert_float_eq(p.start_lat_ns,
                     3 * 3400 + f.m.extra.launch_ns + f.m.extra.sync_ns +
                         (2 << 20) / algbw * 1e9,
                     1e-3);
  /* NCCL's prediction (its choice) keeps its own 25 us. */
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, DS_AR_NVLS, DS_PROTO_SIMPLE, 0), 25000,
                     1e-6);
  release(&f);
}

Test(nccl_model, hopper_and_two_nodes) {
  /* dgx-h100: 450 GB/s * 20.6/25 = 370.8 GB/s; sm90 search speeds: 60 GB/s,
   * 6 channels, duplicated (60 >= 50) to 12 of 30 GB/s. LL's cap 141 GB/s
   * (Hopper, one node). */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "topologies/dgx-h100.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.arch, DS_NCCL_ARCH_HOPPER);
  cr_assert_eq(f.m.channels, 12);
  cr_assert_float_eq(f.m.chan_bw_bytes_per_s, 30e9, 1);
  cr_assert_float_eq(f.m.busbw_bytes_per_s[DS_PROTO_LL], 141e9, 1e3);
  release(&f);
  /* 2node-ib: two nodes; NCCL counts 2(nNodes-1) = 2 inter-node steps at
   * hwLat[NET] and 12 at the intra class: Simple 8.4 + 12 * 3.4 + 2 * 14. */
  cr_assert_eq(build(&f, "topologies/2node-ib.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.nnodes, 2);
  /* The rails the program runs: 8 channels of 48 GB/s (nccl_time_us). */
  cr_assert_eq(f.m.channels, 8);
  cr_assert_float_eq(f.m.chan_bw_bytes_per_s, 48e9, 1);
  int32_t n = f.m.nranks;
  double expect = 8400 + (2.0 * (n - 1) - 2) * f.m.hw_lat_ns[f.m.hw_intra][DS_PROTO_SIMPLE] +
                  2 * 14000;
  cr_assert_float_eq(f.m.lat_ns[DS_PROTO_SIMPLE], expect, 1e-6);
  release(&f);
}

Test(nccl_model, no_duplication_above_compute_capability_8_0) {
  /* Two nodes of 8 GPUs on an NVSwitch with 8 NICs of 50 GB/s (2node-ib's
   * network), GPUs of NCCL's Ampere row (sm80 search speeds): 8 rails of 1
   * channel at 48 GB/s, the first inter speed not above the NIC. Expected,
   * because ncclTopoDupChannels (search.cc:1040, v2.30.7) keeps them when
   * ccMin > 80 and the speed is under 50 GB/s with more than 4 channels:
   * an L40S (8.9) and an RTX 3090 (8.6) keep 8 of 48 GB/s; an A100 (8.0)
   * duplicates them to 16 of 24. */
  const struct {
    const char *gpu;
    int32_t channels;
    double speed;
  } cases[] = {{"L40S-48GB", 8, 48e9}, {"RTX3090-24GB", 8, 48e9}, {"A100-SXM4-80GB", 16, 24e9}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[] = "/tmp/ddpsim_dup_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    cr_assert(fp != NULL);
    fprintf(fp, "schema_version: 1\nname: dup2\ngpu: %s\nnodes: 2\ngpus_per_node: 8\n"
                "intra_node:\n  template: nvswitch\n  link_bw: 450GBps\n  link_lat: 1.7us\n"
                "inter_node:\n  template: ib\n  nics_per_node: 8\n  nic_bw: 400Gbps\n"
                "  nic_lat: 6us\n  gpu_nic_bw: 64GBps\n  gpu_nic_lat: 1us\n",
            cases[i].gpu);
    fclose(fp);
    struct ds_err err = {0};
    struct fixture f;
    cr_assert_eq(build_with_table(&f, path, "topologies/gpus.yaml", 0, &err), DS_OK, "%s",
                 err.msg);
    unlink(path);
    cr_assert_eq(f.m.arch, DS_NCCL_ARCH_AMPERE, "%s", cases[i].gpu);
    cr_assert_eq(f.m.channels, cases[i].channels, "%s: %d channels", cases[i].gpu,
                 (int)f.m.channels);
    cr_assert_float_eq(f.m.chan_bw_bytes_per_s, cases[i].speed, 1, "%s: %g", cases[i].gpu,
                       f.m.chan_bw_bytes_per_s);
    release(&f);
  }
}

Test(nccl_model, hops_without_p2p_share_the_uplink_with_intels_overhead) {
  /* pcie2-nop2p-v100: NCCL counts 12 of each Gen3 x16 link's 16 GB/s. Both
   * hops of the 2-GPU ring go GPU -> switch -> CPU -> switch -> GPU, so the
   * uplink's up and down halves each carry both, each charged 6/5 of the
   * channel's speed on its PCI links (INTEL_P2P_OVERHEAD, Intel host):
   * 12 / (2 * 1.2) = 5 GB/s, the Volta speed 5 fits once: 1 channel of 5.
   * The hop alone (what was taken before) gave 12. On an AMD host no
   * overhead: 12 / 2 = 6, 1 channel of 6. Simple's busbw = 1 * speed. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build_with_table(&f, "tests/data/pcie2-nop2p-v100.yaml", "topologies/gpus.yaml",
                                0, &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.channels, 1);
  cr_assert_float_eq(f.m.chan_bw_bytes_per_s, 5e9, 1);
  cr_assert_float_eq(f.m.busbw_bytes_per_s[DS_PROTO_SIMPLE], 5e9, 1e3);
  release(&f);
  cr_assert_eq(build_with_table(&f, "tests/data/pcie2-nop2p-v100-amd.yaml",
                                "topologies/gpus.yaml", 0, &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.channels, 1);
  cr_assert_float_eq(f.m.chan_bw_bytes_per_s, 6e9, 1);
  release(&f);
}

Test(nccl_model, p2p_through_the_root_complex_pays_intels_overhead) {
  /* pcie4-v100 (p2p on, two GPUs per switch): hops 0 -> 1 and 2 -> 3 stay
   * under their switch (PATH_PIX: 12 GB/s); 1 -> 2 and 3 -> 0 cross the
   * CPU (PATH_PHB), each uplink half carrying one of them at 6/5:
   * 12 / 1.2 = 10 GB/s, the Volta speed 10: 1 channel of 10 (12 before). */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build_with_table(&f, "tests/data/pcie4-v100.yaml", "topologies/gpus.yaml", 0,
                                &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.channels, 1);
  cr_assert_float_eq(f.m.chan_bw_bytes_per_s, 10e9, 1);
  release(&f);
  /* Two GPUs of one switch: no CPU on the way, 12 GB/s, 1 channel of 12. */
  cr_assert_eq(build_with_table(&f, "tests/data/pcie4-v100.yaml", "topologies/gpus.yaml", 2,
                                &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.channels, 1);
  cr_assert_float_eq(f.m.chan_bw_bytes_per_s, 12e9, 1);
  release(&f);
}

Test(nccl_model, unknown_architecture_is_unavailable) {
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "tests/data/ring8.yaml", 0, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "TestGPU") && strstr(err.msg, "unknown architecture"), "%s",
            err.msg);
  release(&f);
}

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

/* NCCL's tuning.cc indexes its tables by the lowest compute capability:
 * >= 10.0 Blackwell, >= 9.0 Hopper, >= 8.0 Ampere, else Volta. The table's
 * families map the same way. */
Test(nccl_model, family_picks_nccls_tuning_row) {
  cr_assert_eq(ds_nccl_arch_of_family("Volta"), DS_NCCL_ARCH_VOLTA);
  cr_assert_eq(ds_nccl_arch_of_family("Turing"), DS_NCCL_ARCH_VOLTA);
  cr_assert_eq(ds_nccl_arch_of_family("Ampere"), DS_NCCL_ARCH_AMPERE);
  cr_assert_eq(ds_nccl_arch_of_family("Ada"), DS_NCCL_ARCH_AMPERE);
  cr_assert_eq(ds_nccl_arch_of_family("Hopper"), DS_NCCL_ARCH_HOPPER);
  cr_assert_eq(ds_nccl_arch_of_family("Blackwell"), DS_NCCL_ARCH_BLACKWELL);
  cr_assert_eq(ds_nccl_arch_of_family("Rubin"), DS_NCCL_ARCH_UNKNOWN);
  cr_assert_str_eq(ds_nccl_arch_name(DS_NCCL_ARCH_BLACKWELL), "Blackwell");
  cr_assert_eq(ds_nccl_arch_of_family(""), DS_NCCL_ARCH_UNKNOWN);
}

/* A GPU-table entry's arch is one of those families, as spelt there: a
 * misspelt one ("Lovelace" for Ada, "ada") is refused at its file, line and
 * key, where it used to load and run every all-reduce as the plain ring
 * with only a header line saying NCCL's model was unavailable. No arch at
 * all stays accepted (the CPU-rank entry's way of having no NCCL row). */
Test(nccl_model, a_misspelt_arch_is_refused_at_its_line) {
  const char *bad[] = {"arch: Lovelace", "arch: ada", "arch: Test"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ds_test_gpu_entry_refused(bad[i], "key 'gpus[0].arch': expected an architecture family: "
                                      "Volta, Turing, Ampere, Ada, Hopper or Blackwell");
  ds_test_ddpsim_refuses("--topo tests/data/misspelt-arch/pcie8.yaml --model resnet50",
                         "gpus.yaml:4:11: key 'gpus[0].arch'");
}

Test(nccl_model, constants_are_what_gen_nccl_constants_writes) {
  /* sim/coll/nccl_constants.c is generated from the shared CSV (as
   * gpus.yaml is, tests/test_efficiency_conv.c); a hand edit or a stale file
   * fails here. */
  if (access("../shared/data/nccl_tuning_constants.csv", R_OK) != 0)
    cr_skip_test("../shared/data (the generator's input) is not beside the repository");
  int rc = system("python3 tools/gen_nccl_constants.py --check >/dev/null 2>&1");
  cr_assert_eq(rc, 0, "tools/gen_nccl_constants.py --check failed: regenerate the constants");
}

/* The generated table a CSV row of the Blackwell arch belongs to, or NULL. */
static const double *blackwell_row(const char *table) {
  if (strncmp(table, "llMaxBws_GBps", 13) == 0) return ds__nccl_ll_max_bw_gbps[3];
  if (strcmp(table, "perChMaxRingLL128Bws_GBps") == 0)
    return ds__nccl_ring_ll128_per_ch_max_bw_gbps[3];
  if (strcmp(table, "perChMaxTreeLL128Bws_GBps") == 0)
    return ds__nccl_tree_ll128_per_ch_max_bw_gbps[3];
  if (strcmp(table, "perChMaxTreeBws_GBps") == 0) return ds__nccl_tree_per_ch_max_bw_gbps[3];
  if (strcmp(table, "perChMaxNVLSTreeBws_GBps") == 0)
    return ds__nccl_nvls_tree_per_ch_max_bw_gbps[3];
  return NULL;
}

Test(nccl_model, blackwell_constants_are_the_csvs) {
  /* Every v2.30.7 Blackwell row of the CSV (tuning.cc's fourth rows,
   * topo.h's SM100_NVLINK_BW) equals the generated constant the model
   * indexes by DS_NCCL_ARCH_BLACKWELL; 17 rows in all. */
  FILE *f = fopen("../shared/data/nccl_tuning_constants.csv", "r");
  if (!f) cr_skip_test("../shared/data is not beside the repository");
  cr_assert_eq(DS_NCCL_ARCH_BLACKWELL, 3);
  char line[512];
  int seen = 0;
  while (fgets(line, sizeof line, f)) {
    char ver[16], table[128], key[64], rest[256];
    /* the llMaxBws table name is quoted and holds commas: keep its head */
    const char *p = line;
    if (sscanf(p, "%15[^,],", ver) != 1 || strcmp(ver, "v2.30.7") != 0) continue;
    p += strlen(ver) + 1;
    if (*p == '"') {
      const char *end = strchr(p + 1, '"');
      cr_assert(end != NULL, "%s", line);
      snprintf(table, sizeof table, "%.*s", (int)(end - p - 1), p + 1);
      p = end + 2;
    } else {
      cr_assert_eq(sscanf(p, "%127[^,],", table), 1, "%s", line);
      p += strlen(table) + 1;
    }
    char proto[16] = "", hw[16] = "";
    cr_assert_eq(sscanf(p, "%63[^,],%255[^\n]", key, rest), 2, "%s", line);
    /* rest: protocol,hw_or_nodes,value (protocol and hw may be empty) */
    const char *c1 = strchr(rest, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    cr_assert(c1 && c2, "%s", line);
    snprintf(proto, sizeof proto, "%.*s", (int)(c1 - rest), rest);
    snprintf(hw, sizeof hw, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
    double value = atof(c2 + 1);
    if (strcmp(key, "SM100_NVLINK_BW") == 0) {
      cr_assert_float_eq(ds__nccl_blackwell_nvlink_gbps, value, 1e-12);
      seen++;
      continue;
    }
    if (strcmp(key, "Blackwell") != 0) continue;
    if (strcmp(table, "nvlsEfficiency") == 0) {
      cr_assert_float_eq(ds__nccl_nvls_efficiency[DS_NCCL_ARCH_BLACKWELL], value, 1e-12);
      seen++;
      continue;
    }
    const double *row = blackwell_row(table);
    cr_assert(row != NULL, "unexpected Blackwell table %s", table);
    int nidx = strcmp(hw, "N1") == 0 ? 0 : strcmp(hw, "N2") == 0 ? 1 : 2;
    cr_assert_float_eq(row[nidx], value, 1e-12, "%s %s", table, hw);
    seen++;
  }
  fclose(f);
  cr_assert_eq(seen, 17, "%d Blackwell rows", seen);
}

Test(nccl_model, blackwell_nvswitch_by_hand) {
  /* tests/data/dgx-b200.yaml: 8x B200 on one NVSwitch, 900 GB/s per GPU
   * (18 NVLink 5 links of 50 GB/s). NCCL sees 18 * SM100_NVLINK_BW = 900 *
   * 40.1/50 = 721.8 GB/s. The sm100 intra speeds give 90 GB/s, 8 channels
   * (721.8 / 90 = 8.02), duplicated (90 >= 50) to 16 of 45 GB/s: bus 720.
   *   ring LL:     min(llMaxBw 282, 720 / 2)             = 282 GB/s
   *   ring LL128:  min(720 * 0.92, 16 * 40)              = 640 GB/s
   *   ring Simple: 720 GB/s;  tree Simple min(662.4, 16 * 70) = 662.4 GB/s
   * NVLS: 721.8 / (8 + 1) = 80.2 -> 80 GB/s per head, 8 heads, efficiency
   * 0.74: 8 * 80 * 0.74 * 7/8 * 2 = 828.8 GB/s; latency 25 us. At 128 MiB
   * NVLS takes 25 + 2^27 B * 14 / (8 * 828.8 GB/s) = 308.40 us, ring Simple
   * 8.4 + 14 * 3.4 + 2^27 * 14 / (8 * 720 GB/s) = 382.22 us: NCCL picks
   * NVLS. Below 4 MiB the ring LL: 6.6 + 14 * 0.6 = 15 us. */
  struct ds_err err = {0};
  struct fixture f;
  cr_assert_eq(build(&f, "tests/data/dgx-b200.yaml", 0, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(f.m.arch, DS_NCCL_ARCH_BLACKWELL);
  cr_assert_eq(f.m.nnodes, 1);
  cr_assert_eq(f.m.channels, 16);
  cr_assert_float_eq(f.m.chan_bw_bytes_per_s, 45e9, 1);
  cr_assert_float_eq(f.m.busbw_bytes_per_s[DS_PROTO_LL], 282e9, 1e3);
  cr_assert_float_eq(f.m.busbw_bytes_per_s[DS_PROTO_LL128], 640e9, 1e3);
  cr_assert_float_eq(f.m.busbw_bytes_per_s[DS_PROTO_SIMPLE], 720e9, 1e3);
  cr_assert_float_eq(f.m.tree_busbw_bytes_per_s[DS_PROTO_SIMPLE], 662.4e9, 1e3);
  cr_assert(f.m.nvls_ok, "%s", f.m.nvls_why);
  cr_assert_eq(f.m.nvls_tree, 0);
  cr_assert_eq(f.m.nvls_channels, 8);
  cr_assert_float_eq(f.m.nvls_chan_bw_bytes_per_s, 80e9, 1);
  cr_assert_float_eq(f.m.nvls_busbw_bytes_per_s, 828.8e9, 1e3);
  double big = 134217728;
  double nvls_us = 25 + big * 14 / (8 * 828.8e9) * 1e6;
  double ring_us = 8.4 + 14 * 3.4 + big * 14 / (8 * 720e9) * 1e6;
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, DS_AR_NVLS, DS_PROTO_SIMPLE, big) / 1e3,
                     nvls_us, 1e-6);
  cr_assert_float_eq(nvls_us, 308.3995, 1e-3);
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, DS_AR_RING, DS_PROTO_SIMPLE, big) / 1e3,
                     ring_us, 1e-6);
  cr_assert_eq(ds_nccl_choose_algo_with(&f.m, big, DS_PROTO_SIMPLE), DS_AR_NVLS);
  cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, DS_AR_RING, DS_PROTO_LL, 0) / 1e3,
                     6.6 + 14 * 0.6, 1e-9);
  /* NVLS's chunking runs NVLS_NCHANNELS_SM100_NVL = 24 CTAs on one node. */
  struct ds_nccl_chunking ch;
  ds_nccl_chunking(&f.m, DS_AR_NVLS, DS_PROTO_SIMPLE, big, &ch);
  cr_assert_eq(ch.ctas, 24);
  release(&f);
}

/* Writes 2node-ib with gpu and its NVLink bandwidth to a temp file, with
 * cpu_vendor unless it is NULL. */
static void write_two_blackwell_nodes(const char *path, const char *gpu, const char *vendor) {
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL);
  if (vendor) fprintf(f, "cpu_vendor: %s\n", vendor);
  fprintf(f, "schema_version: 1\nname: bw2\ngpu: %s\nnodes: 2\ngpus_per_node: 8\n"
             "intra_node:\n  template: nvswitch\n  link_bw: 900GBps\n  link_lat: 1.7us\n"
             "inter_node:\n  template: ib\n  nics_per_node: 8\n  nic_bw: 400Gbps\n"
             "  nic_lat: 6us\n  gpu_nic_bw: 64GBps\n  gpu_nic_lat: 1us\n",
          gpu);
  fclose(f);
}

Test(nccl_model, blackwell_nvls_tree_by_hand) {
  /* Two nodes of 8 Blackwell GPUs, 8 NICs of 50 GB/s each (2node-ib's
   * network): NVLSTree with 8 heads; speed: the first sm100 inter speed
   * not above min(50, 721.8 / 9) = 48 GB/s; per channel min(48 * 0.74 *
   * 7/8 * 2 = 62.16, 48 * 2, perChMaxNVLSTreeBw[Blackwell][2 nodes] 96):
   * busBw 497.28 GB/s, algbw 497.28 * 16/30; latency 25 + 2 * 20.9 us. On
   * B200 (x86 hosts) algbw takes treeCorrectionFactor[Simple][log2(16 MiB /
   * 64) = 18] = 0.7 at 16 MiB; on GB200 (Grace hosts) it does not, nor on
   * B200 where the topology says its hosts are Arm (tuning.cc:644 reads the
   * CPU's arch, x86 only). */
  const char *gpus[] = {"B200-SXM-180GB", "GB200-186GB", "B200-SXM-180GB"};
  const char *vendors[] = {NULL, NULL, "arm"};
  for (int g = 0; g < 3; g++) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/ddpsim-bw2-%d.yaml", (int)getpid());
    write_two_blackwell_nodes(path, gpus[g], vendors[g]);
    struct ds_err err = {0};
    struct fixture f;
    /* the shipped table: no gpus.yaml sits beside a file in /tmp */
    cr_assert_eq(build_with_table(&f, path, "topologies/gpus.yaml", 0, &err), DS_OK, "%s",
                 err.msg);
    unlink(path);
    cr_assert_eq(f.m.arch, DS_NCCL_ARCH_BLACKWELL);
    cr_assert(f.m.nvls_ok && f.m.nvls_tree, "%s", f.m.nvls_why);
    cr_assert_eq(f.m.nvls_channels, 8);
    cr_assert_float_eq(f.m.nvls_chan_bw_bytes_per_s, 48e9, 1);
    cr_assert_float_eq(f.m.nvls_busbw_bytes_per_s, 497.28e9, 1e3);
    cr_assert_float_eq(f.m.nvls_lat_ns, 66800, 1e-6);
    cr_assert_eq(f.m.nvls_tree_size_corrected, g == 0);
    double s = 16777216, corr = g == 0 ? 0.7 : 1;
    double expect_us = 66.8 + s / (497.28e9 * 16 / 30 * corr) * 1e6;
    cr_assert_float_eq(ds_nccl_predict_algo_ns(&f.m, DS_AR_NVLS, DS_PROTO_SIMPLE, s) / 1e3,
                       expect_us, 1e-6);
    release(&f);
  }
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
