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

ds_status ds_compute_init(const struct ds_topo *topo, enum ds_dtype dtype,
                          struct ds_compute *out, struct ds_err *err) {
  const struct ds_gpu_spec *g = &topo->gpu;
  memset(out, 0, sizeof *out);
  out->dtype = dtype;
  out->params = topo->compute;
  out->mem_bw_bytes_per_s = g->mem_bw_bytes_per_s;
  switch (dtype) {
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
    return ds_err_set(err, DS_EUSAGE, "--dtype %s: GPU %s has no %s math",
                      ds_dtype_name(dtype), g->name, ds_dtype_name(dtype));
  return DS_OK;
}

static double dtype_scale(const struct ds_compute *c) {
  return ds_dtype_bytes(c->dtype) / 4.0;
}

double ds_compute_kernel_ns(const struct ds_compute *c, double flops,
                            double bytes) {
  double t_flops = flops / (c->peak_flops_per_s * c->params.flops_efficiency);
  double t_mem = bytes / (c->mem_bw_bytes_per_s * c->params.mem_efficiency);
  double t_s = t_flops > t_mem ? t_flops : t_mem;
  return t_s * 1e9 + c->params.kernel_overhead_ns;
}

double ds_compute_fwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch) {
  double b = (double)batch;
  double weights = (double)l->param_numel * ds_dtype_bytes(c->dtype);
  return ds_compute_kernel_ns(c, l->fwd_flops * b,
                              l->fwd_bytes * dtype_scale(c) * b + weights);
}

double ds_compute_bwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch) {
  double b = (double)batch;
  double weights = (double)l->param_numel * ds_dtype_bytes(c->dtype);
  return ds_compute_kernel_ns(c, l->bwd_flops * b,
                              2 * l->fwd_bytes * dtype_scale(c) * b + 2 * weights);
}

double ds_compute_step_bytes(const struct ds_compute *c,
                             const struct ds_model *model) {
  int tensors = model->optimizer == DS_OPT_ADAM ? 7 : 5;
  return (double)model->total_numel * ds_dtype_bytes(c->dtype) * tensors;
}

double ds_compute_loss_ns(const struct ds_compute *c, const struct ds_model *model,
                          double samples, double *bytes) {
  *bytes = 2 * samples * model->output_bytes * ds_dtype_bytes(c->dtype) / 4;
  return ds_compute_kernel_ns(c, 0, *bytes);
}

double ds_compute_step_ns(const struct ds_compute *c,
                          const struct ds_model *model) {
  return ds_compute_kernel_ns(c, 0, ds_compute_step_bytes(c, model));
}
