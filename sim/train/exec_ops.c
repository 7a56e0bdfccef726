/*
 * The executor's op engine (exec.c's top comment): a queue's head op starts
 * once its dependencies have ended and its cohort is released; a collective
 * op enters its instance for every member of the cohort, any other op is
 * scheduled to end after its duration, and a compute-stream op is re-rated
 * whenever the collectives beside it change what they hold (the
 * interference load); an ended op moves its queue on and starts the
 * waiters whose last dependency it was.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/net/engine.h"
#include "sim/train/exec_impl.h"
#include "sim/train/interference.h"
#include "sim/train/jitter.h"
#include "base/units.h"

/* Schedules the running op of cohort k to end when its work left is done
 * at its factor. */
static void schedule_running(struct ds_exec *ex, int32_t k) {
  struct running *run = &ex->running[k];
  int64_t now = ds_engine_now(ex->eng);
  ds__exec_schedule_done(ex, k, run->op, DS_STREAM_COMPUTE,
                         now + ds_units_round_ns(run->left_ns * run->factor));
}

/* What a collective op holds, in parts: its kernel holds its SMs from the
 * moment its rank reaches it, spinning while it waits for its peers, but
 * moves bytes through HBM only once every member has reached it. */
enum load_part { LOAD_SMS = 1, LOAD_HBM = 2, LOAD_ALL = 3 };

/* A collective op o starts (sign +1) or ends (-1) holding `parts` on
 * cohort k: what it holds changes, and so does the rate of the compute op
 * running there. */
static void change_load(struct ds_exec *ex, int32_t k, const struct ds_op *o, int sign,
                        enum load_part parts) {
  if (!ex->opt.compute) return;
  struct ds_coll_load l = ds_interference_load(ex->opt.nccl, o);
  struct ds_coll_load *h = &ex->held[k];
  if (parts & LOAD_SMS) h->sms += sign * l.sms;
  if (parts & LOAD_HBM) h->hbm_bytes_per_s += sign * l.hbm_bytes_per_s;
  if (ex->comm_busy[k] == 0) *h = (struct ds_coll_load){0, 0}; /* no drift */
  struct running *run = &ex->running[k];
  if (run->op == UINT32_MAX) return;
  double f = ds_interference_factor(ex->opt.compute, run->sm_share, *h,
                                    ex->comm_busy[k] > 0);
  if (f == run->factor) return;
  int64_t now = ds_engine_now(ex->eng);
  run->left_ns -= (double)(now - run->since) / run->factor;
  if (run->left_ns < 0) run->left_ns = 0;
  run->factor = f;
  run->since = now;
  ds__exec_leave_token(ex, k, DS_STREAM_COMPUTE);
  schedule_running(ex, k);
}

/* Whether every dependency of cohort k's local op e has ended. */
static int deps_done(const struct ds_exec *ex, const struct rank_class *c, int32_t k,
                     uint32_t e) {
  for (uint32_t i = c->dep_first[e]; i < c->dep_first[e + 1]; i++) {
    uint32_t d = c->deps[i];
    if (ex->queue_head[queue_index(k, (enum ds_stream)c->stream[d])] <= c->qpos[d]) return 0;
  }
  return 1;
}

void ds__exec_finish_op(struct ds_exec *ex, int32_t k, uint32_t e) {
  const struct cohort *co = &ex->cohorts[k];
  const struct rank_class *c = cohort_class(ex, k);
  const struct ds_op *o = op_at(ex, c, e);
  int64_t now = ds_engine_now(ex->eng);
  uint32_t q = queue_index(k, o->stream);
  ex->ops_done += (size_t)co->n;
  if (now > ex->last_end[k]) ex->last_end[k] = now;
  if (ex->running[k].op == e) {
    /* rank 0 leads its cohort when in it (members ascending): what the
     * collectives beside it added, against the end it had alone */
    if (ex->opt.r0_slowed_ns && co->mem[0] == 0)
      ex->opt.r0_slowed_ns[c->tmpl[e]] =
          now - ex->head_start[q] - ds_units_round_ns(ex->running[k].dur_ns);
    ex->running[k].op = UINT32_MAX;
  }
  if (c->inst[e] >= 0) {
    ex->comm_busy[k]--;
    change_load(ex, k, o, -1, LOAD_ALL);
  }
  ex->queue_busy[q] = 0;
  ex->queue_head[q]++;
  if (ex->on_op)
    for (int32_t j = 0; j < co->n; j++)
      ex->on_op(ex->on_op_ctx, c->block[e], co->mem[j], c->tmpl[e], ex->head_start[q], now);
  /* A waiter starts once its last dependency ends, which is now when it
   * waits for e and all its dependencies have ended. */
  for (uint32_t i = c->waiter_first[e]; i < c->waiter_first[e + 1]; i++) {
    uint32_t w = c->waiters[i];
    if (deps_done(ex, c, k, w))
      ds__exec_try_start_queue(ex, queue_index(k, (enum ds_stream)c->stream[w]));
  }
  ds__exec_try_start_queue(ex, q);
}

/* Member index of rank r in collective ci. */
static int32_t member_of(const struct coll_inst *ci, int32_t r) {
  if (ci->coll_id < 0) return ci->rank_of[0] == r ? 0 : 1; /* send/recv: sender, receiver */
  if (ci->rank_of[ci->n - 1] - ci->rank_of[0] == ci->n - 1) return r - ci->rank_of[0];
  int32_t lo = 0, hi = ci->n - 1;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (ci->rank_of[mid] < r)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void start_op(struct ds_exec *ex, int32_t k, uint32_t e) {
  const struct rank_class *c = cohort_class(ex, k);
  const struct ds_op *o = op_at(ex, c, e);
  int64_t now = ds_engine_now(ex->eng);
  ex->head_start[queue_index(k, o->stream)] = now;
  if (c->inst[e] >= 0) { /* a collective, or a send/recv */
    struct coll_inst *ci = &ex->colls[c->inst[e]];
    ex->comm_busy[k]++;
    change_load(ex, k, o, +1, LOAD_SMS);
    /* every member enters, in rank order; from a copy, as a member that
     * ends at once (a collective of one) may split the cohort and start
     * other ops meanwhile */
    int32_t n = ex->cohorts[k].n, one = ex->cohorts[k].mem[0];
    int32_t *mem = n > 1 ? malloc((size_t)n * sizeof *mem) : &one;
    if (!mem) {
      fail(ex, DS_ENOMEM);
      return;
    }
    if (n > 1) memcpy(mem, ex->cohorts[k].mem, (size_t)n * sizeof *mem);
    /* the last to arrive starts the data's movement: every member's
     * cohort (each once: a cohort's ranks are all members) now moves HBM
     * bytes. Before the members enter, as entering may end a member at
     * once (a collective of one) and split its cohort. */
    if ((ci->entered += n) == ci->n)
      for (int32_t m = 0; m < ci->n; m++) {
        int32_t km = ex->cohort_of[ci->rank_of[m]];
        if (ex->cohorts[km].mem[0] == ci->rank_of[m]) change_load(ex, km, o, +1, LOAD_HBM);
      }
    for (int32_t j = 0; j < n; j++) {
      ds_status st = ds_coll_enter(ci->coll, member_of(ci, mem[j]));
      if (st != DS_OK) fail(ex, st);
    }
    if (n > 1) free(mem);
    return;
  }
  const struct cohort *co = &ex->cohorts[k];
  double dur_ns = o->dur_us * 1000.0;
  if (ex->opt.dur_scale || ex->opt.rank_scale) {
    /* one multiplier, as --jitter times --straggler always was; a cohort's
     * members share both (one rank under --jitter, one factor) */
    int32_t r = co->mem[0];
    double scale = ex->opt.dur_scale
                       ? ex->opt.dur_scale[ds_shared_index(ex->sched, c->block[e], r, c->tmpl[e])]
                       : 1.0;
    scale *= ds_straggler_op_factor(ex->opt.rank_scale, r, o);
    dur_ns *= scale;
  }
  if (o->stream == DS_STREAM_COMPUTE && ex->opt.compute) {
    struct running *run = &ex->running[k];
    run->op = e;
    run->sm_share = ds_interference_sm_share(ex->opt.compute, ex->opt.model, ex->opt.batch, o);
    run->left_ns = dur_ns;
    run->dur_ns = dur_ns;
    run->factor = ds_interference_factor(ex->opt.compute, run->sm_share,
                                         ex->held[k], ex->comm_busy[k] > 0);
    run->since = now;
    schedule_running(ex, k);
    return;
  }
  /* without the compute model no interference (exec.h): comm_interference
   * is read in one place, ds_interference_factor, from the compute model's
   * parameters (which --calib may have set) */
  ds__exec_schedule_done(ex, k, e, o->stream, now + ds_units_round_ns(dur_ns));
}

void ds__exec_try_start_queue(struct ds_exec *ex, uint32_t q) {
  int32_t k = (int32_t)(q / DS_STREAM_COUNT);
  if (ex->queue_busy[q] || !ex->released[k]) return;
  const struct rank_class *c = cohort_class(ex, k);
  uint32_t s = q % DS_STREAM_COUNT;
  uint32_t pos = c->queue_first[s] + ex->queue_head[q];
  if (pos >= c->queue_first[s + 1]) return;
  uint32_t e = c->queue[pos];
  if (!deps_done(ex, c, k, e)) return;
  ex->queue_busy[q] = 1;
  start_op(ex, k, e);
}
