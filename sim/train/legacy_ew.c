/* Elementwise kernels off PyTorch's vectorised path (legacy_ew.h). */
#include "sim/train/legacy_ew.h"

#include <string.h>

#include "sim/train/compute.h"

static const char *const pass_keys[] = {"fwd", "bwd", "accum", NULL};
static const char *const layout_keys[] = {"legacy_ew", "nhwc_legacy_ew"};

static ds_status read_triple(const struct ds_cnode *node, struct ds_legacy_ew *out,
                             struct ds_err *err) {
  static const char what[] = "[bytes, strided operand-elements, transposed "
                             "operand-elements]";
  double *fields[] = {&out->bytes, &out->strided_elems, &out->transposed_elems};
  struct ds_cnode item;
  size_t len;
  if (!ds_cnode_is_seq(node)) return ds_cnode_error(node, err, "expected %s", what);
  DS_CHECK(ds_cseq_len(node, &len, err));
  if (len != 3) return ds_cnode_error(node, err, "expected %s, got %zu numbers", what, len);
  for (size_t i = 0; i < 3; i++) {
    int64_t v;
    DS_CHECK(ds_cseq_at(node, i, &item, err));
    DS_CHECK(ds_cnode_int_range(&item, 0, DS_MODEL_COUNT_MAX, &v, err));
    *fields[i] = (double)v;
  }
  return DS_OK;
}

ds_status ds_legacy_ew_read(const struct ds_cnode *item, struct ds_layer *l, struct ds_err *err) {
  memset(l->legacy, 0, sizeof l->legacy);
  for (int layout = 0; layout < 2; layout++) {
    struct ds_cnode map, node;
    if (!ds_cmap_get(item, layout_keys[layout], &map)) continue;
    if (!ds_cnode_is_map(&map))
      return ds_cnode_error(&map, err, "expected %s as a map of fwd, bwd, accum to [bytes, "
                            "strided operand-elements, transposed operand-elements]",
                            layout_keys[layout]);
    DS_CHECK(ds_cmap_check_keys(&map, pass_keys, err));
    for (int p = 0; p < DS_LEGACY_PASSES; p++)
      if (ds_cmap_get(&map, pass_keys[p], &node))
        DS_CHECK(read_triple(&node, &l->legacy[layout][p], err));
  }
  return DS_OK;
}

double ds_legacy_ew_ns(const struct ds_compute *c, const struct ds_layer *l,
                       enum ds_legacy_pass p, int64_t batch, double *bytes) {
  const struct ds_legacy_ew *e = &l->legacy[c->channels_last ? 1 : 0][p];
  *bytes = 0;
  if (c->sms <= 0 || c->sm_clock_hz <= 0 || e->bytes <= 0) return 0;
  double b = (double)batch;
  *bytes = e->bytes * (c->precision.act_bytes / 4.0) * b;
  double cycles = (e->strided_elems * DS_LEGACY_STRIDED_CYCLES +
                   e->transposed_elems * DS_LEGACY_TRANSPOSED_CYCLES) * b;
  /* a kernel of their own: the launch overhead either way */
  double sm_ns = cycles / ((double)c->sms * c->sm_clock_hz) * 1e9 + c->params.kernel_overhead_ns;
  double roofline = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, *bytes);
  return sm_ns > roofline ? sm_ns : roofline;
}
