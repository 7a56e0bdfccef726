/*
 * The loader of `ddpreal calibrate`'s files (sim/train/calib.c): a file
 * overrides exactly the compute, host and collective keys it has, and bad
 * files give "FILE:LINE:COL: key" errors with nothing half-loaded. The
 * writer: test_calib_write.c; which GPU a file is from:
 * test_calib_gpu.c; its host keys through ddpsim: test_calib_host.c. No
 * GPU needed.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/calib.h"
#include "tests/calib_bad.h"
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
