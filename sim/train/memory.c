/*
 * Peak memory per GPU (memory.h): the saved activations, and the walk
 * through one iteration.
 */
#include "sim/train/memory.h"

double ds_loss_saved_bytes(const struct ds_model *m, const struct ds_precision *pr,
                           double samples) {
  /* autocast runs the loss in fp32 (log_softmax is on its fp32 list), so
   * only --dtype scales it */
  return m->loss_act_bytes * (pr->half_weight_bytes ? 1.0 : pr->act_bytes / 4.0) * samples;
}

/* What layer l saves per sample: under --amp what the exporter found
 * autocast saves (amp_act_bytes); otherwise its float tensors in the
 * activations' dtype and its integer ones as they are (a file without
 * act_int_bytes or amp_act_bytes: everything scaled, as before). */
static double layer_saved_bytes(const struct ds_layer *l, const struct ds_precision *pr) {
  if (pr->half_weight_bytes && l->amp_act_bytes >= 0) return l->amp_act_bytes;
  return (l->act_bytes - l->act_int_bytes) * (pr->act_bytes / 4.0) + l->act_int_bytes;
}

double ds_layer_saved_bytes(const struct ds_model *m, const struct ds_precision *pr, int32_t l,
                            int64_t batch) {
  const struct ds_layer *ly = &m->layers[l];
  /* autocast's half copies, kept for backward, of the weights it casts:
   * its own, and a tied weight it casts first (model.h tied_cast_numel:
   * GPT-2's lm_head casts wte's; the cache holds that copy through the
   * forward, the matmul saves it for its backward) */
  double cast = ds_layer_autocast_casts_weights(ly)
                    ? (double)(ly->param_numel + ly->tied_cast_numel) * pr->half_weight_bytes
                    : 0;
  /* per sample, or per step (model.h bytes_per_step: an embedding's
   * shared ids) */
  return layer_saved_bytes(ly, pr) * ds_layer_bytes_batch(ly, batch) + cast;
}

double ds_ddp_saved_bytes(const struct ds_model *m, const struct ds_precision *pr,
                          int64_t batch) {
  double saved = 0;
  for (int32_t l = 0; l < m->n_layers; l++) saved += ds_layer_saved_bytes(m, pr, l, batch);
  return saved + ds_loss_saved_bytes(m, pr, (double)batch);
}

double ds_output_bytes(const struct ds_model *m, const struct ds_precision *pr) {
  const struct ds_layer *last = m->n_layers ? &m->layers[m->n_layers - 1] : NULL;
  if (pr->half_weight_bytes)
    return last && ds_layer_autocast_casts_weights(last)
               ? m->output_bytes * pr->half_weight_bytes / 4.0
               : m->output_bytes;
  return m->output_bytes * pr->act_bytes / 4.0;
}

/* The optimizer step's new tensors (ds_memory_options): foreach Adam's
 * sqrt of the second moments (SGD's momentum works in place) and the
 * decayed gradients, over every parameter stepped; under the loop, one
 * tensor's worth of each at a time, Adam's sqrt and division two,
 * BertAdam's three; under amp O2 the fp32 master gradients. */
double ds_step_temporaries(const struct ds_model *m, const struct ds_precision *pr,
                           const struct ds_memory_options *opt) {
  if (m->optimizer == DS_OPT_NONE) return 0;
  /* apex amp O2: post_backward_with_master_weights's empty_like fp32
   * gradient per stepped parameter, live beside the fp16 ones until the
   * patched step sets them to None (apex/amp/_process_optimizer.py:176,
   * :360-362 at 25bfcb91); FusedAdam's kernel makes nothing */
  if (m->optimizer == DS_OPT_APEX_O2) return ds_compute_step_numel(m) * 4.0;
  int adam = m->optimizer == DS_OPT_ADAM;
  if (!opt->optimizer_loop && m->optimizer != DS_OPT_BERTADAM)
    return opt->step_numel * pr->param_bytes * (adam + (opt->weight_decay != 0));
  double largest = 0;
  for (int32_t i = 0; i < m->n_params; i++)
    if ((double)m->params[i].numel > largest) largest = (double)m->params[i].numel;
  if (opt->step_numel < largest) largest = opt->step_numel;
  /* BertAdam (optimization.py:152-171): `update` stays bound while
   * update_with_lr and its negation are made, three tensors at once */
  if (m->optimizer == DS_OPT_BERTADAM) return largest * pr->param_bytes * 3;
  return largest * pr->param_bytes * (2 * adam + (opt->weight_decay != 0));
}

void ds_ddp_memory_total(struct ds_ddp_memory *m) {
  m->total = m->params + m->optimizer + m->buckets + m->hook + m->dynamic;
}

void ds_ddp_memory(const struct ds_model *m, const struct ds_precision *pr, int64_t batch,
                   const struct ds_memory_options *opt, struct ds_ddp_memory *out) {
  double p = (double)m->total_numel * pr->param_bytes;
  *out = (struct ds_ddp_memory){.params = p, .peak_layer = -1};
  out->buckets = opt->ddp ? p : 0;
  /* gradient_as_bucket_view: .grad tensors are views into the buckets */
  out->grads = opt->ddp && opt->grad_as_bucket_view ? 0 : p;
  out->optimizer = p * ds_optimizer_states(m->optimizer);
  /* apex amp O2: the fp32 master weights, exp_avg and exp_avg_sq of every
   * stepped parameter (_process_optimizer.py:44, fused_adam.py:130-132),
   * beside the fp16 model */
  if (m->optimizer == DS_OPT_APEX_O2)
    out->optimizer = ds_compute_step_numel(m) * 4.0 * ds_optimizer_states(m->optimizer);
  out->activations = ds_ddp_saved_bytes(m, pr, batch);
  out->output = ds_output_bytes(m, pr) * (double)batch;
  /* CrossEntropyLoss's backward (every model file's loss): nll_loss's
   * gradient, then log_softmax's, each the size of the log-probs it
   * saved, both live beside them (the H200's GPT-2 runs: 3.06 GiB above
   * the forward's end, twice its 1.53 GiB of log-probs) */
  out->loss_grads = 2 * ds_loss_saved_bytes(m, pr, (double)batch);
  out->step_temp = ds_step_temporaries(m, pr, opt);
  double kept = opt->grads_kept ? out->grads : 0; /* live from the start */
  /* bucket views (memory.h grads_set_to_none; out->grads is 0): no_sync's
   * non-view .grad, all live at the start; otherwise one layer's fresh
   * .grad at a time */
  int views_made_afresh = opt->ddp && opt->grad_as_bucket_view && opt->grads_set_to_none;
  int copied_from_no_sync = views_made_afresh && opt->no_sync_grads;
  if (copied_from_no_sync) kept = p;
  /* backward's start */
  out->peak_at = DS_PEAK_BACKWARD_START;
  out->live_activations = out->activations;
  out->live_grads = kept;
  out->dynamic = out->activations + out->output + out->loss_grads + kept;
  /* back through the layers: layer l's saved tensors freed, its .grad
   * allocated (the loss's saved log-probs and gradients freed first) */
  double saved = out->activations - ds_loss_saved_bytes(m, pr, (double)batch);
  double grads = kept, hook = 0;
  for (int32_t l = m->n_layers - 1; l >= 0; l--) {
    const struct ds_layer *ly = &m->layers[l];
    saved -= ds_layer_saved_bytes(m, pr, l, batch);
    if (saved < 0) saved = 0; /* the sums' rounding, past the first layer */
    if (!opt->grads_kept && out->grads > 0) grads += (double)ly->param_numel * pr->param_bytes;
    if (opt->hook_ready_bytes) hook += opt->hook_ready_bytes[l];
    /* bucket views made afresh: layer l's fresh .grad lives until its hook
     * copies it into its view, beside the layer's state; no_sync's were
     * all there from the start, each freed by its copy */
    double layer_grads = (double)ly->param_numel * pr->param_bytes, fresh = 0;
    if (copied_from_no_sync) {
      grads -= layer_grads;
      if (grads < 0) grads = 0; /* the sums' rounding */
    } else if (views_made_afresh) {
      fresh = layer_grads;
    }
    double live = saved + out->output + grads + hook + fresh;
    if (live > out->dynamic) {
      out->dynamic = live;
      out->peak_at = DS_PEAK_BACKWARD;
      out->peak_layer = l;
      out->peak_layer_name = ly->name;
      out->live_activations = saved;
      out->live_grads = grads + fresh;
      out->live_hook = hook;
    }
  }
  /* the step */
  double step = out->output + out->grads + out->step_temp;
  if (step > out->dynamic) {
    out->dynamic = step;
    out->peak_at = DS_PEAK_STEP;
    out->peak_layer = -1;
    out->peak_layer_name = NULL;
    out->live_activations = 0;
    out->live_grads = out->grads;
    out->live_hook = 0; /* finalize_backward waited for every bucket's future */
  }
  out->hook = 0;
  ds_ddp_memory_total(out);
}
