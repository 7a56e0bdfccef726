/*
 * Internal to the executor (sim/train/exec.c, exec_classes.c,
 * exec_cohort.c, exec_ops.c, exec_colls.c; exec.c's top comment explains
 * classes, cohorts and tokens): the state of struct ds_exec and the calls
 * between the five files. Not for other modules.
 */
#ifndef DS_EXEC_IMPL_H
#define DS_EXEC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "sim/coll/coll.h"
#include "sim/train/exec.h"
#include "sim/train/interference.h"

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

/* Ranks of one class in lockstep (exec.c's top comment, "Lockstep"). */
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
  double dur_ns;      /* its stand-alone duration: left_ns as it started */
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

/* Collective callbacks carry the instance through a small trampoline so
 * that the coll module only knows (owner, member). */
struct coll_owner {
  struct ds_exec *ex;
  int32_t inst;
};

/* ---- inline: used by more than one file, several per event ------------ */

/* Records the first failure inside a handler (ex->failure). */
static inline void fail(struct ds_exec *ex, ds_status st) {
  if (ex->failure == DS_OK) ex->failure = st;
}

static inline uint32_t queue_index(int32_t cohort, enum ds_stream s) {
  return (uint32_t)cohort * DS_STREAM_COUNT + (uint32_t)s;
}

static inline struct rank_class *class_of(struct ds_exec *ex, int32_t rank) {
  return &ex->classes[ex->class_of[rank]];
}

static inline struct rank_class *cohort_class(struct ds_exec *ex, int32_t k) {
  return &ex->classes[ex->cohorts[k].cls];
}

static inline const struct ds_op *op_at(const struct ds_exec *ex,
                                        const struct rank_class *c, uint32_t e) {
  return &ex->sched->tmpl->ops[c->tmpl[e]];
}

static inline int64_t op_id(const struct ds_exec *ex, const struct rank_class *c,
                            int32_t rank, uint32_t e) {
  return ds_shared_id(ex->sched, c->block[e], rank, c->tmpl[e]);
}

/* ---- exec_classes.c: the classes' local ops -------------------------- */

/* Splits the schedule's ranks into classes and builds each's local ops
 * (ex->classes, ex->class_of). */
ds_status ds__exec_build_classes(struct ds_exec *ex, struct ds_err *err);
/* Calls fn(ex, rank, local op, ctx) for every op in full-schedule order
 * until it returns nonzero; returns that. */
int ds__exec_for_each_op(struct ds_exec *ex,
                         int (*fn)(struct ds_exec *, int32_t, uint32_t, void *), void *ctx);

/* ---- exec_cohort.c: ranks in lockstep and their op-done events --------- */

/* The first cohorts, from each rank's release time. */
ds_status ds__exec_build_cohorts(struct ds_exec *ex, const int64_t *release_ns,
                                 struct ds_err *err);
/* Schedules cohort k's op e on stream s to end at time t: a new token with
 * k alone. */
void ds__exec_schedule_done(struct ds_exec *ex, int32_t k, uint32_t e, enum ds_stream s,
                            int64_t t);
/* Takes cohort k off the token of its stream s's head; cancels the event
 * when no other cohort waits for it. */
void ds__exec_leave_token(struct ds_exec *ex, int32_t k, enum ds_stream s);
/* Token id's event: every cohort on it ends its op. */
void ds__exec_fire_token(struct ds_exec *ex, int32_t id);
/* A member's collective op ended (the collectives' on_done; owner is a
 * struct coll_owner). */
void ds__exec_on_member_done(void *owner, int32_t member);

/* ---- exec_ops.c: starting and finishing ops ---------------------------- */

/* Starts the head op of queue q (cohort, stream) if it may start. */
void ds__exec_try_start_queue(struct ds_exec *ex, uint32_t q);
/* Cohort k's local op e ended now. */
void ds__exec_finish_op(struct ds_exec *ex, int32_t k, uint32_t e);

/* ---- exec_colls.c: the collective instances ---------------------------- */

/* One instance per collective and per send/recv pair of the run, with the
 * owners their callbacks carry (*owners: returned owned). */
ds_status ds__exec_build_colls(struct ds_exec *ex, struct coll_owner **owners,
                               struct ds_err *err);
/* The network's callbacks (owner: the executor), passed on to the
 * collective whose instance the flow's tag names. */
void ds__exec_on_flow_sent(void *owner, uint64_t tag);
void ds__exec_on_flow_done(void *owner, uint64_t tag);

#endif /* DS_EXEC_IMPL_H */
