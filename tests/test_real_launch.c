/*
 * The launchers (real/launch_*.c) alone. The MPI launcher's view of the
 * environment before MPI_Init (which launcher started us, rank, world).
 * The fork launcher: ranks are forked processes
 * running a test body. A rank that fails while the others wait in the
 * shared barrier must end the job promptly with that rank's message (the
 * launcher used to hang for ever in pthread_barrier_destroy, waiting for
 * waiters it had killed), and a rank that never reaches the barrier must
 * not hold the others past --timeout (DDPREAL_TIMEOUT_S): the error names
 * the missing rank. Each launch runs in a child process that the test kills
 * past a limit well above what it needs (run_bounded), so a hang fails
 * instead of blocking the suite (not Criterion's .timeout, which leaks
 * under --jobs 2 and ASan).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "real/launch.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ds_launch_fork(world, fn) in a child process, killed past limit_s: 1
 * when it returned (status and message in *st and err), 0 when it hung. */
static int run_bounded(int32_t world, ds_launch_main_fn fn, double limit_s, ds_status *st,
                       struct ds_err *err) {
  int fd[2];
  cr_assert_eq(pipe(fd), 0);
  fflush(NULL);
  pid_t p = fork();
  cr_assert_geq(p, 0);
  if (p == 0) {
    close(fd[0]);
    struct ds_err e = {0};
    ds_status s = ds_launch_fork(world, fn, NULL, &e);
    if (write(fd[1], &s, sizeof s) != (ssize_t)sizeof s ||
        write(fd[1], &e, sizeof e) != (ssize_t)sizeof e)
      _exit(3);
    _exit(0);
  }
  close(fd[1]);
  double t0 = now_s();
  int ws = 0, done = 0;
  while (!done && now_s() - t0 < limit_s) {
    if (waitpid(p, &ws, WNOHANG) == p) done = 1;
    else nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  if (!done) {
    kill(p, SIGKILL); /* its ranks die with it (PR_SET_PDEATHSIG) */
    waitpid(p, &ws, 0);
    close(fd[0]);
    return 0;
  }
  cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the launching child failed (%#x)", ws);
  cr_assert_eq(read(fd[0], st, sizeof *st), (ssize_t)sizeof *st);
  cr_assert_eq(read(fd[0], err, sizeof *err), (ssize_t)sizeof *err);
  close(fd[0]);
  return 1;
}

/* Rank 1 fails at once; the others wait in the barrier for it. */
static ds_status rank1_fails(struct ds_launcher *l, void *arg, struct ds_err *err) {
  (void)arg;
  if (l->rank == 1) return ds_err_set(err, DS_EINPUT, "boom");
  return l->barrier(l, err);
}

Test(real_launch, a_failing_rank_ends_the_waiting_ones_and_its_error_comes_back) {
  setenv("DDPREAL_TIMEOUT_S", "300", 1); /* the failure, not the limit, must end it */
  struct ds_err err = {0};
  ds_status st = DS_OK;
  double t0 = now_s();
  cr_assert(run_bounded(3, rank1_fails, 30, &st, &err),
            "the launcher hung after rank 1 failed (killed after 30 s)");
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

Test(real_launch, the_barrier_gives_up_after_the_timeout_naming_the_missing_rank) {
  setenv("DDPREAL_TIMEOUT_S", "1", 1);
  struct ds_err err = {0};
  ds_status st = DS_OK;
  double t0 = now_s();
  cr_assert(run_bounded(3, rank1_hangs, 30, &st, &err),
            "the barrier did not give up within 30 s of a 1 s limit");
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

Test(real_launch, consecutive_barriers_with_every_rank_pass) {
  setenv("DDPREAL_TIMEOUT_S", "60", 1);
  struct ds_err err = {0};
  ds_status st = DS_EINTERNAL;
  cr_assert(run_bounded(4, many_barriers, 120, &st, &err), "2000 barriers took over 120 s");
  cr_assert_eq(st, DS_OK, "%s", err.msg);
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
