/*
 * The fork launcher: ddpreal forks one process per rank on this node (the
 * cuda device's one process per GPU, or several per GPU with
 * --share-gpus) and waits for them.
 *
 * The ranks share one anonymous MAP_SHARED mapping made before the fork: a
 * barrier of their own (a process-shared mutex and condition variable with a
 * generation count, so that a wait has a deadline: --timeout), a staging area for broadcast and gather
 * (any size: bigger transfers go through it in rounds), and one status slot
 * per rank where a failing body leaves its status and message for the
 * parent.
 *
 * Key invariants: the parent never touches CUDA (it is not fork-safe; the
 * children initialise it), and no rank is left waiting: when a child exits
 * with a failure or dies by a signal, the parent kills the others (SIGKILL;
 * a rank stuck in the barrier or in the driver ends at once) and returns
 * the first failure, naming the rank. Children die with the parent
 * (PR_SET_PDEATHSIG). The shared mutex and condition variable are never
 * destroyed, only unmapped: glibc's destroy waits for the waiters to leave,
 * and a killed rank never does (the launcher hung for ever after a failure).
 */
#define _GNU_SOURCE /* prctl's PR_SET_PDEATHSIG */
#include "launch.h"
#include "options.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Staging area shared by all ranks; transfers larger than it go in rounds.
 * Reserved with MAP_NORESERVE: pages cost memory only once touched. */
#define FORK_AREA_BYTES ((size_t)64 << 20)

struct fork_slot {
  int status; /* ds_status of the rank's body; DS_OK until it returns */
  uint64_t passed; /* barriers this rank has arrived at (under the mutex) */
  char msg[DS_ERR_MSG_MAX];
};

struct fork_shared {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int32_t arrived;     /* ranks in the current generation's barrier */
  uint64_t generation; /* bumped when the last rank arrives */
  int32_t world;
  size_t slots_off, area_off, map_bytes;
};

static struct fork_slot *slots(struct fork_shared *sh) {
  return (struct fork_slot *)((char *)sh + sh->slots_off);
}

static unsigned char *area(struct fork_shared *sh) {
  return (unsigned char *)sh + sh->area_off;
}

/* Past the deadline: the ranks that have not reached this barrier, as
 * "1, 3" (called with the mutex held). */
static void missing_ranks(struct fork_shared *sh, uint64_t gen_passed, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int32_t q = 0; q < sh->world && n < cap; q++)
    if (slots(sh)[q].passed < gen_passed)
      n += (size_t)snprintf(buf + n, cap - n, "%s%d", n ? ", " : "", q);
}

static ds_status fork_barrier(struct ds_launcher *l, struct ds_err *err) {
  struct fork_shared *sh = l->impl;
  double limit = ds_real_timeout_s();
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  double whole = (double)(time_t)limit;
  dl.tv_sec += (time_t)limit;
  dl.tv_nsec += (long)((limit - whole) * 1e9);
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  int rc = pthread_mutex_lock(&sh->mu);
  if (rc != 0)
    return ds_err_set(err, DS_EIO, "rank %d: pthread_mutex_lock failed: %s", l->rank,
                      strerror(rc));
  uint64_t gen = sh->generation;
  uint64_t passed = ++slots(sh)[l->rank].passed;
  if (++sh->arrived == sh->world) {
    sh->arrived = 0;
    sh->generation++;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    return DS_OK;
  }
  while (sh->generation == gen) {
    rc = pthread_cond_timedwait(&sh->cv, &sh->mu, &dl);
    if (rc == ETIMEDOUT && sh->generation == gen) {
      char who[256];
      missing_ranks(sh, passed, who, sizeof who);
      pthread_mutex_unlock(&sh->mu);
      return ds_err_set(err, DS_EIO,
                        "rank %d: the barrier waited %g s for rank(s) %s; --timeout S sets "
                        "the limit",
                        l->rank, limit, who);
    }
    if (rc != 0 && rc != ETIMEDOUT) {
      pthread_mutex_unlock(&sh->mu);
      return ds_err_set(err, DS_EIO, "rank %d: pthread_cond_timedwait failed: %s", l->rank,
                        strerror(rc));
    }
  }
  pthread_mutex_unlock(&sh->mu);
  return DS_OK;
}

static ds_status fork_broadcast(struct ds_launcher *l, void *buf, size_t len, int32_t root,
                                struct ds_err *err) {
  struct fork_shared *sh = l->impl;
  if (root < 0 || root >= l->world)
    return ds_err_set(err, DS_EINTERNAL, "fork launcher: broadcast root %d of %d ranks",
                      root, l->world);
  for (size_t done = 0; done < len;) {
    size_t n = len - done < FORK_AREA_BYTES ? len - done : FORK_AREA_BYTES;
    if (l->rank == root) memcpy(area(sh), (char *)buf + done, n);
    DS_CHECK(fork_barrier(l, err));
    if (l->rank != root) memcpy((char *)buf + done, area(sh), n);
    DS_CHECK(fork_barrier(l, err)); /* the area is free again */
    done += n;
  }
  return DS_OK;
}

static ds_status fork_gather(struct ds_launcher *l, const void *mine, size_t len, void *all,
                             struct ds_err *err) {
  struct fork_shared *sh = l->impl;
  size_t chunk = FORK_AREA_BYTES / (size_t)l->world;
  for (size_t done = 0; done < len;) {
    size_t n = len - done < chunk ? len - done : chunk;
    memcpy(area(sh) + (size_t)l->rank * n, (const char *)mine + done, n);
    DS_CHECK(fork_barrier(l, err));
    if (l->rank == 0)
      for (int32_t q = 0; q < l->world; q++)
        memcpy((char *)all + (size_t)q * len + done, area(sh) + (size_t)q * n, n);
    DS_CHECK(fork_barrier(l, err));
    done += n;
  }
  return DS_OK;
}

static void run_child(struct fork_shared *sh, int32_t rank, ds_launch_main_fn fn, void *arg,
                      pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  /* The parent may have died between fork and prctl: no signal then. */
  if (getppid() != parent) _exit(1);
  struct ds_launcher l = {
      .rank = rank,
      .world = sh->world,
      .local_rank = rank,
      .local_world = sh->world,
      .kind = "fork",
      .host = NULL, /* one node: one clock */
      .barrier = fork_barrier,
      .broadcast = fork_broadcast,
      .gather = fork_gather,
      .impl = sh,
      .finished = 0,
  };
  struct ds_err err = {0};
  ds_status st = fn(&l, arg, &err);
  struct fork_slot *slot = &slots(sh)[rank];
  snprintf(slot->msg, sizeof slot->msg, "%s",
           err.msg[0] ? err.msg : ds_status_message(st));
  slot->status = (int)st;
  fflush(NULL);
  /* _exit: the parent's atexit handlers and stdio buffers are not ours */
  _exit(ds_status_exit_code(st));
}

static void kill_all(const pid_t *pid, const int *alive, int32_t world) {
  for (int32_t q = 0; q < world; q++)
    if (alive[q]) kill(pid[q], SIGKILL);
}

ds_status ds_launch_fork(int32_t world, ds_launch_main_fn fn, void *arg, struct ds_err *err) {
  if (world < 1)
    return ds_err_set(err, DS_EINTERNAL, "fork launcher: %d ranks", world);
  size_t slots_off = (sizeof(struct fork_shared) + 63) / 64 * 64;
  size_t area_off = (slots_off + (size_t)world * sizeof(struct fork_slot) + 4095) / 4096 * 4096;
  size_t map_bytes = area_off + FORK_AREA_BYTES;
  void *m = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED)
    return ds_err_set(err, DS_ENOMEM, "fork launcher: mmap of %zu shared bytes failed: %s",
                      map_bytes, strerror(errno));
  struct fork_shared *sh = m;
  sh->world = world;
  sh->slots_off = slots_off;
  sh->area_off = area_off;
  sh->map_bytes = map_bytes;
  pthread_mutexattr_t ma;
  pthread_condattr_t ca;
  int rc = pthread_mutexattr_init(&ma);
  if (rc == 0) rc = pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  if (rc == 0) rc = pthread_mutex_init(&sh->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  if (rc == 0) rc = pthread_condattr_init(&ca);
  if (rc == 0) rc = pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
  if (rc == 0) rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (rc == 0) rc = pthread_cond_init(&sh->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (rc != 0) {
    munmap(m, map_bytes);
    return ds_err_set(err, DS_EIO, "fork launcher: shared barrier setup failed: %s",
                      strerror(rc));
  }
  pid_t *pid = calloc((size_t)world, sizeof *pid);
  int *alive = calloc((size_t)world, sizeof *alive);
  ds_status st = DS_OK;
  if (!pid || !alive) {
    st = ds_err_set(err, DS_ENOMEM, "fork launcher: out of memory");
    goto out;
  }
  fflush(NULL); /* or the children would write the parent's buffered output again */
  pid_t self = getpid();
  for (int32_t q = 0; q < world; q++) {
    pid_t p = fork();
    if (p == 0) run_child(sh, q, fn, arg, self);
    if (p < 0) {
      st = ds_err_set(err, DS_EIO, "fork launcher: fork of rank %d failed: %s", q,
                      strerror(errno));
      kill_all(pid, alive, world);
      break;
    }
    pid[q] = p;
    alive[q] = 1;
  }
  for (;;) {
    int any = 0;
    for (int32_t q = 0; q < world; q++) any |= alive[q];
    if (!any) break;
    int ws = 0;
    pid_t p = waitpid(-1, &ws, 0);
    if (p < 0) {
      if (errno == EINTR) continue;
      if (st == DS_OK)
        st = ds_err_set(err, DS_EIO, "fork launcher: waitpid failed: %s", strerror(errno));
      break;
    }
    int32_t q = 0;
    while (q < world && pid[q] != p) q++;
    if (q == world) continue; /* not one of ours */
    alive[q] = 0;
    int ok = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    if (ok || st != DS_OK) continue; /* later failures follow from the first */
    const struct fork_slot *slot = &slots(sh)[q];
    char prefix[32];
    snprintf(prefix, sizeof prefix, "rank %d:", q);
    if (WIFEXITED(ws) && slot->status != DS_OK && slot->status < DS_STATUS_COUNT)
      st = ds_err_set(err, (ds_status)slot->status, "%s%s%s",
                      strncmp(slot->msg, prefix, strlen(prefix)) ? prefix : "",
                      strncmp(slot->msg, prefix, strlen(prefix)) ? " " : "", slot->msg);
    else if (WIFEXITED(ws))
      st = ds_err_set(err, DS_EIO, "rank %d exited with status %d", q, WEXITSTATUS(ws));
    else if (WIFSIGNALED(ws))
      st = ds_err_set(err, DS_EIO, "rank %d died from signal %d (%s)", q, WTERMSIG(ws),
                      strsignal(WTERMSIG(ws)));
    else
      st = ds_err_set(err, DS_EIO, "rank %d ended abnormally (wait status %#x)", q, ws);
    kill_all(pid, alive, world);
  }
out:
  /* No pthread_*_destroy: see the header comment (killed waiters). */
  munmap(m, map_bytes);
  free(pid);
  free(alive);
  return st;
}
