/*
 * What a sweep's text says (sim/cli/sweep.c, docs/sweeps.md): the closing
 * line's best and slowest (memory, wording, flatness: a configuration over
 * memory is never best, a bucket sweep within one percent, a tie names no
 * slowest), and each text block's all-reduce, other options and memory
 * warnings. End-to-end cases run $DDPSIM_BIN
 * (else build/asan/ddpsim).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/support.h"
#include "sim/cli/options.h"
#include "sim/cli/report.h"
#include "sim/cli/sweep.h"

/* ---- helpers ------------------------------------------------------------ */

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

/* ---- the closing line: memory, wording, flatness (revuser2 1, 4, 14) ----- */

/* rows of a --batch 64,256,1024 sweep on 4 ranks: iteration times chosen so
 * the per-sample order is 1024 < 256 < 64 (10 ms, 20 ms, 60 ms for 4, 16,
 * 64 units of work), peak memories 10, 40 and 90 GiB on an 80 GiB GPU. */
static void batch_rows(struct ds_options *o, struct ds_summary *rows, const double *peak) {
  ds_test_options_ok("--topo x --batch 64,256,1024", o);
  memset(rows, 0, 3 * sizeof *rows);
  const int batch[3] = {64, 256, 1024};
  const double ms[3] = {10, 20, 60};
  for (int i = 0; i < 3; i++) {
    rows[i].world_size = 4;
    rows[i].batch_per_gpu = batch[i];
    rows[i].iter_ms = ms[i];
    rows[i].peak_mem_gib = peak[i];
    rows[i].gpu_mem_gib = 80;
  }
}

static void print_best(const struct ds_options *o, const struct ds_summary *rows, int n,
                       char *buf, size_t cap) {
  FILE *f = fmemopen(buf, cap, "w");
  cr_assert_not_null(f);
  ds_sweep_print_best(f, o, rows, n);
  fclose(f);
}

/* A parameter server's workers step at their own rates: the row's
 * throughput sums them, while its iteration is the slowest worker's (async
 * with a straggler). The best is the highest throughput, and the line prints
 * the row's own samples/s: servers=1 at 8000 samples/s (iteration 60 ms)
 * beats servers=4 at 6000 (50 ms), 8000 / 6000 = 1.33x. It used to rank by
 * iter_ms / (8 x 32) and print 256 / 50 ms = 5120 samples/s for servers=4
 * as the best, whose row said 6000 (dgx-a100, --ps-mode async --straggler
 * 3:2: 4202.9 against the row's 7694.2). */
Test(sweep, a_parameter_servers_best_is_its_rows_throughput) {
  struct ds_options o;
  ds_test_options_ok("--topo x --strategy ps --ps-servers 1,4", &o);
  struct ds_summary rows[2];
  memset(rows, 0, sizeof rows);
  const double ms[2] = {60, 50}, per_s[2] = {8000, 6000};
  for (int i = 0; i < 2; i++) {
    rows[i].has_ps = 1;
    rows[i].world_size = 8;
    rows[i].batch_per_gpu = 32;
    rows[i].iter_ms = ms[i];
    rows[i].samples_per_s = per_s[i];
    rows[i].peak_mem_gib = 10;
    rows[i].gpu_mem_gib = 80;
  }
  cr_assert_eq(ds_sweep_best_row(&o, rows, 2), 0);
  char buf[1024] = "";
  print_best(&o, rows, 2, buf, sizeof buf);
  cr_assert(strstr(buf, "best configuration: ps-servers=1 (60.000 ms per iteration, 8000.0 "
                        "samples/s, 1.33x the lowest throughput, ps-servers=4 at 6000.0 "
                        "samples/s and 50.000 ms); within 1% of the best: 1 of 2 configurations (flatness)\n"),
            "%s", buf);
}

Test(sweep, a_configuration_over_memory_is_never_best) {
  /* batch 1024 is the least time per sample (60/64 ms against 20/16 and
   * 10/4 per unit) but needs 90 GiB of an 80 GiB GPU: the best is 256
   * (256 x 4 samples in 20 ms = 51200 samples/s), the slowest 64 (25600),
   * 2.00x; the line says 2 of 3 fit. None fits: no best at all. */
  struct ds_options o;
  struct ds_summary rows[3];
  const double peak[3] = {10, 40, 90};
  batch_rows(&o, rows, peak);
  cr_assert_eq(ds_sweep_best_row(&o, rows, 3), 1);
  char buf[1024] = "";
  print_best(&o, rows, 3, buf, sizeof buf);
  cr_assert(strstr(buf, "best configuration: batch=256 (20.000 ms per iteration, 51200.0 "
                        "samples/s, 2.00x the lowest throughput, batch=64 at 25600.0 samples/s and "
                        "10.000 ms); within 1% of the best: 1 of 2 configurations (flatness); 2 of 3 "
                        "configurations fit in the GPU's memory, the others are not ranked\n"),
            "%s", buf);
  /* each row over memory warned, by name; 80 GiB exactly fits, with a
   * note: within the peak's 5.2 % shortfall of the capacity */
  rows[0].peak_mem_gib = 80;
  FILE *f = fmemopen(buf, sizeof buf, "w");
  cr_assert_not_null(f);
  rows[1].peak_mem_gib = 80.5;
  ds_sweep_print_memory_warnings(f, &o, rows, 3, "G");
  fclose(f);
  cr_assert_str_eq(buf, "\nnote: batch=64: 80.00 GiB per GPU is 100.0 % of the G's 80.00 GiB: "
                        "the peak runs up to 5.2 % below PyTorch's max_memory_allocated "
                        "(validation/memory.csv) and leaves out the CUDA context: it may not "
                        "fit\nwarning: batch=256: 80.50 GiB per GPU exceeds the G's 80.00 GiB of "
                        "memory\nwarning: batch=1024: 90.00 GiB per GPU exceeds the G's 80.00 "
                        "GiB of memory\n");
  cr_assert_eq(ds_sweep_best_row(&o, rows, 3), 0);
  rows[0].peak_mem_gib = 81;
  cr_assert_eq(ds_sweep_best_row(&o, rows, 3), -1);
  print_best(&o, rows, 3, buf, sizeof buf);
  cr_assert_str_eq(buf, "\nbest configuration: none; not one of the 3 configurations fits in "
                        "the GPU's memory\n");
  /* all fit: no note, 1024 best at 68266.7 samples/s, 2.67x batch 64's */
  const double small[3] = {1, 2, 3};
  batch_rows(&o, rows, small);
  print_best(&o, rows, 3, buf, sizeof buf);
  cr_assert(strstr(buf, "best configuration: batch=1024 (60.000 ms per iteration, 68266.7 "
                        "samples/s, 2.67x the lowest throughput, batch=64 at 25600.0 samples/s and "
                        "10.000 ms); within 1% of the best: 1 of 3 configurations (flatness)\n"),
            "%s", buf);
}

Test(sweep, the_memory_warning_names_each_row_end_to_end) {
  /* resnet50 on 4 A100 80GB: batch 1024 needs 82.33 GiB, 2048 164.38
   * (revuser2 item 1): both warned by name, 256 the best */
  struct ds_test_result r = ds_test_cli("--topo 4gpu --batch 64,256,1024,2048");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\nbest configuration: batch=256 "), "%s", r.out);
  cr_assert(strstr(r.out, "\nwarning: batch=1024: 82.33 GiB per GPU exceeds"), "%s", r.out);
  cr_assert(strstr(r.out, "\nwarning: batch=2048: 164.38 GiB per GPU exceeds"), "%s", r.out);
  ds_test_release(&r);
}

Test(sweep, a_bucket_sweep_counts_the_caps_within_one_percent) {
  /* caps 1, 5, 25 at 10.30, 10.05, 10.00 ms: 5 MiB is within 1% of 10.00
   * (10.10), 1 MiB not; the cut is (10.3 - 10) / 10.3 = 2.9% less time */
  struct ds_options o;
  ds_test_options_ok("--topo x --bucket-mb 1,5,25", &o);
  struct ds_summary rows[3];
  memset(rows, 0, sizeof rows);
  const double cap[3] = {1, 5, 25}, ms[3] = {10.30, 10.05, 10.00};
  for (int i = 0; i < 3; i++) {
    rows[i].bucket_mb = cap[i];
    rows[i].iter_ms = ms[i];
  }
  char buf[512] = "";
  print_best(&o, rows, 3, buf, sizeof buf);
  cr_assert_str_eq(buf, "\nbest bucket cap: 25 MiB (10.000 ms per iteration, 2.9% less time "
                        "than the slowest, 1 MiB at 10.300 ms); within 1% of the best: 2 of 3 "
                        "caps (flatness)\n");
}

/* ---- what each text block says (revuser2 3, 7) -------------------------- */

Test(sweep, each_block_says_its_all_reduce_when_it_varies) {
  /* 4gpu at 1 and 2 ranks: one rank runs no collective, two run NCCL's
   * model; the header names the range of world sizes and no all-reduce,
   * each block its own; a sweep of the world size prints each block's
   * throughput. One algorithm for all rows: the header's line alone. */
  struct ds_test_result r = ds_test_cli(
      "--topo 4gpu --model tests/data/tiny-model.yaml "
      "--world-size 1,2");
  cr_assert_eq(r.status, 0, "%s", r.err);
  /* part of the topology: its size too, as `ddpsim collective` says it */
  cr_assert(strstr(r.out, "on 4gpu (1 to 2 of its 4 x A100-SXM4-80GB)"), "%s", r.out);
  cr_assert(strstr(r.out, "\nworld size 1, bucket cap 25 MiB (first bucket 1 MiB)\n"
                          "  all-reduce none: one rank, no collective runs\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nworld size 2, bucket cap 25 MiB (first bucket 1 MiB)\n"
                          "  all-reduce auto: NCCL's choice"), "%s", r.out);
  cr_assert_null(strstr(r.out, "\nall-reduce"), "no header line: %s", r.out);
  cr_assert_null(strstr(r.out, "the plain algorithm"), "%s", r.out);
  const char *tp = strstr(r.out, "  throughput     ");
  cr_assert_not_null(tp, "%s", r.out);
  cr_assert_not_null(strstr(tp + 1, "  throughput     "), "one per block: %s", r.out);
  ds_test_release(&r);
  r = ds_test_cli("--topo 4gpu --model tests/data/tiny-model.yaml --world-size 2,4");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\nall-reduce auto: NCCL's choice"), "%s", r.out);
  cr_assert_null(strstr(r.out, "  all-reduce"), "%s", r.out);
  cr_assert(strstr(r.out, "on 4gpu (2 to 4 x A100-SXM4-80GB)"), "the whole topology: %s", r.out);
  ds_test_release(&r);
}

Test(sweep, scaling_and_side_by_side_name_the_other_options) {
  /* the world size swept with the bucket cap: the scaling line lists each
   * larger world's rows, written whole; dp,ddp with two caps: the table's
   * options column tells ddp's two rows apart, dp's has none */
  struct ds_test_result r = ds_test_cli(TINY "--world-size 2,4 --bucket-mb 1,25");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\nscaling efficiency (samples/s per rank over world-size=2's with "
                          "the same other options): world-size=4 bucket-mb=1: "),
            "%s", r.out);
  cr_assert(strstr(r.out, "%, world-size=4 bucket-mb=25: "), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli(TINY "--strategy dp,ddp --bucket-mb 1,25");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "other GiB  options\n  dp "), "%s", r.out);
  cr_assert(strstr(r.out, "  -\n  ddp "), "%s", r.out);
  cr_assert(strstr(r.out, "  bucket-mb=1\n  ddp "), "%s", r.out);
  cr_assert(strstr(r.out, "  bucket-mb=25\n"), "%s", r.out);
  ds_test_release(&r);
}

/* A peak that fits by less than its measured shortfall (up to 5.2 %
 * below PyTorch's max_memory_allocated, validation/memory.csv, so the
 * measurement may be the peak / 0.948) gets a note: GPT-2 at batch 25 on an
 * 80 GiB A100 predicts 77.87 GiB, and 77.87 / 0.948 = 82.14 > 80; 76 GiB
 * too (80.17: a peak x 1.052 gave 79.95 and no note); 75.8 GiB (79.96) fits
 * clearly and gets none. One configuration: no name before the numbers. */
Test(sweep, a_peak_within_its_measured_shortfall_of_the_capacity_gets_a_note) {
  struct ds_options o;
  struct ds_summary row;
  memset(&row, 0, sizeof row);
  row.strategy = "ddp";
  row.gpu_mem_gib = 80;
  ds_test_options_ok("--topo x", &o);
  char buf[512] = "";
  const double peaks[3] = {77.87, 76, 75.8};
  const char *want[3] = {"\nnote: 77.87 GiB per GPU is 97.3 % of the G's 80.00 GiB: the peak runs "
                         "up to 5.2 % below PyTorch's max_memory_allocated "
                         "(validation/memory.csv) and leaves out the CUDA context: it may not "
                         "fit\n",
                         "\nnote: 76.00 GiB per GPU is 95.0 % of the G's 80.00 GiB: the peak runs "
                         "up to 5.2 % below PyTorch's max_memory_allocated "
                         "(validation/memory.csv) and leaves out the CUDA context: it may not "
                         "fit\n",
                         ""};
  for (int i = 0; i < 3; i++) {
    row.peak_mem_gib = peaks[i];
    buf[0] = '\0';
    FILE *f = fmemopen(buf, sizeof buf, "w");
    cr_assert_not_null(f);
    ds_sweep_print_memory_warnings(f, &o, &row, 1, "G");
    fclose(f);
    cr_assert_str_eq(buf, want[i], "peak %g", peaks[i]);
  }
}

Test(sweep, a_memory_warning_names_the_strategy_of_its_row) {
  /* --strategy dp,ddp: two rows, nothing swept but the strategy; a
   * further swept option follows the strategy's name */
  struct ds_options o;
  struct ds_summary rows[2];
  memset(rows, 0, sizeof rows);
  const char *names[2] = {"dp", "ddp"};
  for (int i = 0; i < 2; i++) {
    rows[i].strategy = names[i];
    rows[i].peak_mem_gib = 81 + i;
    rows[i].gpu_mem_gib = 80;
  }
  char buf[512] = "";
  ds_test_options_ok("--topo x --strategy dp,ddp", &o);
  FILE *f = fmemopen(buf, sizeof buf, "w");
  cr_assert_not_null(f);
  ds_sweep_print_memory_warnings(f, &o, rows, 2, "G");
  fclose(f);
  cr_assert_str_eq(buf, "\nwarning: dp: 81.00 GiB per GPU exceeds the G's 80.00 GiB of memory\n"
                        "warning: ddp: 82.00 GiB per GPU exceeds the G's 80.00 GiB of memory\n");
  struct ds_summary four[4];
  memset(four, 0, sizeof four);
  for (int i = 0; i < 4; i++) {
    four[i].strategy = names[i / 2];
    four[i].peak_mem_gib = i % 2 ? 90 : 1;
    four[i].gpu_mem_gib = 80;
  }
  ds_test_options_ok("--topo x --strategy dp,ddp --batch 64,1024", &o);
  f = fmemopen(buf, sizeof buf, "w");
  cr_assert_not_null(f);
  ds_sweep_print_memory_warnings(f, &o, four, 4, "G");
  fclose(f);
  cr_assert(strstr(buf, "\nwarning: dp batch=1024: 90.00 GiB"), "%s", buf);
  cr_assert(strstr(buf, "\nwarning: ddp batch=1024: 90.00 GiB"), "%s", buf);
}

/* When nothing is slower than the best (every row that fits ties, or one
 * fits) the closing line names no slowest: a configuration named as both
 * best and slowest read as a difference (revuser3). Batches 64, 256 at the
 * same time per sample (10 and 40 ms for 256 and 1024 samples): a tie at
 * 25600 samples/s; then 256 over memory: batch 64 the one that fits. Bucket
 * caps 1 and 25 at 10 ms both: a tie; 25 over memory: 1 MiB fits alone. */
Test(sweep, a_tie_names_no_slowest) {
  struct ds_options o;
  struct ds_summary rows[3];
  const double peak[3] = {10, 40, 90};
  batch_rows(&o, rows, peak);
  rows[1].iter_ms = 40;
  char buf[1024] = "";
  print_best(&o, rows, 2, buf, sizeof buf);
  cr_assert(strstr(buf, "\nbest configuration: none better: every configuration ties at 10.000 "
                        "ms per iteration, 25600.0 samples/s\n"), "%s", buf);
  cr_assert_null(strstr(buf, "slowest"), "%s", buf);
  rows[1].peak_mem_gib = 90;
  print_best(&o, rows, 2, buf, sizeof buf);
  cr_assert(strstr(buf, "\nbest configuration: batch=64, the one configuration that fits: "
                        "10.000 ms per iteration, 25600.0 samples/s; 1 of 2 configurations fit "
                        "in the GPU's memory"), "%s", buf);
  cr_assert_null(strstr(buf, "slowest"), "%s", buf);
  ds_test_options_ok("--topo x --bucket-mb 1,25", &o);
  memset(rows, 0, sizeof rows);
  for (int i = 0; i < 2; i++) {
    rows[i].bucket_mb = i ? 25 : 1;
    rows[i].iter_ms = 10;
    rows[i].world_size = 4;
    rows[i].batch_per_gpu = 32;
    rows[i].gpu_mem_gib = 80;
  }
  print_best(&o, rows, 2, buf, sizeof buf);
  cr_assert(strstr(buf, "\nbest bucket cap: none better: every cap ties at 10.000 ms per "
                        "iteration\n"), "%s", buf);
  rows[1].peak_mem_gib = 90;
  print_best(&o, rows, 2, buf, sizeof buf);
  cr_assert(strstr(buf, "\nbest bucket cap: 1 MiB (10.000 ms per iteration), the one cap that "
                        "fits; 1 of 2 configurations fit"), "%s", buf);
  cr_assert_null(strstr(buf, "slowest"), "%s", buf);
}
