/*
 * The writer of calibration files (traces/calib_file.c): what it writes
 * the loader (sim/train/calib.c) reads back to the same values and the
 * same text, a partial file and a copy, and the GPU's name written and
 * read (quotes escaped). The loader: test_calib_load.c. No GPU needed.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "traces/calib_file.h"
#include "sim/train/calib.h"
#include "tests/calib_bad.h"
#include "tests/support.h"

/* Writes c with the writer into a temporary file; returns its text
 * (malloc'd) and leaves the file name in path. */
static char *write_text(const struct ds_calib *c, const char *header, char *path) {
  strcpy(path, "/tmp/ddpsim-calibw-XXXXXX");
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *fp = fdopen(fd, "w+");
  cr_assert_eq(ds_calib_write(fp, c, header), 0);
  long n = ftell(fp);
  cr_assert_gt(n, 0);
  char *text = calloc((size_t)n + 1, 1);
  rewind(fp);
  cr_assert_eq(fread(text, 1, (size_t)n, fp), (size_t)n);
  fclose(fp);
  return text;
}

static void round_trip(const struct ds_calib *c) {
  const char *header = "# ddpreal calibrate (test)\n# gpu: none\n";
  char path[64];
  char *first = write_text(c, header, path);
  struct ds_calib back;
  struct ds_err err = {0};
  ds_status st = ds_calib_load(path, &back, &err);
  unlink(path);
  cr_assert_eq(st, DS_OK, "%s\n%s", err.msg, first);
  /* same flags; values equal to the 6 significant digits written (relative
   * error at most 5e-6) */
  cr_assert_eq(back.has_flops_efficiency, c->has_flops_efficiency);
  cr_assert_eq(back.has_mem_efficiency, c->has_mem_efficiency);
  cr_assert_eq(back.has_kernel_overhead, c->has_kernel_overhead);
  cr_assert_eq(back.has_fp32_math, c->has_fp32_math);
  cr_assert_eq(back.has_collective, c->has_collective);
  cr_assert_eq(back.has_host_dispatch, c->has_host_dispatch);
  cr_assert_eq(back.has_host_node, c->has_host_node);
  cr_assert_eq(back.has_host_ddp_grad, c->has_host_ddp_grad);
  cr_assert_eq(back.has_host_ddp_bucket, c->has_host_ddp_bucket);
  cr_assert_eq(back.has_host_ddp_buffer, c->has_host_ddp_buffer);
  cr_assert_eq(back.has_host_ddp_iter, c->has_host_ddp_iter);
  if (c->has_host_ddp_iter)
    cr_assert_float_eq(back.host_ddp_iter_ns, c->host_ddp_iter_ns, 5e-6 * c->host_ddp_iter_ns);
  if (c->has_host_ddp_grad)
    cr_assert_float_eq(back.host_ddp_grad_ns, c->host_ddp_grad_ns, 5e-6 * c->host_ddp_grad_ns);
  if (c->has_host_ddp_bucket)
    cr_assert_float_eq(back.host_ddp_bucket_ns, c->host_ddp_bucket_ns,
                       5e-6 * c->host_ddp_bucket_ns);
  if (c->has_host_ddp_buffer)
    cr_assert_float_eq(back.host_ddp_buffer_ns, c->host_ddp_buffer_ns,
                       5e-6 * c->host_ddp_buffer_ns);
  cr_assert_str_eq(back.gpu, c->gpu);
  if (c->has_host_dispatch)
    cr_assert_float_eq(back.host_dispatch_ns, c->host_dispatch_ns, 5e-6 * c->host_dispatch_ns);
  if (c->has_host_node)
    cr_assert_float_eq(back.host_node_ns, c->host_node_ns, 5e-6 * c->host_node_ns);
  if (c->has_flops_efficiency)
    cr_assert_float_eq(back.flops_efficiency, c->flops_efficiency, 5e-6 * c->flops_efficiency);
  if (c->has_mem_efficiency)
    cr_assert_float_eq(back.mem_efficiency, c->mem_efficiency, 5e-6 * c->mem_efficiency);
  if (c->has_kernel_overhead)
    cr_assert_float_eq(back.kernel_overhead_ns, c->kernel_overhead_ns,
                       5e-6 * c->kernel_overhead_ns);
  if (c->has_fp32_math) cr_assert_eq(back.fp32_uses_tf32, c->fp32_uses_tf32);
  if (c->has_collective) {
    cr_assert_eq(back.coll_nranks, c->coll_nranks);
    cr_assert_eq(back.coll_shared, c->coll_shared);
    cr_assert_eq(back.coll_copy, c->coll_copy);
    cr_assert_float_eq(back.coll_alpha_ns, c->coll_alpha_ns, 5e-6 * c->coll_alpha_ns);
    cr_assert_float_eq(back.coll_bus_bw_bytes_per_s, c->coll_bus_bw_bytes_per_s,
                       5e-6 * c->coll_bus_bw_bytes_per_s);
    cr_assert_float_eq(back.coll_fit_r2, c->coll_fit_r2, 1e-6);
    cr_assert_float_eq(back.coll_fit_rms_rel_residual, c->coll_fit_rms_rel_residual,
                       5e-6 * c->coll_fit_rms_rel_residual + 1e-12);
  }
  /* and writing what was read gives the same text */
  char *second = write_text(&back, header, path);
  unlink(path);
  cr_assert_str_eq(second, first);
  free(first);
  free(second);
}

Test(calib, round_trip_full) {
  struct ds_calib c;
  memset(&c, 0, sizeof c);
  c.has_flops_efficiency = 1;
  c.flops_efficiency = 0.6234567891;
  c.has_mem_efficiency = 1;
  c.mem_efficiency = 0.8765432;
  c.has_kernel_overhead = 1;
  c.kernel_overhead_ns = 2534.21987;
  c.has_fp32_math = 1;
  c.fp32_uses_tf32 = 1;
  c.has_collective = 1;
  c.coll_nranks = 2;
  c.coll_shared = 1;
  c.coll_copy = 0;
  c.coll_alpha_ns = 4512.3456;
  c.coll_bus_bw_bytes_per_s = 1.8612345e9;
  c.coll_fit_r2 = 0.99871234;
  c.coll_fit_rms_rel_residual = 0.1234567;
  c.has_host_dispatch = 1;
  c.host_dispatch_ns = 27312.3456;
  c.has_host_node = 1;
  c.host_node_ns = 26251.98765;
  c.has_host_ddp_grad = 1;
  c.host_ddp_grad_ns = 33003.21;
  c.has_host_ddp_bucket = 1;
  c.host_ddp_bucket_ns = 45123.456;
  c.has_host_ddp_buffer = 1;
  c.host_ddp_buffer_ns = 14234.5678;
  c.has_host_ddp_iter = 1;
  c.host_ddp_iter_ns = 143212.345;
  snprintf(c.gpu, sizeof c.gpu, "NVIDIA H200"); /* ddpreal calibrate's device name */
  round_trip(&c);
}

Test(calib, round_trip_partial_and_copy) {
  struct ds_calib c;
  memset(&c, 0, sizeof c);
  c.has_kernel_overhead = 1;
  c.kernel_overhead_ns = 1999.5;
  c.has_fp32_math = 1;
  c.fp32_uses_tf32 = 0;
  c.has_collective = 1;
  c.coll_nranks = 1;
  c.coll_copy = 1;
  c.coll_alpha_ns = 7.25e3;
  c.coll_bus_bw_bytes_per_s = 1.4e12;
  c.coll_fit_r2 = -0.5;
  c.has_host_node = 1; /* node alone: no dispatch key written */
  c.host_node_ns = 19876.5;
  c.has_host_ddp_bucket = 1; /* and the bucket call without the gradient's */
  c.host_ddp_bucket_ns = 40840.0;
  round_trip(&c);
}

/* The top-level gpu (ddpreal calibrate writes the CUDA device's name): the
 * writer puts it right after schema_version, the loader reads it back, an
 * empty one is located. */
Test(calib, the_gpu_name_is_written_and_read) {
  struct ds_calib c;
  memset(&c, 0, sizeof c);
  snprintf(c.gpu, sizeof c.gpu, "NVIDIA A100-SXM4-80GB");
  c.has_mem_efficiency = 1;
  c.mem_efficiency = 0.8;
  char path[64];
  char *text = write_text(&c, NULL, path);
  unlink(path);
  cr_assert_str_eq(text, "schema_version: 1\ngpu: \"NVIDIA A100-SXM4-80GB\"\ncompute:\n"
                         "  mem_efficiency: 0.8\n");
  free(text);
  struct bad_case b = {"schema_version: 1\ngpu: \"\"\n", ":2:6: key 'gpu'",
                       "expected the GPU's name"};
  expect_bad(&b);
}

/* revana finding 9: a device name with a quote and a backslash is escaped
 * in the file (YAML double-quoted: \" and \\), so the loader reads the same
 * name back; written raw, the file was refused. */
Test(calib, a_gpu_name_with_quotes_round_trips) {
  struct ds_calib c;
  memset(&c, 0, sizeof c);
  snprintf(c.gpu, sizeof c.gpu, "NVIDIA \"H100\" a\\b");
  c.has_mem_efficiency = 1;
  c.mem_efficiency = 0.8;
  char path[64];
  char *text = write_text(&c, NULL, path);
  cr_assert(strstr(text, "gpu: \"NVIDIA \\\"H100\\\" a\\\\b\"\n"), "%s", text);
  struct ds_calib back;
  struct ds_err err = {0};
  ds_status st = ds_calib_load(path, &back, &err);
  unlink(path);
  cr_assert_eq(st, DS_OK, "%s\n%s", err.msg, text);
  cr_assert_str_eq(back.gpu, c.gpu);
  free(text);
}
