/*
 * The roofline (compute.h): a kernel's time from its FLOPs at its op class's
 * rate (the math and efficiency compute.c resolved) and its bytes at the
 * achievable memory bandwidth, plus the launch overhead; the rate of a
 * convolution's pass, of a half GEMM on unaligned operands, and of a dense
 * convolution's implicit GEMM by its tiles; the layer's own kernel at that
 * rate, which compute_layer.c's passes charge.
 */
#include "sim/train/compute.h"

#include <math.h>

#include "sim/train/compute_impl.h"

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
double ds__compute_layer_kernel_ns(const struct ds_compute *c, const struct ds_layer *l,
                                   int backward, int64_t batch, double flops, double bytes,
                                   int *flop_bound) {
  double call_ns, rate = layer_rate(c, l, backward, batch, &call_ns);
  *flop_bound = flops > 0 &&
                flops / rate >= bytes / (c->mem_bw_bytes_per_s * c->params.mem_efficiency);
  return call_ns + roofline_ns(c, rate, flops, bytes);
}
