/*
 * Model descriptions: layers in forward order, each with its parameter
 * tensors (registration order), FLOPs per sample forward and backward,
 * forward memory traffic and saved activation bytes per sample (fp32).
 */
#ifndef DS_MODEL_H
#define DS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* The most bwd_row_reductions one layer may list. */
#define DS_ROW_REDUCTIONS_MAX 8

#ifdef __cplusplus
extern "C" {
#endif

/* The training loop's optimizer: the model file's `optimizer` (sgd or
 * adam), or ddpsim's --optimizer, which may also say none: a loop that
 * runs forward and backward without optimizer.step() (a benchmark's
 * "train time"), so no step kernels, no step host work, no state and,
 * under --amp fp16, no GradScaler.step (docs/strategies.md, "The
 * optimizer step"); or bertadam: NVIDIA DeepLearningExamples' BERT
 * run_squad.py fp32 step, its GradientClipper then BertAdam's per-tensor
 * Python loop (compute.h ds_compute_step_ns); or apex-o2-fusedadam
 * (DS_OPT_APEX_O2): the same script's --fp16 step, apex amp O2's unscale
 * into fp32 master gradients, the GradientClipper on them, apex FusedAdam
 * on the fp32 master weights, the copy back to the fp16 model and amp's
 * zero_grad (compute.h). A model file cannot say none, bertadam or
 * apex-o2-fusedadam. */
enum ds_optimizer { DS_OPT_SGD, DS_OPT_ADAM, DS_OPT_NONE, DS_OPT_BERTADAM, DS_OPT_APEX_O2 };

/* A layer's kind of work, from the optional per-layer key `class`
 * (tools/export_model.py writes it for every layer); DS_LAYER_UNKNOWN when
 * the file gives none. The compute model picks each class's math and
 * efficiency (compute.h). */
enum ds_layer_class {
  DS_LAYER_UNKNOWN,
  DS_LAYER_CONV,
  DS_LAYER_MATMUL,
  DS_LAYER_ATTENTION,
  DS_LAYER_MEMORY
};

/* gemm_align of a layer whose GEMMs load 16-byte vectors of a 2-byte type. */
enum { DS_GEMM_ALIGNED = 8 };

struct ds_param {
  char *name;     /* owned by the model */
  int64_t numel;
  int32_t layer;  /* index of the owning layer */
  /* From the optional `shape` key: the number of dimensions (0 when the
   * file gives no shape) and the first one. PowerSGD views a tensor as a
   * rows x (numel / rows) matrix, as PyTorch's tensor.view(shape[0], -1). */
  int32_t ndim;
  int64_t rows;
  int64_t dim1; /* the second dimension (a convolution's input channels per group); 0 if none */
};

/* A 2-d max-pool's geometry (ds_layer.pool). */
struct ds_pool {
  int32_t kernel[2], stride[2], padding[2]; /* [h, w] */
  int64_t channels, height, width;          /* the input, per sample */
};

/* The largest per-sample count a layer key takes (FLOPs, bytes, elements):
 * a thousand times any real layer, which keeps FLOPs x batch / rate far
 * from the simulated clock's limit. */
#define DS_MODEL_COUNT_MAX INT64_C(1000000000000000)

/* The most elements a parameter or buffer tensor takes: 1e12, 4 TB in
 * fp32, about 28 times the largest GPU memory in topologies/gpus.yaml
 * (H200's 141 GB), and DDP keeps every parameter on every GPU, so no
 * model that runs is refused; without a bound, 1e18 kept the loader's
 * callers busy for days (the optimizer's launch count walked every
 * 64 Ki-element chunk until it became closed-form). */
#define DS_MODEL_NUMEL_MAX INT64_C(1000000000000)

/* The passes of a layer's elementwise kernels that model files split by
 * kernel path (ds_legacy_ew). */
enum ds_legacy_pass {
  DS_LEGACY_FWD,   /* the forward's ops (op_fwd_bytes) */
  DS_LEGACY_BWD,   /* the backward's own ops (bwd_bytes) */
  DS_LEGACY_ACCUM, /* autograd's additions (bwd_accum_bytes) */
  DS_LEGACY_COPY,  /* the backward's layout copies (bwd_copy_bytes) */
  DS_LEGACY_PASSES
};

/* Elementwise kernels that run PyTorch's non-vectorised elementwise_kernel
 * (tools/export_model.py, legacy_ew): an operand broadcast or not dense,
 * or operands in different layouts. Per sample, for one pass: the bytes
 * they move (fp32, part of the pass's bytes: fwd op_fwd_bytes, bwd
 * bwd_bytes, accum bwd_accum_bytes, copy bwd_copy_bytes) and their operand-elements (one element
 * of one tensor operand, the output included), strided and transposed
 * apart, and of the strided ones those whose op mixes dtypes under
 * autocast (a half tensor plus an fp32 one: PyTorch's dynamic-casting
 * kernel there, legacy_ew.h's cast kind). legacy_ew.h charges them per SM
 * cycle. */
struct ds_legacy_ew {
  double bytes;
  double strided_elems;
  double transposed_elems;
  double amp_cast_elems; /* <= strided_elems; used under --amp only */
};

/* One part of an unfused attention core's pass (ds_layer.attn_products,
 * attn_rest): its kernels (per iteration, whatever the batch) and, per
 * sample, the FLOPs (products only), the bytes read and written in real
 * dtypes and in autocast's. */
struct ds_attn_part {
  double kernels;
  double flops;
  double bytes;
  double amp_bytes;
};

/* The passes of ds_layer.attn_products and attn_rest. */
enum { DS_ATTN_FWD, DS_ATTN_BWD, DS_ATTN_PASSES };

/* Longest layer name the loader accepts, bytes: the schedule's op names
 * append a suffix (".num_batches_tracked", "shardK.") in buffers of
 * DS_OP_NAME_CAP, which then never cut one (a cut name could read as the
 * layer's own op). BERT's longest is 54. */
#define DS_LAYER_NAME_MAX 96
#define DS_OP_NAME_CAP (DS_LAYER_NAME_MAX + 32)

struct ds_layer {
  char *name;          /* owned by the model; at most DS_LAYER_NAME_MAX bytes */
  double fwd_flops;    /* per sample */
  double bwd_flops;    /* per sample */
  double fwd_bytes;    /* memory traffic per sample, fp32 */
  double act_bytes;    /* saved activations per sample, fp32 */
  /* Optional, per sample (tools/export_model.py): act_int_bytes, the part
   * of act_bytes in integer and bool tensors (max-pool indices, dropout
   * masks; 0 when absent), which a half --dtype leaves as they are, in
   * the saved activations (memory.c) and in the passes' bytes (compute_layer.c:
   * written or read once by the forward, read once by the backward); and
   * amp_act_bytes, what autograd saves under CUDA autocast (each save in
   * the dtype autocast gives it: a half op's inputs half, an fp32 op's
   * fp32, a cast and its source apart), -1 when absent: --amp then halves
   * act_bytes. */
  double act_int_bytes;
  double amp_act_bytes;
  /* Optional op_fwd_bytes (tools/export_model.py), per sample: the bytes
   * every op of the layer reads and writes in real dtypes, module calls
   * too (a composite module runs a kernel per op: GPT-2's GELU eight;
   * dropout writes its mask, max-pool its indices). -1 when absent: the
   * simulator then charges fwd_bytes, the module's inputs and outputs. */
  double op_fwd_bytes;
  /* Optional keys amp_fwd_bytes / amp_cast_bytes / amp_grad_cast_bytes
   * (tools/export_model.py), per sample: the bytes every op of the layer
   * reads and writes in the dtypes CUDA autocast gives them (its fp32 ops'
   * outputs fp32, its matmuls' and convolutions' half, other ops the widest
   * input type); the bytes of autocast's cast kernels on activations
   * (weights' casts excluded: compute.h adds them); and the casts autograd's
   * engine adds in backward where an op promoted a half input to fp32 (its
   * gradient cast to half). amp_fwd_bytes -1 when absent: --amp then
   * halves fwd_bytes. */
  double amp_fwd_bytes;
  double amp_cast_bytes;
  double amp_grad_cast_bytes;
  /* Optional amp_upcast_bytes (tools/export_model.py), per sample: the part
   * of amp_cast_bytes that casts half inputs to fp32 for autocast's fp32 ops
   * (CUDA's dynamic-casting copy: sim/train/cast_reduce.h); 0 when absent. */
  double amp_upcast_bytes;
  /* Optional gemm_align (tools/export_model.py): the largest power of two,
   * at most 8, of elements dividing every GEMM operand's leading dimension,
   * contiguous extent and offset in the layer; DS_GEMM_ALIGNED when absent.
   * Half-precision GEMMs below 8 elements (16 bytes) run cuBLAS's
   * narrow-load kernels (compute.h). */
  int32_t gemm_align;
  /* Optional groups and stride (tools/export_model.py), together, on a
   * grouped convolution (groups >= 2) only: its kernels are charged at the
   * measured times of sim/train/grouped_conv.h. 1 and 1 when absent. */
  int32_t conv_groups;
  int32_t conv_stride;
  /* A convolution's weight (its 4-d parameter, [out, in / groups, kh,
   * kw]): out channels, channels per group and kernel area; 0 for other
   * classes and for a dense convolution without a shaped 4-d weight. Set
   * for dense ones too: compute.h's conv_tiles need the GEMM's shape. */
  int64_t conv_out_channels;
  int64_t conv_group_width;
  int64_t conv_kernel_area;
  /* Optional bwd_reduce_bytes / bwd_copy_bytes, per sample, fp32: the bytes
   * read and written by the reductions (bias gradients: the sum of the
   * output gradient over the tokens) and the layout copies (clone, cat,
   * copy_ of non-contiguous gradients) the layer's backward runs as kernels
   * of their own; 0 when absent. */
  double bwd_reduce_bytes;
  double bwd_copy_bytes;
  /* Optional bwd_row_reductions (tools/export_model.py): [rows per sample,
   * outputs] of each of those reductions that sums a dense tensor's leading
   * dimensions (a bias gradient), one reduce_kernel each, priced by
   * sim/train/cast_reduce.h; n_row_reductions 0 when absent (their bytes
   * then stay at the roofline). Their bytes stay in bwd_reduce_bytes. An
   * optional third number, [2] here: the bytes per element the reduction
   * reads under autocast where its input is not half (4: the fp32 gradient
   * of an add of fp32 embeddings); 0 when absent (half). */
  int32_t n_row_reductions;
  double row_reductions[DS_ROW_REDUCTIONS_MAX][3];
  /* Optional bwd_bytes / amp_bwd_bytes (tools/export_model.py), per sample,
   * on memory-class layers: the bytes the ops the layer's autograd nodes run
   * in backward read and write, in real dtypes / in autocast's (ReLU's
   * threshold_backward: 3 passes; the residual add's backward: 0, it hands
   * the gradient on). -1 when absent: the simulator then charges twice the
   * forward traffic (compute.h). bwd_accum_bytes / amp_bwd_accum_bytes
   * (optional, any layer, 0 when absent): autograd's additions where the
   * gradients of a tensor the layer made meet (read two, write one), one
   * kernel each. */
  double bwd_bytes;
  double amp_bwd_bytes;
  double bwd_accum_bytes;
  double amp_bwd_accum_bytes;
  /* Optional keys host_ops / host_nodes / host_amp_casts / host_amp_nodes
   * (tools/export_model.py), per iteration whatever the batch, every layer
   * or none (ds_model.host_counts): top-level ATen ops the layer's forward
   * dispatches from Python; autograd nodes its backward runs (AccumulateGrad
   * of its parameters included); under autocast, the casts autocast
   * dispatches and the ToCopyBackward0 nodes they add. The host's time is
   * these counts times the topology's per-op costs (sim/train/host.h). */
  double host_ops;
  /* Optional host_dispatches (with the keys above, every layer or none:
   * ds_model.host_dispatch_counts): the aten ops those top-level ops
   * dispatch, nested ones included (tools/model_export/host.py
   * host_count_dispatches). The forward is then charged per dispatch
   * (host_dispatch), not per top-level op (sim/train/host.h). */
  double host_dispatches;
  /* Optional host_syncs (only with host_dispatches, at most that many; a
   * layer without the key, as in every file exported before it: 0): the
   * aten ops among those dispatches that make the host wait for the GPU
   * (tools/export_model.py: `.item()`, `bool(tensor)`, nonzero, copies to
   * the host; Hugging Face's mask check `padding_mask.all()` in BERT). The
   * strategies emit them as a host op after the layer's kernels, waiting
   * for them (sim/train/host.h). */
  double host_syncs;
  /* Optional host_views (only with host_dispatches, every layer or none:
   * ds_model.host_view_counts; at most host_dispatches - host_syncs): the
   * part of those dispatches that launches no kernel on CUDA (views and
   * aliases, _unsafe_view, empty tensors: tools/model_export/host.py
   * NO_KERNEL). The host charges the forward per kernel-launching dispatch,
   * host_dispatches - host_syncs - host_views, and nothing for these
   * (sim/train/host.h; the measurement: sim/net/topo_compute.c). */
  double host_views;
  double host_nodes;
  /* Optional host_view_nodes (with the host counts, every layer or none:
   * ds_model.host_view_node_counts; at most host_nodes): the part of
   * host_nodes that launches nothing (a view's backward such as
   * ViewBackward0 or TBackward0, clone's, add's without broadcasting:
   * tools/model_export/host.py classifies a node by the aten ops it
   * dispatches); the backward is charged per other node (sim/train/host.h). */
  double host_view_nodes;
  /* Optional host_view_nodes_amp (only with host_view_nodes, every layer or
   * none: ds_model.host_view_node_amp_counts; at most host_nodes): the part
   * of host_nodes that launches nothing under CUDA autocast, which --amp
   * charges in place of host_view_nodes. Fewer where a node joins a half and
   * an fp32 input: autograd casts the half one's gradient inside the node
   * (BERT's residual adds; tools/model_export/autocast.py). */
  double host_view_nodes_amp;
  double host_amp_casts;
  double host_amp_nodes;
  int32_t param_first; /* params[param_first .. +param_count) */
  int32_t param_count;
  int64_t param_numel; /* sum of its tensors' elements */
  /* Optional tied_params (a list of parameter names listed under an
   * earlier layer's params): the tied weights this layer uses, which the
   * file lists once, in the first layer using them (GPT-2's lm_head uses
   * transformer.wte.weight). tied_cast_numel: the elements of those whose
   * half copy autocast makes here, so that memory counts it (memory.h):
   * tied weights whose owning layer autocast does not cast (an
   * embedding's), in the first layer that casts them (autocast's cache
   * holds one copy per weight), when this layer casts weights; else 0.
   * tied_cast_count: how many tensors those are (one cast kernel each in
   * the forward, one upcast in the backward: compute.h). */
  int64_t tied_cast_numel;
  int32_t tied_cast_count;
  enum ds_layer_class cls;
  /* A BatchNorm layer's channels: the numel of the buffer NAME.running_mean
   * where NAME is the name of a memory-class (or class-less) layer (the
   * exporter names a module's layer by the module, its buffers
   * NAME.running_mean, NAME.running_var); 0 for every other layer. compute.h costs batch norm's kernels from it. */
  int64_t bn_channels;
  /* Set on a memory-class (or class-less) layer NAME whose file lists the
   * buffer NAME.num_batches_tracked (PyTorch registers it, with the running
   * statistics, under track_running_stats): its forward in training first
   * runs num_batches_tracked.add_(1), one kernel of its own (norm.h
   * ds_batch_norm_counter_ns, which charges it on a BatchNorm only, with
   * bn_channels). 0 for every other layer. */
  int bn_tracks_batches;
  /* Optional pool_kernel, pool_stride, pool_padding ([h, w] each) and
   * pool_input ([C, H, W], per sample), all or none, on a memory-class layer
   * (tools/export_model.py writes them on a 2-d max-pool of dilation 1 in
   * floor mode): the window its CUDA kernels loop over. compute.h costs
   * max-pool's kernels from it. pool.kernel[0] is 0 when absent. */
  struct ds_pool pool;
  /* Optional layer_norm [rows per sample, N] on a memory-class layer whose
   * one op is a layer norm (tools/export_model.py): the rows it normalises
   * and each row's elements. compute.h costs PyTorch's layer-norm kernels
   * from them. Both 0 when absent. */
  int64_t ln_rows, ln_cols;
  /* Optional embedding [lookups per sample, D] or [lookups per sample, D,
   * lookups per step] on a memory-class layer whose one op is
   * aten::embedding (tools/export_model.py), its one parameter the table
   * of rows of D elements. A step looks up embed_lookups x batch +
   * embed_step_lookups rows: the third number counts ids shared by the
   * whole batch (Hugging Face's position ids, shaped [1, seq]), which do
   * not grow with it. The forward is weight.index_select(0, indices)
   * (aten/src/ATen/native/Embedding.cpp embedding), which reads the rows
   * it looks up, not the table; the backward is
   * embedding_dense_backward_cuda (cuda/Embedding.cu), a zero-filled table
   * and one kernel up to 3072 ids, a sort and segment kernels above.
   * compute_layer.c charges both paths. All 0 when absent: the table read
   * in forward and twice in backward, as any layer's weights. */
  int64_t embed_lookups, embed_step_lookups, embed_dim;
  /* Optional bytes_per: step (tools/export_model.py), on a layer with
   * embedding [0, D, lookups per step] only: its byte counts (fwd_bytes,
   * op_fwd_bytes, act_bytes, act_int_bytes, amp_act_bytes, the amp_*
   * bytes, bwd_bytes, amp_bwd_bytes, bwd_accum_bytes,
   * amp_bwd_accum_bytes) are per step, not per sample: every tensor of
   * its forward and backward is one the batch shares (the [1, seq] ids,
   * the [1, seq, D] rows it writes, their [1, seq, D] gradient, which the
   * broadcast add's backward has already summed over the batch), so none
   * grows with it. Only the broadcast add that follows, a layer of its
   * own, does. Its FLOPs are 0 and it has none of the keys priced per
   * sample elsewhere (legacy_ew, amp_cast_ew, cat_copy, bwd_reduce_bytes,
   * bwd_copy_bytes, bwd_row_reductions, layer_norm, pool_*: the loader
   * refuses them). 0 when absent or bytes_per: sample, as in every file
   * exported before it: per sample. ds_layer_bytes_batch gives the
   * factor. */
  int bytes_per_step;
  /* Optional attn_products with attn_rest (tools/export_model.py), on an
   * attention-class layer whose forward runs GEMMs (an unfused core: QK^T,
   * scale, mask, softmax, dropout, PV), per pass: its batched products
   * (the GEMMs: forward two, backward two per product) and its other
   * kernels on PyTorch's vectorised path (legacy_ew's kernels and the
   * backward's reductions and copies excluded: their own keys). compute.h
   * prices each part at its own rate and adds them. kernels 0 in
   * attn_products[DS_ATTN_FWD] when absent: the core is then one kernel,
   * max(FLOPs, bytes), as before. */
  struct ds_attn_part attn_products[DS_ATTN_PASSES];
  struct ds_attn_part attn_rest[DS_ATTN_PASSES];
  /* Optional legacy_ew / nhwc_legacy_ew: the non-vectorised elementwise
   * kernels per pass, as the model runs in NCHW ([0]) and in channels-last
   * ([1], --channels-last); zero when absent. */
  struct ds_legacy_ew legacy[2][DS_LEGACY_PASSES];
  /* Optional amp_cast_ew: per sample, the autocast bytes (part of
   * amp_fwd_bytes) and operand-elements of the forward's contiguous
   * elementwise ops whose operands differ in dtype under autocast (GPT-2's
   * residual adds of a half and an fp32 tensor): PyTorch's
   * unrolled_elementwise_kernel with cast loads, legacy_ew.h. 0 when absent;
   * used under --amp only. */
  double amp_cast_ew_bytes, amp_cast_ew_elems;
  /* Optional cat_copy: per pass (DS_ATTN_FWD, DS_ATTN_BWD), per sample, the
   * bytes (fp32, in the pass's other counters too) and index divisions of
   * the cats CUDA runs as its generic CatArrayBatchedCopy (cat_copy.h). */
  struct {
    double bytes;
    double divisions;
  } cat_copy[DS_ATTN_PASSES];
};

/* A module buffer (BatchNorm's running statistics, position ids): what
 * DDP's broadcast_buffers sends each forward. */
struct ds_buffer {
  int64_t numel;
  double bytes;   /* in its own dtype */
  char dtype[24]; /* PyTorch's name ("float32", "int64"): broadcast_coalesced
                   * buckets tensors of one dtype together */
};

struct ds_model {
  char *name;
  char *path;
  char *sample;
  int64_t default_batch;
  enum ds_optimizer optimizer;
  struct ds_layer *layers;
  int32_t n_layers;
  struct ds_param *params; /* registration order */
  int32_t n_params;
  /* Parameter indices in the order their gradients become ready in
   * backward (key grad_ready, parameter names, as measured by
   * tools/export_model.py), or NULL: reverse registration order. DDP's
   * rebuilt buckets follow it (ddp.h). Owned. n_grad_ready: n_params
   * when present, else 0. */
  int32_t *grad_ready;
  int32_t n_grad_ready;
  /* PyTorch's registration order (model.parameters()) where the file's
   * order, the layers' forward order, is not it (key registration,
   * parameter names; BERT's embeddings): parameter indices in that order,
   * and each parameter's position in it. NULL: the file's order is it.
   * Owned; read through ds_model_registered / ds_model_registration_index. */
  int32_t *registration;
  int32_t *registration_index;
  int64_t total_numel;
  /* Per sample, for DataParallel's scatter and gather (docs/strategies.md):
   * input_bytes as fed to the model (key input_bytes; default the first
   * layer's fwd_bytes - act_bytes, i.e. 4x its input elements), not scaled
   * by the dtype; output_bytes in fp32 (key output_bytes; default the last
   * layer's act_bytes, its output). */
  double input_bytes;
  double output_bytes;
  /* The output's last dimension (key output_classes: the row the loss's
   * softmax runs over, compute.h); 0 when the file gives none. */
  double output_classes;
  /* Bytes per sample (fp32) of the loss's own layout copies, forward and
   * backward (key loss_copy_bytes, tools/export_model.py; 0 when absent): a
   * language model's shifted logits, logits[:, :-1] reshaped to rows (a
   * clone) and its backward (slice_backward: zero fill, then the copy). */
  double loss_copy_bytes;
  /* Of those, the copies on PyTorch's non-vectorised elementwise_kernel (key
   * loss_legacy_ew, [bytes, strided, transposed operand-elements] per sample,
   * fp32 bytes; zeros when absent): the clone of the logits' slice, which is
   * not one dense block, and slice_backward's copy into it (legacy_ew.h). */
  struct ds_legacy_ew loss_legacy;
  /* Bytes per sample autograd saves for the loss's backward outside every
   * layer, in real dtypes (key loss_act_bytes, tools/export_model.py; 0
   * when absent): a classifier's log_softmax output, which a language
   * model's vocabulary makes large (GPT-2: 205.7 MB per sample). */
  double loss_act_bytes;
  /* model.named_buffers() in order (key buffers, optional: none). Owned. */
  struct ds_buffer *buffers;
  int32_t n_buffers;
  /* 1 when every layer has the host counts (host_ops ...), 0 when none
   * has: the host is then charged per layer (host_launch, host_backward;
   * sim/train/host.h). */
  int host_counts;
  /* 1 when every layer has host_dispatches, 0 when none has. */
  int host_dispatch_counts;
  /* 1 when every layer has host_views, 0 when none has. */
  int host_view_counts;
  /* 1 when every layer has host_view_nodes, 0 when none has. */
  int host_view_node_counts;
  /* 1 when every layer has host_view_nodes_amp, 0 when none has. */
  int host_view_node_amp_counts;
};

ds_status ds_model_load(const char *path, struct ds_model **out,
                        struct ds_err *err);

/* The readers of a model file's byte counts (model.c, model_ops.c,
 * model_names.c, legacy_ew.c, cast_reduce.c, cat_copy.c) say what one is.
 * ds_model_bytes_hint: st as it is; when st is DS_EINPUT (a bad value read
 * for a byte count), err's message gains ": integer bytes per sample,
 * without a unit (12582912, not 12MiB; docs/models.md)", "per sample" left
 * out where per_sample is 0 (a buffer's whole size). A model file's sizes
 * are plain integers, never "12MiB" as a topology's are. */
struct ds_cnode;
ds_status ds_model_bytes_hint(ds_status st, int per_sample, struct ds_err *err);
/* ds_cnode_int_list(node, what, n, 0, DS_MODEL_COUNT_MAX, out, err) for a
 * list whose elements at the bits of bytes_at (1 << i: element i) are
 * byte counts per sample: a bad one's message carries ds_model_bytes_hint. */
ds_status ds_model_read_counts(const struct ds_cnode *node, const char *what, size_t n,
                               uint32_t bytes_at, int64_t *out, struct ds_err *err);

/* The parameter at position i of the registration order. */
int32_t ds_model_registered(const struct ds_model *m, int32_t i);
/* Parameter p's position in the registration order (what PyTorch's bucket
 * indices count). */
int32_t ds_model_registration_index(const struct ds_model *m, int32_t p);
void ds_model_free(struct ds_model *model);

/* Optimizer state tensors per parameter: 1 for SGD with momentum, 2 for
 * Adam and BertAdam (next_m, next_v), 3 for apex-o2-fusedadam (the fp32
 * master weight, exp_avg, exp_avg_sq: fp32 whatever the model's dtype,
 * which memory.c prices itself), 0 for none. */
int ds_optimizer_states(enum ds_optimizer opt);
/* "sgd", "adam", "none", "bertadam" or "apex-o2-fusedadam". */
const char *ds_optimizer_name(enum ds_optimizer opt);
/* "conv", "matmul", "attention", "memory" or "unknown". */
const char *ds_layer_class_name(enum ds_layer_class cls);

/* The bytes layer l's forward ops read and write per sample, fp32: its
 * op_fwd_bytes, else (a file without them) the module's inputs and outputs,
 * fwd_bytes. */
double ds_layer_op_fwd_bytes(const struct ds_layer *l);

/* What layer l's per-sample bytes scale by at `batch`: 1 where its file
 * gives them per step (bytes_per_step), else batch. */
double ds_layer_bytes_batch(const struct ds_layer *l, int64_t batch);

/* 1 when layer l carries attn_products and attn_rest (an unfused attention
 * core, priced by its parts: compute.h); 0 else. */
int ds_layer_attn_parts(const struct ds_layer *l);

/* 0 when layer l's backward computes no gradient of its input: a
 * convolution or matmul taking the model's input, whose backward FLOPs the
 * exporter counts as the weight gradient's alone (its forward's); 1 else. */
int ds_layer_input_grad(const struct ds_layer *l);

/* 1 when CUDA autocast casts layer l's weights to half (its ops are on
 * autocast's lower-precision list: convolutions, matmuls, attention's
 * products; aten/src/ATen/autocast_mode.cpp), and for a layer without a
 * class (the rule before classes); 0 for a memory layer, whose weights (an
 * embedding's, a normalisation's) stay fp32. The forward's weight bytes,
 * the backward's, and the half copies peak memory keeps all follow it. */
int ds_layer_autocast_casts_weights(const struct ds_layer *l);

#ifdef __cplusplus
}
#endif

#endif /* DS_MODEL_H */
