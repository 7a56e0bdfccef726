/*
 * Where a run's measured kernel models came from (kernel_models.h): the
 * models are recorded where they price a kernel; this module reads the
 * transfer off the fields of struct ds_compute those prices use and words
 * it.
 */
#include "sim/train/kernel_models.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim/train/compute.h"
#include "sim/train/grouped_conv.h"

static const struct {
  const char *label, *key;
} models[DS_KM_COUNT] = {
    [DS_KM_BN_NCHW] = {"batch norm (NCHW)", "batch_norm_nchw"},
    [DS_KM_BN_NHWC] = {"batch norm (channels-last)", "batch_norm_nhwc"},
    [DS_KM_LAYER_NORM] = {"layer norm", "layer_norm"},
    [DS_KM_MAX_POOL] = {"max-pool", "max_pool"},
    [DS_KM_GROUPED_CONV] = {"grouped convolutions (per shape)", "grouped_conv"},
    [DS_KM_LEGACY_EW] = {"non-vectorised elementwise", "legacy_elementwise"},
    [DS_KM_MIXED_EW] = {"mixed-dtype elementwise", "mixed_dtype_elementwise"},
    [DS_KM_CAT] = {"torch.cat's generic kernel", "cat"},
    [DS_KM_UPCAST] = {"half-to-fp32 casts", "upcast"},
    [DS_KM_ROW_REDUCE] = {"bias-gradient reductions", "row_reduce"},
};

const char *ds_kernel_model_label(enum ds_kernel_model k) {
  return (unsigned)k < DS_KM_COUNT ? models[k].label : "?";
}

const char *ds_kernel_model_key(enum ds_kernel_model k) {
  return (unsigned)k < DS_KM_COUNT ? models[k].key : "?";
}

void ds_kernel_models_fill(const struct ds_compute *c, const char *gpu, uint32_t used,
                           struct ds_kernel_models *out) {
  const struct ds_gconv_table *t = c->gconv ? c->gconv : &ds_gconv_builtin;
  memset(out, 0, sizeof *out);
  out->used = used;
  out->knows_sms = ds_compute_knows_sms(c);
  out->sms = c->sms;
  out->clock_mhz = c->sm_clock_hz / 1e6;
  out->gconv_on_target = t->on_target;
  out->gconv_sms = t->sms;
  out->gconv_clock_mhz = t->clock_hz / 1e6;
  snprintf(out->gpu, sizeof out->gpu, "%s", gpu ? gpu : "");
}

enum ds_km_source ds_kernel_model_source(const struct ds_kernel_models *km,
                                         enum ds_kernel_model k) {
  /* the pricing code's own test (ds_compute_knows_sms): without both, the
   * kernels run at the roofline */
  if (!km->knows_sms) return DS_KM_ROOFLINE;
  /* ds_gconv_ns: a calibration file's table applies as measured */
  if (k == DS_KM_GROUPED_CONV && km->gconv_on_target) return DS_KM_CALIB;
  int32_t sms = k == DS_KM_GROUPED_CONV ? km->gconv_sms : DS_KM_MEASURED_SMS;
  double mhz = k == DS_KM_GROUPED_CONV ? km->gconv_clock_mhz : DS_KM_MEASURED_CLOCK_MHZ;
  /* the measured GPU itself: its cycles on its own SMs and clock */
  if (strcmp(km->gpu, DS_KM_MEASURED_GPU) == 0 && km->sms == sms && km->clock_mhz == mhz)
    return DS_KM_THIS_GPU;
  return DS_KM_SCALED;
}

const char *ds_kernel_model_source_name(enum ds_km_source s) {
  switch (s) {
  case DS_KM_THIS_GPU: return "this_gpu";
  case DS_KM_SCALED: return "scaled_" DS_KM_MEASURED_GPU_SHORT;
  case DS_KM_CALIB: return "calib";
  default: return "roofline";
  }
}

void ds_kernel_models_merge(struct ds_kernel_models *dst, const struct ds_kernel_models *src) {
  dst->used |= src->used;
}

/* Appends printf output at *used, never past size (buf stays terminated). */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t size,
                                                         size_t *used, const char *fmt, ...) {
  if (*used >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (k > 0) *used += (size_t)k;
}

void ds_kernel_models_describe(const struct ds_kernel_models *km, char *buf, size_t size) {
  static const enum ds_km_source order[] = {DS_KM_THIS_GPU, DS_KM_SCALED, DS_KM_CALIB,
                                            DS_KM_ROOFLINE};
  size_t used = 0;
  buf[0] = '\0';
  append(buf, size, &used, "kernel models:");
  if (km->used == 0) {
    append(buf, size, &used, " none");
    return;
  }
  const char *group_sep = " ";
  for (size_t g = 0; g < sizeof order / sizeof *order; g++) {
    const char *sep = NULL;
    for (int k = 0; k < DS_KM_COUNT; k++) {
      enum ds_kernel_model model = (enum ds_kernel_model)k;
      if (!(km->used & (1u << k)) || ds_kernel_model_source(km, model) != order[g]) continue;
      if (!sep) {
        append(buf, size, &used, "%s", group_sep);
        switch (order[g]) {
        case DS_KM_THIS_GPU:
          append(buf, size, &used, "measured on this GPU (%s) for", DS_KM_MEASURED_GPU_SHORT);
          break;
        case DS_KM_SCALED:
          append(buf, size, &used, "%s's SM cycles on %s's %d SMs at %g MHz for",
                 DS_KM_MEASURED_GPU_SHORT, km->gpu, km->sms, km->clock_mhz);
          break;
        case DS_KM_CALIB:
          append(buf, size, &used, "measured on this machine (--calib) for");
          break;
        default:
          append(buf, size, &used, "not applied (%s has no boost_mhz), the memory roofline for",
                 km->gpu);
          break;
        }
        sep = " ";
        group_sep = "; ";
      }
      append(buf, size, &used, "%s%s", sep, ds_kernel_model_label(model));
      sep = ", ";
    }
  }
}

void ds_kernel_models_field(const struct ds_kernel_models *km, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int k = 0; k < DS_KM_COUNT; k++)
    if (km->used & (1u << k))
      append(buf, size, &used, "%s%s=%s", used ? ";" : "",
             ds_kernel_model_key((enum ds_kernel_model)k),
             ds_kernel_model_source_name(ds_kernel_model_source(km, (enum ds_kernel_model)k)));
}
