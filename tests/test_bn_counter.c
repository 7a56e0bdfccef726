/*
 * BatchNorm's batch counter (norm.h ds_batch_norm_counter_ns): in training,
 * _BatchNorm.forward runs num_batches_tracked.add_(1) before F.batch_norm,
 * one kernel on a 0-dim int64 tensor (reads and writes 8 B), charged as
 * every small elementwise kernel, its bytes at the memory roofline plus
 * kernel_overhead; its host dispatch is one of the layer's host_dispatches
 * already (3 for a BatchNorm2d in training: add_, empty, native_batch_norm),
 * so the host is charged nothing more.
 *
 * Worked by hand on a made-up GPU whose memory moves 1 GB/s (so the
 * counter's 16 B take 16 ns and do not round away), kernel_overhead 3 us,
 * and a model of two BatchNorms (bn_a, bn_b: 2 channels of 500 elements,
 * host counts 2 ops, 3 dispatches, 3 nodes each). Each counter: 3000 + 16
 * = 3016 ns. The baseline is the same file with the counters' buffers
 * renamed so that they name no layer: the same buffers (DDP broadcasts the
 * same bytes), no counter.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "sim/train/norm.h"
#include "tests/support.h"

#define COUNTER_NS (3000.0 + 16.0) /* kernel_overhead + 16 B at 1 GB/s */

static const char *gpus_text =
    "schema_version: 1\ngpus:\n"
    "  - {name: SlowMemGPU, sms: 10, fp32: 10TFLOPS, fp16: 20TFLOPS, mem: 16GB,\n"
    "     mem_bw: 1GBps, source: \"tests only\"}\n";

/* host_dispatch and host_node both `host` */
static void write_topo(const char *path, const char *host) {
  FILE *fp = fopen(path, "w");
  cr_assert(fp, "%s", path);
  cr_assert_geq(fprintf(fp,
                        "schema_version: 1\nname: bn-toy\ngpu: SlowMemGPU\nnodes: 1\n"
                        "gpus_per_node: 4\nintra_node:\n  template: nvswitch\n"
                        "  link_bw: 10GBps\n  link_lat: 1us\ncompute:\n"
                        "  flops_efficiency: 1\n  mem_efficiency: 1\n  kernel_overhead: 3us\n"
                        "  fp32_math: fp32\n  host_dispatch: %s\n  host_node: %s\n"
                        "  host_backward: 0us\n  host_grad_hook: 0us\n  host_grad_copy: 0us\n"
                        "  host_collective: 0us\n  host_buffer: 0us\n"
                        "  host_step_call: 0us\n  host_step_param: 0us\n"
                        "  host_step_param_adam: 0us\n",
                        host, host),
                0);
  cr_assert_eq(fclose(fp), 0);
}

/* One BatchNorm layer NAME (c: 'a' or 'b') and its buffers, the
 * num_batches_tracked one named OWNER_c. */
#define BN_LAYER(c)                                                                        \
  "  - {name: bn_" c ", class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 8000,"        \
  " act_bytes: 4000, host_ops: 2, host_dispatches: 3, host_nodes: 3, host_amp_casts: 0,"    \
  " host_amp_nodes: 0, params: [{name: bn_" c ".weight, numel: 2},"                         \
  " {name: bn_" c ".bias, numel: 2}]}\n"
#define BN_BUFFERS(owner, c)                                                               \
  "  - {name: bn_" c ".running_mean, numel: 2, bytes: 8, dtype: float32}\n"                 \
  "  - {name: bn_" c ".running_var, numel: 2, bytes: 8, dtype: float32}\n"                  \
  "  - {name: " owner "_" c ".num_batches_tracked, numel: 1, bytes: 8, dtype: int64}\n"
#define TWO_BN(owner)                                                                      \
  "schema_version: 1\nname: two-bn\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n" \
  BN_LAYER("a") BN_LAYER("b") "buffers:\n" BN_BUFFERS(owner, "a") BN_BUFFERS(owner, "b")

/* The two-BatchNorm model: its counters' buffers owned by the layers
 * (counted), or by "xx_a", "xx_b", which name none (the baseline). */
static const char *counted_text = TWO_BN("bn");
static const char *uncounted_text = TWO_BN("xx");

struct toy {
  char dir[64], gpu_topo[128], host_topo[128], counted[128], uncounted[128];
};

static void toy_setup(struct toy *t) {
  char path[160];
  snprintf(t->dir, sizeof t->dir, "/tmp/ddpsim-bncounter-XXXXXX");
  cr_assert(mkdtemp(t->dir));
  snprintf(path, sizeof path, "%s/gpus.yaml", t->dir);
  FILE *fp = fopen(path, "w");
  cr_assert(fp);
  cr_assert_geq(fputs(gpus_text, fp), 0);
  cr_assert_eq(fclose(fp), 0);
  snprintf(t->gpu_topo, sizeof t->gpu_topo, "%s/gpu.yaml", t->dir);
  snprintf(t->host_topo, sizeof t->host_topo, "%s/host.yaml", t->dir);
  write_topo(t->gpu_topo, "1us");
  write_topo(t->host_topo, "1000us");
  const char *texts[2] = {counted_text, uncounted_text};
  char *paths[2] = {t->counted, t->uncounted};
  for (int i = 0; i < 2; i++) {
    snprintf(paths[i], sizeof t->counted, "%s/%s.yaml", t->dir, i ? "uncounted" : "counted");
    fp = fopen(paths[i], "w");
    cr_assert(fp);
    cr_assert_geq(fputs(texts[i], fp), 0);
    cr_assert_eq(fclose(fp), 0);
  }
}

static void toy_free(struct toy *t) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", t->dir);
  cr_assert_eq(system(cmd), 0);
}

/* iter_ms, gpu_busy_ms and fwd_ms (in us) of one run */
struct times {
  double iter_us, busy_us, fwd_us;
};

static struct times run(const char *topo, const char *model, const char *strategy) {
  char args[512];
  snprintf(args, sizeof args, "--topo %s --model %s --strategy %s --format csv", topo, model,
           strategy);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  struct times t = {ds_test_csv_num(r.out, "iter_ms", 0) * 1e3,
                    ds_test_csv_num(r.out, "gpu_busy_ms", 0) * 1e3,
                    ds_test_csv_num(r.out, "fwd_ms", 0) * 1e3};
  ds_test_release(&r);
  return t;
}

static const char *strategies[] = {"single", "ddp --world-size 2", "dp --world-size 2",
                                   "ps --world-size 2 --ps-servers 1"};

Test(bn_counter, only_a_batch_norm_with_the_buffer_has_one) {
  /* bn_a and bn_b have running statistics and the counter; in the
   * baseline the counters' buffers name no layer; a layer with the counter
   * buffer but no running_mean is no BatchNorm (nothing charged) */
  struct ds_test_compute f;
  ds_test_compute_setup(&f, gpus_text, "SlowMemGPU", 1, 3, counted_text, DS_DTYPE_FP32,
                        DS_AMP_NONE);
  double bytes;
  for (int l = 0; l < 2; l++) {
    cr_assert_eq(f.m->layers[l].bn_tracks_batches, 1);
    cr_assert_float_eq(ds_batch_norm_counter_ns(&f.c, &f.m->layers[l], &bytes), COUNTER_NS,
                       1e-9);
    cr_assert_float_eq(bytes, 16, 0, "one int64 read and written");
  }
  /* a counter without running statistics is no BatchNorm's */
  struct ds_layer no_stats = f.m->layers[0];
  no_stats.bn_channels = 0;
  cr_assert_float_eq(ds_batch_norm_counter_ns(&f.c, &no_stats, &bytes), 0, 0);
  cr_assert_float_eq(bytes, 0, 0);
  ds_test_compute_free(&f);
  ds_test_compute_setup(&f, gpus_text, "SlowMemGPU", 1, 3, uncounted_text, DS_DTYPE_FP32,
                        DS_AMP_NONE);
  for (int l = 0; l < 2; l++) {
    cr_assert_eq(f.m->layers[l].bn_channels, 2);
    cr_assert_eq(f.m->layers[l].bn_tracks_batches, 0, "xx_%c names no layer", 'a' + l);
    cr_assert_float_eq(ds_batch_norm_counter_ns(&f.c, &f.m->layers[l], &bytes), 0, 0);
  }
  ds_test_compute_free(&f);
}

Test(bn_counter, gpu_bound_iteration_grows_by_two_counters) {
  /* host_dispatch and host_node 1 us: the host runs ahead of the 11-15 us
   * kernels, so every strategy's iteration, forward and GPU busy time grow
   * by exactly the two counters, 2 x 3016 ns (in ps, a worker's forward op
   * of each BatchNorm holds its counter) */
  struct toy t;
  toy_setup(&t);
  for (size_t i = 0; i < sizeof strategies / sizeof *strategies; i++) {
    struct times with = run(t.gpu_topo, t.counted, strategies[i]);
    struct times without = run(t.gpu_topo, t.uncounted, strategies[i]);
    cr_assert_float_eq(with.iter_us - without.iter_us, 2 * COUNTER_NS / 1e3, 1e-6, "%s",
                       strategies[i]);
    cr_assert_float_eq(with.fwd_us - without.fwd_us, 2 * COUNTER_NS / 1e3, 1e-6, "%s",
                       strategies[i]);
    cr_assert_float_eq(with.busy_us - without.busy_us, 2 * COUNTER_NS / 1e3, 1e-6, "%s",
                       strategies[i]);
  }
  toy_free(&t);
}

Test(bn_counter, host_bound_iteration_is_the_hosts_sum_with_the_dispatch_in_it) {
  /* host_dispatch D = host_node N = 1000 us: single's iteration is the
   * host's sum, 2 x 3 D (the forward's dispatches, each BatchNorm's add_
   * among its 3) + 2 x 3 N, then bn_a's backward kernel (3 us + 12,032 B at
   * 1 GB/s: x, dy, dx and the 4 weights read and their gradients written)
   * and the step (SGD's 3 launches, 3 x 3 us + 8 parameters x 4 B x 8
   * passes at 1 GB/s): 12,000 + 15.032 + 9.256 us, with or without the
   * counters, whose 6.032 us of GPU time hide under the host. Every
   * strategy: the same iteration, 6.032 us more GPU time. */
  struct toy t;
  toy_setup(&t);
  struct times with = run(t.host_topo, t.counted, "single");
  cr_assert_float_eq(with.iter_us, 6 * 1000 + 6 * 1000 + 15.032 + 9.256, 1e-6);
  for (size_t i = 0; i < sizeof strategies / sizeof *strategies; i++) {
    with = run(t.host_topo, t.counted, strategies[i]);
    struct times without = run(t.host_topo, t.uncounted, strategies[i]);
    cr_assert_float_eq(with.iter_us, without.iter_us, 1e-6, "%s", strategies[i]);
    cr_assert_float_eq(with.busy_us - without.busy_us, 2 * COUNTER_NS / 1e3, 1e-6, "%s",
                       strategies[i]);
  }
  toy_free(&t);
}

Test(bn_counter, the_schedule_runs_each_counter_before_its_batch_norm) {
  /* ddp and dp: an op "NAME.num_batches_tracked" of kind fwd on the
   * compute stream, 16 B, 3.016 us, right before NAME's forward kernel,
   * after the layer's launch; ps folds it into the layer's op (its program
   * counts one op per entry); ddpreal replays the ddp schedule */
  struct toy t;
  toy_setup(&t);
  const char *with_op[] = {"single", "ddp --world-size 2", "dp --world-size 2"};
  for (size_t i = 0; i < sizeof with_op / sizeof *with_op; i++) {
    char args[512], sched[160];
    snprintf(sched, sizeof sched, "%s/s.csv", t.dir);
    snprintf(args, sizeof args, "--topo %s --model %s --strategy %s --schedule %s", t.gpu_topo,
             t.counted, with_op[i], sched);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    ds_test_release(&r);
    char *text = ds_test_slurp(sched);
    for (char c = 'a'; c <= 'b'; c++) {
      char counter[64], kernel[64];
      snprintf(counter, sizeof counter, ",0,compute,fwd,bn_%c.num_batches_tracked,", c);
      snprintf(kernel, sizeof kernel, ",0,compute,fwd,bn_%c,", c);
      const char *at = strstr(text, counter), *k = strstr(text, kernel);
      cr_assert(at && k, "%s: %s", with_op[i], text);
      /* the next rank-0 row is the layer's kernel */
      const char *next = strchr(at, '\n');
      cr_assert(next && strncmp(strchr(next + 1, ','), kernel, strlen(kernel)) == 0, "%s: %s",
                with_op[i], at);
      /* bytes, flops, dur_us */
      cr_assert(strstr(at, ",16,0,3.016,") && strstr(at, ",16,0,3.016,") < next, "%s: %.120s",
                with_op[i], at);
    }
    free(text);
    if (strncmp(with_op[i], "ddp", 3) != 0) continue;
    /* ddpreal replays the same schedule, the counters among its compute
     * ops (a compute op without FLOPs spins its dur_us): no new kind */
    ds_test_replay_cpu2(t.dir);
    char measured[160];
    snprintf(measured, sizeof measured, "%s/m.csv", t.dir);
    text = ds_test_slurp(measured);
    cr_assert(strstr(text, ",compute,fwd,bn_b.num_batches_tracked,"), "%s", text);
    free(text);
  }
  toy_free(&t);
}
