/*
 * torch.nn.DataParallel's broadcasts and reduces as NCCL runs them:
 * replicate's comm.broadcast_coalesced and ReduceAddCoalesced's
 * comm.reduce_add_coalesced call torch/csrc/cuda/nccl.cpp's broadcast and
 * reduce (one ncclBcast / ncclReduce per device inside one
 * ncclGroupStart/End) for each coalesced group, so under NCCL's model
 * (--algo auto, the default) a group is priced as `ddpsim collective --op
 * broadcast|reduce --algo auto` prices the same bytes on the same topology;
 * --algo ring keeps the plain chains on the links' own bandwidth and
 * latency (docs/strategies.md, "DataParallel's communication, by hand").
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"

/* tiny-model's parameters, 1,835,264 fp32: one group under 10 MiB */
#define TINY_BYTES 7341056.0
#define DP_TINY "--topo topologies/4gpu.yaml --model tests/data/tiny-model.yaml --strategy dp "

/* Field k (1-based) of a CSV line into buf. */
static void field(const char *line, int k, char *buf, size_t cap) {
  const char *f = line;
  for (int i = 1; i < k; i++) f = strchr(f, ',') + 1;
  size_t n = strcspn(f, ",\n");
  snprintf(buf, cap, "%.*s", (int)n, f);
}

/* The comm op `kind` `name` of `rank` in iteration 1 of the trace csv:
 * its algo (column 10), start and end (columns 17, 18, us). */
static void op_span(const char *csv, int rank, const char *kind, const char *name, char *algo,
                    size_t cap, double *start, double *end) {
  for (const char *line = csv; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    if (line[0] == '#' || strncmp(line, "id,", 3) == 0) continue;
    char f[64];
    field(line, 2, f, sizeof f);
    if (atoi(f) != rank) continue;
    field(line, 3, f, sizeof f);
    if (strcmp(f, "comm") != 0) continue;
    field(line, 4, f, sizeof f);
    if (strcmp(f, kind) != 0) continue;
    field(line, 5, f, sizeof f);
    if (strcmp(f, name) != 0) continue;
    field(line, 16, f, sizeof f);
    if (atoi(f) != 1) continue;
    field(line, 10, algo, cap);
    field(line, 17, f, sizeof f);
    *start = strtod(f, NULL);
    field(line, 18, f, sizeof f);
    *end = strtod(f, NULL);
    return;
  }
  cr_assert_fail("no %s %s on rank %d in iteration 1 of the trace", kind, name, rank);
}

/* `ddpsim collective ARGS --format csv`'s one row: its protocol and time_us. */
static double collective_us(const char *args, char *proto, size_t cap) {
  char full[512];
  snprintf(full, sizeof full, "%s --format csv", args);
  struct ds_test_output o = ds_test_collective_ok(full);
  const char *row = strchr(o.text, '\n') + 1;
  field(row, 3, proto, cap);
  char t[32];
  field(row, 8, t, sizeof t);
  free(o.text);
  return strtod(t, NULL);
}

/* The dp run's trace (args after DP_TINY), owned. */
static char *dp_trace(const char *args) {
  char path[] = "/tmp/ddpsim-dpnccl-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  char full[1024];
  snprintf(full, sizeof full, DP_TINY "%s --trace %s", args, path);
  struct ds_test_result r = ds_test_cli_ok(full);
  ds_test_release(&r);
  char *csv = ds_test_slurp(path);
  remove(path);
  return csv;
}

Test(dp_nccl, broadcast_and_reduce_are_nccls_as_ddpsim_collective_prices_them) {
  /* The replicate broadcast of the one group (7,341,056 B) from GPU 0:
   * from the root's start to the last chain member's end (rank 3: 0, 1, 2,
   * 3 on 4gpu's ring) is the collective's time, whose protocol (LL128 on
   * 12 channels, NCCL's tuning for the size) the op's algo names. The
   * reduce towards GPU 0 (chain 1, 2, 3, 0): ranks 1-3 enter together
   * when every backward is done, GPU 0 10.29 us later (its own backward,
   * docs/strategies.md), before NCCL's start latency (base latency and
   * launch, over 14 us) has passed, so from rank 1's start to GPU 0's end
   * is the collective's time too. */
  char algo[32], proto[16];
  double c_bcast = collective_us("--topo topologies/4gpu.yaml --op broadcast --algo auto "
                                 "-b 7341056 -e 7341056", proto, sizeof proto);
  char want[32];
  snprintf(want, sizeof want, "ring/%s", proto);
  double c_reduce = collective_us("--topo topologies/4gpu.yaml --op reduce --algo auto "
                                  "-b 7341056 -e 7341056", proto, sizeof proto);
  char want_reduce[32];
  snprintf(want_reduce, sizeof want_reduce, "ring/%s", proto);
  char *csv = dp_trace("");
  double s0, e0, s3, e3, r1s, r1e, r0s, r0e;
  op_span(csv, 0, "broadcast", "replicate", algo, sizeof algo, &s0, &e0);
  cr_assert_str_eq(algo, want, "rank 0's broadcast runs %s", algo);
  op_span(csv, 3, "broadcast", "replicate", algo, sizeof algo, &s3, &e3);
  cr_assert_float_eq(e3 - s0, c_bcast, 0.002, "broadcast: dp %.3f us, collective %.3f us",
                     e3 - s0, c_bcast);
  op_span(csv, 1, "reduce", "grads", algo, sizeof algo, &r1s, &r1e);
  cr_assert_str_eq(algo, want_reduce, "rank 1's reduce runs %s", algo);
  op_span(csv, 0, "reduce", "grads", algo, sizeof algo, &r0s, &r0e);
  cr_assert_lt(r0s - r1s, 14.0, "GPU 0 enters %.3f us after rank 1", r0s - r1s);
  cr_assert_float_eq(r0e - r1s, c_reduce, 0.002, "reduce: dp %.3f us, collective %.3f us",
                     r0e - r1s, c_reduce);
  free(csv);
}

Test(dp_nccl, algo_ring_keeps_the_plain_chains) {
  /* --algo ring (no protocol): the plain chain in NCCL's 512 KiB chunks on
   * 4gpu's 100 GB/s, 3.4 us links, no launch: rank 3 has the last of the
   * 15 chunks (14 whole, a rest of 1024 B) after 3 x 3.4 + (16 x 524288 +
   * 1024) B / 100 GB/s = 94.096 us (each chunk's time rounded to the ns) */
  char algo[32];
  char *csv = dp_trace("--algo ring");
  double s0, e0, s3, e3;
  op_span(csv, 0, "broadcast", "replicate", algo, sizeof algo, &s0, &e0);
  op_span(csv, 3, "broadcast", "replicate", algo, sizeof algo, &s3, &e3);
  cr_assert_str_eq(algo, "", "the plain chain names no protocol, got %s", algo);
  cr_assert_float_eq(e3 - s0, 3 * 3.4 + (16 * 524288.0 + 1024) / 100e9 * 1e6, 0.01, "%.3f",
                     e3 - s0);
  free(csv);
}

Test(dp_nccl, a_fixed_protocol_runs_every_broadcast_and_reduce) {
  char algo[32];
  double s, e;
  char *csv = dp_trace("--proto LL");
  op_span(csv, 2, "broadcast", "replicate", algo, sizeof algo, &s, &e);
  cr_assert_str_eq(algo, "ring/LL");
  op_span(csv, 2, "reduce", "grads", algo, sizeof algo, &s, &e);
  cr_assert_str_eq(algo, "ring/LL");
  free(csv);
}

Test(dp_nccl, what_dp_cannot_run_is_refused) {
  /* NCCL runs broadcast and reduce on the ring alone (tuning.cc), and its
   * model pipelines by NCCL's own pieces */
  const struct {
    const char *args, *msg;
  } cases[] = {
      {"--algo tree", "option --algo tree: --strategy dp's broadcasts and reduces run NCCL's "
                      "ring"},
      {"--ring-chunks 4", "option --ring-chunks: NCCL's model runs dp's broadcasts and reduces"},
      {"--algo ring --nccl-extra measured", "--proto none runs dp's broadcasts and reduces as "
                                            "the plain algorithm"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[512];
    snprintf(args, sizeof args, DP_TINY "%s", cases[i].args);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 2, "%s: exit %d", cases[i].args, r.status);
    cr_assert(strstr(r.err, cases[i].msg), "%s: %s", cases[i].args, r.err);
    ds_test_release(&r);
  }
  /* the plain chains still take --ring-chunks */
  struct ds_test_result r = ds_test_cli_ok(DP_TINY "--algo ring --ring-chunks 4");
  ds_test_release(&r);
}
