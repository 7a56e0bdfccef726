/*
 * NCCL's cost model (sim/coll/nccl_model.c) on shipped topologies: the
 * architecture from the GPU name, the channel search and the tuning table
 * (and the protocol it picks by size), the simulation parameters derived
 * from it (syncs, ring chunking, the broadcast's chain and its cells, fewer
 * channels for small rings, NVLS's chunks and pipeline), Hopper on two
 * nodes, no duplication above compute capability 8.0, Intel's overhead on
 * hops without P2P, and an unknown architecture. The choice against NCCL's
 * formulas: test_nccl_model_choice.c; the constants:
 * test_nccl_model_tuning.c; the fixture: tests/nccl_fixture.h.
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
