/*
 * Tests for batch norm's kernels (sim/train/norm.c ds_batch_norm_ns,
 * norm.h): which layers are BatchNorms (model_names.c: the buffer
 * NAME.running_mean), cuDNN's passes per kernel family, the NCHW kernels'
 * one-CTA-per-channel rates, and where they do not apply (--channels-last,
 * bf16, a GPU without a clock). Expected values are worked by hand on a
 * made-up GPU: 4 SMs at 1000 MHz, 1000 GB/s reached in full, no kernel
 * overhead; the rates are norm.c's: 2.92 (forward) and 1.66 (backward)
 * element passes per CTA per clock, 2.78 per SM per clock, 4 CTAs per SM
 * (fitted with kernel_overhead taken out, the forward's CTA rate is above
 * the SM's: a forward never runs at its CTAs' rate, so the forward cases
 * below check that max() picks the SMs');
 * cuDNN's channels-last kernels: 2 CTAs per SM (8 here), 64 channels per
 * CTA, 384 (forward) and 192 (backward) pixels kept per CTA, a round of the
 * grid 4810 ns plus 49.2 (forward) or 11.2 (backward) cycles per CTA
 * sharing the channels.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "sim/train/norm.h"
#include "tests/support.h"

static const char *gpus_text =
    "schema_version: 1\ngpus:\n"
    "  - name: BnGPU\n    # no arch\n    sms: 4\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n"
    "    fp16: 160TFLOPS\n    bf16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
    "    boost_mhz: 1000\n"
    "  - name: NoClockGPU\n    # no arch\n    sms: 4\n    fp32: 10TFLOPS\n    fp16: 160TFLOPS\n"
    "    mem: 16GB\n    mem_bw: 1000GBps\n";

/* bn: 2 channels of 1000 elements per sample (fwd_bytes 8 B per element:
 * fp32 x and y); bn2: 64 channels of 100; ln: a norm without running
 * statistics (LayerNorm); cv: a convolution (its running_mean buffer makes
 * it no BatchNorm); the buffer other.running_mean names no layer; bn3: 256
 * channels of 10 elements per sample. */
static const char *model_text =
    "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - {name: bn, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 16000,"
    " act_bytes: 8000, params: [{name: bn.weight, numel: 2}, {name: bn.bias, numel: 2}]}\n"
    "  - {name: bn2, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 51200,"
    " act_bytes: 25600, params: [{name: bn2.weight, numel: 64}, {name: bn2.bias, numel: 64}]}\n"
    "  - {name: ln, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 16000,"
    " act_bytes: 8000, params: [{name: ln.weight, numel: 2}]}\n"
    "  - {name: cv, class: conv, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 16000,"
    " act_bytes: 8000, params: []}\n"
    "  - {name: bn3, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 20480,"
    " act_bytes: 10240, params: [{name: bn3.weight, numel: 256}, {name: bn3.bias, numel: 256}]}\n"
    "buffers:\n"
    "  - {name: bn.running_mean, numel: 2, bytes: 8, dtype: float32}\n"
    "  - {name: bn.running_var, numel: 2, bytes: 8, dtype: float32}\n"
    "  - {name: bn.num_batches_tracked, numel: 1, bytes: 8, dtype: int64}\n"
    "  - {name: bn2.running_mean, numel: 64, bytes: 256, dtype: float32}\n"
    "  - {name: other.running_mean, numel: 9, bytes: 36, dtype: float32}\n"
    "  - {name: cv.running_mean, numel: 2, bytes: 8, dtype: float32}\n"
    "  - {name: bn3.running_mean, numel: 256, bytes: 1024, dtype: float32}\n";

static void setup(struct ds_test_compute *f, const char *gpu, enum ds_dtype dtype,
                  enum ds_amp amp) {
  ds_test_compute_setup(f, gpus_text, gpu, 0.5, 0, model_text, dtype, amp);
}

Test(batch_norm, a_running_mean_buffer_marks_its_layer_with_the_channels) {
  struct ds_test_compute f;
  setup(&f, "BnGPU", DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_eq(f.m->layers[0].bn_channels, 2);
  cr_assert_eq(f.m->layers[1].bn_channels, 64);
  cr_assert_eq(f.m->layers[2].bn_channels, 0, "a LayerNorm has no running statistics");
  cr_assert_eq(f.m->layers[3].bn_channels, 0, "a convolution is no BatchNorm");
  cr_assert_float_eq(f.c.sm_clock_hz, 1e9, 0);
  ds_test_compute_free(&f);
}

/* bn at batch 10: 20000 elements, 10000 per channel, 2 CTAs on 4 SMs.
 * Forward: 40000 B cached <= 128 KiB, single read, 2 passes; a CTA's stream
 * 2 * 10000 / 2.92e9 s = 6849.3 ns; the SMs' 2 * 20000 / (2 * 2.78e9) =
 * 7194.2 ns, the longer; the bytes 2 * 20000 * 4 + 4 weights * 4 = 160016 B
 * = 160.016 ns. Backward: x and dy, 80000 B cached, single read, 3 passes:
 * a CTA's 3 * 10000 / 1.66e9 = 18072.3 ns, above the SMs' 3 * 20000 / (2 *
 * 2.78e9) = 10791.4 ns. */
Test(batch_norm, nchw_single_read_kernels_run_at_their_ctas_or_sms_rate) {
  struct ds_test_compute f;
  setup(&f, "BnGPU", DS_DTYPE_FP32, DS_AMP_NONE);
  struct ds_bn_kernel k;
  double fwd = ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 0, &k);
  cr_assert_eq(k.passes, 2);
  cr_assert(k.sm_bound);
  cr_assert_float_eq(k.bytes, 160016, 1e-6);
  cr_assert_float_eq(k.roofline_ns, 160.016, 1e-6);
  cr_assert_float_eq(fwd, 2 * 20000 / (2 * 2.78), 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, &f.m->layers[0], 10), fwd, 1e-9,
                     "the layer's forward is its batch-norm kernel");
  double bwd = ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 1, &k);
  cr_assert_eq(k.passes, 3);
  cr_assert_float_eq(bwd, 3 * 10000 / 1.66, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, &f.m->layers[0], 10), bwd, 1e-9);
  ds_test_compute_free(&f);
}

/* bn at batch 40: 40000 per channel, 160000 B > 128 KiB: the multi-pass
 * kernels, 3 passes forward (the SMs' 3 * 80000 / (2 * 2.78e9) = 43165.47
 * ns, above a CTA's 3 * 40000 / 2.92e9 = 41095.9) and 5 backward (a CTA's
 * 5 * 40000 / 1.66e9 = 120481.93 ns, above the SMs' 71942.4). */
Test(batch_norm, nchw_channels_too_large_to_cache_take_more_passes) {
  struct ds_test_compute f;
  setup(&f, "BnGPU", DS_DTYPE_FP32, DS_AMP_NONE);
  struct ds_bn_kernel k;
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 40, 0, &k),
                     3 * 80000 / (2 * 2.78), 1e-6);
  cr_assert_eq(k.passes, 3);
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 40, 1, &k),
                     5 * 40000 / 1.66, 1e-6);
  cr_assert_eq(k.passes, 5);
  ds_test_compute_free(&f);
}

/* bn2 at batch 10: 64 channels of 1000 on 4 SMs, 16 CTAs a wave: 4 waves of
 * 2 * 1000 / 2.92e9 = 2739.7 ns; the SMs' 2 * 64000 / (4 * 2.78e9) =
 * 11510.8 ns, the longer. */
Test(batch_norm, many_channels_share_each_sms_rate) {
  struct ds_test_compute f;
  setup(&f, "BnGPU", DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[1], 10, 0, NULL),
                     2 * 64000 / (4 * 2.78), 1e-6);
  ds_test_compute_free(&f);
}

/* --channels-last: cuDNN's persistent NHWC kernels, 3 passes forward and 5
 * backward at the roofline: 3 * 20000 * 4 + 16 = 240016 B = 240.016 ns;
 * backward 5 * 20000 * 4 + 4 weights * 8 B (read, gradient written) =
 * 400032 B. */
Test(batch_norm, channels_last_runs_at_the_roofline) {
  struct ds_test_compute f;
  setup(&f, "BnGPU", DS_DTYPE_FP32, DS_AMP_NONE);
  f.c.channels_last = 1;
  struct ds_bn_kernel k;
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 0, &k), 240.016,
                     1e-6);
  cr_assert_eq(k.passes, 3);
  cr_assert_not(k.sm_bound);
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 1, &k), 400.032,
                     1e-6);
  cr_assert_eq(k.passes, 5);
  ds_test_compute_free(&f);
}

/* Under --amp fp16 cuDNN runs on half inputs (2 B): 20000 B cached per
 * channel, single read, the same rates per element (the SMs' 7194.2 ns, as
 * in fp32 above); bf16 is
 * not cuDNN's (Normalization.cpp: use_cudnn excludes it): 3 passes of 2 B
 * at the roofline, 120000 B + 4 weights * 8 B (fp32 read, half written and
 * read) = 120032 B. */
Test(batch_norm, fp16_is_cudnns_and_bf16_is_not) {
  struct ds_test_compute f;
  setup(&f, "BnGPU", DS_DTYPE_FP32, DS_AMP_FP16);
  struct ds_bn_kernel k;
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 0, &k),
                     2 * 20000 / (2 * 2.78), 1e-6);
  cr_assert(k.sm_bound);
  ds_test_compute_free(&f);
  setup(&f, "BnGPU", DS_DTYPE_FP32, DS_AMP_BF16);
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 0, &k), 120.032,
                     1e-6);
  cr_assert_eq(k.passes, 3);
  cr_assert_not(k.sm_bound);
  ds_test_compute_free(&f);
}

/* Without a clock in the GPU table there is no per-SM rate: the roofline. */
Test(batch_norm, a_gpu_without_a_clock_has_no_sm_bound) {
  struct ds_test_compute f;
  setup(&f, "NoClockGPU", DS_DTYPE_FP32, DS_AMP_NONE);
  struct ds_bn_kernel k;
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 0, &k), 160.016,
                     1e-6);
  cr_assert_not(k.sm_bound);
  ds_test_compute_free(&f);
}

/* The shipped table: on a V100 (80 SMs, 1530 MHz, 900 GB/s at 0.878) the
 * forward of ResNet-50's layer1 batch norm (64 channels of 32x56x56, fp32,
 * multi-pass) is bound by HBM, not by its SMs (64 SMs: 3 * 100352 / (2.78 *
 * 1.53e9) = 70.8 us < 3 * 25.7 MB / 790 GB/s = 97.5 us); on an H200 (132
 * SMs, 1980 MHz, 4.8 TB/s at 0.869) by its SMs (54.7 us against 18.5). */
Test(batch_norm, the_sm_bound_shows_on_hopper_not_on_volta) {
  const struct {
    const char *topo;
    int sm_wins;
  } cases[] = {{"topologies/dgx1-v100.yaml", 0}, {"validation/topologies/nd-h200-v5.yaml", 1}};
  struct ds_model *m = ds_test_model("models/resnet50.yaml");
  int32_t l = -1;
  for (int32_t i = 0; i < m->n_layers; i++)
    if (strcmp(m->layers[i].name, "layer1.0.bn1") == 0) l = i;
  cr_assert(l >= 0);
  cr_assert_eq(m->layers[l].bn_channels, 64);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct ds_topo *t;
    struct ds_compute c;
    struct ds_err err = {0};
    cr_assert_eq(ds_topo_load(cases[i].topo, "topologies/gpus.yaml", &t, &err), DS_OK, "%s",
                 err.msg);
    cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK);
    struct ds_bn_kernel k;
    ds_batch_norm_ns(&c, &m->layers[l], 32, 0, &k);
    cr_assert_eq(k.passes, 3);
    cr_assert_eq(k.sm_rate_ns > k.roofline_ns, cases[i].sm_wins, "%s: sm %.0f roofline %.0f",
                 cases[i].topo, k.sm_rate_ns, k.roofline_ns);
    ds_topo_free(t);
  }
  ds_model_free(m);
}

/* --amp fp16 --channels-last: cuDNN's persistent NHWC kernels. bn at batch
 * 10: 10000 pixels, 2 channels (one block of 64). Forward: ceil(10000 /
 * 384) = 27 CTAs would be needed, more than 8: the grid is capped at 8 x 1,
 * 8 x 384 = 3072 pixels kept (2 passes), 6928 read again (3): 2 B x 2 x
 * (3072 x 2 + 6928 x 3) = 107712 B, + 4 weights x 8 B (fp32 read, half
 * written and read) = 107744 B = 107.744 ns; one round: 4810 + 8 x 49.2 =
 * 5203.6 ns; 5311.344 ns. Backward: 8 x 192 = 1536 kept (3 passes), 8464
 * again (5): 4 x (4608 + 42320) = 187712 B + 4 x 10 B = 187752 B; one
 * round 4810 + 8 x 11.2 = 4899.6 ns; 5087.352 ns. */
Test(batch_norm, channels_last_half_caps_the_grid_and_rereads_the_rest) {
  struct ds_test_compute f;
  setup(&f, "BnGPU", DS_DTYPE_FP32, DS_AMP_FP16);
  f.c.channels_last = 1;
  struct ds_bn_kernel k;
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 0, &k), 5311.344,
                     1e-6);
  cr_assert_eq(k.grid_x, 8);
  cr_assert_eq(k.grid_y, 1);
  cr_assert_eq(k.rounds, 1);
  cr_assert_eq(k.passes, 3);
  cr_assert_eq(k.kernels, 1);
  cr_assert_float_eq(k.bytes, 107744, 1e-6);
  cr_assert_float_eq(k.sync_ns, 5203.6, 1e-6);
  cr_assert_not(k.sm_bound);
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 1, &k), 5087.352,
                     1e-6);
  cr_assert_eq(k.grid_x, 8);
  cr_assert_eq(k.passes, 5);
  cr_assert_float_eq(k.bytes, 187752, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, &f.m->layers[0], 10), 5087.352, 1e-6,
                     "the layer's backward is its batch-norm kernel");
  ds_test_compute_free(&f);
}

/* bn3 at batch 100: 1000 pixels, 256 channels = 4 blocks. Forward:
 * ceil(1000 / 384) = 3 CTAs hold every pixel; floor(8 / 3) = 2 blocks side
 * by side, so 3 x 2 CTAs and 2 rounds; 2 passes: 2 x 256 x 1000 x 2 =
 * 1024000 B + 512 x 8 = 1028096 B; rounds 2 x (4810 + 3 x 49.2) = 9915.2
 * ns; 10943.296 ns. Backward: ceil(1000 / 192) = 6 CTAs, one block at a
 * time (floor(8 / 6) = 1): 4 rounds of 4810 + 6 x 11.2 = 19508.8 ns; 3
 * passes 1536000 B + 512 x 10 = 1541120 B; 21049.92 ns. */
Test(batch_norm, channels_last_half_keeps_small_layers_on_chip_in_rounds) {
  struct ds_test_compute f;
  setup(&f, "BnGPU", DS_DTYPE_FP32, DS_AMP_FP16);
  f.c.channels_last = 1;
  cr_assert_eq(f.m->layers[4].bn_channels, 256);
  struct ds_bn_kernel k;
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[4], 100, 0, &k), 10943.296,
                     1e-6);
  cr_assert_eq(k.grid_x, 3);
  cr_assert_eq(k.grid_y, 2);
  cr_assert_eq(k.rounds, 2);
  cr_assert_eq(k.passes, 2);
  cr_assert_float_eq(k.bytes, 1028096, 1e-6);
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[4], 100, 1, &k), 21049.92,
                     1e-6);
  cr_assert_eq(k.grid_x, 6);
  cr_assert_eq(k.grid_y, 1);
  cr_assert_eq(k.rounds, 4);
  cr_assert_eq(k.passes, 3);
  ds_test_compute_free(&f);
}

/* bf16 channels-last is PyTorch's own pair of kernels per direction
 * (Normalization.cuh: collect statistics, transform; backward reduce,
 * elementwise): 3 and 5 passes at the roofline and two launches. With a 1
 * us kernel overhead: forward 120032 B (as above) = 120.032 ns + 2 x 1000
 * ns; NCHW bf16 keeps one launch. */
Test(batch_norm, bf16_channels_last_launches_two_kernels_per_direction) {
  struct ds_test_compute f;
  ds_test_compute_setup(&f, gpus_text, "BnGPU", 0.5, 1, model_text, DS_DTYPE_FP32,
                        DS_AMP_BF16);
  f.c.channels_last = 1;
  struct ds_bn_kernel k;
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 0, &k), 2120.032,
                     1e-6);
  cr_assert_eq(k.kernels, 2);
  cr_assert_eq(k.passes, 3);
  cr_assert_eq(k.rounds, 0, "no persistent grid");
  f.c.channels_last = 0;
  cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 0, &k), 1120.032,
                     1e-6);
  cr_assert_eq(k.kernels, 1);
  ds_test_compute_free(&f);
}

/* The shipped H200 topology and ResNet-50 at batch 128 (--amp fp16
 * --channels-last): the grids cuDNN launched in this project's trace
 * (bench/results/gpu-2026-11-26b-h200/prof/resnet50-amp-b128-nhwc.json.gz,
 * bench/bn_nhwc.py --rows): layer1.0.bn1 (64 x 56x56) 264 x 1 both ways;
 * layer3.0.bn1 (256 x 28x28) 262 x 1 forward, 264 x 1 backward;
 * layer3.1.bn1 (256 x 14x14) 66 x 4 forward, 131 x 2 backward; layer4.1.bn3
 * (2048 x 7x7) 17 x 15 forward, 33 x 8 backward. */
Test(batch_norm, h200_grids_are_the_traced_ones) {
  const struct {
    const char *layer;
    int fwd_x, fwd_y, bwd_x, bwd_y;
  } cases[] = {{"layer1.0.bn1", 264, 1, 264, 1},
               {"layer3.0.bn1", 262, 1, 264, 1},
               {"layer3.1.bn1", 66, 4, 131, 2},
               {"layer4.1.bn3", 17, 15, 33, 8}};
  struct ds_model *m = ds_test_model("models/resnet50.yaml");
  struct ds_topo *t;
  struct ds_compute c;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("validation/topologies/nd-h200-v5.yaml", "topologies/gpus.yaml", &t,
                            &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_FP16, &c, &err), DS_OK);
  c.channels_last = 1;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int32_t l = -1;
    for (int32_t j = 0; j < m->n_layers; j++)
      if (strcmp(m->layers[j].name, cases[i].layer) == 0) l = j;
    cr_assert(l >= 0, "%s", cases[i].layer);
    struct ds_bn_kernel k;
    ds_batch_norm_ns(&c, &m->layers[l], 128, 0, &k);
    cr_assert_eq(k.grid_x, cases[i].fwd_x, "%s forward: %d", cases[i].layer, k.grid_x);
    cr_assert_eq(k.grid_y, cases[i].fwd_y, "%s forward: %d", cases[i].layer, k.grid_y);
    ds_batch_norm_ns(&c, &m->layers[l], 128, 1, &k);
    cr_assert_eq(k.grid_x, cases[i].bwd_x, "%s backward: %d", cases[i].layer, k.grid_x);
    cr_assert_eq(k.grid_y, cases[i].bwd_y, "%s backward: %d", cases[i].layer, k.grid_y);
  }
  ds_topo_free(t);
  ds_model_free(m);
}

/* bench/bn_nhwc.py, which compares the traced kernels with this model, and
 * compute_layer.c charge the same: ResNet-50's batch norms at batch 128 on the
 * H200 (--amp fp16 --channels-last), forward and backward, sum to the
 * script's "model" total for the trace, 7.268 ms (its rule without the
 * weights' 0.5 MB), against 7.044 ms of kernels traced. */
Test(batch_norm, compute_and_bn_nhwc_py_agree_on_resnet50) {
  struct ds_model *m = ds_test_model("models/resnet50.yaml");
  struct ds_topo *t;
  struct ds_compute c;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("validation/topologies/nd-h200-v5.yaml", "topologies/gpus.yaml", &t,
                            &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_FP16, &c, &err), DS_OK);
  c.channels_last = 1;
  double ns = 0;
  int layers = 0;
  for (int32_t j = 0; j < m->n_layers; j++) {
    if (m->layers[j].bn_channels == 0) continue;
    ns += ds_batch_norm_ns(&c, &m->layers[j], 128, 0, NULL) +
          ds_batch_norm_ns(&c, &m->layers[j], 128, 1, NULL);
    layers++;
  }
  cr_assert_eq(layers, 53);
  FILE *p = popen("python3 bench/bn_nhwc.py "
                  "bench/results/gpu-2026-11-26b-h200/prof/resnet50-amp-b128-nhwc.json.gz 2>&1",
                  "r");
  cr_assert_not_null(p);
  char out[4096];
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  cr_assert_eq(pclose(p), 0, "%s", out);
  const char *total = strstr(out, "total: measured 7.044 ms/iter  model ");
  cr_assert_not_null(total, "%s", out);
  double script_ms = atof(total + strlen("total: measured 7.044 ms/iter  model "));
  cr_assert_float_eq(script_ms, 7.268, 1e-9, "%s", out);
  cr_assert_float_eq(ns / 1e6, script_ms, 0.002, "compute_layer.c %.4f ms", ns / 1e6);
  ds_topo_free(t);
  ds_model_free(m);
}

/* The CTAs per SM come from the GPU's resident threads (norm.c: floor(threads
 * / 512)): three made-up GPUs of 16 SMs at 1000 MHz, 1000 GB/s, differing
 * only in compute capability: 9.0 (2048 threads, 4 CTAs an SM, 64 a wave),
 * 8.9 (1536, 3, 48), 7.5 (1024, 2, 32). bn at batch 10: 49 channels of 1000
 * elements, fp32. Backward: 8000 B cached, single read, 3 passes; on 9.0
 * one wave, 3 * 1000 / 1.66e9 = 1807.23 ns, below the SMs' 3 * 49000 / (16
 * * 2.78e9) = 3304.86 ns; on 8.9 and 7.5 two waves, 2 * 1807.23 = 3614.46
 * ns, the longer. Forward: 2 passes, two waves 2 * 2 * 1000 / 2.92e9 =
 * 1369.9 ns < the SMs' 2 * 49000 / (16 * 2.78e9) = 2203.24 ns on all
 * three. */
Test(batch_norm, ctas_per_sm_follow_the_gpus_resident_threads) {
  static const char *gpus =
      "schema_version: 1\ngpus:\n"
      "  - {name: Sm90, arch: Hopper, compute_capability: \"9.0\", sms: 16, fp32: 10TFLOPS,\n"
      "     fp16: 160TFLOPS, mem: 16GB, mem_bw: 1000GBps, boost_mhz: 1000}\n"
      "  - {name: Sm89, arch: Ada, compute_capability: \"8.9\", sms: 16, fp32: 10TFLOPS,\n"
      "     fp16: 160TFLOPS, mem: 16GB, mem_bw: 1000GBps, boost_mhz: 1000}\n"
      "  - {name: Sm75, arch: Turing, compute_capability: \"7.5\", sms: 16, fp32: 10TFLOPS,\n"
      "     fp16: 160TFLOPS, mem: 16GB, mem_bw: 1000GBps, boost_mhz: 1000}\n";
  static const char *model =
      "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
      "  - {name: bn, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 39200,"
      " act_bytes: 19600, params: [{name: bn.weight, numel: 49}, {name: bn.bias, numel: 49}]}\n"
      "buffers:\n"
      "  - {name: bn.running_mean, numel: 49, bytes: 196, dtype: float32}\n";
  static const struct {
    const char *gpu;
    int32_t threads;
    double bwd_ns;
  } cases[] = {{"Sm90", 2048, 3 * 49000 / (16 * 2.78)},
               {"Sm89", 1536, 2 * 3 * 1000 / 1.66},
               {"Sm75", 1024, 2 * 3 * 1000 / 1.66}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_test_compute f;
    ds_test_compute_setup(&f, gpus, cases[i].gpu, 0.5, 0, model, DS_DTYPE_FP32, DS_AMP_NONE);
    cr_assert_eq(f.c.sm_max_threads, cases[i].threads, "%s", cases[i].gpu);
    cr_assert_eq(f.m->layers[0].bn_channels, 49);
    struct ds_bn_kernel k;
    cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 1, &k), cases[i].bwd_ns, 1e-6,
                       "%s", cases[i].gpu);
    cr_assert_eq(k.passes, 3);
    cr_assert_float_eq(ds_batch_norm_ns(&f.c, &f.m->layers[0], 10, 0, NULL),
                       2 * 49000 / (16 * 2.78), 1e-6, "%s", cases[i].gpu);
    ds_test_compute_free(&f);
  }
}
