/*
 * NCCL's cost model (sim/coll/nccl_model.c), its tuning constants: the
 * tuning row a GPU family picks, the generated constants against their
 * generator, and Blackwell's (the CSV's rows, NVSwitch and NVLS tree
 * worked by hand). What the model derives: test_nccl_model_plan.c; its
 * choices: test_nccl_model_choice.c; the fixture: tests/nccl_fixture.h.
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
