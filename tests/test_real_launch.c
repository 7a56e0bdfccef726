/*
 * The launchers (real/launch_*.c) alone. The MPI launcher's view of the
 * environment before MPI_Init (which launcher started us, rank, world).
 * The fork launcher: ranks are forked processes
 * running a test body. A rank that fails while the others wait in the
 * shared barrier must end the job promptly with that rank's message (the
 * launcher used to hang for ever in pthread_barrier_destroy, waiting for
 * waiters it had killed), and a rank that never reaches the barrier must
 * not hold the others past --timeout (DDPREAL_TIMEOUT_S): the error names
 * the missing rank. Each test has a Criterion time limit well above what it
 * needs, so a hang fails instead of blocking the suite.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "real/launch.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Rank 1 fails at once; the others wait in the barrier for it. */
static ds_status rank1_fails(struct ds_launcher *l, void *arg, struct ds_err *err) {
  (void)arg;
  if (l->rank == 1) return ds_err_set(err, DS_EINPUT, "boom");
  return l->barrier(l, err);
}

Test(real_launch, a_failing_rank_ends_the_waiting_ones_and_its_error_comes_back,
     .timeout = 60) {
  setenv("DDPREAL_TIMEOUT_S", "300", 1); /* the failure, not the limit, must end it */
  struct ds_err err = {0};
  double t0 = now_s();
  ds_status st = ds_launch_fork(3, rank1_fails, NULL, &err);
  double took = now_s() - t0;
  cr_assert_eq(st, DS_EINPUT, "status %d: %s", (int)st, err.msg);
  cr_assert_str_eq(err.msg, "rank 1: boom");
  cr_assert_lt(took, 30.0, "the launcher took %.1f s to report a failed rank", took);
}

/* Rank 1 never reaches the barrier (stuck, say, in the driver). */
static ds_status rank1_hangs(struct ds_launcher *l, void *arg, struct ds_err *err) {
  (void)arg;
  if (l->rank == 1)
    for (;;) pause();
  return l->barrier(l, err);
}

Test(real_launch, the_barrier_gives_up_after_the_timeout_naming_the_missing_rank,
     .timeout = 60) {
  setenv("DDPREAL_TIMEOUT_S", "1", 1);
  struct ds_err err = {0};
  double t0 = now_s();
  ds_status st = ds_launch_fork(3, rank1_hangs, NULL, &err);
  double took = now_s() - t0;
  cr_assert_eq(st, DS_EIO, "status %d: %s", (int)st, err.msg);
  cr_assert(strstr(err.msg, "the barrier waited 1 s for rank(s) 1;") != NULL, "%s", err.msg);
  cr_assert_geq(took, 1.0, "gave up after %.2f s, before the 1 s limit", took);
  cr_assert_lt(took, 30.0, "took %.1f s past a 1 s limit", took);
}

/* Many barriers in a row with every rank present pass (the generation
 * count lets a fast rank enter the next barrier while slow ones leave). */
static ds_status many_barriers(struct ds_launcher *l, void *arg, struct ds_err *err) {
  (void)arg;
  for (int i = 0; i < 2000; i++) DS_CHECK(l->barrier(l, err));
  return DS_OK;
}

Test(real_launch, consecutive_barriers_with_every_rank_pass, .timeout = 120) {
  setenv("DDPREAL_TIMEOUT_S", "60", 1);
  struct ds_err err = {0};
  cr_assert_eq(ds_launch_fork(4, many_barriers, NULL, &err), DS_OK, "%s", err.msg);
}

/* Before MPI_Init ddpreal learns from the environment whether an MPI
 * launcher started it, its rank and the world size. srun --mpi=pmix sets
 * PMIX_RANK (PMIx has no size variable; Slurm's SLURM_NTASKS is there):
 * such a job used to be taken for no MPI at all. */
Test(real_launch, a_pmix_launch_is_recognised) {
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("PMI_SIZE");
  unsetenv("PMI_RANK");
  unsetenv("SLURM_NTASKS");
  unsetenv("SLURM_NPROCS");
  unsetenv("PMIX_RANK");
  cr_assert_eq(ds_under_mpi(), 0);
  cr_assert_eq(ds_mpi_env_rank(), -1);
  setenv("PMIX_RANK", "3", 1);
  cr_assert_eq(ds_under_mpi(), 1);
  cr_assert_eq(ds_mpi_env_rank(), 3);
  cr_assert_eq(ds_mpi_env_world(), -1, "PMIx alone does not say the size");
  setenv("SLURM_NTASKS", "8", 1);
  cr_assert_eq(ds_mpi_env_world(), 8);
  /* Open MPI's own variables win where both are set */
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  cr_assert_eq(ds_mpi_env_rank(), 1);
  cr_assert_eq(ds_mpi_env_world(), 4);
}
