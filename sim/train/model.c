/*
 * Model file reader. Parameter tensors are kept in one array in
 * registration order (the order of the layers, then of each layer's list),
 * which is what DDP's bucketing walks (reversed) to assign gradients.
 */
#include "sim/train/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "sim/net/file_kinds.h"
#include "sim/train/cast_reduce.h"
#include "sim/train/legacy_ew.h"
#include "sim/train/cat_copy.h"

static const char *const buffer_keys[] = {"name", "numel", "bytes", "dtype", NULL};
static const char *const layer_keys[] = {"name", "fwd_flops", "bwd_flops",
                                         "fwd_bytes", "act_bytes", "act_int_bytes",
                                         "amp_act_bytes", "params",
                                         "class", "op_fwd_bytes", "amp_fwd_bytes", "amp_cast_bytes",
                                         "amp_grad_cast_bytes", "amp_upcast_bytes", "gemm_align",
                                         "bwd_reduce_bytes", "bwd_row_reductions",
                                         "bwd_copy_bytes", "bwd_bytes", "amp_bwd_bytes",
                                         "bwd_accum_bytes", "amp_bwd_accum_bytes",
                                         "host_ops", "host_dispatches", "host_nodes",
                                         "host_amp_casts", "host_amp_nodes", "host_syncs",
                                         "groups", "stride",
                                         "pool_kernel", "pool_stride", "pool_padding", "pool_input",
                                         "layer_norm", "legacy_ew", "nhwc_legacy_ew", "attn_products",
                                         "attn_rest", "cat_copy", "tied_params", "amp_cast_ew", NULL};
static const char *const param_keys[] = {"name", "numel", "shape", NULL};

int ds_optimizer_states(enum ds_optimizer opt) {
  return opt == DS_OPT_ADAM ? 2 : opt == DS_OPT_NONE ? 0 : 1;
}

const char *ds_optimizer_name(enum ds_optimizer opt) {
  return opt == DS_OPT_ADAM ? "adam" : opt == DS_OPT_NONE ? "none" : "sgd";
}

static const char *const class_names[] = {"unknown", "conv", "matmul", "attention",
                                          "memory"};

const char *ds_layer_class_name(enum ds_layer_class cls) {
  return (unsigned)cls < sizeof class_names / sizeof *class_names ? class_names[cls]
                                                                  : "unknown";
}

int ds_layer_input_grad(const struct ds_layer *l) {
  return !((l->cls == DS_LAYER_CONV || l->cls == DS_LAYER_MATMUL) && l->fwd_flops > 0 &&
           l->bwd_flops <= 1.5 * l->fwd_flops);
}

int ds_layer_attn_parts(const struct ds_layer *l) {
  return l->attn_products[DS_ATTN_FWD].kernels > 0;
}

int ds_layer_autocast_casts_weights(const struct ds_layer *l) {
  return l->cls != DS_LAYER_MEMORY;
}

double ds_layer_op_fwd_bytes(const struct ds_layer *l) {
  return l->op_fwd_bytes >= 0 ? l->op_fwd_bytes : l->fwd_bytes;
}

/* class: conv | matmul | attention | memory (optional; unknown when absent). */
static ds_status read_class(const struct ds_cnode *layer, enum ds_layer_class *out,
                            struct ds_err *err) {
  struct ds_cnode node;
  const char *s;
  *out = DS_LAYER_UNKNOWN;
  if (!ds_cmap_get(layer, "class", &node)) return DS_OK;
  DS_CHECK(ds_cnode_string(&node, &s, err));
  for (int c = DS_LAYER_CONV; c <= DS_LAYER_MEMORY; c++)
    if (strcmp(s, class_names[c]) == 0) {
      *out = (enum ds_layer_class)c;
      return DS_OK;
    }
  return ds_cnode_error(&node, err, "expected conv, matmul, attention or memory, got \"%s\"",
                        s);
}

/* Optional gemm_align: 1, 2, 4 or 8 (elements); DS_GEMM_ALIGNED when absent. */
static ds_status read_gemm_align(const struct ds_cnode *layer, int32_t *out,
                                 struct ds_err *err) {
  struct ds_cnode node;
  int64_t v;
  *out = DS_GEMM_ALIGNED;
  if (!ds_cmap_get(layer, "gemm_align", &node)) return DS_OK;
  DS_CHECK(ds_cnode_int64(&node, &v, err));
  if (v != 1 && v != 2 && v != 4 && v != 8)
    return ds_cnode_error(&node, err, "expected gemm_align 1, 2, 4 or 8 (elements), got %lld",
                          (long long)v);
  *out = (int32_t)v;
  return DS_OK;
}

static ds_status read_nonneg(const struct ds_cnode *map, const char *key,
                             double *out, struct ds_err *err) {
  struct ds_cnode node;
  int64_t v;
  DS_CHECK(ds_cmap_require(map, key, "a non-negative integer", &node, err));
  ds_status st = ds_cnode_int_range(&node, 0, DS_MODEL_COUNT_MAX, &v, err);
  /* A size here is a plain count of bytes per sample, as
   * tools/export_model.py writes it, never "12MiB" as a topology's sizes
   * are: the message says so where the key is one (the file's *_bytes) */
  size_t n = strlen(key), k = strlen("_bytes");
  if (st != DS_OK && err && n > k && strcmp(key + n - k, "_bytes") == 0) {
    size_t used = strlen(err->msg);
    snprintf(err->msg + used, sizeof err->msg - used,
             ": integer bytes per sample, without a unit (12582912, not 12MiB; "
             "docs/models.md)");
  }
  DS_CHECK(st);
  *out = (double)v;
  return DS_OK;
}

static ds_status read_string(const struct ds_cnode *map, const char *key,
                             const char *what, char **out, struct ds_err *err) {
  struct ds_cnode node;
  const char *s;
  DS_CHECK(ds_cmap_require(map, key, what, &node, err));
  DS_CHECK(ds_cnode_string(&node, &s, err));
  if (s[0] == '\0') return ds_cnode_error(&node, err, "expected %s, got \"\"", what);
  *out = strdup(s);
  return *out ? DS_OK : DS_ENOMEM;
}

/* shape: [d0, d1, ...], positive integers whose product is numel. */
static ds_status read_shape(const struct ds_cnode *seq, struct ds_param *p,
                            struct ds_err *err) {
  struct ds_cnode item;
  size_t n;
  int64_t prod = 1, d;
  if (!ds_cnode_is_seq(seq))
    return ds_cnode_error(seq, err, "expected a list of dimensions like [768, 3072]");
  DS_CHECK(ds_cseq_len(seq, &n, err));
  if (n == 0 || n > 8)
    return ds_cnode_error(seq, err, "expected 1 to 8 dimensions, got %zu", n);
  for (size_t i = 0; i < n; i++) {
    DS_CHECK(ds_cseq_at(seq, i, &item, err));
    DS_CHECK(ds_cnode_int_range(&item, 1, p->numel, &d, err)); /* a dimension, at most numel */
    if (i == 0) p->rows = d;
    if (i == 1) p->dim1 = d;
    if (d > p->numel / prod) { /* the product would pass numel (or overflow) */
      prod = 0;
      break;
    }
    prod *= d;
  }
  if (prod != p->numel)
    return ds_cnode_error(seq, err, "the dimensions' product is not numel %lld",
                          (long long)p->numel);
  p->ndim = (int32_t)n;
  return DS_OK;
}

static ds_status read_params(struct ds_model *m, const struct ds_cnode *layer,
                             struct ds_layer *l, int32_t li, size_t *cap,
                             struct ds_err *err) {
  struct ds_cnode seq, item, node;
  size_t n;
  DS_CHECK(ds_cmap_require(layer, "params", "a sequence of {name, numel} (or [])",
                           &seq, err));
  DS_CHECK(ds_cseq_len(&seq, &n, err));
  l->param_first = m->n_params;
  for (size_t i = 0; i < n; i++) {
    DS_CHECK(ds_cseq_at(&seq, i, &item, err));
    DS_CHECK(ds_cmap_check_keys(&item, param_keys, err));
    if ((size_t)m->n_params == *cap) {
      size_t nc = *cap ? 2 * *cap : 64;
      struct ds_param *p = realloc(m->params, nc * sizeof *p);
      if (!p) return DS_ENOMEM;
      m->params = p;
      *cap = nc;
    }
    struct ds_param *p = &m->params[m->n_params];
    memset(p, 0, sizeof *p);
    m->n_params++; /* counted now so ds_model_free releases the name */
    DS_CHECK(read_string(&item, "name", "a tensor name", &p->name, err));
    DS_CHECK(ds_cmap_require(&item, "numel", "a positive integer", &node, err));
    DS_CHECK(ds_cnode_int_range(&node, 1, INT64_MAX, &p->numel, err));
    if (ds_cmap_get(&item, "shape", &node)) DS_CHECK(read_shape(&node, p, err));
    p->layer = li;
    l->param_numel += p->numel;
    m->total_numel += p->numel;
  }
  l->param_count = m->n_params - l->param_first;
  return DS_OK;
}

/* A parameter's name and index, sorted by name to look names up. */
struct named_param {
  const char *name;
  int32_t index;
};

static int by_name(const void *a, const void *b) {
  return strcmp(((const struct named_param *)a)->name, ((const struct named_param *)b)->name);
}

static int by_name_then_index(const void *a, const void *b) {
  const struct named_param *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* The first repeated name among n names (PyTorch's module, parameter and
 * buffer names are unique paths: named_modules(), named_parameters(),
 * named_buffers()): 1 with *first and *again the indices of its first and
 * second use, the second use the earliest of any repeat; 0 when all
 * differ; -1 out of memory. */
static int first_repeat(const char *const *names, int32_t n, int32_t *first, int32_t *again) {
  struct named_param *by = malloc(((size_t)n + 1) * sizeof *by);
  if (!by) return -1;
  for (int32_t i = 0; i < n; i++) by[i] = (struct named_param){names[i], i};
  qsort(by, (size_t)n, sizeof *by, by_name_then_index);
  int found = 0;
  for (int32_t i = 1; i < n; i++)
    if (strcmp(by[i].name, by[i - 1].name) == 0 && (i < 2 || strcmp(by[i - 2].name, by[i].name)) &&
        (!found || by[i].index < *again)) {
      *first = by[i - 1].index;
      *again = by[i].index;
      found = 1;
    }
  free(by);
  return found;
}

/* The layer named by a buffer NAME.SUFFIX: a module's layer only, which
 * the exporter gives its BatchNorm class memory; NULL when none. */
static struct ds_layer *buffer_owner(struct ds_model *m, const char *buffer,
                                     const char *suffix) {
  size_t n = strlen(buffer), k = strlen(suffix);
  if (n <= k || strcmp(buffer + n - k, suffix) != 0) return NULL;
  for (int32_t i = 0; i < m->n_layers; i++) {
    struct ds_layer *l = &m->layers[i];
    if (strlen(l->name) == n - k && strncmp(l->name, buffer, n - k) == 0 &&
        (l->cls == DS_LAYER_MEMORY || l->cls == DS_LAYER_UNKNOWN))
      return l;
  }
  return NULL;
}

/* A buffer LAYER.running_mean marks the layer LAYER (a module call) as a
 * BatchNorm of numel channels (model.h bn_channels); a buffer
 * LAYER.num_batches_tracked as one whose training forward counts its
 * batches (model.h bn_tracks_batches; norm.c charges it only where LAYER
 * is a BatchNorm too). */
static void mark_batch_norm(struct ds_model *m, const char *buffer, int64_t numel) {
  struct ds_layer *l = buffer_owner(m, buffer, ".running_mean");
  if (l) l->bn_channels = numel;
  l = buffer_owner(m, buffer, ".num_batches_tracked");
  if (l) l->bn_tracks_batches = 1;
}

/* PyTorch's dtypes as str(torch.dtype) names them without "torch." (the
 * exporter's spelling; the torch.dtype objects of torch 2.15's namespace):
 * an unknown name would open a broadcast bucket of its own (ddp.c). */
static int known_dtype(const char *s) {
  static const char *const names[] = {
      "float32", "float64", "float16", "bfloat16", "complex32", "complex64", "complex128",
      "bcomplex32", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
      "bool", "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "float8_e4m3fn",
      "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
      "float4_e2m1fn_x2", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16", "int1", "int2",
      "int3", "int4", "int5", "int6", "int7", "uint1", "uint2", "uint3", "uint4", "uint5",
      "uint6", "uint7"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(s, names[i]) == 0) return 1;
  return 0;
}

/* buffers: [{name, numel, bytes, dtype}, ...], bytes a whole number of
 * bytes per element. */
static ds_status read_buffers(struct ds_model *m, const struct ds_cnode *seq,
                              struct ds_err *err) {
  struct ds_cnode item, node, first_node;
  size_t n;
  DS_CHECK(ds_cseq_len(seq, &n, err));
  m->buffers = calloc(n + 1, sizeof *m->buffers);
  const char **names = calloc(n + 1, sizeof *names); /* borrowed from the document */
  ds_status st = DS_ENOMEM;
  if (!m->buffers || !names) goto out;
  for (size_t i = 0; i < n; i++) {
    struct ds_buffer *b = &m->buffers[i];
    const char *s;
    DS_CHECK_GOTO(ds_cseq_at(seq, i, &item, err), st, out);
    DS_CHECK_GOTO(ds_cmap_check_keys(&item, buffer_keys, err), st, out);
    DS_CHECK_GOTO(ds_cmap_require(&item, "name", "a buffer name", &node, err), st, out);
    DS_CHECK_GOTO(ds_cnode_string(&node, &names[i], err), st, out);
    DS_CHECK_GOTO(ds_cmap_require(&item, "numel", "a non-negative integer", &node, err), st,
                  out);
    DS_CHECK_GOTO(ds_cnode_int_range(&node, 0, INT64_MAX, &b->numel, err), st, out);
    DS_CHECK_GOTO(read_nonneg(&item, "bytes", &b->bytes, err), st, out);
    DS_CHECK_GOTO(ds_cmap_require(&item, "bytes", "a non-negative integer", &node, err), st,
                  out);
    if (b->numel > 0 && (fmod(b->bytes, (double)b->numel) != 0 || b->bytes < b->numel)) {
      st = ds_cnode_error(&node, err, "expected bytes a whole multiple (>= 1) of numel %lld, "
                          "got %.0f", (long long)b->numel, b->bytes);
      goto out;
    }
    DS_CHECK_GOTO(ds_cmap_require(&item, "dtype", "a dtype name such as float32", &node, err),
                  st, out);
    DS_CHECK_GOTO(ds_cnode_string(&node, &s, err), st, out);
    if (!known_dtype(s)) {
      st = ds_cnode_error(&node, err, "expected one of PyTorch's dtype names (float32, "
                          "float16, bfloat16, int64, ...: str(torch.dtype) without "
                          "\"torch.\"), got \"%s\"", s);
      goto out;
    }
    strcpy(b->dtype, s);
    m->n_buffers++;
  }
  int32_t first = 0, again = 0;
  int hit = first_repeat(names, (int32_t)n, &first, &again);
  if (hit < 0) goto out; /* st is DS_ENOMEM */
  if (hit > 0) {
    DS_CHECK_GOTO(ds_cseq_at(seq, (size_t)first, &item, err), st, out);
    DS_CHECK_GOTO(ds_cmap_require(&item, "name", "a buffer name", &first_node, err), st, out);
    DS_CHECK_GOTO(ds_cseq_at(seq, (size_t)again, &item, err), st, out);
    DS_CHECK_GOTO(ds_cmap_require(&item, "name", "a buffer name", &node, err), st, out);
    st = ds_cnode_error(&node, err, "buffer \"%s\" already given at line %d (names are "
                        "unique, as PyTorch's named_buffers() are)", names[again],
                        ds_cnode_line(&first_node));
    goto out;
  }
  for (size_t i = 0; i < n; i++) mark_batch_norm(m, names[i], m->buffers[i].numel);
  st = DS_OK;
out:
  free(names);
  return st;
}

/* Every layer with layer_norm (read_layer_norm) once the buffers are read:
 * none a BatchNorm too (a LAYER.running_mean buffer, mark_batch_norm). */
static ds_status check_layer_norms(const struct ds_model *m, const struct ds_cnode *layers,
                                   struct ds_err *err) {
  for (int32_t i = 0; i < m->n_layers; i++) {
    const struct ds_layer *l = &m->layers[i];
    if (l->ln_rows == 0 || l->bn_channels == 0) continue;
    struct ds_cnode item, node;
    DS_CHECK(ds_cseq_at(layers, (size_t)i, &item, err));
    if (!ds_cmap_get(&item, "layer_norm", &node)) continue;
    return ds_cnode_error(&node, err, "expected layer_norm on a layer that is not a batch norm, "
                          "but buffer %s.running_mean makes layer \"%s\" one (a layer runs "
                          "one op: layer norm or batch norm)", l->name, l->name);
  }
  return DS_OK;
}

/* A list of every parameter's name once (grad_ready, registration) into
 * *out: the parameters' indices in the list's order. */
static ds_status read_name_list(struct ds_model *m, const struct ds_cnode *seq,
                                int32_t **out, struct ds_err *err) {
  size_t n;
  if (!ds_cnode_is_seq(seq))
    return ds_cnode_error(seq, err, "expected a list of parameter names");
  ds_status st = ds_cseq_len(seq, &n, err);
  if (st != DS_OK) return st;
  if (n != (size_t)m->n_params)
    return ds_cnode_error(seq, err, "expected every one of the %d parameter names once, "
                          "got %zu names", m->n_params, n);
  struct named_param *by = malloc((size_t)m->n_params * sizeof *by);
  char *seen = calloc((size_t)m->n_params, 1);
  *out = malloc((size_t)m->n_params * sizeof **out);
  if (!by || !seen || !*out) { st = DS_ENOMEM; goto out; }
  for (int32_t i = 0; i < m->n_params; i++) by[i] = (struct named_param){m->params[i].name, i};
  qsort(by, (size_t)m->n_params, sizeof *by, by_name);
  for (size_t i = 0; i < n; i++) {
    struct ds_cnode item;
    const char *name;
    DS_CHECK_GOTO(ds_cseq_at(seq, i, &item, err), st, out);
    DS_CHECK_GOTO(ds_cnode_string(&item, &name, err), st, out);
    struct named_param key = {name, -1};
    const struct named_param *hit = bsearch(&key, by, (size_t)m->n_params, sizeof *by, by_name);
    int32_t found = hit ? hit->index : -1;
    if (found < 0) {
      st = ds_cnode_error(&item, err, "expected a parameter name of this model, got \"%s\"",
                          name);
      goto out;
    }
    if (seen[found]) {
      st = ds_cnode_error(&item, err, "parameter \"%s\" is listed twice", name);
      goto out;
    }
    seen[found] = 1;
    (*out)[i] = found;
  }
  st = DS_OK;
out:
  free(by);
  free(seen);
  return st;
}

/* Every layer's tied_params (model.h), once all parameters are known: each
 * a parameter of an earlier layer, named once per layer; sets
 * tied_cast_numel and tied_cast_count. */
static ds_status read_tied(struct ds_model *m, const struct ds_cnode *layers,
                           struct ds_err *err) {
  char *cast = calloc((size_t)m->n_params + 1, 1); /* cast by a tied use already */
  if (!cast) return DS_ENOMEM;
  ds_status st = DS_OK;
  for (int32_t l = 0; l < m->n_layers; l++) {
    struct ds_cnode item, seq, name_node;
    size_t n;
    DS_CHECK_GOTO(ds_cseq_at(layers, (size_t)l, &item, err), st, out);
    if (!ds_cmap_get(&item, "tied_params", &seq)) continue;
    if (!ds_cnode_is_seq(&seq)) {
      st = ds_cnode_error(&seq, err, "expected a list of parameter names of earlier layers");
      goto out;
    }
    DS_CHECK_GOTO(ds_cseq_len(&seq, &n, err), st, out);
    struct ds_layer *ly = &m->layers[l];
    for (size_t k = 0; k < n; k++) {
      const char *name;
      DS_CHECK_GOTO(ds_cseq_at(&seq, k, &name_node, err), st, out);
      DS_CHECK_GOTO(ds_cnode_string(&name_node, &name, err), st, out);
      int32_t p = -1;
      for (int32_t i = 0; i < m->n_params && p < 0; i++)
        if (strcmp(m->params[i].name, name) == 0) p = i;
      if (p < 0 || m->params[p].layer >= l) {
        st = ds_cnode_error(&name_node, err,
                            "expected the name of a parameter listed under an earlier "
                            "layer's params, got \"%s\"%s", name,
                            p < 0 ? "" : " (listed under this layer or a later one)");
        goto out;
      }
      for (size_t j = 0; j < k; j++) {
        struct ds_cnode other;
        const char *o;
        DS_CHECK_GOTO(ds_cseq_at(&seq, j, &other, err), st, out);
        DS_CHECK_GOTO(ds_cnode_string(&other, &o, err), st, out);
        if (strcmp(o, name) == 0) {
          st = ds_cnode_error(&name_node, err, "parameter \"%s\" is listed twice", name);
          goto out;
        }
      }
      if (!ds_layer_autocast_casts_weights(ly) || cast[p] ||
          ds_layer_autocast_casts_weights(&m->layers[m->params[p].layer]))
        continue;
      cast[p] = 1;
      ly->tied_cast_numel += m->params[p].numel;
      ly->tied_cast_count++;
    }
  }
out:
  free(cast);
  return st;
}

int32_t ds_model_registered(const struct ds_model *m, int32_t i) {
  return m->registration ? m->registration[i] : i;
}

int32_t ds_model_registration_index(const struct ds_model *m, int32_t p) {
  return m->registration_index ? m->registration_index[p] : p;
}

/* Optional keys that come together (2 or 3 of them): all absent (the
 * fields keep the caller's defaults) or all present, each a non-negative
 * integer; one without the others is refused, naming them ("expected a, b
 * and c together"). */
static ds_status read_together(const struct ds_cnode *item, const char *const *keys,
                               double *const *fields, int n, struct ds_err *err) {
  struct ds_cnode node;
  int has = ds_cmap_get(item, keys[0], &node);
  for (int k = 1; k < n; k++)
    if (ds_cmap_get(item, keys[k], &node) != has)
      return n == 2 ? ds_cnode_error(item, err, "expected %s and %s together", keys[0], keys[1])
                    : ds_cnode_error(item, err, "expected %s, %s and %s together", keys[0],
                                     keys[1], keys[2]);
  for (int k = 0; k < n && has; k++) DS_CHECK(read_nonneg(item, keys[k], fields[k], err));
  return DS_OK;
}

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
static ds_status read_conv_groups(const struct ds_cnode *item, struct ds_layer *l,
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
static ds_status grouped_conv_weight(const struct ds_model *m, const struct ds_cnode *item,
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

/* Optional pairs (model.h): bwd_bytes with amp_bwd_bytes, on a memory-class
 * layer only (the simulator uses them there); bwd_accum_bytes with
 * amp_bwd_accum_bytes, on any layer. */

static ds_status read_bwd_bytes(const struct ds_cnode *item, struct ds_layer *l, struct ds_err *err) {
  struct ds_cnode node;
  l->bwd_bytes = l->amp_bwd_bytes = -1;
  l->bwd_accum_bytes = l->amp_bwd_accum_bytes = 0;
  if (ds_cmap_get(item, "bwd_bytes", &node) && l->cls != DS_LAYER_MEMORY)
    return ds_cnode_error(&node, err, "bwd_bytes is for memory-class layers (class: memory); "
                          "this layer's class is %s", ds_layer_class_name(l->cls));
  DS_CHECK(read_together(item, (const char *const[]){"bwd_bytes", "amp_bwd_bytes"},
                         (double *const[]){&l->bwd_bytes, &l->amp_bwd_bytes}, 2, err));
  return read_together(item, (const char *const[]){"bwd_accum_bytes", "amp_bwd_accum_bytes"},
                       (double *const[]){&l->bwd_accum_bytes, &l->amp_bwd_accum_bytes}, 2,
                       err);
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
    DS_CHECK(ds_cnode_key_under(&map, &node, err));
    DS_CHECK(ds_cnode_int_list(&node, what, (size_t)n, 0, DS_MODEL_COUNT_MAX, v, err));
    out[p].kernels = (double)v[0];
    out[p].flops = n == 4 ? (double)v[1] : 0;
    out[p].bytes = (double)v[n - 2];
    out[p].amp_bytes = (double)v[n - 1];
  }
  return DS_OK;
}

static ds_status read_attn_parts(const struct ds_cnode *item, struct ds_layer *l,
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
                          "fwd_flops (%.17g) and bwd_flops (%.17g)", l->fwd_flops,
                          l->bwd_flops);
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
static ds_status read_pool(const struct ds_cnode *item, struct ds_layer *l, struct ds_err *err) {
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
static ds_status read_layer_norm(const struct ds_cnode *item, struct ds_layer *l,
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

static const char *const host_keys[] = {"host_ops", "host_nodes", "host_amp_casts",
                                        "host_amp_nodes"};

/* Optional host_dispatches (model.h): with the host counts, on every layer
 * or on none (m->host_dispatch_counts, set by layer 0); a count from 0 to
 * 1e6. */
static ds_status read_host_dispatches(struct ds_model *m, const struct ds_cnode *item,
                                      struct ds_layer *l, size_t index, struct ds_err *err) {
  struct ds_cnode node;
  int has = ds_cmap_get(item, "host_dispatches", &node);
  l->host_dispatches = 0;
  if (has && !m->host_counts)
    return ds_cnode_error(&node, err, "expected host_dispatches only with host_ops, host_nodes, "
                          "host_amp_casts and host_amp_nodes");
  if (index == 0) m->host_dispatch_counts = has;
  if (has != m->host_dispatch_counts)
    return ds_cnode_error(item, err, "expected host_dispatches on every layer or on none (the "
                          "first layer %s it)", m->host_dispatch_counts ? "has" : "lacks");
  if (!has) return DS_OK;
  int64_t v;
  DS_CHECK(ds_cnode_int_range(&node, 0, 1000000, &v, err));
  l->host_dispatches = (double)v;
  return DS_OK;
}

/* Optional host_syncs (model.h): per layer, absent means none; the syncs
 * are some of the layer's dispatches, so only with host_dispatches and at
 * most as many. */
static ds_status read_host_syncs(struct ds_model *m, const struct ds_cnode *item,
                                 struct ds_layer *l, struct ds_err *err) {
  struct ds_cnode node;
  l->host_syncs = 0;
  if (!ds_cmap_get(item, "host_syncs", &node)) return DS_OK;
  if (!m->host_dispatch_counts)
    return ds_cnode_error(&node, err, "expected host_syncs only with host_dispatches");
  int64_t v;
  DS_CHECK(ds_cnode_int_range(&node, 0, 1000000, &v, err));
  if ((double)v > l->host_dispatches)
    return ds_cnode_error(&node, err, "expected at most the layer's host_dispatches (%.0f) "
                          "host-device syncs, got %lld", l->host_dispatches, (long long)v);
  l->host_syncs = (double)v;
  return DS_OK;
}

/* The host counts of one layer (model.h): the four keys together, on every
 * layer or on none (m->host_counts is set by layer 0, the others must
 * agree). A count is a non-negative integer of at most 1e6 per iteration
 * (BERT-base's largest layer runs 16 nodes). */
static ds_status read_host_counts(struct ds_model *m, const struct ds_cnode *item,
                                  struct ds_layer *l, size_t index, struct ds_err *err) {
  struct ds_cnode node;
  double *field[] = {&l->host_ops, &l->host_nodes, &l->host_amp_casts, &l->host_amp_nodes};
  int has = 0;
  for (size_t k = 0; k < 4; k++) has += ds_cmap_get(item, host_keys[k], &node);
  if (has != 0 && has != 4)
    return ds_cnode_error(item, err, "expected host_ops, host_nodes, host_amp_casts and "
                          "host_amp_nodes together");
  if (index == 0) m->host_counts = has == 4;
  if ((has == 4) != m->host_counts)
    return ds_cnode_error(item, err, "expected host_ops, host_nodes, host_amp_casts and "
                          "host_amp_nodes on every layer or on none (the first layer %s them)",
                          m->host_counts ? "has" : "lacks");
  for (size_t k = 0; k < 4; k++) {
    *field[k] = 0;
    if (!has) continue;
    int64_t v;
    DS_CHECK(ds_cmap_require(item, host_keys[k], "a non-negative integer", &node, err));
    DS_CHECK(ds_cnode_int_range(&node, 0, 1000000, &v, err));
    *field[k] = (double)v;
  }
  DS_CHECK(read_host_dispatches(m, item, l, index, err));
  return read_host_syncs(m, item, l, err);
}

/* The YAML node of layer li's name, or of parameter pi's (pi >= 0). */
static ds_status name_node(const struct ds_model *m, const struct ds_cnode *layers, int32_t li,
                           int32_t pi, struct ds_cnode *out, struct ds_err *err) {
  struct ds_cnode item, seq;
  if (pi >= 0) li = m->params[pi].layer;
  DS_CHECK(ds_cseq_at(layers, (size_t)li, &item, err));
  if (pi >= 0) {
    DS_CHECK(ds_cmap_require(&item, "params", "a sequence of {name, numel}", &seq, err));
    DS_CHECK(ds_cseq_at(&seq, (size_t)(pi - m->layers[li].param_first), &item, err));
  }
  return ds_cmap_require(&item, "name", "a name", out, err);
}

/* Every layer name once and every parameter name once (a module's and a
 * tensor's name in PyTorch are unique paths): a repeat is refused at its
 * second use, naming the line of the first (a second layer "bn" would
 * otherwise take the first's BatchNorm buffers, mark_batch_norm). */
static ds_status check_unique_names(const struct ds_model *m, const struct ds_cnode *layers,
                                    struct ds_err *err) {
  int32_t n = m->n_layers > m->n_params ? m->n_layers : m->n_params, first = 0, again = 0;
  const char **names = malloc(((size_t)n + 1) * sizeof *names);
  if (!names) return DS_ENOMEM;
  for (int kind = 0; kind < 2; kind++) {
    int32_t count = kind == 0 ? m->n_layers : m->n_params;
    for (int32_t i = 0; i < count; i++)
      names[i] = kind == 0 ? m->layers[i].name : m->params[i].name;
    int hit = first_repeat(names, count, &first, &again);
    if (hit == 0) continue;
    free(names);
    if (hit < 0) return DS_ENOMEM;
    struct ds_cnode a, b;
    DS_CHECK(name_node(m, layers, first, kind == 0 ? -1 : first, &a, err));
    DS_CHECK(name_node(m, layers, again, kind == 0 ? -1 : again, &b, err));
    return ds_cnode_error(&b, err, "%s \"%s\" already given at line %d (names are unique, "
                          "as PyTorch's module and parameter names are)",
                          kind == 0 ? "layer" : "parameter",
                          kind == 0 ? m->layers[again].name : m->params[again].name,
                          ds_cnode_line(&a));
  }
  free(names);
  return DS_OK;
}

static ds_status load(struct ds_model *m, const char *path, struct ds_err *err) {
  struct ds_config *cfg = NULL;
  struct ds_cnode root, node, layers, item;
  size_t n_layers, param_cap = 0;
  const char *s;
  ds_status st;

  DS_CHECK_GOTO(ds_file_kind_open(path, DS_FILE_MODEL, &cfg, &root, err), st, out);
  DS_CHECK_GOTO(ds_cmap_require(&root, "name", "a model name", &node, err), st, out);
  DS_CHECK_GOTO(ds_cnode_name(&node, "a model name", &s, err), st, out);
  m->name = strdup(s);
  if (!m->name) { st = DS_ENOMEM; goto out; }
  DS_CHECK_GOTO(read_string(&root, "sample", "a description of one sample",
                            &m->sample, err), st, out);
  DS_CHECK_GOTO(ds_cmap_require(&root, "default_batch", "a positive integer",
                                &node, err), st, out);
  DS_CHECK_GOTO(ds_cnode_int_range(&node, 1, 1 << 20, &m->default_batch, err), st, out);
  DS_CHECK_GOTO(ds_cmap_require(&root, "optimizer", "sgd or adam", &node, err),
                st, out);
  DS_CHECK_GOTO(ds_cnode_string(&node, &s, err), st, out);
  if (strcmp(s, "sgd") == 0) m->optimizer = DS_OPT_SGD;
  else if (strcmp(s, "adam") == 0) m->optimizer = DS_OPT_ADAM;
  else {
    st = ds_cnode_error(&node, err, "expected sgd or adam, got \"%s\"", s);
    goto out;
  }
  DS_CHECK_GOTO(ds_cmap_require(&root, "layers", "a sequence of layers", &layers,
                                err), st, out);
  DS_CHECK_GOTO(ds_cseq_len(&layers, &n_layers, err), st, out);
  if (n_layers == 0) {
    st = ds_cnode_error(&layers, err, "expected at least one layer");
    goto out;
  }
  m->layers = calloc(n_layers, sizeof *m->layers);
  if (!m->layers) { st = DS_ENOMEM; goto out; }
  for (size_t i = 0; i < n_layers; i++) {
    struct ds_layer *l = &m->layers[i];
    m->n_layers++;
    DS_CHECK_GOTO(ds_cseq_at(&layers, i, &item, err), st, out);
    DS_CHECK_GOTO(ds_cmap_check_keys(&item, layer_keys, err), st, out);
    DS_CHECK_GOTO(read_string(&item, "name", "a layer name", &l->name, err), st, out);
    DS_CHECK_GOTO(read_nonneg(&item, "fwd_flops", &l->fwd_flops, err), st, out);
    DS_CHECK_GOTO(read_nonneg(&item, "bwd_flops", &l->bwd_flops, err), st, out);
    DS_CHECK_GOTO(read_nonneg(&item, "fwd_bytes", &l->fwd_bytes, err), st, out);
    DS_CHECK_GOTO(read_nonneg(&item, "act_bytes", &l->act_bytes, err), st, out);
    /* optional: what of it is integer, and what autocast saves (model.h) */
    l->act_int_bytes = 0;
    if (ds_cmap_get(&item, "act_int_bytes", &node)) {
      DS_CHECK_GOTO(read_nonneg(&item, "act_int_bytes", &l->act_int_bytes, err), st, out);
      if (l->act_int_bytes > l->act_bytes) {
        st = ds_cnode_error(&node, err, "expected act_int_bytes at most act_bytes (%.17g)",
                            l->act_bytes);
        goto out;
      }
    }
    l->amp_act_bytes = -1;
    if (ds_cmap_get(&item, "amp_act_bytes", &node))
      DS_CHECK_GOTO(read_nonneg(&item, "amp_act_bytes", &l->amp_act_bytes, err), st, out);
    /* optional: every op's traffic, composite modules' too (model.h) */
    l->op_fwd_bytes = -1;
    if (ds_cmap_get(&item, "op_fwd_bytes", &node))
      DS_CHECK_GOTO(read_nonneg(&item, "op_fwd_bytes", &l->op_fwd_bytes, err), st, out);
    /* optional, the three together: the traffic under autocast (model.h) */
    l->amp_fwd_bytes = -1;
    l->amp_cast_bytes = 0;
    l->amp_grad_cast_bytes = 0;
    DS_CHECK_GOTO(read_together(&item,
                                (const char *const[]){"amp_fwd_bytes", "amp_cast_bytes",
                                                      "amp_grad_cast_bytes"},
                                (double *const[]){&l->amp_fwd_bytes, &l->amp_cast_bytes,
                                                  &l->amp_grad_cast_bytes},
                                3, err),
                  st, out);
    /* optional: kernels beside the layer's math (model.h) */
    DS_CHECK_GOTO(read_gemm_align(&item, &l->gemm_align, err), st, out);
    l->bwd_reduce_bytes = l->bwd_copy_bytes = 0;
    if (ds_cmap_get(&item, "bwd_reduce_bytes", &node))
      DS_CHECK_GOTO(read_nonneg(&item, "bwd_reduce_bytes", &l->bwd_reduce_bytes, err), st, out);
    if (ds_cmap_get(&item, "bwd_copy_bytes", &node))
      DS_CHECK_GOTO(read_nonneg(&item, "bwd_copy_bytes", &l->bwd_copy_bytes, err), st, out);
    DS_CHECK_GOTO(read_class(&item, &l->cls, err), st, out);
    DS_CHECK_GOTO(read_conv_groups(&item, l, err), st, out);
    DS_CHECK_GOTO(read_bwd_bytes(&item, l, err), st, out);
    DS_CHECK_GOTO(read_pool(&item, l, err), st, out);
    DS_CHECK_GOTO(read_layer_norm(&item, l, err), st, out);
    DS_CHECK_GOTO(ds_legacy_ew_read(&item, l, err), st, out);
    DS_CHECK_GOTO(ds_cast_reduce_read(&item, l, err), st, out);
    DS_CHECK_GOTO(ds_cat_copy_read(&item, l, err), st, out);
    DS_CHECK_GOTO(read_attn_parts(&item, l, err), st, out);
    DS_CHECK_GOTO(read_host_counts(m, &item, l, i, err), st, out);
    DS_CHECK_GOTO(read_params(m, &item, l, (int32_t)i, &param_cap, err), st, out);
    DS_CHECK_GOTO(grouped_conv_weight(m, &item, l, err), st, out);
  }
  ds_legacy_ew_finish(m->layers, (size_t)m->n_layers);
  if (m->n_params == 0) {
    st = ds_cnode_error(&layers, err, "expected at least one parameter tensor");
    goto out;
  }
  DS_CHECK_GOTO(check_unique_names(m, &layers, err), st, out);
  DS_CHECK_GOTO(read_tied(m, &layers, err), st, out);
  /* The model's input and output per sample: the files' per-layer bytes
   * are 4x (input + output) and 4x output elements, so by default the
   * first layer's difference is the input and the last's output the
   * output. */
  m->input_bytes = m->layers[0].fwd_bytes - m->layers[0].act_bytes;
  if (m->input_bytes < 0) m->input_bytes = 0;
  m->output_bytes = m->layers[m->n_layers - 1].act_bytes;
  if (ds_cmap_get(&root, "input_bytes", &node))
    DS_CHECK_GOTO(read_nonneg(&root, "input_bytes", &m->input_bytes, err), st, out);
  if (ds_cmap_get(&root, "output_bytes", &node))
    DS_CHECK_GOTO(read_nonneg(&root, "output_bytes", &m->output_bytes, err), st, out);
  if (ds_cmap_get(&root, "output_classes", &node))
    DS_CHECK_GOTO(read_nonneg(&root, "output_classes", &m->output_classes, err), st, out);
  if (ds_cmap_get(&root, "loss_copy_bytes", &node))
    DS_CHECK_GOTO(read_nonneg(&root, "loss_copy_bytes", &m->loss_copy_bytes, err), st, out);
  DS_CHECK_GOTO(ds_legacy_ew_read_loss(&root, m, err), st, out);
  if (ds_cmap_get(&root, "loss_act_bytes", &node))
    DS_CHECK_GOTO(read_nonneg(&root, "loss_act_bytes", &m->loss_act_bytes, err), st, out);
  if (ds_cmap_get(&root, "grad_ready", &node)) {
    DS_CHECK_GOTO(read_name_list(m, &node, &m->grad_ready, err), st, out);
    m->n_grad_ready = m->n_params;
  }
  if (ds_cmap_get(&root, "buffers", &node))
    DS_CHECK_GOTO(read_buffers(m, &node, err), st, out);
  DS_CHECK_GOTO(check_layer_norms(m, &layers, err), st, out);
  if (ds_cmap_get(&root, "registration", &node)) {
    DS_CHECK_GOTO(read_name_list(m, &node, &m->registration, err), st, out);
    m->registration_index = malloc((size_t)m->n_params * sizeof *m->registration_index);
    if (!m->registration_index) { st = DS_ENOMEM; goto out; }
    for (int32_t i = 0; i < m->n_params; i++) m->registration_index[m->registration[i]] = i;
  }
out:
  ds_config_free(cfg);
  return st;
}

ds_status ds_model_load(const char *path, struct ds_model **out,
                        struct ds_err *err) {
  struct ds_model *m = calloc(1, sizeof *m);
  if (!m) return DS_ENOMEM;
  m->path = strdup(path);
  ds_status st = m->path ? load(m, path, err) : DS_ENOMEM;
  if (st == DS_ENOMEM) ds_err_set(err, st, "%s: out of memory", path);
  if (st != DS_OK) {
    ds_model_free(m);
    return st;
  }
  *out = m;
  return DS_OK;
}

void ds_model_free(struct ds_model *m) {
  if (!m) return;
  for (int32_t i = 0; i < m->n_layers; i++) free(m->layers[i].name);
  for (int32_t i = 0; i < m->n_params; i++) free(m->params[i].name);
  free(m->layers);
  free(m->params);
  free(m->grad_ready);
  free(m->registration);
  free(m->registration_index);
  free(m->buffers);
  free(m->name);
  free(m->path);
  free(m->sample);
  free(m);
}
