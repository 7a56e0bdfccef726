/*
 * The model file's keys of a layer's op geometry, which the kernel models
 * price by: a grouped convolution's groups, stride and weight shape, an
 * attention core's parts, a max-pool's window, a layer norm's rows and an
 * embedding's lookups and row length (and bytes_per: an embedding of
 * shared ids gives its bytes per step). Each read after the layer's class,
 * on the class it is for.
 */
#include "sim/train/model_impl.h"

#include <string.h>

#include "base/config.h"

/* An optional integer key from min to max, into *out (left as it is when
 * absent). */
static ds_status read_small_int(const struct ds_cnode *item, const char *key, int64_t min,
                                int64_t max, int32_t *out, struct ds_err *err) {
  struct ds_cnode node;
  int64_t v;
  if (!ds_cmap_get(item, key, &node)) return DS_OK;
  DS_CHECK(ds_cnode_int_range(&node, min, max, &v, err));
  *out = (int32_t)v;
  return DS_OK;
}

/* Optional groups with stride (model.h), on a conv-class layer only. */
ds_status ds__model_read_conv_groups(const struct ds_cnode *item, struct ds_layer *l,
                                     struct ds_err *err) {
  struct ds_cnode node;
  l->conv_groups = l->conv_stride = 1;
  int has = ds_cmap_get(item, "groups", &node);
  if (ds_cmap_get(item, "stride", &node) != has)
    return ds_cnode_error(item, err, "expected groups and stride together");
  if (!has) return DS_OK;
  if (l->cls != DS_LAYER_CONV)
    return ds_cnode_error(&node, err, "groups and stride are for grouped convolutions (class: "
                          "conv); this layer's class is %s", ds_layer_class_name(l->cls));
  DS_CHECK(read_small_int(item, "groups", 2, 1 << 20, &l->conv_groups, err));
  return read_small_int(item, "stride", 1, 64, &l->conv_stride, err);
}

/* A convolution's geometry from its 4-d weight (model.h): required of a
 * grouped one; a dense one without a shaped 4-d weight keeps 0s. */
ds_status ds__model_grouped_conv_weight(const struct ds_model *m, const struct ds_cnode *item,
                                        struct ds_layer *l, struct ds_err *err) {
  l->conv_out_channels = l->conv_group_width = l->conv_kernel_area = 0;
  if (l->cls != DS_LAYER_CONV) return DS_OK;
  for (int32_t k = 0; k < l->param_count; k++) {
    const struct ds_param *w = &m->params[l->param_first + k];
    if (w->ndim != 4 || w->rows <= 0 || w->dim1 <= 0) continue;
    l->conv_out_channels = w->rows;
    l->conv_group_width = w->dim1;
    l->conv_kernel_area = w->numel / (w->rows * w->dim1);
    if (l->conv_groups > 1 && w->rows % l->conv_groups != 0)
      return ds_cnode_error(item, err, "groups %d does not divide weight %s's %lld output "
                            "channels", l->conv_groups, w->name, (long long)w->rows);
    return DS_OK;
  }
  if (l->conv_groups <= 1) return DS_OK;
  return ds_cnode_error(item, err, "groups given, but the layer has no 4-d weight with a "
                        "shape (expected a convolution's [out, in / groups, kh, kw])");
}

/* Optional attn_products with attn_rest (model.h): each a map of fwd and
 * bwd to [kernels, FLOPs, bytes, amp bytes] (attn_rest without the FLOPs),
 * on an attention-class layer only. The products' FLOPs are the layer's
 * (at most its fwd_flops / bwd_flops) and the forward's parts, with
 * legacy_ew's, at most its op_fwd_bytes (2 bytes of slack: each count is
 * rounded per sample); the products run at least one forward kernel. */
static const char *const attn_pass_keys[] = {"fwd", "bwd", NULL};

static ds_status read_attn_part(const struct ds_cnode *item, const char *key, int n,
                                struct ds_attn_part *out, struct ds_err *err) {
  struct ds_cnode map, node;
  const char *what = n == 4 ? "[kernels, FLOPs, bytes, amp bytes]" : "[kernels, bytes, amp bytes]";
  ds_cmap_get(item, key, &map);
  if (!ds_cnode_is_map(&map))
    return ds_cnode_error(&map, err, "expected %s as a map of fwd and bwd to %s", key, what);
  DS_CHECK(ds_cmap_check_keys(&map, attn_pass_keys, err));
  for (int p = 0; p < DS_ATTN_PASSES; p++) {
    int64_t v[4];
    DS_CHECK(ds_cmap_require(&map, attn_pass_keys[p], what, &node, err));
    /* the last two, bytes and amp bytes, are byte counts */
    DS_CHECK(ds_model_read_counts(&node, what, (size_t)n, 3u << (n - 2), v, err));
    out[p].kernels = (double)v[0];
    out[p].flops = n == 4 ? (double)v[1] : 0;
    out[p].bytes = (double)v[n - 2];
    out[p].amp_bytes = (double)v[n - 1];
  }
  return DS_OK;
}

ds_status ds__model_read_attn_parts(const struct ds_cnode *item, struct ds_layer *l,
                                    struct ds_err *err) {
  struct ds_cnode node, rest;
  memset(l->attn_products, 0, sizeof l->attn_products);
  memset(l->attn_rest, 0, sizeof l->attn_rest);
  int has = ds_cmap_get(item, "attn_products", &node);
  if (ds_cmap_get(item, "attn_rest", &rest) != has)
    return ds_cnode_error(item, err, "expected attn_products and attn_rest together");
  if (!has) return DS_OK;
  if (l->cls != DS_LAYER_ATTENTION)
    return ds_cnode_error(&node, err, "attn_products and attn_rest are for attention cores "
                          "(class: attention); this layer's class is %s",
                          ds_layer_class_name(l->cls));
  DS_CHECK(read_attn_part(item, "attn_products", 4, l->attn_products, err));
  DS_CHECK(read_attn_part(item, "attn_rest", 3, l->attn_rest, err));
  const struct ds_attn_part *p = l->attn_products, *r = l->attn_rest;
  if (p[DS_ATTN_FWD].kernels < 1)
    return ds_cnode_error(&node, err, "expected at least one fwd kernel in attn_products");
  /* a part's FLOPs or bytes run in kernels: none would drop them */
  static const char *const pass_names[DS_ATTN_PASSES] = {"fwd", "bwd"};
  for (int k = 0; k < DS_ATTN_PASSES; k++) {
    if (p[k].kernels < 1 && (p[k].flops > 0 || p[k].bytes > 0 || p[k].amp_bytes > 0))
      return ds_cnode_error(&node, err, "expected at least one %s kernel in attn_products "
                            "where it has FLOPs or bytes", pass_names[k]);
    if (r[k].kernels < 1 && (r[k].bytes > 0 || r[k].amp_bytes > 0))
      return ds_cnode_error(&rest, err, "expected at least one %s kernel in attn_rest where "
                            "it has bytes", pass_names[k]);
  }
  if (p[DS_ATTN_FWD].flops > l->fwd_flops || p[DS_ATTN_BWD].flops > l->bwd_flops)
    return ds_cnode_error(&node, err, "expected attn_products' FLOPs at most the layer's "
                          "fwd_flops (%.17g) and bwd_flops (%.17g), got %.17g and %.17g",
                          l->fwd_flops, l->bwd_flops, p[DS_ATTN_FWD].flops,
                          p[DS_ATTN_BWD].flops);
  double fwd = p[DS_ATTN_FWD].bytes + r[DS_ATTN_FWD].bytes + l->legacy[0][DS_LEGACY_FWD].bytes;
  if (fwd > ds_layer_op_fwd_bytes(l) + 2)
    return ds_cnode_error(&node, err, "expected the fwd bytes of attn_products, attn_rest "
                          "and legacy_ew together at most the layer's %s (%.17g), got %.17g",
                          l->op_fwd_bytes < 0 ? "fwd_bytes" : "op_fwd_bytes",
                          ds_layer_op_fwd_bytes(l), fwd);
  return DS_OK;
}

static const char *const pool_keys[] = {"pool_kernel", "pool_stride", "pool_padding",
                                        "pool_input"};

/* Optional max-pool geometry (model.h ds_layer.pool): the four keys
 * together, on a memory-class layer; the window, stride and padding at most
 * 1024 (PyTorch also caps the padding at half the window), the input's
 * sides at most 2^20 and its channels at most 2^24, and the window no
 * larger than the padded input (an output of at least one element). */
ds_status ds__model_read_pool(const struct ds_cnode *item, struct ds_layer *l, struct ds_err *err) {
  struct ds_cnode node[4];
  int64_t k[2], s[2], p[2], in[3];
  int has = 0;
  memset(&l->pool, 0, sizeof l->pool);
  for (int i = 0; i < 4; i++) has += ds_cmap_get(item, pool_keys[i], &node[i]);
  if (has == 0) return DS_OK;
  if (has != 4)
    return ds_cnode_error(item, err, "expected pool_kernel, pool_stride, pool_padding and "
                          "pool_input together");
  if (l->cls != DS_LAYER_MEMORY)
    return ds_cnode_error(&node[0], err, "pool_kernel is for memory-class layers (class: "
                          "memory); this layer's class is %s", ds_layer_class_name(l->cls));
  DS_CHECK(ds_cnode_int_list(&node[0], "pool_kernel [h, w]", 2, 1, 1024, k, err));
  DS_CHECK(ds_cnode_int_list(&node[1], "pool_stride [h, w]", 2, 1, 1024, s, err));
  DS_CHECK(ds_cnode_int_list(&node[2], "pool_padding [h, w]", 2, 0, 1024, p, err));
  DS_CHECK(ds_cnode_int_list(&node[3], "pool_input [C, H, W]", 3, 1, INT64_C(1) << 24, in,
                             err));
  for (int d = 0; d < 2; d++) {
    if (2 * p[d] > k[d])
      return ds_cnode_error(&node[2], err, "expected pool_padding at most half of pool_kernel "
                            "(%lld), got %lld", (long long)k[d], (long long)p[d]);
    if (in[1 + d] > (1 << 20))
      return ds_cnode_error(&node[3], err, "expected the input's sides at most %d, got %lld",
                            1 << 20, (long long)in[1 + d]);
    if (in[1 + d] + 2 * p[d] < k[d])
      return ds_cnode_error(&node[0], err, "expected pool_kernel at most the padded input "
                            "(%lld), got %lld", (long long)(in[1 + d] + 2 * p[d]),
                            (long long)k[d]);
    l->pool.kernel[d] = (int32_t)k[d];
    l->pool.stride[d] = (int32_t)s[d];
    l->pool.padding[d] = (int32_t)p[d];
  }
  l->pool.channels = in[0];
  l->pool.height = in[1];
  l->pool.width = in[2];
  return DS_OK;
}

/* Optional layer_norm [rows per sample, N] (model.h ln_rows, ln_cols), on
 * a memory-class layer; rows at most 2^31 (CUDA's grid) and N at most 2^24
 * (the vectorised kernels' float count). */
ds_status ds__model_read_layer_norm(const struct ds_cnode *item, struct ds_layer *l,
                                    struct ds_err *err) {
  struct ds_cnode node;
  int64_t v[2];
  l->ln_rows = l->ln_cols = 0;
  if (!ds_cmap_get(item, "layer_norm", &node)) return DS_OK;
  if (l->cls != DS_LAYER_MEMORY)
    return ds_cnode_error(&node, err, "layer_norm is for memory-class layers (class: memory); "
                          "this layer's class is %s", ds_layer_class_name(l->cls));
  /* one normalisation or pool a layer: compute_layer.c prices a layer's
   * pass by the first of them it finds and would drop the others */
  if (l->pool.kernel[0] > 0)
    return ds_cnode_error(&node, err, "expected layer_norm or pool_kernel on one layer, not "
                          "both (a layer runs one op: layer norm or a max-pool)");
  DS_CHECK(ds_cnode_int_list(&node, "layer_norm [rows, N]", 2, 1, INT64_C(1) << 31, v, err));
  if (v[1] > (INT64_C(1) << 24))
    return ds_cnode_error(&node, err, "expected layer_norm's N at most %lld, got %lld",
                          (long long)(INT64_C(1) << 24), (long long)v[1]);
  l->ln_rows = v[0];
  l->ln_cols = v[1];
  return DS_OK;
}

/* Optional embedding [lookups per sample, D] or [lookups per sample, D,
 * lookups per step] (model.h embed_lookups, embed_step_lookups,
 * embed_dim), on a memory-class layer whose one parameter holds rows of D
 * elements (its shape's second dimension where the file gives one), with
 * at least one lookup. Called after read_params. */
ds_status ds__model_read_embedding(const struct ds_model *m, const struct ds_cnode *item,
                                   struct ds_layer *l, struct ds_err *err) {
  struct ds_cnode node;
  int64_t v[3] = {0, 0, 0};
  size_t n = 2;
  l->embed_lookups = l->embed_step_lookups = l->embed_dim = 0;
  if (!ds_cmap_get(item, "embedding", &node)) return DS_OK;
  if (l->cls != DS_LAYER_MEMORY)
    return ds_cnode_error(&node, err, "embedding is for memory-class layers (class: memory); "
                          "this layer's class is %s", ds_layer_class_name(l->cls));
  if (l->param_count != 1)
    return ds_cnode_error(&node, err, "expected embedding on a layer of one parameter (its "
                          "table), got %d", (int)l->param_count);
  const struct ds_param *w = &m->params[l->param_first];
  const char *what = "embedding [lookups per sample, D] or [lookups per sample, D, lookups "
                     "per step]";
  if (ds_cnode_is_seq(&node)) DS_CHECK(ds_cseq_len(&node, &n, err));
  DS_CHECK(ds_cnode_int_list(&node, what, n == 3 ? 3 : 2, 0, DS_MODEL_COUNT_MAX, v, err));
  if (v[1] < 1)
    return ds_cnode_error(&node, err, "expected embedding's D (its second number) at least "
                          "1, got 0");
  if (v[0] + v[2] < 1)
    return ds_cnode_error(&node, err, "expected embedding to look up at least one row (per "
                          "sample or per step), got none");
  if (w->numel % v[1] != 0 || (w->ndim >= 2 && w->dim1 != v[1]))
    return ds_cnode_error(&node, err, "expected embedding's D to be the row length of %s "
                          "(numel %lld%s), got %lld", w->name, (long long)w->numel,
                          w->ndim >= 2 ? ", shape's second dimension" : "", (long long)v[1]);
  l->embed_lookups = v[0];
  l->embed_dim = v[1];
  l->embed_step_lookups = v[2];
  return DS_OK;
}

/* Optional bytes_per: sample | step (model.h bytes_per_step): step only on
 * an embedding of ids the batch shares ([0, D, lookups per step]), of no
 * FLOPs, and without the keys other kernel models price per sample (those
 * would scale with the batch while the layer's bytes do not). */
ds_status ds__model_read_bytes_per(const struct ds_cnode *item, struct ds_layer *l,
                                   struct ds_err *err) {
  static const char *const per_sample_keys[] = {
      "legacy_ew",      "nhwc_legacy_ew",     "amp_cast_ew", "cat_copy",    "bwd_reduce_bytes",
      "bwd_copy_bytes", "bwd_row_reductions", "layer_norm",  "pool_kernel", NULL};
  struct ds_cnode node, other;
  const char *s;
  l->bytes_per_step = 0;
  if (!ds_cmap_get(item, "bytes_per", &node)) return DS_OK;
  DS_CHECK(ds_cnode_string(&node, &s, err));
  if (strcmp(s, "sample") == 0) return DS_OK;
  if (strcmp(s, "step") != 0)
    return ds_cnode_error(&node, err, "expected bytes_per sample or step, got \"%s\"", s);
  if (l->embed_dim == 0 || l->embed_lookups != 0)
    return ds_cnode_error(&node, err, "bytes_per: step is for an embedding of ids the batch "
                          "shares (embedding [0, D, lookups per step]); this layer has %s",
                          l->embed_dim == 0 ? "no embedding key" : "lookups per sample");
  if (l->fwd_flops != 0 || l->bwd_flops != 0)
    return ds_cnode_error(&node, err, "expected fwd_flops and bwd_flops 0 beside bytes_per: "
                          "step (an embedding's gather and scatter run none), got %.17g and "
                          "%.17g", l->fwd_flops, l->bwd_flops);
  for (size_t i = 0; per_sample_keys[i]; i++)
    if (ds_cmap_get(item, per_sample_keys[i], &other))
      return ds_cnode_error(&other, err, "%s is per sample; bytes_per: step (line %d) is for "
                            "an embedding whose bytes are all per step", per_sample_keys[i],
                            ds_cnode_line(&node));
  l->bytes_per_step = 1;
  return DS_OK;
}
