/*
 * `ddpreal calibrate` (calibrate.h): measures the GPU and the all-reduce of
 * this node and writes the calibration file ddpsim reads (traces/calib_file.h,
 * written by traces/calib_file.c).
 *
 * Compute, on rank 0 while the other ranks wait at a barrier:
 *  - GEMMs: every distinct GEMM the cuda device's gemm mode would run for
 *    the schedule's fwd/bwd ops of rank 0 (edge cbrt(flops/2) up to 8192,
 *    repeated to the op's flops, as dev_cuda.cu), timed with an event pair
 *    per execution (median of --iters), in FP32 math and in TF32 math
 *    (cublasSetMathMode, looked up with dlsym: cuBLAS is dlopen'ed as in
 *    dev_cuda.cu, never linked). Fitted with GSL least squares to
 *    t = overhead + flops/rate (gsl_fit_linear): rate over the peak of the
 *    chosen math is flops_efficiency, the intercept kernel_overhead. When
 *    the intercept comes out negative, the overhead is fixed at the launch
 *    time below and only the rate is fitted (gsl_fit_mul); both fits are
 *    reported with R^2 and residuals.
 *  - memory: cudaMemcpyAsync device to device and a float4 copy kernel on
 *    512 MiB, 2*S/t (read + write, the roofline's bytes); the faster over
 *    the peak is mem_efficiency.
 *  - launch floor: 1000 empty kernels back to back between two events (the
 *    span per kernel), reported beside the fitted overhead.
 *  - by op class (the `efficiency` section, sim/train/compute.h): matmul in
 *    FP32 and TF32 math is the GEMM fit's rate over that math's peak; the
 *    convolution proxy (cuDNN is not a dependency) is cuBLAS SGEMMs shaped
 *    as the implicit GEMMs of ResNet-50's four 3x3 convolutions at batch 32
 *    (M = N*P*Q output pixels, N = K output channels, K = C*R*S), in both
 *    maths: their FLOPs over their summed median times, over the peak. The
 *    proxy has the convolution's GEMM shape, not cuDNN's kernels (no im2col
 *    traffic, no Winograd).
 *  - interference (the `nccl` section): a compute-bound SGEMM (4096^3, FP32
 *    math) alone, then beside a copy kernel of --nccl-blocks blocks of 512
 *    threads (NCCL launches one block per channel, NCCL_MAX_NTHREADS 512)
 *    on another stream that runs for the whole timed sequence (it copies
 *    until a %globaltimer deadline); the median GEMM time's ratio is the
 *    measured slowdown, written beside the mechanism's SMs/(SMs - blocks)
 *    (sim/train/interference.h). The copy's end is checked to follow the
 *    last GEMM, so every timed GEMM had it beside it.
 *  - unaligned half-precision GEMMs (efficiency.matmul_unaligned_half,
 *    sim/train/compute.h): GPT-2's LM head forward as PyTorch calls cuBLAS
 *    (cublasGemmEx, bf16 where the GPU has it, else fp16, FP32 accumulate,
 *    transa T: out[8192, N] = x[8192, 768] W[N, 768]^T), with N = 50257
 *    (not a multiple of 8: cuBLAS's narrow-load kernels) and N = 50264 (the
 *    next multiple of 8), median of --iters each; the first's rate over the
 *    half peak is written, the second's is reported beside it.
 * Peaks: a small table from topologies/gpus.yaml (matched on the CUDA
 * device name) or --peak-tflops / --mem-bw.
 *
 * Collectives: the all-reduce sweep of `ddpreal collective`
 * (ds__coll_allreduce_sweep) on -g N forked ranks, fitted with weights
 * 1/t^2 (relative errors: sizes span 8 B .. 256 MiB) to
 * t = alpha + S * 2(N-1)/N / bus_bw; one rank is a device copy (factor 1,
 * marked copy: true), and ranks sharing a GPU are marked shared: true. On
 * N > 1 separate GPUs the smallest size's time per call (its calls issued
 * back to back between two events, as nccl-tests and DDP issue them) is
 * NCCL's per-call cost, written as nccl.launch; it includes that tiny
 * all-reduce's own latency, which NCCL's model also charges.
 *
 * Options: calibrate_args.c (plain C, built without CUDA too).
 *
 * Files: this one, the command, the schedule's GEMM shapes and the rank
 * body; calibrate_compute.cu, rank 0's measurements in order (launch floor,
 * memory, interference); calibrate_gemm.cu, the cuBLAS ones (GEMMs,
 * convolution proxy, unaligned half GEMM); calibrate_write.cu, the peaks,
 * the fits, the file and the summary; calibrate_impl.h, what they share.
 *
 * Key invariant: the parent never touches CUDA (it forks the ranks), and
 * the file is written atomically by rank 0 only after every measurement
 * and check passed.
 */
#include "calibrate.h"
#include "calibrate_args.h"
#include "calibrate_impl.h"
#include "collective.h"
#include "dev_cuda.h"
#include "launch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/trace.h"

/* The GEMM shapes of rank 0's fwd/bwd ops with flops (dev_cuda.cu's
 * gemm_dim_for and reps), each once. */
static ds_status collect_shapes(const struct ds_schedule *s, struct cal_ctx *c,
                                struct ds_err *err) {
  c->shapes = (struct shape *)calloc(s->n_ops ? s->n_ops : 1, sizeof *c->shapes);
  if (!c->shapes) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *op = &s->ops[i];
    if (op->rank != 0 || (op->kind != DS_OP_FWD && op->kind != DS_OP_BWD) || !(op->flops > 0))
      continue;
    double dd = cbrt(op->flops / 2.0);
    if (dd > DS_CUDA_GEMM_MAX_DIM) dd = DS_CUDA_GEMM_MAX_DIM;
    size_t d = dd < 1 ? 1 : (size_t)llround(dd);
    double per = 2.0 * (double)d * (double)d * (double)d;
    long reps = lround(op->flops / per);
    if (reps < 1) reps = 1;
    c->n_ops++;
    size_t k = 0;
    while (k < c->n_shapes && !(c->shapes[k].d == d && c->shapes[k].reps == reps)) k++;
    if (k == c->n_shapes) {
      c->shapes[k].op_flops = op->flops;
      c->shapes[k].flops = per * (double)reps;
      c->shapes[k].d = d;
      c->shapes[k].reps = reps;
      c->n_shapes++;
    }
    c->shapes[k].n_ops++;
  }
  if (c->n_shapes < 2)
    return ds_err_set(err, DS_EINPUT, "%s has %zu distinct GEMM size%s among "
                      "rank 0's fwd/bwd ops with flops; the fit needs at least 2 (write the "
                      "schedule with ddpsim --schedule for a model)", c->o->schedule,
                      c->n_shapes, c->n_shapes == 1 ? "" : "s");
  return DS_OK;
}

/* ---- the rank body ------------------------------------------------------ */

struct rank_arg {
  struct cal_ctx *c;
};

static ds_status cal_rank(struct ds_launcher *l, void *arg, struct ds_err *err) {
  struct cal_ctx *c = ((struct rank_arg *)arg)->c;
  const struct ds_calibrate_args *o = c->o;
  int32_t rank = l->rank;
  int gpu = 0, gpu_count = 0;
  struct compute_meas m;
  memset(&m, 0, sizeof m);
  struct ds_coll_point pts[MAX_POINTS];
  size_t n_pts = 0;
  DS_CHECK(ds__cuda_pick_gpu(rank, l->local_world, l->local_rank, o->share_gpus, 1,
                             "calibrate measures a GPU and needs one (no --device cpu)", &gpu,
                             &gpu_count, err));
  if (rank == 0) {
    ds_status st = ds__calibrate_measure_compute(c, gpu, &m, rank, err);
    /* the others wait at the barrier: a failure here ends them (fork
     * launcher), with this rank's message */
    if (st != DS_OK) return st;
  }
  DS_CHECK(l->barrier(l, err));
  DS_CHECK(ds__coll_allreduce_sweep(l, gpu, gpu_count, o->min_bytes, o->max_bytes, o->factor,
                                    20, 10, pts, MAX_POINTS, &n_pts, err));
  if (rank != 0) return DS_OK;
  l->finished = 1;
  return ds__calibrate_finish(c, &m, l->world, gpu_count, pts, n_pts, err);
}

extern "C" int ds_calibrate_main(int argc, char **argv) {
  struct ds_calibrate_args o;
  struct ds_err err;
  ds_err_clear(&err);
  struct cal_ctx c;
  memset(&c, 0, sizeof c);
  c.o = &o;
  struct ds_schedule *s = NULL;
  ds_status st = ds_calibrate_args_parse(argc, argv, &o, &err);
  if (st == DS_OK && o.help) {
    fputs(ds_calibrate_args_usage(), stdout);
    return 0;
  }
  if (st == DS_OK) {
    st = ds_schedule_read_csv(o.schedule, &s, &err);
    if (st == DS_EIO) st = DS_EINPUT; /* a schedule that cannot be read is bad input */
  }
  if (st == DS_OK) st = collect_shapes(s, &c, &err);
  if (st == DS_OK) {
    struct rank_arg a = {&c};
    st = ds_launch_fork(o.nranks, cal_rank, &a, &err);
  }
  free(c.shapes);
  ds_schedule_free(s);
  if (st != DS_OK) {
    fprintf(stderr, "ddpreal calibrate: %s\n", err.msg[0] ? err.msg : ds_status_message(st));
    return ds_status_exit_code(st);
  }
  return fflush(stdout) == 0 ? 0 : 1;
}
