/*
 * The replay loop, the same for every device and launcher.
 *
 * Each rank runs warmup + iters iterations: a barrier, begin_iter (op times
 * are relative to it), every op of the rank issued in schedule order,
 * end_iter. The device enforces stream order and deps; this loop adds
 * nothing but the barrier between iterations, so the measured iteration is
 * what the schedule allows.
 *
 * Results travel in one fixed-size record per rank (launcher gather): the
 * rank's wrong-element count, its host clock at each kept begin_iter, and a
 * start/end pair per op of the rank and kept iteration (records are as long
 * as the busiest rank's; a shorter rank's tail stays -1). The record's size
 * is checked before any rank starts (replay_check.c): one MPI_Gather
 * carries at most INT_MAX bytes, so --iters has a ceiling that the message
 * names. Rank 0 places each rank's iteration k at that rank's own begin of it, through
 * one map of the rank's clock (the median over iterations of its begin less rank 0's, all
 * begins following one barrier; for a rank on another host, a drift fitted too;
 * ds_replay_clocks says why), builds one trace row per op per iteration and writes the
 * trace atomically; it is the only writer. The trace header has a "# clock:" line per rank
 * on another host than rank 0's, saying whether its drift was fitted.
 */
#include "replay.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "traces/trace.h"
#include "replay_check.h"
#include "stats.h"

#define DESCRIBE_MAX 4096

static int64_t host_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The "# clock:" line of a rank on another host than rank 0's (none for
 * the others: a run on one host has the header it always had); returns
 * its length, as snprintf. */
#define CLOCK_LINE_MAX 200
static size_t clock_line(char *buf, size_t cap, int32_t q, int32_t iters,
                         const struct ds_replay_clock *c) {
  int n = 0;
  switch (c->fit) {
  case DS_REPLAY_CLOCK_SAME_HOST:
    return 0;
  case DS_REPLAY_CLOCK_FITTED:
    n = snprintf(buf, cap, "# clock: rank %d (another host): drift %+.3f ppm against rank 0's, "
                 "fitted over %d iterations\n", q, c->fitted_ppm, iters);
    break;
  case DS_REPLAY_CLOCK_FEW_ITERS:
    n = snprintf(buf, cap, "# clock: rank %d (another host): one shift, drift not fitted "
                 "(%d iteration%s, fewer than %d)\n", q, iters, iters == 1 ? "" : "s",
                 DS_REPLAY_FIT_MIN_ITERS);
    break;
  case DS_REPLAY_CLOCK_IMPLAUSIBLE:
    n = snprintf(buf, cap, "# clock: rank %d (another host): one shift, the fitted drift "
                 "%+.1f ppm not applied (past the %.0f ppm a clock runs at most)\n", q,
                 c->fitted_ppm, DS_REPLAY_MAX_DRIFT_PPM);
    break;
  case DS_REPLAY_CLOCK_NO_FIT:
    n = snprintf(buf, cap, "# clock: rank %d (another host): one shift, the drift fit did not "
                 "converge\n", q);
    break;
  }
  return n > 0 ? (size_t)n : 0;
}

/* Rank 0: the trace rows, the per-iteration wall times and the summary. */
static ds_status finish(struct ds_launcher *l, struct ds_replay *rp, const int64_t *all,
                        const size_t *own, size_t most, const char *describe,
                        struct ds_err *err) {
  const struct ds_schedule *s = rp->sched;
  size_t n = s->n_ops, len = ds_replay_rec_len(most, rp->iters);
  struct ds_trace *t = NULL;
  double *wall_ms = calloc((size_t)rp->iters, sizeof *wall_ms);
  struct ds_replay_clock *clock = malloc((size_t)l->world * sizeof *clock);
  size_t extra_cap = DESCRIBE_MAX + 256 + (size_t)l->world * CLOCK_LINE_MAX;
  char *extra = malloc(extra_cap);
  ds_status st = ds_trace_new("real", &t);
  if (st != DS_OK || !wall_ms || !clock || !extra ||
      ds_replay_clocks(all, len, l->world, rp->iters, l->host, clock) != 0) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory building the trace");
    goto out;
  }
  rp->wrong = 0;
  for (int32_t q = 0; q < l->world; q++) rp->wrong += all[(size_t)q * len];
  for (int32_t k = 0; k < rp->iters; k++) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
      int64_t start, end;
      if (ds_replay_place(all, len, clock, s->ops[i].rank, most, rp->iters, k, own[i], &start,
                          &end) != 0) {
        st = ds_err_set(err, DS_EINTERNAL,
                        "the %s device reported no time (or an end before the start) "
                        "for op %" PRId64 " of rank %d in iteration %d",
                        rp->dev->name, s->ops[i].id, s->ops[i].rank, k);
        goto out;
      }
      if (start < lo) lo = start;
      if (end > hi) hi = end;
      struct ds_trace_row row = {s, (uint32_t)i, k, start, end};
      DS_CHECK_GOTO(ds_trace_add(t, &row), st, nomem);
    }
    wall_ms[k] = n ? (double)(hi - lo) / 1e6 : 0;
  }
  size_t used = (size_t)snprintf(extra, extra_cap, "%s# device: %s\n# ranks: %d\n# launcher: %s\n",
                                 describe, rp->dev->name, l->world, l->kind);
  for (int32_t q = 0; q < l->world && used < extra_cap; q++)
    used += clock_line(extra + used, extra_cap - used, q, rp->iters, &clock[q]);
  /* no seed line: the replay draws nothing (a "# seed: 0" read as a seed) */
  struct ds_csv_meta meta = {"ddpreal " DS_REAL_VERSION, rp->inputs, 0, extra, 1};
  DS_CHECK_GOTO(ds_trace_write_csv(rp->trace_path, t, &meta, err), st, out);
  struct ds_quantiles q = ds_quantiles_of(wall_ms, (size_t)rp->iters);
  rp->p50_ms = q.p50;
  rp->p95_ms = q.p95;
  rp->p99_ms = q.p99;
  fprintf(rp->out,
          "ddpreal: %s: %zu op%s on %d rank%s, %d iteration%s after %d warmup "
          "(device %s, launcher %s, compute %s)\n",
          rp->schedule_path, n, n == 1 ? "" : "s", l->world, l->world == 1 ? "" : "s",
          rp->iters, rp->iters == 1 ? "" : "s", rp->warmup, rp->dev->name, l->kind,
          rp->compute == DS_COMPUTE_GEMM ? "gemm" : "spin");
  fprintf(rp->out,
          "  iteration  p50 %.3f ms  p95 %.3f ms  p99 %.3f ms  (min %.3f, max %.3f; "
          "max end - min start over ranks)\n",
          q.p50, q.p95, q.p99, q.min, q.max);
  fprintf(rp->out, "  trace      %s\n", rp->trace_path);
  fprintf(rp->out, "#wrong: %" PRId64 "\n", rp->wrong);
  if (fflush(rp->out) != 0)
    st = ds_err_set(err, DS_EIO, "cannot write the summary to standard output");
  else if (rp->wrong > 0)
    st = ds_err_set(err, DS_EIO,
                    "#wrong: %" PRId64 " elements of collective results differ from the "
                    "expected values (the trace %s was written)",
                    rp->wrong, rp->trace_path);
  goto out;
nomem:
  ds_err_set(err, st, "out of memory building the trace");
out:
  ds_trace_free(t);
  free(wall_ms);
  free(clock);
  free(extra);
  return st;
}

ds_status ds_replay_rank(struct ds_launcher *l, void *arg, struct ds_err *err) {
  struct ds_replay *rp = arg;
  const struct ds_schedule *s = rp->sched;
  const struct ds_device *dev = rp->dev;
  size_t n = s->n_ops;
  if (l->world != s->world_size)
    return ds_err_set(err, DS_EUSAGE,
                      "the schedule %s has %d ranks but the %s launcher started %d",
                      rp->schedule_path, s->world_size, l->kind, l->world);
  struct ds_dev_config cfg = {
      .sched = s,
      .rank = l->rank,
      .world = l->world,
      .compute = rp->compute,
      .device_ordinal = l->local_rank,
      .local_world = l->local_world,
      .shared = rp->shared,
      .launcher = l,
  };
  struct ds_dev_rank *dr = NULL;
  size_t *own = malloc((n ? n : 1) * sizeof *own);
  size_t most = own ? ds_replay_own_places(s, own) : SIZE_MAX;
  size_t len = most == SIZE_MAX ? 1 : ds_replay_rec_len(most, rp->iters);
  int64_t *start = malloc((n ? n : 1) * sizeof *start);
  int64_t *end = malloc((n ? n : 1) * sizeof *end);
  int64_t *rec = malloc(len * sizeof *rec);
  int64_t *all = NULL;
  char *describe = calloc(DESCRIBE_MAX, 1);
  ds_status st = DS_OK;
  if (most == SIZE_MAX || !start || !end || !rec || !describe) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
    goto out;
  }
  if (l->rank == 0 && !(all = malloc((size_t)l->world * len * sizeof *all))) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory for the %d ranks' times", l->world);
    goto out;
  }
  for (size_t k = 0; k < len; k++) rec[k] = -1;
  DS_CHECK_GOTO(dev->open(&cfg, &dr, err), st, out);
  for (int32_t it = 0; it < rp->warmup + rp->iters; it++) {
    int32_t k = it - rp->warmup;
    DS_CHECK_GOTO(l->barrier(l, err), st, out);
    int64_t begin = host_ns();
    DS_CHECK_GOTO(dev->begin_iter(dr, err), st, out);
    for (size_t i = 0; i < n; i++) {
      start[i] = end[i] = -1;
      if (s->ops[i].rank == l->rank) DS_CHECK_GOTO(dev->issue(dr, i, err), st, out);
    }
    DS_CHECK_GOTO(dev->end_iter(dr, start, end, err), st, out);
    if (k < 0) continue;
    rec[1 + k] = begin;
    for (size_t i = 0; i < n; i++) {
      if (s->ops[i].rank != l->rank) continue;
      size_t at = ds_replay_rec_time(most, rp->iters, k, own[i]);
      rec[at] = start[i];
      rec[at + 1] = end[i];
    }
  }
  rec[0] = dev->wrong(dr);
  if (l->rank == 0) dev->describe(dr, describe, DESCRIBE_MAX);
  dev->close(dr);
  dr = NULL;
  DS_CHECK_GOTO(l->gather(l, rec, len * sizeof *rec, all, err), st, out);
  if (l->rank == 0) {
    /* Everything below happens after the last communication: no other
     * rank waits on rank 0 any more. */
    l->finished = 1;
    st = finish(l, rp, all, own, most, describe, err);
  }
out:
  if (dr) dev->close(dr);
  free(own);
  free(start);
  free(end);
  free(rec);
  free(all);
  free(describe);
  return st;
}

/* ---- the command ------------------------------------------------------ */

ds_status ds_replay_command(int *argc, char ***argv, const struct ds_real_options *opt,
                            FILE *out, struct ds_err *err) {
  const struct ds_device *dev = &ds_device_cpu;
#ifdef DS_HAVE_CUDA
  if (opt->device == DS_REAL_DEVICE_CUDA) dev = &ds_device_cuda;
#endif
  int use_mpi = ds_under_mpi() || opt->device != DS_REAL_DEVICE_CUDA;
  struct ds_schedule *s = NULL;
  DS_CHECK(ds_replay_check(opt, use_mpi, &s, NULL, err));
  int32_t world = s->world_size;
  ds_status st = DS_OK;
  char inputs[1024];
  snprintf(inputs, sizeof inputs, "schedule=%s iters=%d warmup=%d device=%s compute=%s%s",
           opt->schedule, opt->iters, opt->warmup, dev->name,
           opt->compute == DS_COMPUTE_GEMM ? "gemm" : "spin",
           opt->share_gpus ? " share_gpus=1" : "");
  struct ds_replay rp = {
      .sched = s,
      .dev = dev,
      .compute = opt->compute,
      .iters = opt->iters,
      .warmup = opt->warmup,
      .shared = opt->share_gpus,
      .trace_path = opt->trace,
      .schedule_path = opt->schedule,
      .inputs = inputs,
      /* --trace - puts the trace on standard output: the summary goes to
       * standard error then, as ddpsim's does (docs/analysis.md) */
      .out = strcmp(opt->trace, "-") == 0 ? stderr : out,
  };
  if (ds_under_mpi()) {
    int32_t np = ds_mpi_env_world();
    /* np -1: the launcher did not say (PMIx without Slurm); ds_replay_rank
     * compares the MPI world after MPI_Init */
    if (np >= 0 && np != world)
      st = ds_err_set(err, DS_EUSAGE,
                      "the schedule %s has %d ranks (world size %d) but mpirun started %d "
                      "process%s: run mpirun -np %d",
                      opt->schedule, world, world, np, np == 1 ? "" : "es", world);
    else
      st = ds_launch_mpi(argc, argv, ds_replay_rank, &rp, err);
  } else if (opt->device == DS_REAL_DEVICE_CUDA) {
#ifdef DS_HAVE_CUDA
    st = ds_launch_fork(world, ds_replay_rank, &rp, err);
#endif
  } else if (world > 1) {
    st = ds_err_set(err, DS_EUSAGE,
                    "the cpu device runs one MPI process per rank: the schedule %s has %d "
                    "ranks, so run it as: mpirun -np %d ddpreal --device cpu ...",
                    opt->schedule, world, world);
  } else {
    st = ds_launch_mpi(argc, argv, ds_replay_rank, &rp, err);
  }
  ds_schedule_free(s);
  return st;
}
