/*
 * What sim/train/model.c, sim/train/model_ops.c and sim/train/model_names.c
 * share: the readers load() calls from the other two, and the non-negative
 * count they all read. Private to those three files.
 */
#ifndef DS_MODEL_IMPL_H
#define DS_MODEL_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/status.h"
#include "sim/train/model.h"

/* model.c: key's value, a required integer from 0 to DS_MODEL_COUNT_MAX,
 * into *out. */
ds_status ds__model_read_nonneg(const struct ds_cnode *map, const char *key, double *out,
                                struct ds_err *err);

/* model_ops.c: a layer's op geometry, each read once its class is known
 * (the weight's shape once its params are). */
ds_status ds__model_read_conv_groups(const struct ds_cnode *item, struct ds_layer *l,
                                     struct ds_err *err);
ds_status ds__model_grouped_conv_weight(const struct ds_model *m, const struct ds_cnode *item,
                                        struct ds_layer *l, struct ds_err *err);
ds_status ds__model_read_attn_parts(const struct ds_cnode *item, struct ds_layer *l,
                                    struct ds_err *err);
ds_status ds__model_read_pool(const struct ds_cnode *item, struct ds_layer *l,
                              struct ds_err *err);
ds_status ds__model_read_layer_norm(const struct ds_cnode *item, struct ds_layer *l,
                                    struct ds_err *err);
/* embedding [lookups per sample, D(, lookups per step)], after read_params
 * (model_ops.c) */
ds_status ds__model_read_embedding(const struct ds_model *m, const struct ds_cnode *item,
                                   struct ds_layer *l, struct ds_err *err);
/* bytes_per: sample | step, after read_embedding and every key it excludes
 * (model_ops.c) */
ds_status ds__model_read_bytes_per(const struct ds_cnode *item, struct ds_layer *l,
                                   struct ds_err *err);

/* model_names.c: the checks and lists across layers, once every layer
 * (layers: the file's sequence of them) is read. */
ds_status ds__model_check_unique_names(const struct ds_model *m, const struct ds_cnode *layers,
                                       struct ds_err *err);
ds_status ds__model_read_tied(struct ds_model *m, const struct ds_cnode *layers,
                              struct ds_err *err);
/* *out: owned, the parameters' indices in the list's order */
ds_status ds__model_read_name_list(struct ds_model *m, const struct ds_cnode *seq,
                                   int32_t **out, struct ds_err *err);
ds_status ds__model_read_buffers(struct ds_model *m, const struct ds_cnode *seq,
                                 struct ds_err *err);
ds_status ds__model_check_layer_norms(const struct ds_model *m, const struct ds_cnode *layers,
                                      struct ds_err *err);

#endif
