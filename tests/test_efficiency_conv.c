/*
 * Where the GPU table's measured efficiencies come from (issue #12 item 5):
 * topologies/gpus.yaml is what tools/gen_gpus.py writes; bench/conv_rates.py,
 * which sets H200's and H100's conv_half (and H100's conv_tf32 from the
 * fit traces), pools, splits by pass, fits and compares the measured
 * convolutions; bench/deepbench_conv.py, which sets V100's, pools every
 * pass less ddpsim's kernel overhead. Each script runs on a made-up input
 * whose answer is worked by hand.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/model.h"
#include "tests/support.h"

/* ---- calibration files ---------------------------------------------------- */

Test(efficiency, gpu_table_is_what_gen_gpus_writes) {
  /* topologies/gpus.yaml (its efficiency maps with their cited arithmetic)
   * is generated; a hand edit or a stale table fails here. */
  if (access("../shared/data/gpu_specs.csv", R_OK) != 0)
    cr_skip_test("../shared/data (the generator's input) is not beside the repository");
  int rc = system("python3 tools/gen_gpus.py --check >/dev/null 2>&1");
  cr_assert_eq(rc, 0, "python3 tools/gen_gpus.py --check failed: regenerate gpus.yaml");
}

/* The line gpus.yaml's conv_half is read from (the dense 3x3 CSVs). */
static int conv_rates(const char *cmd, double *eff, char *out, size_t out_len) {
  return ds_test_command_value(cmd, "gpus.yaml conv_half: ", eff, out, out_len);
}

Test(efficiency, conv_rates_pools_the_dense_channels_last_rows) {
  /* bench/conv_rates.py on a made-up CSV: two dense fp16-nhwc rows, a
   * forward of 1e12 FLOPs in 2.004 ms and a weight gradient of 1e12 in 8.002
   * ms; less ddpsim's 4 us kernel_overhead per forward and 2 us per gradient
   * row (a backward kernel is both gradients) 2 ms (500 TFLOP/s) and 8 ms
   * (125): total FLOPs over total time is 2e12 / 10 ms = 200 TFLOP/s, 0.500
   * of a 400 peak (a mean of the rates, 312.5, would be 0.781). The grouped
   * row and the NCHW fp16 row, both fast, are not in it. */
  char csv[] = "/tmp/ds_conv_rates_XXXXXX";
  int fd = mkstemp(csv);
  cr_assert_geq(fd, 0);
  const char *head = "kind,name,mode,shape,groups,ms,flops,gpu\n";
  const char *good = "conv,32x4d/fwd,fp16-nhwc,32x128x56x56 s1 g1,1,2.004,1e12,G\n"
                     "conv,32x4d/wgrad,fp16-nhwc,128x128x56x56 s1 g1,1,8.002,1e12,G\n"
                     "conv,32x4d/fwd,fp16-nhwc,32x128x56x56 s1 g32,32,0.1,1e12,G\n"
                     "conv,32x4d/fwd,fp16,32x128x56x56 s1 g1,1,0.1,1e12,G\n";
  FILE *f = fdopen(fd, "w");
  fprintf(f, "%s%s", head, good);
  fclose(f);
  char cmd[512], out[8192];
  double eff;
  snprintf(cmd, sizeof cmd, "python3 bench/conv_rates.py --peak-fp32 10 --peak-tf32 80 "
           "--peak-fp16 400 %s 2>&1", csv);
  cr_assert_eq(conv_rates(cmd, &eff, out, sizeof out), 0, "%s", out);
  cr_assert_float_eq(eff, 0.500, 1e-9, "%s", out);
  cr_assert_not_null(strstr(out, "gpus.yaml conv_half: 200.0 / 400 TFLOPS"), "%s", out);
  /* a dense row with no time: exit 2, the file and line named */
  f = fopen(csv, "w");
  fprintf(f, "%sconv,32x4d/dgrad,fp16-nhwc,32x128x56x56 s1 g1,1,0,1e12,G\n", head);
  fclose(f);
  cr_assert_eq(conv_rates(cmd, &eff, out, sizeof out), 2, "%s", out);
  char where[80];
  snprintf(where, sizeof where, "%s:2:", csv);
  cr_assert_not_null(strstr(out, where), "%s", out);
  cr_assert_float_eq(eff, -1, 0);
  unlink(csv);
}

Test(efficiency, conv_rates_pools_resnet50s_own_shapes_by_their_counts) {
  /* bench/conv_rates.py --rn50 on a made-up rn50conv CSV: a 1x1 forward the
   * model runs 3 times (1e12 FLOPs in 2 ms each) and the stem's forward
   * once (1e12 in 8 ms): 4e12 FLOPs in 14 ms = 285.7 TFLOP/s, 0.714 of a 400
   * peak (unweighted, 2e12 in 10 ms would give 0.500); the stem's input
   * gradient (3 input channels: the model's input needs none) is left out. */
  char csv[] = "/tmp/ds_rn50conv_XXXXXX";
  int fd = mkstemp(csv);
  cr_assert_geq(fd, 0);
  const char *head = "kind,name,mode,shape,groups,elements,ms,flops,gpu\n";
  FILE *f = fdopen(fd, "w");
  fprintf(f, "%s%s", head,
          "rn50conv,64x256k1s1/fwd,fp16-nhwc,128x64x56x56,1,3,2.0,1e12,G\n"
          "rn50conv,3x64k7s2/fwd,fp16-nhwc,128x3x224x224,1,1,8.0,1e12,G\n"
          "rn50conv,3x64k7s2/dgrad,fp16-nhwc,128x3x224x224,1,1,0.1,1e12,G\n");
  fclose(f);
  char cmd[512], out[8192];
  double eff;
  snprintf(cmd, sizeof cmd, "python3 bench/conv_rates.py --peak-tf32 80 --peak-fp16 400 "
           "--rn50 %s 2>&1", csv);
  cr_assert_eq(conv_rates(cmd, &eff, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "4000.0 GFLOP   14.000 ms   285.7 TFLOP/s  0.714"), "%s", out);
  cr_assert_not_null(strstr(out, "1x1  s1 fwd      3000.0 GFLOP    6.000 ms   500.0"), "%s", out);
  cr_assert_null(strstr(out, "dgrad"), "%s", out);
  /* a lower bound (its calls time the host where kernels are short): not
   * what gpus.yaml takes */
  cr_assert_float_eq(eff, -1, 0, "%s", out);
  /* a name without the kernel and stride: exit 2, the file and line named */
  f = fopen(csv, "w");
  fprintf(f, "%srn50conv,64x256/fwd,fp16-nhwc,128x64x56x56,1,3,2.0,1e12,G\n", head);
  fclose(f);
  cr_assert_eq(conv_rates(cmd, &eff, out, sizeof out), 2, "%s", out);
  char where[80];
  snprintf(where, sizeof where, "%s:2:", csv);
  cr_assert_not_null(strstr(out, where), "%s", out);
  unlink(csv);
}

Test(efficiency, conv_rates_by_pass_splits_the_same_kernels) {
  /* --by-pass on the H200 ResNet-50 AMP channels-last trace: the kernels of
   * the per-size table (7.409 ms compute + 0.492 helpers, 3108.7 GFLOP per
   * iteration) split by stride and pass sum to the same 7.901 ms, 0.398 of
   * the fp16 peak (989.4); the stem has no input-gradient row. */
  char out[8192];
  double eff;
  cr_assert_eq(conv_rates("python3 bench/conv_rates.py --by-pass --trace "
                          "bench/results/gpu-2026-11-26b-h200/prof/resnet50-amp-b128-nhwc.json.gz "
                          "2>&1",
                          &eff, out, sizeof out),
               0, "%s", out);
  cr_assert_not_null(strstr(out, "  all       3108.7 100.0%       7.409      0.492"), "%s", out);
  cr_assert_not_null(
      strstr(out, "  all                     3108.7     7.901              393.4  0.398"), "%s",
      out);
  cr_assert_null(strstr(out, "7x7         2 dgrad"), "%s", out);
}

/* Runs cmd into out; returns its exit status (no value read). */
static int run_capture(const char *cmd, char *out, size_t out_len) {
  double unused;
  return ds_test_command_value(cmd, "", &unused, out, out_len);
}

Test(efficiency, deepbench_conv_pools_every_pass_less_the_overhead) {
  /* bench/deepbench_conv.py (V100's conv_fp32 and conv_half,
   * tools/gen_gpus.py) on a made-up workbook (tests/data/deepbench_toy.py):
   * ResNet-50's shapes, each pass at 0.4 of the sheet's peak plus 4 us per
   * kernel ddpsim charges (a layer's forward, its backward). fp16, batch 16:
   * 355.294 GFLOP at 50 TFLOP/s is 7.106 ms, plus 51 layers x 2 kernels x
   * 4 us = 0.408 ms: 7.514 ms, 47.285 TFLOP/s (0.378) as timed; less the
   * overhead 7.106 ms again, 50.000 TFLOP/s = 0.400, the value gpus.yaml
   * takes; fp32 the same fraction of its 15.7. */
  char xlsx[] = "/tmp/ds_deepbench_XXXXXX";
  int fd = mkstemp(xlsx);
  cr_assert_geq(fd, 0);
  close(fd);
  char cmd[512], out[8192];
  snprintf(cmd, sizeof cmd,
           "python3 tests/data/deepbench_toy.py %s && python3 bench/deepbench_conv.py %s 2>&1",
           xlsx, xlsx);
  cr_assert_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "fp16 batch 16 (peak 125 TFLOP/s): 355.294 GFLOP in 7.514 ms, "
                                 "102 kernels: 47.285 TFLOP/s = 0.378 of peak; less overhead "
                                 "7.106 ms: 50.000 TFLOP/s = 0.400"),
                     "%s", out);
  cr_assert_not_null(strstr(out, "gpus.yaml V100 conv_half: 50.000 / 125 TFLOPS = 0.400"), "%s",
                     out);
  cr_assert_not_null(strstr(out, "gpus.yaml V100 conv_fp32: 6.280 / 15.7 TFLOPS = 0.400"), "%s",
                     out);
  /* no overhead taken off: the sheet's own rate */
  snprintf(cmd, sizeof cmd, "python3 bench/deepbench_conv.py %s --kernel-overhead-us 0 2>&1",
           xlsx);
  cr_assert_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "gpus.yaml V100 conv_half: 47.285 / 125 TFLOPS = 0.378"), "%s",
                     out);
  /* a shape without its row: exit 2, the file, sheet and shape named */
  snprintf(cmd, sizeof cmd,
           "python3 tests/data/deepbench_toy.py %s --drop-stem16 && "
           "python3 bench/deepbench_conv.py %s 2>&1",
           xlsx, xlsx);
  cr_assert_eq(run_capture(cmd, out, sizeof out), 2, "%s", out);
  cr_assert_not_null(strstr(out, xlsx), "%s", out);
  cr_assert_not_null(strstr(out, "no Vision row 224x224 C=3 N=16 K=64 7x7/2"), "%s", out);
  unlink(xlsx);
}

Test(efficiency, hopper_conv_half_is_what_conv_rates_prints) {
  /* topologies/gpus.yaml's H200 conv_half is bench/conv_rates.py's pooled
   * channels-last value of the H200's three CSVs (tools/gen_gpus.py), less
   * 4 us per kernel ddpsim charges: 21752.3 GFLOP / (32.699 ms - 84 x 4 us =
   * 32.363 ms) = 672.1 TFLOP/s, 0.679 of 989.4; the H100 takes it (same
   * GH100 chip): a changed CSV or script fails here. */
  char out[8192];
  double eff;
  cr_assert_eq(conv_rates("python3 bench/conv_rates.py "
                          "bench/results/gpu-2026-11-26d-h200/conv-b32.csv "
                          "bench/results/gpu-2026-11-26d-h200/conv-b64.csv "
                          "bench/results/gpu-2026-11-26d-h200/conv-b128.csv 2>&1",
                          &eff, out, sizeof out),
               0, "%s", out);
  cr_assert_float_eq(eff, 0.679, 1e-9, "%s", out);
  const char *topos[] = {"validation/topologies/nd-h200-v5.yaml", "topologies/dgx-h100.yaml"};
  for (size_t i = 0; i < 2; i++) {
    struct ds_topo *t = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_topo_load(topos[i], "topologies/gpus.yaml", &t, &err), DS_OK, "%s",
                 err.msg);
    cr_assert_float_eq(t->gpu.eff.conv[DS_GPU_MATH_HALF], eff, 1e-9, "%s", topos[i]);
    ds_topo_free(t);
  }
}

Test(efficiency, hopper_conv_tf32_is_the_fit_traces_rate) {
  /* topologies/gpus.yaml's H200 conv_tf32 is the rate of cuDNN's kernels
   * (compute + helpers, transposes apart) in the fit row's trace, ResNet-50
   * FP32 batch 32, in the form ddpsim charges them: each conv layer's
   * forward and backward one kernel of kernel_overhead (the topology's) +
   * FLOPs / (efficiency x peak), every pass pooled, so efficiency = GFLOP /
   * ((compute + helper ms) - 2 x conv layers x kernel_overhead) / the TF32
   * peak: 777.2 / (6.348 - 106 x 0.004 = 5.924 ms) = 131.2 TFLOP/s, / 494.7
   * = 0.265, rounded to 3 digits as tools/gen_gpus.py rounds; the script's
   * `gpus.yaml conv_tf32` line prints it; the H100 takes it. */
  char out[16384];
  double unused;
  cr_assert_eq(ds_test_command_value("python3 bench/conv_rates.py --trace "
                               "bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz "
                               "2>&1",
                               "none", &unused, out, sizeof out),
               0, "%s", out);
  const char *all = strstr(out, "  all ");
  cr_assert_not_null(all, "%s", out);
  double gflop, share, compute, helper;
  cr_assert_eq(sscanf(all, " all %lf %lf%% %lf %lf", &gflop, &share, &compute, &helper), 4,
               "%s", out);
  const char *line = strstr(out, "gpus.yaml conv_tf32: ");
  cr_assert_not_null(line, "%s", out);
  double rate, peak, printed;
  cr_assert_eq(sscanf(line, "gpus.yaml conv_tf32: %lf / %lf TFLOPS = %lf", &rate, &peak,
                      &printed),
               3, "%s", out);
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_model_load("models/resnet50.yaml", &m, &err), DS_OK, "%s", err.msg);
  int convs = 0;
  for (int32_t i = 0; i < m->n_layers; i++) convs += m->layers[i].cls == DS_LAYER_CONV;
  ds_model_free(m);
  cr_assert_eq(convs, 53);
  const char *topos[] = {"validation/topologies/nd-h200-v5.yaml", "topologies/dgx-h100.yaml"};
  for (size_t i = 0; i < 2; i++) {
    struct ds_topo *t = NULL;
    cr_assert_eq(ds_topo_load(topos[i], "topologies/gpus.yaml", &t, &err), DS_OK, "%s",
                 err.msg);
    double ms = compute + helper - 2.0 * convs * t->compute.kernel_overhead_ns * 1e-6;
    double eff = round(gflop / ms / (t->gpu.tf32_flops_per_s / 1e12) * 1000) / 1000;
    cr_assert_float_eq(eff, 0.265, 1e-9, "%s: %s", topos[i], out);
    cr_assert_float_eq(printed, eff, 1e-9, "%s: %s", topos[i], out);
    cr_assert_float_eq(t->gpu.eff.conv[DS_GPU_MATH_TF32], eff, 1e-9, "%s", topos[i]);
    ds_topo_free(t);
  }
}

Test(efficiency, conv_rates_fit_call_line_passes_through_the_mean) {
  /* --fit-call on one trace (the fit row's, ResNet-50 FP32 b32): a least
   * squares line t = t0 + F / rate, each point weighted by its count, passes
   * through the weighted mean, so kernels x t0 + GFLOP / rate is the trace's
   * time per iteration (158 kernels, 777.2 GFLOP, 6.348 ms), whatever t0
   * and rate came out; t0 is positive (small convolutions take longer than
   * their FLOPs at the rate). */
  char out[16384];
  double unused;
  cr_assert_eq(ds_test_command_value("python3 bench/conv_rates.py --fit-call --trace "
                               "bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz "
                               "2>&1",
                               "none", &unused, out, sizeof out),
               0, "%s", out);
  const char *line = strstr(out, "kernels, ");
  cr_assert_not_null(line, "%s", out);
  double gflop, ms, rate, t0;
  cr_assert_eq(sscanf(line, "kernels, %lf GFLOP in %lf ms per iteration: rate %lf", &gflop, &ms,
                      &rate),
               3, "%s", out);
  const char *t = strstr(out, "t0: ");
  cr_assert_not_null(t, "%s", out);
  cr_assert_eq(sscanf(t, "t0: %lf", &t0), 1, "%s", out);
  cr_assert_float_eq(gflop, 777.2, 1e-9, "%s", out);
  cr_assert_gt(t0, 0, "%s", out);
  /* printed to 0.1 us and 0.1 TFLOP/s: 158 x 0.05 us + the rate's rounding */
  cr_assert_float_eq(158 * t0 * 1e-3 + gflop / rate, ms, 0.02, "%s", out);
}

Test(efficiency, conv_rates_compare_sets_each_shape_beside_the_traces) {
  /* --compare: the batch-32 rn50conv CSV's TF32 channels-last calls, each
   * times its count, beside the fit trace's kernels of the same shapes: the
   * totals are --rn50's mix (7.709 ms) and --by-pass's (6.348 ms); the stem's
   * input gradient, which training does not run, is in neither. */
  char out[16384];
  double unused;
  cr_assert_eq(ds_test_command_value("python3 bench/conv_rates.py --rn50 "
                               "bench/results/gpu-2026-11-27-h200/rn50conv-b32.csv --compare "
                               "bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz "
                               "--mode fp32-tf32-nhwc 2>&1",
                               "none", &unused, out, sizeof out),
               0, "%s", out);
  cr_assert_not_null(strstr(out, "  all                      777.2     6.348     7.709    1.21"),
                     "%s", out);
  cr_assert_null(strstr(out, "7x7         2 dgrad"), "%s", out);
  /* a CSV whose batch has no trace of it: the shapes do not match, exit 2 */
  cr_assert_eq(ds_test_command_value("python3 bench/conv_rates.py --rn50 "
                               "bench/results/gpu-2026-11-27-h200/rn50conv-b128.csv --compare "
                               "bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz "
                               "2>&1",
                               "none", &unused, out, sizeof out),
               2, "%s", out);
}
