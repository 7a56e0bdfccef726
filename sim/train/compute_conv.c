/*
 * What cuDNN does to a convolution beyond its roofline (compute.h): grouped
 * convolutions at their measured kernel times (grouped_conv.h) in the
 * table's mode of the run's math, and the NCHW<->NHWC layout transposes
 * around a tensor-core convolution of NCHW tensors.
 */
#include "sim/train/compute.h"

#include <math.h>

#include "sim/train/compute_impl.h"
#include "sim/train/grouped_conv.h"

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
int ds__compute_grouped_conv_priced(const struct ds_compute *c, const struct ds_layer *l) {
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

double ds__compute_grouped_pass_ns(const struct ds_compute *c, const struct ds_layer *l,
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

/* The smallest output (positions per image) cuDNN ran a unit-stride 1x1
 * convolution at as a GEMM on NCHW in the traces (ResNet-50's layer3,
 * 14x14; layer4's 7x7 were transposed): the H200 ResNet-50 traces
 * bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32 and
 * resnet50-amp-b128 (fp16; d63a077c),
 * docs/architecture.md "Batch norm and cuDNN's layout transposes" (one
 * exception, layer4.0.conv1 at 14x14, transposed: cudnn.benchmark picks by
 * timing); seen again on the ResNeXt TF32 forwards
 * (bench/results/gpu-2026-11-27d-h200/notes-conv-call.md). */
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
