/*
 * NCCL's rate of one NVLink by compute capability (sim/coll/nccl_model.c
 * ds_nccl_nvlink_of, ds_nccl_link_bw): topo.h ncclTopoNVLinkBw gives 8.6
 * exactly (GA102: RTX 3090, RTX A6000, A40) SM86_NVLINK_BW 12 GB/s a
 * link, and a topology's NVLink bandwidth counts links of the GPU table's
 * nvlink_bw / nvlink_links (GA102's 14.0625 GB/s, not GA100's 25). Worked
 * by hand on GA102 pairs (tests/data/pair3-3090, pair4-3090), where the old
 * rule (20 of 25 GB/s for every Ampere) gave NCCL 45 GB/s for a bridge and
 * 2 channels of 15 for a 3-link pair; and the other families unchanged.
 * Also the Hopper pair of NVIDIA/nccl#1161 (12 links), worked for v2.30.7.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/nccl_model.h"
#include "sim/coll/ring_channels.h"
#include "sim/coll/ring_rails.h"
#include "sim/net/gpu_table.h"
#include "sim/net/topo.h"
#include "tests/support.h"

static struct ds_topo *load(const char *path) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(path, NULL, &t, &err), DS_OK, "%s: %s", path, err.msg);
  return t;
}

Test(nccl_nvlink, the_gpu_table_gives_one_links_raw_rate) {
  /* topologies/gpus.yaml: RTX3090-24GB nvlink_bw 56.25GBps over
   * nvlink_links 4 = 14.0625 GB/s (the GA102 whitepaper's per-link rate);
   * A100-SXM4-80GB 300GBps over 12 = 25; RTX4090-24GB has no NVLink: 0. */
  struct ds_gpu_table tab;
  struct ds_err err = {0};
  cr_assert_eq(ds_gpu_table_load("topologies/gpus.yaml", &tab, &err), DS_OK, "%s", err.msg);
  const struct ds_gpu_info *g = ds_gpu_table_find(&tab, "RTX3090-24GB");
  cr_assert_not_null(g);
  cr_assert_eq(g->spec.compute_capability, 86);
  cr_assert_float_eq(g->spec.nvlink_link_bw_bytes_per_s, 14.0625e9, 1);
  g = ds_gpu_table_find(&tab, "A100-SXM4-80GB");
  cr_assert_not_null(g);
  cr_assert_float_eq(g->spec.nvlink_link_bw_bytes_per_s, 25e9, 1);
  g = ds_gpu_table_find(&tab, "RTX4090-24GB");
  cr_assert_not_null(g);
  cr_assert_float_eq(g->spec.nvlink_link_bw_bytes_per_s, 0, 1e-9);
  ds_gpu_table_release(&tab);
}

Test(nccl_nvlink, ncclTopoNVLinkBw_by_compute_capability) {
  /* topo.h:274-281 (v2.30.7-1): 8.6 -> SM86 12.0, before the >= 8.0 row;
   * 8.0 and Ada's 8.9 -> SM80 20.0; 7.0 and Turing's 7.5 -> SM70 20.0; 9.0
   * -> SM90 20.6; 10.0 and 12.0 -> SM100 40.1. The raw rate is the table's
   * per-link figure, else 25 GB/s (50 on Blackwell). */
  struct ds_gpu_spec g;
  struct {
    enum ds_nccl_arch arch;
    int32_t cc;
    double link_gbps, nccl, raw;
  } cases[] = {
      {DS_NCCL_ARCH_AMPERE, 86, 14.0625, 12.0, 14.0625},
      {DS_NCCL_ARCH_AMPERE, 80, 25, 20.0, 25},
      {DS_NCCL_ARCH_AMPERE, 89, 0, 20.0, 25},
      {DS_NCCL_ARCH_VOLTA, 70, 25, 20.0, 25},
      {DS_NCCL_ARCH_VOLTA, 75, 25, 20.0, 25},
      {DS_NCCL_ARCH_HOPPER, 90, 25, 20.6, 25},
      {DS_NCCL_ARCH_BLACKWELL, 100, 50, 40.1, 50},
      {DS_NCCL_ARCH_BLACKWELL, 120, 0, 40.1, 50},
      {DS_NCCL_ARCH_AMPERE, 0, 0, 20.0, 25}, /* no compute_capability: by arch */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    memset(&g, 0, sizeof g);
    g.compute_capability = cases[i].cc;
    g.nvlink_link_bw_bytes_per_s = cases[i].link_gbps * 1e9;
    struct ds_nccl_nvlink nv = ds_nccl_nvlink_of(cases[i].arch, &g);
    cr_assert_float_eq(nv.nccl_gbps, cases[i].nccl, 1e-12, "case %zu", i);
    cr_assert_float_eq(nv.raw_gbps, cases[i].raw, 1e-12, "case %zu", i);
  }
}

Test(nccl_nvlink, a_ga102_bridge_is_4_links_of_12) {
  /* A 3090 bridge, 56.25 GB/s a direction = 4 links of 14.0625: NCCL's
   * graph gives the pair count x SM86_NVLINK_BW = 48 GB/s (topo.cc:842),
   * not 56.25 x 20/25 = 45. PCIe is unchanged: 32 x 12/16 = 24. */
  struct ds_topo *t = load("tests/data/pair4-3090.yaml");
  struct ds_nccl_nvlink nv = ds_nccl_nvlink_of(ds_nccl_arch_of_topo(t), &t->gpu);
  cr_assert_float_eq(ds_nccl_link_bw(&nv, DS_HOP_NVLINK, 56.25e9), 48e9, 1);
  cr_assert_float_eq(ds_nccl_link_bw(&nv, DS_HOP_PCI, 32e9), 24e9, 1);
  /* the search: maxBw = totalBw = 48; Ampere's speeds from 40 (first not
   * above 48): 1 ring; 30: 1; 20: 2 x 20 = 40, not more; 18/40 < 0.49,
   * stop: 1 ring of 40. ncclTopoDupChannels (40 >= 25; 8.6 > 8.0 but 1
   * channel is not > 4): 2 channels of 20 = 40, as under the old rule. */
  const int32_t gpus[2] = {0, 1};
  struct ds_ring_channels c;
  struct ds_err err = {0};
  cr_assert_eq(ds_ring_channels_search(t, gpus, 2, ds_nccl_arch_of_topo(t), &c, &err), DS_OK,
               "%s", err.msg);
  cr_assert_float_eq(c.max_gbps, 48, 1e-9);
  cr_assert_float_eq(c.total_gbps, 48, 1e-9);
  cr_assert_eq(c.n_rings, 1);
  cr_assert_float_eq(c.speed_gbps, 40, 1e-9);
  ds_ring_channels_release(&c);
  struct ds_ring r;
  cr_assert_eq(ds_ring_build_rails(t, gpus, 2, &r, &err), DS_OK, "%s", err.msg);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(m.nvlink.nccl_gbps, 12, 1e-12);
  cr_assert_eq(m.channels, 2);
  cr_assert_float_eq(m.chan_bw_bytes_per_s, 20e9, 1);
  ds_ring_release(&r);
  ds_topo_free(t);
}

Test(nccl_nvlink, three_ga102_links_pack_two_rings_of_18) {
  /* 3 links, 42.1875 GB/s: NCCL 3 x 12 = 36 = maxBw = totalBw. Speeds from
   * 30: 1 ring; 20: 1; 18: 2 (36/18) = 36 = totalBw, stop. No duplication
   * (18 < 25): 2 channels of 18 = 36 GB/s. The old rule (33.75 GB/s):
   * 30: 1; 20, 18: 1; 15: 2 x 15 = 30, not more; 12/30 < 0.49, stop at 1
   * of 30, duplicated to 2 of 15 = 30. */
  struct ds_topo *t = load("tests/data/pair3-3090.yaml");
  const int32_t gpus[2] = {0, 1};
  struct ds_ring_channels c;
  struct ds_err err = {0};
  cr_assert_eq(ds_ring_channels_search(t, gpus, 2, ds_nccl_arch_of_topo(t), &c, &err), DS_OK,
               "%s", err.msg);
  cr_assert_float_eq(c.total_gbps, 36, 1e-9);
  cr_assert_eq(c.n_rings, 2);
  cr_assert_float_eq(c.speed_gbps, 18, 1e-9);
  ds_ring_channels_release(&c);
  struct ds_ring r;
  cr_assert_eq(ds_ring_build_rails(t, gpus, 2, &r, &err), DS_OK, "%s", err.msg);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m.channels, 2);
  cr_assert_float_eq(m.chan_bw_bytes_per_s, 18e9, 1);
  cr_assert_float_eq(m.busbw_bytes_per_s[DS_PROTO_SIMPLE], 36e9, 1);
  ds_ring_release(&r);
  ds_topo_free(t);
}

Test(nccl_nvlink, the_binary_prints_the_sm86_channels) {
  /* `ddpsim topo` on the 3-link pair prints the search and the model
   * worked above: 2 rings of 18 over a GPU's 36 GB/s (the old rule
   * printed 1 ring of 30 over 33.8, then 2 channels x 15.0). */
  struct ds_test_result r = ds_test_cli("topo tests/data/pair3-3090.yaml");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_not_null(strstr(r.out, "2 rings of 18.0 GB/s over direct links (a GPU's links: 36.0"),
                     "%s", r.out);
  cr_assert_not_null(strstr(r.out, "2 channels x 18.0 GB/s = 36.0 GB/s"), "%s", r.out);
  ds_test_release(&r);
}

Test(nccl_nvlink, sm86_constant_is_the_csvs) {
  /* ../shared/data/nccl_tuning_constants.csv's v2.30.7 SM86_NVLINK_BW row
   * (topo.h:23) is the generated constant. */
  FILE *f = fopen("../shared/data/nccl_tuning_constants.csv", "r");
  if (!f) cr_skip_test("../shared/data is not beside the repository");
  char line[512];
  int seen = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "v2.30.7,", 8) != 0 || !strstr(line, ",SM86_NVLINK_BW,")) continue;
    const char *v = strrchr(line, ',');
    cr_assert_float_eq(ds__nccl_sm86_nvlink_gbps, atof(v + 1), 1e-12, "%s", line);
    seen++;
  }
  fclose(f);
  cr_assert_eq(seen, 1);
  cr_assert_float_eq(ds__nccl_sm86_nvlink_gbps, 12.0, 1e-12);
}

Test(nccl_nvlink, a_link_rate_below_1_gbps_is_refused) {
  /* nvlink_bw over nvlink_links is the raw rate NCCL's view divides by
   * (ds_nccl_link_bw): 1 Bps over 1024 links made a 300 GB/s topology
   * count ~6e15 links, past int32_t. Refused at nvlink_bw (file, line);
   * 12 GBps over 12 links, exactly 1 GB/s, is accepted. */
  ds_test_gpu_entry_refused("nvlink_bw: 1Bps\n    nvlink_links: 1024",
                            "key 'gpus[0].nvlink_bw': expected at least 1 GBps per NVLink link");
  ds_test_gpu_entry_refused("nvlink_bw: 11GBps\n    nvlink_links: 12",
                            "key 'gpus[0].nvlink_bw': expected at least 1 GBps per NVLink link");
  struct ds_gpu_spec g;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_lookup_gpu_text("schema_version: 1\ngpus:\n  - name: G\n    sms: 1\n"
                                       "    fp32: 1TFLOPS\n    tf32: 8TFLOPS\n    fp16: 2TFLOPS\n"
                                       "    mem: 1GB\n    mem_bw: 1GBps\n    nvlink_bw: 12GBps\n"
                                       "    nvlink_links: 12\n",
                                       "G", &g, &err, NULL),
               DS_OK, "%s", err.msg);
  cr_assert_float_eq(g.nvlink_link_bw_bytes_per_s, 1e9, 1e-3);
}

Test(nccl_nvlink, huge_link_counts_clamp_before_the_cast) {
  /* A raw rate the table now refuses (1 Bps / 1024 links), set on the
   * topology directly: dgx-a100's 300 GB/s switch links count ~6e15 of
   * NCCL's 20 GB/s links. The one-route model: speed 40 (Ampere's first),
   * nChannels floor(share / 40) clamped at 32 in double (the cast of
   * ~1.5e14 was undefined: INT_MIN, raised to 1, gave 2 channels of 20),
   * then ncclTopoDupChannels (40 >= 25, Ampere): min(64, 32) = 32
   * channels, 40 / ((32 + 31) / 32) = 40 each. P2P: 2 per NVLink of the
   * path, clamped before the cast, pow2Up, then at most p2pnChannels =
   * pow2Up(32) = 32 (the old cast gave 2). */
  struct ds_topo *t = load("topologies/dgx-a100.yaml");
  t->gpu.nvlink_link_bw_bytes_per_s = 1.0 / 1024;
  const int32_t gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  struct ds_ring r;
  struct ds_err err = {0};
  cr_assert_eq(ds_ring_build_rails(t, gpus, 8, &r, &err), DS_OK, "%s", err.msg);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m.channels, 32);
  cr_assert_float_eq(m.chan_bw_bytes_per_s, 40e9, 1);
  struct ds_nccl_p2p q;
  cr_assert_eq(ds_nccl_p2p_build(t, &r, &m, &q, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(q.p2p_channels, 32);
  cr_assert_eq(q.per_peer_channels, 32);
  ds_ring_release(&r);
  ds_topo_free(t);
}

Test(nccl_nvlink, an_h100_pcie_pair_of_12_links_is_8_graph_channels_of_30) {
  /* validation/topologies/h100pcie-2x-nvlink.yaml (NVIDIA/nccl#1161): 12
   * links of 25 GB/s, NCCL v2.30.7 12 x SM90_NVLINK_BW 20.6 = 247.2 =
   * maxBw = totalBw. sm90 speeds from 60: 4 rings = 240 < 247.2; 50: 4 =
   * 200; 40: 6 = 240, 30: 8, 24: 10, 20: 12, 15: 16 (maxChannels) = 240,
   * none more; 12/60 < 0.49, stop at 4 of 60. ncclTopoDupChannels (60 >=
   * 25 and not < 50): 8 graph channels of 30 = 240. (ncclTopoPostset then
   * doubles comm->nChannels, connect.cc:459, so this NCCL would print
   * Trees [0]..[15]; the issue's [0]..[23] is 12 graph channels.) */
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("validation/topologies/h100pcie-2x-nvlink.yaml", "topologies/gpus.yaml",
                            &t, &err),
               DS_OK, "%s", err.msg);
  const int32_t gpus[2] = {0, 1};
  struct ds_ring_channels c;
  cr_assert_eq(ds_ring_channels_search(t, gpus, 2, ds_nccl_arch_of_topo(t), &c, &err), DS_OK,
               "%s", err.msg);
  cr_assert_float_eq(c.total_gbps, 247.2, 1e-9);
  cr_assert_eq(c.n_rings, 4);
  cr_assert_float_eq(c.speed_gbps, 60, 1e-9);
  ds_ring_channels_release(&c);
  struct ds_ring r;
  cr_assert_eq(ds_ring_build_rails(t, gpus, 2, &r, &err), DS_OK, "%s", err.msg);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m.channels, 8);
  cr_assert_float_eq(m.chan_bw_bytes_per_s, 30e9, 1);
  cr_assert_float_eq(m.busbw_bytes_per_s[DS_PROTO_SIMPLE], 240e9, 1);
  ds_ring_release(&r);
  ds_topo_free(t);
}
