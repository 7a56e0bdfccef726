/*
 * Tests for per-pass convolution efficiencies (sim/train/compute.h): the GPU
 * table's conv_MATH_fwd and conv_MATH_bwd (sim/net/gpu_table.c) set a
 * convolution's forward and backward rates apart; a pass without its key,
 * and anything that asks without a pass, takes the pooled conv_MATH; the
 * topology's conv_efficiency overrides every pass; a calibration file's
 * pooled value replaces the table's passes (sim/train/calib.c); and the
 * H200's values are bench/conv_rates.py's per-pass lines on the fit row's
 * trace (tools/gen_gpus.py).
 * Worked by hand on made-up GPUs with round numbers.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net/gpu_table.h"
#include "sim/net/topo.h"
#include "sim/train/calib.h"
#include "sim/train/compute.h"
#include "sim/train/interference.h"
#include "sim/train/model.h"
#include "tests/support.h"
#include "traces/calib_file.h"
#include "traces/schedule.h"

/* TF32 80 TFLOPS, FP32 10, half 160, 1000 GB/s, copies at 0.8 of it.
 * PooledGPU: convolutions in TF32 at 0.25 and in half at 0.3, every pass.
 * PassGPU: the same pooled values, and TF32's forward at 0.5 and backward
 * at 0.4. FwdGPU: TF32's forward alone at 0.5. */
#define GPU_HEAD(name)                                                                      \
  "  - name: " name "\n    # no arch\n    sms: 100\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n" \
  "    fp16: 160TFLOPS\n    bf16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
static const char *gpus_text =
    "schema_version: 1\ngpus:\n" GPU_HEAD("PooledGPU")
    "    efficiency: {conv_tf32: 0.25, conv_half: 0.3, memory: 0.8}\n" GPU_HEAD("PassGPU")
    "    efficiency: {conv_tf32: 0.25, conv_tf32_fwd: 0.5, conv_tf32_bwd: 0.4, conv_half: 0.3,"
    " memory: 0.8}\n" GPU_HEAD("FwdGPU")
    "    efficiency: {conv_tf32: 0.25, conv_tf32_fwd: 0.5, conv_half: 0.3, memory: 0.8}\n";

/* One convolution: 1 GFLOP forward, 2 backward per sample, a 1000-weight
 * kernel (4 kB, 5 ns at 800 GB/s: the FLOPs bind) and no activation bytes. */
static const char *model_text =
    "schema_version: 1\nname: cp\nsample: s\ndefault_batch: 2\noptimizer: sgd\nlayers:\n"
    "  - name: conv\n    class: conv\n    fwd_flops: 1000000000\n    bwd_flops: 2000000000\n"
    "    fwd_bytes: 0\n    act_bytes: 0\n    params:\n      - {name: w, numel: 1000}\n";

/* A one-GPU topology on `gpu` (no overhead, no host costs, flops_efficiency
 * 0.5 for what nothing measured) with `extra` compute lines, in dir. */
static void write_files(const char *dir, const char *gpu, const char *extra, char *topo,
                        size_t cap) {
  char path[512], text[2048];
  snprintf(path, sizeof path, "%s/gpus.yaml", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(gpus_text, f);
  cr_assert_eq(fclose(f), 0); /* a short write would fail here */
  snprintf(text, sizeof text,
           "schema_version: 1\nname: cp\ngpu: %s\nnodes: 1\ngpus_per_node: 1\n"
           "intra_node:\n  template: nvswitch\n  link_bw: 100GBps\n  link_lat: 1us\n"
           "compute:\n  flops_efficiency: 0.5\n  kernel_overhead: 0us\n  host_backward: 0us\n"
           "  host_node: 0us\n  host_grad_hook: 0us\n  host_grad_copy: 0us\n"
           "  host_collective: 0us\n  host_step_call: 0us\n  host_step_param: 0us\n"
           "  host_step_param_adam: 0us\n%s",
           gpu, extra);
  snprintf(topo, cap, "%s/t-%s.yaml", dir, gpu);
  f = fopen(topo, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  cr_assert_eq(fclose(f), 0); /* a short write would fail here */
}

struct fixture {
  char dir[64];
  struct ds_model *model;
};

static void setup(struct fixture *fx) {
  strcpy(fx->dir, "/tmp/ddpsim-convpass-XXXXXX");
  cr_assert_not_null(mkdtemp(fx->dir));
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(model_text, &fx->model, &err), DS_OK, "%s", err.msg);
}

static void teardown(struct fixture *fx) {
  char cmd[128];
  ds_model_free(fx->model);
  snprintf(cmd, sizeof cmd, "rm -rf %s", fx->dir);
  cr_assert_eq(system(cmd), 0);
}

/* The convolution's forward and backward at batch 2 on `gpu`, in us. */
static void pass_us(struct fixture *fx, const char *gpu, const char *extra, enum ds_amp amp,
                    enum ds_tf32 tf32, double *fwd, double *bwd) {
  char topo[256];
  write_files(fx->dir, gpu, extra, topo, sizeof topo);
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(topo, NULL, &t, &err), DS_OK, "%s", err.msg);
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, amp, &c, &err), DS_OK, "%s", err.msg);
  ds_compute_set_tf32(&c, t, tf32);
  *fwd = ds_compute_fwd_ns(&c, &fx->model->layers[0], 2) / 1e3;
  *bwd = ds_compute_bwd_ns(&c, &fx->model->layers[0], 2) / 1e3;
  ds_topo_free(t);
}

Test(conv_pass, each_pass_takes_its_own_efficiency) {
  /* batch 2, TF32 (80 TFLOPS): pooled 0.25, forward 2e9 / 20e12 = 100 us,
   * backward 4e9 / 20e12 = 200 us; PassGPU forward at 0.5, 2e9 / 40e12 =
   * 50 us (50 less), backward at 0.4, 4e9 / 32e12 = 125 us (75 less). */
  struct fixture fx;
  setup(&fx);
  double f0, b0, f1, b1;
  pass_us(&fx, "PooledGPU", "", DS_AMP_NONE, DS_TF32_CONV, &f0, &b0);
  pass_us(&fx, "PassGPU", "", DS_AMP_NONE, DS_TF32_CONV, &f1, &b1);
  cr_assert_float_eq(f0, 100, 1e-6);
  cr_assert_float_eq(b0, 200, 1e-6);
  cr_assert_float_eq(f1, 50, 1e-6);
  cr_assert_float_eq(b1, 125, 1e-6);
  /* FwdGPU: the forward's key alone; the backward takes the pooled 0.25 */
  pass_us(&fx, "FwdGPU", "", DS_AMP_NONE, DS_TF32_CONV, &f1, &b1);
  cr_assert_float_eq(f1, 50, 1e-6);
  cr_assert_float_eq(b1, 200, 1e-6);
  /* the other maths have no per-pass keys: --amp fp16 on either GPU at
   * conv_half 0.3 (2e9 / 48e12 = 41.667 us, 83.333 us, and the weight's
   * casts, the same on both); --tf32 none FP32, nothing measured:
   * flops_efficiency 0.5 (400 us, 800 us) */
  pass_us(&fx, "PooledGPU", "", DS_AMP_FP16, DS_TF32_CONV, &f0, &b0);
  pass_us(&fx, "PassGPU", "", DS_AMP_FP16, DS_TF32_CONV, &f1, &b1);
  cr_assert_eq(f1, f0);
  cr_assert_eq(b1, b0);
  cr_assert_float_eq(f1, 2e9 / 48e12 * 1e6, 0.01);
  cr_assert_float_eq(b1, 4e9 / 48e12 * 1e6, 0.01);
  pass_us(&fx, "PassGPU", "", DS_AMP_NONE, DS_TF32_NONE, &f1, &b1);
  cr_assert_float_eq(f1, 400, 1e-6);
  cr_assert_float_eq(b1, 800, 1e-6);
  teardown(&fx);
}

Test(conv_pass, the_topologys_conv_efficiency_overrides_every_pass) {
  /* conv_efficiency 0.8: 2e9 / 64e12 = 31.25 us, 62.5 us on either GPU */
  struct fixture fx;
  setup(&fx);
  double f, b;
  pass_us(&fx, "PassGPU", "  conv_efficiency: 0.8\n", DS_AMP_NONE, DS_TF32_CONV, &f, &b);
  cr_assert_float_eq(f, 31.25, 1e-6);
  cr_assert_float_eq(b, 62.5, 1e-6);
  teardown(&fx);
}

Test(conv_pass, a_run_changes_by_the_passes_differences) {
  /* ddpsim --strategy single on the one-convolution model, batch 2: the
   * forward 50 us and the backward 75 us shorter on PassGPU than on
   * PooledGPU (each_pass_takes_its_own_efficiency), the iteration 125 us;
   * nothing else differs between the two GPUs. */
  struct fixture fx;
  setup(&fx);
  char model[256], topo[2][256], args[1024];
  snprintf(model, sizeof model, "%s/m.yaml", fx.dir);
  FILE *f = fopen(model, "w");
  cr_assert_not_null(f);
  fputs(model_text, f);
  cr_assert_eq(fclose(f), 0); /* a short write would fail here */
  const char *gpus[2] = {"PooledGPU", "PassGPU"};
  double ms[2][3];
  const char *cols[3] = {"fwd_ms", "bwd_ms", "iter_ms"};
  for (int g = 0; g < 2; g++) {
    write_files(fx.dir, gpus[g], "", topo[g], sizeof topo[g]);
    snprintf(args, sizeof args, "--topo %s --model %s --strategy single --batch 2 --format csv",
             topo[g], model);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    for (int k = 0; k < 3; k++) ms[g][k] = ds_test_csv_num(r.out, cols[k], 0);
    ds_test_release(&r);
  }
  cr_assert_float_eq(ms[0][0] - ms[1][0], 0.050, 1e-6, "%g %g", ms[0][0], ms[1][0]);
  cr_assert_float_eq(ms[0][1] - ms[1][1], 0.075, 1e-6, "%g %g", ms[0][1], ms[1][1]);
  cr_assert_float_eq(ms[0][2] - ms[1][2], 0.125, 1e-6, "%g %g", ms[0][2], ms[1][2]);
  teardown(&fx);
}

Test(conv_pass, a_pass_is_classified_at_its_own_rate) {
  /* interference.h: a 4 GFLOP convolution op of 110 us is memory-bound
   * when its FLOPs take less: forward at 0.5 (4e9 / 40e12 = 100 us) yes,
   * backward at 0.4 (4e9 / 32e12 = 125 us) no; at the pooled 0.25 (200 us)
   * neither. */
  struct fixture fx;
  setup(&fx);
  const char *gpus[2] = {"PooledGPU", "PassGPU"};
  int want[2][2] = {{0, 0}, {1, 0}};
  for (int g = 0; g < 2; g++) {
    char topo[256];
    write_files(fx.dir, gpus[g], "", topo, sizeof topo);
    struct ds_topo *t = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_topo_load(topo, NULL, &t, &err), DS_OK, "%s", err.msg);
    struct ds_compute c;
    cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK, "%s",
                 err.msg);
    for (int bwd = 0; bwd < 2; bwd++) {
      struct ds_op op = {.kind = bwd ? DS_OP_BWD : DS_OP_FWD, .flops = 4e9, .dur_us = 110};
      cr_assert_eq(ds_interference_memory_bound(&c, DS_LAYER_CONV, &op, 110e3), want[g][bwd],
                   "%s pass %d", gpus[g], bwd);
    }
    ds_topo_free(t);
  }
  teardown(&fx);
}

Test(conv_pass, a_pass_key_needs_its_pooled_key_and_a_fraction) {
  const char *bad[][2] = {
      {"efficiency: {conv_half_bwd: 0.5}",
       "conv_half_bwd needs conv_half, the pooled value its other pass and pass-less uses take"},
      {"efficiency: {conv_tf32: 0.3, conv_tf32_fwd: 0}",
       "expected an achieved / peak fraction from 0.01 to 1"},
      {"efficiency: {conv_tf32: 0.3, conv_tf32_bwd: 1.2}",
       "expected an achieved / peak fraction from 0.01 to 1"},
      {"efficiency: {conv_tf32: 0.3, conv_tf32_back: 0.2}", "unknown key 'conv_tf32_back'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ds_test_gpu_entry_refused(bad[i][0], bad[i][1]);
}

Test(conv_pass, a_calibrations_pooled_value_replaces_the_tables_passes) {
  /* PassGPU's TF32 passes 0.5 / 0.4 under a calibration file: its pooled
   * conv_tf32 0.35 clears both (they were measured on the table's machine);
   * with conv_tf32_bwd 0.3 as well, that pass keeps the file's; a file with
   * conv_tf32_fwd alone sets that pass over the table's pooled 0.25. */
  struct ds_gpu_spec g;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_lookup_gpu_text(gpus_text, "PassGPU", &g, &err, NULL), DS_OK, "%s", err.msg);
  const char *files[3] = {"schema_version: 1\nefficiency:\n  conv_tf32: 0.35\n",
                          "schema_version: 1\nefficiency:\n  conv_tf32: 0.35\n"
                          "  conv_tf32_bwd: 0.3\n",
                          "schema_version: 1\nefficiency:\n  conv_tf32_fwd: 0.45\n"};
  const double want[3][3] = {{0.35, 0, 0}, {0.35, 0, 0.3}, {0.25, 0.45, 0.4}};
  for (int i = 0; i < 3; i++) {
    struct ds_calib cal;
    cr_assert_eq(ds_test_load_calib_text(files[i], &cal, &err, NULL), DS_OK, "%s", err.msg);
    struct ds_gpu_spec h = g;
    ds_calib_apply_gpu(&cal, &h);
    cr_assert_float_eq(h.eff.conv[DS_GPU_MATH_TF32], want[i][0], 0, "file %d", i);
    cr_assert_float_eq(h.eff.conv_fwd[DS_GPU_MATH_TF32], want[i][1], 0, "file %d", i);
    cr_assert_float_eq(h.eff.conv_bwd[DS_GPU_MATH_TF32], want[i][2], 0, "file %d", i);
    /* the file writes back what it read: the pass keys by their names */
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    cr_assert_not_null(mf);
    cr_assert_eq(ds_calib_write(mf, &cal, NULL), 0);
    cr_assert_eq(fclose(mf), 0);
    cr_assert_str_eq(buf, files[i]);
    free(buf);
  }
}

/* The number after `key` in out (-1 when missing). */
static double after(const char *out, const char *key) {
  const char *p = strstr(out, key);
  double v = -1;
  if (p) sscanf(p + strlen(key), "%lf", &v);
  return v;
}

Test(conv_pass, hopper_passes_are_the_fit_traces_rates) {
  /* topologies/gpus.yaml's H200 conv_tf32_fwd and conv_tf32_bwd are the fit
   * row's trace (ResNet-50 FP32 b32) split by the op each kernel ran under,
   * by the pooled value's rule: GFLOP / (compute + helper ms - 53 conv
   * layers x kernel_overhead) / the TF32 peak, the backward's input and
   * weight gradients together. The FLOPs are those ddpsim counts,
   * models/resnet50.yaml's conv layers' fwd_flops and bwd_flops x 32
   * (261.6 and 515.6 GFLOP; the stem's backward without its input
   * gradient); the passes' times add to the pooled line's; the H100 takes
   * the H200's values. */
  char out[16384];
  double unused;
  cr_assert_eq(ds_test_command_value("python3 bench/conv_rates.py --trace "
                                     "bench/results/gpu-2026-11-26-h200/prof/"
                                     "resnet50-fp32-b32.json.gz 2>&1",
                                     "none", &unused, out, sizeof out),
               0, "%s", out);
  struct ds_model *m = ds_test_model("models/resnet50.yaml");
  double flops[2] = {0, 0};
  int convs = 0;
  for (int32_t i = 0; i < m->n_layers; i++) {
    if (m->layers[i].cls != DS_LAYER_CONV) continue;
    convs++;
    flops[0] += m->layers[i].fwd_flops * 32 / 1e9;
    flops[1] += m->layers[i].bwd_flops * 32 / 1e9;
  }
  ds_model_free(m);
  cr_assert_eq(convs, 53);
  const char *what[2] = {"  forward: ", "  backward: "};
  const char *key[2] = {"gpus.yaml conv_tf32_fwd: ", "gpus.yaml conv_tf32_bwd: "};
  double ms_sum = 0, pooled_ms = after(out, " GFLOP in ");
  for (int p = 0; p < 2; p++) {
    const char *line = strstr(out, what[p]);
    cr_assert_not_null(line, "%s", out);
    double gflop, ms, kernels;
    cr_assert_eq(sscanf(line + strlen(what[p]), "%lf GFLOP in %lf ms less %lf kernels", &gflop,
                        &ms, &kernels),
                 3, "%s", out);
    cr_assert_float_eq(gflop, flops[p], 0.05, "%s", out);
    cr_assert_eq(kernels, convs);
    ms_sum += ms;
    const char *l2 = strstr(out, key[p]);
    cr_assert_not_null(l2, "%s", out);
    double rate, peak, printed;
    cr_assert_eq(sscanf(l2 + strlen(key[p]), "%lf / %lf TFLOPS = %lf", &rate, &peak, &printed),
                 3, "%s", out);
    const char *topos[] = {"validation/topologies/nd-h200-v5.yaml", "topologies/dgx-h100.yaml"};
    for (size_t i = 0; i < 2; i++) {
      struct ds_topo *t = NULL;
      struct ds_err err = {0};
      cr_assert_eq(ds_topo_load(topos[i], "topologies/gpus.yaml", &t, &err), DS_OK, "%s",
                   err.msg);
      double busy = ms - convs * t->compute.kernel_overhead_ns * 1e-6;
      double eff = round(gflop / busy / (t->gpu.tf32_flops_per_s / 1e12) * 1000) / 1000;
      cr_assert_float_eq(printed, eff, 1e-9, "%s: %s", topos[i], out);
      const double *table = p ? t->gpu.eff.conv_bwd : t->gpu.eff.conv_fwd;
      cr_assert_float_eq(table[DS_GPU_MATH_TF32], eff, 1e-9, "%s", topos[i]);
      /* half and FP32 stay pooled (no per-pass measurement) */
      cr_assert_eq(table[DS_GPU_MATH_HALF], 0, "%s", topos[i]);
      cr_assert_eq(table[DS_GPU_MATH_FP32], 0, "%s", topos[i]);
      ds_topo_free(t);
    }
  }
  cr_assert_float_eq(ms_sum, pooled_ms, 0.0015, "%s", out);
}
