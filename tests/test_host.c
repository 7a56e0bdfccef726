/*
 * The host threads: backward's launches by the autograd engine's thread and
 * DDP's reducer on it (its hook per gradient, its collective call per
 * bucket, finalize_backward's copies back), worked by hand on the tiny
 * model. tests/data/tiny-host-topo.yaml makes the host far slower than the
 * kernels (host-bound); tiny-topo.yaml has none of this host work.
 *
 * The tiny model on TestGPU (10 TFLOPS, 1000 GB/s, no overhead), batch 1:
 * forward 100, 200, 100 us; loss 2 us; backward 200, 400, 200 us; the SGD
 * step 58.728 us; reducer copies (read and write each fp32 gradient):
 * l2.weight 8.388608 us, l1.weight 4.194304, l0's two tensors 2.0992.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/train/compute.h"
#include "sim/train/ddp.h"
#include "sim/train/host.h"
#include "sim/train/model.h"
#include "sim/cli/options.h"
#include "sim/net/topo.h"
#include "tests/support.h"

#define MIB (1024.0 * 1024.0)
#define HOST_TOPO "--topo tests/data/tiny-host-topo.yaml --model tests/data/tiny-model.yaml "
/* tiny-host-topo.yaml's host costs, us */
#define L_US 1000.0 /* host_launch, per forward layer */
#define H_US 2000.0 /* host_backward, per backward layer */
#define K_US 300.0  /* host_grad_hook, per gradient */
#define P_US 200.0  /* host_grad_copy, per gradient copied back */
#define C_US 500.0  /* host_collective, per bucket */
#define B_US 400.0  /* host_buffer, per buffer broadcast_buffers syncs */
#define STEP_US 58.728 /* 1835264 * 4 bytes * 8 passes at 1000 GB/s, to the ns */
/* the summary's hint for a host-bound run without --calib's host section */
#define MEASURE_HINT \
  "measure yours: bench/host_calibrate.py --calib-out FILE, then --calib FILE"

/* Kernel time of the reducer copy over `numel` fp32 elements, rounded to
 * the nanosecond as the executor does. */
static double copy_us(double numel) { return round(numel * 8 / 1e12 * 1e9) / 1e3; }

/* Writes dir/t.yaml, tiny-host-topo.yaml with its lines from `from` on
 * replaced by `tail`, and its GPU table beside it; path gets dir/t.yaml. */
static void write_topo(const char *dir, const char *from, const char *tail, char *path,
                       size_t cap) {
  ds_test_write_topo(dir, "tests/data/tiny-host-topo.yaml", from, tail, path, cap);
}

Test(host, host_bound_single_is_the_host_threads_sum) {
  /* Each kernel waits for its launch: the forward launches end at 3 L, the
   * autograd thread's at 3 L + 3 H; then l0's backward kernel (200 us) and
   * the step. The GPU's other kernels hide in the host's gaps. */
  struct ds_test_result r = ds_test_cli(HOST_TOPO "--strategy single --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  double want = 3 * L_US + 3 * H_US + 200 + STEP_US;
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0), want / 1e3, 1e-6, "%s", r.out);
  /* bwd_ms counts the kernels only: the host's time is not compute */
  cr_assert_float_eq(ds_test_csv_num(r.out, "bwd_ms", 0), 0.8, 1e-6, "%s", r.out);
  /* Where it goes: the GPU busy 400 + 2 + 800 + the step; of the host's
   * 3 L + 3 H, all but the kernels that ran under it (busy less l0's
   * backward and the step, which follow it) is exposed; the two fill the
   * iteration. */
  double busy = 400 + 2 + 800 + STEP_US;
  double exposed = 3 * L_US + 3 * H_US - (busy - 200 - STEP_US);
  cr_assert_float_eq(ds_test_csv_num(r.out, "gpu_busy_ms", 0), busy / 1e3, 1e-6);
  cr_assert_float_eq(ds_test_csv_num(r.out, "host_exposed_ms", 0), exposed / 1e3, 1e-6);
  cr_assert_float_eq(busy + exposed, want, 1e-3);
  ds_test_release(&r);
  r = ds_test_cli(HOST_TOPO "--strategy single"); /* the text names it */
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\n      host-bound: "), "%s", r.out);
  /* and says how to measure one's own host */
  cr_assert(strstr(r.out, MEASURE_HINT), "%s", r.out);
  ds_test_release(&r);
}

Test(host, gpu_bound_single_hides_the_host) {
  /* Launches of 20 us (forward) and 90 us (backward) are shorter than
   * every kernel after the first: the host runs ahead, and the iteration
   * is the kernels' after the first launch, exactly what no backward host
   * work gives: 20 + 400 + 2 + 800 + 58.728 us. */
  char dir[] = "/tmp/ddpsim-host-XXXXXX", topo[512], args[1024];
  cr_assert(mkdtemp(dir));
  write_topo(dir, "  host_launch:", "  host_launch: 20us\n  host_backward: 90us\n", topo,
             sizeof topo);
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy single --format csv", topo);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  double want = 20 + 400 + 2 + 800 + STEP_US;
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0), want / 1e3, 1e-6, "%s", r.out);
  /* only the first launch waits for nothing on the GPU */
  cr_assert_float_eq(ds_test_csv_num(r.out, "host_exposed_ms", 0), 0.020, 1e-9);
  ds_test_release(&r);
  snprintf(args, sizeof args, "--topo %s --model tests/data/tiny-model.yaml --strategy single",
           topo);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "host exposed") && !strstr(r.out, "host-bound"), "%s", r.out);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
}

Test(host, pytorch_1_4_step_is_the_hosts_python_loop) {
  /* PyTorch 1.4's optimizer is a Python loop: 3 ops per tensor (SGD with
   * momentum, compute.h), 12 for the tiny model's 4 tensors, each
   * dispatched by the host at host_grad_copy (P). Host-bound, single: the
   * forward and backward launches end at 3 L + 3 H; then the loop's 12
   * ops, 12 P, while the GPU runs l0's backward (200 us) and the step
   * (58.728 us, no overhead here) after the first: the iteration is the
   * host's sum, where the foreach step left 3 L + 3 H + 200 + step. Under
   * dp with one GPU the same: DataParallel.forward calls the module itself
   * (no replicate, data_parallel.py), so no host_replicate either. */
  struct ds_test_result r = ds_test_cli(
      HOST_TOPO "--strategy single,dp --world-size 1 --pytorch-version 1.4 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  double want = 3 * L_US + 3 * H_US + 12 * P_US;
  for (int row = 0; row < 2; row++) {
    cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", row), want / 1e3, 1e-6, "%s", r.out);
    /* the step's kernels only, not the host's launches */
    cr_assert_float_eq(ds_test_csv_num(r.out, "step_ms", row), STEP_US / 1e3, 1e-6, "%s",
                       r.out);
  }
  ds_test_release(&r);
  /* --weight-decay: a fourth op per tensor (d_p.add_), 16 in all */
  r = ds_test_cli(HOST_TOPO "--strategy single --pytorch-version 1.4 --weight-decay --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  want = 3 * L_US + 3 * H_US + 16 * P_US;
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0), want / 1e3, 1e-6, "%s", r.out);
  ds_test_release(&r);
}

Test(host, pytorch_1_4_step_pays_a_launch_per_kernel_when_gpu_bound) {
  /* GPU-bound (launches of 20 us forward, 90 us backward, 1 us per
   * optimizer op) with kernel_overhead 2 us: forward 102, 202, 102 us, the
   * loss 4, backward 202, 402, 202 after the first launch (20 us); the
   * step's 8 passes take 58.728 us plus 2 us per kernel: foreach 3 kernels
   * (64.728), 1.4's loop 12 (82.728). The difference is the 9 extra
   * launches, 18 us, on the GPU; the loop's host (12 us) hides. 1.4 keeps
   * .grad allocated, so each backward adds into it: one add per tensor
   * (4), 3 passes of the 7,341,056 gradient bytes, 22.023168 + 4 x 2 us. */
  char dir[] = "/tmp/ddpsim-host-XXXXXX", topo[512], args[1024];
  cr_assert(mkdtemp(dir));
  write_topo(dir, "  kernel_overhead:",
             "  kernel_overhead: 2us\n  fp32_math: fp32\n  host_launch: 20us\n"
             "  host_backward: 90us\n  host_grad_copy: 1us\n",
             topo, sizeof topo);
  double gpu = 20 + 406 + 4 + 806;
  const char *version[] = {"current", "1.4"};
  const double step[] = {64.728, 82.728}, adds[] = {0, 22.023168 + 4 * 2};
  for (int v = 0; v < 2; v++) {
    snprintf(args, sizeof args,
             "--topo %s --model tests/data/tiny-model.yaml --strategy single "
             "--pytorch-version %s --format csv", topo, version[v]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0), (gpu + adds[v] + step[v]) / 1e3,
                       1e-6, "%s: %s", version[v], r.out);
    cr_assert_float_eq(ds_test_csv_num(r.out, "step_ms", 0), step[v] / 1e3, 1e-6, "%s",
                       r.out);
    ds_test_release(&r);
  }
  /* DDP's step under 1.4 is the same loop (its step_ms: the kernels) */
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy ddp --world-size 1 "
           "--pytorch-version 1.4 --format csv", topo);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_float_eq(ds_test_csv_num(r.out, "step_ms", 0), step[1] / 1e3, 1e-6, "%s", r.out);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
}

Test(host, pytorch_1_4_step_host_ops_are_the_first_launch_and_the_rest) {
  /* ds_host_emit_step, which dp and ddp share: the tiny model's 12 loop
   * ops at host_grad_copy (P): the first launch (P) and the other 11 (11
   * P), both on the rank's host stream with no dependency, numbered from
   * the builder's next id; the first's id back. The foreach step: none. */
  struct ds_err err = {0};
  struct ds_topo *t;
  cr_assert_eq(ds_topo_load("tests/data/tiny-host-topo.yaml", NULL, &t, &err), DS_OK, "%s",
               err.msg);
  struct ds_model *m = ds_test_model("tests/data/tiny-model.yaml");
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK, "%s", err.msg);
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(4, &s), DS_OK);
  struct ds_schedule_builder bd = {s, 10};
  int64_t first = 0;
  cr_assert_eq(ds_host_emit_step(&bd, &c, m, 3, NULL, 0, &first), DS_OK);
  cr_assert_eq(first, -1);
  cr_assert_eq(s->n_ops, 0);
  c.optimizer_loop = 1;
  cr_assert_eq(ds_host_emit_step(&bd, &c, m, 3, NULL, 0, &first), DS_OK);
  cr_assert_eq(first, 10);
  cr_assert_eq(s->n_ops, 2);
  const double dur[2] = {P_US, 11 * P_US};
  for (size_t i = 0; i < 2; i++) {
    const struct ds_op *op = &s->ops[i];
    cr_assert_eq(op->id, 10 + (int64_t)i);
    cr_assert_eq(op->rank, 3);
    cr_assert_eq(op->stream, DS_STREAM_HOST);
    cr_assert_eq(op->kind, DS_OP_STEP);
    cr_assert_str_eq(op->name, "optimizer");
    cr_assert_eq(op->dep_count, 0);
    cr_assert_float_eq(op->dur_us, dur[i], 1e-9, "op %zu", i);
  }
  cr_assert_eq(bd.next_id, 12);
  ds_schedule_free(s);
  ds_model_free(m);
  ds_topo_free(t);
}

Test(host, ddp_reducer_host_work_per_gradient_and_per_bucket) {
  /* One rank (the all-reduces take no time), host-bound. The autograd
   * thread: 3 H launches, a hook of K per gradient (4), a call of C per
   * bucket (n), finalize_backward's P per gradient copied back (4); then
   * the step (the copies back run while the host launches them). Buckets by
   * --bucket-mb (every cap, the first's too): 1 -> [l2.weight] [l1.weight]
   * [l0.bias l0.weight]; 5 -> [l2.weight l1.weight] [l0's]; 25 and 100 ->
   * one of all four tensors. More buckets cost C each: the host-bound
   * sweep ranks the largest cap best, as PyTorch's per-call cost does. */
  struct ds_test_result r =
      ds_test_cli(HOST_TOPO "--strategy ddp --world-size 1 --bucket-mb 1,5,25,100 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  const int buckets[] = {3, 2, 1, 1};
  for (int row = 0; row < 4; row++) {
    cr_assert_float_eq(ds_test_csv_num(r.out, "n_buckets", row), buckets[row], 0, "%s", r.out);
    double want = 3 * L_US + 3 * H_US + 4 * K_US + buckets[row] * C_US + 4 * P_US + STEP_US;
    cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", row), want / 1e3, 1e-6,
                       "row %d: %s", row, r.out);
    if (row > 0 && buckets[row] < buckets[row - 1])
      cr_assert_lt(ds_test_csv_num(r.out, "iter_ms", row),
                   ds_test_csv_num(r.out, "iter_ms", row - 1), "%s", r.out);
  }
  ds_test_release(&r);
}

Test(host, gradient_as_bucket_view_has_no_copies_back) {
  /* gradient_as_bucket_view: nothing copied back, so after l0's hooks (2 K)
   * and the second bucket's call (C) only the step is left: 3 L + 3 H +
   * 4 K + 2 C + step (the default caps: [l2.weight] [the rest]). */
  struct ds_test_result r =
      ds_test_cli(HOST_TOPO "--strategy ddp --world-size 1 --grad-as-bucket-view --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  double want = 3 * L_US + 3 * H_US + 4 * K_US + 2 * C_US + STEP_US;
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0), want / 1e3, 1e-6, "%s", r.out);
  ds_test_release(&r);
}

Test(host, ddp_schedule_puts_each_host_op_before_its_kernel) {
  /* The order the autograd thread runs, and each GPU op waiting for the
   * host op that launched it. Default caps: bucket 0 = [l2.weight] (ready
   * after l2), bucket 1 = [l1.weight l0.bias l0.weight] (after l0). */
  struct ds_model *m = ds_test_model("tests/data/tiny-model.yaml");
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("tests/data/tiny-host-topo.yaml", NULL, &t, &err), DS_OK, "%s",
               err.msg);
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK);
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_ddp_options opt = {.world_size = 1, .batch = 1, .proto_fixed = DS_PROTO_COUNT};
  cr_assert_eq(ds_ddp_build(m, &c, &opt, &b, 0, 0, s), DS_OK);
  cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
  /* the backward part, from l2's launch. host: 1 = a host op whose next op
   * waits for it (the first launch of a run), 2 = the rest of a run of
   * launches (ds__ddp_emit_host_rest: only the host stream's order follows it) */
  const struct { const char *name; int host; double us; } want[] = {
      {"launch", 1, H_US}, {"l2", 0, 200},           {"hook", 1, K_US},
      {"l2.to_bucket", 0, copy_us(1048576)},         {"bucket0.call", 1, C_US},
      {"bucket0", 0, 0},   {"launch", 1, H_US},      {"l1", 0, 400},
      {"hook", 1, K_US},   {"l1.to_bucket", 0, copy_us(524288)},
      {"launch", 1, H_US}, {"l0", 0, 200},           {"hook", 1, K_US},
      {"l0.to_bucket", 0, copy_us(262400)},          {"hook", 2, K_US},
      {"bucket1.call", 1, C_US},                     {"bucket1", 0, 0},
      {"bucket0.to_grad", 1, P_US},                  {"bucket0.to_grad", 0, copy_us(1048576)},
      {"bucket1.to_grad", 1, P_US},                  {"bucket1.to_grad", 0, copy_us(786688)},
      {"bucket1.to_grad", 2, 2 * P_US},              {"optimizer", 0, STEP_US}};
  const size_t n = sizeof want / sizeof *want, first = 7; /* 3 x (launch, fwd), loss */
  cr_assert_eq(s->n_ops, first + n);
  for (size_t i = 0; i < n; i++) {
    const struct ds_op *o = &s->ops[first + i];
    cr_assert_str_eq(o->name, want[i].name, "op %zu", first + i);
    cr_assert_eq(o->stream == DS_STREAM_HOST, want[i].host > 0, "op %zu %s", first + i,
                 o->name);
    if (want[i].us > 0 && strcmp(o->name, "optimizer") != 0)
      cr_assert_float_eq(o->dur_us, want[i].us, 1e-3, "op %zu %s", first + i, o->name);
    /* host ops wait for nothing but the host stream's order */
    if (want[i].host) cr_assert_eq(o->dep_count, 0, "op %zu %s", first + i, o->name);
    if (want[i].host == 1) {
      /* the op it launches waits for it */
      const struct ds_op *k = &s->ops[first + i + 1];
      const int64_t *d = ds_schedule_deps(s, k);
      int found = 0;
      for (uint32_t j = 0; j < k->dep_count; j++) found |= d[j] == o->id;
      cr_assert(found, "%s (op %zu) does not wait for its host op", k->name, first + i + 1);
    }
  }
  /* optimizer.step() follows backward()'s return: the step waits for the
   * autograd thread's last host op */
  const struct ds_op *step = &s->ops[s->n_ops - 1];
  const int64_t *d = ds_schedule_deps(s, step);
  int found = 0;
  for (uint32_t j = 0; j < step->dep_count; j++) found |= d[j] == s->ops[s->n_ops - 2].id;
  cr_assert(found, "the step does not wait for the host's last op");
  ds_schedule_free(s);
  ds_ddp_buckets_release(&b);
  ds_topo_free(t);
  ds_model_free(m);
}

/* The intercept of the least-squares line through (1, y[0]), (81, y[1]),
 * (161, y[2]). */
static double intercept3(const double y[3]) {
  const double x[3] = {1, 81, 161};
  double mx = (x[0] + x[1] + x[2]) / 3, my = (y[0] + y[1] + y[2]) / 3, sxy = 0, sxx = 0;
  for (int i = 0; i < 3; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  return my - sxy / sxx * mx;
}

Test(host, ddp_iteration_host_work_once_per_synchronising_forward) {
  /* host_ddp_iter I = 700 us on the Python thread before the forward's
   * first launch, once per micro-step that synchronises: the host-bound
   * one-rank DDP iteration of ddp_reducer_host_work_per_gradient_and_per_
   * bucket (one bucket at --bucket-mb 25) plus I; under --no-sync 3 the
   * two accumulating micro-steps run no reducer work, so I once in three
   * forwards, and the iteration grows by I over the same run at I = 0. */
  char dir[] = "/tmp/ddpsim-host-XXXXXX", topo[512], args[1024];
  cr_assert(mkdtemp(dir));
  write_topo(dir, "  host_ddp_iter:",
             "  host_ddp_iter: 700us\n  host_step_call: 0us\n  host_step_param: 0us\n"
             "  host_step_param_adam: 0us\n",
             topo, sizeof topo);
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy ddp --world-size 1 "
           "--bucket-mb 25 --format csv", topo);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  double want = 700 + 3 * L_US + 3 * H_US + 4 * K_US + C_US + 4 * P_US + STEP_US;
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0), want / 1e3, 1e-6, "%s", r.out);
  ds_test_release(&r);
  double with_i, without_i;
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy ddp --world-size 1 "
           "--bucket-mb 25 --no-sync 3 --format csv", topo);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  with_i = ds_test_csv_num(r.out, "iter_ms", 0);
  ds_test_release(&r);
  snprintf(args, sizeof args,
           "--topo tests/data/tiny-host-topo.yaml --model tests/data/tiny-model.yaml "
           "--strategy ddp --world-size 1 --bucket-mb 25 --no-sync 3 --format csv");
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  without_i = ds_test_csv_num(r.out, "iter_ms", 0);
  ds_test_release(&r);
  cr_assert_float_eq((with_i - without_i) * 1e3, 700, 1e-3, "%g %g", with_i, without_i);
  ds_test_remove_dir(dir);
}

Test(host, unset_host_costs_are_pytorchs_measured_defaults) {
  /* docs/strategies.md, "The host costs": measured on H200 lends
   * (host_backward from the profiler traces scaled by the profiler's
   * measured inflation; the reducer's three by bench/torch_ddp_host.py). A
   * topology that sets none gets these; tiny-topo.yaml sets them to 0. */
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("topologies/4gpu.yaml", NULL, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(t->compute.host_backward_ns, 46000, 0);
  /* bench/ddp_host_pool.py over six lends (sim/net/topo_compute.c): each
   * median over lends is the mean of the middle two lends' paired medians
   * (ms, ddp-one - plain over 161 layers, ddp-each - ddp-one over 160
   * buckets): per gradient 27h's rep 5 (ddp_host_161x512_b53_view.csv) and
   * 27g's rep 3 (ddp_host_161x512_b53.csv), per bucket 28c's (its three
   * calls' 21 reps pooled) call2 rep 5 (call2/ddp_host_layers.csv) and 27g's
   * rep 1; the copy back's launch kept at 5.8 us, the hook the rest less
   * the per-iteration cost each (ddp-one - plain) / 161 held (host_ddp_iter
   * + one bucket call, the intercepts' median over lends, 186.3 us: below);
   * each to 0.1 us. */
  double grad_ns = ((19.7284 - 15.8615) / 161 + (22.1242 - 17.8906) / 161) / 2 * 1e6;
  /* host_ddp_iter: per rep the least-squares line of ddp-one - plain over
   * 1, 81 and 161 layers; per lend the median of its reps' intercepts (28:
   * its rep 5 of 7; 28c: call3/ddp_host_layers.csv's rep 7 of the 21 its
   * three calls pool), the median of the two, less host_collective's one
   * call; to 0.1 us. ms, from the CSVs' reps_ms. */
  const double y28[3] = {0.6624 - 0.3496, 7.5238 - 6.0936, 18.1443 - 14.7521};
  const double y28c[3] = {0.6528 - 0.5823, 8.5919 - 6.2361, 13.9712 - 10.3592};
  double both_ns = (intercept3(y28) + intercept3(y28c)) / 2 * 1e6;
  cr_assert_float_eq(t->compute.host_ddp_iter_ns,
                     round((both_ns - t->compute.host_collective_ns) / 100) * 100, 0);
  double spread_ns = both_ns / 161;
  double bucket_ns = ((26.1111 - 19.3758) / 160 + (29.9715 - 22.9175) / 160) / 2 * 1e6;
  cr_assert_float_eq(t->compute.host_grad_copy_ns, 5800, 0);
  cr_assert_float_eq(t->compute.host_grad_hook_ns,
                     round((grad_ns - spread_ns - 5800) / 100) * 100, 0);
  cr_assert_float_eq(t->compute.host_collective_ns, round(bucket_ns / 100) * 100, 0);
  cr_assert_float_eq(t->compute.host_grad_hook_ns + t->compute.host_grad_copy_ns, 24000, 0);
  /* host_buffer: 27g's and 27h's paired medians of ddp-one-bcast - ddp-one
   * (their rep 2 and rep 4, ms), each less the two buffer buckets at the
   * defaults (host_grad_copy + host_collective each), over 159 buffers;
   * the median of two, to 10 ns. */
  double charged = 2 * (t->compute.host_grad_copy_ns + t->compute.host_collective_ns);
  double g27 = ((26.1112 - 22.7887) * 1e6 - charged) / 159;
  double h27 = ((21.4706 - 16.7459) * 1e6 - charged) / 159;
  cr_assert_float_eq(t->compute.host_buffer_ns, round((g27 + h27) / 2 / 10) * 10, 0);
  ds_topo_free(t);
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(t->compute.host_backward_ns + t->compute.host_grad_hook_ns +
                         t->compute.host_grad_copy_ns + t->compute.host_collective_ns +
                         t->compute.host_buffer_ns + t->compute.host_ddp_iter_ns,
                     0, 0);
  ds_topo_free(t);
}

Test(host, a_bad_host_cost_names_file_line_and_key) {
  char dir[] = "/tmp/ddpsim-host-XXXXXX", topo[512], args[1024];
  cr_assert(mkdtemp(dir));
  write_topo(dir, "  host_collective:", "  host_collective: soon\n", topo, sizeof topo);
  snprintf(args, sizeof args, "--topo %s --model tests/data/tiny-model.yaml", topo);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, ":22:") && strstr(r.err, "host_collective"), "%s", r.err);
  ds_test_release(&r);
  write_topo(dir, "  host_buffer:", "  host_buffer: soon\n", topo, sizeof topo);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, ":23:") && strstr(r.err, "host_buffer"), "%s", r.err);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
}

Test(host, ddpreal_cpu_replays_the_reducers_host_ops) {
  /* The schedule's host ops are ddpreal's too: the cpu device runs them
   * as delays; the all-reduces still check every element. */
  char dir[] = "/tmp/ddpsim-host-real-XXXXXX", args[1024];
  cr_assert(mkdtemp(dir));
  snprintf(args, sizeof args, HOST_TOPO "--strategy ddp --world-size 2 --schedule %s/s.csv",
           dir);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  snprintf(args, sizeof args, "%s/s.csv", dir);
  char *csv = ds_test_slurp(args);
  cr_assert(strstr(csv, ",host,bwd,bucket1.call,"), "%s", csv);
  free(csv);
  ds_test_replay_cpu2(dir);
  ds_test_remove_dir(dir);
}

/* tiny-model.yaml plus buffers (two float32, one int64) in dir/m.yaml;
 * path gets its name. */
static void write_model_with_buffers(const char *dir, char *path, size_t cap) {
  char *text = ds_test_slurp("tests/data/tiny-model.yaml");
  snprintf(path, cap, "%s/m.yaml", dir);
  FILE *fp = fopen(path, "w");
  cr_assert(fp);
  cr_assert_geq(fprintf(fp, "%sbuffers:\n"
                        "  - {name: bn.running_mean, numel: 1000, bytes: 4000, dtype: float32}\n"
                        "  - {name: bn.num_batches_tracked, numel: 1, bytes: 8, dtype: int64}\n"
                        "  - {name: bn.running_var, numel: 3000, bytes: 12000, dtype: float32}\n",
                        text), 0);
  cr_assert_eq(fclose(fp), 0);
  free(text);
}

/* Rank `rank`'s first op `name` in a --trace file: its algo (cap bytes),
 * start and end (us). */
static void trace_op_span(const char *csv, int rank, const char *name, char *algo, size_t cap,
                          double *start, double *end_us) {
  for (const char *line = strchr(csv, '\n'); line; line = strchr(line + 1, '\n')) {
    char want[64];
    snprintf(want, sizeof want, ",%d,comm,broadcast,%s,", rank, name);
    const char *comma = strchr(line + 1, ',');
    if (!comma || strncmp(comma, want, strlen(want)) != 0) continue;
    const char *f = line + 1;
    for (int k = 0; k < 9; k++) f = strchr(f, ',') + 1; /* to column 10, algo */
    size_t n = (size_t)(strchr(f, ',') - f);
    snprintf(algo, cap, "%.*s", (int)n, f);
    const char *end = strchr(line + 1, '\n');
    const char *last = end;
    while (*--last != ',') {}
    const char *prev = last;
    while (*--prev != ',') {}
    *start = strtod(prev + 1, NULL);
    *end_us = strtod(last + 1, NULL);
    return;
  }
  cr_assert_fail("no %s on rank %d in the trace", name, rank);
}

/* Its end - start (us). */
static double trace_op_us(const char *csv, int rank, const char *name, char *algo, size_t cap) {
  double start, end;
  trace_op_span(csv, rank, name, algo, cap, &start, &end);
  return end - start;
}

Test(host, buffer_broadcast_pays_nccls_latency_and_launch) {
  /* Under NCCL's model (--algo auto, the default) the buffer broadcast is
   * NCCL's ring broadcast: the protocol its tuning picks (LL: 7.2 us +
   * S / 87.7 GB/s on dgx-a100 is the least at these sizes), 12 channels,
   * LL's cap min(20, 2 * 87.7 / 12) GB/s per channel and 2 wire bytes per
   * byte, 0.6 us per NVLink hop, and at the start its base latency and the
   * fitted launch (6.6 + 14 us). Both run on one channel (enqueue.cc's
   * split, Ring/LL: 512 threads * 8 B * 8 ranks = 32 KiB per channel).
   * Rank 7, last on the chain from rank 0, from the root's start:
   *   buffers1 (8 B, one piece): 20.6 + 7 (0.6 + 8 * 2 / 14.617e9 s)
   *                    = 24.8077 us;
   *   buffers0 (16000 B, forwarded per 8 B line: 2000 lines, capped at
   *            16 (N-1) = K = 112 equal pieces of 16000 / 112 B):
   *                    20.6 + 7 * 0.6 + (8 + 112 - 2) (16000 / 112) 2 B
   *                    / 14.617 GB/s = 27.1066 us.
   *            (the engine counts whole ns: up to 1 ns a piece step, 118)
   * (buffers1 starts on rank 7 once its buffers0 has ended, so it is timed
   * from the root's start.) --algo ring keeps the plain chain: 7 hops of
   * 2 x 1.7 us, no launch. */
  char dir[] = "/tmp/ddpsim-host-XXXXXX", model[512], args[2048], path[600], algo[32];
  cr_assert(mkdtemp(dir));
  write_model_with_buffers(dir, model, sizeof model);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  const char *algos[] = {"auto", "ring"};
  for (int a = 0; a < 2; a++) {
    snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml --model %s --strategy ddp "
             "--world-size 8 --algo %s --trace %s", model, algos[a], path);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    ds_test_release(&r);
    char *csv = ds_test_slurp(path);
    double root_start, end7, unused;
    trace_op_span(csv, 0, "buffers1", algo, sizeof algo, &root_start, &unused);
    trace_op_span(csv, 7, "buffers1", algo, sizeof algo, &unused, &end7);
    double b1 = end7 - root_start;
    cr_assert_str_eq(algo, a == 0 ? "ring/LL" : "", "%s", algo);
    double b0 = trace_op_us(csv, 7, "buffers0", algo, sizeof algo);
    if (a == 0) {
      double cap = 2 * 87.7e9 / 12;
      cr_assert_float_eq(b1, 20.6 + 7 * (0.6 + 8 * 2.0 / cap * 1e6), 2e-3, "%f", b1);
      cr_assert_float_eq(b0, 20.6 + 7 * 0.6 + 118 * (16000.0 / 112) * 2 / cap * 1e6, 0.118,
                         "%f", b0);
    } else {
      cr_assert_float_eq(b1, 7 * 3.4 + 7 * 8 / 300e9 * 1e6, 2e-3, "%f", b1);
      cr_assert_lt(b0, 26.0);
    }
    free(csv);
  }
  ds_test_remove_dir(dir);
}

Test(host, broadcast_buffers_by_hand) {
  /* _sync_buffers before the forward: broadcast_coalesced buckets by dtype,
   * [running_mean running_var] and [num_batches_tracked]; per bucket the
   * Python thread launches the flatten (P: none for the int64 bucket of one
   * buffer, whose flatten is its view) and calls the broadcast (C), then
   * does each buffer's work, the copy back's launch among it (B each):
   * P + 2 C + 3 B = 2400 us more host time before the first forward
   * launch, all of it on the host-bound iteration (at one rank the
   * broadcast takes no time). --host-scale 2 doubles it: 4800 us. */
  char dir[] = "/tmp/ddpsim-host-XXXXXX", model[512], args[1024];
  cr_assert(mkdtemp(dir));
  write_model_with_buffers(dir, model, sizeof model);
  struct ds_model *m = ds_test_model(model);
  int32_t group[3];
  cr_assert_eq(ds_ddp_buffer_buckets(m, group), 2);
  cr_assert(group[0] == 0 && group[1] == 1 && group[2] == 0);
  cr_assert_eq(ds_ddp_buffer_buckets(m, NULL), 2, "the count alone, as run.c asks for it");
  ds_model_free(m);
  snprintf(args, sizeof args, "--topo tests/data/tiny-host-topo.yaml --model %s "
           "--strategy ddp --world-size 1 --format csv", model);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  double with = ds_test_csv_num(r.out, "iter_ms", 0);
  ds_test_release(&r);
  snprintf(args, sizeof args, "--topo tests/data/tiny-host-topo.yaml --model %s "
           "--strategy ddp --world-size 1 --no-broadcast-buffers --format csv", model);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  double without = ds_test_csv_num(r.out, "iter_ms", 0);
  cr_assert(strstr(r.out, "broadcast_buffers=False"), "%s", r.out);
  ds_test_release(&r);
  cr_assert_float_eq(with - without, (P_US + 2 * C_US + 3 * B_US) / 1e3, 1e-6);
  /* --host-scale scales the per-buffer cost with the others */
  double scaled[2];
  for (int k = 0; k < 2; k++) {
    snprintf(args, sizeof args, "--topo tests/data/tiny-host-topo.yaml --model %s "
             "--strategy ddp --world-size 1 --host-scale 2 %s--format csv", model,
             k ? "--no-broadcast-buffers " : "");
    r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    scaled[k] = ds_test_csv_num(r.out, "iter_ms", 0);
    ds_test_release(&r);
  }
  cr_assert_float_eq(scaled[0] - scaled[1], 2 * (P_US + 2 * C_US + 3 * B_US) / 1e3, 1e-6);
  /* without the flag the iteration is the one of the model without buffers */
  r = ds_test_cli(HOST_TOPO "--strategy ddp --world-size 1 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0), without, 1e-9);
  ds_test_release(&r);
  /* two ranks: every rank joins each broadcast from rank 0 */
  snprintf(args, sizeof args, "--topo tests/data/tiny-host-topo.yaml --model %s "
           "--strategy ddp --world-size 2 --schedule %s/s.csv", model, dir);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  snprintf(args, sizeof args, "%s/s.csv", dir);
  char *csv = ds_test_slurp(args);
  int n = 0;
  for (const char *at = csv; (at = strstr(at, ",comm,broadcast,buffers")) != NULL; at++) n++;
  cr_assert_eq(n, 4, "two buckets on two ranks:\n%s", csv);
  free(csv);
  ds_test_remove_dir(dir);
}

Test(host, buffer_broadcasts_two_in_flight_by_hand) {
  /* broadcast_coalesced (c10d comm.cpp) keeps two broadcasts in flight:
   * before issuing bucket k it finishes bucket k - 2 (its copies back),
   * and finishes the last two after the loop. Three buckets (float32
   * [running_mean running_var], int64, float16), two ranks, rank 0's
   * Python thread (P + C = 700 us a flatten and call, B = 400 a buffer).
   * The int64 and float16 buckets hold one buffer each: no cat (the
   * flatten is the buffer's view), so no launch (C alone) and no kernel,
   * and no copy back (copy_ onto itself returns at once), so no kernel;
   * the first forward kernel waits for their broadcasts instead:
   *   buffers0.flatten 0, buffers1.flatten 700 (C: 500), buffers0.copy
   *   1200 (two buffers: 800), buffers2.flatten 2000 (500),
   *   buffers1.copy 2500, buffers2.copy 2900, done at 3300 = P + 3 C + 4 B.
   * Broadcast 0 starts once its flatten's kernel ends (32000 B at 1000 GB/s:
   * 0.032 us after 700), broadcast 1 once its call ends (1200, overlapping
   * bucket 0's copies), broadcast 2 at 2500; bucket 0's copy kernel waits
   * for its launch at 1600. (Issue and finish in turn would start
   * buffers1 at (P + C) + C + 2 B = 2000 and copy 0's kernel at 1100.)
   * The float16 buffer is 20 MB: its broadcast (2 ms at 10 GB/s) outlasts
   * the host's work after it (the copies' 800 us, l0's launch 1000), so
   * the first forward kernel waits for it, not for its launch at 4300. */
  char dir[] = "/tmp/ddpsim-host-XXXXXX", model[512], args[2048], path[600];
  cr_assert(mkdtemp(dir));
  write_model_with_buffers(dir, model, sizeof model);
  FILE *fp = fopen(model, "a");
  cr_assert(fp);
  cr_assert_geq(fprintf(fp, "  - {name: bn2.scale, numel: 10000000, bytes: 20000000, dtype: float16}\n"),
                0);
  cr_assert_eq(fclose(fp), 0);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  snprintf(args, sizeof args, "--topo tests/data/tiny-host-topo.yaml --model %s "
           "--strategy ddp --world-size 2 --trace %s --format csv", model, path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  char *csv = ds_test_slurp(path);
  const double pc = P_US + C_US;
  const struct {
    const char *row;
    double start_us;
  } want[] = {
      {"host,fwd,buffers0.flatten", 0},
      {"comm,broadcast,buffers0", pc + 0.032},
      {"host,fwd,buffers1.flatten", pc},
      {"comm,broadcast,buffers1", pc + C_US},
      {"host,fwd,buffers0.copy", pc + C_US},
      {"compute,fwd,buffers0.copy", pc + C_US + B_US},
      {"host,fwd,buffers2.flatten", pc + C_US + 2 * B_US},
      {"host,fwd,buffers1.copy", pc + 2 * C_US + 2 * B_US},
      {"comm,broadcast,buffers2", pc + 2 * C_US + 2 * B_US},
      {"host,fwd,buffers2.copy", pc + 2 * C_US + 3 * B_US},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    double start, end;
    ds_test_trace_span(csv, want[i].row, &start, &end);
    cr_assert_float_eq(start, want[i].start_us, 1e-3, "%s at %f", want[i].row, start);
  }
  /* the one-buffer buckets run no kernel */
  const char *none[] = {",compute,fwd,buffers1.flatten,", ",compute,fwd,buffers1.copy,",
                        ",compute,fwd,buffers2.flatten,", ",compute,fwd,buffers2.copy,"};
  for (size_t i = 0; i < sizeof none / sizeof *none; i++)
    cr_assert_null(strstr(csv, none[i]), "%s in\n%s", none[i], csv);
  /* the first forward kernel (tiny's l0) waits for the last broadcast */
  double b2_start, b2_end, l0_start, l0_end;
  ds_test_trace_span(csv, "comm,broadcast,buffers2", &b2_start, &b2_end);
  ds_test_trace_span(csv, "compute,fwd,l0", &l0_start, &l0_end);
  cr_assert_geq(l0_start, b2_end - 1e-9, "l0 at %f, broadcast 2 ends %f", l0_start, b2_end);
  free(csv);
  ds_test_remove_dir(dir);
}

Test(host, host_scale_multiplies_every_host_cost_of_the_reducer) {
  /* As ddp_reducer_host_work_per_gradient_and_per_bucket with every host
   * cost (L, H, K, C, P) times 2: the host part doubles, the step stays. */
  struct ds_test_result r = ds_test_cli(HOST_TOPO
                                        "--strategy ddp --world-size 1 --bucket-mb 1,25 "
                                        "--host-scale 2 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  const int buckets[] = {3, 1};
  for (int row = 0; row < 2; row++) {
    double host = 3 * L_US + 3 * H_US + 4 * K_US + buckets[row] * C_US + 4 * P_US;
    cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", row), (2 * host + STEP_US) / 1e3,
                       1e-6, "row %d: %s", row, r.out);
  }
  ds_test_release(&r);
}

Test(host, bad_host_scale_exits_2_naming_the_option) {
  /* above DS_MAX_HOST_SCALE (1000) too: 1e12 once ran into the engine's
   * longest simulated time with a message that did not name the option;
   * below its inverse, 0.001, too: 1e-300 was taken and rounded every host
   * cost to nothing (issue #12) */
  const char *bad[] = {"0", "-1", "abc", "2x", "inf", "nan", "1000.5", "1e12", "1e-300",
                       "0.0009"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char args[512];
    snprintf(args, sizeof args, HOST_TOPO "--strategy single --host-scale %s", bad[i]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 2, "%s: %s", bad[i], r.err);
    cr_assert(strstr(r.err, "option --host-scale: expected a number from 0.001 to 1000"),
              "%s", r.err);
    cr_assert(strstr(r.err, bad[i]), "%s", r.err);
    ds_test_release(&r);
  }
}

/* The summary's range line for `args` run at host scale s: single on the
 * host-bound toy, s (3 L + 3 H) + l0's backward kernel (200 us) + the step,
 * at s = scale x the fastest and the slowest host's factor; `whose` names
 * the costs the factors multiply. hint: whether the measure-yours line
 * follows. */
static void expect_range_line(const char *args, double scale, const char *whose, int hint) {
  double lo = ds_topo_host_factor_fastest, hi = ds_topo_host_factor_slowest;
  char want[320];
  snprintf(want, sizeof want,
           "\n        at the measured hosts' range (x%.3f to x%.3f %s) the "
           "iteration is %.3f to %.3f ms;\n", lo, hi, whose,
           (scale * lo * (3 * L_US + 3 * H_US) + 200 + STEP_US) / 1e3,
           (scale * hi * (3 * L_US + 3 * H_US) + 200 + STEP_US) / 1e3);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, want), "want%s\ngot:\n%s", want, r.out);
  cr_assert_eq(strstr(r.out, MEASURE_HINT) != NULL, hint, "%s", r.out);
  ds_test_release(&r);
}

Test(host, host_bound_summary_prints_the_measured_hosts_range) {
  /* the fastest host is faster, the slowest slower */
  cr_assert_lt(ds_topo_host_factor_fastest, 1);
  cr_assert_gt(ds_topo_host_factor_slowest, 1);
  expect_range_line(HOST_TOPO "--strategy single", 1, "the host costs", 1);
  /* over the run's own host costs: --host-scale's included, and said */
  expect_range_line(HOST_TOPO "--strategy single --host-scale 2", 2,
                    "this run's host costs, x2 by --host-scale", 1);
}

Test(host, host_scale_at_its_bound_runs_with_its_range) {
  /* F = DS_MAX_HOST_SCALE is accepted, and the range's x1.171 re-run of it
   * (1171 times the toy's host costs) succeeds as the run does */
  cr_assert_float_eq(DS_MAX_HOST_SCALE, 1000.0, 0);
  expect_range_line(HOST_TOPO "--strategy single --host-scale 1000", 1000,
                    "this run's host costs, x1000 by --host-scale", 1);
}

Test(host, range_line_over_calib_host_costs_drops_the_hint) {
  /* A calibration's host section (dispatch and node, which the tiny model,
   * without dispatch counts, does not use: the iteration stays 3 L + 3 H +
   * the tail): the line says the factors multiply --calib's costs, and
   * the measure-yours hint, done already, is gone. */
  char path[] = "/tmp/ddpsim-hostcal-XXXXXX", args[512];
  ds_test_write_temp(path, "schema_version: 1\nhost:\n  unit: launching\n  dispatch: 30us\n  node: 20us\n");
  snprintf(args, sizeof args, HOST_TOPO "--strategy single --calib %s", path);
  expect_range_line(args, 1, "this run's host costs, --calib's", 0);
  snprintf(args, sizeof args, HOST_TOPO "--strategy single --calib %s --host-scale 2", path);
  expect_range_line(args, 2, "this run's host costs: --calib's, x2 by --host-scale", 0);
  unlink(path);
}

Test(host, range_line_over_calib_ddp_costs_keeps_the_hint) {
  /* a host section with DDP's keys only (bench/torch_ddp_host.py's): the
   * range multiplies --calib's costs, and says so, but the host's dispatch
   * and node are the topology's still: the hint stays (single: the DDP
   * keys leave the iteration 3 L + 3 H + the tail) */
  char path[] = "/tmp/ddpsim-hostcal-XXXXXX", args[512];
  ds_test_write_temp(path, "schema_version: 1\nhost:\n  ddp_grad: 30us\n  ddp_bucket: 40us\n");
  snprintf(args, sizeof args, HOST_TOPO "--strategy single --calib %s", path);
  expect_range_line(args, 1, "this run's host costs, --calib's", 1);
  unlink(path);
}

Test(host, range_line_only_when_host_bound_and_text) {
  /* GPU-bound (the launches shorter than the kernels): no range */
  char dir[] = "/tmp/ddpsim-host-XXXXXX", topo[512], args[1024];
  cr_assert(mkdtemp(dir));
  write_topo(dir, "  host_launch:", "  host_launch: 20us\n  host_backward: 90us\n", topo,
             sizeof topo);
  snprintf(args, sizeof args, "--topo %s --model tests/data/tiny-model.yaml --strategy single",
           topo);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "host exposed") && !strstr(r.out, "measured hosts' range"), "%s",
            r.out);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
  /* host-bound in CSV and JSON: the columns are the run's own, no range */
  const char *formats[] = {"csv", "json"};
  for (int i = 0; i < 2; i++) {
    snprintf(args, sizeof args, HOST_TOPO "--strategy single --format %s", formats[i]);
    r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(!strstr(r.out, "range") && !strstr(r.out, "host_fast"), "%s", r.out);
    ds_test_release(&r);
  }
}
