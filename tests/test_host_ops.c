/*
 * The host's cost per unit of work (sim/train/host.h): a model file with
 * host counts (top-level ops per forward layer, autograd nodes per backward
 * layer, autocast's casts and their nodes) is charged host_op, host_cast
 * and host_node per unit; a file without keeps one cost per layer
 * (host_launch, host_backward). Worked by hand on tests/data/tiny-model-host.yaml
 * with tests/data/tiny-hostops-topo.yaml.
 *
 * Counts (ops, nodes, casts, cast nodes): l0 (2, 4, 3, 2), l1 (1, 3, 2, 1),
 * l2 (3, 2, 1, 1). Costs: host_op O = 400 us, host_cast X = 100 us,
 * host_node N = 300 us. So the host's forward is l0 800, l1 400, l2 1200 us
 * (2400) and its backward l2 600, l1 900, l0 1200 us (2700); under --amp
 * forward l0 2 O + 3 X = 1100, l1 600, l2 1300 (3000) and backward
 * l2 3 N = 900, l1 1200, l0 1800 (3900). Kernels as in tests/test_host.c:
 * forward 100, 200, 100 us, loss 2, backward 200, 400, 200, step 58.728.
 *
 * tests/data/tiny-model-dispatch.yaml adds host_dispatches (aten ops
 * dispatched, nested ones included) l0 5, l1 2, l2 4; the topology's
 * host_dispatch D = 150 us. Its forward is then charged per dispatch:
 * l0 750, l1 300, l2 600 us (1650), under --amp l0 5 D + 3 X = 1050,
 * l1 500, l2 700; the backward stays per node (2700; 3900 under --amp).
 * tiny-model-host.yaml, without host_dispatches, keeps host_op per
 * top-level op on the same topology (the fallback).
 *
 * tests/data/tiny-model-views.yaml adds host_views (the dispatches that
 * launch no kernel) l0 2, l1 0, l2 3: only the other dispatches are
 * charged, l0 (5 - 2) D = 450, l1 2 D = 300, l2 (4 - 3) D = 150 us (900),
 * under --amp l0 450 + 3 X = 750, l1 300 + 2 X = 500, l2 150 + X = 250;
 * the backward as before (2700; 3900 under --amp).
 *
 * tests/data/tiny-model-view-nodes.yaml adds host_view_nodes (a view's
 * backward nodes) l0 1, l1 0, l2 1: only the other nodes are charged,
 * l2 (2 - 1) N = 300, l1 3 N = 900, l0 (4 - 1) N = 900 us (2100), under
 * --amp plus the cast nodes: l2 600, l1 1200, l0 1500; the forward as
 * tiny-model-views.yaml's.
 *
 * tests/data/tiny-model-view-nodes-amp.yaml adds host_view_nodes_amp (the
 * nodes that launch nothing under autocast) l0 0, l1 0, l2 1: under --amp
 * they replace host_view_nodes, so l0 (4 - 0 + 2) N = 1800 (1500 without
 * the key: its one view node casts under autocast), l1 (3 - 0 + 1) N =
 * 1200, l2 (2 - 1 + 1) N = 600 us; without --amp host_view_nodes still
 * holds (900, 900, 300).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"
#include "traces/schedule.h"
#include "traces/trace.h"

#define TOPO "--topo tests/data/tiny-hostops-topo.yaml "
#define COUNTED TOPO "--model tests/data/tiny-model-host.yaml "
#define O_US 400.0
#define X_US 100.0
#define D_US 150.0 /* host_dispatch */
#define DISPATCH_MODEL "tests/data/tiny-model-dispatch.yaml"
#define DISPATCH TOPO "--model " DISPATCH_MODEL " "
#define VIEWS_MODEL "tests/data/tiny-model-views.yaml"
#define VIEW_NODES_MODEL "tests/data/tiny-model-view-nodes.yaml"
#define VIEW_NODES_AMP_MODEL "tests/data/tiny-model-view-nodes-amp.yaml"
#define N_US 300.0
#define K_US 300.0 /* host_grad_hook */
#define P_US 200.0 /* host_grad_copy */
#define C_US 500.0 /* host_collective */
#define STEP_US 58.728

static double iter_us(const char *args) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  double us = ds_test_csv_num(r.out, "iter_ms", 0) * 1e3;
  ds_test_release(&r);
  return us;
}

Test(host_ops, host_bound_iteration_is_counts_times_costs) {
  /* Every kernel waits for its launch: the forward's host ends at
   * 2400 us, the autograd thread's at 2400 + 2700; then l0's backward
   * kernel and the step. */
  double want = (2 + 1 + 3) * O_US + (4 + 3 + 2) * N_US + 200 + STEP_US;
  cr_assert_float_eq(iter_us(COUNTED "--strategy single --format csv"), want, 1e-3);
}

Test(host_ops, a_file_with_dispatches_is_charged_per_dispatch) {
  double want = (5 + 2 + 4) * D_US + (4 + 3 + 2) * N_US + 200 + STEP_US;
  cr_assert_float_eq(iter_us(DISPATCH "--strategy single --format csv"), want, 1e-3);
}

Test(host_ops, a_file_without_dispatches_falls_back_to_host_op) {
  /* the topology sets host_dispatch too; the file has no host_dispatches */
  double want = (2 + 1 + 3) * O_US + (4 + 3 + 2) * N_US + 200 + STEP_US;
  double per_op = iter_us(COUNTED "--strategy single --format csv");
  cr_assert_float_eq(per_op, want, 1e-3);
  cr_assert_float_eq(iter_us(DISPATCH "--strategy single --format csv") - per_op,
                     (5 + 2 + 4) * D_US - (2 + 1 + 3) * O_US, 1e-3);
}

Test(host_ops, gpu_bound_iteration_hides_the_host) {
  /* 10 us per op, cast and node: every launch after the first ends before
   * the kernel ahead of it, so the iteration is l0's launch (2 ops) and
   * the kernels: 20 + 400 + 2 + 800 + 58.728 us. */
  char dir[] = "/tmp/ddpsim-hostops-XXXXXX", path[512], args[1024];
  ds_test_make_dir(dir);
  ds_test_write_topo(dir, "tests/data/tiny-hostops-topo.yaml", "  host_op:",
                     "  host_op: 10us\n  host_cast: 10us\n  host_node: 10us\n", path,
                     sizeof path);
  snprintf(args, sizeof args,
           "--topo %s/t.yaml --model tests/data/tiny-model-host.yaml --strategy single "
           "--format csv", dir);
  cr_assert_float_eq(iter_us(args), 20 + 400 + 2 + 800 + STEP_US, 1e-3);
  ds_test_remove_dir(dir);
}

Test(host_ops, a_model_without_counts_keeps_the_per_layer_rule) {
  /* tiny-model.yaml has no host counts: host_launch (1000 us) per forward
   * layer and host_backward (2000 us) per backward layer, whatever
   * host_op and host_node say (tests/test_host.c's sum). */
  double want = 3 * 1000.0 + 3 * 2000.0 + 200 + STEP_US;
  cr_assert_float_eq(iter_us(TOPO "--model tests/data/tiny-model.yaml --strategy single "
                                  "--format csv"),
                     want, 1e-3);
}

Test(host_ops, ddp_adds_the_reducer_to_the_counted_host) {
  /* One rank, default caps ([l2.weight] [the rest]): the host's forward
   * and backward, a hook per gradient (4), a call per bucket (2), a copy
   * back per gradient (4), then the step. */
  double want = 2400 + 2700 + 4 * K_US + 2 * C_US + 4 * P_US + STEP_US;
  cr_assert_float_eq(iter_us(COUNTED "--strategy ddp --world-size 1 --format csv"), want,
                     1e-3);
}

/* The host ops of a schedule written by ddpsim ARGS --schedule dir/s.csv:
 * fwd[l] and bwd[l] get each layer's launch duration (us). */
static void host_ops_in(const char *model, const char *dir, const char *args, double fwd[3],
                        double bwd[3]) {
  char cmd[1024], path[512];
  snprintf(path, sizeof path, "%s/s.csv", dir);
  snprintf(cmd, sizeof cmd, TOPO "--model %s %s --schedule %s", model, args, path);
  struct ds_test_result r = ds_test_cli(cmd);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  struct ds_schedule *s;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_read_csv(path, &s, &err), DS_OK, "%s", err.msg);
  for (int l = 0; l < 3; l++) fwd[l] = bwd[l] = -1;
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (o->stream != DS_STREAM_HOST || strcmp(o->name, "launch") != 0) continue;
    cr_assert(o->layer >= 0 && o->layer < 3);
    (o->kind == DS_OP_FWD ? fwd : bwd)[o->layer] = o->dur_us;
  }
  ds_schedule_free(s);
}

/* host_ops_in of model under ARGS, in a directory of its own: each layer's
 * forward and backward launch against want_fwd and want_bwd (NULL: that
 * side not checked); label names the run in a failure ("fp32 forward l0"). */
static void expect_launches(const char *model, const char *args, const char *label,
                            const double want_fwd[3], const double want_bwd[3]) {
  char dir[] = "/tmp/ddpsim-hostops-XXXXXX";
  ds_test_make_dir(dir);
  double fwd[3], bwd[3];
  host_ops_in(model, dir, args, fwd, bwd);
  for (int l = 0; l < 3; l++) {
    if (want_fwd) cr_assert_float_eq(fwd[l], want_fwd[l], 1e-6, "%s forward l%d", label, l);
    if (want_bwd) cr_assert_float_eq(bwd[l], want_bwd[l], 1e-6, "%s backward l%d", label, l);
  }
  ds_test_remove_dir(dir);
}

Test(host_ops, dataparallel_threads_take_the_gil_in_turn_and_dispatch_beside_it) {
  /* DataParallel on 2 GPUs, tiny-model-dispatch.yaml's forward host time
   * per layer (own: 750, 300, 600 us) with the GIL held for host_launch G =
   * 200 us of it. Replica r's first launch: its turn after the r before it,
   * then its own: (r + 1) G + 750 - G = 750 (r 0), 950 (r 1). Later
   * launches come every max(W G, own): l1 max(400, 300) = 400 (the GIL
   * binds), l2 max(400, 600) = 600 (its own dispatches bind). (W G + own -
   * G, the rest serialised after the turns: 500 and 800.) */
  char dir[] = "/tmp/ddpsim-gil-XXXXXX", path[600], cmd[1200];
  ds_test_make_dir(dir);
  ds_test_write_topo(dir, "tests/data/tiny-hostops-topo.yaml", "  host_launch:",
                     "  host_launch: 200us\n  host_backward: 2000us\n  host_op: 400us\n"
                     "  host_dispatch: 150us\n  host_node: 300us\n", path, sizeof path);
  snprintf(cmd, sizeof cmd,
           "--topo %s/t.yaml --model tests/data/tiny-model-dispatch.yaml --strategy dp "
           "--world-size 2 --schedule %s/s.csv", dir, dir);
  struct ds_test_result r = ds_test_cli(cmd);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  snprintf(path, sizeof path, "%s/s.csv", dir);
  struct ds_schedule *s;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_read_csv(path, &s, &err), DS_OK, "%s", err.msg);
  double got[2][3] = {{-1, -1, -1}, {-1, -1, -1}};
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (o->stream == DS_STREAM_HOST && o->kind == DS_OP_FWD && strcmp(o->name, "launch") == 0)
      got[o->rank][o->layer] = o->dur_us;
  }
  ds_schedule_free(s);
  const double want[2][3] = {{750, 400, 600}, {950, 400, 600}};
  for (int k = 0; k < 2; k++)
    for (int l = 0; l < 3; l++)
      cr_assert_float_eq(got[k][l], want[k][l], 1e-9, "rank %d layer %d: %g", k, l, got[k][l]);
  ds_test_remove_dir(dir);
}

Test(host_ops, dispatches_times_cost_per_layer_casts_and_nodes_as_before) {
  const char *model = "tests/data/tiny-model-dispatch.yaml";
  const double f32_fwd[] = {5 * D_US, 2 * D_US, 4 * D_US};
  const double f32_bwd[] = {4 * N_US, 3 * N_US, 2 * N_US};
  expect_launches(model, "--strategy single", "fp32", f32_fwd, f32_bwd);
  const double amp_fwd[] = {1050, 500, 700}, amp_bwd[] = {1800, 1200, 900};
  expect_launches(model, "--strategy single --amp fp16", "amp", amp_fwd, amp_bwd);
}

Test(host_ops, a_file_with_views_charges_only_the_kernel_launching_dispatches) {
  double want = (3 + 2 + 1) * D_US + (4 + 3 + 2) * N_US + 200 + STEP_US;
  cr_assert_float_eq(iter_us(TOPO "--model " VIEWS_MODEL " --strategy single --format csv"),
                     want, 1e-3);
  /* the same file less its views is charged 5 views more: 5 D */
  cr_assert_float_eq(iter_us(DISPATCH "--strategy single --format csv") - want, 5 * D_US, 1e-3);
}

Test(host_ops, views_cost_nothing_per_layer_casts_and_nodes_as_before) {
  const double f32_fwd[] = {450, 300, 150}, f32_bwd[] = {1200, 900, 600};
  expect_launches(VIEWS_MODEL, "--strategy single", "fp32", f32_fwd, f32_bwd);
  const double amp_fwd[] = {750, 500, 250}, amp_bwd[] = {1800, 1200, 900};
  expect_launches(VIEWS_MODEL, "--strategy single --amp fp16", "amp", amp_fwd, amp_bwd);
}

Test(host_ops, view_nodes_cost_nothing_in_backward) {
  double want = (3 + 2 + 1) * D_US + (3 + 3 + 1) * N_US + 200 + STEP_US;
  cr_assert_float_eq(
      iter_us(TOPO "--model " VIEW_NODES_MODEL " --strategy single --format csv"), want, 1e-3);
  const double f32_fwd[] = {450, 300, 150}, f32_bwd[] = {900, 900, 300};
  expect_launches(VIEW_NODES_MODEL, "--strategy single", "fp32", f32_fwd, f32_bwd);
  const double amp_bwd[] = {1500, 1200, 600};
  expect_launches(VIEW_NODES_MODEL, "--strategy single --amp fp16", "amp", NULL, amp_bwd);
}

Test(host_ops, amp_charges_the_nodes_that_launch_nothing_under_autocast) {
  char dir[] = "/tmp/ddpsim-hostviewnodesamp-XXXXXX";
  ds_test_make_dir(dir);
  double fwd[3], bwd[3], old_fwd[3], old_bwd[3];
  /* fp32: host_view_nodes, as the file without the key */
  host_ops_in(VIEW_NODES_AMP_MODEL, dir, "--strategy single", fwd, bwd);
  const double f32_bwd[] = {900, 900, 300};
  for (int l = 0; l < 3; l++)
    cr_assert_float_eq(bwd[l], f32_bwd[l], 1e-6, "fp32 backward l%d", l);
  /* --amp: host_view_nodes_amp; l0's view node is charged */
  host_ops_in(VIEW_NODES_AMP_MODEL, dir, "--strategy single --amp fp16", fwd, bwd);
  host_ops_in(VIEW_NODES_MODEL, dir, "--strategy single --amp fp16", old_fwd, old_bwd);
  const double amp_bwd[] = {1800, 1200, 600}, old_amp_bwd[] = {1500, 1200, 600};
  for (int l = 0; l < 3; l++) {
    cr_assert_float_eq(bwd[l], amp_bwd[l], 1e-6, "amp backward l%d", l);
    cr_assert_float_eq(old_bwd[l], old_amp_bwd[l], 1e-6, "amp backward l%d without the key",
                       l);
    cr_assert_float_eq(fwd[l], old_fwd[l], 1e-6, "amp forward l%d", l);
  }
  ds_test_remove_dir(dir);
}

Test(host_ops, autocast_adds_its_casts_and_their_nodes) {
  const char *model = "tests/data/tiny-model-host.yaml";
  const double f32_fwd[] = {2 * O_US, 1 * O_US, 3 * O_US}, f32_bwd[] = {4 * N_US, 3 * N_US,
                                                                          2 * N_US};
  expect_launches(model, "--strategy single", "fp32", f32_fwd, f32_bwd);
  const double amp_fwd[] = {2 * O_US + 3 * X_US, O_US + 2 * X_US, 3 * O_US + X_US};
  const double amp_bwd[] = {(4 + 2) * N_US, (3 + 1) * N_US, (2 + 1) * N_US};
  expect_launches(model, "--strategy single --amp fp16", "amp", amp_fwd, amp_bwd);
  /* DDP's launches are the same ops */
  expect_launches(model, "--strategy ddp --world-size 2 --amp fp16", "ddp amp", amp_fwd, amp_bwd);
}

/* tiny-model-host.yaml with the first occurrence of `from` replaced by `to`,
 * run; expects exit 2 with msg in stderr and FILE:LINE, LINE that of `from`
 * (of `anchor` when given: a rule over a layer names the layer). */
static void refuses_in(const char *model, const char *from, const char *to, const char *msg,
                       const char *anchor) {
  char *text = ds_test_slurp(model);
  char *at = strstr(text, from);
  cr_assert(at, "%s", from);
  const char *mark = anchor ? strstr(text, anchor) : at;
  cr_assert(mark, "%s", anchor);
  int line = 1;
  for (const char *p = text; p < mark; p++) line += *p == '\n';
  size_t cap = strlen(text) + strlen(to) + 1;
  char *edited = malloc(cap);
  cr_assert(edited);
  snprintf(edited, cap, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  char path[] = "/tmp/ddpsim-hostops-model-XXXXXX";
  ds_test_write_temp(path, edited);
  char args[700], where[600];
  snprintf(args, sizeof args, TOPO "--model %s", path);
  snprintf(where, sizeof where, "%s:%d:", path, line);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 2, "%s -> %s: status %d, %s", from, to, r.status, r.err);
  cr_assert(strstr(r.err, where) && strstr(r.err, msg), "%s -> %s: want %s and %s in \"%s\"",
            from, to, where, msg, r.err);
  cr_assert_eq(r.out[0], 0, "%s", r.out);
  ds_test_release(&r);
  unlink(path);
  free(edited);
  free(text);
}

static void refuses(const char *from, const char *to, const char *msg, const char *anchor) {
  refuses_in("tests/data/tiny-model-host.yaml", from, to, msg, anchor);
}

Test(host_ops, bad_dispatches_name_file_line_and_key) {
  const char *m = "tests/data/tiny-model-dispatch.yaml";
  refuses_in(m, "host_dispatches: 5\n", "host_dispatches: -1\n", "host_dispatches", NULL);
  refuses_in(m, "host_dispatches: 2\n", "host_dispatches: 2.5\n", "host_dispatches", NULL);
  refuses_in(m, "host_dispatches: 4\n", "host_dispatches: 2000000\n", "host_dispatches", NULL);
  /* on every layer or none: the layer is named */
  refuses_in(m, "    host_dispatches: 2\n", "", "host_dispatches on every layer or on none",
             "  - name: l1");
  /* only with the four counts */
  refuses("    host_ops: 2\n    host_nodes: 4\n    host_amp_casts: 3\n    host_amp_nodes: 2\n",
          "    host_dispatches: 5\n", "host_dispatches only with", NULL);
}

Test(host_ops, bad_views_name_file_line_and_key) {
  refuses_in(VIEWS_MODEL, "host_views: 2\n", "host_views: -1\n", "host_views", NULL);
  refuses_in(VIEWS_MODEL, "host_views: 2\n", "host_views: 1.5\n", "host_views", NULL);
  /* at most the layer's dispatches (less its syncs) */
  refuses_in(VIEWS_MODEL, "host_views: 2\n", "host_views: 6\n",
             "at most the layer's host_dispatches less its host_syncs (5)", NULL);
  /* on every layer or none: the layer is named */
  refuses_in(VIEWS_MODEL, "    host_views: 0\n", "", "host_views on every layer or on none",
             "  - name: l1");
  /* only in a file that counts the dispatches */
  refuses("    host_amp_nodes: 2\n", "    host_views: 1\n    host_amp_nodes: 2\n",
          "host_views only with host_dispatches", NULL);
}

Test(host_ops, bad_view_nodes_name_file_line_and_key) {
  refuses_in(VIEW_NODES_MODEL, "host_view_nodes: 1\n", "host_view_nodes: -1\n",
             "host_view_nodes", NULL);
  refuses_in(VIEW_NODES_MODEL, "host_view_nodes: 1\n", "host_view_nodes: 0.5\n",
             "host_view_nodes", NULL);
  refuses_in(VIEW_NODES_MODEL, "host_view_nodes: 1\n", "host_view_nodes: 5\n",
             "at most the layer's host_nodes (4)", NULL);
  refuses_in(VIEW_NODES_MODEL, "    host_view_nodes: 0\n", "",
             "host_view_nodes on every layer or on none", "  - name: l1");
}

Test(host_ops, bad_view_nodes_amp_name_file_line_and_key) {
  const char *m = VIEW_NODES_AMP_MODEL;
  refuses_in(m, "host_view_nodes_amp: 1\n", "host_view_nodes_amp: -1\n",
             "host_view_nodes_amp", NULL);
  refuses_in(m, "host_view_nodes_amp: 1\n", "host_view_nodes_amp: 0.5\n",
             "host_view_nodes_amp", NULL);
  refuses_in(m, "host_view_nodes_amp: 1\n", "host_view_nodes_amp: 3\n",
             "at most the layer's host_nodes (2)", NULL);
  refuses_in(m, "    host_view_nodes_amp: 0\n    host_amp_casts: 2\n", "    host_amp_casts: 2\n",
             "host_view_nodes_amp on every layer or on none", "  - name: l1");
  /* only in a file that counts the view nodes */
  refuses_in(VIEWS_MODEL, "    host_amp_nodes: 2\n",
             "    host_view_nodes_amp: 1\n    host_amp_nodes: 2\n",
             "host_view_nodes_amp only with host_view_nodes", NULL);
}

Test(host_ops, bad_counts_name_file_line_and_key) {
  refuses("host_ops: 1\n", "host_ops: -1\n", "host_ops", NULL);
  refuses("host_nodes: 3\n", "host_nodes: 2.5\n", "host_nodes", NULL);
  refuses("host_amp_casts: 1\n", "host_amp_casts: 2000000\n", "host_amp_casts", NULL);
  refuses("host_amp_nodes: 1\n", "host_amp_nodes: many\n", "host_amp_nodes", NULL);
  /* the four together; on every layer or none: the layer is named */
  refuses("    host_amp_nodes: 1\n    params:\n      - {name: l1",
          "    params:\n      - {name: l1", "together", "  - name: l1");
  refuses("    host_ops: 3\n    host_nodes: 2\n    host_amp_casts: 1\n    host_amp_nodes: 1\n",
          "", "every layer or on none", "  - name: l2");
}

static void bad_host_cost(const char *key);

Test(host_ops, a_bad_host_cost_names_file_line_and_key) {
  bad_host_cost("host_node");
  bad_host_cost("host_dispatch");
}

/* tiny-hostops-topo.yaml cut before `key`'s line, which becomes
 * `key: quick`: exit 2, FILE:LINE of that line and the key. */
static void bad_host_cost(const char *key) {
  char dir[] = "/tmp/ddpsim-hostops-XXXXXX", path[512], args[700], find[64];
  ds_test_make_dir(dir);
  char *text = ds_test_slurp("tests/data/tiny-hostops-topo.yaml");
  snprintf(find, sizeof find, "  %s:", key);
  char *at = strstr(text, find);
  cr_assert(at);
  int line = 1;
  for (const char *p = text; p < at; p++) line += *p == '\n';
  *at = 0;
  snprintf(path, sizeof path, "%s/t.yaml", dir);
  FILE *fp = fopen(path, "w");
  cr_assert(fp);
  fprintf(fp, "%s  %s: quick\n", text, key);
  cr_assert_eq(fclose(fp), 0);
  free(text);
  snprintf(args, sizeof args, "--topo %s --model tests/data/tiny-model-dispatch.yaml", path);
  char where[600];
  snprintf(where, sizeof where, "%s:%d:", path, line);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, where) && strstr(r.err, key), "%s: %s", key, r.err);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
}

Test(host_ops, ddpreal_cpu_replays_the_counted_host_ops_as_delays) {
  /* ddpreal reads each host op's duration from the schedule: the cpu
   * device occupies the host stream that long, so every measured host op
   * lasts at least its counted time. */
  char dir[] = "/tmp/ddpsim-hostops-real-XXXXXX", sched[512], meas[512], args[1300];
  ds_test_make_dir(dir);
  snprintf(sched, sizeof sched, "%s/s.csv", dir);
  snprintf(meas, sizeof meas, "%s/m.csv", dir);
  snprintf(args, sizeof args, COUNTED "--strategy single --schedule %s", sched);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s --iters 1 --warmup 0",
           sched, meas);
  r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
  ds_test_release(&r);
  struct ds_trace *t;
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_read_csv(meas, &t, &err), DS_OK, "%s", err.msg);
  double host_us = 0;
  int n = 0;
  for (size_t k = 0; k < t->n_rows; k++) {
    const struct ds_trace_row *row = &t->rows[k];
    const struct ds_op *o = &row->sched->ops[row->op];
    if (o->stream != DS_STREAM_HOST) continue;
    cr_assert_geq((double)(row->end_ns - row->start_ns), o->dur_us * 1e3 * 0.999,
                  "%s of layer %d: %lld ns for %g us", o->name, o->layer,
                  (long long)(row->end_ns - row->start_ns), o->dur_us);
    host_us += o->dur_us;
    n++;
  }
  cr_assert_eq(n, 6, "host ops: %d", n);
  cr_assert_float_eq(host_us, 2400 + 2700, 1e-6);
  ds_trace_free(t);
  ds_test_remove_dir(dir);
}

/* tests/data/tiny-model-sync.yaml is tiny-model-dispatch.yaml with one of
 * l1's 2 dispatches a host-device sync (host_syncs: 1; sim/train/host.h).
 * On a topology where the host runs ahead of the GPU (host_dispatch
 * D' = 20 us, host_node 10 us, the reducer's host costs 0), single GPU,
 * by hand:
 *   without the sync (tiny-model-dispatch.yaml): l0's launch 5 D' = 100 us,
 *   then the kernels back to back, the host launching ahead of them (l1's
 *   launch ends at 140, l2's at 220): 100 + (100 + 200 + 100) + 2 +
 *   (200 + 400 + 200) + 58.728 = 1360.728 us.
 *   with it: l1's launch is its other dispatch, 1 D' (100-120); its kernel
 *   runs 200-400; the sync waits for it, then its own dispatch, 400-420;
 *   l2's launch 4 D' 420-500, its kernel 500-600: the GPU idles 400-500,
 *   the host's time after the wait. Loss 600-602, backward 602-1402 (its
 *   host, 500-590, ahead), step: 1460.728 us. */
#define SYNC_MODEL "tests/data/tiny-model-sync.yaml"
#define AHEAD "  host_grad_hook: 0us\n  host_grad_copy: 0us\n  host_collective: 0us\n" \
              "  host_op: 400us\n  host_dispatch: 20us\n  host_cast: 100us\n  host_node: 10us\n"

/* The iteration (us) of ddpsim on the host-ahead topology in dir. */
static double ahead_iter_us(const char *dir, const char *model, const char *args) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "--topo %s/t.yaml --model %s %s --format csv", dir, model, args);
  return iter_us(cmd);
}

Test(host_ops, a_sync_waits_for_its_layers_kernel_and_exposes_the_host) {
  char dir[] = "/tmp/ddpsim-hostsync-XXXXXX", path[512];
  ds_test_make_dir(dir);
  ds_test_write_topo(dir, "tests/data/tiny-hostops-topo.yaml", "  host_grad_hook:", AHEAD, path,
                     sizeof path);
  cr_assert_float_eq(ahead_iter_us(dir, DISPATCH_MODEL, "--strategy single"),
                     100 + 400 + 2 + 800 + STEP_US, 1e-3);
  cr_assert_float_eq(ahead_iter_us(dir, SYNC_MODEL, "--strategy single"),
                     100 + 100 + 200 + 20 + 80 + 100 + 2 + 800 + STEP_US, 1e-3);
  /* every strategy's forward host waits there: its GPU idles for the same
   * 100 us of host work after the wait */
  const char *strategies[] = {"--strategy ddp --world-size 1", "--strategy ddp --world-size 2",
                              "--strategy dp --world-size 1", "--strategy ps --world-size 2"};
  for (size_t k = 0; k < sizeof strategies / sizeof *strategies; k++) {
    double without = ahead_iter_us(dir, DISPATCH_MODEL, strategies[k]);
    double with = ahead_iter_us(dir, SYNC_MODEL, strategies[k]);
    cr_assert_float_eq(with - without, 20 + 80, 1e-3, "%s: %g - %g", strategies[k], with,
                       without);
  }
  ds_test_remove_dir(dir);
}

Test(host_ops, the_sync_op_waits_for_its_layers_kernel_on_every_rank) {
  /* The schedule holds one iteration. Each rank's "sync" host op of l1 (one
   * of D = 150 us) depends on that rank's l1 forward kernel, and its next
   * host op is l2's launch. */
  const char *strategies[] = {"--strategy ddp --world-size 2", "--strategy dp --world-size 2",
                              "--strategy ps --world-size 2", "--strategy single"};
  for (size_t k = 0; k < sizeof strategies / sizeof *strategies; k++) {
    char dir[] = "/tmp/ddpsim-hostsync-XXXXXX", cmd[1024], path[512];
    ds_test_make_dir(dir);
    snprintf(path, sizeof path, "%s/s.csv", dir);
    snprintf(cmd, sizeof cmd, TOPO "--model " SYNC_MODEL " %s --schedule %s",
             strategies[k], path);
    struct ds_test_result r = ds_test_cli(cmd);
    cr_assert_eq(r.status, 0, "%s: %s", strategies[k], r.err);
    ds_test_release(&r);
    struct ds_schedule *s;
    struct ds_err err = {0};
    cr_assert_eq(ds_schedule_read_csv(path, &s, &err), DS_OK, "%s", err.msg);
    int syncs = 0;
    for (size_t i = 0; i < s->n_ops; i++) {
      const struct ds_op *o = &s->ops[i];
      if (o->stream != DS_STREAM_HOST || strcmp(o->name, "sync") != 0) continue;
      syncs++;
      cr_assert_eq(o->layer, 1, "%s", strategies[k]);
      cr_assert_float_eq(o->dur_us, D_US, 1e-9, "%s", strategies[k]);
      int waits = 0;
      for (uint32_t d = 0; d < o->dep_count; d++)
        for (size_t j = 0; j < s->n_ops; j++)
          waits += s->ops[j].id == s->deps[o->dep_first + d] &&
                   s->ops[j].stream == DS_STREAM_COMPUTE && s->ops[j].rank == o->rank &&
                   s->ops[j].kind == DS_OP_FWD && s->ops[j].layer == 1;
      cr_assert_eq(waits, 1, "%s rank %d: the sync waits for l1's kernel", strategies[k],
                   o->rank);
      const struct ds_op *next = NULL;
      for (size_t j = i + 1; j < s->n_ops && !next; j++)
        if (s->ops[j].rank == o->rank && s->ops[j].stream == DS_STREAM_HOST) next = &s->ops[j];
      cr_assert(next && strcmp(next->name, "launch") == 0 && next->layer == 2, "%s",
                strategies[k]);
    }
    int ranks = strstr(strategies[k], "world-size 2") ? 2 : 1;
    cr_assert_eq(syncs, ranks, "%s: %d syncs", strategies[k], syncs);
    ds_schedule_free(s);
    ds_test_remove_dir(dir);
  }
}

Test(host_ops, bad_syncs_name_file_line_and_key) {
  refuses_in(SYNC_MODEL, "host_syncs: 1\n", "host_syncs: 3\n",
             "at most the layer's host_dispatches (2)", NULL);
  refuses_in(SYNC_MODEL, "host_syncs: 1\n", "host_syncs: -1\n", "host_syncs", NULL);
  refuses_in(SYNC_MODEL, "host_syncs: 1\n", "host_syncs: 0.5\n", "host_syncs", NULL);
  /* the syncs are some of the dispatches: only in a file that counts them */
  refuses("    host_amp_nodes: 2\n", "    host_syncs: 1\n    host_amp_nodes: 2\n",
          "host_syncs only with host_dispatches", NULL);
}
