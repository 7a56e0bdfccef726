/*
 * `ddpsim topo`: what it prints is what the simulator loaded -- link
 * counts and rates, the route between two GPUs, the ring's bottleneck,
 * the rails or ring order that run in its place, and NCCL's channels --
 * and bad arguments are usage errors naming the flag.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cmd/topocmd.h"
#include "sim/cmd/importcmd.h"
#include "tests/json_check.h"
#include "tests/options_help.h"
#include "tests/support.h"

static struct ds_test_output run(const char *args) {
  char buf[512], *argv[32];
  int argc = 0;
  snprintf(buf, sizeof buf, "topo %s", args);
  for (char *tok = strtok(buf, " "); tok && argc < 31; tok = strtok(NULL, " ")) argv[argc++] = tok;
  argv[argc] = NULL;
  struct ds_test_output o = {0};
  size_t len = 0;
  FILE *fp = open_memstream(&o.text, &len);
  cr_assert(fp != NULL);
  o.st = ds_topocmd_main(argc, argv, fp, &o.err);
  fclose(fp);
  return o;
}

Test(topocmd, nvswitch_box_links_ring_and_nccl_channels) {
  /* dgx-a100: 8 GPUs, each with one 300 GB/s link to and from the switch
   * (16 directed links, 1.7 us); a GPU-to-GPU route is 2 links (3.4 us);
   * the ring's 14 steps cross 14 * 3.4 = 47.6 us; NCCL's search gives 12
   * channels of 20 GB/s on DGX A100 (docs/collectives.md). */
  struct ds_test_output o = run("topologies/dgx-a100.yaml");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "A100-SXM4-80GB x 8 (1 node x 8)"), "%s", o.text);
  cr_assert(strstr(o.text, "links      16 directed"), "%s", o.text);
  cr_assert(strstr(o.text, "16 x nvlink    300.0 GB/s   1.70 us"), "%s", o.text);
  cr_assert(strstr(o.text, "2 links, bottleneck 300.0 GB/s, latency 3.40 us"), "%s", o.text);
  cr_assert(strstr(o.text, "cross 47.60 us in all"), "%s", o.text);
  cr_assert(strstr(o.text, "12 channels x 20.0 GB/s = 240.0 GB/s"), "%s", o.text);
  /* comm_interference 0 is the extra factor only, not "no interference" */
  cr_assert(strstr(o.text, "comm_interference 0 (an extra factor: NCCL's kernels slow compute "
                           "beside them anyway"), "%s", o.text);
  free(o.text);
}

Test(topocmd, route_between_nodes_crosses_the_fabric) {
  /* 2node-ib: GPU 0 -> GPU 9 leaves through GPU 0's NIC (PCIe 64 GB/s,
   * 1 us), crosses the IB switch (2 x 50 GB/s, 6 us), enters GPU 9's NIC
   * and PCIe: 4 links, 50 GB/s bottleneck, 1 + 6 + 6 + 1 = 14 us. The ring's
   * slowest hop is the first that leaves node 0, 7 -> 8. */
  struct ds_test_output o = run("2node-ib --from 0 --to 9");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "gpu0 -[pcie 64 GB/s]-> nic0@node0 -[ib 50 GB/s]-> switch0@fabric"),
            "%s", o.text);
  cr_assert(strstr(o.text, "4 links, bottleneck 50.0 GB/s, latency 14.00 us"), "%s", o.text);
  cr_assert(strstr(o.text, "bottleneck hop 7 -> 8 at 50.0 GB/s"), "%s", o.text);
  free(o.text);
}

/* A link of 12.5 GB/s (100 Gb/s, tests/data/ring8.yaml's switch links) is
 * 12.5 on the route line as in the links list, not %.0f's 12; whole rates
 * stay whole (64, 50, 100 above). */
Test(topocmd, a_route_prints_a_fractional_bandwidth_as_the_links_list_does) {
  struct ds_test_output o = run("tests/data/ring8.yaml --from 0 --to 5");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "16 x nvlink     12.5 GB/s"), "%s", o.text);
  cr_assert(strstr(o.text, "route      gpu0 -[nvlink 12.5 GB/s]-> switch0 -[nvlink 12.5 GB/s]-> "
                           "gpu5\n"),
            "%s", o.text);
  free(o.text);
}

/* --from A --to A, and --from the last GPU with the default --to (the
 * last): the route section says it is one GPU (it was left out). */
Test(topocmd, a_route_from_a_gpu_to_itself_says_so) {
  const char *args[] = {"4gpu --from 1 --to 1", "4gpu --from 3", "4gpu --from gpu2 --to gpu2",
                        "4gpu --from gpu0 --to 3"};
  const char *want[] = {"\n  route      gpu1 -> gpu1: the same GPU, no link crossed\n",
                        "\n  route      gpu3 -> gpu3: the same GPU, no link crossed\n",
                        "\n  route      gpu2 -> gpu2: the same GPU, no link crossed\n",
                        "\n  route      gpu0 -[nvlink 100 GB/s]-> gpu3\n"};
  for (int i = 0; i < 4; i++) {
    struct ds_test_output o = run(args[i]);
    cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
    cr_assert(strstr(o.text, want[i]), "%s:\n%s", args[i], o.text);
    free(o.text);
  }
}

Test(topocmd, rails_over_every_nic_and_ring_order) {
  /* 2node-ib: 8 rails, one per NIC (tests/test_ring_rails.c); rail 0 enters
   * node 0 at GPU 0 (NIC 0) and leaves at GPU 1 (NIC 1), enters node 1 at
   * GPU 9 (NIC 1) and leaves at GPU 8 (NIC 0). Bound 8 x 50 = 400 GB/s;
   * NCCL: 8 channels of 48 GB/s. dgx1-v100: rank order's 16 GB/s ring is
   * replaced by the doubled-NVLink cycle at 50 GB/s. */
  struct ds_test_output o = run("2node-ib");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "rails      8 rings, one per NIC"), "%s", o.text);
  cr_assert(strstr(o.text, "rail 0: GPUs 0 2 3 4 5 6 7 1 | 9 10 11 12 13 14 15 8;"), "%s",
            o.text);
  cr_assert(strstr(o.text, "busbw at most 400.0 GB/s (the rails together)"), "%s", o.text);
  cr_assert(strstr(o.text, "8 channels x 48.0 GB/s = 384.0 GB/s"), "%s", o.text);
  free(o.text);
  o = run("dgx1-v100");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "bottleneck hop 3 -> 4 at 16.0 GB/s"), "%s", o.text);
  cr_assert(strstr(o.text, "rail 0: GPUs 0 3 2 1 5 6 7 4; bottleneck 50.0 GB/s"), "%s", o.text);
  cr_assert(strstr(o.text, "busbw at most 50.0 GB/s (reordered)"), "%s", o.text);
  free(o.text);
}

/* The bound divides a link that several hops of the ring cross: on the
 * host-staged 4090 box (p2p: false) each of the 4 hops stages its copy
 * through host memory, cpu0 -> cpu1 at host_mem_bw / 2 = 44.8 GB/s, so
 * 44.8 / 4 = 11.2 GB/s, not the slowest hop's own 32 (the simulated ring:
 * 11.20 GB/s at 1 GiB). The L40S box's UPI is crossed once each way (hops
 * 3 -> 4 and 7 -> 0): its 22 GB/s stands, and no link is named. */
Test(topocmd, hops_sharing_a_link_divide_it_in_the_bound) {
  struct ds_test_output o = run("docs/examples/4x-rtx4090-nop2p.yaml");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "bottleneck hop 0 -> 1 at 32.0 GB/s"), "%s", o.text);
  cr_assert(strstr(o.text, "plain ring all-reduce: busbw at most 11.2 GB/s (4 hops cross "
                           "cpu0 -> cpu1, 44.8 GB/s)\n"), "%s", o.text);
  free(o.text);
  o = run("docs/examples/4x-rtx4090-nop2p.yaml --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert_float_eq(ds_test_json_number(o.text, "ring.busbw_bound_gbps"), 11.2, 1e-9, "%s", o.text);
  cr_assert(strstr(o.text, "\"busbw_bound_link\": {\"from\": \"cpu0\", \"to\": \"cpu1\", "
                           "\"hops\": 4, \"bw_gbps\": 44.8}"), "%s", o.text);
  free(o.text);
  o = run("docs/examples/8x-l40s-2socket.yaml --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "\"busbw_bound_link\": null"), "%s", o.text);
  free(o.text);
  o = run("docs/examples/8x-l40s-2socket.yaml");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "plain ring all-reduce: busbw at most 22.0 GB/s\n"), "%s", o.text);
  free(o.text);
}

Test(topocmd, unknown_architecture_has_no_nccl_model) {
  struct ds_test_output o = run("tests/data/ring8.yaml --world-size 4");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "ring       4 ranks"), "%s", o.text);
  cr_assert(strstr(o.text, "NCCL model: unavailable"), "%s", o.text);
  free(o.text);
}

/* A CPU rank's 2.4 GFLOP/s (topologies/cpu/gpus.yaml) is no 0.0 TFLOP/s:
 * a rate under 0.05 TFLOP/s keeps two significant digits; a rate the entry
 * does not have (tf32, bf16) stays 0.0, as on every GPU without it. */
Test(topocmd, a_rate_below_0_05_tflops_is_not_printed_as_zero) {
  struct ds_test_output o = run("topologies/cpu/cpu-2rank.yaml");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "dense TFLOP/s: fp32 0.0024, tf32 0.0, fp16 0.0024, bf16 0.0\n"),
            "%s", o.text);
  free(o.text);
}

Test(topocmd, bad_arguments_name_the_flag) {
  const char *cases[][2] = {
      {"", "missing the topology"},
      {"dgx-a100 --from 8", "--from"},
      {"dgx-a100 --to x", "--to"},
      {"dgx-a100 --world-size 9", "--world-size"},
      {"dgx-a100 --colour red", "--colour"},
      {"dgx-a100 4gpu", "one topology"},
      {"no-such-topology", "not found"},
      {"4gpu --format xml", "option --format: expected text or json, got \"xml\""},
      {"4gpu --format csv", "option --format: ddpsim topo has no csv"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_test_output o = run(cases[i][0]);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", cases[i][0], o.st);
    cr_assert(strstr(o.err.msg, cases[i][1]), "%s: \"%s\"", cases[i][0], o.err.msg);
    free(o.text);
  }
}

/* The seam the subcmd fuzz reader drives (fuzz/readers.c): `topo` and
 * `topo import` flags are validated as ds_topocmd_main validates them, and
 * no file is read (none of these exists). */
Test(topocmd, check_args_validates_the_flags_without_reading_a_file) {
  struct ds_err err = {0};
  char *from[] = {"topo", "missing.yaml", "--from", "x", NULL};
  cr_assert_eq(ds_topocmd_check_args(4, from, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "option --from: expected a GPU index"), "%s", err.msg);
  /* the label's prefix alone, a sign or anything after the digits is no index */
  const char *bad[] = {"gpu", "gpux", "-1", "+1", "gpu-1", "1x", "gpu 1", ""};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    char *b[] = {"topo", "missing.yaml", "--from", (char *)bad[k], NULL};
    cr_assert_eq(ds_topocmd_check_args(4, b, &err), DS_EUSAGE, "--from '%s'", bad[k]);
  }
  char *nic[] = {"topo", "import", "missing.xml", "--nic", "8x", NULL};
  cr_assert_eq(ds_topocmd_check_args(5, nic, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "option --nic: expected COUNTxBW"), "%s", err.msg);
  /* a count out of range says the range (1 to 1024: the topology then
   * checks it against the GPUs a node has) */
  char *zero[] = {"topo", "import", "missing.xml", "--nic", "0x400Gbps", NULL};
  cr_assert_eq(ds_topocmd_check_args(5, zero, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "with a COUNT from 1 to 1024, got \"0x400Gbps\""), "%s", err.msg);
  char *topo[] = {"topo", "missing.yaml", "--world-size", "2", NULL};
  cr_assert_eq(ds_topocmd_check_args(4, topo, &err), DS_OK, "%s", err.msg);
  char *import[] = {"topo", "import", "missing.xml", "--nodes", "2", NULL};
  cr_assert_eq(ds_topocmd_check_args(5, import, &err), DS_OK, "%s", err.msg);
}

/* A flag given last, with nothing after it: one that takes a value is
 * missing it (options_help.c, from the flags the parser knows and the
 * ones its --help shows, which must agree); one the command does not know
 * is unknown (the subcmd fuzz reader found `ddpsim topo 4gpu --colour`
 * refused as "option --colour needs a value"). */
Test(topocmd, a_flag_given_last_is_missing_its_value_or_unknown) {
  const char *topo_help[] = {"topo", "--help"}, *import_help[] = {"topo", "import", "--help"};
  const char *topo_lead[] = {"topo", "4gpu"}, *import_lead[] = {"topo", "import", "a.xml"};
  char *help = ds_test_main_text(ds_topocmd_main, topo_help, 2);
  ds_test_options_agree(ds_topocmd_options(), help, ds_topocmd_check_args, topo_lead, 2);
  free(help);
  help = ds_test_main_text(ds_topocmd_main, import_help, 3);
  ds_test_options_agree(ds_importcmd_options(), help, ds_topocmd_check_args, import_lead, 3);
  free(help);
  struct ds_err err = {0};
  char *colour[] = {"topo", "4gpu", "--colour", NULL};
  cr_assert_eq(ds_topocmd_check_args(3, colour, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--colour\" (see ddpsim topo --help)");
  char *bogus[] = {"topo", "import", "a.xml", "--bogus", NULL};
  cr_assert_eq(ds_topocmd_check_args(4, bogus, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--bogus\" (see ddpsim topo import --help)");
}

/* -o and --output are one option (base/cli.h alias_of), and a long flag
 * takes its value after "=" as ddpsim itself does (ds_cli_split_values). */
Test(topocmd, an_alias_is_one_option_and_a_value_may_follow_an_equals_sign) {
  struct ds_err err = {0};
  char *output[] = {"topo", "import", "a.xml", "-o", "x.yaml", "--output", "y.yaml", NULL};
  cr_assert_eq(ds_topocmd_check_args(7, output, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --output given twice (as -o and --output)");
  char *nodes[] = {"topo", "import", "a.xml", "--nodes=0", NULL};
  cr_assert_eq(ds_topocmd_check_args(4, nodes, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --nodes: expected a node count from 1 to 65536, got \"0\"");
  char *help[] = {"topo", "import", "a.xml", "--help=yes", NULL};
  cr_assert_eq(ds_topocmd_check_args(4, help, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --help takes no value");
  const char *apart[] = {"topo", "topologies/4gpu.yaml", "--from", "0", "--to", "3"};
  const char *joined[] = {"topo", "topologies/4gpu.yaml", "--from=0", "--to=3"};
  char *want = ds_test_main_text(ds_topocmd_main, apart, 6);
  char *got = ds_test_main_text(ds_topocmd_main, joined, 4);
  cr_assert_str_eq(got, want);
  free(want);
  free(got);
  char *twice[] = {"topo", "topologies/4gpu.yaml", "--from=0", "--from", "1", NULL};
  cr_assert_eq(ds_topocmd_check_args(5, twice, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --from given twice");
}

/* The hosts' CPU vendor, which NCCL's tuning reads across nodes (LL's cap,
 * the network overhead), is shown as loaded: the default intel where the
 * key is absent, and each value a file gives. */
Test(topocmd, shows_the_cpu_vendor) {
  struct ds_test_output o = run("topologies/2node-ib.yaml");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "\n  cpu_vendor intel ("), "%s", o.text);
  free(o.text);
  const char *vendors[] = {"intel", "amd", "mixed", "arm"};
  for (int i = 0; i < 4; i++) {
    char path[] = "/tmp/ddpsim-topocmd-vendor-XXXXXX", text[512], want[64];
    snprintf(text, sizeof text,
             "schema_version: 1\nname: v\ngpu: H100-SXM5-80GB\nnodes: 1\ngpus_per_node: 2\n"
             "cpu_vendor: %s\nintra_node:\n  template: nvswitch\n  link_bw: 450GBps\n"
             "  link_lat: 1.7us\n", vendors[i]);
    ds_test_write_temp(path, text);
    o = run(path);
    unlink(path);
    cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
    snprintf(want, sizeof want, "\n  cpu_vendor %s (", vendors[i]);
    cr_assert(strstr(o.text, want), "%s: %s", vendors[i], o.text);
    free(o.text);
  }
}

/* gpus_per_switch 3 on 5 GPUs per node: switches of 3 and 2 GPUs, said on
 * a line of its own (docs/topologies.md); 1 node's 2 PCIe switches + 0
 * fabric switches = "2 switch". A divisor (pcie4: 2 of 4) prints no line. */
Test(topocmd, a_partial_last_pcie_switch_is_said) {
  char path[] = "/tmp/ddpsim-topocmd-pcie-XXXXXX";
  ds_test_write_temp(path, "schema_version: 1\nname: p\ngpu: H100-SXM5-80GB\nnodes: 1\n"
                           "gpus_per_node: 5\nintra_node:\n  template: pcie-switch\n"
                           "  link_bw: 10GBps\n  link_lat: 1us\n  gpus_per_switch: 3\n"
                           "  uplink_bw: 10GBps\n  uplink_lat: 1us\n");
  struct ds_test_output o = run(path);
  unlink(path);
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "5 gpu, 2 switch,"), "%s", o.text);
  cr_assert(strstr(o.text, "\n  pcie       2 switches per node of 3+2 GPUs (gpus_per_switch 3 "
                           "does not divide gpus_per_node 5: the last switch holds the rest)\n"),
            "%s", o.text);
  free(o.text);
  o = run("tests/data/pcie4.yaml");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "4 gpu, 2 switch,"), "%s", o.text);
  cr_assert_null(strstr(o.text, "\n  pcie "), "%s", o.text);
  free(o.text);
}

/* The GPU table knows a GPU's memory bandwidth, not its kind: an L40S's
 * GDDR6 (864 GB/s) is "memory", never "HBM". */
Test(topocmd, gddr_memory_is_not_called_hbm) {
  char path[] = "/tmp/ddpsim-topocmd-l40s-XXXXXX";
  ds_test_write_temp(path, "schema_version: 1\nname: l\ngpu: L40S-48GB\nnodes: 1\n"
                           "gpus_per_node: 2\nintra_node:\n  template: pcie-switch\n"
                           "  link_bw: 32GBps\n  link_lat: 1us\n  gpus_per_switch: 2\n"
                           "  uplink_bw: 32GBps\n  uplink_lat: 1us\n");
  struct ds_test_output o = run(path);
  unlink(path);
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "L40S-48GB x 2 (1 node x 2), 142 SMs, 45.0 GiB, memory 864 GB/s\n"),
            "%s", o.text);
  cr_assert_null(strstr(o.text, "HBM"), "%s", o.text);
  free(o.text);
}

/* A hand-written device list keeps the file's names: list4's switches sw0
 * and sw1 and its CPU `cpu` were printed as switch0, switch1 and cpu0, and
 * its GPUs x .. w as gpu0 .. gpu3 alone. A GPU is gpuN (what --from
 * takes) with its name after it when that differs. */
Test(topocmd, a_device_list_keeps_the_files_names) {
  struct ds_test_output o = run("tests/data/list4.yaml --from 0 --to 3");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "route      gpu0(x) -[pcie 10 GB/s]-> sw0 -[pcie 8 GB/s]-> cpu "
                           "-[pcie 8 GB/s]-> sw1 -[pcie 10 GB/s]-> gpu3(w)\n"), "%s", o.text);
  cr_assert(strstr(o.text, "e.g. gpu0(x) -> sw0\n"), "%s", o.text);
  free(o.text);
  /* dgx1-v100 names its GPUs gpu0 .. gpu7 (printed so, once) and its
   * switches pcie0 .. pcie3 */
  o = run("dgx1-v100 --from 0 --to 0");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strstr(o.text, "e.g. gpu0 -> pcie0\n"), "%s", o.text);
  free(o.text);
}

/* ---- --format json: the text's facts, whole ---- */

/* Asserts that text holds what fmt makes of the arguments: the text's
 * rounding of a JSON number must be the text's figure. */
__attribute__((format(printf, 3, 4))) static void has(const char *text, const char *json,
                                                      const char *fmt, ...) {
  char want[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(want, sizeof want, fmt, ap);
  va_end(ap);
  cr_assert(strstr(text, want), "the text lacks \"%s\":\n%s\nJSON:\n%s", want, text, json);
}

static double num(const char *json, const char *path) { return ds_test_json_number(json, path); }

static int has_path(const char *json, const char *path) {
  const char *p = ds_test_json_at(json, path);
  return p && strncmp(p, "null", 4) != 0;
}

/* The string at path, decoded, into buf. */
static const char *json_str(const char *json, const char *path, char *buf, size_t cap) {
  const char *p = ds_test_json_at(json, path);
  cr_assert(p && ds_test_json_string(&p, buf, cap), "%s is no string: %s", path, json);
  return buf;
}

/* Every figure the text prints of args, read back from the JSON of the
 * same args and rounded as the text rounds it. */
static void json_matches_text(const char *args) {
  char json_args[256];
  snprintf(json_args, sizeof json_args, "%s --format json", args);
  struct ds_test_output t = run(args), o = run(json_args);
  cr_assert_eq(t.st, DS_OK, "%s", t.err.msg);
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  const char *x = t.text, *j = o.text;
  ds_test_assert_json(j);
  char s[160], kind[32];
  int nodes = (int)num(j, "gpu.nodes");
  has(x, j, "  gpu        %s x %d (%d node%s x %d), %d SMs, %.1f GiB, memory %.0f GB/s\n",
      json_str(j, "gpu.name", s, sizeof s), (int)num(j, "gpu.count"), nodes,
      nodes == 1 ? "" : "s", (int)num(j, "gpu.gpus_per_node"), (int)num(j, "gpu.sms"),
      num(j, "gpu.memory_gib"), num(j, "gpu.memory_gbps"));
  has(x, j, "dense TFLOP/s: fp32 %.1f, tf32 %.1f, fp16 %.1f, bf16 %.1f\n",
      num(j, "gpu.dense_tflops.fp32"), num(j, "gpu.dense_tflops.tf32"),
      num(j, "gpu.dense_tflops.fp16"), num(j, "gpu.dense_tflops.bf16"));
  has(x, j, "compute    flops_efficiency %g, mem_efficiency %g, kernel_overhead %g us, "
      "fp32 math %s, comm_interference %g", num(j, "compute.flops_efficiency"),
      num(j, "compute.mem_efficiency"), num(j, "compute.kernel_overhead_us"),
      json_str(j, "compute.fp32_math", s, sizeof s), num(j, "compute.comm_interference"));
  has(x, j, "matmul fp32 %.3f", num(j, "measured_efficiency.matmul_fp32"));
  has(x, j, "memory %.3f\n", num(j, "measured_efficiency.memory"));
  has(x, j, "  devices    %d gpu, %d switch, %d nic, %d cpu  (intra-node %s", (int)num(j, "devices.gpu"),
      (int)num(j, "devices.switch"), (int)num(j, "devices.nic"), (int)num(j, "devices.cpu"),
      json_str(j, "intra_node", s, sizeof s));
  has(x, j, "  cpu_vendor %s (", json_str(j, "cpu_vendor", s, sizeof s));
  has(x, j, "  links      %d directed\n", (int)num(j, "links_directed"));
  int links = 0;
  for (int g = 0; g < 16; g++) {
    char path[64];
    snprintf(path, sizeof path, "link_groups.%d", g);
    if (!ds_test_json_at(j, path)) break;
    char k[64], b[64], l[64], c[64];
    snprintf(k, sizeof k, "link_groups.%d.kind", g);
    snprintf(b, sizeof b, "link_groups.%d.bw_gbps", g);
    snprintf(l, sizeof l, "link_groups.%d.lat_us", g);
    snprintf(c, sizeof c, "link_groups.%d.count", g);
    has(x, j, "%6d x %-6s %8.1f GB/s %6.2f us   e.g. ", (int)num(j, c),
        json_str(j, k, kind, sizeof kind), num(j, b), num(j, l));
    links += (int)num(j, c);
  }
  cr_assert_eq(links, (int)num(j, "links_directed"), "the groups hold every link: %s", j);
  int hops = (int)num(j, "route.hops");
  if (hops > 0)
    has(x, j, "\n             %d link%s, bottleneck %.1f GB/s, latency %.2f us\n", hops,
        hops == 1 ? "" : "s", num(j, "route.bottleneck_gbps"), num(j, "route.lat_us"));
  has(x, j, "  route      %s -", json_str(j, "route.from", s, sizeof s));
  int n = (int)num(j, "ring.ranks");
  has(x, j, "  ring       %d ranks on GPUs 0..%d in order; bottleneck hop %d -> %d at %.1f GB/s\n",
      n, n - 1, (int)num(j, "ring.bottleneck_hop.0"), (int)num(j, "ring.bottleneck_hop.1"),
      num(j, "ring.bottleneck_gbps"));
  has(x, j, "hop latency up to %.2f us; 2(N-1) steps cross %.2f us in all\n",
      num(j, "ring.max_hop_lat_us"), num(j, "ring.steps_lat_us"));
  has(x, j, "plain ring all-reduce: busbw at most %.1f GB/s", num(j, "ring.busbw_bound_gbps"));
  if (has_path(j, "ring.busbw_bound_link")) {
    char to[64];
    has(x, j, "%d hops cross %s -> %s, %.1f GB/s)\n", (int)num(j, "ring.busbw_bound_link.hops"),
        json_str(j, "ring.busbw_bound_link.from", s, sizeof s),
        json_str(j, "ring.busbw_bound_link.to", to, sizeof to),
        num(j, "ring.busbw_bound_link.bw_gbps"));
  } else {
    cr_assert(!strstr(x, " hops cross "), "a link named that the JSON lacks: %s", x);
  }
  if (has_path(j, "ring.rails.1")) {
    has(x, j, "rail 1: GPUs %d", (int)num(j, "ring.rails.1.gpus.0"));
    has(x, j, "; bottleneck %.1f GB/s\n", num(j, "ring.rails.1.bottleneck_gbps"));
    has(x, j, "2(N-1) steps cross %.2f us at most\n", num(j, "ring.rails_steps_lat_us"));
  }
  if (has_path(j, "channels")) {
    has(x, j, "NCCL's search: %d rings of %.1f GB/s over direct links (a GPU's links: %.1f GB/s)",
        (int)num(j, "channels.rings"), num(j, "channels.ring_gbps"),
        num(j, "channels.gpu_links_gbps"));
    has(x, j, "channel 1: GPUs %d %d %d %d\n", (int)num(j, "channels.orders.1.0"),
        (int)num(j, "channels.orders.1.1"), (int)num(j, "channels.orders.1.2"),
        (int)num(j, "channels.orders.1.3"));
  }
  int ch = (int)num(j, "nccl_model.channels");
  has(x, j, "NCCL model (%s, %s): %d channel%s x %.1f GB/s = %.1f GB/s (Simple; ",
      json_str(j, "nccl_model.arch", s, sizeof s),
      json_str(j, "nccl_model.constants", kind, sizeof kind), ch, ch == 1 ? "" : "s",
      num(j, "nccl_model.channel_gbps"), num(j, "nccl_model.busbw_gbps"));
  free(t.text);
  free(o.text);
}

/* 4gpu (NCCL's searched channels), 2node-ib (rails over 8 NICs, a route
 * across the fabric): the JSON's numbers are the text's, unrounded. */
Test(topocmd, json_numbers_are_the_texts) {
  json_matches_text("4gpu");
  json_matches_text("2node-ib");
  json_matches_text("2node-ib --from 0 --to 9");
}

/* The facts by hand, whole where the text rounds: 2node-ib's GPU 0 -> 9
 * crosses PCIe, IB, IB, PCIe (tests above: 50 GB/s, 14 us); the H100's
 * 81559 MiB (gpus.yaml) are 79.6474609375 GiB, "79.6" in the text. 4gpu: 6 searched rings of 40 GB/s, 12 model channels of 20. */
Test(topocmd, json_route_and_channels_by_hand) {
  struct ds_test_output o = run("2node-ib --from 0 --to 9 --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  ds_test_assert_json(o.text);
  cr_assert_float_eq(num(o.text, "gpu.memory_gib"), 79.6474609375, 1e-12);
  cr_assert_eq(num(o.text, "route.hops"), 4);
  cr_assert_eq(num(o.text, "route.bottleneck_gbps"), 50);
  cr_assert_float_eq(num(o.text, "route.lat_us"), 14, 1e-12);
  char s[64];
  cr_assert_str_eq(json_str(o.text, "route.path.1.kind", s, sizeof s), "ib");
  cr_assert_str_eq(json_str(o.text, "route.path.1.to", s, sizeof s), "switch0@fabric");
  cr_assert_str_eq(json_str(o.text, "ring.runs_as", s, sizeof s), "rails");
  cr_assert_eq(num(o.text, "ring.rails.7.gpus.15"), 15);
  cr_assert(!has_path(o.text, "ring.rails.8"), "8 rails: %s", o.text);
  free(o.text);
  o = run("4gpu --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert_eq(num(o.text, "channels.rings"), 6);
  cr_assert_eq(num(o.text, "channels.ring_gbps"), 40);
  cr_assert_eq(num(o.text, "channels.orders.5.1"), 3); /* channel 5: 0 3 2 1 */
  cr_assert_eq(num(o.text, "nccl_model.channels"), 12);
  cr_assert_eq(num(o.text, "nccl_model.busbw_gbps"), 240);
  cr_assert_str_eq(json_str(o.text, "nccl_model.placement", s, sizeof s), "searched_rings");
  free(o.text);
}

/* One rank (no ring: null), a GPU to itself (no link: hops 0, bottleneck
 * null), a device list's own names, an unknown architecture (the model's
 * reason), a name full of quotes and backslashes: each parses, and the
 * names decode to the file's. */
Test(topocmd, json_edge_cases_parse) {
  struct ds_test_output o = run("4gpu --world-size 1 --from 2 --to 2 --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  ds_test_assert_json(o.text);
  cr_assert_eq(num(o.text, "route.hops"), 0);
  cr_assert(strncmp(ds_test_json_at(o.text, "route.bottleneck_gbps"), "null", 4) == 0);
  cr_assert(strncmp(ds_test_json_at(o.text, "ring"), "null", 4) == 0, "%s", o.text);
  free(o.text);
  char s[160];
  o = run("tests/data/list4.yaml --from 0 --to 3 --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  ds_test_assert_json(o.text);
  cr_assert_str_eq(json_str(o.text, "route.from", s, sizeof s), "gpu0(x)");
  cr_assert_str_eq(json_str(o.text, "route.path.1.to", s, sizeof s), "cpu");
  free(o.text);
  o = run("tests/data/ring8.yaml --world-size 4 --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  ds_test_assert_json(o.text);
  cr_assert(!has_path(o.text, "nccl_model"), "%s", o.text);
  cr_assert(has_path(o.text, "nccl_model_unavailable"), "%s", o.text);
  free(o.text);
  o = run("tests/data/oddname/topo.yaml --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  ds_test_assert_json(o.text);
  cr_assert_str_eq(json_str(o.text, "topology", s, sizeof s), "odd \"topo\", x;y\\ z");
  cr_assert_str_eq(json_str(o.text, "gpu.name", s, sizeof s), "My \"GPU\", a;b\\ x");
  free(o.text);
}
