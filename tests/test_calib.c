/*
 * Tests for sim/train/calib.c (the loader of `ddpreal calibrate`'s files) and
 * traces/calib_file.c (their writer): a file overrides exactly the compute
 * keys it has, bad files give "FILE:LINE:COL: key" errors, and what the
 * writer writes the loader reads back to the same values and the same
 * text. No GPU needed.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "traces/calib_file.h"
#include "sim/train/calib.h"
#include "tests/support.h"

static void assert_params_eq(const struct ds_compute_params *p,
                             const struct ds_compute_params *q) {
  cr_assert_eq(p->flops_efficiency, q->flops_efficiency);
  cr_assert_eq(p->mem_efficiency, q->mem_efficiency);
  cr_assert_eq(p->kernel_overhead_ns, q->kernel_overhead_ns);
  cr_assert_eq(p->comm_interference, q->comm_interference);
  cr_assert_eq(p->fp32_uses_tf32, q->fp32_uses_tf32);
  cr_assert_eq(p->host_dispatch_ns, q->host_dispatch_ns);
  cr_assert_eq(p->host_node_ns, q->host_node_ns);
  cr_assert_eq(p->host_grad_hook_ns, q->host_grad_hook_ns);
  cr_assert_eq(p->host_grad_copy_ns, q->host_grad_copy_ns);
  cr_assert_eq(p->host_collective_ns, q->host_collective_ns);
  cr_assert_eq(p->host_buffer_ns, q->host_buffer_ns);
}

/* A topology's compute section with values no calibration writes. */
static struct ds_compute_params topo_params(void) {
  struct ds_compute_params p = {.flops_efficiency = 0.5, .mem_efficiency = 0.7,
                                .kernel_overhead_ns = 4000.0, .comm_interference = 0.25,
                                .fp32_uses_tf32 = 1, .host_launch_ns = 20000.0,
                                .host_replicate_ns = 5000.0, .host_op_ns = 50300.0,
                                .host_dispatch_ns = 27310.0, .host_cast_ns = 23600.0,
                                .host_node_ns = 26250.0, .host_grad_hook_ns = 300000.0,
                                .host_grad_copy_ns = 200000.0, .host_collective_ns = 500000.0,
                                .host_buffer_ns = 400000.0};
  return p;
}

Test(calib, applies_exactly_the_keys_present) {
  struct ds_calib c;
  struct ds_err err = {0};
  ds_status st = ds_test_load_calib_text("# measured\nschema_version: 1\ncompute:\n"
                                         "  flops_efficiency: 0.62\n  kernel_overhead: 2.5us\n",
                                         &c, &err, NULL);
  cr_assert_eq(st, DS_OK, "%s", err.msg);
  struct ds_compute_params p = topo_params();
  ds_calib_apply_compute(&c, &p);
  /* expected: the two keys of the file, the rest as the topology said */
  cr_assert_float_eq(p.flops_efficiency, 0.62, 1e-15);
  cr_assert_float_eq(p.kernel_overhead_ns, 2500.0, 1e-9);
  cr_assert_float_eq(p.mem_efficiency, 0.7, 0);
  cr_assert_float_eq(p.comm_interference, 0.25, 0);
  cr_assert_eq(p.fp32_uses_tf32, 1);
  cr_assert_eq(c.has_collective, 0);
}

Test(calib, fp32_math_and_mem_efficiency_apply) {
  struct ds_calib c;
  struct ds_err err = {0};
  ds_status st = ds_test_load_calib_text("schema_version: 1\ncompute:\n  mem_efficiency: 0.91\n"
                                         "  fp32_math: fp32\n", &c, &err, NULL);
  cr_assert_eq(st, DS_OK, "%s", err.msg);
  struct ds_compute_params p = topo_params();
  ds_calib_apply_compute(&c, &p);
  cr_assert_float_eq(p.mem_efficiency, 0.91, 1e-15);
  cr_assert_eq(p.fp32_uses_tf32, 0);
  cr_assert_float_eq(p.flops_efficiency, 0.5, 0);
  cr_assert_float_eq(p.kernel_overhead_ns, 4000.0, 0);
}

Test(calib, a_calibration_without_a_section_is_refused) {
  /* it would change nothing yet label the run calibrated (a file cut after
   * its header, or the wrong file) */
  struct ds_calib c;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\n", &c, &err, NULL), DS_EINPUT);
  cr_assert(strstr(err.msg, "no section to apply"), "%s", err.msg);
  err = (struct ds_err){0};
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\ngpu: NVIDIA H200\n", &c, &err,
                                       NULL), DS_EINPUT);
}

Test(calib, host_section_replaces_dispatch_and_node_only) {
  struct ds_calib c;
  struct ds_err err = {0};
  ds_status st = ds_test_load_calib_text(
      "schema_version: 1\nhost:\n  unit: launching\n"
      "  dispatch: 31.5us\n  node: 0.0224ms\n", &c, &err, NULL);
  cr_assert_eq(st, DS_OK, "%s", err.msg);
  cr_assert_eq(c.has_host_dispatch, 1);
  cr_assert_eq(c.has_host_node, 1);
  struct ds_compute_params p = topo_params(), q = topo_params();
  ds_calib_apply_compute(&c, &p);
  /* expected: the file's two times in ns; host_op and host_cast (which
   * host_calibrate.py does not measure) and the rest as the topology said */
  cr_assert_float_eq(p.host_dispatch_ns, 31500.0, 1e-9);
  cr_assert_float_eq(p.host_node_ns, 22400.0, 1e-9);
  cr_assert_eq(p.host_op_ns, q.host_op_ns);
  cr_assert_eq(p.host_cast_ns, q.host_cast_ns);
  cr_assert_eq(p.host_launch_ns, q.host_launch_ns);
  cr_assert_eq(p.kernel_overhead_ns, q.kernel_overhead_ns);
  /* one key alone leaves the other */
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\nhost:\n  unit: launching\n"
                                       "  node: 40us\n", &c, &err, NULL),
               DS_OK, "%s", err.msg);
  p = topo_params();
  ds_calib_apply_compute(&c, &p);
  cr_assert_float_eq(p.host_node_ns, 40000.0, 1e-9);
  cr_assert_eq(p.host_dispatch_ns, q.host_dispatch_ns);
}

Test(calib, host_ddp_keys_set_the_reducers_costs_split_as_the_defaults) {
  struct ds_calib c;
  struct ds_err err = {0};
  ds_status st = ds_test_load_calib_text("schema_version: 1\nhost:\n  unit: launching\n"
                                         "  dispatch: 31.5us\n"
                                         "  ddp_grad: 27us\n  ddp_bucket: 0.045ms\n"
                                         "  ddp_buffer: 14.2us\n  ddp_iter: 0.15ms\n", &c,
                                         &err, NULL);
  cr_assert_eq(st, DS_OK, "%s", err.msg);
  cr_assert_eq(c.has_host_ddp_grad + c.has_host_ddp_bucket + c.has_host_ddp_buffer +
                   c.has_host_ddp_iter,
               4);
  cr_assert_eq(c.has_host_node, 0);
  struct ds_compute_params p = topo_params(), q = topo_params();
  ds_calib_apply_compute(&c, &p);
  /* expected: 27 us a gradient split as the defaults are: the copy back's
   * launch the default's 5800 ns, the hook the rest, 21200 ns; whatever the
   * topology's own split was (300 : 200 us here) */
  cr_assert_float_eq(p.host_grad_hook_ns, 21200.0, 1e-9);
  cr_assert_float_eq(p.host_grad_copy_ns, 5800.0, 1e-9);
  cr_assert_float_eq(p.host_collective_ns, 45000.0, 1e-9);
  cr_assert_float_eq(p.host_buffer_ns, 14200.0, 1e-9);
  cr_assert_float_eq(p.host_ddp_iter_ns, 150000.0, 1e-9);
  {
    /* a measurement below the launch's 5.8 us is all copy, no hook */
    struct ds_calib small;
    cr_assert_eq(ds_test_load_calib_text("schema_version: 1\nhost:\n  ddp_grad: 4us\n", &small,
                                         &err, NULL),
                 DS_OK, "%s", err.msg);
    struct ds_compute_params r = topo_params();
    ds_calib_apply_compute(&small, &r);
    cr_assert_float_eq(r.host_grad_copy_ns, 4000.0, 1e-9);
    cr_assert_float_eq(r.host_grad_hook_ns, 0.0, 1e-9);
  }
  cr_assert_float_eq(p.host_dispatch_ns, 31500.0, 1e-9);
  /* node, and the host costs the file has no key for, as the topology said */
  cr_assert_eq(p.host_node_ns, q.host_node_ns);
  cr_assert_eq(p.host_op_ns, q.host_op_ns);
  cr_assert_eq(p.host_launch_ns, q.host_launch_ns);
  /* each key alone leaves the others: the per-bucket call alone */
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\nhost:\n  ddp_bucket: 40us\n", &c,
                                       &err, NULL),
               DS_OK, "%s", err.msg);
  p = topo_params();
  ds_calib_apply_compute(&c, &p);
  cr_assert_float_eq(p.host_collective_ns, 40000.0, 1e-9);
  cr_assert_eq(p.host_grad_hook_ns, q.host_grad_hook_ns);
  cr_assert_eq(p.host_grad_copy_ns, q.host_grad_copy_ns);
  cr_assert_eq(p.host_buffer_ns, q.host_buffer_ns);
  cr_assert_eq(p.host_dispatch_ns, q.host_dispatch_ns);
  /* 0 is a time too: no reducer cost at all */
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\nhost:\n  ddp_grad: 0\n", &c, &err,
                                       NULL),
               DS_OK, "%s", err.msg);
  p = topo_params();
  ds_calib_apply_compute(&c, &p);
  cr_assert_eq(p.host_grad_hook_ns + p.host_grad_copy_ns, 0);
}

Test(calib, collective_section_reads_units) {
  struct ds_calib c;
  struct ds_err err = {0};
  ds_status st = ds_test_load_calib_text("schema_version: 1\ncollective:\n  op: allreduce\n"
                                         "  nranks: 2\n  shared: true\n  copy: false\n"
                                         "  alpha: 12.5us\n  bus_bw: 350GBps\n  fit_r2: 0.99\n"
                                         "  fit_rms_rel_residual: 0.1\n", &c, &err, NULL);
  cr_assert_eq(st, DS_OK, "%s", err.msg);
  cr_assert_eq(c.has_collective, 1);
  cr_assert_eq(c.coll_nranks, 2);
  cr_assert_eq(c.coll_shared, 1);
  cr_assert_eq(c.coll_copy, 0);
  cr_assert_float_eq(c.coll_alpha_ns, 12500.0, 1e-9);
  cr_assert_float_eq(c.coll_bus_bw_bytes_per_s, 350e9, 1e-3);
  cr_assert_float_eq(c.coll_fit_r2, 0.99, 1e-15);
  /* the collective fit does not touch the compute parameters */
  struct ds_compute_params p = topo_params(), q = topo_params();
  ds_calib_apply_compute(&c, &p);
  assert_params_eq(&p, &q);
}

/* Each bad file: the message must start with FILE:LINE:COL and name the
 * key; line and column point at the offending key or value (1-based). */
struct bad_case {
  const char *text;
  /* ":LINE:COL: key 'SECTION.KEY'" or ":LINE:COL: [key 'SECTION': ]unknown key 'KEY'" */
  const char *where;
  const char *what;  /* a part of the message */
};

static void expect_bad(const struct bad_case *b) {
  struct ds_calib c;
  struct ds_err err = {0};
  char path[64], want[160];
  ds_status st = ds_test_load_calib_text(b->text, &c, &err, path);
  cr_assert_eq(st, DS_EINPUT, "expected DS_EINPUT for:\n%s\ngot %s: %s", b->text,
               ds_status_name(st), err.msg);
  snprintf(want, sizeof want, "%s%s", path, b->where);
  cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "message: %s\nwant prefix: %s",
            err.msg, want);
  cr_assert(strstr(err.msg, b->what) != NULL, "message: %s\nwant: %s", err.msg, b->what);
  /* nothing half-loaded */
  cr_assert_eq(c.has_flops_efficiency + c.has_kernel_overhead + c.has_collective +
                   c.has_host_dispatch + c.has_host_node + c.has_host_ddp_grad +
                   c.has_host_ddp_bucket + c.has_host_ddp_buffer, 0);
}

Test(calib, unknown_key_is_located) {
  /* 'flops_eff' starts line 4, column 3 */
  struct bad_case b = {"schema_version: 1\ncompute:\n  flops_efficiency: 0.5\n"
                       "  flops_eff: 0.6\n", ":4:3: key 'compute': unknown key 'flops_eff'", "allowed: flops_efficiency"};
  expect_bad(&b);
}

Test(calib, unknown_top_level_key_is_located) {
  struct bad_case b = {"schema_version: 1\nnetwork: {}\n", ":2:1: unknown key 'network'",
                       "allowed: schema_version, compute, efficiency, nccl, collective"};
  expect_bad(&b);
}

Test(calib, bad_unit_is_located) {
  /* the value '4parsec' starts line 3, column 20 */
  struct bad_case b = {"schema_version: 1\ncompute:\n  kernel_overhead: 4parsec\n",
                       ":3:20: key 'compute.kernel_overhead'", "expected a time"};
  expect_bad(&b);
}

Test(calib, bad_bandwidth_unit_is_located) {
  struct bad_case b = {"schema_version: 1\ncollective:\n  op: allreduce\n  nranks: 1\n"
                       "  shared: false\n  copy: true\n  alpha: 3us\n  bus_bw: 10 furlongs\n",
                       ":8:11: key 'collective.bus_bw'", "expected a bandwidth"};
  expect_bad(&b);
}

Test(calib, unknown_host_key_is_located) {
  /* host_calibrate.py measures dispatch and node only: 'cast' is refused */
  struct bad_case b = {"schema_version: 1\nhost:\n  unit: launching\n"
                       "  dispatch: 27us\n  cast: 20us\n",
                       ":5:3: key 'host': unknown key 'cast'", "allowed: unit, dispatch, node"};
  expect_bad(&b);
}

Test(calib, unknown_ddp_host_key_is_located) {
  /* the reducer's keys are ddp_grad, ddp_bucket, ddp_buffer: the topology's
   * own names are refused here */
  struct bad_case b = {"schema_version: 1\nhost:\n  ddp_grad: 27us\n  grad_hook: 20us\n",
                       ":4:3: key 'host': unknown key 'grad_hook'",
                       "allowed: unit, dispatch, node, ddp_grad, ddp_bucket, ddp_buffer, ddp_iter"};
  expect_bad(&b);
}

Test(calib, bad_ddp_host_times_are_located) {
  /* a negative time, one past 1e6 s, a unit that is none, on line 4 */
  struct bad_case neg = {"schema_version: 1\nhost:\n  ddp_grad: 27us\n  ddp_bucket: -40us\n",
                         ":4:15: key 'host.ddp_bucket'", "expected a time like \"1.5us\""};
  expect_bad(&neg);
  struct bad_case big = {"schema_version: 1\nhost:\n  unit: launching\n"
                         "  node: 20us\n  ddp_buffer: 2e6s\n",
                         ":5:15: key 'host.ddp_buffer'", "(at most 1e6 s), got \"2e6s\""};
  expect_bad(&big);
  struct bad_case unit = {"schema_version: 1\nhost:\n  ddp_bucket: 4us\n  ddp_grad: 33 ms2\n",
                          ":4:13: key 'host.ddp_grad'", "expected a time"};
  expect_bad(&unit);
}

Test(calib, bad_host_unit_is_located) {
  /* '27.3 furlongs' starts line 4, column 9 */
  struct bad_case b = {"schema_version: 1\nhost:\n  unit: launching\n"
                       "  node: 27.3 furlongs\n", ":4:9: key 'host.node'",
                       "expected a time"};
  expect_bad(&b);
}

Test(calib, a_host_cost_without_its_unit_is_refused_with_the_mend) {
  /* a file of an older unit (per every dispatch, or a node free by its
   * name) has dispatch or node and no unit: refused at the first of them */
  struct bad_case old = {"schema_version: 1\nhost:\n  dispatch: 33.8us\n  node: 36.6us\n",
                         ":3:13: key 'host.dispatch'", "without `unit: launching`"};
  expect_bad(&old);
  struct bad_case node = {"schema_version: 1\nhost:\n  ddp_grad: 20us\n  node: 36.6us\n",
                          ":4:9: key 'host.node'", "scale dispatch by dispatches / "
                                                   "kernel-launching"};
  expect_bad(&node);
  struct bad_case other = {"schema_version: 1\nhost:\n  unit: dispatch\n  node: 36.6us\n",
                           ":3:9: key 'host.unit'", "expected `launching`"};
  expect_bad(&other);
  /* the DDP keys alone need none: their units did not change */
  struct ds_calib c;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\nhost:\n  ddp_grad: 20us\n", &c, &err,
                                       NULL), DS_OK, "%s", err.msg);
}

Test(calib, a_calibration_whose_sections_set_nothing_is_refused_at_the_first) {
  /* fuzz/readers.c's calib reader found `host: {unit: ...}` alone loaded
   * (a section present, no key set): the run labelled calibrated, nothing
   * changed. Refused at the first section, as a file without one is. */
  struct bad_case unit = {"schema_version: 1\nhost:\n  unit: launching\n", ":3:3: key 'host'",
                          "nothing to apply in it or in another section (expected at least "
                          "one key besides unit)"};
  expect_bad(&unit);
  struct bad_case empty = {"schema_version: 1\ngpu: NVIDIA H200\ncompute: {}\nefficiency: {}\n",
                           ":3:10: key 'compute'", "nothing to apply in it or in another section "
                           "(expected at least one key)"};
  expect_bad(&empty);
  /* one key in a later section is enough */
  struct ds_calib c;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\ncompute: {}\nnccl: {launch: 5us}\n",
                                       &c, &err, NULL), DS_OK, "%s", err.msg);
}

Test(calib, a_host_unit_is_checked_without_dispatch_or_node) {
  /* a misspelt unit beside the DDP keys alone was accepted unread */
  struct bad_case b = {"schema_version: 1\nhost:\n  unit: lauching\n  ddp_grad: 20us\n",
                       ":3:9: key 'host.unit'", "expected `launching`"};
  expect_bad(&b);
}

Test(calib, efficiency_out_of_range_is_located) {
  struct bad_case b = {"schema_version: 1\ncompute:\n  flops_efficiency: 1.5\n",
                       ":3:21: key 'compute.flops_efficiency'", "fraction from 0.01 to 1, got 1.5"};
  expect_bad(&b);
  /* below 1 % of peak too (issue #12: 1e-300 passed "> 0") */
  struct bad_case tiny = {"schema_version: 1\ncompute:\n  mem_efficiency: 1e-300\n",
                          ":3:19: key 'compute.mem_efficiency'", "fraction from 0.01 to 1, got "
                                                                 "1e-300"};
  expect_bad(&tiny);
}

/* A fit's R^2 is at most 1 (1 - SS_res / SS_tot); below 0 is a fit worse
 * than the mean, read as written; an overflowing number is refused by the
 * number reader (the fuzzing run's 1e300 passed). */
Test(calib, fit_r2_above_1_is_located) {
#define COLL_R2(v)                                                                  \
  "schema_version: 1\ncollective:\n  op: allreduce\n  nranks: 2\n  shared: true\n" \
  "  copy: false\n  alpha: 12.5us\n  bus_bw: 350GBps\n  fit_r2: " v "\n"
  struct bad_case huge = {COLL_R2("1e300"), ":9:11: key 'collective.fit_r2'",
                          "expected an R^2 <= 1, got 1e+300"};
  expect_bad(&huge);
  struct bad_case just = {COLL_R2("1.0001"), ":9:11: key 'collective.fit_r2'",
                          "expected an R^2 <= 1, got 1.0001"};
  expect_bad(&just);
  struct bad_case inf = {COLL_R2("1e999"), ":9:11: key 'collective.fit_r2'", "a number"};
  expect_bad(&inf);
  struct ds_calib c;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_calib_text(COLL_R2("1"), &c, &err, NULL), DS_OK, "%s", err.msg);
  cr_assert_eq(c.coll_fit_r2, 1.0);
  cr_assert_eq(ds_test_load_calib_text(COLL_R2("-1e300"), &c, &err, NULL), DS_OK, "%s",
               err.msg);
  cr_assert_eq(c.coll_fit_r2, -1e300);
#undef COLL_R2
}

Test(calib, wrong_schema_version_is_located) {
  struct bad_case b = {"schema_version: 2\ncompute:\n  mem_efficiency: 0.8\n",
                       ":1:17: key 'schema_version'", "expected schema_version 1"};
  expect_bad(&b);
}

Test(calib, missing_file_is_input_error) {
  struct ds_calib c;
  struct ds_err err = {0};
  ds_status st = ds_calib_load("/nonexistent/calib.yaml", &c, &err);
  cr_assert_eq(st, DS_EINPUT, "%s", ds_status_name(st));
  cr_assert(strstr(err.msg, "/nonexistent/calib.yaml") != NULL, "%s", err.msg);
}

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

/* --calib's host section through ddpsim, worked by hand on the host-bound
 * toy of tests/test_host_ops.c: tests/data/tiny-model-dispatch.yaml
 * (dispatches l0 5, l1 2, l2 4; nodes 4, 3, 2) on
 * tests/data/tiny-hostops-topo.yaml (host_dispatch D = 150 us, host_node
 * N = 300 us). Single, fp32: the host's forward 11 D, its backward 9 N,
 * then l0's backward kernel (200 us) and the step (58.728 us): every
 * kernel waits for its launch, so the iteration is 11 D + 9 N + 258.728 us
 * and moves by 11 dD + 9 dN when a calibration changes D and N. */
#define HOST_TOY "--topo tests/data/tiny-hostops-topo.yaml " \
                 "--model tests/data/tiny-model-dispatch.yaml --strategy single --format csv"

/* ddpsim HOST_TOY with `--calib FILE` when text is not NULL (FILE holds
 * text), then the options `extra`; its iteration in us. */
static double host_toy_iter_us(const char *text, const char *extra) {
  char path[64] = "", args[512];
  if (text) {
    strcpy(path, "/tmp/ddpsim-calibh-XXXXXX");
    ds_test_write_temp(path, text);
  }
  snprintf(args, sizeof args, HOST_TOY "%s%s %s", text ? " --calib " : "", path, extra);
  struct ds_test_result r = ds_test_cli(args);
  if (text) unlink(path);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  double us = ds_test_csv_num(r.out, "iter_ms", 0) * 1e3;
  ds_test_release(&r);
  return us;
}

Test(calib, host_section_moves_a_host_bound_iteration_by_hand) {
  const double d_us = 150, n_us = 300, tail_us = 200 + 58.728;
  double base = host_toy_iter_us(NULL, "");
  cr_assert_float_eq(base, 11 * d_us + 9 * n_us + tail_us, 1e-3);
  /* host dispatch doubled: + 11 x 150 = 1650 us exactly */
  double twice = host_toy_iter_us("schema_version: 1\nhost:\n  unit: launching\n"
                                  "  dispatch: 300us\n", "");
  cr_assert_float_eq(twice - base, 11 * d_us, 1e-3, "%g -> %g", base, twice);
  /* and the node too: + 9 x 300 = 2700 us more */
  double both =
      host_toy_iter_us("schema_version: 1\nhost:\n  unit: launching\n"
                       "  dispatch: 300us\n  node: 600us\n", "");
  cr_assert_float_eq(both - twice, 9 * n_us, 1e-3, "%g -> %g", twice, both);
}

/* ddpsim with a bad --calib file: exit 2, the file, line, column and key. */
static void host_calib_refused(const char *text, const char *where, const char *what) {
  char path[64] = "/tmp/ddpsim-calibh-XXXXXX", args[256], want[128];
  ds_test_write_temp(path, text);
  snprintf(args, sizeof args, HOST_TOY " --calib %s", path);
  struct ds_test_result r = ds_test_cli(args);
  unlink(path);
  snprintf(want, sizeof want, "%s%s", path, where);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, want) && strstr(r.err, what), "want %s ... %s\ngot: %s", want, what,
            r.err);
  ds_test_release(&r);
}

Test(calib, bad_host_section_exits_2_with_its_place) {
  host_calib_refused("schema_version: 1\nhost:\n  unit: launching\n  dispatch: 27us\n  op: 50us\n",
                     ":5:3: key 'host': unknown key 'op'", "allowed: unit, dispatch, node");
  host_calib_refused("schema_version: 1\nhost:\n  unit: launching\n  dispatch: 27 parsecs\n",
                     ":4:13: key 'host.dispatch'", "expected a time");
  host_calib_refused("schema_version: 1\nhost:\n  dispatch: 27us\n",
                     ":3:13: key 'host.dispatch'", "without `unit: launching`");
}

Test(calib, host_scale_doubles_exactly_the_host_part) {
  /* --host-scale 2 doubles every host_* cost: the host's 11 D + 9 N
   * (4350 us) becomes 8700 us; the GPU's tail (258.728 us) stays. */
  const double d_us = 150, n_us = 300, tail_us = 200 + 58.728;
  double base = host_toy_iter_us(NULL, "");
  double twice = host_toy_iter_us(NULL, "--host-scale 2");
  cr_assert_float_eq(twice, 2 * (11 * d_us + 9 * n_us) + tail_us, 1e-3, "%g", twice);
  cr_assert_float_eq(twice - base, 11 * d_us + 9 * n_us, 1e-3, "%g -> %g", base, twice);
  /* after --calib: its D = 300 us and N = 600 us, then doubled */
  double both = host_toy_iter_us("schema_version: 1\nhost:\n  unit: launching\n"
                                 "  dispatch: 300us\n  node: 600us\n",
                                 "--host-scale 2");
  cr_assert_float_eq(both, 2 * (11 * 300 + 9 * 600) + tail_us, 1e-3, "%g", both);
}

Test(calib, host_time_without_a_unit_exits_2_with_its_place) {
  /* the units parser takes a bare number as seconds; a host time (tens of
   * us) without one is a unit left out, refused, quoted or not
   * (ds_cnode_time_ns, as every time a file holds); a bare 0 needs none */
  host_calib_refused("schema_version: 1\nhost:\n  unit: launching\n  dispatch: 27\n",
                     ":4:13: key 'host.dispatch'", "expected a time with its unit, got \"27\"");
  host_calib_refused("schema_version: 1\nhost:\n  unit: launching\n"
                     "  dispatch: 27.3us\n  node: \"26.25\"\n",
                     ":5:9: key 'host.node'", "e.g. \"26.25us\" or \"26.25s\"");
  struct ds_calib c;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\nhost:\n  unit: launching\n"
                                       "  dispatch: 0\n", &c, &err,
                                       NULL),
               DS_OK, "%s", err.msg);
  cr_assert_float_eq(c.host_dispatch_ns, 0, 1e-12);
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

/* Which GPU the file names (ds_calib_gpu_fit), by hand: the table's name
 * or one of its smi_names (case insensitive) is this GPU; another name is
 * another GPU; no name is unnamed, whatever the SMs. */
Test(calib, the_gpu_fit_is_by_name_only) {
  struct ds_gpu_spec a100 = {.name = "A100-SXM4-80GB", .sms = 108};
  struct ds_gpu_info info = {.spec = a100, .n_smi_names = 1,
                             .smi_names = {"NVIDIA A100-SXM4-80GB"}};
  struct ds_gpu_table table = {&info, 1};
  struct ds_calib c;
  memset(&c, 0, sizeof c);
  cr_assert_eq(ds_calib_gpu_fit(&c, &a100, &table), DS_CALIB_GPU_UNNAMED);
  snprintf(c.gpu, sizeof c.gpu, "nvidia a100-sxm4-80gb");
  cr_assert_eq(ds_calib_gpu_fit(&c, &a100, &table), DS_CALIB_GPU_SAME);
  cr_assert_eq(ds_calib_gpu_fit(&c, &a100, NULL), DS_CALIB_GPU_OTHER, "no smi_names known");
  snprintf(c.gpu, sizeof c.gpu, "A100-SXM4-80GB");
  cr_assert_eq(ds_calib_gpu_fit(&c, &a100, NULL), DS_CALIB_GPU_SAME);
  snprintf(c.gpu, sizeof c.gpu, "NVIDIA H200");
  cr_assert_eq(ds_calib_gpu_fit(&c, &a100, &table), DS_CALIB_GPU_OTHER);
}

/* A device name without its vendor words is the GPU whose smi name it ends
 * (after a space, any case), on the shipped table, as the GPU table's
 * suggestions read it (ds_gpu_table_by_device_name); words that end two
 * GPUs' smi names, or another GPU's, never make this GPU: each GPU's
 * names meet only its own. */
Test(calib, a_gpu_named_without_its_vendor_words_is_that_gpu_alone) {
  struct ds_gpu_table t;
  struct ds_err err = {0};
  cr_assert_eq(ds_gpu_table_load("topologies/gpus.yaml", &t, &err), DS_OK, "%s", err.msg);
  static const struct {
    const char *file_gpu, *topo_gpu;
    enum ds_calib_gpu_fit want;
  } cases[] = {
      {"H100 80GB HBM3", "H100-SXM5-80GB", DS_CALIB_GPU_SAME},  /* "NVIDIA H100 80GB HBM3" */
      {"h100 80gb hbm3", "H100-SXM5-80GB", DS_CALIB_GPU_SAME},
      {"H100-SXM5-80GB", "H100-SXM5-80GB", DS_CALIB_GPU_SAME},  /* "NVIDIA H100-SXM5-80GB" */
      {"H100 PCIe", "H100-PCIE-80GB", DS_CALIB_GPU_SAME},       /* "NVIDIA H100 PCIe" */
      {"GeForce RTX 4090", "RTX4090-24GB", DS_CALIB_GPU_SAME},  /* "NVIDIA GeForce RTX 4090" */
      {"RTX 4090", "RTX4090-24GB", DS_CALIB_GPU_SAME},
      {"H100 80GB HBM3", "H200-SXM-141GB", DS_CALIB_GPU_OTHER}, /* the H100's, not the H200's */
      {"H100 PCIe", "A100-PCIE-80GB", DS_CALIB_GPU_OTHER},
      {"PCIe", "H100-PCIE-80GB", DS_CALIB_GPU_OTHER},  /* ends the A100's and the H100's */
      {"PCIe", "A100-PCIE-80GB", DS_CALIB_GPU_OTHER},
      {"B200", "GB200-186GB", DS_CALIB_GPU_OTHER},     /* "NVIDIA GB200": no space before */
      {"H20", "H200-SXM-141GB", DS_CALIB_GPU_OTHER},   /* a whole word, not a prefix */
      {"A10", "A100-PCIE-40GB", DS_CALIB_GPU_OTHER},
      {"A10", "A10-24GB", DS_CALIB_GPU_SAME},          /* "NVIDIA A10" */
      {"V100-SXM2-16GB", "V100-SXM2-16GB", DS_CALIB_GPU_SAME}, /* "Tesla V100-SXM2-16GB" */
      /* the model's own words left out: a guess, however unique */
      {"HBM3", "H100-SXM5-80GB", DS_CALIB_GPU_OTHER},  /* "NVIDIA H100 80GB HBM3" */
      {"80GB HBM3", "H100-SXM5-80GB", DS_CALIB_GPU_OTHER},
      {"4090", "RTX4090-24GB", DS_CALIB_GPU_OTHER},    /* "NVIDIA GeForce RTX 4090" */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const struct ds_gpu_info *g = ds_gpu_table_find(&t, cases[i].topo_gpu);
    cr_assert_not_null(g, "%s", cases[i].topo_gpu);
    struct ds_calib c;
    memset(&c, 0, sizeof c);
    snprintf(c.gpu, sizeof c.gpu, "%s", cases[i].file_gpu);
    cr_assert_eq(ds_calib_gpu_fit(&c, &g->spec, &t), cases[i].want, "\"%s\" on %s",
                 cases[i].file_gpu, cases[i].topo_gpu);
  }
  ds_gpu_table_release(&t);
}

/* ddpsim with an efficiency file on 4gpu's A100: measured where the file
 * names the A100, a stand-in labelled with the other GPU (the table's name
 * for the device's) and a warning naming file, key and both GPUs where it
 * names an H200, and "names no GPU" (line and warning) where it names none. The same values
 * apply in all three (fractions of this GPU's peak): the iteration does
 * not move. */
#define GPU_CALIB(GPU) "schema_version: 1\n" GPU "efficiency:\n  conv_tf32: 0.3\n" \
                       "  matmul_fp32: 0.6\ncompute:\n  mem_efficiency: 0.8\n"
static struct ds_test_result gpu_calib_run(const char *text, const char *format) {
  char path[64] = "/tmp/ddpsim-calibg-XXXXXX", args[256];
  ds_test_write_temp(path, text);
  snprintf(args, sizeof args, "--topo 4gpu --calib %s --format %s", path, format);
  struct ds_test_result r = ds_test_cli(args);
  unlink(path);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  return r;
}

Test(calib, a_file_from_another_gpu_is_not_called_measured) {
  struct ds_test_result same = gpu_calib_run(GPU_CALIB("gpu: \"NVIDIA A100-SXM4-80GB\"\n"), "text");
  cr_assert(strstr(same.out, "compute rates: measured (--calib) for conv_tf32, matmul_fp32, "
                             "memory\n"), "%s", same.out);
  cr_assert_str_eq(same.err, "");
  struct ds_test_result other = gpu_calib_run(GPU_CALIB("gpu: \"NVIDIA H200\"\n"), "text");
  cr_assert(strstr(other.out, "compute rates: a stand-in (--calib's, measured on "
                              "H200-SXM-141GB) for conv_tf32, matmul_fp32, memory\n"),
            "%s", other.out);
  cr_assert(strstr(other.err, "ddpsim: warning: /tmp/ddpsim-calibg-"), "%s", other.err);
  cr_assert(strstr(other.err, ": key 'gpu': measured on NVIDIA H200, not "), "%s", other.err);
  cr_assert(strstr(other.err, "4gpu.yaml's A100-SXM4-80GB: its efficiencies (fractions of that "
                              "GPU's peak) stand in for this GPU's"), "%s", other.err);
  struct ds_test_result none = gpu_calib_run(GPU_CALIB(""), "text");
  cr_assert(strstr(none.out, "compute rates: measured (--calib; the file names no GPU) for "
                             "conv_tf32, matmul_fp32, memory\n"), "%s", none.out);
  /* warned as the other GPU's is (it said nothing before) */
  cr_assert(strstr(none.err, "ddpsim: warning: /tmp/ddpsim-calibg-") &&
                strstr(none.err, ": names no GPU (no top-level key 'gpu'") &&
                strstr(none.err, "4gpu.yaml's A100-SXM4-80GB's, which ddpsim cannot check"),
            "%s", none.err);
  const char *a = strstr(same.out, "  iteration "), *b = strstr(other.out, "  iteration ");
  cr_assert(a && b && strcspn(a, "\n") == strcspn(b, "\n") &&
                strncmp(a, b, strcspn(a, "\n")) == 0,
            "%s\n%s", same.out, other.out);
  ds_test_release(&same);
  ds_test_release(&other);
  ds_test_release(&none);
  /* CSV and JSON name the source apart */
  struct ds_test_result csv = gpu_calib_run(GPU_CALIB("gpu: \"NVIDIA H200\"\n"), "csv");
  cr_assert(strstr(csv.out, "conv_tf32=calib_other_gpu;matmul_fp32=calib_other_gpu;"
                            "memory=calib_other_gpu"), "%s", csv.out);
  ds_test_release(&csv);
  struct ds_test_result json = gpu_calib_run(GPU_CALIB("gpu: \"NVIDIA H200\"\n"), "json");
  cr_assert(strstr(json.out, "{\"rate\": \"memory\", \"source\": \"calib_other_gpu\", "
                             "\"proxy\": \"measured on H200-SXM-141GB\"}"), "%s", json.out);
  ds_test_release(&json);
}

/* The other-GPU warning writes its paths and GPU names whole and
 * printable: a review found `path[256]` and `topo[256]` cut a long --calib
 * path (and the topology's) silently, and the topology's GPU name printed
 * raw (a BEL or ESC in a gpus.yaml name reached the terminal). Here both
 * paths are over 300 bytes and both names hold a control character. */
Test(calib, the_other_gpu_warning_writes_long_paths_and_odd_names_whole) {
  char dir[512] = "/tmp/ddpsim-calibwarn-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  size_t n = strlen(dir);
  char *sub1 = dir + n;
  snprintf(dir + n, sizeof dir - n, "/%0200d", 0); /* one 200-byte component of zeros */
  cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
  n = strlen(dir);
  snprintf(dir + n, sizeof dir - n, "/%0100d", 1);
  cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
  char topo[600], gpus[600], calib[600], args[2048];
  snprintf(topo, sizeof topo, "%s/t.yaml", dir);
  snprintf(gpus, sizeof gpus, "%s/gpus.yaml", dir);
  snprintf(calib, sizeof calib, "%s/c.yaml", dir);
  cr_assert_gt(strlen(calib), 300);
  ds_test_write_file(gpus,
                     "schema_version: 1\ngpus:\n  - name: \"Test\\aGPU\"\n    # no arch\n"
                     "    sms: 10\n    fp32: 10TFLOPS\n    fp16: 20TFLOPS\n    mem: 16GiB\n"
                     "    mem_bw: 1000GBps\n");
  ds_test_write_file(topo,
                     "schema_version: 1\nname: tiny\ngpu: \"Test\\aGPU\"\nnodes: 1\n"
                     "gpus_per_node: 2\nintra_node:\n  template: nvswitch\n  link_bw: 10GBps\n"
                     "  link_lat: 1us\n");
  ds_test_write_file(calib,
                     "schema_version: 1\ngpu: \"NVIDIA\\eH200\"\ncompute:\n"
                     "  flops_efficiency: 0.5\n");
  snprintf(args, sizeof args, "--topo %s --model tests/data/tiny-model.yaml --calib %s", topo,
           calib);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char want[2048];
  /* this table has no such GPU: the warning lists its names between */
  snprintf(want, sizeof want, "ddpsim: warning: %s: key 'gpu': measured on NVIDIA?H200 (a GPU "
           "the GPU table does not know: ", calib);
  cr_assert(strstr(r.err, want), "%s", r.err);
  snprintf(want, sizeof want, "Test?GPU), not %s's Test?GPU: its efficiencies", topo);
  cr_assert(strstr(r.err, want), "%s", r.err);
  cr_assert_null(strpbrk(r.err, "\a\x1b"), "%s", r.err);
  ds_test_release(&r);
  unlink(topo);
  unlink(gpus);
  unlink(calib);
  rmdir(dir);
  *strrchr(dir, '/') = 0;
  rmdir(dir);
  *sub1 = 0;
  rmdir(dir);
}

/* nccl.interference_blocks against the measured GPU's SMs (4gpu: the
 * A100-SXM4-80GB's 108): 108 blocks leave the GEMM no SM and are refused,
 * exit 2, naming file, line and key; interference_predicted must be
 * 108 / (108 - 16) = 1.17391 within 1 % (1.17 passes: 0.3 %; H100's 1.1379
 * for 16 blocks of 132 SMs is 3 % off and refused). A file naming the H200
 * is checked against the H200's 132 SMs instead. */
#define INTERF(GPU, BLOCKS, PRED) "schema_version: 1\n" GPU "nccl:\n  interference_blocks: " \
  BLOCKS "\n  interference_slowdown: 1.2\n  interference_predicted: " PRED "\n"
static struct ds_test_result interf_run(const char *text, char *path) {
  char args[256];
  strcpy(path, "/tmp/ddpsim-calibi-XXXXXX");
  ds_test_write_temp(path, text);
  snprintf(args, sizeof args, "--topo 4gpu --model tests/data/tiny-model.yaml --calib %s",
           path);
  struct ds_test_result r = ds_test_cli(args);
  unlink(path);
  return r;
}

Test(calib, interference_blocks_are_checked_against_the_gpus_sms) {
  char path[64], want[256];
  struct ds_test_result r = interf_run(INTERF("", "108", "2"), path);
  snprintf(want, sizeof want, "%s:3: key 'interference_blocks': expected fewer blocks than "
           "A100-SXM4-80GB's 108 SMs", path);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, want), "%s\nin: %s", want, r.err);
  ds_test_release(&r);
  r = interf_run(INTERF("", "16", "1.1379"), path);
  snprintf(want, sizeof want, "%s:5: key 'interference_predicted': expected A100-SXM4-80GB's "
           "SMs / (SMs - interference_blocks) = 108 / (108 - 16) = 1.17391 (within 1 %%), got "
           "1.1379", path);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, want), "%s\nin: %s", want, r.err);
  ds_test_release(&r);
  r = interf_run(INTERF("", "16", "1.17"), path);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  r = interf_run(INTERF("gpu: \"NVIDIA H200\"\n", "16", "1.1379"), path);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  r = interf_run(INTERF("gpu: \"NVIDIA H200\"\n", "132", "2"), path);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "key 'interference_blocks': expected fewer blocks than "
                          "H200-SXM-141GB's 132 SMs"), "%s", r.err);
  ds_test_release(&r);
}

/* A gpu the GPU table does not know (a typo, or a GPU without a row)
 * applies as another GPU's stand-in, as docs/architecture.md gives the
 * reason for (fractions of its peak), and the warning lists the table's
 * names so that a typo shows. */
Test(calib, an_unknown_gpu_name_warns_with_the_tables_names) {
  struct ds_test_result r = gpu_calib_run(GPU_CALIB("gpu: Banana 9000\n"), "text");
  cr_assert(strstr(r.err, ": key 'gpu': measured on Banana 9000 (a GPU the GPU table does not "
                          "know: V100-SXM2-16GB, "), "%s", r.err);
  cr_assert(strstr(r.err, "H100-SXM5-80GB, ") && strstr(r.err, "L40S-48GB"), "%s", r.err);
  ds_test_release(&r);
  r = gpu_calib_run(GPU_CALIB("gpu: \"NVIDIA H200\"\n"), "text");
  cr_assert_null(strstr(r.err, "does not know"), "%s", r.err);
  ds_test_release(&r);
}

/* --calib's DDP keys through ddpsim, worked by hand on tests/test_host.c's
 * host-bound DDP toy: tests/data/tiny-model.yaml (4 gradients) on
 * tests/data/tiny-host-topo.yaml (host_launch L = 1000 us, host_backward
 * H = 2000, host_grad_hook K = 300, host_grad_copy P = 200, host_collective
 * C = 500, host_buffer B = 400). At one rank the iteration is 3 L + 3 H +
 * 4 K + n C + 4 P + the step (58.728 us), n buckets: the host's sum, so a
 * per-gradient cost G in place of K + P moves it by 4 (G - K - P) and a
 * per-bucket cost by n (C' - C). */
#define DDP_TOY "--topo tests/data/tiny-host-topo.yaml --strategy ddp --world-size 1 " \
                "--format csv "
#define TOY_L 1000.0
#define TOY_H 2000.0
#define TOY_K 300.0
#define TOY_P 200.0
#define TOY_C 500.0
#define TOY_B 400.0
#define TOY_STEP 58.728

/* ddpsim DDP_TOY with `--calib FILE` when text is not NULL (FILE holds
 * text), then `extra`; the iteration (us) of each of its n rows into it. */
static void ddp_toy_iter_us(const char *text, const char *extra, double *it, int n) {
  char path[64] = "", args[768];
  if (text) {
    strcpy(path, "/tmp/ddpsim-calibd-XXXXXX");
    ds_test_write_temp(path, text);
  }
  snprintf(args, sizeof args, DDP_TOY "%s%s %s", text ? "--calib " : "", path, extra);
  struct ds_test_result r = ds_test_cli(args);
  if (text) unlink(path);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  for (int k = 0; k < n; k++) it[k] = ds_test_csv_num(r.out, "iter_ms", k) * 1e3;
  ds_test_release(&r);
}

Test(calib, ddp_keys_move_a_host_bound_ddp_iteration_by_hand) {
  /* --bucket-mb 1,25: 3 buckets and 1 (tests/test_host.c) */
  const int n_b[] = {3, 1};
  double base[2], grad[2], both[2];
  ddp_toy_iter_us(NULL, "--model tests/data/tiny-model.yaml --bucket-mb 1,25", base, 2);
  for (int k = 0; k < 2; k++)
    cr_assert_float_eq(base[k], 3 * TOY_L + 3 * TOY_H + 4 * (TOY_K + TOY_P) + n_b[k] * TOY_C +
                       TOY_STEP, 1e-3, "%g", base[k]);
  /* ddp_grad 1350 us a gradient: 4 x (1350 - 500) = 3400 us more, either cap */
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_grad: 1350us\n",
                  "--model tests/data/tiny-model.yaml --bucket-mb 1,25", grad, 2);
  for (int k = 0; k < 2; k++)
    cr_assert_float_eq(grad[k] - base[k], 4 * (1350 - TOY_K - TOY_P), 1e-3, "%g -> %g",
                       base[k], grad[k]);
  /* and ddp_bucket 700 us a call: n x 200 us more, 600 at 3 buckets, 200 at 1 */
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_grad: 1350us\n  ddp_bucket: 700us\n",
                  "--model tests/data/tiny-model.yaml --bucket-mb 1,25", both, 2);
  for (int k = 0; k < 2; k++)
    cr_assert_float_eq(both[k] - grad[k], n_b[k] * (700 - TOY_C), 1e-3, "%g -> %g", grad[k],
                       both[k]);
}

Test(calib, ddp_grad_under_the_bucket_view_keeps_the_hooks_share) {
  /* --grad-as-bucket-view drops the copies back (P per gradient): 3 L +
   * 3 H + 4 K + 2 C + step (default caps: 2 buckets). With ddp_grad 1350
   * us, K = 1350 - 5.8 = 1344.2 us: 4 x (1344.2 - 300) = 4176.8 us more,
   * not 4 x (1350 - 300) (the copy's 5.8 us goes with the view). */
  double base, view;
  ddp_toy_iter_us(NULL, "--model tests/data/tiny-model.yaml --grad-as-bucket-view", &base, 1);
  cr_assert_float_eq(base, 3 * TOY_L + 3 * TOY_H + 4 * TOY_K + 2 * TOY_C + TOY_STEP, 1e-3, "%g",
                     base);
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_grad: 1350us\n",
                  "--model tests/data/tiny-model.yaml --grad-as-bucket-view", &view, 1);
  cr_assert_float_eq(view - base, 4 * (1350 - 5.8 - TOY_K), 1e-3, "%g -> %g", base,
                     view);
}

Test(calib, ddp_buffer_moves_broadcast_buffers_by_hand) {
  /* tests/test_host.c broadcast_buffers_by_hand's model: three buffers in
   * two dtype buckets; broadcast_buffers adds 2 (P + C) + 3 B of host
   * before the first forward. ddp_buffer 900 us: 3 x (900 - 400) = 1500
   * us more; with ddp_grad 1350 and ddp_bucket 700 too, the buckets' part
   * is 2 (5.8 + 700) (P = the copy's launch, 5.8 us). */
  char path[64] = "/tmp/ddpsim-calibm-XXXXXX", model[96];
  char *tiny = ds_test_slurp("tests/data/tiny-model.yaml");
  size_t cap = strlen(tiny) + 512;
  char *text = malloc(cap);
  cr_assert(text);
  cr_assert_lt(snprintf(text, cap, "%sbuffers:\n"
                        "  - {name: bn.running_mean, numel: 1000, bytes: 4000, dtype: float32}\n"
                        "  - {name: bn.num_batches_tracked, numel: 1, bytes: 8, dtype: int64}\n"
                        "  - {name: bn.running_var, numel: 3000, bytes: 12000, dtype: float32}\n",
                        tiny), (int)cap);
  ds_test_write_temp(path, text);
  free(text);
  free(tiny);
  snprintf(model, sizeof model, "--model %s", path);
  char nob[160];
  snprintf(nob, sizeof nob, "%s --no-broadcast-buffers", model);
  double with, without, buf, buf_off, all, all_off;
  ddp_toy_iter_us(NULL, model, &with, 1);
  ddp_toy_iter_us(NULL, nob, &without, 1);
  cr_assert_float_eq(with - without, 2 * (TOY_P + TOY_C) + 3 * TOY_B, 1e-3);
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_buffer: 900us\n", model, &buf, 1);
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_buffer: 900us\n", nob, &buf_off, 1);
  cr_assert_float_eq(buf - with, 3 * (900 - TOY_B), 1e-3, "%g -> %g", with, buf);
  cr_assert_float_eq(buf_off, without, 1e-3, "no broadcast, no buffer cost");
  const char *three = "schema_version: 1\nhost:\n  ddp_grad: 1350us\n  ddp_bucket: 700us\n"
                      "  ddp_buffer: 900us\n";
  ddp_toy_iter_us(three, model, &all, 1);
  ddp_toy_iter_us(three, nob, &all_off, 1);
  cr_assert_float_eq(all - all_off, 2 * (5.8 + 700) + 3 * 900, 1e-3, "%g - %g",
                     all, all_off);
  unlink(path);
}

Test(calib, bad_ddp_host_key_exits_2_with_its_place) {
  host_calib_refused("schema_version: 1\nhost:\n  ddp_grad: 33us\n  ddp_buckets: 45us\n",
                     ":4:3: key 'host': unknown key 'ddp_buckets'",
                     "allowed: unit, dispatch, node, ddp_grad, ddp_bucket, ddp_buffer, ddp_iter");
  host_calib_refused("schema_version: 1\nhost:\n  ddp_grad: 33\n",
                     ":3:13: key 'host.ddp_grad'", "expected a time with its unit, got \"33\"");
}
