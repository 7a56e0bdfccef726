/*
 * The optimizer step's kernels (compute.h ds_compute_step_ns): PyTorch's
 * foreach calls and the launches multi_tensor_apply splits them into, or
 * 1.4's and 1.9's per-tensor loop, with weight decay and
 * --no-bn-weight-decay's groups, or --optimizer bertadam's (run_squad.py's
 * apex gradient clipper and BertAdam's loop), or apex-o2-fusedadam's (the
 * same script's --fp16 step: amp O2's unscale, the clipper, FusedAdam and
 * the copy back to the fp16 model); GradScaler's unscale_ before it,
 * zero_grad's fills after it, and AccumulateGrad's additions where .grad
 * is kept.
 */
#include "sim/train/compute.h"

#include <limits.h>
#include <string.h>

/* compute.h: PyTorch's foreach optimizers, kernel by kernel, and 1.4's
 * per-tensor loop (kernels and passes per tensor); weight decay adds one
 * kernel of 3 passes to either */
enum { SGD_KERNELS = 3, SGD_PASSES = 8, ADAM_KERNELS = 7, ADAM_PASSES = 18 };
enum { LOOP_SGD_KERNELS = 3, LOOP_SGD_PASSES = 8, LOOP_ADAM_KERNELS = 8, LOOP_ADAM_PASSES = 20 };
enum { DECAY_PASSES = 3 };

/* Kernels per foreach call set, or per tensor under the loop (an
 * optimizer's: both callers return before it under --optimizer none). */
static int step_kernels_each(const struct ds_compute *c, enum ds_optimizer opt) {
  int adam = opt == DS_OPT_ADAM;
  int k = c->optimizer_loop ? (adam ? LOOP_ADAM_KERNELS : LOOP_SGD_KERNELS)
                            : (adam ? ADAM_KERNELS : SGD_KERNELS);
  return k + (c->weight_decay ? 1 : 0);
}

/* Whether parameter p sits in --no-bn-weight-decay's group of weight_decay
 * 0: a name containing "bn" (DeepLearningExamples' optimizers.py
 * get_sgd_optimizer: [v for n, v in parameters if "bn" in n]). */
static int skips_decay(const struct ds_compute *c, const struct ds_model *m, int32_t p) {
  return c->weight_decay && c->no_bn_weight_decay && m->params[p].name &&
         strstr(m->params[p].name, "bn") != NULL;
}

/* The tensors and elements of that group (0 and 0 without it). */
static int32_t undecayed(const struct ds_compute *c, const struct ds_model *m, double *numel) {
  int32_t n = 0;
  *numel = 0;
  for (int32_t p = 0; p < m->n_params; p++)
    if (skips_decay(c, m, p)) {
      n++;
      *numel += (double)m->params[p].numel;
    }
  return n;
}

/* --optimizer bertadam and apex-o2-fusedadam: NVIDIA DeepLearningExamples'
 * BERT run_squad.py, its fp32 step and its --fp16 one (compute.h). Read at
 * DeepLearningExamples 128ecbe4, whose PyTorch/LanguageModeling/BERT/
 * run_squad.py and optimization.py Lambda's fork
 * (LambdaLabsML/DeepLearningExamples lambda/benchmark, c1781a37) carries
 * unchanged; paths below are in that directory. Both build the optimizer
 * over the same two parameter groups and run the same GradientClipper. */
static int squad_step(const struct ds_model *m) {
  return m->optimizer == DS_OPT_BERTADAM || m->optimizer == DS_OPT_APEX_O2;
}

/* run_squad.py:959: parameters whose name holds "pooler" are not in the
 * optimizer (nor, through amp.master_params, in the clipper's list). */
static int squad_steps(const struct ds_model *m, int32_t p) {
  return !m->params[p].name || strstr(m->params[p].name, "pooler") == NULL;
}

/* run_squad.py:961-965: weight_decay 0.01 on every parameter whose name
 * holds none of 'bias', 'LayerNorm.bias', 'LayerNorm.weight'; 0.0 on the
 * rest (optimization.py:161 then skips the decay's two kernels). */
static int squad_decays(const struct ds_model *m, int32_t p) {
  const char *n = m->params[p].name;
  return !n || (strstr(n, "bias") == NULL && strstr(n, "LayerNorm.weight") == NULL);
}

/* The elements run_squad.py's optimizer steps (the clipper's gradients):
 * every parameter's but the pooler's. */
static double squad_numel(const struct ds_model *model) {
  double n = 0;
  for (int32_t p = 0; p < model->n_params; p++)
    if (squad_steps(model, p)) n += (double)model->params[p].numel;
  return n;
}

double ds_compute_step_numel(const struct ds_model *model) {
  return squad_step(model) ? squad_numel(model) : (double)model->total_numel;
}

/* One tensor's kernels in BertAdam.step (optimization.py:123-173), in
 * order, each a Python-dispatched aten op of its own: passes over the
 * tensor's fp32 elements (reads + writes), or a 0-d tensor's (passes 0:
 * BERTADAM_SCALAR_BYTES); decay: only in the weight_decay 0.01 group;
 * torch: only under PyTorch 1.x's clip_grad_norm_ (1) or 2.x's (2).
 * :146 clip_grad_norm_(p, 1.0) on the one tensor (error_if_nonfinite=False,
 * no sync). PyTorch 1.10 to 1.13 (torch/nn/utils/clip_grad.py):
 * torch.norm(g) reads g; torch.stack of that 0-d norm, torch.norm of the
 * stack, + 1e-6, max_norm / (Tensor.__rdiv__: reciprocal, then mul),
 * torch.clamp(max=1.0): 0-d; g.mul_(clip_coef_clamped) reads and writes
 * g. PyTorch 2.x (c->clip_foreach) groups the one gradient by device and
 * dtype and takes torch._foreach_norm, which launches at::zeros of its
 * per-chunk partial sums, multi_tensor_apply's LpNormFunctor over g and
 * lpnorm_cleanup (aten/src/ATen/native/cuda/ForeachReduceOp.cu): three
 * kernels where 1.x has one, the partials a few bytes, charged as 0-d;
 * the rest as 1.x, with torch.linalg.vector_norm for the stack's norm and
 * torch._foreach_mul_ for the mul_. :150 next_m.mul_(beta1).add_(1 -
 * beta1, grad); :151 next_v.mul_(beta2).addcmul_(1 - beta2, grad, grad)
 * (the gradient read once); :152 next_v.sqrt() (out of place), + e,
 * next_m / that; :162 group['weight_decay'] * p.data, update += it; :170
 * lr_scheduled * update; :171 -update_with_lr, p.data.add_(it).
 * --learning_rate=0.0 (Lambda's runs) makes each update zero; every kernel
 * runs regardless. */
static const struct {
  const char *op;
  int passes, decay, torch;
} BERTADAM_OPS[] = {
    {"norm(grad)", 1, 0, 1},      {"zeros(partials)", 0, 0, 2}, {"_foreach_norm", 1, 0, 2},
    {"lpnorm_cleanup", 0, 0, 2},  {"stack", 0, 0, 0},           {"norm", 0, 0, 0},
    {"add(1e-6)", 0, 0, 0},       {"reciprocal", 0, 0, 0},      {"mul(max_norm)", 0, 0, 0},
    {"clamp", 0, 0, 0},           {"grad.mul_", 2, 0, 0},       {"next_m.mul_", 2, 0, 0},
    {"next_m.add_", 3, 0, 0},     {"next_v.mul_", 2, 0, 0},     {"next_v.addcmul_", 3, 0, 0},
    {"sqrt", 2, 0, 0},            {"add(e)", 2, 0, 0},          {"div", 3, 0, 0},
    {"mul(weight_decay)", 2, 1, 0}, {"update.add_", 3, 1, 0},   {"mul(lr)", 2, 0, 0},
    {"neg", 2, 0, 0},             {"p.add_", 3, 0, 0}};
enum { BERTADAM_N_OPS = sizeof BERTADAM_OPS / sizeof *BERTADAM_OPS };
/* a 0-d fp32 kernel: reads one 4-byte scalar, writes one */
#define BERTADAM_SCALAR_BYTES 8.0

/* Whether op i runs on a tensor of that group under c's PyTorch. */
static int bertadam_runs(const struct ds_compute *c, int i, int decays) {
  int torch = c->clip_foreach ? 2 : 1;
  return (!BERTADAM_OPS[i].decay || decays) &&
         (!BERTADAM_OPS[i].torch || BERTADAM_OPS[i].torch == torch);
}

int ds_compute_bertadam_tensor_kernels(const struct ds_compute *c, int decays) {
  int k = 0;
  for (int i = 0; i < BERTADAM_N_OPS; i++) k += bertadam_runs(c, i, decays);
  return k;
}

int ds_compute_bertadam_tensor_passes(const struct ds_compute *c, int decays) {
  int p = 0;
  for (int i = 0; i < BERTADAM_N_OPS; i++)
    if (bertadam_runs(c, i, decays)) p += BERTADAM_OPS[i].passes;
  return p;
}

/* The loop's kernels over every stepped tensor, and their time and bytes
 * (ns and bytes may be NULL): each kernel its own bytes plus
 * kernel_overhead (ds_compute_kernel_ns). */
static int bertadam_loop(const struct ds_compute *c, const struct ds_model *m, double *ns,
                         double *bytes) {
  int kernels = 0;
  double t = 0, b = 0;
  for (int32_t p = 0; p < m->n_params; p++) {
    if (!squad_steps(m, p)) continue;
    int decays = squad_decays(m, p);
    double tensor = (double)m->params[p].numel * c->precision.param_bytes;
    for (int i = 0; i < BERTADAM_N_OPS; i++) {
      if (!bertadam_runs(c, i, decays)) continue;
      double kb = BERTADAM_OPS[i].passes ? BERTADAM_OPS[i].passes * tensor
                                         : BERTADAM_SCALAR_BYTES;
      kernels++;
      b += kb;
      if (ns) t += ds_compute_kernel_ns(c, 0, kb);
    }
  }
  if (ns) *ns = t;
  if (bytes) *bytes = b;
  return kernels;
}

int ds_compute_step_kernels(const struct ds_compute *c, const struct ds_model *model) {
  if (model->optimizer == DS_OPT_NONE) return 0;
  if (model->optimizer == DS_OPT_BERTADAM) return bertadam_loop(c, model, NULL, NULL);
  if (model->optimizer == DS_OPT_APEX_O2) return ds_compute_step_launches(c, model);
  int k = step_kernels_each(c, model->optimizer);
  double numel;
  int32_t skip = undecayed(c, model, &numel);
  /* the loop: no decay kernel on the undecayed group's tensors */
  if (c->optimizer_loop) return k * model->n_params - skip;
  if (skip == 0) return k;
  /* foreach: each parameter group its own calls, the undecayed group's
   * without the decay's */
  return (k - 1) + (skip < model->n_params ? k : 0);
}

/* GradScaler.unscale_ (compute.h): its scalar kernels (inv_scale's
 * double(), reciprocal() and float(), found_inf's torch.full, and
 * _MultiDeviceReplicator.get's copies of both, .to(copy=True)), and the
 * Python ops that launch them plus the foreach call. */
enum { UNSCALE_SCALAR_KERNELS = 6, UNSCALE_HOST_OPS = UNSCALE_SCALAR_KERNELS + 1 };
/* multi_tensor_apply's chunk and its launch limits
 * (aten/src/ATen/native/cuda/MultiTensorApply.cuh: kChunkSize,
 * DepthToMaxConfig<false>'s depth_to_max_tensors, _scalarlist and
 * depth_to_max_blocks), indexed by depth - 1 (the tensor lists a call
 * passes, its output list included). The 4 KB kernel argument's: every
 * foreach call of the H200 traces launches what these limits give and not
 * what the 32 KB argument's (770 tensors, 2240 blocks) would
 * (bench/results/gpu-2026-11-26-h200/notes-rn50-classes-2026-11-27.md:
 * ResNet-50's _foreach_mul_ and both _foreach_add_ 3 launches each and
 * unscale_ 3, where 32 KB gives 1; ResNet-101's 4 and 6, SE-ResNeXt-101's
 * 5 and 8, BERT-base's Adam 6 and GPT-2's 7 per call, all 20 traces of
 * 2026-11-26). */
#define MTA_CHUNK 65536
enum { MTA_BLOCKS = 320, MTA_MAX_DEPTH = 5 };
/* [0]: tensor lists only; [1]: with a scalar per tensor (a scalar list) */
static const int32_t MTA_TENSORS[2][MTA_MAX_DEPTH] = {{110, 64, 48, 36, 30},
                                                      {96, 64, 48, 36, 30}};

/* The parameter groups a foreach call runs over: every parameter, or
 * --no-bn-weight-decay's decayed and undecayed groups (skips_decay), or
 * run_squad.py's (squad_steps): both its groups in param_groups order (the
 * clipper's list, and amp O2's lists of fp16 parameters and their fp32
 * masters), or one of them (FusedAdam's call per group). */
enum mta_group {
  MTA_ALL,
  MTA_DECAYED,
  MTA_UNDECAYED,
  MTA_SQUAD,
  MTA_SQUAD_DECAYED,
  MTA_SQUAD_UNDECAYED
};

/* Which parameters an optimizer steps: every one (of NULL), or those p
 * with of[p] == set (a parameter server's shard, ps.h). */
struct step_set {
  const int32_t *of;
  int32_t set;
};

static int in_set(struct step_set s, int32_t p) { return !s.of || s.of[p] == s.set; }

/* The launches of one foreach call over `group`'s parameters in `s` with
 * at most max_tensors tensors a launch: a block per chunk, in registration
 * order (ds_model_registered: model.parameters()'s, which the file's order
 * is not for BERT's embeddings). PyTorch's optimizer keeps each param
 * group's tensors as list(params) (torch/optim/optimizer.py
 * add_param_group), _init_group appends them in that order, and
 * _group_tensors_by_device_and_dtype (torch/utils/_foreach_utils.py, in C++
 * aten/src/ATen/native/ForeachUtils.h
 * _group_tensors_by_first_tensors_device_and_dtype) splits them by
 * (device, dtype) appending each in input order; GradScaler's
 * _unscale_grads_ walks param_groups' params the same way. A rank's
 * parameters share one device and one dtype here (the model's, or fp32
 * masters under --amp), so each call's list is that one group. A launch when the blocks fill, or the tensors do at a tensor's
 * last chunk; a tensor cut by a full launch carries on as the next
 * launch's first; empty tensors take no block. Closed form per tensor (no
 * walk over its chunks, which took seconds for numel 1e13): of the blocks
 * already queued plus its chunks, every MTA_BLOCKS-th fills a launch; each
 * fill before its last chunk leaves it alone in the next launch (tensors
 * 1), and its last chunk launches if the blocks fill there or the tensors
 * have reached max_tensors. */
static int64_t mta_launches(const struct ds_compute *c, const struct ds_model *model,
                            struct step_set s, enum mta_group group, int32_t max_tensors) {
  int64_t launches = 0, blocks = 0;
  int32_t tensors = 0, n = model->n_params;
  /* the clipper's list is amp.master_params(optimizer), param_groups in
   * order (apex/amp/_amp_state.py:60-69 at 25bfcb91): the weight_decay
   * 0.01 group's tensors, then the 0.0 group's (run_squad.py:962-965),
   * each in registration order: two walks, k < n the first; amp O2's
   * all_fp16_params and all_fp32_from_fp16_params are built the same way
   * (apex/amp/_process_optimizer.py:33-72); one group alone, one walk */
  int squad = group == MTA_SQUAD || group == MTA_SQUAD_DECAYED || group == MTA_SQUAD_UNDECAYED;
  int32_t first = group == MTA_SQUAD_UNDECAYED ? n : 0;
  int32_t end = group == MTA_SQUAD || group == MTA_SQUAD_UNDECAYED ? 2 * n : n;
  for (int32_t k = first; k < end; k++) {
    int32_t p = ds_model_registered(model, k % n);
    int64_t numel = model->params[p].numel;
    if (numel <= 0 || !in_set(s, p)) continue;
    if (squad) {
      if (!squad_steps(model, p) || squad_decays(model, p) != (k < n)) continue;
    } else if (group != MTA_ALL && (group == MTA_UNDECAYED) != skips_decay(c, model, p)) {
      continue;
    }
    tensors++;
    int64_t queued = blocks + (numel + MTA_CHUNK - 1) / MTA_CHUNK;
    int fills_at_last = queued % MTA_BLOCKS == 0;
    int64_t fills_before_last = queued / MTA_BLOCKS - fills_at_last;
    if (fills_before_last > 0) tensors = 1;
    launches += fills_before_last;
    if (fills_at_last || tensors == max_tensors) {
      launches++;
      blocks = 0;
      tensors = 0;
    } else {
      blocks = queued % MTA_BLOCKS;
    }
  }
  return launches + (blocks > 0);
}

/* A launch count as the int the callers take: at most about 47,684 a
 * tensor under model.c's numel limit, but many such tensors could pass
 * INT_MAX; such a model fits no GPU's memory, so saturating is enough. */
static int launch_count(int64_t launches) {
  return launches > INT_MAX ? INT_MAX : (int)launches;
}

/* --optimizer apex-o2-fusedadam: run_squad.py --fp16 (:967-984 at
 * c1781a37 and 128ecbe4, :959-976 at a9e2c1d5) builds apex's
 * FusedAdam(optimizer_grouped_parameters, bias_correction=False) over the
 * two groups, then amp.initialize(opt_level="O2", keep_batchnorm_fp32=False,
 * loss_scale="dynamic"): every parameter an fp16 model parameter with an
 * fp32 master in the optimizer (apex/amp/_process_optimizer.py:28-90 at
 * 25bfcb91; none stays fp32: keep_batchnorm_fp32 False). Read at apex
 * 25bfcb91 (the 2021-11 apex of the DLE rows; amp's lines unchanged until
 * its removal). After backward, in order (compute.h):
 *  - amp.scale_loss's exit (apex/amp/handle.py:119-127): the scaler's
 *    clear_overflow_state, _overflow_buf.zero_() on its one int
 *    (scaler.py:191-194, the buffer :56); post_backward_with_master_weights
 *    (_process_optimizer.py:161-202): an empty_like fp32 master gradient
 *    per parameter (an allocation, no kernel) and LossScaler.unscale
 *    (scaler.py:94-117): multi_tensor_scale over [fp16 grads, fp32 master
 *    grads] (depth 2), reading 2 and writing 4 bytes an element; then
 *    update_scale's _overflow_buf.item() (scaler.py:197-200), a sync;
 *  - the GradientClipper on the fp32 master gradients (below);
 *  - FusedAdam.step (apex/optimizers/fused_adam.py:105-170): per group one
 *    multi_tensor_adam over [g, p, m, v] (depth 4), the decayed group then
 *    the undecayed one; its AdamFunctor (csrc/multi_tensor_adam.cu:24-127)
 *    reads the gradient, weight and both moments (:80-83) and writes the
 *    three (:120-122), all fp32: 7 passes, the weight decay inside it;
 *  - amp's patched step (_process_optimizer.py:353-363):
 *    _master_params_to_model_params (:14-22), multi_tensor_scale over
 *    [fp32 masters, fp16 params] (depth 2), 4 + 2 bytes an element; the
 *    master gradients set to None;
 *  - amp's patched zero_grad (:366-382): detach_() and zero_() on every
 *    fp16 gradient (the fills: ds_compute_zero_grad_ns), which the next
 *    scale_loss's prepare_backward_with_master_weights (:142-158) sets to
 *    None, so backward makes new ones and AccumulateGrad adds nothing.
 * multi_tensor_apply as the clipper's (csrc/multi_tensor_apply.cuh:16-17:
 * 110, 64, 48, 36 tensors at depth 1-4, 320 chunks of 65,536 elements,
 * apex/multi_tensor_apply/__init__.py:3). */
#define APEX_MASTER_BYTES 4.0 /* fp32: master weights, their gradients, moments */
#define APEX_FLAG_BYTES 4.0   /* the scaler's one-int _overflow_buf */
enum { APEX_ADAM_PASSES = 7, APEX_ADAM_DEPTH = 4, APEX_SCALE_DEPTH = 2 };

/* FusedAdam's launches, a call per group, then the copy back's. */
static int64_t apex_step_launches(const struct ds_compute *c, const struct ds_model *model) {
  struct step_set all = {NULL, 0};
  int32_t adam = MTA_TENSORS[0][APEX_ADAM_DEPTH - 1];
  int32_t scale = MTA_TENSORS[0][APEX_SCALE_DEPTH - 1];
  return mta_launches(c, model, all, MTA_SQUAD_DECAYED, adam) +
         mta_launches(c, model, all, MTA_SQUAD_UNDECAYED, adam) +
         mta_launches(c, model, all, MTA_SQUAD, scale);
}

/* What they move: FusedAdam's 7 fp32 passes, the copy's fp32 read and
 * fp16 write, over every stepped element. */
static double apex_step_bytes(const struct ds_compute *c, const struct ds_model *model) {
  return squad_numel(model) * (APEX_ADAM_PASSES * APEX_MASTER_BYTES + APEX_MASTER_BYTES +
                               c->precision.param_bytes);
}

int ds_compute_amp_unscale_launches(const struct ds_compute *c, const struct ds_model *model) {
  if (model->optimizer != DS_OPT_APEX_O2) return 0;
  /* the flag's zero_, then multi_tensor_scale's launches */
  return launch_count(1 + mta_launches(c, model, (struct step_set){NULL, 0}, MTA_SQUAD,
                                       MTA_TENSORS[0][APEX_SCALE_DEPTH - 1]));
}

double ds_compute_amp_unscale_ns(const struct ds_compute *c, const struct ds_model *model,
                                 double *bytes) {
  *bytes = 0;
  int launches = ds_compute_amp_unscale_launches(c, model);
  if (launches == 0) return 0;
  double grads = squad_numel(model) * (c->precision.param_bytes + APEX_MASTER_BYTES);
  *bytes = APEX_FLAG_BYTES + grads;
  double ns = ds_compute_kernel_ns(c, 0, APEX_FLAG_BYTES);
  int mta = launches - 1; /* none without gradients */
  if (mta > 0)
    ns += ds_compute_kernel_ns(c, 0, grads) + (mta - 1) * c->params.kernel_overhead_ns;
  return ns;
}

int ds_compute_unscale_launches(const struct ds_compute *c, const struct ds_model *model) {
  /* no optimizer, no scaler.step(): nothing unscales */
  if (c->amp != DS_AMP_FP16 || model->optimizer == DS_OPT_NONE) return 0;
  /* one list, the gradients read and written in place: depth 1 */
  return launch_count(
      mta_launches(c, model, (struct step_set){NULL, 0}, MTA_ALL, MTA_TENSORS[0][0]));
}

/* The foreach step's calls per parameter group, as (depth, scalar list)
 * pairs: torch/optim/sgd.py _multi_tensor_sgd (momentum, not the first
 * step): _foreach_mul_(bufs, momentum) 1, _foreach_add_(bufs, grads) 2,
 * _foreach_add_(params, bufs) 2; adam.py _multi_tensor_adam (capturable
 * off): _foreach_lerp_(exp_avgs, grads) 2, _foreach_mul_(exp_avg_sqs) 1,
 * _foreach_addcmul_(exp_avg_sqs, grads, grads) 3, _foreach_sqrt 2 (out of
 * place), _foreach_div_(.., bias_correction2_sqrt) 1 with a scalar list,
 * _foreach_add_(.., eps) 1, _foreach_addcdiv_(params, exp_avgs, denom,
 * step_size) 3 with a scalar list; weight decay first _foreach_add(grads,
 * params) 3 (out of place). */
static const int SGD_CALL_DEPTH[] = {1, 2, 2};
static const int ADAM_CALL_DEPTH[] = {2, 1, 3, 2, 1, 1, 3};
static const int ADAM_CALL_SCALARLIST[] = {0, 0, 0, 0, 1, 0, 1};
enum { DECAY_CALL_DEPTH = 3 };

static int64_t group_launches(const struct ds_compute *c, const struct ds_model *model,
                              struct step_set s, enum mta_group group, int decays) {
  int adam = model->optimizer == DS_OPT_ADAM;
  int n = adam ? ADAM_KERNELS : SGD_KERNELS;
  int64_t launches =
      decays ? mta_launches(c, model, s, group, MTA_TENSORS[0][DECAY_CALL_DEPTH - 1]) : 0;
  for (int i = 0; i < n; i++) {
    int depth = adam ? ADAM_CALL_DEPTH[i] : SGD_CALL_DEPTH[i];
    int list = adam && ADAM_CALL_SCALARLIST[i];
    launches += mta_launches(c, model, s, group, MTA_TENSORS[list][depth - 1]);
  }
  return launches;
}

int ds_compute_step_launches(const struct ds_compute *c, const struct ds_model *model) {
  /* every parameter: the shard form's rule over the whole model */
  return ds_compute_step_launches_of(c, model, NULL, 0);
}

int ds_compute_step_launches_of(const struct ds_compute *c, const struct ds_model *model,
                                const int32_t *set_of_param, int32_t set) {
  if (model->optimizer == DS_OPT_NONE) return 0;
  /* BertAdam's loop: a launch per kernel (ps, the one caller with a
   * subset, refuses it: sim/cli/options_check.c) */
  if (model->optimizer == DS_OPT_BERTADAM) return bertadam_loop(c, model, NULL, NULL);
  if (model->optimizer == DS_OPT_APEX_O2) return launch_count(apex_step_launches(c, model));
  struct step_set s = {set_of_param, set};
  int32_t tensors = 0, skip = 0;
  for (int32_t p = 0; p < model->n_params; p++)
    if (in_set(s, p)) {
      tensors++;
      skip += skips_decay(c, model, p);
    }
  if (tensors == 0) return 0;
  /* the loop: its kernels per tensor, no decay kernel on the undecayed */
  if (c->optimizer_loop) return tensors * step_kernels_each(c, model->optimizer) - skip;
  if (skip == 0) return launch_count(group_launches(c, model, s, MTA_ALL, c->weight_decay));
  return launch_count(group_launches(c, model, s, MTA_UNDECAYED, 0) +
                      (skip < tensors ? group_launches(c, model, s, MTA_DECAYED, 1) : 0));
}

double ds_compute_unscale_ns(const struct ds_compute *c, const struct ds_model *model,
                             double *bytes) {
  *bytes = 0;
  int launches = ds_compute_unscale_launches(c, model);
  if (c->amp != DS_AMP_FP16 || model->optimizer == DS_OPT_NONE) return 0;
  /* _amp_foreach_non_finite_check_and_unscale_ reads and writes every fp32
   * gradient (2 passes); the scalars move a few bytes each */
  *bytes = 2.0 * (double)model->total_numel * c->precision.param_bytes;
  double overheads = UNSCALE_SCALAR_KERNELS + launches;
  if (launches == 0) return overheads * c->params.kernel_overhead_ns;
  return ds_compute_kernel_ns(c, 0, *bytes) + (overheads - 1) * c->params.kernel_overhead_ns;
}

int ds_compute_unscale_host_ops(const struct ds_compute *c) {
  return c->amp == DS_AMP_FP16 && c->optimizer_loop ? UNSCALE_HOST_OPS : 0;
}

int ds_compute_optimizer_passes(const struct ds_compute *c, enum ds_optimizer opt) {
  if (opt == DS_OPT_NONE) return 0;
  if (opt == DS_OPT_BERTADAM) return ds_compute_bertadam_tensor_passes(c, 1);
  /* FusedAdam's 7 fp32 passes and the copy back's fp32 read and model
   * write, in the model's parameter bytes (17 under fp16) */
  if (opt == DS_OPT_APEX_O2)
    return (int)((APEX_ADAM_PASSES * APEX_MASTER_BYTES + APEX_MASTER_BYTES +
                  c->precision.param_bytes) /
                 c->precision.param_bytes);
  int adam = opt == DS_OPT_ADAM;
  int p = c->optimizer_loop ? (adam ? LOOP_ADAM_PASSES : LOOP_SGD_PASSES)
                            : (adam ? ADAM_PASSES : SGD_PASSES);
  return p + (c->weight_decay ? DECAY_PASSES : 0);
}

/* The tensors optimizer.zero_grad() fills: its param_groups' (under
 * bertadam and apex-o2-fusedadam not the pooler's: run_squad.py:959),
 * else every parameter. */
static int32_t zeroed(const struct ds_model *model, int32_t p) {
  return !squad_step(model) || squad_steps(model, p);
}

/* Whether zero_grad fills: under 1.9's rules, and always under amp O2,
 * whose patched zero_grad (apex/amp/_process_optimizer.py:367-382) runs
 * zero_() on every fp16 gradient whatever the PyTorch */
static int fills_grads(const struct ds_compute *c, const struct ds_model *model) {
  return c->zero_grad_fill || model->optimizer == DS_OPT_APEX_O2;
}

int ds_compute_step_host_ops(const struct ds_compute *c, const struct ds_model *model) {
  if (!c->optimizer_loop && !squad_step(model)) return 0;
  int32_t fills = 0;
  for (int32_t p = 0; fills_grads(c, model) && p < model->n_params; p++)
    fills += zeroed(model, p);
  return ds_compute_step_kernels(c, model) + fills;
}

/* One kernel per parameter tensor first .. first + count - 1, each
 * `passes` over its gradient (zero_grad's fills: only the tensors it
 * zeroes): their time, and in *bytes what they move. */
static double per_tensor_kernels_ns(const struct ds_compute *c, const struct ds_model *model,
                                    int32_t first, int32_t count, double passes, int fills,
                                    double *bytes) {
  double ns = 0;
  *bytes = 0;
  for (int32_t p = first; p < first + count; p++) {
    if (fills && !zeroed(model, p)) continue;
    double b = passes * (double)model->params[p].numel * c->precision.param_bytes;
    *bytes += b;
    ns += ds_compute_kernel_ns(c, 0, b);
  }
  return ns;
}

double ds_compute_zero_grad_ns(const struct ds_compute *c, const struct ds_model *model,
                               double *bytes) {
  *bytes = 0;
  if (!fills_grads(c, model)) return 0;
  return per_tensor_kernels_ns(c, model, 0, model->n_params, 1, 1, bytes);
}

double ds_compute_accum_grad_ns(const struct ds_compute *c, const struct ds_model *model,
                                int32_t layer, double *bytes) {
  const struct ds_layer *ly = &model->layers[layer];
  return per_tensor_kernels_ns(c, model, ly->param_first, ly->param_count, 3, 0, bytes);
}

double ds_compute_step_host_op_ns(const struct ds_compute *c) {
  return c->params.host_grad_copy_ns;
}

double ds_compute_step_bytes(const struct ds_compute *c,
                             const struct ds_model *model) {
  if (model->optimizer == DS_OPT_NONE) return 0;
  if (model->optimizer == DS_OPT_BERTADAM) {
    double bytes;
    bertadam_loop(c, model, NULL, &bytes);
    return bytes;
  }
  if (model->optimizer == DS_OPT_APEX_O2) return apex_step_bytes(c, model);
  int passes = ds_compute_optimizer_passes(c, model->optimizer);
  double skipped;
  undecayed(c, model, &skipped); /* --no-bn-weight-decay: no decay pass over these */
  return (double)model->total_numel * c->precision.param_bytes * passes -
         skipped * c->precision.param_bytes * DECAY_PASSES;
}

double ds_compute_step_ns(const struct ds_compute *c,
                          const struct ds_model *model) {
  if (model->optimizer == DS_OPT_NONE) return 0;
  if (model->optimizer == DS_OPT_BERTADAM) {
    double ns;
    bertadam_loop(c, model, &ns, NULL);
    return ns;
  }
  if (c->optimizer_loop) {
    /* 1.4: every tensor's kernels, each its own bytes and overhead */
    int k = step_kernels_each(c, model->optimizer);
    double passes = ds_compute_optimizer_passes(c, model->optimizer) / (double)k;
    double ns = 0;
    for (int32_t p = 0; p < model->n_params; p++) {
      double b = (double)model->params[p].numel * c->precision.param_bytes;
      if (skips_decay(c, model, p)) /* its kernels without the decay's */
        ns += (k - 1) * ds_compute_kernel_ns(
                            c, 0, (passes * k - DECAY_PASSES) / (k - 1) * b);
      else
        ns += k * ds_compute_kernel_ns(c, 0, passes * b);
    }
    return ns;
  }
  /* one kernel over all the bytes, plus the other launches' overheads */
  return ds_compute_kernel_ns(c, 0, ds_compute_step_bytes(c, model)) +
         (ds_compute_step_launches(c, model) - 1) * c->params.kernel_overhead_ns;
}

/* GradientClipper.step (run_squad.py:717-724, called at :1092 after
 * backward on amp.master_params(optimizer): under fp32 the optimizer's
 * parameters, under amp O2 their fp32 masters, the pooler's left out).
 * apex's multi_tensor_l2norm (csrc/multi_tensor_l2norm_kernel.cu, apex
 * 25bfcb91: the 2021-11 apex of DeepLearningExamples' pytorch:21.11 rows;
 * the file's lines unchanged to 2022-10) runs at::zeros({320}) (:302, a
 * fill), multi_tensor_apply<1> over the gradients (:327), then
 * cleanup<<<1, 512>>> (:347), which reads the 320 partial sums and writes
 * the norm. apex's multi_tensor_apply
 * (csrc/multi_tensor_apply.cuh:16-17, :97-101) launches as PyTorch's
 * does (mta_launches): 320 blocks, 110 tensors at depth 1 and 64 at depth
 * 2, a block per chunk of 2048 x 32 = 65,536 elements
 * (apex/multi_tensor_apply/__init__.py:3); it also counts empty tensors
 * in its tensor limit, which mta_launches skips (no BERT parameter is
 * empty). */
enum { CLIP_NORM_PARTIALS = 320 };

/* The clipper's gradient bytes an element: the parameters' under
 * bertadam (fp32), the fp32 master gradients' under amp O2
 * (amp.master_params yields the masters, run_squad.py:1092). */
static double clip_grad_bytes(const struct ds_compute *c, const struct ds_model *model) {
  return model->optimizer == DS_OPT_APEX_O2 ? APEX_MASTER_BYTES : c->precision.param_bytes;
}

int ds_compute_clip_norm_launches(const struct ds_compute *c, const struct ds_model *model) {
  if (!squad_step(model)) return 0;
  return launch_count(mta_launches(c, model, (struct step_set){NULL, 0}, MTA_SQUAD,
                                   MTA_TENSORS[0][0]) +
                      2);
}

int ds_compute_clip_scale_launches(const struct ds_compute *c, const struct ds_model *model) {
  if (!squad_step(model)) return 0;
  return launch_count(mta_launches(c, model, (struct step_set){NULL, 0}, MTA_SQUAD,
                                   MTA_TENSORS[0][1]));
}

double ds_compute_clip_norm_ns(const struct ds_compute *c, const struct ds_model *model,
                               double *bytes) {
  *bytes = 0;
  int launches = ds_compute_clip_norm_launches(c, model);
  if (launches == 0) return 0;
  /* the fill writes 320 floats; cleanup reads them and writes one */
  double fill = CLIP_NORM_PARTIALS * 4.0, cleanup = (CLIP_NORM_PARTIALS + 1) * 4.0;
  double grads = squad_numel(model) * clip_grad_bytes(c, model); /* read once */
  *bytes = fill + grads + cleanup;
  /* launches - 2 of multi_tensor_apply (none without gradients): the
   * gradients' bytes at the roofline and a kernel_overhead each */
  int mta = launches - 2;
  double ns = ds_compute_kernel_ns(c, 0, fill) + ds_compute_kernel_ns(c, 0, cleanup);
  if (mta > 0)
    ns += ds_compute_kernel_ns(c, 0, grads) + (mta - 1) * c->params.kernel_overhead_ns;
  return ns;
}

double ds_compute_clip_scale_ns(const struct ds_compute *c, const struct ds_model *model,
                                double *bytes) {
  *bytes = 0;
  int launches = ds_compute_clip_scale_launches(c, model);
  if (launches == 0) return 0;
  /* multi_tensor_scale over [l, l]: reads and writes every gradient */
  *bytes = 2 * squad_numel(model) * clip_grad_bytes(c, model);
  return ds_compute_kernel_ns(c, 0, *bytes) + (launches - 1) * c->params.kernel_overhead_ns;
}
