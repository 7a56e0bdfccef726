/*
 * How ranks are started and talk outside the device: one process per rank,
 * either under an MPI launcher (launch_mpi.c: mpirun, any number of nodes)
 * or forked by ddpreal itself on one node (launch_fork.c: for the cuda
 * device, one process per GPU, or several per GPU when asked).
 *
 * Every rank process runs the same function; rank 0 collects the results.
 */
#ifndef DS_LAUNCH_H
#define DS_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest wait for the other ranks, seconds, unless DDPREAL_TIMEOUT_S
 * (--timeout) says otherwise: the launcher's barriers and the devices'
 * collectives and GPU waits read the same default. */
#define DS_REAL_TIMEOUT_S 300.0

struct ds_launcher {
  int32_t rank;
  int32_t world;
  /* This rank among the ranks on its node, and their number: the GPU a
   * rank takes and whether ranks must share GPUs are node matters (MPI:
   * MPI_Comm_split_type MPI_COMM_TYPE_SHARED; fork: rank and world). */
  int32_t local_rank;
  int32_t local_world;
  const char *kind; /* "mpi" or "fork" */
  /* host[q], for every world rank q: the lowest world rank on rank q's
   * node, so ranks with equal entries read one CLOCK_MONOTONIC (the trace
   * corrects the drift between two hosts' clocks only, ds_replay_clocks).
   * MPI: the ranks that MPI_COMM_TYPE_SHARED puts together, the node of
   * local_rank; NULL (fork, or MPI when that split fails, as local_world
   * then assumes): every rank on one node. Owned by the launcher. */
  const int32_t *host;
  ds_status (*barrier)(struct ds_launcher *l, struct ds_err *err);
  /* Copies root's len bytes at buf to every rank's buf. */
  ds_status (*broadcast)(struct ds_launcher *l, void *buf, size_t len,
                         int32_t root, struct ds_err *err);
  /* Rank 0 receives every rank's len bytes, in rank order, at all
   * (world * len bytes; ignored on other ranks). */
  ds_status (*gather)(struct ds_launcher *l, const void *mine, size_t len,
                      void *all, struct ds_err *err);
  void *impl;
  /* Set by the rank body before it returns a failure that no other rank
   * waits on (it comes after the body's last barrier/broadcast/gather,
   * like rank 0 failing to write the trace): the launcher then ends the
   * rank normally with that status instead of aborting the whole job.
   * Launchers that start the job fresh (fork) may ignore it. */
  int finished;
};

/* The body every rank runs; its status becomes the rank's exit status. */
typedef ds_status (*ds_launch_main_fn)(struct ds_launcher *l, void *arg,
                                     struct ds_err *err);

/* Under mpirun: MPI_Init_thread, run fn on this rank, MPI_Finalize. A rank
 * that fails aborts the job (MPI_Abort) with its message on stderr. */
ds_status ds_launch_mpi(int *argc, char ***argv, ds_launch_main_fn fn, void *arg,
                        struct ds_err *err);

/* Forks `world` rank processes on this node, runs fn in each, waits for all.
 * A rank that fails or dies ends the others; the error names the rank.
 * The caller must not have initialised CUDA (not fork-safe). broadcast and
 * gather go through a 64 MiB shared area, in rounds when larger (no size
 * limit). Several ranks on one GPU are the device's business: the cuda
 * device sets a per-rank NCCL_HOSTID before NCCL starts (dev_cuda.h). */
ds_status ds_launch_fork(int32_t world, ds_launch_main_fn fn, void *arg,
                         struct ds_err *err);

/* Whether this process was started by an MPI launcher (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE or PMIX_RANK in the environment). */
int ds_under_mpi(void);
/* The rank and world size the MPI launcher put in the environment
 * (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, PMIX_RANK with Slurm's
 * SLURM_NTASKS), known before MPI_Init; -1 when not under MPI or not
 * readable (the world under PMIx without Slurm). */
int32_t ds_mpi_env_rank(void);
int32_t ds_mpi_env_world(void);

#ifdef __cplusplus
}
#endif

#endif /* DS_LAUNCH_H */
