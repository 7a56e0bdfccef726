/*
 * `ddpsim collective` under NCCL's model: each protocol's closed form on
 * dgx-a100, the aggregate against the per-flow model, NCCL's choice of
 * protocol (Blackwell, PCIe rings without LL128, a protocol set, broadcast
 * per size), alltoall and sendrecv and their p2p thresholds, all-gather
 * under the protocols, the chains (broadcast, reduce) under LL and LL128,
 * and the channel cap on a shared uplink without peer-to-peer.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support.h"

struct nccl_row {
  char proto[16];
  double size, time_us, busbw;
  int channels;
};

/* Parses the CSV rows of a protocol run (algo ring, any proto). */
static int parse_nccl_rows(const char *text, struct nccl_row *rows, int cap) {
  const char *line = strchr(text, '\n');
  int n = 0;
  while (line && line[1] && n < cap) {
    line++;
    double count, algbw;
    int nranks;
    int got = sscanf(line, "allreduce,ring,%15[^,],%d,%lf,%lf,float,%lf,%lf,%lf,%*[^,],%*[^,],%d",
                     rows[n].proto, &nranks, &rows[n].size, &count, &rows[n].time_us, &algbw,
                     &rows[n].busbw, &rows[n].channels);
    cr_assert_eq(got, 8, "bad row: %.120s", line);
    n++;
    line = strchr(line, '\n');
  }
  return n;
}

Test(collbench, each_protocol_closed_form_on_dgx_a100) {
  /* NCCL's model alone (--nccl-extra none), per protocol, on dgx-a100: 8
   * ranks, 12 channels of 20 GB/s over 300 GB/s links (channels never fill
   * the link: 12 * cap <= 240 GB/s). Expected, because each of the 14 steps
   * waits hwLat and moves S/8 * w per rank at 12 * cap:
   *   T = baseLat + 14 hwLat + 14/8 * S * w / (12 * cap)
   *   LL:     6.6 + 14 * 0.6 us, w = 2,       12 * cap = 2 * 87.7 GB/s
   *   LL128:  14 + 14 * 1.9 us,  w = 128/120, 12 * cap = 240 GB/s
   *   Simple: 8.4 + 14 * 3.4 us, w = 1,       12 * cap = 240 GB/s
   * to within a ns per step. */
  const char *protos[] = {"LL", "LL128", "Simple"};
  const double lat_us[] = {6.6 + 14 * 0.6, 14 + 14 * 1.9, 8.4 + 14 * 3.4};
  const double wire[] = {2, 128.0 / 120, 1};
  const double bw[] = {2 * 87.7e9, 240e9, 240e9};
  for (int p = 0; p < 3; p++) {
    char args[256];
    snprintf(args, sizeof args,
             "--topo topologies/dgx-a100.yaml --proto %s --nccl-extra none -b 1K -e 1G "
             "-f 32 --format csv", protos[p]);
    struct ds_test_output o = ds_test_collective_ok(args);
    struct nccl_row rows[16];
    int n = parse_nccl_rows(o.text, rows, 16);
    cr_assert_eq(n, 5);
    for (int i = 0; i < n; i++) {
      double expect = lat_us[p] * 1e3 + 14.0 / 8 * rows[i].size * wire[p] / bw[p] * 1e9;
      cr_assert_str_eq(rows[i].proto, protos[p]);
      cr_assert_leq(fabs(rows[i].time_us * 1e3 - expect), 15, "%s S=%g: %g us vs %g ns",
                    protos[p], rows[i].size, rows[i].time_us, expect);
    }
    free(o.text);
  }
}

Test(collbench, aggregate_agrees_with_flow_under_a_protocol) {
  /* Uniform ring: the aggregated execution gives the per-flow answer. */
  const char *base = "--topo topologies/dgx-a100.yaml --algo auto -b 4K -e 1G -f 64 --format csv";
  char args[256];
  struct ds_test_output a = ds_test_collective_ok(base);
  snprintf(args, sizeof args, "%s --coll-model aggregate", base);
  struct ds_test_output b = ds_test_collective_ok(args);
  struct nccl_row ra[16], rb[16];
  int n = parse_nccl_rows(a.text, ra, 16);
  cr_assert_eq(parse_nccl_rows(b.text, rb, 16), n);
  for (int i = 0; i < n; i++) {
    cr_assert_str_eq(ra[i].proto, rb[i].proto);
    cr_assert_leq(fabs(ra[i].time_us - rb[i].time_us), 0.02, "S=%g: %g vs %g", ra[i].size,
                  ra[i].time_us, rb[i].time_us);
  }
  free(a.text);
  free(b.text);
}

Test(collbench, blackwell_auto_picks_nccls_choice) {
  /* tests/data/dgx-b200.yaml (8x B200, one NVSwitch): Blackwell has NCCL's
   * model, so --algo auto picks an algorithm and protocol per size (no
   * plain-ring fallback): ring LL at 1 MiB, NVLS Simple at 128 MiB, as
   * tests/test_nccl_model_tuning.c works out by hand; the nccl column is NCCL's
   * prediction (308.40 us at 128 MiB). */
  struct ds_test_output o =
      ds_test_collective_ok("--topo tests/data/dgx-b200.yaml --algo auto -b 1M -e 128M -f 128");
  cr_assert(strstr(o.text, "model: Blackwell") && !strstr(o.text, "plain ring"), "%s", o.text);
  free(o.text);
  o = ds_test_collective_ok(
      "--topo tests/data/dgx-b200.yaml --algo auto -b 1M -e 128M -f 128 --format csv");
  const char *first = strchr(o.text, '\n') + 1, *second = strchr(first, '\n') + 1;
  cr_assert(strncmp(first, "allreduce,ring,LL,8,1048576,", 28) == 0, "%s", o.text);
  cr_assert(strncmp(second, "allreduce,nvls,Simple,8,134217728,", 34) == 0, "%s", o.text);
  const char *nccl = strrchr(second, ',');
  cr_assert_float_eq(atof(nccl + 1), 308.399, 0.002, "%s", o.text);
  free(o.text);
}

Test(collbench, pcie_rings_run_without_ll128_unless_named) {
  /* topologies/pcie-8gpu.yaml: the rings cross PCIe inside the node, where
   * NCCL leaves LL128 off by default (tuning.cc: typeIntra <= PATH_NVB).
   * At 512 KiB NCCL's formula gives LL 112.35 us, LL128 98.86, Simple
   * 134.07 (tests/test_nccl_model_choice.c works them): --algo auto runs ring/LL
   * and the header says why LL128 is missing; --proto LL128 (NCCL_PROTO=
   * LL128) runs it, and so does a set naming it (LL,LL128, or every
   * protocol: NCCL_PROTO names it, enabled; ddpsim once read a set of all
   * three as auto, LL128 off). The old ddpsim ran ring/LL128 under auto.
   * The header names the set whenever one is given, even one naming every
   * protocol (it once said nothing there, though LL128 then ran). */
  struct ds_test_output o =
      ds_test_collective_ok("--topo topologies/pcie-8gpu.yaml --algo auto -b 512K -e 512K");
  cr_assert(strstr(o.text, "# LL128 off: NCCL enables it by default only over NVLink"), "%s",
            o.text);
  free(o.text);
  o = ds_test_collective_ok(
      "--topo topologies/pcie-8gpu.yaml --algo auto -b 512K -e 512K --proto LL,LL128,Simple");
  cr_assert_null(strstr(o.text, "# LL128 off"), "%s", o.text);
  cr_assert(strstr(o.text, "\n# --proto LL,LL128,Simple: NCCL's choice per size among these "
                           "protocols only (NCCL_PROTO)\n"),
            "%s", o.text);
  free(o.text);
  const char *cases[][2] = {{"", "allreduce,ring,LL,8,524288,"},
                            {"--proto LL128", "allreduce,ring,LL128,8,524288,"},
                            {"--proto LL,LL128", "allreduce,ring,LL128,8,524288,"},
                            {"--proto LL,LL128,Simple", "allreduce,ring,LL128,8,524288,"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[256];
    snprintf(args, sizeof args,
             "--topo topologies/pcie-8gpu.yaml --algo auto -b 512K -e 512K --format csv %s",
             cases[i][0]);
    o = ds_test_collective_ok(args);
    const char *first = strchr(o.text, '\n') + 1;
    cr_assert(strncmp(first, cases[i][1], strlen(cases[i][1])) == 0, "%s: %s", args, o.text);
    free(o.text);
  }
}

struct op_row {
  char op[16], algo[16], proto[16], pred[32];
  double size, time_us, busbw;
  int nranks, channels;
};

/* Parses CSV rows of any op (pred: the nccl_model_us column, "" if empty). */
static int parse_op_rows(const char *text, struct op_row *rows, int cap) {
  const char *line = strchr(text, '\n');
  int n = 0;
  while (line && line[1] && n < cap) {
    line++;
    double count, algbw;
    struct op_row *r = &rows[n];
    int got = sscanf(line, "%15[^,],%15[^,],%15[^,],%d,%lf,%lf,float,%lf,%lf,%lf,%*[^,],%*[^,],%d,",
                     r->op, r->algo, r->proto, &r->nranks, &r->size, &count, &r->time_us,
                     &algbw, &r->busbw, &r->channels);
    cr_assert_eq(got, 10, "bad row: %.120s", line);
    const char *end = strchr(line, '\n'), *last = end;
    cr_assert(end != NULL);
    while (last > line && last[-1] != ',') last--;
    last--; /* the line's last comma */
    size_t len = (size_t)(end - last - 1);
    cr_assert_lt(len, sizeof r->pred);
    memcpy(r->pred, last + 1, len);
    r->pred[len] = '\0';
    n++;
    line = end;
  }
  return n;
}

Test(collbench, dgx1_tree_chains_stay_on_nvlink_across_nodes) {
  /* dgx1-v100-2node (2 DGX-1, 4 NICs each, one per GPU pair): K = 4 tree
   * rails. Each rail's chain inside a node runs from its head over the
   * node's GPUs; in member order from the head it crossed PCIe and QPI
   * (3 -> 4: 10 GB/s), 3.3 times NCCL's own time at 1 GiB. On NVLink
   * chains NCCL's tree bandwidth A binds (its caps), and "Across nodes"'
   * closed form holds: T = NCCL's time + (2D - 1)/P S/A, D = (L - 1) +
   * log2 M = 8, P = a tree's S/(2K) = 128 MiB in 512 KiB pieces = 256, S/A
   * = NCCL's time less its latency 8.4 + 2 (7 x 4.0 + 1 x 14.0) = 92.4 us
   * (Tree/Simple baseLat, NVLink and network hwLat). Expected, because
   * every chain hop then moves faster than the cap. */
  struct ds_test_output o = ds_test_collective_ok("--topo validation/topologies/dgx1-v100-2node.yaml --algo tree "
                        "--proto Simple --nccl-extra none -b 1G -e 1G --format csv");
  struct op_row rows[2];
  cr_assert_eq(parse_op_rows(o.text, rows, 2), 1, "%s", o.text);
  double nccl = atof(rows[0].pred), expect = nccl + 15.0 / 256 * (nccl - 92.4);
  cr_assert_gt(nccl, 0, "%s", o.text);
  cr_assert_leq(fabs(rows[0].time_us - expect), 1.0, "%g us vs %g (NCCL %g)", rows[0].time_us,
                expect, nccl);
  free(o.text);
}

Test(collbench, alltoall_and_sendrecv_closed_forms) {
  /* ring8, plain: alltoall T = alpha + (N-1)/N S/B, sendrecv T = alpha +
   * S/B (tests/test_coll_alltoall.c works them by hand); busbw = S/T times
   * nccl-tests' factor: (N-1)/N and 1, the same 12.5 GB/s at large S. */
  const char *ops[] = {"alltoall", "sendrecv"};
  for (int k = 0; k < 2; k++) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --op %s -b 1M -e 1G -f 32 "
             "--format csv", ops[k]);
    struct ds_test_output o = ds_test_collective_ok(args);
    struct op_row rows[8];
    int n = parse_op_rows(o.text, rows, 8);
    cr_assert_eq(n, 3, "%s", o.text);
    for (int i = 0; i < n; i++) {
      double moved = k == 0 ? 7.0 / 8 * rows[i].size : rows[i].size;
      double expect_ns = 2000 + moved / 12.5;
      cr_assert_str_eq(rows[i].op, ops[k]);
      cr_assert_str_eq(rows[i].algo, "p2p");
      cr_assert_str_eq(rows[i].proto, "none");
      cr_assert_leq(fabs(rows[i].time_us * 1e3 - expect_ns), 1.0, "%s S=%g", ops[k],
                    rows[i].size);
      cr_assert_leq(rows[i].busbw, 12.5 * (1 + 1e-9));
    }
    cr_assert_geq(rows[n - 1].busbw, 12.49);
    free(o.text);
  }
}

Test(collbench, p2p_protocols_follow_nccl_thresholds) {
  /* dgx-a100, --proto auto: NCCL's p2p runs LL while a transfer is at most
   * 16 KiB per channel (alltoall's transfer is S/8), Simple above; NCCL has
   * no p2p cost model, so no prediction column. */
  struct ds_test_output o = ds_test_collective_ok(
      "--topo topologies/dgx-a100.yaml --op alltoall --proto auto -b 8K "
      "-e 1G -f 128 --format csv");
  struct op_row rows[8];
  int n = parse_op_rows(o.text, rows, 8);
  cr_assert_eq(n, 3, "%s", o.text); /* 8K (1 KiB per transfer), 1M, 128M */
  cr_assert_str_eq(rows[0].proto, "LL");
  cr_assert_str_eq(rows[n - 1].proto, "Simple");
  for (int i = 0; i < n; i++) cr_assert_str_eq(rows[i].pred, "");
  free(o.text);
  o = ds_test_collective_ok(
      "--topo topologies/dgx-a100.yaml --op sendrecv --proto Simple -b 8 -e 8 "
      "--format csv");
  cr_assert_eq(parse_op_rows(o.text, rows, 8), 1);
  cr_assert_str_eq(rows[0].proto, "Simple");
  free(o.text);
}

Test(collbench, allgather_under_protocols_prints_nccls_prediction) {
  /* dgx-a100, --proto auto: the protocol of least predicted time, NCCL's
   * prediction in the last column, LL at 1 KiB and Simple at 1 GiB, and the
   * simulated time never below NCCL's own (the simulation adds the measured
   * launch and ramp to the same start). */
  struct ds_test_output o = ds_test_collective_ok(
      "--topo topologies/dgx-a100.yaml --op allgather --proto auto -b 1K "
      "-e 1G -f 1024 --format csv");
  struct op_row rows[8];
  int n = parse_op_rows(o.text, rows, 8);
  cr_assert_eq(n, 3, "%s", o.text);
  cr_assert_str_eq(rows[0].proto, "LL");
  cr_assert_str_eq(rows[2].proto, "Simple");
  for (int i = 0; i < n; i++) {
    cr_assert_str_eq(rows[i].algo, "ring");
    double pred = atof(rows[i].pred);
    cr_assert_gt(pred, 0, "%s", rows[i].pred);
    cr_assert_geq(rows[i].time_us, pred * (1 - 1e-6), "S=%g", rows[i].size);
  }
  free(o.text);
}

struct chain_row {
  char op[16], algo[16], proto[16];
  double size, time_us, pred_us;
  int channels;
};

static int parse_chain_rows(const char *text, struct chain_row *rows, int cap) {
  const char *line = strchr(text, '\n');
  int n = 0;
  while (line && line[1] && n < cap) {
    line++;
    int nranks;
    double count, algbw, busbw;
    int got = sscanf(line, "%15[^,],%15[^,],%15[^,],%d,%lf,%lf,float,%lf,%lf,%lf,%*[^,],%*[^,],"
                     "%d,%lf", rows[n].op, rows[n].algo, rows[n].proto, &nranks, &rows[n].size,
                     &count, &rows[n].time_us, &algbw, &busbw, &rows[n].channels,
                     &rows[n].pred_us);
    cr_assert_eq(got, 11, "bad row: %.120s", line);
    n++;
    line = strchr(line, '\n');
  }
  return n;
}

Test(collbench, broadcast_and_reduce_under_ll_closed_form_on_dgx_a100) {
  /* dgx-a100, --proto LL, --nccl-extra none: the chain of 8 ranks with
   * start = baseLat[Ring][LL] = 6.6 us, hop h = hwLat[NVLink][Ring][LL] =
   * 0.6 us, wire w = 2, per channel cap c = 2 * 87.7 / 12 GB/s (llMaxBw
   * over the 12 channels; under the 20 GB/s channel and the 300 GB/s
   * links). Channels (enqueue.cc's split, Ring/LL: 512 threads * 8 B * 8
   * ranks = 32 KiB per channel): 64 KiB -> 2, 1 MiB -> min(32, 12) = 12.
   * The plan's cells (8 KiB under LL, 32 KiB of traffic) give the fullest
   * channel its share s: 64 KiB: 4 cells each, s = 32768 B; 1 MiB: 4 MiB of
   * traffic / 12 -> 349536, ceil(349536 / 32768) = 11 cells a channel, 128
   * cells on 12 channels, s = 11 * 8192 = 90112 B (not 1048576 / 12 =
   * 87381.3). Pieces: LL forwards per 8 B line, so 4096 and 11264 lines,
   * each capped at 16 (N-1) = K = 112 equal pieces P = s / K (no rest: r =
   * P). A piece crosses a hop in P w / c; the chain takes N + K - 2 of those:
   *   T = start + 7 h + (N + K - 2) (s / K) w / c
   *   64 KiB: 10.8 us + 118 * 292.571 * 2 / c = 15.524 us
   *   1 MiB:  10.8 us + 118 * 804.571 * 2 / c = 23.791 us
   * within a ns per piece step (flows end on whole ns). Reduce runs the
   * same chain towards its root. */
  const double c = 2 * 87.7e9 / 12;
  const double sizes[] = {65536, 1048576}, share[] = {32768, 90112};
  const int ch[] = {2, 12}, pieces[] = {112, 112};
  const char *ops[] = {"broadcast", "reduce --root 3"};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 2; i++) {
      char args[256];
      snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml --op %s --proto LL "
               "--nccl-extra none -b %.0f -e %.0f --format csv", ops[k], sizes[i], sizes[i]);
      struct ds_test_output o = ds_test_collective_ok(args);
      struct chain_row r;
      cr_assert_eq(parse_chain_rows(o.text, &r, 1), 1);
      cr_assert_str_eq(r.algo, "ring");
      cr_assert_str_eq(r.proto, "LL");
      cr_assert_eq(r.channels, ch[i]);
      int steps = 8 + pieces[i] - 2;
      double expect = 6600 + 7 * 600 + steps * (share[i] / pieces[i]) * 2 / c * 1e9;
      cr_assert_leq(fabs(r.time_us * 1e3 - expect), steps, "%s: %g us vs %g ns", args,
                    r.time_us, expect);
      /* NCCL's own prediction: baseLat + one hop's hwLat + S / busBw(LL) */
      cr_assert_float_eq(r.pred_us, 7.2 + sizes[i] / 87.7e9 * 1e6, 2e-3);
      free(o.text);
    }
}

Test(collbench, a_chain_forwards_ll_per_line_and_ll128_per_warp_slice) {
  /* dgx-a100, 4 ranks (-g 4), --nccl-extra none. A rank forwards LL per
   * 16 B line (8 B of payload) and LL128 per warp slice of 2 KiB (1920 B
   * of payload), so the next rank starts once one such unit has arrived,
   * not a whole trip of the channel's threads (coll.h
   * ds_coll_forward_unit_bytes). One channel each (LL: 512 threads * 8 B
   * * 4 ranks = 16 KiB a channel; LL128: 640 * 8 = 5120 B), the share the
   * whole size; K = s / unit pieces (under the cap of 16 (N-1) = 48), N + K
   * - 2 piece times after start + 3 h:
   *   LL128 7680 B: start 14.0 us, h = 1.9 us, K = 4 pieces of 1920 B, w =
   *   128/120, c = min(20 GB/s channel, 20 GB/s * w) = 20 GB/s:
   *   19.7 us + 6 * 2048 / 20e9 = 20.3144 us (a 38400 B trip, as before,
   *   held all 7680 B a hop: 19.7 + 3 * 8192 / 20e9 = 20.9288 us);
   *   LL 256 B: start 6.6 us, h = 0.6 us, K = 32 lines of 8 B, w = 2, c =
   *   2 * 87.7 / 12 GB/s: 8.4 us + 34 * 16 / c = 8.43722 us (whole: 8.4 +
   *   3 * 512 / c = 8.50509 us).
   * Within a ns per piece step (flows end on whole ns). */
  const double c_ll = 2 * 87.7e9 / 12;
  const struct {
    const char *proto;
    double bytes, expect_ns, steps;
  } cases[] = {{"LL128", 7680, 19700 + 6 * 2048 / 20e9 * 1e9, 6},
               {"LL", 256, 8400 + 34 * 16 / c_ll * 1e9, 34}};
  for (int i = 0; i < 2; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml -g 4 --op broadcast --proto %s "
             "--nccl-extra none -b %.0f -e %.0f --format csv", cases[i].proto, cases[i].bytes,
             cases[i].bytes);
    struct ds_test_output o = ds_test_collective_ok(args);
    struct chain_row r;
    cr_assert_eq(parse_chain_rows(o.text, &r, 1), 1);
    cr_assert_str_eq(r.proto, cases[i].proto);
    cr_assert_eq(r.channels, 1);
    cr_assert_leq(fabs(r.time_us * 1e3 - cases[i].expect_ns), cases[i].steps, "%s: %g us vs %g ns",
                  args, r.time_us, cases[i].expect_ns);
    free(o.text);
  }
}

Test(collbench, broadcast_auto_picks_nccls_protocol_per_size) {
  /* --algo auto for broadcast and reduce: the ring (NCCL's only algorithm
   * for them), tuning.cc's protocol per size: on dgx-a100 LL up to
   * 635.7 kB, then Simple (tests/test_nccl_model_plan.c); --algo ring --proto
   * auto runs the same. The default stays the plain chain (proto none), as
   * the all-reduce's default here is the plain ring. */
  const char *variants[] = {"--algo auto", "--proto auto"};
  for (int v = 0; v < 2; v++) {
    char args[256];
    snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml --op broadcast %s -b 512K "
             "-e 1M --format csv", variants[v]);
    struct ds_test_output o = ds_test_collective_ok(args);
    struct chain_row r[4];
    cr_assert_eq(parse_chain_rows(o.text, r, 4), 2);
    cr_assert_str_eq(r[0].proto, "LL");     /* 524288 B */
    cr_assert_str_eq(r[1].proto, "Simple"); /* 1048576 B */
    cr_assert_str_eq(r[1].algo, "ring");
    /* Simple: topoGetAlgoInfo's 32 KiB per channel gives nc = 12; the plan
     * then hands each channel ceil(87392 / 32768) = 3 cells of 32 KiB, so
     * the 32 cells land on ceil(32 / 3) = 11 channels. */
    cr_assert_eq(r[1].channels, 11);
    free(o.text);
  }
  struct ds_test_output o = ds_test_collective_ok(
      "--topo topologies/dgx-a100.yaml --op reduce -b 1M -e 1M --format csv");
  cr_assert(strstr(o.text, "reduce,ring,none,8,1048576,"),
            "%s", o.text);
  free(o.text);
}

Test(collbench, a_protocol_set_is_nccls_choice_among_its_protocols) {
  /* dgx-a100's ring at S = 8 MiB = 8388608 B (test_nccl_model_plan.c's table:
   * lat 15.0 / 40.6 / 56.0 us, algbw 50.11 / 126.17 / 137.14 GB/s).
   * Expected, because NCCL's predictions are LL 15 + 167.40 = 182.40,
   * LL128 40.6 + 66.49 = 107.09, Simple 56 + 61.17 = 117.17 us: auto runs
   * LL128, --proto LL,Simple (and ^LL128, the same set) Simple; the
   * nccl_model_us column is the chosen protocol's prediction. */
  const char *flags[][2] = {{"auto", "LL128"}, {"LL,Simple", "Simple"}, {"^LL128", "Simple"}};
  const double want_us[] = {40.6 + 8388608 / (220.8e9 * 8 / 14) * 1e6,
                            56.0 + 8388608 / (240e9 * 8 / 14) * 1e6,
                            56.0 + 8388608 / (240e9 * 8 / 14) * 1e6};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
    char args[256], prefix[64];
    snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml --algo ring --proto %s "
             "-b 8M -e 8M --format csv", flags[i][0]);
    struct ds_test_output o = ds_test_collective_ok(args);
    snprintf(prefix, sizeof prefix, "\nallreduce,ring,%s,8,8388608,", flags[i][1]);
    const char *row = strstr(o.text, prefix);
    cr_assert(row != NULL, "%s: %s", args, o.text);
    const char *last = strrchr(row, ',');
    cr_assert_float_eq(strtod(last + 1, NULL), want_us[i], 1e-2, "%s: %s", args, row);
    free(o.text);
  }
}

Test(collbench, without_p2p_the_channel_cap_binds_on_the_shared_uplink) {
  /* pcie2-nop2p-v100: 2 V100s under one Gen3 switch without peer-to-peer,
   * Intel host. Both ring hops climb the switch's 16 GB/s uplink to the CPU
   * and come back down, so each flow's link share is 8 GB/s; NCCL's search
   * charges each hop 6/5 of the speed on the uplink (12 of NCCL's GB/s):
   * 1 channel of 5 GB/s, and that cap binds. NCCL's model alone (--nccl-
   * extra none), Simple: T = baseLat 8.4 + 2 steps * hwLat[PCI][Ring][Simple]
   * 5.7 + 2(N-1)/N * S / 5 GB/s = 19.8 us + 214748.3648 us at S = 1 GiB.
   * (With the hop alone searched, 12 GB/s, the 8 GB/s share bound:
   * 134237.5 us.) */
  struct ds_test_output o = ds_test_collective_ok(
      "--topo tests/data/pcie2-nop2p-v100.yaml --algo auto --proto Simple "
      "-b 1G -e 1G --nccl-extra none --format csv");
  struct nccl_row rows[2];
  cr_assert_eq(parse_nccl_rows(o.text, rows, 2), 1, "%s", o.text);
  cr_assert_eq(rows[0].channels, 1);
  cr_assert_float_eq(rows[0].time_us, 19.8 + 1073741824 / 5e9 * 1e6, 1e-2, "%s", o.text);
  free(o.text);
}
