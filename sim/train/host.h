/*
 * The host's time per layer: the process's Python thread in forward, the
 * autograd engine's thread in backward (docs/strategies.md, "The host
 * costs"). A model file with host counts (model.h: top-level ops, autograd
 * nodes, autocast's casts and their nodes, per layer) is charged per unit
 * of that work (host_dispatch per aten op dispatched that launches a kernel,
 * or host_op per top-level op where the file lacks host_dispatches;
 * host_cast, host_node);
 * one without counts keeps the old
 * rule, one cost per layer whatever it runs (host_launch, host_backward).
 */
#ifndef DS_SIM_TRAIN_HOST_H
#define DS_SIM_TRAIN_HOST_H

#include <stdint.h>

#include "base/status.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "traces/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Host time of layer l's forward before its kernels run, ns:
 * (host_dispatches - host_views) x host_dispatch (the dispatches that
 * launch a kernel; a file without host_views: all of them; for files
 * without host_dispatches, host_ops x host_op), plus under --amp host_amp_casts x host_cast, less
 * the syncs' part (ds_host_sync_ns); per_layer_ns (the caller's
 * host_launch) when the model has no counts. */
double ds_host_fwd_ns(const struct ds_compute *c, const struct ds_model *m, int32_t l,
                      double per_layer_ns);

/* Whether layer l's forward makes the host wait for the GPU (the model
 * file's host_syncs: `.item()`, `bool(tensor)`, a copy to the host; a file
 * without the key has none). Each such op returns once every kernel queued
 * before it has run, the layer's own included: the value it reads is what
 * they make (BERT's mask check: `padding_mask.all()` then its bool). So the
 * strategies emit, after the layer's kernels, a host op named "sync" that
 * waits for the rank's compute stream, of ds_host_sync_ns; the host's next
 * launch follows it, and the GPU idles until the host is ahead again. */
int ds_host_syncs(const struct ds_model *m, int32_t l);

/* Host time of layer l's syncs, ns: host_syncs x host_dispatch (they are
 * some of its dispatches, charged after the wait rather than before). */
double ds_host_sync_ns(const struct ds_compute *c, const struct ds_model *m, int32_t l);

/* Host time of layer l's backward on the autograd thread, ns: (host_nodes -
 * host_view_nodes) x host_node (a file without host_view_nodes: every
 * node); under --amp (host_nodes - host_view_nodes_amp + host_amp_nodes) x
 * host_node (the nodes that launch nothing under autocast, host_view_nodes
 * where the file lacks the key; the casts' ToCopyBackward0 nodes);
 * per_layer_ns (host_backward) without counts. */
double ds_host_bwd_ns(const struct ds_compute *c, const struct ds_model *m, int32_t l,
                      double per_layer_ns);

/* The foreach optimizer step's host time, ns: host_step_call plus the
 * model's parameter tensors times host_step_param (SGD) or
 * host_step_param_adam (Adam) (sim/net/topo_compute.c: measured on the lent
 * H200s' hosts); 0 under --optimizer-loop, whose launches are charged
 * instead (ds_compute_step_host_ops). */
double ds_host_foreach_step_ns(const struct ds_compute *c, const struct ds_model *m);

/* The same over `tensors` parameter tensors (a parameter server's shard,
 * sim/train/ps_schedule.c); 0 for none. */
double ds_host_foreach_step_tensors_ns(const struct ds_compute *c, enum ds_optimizer opt,
                                       int32_t tensors);

/* The optimizer step's host ops on rank's host stream, shared by the
 * strategies whose ranks step (ddp, dp; the parameter server's updates have
 * no host): under the Python loop of PyTorch 1.4 and 1.9 (compute.h) the
 * Python thread dispatches each of the step's kernels, and under 1.9
 * zero_grad's fills (ds_compute_step_host_ops, each
 * ds_compute_step_host_op_ns), as two ops named "optimizer" of kind step:
 * the first launch, which the step's kernel waits for, then the rest, which
 * the host dispatches while the GPU runs them (nothing waits for it). The
 * caller emits both before the step's op, so that it stays the rank's last
 * step op (what the next iteration waits for).
 *
 * Under --amp fp16 GradScaler.step (torch/cuda/amp/grad_scaler.py; now
 * torch/amp/grad_scaler.py GradScaler.step) runs unscale_ first, then
 * _maybe_opt_step reads found_inf.item(), a host-device sync, before it
 * calls optimizer.step(). So first, ops of kind step named "unscale_": its
 * Python ops on the host (ds_compute_unscale_host_ops, 0 us for the
 * foreach step: its own loop over the gradients is not measured) and its
 * kernels on the compute stream (ds_compute_unscale_ns), after gpu_deps
 * (the rank's last GPU work of backward: its compute tail, all-reduces and
 * copies back) and that host op; then "found_inf.item" (one host op,
 * ds_compute_step_host_op_ns) waiting for those kernels, and the step's
 * host work after it, under --loop sync as under free: the step's Python
 * cannot start before the GPU has finished backward and unscale_, so it
 * runs serially after them, and the step's kernels start after it (and
 * after unscale_'s on the compute stream). bf16 autocast runs no
 * GradScaler: no unscale_, no sync. *first gets the op the step's kernels
 * wait for: the first launch, else the foreach step's op, else (fp16 with
 * no step host work) found_inf.item; -1 when there is none.
 *
 * The foreach step (PyTorch's default) is one such op instead of the
 * loop's two: ds_host_foreach_step_ns, on the host stream after
 * backward's host work (and under fp16 after found_inf.item), its id in
 * *first, so that the step's kernels wait for it: its foreach calls launch
 * them after _init_group's Python loop.
 *
 * Under --optimizer bertadam (compute.h) run_squad.py's GradientClipper
 * comes first: "clip.l2norm" on the host (its launches) and on the GPU
 * after gpu_deps, "total_norm.item" (one host op) waiting for those
 * kernels, then "clip.scale" on the host and the GPU; then the loop's two
 * "optimizer" host ops, which therefore start on a drained GPU.
 *
 * Under --optimizer apex-o2-fusedadam amp's unscale comes before the
 * clipper: "amp.unscale" on the host (the overflow flag's zero_ and the
 * unscale's launches) and on the GPU after gpu_deps, "overflow.item" (one
 * host op) waiting for those kernels; then the clipper as above, on the
 * fp32 master gradients; then two "optimizer" host ops, the first launch
 * and the rest (FusedAdam's and the copy back's launches, amp's zero_grad
 * fills: ds_compute_step_host_ops), after both syncs.
 *
 * Under --optimizer none (m->optimizer DS_OPT_NONE) no unscale_, no
 * found_inf.item() and no foreach op: only 1.9's zero_grad launches, the
 * loop's two ops named "zero_grad" (the first one, which the fills wait
 * for, in *first); nothing at all under current PyTorch or 1.4. */
ds_status ds_host_emit_step(struct ds_schedule_builder *bd, const struct ds_compute *c,
                            const struct ds_model *m, int32_t rank, const int64_t *gpu_deps,
                            size_t n_gpu_deps, int64_t *first);

/* Under --optimizer none and --loop sync: the training loop's wait for
 * the GPU where no step op is left for the next iteration to wait for
 * (a benchmark's torch.cuda.synchronize() or loss.item() after
 * backward): one host op of kind step named "synchronize", 0 us, after
 * gpu_deps (the rank's last GPU work: backward's tail, the all-reduces,
 * 1.9's zero_grad fills); the rank's last step op, so
 * ds_host_loop_anchors finds it. */
ds_status ds_host_emit_loop_sync(struct ds_schedule_builder *bd, int32_t rank,
                                 const int64_t *gpu_deps, size_t n_gpu_deps);

/* Where each of the first n_ranks ranks' next iteration starts, from the
 * previous one already in s (-1 where a rank has none, as in a schedule of
 * its own): under the default loop (sync: the loss read every iteration)
 * its last step op, the GPU's step; under --loop free (free_loop) its last
 * host op, the step's host work: the host runs ahead of the GPU. */
void ds_host_loop_anchors(const struct ds_schedule *s, int free_loop, int32_t n_ranks,
                          int64_t *ids);

#ifdef __cplusplus
}
#endif

#endif
