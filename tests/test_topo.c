/*
 * Topology files: the shipped machines load with the links their comments
 * promise, routes take the expected paths, and bad files fail with a
 * located message.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "tests/support.h"

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
                         "cluster-512x8-h100", "dgx1-v100", "cluster-64x8-h100"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[128];
    snprintf(path, sizeof path, "topologies/%s.yaml", files[i]);
    ds_topo_free(load_ok(path));
  }
}

Test(topo, cpu_2rank_takes_its_cpu_rank_from_the_table_beside_it) {
  /* docs/topologies.md, "CPU ranks under MPI": the entry comes from
   * topologies/cpu/gpus.yaml (no arch: NCCL's model has no row, so
   * all-reduces run the plain ring), the links are the fit of
   * bench/cpu_allreduce.sh its comments cite: 1.021 GB/s, 3.65 us. */
  struct ds_topo *t = load_ok("topologies/cpu/cpu-2rank.yaml");
  cr_assert_eq(t->n_gpus, 2);
  cr_assert_str_eq(t->gpu.name, "CPU-rank");
  cr_assert_str_eq(t->gpu.arch, "");
  cr_assert_eq(t->gpu.boost_mhz, 0);
  cr_assert_float_eq(t->gpu.fp32_flops_per_s, 2.4e9, 1);
  int32_t links[16];
  cr_assert_eq(route(t, 0, 1, links), 2); /* rank -> switch -> rank */
  for (int k = 0; k < 2; k++) {
    cr_assert_float_eq(t->links[links[k]].bw_bytes_per_s, 1.021e9, 1);
    cr_assert_float_eq(t->links[links[k]].lat_ns, 3650, 1e-6);
  }
  ds_topo_free(t);
}

/* Writes text to a temporary file and loads it with the test GPU table;
 * returns the status and leaves the message in err. */
static ds_status load_text(const char *text, struct ds_err *err, char *path) {
  strcpy(path, "/tmp/ddpsim-topo-XXXXXX");
  ds_test_write_temp(path, text);
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
  snprintf(want, sizeof want, "%s:8:12: key 'intra_node.link_bw': expected a bandwidth", path);
  cr_assert(strstr(err.msg, want) != NULL, "message: %s", err.msg);
}

/* Issue #15, defect 9: 1,048,576 GPUs were accepted and never finished
 * (65,536 took 40-90 s: a route search per GPU pair). The supported limit,
 * 16,384 GPUs, is enforced at the 'nodes' line. */
Test(topo, more_gpus_than_supported_are_refused_at_the_nodes_line) {
  struct ds_err err = {0};
  char path[64], want[256];
  ds_status st = load_text("schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 65536\n"
                           "gpus_per_node: 16\nintra_node:\n  template: nvswitch\n"
                           "  link_bw: 1GBps\n  link_lat: 1us\n", &err, path);
  cr_assert_eq(st, DS_EINPUT);
  snprintf(want, sizeof want, "%s:4:8: key 'nodes': 65536 nodes x 16 gpus_per_node = "
           "1048576 GPUs; at most 16384 are supported", path);
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
  cr_assert(strstr(err.msg, "key 'intra_node.template': expected nvlink-mesh or nvswitch or "
                            "pcie-switch"),
            "message: %s", err.msg);
  cr_assert_eq(load_text("schema_version: 1\nname: t\ngpu: Z80\nnodes: 1\ngpus_per_node: 2\n"
                         "intra_node:\n  template: nvswitch\n  link_bw: 1GBps\n  link_lat: 1us\n",
                         &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, ":3:") && strstr(err.msg, "key 'gpu'") &&
            strstr(err.msg, "unknown GPU 'Z80'") && strstr(err.msg, "TestGPU"),
            "message: %s", err.msg);
}

/* A GPU name as a user first writes it (short, in another case, or as
 * nvidia-smi prints it) is refused with the names it can mean, before the
 * list of every name. */
Test(topo, an_unknown_gpu_names_what_it_can_mean) {
  static const struct {
    const char *gpu, *hint;
  } cases[] = {
      {"h100", "(did you mean H100-SXM5-80GB or H100-PCIE-80GB? known: "},
      {"v100", "(did you mean V100-SXM2-16GB, V100-SXM2-32GB, V100-PCIE-16GB or V100-PCIE-32GB? "
               "known: "},
      {"sxm5", "(did you mean H100-SXM5-80GB? known: "}, /* a name holding it */
      {"a100-sxm4-80gb", "(did you mean A100-SXM4-80GB? known: "},
      {"\"NVIDIA H100 80GB HBM3\"", "(did you mean H100-SXM5-80GB, nvidia-smi's name for it? "
                                    "known: "},
      /* nvidia-smi's name without its vendor words, as users write it */
      {"\"H100 PCIe\"", "(did you mean H100-PCIE-80GB, nvidia-smi's name for it? known: "},
      {"\"A100 80GB PCIe\"", "(did you mean A100-PCIE-80GB, nvidia-smi's name for it? "
                              "known: "},
      {"\"RTX 4090\"", "(did you mean RTX4090-24GB, nvidia-smi's name for it? known: "},
      /* words that end several cards' smi names name none of them alone */
      {"PCIe", "(did you mean V100-PCIE-16GB, V100-PCIE-32GB, A100-PCIE-40GB, A100-PCIE-80GB "
               "or H100-PCIE-80GB? known: "},
      {"H100-SXM5-80G", "(did you mean H100-SXM5-80GB? known: "},
      {"Z80", "unknown GPU 'Z80' (known: "},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_err err = {0};
    char path[64], text[512];
    snprintf(text, sizeof text, "schema_version: 1\nname: t\ngpu: %s\nnodes: 1\n"
             "gpus_per_node: 2\nintra_node:\n  template: nvswitch\n  link_bw: 1GBps\n"
             "  link_lat: 1us\n", cases[i].gpu);
    cr_assert_eq(load_text(text, &err, path), DS_EINPUT, "gpu %s", cases[i].gpu);
    cr_assert(strstr(err.msg, cases[i].hint), "gpu %s: %s", cases[i].gpu, err.msg);
  }
}

/* A RoCE cluster's first try, template: roce, is told to write ib: NCCL
 * drives RoCE NICs with its IB transport, which the ib template models. */
Test(topo, a_roce_inter_node_template_is_told_to_write_ib) {
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(load_text("schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 2\ngpus_per_node: 2\n"
                         "intra_node:\n  template: nvswitch\n  link_bw: 1GBps\n  link_lat: 1us\n"
                         "inter_node:\n  template: roce\n  nics_per_node: 1\n  nic_bw: 100Gbps\n"
                         "  nic_lat: 6us\n  gpu_nic_bw: 32GBps\n  gpu_nic_lat: 1us\n",
                         &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, ":11:") &&
            strstr(err.msg, "key 'inter_node.template': expected ib, got \"roce\": ib stands "
                            "for every NIC fabric NCCL's IB transport drives, RoCE included"),
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

/* ---- issue #3: explicit lists, DGX-1, p2p, rails, fat trees ---------- */

/* The route's bottleneck bandwidth and summed latency. */
static void route_cost(const struct ds_topo *t, const int32_t *links, int n, double *bw,
                       double *lat) {
  *bw = t->links[links[0]].bw_bytes_per_s;
  *lat = 0;
  for (int k = 0; k < n; k++) {
    if (t->links[links[k]].bw_bytes_per_s < *bw) *bw = t->links[links[k]].bw_bytes_per_s;
    *lat += t->links[links[k]].lat_ns;
  }
}

/* The vertices a route visits after its source: out[k] = dst of link k. */
static void route_vertices(const struct ds_topo *t, const int32_t *links, int n, int32_t *out) {
  for (int k = 0; k < n; k++) out[k] = t->links[links[k]].dst;
}

Test(topo, explicit_list_numbers_gpus_by_appearance_and_bonds_links) {
  /* list4.yaml: devices x, sw0, y, cpu, z, sw1, w. GPUs are vertices 0..3
   * (x, y, z, w), then sw0 = 4, cpu = 5, sw1 = 6. 9 links, 8 duplex: 17
   * directed. */
  struct ds_topo *t = load_ok("tests/data/list4.yaml");
  int32_t links[16], via[16];
  double bw, lat;
  cr_assert_eq(t->n_gpus, 4);
  cr_assert_eq(t->n_vertices, 7);
  cr_assert_eq(t->n_links, 17);
  cr_assert_str_eq(t->intra_template, "explicit");
  for (int32_t g = 0; g < 4; g++) cr_assert_eq(t->gpu_vertex[g], g);
  cr_assert_eq(t->vertex_kind[4], DS_VERTEX_SWITCH);
  cr_assert_eq(t->vertex_kind[5], DS_VERTEX_CPU);
  cr_assert_eq(t->vertex_kind[6], DS_VERTEX_SWITCH);
  /* x -> y: one link of count 2 x 20 GB/s. */
  cr_assert_eq(route(t, 0, 1, links), 1);
  cr_assert_float_eq(t->links[links[0]].bw_bytes_per_s, 40e9, 1);
  /* x -> z: the one-way 5 GB/s link; z -> x has none back, so it climbs the
   * PCIe tree: z -> sw1 -> cpu -> sw0 -> x, bottleneck the 8 GB/s uplinks,
   * latency 2 + 3 + 3 + 2 = 10 us. */
  cr_assert_eq(route(t, 0, 2, links), 1);
  cr_assert_float_eq(t->links[links[0]].bw_bytes_per_s, 5e9, 1);
  cr_assert_eq(route(t, 2, 0, links), 4);
  route_vertices(t, links, 4, via);
  cr_assert(via[0] == 6 && via[1] == 5 && via[2] == 4 && via[3] == 0);
  route_cost(t, links, 4, &bw, &lat);
  cr_assert_float_eq(bw, 8e9, 1);
  cr_assert_float_eq(lat, 10000, 1e-6);
  cr_assert_str_eq(t->links[links[0]].kind, "pcie");
  ds_topo_free(t);
}

Test(topo, dgx1_v100_is_the_hybrid_cube_mesh) {
  /* 16 NVLink pairs (8 doubled: 50 GB/s, 8 single: 25 GB/s), 8 GPU-switch
   * and 4 switch-CPU PCIe cables, 1 QPI: 29 cables, 58 directed links. */
  struct ds_topo *t = load_ok("topologies/dgx1-v100.yaml");
  int32_t links[16], via[16];
  double bw, lat;
  cr_assert_eq(t->n_gpus, 8);
  cr_assert_eq(t->n_vertices, 14);
  cr_assert_eq(t->n_links, 58);
  static const int doubled[8][2] = {{0, 3}, {0, 4}, {1, 2}, {1, 5},
                                    {2, 3}, {4, 7}, {5, 6}, {6, 7}};
  static const int single[8][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 6},
                                   {3, 7}, {4, 5}, {4, 6}, {5, 7}};
  int nvlinks[8] = {0};
  for (int i = 0; i < 8; i++) {
    for (int dir = 0; dir < 2; dir++) {
      int a = doubled[i][dir], b = doubled[i][1 - dir];
      cr_assert_eq(route(t, a, b, links), 1, "%d -> %d", a, b);
      cr_assert_float_eq(t->links[links[0]].bw_bytes_per_s, 50e9, 1);
      a = single[i][dir], b = single[i][1 - dir];
      cr_assert_eq(route(t, a, b, links), 1, "%d -> %d", a, b);
      cr_assert_float_eq(t->links[links[0]].bw_bytes_per_s, 25e9, 1);
    }
    nvlinks[doubled[i][0]] += 2, nvlinks[doubled[i][1]] += 2;
    nvlinks[single[i][0]]++, nvlinks[single[i][1]]++;
  }
  for (int g = 0; g < 8; g++) cr_assert_eq(nvlinks[g], 6, "GPU %d has 6 NVLinks", g);
  /* 0 -> 5 has no NVLink and no GPU-free NVLink path: GPU0 -> PCIe switch 0
   * -> CPU 0 -> (QPI) -> CPU 1 -> PCIe switch 2 -> GPU5. Vertices: GPUs
   * 0-7, switches 8-11, CPUs 12-13. Bottleneck PCIe Gen3 16 GB/s; 5 links
   * of 1.5 us. */
  cr_assert_eq(route(t, 0, 5, links), 5);
  route_vertices(t, links, 5, via);
  cr_assert(via[0] == 8 && via[1] == 12 && via[2] == 13 && via[3] == 10 && via[4] == 5);
  cr_assert_str_eq(t->links[links[2]].kind, "qpi");
  cr_assert_float_eq(t->links[links[2]].bw_bytes_per_s, 38.4e9, 1);
  route_cost(t, links, 5, &bw, &lat);
  cr_assert_float_eq(bw, 16e9, 1);
  cr_assert_float_eq(lat, 7500, 1e-6);
  for (int32_t k = 0; k < 5; k++)
    cr_assert_neq(t->vertex_kind[t->links[links[k]].src] == DS_VERTEX_GPU && k > 0, 1);
  ds_topo_free(t);
}

Test(topo, pcie_without_p2p_goes_through_the_cpu_even_under_one_switch) {
  /* Each switch is two vertices (up, down halves) meeting at the CPU:
   * GPUs 0-3, CPU 4, switch 0 = 5 (up) + 6 (down), switch 1 = 7 + 8. Same
   * 12 directed links as with p2p. GPU 0 -> GPU 1 (same switch): up to the
   * CPU and back, 4 links, bottleneck the 8 GB/s uplink, 1 + 2 + 2 + 1 us. */
  struct ds_topo *t = load_ok("tests/data/pcie4-nop2p.yaml");
  int32_t links[16], via[16];
  double bw, lat;
  cr_assert_eq(t->n_vertices, 9);
  cr_assert_eq(t->n_links, 12);
  cr_assert_eq(route(t, 0, 1, links), 4);
  route_vertices(t, links, 4, via);
  cr_assert(via[0] == 5 && via[1] == 4 && via[2] == 6 && via[3] == 1);
  cr_assert_eq(t->vertex_kind[4], DS_VERTEX_CPU);
  route_cost(t, links, 4, &bw, &lat);
  cr_assert_float_eq(bw, 8e9, 1);
  cr_assert_float_eq(lat, 6000, 1e-6);
  cr_assert_eq(route(t, 0, 2, links), 4); /* across switches: as with p2p */
  route_vertices(t, links, 4, via);
  cr_assert(via[0] == 5 && via[1] == 4 && via[2] == 8 && via[3] == 2);
  ds_topo_free(t);
  /* With p2p (pcie4.yaml) the same pair stays under its switch. */
  t = load_ok("tests/data/pcie4.yaml");
  cr_assert_eq(route(t, 0, 1, links), 2);
  ds_topo_free(t);
}

Test(topo, fat_tree_routes_between_leaves_cross_the_oversubscribed_spine) {
  /* fattree.yaml: 4 nodes x 2 GPUs, 2 NICs each, 2 nodes per leaf, 2:1.
   * Vertices: GPUs 0-7, NVSwitches 8-11, NICs 12-19, leaves 20-21, spine 22.
   * Links: 16 NVLink + 16 GPU-NIC + 16 NIC-leaf + 4 leaf-spine = 52. A
   * leaf's uplink: 2 nodes x 2 NICs x 5 GB/s / 2 = 10 GB/s. */
  struct ds_topo *t = load_ok("tests/data/fattree.yaml");
  int32_t links[16], via[16];
  double bw, lat;
  cr_assert_eq(t->n_vertices, 23);
  cr_assert_eq(t->n_links, 52);
  cr_assert_str_eq(t->inter_template, "ib-fattree");
  /* GPU 0 (node 0, leaf 0) -> GPU 4 (node 2, leaf 1): GPU -> NIC -> leaf ->
   * spine -> leaf -> NIC -> GPU; 0.5 + 2 + 3 + 3 + 2 + 0.5 = 11 us. */
  cr_assert_eq(route(t, 0, 4, links), 6);
  route_vertices(t, links, 6, via);
  cr_assert(via[0] == 12 && via[1] == 20 && via[2] == 22 && via[3] == 21 &&
            via[4] == 16 && via[5] == 4);
  cr_assert_float_eq(t->links[links[2]].bw_bytes_per_s, 10e9, 1);
  route_cost(t, links, 6, &bw, &lat);
  cr_assert_float_eq(bw, 5e9, 1);
  cr_assert_float_eq(lat, 11000, 1e-6);
  /* GPU 1 (node 0, NIC 1) -> GPU 2 (node 1): same leaf, no spine. */
  cr_assert_eq(route(t, 1, 2, links), 4);
  route_vertices(t, links, 4, via);
  cr_assert(via[0] == 13 && via[1] == 20 && via[2] == 14 && via[3] == 2);
  ds_topo_free(t);
}

Test(topo, rails_and_shared_nic_pcie_switches) {
  /* rails.yaml: 2 nodes x 4 GPUs, 2 NICs, gpus_per_nic 2, rail-optimized.
   * Vertices: GPUs 0-7, NVSwitches 8-9, NICs 10-13, NIC PCIe switch halves
   * (up, down) 14-17 (node 0) and 18-21 (node 1), rail leaves 22-23, spine
   * 24. Links: 16 NVLink + per node (8 GPU-switch + 4 switch-NIC + 4
   * NIC-leaf) + 4 leaf-spine = 52. Rail uplink: 2 nodes x 5 GB/s. */
  struct ds_topo *t = load_ok("tests/data/rails.yaml");
  int32_t links[16], via[16], other[16];
  double bw, lat;
  cr_assert_eq(t->n_vertices, 25);
  cr_assert_eq(t->n_links, 52);
  cr_assert_str_eq(t->inter_template, "ib-rail");
  /* Same rail (local GPU 1 -> local GPU 0 of node 1, both NIC 0): stays on
   * rail 0's leaf: GPU1 -> 14 -> NIC 10 -> leaf 22 -> NIC 12 -> 19 -> GPU4. */
  cr_assert_eq(route(t, 1, 4, links), 6);
  route_vertices(t, links, 6, via);
  cr_assert(via[0] == 14 && via[1] == 10 && via[2] == 22 && via[3] == 12 &&
            via[4] == 19 && via[5] == 4);
  /* Across rails (GPU 0, rail 0 -> GPU 6, rail 1): up to the spine and down;
   * bottleneck the NICs' 5 GB/s, latency 4 x 0.5 + 4 x 2 = 10 us. */
  cr_assert_eq(route(t, 0, 6, links), 8);
  route_vertices(t, links, 8, via);
  cr_assert(via[2] == 22 && via[3] == 24 && via[4] == 23 && via[5] == 13 &&
            via[6] == 21 && via[7] == 6);
  cr_assert_float_eq(t->links[links[3]].bw_bytes_per_s, 10e9, 1);
  route_cost(t, links, 8, &bw, &lat);
  cr_assert_float_eq(bw, 5e9, 1);
  cr_assert_float_eq(lat, 10000, 1e-6);
  /* GPUs 0 and 1 share NIC 0's PCIe link (switch 14 -> NIC 10). */
  int n0 = route(t, 0, 4, links), n1 = route(t, 1, 4, other);
  cr_assert_eq(n0, 6);
  cr_assert_eq(n1, 6);
  cr_assert_eq(links[1], other[1]);
  cr_assert_eq(t->links[links[1]].src, 14);
  cr_assert_eq(t->links[links[1]].dst, 10);
  /* Inside a node the NVSwitch carries everything, never a NIC switch. */
  cr_assert_eq(route(t, 0, 1, links), 2);
  cr_assert_str_eq(t->links[links[0]].kind, "nvlink");
  ds_topo_free(t);
}

Test(topo, cluster_64x8_h100_is_rail_optimized_in_two_scalable_units) {
  /* 64 nodes x 8: 512 GPUs, 64 NVSwitches, 512 NICs, 2 SUs x 8 rails = 16
   * leaves + 1 spine. Links: 2 x 512 NVLink + 2 x 512 GPU-NIC + 2 x 512
   * NIC-leaf + 2 x 16 leaf-spine = 3104. Each leaf: 32 NICs x 50 GB/s down,
   * the same up (non-blocking). */
  struct ds_topo *t = load_ok("topologies/cluster-64x8-h100.yaml");
  int32_t links[16];
  double bw, lat;
  cr_assert_eq(t->n_gpus, 512);
  cr_assert_eq(t->n_vertices, 512 + 64 + 512 + 17);
  cr_assert_eq(t->n_links, 3104);
  /* GPU 1 -> GPU 9 (node 1, same SU, rail 1): 4 links, 14 us. */
  cr_assert_eq(route(t, 1, 9, links), 4);
  route_cost(t, links, 4, &bw, &lat);
  cr_assert_float_eq(bw, 50e9, 1);
  cr_assert_float_eq(lat, 14000, 1e-6);
  /* GPU 0 -> GPU 264 (node 33, the other SU, rail 0): via the spine,
   * 6 links, 1600 GB/s uplinks, 16 us. */
  cr_assert_eq(route(t, 0, 264, links), 6);
  cr_assert_float_eq(t->links[links[2]].bw_bytes_per_s, 1600e9, 1e3);
  route_cost(t, links, 6, &bw, &lat);
  cr_assert_float_eq(bw, 50e9, 1);
  cr_assert_float_eq(lat, 16000, 1e-6);
  ds_topo_free(t);
}

Test(topo, unreachable_gpus_are_an_error_that_names_them) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("tests/data/list-split.yaml", NULL, &t, &err), DS_EINPUT);
  cr_assert(t == NULL);
  cr_assert(strstr(err.msg, "tests/data/list-split.yaml: GPU 0 'a0' cannot reach GPUs "
                   "2 'b0', 3 'b1'"), "message: %s", err.msg);
}

Test(topo, unreachable_gpus_fail_ddpsim_with_exit_2) {
  const char *b = getenv("DDPSIM_BIN");
  char cmd[1024], out[] = "/tmp/ddpsim-topo-err-XXXXXX";
  close(mkstemp(out));
  snprintf(cmd, sizeof cmd, "%s --topo tests/data/list-split.yaml --model "
           "tests/data/tiny-model.yaml >/dev/null 2>%s", b && *b ? b : "build/asan/ddpsim", out);
  int st = system(cmd);
  FILE *fp = fopen(out, "r");
  char msg[1024] = "";
  cr_assert(fp != NULL);
  size_t n = fread(msg, 1, sizeof msg - 1, fp);
  msg[n] = '\0';
  fclose(fp);
  unlink(out);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d, stderr: %s", st, msg);
  cr_assert(strstr(msg, "GPU 0 'a0' cannot reach GPUs 2 'b0', 3 'b1'"), "stderr: %s", msg);
}

#define LIST_HEAD GOOD_HEAD "devices:\n  - {name: g0, kind: gpu}\n  - {name: g1, kind: gpu}\n"

/* Issue #12: a GPU with no link at all is refused at its line in `devices`
 * (it was found only by the reachability search, which named the file
 * alone); a one-GPU topology needs no links, and a switch without links
 * carries nothing and is taken. */
Test(topo, a_gpu_without_links_is_refused_at_its_device_line) {
  struct ds_err err = {0};
  char path[64], want[256];
  cr_assert_eq(load_text(LIST_HEAD "  - {name: lone, kind: gpu}\nlinks:\n"
                         "  - {from: g0, to: g1, bw: 1GBps, lat: 1us, kind: nvlink}\n",
                         &err, path), DS_EINPUT);
  /* (GOOD_HEAD says 2 GPUs: the count check comes first) */
  cr_assert(strstr(err.msg, "expected nodes x gpus_per_node = 2 GPUs, got 3"), "%s", err.msg);
  cr_assert_eq(load_text("schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 1\n"
                         "gpus_per_node: 3\ndevices:\n  - {name: g0, kind: gpu}\n"
                         "  - {name: lone, kind: gpu}\n  - {name: g1, kind: gpu}\nlinks:\n"
                         "  - {from: g0, to: g1, bw: 1GBps, lat: 1us, kind: nvlink}\n",
                         &err, path), DS_EINPUT);
  snprintf(want, sizeof want, "%s:8:12: key 'devices[1].name': GPU 1 'lone' has no links, so "
           "it cannot communicate with the other 2 GPUs (only a one-GPU topology may have none)",
           path);
  cr_assert(strstr(err.msg, want), "message: %s", err.msg);
  /* one GPU, no links: a one-rank world, nothing to communicate */
  cr_assert_eq(load_text("schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 1\n"
                         "gpus_per_node: 1\ndevices:\n  - {name: g0, kind: gpu}\nlinks: []\n",
                         &err, path), DS_OK, "%s", err.msg);
  /* a switch without links beside two linked GPUs */
  cr_assert_eq(load_text(LIST_HEAD "  - {name: sw, kind: switch}\nlinks:\n"
                         "  - {from: g0, to: g1, bw: 1GBps, lat: 1us, kind: nvlink}\n",
                         &err, path), DS_OK, "%s", err.msg);
}


Test(topo, explicit_list_errors_name_file_line_and_key) {
  struct ds_err err = {0};
  char path[64], want[160];
  /* Unknown device in a link: line 10, the 'to' value. */
  cr_assert_eq(load_text(LIST_HEAD "links:\n"
                         "  - {from: g0, to: g9, bw: 1GBps, lat: 1us, kind: nvlink}\n",
                         &err, path), DS_EINPUT);
  snprintf(want, sizeof want, "%s:10:", path);
  cr_assert(strstr(err.msg, want) && strstr(err.msg, "key 'links[0].to': unknown device 'g9'"),
            "message: %s", err.msg);
  /* Duplicate name: the second one, line 8, says where the first is. */
  cr_assert_eq(load_text(GOOD_HEAD "devices:\n  - {name: g0, kind: gpu}\n"
                         "  - {name: g0, kind: gpu}\nlinks: []\n", &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, ":8:") && strstr(err.msg, "duplicate device name 'g0' "
            "(first at line 7)"), "message: %s", err.msg);
  /* GPU count: 2 per the head, 3 listed. */
  cr_assert_eq(load_text(LIST_HEAD "  - {name: g2, kind: gpu}\nlinks: []\n", &err, path),
               DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'devices': expected nodes x gpus_per_node = 2 GPUs, got 3"),
            "message: %s", err.msg);
  /* A bad kind of device and of link. */
  cr_assert_eq(load_text(LIST_HEAD "  - {name: s, kind: router}\nlinks: []\n", &err, path),
               DS_EINPUT);
  cr_assert(strstr(err.msg, ":9:") &&
            strstr(err.msg, "key 'devices[2].kind': expected gpu, switch, nic or cpu"),
            "message: %s", err.msg);
  cr_assert_eq(load_text(LIST_HEAD "links:\n"
                         "  - {from: g0, to: g1, bw: 1GBps, lat: 1us, kind: wifi}\n",
                         &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'links[0].kind': expected nvlink, pcie, qpi or ib"), "message: %s",
            err.msg);
  /* Two links the same way between one pair. */
  cr_assert_eq(load_text(LIST_HEAD "links:\n"
                         "  - {from: g0, to: g1, bw: 1GBps, lat: 1us, kind: nvlink}\n"
                         "  - {from: g1, to: g0, bw: 1GBps, lat: 1us, kind: nvlink}\n",
                         &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, ":11:") && strstr(err.msg, "a second link") &&
            strstr(err.msg, "count: 2"), "message: %s", err.msg);
  /* Templates beside a list, and GPUs out of node order. */
  cr_assert_eq(load_text(LIST_HEAD "links: []\nintra_node:\n  template: nvswitch\n",
                         &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'intra_node': not valid with an explicit"), "message: %s",
            err.msg);
  cr_assert_eq(load_text("schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 2\n"
                         "gpus_per_node: 1\ndevices:\n  - {name: g0, kind: gpu, node: 1}\n"
                         "  - {name: g1, kind: gpu, node: 0}\nlinks: []\n", &err, path),
               DS_EINPUT);
  cr_assert(strstr(err.msg, ":7:") && strstr(err.msg, "GPU 0 ('g0') is on node 1"),
            "message: %s", err.msg);
  /* No links at all: the first GPU is refused at its line (issue #12; it
   * was "GPU 0 'g0' cannot reach GPU 1 'g1'", naming the file alone). */
  cr_assert_eq(load_text(LIST_HEAD "links: []\n", &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, ":7:12: key 'devices[0].name': GPU 0 'g0' has no links, so it cannot "
                   "communicate with the other GPU"), "message: %s", err.msg);
}

Test(topo, new_template_keys_are_checked) {
  struct ds_err err = {0};
  char path[64];
  /* p2p belongs to pcie-switch only. */
  cr_assert_eq(load_text(GOOD_HEAD "intra_node:\n  template: nvswitch\n  link_bw: 1GBps\n"
                         "  link_lat: 1us\n  p2p: false\n", &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'intra_node.p2p': only valid with template pcie-switch"),
            "message: %s", err.msg);
  /* gpus_per_nic x nics_per_node must cover the node's GPUs exactly. */
  const char *two_nodes = "schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 2\n"
                          "gpus_per_node: 4\nintra_node:\n  template: nvswitch\n"
                          "  link_bw: 1GBps\n  link_lat: 1us\ninter_node:\n  template: ib\n"
                          "  nics_per_node: 2\n  nic_bw: 1GBps\n  nic_lat: 1us\n"
                          "  gpu_nic_bw: 1GBps\n  gpu_nic_lat: 1us\n";
  char text[1024];
  snprintf(text, sizeof text, "%s  gpus_per_nic: 3\n", two_nodes);
  cr_assert_eq(load_text(text, &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'inter_node.gpus_per_nic'") && strstr(err.msg, "3 x 2 is not 4"),
            "message: %s", err.msg);
  snprintf(text, sizeof text, "%s  fat_tree:\n    nodes_per_leaf: 1\n"
           "    oversubscription: 0.5\n    uplink_lat: 1us\n", two_nodes);
  cr_assert_eq(load_text(text, &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'inter_node.fat_tree.oversubscription'"), "message: %s", err.msg);
  snprintf(text, sizeof text, "%s  fat_tree:\n    nodes_per_leaf: 1\n", two_nodes);
  cr_assert_eq(load_text(text, &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'inter_node.fat_tree': missing key 'uplink_lat'"),
            "message: %s", err.msg);
}

/* Loads a topology text with the shipped GPU table; returns its nvls flag,
 * or -1 when loading failed (message in err). */
static int nvls_of(const char *text, struct ds_err *err) {
  char path[] = "/tmp/ddpsim-topo-nvls-XXXXXX";
  ds_test_write_temp(path, text);
  struct ds_topo *t = NULL;
  ds_status st = ds_topo_load(path, "topologies/gpus.yaml", &t, err);
  int nvls = st == DS_OK ? t->nvls : -1;
  ds_topo_free(t);
  unlink(path);
  return nvls;
}

Test(topo, nvls_switch_by_gpu_generation_or_key) {
  /* NVLS needs NVSwitch 3: on by default for nvswitch boxes of Hopper and
   * later, off for A100's and for any other template; the key overrides it
   * on nvswitch and is an error elsewhere, naming its line. */
  struct ds_topo *h100 = load_ok("topologies/dgx-h100.yaml");
  struct ds_topo *a100 = load_ok("topologies/dgx-a100.yaml");
  struct ds_topo *mesh = load_ok("topologies/4gpu.yaml");
  cr_assert(h100->nvls);
  cr_assert(!a100->nvls);
  cr_assert(!mesh->nvls);
  ds_topo_free(h100);
  ds_topo_free(a100);
  ds_topo_free(mesh);
  struct ds_err err = {0};
#define NVLS_HEAD "schema_version: 1\nname: t\ngpu: H100-SXM5-80GB\nnodes: 1\n" \
                  "gpus_per_node: 2\nintra_node:\n"
#define NVLS_LINKS "  link_bw: 1GBps\n  link_lat: 1us\n"
  cr_assert_eq(nvls_of(NVLS_HEAD "  template: nvswitch\n" NVLS_LINKS "  nvls: false\n", &err),
               0, "%s", err.msg);
  cr_assert_eq(nvls_of(NVLS_HEAD "  template: nvswitch\n" NVLS_LINKS, &err), 1, "%s", err.msg);
  cr_assert_eq(nvls_of(NVLS_HEAD "  template: nvlink-mesh\n" NVLS_LINKS "  nvls: true\n", &err),
               -1);
  cr_assert(strstr(err.msg, ":10:") && strstr(err.msg, "nvswitch"), "%s", err.msg);
}

Test(topo, cached_routes_are_the_routes_a_search_finds) {
  /* ds_topo_route caches routes by GPU pair, direct-mapped: asked again, in
   * another order, after other pairs have evicted some, every route must
   * still be the one a topology that never searched before finds. 4096
   * GPUs x 4 pairs each fill the cache's slots several times over. */
  struct ds_topo *a = load_ok("topologies/cluster-512x8-h100.yaml");
  int32_t n = a->n_gpus, la[64], lb[64], na, nb;
  struct ds_err err = {0};
  for (int pass = 0; pass < 2; pass++)
    for (int32_t g = 0; g < n; g++)
      for (int32_t k = 1; k <= 4; k++) {
        int32_t src = pass ? n - 1 - g : g, dst = (src + k * 997) % n;
        cr_assert_eq(ds_topo_route(a, src, dst, la, 64, &na, &err), DS_OK, "%s", err.msg);
        if (g % 251 != 0) continue; /* a fresh topology for a sample of pairs */
        struct ds_topo *b = load_ok("topologies/cluster-512x8-h100.yaml");
        cr_assert_eq(ds_topo_route(b, src, dst, lb, 64, &nb, &err), DS_OK, "%s", err.msg);
        cr_assert_eq(na, nb, "%d -> %d", src, dst);
        cr_assert_arr_eq(la, lb, (size_t)na * sizeof *la, "%d -> %d", src, dst);
        ds_topo_free(b);
      }
  ds_topo_free(a);
}
