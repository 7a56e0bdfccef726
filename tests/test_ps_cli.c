/*
 * The parameter server through the command, ddpsim --strategy ps
 * (sim/train/ps*.c): the sync row is the period worked by hand on tiny-topo
 * (tests/ps_fixture.h describes it; tests/ps_hand.h), per-layer pushes, async's
 * staleness and rank 0's lines over its own step, bad values, the trace
 * and schedule files read back, stragglers (also under ddp, and per world
 * size in a sweep), determinism,
 * per-layer pushes and one worker against single, the trace written as
 * the run goes, and the work bound (the bound on one step's worker-server
 * pairs: test_ps_window.c). The binary under test is
 * $DDPSIM_BIN (the sanitizer build in `make test`), else build/asan/ddpsim.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"
#include "traces/trace.h"
#include "tests/ps_hand.h"

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/ps-model.yaml "

/* The number after "key": in the k-th JSON object of out. */
static double json_num(const char *out, int k, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = out;
  for (int i = 0; i <= k; i++) {
    p = strstr(p, pat);
    cr_assert(p != NULL, "no %s #%d in %s", key, k, out);
    p += strlen(pat);
  }
  return strtod(p, NULL);
}

Test(ps_cli, sync_row_is_the_hand_period) {
  /* As two_servers_...: one server, ps-model, batch 1, 4 workers. */
  struct ds_test_result r = ds_test_cli(TINY "--strategy ps --format json");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  double S = 2 * 1048576.0 * 4;
  double T = sync_period_ns(LAUNCH_NS + 600e3 + LOSS_NS(1), S, 4);
  cr_assert_float_eq(json_num(r.out, 0, "iter_ms"), T / 1e6, 2e-6, "%s", r.out);
  cr_assert_float_eq(json_num(r.out, 0, "samples_per_s"), 4 / (T / 1e9), 0.01);
  cr_assert_float_eq(json_num(r.out, 0, "staleness_max"), 0, 0);
  cr_assert(strstr(r.out, "\"ddp_options\": \"mode=sync;servers=1\""), "%s", r.out);
  /* Memory: GPU 0 (the server) adds its shard (the whole model here):
   * master copy, momentum and the 4 workers' pushed gradients, 6 x 8 MiB. */
  double gpu0 = json_num(r.out, 0, "peak_mem_gib_gpu0");
  double other = json_num(r.out, 0, "peak_mem_gib_other");
  cr_assert_float_eq((gpu0 - other) * 1024, 48, 1e-3, "gpu0 %g other %g", gpu0, other);
  /* No NCCL kernel runs (pushes and pulls are flows and local copies), so
   * nothing slows rank 0's kernels: interference_ms is 0, as the hand
   * period above, which charges every kernel its time alone, says. */
  cr_assert_float_eq(json_num(r.out, 0, "interference_ms"), 0, 0, "%s", r.out);
  ds_test_release(&r);
}

Test(ps_cli, per_layer_push_row) {
  /* As per_layer_push_hides_the_rest_of_backward: T - 200 us. The
   * summary's communication is rank 0's (analysis/metrics.c), and worker
   * 0 only copies to and from its own GPU's server: GPU work, no
   * communication (the remote workers' pushes are not rank 0's). */
  struct ds_test_result r = ds_test_cli(TINY
                                        "--strategy ps --ps-push per-layer --iters 3 "
                                        "--format json");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  double S = 2 * 1048576.0 * 4;
  double T = sync_period_ns(LAUNCH_NS + 600e3 + LOSS_NS(1), S, 4) - 200e3;
  cr_assert_float_eq(json_num(r.out, 0, "iter_ms"), T / 1e6, 5e-6, "%s", r.out);
  cr_assert_float_eq(json_num(r.out, 0, "comm_ms"), 0, 0, "%s", r.out);
  cr_assert_float_eq(json_num(r.out, 0, "exposed_comm_ms"), 0, 0);
  cr_assert_float_eq(json_num(r.out, 0, "overlap_pct"), 0, 0);
  cr_assert(strstr(r.out, "\"ddp_options\": \"mode=sync;servers=1;push=per-layer\""), "%s",
            r.out);
  ds_test_release(&r);
}

Test(ps_cli, async_text_reports_staleness_and_per_worker_steps) {
  struct ds_test_result r =
      ds_test_cli(TINY "--strategy ps --ps-mode async --ps-servers 2 --iters 6 --straggler 3:2");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *want[] = {"ps (parameter server, async): 4 workers", "2 servers",
                        "mode=async;servers=2;straggler=3:2", "  staleness ",
                        "    per worker ", "(rank 0's pushes and pulls to other GPUs' servers)",
                        "    interference      0.000 ms  (pushes and pulls are no NCCL kernels"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_assert(strstr(r.out, want[i]), "missing \"%s\" in:\n%s", want[i], r.out);
  ds_test_release(&r);
}

/* The number after `label` at the start of a line of the text report, or
 * 0 when no line starts so (the waiting line, printed only when > 0). */
static double text_num(const char *out, const char *label) {
  char pat[64];
  snprintf(pat, sizeof pat, "\n%s", label);
  const char *p = strstr(out, pat);
  return p ? strtod(p + strlen(pat), NULL) : 0;
}

Test(ps_cli, async_rank0s_lines_add_up_to_its_own_step) {
  /* As an_async_rank0s_lines_are_its_own_step_by_hand (test_ps_step.c), through
   * the command: the straggler sets the iteration (about twice rank 0's
   * step); rank 0's lines are measured over its own step, which the GPU
   * busy line names, and GPU busy, host exposed and waiting add up to it
   * (to the printed 3 decimals); the JSON row names it rank0_window_ms,
   * worker 0's step. Sync keeps the iteration's window and has no
   * rank0_window_ms. */
  const char *run = TINY "--strategy ps --ps-mode async --straggler 3:2 --iters 10 --batch 16 ";
  char args[256];
  struct ds_test_result r = ds_test_cli(run);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *line = strstr(r.out, "\n  GPU busy ");
  cr_assert(line, "%s", r.out);
  const char *own = strstr(line, "% of its own step, ");
  cr_assert(own && own < strchr(line + 1, '\n'), "%s", r.out);
  double window = strtod(own + strlen("% of its own step, "), NULL);
  double busy = text_num(r.out, "  GPU busy ");
  double host = text_num(r.out, "    host exposed ");
  double waiting = text_num(r.out, "    waiting ");
  cr_assert_float_eq(busy + host + waiting, window, 1.5e-3, "%.3f + %.3f + %.3f vs %.3f", busy,
                     host, waiting, window);
  cr_assert_gt(busy, 0.99 * window, "rank 0 computes its step: %.3f of %.3f", busy, window);
  cr_assert_gt(text_num(r.out, "  iteration "), 2 * window, "%s", r.out);
  ds_test_release(&r);
  snprintf(args, sizeof args, "%s--format json", run);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert_float_eq(json_num(r.out, 0, "rank0_window_ms"), window, 0.5e-3);
  cr_assert_float_eq(json_num(r.out, 0, "rank0_window_ms"),
                     json_num(r.out, 0, "worker_step_min_ms"), 1e-5, "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli(TINY "--strategy ps --straggler 3:2 --iters 10 --batch 16 --format json");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(!strstr(r.out, "rank0_window_ms"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli(TINY "--strategy ps --straggler 3:2 --iters 10 --batch 16");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "% of the iteration)"), "%s", r.out);
  ds_test_release(&r);
}

Test(ps_cli, bad_values_exit_2_naming_the_flag) {
  const char *bad[][2] = {
      {"--strategy ps --ps-servers 0", "--ps-servers"},
      {"--strategy ps --ps-servers 5", "--ps-servers"},
      {"--strategy ps --ps-servers two", "--ps-servers"},
      {"--strategy ps --ps-mode fast", "--ps-mode"},
      {"--strategy ps --ps-push early", "--ps-push"},
      {"--strategy ps --straggler 3", "--straggler"},
      {"--strategy ps --straggler x:2", "--straggler"},
      {"--strategy ps --straggler 3:0", "--straggler"},
      {"--strategy ps --straggler 3:-1", "--straggler"},
      {"--strategy ps --straggler 3:nan", "--straggler"},
      {"--strategy ps --straggler 1:2,1:3", "--straggler"},
      {"--strategy ps --straggler 4:2", "--straggler"},
      {"--strategy ddp --straggler 9:2", "--straggler"},
      {"--strategy ps --amp fp16", "option --amp fp16: not built for --strategy ps"},
      {"--strategy single,ps --amp fp16", "use --amp bf16, which needs no GradScaler"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char args[256];
    snprintf(args, sizeof args, TINY "%s", bad[i][0]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 2, "%s: status %d, stderr %s", bad[i][0], r.status, r.err);
    cr_assert(strstr(r.err, bad[i][1]), "%s: stderr %s", bad[i][0], r.err);
    ds_test_release(&r);
  }
}

Test(ps_cli, trace_and_schedule_files_read_back) {
  char dir[] = "/tmp/ddpsim-ps-XXXXXX", args[512], tr[128], sc[128];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(tr, sizeof tr, "%s/t.csv", dir);
  snprintf(sc, sizeof sc, "%s/s.csv", dir);
  snprintf(args, sizeof args,
           TINY "--strategy ps --ps-mode async --iters 3 --trace %s --schedule %s", tr, sc);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  struct ds_schedule *s = NULL;
  struct ds_trace *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_read_csv(sc, &s, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_trace_read_csv(tr, &t, &err), DS_OK, "%s", err.msg);
  /* One step: per worker 2 forward launches (tiny-topo has no backward
   * host time: no backward launch) + 2 fwd + loss + 2 bwd + 1 push + 1
   * pull; async: 4 updates (one per push). The trace: 3 steps of it. */
  cr_assert_eq(s->n_ops, 4 * 9 + 4);
  cr_assert_eq(t->n_rows, 3 * s->n_ops);
  size_t push = 0, pull = 0;
  for (size_t i = 0; i < t->n_rows; i++) {
    const struct ds_op *op = &t->rows[i].sched->ops[t->rows[i].op];
    push += op->kind == DS_OP_PUSH;
    pull += op->kind == DS_OP_PULL;
    cr_assert_geq(t->rows[i].end_ns, t->rows[i].start_ns);
  }
  cr_assert_eq(push, 12);
  cr_assert_eq(pull, 12);
  ds_schedule_free(s);
  ds_trace_free(t);
  unlink(tr);
  unlink(sc);
  rmdir(dir);
  ds_test_release(&r);
}

Test(ps_cli, straggler_stretches_ddp_compute_too) {
  /* DDP on the same machine with rank 1 twice as slow: every compute op
   * of rank 1 lasts 2 x its dur_us in the trace, rank 0's 1 x. */
  char dir[] = "/tmp/ddpsim-ps-XXXXXX", args[512], tr[128];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(tr, sizeof tr, "%s/t.csv", dir);
  snprintf(args, sizeof args, TINY "--strategy ddp --straggler 1:2 --trace %s", tr);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  struct ds_trace *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_read_csv(tr, &t, &err), DS_OK, "%s", err.msg);
  int seen = 0;
  for (size_t i = 0; i < t->n_rows; i++) {
    const struct ds_op *op = &t->rows[i].sched->ops[t->rows[i].op];
    if (op->stream != DS_STREAM_COMPUTE || op->rank > 1) continue;
    double want = op->dur_us * 1000 * (op->rank == 1 ? 2 : 1);
    cr_assert_float_eq((double)(t->rows[i].end_ns - t->rows[i].start_ns), want, 1,
                       "rank %d %s", op->rank, op->name);
    seen++;
  }
  cr_assert_gt(seen, 0);
  ds_trace_free(t);
  unlink(tr);
  rmdir(dir);
  ds_test_release(&r);
}

Test(ps_cli, same_command_same_output) {
  const char *args = TINY "--strategy ps --ps-mode async --iters 8 --straggler 2:1.7 "
                          "--jitter 0.1 --samples 3 --format csv";
  struct ds_test_result a = ds_test_cli(args), b = ds_test_cli(args);
  cr_assert_eq(a.status, 0, "stderr: %s", a.err);
  cr_assert_str_eq(a.out, b.out);
  ds_test_release(&a);
  ds_test_release(&b);
}

Test(ps_cli, resnet50_straggler_sync_follows_it_async_keeps_the_others) {
  /* ResNet-50 on 4gpu (4 x A100, NVLink pairs), batch 32, one server on
   * GPU 0, rank 3 at 2x. C = forward + backward of a healthy worker. */
  const char *base = "--topo 4gpu --strategy ps --iters 20 --format json ";
  char args[256];
  double sps[2][2], step_max[2][2], iter[2][2], C = 0;
  for (int a = 0; a < 2; a++)
    for (int k = 0; k < 2; k++) {
      snprintf(args, sizeof args, "%s--ps-mode %s %s", base, a ? "async" : "sync",
               k ? "--straggler 3:2" : "");
      struct ds_test_result r = ds_test_cli(args);
      cr_assert_eq(r.status, 0, "stderr: %s", r.err);
      sps[a][k] = json_num(r.out, 0, "samples_per_s");
      step_max[a][k] = json_num(r.out, 0, "worker_step_max_ms");
      iter[a][k] = json_num(r.out, 0, "iter_ms");
      C = json_num(r.out, 0, "fwd_ms") + json_num(r.out, 0, "bwd_ms");
      ds_test_release(&r);
    }
  /* Sync: the straggler computes 2C before its push, so the period is at
   * least 2C, and every worker runs at that pace: throughput drops to at
   * most T/(2C) of the healthy run's (about half). */
  cr_assert_geq(iter[0][1], 2 * C);
  cr_assert_leq(sps[0][1] / sps[0][0], iter[0][0] / (2 * C) + 1e-9,
                "sync keeps %.3f", sps[0][1] / sps[0][0]);
  /* Async: the straggler alone slows (its step is the slowest, between
   * 1.5x and 2x a healthy one); the other three keep their samples/s
   * within 3 %: total minus the straggler's own rate (32 samples per its
   * step) against 3/4 of the healthy total. */
  double straggler = 32 / (step_max[1][1] / 1e3);
  double others = sps[1][1] - straggler, healthy = 0.75 * sps[1][0];
  cr_assert(others / healthy > 0.97 && others / healthy < 1.03, "others keep %.4f",
            others / healthy);
  cr_assert(step_max[1][1] / iter[1][0] > 1.5 && step_max[1][1] / iter[1][0] < 2.0,
            "straggler step %.3f vs %.3f", step_max[1][1], iter[1][0]);
  cr_assert_gt(sps[1][1] / sps[1][0], sps[0][1] / sps[0][0] + 0.2);
}

Test(ps_cli, a_world_size_sweep_keeps_the_stragglers_each_world_has) {
  /* Rank 3 exists in the 4-rank configuration only: the 2-rank one runs
   * without it (ps-model at batch 16, C = 9.632 ms, one server: the hand
   * period), the 4-rank one with it (the straggler period of
   * sync_waits_for_a_straggler_async_does_not); rank 4 would be outside
   * both (bad_values_exit_2_naming_the_flag). At batch 1 the straggler
   * would not show: the server's link, busy with the others' pushes for
   * longer than its extra compute, hides it. */
  struct ds_test_result r = ds_test_cli(TINY
                                        "--strategy ps --world-size 2,4 --batch 16 "
                                        "--straggler 3:2 --format json");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  double S = 2 * 1048576.0 * 4, C = 9.6e6 + LOSS_NS(16);
  cr_assert_float_eq(json_num(r.out, 0, "iter_ms"), sync_period_ns(LAUNCH_NS + C, S, 2) / 1e6,
                     3e-6);
  double Ts = LAUNCH_NS + 2 * C + ALPHA_NS + rnd(S / B_LINK * 1e9) + rnd(13 * S / MEM_BW * 1e9) +
              ALPHA_NS + rnd(3 * S / B_LINK * 1e9);
  cr_assert_float_eq(json_num(r.out, 1, "iter_ms"), Ts / 1e6, 3e-6);
  ds_test_release(&r);
}

Test(ps_cli, per_layer_is_never_slower_without_link_sharing) {
  /* Under the alpha-beta network every flow moves at its route's
   * bottleneck whatever else flies, so pushing a piece earlier can only
   * deliver it earlier: per layer <= after backward, step for step.
   * (Under max-min it may lose: early pieces take shares of the NICs.) */
  const char *base = "--topo 2node-ib --model resnet50 --strategy ps --ps-servers 4 "
                     "--iters 3 --net alpha-beta --format json --ps-push ";
  char args[256];
  double t[2];
  for (int k = 0; k < 2; k++) {
    snprintf(args, sizeof args, "%s%s", base, k ? "per-layer" : "after-backward");
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    t[k] = json_num(r.out, 0, "iter_ms");
    ds_test_release(&r);
  }
  cr_assert_leq(t[1], t[0] + 1e-6, "per layer %.6f, after backward %.6f", t[1], t[0]);
  cr_assert_lt(t[1], t[0], "ResNet-50's last layers' pushes hide under the first layers' backward");
}

Test(ps_cli, one_worker_is_never_faster_than_single_with_the_autograd_threads_host) {
  /* The shipped 4gpu host costs (host_node 32.76 us, sim/net/topo_compute.c's
   * default): BERT-base under autocast bf16 (ps refuses fp16: no GradScaler)
   * is host-bound in backward, 661 nodes (1132 less 471 that launch nothing,
   * which cost nothing) x 32.76 us = 21.65 ms against 16.48 ms of kernels. A ps worker does single's work
   * (launches, forward, backward and their host) plus its push, update and
   * pull: never faster (it was 45.85 against 56.08 ms when ps charged no
   * backward host time). */
  struct ds_test_result r = ds_test_cli(
      "--topo topologies/4gpu.yaml --model bert-base --world-size 1 --batch 32 "
      "--strategy single,ps --amp bf16 --format json");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  double single = json_num(r.out, 0, "iter_ms"), ps = json_num(r.out, 1, "iter_ms");
  cr_assert_geq(ps, single, "ps %.3f single %.3f ms", ps, single);
  cr_assert_geq(ps, 661 * 32.76e-3, "%.3f", ps);
  ds_test_release(&r);
}

/* A --trace file is written a step at a time as the run goes (so a long
 * run's trace is big on disk, not in memory); --trace - keeps the trace and
 * prints it once the run has ended (a failed run prints nothing). Both are
 * the same bytes: async, a straggler and jitter, so that the workers end
 * their steps apart and every step's draws matter. */
Test(ps_cli, a_trace_file_written_as_the_run_goes_is_the_trace_printed) {
  char dir[] = "/tmp/ddpsim-ps-XXXXXX", args[512], tr[128];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(tr, sizeof tr, "%s/t.csv", dir);
  const char *run = TINY "--strategy ps --ps-mode async --ps-servers 2 --straggler 1:2.5 "
                         "--jitter 0.2 --seed 5 --iters 8 --format csv";
  snprintf(args, sizeof args, "%s --trace %s", run, tr);
  struct ds_test_result f = ds_test_cli(args);
  cr_assert_eq(f.status, 0, "stderr: %s", f.err);
  snprintf(args, sizeof args, "%s --trace -", run);
  struct ds_test_result o = ds_test_cli(args);
  cr_assert_eq(o.status, 0, "stderr: %s", o.err);
  char *file = ds_test_slurp(tr);
  cr_assert(file != NULL);
  cr_assert_gt(strlen(file), 1000);
  cr_assert_str_eq(o.out, file, "--trace - printed another trace");
  /* the report, on stderr beside the trace, is the file run's */
  cr_assert(strstr(o.err, f.out) != NULL, "%s", o.err);
  free(file);
  unlink(tr);
  rmdir(dir);
  ds_test_release(&f);
  ds_test_release(&o);
}

/* The work bound (DS_RUN_WORK_LIMIT) foresees a ps run once a step's worth
 * of its ops has ended (the work so far times all its ops over those
 * ended), so ResNet-50 on all 4096 GPUs of cluster-512x8-h100 for --iters
 * 1000 (1.4e9 steps of work, about 12 minutes on the 2-core VM) is refused
 * after its first step (2.5 s), exit 2, naming what to change. */
Test(ps_cli, a_run_foreseen_past_the_work_bound_is_refused_after_its_first_step,
     .timeout = 300) {
  static const char *const says[] = {
      "this run is too large to simulate in reasonable time: about ",
      "% of its ops run when it stopped), past the bound of 5e+08", "fewer --iters (1000;",
      "or a smaller --world-size (4096)"};
  ds_test_ddpsim_refuses_all("--topo cluster-512x8-h100 --strategy ps --iters 1000 --format csv",
                             says, sizeof says / sizeof *says);
}

