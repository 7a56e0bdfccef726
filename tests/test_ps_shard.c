/*
 * Parameter server (sim/train/ps*.c), where the servers' work lies:
 * sharding (whole tensors, greedily by bytes, in registration order), the
 * servers' and workers' memory, and a server's update (its bytes, kernels
 * and host launches over its shard, under PyTorch 1.4's loop and under
 * grad scaler). The runs: test_ps_step.c and test_ps_window.c; the command
 * (ddpsim --strategy ps): test_ps_cli.c. tiny-topo and the fixture:
 * tests/ps_fixture.h.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/compute.h"
#include "sim/train/host.h"
#include "sim/train/model.h"
#include "sim/train/ps.h"
#include "tests/ps_fixture.h"
#include "tests/ps_hand.h"

Test(ps, shards_whole_tensors_greedily_by_bytes) {
  /* tiny-model tensors in registration order: 262144, 256, 524288, 1048576
   * elements. Greedy to the least-loaded of 2: t0 -> s0 (262144); t1 -> s1
   * (256); t2 -> s1 (256 < 262144: 524544); t3 -> s0 (262144 < 524544). */
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  struct ds_ps_shards sh;
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_shard(f.model, 2, 4, &sh, &err), DS_OK);
  const int32_t want[] = {0, 1, 1, 0};
  for (int i = 0; i < 4; i++) cr_assert_eq(sh.server_of_param[i], want[i], "tensor %d", i);
  cr_assert_eq(sh.numel[0], 262144 + 1048576);
  cr_assert_eq(sh.numel[1], 256 + 524288);
  /* server k on GPU k * world / servers */
  cr_assert_eq(sh.gpu[0], 0);
  cr_assert_eq(sh.gpu[1], 2);
  ds_ps_shards_release(&sh);
  /* More servers than ranks, or none, is the user's mistake. */
  cr_assert_eq(ds_ps_shard(f.model, 5, 4, &sh, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "--ps-servers") != NULL, "%s", err.msg);
  cr_assert_eq(ds_ps_shard(f.model, 0, 4, &sh, &err), DS_EUSAGE);
  unload(&f);
}

/* Sharding walks model.parameters(), the registration order, not the
 * file's (the forward's): tensors a, b, c of 6, 6, 4 elements in the file,
 * registered c, a, b (key registration, as BERT's embeddings). Greedy over
 * 2 servers in registration order: c -> s0 (4), a -> s1 (6), b -> s0
 * (4 < 6: 10); in file order it was a -> s0, b -> s1, c -> s0. (The old
 * code walked the file's order: fails.) */
Test(ps, shards_in_registration_order) {
  struct ds_param p[3] = {{.numel = 6}, {.numel = 6}, {.numel = 4}};
  int32_t reg[3] = {2, 0, 1}, reg_index[3] = {1, 2, 0};
  struct ds_model m = {.params = p, .n_params = 3, .registration = reg,
                       .registration_index = reg_index};
  struct ds_ps_shards sh;
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_shard(&m, 2, 2, &sh, &err), DS_OK, "%s", err.msg);
  const int32_t want[] = {1, 0, 0}; /* a, b, c by file index */
  for (int i = 0; i < 3; i++) cr_assert_eq(sh.server_of_param[i], want[i], "tensor %d", i);
  cr_assert_eq(sh.numel[0], 10);
  cr_assert_eq(sh.numel[1], 6);
  ds_ps_shards_release(&sh);
}

Test(ps, update_bytes_and_memory) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  /* SGD with momentum: PyTorch's foreach kernels pass 8 times over the
   * shard (compute.h); sync with 4 workers sums the 4 gradients first
   * (read 4, write 1): 5 more. 1,048,576 fp32. */
  double shard = 1048576.0 * 4;
  cr_assert_float_eq(ds_ps_update_bytes(f.model, &f.c, 1048576, DS_PS_ASYNC, 4), 8 * shard, 1e-6);
  cr_assert_float_eq(ds_ps_update_bytes(f.model, &f.c, 1048576, DS_PS_SYNC, 4), 13 * shard, 1e-6);
  cr_assert_float_eq(ds_ps_update_bytes(f.model, &f.c, 1048576, DS_PS_SYNC, 1), 8 * shard, 1e-6);
  /* Memory, batch 2, 2 servers on GPUs 0 and 2: every worker holds
   * params P and peaks after l0's backward, its activations (2 x 2 MB)
   * freed, its grads P allocated, the output (2 x 1 MB) still held: P +
   * 2 MB (backward's start: 4 + 2 MB); GPU 0 also its shard's
   * master copy P/2, momentum P/2 and the 4 workers' pushed gradients, 4 x
   * P/2 (sync sums all 4 after the last push; async holds one per worker
   * until its update); GPU 1 nothing. */
  struct ds_ps_shards sh;
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_shard(f.model, 2, 4, &sh, &err), DS_OK);
  double P = 2 * shard;
  struct ds_ddp_memory m0, m1;
  struct ds_memory_options mo = {0};
  ds_ps_memory(f.model, &f.c.precision, 2, &mo, &sh, 4, 0, &m0);
  ds_ps_memory(f.model, &f.c.precision, 2, &mo, &sh, 4, 1, &m1);
  cr_assert_float_eq(m1.total, 2 * P + 2e6, 1e-3);
  cr_assert_eq(m1.peak_at, DS_PEAK_BACKWARD);
  cr_assert_eq(m1.peak_layer, 0);
  cr_assert_float_eq(m1.optimizer, 0, 1e-9);
  cr_assert_float_eq(m0.total, 2 * P + 2e6 + 6 * P / 2, 1e-3);
  cr_assert_float_eq(m0.buckets, 4 * P / 2, 1e-3);
  cr_assert_float_eq(m0.optimizer, P / 2, 1e-3);
  /* One worker: its own push lands in one buffer. */
  ds_ps_memory(f.model, &f.c.precision, 2, &mo, &sh, 1, 0, &m0);
  cr_assert_float_eq(m0.buckets, P / 2, 1e-3);
  ds_ps_shards_release(&sh);
  unload(&f);
}

Test(ps, pytorch_1_4_update_is_the_loops_kernels_over_the_shard) {
  /* Under --pytorch-version 1.4 a server steps its shard as PyTorch 1.4's
   * loop (compute.h): with --weight-decay 4 kernels and 11 passes per
   * tensor. tiny-model, 1 server, async (no gradient sum), kernel_overhead
   * set to 3 us: the update's bytes are 11 S, and its time the roofline of
   * those bytes plus 4 kernels x 4 tensors of 3 us each (the foreach
   * update: its 4 calls, 3 us each, as a rank's foreach step). */
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  f.c.params.kernel_overhead_ns = 3000;
  double S = 1835264.0 * 4;
  struct ds_ps_options o = opts(2, 1, DS_PS_ASYNC, 2, 1);
  double dur[2];
  for (int loop = 0; loop < 2; loop++) {
    f.c.optimizer_loop = loop;
    f.c.weight_decay = 1;
    cr_assert_float_eq(ds_ps_update_bytes(f.model, &f.c, 1835264, DS_PS_ASYNC, 2), 11 * S, 1e-6);
    struct ds_ps_result r;
    run(&f, &o, &r);
    dur[loop] = -1;
    for (size_t i = 0; i < r.step->n_ops; i++)
      if (r.step->ops[i].kind == DS_OP_STEP) dur[loop] = r.step->ops[i].dur_us;
    ds_ps_result_release(&r);
  }
  double roof = 11 * S / MEM_BW * 1e6;
  cr_assert_float_eq(dur[0], roof + 4 * 3, 1e-6, "foreach %.6f us", dur[0]);
  cr_assert_float_eq(dur[1], roof + 16 * 3, 1e-6, "1.4 loop %.6f us", dur[1]);
  unload(&f);
}

/* multi_tensor_apply splits each foreach call of a server's update by the
 * shard's own tensors and chunks (ds_compute_step_launches_of), as it
 * splits a rank's step by the model's. By hand, SGD (3 calls of depth 1,
 * 2, 2: at most 110, 64, 64 tensors and 320 chunks of 65,536 elements a
 * launch): p0 of 330 chunks on server 0, p1 of 1 element on server 1.
 * Server 0: each call fills 320 blocks, then 10: 2 launches, 6; server 1:
 * 1 each, 3; both together: 320, then p0's last 10 and p1's one block, 6,
 * what the whole step launches. Under 1.4's loop, 3 kernels a tensor. */
Test(ps, a_servers_update_launches_over_its_shards_tensors) {
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  struct ds_param p[2] = {{.numel = 330 * 65536}, {.numel = 1}};
  struct ds_model m = {.params = p, .n_params = 2, .optimizer = DS_OPT_SGD};
  const int32_t server_of[2] = {0, 1};
  cr_assert_eq(ds_compute_step_launches_of(&f.c, &m, server_of, 0), 6);
  cr_assert_eq(ds_compute_step_launches_of(&f.c, &m, server_of, 1), 3);
  cr_assert_eq(ds_compute_step_launches_of(&f.c, &m, NULL, 0), 6);
  cr_assert_eq(ds_compute_step_launches(&f.c, &m), 6);
  f.c.optimizer_loop = 1;
  cr_assert_eq(ds_compute_step_launches_of(&f.c, &m, server_of, 0), 3);
  cr_assert_eq(ds_compute_step_launches_of(&f.c, &m, NULL, 0), 6);
  f.c.optimizer_loop = 0;
  unload(&f);
  /* ResNet-50 on one server at world size 1 (no gradient sum): its update
   * is a rank's whole step, 9 launches (its 161 tensors: 3 per call, as
   * the H200 traces launch them), so with a 3 us kernel_overhead it takes
   * the step's time plus the foreach step's host; the old update charged
   * 3 launches, 18 us short: fails there. */
  load(&f, "models/resnet50.yaml");
  f.c.params.kernel_overhead_ns = 3000;
  cr_assert_eq(ds_compute_step_launches(&f.c, f.model), 9);
  struct ds_ps_options o = opts(1, 1, DS_PS_SYNC, 2, 1);
  struct ds_ps_result r;
  run(&f, &o, &r);
  double dur = -1;
  for (size_t i = 0; i < r.step->n_ops; i++)
    if (r.step->ops[i].kind == DS_OP_STEP) dur = r.step->ops[i].dur_us;
  ds_ps_result_release(&r);
  double want = (ds_compute_step_ns(&f.c, f.model) +
                 ds_host_foreach_step_tensors_ns(&f.c, f.model->optimizer, f.model->n_params)) /
                1000;
  cr_assert_float_eq(dur, want, 1e-6, "update %.6f us, step + host %.6f us", dur, want);
  unload(&f);
}

Test(ps, a_server_runs_the_foreach_steps_host_over_its_shard) {
  /* The server's optimizer.step() over its shard has the Python of a
   * rank's foreach step (host.h ds_host_foreach_step_tensors_ns): with
   * host_step_call 100 us and host_step_param 10 us (tiny-topo.yaml sets
   * both to 0), one server holding the tiny model's 4 tensors, its update
   * takes 100 + 4 x 10 = 140 us longer; 2 servers split the tensors, each
   * paying the call and its own tensors (3 + 1 or 2 + 2: 2 calls and 4
   * tensors in all, 240 us more over both). Under 1.4's loop none. */
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  for (int32_t servers = 1; servers <= 2; servers++) {
    struct ds_ps_options o = opts(2, servers, DS_PS_SYNC, 2, 1);
    double sum[2][2];
    for (int loop = 0; loop < 2; loop++)
      for (int host = 0; host < 2; host++) {
        f.c.optimizer_loop = loop;
        f.c.params.host_step_call_ns = host ? 100e3 : 0;
        f.c.params.host_step_param_ns = host ? 10e3 : 0;
        struct ds_ps_result r;
        run(&f, &o, &r);
        sum[loop][host] = 0;
        for (size_t i = 0; i < r.step->n_ops; i++)
          if (r.step->ops[i].kind == DS_OP_STEP) sum[loop][host] += r.step->ops[i].dur_us;
        ds_ps_result_release(&r);
      }
    cr_assert_float_eq(sum[0][1] - sum[0][0], servers * 100 + 4 * 10, 1e-6,
                       "%d servers: %.6f us more", servers, sum[0][1] - sum[0][0]);
    cr_assert_float_eq(sum[1][1], sum[1][0], 1e-9, "the loop: %.6f us", sum[1][1]);
  }
  unload(&f);
}

Test(ps, the_update_is_the_same_kernels_under_grad_scaler) {
  /* GradScaler's unscale_ runs on a worker, before its sync; the server's
   * update is the optimizer's kernels whatever --amp says: tiny-model, 1
   * server, sync on 2 workers (the sum), kernel_overhead 3 us, foreach and
   * 1.4's loop, the same update without autocast and under fp16. */
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  f.c.params.kernel_overhead_ns = 3000;
  struct ds_ps_options o = opts(2, 1, DS_PS_SYNC, 2, 1);
  for (int loop = 0; loop < 2; loop++) {
    double dur[2];
    for (int fp16 = 0; fp16 < 2; fp16++) {
      f.c.optimizer_loop = loop;
      f.c.amp = fp16 ? DS_AMP_FP16 : DS_AMP_NONE;
      struct ds_ps_result r;
      run(&f, &o, &r);
      dur[fp16] = -1;
      for (size_t i = 0; i < r.step->n_ops; i++)
        if (r.step->ops[i].kind == DS_OP_STEP) dur[fp16] = r.step->ops[i].dur_us;
      ds_ps_result_release(&r);
    }
    cr_assert_gt(dur[0], 0);
    cr_assert_float_eq(dur[1], dur[0], 1e-9, "loop %d: fp16 %.6f us, none %.6f us", loop,
                       dur[1], dur[0]);
  }
  unload(&f);
}
