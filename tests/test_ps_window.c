/*
 * Parameter server (sim/train/ps*.c), what a run holds: the window of steps
 * whose ops are kept together (between the slowest and the fastest
 * worker, none without a consumer), the memory limit on it and on the
 * lagging workers' jitter draws, a consumer (on_iter) that changes no
 * number or stops the run, and the jitter draws in the whole run's op
 * order, and one step's worker-server pairs bounded (through the command
 * too). The steps themselves: test_ps_step.c; the command (ddpsim
 * --strategy ps): test_ps_cli.c. tiny-topo and the fixture:
 * tests/ps_fixture.h.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/units.h"
#include "sim/train/jitter.h"
#include "sim/train/ps.h"
#include "tests/ps_fixture.h"

/* Under o (3 steps, 32 bytes kept per op for "--trace -", its limits
 * set): refused before it runs, naming the trace, `names` and 2 steps;
 * run at 2 steps. o is left at 3 steps. */
static void refused_at_3_steps_run_at_2(struct fixture *f, struct ds_ps_options *o,
                                        const char *names) {
  struct ds_ps_result r;
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_run(f->topo, f->model, &f->c, o, &r, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "--trace - keeps every op") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, names) != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "--iters 2 or fewer") != NULL, "%s", err.msg);
  o->iters = 2;
  run(f, o, &r);
  ds_ps_result_release(&r);
  o->iters = 3;
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
  o = opts(4, 1, DS_PS_SYNC, 3, 1);
  o.kept_bytes_per_op = 32;
  o.mem_limit = (uint64_t)(2.5 * per_iter);
  o.kept_by = "--trace -";
  refused_at_3_steps_run_at_2(&f, &o, "3 iterations of 4 ranks");
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

/* The estimate a refusal gives (GiB in the message, as bytes). */
static double refused_estimate(struct fixture *f, const struct ds_ps_options *o) {
  struct ds_ps_result r;
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_run(f->topo, f->model, &f->c, o, &r, &err), DS_EINPUT, "%s", err.msg);
  cr_assert_null(r.step);
  const char *about = strstr(err.msg, "would hold about ");
  cr_assert(about != NULL, "%s", err.msg);
  return strtod(about + strlen("would hold about "), NULL) * DS_UNITS_GIB;
}

/* One step's own memory grows as workers x servers (every worker pushes
 * to and pulls from every server each step: the ops, the routes, the
 * flows), whatever --iters, and is refused before anything is allocated
 * when its estimate passes step_mem_limit (ps.h), naming the product, the
 * estimate and the most --ps-servers that fit. Before, nothing bounded it:
 * the run allocated as it went until it ran out of memory. Tiny model, 4
 * workers: with no limit 4 servers run; under a limit of 100 bytes they
 * are refused, naming the 16 pairs and only a smaller world; the
 * estimates of 2 and 4 servers (each refused under that limit) grow by
 * the same step a server (linear), and a limit a quarter of the way from
 * 2's to 4's (below 3's) names 2 servers, refuses 3 and runs 2. */
Test(ps, a_step_whose_worker_server_pairs_do_not_fit_is_refused_before_it_runs) {
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  struct ds_ps_result r;
  struct ds_ps_options o = opts(4, 4, DS_PS_SYNC, 3, 1);
  run(&f, &o, &r);
  ds_ps_result_release(&r);
  struct ds_err err = {0};
  o.step_mem_limit = 100;
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EINPUT, "%s", err.msg);
  cr_assert(strstr(err.msg, "option --ps-servers: ") == err.msg, "%s", err.msg);
  cr_assert(strstr(err.msg, "4 workers x 4 servers = 16 worker-server pairs") != NULL, "%s",
            err.msg);
  cr_assert(strstr(err.msg, "; give a smaller --world-size") != NULL, "%s", err.msg);
  double need4 = refused_estimate(&f, &o);
  o.n_servers = 2;
  double need2 = refused_estimate(&f, &o);
  cr_assert_gt(need2, 1000);
  cr_assert_gt(need4, need2 * 1.2, "%g %g", need4, need2);
  o.n_servers = 4;
  o.step_mem_limit = (uint64_t)(need2 + 0.25 * (need4 - need2));
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EINPUT, "%s", err.msg);
  cr_assert(strstr(err.msg, "give --ps-servers 2 or fewer, or a smaller --world-size") != NULL,
            "%s", err.msg);
  o.n_servers = 3;
  cr_assert_eq(ds_ps_run(f.topo, f.model, &f.c, &o, &r, &err), DS_EINPUT, "%s", err.msg);
  o.n_servers = 2;
  run(&f, &o, &r);
  ds_ps_result_release(&r);
  /* the limit bounds one step, whatever --iters */
  o.n_servers = 4;
  o.iters = 20;
  o.step_mem_limit = (uint64_t)(1.01 * need4);
  run(&f, &o, &r);
  ds_ps_result_release(&r);
  unload(&f);
}

/* Where the caller bounds the step too (step_mem_limit, as ddpsim does,
 * both half the machine's memory), one step's estimate is taken from
 * mem_limit before the kept trace and the window are checked against it
 * (ps_impl.h ps_sim step_bytes). Before, each was checked against the
 * whole limit, so the step and the kept trace could reach twice it. Tiny
 * model, 4 workers, 1 server, 32 bytes kept per op: a limit of
 * one step's estimate and 2.5 steps' kept rows refuses 3 steps (naming 2
 * and both claims) and runs 2; the same limit without step_mem_limit
 * runs 3. */
Test(ps, the_step_and_the_kept_trace_share_one_memory_limit) {
  struct fixture f;
  load(&f, "tests/data/tiny-model.yaml");
  struct ds_ps_result r;
  struct ds_ps_options o = opts(4, 1, DS_PS_SYNC, 2, 1);
  run(&f, &o, &r);
  double per_iter = (double)r.step->n_ops * 32;
  ds_ps_result_release(&r);
  o.step_mem_limit = 100;
  double step = refused_estimate(&f, &o);
  cr_assert_gt(step, per_iter, "%g %g", step, per_iter);
  o = opts(4, 1, DS_PS_SYNC, 3, 1);
  o.kept_bytes_per_op = 32;
  o.kept_by = "--trace -";
  o.mem_limit = o.step_mem_limit = (uint64_t)(step + 2.5 * per_iter);
  refused_at_3_steps_run_at_2(&f, &o, "GiB (half this machine's memory) after one step's ops, "
                                      "routes and flows (");
  o.step_mem_limit = 0;
  run(&f, &o, &r);
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

/* One step's ops, routes and flows grow as workers x servers, whatever
 * --iters; a step whose estimate passes half the machine's memory is
 * refused before anything is allocated (ps.h step_mem_limit), exit 2, at
 * once, naming the product and the ways out. 16384 workers x 16384 async
 * servers (the most a topology has) would hold about 221 GiB: refused on
 * any machine of less than 442 GiB, in 0.14 s of CPU on the 2-core VM.
 * Before, nothing refused it: under a 3 GB ulimit -v it ran out of memory,
 * exit 1. Here, not in test_ps_cli.c: criterion leaks 48 bytes when a
 * binary holds two tests with a .timeout (LeakSanitizer), and that file's
 * work bound has one. */
Test(ps, a_step_of_more_worker_server_pairs_than_memory_is_refused_at_once,
     .timeout = 120) {
  static const char *const says[] = {
      "option --ps-servers: every worker pushes to and pulls from every server each step: "
      "16384 workers x 16384 servers = 268435456 worker-server pairs, whose ops, routes and "
      "flows would hold about 221 GiB, more than the ",
      "allowed (half this machine's memory); give --ps-servers ",
      " or fewer, or a smaller --world-size"};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ds_test_ddpsim_refuses_all("--topo tests/data/cluster-2048x8-h100.yaml --model "
                             "tests/data/tiny-model.yaml --strategy ps --ps-servers 16384 "
                             "--ps-mode async --format csv",
                             says, sizeof says / sizeof *says);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  /* the sanitizer build on a shared VM: seconds at most, not minutes */
  cr_assert_lt(s, 20, "refused after %.1f s", s);
}
