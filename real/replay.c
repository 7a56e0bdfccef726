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
 * is checked before any rank starts: one MPI_Gather carries at most INT_MAX
 * bytes, so --iters has a ceiling that the message names. Rank 0 places
 * each rank's iteration k at that rank's own begin of it, less one shift
 * per rank (the median over iterations of its begin less rank 0's, all
 * begins following one barrier; ds_replay_shifts says why), builds one trace row per op per
 * iteration and writes the trace atomically; it is the only writer.
 */
#include "replay.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "traces/trace.h"
#include "schedule_check.h"
#include "spin_check.h"
#include "stats.h"

#define DESCRIBE_MAX 4096

static int64_t host_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Each op's place among its rank's ops (own[i], when own is not NULL) and
 * the most ops one rank has; SIZE_MAX when out of memory. */
static size_t own_places(const struct ds_schedule *s, size_t *own) {
  size_t *count = calloc((size_t)s->world_size, sizeof *count);
  if (!count) return SIZE_MAX;
  size_t most = 0;
  for (size_t i = 0; i < s->n_ops; i++) {
    size_t k = count[s->ops[i].rank]++;
    if (own) own[i] = k;
    if (k + 1 > most) most = k + 1;
  }
  free(count);
  return most;
}

/* Record layout, in int64s; n_ops is the busiest rank's op count. */
size_t ds_replay_rec_len(size_t n_ops, int32_t iters) {
  return 1 + (size_t)iters + 2 * n_ops * (size_t)iters;
}
size_t ds_replay_rec_time(size_t n_ops, int32_t iters, int32_t k, size_t i) {
  return 1 + (size_t)iters + 2 * ((size_t)k * n_ops + i);
}

/* Each rank's clock is placed on the trace by one shift (ds_replay_shifts)
 * and its iteration k at its own begin of k less that shift; op times
 * are read on the rank's own clock (CLOCK_MONOTONIC of its host).
 *
 * Why a single shift per rank keeps iterations in order: on one rank,
 * iteration k+1 begins after the barrier that follows the end of its
 * iteration k, so each rank's ops of k+1 are placed after its ops of k,
 * and the latest end of k+1 over the ranks is no earlier than that of k
 * (what ddpsim analyze checks, ds_trace_check_iter_ends): true for any
 * shift that is the same in every iteration. Placing every rank's
 * iteration k at rank 0's begin of k (ddpreal before 4520938) moved the
 * shift with rank 0's delays: a rank 0 descheduled between the barrier
 * and its begin moved every other rank's iteration late by that delay,
 * while their ops, waiting for rank 0 in collectives, already held it;
 * the iteration then ended after the next one (bench/real_trace_order.sh).
 *
 * Which shift: every iteration's begins follow one barrier, so rank q's
 * begin less rank 0's is the clocks' difference plus q's delay after the
 * barrier less rank 0's, a delay that is ~us and now and then a
 * descheduling (ms). The median over the kept iterations ignores those;
 * the first kept iteration alone (4520938) kept its delays in every
 * iteration: a rank descheduled 50 ms before its first kept begin had its
 * ops 50 ms early in every iteration, each iteration's max end - min start
 * (the p50 ddpreal prints) 50 ms long. What it does not correct: two
 * hosts' clocks that run at different rates (ppm: NTP slews
 * CLOCK_MONOTONIC) drift apart over the run, e.g. 10 ppm over 10 s is
 * 100 us, half of it at either end from the median; ranks on one host
 * share one clock and do not drift. */
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int ds_replay_shifts(const int64_t *all, size_t len, int32_t world, int32_t iters,
                     int64_t *shift) {
  int64_t *d = malloc((iters > 0 ? (size_t)iters : 1) * sizeof *d);
  if (!d) return -1;
  int64_t base = INT64_MAX;
  for (int32_t q = 0; q < world; q++) {
    const int64_t *rec = all + (size_t)q * len;
    for (int32_t k = 0; k < iters; k++) d[k] = rec[1 + k] - all[1 + k];
    qsort(d, (size_t)iters, sizeof *d, cmp_i64);
    shift[q] = iters > 0 ? d[(iters - 1) / 2] : 0;
    /* the earliest placed begin of iteration 0 goes at 0 */
    if (iters > 0 && rec[1] - shift[q] < base) base = rec[1] - shift[q];
  }
  for (int32_t q = 0; q < world; q++) shift[q] += iters > 0 ? base : 0;
  free(d);
  return 0;
}

int ds_replay_place(const int64_t *all, size_t len, const int64_t *shift, int32_t rank,
                    size_t most, int32_t iters, int32_t k, size_t own, int64_t *start,
                    int64_t *end) {
  const int64_t *rec = all + (size_t)rank * len;
  size_t at = ds_replay_rec_time(most, iters, k, own);
  int64_t s = rec[at], e = rec[at + 1];
  if (s < 0 || e < s) return -1;
  int64_t offset = rec[1 + (size_t)k] - shift[rank];
  *start = offset + s;
  *end = offset + e;
  return 0;
}

/* Rank 0: the trace rows, the per-iteration wall times and the summary. */
static ds_status finish(struct ds_launcher *l, struct ds_replay *rp, const int64_t *all,
                        const size_t *own, size_t most, const char *describe,
                        struct ds_err *err) {
  const struct ds_schedule *s = rp->sched;
  size_t n = s->n_ops, len = ds_replay_rec_len(most, rp->iters);
  struct ds_trace *t = NULL;
  double *wall_ms = calloc((size_t)rp->iters, sizeof *wall_ms);
  int64_t *shift = malloc((size_t)l->world * sizeof *shift);
  char *extra = malloc(DESCRIBE_MAX + 256);
  ds_status st = ds_trace_new("real", &t);
  if (st != DS_OK || !wall_ms || !shift || !extra ||
      ds_replay_shifts(all, len, l->world, rp->iters, shift) != 0) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory building the trace");
    goto out;
  }
  rp->wrong = 0;
  for (int32_t q = 0; q < l->world; q++) rp->wrong += all[(size_t)q * len];
  for (int32_t k = 0; k < rp->iters; k++) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
      int64_t start, end;
      if (ds_replay_place(all, len, shift, s->ops[i].rank, most, rp->iters, k, own[i], &start,
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
  snprintf(extra, DESCRIBE_MAX + 256, "%s# device: %s\n# ranks: %d\n# launcher: %s\n",
           describe, rp->dev->name, l->world, l->kind);
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
  free(shift);
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
  size_t most = own ? own_places(s, own) : SIZE_MAX;
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

/* d seconds in the unit a person reads best: "(2 s)", "(11.6 days)". */
static void say_s(double d, char *buf, size_t cap) {
  snprintf(buf, cap, "%.3g %s", d >= 86400 ? d / 86400 : d >= 3600 ? d / 3600 : d,
           d >= 86400 ? "days" : d >= 3600 ? "hours" : "s");
}

/* What to change, after a sum of us microseconds past the limit. */
static void say_fix(double us, char *buf, size_t cap) {
  double s = us * 1e-6;
  if (s < 1e6)
    snprintf(buf, cap, "correct the schedule, or give a --timeout above %g s (at most 1e6 s)",
             s);
  else
    snprintf(buf, cap, "correct the schedule (--timeout takes at most 1e6 s)");
}

/* --timeout bounds every step of the replay: the waits for other ranks and
 * the GPU at run time, and what a rank spins for its dur_us here, before
 * any rank starts, since its length is known (spin_check.c says which sums
 * each wait sees). Past the limit is bad input: a 1e12 us op spun for 12
 * days; with more than one rank, spins that keep a rank from a collective
 * (or from the end of its iteration) longer than the limit end the job
 * when the others' wait runs out, after the whole limit, blaming a rank
 * that "did not arrive". In order: one op (the clearest message), the
 * other ranks' waits (more than one rank), and the cuda device's wait for
 * an iteration's GPU work (any number of ranks). */
static ds_status check_spins(struct ds_schedule *s, const size_t *op_line,
                             const struct ds_real_options *opt, struct ds_err *err) {
  double limit_s = ds_real_timeout_s();
  char took[64], fix[160];
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (!ds_spin_op_spins(o, opt->compute) || !(o->dur_us * 1e-6 > limit_s)) continue;
    say_s(o->dur_us * 1e-6, took, sizeof took);
    return ds_err_set(err, DS_EINPUT,
                      "%s:%zu: column 'dur_us': op %" PRId64 " (%s on rank %d) spins %g us "
                      "(%s), longer than --timeout %g s, the longest one step of the "
                      "replay may take; correct the schedule, or give a larger --timeout "
                      "(at most 1e6 s)",
                      opt->schedule, op_line[i], o->id, ds_op_kind_name(o->kind), o->rank,
                      o->dur_us, took, limit_s);
  }
  struct ds_spin_path p;
  if (s->world_size > 1) {
    DS_CHECK(ds_spin_longest_wait(s, opt->compute, DS_SPIN_EXACT_STEPS, &p, err));
    if (p.us * 1e-6 > limit_s) {
      const struct ds_op *a = &s->ops[p.first], *b = &s->ops[p.last];
      char after[160];
      if (p.since == SIZE_MAX)
        snprintf(after, sizeof after, "the start of its iteration");
      else
        snprintf(after, sizeof after, "op %" PRId64 " (%s coll %" PRId64 ", line %zu) ends",
                 s->ops[p.since].id, ds_op_kind_name(s->ops[p.since].kind),
                 s->ops[p.since].coll, op_line[p.since]);
      say_s(p.us * 1e-6, took, sizeof took);
      say_fix(p.us, fix, sizeof fix);
      if (p.ends_at_collective)
        return ds_err_set(err, DS_EINPUT,
                          "%s:%zu: column 'dur_us': rank %d's spins keep it from entering op %"
                          PRId64 " (%s coll %" PRId64 ", line %zu) until %g us (%s) after %s, "
                          "the earliest the other ranks enter it: a chain of %zu spinning "
                          "ops (stream order and deps) from op %" PRId64 " (%s, this line); "
                          "longer than --timeout %g s, the longest they wait there (the job "
                          "would end after %g s, saying rank %d did not arrive); %s",
                          opt->schedule, op_line[p.first], a->rank, b->id,
                          ds_op_kind_name(b->kind), b->coll, op_line[p.last], p.us, took,
                          after, p.n_spins, a->id, ds_op_kind_name(a->kind), limit_s, limit_s,
                          a->rank, fix);
      return ds_err_set(err, DS_EINPUT,
                        "%s:%zu: column 'dur_us': rank %d's spins end its iteration %g us "
                        "(%s) after %s, the earliest the other ranks can end theirs: a chain "
                        "of %zu spinning ops (stream order and deps) from op %" PRId64 " (%s, "
                        "this line) to op %" PRId64 " (%s, line %zu); longer than --timeout "
                        "%g s, the longest they wait for it in the barrier before the next "
                        "iteration; %s",
                        opt->schedule, op_line[p.first], a->rank, p.us, took, after, p.n_spins,
                        a->id, ds_op_kind_name(a->kind), b->id, ds_op_kind_name(b->kind),
                        op_line[p.last], limit_s, fix);
    }
  }
  if (opt->device == DS_REAL_DEVICE_CUDA) {
    DS_CHECK(ds_spin_longest_iteration(s, opt->compute, &p, err));
    if (p.us * 1e-6 > limit_s) {
      const struct ds_op *a = &s->ops[p.first], *b = &s->ops[p.last];
      say_s(p.us * 1e-6, took, sizeof took);
      say_fix(p.us, fix, sizeof fix);
      return ds_err_set(err, DS_EINPUT,
                        "%s:%zu: column 'dur_us': one iteration spins %g us (%s) in a chain "
                        "of %zu ops (stream order, deps, and collectives, which wait for "
                        "every rank) from op %" PRId64 " (%s on rank %d, this line) to the end "
                        "of op %" PRId64 " (%s on rank %d, line %zu): longer than --timeout "
                        "%g s, the longest the cuda device waits for an iteration's GPU "
                        "work; %s",
                        opt->schedule, op_line[p.first], p.us, took, p.n_spins, a->id,
                        ds_op_kind_name(a->kind), a->rank, b->id, ds_op_kind_name(b->kind),
                        b->rank, op_line[p.last], limit_s, fix);
    }
  }
  return DS_OK;
}

ds_status ds_replay_command(int *argc, char ***argv, const struct ds_real_options *opt,
                            FILE *out, struct ds_err *err) {
  struct ds_schedule *s = NULL;
  size_t *op_line = NULL;
  ds_status st = ds_schedule_read_csv_lines(opt->schedule, &s, &op_line, err);
  if (st == DS_EIO) st = DS_EINPUT; /* a schedule that cannot be read is bad input */
  if (st != DS_OK) return ds_err_prefix(err, st, "option --schedule: ");
  const struct ds_device *dev = &ds_device_cpu;
  const struct ds_coll_rules *rules = &ds_coll_rules_cpu;
#ifdef DS_HAVE_CUDA
  if (opt->device == DS_REAL_DEVICE_CUDA) dev = &ds_device_cuda, rules = &ds_coll_rules_cuda;
#endif
  int32_t world = s->world_size;
  int use_mpi = ds_under_mpi() || opt->device != DS_REAL_DEVICE_CUDA;
  /* What the device would refuse when it opens, said once, before any rank
   * starts, with the file's line. */
  size_t bad = SIZE_MAX;
  struct ds_err cerr = {0};
  st = ds_check_collectives_at(s, world, rules, &bad, &cerr);
  if (st != DS_OK && bad < s->n_ops)
    ds_err_set(err, st, "%s:%zu: %s", opt->schedule, op_line[bad], cerr.msg);
  else if (st != DS_OK)
    ds_err_set(err, st, "%s: %s", opt->schedule, cerr.msg);
  if (st == DS_OK) st = check_spins(s, op_line, opt, err);
  free(op_line);
  if (st != DS_OK) {
    ds_schedule_free(s);
    return st;
  }
  /* Each rank's results go to rank 0 in one gather: under MPI one call
   * carries at most INT_MAX bytes. Refused now rather than after the run. */
  size_t most = own_places(s, NULL);
  if (most == SIZE_MAX) {
    ds_schedule_free(s);
    return ds_err_set(err, DS_ENOMEM, "out of memory");
  }
  double rec_bytes = 8.0 * (1.0 + (double)opt->iters * (1.0 + 2.0 * (double)most));
  if (use_mpi && rec_bytes > (double)INT_MAX) {
    long long fits = (long long)(((double)INT_MAX / 8.0 - 1.0) / (1.0 + 2.0 * (double)most));
    st = ds_err_set(err, DS_EUSAGE,
                    "option --iters: %d iterations of %zu ops on one rank make %.0f bytes of "
                    "results per rank, more than one MPI_Gather carries (%d); use --iters "
                    "%lld or fewer",
                    opt->iters, most, rec_bytes, INT_MAX, fits);
    ds_schedule_free(s);
    return st;
  }
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
                    "ranks, so run it as  mpirun -np %d ddpreal --device cpu ...",
                    opt->schedule, world, world);
  } else {
    st = ds_launch_mpi(argc, argv, ds_replay_rank, &rp, err);
  }
  ds_schedule_free(s);
  return st;
}
