/*
 * The simulate command (see run.h).
 *
 * The files are loaded once (run_load.c); every configuration of a sweep
 * (sweep.c) then gets its own ring, NCCL model and options (run_setup.c)
 * and runs, in this process or in a worker process: single, dp and ddp on
 * the executor (run_schedule.c), ps its own loop (run_ps.c). Each
 * configuration is one strategy's (options.h, --strategy); every row then
 * gets its speedup over single-GPU training at its batch (fill_speedups).
 */
#include "sim/cli/run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/textout.h"
#include "base/units.h"
#include "sim/cli/host_range.h"
#include "sim/cli/report.h"
#include "sim/cli/run_load.h"
#include "sim/cli/run_memory.h"
#include "sim/cli/run_ps.h"
#include "sim/cli/run_schedule.h"
#include "sim/cli/run_setup.h"
#include "sim/cli/sweep.h"
#include "sim/cli/sweep_measured.h"
#include "sim/cli/sweep_plot.h"
#include "sim/train/ddp.h"
#include "sim/train/dp.h"
#include "sim/train/rates.h"

/* What run_config, the sweep's ds_sweep_fn, reads of the run. */
struct sweep_ctx {
  const struct ds_options *opt;
  const struct loaded *ld;
  struct ds_run_trace *capture; /* ds_run_capture (one configuration), or NULL */
  int quiet;                    /* configuration 0's notes said already */
};

/* Configuration i of the sweep into row (a ds_sweep_fn). */
static ds_status run_config(void *ctx, int64_t i, struct ds_row *row, struct ds_err *err) {
  const struct sweep_ctx *x = ctx;
  struct ds_options oc;
  ds_options_config(x->opt, i, &oc);
  struct config_run c = {.opt = &oc, .capture = x->capture};
  double *bucket_bytes = NULL;
  ds_status st;
  DS_CHECK_GOTO(ds__run_configure(&c, x->ld, &oc, i != 0 || x->quiet, err), st, out);
  struct ds_compute_charged charged = {0};
  c.compute.charged = &charged; /* what the row's pricing charges (compute.h) */
  struct ds_summary *s = &row->sum;
  ds_sweep_set_ids(x->opt, &oc, s);
  if (oc.strategy_id == DS_STRATEGY_PS) {
    /* its own event loop and row (run_ps.c); no buckets. The speedup over
     * single is filled later for every row. */
    DS_CHECK_GOTO(ds__run_ps(&c, s, err), st, out);
    DS_CHECK_GOTO(ds__run_fit_batch(&c, &oc, s, err), st, out);
    ds_row_own(row);
    st = DS_OK;
    goto out;
  }
  DS_CHECK_GOTO(ds__run_memory(&c, &oc, s, err), st, out);
  DS_CHECK_GOTO(ds__run_fit_batch(&c, &oc, s, err), st, out);
  ds_rates_used(&c.compute, c.model, &s->rates);
  s->strategy = oc.strategy;
  s->model = c.model->name;
  s->topology = c.topo->name;
  s->gpu = c.topo->gpu.name;
  s->dtype = ds_dtype_name(oc.dtype);
  s->amp = ds_amp_name(oc.amp);
  s->optimizer = ds__run_optimizer_field(c.model->optimizer, &oc);
  s->net_model = oc.net_mode == DS_NET_CONSTANT ? "alpha-beta" : "maxmin";
  s->coll_model = c.coll_model == DS_COLL_FLOW ? "flow" : "aggregate";
  s->coll_algo = c.coll_algo;
  s->ddp_options = c.ddp_options;
  ds__run_fill_provenance(&c, s);
  s->no_sync = oc.strategy_id == DS_STRATEGY_DDP ? oc.no_sync : 1; /* DDP's option */
  s->grad_accum = c.grad_accum;
  s->world_size = c.world;
  s->topology_gpus = c.topo->n_gpus;
  s->batch_per_gpu = c.batch;
  s->iters = oc.iters;
  s->reported_iter = oc.iters - 1;
  DS_CHECK_GOTO(ds__run_schedule(&c, oc.bucket_mb[0], s, &bucket_bytes, err), st, out);
  ds__run_record_charged(&c, s);
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
      /* --optimizer-batch N sets the baseline's micro-steps too, N / batch
       * on its one GPU: past the bound say so (the refusal named "world
       * size 1 x batch B", a world the run was never given, for a row that
       * ran: --world-size 4 --batch 1 --optimizer-batch 4096 is 1024
       * micro-steps a row, 4096 for the baseline) */
      int64_t b = s->batch_per_gpu;
      if (o->optimizer_batch > 0 && b > 0 && o->optimizer_batch / b > DS_GRAD_ACCUM_MAX)
        return ds_err_set(err, DS_EUSAGE, "option --optimizer-batch %lld: speedup_vs_single's "
                          "baseline, one GPU at batch %lld, would run %lld micro-steps, more "
                          "than %d (each row's are N / (world x batch), the baseline's too): "
                          "give %lld or less, or --grad-accum K (K micro-steps on every row)",
                          (long long)o->optimizer_batch, (long long)b,
                          (long long)(o->optimizer_batch / b), DS_GRAD_ACCUM_MAX,
                          (long long)(DS_GRAD_ACCUM_MAX * b));
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
  DS_CHECK_GOTO(ds__run_load(&ld, o, err), st, done);
  /* Said before any worker starts, as a single run would say it. */
  const struct ds_values *ws = &o->sweep[DS_VAR_WORLD_SIZE];
  int32_t most = 0; /* the largest world: --straggler ranks must be in it */
  for (int32_t k = 0; k < ws->n; k++) {
    DS_CHECK_GOTO(ds__run_check_world(&ld, (int32_t)ws->v[k], err), st, done);
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
    /* 2: --calib's dispatch or node (host_calibrate.py's, the hint's
     * measurement, done); 1: only its DDP keys (torch_ddp_host.py's) */
    const struct ds_calib *cb = ld.calib;
    int host_from_calib = !cb ? 0
                          : cb->has_host_dispatch || cb->has_host_node ? 2
                          : cb->has_host_ddp_grad || cb->has_host_ddp_bucket ||
                                  cb->has_host_ddp_buffer || cb->has_host_ddp_iter
                              ? 1
                              : 0;
    DS_CHECK_GOTO(ds_host_range_fill(o, run_host_range, &ld, host_from_calib, rows, n, err), st,
                  done);
  }
  for (int64_t i = 0; i < n; i++) sums[i] = rows[i].sum;
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
  if (o->format == DS_FORMAT_TEXT) {
    char gpu[sizeof ld.topo->gpu.name];
    /* GiB against GiB: the table's mem is the device's capacity in bytes
     * (nvidia-smi's MiB), the peak an allocation count in bytes */
    ds_sweep_print_memory_warnings(out, o, sums, (int32_t)n,
                                   ds_textout_printable(ld.topo->gpu.name, gpu, sizeof gpu));
  }
  st = DS_OK;
done:
  for (int64_t i = 0; rows && i < n; i++) ds_row_release(&rows[i]);
  free(rows);
  free(sums);
  ds_measured_release(&meas);
  ds__run_unload(&ld);
  return st;
}

ds_status ds_run(const struct ds_options *o, FILE *out, struct ds_err *err) {
  return run_all(o, out, NULL, err);
}

ds_status ds_run_capture(const struct ds_options *o, FILE *out, struct ds_run_trace *cap,
                         struct ds_err *err) {
  const char *plot = cap->plot; /* the caller's; the rest is filled here */
  memset(cap, 0, sizeof *cap);
  cap->plot = plot;
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
