/*
 * Tests for the attention class's own measured efficiency: the GPU table's
 * attention_fp32 / attention_tf32 / attention_half (sim/net/gpu_table.c) as
 * sim/train/compute.c resolves them in the math the class runs in, and
 * bench/bmm_rates.py, which sets H200's and H100's values from the attention
 * core's batched products timed alone (tools/gen_gpus.py). Expected values are
 * worked by hand from a made-up GPU with round numbers.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "tests/support.h"

/* AttnGPU: FP32 10, TF32 80, FP16/BF16 160 TFLOPS; matmul measured in FP32 0.4
 * and TF32 0.6, attention in FP32 0.25 and in half 0.25 (not in TF32). */
static const char *gpus_text =
    "schema_version: 1\ngpus:\n"
    "  - name: AttnGPU\n    # no arch\n    sms: 100\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n"
    "    fp16: 160TFLOPS\n    bf16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
    "    efficiency: {matmul_fp32: 0.4, matmul_tf32: 0.6, attention_fp32: 0.25,"
    " attention_half: 0.25}\n";

/* A one-GPU topology on AttnGPU whose compute section is `compute`. */
static struct ds_topo *load(const char *compute, char *gpus, char *topo) {
  strcpy(gpus, "/tmp/ddpsim-attngpus-XXXXXX");
  ds_test_write_temp(gpus, gpus_text);
  char text[1024];
  snprintf(text, sizeof text,
           "schema_version: 1\nname: attn\ngpu: AttnGPU\nnodes: 1\ngpus_per_node: 1\n"
           "intra_node:\n  template: nvswitch\n  link_bw: 100GBps\n  link_lat: 1us\n"
           "compute:\n%s", compute);
  strcpy(topo, "/tmp/ddpsim-attntopo-XXXXXX");
  ds_test_write_temp(topo, text);
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(topo, gpus, &t, &err), DS_OK, "%s", err.msg);
  return t;
}

/* One kernel of 1 TFLOP (no bytes) of class cls, in ms. */
static double tflop_ms(const struct ds_compute *c, enum ds_layer_class cls) {
  return ds_compute_class_kernel_ns(c, cls, 1e12, 0) / 1e6;
}

Test(attention_efficiency, attention_takes_its_own_measurement_in_its_math) {
  /* AttnGPU, flops_efficiency 0.5, no overhead, 1 TFLOP per kernel:
   *   fp32 training: matmul on FP32 at 0.4: 1e12/(10e12*0.4) = 250 ms;
   *     attention on FP32 at its own 0.25: 400 ms;
   *   --tf32 all: attention has no TF32 value: matmul's 0.6, 1e12/(80e12*0.6)
   *     = 20.833 ms for both;
   *   --amp bf16: attention at attention_half 0.25: 1e12/(160e12*0.25) = 25 ms;
   *     matmul has no half value: flops_efficiency, 1e12/(160e12*0.5) = 12.5 ms. */
  char gpus[64], topo[64];
  struct ds_topo *t = load("  flops_efficiency: 0.5\n  kernel_overhead: 0us\n", gpus, topo);
  cr_assert_float_eq(t->gpu.eff.attention[DS_GPU_MATH_FP32], 0.25, 0);
  cr_assert_eq(t->gpu.eff.attention[DS_GPU_MATH_TF32], 0);
  struct ds_compute c;
  struct ds_err err = {0};
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(tflop_ms(&c, DS_LAYER_MATMUL), 250, 1e-9);
  cr_assert_float_eq(tflop_ms(&c, DS_LAYER_ATTENTION), 400, 1e-9);
  ds_compute_set_tf32(&c, t, DS_TF32_ALL);
  cr_assert_float_eq(tflop_ms(&c, DS_LAYER_MATMUL), 1e3 / 48, 1e-9);
  cr_assert_float_eq(tflop_ms(&c, DS_LAYER_ATTENTION), 1e3 / 48, 1e-9);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_BF16, &c, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(tflop_ms(&c, DS_LAYER_ATTENTION), 25, 1e-9);
  cr_assert_float_eq(tflop_ms(&c, DS_LAYER_MATMUL), 12.5, 1e-9);
  ds_topo_free(t);
  unlink(gpus);
  unlink(topo);

  /* the topology's attention_efficiency 0.8 overrides the table in every math:
   * fp32 1e12/(10e12*0.8) = 125 ms; matmul keeps its 250 */
  t = load("  attention_efficiency: 0.8\n  kernel_overhead: 0us\n", gpus, topo);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(tflop_ms(&c, DS_LAYER_ATTENTION), 125, 1e-9);
  cr_assert_float_eq(tflop_ms(&c, DS_LAYER_MATMUL), 250, 1e-9);
  ds_topo_free(t);
  unlink(gpus);
  unlink(topo);
}

/* Replaces the text of path (made by ds_test_write_temp). */
static void rewrite(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs(text, f);
  fclose(f);
}

Test(attention_efficiency, bmm_rates_pools_each_product_once_from_its_kernels) {
  /* bench/bmm_rates.py on a made-up CSV, peaks FP32 10, fp16/bf16 160:
   *   fp32: qk 1e12 FLOPs in 0.2 s of kernels, pv 1e12 in 0.3 s: 2e12 / 0.5 s
   *     = 4 TFLOP/s, 0.400 (a mean of the rates, 4.17, would give 0.417); the
   *     dkt variant (1e12 in 1 us) is not a product a layer runs: left out;
   *   half: fp16 qk 1e12 in 0.05 s and bf16 qk 1e12 in 0.075 s pool together:
   *     2e12 / 0.125 s = 16 TFLOP/s, 0.100;
   *   --time interval takes ms instead: fp32 qk 0.4 s, pv 0.6 s: 2e12 / 1 s,
   *     0.200;
   *   each row's time less --kernel-overhead-us (default 4 us, too little to
   *   show here): at 40000 us, fp32 2e12 / (0.5 - 2 x 0.04 s) = 4.762 TFLOP/s,
   *   0.476. */
  char gpus[] = "/tmp/ds_bmm_gpus_XXXXXX", csv[] = "/tmp/ds_bmm_rates_XXXXXX";
  ds_test_write_temp(gpus, "schema_version: 1\ngpus:\n  - name: G\n    smi_names: [\"G\"]\n"
                           "    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n    fp16: 160TFLOPS\n"
                           "    bf16: 160TFLOPS\n");
  const char *head = "kind,name,mode,ms,flops,kernel_us,queued_ahead,gpu\n";
  char text[1024];
  snprintf(text, sizeof text, "%s%s", head,
           "bmm,m-qk,fp32,400,1e12,200000,1,G\n"
           "bmm,m-pv,fp32,600,1e12,300000,1,G\n"
           "bmm,m-dkt,fp32,0.001,1e12,1,1,G\n"
           "bmm,m-qk,fp16,50,1e12,50000,1,G\n"
           "bmm,m-qk,bf16,75,1e12,75000,1,G\n");
  ds_test_write_temp(csv, text);
  char cmd[512], out[8192];
  double eff;
  snprintf(cmd, sizeof cmd, "python3 bench/bmm_rates.py --gpus %s %s 2>&1", gpus, csv);
  cr_assert_eq(ds_test_command_value(cmd, "attention_fp32", &eff, out, sizeof out), 0, "%s", out);
  cr_assert_float_eq(eff, 0.400, 1e-9, "%s", out);
  cr_assert_eq(ds_test_command_value(cmd, "attention_half", &eff, out, sizeof out), 0, "%s", out);
  cr_assert_float_eq(eff, 0.100, 1e-9, "%s", out);
  cr_assert_null(strstr(out, "attention_tf32"), "no TF32 rows: %s", out);
  cr_assert_null(strstr(out, "warning"), "every row has its kernels' time: %s", out);
  cr_assert_not_null(strstr(out, "us of kernels less overhead"), "%s", out);
  snprintf(cmd, sizeof cmd, "python3 bench/bmm_rates.py --kernel-overhead-us 40000 --gpus %s %s "
           "2>&1", gpus, csv);
  cr_assert_eq(ds_test_command_value(cmd, "attention_fp32", &eff, out, sizeof out), 0, "%s", out);
  cr_assert_float_eq(eff, 0.476, 1e-9, "%s", out);
  snprintf(cmd, sizeof cmd, "python3 bench/bmm_rates.py --time interval --gpus %s %s 2>&1",
           gpus, csv);
  cr_assert_eq(ds_test_command_value(cmd, "attention_fp32", &eff, out, sizeof out), 0, "%s", out);
  cr_assert_float_eq(eff, 0.200, 1e-9, "%s", out);
  cr_assert_not_null(strstr(out, "us of intervals less overhead"), "%s", out);

  /* rows timed neither alone nor queued are flagged; a bad mode exits 2 naming
   * the file and line */
  snprintf(text, sizeof text, "%sbmm,m-qk,fp32,400,1e12,,,G\n", head);
  rewrite(csv, text);
  snprintf(cmd, sizeof cmd, "python3 bench/bmm_rates.py --gpus %s %s 2>&1", gpus, csv);
  cr_assert_eq(ds_test_command_value(cmd, "attention_fp32", &eff, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "warning: 1 rows"), "%s", out);
  snprintf(text, sizeof text, "%sbmm,m-qk,int8,400,1e12,1,1,G\n", head);
  rewrite(csv, text);
  cr_assert_eq(ds_test_command_value(cmd, "attention_fp32", &eff, out, sizeof out), 2, "%s", out);
  char where[80];
  snprintf(where, sizeof where, "%s:2:", csv);
  cr_assert_not_null(strstr(out, where), "%s", out);
  /* the same MODEL-PASS and mode twice: exit 2 naming the second line */
  snprintf(text, sizeof text, "%sbmm,m-qk,fp32,400,1e12,100,1,G\nbmm,m-qk,fp32,400,1e12,100,1,G\n",
           head);
  rewrite(csv, text);
  cr_assert_eq(ds_test_command_value(cmd, "attention_fp32", &eff, out, sizeof out), 2, "%s", out);
  snprintf(where, sizeof where, "%s:3: m-qk in fp32 again", csv);
  cr_assert_not_null(strstr(out, where), "%s", out);
  unlink(csv);
  unlink(gpus);
}

Test(attention_efficiency, hopper_attention_is_what_bmm_rates_prints) {
  /* topologies/gpus.yaml's H200 attention_* are bench/bmm_rates.py's pooled
   * values of the H200's queued bmm CSV (tools/gen_gpus.py), and the H100's
   * its `scaled` values: those times the H100 / H200 ratio of GPT-2 b8's
   * products in the two GPUs' plain bmm.csv. A changed CSV or script fails
   * here. */
  const char *keys[] = {"attention_fp32", "attention_tf32", "attention_half"};
  const char *scaled[] = {"scaled attention_fp32", "scaled attention_tf32",
                          "scaled attention_half"};
  const enum ds_gpu_math math[] = {DS_GPU_MATH_FP32, DS_GPU_MATH_TF32, DS_GPU_MATH_HALF};
  const char *topos[] = {"validation/topologies/nd-h200-v5.yaml", "topologies/dgx-h100.yaml"};
  const char *cmd = "python3 bench/bmm_rates.py bench/results/gpu-2026-11-27-h200/bmm-queued.csv "
                    "--gpu 'NVIDIA H200' --scale bench/results/gpu-2026-11-27b-h100/bmm.csv "
                    "bench/results/gpu-2026-11-27-h200/bmm.csv --scale-models gpt2-b8 2>&1";
  char out[8192];
  for (size_t k = 0; k < 3; k++) {
    double eff[2];
    cr_assert_eq(ds_test_command_value(cmd, keys[k], &eff[0], out, sizeof out), 0, "%s", out);
    cr_assert_eq(ds_test_command_value(cmd, scaled[k], &eff[1], out, sizeof out), 0, "%s", out);
    for (size_t i = 0; i < 2; i++) {
      cr_assert_gt(eff[i], 0, "%s: %s", keys[k], out);
      struct ds_topo *t = NULL;
      struct ds_err err = {0};
      cr_assert_eq(ds_topo_load(topos[i], "topologies/gpus.yaml", &t, &err), DS_OK, "%s",
                   err.msg);
      cr_assert_float_eq(t->gpu.eff.attention[math[k]], eff[i], 1e-9, "%s %s", topos[i],
                         keys[k]);
      ds_topo_free(t);
    }
  }
}
