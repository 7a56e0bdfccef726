/*
 * Executor of schedules on the discrete-event engine (see exec.h).
 *
 * It runs the shared form (traces/shared_schedule.h): ranks that run the
 * same blocks form a class, and per class it builds once, over the ops one
 * rank of it runs (its "local" ops, e = 0 .. n-1, the blocks' slices in
 * order): the template op of each, its dependencies and the reverse edges
 * (who waits for whom) as local indices, one in-order queue per stream and
 * each op's place in it, and its collective instance. An op has ended
 * exactly when its queue has moved past it (queues run in order and
 * advance when their head ends), so no per-op state is needed.
 *
 * Lockstep: the ranks of a class that start together with the same
 * duration factors do the same thing at the same times until the network
 * tells them apart, so they run as one cohort: one set of stream heads, one
 * event per op, the collective entered for every member in rank order. The
 * per-rank state is per cohort. Ranks interact only through collectives;
 * a cohort splits where its members' collective ends differ: a collective
 * that finishes every member together (ds_coll_finishes_together: the
 * aggregated ring, rails and tree) ends the cohort's op at its last member;
 * any other ends each member on its own, which leaves the cohort as a
 * cohort of one, carrying a copy of its state. A split-off cohort shares
 * the pending events of the ops it was running (a token lists the cohorts
 * an event ends, fired in order of their first rank) until one of them is
 * re-rated. --jitter (a draw per op copy) makes every rank its own cohort,
 * --straggler the ranks of each factor; so does ds_exec_options.no_lockstep,
 * the per-rank execution the tests compare against. Invariant: a (cohort,
 * stream) runs at most one op at a time, and its head op is started the
 * moment its last dependency ends. A full schedule runs through the same
 * code as one class per rank (ds_shared_from_schedule).
 */
#include "sim/train/exec.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "sim/coll/nccl_model.h"
#include "sim/train/interference.h"
#include "base/units.h"

#define TAG_SHIFT 32

struct coll_inst {
  int64_t coll_id;
  int32_t n;          /* members */
  int32_t *rank_of;   /* [n] rank of each member (ring position), ascending */
  uint32_t *op_of;    /* [n] local op index of each member on its rank */
  struct ds_coll *coll;
  int together;       /* ds_coll_finishes_together */
  int32_t entered;    /* members that have reached it */
};

struct ring_cache {
  struct ds_ring ring;
  int used;
};

/* Ranks first_rank .. first_rank + n_ranks - 1 run the same blocks. */
struct rank_class {
  int32_t first_rank, n_ranks;
  uint32_t n;              /* local ops */
  uint32_t *blocks;        /* [n_blocks] the blocks run, ascending */
  uint32_t *block_at;      /* [n_blocks] local index of each block's first op */
  uint32_t n_blocks;
  uint32_t *tmpl;          /* [n] template op of local op e */
  uint32_t *block;         /* [n] its block */
  uint8_t *stream;         /* [n] its stream (the template op's, read per dependency) */
  uint32_t *dep_first;     /* CSR [n + 1]: local dependencies */
  uint32_t *deps;
  uint32_t *waiter_first;  /* CSR [n + 1]: local ops waiting for e */
  uint32_t *waiters;
  uint32_t *qpos;          /* [n] position of e in its stream's queue */
  uint32_t queue_first[DS_STREAM_COUNT + 1];
  uint32_t *queue;         /* [n] local ops of each stream, in order */
  int32_t *inst;           /* [n] collective instance, -1 */
};

/* Ranks of one class in lockstep (see the top). */
struct cohort {
  int32_t cls;  /* its class */
  int32_t n;    /* members */
  int32_t *mem; /* [n] its ranks, ascending: &one or owned */
  int32_t one;
};

/* A pending op-done event: the cohorts it ends (a list through
 * ds_exec.tok_next), each's local op `op` on `stream`. */
struct token {
  int32_t head;      /* first cohort of the list; -1: free */
  uint32_t op;
  uint8_t stream;
  uint64_t handle;
  int32_t next_free;
};

/* A compute-stream op in flight: its work left at full speed, the rate it
 * runs at since `since`. */
struct running {
  uint32_t op;        /* local index; UINT32_MAX: none */
  double sm_share;    /* of its time, what its SMs bound (interference.h) */
  double left_ns;     /* at factor 1 */
  double factor;      /* >= 1 */
  int64_t since;
};

struct ds_exec {
  struct ds_topo *topo;
  struct ds_exec_options opt;
  struct ds_engine *eng;
  struct ds_net *net;
  struct ring_cache *rings;
  int32_t n_rings;
  struct ds_err *err; /* of the running call */
  ds_status failure;  /* first failure inside a handler */
  /* per run */
  struct ds_shared_schedule *sched;
  ds_exec_op_fn on_op;
  void *on_op_ctx;
  struct rank_class *classes;
  int32_t n_classes;
  int32_t *class_of;      /* per rank */
  /* cohorts: at most one per rank */
  struct cohort *cohorts;
  int32_t n_cohorts, initial_cohorts;
  int32_t *cohort_of;     /* per rank */
  int32_t *scratch;       /* [world]: the cohorts of a token as it fires */
  uint32_t *queue_head;   /* per (cohort, stream): next position to start */
  uint8_t *queue_busy;
  int64_t *head_start;    /* per (cohort, stream): when its running head started */
  int32_t *tok;           /* per (cohort, stream): token of its head's event, -1 */
  int32_t *tok_next;      /* per (cohort, stream): next cohort of that token */
  int32_t *coll_done;     /* per (cohort, stream): members its collective finished */
  int32_t n_partial;      /* cohorts some but not all of whose members finished */
  uint8_t *released;      /* per cohort */
  int32_t *comm_busy;     /* collectives running per cohort */
  struct ds_coll_load *held; /* per cohort: what its running collectives hold */
  struct running *running;   /* per cohort: its compute stream's running op */
  int64_t *last_end;      /* per cohort: its members' rank_time */
  struct token *tokens;
  int32_t n_tokens, cap_tokens, free_token;
  struct coll_inst *colls;
  int32_t n_colls;
  size_t ops_done;
  int64_t *rank_time;
  int32_t last_initial, last_final; /* cohorts of the last run (ds_exec_lockstep) */
};

static void fail(struct ds_exec *ex, ds_status st) {
  if (ex->failure == DS_OK) ex->failure = st;
}

static uint32_t queue_index(int32_t cohort, enum ds_stream s) {
  return (uint32_t)cohort * DS_STREAM_COUNT + (uint32_t)s;
}

static struct rank_class *class_of(struct ds_exec *ex, int32_t rank) {
  return &ex->classes[ex->class_of[rank]];
}

static struct rank_class *cohort_class(struct ds_exec *ex, int32_t k) {
  return &ex->classes[ex->cohorts[k].cls];
}

static const struct ds_op *op_at(const struct ds_exec *ex, const struct rank_class *c,
                                 uint32_t e) {
  return &ex->sched->tmpl->ops[c->tmpl[e]];
}

static int64_t op_id(const struct ds_exec *ex, const struct rank_class *c, int32_t rank,
                     uint32_t e) {
  return ds_shared_id(ex->sched, c->block[e], rank, c->tmpl[e]);
}

/* Local index of rank's copy of template op t of block b (the rank runs b). */
static uint32_t local_of(const struct ds_exec *ex, int32_t rank, size_t b, uint32_t t) {
  const struct rank_class *c = &ex->classes[ex->class_of[rank]];
  uint32_t lo = 0, hi = c->n_blocks;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (c->blocks[mid] < b)
      lo = mid + 1;
    else
      hi = mid;
  }
  return c->block_at[lo] + (t - ex->sched->blocks[b].first_op);
}

/* Whether rank's local op e has ended (0), runs (1) or has not started (2). */
static int op_state(const struct ds_exec *ex, int32_t rank, uint32_t e) {
  const struct rank_class *c = &ex->classes[ex->class_of[rank]];
  uint32_t q = queue_index(ex->cohort_of[rank], (enum ds_stream)c->stream[e]);
  if (ex->queue_head[q] > c->qpos[e]) return 0;
  return ex->queue_head[q] == c->qpos[e] && ex->queue_busy[q] ? 1 : 2;
}

static void try_start_queue(struct ds_exec *ex, uint32_t q);

/* Schedules cohort k's op e on stream s to end at time t: a new token with
 * k alone. */
static void schedule_done(struct ds_exec *ex, int32_t k, uint32_t e, enum ds_stream s,
                          int64_t t) {
  if (ex->free_token < 0) {
    if (ex->n_tokens == ex->cap_tokens) {
      int32_t cap = ex->cap_tokens ? 2 * ex->cap_tokens : 64;
      struct token *nt = realloc(ex->tokens, (size_t)cap * sizeof *nt);
      if (!nt) {
        fail(ex, DS_ENOMEM);
        return;
      }
      ex->tokens = nt;
      ex->cap_tokens = cap;
    }
    ex->free_token = ex->n_tokens;
    ex->tokens[ex->n_tokens++].next_free = -1;
  }
  int32_t id = ex->free_token;
  struct token *tk = &ex->tokens[id];
  ex->free_token = tk->next_free;
  *tk = (struct token){.head = k, .op = e, .stream = (uint8_t)s, .next_free = -1};
  uint32_t q = queue_index(k, s);
  ex->tok[q] = id;
  ex->tok_next[q] = -1;
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .a = id, .b = e};
  ds_status st = ds_engine_schedule(ex->eng, t, &ev, &tk->handle);
  if (st != DS_OK) fail(ex, st);
}

static void free_token(struct ds_exec *ex, int32_t id) {
  ex->tokens[id].head = -1;
  ex->tokens[id].next_free = ex->free_token;
  ex->free_token = id;
}

/* Takes cohort k off the token of its stream s's head; cancels the event
 * when no other cohort waits for it. */
static void leave_token(struct ds_exec *ex, int32_t k, enum ds_stream s) {
  uint32_t q = queue_index(k, s);
  int32_t id = ex->tok[q];
  if (id < 0) return;
  struct token *tk = &ex->tokens[id];
  ex->tok[q] = -1;
  if (tk->head == k && ex->tok_next[q] < 0) {
    ds_engine_cancel(ex->eng, tk->handle);
    free_token(ex, id);
    return;
  }
  int32_t *link = &tk->head;
  while (*link != k) link = &ex->tok_next[queue_index(*link, s)];
  *link = ex->tok_next[q];
}

/* Schedules the running op of cohort k to end when its work left is done
 * at its factor. */
static void schedule_running(struct ds_exec *ex, int32_t k) {
  struct running *run = &ex->running[k];
  int64_t now = ds_engine_now(ex->eng);
  schedule_done(ex, k, run->op, DS_STREAM_COMPUTE,
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
  leave_token(ex, k, DS_STREAM_COMPUTE);
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

static void finish_op(struct ds_exec *ex, int32_t k, uint32_t e) {
  const struct cohort *co = &ex->cohorts[k];
  const struct rank_class *c = cohort_class(ex, k);
  const struct ds_op *o = op_at(ex, c, e);
  int64_t now = ds_engine_now(ex->eng);
  uint32_t q = queue_index(k, o->stream);
  ex->ops_done += (size_t)co->n;
  if (now > ex->last_end[k]) ex->last_end[k] = now;
  if (ex->running[k].op == e) ex->running[k].op = UINT32_MAX;
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
    if (deps_done(ex, c, k, w)) try_start_queue(ex, queue_index(k, (enum ds_stream)c->stream[w]));
  }
  try_start_queue(ex, q);
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
    if (ex->opt.rank_scale && o->stream == DS_STREAM_COMPUTE) scale *= ex->opt.rank_scale[r];
    dur_ns *= scale;
  }
  if (o->stream == DS_STREAM_COMPUTE && ex->opt.compute) {
    struct running *run = &ex->running[k];
    run->op = e;
    run->sm_share = ds_interference_sm_share(ex->opt.compute, ex->opt.model, ex->opt.batch, o);
    run->left_ns = dur_ns;
    run->factor = ds_interference_factor(ex->opt.compute, run->sm_share,
                                         ex->held[k], ex->comm_busy[k] > 0);
    run->since = now;
    schedule_running(ex, k);
    return;
  }
  /* without the compute model no interference (exec.h): comm_interference
   * is read in one place, ds_interference_factor, from the compute model's
   * parameters (which --calib may have set) */
  schedule_done(ex, k, e, o->stream, now + ds_units_round_ns(dur_ns));
}

static void try_start_queue(struct ds_exec *ex, uint32_t q) {
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

/* Splits rank r off cohort k (whose other members go on in lockstep) into
 * a new cohort of one with k's state; returns it. Its pending op-done
 * events are k's: it joins their tokens, right after k. */
static int32_t split_off(struct ds_exec *ex, int32_t k, int32_t r) {
  int32_t d = ex->n_cohorts++;
  struct cohort *co = &ex->cohorts[k];
  int32_t j = 0;
  while (co->mem[j] != r) j++;
  memmove(co->mem + j, co->mem + j + 1, (size_t)(co->n - j - 1) * sizeof *co->mem);
  co->n--;
  struct cohort *dc = &ex->cohorts[d];
  *dc = (struct cohort){.cls = co->cls, .n = 1, .one = r};
  dc->mem = &dc->one;
  ex->cohort_of[r] = d;
  for (int s = 0; s < DS_STREAM_COUNT; s++) {
    uint32_t qk = queue_index(k, (enum ds_stream)s), qd = queue_index(d, (enum ds_stream)s);
    ex->queue_head[qd] = ex->queue_head[qk];
    ex->queue_busy[qd] = ex->queue_busy[qk];
    ex->head_start[qd] = ex->head_start[qk];
    ex->coll_done[qd] = 0;
    ex->tok[qd] = ex->tok[qk];
    ex->tok_next[qd] = -1;
    if (ex->tok[qk] >= 0) {
      ex->tok_next[qd] = ex->tok_next[qk];
      ex->tok_next[qk] = d;
    }
  }
  ex->released[d] = ex->released[k];
  ex->comm_busy[d] = ex->comm_busy[k];
  ex->held[d] = ex->held[k];
  ex->running[d] = ex->running[k];
  ex->last_end[d] = ex->last_end[k];
  return d;
}

/* Collective callbacks carry the instance through a small trampoline so
 * that the coll module only knows (owner, member). */
struct coll_owner {
  struct ds_exec *ex;
  int32_t inst;
};

/* A member's collective op ended. In a collective that ends its members
 * together the cohort's op ends at its last member; otherwise the member
 * leaves its cohort (its fellows end later, or on their own). */
static void on_member_done(void *owner, int32_t member) {
  struct coll_owner *cw = owner;
  struct ds_exec *ex = cw->ex;
  const struct coll_inst *ci = &ex->colls[cw->inst];
  int32_t r = ci->rank_of[member];
  uint32_t e = ci->op_of[member];
  int32_t k = ex->cohort_of[r];
  if (ex->cohorts[k].n > 1) {
    if (!ci->together) {
      k = split_off(ex, k, r);
    } else {
      uint32_t q = queue_index(k, (enum ds_stream)cohort_class(ex, k)->stream[e]);
      if (ex->coll_done[q]++ == 0) ex->n_partial++;
      if (ex->coll_done[q] < ex->cohorts[k].n) return;
      ex->coll_done[q] = 0;
      ex->n_partial--;
    }
  }
  finish_op(ex, k, e);
}

static void on_flow_sent(void *owner, uint64_t tag) {
  struct ds_exec *ex = owner;
  int32_t inst = (int32_t)(tag >> TAG_SHIFT);
  int32_t member = (int32_t)(tag & 0xffffffffu);
  ds_status st = ds_coll_flow_sent(ex->colls[inst].coll, member);
  if (st != DS_OK) fail(ex, st);
}

static void on_flow_done(void *owner, uint64_t tag) {
  struct ds_exec *ex = owner;
  int32_t inst = (int32_t)(tag >> TAG_SHIFT);
  int32_t member = (int32_t)(tag & 0xffffffffu);
  ds_status st = ds_coll_flow_done(ex->colls[inst].coll, member);
  if (st != DS_OK) fail(ex, st);
}

struct first_rank {
  int32_t rank, cohort;
};

static int cmp_first_rank(const void *a, const void *b) {
  const struct first_rank *x = a, *y = b;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Token id's event: every cohort on it ends its op, in order of their
 * first rank (the order the ranks' own events had). */
static void fire_token(struct ds_exec *ex, int32_t id) {
  struct token tk = ex->tokens[id];
  free_token(ex, id);
  int32_t n = 0;
  for (int32_t k = tk.head; k >= 0; k = ex->tok_next[queue_index(k, tk.stream)])
    ex->scratch[n++] = k;
  for (int32_t i = 0; i < n; i++) ex->tok[queue_index(ex->scratch[i], tk.stream)] = -1;
  if (n == 1) {
    finish_op(ex, ex->scratch[0], tk.op);
    return;
  }
  struct first_rank *ks = malloc((size_t)n * sizeof *ks);
  if (!ks) {
    fail(ex, DS_ENOMEM);
    return;
  }
  for (int32_t i = 0; i < n; i++)
    ks[i] = (struct first_rank){ex->cohorts[ex->scratch[i]].mem[0], ex->scratch[i]};
  qsort(ks, (size_t)n, sizeof *ks, cmp_first_rank);
  for (int32_t i = 0; i < n; i++) finish_op(ex, ks[i].cohort, tk.op);
  free(ks);
}

static void handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  struct ds_exec *ex = ctx;
  (void)eng;
  switch (ev->kind) {
  case DS_EV_OP_DONE:
    fire_token(ex, (int32_t)ev->a);
    break;
  case DS_EV_RANK_RELEASE:
    ex->released[ev->a] = 1;
    for (uint32_t s = 0; s < DS_STREAM_COUNT; s++)
      try_start_queue(ex, queue_index((int32_t)ev->a, (enum ds_stream)s));
    break;
  default:
    ds_net_handle_event(ex->net, ev);
    /* a collective that ends its members together has ended all of them */
    if (ex->n_partial) fail(ex, DS_EINTERNAL);
    break;
  }
}

ds_status ds_exec_new(struct ds_topo *topo, const struct ds_exec_options *opt,
                      struct ds_exec **out, struct ds_err *err) {
  struct ds_exec *ex = calloc(1, sizeof *ex);
  if (!ex) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  ex->topo = topo;
  ex->opt = *opt;
  ex->free_token = -1;
  if (ex->opt.ring_chunks < 1) ex->opt.ring_chunks = 1;
  ds_status st = ds_engine_new(1024, handle, ex, &ex->eng);
  if (st == DS_OK)
    st = ds_net_new(topo, ex->eng, opt->net_mode, on_flow_done,
                    on_flow_sent, ex, &ex->net);
  if (st != DS_OK) {
    ds_exec_free(ex);
    return ds_err_set(err, st, "executor: out of memory");
  }
  *out = ex;
  return DS_OK;
}

static void free_class(struct rank_class *c) {
  free(c->blocks);
  free(c->block_at);
  free(c->tmpl);
  free(c->block);
  free(c->stream);
  free(c->dep_first);
  free(c->deps);
  free(c->waiter_first);
  free(c->waiters);
  free(c->qpos);
  free(c->queue);
  free(c->inst);
}

static void free_run(struct ds_exec *ex) {
  for (int32_t i = 0; i < ex->n_colls; i++) {
    ds_coll_free(ex->colls[i].coll);
    free(ex->colls[i].rank_of);
    free(ex->colls[i].op_of);
  }
  free(ex->colls);
  ex->colls = NULL;
  ex->n_colls = 0;
  for (int32_t i = 0; i < ex->n_classes; i++) free_class(&ex->classes[i]);
  free(ex->classes);
  ex->classes = NULL;
  ex->n_classes = 0;
  for (int32_t k = 0; k < ex->n_cohorts; k++)
    if (ex->cohorts[k].mem != &ex->cohorts[k].one) free(ex->cohorts[k].mem);
  free(ex->cohorts);
  ex->cohorts = NULL;
  ex->n_cohorts = 0;
  free(ex->class_of);
  free(ex->cohort_of);
  free(ex->scratch);
  free(ex->queue_head);
  free(ex->queue_busy);
  free(ex->head_start);
  free(ex->tok);
  free(ex->tok_next);
  free(ex->coll_done);
  free(ex->released);
  free(ex->comm_busy);
  free(ex->held);
  free(ex->running);
  free(ex->last_end);
  free(ex->tokens);
  ex->class_of = ex->cohort_of = ex->scratch = NULL;
  ex->queue_head = NULL;
  ex->queue_busy = ex->released = NULL;
  ex->head_start = ex->last_end = NULL;
  ex->tok = ex->tok_next = ex->coll_done = NULL;
  ex->comm_busy = NULL;
  ex->held = NULL;
  ex->running = NULL;
  ex->tokens = NULL;
  ex->n_tokens = ex->cap_tokens = 0;
  ex->free_token = -1;
  ex->n_partial = 0;
}

void ds_exec_free(struct ds_exec *ex) {
  if (!ex) return;
  free_run(ex);
  for (int32_t i = 0; i < ex->n_rings; i++) ds_ring_release(&ex->rings[i].ring);
  free(ex->rings);
  ds_net_free(ex->net);
  ds_engine_free(ex->eng);
  free(ex);
}

uint64_t ds_exec_events(const struct ds_exec *ex) { return ds_engine_fired(ex->eng); }

struct ds_exec_lockstep ds_exec_lockstep(const struct ds_exec *ex) {
  return (struct ds_exec_lockstep){ex->last_initial, ex->last_final};
}

/* Returns a ring over gpus, built once per distinct member list. */
static ds_status get_ring(struct ds_exec *ex, const int32_t *gpus, int32_t n,
                          const struct ds_ring **out, struct ds_err *err) {
  const struct ds_ring *pre = ex->opt.prebuilt_ring;
  if (pre && pre->n == n && memcmp(pre->gpus, gpus, (size_t)n * sizeof *gpus) == 0) {
    *out = pre;
    return DS_OK;
  }
  for (int32_t i = 0; i < ex->n_rings; i++) {
    struct ds_ring *r = &ex->rings[i].ring;
    if (r->n == n && memcmp(r->gpus, gpus, (size_t)n * sizeof *gpus) == 0) {
      *out = r;
      return DS_OK;
    }
  }
  struct ring_cache *rc = realloc(ex->rings, ((size_t)ex->n_rings + 1) * sizeof *rc);
  if (!rc) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  ex->rings = rc;
  DS_CHECK(ds_ring_build_rails(ex->topo, gpus, n, &rc[ex->n_rings].ring, err));
  *out = &rc[ex->n_rings++].ring;
  return DS_OK;
}

/* A member of a collective: rank's local op e. */
struct coll_key {
  int64_t coll;
  int32_t rank;
  uint32_t op;
};

static int cmp_coll_key(const void *a, const void *b) {
  const struct coll_key *x = a, *y = b;
  if (x->coll != y->coll) return x->coll < y->coll ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A send or a recv, by (source rank, destination rank, order on its rank). */
struct p2p_key {
  int32_t src, dst;
  int32_t rank;
  uint32_t op;
};

static int cmp_p2p_key(const void *a, const void *b) {
  const struct p2p_key *x = a, *y = b;
  if (x->src != y->src) return x->src < y->src ? -1 : 1;
  if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
  return (x->op > y->op) - (x->op < y->op);
}

static int is_p2p(enum ds_op_kind k) { return k == DS_OP_SEND || k == DS_OP_RECV; }

/* The collective a schedule kind runs; DS_COLL_KIND_COUNT for none. */
static enum ds_coll_kind coll_kind_of(enum ds_op_kind k) {
  switch (k) {
  case DS_OP_ALLREDUCE: return DS_COLL_ALLREDUCE;
  case DS_OP_BROADCAST: return DS_COLL_BROADCAST;
  case DS_OP_REDUCE: return DS_COLL_REDUCE;
  case DS_OP_ALLGATHER: return DS_COLL_ALLGATHER;
  case DS_OP_REDUCESCATTER: return DS_COLL_REDUCESCATTER;
  case DS_OP_GATHER: return DS_COLL_GATHER;
  case DS_OP_SCATTER: return DS_COLL_SCATTER;
  default: return DS_COLL_KIND_COUNT;
  }
}

/* Registers instance idx over the members keys[0..n) (member k: rank
 * gpus[k]'s local op) and creates its collective from *spec (ring and tag
 * filled here). */
static ds_status add_inst(struct ds_exec *ex, struct coll_owner *owners, int64_t coll_id,
                          const struct coll_key *keys, const int32_t *gpus, int32_t n,
                          struct ds_coll_spec *spec, struct ds_err *err) {
  int32_t idx = ex->n_colls;
  struct coll_inst *ci = &ex->colls[ex->n_colls++];
  ci->coll_id = coll_id;
  ci->n = n;
  ci->rank_of = malloc((size_t)n * sizeof *ci->rank_of);
  ci->op_of = malloc((size_t)n * sizeof *ci->op_of);
  if (!ci->rank_of || !ci->op_of) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  for (int32_t k = 0; k < n; k++) {
    ci->rank_of[k] = keys[k].rank;
    ci->op_of[k] = keys[k].op;
    class_of(ex, keys[k].rank)->inst[keys[k].op] = idx;
  }
  DS_CHECK(get_ring(ex, gpus, n, &spec->ring, err));
  owners[idx] = (struct coll_owner){ex, idx};
  spec->topo = ex->topo;
  spec->net = ex->net;
  spec->tag_base = (uint64_t)idx << TAG_SHIFT;
  spec->on_done = on_member_done;
  spec->owner = &owners[idx];
  DS_CHECK(ds_coll_new(spec, &ci->coll, err));
  ci->together = ds_coll_finishes_together(ci->coll);
  return DS_OK;
}

/* One instance per coll id of a collective kind. */
static ds_status build_group(struct ds_exec *ex, struct coll_owner *owners,
                             const struct coll_key *keys, int32_t n, int32_t *gpus,
                             struct ds_err *err) {
  const struct rank_class *c0 = class_of(ex, keys[0].rank);
  const struct ds_op *o = op_at(ex, c0, keys[0].op);
  int64_t o_id = op_id(ex, c0, keys[0].rank, keys[0].op);
  enum ds_coll_kind ck = coll_kind_of(o->kind);
  const struct ds_coll_desc *d = ds_coll_desc_of(ck);
  /* ring_chunks pipelines the plain algorithms' steps; under an NCCL
   * protocol (below) the pieces are NCCL's, which its model derives */
  struct ds_coll_spec spec = {.kind = ck, .model = ex->opt.coll_model,
                              .chunks = ex->opt.ring_chunks, .bytes = o->bytes, .root = -1};
  struct ds_coll_proto cp;
  enum ds_proto bcast_proto = DS_PROTO_COUNT;
  if (!d)
    return ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s is not a collective but has coll %" PRId64
                      " (collectives: %s; send/recv pair without coll ids)",
                      o_id, ds_op_kind_name(o->kind), o->coll, ds_coll_kind_names());
  if (ck == DS_COLL_ALLREDUCE) {
    enum ds_proto proto;
    if (ds_allreduce_algo_parse(o->algo, &spec.algo, &proto) != DS_OK)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": allreduce with algo '%s' is not simulated (%s; "
                        "ring, tree and nvls also with /LL, /LL128 or /Simple)",
                        o_id, o->algo, ds_ar_algo_names());
    if (proto < DS_PROTO_COUNT && (!ex->opt.nccl || ex->opt.nccl->nranks != n))
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": algo '%s' needs NCCL's model for a ring of %d "
                        "ranks, and %s", o_id, o->algo, n,
                        ex->opt.nccl ? "the model describes another ring size"
                                     : "none is available (unknown GPU architecture?)");
    const char *why;
    if (proto < DS_PROTO_COUNT && !ds_nccl_algo_available(ex->opt.nccl, spec.algo, proto, &why))
      return ds_err_set(err, DS_EUSAGE, "op %" PRId64 ": algo '%s' cannot run here: %s",
                        o_id, o->algo, why);
    if (proto < DS_PROTO_COUNT) {
      ds_nccl_algo_proto(ex->opt.nccl, spec.algo, proto, o->bytes, &cp);
      spec.proto = &cp;
      spec.chunks = 1;
    }
  } else if (ck == DS_COLL_BROADCAST && o->algo[0] && strcmp(o->algo, d->algo) != 0) {
    /* under an NCCL protocol ("ring/LL": DDP's buffer broadcast), the chain
     * of NCCL's ring broadcast with its channels, latencies and launch */
    if (ds_ring_algo_parse(o->algo, &bcast_proto) != DS_OK)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": broadcast with algo '%s' is not simulated (ring, "
                        "or ring/LL, ring/LL128, ring/Simple)", o_id, o->algo);
    if (!ex->opt.nccl || ex->opt.nccl->nranks != n)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": algo '%s' needs NCCL's model for a ring of %d "
                        "ranks, and %s", o_id, o->algo, n,
                        ex->opt.nccl ? "the model describes another ring size"
                                     : "none is available (unknown GPU architecture?)");
    spec.chunks = ds_nccl_chain(ex->opt.nccl, bcast_proto, o->bytes, &cp);
    spec.proto = &cp;
  } else if (o->algo[0] && strcmp(o->algo, d->algo) != 0) {
    return ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s with algo '%s' is not simulated by this "
                      "version (%s runs '%s'; NCCL protocols: allreduce and broadcast)",
                      o_id, d->name, o->algo, d->name, d->algo);
  }
  for (int32_t k = 0; k < n; k++) {
    const struct rank_class *c = class_of(ex, keys[k].rank);
    const struct ds_op *m = op_at(ex, c, keys[k].op);
    gpus[k] = keys[k].rank;
    if (d->rooted && m->root == o->root && keys[k].rank == o->root) spec.root = k;
    if (d->rooted && m->root != o->root)
      return ds_err_set(err, DS_EUSAGE,
                        "op %" PRId64 ": %s of coll %" PRId64 " has root %d but op %"
                        PRId64 " of the same coll has root %d",
                        op_id(ex, c, keys[k].rank, keys[k].op), d->name, o->coll, m->root,
                        o_id, o->root);
  }
  if (d->rooted && spec.root < 0)
    return ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s of coll %" PRId64 " has root %d, which is "
                      "not one of its ranks", o_id, d->name, o->coll, o->root);
  if (bcast_proto >= DS_PROTO_COUNT && ds_coll_kind_is_chain(ck))
    spec.chunks = ds_coll_chain_chunks(o->bytes, ex->opt.ring_chunks);
  return add_inst(ex, owners, o->coll, keys, gpus, n, &spec, err);
}

/* Calls fn(ex, rank, local op, ctx) for every op in full-schedule order
 * until it returns nonzero; returns that. */
static int for_each_op(struct ds_exec *ex, int (*fn)(struct ds_exec *, int32_t, uint32_t, void *),
                       void *ctx) {
  const struct ds_shared_schedule *s = ex->sched;
  for (size_t b = 0; b < s->n_blocks; b++) {
    const struct ds_sched_block *bl = &s->blocks[b];
    for (int32_t j = 0; j < bl->n_ranks; j++) {
      int32_t r = bl->first_rank + j;
      uint32_t e0 = local_of(ex, r, b, bl->first_op);
      for (uint32_t k = 0; k < bl->n_ops; k++) {
        int v = fn(ex, r, e0 + k, ctx);
        if (v) return v;
      }
    }
  }
  return 0;
}

struct p2p_scan {
  struct p2p_key *keys;
  size_t n_send, n_recv, n;
  struct ds_err *err;
  ds_status st;
};

static int p2p_check(struct ds_exec *ex, int32_t r, uint32_t e, void *ctx) {
  struct p2p_scan *ps = ctx;
  const struct rank_class *c = class_of(ex, r);
  const struct ds_op *o = op_at(ex, c, e);
  if (!is_p2p(o->kind)) return 0;
  if (o->root < 0 || o->root == r) {
    ps->st = ds_err_set(ps->err, DS_EUSAGE,
                        "op %" PRId64 ": %s needs its peer rank in root (a rank other "
                        "than its own %d), got %d", op_id(ex, c, r, e),
                        ds_op_kind_name(o->kind), r, o->root);
    return 1;
  }
  ps->n++;
  if (o->kind == DS_OP_SEND) ps->n_send++;
  return 0;
}

static int p2p_collect(struct ds_exec *ex, int32_t r, uint32_t e, void *ctx) {
  struct p2p_scan *ps = ctx;
  const struct ds_op *o = op_at(ex, class_of(ex, r), e);
  if (o->kind == DS_OP_SEND) ps->keys[ps->n++] = (struct p2p_key){r, o->root, r, e};
  if (o->kind == DS_OP_RECV)
    ps->keys[ps->n_send + ps->n_recv++] = (struct p2p_key){o->root, r, r, e};
  return 0;
}

/* Send/recv pairs: the k-th send from rank a to rank b (its root is b)
 * meets the k-th recv on b from a (its root is a), in schedule order, as
 * MPI and NCCL match point-to-point messages; `coll` plays no part. */
static ds_status build_p2p(struct ds_exec *ex, struct coll_owner *owners,
                           struct ds_err *err) {
  struct p2p_scan ps = {.err = err, .st = DS_OK};
  const struct ds_schedule *t = ex->sched->tmpl;
  size_t any = 0; /* look at the copies only when the template has some */
  for (size_t i = 0; i < t->n_ops && !any; i++) any = is_p2p(t->ops[i].kind);
  if (!any) return DS_OK;
  if (for_each_op(ex, p2p_check, &ps)) return ps.st;
  size_t n = ps.n, n_send = ps.n_send;
  if (n == 0) return DS_OK;
  ps.keys = malloc(n * sizeof *ps.keys);
  if (!ps.keys) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  ps.n = ps.n_recv = 0;
  for_each_op(ex, p2p_collect, &ps);
  struct p2p_key *keys = ps.keys;
  size_t n_recv = ps.n_recv;
  ds_status st = DS_OK;
  /* sends first, then recvs, each sorted by (src, dst, order) */
  qsort(keys, n_send, sizeof *keys, cmp_p2p_key);
  qsort(keys + n_send, n_recv, sizeof *keys, cmp_p2p_key);
  size_t a = 0, b = n_send;
  while (a < n_send || b < n) {
    const struct p2p_key *x = a < n_send ? &keys[a] : NULL, *y = b < n ? &keys[b] : NULL;
    if (!x || !y || x->src != y->src || x->dst != y->dst) {
      /* the side with the smaller (src, dst) has no partner */
      const struct p2p_key *lone =
          !y ? x : !x ? y : (x->src < y->src || (x->src == y->src && x->dst < y->dst)) ? x : y;
      const struct rank_class *c = class_of(ex, lone->rank);
      const struct ds_op *o = op_at(ex, c, lone->op);
      st = ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": %s on rank %d %s rank %d has no matching %s "
                      "(the k-th send from a to b meets the k-th recv on b from a)",
                      op_id(ex, c, lone->rank, lone->op), ds_op_kind_name(o->kind),
                      lone->rank, o->kind == DS_OP_SEND ? "to" : "from", o->root,
                      o->kind == DS_OP_SEND ? "recv" : "send");
      goto out;
    }
    const struct rank_class *sc = class_of(ex, keys[a].rank), *rc = class_of(ex, keys[b].rank);
    const struct ds_op *so = op_at(ex, sc, keys[a].op), *ro = op_at(ex, rc, keys[b].op);
    if (so->bytes != ro->bytes) {
      st = ds_err_set(err, DS_EUSAGE,
                      "op %" PRId64 ": send of %.17g bytes meets recv op %" PRId64
                      " of %.17g bytes", op_id(ex, sc, keys[a].rank, keys[a].op), so->bytes,
                      op_id(ex, rc, keys[b].rank, keys[b].op), ro->bytes);
      goto out;
    }
    struct coll_key members[2] = {{-1, keys[a].rank, keys[a].op}, {-1, keys[b].rank, keys[b].op}};
    int32_t gpus[2] = {keys[a].rank, keys[b].rank};
    struct ds_coll_spec spec = {.kind = DS_COLL_SEND, .model = ex->opt.coll_model,
                                .chunks = 1, .bytes = so->bytes, .root = 0};
    st = add_inst(ex, owners, -1, members, gpus, 2, &spec, err);
    if (st != DS_OK) goto out;
    a++, b++;
  }
out:
  free(keys);
  return st;
}

static ds_status build_colls(struct ds_exec *ex, struct coll_owner **owners,
                             struct ds_err *err) {
  size_t n_keys = 0, n_p2p = 0;
  for (int32_t ci = 0; ci < ex->n_classes; ci++) {
    const struct rank_class *c = &ex->classes[ci];
    for (uint32_t e = 0; e < c->n; e++) {
      const struct ds_op *o = op_at(ex, c, e);
      n_p2p += (size_t)c->n_ranks * is_p2p(o->kind);
      n_keys += (size_t)c->n_ranks * (o->coll >= 0 && !is_p2p(o->kind));
    }
  }
  struct coll_key *keys = malloc((n_keys + 1) * sizeof *keys);
  int32_t *gpus = malloc(((size_t)ex->sched->world_size + 1) * sizeof *gpus);
  ex->colls = calloc(n_keys + n_p2p + 1, sizeof *ex->colls);
  *owners = calloc(n_keys + n_p2p + 1, sizeof **owners);
  ds_status st = DS_OK;
  if (!keys || !gpus || !ex->colls || !*owners) {
    st = ds_err_set(err, DS_ENOMEM, "executor: out of memory");
    goto out;
  }
  n_keys = 0;
  for (int32_t ci = 0; ci < ex->n_classes; ci++) {
    const struct rank_class *c = &ex->classes[ci];
    for (uint32_t e = 0; e < c->n; e++) {
      const struct ds_op *o = op_at(ex, c, e);
      if (o->coll < 0 || is_p2p(o->kind)) continue;
      for (int32_t j = 0; j < c->n_ranks; j++)
        keys[n_keys++] = (struct coll_key){o->coll, c->first_rank + j, e};
    }
  }
  qsort(keys, n_keys, sizeof *keys, cmp_coll_key);
  for (size_t i = 0; i < n_keys && st == DS_OK;) {
    size_t j = i;
    while (j < n_keys && keys[j].coll == keys[i].coll) j++;
    st = build_group(ex, *owners, keys + i, (int32_t)(j - i), gpus, err);
    i = j;
  }
  if (st == DS_OK) st = build_p2p(ex, *owners, err);
out:
  free(keys);
  free(gpus);
  return st;
}

/* Class c's local ops from its blocks: template op, dependencies, waiters,
 * stream queues. */
static ds_status build_class(struct ds_exec *ex, struct rank_class *c, struct ds_err *err) {
  const struct ds_shared_schedule *s = ex->sched;
  struct ds_schedule *t = s->tmpl;
  size_t n_deps = 0;
  c->n = 0;
  for (uint32_t i = 0; i < c->n_blocks; i++) {
    const struct ds_sched_block *bl = &s->blocks[c->blocks[i]];
    c->block_at[i] = c->n;
    c->n += bl->n_ops;
    for (uint32_t k = 0; k < bl->n_ops; k++) n_deps += t->ops[bl->first_op + k].dep_count;
  }
  size_t n = c->n;
  c->tmpl = malloc((n + 1) * sizeof *c->tmpl);
  c->block = malloc((n + 1) * sizeof *c->block);
  c->stream = malloc(n + 1);
  c->dep_first = calloc(n + 2, sizeof *c->dep_first);
  c->deps = malloc((n_deps + 1) * sizeof *c->deps);
  c->waiter_first = calloc(n + 2, sizeof *c->waiter_first);
  c->waiters = malloc((n_deps + 1) * sizeof *c->waiters);
  c->qpos = malloc((n + 1) * sizeof *c->qpos);
  c->queue = malloc((n + 1) * sizeof *c->queue);
  c->inst = malloc((n + 1) * sizeof *c->inst);
  if (!c->tmpl || !c->block || !c->stream || !c->dep_first || !c->deps || !c->waiter_first ||
      !c->waiters || !c->qpos || !c->queue || !c->inst)
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  uint32_t e = 0, nd = 0;
  for (uint32_t i = 0; i < c->n_blocks; i++) {
    const struct ds_sched_block *bl = &s->blocks[c->blocks[i]];
    for (uint32_t k = 0; k < bl->n_ops; k++, e++) {
      const struct ds_op *o = &t->ops[bl->first_op + k];
      const int64_t *deps = ds_schedule_deps(t, o);
      c->tmpl[e] = bl->first_op + k;
      c->block[e] = c->blocks[i];
      c->stream[e] = (uint8_t)o->stream;
      c->inst[e] = -1;
      c->dep_first[e] = nd;
      /* Dependencies were checked by ds_shared_validate: each names an op
       * of an earlier or the same block that runs on all of this class. */
      for (uint32_t q = 0; q < o->dep_count; q++) {
        size_t di;
        if (ds_schedule_find(t, deps[q], &di) != 0)
          return ds_err_set(err, DS_EINTERNAL, "op %" PRId64 ": unknown dependency", o->id);
        size_t db = ds_shared_block_of(s, (uint32_t)di);
        uint32_t d = local_of(ex, c->first_rank, db, (uint32_t)di);
        c->deps[nd++] = d;
        c->waiter_first[d + 2]++;
      }
      c->queue_first[o->stream + 1]++;
    }
  }
  c->dep_first[n] = nd;
  for (size_t i = 2; i < n + 2; i++) c->waiter_first[i] += c->waiter_first[i - 1];
  for (int s2 = 1; s2 <= DS_STREAM_COUNT; s2++) c->queue_first[s2] += c->queue_first[s2 - 1];
  uint32_t fill[DS_STREAM_COUNT];
  for (int s2 = 0; s2 < DS_STREAM_COUNT; s2++) fill[s2] = c->queue_first[s2];
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t k = c->dep_first[i]; k < c->dep_first[i + 1]; k++)
      c->waiters[c->waiter_first[c->deps[k] + 1]++] = i;
    enum ds_stream st = t->ops[c->tmpl[i]].stream;
    c->qpos[i] = fill[st] - c->queue_first[st];
    c->queue[fill[st]++] = i;
  }
  return DS_OK;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Ranks split into classes at every block's first and past-last rank: the
 * ranks between two such points run the same blocks. */
static ds_status build_classes(struct ds_exec *ex, struct ds_err *err) {
  const struct ds_shared_schedule *s = ex->sched;
  int32_t w = s->world_size;
  size_t np = 2 * s->n_blocks + 2;
  int32_t *pts = malloc(np * sizeof *pts);
  ex->class_of = malloc(((size_t)w + 1) * sizeof *ex->class_of);
  if (!pts || !ex->class_of) {
    free(pts);
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  }
  np = 0;
  pts[np++] = 0;
  pts[np++] = w;
  for (size_t b = 0; b < s->n_blocks; b++) {
    pts[np++] = s->blocks[b].first_rank;
    pts[np++] = s->blocks[b].first_rank + s->blocks[b].n_ranks;
  }
  qsort(pts, np, sizeof *pts, cmp_i32);
  size_t u = 0;
  for (size_t i = 0; i < np; i++)
    if (u == 0 || pts[i] != pts[u - 1]) pts[u++] = pts[i];
  /* pts[0] = 0, pts[u - 1] = w: u - 1 classes */
  ex->n_classes = (int32_t)(u - 1);
  ex->classes = calloc(u, sizeof *ex->classes);
  if (!ex->classes) {
    free(pts);
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  }
  for (int32_t i = 0; i < ex->n_classes; i++) {
    ex->classes[i].first_rank = pts[i];
    ex->classes[i].n_ranks = pts[i + 1] - pts[i];
    for (int32_t r = pts[i]; r < pts[i + 1]; r++) ex->class_of[r] = i;
  }
  free(pts);
  /* each block's ranks are whole classes: count, then list */
  for (int pass = 0; pass < 2; pass++) {
    for (int32_t i = 0; i < ex->n_classes; i++) {
      struct rank_class *c = &ex->classes[i];
      if (pass == 1) {
        c->blocks = malloc(((size_t)c->n_blocks + 1) * sizeof *c->blocks);
        c->block_at = malloc(((size_t)c->n_blocks + 1) * sizeof *c->block_at);
        if (!c->blocks || !c->block_at)
          return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
      }
      c->n_blocks = 0;
    }
    for (size_t b = 0; b < s->n_blocks; b++) {
      const struct ds_sched_block *bl = &s->blocks[b];
      for (int32_t ci = ex->class_of[bl->first_rank];
           ci < ex->n_classes && ex->classes[ci].first_rank < bl->first_rank + bl->n_ranks;
           ci++) {
        struct rank_class *c = &ex->classes[ci];
        if (pass == 1) c->blocks[c->n_blocks] = (uint32_t)b;
        c->n_blocks++;
      }
    }
  }
  for (int32_t i = 0; i < ex->n_classes; i++)
    DS_CHECK(build_class(ex, &ex->classes[i], err));
  return DS_OK;
}

/* A rank's place in the first cohorts: ranks of one class that start
 * together with the same compute factor run in lockstep. */
struct cohort_key {
  int32_t cls;
  int64_t release_ns;
  double factor;
  int32_t rank;
};

static int cmp_cohort_key(const void *a, const void *b) {
  const struct cohort_key *x = a, *y = b;
  if (x->cls != y->cls) return x->cls < y->cls ? -1 : 1;
  if (x->release_ns != y->release_ns) return x->release_ns < y->release_ns ? -1 : 1;
  if (x->factor != y->factor) return x->factor < y->factor ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_cohort_first(const void *a, const void *b) {
  const struct cohort *x = a, *y = b;
  return (x->mem[0] > y->mem[0]) - (x->mem[0] < y->mem[0]);
}

/* The first cohorts: ranks grouped by (class, release time, compute
 * factor), every rank alone under --jitter or no_lockstep; ids in order of
 * first rank, as the ranks' release events were. */
static ds_status build_cohorts(struct ds_exec *ex, const int64_t *release_ns,
                               struct ds_err *err) {
  int32_t w = ex->sched->world_size;
  int alone = ex->opt.no_lockstep || ex->opt.dur_scale;
  struct cohort_key *keys = malloc(((size_t)w + 1) * sizeof *keys);
  if (!keys) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  for (int32_t r = 0; r < w; r++)
    keys[r] = (struct cohort_key){ex->class_of[r], release_ns[r],
                                  ex->opt.rank_scale ? ex->opt.rank_scale[r] : 1.0, r};
  if (!alone) qsort(keys, (size_t)w, sizeof *keys, cmp_cohort_key);
  for (int32_t i = 0; i < w;) {
    int32_t j = i + 1;
    while (!alone && j < w && keys[j].cls == keys[i].cls &&
           keys[j].release_ns == keys[i].release_ns && keys[j].factor == keys[i].factor)
      j++;
    struct cohort *co = &ex->cohorts[ex->n_cohorts++];
    *co = (struct cohort){.cls = keys[i].cls, .n = j - i, .one = keys[i].rank};
    co->mem = &co->one;
    if (co->n > 1) {
      co->mem = malloc((size_t)co->n * sizeof *co->mem);
      if (!co->mem) {
        co->mem = &co->one;
        free(keys);
        return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
      }
      for (int32_t m = 0; m < co->n; m++) co->mem[m] = keys[i + m].rank;
    }
    i = j;
  }
  free(keys);
  qsort(ex->cohorts, (size_t)ex->n_cohorts, sizeof *ex->cohorts, cmp_cohort_first);
  for (int32_t k = 0; k < ex->n_cohorts; k++) {
    struct cohort *co = &ex->cohorts[k];
    if (co->n == 1) co->mem = &co->one; /* moved by the sort */
    for (int32_t m = 0; m < co->n; m++) ex->cohort_of[co->mem[m]] = k;
    ex->last_end[k] = release_ns[co->mem[0]];
  }
  ex->initial_cohorts = ex->n_cohorts;
  return DS_OK;
}

static ds_status build_run(struct ds_exec *ex, const int64_t *release_ns, struct ds_err *err) {
  size_t w = (size_t)ex->sched->world_size;
  size_t nq = w * DS_STREAM_COUNT;
  ex->queue_head = calloc(nq + 1, sizeof *ex->queue_head);
  ex->queue_busy = calloc(nq + 1, 1);
  ex->head_start = calloc(nq + 1, sizeof *ex->head_start);
  ex->tok = malloc((nq + 1) * sizeof *ex->tok);
  ex->tok_next = malloc((nq + 1) * sizeof *ex->tok_next);
  ex->coll_done = calloc(nq + 1, sizeof *ex->coll_done);
  ex->released = calloc(w + 1, 1);
  ex->comm_busy = calloc(w + 1, sizeof *ex->comm_busy);
  ex->held = calloc(w + 1, sizeof *ex->held);
  ex->running = malloc((w + 1) * sizeof *ex->running);
  ex->last_end = malloc((w + 1) * sizeof *ex->last_end);
  ex->cohorts = calloc(w + 1, sizeof *ex->cohorts);
  ex->cohort_of = malloc((w + 1) * sizeof *ex->cohort_of);
  ex->scratch = malloc((w + 1) * sizeof *ex->scratch);
  if (!ex->queue_head || !ex->queue_busy || !ex->head_start || !ex->tok || !ex->tok_next ||
      !ex->coll_done || !ex->released || !ex->comm_busy || !ex->held || !ex->running ||
      !ex->last_end || !ex->cohorts || !ex->cohort_of || !ex->scratch)
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  for (size_t i = 0; i <= nq; i++) ex->tok[i] = ex->tok_next[i] = -1;
  for (size_t r = 0; r <= w; r++) ex->running[r].op = UINT32_MAX;
  DS_CHECK(build_classes(ex, err));
  return build_cohorts(ex, release_ns, err);
}

struct unfinished {
  int32_t rank;
  uint32_t op;
};

static int find_unfinished(struct ds_exec *ex, int32_t r, uint32_t e, void *ctx) {
  if (op_state(ex, r, e) == 0) return 0;
  *(struct unfinished *)ctx = (struct unfinished){r, e};
  return 1;
}

ds_status ds_exec_run_shared(struct ds_exec *ex, struct ds_shared_schedule *sched,
                             int64_t *rank_time_ns, ds_exec_op_fn on_op, void *ctx,
                             struct ds_err *err) {
  struct coll_owner *owners = NULL;
  ds_status st;
  if (sched->world_size > ex->topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE, "schedule has %d ranks but topology %s has %d GPUs",
                      sched->world_size, ex->topo->name, ex->topo->n_gpus);
  ex->sched = sched;
  ex->on_op = on_op;
  ex->on_op_ctx = ctx;
  ex->rank_time = rank_time_ns;
  ex->ops_done = 0;
  ex->failure = DS_OK;
  ex->err = err;
  DS_CHECK_GOTO(build_run(ex, rank_time_ns, err), st, out);
  DS_CHECK_GOTO(build_colls(ex, &owners, err), st, out);
  for (int32_t k = 0; k < ex->n_cohorts; k++) {
    struct ds_event ev = {.kind = DS_EV_RANK_RELEASE, .a = k};
    int64_t r0 = rank_time_ns[ex->cohorts[k].mem[0]];
    int64_t t = r0 > ds_engine_now(ex->eng) ? r0 : ds_engine_now(ex->eng);
    DS_CHECK_GOTO(ds_engine_schedule(ex->eng, t, &ev, NULL), st, out);
  }
  ds_status run_st = ds_engine_run(ex->eng, INT64_MAX);
  for (int32_t k = 0; k < ex->n_cohorts; k++)
    for (int32_t j = 0; j < ex->cohorts[k].n; j++)
      rank_time_ns[ex->cohorts[k].mem[j]] = ex->last_end[k];
  ex->last_initial = ex->initial_cohorts;
  ex->last_final = ex->n_cohorts;
  if (run_st != DS_OK || ds_engine_overflowed(ex->eng)) {
    st = ds_err_set(err, DS_EINPUT, "%s", DS_ENGINE_OVERFLOW_MSG);
    goto out;
  }
  if (ex->failure != DS_OK) {
    st = ds_err_set(err, ex->failure, "simulation failed: %s",
                    ds_status_message(ex->failure));
    goto out;
  }
  if (ex->ops_done != sched->n_ops) {
    struct unfinished u = {-1, 0};
    if (for_each_op(ex, find_unfinished, &u)) {
      const struct rank_class *c = class_of(ex, u.rank);
      const struct ds_op *o = op_at(ex, c, u.op);
      st = ds_err_set(err, DS_EINPUT,
                      "schedule deadlocks: op %" PRId64 " (rank %d, %s %s) never %s",
                      op_id(ex, c, u.rank, u.op), u.rank, ds_op_kind_name(o->kind), o->name,
                      op_state(ex, u.rank, u.op) == 2 ? "starts" : "ends");
    } else {
      st = ds_err_set(err, DS_EINTERNAL, "schedule deadlocks");
    }
    goto out;
  }
  st = DS_OK;
out:
  free_run(ex);
  free(owners);
  return st;
}

/* ds_exec_run's record of every op's times, by full-schedule index. */
struct full_times {
  const struct ds_shared_schedule *s;
  int64_t *start, *end;
};

static void record_full(void *ctx, size_t block, int32_t rank, uint32_t t, int64_t start_ns,
                        int64_t end_ns) {
  struct full_times *ft = ctx;
  size_t i = ds_shared_index(ft->s, block, rank, t);
  ft->start[i] = start_ns;
  ft->end[i] = end_ns;
}

ds_status ds_exec_run(struct ds_exec *ex, struct ds_schedule *sched,
                      int64_t *rank_time_ns, int64_t *op_start_ns,
                      int64_t *op_end_ns, struct ds_err *err) {
  struct ds_shared_schedule *s;
  for (size_t i = 0; i < sched->n_ops; i++) op_start_ns[i] = op_end_ns[i] = -1;
  if (ds_shared_from_schedule(sched, NULL, 0, &s) != DS_OK)
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  struct full_times ft = {s, op_start_ns, op_end_ns};
  ds_status st = ds_exec_run_shared(ex, s, rank_time_ns, record_full, &ft, err);
  ds_shared_free(s);
  return st;
}
