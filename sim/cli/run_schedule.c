/*
 * A configuration's run on the executor (see run_schedule.h).
 *
 * For each bucket cap, one schedule holds every simulated iteration:
 * iteration 0 with DDP's single bucket, then iters-1 copies of the rebuilt
 * steady state. Iterations are not separated by any barrier: each rank's
 * streams simply run their ops in order, so iteration i+1's forward starts
 * on a rank when its optimizer step of iteration i ends. The last iteration
 * is reported. single and dp (sim/train/dp.c) build every iteration alike and
 * report the steady-state period. With --samples or --jitter the schedule
 * runs once per seed, with its own per-op duration multipliers (jitter.c).
 */
#include "sim/cli/run_schedule.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "base/units.h"
#include "sim/train/ddp.h"
#include "sim/train/dp.h"
#include "sim/train/exec.h"
#include "sim/train/jitter.h"
#include "traces/shared_schedule.h"

/* DDP's reducer all-reduces its local-used map after every backward under
 * find_unused_parameters, and after static_graph's first (ddp.h). */
static int local_used_map(const struct ds_options *o, int32_t iter) {
  if (o->static_graph) return iter == 0 ? 2 : 0;
  return o->find_unused_parameters ? 1 : 0;
}

static ds_status build_iteration(const struct config_run *c,
                                 const struct ds_buckets *bk, int32_t iter, int rebuild,
                                 int64_t id_base, int64_t coll_base, int template_only,
                                 struct ds_schedule *s, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_ddp_options dopt = {
      c->world, c->batch, &c->ring, c->use_nccl ? &c->nccl : NULL,
      o->proto.choice == DS_PROTO_CHOICE_FIXED ? o->proto.fixed : DS_PROTO_COUNT,
      o->no_overlap, o->no_sync, o->comm_hook, iter, o->ar_algo, o->algo_auto,
      o->grad_as_bucket_view, template_only, !o->no_broadcast_buffers, o->ddp_rules,
      c->grad_accum, local_used_map(o, iter), o->free_loop, rebuild};
  ds_status st = ds_ddp_build(c->model, &c->compute, &dopt, bk, id_base,
                              coll_base, s);
  if (st != DS_OK)
    return ds_err_set(err, st, "building the DDP schedule failed: %s",
                      ds_status_message(st));
  return DS_OK;
}

/* Iteration `iter` of the configuration's strategy (docs/strategies.md):
 * DDP's runs the plan's layout for that iteration (bk); single and dp
 * build the same iteration every time. *n_coll receives the number of
 * collective ids the iteration used. With template_only, DDP builds rank 0's
 * ops alone, the template every rank runs (traces/shared_schedule.h). */
static ds_status build_strategy_iteration(const struct config_run *c,
                                          const struct ds_buckets *bk, int32_t iter,
                                          int rebuild, int64_t id_base,
                                          int64_t coll_base, int template_only,
                                          struct ds_schedule *s,
                                          int64_t *n_coll, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  switch (o->strategy_id) {
  case DS_STRATEGY_SINGLE:
  case DS_STRATEGY_DP: {
    struct ds_dp_options dopt = {
        .world_size = c->world, .nccl = c->use_nccl ? &c->nccl : NULL,
        .proto_fixed = o->proto.choice == DS_PROTO_CHOICE_FIXED ? o->proto.fixed : DS_PROTO_COUNT,
        .batch = c->batch, .output_device = o->dp_output_device,
        .parallel_loss = o->dp_parallel_loss, .single = o->strategy_id == DS_STRATEGY_SINGLE,
        .launch_ns = c->compute.params.host_launch_ns,
        .replicate_ns = c->compute.params.host_replicate_ns,
        .backward_ns = c->compute.params.host_backward_ns,
        .grad_accum = c->grad_accum, .free_loop = o->free_loop};
    ds_status st = ds_dp_build(c->model, &c->compute, &dopt, &c->dp_chunks, id_base,
                               coll_base, s, n_coll);
    if (st != DS_OK)
      return ds_err_set(err, st, "building the %s schedule failed: %s", o->strategy,
                        ds_status_message(st));
    return DS_OK;
  }
  case DS_STRATEGY_DDP: {
    int32_t buffer_buckets = o->no_broadcast_buffers ? 0 : ds_ddp_buffer_buckets(c->model, NULL);
    if (buffer_buckets < 0)
      return ds_err_set(err, DS_ENOMEM, "building the DDP schedule failed: %s",
                        ds_status_message(DS_ENOMEM));
    struct ds_ddp_options counts = {.grad_accum = c->grad_accum,
                                    .broadcast_buffers = !o->no_broadcast_buffers,
                                    .local_used_map = local_used_map(o, iter),
                                    .rebuild_forward = rebuild};
    *n_coll = ds_ddp_colls_per_iteration(&counts, bk->n, buffer_buckets);
    return build_iteration(c, bk, iter, rebuild, id_base, coll_base, template_only, s, err);
  }
  default: /* ps runs outside the schedule path (run.c run_config, run_ps.c) */
    return ds_err_set(err, DS_EINTERNAL, "no schedule builder for --strategy %s",
                      o->strategy);
  }
}

/* The run's trace t where it goes: the --trace file (meta its header) and
 * ds_run_capture's copy (a self-contained one: t's rows borrow schedules
 * the run frees). */
ds_status ds__run_trace_outputs(const struct config_run *c, const struct ds_trace *t,
                                const struct ds_csv_meta *meta, struct ds_err *err) {
  if (c->opt->trace) DS_CHECK(ds_trace_write_csv(c->opt->trace, t, meta, err));
  return ds__run_trace_capture(c, t, meta);
}

ds_status ds__run_trace_capture(const struct config_run *c, const struct ds_trace *t,
                                const struct ds_csv_meta *meta) {
  if (!c->capture) return DS_OK;
  struct ds_run_trace *cap = c->capture;
  ds_trace_free(cap->trace);
  cap->trace = NULL;
  DS_CHECK(ds_trace_detach(t, &cap->trace));
  snprintf(cap->inputs, sizeof cap->inputs, "%s", meta->inputs ? meta->inputs : "");
  cap->seed = meta->seed;
  return DS_OK;
}

/* The schedule file holds the steady state (the iteration after the
 * rebuild, the plan's `rebuilt` layout); the trace every simulated
 * iteration. Iterations before the first steady one (n_warm ops: iteration
 * 0, and 1 too under static_graph; the rebuild's forward too where it runs
 * its ops, rebuild_forward) carry their own ids; later ones are
 * copies of the schedule file's, so that the trace joins with a replay of
 * it. iter_at[k] is iteration k's first op in `all`. The schedule file's
 * durations carry --straggler's factors (factor, NULL: none), as the
 * executor ran them; the trace's dur_us stays the builder's
 * (traces/SCHEMA.md). */
static ds_status write_outputs(const struct config_run *c,
                               const struct ds_buckets *steady_bk, int32_t steady_iter,
                               const struct ds_schedule *all, const size_t *iter_at,
                               const int64_t *start, const int64_t *end,
                               const double *factor, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_schedule *steady = NULL;
  struct ds_trace *trace = NULL;
  struct ds_csv_meta meta = {"ddpsim " DS_VERSION, c->inputs, o->seed, NULL, 0};
  ds_status st;
  int64_t n_coll;
  DS_CHECK_GOTO(ds_schedule_new(c->world, &steady), st, out);
  DS_CHECK_GOTO(build_strategy_iteration(c, steady_bk, steady_iter, 0, 0, 0, 0, steady,
                                         &n_coll, err), st, out);
  if (o->schedule)
    DS_CHECK_GOTO(ds__run_write_schedule(o->schedule, steady, factor, &meta, err), st, out);
  if (o->trace || c->capture) {
    DS_CHECK_GOTO(ds_trace_new("sim", &trace), st, out);
    int32_t it = 0;
    for (size_t i = 0; i < all->n_ops; i++) {
      while (i >= iter_at[it + 1]) it++;
      struct ds_trace_row row = {all, (uint32_t)i, it, start[i], end[i]};
      if (it >= steady_iter) {
        row.sched = steady;
        row.op = (uint32_t)(i - iter_at[it]);
      }
      DS_CHECK_GOTO(ds_trace_add(trace, &row), st, out);
    }
    DS_CHECK_GOTO(ds__run_trace_outputs(c, trace, &meta, err), st, out);
  }
  st = DS_OK;
out:
  if (st == DS_ENOMEM) ds_err_set(err, st, "writing outputs: out of memory");
  ds_trace_free(trace);
  ds_schedule_free(steady);
  return st;
}

/* Whether DDP's iteration `iter` runs the bucket rebuild's forward (ddp.h
 * rebuild_forward): the first iteration on the rebuilt layout, where the
 * buckets are rebuilt, unless it is the last, the reported one. The
 * reported iteration stands for the steady state that every later
 * iteration repeats (and the schedule file holds it), so a one-time cost
 * stays out of it: with the default --iters 2 (static_graph: 3) it is the
 * rebuild's, built without the rebuild's ops; with more iterations the
 * rebuild's forward runs them and a later one is reported. */
static int rebuild_forward(const struct config_run *c, const struct ds_ddp_plan *plan,
                           int32_t iter) {
  return c->opt->strategy_id == DS_STRATEGY_DDP && plan->rebuild_iter > 0 &&
         iter == plan->rebuild_iter && iter < c->opt->iters - 1;
}

/* The configuration's iterations as one shared schedule in *out
 * (traces/shared_schedule.h): DDP's ranks run the same ops, so only rank 0's
 * are built and every iteration is one block of all ranks; single's and
 * dp's (whose ranks have roles) are built in full, one block per run of a
 * rank's ops. iter_block[k] receives iteration k's first block, and
 * iter_block[iters] the block count. */
static ds_status build_run_schedule(const struct config_run *c, const struct ds_ddp_plan *plan,
                                    size_t *iter_block, struct ds_shared_schedule **out,
                                    struct ds_err *err) {
  const struct ds_options *o = c->opt;
  int shared = o->strategy_id == DS_STRATEGY_DDP;
  struct ds_schedule *tmpl = NULL;
  struct ds_shared_schedule *s = NULL;
  size_t n_it = (size_t)o->iters;
  size_t *iter_at = malloc((n_it + 1) * sizeof *iter_at); /* full-schedule index */
  size_t *tmpl_at = malloc((n_it + 1) * sizeof *tmpl_at);
  ds_status st = iter_at && tmpl_at ? ds_schedule_new(c->world, &tmpl) : DS_ENOMEM;
  if (st != DS_OK) goto oom;
  int64_t coll_base = 0, n_coll = 0;
  size_t full_n = 0;
  for (size_t it = 0; it < n_it; it++) {
    tmpl_at[it] = tmpl->n_ops;
    iter_at[it] = shared ? full_n : tmpl->n_ops;
    coll_base += n_coll;
    DS_CHECK_GOTO(build_strategy_iteration(c, ds_ddp_plan_layout(plan, (int32_t)it), (int32_t)it,
                                           rebuild_forward(c, plan, (int32_t)it),
                                           (int64_t)iter_at[it], coll_base, shared, tmpl,
                                           &n_coll, err), st, out);
    full_n += (tmpl->n_ops - tmpl_at[it]) * (shared ? (size_t)c->world : 1);
  }
  tmpl_at[n_it] = tmpl->n_ops;
  iter_at[n_it] = full_n;
  if (shared) {
    st = ds_shared_new(tmpl, 1, &s);
    tmpl = NULL; /* s owns it, or it is freed */
    for (size_t it = 0; it < n_it && st == DS_OK; it++) {
      uint32_t per = (uint32_t)(tmpl_at[it + 1] - tmpl_at[it]);
      iter_block[it] = it;
      st = ds_shared_add_block(s, 0, c->world, (uint32_t)tmpl_at[it], per, per);
    }
    iter_block[n_it] = n_it;
  } else {
    st = ds_shared_from_schedule(tmpl, iter_at + 1, n_it - 1, &s);
    if (st == DS_OK) {
      s->owns_tmpl = 1;
      tmpl = NULL;
      for (size_t it = 0, b = 0; it <= n_it; it++) {
        while (b < s->n_blocks && s->blocks[b].first_index < iter_at[it]) b++;
        iter_block[it] = b;
      }
    }
  }
  if (st != DS_OK) goto oom;
  *out = s;
  s = NULL;
  goto out;
oom:
  ds_err_set(err, st, "simulation: out of memory");
out:
  ds_shared_free(s);
  ds_schedule_free(tmpl);
  free(iter_at);
  free(tmpl_at);
  return st;
}

/* What NCCL's model ran for rank 0's all-reduces of blocks [b0, b1) (the
 * reported iteration), in schedule order, which is the order a rank's comm
 * stream runs them: the builder names each op's algorithm and protocol in
 * its algo field (ddp.c ds__ddp_emit_allreduce), the trace's algo column. */
static void record_nccl_calls(const struct ds_shared_schedule *s, size_t b0, size_t b1,
                              struct ds_summary *sum) {
  for (size_t b = b0; b < b1; b++) {
    const struct ds_sched_block *bl = &s->blocks[b];
    if (bl->first_rank != 0) continue;
    for (uint32_t t = bl->first_op; t < bl->first_op + bl->n_ops; t++) {
      const struct ds_op *op = &s->tmpl->ops[t];
      if (op->kind == DS_OP_ALLREDUCE) ds_report_add_nccl_call(sum, op->algo);
    }
  }
}

/* The timeline of the trace kept (c->capture->plot) draws the last
 * iteration, blocks [b0, b1), one lane per (rank, stream) with ops: a PNG
 * too tall for cairo is refused here, before the simulation (a 512-rank
 * run simulated for seconds first), with the message the drawing would
 * give (analysis/export.h ds_plot_check_size, which checks the drawn
 * trace again). */
static ds_status check_plot_size(const struct config_run *c,
                                 const struct ds_shared_schedule *s, size_t b0, size_t b1,
                                 struct ds_err *err) {
  if (!c->capture || !c->capture->plot) return DS_OK;
  uint32_t *streams = calloc((size_t)c->world + 1, sizeof *streams); /* a bit per stream */
  if (!streams) return ds_err_set(err, DS_ENOMEM, "simulation: out of memory");
  for (size_t b = b0; b < b1; b++) {
    const struct ds_sched_block *bl = &s->blocks[b];
    uint32_t used = 0;
    for (uint32_t t = bl->first_op; t < bl->first_op + bl->n_ops; t++)
      used |= 1u << s->tmpl->ops[t].stream;
    for (int32_t r = bl->first_rank; r < bl->first_rank + bl->n_ranks; r++) streams[r] |= used;
  }
  size_t lanes = 0;
  for (int32_t r = 0; r < c->world; r++)
    for (int k = 0; k < DS_STREAM_COUNT; k++) lanes += (streams[r] >> k) & 1u;
  free(streams);
  return ds_plot_check_size(c->capture->plot, lanes, 1, err);
}

ds_status ds__run_schedule(struct config_run *c, double bucket_mb, struct ds_summary *sum,
                           double **bucket_bytes, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_ddp_plan plan = {0};
  struct ds_shared_schedule *sched = NULL;
  struct ds_schedule *expanded = NULL;
  struct ds_report_times tm = {0};
  struct ds_exec *ex = NULL;
  int64_t *rank_time = NULL;
  double *times = NULL, *scale = NULL, *factor = NULL;
  size_t *iter_block = NULL, *iter_at = NULL;
  int dsz = ds_dtype_bytes(o->dtype);
  ds_status st;

  DS_CHECK_GOTO(ds_ddp_plan_rules(c->model, dsz,
                                  ds_options_first_bucket_mb(o, bucket_mb) * DS_UNITS_MIB,
                                  bucket_mb * DS_UNITS_MIB, o->find_unused_parameters,
                                  o->static_graph, o->ddp_rules, &plan), st, oom);
  size_t n_it = (size_t)o->iters;
  iter_block = malloc((n_it + 1) * sizeof *iter_block);
  iter_at = malloc((n_it + 1) * sizeof *iter_at);
  if (!iter_block || !iter_at) { st = DS_ENOMEM; goto oom; }
  DS_CHECK_GOTO(build_run_schedule(c, &plan, iter_block, &sched, err), st, out);
  DS_CHECK_GOTO(ds_shared_validate(sched, err), st, out);
  for (size_t it = 0; it < n_it; it++) iter_at[it] = sched->blocks[iter_block[it]].first_index;
  iter_at[n_it] = sched->n_ops;
  size_t last = n_it - 1;
  DS_CHECK_GOTO(check_plot_size(c, sched, iter_block[last], iter_block[n_it], err), st, out);

  int32_t n_samples = o->samples > 1 ? o->samples : 1;
  int outputs = o->trace || o->schedule || c->capture;
  DS_CHECK_GOTO(ds_report_times_new(sched, o->trace || c->capture, &tm), st, oom);
  rank_time = malloc((size_t)c->world * sizeof *rank_time);
  times = malloc((size_t)n_samples * sizeof *times);
  /* --jitter draws per op; --straggler is per rank (the executor multiplies
   * the two for compute ops) */
  if (o->jitter) scale = malloc(sched->n_ops * sizeof *scale);
  if (o->n_stragglers > 0) DS_CHECK_GOTO(ds__run_rank_factors(c, &factor, err), st, out);
  if (!rank_time || !times || (o->jitter && !scale)) {
    st = DS_ENOMEM;
    goto oom;
  }
  char advice[512];
  ds__run_work_advice(c, 1, advice, sizeof advice);
  for (int32_t k = 0; k < n_samples; k++) {
    /* Sample k: seed + k; the timing fields are sample 0's. */
    if (o->jitter) DS_CHECK_GOTO(ds_jitter_fill_shared(sched, o->jitter_cv,
                                                       o->seed + (uint64_t)k, scale), st, oom);
    struct ds_exec_options eopt = {.net_mode = o->net_mode, .coll_model = c->coll_model,
                                   .ring_chunks = o->ring_chunks,
                                   .nccl = c->use_nccl ? &c->nccl : NULL,
                                   .dur_scale = scale,
                                   .rank_scale = factor,
                                   .prebuilt_ring = &c->ring,
                                   .compute = &c->compute,
                                   .model = c->model,
                                   .batch = c->batch,
                                   .r0_slowed_ns = tm.r0_slowed_ns,
                                   .work_limit = DS_RUN_WORK_LIMIT,
                                   .iters = o->iters,
                                   .work_advice = advice};
    memset(rank_time, 0, (size_t)c->world * sizeof *rank_time);
    ds_report_times_reset(&tm);
    DS_CHECK_GOTO(ds_exec_new(c->topo, &eopt, &ex, err), st, out);
    DS_CHECK_GOTO(ds_exec_run_shared(ex, sched, rank_time, ds_report_times_record, &tm, err),
                  st, out);
    ds_exec_free(ex);
    ex = NULL;
    /* analysis/metrics.c's definitions: what `ddpsim analyze` says of the
     * trace. The iteration's time is its period when the previous one's
     * last op (dp's step on GPU 0) ends after its first op starts. */
    struct ds_summary one = {0};
    DS_CHECK_GOTO(ds_report_measure_shared(&tm, iter_block[last], iter_block[n_it], &one), st,
                  oom);
    times[k] = one.iter_ms;
    if (k > 0) continue;
    struct ds_summary first_sum = {0};
    DS_CHECK_GOTO(ds_report_measure_shared(&tm, 0, iter_block[1], &first_sum), st, oom);
    DS_CHECK_GOTO(ds_report_measure_shared(&tm, iter_block[last], iter_block[n_it], sum), st,
                  oom);
    sum->first_iter_ms = first_sum.iter_ms;
    if (o->free_loop) { /* report.h free_loop: the iteration before, to compare */
      struct ds_summary prev_sum = {0};
      sum->free_loop = 1;
      sum->prev_iter_ms = -1;
      sum->prev_ran_rebuild = last >= 2 && rebuild_forward(c, &plan, last - 1);
      sum->prev_before_rebuild = o->strategy_id == DS_STRATEGY_DDP && plan.rebuild_iter > 0 &&
                                 last == (size_t)plan.rebuild_iter;
      /* the rebuild's forward runs in iteration rebuild_iter of a run
       * longer than rebuild_iter + 2: the two after it are reported from
       * --iters rebuild_iter + 3 */
      sum->compare_iters = o->strategy_id == DS_STRATEGY_DDP && plan.rebuild_iter > 0
                               ? plan.rebuild_iter + 3 : 3;
      if (last >= 2) {
        DS_CHECK_GOTO(ds_report_measure_shared(&tm, iter_block[last - 1], iter_block[last],
                                               &prev_sum), st, oom);
        sum->prev_iter_ms = prev_sum.iter_ms;
      }
    }
    if (outputs) {
      /* the trace's rows need every rank's ops: the template is them when
       * every block has one rank, else they are expanded (O(ops x ranks),
       * as the trace itself) */
      const struct ds_schedule *all = sched->tmpl;
      if (sched->n_ops != sched->tmpl->n_ops && (o->trace || c->capture)) {
        DS_CHECK_GOTO(ds_shared_expand(sched, &expanded), st, oom);
        all = expanded;
      }
      /* the first iteration whose ops are the steady state's: the one
       * after the rebuild's forward where that one runs it */
      int32_t steady_iter = plan.rebuild_iter < o->iters ? plan.rebuild_iter : o->iters;
      if (rebuild_forward(c, &plan, steady_iter)) steady_iter++;
      DS_CHECK_GOTO(write_outputs(c, &plan.rebuilt, steady_iter, all, iter_at, tm.start, tm.end,
                                  factor, err), st, out);
      ds_schedule_free(expanded);
      expanded = NULL;
    }
  }
  if (o->jitter || o->samples > 1) {
    sum->has_quantiles = 1;
    sum->samples = n_samples;
    sum->jitter_cv = o->jitter ? o->jitter_cv : 0;
    ds_jitter_quantiles(times, (size_t)n_samples, &sum->iter_p50_ms, &sum->iter_p95_ms,
                        &sum->iter_p99_ms);
  }
  if (c->use_nccl) record_nccl_calls(sched, iter_block[last], iter_block[n_it], sum);
  sum->bucket_mb = bucket_mb;
  sum->first_bucket_mb = ds_options_first_bucket_mb(o, bucket_mb);
  sum->bucket_rule = plan.rule;
  sum->n_buckets = plan.rebuilt.n;
  if (o->strategy_id != DS_STRATEGY_DDP) {
    /* dp's "buckets" are reduce_add_coalesced's groups; single has none,
     * nor has dp on one GPU, where DataParallel calls the module itself and
     * reduces nothing (dp.c: single's iteration); its bucket_mb stays the
     * cap, the value that identifies dp's rows in a world-size sweep */
    int dp = o->strategy_id == DS_STRATEGY_DP;
    sum->bucket_mb = dp ? DS_DP_COALESCE_BYTES / DS_UNITS_MIB : 0;
    sum->n_buckets = dp && c->world > 1 ? c->dp_chunks.n : 0;
    sum->first_bucket_mb = o->first_bucket_mb;
    sum->bucket_rule = NULL;
  }
  *bucket_bytes = malloc(((size_t)sum->n_buckets + 1) * sizeof **bucket_bytes);
  if (!*bucket_bytes) { st = DS_ENOMEM; goto oom; }
  for (int32_t b = 0; b < sum->n_buckets; b++)
    (*bucket_bytes)[b] = o->strategy_id == DS_STRATEGY_DDP ? plan.rebuilt.b[b].bytes
                                                           : c->dp_chunks.bytes[b];
  sum->bucket_bytes = *bucket_bytes;

  st = DS_OK;
  goto out;
oom:
  ds_err_set(err, st, "simulation: out of memory");
out:
  ds_exec_free(ex);
  ds_report_times_release(&tm);
  ds_schedule_free(expanded);
  free(rank_time);
  free(times);
  free(scale);
  free(factor);
  free(iter_block);
  free(iter_at);
  ds_shared_free(sched);
  ds_ddp_plan_release(&plan);
  return st;
}
