/*
 * Topology files: the shipped machines load with the links their comments
 * promise, routes take the expected paths, and bad files fail with a
 * located message.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/topo.h"

static struct ds_topo *load_ok(const char *path) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(path, NULL, &t, &err), DS_OK, "%s: %s", path, err.msg);
  return t;
}

static int route(struct ds_topo *t, int32_t a, int32_t b, int32_t *links) {
  int32_t n = 0;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_route(t, a, b, links, 16, &n, &err), DS_OK, "%s", err.msg);
  return n;
}

Test(topo, design_card_4gpu_is_an_nvlink_mesh) {
  /* 4 A100s, every pair joined directly at 100 GB/s each way: 12 links. */
  struct ds_topo *t = load_ok("topologies/4gpu.yaml");
  int32_t links[16];
  cr_assert_eq(t->n_gpus, 4);
  cr_assert_str_eq(t->gpu.name, "A100-SXM4-80GB");
  cr_assert_eq(t->n_links, 12);
  for (int32_t a = 0; a < 4; a++)
    for (int32_t b = 0; b < 4; b++) {
      if (a == b) continue;
      cr_assert_eq(route(t, a, b, links), 1);
      cr_assert_float_eq(t->links[links[0]].bw_bytes_per_s, 100e9, 1);
      cr_assert_float_eq(t->links[links[0]].lat_ns, 3400, 1e-6);
    }
  /* Peak rates from the GPU table (gpu_specs.csv: 156 TF32, 2039 GB/s). */
  cr_assert_float_eq(t->gpu.tf32_flops_per_s, 156e12, 1);
  cr_assert_float_eq(t->gpu.mem_bw_bytes_per_s, 2039e9, 1);
  ds_topo_free(t);
}

Test(topo, nvswitch_routes_cross_the_switch) {
  struct ds_topo *t = load_ok("topologies/dgx-h100.yaml");
  int32_t links[16];
  cr_assert_eq(t->n_gpus, 8);
  cr_assert_eq(route(t, 0, 7, links), 2);
  cr_assert_eq(t->vertex_kind[t->links[links[0]].dst], DS_VERTEX_SWITCH);
  cr_assert_float_eq(t->links[links[0]].bw_bytes_per_s, 450e9, 1);
  ds_topo_free(t);
}

Test(topo, pcie_routes_go_through_the_root_between_switches) {
  struct ds_topo *t = load_ok("topologies/pcie-8gpu.yaml");
  int32_t links[16];
  cr_assert_eq(route(t, 0, 1, links), 2); /* same switch */
  cr_assert_eq(route(t, 0, 2, links), 4); /* up to the CPU and down */
  cr_assert_eq(t->vertex_kind[t->links[links[1]].dst], DS_VERTEX_CPU);
  ds_topo_free(t);
}

Test(topo, two_nodes_cross_nics_and_the_fabric) {
  /* GPU 3 of node 0 to GPU 0 of node 1: GPU->NIC (pcie), NIC->switch (ib),
   * switch->NIC (ib), NIC->GPU (pcie). Inside a node the NVSwitch wins. */
  struct ds_topo *t = load_ok("topologies/2node-ib.yaml");
  int32_t links[16];
  cr_assert_eq(t->n_gpus, 16);
  cr_assert_eq(route(t, 3, 8, links), 4);
  cr_assert_str_eq(t->links[links[0]].kind, "pcie");
  cr_assert_str_eq(t->links[links[1]].kind, "ib");
  cr_assert_float_eq(t->links[links[1]].bw_bytes_per_s, 50e9, 1); /* 400 Gb/s */
  cr_assert_str_eq(t->links[links[3]].kind, "pcie");
  cr_assert_eq(route(t, 0, 5, links), 2);
  cr_assert_str_eq(t->links[links[0]].kind, "nvlink");
  ds_topo_free(t);
}

Test(topo, every_shipped_topology_loads) {
  const char *files[] = {"4gpu", "dgx-a100", "dgx-h100", "pcie-8gpu", "2node-ib",
                         "cluster-512x8-h100"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[128];
    snprintf(path, sizeof path, "topologies/%s.yaml", files[i]);
    ds_topo_free(load_ok(path));
  }
}

/* Writes text to a temporary file and loads it with the test GPU table;
 * returns the status and leaves the message in err. */
static ds_status load_text(const char *text, struct ds_err *err, char *path) {
  strcpy(path, "/tmp/ddpsim-topo-XXXXXX");
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *fp = fdopen(fd, "w");
  fputs(text, fp);
  fclose(fp);
  struct ds_topo *t = NULL;
  ds_status st = ds_topo_load(path, "tests/data/gpus.yaml", &t, err);
  ds_topo_free(t);
  unlink(path);
  return st;
}

#define GOOD_HEAD "schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 1\ngpus_per_node: 2\n"

Test(topo, bad_bandwidth_names_file_line_and_key) {
  struct ds_err err = {0};
  char path[64], want[128];
  ds_status st = load_text(GOOD_HEAD "intra_node:\n  template: nvswitch\n"
                           "  link_bw: fast\n  link_lat: 1us\n", &err, path);
  cr_assert_eq(st, DS_EINPUT);
  snprintf(want, sizeof want, "%s:8:12: key 'link_bw': expected a bandwidth", path);
  cr_assert(strstr(err.msg, want) != NULL, "message: %s", err.msg);
}

Test(topo, unknown_key_is_an_error) {
  struct ds_err err = {0};
  char path[64];
  ds_status st = load_text(GOOD_HEAD "intra_node:\n  template: nvswitch\n"
                           "  link_bw: 1GBps\n  link_lat: 1us\n  linkbw: 3GBps\n",
                           &err, path);
  cr_assert_eq(st, DS_EINPUT);
  cr_assert(strstr(err.msg, ":10:") && strstr(err.msg, "unknown key 'linkbw'"),
            "message: %s", err.msg);
}

Test(topo, unknown_template_and_gpu_are_errors) {
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(load_text(GOOD_HEAD "intra_node:\n  template: tinfoil\n"
                         "  link_bw: 1GBps\n  link_lat: 1us\n", &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'template': expected nvlink-mesh or nvswitch or pcie-switch"),
            "message: %s", err.msg);
  cr_assert_eq(load_text("schema_version: 1\nname: t\ngpu: Z80\nnodes: 1\ngpus_per_node: 2\n"
                         "intra_node:\n  template: nvswitch\n  link_bw: 1GBps\n  link_lat: 1us\n",
                         &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, ":3:") && strstr(err.msg, "key 'gpu'") &&
            strstr(err.msg, "unknown GPU 'Z80'") && strstr(err.msg, "TestGPU"),
            "message: %s", err.msg);
}

Test(topo, several_nodes_need_an_inter_node_network) {
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(load_text("schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 2\ngpus_per_node: 2\n"
                         "intra_node:\n  template: nvswitch\n  link_bw: 1GBps\n  link_lat: 1us\n",
                         &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "missing key 'inter_node'"), "message: %s", err.msg);
}

Test(topo, wrong_schema_version_and_missing_file) {
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(load_text("schema_version: 2\n", &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "expected schema_version 1"), "message: %s", err.msg);
  struct ds_topo *t = NULL;
  cr_assert_eq(ds_topo_load("tests/data/no-such.yaml", NULL, &t, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "tests/data/no-such.yaml"), "message: %s", err.msg);
}
