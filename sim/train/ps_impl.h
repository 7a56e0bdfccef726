/*
 * Internal to the parameter server (sim/train/ps.c, the event loop and the
 * run; sim/train/ps_window.c, where the ops' times are kept;
 * sim/train/ps_schedule.c, the workers' program and each iteration's
 * ops; sim/train/ps_shard.c, the sharding, needs none of this): the
 * simulation's state, the layout of an iteration's ops and the routes.
 * Not for other modules.
 */
#ifndef DS_PS_IMPL_H
#define DS_PS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "sim/net/engine.h"
#include "sim/train/jitter.h"
#include "sim/train/ps.h"

struct layout {
  int32_t W, K;
  int32_t per_w;    /* program length: compute ops and pushes */
  int32_t n_update; /* K or W * K */
  size_t n_step;    /* ops per iteration */
};

/* One entry of a worker's program (the same for every worker). */
struct entry {
  enum ds_op_kind kind; /* fwd, loss, bwd or push */
  int32_t layer;        /* -1 for the loss and whole-shard pushes */
  int32_t k;            /* push: the server */
  double bytes;         /* push: gradient bytes */
  int host;             /* a host launch (fwd: the Python thread's, bwd: the
                           autograd thread's) of the next entry's kernel */
  int sync;             /* host: a sync after the entry before it (host.h), which
                           waits for that kernel; the launches after it are timed
                           from its wait's end */
  int64_t host_from_ns, host_to_ns; /* host: when it runs, from the step's start,
                                       its host work alone (no wait) */
};

static inline size_t ds__ps_ix_prog(const struct layout *y, int32_t w, int32_t j) {
  return (size_t)w * (size_t)y->per_w + (size_t)j;
}
/* w is ignored in sync mode (one update per server). */
static inline size_t ds__ps_ix_update(const struct layout *y, int32_t w, int32_t k) {
  size_t base = (size_t)y->W * (size_t)y->per_w;
  return base + (y->n_update == y->K ? (size_t)k : (size_t)w * (size_t)y->K + (size_t)k);
}
static inline size_t ds__ps_ix_pull(const struct layout *y, int32_t w, int32_t k) {
  return (size_t)y->W * (size_t)y->per_w + (size_t)y->n_update +
         (size_t)w * (size_t)y->K + (size_t)k;
}

/* A worker-server route, one per direction: its links alone, 8 bytes, as
 * there are workers x servers x 2 of them (the latency and the bottleneck
 * are summed from the links where needed, ds__ps_route_lat_ns). */
struct route {
  int32_t first, len; /* into ps_sim.links; len 0: device-local copy */
};

/* One iteration some worker is in, held (ps.c's window) only where the
 * iteration's ops are needed together after their workers have moved on:
 * a consumer's (on_iter) rows, which go out a step at a time, and sync's
 * updates, one per server for every worker. */
struct ps_block {
  int64_t *start, *end;   /* on_iter: [n_step], op j of the iteration the
                             one-step schedule's op j; else NULL */
  int64_t *ustart, *uend; /* sync: [K] the servers' updates; else NULL;
                             -1 until timed */
  int32_t left;           /* workers that have not finished the iteration */
  struct ps_block *next;  /* in the spare list */
};

/* One worker's jitter draws of one step, one per compute entry of the
 * program (cmp_of), in its worker's queue or in the spare list. */
struct ps_draw_step {
  struct ps_draw_step *next;
  double v[];
};

/* Worker w's jitter draws (ps_window.c): those of the steps from the one it
 * is in to the latest any worker has entered, oldest first, drawn when the
 * first worker entered each; a step's go back to the spare list when the
 * worker ends it. */
struct ps_draws {
  struct ps_draw_step *head, *tail;
};

/* The simulation's state (ps.c), which the schedule's builders read
 * (ps_schedule.c). */
struct ps_sim {
  struct ds_topo *topo;
  const struct ds_model *model;
  const struct ds_compute *c;
  const struct ds_ps_options *opt;
  struct ds_ps_shards sh;
  struct layout y;
  struct entry *prog;     /* [n_prog] */
  int32_t n_prog;
  int32_t *pieces;        /* [K] pushes per worker to server k */
  int32_t *last_push;     /* [K] program index of the last push to server k */
  /* [K] server k's update beyond its roofline: its other kernels'
   * overheads and its foreach step's host (update_extra_ns) */
  double *update_extra_ns;
  const struct ds_schedule *step; /* one iteration's ops (the result's) */
  struct ds_ps_result *result;
  struct ds_err *err;
  int err_set;            /* failure's message is in err already */
  /* the window: iterations lo..hi are laid out (hi: the latest any worker
   * has entered) and not yet retired; where blocks are kept (track: sync,
   * or a consumer), iteration i's at ring[i % ring_cap] */
  int track;
  struct ps_block **ring;
  size_t ring_cap;
  int32_t lo, hi;
  struct ps_block *spare; /* retired blocks, reused */
  size_t n_blocks;        /* blocks allocated: the window's widest */
  /* each worker's ops of the iteration it is in: its program, its updates
   * (async: one per server), its pulls; worker w's at [w * n_own ..], -1
   * until timed */
  size_t n_own;
  int64_t *own_start, *own_end;
  int32_t *cmp_of;        /* [per_w] index of a compute entry among them, else -1 */
  int32_t n_cmp;
  struct ps_draws *draws; /* [W] with jitter, else NULL */
  struct ps_draw_step *draw_spare; /* ended steps' draws, reused */
  size_t n_draw_spare;
  uint64_t workers_done;  /* (worker, iteration) pairs ended, of W x iters */
  double held_bytes, held_peak; /* per-step state held (ds_ps_result held_bytes) */
  /* where the caller bounds the step too (step_mem_limit), one step's
   * estimate (check_pairs), taken from mem_limit before the kept trace
   * (check_kept) and the window and draws (ds__ps_mem_left) are checked
   * against it, so the step and either stay within it together (the step's
   * estimate counts the ops' own times, which the window counts too: the
   * bound errs on the safe side by 48 bytes an op) */
  double step_bytes;
  uint64_t ops_ended;     /* ops whose end was an event, of timed_per_step x iters */
  uint64_t timed_per_step;
  struct ds_jitter *jitter; /* NULL without --jitter */
  int32_t *links;         /* route link ids */
  struct route *routes;   /* [(w * K + k) * 2 + dir], dir 0 push, 1 pull */
  double local_bw;
  struct ds_engine *eng;
  struct ds_net *net;
  ds_status failure;
  /* workers */
  int32_t *iter;          /* [W] current iteration */
  int32_t *pos;           /* [W] next program entry of the iteration */
  int32_t *pulls_left;    /* [W] */
  int64_t *first_end;     /* [W] end of the worker's iteration 0 */
  int64_t *last_end;      /* [W] end of its last */
  /* servers */
  int32_t *arrived;       /* sync: [K] pushes of the step; async: [W * K] */
  int64_t *version;       /* [K] updates applied */
  int64_t *pulled;        /* async: [W * K] version each worker last pulled
                             (staleness); sync: NULL */
  size_t *queue;          /* [K * queue_cap] FIFO of update op indices
                             (async: W + 1; sync: 2, ps.c queue_cap) */
  int32_t *q_head, *q_len;
  uint8_t *busy;          /* [K] */
  double stale_sum;
  int64_t stale_max, n_updates;
  /* async: ds_ps_result.before_last_rank0's room, and the bounds that
   * decide what it keeps: the latest end of rank 0's worker ops of the
   * earlier iterations (where its last step starts) and of its last step
   * (INT64_MIN until worker 0 has ended it) */
  size_t late_cap;
  int64_t rank0_worker_end_ns, rank0_last_end_ns;
};

/* Worker w's route to server k (pull 0) or back (pull 1). */
static inline const struct route *ds__ps_route_of(const struct ps_sim *s, int32_t w, int32_t k,
                                                  int pull) {
  return &s->routes[((size_t)w * (size_t)s->y.K + (size_t)k) * 2 + (size_t)pull];
}

/* A route's latency, its links' summed in order (0 for a device-local
 * copy), and its bottleneck alone (local: the copy rate, s->local_bw). */
double ds__ps_route_lat_ns(const struct ps_sim *s, const struct route *r);
double ds__ps_route_bw(const struct ps_sim *s, const struct route *r);

/* Server k's update beyond its roofline for each of the sh->n servers
 * (malloc'd; NULL when out of memory) (ps_schedule.c). */
double *ds__ps_update_extra_ns(const struct ds_model *m, const struct ds_compute *c,
                               const struct ds_ps_shards *sh, enum ds_ps_mode mode,
                               int32_t world);
/* The worker's program, s->prog (ps_schedule.c). */
ds_status ds__ps_build_program(struct ps_sim *s);
/* One iteration's ops, ids 0..n_step-1, what every iteration runs
 * (ps_schedule.c). */
ds_status ds__ps_build_iteration(const struct ps_sim *s, struct ds_schedule *out);

/* Where the run keeps its ops' times (ps_window.c): each worker's ops of
 * its step, the window's blocks, the jitter draws. */
/* Allocates each worker's ops and draws (after s->step is built). */
ds_status ds__ps_window_init(struct ps_sim *s);
void ds__ps_window_free(struct ps_sim *s);
/* The start (end 0) or the end (end 1) of op `op` of the run, live: its
 * worker is in its iteration, or, a sync update, its iteration's block is
 * laid out. */
int64_t *ds__ps_op_time(const struct ps_sim *s, size_t op, int end);
/* Worker w's jitter draw for program entry j (a compute op) of its step. */
double ds__ps_draw(const struct ps_sim *s, int32_t w, int32_t j);
/* What opt->mem_limit leaves the kept trace, the window and the draws: the
 * limit less one step's estimate (ps_sim step_bytes); why (NULL: none)
 * receives the message's account of it. */
double ds__ps_mem_left(const struct ps_sim *s, char *why, size_t cap);
/* Lays out iteration iter (= hi + 1), the first worker entering it.
 * DS_EINPUT (message in s->err, err_set) when what the run holds (its
 * block, the draws) would pass what opt->mem_limit leaves them
 * (ds__ps_mem_left). */
ds_status ds__ps_lay_out(struct ps_sim *s, int32_t iter);
/* Worker w has ended iteration iter: its ops are kept, the iterations every
 * worker has ended are handed on, and the next is laid out if w is the
 * first there. A consumer's failure comes back (err_set). */
ds_status ds__ps_worker_done(struct ps_sim *s, int32_t w, int32_t iter);
/* The run ended with a step unended: DS_EINTERNAL naming the first op that
 * never ran, else the step. */
ds_status ds__ps_unended(struct ps_sim *s);

#endif /* DS_PS_IMPL_H */
