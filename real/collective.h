/*
 * `ddpreal collective`: an nccl-tests-style sweep of one NCCL collective
 * over message sizes, on ranks forked on this node (launch_fork.c), timed
 * with CUDA events and checked (#wrong). Built with the cuda device only
 * (DS_HAVE_CUDA); its options, --help and parser are collective_args.h,
 * built always.
 */
#ifndef DS_REAL_COLLECTIVE_H
#define DS_REAL_COLLECTIVE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "launch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One size of an all-reduce sweep, as rank 0 reports it. */
struct ds_coll_point {
  size_t size_bytes;        /* floats * 4 */
  double time_us;           /* per call: mean over ranks of each rank's average */
  unsigned long long wrong; /* wrong result elements, summed over ranks */
};

/* The all-reduce sweep of `ddpreal collective --op allreduce` (same sizes,
 * warmup, barrier, event timing and result check), printing nothing, for
 * other commands (calibrate.cu). Runs on every rank of l; the caller has
 * made the rank's GPU current (ds__cuda_pick_gpu: gpu, gpu_count) and no
 * NCCL communicator of its own is needed (one is made and destroyed here).
 * Rank 0 gets up to cap points in pts and their count in *n. */
ds_status ds__coll_allreduce_sweep(struct ds_launcher *l, int gpu, int gpu_count,
                                   size_t min_bytes, size_t max_bytes, double factor,
                                   int32_t iters, int32_t warmup, struct ds_coll_point *pts,
                                   size_t cap, size_t *n, struct ds_err *err);

/* argv[0] is "collective"; returns the process exit code (0 ok, 2 usage,
 * 1 failure), messages on stderr, the table on stdout. */
int ds_collective_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* DS_REAL_COLLECTIVE_H */
