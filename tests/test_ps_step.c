/*
 * Parameter server (sim/train/ps*.c), one run's steps: a sync step worked
 * by hand on tiny-topo (the server's link is the shared bottleneck), two
 * servers halving it, stragglers under sync and async, async rank 0's own
 * step, staleness, determinism, bad options, pushes sharing a link or per
 * layer, and the workers' host launches. Sharding and the update:
 * test_ps_shard.c; the steps held together: test_ps_window.c; the command
 * (ddpsim --strategy ps): test_ps_cli.c. tiny-topo and the fixture:
 * tests/ps_fixture.h.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/metrics.h"
#include "sim/train/ps.h"
#include "tests/ps_fixture.h"
#include "tests/ps_hand.h"

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
