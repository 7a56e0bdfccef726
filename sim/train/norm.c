/*
 * Batch norm's and layer norm's kernels (see norm.h for what each launches
 * and how its time is counted).
 */
#include "sim/train/norm.h"

#include <math.h>

/* Batch norm (norm.h): the rates of cuDNN's NCHW kernels, element
 * passes per clock, FIT on this project's H200 fp32 trace
 * (bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz; 132
 * SMs at 1980 MHz), each the median over the (kernel, shape) groups that
 * show it of the group's median time less the 4 us kernel_overhead (the
 * charge below adds it back: docs/architecture.md, "Fitted kernel rates"):
 *   per CTA, kernels of at most one CTA per SM (C <= 132, where HBM cannot
 *   be the limit): forward 5.16, 6.40, 6.73, 4.63 G element passes/s (C
 *   64 at 112x112 and 56x56, 128 at 28x28 and 56x56) -> median 5.78 / 1.98
 *   GHz = 2.92; backward 3.30, 3.29, 5.68, 3.10 -> 3.30 / 1.98 GHz = 1.66;
 *   per SM, kernels of several CTAs per SM (C 256 at 28x28 and 56x56, 512
 *   at 28x28): 6.38, 5.76, 5.26 forward, 4.90, 5.17, 6.64 backward, per SM
 *   -> median 5.51 / 1.98 GHz = 2.78, both directions.
 * `python3 bench/bn_nchw_fit.py TRACE --sms 132 --clock-mhz 1980` prints
 * them (with --overhead-us 0 the rates fitted before the overhead was
 * taken out: 2.4, 1.6, 2.55). With the overhead out, one CTA alone on an
 * SM streams faster than several CTAs share it forward (2.92 against
 * 2.78: the small single-read kernels gain the most), so the forward's
 * CTA rate never binds; the backward's does.
 * A kernel's CTAs are 512 threads (the trace's block), as many per SM as
 * its resident threads allow: floor(threads / 512) (ds_compute's
 * sm_max_threads, gpu_table.c's table; 2048 where unknown, as
 * cast_reduce.c assumes): 4 on H200, 3 on 1536-thread GPUs. The H200 AMP NCHW
 * trace (fp16, batch 128) and the H100 kernel tables check them; other
 * generations are inferred (a rate per clock). */
#define BN_FWD_ELEMS_PER_CTA_CYCLE 2.92
#define BN_BWD_ELEMS_PER_CTA_CYCLE 1.66
#define BN_ELEMS_PER_SM_CYCLE 2.78
#define BN_CTA_THREADS 512
#define BN_SM_THREADS_UNKNOWN 2048
/* cuDNN's single-read kernels cache a channel (forward: x; backward: x and
 * dy) in shared memory. In the traces they ran with 100,352 B cached (fp32
 * forward 32x28x28, fp16 backward 2 x 128x14x14) and the multi-pass ones
 * where 200,704 B would have been (fp32 backward 2 x 32x28x28, fp16
 * forward 128x28x28); cuDNN's rule is closed: any limit in between gives
 * those choices. */
#define BN_SINGLE_READ_MAX_BYTES (128.0 * 1024)

/* cuDNN's channels-last kernels for half inputs (norm.h): the layout
 * apex's and MXNet's persistent NHWC batch norm published
 * (apex/contrib/csrc/groupbn/batch_norm.h, NhwcBatchNorm: THREADS_PER_PIXEL,
 * ELEMENTS_PER_LDG, calc_fwd_grid / calc_bwd_grid) and the template
 * arguments of the traced kernels show (`<__half, float, __half, 512, 16,
 * 5 | 3, 4, 1, OUTER_LOOPS, ..., 2>`): 512-thread CTAs, 16 threads per
 * pixel loading 4 channels each, so 64 channels per CTA; the grid is sized
 * to be co-resident at 2 CTAs per SM (the last argument; the traces' grids
 * never exceed 264 = 2 x 132 CTAs). The pixels a CTA keeps on chip are
 * read off the traces' grids: ceil(NHW / 384) CTAs forward (25088 pixels ->
 * 66, 100352 -> 262) and ceil(NHW / 192) backward (25088 -> 131, 6272 ->
 * 33); bench/bn_nhwc.py reproduces 1236 of the 1256 grids of the four H200
 * AMP channels-last traces (the others: ResNet-50's 512 x 7x7 forward,
 * launched 33 x 8, 192 pixels per CTA, where this rule gives 17 x 8). */
#define BN_NHWC_CHANNELS_PER_CTA 64
#define BN_NHWC_CTAS_PER_SM 2
#define BN_NHWC_FWD_CACHED_PIXELS 384
#define BN_NHWC_BWD_CACHED_PIXELS 192
/* What a round of the grid costs beyond its bytes: the grid-wide barrier,
 * then every CTA combining the partial results of the gx CTAs that share
 * its channels (forward the Welford merge of count, mean and M2, a
 * dependent chain per partial; backward two sums). Not derived: FITTED,
 * least squares over the 416 kernels of ONE trace,
 * bench/results/gpu-2026-11-26b-h200/prof/resnext101_32x4d-amp-b128-nhwc.json.gz
 * (H200, call 4: validation/training.csv marks that row fit), with
 * `python3 bench/bn_nhwc.py --fit TRACE` (the bytes at the memory class's
 * rate and kernel_overhead 4 us taken first): 4.81 us per round, 49.2 and
 * 11.2 SM cycles per partial. Checked on the other traces (batch-norm
 * kernels per iteration, measured / model): ResNet-50 7.04 / 7.27 ms (two
 * machines), SE-ResNeXt-101 13.96 / 14.20; the old 3 and 5 passes at the
 * roofline gave 5.88 and 11.25. On H100 (3.35 TB/s, the same SMs and
 * clock; bench/results/gpu-2026-11-26-h200/h100/prof/
 * resnet50-amp-b128-nhwc.txt) ResNet-50's took 8.71 ms: 9.06 here, 8.07
 * with the old passes. */
#define BN_NHWC_BARRIER_NS 4810.0
#define BN_NHWC_FWD_PARTIAL_CYCLES 49.2
#define BN_NHWC_BWD_PARTIAL_CYCLES 11.2

/* The persistent NHWC kernel's grid, rounds and bytes (norm.h). */
static void bn_nhwc_kernel(const struct ds_compute *c, double pixels, double channels,
                           double esz, int backward, struct ds_bn_kernel *k) {
  double max_ctas = (double)BN_NHWC_CTAS_PER_SM * c->sms;
  double on_chip = backward ? BN_NHWC_BWD_CACHED_PIXELS : BN_NHWC_FWD_CACHED_PIXELS;
  double blocks = ceil(channels / BN_NHWC_CHANNELS_PER_CTA);
  double gx = ceil(pixels / on_chip), gy = 1, cached = pixels;
  if (gx <= max_ctas) {
    /* every pixel on chip; channel blocks side by side as the grid allows */
    gy = floor(max_ctas / gx);
    if (gy > blocks) gy = blocks;
    if (gy < 1) gy = 1;
  } else {
    /* the grid is capped: each CTA re-reads what it could not keep, and
     * the channel blocks run one after another */
    gx = max_ctas;
    cached = gx * on_chip;
  }
  int kept = backward ? 3 : 2, again = backward ? 5 : 3;
  k->grid_x = (int)gx;
  k->grid_y = (int)gy;
  k->rounds = (int)ceil(blocks / gy);
  k->passes = cached < pixels ? again : kept;
  k->bytes = esz * channels * (cached * kept + (pixels - cached) * again);
  double partial = backward ? BN_NHWC_BWD_PARTIAL_CYCLES : BN_NHWC_FWD_PARTIAL_CYCLES;
  k->sync_ns = k->rounds * (BN_NHWC_BARRIER_NS + gx * partial / c->sm_clock_hz * 1e9);
}

double ds_batch_norm_ns(const struct ds_compute *c, const struct ds_layer *l,
                                int64_t batch, int backward, struct ds_bn_kernel *k) {
  struct ds_bn_kernel kk = {0};
  double esz = c->precision.act_bytes;
  double elems = (double)batch * l->fwd_bytes / 8; /* fwd_bytes: fp32 x and y */
  double per_channel = l->bn_channels > 0 ? elems / (double)l->bn_channels : elems;
  double cached = (backward ? 2 : 1) * per_channel * esz;
  /* bf16 runs PyTorch's own kernels (not cuDNN's): charged as NHWC's passes */
  int cudnn = c->amp != DS_AMP_BF16 && c->dtype != DS_DTYPE_BF16;
  int cudnn_nchw = cudnn && !c->channels_last;
  /* channels-last half inputs under autocast (fp32 weights, as cuDNN's
   * half batch norm requires: Normalization.cpp use_cudnn) */
  int cudnn_nhwc = cudnn && c->channels_last && c->amp == DS_AMP_FP16 &&
                   ds_compute_knows_sms(c) && l->bn_channels > 0;
  kk.kernels = 1;
  if (cudnn_nchw && cached <= BN_SINGLE_READ_MAX_BYTES) kk.passes = backward ? 3 : 2;
  else kk.passes = backward ? 5 : 3;
  /* PyTorch's channels-last kernels (Normalization.cuh): forward
   * batch_norm_collect_statistics_channels_last_kernel (reads x) then
   * batch_norm_transform_input_channels_last_kernel (x, y); backward
   * batch_norm_backward_reduce_channels_last_kernel (x, dy) then
   * batch_norm_backward_elemt_channels_last_kernel (x, dy, dx): the same 3
   * and 5 passes in two launches */
  if (!cudnn && c->channels_last) kk.kernels = 2;
  const struct ds_precision *p = &c->precision;
  double per_param = backward ? (p->half_weight_bytes ? 3.0 * p->half_weight_bytes + p->param_bytes
                                                      : 2.0 * p->param_bytes)
                              : (p->half_weight_bytes ? p->param_bytes + 2.0 * p->half_weight_bytes
                                                      : p->param_bytes);
  double weights = (double)l->param_numel * per_param;
  kk.bytes = kk.passes * elems * esz + weights;
  if (cudnn_nhwc) {
    bn_nhwc_kernel(c, per_channel, (double)l->bn_channels, esz, backward, &kk);
    kk.bytes += weights;
  }
  kk.roofline_ns = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, kk.bytes) +
                   (kk.kernels - 1) * c->params.kernel_overhead_ns;
  if (cudnn_nchw && ds_compute_knows_sms(c) && l->bn_channels > 0) {
    /* one CTA per channel: each streams its channel at the per-CTA rate,
     * in waves of as many CTAs per SM as fit; the CTAs on an SM share its
     * rate. A second wave needs ch > sms x ctas_per_sm, so it outlasts the
     * SMs' rate only where 2 x 2.78 / (cta_rate x ctas_per_sm) > 1: backward
     * (1.66) at 3 per SM or fewer; the forward's CTA rate (2.92) is above
     * the SMs' (2.78), so a forward runs at the SMs' rate */
    double cta_rate = backward ? BN_BWD_ELEMS_PER_CTA_CYCLE : BN_FWD_ELEMS_PER_CTA_CYCLE;
    double ch = (double)l->bn_channels, sms = (double)c->sms;
    double sm_threads = c->sm_max_threads > 0 ? c->sm_max_threads : BN_SM_THREADS_UNKNOWN;
    double ctas_per_sm = floor(sm_threads / BN_CTA_THREADS);
    double waves = ceil(ch / (sms * ctas_per_sm));
    double t_cta = waves * kk.passes * per_channel / (cta_rate * c->sm_clock_hz);
    double t_sm = kk.passes * elems / ((ch < sms ? ch : sms) * BN_ELEMS_PER_SM_CYCLE *
                                       c->sm_clock_hz);
    kk.sm_bound = 1;
    kk.sm_rate_ns = (t_cta > t_sm ? t_cta : t_sm) * 1e9 + c->params.kernel_overhead_ns;
  }
  if (k) *k = kk;
  double t = kk.roofline_ns + kk.sync_ns;
  /* the measured models of cuDNN's kernels (kernel_models.h), applied
   * above where the GPU's SMs and clock are known: bound where the per-CTA
   * or per-SM rate beats the bytes, or the NHWC kernel's syncs add to them */
  if (cudnn_nchw && l->bn_channels > 0)
    ds_compute_charge_model(c, DS_KM_BN_NCHW, kk.sm_rate_ns > t);
  if (cudnn && c->channels_last && c->amp == DS_AMP_FP16 && l->bn_channels > 0)
    ds_compute_charge_model(c, DS_KM_BN_NHWC, kk.sync_ns > 0 || kk.sm_rate_ns > t);
  return kk.sm_rate_ns > t ? kk.sm_rate_ns : t;
}

/* Layer norm (norm.h): the rates of PyTorch's kernels, FIT on this
 * project's H200 trace of GPT-2 at batch 8 under bf16 autocast
 * (bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz; its row
 * in validation/training.csv is marked fit), 25 fp32 layer norms of
 * M = 8192 rows of N = 768, the mean of the 50 calls less the 4 us
 * kernel_overhead the charge adds back (docs/architecture.md, "Fitted
 * kernel rates"), 132 SMs at 1980 MHz:
 *   vectorized_layer_norm_kernel, 26.093 - 4 = 22.093 us: 2 * 8192 * 768
 *   element passes / (132 * 1.98e9 * 22.093e-6) = 2.179 per SM cycle
 *   (the rows' CTAs wait on their reductions, not on HBM; the H100
 *   trace's 27.3 us, at 0.7x the bandwidth and the same clock, agrees);
 *   GammaBetaBackwardCUDAKernelTemplate<float, float, 32, 32, 256> on 24
 *   CTAs, 42.423 - 4 = 38.423 us: 2 * 8192 * 32 element reads / (1.98e9 *
 *   38.423e-6) = 6.89 per CTA cycle.
 * `python3 bench/layernorm_trace_fit.py TRACE --sms 132 --clock-mhz 1980`
 * prints both (--overhead-us 0: 1.845 and 6.24, the rates fitted before
 * the overhead was taken out). Validated on the other traces (kernel
 * means; the charge, overhead included / measured): GPT-2 fp32 b8 H200
 * 26.09 / 25.57 us forward, 42.42 / 43.52 gamma/beta; BERT-base fp32 b32
 * (M = 4096) H200 15.05 / 13.20, 23.22 / 15.20; its H100 trace's table
 * 15.05 / 13.25, 23.22 / 19.90; BERT-base SQuAD TF32 b24 (M = 9216) H200
 * 28.86 / 28.92, 47.24 / 46.91. The small BERT kernels run faster than
 * overhead + work: their 4 us is not all paid. The CTAs of M < 256 (fewer
 * threads) are charged the same rate, unmeasured. */
#define LN_FWD_ELEMS_PER_SM_CYCLE 2.179
/* The forward on 2-byte elements (--dtype fp16 or bf16 without autocast:
 * vectorized_layer_norm_kernel<c10::Half> / <c10::BFloat16>, its
 * aligned_vector of vec_size 4 loading 8 bytes where fp32's loads 16) ran
 * 1.38x the fp32 rate in this project's microbenchmark (bench/gpu_kernels.py
 * --only layernorm on the H200, bench/results/gpu-2026-11-27-h200/
 * layernorm.csv: a calibration set, not a training row; no trace runs a
 * half layer norm, autocast's are fp32): least squares through the origin
 * of the kernel's time (torch.profiler) less the 4 us kernel_overhead
 * against 2 * M * N / (min(M, SMs) x clock), as for the fp32 rate, over
 * its 6 half rows (fp16 and bf16 at M = 4096, 8192, 9216; N = 768): 3.277
 * (rows 3.17-3.86; `python3 bench/castreduce_check.py
 * bench/results/gpu-2026-11-27-h200/castreduce.csv
 * bench/results/gpu-2026-11-27-h200/layernorm.csv --topo
 * validation/topologies/nd-h200-v5.yaml` prints each; 2.552 before the
 * overhead was taken out). Its fp32 rows give 2.210 over the same three
 * shapes, 1.4 % from the trace's 2.179 above. */
#define LN_FWD_ELEMS_PER_SM_CYCLE_HALF 3.277
#define LN_GB_ELEMS_PER_CTA_CYCLE 6.89
/* layer_norm_kernel.cu's launch rules: vec_size, the gamma/beta kernels'
 * block_dim_x, and LaunchGammaBetaBackwardCUDAKernel's partial path (M >
 * 64 * 1024, rows_per_block_y 32, max_grid_size 64 * 1024 / 2) */
#define LN_VEC_ELEMS 4
#define LN_GB_COLUMNS_PER_CTA 32
#define LN_GB_PARTIAL_MIN_ROWS 65536.0
#define LN_GB_PARTIAL_ROWS_PER_CTA 32.0
#define LN_GB_PARTIAL_MAX_CTAS 32768

/* num_batches_tracked is int64: add_(1) reads and writes one element. The
 * counter's charge, kernel_overhead (4 us) + these 16 B, is above the fit
 * trace's ~1.2 us kernel on purpose: the uniform per-kernel overhead (norm.h,
 * docs/architecture.md "What the 4 µs stands for"). */
#define BN_COUNTER_BYTES (2.0 * 8.0)

double ds_batch_norm_counter_ns(const struct ds_compute *c, const struct ds_layer *l,
                                double *bytes) {
  *bytes = 0;
  if (l->bn_channels <= 0 || !l->bn_tracks_batches) return 0;
  *bytes = BN_COUNTER_BYTES;
  return ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, *bytes);
}

static double ln_roofline(const struct ds_compute *c, double bytes) {
  return ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, bytes);
}

/* The gamma/beta reduction's kernels (norm.h): m rows of n, elements of
 * esz bytes; tensors = 1 (gamma) or 2 (gamma and beta). */
static void ln_gamma_beta(const struct ds_compute *c, double m, int64_t n, double esz,
                          double tensors, struct ds_ln_kernels *kk) {
  double cols = (double)n;
  double reads = 2.0 * m * cols * esz + 2.0 * m * 4.0; /* dY, X; mean, rstd */
  double ctas = ceil(cols / LN_GB_COLUMNS_PER_CTA);
  if (c->sms > 0 && m > LN_GB_PARTIAL_MIN_ROWS && n / LN_GB_COLUMNS_PER_CTA < c->sms / 2) {
    double per_x = floor(LN_GB_PARTIAL_MAX_CTAS / ctas);
    double rows = ceil(m / LN_GB_PARTIAL_ROWS_PER_CTA);
    double partial = tensors * (per_x < rows ? per_x : rows) * cols * esz;
    /* the partial kernel writes them, each .sum(0) reads its own and
     * writes the gradient */
    kk->gamma_beta_partial = 1;
    kk->gamma_beta_ns = ln_roofline(c, reads + partial) +
                        tensors * ln_roofline(c, (partial + tensors * cols * esz) / tensors);
    kk->kernels += 1 + (int)tensors;
    kk->bytes += reads + 2.0 * partial + tensors * cols * esz;
    return;
  }
  double bytes = reads + tensors * cols * esz;
  double t = ln_roofline(c, bytes);
  int bound = 0;
  if (ds_compute_knows_sms(c)) {
    double waves = ceil(ctas / (double)c->sms);
    double s = waves * 2.0 * m * LN_GB_COLUMNS_PER_CTA /
                   (LN_GB_ELEMS_PER_CTA_CYCLE * c->sm_clock_hz) * 1e9 +
               c->params.kernel_overhead_ns;
    if (s > t) t = s, bound = 1;
  }
  ds_compute_charge_model(c, DS_KM_LAYER_NORM, bound); /* LN_GB_ELEMS_PER_CTA_CYCLE */
  kk->gamma_beta_ns = t;
  kk->kernels += 1;
  kk->bytes += bytes;
}

double ds_layer_norm_ns(const struct ds_compute *c, const struct ds_layer *l,
                                int64_t batch, int backward, struct ds_ln_kernels *k) {
  struct ds_ln_kernels kk = {0};
  double m = (double)l->ln_rows * (double)batch, n = (double)l->ln_cols;
  /* autocast runs layer_norm in fp32 (its input cast first: amp_cast_bytes) */
  double esz = ds_compute_autocast_traffic(c, l) ? 4.0 : c->precision.act_bytes;
  double elems = m * n, stats = 2.0 * m * 4.0; /* mean and rstd: fp32 */
  double pbytes = c->precision.param_bytes;
  double tensors = l->param_numel > 0 ? (double)l->param_numel / n : 0; /* gamma, beta */
  if (!backward) {
    double weights = (double)l->param_numel * pbytes;
    kk.bytes = 2.0 * elems * esz + stats + weights;
    if (l->ln_cols % LN_VEC_ELEMS == 0) {
      kk.kernels = 1;
      kk.row_ns = ln_roofline(c, kk.bytes);
      int bound = 0;
      if (ds_compute_knows_sms(c)) {
        double sms = m < c->sms ? m : (double)c->sms;
        double rate = esz < 4.0 ? LN_FWD_ELEMS_PER_SM_CYCLE_HALF : LN_FWD_ELEMS_PER_SM_CYCLE;
        double t = 2.0 * elems / (sms * rate * c->sm_clock_hz) * 1e9 +
                   c->params.kernel_overhead_ns;
        if (t > kk.row_ns) kk.row_ns = t, bound = 1;
      }
      ds_compute_charge_model(c, DS_KM_LAYER_NORM, bound); /* LN_FWD_ELEMS_PER_SM_CYCLE* */
    } else { /* RowwiseMomentsCUDAKernel, then LayerNormForwardCUDAKernel */
      kk.kernels = 2;
      kk.row_ns = ln_roofline(c, elems * esz + stats) +
                  ln_roofline(c, 2.0 * elems * esz + stats + weights);
      kk.bytes += elems * esz + stats;
    }
  } else {
    /* the input gradient: dY, X, gamma, mean, rstd read, dX written */
    double gi = 3.0 * elems * esz + stats + (tensors > 0 ? n * pbytes : 0);
    kk.kernels = 1;
    kk.row_ns = ln_roofline(c, gi);
    kk.bytes = gi;
    if (tensors > 0) ln_gamma_beta(c, m, l->ln_cols, esz, tensors, &kk);
  }
  if (k) *k = kk;
  return kk.row_ns + kk.gamma_beta_ns;
}
