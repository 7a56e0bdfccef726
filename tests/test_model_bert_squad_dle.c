/*
 * models/bert-base-squad-dle.yaml and models/bert-large-squad-dle.yaml,
 * DeepLearningExamples' BertForQuestionAnswering (modeling.py's op sequence,
 * tools/torch_models.py:DleBertForQuestionAnswering: the rows that ran
 * run_squad.py), against what that model runs, worked by hand: the same
 * parameters as the Hugging Face files (models/bert-base-squad.yaml), the
 * pooler's weights as buffers (no gradient reaches them), the pooler's
 * forward GEMM on the first token, and in every attention core the extended
 * mask's broadcast add on the scores, no head copies of Q, K^T, V in
 * forward, and the key gradient's transposed copy in backward.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "sim/train/model.h"
#include "tests/support.h"

#define SEQ 384.0

struct arch {
  const char *file;
  double hidden, inter, heads, layers;
  long long params;
};

static const struct arch base = {"models/bert-base-squad-dle.yaml", 768, 3072, 12, 12, 108897794LL};
static const struct arch large = {"models/bert-large-squad-dle.yaml", 1024, 4096, 16, 24,
                                  334100482LL};

static const struct ds_layer *layer_named(const struct ds_model *m, const char *name) {
  for (int32_t i = 0; i < m->n_layers; i++)
    if (strcmp(m->layers[i].name, name) == 0) return &m->layers[i];
  cr_assert_fail("%s: no layer %s", m->name, name);
  return NULL;
}

static void check_parameters(const struct arch *a) {
  /* The Hugging Face file's tensors (embeddings 5, 16 a layer, head 2):
   * DLE registers the same ones under other module names, and its pooler's
   * two, which are buffers here: hidden x hidden + hidden fp32. */
  struct ds_model *m = ds_test_model(a->file);
  double h = a->hidden;
  long long emb = (30528 + 512 + 2) * (long long)h + 2 * (long long)h;
  long long layer = 4 * (long long)(h * h + h) + (long long)(h * a->inter + a->inter) +
                    (long long)(a->inter * h + h) + 4 * (long long)h;
  cr_assert_eq(m->total_numel, emb + (long long)a->layers * layer + 2 * (long long)h + 2);
  cr_assert_eq(m->total_numel, a->params);
  cr_assert_eq(m->n_params, 5 + 16 * (int)a->layers + 2);
  cr_assert_eq(m->n_buffers, 2, "the pooler's weight and bias");
  cr_assert_float_eq(m->buffers[0].bytes + m->buffers[1].bytes, 4 * (h * h + h), 0.5);
  ds_model_free(m);
}

Test(model_bert_squad_dle, parameters_are_dles_without_the_pooler) {
  check_parameters(&base);
  check_parameters(&large);
}

static void check_flops(const struct arch *a) {
  /* Per sample, 2 FLOPs a multiply-add: the linears over 384 tokens, QK^T
   * and PV (384 x 384 x hidden each), the head, and the pooler's GEMM on
   * one token (hidden x hidden), forward only: its output is discarded, so
   * backward is twice the rest. */
  struct ds_model *m = ds_test_model(a->file);
  double h = a->hidden;
  double linear = 2 * SEQ * (a->layers * (4 * h * h + 2 * h * a->inter) + 2 * h);
  double attention = a->layers * 2 * 2 * SEQ * SEQ * h;
  double pooler = 2 * h * h, fwd = 0, bwd = 0;
  for (int32_t i = 0; i < m->n_layers; i++) {
    fwd += m->layers[i].fwd_flops;
    bwd += m->layers[i].bwd_flops;
  }
  cr_assert_float_eq(fwd, linear + attention + pooler, 0.5);
  cr_assert_float_eq(bwd, 2 * (linear + attention), 0.5);
  const struct ds_layer *p = layer_named(m, "bert.pooler.dense_act");
  cr_assert_float_eq(p->fwd_flops, pooler, 0.5);
  cr_assert_float_eq(p->bwd_flops, 0, 0.5);
  ds_model_free(m);
}

Test(model_bert_squad_dle, flops_add_the_pooler_forward) {
  check_flops(&base);
  check_flops(&large);
}

static void check_cores(const struct arch *a) {
  /* Every layer's core, per sample, in fp32: the mask's add reads the
   * scores (heads x 384 x 384), the (1, 384) mask row once and writes the
   * sum: three strided operand-elements an element (the mask broadcast),
   * all three dynamic-cast under autocast (half scores plus an fp32 mask);
   * the context's transpose back to (seq, batch, hidden), made contiguous:
   * two strided operand-elements of 384 x hidden. Nothing transposed:
   * torch.bmm reads Q, K^T and V as strided views. Backward's key gradient
   * comes back (b h, d, s) and is copied to (s, b, hidden): 2 x 384 x
   * hidden transposed operand-elements, 8 bytes each. */
  struct ds_model *m = ds_test_model(a->file);
  double scores = a->heads * SEQ * SEQ, ctx = SEQ * a->hidden;
  char name[96];
  for (int k = 0; k < (int)a->layers; k++) {
    snprintf(name, sizeof name, "bert.encoder.layer.%d.attention.self.core", k);
    const struct ds_layer *c = layer_named(m, name);
    const struct ds_legacy_ew *f = &c->legacy[0][DS_LEGACY_FWD];
    cr_assert_float_eq(f->strided_elems, 3 * scores + 2 * ctx, 0.5, "%s", name);
    cr_assert_float_eq(f->amp_cast_elems, 3 * scores, 0.5, "%s", name);
    cr_assert_float_eq(f->transposed_elems, 0, 0.5, "%s", name);
    cr_assert_float_eq(f->bytes, 8 * scores + 4 * SEQ + 8 * ctx, 0.5, "%s", name);
    snprintf(name, sizeof name, "bert.encoder.layer.%d.attention.self.key", k);
    const struct ds_legacy_ew *kc = &layer_named(m, name)->legacy[0][DS_LEGACY_COPY];
    cr_assert_float_eq(kc->transposed_elems, 2 * ctx, 0.5, "%s", name);
    cr_assert_float_eq(kc->bytes, 8 * ctx, 0.5, "%s", name);
  }
  for (int32_t i = 0; i < m->n_layers; i++)
    cr_assert_float_eq(m->layers[i].host_syncs, 0, 0.5, "DLE adds the mask unchecked: %s",
                       m->layers[i].name);
  ds_model_free(m);
}

Test(model_bert_squad_dle, every_core_adds_the_mask_and_copies_no_heads) {
  check_cores(&base);
  check_cores(&large);
}
