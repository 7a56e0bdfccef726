/*
 * Tests for where a run's compute rates came from (sim/train/rates.c, the
 * sources compute.c resolves beside the rates, and the summary's line, CSV
 * column and JSON list): a made-up GPU with measured efficiencies for some
 * classes and maths and one without any, a toy model of one layer per
 * class, the topology's per-class keys, a calibration file's compute
 * and efficiency sections, and the table's stand-ins (efficiency_proxy:
 * labelled, never repriced) with the reader's refusals of bad ones. Each expected line is worked by hand from the
 * rules in compute.h: the math each class runs in, then topology key >
 * GPU table (or --calib) > (attention) matmul's rate > flops_efficiency.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/calib.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "sim/train/rates.h"
#include "tests/support.h"
#include "traces/calib_file.h"

/* MeasuredGPU: conv measured in TF32 and half, matmul in FP32 and TF32,
 * a copy's bandwidth; no attention entry. BareGPU: no measurement at all.
 * ProxyGPU: conv_tf32 (pooled; its forward pass measured apart), matmul_tf32
 * and memory are stand-ins (efficiency_proxy), the rest measured; SameGPU:
 * the same values, none marked. */
static const char *gpus_text =
    "schema_version: 1\ngpus:\n"
    "  - name: MeasuredGPU\n    # no arch\n    sms: 100\n    fp32: 10TFLOPS\n"
    "    tf32: 80TFLOPS\n    fp16: 160TFLOPS\n    bf16: 160TFLOPS\n    mem: 16GB\n"
    "    mem_bw: 1000GBps\n"
    "    efficiency: {conv_tf32: 0.25, conv_half: 0.3, matmul_fp32: 0.4, matmul_tf32: 0.6,"
    " memory: 0.8}\n"
    "  - name: BareGPU\n    # no arch\n    sms: 100\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n"
    "    fp16: 160TFLOPS\n    bf16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
    "  - name: ProxyGPU\n    # no arch\n    sms: 100\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n"
    "    fp16: 160TFLOPS\n    bf16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
    "    efficiency: {conv_tf32: 0.25, conv_tf32_fwd: 0.35, conv_half: 0.3, matmul_fp32: 0.4,"
    " matmul_tf32: 0.6, memory: 0.8}\n"
    "    efficiency_proxy: {conv_tf32: \"the half value's fraction\", matmul_tf32: \"the half "
    "value's fraction\", memory: \"another card's copy\"}\n"
    "  - name: SameGPU\n    # no arch\n    sms: 100\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n"
    "    fp16: 160TFLOPS\n    bf16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
    "    efficiency: {conv_tf32: 0.25, conv_tf32_fwd: 0.35, conv_half: 0.3, matmul_fp32: 0.4,"
    " matmul_tf32: 0.6, memory: 0.8}\n";

/* One layer of each class with FLOPs (memory's has bytes only); `extra`
 * appends layers. */
static const char *model_head =
    "schema_version: 1\nname: rates\nsample: \"one test sample\"\ndefault_batch: 1\n"
    "optimizer: sgd\nlayers:\n"
    "  - {name: c0, class: conv, fwd_flops: 1000000000, bwd_flops: 2000000000, fwd_bytes: 0,"
    " act_bytes: 1000, params: [{name: c0.weight, numel: 1024}]}\n"
    "  - {name: m0, class: matmul, fwd_flops: 1000000000, bwd_flops: 2000000000,"
    " fwd_bytes: 0, act_bytes: 1000, params: [{name: m0.weight, numel: 1024}]}\n"
    "  - {name: n0, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 4000,"
    " act_bytes: 1000, params: [{name: n0.weight, numel: 16}]}\n";
static const char *attention_layer =
    "  - {name: a0, class: attention, fwd_flops: 1000000000, bwd_flops: 2000000000,"
    " fwd_bytes: 0, act_bytes: 1000, params: [{name: a0.weight, numel: 64}]}\n";

struct setup {
  char dir[64];
  char topo[96], gpus[96], model[96];
};

/* Writes the GPU table, a one-GPU topology on gpu with `compute` (lines
 * indented by two) and the model (with an attention layer when attention)
 * into a new directory. */
static void write_files(struct setup *s, const char *gpu, const char *compute, int attention) {
  strcpy(s->dir, "/tmp/ddpsim-rates-XXXXXX");
  cr_assert(mkdtemp(s->dir) != NULL);
  snprintf(s->gpus, sizeof s->gpus, "%s/gpus.yaml", s->dir);
  snprintf(s->topo, sizeof s->topo, "%s/t.yaml", s->dir);
  snprintf(s->model, sizeof s->model, "%s/m.yaml", s->dir);
  char text[1024];
  FILE *f = fopen(s->gpus, "w");
  cr_assert(f);
  fputs(gpus_text, f);
  fclose(f);
  snprintf(text, sizeof text,
           "schema_version: 1\nname: rates\ngpu: %s\nnodes: 1\ngpus_per_node: 2\n"
           "intra_node:\n  template: nvswitch\n  link_bw: 100GBps\n  link_lat: 1us\n"
           "compute:\n  kernel_overhead: 0us\n%s", gpu, compute);
  f = fopen(s->topo, "w");
  cr_assert(f);
  fputs(text, f);
  fclose(f);
  f = fopen(s->model, "w");
  cr_assert(f);
  fputs(model_head, f);
  if (attention) fputs(attention_layer, f);
  fclose(f);
}

static void remove_files(struct setup *s) {
  unlink(s->gpus);
  unlink(s->topo);
  unlink(s->model);
  rmdir(s->dir);
}

/* The summary's line for gpu and compute, trained in dtype under tf32,
 * with calib_text (a calibration file's text) applied when not NULL, as
 * ddpsim's load does; *rates receives the list. */
static void describe(const char *gpu, const char *compute, int attention, enum ds_dtype dtype,
                     enum ds_tf32 tf32, const char *calib_text, char *line, size_t size,
                     struct ds_rates *rates) {
  struct setup s;
  struct ds_topo *t = NULL;
  struct ds_model *m = NULL;
  struct ds_compute c;
  struct ds_err err = {0};
  write_files(&s, gpu, compute, attention);
  cr_assert_eq(ds_topo_load(s.topo, s.gpus, &t, &err), DS_OK, "%s", err.msg);
  if (calib_text) {
    struct ds_calib *cal = malloc(sizeof *cal);
    cr_assert(cal);
    cr_assert_eq(ds_test_load_calib_text(calib_text, cal, &err, NULL), DS_OK, "%s", err.msg);
    ds_calib_apply_compute(cal, &t->compute);
    ds_calib_apply_gpu(cal, &t->gpu);
    free(cal);
  }
  cr_assert_eq(ds_model_load(s.model, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compute_init(t, dtype, DS_AMP_NONE, &c, &err), DS_OK, "%s", err.msg);
  ds_compute_set_tf32(&c, t, tf32);
  ds_rates_used(&c, m, rates);
  ds_rates_describe(rates, line, size);
  ds_model_free(m);
  ds_topo_free(t);
  remove_files(&s);
}

#define EXPECT_LINE(line, want) cr_assert_str_eq(line, want, "got\n  %s\nwant\n  %s", line, want)

/* The CSV field ds_rates_write_field writes, in buf. */
static void rates_field(const struct ds_rates *what, char *buf, size_t size) {
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&text, &len);
  cr_assert(fp);
  cr_assert_eq(ds_rates_write_field(fp, what), 0);
  cr_assert_eq(fclose(fp), 0);
  cr_assert_lt(len, size);
  memcpy(buf, text, len + 1);
  free(text);
}

/* fp32 under --tf32 conv: convolutions in TF32 (the GPU has it), matmul and
 * attention in FP32; conv_tf32, matmul_fp32 and memory are in the table,
 * so every rate is measured. */
Test(rates, all_measured_short_form) {
  char line[640];
  struct ds_rates r;
  describe("MeasuredGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_CONV, NULL,
           line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: all measured (GPU table): conv_tf32, matmul_fp32, memory");
  cr_assert_eq(r.n, 3);
  cr_assert_float_eq(r.r[0].efficiency, 0.25, 0);
  cr_assert_float_eq(r.r[1].efficiency, 0.4, 0);
  cr_assert_float_eq(r.r[2].efficiency, 0.8, 0);
  cr_assert_not(ds_rates_unmeasured(&r));
}

/* Attention has no entry: matmul_fp32's measured 0.4 stands in for it
 * (compute.c), which the line says is not attention's own measurement. */
Test(rates, attention_at_matmuls_rate) {
  char line[640], field[256];
  struct ds_rates r;
  describe("MeasuredGPU", "  flops_efficiency: 0.5\n", 1, DS_DTYPE_FP32, DS_TF32_CONV, NULL,
           line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: measured (GPU table) for conv_tf32, matmul_fp32, memory; "
                    "matmul's rate (attention not measured) for attention_fp32");
  cr_assert_float_eq(r.r[2].efficiency, 0.4, 0);
  cr_assert(ds_rates_unmeasured(&r));
  rates_field(&r, field, sizeof field);
  cr_assert_str_eq(field, "conv_tf32=gpu_table;matmul_fp32=gpu_table;attention_fp32=as_matmul;"
                          "memory=gpu_table");
}

/* fp16: conv_half measured (0.3); no matmul_half, so matmul falls back to
 * flops_efficiency 0.5 and attention with it (typical, not "matmul's
 * rate"); memory measured. */
Test(rates, half_without_matmul_entry_is_typical) {
  char line[640];
  struct ds_rates r;
  describe("MeasuredGPU", "  flops_efficiency: 0.5\n", 1, DS_DTYPE_FP16, DS_TF32_CONV, NULL,
           line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: measured (GPU table) for conv_half, memory; typical "
                    "flops_efficiency 0.5 (not measured) for matmul_half, attention_half");
}

/* --tf32 all: matmul and attention in TF32; matmul_tf32 is measured. */
Test(rates, tf32_all_names_the_math) {
  char line[640];
  struct ds_rates r;
  describe("MeasuredGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_ALL, NULL,
           line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: all measured (GPU table): conv_tf32, matmul_tf32, memory");
}

/* A GPU without entries: every class at the topology's flops_efficiency,
 * memory at the default mem_efficiency 0.7 (topo.c). */
Test(rates, bare_gpu_is_typical) {
  char line[640], field[256];
  struct ds_rates r;
  describe("BareGPU", "  flops_efficiency: 0.5\n", 1, DS_DTYPE_FP32, DS_TF32_NONE, NULL, line,
           sizeof line, &r);
  EXPECT_LINE(line, "compute rates: typical flops_efficiency 0.5 (not measured) for conv_fp32, "
                    "matmul_fp32, attention_fp32; typical mem_efficiency 0.7 (not measured) "
                    "for memory");
  cr_assert(ds_rates_unmeasured(&r));
  rates_field(&r, field, sizeof field);
  cr_assert_str_eq(field, "conv_fp32=typical;matmul_fp32=typical;attention_fp32=typical;"
                          "memory=typical");
}

/* The topology's own keys win over the table: conv_efficiency 0.6 on the
 * measured GPU, and matmul_efficiency 0.7 on the bare one (attention then
 * takes matmul's rate). A topology's mem_efficiency is its typical value. */
Test(rates, topology_keys) {
  char line[640];
  struct ds_rates r;
  describe("MeasuredGPU", "  flops_efficiency: 0.5\n  conv_efficiency: 0.6\n", 0,
           DS_DTYPE_FP32, DS_TF32_CONV, NULL, line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: measured (GPU table) for matmul_fp32, memory; topology's "
                    "conv_efficiency 0.6 for conv_tf32");
  describe("BareGPU", "  flops_efficiency: 0.5\n  matmul_efficiency: 0.7\n"
           "  mem_efficiency: 0.75\n", 1, DS_DTYPE_FP32, DS_TF32_CONV, NULL, line, sizeof line,
           &r);
  EXPECT_LINE(line, "compute rates: topology's matmul_efficiency 0.7 for matmul_fp32; matmul's "
                    "rate (attention not measured) for attention_fp32; typical flops_efficiency "
                    "0.5 (not measured) for conv_tf32; typical mem_efficiency 0.75 (not "
                    "measured) for memory");
  cr_assert_float_eq(r.r[2].efficiency, 0.7, 0);
}

/* A calibration file: its efficiency section's conv_tf32 and its compute
 * section's mem_efficiency are measured on the user's machine; matmul
 * still falls back. Its flops_efficiency replaces the fallback itself, a
 * stand-in there: ddpreal calibrate timed GEMMs in one math, not the
 * class. */
Test(rates, calibration_file) {
  char line[640];
  struct ds_rates r;
  describe("BareGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_CONV,
           "schema_version: 1\ncompute:\n  mem_efficiency: 0.9\nefficiency:\n  conv_tf32: 0.3\n",
           line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: measured (--calib) for conv_tf32, memory; typical "
                    "flops_efficiency 0.5 (not measured) for matmul_fp32");
  describe("MeasuredGPU", "  flops_efficiency: 0.5\n", 1, DS_DTYPE_FP32, DS_TF32_CONV,
           "schema_version: 1\ncompute:\n  flops_efficiency: 0.45\n", line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: measured (GPU table) for conv_tf32, matmul_fp32, memory; "
                    "matmul's rate (attention not measured) for attention_fp32");
  describe("BareGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_CONV,
           "schema_version: 1\ncompute:\n  flops_efficiency: 0.45\n", line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: a stand-in (--calib's flops_efficiency 0.45, its GEMMs) "
                    "for conv_tf32, matmul_fp32; typical mem_efficiency 0.7 (not measured) "
                    "for memory");
  cr_assert_eq(r.r[0].source, DS_RATE_CALIB_FLOPS);
  cr_assert(ds_rates_unmeasured(&r));
}

/* A convolution is charged by its passes: a calibration that measured the
 * forward alone leaves the backward at flops_efficiency, so the class is
 * typical; both passes measured make it the file's. */
Test(rates, conv_passes) {
  char line[640];
  struct ds_rates r;
  describe("BareGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_CONV,
           "schema_version: 1\nefficiency:\n  conv_tf32_fwd: 0.3\n", line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: typical flops_efficiency 0.5 (not measured) for conv_tf32, "
                    "matmul_fp32; typical mem_efficiency 0.7 (not measured) for memory");
  describe("BareGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_CONV,
           "schema_version: 1\nefficiency:\n  conv_tf32_fwd: 0.3\n  conv_tf32_bwd: 0.2\n", line,
           sizeof line, &r);
  EXPECT_LINE(line, "compute rates: measured (--calib) for conv_tf32; typical flops_efficiency "
                    "0.5 (not measured) for matmul_fp32; typical mem_efficiency 0.7 (not "
                    "measured) for memory");
}

/* Through ddpsim: the text's line under the header, the CSV's last column
 * and the JSON's list, for the measured GPU's BERT-like toy (attention at
 * matmul's rate). */
Test(rates, ddpsim_outputs) {
  struct setup s;
  char args[512];
  write_files(&s, "MeasuredGPU", "  flops_efficiency: 0.5\n", 1);
  snprintf(args, sizeof args, "--topo %s --model %s", s.topo, s.model);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *want = "\ncompute rates: measured (GPU table) for conv_tf32, matmul_fp32, memory; "
                     "matmul's rate (attention not measured) for attention_fp32\n"
                     "kernel models: none\n\n";
  cr_assert(strstr(r.out, want), "%s", r.out);
  ds_test_release(&r);
  snprintf(args, sizeof args, "--topo %s --model %s --format csv", s.topo, s.model);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char field[256];
  ds_test_csv_str(r.out, "compute_rates", 0, field, sizeof field);
  cr_assert_str_eq(field, "conv_tf32=gpu_table;matmul_fp32=gpu_table;attention_fp32=as_matmul;"
                          "memory=gpu_table");
  cr_assert(strstr(r.out, ",bucket_mib,compute_rates,kernel_models\n"), "%s", r.out);
  ds_test_release(&r);
  snprintf(args, sizeof args, "--topo %s --model %s --format json --tf32 none", s.topo, s.model);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  /* --tf32 none: conv in FP32, which the table lacks: flops_efficiency */
  cr_assert(strstr(r.out, "\"compute_rates\": [{\"rate\": \"conv_fp32\", \"source\": \"typical\", "
                          "\"key\": \"flops_efficiency\", \"value\": 0.5}, {\"rate\": "
                          "\"matmul_fp32\", \"source\": \"gpu_table\"}, {\"rate\": "
                          "\"attention_fp32\", \"source\": \"as_matmul\"}, {\"rate\": \"memory\", "
                          "\"source\": \"gpu_table\"}], \"kernel_models\": []}"), "%s", r.out);
  ds_test_release(&r);
  remove_files(&s);
}

/* A stand-in says so, with the table's reason: conv_tf32's pooled value
 * (the backward pass has no value of its own, so the class is as backed as
 * its least backed pass, though the forward is measured) and memory; the
 * measured matmul_fp32 stays "measured". Nothing it prices moves: the
 * rates are SameGPU's, whose table has the values unmarked. */
Test(rates, stand_in_is_labelled_with_its_reason) {
  char line[640], field[256];
  struct ds_rates r, same;
  describe("ProxyGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_CONV, NULL, line,
           sizeof line, &r);
  EXPECT_LINE(line, "compute rates: measured (GPU table) for matmul_fp32; a stand-in (GPU "
                    "table: the half value's fraction) for conv_tf32; a stand-in (GPU table: "
                    "another card's copy) for memory");
  cr_assert(ds_rates_unmeasured(&r));
  rates_field(&r, field, sizeof field);
  cr_assert_str_eq(field, "conv_tf32=gpu_table_proxy;matmul_fp32=gpu_table;"
                          "memory=gpu_table_proxy");
  cr_assert_str_eq(r.r[0].proxy, "the half value's fraction");
  cr_assert_str_eq(r.r[1].proxy, "");
  describe("SameGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_CONV, NULL, line,
           sizeof line, &same);
  EXPECT_LINE(line, "compute rates: all measured (GPU table): conv_tf32, matmul_fp32, memory");
  cr_assert_eq(r.n, same.n);
  for (int32_t i = 0; i < r.n; i++)
    cr_assert_float_eq(r.r[i].efficiency, same.r[i].efficiency, 0, "rate %d", i);
}

/* Two stand-ins with one reason share a group (--tf32 all: conv_tf32 and
 * matmul_tf32); a calibration file's value is its own measurement, whatever
 * the table said of its value; the topology's key overrides every pass. */
Test(rates, stand_ins_group_and_give_way) {
  char line[640];
  struct ds_rates r;
  describe("ProxyGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_ALL, NULL, line,
           sizeof line, &r);
  EXPECT_LINE(line, "compute rates: a stand-in (GPU table: the half value's fraction) for "
                    "conv_tf32, matmul_tf32; a stand-in (GPU table: another card's copy) for "
                    "memory");
  describe("ProxyGPU", "  flops_efficiency: 0.5\n", 0, DS_DTYPE_FP32, DS_TF32_ALL,
           "schema_version: 1\nefficiency:\n  conv_tf32: 0.2\n  matmul_tf32: 0.5\n", line,
           sizeof line, &r);
  /* the pooled value is the file's; the forward pass the table measured */
  EXPECT_LINE(line, "compute rates: measured (--calib) for conv_tf32, matmul_tf32; a stand-in "
                    "(GPU table: another card's copy) for memory");
  describe("ProxyGPU", "  flops_efficiency: 0.5\n  conv_efficiency: 0.6\n", 0, DS_DTYPE_FP32,
           DS_TF32_CONV, NULL, line, sizeof line, &r);
  EXPECT_LINE(line, "compute rates: measured (GPU table) for matmul_fp32; a stand-in (GPU "
                    "table: another card's copy) for memory; topology's conv_efficiency 0.6 for "
                    "conv_tf32");
}

/* A stand-in pass: the backward pass's own value marked, the pooled one
 * measured; the forward pass falls back on the pooled (measured) value. */
Test(rates, a_stand_in_pass_makes_the_convolution_one) {
  char line[640];
  struct ds_rates r;
  struct setup s;
  write_files(&s, "PassGPU", "  flops_efficiency: 0.5\n", 0);
  FILE *f = fopen(s.gpus, "w");
  cr_assert(f);
  fputs("schema_version: 1\ngpus:\n"
        "  - name: PassGPU\n    sms: 100\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n"
        "    fp16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
        "    efficiency: {conv_tf32: 0.25, conv_tf32_bwd: 0.2, matmul_fp32: 0.4, memory: 0.8}\n"
        "    efficiency_proxy: {conv_tf32_bwd: \"the forward's kernels\"}\n", f);
  fclose(f);
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  struct ds_compute c;
  cr_assert_eq(ds_topo_load(s.topo, s.gpus, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK, "%s", err.msg);
  ds_compute_set_tf32(&c, t, DS_TF32_CONV);
  cr_assert_eq(c.class_source[DS_LAYER_CONV], DS_RATE_GPU_PROXY);
  cr_assert_str_eq(c.class_proxy[DS_LAYER_CONV], "the forward's kernels");
  cr_assert_float_eq(c.conv_pass_efficiency[0], 0.25, 0);
  cr_assert_float_eq(c.conv_pass_efficiency[1], 0.2, 0);
  struct ds_model *m = NULL;
  cr_assert_eq(ds_model_load(s.model, &m, &err), DS_OK, "%s", err.msg);
  ds_rates_used(&c, m, &r);
  ds_rates_describe(&r, line, sizeof line);
  EXPECT_LINE(line, "compute rates: measured (GPU table) for matmul_fp32, memory; a stand-in "
                    "(GPU table: the forward's kernels) for conv_tf32");
  ds_model_free(m);
  ds_topo_free(t);
  remove_files(&s);
}

/* Through ddpsim: the CSV names the source, the JSON gives the reason too,
 * and so does `ddpsim topo`. */
Test(rates, ddpsim_outputs_a_stand_in) {
  struct setup s;
  char args[512], field[256];
  write_files(&s, "ProxyGPU", "  flops_efficiency: 0.5\n", 0);
  snprintf(args, sizeof args, "--topo %s --model %s --format csv", s.topo, s.model);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_csv_str(r.out, "compute_rates", 0, field, sizeof field);
  cr_assert_str_eq(field, "conv_tf32=gpu_table_proxy;matmul_fp32=gpu_table;"
                          "memory=gpu_table_proxy");
  ds_test_release(&r);
  snprintf(args, sizeof args, "--topo %s --model %s --format json", s.topo, s.model);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "{\"rate\": \"conv_tf32\", \"source\": \"gpu_table_proxy\", "
                          "\"proxy\": \"the half value's fraction\"}"), "%s", r.out);
  ds_test_release(&r);
  /* `ddpsim topo` lists the table's values, then which of them are
   * stand-ins, the keys of one reason together */
  snprintf(args, sizeof args, "topo %s", s.topo);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\n  stand-ins  conv_tf32, matmul_tf32 (the half value's fraction); "
                          "memory (another card's copy)\n"),
            "%s", r.out);
  ds_test_release(&r);
  remove_files(&s);
}

/* The reader refuses a bad efficiency_proxy at its file, line and key. */
Test(rates, bad_stand_ins_are_refused) {
  const char *bad[][2] = {
      {"efficiency_proxy: {conv_tf32: \"x\"}\n    efficiency: {conv_half: 0.5}",
       "key 'gpus[0].efficiency_proxy.conv_tf32': a stand-in for conv_tf32, which the entry's "
       "efficiency map does not set"},
      {"efficiency_proxy: {memory: \"x\"}", "a stand-in for memory, which the entry's"},
      {"efficiency_proxy: {conv_tf33: \"x\"}\n    efficiency: {conv_tf32: 0.5}",
       "unknown key 'conv_tf33'"},
      {"efficiency_proxy: \"x\"\n    efficiency: {conv_tf32: 0.5}",
       "key 'gpus[0].efficiency_proxy': expected a map of efficiency keys to a short reason"},
      {"efficiency_proxy: {conv_tf32: \"\"}\n    efficiency: {conv_tf32: 0.5}",
       "expected a short reason of 1 to 63 characters"},
      {"efficiency_proxy: {conv_tf32: "
       "\"0123456789012345678901234567890123456789012345678901234567890123\"}\n"
       "    efficiency: {conv_tf32: 0.5}",
       "expected a short reason of 1 to 63 characters"},
      {"efficiency_proxy: {conv_tf32: 'the \"half\" one'}\n    efficiency: {conv_tf32: 0.5}",
       "without quotes or backslashes"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ds_test_gpu_entry_refused(bad[i][0], bad[i][1]);
  /* and ddpsim exits 2 naming the table's file */
  struct setup s;
  char args[512];
  write_files(&s, "MeasuredGPU", "  flops_efficiency: 0.5\n", 0);
  FILE *f = fopen(s.gpus, "a");
  cr_assert(f);
  fputs("    efficiency_proxy: {attention_half: \"x\"}\n", f);
  fclose(f);
  snprintf(args, sizeof args, "--topo %s --model %s", s.topo, s.model);
  ds_test_ddpsim_refuses(args, "gpus.yaml:");
  ds_test_ddpsim_refuses(args, "a stand-in for attention_half");
  remove_files(&s);
}

/* A half GEMM on unaligned operands (GPT-2's LM head, gemm_align 1) runs
 * at the GPU table's matmul_unaligned_half whatever priced matmul_half, so
 * the line names it apart: measured on the H200 (beside its measured
 * matmul_half), still the table's when a calibration file sets matmul_half,
 * and on the H100 the H200's, a stand-in. */
Test(rates, unaligned_half_gemms_are_named) {
  static const char *const h200 = "--topo validation/topologies/nd-h200-v5.yaml --model gpt2 "
                                  "--amp bf16 --batch 1 --world-size 1 --strategy single";
  struct ds_test_result r = ds_test_cli(h200);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "compute rates: all measured (GPU table): matmul_half, attention_half, "
                          "matmul_unaligned_half, memory\n"),
            "%s", r.out);
  ds_test_release(&r);
  char dir[] = "/tmp/ddpsim-rates-XXXXXX", calib[64], args[320];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(calib, sizeof calib, "%s/c.yaml", dir);
  FILE *f = fopen(calib, "w");
  cr_assert(f);
  /* named as the device names itself (gpus.yaml smi_names): measured */
  fputs("schema_version: 1\ngpu: \"NVIDIA H200\"\nefficiency:\n  matmul_half: 0.5\n", f);
  fclose(f);
  snprintf(args, sizeof args, "%s --calib %s", h200, calib);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "compute rates: measured (GPU table) for attention_half, "
                          "matmul_unaligned_half, memory; measured (--calib) for matmul_half\n"),
            "%s", r.out);
  ds_test_release(&r);
  r = ds_test_run("", ds_test_ddpsim(),
                  "--topo dgx-h100 --model gpt2 --amp bf16 --batch 1 --world-size 1 "
                  "--strategy single");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "compute rates: measured (GPU table) for attention_half, memory; a "
                          "stand-in (GPU table: the H200's, the same GH100 chip and clocks) for "
                          "matmul_half, matmul_unaligned_half\n"),
            "%s", r.out);
  ds_test_release(&r);
  /* the A100 has no value for it: its unaligned GEMMs take matmul_half's */
  r = ds_test_run("", ds_test_ddpsim(),
                  "--topo 4gpu --model gpt2 --amp bf16 --batch 1 --world-size 1 "
                  "--strategy single");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(!strstr(r.out, "unaligned"), "%s", r.out);
  ds_test_release(&r);
  unlink(calib);
  rmdir(dir);
}

/* The shipped table (issue #12): the H100 takes some values from the H200
 * (the same GH100 chip and clocks, another GPU), so an H100 run names its
 * conv_tf32 and matmul_fp32 stand-ins with that reason and only its own
 * copy's bandwidth measured; the H200 run of the same model names the same
 * values its own measurements. */
Test(rates, shipped_h100_names_the_h200s_values_stand_ins) {
  static const char *const topo[] = {"dgx-h100", "validation/topologies/nd-h200-v5.yaml"};
  static const char *const line[] = {
      "compute rates: measured (GPU table) for memory; a stand-in (GPU table: the H200's, the "
      "same GH100 chip and clocks) for conv_tf32, matmul_fp32\n",
      "compute rates: all measured (GPU table): conv_tf32, matmul_fp32, memory\n"};
  static const char *const csv[] = {
      "conv_tf32=gpu_table_proxy;matmul_fp32=gpu_table_proxy;memory=gpu_table",
      "conv_tf32=gpu_table;matmul_fp32=gpu_table;memory=gpu_table"};
  for (int k = 0; k < 2; k++) {
    char args[256], field[256];
    snprintf(args, sizeof args, "--topo %s --model resnet50 --world-size 1 --strategy single",
             topo[k]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, line[k]), "%s", r.out);
    ds_test_release(&r);
    snprintf(args, sizeof args, "--topo %s --model resnet50 --world-size 1 --strategy single "
             "--format csv", topo[k]);
    r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    ds_test_csv_str(r.out, "compute_rates", 0, field, sizeof field);
    cr_assert_str_eq(field, csv[k]);
    ds_test_release(&r);
  }
  /* the JSON gives the reason beside the source */
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(),
                                        "--topo dgx-h100 --model resnet50 --world-size 1 "
                                        "--strategy single --format json");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "{\"rate\": \"conv_tf32\", \"source\": \"gpu_table_proxy\", "
                          "\"proxy\": \"the H200's, the same GH100 chip and clocks\"}"),
            "%s", r.out);
  ds_test_release(&r);
}

/* Layers without a class run at flops_efficiency itself: a calibration
 * file's value is their measurement in the math it timed (fp32 or tf32),
 * a stand-in for them in half math (--amp). */
Test(rates, calib_flops_for_unclassed_half) {
  char dir[] = "/tmp/ddpsim-rates-XXXXXX", calib[64], args[320];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(calib, sizeof calib, "%s/c.yaml", dir);
  FILE *f = fopen(calib, "w");
  cr_assert(f);
  fputs("schema_version: 1\ngpu: \"NVIDIA H100 80GB HBM3\"\ncompute:\n  flops_efficiency: 0.45\n",
        f);
  fclose(f);
  const char *amp[] = {"", "--amp bf16"};
  const char *want[] = {"compute rates: measured (GPU table) for memory; measured (--calib) for "
                        "unclassed_tf32\n",
                        "compute rates: measured (GPU table) for memory; a stand-in (--calib's "
                        "flops_efficiency 0.45, its GEMMs) for unclassed_half\n"};
  for (int k = 0; k < 2; k++) {
    snprintf(args, sizeof args, "--topo dgx-h100 --model tests/data/psgd-model.yaml "
             "--world-size 1 --strategy single --calib %s %s", calib, amp[k]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, want[k]), "%s", r.out);
    ds_test_release(&r);
  }
  unlink(calib);
  rmdir(dir);
}

/* The line is never cut: seven stand-ins of seven long reasons make a line
 * longer than the summary's 640-byte buffer; the describer returns its
 * whole length, fills a short buffer with its start, and a buffer of that
 * length + 1 with all of it, the last group's name last. */
Test(rates, a_long_line_gives_its_whole_length) {
  struct ds_rates r = {.n = DS_RATES_MAX};
  for (int32_t i = 0; i < r.n; i++) {
    r.r[i] = (struct ds_rate_used){.cls = DS_LAYER_CONV, .math = i % DS_GPU_MATH_COUNT,
                                   .source = DS_RATE_GPU_PROXY};
    snprintf(r.r[i].proxy, sizeof r.r[i].proxy,
             "reason %c of seven, each long enough that all outgrow a line", (char)('0' + i));
  }
  char small[64];
  size_t len = ds_rates_describe(&r, small, sizeof small);
  cr_assert_gt(len, 640);
  cr_assert_eq(strlen(small), sizeof small - 1);
  char *whole = malloc(len + 1);
  cr_assert(whole);
  cr_assert_eq(ds_rates_describe(&r, whole, len + 1), len);
  cr_assert_eq(strlen(whole), len);
  cr_assert(strncmp(whole, small, sizeof small - 1) == 0);
  cr_assert(strstr(whole, "; a stand-in (GPU table: reason 6 of seven, each long enough that all "
                          "outgrow a line) for "), "%s", whole);
  free(whole);
}
