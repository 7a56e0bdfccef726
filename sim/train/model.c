/*
 * Model file reader: the document, each layer's own keys and its
 * parameters, and the small lookups on the loaded model. Parameter tensors
 * are kept in one array in registration order (the order of the layers,
 * then of each layer's list), which is what DDP's bucketing walks
 * (reversed) to assign gradients. The keys of an op's geometry are read
 * by model_ops.c, the checks across the model's names by model_names.c.
 */
#include "sim/train/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "sim/net/file_kinds.h"
#include "sim/train/cast_reduce.h"
#include "sim/train/legacy_ew.h"
#include "sim/train/cat_copy.h"
#include "sim/train/model_impl.h"

static const char *const layer_keys[] = {"name", "fwd_flops", "bwd_flops",
                                         "fwd_bytes", "act_bytes", "act_int_bytes",
                                         "amp_act_bytes", "params",
                                         "class", "op_fwd_bytes", "amp_fwd_bytes", "amp_cast_bytes",
                                         "amp_grad_cast_bytes", "amp_upcast_bytes", "gemm_align",
                                         "bwd_reduce_bytes", "bwd_row_reductions",
                                         "bwd_copy_bytes", "bwd_bytes", "amp_bwd_bytes",
                                         "bwd_accum_bytes", "amp_bwd_accum_bytes",
                                         "host_ops", "host_dispatches", "host_views", "host_nodes", "host_view_nodes",
                                         "host_view_nodes_amp",
                                         "host_amp_casts", "host_amp_nodes", "host_syncs",
                                         "groups", "stride",
                                         "pool_kernel", "pool_stride", "pool_padding", "pool_input",
                                         "layer_norm", "embedding", "bytes_per", "legacy_ew", "nhwc_legacy_ew",
                                         "attn_products",
                                         "attn_rest", "cat_copy", "tied_params", "amp_cast_ew", NULL};
static const char *const param_keys[] = {"name", "numel", "shape", NULL};

int ds_optimizer_states(enum ds_optimizer opt) {
  return opt == DS_OPT_ADAM || opt == DS_OPT_BERTADAM ? 2
         : opt == DS_OPT_APEX_O2                      ? 3
         : opt == DS_OPT_NONE                         ? 0
                                                      : 1;
}

const char *ds_optimizer_name(enum ds_optimizer opt) {
  return opt == DS_OPT_ADAM       ? "adam"
         : opt == DS_OPT_NONE     ? "none"
         : opt == DS_OPT_BERTADAM ? "bertadam"
         : opt == DS_OPT_APEX_O2  ? "apex-o2-fusedadam"
                                  : "sgd";
}

static const char *const class_names[] = {"unknown", "conv", "matmul", "attention",
                                          "memory"};

const char *ds_layer_class_name(enum ds_layer_class cls) {
  return (unsigned)cls < sizeof class_names / sizeof *class_names ? class_names[cls]
                                                                  : "unknown";
}

/* 1.5: between a backward of the weight gradient alone (the forward's FLOPs
 * again, 1x) and one that also computes the input gradient (2x), as the
 * exporter counts the backward's aten ops (5b88ee92). */
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

double ds_layer_bytes_batch(const struct ds_layer *l, int64_t batch) {
  return l->bytes_per_step ? 1.0 : (double)batch;
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

ds_status ds__model_read_nonneg(const struct ds_cnode *map, const char *key,
                                double *out, struct ds_err *err) {
  struct ds_cnode node;
  int64_t v;
  DS_CHECK(ds_cmap_require(map, key, "a non-negative integer", &node, err));
  ds_status st = ds_cnode_int_range(&node, 0, DS_MODEL_COUNT_MAX, &v, err);
  /* the file's *_bytes are byte counts per sample: the message says so */
  size_t n = strlen(key), k = strlen("_bytes");
  if (n > k && strcmp(key + n - k, "_bytes") == 0) st = ds_model_bytes_hint(st, 1, err);
  DS_CHECK(st);
  *out = (double)v;
  return DS_OK;
}

/* A size here is a plain count of bytes, as tools/export_model.py writes
 * it, never "12MiB" as a topology's sizes are. */
ds_status ds_model_bytes_hint(ds_status st, int per_sample, struct ds_err *err) {
  if (st != DS_EINPUT || !err) return st;
  size_t used = strlen(err->msg);
  snprintf(err->msg + used, sizeof err->msg - used,
           ": integer bytes%s, without a unit (12582912, not 12MiB; docs/models.md)",
           per_sample ? " per sample" : "");
  return st;
}

ds_status ds_model_read_counts(const struct ds_cnode *node, const char *what, size_t n,
                               uint32_t bytes_at, int64_t *out, struct ds_err *err) {
  size_t len = 0;
  if (ds_cnode_is_seq(node)) DS_CHECK(ds_cseq_len(node, &len, err));
  /* not a list of n: ds_cnode_int_list's message for that */
  if (len != n) return ds_cnode_int_list(node, what, n, 0, DS_MODEL_COUNT_MAX, out, err);
  for (size_t i = 0; i < n; i++) {
    struct ds_cnode item;
    DS_CHECK(ds_cseq_at(node, i, &item, err));
    ds_status st = ds_cnode_int_range(&item, 0, DS_MODEL_COUNT_MAX, &out[i], err);
    if (i < 32 && (bytes_at >> i & 1)) st = ds_model_bytes_hint(st, 1, err);
    DS_CHECK(st);
  }
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
    if (d > p->numel / prod) /* the product would pass numel (or overflow) */
      return ds_cnode_error(seq, err, "expected dimensions whose product is numel %lld, got "
                            "a product above it", (long long)p->numel);
    prod *= d;
  }
  if (prod != p->numel)
    return ds_cnode_error(seq, err, "expected dimensions whose product is numel %lld, got %lld",
                          (long long)p->numel, (long long)prod);
  p->ndim = (int32_t)n;
  return DS_OK;
}

static ds_status read_params(struct ds_model *m, const struct ds_cnode *layer,
                             struct ds_layer *l, int32_t li, size_t *cap,
                             struct ds_err *err) {
  struct ds_cnode seq, item, node;
  size_t n;
  DS_CHECK(ds_cmap_require(layer, "params", "a list of {name, numel} maps, or [] for none",
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
    DS_CHECK(ds_cnode_int_range(&node, 1, DS_MODEL_NUMEL_MAX, &p->numel, err));
    if (ds_cmap_get(&item, "shape", &node)) DS_CHECK(read_shape(&node, p, err));
    p->layer = li;
    l->param_numel += p->numel;
    m->total_numel += p->numel;
  }
  l->param_count = m->n_params - l->param_first;
  return DS_OK;
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
  for (int k = 0; k < n && has; k++) DS_CHECK(ds__model_read_nonneg(item, keys[k], fields[k], err));
  return DS_OK;
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

static const char *const host_keys[] = {"host_ops", "host_nodes", "host_amp_casts",
                                        "host_amp_nodes"};

/* One of the optional per-layer host counts (model.h): allowed only where
 * `allowed` (else "expected KEY only with WITH"), on every layer or on none
 * (*every, set by layer 0), a count from 0 to 1e6 and, where cap_name is
 * given, at most `cap` ("the layer's CAP_NAME (cap) UNIT"); 0 where absent. */
static ds_status read_every_layer_count(const struct ds_cnode *item, const char *key,
                                        int allowed, const char *with, size_t index,
                                        int *every, const char *cap_name, double cap,
                                        const char *unit, double *out, struct ds_err *err) {
  struct ds_cnode node;
  int has = ds_cmap_get(item, key, &node);
  *out = 0;
  if (has && !allowed) return ds_cnode_error(&node, err, "expected %s only with %s", key, with);
  if (index == 0) *every = has;
  if (has != *every)
    return ds_cnode_error(item, err, "expected %s on every layer or on none (the first layer "
                          "%s it)", key, *every ? "has" : "lacks");
  if (!has) return DS_OK;
  int64_t v;
  DS_CHECK(ds_cnode_int_range(&node, 0, 1000000, &v, err));
  if (cap_name && (double)v > cap)
    return ds_cnode_error(&node, err, "expected at most the layer's %s (%.0f) %s, got %lld",
                          cap_name, cap, unit, (long long)v);
  *out = (double)v;
  return DS_OK;
}

#define HOST_COUNT_KEYS "host_ops, host_nodes, host_amp_casts and host_amp_nodes"

/* Optional host_dispatches (model.h): with the host counts, on every layer
 * or on none (m->host_dispatch_counts). */
static ds_status read_host_dispatches(struct ds_model *m, const struct ds_cnode *item,
                                      struct ds_layer *l, size_t index, struct ds_err *err) {
  return read_every_layer_count(item, "host_dispatches", m->host_counts, HOST_COUNT_KEYS, index,
                                &m->host_dispatch_counts, NULL, 0, NULL, &l->host_dispatches,
                                err);
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

/* Optional host_views (model.h): with host_dispatches, on every layer or on
 * none (m->host_view_counts); at most the layer's dispatches less its syncs
 * (a sync is not a view). Read after host_syncs. */
static ds_status read_host_views(struct ds_model *m, const struct ds_cnode *item,
                                 struct ds_layer *l, size_t index, struct ds_err *err) {
  return read_every_layer_count(item, "host_views", m->host_dispatch_counts, "host_dispatches",
                                index, &m->host_view_counts,
                                "host_dispatches less its host_syncs",
                                l->host_dispatches - l->host_syncs,
                                "dispatches that launch no kernel", &l->host_views, err);
}

/* Optional host_view_nodes (model.h): with the host counts, on every layer
 * or on none (m->host_view_node_counts); at most the layer's host_nodes. */
static ds_status read_host_view_nodes(struct ds_model *m, const struct ds_cnode *item,
                                      struct ds_layer *l, size_t index, struct ds_err *err) {
  return read_every_layer_count(item, "host_view_nodes", m->host_counts, HOST_COUNT_KEYS, index,
                                &m->host_view_node_counts, "host_nodes", l->host_nodes,
                                "view nodes", &l->host_view_nodes, err);
}

/* Optional host_view_nodes_amp (model.h): with host_view_nodes, on every
 * layer or on none (m->host_view_node_amp_counts); at most the layer's
 * host_nodes. */
static ds_status read_host_view_nodes_amp(struct ds_model *m, const struct ds_cnode *item,
                                          struct ds_layer *l, size_t index,
                                          struct ds_err *err) {
  return read_every_layer_count(item, "host_view_nodes_amp", m->host_view_node_counts,
                                "host_view_nodes", index, &m->host_view_node_amp_counts,
                                "host_nodes", l->host_nodes, "view nodes under autocast",
                                &l->host_view_nodes_amp, err);
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
  DS_CHECK(read_host_syncs(m, item, l, err));
  DS_CHECK(read_host_views(m, item, l, index, err));
  DS_CHECK(read_host_view_nodes(m, item, l, index, err));
  return read_host_view_nodes_amp(m, item, l, index, err);
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
    /* ddpsim's other --optimizer choices are not a model file's */
    int flag_only = strcmp(s, "none") == 0 || strcmp(s, "bertadam") == 0 ||
                    strcmp(s, "apex-o2-fusedadam") == 0;
    st = ds_cnode_error(&node, err, "expected sgd or adam, got \"%s\"%s%s%s", s,
                        flag_only ? " (a choice of ddpsim's command line: keep the model's "
                                    "optimizer here and give --optimizer " : "",
                        flag_only ? s : "", flag_only ? ")" : "");
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
    if (strlen(l->name) > DS_LAYER_NAME_MAX) { /* op names must hold it whole (model.h) */
      ds_cmap_get(&item, "name", &node);
      st = ds_cnode_error(&node, err, "expected a layer name of at most %d bytes, got %zu",
                          DS_LAYER_NAME_MAX, strlen(l->name));
      goto out;
    }
    DS_CHECK_GOTO(ds__model_read_nonneg(&item, "fwd_flops", &l->fwd_flops, err), st, out);
    DS_CHECK_GOTO(ds__model_read_nonneg(&item, "bwd_flops", &l->bwd_flops, err), st, out);
    DS_CHECK_GOTO(ds__model_read_nonneg(&item, "fwd_bytes", &l->fwd_bytes, err), st, out);
    DS_CHECK_GOTO(ds__model_read_nonneg(&item, "act_bytes", &l->act_bytes, err), st, out);
    /* optional: what of it is integer, and what autocast saves (model.h) */
    l->act_int_bytes = 0;
    if (ds_cmap_get(&item, "act_int_bytes", &node)) {
      DS_CHECK_GOTO(ds__model_read_nonneg(&item, "act_int_bytes", &l->act_int_bytes, err), st, out);
      if (l->act_int_bytes > l->act_bytes) {
        st = ds_cnode_error(&node, err, "expected act_int_bytes at most act_bytes (%.17g)",
                            l->act_bytes);
        goto out;
      }
    }
    l->amp_act_bytes = -1;
    if (ds_cmap_get(&item, "amp_act_bytes", &node))
      DS_CHECK_GOTO(ds__model_read_nonneg(&item, "amp_act_bytes", &l->amp_act_bytes, err), st, out);
    /* optional: every op's traffic, composite modules' too (model.h) */
    l->op_fwd_bytes = -1;
    if (ds_cmap_get(&item, "op_fwd_bytes", &node))
      DS_CHECK_GOTO(ds__model_read_nonneg(&item, "op_fwd_bytes", &l->op_fwd_bytes, err), st, out);
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
      DS_CHECK_GOTO(ds__model_read_nonneg(&item, "bwd_reduce_bytes", &l->bwd_reduce_bytes, err), st,
                    out);
    if (ds_cmap_get(&item, "bwd_copy_bytes", &node))
      DS_CHECK_GOTO(ds__model_read_nonneg(&item, "bwd_copy_bytes", &l->bwd_copy_bytes, err), st,
                    out);
    DS_CHECK_GOTO(read_class(&item, &l->cls, err), st, out);
    DS_CHECK_GOTO(ds__model_read_conv_groups(&item, l, err), st, out);
    DS_CHECK_GOTO(read_bwd_bytes(&item, l, err), st, out);
    DS_CHECK_GOTO(ds__model_read_pool(&item, l, err), st, out);
    DS_CHECK_GOTO(ds__model_read_layer_norm(&item, l, err), st, out);
    DS_CHECK_GOTO(ds_legacy_ew_read(&item, l, err), st, out);
    DS_CHECK_GOTO(ds_cast_reduce_read(&item, l, err), st, out);
    DS_CHECK_GOTO(ds_cat_copy_read(&item, l, err), st, out);
    DS_CHECK_GOTO(ds__model_read_attn_parts(&item, l, err), st, out);
    DS_CHECK_GOTO(read_host_counts(m, &item, l, i, err), st, out);
    DS_CHECK_GOTO(read_params(m, &item, l, (int32_t)i, &param_cap, err), st, out);
    DS_CHECK_GOTO(ds__model_read_embedding(m, &item, l, err), st, out);
    DS_CHECK_GOTO(ds__model_read_bytes_per(&item, l, err), st, out);
    DS_CHECK_GOTO(ds__model_grouped_conv_weight(m, &item, l, err), st, out);
  }
  ds_legacy_ew_finish(m->layers, (size_t)m->n_layers);
  if (m->n_params == 0) {
    st = ds_cnode_error(&layers, err, "expected at least one parameter tensor");
    goto out;
  }
  DS_CHECK_GOTO(ds__model_check_unique_names(m, &layers, err), st, out);
  DS_CHECK_GOTO(ds__model_read_tied(m, &layers, err), st, out);
  /* The model's input and output per sample: the files' per-layer bytes
   * are 4x (input + output) and 4x output elements, so by default the
   * first layer's difference is the input and the last's output the
   * output. */
  m->input_bytes = m->layers[0].fwd_bytes - m->layers[0].act_bytes;
  if (m->input_bytes < 0) m->input_bytes = 0;
  m->output_bytes = m->layers[m->n_layers - 1].act_bytes;
  /* a layer of bytes per step (bytes_per: step) feeds and makes nothing
   * per sample */
  if (m->layers[0].bytes_per_step) m->input_bytes = 0;
  if (m->layers[m->n_layers - 1].bytes_per_step) m->output_bytes = 0;
  if (ds_cmap_get(&root, "input_bytes", &node))
    DS_CHECK_GOTO(ds__model_read_nonneg(&root, "input_bytes", &m->input_bytes, err), st, out);
  if (ds_cmap_get(&root, "output_bytes", &node))
    DS_CHECK_GOTO(ds__model_read_nonneg(&root, "output_bytes", &m->output_bytes, err), st, out);
  if (ds_cmap_get(&root, "output_classes", &node))
    DS_CHECK_GOTO(ds__model_read_nonneg(&root, "output_classes", &m->output_classes, err), st, out);
  if (ds_cmap_get(&root, "loss_copy_bytes", &node))
    DS_CHECK_GOTO(ds__model_read_nonneg(&root, "loss_copy_bytes", &m->loss_copy_bytes, err), st,
                  out);
  DS_CHECK_GOTO(ds_legacy_ew_read_loss(&root, m, err), st, out);
  if (ds_cmap_get(&root, "loss_act_bytes", &node))
    DS_CHECK_GOTO(ds__model_read_nonneg(&root, "loss_act_bytes", &m->loss_act_bytes, err), st, out);
  if (ds_cmap_get(&root, "grad_ready", &node)) {
    DS_CHECK_GOTO(ds__model_read_name_list(m, &node, &m->grad_ready, err), st, out);
    m->n_grad_ready = m->n_params;
  }
  if (ds_cmap_get(&root, "buffers", &node))
    DS_CHECK_GOTO(ds__model_read_buffers(m, &node, err), st, out);
  DS_CHECK_GOTO(ds__model_check_layer_norms(m, &layers, err), st, out);
  if (ds_cmap_get(&root, "registration", &node)) {
    DS_CHECK_GOTO(ds__model_read_name_list(m, &node, &m->registration, err), st, out);
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