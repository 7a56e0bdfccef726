/*
 * The ddpreal command's checks of its schedule before any rank starts
 * (replay_check.h): what the device would refuse when it opens, an op that
 * would spin past --timeout or spins that would keep another rank's wait
 * past it (spin_check.c), results too large for one MPI_Gather, each
 * said once with the schedule's line. Pure over the schedule file, the
 * options and DDPREAL_TIMEOUT_S: no MPI, no device.
 */
#include "replay_check.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "schedule_check.h"
#include "spin_check.h"
#include "traces/trace.h"

size_t ds_replay_own_places(const struct ds_schedule *s, size_t *own) {
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

/* --max-seconds bounds the whole replay: every iteration, warmup's too,
 * lasts at least its longest chain of spins (p), so a schedule whose
 * iterations would spin past it is refused before any rank starts. Each
 * step may fit in --timeout and the whole still take hours: a `ddpsim
 * --straggler 1:1e6` schedule replayed at 32,000 s an iteration under
 * --timeout 1e6. The bound is the least the replay takes (collectives take
 * no time in it, GEMMs under --compute gemm none either), so a replay it
 * passes may still take longer. */
static ds_status check_total(const struct ds_schedule *s, const size_t *op_line,
                             const struct ds_real_options *opt, const struct ds_spin_path *p,
                             struct ds_err *err) {
  int32_t n_iters = opt->warmup + opt->iters;
  double total_s = p->us * 1e-6 * n_iters;
  if (!(total_s > opt->max_seconds)) return DS_OK;
  const struct ds_op *a = &s->ops[p->first], *b = &s->ops[p->last];
  char iter[64], total[64], fix[160];
  say_s(p->us * 1e-6, iter, sizeof iter);
  say_s(total_s, total, sizeof total);
  /* a --max-seconds past the option's own cap would be refused in turn */
  if (ceil(total_s) <= DS_REAL_MAX_SECONDS_CAP)
    snprintf(fix, sizeof fix, "give --max-seconds %.0f or more to run it anyway, fewer "
             "iterations, or correct the schedule", ceil(total_s));
  else
    snprintf(fix, sizeof fix, "give fewer --iters or --warmup, or correct the schedule "
             "(--max-seconds takes at most %g s)", DS_REAL_MAX_SECONDS_CAP);
  return ds_err_set(err, DS_EINPUT,
                    "%s:%zu: column 'dur_us': one iteration spins at least %g us (%s) in a "
                    "chain of %zu ops (stream order, deps, and collectives, which wait for "
                    "every rank) from op %" PRId64 " (%s on rank %d, this line) to the end of "
                    "op %" PRId64 " (%s on rank %d, line %zu), so --warmup %d and --iters %d "
                    "would take at least %g s (%s), longer than --max-seconds %g s; %s",
                    opt->schedule, op_line[p->first], p->us, iter, p->n_spins, a->id,
                    ds_op_kind_name(a->kind), a->rank, b->id, ds_op_kind_name(b->kind), b->rank,
                    op_line[p->last], opt->warmup, opt->iters, total_s, total, opt->max_seconds,
                    fix);
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
  /* the least time any device needs for an iteration (spin_check.h) */
  DS_CHECK(ds_spin_longest_iteration(s, opt->compute, &p, err));
  if (opt->device == DS_REAL_DEVICE_CUDA) {
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
  return check_total(s, op_line, opt, &p, err);
}

ds_status ds_replay_check(const struct ds_real_options *opt, int use_mpi,
                          struct ds_schedule **out, size_t *most_out, struct ds_err *err) {
  struct ds_schedule *s = NULL;
  size_t *op_line = NULL;
  *out = NULL;
  ds_status st = ds_schedule_read_csv_lines(opt->schedule, &s, &op_line, err);
  if (st == DS_EIO) st = DS_EINPUT; /* a schedule that cannot be read is bad input */
  if (st != DS_OK) return ds_err_prefix(err, st, "option --schedule: ");
  const struct ds_coll_rules *rules = &ds_coll_rules_cpu;
#ifdef DS_HAVE_CUDA
  if (opt->device == DS_REAL_DEVICE_CUDA) rules = &ds_coll_rules_cuda;
#endif
  /* What the device would refuse when it opens, said once, before any rank
   * starts, with the file's line. */
  size_t bad = SIZE_MAX;
  struct ds_err cerr = {0};
  st = ds_check_collectives_at(s, s->world_size, rules, &bad, &cerr);
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
  size_t most = ds_replay_own_places(s, NULL);
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
  *out = s;
  if (most_out) *most_out = most;
  return DS_OK;
}
