/*
 * --loop sync|free, the training loop between iterations, worked by hand
 * on the tiny model. sync (the default) is a loop that reads the loss
 * every iteration: the next iteration's first host op waits for the
 * optimizer step's GPU work. free never syncs: the host goes on after the
 * step's host work (its last host op of the iteration), while the GPU
 * still runs the tail of backward and the step; the kernels still run in
 * stream order.
 *
 * The tiny model on TestGPU (10 TFLOPS, 1000 GB/s, no overhead), batch 1:
 * forward 100, 200, 100 us; loss 2 us; backward 200, 400, 200 us; the SGD
 * step 58.728 us. tests/data/tiny-host-topo.yaml's host costs (far above
 * the kernels: host-bound) are below; tiny-topo.yaml has 20 us launches
 * and no other host work (GPU-bound).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/host.h"
#include "sim/train/model.h"
#include "tests/support.h"

#define HOST_TOPO "--topo tests/data/tiny-host-topo.yaml --model tests/data/tiny-model.yaml "
#define GPU_TOPO "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
/* tiny-host-topo.yaml's host costs, us */
#define L_US 1000.0 /* host_launch, per forward layer */
#define H_US 2000.0 /* host_backward, per backward layer */
#define K_US 300.0  /* host_grad_hook, per gradient */
#define P_US 200.0  /* host_grad_copy, per gradient copied back */
#define C_US 500.0  /* host_collective, per bucket */
#define STEP_US 58.728 /* 1835264 * 4 bytes * 8 passes at 1000 GB/s, to the ns */
#define FWD_US 400.0
#define LOSS_US 2.0 /* 2 * 1e6 output bytes at 1000 GB/s */
#define BWD_US 800.0
#define L0_BWD_US 200.0 /* l0's backward kernel: the GPU's tail after the host */

/* iter_ms of CSV row `row` of ddpsim `args`. */
static double iter_ms(const char *args, int row) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  double v = ds_test_csv_num(r.out, "iter_ms", row);
  ds_test_release(&r);
  return v;
}

/* dir (a mkdtemp template) made, with t.yaml in it: tiny-host-topo.yaml
 * with the foreach step's host at 100 us a call and nothing a tensor; topo
 * gets its path. */
static void step_host_topo(char *dir, char *topo, size_t cap) {
  cr_assert(mkdtemp(dir));
  ds_test_write_topo(dir, "tests/data/tiny-host-topo.yaml", "  host_step_call:",
                     "  host_step_call: 100us\n  host_step_param: 0us\n"
                     "  host_step_param_adam: 0us\n",
                     topo, cap);
}

Test(loop, host_bound_single_sync_adds_the_gpu_tail_free_is_the_hosts_sum) {
  /* sync: the launches end at 3 L + 3 H, then l0's backward kernel and
   * the step, which the next iteration's first launch waits for. free:
   * the next launch follows the host's last op (no step host here: the
   * autograd thread's last launch), so the iteration is the host's sum. */
  double sync_us = 3 * L_US + 3 * H_US + L0_BWD_US + STEP_US;
  double free_us = 3 * L_US + 3 * H_US;
  cr_assert_float_eq(iter_ms(HOST_TOPO "--strategy single --format csv", 0), sync_us / 1e3, 1e-6);
  cr_assert_float_eq(iter_ms(HOST_TOPO "--strategy single --loop sync --format csv", 0),
                     sync_us / 1e3, 1e-6);
  cr_assert_float_eq(iter_ms(HOST_TOPO "--strategy single --loop free --format csv", 0),
                     free_us / 1e3, 1e-6);
}

Test(loop, free_waits_for_the_steps_host_work) {
  /* A foreach step host of 100 us (host_step_call, 4 tensors at 0 each)
   * after the launches: under sync it runs under l0's backward (200 us),
   * so the step still starts at 3 L + 3 H + 200; under free the next
   * iteration's launch follows it: 3 L + 3 H + 100. DDP at world size 1
   * adds its reducer's host work, S = 3 L + 3 H + 4 K + 2 C + 4 P (four
   * gradients, two buckets after the rebuild, each gradient copied back),
   * the GPU long done by then: sync is S + 100 + the step, free S + 100. */
  char dir[] = "/tmp/ddpsim-loop-XXXXXX", topo[512], args[1024];
  step_host_topo(dir, topo, sizeof topo);
  double s = 3 * L_US + 3 * H_US + 4 * K_US + 2 * C_US + 4 * P_US;
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy single,ddp --world-size 1 "
           "--format csv", topo);
  cr_assert_float_eq(iter_ms(args, 0), (3 * L_US + 3 * H_US + L0_BWD_US + STEP_US) / 1e3,
                     1e-6);
  cr_assert_float_eq(iter_ms(args, 1), (s + 100 + STEP_US) / 1e3, 1e-6);
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy single,ddp --world-size 1 "
           "--loop free --format csv", topo);
  cr_assert_float_eq(iter_ms(args, 0), (3 * L_US + 3 * H_US + 100) / 1e3, 1e-6);
  cr_assert_float_eq(iter_ms(args, 1), (s + 100) / 1e3, 1e-6);
  ds_test_remove_dir(dir);
}

Test(loop, gpu_bound_both_give_the_gpus_time) {
  /* 20 us launches, shorter than the kernels: the GPU is the bottleneck.
   * sync exposes the first launch after the step (L = 20 us); free
   * launched it long before, so the kernels run back to back: the
   * iteration is the GPU's own time. DDP (2 GPUs) the same, 20 us less. */
  double gpu = FWD_US + LOSS_US + BWD_US + STEP_US;
  cr_assert_float_eq(iter_ms(GPU_TOPO "--strategy single --format csv", 0), (20 + gpu) / 1e3,
                     1e-6);
  cr_assert_float_eq(iter_ms(GPU_TOPO "--strategy single --loop free --format csv", 0),
                     gpu / 1e3, 1e-6);
  double ddp_sync = iter_ms(GPU_TOPO "--strategy ddp --world-size 2 --format csv", 0);
  double ddp_free = iter_ms(GPU_TOPO "--strategy ddp --world-size 2 --loop free --format csv", 0);
  cr_assert_float_eq(ddp_sync - ddp_free, 0.020, 1e-6, "%g %g", ddp_sync, ddp_free);
}

Test(loop, grad_accum_keeps_its_micro_step_sync) {
  /* --grad-accum 2, host-bound single: the second micro-step's launch
   * still waits for the first's GPU work (l0's backward, 200 us after the
   * host), under free as under sync; only the iteration's end is free:
   * 2 (3 L + 3 H) + 200. */
  double free_us = 2 * (3 * L_US + 3 * H_US) + L0_BWD_US;
  cr_assert_float_eq(
      iter_ms(HOST_TOPO "--strategy single --grad-accum 2 --loop free --format csv", 0),
      free_us / 1e3, 1e-6);
}

Test(loop, free_is_steady_from_iteration_1_and_deterministic) {
  /* the reported iteration is the period: the same at --iters 2 and 5 */
  const char *base = HOST_TOPO "--strategy single,ddp --world-size 1 --loop free --format csv";
  char args[512];
  snprintf(args, sizeof args, "%s --iters 5", base);
  for (int row = 0; row < 2; row++)
    cr_assert_float_eq(iter_ms(base, row), iter_ms(args, row), 1e-9, "row %d", row);
  struct ds_test_result a = ds_test_cli(args);
  struct ds_test_result b = ds_test_cli(args);
  cr_assert_eq(a.status, 0, "%s", a.err);
  cr_assert_str_eq(a.out, b.out);
  ds_test_release(&a);
  ds_test_release(&b);
}

Test(loop, refused_where_not_built) {
  ds_test_ddpsim_refuses(GPU_TOPO "--strategy dp --world-size 2 --loop free",
                         "option --loop free: built for --strategy single and ddp, not dp");
  ds_test_ddpsim_refuses(GPU_TOPO "--strategy single,ps --world-size 2 --loop free",
                         "option --loop free: built for --strategy single and ddp, not ps");
  ds_test_ddpsim_refuses(GPU_TOPO "--strategy single --loop fast", "--loop");
  /* sync is every strategy's loop */
  cr_assert_gt(iter_ms(GPU_TOPO "--strategy dp --world-size 2 --loop sync --format csv", 0), 0);
}

Test(loop, grad_scalers_found_inf_sync_is_in_both_loops) {
  /* Under --amp fp16 GradScaler.step's _maybe_opt_step reads
   * found_inf.item() after unscale_'s kernels and before it calls
   * optimizer.step() (torch/amp/grad_scaler.py), under any loop: the
   * foreach step's host op follows a "found_inf.item" host op that waits
   * for unscale_'s kernels (host_grad_copy, P = 200 us, as the loop's).
   * Ops: unscale_ host, unscale_ kernels, found_inf.item, optimizer host
   * (host_step_call 100 us), whose id the step's kernels wait for. */
  char dir[] = "/tmp/ddpsim-loop-XXXXXX", topo[512];
  step_host_topo(dir, topo, sizeof topo);
  struct ds_err err = {0};
  struct ds_topo *t;
  cr_assert_eq(ds_topo_load(topo, NULL, &t, &err), DS_OK, "%s", err.msg);
  struct ds_model *m = ds_test_model("tests/data/tiny-model.yaml");
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_FP16, &c, &err), DS_OK, "%s", err.msg);
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_schedule_builder bd = {s, 0};
  int64_t tail = 99, first = -1;
  cr_assert_eq(ds_host_emit_step(&bd, &c, m, 0, &tail, 1, &first), DS_OK);
  cr_assert_eq(s->n_ops, 4u);
  cr_assert_str_eq(s->ops[1].name, "unscale_");
  cr_assert_eq(s->ops[1].stream, DS_STREAM_COMPUTE);
  const struct ds_op *item = &s->ops[2];
  cr_assert_str_eq(item->name, "found_inf.item");
  cr_assert_eq(item->stream, DS_STREAM_HOST);
  cr_assert_float_eq(item->dur_us, 200, 1e-9);
  cr_assert_eq(item->dep_count, 1);
  cr_assert_eq(ds_schedule_deps(s, item)[0], s->ops[1].id, "waits for unscale_'s kernels");
  const struct ds_op *last = &s->ops[3];
  cr_assert_str_eq(last->name, "optimizer");
  cr_assert_eq(last->stream, DS_STREAM_HOST);
  cr_assert_float_eq(last->dur_us, 100, 1e-9);
  cr_assert_eq(first, last->id);
  ds_schedule_free(s);
  ds_model_free(m);
  ds_topo_free(t);
  ds_test_remove_dir(dir);
}

Test(loop, sync_fp16_foreach_step_host_waits_for_unscale) {
  /* --loop sync (the default), --amp fp16, the foreach step (host 100 us,
   * host_step_call): the step's Python runs only after found_inf.item(),
   * which waits for unscale_'s kernels, so it is serial after backward's
   * GPU work, not under it. single, host-bound: the launches end at
   * 3 L + 3 H = 9000; l0's backward kernel (100 us at the fp16 rate), then
   * unscale_'s (2 passes over 7,341,056 B at 1000 GB/s, 14.682112 us) end
   * at 9114.682112; found_inf.item (P) to 9314.682112; the step's host
   * (100) to 9414.682112, when its kernels start: the iteration is
   * 3 L + 3 H + 100 + 14.682112 + P + 100 + step. (Were the step's host
   * under l0's backward, 9000 + 114.682112 + step: 300 us less.) DDP on
   * one rank: after its reducer's host work S = 3 L + 3 H + 4 K + 2 C +
   * 4 P, the GPU long idle: S + 14.682112 + P + 100 + step (S + 100 +
   * step without the sync). dp on two GPUs: GPU 0's step host starts P
   * after unscale_'s kernels end. */
  char dir[] = "/tmp/ddpsim-loop-XXXXXX", topo[512], args[2048], path[600];
  step_host_topo(dir, topo, sizeof topo);
  const double l0_bwd_us = 100, unscale_us = 14.682112, step_host_us = 100;
  snprintf(path, sizeof path, "%s/t.csv", dir);
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy single --amp fp16 "
           "--loop sync --trace %s --format csv", topo, path);
  double single_us = 3 * L_US + 3 * H_US + l0_bwd_us + unscale_us + P_US + step_host_us + STEP_US;
  cr_assert_float_eq(iter_ms(args, 0), single_us / 1e3, 1e-6);
  char *csv = ds_test_slurp(path);
  double start, end, item_start, item_end, unscale_end;
  ds_test_trace_span(csv, "compute,step,unscale_", &start, &unscale_end);
  cr_assert_float_eq(unscale_end, 3 * L_US + 3 * H_US + l0_bwd_us + unscale_us, 1e-3);
  ds_test_trace_span(csv, "host,step,found_inf.item", &item_start, &item_end);
  cr_assert_float_eq(item_start, unscale_end, 1e-3);
  ds_test_trace_span(csv, "host,step,optimizer", &start, &end);
  cr_assert_float_eq(start, item_end, 1e-3, "the step's host after unscale_ and the sync");
  free(csv);
  double s = 3 * L_US + 3 * H_US + 4 * K_US + 2 * C_US + 4 * P_US;
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy ddp --world-size 1 "
           "--amp fp16 --format csv", topo);
  cr_assert_float_eq(iter_ms(args, 0), (s + unscale_us + P_US + step_host_us + STEP_US) / 1e3,
                     1e-6);
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy dp --world-size 2 "
           "--amp fp16 --trace %s --format csv", topo, path);
  iter_ms(args, 0);
  csv = ds_test_slurp(path);
  ds_test_trace_span(csv, "compute,step,unscale_", &start, &unscale_end);
  ds_test_trace_span(csv, "host,step,optimizer", &start, &end);
  cr_assert_float_eq(start, unscale_end + P_US, 1e-3);
  free(csv);
  ds_test_remove_dir(dir);
}

Test(loop, fp16_step_kernels_wait_for_found_inf_with_no_step_host_and_under_free) {
  /* Two ends of GradScaler's sync. With no step host work at all
   * (tiny-host-topo.yaml's host_step_* are 0), the step's kernels wait
   * for found_inf.item itself: single under sync is 3 L + 3 H, l0's
   * backward kernel (100 us at the fp16 rate), unscale_'s kernels
   * (14.682112 us), found_inf.item (P), then the step. Under --loop free
   * with the foreach step's host at 100 us, the next iteration's first
   * launch follows the step's host op, which follows found_inf.item: the
   * iteration is 3 L + 3 H + 100 + 14.682112 + P + 100 (the step's
   * kernels run under the next forward's first launch). */
  const double l0_bwd_us = 100, unscale_us = 14.682112, step_host_us = 100;
  double sync_us = 3 * L_US + 3 * H_US + l0_bwd_us + unscale_us + P_US + STEP_US;
  cr_assert_float_eq(iter_ms(HOST_TOPO "--strategy single --amp fp16 --format csv", 0),
                     sync_us / 1e3, 1e-6);
  char dir[] = "/tmp/ddpsim-loop-XXXXXX", topo[512], args[2048];
  step_host_topo(dir, topo, sizeof topo);
  snprintf(args, sizeof args,
           "--topo %s --model tests/data/tiny-model.yaml --strategy single --amp fp16 "
           "--loop free --format csv", topo);
  double free_us = 3 * L_US + 3 * H_US + l0_bwd_us + unscale_us + P_US + step_host_us;
  cr_assert_float_eq(iter_ms(args, 0), free_us / 1e3, 1e-6);
  ds_test_remove_dir(dir);
}
