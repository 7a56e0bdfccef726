/*
 * models/bert-base-squad.yaml and models/bert-large-squad.yaml, Hugging Face's
 * BertForQuestionAnswering at the sizes DeepLearningExamples' run_squad.py
 * trains (this project's own SQuAD rows ran it; the rows that ran run_squad.py
 * use DLE's own model, tests/test_model_bert_squad_dle.c), against their
 * architectures worked by hand: bert-base-uncased
 * (hidden 768, 12 layers, 12 heads, intermediate 3072) and bert-large-uncased
 * (DeepLearningExamples' bert_configs/large.json: hidden 1024, 24 layers, 16
 * heads, intermediate 4096), both with 512 positions, 2 token types, the
 * vocabulary 30522 padded to 30528 as run_squad.py pads it, a hidden x 2
 * question-answering head, no pooler, sequence length 384.
 */
#include <criterion/criterion.h>

#include "sim/train/model.h"
#include "tests/support.h"

#define HID 768LL
#define FFN 3072LL
#define SEQ 384LL
#define LAYERS 12LL

static struct ds_model *squad(void) { return ds_test_model("models/bert-base-squad.yaml"); }
static struct ds_model *squad_large(void) { return ds_test_model("models/bert-large-squad.yaml"); }

Test(model_bert_squad, parameters_are_the_architectures) {
  /* Embeddings: word, position, token type, LayerNorm weight and bias.
   * Each encoder layer: Q, K, V and the attention output (768x768 + bias),
   * the FFN's two linears, two LayerNorms: 16 tensors. The head: 2x768 + 2. */
  const long long emb = (30528 + 512 + 2) * HID + 2 * HID;
  const long long layer = 4 * (HID * HID + HID) + (HID * FFN + FFN) + (FFN * HID + HID) + 4 * HID;
  const long long head = 2 * HID + 2;
  struct ds_model *m = squad();
  cr_assert_eq(m->total_numel, emb + LAYERS * layer + head);
  cr_assert_eq(m->total_numel, 108897794LL);
  cr_assert_eq(m->n_params, 5 + 16 * LAYERS + 2);
  cr_assert_eq(m->optimizer, DS_OPT_ADAM, "run_squad.py's fp32 optimizer is an Adam");
  ds_model_free(m);
}

Test(model_bert_squad, flops_are_the_linears_and_attention_at_seq_384) {
  /* Forward per sample: 2 FLOPs per multiply-add. Linears: 384 tokens x
   * (4 x 768x768 + 2 x 768x3072 per layer, and the 768x2 head). Attention:
   * QK^T and AV, each 384 x 384 x 768 per layer. Backward: twice the
   * forward (input and weight gradients; the embeddings' backward is a
   * scatter, no FLOPs). */
  const double linear = 2.0 * SEQ * (LAYERS * (4 * HID * HID + 2 * HID * FFN) + HID * 2);
  const double attention = LAYERS * 2 * 2.0 * SEQ * SEQ * HID;
  struct ds_model *m = squad();
  double fwd = 0, bwd = 0, attn_fwd = 0;
  int attn_layers = 0;
  for (int32_t i = 0; i < m->n_layers; i++) {
    fwd += m->layers[i].fwd_flops;
    bwd += m->layers[i].bwd_flops;
    if (m->layers[i].cls == DS_LAYER_ATTENTION) {
      attn_fwd += m->layers[i].fwd_flops;
      attn_layers++;
    }
  }
  cr_assert_float_eq(fwd, linear + attention, 0.5);
  cr_assert_float_eq(bwd, 2 * (linear + attention), 0.5);
  cr_assert_eq(attn_layers, LAYERS, "one attention core per layer");
  cr_assert_float_eq(attn_fwd, attention, 0.5);
  ds_model_free(m);
}

Test(model_bert_squad, input_is_three_int64_sequences_output_two_logits_per_token) {
  /* input_ids, token_type_ids and attention_mask, int64; the start and end
   * logits, fp32. */
  struct ds_model *m = squad();
  cr_assert_float_eq(m->input_bytes, 3 * 8.0 * SEQ, 0.5);
  cr_assert_float_eq(m->output_bytes, 2 * 4.0 * SEQ, 0.5);
  ds_model_free(m);
}

Test(model_bert_squad, large_parameters_are_the_architectures) {
  /* As above with hidden 1024, intermediate 4096, 24 layers: BERT-large's
   * 334,092,288 without its pooler, 6 x 1024 more for the padded vocabulary,
   * 2050 for the head. */
  const long long hid = 1024, ffn = 4096, layers = 24;
  const long long emb = (30528 + 512 + 2) * hid + 2 * hid;
  const long long layer = 4 * (hid * hid + hid) + (hid * ffn + ffn) + (ffn * hid + hid) + 4 * hid;
  const long long head = 2 * hid + 2;
  struct ds_model *m = squad_large();
  cr_assert_eq(m->total_numel, emb + layers * layer + head);
  cr_assert_eq(m->total_numel, 334100482LL);
  cr_assert_eq(m->n_params, 5 + 16 * layers + 2);
  cr_assert_eq(m->optimizer, DS_OPT_ADAM);
  cr_assert_eq(m->default_batch, 32, "the DGX A100 tables' batch");
  ds_model_free(m);
}

Test(model_bert_squad, large_flops_are_the_linears_and_attention_at_seq_384) {
  /* Forward per sample: 384 tokens x (4 x 1024x1024 + 2 x 1024x4096 per
   * layer, and the 1024x2 head) multiply-adds; attention QK^T and AV, each
   * 384 x 384 x 1024 per layer; backward twice the forward. */
  const double hid = 1024, ffn = 4096, layers = 24;
  const double linear = 2.0 * SEQ * (layers * (4 * hid * hid + 2 * hid * ffn) + hid * 2);
  const double attention = layers * 2 * 2.0 * SEQ * SEQ * hid;
  struct ds_model *m = squad_large();
  double fwd = 0, bwd = 0;
  int attn_layers = 0;
  for (int32_t i = 0; i < m->n_layers; i++) {
    fwd += m->layers[i].fwd_flops;
    bwd += m->layers[i].bwd_flops;
    if (m->layers[i].cls == DS_LAYER_ATTENTION) attn_layers++;
  }
  cr_assert_float_eq(fwd, linear + attention, 0.5);
  cr_assert_float_eq(bwd, 2 * (linear + attention), 0.5);
  cr_assert_eq(attn_layers, 24, "one attention core per layer");
  cr_assert_float_eq(m->input_bytes, 3 * 8.0 * SEQ, 0.5);
  cr_assert_float_eq(m->output_bytes, 2 * 4.0 * SEQ, 0.5);
  ds_model_free(m);
}
