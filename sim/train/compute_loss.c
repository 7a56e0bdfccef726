/*
 * The loss and its gradient (compute.h ds_compute_loss_ns): cross entropy's
 * softmax kernels' passes over the model's outputs, autocast's casts around
 * them, and the loss's own layout copies.
 */
#include "sim/train/compute.h"

#include "sim/train/cast_reduce.h"
#include "sim/train/compute_impl.h"
#include "sim/train/legacy_ew.h"

/* PyTorch's softmax kernels (aten/src/ATen/native/cuda/SoftMax.cu,
 * host_softmax): rows of at most 1024 elements run the persistent warp
 * softmax; rows that fit in a block's default shared memory (48 KiB,
 * cudaDeviceProp::sharedMemPerBlock) the Smem kernels; each reads its row
 * once. */
enum { SOFTMAX_PERSISTENT_MAX = 1024, SOFTMAX_SMEM_BYTES = 48 * 1024 };

int ds_compute_loss_passes(double classes) {
  if (classes <= 0) return 2;
  int fits = classes <= SOFTMAX_PERSISTENT_MAX || classes * 4 < SOFTMAX_SMEM_BYTES;
  return fits ? 2 + 1 + 3 : 4 + 1 + 4;
}

double ds_compute_loss_ns(const struct ds_compute *c, const struct ds_model *model,
                          double samples, double *bytes) {
  double passes = ds_compute_loss_passes(model->output_classes);
  *bytes = passes * samples * model->output_bytes * ds__compute_act_scale(c);
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
    double copy = model->loss_copy_bytes * samples * ds__compute_act_scale(c), legacy;
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
