/*
 * The summary's "kernel models" line across a run's rows (sim/cli/report_text.c
 * print_rates, kernel_models.h): the models charged are the rows' union,
 * but a census of passes is one row's, the model's passes at one batch
 * (README.md, "kernel models"). Adding rows' censuses said "52 of 148
 * passes" for a 4-row bucket sweep of BERT whose every row says "13 of 37".
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/kernel_models.h"
#include "tests/support.h"

/* By hand: merging ORs the models and keeps dst's census; the clause names
 * the census's batch when asked; a short buffer is cut, terminated, and the
 * return says the whole length. */
Test(kernel_models_line, merge_keeps_one_census) {
  struct ds_kernel_models a = {.used = 1u << DS_KM_LAYER_NORM, .knows_sms = 1, .sms = 80,
                               .clock_mhz = 1530, .gpu = "V"};
  a.passes[DS_KM_LAYER_NORM] = 37, a.bound_passes[DS_KM_LAYER_NORM] = 24;
  struct ds_kernel_models b = a;
  b.used |= 1u << DS_KM_MAX_POOL;
  b.passes[DS_KM_MAX_POOL] = 2;
  ds_kernel_models_merge(&a, &b);
  cr_assert_eq(a.used, (1u << DS_KM_LAYER_NORM) | (1u << DS_KM_MAX_POOL));
  cr_assert_eq(a.passes[DS_KM_LAYER_NORM], 37, "one row's census, not the sum 74");
  cr_assert_eq(a.bound_passes[DS_KM_LAYER_NORM], 24);
  cr_assert_eq(a.passes[DS_KM_MAX_POOL], 0, "the first row's census only");
  char line[256];
  size_t len = ds_kernel_models_describe(&a, 16, line, sizeof line);
  static const char want[] = "kernel models: H200's SM cycles on V's 80 SMs at 1530 MHz for "
                             "layer norm (roofline bound 13 of 37 passes at batch 16), max-pool";
  cr_assert_str_eq(line, want);
  cr_assert_eq(len, strlen(want));
  char small[20];
  cr_assert_eq(ds_kernel_models_describe(&a, 16, small, sizeof small), strlen(want));
  cr_assert_eq(strlen(small), sizeof small - 1, "cut at the buffer, terminated");
}

static char *kernel_line(const char *args) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "ddpsim %s: %s", args, r.err);
  char *p = strstr(r.out, "\nkernel models:");
  cr_assert(p, "%s", r.out);
  p++;
  char *line = strndup(p, strcspn(p, "\n"));
  ds_test_release(&r);
  return line;
}

/* A sweep of bucket sizes prints the single row's census; a sweep of
 * batches prints its first row's, saying at which batch. */
Test(kernel_models_line, a_sweep_prints_one_rows_census) {
  char *one = kernel_line("--topo dgx-a100 --model bert-base --batch 32");
  char *sweep = kernel_line("--topo dgx-a100 --model bert-base --batch 32 --bucket-mb 1,5,25,100");
  cr_assert(strstr(one, " passes)"), "BERT's census has a roofline clause: %s", one);
  cr_assert_str_eq(sweep, one);
  char *b16 = kernel_line("--topo dgx-a100 --model bert-base --batch 16");
  char *batches = kernel_line("--topo dgx-a100 --model bert-base --batch 16,32");
  char *want = malloc(strlen(b16) + 32);
  cr_assert(want);
  const char *clause = strstr(b16, " passes)");
  cr_assert(clause, "%s", b16);
  snprintf(want, strlen(b16) + 32, "%.*s passes at batch 16)%s", (int)(clause - b16), b16, clause + 8);
  cr_assert_str_eq(batches, want);
  free(one), free(sweep), free(b16), free(batches), free(want);
}
