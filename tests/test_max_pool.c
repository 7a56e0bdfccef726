/*
 * Tests for max-pool's kernels (sim/train/compute_pool.c ds_compute_max_pool_ns,
 * compute.h): the model file's pool keys (model_ops.c), the windows counted
 * from them, the per-SM-clock rates of PyTorch's NCHW and channels-last
 * kernels, the zero fill before the backward, and the roofline where it is
 * the longer or the GPU has no clock. Expected values are worked by hand on
 * made-up GPUs (ds_test_clock_gpus): ClockGPU, 4 SMs at 1000 MHz and 1000
 * GB/s reached in full, no kernel overhead; the rates are compute_pool.c's (SM
 * cycles per element plus per (element, window) pair, fitted on kernel
 * times less kernel_overhead): NCHW forward 2.21 + 0.215, backward 2.43 +
 * 0.193; channels-last forward 2.35 + 0.231, backward 1.06 + 0.559.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "tests/support.h"

/* pool: 3x3, stride 2, padding 1 on 2 channels of 8x8 per sample. A side
 * of 8 gives 4 outputs whose windows hold 2, 3, 3, 3 inputs (the first
 * starts in the padding): 11 per side, so 2 x 11 x 11 = 242 (element,
 * window) pairs, 2 x 4 x 4 = 32 outputs, 128 inputs. Bytes in fp32: x 512,
 * y 128, the int64 indices 256; forward x + y + indices = 896 (op_fwd_bytes),
 * backward dy 128 + indices 256 + dx zero-filled and written 2 x 512 =
 * 1408 (bwd_bytes). relu: a memory layer without the keys. */
static const char *model_text = ds_test_pool_model;

static void setup(struct ds_test_compute *f, const char *gpu) {
  ds_test_compute_setup(f, ds_test_clock_gpus, gpu, 0.5, 0, model_text, DS_DTYPE_FP32, DS_AMP_NONE);
}

Test(max_pool, the_keys_give_the_window_and_its_counts) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU");
  const struct ds_pool *p = &f.m->layers[0].pool;
  cr_assert_eq(p->kernel[0], 3);
  cr_assert_eq(p->kernel[1], 3);
  cr_assert_eq(p->stride[1], 2);
  cr_assert_eq(p->padding[0], 1);
  cr_assert_eq(p->channels, 2);
  cr_assert_eq(p->height, 8);
  cr_assert_eq(p->width, 8);
  cr_assert_eq(f.m->layers[1].pool.kernel[0], 0, "a layer without the keys is no pool");
  double in, out, pairs;
  ds_compute_pool_geometry(p, &in, &out, &pairs);
  cr_assert_float_eq(in, 128, 0);
  cr_assert_float_eq(out, 32, 0);
  cr_assert_float_eq(pairs, 242, 0);
  /* VGG's 2x2, stride 2, no padding: every input in one window */
  struct ds_pool vgg = {{2, 2}, {2, 2}, {0, 0}, 64, 224, 224};
  ds_compute_pool_geometry(&vgg, &in, &out, &pairs);
  cr_assert_float_eq(out, 64.0 * 112 * 112, 0);
  cr_assert_float_eq(pairs, in, 0);
  /* a rectangle: 3x1, stride 1, padding [1, 0] on 1x4x5: 4 x 5 outputs,
   * rows 2 + 3 + 3 + 2 = 10 inputs per column of windows */
  struct ds_pool rect = {{3, 1}, {1, 1}, {1, 0}, 1, 4, 5};
  ds_compute_pool_geometry(&rect, &in, &out, &pairs);
  cr_assert_float_eq(out, 20, 0);
  cr_assert_float_eq(pairs, 50, 0);
  ds_test_compute_free(&f);
}

/* Batch 1000. Forward: 1000 x (32 x 2.21 + 242 x 0.215) = 1000 x (70.72 +
 * 52.03) = 122750 cycles on 4 SMs at 1 GHz = 30687.5 ns; its bytes 896000 B
 * at 1000 GB/s take 896 ns. Backward: the fill writes dx, 1000 x 128 x 4 =
 * 512000 B = 512 ns; the kernel 1000 x (128 x 2.43 + 242 x 0.193) = 1000 x
 * (311.04 + 46.706) = 357746 cycles = 89436.5 ns against its 896000 B =
 * 896 ns. */
Test(max_pool, nchw_kernels_run_at_the_sm_rate) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU");
  const struct ds_layer *l = &f.m->layers[0];
  struct ds_pool_kernel k;
  double fwd = ds_compute_max_pool_ns(&f.c, l, 1000, 0, &k);
  cr_assert_float_eq(k.cycles, 122750, 1e-6);
  cr_assert_float_eq(k.roofline_ns, 896, 1e-9);
  cr_assert_float_eq(k.fill_ns, 0, 0, "no fill in forward");
  cr_assert_float_eq(fwd, 30687.5, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, l, 1000), fwd, 1e-9,
                     "the layer's forward is its pool kernel");
  double bwd = ds_compute_max_pool_ns(&f.c, l, 1000, 1, &k);
  cr_assert_float_eq(k.fill_bytes, 512000, 1e-6);
  cr_assert_float_eq(k.fill_ns, 512, 1e-9);
  cr_assert_float_eq(k.roofline_ns, 896, 1e-9);
  cr_assert_float_eq(k.cycles, 357746, 1e-6);
  cr_assert_float_eq(bwd, 512 + 89436.5, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, l, 1000), bwd, 1e-9);
  ds_test_compute_free(&f);
}

/* --channels-last: forward 1000 x (32 x 2.35 + 242 x 0.231) = 1000 x (75.2
 * + 55.902) = 131102 cycles = 32775.5 ns; backward 1000 x (128 x 1.06 +
 * 242 x 0.559) = 1000 x (135.68 + 135.278) = 270958 cycles = 67739.5 ns,
 * after the same fill (512 ns). */
Test(max_pool, channels_last_runs_the_nhwc_kernels_rates) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU");
  f.c.channels_last = 1;
  const struct ds_layer *l = &f.m->layers[0];
  cr_assert_float_eq(ds_compute_max_pool_ns(&f.c, l, 1000, 0, NULL), 32775.5, 1e-6);
  cr_assert_float_eq(ds_compute_max_pool_ns(&f.c, l, 1000, 1, NULL), 512 + 67739.5, 1e-6);
  f.c.channels_last = 0;
  cr_assert_gt(ds_compute_max_pool_ns(&f.c, l, 1000, 1, NULL), 512 + 67739.5 + 1000,
               "NCHW's backward is the slower");
  ds_test_compute_free(&f);
}

/* SlowMemGPU (1000 SMs at 2 GHz, 1 GB/s): the SMs take 122750 / 2e12 s =
 * 61.4 ns, the bytes 896000 ns: the roofline wins. Backward: the fill
 * 512000 ns plus the kernel's 896000 B = 896000 ns, which is all 1408000 B
 * at the roofline. */
Test(max_pool, the_roofline_wins_when_memory_is_slow) {
  struct ds_test_compute f;
  setup(&f, "SlowMemGPU");
  const struct ds_layer *l = &f.m->layers[0];
  struct ds_pool_kernel k;
  cr_assert_float_eq(ds_compute_max_pool_ns(&f.c, l, 1000, 0, &k), 896000, 1e-6);
  cr_assert_float_eq(k.sm_rate_ns, 122750 / 2000.0, 1e-9);
  cr_assert_float_eq(ds_compute_max_pool_ns(&f.c, l, 1000, 1, &k), 1408000, 1e-6);
  cr_assert_lt(k.sm_rate_ns, k.roofline_ns);
  ds_test_compute_free(&f);
}

/* Without a clock: one kernel of all the bytes at the roofline, as any
 * memory layer (896 ns forward, 1408 ns backward). */
Test(max_pool, a_gpu_without_a_clock_runs_the_roofline) {
  struct ds_test_compute f;
  setup(&f, "NoClockGPU");
  const struct ds_layer *l = &f.m->layers[0];
  struct ds_pool_kernel k;
  cr_assert_float_eq(ds_compute_max_pool_ns(&f.c, l, 1000, 0, &k), 896, 1e-9);
  cr_assert_float_eq(k.sm_rate_ns, 0, 0);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, l, 1000), 1408, 1e-9);
  ds_test_compute_free(&f);
}

/* Under --amp fp16 (the file has no amp_fwd_bytes: its bytes scaled to 2 B
 * per element) the fill writes half dx (1000 x 128 x 2 = 256000 B = 256
 * ns); the cycles do not change with the dtype (fp16 ran within 3 % of
 * fp32). */
Test(max_pool, half_activations_change_the_bytes_not_the_cycles) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU");
  struct ds_err err = {0};
  cr_assert_eq(ds_compute_init(f.topo_loaded, DS_DTYPE_FP32, DS_AMP_FP16, &f.c, &err), DS_OK);
  struct ds_pool_kernel k;
  double bwd = ds_compute_max_pool_ns(&f.c, &f.m->layers[0], 1000, 1, &k);
  cr_assert_float_eq(k.fill_bytes, 256000, 1e-6);
  cr_assert_float_eq(k.cycles, 357746, 1e-6);
  cr_assert_float_eq(bwd, 256 + 89436.5, 1e-6);
  ds_test_compute_free(&f);
}

/* A one-layer model of class cls with the pool lines `keys` (lines 13 on). */
Test(max_pool, bad_keys_are_located) {
  static const char *const ok = "    pool_kernel: [3, 3]\n    pool_stride: [2, 2]\n"
                                "    pool_padding: [1, 1]\n    pool_input: [64, 112, 112]\n";
  static const char *const bad[][3] = {
      {"memory", "    pool_kernel: [3, 3]\n", "pool_padding and pool_input together"},
      {"conv", NULL, "memory-class layers"},
      {"memory", "    pool_kernel: [3]\n    pool_stride: [2, 2]\n    pool_padding: [1, 1]\n"
                 "    pool_input: [64, 112, 112]\n", "pool_kernel [h, w], got 1 number"},
      {"memory", "    pool_kernel: [3, 3]\n    pool_stride: [0, 2]\n    pool_padding: [1, 1]\n"
                 "    pool_input: [64, 112, 112]\n",
       ":14:19: key 'layers[0].pool_stride[0]': expected an integer from 1 to 1024, got 0"},
      {"memory", "    pool_kernel: [3, 3]\n    pool_stride: [2, 2]\n    pool_padding: [2, 1]\n"
                 "    pool_input: [64, 112, 112]\n", "at most half of pool_kernel"},
      {"memory", "    pool_kernel: [4, 4]\n    pool_stride: [2, 2]\n    pool_padding: [1, 1]\n"
                 "    pool_input: [64, 1, 112]\n", "at most the padded input (3), got 4"},
      {"memory", "    pool_kernel: [3, 3]\n    pool_stride: [2, 2]\n    pool_padding: [1, 1]\n"
                 "    pool_input: [64, x, 112]\n", ":16:"},
      {"memory", "    pool_kernel: 3\n    pool_stride: [2, 2]\n    pool_padding: [1, 1]\n"
                 "    pool_input: [64, 112, 112]\n", ":13:"},
  };
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  char text[1024], label[32];
  ds_test_one_layer_model(text, sizeof text, "memory", ok);
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m->layers[0].pool.height, 112);
  ds_model_free(m);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ds_test_one_layer_model(text, sizeof text, bad[i][0], bad[i][1] ? bad[i][1] : ok);
    snprintf(label, sizeof label, "case %zu", i);
    ds_test_assert_model_refused(text, bad[i][2], label);
  }
}

/* ddpsim refuses such a file with exit status 2, naming file, line and key. */
Test(max_pool, ddpsim_refuses_a_bad_pool_key) {
  char path[] = "/tmp/ddpsim-pool-cli-XXXXXX";
  ds_test_write_temp(path,
                     "schema_version: 1\nname: b\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
                     "layers:\n  - name: l\n    class: memory\n    fwd_flops: 0\n"
                     "    bwd_flops: 0\n    fwd_bytes: 1\n    act_bytes: 0\n"
                     "    pool_kernel: [3, 3]\n    pool_stride: [2, 2]\n"
                     "    pool_padding: [1, 1]\n    pool_input: [64, 112, 0]\n"
                     "    params:\n      - {name: w, numel: 1}\n");
  char args[256], msg[128];
  snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml --model %s", path);
  snprintf(msg, sizeof msg, "%s:16:", path);
  ds_test_ddpsim_refuses(args, msg);
  unlink(path);
}

/* The shipped files end to end: ResNet-50's stem pool on the H200 (132 SMs
 * at 1980 MHz, kernel_overhead 4 us) against this project's measurements
 * of it (compute_pool.c: the fp32 batch-32 trace's 103.5 us forward and 288 us
 * backward kernel, and the fill measured at 22.6 us beside it): forward
 * 32 x (200704 x 2.21 + 64 x 167^2 x 0.215) cycles = 101.3 us + 4 =
 * 105.3, within 3 % of the kernel's 103.5 (the constants were fitted on
 * kernel times less the overhead, so a charge is a kernel's time); the
 * backward within 5 % of 288 + 22.6. On a V100 (80 SMs at 1530 MHz, 900
 * GB/s) the same cycles take 2.1x as long. */
Test(max_pool, resnet50s_stem_pool_on_h200_matches_the_measurement) {
  struct ds_model *m = ds_test_model("models/resnet50.yaml");
  int32_t l = -1;
  for (int32_t i = 0; i < m->n_layers; i++)
    if (strcmp(m->layers[i].name, "maxpool") == 0) l = i;
  cr_assert(l >= 0);
  cr_assert_eq(m->layers[l].pool.kernel[0], 3, "the exporter marks the stem pool");
  cr_assert_eq(m->layers[l].pool.channels, 64);
  struct ds_topo *t;
  struct ds_compute c;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("validation/topologies/nd-h200-v5.yaml", "topologies/gpus.yaml", &t,
                            &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK);
  double fwd = ds_compute_fwd_ns(&c, &m->layers[l], 32);
  double bwd = ds_compute_max_pool_ns(&c, &m->layers[l], 32, 1, NULL);
  cr_assert_float_eq(fwd, 103.5e3, 0.03 * 103.5e3, "forward %.0f ns", fwd);
  cr_assert_float_eq(bwd, 310.6e3, 0.05 * 310.6e3, "backward %.0f ns", bwd);
  ds_topo_free(t);
  struct ds_pool_kernel k;
  cr_assert_eq(ds_topo_load("topologies/dgx1-v100.yaml", "topologies/gpus.yaml", &t, &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK);
  ds_compute_max_pool_ns(&c, &m->layers[l], 32, 0, &k);
  cr_assert_float_eq(k.sm_rate_ns - c.params.kernel_overhead_ns, (fwd - 4e3) * 132 * 1980 /
                     (80 * 1530.0), 1e-3);
  ds_topo_free(t);
  ds_model_free(m);
}
