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
  expect_bad(SECOND("bf16", "1", "1"), ":7:14: key 'grouped_conv.entries[1].mode'",
             "expected fp32, tf32, half or half_nhwc, got \"bf16\"");
}

Test(gconv_calib, a_negative_time_is_located) {
  /* "dgrad_us: -5" : the value starts at column 123 */
  expect_bad(SECOND("fp32", "1", "-5"), ":7:", "key 'grouped_conv.entries[1].dgrad_us': expected "
                                               "a time in microseconds from 0.001 (1 ns) to "
                                               "1e12, got -5");
  expect_bad(SECOND("fp32", "0", "1"), ":7:", "key 'grouped_conv.entries[1].fwd_us': expected a "
                                              "time in microseconds from 0.001");
  /* below the clock's tick: it rounded to nothing */
  expect_bad(SECOND("fp32", "1e-300", "1"), ":7:", "key 'grouped_conv.entries[1].fwd_us': "
                                                   "expected a time in microseconds from 0.001 "
                                                   "(1 ns) to 1e12, got 1e-300");
  expect_bad(SECOND("fp32", "fast", "1"), ":7:", "key 'grouped_conv.entries[1].fwd_us'");
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
             ":3:8: key 'grouped_conv.sms'", "expected an integer from 1");
  expect_bad("schema_version: 1\ngrouped_conv:\n  sms: 100\n  boost_mhz: 1000\n  entries: []\n",
             ":5:", "expected 1 to 1024 entries, got 0");
  /* the GPU table's bound: 1e-9 MHz made every scaled time 1e-12 of itself */
  expect_bad("schema_version: 1\ngrouped_conv:\n  sms: 100\n  boost_mhz: 1e-9\n  entries: []\n",
             ":4:14: key 'grouped_conv.boost_mhz'",
             "expected a clock in MHz from 1 to 100000, got 1e-09");
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
  expect_bad(text, ":6:5: key 'grouped_conv.entries'", "expected 1 to 1024 entries, got 1025");
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
  struct ds_test_result r = ds_test_cli(args);
  if (calib_text) unlink(path);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  double ms = ds_test_csv_num(r.out, "iter_ms", 0);
  ds_test_release(&r);
  return ms;
}

Test(gconv_calib, ddpsim_uses_the_files_table) {
  double builtin = iter_ms(NULL);
  /* (a file must set a key: nccl.launch, which one rank's single run never uses) */
  cr_assert_eq(iter_ms("schema_version: 1\nnccl: {launch: 5us}\n"), builtin);
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

/* The section's optional gpu: the measured device's name, read and written
 * back; an empty one is refused, located. */
#define NAMED(GPU)                                                                       \
  "schema_version: 1\n"                                                                 \
  "grouped_conv:\n"                                                                     \
  "  gpu: \"" GPU "\"\n"                                                                \
  "  sms: 100\n"                                                                        \
  "  boost_mhz: 1000\n"                                                                 \
  "  entries:\n"                                                                        \
  "    - {mode: tf32, group_width: 4, out_channels: 128, out_positions: 3136, stride: 1," \
  " batch: 32, fwd_us: 100, dgrad_us: 200, wgrad_us: 300}\n"

Test(gconv_calib, the_gpu_name_loads_and_writes_back) {
  struct ds_calib *c = load_ok(NAMED("NVIDIA H200"));
  cr_assert_str_eq(c->gconv_gpu, "NVIDIA H200");
  char *buf = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&buf, &len);
  cr_assert_not_null(fp);
  cr_assert_eq(ds_calib_write(fp, c, NULL), 0);
  fclose(fp);
  cr_assert_str_eq(buf, NAMED("NVIDIA H200"));
  free(buf);
  free(c);
  c = load_ok(ONE_ENTRY);
  cr_assert_str_eq(c->gconv_gpu, "", "an older file names no GPU");
  free(c);
  expect_bad(NAMED(""), ":3:8: key 'grouped_conv.gpu'", "expected the GPU's name");
}

/* Which GPU the table fits (ds_calib_gconv_fit), by hand: the file's gpu
 * against the topology GPU's table name and smi_names, any case; a file
 * without gpu by its SM count; another GPU's table moves by SMs x clock
 * where the GPU table has boost_mhz, and is refused where it has not. */
Test(gconv_calib, the_table_fits_only_the_gpu_it_names) {
  struct ds_gpu_spec h200 = {.name = "H200-SXM-141GB", .sms = 132, .boost_mhz = 1980};
  struct ds_gpu_spec b200 = {.name = "B200-SXM-180GB", .sms = 148};
  struct ds_gpu_info info = {.spec = h200, .n_smi_names = 1, .smi_names = {"NVIDIA H200"}};
  struct ds_gpu_table table = {&info, 1};
  struct ds_calib *c = load_ok(NAMED("nvidia h200"));
  cr_assert_eq(ds_calib_gconv_fit(c, &h200, &table), DS_GCONV_FIT_THIS_GPU, "an smi_name");
  cr_assert_eq(ds_calib_gconv_fit(c, &h200, NULL), DS_GCONV_FIT_SCALED,
               "no smi_names known: another name, moved by SMs x clock");
  cr_assert_eq(ds_calib_gconv_fit(c, &b200, NULL), DS_GCONV_FIT_REFUSED,
               "another GPU without boost_mhz: not applied");
  free(c);
  c = load_ok(NAMED("h200"));
  cr_assert_eq(ds_calib_gconv_fit(c, &h200, &table), DS_GCONV_FIT_THIS_GPU,
               "the smi_name without its vendor word");
  free(c);
  c = load_ok(NAMED("B200-SXM-180GB"));
  cr_assert_eq(ds_calib_gconv_fit(c, &b200, NULL), DS_GCONV_FIT_THIS_GPU, "the table's name");
  free(c);
  c = load_ok(ONE_ENTRY); /* 100 SMs, no gpu */
  cr_assert_eq(ds_calib_gconv_fit(c, &b200, NULL), DS_GCONV_FIT_REFUSED, "148 SMs, not 100");
  cr_assert_eq(ds_calib_gconv_fit(c, &h200, NULL), DS_GCONV_FIT_SCALED, "132 SMs, not 100");
  b200.sms = 100;
  cr_assert_eq(ds_calib_gconv_fit(c, &b200, NULL), DS_GCONV_FIT_THIS_GPU, "the same SMs");
  free(c);
}

/* ResNeXt-50 at batch 32 alone on topo's GPU, with calib_text as --calib
 * (NULL: none), in format; the run must succeed. */
static struct ds_test_result calib_run(const char *topo, const char *calib_text,
                                       const char *format) {
  char path[64] = "/tmp/ddpsim-gcrun-XXXXXX", args[384];
  if (calib_text) ds_test_write_temp(path, calib_text);
  snprintf(args, sizeof args,
           "--topo %s --model resnext50_32x4d --world-size 1 "
           "--strategy single --batch 32 --format %s%s%s", topo, format,
           calib_text ? " --calib " : "", calib_text ? path : "");
  struct ds_test_result r = ds_test_cli(args);
  if (calib_text) unlink(path);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  return r;
}

/* ddpsim --calib on tests/data/dgx-b200.yaml (a B200 of 148 SMs whose GPU
 * table entry has no boost_mhz): a table of ResNeXt-50's layer1 at 10x the
 * H200's times, measured on 132 SMs, is another GPU's whether it names it
 * (NVIDIA H200) or not (an older file: 132 SMs, not 148), so it is not
 * applied: the iteration is the one without it, and a note says why. The
 * same table naming the B200 applies as measured (slower). */
static struct ds_test_result b200_run(const char *calib_text, const char *format) {
  return calib_run("tests/data/dgx-b200.yaml", calib_text, format);
}

#define SLOW_LAYER1(GPU_LINE, MODE)                                                    \
  "schema_version: 1\ngrouped_conv:\n" GPU_LINE "  sms: 132\n  boost_mhz: 1980\n"       \
  "  entries:\n    - {mode: " MODE ", group_width: 4, out_channels: 128,"               \
  " out_positions: 3136, stride: 1, batch: 32, fwd_us: 1514, dgrad_us: 1417,"            \
  " wgrad_us: 2532}\n"

Test(gconv_calib, another_gpus_table_is_not_applied_as_measured) {
  struct ds_test_result r = b200_run(NULL, "csv");
  double without = ds_test_csv_num(r.out, "iter_ms", 0);
  ds_test_release(&r);
  const char *other[] = {SLOW_LAYER1("", "tf32"), SLOW_LAYER1("  gpu: NVIDIA H200\n", "tf32")};
  const char *why[] = {"measured on a GPU of 132 SMs at 1980 MHz, not ",
                       "measured on NVIDIA H200 (132 SMs at 1980 MHz), not "};
  for (int i = 0; i < 2; i++) {
    r = b200_run(other[i], "csv");
    cr_assert_eq(ds_test_csv_num(r.out, "iter_ms", 0), without, "%s", r.out);
    cr_assert(strstr(r.err, why[i]), "%s", r.err);
    cr_assert(strstr(r.err, "B200-SXM-180GB (another "), "%s", r.err);
    cr_assert(strstr(r.err, "which has no boost_mhz to move them to: not applied"), "%s", r.err);
    char field[512];
    ds_test_csv_str(r.out, "kernel_models", 0, field, sizeof field);
    cr_assert(strstr(field, "grouped_conv=roofline"), "%s", field);
    ds_test_release(&r);
  }
  r = b200_run(SLOW_LAYER1("  gpu: B200-SXM-180GB\n", "tf32"), "csv");
  cr_assert_gt(ds_test_csv_num(r.out, "iter_ms", 0), without + 3 * 1.5, "%s", r.out);
  char field[512];
  ds_test_csv_str(r.out, "kernel_models", 0, field, sizeof field);
  cr_assert(strstr(field, "grouped_conv=calib"), "%s", field);
  ds_test_release(&r);
}

/* A table of this GPU (an older file of the B200's 148 SMs) without the
 * run's math (fp32 entries, TF32 convolutions) prices nothing: the
 * iteration is the one without it, the note says so and lists the file's
 * modes (not "apply as measured"), and the kernel-models line keeps
 * grouped convolutions at the conv class's rate, naming the missing mode. */
#define B200_FP32                                                                       \
  "schema_version: 1\ngrouped_conv:\n  sms: 148\n  boost_mhz: 1965\n  entries:\n"       \
  "    - {mode: fp32, group_width: 4, out_channels: 128, out_positions: 3136, stride: 1," \
  " batch: 32, fwd_us: 1514, dgrad_us: 1417, wgrad_us: 2532}\n"
Test(gconv_calib, a_table_without_the_runs_mode_says_so) {
  struct ds_test_result r = b200_run(NULL, "csv");
  double without = ds_test_csv_num(r.out, "iter_ms", 0);
  ds_test_release(&r);
  r = b200_run(B200_FP32, "csv");
  cr_assert_eq(ds_test_csv_num(r.out, "iter_ms", 0), without, "%s", r.out);
  cr_assert(strstr(r.err, "--calib's grouped convolutions have no tf32 entries (the file has "
                          "fp32, measured on a GPU of 148 SMs at 1965 MHz): this run's "
                          "grouped convolutions run at the conv class's rate"),
            "%s", r.err);
  cr_assert_null(strstr(r.err, "apply as measured"), "%s", r.err);
  char field[512];
  ds_test_csv_str(r.out, "kernel_models", 0, field, sizeof field);
  cr_assert(strstr(field, "grouped_conv=roofline"), "%s", field);
  ds_test_release(&r);
  /* the text summary's line */
  r = b200_run(B200_FP32, "text");
  cr_assert(strstr(r.out, "; --calib has no tf32 entries: the conv class's rate (roofline) for "
                          "grouped convolutions (per shape)"), "%s", r.out);
  ds_test_release(&r);
}

/* The same H200 table on dgx-a100 (an A100 of 108 SMs at 1410 MHz, another
 * GPU with a clock): moved by SMs x clock, and the JSON names both GPUs'
 * SMs and clocks as the text line does. */
Test(gconv_calib, another_gpus_table_moved_is_named_in_json) {
  struct ds_test_result r =
      calib_run("dgx-a100", SLOW_LAYER1("  gpu: NVIDIA H200\n", "tf32"), "json");
  cr_assert(strstr(r.out, "{\"kernel\": \"grouped_conv\", \"source\": \"scaled_calib\", "
                          "\"measured_sms\": 132, \"measured_clock_mhz\": 1980, \"sms\": 108, "
                          "\"clock_mhz\": 1410"), "%s", r.out);
  ds_test_release(&r);
}
