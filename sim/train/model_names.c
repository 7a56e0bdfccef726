/*
 * The model file's checks across layers, by name: every layer and
 * parameter name once, the lists of parameter names (grad_ready,
 * registration, tied_params), and the buffers, whose names mark the
 * layers that are BatchNorms. Run once every layer is read.
 */
#include "sim/train/model_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

static const char *const buffer_keys[] = {"name", "numel", "bytes", "dtype", NULL};

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
 * an unknown name would open a broadcast bucket of its own (ddp_buffers.c). */
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
ds_status ds__model_read_buffers(struct ds_model *m, const struct ds_cnode *seq,
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
    DS_CHECK_GOTO(ds_cnode_int_range(&node, 0, DS_MODEL_NUMEL_MAX, &b->numel, err), st, out);
    /* a buffer's whole size, not per sample */
    int64_t bytes;
    DS_CHECK_GOTO(ds_cmap_require(&item, "bytes", "a non-negative integer", &node, err), st,
                  out);
    DS_CHECK_GOTO(ds_model_bytes_hint(ds_cnode_int_range(&node, 0, DS_MODEL_COUNT_MAX, &bytes,
                                                         err), 0, err), st, out);
    b->bytes = (double)bytes;
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

/* Every layer with layer_norm (model_ops.c) once the buffers are read:
 * none a BatchNorm too (a LAYER.running_mean buffer, mark_batch_norm). */
ds_status ds__model_check_layer_norms(const struct ds_model *m, const struct ds_cnode *layers,
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
ds_status ds__model_read_name_list(struct ds_model *m, const struct ds_cnode *seq,
                                   int32_t **out, struct ds_err *err) {
  size_t n;
  if (!ds_cnode_is_seq(seq))
    return ds_cnode_error(seq, err, "expected a list of parameter names");
  ds_status st = ds_cseq_len(seq, &n, err);
  if (st != DS_OK) return st;
  /* The count is checked after the names: a list too long holds a name
   * that is unknown or repeated, said at its item (before the write past
   * n_params it would make); one too short names the first missing. */
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
  if (n < (size_t)m->n_params) {
    int32_t missing = 0;
    while (seen[missing]) missing++;
    st = ds_cnode_error(seq, err, "expected every one of the %d parameter names once, "
                        "got %zu names: \"%s\" is missing", m->n_params, n,
                        m->params[missing].name);
    goto out;
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
ds_status ds__model_read_tied(struct ds_model *m, const struct ds_cnode *layers,
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
ds_status ds__model_check_unique_names(const struct ds_model *m, const struct ds_cnode *layers,
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
