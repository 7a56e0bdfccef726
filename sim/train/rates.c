/*
 * Where a run's compute rates came from (see rates.h). The sources are
 * resolved where the rates are, in compute.c (ds_compute_set_tf32 fills
 * class_source beside class_efficiency), so the two cannot disagree; this
 * module only picks the classes a model charges and words them.
 */
#include "sim/train/rates.h"

#include <stdio.h>
#include <string.h>

#include "base/textout.h"

/* Whether layer l is charged FLOPs, so its class's rate prices something. */
static int has_flops(const struct ds_layer *l) { return l->fwd_flops > 0 || l->bwd_flops > 0; }

/* A half GEMM on unaligned operands (GPT-2's LM head, BERT's decoder) runs
 * at matmul_unaligned_half, whatever priced its class (compute_roofline.c
 * layer_flops_per_s): its own entry, after attention, where a layer runs one. */
static void add_unaligned(const struct ds_compute *c, const struct ds_model *m,
                          struct ds_rates *out) {
  int unaligned = 0;
  for (int32_t i = 0; i < m->n_layers && !unaligned; i++)
    unaligned = ds_compute_gemm_unaligned(c, &m->layers[i]) && has_flops(&m->layers[i]);
  if (!unaligned) return;
  struct ds_rate_used *r = &out->r[out->n++];
  *r = (struct ds_rate_used){DS_LAYER_MATMUL, DS_GPU_MATH_HALF, c->unaligned_half_source,
                             c->unaligned_half_efficiency, "", 1, 0, 0};
  snprintf(r->proxy, sizeof r->proxy, "%s", c->unaligned_half_proxy);
}

/* A calibration file's rate: which GPU the file was measured on, against
 * the run's (compute params calib_gpu_fit, set where --calib is loaded). */
static void mark_calib(const struct ds_compute *c, struct ds_rate_used *r) {
  if (r->source != DS_RATE_CALIB && r->source != DS_RATE_CALIB_FLOPS) return;
  r->calib_fit = c->params.calib_gpu_fit;
  if (r->calib_fit == DS_CALIB_GPU_OTHER)
    /* table names are short (H200-SXM-141GB): 50 bytes hold any of them */
    snprintf(r->proxy, sizeof r->proxy, "measured on %.50s", c->params.calib_gpu);
  else if (r->calib_fit == DS_CALIB_GPU_UNNAMED)
    snprintf(r->proxy, sizeof r->proxy, "the file names no GPU");
}

void ds_rates_used(const struct ds_compute *c, const struct ds_model *m, struct ds_rates *out) {
  static const enum ds_layer_class order[] = {DS_LAYER_CONV, DS_LAYER_MATMUL,
                                              DS_LAYER_ATTENTION, DS_LAYER_UNKNOWN};
  memset(out, 0, sizeof *out);
  for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
    enum ds_layer_class cls = order[k];
    if (cls == DS_LAYER_UNKNOWN) add_unaligned(c, m, out);
    int charged = 0;
    for (int32_t i = 0; i < m->n_layers && !charged; i++)
      charged = m->layers[i].cls == cls && has_flops(&m->layers[i]);
    if (!charged) continue;
    struct ds_rate_used *r = &out->r[out->n++];
    *r = (struct ds_rate_used){cls, c->class_math[cls], c->class_source[cls],
                               c->class_efficiency[cls], "", 0, 0, 0};
    snprintf(r->proxy, sizeof r->proxy, "%s", c->class_proxy[cls]);
  }
  /* every run moves bytes: activations, copies */
  struct ds_rate_used *mem = &out->r[out->n++];
  *mem = (struct ds_rate_used){DS_LAYER_MEMORY, DS_GPU_MATH_FP32,
                               c->class_source[DS_LAYER_MEMORY], c->params.mem_efficiency, "",
                               0, 0, 0};
  snprintf(mem->proxy, sizeof mem->proxy, "%s", c->class_proxy[DS_LAYER_MEMORY]);
  for (int32_t i = 0; i < out->n; i++) mark_calib(c, &out->r[i]);
}

void ds_rates_add_grad_gemm(const struct ds_compute *c, struct ds_rates *out) {
  for (int32_t i = 0; i < out->n; i++)
    if (out->r[i].cls == DS_LAYER_MATMUL && !out->r[i].unaligned &&
        out->r[i].math == (int32_t)c->grad_gemm_math)
      return;
  if (out->n >= DS_RATES_MAX) return;
  struct ds_rate_used *r = &out->r[out->n++];
  *r = (struct ds_rate_used){DS_LAYER_MATMUL, c->grad_gemm_math, c->grad_gemm_source,
                             c->grad_gemm_efficiency, "", 0, 1, 0};
  snprintf(r->proxy, sizeof r->proxy, "%s", c->grad_gemm_proxy);
  mark_calib(c, r);
}

/* Whether a and b are the same rate: class, math, unaligned and whether
 * the gradients' GEMMs, with the same source. */
static int same_rate(const struct ds_rate_used *a, const struct ds_rate_used *b) {
  return a->cls == b->cls && a->math == b->math && a->unaligned == b->unaligned &&
         a->grad_gemm == b->grad_gemm && a->source == b->source;
}

void ds_rates_merge(struct ds_rates *dst, const struct ds_rates *src) {
  for (int32_t i = 0; i < src->n; i++) {
    int have = 0;
    for (int32_t j = 0; j < dst->n && !have; j++) have = same_rate(&dst->r[j], &src->r[i]);
    if (!have && dst->n < DS_RATES_MAX) dst->r[dst->n++] = src->r[i];
  }
}

const char *ds_rate_source_name(enum ds_rate_source source) {
  switch (source) {
  case DS_RATE_GPU_TABLE: return "gpu_table";
  case DS_RATE_CALIB: return "calib";
  case DS_RATE_TOPOLOGY: return "topology";
  case DS_RATE_AS_MATMUL: return "as_matmul";
  case DS_RATE_GPU_PROXY: return "gpu_table_proxy";
  case DS_RATE_CALIB_FLOPS: return "calib_flops";
  default: return "typical";
  }
}

const char *ds_rate_used_source_name(const struct ds_rate_used *r) {
  if (r->calib_fit == DS_CALIB_GPU_OTHER && r->source == DS_RATE_CALIB) return "calib_other_gpu";
  if (r->calib_fit == DS_CALIB_GPU_OTHER && r->source == DS_RATE_CALIB_FLOPS)
    return "calib_flops_other_gpu";
  return ds_rate_source_name(r->source);
}

void ds_rate_name(const struct ds_rate_used *r, char *buf, size_t size) {
  static const char *const maths[DS_GPU_MATH_COUNT] = {"fp32", "tf32", "half"};
  const char *math = (unsigned)r->math < DS_GPU_MATH_COUNT ? maths[r->math] : "?";
  switch (r->cls) {
  case DS_LAYER_MEMORY: snprintf(buf, size, "memory"); break;
  case DS_LAYER_UNKNOWN: snprintf(buf, size, "unclassed_%s", math); break;
  default:
    snprintf(buf, size, "%s%s_%s", ds_layer_class_name(r->cls), r->unaligned ? "_unaligned" : "",
             math);
    break;
  }
}

const char *ds_rate_key(const struct ds_rate_used *r) {
  if (r->source == DS_RATE_TYPICAL)
    return r->cls == DS_LAYER_MEMORY ? "mem_efficiency" : "flops_efficiency";
  if (r->source == DS_RATE_CALIB_FLOPS) return "flops_efficiency";
  if (r->source != DS_RATE_TOPOLOGY) return NULL;
  switch (r->cls) {
  case DS_LAYER_CONV: return "conv_efficiency";
  case DS_LAYER_MATMUL: return "matmul_efficiency";
  default: return "attention_efficiency";
  }
}

int ds_rates_unmeasured(const struct ds_rates *rates) {
  for (int32_t i = 0; i < rates->n; i++)
    if (rates->r[i].source == DS_RATE_TYPICAL || rates->r[i].source == DS_RATE_AS_MATMUL ||
        rates->r[i].source == DS_RATE_GPU_PROXY || rates->r[i].source == DS_RATE_CALIB_FLOPS ||
        rates->r[i].calib_fit == DS_CALIB_GPU_OTHER)
      return 1;
  return 0;
}

/* The text's name of a rate: ds_rate_name's, PowerSGD's GEMMs marked so
 * (their matmul rate is not the model's matmuls'). */
static void text_name(const struct ds_rate_used *r, char *buf, size_t size) {
  char name[32];
  ds_rate_name(r, name, sizeof name);
  snprintf(buf, size, "%s%s", name, r->grad_gemm ? " (PowerSGD's GEMMs)" : "");
}


/* Whether rates a and b fall in one group: the same source and, for the
 * sources with a key, the same key and value; stand-ins, the same reason. */
static int same_group(const struct ds_rate_used *a, const struct ds_rate_used *b) {
  if (a->source != b->source || a->calib_fit != b->calib_fit) return 0;
  if (a->source == DS_RATE_GPU_PROXY) return strcmp(a->proxy, b->proxy) == 0;
  const char *ka = ds_rate_key(a), *kb = ds_rate_key(b);
  return !ka || (strcmp(ka, kb) == 0 && a->efficiency == b->efficiency);
}

/* "HEAD for NAME, NAME" of the group whose first rate is rates->r[first],
 * after "; " unless it is the line's first group. */
static void group(const struct ds_rates *rates, int32_t first, int first_group, char *buf,
                  size_t size, size_t *used) {
  const struct ds_rate_used *r = &rates->r[first];
  const char *key = ds_rate_key(r);
  if (!first_group) ds_textout_append(buf, size, used, "; ");
  switch (r->source) {
  case DS_RATE_GPU_TABLE: ds_textout_append(buf, size, used, "measured (GPU table)"); break;
  case DS_RATE_CALIB:
    /* another GPU's fractions of its peak, on this GPU's peak: a stand-in */
    if (r->calib_fit == DS_CALIB_GPU_OTHER)
      ds_textout_append(buf, size, used, "a stand-in (--calib's, %s)", r->proxy);
    else if (r->calib_fit == DS_CALIB_GPU_UNNAMED)
      ds_textout_append(buf, size, used, "measured (--calib; %s)", r->proxy);
    else
      ds_textout_append(buf, size, used, "measured (--calib)");
    break;
  case DS_RATE_TOPOLOGY:
    ds_textout_append(buf, size, used, "topology's %s %g", key, r->efficiency);
    break;
  case DS_RATE_AS_MATMUL:
    ds_textout_append(buf, size, used, "matmul's rate (attention not measured)");
    break;
  case DS_RATE_GPU_PROXY:
    ds_textout_append(buf, size, used, "a stand-in (GPU table: %s)", r->proxy);
    break;
  case DS_RATE_CALIB_FLOPS:
    ds_textout_append(buf, size, used,
                      "a stand-in (--calib's flops_efficiency %g, its GEMMs%s%s)", r->efficiency,
                      r->proxy[0] ? "; " : "", r->proxy);
    break;
  default:
    ds_textout_append(buf, size, used, "typical %s %g (not measured)", key, r->efficiency);
    break;
  }
  const char *sep = " for ";
  for (int32_t i = first; i < rates->n; i++) {
    if (!same_group(&rates->r[i], r)) continue;
    char name[64];
    text_name(&rates->r[i], name, sizeof name);
    ds_textout_append(buf, size, used, "%s%s", sep, name);
    sep = ", ";
  }
}

size_t ds_rates_describe(const struct ds_rates *rates, char *buf, size_t size) {
  static const enum ds_rate_source order[] = {DS_RATE_GPU_TABLE, DS_RATE_CALIB,
                                              DS_RATE_GPU_PROXY, DS_RATE_CALIB_FLOPS,
                                              DS_RATE_TOPOLOGY,
                                              DS_RATE_AS_MATMUL, DS_RATE_TYPICAL};
  size_t used = 0;
  int all_table = 1;
  buf[0] = '\0';
  for (int32_t i = 0; i < rates->n; i++) all_table &= rates->r[i].source == DS_RATE_GPU_TABLE;
  if (all_table) {
    ds_textout_append(buf, size, &used, "compute rates: all measured (GPU table):");
    for (int32_t i = 0; i < rates->n; i++) {
      char name[64];
      text_name(&rates->r[i], name, sizeof name);
      ds_textout_append(buf, size, &used, "%s%s", i ? ", " : " ", name);
    }
    return used;
  }
  /* the groups after the prefix, by source, each at its first rate */
  ds_textout_append(buf, size, &used, "compute rates: ");
  int first_group = 1;
  for (size_t k = 0; k < sizeof order / sizeof *order; k++)
    for (int32_t i = 0; i < rates->n; i++) {
      int head = rates->r[i].source == (int32_t)order[k];
      for (int32_t j = 0; j < i && head; j++) head = !same_group(&rates->r[j], &rates->r[i]);
      if (!head) continue;
      group(rates, i, first_group, buf, size, &used);
      first_group = 0;
    }
  return used;
}

int ds_rates_write_field(FILE *fp, const struct ds_rates *rates) {
  for (int32_t i = 0; i < rates->n; i++) {
    char name[32];
    ds_rate_name(&rates->r[i], name, sizeof name);
    if (fprintf(fp, "%s%s=%s", i ? ";" : "", name, ds_rate_used_source_name(&rates->r[i])) < 0)
      return EOF;
  }
  return 0;
}
