/*
 * What the two replay devices (dev_cpu.c over MPI, dev_cuda.cu over NCCL)
 * work out the same way from a schedule before they run it: which ops are
 * compute, how many floats each collective reads and writes, and the index
 * of every dependency. Written once so that the devices cannot drift (the
 * cuda device's buffers are "those of the cpu device"). No MPI, no CUDA.
 */
#ifndef DS_DEV_COMMON_H
#define DS_DEV_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "traces/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Forward, backward, loss and step: the ops --compute gemm runs as GEMMs. */
int ds__dev_is_compute(enum ds_op_kind k);

/* Floats collective op o reads from the rank's input buffer (*n_in) and
 * writes to its own output region (*n_out) on rank `rank` of `world`.
 * o->bytes is the full buffer as nccl-tests counts it: all-gather and gather
 * receive it (bytes/world from each rank), reduce-scatter and scatter send
 * it (bytes/world to each rank). An all-reduce runs in place (its output
 * holds the input); a broadcast reads the input at its root, out of place
 * as NCCL's does; the cpu device's MPI_Bcast runs in place on the output
 * and sets *n_in to 0 itself. Not a collective: both 0. */
void ds__dev_coll_counts(const struct ds_op *o, int32_t rank, int32_t world, size_t *n_in,
                         size_t *n_out);

/* *dep_idx (returned owned, free() it; at least one entry): the index in
 * s->ops of each dependency id s->deps[k]. The schedule is validated, so
 * every id is an op's; one that is not is DS_EINTERNAL. `device` ("cpu
 * device") starts the messages. */
ds_status ds__dev_map_deps(const struct ds_schedule *s, const char *device, size_t **dep_idx,
                           struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_DEV_COMMON_H */
