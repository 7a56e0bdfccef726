/*
 * The simulate command (see run.h).
 *
 * For each bucket cap, one schedule holds every simulated iteration:
 * iteration 0 with DDP's single bucket, then iters-1 copies of the rebuilt
 * steady state. Iterations are not separated by any barrier: each rank's
 * streams simply run their ops in order, so iteration i+1's forward starts
 * on a rank when its optimizer step of iteration i ends. The last iteration
 * is reported. single and dp (sim/train/dp.c) build every iteration alike and
 * report the steady-state period; ps runs its own loop (sim/train/ps.c). Each
 * configuration is one strategy's (options.h, --strategy); every row then
 * gets its speedup over single-GPU training at its batch (fill_speedups).
 *
 * The files are loaded once; every configuration of a sweep (sweep.c) then
 * gets its own ring, NCCL model and schedule, in this process or in a
 * worker process. With --samples or --jitter each configuration's schedule
 * runs once per seed, with its own per-op duration multipliers (jitter.c).
 */
#include "sim/cli/run.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "traces/trace.h"
#include "sim/train/calib.h"
#include "sim/coll/coll.h"
#include "sim/train/compute.h"
#include "sim/train/grouped_conv.h"
#include "sim/train/ddp.h"
#include "sim/train/dp.h"
#include "sim/train/exec.h"
#include "sim/train/jitter.h"
#include "base/lookup.h"
#include "base/textout.h"
#include "base/units.h"
#include "sim/train/model.h"
#include "sim/coll/nccl_model.h"
#include "sim/train/ps.h"
#include "sim/train/kernel_models.h"
#include "sim/train/rates.h"
#include "sim/cli/host_range.h"
#include "sim/cli/report.h"
#include "sim/cli/sweep.h"
#include "sim/cli/sweep_measured.h"
#include "sim/cli/sweep_plot.h"
#include "sim/net/topo.h"


/* What every configuration shares: the loaded files. */
struct loaded {
  struct ds_topo *topo;
  struct ds_model *model;
  struct ds_compute compute;
  struct ds_calib *calib;      /* --calib's file, or NULL */
  struct ds_gconv_table gconv; /* its grouped_conv table, when it has one */
  char topo_path[4096];
  char model_path[4096];
};

struct config_run {
  const struct ds_options *opt;
  struct ds_topo *topo;
  struct ds_model *model;
  struct ds_compute compute;
  struct ds_ring ring;
  int32_t world;
  int64_t batch;
  enum ds_coll_model coll_model;
  struct ds_nccl_model nccl; /* valid when use_nccl */
  int use_nccl;
  char coll_algo[32];        /* "ring", "ring/auto", "ring/LL128", "auto/LL+Simple", ... */
  char ddp_options[128];     /* "none", or e.g. "no_overlap;no_sync=4" */
  int32_t grad_accum;        /* micro-steps per optimizer step (ds_options_grad_accum) */
  char inputs[1024];
  struct ds_dp_chunks dp_chunks; /* dp: reduce_add_coalesced's 10 MiB groups */
  struct ds_run_trace *capture;  /* ds_run_capture: the trace kept in memory, or NULL */
};

/* DDP's reducer all-reduces its local-used map after every backward under
 * find_unused_parameters, and after static_graph's first (ddp.h). */
static int local_used_map(const struct ds_options *o, int32_t iter) {
  if (o->static_graph) return iter == 0 ? 2 : 0;
  return o->find_unused_parameters ? 1 : 0;
}

static ds_status build_iteration(const struct config_run *c,
                                 const struct ds_buckets *bk, int32_t iter, int64_t id_base,
                                 int64_t coll_base, int template_only, struct ds_schedule *s,
                                 struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_ddp_options dopt = {
      c->world, c->batch, &c->ring, c->use_nccl ? &c->nccl : NULL,
      o->proto.choice == DS_PROTO_CHOICE_FIXED ? o->proto.fixed : DS_PROTO_COUNT,
      o->no_overlap, o->no_sync, o->comm_hook, iter, o->ar_algo, o->algo_auto,
      o->grad_as_bucket_view, template_only, !o->no_broadcast_buffers, o->ddp_rules,
      c->grad_accum, local_used_map(o, iter), o->free_loop};
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
                                          int64_t id_base,
                                          int64_t coll_base, int template_only,
                                          struct ds_schedule *s,
                                          int64_t *n_coll, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  switch (o->strategy_id) {
  case DS_STRATEGY_SINGLE:
  case DS_STRATEGY_DP: {
    struct ds_dp_options dopt = {
        .world_size = c->world, .batch = c->batch, .output_device = o->dp_output_device,
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
                                    .local_used_map = local_used_map(o, iter)};
    *n_coll = ds_ddp_colls_per_iteration(&counts, bk->n, buffer_buckets);
    return build_iteration(c, bk, iter, id_base, coll_base, template_only, s, err);
  }
  default: /* ps runs outside the schedule path (run_config) */
    return ds_err_set(err, DS_EINTERNAL, "no schedule builder for --strategy %s",
                      o->strategy);
  }
}

/* ds_run_capture's copy of the run's trace t (a self-contained one: t's
 * rows borrow schedules the run frees). */
static ds_status keep_trace(struct ds_run_trace *cap, const struct ds_trace *t,
                            const char *inputs, uint64_t seed) {
  ds_trace_free(cap->trace);
  cap->trace = NULL;
  DS_CHECK(ds_trace_detach(t, &cap->trace));
  snprintf(cap->inputs, sizeof cap->inputs, "%s", inputs ? inputs : "");
  cap->seed = seed;
  return DS_OK;
}

/* The schedule file holds the steady state (the iteration after the
 * rebuild, the plan's `rebuilt` layout); the trace every simulated
 * iteration. Iterations before the first steady one (n_warm ops: iteration
 * 0, and 1 too under static_graph) carry their own ids; later ones are
 * copies of the schedule file's, so that the trace joins with a replay of
 * it. iter_at[k] is iteration k's first op in `all`. */
static ds_status write_outputs(const struct config_run *c,
                               const struct ds_buckets *steady_bk, int32_t steady_iter,
                               const struct ds_schedule *all, const size_t *iter_at,
                               const int64_t *start, const int64_t *end,
                               struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_schedule *steady = NULL;
  struct ds_trace *trace = NULL;
  struct ds_csv_meta meta = {"ddpsim " DS_VERSION, c->inputs, o->seed, NULL};
  ds_status st;
  int64_t n_coll;
  DS_CHECK_GOTO(ds_schedule_new(c->world, &steady), st, out);
  DS_CHECK_GOTO(build_strategy_iteration(c, steady_bk, steady_iter, 0, 0, 0, steady, &n_coll,
                                         err), st, out);
  if (o->schedule)
    DS_CHECK_GOTO(ds_schedule_write_csv(o->schedule, steady, &meta, err), st, out);
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
    if (o->trace) DS_CHECK_GOTO(ds_trace_write_csv(o->trace, trace, &meta, err), st, out);
    if (c->capture) DS_CHECK_GOTO(keep_trace(c->capture, trace, meta.inputs, o->seed), st, out);
  }
  st = DS_OK;
out:
  if (st == DS_ENOMEM) ds_err_set(err, st, "writing outputs: out of memory");
  ds_trace_free(trace);
  ds_schedule_free(steady);
  return st;
}

/* --straggler factors of the configuration's ranks (factor[0 .. c->world)).
 * ds_run checked the ranks against the largest world of the run; a smaller
 * configuration (a --world-size sweep, the single-GPU row) keeps the
 * factors of the ranks it has. */
static ds_status rank_factors(const struct config_run *c, double **out, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  int32_t n = c->world;
  for (int32_t k = 0; k < o->n_stragglers; k++)
    if (o->stragglers[k].rank >= n) n = o->stragglers[k].rank + 1;
  *out = malloc((size_t)n * sizeof **out);
  if (!*out) return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = ds_options_rank_factors(o, n, *out, err);
  if (st != DS_OK) {
    free(*out);
    *out = NULL;
  }
  return st;
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

static ds_status run_one(struct config_run *c, double bucket_mb,
                         struct ds_summary *sum, double **bucket_bytes,
                         struct ds_err *err) {
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

  int32_t n_samples = o->samples > 1 ? o->samples : 1;
  int outputs = o->trace || o->schedule || c->capture;
  DS_CHECK_GOTO(ds_report_times_new(sched, o->trace || c->capture, &tm), st, oom);
  rank_time = malloc((size_t)c->world * sizeof *rank_time);
  times = malloc((size_t)n_samples * sizeof *times);
  /* --jitter draws per op; --straggler is per rank (the executor multiplies
   * the two for compute ops) */
  if (o->jitter) scale = malloc(sched->n_ops * sizeof *scale);
  if (o->n_stragglers > 0) DS_CHECK_GOTO(rank_factors(c, &factor, err), st, out);
  if (!rank_time || !times || (o->jitter && !scale)) {
    st = DS_ENOMEM;
    goto oom;
  }
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
                                   .batch = c->batch};
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
    if (outputs) {
      /* the trace's rows need every rank's ops: the template is them when
       * every block has one rank, else they are expanded (O(ops x ranks),
       * as the trace itself) */
      const struct ds_schedule *all = sched->tmpl;
      if (sched->n_ops != sched->tmpl->n_ops && (o->trace || c->capture)) {
        DS_CHECK_GOTO(ds_shared_expand(sched, &expanded), st, oom);
        all = expanded;
      }
      int32_t steady_iter = plan.rebuild_iter < o->iters ? plan.rebuild_iter : o->iters;
      DS_CHECK_GOTO(write_outputs(c, &plan.rebuilt, steady_iter, all, iter_at, tm.start, tm.end,
                                  err), st, out);
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
  sum->bucket_mb = bucket_mb;
  sum->first_bucket_mb = ds_options_first_bucket_mb(o, bucket_mb);
  sum->bucket_rule = plan.rule;
  sum->n_buckets = plan.rebuilt.n;
  if (o->strategy_id != DS_STRATEGY_DDP) {
    /* dp's "buckets" are reduce_add_coalesced's groups; single has none */
    sum->bucket_mb = o->strategy_id == DS_STRATEGY_DP ? DS_DP_COALESCE_BYTES / DS_UNITS_MIB : 0;
    sum->n_buckets = o->strategy_id == DS_STRATEGY_DP ? c->dp_chunks.n : 0;
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

/* The optimizer column: the loop's optimizer, and its weight decay when
 * --weight-decay (and --no-bn-weight-decay) set one, which changes the
 * step. String literals: a sweep's rows come back from its workers with
 * only their own strings repointed (sweep.c). */
static const char *optimizer_field(enum ds_optimizer opt, const struct ds_options *o) {
  static const char *const decayed[][2] = {
      [DS_OPT_SGD] = {"sgd;weight_decay", "sgd;weight_decay;no_bn_weight_decay"},
      [DS_OPT_ADAM] = {"adam;weight_decay", "adam;weight_decay;no_bn_weight_decay"}};
  if (!o->weight_decay || opt == DS_OPT_NONE) return ds_optimizer_name(opt);
  return decayed[opt][o->no_bn_weight_decay ? 1 : 0];
}

/* Appends one ';'-separated item to buf (never overflows). */
static void append_item(char *buf, size_t cap, const char *item) {
  size_t used = strlen(buf);
  snprintf(buf + used, cap - used, "%s%s", used ? ";" : "", item);
}

/* --pytorch-version as an options item ("pytorch=1.9"). */
static const char *pytorch_item(enum ds_ddp_rules rules) {
  return rules == DS_DDP_RULES_TORCH_1_4 ? "pytorch=1.4" : "pytorch=1.9";
}

/* The DDP options in effect, as one CSV-safe field. */
static void describe_ddp_options(const struct ds_options *o, int32_t grad_accum, char *buf,
                                 size_t cap) {
  char k[32];
  buf[0] = '\0';
  if (o->no_overlap) append_item(buf, cap, "no_overlap");
  if (o->no_sync > 1) {
    snprintf(k, sizeof k, "no_sync=%d", o->no_sync);
    append_item(buf, cap, k);
  }
  if (o->grad_as_bucket_view) append_item(buf, cap, "grad_as_bucket_view");
  if (o->no_broadcast_buffers) append_item(buf, cap, "broadcast_buffers=False");
  if (o->find_unused_parameters) append_item(buf, cap, "find_unused_parameters");
  if (o->static_graph) append_item(buf, cap, "static_graph");
  if (o->ddp_rules != DS_DDP_RULES_CURRENT) append_item(buf, cap, pytorch_item(o->ddp_rules));
  if (grad_accum > 1) {
    snprintf(k, sizeof k, "grad_accum=%d", grad_accum);
    append_item(buf, cap, k);
  }
  if (o->free_loop) append_item(buf, cap, "loop=free");
  if (o->comm_hook.kind != DS_HOOK_NONE) {
    char h[20];
    ds_comm_hook_name(&o->comm_hook, h, sizeof h);
    snprintf(k, sizeof k, "comm_hook=%s", h);
    append_item(buf, cap, k);
  }
  if (buf[0] == '\0') snprintf(buf, cap, "none");
}

/* Who holds what, for ds_ddp_memory (memory.h), as the options say: .grad
 * live at backward's start when 1.4/1.9's zero_grad() keeps it or an
 * earlier micro-step of gradient accumulation or no_sync left it (the
 * later ones add into it); the step's loop or foreach, and weight decay.
 * The caller adds DDP's buckets. */
static struct ds_memory_options memory_options(const struct config_run *c,
                                               const struct ds_options *o,
                                               enum ds_strategy strategy) {
  return (struct ds_memory_options){
      .grads_kept = c->compute.grad_kept || c->grad_accum > 1 ||
                    (strategy == DS_STRATEGY_DDP && o->no_sync > 1),
      .step_numel = (double)c->model->total_numel,
      .optimizer_loop = c->compute.optimizer_loop,
      .weight_decay = c->compute.weight_decay};
}

/* DDP's memory (ds_ddp_memory under mo) with the communication hook's
 * buffers on the configuration's steady-state buckets: those it allocates
 * as buckets become ready in the walk (ds_comm_hook_ready_bytes), those it
 * holds all iteration added (ds_comm_hook_memory). */
static ds_status ddp_memory_with_hook(const struct config_run *c, const struct ds_options *o,
                                      struct ds_memory_options mo, struct ds_ddp_memory *mem,
                                      struct ds_err *err) {
  struct ds_buckets bk = {0};
  double *ready = NULL;
  if (o->comm_hook.kind != DS_HOOK_NONE) {
    ready = malloc((size_t)c->model->n_layers * sizeof *ready);
    if (!ready || ds_ddp_buckets(c->model, ds_dtype_bytes(o->dtype),
                                 ds_options_first_bucket_mb(o, o->bucket_mb[0]) * DS_UNITS_MIB,
                                 o->bucket_mb[0] * DS_UNITS_MIB, DS_BUCKETS_READY,
                                 &bk) != DS_OK) {
      free(ready);
      return ds_err_set(err, DS_ENOMEM, "out of memory");
    }
    ds_comm_hook_ready_bytes(&o->comm_hook, c->model, o->dtype, &bk, ready);
    mo.hook_ready_bytes = ready;
  }
  ds_ddp_memory(c->model, &c->compute.precision, c->batch, &mo, mem);
  if (o->comm_hook.kind != DS_HOOK_NONE) {
    mem->hook = ds_comm_hook_memory(&o->comm_hook, c->model, o->dtype, &bk);
    mem->total += mem->hook;
  }
  ds_ddp_buckets_release(&bk);
  free(ready);
  return DS_OK;
}

/* NCCL's protocols for the all-reduces (--algo auto / --proto): the model
 * of the full ring, or the plain ring when --algo auto cannot have one (an
 * unknown GPU architecture), said on stderr. An explicit protocol without a
 * model is a usage error. */
static ds_status setup_nccl(struct config_run *c, const struct ds_options *o,
                            int quiet, struct ds_err *err) {
  /* coll_algo: the algorithm ("auto": NCCL's per bucket), "/" the protocol
   * ("auto": NCCL's per bucket) when NCCL's model runs it. */
  snprintf(c->coll_algo, sizeof c->coll_algo, "%s", ds_ar_algo_name(o->ar_algo));
  if (o->proto.choice == DS_PROTO_CHOICE_NONE) return DS_OK;
  struct ds_err why = {0};
  struct ds_nccl_extra extra = o->nccl_extra ? DS_NCCL_EXTRA_MEASURED : DS_NCCL_EXTRA_NONE;
  /* --calib's measured per-call launch replaces the fitted one */
  if (o->nccl_extra && c->topo->compute.nccl_launch_ns > 0)
    extra.launch_ns = c->topo->compute.nccl_launch_ns;
  const char *no;
  int nvls = !o->algo_auto && o->ar_algo == DS_AR_NVLS;
  if (ds_nccl_model_build(c->topo, &c->ring, extra, &c->nccl, &why) == DS_OK) {
    if (nvls && !ds_nccl_algo_available(&c->nccl, DS_AR_NVLS, DS_PROTO_SIMPLE, &no))
      return ds_err_set(err, DS_EUSAGE, "option --algo nvls: cannot run here: %s", no);
    c->use_nccl = 1;
    /* a --proto set: NCCL chooses among its protocols only (NCCL_PROTO) */
    if (o->proto.choice == DS_PROTO_CHOICE_AUTO) c->nccl.proto_disabled = o->proto.disabled;
    char proto[24]; /* "+" between a set's names: coll_algo is a CSV column */
    ds_proto_flag_name(&o->proto, '+', proto, sizeof proto);
    if (o->algo_auto && o->proto.choice != DS_PROTO_CHOICE_FIXED && !o->proto.disabled)
      snprintf(c->coll_algo, sizeof c->coll_algo, "auto");
    else
      snprintf(c->coll_algo, sizeof c->coll_algo, "%s/%s",
               o->algo_auto ? "auto" : ds_ar_algo_name(o->ar_algo), proto);
    return DS_OK;
  }
  /* nvls, an explicit protocol or a set of protocols needs NCCL's model */
  if (nvls) return ds_err_set(err, DS_EUSAGE, "option --algo nvls: %s", why.msg);
  DS_CHECK(ds_proto_flag_require_model("--proto", &o->proto, why.msg, err));
  /* NCCL's choice by default: where its model is unavailable (a GPU it
   * has no constants for) the plain ring runs, as the summary says; only an
   * explicit --algo gets the note */
  if (!quiet && ds_options_given(o, "--algo"))
    fprintf(stderr, "ddpsim: note: %s; --algo %s runs the plain %s\n", why.msg,
            o->algo_auto ? "auto" : ds_ar_algo_name(o->ar_algo), ds_ar_algo_name(o->ar_algo));
  return DS_OK;
}


/* The modes --calib's grouped-convolution table has ("fp32, tf32"). */
static void gconv_modes(const struct ds_gconv_table *t, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (int m = 0; m < DS_GCONV_MODES; m++)
    if (ds_gconv_has_mode(t, (enum ds_gconv_mode)m))
      used += (size_t)snprintf(buf + used, used < cap ? cap - used : 0, "%s%s",
                               used ? ", " : "", ds_gconv_mode_names[m]);
}

/* A note or warning on stderr whose %s arguments (paths from the command
 * line, GPU names from files) are written whole, their control characters
 * as '?' (ds_textout_put_printable), rather than cut to a buffer or printed
 * raw; fmt takes %s, %d and %g alone, as printf's. */
__attribute__((format(printf, 1, 2))) static void say_user(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  for (const char *p = fmt; *p; p++) {
    if (*p != '%' || !p[1]) {
      fputc(*p, stderr);
      continue;
    }
    switch (*++p) {
      case 's': ds_textout_put_printable(stderr, va_arg(ap, const char *), 0); break;
      case 'd': fprintf(stderr, "%d", va_arg(ap, int)); break;
      case 'g': fprintf(stderr, "%g", va_arg(ap, double)); break;
      default: fputc(*p, stderr); break; /* "%%" */
    }
  }
  va_end(ap);
}

/* --calib's grouped-convolution table, where it fits the topology's GPU
 * (calib.h ds_calib_gconv_fit): as measured on the GPU it names (or, a
 * file naming none, of the same SMs), moved by SMs x clock to another GPU
 * whose table entry has boost_mhz, else not applied; a note says which
 * when it is not plainly this GPU's, and when the table lacks the run's
 * mode (those convolutions then run at the conv class's rate). */
static ds_status plug_calib_gconv(struct loaded *ld, const char *gpus_path,
                                  struct ds_err *err) {
  const struct ds_gpu_spec *g = &ld->topo->gpu;
  struct ds_gpu_table table;
  DS_CHECK(ds_gpu_table_load(gpus_path, &table, err)); /* for g's smi_names */
  enum ds_gconv_fit fit = ds_calib_gconv_fit(ld->calib, g, ds_gpu_table_find(&table, g->name));
  ds_gpu_table_release(&table);
  char measured_on[160];
  const char *named = ld->calib->gconv_gpu;
  if (named[0])
    snprintf(measured_on, sizeof measured_on, "%s (%d SMs at %g MHz)", named,
             ld->calib->gconv_sms, ld->calib->gconv_clock_hz / 1e6);
  else
    snprintf(measured_on, sizeof measured_on, "a GPU of %d SMs at %g MHz", ld->calib->gconv_sms,
             ld->calib->gconv_clock_hz / 1e6);
  if (fit == DS_GCONV_FIT_REFUSED) {
    say_user(
        "ddpsim: note: --calib's grouped convolutions were measured on %s, not %s's %s "
        "(%s), which has no boost_mhz to move them to: not applied (grouped convolutions "
        "at the conv class's rate)\n",
        measured_on, ld->topo_path, g->name,
        named[0] ? "another name" : "another SM count");
    return DS_OK;
  }
  ds_calib_gconv_table(ld->calib, &ld->gconv);
  ld->compute.gconv = &ld->gconv;
  /* another GPU's: its SM cycles on g's SMs and clock (ds_gconv_ns) */
  if (fit == DS_GCONV_FIT_SCALED) ld->gconv.on_target = 0;
  enum ds_gconv_mode mode = ds_compute_gconv_mode(&ld->compute);
  if (!ds_gconv_has_mode(&ld->gconv, mode)) {
    /* nothing of the table prices this run (ds_gconv_ns gives 0) */
    char modes[64];
    gconv_modes(&ld->gconv, modes, sizeof modes);
    say_user(
        "ddpsim: note: --calib's grouped convolutions have no %s entries (the file has %s, "
        "measured on %s): this run's grouped convolutions run at the conv class's rate\n",
        ds_gconv_mode_names[mode], modes, measured_on);
  } else if (fit == DS_GCONV_FIT_SCALED) {
    say_user(
        "ddpsim: note: --calib's grouped convolutions were measured on %s, not %s's %s "
        "(%s): their SM cycles run on its %d SMs at %d MHz, not as measured\n",
        measured_on, ld->topo_path, g->name,
        named[0] ? "another name" : "another SM count", g->sms, g->boost_mhz);
  } else if (g->boost_mhz <= 0) {
    /* applied at the file's own SMs and clock (ds_gconv_ns), even where the
     * GPU table has no boost_mhz and the built-in models fall to the roofline */
    say_user(
        "ddpsim: note: --calib's grouped convolutions were measured on %s, %s's %s has "
        "no boost_mhz: their times apply as measured (the other kernel models run at the "
        "roofline)\n",
        measured_on, ld->topo_path, g->name);
  } else if (g->sms != ld->gconv.sms || g->boost_mhz * 1e6 != ld->gconv.clock_hz) {
    say_user(
        "ddpsim: note: --calib's grouped convolutions were measured on %s, %s's %s has "
        "%d at %d MHz: their times apply as measured\n",
        measured_on, ld->topo_path, g->name, g->sms, g->boost_mhz);
  }
  return DS_OK;
}

/* --calib's GPU against the topology's (calib.h ds_calib_gpu_fit), which
 * words its rates. The file's efficiencies are fractions of the measured
 * GPU's peak, and ddpsim multiplies each into this GPU's own peak: on
 * another GPU they are that GPU's fractions standing in for this one's,
 * as the GPU table's stand-ins are (the H100's matmul_half is the H200's
 * fraction), not nonsense and not a measurement of this GPU. So they
 * apply, labelled as another GPU's on the compute-rates line, with a
 * warning, rather than being refused (which would leave the typical
 * placeholders, further from any GPU); the absolute values (kernel_overhead,
 * nccl, host) apply as measured there. A file naming no GPU (older
 * ddpreal) is said to name none: which GPU it was, ddpsim cannot know. */
static ds_status note_calib_gpu(struct loaded *ld, const char *calib_path, const char *gpus_path,
                                struct ds_err *err) {
  struct ds_compute_params *p = &ld->topo->compute;
  const struct ds_calib *c = ld->calib;
  const struct ds_gpu_spec *g = &ld->topo->gpu;
  struct ds_gpu_table table;
  DS_CHECK(ds_gpu_table_load(gpus_path, &table, err)); /* for g's smi_names */
  p->calib_gpu_fit = ds_calib_gpu_fit(c, g, ds_gpu_table_find(&table, g->name));
  if (p->calib_gpu_fit == DS_CALIB_GPU_OTHER) {
    /* the table's name for the file's device name, where the table has it */
    const struct ds_gpu_info *named = ds_gpu_table_find(&table, c->gpu);
    if (!named) named = ds_gpu_table_by_smi_name(&table, c->gpu);
    ds_textout_printable(named ? named->spec.name : c->gpu, p->calib_gpu, sizeof p->calib_gpu);
    int rates = c->has_flops_efficiency || c->has_mem_efficiency;
    for (int k = 0; k < DS_CALIB_EFF_KEYS; k++) rates |= c->eff[k] > 0;
    say_user("ddpsim: warning: %s: key 'gpu': measured on %s, not %s's %s: %s; "
             "its kernel_overhead, nccl and host values apply as measured there\n",
             calib_path, c->gpu, ld->topo_path, g->name,
             rates ? "its efficiencies (fractions of that GPU's peak) stand in for this GPU's, "
                    "not as measured (the compute-rates line says so)"
                  : "it has no efficiencies");
  }
  ds_gpu_table_release(&table);
  return DS_OK;
}

static ds_status load(struct loaded *ld, const struct ds_options *o, struct ds_err *err) {
  char gpus_path[4096];
  DS_CHECK(ds_lookup_file("topologies", "topology", o->topo, ld->topo_path,
                          sizeof ld->topo_path, err));
  DS_CHECK(ds_lookup_file("models", "model", o->model, ld->model_path,
                          sizeof ld->model_path, err));
  DS_CHECK(ds_lookup_gpu_table(ld->topo_path, gpus_path, sizeof gpus_path, err));
  DS_CHECK(ds_topo_load(ld->topo_path, gpus_path, &ld->topo, err));
  if (o->calib) {
    /* A measured machine's compute factors replace the topology file's. */
    ld->calib = malloc(sizeof *ld->calib); /* its table of up to 1024 entries: not the stack */
    if (!ld->calib) return ds_err_set(err, DS_ENOMEM, "out of memory");
    ds_status cst = ds_calib_load(o->calib, ld->calib, err);
    if (cst != DS_OK) return ds_err_prefix(err, cst, "option --calib: ");
    ds_calib_apply_compute(ld->calib, &ld->topo->compute);
    ds_calib_apply_gpu(ld->calib, &ld->topo->gpu);
    DS_CHECK(note_calib_gpu(ld, o->calib, gpus_path, err));
  }
  DS_CHECK(ds_model_load(ld->model_path, &ld->model, err));
  /* --optimizer: every reader of the optimizer (compute.c, host.c,
   * memory.c, the strategies) then sees it as the file's */
  if (ds_options_given(o, "--optimizer")) ld->model->optimizer = o->optimizer;
  for (int32_t k = 0; k < o->sweep[DS_VAR_COMM_HOOK].n; k++) /* every hook of a list */
    DS_CHECK(ds_comm_hook_check_model(&o->comm_hooks[k], ld->model, err));
  DS_CHECK(ds_compute_init(ld->topo, o->dtype, o->amp, &ld->compute, err));
  ds_compute_set_tf32(&ld->compute, ld->topo, o->tf32);
  ld->compute.channels_last = o->channels_last;
  ld->compute.optimizer_loop = o->ddp_rules != DS_DDP_RULES_CURRENT;
  ld->compute.grad_kept = o->ddp_rules != DS_DDP_RULES_CURRENT;
  ld->compute.zero_grad_fill = o->ddp_rules == DS_DDP_RULES_TORCH_1_9;
  ld->compute.weight_decay = o->weight_decay;
  ld->compute.no_bn_weight_decay = o->no_bn_weight_decay;
  if (ld->calib && ld->calib->n_gconv > 0) DS_CHECK(plug_calib_gconv(ld, gpus_path, err));
  return DS_OK;
}

static ds_status check_world(const struct loaded *ld, int32_t world, struct ds_err *err) {
  if (world > ld->topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE,
                      "option --world-size: %d ranks but topology %s has %d GPUs",
                      world, ld->topo_path, ld->topo->n_gpus);
  return DS_OK;
}

/* --ring-chunks > 1 under ddp: refused where it cuts none of ddp's
 * collectives (sim/coll ds_coll_ring_chunks_use): NCCL's model runs them
 * (it pipelines by its own chunks and slices), or the all-reduce has no
 * ring step (direct, reduce-broadcast) and no buffer broadcast (a chain,
 * which the chunks cut) runs. */
static ds_status check_ddp_ring_chunks(const struct config_run *c, const struct ds_options *o,
                                       struct ds_err *err) {
  enum ds_ar_algo algo = o->algo_auto ? DS_AR_RING : o->ar_algo;
  enum ds_ring_chunks_use use = ds_coll_ring_chunks_use(DS_COLL_ALLREDUCE, algo, c->use_nccl);
  int broadcasts = !o->no_broadcast_buffers && c->model->n_buffers > 0;
  if (use == DS_RING_CHUNKS_CUT || (use == DS_RING_CHUNKS_NO_STEP && broadcasts)) return DS_OK;
  char what[96];
  snprintf(what, sizeof what, use == DS_RING_CHUNKS_NCCL ? "ddp's collectives"
                              : "ddp's run (all-reduce %s, no buffer broadcast)",
           ds_ar_algo_name(algo));
  return ds_ring_chunks_refuse(use, what, &o->proto, err);
}

/* One configuration's setup (o holds its values); quiet: notes already
 * said by configuration 0. */
static ds_status configure(struct config_run *c, const struct loaded *ld,
                           const struct ds_options *o, int quiet, struct ds_err *err) {
  const char *topo_path = ld->topo_path, *model_path = ld->model_path;
  c->topo = ld->topo;
  c->model = ld->model;
  c->compute = ld->compute;
  /* --host-scale, and the host range's re-runs (host_range.c): after --calib */
  if (o->host_scale != 1) ds_topo_scale_host(&c->compute.params, o->host_scale);
  c->world = o->world_size ? o->world_size : c->topo->n_gpus;
  if (o->strategy_id == DS_STRATEGY_SINGLE) c->world = 1; /* the baseline: one GPU */
  DS_CHECK(check_world(ld, c->world, err));
  if (o->strategy_id == DS_STRATEGY_DP && c->world > c->topo->gpus_per_node)
    return ds_err_set(err, DS_EUSAGE, "--strategy dp: torch.nn.DataParallel drives its GPUs "
                      "from one process on one node, but %d ranks span more than the %d GPUs "
                      "of a node of %s (give --world-size %d or less)", c->world,
                      c->topo->gpus_per_node, topo_path, c->topo->gpus_per_node);
  if (o->strategy_id == DS_STRATEGY_DP && o->dp_output_device >= c->world)
    return ds_err_set(err, DS_EUSAGE, "option --dp-output-device: expected a GPU index "
                      "below the world size %d, got %d", c->world, o->dp_output_device);
  c->batch = o->batch ? o->batch : c->model->default_batch;
  c->grad_accum = ds_options_grad_accum(o, c->world, c->batch, err);
  if (c->grad_accum < 0) return DS_EUSAGE;
  switch (o->coll_model) {
  case DS_COLL_CHOICE_FLOW: c->coll_model = DS_COLL_FLOW; break;
  case DS_COLL_CHOICE_AGGREGATE: c->coll_model = DS_COLL_AGGREGATE; break;
  default:
    c->coll_model = c->world > DS_AUTO_AGGREGATE_ABOVE ? DS_COLL_AGGREGATE
                                                        : DS_COLL_FLOW;
  }
  if (o->ring_chunks > 1 && c->coll_model == DS_COLL_AGGREGATE)
    return ds_err_set(err, DS_EUSAGE,
                      "--ring-chunks > 1 needs the per-flow ring; with %d ranks "
                      "--coll-model auto aggregates: add --coll-model flow", c->world);
  int32_t *gpus = malloc((size_t)c->world * sizeof *gpus);
  if (!gpus) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (int32_t r = 0; r < c->world; r++) gpus[r] = r;
  ds_status st = ds_ring_build_rails(c->topo, gpus, c->world, &c->ring, err);
  free(gpus);
  DS_CHECK(st);
  /* NCCL's protocols apply to DDP's all-reduces; dp's collectives run as
   * the flow network's broadcast/reduce/gather/scatter (docs/strategies.md). */
  if (o->strategy_id == DS_STRATEGY_DDP) DS_CHECK(setup_nccl(c, o, quiet, err));
  else snprintf(c->coll_algo, sizeof c->coll_algo, "ring");
  /* NCCL pipelines by its own chunks and slices, which its model derives
   * (ds_nccl_algo_proto, ds_nccl_chain): --ring-chunks would pipeline twice */
  if (o->strategy_id == DS_STRATEGY_DDP && c->world > 1 && o->ring_chunks > 1)
    DS_CHECK(check_ddp_ring_chunks(c, o, err));
  /* One rank has no peer: NCCL's one-rank all-reduce of DDP's bucket, in
   * place, launches nothing (src/enqueue.cc, src/device/onerank.cu
   * ncclLaunchOneRank: a cudaMemcpyAsync only out of place), and single's
   * and dp's lone GPU communicates with none, so no algorithm runs. */
  if (c->world == 1) snprintf(c->coll_algo, sizeof c->coll_algo, "none");
  describe_ddp_options(o, c->grad_accum, c->ddp_options, sizeof c->ddp_options);
  if (o->strategy_id == DS_STRATEGY_DP) {
    /* the ddp_options column carries the row's strategy's options */
    snprintf(c->ddp_options, sizeof c->ddp_options, "output_device=%d%s",
             o->dp_output_device, o->dp_parallel_loss ? ";parallel_loss" : "");
    if (ds_dp_chunks(c->model, ds_dtype_bytes(o->dtype), DS_DP_COALESCE_BYTES,
                     &c->dp_chunks) != DS_OK)
      return ds_err_set(err, DS_ENOMEM, "out of memory");
  } else if (o->strategy_id == DS_STRATEGY_SINGLE) {
    c->ddp_options[0] = '\0';
    if (c->grad_accum > 1)
      snprintf(c->ddp_options, sizeof c->ddp_options, "grad_accum=%d", c->grad_accum);
    if (o->free_loop) append_item(c->ddp_options, sizeof c->ddp_options, "loop=free");
  }
  /* PyTorch's version changes every strategy's optimizer loop and .grad
   * (ddp's and ps's lists, describe_ddp_options', say it already) */
  if ((o->strategy_id == DS_STRATEGY_SINGLE || o->strategy_id == DS_STRATEGY_DP) &&
      o->ddp_rules != DS_DDP_RULES_CURRENT)
    append_item(c->ddp_options, sizeof c->ddp_options, pytorch_item(o->ddp_rules));
  if (c->ddp_options[0] == '\0') snprintf(c->ddp_options, sizeof c->ddp_options, "none");
  int len = snprintf(c->inputs, sizeof c->inputs,
           "topo=%s model=%s strategy=%s world_size=%d batch=%lld dtype=%s amp=%s tf32=%s "
           "bucket_mb=%g first_bucket_mb=%g iters=%d net=%s coll_model=%s "
           "ring_chunks=%d algo=%s nccl_extra=%s ddp_options=%s calib=%s",
           topo_path, model_path, o->strategy, c->world, (long long)c->batch,
           ds_dtype_name(o->dtype), ds_amp_name(o->amp), ds_tf32_name(o->tf32), o->bucket_mb[0],
           ds_options_first_bucket_mb(o, o->bucket_mb[0]),
           o->iters, o->net_mode == DS_NET_MAXMIN ? "maxmin" : "alpha-beta",
           c->coll_model == DS_COLL_FLOW ? "flow" : "aggregate", o->ring_chunks,
           c->coll_algo, o->nccl_extra ? "measured" : "none", c->ddp_options,
           o->calib ? o->calib : "none");
  if (len >= 0 && (size_t)len < sizeof c->inputs && o->channels_last)
    len += snprintf(c->inputs + len, sizeof c->inputs - (size_t)len, " channels_last=1");
  if (len >= 0 && (size_t)len < sizeof c->inputs && ds_options_given(o, "--optimizer"))
    len += snprintf(c->inputs + len, sizeof c->inputs - (size_t)len, " optimizer=%s",
                    ds_optimizer_name(o->optimizer));
  if (len >= 0 && (size_t)len < sizeof c->inputs && o->weight_decay)
    len += snprintf(c->inputs + len, sizeof c->inputs - (size_t)len, " weight_decay=1");
  if (len >= 0 && (size_t)len < sizeof c->inputs && o->no_bn_weight_decay)
    len += snprintf(c->inputs + len, sizeof c->inputs - (size_t)len, " no_bn_weight_decay=1");
  if (len >= 0 && (size_t)len < sizeof c->inputs && o->host_scale != 1)
    len += snprintf(c->inputs + len, sizeof c->inputs - (size_t)len, " host_scale=%g",
                    o->host_scale);
  if (len >= 0 && (size_t)len < sizeof c->inputs && o->jitter)
    len += snprintf(c->inputs + len, sizeof c->inputs - (size_t)len, " jitter_cv=%g",
                    o->jitter_cv);
  for (int32_t k = 0; k < o->n_stragglers && len >= 0 && (size_t)len < sizeof c->inputs; k++)
    len += snprintf(c->inputs + len, sizeof c->inputs - (size_t)len, " straggler=%d:%g",
                    o->stragglers[k].rank, o->stragglers[k].factor);
  if (len < 0 || (size_t)len >= sizeof c->inputs)
    return ds_err_set(err, DS_EUSAGE,
                      "input paths too long for the trace header (%zu bytes max)",
                      sizeof c->inputs - 1);
  return DS_OK;
}

struct sweep_ctx {
  const struct ds_options *opt;
  const struct loaded *ld;
  struct ds_run_trace *capture; /* ds_run_capture (one configuration), or NULL */
  int quiet;                    /* configuration 0's notes said already */
};

/* The ps row's trace (every op of every step, ids of the one-step
 * schedule) and schedule (one step: what each rank runs, with same-rank
 * dependencies; the cross-rank order is sim/train/ps.c's). */
static ds_status write_ps_outputs(const struct config_run *c, const struct ds_ps_result *r,
                                  const char *inputs, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_csv_meta meta = {"ddpsim " DS_VERSION, inputs, o->seed, NULL};
  struct ds_trace *trace = NULL;
  ds_status st = DS_OK;
  if (o->schedule) DS_CHECK(ds_schedule_write_csv(o->schedule, r->step, &meta, err));
  if (!o->trace && !c->capture) return DS_OK;
  DS_CHECK_GOTO(ds_trace_new("sim", &trace), st, oom);
  size_t ns = r->step->n_ops;
  for (size_t i = 0; i < r->all->n_ops; i++) {
    struct ds_trace_row row = {r->step, (uint32_t)(i % ns), (int32_t)(i / ns),
                               r->op_start_ns[i], r->op_end_ns[i]};
    DS_CHECK_GOTO(ds_trace_add(trace, &row), st, oom);
  }
  if (o->trace) DS_CHECK_GOTO(ds_trace_write_csv(o->trace, trace, &meta, err), st, out);
  if (c->capture) DS_CHECK_GOTO(keep_trace(c->capture, trace, inputs, o->seed), st, oom);
  st = DS_OK;
  goto out;
oom:
  ds_err_set(err, st, "writing outputs: out of memory");
out:
  ds_trace_free(trace);
  return st;
}

/* Per-GPU memory of the ps row: GPU 0, the fullest other GPU, and the
 * breakdown of the fullest of all (a server's GPU). */
static ds_status ps_memory(const struct config_run *c, struct ds_summary *s,
                           struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_ps_shards sh;
  DS_CHECK(ds_ps_shard(c->model, o->ps_servers, c->world, &sh, err));
  for (int32_t g = 0; g < c->world; g++) {
    struct ds_ddp_memory m;
    struct ds_memory_options mo = memory_options(c, o, DS_STRATEGY_PS);
    ds_ps_memory(c->model, &c->compute.precision, c->batch, &mo, &sh, c->world, g, &m);
    if (g == 0) s->peak_mem_gib_gpu0 = m.total / DS_UNITS_GIB;
    else if (m.total / DS_UNITS_GIB > s->peak_mem_gib_other)
      s->peak_mem_gib_other = m.total / DS_UNITS_GIB;
    if (g == 0 || m.total > s->mem.total) s->mem = m;
  }
  s->peak_mem_gib = s->mem.total / DS_UNITS_GIB;
  s->gpu_mem_gib = c->topo->gpu.mem_bytes / DS_UNITS_GIB;
  ds_ps_shards_release(&sh);
  return DS_OK;
}

/* After a row's run: what its pricing charged (compute.h struct
 * ds_compute_charged, which run_config points c->compute at): PowerSGD's
 * GEMM rate among the compute rates, and the kernel models. Their pass
 * counts come from a census that prices each layer's forward and backward
 * and the loss once at the row's batch (the run prices a layer as often as
 * its schedule asks, so its own counts are no count of passes). */
static void record_charged(const struct config_run *c, struct ds_summary *s) {
  const struct ds_compute_charged *ch = c->compute.charged;
  if (ch && ch->grad_gemm) ds_rates_add_grad_gemm(&c->compute, &s->rates);
  struct ds_compute_charged census = {0};
  struct ds_compute priced = c->compute;
  priced.charged = &census;
  for (int32_t i = 0; i < c->model->n_layers; i++) {
    ds_compute_fwd_ns(&priced, &c->model->layers[i], c->batch);
    ds_compute_bwd_ns(&priced, &c->model->layers[i], c->batch);
  }
  double loss_bytes;
  ds_compute_loss_ns(&priced, c->model, (double)c->batch, &loss_bytes);
  ds_kernel_models_fill(&c->compute, c->topo->gpu.name, ch ? ch->kernel_models : 0, &census,
                        &s->kernel_models);
}

/* --strategy ps: sim/train/ps.c runs its own event loop (the order in which an
 * asynchronous server applies pushes is no static schedule); this fills
 * the row from its result, once per --samples seed. */
static ds_status run_ps(struct config_run *c, struct ds_summary *s, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_ps_result r = {0};
  double *factor = NULL, *times = NULL;
  int32_t n_samples = o->samples > 1 ? o->samples : 1;
  char inputs[sizeof c->inputs + 64];
  ds_status st;
  DS_CHECK(rank_factors(c, &factor, err));
  struct ds_ps_options po = {.world_size = c->world, .batch = c->batch,
                             .n_servers = o->ps_servers,
                             .mode = o->ps_async ? DS_PS_ASYNC : DS_PS_SYNC,
                             .push = o->ps_push_per_layer ? DS_PS_PUSH_PER_LAYER
                                                          : DS_PS_PUSH_AFTER_BACKWARD,
                             .iters = o->iters, .net_mode = o->net_mode,
                             .rank_factor = factor, .jitter = o->jitter,
                             .jitter_cv = o->jitter_cv};
  /* the options column: mode, servers, stragglers */
  int len = snprintf(c->ddp_options, sizeof c->ddp_options, "mode=%s;servers=%d%s",
                     ds_ps_mode_name(po.mode), o->ps_servers,
                     o->ps_push_per_layer ? ";push=per-layer" : "");
  for (int32_t k = 0; k < o->n_stragglers && len > 0 && (size_t)len < sizeof c->ddp_options;
       k++)
    len += snprintf(c->ddp_options + len, sizeof c->ddp_options - (size_t)len,
                    ";straggler=%d:%g", o->stragglers[k].rank, o->stragglers[k].factor);
  if (o->ddp_rules != DS_DDP_RULES_CURRENT)
    append_item(c->ddp_options, sizeof c->ddp_options, pytorch_item(o->ddp_rules));
  snprintf(inputs, sizeof inputs, "%s ps_mode=%s ps_servers=%d ps_push=%s", c->inputs,
           ds_ps_mode_name(po.mode), o->ps_servers, ds_ps_push_name(po.push));
  times = malloc((size_t)n_samples * sizeof *times);
  if (!times) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
    goto out;
  }
  DS_CHECK_GOTO(ps_memory(c, s, err), st, out);
  for (int32_t k = 0; k < n_samples; k++) {
    po.seed = o->seed + (uint64_t)k;
    DS_CHECK_GOTO(ds_ps_run(c->topo, c->model, &c->compute, &po, &r, err), st, out);
    /* The timing fields: analysis/metrics.c's definitions on the last
     * iteration's ops, as for every strategy (and as `ddpsim analyze` of the
     * trace); throughput and the per-worker step times are ps's own. */
    size_t ns = r.step->n_ops, last = (size_t)(o->iters - 1) * ns;
    /* sample 0's timing fields are the row's (ds_report_measure writes
     * those alone) */
    struct ds_summary one = {0}, first_sum = {0}, *timed = k == 0 ? s : &one;
    if (ds_report_measure(r.all, last, ns, r.op_start_ns, r.op_end_ns, timed) != DS_OK ||
        ds_report_measure(r.all, 0, ns, r.op_start_ns, r.op_end_ns, &first_sum) != DS_OK) {
      st = ds_err_set(err, DS_ENOMEM, "out of memory");
      goto out;
    }
    times[k] = timed->iter_ms;
    if (k == 0) {
      s->first_iter_ms = first_sum.iter_ms;
      s->samples_per_s = r.samples_per_s;
      s->staleness_mean = r.staleness_mean;
      s->staleness_max = r.staleness_max;
      s->worker_step_min_ms = s->worker_step_max_ms = r.worker_step_ms[0];
      for (int32_t w = 1; w < c->world; w++) {
        double t = r.worker_step_ms[w];
        if (t < s->worker_step_min_ms) s->worker_step_min_ms = t;
        if (t > s->worker_step_max_ms) s->worker_step_max_ms = t;
      }
      if (o->trace || o->schedule || c->capture)
        DS_CHECK_GOTO(write_ps_outputs(c, &r, inputs, err), st, out);
    }
    ds_ps_result_release(&r);
  }
  if (o->jitter || o->samples > 1) {
    s->has_quantiles = 1;
    s->samples = n_samples;
    s->jitter_cv = o->jitter ? o->jitter_cv : 0;
    ds_jitter_quantiles(times, (size_t)n_samples, &s->iter_p50_ms, &s->iter_p95_ms,
                        &s->iter_p99_ms);
  }
  s->has_ps = 1;
  s->ps_async = po.mode == DS_PS_ASYNC;
  s->ps_servers = o->ps_servers;
  ds_rates_used(&c->compute, c->model, &s->rates);
  record_charged(c, s);
  s->strategy = o->strategy;
  s->model = c->model->name;
  s->topology = c->topo->name;
  s->gpu = c->topo->gpu.name;
  s->dtype = ds_dtype_name(o->dtype);
  s->amp = ds_amp_name(o->amp);
  s->optimizer = optimizer_field(c->model->optimizer, o);
  s->net_model = o->net_mode == DS_NET_CONSTANT ? "alpha-beta" : "maxmin";
  s->coll_model = "flow";
  s->coll_algo = "p2p";
  s->ddp_options = c->ddp_options;
  s->no_sync = 1;
  s->grad_accum = 1;
  s->world_size = c->world;
  s->batch_per_gpu = c->batch;
  s->iters = o->iters;
  s->reported_iter = o->iters - 1;
  st = DS_OK;
out:
  ds_ps_result_release(&r);
  free(times);
  free(factor);
  return st;
}

/* Configuration i of the sweep into row (a ds_sweep_fn). */
static ds_status run_config(void *ctx, int64_t i, struct ds_row *row, struct ds_err *err) {
  const struct sweep_ctx *x = ctx;
  struct ds_options oc;
  ds_options_config(x->opt, i, &oc);
  struct config_run c = {.opt = &oc, .capture = x->capture};
  double *bucket_bytes = NULL;
  ds_status st;
  DS_CHECK_GOTO(configure(&c, x->ld, &oc, i != 0 || x->quiet, err), st, out);
  struct ds_compute_charged charged = {0};
  c.compute.charged = &charged; /* what the row's pricing charges (compute.h) */
  struct ds_summary *s = &row->sum;
  ds_sweep_set_ids(x->opt, &oc, s);
  switch (oc.strategy_id) {
  case DS_STRATEGY_PS:
    /* its own event loop and row (run_ps); no buckets. The speedup over
     * single is filled later for every row. */
    DS_CHECK_GOTO(run_ps(&c, s, err), st, out);
    ds_row_own(row);
    st = DS_OK;
    goto out;
  case DS_STRATEGY_DP: {
    struct ds_dp_options dopt = {.world_size = c.world, .batch = c.batch,
                                 .output_device = oc.dp_output_device,
                                 .parallel_loss = oc.dp_parallel_loss,
                                 .grad_kept = c.compute.grad_kept,
                                 .optimizer_loop = c.compute.optimizer_loop,
                                 .weight_decay = c.compute.weight_decay};
    ds_dp_memory(c.model, &c.compute.precision, &dopt, &s->dp_mem);
    s->has_dp_mem = 1;
    s->mem = (struct ds_ddp_memory){.params = s->dp_mem.gpu0.params,
                                    .grads = s->dp_mem.gpu0.grads,
                                    .optimizer = s->dp_mem.gpu0.optimizer,
                                    .activations = s->dp_mem.gpu0.activations,
                                    .total = s->dp_mem.gpu0.total};
    s->peak_mem_gib_gpu0 = s->dp_mem.gpu0.total / DS_UNITS_GIB;
    s->peak_mem_gib_other = s->dp_mem.other.total / DS_UNITS_GIB;
    break;
  }
  case DS_STRATEGY_SINGLE: { /* no bucket copies; no other GPU (0) */
    struct ds_memory_options mo = memory_options(&c, &oc, oc.strategy_id);
    ds_ddp_memory(c.model, &c.compute.precision, c.batch, &mo, &s->mem);
    s->peak_mem_gib_gpu0 = s->mem.total / DS_UNITS_GIB;
    s->peak_mem_gib_other = 0;
    break;
  }
  default: {
    struct ds_memory_options mo = memory_options(&c, &oc, oc.strategy_id);
    mo.ddp = 1;
    mo.grad_as_bucket_view = oc.grad_as_bucket_view;
    DS_CHECK_GOTO(ddp_memory_with_hook(&c, &oc, mo, &s->mem, err), st, out);
    /* every rank holds the same; "other" is 0 where there is none */
    s->peak_mem_gib_gpu0 = s->mem.total / DS_UNITS_GIB;
    s->peak_mem_gib_other = c.world > 1 ? s->peak_mem_gib_gpu0 : 0;
    break;
  }
  }
  ds_rates_used(&c.compute, c.model, &s->rates);
  s->strategy = oc.strategy;
  s->model = c.model->name;
  s->topology = c.topo->name;
  s->gpu = c.topo->gpu.name;
  s->dtype = ds_dtype_name(oc.dtype);
  s->amp = ds_amp_name(oc.amp);
  s->optimizer = optimizer_field(c.model->optimizer, &oc);
  s->net_model = oc.net_mode == DS_NET_CONSTANT ? "alpha-beta" : "maxmin";
  s->coll_model = c.coll_model == DS_COLL_FLOW ? "flow" : "aggregate";
  s->coll_algo = c.coll_algo;
  s->ddp_options = c.ddp_options;
  s->no_sync = oc.strategy_id == DS_STRATEGY_DDP ? oc.no_sync : 1; /* DDP's option */
  s->grad_accum = c.grad_accum;
  s->world_size = c.world;
  s->batch_per_gpu = c.batch;
  s->iters = oc.iters;
  s->reported_iter = oc.iters - 1;
  s->peak_mem_gib = s->mem.total / DS_UNITS_GIB;
  s->gpu_mem_gib = c.topo->gpu.mem_bytes / DS_UNITS_GIB;
  DS_CHECK_GOTO(run_one(&c, oc.bucket_mb[0], s, &bucket_bytes, err), st, out);
  record_charged(&c, s);
  /* Samples trained per second; no_sync's and --grad-accum's micro-steps
   * each take a batch. */
  s->samples_per_s = (double)c.world * (double)c.batch * ds_summary_micro_steps(s) /
                     (s->iter_ms / 1e3);
  row->bucket_bytes = bucket_bytes;
  bucket_bytes = NULL;
  ds_row_own(row);
  st = DS_OK;
out:
  free(bucket_bytes);
  ds_ring_release(&c.ring);
  ds_dp_chunks_release(&c.dp_chunks);
  return st;
}

/* Rank 0's --straggler factor in configuration i of o: the one single runs. */
static double rank0_factor(const struct ds_options *o, int64_t i) {
  struct ds_options c;
  ds_options_config(o, i, &c);
  for (int32_t k = 0; k < c.n_stragglers; k++)
    if (c.stragglers[k].rank == 0) return c.stragglers[k].factor;
  return 1;
}

/* Every row's speedup_vs_single: its samples/s over a healthy single GPU's
 * (no straggler) at the same per-GPU batch. That baseline is the run's own
 * single row at the batch when rank 0 has no straggler there, else
 * simulated here once per batch (no stragglers, no trace or schedule
 * files), so a row's speedup does not depend on whether single is listed
 * nor on a straggler's factors; a single row with a straggler on rank 0
 * reports its own slowdown (0.5 at factor 2). */
static ds_status fill_speedups(const struct ds_options *o, const struct loaded *ld,
                               struct ds_row *rows, int64_t n, struct ds_err *err) {
  for (int64_t i = 0; i < n; i++) {
    struct ds_summary *s = &rows[i].sum;
    double base = 0;
    for (int64_t j = 0; j < i && base == 0; j++)
      if (rows[j].sum.batch_per_gpu == s->batch_per_gpu && rows[j].sum.single_samples_per_s > 0)
        base = rows[j].sum.single_samples_per_s;
    for (int64_t j = 0; j < n && base == 0; j++)
      if (strcmp(rows[j].sum.strategy, "single") == 0 &&
          rows[j].sum.batch_per_gpu == s->batch_per_gpu && rank0_factor(o, j) == 1)
        base = rows[j].sum.samples_per_s;
    if (base == 0) {
      struct ds_options so = *o;
      so.strategies[0] = DS_STRATEGY_SINGLE;
      so.n_strategies = 1;
      so.trace = so.schedule = so.plot = NULL;
      so.n_stragglers = 0; /* the baseline is a healthy GPU */
      so.straggler_swept = 0;
      so.sweep[DS_VAR_STRAGGLER].n = 1;
      so.sweep[DS_VAR_BATCH].v[0] = (double)s->batch_per_gpu;
      so.sweep[DS_VAR_BATCH].n = 1;
      struct sweep_ctx ctx = {&so, ld, NULL, 0};
      struct ds_row single = {0};
      ds_status st = run_config(&ctx, 0, &single, err);
      base = single.sum.samples_per_s;
      ds_row_release(&single);
      DS_CHECK(st);
    }
    s->single_samples_per_s = base;
    s->speedup_vs_single = base > 0 ? s->samples_per_s / base : 0;
  }
  return DS_OK;
}

/* host_range.h's re-run: configuration i of o, quietly. */
static ds_status run_host_range(const void *ld, const struct ds_options *o, int64_t i,
                                struct ds_row *row, struct ds_err *err) {
  struct sweep_ctx x = {o, ld, NULL, 1};
  return run_config(&x, i, row, err);
}

/* ds_run, and ds_run_capture when capture is not NULL. */
static ds_status run_all(const struct ds_options *o, FILE *out, struct ds_run_trace *capture,
                         struct ds_err *err) {
  struct loaded ld = {0};
  struct ds_measured meas = {0};
  int64_t n = ds_options_n_configs(o);
  struct ds_row *rows = calloc((size_t)n, sizeof *rows);
  struct ds_summary *sums = calloc((size_t)n, sizeof *sums);
  ds_status st;
  if (!rows || !sums) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
    goto done;
  }
  DS_CHECK_GOTO(load(&ld, o, err), st, done);
  /* Said before any worker starts, as a single run would say it. */
  const struct ds_values *ws = &o->sweep[DS_VAR_WORLD_SIZE];
  int32_t most = 0; /* the largest world: --straggler ranks must be in it */
  for (int32_t k = 0; k < ws->n; k++) {
    DS_CHECK_GOTO(check_world(&ld, (int32_t)ws->v[k], err), st, done);
    int32_t w = ws->v[k] > 0 ? (int32_t)ws->v[k] : ld.topo->n_gpus;
    if (w > most) most = w;
  }
  DS_CHECK_GOTO(ds_options_rank_factors(o, most, NULL, err), st, done);
  /* a bad measured table fails before the work */
  if (o->measured) DS_CHECK_GOTO(ds_measured_load(o, &meas, err), st, done);
  struct sweep_ctx ctx = {o, &ld, capture, 0};
  if (capture && n != 1) {
    st = ds_err_set(err, DS_EINTERNAL, "a run's trace is kept for one configuration, not %lld",
                    (long long)n);
    goto done;
  }
  DS_CHECK_GOTO(ds_sweep_run(n, o->jobs, run_config, &ctx, rows, 1, err), st, done);
  DS_CHECK_GOTO(fill_speedups(o, &ld, rows, n, err), st, done);
  if (o->format == DS_FORMAT_TEXT) {
    int host_from_calib = ld.calib && (ld.calib->has_host_dispatch || ld.calib->has_host_node);
    DS_CHECK_GOTO(ds_host_range_fill(o, run_host_range, &ld, host_from_calib, rows, n, err), st,
                  done);
  }
  int32_t worst_mem = 0;
  for (int64_t i = 0; i < n; i++) {
    sums[i] = rows[i].sum;
    if (ds_report_peak_mem_gib(&sums[i]) > ds_report_peak_mem_gib(&sums[worst_mem]))
      worst_mem = (int32_t)i;
  }
  DS_CHECK_GOTO(ds_sweep_fill_scaling(o, sums, (int32_t)n, err), st, done);
  /* The plot is written before the report, so a failed plot prints none. */
  if (o->plot)
    DS_CHECK_GOTO(ds_sweep_plot(o, sums, (int32_t)n, o->measured ? &meas : NULL, err), st,
                  done);
  if (ds_report_print(out, o->format, sums, (int32_t)n) != 0) {
    int e = errno;
    st = ds_err_set(err, DS_EIO, "writing the report failed: %s",
                    e ? strerror(e) : "write error");
    goto done;
  }
  /* A list of strategies ends with them side by side; one strategy's sweep
   * with its best configuration. */
  if (o->format == DS_FORMAT_TEXT && o->n_strategies > 1)
    ds_report_print_side_by_side(out, sums, (int32_t)n);
  else if (o->format == DS_FORMAT_TEXT)
    ds_sweep_print_best(out, o, sums, (int32_t)n);
  if (o->measured && o->format == DS_FORMAT_TEXT)
    DS_CHECK_GOTO(ds_measured_report(out, o, sums, (int32_t)n, &meas, err), st, done);
  double mem = ds_report_peak_mem_gib(&sums[worst_mem]) * DS_UNITS_GIB;
  if (mem > ld.topo->gpu.mem_bytes && o->format == DS_FORMAT_TEXT) {
    char gpu[sizeof ld.topo->gpu.name];
    /* GiB against GiB: the table's mem is the device's capacity in bytes
     * (nvidia-smi's MiB), the peak an allocation count in bytes */
    fprintf(out, "\nwarning: %.2f GiB per GPU exceeds the %s's %.2f GiB of memory\n",
            mem / DS_UNITS_GIB, ds_textout_printable(ld.topo->gpu.name, gpu, sizeof gpu),
            ld.topo->gpu.mem_bytes / DS_UNITS_GIB);
  }
  st = DS_OK;
done:
  for (int64_t i = 0; rows && i < n; i++) ds_row_release(&rows[i]);
  free(rows);
  free(sums);
  ds_measured_release(&meas);
  ds_model_free(ld.model);
  ds_topo_free(ld.topo);
  free(ld.calib);
  return st;
}

ds_status ds_run(const struct ds_options *o, FILE *out, struct ds_err *err) {
  return run_all(o, out, NULL, err);
}

ds_status ds_run_capture(const struct ds_options *o, FILE *out, struct ds_run_trace *cap,
                         struct ds_err *err) {
  memset(cap, 0, sizeof *cap);
  ds_status st = run_all(o, out, cap, err);
  if (st == DS_OK && !cap->trace)
    st = ds_err_set(err, DS_EINTERNAL, "the run kept no trace");
  return st;
}

void ds_run_trace_release(struct ds_run_trace *cap) {
  if (!cap) return;
  ds_trace_free(cap->trace);
  cap->trace = NULL;
}
