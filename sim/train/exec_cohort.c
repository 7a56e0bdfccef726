/*
 * The executor's cohorts (exec.c's top comment, "Lockstep"): the first
 * cohorts of a run, the tokens through which cohorts split off one another
 * share their pending op-done events, and the splits where a collective
 * ends a cohort's members at different times. Invariant: a (cohort, stream)
 * is on at most one token, its running head's.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "sim/train/exec_impl.h"

/* Schedules cohort k's op e on stream s to end at time t: a new token with
 * k alone. */
void ds__exec_schedule_done(struct ds_exec *ex, int32_t k, uint32_t e, enum ds_stream s,
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
void ds__exec_leave_token(struct ds_exec *ex, int32_t k, enum ds_stream s) {
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

/* A member's collective op ended. In a collective that ends its members
 * together the cohort's op ends at its last member; otherwise the member
 * leaves its cohort (its fellows end later, or on their own). */
void ds__exec_on_member_done(void *owner, int32_t member) {
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
  ds__exec_finish_op(ex, k, e);
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
void ds__exec_fire_token(struct ds_exec *ex, int32_t id) {
  struct token tk = ex->tokens[id];
  free_token(ex, id);
  int32_t n = 0;
  for (int32_t k = tk.head; k >= 0; k = ex->tok_next[queue_index(k, tk.stream)])
    ex->scratch[n++] = k;
  for (int32_t i = 0; i < n; i++) ex->tok[queue_index(ex->scratch[i], tk.stream)] = -1;
  if (n == 1) {
    ds__exec_finish_op(ex, ex->scratch[0], tk.op);
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
  for (int32_t i = 0; i < n; i++) ds__exec_finish_op(ex, ks[i].cohort, tk.op);
  free(ks);
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
ds_status ds__exec_build_cohorts(struct ds_exec *ex, const int64_t *release_ns,
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
