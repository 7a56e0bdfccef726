/*
 * A layer's forward and backward pass (compute.h ds_compute_fwd_ns,
 * ds_compute_bwd_ns): its own kernel at the roofline (compute_roofline.c),
 * or its measured kernel model (batch norm and layer norm, norm.c; max-pool,
 * compute_pool.c; a grouped convolution, compute_conv.c), autocast's casts
 * of its activations and weights, an unfused attention core by its parts,
 * the kernels off the vectorised path (legacy_ew.h), an embedding's rows and
 * its backward's two paths, and the backward's reductions, copies and
 * additions; and the part of each pass the SMs bound.
 */
#include "sim/train/compute.h"

#include <math.h>

#include "sim/train/cast_reduce.h"
#include "sim/train/cat_copy.h"
#include "sim/train/compute_impl.h"
#include "sim/train/legacy_ew.h"
#include "sim/train/norm.h"

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
  /* per sample x batch, or per step (model.h bytes_per_step) */
  double per = ds_layer_bytes_batch(l, batch);
  double scale = ds__compute_act_scale(c) * per, ns = 0;
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
  double accum = ds_compute_autocast_traffic(c, l) ? l->amp_bwd_accum_bytes * per
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
  return (bytes - ints) * ds__compute_act_scale(c) + ints;
}

/* Under --amp with the model file's autocast traffic (model.h): the layer's
 * activation bytes as autocast's dtypes make them; otherwise every op's
 * bytes (op_fwd_bytes, else the module's inputs and outputs, fwd_bytes)
 * at the activation dtype (dtype_bytes). */
double ds__compute_fwd_act_bytes(const struct ds_compute *c, const struct ds_layer *l) {
  if (ds_compute_autocast_traffic(c, l)) return l->amp_fwd_bytes;
  return dtype_bytes(c, l, ds_layer_op_fwd_bytes(l));
}

/* Backward's activation traffic: a memory layer's own backward ops' bytes
 * when the model file has them (bwd_bytes, model.h), else twice the
 * forward's (read the saved activations and the output gradient, write the
 * input gradient), or once where no input gradient is computed (the weight
 * gradient reads the input and the output gradient: ds_layer_input_grad). */
double ds__compute_bwd_act_bytes(const struct ds_compute *c, const struct ds_layer *l) {
  if (l->cls != DS_LAYER_MEMORY && !ds_layer_input_grad(l))
    return ds__compute_fwd_act_bytes(c, l);
  if (l->cls != DS_LAYER_MEMORY || l->bwd_bytes < 0)
    return 2 * ds__compute_fwd_act_bytes(c, l);
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
  double pbytes = (amp ? p->amp_bytes : p->bytes * ds__compute_act_scale(c)) * b + weights;
  double prod = 0, sm = 0;
  if (p->kernels > 0) {
    int flop_bound;
    prod = ds__compute_layer_kernel_ns(c, l, pass != DS_ATTN_FWD, batch, p->flops * b, pbytes,
                                       &flop_bound) +
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

/* An embedding's traffic (model.h embed_lookups), elem_bytes a table
 * element. The ids of a step: embed_lookups x batch + embed_step_lookups.
 * How many distinct rows they name depends on the data, which the model
 * file does not carry: at most min(ids, the table's rows), charged as that
 * bound (a repeated row a cache hit, each distinct row read or written
 * once). */
static double embedding_ids(const struct ds_layer *l, double batch) {
  return (double)l->embed_lookups * batch + (double)l->embed_step_lookups;
}

static double embedding_rows(const struct ds_layer *l, double ids) {
  double table_rows = (double)l->param_numel / (double)l->embed_dim;
  return ids < table_rows ? ids : table_rows;
}

/* The forward, index_select (aten/src/ATen/native/Embedding.cpp
 * embedding): the rows above, in the layer's one kernel. */
static double embedding_fwd_bytes(const struct ds_layer *l, double batch, double elem_bytes) {
  return embedding_rows(l, embedding_ids(l, batch)) * (double)l->embed_dim * elem_bytes;
}

/* The backward, embedding_dense_backward_cuda (PyTorch
 * aten/src/ATen/native/cuda/Embedding.cu:248, commit 1c94016e), beside the
 * output gradient and ids bwd_bytes already counts; ids int64 (8 B).
 * - At most 3072 ids (:262): at::zeros of the table (:264, a fill kernel
 *   writing it) and embedding_backward_feature_kernel (:278), which adds
 *   each id's gradient row into its table row (grad_weight[...] +=: each
 *   row read and written). 2 kernels; the feature kernel's time is its
 *   chain of dependent steps where that is longer than its bytes at the
 *   roofline (embed_feature_chain_ns below).
 * - Above (:295-344): at::arange of the ids' positions (a kernel writing
 *   8 B each), cub radix_sort_pairs of ids and positions (reading and
 *   writing both once: the digit passes past one, and CUB's own helper
 *   kernels, are left out), then embedding_backward_cuda_kernel
 *   (EmbeddingBackwardKernel.cu:188, commit d2999467): at::zeros of the
 *   table (:203), unique_by_key into segments (:212), krn_partials_per_
 *   segment (:219), cub exclusive_sum (:232), krn_partial_segment_offset
 *   (:245), compute_grad_weight (:285), which sums up to NROWS_PER_THREAD
 *   = 10 ids (:34) of a segment into an fp32 partial row (:269, acc_type
 *   of fp32, half and bf16 alike), and sum_and_scatter (:300), which adds
 *   a row's partials and writes the row (:179: written, not read). 9
 *   kernels; the segment arrays (8 B per id or row each) and the two
 *   .item() reads of the partial count (:238) are left out (torch 2.15's
 *   libtorch_cuda.so has compute_num_of_partial_segments: newer versions
 *   seem to count on the device, one kernel more, no wait; its source was
 *   not read, so d2999467's list stands). The partial
 *   rows, rows x ceil(ids / rows / 10), take the ids spread evenly over
 *   the distinct rows, as the bound above. */
#define EMBED_FEATURE_KERNEL_MAX_IDS 3072.0
#define EMBED_IDS_PER_PARTIAL 10.0
#define EMBED_ID_BYTES 8.0
#define EMBED_PARTIAL_ELEM_BYTES 4.0
#define EMBED_FEATURE_PATH_KERNELS 2
#define EMBED_SORT_PATH_KERNELS 9
struct embed_bwd {
  double bytes;
  int kernels;
  /* the feature kernel's own bytes (the rows read and written; the ids
   * and gradient are the layer's bwd_bytes), 0 on the sort path */
  double feature_bytes;
};

static struct embed_bwd embedding_bwd(const struct ds_layer *l, double batch,
                                      double elem_bytes) {
  double ids = embedding_ids(l, batch), rows = embedding_rows(l, ids);
  double d = (double)l->embed_dim, table = (double)l->param_numel * elem_bytes;
  if (ids <= EMBED_FEATURE_KERNEL_MAX_IDS) {
    double rows_bytes = 2.0 * rows * d * elem_bytes;
    return (struct embed_bwd){table + rows_bytes, EMBED_FEATURE_PATH_KERNELS, rows_bytes};
  }
  double partials = rows * ceil(ids / rows / EMBED_IDS_PER_PARTIAL);
  /* arange's positions written; the sort's ids and positions read and written */
  double index_bytes = ids * EMBED_ID_BYTES + 4.0 * ids * EMBED_ID_BYTES;
  return (struct embed_bwd){index_bytes + table +
                                2.0 * partials * d * EMBED_PARTIAL_ELEM_BYTES +
                                rows * d * elem_bytes,
                            EMBED_SORT_PATH_KERNELS, 0};
}

/* embedding_backward_feature_kernel's chain (PyTorch's
 * aten/src/ATen/native/cuda/Embedding.cu at 1c94016e: the kernel's body and
 * embedding_dense_backward_cuda's launch, taken for num_indices <= 3072
 * without scale_grad_by_freq; the traces confirm the geometry). The launch: grid ceil_div(stride, warp_size) CTAs
 * (stride the table's row, D), block (warp_size, BLOCKDIMY = 32): 32 x 32
 * = 1024 threads, a lane per feature, a warp per id (the H200 traces show
 * grid [24, 1, 1], block [32, 32, 1] at D = 768). Every CTA walks every
 * id of the step: it loads 1024 ids into shared memory at a time, then
 * takes them 32 at a time (a chunk, one per warp): __syncthreads; each
 * warp loads its id's gradient row slice from global memory into shared
 * memory; __syncthreads; a ballot finds the warps of the chunk with the
 * same row and the first of them adds the others' slices from shared
 * memory, then reads, adds to and writes its table row (grad_weight
 * [dst_row * stride + f] +=, a second global round trip that the next
 * chunk's barrier waits for). So a chunk is two dependent global-memory
 * round trips and two CTA-wide barriers, whatever D, and the kernel's time
 * is ceil(ids / 32) chunks, one after another, not its bytes: few CTAs (24
 * at D = 768, on 132 SMs) each waiting on memory. DS_EMBED_FEATURE_CHUNK_CYCLES SM cycles a chunk: the
 * mean of the two wpe feature kernels of the H200 GPT-2 bf16 autocast
 * trace (1024 ids, 32 chunks; its wpe gradient is fp32, as in fp32
 * training: 28.10 and 27.87 us), less the 4 us kernel_overhead, over 32
 * chunks: 0.7495 us = 1484 cycles at 1980 MHz (bench/results/
 * gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz; FIT on that run, whose
 * validation row is marked fit already). Validation, the same H200's other
 * traces: the GPT-2 fp32 run's two (1024 ids) predicted 27.99 us,
 * measured 28.38 and 28.26 (gpt2-fp32-b8.json.gz); 128 ids (4 chunks)
 * 7.0 us, measured 4.61 to 4.99 (bert-base fp32 and AMP b32, 8 kernels:
 * the 4 us kernel_overhead is more than this kernel's fixed part); 384
 * ids (12 chunks) 13.0 us, measured 11.36 and 11.52 (bert-base-squad tf32
 * b24, gpu-2026-11-26d-h200). A line through all 14 calls gives 1.38 us
 * + 26.1 ns an id (837 ns a chunk): the cost is per id, not per byte.
 * bench/embed_feature_fit.py prints the calls, the fit and the line. CTAs beyond
 * the SMs' room run in waves: a CTA of 1024 threads, floor(the SM's most
 * resident threads / 1024) CTAs an SM (registers and shared memory, 8 KB
 * a CTA, not checked; 2048 threads where the GPU table does not say);
 * one wave up to D = 8448 on 132 SMs. Other GPUs: the same cycles at
 * their clock. The index loads once per 1024 ids are in the fit (one in
 * GPT-2's). */
#define DS_EMBED_FEATURE_CHUNK_CYCLES 1484.0
#define EMBED_FEATURE_WARP 32.0           /* warp_size: a lane per feature */
#define EMBED_FEATURE_BLOCKDIMY 32.0      /* BLOCKDIMY: warps a CTA, ids a chunk */
#define EMBED_FEATURE_CTA_THREADS 1024.0  /* EMBED_FEATURE_WARP x EMBED_FEATURE_BLOCKDIMY */
#define EMBED_SM_THREADS_UNKNOWN 2048.0

static double embed_feature_chain_ns(double ids, double dim, int32_t sms,
                                     int32_t sm_max_threads, double clock_hz) {
  if (ids <= 0 || dim <= 0 || sms <= 0 || clock_hz <= 0) return 0;
  double ctas = ceil(dim / EMBED_FEATURE_WARP);
  double sm_threads = sm_max_threads > 0 ? sm_max_threads : EMBED_SM_THREADS_UNKNOWN;
  double per_sm = floor(sm_threads / EMBED_FEATURE_CTA_THREADS);
  if (per_sm < 1) per_sm = 1;
  double waves = ceil(ctas / ((double)sms * per_sm));
  double chunks = ceil(ids / EMBED_FEATURE_BLOCKDIMY);
  return waves * chunks * DS_EMBED_FEATURE_CHUNK_CYCLES / clock_hz * 1e9;
}

/* What the feature kernel's chain adds to the layer's backward: the chain
 * less the time its bytes (act: the gradient and ids, bwd_bytes; the rows
 * read and written) take at the roofline, where longer; 0 on the sort path
 * or where the GPU has no SMs or clock (its bytes at the roofline). */
static double embed_feature_extra_ns(const struct ds_compute *c, const struct ds_layer *l,
                                     double batch, const struct embed_bwd *e, double act) {
  if (l->embed_dim <= 0 || e->kernels != EMBED_FEATURE_PATH_KERNELS) return 0;
  if (!ds_compute_knows_sms(c)) {
    ds_compute_charge_model(c, DS_KM_EMBED_FEATURE, 0);
    return 0;
  }
  double chain = embed_feature_chain_ns(embedding_ids(l, batch), (double)l->embed_dim, c->sms,
                                        c->sm_max_threads, c->sm_clock_hz);
  double bytes_ns = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, act + e->feature_bytes) -
                    c->params.kernel_overhead_ns;
  ds_compute_charge_model(c, DS_KM_EMBED_FEATURE, chain > bytes_ns);
  return chain > bytes_ns ? chain - bytes_ns : 0;
}

static struct pass_time fwd_time(const struct ds_compute *c, const struct ds_layer *l,
                                 int64_t batch) {
  /* b scales the per-sample counts; per the layer's bytes: b, or 1 where
   * the file gives them per step (model.h bytes_per_step: an embedding of
   * ids the batch shares) */
  double b = (double)batch, per = ds_layer_bytes_batch(l, batch);
  double casts = autocast_casts_ns(c, l, 0, per);
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
  double weights = l->embed_dim > 0 ? embedding_fwd_bytes(l, b, per_param)
                                     : (double)l->param_numel * per_param;
  if (ds_layer_attn_parts(l)) {
    struct pass_time t = attn_core_time(c, l, DS_ATTN_FWD, batch, weights);
    return (struct pass_time){t.total_ns + casts + weight_casts +
                                  ds_cat_copy_extra_ns(c, l, DS_ATTN_FWD, batch),
                              t.sm_bound_ns};
  }
  /* the kernels off PyTorch's vectorised path at their own rate (legacy_ew.h) */
  double act = ds__compute_fwd_act_bytes(c, l) * per;
  double legacy = off_path_ns(c, l, DS_LEGACY_FWD, batch, &act);
  /* no other kernel where those kernels are all the forward runs */
  int rest = legacy == 0 || act > 0 || weights > 0 || l->fwd_flops > 0;
  int flop_bound = 0;
  double kernel =
      rest ? ds__compute_layer_kernel_ns(c, l, 0, batch, l->fwd_flops * b, act + weights,
                                         &flop_bound)
           : 0;
  double own = kernel + legacy;
  double sm = flop_bound ? kernel : 0;
  if (ds__compute_grouped_conv_priced(c, l)) {
    double measured = ds__compute_grouped_pass_ns(c, l, DS_CONV_FWD, batch);
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
  double b = (double)batch, per = ds_layer_bytes_batch(l, batch); /* as fwd_time */
  /* the casts' backward (none for an input that needs no gradient: the
   * model's, cast by the first layer), and the engine's casts of promoted
   * inputs' gradients */
  double casts = autocast_casts_ns(c, l, 1, per);
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
  /* an embedding (a memory layer, its table never cast: 2 x param_bytes
   * above) by its rows, and the kernels past the layer's one */
  struct embed_bwd embed = {0, 1, 0};
  if (l->embed_dim > 0) embed = embedding_bwd(l, b, per_param / 2.0);
  double weights = l->embed_dim > 0 ? embed.bytes : (double)l->param_numel * per_param;
  if (ds_layer_attn_parts(l)) {
    struct pass_time t = attn_core_time(c, l, DS_ATTN_BWD, batch, weights);
    return (struct pass_time){t.total_ns + casts + ds_compute_bwd_extra_ns(c, l, batch),
                              t.sm_bound_ns};
  }
  double act = ds__compute_bwd_act_bytes(c, l) * per;
  double legacy = off_path_ns(c, l, DS_LEGACY_BWD, batch, &act);
  double bytes = act + weights;
  /* a backward that runs no op (the residual add's: it hands the gradient
   * on) launches no kernel */
  int flop_bound = 0;
  double kernel = bytes > 0 || l->bwd_flops > 0
                      ? ds__compute_layer_kernel_ns(c, l, 1, batch, l->bwd_flops * b, bytes,
                                                    &flop_bound)
                      : 0;
  kernel += (embed.kernels - 1) * c->params.kernel_overhead_ns +
            embed_feature_extra_ns(c, l, b, &embed, act);
  double own = kernel + legacy;
  double sm = flop_bound ? kernel : 0;
  if (ds__compute_grouped_conv_priced(c, l)) {
    /* the weight gradient, and the input gradient unless the layer takes
     * the model's input (its backward FLOPs are then the forward's) */
    double measured = ds__compute_grouped_pass_ns(c, l, DS_CONV_WGRAD, batch);
    if (ds_layer_input_grad(l))
      measured += ds__compute_grouped_pass_ns(c, l, DS_CONV_DGRAD, batch);
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
