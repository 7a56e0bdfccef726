/*
 * Roofline compute model (see compute.h for the formula): here the dtypes'
 * names, and the math each op class runs in, its peak and its efficiency
 * with where that came from (ds_compute_init, ds_compute_set_tf32). The
 * kernels priced at those rates are in compute_roofline.c (the roofline),
 * compute_layer.c (a layer's passes), compute_conv.c (grouped convolutions,
 * cuDNN's transposes), compute_pool.c (max-pool), compute_loss.c and
 * compute_step.c (the optimizer step). Model files store byte counts in
 * fp32; they are scaled by the dtype's size where the kernels are priced.
 */
#include "sim/train/compute.h"

#include "sim/net/gpu_table.h"

#include <stdio.h>
#include <string.h>

#include "sim/train/grouped_conv.h"

/* The names of an enum's values, in order: the name of value v, and the
 * value a name stands for (-1: none). */
#define N_NAMES 3
static const char *const dtype_names[N_NAMES] = {"fp32", "fp16", "bf16"};
static const char *const amp_names[N_NAMES] = {"none", "fp16", "bf16"};
static const char *const tf32_names[N_NAMES] = {"conv", "all", "none"};

static const char *name_of(const char *const *names, unsigned v) {
  return v < N_NAMES ? names[v] : "?";
}

static int value_of(const char *const *names, const char *name) {
  for (int i = 0; i < N_NAMES; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

const char *ds_dtype_name(enum ds_dtype dtype) { return name_of(dtype_names, dtype); }

int ds_dtype_parse(const char *name, enum ds_dtype *out) {
  int v = value_of(dtype_names, name);
  if (v < 0) return -1;
  *out = (enum ds_dtype)v;
  return 0;
}

int ds_dtype_bytes(enum ds_dtype dtype) { return dtype == DS_DTYPE_FP32 ? 4 : 2; }

const char *ds_amp_name(enum ds_amp amp) { return name_of(amp_names, amp); }

int ds_amp_parse(const char *name, enum ds_amp *out) {
  int v = value_of(amp_names, name);
  if (v < 0) return -1;
  *out = (enum ds_amp)v;
  return 0;
}

const char *ds_tf32_name(enum ds_tf32 t) { return name_of(tf32_names, t); }

int ds_tf32_parse(const char *name, enum ds_tf32 *out) {
  int v = value_of(tf32_names, name);
  if (v < 0) return -1;
  *out = (enum ds_tf32)v;
  return 0;
}

/* The source of flops_efficiency where a class falls back to it: a
 * calibration file's value measured GEMMs in one math, so for a class it
 * stands in (DS_RATE_CALIB_FLOPS); a typical value stays typical. */
static enum ds_rate_source fallback_source(const struct ds_compute_params *p) {
  return p->flops_efficiency_source == DS_RATE_CALIB ? DS_RATE_CALIB_FLOPS
                                                     : p->flops_efficiency_source;
}

/* The source of a value the GPU table holds: a calibration file's
 * measurement when it set one (from_calib > 0, ds_calib_apply_gpu wrote it
 * into the table), else the table's own, a stand-in where the table gives
 * a reason (why, "" otherwise). */
static enum ds_rate_source table_source(double from_calib, const char *why) {
  return from_calib > 0 ? DS_RATE_CALIB : why[0] ? DS_RATE_GPU_PROXY : DS_RATE_GPU_TABLE;
}

/* The efficiency of class cls run in `math`: the topology's per-class key
 * (an explicit override), else the GPU table's measurement for that class
 * and math (or a calibration file's efficiency section), else, for
 * attention, what matmul resolved to (mm), else
 * flops_efficiency. *source says which (topo.h enum ds_rate_source: the
 * table's value is DS_RATE_GPU_PROXY where the table marks it a stand-in),
 * *proxy the table's reason for a stand-in ("" otherwise). */
static double class_efficiency(const struct ds_topo *topo, enum ds_layer_class cls,
                               enum ds_gpu_math math, double mm,
                               enum ds_rate_source *source, char *proxy) {
  const struct ds_compute_params *p = &topo->compute;
  const struct ds_gpu_efficiency *e = &topo->gpu.eff, *calib = &topo->gpu.eff_calib;
  double key = 0, table = 0, from_calib = 0;
  int eff_key = -1; /* enum ds_gpu_eff_key of the table's value */
  switch (cls) {
  case DS_LAYER_CONV:
    key = p->conv_efficiency, table = e->conv[math], from_calib = calib->conv[math];
    eff_key = DS_GPU_EFF_CONV + math;
    break;
  case DS_LAYER_MATMUL:
    key = p->matmul_efficiency, table = e->matmul[math], from_calib = calib->matmul[math];
    eff_key = DS_GPU_EFF_MATMUL + math;
    break;
  case DS_LAYER_ATTENTION:
    key = p->attention_efficiency, table = e->attention[math];
    from_calib = calib->attention[math];
    eff_key = DS_GPU_EFF_ATTENTION + math;
    break;
  default:
    break;
  }
  proxy[0] = '\0';
  if (key > 0) {
    *source = DS_RATE_TOPOLOGY;
    return key;
  }
  if (table > 0) {
    const char *why = topo->gpu.eff_proxy[eff_key];
    *source = table_source(from_calib, why);
    if (*source == DS_RATE_GPU_PROXY) snprintf(proxy, DS_GPU_PROXY_WHY_MAX, "%s", why);
    return table;
  }
  if (cls == DS_LAYER_ATTENTION) {
    /* matmul's rate: a measured or set one stands in for attention's;
     * where matmul itself fell back, so does attention */
    int mm_fell_back = !(p->matmul_efficiency > 0) && !(e->matmul[math] > 0);
    *source = mm_fell_back ? fallback_source(p) : DS_RATE_AS_MATMUL;
    return mm;
  }
  *source = fallback_source(p);
  return p->flops_efficiency;
}

/* A convolution pass's efficiency in `math` (backward: the input and weight
 * gradients together): the GPU table's value for that pass where it has one
 * and the topology sets no conv_efficiency (which overrides every pass),
 * else `pooled`, what class_efficiency resolved for the class. */
static double conv_pass_efficiency(const struct ds_topo *topo, enum ds_gpu_math math,
                                   int backward, double pooled) {
  const double *pass = backward ? topo->gpu.eff.conv_bwd : topo->gpu.eff.conv_fwd;
  return topo->compute.conv_efficiency > 0 || !(pass[math] > 0) ? pooled : pass[math];
}

/* How well a source backs a rate, for picking a convolution's least backed
 * pass: a typical value not at all, a stand-in measurement (another math's
 * or operation's) less than a measurement of its own. */
static int backing(enum ds_rate_source s) {
  return s == DS_RATE_TYPICAL                                 ? 0
         : s == DS_RATE_GPU_PROXY || s == DS_RATE_CALIB_FLOPS ? 1
         : s == DS_RATE_CALIB                                 ? 2
                                                              : 3;
}

/* A convolution's source (c->class_source[DS_LAYER_CONV] and its
 * class_proxy, the pooled value's on entry): its passes' (conv_pass_efficiency:
 * a pass the GPU table or a calibration file measured apart takes that), the
 * least backed of the two (the forward's on a tie), since only the passes
 * are charged (ds_compute_pass_flops_per_s). */
static void conv_source(const struct ds_topo *topo, enum ds_gpu_math math,
                        struct ds_compute *c) {
  const struct ds_gpu_efficiency *e = &topo->gpu.eff, *calib = &topo->gpu.eff_calib;
  if (topo->compute.conv_efficiency > 0) return; /* the topology's, every pass */
  enum ds_rate_source pass[2];
  const char *why[2];
  for (int backward = 0; backward < 2; backward++) {
    double table = backward ? e->conv_bwd[math] : e->conv_fwd[math];
    double set = backward ? calib->conv_bwd[math] : calib->conv_fwd[math];
    const char *proxy =
        topo->gpu.eff_proxy[(backward ? DS_GPU_EFF_CONV_BWD : DS_GPU_EFF_CONV_FWD) + math];
    pass[backward] = table > 0 ? table_source(set, proxy) : c->class_source[DS_LAYER_CONV];
    why[backward] = !(table > 0) ? c->class_proxy[DS_LAYER_CONV] : set > 0 ? "" : proxy;
  }
  int least = backing(pass[1]) < backing(pass[0]);
  char reason[DS_GPU_PROXY_WHY_MAX];
  snprintf(reason, sizeof reason, "%s", pass[least] == DS_RATE_GPU_PROXY ? why[least] : "");
  c->class_source[DS_LAYER_CONV] = pass[least];
  snprintf(c->class_proxy[DS_LAYER_CONV], sizeof c->class_proxy[DS_LAYER_CONV], "%s", reason);
}

void ds_compute_set_tf32(struct ds_compute *c, const struct ds_topo *topo, enum ds_tf32 tf32) {
  const struct ds_gpu_spec *g = &topo->gpu;
  double half = c->peak_flops_per_s; /* half training: the half type's rate */
  int fp32 = c->precision.act_bytes == 4;
  int has_tf32 = g->tf32_flops_per_s > 0;
  double tf = has_tf32 ? g->tf32_flops_per_s : g->fp32_flops_per_s;
  /* the math each class runs in (a GPU without TF32 runs FP32) */
  enum ds_gpu_math conv_math = !fp32                                 ? DS_GPU_MATH_HALF
                               : tf32 != DS_TF32_NONE && has_tf32 ? DS_GPU_MATH_TF32
                                                                  : DS_GPU_MATH_FP32;
  enum ds_gpu_math mm_math = !fp32                                ? DS_GPU_MATH_HALF
                             : tf32 == DS_TF32_ALL && has_tf32 ? DS_GPU_MATH_TF32
                                                               : DS_GPU_MATH_FP32;
  double peak_of[DS_GPU_MATH_COUNT] = {g->fp32_flops_per_s, tf, half};
  c->class_peak_flops_per_s[DS_LAYER_UNKNOWN] = c->peak_flops_per_s;
  c->class_peak_flops_per_s[DS_LAYER_CONV] = peak_of[conv_math];
  c->class_peak_flops_per_s[DS_LAYER_MATMUL] = peak_of[mm_math];
  c->class_peak_flops_per_s[DS_LAYER_ATTENTION] = peak_of[mm_math];
  /* elementwise FLOPs run on the vector units */
  c->class_peak_flops_per_s[DS_LAYER_MEMORY] = !fp32 ? 2 * g->fp32_flops_per_s
                                                     : g->fp32_flops_per_s;
  c->class_math[DS_LAYER_CONV] = conv_math;
  c->class_math[DS_LAYER_MATMUL] = mm_math;
  c->class_math[DS_LAYER_ATTENTION] = mm_math;
  double eff = topo->compute.flops_efficiency;
  enum ds_rate_source *src = c->class_source;
  char(*proxy)[DS_GPU_PROXY_WHY_MAX] = c->class_proxy;
  double mm = class_efficiency(topo, DS_LAYER_MATMUL, mm_math, 0, &src[DS_LAYER_MATMUL],
                               proxy[DS_LAYER_MATMUL]);
  c->class_efficiency[DS_LAYER_UNKNOWN] = eff;
  /* layers without a class run at flops_efficiency itself; a calibration
   * file's measured GEMMs in fp32 or tf32, so in half math it stands in */
  src[DS_LAYER_UNKNOWN] = fp32 ? topo->compute.flops_efficiency_source
                               : fallback_source(&topo->compute);
  proxy[DS_LAYER_UNKNOWN][0] = '\0';
  c->class_efficiency[DS_LAYER_CONV] = class_efficiency(
      topo, DS_LAYER_CONV, conv_math, 0, &src[DS_LAYER_CONV], proxy[DS_LAYER_CONV]);
  for (int backward = 0; backward < 2; backward++)
    c->conv_pass_efficiency[backward] = conv_pass_efficiency(
        topo, conv_math, backward, c->class_efficiency[DS_LAYER_CONV]);
  c->conv_tiles = topo->compute.conv_efficiency > 0 ? (struct ds_conv_tiles){0}
                                                    : g->conv_tiles[conv_math];
  c->class_efficiency[DS_LAYER_MATMUL] = mm;
  c->class_efficiency[DS_LAYER_ATTENTION] =
      class_efficiency(topo, DS_LAYER_ATTENTION, mm_math, mm, &src[DS_LAYER_ATTENTION],
                       proxy[DS_LAYER_ATTENTION]);
  c->class_efficiency[DS_LAYER_MEMORY] = eff;
  /* a memory-class layer is bound by its bytes: mem_efficiency's source */
  src[DS_LAYER_MEMORY] = topo->compute.mem_efficiency_source;
  snprintf(proxy[DS_LAYER_MEMORY], sizeof proxy[DS_LAYER_MEMORY], "%s",
           src[DS_LAYER_MEMORY] == DS_RATE_GPU_PROXY ? g->eff_proxy[DS_GPU_EFF_MEMORY] : "");
  conv_source(topo, conv_math, c);
  /* the gradients are the dtype's, fp32 under --amp (compute.h) */
  enum ds_gpu_math grad_math = c->dtype != DS_DTYPE_FP32             ? DS_GPU_MATH_HALF
                               : tf32 == DS_TF32_ALL && has_tf32 ? DS_GPU_MATH_TF32
                                                                 : DS_GPU_MATH_FP32;
  c->grad_gemm_math = grad_math;
  c->grad_gemm_efficiency = class_efficiency(topo, DS_LAYER_MATMUL, grad_math, 0,
                                             &c->grad_gemm_source, c->grad_gemm_proxy);
  c->grad_gemm_flops_per_s = peak_of[grad_math] * c->grad_gemm_efficiency;
  /* measured only for the half types' tensor-core kernels (compute.h) */
  c->unaligned_half_efficiency = !fp32 ? g->eff.matmul_unaligned_half : 0;
  const char *why = g->eff_proxy[DS_GPU_EFF_UNALIGNED];
  c->unaligned_half_source = table_source(g->eff_calib.matmul_unaligned_half, why);
  snprintf(c->unaligned_half_proxy, sizeof c->unaligned_half_proxy, "%s",
           c->unaligned_half_source == DS_RATE_GPU_PROXY ? why : "");
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
  out->sm_clock_hz = g->boost_mhz * 1e6;
  out->sm_max_threads = ds_gpu_max_threads_per_sm(g);
  out->gconv = &ds_gconv_builtin;
  out->gpu_has_tf32 = g->tf32_flops_per_s > 0;
  out->precision = (struct ds_precision){ds_dtype_bytes(dtype), ds_dtype_bytes(dtype), 0};
  enum ds_dtype math = dtype;
  if (amp != DS_AMP_NONE) {
    math = amp == DS_AMP_FP16 ? DS_DTYPE_FP16 : DS_DTYPE_BF16;
    out->precision.act_bytes = 2;
    out->precision.half_weight_bytes = 2;
  }
  switch (math) {
  case DS_DTYPE_FP32: {
    int tf32 = topo->compute.fp32_uses_tf32 && g->tf32_flops_per_s > 0;
    out->peak_flops_per_s = tf32 ? g->tf32_flops_per_s : g->fp32_flops_per_s;
    out->class_math[DS_LAYER_UNKNOWN] = tf32 ? DS_GPU_MATH_TF32 : DS_GPU_MATH_FP32;
    break;
  }
  case DS_DTYPE_FP16:
    out->peak_flops_per_s = g->fp16_flops_per_s;
    out->class_math[DS_LAYER_UNKNOWN] = DS_GPU_MATH_HALF;
    break;
  case DS_DTYPE_BF16:
    out->peak_flops_per_s = g->bf16_flops_per_s;
    out->class_math[DS_LAYER_UNKNOWN] = DS_GPU_MATH_HALF;
    break;
  }
  if (out->peak_flops_per_s <= 0)
    return ds_err_set(err, DS_EUSAGE, "%s %s: GPU %s has no %s math",
                      amp != DS_AMP_NONE ? "--amp" : "--dtype", ds_dtype_name(math), g->name,
                      ds_dtype_name(math));
  ds_compute_set_tf32(out, topo, DS_TF32_CONV);
  return DS_OK;
}
