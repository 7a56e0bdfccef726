/*
 * The simulate command (see run.h).
 *
 * For each bucket cap, one schedule holds every simulated iteration:
 * iteration 0 with DDP's single bucket, then iters-1 copies of the rebuilt
 * steady state. Iterations are not separated by any barrier: each rank's
 * streams simply run their ops in order, so iteration i+1's forward starts
 * on a rank when its optimizer step of iteration i ends. The last iteration
 * is reported.
 *
 * The files are loaded once; every configuration of a sweep (sweep.c) then
 * gets its own ring, NCCL model and schedule, in this process or in a
 * worker process. With --samples or --jitter each configuration's schedule
 * runs once per seed, with its own per-op duration multipliers (jitter.c).
 */
#include "run.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../traces/trace.h"
#include "calib.h"
#include "coll.h"
#include "compute.h"
#include "ddp.h"
#include "exec.h"
#include "jitter.h"
#include "lookup.h"
#include "model.h"
#include "nccl_model.h"
#include "report.h"
#include "sweep.h"
#include "topo.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)

/* What every configuration shares: the loaded files. */
struct loaded {
  struct ds_topo *topo;
  struct ds_model *model;
  struct ds_compute compute;
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
  char coll_algo[32];        /* "ring", "ring/auto", "ring/LL128", ... */
  char ddp_options[128];     /* "none", or e.g. "no_overlap;no_sync=4" */
  char inputs[1024];
};

static ds_status build_iteration(const struct config_run *c,
                                 const struct ds_buckets *bk, int64_t id_base,
                                 int64_t coll_base, struct ds_schedule *s,
                                 struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_ddp_options dopt = {
      c->world, c->batch, &c->ring, c->use_nccl ? &c->nccl : NULL,
      o->proto_choice == DS_PROTO_CHOICE_FIXED ? o->proto_fixed : DS_PROTO_COUNT,
      o->no_overlap, o->no_sync};
  ds_status st = ds_ddp_build(c->model, &c->compute, &dopt, bk, id_base,
                              coll_base, s);
  if (st != DS_OK)
    return ds_err_set(err, st, "building the DDP schedule failed: %s",
                      ds_status_message(st));
  return DS_OK;
}

static ds_status write_outputs(const struct config_run *c,
                               const struct ds_buckets *steady_bk,
                               const struct ds_schedule *all, size_t n_first,
                               const int64_t *start, const int64_t *end,
                               struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_schedule *steady = NULL;
  struct ds_trace *trace = NULL;
  struct ds_csv_meta meta = {"ddpsim " DS_VERSION, c->inputs, o->seed, NULL};
  ds_status st;
  DS_CHECK_GOTO(ds_schedule_new(c->world, &steady), st, out);
  DS_CHECK_GOTO(build_iteration(c, steady_bk, 0, 0, steady, err), st, out);
  if (o->schedule)
    DS_CHECK_GOTO(ds_schedule_write_csv(o->schedule, steady, &meta, err), st, out);
  if (o->trace) {
    size_t ns = steady->n_ops;
    DS_CHECK_GOTO(ds_trace_new("sim", &trace), st, out);
    for (size_t i = 0; i < all->n_ops; i++) {
      /* Iteration 0's ops are the first n_first of `all` (with their own
       * ids); later iterations are copies of `steady`, whose ids the trace
       * carries so that it joins with a replay of the schedule file. */
      struct ds_trace_row row = {all, (uint32_t)i, 0, start[i], end[i]};
      if (i >= n_first) {
        row.sched = steady;
        row.op = (uint32_t)((i - n_first) % ns);
        row.iter = (int32_t)(1 + (i - n_first) / ns);
      }
      DS_CHECK_GOTO(ds_trace_add(trace, &row), st, out);
    }
    DS_CHECK_GOTO(ds_trace_write_csv(o->trace, trace, &meta, err), st, out);
  }
  st = DS_OK;
out:
  if (st == DS_ENOMEM) ds_err_set(err, st, "writing outputs: out of memory");
  ds_trace_free(trace);
  ds_schedule_free(steady);
  return st;
}

static ds_status run_one(struct config_run *c, double bucket_mb,
                         struct ds_summary *sum, double **bucket_bytes,
                         struct ds_err *err) {
  const struct ds_options *o = c->opt;
  struct ds_buckets first = {0}, steady = {0};
  struct ds_schedule *all = NULL;
  struct ds_exec *ex = NULL;
  int64_t *start = NULL, *end = NULL, *rank_time = NULL;
  double *times = NULL, *scale = NULL;
  int dsz = ds_dtype_bytes(o->dtype);
  ds_status st;

  /* Iteration 0 has one bucket of everything, unless find_unused_parameters:
   * then the buckets iteration 0 builds (reverse registration order, the
   * same caps) are kept and never rebuilt. */
  DS_CHECK_GOTO(ds_ddp_buckets(c->model, dsz, o->first_bucket_mb * MIB, bucket_mb * MIB,
                               !o->find_unused_parameters, &first), st, oom);
  DS_CHECK_GOTO(ds_ddp_buckets(c->model, dsz, o->first_bucket_mb * MIB,
                               bucket_mb * MIB, 0, &steady), st, oom);
  DS_CHECK_GOTO(ds_schedule_new(c->world, &all), st, oom);
  DS_CHECK_GOTO(build_iteration(c, &first, 0, 0, all, err), st, out);
  size_t n_first = all->n_ops;
  for (int32_t it = 1; it < o->iters; it++) {
    size_t before = all->n_ops;
    DS_CHECK_GOTO(build_iteration(c, &steady, (int64_t)before,
                                  first.n + (int64_t)(it - 1) * steady.n, all, err),
                  st, out);
  }
  size_t ns = (all->n_ops - n_first) / (size_t)(o->iters - 1);
  DS_CHECK_GOTO(ds_schedule_validate(all, err), st, out);

  int32_t n_samples = o->samples > 1 ? o->samples : 1;
  start = malloc(all->n_ops * sizeof *start);
  end = malloc(all->n_ops * sizeof *end);
  rank_time = malloc((size_t)c->world * sizeof *rank_time);
  times = malloc((size_t)n_samples * sizeof *times);
  if (o->jitter) scale = malloc(all->n_ops * sizeof *scale);
  if (!start || !end || !rank_time || !times || (o->jitter && !scale)) {
    st = DS_ENOMEM;
    goto oom;
  }
  for (int32_t k = 0; k < n_samples; k++) {
    /* Sample k: seed + k; the timing fields are sample 0's. */
    if (o->jitter) DS_CHECK_GOTO(ds_jitter_fill(all, o->jitter_cv, o->seed + (uint64_t)k,
                                                scale), st, oom);
    struct ds_exec_options eopt = {.net_mode = o->net_mode, .coll_model = c->coll_model,
                                   .ring_chunks = o->ring_chunks,
                                   .nccl = c->use_nccl ? &c->nccl : NULL,
                                   .dur_scale = scale};
    memset(rank_time, 0, (size_t)c->world * sizeof *rank_time);
    DS_CHECK_GOTO(ds_exec_new(c->topo, &eopt, &ex, err), st, out);
    DS_CHECK_GOTO(ds_exec_run(ex, all, rank_time, start, end, err), st, out);
    ds_exec_free(ex);
    ex = NULL;
    struct ds_summary one = {0};
    ds_report_measure(all, all->n_ops - ns, ns, start, end, &one);
    times[k] = one.iter_ms;
    if (k > 0) continue;
    struct ds_summary first_sum = {0};
    ds_report_measure(all, 0, n_first, start, end, &first_sum);
    ds_report_measure(all, all->n_ops - ns, ns, start, end, sum);
    sum->first_iter_ms = first_sum.iter_ms;
    if (o->trace || o->schedule)
      DS_CHECK_GOTO(write_outputs(c, &steady, all, n_first, start, end, err), st, out);
  }
  if (o->jitter || o->samples > 1) {
    sum->has_quantiles = 1;
    sum->samples = n_samples;
    sum->jitter_cv = o->jitter ? o->jitter_cv : 0;
    ds_jitter_quantiles(times, (size_t)n_samples, &sum->iter_p50_ms, &sum->iter_p95_ms,
                        &sum->iter_p99_ms);
  }
  sum->bucket_mb = bucket_mb;
  sum->n_buckets = steady.n;
  *bucket_bytes = malloc(((size_t)steady.n + 1) * sizeof **bucket_bytes);
  if (!*bucket_bytes) { st = DS_ENOMEM; goto oom; }
  for (int32_t b = 0; b < steady.n; b++) (*bucket_bytes)[b] = steady.b[b].bytes;
  sum->bucket_bytes = *bucket_bytes;

  st = DS_OK;
  goto out;
oom:
  ds_err_set(err, st, "simulation: out of memory");
out:
  ds_exec_free(ex);
  free(start);
  free(end);
  free(rank_time);
  free(times);
  free(scale);
  ds_schedule_free(all);
  ds_ddp_buckets_release(&first);
  ds_ddp_buckets_release(&steady);
  return st;
}

/* Appends one ';'-separated item to buf (never overflows). */
static void append_item(char *buf, size_t cap, const char *item) {
  size_t used = strlen(buf);
  snprintf(buf + used, cap - used, "%s%s", used ? ";" : "", item);
}

/* The DDP options in effect, as one CSV-safe field. */
static void describe_ddp_options(const struct ds_options *o, char *buf, size_t cap) {
  char k[32];
  buf[0] = '\0';
  if (o->no_overlap) append_item(buf, cap, "no_overlap");
  if (o->no_sync > 1) {
    snprintf(k, sizeof k, "no_sync=%d", o->no_sync);
    append_item(buf, cap, k);
  }
  if (o->grad_as_bucket_view) append_item(buf, cap, "grad_as_bucket_view");
  if (o->find_unused_parameters) append_item(buf, cap, "find_unused_parameters");
  if (o->static_graph) append_item(buf, cap, "static_graph");
  if (buf[0] == '\0') snprintf(buf, cap, "none");
}

/* NCCL's protocols for the all-reduces (--algo auto / --proto): the model
 * of the full ring, or the plain ring when --algo auto cannot have one (an
 * unknown GPU architecture), said on stderr. An explicit protocol without a
 * model is a usage error. */
static ds_status setup_nccl(struct config_run *c, const struct ds_options *o,
                            int quiet, struct ds_err *err) {
  snprintf(c->coll_algo, sizeof c->coll_algo, "ring");
  if (o->proto_choice == DS_PROTO_CHOICE_NONE) return DS_OK;
  struct ds_err why = {0};
  struct ds_nccl_extra extra = o->nccl_extra ? DS_NCCL_EXTRA_MEASURED : DS_NCCL_EXTRA_NONE;
  if (ds_nccl_model_build(c->topo, &c->ring, extra, &c->nccl, &why) == DS_OK) {
    c->use_nccl = 1;
    snprintf(c->coll_algo, sizeof c->coll_algo, "ring/%s",
             o->proto_choice == DS_PROTO_CHOICE_FIXED ? ds_proto_name(o->proto_fixed)
                                                      : "auto");
    return DS_OK;
  }
  if (o->proto_choice == DS_PROTO_CHOICE_FIXED)
    return ds_err_set(err, DS_EUSAGE, "option --proto %s: %s",
                      ds_proto_name(o->proto_fixed), why.msg);
  if (!quiet) fprintf(stderr, "ddpsim: note: %s; --algo auto runs the plain ring\n", why.msg);
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
    struct ds_calib cal;
    DS_CHECK(ds_calib_load(o->calib, &cal, err));
    ds_calib_apply_compute(&cal, &ld->topo->compute);
  }
  DS_CHECK(ds_model_load(ld->model_path, &ld->model, err));
  DS_CHECK(ds_compute_init(ld->topo, o->dtype, &ld->compute, err));
  return DS_OK;
}

static ds_status check_world(const struct loaded *ld, int32_t world, struct ds_err *err) {
  if (world > ld->topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE,
                      "option --world-size: %d ranks but topology %s has %d GPUs",
                      world, ld->topo_path, ld->topo->n_gpus);
  return DS_OK;
}

/* One configuration's setup (o holds its values); quiet: notes already
 * said by configuration 0. */
static ds_status configure(struct config_run *c, const struct loaded *ld,
                           const struct ds_options *o, int quiet, struct ds_err *err) {
  const char *topo_path = ld->topo_path, *model_path = ld->model_path;
  c->topo = ld->topo;
  c->model = ld->model;
  c->compute = ld->compute;
  c->world = o->world_size ? o->world_size : c->topo->n_gpus;
  DS_CHECK(check_world(ld, c->world, err));
  c->batch = o->batch ? o->batch : c->model->default_batch;
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
  ds_status st = ds_ring_build(c->topo, gpus, c->world, &c->ring, err);
  free(gpus);
  DS_CHECK(st);
  DS_CHECK(setup_nccl(c, o, quiet, err));
  describe_ddp_options(o, c->ddp_options, sizeof c->ddp_options);
  int len = snprintf(c->inputs, sizeof c->inputs,
           "topo=%s model=%s strategy=%s world_size=%d batch=%lld dtype=%s "
           "bucket_mb=%g first_bucket_mb=%g iters=%d net=%s coll_model=%s "
           "ring_chunks=%d algo=%s nccl_extra=%s ddp_options=%s calib=%s",
           topo_path, model_path, o->strategy, c->world, (long long)c->batch,
           ds_dtype_name(o->dtype), o->bucket_mb[0], o->first_bucket_mb,
           o->iters, o->net_mode == DS_NET_MAXMIN ? "maxmin" : "alpha-beta",
           c->coll_model == DS_COLL_FLOW ? "flow" : "aggregate", o->ring_chunks,
           c->coll_algo, o->nccl_extra ? "measured" : "none", c->ddp_options,
           o->calib ? o->calib : "none");
  if (len >= 0 && (size_t)len < sizeof c->inputs && o->jitter)
    len += snprintf(c->inputs + len, sizeof c->inputs - (size_t)len, " jitter_cv=%g",
                    o->jitter_cv);
  if (len < 0 || (size_t)len >= sizeof c->inputs)
    return ds_err_set(err, DS_EUSAGE,
                      "input paths too long for the trace header (%zu bytes max)",
                      sizeof c->inputs - 1);
  return DS_OK;
}

struct sweep_ctx {
  const struct ds_options *opt;
  const struct loaded *ld;
};

/* Configuration i of the sweep into row (a ds_sweep_fn). */
static ds_status run_config(void *ctx, int64_t i, struct ds_row *row, struct ds_err *err) {
  const struct sweep_ctx *x = ctx;
  struct ds_options oc;
  ds_options_config(x->opt, i, &oc);
  struct config_run c = {.opt = &oc};
  double *bucket_bytes = NULL;
  ds_status st;
  DS_CHECK_GOTO(configure(&c, x->ld, &oc, i != 0, err), st, out);
  struct ds_summary *s = &row->sum;
  ds_ddp_memory(c.model, ds_dtype_bytes(oc.dtype), c.batch, oc.grad_as_bucket_view, &s->mem);
  s->strategy = oc.strategy;
  s->model = c.model->name;
  s->topology = c.topo->name;
  s->gpu = c.topo->gpu.name;
  s->dtype = ds_dtype_name(oc.dtype);
  s->net_model = oc.net_mode == DS_NET_CONSTANT ? "alpha-beta" : "maxmin";
  s->coll_model = c.coll_model == DS_COLL_FLOW ? "flow" : "aggregate";
  s->coll_algo = c.coll_algo;
  s->ddp_options = c.ddp_options;
  s->no_sync = oc.no_sync;
  s->world_size = c.world;
  s->batch_per_gpu = c.batch;
  s->first_bucket_mb = oc.first_bucket_mb;
  s->iters = oc.iters;
  s->reported_iter = oc.iters - 1;
  s->peak_mem_gib = s->mem.total / GIB;
  DS_CHECK_GOTO(run_one(&c, oc.bucket_mb[0], s, &bucket_bytes, err), st, out);
  row->bucket_bytes = bucket_bytes;
  bucket_bytes = NULL;
  ds_row_own(row);
  st = DS_OK;
out:
  free(bucket_bytes);
  ds_ring_release(&c.ring);
  return st;
}

ds_status ds_run(const struct ds_options *o, FILE *out, struct ds_err *err) {
  struct loaded ld = {0};
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
  for (int32_t k = 0; k < ws->n; k++)
    DS_CHECK_GOTO(check_world(&ld, (int32_t)ws->v[k], err), st, done);
  struct sweep_ctx ctx = {o, &ld};
  DS_CHECK_GOTO(ds_sweep_run(n, o->jobs, run_config, &ctx, rows, err), st, done);
  int32_t worst_mem = 0;
  for (int64_t i = 0; i < n; i++) {
    sums[i] = rows[i].sum;
    if (sums[i].mem.total > sums[worst_mem].mem.total) worst_mem = (int32_t)i;
  }
  /* The plot is written before the report, so a failed plot prints none. */
  if (o->plot) DS_CHECK_GOTO(ds_sweep_plot(o, sums, (int32_t)n, err), st, done);
  ds_report_print(out, o->format, sums, (int32_t)n);
  if (o->format == DS_FORMAT_TEXT) ds_sweep_print_best(out, o, sums, (int32_t)n);
  double mem = sums[worst_mem].mem.total;
  if (mem > ld.topo->gpu.mem_bytes && o->format == DS_FORMAT_TEXT)
    fprintf(out, "\nwarning: %.2f GiB per GPU exceeds the %s's %.0f GB of memory\n",
            mem / GIB, ld.topo->gpu.name, ld.topo->gpu.mem_bytes / 1e9);
  st = DS_OK;
done:
  for (int64_t i = 0; rows && i < n; i++) ds_row_release(&rows[i]);
  free(rows);
  free(sums);
  ds_model_free(ld.model);
  ds_topo_free(ld.topo);
  return st;
}
