/*
 * Where a run's measured kernel models came from (kernel_models.h): the
 * models are recorded where they price a kernel; this module reads the
 * transfer off the fields of struct ds_compute those prices use and words
 * it.
 */
#include "sim/train/kernel_models.h"

#include <stdio.h>
#include <string.h>

#include "base/textout.h"
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
    [DS_KM_EMBED_FEATURE] = {"embedding backward's feature kernel", "embedding_feature"},
};

const char *ds_kernel_models_label(enum ds_kernel_model k) {
  return (unsigned)k < DS_KM_COUNT ? models[k].label : "?";
}

const char *ds_kernel_models_key(enum ds_kernel_model k) {
  return (unsigned)k < DS_KM_COUNT ? models[k].key : "?";
}

void ds_kernel_models_fill(const struct ds_compute *c, const char *gpu, uint32_t used,
                           const struct ds_compute_charged *census, struct ds_kernel_models *out) {
  const struct ds_gconv_table *t = c->gconv ? c->gconv : &ds_gconv_builtin;
  memset(out, 0, sizeof *out);
  out->used = used;
  if (census)
    for (int k = 0; k < DS_KM_COUNT; k++) {
      out->passes[k] = census->passes[k];
      out->bound_passes[k] = census->bound_passes[k];
    }
  out->knows_sms = ds_compute_knows_sms(c);
  out->sms = c->sms;
  out->clock_mhz = c->sm_clock_hz / 1e6;
  out->gconv_on_target = t->on_target;
  out->gconv_from_calib = t->from_calib;
  enum ds_gconv_mode mode = ds_compute_gconv_mode(c);
  if (t->from_calib && !ds_gconv_has_mode(t, mode)) out->gconv_missing_mode = 1 + (int32_t)mode;
  out->gconv_sms = t->sms;
  out->gconv_clock_mhz = t->clock_hz / 1e6;
  snprintf(out->gpu, sizeof out->gpu, "%s", gpu ? gpu : "");
}

enum ds_km_source ds_kernel_models_source(const struct ds_kernel_models *km,
                                          enum ds_kernel_model k) {
  /* a calibration table without the run's mode prices nothing
   * (ds_gconv_ns gives 0): the conv class's rate */
  if (k == DS_KM_GROUPED_CONV && km->gconv_missing_mode) return DS_KM_ROOFLINE;
  /* ds_gconv_ns: a calibration file's table applies as measured, at its own
   * SMs and clock, even where the GPU table has none (ds_compute_grouped_conv) */
  if (k == DS_KM_GROUPED_CONV && km->gconv_on_target) return DS_KM_CALIB;
  /* the pricing code's own test (ds_compute_knows_sms): without both, the
   * kernels run at the roofline */
  if (!km->knows_sms) return DS_KM_ROOFLINE;
  if (k == DS_KM_GROUPED_CONV && km->gconv_from_calib) return DS_KM_CALIB_SCALED;
  int32_t sms = k == DS_KM_GROUPED_CONV ? km->gconv_sms : DS_KM_MEASURED_SMS;
  double mhz = k == DS_KM_GROUPED_CONV ? km->gconv_clock_mhz : DS_KM_MEASURED_CLOCK_MHZ;
  /* the measured GPU itself: its cycles on its own SMs and clock */
  if (strcmp(km->gpu, DS_KM_MEASURED_GPU) == 0 && km->sms == sms && km->clock_mhz == mhz)
    return DS_KM_THIS_GPU;
  return DS_KM_SCALED;
}

const char *ds_kernel_models_source_name(enum ds_km_source s) {
  switch (s) {
  case DS_KM_THIS_GPU: return "this_gpu";
  case DS_KM_SCALED: return "scaled_" DS_KM_MEASURED_GPU_SHORT;
  case DS_KM_CALIB: return "calib";
  case DS_KM_CALIB_SCALED: return "scaled_calib";
  default: return "roofline";
  }
}

void ds_kernel_models_merge(struct ds_kernel_models *dst, const struct ds_kernel_models *src) {
  dst->used |= src->used;
}

/* The groups of the line, in order: a source, and at the roofline the
 * grouped convolutions apart (they fall back to the conv class's rate, the
 * others to the memory roofline), those of a --calib table without the
 * run's mode apart again (the groups before G_MEMORY_ROOFLINE apply). */
enum group {
  G_THIS_GPU,
  G_SCALED,
  G_CALIB,
  G_CALIB_SCALED,
  G_MEMORY_ROOFLINE,
  G_CALIB_NO_MODE,
  G_CONV_ROOFLINE,
  G_COUNT
};

static enum group group_of(const struct ds_kernel_models *km, enum ds_kernel_model k) {
  switch (ds_kernel_models_source(km, k)) {
  case DS_KM_THIS_GPU: return G_THIS_GPU;
  case DS_KM_SCALED: return G_SCALED;
  case DS_KM_CALIB: return G_CALIB;
  case DS_KM_CALIB_SCALED: return G_CALIB_SCALED;
  default:
    if (k != DS_KM_GROUPED_CONV) return G_MEMORY_ROOFLINE;
    return km->gconv_missing_mode ? G_CALIB_NO_MODE : G_CONV_ROOFLINE;
  }
}

static void group_head(const struct ds_kernel_models *km, enum group g, int roofline_named,
                       char *buf, size_t size, size_t *used) {
  switch (g) {
  case G_THIS_GPU:
    ds_textout_append(buf, size, used, "measured on this GPU (%s) for", DS_KM_MEASURED_GPU_SHORT);
    break;
  case G_SCALED:
    ds_textout_append(buf, size, used, "%s's SM cycles on %s's %d SMs at %g MHz%s for",
                      DS_KM_MEASURED_GPU_SHORT, km->gpu, km->sms, km->clock_mhz,
                      km->sms == DS_KM_MEASURED_SMS && km->clock_mhz == DS_KM_MEASURED_CLOCK_MHZ
                          ? " (the same SMs and clock)"
                          : "");
    break;
  case G_CALIB: ds_textout_append(buf, size, used, "measured on this machine (--calib) for"); break;
  case G_CALIB_SCALED:
    ds_textout_append(buf, size, used,
                      "--calib's SM cycles (another GPU's: %d SMs at %g MHz) on %s's %d SMs at "
                      "%g MHz for",
                      km->gconv_sms, km->gconv_clock_mhz, km->gpu, km->sms, km->clock_mhz);
    break;
  case G_CALIB_NO_MODE: {
    int32_t m = km->gconv_missing_mode - 1;
    ds_textout_append(buf, size, used,
                      "--calib has no %s entries: the conv class's rate (roofline) for",
                      m >= 0 && m < DS_GCONV_MODES ? ds_gconv_mode_names[m] : "?");
    break;
  }
  case G_MEMORY_ROOFLINE:
    ds_textout_append(buf, size, used, "not applied (%s has no boost_mhz), the memory roofline for",
                      km->gpu);
    break;
  default: /* compute_roofline.c ds__compute_layer_kernel_ns: its FLOPs at the conv rate or
            * its bytes */
    if (!roofline_named)
      ds_textout_append(buf, size, used, "not applied (%s has no boost_mhz), ", km->gpu);
    ds_textout_append(buf, size, used, "the conv class's rate (roofline) for");
    break;
  }
}

/* "batch norm (NCHW; roofline bound 99 of 106 passes)": the clause where the
 * roofline, not the model, set some of its passes' times (the memory
 * roofline; for grouped convolutions the conv class's rate or their bytes,
 * compute_roofline.c ds__compute_layer_kernel_ns). */
static void model_entry(const struct ds_kernel_models *km, enum ds_kernel_model k, int applied,
                        int64_t census_batch, char *buf, size_t size, size_t *used) {
  const char *label = ds_kernel_models_label(k);
  int32_t n = km->passes[k], by_roofline = n - km->bound_passes[k];
  if (!applied || n <= 0 || by_roofline <= 0) {
    ds_textout_append(buf, size, used, "%s", label);
    return;
  }
  size_t len = strlen(label);
  int paren = len > 0 && label[len - 1] == ')';
  ds_textout_append(buf, size, used, "%.*s%s", (int)(paren ? len - 1 : len), label,
                    paren ? "; " : " (");
  if (n == 1)
    ds_textout_append(buf, size, used, "roofline bound its one pass");
  else if (by_roofline == n)
    ds_textout_append(buf, size, used, "roofline bound all %d passes", (int)n);
  else
    ds_textout_append(buf, size, used, "roofline bound %d of %d passes", (int)by_roofline, (int)n);
  if (census_batch > 0)
    ds_textout_append(buf, size, used, " at batch %lld", (long long)census_batch);
  ds_textout_append(buf, size, used, ")");
}

size_t ds_kernel_models_describe(const struct ds_kernel_models *km, int64_t census_batch, char *buf,
                                 size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  ds_textout_append(buf, size, &used, "kernel models:");
  if (km->used == 0) {
    ds_textout_append(buf, size, &used, " none");
    return used;
  }
  const char *group_sep = " ";
  int roofline_named = 0;
  for (int g = 0; g < G_COUNT; g++) {
    const char *sep = NULL;
    for (int k = 0; k < DS_KM_COUNT; k++) {
      enum ds_kernel_model model = (enum ds_kernel_model)k;
      if (!(km->used & (1u << k)) || group_of(km, model) != (enum group)g) continue;
      if (!sep) {
        ds_textout_append(buf, size, &used, "%s", group_sep);
        group_head(km, (enum group)g, roofline_named, buf, size, &used);
        if (g == G_MEMORY_ROOFLINE) roofline_named = 1;
        sep = " ";
        group_sep = "; ";
      }
      ds_textout_append(buf, size, &used, "%s", sep);
      model_entry(km, model, g < G_MEMORY_ROOFLINE, census_batch, buf, size, &used);
      sep = ", ";
    }
  }
  return used;
}

int ds_kernel_models_write_field(FILE *fp, const struct ds_kernel_models *km) {
  const char *sep = "";
  for (int k = 0; k < DS_KM_COUNT; k++) {
    if (!(km->used & (1u << k))) continue;
    enum ds_kernel_model model = (enum ds_kernel_model)k;
    if (fprintf(fp, "%s%s=%s", sep, ds_kernel_models_key(model),
                ds_kernel_models_source_name(ds_kernel_models_source(km, model))) < 0)
      return EOF;
    sep = ";";
  }
  return 0;
}
