/*
 * Roofline compute model (see compute.h for the formula). Model files store
 * byte counts in fp32; they are scaled by the dtype's size here.
 */
#include "sim/train/compute.h"

#include "sim/net/gpu_table.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/train/grouped_conv.h"
#include "sim/train/cast_reduce.h"
#include "sim/train/legacy_ew.h"
#include "sim/train/cat_copy.h"
#include "sim/train/norm.h"

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

/* Model files give activation bytes in fp32. */
static double act_scale(const struct ds_compute *c) {
  return c->precision.act_bytes / 4.0;
}

/* The roofline: the slower of the FLOPs at flops_per_s and the bytes at
 * the achievable memory bandwidth, plus the launch overhead. */
static double roofline_ns(const struct ds_compute *c, double flops_per_s, double flops,
                          double bytes) {
  double t_flops = flops / flops_per_s;
  double t_mem = bytes / (c->mem_bw_bytes_per_s * c->params.mem_efficiency);
  double t_s = t_flops > t_mem ? t_flops : t_mem;
  return t_s * 1e9 + c->params.kernel_overhead_ns;
}

double ds_compute_grad_gemm_ns(const struct ds_compute *c, double flops, double bytes) {
  if (c->charged) c->charged->grad_gemm = 1; /* rates.h names its rate */
  return roofline_ns(c, c->grad_gemm_flops_per_s, flops, bytes);
}

double ds_compute_kernel_ns(const struct ds_compute *c, double flops,
                            double bytes) {
  return roofline_ns(c, c->peak_flops_per_s * c->params.flops_efficiency, flops, bytes);
}

/* The FLOP rate a kernel of class cls reaches: its math's peak times its
 * efficiency, or the topology's one factor for an op of no class. */
static double class_flops_per_s(const struct ds_compute *c, enum ds_layer_class cls) {
  if ((unsigned)cls > DS_LAYER_MEMORY || cls == DS_LAYER_UNKNOWN)
    return c->peak_flops_per_s * c->params.flops_efficiency;
  return c->class_peak_flops_per_s[cls] * c->class_efficiency[cls];
}

double ds_compute_class_kernel_ns(const struct ds_compute *c, enum ds_layer_class cls,
                                  double flops, double bytes) {
  return roofline_ns(c, class_flops_per_s(c, cls), flops, bytes);
}

double ds_compute_pass_flops_per_s(const struct ds_compute *c, enum ds_layer_class cls,
                                   int backward) {
  if ((unsigned)cls > DS_LAYER_MEMORY) cls = DS_LAYER_UNKNOWN;
  double eff = c->class_efficiency[cls];
  if (cls == DS_LAYER_CONV && c->conv_pass_efficiency[backward != 0] > 0)
    eff = c->conv_pass_efficiency[backward != 0];
  return c->class_peak_flops_per_s[cls] * eff;
}

int ds_compute_gemm_unaligned(const struct ds_compute *c, const struct ds_layer *l) {
  return (l->cls == DS_LAYER_MATMUL || l->cls == DS_LAYER_ATTENTION) && l->gemm_align > 0 &&
         l->gemm_align < DS_GEMM_ALIGNED && c->unaligned_half_efficiency > 0;
}

/* The layer's own kernel in pass `backward`: its class's roofline (a
 * convolution's at its pass's efficiency), or for a half-precision GEMM on
 * unaligned operands the unaligned kernels' efficiency on the same peak. */
static double layer_flops_per_s(const struct ds_compute *c, const struct ds_layer *l,
                                int backward) {
  if (l->cls == DS_LAYER_CONV) return ds_compute_pass_flops_per_s(c, l->cls, backward);
  if (!ds_compute_gemm_unaligned(c, l)) return class_flops_per_s(c, l->cls);
  return c->class_peak_flops_per_s[l->cls] * c->unaligned_half_efficiency;
}

double ds_compute_conv_tile_share(int64_t m, int64_t n, int32_t tile_m, int32_t tile_n,
                                  int32_t sms) {
  if (m <= 0 || n <= 0 || tile_m <= 0 || tile_n <= 0 || sms <= 0) return 1;
  double tiles = ceil((double)m / tile_m) * ceil((double)n / tile_n);
  double waves = ceil(tiles / sms);
  return (double)m * (double)n / (waves * sms * (double)tile_m * (double)tile_n);
}

/* The tiles of a dense convolution's implicit GEMM (compute.h conv_tiles),
 * or NULL where its pass efficiency applies: grouped convolutions
 * (grouped_conv.h), a GPU or math without tiles, a layer without its
 * shape. *share receives the useful share of the tiles' work at `batch`:
 * M = batch x output positions (the forward's GEMM side, which the
 * backward's kernels were fitted against too), n = min(Cin k^2, Cout). */
static const struct ds_conv_tiles *conv_tiles(const struct ds_compute *c,
                                              const struct ds_layer *l, int64_t batch,
                                              double *share) {
  const struct ds_conv_tiles *t = &c->conv_tiles;
  if (l->cls != DS_LAYER_CONV || t->tile_m <= 0 || l->conv_groups > 1 ||
      l->conv_out_channels <= 0 || l->conv_group_width <= 0 || l->conv_kernel_area <= 0 ||
      !(l->fwd_flops > 0) || batch <= 0)
    return NULL;
  double k = (double)l->conv_group_width * (double)l->conv_kernel_area;
  double positions = l->fwd_flops / (2.0 * (double)l->conv_out_channels * k);
  double n = k < (double)l->conv_out_channels ? k : (double)l->conv_out_channels;
  *share = ds_compute_conv_tile_share((int64_t)llround(positions * (double)batch),
                                      (int64_t)llround(n), t->tile_m, t->tile_n, c->sms);
  return t;
}

/* The FLOP rate of the layer's own kernel in pass `backward` at `batch`. */
static double layer_rate(const struct ds_compute *c, const struct ds_layer *l, int backward,
                         int64_t batch, double *call_ns) {
  double share;
  const struct ds_conv_tiles *t = conv_tiles(c, l, batch, &share);
  *call_ns = t ? t->call_ns[backward != 0] : 0;
  return t ? c->class_peak_flops_per_s[DS_LAYER_CONV] * t->eff[backward != 0] * share
           : layer_flops_per_s(c, l, backward);
}

/* The time of the layer's own kernel in pass `backward` at `batch`, its
 * rate worked out once (a tiled convolution's share: conv_tiles); *flop_bound
 * says whether its FLOPs, not its bytes, set that time: a kernel the SMs
 * bound (interference.h). */
static double layer_kernel_ns(const struct ds_compute *c, const struct ds_layer *l,
                              int backward, int64_t batch, double flops, double bytes,
                              int *flop_bound) {
  double call_ns, rate = layer_rate(c, l, backward, batch, &call_ns);
  *flop_bound = flops > 0 &&
                flops / rate >= bytes / (c->mem_bw_bytes_per_s * c->params.mem_efficiency);
  return call_ns + roofline_ns(c, rate, flops, bytes);
}

/* The kernels of pass p off PyTorch's vectorised path (legacy_ew.h): takes
 * their bytes out of *bytes, the pass's (never below 0), and returns their
 * time (0 where the model file has no counts or the GPU no clock). */
static double off_path_ns(const struct ds_compute *c, const struct ds_layer *l,
                          enum ds_legacy_pass p, int64_t batch, double *bytes) {
  double moved, ns = ds_legacy_ew_ns(c, l, p, batch, &moved);
  *bytes = *bytes > moved ? *bytes - moved : 0;
  if (p == DS_LEGACY_FWD) { /* the contiguous mixed-dtype ops' kernel (legacy_ew.h) */
    ns += ds_legacy_cast_ew_ns(c, l, batch, &moved);
    *bytes = *bytes > moved ? *bytes - moved : 0;
  }
  return ns;
}

/* A pass of memory-bound kernels of their own (the backward's copies,
 * autograd's additions): the vectorised rest at the roofline, if any is
 * left, and the kernels off the path. */
static double memory_pass_ns(const struct ds_compute *c, const struct ds_layer *l,
                             enum ds_legacy_pass p, int64_t batch, double bytes) {
  double off = off_path_ns(c, l, p, batch, &bytes);
  return (bytes > 0 ? ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, bytes) : 0) + off;
}

double ds_compute_bwd_extra_ns(const struct ds_compute *c, const struct ds_layer *l,
                               int64_t batch) {
  double scale = act_scale(c) * (double)batch, ns = 0;
  if (l->bwd_reduce_bytes > 0) {
    /* the bias gradients' row reductions at reduce_kernel's rate
     * (cast_reduce.h), any other reduction's bytes at the roofline */
    double rows, reduce = l->bwd_reduce_bytes * scale;
    ns += ds_row_reduce_ns(c, l, batch, &rows);
    if (rows > 0) {
      /* the file's bytes are per sample at the export's batch B: each
       * reduction's one output row spread as outputs / B per sample, so at
       * this batch its share is at most (rows per sample + 1) x outputs per
       * sample, and only what is past that is another reduction */
      double share = 0;
      for (int32_t i = 0; i < l->n_row_reductions; i++)
        share += (l->row_reductions[i][0] + 1) * l->row_reductions[i][1] *
                 ds_row_reduce_elem_bytes(c, l, i) * (double)batch;
      if (share > rows) rows = share;
    }
    if (reduce > rows * 1.001) /* what the rows leave, past rounding */
      ns += ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, reduce - rows);
  }
  if (l->bwd_copy_bytes > 0)
    ns += memory_pass_ns(c, l, DS_LEGACY_COPY, batch, l->bwd_copy_bytes * scale);
  ns += ds_cat_copy_extra_ns(c, l, DS_ATTN_BWD, batch); /* cat_copy.h */
  double accum = ds_compute_autocast_traffic(c, l) ? l->amp_bwd_accum_bytes * (double)batch
                                        : l->bwd_accum_bytes * scale;
  return ns + memory_pass_ns(c, l, DS_LEGACY_ACCUM, batch, accum);
}

/* A pass's bytes from the model file (fp32 sizes) at the activation
 * dtype: the integer and bool part keeps its size. That part is
 * act_int_bytes (model.h): the dropout masks, embedding ids and max-pool
 * indices a layer saves, which its forward writes or reads once (a bool
 * mask is 1 byte in any --dtype) and its backward reads once; the memory
 * model keeps the same bytes unscaled in the saved activations
 * (memory.c). Capped at the pass's bytes. */
static double dtype_bytes(const struct ds_compute *c, const struct ds_layer *l, double bytes) {
  double ints = l->act_int_bytes < bytes ? l->act_int_bytes : bytes;
  return (bytes - ints) * act_scale(c) + ints;
}

/* Under --amp with the model file's autocast traffic (model.h): the layer's
 * activation bytes as autocast's dtypes make them; otherwise every op's
 * bytes (op_fwd_bytes, else the module's inputs and outputs, fwd_bytes)
 * at the activation dtype (dtype_bytes). */
static double fwd_act_bytes(const struct ds_compute *c, const struct ds_layer *l) {
  if (ds_compute_autocast_traffic(c, l)) return l->amp_fwd_bytes;
  return dtype_bytes(c, l, ds_layer_op_fwd_bytes(l));
}

/* Backward's activation traffic: a memory layer's own backward ops' bytes
 * when the model file has them (bwd_bytes, model.h), else twice the
 * forward's (read the saved activations and the output gradient, write the
 * input gradient), or once where no input gradient is computed (the weight
 * gradient reads the input and the output gradient: ds_layer_input_grad). */
static double bwd_act_bytes(const struct ds_compute *c, const struct ds_layer *l) {
  if (l->cls != DS_LAYER_MEMORY && !ds_layer_input_grad(l)) return fwd_act_bytes(c, l);
  if (l->cls != DS_LAYER_MEMORY || l->bwd_bytes < 0) return 2 * fwd_act_bytes(c, l);
  if (ds_compute_autocast_traffic(c, l)) return l->amp_bwd_bytes;
  return dtype_bytes(c, l, l->bwd_bytes);
}

/* Cast kernels of `bytes` per sample: separate memory-bound kernels
 * (Tensor::to), not overlapped with the layer's own math. Forward:
 * autocast's casts of the layer's activations; backward: their gradients
 * cast back (ToCopyBackward, the same bytes) plus the engine's casts of
 * promoted half inputs' gradients (amp_grad_cast_bytes). */
static double cast_ns(const struct ds_compute *c, double bytes, double b) {
  if (bytes <= 0) return 0;
  return ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, bytes * b);
}

/* The casts of pass `bwd` (0 forward) of layer l under autocast: fp32 ->
 * half at the roofline (one kernel, as cast_ns), half -> fp32 at the
 * dynamic-casting copy's rate (cast_reduce.h). Forward: amp_cast_bytes,
 * of which amp_upcast_bytes up. Backward (ToCopyBackward0 casts each
 * gradient back: an upcast's down, the rest up; none where the layer's
 * input needs no gradient), and the engine's casts of promoted half
 * inputs' gradients (amp_grad_cast_bytes, down). */
static double autocast_casts_ns(const struct ds_compute *c, const struct ds_layer *l, int bwd,
                                double b) {
  if (!ds_compute_autocast_traffic(c, l)) return 0;
  double up = l->amp_upcast_bytes, down = l->amp_cast_bytes - up;
  if (bwd) {
    int grads = ds_layer_input_grad(l);
    double back_up = grads ? down : 0;
    down = (grads ? up : 0) + l->amp_grad_cast_bytes;
    up = back_up;
  }
  return cast_ns(c, down, b) + ds_upcast_ns(c, up * b, 1);
}

/* Whether l has a grouped convolution's shape (ds_compute_grouped_conv
 * without the GPU's SMs and clock). */
static int grouped_shape(const struct ds_layer *l) {
  return l->cls == DS_LAYER_CONV && l->conv_groups > 1 && l->conv_group_width > 1 &&
         l->conv_kernel_area > 0;
}

int ds_compute_grouped_conv(const struct ds_compute *c, const struct ds_layer *l) {
  /* the built-in table moves to the GPU's SMs and clock; a calibration
   * file's was measured on the simulated machine and carries its own
   * (ds_gconv_ns), so it applies where the GPU table has no boost_mhz */
  return grouped_shape(l) && (ds_compute_knows_sms(c) || (c->gconv && c->gconv->on_target));
}

/* ds_compute_grouped_conv for the passes' pricing, which records the model
 * (kernel_models.h) also where the GPU's missing clock leaves the layer at
 * its class's rate (layer_kernel_ns); the callers record it where it
 * applies, bound where its measured time beats that. */
static int grouped_conv_priced(const struct ds_compute *c, const struct ds_layer *l) {
  int applies = ds_compute_grouped_conv(c, l);
  if (grouped_shape(l) && !applies) ds_compute_charge_model(c, DS_KM_GROUPED_CONV, 0);
  return applies;
}

/* Half-precision NCHW grouped convolutions on a GPU without TF32 (Volta,
 * Turing) take the built-in table's FP32 entries: the cuDNN 7 these GPUs
 * ran under PyTorch 1.x does not put them on the tensor cores, so half runs
 * them about as fast as float. Sources: pytorch/pytorch#10290 (Titan V:
 * "grouped convolution doesn't utilize the tensor core", a loop of dense
 * per-group convolutions ran faster); NVIDIA/apex#196 (RTX 2080 Ti: FP16
 * over FP32 throughput 2.0x for ResNet-101, 1.43x for ResNeXt-101 32x4d);
 * checked, not fitted, on pytorch/pytorch#34977's V100 row
 * (validation/kernels/grouped_conv_published.csv: cuDNN 7.6.3, half NCHW,
 * ResNeXt-101 32x8d's layer4.0.conv2 at batch 100, forward and weight
 * gradient 4110 us with a sum and its backward; the FP32 entry charges
 * 2967 us there, the half entry 650). The built-in half entries are cuDNN
 * 9's tensor-core kernels on an H200. A calibration file's table was
 * measured with the machine's own cuDNN: its half entries hold. Channels-last
 * keeps its entry (cuDNN 7.6.3's NHWC grouped kernels were a defect 35x
 * slower still, #34977, which nothing here models). */
enum ds_gconv_mode ds_compute_gconv_mode(const struct ds_compute *c) {
  const struct ds_gconv_table *t = c->gconv ? c->gconv : &ds_gconv_builtin;
  return c->class_math[DS_LAYER_CONV] == DS_GPU_MATH_FP32   ? DS_GCONV_FP32
         : c->class_math[DS_LAYER_CONV] == DS_GPU_MATH_TF32 ? DS_GCONV_TF32
         : c->channels_last                                 ? DS_GCONV_HALF_NHWC
         : !c->gpu_has_tf32 && !t->from_calib               ? DS_GCONV_FP32
                                                            : DS_GCONV_HALF;
}

/* A grouped convolution's pass at its measured time (grouped_conv.h): the
 * table of the math its class runs in; output positions from the forward's
 * FLOPs (2 x out elements x channels per group x kernel area). */

static double grouped_pass_ns(const struct ds_compute *c, const struct ds_layer *l,
                              enum ds_conv_pass pass, int64_t batch) {
  enum ds_gconv_mode mode = ds_compute_gconv_mode(c);
  struct ds_gconv_shape s = {
      .group_width = l->conv_group_width,
      .out_channels = l->conv_out_channels,
      .out_positions = l->fwd_flops / (2.0 * (double)l->conv_out_channels *
                                       (double)l->conv_group_width *
                                       (double)l->conv_kernel_area),
      .stride = l->conv_stride,
  };
  double ns = ds_gconv_ns(c->gconv ? c->gconv : &ds_gconv_builtin, mode, pass, &s, batch,
                          c->sms, c->sm_clock_hz);
  /* 0: the table has no entry of this mode (a calibration file's): the
   * class's rate, recorded as such (the callers charge the model unbound;
   * kernel_models.c words it from ds_gconv_has_mode) */
  return ns;
}

/* Max-pool (compute.h): PyTorch's kernels (aten/src/ATen/native/cuda/
 * DilatedMaxPool2d.cu) cost SM cycles per element they loop over, fitted by
 * least squares on this project's H200 measurements of the kernels alone
 * (bench/results/gpu-2026-11-26c-h200/maxpool.txt, bench/gpu_maxpool.py:
 * torch.profiler kernel times, 10 calls each, 132 SMs at 1980 MHz; the rows
 * over 40 us), each time less the 4 us kernel_overhead the charge adds
 * back (docs/architecture.md, "Fitted kernel rates"), as cycles per output
 * (forward) or input (backward) element plus cycles per (element, window)
 * pair (`python3 bench/maxpool_fit.py bench/results/gpu-2026-11-26c-h200/
 * maxpool.txt --sms 132 --clock-mhz 1980` prints them and each row's
 * charge; --overhead-us 0 the constants fitted before the overhead was
 * taken out: 2.42 + 0.207, 2.45 + 0.208, 2.29 + 0.256, 1.05 + 0.578):
 *   NCHW forward (max_pool_forward_nchw, a thread per output scanning its
 *   window): 8 rows, 3x3/2 and 3x3/1 windows (fp32, fp16, batch 32 and 128)
 *   and 2x2/2 (VGG's, 3 sizes): 2.21 + 0.215 per window element, every row
 *   within 1.9 %;
 *   NCHW backward (max_pool_backward_nchw, a thread per input element
 *   comparing the index of every window that could hold it): 9 rows, 2.43
 *   + 0.193 per window, within 5.8 %;
 *   channels-last forward (max_pool_forward_nhwc): 4 rows, 2.35 + 0.231,
 *   within 11 % on 3x3/2 and 2x2/2 (the models' windows), 19 % over on a
 *   3x3/1 window;
 *   channels-last backward (max_pool_backward_nhwc): 4 rows, 1.06 + 0.559,
 *   within 10.1 %.
 * fp16 ran within 3 % of fp32 in NCHW (the same cycles at half the bytes:
 * not bandwidth-bound). Checks, not fitted: ResNet-50's stem pool
 * (32x64x112x112 fp32, 3x3/2) in bench/results/gpu-2026-11-26b-h200/
 * kernels.csv (rows memory maxpool fp32: 0.104 ms; maxpool_bwd: 0.308 ms
 * with the zero fill) and in the whole-model traces (prof/resnet50-fp32-b32:
 * forward 103.5 us, backward kernel 288 us; gpu-2026-11-26-h200/prof/
 * resnet50-amp-b128: 418.7 / 1144 us, -nhwc: 415.6 / 912 us), and the H100
 * tables (gpu-2026-11-26-h200/h100/prof/resnet50-fp32-b32: 103.2 / 287 us):
 * the same 132 SMs at 1980 MHz on 3.35 TB/s take the same time, so the
 * rate is per SM clock, not HBM's. Other GPUs are inferred (cycles per
 * element on their SMs and boost clock). */
#define POOL_FWD_NCHW_CYCLES_PER_OUTPUT 2.21
#define POOL_FWD_NCHW_CYCLES_PER_PAIR 0.215
#define POOL_BWD_NCHW_CYCLES_PER_INPUT 2.43
#define POOL_BWD_NCHW_CYCLES_PER_PAIR 0.193
#define POOL_FWD_NHWC_CYCLES_PER_OUTPUT 2.35
#define POOL_FWD_NHWC_CYCLES_PER_PAIR 0.231
#define POOL_BWD_NHWC_CYCLES_PER_INPUT 1.06
#define POOL_BWD_NHWC_CYCLES_PER_PAIR 0.559

/* One side of the window: outputs, and the input elements of all windows
 * summed (padding excluded), which is also the windows holding each input
 * summed (max_pool_backward's p_start .. p_end). */
static void pool_side(int64_t in, int32_t k, int32_t s, int32_t p, double *outs, double *pairs) {
  int64_t n = (in + 2 * (int64_t)p - k) / s + 1, sum = 0;
  for (int64_t o = 0; o < n; o++) {
    int64_t lo = o * s - p, hi = lo + k;
    sum += (hi < in ? hi : in) - (lo > 0 ? lo : 0);
  }
  *outs = (double)n;
  *pairs = (double)sum;
}

void ds_compute_pool_geometry(const struct ds_pool *p, double *inputs, double *outputs,
                              double *pairs) {
  double oh, ow, ph, pw, ch = (double)p->channels;
  pool_side(p->height, p->kernel[0], p->stride[0], p->padding[0], &oh, &ph);
  pool_side(p->width, p->kernel[1], p->stride[1], p->padding[1], &ow, &pw);
  *inputs = ch * (double)p->height * (double)p->width;
  *outputs = ch * oh * ow;
  *pairs = ch * ph * pw;
}

double ds_compute_max_pool_ns(const struct ds_compute *c, const struct ds_layer *l,
                              int64_t batch, int backward, struct ds_pool_kernel *k) {
  struct ds_pool_kernel kk = {0};
  double b = (double)batch, inputs, outputs, pairs;
  ds_compute_pool_geometry(&l->pool, &inputs, &outputs, &pairs);
  kk.bytes = (backward ? bwd_act_bytes(c, l) : fwd_act_bytes(c, l)) * b;
  if (backward) {
    /* zero_ writes the input gradient before the kernel (the model file's
     * bwd_bytes count it: zero-filled and written) */
    kk.fill_bytes = inputs * b * c->precision.act_bytes;
    if (kk.fill_bytes > kk.bytes / 2) kk.fill_bytes = kk.bytes / 2;
  }
  kk.roofline_ns = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, kk.bytes - kk.fill_bytes);
  if (kk.fill_bytes > 0)
    kk.fill_ns = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, kk.fill_bytes);
  if (l->pool.kernel[0] > 0 && ds_compute_knows_sms(c)) {
    double per_elem, per_pair, elems = backward ? inputs : outputs;
    if (c->channels_last) {
      per_elem = backward ? POOL_BWD_NHWC_CYCLES_PER_INPUT : POOL_FWD_NHWC_CYCLES_PER_OUTPUT;
      per_pair = backward ? POOL_BWD_NHWC_CYCLES_PER_PAIR : POOL_FWD_NHWC_CYCLES_PER_PAIR;
    } else {
      per_elem = backward ? POOL_BWD_NCHW_CYCLES_PER_INPUT : POOL_FWD_NCHW_CYCLES_PER_OUTPUT;
      per_pair = backward ? POOL_BWD_NCHW_CYCLES_PER_PAIR : POOL_FWD_NCHW_CYCLES_PER_PAIR;
    }
    kk.cycles = b * (elems * per_elem + pairs * per_pair);
    kk.sm_rate_ns = kk.cycles / ((double)c->sms * c->sm_clock_hz) * 1e9 +
                    c->params.kernel_overhead_ns;
  }
  if (l->pool.kernel[0] > 0)
    ds_compute_charge_model(c, DS_KM_MAX_POOL, kk.sm_rate_ns > kk.roofline_ns);
  if (k) *k = kk;
  if (kk.sm_rate_ns == 0) /* no SM clock: the one roofline of all the bytes, as before */
    return ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, kk.bytes);
  return kk.fill_ns + (kk.sm_rate_ns > kk.roofline_ns ? kk.sm_rate_ns : kk.roofline_ns);
}

/* A layer pass's time, and the part of it its SMs bound: its own kernel,
 * overhead included, where the kernel's FLOPs set its time or a grouped
 * convolution's measured time (SM cycles) wins; 0 for batch norm and
 * max-pool, whose kernels count as memory-bound. */
struct pass_time {
  double total_ns, sm_bound_ns;
};

/* Whether layer l's weights are cast by kernels of their own under --amp
 * (ds_compute_weight_cast_ns): autocast casts them (cached_cast, each fp32
 * floating argument of an op on its lower-precision list) and the layer
 * has a class; a layer without one keeps the cast folded into its kernel. */
static int casts_weights(const struct ds_compute *c, const struct ds_layer *l) {
  return c->precision.half_weight_bytes > 0 && l->param_numel + l->tied_cast_numel > 0 &&
         l->cls != DS_LAYER_UNKNOWN && ds_layer_autocast_casts_weights(l);
}

/* The weights autocast casts for layer l, and their tensors (one cast
 * kernel each): its own and the tied weights it casts first (model.h
 * tied_cast_numel: GPT-2's lm_head casts wte's weight again, as the
 * embedding that owns it runs in fp32). */
static double cast_numel(const struct ds_layer *l) {
  return (double)(l->param_numel + l->tied_cast_numel);
}

static int32_t cast_tensors(const struct ds_layer *l) {
  int32_t n = l->param_count + l->tied_cast_count;
  return n > 0 ? n : 1;
}

double ds_compute_weight_cast_ns(const struct ds_compute *c, const struct ds_layer *l,
                                 double *bytes) {
  *bytes = 0;
  if (!casts_weights(c, l)) return 0;
  const struct ds_precision *p = &c->precision;
  /* one _to_copy per weight: reads fp32, writes half */
  *bytes = cast_numel(l) * (p->param_bytes + p->half_weight_bytes);
  return ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, *bytes) +
         (cast_tensors(l) - 1) * c->params.kernel_overhead_ns;
}

/* An unfused attention core priced by its parts (model.h attn_products,
 * attn_rest; compute.h): the batched products at the attention class's
 * roofline (its math and rate, the products' bytes, and any weights', as
 * their memory floor), each further product kernel its overhead; the
 * other vectorised kernels at the memory roofline, one overhead each; the
 * kernels off the vectorised path at their own rate (legacy_ew.h; the
 * shipped cores' backward has none). Their times add: the kernels run one
 * after another. `weights`: the pass's weight bytes. */
static struct pass_time attn_core_time(const struct ds_compute *c, const struct ds_layer *l,
                                       int pass, int64_t batch, double weights) {
  double b = (double)batch, ovh = c->params.kernel_overhead_ns;
  int amp = ds_compute_autocast_traffic(c, l);
  const struct ds_attn_part *p = &l->attn_products[pass], *r = &l->attn_rest[pass];
  double pbytes = (amp ? p->amp_bytes : p->bytes * act_scale(c)) * b + weights;
  double prod = 0, sm = 0;
  if (p->kernels > 0) {
    int flop_bound;
    prod = layer_kernel_ns(c, l, pass != DS_ATTN_FWD, batch, p->flops * b, pbytes, &flop_bound) +
           (p->kernels - 1) * ovh;
    if (flop_bound) sm = prod;
  }
  /* the dropout's bool mask, the core's act_int_bytes, at its size */
  double rbytes = (amp ? r->amp_bytes : dtype_bytes(c, l, r->bytes)) * b;
  enum ds_legacy_pass lp = pass == DS_ATTN_FWD ? DS_LEGACY_FWD : DS_LEGACY_BWD;
  double moved, legacy = ds_legacy_ew_ns(c, l, lp, batch, &moved);
  /* a GPU without a clock: those kernels' bytes at the roofline, as the
   * one-kernel rule leaves them */
  if (moved == 0) rbytes += ds_legacy_ew_bytes(c, l, lp, batch);
  double rest = rbytes > 0 ? ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, rbytes) +
                                 (r->kernels > 1 ? r->kernels - 1 : 0) * ovh
                           : 0;
  return (struct pass_time){prod + rest + legacy, sm};
}

static struct pass_time fwd_time(const struct ds_compute *c, const struct ds_layer *l,
                                 int64_t batch) {
  double b = (double)batch;
  double casts = autocast_casts_ns(c, l, 0, b);
  if (l->bn_channels > 0)
    return (struct pass_time){ds_batch_norm_ns(c, l, batch, 0, NULL) + casts, 0};
  if (l->pool.kernel[0] > 0)
    return (struct pass_time){ds_compute_max_pool_ns(c, l, batch, 0, NULL) + casts, 0};
  if (l->ln_rows > 0)
    return (struct pass_time){ds_layer_norm_ns(c, l, batch, 0, NULL) + casts, 0};
  const struct ds_precision *p = &c->precision;
  /* amp: a convolution or matmul reads the half copies autocast's casts
   * made, kernels of their own before it (ds_compute_weight_cast_ns); a
   * memory layer's weights (an embedding's, a normalisation's) autocast
   * does not cast: read in fp32; a layer without a class keeps the old
   * rule, the cast folded in (fp32 read, half written and read: 8 B) */
  double cast_bytes, weight_casts = ds_compute_weight_cast_ns(c, l, &cast_bytes);
  double per_param = weight_casts > 0 ? p->half_weight_bytes
                     : p->half_weight_bytes && ds_layer_autocast_casts_weights(l)
                         ? p->param_bytes + 2.0 * p->half_weight_bytes
                         : p->param_bytes;
  double weights = (double)l->param_numel * per_param;
  if (ds_layer_attn_parts(l)) {
    struct pass_time t = attn_core_time(c, l, DS_ATTN_FWD, batch, weights);
    return (struct pass_time){t.total_ns + casts + weight_casts +
                                  ds_cat_copy_extra_ns(c, l, DS_ATTN_FWD, batch),
                              t.sm_bound_ns};
  }
  /* the kernels off PyTorch's vectorised path at their own rate (legacy_ew.h) */
  double act = fwd_act_bytes(c, l) * b;
  double legacy = off_path_ns(c, l, DS_LEGACY_FWD, batch, &act);
  /* no other kernel where those kernels are all the forward runs */
  int rest = legacy == 0 || act > 0 || weights > 0 || l->fwd_flops > 0;
  int flop_bound = 0;
  double kernel =
      rest ? layer_kernel_ns(c, l, 0, batch, l->fwd_flops * b, act + weights, &flop_bound) : 0;
  double own = kernel + legacy;
  double sm = flop_bound ? kernel : 0;
  if (grouped_conv_priced(c, l)) {
    double measured = grouped_pass_ns(c, l, DS_CONV_FWD, batch);
    ds_compute_charge_model(c, DS_KM_GROUPED_CONV, measured > own);
    if (measured > own) own = sm = measured;
  }
  /* the generic cats' divisions past their bytes' roofline (cat_copy.h) */
  own += ds_cat_copy_extra_ns(c, l, DS_ATTN_FWD, batch);
  return (struct pass_time){own + casts + weight_casts, sm};
}

double ds_compute_fwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch) {
  return fwd_time(c, l, batch).total_ns;
}

static struct pass_time bwd_time(const struct ds_compute *c, const struct ds_layer *l,
                                 int64_t batch) {
  double b = (double)batch;
  /* the casts' backward (none for an input that needs no gradient: the
   * model's, cast by the first layer), and the engine's casts of promoted
   * inputs' gradients */
  double casts = autocast_casts_ns(c, l, 1, b);
  if (l->bn_channels > 0)
    return (struct pass_time){ds_batch_norm_ns(c, l, batch, 1, NULL) + casts +
                                  ds_compute_bwd_extra_ns(c, l, batch), 0};
  if (l->pool.kernel[0] > 0)
    return (struct pass_time){ds_compute_max_pool_ns(c, l, batch, 1, NULL) + casts +
                                  ds_compute_bwd_extra_ns(c, l, batch), 0};
  if (l->ln_rows > 0)
    return (struct pass_time){ds_layer_norm_ns(c, l, batch, 1, NULL) + casts +
                                  ds_compute_bwd_extra_ns(c, l, batch), 0};
  const struct ds_precision *p = &c->precision;
  /* amp: half weight read, half gradient written; the cast's backward
   * reading it and writing the fp32 gradient is a kernel of its own per
   * weight, an upcast (cast_reduce.h), where the forward's casts are
   * (casts_weights), else folded in as before; a memory layer's uncast
   * weights as in fp32 */
  double per_param = p->half_weight_bytes && ds_layer_autocast_casts_weights(l)
                         ? 3.0 * p->half_weight_bytes + p->param_bytes
                         : 2.0 * p->param_bytes;
  if (casts_weights(c, l)) {
    per_param = 2.0 * p->half_weight_bytes;
    casts += ds_upcast_ns(c, cast_numel(l) * (p->half_weight_bytes + p->param_bytes),
                          cast_tensors(l));
  }
  double weights = (double)l->param_numel * per_param;
  if (ds_layer_attn_parts(l)) {
    struct pass_time t = attn_core_time(c, l, DS_ATTN_BWD, batch, weights);
    return (struct pass_time){t.total_ns + casts + ds_compute_bwd_extra_ns(c, l, batch),
                              t.sm_bound_ns};
  }
  double act = bwd_act_bytes(c, l) * b;
  double legacy = off_path_ns(c, l, DS_LEGACY_BWD, batch, &act);
  double bytes = act + weights;
  /* a backward that runs no op (the residual add's: it hands the gradient
   * on) launches no kernel */
  int flop_bound = 0;
  double kernel = bytes > 0 || l->bwd_flops > 0
                      ? layer_kernel_ns(c, l, 1, batch, l->bwd_flops * b, bytes, &flop_bound)
                      : 0;
  double own = kernel + legacy;
  double sm = flop_bound ? kernel : 0;
  if (grouped_conv_priced(c, l)) {
    /* the weight gradient, and the input gradient unless the layer takes
     * the model's input (its backward FLOPs are then the forward's) */
    double measured = grouped_pass_ns(c, l, DS_CONV_WGRAD, batch);
    if (ds_layer_input_grad(l)) measured += grouped_pass_ns(c, l, DS_CONV_DGRAD, batch);
    ds_compute_charge_model(c, DS_KM_GROUPED_CONV, measured > own);
    if (measured > own) own = sm = measured;
  }
  return (struct pass_time){own + casts + ds_compute_bwd_extra_ns(c, l, batch), sm};
}

double ds_compute_bwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch) {
  return bwd_time(c, l, batch).total_ns;
}

double ds_compute_sm_bound_ns(const struct ds_compute *c, const struct ds_layer *l,
                              int backward, int64_t batch) {
  return (backward ? bwd_time(c, l, batch) : fwd_time(c, l, batch)).sm_bound_ns;
}

/* The smallest output (positions per image) cuDNN ran a unit-stride 1x1
 * convolution at as a GEMM on NCHW in the traces (ResNet-50's layer3,
 * 14x14; layer4's 7x7 were transposed). */
#define CONV_NCHW_GEMM_MIN_POSITIONS 196.0

/* The transposes' tensors (compute.h): *tensors receives how many
 * kernels. */
static double conv_transpose_bytes(const struct ds_compute *c, const struct ds_model *m,
                                   int32_t layer, int64_t batch, int backward, int *tensors) {
  const struct ds_layer *l = &m->layers[layer];
  *tensors = 0;
  /* a grouped convolution's measured times include whatever layout work
   * cuDNN does for it (grouped_conv.h) */
  if (l->cls != DS_LAYER_CONV || c->channels_last || ds_compute_grouped_conv(c, l)) return 0;
  if (c->class_math[DS_LAYER_CONV] == DS_GPU_MATH_FP32 || !c->gpu_has_tf32) return 0;
  const struct ds_param *w = NULL;
  for (int32_t k = 0; k < l->param_count && !w; k++)
    if (m->params[l->param_first + k].ndim == 4) w = &m->params[l->param_first + k];
  /* depthwise (one input channel per group): cuDNN's own NCHW depthwise
   * kernels; the traces have none, so no transposes are charged */
  if (!w || w->rows <= 0 || w->dim1 <= 1) return 0;
  double kk = (double)w->rows, cin = (double)w->dim1;
  double area = (double)w->numel / (kk * cin);
  double elems = l->fwd_bytes / 4; /* x and y per sample, fp32 in the file */
  if (area == 1) {
    double pos = elems / (cin + kk), side = floor(sqrt(pos) + 0.5);
    if (pos == floor(pos) && side * side == pos && pos >= CONV_NCHW_GEMM_MIN_POSITIONS)
      return 0; /* a GEMM on NCHW */
  }
  double esz = c->precision.act_bytes;
  double act = 2 * elems * (double)batch * esz; /* x and y, each read and written */
  double wt = area > 1 ? 2 * (double)w->numel * esz : 0;
  if (!backward) {
    *tensors = area > 1 ? 3 : 2;
    return act + wt;
  }
  int dgrad = layer > 0;
  *tensors = 2 + (area > 1) + (dgrad ? 2 + (area > 1) : 0);
  return (dgrad ? act + wt : 0) + act + wt;
}

double ds_compute_conv_transpose_bytes(const struct ds_compute *c, const struct ds_model *m,
                                       int32_t layer, int64_t batch, int backward) {
  int n;
  return conv_transpose_bytes(c, m, layer, batch, backward, &n);
}

double ds_compute_conv_transpose(const struct ds_compute *c, const struct ds_model *m,
                                 int32_t layer, int64_t batch, int backward, double *bytes) {
  int n;
  *bytes = conv_transpose_bytes(c, m, layer, batch, backward, &n);
  if (n == 0) return 0;
  return ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, *bytes) +
         (n - 1) * c->params.kernel_overhead_ns;
}

double ds_compute_conv_transpose_ns(const struct ds_compute *c, const struct ds_model *m,
                                    int32_t layer, int64_t batch, int backward) {
  double bytes;
  return ds_compute_conv_transpose(c, m, layer, batch, backward, &bytes);
}

/* PyTorch's softmax kernels (aten/src/ATen/native/cuda/SoftMax.cu,
 * host_softmax): rows of at most 1024 elements run the persistent warp
 * softmax; rows that fit in a block's default shared memory (48 KiB,
 * cudaDeviceProp::sharedMemPerBlock) the Smem kernels; each reads its row
 * once. */
enum { SOFTMAX_PERSISTENT_MAX = 1024, SOFTMAX_SMEM_BYTES = 48 * 1024 };

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

int ds_compute_step_kernels(const struct ds_compute *c, const struct ds_model *model) {
  if (model->optimizer == DS_OPT_NONE) return 0;
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
 * --no-bn-weight-decay's decayed and undecayed groups (skips_decay). */
enum mta_group { MTA_ALL, MTA_DECAYED, MTA_UNDECAYED };

/* The launches of one foreach call over `group`'s parameters with at most
 * max_tensors tensors a launch: a block per chunk, in parameter order; a
 * launch when the blocks fill, or the tensors do at a tensor's last chunk;
 * a tensor cut by a full launch carries on as the next launch's first;
 * empty tensors take no block. */
static int mta_launches(const struct ds_compute *c, const struct ds_model *model,
                        enum mta_group group, int32_t max_tensors) {
  int launches = 0;
  int32_t blocks = 0, tensors = 0;
  for (int32_t p = 0; p < model->n_params; p++) {
    int64_t numel = model->params[p].numel;
    if (numel <= 0) continue;
    if (group != MTA_ALL && (group == MTA_UNDECAYED) != skips_decay(c, model, p)) continue;
    tensors++;
    int64_t chunks = (numel + MTA_CHUNK - 1) / MTA_CHUNK;
    for (int64_t k = 0; k < chunks; k++) {
      blocks++;
      int last = k == chunks - 1;
      if ((tensors == max_tensors && last) || blocks == MTA_BLOCKS) {
        launches++;
        blocks = 0;
        tensors = last ? 0 : 1;
      }
    }
  }
  return launches + (blocks > 0);
}

int ds_compute_unscale_launches(const struct ds_compute *c, const struct ds_model *model) {
  /* no optimizer, no scaler.step(): nothing unscales */
  if (c->amp != DS_AMP_FP16 || model->optimizer == DS_OPT_NONE) return 0;
  /* one list, the gradients read and written in place: depth 1 */
  return mta_launches(c, model, MTA_ALL, MTA_TENSORS[0][0]);
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

static int group_launches(const struct ds_compute *c, const struct ds_model *model,
                          enum mta_group group, int decays) {
  int adam = model->optimizer == DS_OPT_ADAM;
  int n = adam ? ADAM_KERNELS : SGD_KERNELS;
  int launches = decays ? mta_launches(c, model, group, MTA_TENSORS[0][DECAY_CALL_DEPTH - 1]) : 0;
  for (int i = 0; i < n; i++) {
    int depth = adam ? ADAM_CALL_DEPTH[i] : SGD_CALL_DEPTH[i];
    int list = adam && ADAM_CALL_SCALARLIST[i];
    launches += mta_launches(c, model, group, MTA_TENSORS[list][depth - 1]);
  }
  return launches;
}

int ds_compute_step_launches(const struct ds_compute *c, const struct ds_model *model) {
  if (c->optimizer_loop || model->optimizer == DS_OPT_NONE)
    return ds_compute_step_kernels(c, model);
  double numel;
  int32_t skip = undecayed(c, model, &numel);
  if (skip == 0) return group_launches(c, model, MTA_ALL, c->weight_decay);
  return group_launches(c, model, MTA_UNDECAYED, 0) +
         (skip < model->n_params ? group_launches(c, model, MTA_DECAYED, 1) : 0);
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
  int adam = opt == DS_OPT_ADAM;
  int p = c->optimizer_loop ? (adam ? LOOP_ADAM_PASSES : LOOP_SGD_PASSES)
                            : (adam ? ADAM_PASSES : SGD_PASSES);
  return p + (c->weight_decay ? DECAY_PASSES : 0);
}

int ds_compute_step_host_ops(const struct ds_compute *c, const struct ds_model *model) {
  if (!c->optimizer_loop) return 0;
  return ds_compute_step_kernels(c, model) + (c->zero_grad_fill ? model->n_params : 0);
}

/* One kernel per parameter tensor first .. first + count - 1, each
 * `passes` over its gradient: their time, and in *bytes what they move. */
static double per_tensor_kernels_ns(const struct ds_compute *c, const struct ds_model *model,
                                    int32_t first, int32_t count, double passes,
                                    double *bytes) {
  double ns = 0;
  *bytes = 0;
  for (int32_t p = first; p < first + count; p++) {
    double b = passes * (double)model->params[p].numel * c->precision.param_bytes;
    *bytes += b;
    ns += ds_compute_kernel_ns(c, 0, b);
  }
  return ns;
}

double ds_compute_zero_grad_ns(const struct ds_compute *c, const struct ds_model *model,
                               double *bytes) {
  *bytes = 0;
  if (!c->zero_grad_fill) return 0;
  return per_tensor_kernels_ns(c, model, 0, model->n_params, 1, bytes);
}

double ds_compute_accum_grad_ns(const struct ds_compute *c, const struct ds_model *model,
                                int32_t layer, double *bytes) {
  const struct ds_layer *ly = &model->layers[layer];
  return per_tensor_kernels_ns(c, model, ly->param_first, ly->param_count, 3, bytes);
}

double ds_compute_step_host_op_ns(const struct ds_compute *c) {
  return c->params.host_grad_copy_ns;
}

double ds_compute_step_bytes(const struct ds_compute *c,
                             const struct ds_model *model) {
  if (model->optimizer == DS_OPT_NONE) return 0;
  int passes = ds_compute_optimizer_passes(c, model->optimizer);
  double skipped;
  undecayed(c, model, &skipped); /* --no-bn-weight-decay: no decay pass over these */
  return (double)model->total_numel * c->precision.param_bytes * passes -
         skipped * c->precision.param_bytes * DECAY_PASSES;
}

int ds_compute_loss_passes(double classes) {
  if (classes <= 0) return 2;
  int fits = classes <= SOFTMAX_PERSISTENT_MAX || classes * 4 < SOFTMAX_SMEM_BYTES;
  return fits ? 2 + 1 + 3 : 4 + 1 + 4;
}

double ds_compute_loss_ns(const struct ds_compute *c, const struct ds_model *model,
                          double samples, double *bytes) {
  double passes = ds_compute_loss_passes(model->output_classes);
  *bytes = passes * samples * model->output_bytes * act_scale(c);
  if (c->amp != DS_AMP_NONE) {
    /* autocast runs the loss in fp32 (cross_entropy_loss, log_softmax and
     * nll_loss are on its fp32 list, aten/src/ATen/autocast_mode.h): the
     * passes over the fp32 outputs, plus the cast of the half outputs to fp32 (2 B
     * read, 4 B written per element) and its backward's cast of the
     * gradient back (the same 6 B) */
    double elems = samples * model->output_bytes / 4.0;
    *bytes = passes * samples * model->output_bytes + 2 * elems * (2 + 4);
  }
  /* one overhead per kernel: log_softmax, nll_loss, the zero fill of
   * nll_loss_backward's gradient and its kernel, log_softmax's backward (5,
   * as the H200 traces of cross_entropy show), and autocast's two casts;
   * a file without output_classes keeps one kernel */
  int kernels = model->output_classes > 0 ? 5 + (c->amp != DS_AMP_NONE ? 2 : 0) : 1;
  double ns;
  if (c->amp != DS_AMP_NONE && model->output_classes > 0) {
    /* the forward's cast is an upcast, on CUDA's dynamic-casting copy
     * (cast_reduce.h): a kernel at its own rate; the rest one roofline */
    double up = samples * model->output_bytes / 4.0 * (2 + 4);
    ns = ds_compute_kernel_ns(c, 0, *bytes - up) + (kernels - 2) * c->params.kernel_overhead_ns +
         ds_upcast_ns(c, up, 1);
  } else {
    ns = ds_compute_kernel_ns(c, 0, *bytes) + (kernels - 1) * c->params.kernel_overhead_ns;
  }
  if (model->loss_copy_bytes > 0) {
    /* the copies are of the model's outputs: half under --amp (the logits
     * are sliced before the loss's cast to fp32) */
    double copy = model->loss_copy_bytes * samples * act_scale(c), legacy;
    *bytes += copy;
    /* those on the non-vectorised kernel (a slice's clone and its
     * backward's copy) at its rates, a kernel of their own (legacy_ew.h) */
    double legacy_ns = ds_legacy_loss_ns(c, model, samples, &legacy);
    if (legacy > 0 && copy - legacy <= 0)
      ns += legacy_ns;
    else
      ns += legacy_ns + ds_compute_kernel_ns(c, 0, copy - legacy);
  }
  return ns;
}

double ds_compute_step_ns(const struct ds_compute *c,
                          const struct ds_model *model) {
  if (model->optimizer == DS_OPT_NONE) return 0;
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
