/*
 * Tests for where a run's measured kernel models came from
 * (sim/train/kernel_models.c, the records the pricing code makes with
 * ds_compute_charge_model, and the summary's line, CSV column and JSON
 * list). Every model's constants were fitted on an H200 (132 SMs at 1980
 * MHz, topologies/gpus.yaml's H200-SXM-141GB); another GPU runs them as the
 * same SM cycles on its SMs at its boost clock, a GPU without boost_mhz at
 * the memory roofline. The expected lines are worked by hand from the GPU
 * table (V100-SXM2-16GB: 80 SMs, boost_mhz 1530; B200-SXM-180GB: no
 * boost_mhz) and from the layers each model has: ResNet-50 a batch norm
 * per convolution and one max-pool, BERT-base layer norms and no batch
 * norm.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/train/compute.h"
#include "sim/train/grouped_conv.h"
#include "sim/train/kernel_models.h"
#include "sim/train/rates.h"
#include "tests/support.h"

/* The text's line: "kernel models: ..." up to its newline, into buf. */
static void line_of(const char *out, char *buf, size_t cap) {
  const char *p = strstr(out, "\nkernel models: ");
  cr_assert(p, "no kernel models line in:\n%s", out);
  p++;
  size_t n = strcspn(p, "\n");
  cr_assert_lt(n, cap);
  memcpy(buf, p, n);
  buf[n] = '\0';
}

/* `ddpsim args`, which must succeed: its "kernel models: ..." line in buf. */
static void models_line(const char *args, char *buf, size_t cap) {
  struct ds_test_result r = ds_test_cli_ok(args);
  line_of(r.out, buf, cap);
  ds_test_release(&r);
}

/* `ddpsim args` (a CSV run), which must succeed: its first row's
 * kernel_models column in buf. */
static void models_column(const char *args, char *buf, size_t cap) {
  struct ds_test_result r = ds_test_cli_ok(args);
  ds_test_csv_str(r.out, "kernel_models", 0, buf, cap);
  ds_test_release(&r);
}

/* The CSV field ds_kernel_models_write_field writes, in buf. */
static void models_field(const struct ds_kernel_models *what, char *buf, size_t size) {
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&text, &len);
  cr_assert(fp);
  cr_assert_eq(ds_kernel_models_write_field(fp, what), 0);
  cr_assert_eq(fclose(fp), 0);
  cr_assert_lt(len, size);
  memcpy(buf, text, len + 1);
  free(text);
}

/* The H200 is the GPU the models were measured on: ResNet-50's batch norms
 * and its max-pool are its own cycles, on its own 132 SMs at 1980 MHz. */
Test(kernel_models, h200_resnet50_is_measured_on_this_gpu) {
  struct ds_test_result r = ds_test_cli_ok(
      "--topo validation/topologies/nd-h200-v5.yaml "
      "--model resnet50 --world-size 1 --strategy single");
  char line[640];
  line_of(r.out, line, sizeof line);
  const char *want = "kernel models: measured on this GPU (H200) for batch norm (NCHW), max-pool";
  cr_assert(strncmp(line, want, strlen(want)) == 0, "%s", line);
  cr_assert(!strstr(line, "SM cycles on"), "nothing is moved to another GPU: %s", line);
  /* the line comes right after the compute rates' */
  cr_assert(strstr(r.out, "compute rates: all measured (GPU table): conv_tf32, matmul_fp32, "
                          "memory\nkernel models: "), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok(
      "--topo validation/topologies/nd-h200-v5.yaml --model resnet50 --world-size 1 "
      "--strategy single --format csv");
  char field[512];
  ds_test_csv_str(r.out, "kernel_models", 0, field, sizeof field);
  const char *want_field = "batch_norm_nchw=this_gpu;max_pool=this_gpu;";
  cr_assert(strncmp(field, want_field, strlen(want_field)) == 0, "%s", field);
  cr_assert(strstr(r.out, ",bucket_mib,compute_rates,kernel_models\n"), "%s", r.out);
  ds_test_release(&r);
}

/* A V100 runs the H200's cycles on its 80 SMs at 1530 MHz (gpus.yaml's
 * V100-SXM2-16GB), and the JSON says both GPUs; ResNeXt adds its grouped
 * convolutions, moved the same way. ResNet-50's 53 batch norms make 106
 * passes (forward and backward), its max-pool 2: on the V100's 900 GB/s
 * the roofline binds some of them, which the line counts. */
Test(kernel_models, v100_says_the_models_are_moved) {
  char line[640];
  models_line("--topo dgx1-v100 --model resnet50 --world-size 1 --strategy single", line,
              sizeof line);
  const char *want = "kernel models: H200's SM cycles on V100-SXM2-16GB's 80 SMs at 1530 MHz "
                     "for batch norm (NCHW; roofline bound ";
  cr_assert(strncmp(line, want, strlen(want)) == 0, "%s", line);
  cr_assert(strstr(line, " of 106 passes), max-pool ("), "%s", line);
  cr_assert(!strstr(line, "the same SMs and clock"), "%s", line);
  cr_assert(!strstr(line, "grouped"), "ResNet-50 has no grouped convolution: %s", line);
  cr_assert(!strstr(line, "this GPU"), "%s", line);
  models_line("--topo dgx1-v100 --model resnext101_32x4d --world-size 1 --strategy single", line,
              sizeof line);
  cr_assert(strstr(line, "80 SMs at 1530 MHz for batch norm (NCHW; "), "%s", line);
  cr_assert(strstr(line, "), grouped convolutions (per shape"), "%s", line);
  struct ds_test_result r = ds_test_cli_ok(
      "--topo dgx1-v100 --model resnet50 --world-size 1 --strategy single "
      "--format json");
  cr_assert(strstr(r.out, "\"kernel_models\": [{\"kernel\": \"batch_norm_nchw\", \"source\": "
                          "\"scaled_H200\", \"measured_on\": \"H200-SXM-141GB\", \"sms\": 80, "
                          "\"clock_mhz\": 1530, \"passes\": 106, \"model_bound\": "),
            "%s", r.out);
  cr_assert(strstr(r.out, "{\"kernel\": \"max_pool\", \"source\": \"scaled_H200\", "
                          "\"measured_on\": \"H200-SXM-141GB\", \"sms\": 80, \"clock_mhz\": 1530, "
                          "\"passes\": 2, \"model_bound\": "), "%s", r.out);
  ds_test_release(&r);
}

/* BERT-base has layer norms and no batch norm: the line names the one and
 * not the other, in the text and the CSV. */
Test(kernel_models, bert_does_not_mention_batch_norm) {
  char line[640];
  models_line("--topo dgx1-v100 --model bert-base --world-size 1 --strategy single", line,
              sizeof line);
  cr_assert(strstr(line, "layer norm"), "%s", line);
  cr_assert(!strstr(line, "batch norm"), "%s", line);
  cr_assert(!strstr(line, "max-pool"), "%s", line);
  char field[512];
  models_column(
      "--topo dgx1-v100 --model bert-base --world-size 1 --strategy single "
      "--format csv",
      field, sizeof field);
  cr_assert(strstr(field, "layer_norm=scaled_H200"), "%s", field);
  cr_assert(!strstr(field, "batch_norm"), "%s", field);
}

/* B200-SXM-180GB has no boost_mhz in the GPU table: no kernel model can
 * be moved to it, and its batch norms and max-pool run at the memory
 * roofline, which the line says. */
Test(kernel_models, gpu_without_boost_clock_says_roofline) {
  char line[640];
  models_line(
      "--topo tests/data/dgx-b200.yaml --model resnet50 "
      "--world-size 1 --strategy single",
      line, sizeof line);
  const char *want = "kernel models: not applied (B200-SXM-180GB has no boost_mhz), the memory "
                     "roofline for batch norm (NCHW), max-pool";
  cr_assert(strncmp(line, want, strlen(want)) == 0, "%s", line);
  char field[512];
  models_column(
      "--topo tests/data/dgx-b200.yaml --model resnet50 --world-size 1 --strategy "
      "single --format csv",
      field, sizeof field);
  const char *want_field = "batch_norm_nchw=roofline;max_pool=roofline";
  cr_assert(strncmp(field, want_field, strlen(want_field)) == 0, "%s", field);
}

/* The words agree with the price: a max-pool kernel's time at the SMs'
 * rate is its cycles over SMs x clock, so halving the SMs of a made-up
 * GPU (ClockGPU: 4 SMs at 1000 MHz, no kernel overhead) doubles it; the
 * record says the model was charged, and a GPU without a clock records it
 * too while pricing the roofline (no SM cycles). */
static const char *pool_model = ds_test_pool_model;

Test(kernel_models, the_record_is_made_where_the_model_prices) {
  struct ds_test_compute f;
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 0, pool_model, DS_DTYPE_FP32,
                        DS_AMP_NONE);
  struct ds_compute_charged charged = {0};
  f.c.charged = &charged;
  ds_compute_fwd_ns(&f.c, &f.m->layers[1], 1000);
  cr_assert_eq(charged.kernel_models, 0u, "relu is at the roofline: no model");
  struct ds_pool_kernel k;
  ds_compute_max_pool_ns(&f.c, &f.m->layers[0], 1000, 0, &k);
  cr_assert_eq(charged.kernel_models, 1u << DS_KM_MAX_POOL);
  /* 122750 cycles (tests/test_max_pool.c) on 4 SMs at 1e9 Hz: 30687.5 ns */
  cr_assert_float_eq(k.sm_rate_ns, 30687.5, 1e-6);
  f.c.sms = 2;
  ds_compute_max_pool_ns(&f.c, &f.m->layers[0], 1000, 0, &k);
  cr_assert_float_eq(k.sm_rate_ns, 2 * 30687.5, 1e-6, "half the SMs, twice the time");
  struct ds_kernel_models km;
  ds_kernel_models_fill(&f.c, "ClockGPU", charged.kernel_models, &charged, &km);
  cr_assert_eq(ds_kernel_models_source(&km, DS_KM_MAX_POOL), DS_KM_SCALED);
  char line[256];
  ds_kernel_models_describe(&km, 0, line, sizeof line);
  cr_assert_str_eq(line, "kernel models: H200's SM cycles on ClockGPU's 2 SMs at 1000 MHz for "
                         "max-pool");
  ds_test_compute_free(&f);

  ds_test_compute_setup(&f, ds_test_clock_gpus, "NoClockGPU", 0.5, 0, pool_model, DS_DTYPE_FP32,
                        DS_AMP_NONE);
  charged = (struct ds_compute_charged){0};
  f.c.charged = &charged;
  ds_compute_max_pool_ns(&f.c, &f.m->layers[0], 1000, 0, &k);
  cr_assert_float_eq(k.cycles, 0, 0, "no clock: the roofline");
  cr_assert_eq(charged.kernel_models, 1u << DS_KM_MAX_POOL);
  ds_kernel_models_fill(&f.c, "NoClockGPU", charged.kernel_models, &charged, &km);
  cr_assert_eq(ds_kernel_models_source(&km, DS_KM_MAX_POOL), DS_KM_ROOFLINE);
  ds_test_compute_free(&f);
}

/* The sources by hand: the H200's name with its 132 SMs at 1980 MHz is
 * this GPU; the same name with other SMs (a topology's own table) is
 * moved; a calibration file's grouped convolutions apply as measured,
 * another GPU's are its SM cycles moved, one without the run's mode is the
 * conv class's rate; no model charged says none. The built-in grouped-convolution table was
 * measured on the same GPU as the other models. */
Test(kernel_models, sources_and_words) {
  cr_assert_eq(ds_gconv_builtin.sms, DS_KM_MEASURED_SMS);
  cr_assert_float_eq(ds_gconv_builtin.clock_hz / 1e6, DS_KM_MEASURED_CLOCK_MHZ, 1e-9);
  struct ds_kernel_models km = {.used = (1u << DS_KM_BN_NCHW) | (1u << DS_KM_GROUPED_CONV),
                                .knows_sms = 1, .sms = 132, .clock_mhz = 1980,
                                .gconv_sms = 132, .gconv_clock_mhz = 1980,
                                .gpu = DS_KM_MEASURED_GPU};
  char buf[512];
  ds_kernel_models_describe(&km, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "kernel models: measured on this GPU (H200) for batch norm (NCHW), "
                        "grouped convolutions (per shape)");
  models_field(&km, buf, sizeof buf);
  cr_assert_str_eq(buf, "batch_norm_nchw=this_gpu;grouped_conv=this_gpu");
  km.sms = 66;
  ds_kernel_models_describe(&km, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "kernel models: H200's SM cycles on H200-SXM-141GB's 66 SMs at 1980 MHz "
                        "for batch norm (NCHW), grouped convolutions (per shape)");
  km.sms = 132;
  km.gconv_on_target = 1;
  ds_kernel_models_describe(&km, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "kernel models: measured on this GPU (H200) for batch norm (NCHW); "
                        "measured on this machine (--calib) for grouped convolutions (per "
                        "shape)");
  models_field(&km, buf, sizeof buf);
  cr_assert_str_eq(buf, "batch_norm_nchw=this_gpu;grouped_conv=calib");
  /* --calib's table of another GPU (calib.h ds_calib_gconv_fit): its SM
   * cycles moved, not the H200's */
  km.gconv_on_target = 0;
  km.gconv_from_calib = 1;
  km.gconv_sms = 100;
  km.gconv_clock_mhz = 1000;
  ds_kernel_models_describe(&km, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "kernel models: measured on this GPU (H200) for batch norm (NCHW); "
                        "--calib's SM cycles (another GPU's: 100 SMs at 1000 MHz) on "
                        "H200-SXM-141GB's 132 SMs at 1980 MHz for grouped convolutions (per "
                        "shape)");
  models_field(&km, buf, sizeof buf);
  cr_assert_str_eq(buf, "batch_norm_nchw=this_gpu;grouped_conv=scaled_calib");
  /* --calib's table without the run's mode (tf32): the conv class's rate */
  km.gconv_on_target = 1;
  km.gconv_missing_mode = 1 + DS_GCONV_TF32;
  ds_kernel_models_describe(&km, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "kernel models: measured on this GPU (H200) for batch norm (NCHW); "
                        "--calib has no tf32 entries: the conv class's rate (roofline) for "
                        "grouped convolutions (per shape)");
  models_field(&km, buf, sizeof buf);
  cr_assert_str_eq(buf, "batch_norm_nchw=this_gpu;grouped_conv=roofline");
  km.used = 0;
  ds_kernel_models_describe(&km, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "kernel models: none");
  models_field(&km, buf, sizeof buf);
  cr_assert_str_eq(buf, "");
}

/* The shipped table's reason for the A100s' matmul_fp32 (topologies/gpus.yaml). */
/* the A100's conv_half is CUTLASS's README profiler run, which names no
 * GPU: a stand-in too (tools/gen_gpus.py PROXY) */
#define A100_CONV_STAND_IN \
  "a stand-in (GPU table: CUTLASS's README profiler run on a GPU it does not name)"
#define A100_FP32_STAND_IN \
  "a stand-in (GPU table: an A100 80GB PCIe's, the same GA100 SMs and FP32 peak)"

/* PowerSGD's GEMMs run at the gradients' fp32 matmul rate under --amp,
 * where the model's matmuls run half: the compute-rates line names it
 * apart. Without --amp the model's matmul_fp32 is the same rate, listed
 * once; without the hook nothing is added. */
Test(kernel_models, powersgd_gemms_rate_is_named) {
  struct ds_test_result r = ds_test_cli_ok("--topo 4gpu --comm-hook powersgd:4 --amp fp16");
  /* the A100's matmul_fp32 is an A100 80GB PCIe's SGEMM: a stand-in
   * (tools/gen_gpus.py PROXY), named apart from the measured rates */
  cr_assert(strstr(r.out, "compute rates: measured (GPU table) for matmul_half, memory; "
                          A100_CONV_STAND_IN " for conv_half; "
                          A100_FP32_STAND_IN " for matmul_fp32 (PowerSGD's GEMMs)\n"),
            "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 4gpu --comm-hook powersgd:4 --amp fp16 --format csv");
  char field[256];
  ds_test_csv_str(r.out, "compute_rates", 0, field, sizeof field);
  cr_assert_str_eq(field, "conv_half=gpu_table_proxy;matmul_half=gpu_table;memory=gpu_table;"
                          "matmul_fp32=gpu_table_proxy");
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 4gpu --amp fp16");
  cr_assert(!strstr(r.out, "PowerSGD"), "%s", r.out);
  cr_assert(!strstr(r.out, "matmul_fp32"), "no hook, no fp32 GEMM: %s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 4gpu --comm-hook powersgd:4");
  cr_assert(!strstr(r.out, "PowerSGD"), "fp32 training: the model's own matmul_fp32: %s", r.out);
  ds_test_release(&r);
  /* a sweep's line merges its rows: the hook's row adds its rate */
  r = ds_test_cli_ok("--topo 4gpu --comm-hook none,powersgd:4 --amp fp16");
  cr_assert(strstr(r.out, "memory; " A100_CONV_STAND_IN " for conv_half; "
                          A100_FP32_STAND_IN " for matmul_fp32 (PowerSGD's GEMMs)\n"),
            "%s", r.out);
  ds_test_release(&r);
}

/* A calibration file's grouped-convolution table (measured on the user's
 * V100 here: 80 SMs at 1530 MHz, one fp32 entry, the math ResNeXt runs in
 * on a V100) prices ResNeXt's grouped convolutions as measured: the line
 * says so, and the other models stay the H200's, moved. */
Test(kernel_models, calib_grouped_convolutions_are_this_machines) {
  char dir[] = "/tmp/ddpsim-kmodels-XXXXXX", calib[64], args[256];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(calib, sizeof calib, "%s/c.yaml", dir);
  FILE *f = fopen(calib, "w");
  cr_assert(f);
  fputs("schema_version: 1\ngrouped_conv:\n  sms: 80\n  boost_mhz: 1530\n  entries:\n"
        "    - {mode: fp32, group_width: 4, out_channels: 128, out_positions: 3136, stride: 1,"
        " batch: 32, fwd_us: 400, dgrad_us: 600, wgrad_us: 700}\n", f);
  fclose(f);
  snprintf(args, sizeof args, "--topo dgx1-v100 --model resnext101_32x4d --world-size 1 "
           "--strategy single --calib %s", calib);
  char line[640];
  models_line(args, line, sizeof line);
  cr_assert(strstr(line, "; measured on this machine (--calib) for grouped convolutions (per "
                         "shape"), "%s", line);
  cr_assert(strstr(line, "H200's SM cycles on V100-SXM2-16GB's 80 SMs at 1530 MHz for batch "
                         "norm (NCHW; "), "%s", line);
  cr_assert(strstr(line, "), max-pool ("), "%s", line);
  unlink(calib);
  rmdir(dir);
}

/* GPT-2 under bf16 autocast on an H100 (132 SMs at 1980 MHz, the H200's
 * own: the line says so) charges exactly the models its layers have
 * (models/gpt2.yaml): layer_norm (layer norm), legacy_ew (non-vectorised
 * elementwise), amp_cast_ew under autocast (mixed-dtype elementwise:
 * legacy_ew.c), cat_copy (torch.cat's generic kernel), amp_upcast_bytes
 * (half-to-fp32 casts), row_reductions (bias gradients) and the
 * position embeddings' 1024 ids a step (embedding [0, 768, 1024]: the
 * embedding backward's feature kernel, compute_layer.c; the word
 * embeddings' 8192 take the sort path); no batch norm, max-pool or grouped
 * convolution. */
Test(kernel_models, gpt2_bf16_names_exactly_its_models) {
  char line[640];
  models_line("--topo dgx-h100 --model gpt2 --amp bf16 --world-size 1 --strategy single", line,
              sizeof line);
  const char *want = "kernel models: H200's SM cycles on H100-SXM5-80GB's 132 SMs at 1980 MHz "
                     "(the same SMs and clock) for layer norm";
  cr_assert(strncmp(line, want, strlen(want)) == 0, "%s", line);
  const char *models[] = {"layer norm", "non-vectorised elementwise", "mixed-dtype elementwise",
                          "torch.cat's generic kernel", "half-to-fp32 casts",
                          "bias-gradient reductions", "embedding backward's feature kernel"};
  for (size_t i = 0; i < sizeof models / sizeof *models; i++)
    cr_assert(strstr(line, models[i]), "%s missing: %s", models[i], line);
  cr_assert(!strstr(line, "batch norm") && !strstr(line, "max-pool") && !strstr(line, "grouped"),
            "%s", line);
  char field[512];
  models_column(
      "--topo dgx-h100 --model gpt2 --amp bf16 --world-size 1 --strategy single "
      "--format csv",
      field, sizeof field);
  cr_assert_str_eq(field, "layer_norm=scaled_H200;legacy_elementwise=scaled_H200;"
                          "mixed_dtype_elementwise=scaled_H200;cat=scaled_H200;"
                          "upcast=scaled_H200;row_reduce=scaled_H200;"
                          "embedding_feature=scaled_H200");
}

/* ResNet-50 channels-last: under fp16 autocast cuDNN's persistent NHWC
 * batch norm runs (norm.c cudnn_nhwc, Normalization.cpp use_cudnn), not the
 * NCHW one; under bf16 PyTorch's own batch-norm kernels run (no cuDNN), at
 * the roofline, so no batch-norm model is named, max-pool still is. */
Test(kernel_models, resnet50_channels_last_batch_norm_per_dtype) {
  char line[640];
  models_line(
      "--topo dgx-h100 --model resnet50 --channels-last "
      "--amp fp16 --world-size 1 --strategy single",
      line, sizeof line);
  cr_assert(strstr(line, "for batch norm (channels-last"), "%s", line);
  cr_assert(!strstr(line, "NCHW"), "%s", line);
  cr_assert(strstr(line, "half-to-fp32 casts"), "%s", line);
  char field[512];
  models_column(
      "--topo dgx-h100 --model resnet50 --channels-last --amp fp16 --world-size 1 "
      "--strategy single --format csv",
      field, sizeof field);
  const char *nhwc = "batch_norm_nhwc=scaled_H200;max_pool=scaled_H200;";
  cr_assert(strncmp(field, nhwc, strlen(nhwc)) == 0, "%s", field);
  models_line(
      "--topo dgx-h100 --model resnet50 --channels-last --amp bf16 --world-size 1 "
      "--strategy single",
      line, sizeof line);
  cr_assert(!strstr(line, "batch norm"), "bf16: PyTorch's own kernels: %s", line);
  cr_assert(strstr(line, "for max-pool"), "%s", line);
}

/* A sweep's CSV rows each carry the field (each row's own models). */
Test(kernel_models, sweep_rows_each_carry_the_field) {
  struct ds_test_result r = ds_test_cli_ok(
      "--topo dgx1-v100 --model resnet50 --world-size 1 "
      "--strategy single --batch 16,32 --format csv");
  const char *want = "batch_norm_nchw=scaled_H200;max_pool=scaled_H200;";
  for (int row = 0; row < 2; row++) {
    char field[512];
    ds_test_csv_str(r.out, "kernel_models", row, field, sizeof field);
    cr_assert(strncmp(field, want, strlen(want)) == 0, "row %d: %s", row, field);
  }
  ds_test_release(&r);
}

/* A model's own time is counted where it beats its bytes at the roofline:
 * the max-pool above (30687.5 ns of SM cycles on ClockGPU's 4 SMs, against
 * 1000 x 896 B at 1000 GB/s x 0.5 = 1792 ns) binds; on a million SMs its
 * cycles take 0.12 ns and the bytes bind. The line then counts them. */
Test(kernel_models, bound_passes_are_counted) {
  struct ds_test_compute f;
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 0, pool_model, DS_DTYPE_FP32,
                        DS_AMP_NONE);
  struct ds_compute_charged charged = {0};
  f.c.charged = &charged;
  ds_compute_max_pool_ns(&f.c, &f.m->layers[0], 1000, 0, NULL);
  cr_assert_eq(charged.passes[DS_KM_MAX_POOL], 1);
  cr_assert_eq(charged.bound_passes[DS_KM_MAX_POOL], 1, "its SM cycles bind");
  f.c.sms = 1000000;
  ds_compute_max_pool_ns(&f.c, &f.m->layers[0], 1000, 0, NULL);
  cr_assert_eq(charged.passes[DS_KM_MAX_POOL], 2);
  cr_assert_eq(charged.bound_passes[DS_KM_MAX_POOL], 1, "the roofline binds");
  f.c.sms = 4;
  struct ds_kernel_models km;
  ds_kernel_models_fill(&f.c, "ClockGPU", charged.kernel_models, &charged, &km);
  char line[256];
  ds_kernel_models_describe(&km, 0, line, sizeof line);
  cr_assert_str_eq(line, "kernel models: H200's SM cycles on ClockGPU's 4 SMs at 1000 MHz for "
                         "max-pool (roofline bound 1 of 2 passes)");
  ds_test_compute_free(&f);
  /* by hand: a label with its own parentheses takes the clause inside */
  struct ds_kernel_models h = {.used = (1u << DS_KM_BN_NCHW) | (1u << DS_KM_LAYER_NORM),
                               .knows_sms = 1, .sms = 80, .clock_mhz = 1530, .gpu = "V"};
  h.passes[DS_KM_BN_NCHW] = 106, h.bound_passes[DS_KM_BN_NCHW] = 7;
  h.passes[DS_KM_LAYER_NORM] = 50;
  ds_kernel_models_describe(&h, 0, line, sizeof line);
  cr_assert_str_eq(line, "kernel models: H200's SM cycles on V's 80 SMs at 1530 MHz for batch "
                         "norm (NCHW; roofline bound 99 of 106 passes), layer norm (roofline "
                         "bound all 50 passes)");
}

/* On a GPU without boost_mhz, grouped convolutions fall back to the conv
 * class's rate (compute_roofline.c ds__compute_layer_kernel_ns: the longer
 * of their FLOPs at that rate and their bytes), the other models to the
 * memory roofline; a calibration file's grouped-convolution table was
 * measured on this machine at its own SMs and clock, so it applies there
 * all the same: a 400 ms forward for layer1's shape (3 such layers at
 * batch 32) makes the forward at least 1200 ms. */
Test(kernel_models, gpu_without_boost_clock_grouped_convolutions) {
  const char *base = "--topo tests/data/dgx-b200.yaml --model resnext50_32x4d --world-size 1 "
                     "--strategy single --batch 32";
  char line[640];
  models_line(base, line, sizeof line);
  cr_assert(strstr(line, "not applied (B200-SXM-180GB has no boost_mhz), the memory roofline for "
                         "batch norm (NCHW), max-pool, non-vectorised elementwise, bias-gradient "
                         "reductions; the conv class's rate (roofline) for grouped convolutions "
                         "(per shape)"), "%s", line);
  char dir[] = "/tmp/ddpsim-kmodels-XXXXXX", calib[64], args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(calib, sizeof calib, "%s/c.yaml", dir);
  FILE *f = fopen(calib, "w");
  cr_assert(f);
  fputs("schema_version: 1\ngrouped_conv:\n  sms: 148\n  boost_mhz: 1965\n  entries:\n", f);
  for (int m = 0; m < 2; m++)
    fprintf(f, "    - {mode: %s, group_width: 4, out_channels: 128, out_positions: 3136, "
               "stride: 1, batch: 32, fwd_us: 400000, dgrad_us: 600, wgrad_us: 700}\n",
            m ? "fp32" : "tf32");
  fclose(f);
  snprintf(args, sizeof args, "%s --calib %s --format csv", base, calib);
  struct ds_test_result r = ds_test_cli_ok(args);
  char field[512];
  ds_test_csv_str(r.out, "kernel_models", 0, field, sizeof field);
  cr_assert(strstr(field, "grouped_conv=calib"), "%s", field);
  cr_assert(strstr(field, "batch_norm_nchw=roofline"), "%s", field);
  cr_assert_geq(ds_test_csv_num(r.out, "fwd_ms", 0), 1200.0, "%s", r.out);
  cr_assert(strstr(r.err, "B200-SXM-180GB has no boost_mhz: their times apply as measured"),
            "%s", r.err);
  ds_test_release(&r);
  unlink(calib);
  rmdir(dir);
}
