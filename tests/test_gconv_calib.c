/*
 * Tests for a calibration file's grouped_conv section (traces/calib_file.h,
 * loaded by sim/train/calib.c): grouped convolutions' kernel times measured
 * on the user's GPU replace the built-in H200 table. The section loads and
 * writes back; bad modes, times and missing keys are located errors; the
 * lookup uses the file's table with no SMs x clock transfer (a one-entry
 * table worked by hand); without the section the built-in table stays;
 * ddpsim --calib plugs the table in end to end.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "traces/calib_file.h"
#include "sim/train/calib.h"
#include "sim/train/compute.h"
#include "sim/train/grouped_conv.h"
#include "tests/support.h"

/* One entry: ResNeXt-50 layer1's 3x3 shape in TF32 at batch 32, forward
 * 100 us, input gradient 200, weight gradient 300, measured on a GPU of
 * 100 SMs at 1000 MHz (round numbers, not a real GPU). */
#define ONE_ENTRY                                                                       \
  "schema_version: 1\n"                                                                 \
  "grouped_conv:\n"                                                                     \
  "  sms: 100\n"                                                                        \
  "  boost_mhz: 1000\n"                                                                 \
  "  entries:\n"                                                                        \
  "    - {mode: tf32, group_width: 4, out_channels: 128, out_positions: 3136, stride: 1," \
  " batch: 32, fwd_us: 100, dgrad_us: 200, wgrad_us: 300}\n"

static struct ds_calib *load_ok(const char *text) {
  struct ds_calib *c = malloc(sizeof *c);
  struct ds_err err = {0};
  cr_assert_not_null(c);
  cr_assert_eq(ds_test_load_calib_text(text, c, &err, NULL), DS_OK, "%s", err.msg);
  return c;
}

Test(gconv_calib, the_section_loads) {
  struct ds_calib *c = load_ok(
      ONE_ENTRY "    - {mode: half_nhwc, group_width: 8, out_channels: 256, out_positions: 784,"
                " stride: 2, batch: 64, fwd_us: 31.6, dgrad_us: 78.3, wgrad_us: 38.3}\n");
  cr_assert_eq(c->n_gconv, 2);
  cr_assert_eq(c->gconv_sms, 100);
  cr_assert_float_eq(c->gconv_clock_hz, 1e9, 1e-3);
  const struct ds_gconv_entry *e = &c->gconv[1];
  cr_assert_eq(e->mode, DS_GCONV_HALF_NHWC);
  cr_assert_eq(e->group_width, 8);
  cr_assert_eq(e->out_channels, 256);
  cr_assert_eq(e->out_positions, 784);
  cr_assert_eq(e->stride, 2);
  cr_assert_eq(e->batch, 64);
  cr_assert_eq(e->us[DS_CONV_FWD], 31.6);
  cr_assert_eq(e->us[DS_CONV_DGRAD], 78.3);
  cr_assert_eq(e->us[DS_CONV_WGRAD], 38.3);
  cr_assert_eq(c->gconv[0].mode, DS_GCONV_TF32);
  struct ds_gconv_table t;
  ds_calib_gconv_table(c, &t);
  cr_assert_eq(t.entries, c->gconv);
  cr_assert_eq(t.n, 2);
  cr_assert_eq(t.sms, 100);
  cr_assert(t.on_target, "a calibration describes the simulated GPU");
  free(c);
}

/* text must fail to load with a message starting "PATH" + where and
 * containing what; nothing of the section is kept. */
static void expect_bad(const char *text, const char *where, const char *what) {
  struct ds_calib *c = malloc(sizeof *c);
  struct ds_err err = {0};
  char path[64], want[160];
  cr_assert_not_null(c);
  ds_status st = ds_test_load_calib_text(text, c, &err, path);
  cr_assert_eq(st, DS_EINPUT, "expected DS_EINPUT for:\n%s\ngot %s: %s", text,
               ds_status_name(st), err.msg);
  snprintf(want, sizeof want, "%s%s", path, where);
  cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "message: %s\nwant prefix: %s",
            err.msg, want);
  cr_assert(strstr(err.msg, what) != NULL, "message: %s\nwant: %s", err.msg, what);
  cr_assert_eq(c->n_gconv, 0);
  free(c);
}

/* The second entry's line is line 7; its values' columns follow. */
#define SECOND(MODE, FWD, DGRAD)                                                        \
  ONE_ENTRY "    - {mode: " MODE ", group_width: 8, out_channels: 256, out_positions: 784," \
            " stride: 2, batch: 32, fwd_us: " FWD ", dgrad_us: " DGRAD ", wgrad_us: 1}\n"

Test(gconv_calib, a_bad_mode_is_located) {
  expect_bad(SECOND("bf16", "1", "1"), ":7:14: key 'mode'",
             "expected fp32, tf32, half or half_nhwc, got \"bf16\"");
}

Test(gconv_calib, a_negative_time_is_located) {
  /* "dgrad_us: -5" : the value starts at column 123 */
  expect_bad(SECOND("fp32", "1", "-5"), ":7:", "key 'dgrad_us': expected a time in microseconds > 0, got -5");
  expect_bad(SECOND("fp32", "0", "1"), ":7:", "key 'fwd_us': expected a time in microseconds > 0");
  expect_bad(SECOND("fp32", "fast", "1"), ":7:", "key 'fwd_us'");
}

Test(gconv_calib, a_missing_key_is_located) {
  expect_bad("schema_version: 1\ngrouped_conv:\n  sms: 100\n  boost_mhz: 1000\n  entries:\n"
             "    - {mode: tf32, group_width: 4, out_channels: 128, out_positions: 3136,"
             " stride: 1, batch: 32, fwd_us: 100, dgrad_us: 200}\n",
             ":6:", "missing key 'wgrad_us'");
  /* a section's missing key: located at the section's first key */
  expect_bad("schema_version: 1\ngrouped_conv:\n  sms: 100\n  entries: []\n", ":3:3:",
             "missing key 'boost_mhz'");
  expect_bad("schema_version: 1\ngrouped_conv:\n  sms: 100\n  boost_mhz: 1000\n", ":3:3:",
             "missing key 'entries'");
}

Test(gconv_calib, other_bad_sections_are_located) {
  expect_bad(SECOND("tf32", "1", "1") "    - {mode: tf32, group_width: 8, out_channels: 256,"
             " out_positions: 784, stride: 2, batch: 32, fwd_us: 2, dgrad_us: 2, wgrad_us: 2}\n",
             ":8:", "the same mode, shape and batch as entries[1]");
  expect_bad("schema_version: 1\ngrouped_conv:\n  sms: 0\n  boost_mhz: 1000\n  entries: []\n",
             ":3:8: key 'sms'", "expected an integer from 1");
  expect_bad("schema_version: 1\ngrouped_conv:\n  sms: 100\n  boost_mhz: 1000\n  entries: []\n",
             ":5:", "expected 1 to 1024 entries, got 0");
  expect_bad(ONE_ENTRY "    - {mode: tf32, group_width: 4, out_channels: 128, out_positions: 3136,"
                       " stride: 1, batch: 64, fwd_us: 1, dgrad_us: 1, wgrad_us: 1, groups: 32}\n",
             ":7:", "unknown key 'groups'");
  expect_bad(ONE_ENTRY "  clock: 5\n", ":", "unknown key 'clock'");
}

Test(gconv_calib, more_than_1024_entries_are_refused) {
  size_t cap = 200 * 1100;
  char *text = malloc(cap);
  cr_assert_not_null(text);
  int len = snprintf(text, cap, "schema_version: 1\ngrouped_conv:\n  sms: 1\n  boost_mhz: 1\n"
                                "  entries:\n");
  for (int i = 1; i <= 1025; i++)
    len += snprintf(text + len, cap - (size_t)len,
                    "    - {mode: fp32, group_width: 4, out_channels: 128, out_positions: 3136,"
                    " stride: 1, batch: %d, fwd_us: 1, dgrad_us: 1, wgrad_us: 1}\n", i);
  expect_bad(text, ":6:5: key 'entries'", "expected 1 to 1024 entries, got 1025");
  /* 1024 is fine */
  char *last = strrchr(text, '-');
  *last = '\0';
  struct ds_calib *c = load_ok(text);
  cr_assert_eq(c->n_gconv, 1024);
  free(c);
  free(text);
}

/* The one-entry table, by hand. Its own GPU (100 SMs at 1 GHz) is the
 * target whatever SMs and clock the caller passes (on_target): layer1's
 * shape at batch 32 gives the measured 100/200/300 us back; batch 64 holds
 * the cost per output (2x); a shape of 8 channels per group, 256 outputs
 * over 784 positions has 256*784 / (128*3136) = 1/2 the outputs (0.5x).
 * The same table not on the target moves by SMs x clock: 50 SMs at 500
 * MHz is 4x the time; on the target it needs no SMs or clock from the GPU
 * table (one without boost_mhz). */
Test(gconv_calib, the_lookup_uses_the_calibration_table) {
  struct ds_calib *c = load_ok(ONE_ENTRY);
  struct ds_gconv_table t;
  ds_calib_gconv_table(c, &t);
  const struct ds_gconv_shape layer1 = {4, 128, 3136, 1}, other = {8, 256, 784, 2};
  cr_assert_float_eq(ds_gconv_ns(&t, DS_GCONV_TF32, DS_CONV_FWD, &layer1, 32, 132, 1980e6),
                     100000, 1e-6);
  cr_assert_float_eq(ds_gconv_ns(&t, DS_GCONV_TF32, DS_CONV_DGRAD, &layer1, 32, 80, 1530e6),
                     200000, 1e-6);
  cr_assert_float_eq(ds_gconv_ns(&t, DS_GCONV_TF32, DS_CONV_WGRAD, &layer1, 64, 132, 1980e6),
                     600000, 1e-6);
  cr_assert_float_eq(ds_gconv_ns(&t, DS_GCONV_TF32, DS_CONV_FWD, &other, 32, 132, 1980e6),
                     50000, 1e-6);
  cr_assert_eq(ds_gconv_ns(&t, DS_GCONV_HALF, DS_CONV_FWD, &layer1, 32, 132, 1980e6), 0,
               "a mode the file lacks: no measured time (the roofline applies)");
  /* the file's own SMs and clock price it: a GPU table without them (no
   * boost_mhz) still gets the measured times */
  cr_assert_float_eq(ds_gconv_ns(&t, DS_GCONV_TF32, DS_CONV_FWD, &layer1, 32, 0, 0), 100000,
                     1e-6, "the target's SMs and clock unknown: the file's own");
  t.on_target = 0;
  cr_assert_eq(ds_gconv_ns(&t, DS_GCONV_TF32, DS_CONV_FWD, &layer1, 32, 0, 1980e6), 0,
               "not on the target, a GPU without its SMs: no measured time");
  cr_assert_float_eq(ds_gconv_ns(&t, DS_GCONV_TF32, DS_CONV_FWD, &layer1, 32, 50, 500e6),
                     400000, 1e-6);
  free(c);
}

Test(gconv_calib, without_the_section_the_builtin_table_stays) {
  struct ds_calib *c = load_ok("schema_version: 1\ncompute:\n  flops_efficiency: 0.5\n");
  cr_assert_eq(c->n_gconv, 0);
  free(c);
  /* the compute model starts on the built-in table, whose first entry is
   * H200's TF32 layer1 at batch 32: 151.4 us forward on 132 SMs at 1980
   * MHz (bench/results/gpu-2026-11-26b-h200/kernels.csv) */
  cr_assert_eq(ds_gconv_builtin.sms, 132);
  cr_assert_eq(ds_gconv_builtin.on_target, 0);
  cr_assert_gt(ds_gconv_builtin.n, 100);
  const struct ds_gconv_shape layer1 = {4, 128, 3136, 1};
  cr_assert_float_eq(ds_gconv_ns(&ds_gconv_builtin, DS_GCONV_TF32, DS_CONV_FWD, &layer1, 32,
                                 132, 1980e6),
                     151400, 1e-6);
}

Test(gconv_calib, the_section_writes_back_as_read) {
  struct ds_calib *c = load_ok(SECOND("half", "1.25", "7"));
  char *buf = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&buf, &len);
  cr_assert_not_null(fp);
  cr_assert_eq(ds_calib_write(fp, c, NULL), 0);
  fclose(fp);
  cr_assert_str_eq(buf, SECOND("half", "1.25", "7"));
  free(buf);
  free(c);
}

/* ddpsim --calib end to end on a shipped H200 machine: the H200 table's
 * own TF32 entry for layer1 swapped for one 10x slower makes ResNeXt-50's
 * iteration slower; a file without the section changes nothing. */
static double iter_ms(const char *calib_text) {
  char path[64] = "/tmp/ddpsim-gccli-XXXXXX", args[256];
  if (calib_text) ds_test_write_temp(path, calib_text);
  snprintf(args, sizeof args,
           "--topo validation/topologies/nd-h200-v5.yaml --model resnext50_32x4d "
           "--world-size 1 --strategy single --format csv%s%s",
           calib_text ? " --calib " : "", calib_text ? path : "");
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(), args);
  if (calib_text) unlink(path);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  double ms = ds_test_csv_num(r.out, "iter_ms", 0);
  ds_test_release(&r);
  return ms;
}

Test(gconv_calib, ddpsim_uses_the_files_table) {
  double builtin = iter_ms(NULL);
  cr_assert_eq(iter_ms("schema_version: 1\ncompute: {}\n"), builtin);
  /* layer1's three 3x3s at 10x their H200 times (far above their
   * rooflines) add 9 x (151.4 + 141.7 + 253.2) us each; the other grouped
   * layers take this one entry too (slower per output than theirs), so
   * that is a lower bound */
  double slow = iter_ms("schema_version: 1\ngrouped_conv:\n  sms: 132\n  boost_mhz: 1980\n"
                        "  entries:\n    - {mode: tf32, group_width: 4, out_channels: 128,"
                        " out_positions: 3136, stride: 1, batch: 32, fwd_us: 1514,"
                        " dgrad_us: 1417, wgrad_us: 2532}\n");
  cr_assert_gt(slow, builtin + 3 * 9 * (151.4 + 141.7 + 253.2) / 1e3 - 1e-6,
               "builtin %g ms, slow %g ms", builtin, slow);
}
