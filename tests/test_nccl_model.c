/*
 * NCCL's cost model: architecture from the GPU name, the channel search on
 * shipped topologies, NCCL's latencies and bus bandwidths per protocol
 * (hand-computed from tuning.cc v2.30.7's constants), its protocol choice,
 * and the simulation parameters derived from it.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/coll.h"
#include "sim/nccl_model.h"
#include "sim/topo.h"

struct fixture {
  struct ds_topo *topo;
  struct ds_ring ring;
  struct ds_nccl_model m;
};

static ds_status build(struct fixture *f, const char *path, int32_t n, struct ds_err *err) {
  int32_t gpus[64];
  memset(f, 0, sizeof *f);
  cr_assert_eq(ds_topo_load(path, NULL, &f->topo, err), DS_OK, "%s", err->msg);
  if (n == 0) n = f->topo->n_gpus;
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  cr_assert_eq(ds_ring_build(f->topo, gpus, n, &f->ring, err), DS_OK, "%s", err->msg);
  return ds_nccl_model_build(f->topo, &f->ring, DS_NCCL_EXTRA_NONE, &f->m, err);
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
  /* Extra effects: launch + ramp_max * S / (S + half). */
  f.m.extra = DS_NCCL_EXTRA_MEASURED;
  double half = f.m.extra.ramp_half_bytes;
  ds_nccl_coll_proto(&f.m, DS_PROTO_SIMPLE, half, &p);
  cr_assert_float_eq(p.start_lat_ns, 8400 + f.m.extra.launch_ns + f.m.extra.ramp_max_ns / 2,
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
  int32_t n = f.m.nranks;
  double expect = 8400 + (2.0 * (n - 1) - 2) * f.m.hw_lat_ns[f.m.hw_intra][DS_PROTO_SIMPLE] +
                  2 * 14000;
  cr_assert_float_eq(f.m.lat_ns[DS_PROTO_SIMPLE], expect, 1e-6);
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
