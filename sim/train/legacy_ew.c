/* Elementwise kernels off PyTorch's vectorised path (legacy_ew.h). */
#include "sim/train/legacy_ew.h"

#include <string.h>

#include "sim/train/compute.h"

static const char *const pass_keys[] = {"fwd", "bwd", "accum", "copy", NULL};
static const char *const layout_keys[] = {"legacy_ew", "nhwc_legacy_ew"};
/* the model file's key for each pass's own bytes (pass_bytes) */
static const char *const pass_byte_keys[] = {"op_fwd_bytes", "bwd_bytes", "bwd_accum_bytes",
                                              "bwd_copy_bytes"};

/* Every operand-element moves at least a byte (the exporter's files hold
 * at most 0.5 a byte: fp32, with parameters' reads left out of the bytes),
 * so counts above the bytes + 1 (per-sample rounding) are not a model's:
 * refused at the count, as cat_copy's divisions are. */
static ds_status check_elems_within_bytes(const struct ds_cnode *node, const int64_t *v,
                                          struct ds_err *err) {
  if (v[1] + v[2] <= v[0] + 1) return DS_OK;
  struct ds_cnode item;
  DS_CHECK(ds_cseq_at(node, v[1] > v[0] + 1 ? 1 : 2, &item, err));
  return ds_cnode_error(&item, err, "expected strided and transposed operand-elements at most "
                        "the bytes + 1 (%lld: each moves at least a byte), got %lld + %lld",
                        (long long)v[0] + 1, (long long)v[1], (long long)v[2]);
}

/* [bytes, strided, transposed] or, with a fourth number, the strided
 * operand-elements that run the dynamic-casting kernel under autocast. */
static ds_status read_counts(const struct ds_cnode *node, int fwd, struct ds_legacy_ew *out,
                             struct ds_err *err) {
  int64_t v[4] = {0, 0, 0, 0};
  size_t len = 0;
  if (ds_cnode_is_seq(node)) DS_CHECK(ds_cseq_len(node, &len, err));
  size_t want = len == 4 ? 4 : 3;
  DS_CHECK(ds_model_read_counts(node, want == 4 ? "[bytes, strided operand-elements, transposed "
                                                  "operand-elements, autocast cast "
                                                  "operand-elements]"
                                                : "[bytes, strided operand-elements, transposed "
                                                  "operand-elements, autocast cast "
                                                  "operand-elements] or [bytes, strided "
                                                  "operand-elements, transposed operand-elements]",
                                want, 1u, v, err));
  DS_CHECK(check_elems_within_bytes(node, v, err));
  if (want == 4 && (!fwd || v[3] > v[1])) {
    /* the exporter counts autocast's mixed-dtype ops on forward ops only */
    struct ds_cnode fourth;
    DS_CHECK(ds_cseq_at(node, 3, &fourth, err));
    if (!fwd)
      return ds_cnode_error(&fourth, err, "expected no fourth number: autocast cast "
                            "operand-elements are only for fwd");
    return ds_cnode_error(&fourth, err, "expected autocast cast operand-elements at most the "
                          "strided ones (%lld), got %lld", (long long)v[1], (long long)v[3]);
  }
  out->bytes = (double)v[0];
  out->strided_elems = (double)v[1];
  out->transposed_elems = (double)v[2];
  out->amp_cast_elems = (double)v[3];
  return DS_OK;
}

/* The bytes of layer l's pass p as the model file counts them (fp32), which
 * the pass's non-vectorised kernels are part of; -1 when the file gives the
 * pass no bytes of its own (a backward charged twice the forward's). */
static double pass_bytes(const struct ds_layer *l, enum ds_legacy_pass p) {
  if (p == DS_LEGACY_FWD) return ds_layer_op_fwd_bytes(l);
  if (p == DS_LEGACY_BWD) return l->bwd_bytes;
  if (p == DS_LEGACY_ACCUM) return l->bwd_accum_bytes;
  return l->bwd_copy_bytes;
}

/* amp_cast_ew: [autocast bytes, operand-elements], the bytes part of the
 * layer's amp_fwd_bytes. */
static ds_status read_cast_ew(const struct ds_cnode *item, struct ds_layer *l,
                              struct ds_err *err) {
  struct ds_cnode node;
  l->amp_cast_ew_bytes = l->amp_cast_ew_elems = 0;
  if (!ds_cmap_get(item, "amp_cast_ew", &node)) return DS_OK;
  int64_t v[2] = {0, 0};
  DS_CHECK(ds_model_read_counts(&node, "[autocast bytes, operand-elements]", 2, 1u, v, err));
  if (l->amp_fwd_bytes < 0)
    return ds_cnode_error(&node, err, "expected amp_cast_ew only beside amp_fwd_bytes");
  if ((double)v[0] > l->amp_fwd_bytes)
    return ds_cnode_error(&node, err, "expected amp_cast_ew bytes at most the layer's "
                          "amp_fwd_bytes (%.0f), got %lld", l->amp_fwd_bytes, (long long)v[0]);
  /* every operand-element moves at least one byte (two under autocast's
   * half types); + 1 for the exporter's per-sample rounding */
  if (v[1] > v[0] + 1) {
    struct ds_cnode second;
    DS_CHECK(ds_cseq_at(&node, 1, &second, err));
    return ds_cnode_error(&second, err, "expected operand-elements at most the bytes + 1 (%lld: "
                          "each moves at least a byte), got %lld", (long long)v[0] + 1,
                          (long long)v[1]);
  }
  l->amp_cast_ew_bytes = (double)v[0];
  l->amp_cast_ew_elems = (double)v[1];
  return DS_OK;
}

ds_status ds_legacy_ew_read(const struct ds_cnode *item, struct ds_layer *l, struct ds_err *err) {
  memset(l->legacy, 0, sizeof l->legacy);
  DS_CHECK(read_cast_ew(item, l, err));
  for (int layout = 0; layout < 2; layout++) {
    struct ds_cnode map, node;
    if (!ds_cmap_get(item, layout_keys[layout], &map)) continue;
    if (!ds_cnode_is_map(&map))
      return ds_cnode_error(&map, err, "expected %s as a map of fwd, bwd, accum, copy to "
                            "[bytes, strided operand-elements, transposed operand-elements] "
                            "or (fwd) [those, autocast cast operand-elements]",
                            layout_keys[layout]);
    DS_CHECK(ds_cmap_check_keys(&map, pass_keys, err));
    for (int p = 0; p < DS_LEGACY_PASSES; p++) {
      if (!ds_cmap_get(&map, pass_keys[p], &node)) continue;
      DS_CHECK(read_counts(&node, p == DS_LEGACY_FWD, &l->legacy[layout][p], err));
      double most = pass_bytes(l, (enum ds_legacy_pass)p), got = l->legacy[layout][p].bytes;
      if (got > 0 && most < 0)
        return ds_cnode_error(&node, err, "expected no bwd counts on a layer without bwd_bytes "
                              "(its backward is charged twice its forward's bytes)");
      if (got > most)
        return ds_cnode_error(&node, err, "expected %s bytes at most the layer's %s (%.0f), "
                              "got %.0f", pass_keys[p],
                              p == DS_LEGACY_FWD && l->op_fwd_bytes < 0 ? "fwd_bytes"
                                                                        : pass_byte_keys[p],
                              most, got);
    }
  }
  return DS_OK;
}

void ds_legacy_ew_finish(struct ds_layer *layers, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (int p = 0; p < DS_LEGACY_PASSES; p++)
      if (layers[i].legacy[1][p].bytes > 0) return;
  for (size_t i = 0; i < n; i++)
    memcpy(layers[i].legacy[1], layers[i].legacy[0], sizeof layers[i].legacy[0]);
}

/* What one fp32 byte of pass p weighs in this run: under --amp with the
 * file's autocast bytes, the layer's own ratio for the pass (an op autocast
 * keeps in fp32, such as BERT's embedding sum, keeps its bytes); else, and
 * for the copies (bwd_copy_bytes has no autocast twin: compute_layer.c scales
 * it so), the activation dtype's size over fp32's. */
static double pass_scale(const struct ds_compute *c, const struct ds_layer *l,
                         enum ds_legacy_pass p) {
  if (c->amp != DS_AMP_NONE && l->amp_fwd_bytes >= 0 && p != DS_LEGACY_COPY) {
    double fp32 = pass_bytes(l, p);
    double half = p == DS_LEGACY_FWD   ? l->amp_fwd_bytes
                  : p == DS_LEGACY_BWD ? l->amp_bwd_bytes
                                       : l->amp_bwd_accum_bytes;
    if (fp32 > 0 && half >= 0) return half / fp32;
  }
  return c->precision.act_bytes / 4.0;
}

/* The SM cycles per operand-element of the pass's kernels: elementwise_kernel
 * <128, 2>'s where their elements are 4 bytes (the pass's bytes keep their
 * fp32 size), else <128, 4>'s (legacy_ew.h). */
static void rates(double scale, double *strided, double *transposed) {
  int four_bytes = scale >= 1.0;
  *strided = four_bytes ? DS_LEGACY_STRIDED_CYCLES_FP32 : DS_LEGACY_STRIDED_CYCLES;
  *transposed = four_bytes ? DS_LEGACY_TRANSPOSED_CYCLES_FP32 : DS_LEGACY_TRANSPOSED_CYCLES;
}

double ds_legacy_ew_bytes(const struct ds_compute *c, const struct ds_layer *l,
                          enum ds_legacy_pass p, int64_t batch) {
  const struct ds_legacy_ew *e = &l->legacy[c->channels_last ? 1 : 0][p];
  return e->bytes > 0 ? e->bytes * pass_scale(c, l, p) * (double)batch : 0;
}

/* The time of counts e for b samples whose fp32 bytes weigh `scale` in this
 * run: the slower of their SM cycles and their bytes (b x e->bytes x scale,
 * the caller's *bytes) at the roofline. */
static double counts_ns(const struct ds_compute *c, const struct ds_legacy_ew *e, double scale,
                        double b, double bytes) {
  double strided, transposed;
  rates(scale, &strided, &transposed);
  /* under autocast, the strided ops that mix dtypes run the dynamic-casting
   * kernel, at its own rate whatever the element size (legacy_ew.h) */
  double cast = c->amp != DS_AMP_NONE ? e->amp_cast_elems : 0;
  double cycles = ((e->strided_elems - cast) * strided + cast * DS_LEGACY_CAST_CYCLES +
                   e->transposed_elems * transposed) * b;
  /* a kernel of their own: the launch overhead either way */
  double sm_ns = cycles / ((double)c->sms * c->sm_clock_hz) * 1e9 + c->params.kernel_overhead_ns;
  double roofline = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, bytes);
  ds_compute_charge_model(c, DS_KM_LEGACY_EW, sm_ns > roofline);
  return sm_ns > roofline ? sm_ns : roofline;
}

double ds_legacy_ew_ns(const struct ds_compute *c, const struct ds_layer *l,
                       enum ds_legacy_pass p, int64_t batch, double *bytes) {
  const struct ds_legacy_ew *e = &l->legacy[c->channels_last ? 1 : 0][p];
  *bytes = 0;
  if (e->bytes > 0 && !ds_compute_knows_sms(c)) ds_compute_charge_model(c, DS_KM_LEGACY_EW, 0);
  if (!ds_compute_knows_sms(c) || e->bytes <= 0) return 0;
  *bytes = ds_legacy_ew_bytes(c, l, p, batch);
  return counts_ns(c, e, pass_scale(c, l, p), (double)batch, *bytes);
}

ds_status ds_legacy_ew_read_loss(const struct ds_cnode *root, struct ds_model *m,
                                 struct ds_err *err) {
  struct ds_cnode node;
  memset(&m->loss_legacy, 0, sizeof m->loss_legacy);
  if (!ds_cmap_get(root, "loss_legacy_ew", &node)) return DS_OK;
  int64_t v[3] = {0, 0, 0};
  DS_CHECK(ds_model_read_counts(&node, "[bytes, strided operand-elements, transposed "
                                "operand-elements]", 3, 1u, v, err));
  DS_CHECK(check_elems_within_bytes(&node, v, err));
  if ((double)v[0] > m->loss_copy_bytes)
    return ds_cnode_error(&node, err, "expected loss_legacy_ew bytes at most loss_copy_bytes "
                          "(%.0f), got %lld", m->loss_copy_bytes, (long long)v[0]);
  m->loss_legacy.bytes = (double)v[0];
  m->loss_legacy.strided_elems = (double)v[1];
  m->loss_legacy.transposed_elems = (double)v[2];
  return DS_OK;
}

double ds_legacy_loss_ns(const struct ds_compute *c, const struct ds_model *m, double samples,
                         double *bytes) {
  const struct ds_legacy_ew *e = &m->loss_legacy;
  *bytes = 0;
  if (e->bytes > 0 && !ds_compute_knows_sms(c)) ds_compute_charge_model(c, DS_KM_LEGACY_EW, 0);
  if (!ds_compute_knows_sms(c) || e->bytes <= 0) return 0;
  double scale = c->precision.act_bytes / 4.0; /* the copies move the model's outputs */
  *bytes = e->bytes * scale * samples;
  return counts_ns(c, e, scale, samples, *bytes);
}

double ds_legacy_cast_ew_ns(const struct ds_compute *c, const struct ds_layer *l, int64_t batch,
                            double *bytes) {
  *bytes = 0;
  if (c->amp == DS_AMP_NONE || !ds_compute_autocast_traffic(c, l) || l->amp_cast_ew_bytes <= 0)
    return 0;
  if (!ds_compute_knows_sms(c)) {
    ds_compute_charge_model(c, DS_KM_MIXED_EW, 0);
    return 0;
  }
  double b = (double)batch;
  *bytes = l->amp_cast_ew_bytes * b;
  double sm_ns = l->amp_cast_ew_elems * b * DS_LEGACY_UNROLLED_CAST_CYCLES /
                     ((double)c->sms * c->sm_clock_hz) * 1e9 +
                 c->params.kernel_overhead_ns;
  double roofline = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, *bytes);
  ds_compute_charge_model(c, DS_KM_MIXED_EW, sm_ns > roofline);
  return sm_ns > roofline ? sm_ns : roofline;
}
