/*
 * `ddpsim topo import`: NCCL topology XML and `nvidia-smi topo -m` inputs
 * (tests/data/topo_import, written for these tests in the formats NCCL and
 * nvidia-smi print) against golden YAML (tests/golden/topo_import); the
 * imported files load and simulate, and where they describe a shipped
 * machine they simulate exactly as its hand-written file does; bad inputs
 * are located errors with exit status 2. Also the GPU table a user's own
 * gpus.yaml adds to or overrides.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/net/gpu_table.h"
#include "tests/support.h"

#define D "tests/data/topo_import/"
#define G "tests/golden/topo_import/"

static void golden(const char *args, const char *golden_path) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  char *want = ds_test_slurp(golden_path);
  cr_assert_str_eq(r.out, want, "%s differs from %s", args, golden_path);
  free(want);
  ds_test_release(&r);
}

Test(topo_import, nccl_xml_goldens) {
  golden("topo import " D "dgx-a100.xml", G "dgx-a100.yaml");
  golden("topo import " D "dgx-a100.xml --nodes 2 --name dgx-a100-2node", G "dgx-a100-2node.yaml");
  golden("topo import " D "pcie-a100-bridged.xml", G "pcie-a100-bridged.yaml");
  golden("topo import " D "pcie-a100-bridged.xml " D "pcie-a100-bridged.xml --nic 2x200Gbps "
         "--name pcie-a100-bridged-2node", G "pcie-a100-bridged-2node.yaml");
}

Test(topo_import, nvidia_smi_goldens) {
  golden("topo import " D "hgx-a100-4gpu.txt", G "hgx-a100-4gpu.yaml");
  golden("topo import " D "dgx-h100.txt", G "dgx-h100.yaml");
  golden("topo import " D "rtx4090-2gpu.txt --gpu RTX4090-24GB", G "rtx4090-2gpu.yaml");
  /* The documented recipe: `nvidia-smi topo -m > m.txt; nvidia-smi -L >>
   * m.txt`, so the -L lines come after the legend real `topo -m` output
   * ends with (the reader stopped at the legend and never saw them). */
  golden("topo import " D "dgx-h100-appended.txt", G "dgx-h100-appended.yaml");
}

Test(topo_import, nvidia_smi_names_of_older_drivers_without_vendor_words) {
  /* Older drivers print GeForce cards without "NVIDIA " (`nvidia-smi
   * -L`: "GPU 0: GeForce RTX 3090 (UUID: ...)"); the table's smi_names have
   * the newer drivers' "NVIDIA GeForce RTX 3090". Expected, because the
   * file's name is read as a --calib file's gpu is
   * (ds_gpu_table_by_device_name): RTX3090-24GB, named from the file. */
  char *matrix = ds_test_slurp(D "rtx4090-2gpu.txt");
  size_t cap = strlen(matrix) + 256;
  char *text = malloc(cap), path[] = "/tmp/ddpsim-smi-old-XXXXXX", args[128];
  cr_assert_not_null(text);
  snprintf(text, cap, "%s\nGPU 0: GeForce RTX 3090 (UUID: GPU-00000000-0000-0000-0000-0000000000"
           "00)\nGPU 1: GeForce RTX 3090 (UUID: GPU-00000001-0000-0000-0000-000000000000)\n",
           matrix);
  ds_test_write_temp(path, text);
  snprintf(args, sizeof args, "topo import %s", path);
  struct ds_test_result r = ds_test_cli(args);
  unlink(path);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  cr_assert(strstr(r.out, "\ngpu: RTX3090-24GB\n"), "%s", r.out);
  cr_assert(strstr(r.out, "from nvidia-smi name \"GeForce RTX 3090\""), "%s", r.out);
  ds_test_release(&r);
  free(text);
  free(matrix);
}

Test(topo_import, gpu_named_as_nvidia_smi_names_it_with_or_without_vendor_words) {
  /* --gpu takes a device's name as a --calib file's gpu key does
   * (ds_gpu_table_by_device_name): the table's name, nvidia-smi's, or
   * nvidia-smi's without its vendor words where those end one GPU's smi
   * name only. Expected, because each names RTX4090-24GB: the file written
   * is the one --gpu RTX4090-24GB writes (its gpu_why line names the
   * table's name). */
  golden("topo import " D "rtx4090-2gpu.txt --gpu \"NVIDIA GeForce RTX 4090\"",
         G "rtx4090-2gpu.yaml");
  golden("topo import " D "rtx4090-2gpu.txt --gpu \"GeForce RTX 4090\"", G "rtx4090-2gpu.yaml");
  golden("topo import " D "rtx4090-2gpu.txt --gpu \"rtx 4090\"", G "rtx4090-2gpu.yaml");
  /* words ending two GPUs' smi names (the A100 80GB's and the H100's
   * "PCIe") name neither: refused, not a guess; and words that do not end
   * a name ("GeForce RTX") are no match either */
  ds_test_ddpsim_refuses("topo import " D "rtx4090-2gpu.txt --gpu PCIe",
                         "option --gpu: unknown GPU 'PCIe' (");
  ds_test_ddpsim_refuses("topo import " D "rtx4090-2gpu.txt --gpu \"GeForce RTX\"",
                         "option --gpu: unknown GPU 'GeForce RTX' (");
}

/* The CSV row of a run, without the topology's name (column 3). */
static char *run_row(const char *topo) {
  char args[512];
  snprintf(args, sizeof args, "--topo %s --bucket-mb 25 --format csv", topo);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  const char *row = ds_test_csv_row(r.out, 0);
  const char *c2 = strchr(strchr(row, ',') + 1, ',') + 1, *c3 = strchr(c2, ',');
  char *out = malloc(strlen(row) + 1);
  cr_assert(out != NULL);
  snprintf(out, strlen(row) + 1, "%.*s%s", (int)(c2 - row), row, c3);
  ds_test_release(&r);
  return out;
}

Test(topo_import, imports_of_shipped_machines_simulate_as_their_shipped_files) {
  /* Expected, because the inputs describe those machines: DGX A100 (12
   * NVLink3 per GPU into 6 NVSwitches, 12 x 25 = 300 GB/s, as dgx-a100.yaml),
   * HGX A100 4-GPU (NV4 = 4 x 25 = 100 GB/s per pair, as 4gpu.yaml), DGX
   * H100 (NV18 to every GPU: 18 x 25 = 450 GB/s into a switch, as
   * dgx-h100.yaml); latencies are the shipped files', and the shipped
   * files' compute sections are the defaults. */
  const char *pairs[][2] = {{G "dgx-a100.yaml", "dgx-a100"},
                            {G "hgx-a100-4gpu.yaml", "4gpu"},
                            {G "dgx-h100.yaml", "dgx-h100"},
                            {G "dgx-h100-appended.yaml", "dgx-h100"}};
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
    char *a = run_row(pairs[i][0]), *b = run_row(pairs[i][1]);
    cr_assert_str_eq(a, b, "%s vs %s", pairs[i][0], pairs[i][1]);
    free(a);
    free(b);
  }
}

Test(topo_import, every_golden_loads_and_runs) {
  const char *files[] = {"dgx-a100-2node", "pcie-a100-bridged", "pcie-a100-bridged-2node",
                         "rtx4090-2gpu"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[256];
    snprintf(path, sizeof path, G "%s.yaml", files[i]);
    free(run_row(path));
  }
}

static void topo_says(const char *args, const char *want) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  cr_assert(strstr(r.out, want), "%s: want \"%s\" in\n%s", args, want, r.out);
  ds_test_release(&r);
}

Test(topo_import, routes_of_the_imported_trees) {
  /* pcie-a100-bridged: GPUs 1 and 2 are on different sockets: GPU -> switch
   * -> CPU -> CPU -> switch -> GPU, bound by NCCL's Skylake inter-CPU 10
   * GB/s (the XML's modelid 85 = 0x55), 5 links of 1.5 us. */
  topo_says("topo " G "pcie-a100-bridged.yaml --from 1 --to 2",
            "5 links, bottleneck 10.0 GB/s, latency 7.50 us");
  /* The bridged pair: 12 NVLink3 links, 300 GB/s, one 3.4 us link. */
  topo_says("topo " G "pcie-a100-bridged.yaml --from 0 --to 1",
            "1 link, bottleneck 300.0 GB/s, latency 3.40 us");
  /* dgx-a100 x 2: a 200000 Mb/s NIC is 25 GB/s; GPU -> NIC -> switch ->
   * NIC -> GPU is 1 + 6 + 6 + 1 = 14 us; the GPU's NIC link is the NIC's
   * PCIe Gen4 x16, 32 GB/s. */
  topo_says("topo " G "dgx-a100-2node.yaml --from 0 --to 8",
            "gpu0 -[pcie 32 GB/s]-> nic0@node0 -[ib 25 GB/s]-> switch0@fabric");
  topo_says("topo " G "dgx-a100-2node.yaml --from 0 --to 8",
            "4 links, bottleneck 25.0 GB/s, latency 14.00 us");
  /* rtx4090-2gpu: SYS, each card on its own socket at Gen4 x16 (32 GB/s)
   * and the assumed 10 GB/s between the CPUs. */
  topo_says("topo " G "rtx4090-2gpu.yaml", "3 links, bottleneck 10.0 GB/s, latency 4.50 us");
}

Test(topo_import, a_hand_written_topo_file_needs_the_gpu_and_the_nic_speed) {
  /* No device ids, no <gpu> (so no NVLink known), a NIC without <nic>. */
  ds_test_ddpsim_refuses("topo import " D "hand-written.xml",
                         D "hand-written.xml:7: <pci> key 'device': expected the GPU's PCI device "
                           "id (\"0x20b2\"); this file has none: pass --gpu NAME");
  ds_test_ddpsim_refuses("topo import " D "hand-written.xml --gpu A100-SXM4-40GB --nodes 2",
                         D "hand-written.xml:8: key '0101:00:00.0': expected the NIC's speed (the "
                           "file has none): pass --nic COUNTxBW (e.g. --nic 8x400Gbps)");
  char path[] = "/tmp/ddpsim-import-XXXXXX", args[512];
  ds_test_write_temp(path, "");
  snprintf(args, sizeof args, "topo import " D "hand-written.xml --gpu A100-SXM4-40GB --nodes 2 "
           "--nic 200Gbps -o %s", path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  /* GPU 0 to GPU 2 (node 1): GPU -> switch -> NIC at 32 GB/s (Gen4 x16),
   * NIC -> fabric -> NIC at 200 Gb/s = 25 GB/s; 1.5 + 1.5 + 6 + 6 + 1.5 +
   * 1.5 us. */
  snprintf(args, sizeof args, "topo %s --from 0 --to 2", path);
  topo_says(args, "6 links, bottleneck 25.0 GB/s, latency 18.00 us");
  unlink(path);
}

Test(topo_import, bad_inputs_are_located_errors) {
  const char *cases[][2] = {
      {D "bad-malformed.xml", D "bad-malformed.xml:7: malformed XML: Premature end of data in tag "
                              "system line 1"},
      {D "bad-device.xml", D "bad-device.xml:3: <pci> key 'device': expected a PCI device id of the "
                           "GPU table; 0x1234 is none: add it to a GPU's pci_ids in your "
                           "gpus.yaml, or pass --gpu NAME"},
      /* a missing attribute says so (it read as a bad value) */
      {D "bad-speed.xml", D "bad-speed.xml:3: <pci> key 'link_speed': expected a PCIe link speed "
                          "(\"16.0 GT/s PCIe\"), the attribute is missing"},
      {D "bad-width.xml", D "bad-width.xml:3: <pci> key 'link_width': expected an integer, the "
                          "attribute is missing"},
      {D "bad-nvlink.xml", D "bad-nvlink.xml:5: <nvlink> key 'target': expected the bus id of a "
                           "GPU in this file, got \"0000:99:00.0\""},
      {D "bad-cell.txt", D "bad-cell.txt:2: key 'GPU0': expected X on the diagonal, else NV#, PIX, "
                         "PXB, PHB, NODE or SYS (column GPU1), got \"PIQ\""},
      {D "bad-asymmetric.txt", D "bad-asymmetric.txt:2: key 'GPU0': expected a symmetric matrix: "
                               "GPU0/GPU1 is NV4 but GPU1/GPU0 is PIX"},
      {D "bad-header.txt", D "bad-header.txt:5: key 'GPU3': expected a column for every row's "
                           "device (GPU3's row is line 9; the header lists 4)"},
      {D "bad-name.txt", D "bad-name.txt:1: key 'GPU 0': expected a GPU of the table (smi_names), "
                         "got \"NVIDIA Z80\": add it to a GPU's smi_names in your gpus.yaml, or "
                         "pass --gpu NAME"},
      /* a second GPU model: the topology has one gpu, and the XML reader
       * refuses it too (GPU 0's name was taken for every GPU, exit 0) */
      {D "bad-mixed.txt", D "bad-mixed.txt:2: key 'GPU 1': expected one GPU model per machine: "
                          "\"NVIDIA A100-PCIE-80GB\" here, \"NVIDIA A100-SXM4-80GB\" at line 1 "
                          "(or pass --gpu NAME)"},
      {D "bad-neither.txt", D "bad-neither.txt:1: key 'GPU0': expected an `nvidia-smi topo -m` "
                            "matrix (a header line of GPU0 GPU1 ... CPU Affinity) or an NCCL "
                            "topology XML"},
      {D "rtx4090-2gpu.txt", D "rtx4090-2gpu.txt:1: key 'gpu': expected the GPU model: "
                             "`nvidia-smi -L` lines (\"GPU 0: NAME (UUID: ...)\") in the file, or "
                             "--gpu NAME"},
      {D "hgx-a100-4gpu.txt --nodes 2", D "hgx-a100-4gpu.txt:10: key 'mlx5_0': expected the NIC's "
                                        "speed (the file has none): pass --nic COUNTxBW (e.g. "
                                        "--nic 8x400Gbps)"},
      {D "rtx4090-2gpu.txt --gpu RTX4090-24GB --nodes 2",
       D "rtx4090-2gpu.txt: no NICs in the file: pass --nic COUNTxBW (e.g. --nic 8x400Gbps) to "
         "join 2 nodes"},
      {D "dgx-a100.xml " D "pcie-a100-bridged.xml",
       D "pcie-a100-bridged.xml: expected the GPUs of " D "dgx-a100.xml (8 x A100-SXM4-80GB), got "
         "4 x A100-PCIE-80GB"},
      {D "dgx-a100.xml " D "dgx-a100.xml --nodes 3",
       "option --nodes: 2 files describe 2 nodes, got --nodes 3"},
      {D "dgx-a100.xml --gpu Z80", "option --gpu: unknown GPU 'Z80' (known: V100-SXM2-16GB,"},
      {D "dgx-a100.xml --nic 8x", "option --nic: expected COUNTxBW (8x400Gbps) or a bandwidth "
                                  "(400Gbps), got \"8x\""},
      /* a bare 200 would be 200 B/s: 1.6e-06Gbps in the file, 33 h an iteration */
      {D "dgx-a100.xml --nodes 2 --nic 8x200",
       "option --nic: expected the bandwidth with its unit, got \"8x200\": write the unit you "
       "mean, e.g. 8x200Gbps (bits, as NICs are sold) or 8x200GBps"},
      {D "dgx-a100.xml --nodes 2 --nic 400", "got \"400\": write the unit you mean, e.g. "
                                             "400Gbps (bits, as NICs are sold) or 400GBps"},
      /* more NVLinks than the GPU has (A100: 12), over its lines: 6 to a
       * GPU, then 8 into the NVSwitches; and a bus id given twice (both
       * imported silently before) */
      {D "bad-nvlink-count.xml", D "bad-nvlink-count.xml:6: <nvlink> key 'count': expected at "
                                 "most 12 NVLinks on this GPU in all (the GPU table's "
                                 "nvlink_links for A100-PCIE-80GB), got 14 (8 here)"},
      {D "bad-busid.xml", D "bad-busid.xml:6: <pci> key 'busid': expected each PCI bus id once, "
                          "got \"0000:18:00.0\" again (first at line 3)"},
      /* the matrix's NV#: one cell above the GPU's links, or a row's direct
       * links adding up past them */
      {D "bad-nv-count.txt", D "bad-nv-count.txt:6: key 'GPU0': expected at most NV12 (the GPU "
                             "table's nvlink_links for A100-SXM4-80GB), got NV13 (column GPU1)"},
      {D "bad-nv-sum.txt", D "bad-nv-sum.txt:6: key 'GPU0': expected NV# cells adding up to at "
                           "most 12 (the GPU table's nvlink_links for A100-SXM4-80GB; an "
                           "NVSwitch machine shows NV12 to every GPU), got 13"},
      /* one node: its NICs are left out (they carry nothing inside it), so
       * --nic changed nothing and the file was the same byte for byte */
      {D "dgx-a100.xml --nic 8x200Gbps",
       "option --nic 8x200Gbps: one node (one FILE and no --nodes, or --nodes 1), whose "
       "topology leaves its NICs "
       "out (they carry nothing inside a node); it would be ignored: give --nodes N or one "
       "FILE per node"},
      {D "dgx-h100.txt --nodes 1 --nic 400Gbps",
       "option --nic 400Gbps: one node (one FILE and no --nodes, or --nodes 1), whose"},
      /* what the topology reader refuses is not written: 2049 nodes of 8
       * (16392 GPUs; --nodes 65536 wrote 524288, exit 0) and 65 NICs a
       * node on 8 GPUs (written as nics_per_node: 65) */
      {D "dgx-h100.txt --nodes 2049 --nic 8x400Gbps",
       "option --nodes: 2049 nodes x 8 GPUs = 16392 GPUs; a topology holds at most 16384 "
       "(give 2048 nodes or fewer)"},
      {D "dgx-h100.txt --nodes 2 --nic 65x400Gbps",
       "option --nic 65x400Gbps: 65 NICs a node on 8 GPUs: the ib template has at most one "
       "NIC per GPU (a multiple of 8 is bundled as 8 faster ones): give 8 NICs or fewer, or "
       "a multiple of 8"},
      {D "missing.xml", D "missing.xml: cannot read: No such file or directory"},
      {"", "ddpsim topo import: missing FILE (see --help)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[512];
    snprintf(args, sizeof args, "topo import %s", cases[i][0]);
    ds_test_ddpsim_refuses(args, cases[i][1]);
  }
}

Test(topo_import, a_failed_import_leaves_the_output_file_alone) {
  char path[] = "/tmp/ddpsim-import-XXXXXX", args[512];
  ds_test_write_temp(path, "before\n");
  snprintf(args, sizeof args, "topo import " D "bad-device.xml -o %s", path);
  ds_test_ddpsim_refuses(args, "key 'device'");
  char *text = ds_test_slurp(path);
  cr_assert_str_eq(text, "before\n");
  free(text);
  snprintf(args, sizeof args, "topo import " D "dgx-a100.xml -o %s", path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  text = ds_test_slurp(path);
  char *want = ds_test_slurp(G "dgx-a100.yaml");
  cr_assert_str_eq(text, want);
  free(text);
  free(want);
  unlink(path);
}

/* -o naming one of the inputs (a FILE, the GPU table) is refused before
 * anything is read or written: `topo import m.xml -o m.xml` replaced the
 * machine's own description with the YAML, exit 0. */
Test(topo_import, an_output_that_is_an_input_is_refused) {
  char path[] = "/tmp/ddpsim-import-XXXXXX", args[512];
  char *xml = ds_test_slurp(D "dgx-a100.xml");
  ds_test_write_temp(path, xml);
  snprintf(args, sizeof args, "topo import %s -o %s", path, path);
  char want[256];
  snprintf(want, sizeof want, "option -o/--output %s: would overwrite the input of FILE %s", path,
           path);
  ds_test_ddpsim_refuses(args, want);
  snprintf(args, sizeof args, "topo import " D "dgx-a100.xml %s --output %s", path, path);
  ds_test_ddpsim_refuses(args, want);
  char *text = ds_test_slurp(path);
  cr_assert_str_eq(text, xml, "the input was changed");
  free(text);
  free(xml);
  unlink(path);
  ds_test_ddpsim_refuses("topo import " D "dgx-a100.xml --gpus topologies/gpus.yaml "
                         "-o topologies/gpus.yaml",
                         "option -o/--output topologies/gpus.yaml: would overwrite the input of "
                         "--gpus topologies/gpus.yaml");
}

/* ---- the GPU table: shipped entries, and a user's table over them ---- */

static void put(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *fp = fopen(path, "w");
  cr_assert(fp != NULL, "%s", path);
  fputs(text, fp);
  fclose(fp);
}

static const char user_table[] =
    "schema_version: 1\n"
    "gpus:\n"
    "  - name: A100-SXM4-80GB\n"      /* overrides the shipped entry */
    "    sms: 108\n    fp32: 19.5TFLOPS\n    fp16: 312TFLOPS\n"
    "    mem: 80GiB\n    mem_bw: 1000GBps\n"
    "  - name: MyGPU\n"               /* a new GPU, importable by its id */
    "    sms: 10\n    fp32: 10TFLOPS\n    fp16: 20TFLOPS\n    mem: 8GiB\n    mem_bw: 500GBps\n"
    "    pcie_bw: 16GBps\n    pci_ids: [\"0x1234\"]\n";

Test(gpu_table, a_users_table_adds_to_and_overrides_the_shipped_one) {
  char dir[] = "/tmp/ddpsim-gpus-XXXXXX";
  cr_assert(mkdtemp(dir) != NULL);
  put(dir, "gpus.yaml", user_table);
  char path[512];
  snprintf(path, sizeof path, "%s/gpus.yaml", dir);
  struct ds_gpu_table t;
  struct ds_err err = {0};
  cr_assert_eq(ds_gpu_table_load(path, &t, &err), DS_OK, "%s", err.msg);
  /* 21 shipped entries; one replaced, one added. */
  cr_assert_eq(t.n, 22);
  const struct ds_gpu_info *a = ds_gpu_table_find(&t, "A100-SXM4-80GB");
  cr_assert(a != NULL);
  cr_assert_float_eq(a->spec.mem_bw_bytes_per_s, 1000e9, 1);
  cr_assert_str_eq(a->table, path);
  cr_assert_eq(a->n_pci_ids, 0, "replaced whole: the shipped ids are gone");
  const struct ds_gpu_info *h = ds_gpu_table_find(&t, "H100-SXM5-80GB");
  cr_assert(h != NULL && h->nvlink_links == 18 && h->nvlink_gen == 4);
  cr_assert_str_eq(h->table, "topologies/gpus.yaml");
  cr_assert_eq(ds_gpu_table_by_pci_id(&t, "0x1234"), ds_gpu_table_find(&t, "MyGPU"));
  cr_assert_eq(ds_gpu_table_by_pci_id(&t, "0x2330"), h);
  cr_assert_eq(ds_gpu_table_by_smi_name(&t, "nvidia h100 80gb hbm3"), h);
  ds_gpu_table_release(&t);

  /* A topology beside it: the overridden entry's bandwidth, a shipped one
   * untouched, and the new GPU all load. */
  char *dgx = ds_test_slurp("topologies/dgx-a100.yaml");
  put(dir, "a.yaml", dgx);
  free(dgx);
  char *h100 = ds_test_slurp("topologies/dgx-h100.yaml");
  put(dir, "h.yaml", h100);
  free(h100);
  char args[1024];
  snprintf(args, sizeof args, "topo %s/a.yaml", dir);
  topo_says(args, "A100-SXM4-80GB x 8 (1 node x 8), 108 SMs, 80.0 GiB, memory 1000 GB/s");
  snprintf(args, sizeof args, "topo %s/h.yaml", dir);
  topo_says(args, "H100-SXM5-80GB x 8 (1 node x 8), 132 SMs, 79.6 GiB, memory 3350 GB/s");

  /* The import finds MyGPU by its PCI id through the table beside the XML. */
  char *xml = ds_test_slurp(D "bad-device.xml");
  put(dir, "mine.xml", xml);
  free(xml);
  snprintf(args, sizeof args, "topo import %s/mine.xml", dir);
  snprintf(path, sizeof path, "# GPU: MyGPU, from PCI device id 0x1234 (line 3) in %s/gpus.yaml.",
           dir);
  topo_says(args, path);
  snprintf(args, sizeof args, "rm -rf %s", dir);
  cr_assert_eq(system(args), 0);
}

Test(gpu_table, a_name_twice_in_one_file_is_an_error) {
  char path[] = "/tmp/ddpsim-gpus-XXXXXX";
  ds_test_write_temp(path,
                     "schema_version: 1\ngpus:\n"
                     "  - {name: X, sms: 1, fp32: 1TFLOPS, fp16: 1TFLOPS, mem: 1GB, mem_bw: 1GBps}\n"
                     "  - {name: X, sms: 1, fp32: 1TFLOPS, fp16: 1TFLOPS, mem: 1GB, mem_bw: 1GBps}\n");
  struct ds_gpu_table t;
  struct ds_err err = {0};
  cr_assert_eq(ds_gpu_table_load(path, &t, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, ":4:") && strstr(err.msg, "GPU 'X' is listed twice (first at line 3)"),
            "%s", err.msg);
  unlink(path);
}

Test(gpu_table, import_facts_are_validated) {
  char path[] = "/tmp/ddpsim-gpus-XXXXXX";
  ds_test_write_temp(path,
                     "schema_version: 1\ngpus:\n"
                     "  - {name: X, sms: 1, fp32: 1TFLOPS, fp16: 1TFLOPS, mem: 1GB, mem_bw: 1GBps,\n"
                     "     pci_ids: [\"20b2\"]}\n");
  struct ds_gpu_table t;
  struct ds_err err = {0};
  cr_assert_eq(ds_gpu_table_load(path, &t, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, ":4:") &&
                strstr(err.msg, "expected a PCI device id of 4 hex digits (\"0x20b2\")"),
            "%s", err.msg);
  unlink(path);
}

Test(gpu_table, every_shipped_gpu_has_its_import_facts) {
  /* Expected, because tools/gen_gpus.py writes them for every entry: an
   * NVLink GPU has its links (so a link's rate is nvlink_bw / links), and
   * every GPU a PCI id and an nvidia-smi name. */
  struct ds_gpu_table t;
  struct ds_err err = {0};
  cr_assert_eq(ds_gpu_table_load("topologies/gpus.yaml", &t, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(t.n, 21);
  for (size_t i = 0; i < t.n; i++) {
    const struct ds_gpu_info *g = &t.gpus[i];
    cr_assert(g->n_pci_ids >= 1 && g->n_smi_names >= 1, "%s", g->spec.name);
    cr_assert_eq(g->nvlink_gen > 0, g->nvlink_bw > 0, "%s", g->spec.name);
    cr_assert_eq(g->nvlink_gen > 0, g->nvlink_links > 0, "%s", g->spec.name);
    cr_assert(g->pcie_bw > 0, "%s", g->spec.name);
  }
  /* Per-link rates: NVLink2-4 25 GB/s, NVLink5 50, GA102's bridge 14.0625. */
  const char *names[] = {"V100-SXM2-16GB", "A100-SXM4-80GB", "H100-SXM5-80GB",
                         "B200-SXM-180GB", "RTX3090-24GB"};
  const double per_link[] = {25e9, 25e9, 25e9, 50e9, 14.0625e9};
  for (int i = 0; i < 5; i++) {
    const struct ds_gpu_info *g = ds_gpu_table_find(&t, names[i]);
    cr_assert(g != NULL, "%s", names[i]);
    cr_assert_float_eq(g->nvlink_bw / g->nvlink_links, per_link[i], 1, "%s", names[i]);
  }
  ds_gpu_table_release(&t);
}

Test(gpu_table, the_compute_capability_gives_threads_per_sm) {
  /* Expected, because the CUDA programming guide's table gives 2048
   * resident threads an SM to 7.0, 8.0, 9.0 and 10.0, 1536 to 8.6, 8.9 and
   * 12.0, 1024 to 7.5; tools/gen_gpus.py writes every shipped GPU's
   * compute capability (the CSV's column, its own table's cc). */
  struct ds_gpu_table t;
  struct ds_err err = {0};
  cr_assert_eq(ds_gpu_table_load("topologies/gpus.yaml", &t, &err), DS_OK, "%s", err.msg);
  static const struct {
    const char *name;
    int32_t cc, threads;
  } want[] = {{"V100-SXM2-16GB", 70, 2048}, {"A100-SXM4-80GB", 80, 2048},
              {"H100-SXM5-80GB", 90, 2048}, {"H200-SXM-141GB", 90, 2048},
              {"B200-SXM-180GB", 100, 2048}, {"GB200-186GB", 100, 2048},
              {"A10-24GB", 86, 1536},
              {"A40-48GB", 86, 1536},       {"RTX3090-24GB", 86, 1536},
              {"L4-24GB", 89, 1536},        {"L40S-48GB", 89, 1536},
              {"RTX4090-24GB", 89, 1536},   {"RTX5090-32GB", 120, 1536},
              {"RTX2080Ti-11GB", 75, 1024}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    const struct ds_gpu_info *g = ds_gpu_table_find(&t, want[i].name);
    cr_assert(g != NULL, "%s", want[i].name);
    cr_assert_eq(g->spec.compute_capability, want[i].cc, "%s", want[i].name);
    cr_assert_eq(ds_gpu_max_threads_per_sm(&g->spec), want[i].threads, "%s", want[i].name);
  }
  for (size_t i = 0; i < t.n; i++)
    cr_assert(ds_gpu_max_threads_per_sm(&t.gpus[i].spec) > 0, "%s", t.gpus[i].spec.name);
  ds_gpu_table_release(&t);
  /* Expected, because a capability the table lacks takes its family's
   * nearest listed one below (gpu_table.c): 12.1 -> 12.0's 1536, 8.7 ->
   * 8.6's 1536, 10.3 and 11.0 -> 10.0's 2048, 7.2 -> 7.0's 2048; 13.0 is
   * in no family: unknown (0) */
  static const struct {
    int32_t cc, threads;
  } unlisted[] = {{121, 1536}, {87, 1536}, {103, 2048}, {110, 2048}, {72, 2048}, {130, 0}};
  for (size_t i = 0; i < sizeof unlisted / sizeof *unlisted; i++) {
    struct ds_gpu_spec u = {.compute_capability = unlisted[i].cc};
    cr_assert_eq(ds_gpu_max_threads_per_sm(&u), unlisted[i].threads, "%d", unlisted[i].cc);
  }
  /* no compute capability: the family's where its listed ones agree */
  struct ds_gpu_spec g = {.arch = "Blackwell"};
  cr_assert_eq(ds_gpu_max_threads_per_sm(&g), 0);
  g = (struct ds_gpu_spec){.arch = "Ampere"};
  cr_assert_eq(ds_gpu_max_threads_per_sm(&g), 0);
  g = (struct ds_gpu_spec){.arch = "Turing"};
  cr_assert_eq(ds_gpu_max_threads_per_sm(&g), 1024);
  g = (struct ds_gpu_spec){.arch = "Ada"};
  cr_assert_eq(ds_gpu_max_threads_per_sm(&g), 1536);
}

Test(gpu_table, a_compute_capability_outside_its_family_is_refused) {
  /* Expected, because Hopper owns 9.0 to 9.9 and Ampere 8.0 to 8.8
   * (gpu_table.c cc_families, from the CUDA programming guide); an unlisted
   * capability inside the family (Ampere's 8.7) loads */
  static const struct {
    const char *arch, *cc, *expected;
  } cases[] = {{"Hopper", "8.9", "expected 9.0 to 9.9"},
               {"Ampere", "8.9", "expected 8.0 to 8.8"},
               {"Blackwell", "9.0", "expected 10.0 to 12.9"},
               {"Ampere", "8.7", NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[] = "/tmp/ddpsim-gpus-XXXXXX", text[512];
    snprintf(text, sizeof text,
             "schema_version: 1\ngpus:\n"
             "  - {name: X, arch: %s, sms: 1, fp32: 1TFLOPS, fp16: 1TFLOPS, mem: 1GB,\n"
             "     mem_bw: 1GBps, compute_capability: \"%s\"}\n",
             cases[i].arch, cases[i].cc);
    ds_test_write_temp(path, text);
    struct ds_gpu_table t;
    struct ds_err err = {0};
    ds_status st = ds_gpu_table_load(path, &t, &err);
    if (cases[i].expected) {
      cr_assert_eq(st, DS_EINPUT, "%s %s", cases[i].arch, cases[i].cc);
      cr_assert(strstr(err.msg, ":4:") && strstr(err.msg, "key 'gpus[0].compute_capability'") &&
                    strstr(err.msg, cases[i].expected),
                "%s %s: %s", cases[i].arch, cases[i].cc, err.msg);
    } else {
      cr_assert_eq(st, DS_OK, "%s", err.msg);
      cr_assert_eq(ds_gpu_max_threads_per_sm(&ds_gpu_table_find(&t, "X")->spec), 1536);
      ds_gpu_table_release(&t);
    }
    unlink(path);
  }
}

Test(gpu_table, a_bad_compute_capability_is_located) {
  static const char *const bad[] = {"8", "\"8.10\"", "x.y", "\"08.9\"", "\"123.0\"", "[8, 9]"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char path[] = "/tmp/ddpsim-gpus-XXXXXX", text[512];
    snprintf(text, sizeof text,
             "schema_version: 1\ngpus:\n"
             "  - {name: X, sms: 1, fp32: 1TFLOPS, fp16: 1TFLOPS, mem: 1GB, mem_bw: 1GBps,\n"
             "     compute_capability: %s}\n",
             bad[i]);
    ds_test_write_temp(path, text);
    struct ds_gpu_table t;
    struct ds_err err = {0};
    cr_assert_eq(ds_gpu_table_load(path, &t, &err), DS_EINPUT, "%s", bad[i]);
    cr_assert(strstr(err.msg, ":4:") && strstr(err.msg, "key 'gpus[0].compute_capability'"),
              "%s: %s", bad[i], err.msg);
    unlink(path);
  }
}

/* A --name that is not a plain YAML word (a colon, a comma, quotes, a
 * backslash) is written double-quoted and escaped, so the file loads and
 * names the topology exactly that (before, `name: a: b, ...` was a YAML
 * error on the next load). */
Test(topo_import, an_odd_name_reads_back_as_itself) {
  char dir[] = "/tmp/ddpsim-oddimport-XXXXXX", args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(args, sizeof args,
           "topo import " D "dgx-a100.xml --name 'a: b, \"c\"\\d' -o %s/t.yaml", dir);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  char path[512];
  snprintf(path, sizeof path, "%s/t.yaml", dir);
  char *text = ds_test_slurp(path);
  cr_assert(strstr(text, "\nname: \"a: b, \\\"c\\\"\\\\d\"\n"), "%s", text);
  free(text);
  snprintf(args, sizeof args,
           "--topo %s/t.yaml --world-size 1 --strategy single --format json", dir);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\"topology\": \"a: b, \\\"c\\\"\\\\d\""), "%s", r.out);
  ds_test_release(&r);
  unlink(path);
  rmdir(dir);
}

/* A file whose path is longer than 255 bytes (a deep directory) is named
 * whole in the written comments, and the topology takes its base name
 * (the node kept the path in 256 bytes, so both were cut silently and the
 * name came from the middle of a directory's). */
Test(topo_import, a_long_path_is_named_whole) {
  char dir[] = "/tmp/ddpsim-longimport-XXXXXX", deep[400], path[500], args[1200];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(deep, sizeof deep, "%s/%0200d", dir, 0);
  cr_assert_eq(mkdir(deep, 0700), 0, "%s", deep);
  snprintf(path, sizeof path, "%s/dgx-a100-with-a-long-name.xml", deep);
  cr_assert_gt(strlen(path), 255u);
  char *xml = ds_test_slurp(D "dgx-a100.xml");
  FILE *fp = fopen(path, "w");
  cr_assert(fp, "%s", path);
  fputs(xml, fp);
  cr_assert_eq(fclose(fp), 0);
  free(xml);
  snprintf(args, sizeof args, "topo import %s", path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char comment[600];
  snprintf(comment, sizeof comment, "\n#   %s (NCCL topology XML)\n", path);
  cr_assert(strstr(r.out, comment), "%s", r.out);
  cr_assert(strstr(r.out, "\nname: dgx-a100-with-a-long-name\n"), "%s", r.out);
  ds_test_release(&r);
  unlink(path);
  rmdir(deep);
  rmdir(dir);
}

/* Hosts whose first <cpu> differ (here AMD and Intel x86) are NCCL's MIXED
 * vendor on every rank (init.cc:1306-1307): `cpu_vendor: mixed`, AMD's LL
 * row but Intel's network overhead, where `amd` (before) doubled the
 * overhead. Two AMD hosts stay `amd`. The written file loads as said. */
Test(topo_import, hosts_of_two_cpu_vendors_are_mixed) {
  char dir[] = "/tmp/ddpsim-mixedimport-XXXXXX", intel[128], out[128], args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(intel, sizeof intel, "%s/intel.xml", dir);
  snprintf(out, sizeof out, "%s/m.yaml", dir);
  char *xml = ds_test_slurp(D "dgx-a100.xml");
  for (char *p = strstr(xml, "AuthenticAMD"); p; p = strstr(p, "AuthenticAMD"))
    memcpy(p, "GenuineIntel", 12);
  FILE *fp = fopen(intel, "w");
  cr_assert(fp, "%s", intel);
  fputs(xml, fp);
  cr_assert_eq(fclose(fp), 0);
  free(xml);
  snprintf(args, sizeof args, "topo import " D "dgx-a100.xml %s -o %s", intel, out);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  char *text = ds_test_slurp(out);
  cr_assert(strstr(text, "\ncpu_vendor: mixed  # "), "%s", text);
  free(text);
  snprintf(args, sizeof args, "topo %s", out);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\n  cpu_vendor mixed ("), "%s", r.out);
  ds_test_release(&r);
  snprintf(args, sizeof args, "topo import " D "dgx-a100.xml " D "dgx-a100.xml -o %s", out);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  text = ds_test_slurp(out);
  cr_assert(strstr(text, "\ncpu_vendor: amd  # "), "%s", text);
  free(text);
  /* an arm64 host (not x86: NCCL charges no 6/5 through its root complex)
   * is `arm`, and loads as such */
  xml = ds_test_slurp(D "dgx-a100.xml");
  for (char *p = strstr(xml, "arch=\"x86_64\""); p; p = strstr(p, "arch=\"x86_64\""))
    memcpy(p, "arch=\"arm64\"  ", 14);
  fp = fopen(intel, "w");
  cr_assert(fp, "%s", intel);
  fputs(xml, fp);
  cr_assert_eq(fclose(fp), 0);
  free(xml);
  snprintf(args, sizeof args, "topo import %s -o %s", intel, out);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  text = ds_test_slurp(out);
  cr_assert(strstr(text, "\ncpu_vendor: arm  # an arm64 <cpu> at "), "%s", text);
  free(text);
  snprintf(args, sizeof args, "topo %s", out);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\n  cpu_vendor arm ("), "%s", r.out);
  ds_test_release(&r);
  unlink(out);
  unlink(intel);
  rmdir(dir);
}

/* An input path is written into the YAML's comments: a newline in it (or
 * bytes that are not UTF-8) would end the comment and start a line the
 * reader parses -- "a<newline>name: evil.xml" gave a second `name:` key,
 * a file `ddpsim topo` then refused. Shown as '?', the file loads. */
Test(topo_import, a_path_with_a_newline_stays_inside_its_comment) {
  /* libyaml breaks a line at NEL (U+0085), LS (U+2028) and PS (U+2029) as
   * at a newline (yaml_private.h IS_BREAK), and refuses a file holding C1
   * (U+0080) or U+FFFE (reader.c "control characters are not allowed"):
   * each is '?' in a comment; in the name, escaped (\N \L \P \x80
   * \ufffe: YAML 1.2's escapes, read back as the character). */
  static const struct {
    const char *raw, *escaped;
  } breaks[] = {{"\n", "\\x0a"},        {"\xc2\x85", "\\N"},   {"\xe2\x80\xa8", "\\L"},
                {"\xe2\x80\xa9", "\\P"}, {"\xc2\x80", "\\x80"}, {"\xef\xbf\xbe", "\\ufffe"}};
  for (size_t k = 0; k < sizeof breaks / sizeof breaks[0]; k++) {
    char dir[] = "/tmp/ddpsim-nlimport-XXXXXX", path[128], out[128], args[512];
    cr_assert(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/a%sname: evil\xff.xml", dir, breaks[k].raw);
    snprintf(out, sizeof out, "%s/t.yaml", dir);
    char *xml = ds_test_slurp(D "dgx-a100.xml");
    FILE *fp = fopen(path, "w");
    cr_assert(fp, "%s", path);
    fputs(xml, fp);
    cr_assert_eq(fclose(fp), 0);
    free(xml);
    snprintf(args, sizeof args, "topo import '%s' -o %s", path, out);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "case %zu: %s", k, r.err);
    ds_test_release(&r);
    char *text = ds_test_slurp(out);
    char want[160];
    snprintf(want, sizeof want, "\n#   %s/a?name: evil?.xml (NCCL topology XML)\n", dir);
    cr_assert(strstr(text, want), "case %zu: %s", k, text);
    cr_assert(strstr(text, "/a?name: evil?.xml:2 (NCCL's tuning"), "case %zu: %s", k, text);
    /* the name, the base name, escaped; its byte 0xff, not UTF-8, as '?' */
    snprintf(want, sizeof want, "\nname: \"a%sname: evil?\"\n", breaks[k].escaped);
    cr_assert(strstr(text, want), "case %zu: %s", k, text);
    free(text);
    snprintf(args, sizeof args, "topo %s", out);
    r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "case %zu: %s", k, r.err);
    ds_test_release(&r);
    unlink(out);
    unlink(path);
    rmdir(dir);
  }
}
