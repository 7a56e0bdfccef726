/*
 * A replay device runs the ops of one rank of a schedule (DESIGN.md, "real
 * backend"). The replay loop (replay.c) is the same for every device: each
 * iteration it calls begin_iter on every rank right after a barrier, issues
 * the rank's ops in schedule order, and collects their times with end_iter.
 *
 * A device honours exactly what the schedule says: ops of one (rank,
 * stream) run in schedule order, an op starts only after the ops named in
 * its deps have ended, and nothing else orders them. Collectives run on real
 * buffers sized as the op says and their results are checked (rank-dependent
 * inputs, expected sums), counting wrong elements as nccl-tests' #wrong.
 *
 * Devices: "cpu" (dev_cpu.c: MPI collectives, CPU compute) and "cuda"
 * (dev_cuda.cu: CUDA streams and events, NCCL, cuBLAS or a spin kernel;
 * built only where nvcc and nccl.h are found, DS_HAVE_CUDA).
 */
#ifndef DS_DEVICE_H
#define DS_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "traces/schedule.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How compute ops do their work. */
enum ds_compute_mode {
  DS_COMPUTE_SPIN, /* occupy the device for the op's dur_us */
  DS_COMPUTE_GEMM  /* real GEMMs whose FLOPs match the op's flops */
};

struct ds_launcher; /* launch.h */

struct ds_dev_config {
  const struct ds_schedule *sched; /* validated; borrowed */
  int32_t rank;
  int32_t world;                   /* sched->world_size */
  enum ds_compute_mode compute;
  int32_t device_ordinal;          /* cuda: GPU index (the node-local rank); cpu: unused */
  int32_t local_world;             /* cuda: ranks on this node; cpu: unused */
  int shared;                      /* several ranks share this device */
  struct ds_launcher *launcher;    /* barrier/broadcast for bootstrap */
};

struct ds_dev_rank; /* one rank's device state (opaque) */

struct ds_device {
  const char *name; /* "cpu", "cuda" */
  /* Sets up the rank: streams, buffers sized from this rank's ops, the
   * communicator (bootstrapped through cfg->launcher). */
  ds_status (*open)(const struct ds_dev_config *cfg, struct ds_dev_rank **out,
                    struct ds_err *err);
  /* The common start of an iteration: called on every rank right after a
   * barrier; op times are relative to it. */
  ds_status (*begin_iter)(struct ds_dev_rank *r, struct ds_err *err);
  /* Runs op sched->ops[index] (an op of this rank) on its stream, after the
   * previous op of that stream and the ops named in its deps. May return
   * before the op has run (cuda) or once it is queued (cpu). Ops are issued
   * in schedule order. */
  ds_status (*issue)(struct ds_dev_rank *r, size_t index, struct ds_err *err);
  /* Waits for every op issued since begin_iter and stores each one's start
   * and end, in ns since begin_iter, at start_ns[index] / end_ns[index]
   * (arrays of sched->n_ops; other entries untouched). */
  ds_status (*end_iter)(struct ds_dev_rank *r, int64_t *start_ns, int64_t *end_ns,
                        struct ds_err *err);
  /* Elements of collective results that were wrong, so far. */
  int64_t (*wrong)(const struct ds_dev_rank *r);
  /* Appends "# key: value\n" lines describing the device (library versions,
   * device names, driver, relevant environment) to buf. */
  void (*describe)(const struct ds_dev_rank *r, char *buf, size_t cap);
  void (*close)(struct ds_dev_rank *r);
};

extern const struct ds_device ds_device_cpu;
#ifdef DS_HAVE_CUDA
extern const struct ds_device ds_device_cuda;
#endif

#ifdef __cplusplus
}
#endif

#endif /* DS_DEVICE_H */
