/*
 * Tests for dense convolutions timed by their implicit GEMM's tiles
 * (sim/train/compute.h conv_tiles; the GPU table's `conv_tiles`,
 * sim/net/gpu_table.c): a pass takes its fixed time plus its FLOPs at
 * eff x peak x the tiles' useful share, M = batch x output positions by
 * n = min(Cin k^2, Cout) in tile_m x tile_n tiles, in waves of the GPU's
 * SMs (a 1x1 layer's shallow reduction the narrow side); a GPU or math
 * without tiles, a grouped layer, or a topology's conv_efficiency, keeps
 * the pooled efficiency; a calibration file's convolution value of the math
 * clears the table's tiles; bad keys are refused with file, line and key.
 * Worked by hand on a made-up GPU with round numbers.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "sim/net/gpu_table.h"
#include "sim/net/topo.h"
#include "sim/train/calib.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "tests/support.h"
#include "traces/calib_file.h"

/* 4 SMs, half 100 TFLOPS, 1000 GB/s at 0.8. TileGPU: half convolutions by
 * 64 x 128 tiles, forward at 0.5 plus 2 us, backward at 0.25 plus 10 us
 * (pooled conv_half 0.4 for anything else); PooledGPU: conv_half 0.4 only. */
#define GPU_HEAD(name)                                                                     \
  "  - name: " name "\n    # no arch\n    sms: 4\n    fp32: 10TFLOPS\n    tf32: 50TFLOPS\n" \
  "    fp16: 100TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"                              \
  "    efficiency: {conv_half: 0.4, memory: 0.8}\n"
static const char *gpus_text =
    "schema_version: 1\ngpus:\n" GPU_HEAD("TileGPU")
    "    conv_tiles: {half: {tile_m: 64, tile_n: 128, fwd: 0.5, bwd: 0.25, fwd_us: 2,"
    " bwd_us: 10}}\n" GPU_HEAD("PooledGPU");

/* A dense 3x3 convolution, 32 -> 64 channels, 128 output positions per
 * sample: the GEMM's narrow side n = min(32 x 9, 64) = 64; forward FLOPs
 * 2 x 64 x 288 x 128 = 4718592 per sample, backward twice that; its 18432
 * weights the only bytes (fp16: 36864 B forward, 0.046 us at 800 GB/s, so
 * the FLOPs bind). */
/* Then a 1x1 convolution, 16 -> 64 channels, 128 positions: the reduction
 * depth is the narrow side, n = min(16 x 1, 64) = 16; forward FLOPs
 * 2 x 64 x 16 x 128 = 262144 per sample (its 1024 weights, 2048 B at
 * fp16, 0.003 us: the FLOPs bind). Then a grouped 3x3 convolution, groups
 * 2, 16 channels per group, 64 out, 128 positions: forward FLOPs
 * 2 x 64 x 144 x 128 = 2359296 per sample (9216 weights, 0.023 us). */
static const char *model_text =
    "schema_version: 1\nname: ct\nsample: s\ndefault_batch: 2\noptimizer: sgd\nlayers:\n"
    "  - {name: conv, class: conv, fwd_flops: 4718592, bwd_flops: 9437184, fwd_bytes: 0,"
    " act_bytes: 0, params: [{name: conv.weight, numel: 18432, shape: [64, 32, 3, 3]}]}\n"
    "  - {name: pw, class: conv, fwd_flops: 262144, bwd_flops: 524288, fwd_bytes: 0,"
    " act_bytes: 0, params: [{name: pw.weight, numel: 1024, shape: [64, 16, 1, 1]}]}\n"
    "  - {name: gc, class: conv, fwd_flops: 2359296, bwd_flops: 4718592, fwd_bytes: 0,"
    " act_bytes: 0, groups: 2, stride: 1,"
    " params: [{name: gc.weight, numel: 9216, shape: [64, 16, 3, 3]}]}\n";

Test(conv_tiles, the_useful_share_counts_padded_tiles_and_idle_sms) {
  /* M 256 x n 64 in 64 x 128 tiles: 4 x 1 tiles, one wave of 4 SMs, each
   * tile half used (n 64 of 128): 256 x 64 / (4 x 64 x 128) = 0.5 */
  cr_assert_float_eq(ds_compute_conv_tile_share(256, 64, 64, 128, 4), 0.5, 1e-12);
  /* M 384: 6 tiles, two waves (8 tile slots): 384 x 64 / (8 x 8192) = 0.375 */
  cr_assert_float_eq(ds_compute_conv_tile_share(384, 64, 64, 128, 4), 0.375, 1e-12);
  /* M 512: 8 tiles, two full waves: 0.5 again; n 256: 8 x 2 tiles, 4 waves,
   * every tile full: 1 */
  cr_assert_float_eq(ds_compute_conv_tile_share(512, 64, 64, 128, 4), 0.5, 1e-12);
  cr_assert_float_eq(ds_compute_conv_tile_share(512, 256, 64, 128, 4), 1.0, 1e-12);
  /* nothing to tile: the share is 1 */
  cr_assert_float_eq(ds_compute_conv_tile_share(512, 64, 0, 128, 4), 1.0, 0);
}

/* Layer `layer`'s passes at `batch` on `gpu`, in microseconds. */
static void layer_passes_us(const char *gpu, int layer, int64_t batch, double *fwd,
                            double *bwd) {
  struct ds_test_compute f;
  ds_test_compute_setup(&f, gpus_text, gpu, 1, 0, model_text, DS_DTYPE_FP16, DS_AMP_NONE);
  *fwd = ds_compute_fwd_ns(&f.c, &f.m->layers[layer], batch) / 1e3;
  *bwd = ds_compute_bwd_ns(&f.c, &f.m->layers[layer], batch) / 1e3;
  ds_test_compute_free(&f);
}

static void passes_us(const char *gpu, int64_t batch, double *fwd, double *bwd) {
  layer_passes_us(gpu, 0, batch, fwd, bwd);
}

Test(conv_tiles, a_pass_is_its_fixed_time_and_its_flops_at_the_tiles_rate) {
  double fwd, bwd;
  /* batch 2: M 256, share 0.5. Forward 9437184 FLOPs at 100e12 x 0.5 x 0.5
   * = 25 TFLOP/s: 0.37748736 us, + 2 us. Backward 18874368 at 100e12 x
   * 0.25 x 0.5 = 12.5 TFLOP/s: 1.50994944 us, + 10 us. */
  passes_us("TileGPU", 2, &fwd, &bwd);
  cr_assert_float_eq(fwd, 2.37748736, 1e-9, "%.9f", fwd);
  cr_assert_float_eq(bwd, 11.50994944, 1e-9, "%.9f", bwd);
  /* batch 3: M 384, share 0.375 (a second, part-empty wave). Forward
   * 14155776 at 18.75 TFLOP/s: 0.75497472 us + 2; backward 28311552 at
   * 9.375: 3.01989888 us + 10. */
  passes_us("TileGPU", 3, &fwd, &bwd);
  cr_assert_float_eq(fwd, 2.75497472, 1e-9, "%.9f", fwd);
  cr_assert_float_eq(bwd, 13.01989888, 1e-9, "%.9f", bwd);
  /* PooledGPU, no tiles: conv_half 0.4 = 40 TFLOP/s, batch 2: 0.2359296 us
   * and 0.4718592 us, no fixed time */
  passes_us("PooledGPU", 2, &fwd, &bwd);
  cr_assert_float_eq(fwd, 0.2359296, 1e-9, "%.9f", fwd);
  cr_assert_float_eq(bwd, 0.4718592, 1e-9, "%.9f", bwd);
}

Test(conv_tiles, a_shallow_reduction_is_the_gemms_narrow_side) {
  double fwd, bwd;
  /* the 1x1 16 -> 64 at batch 2: M 256 x n 16 (not Cout's 64) in 64 x 128
   * tiles, 4 x 1 tiles in one wave: 256 x 16 / (4 x 64 x 128) = 0.125.
   * Forward 524288 FLOPs at 100e12 x 0.5 x 0.125 = 6.25 TFLOP/s:
   * 0.08388608 us + 2; backward 1048576 at 3.125 TFLOP/s: 0.33554432 us
   * + 10. */
  layer_passes_us("TileGPU", 1, 2, &fwd, &bwd);
  cr_assert_float_eq(fwd, 2.08388608, 1e-9, "%.9f", fwd);
  cr_assert_float_eq(bwd, 10.33554432, 1e-9, "%.9f", bwd);
}

Test(conv_tiles, other_maths_and_grouped_layers_keep_their_efficiencies) {
  /* the tiles are half's: TF32 (fp32 model, --tf32 conv) at nothing
   * measured takes flops_efficiency 1: 9437184 / 50e12 = 0.18874368 us */
  struct ds_test_compute f;
  ds_test_compute_setup(&f, gpus_text, "TileGPU", 1, 0, model_text, DS_DTYPE_FP32,
                        DS_AMP_NONE);
  ds_compute_set_tf32(&f.c, f.topo_loaded, DS_TF32_CONV);
  cr_assert_eq(f.c.conv_tiles.tile_m, 0);
  double fwd = ds_compute_fwd_ns(&f.c, &f.m->layers[0], 2) / 1e3;
  cr_assert_float_eq(fwd, 0.18874368, 1e-9, "%.9f", fwd);
  ds_test_compute_free(&f);
  /* the grouped layer in half on TileGPU (no clock, so no grouped-kernel
   * table either): pooled conv_half 0.4 = 40 TFLOP/s, batch 2: forward
   * 4718592 / 40e12 = 0.1179648 us, backward 0.2359296 us, no fixed time */
  double bwd;
  layer_passes_us("TileGPU", 2, 2, &fwd, &bwd);
  cr_assert_float_eq(fwd, 0.1179648, 1e-9, "%.9f", fwd);
  cr_assert_float_eq(bwd, 0.2359296, 1e-9, "%.9f", bwd);
}

Test(conv_tiles, the_topologys_conv_efficiency_clears_the_tiles) {
  /* conv_efficiency 0.8 on TileGPU: the toy 3x3 at 80 TFLOP/s, batch 2:
   * 9437184 / 80e12 = 0.1179648 us forward, 0.2359296 us backward, no
   * fixed time */
  struct ds_test_compute f;
  ds_test_compute_setup_extra(&f, gpus_text, "TileGPU", 1, 0, "  conv_efficiency: 0.8\n",
                              model_text, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert_eq(f.c.conv_tiles.tile_m, 0);
  double fwd = ds_compute_fwd_ns(&f.c, &f.m->layers[0], 2) / 1e3;
  double bwd = ds_compute_bwd_ns(&f.c, &f.m->layers[0], 2) / 1e3;
  cr_assert_float_eq(fwd, 0.1179648, 1e-9, "%.9f", fwd);
  cr_assert_float_eq(bwd, 0.2359296, 1e-9, "%.9f", bwd);
  ds_test_compute_free(&f);
}

Test(conv_tiles, a_calibrations_convolution_value_clears_the_tables_tiles) {
  struct ds_gpu_spec g;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_lookup_gpu_text(gpus_text, "TileGPU", &g, &err, NULL), DS_OK, "%s", err.msg);
  cr_assert_eq(g.conv_tiles[DS_GPU_MATH_HALF].tile_m, 64);
  cr_assert_eq(g.conv_tiles[DS_GPU_MATH_HALF].tile_n, 128);
  cr_assert_float_eq(g.conv_tiles[DS_GPU_MATH_HALF].call_ns[1], 10e3, 1e-9);
  /* a TF32 value leaves half's tiles; conv_half_fwd (or conv_half) clears them */
  const char *files[2] = {"schema_version: 1\nefficiency:\n  conv_tf32: 0.35\n",
                          "schema_version: 1\nefficiency:\n  conv_half: 0.45\n"
                          "  conv_half_fwd: 0.5\n"};
  const int32_t want[2] = {64, 0};
  for (int i = 0; i < 2; i++) {
    struct ds_calib cal;
    cr_assert_eq(ds_test_load_calib_text(files[i], &cal, &err, NULL), DS_OK, "%s", err.msg);
    struct ds_gpu_spec h = g;
    ds_calib_apply_gpu(&cal, &h);
    cr_assert_eq(h.conv_tiles[DS_GPU_MATH_HALF].tile_m, want[i], "file %d", i);
  }
}

Test(conv_tiles, bad_tiles_are_refused_with_their_line_and_key) {
  const char *bad[][2] = {
      {"conv_tiles: {half: {tile_m: 64, tile_n: 128, fwd: 0.5, bwd: 1.5, fwd_us: 2, bwd_us: 1}}",
       "expected an achieved / peak fraction from 0.01 to 1, got 1.5"},
      {"conv_tiles: {half: {tile_m: 0, tile_n: 128, fwd: 0.5, bwd: 0.5, fwd_us: 2, bwd_us: 1}}",
       "tile_m"},
      {"conv_tiles: {half: {tile_m: 64, tile_n: 128, fwd: 0.5, bwd: 0.5, fwd_us: -1, bwd_us: 1}}",
       "expected microseconds in [0, 1000], got -1"},
      {"conv_tiles: {half: {tile_m: 64, tile_n: 128, fwd: 0.5, bwd: 0.5, fwd_us: 2}}",
       "bwd_us"},
      {"conv_tiles: {fp16: {tile_m: 64}}", "unknown key 'fp16'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ds_test_gpu_entry_refused(bad[i][0], bad[i][1]);
}
