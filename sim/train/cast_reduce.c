/* Upcast copies and row reductions at their kernels' rates (cast_reduce.h). */
#include "sim/train/cast_reduce.h"

#include <math.h>

#include "base/config.h"
#include "sim/train/compute.h"

/* Reduce.cuh's constants: a CTA's most threads (mnt_wrapper's
 * MAX_NUM_THREADS, over output_vec_size), the warp, the values a thread
 * sums before its CTA is split (max_values_per_thread) and at least after
 * (min_values_per_thread). setReduceConfig's target grid takes the GPU's
 * maxThreadsPerMultiProcessor (ds_compute's sm_max_threads: the table in
 * sim/net/gpu_table.c, sm_threads_by_cc); SM_THREADS_UNKNOWN = 2048 stands
 * in where it does not say (a GPU without compute_capability whose family
 * disagrees, a made-up GPU): the value of the H100's and H200's this
 * project's traces and fits come from. */
enum {
  MAX_THREADS = 512,
  WARP = 32,
  MAX_VALUES = 256,
  MIN_VALUES = 16,
  SM_THREADS_UNKNOWN = 2048,
  VT0 = 4 /* gpu_reduce_kernel's vt0: the loads a thread's loop issues at once */
};

ds_status ds_cast_reduce_read(const struct ds_cnode *item, struct ds_layer *l,
                              struct ds_err *err) {
  struct ds_cnode node;
  l->amp_upcast_bytes = 0;
  l->n_row_reductions = 0;
  if (ds_cmap_get(item, "amp_upcast_bytes", &node)) {
    int64_t v;
    DS_CHECK(ds_model_bytes_hint(ds_cnode_int_range(&node, 0, DS_MODEL_COUNT_MAX, &v, err), 1,
                                 err));
    if ((double)v > l->amp_cast_bytes)
      return ds_cnode_error(&node, err, "expected amp_upcast_bytes at most amp_cast_bytes "
                            "(%.0f), got %lld", l->amp_cast_bytes, (long long)v);
    l->amp_upcast_bytes = (double)v;
  }
  if (!ds_cmap_get(item, "bwd_row_reductions", &node)) return DS_OK;
  size_t n;
  if (ds_cseq_len(&node, &n, err) != DS_OK || n > DS_ROW_REDUCTIONS_MAX)
    return ds_cnode_error(&node, err, "expected bwd_row_reductions as a list of at most %d "
                          "[rows per sample, outputs] or [rows per sample, outputs, "
                          "autocast bytes per element]", DS_ROW_REDUCTIONS_MAX);
  for (size_t i = 0; i < n; i++) {
    struct ds_cnode pair, third;
    int64_t v[3] = {0, 0, 0};
    size_t len = 0;
    DS_CHECK(ds_cseq_at(&node, i, &pair, err));
    /* two numbers, or three: the third an element size (2 or 4) */
    if (ds_cnode_is_seq(&pair)) DS_CHECK(ds_cseq_len(&pair, &len, err));
    size_t want = len == 3 ? 3 : 2;
    DS_CHECK(ds_cnode_int_list(&pair, want == 3 ? "[rows per sample, outputs, autocast bytes "
                                                   "per element]"
                                                 : "[rows per sample, outputs] or [rows per "
                                                   "sample, outputs, autocast bytes per "
                                                   "element]",
                               want, 1, DS_MODEL_COUNT_MAX, v, err));
    if (want == 3 && v[2] != 2 && v[2] != 4) {
      DS_CHECK(ds_cseq_at(&pair, 2, &third, err));
      return ds_cnode_error(&third, err, "expected autocast bytes per element 2 (half) or 4 "
                            "(fp32), got %lld", (long long)v[2]);
    }
    l->row_reductions[i][0] = (double)v[0];
    l->row_reductions[i][1] = (double)v[1];
    l->row_reductions[i][2] = (double)v[2];
  }
  l->n_row_reductions = (int32_t)n;
  return DS_OK;
}

double ds_upcast_ns(const struct ds_compute *c, double bytes, double kernels) {
  if (bytes <= 0) return 0;
  double extra = (kernels > 1 ? kernels - 1 : 0) * c->params.kernel_overhead_ns;
  double roofline = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, bytes) + extra;
  if (!ds_compute_knows_sms(c)) {
    ds_compute_charge_model(c, DS_KM_UPCAST, 0);
    return roofline;
  }
  double elems = bytes / 6.0; /* 2 B read, 4 B written */
  double sm = elems * DS_UPCAST_CYCLES / ((double)c->sms * c->sm_clock_hz) * 1e9 +
              kernels * c->params.kernel_overhead_ns;
  ds_compute_charge_model(c, DS_KM_UPCAST, sm > roofline);
  return sm > roofline ? sm : roofline;
}

/* The largest power of two at most n (Reduce.cuh's last_pow2), n >= 1. */
static double last_pow2(double n) {
  double p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/* setReduceConfig (aten/src/ATen/native/cuda/Reduce.cuh) for a reduction
 * over the non-contiguous dimension ("vectorize along output"), step by
 * step; cast_reduce.h says what each part costs. */
double ds_row_reduce_steps(double rows, double outputs, int sms, int sm_max_threads) {
  /* get_output_vec_size: 4, halved until it divides the input's base
   * address in elements (the caching allocator's blocks are 512-byte
   * aligned: always), the output extent and the input's other strides
   * (the row stride, `outputs` again): 4, 2 or 1 */
  int vec = 4;
  while (vec > 1 && fmod(outputs, vec) != 0) vec /= 2;
  /* set_block_dimension: block.x over the outputs' vectors, block.y over
   * the rows, at most MAX_THREADS / vec threads */
  double max_threads = MAX_THREADS / vec, dim0 = outputs / vec;
  double dim0_pow2 = dim0 < max_threads ? last_pow2(dim0) : max_threads;
  double dim1_pow2 = rows < max_threads ? last_pow2(rows) : max_threads;
  double width = fmin(dim0_pow2, WARP);
  double height = fmin(dim1_pow2, max_threads / width);
  width = fmin(dim0_pow2, max_threads / height);
  /* lanes split the outputs; the warps split the rows where that leaves a
   * thread 16 rows or it has 256 (else each warp takes outputs of its own) */
  int split_rows = rows >= height * MIN_VALUES || rows >= MAX_VALUES;
  /* A thread that sums every row of its outputs (few rows): its loop
   * (thread_reduce_impl) loads vt0 = 4 rows before it adds any, so its
   * dependent round trips are ceil(rows / 4). The split case keeps one
   * step a value, as DS_ROW_REDUCE_STEP_CYCLES was fitted on it (its
   * kernels sum 16 to 24 values a thread and 22 to 32 partials). */
  if (!split_rows) return ceil(rows / VT0);
  /* the rows split over the CTA's warps: a CTA covers `width` outputs */
  double per_thread = ceil(rows / height);
  double grid = ceil(dim0 / width);
  /* target_grid_size: the SMs x the CTAs of this size one SM holds */
  double sm_threads = sm_max_threads > 0 ? sm_max_threads : SM_THREADS_UNKNOWN;
  double target = (double)sms * floor(sm_threads / (width * height));
  double ctas = 1;
  if (per_thread >= MAX_VALUES && grid <= target)
    ctas = fmax(fmin(ceil(target / grid), ceil(per_thread / MIN_VALUES)),
                ceil(per_thread / MAX_VALUES));
  return ceil(per_thread / ctas) + (ctas > 1 ? ceil(ctas / height) : 0);
}

double ds_row_reduce_elem_bytes(const struct ds_compute *c, const struct ds_layer *l,
                                int32_t i) {
  if (ds_compute_autocast_traffic(c, l) && l->row_reductions[i][2] > 0)
    return l->row_reductions[i][2];
  return c->precision.act_bytes;
}

double ds_row_reduce_ns(const struct ds_compute *c, const struct ds_layer *l, int64_t batch,
                        double *bytes) {
  *bytes = 0;
  /* the steps' cycles add to the bytes' roofline: bound wherever applied */
  if (l->n_row_reductions > 0)
    ds_compute_charge_model(c, DS_KM_ROW_REDUCE, ds_compute_knows_sms(c));
  if (l->n_row_reductions == 0 || !ds_compute_knows_sms(c)) return 0;
  double ns = 0;
  for (int32_t i = 0; i < l->n_row_reductions; i++) {
    double rows = l->row_reductions[i][0] * (double)batch, outputs = l->row_reductions[i][1];
    double b = (rows + 1) * outputs * ds_row_reduce_elem_bytes(c, l, i);
    *bytes += b;
    ns += ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, b) +
          ds_row_reduce_steps(rows, outputs, c->sms, c->sm_max_threads) * DS_ROW_REDUCE_STEP_CYCLES /
              c->sm_clock_hz * 1e9;
  }
  return ns;
}
