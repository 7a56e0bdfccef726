/*
 * The MPI launcher: ranks are the processes mpirun started (or a singleton
 * MPI process when run alone). Barrier, broadcast and gather are the MPI
 * calls on MPI_COMM_WORLD.
 *
 * Key invariant: a rank never leaves the others waiting. A body that fails
 * while other ranks may still wait on it (in a barrier, a collective of the
 * device) prints its message naming the rank and calls MPI_Abort, which
 * ends the whole job with the status's exit code; only a failure the body
 * marks `finished` (after its last communication) ends the rank normally.
 *
 * MPI is initialised with MPI_THREAD_SERIALIZED: the cpu device calls MPI
 * from its comm-stream thread during an iteration and the main thread calls
 * the launcher between iterations, never both at once.
 */
#include "launch.h"
#include "options.h"

#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ds_status mpi_fail(struct ds_launcher *l, const char *call, int rc,
                          struct ds_err *err) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
  (void)l; /* the launcher's abort message names the rank */
  return ds_err_set(err, DS_EIO, "%s failed: %s", call, msg);
}

/* A barrier that a stopped or hung rank cannot hold for ever (issue #15,
 * defect 6): past the limit the job ends with a message. Which rank is
 * missing is not knowable from a barrier; the device's collectives name it. */
static ds_status mpi_barrier(struct ds_launcher *l, struct ds_err *err) {
  MPI_Request q;
  int rc = MPI_Ibarrier(MPI_COMM_WORLD, &q);
  if (rc != MPI_SUCCESS) return mpi_fail(l, "MPI_Ibarrier", rc, err);
  double limit = ds_real_timeout_s();
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int done = 0;
    rc = MPI_Test(&q, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(l, "MPI_Ibarrier", rc, err);
    if (done) return DS_OK;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec) > limit) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      fprintf(stderr, "ddpreal: rank %d: the barrier between iterations waited %.0f s for a "
              "rank that did not arrive (stopped or hung); --timeout S sets the limit\n",
              rank, limit);
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Poll like MPI_Barrier for 100 ms (iterations start together), then
     * nap between polls. */
    if ((double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec) > 0.1) {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    }
  }
}

static ds_status mpi_broadcast(struct ds_launcher *l, void *buf, size_t len,
                               int32_t root, struct ds_err *err) {
  if (len > INT_MAX)
    return ds_err_set(err, DS_EINTERNAL, "MPI_Bcast of %zu bytes (more than INT_MAX)", len);
  int rc = MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? DS_OK : mpi_fail(l, "MPI_Bcast", rc, err);
}

static ds_status mpi_gather(struct ds_launcher *l, const void *mine, size_t len,
                            void *all, struct ds_err *err) {
  if (len > INT_MAX)
    return ds_err_set(err, DS_EINTERNAL, "MPI_Gather of %zu bytes (more than INT_MAX)", len);
  int rc = MPI_Gather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, 0,
                      MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? DS_OK : mpi_fail(l, "MPI_Gather", rc, err);
}

/* The first of the variables that is set, as a whole number >= 0, else -1. */
static int32_t env_int(const char *a, const char *b, const char *c) {
  const char *v = getenv(a);
  if (!v || !*v) v = getenv(b);
  if ((!v || !*v) && c) v = getenv(c);
  if (!v || !*v) return -1;
  char *end;
  long x = strtol(v, &end, 10);
  return *end == '\0' && x >= 0 && x <= INT32_MAX ? (int32_t)x : -1;
}

/* Open MPI's mpirun (OMPI_COMM_WORLD_*), PMI-1/2 launchers such as MPICH's
 * hydra or srun --mpi=pmi2 (PMI_*), and PMIx ones such as srun --mpi=pmix
 * (PMIX_RANK; PMIx puts no size in the environment: Slurm's SLURM_NTASKS
 * when there, else unknown until MPI_Init). */
int ds_under_mpi(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL ||
         getenv("PMIX_RANK") != NULL;
}

int32_t ds_mpi_env_rank(void) {
  return env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK");
}

int32_t ds_mpi_env_world(void) {
  if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE"))
    return env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL);
  return getenv("PMIX_RANK") ? env_int("SLURM_NTASKS", "SLURM_NPROCS", NULL) : -1;
}

ds_status ds_launch_mpi(int *argc, char ***argv, ds_launch_main_fn fn, void *arg,
                        struct ds_err *err) {
  int provided = 0, rank = 0, world = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return ds_err_set(err, DS_EIO, "MPI_Init_thread failed (is Open MPI installed and "
                      "was ddpreal started by mpirun?)");
  /* Errors come back as codes so that messages can name the rank and the
   * call; the failing rank then aborts the job itself. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  /* The ranks of this node: a rank's GPU is its place among them, as in
   * nccl-tests (the global rank would pass the node's GPU count on the
   * second node). */
  int local_rank = rank, local_world = world;
  /* Which ranks share a host, hence a clock: the split's lowest world rank
   * of each rank, gathered on every rank (world ints, once). A processor
   * name (hostname) is not used: containers on two hosts may carry the
   * same one, while the shared-memory split is the runtime's own node. */
  int32_t *host = NULL;
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_size(node, &local_world);
    int32_t me = rank, lowest = rank;
    host = malloc((size_t)world * sizeof *host);
    if (!host) {
      /* every rank takes part in the gather below, or the others wait */
      fprintf(stderr, "ddpreal: rank %d: out of memory for the %d ranks' hosts\n", rank, world);
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, ds_status_exit_code(DS_ENOMEM));
    }
    if (MPI_Allreduce(&me, &lowest, 1, MPI_INT32_T, MPI_MIN, node) != MPI_SUCCESS ||
        MPI_Allgather(&lowest, 1, MPI_INT32_T, host, 1, MPI_INT32_T, MPI_COMM_WORLD) !=
            MPI_SUCCESS) {
      free(host);
      host = NULL;
    }
    MPI_Comm_free(&node);
  }
  struct ds_launcher l = {
      .rank = rank,
      .world = world,
      .local_rank = local_rank,
      .local_world = local_world,
      .kind = "mpi",
      .host = host,
      .barrier = mpi_barrier,
      .broadcast = mpi_broadcast,
      .gather = mpi_gather,
      .impl = NULL,
      .finished = 0,
  };
  ds_status st = fn(&l, arg, err);
  free(host);
  if (st != DS_OK && !l.finished) {
    const char *msg = err && err->msg[0] ? err->msg : ds_status_message(st);
    char prefix[32];
    int n = snprintf(prefix, sizeof prefix, "rank %d:", rank);
    /* messages that already name the rank keep one prefix */
    if (strncmp(msg, prefix, (size_t)n) == 0)
      fprintf(stderr, "ddpreal: %s\n", msg);
    else
      fprintf(stderr, "ddpreal: rank %d: %s\n", rank, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, ds_status_exit_code(st));
  }
  MPI_Finalize();
  return st;
}
