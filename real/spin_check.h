/*
 * How long a replay spins before a rank can meet the others, known from the
 * schedule before any rank starts (spin_check.c says why each quantity is
 * the one a wait of the replay sees). The replay command refuses a schedule
 * whose spins would keep a wait past --timeout (replay_check.c).
 */
#ifndef DS_SPIN_CHECK_H
#define DS_SPIN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "device.h"
#include "traces/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the device takes the op's time from its dur_us (a spin, on the
 * CPU or the GPU, a host function, a copy): every op but a collective and,
 * under --compute gemm, a compute op with flops, which runs GEMMs of them. */
int ds_spin_op_spins(const struct ds_op *o, enum ds_compute_mode compute);

/* A wait, and the chain of ops behind it: ops that run one after the other
 * (stream order and deps; for ds_spin_longest_iteration also collectives,
 * which join the ranks). */
struct ds_spin_path {
  double us;          /* the wait: spun microseconds (for the iteration, the
                         chain's dur_us summed) */
  size_t n_spins;     /* spinning ops (dur_us > 0) of the chain from first */
  size_t first;       /* index of the chain's first spinning op that ends
                         after the wait began (SIZE_MAX: none, us 0) */
  size_t last;        /* index of the chain's last op (below) */
  size_t since;       /* the collective whose end the wait runs from (the
                         rank's previous one); SIZE_MAX: the start of the
                         iteration (and for ds_spin_longest_iteration) */
  int ends_at_collective; /* last is the collective the rank enters after
                             the chain (1), or the chain's last spinning op,
                             which ends the rank's iteration (0) */
};

/* Steps (ops reached and dependencies followed) of the exact wait over the
 * whole schedule, past which ds_spin_longest_wait gives the chain since the
 * last meeting instead (never shorter): ~1 s, far above ddpsim's schedules
 * (GPT-2 DDP, 4 ranks: 3484 ops). A parameter so that a test reaches the
 * fallback without a giant schedule. */
#define DS_SPIN_EXACT_STEPS 1e8

/* The longest the other ranks may wait for one rank's spins, over every
 * rank: from the end of its previous collective (or the start of the
 * iteration), before which the others cannot enter, to its entry into the
 * next (or the end of its iteration, for the barrier before the next),
 * whatever the others run and however long collectives take (spin_check.c
 * derives it), or past max_steps of work the chain since the rank's last
 * meeting, which is never shorter. Depends on the rank's own ops only. s is borrowed (its id
 * index may be built). DS_ENOMEM, or DS_EINTERNAL for a dependency that is
 * no op (s not validated). */
ds_status ds_spin_longest_wait(struct ds_schedule *s, enum ds_compute_mode compute,
                               double max_steps, struct ds_spin_path *out, struct ds_err *err);

/* The longest chain of spins in one iteration over all ranks, collectives
 * taking no time but joining the ranks (a collective ends when its last rank
 * enters it): the least time any device needs for an iteration, which the
 * cuda device waits for in one bounded wait (dev_cuda.cu, end_iter). The
 * chain may cross ranks at a collective. Needs every rank to run the same
 * collectives in the same order (ds_check_collectives); DS_EINTERNAL
 * otherwise, DS_ENOMEM. */
ds_status ds_spin_longest_iteration(struct ds_schedule *s, enum ds_compute_mode compute,
                                    struct ds_spin_path *out, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_SPIN_CHECK_H */
