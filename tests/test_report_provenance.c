/*
 * The summary's provenance columns (sim/cli/report_csv_json.c DS_SUMMARY_COLUMNS
 * after host_exposed_ms, filled by run_setup.c ds__run_fill_provenance):
 * two runs that differ only in a flag that changes the numbers differ in
 * the column named for it, so a pasted CSV row says how to reproduce it.
 * Each case runs ddpsim on topologies/4gpu.yaml (A100s), 2 ranks; the
 * default-flag run is the same in every case.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"

#define BASE "--topo 4gpu --world-size 2 --format csv "

/* The run's CSV (owned by r); the run must succeed. */
static struct ds_test_result run_csv(const char *args) {
  char all[512];
  snprintf(all, sizeof all, BASE "%s", args);
  struct ds_test_result r = ds_test_cli(all);
  cr_assert_eq(r.status, 0, "%s: %s", all, r.err);
  return r;
}

/* Column col of row 0 of `ddpsim BASE args` into buf, and its iter_ms. */
static double column_of(const char *args, const char *col, char *buf, size_t cap) {
  struct ds_test_result r = run_csv(args);
  ds_test_csv_str(r.out, col, 0, buf, cap);
  double iter_ms = ds_test_csv_num(r.out, "iter_ms", 0);
  ds_test_release(&r);
  return iter_ms;
}

/* Flag against default: the column holds want_default and want_flag, and
 * (moves) the iteration moves too, which is why the column exists. */
static void assert_column(const char *col, const char *flag, const char *want_default,
                          const char *want_flag, int moves) {
  char a[256], b[256];
  double t0 = column_of("", col, a, sizeof a), t1 = column_of(flag, col, b, sizeof b);
  cr_assert_str_eq(a, want_default, "%s without %s", col, flag);
  cr_assert_str_eq(b, want_flag, "%s with %s", col, flag);
  if (moves) cr_assert_neq(t0, t1, "%s: iter_ms %.6f both ways", flag, t0);
}

/* --tf32 all puts fp32 matmuls on TF32 tensor cores, none takes
 * convolutions off them: the column says which (default conv). */
Test(report_provenance, tf32) {
  assert_column("tf32", "--tf32 all", "conv", "all", 1);
  assert_column("tf32", "--tf32 none", "conv", "none", 1);
}

/* --channels-last: cuDNN's NHWC batch norm (kernel_models.h) */
Test(report_provenance, memory_format) {
  assert_column("memory_format", "--channels-last", "contiguous_format", "channels_last", 1);
}

/* --host-scale F multiplies the host costs: written so that it reads back
 * as the same double (1 + 2^-52 is not 1, 0.1 is 0.1), never %g's six
 * digits, which would give two runs one value. */
Test(report_provenance, host_scale_exact) {
  assert_column("host_scale", "--host-scale 1.1", "1", "1.1", 1);
  char v[64];
  column_of("--host-scale 1.0000000000000002", "host_scale", v, sizeof v);
  cr_assert_eq(strtod(v, NULL), 1.0000000000000002, "%s", v);
  cr_assert_neq(strtod(v, NULL), 1.0, "%s", v);
  column_of("--host-scale 0.1", "host_scale", v, sizeof v);
  cr_assert_str_eq(v, "0.1"); /* the fewest digits that read back: 15, not 17 */
}

/* --calib: the path as given (empty without), and how its GPU relates to
 * the topology's (calib.c ds_calib_gpu_fit): this_gpu where the file names
 * 4gpu's A100, other_gpu where it names an H200 (its fractions stand in),
 * not_named where it names none. The three apply the same efficiencies
 * (test_calib_gpu.c): only calib_gpu tells them apart. */
#define GPU_CALIB(GPU) "schema_version: 1\n" GPU "efficiency:\n  conv_tf32: 0.3\n" \
                       "compute:\n  mem_efficiency: 0.8\n"
static void assert_calib(const char *text, const char *want_gpu) {
  char path[64] = "/tmp/ddpsim-provcalib-XXXXXX", args[128], got[256];
  ds_test_write_temp(path, text);
  snprintf(args, sizeof args, "--calib %s", path);
  struct ds_test_result r = run_csv(args);
  ds_test_csv_str(r.out, "calib", 0, got, sizeof got);
  cr_assert_str_eq(got, path);
  ds_test_csv_str(r.out, "calib_gpu", 0, got, sizeof got);
  cr_assert_str_eq(got, want_gpu, "%s", text);
  ds_test_release(&r);
  unlink(path);
}

Test(report_provenance, calib_path_and_whose_gpu) {
  char got[256];
  column_of("", "calib", got, sizeof got);
  cr_assert_str_eq(got, "");
  column_of("", "calib_gpu", got, sizeof got);
  cr_assert_str_eq(got, "");
  assert_calib(GPU_CALIB("gpu: \"NVIDIA A100-SXM4-80GB\"\n"), "this_gpu");
  assert_calib(GPU_CALIB("gpu: \"NVIDIA H200\"\n"), "other_gpu");
  assert_calib(GPU_CALIB(""), "not_named");
  /* the device name without its vendor word, as a hand-written file or
   * another tool gives it, is still 4gpu's A100: nvidia-smi's "NVIDIA A100
   * 80GB PCIe" less "NVIDIA " is the A100 PCIe's alone (gpu_table.c
   * ds_gpu_table_by_device_name), so on 4gpu's SXM4 it is another GPU */
  assert_calib(GPU_CALIB("gpu: \"A100 80GB PCIe\"\n"), "other_gpu");
  /* and a calibration changes the numbers */
  assert_column("calib", "--calib tests/data/tiny-calib.yaml", "",
                "tests/data/tiny-calib.yaml", 1);
}

/* On dgx-h100 (H100-SXM5-80GB, nvidia-smi's "NVIDIA H100 80GB HBM3") a
 * file naming "H100 80GB HBM3", the device's name without its vendor word,
 * is this GPU's, as the GPU table's smi-name hint reads it: its rates are
 * measured here, not another GPU's stand-ins, and no warning says so.
 * "80GB HBM3" ends only the H100 SXM's smi name; "PCIe" ends two (the
 * A100's and the H100's), so it names neither and stays another GPU. */
static void assert_h100_calib(const char *gpu_line, const char *want_gpu, int warned) {
  char path[64] = "/tmp/ddpsim-provcalib-XXXXXX", args[160], got[256];
  char text[256];
  snprintf(text, sizeof text, "schema_version: 1\n%sefficiency:\n  conv_tf32: 0.3\n"
           "compute:\n  mem_efficiency: 0.8\n", gpu_line);
  ds_test_write_temp(path, text);
  snprintf(args, sizeof args, "--topo dgx-h100 --world-size 2 --format csv --calib %s", path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  ds_test_csv_str(r.out, "calib_gpu", 0, got, sizeof got);
  cr_assert_str_eq(got, want_gpu, "%s", text);
  cr_assert_eq(strstr(r.err, "key 'gpu': measured on") != NULL, warned, "%s", r.err);
  ds_test_release(&r);
  unlink(path);
}

Test(report_provenance, calib_gpu_without_vendor_words) {
  assert_h100_calib("gpu: \"NVIDIA H100 80GB HBM3\"\n", "this_gpu", 0);
  assert_h100_calib("gpu: \"H100 80GB HBM3\"\n", "this_gpu", 0);
  assert_h100_calib("gpu: \"h100 80gb hbm3\"\n", "this_gpu", 0);
  assert_h100_calib("gpu: \"PCIe\"\n", "other_gpu", 1);
  assert_h100_calib("gpu: \"H100 PCIe\"\n", "other_gpu", 1);
}

/* --nccl-extra none drops the launch and slice syncs NCCL's model leaves
 * out; where no NCCL model runs (the plain ring) nothing is added either
 * way: none. */
Test(report_provenance, nccl_extra) {
  assert_column("nccl_extra", "--nccl-extra none", "measured", "none", 1);
  char got[32];
  column_of("--algo ring", "nccl_extra", got, sizeof got);
  cr_assert_str_eq(got, "none");
}

/* --ring-chunks in every row, not only a sweep's (where it was the only
 * place): once in the header either way. */
Test(report_provenance, ring_chunks_every_row_once) {
  assert_column("ring_chunks", "--algo ring --ring-chunks 4", "1", "4", 0);
  struct ds_test_result r = run_csv("--algo ring --ring-chunks 1,4");
  const char *header_end = strchr(r.out, '\n');
  const char *first = strstr(r.out, ",ring_chunks,");
  cr_assert(first && first < header_end, "%s", r.out);
  const char *again = strstr(first + 1, ",ring_chunks,");
  cr_assert(!again || again > header_end, "ring_chunks twice: %.*s",
            (int)(header_end - r.out), r.out);
  cr_assert_eq(ds_test_csv_num(r.out, "ring_chunks", 0), 1);
  cr_assert_eq(ds_test_csv_num(r.out, "ring_chunks", 1), 4);
  ds_test_release(&r);
}

/* --iters: the reported iteration is the last one simulated */
Test(report_provenance, iters) {
  assert_column("iters", "--iters 3", "2", "3", 0);
}

/* --seed moves a jittered run's numbers (the timing fields are its first
 * sample's): the seed column tells two such rows apart, which jitter_cv
 * and samples alone do not. */
Test(report_provenance, seed) {
  char a[32], b[32];
  double t0 = column_of("--jitter 0.1 --seed 2", "seed", a, sizeof a);
  double t1 = column_of("--jitter 0.1 --seed 3", "seed", b, sizeof b);
  cr_assert_str_eq(a, "2");
  cr_assert_str_eq(b, "3");
  cr_assert_neq(t0, t1);
  column_of("", "seed", a, sizeof a);
  cr_assert_str_eq(a, "1");
}

/* GSL's mt19937 keeps a seed's low 32 bits and takes 0 as its default
 * 4357, so seeds 1 and 2^32 + 1 ran the same timeline, and 0 ran 4357's:
 * only 1 .. 2^32 - 1 are accepted, and with --samples N the last sample's
 * seed (--seed + N - 1) too, exit 2 naming the seed it would repeat. The
 * largest accepted seed runs. (The old code accepted 0 and 4294967297:
 * fails.) */
Test(report_provenance, seeds_mt19937_would_alias_are_refused) {
  ds_test_ddpsim_refuses("--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
                         "--jitter 0.1 --seed 0",
                         "option --seed: expected an integer from 1 to 4294967295");
  ds_test_ddpsim_refuses("--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
                         "--jitter 0.1 --seed 4294967297",
                         "takes 0 as its default seed 4357, so other values would repeat one "
                         "of these timelines), got \"4294967297\"");
  ds_test_ddpsim_refuses("--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
                         "--jitter 0.1 --seed 4294967295 --samples 3",
                         "seed 4294967297 passes 4294967295 (GSL's mt19937 keeps a seed's low "
                         "32 bits, so it would repeat seed 1's timeline)");
  char a[32];
  column_of("--jitter 0.1 --seed 4294967295", "seed", a, sizeof a);
  cr_assert_str_eq(a, "4294967295");
}

/* --straggler: every straggler of the row's world, RANK:FACTOR by ';',
 * exact; single's one GPU keeps only rank 0's (run_setup.c
 * ds__run_rank_factors); none: "none". */
Test(report_provenance, stragglers) {
  assert_column("stragglers", "--straggler 1:1.5", "none", "1:1.5", 1);
  struct ds_test_result r =
      run_csv("--strategy single,ddp --straggler 0:1.25,1:1.0000000000000002");
  char got[128];
  ds_test_csv_str(r.out, "stragglers", 0, got, sizeof got);
  cr_assert_str_eq(got, "0:1.25");
  ds_test_csv_str(r.out, "stragglers", 1, got, sizeof got);
  cr_assert_str_eq(got, "0:1.25;1:1.0000000000000002");
  ds_test_release(&r);
}

/* The text summary names them where they are not the defaults: one
 * "flags:" line, the NCCL line for --nccl-extra none, the stragglers per
 * row; a default run has no flags line. */
Test(report_provenance, text_names_the_flags) {
  struct ds_test_result r = ds_test_run(
      "", ds_test_ddpsim(),
      "--topo 4gpu --world-size 2 --tf32 all --channels-last --host-scale 1.5 "
      "--calib tests/data/tiny-calib.yaml --nccl-extra none --straggler 1:2 --jitter 0.1 "
      "--seed 9");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\nflags: --tf32 all, --channels-last, --host-scale 1.5, --calib "
                          "tests/data/tiny-calib.yaml (names no GPU: applied as this GPU's), "
                          "--seed 9\n"), "%s", r.out);
  cr_assert(strstr(r.out, "without the mechanisms it leaves out: --nccl-extra none"), "%s",
            r.out);
  cr_assert(strstr(r.out, "\nstragglers 1:2, bucket cap"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli("--topo 4gpu --world-size 2");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(!strstr(r.out, "flags:"), "%s", r.out);
  cr_assert(!strstr(r.out, "stragglers"), "%s", r.out);
  ds_test_release(&r);
}
