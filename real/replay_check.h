/*
 * What the ddpreal command checks of its schedule before any rank starts
 * (replay.c's ds_replay_command, then the launcher): the schedule read,
 * its collectives against the device's rules, every spin against
 * --timeout, the size of each rank's results against one MPI_Gather. No
 * MPI, no device: the fuzz harness (fuzz/readers.c) links it alone.
 */
#ifndef DS_REPLAY_CHECK_H
#define DS_REPLAY_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "traces/schedule.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Each op's place among its rank's ops (own[i], when own is not NULL) and
 * the most ops one rank has; SIZE_MAX when out of memory. */
size_t ds_replay_own_places(const struct ds_schedule *s, size_t *own);

/* Reads opt->schedule and checks it as the device opt->device would run
 * it (cuda's rules only when built with CUDA: DS_HAVE_CUDA), each spin
 * (ds_real_timeout_s) and, when use_mpi, one rank's record against
 * MPI_Gather's INT_MAX bytes at opt->iters. DS_EINPUT naming FILE:LINE
 * (DS_EUSAGE for --iters, naming the largest that fits); on DS_OK *out is
 * the schedule (the caller's, ds_schedule_free) and *most the busiest
 * rank's op count. */
ds_status ds_replay_check(const struct ds_real_options *opt, int use_mpi,
                          struct ds_schedule **out, size_t *most, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_REPLAY_CHECK_H */
