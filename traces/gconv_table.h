/*
 * Measured grouped-convolution kernel times, as plain data: the table that
 * sim/train/grouped_conv.c looks a layer up in. The built-in table
 * (sim/train/grouped_conv_table.inc) and a calibration file's
 * `grouped_conv` section (calib_file.h) both fill this form, so the lookup
 * does not care where its times come from. It lives here because the
 * calibration file's struct, which crosses from the replay's side to the
 * simulator's, holds one.
 */
#ifndef DS_GCONV_TABLE_H
#define DS_GCONV_TABLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ds_conv_pass { DS_CONV_FWD, DS_CONV_DGRAD, DS_CONV_WGRAD, DS_CONV_PASSES };

/* The math a grouped convolution runs in: FP32 (no TF32: V100, or
 * --tf32 none), TF32 (PyTorch's default for convolutions on Ampere and
 * later), half precision in NCHW or channels-last. */
enum ds_gconv_mode {
  DS_GCONV_FP32,
  DS_GCONV_TF32,
  DS_GCONV_HALF,
  DS_GCONV_HALF_NHWC,
  DS_GCONV_MODES
};

/* The calibration file's names of the modes, by enum value: fp32, tf32,
 * half, half_nhwc. */
extern const char *const ds_gconv_mode_names[DS_GCONV_MODES];

/* The most entries a calibration file's table may hold (the built-in H200
 * table has 168). */
#define DS_GCONV_MAX_ENTRIES 1024

/* One measurement: a 3x3 grouped convolution of group_width input channels
 * per group, out_channels outputs over out_positions output positions
 * (height x width), at stride and batch; us[pass] its kernel time in
 * microseconds. */
struct ds_gconv_entry {
  enum ds_gconv_mode mode;
  int32_t group_width, out_channels, out_positions, stride, batch;
  double us[DS_CONV_PASSES];
};

/* Whether a and b measured the same shape: group width, out channels,
 * output positions and stride (mode and batch aside). */
int ds_gconv_same_shape(const struct ds_gconv_entry *a, const struct ds_gconv_entry *b);

/* A table: its entries (in any order; no two of one mode, shape and
 * batch) and the GPU they were measured on. */
struct ds_gconv_table {
  const struct ds_gconv_entry *entries;
  int32_t n;
  int32_t sms;     /* the measured GPU's SMs */
  double clock_hz; /* its boost clock */
  /* 1: measured on the simulated GPU itself (a calibration file, which
   * describes the machine it calibrates): its times apply as measured, with
   * no transfer to the topology's SMs and clock. 0: the built-in table,
   * moved to the target GPU by SMs x clock. */
  int on_target;
  /* 1: a calibration file's table (as measured, or moved by SMs x clock
   * where it names another GPU: sim/train/calib.h ds_calib_gconv_fit) */
  int from_calib;
};

#ifdef __cplusplus
}
#endif

#endif /* DS_GCONV_TABLE_H */
