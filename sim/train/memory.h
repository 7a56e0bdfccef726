/*
 * Peak memory per GPU of single-GPU, DDP and parameter-server training
 * (ds_ddp_memory): what stays all iteration plus the most of what comes and
 * goes, walked through the iteration; what autograd saves for backward
 * (ds_ddp_saved_bytes), which DataParallel's sum (dp.h) uses too.
 * docs/architecture.md's memory paragraph says what is counted and what is
 * not; validation/memory.csv measures it.
 */
#ifndef DS_SIM_TRAIN_MEMORY_H
#define DS_SIM_TRAIN_MEMORY_H

#include <stdint.h>

#include "sim/train/compute.h"
#include "sim/train/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-GPU memory of single-GPU and DDP training, in bytes, at its peak.
 * What stays for the whole iteration: the parameters, the optimizer state,
 * DDP's buckets and the hook's buffers. What comes and goes, walked through
 * one iteration (docs/architecture.md, the memory paragraph): at backward's start
 * the saved activations, the model's output (the training loop holds it:
 * `out = model(x); loss = criterion(out, y); loss.backward()`) and the
 * loss's two gradients; as backward runs back through the layers, each
 * layer's saved tensors are freed and its gradients allocated (.grad
 * appears at its AccumulateGrad; zero_grad(set_to_none=True) freed them);
 * at the step, the gradients and the optimizer's temporaries. Measured on
 * an H200 (bench/mem_phases.py, bench/results/gpu-2026-11-26d-h200/call2):
 * the forward's live growth matches the saved activations plus the
 * output within 0.1 GiB on six runs. */
enum ds_mem_peak {
  DS_PEAK_BACKWARD_START, /* the loss's backward: everything saved is live */
  DS_PEAK_BACKWARD,       /* after layer peak_layer's backward */
  DS_PEAK_STEP            /* the optimizer step */
};

struct ds_ddp_memory {
  double params;      /* parameters in the training dtype */
  double grads;       /* .grad tensors (0 when they are views into the buckets) */
  double buckets;     /* DDP's flat bucket copies of the gradients */
  double optimizer;   /* momentum (SGD) or two moments (Adam); under amp O2 the
                       * fp32 masters and moments (12 bytes a stepped element) */
  double activations; /* saved for backward, whole batch (ds_ddp_saved_bytes) */
  double output;      /* the model's output, held through backward and the step */
  double loss_grads;  /* the loss's backward: nll_loss's gradient and
                       * log_softmax's, each the size of its saved log-probs */
  double step_temp;   /* the step's temporaries (ds_memory_options) */
  double hook;        /* the communication hook's buffers held all iteration
                       * (ds_comm_hook_memory); those that come and go are in
                       * dynamic (live_hook) */
  /* At the peak: where it is, and the saved activations and gradients
   * live then (the output is live throughout, the loss's gradients at
   * backward's start, the step's temporaries at the step). */
  enum ds_mem_peak peak_at;
  int32_t peak_layer; /* DS_PEAK_BACKWARD: the layer just back-propagated */
  const char *peak_layer_name; /* its name, owned by the model (NULL otherwise) */
  double live_activations;
  double live_grads;
  double live_hook;   /* the hook's buffers in flight then (hook_ready_bytes) */
  double dynamic;     /* what comes and goes, at the peak */
  double total;       /* params + optimizer + buckets + hook + dynamic */
};

/* Who holds what: ds_ddp_memory's options. */
struct ds_memory_options {
  int ddp;                 /* DDP's buckets, P bytes, allocated at wrap time */
  int grad_as_bucket_view; /* under ddp: .grad are views into the buckets */
  int grads_kept;          /* .grad live from backward's start: zero_grad()
                            * fills instead of freeing (1.4, 1.9), or an
                            * earlier micro-step left it */
  /* Under grad_as_bucket_view, where .grad comes from when zero_grad() set
   * it to None (current rules; reducer.cpp mark_variable_ready_dense):
   * each backward's autograd makes it afresh and the hook copies it into
   * its view, so one layer's fresh .grad lives at a time; after --no-sync's
   * micro-steps (no hook ran) every parameter's non-view .grad is live at
   * the synchronising backward's start, each freed as its hook copies it. */
  int grads_set_to_none;
  int no_sync_grads;
  double step_numel;       /* parameters this GPU's optimizer steps (its
                            * temporaries); the model's under single and DDP */
  /* The step's temporaries (torch/optim/adam.py, sgd.py): the foreach
   * step (current PyTorch) makes new lists over every parameter it steps,
   * the sqrt of Adam's second moments and, with weight decay, the decayed
   * gradients (`_foreach_add(grads, params, alpha=weight_decay)`); the
   * per-parameter loop of 1.4 and 1.9 (optimizer_loop) holds them for one
   * tensor at a time: Adam's sqrt and its division by the bias correction
   * (two of the largest tensor), the decayed gradient (one more: 1.9's
   * out-of-place add; 1.4's SGD decays in place, so one tensor over). */
  int optimizer_loop;
  int weight_decay;
  /* under ddp, NULL or [n_layers]: what the communication hook allocates
   * once layer l's backward has made its buckets ready, live until the
   * step (ds_comm_hook_ready_bytes: fp16/bf16's half copies, counted as
   * in flight from then on) */
  const double *hook_ready_bytes;
};

/* The optimizer step's temporaries, bytes, under opt (step_numel,
 * optimizer_loop, weight_decay; see ds_memory_options): what single and
 * DDP add at the step, and DataParallel on GPU 0, where its optimizer runs. */
double ds_step_temporaries(const struct ds_model *model, const struct ds_precision *pr,
                           const struct ds_memory_options *opt);

/* What autograd saves for the loss's backward over `samples` samples,
 * outside every layer (the model's loss_act_bytes): in fp32 under --amp, as
 * autocast runs the loss; scaled like the activations under --dtype. */
double ds_loss_saved_bytes(const struct ds_model *model, const struct ds_precision *pr,
                           double samples);

/* The model's output per sample, bytes, in the dtype its last layer
 * writes: half under autocast when that layer is one autocast runs in half
 * (a matmul's, a convolution's), the activations' dtype otherwise (fp32
 * under --amp; --dtype's). What the training loop holds, and what
 * DataParallel's gather moves. */
double ds_output_bytes(const struct ds_model *model, const struct ds_precision *pr);

/* What autograd saves for backward over `batch` samples: the model's
 * activations (under --amp the model file's amp_act_bytes where it has
 * them; otherwise float tensors in the activation dtype, act_int_bytes as
 * they are), the loss's own (loss_act_bytes: in
 * fp32 under --amp, as autocast runs the loss), and under --amp autocast's
 * half copy of each weight it casts (convolutions', matmuls', attention's,
 * and every layer's without a class). */
double ds_ddp_saved_bytes(const struct ds_model *model, const struct ds_precision *pr,
                          int64_t batch);

/* What layer l saves for backward over `batch` samples: its share of
 * ds_ddp_saved_bytes (the loss's excluded), freed by its backward; a
 * layer of bytes per step (model.h bytes_per_step) saves them once. */
double ds_layer_saved_bytes(const struct ds_model *model, const struct ds_precision *pr,
                            int32_t l, int64_t batch);

void ds_ddp_memory(const struct ds_model *model, const struct ds_precision *pr,
                   int64_t batch, const struct ds_memory_options *opt,
                   struct ds_ddp_memory *out);

/* total from the fields: what ds_ps_memory calls after it moves terms. */
void ds_ddp_memory_total(struct ds_ddp_memory *m);

#ifdef __cplusplus
}
#endif

#endif /* DS_SIM_TRAIN_MEMORY_H */
