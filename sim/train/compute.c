/*
 * Roofline compute model (see compute.h for the formula). Model files store
 * byte counts in fp32; they are scaled by the dtype's size here.
 */
#include "sim/train/compute.h"

#include <string.h>

static const char *const dtype_names[] = {"fp32", "fp16", "bf16"};

const char *ds_dtype_name(enum ds_dtype dtype) {
  return (unsigned)dtype < 3 ? dtype_names[dtype] : "?";
}

int ds_dtype_parse(const char *name, enum ds_dtype *out) {
  for (int i = 0; i < 3; i++)
    if (strcmp(name, dtype_names[i]) == 0) {
      *out = (enum ds_dtype)i;
      return 0;
    }
  return -1;
}

int ds_dtype_bytes(enum ds_dtype dtype) { return dtype == DS_DTYPE_FP32 ? 4 : 2; }

static const char *const amp_names[] = {"none", "fp16", "bf16"};

const char *ds_amp_name(enum ds_amp amp) {
  return (unsigned)amp < 3 ? amp_names[amp] : "?";
}

int ds_amp_parse(const char *name, enum ds_amp *out) {
  for (int i = 0; i < 3; i++)
    if (strcmp(name, amp_names[i]) == 0) {
      *out = (enum ds_amp)i;
      return 0;
    }
  return -1;
}

static const char *const tf32_names[] = {"conv", "all", "none"};

const char *ds_tf32_name(enum ds_tf32 t) { return (unsigned)t < 3 ? tf32_names[t] : "?"; }

int ds_tf32_parse(const char *name, enum ds_tf32 *out) {
  for (int i = 0; i < 3; i++)
    if (strcmp(name, tf32_names[i]) == 0) {
      *out = (enum ds_tf32)i;
      return 0;
    }
  return -1;
}

void ds_compute_set_tf32(struct ds_compute *c, const struct ds_topo *topo, enum ds_tf32 tf32) {
  const struct ds_gpu_spec *g = &topo->gpu;
  const struct ds_compute_params *p = &topo->compute;
  double half = c->peak_flops_per_s; /* half training: the half type's rate */
  int fp32 = c->precision.act_bytes == 4;
  double tf = g->tf32_flops_per_s > 0 ? g->tf32_flops_per_s : g->fp32_flops_per_s;
  c->class_peak_flops_per_s[DS_LAYER_UNKNOWN] = c->peak_flops_per_s;
  c->class_peak_flops_per_s[DS_LAYER_CONV] =
      !fp32 ? half : tf32 != DS_TF32_NONE ? tf : g->fp32_flops_per_s;
  c->class_peak_flops_per_s[DS_LAYER_MATMUL] =
      !fp32 ? half : tf32 == DS_TF32_ALL ? tf : g->fp32_flops_per_s;
  c->class_peak_flops_per_s[DS_LAYER_ATTENTION] = c->class_peak_flops_per_s[DS_LAYER_MATMUL];
  /* elementwise FLOPs run on the vector units */
  c->class_peak_flops_per_s[DS_LAYER_MEMORY] = !fp32 ? 2 * g->fp32_flops_per_s
                                                     : g->fp32_flops_per_s;
  double eff = p->flops_efficiency;
  c->class_efficiency[DS_LAYER_UNKNOWN] = eff;
  c->class_efficiency[DS_LAYER_CONV] = p->conv_efficiency > 0 ? p->conv_efficiency : eff;
  c->class_efficiency[DS_LAYER_MATMUL] = p->matmul_efficiency > 0 ? p->matmul_efficiency : eff;
  c->class_efficiency[DS_LAYER_ATTENTION] =
      p->attention_efficiency > 0 ? p->attention_efficiency : c->class_efficiency[DS_LAYER_MATMUL];
  c->class_efficiency[DS_LAYER_MEMORY] = eff;
}

ds_status ds_compute_init(const struct ds_topo *topo, enum ds_dtype dtype, enum ds_amp amp,
                          struct ds_compute *out, struct ds_err *err) {
  const struct ds_gpu_spec *g = &topo->gpu;
  memset(out, 0, sizeof *out);
  if (amp != DS_AMP_NONE && dtype != DS_DTYPE_FP32)
    return ds_err_set(err, DS_EUSAGE, "--amp %s trains an fp32 model: it cannot be combined "
                      "with --dtype %s", ds_amp_name(amp), ds_dtype_name(dtype));
  out->dtype = dtype;
  out->amp = amp;
  out->params = topo->compute;
  out->mem_bw_bytes_per_s = g->mem_bw_bytes_per_s;
  out->sms = g->sms;
  out->precision = (struct ds_precision){ds_dtype_bytes(dtype), ds_dtype_bytes(dtype), 0};
  enum ds_dtype math = dtype;
  if (amp != DS_AMP_NONE) {
    math = amp == DS_AMP_FP16 ? DS_DTYPE_FP16 : DS_DTYPE_BF16;
    out->precision.act_bytes = 2;
    out->precision.half_weight_bytes = 2;
  }
  switch (math) {
  case DS_DTYPE_FP32:
    out->peak_flops_per_s = topo->compute.fp32_uses_tf32 && g->tf32_flops_per_s > 0
                                ? g->tf32_flops_per_s
                                : g->fp32_flops_per_s;
    break;
  case DS_DTYPE_FP16:
    out->peak_flops_per_s = g->fp16_flops_per_s;
    break;
  case DS_DTYPE_BF16:
    out->peak_flops_per_s = g->bf16_flops_per_s;
    break;
  }
  if (out->peak_flops_per_s <= 0)
    return ds_err_set(err, DS_EUSAGE, "%s %s: GPU %s has no %s math",
                      amp != DS_AMP_NONE ? "--amp" : "--dtype", ds_dtype_name(math), g->name,
                      ds_dtype_name(math));
  ds_compute_set_tf32(out, topo, DS_TF32_CONV);
  return DS_OK;
}

/* Model files give activation bytes in fp32. */
static double act_scale(const struct ds_compute *c) {
  return c->precision.act_bytes / 4.0;
}

double ds_compute_kernel_ns(const struct ds_compute *c, double flops,
                            double bytes) {
  double t_flops = flops / (c->peak_flops_per_s * c->params.flops_efficiency);
  double t_mem = bytes / (c->mem_bw_bytes_per_s * c->params.mem_efficiency);
  double t_s = t_flops > t_mem ? t_flops : t_mem;
  return t_s * 1e9 + c->params.kernel_overhead_ns;
}

double ds_compute_class_kernel_ns(const struct ds_compute *c, enum ds_layer_class cls,
                                  double flops, double bytes) {
  if ((unsigned)cls > DS_LAYER_MEMORY || cls == DS_LAYER_UNKNOWN)
    return ds_compute_kernel_ns(c, flops, bytes);
  double t_flops = flops / (c->class_peak_flops_per_s[cls] * c->class_efficiency[cls]);
  double t_mem = bytes / (c->mem_bw_bytes_per_s * c->params.mem_efficiency);
  double t_s = t_flops > t_mem ? t_flops : t_mem;
  return t_s * 1e9 + c->params.kernel_overhead_ns;
}

double ds_compute_fwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch) {
  double b = (double)batch;
  const struct ds_precision *p = &c->precision;
  /* amp: the cast reads fp32 and writes half, the kernel reads half */
  double per_param = p->half_weight_bytes ? p->param_bytes + 2.0 * p->half_weight_bytes
                                          : p->param_bytes;
  double weights = (double)l->param_numel * per_param;
  return ds_compute_class_kernel_ns(c, l->cls, l->fwd_flops * b,
                                    l->fwd_bytes * act_scale(c) * b + weights);
}

double ds_compute_bwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch) {
  double b = (double)batch;
  const struct ds_precision *p = &c->precision;
  /* amp: half weight read, half gradient written, and the cast's backward
   * reading it and writing the fp32 gradient */
  double per_param = p->half_weight_bytes ? 3.0 * p->half_weight_bytes + p->param_bytes
                                          : 2.0 * p->param_bytes;
  double weights = (double)l->param_numel * per_param;
  return ds_compute_class_kernel_ns(c, l->cls, l->bwd_flops * b,
                                    2 * l->fwd_bytes * act_scale(c) * b + weights);
}

double ds_compute_step_bytes(const struct ds_compute *c,
                             const struct ds_model *model) {
  int tensors = model->optimizer == DS_OPT_ADAM ? 7 : 5;
  if (c->amp == DS_AMP_FP16) tensors += 2; /* GradScaler's unscale_ */
  return (double)model->total_numel * c->precision.param_bytes * tensors;
}

double ds_compute_loss_ns(const struct ds_compute *c, const struct ds_model *model,
                          double samples, double *bytes) {
  *bytes = 2 * samples * model->output_bytes * act_scale(c);
  return ds_compute_kernel_ns(c, 0, *bytes);
}

double ds_compute_step_ns(const struct ds_compute *c,
                          const struct ds_model *model) {
  return ds_compute_kernel_ns(c, 0, ds_compute_step_bytes(c, model));
}
