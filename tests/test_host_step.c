/*
 * The foreach optimizer step's host (sim/train/host.h
 * ds_host_foreach_step_ns; the keys host_step_call, host_step_param,
 * host_step_param_adam of sim/net/topo_compute.c), worked by hand on the tiny
 * model: 4 parameter tensors, SGD with momentum. tests/data/tiny-host-
 * topo.yaml is host-bound and sets the step's keys to 0; each test here
 * writes its own from it.
 *
 * tiny-host-topo.yaml: host_launch L = 1000 us per forward layer,
 * host_backward H = 2000 us per backward layer, host_grad_hook K = 300,
 * host_grad_copy P = 200, host_collective C = 500 (test_host.c). The
 * tiny model on TestGPU: backward 200, 400, 200 us; the SGD step 58.728 us.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/compute.h"
#include "sim/train/host.h"
#include "sim/train/model.h"
#include "sim/net/topo.h"
#include "tests/support.h"

#define L_US 1000.0
#define H_US 2000.0
#define K_US 300.0
#define P_US 200.0
#define C_US 500.0
#define STEP_US 58.728 /* 1835264 * 4 bytes * 8 passes at 1000 GB/s */
#define TENSORS 4      /* tiny-model.yaml's parameter tensors */
/* the keys the tests below set: a call, SGD's and Adam's per tensor, us */
#define CALL_US 1000.0
#define SGD_US 100.0
#define ADAM_US 250.0
#define STEP_KEYS "  host_step_call: 1000us\n  host_step_param: 100us\n" \
                  "  host_step_param_adam: 250us\n"

static void write_topo(const char *dir, const char *tail, char *path, size_t cap) {
  ds_test_write_topo(dir, "tests/data/tiny-host-topo.yaml", "  host_step_call:", tail, path,
                     cap);
}

/* The topology with STEP_KEYS, the tiny model and its compute on it. */
struct step_fixture {
  char dir[32], topo[512];
  struct ds_topo *t;
  struct ds_model *m;
  struct ds_compute c;
};

static void fixture_open(struct step_fixture *f) {
  snprintf(f->dir, sizeof f->dir, "/tmp/ddpsim-hstep-XXXXXX");
  cr_assert(mkdtemp(f->dir));
  write_topo(f->dir, STEP_KEYS, f->topo, sizeof f->topo);
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(f->topo, NULL, &f->t, &err), DS_OK, "%s", err.msg);
  f->m = ds_test_model("tests/data/tiny-model.yaml");
  cr_assert_eq(ds_compute_init(f->t, DS_DTYPE_FP32, DS_AMP_NONE, &f->c, &err), DS_OK, "%s",
               err.msg);
}

static void fixture_close(struct step_fixture *f) {
  ds_model_free(f->m);
  ds_topo_free(f->t);
  ds_test_remove_dir(f->dir);
}

/* iter_ms of ddpsim on the tiny model over topo with `args` (row 0). */
static double iter_us(const char *topo, const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "--topo %s --model tests/data/tiny-model.yaml --format csv %s",
           topo, args);
  struct ds_test_result r = ds_test_cli(cmd);
  cr_assert_eq(r.status, 0, "%s: %s", cmd, r.err);
  double ms = ds_test_csv_num(r.out, "iter_ms", 0);
  ds_test_release(&r);
  return ms * 1e3;
}

Test(host_step, the_foreach_step_is_a_call_plus_a_cost_per_tensor) {
  /* SGD: 1000 + 4 x 100 = 1400 us; Adam: 1000 + 4 x 250 = 2000 us; none
   * under the loop (its launches are charged instead) or with the keys 0;
   * a parameter server's shard of 3 tensors: 1000 + 3 x 100 = 1300 us, of
   * none: 0. */
  struct step_fixture f;
  fixture_open(&f);
  struct ds_model *m = f.m;
  struct ds_compute c = f.c;
  cr_assert_eq(m->n_params, TENSORS);
  cr_assert_eq(m->optimizer, DS_OPT_SGD);
  cr_assert_float_eq(ds_host_foreach_step_ns(&c, m), (CALL_US + 4 * SGD_US) * 1e3, 1e-6);
  cr_assert_float_eq(ds_host_foreach_step_tensors_ns(&c, DS_OPT_SGD, 3),
                     (CALL_US + 3 * SGD_US) * 1e3, 1e-6);
  cr_assert_float_eq(ds_host_foreach_step_tensors_ns(&c, DS_OPT_SGD, 0), 0, 0);
  m->optimizer = DS_OPT_ADAM;
  cr_assert_float_eq(ds_host_foreach_step_ns(&c, m), (CALL_US + 4 * ADAM_US) * 1e3, 1e-6);
  m->optimizer = DS_OPT_SGD;
  c.optimizer_loop = 1;
  cr_assert_float_eq(ds_host_foreach_step_ns(&c, m), 0, 0);
  c.optimizer_loop = 0;
  c.params.host_step_call_ns = c.params.host_step_param_ns = 0;
  cr_assert_float_eq(ds_host_foreach_step_ns(&c, m), 0, 0);
  fixture_close(&f);
}

Test(host_step, emit_step_is_one_host_op_the_kernels_wait_for) {
  /* ds_host_emit_step for the foreach step: one op "optimizer" of kind
   * step on the rank's host stream, 1400 us, no dependency (the host
   * stream orders it after backward's host work), its id back for the
   * step's kernels to wait on; with the keys 0 none (first -1). */
  struct step_fixture f;
  fixture_open(&f);
  struct ds_model *m = f.m;
  struct ds_compute c = f.c;
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(4, &s), DS_OK);
  struct ds_schedule_builder bd = {s, 10};
  int64_t first = 0;
  cr_assert_eq(ds_host_emit_step(&bd, &c, m, 2, NULL, 0, &first), DS_OK);
  cr_assert_eq(first, 10);
  cr_assert_eq(s->n_ops, 1);
  const struct ds_op *op = &s->ops[0];
  cr_assert_eq(op->rank, 2);
  cr_assert_eq(op->stream, DS_STREAM_HOST);
  cr_assert_eq(op->kind, DS_OP_STEP);
  cr_assert_str_eq(op->name, "optimizer");
  cr_assert_eq(op->dep_count, 0);
  cr_assert_float_eq(op->dur_us, CALL_US + 4 * SGD_US, 1e-9);
  c.params.host_step_call_ns = c.params.host_step_param_ns = 0;
  cr_assert_eq(ds_host_emit_step(&bd, &c, m, 2, NULL, 0, &first), DS_OK);
  cr_assert_eq(first, -1);
  cr_assert_eq(s->n_ops, 1);
  ds_schedule_free(s);
  fixture_close(&f);
}

Test(host_step, host_bound_iterations_add_the_step_host_before_the_step) {
  /* single: the launches end at 3 L + 3 H; the step's host (1400 us)
   * follows on the host stream while the GPU runs l0's backward (200 us),
   * then the step's kernels: 3 L + 3 H + 1400 + step (test_host.c's
   * 3 L + 3 H + 200 + step with the keys 0). DDP on one rank: after the
   * reducer's hooks (4 K), its one bucket's call (C, --bucket-mb 25
   * sets the first bucket's cap too) and the copies back
   * (4 P), likewise. --host-scale 2 doubles every host cost, the step's
   * too. */
  char dir[] = "/tmp/ddpsim-hstep-XXXXXX", topo[512];
  cr_assert(mkdtemp(dir));
  write_topo(dir, STEP_KEYS, topo, sizeof topo);
  double step_host = CALL_US + TENSORS * SGD_US;
  double single = 3 * L_US + 3 * H_US;
  cr_assert_float_eq(iter_us(topo, "--strategy single"), single + step_host + STEP_US, 1e-3);
  double ddp = single + 4 * K_US + C_US + 4 * P_US;
  cr_assert_float_eq(iter_us(topo, "--strategy ddp --world-size 1 --bucket-mb 25 "
                             "--no-broadcast-buffers"),
                     ddp + step_host + STEP_US, 1e-3);
  cr_assert_float_eq(iter_us(topo, "--strategy single --host-scale 2"),
                     2 * (single + step_host) + STEP_US, 1e-3);
  /* PyTorch 1.4's loop: its 12 launches at P, the keys not charged */
  cr_assert_float_eq(iter_us(topo, "--strategy single --pytorch-version 1.4"),
                     single + 12 * P_US, 1e-3);
  ds_test_remove_dir(dir);
}

Test(host_step, a_step_host_shorter_than_the_gpus_tail_hides) {
  /* 50 + 4 x 25 = 150 us of step host runs under l0's backward kernel
   * (200 us): the step's kernels wait for the GPU, not for the host, and
   * the iteration is the keys-0 one, 3 L + 3 H + 200 + step. */
  char dir[] = "/tmp/ddpsim-hstep-XXXXXX", topo[512];
  cr_assert(mkdtemp(dir));
  write_topo(dir, "  host_step_call: 50us\n  host_step_param: 25us\n", topo, sizeof topo);
  cr_assert_float_eq(iter_us(topo, "--strategy single"),
                     3 * L_US + 3 * H_US + 200 + STEP_US, 1e-3);
  ds_test_remove_dir(dir);
}

Test(host_step, defaults_are_the_pools_line_and_bad_values_name_the_key) {
  /* sim/net/topo_compute.c: bench/host_pool.py's line over the twelve
   * host_calibrate CSVs (SGD), BERT-base's file for Adam. */
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("topologies/4gpu.yaml", NULL, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(t->compute.host_step_call_ns, 370000, 0);
  cr_assert_float_eq(t->compute.host_step_param_ns, 5403, 0);
  cr_assert_float_eq(t->compute.host_step_param_adam_ns, 13310, 0);
  ds_topo_free(t);
  char dir[] = "/tmp/ddpsim-hstep-XXXXXX", topo[512], args[1024];
  cr_assert(mkdtemp(dir));
  write_topo(dir, "  host_step_call: 1ms\n  host_step_param: soon\n", topo, sizeof topo);
  snprintf(args, sizeof args, "--topo %s --model tests/data/tiny-model.yaml", topo);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "t.yaml:27:") && strstr(r.err, "host_step_param"), "%s", r.err);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
}
