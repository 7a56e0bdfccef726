/*
 * `ddpsim collective`'s row sizes and counts are nccl-tests': per size
 * asked (-b, -e, -f) count = size / 4 floats, and the ops that split the
 * buffer over the ranks (allgather, reducescatter, alltoall, gather,
 * scatter) give each rank (count / N) rounded down to a multiple of 16
 * bytes (4 floats), printing that per-rank count and N times it in bytes
 * (nccl-tests src/all_gather.cu AllGatherGetCollByteCount and the others,
 * src/common.cu setupArgs; docs/collectives.md "Sizes and counts"). The
 * worked examples below are those formulas by hand.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/nccltests.h"
#include "tests/support.h"

struct size_row {
  char op[24];
  double size, count, time_us, algbw, busbw;
};

/* Parses the CSV rows of any op after the header; returns how many. */
static int parse_size_rows(const char *text, struct size_row *rows, int cap) {
  const char *line = strchr(text, '\n');
  int n = 0;
  while (line && line[1] && n < cap) {
    line++;
    int nranks;
    int got = sscanf(line, "%23[^,],%*[^,],%*[^,],%d,%lf,%lf,float,%lf,%lf,%lf", rows[n].op,
                     &nranks, &rows[n].size, &rows[n].count, &rows[n].time_us, &rows[n].algbw,
                     &rows[n].busbw);
    cr_assert_eq(got, 7, "bad row: %.120s", line);
    n++;
    line = strchr(line, '\n');
  }
  return n;
}

/* The one row of `ddpsim collective ARGS --format csv`. */
static struct size_row one_row(const char *args) {
  char csv[512];
  snprintf(csv, sizeof csv, "%s --format csv", args);
  struct ds_test_output o = ds_test_collective_ok(csv);
  struct size_row r[2];
  cr_assert_eq(parse_size_rows(o.text, r, 2), 1, "%s: %s", args, o.text);
  free(o.text);
  return r[0];
}

Test(collbench_sizes, allgather_on_8_ranks_from_4_to_256_bytes) {
  /* 8 ranks, -b 4 -e 256 -f 2. Expected, because count = S/4 = 1, 2, 4, 8,
   * 16, 32, 64 and per rank (count / 8) & ~3 = 0, 0, 0, 0, 0, 4, 8: nccl-tests
   * prints size 8 * 4 * that and count that, 0 and 0 below 128 B. */
  const double size[] = {0, 0, 0, 0, 0, 128, 256}, count[] = {0, 0, 0, 0, 0, 4, 8};
  struct ds_test_output o = ds_test_collective_ok(
      "--topo tests/data/ring8.yaml --op allgather -b 4 -e 256 --format csv");
  struct size_row r[16];
  cr_assert_eq(parse_size_rows(o.text, r, 16), 7, "%s", o.text);
  for (int i = 0; i < 7; i++) {
    cr_assert_eq(r[i].size, size[i], "row %d: %s", i, o.text);
    cr_assert_eq(r[i].count, count[i], "row %d: %s", i, o.text);
  }
  free(o.text);
}

Test(collbench_sizes, allgather_and_reducescatter_on_12_ranks_at_1_mib) {
  /* 12 ranks, 1 MiB: count 262144, 262144 / 12 = 21845 per rank, down to
   * 21844 (a multiple of 4 floats): size 12 * 21844 * 4 = 1048512 B, 64 B
   * short of 1 MiB. Expected the same for 1048560 B (count 262140, 21845
   * per rank), the size nccl-tests printed for 1 MiB before it rounded to
   * 16 B (src/all_gather.cu before 29f4114). */
  const char *ops[] = {"allgather", "reducescatter"};
  const char *sizes[] = {"1M", "1048560"};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      char args[256];
      snprintf(args, sizeof args, "--topo tests/data/nvring12.yaml --op %s -b %s -e %s",
               ops[i], sizes[j], sizes[j]);
      struct size_row r = one_row(args);
      cr_assert_eq(r.size, 1048512, "%s: %.0f", args, r.size);
      cr_assert_eq(r.count, 21844, "%s: %.0f", args, r.count);
    }
}

Test(collbench_sizes, every_op_that_splits_the_buffer_prints_the_per_rank_count) {
  /* 1000 B on 8 ranks: count 250, 31 per rank, down to 28: size 8 * 28 * 4
   * = 896 B, count 28, for allgather, reducescatter, alltoall (count per
   * peer), gather and scatter (count per rank). 1 MiB on 6 ranks: 262144 /
   * 6 = 43690, down to 43688: size 6 * 43688 * 4 = 1048512 B. */
  const char *ops[] = {"allgather", "reducescatter", "alltoall", "gather", "scatter"};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --op %s -b 1000 -e 1000", ops[i]);
    struct size_row r = one_row(args);
    cr_assert_str_eq(r.op, ops[i]);
    cr_assert_eq(r.size, 896, "%s: %.0f", args, r.size);
    cr_assert_eq(r.count, 28, "%s: %.0f", args, r.count);
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml -g 6 --op %s -b 1M -e 1M",
             ops[i]);
    r = one_row(args);
    cr_assert_eq(r.size, 1048512, "%s: %.0f", args, r.size);
    cr_assert_eq(r.count, 43688, "%s: %.0f", args, r.count);
  }
}

Test(collbench_sizes, whole_buffer_ops_keep_every_float) {
  /* allreduce, broadcast, reduce and sendrecv take count = S/4 as it is
   * (their GetCollByteCount passes count through): 1001 B is 250 floats,
   * 1000 B, whatever the rank count. */
  const char *ops[] = {"allreduce", "broadcast", "reduce", "sendrecv"};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml -g 6 --op %s -b 1001 -e 1001",
             ops[i]);
    struct size_row r = one_row(args);
    cr_assert_eq(r.size, 1000, "%s: %.0f", args, r.size);
    cr_assert_eq(r.count, 250, "%s: %.0f", args, r.count);
  }
}

Test(collbench_sizes, sizes_that_round_alike_simulate_alike) {
  /* The simulation runs the printed bytes, not the size asked: 252 B on 8
   * ranks (63 floats, 7 per rank, down to 4) is the row of 128 B, its time
   * the same to the nanosecond, plain on ring8 and under NCCL's protocols on
   * dgx-a100 (ring all-gather, p2p alltoall). Before nccl-tests' rule the
   * 252 B row ran 252 B. */
  const char *runs[] = {"tests/data/ring8.yaml --op allgather",
                        "tests/data/ring8.yaml --op gather",
                        "topologies/dgx-a100.yaml --op allgather --proto auto",
                        "topologies/dgx-a100.yaml --op alltoall --proto auto"};
  for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
    char a[256], b[256];
    snprintf(a, sizeof a, "--topo %s -b 252 -e 252", runs[i]);
    snprintf(b, sizeof b, "--topo %s -b 128 -e 128", runs[i]);
    struct size_row ra = one_row(a), rb = one_row(b);
    cr_assert_eq(ra.size, 128, "%s: %.0f", a, ra.size);
    cr_assert_eq(ra.time_us, rb.time_us, "%s: %.3f us, %s: %.3f us", a, ra.time_us, b,
                 rb.time_us);
    cr_assert_gt(ra.time_us, 0);
  }
}

Test(collbench_sizes, rows_of_size_zero_time_nothing_and_count_in_the_mean) {
  /* 8 ranks, -b 4 -e 128: 4..64 B give 0 floats per rank, 128 B gives 4.
   * NCCL discards an empty collective (src/enqueue.cc taskAppend), so the
   * zero rows run nothing: time, algbw and busbw 0, as nccl-tests' busbw
   * (count 0 bytes over its time). nccl-tests' mean bus bandwidth counts
   * them; so does ours: the mean over 6 sizes is the 128 B row's busbw / 6.
   * The text table says why they are 0. */
  const char *args = "--topo tests/data/ring8.yaml --op allgather -b 4 -e 128";
  char csv[256];
  snprintf(csv, sizeof csv, "%s --format csv", args);
  struct ds_test_output c = ds_test_collective_ok(csv);
  struct size_row r[8];
  cr_assert_eq(parse_size_rows(c.text, r, 8), 6, "%s", c.text);
  for (int i = 0; i < 5; i++) {
    cr_assert_eq(r[i].size, 0, "%s", c.text);
    cr_assert_eq(r[i].count, 0, "%s", c.text);
    cr_assert_eq(r[i].time_us, 0, "%s", c.text);
    cr_assert_eq(r[i].algbw, 0, "%s", c.text);
    cr_assert_eq(r[i].busbw, 0, "%s", c.text);
  }
  cr_assert_eq(r[5].size, 128, "%s", c.text);
  cr_assert_gt(r[5].busbw, 0, "%s", c.text);
  struct ds_test_output t = ds_test_collective_ok(args);
  const char *line = strstr(t.text, "# Avg bus bandwidth    : ");
  cr_assert_not_null(line, "%s", t.text);
  double avg;
  int sizes;
  cr_assert_eq(sscanf(line, "# Avg bus bandwidth    : %lf GB/s (mean over %d sizes)", &avg,
                      &sizes), 2, "%s", line);
  cr_assert_eq(sizes, 6);
  cr_assert_float_eq(avg, r[5].busbw / 6, 0.005 + 1e-9, "%s", t.text);
  cr_assert_not_null(strstr(t.text, "# note: 5 rows of size 0"), "%s", t.text);
  free(c.text);
  free(t.text);
}

/* The rule itself (base/nccltests.c), which `ddpreal collective` takes for
 * its all-gather and reduce-scatter rows and cannot run here: the same
 * worked examples, and an op that does not split keeping every float. */
Test(collbench_sizes, the_shared_rule_by_hand) {
  struct ds_nccltests_row r = ds_nccltests_row(1048576, 1, 12);
  cr_assert_eq(r.count, 21844);
  cr_assert_eq(r.size_bytes, 1048512);
  r = ds_nccltests_row(1048560, 1, 12); /* 262140 floats, 21845 a rank */
  cr_assert_eq(r.count, 21844);
  cr_assert_eq(r.size_bytes, 1048512);
  r = ds_nccltests_row(127, 1, 8); /* 31 floats, 3 a rank, down to 0 */
  cr_assert_eq(r.count, 0);
  cr_assert_eq(r.size_bytes, 0);
  r = ds_nccltests_row(128, 1, 8);
  cr_assert_eq(r.count, 4);
  cr_assert_eq(r.size_bytes, 128);
  r = ds_nccltests_row(1048575, 0, 12); /* 262143 whole floats */
  cr_assert_eq(r.count, 262143);
  cr_assert_eq(r.size_bytes, 1048572);
}
