/*
 * torch.nn.DataParallel (torch/nn/parallel/data_parallel.py, replicate.py,
 * parallel_apply.py, _functions.py, torch/cuda/comm.py) and single-GPU
 * training, as schedules. One process drives every GPU; per iteration:
 *
 *   1. scatter: the input batch (world * batch samples) from GPU 0, a
 *      chunk to each replica, non_blocking: the host goes on at once, each
 *      replica's first kernel waits for its chunk;
 *   2. replicate: parameters broadcast from GPU 0 with
 *      comm.broadcast_coalesced (NCCL broadcasts of groups closed once they
 *      reach 10 MiB: C++ take_tensors, ds_dp_chunks),
 *      and the module copied for every replica in Python on the main
 *      thread (host time per parameter tensor per replica);
 *   3. parallel_apply: one Python thread per replica runs the forward; the
 *      Python side of every kernel launch holds the GIL, so the threads take
 *      the host in turn: replica r's k-th launch ends at (k W + r + 1) L
 *      after replicate (W replicas, host cost L per launch, round robin);
 *   4. gather of the outputs to output_device, the loss there, and
 *      Gather's backward: a scatter of the output gradient (with
 *      parallel_loss each replica computes its loss and only the W scalars
 *      are gathered and their gradients scattered);
 *   5. backward on every replica (autograd's per-device C++ threads: no GIL);
 *   6. Broadcast's backward, ReduceAddCoalesced: once every replica's
 *      backward has finished, the gradients are reduced onto GPU 0 by
 *      comm.reduce_add_coalesced, an NCCL reduce per group of at most
 *      10 MiB (torch._utils._take_tensors: a group closes before a tensor
 *      would take it past the limit; a larger tensor is a group alone);
 *      the reduced gradients reach the module's parameters through their
 *      AccumulateGrad nodes, which add into .grad where it is kept
 *      (PyTorch 1.4 and 1.9: one add per tensor on GPU 0);
 *   7. the optimizer step on GPU 0 only.
 *
 * NCCL's broadcast and reduce (torch/csrc/cuda/nccl.cpp: one ncclBcast or
 * ncclReduce per device inside ncclGroupStart/End, from the one thread) are
 * the flow network's pipelined chains (sim/coll/coll_chain.c): under NCCL's
 * model (opt->nccl) NCCL's ring broadcast and reduce with the protocol its
 * tuning picks per group, channels, latencies and launch, as DDP's buffer
 * broadcast; without it the plain chains on the links' own bandwidth and
 * latency. Scatter and gather (peer copies, comm.cpp) are its
 * point-to-point kinds.
 * Single-GPU training is steps 3, 5 and 7 on one GPU with one thread; so is
 * DataParallel with one GPU, whose forward calls the module directly
 * (data_parallel.py: `if len(self.device_ids) == 1: return
 * self.module(...)`, before replicate), and whose memory is single's
 * (ds_ddp_memory, not ds_dp_memory: run.c).
 */
#ifndef DS_DP_H
#define DS_DP_H

#include <stdint.h>

#include "traces/schedule.h"
#include "base/status.h"
#include "sim/coll/coll.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* broadcast_coalesced's and reduce_add_coalesced's buffer_size: 10 MiB
 * (torch/nn/parallel/comm.py: buffer_size=10485760, both functions). */
#define DS_DP_COALESCE_BYTES (10.0 * 1024 * 1024)

/* The coalesced groups of the parameters (registration order), bytes each,
 * under the two rules PyTorch has for them:
 *   bytes, n: reduce_add_coalesced's (torch/nn/parallel/comm.py), Python's
 *     torch._utils._take_tensors: a group closes before a tensor would take
 *     it past cap (a larger tensor is a group alone);
 *   bcast_bytes, n_bcast: replicate's broadcast_coalesced (torch/csrc/cuda/
 *     comm.cpp), C++ torch::utils::take_tensors (tensor_flatten.cpp): the
 *     tensor joins the group, which closes once it holds cap or more. */
struct ds_dp_chunks {
  double *bytes; /* owned */
  int32_t n;
  double *bcast_bytes; /* owned */
  int32_t n_bcast;
};

/* Groups the model's parameters (dtype_bytes per element) under both
 * rules above with limit cap. */
ds_status ds_dp_chunks(const struct ds_model *model, int dtype_bytes, double cap,
                       struct ds_dp_chunks *out);
void ds_dp_chunks_release(struct ds_dp_chunks *c);

struct ds_nccl_model;

struct ds_dp_options {
  int32_t world_size;    /* replicas, one per GPU (ranks 0 .. W-1); 1 with single */
  /* NULL: the broadcasts and reduces are the plain chains ("ring").
   * Otherwise NCCL's ring broadcast and reduce under proto_fixed, or NCCL's
   * choice per group size when it is DS_PROTO_COUNT; the op's algo names
   * it ("ring/LL128"). Borrowed. */
  const struct ds_nccl_model *nccl;
  enum ds_proto proto_fixed;
  int64_t batch;         /* per GPU */
  int32_t output_device; /* rank the outputs are gathered to, < world_size */
  int parallel_loss;     /* each replica computes its loss; W scalars gathered */
  int single;            /* single-GPU training: no replication, no communication */
  /* host time per forward layer launch (the GIL's share) and per backward
   * layer on the rank's autograd thread, for model files without host
   * counts; with them, the topology's per-op costs (sim/train/host.h) */
  double launch_ns;
  double replicate_ns;   /* host time of replicate() per parameter tensor per replica */
  double backward_ns;
  /* single only: grad_accum K > 1 (--grad-accum) runs K micro-steps of
   * forward, loss and backward, each after the previous one's GPU work,
   * then one optimizer step; micro-steps after the first (every one under
   * 1.9's zero_grad) add into .grad (ds_compute_accum_grad_ns) */
  int32_t grad_accum;
  /* single only: --loop free, as ds_ddp_options.free_loop (ddp.h): the
   * host starts the next iteration after the step's host work, not after
   * its GPU op */
  int free_loop;
  /* memory only: .grad kept between iterations (PyTorch 1.4, 1.9), so GPU 0
   * holds it beside the reduce's output and replica 0's gradients */
  int grad_kept;
  /* memory only: the optimizer's step on GPU 0 (ds_step_temporaries):
   * PyTorch 1.4/1.9's per-parameter loop, and a nonzero weight_decay */
  int optimizer_loop;
  int weight_decay;
};

/* Builds one iteration (see above) into out: ranks 1 .. W-1 first, then
 * rank 0, whose optimizer step is the iteration's last op. Op ids are
 * id_base + index; collective ids coll_base + 0 .. *n_coll - 1. chunks:
 * from ds_dp_chunks (unused with single). */
ds_status ds_dp_build(const struct ds_model *model, const struct ds_compute *compute,
                      const struct ds_dp_options *opt, const struct ds_dp_chunks *chunks,
                      int64_t id_base, int64_t coll_base, struct ds_schedule *out,
                      int64_t *n_coll);

/* One GPU's memory under DataParallel at its peak, bytes: what is live
 * then, walked through the iteration as ds_ddp_memory walks single and DDP
 * (memory.h). Held all iteration: GPU 0 the module's parameters (replica
 * 0's are the same tensors: broadcast_coalesced hands the source device its
 * own tensors), the optimizer state, the whole input batch (the other
 * replicas' chunks counted; replica 0's is a view) and, under 1.4/1.9's
 * zero_grad, .grad; another GPU its replica's parameters, broadcast each
 * iteration and held by the replica's graph until its backward is done.
 * What comes and goes, at these points:
 *   the loss's backward (on the output device, over the gathered batch; on
 *     every replica with parallel_loss): everything the replica saved, the
 *     loss's log-probs and nll_loss's gradient, the gathered outputs (the
 *     training loop holds them until the next forward) and their gradient;
 *     a replica that gets its output's gradient scattered holds its chunk
 *     (a view of the gathered one on the output device);
 *   after each layer's backward: its saved tensors freed, its gradients
 *     (the replica's, held in ReduceAddCoalesced's input buffer until every
 *     replica is done) allocated; the output's gradient gone;
 *   the reduce (comm.reduce_add_coalesced): every replica's gradients,
 *     and on GPU 0 their sum, which becomes .grad (added into a kept one);
 *   the step (GPU 0 only: torch.nn.DataParallel keeps the module there and
 *     the training loop's optimizer steps its parameters): .grad, the
 *     gathered outputs still held, and the step's temporaries over every
 *     parameter (ds_step_temporaries, as single derives them). */
struct ds_dp_gpu_memory {
  double params;      /* the module (GPU 0) or its replica */
  double grads;       /* the replica's gradients; GPU 0 also the reduced .grad */
  double optimizer;   /* GPU 0 only */
  double activations; /* saved for backward then, the replica's batch (the loss's
                       * log-probs where it runs) */
  double inputs;      /* GPU 0: the other replicas' inputs, scattered from it */
  double outputs;     /* gathered outputs, their gradient, nll_loss's gradient */
  double step;        /* GPU 0 at the step: the optimizer's temporaries */
  double total;
  const char *peak_at;         /* "the loss's backward", "backward", "the reduce",
                                * "the step" */
  const char *peak_layer_name; /* backward: the layer just back-propagated */
};

struct ds_dp_memory {
  struct ds_dp_gpu_memory gpu0;
  struct ds_dp_gpu_memory other; /* the fullest GPU other than 0 */
};

void ds_dp_memory(const struct ds_model *model, const struct ds_precision *pr,
                  const struct ds_dp_options *opt, struct ds_dp_memory *out);

#ifdef __cplusplus
}
#endif

#endif /* DS_DP_H */
