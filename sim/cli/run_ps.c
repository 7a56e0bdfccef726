/*
 * The parameter-server row (see run_ps.h): no schedule is built ahead (the
 * order in which an asynchronous server applies pushes is no static one);
 * the row's timing fields are analysis/metrics.c's definitions on the
 * result's ops of the first and the last iteration, as for every strategy;
 * the trace comes an iteration at a time, as the run goes.
 */
#include "sim/cli/run_ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/units.h"
#include "sim/cli/run_schedule.h"
#include "sim/train/jitter.h"
#include "sim/train/ps.h"
#include "sim/train/rates.h"
#include "traces/trace.h"

/* The ps row's trace: every op of every step, each step's rows the ids of
 * the one-step schedule, handed over by ds_ps_run as each step ends
 * (ps.h on_iter). A --trace file is written as they come, so that a long
 * run's trace is big on disk, not in memory; --trace - and ds_run_capture's
 * copy are kept in memory until the run has ended (a failed run prints
 * nothing), up to half the machine's memory less one step's estimate
 * (ds_ps_options mem_limit, step_mem_limit). */
struct ps_trace {
  struct ds_trace_writer *file; /* --trace FILE, or NULL */
  struct ds_trace *mem;         /* --trace - or the capture, or NULL */
};

/* Half the machine's memory (0, no limit, where it cannot be read): what
 * one step's ops, routes and flows together with the run's window of
 * steps, or with a trace kept in memory, may hold (ds_ps_options
 * mem_limit, step_mem_limit), half because the trace's rows grow by
 * doubling. */
static uint64_t ps_mem_limit(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return (uint64_t)pages / 2 * (uint64_t)page;
}

static ds_status ps_trace_iter(void *ctx, const struct ds_schedule *step, int32_t iter,
                               const int64_t *start_ns, const int64_t *end_ns,
                               struct ds_err *err) {
  struct ps_trace *t = ctx;
  for (size_t j = 0; j < step->n_ops; j++) {
    struct ds_trace_row row = {step, (uint32_t)j, iter, start_ns[j], end_ns[j]};
    if (t->file) DS_CHECK(ds_trace_writer_add(t->file, &row, err));
    if (t->mem && ds_trace_add(t->mem, &row) != DS_OK)
      return ds_err_set(err, DS_ENOMEM, "writing outputs: out of memory");
  }
  return DS_OK;
}

/* Opens the trace's outputs before the run (meta: the file's header). */
static ds_status ps_trace_open(const struct config_run *c, const struct ds_csv_meta *meta,
                               struct ps_trace *t, struct ds_err *err) {
  const char *path = c->opt->trace;
  *t = (struct ps_trace){0};
  if (path && strcmp(path, "-") != 0)
    DS_CHECK(ds_trace_writer_open(path, "sim", meta, &t->file, err));
  if ((path && strcmp(path, "-") == 0) || c->capture)
    if (ds_trace_new("sim", &t->mem) != DS_OK) {
      ds_trace_writer_abort(t->file);
      t->file = NULL;
      return ds_err_set(err, DS_ENOMEM, "writing outputs: out of memory");
    }
  return DS_OK;
}

/* The ps row's outputs once the run has ended: the schedule (one step:
 * what each rank runs, with same-rank dependencies; the cross-rank order is
 * sim/train/ps.c's; a straggler's compute ops slowed by its factor, as
 * ps.c runs them), the trace's file, standard output, the capture. */
static ds_status ps_outputs(const struct config_run *c, const struct ds_ps_result *r,
                           const double *factor, struct ps_trace *t,
                           const struct ds_csv_meta *meta, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  if (o->schedule) DS_CHECK(ds__run_write_schedule(o->schedule, r->step, factor, meta, err));
  struct ds_trace_writer *file = t->file;
  t->file = NULL;
  DS_CHECK(ds_trace_writer_commit(file, err));
  if (!t->mem) return DS_OK;
  if (o->trace && strcmp(o->trace, "-") == 0)
    DS_CHECK(ds_trace_write_csv(o->trace, t->mem, meta, err));
  if (ds__run_trace_capture(c, t->mem, meta) != DS_OK)
    return ds_err_set(err, DS_ENOMEM, "writing outputs: out of memory");
  return DS_OK;
}

static void ps_trace_release(struct ps_trace *t) {
  ds_trace_writer_abort(t->file);
  ds_trace_free(t->mem);
  t->file = NULL;
  t->mem = NULL;
}

/* Per-GPU memory of the ps row: GPU 0, the fullest other GPU, and the
 * breakdown of the fullest of all (a server's GPU). */
ds_status ds__run_ps_memory(const struct config_run *c, struct ds_summary *s,
                            struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_ps_shards sh;
  DS_CHECK(ds_ps_shard(c->model, o->ps_servers, c->world, &sh, err));
  /* each GPU's servers' parameters, summed in server order once */
  double *stepped = calloc((size_t)c->world, sizeof *stepped);
  if (!stepped) {
    ds_ps_shards_release(&sh);
    return ds_err_set(err, DS_ENOMEM, "out of memory");
  }
  for (int32_t k = 0; k < sh.n; k++) stepped[sh.gpu[k]] += (double)sh.numel[k];
  for (int32_t g = 0; g < c->world; g++) {
    struct ds_ddp_memory m;
    struct ds_memory_options mo = ds__run_memory_options(c, o, DS_STRATEGY_PS);
    ds_ps_memory_stepped(c->model, &c->compute.precision, c->batch, &mo, stepped[g], c->world,
                         &m);
    if (g == 0) s->peak_mem_gib_gpu0 = m.total / DS_UNITS_GIB;
    else if (m.total / DS_UNITS_GIB > s->peak_mem_gib_other)
      s->peak_mem_gib_other = m.total / DS_UNITS_GIB;
    if (g == 0 || m.total > s->mem.total) s->mem = m;
  }
  s->peak_mem_gib = s->mem.total / DS_UNITS_GIB;
  s->gpu_mem_gib = c->topo->gpu.mem_bytes / DS_UNITS_GIB;
  free(stepped);
  ds_ps_shards_release(&sh);
  return DS_OK;
}

/* --strategy ps: sim/train/ps.c runs its own event loop (the order in which an
 * asynchronous server applies pushes is no static schedule); this fills
 * the row from its result, once per --samples seed. */
ds_status ds__run_ps(struct config_run *c, struct ds_summary *s, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_ps_result r = {0};
  struct ps_trace trace = {0};
  double *factor = NULL, *times = NULL;
  int32_t n_samples = o->samples > 1 ? o->samples : 1;
  char inputs[sizeof c->inputs + 64];
  ds_status st;
  DS_CHECK(ds__run_rank_factors(c, &factor, err));
  char advice[512];
  ds__run_work_advice(c, 0, advice, sizeof advice);
  struct ds_ps_options po = {.world_size = c->world, .batch = c->batch,
                             .n_servers = o->ps_servers,
                             .mode = o->ps_async ? DS_PS_ASYNC : DS_PS_SYNC,
                             .push = o->ps_push_per_layer ? DS_PS_PUSH_PER_LAYER
                                                          : DS_PS_PUSH_AFTER_BACKWARD,
                             .iters = o->iters, .net_mode = o->net_mode,
                             .rank_factor = factor, .jitter = o->jitter,
                             .jitter_cv = o->jitter_cv, .work_limit = DS_RUN_WORK_LIMIT,
                             .work_advice = advice};
  /* the options column: mode, servers, stragglers */
  int len = snprintf(c->ddp_options, sizeof c->ddp_options, "mode=%s;servers=%d%s",
                     ds_ps_mode_name(po.mode), o->ps_servers,
                     o->ps_push_per_layer ? ";push=per-layer" : "");
  for (int32_t k = 0; k < o->n_stragglers && len > 0 && (size_t)len < sizeof c->ddp_options;
       k++)
    len += snprintf(c->ddp_options + len, sizeof c->ddp_options - (size_t)len,
                    ";straggler=%d:%g", o->stragglers[k].rank, o->stragglers[k].factor);
  if (o->ddp_rules != DS_DDP_RULES_CURRENT)
    ds__run_append_item(c->ddp_options, sizeof c->ddp_options, ds__run_pytorch_item(o->ddp_rules));
  snprintf(inputs, sizeof inputs, "%s ps_mode=%s ps_servers=%d ps_push=%s", c->inputs,
           ds_ps_mode_name(po.mode), o->ps_servers, ds_ps_push_name(po.push));
  times = malloc((size_t)n_samples * sizeof *times);
  if (!times) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
    goto out;
  }
  DS_CHECK_GOTO(ds__run_ps_memory(c, s, err), st, out);
  struct ds_csv_meta meta = {"ddpsim " DS_VERSION, inputs, o->seed, NULL, 0};
  for (int32_t k = 0; k < n_samples; k++) {
    po.seed = o->seed + (uint64_t)k;
    /* sample 0's trace (the seed the files name) */
    po.on_iter = NULL;
    po.on_iter_ctx = NULL;
    po.kept_bytes_per_op = 0;
    /* one step's workers x servers ops, routes and flows, and with it
     * (ps.h step_mem_limit: the step's estimate taken from the same
     * half) the window of steps the run holds, or a trace kept in memory */
    po.mem_limit = ps_mem_limit();
    po.step_mem_limit = po.mem_limit;
    if (k == 0 && (o->trace || c->capture)) {
      DS_CHECK_GOTO(ps_trace_open(c, &meta, &trace, err), st, out);
      po.on_iter = ps_trace_iter;
      po.on_iter_ctx = &trace;
      /* a row per op kept, and the capture's copy of the op too
       * (ds_trace_detach) */
      if (trace.mem) {
        po.kept_bytes_per_op = (double)sizeof(struct ds_trace_row) +
                               (c->capture ? (double)sizeof(struct ds_trace_row) +
                                                 (double)sizeof(struct ds_op)
                                           : 0);
        po.kept_by = c->capture ? "the timeline (--plot, --chrome)"
                                : "--trace - (a --trace file is written as the run goes)";
      }
    }
    DS_CHECK_GOTO(ds_ps_run(c->topo, c->model, &c->compute, &po, &r, err), st, out);
    /* The timing fields: analysis/metrics.c's definitions on the last
     * iteration's ops, as for every strategy (and as `ddpsim analyze` of the
     * trace), with GPU 0's ops of earlier iterations that may run in rank
     * 0's own step (async); throughput and the per-worker step times are
     * ps's own. */
    size_t ns = r.step->n_ops;
    /* sample 0's timing fields are the row's (ds_report_measure writes
     * those alone) */
    struct ds_summary one = {0}, first_sum = {0}, *timed = k == 0 ? s : &one;
    if (ds_report_measure_iter_among(r.step->ops, ns, r.last_start_ns, r.last_end_ns,
                                     r.before_last_rank0, r.n_before_last_rank0,
                                     r.before_last_end_ns, r.before_last_rank0_end_ns,
                                     timed) != DS_OK ||
        ds_report_measure_iter(r.step->ops, ns, r.first_start_ns, r.first_end_ns,
                               INT64_MIN, INT64_MIN, &first_sum) != DS_OK) {
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
        DS_CHECK_GOTO(ps_outputs(c, &r, factor, &trace, &meta, err), st, out);
      ps_trace_release(&trace);
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
  /* Interference (the interference_ms column, the text's line): none. A
   * push or pull is a flow or a device-local copy, not an NCCL kernel, so
   * it holds no SMs or HBM beside rank 0's kernels (interference.h), and
   * comm_interference applies while collectives run, which ps has none of. */
  s->interference_ms = 0;
  s->has_ps = 1;
  s->ps_async = po.mode == DS_PS_ASYNC;
  s->ps_servers = o->ps_servers;
  ds_rates_used(&c->compute, c->model, &s->rates);
  ds__run_record_charged(c, s);
  s->strategy = o->strategy;
  s->model = c->model->name;
  s->topology = c->topo->name;
  s->gpu = c->topo->gpu.name;
  s->dtype = ds_dtype_name(o->dtype);
  s->amp = ds_amp_name(o->amp);
  s->optimizer = ds__run_optimizer_field(c->model->optimizer, o);
  s->net_model = o->net_mode == DS_NET_CONSTANT ? "alpha-beta" : "maxmin";
  s->coll_model = "flow";
  s->coll_algo = "p2p";
  s->ddp_options = c->ddp_options;
  ds__run_fill_provenance(c, s);
  s->no_sync = 1;
  s->grad_accum = 1;
  s->world_size = c->world;
  s->topology_gpus = c->topo->n_gpus;
  s->batch_per_gpu = c->batch;
  s->iters = o->iters;
  s->reported_iter = o->iters - 1;
  st = DS_OK;
out:
  ps_trace_release(&trace);
  ds_ps_result_release(&r);
  free(times);
  free(factor);
  return st;
}
