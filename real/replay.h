/*
 * The replay executor: runs a schedule's iterations on a device, one rank
 * per process, and writes the measured trace (DESIGN.md, "The real
 * backend"). Generic over struct ds_device (device.h) and struct
 * ds_launcher (launch.h).
 */
#ifndef DS_REPLAY_H
#define DS_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "traces/schedule.h"
#include "base/status.h"
#include "device.h"
#include "launch.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What every rank runs. All pointers are borrowed. */
struct ds_replay {
  const struct ds_schedule *sched; /* validated */
  const struct ds_device *dev;
  enum ds_compute_mode compute;
  int32_t iters;                   /* measured iterations, >= 1 */
  int32_t warmup;                  /* iterations run first, not recorded */
  int shared;                      /* several ranks per device allowed */
  const char *trace_path;          /* written by rank 0 */
  const char *schedule_path;       /* for the summary */
  const char *inputs;              /* the trace's "# inputs:" line */
  FILE *out;                       /* rank 0's summary */
  /* Results, on rank 0 when it runs in this process (mpi launcher). */
  int64_t wrong;                   /* wrong collective elements, all ranks */
  double p50_ms, p95_ms, p99_ms;   /* per-iteration wall over the ranks */
};

/* The body every rank runs (a ds_launch_main_fn; arg is a struct
 * ds_replay *): for it in 0 .. warmup+iters-1, barrier, begin_iter, issue
 * the rank's ops in schedule order, end_iter; then rank 0 gathers every
 * rank's times and wrong counts, writes the trace and prints the summary.
 * Rank 0 fails (DS_EIO, "#wrong: N ...") when a collective result was
 * wrong; that and a failure to write the trace come after the last
 * communication (l->finished is set). */
ds_status ds_replay_rank(struct ds_launcher *l, void *arg, struct ds_err *err);

/* The record every rank sends rank 0, in int64s: [0] the rank's wrong
 * count, [1 + k] its host clock (CLOCK_MONOTONIC ns) at the begin of kept
 * iteration k, then from ds_replay_rec_time(most, iters, k, i) the start
 * and end (ns since that begin) of its i-th op in iteration k; -1 where the
 * rank has no such op. most: the busiest rank's op count. */
size_t ds_replay_rec_len(size_t most, int32_t iters);
size_t ds_replay_rec_time(size_t most, int32_t iters, int32_t k, size_t i);

/* A rank's clock placed on the trace's timeline (ds_replay_clocks): the
 * trace time of its clock reading own_ns is ds_replay_clock_at(c, own_ns),
 *   own_ns - shift_ns - round((own_ns - ref_ns) * rate / (1 + rate)),
 * own_ns - shift_ns when rate is 0 (a rank on rank 0's host, or a fit that
 * was not made or not kept). */
enum ds_replay_clock_fit {
  DS_REPLAY_CLOCK_SAME_HOST,   /* rank 0's clock: one shift */
  DS_REPLAY_CLOCK_FITTED,      /* another host: shift and drift fitted */
  DS_REPLAY_CLOCK_FEW_ITERS,   /* another host, fewer than DS_REPLAY_FIT_MIN_ITERS
                                  kept iterations: one shift */
  DS_REPLAY_CLOCK_IMPLAUSIBLE, /* another host, a fitted drift past
                                  DS_REPLAY_MAX_DRIFT_PPM: one shift */
  DS_REPLAY_CLOCK_NO_FIT,      /* another host, the fit failed (did not
                                  converge): one shift */
};
/* Below this many kept iterations no drift is fitted; a fitted drift
 * larger than this, in ppm, is not applied (replay_place.c says why). */
#define DS_REPLAY_FIT_MIN_ITERS 30
#define DS_REPLAY_MAX_DRIFT_PPM 500.0

struct ds_replay_clock {
  int64_t shift_ns;
  int64_t ref_ns;    /* the rank's clock at rank 0's first kept begin (fitted) */
  double rate;       /* the rank's clock's ns per rank 0's ns, less 1 (applied) */
  double fitted_ppm; /* the drift fitted, ppm, also when not applied; 0 when none */
  enum ds_replay_clock_fit fit;
};

/* Each rank's clock on the trace's timeline, clock[world]. A rank on rank
 * 0's host (host[q] == host[0]; every rank when host is NULL) gets one
 * shift, the median over the kept iterations of its begin less rank 0's
 * (every iteration's begins follow one barrier). A rank on another host
 * gets that difference fitted as offset + drift * rank 0's time, robustly
 * (replay_place.c says how), when there are enough iterations and the
 * drift is one a clock can have; else the one shift. All are moved so
 * that the earliest placed begin of iteration 0 is 0. all: world records
 * of len int64s, as rank 0 gathers them; host: world entries (struct
 * ds_launcher's) or NULL. Returns -1 when out of memory, else 0. */
int ds_replay_clocks(const int64_t *all, size_t len, int32_t world, int32_t iters,
                     const int32_t *host, struct ds_replay_clock *clock);

/* The trace time of the reading own_ns of a clock (see above): a
 * non-decreasing function of own_ns, so what one rank measured in order
 * stays in order on the trace. */
int64_t ds_replay_clock_at(const struct ds_replay_clock *c, int64_t own_ns);

/* Where the trace puts op `own` (its place among its rank's ops) of rank
 * `rank` in kept iteration k, given every rank's record (all, as for
 * ds_replay_clocks) and the clocks: *start and *end in ns on the trace's
 * timeline, the rank's begin of iteration k plus the op's times, through
 * ds_replay_clock_at. Returns -1 (nothing written) when the record holds
 * no time for it or an end before the start, else 0. Pure: reads only its
 * arguments. */
int ds_replay_place(const int64_t *all, size_t len, const struct ds_replay_clock *clock,
                    int32_t rank, size_t most, int32_t iters, int32_t k, size_t own,
                    int64_t *start, int64_t *end);

/* The ddpreal command after option parsing: reads the schedule, checks the
 * rank count against the launcher it chooses (mpirun's processes; else, for
 * the cuda device, forked processes; else a singleton MPI process for a
 * one-rank schedule) and runs ds_replay_rank on every rank. argc/argv go to
 * MPI_Init_thread. The summary goes to out. */
ds_status ds_replay_command(int *argc, char ***argv, const struct ds_real_options *opt,
                            FILE *out, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_REPLAY_H */
