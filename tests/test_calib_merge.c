/*
 * Tests for several calibration files merged into one run (sim/train/calib.c
 * ds_calib_load_files; ddpsim's `--calib A,B` and `--calib A --calib B`):
 * the tools that measure a machine (ddpreal calibrate, bench/host_calibrate.py,
 * bench/torch_ddp_host.py, bench/host_pool.py) each write a file of their
 * own sections, and a run takes them together. Expected, because: a merge
 * is the union of the files' keys, so it applies exactly what one file
 * holding all of them applies; a key two files set is refused at both
 * places (neither silently wins); a host section's unit covers its own
 * file's dispatch and node only. No GPU needed.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/net/gpu_table.h"
#include "sim/train/calib.h"
#include "tests/support.h"

/* Up to four temporary calibration files; remove_all unlinks them. */
struct files {
  char path[4][64];
  int n;
};

static const char *add(struct files *f, const char *text) {
  strcpy(f->path[f->n], "/tmp/ddpsim-calibm-XXXXXX");
  ds_test_write_temp(f->path[f->n], text);
  return f->path[f->n++];
}

static void remove_all(struct files *f) {
  for (int i = 0; i < f->n; i++) unlink(f->path[i]);
}

/* What ddpreal calibrate writes (gpu, compute, efficiency, nccl) and what
 * bench/host_calibrate.py (host dispatch, node) and bench/torch_ddp_host.py
 * (host ddp_*) write, each naming the GPU its own way. */
static const char gpu_file[] = "schema_version: 1\n"          /* 1 */
                               "gpu: \"NVIDIA H200\"\n"       /* 2 */
                               "compute:\n"                   /* 3 */
                               "  flops_efficiency: 0.62\n"   /* 4 */
                               "  kernel_overhead: 2.5us\n"   /* 5 */
                               "efficiency:\n"                /* 6 */
                               "  matmul_tf32: 0.19\n"        /* 7 */
                               "nccl:\n"                      /* 8 */
                               "  launch: 7.5us\n";           /* 9 */
static const char host_file[] = "# bench/host_calibrate.py --calib-out\n" /* 1 */
                                "schema_version: 1\n"                     /* 2 */
                                "gpu: \"nvidia h200\"\n"                  /* 3 */
                                "host:\n"                                 /* 4 */
                                "  unit: launching\n"                     /* 5 */
                                "  dispatch: 27.3us\n"                    /* 6 */
                                "  node: 26.2us\n";                       /* 7 */
static const char ddp_file[] = "schema_version: 1\n"   /* 1 */
                               "host:\n"               /* 2 */
                               "  ddp_grad: 33us\n"    /* 3 */
                               "  ddp_iter: 143us\n";  /* 4 */
/* the three as one file, by hand */
static const char one_file[] = "schema_version: 1\ngpu: \"NVIDIA H200\"\ncompute:\n"
                               "  flops_efficiency: 0.62\n  kernel_overhead: 2.5us\n"
                               "efficiency:\n  matmul_tf32: 0.19\nnccl:\n  launch: 7.5us\n"
                               "host:\n  unit: launching\n  dispatch: 27.3us\n  node: 26.2us\n"
                               "  ddp_grad: 33us\n  ddp_iter: 143us\n";

Test(calib_merge, three_files_give_what_one_file_of_their_keys_gives) {
  struct files f = {0};
  const char *paths[3] = {add(&f, gpu_file), add(&f, host_file), add(&f, ddp_file)};
  const char *whole = add(&f, one_file);
  struct ds_calib *merged = malloc(sizeof *merged), *one = malloc(sizeof *one);
  struct ds_calib_sources src;
  struct ds_err err = {0};
  cr_assert_eq(ds_calib_load_files(paths, 3, NULL, merged, &src, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_calib_load(whole, one, &err), DS_OK, "%s", err.msg);
  /* the same struct, field for field: the same keys, values and GPU */
  cr_assert_eq(memcmp(merged, one, sizeof *one), 0);
  cr_assert_str_eq(merged->gpu, "NVIDIA H200"); /* the first file's spelling */
  /* each key's file and line */
  cr_assert_eq(src.n_files, 3);
  cr_assert_eq(src.file[DS_CALIB_KEY_GPU], 0);
  cr_assert_eq(src.line[DS_CALIB_KEY_GPU], 2);
  cr_assert_eq(src.file[DS_CALIB_KEY_FLOPS_EFFICIENCY], 0);
  cr_assert_eq(src.line[DS_CALIB_KEY_KERNEL_OVERHEAD], 5);
  cr_assert_eq(src.file[DS_CALIB_KEY_NCCL_LAUNCH], 0);
  cr_assert_eq(src.line[DS_CALIB_KEY_NCCL_LAUNCH], 9);
  cr_assert_eq(src.file[DS_CALIB_KEY_HOST_DISPATCH], 1);
  cr_assert_eq(src.line[DS_CALIB_KEY_HOST_DISPATCH], 6);
  cr_assert_eq(src.file[DS_CALIB_KEY_HOST_NODE], 1);
  cr_assert_eq(src.file[DS_CALIB_KEY_HOST_DDP_GRAD], 2);
  cr_assert_eq(src.line[DS_CALIB_KEY_HOST_DDP_ITER], 4);
  cr_assert_eq(src.file[DS_CALIB_KEY_HOST_DDP_BUCKET], -1);
  cr_assert_eq(src.file[DS_CALIB_KEY_MEM_EFFICIENCY], -1);
  cr_assert_eq(src.file[DS_CALIB_KEY_COLLECTIVE], -1);
  int k_tf32 = -1;
  for (int k = 0; k < DS_CALIB_EFF_KEYS; k++)
    if (strcmp(ds_calib_efficiency_keys[k], "matmul_tf32") == 0) k_tf32 = k;
  cr_assert_eq(src.file[DS_CALIB_KEY_EFF0 + k_tf32], 0);
  cr_assert_eq(src.line[DS_CALIB_KEY_EFF0 + k_tf32], 7);
  char line[512], want[512];
  ds_calib_sources_line(&src, "; ", line, sizeof line);
  snprintf(want, sizeof want,
           "%s: gpu, compute.flops_efficiency, compute.kernel_overhead, "
           "efficiency.matmul_tf32, nccl.launch; %s: host.dispatch, host.node; "
           "%s: host.ddp_grad, host.ddp_iter",
           paths[0], paths[1], paths[2]);
  cr_assert_str_eq(line, want);
  /* one file alone: what ds_calib_load reads, every key its own */
  cr_assert_eq(ds_calib_load_files(&whole, 1, NULL, merged, &src, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(memcmp(merged, one, sizeof *one), 0);
  cr_assert_eq(src.file[DS_CALIB_KEY_HOST_DDP_ITER], 0);
  cr_assert_eq(src.line[DS_CALIB_KEY_HOST_DDP_ITER], 15);
  remove_all(&f);
  free(merged);
  free(one);
}

/* ds_calib_load_files on texts a and b, the GPU names read with the
 * shipped GPU table (ddpsim's run passes the topology's): its status,
 * message in err. */
static ds_status merge_two(const char *a, const char *b, struct ds_err *err, char pa[64],
                           char pb[64]) {
  struct files f = {0};
  const char *paths[2] = {add(&f, a), add(&f, b)};
  strcpy(pa, paths[0]);
  strcpy(pb, paths[1]);
  struct ds_gpu_table table;
  struct ds_err terr = {0};
  cr_assert_eq(ds_gpu_table_load("topologies/gpus.yaml", &table, &terr), DS_OK, "%s", terr.msg);
  struct ds_calib *c = malloc(sizeof *c);
  struct ds_calib_sources src;
  ds_status st = ds_calib_load_files(paths, 2, &table, c, &src, err);
  remove_all(&f);
  free(c);
  ds_gpu_table_release(&table);
  return st;
}

/* The merge refuses a with b, naming b's place and a's: "B:LB: key 'PATH'"
 * and "A:LA". */
static void clash(const char *a, const char *b, int la, int lb, const char *key,
                  const char *what) {
  struct ds_err err = {0};
  char pa[64], pb[64], want[160];
  cr_assert_eq(merge_two(a, b, &err, pa, pb), DS_EINPUT, "%s", key);
  snprintf(want, sizeof want, "%s:%d: key '%s'", pb, lb, key);
  cr_assert(strstr(err.msg, want), "want %s in: %s", want, err.msg);
  snprintf(want, sizeof want, "%s:%d", pa, la);
  cr_assert(strstr(err.msg, want), "want %s in: %s", want, err.msg);
  cr_assert(strstr(err.msg, what), "want %s in: %s", what, err.msg);
}

Test(calib_merge, a_key_set_by_two_files_is_refused_at_both_places) {
  /* a host dispatch measured twice (host_calibrate.py and host_pool.py) */
  clash(host_file, "schema_version: 1\nhost:\n  unit: launching\n  dispatch: 30us\n", 6, 4,
        "host.dispatch", "from one --calib file only");
  /* the same value is still two sources */
  clash(ddp_file, "schema_version: 1\nhost:\n  ddp_iter: 143us\n", 4, 3, "host.ddp_iter",
        "from one --calib file only");
  clash(gpu_file, "schema_version: 1\nefficiency:\n  conv_fp32: 0.3\n  matmul_tf32: 0.2\n",
        7, 4, "efficiency.matmul_tf32", "set by");
  clash(gpu_file, "schema_version: 1\ncompute:\n  kernel_overhead: 3us\n", 5, 3,
        "compute.kernel_overhead", "set by");
  /* nccl's interference measurement is one: its blocks' lines */
  const char intf[] = "schema_version: 1\nnccl:\n  interference_blocks: 16\n"
                      "  interference_slowdown: 1.16\n  interference_predicted: 1.14\n";
  clash(intf, intf, 3, 3, "nccl.interference", "set by");
  /* a section that is one fit: at the section */
  const char coll[] = "schema_version: 1\ncollective:\n  op: allreduce\n  nranks: 2\n"
                      "  shared: false\n  copy: false\n  alpha: 12us\n  bus_bw: 300GBps\n";
  clash(coll, coll, 3, 3, "collective", "set by");
  /* two GPUs' files are no one machine's */
  clash(gpu_file, "schema_version: 1\ngpu: NVIDIA A100-SXM4-80GB\nhost:\n  ddp_iter: 1us\n",
        2, 2, "gpu", "two GPUs");
}

Test(calib_merge, files_that_share_no_key_merge_whatever_their_sections) {
  /* the same section split (host: dispatch in one, ddp keys in another, a
   * unit in each that needs one), the same GPU named twice, one naming none */
  struct ds_err err = {0};
  char pa[64], pb[64];
  cr_assert_eq(merge_two(host_file, ddp_file, &err, pa, pb), DS_OK, "%s", err.msg);
  cr_assert_eq(merge_two(gpu_file, host_file, &err, pa, pb), DS_OK, "%s", err.msg);
  cr_assert_eq(merge_two(ddp_file, gpu_file, &err, pa, pb), DS_OK, "%s", err.msg);
  cr_assert_eq(merge_two("schema_version: 1\nhost:\n  unit: launching\n  dispatch: 27us\n",
                         "schema_version: 1\nhost:\n  unit: launching\n  node: 26us\n", &err,
                         pa, pb),
               DS_OK, "%s", err.msg);
}

/* A file with gpu: NAME and a host dispatch of its own. */
static void gpu_host_file(char *buf, size_t cap, const char *gpu) {
  snprintf(buf, cap, "schema_version: 1\ngpu: \"%s\"\nhost:\n  unit: launching\n"
           "  dispatch: 27us\n", gpu);
}

Test(calib_merge, names_of_one_table_gpu_are_one_gpu_and_unknown_names_their_words) {
  /* Expected, because: the merge reads the gpu names with the rule that
   * says which GPU a file was measured on (ds_gpu_table_by_device_name,
   * calib.c names_gpu). ddpreal calibrate writes cudaDeviceProp.name
   * ("NVIDIA H100 80GB HBM3"); a tool or a user may write it without the
   * vendor's word ("H100 80GB HBM3", the end of no other GPU's smi name)
   * or as the table's name ("H100-SXM5-80GB"): one GPU, merged. */
  struct ds_err err = {0};
  char pa[64], pb[64], other[192];
  const char *h100[] = {"H100 80GB HBM3", "h100 80gb hbm3", "H100-SXM5-80GB",
                        "NVIDIA H100-SXM5-80GB"};
  for (size_t i = 0; i < sizeof h100 / sizeof *h100; i++) {
    char first[192];
    gpu_host_file(first, sizeof first, "NVIDIA H100 80GB HBM3");
    snprintf(other, sizeof other, "schema_version: 1\ngpu: \"%s\"\nhost:\n"
             "  ddp_iter: 143us\n", h100[i]);
    cr_assert_eq(merge_two(first, other, &err, pa, pb), DS_OK, "%s: %s", h100[i], err.msg);
    cr_assert_eq(merge_two(other, first, &err, pa, pb), DS_OK, "%s: %s", h100[i], err.msg);
  }
  /* another table GPU, in either form, is still another GPU */
  gpu_host_file(other, sizeof other, "H100 PCIe");
  clash(gpu_file, other, 2, 2, "gpu", "two GPUs");
  gpu_host_file(other, sizeof other, "H200");
  clash("schema_version: 1\ngpu: \"H100 80GB HBM3\"\nnccl:\n  launch: 7.5us\n", other, 2,
        2, "gpu", "two GPUs");
  /* words ending two GPUs' smi names ("PCIe": the A100's and the H100's)
   * mean neither: compared as words, so refused beside NVIDIA H100 PCIe */
  gpu_host_file(other, sizeof other, "PCIe");
  clash("schema_version: 1\ngpu: \"NVIDIA H100 PCIe\"\nnccl:\n  launch: 7.5us\n", other,
        2, 2, "gpu", "two GPUs");
  /* names the table does not know: the same words (case ignored) only */
  gpu_host_file(other, sizeof other, "acme tpu 9");
  cr_assert_eq(merge_two("schema_version: 1\ngpu: \"ACME TPU 9\"\nnccl:\n  launch: 7.5us\n",
                         other, &err, pa, pb),
               DS_OK, "%s", err.msg);
  gpu_host_file(other, sizeof other, "TPU 9");
  clash("schema_version: 1\ngpu: \"ACME TPU 9\"\nnccl:\n  launch: 7.5us\n", other, 2, 2,
        "gpu", "two GPUs");
}

Test(calib_merge, a_host_unit_covers_its_own_file_only) {
  struct ds_err err = {0};
  char pa[64], pb[64], want[128];
  /* A's unit, B's node without one (a file of an older unit): refused at
   * B's node, saying A's unit does not cover it */
  cr_assert_eq(merge_two("schema_version: 1\nhost:\n  unit: launching\n  dispatch: 27us\n",
                         "schema_version: 1\nhost:\n  node: 26us\n", &err, pa, pb),
               DS_EINPUT);
  snprintf(want, sizeof want, "%s:3:9: key 'host.node'", pb);
  cr_assert(strstr(err.msg, want), "want %s in: %s", want, err.msg);
  cr_assert(strstr(err.msg, "a unit in another file does not cover it"), "%s", err.msg);
  /* and the other way round: the file without its unit named whichever
   * comes first */
  cr_assert_eq(merge_two("schema_version: 1\nhost:\n  dispatch: 27us\n",
                         "schema_version: 1\nhost:\n  unit: launching\n  node: 26us\n", &err,
                         pa, pb),
               DS_EINPUT);
  snprintf(want, sizeof want, "%s:3:13: key 'host.dispatch'", pa);
  cr_assert(strstr(err.msg, want), "want %s in: %s", want, err.msg);
  /* another unit in B: refused at B's unit */
  cr_assert_eq(merge_two("schema_version: 1\nhost:\n  unit: launching\n  dispatch: 27us\n",
                         "schema_version: 1\nhost:\n  unit: dispatch\n  node: 26us\n", &err,
                         pa, pb),
               DS_EINPUT);
  snprintf(want, sizeof want, "%s:3:9: key 'host.unit'", pb);
  cr_assert(strstr(err.msg, want) && strstr(err.msg, "expected `launching`"), "%s", err.msg);
  /* one file alone: the message as it was, no word of other files */
  struct ds_calib c;
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\nhost:\n  node: 26us\n", &c, &err,
                                       NULL),
               DS_EINPUT);
  cr_assert(!strstr(err.msg, "another file"), "%s", err.msg);
}

Test(calib_merge, the_same_file_twice_is_refused_as_such) {
  struct files f = {0};
  const char *p = add(&f, host_file);
  const char *paths[2] = {p, p};
  struct ds_calib *c = malloc(sizeof *c);
  struct ds_calib_sources src;
  struct ds_err err = {0};
  cr_assert_eq(ds_calib_load_files(paths, 2, NULL, c, &src, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "the same file as") && strstr(err.msg, "given twice"), "%s",
            err.msg);
  remove_all(&f);
  free(c);
}

/* tests/data/tiny-hostops-topo.yaml's host-bound toy (test_calib_host.c): single,
 * host_dispatch D = 150 us, host_node N = 300 us; the iteration is
 * 11 D + 9 N + 258.728 us. */
#define HOST_TOY "--topo tests/data/tiny-hostops-topo.yaml " \
                 "--model tests/data/tiny-model-dispatch.yaml --strategy single"

static double iter_us(const char *calib_args) {
  char args[512];
  snprintf(args, sizeof args, HOST_TOY " --format csv %s", calib_args);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  double us = ds_test_csv_num(r.out, "iter_ms", 0) * 1e3;
  ds_test_release(&r);
  return us;
}

Test(calib_merge, ddpsim_merges_a_list_and_a_repeated_flag_alike) {
  struct files f = {0};
  const char *d = add(&f, "schema_version: 1\nhost:\n  unit: launching\n  dispatch: 300us\n");
  const char *n = add(&f, "schema_version: 1\nhost:\n  unit: launching\n  node: 600us\n");
  const char *both = add(&f, "schema_version: 1\nhost:\n  unit: launching\n"
                             "  dispatch: 300us\n  node: 600us\n");
  char a[512];
  /* expected, because: D 300 us from one file, N 600 us from the other:
   * 11 x 300 + 9 x 600 + 258.728 us, as one file of both keys gives */
  const double want = 11 * 300 + 9 * 600 + 258.728;
  snprintf(a, sizeof a, "--calib %s,%s", d, n);
  cr_assert_float_eq(iter_us(a), want, 1e-3, "%s", a);
  snprintf(a, sizeof a, "--calib %s --calib %s", n, d);
  cr_assert_float_eq(iter_us(a), want, 1e-3, "%s", a);
  snprintf(a, sizeof a, "--calib=%s --calib %s", d, n);
  cr_assert_float_eq(iter_us(a), want, 1e-3, "%s", a);
  snprintf(a, sizeof a, "--calib %s", both);
  cr_assert_float_eq(iter_us(a), want, 1e-3, "%s", a);
  /* the CSV's calib: the files as given, joined by ',' when repeated (a
   * field with a comma, quoted) */
  snprintf(a, sizeof a, HOST_TOY " --format csv --calib %s --calib %s", d, n);
  struct ds_test_result r = ds_test_cli(a);
  char joined[160];
  snprintf(joined, sizeof joined, ",\"%s,%s\",", d, n);
  cr_assert(strstr(r.out, joined), "want %s in:\n%s", joined, r.out);
  ds_test_release(&r);
  /* the text says which file set each key; one file, no such line */
  snprintf(a, sizeof a, HOST_TOY " --calib %s,%s", d, n);
  r = ds_test_cli(a);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char line[400];
  snprintf(line, sizeof line, "\ncalib keys: %s: host.dispatch\n            %s: host.node\n",
           d, n);
  cr_assert(strstr(r.out, line), "want %s in:\n%s", line, r.out);
  ds_test_release(&r);
  snprintf(a, sizeof a, HOST_TOY " --calib %s", both);
  r = ds_test_cli(a);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(!strstr(r.out, "calib keys"), "%s", r.out);
  ds_test_release(&r);
  remove_all(&f);
}

Test(calib_merge, ddpsim_refuses_a_clash_with_both_places_exit_2) {
  struct files f = {0};
  const char *a = add(&f, "schema_version: 1\nhost:\n  unit: launching\n  dispatch: 300us\n");
  const char *b = add(&f, "# pooled\nschema_version: 1\nhost:\n  unit: launching\n"
                          "  node: 600us\n  dispatch: 310us\n");
  char args[512], want[256];
  snprintf(args, sizeof args, HOST_TOY " --calib %s --calib %s", a, b);
  snprintf(want, sizeof want, "option --calib: %s:6: key 'host.dispatch': set by %s:4 too", b,
           a);
  ds_test_ddpsim_refuses(args, want);
  /* an empty name in a list, and a list past DS_CALIB_MAX_FILES files */
  snprintf(args, sizeof args, HOST_TOY " --calib %s,,%s", a, b);
  ds_test_ddpsim_refuses(args, "option --calib: expected calibration files separated by "
                               "single commas");
  snprintf(args, sizeof args, HOST_TOY " --calib %s,%s,%s,%s,%s,%s,%s,%s,%s", a, a, a, a, a, a,
           a, a, a);
  ds_test_ddpsim_refuses(args, "option --calib: more than 8 calibration files");
  remove_all(&f);
}

Test(calib_merge, a_file_whose_name_has_a_comma_is_one_file) {
  /* before lists, `--calib a,b.yaml` named one file: it still does where
   * that file exists */
  char dir[64] = "/tmp/ddpsim-calibc-XXXXXX", path[128], args[256];
  ds_test_make_dir(dir);
  snprintf(path, sizeof path, "%s/host,pooled.yaml", dir);
  ds_test_write_file(path, "schema_version: 1\nhost:\n  unit: launching\n  dispatch: 300us\n");
  snprintf(args, sizeof args, "--calib %s", path);
  cr_assert_float_eq(iter_us(args), 11 * 300 + 9 * 300 + 258.728, 1e-3);
  ds_test_remove_dir(dir);
}

Test(calib_merge, a_check_on_a_merged_key_names_the_file_that_set_it) {
  /* nccl's interference from the second file, checked against the
   * topology's GPU (132 SMs: 132 / 116 = 1.13793, not 1.5): the message
   * names that file and its line, not the list */
  struct files f = {0};
  const char *h = add(&f, "schema_version: 1\nhost:\n  ddp_iter: 10us\n");
  const char *i = add(&f, "schema_version: 1\nnccl:\n  interference_blocks: 16\n"
                          "  interference_slowdown: 1.2\n  interference_predicted: 1.5\n");
  char args[512], want[160];
  snprintf(args, sizeof args, "--topo dgx-h100 --model resnet50 --calib %s,%s", h, i);
  snprintf(want, sizeof want, "ddpsim: %s:5: key 'interference_predicted'", i);
  ds_test_ddpsim_refuses(args, want);
  remove_all(&f);
}

/* ddpsim args: exit 2, nothing on stdout, and stderr exactly want + "\n"
 * (after "ddpsim: "). */
static void refused_exactly(const char *args, const char *want) {
  struct ds_test_result r = ds_test_cli(args);
  char line[8192];
  snprintf(line, sizeof line, "ddpsim: %s\n", want);
  cr_assert_eq(r.status, 2, "status %d: %s", r.status, r.err);
  cr_assert_str_eq(r.out, "");
  cr_assert_str_eq(r.err, line, "want\n%sgot\n%s", line, r.err);
  ds_test_release(&r);
}

Test(calib_merge, ddpsim_bounds_the_files_a_repeated_flag_gives_exit_2) {
  /* nine files by a repeated flag (the list's own bound is tested above);
   * checked as each --calib is read, so the names need not exist */
  char args[1024];
  int n = snprintf(args, sizeof args, HOST_TOY);
  for (int i = 0; i < 9; i++)
    n += snprintf(args + n, sizeof args - (size_t)n, " --calib c%d.yaml", i);
  refused_exactly(args, "option --calib: more than 8 calibration files");
}

Test(calib_merge, ddpsim_bounds_the_names_length_exit_2) {
  /* the joined names (the CSV's calib column) fit in DS_CALIB_LIST_BYTES
   * - 1 = 4095 bytes: 3000 + ',' + 1200 = 4201 do not, by a repeated flag
   * or in one list */
  static char a[3001], b[1201], args[8192];
  memset(a, 'a', 3000);
  memset(b, 'b', 1200);
  const char *want = "option --calib: expected the files' names to come to at most 4095 "
                     "bytes in all (joined by ','), got 4201";
  snprintf(args, sizeof args, HOST_TOY " --calib %s --calib %s", a, b);
  refused_exactly(args, want);
  snprintf(args, sizeof args, HOST_TOY " --calib %s,%s", a, b);
  refused_exactly(args, want);
}

Test(calib_merge, ddpsim_finds_the_same_file_across_two_lists_exit_2) {
  /* a second list's names go after the first's (options.c add_calib):
   * both lists' files are checked against each other */
  struct files f = {0};
  const char *d = add(&f, "schema_version: 1\nhost:\n  unit: launching\n  dispatch: 300us\n");
  const char *n = add(&f, "schema_version: 1\nhost:\n  unit: launching\n  node: 600us\n");
  /* no collective in a run of one GPU: G changes nothing */
  const char *g = add(&f, "schema_version: 1\nnccl:\n  launch: 7.5us\n");
  char args[512], want[256];
  /* expected, because: the lists D,N and G merge as D,N,G would */
  snprintf(args, sizeof args, "--calib %s,%s --calib %s", d, n, g);
  cr_assert_float_eq(iter_us(args), 11 * 300 + 9 * 600 + 258.728, 1e-3, "%s", args);
  snprintf(args, sizeof args, HOST_TOY " --calib %s,%s --calib %s,%s", d, n, g, d);
  snprintf(want, sizeof want, "option --calib: %s: the same file as %s, given twice", d, d);
  refused_exactly(args, want);
  remove_all(&f);
}

/* The two calibration tools that need PyTorch (steps 2 and 3 of README.md's
 * "Calibrating for your own machine") say so without it, with how to
 * install it, exit 2 (as tools/export_model.py), where they ended in a
 * ModuleNotFoundError traceback. A torch package that fails to import,
 * first on PYTHONPATH, stands for a machine without torch, wherever the
 * test runs. */
Test(calib_merge, the_torch_tools_without_torch_say_how_to_get_it) {
  char dir[] = "/tmp/ddpsim-notorch-XXXXXX";
  ds_test_make_dir(dir);
  char pkg[PATH_MAX], init[PATH_MAX + 16], env[PATH_MAX + 32];
  snprintf(pkg, sizeof pkg, "%s/torch", dir);
  cr_assert_eq(mkdir(pkg, 0700), 0);
  snprintf(init, sizeof init, "%s/__init__.py", pkg);
  ds_test_write_file(init, "raise ImportError(\"No module named 'torch' (the test hides it)\")\n");
  snprintf(env, sizeof env, "PYTHONPATH=%s", dir);
  const char *tools[] = {"bench/host_calibrate.py --model resnet50 --calib-out /dev/null",
                         "bench/torch_ddp_host.py --help"};
  for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
    struct ds_test_result r = ds_test_run(env, "python3", tools[i]);
    cr_assert_eq(r.status, 2, "%s: exit %d\nstderr: %s", tools[i], r.status, r.err);
    cr_assert(strstr(r.err, "No module named 'torch'") &&
                  strstr(r.err, "this tool needs PyTorch") && strstr(r.err, "pip install torch") &&
                  !strstr(r.err, "Traceback"),
              "%s: stderr: %s", tools[i], r.err);
    ds_test_release(&r);
  }
  ds_test_remove_dir(dir);
}

/* bench/host_pool.py (README.md's pooling of several host_calibrate.py
 * runs): --help is its usage on stdout, exit 0, and no CSV to pool is a
 * usage error, exit 2; --help used to be read as a CSV ("cannot read
 * --help", exit 2) and no argument exited 1. */
Test(calib_merge, host_pool_help_is_its_usage) {
  struct ds_test_result r = ds_test_run("", "python3", "bench/host_pool.py --help");
  cr_assert_eq(r.status, 0, "exit %d\nstderr: %s", r.status, r.err);
  cr_assert(strstr(r.out, "python3 bench/host_pool.py [--calib-dir DIR]"), "stdout: %s", r.out);
  ds_test_release(&r);
  const char *bare[] = {"bench/host_pool.py", "bench/host_pool.py --calib-dir"};
  for (size_t i = 0; i < sizeof bare / sizeof *bare; i++) {
    r = ds_test_run("", "python3", bare[i]);
    cr_assert_eq(r.status, 2, "%s: exit %d\nstderr: %s", bare[i], r.status, r.err);
    cr_assert(strstr(r.err, "python3 bench/host_pool.py [--calib-dir DIR]"), "%s: stderr: %s",
              bare[i], r.err);
    ds_test_release(&r);
  }
}
