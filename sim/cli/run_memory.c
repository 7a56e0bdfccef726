/*
 * A row's peak memory per GPU (run_memory.h): ds_ddp_memory under single
 * and ddp (with the communication hook's buffers), ds_dp_memory under dp,
 * ds_ps_memory per GPU under ps; and the largest batch that fits, bisected
 * over the same functions.
 */
#include "sim/cli/run_memory.h"

#include <stdlib.h>

#include "base/units.h"
#include "sim/cli/run_ps.h"
#include "sim/train/comm_hook.h"
#include "sim/train/ddp.h"
#include "sim/train/dp.h"

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

ds_status ds__run_memory(const struct config_run *c, const struct ds_options *o,
                         struct ds_summary *s, struct ds_err *err) {
  switch (o->strategy_id) {
  case DS_STRATEGY_PS: /* per GPU: the servers' GPUs hold shards (run_ps.c) */
    return ds__run_ps_memory(c, s, err);
  case DS_STRATEGY_DP: {
    if (c->world == 1) { /* DataParallel on one GPU runs the module alone: single's walk (dp.h) */
      struct ds_memory_options mo = ds__run_memory_options(c, o, DS_STRATEGY_SINGLE);
      ds_ddp_memory(c->model, &c->compute.precision, c->batch, &mo, &s->mem);
      s->peak_mem_gib_gpu0 = s->mem.total / DS_UNITS_GIB;
      s->peak_mem_gib_other = 0;
      break;
    }
    struct ds_dp_options dopt = {.world_size = c->world, .batch = c->batch,
                                 .output_device = o->dp_output_device,
                                 .parallel_loss = o->dp_parallel_loss,
                                 .grad_kept = c->compute.grad_kept,
                                 .optimizer_loop = c->compute.optimizer_loop,
                                 .weight_decay = c->compute.weight_decay};
    ds_dp_memory(c->model, &c->compute.precision, &dopt, &s->dp_mem);
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
    struct ds_memory_options mo = ds__run_memory_options(c, o, o->strategy_id);
    ds_ddp_memory(c->model, &c->compute.precision, c->batch, &mo, &s->mem);
    s->peak_mem_gib_gpu0 = s->mem.total / DS_UNITS_GIB;
    s->peak_mem_gib_other = 0;
    break;
  }
  default: {
    struct ds_memory_options mo = ds__run_memory_options(c, o, o->strategy_id);
    mo.ddp = 1;
    mo.grad_as_bucket_view = o->grad_as_bucket_view;
    DS_CHECK(ddp_memory_with_hook(c, o, mo, &s->mem, err));
    /* every rank holds the same; "other" is 0 where there is none */
    s->peak_mem_gib_gpu0 = s->mem.total / DS_UNITS_GIB;
    s->peak_mem_gib_other = c->world > 1 ? s->peak_mem_gib_gpu0 : 0;
    break;
  }
  }
  s->peak_mem_gib = s->mem.total / DS_UNITS_GIB;
  s->gpu_mem_gib = c->topo->gpu.mem_bytes / DS_UNITS_GIB;
  return DS_OK;
}

/* Whether configuration c at `batch` fits (with the margin when
 * with_margin: report.h), and its peak (GiB). */
static ds_status fits_at(const struct config_run *c, const struct ds_options *o, int64_t batch,
                         int with_margin, int *fits, double *peak_gib, struct ds_err *err) {
  /* both large (the NCCL model, the row's arrays): off the stack */
  struct config_run *at = malloc(sizeof *at);
  struct ds_summary *s = calloc(1, sizeof *s);
  ds_status st = DS_OK;
  if (!at || !s) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
    goto out;
  }
  *at = *c; /* read only: its ring, model and topology stay c's */
  at->batch = batch;
  DS_CHECK_GOTO(ds__run_memory(at, o, s, err), st, out);
  *fits = with_margin ? ds_report_fits_memory_with_margin(s) : ds_report_fits_memory(s);
  *peak_gib = ds_report_peak_mem_gib(s);
out:
  free(at);
  free(s);
  return st;
}

ds_status ds__run_fit_batch(const struct config_run *c, const struct ds_options *o,
                            struct ds_summary *s, struct ds_err *err) {
  if (ds_report_fits_memory_with_margin(s)) return DS_OK;
  /* over the capacity: the largest batch that fits it; within the margin
   * of it: the largest that fits with the margin */
  int with_margin = ds_report_fits_memory(s);
  /* invariant: batch lo fits (0 stands for none), batch hi does not */
  int64_t lo = 0, hi = c->batch;
  double lo_gib = 0;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    int fits = 0;
    double gib = 0;
    DS_CHECK(fits_at(c, o, mid, with_margin, &fits, &gib, err));
    if (fits) {
      lo = mid;
      lo_gib = gib;
    } else {
      hi = mid;
    }
  }
  s->fit_searched = 1;
  s->fit_searched_with_margin = with_margin;
  s->fit_batch = lo;
  s->fit_batch_mem_gib = lo_gib;
  return DS_OK;
}
