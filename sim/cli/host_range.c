/*
 * The measured hosts' range of the host-bound rows (see host_range.h): two
 * re-runs per such row, fast and slow, through ds_sweep_run without its
 * progress line (the run's own counter has been said).
 */
#include "sim/cli/host_range.h"

#include <stdio.h>
#include <stdlib.h>

#include "sim/net/topo.h"

struct host_range_ctx {
  struct ds_options fast, slow; /* the run's options, host_scale times a factor */
  ds_host_range_fn run;
  const void *run_ctx;
  const int64_t *config;        /* [k]: the host-bound rows' configurations */
};

static ds_status run_host_range(void *ctx, int64_t j, struct ds_row *row, struct ds_err *err) {
  const struct host_range_ctx *h = ctx;
  ds_status st = h->run(h->run_ctx, j % 2 ? &h->slow : &h->fast, h->config[j / 2], row, err);
  if (st == DS_OK) return st;
  char prefix[48];
  snprintf(prefix, sizeof prefix, "host range (x%.3f): ",
           j % 2 ? ds_topo_host_factor_slowest : ds_topo_host_factor_fastest);
  return ds_err_prefix(err, st, prefix);
}

ds_status ds_host_range_fill(const struct ds_options *o, ds_host_range_fn run, const void *ctx,
                             int host_from_calib, struct ds_row *rows, int64_t n,
                             struct ds_err *err) {
  struct host_range_ctx *h = malloc(sizeof *h);
  int64_t *config = malloc((size_t)n * sizeof *config);
  struct ds_row *again = NULL;
  int64_t k = 0;
  ds_status st = DS_OK;
  if (!h || !config) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
    goto out;
  }
  for (int64_t i = 0; i < n; i++)
    if (ds_report_host_bound(&rows[i].sum)) config[k++] = i;
  if (k == 0) goto out;
  again = calloc((size_t)(2 * k), sizeof *again);
  if (!again) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
    goto out;
  }
  h->fast = *o;
  h->fast.trace = h->fast.schedule = h->fast.plot = h->fast.chrome = NULL;
  h->fast.samples = 1;
  h->slow = h->fast;
  h->fast.host_scale = o->host_scale * ds_topo_host_factor_fastest;
  h->slow.host_scale = o->host_scale * ds_topo_host_factor_slowest;
  h->run = run;
  h->run_ctx = ctx;
  h->config = config;
  DS_CHECK_GOTO(ds_sweep_run(2 * k, o->jobs, run_host_range, h, again, 0, err), st, out);
  for (int64_t j = 0; j < k; j++) {
    struct ds_summary *s = &rows[config[j]].sum;
    s->has_host_range = 1;
    s->host_from_calib = host_from_calib;
    s->host_scale = o->host_scale;
    s->host_factor_fast = ds_topo_host_factor_fastest;
    s->host_factor_slow = ds_topo_host_factor_slowest;
    s->host_fast_iter_ms = again[2 * j].sum.iter_ms;
    s->host_slow_iter_ms = again[2 * j + 1].sum.iter_ms;
  }
out:
  for (int64_t j = 0; again && j < 2 * k; j++) ds_row_release(&again[j]);
  free(again);
  free(config);
  free(h);
  return st;
}
