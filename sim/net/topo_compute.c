/*
 * The `compute` section of a topology file: the GPU's efficiencies, the
 * per-kernel overhead and the host's CPU costs, each with its default and
 * where that default comes from, and the measured hosts' range around the
 * host costs (ds_topo_host_factor_fastest / _slowest, --host-scale).
 */
#include <stddef.h>
#include <string.h>

#include "base/config.h"
#include "sim/net/gpu_table.h"
#include "sim/net/topo_build.h"

static const char *const compute_keys[] = {
    "flops_efficiency", "mem_efficiency", "kernel_overhead",
    "comm_interference", "fp32_math", "host_launch", "host_replicate",
    "host_backward", "host_grad_hook", "host_grad_copy", "host_collective",
    "host_buffer", "host_ddp_iter", "host_op", "host_dispatch", "host_cast", "host_node",
    "host_step_call", "host_step_param", "host_step_param_adam",
    "conv_efficiency", "matmul_efficiency", "attention_efficiency", NULL};

/* An optional efficiency key of the compute section: *inout keeps its
 * default when the key is absent (ds_gpu_peak_fraction's range). */
static ds_status read_efficiency(const struct ds_cnode *map, const char *key, double *inout,
                                 struct ds_err *err) {
  struct ds_cnode node;
  if (!ds_cmap_get(map, key, &node)) return DS_OK;
  return ds_gpu_peak_fraction(&node, inout, err);
}

/* An optional time key of the compute section, e.g. "4us": *inout keeps its
 * default when the key is absent. */
static ds_status read_time(const struct ds_cnode *map, const char *key, double *inout,
                           struct ds_err *err) {
  struct ds_cnode node;
  if (!ds_cmap_get(map, key, &node)) return DS_OK;
  return ds_cnode_time_ns(&node, inout, err);
}

/* The measured hosts' range around the pooled host_dispatch and host_node
 * (read_compute below): per host (a folder of host_calibrate runs), the
 * mean of its dispatch and node figures over the pool's, as
 * `python3 bench/host_pool.py` over the twelve CSVs named there prints them:
 *   2026-11-26d call2  28.55 / 37.48 = 0.7617, 30.13 / 32.76 = 0.9194: 0.841
 *   2026-11-27         35.23 / 37.48 = 0.9402, 33.04 / 32.76 = 1.0085: 0.974
 *   2026-11-27c        47.63 / 37.48 = 1.2711, 35.09 / 32.76 = 1.0710: 1.171
 *   2026-11-27d        30.32 / 37.48 = 0.8091, 32.63 / 32.76 = 0.9958: 0.902
 *   2026-11-27e        39.16 / 37.48 = 1.0450, 32.16 / 32.76 = 0.9816: 1.013
 * (dispatch: per kernel-launching dispatch, node: per node that launches a
 * kernel, host_dispatch and host_node below; per dispatch and node, views
 * included, until 2026-11-28c: 0.752 to 1.236; per node that is not a
 * view's backward by name until 2026-11-28d: 0.836 to 1.183)
 * The fastest and the slowest of the five lends (27d and 27e may be one
 * machine lent twice, an hour apart: a lend is what a folder records). One
 * factor per host for every host_* cost (not one per cost): the other costs
 * were not measured per host, and a host's Python and dispatcher are slower
 * or faster as a whole (its dispatch and node ratios differ by at most
 * 0.20). A host also moves
 * within that range between processes (docs/strategies.md, "The host
 * costs"), so the range is where a run on a lent H200 lands, not a bound. */
const double ds_topo_host_factor_fastest = 0.841;
const double ds_topo_host_factor_slowest = 1.171;

/* DDP's per-gradient host cost, 25.2 us pooled over lends (below, in
 * ds_topo_default_compute), less the per-iteration cost it held spread
 * over 161 gradients (1.16 us: host_ddp_iter below), split into
 * copy_bucket_to_grad's launch, 5.8 us, and the AccumulateGrad hook, the
 * rest (docs/strategies.md "The host costs"). */
const double ds_topo_host_grad_hook_default_ns = 18200;
const double ds_topo_host_grad_copy_default_ns = 5800;

void ds_topo_scale_host(struct ds_compute_params *p, double factor) {
  double *const host[] = {&p->host_launch_ns, &p->host_replicate_ns, &p->host_backward_ns,
                          &p->host_op_ns, &p->host_dispatch_ns, &p->host_cast_ns,
                          &p->host_node_ns, &p->host_grad_hook_ns, &p->host_grad_copy_ns,
                          &p->host_collective_ns, &p->host_buffer_ns, &p->host_ddp_iter_ns,
                          &p->host_step_call_ns, &p->host_step_param_ns,
                          &p->host_step_param_adam_ns};
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) *host[i] *= factor;
}

ds_status ds__topo_read_compute(const struct ds_cnode *root,
                                struct ds_compute_params *c, struct ds_err *err) {
  struct ds_cnode map, node;
  /* Defaults: see docs/architecture.md ("Compute model"). flops_efficiency
   * 0.5, mem_efficiency's last resort 0.7 (topo.c) and kernel_overhead
   * 4 us are guesses, not fits: "typical, not yet calibrated" since the
   * first simulator commit (c3e1cfc2; docs/architecture.md of fad252b8).
   * 0.5 stands for the fraction of a GPU's dense peak a layer without a
   * measured class rate reaches; 4 us for a kernel's launch gap and fixed
   * time, which the H200 traces put at 2.5-4.1 us a tiny kernel
   * (docs/architecture.md, "What the 4 µs stands for": checked, kept). */
  c->flops_efficiency = 0.5;
  c->mem_efficiency = 0; /* resolved after the GPU table: ds_topo_load */
  c->flops_efficiency_source = c->mem_efficiency_source = DS_RATE_TYPICAL;
  c->kernel_overhead_ns = 4000;
  c->comm_interference = 0.0;
  c->fp32_uses_tf32 = 1;
  /* docs/strategies.md (the host costs table) says why these values:
   * host_launch 20 us is a guess inside the 5-25 us of CPU per op that
   * PyTorch's Python-to-kernel path costs; host_replicate 5 us a guess
   * below PyTorch issue #3930's 11 us per tensor and device (the
   * broadcast has since moved to C++, the module copy has not). The first
   * applies to model files without host counts, the second to
   * DataParallel's replicate(). host_backward 46 us is measured: the
   * profiled ResNet-50 backward's 63.6 us a layer times 0.728, the
   * profiler's inflation. */
  c->host_launch_ns = 20000;
  c->host_replicate_ns = 5000;
  c->host_backward_ns = 46000;
  /* Per op, cast and node: torch.profiler traces of two host-bound runs on
   * H200 (bench/results/gpu-2026-11-26-h200/prof), each scaled by its own
   * run's unprofiled iteration over the profiled one (the profiler's
   * inflation), pooled; `python3 bench/host_costs.py
   * prof/resnet50-fp32-b32.json.gz=18.048 prof/bert-base-amp-b32-p.json.gz=58.325`
   * (gpu_ms of torch.csv's and torch2.csv's rows) prints every term:
   *   ResNet-50 fp32 b32: s = 18048 / 28777 = 0.6272; forward 14245 us over
   *     234 top-level ops, backward 12709 us over 340 nodes;
   *   BERT-base AMP b32: s = 58325 / 84467 = 0.6905; forward 37599 us, of it
   *     7271 us in 212 autocast casts, over 360 ops; backward 35174 us over
   *     1137 nodes;
   *   per op (0.6272 x 14244 + 0.6905 x 30328) / 594 = 50.3 us; per cast
   *   0.6905 x 7271 / 212 (+ ResNet's one of 1 us) = 23.6 us; per node
   *   (0.6272 x 12709 + 0.6905 x 35174) / 1477 = 21.8 us (host_node is now
   *   measured directly: below).
   * So the H200 ResNet-50 fp32 batch 32 row of validation/training.csv is
   * fit (its run's 18.048 ms sets s); docs/strategies.md, "The host costs". */
  c->host_op_ns = 50300;
  /* Per aten op dispatched in forward that launches a kernel (model files
   * with host_dispatches: those less host_views, the views, aliases and
   * empty tensors, which are charged nothing; a file without host_views:
   * every dispatch), and per autograd node in backward that is not a view's
   * backward (host_nodes less host_view_nodes, likewise): measured on
   * five lent H200s' hosts with the GPU held behind a spin kernel per phase,
   * so the host never waits for it (bench/host_calibrate.py, default mode),
   * medians of 10 iterations over the model files' counts, batch 32 fp32,
   * every phase whose spin outlasted it, pooled as total ms over total units
   * (forward units: kernel-launching dispatches, ResNet-50 227 of 282,
   * ResNet-101 and ResNeXt-101 448 of 554, SE-ResNeXt-101 613 of 719;
   * backward units: nodes that launch a kernel (host_nodes less
   * host_view_nodes), ResNet-50 319 of 337, the 101-layer CNNs 625 of 660,
   * SE-ResNeXt-101 955 of 957, BERT-base 452 of 923):
   *   bench/results/gpu-2026-11-26d-h200/call2: forward ResNet-50 6.823 ms /
   *     227, ResNeXt-101 32x4d 12.445 / 448 (28.55 us on this host);
   *     backward ResNet-50 12.417 / 319, ResNeXt-101 15.200 / 625, BERT-base
   *     14.439 / 452 (30.13 us);
   *   bench/results/gpu-2026-11-27-h200: forward ResNet-50 7.508 / 227,
   *     ResNet-101 16.438 / 448, ResNeXt-101 15.542 / 448, SE-ResNeXt-101
   *     21.676 / 613 (35.23 us); backward ResNet-50 9.747 / 319, ResNet-101
   *     17.610 / 625, ResNeXt-101 24.490 / 625 (33.04 us);
   *   bench/results/gpu-2026-11-27c-h200 (unpinned): forward ResNet-101
   *     21.609 / 448 (host-resnet101.csv), SE-ResNeXt-101 28.931 / 613
   *     (host-se-pauses.csv, --pauses 8: the pauses' drains subtracted by
   *     host_calibrate itself) (47.63 us); backward ResNet-101 19.134 / 625,
   *     SE-ResNeXt-101 36.308 / 955 (--pauses 8) (35.09 us);
   *   bench/results/gpu-2026-11-27d-h200/hostcalib (unpinned, the run that
   *     also wrote host-resnet50.yaml with --calib-out): forward ResNet-50
   *     6.883 / 227 (30.32 us), backward 10.409 / 319 (32.63 us);
   *   bench/results/gpu-2026-11-27e-h200 (two fresh processes, an hour
   *     later): forward ResNet-50 9.149 and 8.630 / 227 (39.16 us), backward
   *     10.663 and 9.856 / 319 (32.16 us);
   *   pooled: forward 155.636 ms / 4153 = 37.48 us a kernel-launching
   *     dispatch, backward 180.273 ms / 5502 = 32.76 us a node that launches
   *     a kernel (31.42 us over 5738 nodes until 2026-11-28d, when a node
   *     was free by its name: a view's backward, select's, slice's and
   *     split's too; by what it runs since: tools/model_export/host.py).
   *     `python3 bench/host_pool.py`
   *     over the twelve CSVs named above (R=bench/results:
   *     $R/gpu-2026-11-26d-h200/call2/host-{resnet50,resnext101_32x4d,
   *     bert-base}.csv $R/gpu-2026-11-27-h200/host-{resnet50,resnet101,
   *     resnext101_32x4d,se_resnext101_32x4d}.csv
   *     $R/gpu-2026-11-27c-h200/host-{resnet101,se-pauses}.csv
   *     $R/gpu-2026-11-27d-h200/hostcalib/host-resnet50.csv
   *     $R/gpu-2026-11-27e-h200/host-resnet50-r{1,2}.csv) prints
   *     every term, each host's, the pool and each host's factor (above).
   * Why views are free (the rule, not the level): one host,
   * bench/results/gpu-2026-11-28c-h200, three device calls, seven models
   * whose views are 1 % (VGG-16) to 58 % (DeepLearningExamples' BERT:
   * 686 of 1188) of their forward's dispatches. With one factor per call,
   * `python3 bench/host_views_fit.py` over its 17 fp32 forward CSVs
   * (R=bench/results/gpu-2026-11-28c-h200: $R/host-{rn50,bl-dle,bb-dle}.csv
   * $R/call2/host-*.csv $R/call3/host-*.csv) fits 32.36 us a
   * kernel-launching dispatch + 0.30 us a view: next to nothing. One cost per
   * dispatch, views included, misses the files by 34.2 % rms (BERT +3 to
   * +41 %, the CNNs -66 to +4 %), left out model by model 40.0 %; one
   * cost per kernel-launching dispatch (32.57 us) 19.7 %, left out 22.7 %
   * (VGG-16, 39 of them launching 108 kernels, -36 and -52 %; without
   * VGG-16 12.7 and 16.2 %, against one cost per dispatch's 27.8 and
   * 34.4 %, and the split fits 30.16 us + 2.18 us a view). The level is
   * the five lends' above, not this host's (its calls at 35.2, 29.2 and
   * 33.6 us a kernel-launching dispatch: inside their range). The backward
   * likewise (`python3 bench/host_views_fit.py --backward` over the same
   * CSVs): one cost per node 27.7 % rms, left out 35.9 %; per node that
   * launches a kernel (33.48 us) 17.3 %, left out 20.0 %; apart, 32.30 us +
   * 3.42 us a node that launches nothing (bench/results/gpu-2026-11-28c-h200/
   * notes-hostkinds.md; by name, a view's backward free, 17.9 and 20.6 %).
   * Left out: phases whose spin ended first (BERT's forward waits at its mask
   * check; SE-ResNeXt's backward without pauses, ~1358 launches, fills the
   * driver's launch queue, 1020-1021 deep (27c launch_queue.csv), behind the
   * spin: 309.9 ms, the spin's), the 26d part h run (one spin per
   * iteration), 26b's host_phases.py (phases the GPU can gate) and 27c's run
   * pinned to two CPUs (host-resnet101-pinned.csv, 22.3 / 24.5 us: taskset
   * is not how PyTorch runs by default, and pinning did not make training
   * faster on that host: 27c notes-host2.md).
   * The hosts differ (28.55, 35.23, 47.63, 30.32, 39.16 us a
   * kernel-launching dispatch; 30.13, 33.04, 35.09, 32.63, 32.16 a node)
   * and each switches speed within a run
   * (ResNet-101's forward 22.6-54.6 us a dispatch on 2026-11-27, 34.6-52.1
   * on 27c) and between fresh processes (the fit row's command: 24.55,
   * 22.03, 18.03 ms on 27d) while running, not descheduled (27c: CPU time =
   * wall time, no run-queue wait, no steal):
   * bench/results/gpu-2026-11-27-h200/notes-host.md and
   * bench/results/gpu-2026-11-27c-h200/notes-host2.md. So a host-bound
   * answer has a range: ds_topo_host_factor_fastest and _slowest below.
   * The traces' estimates (bench/host_kinds.py, docs/strategies.md "The
   * host costs") put the forward at 29.6 us a dispatch counting every
   * dispatch, views included (ResNet-50 31.7, BERT AMP 28.8, ResNeXt-101
   * 46.2), and the node at 21.8 us counting every node: the units before
   * 2026-11-28c, lower than the pool's per kernel-launching dispatch and
   * node by the free ones they spread over. No validation row sets either.
   * A user's own host: `bench/host_calibrate.py --calib-out FILE`, whose
   * host section --calib applies over these (sim/train/calib.h). */
  c->host_dispatch_ns = 37480;
  c->host_cast_ns = 23600;
  c->host_node_ns = 32760;
  /* DDP's reducer (docs/strategies.md "The host costs"), measured unprofiled
   * with bench/torch_ddp_host.py (a host-bound toy of bias-free
   * Linear(W, W) at batch 1; DDP over one NCCL rank) and pooled as
   * host_dispatch and host_node above: one value per lend, then the median
   * over lends, never fitted to a validation row. Each run interleaves its
   * configurations rep by rep, so each lend's value is the median of its
   * paired per-rep differences, at 161 layers (ResNet-50's parameter
   * tensors: DDP's per-iteration cost spreads over the gradients as over
   * ResNet-50's) where the lend ran them (26b ran only 100 x 256); a lend
   * that ran several (28c: three calls on one machine) pools their paired
   * reps, 21 at 161 layers:
   *   lend  CSV (R=bench/results)                            gradient  bucket
   *   26    $R/gpu-2026-11-26-h200/ddp_host_161x512.csv       17.35   21.74
   *   26b   $R/gpu-2026-11-26b-h200/ddp_host_100x256.csv      35.42   37.94
   *   27g   $R/gpu-2026-11-27g-h200/ddp_host_161x512_b53.csv  26.30   44.09
   *   27h   $R/gpu-2026-11-27h-h200/ddp_host_161x512_b53_view.csv
   *                                                           24.02   54.63
   *   28    $R/gpu-2026-11-28-h200/ddp_host_layers.csv        36.63   45.13
   *   28c   $R/gpu-2026-11-28c-h200/{,call2/,call3/}ddp_host_layers.csv
   *                                                           21.00   42.10
   *   median (of six: the mean of the middle two)             25.16   43.09 us
   * gradient: (ddp-one - plain) / layers; bucket: (ddp-each - ddp-one) /
   * (buckets - 1). `python3 bench/ddp_host_pool.py` over those CSVs (and
   * 26's ddp_host_100x256.csv, which the 161-layer run outranks) prints
   * every rep, the unpaired figures the READMEs quote (26: 14.47 / 20.50,
   * 26b 30.58 / 42.57, 27g 26.30 / 46.70, 27h 17.11 / 54.63, 28 35.21 /
   * 53.27; 28c's three calls 8.90 / 67.87, 26.45 / 43.10, 19.55 / 37.58)
   * and the defaults. 28c's calls' own paired medians, 11.39 / 54.38,
   * 22.81 / 42.10 and 22.43 / 35.23, give the same lend value by their
   * median (22.43 / 42.10) and the same medians over lends. The medians
   * also hold with 26's 100-layer run (13.50 / 25.83) or 28's paired line
   * over 1, 81, 161 layers (34.9 us a gradient); 28's 81-layer run (36.33
   * / 39.34) would make the bucket's median 40.72. Until 2026-11-28 the
   * three were 26's host alone (13.5 and 21 us), the fastest lend measured
   * since; from then until 28c, the five lends above it (26.30 and 44.09
   * us: hook 20.5, bucket 44.1).
   * The per-gradient median splits into the copy back's launch, kept at
   * 5.8 us, and the hook, the rest: 19.4 us until 2026-11-28, 18.2 us
   * since host_ddp_iter (below) charges the per-iteration cost that
   * each lend's (ddp-one - plain) / 161 held, 186.3 / 161 = 1.16 us a
   * gradient (the intercept's median over lends: iteration plus one
   * bucket call, each now charged on its own). A launch does not grow with a
   * host's DDP cost (26b, at 35.4 us a gradient, launched a one-element add
   * in 5.9 us: bench/results/gpu-2026-11-26b-h200/README.md), and the one
   * unprofiled run that drops the copy (27h, --view) dropped a paired
   * median 5.75 us a gradient (reps -30.6 to +37.7, inside the host's
   * swings). host_grad_copy is also the host cost of each launch of the
   * --pytorch-version 1.4 / 1.9 optimizer loop, zero_grad fill and unscale
   * (compute_step.c ds_compute_step_host_op_ns), which a share of the
   * median would have moved with DDP's cost. */
  c->host_grad_hook_ns = ds_topo_host_grad_hook_default_ns; /* 25.16 - 1.16 - 5.8 */
  c->host_grad_copy_ns = ds_topo_host_grad_copy_default_ns;
  c->host_collective_ns = 43100;
  /* Per buffer that broadcast_buffers syncs before each forward, beyond the
   * per-bucket cat launch and broadcast call (host_grad_copy +
   * host_collective, sim/train/ddp_buffers.c): _sync_buffers' walk
   * (named_buffers over the modules, the version counters), the flatten's
   * view, BroadcastWork::finish's narrow and view, and the copy_ back's
   * launch (comm.cpp). Measured on the two lends that ran `python3
   * bench/torch_ddp_host.py --layers 161 --width 512 --buffers 53` (159
   * buffers in two dtype buckets, as ResNet-50's), each on its own footing:
   * its paired median of ddp-one-bcast - ddp-one over the reps, less what
   * the defaults above charge the two buckets, 2 x (5.8 + 43.1) = 97.8 us,
   * over 159 buffers:
   *   27g ddp_host_161x512_b53.csv       (3322.5 - 97.8) / 159 = 20.28 us
   *   27h ddp_host_161x512_b53_view.csv  (4724.7 - 97.8) / 159 = 29.10 us
   *   median (of two: the mean)                                 24.69 us
   * (bench/ddp_host_pool.py prints it; the reps' per-buffer differences
   * range 1.2-61 us, so the value is known to a few us at best). Until
   * 2026-11-28 it was 11.45 us: both lends' reps pooled, scaled by 13.5 /
   * 25.40 to 26's per-gradient footing, which the pooled defaults no longer
   * are. */
  c->host_buffer_ns = 24690;
  /* DDP's host work once per synchronising forward, whatever the gradients
   * and buckets (torch 2.15's torch/nn/parallel/distributed.py, read in
   * /root/venv-torch: forward's record_function; _pre_forward's
   * logger.set_runtime_stats_and_log, reducer.prepare_for_forward,
   * Join.notify_join_context, reducer._rebuild_buckets' check,
   * _check_sync_bufs_pre_fwd, _to_kwargs; _post_forward's
   * reducer.prepare_for_backward([]) (per bucket a reset: O(buckets), but
   * a loop, not a call) and _clear_grad_buffer; and reducer.cpp's
   * mark_variable_ready, once the last bucket is ready, queue_callback of
   * the lambda that runs finalize_backward after the backward's graph: its
   * lock, the runtime-stats record and the waits on each bucket's future).
   * Charged as one host op before the forward's first launch (before the
   * buffers' broadcasts, as _pre_forward orders them); how it splits
   * between before the forward and after the backward was not measured.
   * Measured on the two lends that ran `python3 bench/torch_ddp_host.py
   * --layers 1,81,161 --width 512 --reps 7`: per rep, the least-squares
   * line of the paired ddp-one - plain against the layer count; its
   * intercept is this cost plus ddp-one's one bucket call:
   *   28   ddp_host_layers.csv, 7 reps: -745.7..748.1, median 152.8 us
   *        (5 of 7 above 0)
   *   28c  {,call2/,call3/}ddp_host_layers.csv, 21 reps pooled:
   *        -694.7..1155.7, median 219.9 us (16 of 21 above 0)
   *   median over the two lends 186.3 us, less host_collective's 43.1 us
   *   (the call ddpsim already charges) = 143.2 us
   * (`python3 bench/ddp_host_pool.py` over the ddp_host CSVs prints it).
   * The reps' intercepts swing by +-1 ms, so the value is known to a
   * factor of two at best; it is above 0 on 21 of 28 reps, and the
   * directly measured 1-layer differences (this cost, one gradient and one
   * bucket call) are above 0 on 27 of 28 reps, medians 314.3 (28) and
   * 265.3, 255.3, 133.9 us (28c's three calls). Until 2026-11-28 it was
   * not charged on its own: the per-gradient medians at 161 layers above
   * hold it spread over the gradients (about 0.9 us each). */
  c->host_ddp_iter_ns = 143200;
  /* The foreach optimizer step's Python thread: optimizer.step()'s wrapper
   * (torch/optim/optimizer.py profile_hook_step: record_function, the
   * hooks), per group _init_group's Python loop over the parameters
   * (sgd.py: the grad and momentum_buffer lists; adam.py: exp_avg,
   * exp_avg_sq, step), _group_tensors_by_device_and_dtype over those lists,
   * the foreach calls (each checks and packs every tensor, then launches
   * multi_tensor_apply's kernels), and SGD's loop writing each
   * momentum_buffer back; Adam's non-capturable path also adds 1 to every
   * CPU step tensor and reads each back in Python four times for its bias
   * corrections (_get_value). Read in torch 2.15's sgd.py and adam.py; the
   * lends ran 2.11. Measured with the same twelve host_calibrate CSVs as
   * host_dispatch above (each phase behind its own spin; every step phase
   * ran unblocked, 10 of 10 iterations), each file's median step_ms over
   * the model's parameter tensors (model files' params: ResNet-50 161,
   * ResNet-101 and ResNeXt-101 32x4d 314, SE-ResNeXt-101 446, BERT-base
   * 201): `python3 bench/host_pool.py` over them prints every term:
   *   SGD with momentum, 11 files: ResNet-50 1.181, 1.269, 1.030, 1.371,
   *     1.012 ms; ResNet-101 2.449, 2.628; ResNeXt-101 1.802, 2.111;
   *     SE-ResNeXt-101 2.580, 2.589 (5.74-8.51 us a tensor). Total over
   *     total, 20.023 ms / 2953 = 6.78 us a tensor, leaves residuals
   *     -0.444..+0.499 ms (rms 0.297); the least-squares line over the
   *     files' medians, 0.370 ms a call + 5.403 us a tensor, rms 0.257
   *     (-0.264..+0.562). The line is taken: every lend with two tensor
   *     counts gives a positive intercept (26d 0.53 ms, 27 0.66), and so do
   *     the check runs below, which the line predicts better.
   *   Adam, BERT-base's one file (26d call2): 3.046 ms; less the call's
   *     0.370, over 201 tensors: 13.31 us a tensor (one lend, one model:
   *     no line of its own).
   * Check, not fit (bench/spin_bias.py stream mode, consecutive training
   * iterations, other processes and lends 27g and 27h): ResNet-50 1.418
   * and 1.373 ms, ResNet-101 2.545, ResNeXt-101 2.349, MobileNetV2 (158)
   * 1.195; the line predicts 1.240 (-13 %, -10 %), 2.067 (-19 %), 2.067
   * (-12 %), 1.224 (+2 %); per tensor alone -23, -21, -16, -9, -10 %.
   * Only one call per step: the data have one parameter group each (a
   * second group, --no-bn-weight-decay's, repeats part of the call's work
   * and is not charged). zero_grad's own loop over the parameters and
   * GradScaler.unscale_'s are not measured and not charged. */
  c->host_step_call_ns = 370000;
  c->host_step_param_ns = 5403;
  c->host_step_param_adam_ns = 13310;
  if (!ds_cmap_get(root, "compute", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, compute_keys, err));
  DS_CHECK(read_efficiency(&map, "flops_efficiency", &c->flops_efficiency, err));
  DS_CHECK(read_efficiency(&map, "mem_efficiency", &c->mem_efficiency, err));
  DS_CHECK(read_efficiency(&map, "conv_efficiency", &c->conv_efficiency, err));
  DS_CHECK(read_efficiency(&map, "matmul_efficiency", &c->matmul_efficiency, err));
  DS_CHECK(read_efficiency(&map, "attention_efficiency", &c->attention_efficiency, err));
  const struct {
    const char *key;
    double *ns;
  } times[] = {
      {"kernel_overhead", &c->kernel_overhead_ns},
      {"host_launch", &c->host_launch_ns},
      {"host_replicate", &c->host_replicate_ns},
      {"host_backward", &c->host_backward_ns},
      {"host_op", &c->host_op_ns},
      {"host_dispatch", &c->host_dispatch_ns},
      {"host_cast", &c->host_cast_ns},
      {"host_node", &c->host_node_ns},
      {"host_grad_hook", &c->host_grad_hook_ns},
      {"host_grad_copy", &c->host_grad_copy_ns},
      {"host_collective", &c->host_collective_ns},
      {"host_buffer", &c->host_buffer_ns},
      {"host_ddp_iter", &c->host_ddp_iter_ns},
      {"host_step_call", &c->host_step_call_ns},
      {"host_step_param", &c->host_step_param_ns},
      {"host_step_param_adam", &c->host_step_param_adam_ns},
  };
  for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
    DS_CHECK(read_time(&map, times[i].key, times[i].ns, err));
  if (ds_cmap_get(&map, "comm_interference", &node)) {
    DS_CHECK(ds_cnode_number(&node, &c->comm_interference, err));
    if (c->comm_interference < 0 || c->comm_interference > 10)
      return ds_cnode_error(&node, err, "expected a slowdown fraction from 0 to 10, got %g",
                            c->comm_interference);
  }
  if (ds_cmap_get(&map, "fp32_math", &node))
    DS_CHECK(ds_topo_read_fp32_math(&node, &c->fp32_uses_tf32, err));
  return DS_OK;
}

ds_status ds_topo_read_fp32_math(const struct ds_cnode *node, int *uses_tf32,
                                 struct ds_err *err) {
  const char *s;
  DS_CHECK(ds_cnode_string(node, &s, err));
  if (strcmp(s, "tf32") == 0) *uses_tf32 = 1;
  else if (strcmp(s, "fp32") == 0) *uses_tf32 = 0;
  else return ds_cnode_error(node, err, "expected tf32 or fp32, got \"%s\"", s);
  return DS_OK;
}
