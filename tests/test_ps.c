/*
 * Parameter server (sim/train/ps*.c): sharding, the server's update cost, a sync
 * step worked by hand on tiny-topo (the server's link is the shared
 * bottleneck), two servers halving it, stragglers under sync and async,
 * staleness, errors and determinism. The command (ddpsim --strategy ps):
 * test_ps_cli.c.
 *
 * tiny-topo: 4 TestGPUs (10 TFLOPS fp32, 1000 GB/s, efficiencies 1, no
 * kernel overhead) on one switch, 10 GB/s and 1 us per link: a route
 * between two GPUs is 2 links, latency a = 2 us (trailing), B = 10 GB/s.
 * Servers are colocated on GPUs: one server on GPU 0, two on GPUs 0 and 2.
 * The closed forms both files use: tests/ps_hand.h.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/metrics.h"
#include "base/units.h"
#include "sim/train/compute.h"
#include "sim/train/host.h"
#include "sim/train/jitter.h"
#include "sim/train/model.h"
#include "sim/train/ps.h"
#include "sim/net/topo.h"
#include "tests/support.h"
#include "tests/ps_hand.h"

struct fixture {
  struct ds_topo *topo;
  struct ds_model *model;
  struct ds_compute c;
};

static void load(struct fixture *f, const char *model) {
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &f->topo, &err), DS_OK,
               "%s", err.msg);
  f->model = ds_test_model(model);
  cr_assert_eq(ds_compute_init(f->topo, DS_DTYPE_FP32, DS_AMP_NONE, &f->c, &err), DS_OK, "%s", err.msg);
}

static void unload(struct fixture *f) {
  ds_model_free(f->model);
  ds_topo_free(f->topo);
}

static struct ds_ps_options opts(int32_t world, int32_t servers, enum ds_ps_mode mode,
                                 int32_t iters, int64_t batch) {
  return (struct ds_ps_options){.world_size = world, .batch = batch, .n_servers = servers,
                                .mode = mode, .iters = iters, .net_mode = DS_NET_MAXMIN};
}

static void run(struct fixture *f, const struct ds_ps_options *o, struct ds_ps_result *r) {
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_run(f->topo, f->model, &f->c, o, r, &err), DS_OK, "%s", err.msg);
}

/* Every step's op times as ds_ps_run hands them over (ps.h on_iter), the
 * whole run's: op i of the run is step i / ns's op i % ns (r->step's). */
struct timeline {
  size_t ns, n_ops;    /* ops per step, of the run */
  int32_t steps;       /* handed over */
  int64_t *start, *end;
};

static ds_status collect(void *ctx, const struct ds_schedule *step, int32_t iter,
                         const int64_t *start_ns, const int64_t *end_ns, struct ds_err *err) {
  struct timeline *t = ctx;
  (void)err;
  cr_assert_eq(iter, t->steps, "step %d handed over after %d steps", iter, t->steps);
  t->ns = step->n_ops;
  t->n_ops = (size_t)(iter + 1) * t->ns;
  t->start = realloc(t->start, t->n_ops * sizeof *t->start);
  t->end = realloc(t->end, t->n_ops * sizeof *t->end);
  cr_assert(t->start && t->end);
  memcpy(t->start + (size_t)iter * t->ns, start_ns, t->ns * sizeof *start_ns);
  memcpy(t->end + (size_t)iter * t->ns, end_ns, t->ns * sizeof *end_ns);
  t->steps++;
  return DS_OK;
}

static void timeline_release(struct timeline *t) {
  free(t->start);
  free(t->end);
  memset(t, 0, sizeof *t);
}

/* run, with every step's times in *t: each step handed over once, in
 * order, and the result's copies of the first and the last step and the
 * latest end before the last are the timeline's. */
static void run_timed(struct fixture *f, const struct ds_ps_options *o, struct ds_ps_result *r,
                      struct timeline *t) {
  struct ds_ps_options ot = *o;
  *t = (struct timeline){0};
  ot.on_iter = collect;
  ot.on_iter_ctx = t;
  run(f, &ot, r);
  size_t ns = r->step->n_ops, last = (size_t)(o->iters - 1) * ns;
  cr_assert_eq(t->steps, o->iters);
  cr_assert_eq(t->ns, ns);
  cr_assert_eq(memcmp(r->first_start_ns, t->start, ns * sizeof *t->start), 0);
  cr_assert_eq(memcmp(r->first_end_ns, t->end, ns * sizeof *t->end), 0);
  cr_assert_eq(memcmp(r->last_start_ns, t->start + last, ns * sizeof *t->start), 0);
  cr_assert_eq(memcmp(r->last_end_ns, t->end + last, ns * sizeof *t->end), 0);
  int64_t before = INT64_MIN, before_r0 = INT64_MIN;
  for (size_t i = 0; i < last; i++) {
    if (t->end[i] > before) before = t->end[i];
    if (r->step->ops[i % ns].rank == 0 && t->end[i] > before_r0) before_r0 = t->end[i];
  }
  cr_assert_eq(r->before_last_end_ns, before);
  cr_assert_eq(r->before_last_rank0_end_ns, before_r0);
}

/* analysis/metrics.c's metrics (the summary's, on rank 0) of step `it` of
 * t: its ops are the timeline's step it, the earlier steps before it. */
static struct ds_metrics metrics_of(const struct ds_ps_result *r, const struct timeline *t,
                                    int32_t it) {
  size_t ns = r->step->n_ops, first = (size_t)it * ns;
  struct ds_timed_op *ops = malloc((first + ns) * sizeof *ops);
  cr_assert(ops);
  for (size_t i = 0; i < first + ns; i++)
    ops[i] = (struct ds_timed_op){&r->step->ops[i % ns], t->start[i], t->end[i]};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(ops + first, ns, ds_metrics_last_end(ops, first),
                                  ds_metrics_rank0_last_end(ops, first), &m), DS_OK);
  free(ops);
  return m;
}

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

Test(ps, sync_step_by_hand_server_link_is_the_bottleneck) {
  /* tiny-model: the first launch 20 us, forward 100+200+100 us, loss 2 us,
   * backward twice the forward: C = 1222 us;
   * S = 1,835,264 * 4 = 7,341,056 bytes. Push: 3 remote workers through
   * the server's one 10 GB/s link: 2 us + 3 * 7341056 / 10e9 s = 2204.317
   * us; update (13 passes) 95.434 us; pull 2204.317 us. */
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  struct ds_ps_options o = opts(4, 1, DS_PS_SYNC, 3, 1);
  struct ds_ps_result r;
  struct timeline t;
  run_timed(&f, &o, &r, &t);
  double S = 1835264.0 * 4;
  double T = sync_period_ns(LAUNCH_NS + 1200e3 + LOSS_NS(1), S, 4);
  cr_assert_float_eq(T, 5726068, 1, "hand value %.0f", T);
  cr_assert_float_eq(r.mean_step_ms, T / 1e6, 3e-6, "iter %.6f ms, want %.6f", r.mean_step_ms, T / 1e6);
  for (int w = 0; w < 4; w++)
    cr_assert_float_eq(r.worker_step_ms[w], T / 1e6, 3e-6, "worker %d", w);
  /* The summary's metrics (analysis/metrics.c, rank 0) of the last step:
   * the period T; forward and the loss 402 us, backward 800 us; the one
   * update on GPU 0, 95.434 us; communication: worker 0 copies to its own
   * server, 2S/1000 GB/s = 14.682 us each way, push then pull, under no
   * compute (exposed all of it). Iteration 0 begins with its first op, the
   * 20 us launch of the first forward: T, ending when every worker has its
   * pull. */
  struct ds_metrics m = metrics_of(&r, &t, 2), m0 = metrics_of(&r, &t, 0);
  cr_assert_float_eq(m.v[DS_METRIC_iter_ms], T / 1e6, 3e-6);
  cr_assert_float_eq(m0.v[DS_METRIC_iter_ms], T / 1e6, 3e-6);
  cr_assert_float_eq(m.v[DS_METRIC_fwd_ms], 0.402, 1e-9); /* forward and the loss */
  cr_assert_float_eq(m.v[DS_METRIC_bwd_ms], 0.8, 1e-9);
  cr_assert_float_eq(m.v[DS_METRIC_step_ms], 0.095434, 1e-9);
  /* Worker 0's pushes and pulls are copies on its own GPU, to the server
   * there: GPU work (analysis/metrics.c), not communication. Its step
   * starts when its pull is in, 14.682 us after the update, long before
   * the remote pulls end and the iteration starts: rank 0's window of the
   * iteration starts with its own step (analysis/metrics.h), so GPU busy
   * is all of its step's GPU work, one op after another: forward and
   * loss, backward, the push, the update, the pull, 1326.798 us; and the
   * first launch (20 us, before any kernel of the step) is host exposed. */
  double local = rnd(2 * S / MEM_BW * 1e9);
  cr_assert_float_eq(m.v[DS_METRIC_comm_ms], 0, 1e-9, "comm %.6f", m.v[DS_METRIC_comm_ms]);
  cr_assert_float_eq(m.v[DS_METRIC_exposed_comm_ms], 0, 1e-9);
  double compute = 402e3 + 800e3 + local + 95434 + local;
  cr_assert_float_eq(compute, 1326798, 1);
  cr_assert_float_eq(m.v[DS_METRIC_gpu_busy_ms], compute / 1e6, 1e-6, "busy %.6f",
                     m.v[DS_METRIC_gpu_busy_ms]);
  cr_assert_float_eq(m.v[DS_METRIC_host_exposed_ms], LAUNCH_NS / 1e6, 1e-9, "host %.6f",
                     m.v[DS_METRIC_host_exposed_ms]);
  /* samples/s: 4 workers of batch 1 per period. */
  cr_assert_float_eq(r.samples_per_s, 4 / (T / 1e9), 1e-3 * 4 / (T / 1e9));
  cr_assert_eq(r.staleness_max, 0);
  cr_assert_float_eq(r.staleness_mean, 0, 1e-12);
  cr_assert_eq(r.n_updates, 3); /* one per step per server */
  /* The ops of every step are there, with push/pull kinds on the comm
   * stream and the update on the server's GPU. */
  cr_assert_eq(t.n_ops, 3 * r.step->n_ops);
  int pushes = 0, pulls = 0, updates = 0;
  for (size_t i = 0; i < r.step->n_ops; i++) {
    const struct ds_op *op = &r.step->ops[i];
    pushes += op->kind == DS_OP_PUSH;
    pulls += op->kind == DS_OP_PULL;
    if (op->kind == DS_OP_STEP) {
      updates++;
      cr_assert_eq(op->rank, 0);
    }
    if (op->kind == DS_OP_PUSH || op->kind == DS_OP_PULL) {
      cr_assert_eq(op->stream, DS_STREAM_COMM);
      cr_assert_eq(op->root, 0);
    }
  }
  cr_assert_eq(pushes, 4);
  cr_assert_eq(pulls, 4);
  cr_assert_eq(updates, 1);
  ds_ps_result_release(&r);
  timeline_release(&t);
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

Test(ps, two_servers_on_independent_links_halve_the_transfer) {
  /* ps-model: C = 20 + 2 x 100 + 2 + 2 x 200 = 622 us (with the launch and the loss), S = 8 MiB in two 4 MiB
   * tensors. One server (GPU 0): 3 remote pushes of S share its link.
   * Two servers (GPUs 0 and 2): each gets 3 remote pushes of S/2 on its
   * own link (workers 1 and 3 send to both, 2 x B/3 < B on their uplink),
   * so push and pull take a + 3 (S/2)/B: the data phase halves. */
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  double S = 2 * 1048576.0 * 4, C = LAUNCH_NS + 600e3 + LOSS_NS(1);
  struct ds_ps_result r1, r2;
  struct timeline t1, t2;
  struct ds_ps_options o1 = opts(4, 1, DS_PS_SYNC, 2, 1);
  struct ds_ps_options o2 = opts(4, 2, DS_PS_SYNC, 2, 1);
  run_timed(&f, &o1, &r1, &t1);
  run_timed(&f, &o2, &r2, &t2);
  double T1 = sync_period_ns(C, S, 4);
  double T2 = sync_period_ns(C, S / 2, 4);
  cr_assert_float_eq(r1.mean_step_ms, T1 / 1e6, 3e-6, "%.6f vs %.6f", r1.mean_step_ms, T1 / 1e6);
  cr_assert_float_eq(r2.mean_step_ms, T2 / 1e6, 3e-6, "%.6f vs %.6f", r2.mean_step_ms, T2 / 1e6);
  /* The transfers alone (period minus compute, update and latencies). */
  double x1 = T1 - C - rnd(13 * S / MEM_BW * 1e9) - 2 * ALPHA_NS;
  double x2 = T2 - C - rnd(13 * (S / 2) / MEM_BW * 1e9) - 2 * ALPHA_NS;
  cr_assert_float_eq(x2 / x1, 0.5, 1e-6);
  /* The same from the run: its period less the update on GPU 0 (server 0's,
   * the one on the critical path of both) as the summary measures it. */
  double step1 = metrics_of(&r1, &t1, 1).v[DS_METRIC_step_ms];
  double step2 = metrics_of(&r2, &t2, 1).v[DS_METRIC_step_ms];
  cr_assert_float_eq(step1 * 1e6, rnd(13 * S / MEM_BW * 1e9), 1);
  cr_assert_float_eq(step2 * 1e6, rnd(13 * (S / 2) / MEM_BW * 1e9), 1);
  double got1 = r1.mean_step_ms * 1e6 - C - step1 * 1e6 - 2 * ALPHA_NS;
  double got2 = r2.mean_step_ms * 1e6 - C - step2 * 1e6 - 2 * ALPHA_NS;
  cr_assert_float_eq(got2 / got1, 0.5, 1e-5, "ratio %.6f", got2 / got1);
  ds_ps_result_release(&r1);
  ds_ps_result_release(&r2);
  timeline_release(&t1);
  timeline_release(&t2);
  unload(&f);
}

Test(ps, sync_waits_for_a_straggler_async_does_not) {
  /* ps-model at batch 16: C = 16 x 600 us + the loss = 9.632 ms, S = 8 MiB,
   * one server on GPU 0, rank 3 computes 2x slower. */
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  double S = 2 * 1048576.0 * 4, C = 9.6e6 + LOSS_NS(16);
  double factor[4] = {1, 1, 1, 2};
  struct ds_ps_result sn, ss, an, as;
  struct ds_ps_options o = opts(4, 1, DS_PS_SYNC, 4, 16);
  run(&f, &o, &sn);
  o.rank_factor = factor;
  run(&f, &o, &ss);
  o = opts(4, 1, DS_PS_ASYNC, 40, 16);
  run(&f, &o, &an);
  o.rank_factor = factor;
  run(&f, &o, &as);
  /* Sync without a straggler: the hand period. With one: workers 1 and 2
   * push at C (after the 20 us launch) through the shared link (2 flows),
   * long done when rank 3 ends its 2C of compute and pushes alone: a + S/B; then the update and
   * the three pulls as before. The period follows the straggler's pace. */
  double T = sync_period_ns(LAUNCH_NS + C, S, 4);
  double upd = rnd(13 * S / MEM_BW * 1e9);
  double Ts = LAUNCH_NS + 2 * C + ALPHA_NS + rnd(S / B_LINK * 1e9) + upd + ALPHA_NS +
              rnd(3 * S / B_LINK * 1e9);
  cr_assert_float_eq(sn.mean_step_ms, T / 1e6, 3e-6, "%.6f vs %.6f", sn.mean_step_ms, T / 1e6);
  cr_assert_float_eq(ss.mean_step_ms, Ts / 1e6, 3e-6, "%.6f vs %.6f", ss.mean_step_ms, Ts / 1e6);
  for (int w = 0; w < 4; w++)
    cr_assert_float_eq(ss.worker_step_ms[w], Ts / 1e6, 3e-6, "worker %d", w);
  cr_assert_float_eq(ss.mean_step_ms / sn.mean_step_ms, Ts / T, 1e-6);
  cr_assert_gt(ss.mean_step_ms / sn.mean_step_ms, 1.5, "sync slows everyone to the straggler");
  /* Async: workers 0..2 keep their throughput (the sum of their rates)
   * within 3 %; the straggler alone slows down (its compute doubles:
   * between (2C + x)/(C + x) and 2); the aggregate rate drops by about a
   * quarter of one worker's. Per worker the rates move a little more: the
   * colocated worker 0 (local copies) runs faster than the remote ones,
   * which take turns on the server's link in an order that changes. */
  double others_n = 0, others_s = 0;
  for (int w = 0; w < 3; w++) {
    others_n += 1 / an.worker_step_ms[w];
    others_s += 1 / as.worker_step_ms[w];
  }
  cr_assert(others_s / others_n > 0.97 && others_s / others_n < 1.03,
            "workers 0..2 keep %.4f of their rate", others_s / others_n);
  double slow = as.worker_step_ms[3] / an.worker_step_ms[3];
  cr_assert(slow > 1.5 && slow < 2.0, "straggler %.4f", slow);
  cr_assert_gt(as.samples_per_s, 0.70 * an.samples_per_s);
  cr_assert_gt(as.samples_per_s / an.samples_per_s, ss.samples_per_s / sn.samples_per_s + 0.15,
               "async keeps more of its throughput than sync");
  ds_ps_result_release(&sn);
  ds_ps_result_release(&ss);
  ds_ps_result_release(&an);
  ds_ps_result_release(&as);
  unload(&f);
}

Test(ps, an_async_rank0s_lines_are_its_own_step_by_hand) {
  /* ps-model at batch 16, one server on GPU 0, 4 workers, async, rank 3's
   * compute 2x: the healthy workers run their 10 steps ahead of the
   * straggler, whose step 9 (and its update on GPU 0) ends long after rank
   * 0's. Rank 0's own step (analysis/metrics.h): its first launch (20 us,
   * the GPU idle: host exposed), C = 16 x 600 us + the loss, its push to
   * its own GPU's server (a copy: 2S at 1000 GB/s), the server's update of
   * its gradient (async: 8 passes of S) and its pull (2S): GPU busy
   * C + 12 S/mem_bw, the window that plus the launch, the per-worker step
   * time of worker 0, no waiting. The old window (the iteration's length
   * from the end of the straggler's previous update on GPU 0) held that
   * update and little else: 0.067 of 9.733 ms. */
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  double S = 2 * 1048576.0 * 4, C = 9.6e6 + LOSS_NS(16);
  double factor[4] = {1, 1, 1, 2};
  struct ds_ps_options o = opts(4, 1, DS_PS_ASYNC, 10, 16);
  o.rank_factor = factor;
  struct ds_ps_result r;
  struct timeline t;
  run_timed(&f, &o, &r, &t);
  struct ds_metrics m = metrics_of(&r, &t, 9);
  double busy_ns = C + 2 * rnd(2 * S / MEM_BW * 1e9) + rnd(8 * S / MEM_BW * 1e9);
  cr_assert_float_eq(m.v[DS_METRIC_gpu_busy_ms], busy_ns / 1e6, 3e-6, "%.6f",
                     m.v[DS_METRIC_gpu_busy_ms]);
  cr_assert_eq(m.rank0_own_step, 1);
  cr_assert_float_eq(m.v[DS_METRIC_host_exposed_ms], LAUNCH_NS / 1e6, 1e-9);
  cr_assert_float_eq(m.rank0_window_ms, (busy_ns + LAUNCH_NS) / 1e6, 3e-6, "%.6f",
                     m.rank0_window_ms);
  cr_assert_float_eq(m.rank0_window_ms, r.worker_step_ms[0], 1e-6, "%.6f vs %.6f",
                     m.rank0_window_ms, r.worker_step_ms[0]);
  cr_assert_gt(m.v[DS_METRIC_iter_ms], 2 * m.rank0_window_ms, "the straggler sets the "
               "iteration: %.6f ms", m.v[DS_METRIC_iter_ms]);
  /* Sync on the same run: one update per server, the iteration's window
   * as before (rank0_window_ms is iter_ms). */
  timeline_release(&t);
  ds_ps_result_release(&r);
  o.mode = DS_PS_SYNC;
  run_timed(&f, &o, &r, &t);
  m = metrics_of(&r, &t, 9);
  cr_assert_eq(m.rank0_own_step, 0);
  cr_assert_eq(m.rank0_window_ms, m.v[DS_METRIC_iter_ms]);
  timeline_release(&t);
  ds_ps_result_release(&r);
  unload(&f);
}

Test(ps, staleness_zero_alone_or_sync_positive_async) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  struct ds_ps_result r;
  /* One worker, async: nobody else updates the server. */
  struct ds_ps_options o = opts(1, 1, DS_PS_ASYNC, 5, 1);
  run(&f, &o, &r);
  cr_assert_eq(r.staleness_max, 0);
  cr_assert_float_eq(r.staleness_mean, 0, 1e-12);
  cr_assert_eq(r.n_updates, 5);
  ds_ps_result_release(&r);
  /* Four workers, async: in step 0 the server applies the four pushes one
   * after another (worker 0's local copy first), so they are 0, 1, 2, 3
   * updates stale; every update is counted. */
  o = opts(4, 1, DS_PS_ASYNC, 5, 1);
  run(&f, &o, &r);
  cr_assert_eq(r.n_updates, 4 * 5);
  cr_assert_geq(r.staleness_max, 3);
  cr_assert_gt(r.staleness_mean, 0);
  cr_assert_leq(r.staleness_mean, 3);
  ds_ps_result_release(&r);
  /* Sync: one aggregated update per step, never stale. */
  o = opts(4, 2, DS_PS_SYNC, 5, 1);
  run(&f, &o, &r);
  cr_assert_eq(r.staleness_max, 0);
  cr_assert_eq(r.n_updates, 2 * 5);
  ds_ps_result_release(&r);
  unload(&f);
}

Test(ps, same_inputs_same_timeline) {
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  double factor[4] = {1, 1.5, 1, 1};
  struct ds_ps_options o = opts(4, 2, DS_PS_ASYNC, 6, 2);
  o.rank_factor = factor;
  o.jitter = 1;
  o.jitter_cv = 0.1;
  o.seed = 7;
  struct ds_ps_result a, b;
  struct timeline ta, tb;
  run_timed(&f, &o, &a, &ta);
  run_timed(&f, &o, &b, &tb);
  cr_assert_eq(ta.n_ops, tb.n_ops);
  cr_assert_eq(memcmp(ta.start, tb.start, ta.n_ops * sizeof *ta.start), 0);
  cr_assert_eq(memcmp(ta.end, tb.end, ta.n_ops * sizeof *ta.end), 0);
  cr_assert_eq(a.staleness_max, b.staleness_max);
  cr_assert_float_eq(a.staleness_mean, b.staleness_mean, 0);
  ds_ps_result_release(&a);
  ds_ps_result_release(&b);
  timeline_release(&ta);
  timeline_release(&tb);
  unload(&f);
}

Test(ps, compute_scaled_by_the_straggler_factor_only_on_its_rank) {
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  double factor[2] = {1, 3};
  struct ds_ps_options o = opts(2, 1, DS_PS_SYNC, 2, 1);
  o.rank_factor = factor;
  struct ds_ps_result r;
  struct timeline t;
  run_timed(&f, &o, &r, &t);
  /* Every compute op of rank 1 lasts 3x its dur_us; rank 0's 1x. */
  for (size_t i = 0; i < t.n_ops; i++) {
    const struct ds_op *op = &r.step->ops[i % t.ns];
    if (op->stream != DS_STREAM_COMPUTE) continue;
    double want = op->dur_us * 1000 * factor[op->rank];
    cr_assert_float_eq((double)(t.end[i] - t.start[i]), want, 0.5, "op %zu", i);
  }
  ds_ps_result_release(&r);
  timeline_release(&t);
  unload(&f);
}

Test(ps, bad_options_are_usage_errors) {
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  struct ds_ps_result r;
  struct ds_err err = {0};
  struct ds_ps_options o = opts(4, 5, DS_PS_SYNC, 2, 1);
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "--ps-servers") != NULL, "%s", err.msg);
  o = opts(5, 1, DS_PS_SYNC, 2, 1);
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "--world-size") != NULL, "%s", err.msg);
  o = opts(4, 1, DS_PS_SYNC, 1, 1);
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EUSAGE);
  double factor[4] = {1, 0, 1, 1};
  o = opts(4, 1, DS_PS_SYNC, 2, 1);
  o.rank_factor = factor;
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "--straggler") != NULL, "%s", err.msg);
  enum ds_ps_mode m;
  cr_assert_eq(ds_ps_mode_parse("async", &m), 0);
  cr_assert_eq(m, DS_PS_ASYNC);
  cr_assert_eq(ds_ps_mode_parse("Sync", &m), -1);
  unload(&f);
}

Test(ps, push_time_grows_with_the_workers_sharing_the_server_link) {
  /* W workers, one server on GPU 0: W - 1 remote pushes of S share its
   * link, a + (W-1) S/B, for W = 2, 3, 4 (sync_period_ns). Under the
   * alpha-beta network every flow gets the link alone: a + S/B whatever W. */
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  double S = 2 * 1048576.0 * 4;
  for (int W = 2; W <= 4; W++) {
    struct ds_ps_result r;
    struct ds_ps_options o = opts(W, 1, DS_PS_SYNC, 2, 1);
    run(&f, &o, &r);
    double T = sync_period_ns(LAUNCH_NS + 600e3 + LOSS_NS(1), S, W);
    cr_assert_float_eq(r.mean_step_ms, T / 1e6, 3e-6, "W=%d: %.6f vs %.6f", W, r.mean_step_ms, T / 1e6);
    ds_ps_result_release(&r);
    o.net_mode = DS_NET_CONSTANT;
    run(&f, &o, &r);
    double lone = LAUNCH_NS + 600e3 + LOSS_NS(1) + 2 * (ALPHA_NS + rnd(S / B_LINK * 1e9)) +
                  rnd((8 + W + 1) * S / MEM_BW * 1e9);
    cr_assert_float_eq(r.mean_step_ms, lone / 1e6, 3e-6, "alpha-beta W=%d: %.6f vs %.6f", W,
                       r.mean_step_ms, lone / 1e6);
    ds_ps_result_release(&r);
  }
  unload(&f);
}

Test(ps, per_layer_push_hides_the_rest_of_backward) {
  /* ps-model, one server on GPU 0, sync, batch 1. Per layer, layer 1's
   * gradients (S/2) leave after its backward (at F + 200 us), layer 0's
   * 200 us later. The server's link is the bottleneck and stays busy from
   * the first push on: the last byte of the 3 remote workers' 3S arrives
   * at F + 200 us + 3S/B (+ a): the step is layer 0's backward (200 us)
   * shorter than pushing after backward. Rank 0's (the summary's,
   * analysis/metrics.c): worker 0 copies to and from its own GPU's server,
   * GPU work, no communication; its step runs from its pull, before the
   * remote pulls end and the iteration starts, and its window of the
   * iteration starts with that step (analysis/metrics.h): its GPU runs the
   * forward, loss and backward (602 us), its push and pull, 2S at
   * 1000 GB/s = 16.777 us each, and the update, 13 S = 109.052 us; per
   * layer the push is two halves, the first of them (8.389 us) beside
   * layer 0's backward, counted once. */
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  double S = 2 * 1048576.0 * 4;
  struct ds_ps_result a, b;
  struct timeline ta, tb;
  struct ds_ps_options o = opts(4, 1, DS_PS_SYNC, 3, 1);
  run_timed(&f, &o, &a, &ta);
  o.push = DS_PS_PUSH_PER_LAYER;
  run_timed(&f, &o, &b, &tb);
  double T = sync_period_ns(LAUNCH_NS + 600e3 + LOSS_NS(1), S, 4);
  cr_assert_float_eq(a.mean_step_ms, T / 1e6, 3e-6);
  cr_assert_float_eq(b.mean_step_ms, (T - 200e3) / 1e6, 5e-6, "%.6f vs %.6f", b.mean_step_ms,
                     (T - 200e3) / 1e6);
  struct ds_metrics ma = metrics_of(&a, &ta, 2), mb = metrics_of(&b, &tb, 2);
  double busy = 600e3 + LOSS_NS(1) + rnd(13 * S / MEM_BW * 1e9) + 2 * rnd(2 * S / MEM_BW * 1e9);
  cr_assert_float_eq(busy, 744606, 1);
  for (int i = 0; i < 2; i++) {
    const struct ds_metrics *m = i ? &mb : &ma;
    cr_assert_float_eq(m->v[DS_METRIC_comm_ms], 0, 1e-9, "push %d", i);
    double want = i ? busy - rnd(S / MEM_BW * 1e9) : busy;
    cr_assert_float_eq(m->v[DS_METRIC_gpu_busy_ms] * 1e6, want, 2, "push %d: busy %.3f ns", i,
                       m->v[DS_METRIC_gpu_busy_ms] * 1e6);
  }
  /* Two pushes per worker now (one per layer), one pull. */
  int pushes = 0;
  for (size_t i = 0; i < b.step->n_ops; i++) pushes += b.step->ops[i].kind == DS_OP_PUSH;
  cr_assert_eq(pushes, 4 * 2);
  ds_ps_result_release(&a);
  ds_ps_result_release(&b);
  timeline_release(&ta);
  timeline_release(&tb);
  /* Async per layer: one update per worker and server per step, whatever
   * the number of pieces; more servers than tensors get an empty push. */
  o = opts(4, 3, DS_PS_ASYNC, 4, 1);
  o.push = DS_PS_PUSH_PER_LAYER;
  run(&f, &o, &b);
  cr_assert_eq(b.n_updates, 4 * 4 * 3);
  cr_assert_gt(b.staleness_max, 0);
  ds_ps_result_release(&b);
  unload(&f);
}

Test(ps, a_step_ends_after_its_compute_even_when_pulls_come_back_first) {
  /* ps-model-head per layer, 2 servers: l2.weight on server 0 (GPU 0),
   * l1.weight on server 1 (GPU 2). After l2's and l1's backward (200 us
   * each) their gradients leave; each server's three remote pushes of
   * 4 MiB share its link (a + 3 x 4 MiB / 10 GB/s = 1.260 ms), its update
   * and the pulls back take about as long again: every pull is back within
   * 2.8 ms, while the stem's backward (no parameters) runs 5 ms. The step
   * must still wait for the stem: compute ops of a worker never overlap,
   * and sync runs at the compute's pace, launch + F + loss + B = 20 + 3 x
   * 100 + 2 + 2 x 200 + 5000 us = 5.722 ms exactly, every pull having
   * arrived in time. */
  struct fixture f;
  load(&f, "tests/data/ps-model-head.yaml");
  struct ds_ps_options o = opts(4, 2, DS_PS_SYNC, 3, 1);
  o.push = DS_PS_PUSH_PER_LAYER;
  for (int mode = 0; mode < 2; mode++) {
    o.mode = mode ? DS_PS_ASYNC : DS_PS_SYNC;
    struct ds_ps_result r;
    struct timeline t;
    run_timed(&f, &o, &r, &t);
    /* the last pull of each (worker, step) */
    int64_t pull_end[4][3] = {{0}};
    size_t ns = r.step->n_ops;
    for (size_t i = 0; i < t.n_ops; i++) {
      const struct ds_op *op = &r.step->ops[i % ns];
      if (op->kind == DS_OP_PULL && t.end[i] > pull_end[op->rank][i / ns])
        pull_end[op->rank][i / ns] = t.end[i];
    }
    int early = 0;
    for (int32_t w = 0; w < 4; w++) {
      int64_t prev_end = -1;
      for (size_t i = 0; i < t.n_ops; i++) {
        const struct ds_op *op = &r.step->ops[i % ns];
        if (op->rank != w || op->stream != DS_STREAM_COMPUTE) continue;
        cr_assert_geq(t.start[i], prev_end, "mode %d worker %d op %zu overlaps", mode, w, i);
        int64_t pe = pull_end[w][i / ns];
        early += op->kind == DS_OP_BWD && op->layer == 0 && pe > t.start[i] && pe < t.end[i];
        prev_end = t.end[i];
      }
    }
    cr_assert_gt(early, 0, "mode %d: no pull came back during the stem's backward", mode);
    cr_assert_float_eq(r.mean_step_ms, 5.722, 1e-6, "mode %d: %.6f", mode, r.mean_step_ms);
    ds_ps_result_release(&r);
    timeline_release(&t);
  }
  unload(&f);
}

Test(ps, a_worker_launches_its_backward_from_the_autograd_thread) {
  /* A worker is a PyTorch process: its autograd engine's thread pays
   * host_node per node of each layer's backward (sim/train/host.h), as
   * single's and DDP's ranks do. tiny-model given host counts: per layer 2
   * forward ops of 10 us (20 us launches, as host_launch) and 5 nodes of
   * 100 us (500 us, longer than the layers' 200/400/200 us backward). One
   * worker, its server on its own GPU, sync. Host: forward launches [0,
   * 20), [20, 40), [40, 60); backward l2 [60, 560), l1 [560, 1060), l0
   * [1060, 1560). GPU: forward 20..420, loss 422, then each backward
   * kernel at its launch's end: l2 560..760, l1 1060..1460, l0
   * 1560..1760; then the push and the pull, local copies of 2S at 1000
   * GB/s (14.682 us each), and the update, 8 S (no sum with one worker):
   * T = 1760 + 2 x 14.682 + 58.729 us. Host exposed (a host op while
   * the GPU is idle): [0, 20) + [422, 560) + [760, 1060) + [1460, 1560) =
   * 558 us; GPU busy the rest of T: forward, loss, backward 1202 us and
   * the copies and update. Before, the backward charged no host time: T
   * was 1222 us + the same tail. */
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  f.model->host_counts = 1;
  f.model->host_dispatch_counts = 0;
  for (int32_t l = 0; l < f.model->n_layers; l++) {
    f.model->layers[l].host_ops = 2;
    f.model->layers[l].host_nodes = 5;
  }
  f.c.params.host_op_ns = 10e3;
  f.c.params.host_node_ns = 100e3;
  struct ds_ps_options o = opts(1, 1, DS_PS_SYNC, 3, 1);
  struct ds_ps_result r;
  struct timeline t;
  run_timed(&f, &o, &r, &t);
  double S = 1835264.0 * 4;
  double copy = rnd(2 * S / MEM_BW * 1e9), upd = rnd(8 * S / MEM_BW * 1e9);
  double T = 1760e3 + 2 * copy + upd;
  cr_assert_float_eq(T, 1760e3 + 2 * 14682 + 58729, 1);
  cr_assert_float_eq(r.mean_step_ms, T / 1e6, 2e-6, "step %.6f ms, want %.6f", r.mean_step_ms,
                     T / 1e6);
  /* the backward launches are host ops of the worker, one per layer */
  int launches = 0;
  for (size_t i = 0; i < r.step->n_ops; i++) {
    const struct ds_op *op = &r.step->ops[i];
    if (op->stream == DS_STREAM_HOST && op->kind == DS_OP_BWD) {
      launches++;
      cr_assert_float_eq(op->dur_us, 500, 1e-9);
    }
  }
  cr_assert_eq(launches, 3);
  struct ds_metrics m = metrics_of(&r, &t, 2);
  cr_assert_float_eq(m.v[DS_METRIC_iter_ms], T / 1e6, 2e-6);
  cr_assert_float_eq(m.v[DS_METRIC_host_exposed_ms], 0.558, 2e-6, "host exposed %.6f",
                     m.v[DS_METRIC_host_exposed_ms]);
  cr_assert_float_eq(m.v[DS_METRIC_gpu_busy_ms], (1202e3 + 2 * copy + upd) / 1e6, 2e-6);
  ds_ps_result_release(&r);
  timeline_release(&t);
  unload(&f);
}

/* ps holds a window of steps, not the run: a caller keeping every op in
 * memory (a trace printed once the run has ended) says how many bytes per
 * op it keeps, and a run whose ops would take more than mem_limit is
 * refused before it runs, naming how many steps fit. The tiny model on 4
 * ranks, 32 bytes kept per op, a limit of 2.5 steps: 3 steps are refused,
 * 2 named; 2 steps run; and with nothing kept, 3 steps run under the same
 * limit (the run's own memory does not grow with the steps). */
Test(ps, a_run_whose_kept_ops_do_not_fit_in_memory_is_refused) {
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  struct ds_ps_result r;
  struct ds_ps_options o = opts(4, 1, DS_PS_SYNC, 2, 1);
  run(&f, &o, &r);
  double per_iter = (double)r.step->n_ops * 32;
  ds_ps_result_release(&r);
  struct ds_err err = {0};
  o = opts(4, 1, DS_PS_SYNC, 3, 1);
  o.kept_bytes_per_op = 32;
  o.mem_limit = (uint64_t)(2.5 * per_iter);
  o.kept_by = "--trace -";
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "--trace - keeps every op") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "3 iterations of 4 ranks") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "--iters 2 or fewer") != NULL, "%s", err.msg);
  o.iters = 2;
  run(&f, &o, &r);
  ds_ps_result_release(&r);
  o.iters = 3;
  o.kept_bytes_per_op = 0;
  run(&f, &o, &r);
  ds_ps_result_release(&r);
  unload(&f);
}

/* The window (ps.c): the steps whose ops are kept together after their
 * workers have moved on, a consumer's (on_iter: a trace, handed over a
 * step at a time) and sync's updates. Sync holds two steps, whatever the
 * number of steps (a worker cannot end step i + 1 before every worker has
 * pushed it, so has ended step i); async with a consumer holds the steps
 * between its slowest and its fastest worker. ps-model, 4 workers of batch
 * 16 (compute-bound), 2 servers; async with rank 1 computing 3x slower:
 * when the fast workers end their 30th step, at 30 of their periods, the
 * straggler has ended 30 x fast / slow of its own, and every step between
 * is held. With no consumer async holds no step (the next test). */
Test(ps, the_window_is_the_steps_between_the_slowest_and_the_fastest_worker) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  struct ds_ps_result r;
  for (int32_t iters = 2; iters <= 40; iters += 19) {
    struct ds_ps_options o = opts(4, 2, DS_PS_SYNC, iters, 1);
    run(&f, &o, &r);
    cr_assert_eq(r.blocks, 2, "sync, %d steps: %zu held", iters, r.blocks);
    ds_ps_result_release(&r);
  }
  double factor[4] = {1, 3, 1, 1};
  struct ds_ps_options o = opts(4, 2, DS_PS_ASYNC, 30, 16);
  o.rank_factor = factor;
  struct timeline t;
  run_timed(&f, &o, &r, &t);
  double fast = r.worker_step_ms[0], slow = r.worker_step_ms[1];
  cr_assert_gt(slow, 2 * fast);
  double lag = 30 - 30 * fast / slow;
  cr_assert_geq((double)r.blocks, lag - 1, "%zu held, lag %.2f steps", r.blocks, lag);
  cr_assert_leq((double)r.blocks, lag + 2, "%zu held, lag %.2f steps", r.blocks, lag);
  ds_ps_result_release(&r);
  timeline_release(&t);
  unload(&f);
}

/* Async with no consumer holds no step: each worker keeps its own ops of
 * the step it is in (all of them end before it leaves the step, its pulls
 * last; an async update is its worker's), 16 bytes per op of one step
 * (start, end), whatever the lag. The straggler 3x of the test above, 30
 * and 300 steps (about 20 and 200 steps apart), under a limit of 6 steps
 * of 24 bytes per op, which before refused it (the window then held every
 * step between the workers, 24 bytes per op: start, end, jitter scale).
 * With jitter, what grows is the straggler's draws, drawn when the first
 * worker enters a step and kept until it gets there (jitter.h: one
 * generator, op order), 8 bytes per compute op of one worker and step
 * between: counted in held_bytes, and bounded by the limit (run here with
 * none; the tests after the window's bound them). */
Test(ps, an_async_run_with_no_consumer_holds_one_step_whatever_the_lag) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  struct ds_ps_result r;
  double factor[4] = {1, 3, 1, 1};
  struct ds_ps_options o = opts(4, 2, DS_PS_ASYNC, 30, 16);
  o.rank_factor = factor;
  run(&f, &o, &r);
  double one_step = 16.0 * (double)r.step->n_ops;
  size_t n_cmp = 0;
  for (size_t j = 0; j < r.step->n_ops; j++)
    n_cmp += r.step->ops[j].rank == 0 && r.step->ops[j].stream == DS_STREAM_COMPUTE;
  uint64_t limit = (uint64_t)(6 * 24 * (double)r.step->n_ops);
  ds_ps_result_release(&r);
  for (int32_t iters = 30; iters <= 300; iters *= 10) {
    o.iters = iters;
    o.jitter = 0;
    o.mem_limit = limit;
    run(&f, &o, &r);
    double lag = iters - iters * r.worker_step_ms[0] / r.worker_step_ms[1];
    cr_assert_gt(lag, iters / 2.0, "%d steps: %.1f apart", iters, lag);
    cr_assert_eq(r.held_bytes, one_step, "%d steps: %.0f bytes held, one step %.0f", iters,
                 r.held_bytes, one_step);
    cr_assert_eq(r.blocks, 0);
    ds_ps_result_release(&r);
    o.jitter = 1;
    o.jitter_cv = 0.1;
    o.seed = 3;
    o.mem_limit = 0;
    run(&f, &o, &r);
    double draws = r.held_bytes - one_step;
    cr_assert_gt(draws, 8.0 * (double)n_cmp * (lag - 2), "%d steps: %.0f bytes of draws", iters,
                 draws);
    ds_ps_result_release(&r);
  }
  unload(&f);
}

/* A consumer (on_iter: --trace, --plot, --chrome) changes no number: the
 * run keeps its ops' times per worker without one and in the window's
 * blocks with one (async), and --samples runs seed 0 with the trace and
 * the others without, so every result field must be the same either way.
 * Sync and async, 1, 2 and 4 workers, 1 and 2 servers, per-layer pushes,
 * a straggler, jitter, 2 and 9 steps; and what each run holds. */
static void same_result(const struct ds_ps_result *a, const struct ds_ps_result *b, int32_t world,
                        const char *what) {
  size_t n = a->step->n_ops;
  cr_assert_eq(b->step->n_ops, n, "%s", what);
  cr_assert_eq(memcmp(a->first_start_ns, b->first_start_ns, n * sizeof *a->first_start_ns), 0,
               "%s: first step's starts", what);
  cr_assert_eq(memcmp(a->first_end_ns, b->first_end_ns, n * sizeof *a->first_end_ns), 0,
               "%s: first step's ends", what);
  cr_assert_eq(memcmp(a->last_start_ns, b->last_start_ns, n * sizeof *a->last_start_ns), 0,
               "%s: last step's starts", what);
  cr_assert_eq(memcmp(a->last_end_ns, b->last_end_ns, n * sizeof *a->last_end_ns), 0,
               "%s: last step's ends", what);
  cr_assert_eq(a->before_last_end_ns, b->before_last_end_ns, "%s", what);
  cr_assert_eq(a->before_last_rank0_end_ns, b->before_last_rank0_end_ns, "%s", what);
  cr_assert_eq(memcmp(a->worker_step_ms, b->worker_step_ms, (size_t)world * sizeof(double)), 0,
               "%s: per-worker steps", what);
  cr_assert_float_eq(a->samples_per_s, b->samples_per_s, 0, "%s", what);
  cr_assert_float_eq(a->staleness_mean, b->staleness_mean, 0, "%s", what);
  cr_assert_eq(a->staleness_max, b->staleness_max, "%s", what);
  cr_assert_eq(a->n_updates, b->n_updates, "%s", what);
  cr_assert_eq(a->events, b->events, "%s", what);
}

Test(ps, a_consumer_changes_no_number_of_the_result) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  int n_runs = 0;
  for (int mode = 0; mode < 2; mode++)
    for (int32_t world = 1; world <= 4; world *= 2)
      for (int32_t servers = 1; servers <= 2 && servers <= world; servers++)
        for (int v = 0; v < 4; v++)
          for (int32_t iters = 2; iters <= 9; iters += 7) {
            double factor[4] = {1, 1, 1, 1};
            factor[world - 1] = 3;
            struct ds_ps_options o =
                opts(world, servers, mode ? DS_PS_ASYNC : DS_PS_SYNC, iters, 16);
            o.push = v & 1 ? DS_PS_PUSH_PER_LAYER : DS_PS_PUSH_AFTER_BACKWARD;
            o.rank_factor = factor;
            if (v & 2) {
              o.jitter = 1;
              o.jitter_cv = 0.2;
              o.seed = 5;
            }
            char what[160];
            snprintf(what, sizeof what, "%s, %d workers, %d servers, %s, %s, %d steps",
                     mode ? "async" : "sync", world, servers, v & 1 ? "per-layer" : "after",
                     v & 2 ? "jitter" : "no jitter", iters);
            struct ds_ps_result bare, traced;
            struct timeline t;
            run(&f, &o, &bare);
            run_timed(&f, &o, &traced, &t);
            same_result(&bare, &traced, world, what);
            /* what each holds: sync two steps' blocks at most; async
             * bare none, and without jitter one step's ops, 16 bytes
             * each (ps.h held_bytes) */
            if (mode) {
              cr_assert_eq(bare.blocks, 0, "%s", what);
              if (!(v & 2))
                cr_assert_eq(bare.held_bytes, 16.0 * (double)bare.step->n_ops, "%s: %.0f held",
                             what, bare.held_bytes);
            } else {
              cr_assert_leq(bare.blocks, 2, "%s", what);
              cr_assert_leq(traced.blocks, 2, "%s", what);
            }
            ds_ps_result_release(&bare);
            ds_ps_result_release(&traced);
            timeline_release(&t);
            n_runs++;
          }
  cr_assert_eq(n_runs, 2 * (1 + 2 + 2) * 4 * 2);
  unload(&f);
}

/* The window is bounded by memory too (ps.h mem_limit): with a consumer,
 * async workers drifting apart hold every step between them, which grows
 * with --iters (the straggler 3x over 30 steps of the test above holds
 * about 20); a run whose window would pass the limit is refused when it
 * does, naming the steps between the workers and the --iters that would
 * fit, where before it grew without bound. The limit lets 6 steps' ops
 * (16 bytes per op: start, end) be held, the workers' own (one step) and
 * the blocks together (what the run holds, held_bytes, is what the limit
 * bounds): sync (2 blocks) runs within it, async does not, and runs with
 * no limit. */
static ds_status discard(void *ctx, const struct ds_schedule *step, int32_t iter,
                         const int64_t *start_ns, const int64_t *end_ns, struct ds_err *err) {
  (void)ctx;
  (void)step;
  (void)iter;
  (void)start_ns;
  (void)end_ns;
  (void)err;
  return DS_OK;
}

Test(ps, an_async_window_past_the_memory_limit_is_refused) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  struct ds_ps_result r;
  struct ds_ps_options o = opts(4, 2, DS_PS_SYNC, 30, 16);
  o.on_iter = discard;
  run(&f, &o, &r);
  uint64_t limit = (uint64_t)(6 * 16 * (double)r.step->n_ops);
  ds_ps_result_release(&r);
  o.mem_limit = limit;
  run(&f, &o, &r);
  cr_assert_eq(r.blocks, 2);
  cr_assert_leq(r.held_bytes, (double)limit);
  ds_ps_result_release(&r);
  double factor[4] = {1, 3, 1, 1};
  o = opts(4, 2, DS_PS_ASYNC, 30, 16);
  o.on_iter = discard;
  o.rank_factor = factor;
  run(&f, &o, &r);
  cr_assert_gt(r.blocks, 10, "%zu held", r.blocks);
  ds_ps_result_release(&r);
  o.mem_limit = limit;
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EINPUT, "%s", err.msg);
  cr_assert(strstr(err.msg, "option --iters: the workers are ") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "steps apart") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "give --iters about ") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "or none of --trace, --plot and --chrome") != NULL, "%s", err.msg);
  cr_assert_null(r.step);
  /* the --iters it names fits (the gap grows in proportion to the steps) */
  o.iters = atoi(strstr(err.msg, "give --iters about ") + strlen("give --iters about "));
  cr_assert_gt(o.iters, 2, "%s", err.msg);
  run(&f, &o, &r);
  cr_assert_leq(r.blocks, 4);
  cr_assert_leq(r.held_bytes, (double)limit);
  ds_ps_result_release(&r);
  unload(&f);
}

/* With jitter each step's draws are drawn when the first worker enters it,
 * for every worker (one generator, op order: the test after these), and a
 * worker keeps its own until it gets there and drops them when it ends the
 * step, for a later step to reuse (ps_window.c): the run holds, at most,
 * the most steps the workers were behind together when a step was laid
 * out, 8 bytes per compute op of a worker's step and a pointer, with each
 * worker's ops of its step (16 bytes per op of one step). The straggler 3x
 * over 300 steps, async, no consumer: when the first worker enters step i
 * (at its end of step i - 1, t_i), worker w, having ended k_w steps by
 * then, holds the steps k_w .. i, all of them from the timeline of the
 * same run with a consumer (it changes no number). Ties at t_i (a worker
 * ending a step at t_i too, before or after) leave k_w within one; the
 * fastest has k = i, one step. Before, each worker's draws were a queue
 * of a power of two steps that never shrank: the straggler's 256 where it
 * was about 210 behind. */
static int64_t worker_end(const struct ds_ps_result *r, const struct timeline *t, int32_t w,
                          int32_t i) {
  int64_t end = INT64_MIN;
  for (size_t j = 0; j < t->ns; j++) {
    const struct ds_op *op = &r->step->ops[j];
    if (op->rank == w && op->kind != DS_OP_STEP && t->end[(size_t)i * t->ns + j] > end)
      end = t->end[(size_t)i * t->ns + j];
  }
  return end;
}

/* Async, rank 1 three times slower than the others, jitter CV 0.1 with
 * seed 3: a straggler whose draws lag (the two tests below). */
static const double lagging_factor[4] = {1, 3, 1, 1};
static struct ds_ps_options lagging_jitter_opts(int32_t iters) {
  struct ds_ps_options o = opts(4, 2, DS_PS_ASYNC, iters, 16);
  o.rank_factor = lagging_factor;
  o.jitter = 1;
  o.jitter_cv = 0.1;
  o.seed = 3;
  return o;
}

Test(ps, a_workers_jitter_draws_held_are_the_steps_it_is_behind) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  struct ds_ps_options o = lagging_jitter_opts(300);
  struct ds_ps_result r, timed;
  struct timeline t;
  run(&f, &o, &r);
  run_timed(&f, &o, &timed, &t);
  size_t n_cmp = 0;
  for (size_t j = 0; j < r.step->n_ops; j++)
    n_cmp += r.step->ops[j].rank == 0 && r.step->ops[j].stream == DS_STREAM_COMPUTE;
  double per_step = 8.0 * (double)n_cmp + sizeof(void *);
  double held = (r.held_bytes - 16.0 * (double)r.step->n_ops) / per_step;
  int64_t end[4][300];
  for (int32_t w = 0; w < 4; w++)
    for (int32_t i = 0; i < o.iters; i++) end[w][i] = worker_end(&r, &t, w, i);
  int64_t lo = 4, hi = 4; /* the most steps held together (step 0: one each), ties
                             counted one way or the other */
  for (int32_t i = 1; i < o.iters; i++) {
    int64_t at = INT64_MAX, before = 0, by = 0;
    for (int32_t w = 0; w < 4; w++)
      if (end[w][i - 1] < at) at = end[w][i - 1];
    for (int32_t w = 0; w < 4; w++) {
      int32_t k_before = 0, k_by = 0; /* steps it ended before t_i, by t_i */
      while (k_by < i && end[w][k_by] <= at) k_by++;
      while (k_before < i && end[w][k_before] < at) k_before++;
      before += i - k_before + 1;
      by += i - k_by + 1;
    }
    if (by > lo) lo = by;
    if (before > hi) hi = before;
  }
  cr_assert_gt(lo, 200, "the straggler about 200 steps behind: %lld held", (long long)lo);
  cr_assert_geq(held, (double)lo, "%.2f steps' draws held, at least %lld", held, (long long)lo);
  cr_assert_leq(held, (double)hi, "%.2f steps' draws held, at most %lld", held, (long long)hi);
  ds_ps_result_release(&r);
  ds_ps_result_release(&timed);
  timeline_release(&t);
  unload(&f);
}

/* What the draws hold counts toward mem_limit (ps.h), with each worker's
 * ops and a consumer's blocks: a run whose lagging workers' draws would
 * pass it is refused when they would, naming the steps between the
 * workers, the --iters that would fit (the gap grows in proportion to the
 * steps) and --jitter, where before the draws grew uncounted. The
 * straggler 3x over 300 steps, async, no consumer, under a limit halfway
 * between what 30 and 300 steps hold: refused; the --iters it names runs
 * within the limit; with no jitter 300 steps run (one step's ops); with a
 * consumer too, both are named; under half a step's ops, what one step
 * holds does not fit, --world-size is named. */
Test(ps, a_lagging_workers_jitter_draws_past_the_memory_limit_are_refused) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  struct ds_ps_options o = lagging_jitter_opts(30);
  struct ds_ps_result r;
  run(&f, &o, &r);
  double held30 = r.held_bytes;
  ds_ps_result_release(&r);
  o.iters = 300;
  run(&f, &o, &r);
  double held300 = r.held_bytes;
  ds_ps_result_release(&r);
  cr_assert_gt(held300, 5 * held30, "30 steps %.0f bytes, 300 steps %.0f", held30, held300);
  o.mem_limit = (uint64_t)((held30 + held300) / 2);
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EINPUT, "%s", err.msg);
  cr_assert(strstr(err.msg, "option --iters: the workers are ") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "steps apart") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "the jitter draws of the workers behind") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "or no --jitter (what the steps are held for)") != NULL, "%s",
            err.msg);
  cr_assert_null(strstr(err.msg, "--trace"), "%s", err.msg);
  cr_assert_null(r.step);
  /* the --iters it names fits */
  const char *give = strstr(err.msg, "give --iters about ");
  cr_assert(give != NULL, "%s", err.msg);
  o.iters = atoi(give + strlen("give --iters about "));
  cr_assert_gt(o.iters, 30, "%s", err.msg);
  cr_assert_lt(o.iters, 300, "%s", err.msg);
  run(&f, &o, &r);
  cr_assert_leq(r.held_bytes, (double)o.mem_limit, "%d steps: %.0f held", o.iters, r.held_bytes);
  ds_ps_result_release(&r);
  /* no jitter: one step's ops, whatever the lag */
  o.iters = 300;
  o.jitter = 0;
  run(&f, &o, &r);
  double one_step = 16.0 * (double)r.step->n_ops;
  cr_assert_eq(r.held_bytes, one_step);
  ds_ps_result_release(&r);
  /* what one step holds does not fit: refused before the run, naming
   * --world-size (the steps would not help) */
  o.mem_limit = (uint64_t)(one_step / 2);
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EINPUT, "%s", err.msg);
  cr_assert(strstr(err.msg, "option --world-size: one step's ops of 4 ranks (their times) ") ==
                err.msg,
            "%s", err.msg);
  o.jitter = 1;
  memset(&err, 0, sizeof err);
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EINPUT, "%s", err.msg);
  cr_assert(strstr(err.msg, "(their times, the jitter draws) ") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "give a smaller --world-size") != NULL, "%s", err.msg);
  o.mem_limit = (uint64_t)((held30 + held300) / 2);
  /* a consumer and jitter: both held, both named */
  o.on_iter = discard;
  memset(&err, 0, sizeof err);
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EINPUT, "%s", err.msg);
  cr_assert(strstr(err.msg, "the trace's rows (handed on a step at a time once every worker "
                            "has ended it) and the jitter draws") != NULL,
            "%s", err.msg);
  cr_assert(strstr(err.msg, "no --jitter, or none of --trace, --plot and --chrome (what the "
                            "steps are held for)") != NULL,
            "%s", err.msg);
  unload(&f);
}

/* A consumer's failure stops the run (ps.h on_iter): the status and its
 * message come back, no later step is handed over, and every block of the
 * window (the live steps and the spare ones, async workers steps apart)
 * is freed with the result (the ASAN build checks the leaks). */
struct failing {
  int32_t at, calls;
};

static ds_status fail_at(void *ctx, const struct ds_schedule *step, int32_t iter,
                         const int64_t *start_ns, const int64_t *end_ns, struct ds_err *err) {
  struct failing *f = ctx;
  (void)step;
  (void)start_ns;
  (void)end_ns;
  f->calls++;
  if (iter == f->at) return ds_err_set(err, DS_EIO, "t.csv: write failed at step %d", iter);
  return DS_OK;
}

Test(ps, a_consumer_failing_mid_run_stops_it_with_its_message) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  double factor[4] = {1, 3, 1, 1};
  struct ds_ps_options o = opts(4, 2, DS_PS_ASYNC, 30, 16);
  o.rank_factor = factor;
  struct failing fl = {.at = 4};
  o.on_iter = fail_at;
  o.on_iter_ctx = &fl;
  struct ds_ps_result r;
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EIO, "%s", err.msg);
  cr_assert_str_eq(err.msg, "t.csv: write failed at step 4");
  cr_assert_eq(fl.calls, 5);
  cr_assert_null(r.step);
  cr_assert_null(r.first_start_ns);
  unload(&f);
}

/* Each step's jitter is drawn when the first worker enters it, steps in
 * order: op i of the run gets the draw ds_jitter_fill gives op i of every
 * step's ops laid end to end (what the run drew when it laid them all out
 * first), though the workers are steps apart (async, a straggler). Each
 * compute op lasts its dur_us x that draw x its rank's factor, rounded
 * once. */
Test(ps, jitter_draws_are_the_whole_runs_in_op_order) {
  struct fixture f;
  load(&f, "tests/data/ps-model.yaml");
  double factor[4] = {1, 2.5, 1, 1};
  struct ds_ps_options o = opts(4, 2, DS_PS_ASYNC, 12, 2);
  o.rank_factor = factor;
  o.jitter = 1;
  o.jitter_cv = 0.2;
  o.seed = 11;
  struct ds_ps_result r;
  struct timeline t;
  run_timed(&f, &o, &r, &t);
  cr_assert_gt(r.blocks, 3, "the workers are %zu steps apart", r.blocks);
  struct ds_op *ops = malloc(t.n_ops * sizeof *ops);
  double *scale = malloc(t.n_ops * sizeof *scale);
  cr_assert(ops && scale);
  for (size_t i = 0; i < t.n_ops; i++) ops[i] = r.step->ops[i % t.ns];
  struct ds_schedule whole = {.world_size = 4, .ops = ops, .n_ops = t.n_ops};
  cr_assert_eq(ds_jitter_fill(&whole, o.jitter_cv, o.seed, scale), DS_OK);
  size_t n_compute = 0;
  for (size_t i = 0; i < t.n_ops; i++) {
    if (ops[i].stream != DS_STREAM_COMPUTE) continue;
    double sc = scale[i];
    sc *= factor[ops[i].rank];
    cr_assert_eq(t.end[i] - t.start[i], ds_units_round_ns(ops[i].dur_us * 1000.0 * sc),
                 "op %zu (step %zu)", i, i / t.ns);
    n_compute++;
  }
  cr_assert_gt(n_compute, 12 * 4 * 3);
  free(ops);
  free(scale);
  ds_ps_result_release(&r);
  timeline_release(&t);
  unload(&f);
}
