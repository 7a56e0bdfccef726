/*
 * `ddpsim collective`: the table's numbers are the ring's closed form on a
 * uniform ring, busbw stays under the bottleneck link, and bad flags are
 * usage errors that name the flag.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cmd/collbench.h"
#include "tests/options_help.h"
#include "tests/support.h"

struct output {
  ds_status st;
  struct ds_err err;
  char *text;
};

static struct output run(const char *args) {
  struct output o = {0};
  o.st = ds_test_collective(args, &o.text, &o.err);
  return o;
}

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
  struct output o = run("--topo tests/data/ring8.yaml -b 8 -e 1G -f 8 --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
  struct output o = run("--topo tests/data/ring8.yaml -b 1K -e 1G -f 4 --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  struct csv_row rows[32];
  int n = parse_rows(o.text, rows, 32);
  cr_assert_gt(n, 5);
  for (int i = 0; i < n; i++) cr_assert_leq(rows[i].busbw, 12.5 * (1 + 1e-9));
  cr_assert_geq(rows[n - 1].busbw, 12.49, "%g", rows[n - 1].busbw);
  free(o.text);
}

Test(collbench, fewer_ranks_with_g) {
  /* -g 4: the first four GPUs; same formula with N = 4. */
  struct output o = run("--topo tests/data/ring8.yaml -g 4 -b 100M -e 100M --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  struct csv_row rows[4];
  cr_assert_eq(parse_rows(o.text, rows, 4), 1);
  cr_assert_eq(rows[0].nranks, 4);
  double expect_ns = 6 * 2000 + 6.0 / 4 * rows[0].size / 12.5e9 * 1e9;
  cr_assert_leq(fabs(rows[0].time_us * 1e3 - expect_ns), 4.0);
  free(o.text);
}

Test(collbench, json_has_one_object_per_size) {
  struct output o = run("--topo tests/data/ring8.yaml -b 1M -e 4M --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
  struct output o = run(args);
  cr_assert_eq(o.st, DS_EUSAGE, "status %d", o.st);
  cr_assert(strstr(o.err.msg, "topology solo has 1 GPU; a collective needs 2 or more"),
            "%s", o.err.msg);
  cr_assert_null(strstr(o.err.msg, "-g"), "%s", o.err.msg);
  free(o.text);
  unlink(path);
  o = run("--topo topologies/4gpu.yaml -g 1");
  cr_assert_eq(o.st, DS_EUSAGE, "status %d", o.st);
  cr_assert(strstr(o.err.msg, "option -g: one rank"), "%s", o.err.msg);
  free(o.text);
  o = run("--topo topologies/cluster-512x8-h100.yaml --op alltoall");
  cr_assert(strstr(o.err.msg, "topology cluster-512x8-h100: alltoall runs N(N-1) transfers"),
            "%s", o.err.msg);
  free(o.text);
}

Test(collbench, bad_flags_are_usage_errors_naming_the_flag) {
  const char *cases[][2] = {
      {"--topo tests/data/ring8.yaml --op alltoallv", "--op"},
      {"--topo tests/data/ring8.yaml --op send", "--op"},
      {"--topo topologies/dgx-a100.yaml --op alltoall --proto LL128", "--proto"},
      {"--topo topologies/dgx-a100.yaml --op gather --proto LL", "--proto"},
      {"--topo topologies/dgx-a100.yaml --op scatter --algo auto", "--algo"},
      {"--topo topologies/dgx-a100.yaml --op allgather --algo auto", "--algo"},
      {"--topo topologies/dgx-a100.yaml --op broadcast --algo auto --proto none", "--proto"},
      {"--topo topologies/dgx-a100.yaml --op reduce --proto LL129", "--proto"},
      {"--topo tests/data/ring8.yaml --op alltoall --algo ring", "--algo"},
      {"--topo topologies/cluster-512x8-h100.yaml --op alltoall", "give -g 1024 or fewer"},
      {"--topo tests/data/ring8.yaml --op gather --algo ring", "--algo"},
      {"--topo tests/data/ring8.yaml --op allgather --proto LL", "--proto"},
      {"--topo tests/data/ring8.yaml --op allgather --root 1", "--root"},
      {"--topo tests/data/ring8.yaml --op broadcast --root 8", "--root"},
      {"--topo tests/data/ring8.yaml --algo treee", "--algo"},
      {"--topo tests/data/ring8.yaml --op broadcast --algo tree", "--algo"},
      {"--topo tests/data/ring8.yaml -b 2", "-b"},
      {"--topo tests/data/ring8.yaml -e 1X", "-e"},
      {"--topo tests/data/ring8.yaml -f 1", "-f"},
      {"--topo tests/data/ring8.yaml -g 9", "-g"},
      {"--topo tests/data/ring8.yaml -b 1M -e 1K", "-e"},
      {"--topo tests/data/ring8.yaml --format xml", "--format"},
      {"--topo tests/data/ring8.yaml --frobnicate 1", "--frobnicate"},
      {"-b 8", "--topo"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct output o = run(cases[i][0]);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", cases[i][0], o.st);
    cr_assert(strstr(o.err.msg, cases[i][1]), "%s: message \"%s\"", cases[i][0], o.err.msg);
    free(o.text);
  }
}

/* --algo auto on an op NCCL runs on one algorithm (allgather: ring;
 * alltoall: p2p) is refused, and the message points at --proto auto, which
 * runs NCCL's model for it (the protocol per size, the launch cost); an op
 * without NCCL's protocols here (gather) is not pointed at it. */
Test(collbench, algo_auto_on_a_one_algorithm_op_suggests_proto_auto) {
  const char *with[] = {"allgather", "alltoall", "reducescatter"};
  for (size_t i = 0; i < sizeof with / sizeof *with; i++) {
    char *argv[] = {"collective", "--topo", "4gpu", "--op", (char *)with[i], "--algo", "auto",
                    NULL};
    struct ds_err err = {0};
    cr_assert_eq(ds_collbench_check_args(7, argv, &err), DS_EUSAGE, "%s", with[i]);
    cr_assert(strstr(err.msg, "option --algo") && strstr(err.msg, "use --proto auto"), "%s: %s",
              with[i], err.msg);
  }
  char *gather[] = {"collective", "--topo", "4gpu", "--op", "gather", "--algo", "auto", NULL};
  struct ds_err err = {0};
  cr_assert_eq(ds_collbench_check_args(7, gather, &err), DS_EUSAGE);
  cr_assert_null(strstr(err.msg, "--proto auto"), "%s", err.msg);
  char *ok[] = {"collective", "--topo", "4gpu", "--op", "allgather", "--proto", "auto", NULL};
  cr_assert_eq(ds_collbench_check_args(7, ok, &err), DS_OK, "%s", err.msg);
}

/* The seam the subcmd fuzz reader drives (fuzz/readers.c): the flags are
 * validated as ds_collbench_main validates them, and nothing is read, so a
 * topology that does not exist passes and a bad -b does not. */
Test(collbench, check_args_validates_the_flags_without_reading_the_topology) {
  char *bad[] = {"collective", "--topo", "no-such-topology", "-b", "3", NULL};
  struct ds_err err = {0};
  cr_assert_eq(ds_collbench_check_args(5, bad, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "option -b: expected a size of at least 4 bytes"), "%s", err.msg);
  char *good[] = {"collective", "--topo", "no-such-topology", "--op", "broadcast", NULL};
  cr_assert_eq(ds_collbench_check_args(5, good, &err), DS_OK, "%s", err.msg);
  struct output o = run("--topo no-such-topology --op broadcast");
  cr_assert_eq(o.st, DS_EUSAGE, "the command itself reads it: %s", o.err.msg);
  free(o.text);
}

/* A flag given last, with nothing after it: one that takes a value is
 * missing it (options_help.c, from the flags the parser knows and the
 * ones its --help shows, which must agree); one collective does not know
 * is unknown (the subcmd fuzz reader found `ddpsim collective --topo 4gpu
 * --frobnicate` refused as "option --frobnicate needs a value"); a word
 * that is no flag is unexpected. */
Test(collbench, a_flag_given_last_is_missing_its_value_or_unknown) {
  const char *help_words[] = {"collective", "--help"};
  char *help = ds_test_main_text(ds_collbench_main, help_words, 2);
  ds_test_options_agree(ds_collbench_options(), help, ds_collbench_check_args, help_words, 2);
  free(help);
  struct ds_err err = {0};
  char *made_up[] = {"collective", "--topo", "4gpu", "--frobnicate", NULL};
  cr_assert_eq(ds_collbench_check_args(4, made_up, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--frobnicate\" (see ddpsim collective --help)");
  char *word[] = {"collective", "--topo", "4gpu", "dgx-a100", NULL};
  cr_assert_eq(ds_collbench_check_args(4, word, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unexpected argument \"dgx-a100\" (see --help)");
}

/* NCCL's protocols and channels (--algo auto, --proto). */

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
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
  struct output a = run(base);
  snprintf(args, sizeof args, "%s --coll-model aggregate", base);
  struct output b = run(args);
  cr_assert_eq(a.st, DS_OK);
  cr_assert_eq(b.st, DS_OK);
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

Test(collbench, unknown_architecture_falls_back_and_says_so) {
  /* ring8's TestGPU has no NCCL architecture: --algo auto runs the plain
   * ring (proto none, the closed form above) and the header says why; an
   * explicit protocol is a usage error naming --proto. */
  struct output o = run("--topo tests/data/ring8.yaml --algo auto -b 1M -e 1M");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "unknown architecture") && strstr(o.text, "plain ring"), "%s",
            o.text);
  free(o.text);
  o = run("--topo tests/data/ring8.yaml --algo auto -b 1M -e 1M --format csv");
  cr_assert_eq(o.st, DS_OK);
  struct csv_row rows[2];
  cr_assert_eq(parse_rows(o.text, rows, 2), 1); /* allreduce,ring,none,... */
  free(o.text);
  o = run("--topo tests/data/ring8.yaml --proto LL");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert(strstr(o.err.msg, "--proto") && strstr(o.err.msg, "TestGPU"), "%s", o.err.msg);
  free(o.text);
}

Test(collbench, blackwell_auto_picks_nccls_choice) {
  /* tests/data/dgx-b200.yaml (8x B200, one NVSwitch): Blackwell has NCCL's
   * model, so --algo auto picks an algorithm and protocol per size (no
   * plain-ring fallback): ring LL at 1 MiB, NVLS Simple at 128 MiB, as
   * tests/test_nccl_model.c works out by hand; the nccl column is NCCL's
   * prediction (308.40 us at 128 MiB). */
  struct output o = run("--topo tests/data/dgx-b200.yaml --algo auto -b 1M -e 128M -f 128");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "model: Blackwell") && !strstr(o.text, "plain ring"), "%s", o.text);
  free(o.text);
  o = run("--topo tests/data/dgx-b200.yaml --algo auto -b 1M -e 128M -f 128 --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
   * 134.07 (tests/test_nccl_model.c works them): --algo auto runs ring/LL
   * and the header says why LL128 is missing; --proto LL128 (NCCL_PROTO=
   * LL128) runs it, and so does a set naming it (LL,LL128, or every
   * protocol: NCCL_PROTO names it, enabled; ddpsim once read a set of all
   * three as auto, LL128 off). The old ddpsim ran ring/LL128 under auto.
   * The header names the set whenever one is given, even one naming every
   * protocol (it once said nothing there, though LL128 then ran). */
  struct output o = run("--topo topologies/pcie-8gpu.yaml --algo auto -b 512K -e 512K");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "# LL128 off: NCCL enables it by default only over NVLink"), "%s",
            o.text);
  free(o.text);
  o = run("--topo topologies/pcie-8gpu.yaml --algo auto -b 512K -e 512K --proto LL,LL128,Simple");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
    o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s: %s", args, o.err.msg);
    const char *first = strchr(o.text, '\n') + 1;
    cr_assert(strncmp(first, cases[i][1], strlen(cases[i][1])) == 0, "%s: %s", args, o.text);
    free(o.text);
  }
}

Test(collbench, algo_and_proto_flags) {
  const char *cases[][2] = {
      {"--topo topologies/dgx-a100.yaml --algo nvls", "nvls"},
      {"--topo tests/data/ring8.yaml --algo nvls", "nvls"},
      {"--topo topologies/dgx-h100.yaml --algo nvls --proto LL", "--proto"},
      {"--topo topologies/dgx-h100.yaml --algo nvls --proto none", "--proto"},
      {"--topo topologies/dgx-a100.yaml --algo direct --proto LL", "--proto"},
      {"--topo topologies/dgx-a100.yaml --algo hierarchical --proto auto", "--proto"},
      {"--topo topologies/dgx-a100.yaml --algo reduce-broadcast --proto Simple", "--proto"},
      {"--topo tests/data/twonode.yaml -g 6 --algo hierarchical", "hierarchical"},
      {"--topo tests/data/ring8.yaml --algo tree --proto LL", "--proto"},
      {"--topo topologies/dgx-a100.yaml --proto LL64", "--proto"},
      {"--topo topologies/dgx-a100.yaml --algo auto --proto none", "--proto"},
      {"--topo topologies/dgx-a100.yaml --nccl-extra some", "--nccl-extra"},
      {"--topo topologies/dgx-a100.yaml --proto LL,LL64", "--proto 'LL,LL64': unknown protocol"},
      {"--topo topologies/dgx-a100.yaml --proto ^LL,LL128,Simple", "leaves no protocol"},
      {"--topo topologies/dgx-h100.yaml --algo nvls --proto LL,LL128", "Simple"},
      {"--topo topologies/dgx-a100.yaml --op sendrecv --proto LL,Simple", "p2p"},
      {"--topo tests/data/ring8.yaml --algo ring --proto LL,Simple", "--proto LL,Simple"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct output o = run(cases[i][0]);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", cases[i][0], o.st);
    cr_assert(strstr(o.err.msg, cases[i][1]), "%s: \"%s\"", cases[i][0], o.err.msg);
    free(o.text);
  }
  /* --algo ring keeps the plain ring unless a protocol is asked for; the
   * text table then names what ran per row. */
  struct output o = run("--topo topologies/dgx-a100.yaml --algo ring --proto auto -b 1G -e 1G");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, " ring Simple  12 "), "%s", o.text);
  free(o.text);
}

/* Every operation (issue #3). */

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
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s: %s", cases[i].op, o.err.msg);
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
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s: %s", ops[i], o.err.msg);
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
      struct output o = run(args);
      cr_assert_eq(o.st, DS_OK, "%s: %s", args, o.err.msg);
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
   * tests/test_nccl_model.c works the loops apart). They were charged the
   * all-reduce's 434 us. */
  const char *ops[] = {"allgather", "reducescatter", "allreduce"};
  const double extra_us[] = {224, 224, 434};
  for (int i = 0; i < 3; i++) {
    double t[2];
    for (int x = 0; x < 2; x++) {
      char args[200];
      snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml --op %s --proto Simple "
               "--nccl-extra %s -b 1G -e 1G --format csv", ops[i], x ? "none" : "measured");
      struct output o = run(args);
      cr_assert_eq(o.st, DS_OK, "%s: %s", args, o.err.msg);
      t[x] = ds_test_csv_num(o.text, "time_us", 0);
      free(o.text);
    }
    cr_assert_float_eq(t[0] - t[1], extra_us[i], 0.002, "%s: %g - %g us", ops[i], t[0], t[1]);
  }
}

Test(collbench, text_header_names_the_op_and_root) {
  struct output o = run("--topo tests/data/ring8.yaml --op scatter --root 5 -b 1M -e 1M");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s: %s", args, o.err.msg);
    cr_assert(strstr(o.text, cases[i].line), "%s:\n%s", args, o.text);
    cr_assert_eq(strstr(o.text, note) != NULL, cases[i].note, "%s:\n%s", args, o.text);
    free(o.text);
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
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s: %s", algos[a], o.err.msg);
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
  struct output o = run("--topo topologies/dgx-h100.yaml --algo nvls -b 1M -e 8G -f 8 "
                        "--format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
  o = run("--topo topologies/2node-ib.yaml --algo nvls -b 1M -e 8G -f 8 --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  n = parse_algo_rows(o.text, rows, 16);
  cr_assert_eq(n, 5);
  for (int i = 0; i < n; i++) {
    cr_assert_str_eq(rows[i].algo, "nvls");
    cr_assert_leq(rows[i].algbw, 400 * (1 + 1e-9), "S=%g: %g", rows[i].size, rows[i].algbw);
  }
  free(o.text);
}

Test(collbench, auto_names_nccls_algorithm_per_size) {
  /* dgx-h100: NCCL's model picks ring/LL at 1 KiB (15 us against NVLS's
   * 25 us) and NVLS at 1 GiB (272 GB/s of algorithm bandwidth against the
   * ring's 205.7); test_nccl_model.c checks the choice against the formula
   * at more sizes. The text table and the csv say so. */
  struct output o = run("--topo topologies/dgx-h100.yaml --algo auto -b 1K -e 1G -f 1024 "
                        "--format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  struct algo_row rows[4];
  cr_assert_eq(parse_algo_rows(o.text, rows, 4), 3);
  cr_assert_str_eq(rows[0].algo, "ring");
  cr_assert_str_eq(rows[0].proto, "LL");
  cr_assert_str_eq(rows[2].algo, "nvls");
  cr_assert_str_eq(rows[2].proto, "Simple");
  free(o.text);
  o = run("--topo topologies/dgx-h100.yaml --algo auto -b 1G -e 1G");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, " nvls Simple   8 "), "%s", o.text);
  cr_assert_null(strstr(o.text, "nvls_tree"), "one node: plain NVLS\n%s", o.text);
  free(o.text);
  /* Across nodes NCCL's NVLS is NVLSTree (nccl_model.h): 2node-ib's 256 MiB
   * picks it; the text table says nvls_tree, the CSV keeps --algo's nvls. */
  o = run("--topo topologies/2node-ib.yaml --algo auto -b 256M -e 256M");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, " nvls_tree Simple   8 "), "%s", o.text);
  free(o.text);
  o = run("--topo topologies/2node-ib.yaml --algo auto -b 256M -e 256M --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert_eq(parse_algo_rows(o.text, rows, 4), 1);
  cr_assert_str_eq(rows[0].algo, "nvls");
  free(o.text);
  /* Asked for explicitly, tree runs with NCCL's protocol choice for it. */
  o = run("--topo topologies/dgx-h100.yaml --algo tree --proto auto -b 1G -e 1G --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
    struct output x = run(args), y = run(args);
    cr_assert_eq(x.st, DS_OK, "%s: %s", algos[a], x.err.msg);
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
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
    struct algo_row rows[2];
    cr_assert_eq(parse_algo_rows(o.text, rows, 2), 1);
    cr_assert_float_eq(rows[0].time_us, 1124.0, 1e-3, "%g", rows[0].time_us);
    free(o.text);
  }
  struct output o = run("--topo tests/data/ring8.yaml --algo reduce-broadcast --root 8");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert(strstr(o.err.msg, "--root"), "%s", o.err.msg);
  free(o.text);
}

/* alltoall, sendrecv and the ring halves under NCCL's protocols. */

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

Test(collbench, alltoall_and_sendrecv_closed_forms) {
  /* ring8, plain: alltoall T = alpha + (N-1)/N S/B, sendrecv T = alpha +
   * S/B (tests/test_coll_alltoall.c works them by hand); busbw = S/T times
   * nccl-tests' factor: (N-1)/N and 1, the same 12.5 GB/s at large S. */
  const char *ops[] = {"alltoall", "sendrecv"};
  for (int k = 0; k < 2; k++) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --op %s -b 1M -e 1G -f 32 "
             "--format csv", ops[k]);
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
  struct output o = run("--topo topologies/dgx-a100.yaml --op alltoall --proto auto -b 8K "
                        "-e 1G -f 128 --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  struct op_row rows[8];
  int n = parse_op_rows(o.text, rows, 8);
  cr_assert_eq(n, 3, "%s", o.text); /* 8K (1 KiB per transfer), 1M, 128M */
  cr_assert_str_eq(rows[0].proto, "LL");
  cr_assert_str_eq(rows[n - 1].proto, "Simple");
  for (int i = 0; i < n; i++) cr_assert_str_eq(rows[i].pred, "");
  free(o.text);
  o = run("--topo topologies/dgx-a100.yaml --op sendrecv --proto Simple -b 8 -e 8 "
          "--format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert_eq(parse_op_rows(o.text, rows, 8), 1);
  cr_assert_str_eq(rows[0].proto, "Simple");
  free(o.text);
}

Test(collbench, allgather_under_protocols_prints_nccls_prediction) {
  /* dgx-a100, --proto auto: the protocol of least predicted time, NCCL's
   * prediction in the last column, LL at 1 KiB and Simple at 1 GiB, and the
   * simulated time never below NCCL's own (the simulation adds the measured
   * launch and ramp to the same start). */
  struct output o = run("--topo topologies/dgx-a100.yaml --op allgather --proto auto -b 1K "
                        "-e 1G -f 1024 --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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

Test(collbench, text_table_closes_with_the_mean_bus_bandwidth) {
  /* As nccl-tests' table: after the rows, "# Avg bus bandwidth : X", the
   * mean of the rows' busbw (here 1, 2 and 4 MiB, from the CSV of the same
   * run), printed to 0.01 GB/s; the table's last line. CSV and JSON have no
   * such line (their readers take every row). */
  const char *args = "--topo tests/data/ring8.yaml -b 1M -e 4M";
  char csv_args[256];
  snprintf(csv_args, sizeof csv_args, "%s --format csv", args);
  struct output c = run(csv_args);
  cr_assert_eq(c.st, DS_OK, "%s", c.err.msg);
  struct csv_row rows[8];
  int n = parse_rows(c.text, rows, 8);
  cr_assert_eq(n, 3);
  double mean = (rows[0].busbw + rows[1].busbw + rows[2].busbw) / 3;
  cr_assert_null(strstr(c.text, "Avg bus"), "%s", c.text);
  struct output t = run(args);
  cr_assert_eq(t.st, DS_OK, "%s", t.err.msg);
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
      struct output o = run(args);
      cr_assert_eq(o.st, DS_OK, "%s: %s", args, o.err.msg);
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
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s: %s", args, o.err.msg);
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
   * 635.7 kB, then Simple (tests/test_nccl_model.c); --algo ring --proto
   * auto runs the same. The default stays the plain chain (proto none), as
   * the all-reduce's default here is the plain ring. */
  const char *variants[] = {"--algo auto", "--proto auto"};
  for (int v = 0; v < 2; v++) {
    char args[256];
    snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml --op broadcast %s -b 512K "
             "-e 1M --format csv", variants[v]);
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
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
  struct output o = run("--topo topologies/dgx-a100.yaml --op reduce -b 1M -e 1M --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "reduce,ring,none,8,1048576,"),
            "%s", o.text);
  free(o.text);
}

Test(collbench, a_protocol_set_is_nccls_choice_among_its_protocols) {
  /* dgx-a100's ring at S = 8 MiB = 8388608 B (test_nccl_model.c's table:
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
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s: %s", args, o.err.msg);
    snprintf(prefix, sizeof prefix, "\nallreduce,ring,%s,8,8388608,", flags[i][1]);
    const char *row = strstr(o.text, prefix);
    cr_assert(row != NULL, "%s: %s", args, o.text);
    const char *last = strrchr(row, ',');
    cr_assert_float_eq(strtod(last + 1, NULL), want_us[i], 1e-2, "%s: %s", args, row);
    free(o.text);
  }
}

/* -b and --minbytes (and -e/--maxbytes, -f/--stepfactor, -g/--ranks) are
 * one option: giving both is the repeat the check exists to refuse, not a
 * silent overwrite by the last (base/cli.h alias_of). */
Test(collbench, an_alias_and_its_flag_are_one_option) {
  struct output o = run("--topo tests/data/ring8.yaml -b 8 --minbytes 16");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert_str_eq(o.err.msg, "option --minbytes given twice (as -b and --minbytes)");
  free(o.text);
  o = run("--topo tests/data/ring8.yaml --ranks 2 -g 4");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert_str_eq(o.err.msg, "option --ranks given twice (as --ranks and -g)");
  free(o.text);
  o = run("--topo tests/data/ring8.yaml -e 1K -e 2K");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert_str_eq(o.err.msg, "option -e given twice");
  free(o.text);
}

/* "--flag=value" as ddpsim itself reads it (base/cli.h
 * ds_cli_split_values): the same table as "--flag value"; an unknown one
 * stays unknown, whole; a flag that takes no value refuses one. */
Test(collbench, a_long_flag_takes_its_value_after_an_equals_sign) {
  struct output apart = run("--topo tests/data/ring8.yaml --op broadcast --maxbytes 1K");
  struct output joined = run("--topo=tests/data/ring8.yaml --op=broadcast --maxbytes=1K");
  cr_assert_eq(apart.st, DS_OK, "%s", apart.err.msg);
  cr_assert_eq(joined.st, DS_OK, "%s", joined.err.msg);
  cr_assert(strstr(joined.text, "broadcast"), "%s", joined.text);
  cr_assert_str_eq(joined.text, apart.text);
  free(apart.text);
  free(joined.text);
  struct output o = run("--topo tests/data/ring8.yaml --op=allreduce --op broadcast");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert_str_eq(o.err.msg, "option --op given twice");
  free(o.text);
  o = run("--topo tests/data/ring8.yaml --help=1");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert_str_eq(o.err.msg, "option --help takes no value");
  free(o.text);
  o = run("--topo tests/data/ring8.yaml --colour=red");
  cr_assert_eq(o.st, DS_EUSAGE);
  cr_assert_str_eq(o.err.msg, "unknown option \"--colour=red\" (see ddpsim collective --help)");
  free(o.text);
}

/* A refusal prints nothing on stdout, in every format: the table is
 * printed whole once every size ran (a new user's review: the CSV header,
 * then the error, exit 2, left a well-formed empty CSV for a script). The
 * hierarchical all-reduce of 3 ranks on two nodes of 2 (2 + 1) is refused
 * when its collective is built, after the options were read. */
Test(collbench, a_refusal_prints_no_header_or_row_in_any_format) {
  const char *formats[] = {"csv", "json", "text"};
  for (size_t i = 0; i < 3; i++) {
    char args[256];
    snprintf(args, sizeof args, "collective --topo tests/data/twonode-2x2.yaml -g 3 "
             "--algo hierarchical -b 1K -e 4K --format %s", formats[i]);
    ds_test_ddpsim_refuses(args, "needs the same number of ranks on every node");
  }
  /* a plot that fails after every row ran: exit 1, no table either */
  struct ds_test_result r =
      ds_test_run("DDPSIM_GNUPLOT=/bin/false", ds_test_ddpsim(),
                  "collective --topo tests/data/tiny-topo.yaml -e 64 --plot "
                  "/tmp/ddpsim-collbench-refusal.svg");
  cr_assert_eq(r.status, 1, "status %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "/bin/false failed"), "%s", r.err);
  cr_assert_str_eq(r.out, "", "printed: %s", r.out);
  ds_test_release(&r);
}

/* --ring-chunks pipelines the plain algorithms' steps. Under NCCL's
 * protocols NCCL pipelines by its own chunks and slices, which the model
 * derives, so more pieces would pipeline twice (a new user's review:
 * --topo 4gpu --algo auto -b 1M took 60.37 us, 50.88 with --ring-chunks
 * 4): refused, as it is where nothing has ring steps to cut. Where --algo
 * auto has no NCCL model (TestGPU) it runs the plain ring, which the chunks
 * cut as --algo ring's. --nccl-extra adds to NCCL's model: refused with the
 * plain algorithm. */
Test(collbench, ring_chunks_and_nccl_extra_only_where_they_mean_something) {
  const char *refused[][2] = {
      {"--algo auto --ring-chunks 4", "NCCL's model runs this allreduce (protocol auto)"},
      {"--algo ring --proto LL --ring-chunks 2", "NCCL's model runs this allreduce (protocol LL)"},
      {"--algo tree --proto Simple --ring-chunks 2", "pipelines the plain algorithms only"},
      {"--op broadcast --algo auto --ring-chunks 2", "NCCL's model runs this broadcast"},
      {"--op allgather --proto LL128 --ring-chunks 2", "NCCL's model runs this allgather"},
      {"--op alltoall --ring-chunks 2", "alltoall p2p has no ring step"},
      {"--op gather --ring-chunks 2", "gather p2p has no ring step"},
      {"--algo direct --ring-chunks 2", "allreduce direct has no ring step"},
      {"--algo ring --nccl-extra measured", "--proto none runs allreduce ring as the plain"},
      {"--op broadcast --nccl-extra measured", "--proto none runs broadcast ring as the plain"},
      {"--op scatter --nccl-extra measured", "which does not run scatter p2p"},
      {"--algo hierarchical --nccl-extra measured", "which does not run allreduce hierarchical"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml -b 1M -e 1M %s", refused[i][0]);
    struct output o = run(args);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", args, o.st);
    cr_assert(strstr(o.err.msg, refused[i][1]), "%s: \"%s\"", args, o.err.msg);
    free(o.text);
  }
  const char *accepted[] = {"--algo ring --ring-chunks 4", "--op broadcast --ring-chunks 4",
                            "--op reducescatter --ring-chunks 4", "--algo tree --ring-chunks 4",
                            "--algo hierarchical --ring-chunks 2", "--algo ring --ring-chunks 1",
                            "--algo auto --ring-chunks 1", "--proto LL --nccl-extra none",
                            "--algo auto --nccl-extra measured",
                            /* none is what the plain algorithms have (docs/collectives.md's
                             * loop over --proto none LL LL128 Simple) */
                            "--algo ring --nccl-extra none", "--op scatter --nccl-extra none",
                            "--algo tree --proto none --nccl-extra none"};
  for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml -b 1M -e 1M %s", accepted[i]);
    struct output o = run(args);
    cr_assert_eq(o.st, DS_OK, "%s: %s", args, o.err.msg);
    free(o.text);
  }
  /* TestGPU: auto falls back to the plain ring, which the chunks cut */
  struct output a = run("--topo tests/data/tiny-topo.yaml -b 1M -e 1M --algo auto "
                        "--ring-chunks 4 --format csv");
  struct output r = run("--topo tests/data/tiny-topo.yaml -b 1M -e 1M --algo ring "
                        "--ring-chunks 4 --format csv");
  struct output r1 = run("--topo tests/data/tiny-topo.yaml -b 1M -e 1M --algo ring "
                         "--format csv");
  cr_assert_eq(a.st + r.st + r1.st, DS_OK, "%s %s", a.err.msg, r.err.msg);
  cr_assert_str_eq(a.text, r.text);
  cr_assert_str_neq(r.text, r1.text);
  free(a.text);
  free(r.text);
  free(r1.text);
}

/* An unknown --op is said to be unknown, with the operations and the
 * nearest of them (a new user's review: "allreduc" was "not simulated by
 * this version", as if a real operation); send, a real one that the
 * command does not time alone, points to sendrecv. */
Test(collbench, an_unknown_op_is_named_with_the_nearest_known_one) {
  const char *cases[][2] = {
      {"allreduc", "unknown operation \"allreduc\" (did you mean allreduce?); the "
                   "operations: allreduce, broadcast, reduce, allgather, reducescatter, "
                   "gather, scatter, alltoall, sendrecv"},
      {"all_gather", "(did you mean allgather?)"},
      {"reduce-scatter", "(did you mean reducescatter?)"},
      {"ALLTOALL", "(did you mean alltoall?)"},
      {"bcast", "unknown operation \"bcast\"; the operations"},
      {"send", "send is one side of a point-to-point pair"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[128];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --op %s", cases[i][0]);
    struct output o = run(args);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", args, o.st);
    cr_assert(strstr(o.err.msg, cases[i][1]), "%s: \"%s\"", args, o.err.msg);
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
  struct output o = run("--topo tests/data/pcie2-nop2p-v100.yaml --algo auto --proto Simple "
                        "-b 1G -e 1G --nccl-extra none --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  struct nccl_row rows[2];
  cr_assert_eq(parse_nccl_rows(o.text, rows, 2), 1, "%s", o.text);
  cr_assert_eq(rows[0].channels, 1);
  cr_assert_float_eq(rows[0].time_us, 19.8 + 1073741824 / 5e9 * 1e6, 1e-2, "%s", o.text);
  free(o.text);
}
