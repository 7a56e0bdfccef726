/*
 * Max-pool's kernels at their rates per SM clock (compute.h
 * ds_compute_max_pool_ns): the constants, the rows they were fitted on and
 * their checks below; the roofline of the layer's bytes as the floor.
 */
#include "sim/train/compute.h"

#include "sim/train/compute_impl.h"

/* Max-pool (compute.h): PyTorch's kernels (aten/src/ATen/native/cuda/
 * DilatedMaxPool2d.cu) cost SM cycles per element they loop over, fitted by
 * least squares on this project's H200 measurements of the kernels alone
 * (bench/results/gpu-2026-11-26c-h200/maxpool.txt, bench/gpu_maxpool.py:
 * torch.profiler kernel times, 10 calls each, 132 SMs at 1980 MHz; the rows
 * over 40 us), each time less the 4 us kernel_overhead the charge adds
 * back (docs/architecture.md, "Fitted kernel rates"), as cycles per output
 * (forward) or input (backward) element plus cycles per (element, window)
 * pair (`python3 bench/maxpool_fit.py bench/results/gpu-2026-11-26c-h200/
 * maxpool.txt --sms 132 --clock-mhz 1980` prints them and each row's
 * charge; --overhead-us 0 the constants fitted before the overhead was
 * taken out: 2.42 + 0.207, 2.45 + 0.208, 2.29 + 0.256, 1.05 + 0.578):
 *   NCHW forward (max_pool_forward_nchw, a thread per output scanning its
 *   window): 8 rows, 3x3/2 and 3x3/1 windows (fp32, fp16, batch 32 and 128)
 *   and 2x2/2 (VGG's, 3 sizes): 2.21 + 0.215 per window element, every row
 *   within 1.9 %;
 *   NCHW backward (max_pool_backward_nchw, a thread per input element
 *   comparing the index of every window that could hold it): 9 rows, 2.43
 *   + 0.193 per window, within 5.8 %;
 *   channels-last forward (max_pool_forward_nhwc): 4 rows, 2.35 + 0.231,
 *   within 11 % on 3x3/2 and 2x2/2 (the models' windows), 19 % over on a
 *   3x3/1 window;
 *   channels-last backward (max_pool_backward_nhwc): 4 rows, 1.06 + 0.559,
 *   within 10.1 %.
 * fp16 ran within 3 % of fp32 in NCHW (the same cycles at half the bytes:
 * not bandwidth-bound). Checks, not fitted: ResNet-50's stem pool
 * (32x64x112x112 fp32, 3x3/2) in bench/results/gpu-2026-11-26b-h200/
 * kernels.csv (rows memory maxpool fp32: 0.104 ms; maxpool_bwd: 0.308 ms
 * with the zero fill) and in the whole-model traces (prof/resnet50-fp32-b32:
 * forward 103.5 us, backward kernel 288 us; gpu-2026-11-26-h200/prof/
 * resnet50-amp-b128: 418.7 / 1144 us, -nhwc: 415.6 / 912 us), and the H100
 * tables (gpu-2026-11-26-h200/h100/prof/resnet50-fp32-b32: 103.2 / 287 us):
 * the same 132 SMs at 1980 MHz on 3.35 TB/s take the same time, so the
 * rate is per SM clock, not HBM's. Other GPUs are inferred (cycles per
 * element on their SMs and boost clock). */
#define POOL_FWD_NCHW_CYCLES_PER_OUTPUT 2.21
#define POOL_FWD_NCHW_CYCLES_PER_PAIR 0.215
#define POOL_BWD_NCHW_CYCLES_PER_INPUT 2.43
#define POOL_BWD_NCHW_CYCLES_PER_PAIR 0.193
#define POOL_FWD_NHWC_CYCLES_PER_OUTPUT 2.35
#define POOL_FWD_NHWC_CYCLES_PER_PAIR 0.231
#define POOL_BWD_NHWC_CYCLES_PER_INPUT 1.06
#define POOL_BWD_NHWC_CYCLES_PER_PAIR 0.559

/* One side of the window: outputs, and the input elements of all windows
 * summed (padding excluded), which is also the windows holding each input
 * summed (max_pool_backward's p_start .. p_end). */
static void pool_side(int64_t in, int32_t k, int32_t s, int32_t p, double *outs, double *pairs) {
  int64_t n = (in + 2 * (int64_t)p - k) / s + 1, sum = 0;
  for (int64_t o = 0; o < n; o++) {
    int64_t lo = o * s - p, hi = lo + k;
    sum += (hi < in ? hi : in) - (lo > 0 ? lo : 0);
  }
  *outs = (double)n;
  *pairs = (double)sum;
}

void ds_compute_pool_geometry(const struct ds_pool *p, double *inputs, double *outputs,
                              double *pairs) {
  double oh, ow, ph, pw, ch = (double)p->channels;
  pool_side(p->height, p->kernel[0], p->stride[0], p->padding[0], &oh, &ph);
  pool_side(p->width, p->kernel[1], p->stride[1], p->padding[1], &ow, &pw);
  *inputs = ch * (double)p->height * (double)p->width;
  *outputs = ch * oh * ow;
  *pairs = ch * ph * pw;
}

double ds_compute_max_pool_ns(const struct ds_compute *c, const struct ds_layer *l,
                              int64_t batch, int backward, struct ds_pool_kernel *k) {
  struct ds_pool_kernel kk = {0};
  double b = (double)batch, inputs, outputs, pairs;
  ds_compute_pool_geometry(&l->pool, &inputs, &outputs, &pairs);
  kk.bytes =
      (backward ? ds__compute_bwd_act_bytes(c, l) : ds__compute_fwd_act_bytes(c, l)) * b;
  if (backward) {
    /* zero_ writes the input gradient before the kernel (the model file's
     * bwd_bytes count it: zero-filled and written) */
    kk.fill_bytes = inputs * b * c->precision.act_bytes;
    if (kk.fill_bytes > kk.bytes / 2) kk.fill_bytes = kk.bytes / 2;
  }
  kk.roofline_ns = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, kk.bytes - kk.fill_bytes);
  if (kk.fill_bytes > 0)
    kk.fill_ns = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, kk.fill_bytes);
  if (l->pool.kernel[0] > 0 && ds_compute_knows_sms(c)) {
    double per_elem, per_pair, elems = backward ? inputs : outputs;
    if (c->channels_last) {
      per_elem = backward ? POOL_BWD_NHWC_CYCLES_PER_INPUT : POOL_FWD_NHWC_CYCLES_PER_OUTPUT;
      per_pair = backward ? POOL_BWD_NHWC_CYCLES_PER_PAIR : POOL_FWD_NHWC_CYCLES_PER_PAIR;
    } else {
      per_elem = backward ? POOL_BWD_NCHW_CYCLES_PER_INPUT : POOL_FWD_NCHW_CYCLES_PER_OUTPUT;
      per_pair = backward ? POOL_BWD_NCHW_CYCLES_PER_PAIR : POOL_FWD_NCHW_CYCLES_PER_PAIR;
    }
    kk.cycles = b * (elems * per_elem + pairs * per_pair);
    kk.sm_rate_ns = kk.cycles / ((double)c->sms * c->sm_clock_hz) * 1e9 +
                    c->params.kernel_overhead_ns;
  }
  if (l->pool.kernel[0] > 0)
    ds_compute_charge_model(c, DS_KM_MAX_POOL, kk.sm_rate_ns > kk.roofline_ns);
  if (k) *k = kk;
  if (kk.sm_rate_ns == 0) /* no SM clock: the one roofline of all the bytes, as before */
    return ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, kk.bytes);
  return kk.fill_ns + (kk.sm_rate_ns > kk.roofline_ns ? kk.sm_rate_ns : kk.roofline_ns);
}
