/*
 * --straggler in the --schedule file: a replay (ddpreal) runs each op for
 * its dur_us, so the file must carry the straggler's slowdown on exactly
 * the ops the simulation slowed (sim/train/jitter.h ds_straggler_op_factor:
 * the straggler's compute-stream ops) and nothing on the others (host ops,
 * collectives, pushes and pulls). Worked by hand on the tiny model (forward
 * 100, 200, 100 us on TestGPU, host launches 20 us on tiny-topo) and
 * checked op by op against the same run without the straggler, under ddp,
 * dp and ps. The binary under test is $DDPSIM_BIN, else build/asan/ddpsim.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/support.h"
#include "traces/trace.h"

/* ddpsim `args --schedule DIR/NAME`, read back. */
static struct ds_schedule *schedule_of(const char *dir, const char *name, const char *args) {
  char path[256], cmd[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(cmd, sizeof cmd, "%s --schedule %s", args, path);
  struct ds_test_result r = ds_test_cli_ok(cmd);
  ds_test_release(&r);
  struct ds_schedule *s = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_read_csv(path, &s, &err), DS_OK, "%s: %s", path, err.msg);
  return s;
}

/* The first op of rank `rank` on stream `stream` named `name`. */
static const struct ds_op *find_op(const struct ds_schedule *s, int32_t rank,
                                   enum ds_stream stream, const char *name) {
  for (size_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].rank == rank && s->ops[i].stream == stream &&
        strcmp(s->ops[i].name, name) == 0)
      return &s->ops[i];
  cr_assert_fail("no op %s of rank %d on stream %d", name, rank, (int)stream);
  return NULL;
}

/* healthy and slow are one configuration's schedules without and with
 * --straggler STRAGGLER:factor: the same ops, in the same order, the
 * straggler's compute ops factor times as long, every other op the same.
 * Counts the ops of each sort seen into *n_scaled and *n_same_other_stream
 * (ops not on the compute stream, any rank). */
static void expect_scaled(const struct ds_schedule *healthy, const struct ds_schedule *slow,
                          int32_t straggler, double factor, int *n_scaled,
                          int *n_same_other_stream) {
  cr_assert_eq(slow->n_ops, healthy->n_ops);
  *n_scaled = *n_same_other_stream = 0;
  for (size_t i = 0; i < slow->n_ops; i++) {
    const struct ds_op *h = &healthy->ops[i], *o = &slow->ops[i];
    cr_assert(o->id == h->id && o->rank == h->rank && o->stream == h->stream &&
                  o->kind == h->kind && strcmp(o->name, h->name) == 0,
              "op %zu differs beyond its duration", i);
    if (o->rank == straggler && o->stream == DS_STREAM_COMPUTE) {
      cr_assert(fabs(o->dur_us - factor * h->dur_us) <= 1e-12 * factor * h->dur_us,
                "op %zu (%s, rank %d): %.17g us, expected %g x %.17g", i, o->name, o->rank,
                o->dur_us, factor, h->dur_us);
      if (h->dur_us > 0) (*n_scaled)++;
    } else {
      cr_assert_eq(o->dur_us, h->dur_us,
                   "op %zu (%s, rank %d, stream %d): %.17g us, expected %.17g", i, o->name,
                   o->rank, (int)o->stream, o->dur_us, h->dur_us);
      if (o->stream != DS_STREAM_COMPUTE) (*n_same_other_stream)++;
    }
  }
}

#define TINY2 "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml --world-size 2 "

Test(straggler_schedule, ddp_writes_the_stragglers_compute_ops_slowed_by_hand) {
  char dir[] = "/tmp/ddpsim-straggler-XXXXXX";
  ds_test_make_dir(dir);
  struct ds_schedule *slow = schedule_of(dir, "slow.csv", TINY2 "--straggler 1:3");
  /* by hand: l0's forward is 1e9 FLOPs at 10 TFLOPS, 100 us, on rank 0 and
   * 3 x 100 on rank 1; l1's 200 and 600; the host's launch of l0's kernel
   * is 20 us (tiny-topo's host_launch) on both ranks, as host time is no
   * GPU's; the all-reduce of bucket 0 is the same collective on both */
  cr_assert_eq(find_op(slow, 0, DS_STREAM_COMPUTE, "l0")->dur_us, 100);
  cr_assert_eq(find_op(slow, 1, DS_STREAM_COMPUTE, "l0")->dur_us, 300);
  cr_assert_eq(find_op(slow, 0, DS_STREAM_COMPUTE, "l1")->dur_us, 200);
  cr_assert_eq(find_op(slow, 1, DS_STREAM_COMPUTE, "l1")->dur_us, 600);
  cr_assert_eq(find_op(slow, 0, DS_STREAM_HOST, "launch")->dur_us, 20);
  cr_assert_eq(find_op(slow, 1, DS_STREAM_HOST, "launch")->dur_us, 20);
  double ar0 = find_op(slow, 0, DS_STREAM_COMM, "bucket0")->dur_us;
  cr_assert(ar0 > 0);
  cr_assert_eq(find_op(slow, 1, DS_STREAM_COMM, "bucket0")->dur_us, ar0);

  struct ds_schedule *healthy = schedule_of(dir, "healthy.csv", TINY2);
  int n_scaled, n_other;
  expect_scaled(healthy, slow, 1, 3, &n_scaled, &n_other);
  /* 3 forwards, the loss, 3 backwards, 3 copies into buckets, 2 out, the
   * step; 3 launches and 2 all-reduces per rank */
  cr_assert_eq(n_scaled, 13);
  cr_assert_eq(n_other, 2 * 5);
  ds_schedule_free(healthy);
  ds_schedule_free(slow);
  ds_test_remove_dir(dir);
}

Test(straggler_schedule, dp_and_ps_write_the_stragglers_compute_ops_slowed) {
  char dir[] = "/tmp/ddpsim-straggler-XXXXXX";
  ds_test_make_dir(dir);
  static const char *const runs[][2] = {
      {TINY2 "--strategy dp", "1:2.5"},
      {"--topo tests/data/tiny-topo.yaml --model tests/data/ps-model.yaml --world-size 2 "
       "--strategy ps",
       "1:2.5"},
  };
  for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
    char slow_args[512];
    snprintf(slow_args, sizeof slow_args, "%s --straggler %s", runs[k][0], runs[k][1]);
    struct ds_schedule *healthy = schedule_of(dir, "healthy.csv", runs[k][0]);
    struct ds_schedule *slow = schedule_of(dir, "slow.csv", slow_args);
    int n_scaled, n_other;
    expect_scaled(healthy, slow, 1, 2.5, &n_scaled, &n_other);
    cr_assert(n_scaled > 0, "%s: no op of rank 1 slowed", slow_args);
    cr_assert(n_other > 0, "%s: no op off the compute stream", slow_args);
    ds_schedule_free(healthy);
    ds_schedule_free(slow);
  }
  ds_test_remove_dir(dir);
}
