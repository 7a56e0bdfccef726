/*
 * validation/run.py's u mark (unmeasured()) against ddpsim's own
 * (sim/train/rates.c ds_rates_unmeasured): for every compute_rates source
 * ddpsim can name, a row whose one rate has that source is u in run.py
 * exactly when ddpsim counts it unmeasured. A review found run.py's
 * UNMEASURED_KINDS lacked calib_other_gpu and calib_flops_other_gpu, which
 * ddpsim counts; this catches the next source added to one and not the
 * other.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/textout.h"
#include "sim/train/rates.h"
#include "tests/support.h"

Test(validation_unmeasured, run_py_marks_u_exactly_the_sources_ddpsim_counts_unmeasured) {
  char cases[4096] = "";
  size_t used = 0;
  int n = 0;
  /* DS_RATE_CALIB_FLOPS: the last source (topo.h) */
  for (int source = DS_RATE_TYPICAL; source <= DS_RATE_CALIB_FLOPS; source++) {
    int calib = source == DS_RATE_CALIB || source == DS_RATE_CALIB_FLOPS;
    /* calib_fit is a calibration file's rates' alone (rates.h) */
    for (int fit = DS_CALIB_GPU_SAME; fit <= (calib ? DS_CALIB_GPU_OTHER : DS_CALIB_GPU_SAME);
         fit++) {
      struct ds_rates r = {.n = 1};
      r.r[0].cls = DS_LAYER_MATMUL;
      r.r[0].source = source;
      r.r[0].calib_fit = fit;
      ds_textout_append(cases, sizeof cases, &used, "    ('%s', %s),\n",
                        ds_rate_used_source_name(&r.r[0]),
                        ds_rates_unmeasured(&r) ? "True" : "False");
      n++;
    }
  }
  cr_assert_lt(used, sizeof cases);
  cr_assert_eq(n, 11); /* 7 sources, a calibration file's 2 at each of 3 fits */
  char driver[8192];
  snprintf(driver, sizeof driver,
           "import sys\n"
           "sys.path.insert(0, 'validation')\n"
           "import run\n"
           "row = {'metric': 'iter_ms'}\n"
           "for name, want in [\n%s]:\n"
           "    out = {'iter_ms': 1.0, 'compute_rates': 'matmul_fp32=' + name}\n"
           "    got = run.unmeasured(out, row)\n"
           "    print('%%s %%s %%s' %% (name, want, got))\n"
           "    if got != want or bool(run.unmeasured_kinds(out)) != want:\n"
           "        print('MISMATCH', name)\n",
           cases);
  char path[] = "/tmp/ddpsim-unmeasured-XXXXXX";
  ds_test_write_temp(path, driver);
  struct ds_test_result r = ds_test_run("", "python3", path);
  unlink(path);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert_null(strstr(r.out, "MISMATCH"), "%s", r.out);
  /* the two a review found missing are among those checked, and u */
  cr_assert(strstr(r.out, "calib_other_gpu True True\n"), "%s", r.out);
  cr_assert(strstr(r.out, "calib_flops_other_gpu True True\n"), "%s", r.out);
  cr_assert(strstr(r.out, "gpu_table False False\n"), "%s", r.out);
  ds_test_release(&r);
}
