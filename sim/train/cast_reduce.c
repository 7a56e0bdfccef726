/* Upcast copies and row reductions at their kernels' rates (cast_reduce.h). */
#include "sim/train/cast_reduce.h"

#include <math.h>

#include "base/config.h"
#include "sim/train/compute.h"

/* Reduce.cuh's constants: threads a CTA of an outer reduction with 4
 * outputs a lane runs (512 / output_vec_size), the values a thread sums
 * before its CTA is split (max_values_per_thread) and at least after
 * (min_values_per_thread), and threads per SM (maxThreadsPerMultiProcessor
 * of every GPU since Volta but Turing's). */
enum { CTA_THREADS = 128, WARP = 32, MAX_VALUES = 256, MIN_VALUES = 16, SM_THREADS = 2048 };

ds_status ds_cast_reduce_read(const struct ds_cnode *item, struct ds_layer *l,
                              struct ds_err *err) {
  struct ds_cnode node;
  l->amp_upcast_bytes = 0;
  l->n_row_reductions = 0;
  if (ds_cmap_get(item, "amp_upcast_bytes", &node)) {
    int64_t v;
    DS_CHECK(ds_cnode_int_range(&node, 0, DS_MODEL_COUNT_MAX, &v, err));
    if ((double)v > l->amp_cast_bytes)
      return ds_cnode_error(&node, err, "expected amp_upcast_bytes at most amp_cast_bytes "
                            "(%.0f), got %lld", l->amp_cast_bytes, (long long)v);
    l->amp_upcast_bytes = (double)v;
  }
  if (!ds_cmap_get(item, "bwd_row_reductions", &node)) return DS_OK;
  size_t n;
  if (ds_cseq_len(&node, &n, err) != DS_OK || n > DS_ROW_REDUCTIONS_MAX)
    return ds_cnode_error(&node, err, "expected bwd_row_reductions as a list of at most %d "
                          "[rows per sample, outputs]", DS_ROW_REDUCTIONS_MAX);
  for (size_t i = 0; i < n; i++) {
    struct ds_cnode pair;
    int64_t v[2];
    DS_CHECK(ds_cseq_at(&node, i, &pair, err));
    DS_CHECK(ds_cnode_int_list(&pair, "[rows per sample, outputs]", 2, 1, DS_MODEL_COUNT_MAX,
                               v, err));
    l->row_reductions[i][0] = (double)v[0];
    l->row_reductions[i][1] = (double)v[1];
  }
  l->n_row_reductions = (int32_t)n;
  return DS_OK;
}

double ds_upcast_ns(const struct ds_compute *c, double bytes, double kernels) {
  if (bytes <= 0) return 0;
  double extra = (kernels > 1 ? kernels - 1 : 0) * c->params.kernel_overhead_ns;
  double roofline = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, bytes) + extra;
  if (!ds_compute_knows_sms(c)) return roofline;
  double elems = bytes / 6.0; /* 2 B read, 4 B written */
  double sm = elems * DS_UPCAST_CYCLES / ((double)c->sms * c->sm_clock_hz) * 1e9 +
              kernels * c->params.kernel_overhead_ns;
  return sm > roofline ? sm : roofline;
}

static double pow2_at_least(double x) {
  double p = 1;
  while (p < x) p *= 2;
  return p;
}

double ds_row_reduce_steps(double rows, double outputs, int sms) {
  int vec = fmod(outputs, 4) == 0 ? 4 : 1;
  double width = fmin(pow2_at_least(ceil(outputs / vec)), WARP);
  double height = fmin(pow2_at_least(rows), CTA_THREADS / width);
  double per_thread = ceil(rows / height);
  double grid = ceil(outputs / (width * vec));
  double target = (double)sms * (SM_THREADS / CTA_THREADS);
  double ctas = 1;
  if (per_thread >= MAX_VALUES && grid <= target)
    ctas = fmax(fmin(ceil(target / grid), ceil(per_thread / MIN_VALUES)),
                ceil(per_thread / MAX_VALUES));
  return ceil(per_thread / ctas) + (ctas > 1 ? ceil(ctas / height) : 0);
}

double ds_row_reduce_ns(const struct ds_compute *c, const struct ds_layer *l, int64_t batch,
                        double elem_bytes, double *bytes) {
  *bytes = 0;
  if (l->n_row_reductions == 0 || !ds_compute_knows_sms(c)) return 0;
  double ns = 0;
  for (int32_t i = 0; i < l->n_row_reductions; i++) {
    double rows = l->row_reductions[i][0] * (double)batch, outputs = l->row_reductions[i][1];
    double b = (rows + 1) * outputs * elem_bytes;
    *bytes += b;
    ns += ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, b) +
          ds_row_reduce_steps(rows, outputs, c->sms) * DS_ROW_REDUCE_STEP_CYCLES /
              c->sm_clock_hz * 1e9;
  }
  return ns;
}
