/*
 * DDP's bucket assignment (see ddp.h): the reducer's buckets of
 * parameters, in the order their gradients become ready, by the rules of
 * the PyTorch version modelled, and the plans that change the layout after
 * the first iteration. Arithmetic on the model file alone.
 */
#include "sim/train/ddp.h"

#include <stdlib.h>
#include <string.h>

#include "base/units.h"

/* Bins params[order[0..n)] as compute_bucket_assignment_by_size does
 * (c10d/reducer.cpp): a bucket closes once its bytes reach its limit, the
 * first bucket's limit is first_cap and every later one's cap; cap <= 0
 * means no limit (one bucket). */
static void bin(const struct ds_model *m, int dtype_bytes, double first_cap, double cap,
                struct ds_buckets *out) {
  struct ds_bucket *cur = NULL;
  for (int32_t i = 0; i < out->n_order; i++) {
    const struct ds_param *p = &m->params[out->order[i]];
    if (cur == NULL) {
      cur = &out->b[out->n++];
      cur->first = i;
      cur->ready_layer = p->layer;
    }
    cur->count++;
    cur->bytes += (double)p->numel * dtype_bytes;
    if (p->layer < cur->ready_layer) cur->ready_layer = p->layer;
    double limit = out->n == 1 ? first_cap : cap;
    if (cap > 0 && cur->bytes >= limit) cur = NULL;
  }
}

/* Reverses the bucket list in place, keeping each bucket's tensors in
 * their order (Python's reversed(bucket_indices) in distributed.py). */
static ds_status reverse_buckets(struct ds_buckets *bk) {
  int32_t *order = malloc((size_t)bk->n_order * sizeof *order);
  if (!order) return DS_ENOMEM;
  int32_t at = 0;
  for (int32_t lo = 0, hi = bk->n - 1; lo <= hi; lo++, hi--) {
    struct ds_bucket t = bk->b[lo];
    bk->b[lo] = bk->b[hi];
    bk->b[hi] = t;
  }
  for (int32_t k = 0; k < bk->n; k++) {
    memcpy(order + at, bk->order + bk->b[k].first, (size_t)bk->b[k].count * sizeof *order);
    bk->b[k].first = at;
    at += bk->b[k].count;
  }
  free(bk->order);
  bk->order = order;
  return DS_OK;
}

ds_status ds_ddp_buckets(const struct ds_model *m, int dtype_bytes,
                         double first_cap, double cap, enum ds_bucket_layout layout,
                         struct ds_buckets *out) {
  memset(out, 0, sizeof *out);
  out->order = malloc((size_t)m->n_params * sizeof *out->order);
  out->b = calloc((size_t)m->n_params, sizeof *out->b);
  if (!out->order || !out->b) {
    ds_ddp_buckets_release(out);
    return DS_ENOMEM;
  }
  out->n_order = m->n_params;
  for (int32_t i = 0; i < m->n_params; i++)
    out->order[i] = layout != DS_BUCKETS_READY ? ds_model_registered(m, i)
                    : m->grad_ready          ? m->grad_ready[i]
                                             : ds_model_registered(m, m->n_params - 1 - i);
  bin(m, dtype_bytes, first_cap, layout == DS_BUCKETS_ONE ? 0 : cap, out);
  if (layout == DS_BUCKETS_REGISTRATION && reverse_buckets(out) != DS_OK) {
    ds_ddp_buckets_release(out);
    return DS_ENOMEM;
  }
  return DS_OK;
}

double ds_ddp_first_bucket_mb(enum ds_ddp_rules rules, double bucket_cap_mb,
                              double first_bucket_mb) {
  if (first_bucket_mb > 0) return first_bucket_mb;
  /* PyTorch 1.4's and 1.9's distributed.py always pass
   * [_DEFAULT_FIRST_BUCKET_BYTES, bucket_bytes_cap] to the binning (1.9's
   * rebuild too: reducer.cpp rebuild_buckets' kDefaultFirstBucketBytes) */
  if (rules != DS_DDP_RULES_CURRENT) return 1;
  return bucket_cap_mb > 0 ? bucket_cap_mb : 1;
}

ds_status ds_ddp_plan(const struct ds_model *m, int dtype_bytes, double first_cap,
                      double cap, int find_unused, int static_graph,
                      struct ds_ddp_plan *out) {
  return ds_ddp_plan_rules(m, dtype_bytes, first_cap, cap, find_unused, static_graph,
                           DS_DDP_RULES_CURRENT, out);
}

ds_status ds_ddp_plan_rules(const struct ds_model *m, int dtype_bytes, double first_cap,
                            double cap, int find_unused, int static_graph,
                            enum ds_ddp_rules rules, struct ds_ddp_plan *out) {
  memset(out, 0, sizeof *out);
  ds_status st;
  if (rules != DS_DDP_RULES_CURRENT && static_graph) return DS_EUSAGE;
  /* Binned in registration order first: PyTorch 1.4 and find_unused never
   * rebuild; 1.9 rebuilds in gradient-ready order before iteration 1. */
  int never_rebuilt = (find_unused && !static_graph) || rules == DS_DDP_RULES_TORCH_1_4;
  if (never_rebuilt || rules == DS_DDP_RULES_TORCH_1_9) {
    out->rule = rules == DS_DDP_RULES_TORCH_1_4
                    ? "PyTorch 1.4: binned in registration order, bucket list reversed, "
                      "no rebuild"
                : never_rebuilt
                    ? "find_unused_parameters: binned in registration order, bucket list "
                      "reversed, never rebuilt"
                    : "PyTorch 1.9: binned in registration order (bucket list reversed) in "
                      "iteration 0, rebuilt in gradient-ready order before iteration 1";
    if (!never_rebuilt) out->rebuild_iter = 1;
    DS_CHECK_GOTO(ds_ddp_buckets(m, dtype_bytes, first_cap, cap, DS_BUCKETS_REGISTRATION,
                                 &out->initial), st, fail);
    /* 1.9's rebuild takes the C++ kDefaultFirstBucketBytes, 1 MiB, whatever
     * distributed.py's _DEFAULT_FIRST_BUCKET_BYTES (--first-bucket-mb) was */
    DS_CHECK_GOTO(ds_ddp_buckets(m, dtype_bytes, never_rebuilt ? first_cap : DS_UNITS_MIB, cap,
                                 never_rebuilt ? DS_BUCKETS_REGISTRATION : DS_BUCKETS_READY,
                                 &out->rebuilt), st, fail);
    return DS_OK;
  }
  out->rebuild_iter = static_graph ? 2 : 1;
  out->rule = static_graph ? "static_graph: one bucket in iterations 0 and 1, rebuilt in "
                             "gradient-ready order before iteration 2"
                           : "one bucket in iteration 0, rebuilt in gradient-ready order "
                             "before iteration 1";
  DS_CHECK_GOTO(ds_ddp_buckets(m, dtype_bytes, first_cap, cap, DS_BUCKETS_ONE,
                               &out->initial), st, fail);
  DS_CHECK_GOTO(ds_ddp_buckets(m, dtype_bytes, first_cap, cap, DS_BUCKETS_READY,
                               &out->rebuilt), st, fail);
  return DS_OK;
fail:
  ds_ddp_plan_release(out);
  return st;
}

void ds_ddp_plan_release(struct ds_ddp_plan *plan) {
  if (!plan) return;
  ds_ddp_buckets_release(&plan->initial);
  ds_ddp_buckets_release(&plan->rebuilt);
}

const struct ds_buckets *ds_ddp_plan_layout(const struct ds_ddp_plan *plan, int32_t iter) {
  return iter < plan->rebuild_iter ? &plan->initial : &plan->rebuilt;
}

void ds_ddp_buckets_release(struct ds_buckets *b) {
  if (!b) return;
  free(b->order);
  free(b->b);
  memset(b, 0, sizeof *b);
}

