/*
 * `ddpsim collective`: the table's numbers are the ring's closed form on a
 * uniform ring, busbw stays under the bottleneck link, every op's closed
 * form and bus factor, every algorithm under its bound and deterministic,
 * the text's header and closing mean, JSON. NCCL's protocols and the
 * point-to-point and chain ops: test_collbench_proto.c; the flags and
 * their refusals: test_collbench_flags.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"

struct csv_row {
  int nranks;
  double size, time_us, busbw;
};

/* Parses the CSV rows after the header; returns how many. */
static int parse_rows(const char *text, struct csv_row *rows, int cap) {
  const char *line = strchr(text, '\n');
  int n = 0;
  while (line && line[1] && n < cap) {
    line++;
    double count, algbw;
    int got = sscanf(line, "allreduce,ring,none,%d,%lf,%lf,float,%lf,%lf,%lf",
                     &rows[n].nranks, &rows[n].size, &count, &rows[n].time_us,
                     &algbw, &rows[n].busbw);
    cr_assert_eq(got, 6, "bad row: %.80s", line);
    n++;
    line = strchr(line, '\n');
  }
  return n;
}

Test(collbench, table_is_the_ring_closed_form_on_a_uniform_ring) {
  /* ring8: a hop crosses two 12.5 GB/s, 1 us links (alpha = 2 us).
   * Expected, because T = 2(N-1) alpha + 2(N-1)/N S/B, to within the
   * half-nanosecond rounding of each of the 2(N-1) steps. */
  struct ds_test_output o =
      ds_test_collective_ok("--topo tests/data/ring8.yaml -b 8 -e 1G -f 8 --format csv");
  struct csv_row rows[32];
  int n = parse_rows(o.text, rows, 32);
  cr_assert_eq(n, 10, "%s", o.text); /* 8 B .. 1 GiB by 8x */
  for (int i = 0; i < n; i++) {
    double expect_ns = 14 * 2000 + 14.0 / 8 * rows[i].size / 12.5e9 * 1e9;
    cr_assert_eq(rows[i].nranks, 8);
    cr_assert_leq(fabs(rows[i].time_us * 1e3 - expect_ns), 8.0, "S=%g: %g us vs %g ns",
                  rows[i].size, rows[i].time_us, expect_ns);
  }
  free(o.text);
}

Test(collbench, busbw_never_exceeds_the_bottleneck_and_reaches_it) {
  /* Expected, because each rank sends 2(N-1)/N S bytes through its 12.5 GB/s
   * link: busbw = that / T <= 12.5, and the latency term vanishes at 1 GiB. */
  struct ds_test_output o =
      ds_test_collective_ok("--topo tests/data/ring8.yaml -b 1K -e 1G -f 4 --format csv");
  struct csv_row rows[32];
  int n = parse_rows(o.text, rows, 32);
  cr_assert_gt(n, 5);
  for (int i = 0; i < n; i++) cr_assert_leq(rows[i].busbw, 12.5 * (1 + 1e-9));
  cr_assert_geq(rows[n - 1].busbw, 12.49, "%g", rows[n - 1].busbw);
  free(o.text);
}

Test(collbench, fewer_ranks_with_g) {
  /* -g 4: the first four GPUs; same formula with N = 4. */
  struct ds_test_output o =
      ds_test_collective_ok("--topo tests/data/ring8.yaml -g 4 -b 100M -e 100M --format csv");
  struct csv_row rows[4];
  cr_assert_eq(parse_rows(o.text, rows, 4), 1);
  cr_assert_eq(rows[0].nranks, 4);
  double expect_ns = 6 * 2000 + 6.0 / 4 * rows[0].size / 12.5e9 * 1e9;
  cr_assert_leq(fabs(rows[0].time_us * 1e3 - expect_ns), 4.0);
  free(o.text);
}

Test(collbench, json_has_one_object_per_size) {
  struct ds_test_output o =
      ds_test_collective_ok("--topo tests/data/ring8.yaml -b 1M -e 4M --format json");
  cr_assert(strncmp(o.text, "[\n", 2) == 0 && strstr(o.text, "\n]\n"), "%s", o.text);
  int objects = 0;
  for (const char *p = o.text; (p = strstr(p, "\"op\": \"allreduce\"")); p++) objects++;
  cr_assert_eq(objects, 3); /* 1, 2, 4 MiB */
  free(o.text);
}

/* A rank count ddpsim refuses is blamed on -g only where -g gave it: a
 * review found `collective --topo one.yaml` (1 GPU, no -g) told to "give
 * -g 2 or more", and alltoall on a 4096-GPU topology "option -g". */
Test(collbench, a_count_from_the_topology_names_the_topology_not_g) {
  char path[] = "/tmp/ddpsim-onegpu-XXXXXX";
  ds_test_write_temp(path, "schema_version: 1\nname: solo\ngpu: A100-SXM4-80GB\n"
                           "nodes: 1\ngpus_per_node: 1\nintra_node:\n"
                           "  template: nvlink-mesh\n  link_bw: 100GBps\n  link_lat: 3.4us\n");
  char args[128];
  snprintf(args, sizeof args, "--topo %s", path);
  struct ds_test_output o = ds_test_collective_run(args);
  cr_assert_eq(o.st, DS_EUSAGE, "status %d", o.st);
  cr_assert(strstr(o.err.msg, "topology solo has 1 GPU; a collective needs 2 or more"),
            "%s", o.err.msg);
  cr_assert_null(strstr(o.err.msg, "-g"), "%s", o.err.msg);
  free(o.text);
  unlink(path);
  o = ds_test_collective_run("--topo topologies/4gpu.yaml -g 1");
  cr_assert_eq(o.st, DS_EUSAGE, "status %d", o.st);
  cr_assert(strstr(o.err.msg, "option -g: one rank"), "%s", o.err.msg);
  free(o.text);
  o = ds_test_collective_run("--topo topologies/cluster-512x8-h100.yaml --op alltoall");
  cr_assert(strstr(o.err.msg, "topology cluster-512x8-h100: alltoall runs N(N-1) transfers"),
            "%s", o.err.msg);
  free(o.text);
}

Test(collbench, unknown_architecture_falls_back_and_says_so) {
  /* ring8's TestGPU has no NCCL architecture: --algo auto runs the plain
   * ring (proto none, the closed form above) and the header says why; an
   * explicit protocol is a usage error naming --proto. */
  struct ds_test_output o =
      ds_test_collective_ok("--topo tests/data/ring8.yaml --algo auto -b 1M -e 1M");
  cr_assert(strstr(o.text, "unknown architecture") && strstr(o.text, "plain ring"), "%s",
            o.text);
  /* the line names the flag that asked for auto, as the first line does
   * (it said --proto auto under --algo auto) */
  cr_assert(strstr(o.text, "# ddpsim collective: allreduce, algo auto, 8 ranks") &&
                strstr(o.text, "'not given' (known: Volta, Turing, Ampere, Ada, Hopper, Blackwell); "
                               "--algo auto runs the plain ring (proto none)\n"),
            "%s", o.text);
  free(o.text);
  o = ds_test_collective_ok("--topo tests/data/ring8.yaml --op broadcast --algo auto -b 1M -e 1M");
  cr_assert(strstr(o.text, "; --algo auto runs the plain ring (proto none)\n"), "%s", o.text);
  free(o.text);
  o = ds_test_collective_ok("--topo tests/data/ring8.yaml --algo tree --proto auto -b 1M -e 1M");
  cr_assert(strstr(o.text, "# ddpsim collective: allreduce, algo tree, 8 ranks") &&
                strstr(o.text, "; --proto auto runs the plain tree (proto none)\n"),
            "%s", o.text);
  free(o.text);
  o = ds_test_collective_ok("--topo tests/data/ring8.yaml --algo auto -b 1M -e 1M --format csv");
  struct csv_row rows[2];
  cr_assert_eq(parse_rows(o.text, rows, 2), 1); /* allreduce,ring,none,... */
  free(o.text);
  o = ds_test_collective_run("--topo tests/data/ring8.yaml --proto LL");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert(strstr(o.err.msg, "--proto") && strstr(o.err.msg, "TestGPU"), "%s", o.err.msg);
  free(o.text);
}

Test(collbench, every_op_closed_form_and_bus_factor) {
  /* ring8, S = 80 MiB = 83886080 B (S/B = 6710.8864 us), root 3. Expected,
   * because (alpha = 2 us, N = 8):
   *   allgather, reducescatter: 7 alpha + 7/8 S/B, busbw = algbw * 7/8;
   *   broadcast, reduce: C = S / 512 KiB = 160 chunks, 7 alpha + 166/160 S/B,
   *     busbw = algbw;
   *   gather, scatter: alpha + 7/8 S/B (the root's link), busbw = algbw * 7/8.
   * Within a few ns (each flow's data phase is rounded once). */
  const struct {
    const char *op, *algo;
    double expect_us, factor;
  } cases[] = {
      {"allgather", "ring", 14 + 7.0 / 8 * 6710.8864, 7.0 / 8},
      {"reducescatter", "ring", 14 + 7.0 / 8 * 6710.8864, 7.0 / 8},
      {"broadcast", "ring", 14 + 166.0 / 160 * 6710.8864, 1},
      {"reduce", "ring", 14 + 166.0 / 160 * 6710.8864, 1},
      {"gather", "p2p", 2 + 7.0 / 8 * 6710.8864, 7.0 / 8},
      {"scatter", "p2p", 2 + 7.0 / 8 * 6710.8864, 7.0 / 8},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[256], prefix[64];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --op %s%s -b 80M -e 80M "
             "--format csv", cases[i].op,
             strcmp(cases[i].algo, "p2p") == 0 || strcmp(cases[i].op, "broadcast") == 0 ||
             strcmp(cases[i].op, "reduce") == 0 ? " --root 3" : "");
    struct ds_test_output o = ds_test_collective_ok(args);
    snprintf(prefix, sizeof prefix, "%s,%s,none,", cases[i].op, cases[i].algo);
    const char *row = strchr(o.text, '\n');
    cr_assert(row != NULL && strncmp(row + 1, prefix, strlen(prefix)) == 0, "%s", o.text);
    int nranks;
    double size, count, time_us, algbw, busbw;
    cr_assert_eq(sscanf(row + 1 + strlen(prefix), "%d,%lf,%lf,float,%lf,%lf,%lf", &nranks,
                        &size, &count, &time_us, &algbw, &busbw), 6, "%s", o.text);
    cr_assert_eq(size, 83886080);
    cr_assert_leq(fabs(time_us - cases[i].expect_us), 0.01, "%s: %g us vs %g", cases[i].op,
                  time_us, cases[i].expect_us);
    cr_assert_float_eq(busbw, algbw * cases[i].factor, 1e-5, "%s", cases[i].op);
    cr_assert_leq(busbw, 12.5 * (1 + 1e-9));
    free(o.text);
  }
}

Test(collbench, the_plain_chain_cuts_whole_512k_pieces_and_a_last_of_the_rest) {
  /* ring8 (alpha = 2 us, B = 12.5 GB/s, N = 8), S = 1500000 B: C =
   * ceil(S / 512 KiB) = 3 pieces, two whole (P = 524288 B, 41.94304 us)
   * and a last of r = 451424 B (36.11392 us), which trails them. Expected,
   * because T = 7 alpha + ((N + C - 3) P + r) / B = 14 + 8 * 41.94304 +
   * 36.11392 = 385.65824 us, for broadcast and reduce alike (three equal
   * pieces of 500000 B gave 14 + 9 * 40 = 374 us). */
  const char *ops[] = {"broadcast", "reduce"};
  for (int i = 0; i < 2; i++) {
    char args[160];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --op %s -b 1500000 -e 1500000 "
             "--format csv", ops[i]);
    struct ds_test_output o = ds_test_collective_ok(args);
    double t = ds_test_csv_num(o.text, "time_us", 0);
    cr_assert_leq(fabs(t - 385.65824), 0.002, "%s: %g us", ops[i], t);
    free(o.text);
  }
}

Test(collbench, broadcast_and_reduce_never_get_faster_with_size) {
  /* The plain chain over sizes 3 % apart from 256 KiB to 8 MiB (every
   * count of 512 KiB pieces from 1 to 16, and sizes just past each whole
   * count) on a PCIe box and a 4-GPU box. Expected, because a larger buffer
   * moves more bytes through the same pieces: whole 512 KiB pieces and a
   * last of the rest cost ((N + C - 3) P + r) / B, rising with r and
   * continuous where C steps up (r = P with C pieces is r = 0 with C + 1);
   * equal pieces of S/C fell at each step, 512000 B in 25.56 us and 640000
   * B in 23.00 on 4gpu. */
  const char *topos[] = {"topologies/4gpu.yaml", "topologies/pcie-8gpu.yaml"};
  const char *ops[] = {"broadcast", "reduce"};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 2; i++) {
      char args[200];
      snprintf(args, sizeof args, "--topo %s --op %s -b 256K -e 8M -f 1.03 --format csv",
               topos[k], ops[i]);
      struct ds_test_output o = ds_test_collective_ok(args);
      double prev = 0, prev_size = 0;
      int rows = -1; /* the header line */
      for (const char *c = o.text; *c; c++) rows += *c == '\n';
      for (int r = 0; r < rows; r++) {
        double size = ds_test_csv_num(o.text, "size_bytes", r);
        double t = ds_test_csv_num(o.text, "time_us", r);
        cr_assert_geq(t, prev - 1e-3, "%s: %g B in %g us after %g B in %g us", args, size, t,
                      prev_size, prev);
        prev = t, prev_size = size;
      }
      cr_assert_geq(rows, 100, "%s: %d rows", args, rows);
      free(o.text);
    }
}

Test(collbench, all_gather_and_reduce_scatter_pay_their_own_slice_syncs) {
  /* dgx-a100, Simple, 1 GiB: the measured extras over --nccl-extra none are
   * the launch (14 us) and the slice syncs at 2.5 us each: 6 loops of N-1 =
   * 7 steps of 2 slices = 84 for all-gather and reduce-scatter (224 us in
   * all), where the all-reduce walks 14 steps a loop (168 syncs, 434 us;
   * tests/test_nccl_model_plan.c works the loops apart). They were charged the
   * all-reduce's 434 us. */
  const char *ops[] = {"allgather", "reducescatter", "allreduce"};
  const double extra_us[] = {224, 224, 434};
  for (int i = 0; i < 3; i++) {
    double t[2];
    for (int x = 0; x < 2; x++) {
      char args[200];
      snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml --op %s --proto Simple "
               "--nccl-extra %s -b 1G -e 1G --format csv", ops[i], x ? "none" : "measured");
      struct ds_test_output o = ds_test_collective_ok(args);
      t[x] = ds_test_csv_num(o.text, "time_us", 0);
      free(o.text);
    }
    cr_assert_float_eq(t[0] - t[1], extra_us[i], 0.002, "%s: %g - %g us", ops[i], t[0], t[1]);
  }
}

Test(collbench, text_header_names_the_op_and_root) {
  struct ds_test_output o =
      ds_test_collective_ok("--topo tests/data/ring8.yaml --op scatter --root 5 -b 1M -e 1M");
  cr_assert(strstr(o.text, "# ddpsim collective: scatter, algo p2p, 8 ranks on ring8"),
            "%s", o.text);
  cr_assert(strstr(o.text, "root 5"), "%s", o.text);
  free(o.text);
}

/* The header names the algorithm and, apart, the collective model; the
 * plain all-reduce (this command's default ring, or tree) adds that
 * training defaults to --algo auto, so the two can be compared; NCCL's
 * rows (auto) name the collectives' model, not a ring, as auto may run a
 * tree or NVLS; a one-algorithm op (allgather) has no such line. */
Test(collbench, text_header_names_the_algorithm_and_the_collective_model) {
  static const char note[] = "\n# training runs default to --algo auto (NCCL's choice of "
                             "algorithm and protocol per call): add --algo auto to compare\n";
  static const struct {
    const char *args, *line;
    int note;
  } cases[] = {
      {"", "\n# network maxmin, ring executed per flow; simulated", 1},
      {"--algo tree", "\n# network maxmin, tree executed per flow; simulated", 1},
      {"--coll-model aggregate", "\n# network maxmin, ring executed aggregated; simulated", 1},
      {"--algo auto", "\n# network maxmin, collectives per flow; NCCL v", 0},
      {"--algo auto --coll-model aggregate", "\n# network maxmin, rings and trees aggregated; "
                                             "NCCL v", 0},
      {"--op allgather", "\n# network maxmin, ring executed per flow; simulated", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[128];
    snprintf(args, sizeof args, "--topo 2node-ib -b 1M -e 1M %s", cases[i].args);
    struct ds_test_output o = ds_test_collective_ok(args);
    cr_assert(strstr(o.text, cases[i].line), "%s:\n%s", args, o.text);
    cr_assert_eq(strstr(o.text, note) != NULL, cases[i].note, "%s:\n%s", args, o.text);
    free(o.text);
  }
}

/* The coll_model column says "flow" exactly where --coll-model aggregate
 * runs the per-flow timeline: every all-reduce algorithm on one node
 * (dgx-h100) and on two (2node-ib), its times under aggregate against
 * those under flow (identical to the ns for an algorithm with no
 * aggregated execution; the aggregating ones differ at 1 MiB by a few ns
 * or more: the ring on dgx-h100 51.674 us per flow, 51.678 aggregated).
 * time_us's 3 decimals are every digit there is: a run's time is the
 * engine's, whole ns (int64_t; collbench.c time_coll), so equal printed
 * times are equal times and no difference under 1 ns can exist to miss.
 * NVLS across nodes (NVLSTree) aggregates, and its rows said "flow"
 * (ds_coll_aggregates, sim/coll/coll.h, is the one rule). */
Test(collbench, coll_model_label_says_flow_only_where_aggregate_changes_nothing) {
  static const char *const topos[] = {"dgx-h100", "2node-ib"};
  static const char *const algos[] = {"ring", "tree", "nvls", "direct", "reduce-broadcast",
                                      "hierarchical"};
  for (size_t t = 0; t < sizeof topos / sizeof *topos; t++)
    for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
      char args[160];
      snprintf(args, sizeof args, "--topo %s --algo %s -b 1M -e 8M -f 8 --format csv "
               "--coll-model flow", topos[t], algos[a]);
      struct ds_test_output f = ds_test_collective_ok(args);
      snprintf(args, sizeof args, "--topo %s --algo %s -b 1M -e 8M -f 8 --format csv "
               "--coll-model aggregate", topos[t], algos[a]);
      struct ds_test_output g = ds_test_collective_ok(args);
      int same = 1;
      for (int row = 0; row < 2; row++)
        same &= ds_test_csv_num(f.text, "time_us", row) ==
                ds_test_csv_num(g.text, "time_us", row);
      for (int row = 0; row < 2; row++) {
        char label[16];
        ds_test_csv_str(g.text, "coll_model", row, label, sizeof label);
        cr_assert_str_eq(label, same ? "flow" : "aggregate", "%s:\n%s\nper flow:\n%s", args,
                         g.text, f.text);
      }
      /* the text header says the same of the one named algorithm */
      snprintf(args, sizeof args, "--topo %s --algo %s -b 1M -e 1M --coll-model aggregate",
               topos[t], algos[a]);
      struct ds_test_output h = ds_test_collective_ok(args);
      const char *agg_words = strstr(h.text, "aggregated");
      const char *flow_words = strstr(h.text, "per flow");
      cr_assert(same ? flow_words && !agg_words : agg_words && !flow_words, "%s:\n%s", args,
                h.text);
      free(h.text);
      free(f.text);
      free(g.text);
    }
}

/* All-reduce algorithms beyond the ring (--algo). */

struct algo_row {
  char algo[24], proto[16];
  double size, time_us, busbw, algbw;
};

static int parse_algo_rows(const char *text, struct algo_row *rows, int cap) {
  const char *line = strchr(text, '\n');
  int n = 0;
  while (line && line[1] && n < cap) {
    line++;
    double count;
    int nranks;
    int got = sscanf(line, "allreduce,%23[^,],%15[^,],%d,%lf,%lf,float,%lf,%lf,%lf",
                     rows[n].algo, rows[n].proto, &nranks, &rows[n].size, &count,
                     &rows[n].time_us, &rows[n].algbw, &rows[n].busbw);
    cr_assert_eq(got, 8, "bad row: %.120s", line);
    n++;
    line = strchr(line, '\n');
  }
  return n;
}

Test(collbench, every_algorithm_stays_under_its_bound_and_names_itself) {
  /* ring8: each GPU one 12.5 GB/s link. Every algorithm that reduces in the
   * GPUs sends 2(N-1)/N S per rank at least (Patarasuk and Yuan), so busbw
   * <= 12.5 GB/s; the rows name the algorithm that ran, protocol none. */
  const char *algos[] = {"ring", "tree", "direct", "reduce-broadcast", "hierarchical"};
  for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
    char args[256];
    snprintf(args, sizeof args,
             "--topo tests/data/ring8.yaml --algo %s -b 1K -e 256M -f 16 --format csv",
             algos[a]);
    struct ds_test_output o = ds_test_collective_ok(args);
    struct algo_row rows[16];
    int n = parse_algo_rows(o.text, rows, 16);
    cr_assert_eq(n, 5); /* 1K .. 64M by 16x */
    for (int i = 0; i < n; i++) {
      cr_assert_str_eq(rows[i].algo, algos[a]);
      cr_assert_str_eq(rows[i].proto, "none");
      cr_assert_leq(rows[i].busbw, 12.5 * (1 + 1e-9), "%s S=%g: %g", algos[a], rows[i].size,
                    rows[i].busbw);
    }
    free(o.text);
  }
  /* NVLS reduces in the switch: its busbw passes the link (476 GB/s in
   * NCCL's model on a 450 GB/s link) but each GPU still sends and receives
   * S through its link: algbw <= 450 GB/s. */
  struct ds_test_output o = ds_test_collective_ok(
      "--topo topologies/dgx-h100.yaml --algo nvls -b 1M -e 8G -f 8 "
      "--format csv");
  struct algo_row rows[16];
  int n = parse_algo_rows(o.text, rows, 16);
  cr_assert_eq(n, 5);
  for (int i = 0; i < n; i++) {
    cr_assert_str_eq(rows[i].algo, "nvls");
    cr_assert_str_eq(rows[i].proto, "Simple");
    cr_assert_leq(rows[i].algbw, 450 * (1 + 1e-9), "S=%g: %g", rows[i].size, rows[i].algbw);
  }
  cr_assert_gt(rows[n - 1].busbw, 450, "%g", rows[n - 1].busbw);
  free(o.text);
  /* Across nodes NVLS is NVLSTree: on 2 nodes each of a node's K = 8 NICs
   * (50 GB/s) carries S/K each way (up in one tree of its rail, down in
   * the other), so algbw <= 8 x 50 = 400 GB/s. */
  o = ds_test_collective_ok(
      "--topo topologies/2node-ib.yaml --algo nvls -b 1M -e 8G -f 8 --format csv");
  n = parse_algo_rows(o.text, rows, 16);
  cr_assert_eq(n, 5);
  for (int i = 0; i < n; i++) {
    cr_assert_str_eq(rows[i].algo, "nvls");
    cr_assert_leq(rows[i].algbw, 400 * (1 + 1e-9), "S=%g: %g", rows[i].size, rows[i].algbw);
  }
  free(o.text);
}

Test(collbench, alpha_beta_says_its_busbw_may_pass_the_links) {
  /* --net alpha-beta gives every flow its route's bottleneck as if alone
   * (sim/net/net.h). The direct all-reduce on ring8 (12.5 GB/s per GPU
   * link, 2 us rank to rank) puts a rank's N-1 shards of S/N on its link at
   * once: under alpha-beta each moves at 12.5 GB/s, a phase takes 2 us +
   * S/(N B), T = 4 us + 2 S/(8 x 12.5 GB/s): 80 MB in 1.604 ms, busbw =
   * 2 x 7/8 x 80 MB / T = 87.3 GB/s, seven times the link. The ring (one
   * flow per link at a time) is the same as under max-min. The text header
   * says so under alpha-beta, and only there. */
  struct ds_test_output o = ds_test_collective_ok("--topo tests/data/ring8.yaml --algo direct --net alpha-beta "
                        "-b 80000000 -e 80000000 --format csv");
  struct algo_row rows[4];
  cr_assert_eq(parse_algo_rows(o.text, rows, 4), 1, "%s", o.text);
  cr_assert_leq(fabs(rows[0].time_us - 1604.0), 0.01, "%g", rows[0].time_us);
  cr_assert_gt(rows[0].busbw, 87.0, "%g", rows[0].busbw);
  free(o.text);
  const char *nets[] = {"alpha-beta", "maxmin"};
  for (int k = 0; k < 2; k++) {
    char args[160];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --algo direct --net %s -b 1M -e 1M",
             nets[k]);
    o = ds_test_collective_ok(args);
    const char *note = strstr(o.text, "# note: --net alpha-beta gives every flow");
    if (k == 0) {
      cr_assert_not_null(note, "%s", o.text);
      cr_assert_not_null(strstr(o.text, "busbw may exceed the links' bandwidth"), "%s", o.text);
    } else {
      cr_assert_null(note, "%s", o.text);
    }
    free(o.text);
  }
}

Test(collbench, auto_names_nccls_algorithm_per_size) {
  /* dgx-h100: NCCL's model picks ring/LL at 1 KiB (15 us against NVLS's
   * 25 us) and NVLS at 1 GiB (272 GB/s of algorithm bandwidth against the
   * ring's 205.7); test_nccl_model_choice.c checks the choice against the formula
   * at more sizes. The text table and the csv say so. */
  struct ds_test_output o = ds_test_collective_ok(
      "--topo topologies/dgx-h100.yaml --algo auto -b 1K -e 1G -f 1024 "
      "--format csv");
  struct algo_row rows[4];
  cr_assert_eq(parse_algo_rows(o.text, rows, 4), 3);
  cr_assert_str_eq(rows[0].algo, "ring");
  cr_assert_str_eq(rows[0].proto, "LL");
  cr_assert_str_eq(rows[2].algo, "nvls");
  cr_assert_str_eq(rows[2].proto, "Simple");
  free(o.text);
  o = ds_test_collective_ok("--topo topologies/dgx-h100.yaml --algo auto -b 1G -e 1G");
  cr_assert(strstr(o.text, " nvls Simple   8 "), "%s", o.text);
  cr_assert_null(strstr(o.text, "nvls_tree"), "one node: plain NVLS\n%s", o.text);
  free(o.text);
  /* Across nodes NCCL's NVLS is NVLSTree (nccl_model.h): 2node-ib's 256 MiB
   * picks it; the text table says nvls_tree, the CSV keeps --algo's nvls. */
  o = ds_test_collective_ok("--topo topologies/2node-ib.yaml --algo auto -b 256M -e 256M");
  cr_assert(strstr(o.text, " nvls_tree Simple   8 "), "%s", o.text);
  free(o.text);
  o = ds_test_collective_ok(
      "--topo topologies/2node-ib.yaml --algo auto -b 256M -e 256M --format csv");
  cr_assert_eq(parse_algo_rows(o.text, rows, 4), 1);
  cr_assert_str_eq(rows[0].algo, "nvls");
  free(o.text);
  /* Asked for explicitly, tree runs with NCCL's protocol choice for it. */
  o = ds_test_collective_ok(
      "--topo topologies/dgx-h100.yaml --algo tree --proto auto -b 1G -e 1G --format csv");
  cr_assert_eq(parse_algo_rows(o.text, rows, 4), 1);
  cr_assert_str_eq(rows[0].algo, "tree");
  cr_assert_str_eq(rows[0].proto, "Simple");
  free(o.text);
}

Test(collbench, every_algorithm_is_deterministic) {
  const char *algos[] = {"tree", "direct", "reduce-broadcast", "hierarchical", "auto"};
  for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
    char args[256];
    snprintf(args, sizeof args, "--topo topologies/2node-ib.yaml --algo %s -b 1K -e 64M -f 32 "
             "--format csv", algos[a]);
    struct ds_test_output x = ds_test_collective_ok(args), y = ds_test_collective_run(args);
    cr_assert_str_eq(x.text, y.text, "%s", algos[a]);
    free(x.text);
    free(y.text);
  }
}

Test(collbench, reduce_broadcast_takes_a_root) {
  /* --root picks the root of reduce-broadcast; on ring8 every root costs
   * 2 a + 2(N-1) S/B = 4 us + 14 x 80 us = 1124 us for S = 1 MB. */
  for (int root = 0; root < 8; root += 7) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --algo reduce-broadcast "
             "--root %d -b 1000000 -e 1000000 --format csv", root);
    struct ds_test_output o = ds_test_collective_ok(args);
    struct algo_row rows[2];
    cr_assert_eq(parse_algo_rows(o.text, rows, 2), 1);
    cr_assert_float_eq(rows[0].time_us, 1124.0, 1e-3, "%g", rows[0].time_us);
    free(o.text);
  }
  struct ds_test_output o =
      ds_test_collective_run("--topo tests/data/ring8.yaml --algo reduce-broadcast --root 8");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert(strstr(o.err.msg, "--root"), "%s", o.err.msg);
  free(o.text);
}

/* alltoall, sendrecv and the ring halves under NCCL's protocols. */

Test(collbench, text_table_closes_with_the_mean_bus_bandwidth) {
  /* As nccl-tests' table: after the rows, "# Avg bus bandwidth : X", the
   * mean of the rows' busbw (here 1, 2 and 4 MiB, from the CSV of the same
   * run), printed to 0.01 GB/s; the table's last line. CSV and JSON have no
   * such line (their readers take every row). */
  const char *args = "--topo tests/data/ring8.yaml -b 1M -e 4M";
  char csv_args[256];
  snprintf(csv_args, sizeof csv_args, "%s --format csv", args);
  struct ds_test_output c = ds_test_collective_ok(csv_args);
  struct csv_row rows[8];
  int n = parse_rows(c.text, rows, 8);
  cr_assert_eq(n, 3);
  double mean = (rows[0].busbw + rows[1].busbw + rows[2].busbw) / 3;
  cr_assert_null(strstr(c.text, "Avg bus"), "%s", c.text);
  struct ds_test_output t = ds_test_collective_ok(args);
  const char *line = strstr(t.text, "# Avg bus bandwidth    : ");
  cr_assert_not_null(line, "%s", t.text);
  double avg;
  int sizes;
  cr_assert_eq(sscanf(line, "# Avg bus bandwidth    : %lf GB/s (mean over %d sizes)", &avg,
                      &sizes), 2, "%s", line);
  cr_assert_eq(sizes, 3);
  cr_assert_float_eq(avg, mean, 0.005 + 1e-9, "%.4f against %.4f", avg, mean);
  cr_assert_eq(strchr(line, '\n')[1], '\0', "not the last line: %s", line);
  free(c.text);
  free(t.text);
}

/* Broadcast and reduce under NCCL's protocols (DDP's buffer broadcast's
 * path, ds_nccl_chain). */
