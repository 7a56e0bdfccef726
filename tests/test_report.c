/*
 * The summary's CSV writer (sim/cli/report_csv_json.c) on hand-made rows: the
 * compute_rates and kernel_models fields come out whole however long they
 * are (they were cut at a fixed buffer's 255 and 511 bytes before).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli/options.h"
#include "sim/cli/report.h"
#include "tests/support.h"

/* A row whose strings are set (the CSV prints each) and nothing else. */
static struct ds_summary plain_row(void) {
  return (struct ds_summary){.strategy = "ddp", .model = "m", .topology = "t", .gpu = "g",
                             .dtype = "fp32", .net_model = "maxmin", .coll_model = "flow",
                             .coll_algo = "ring", .ddp_options = "none", .amp = "none",
                             .optimizer = "sgd"};
}

/* The row's CSV text (owned). */
static char *csv_of(const struct ds_summary *row) {
  return ds_test_report_printed(DS_FORMAT_CSV, row, 1);
}

/* Seven stand-ins (DS_RATES_MAX) of the long names ds_rate_name forms
 * (a run charges fewer), 272 bytes of field, and all ten kernel models,
 * each a roofline (no SM count known: kernel_models.c
 * ds_kernel_models_source), 219 bytes: both end the row whole, in the
 * order charged. */
Test(report, csv_rates_and_kernel_models_are_written_whole) {
  struct ds_summary row = plain_row();
  static const struct {
    int32_t cls, math;
  } rates[DS_RATES_MAX] = {
      {DS_LAYER_ATTENTION, DS_GPU_MATH_HALF}, {DS_LAYER_ATTENTION, DS_GPU_MATH_TF32},
      {DS_LAYER_ATTENTION, DS_GPU_MATH_FP32}, {DS_LAYER_MATMUL, DS_GPU_MATH_HALF},
      {DS_LAYER_MATMUL, DS_GPU_MATH_TF32},    {DS_LAYER_MATMUL, DS_GPU_MATH_FP32},
      {DS_LAYER_CONV, DS_GPU_MATH_HALF}};
  for (int i = 0; i < DS_RATES_MAX; i++)
    row.rates.r[i] = (struct ds_rate_used){.cls = rates[i].cls, .math = rates[i].math,
                                           .unaligned = 1, .source = DS_RATE_GPU_PROXY};
  row.rates.n = DS_RATES_MAX;
  row.kernel_models.used = (1u << DS_KM_COUNT) - 1;
  const char *rates_field =
      "attention_unaligned_half=gpu_table_proxy;attention_unaligned_tf32=gpu_table_proxy;"
      "attention_unaligned_fp32=gpu_table_proxy;matmul_unaligned_half=gpu_table_proxy;"
      "matmul_unaligned_tf32=gpu_table_proxy;matmul_unaligned_fp32=gpu_table_proxy;"
      "conv_unaligned_half=gpu_table_proxy";
  const char *models_field =
      "batch_norm_nchw=roofline;batch_norm_nhwc=roofline;layer_norm=roofline;"
      "max_pool=roofline;grouped_conv=roofline;legacy_elementwise=roofline;"
      "mixed_dtype_elementwise=roofline;cat=roofline;upcast=roofline;row_reduce=roofline;"
      "embedding_feature=roofline";
  cr_assert_gt(strlen(rates_field), 255u, "longer than the old buffer held");
  char expect_end[1024];
  snprintf(expect_end, sizeof expect_end, ",%s,%s\n", rates_field, models_field);
  char *csv = csv_of(&row);
  size_t len = strlen(csv), end = strlen(expect_end);
  cr_assert_geq(len, end);
  cr_assert_str_eq(csv + len - end, expect_end);
  free(csv);
}

/* The text header of a sweep holds for every block: where the rows differ
 * in batch, collective model (--coll-model auto past 64 ranks) or
 * iteration 0, it gives them over the rows. It named the first row's batch
 * and iteration 0, and "collectives per flow" above a 512-rank block that
 * ran aggregated. */
Test(report, sweep_header_covers_every_row) {
  struct ds_summary rows[3];
  for (int i = 0; i < 3; i++) {
    rows[i] = plain_row();
    snprintf(rows[i].comm_hook, sizeof rows[i].comm_hook, "none");
    rows[i].nccl_extra = "none";
    rows[i].iters = 2;
    rows[i].reported_iter = 1;
  }
  rows[0].world_size = 8, rows[0].batch_per_gpu = 16, rows[0].first_iter_ms = 30;
  rows[1].world_size = 64, rows[1].batch_per_gpu = 16, rows[1].first_iter_ms = 31.5;
  rows[2].world_size = 512, rows[2].batch_per_gpu = 32, rows[2].first_iter_ms = 33.25;
  rows[2].coll_model = "aggregate";
  char *text = ds_test_report_printed(DS_FORMAT_TEXT, rows, 3);
  cr_assert(strstr(text, "ddp: m on t (8 to 512 x g), batch 16 to 32/GPU, fp32, network maxmin, "
                         "collectives per flow at 8 to 64 ranks, rings and trees aggregated at "
                         "512\n"),
            "%s", text);
  cr_assert(strstr(text, "(iteration 0: 30.000 to 33.250 ms by configuration)\n"), "%s", text);
  free(text);
}
