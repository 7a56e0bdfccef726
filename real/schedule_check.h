/*
 * What every replay device needs of a schedule's collectives before it
 * runs one (dev_cpu.c over MPI_COMM_WORLD, dev_cuda.cu over one NCCL
 * communicator): kinds the devices run, collectives on the comm stream, a
 * root in range, and every rank's sequence of collectives equal to rank
 * 0's, since a different order deadlocks either library. Checked on the
 * whole schedule, so every rank reaches the same verdict.
 */
#ifndef DS_SCHEDULE_CHECK_H
#define DS_SCHEDULE_CHECK_H

#include <stdint.h>

#include "base/status.h"
#include "traces/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The words a device's messages use, and its one size limit. */
struct ds_coll_rules {
  const char *device;    /* "cpu", "cuda" */
  const char *comm_note; /* after "comm stream only": "" or " (one NCCL communicator)" */
  const char *group;     /* "(MPI_COMM_WORLD)", "(one NCCL communicator)" */
  const char *library;   /* what deadlocks on a mismatch: "MPI", "NCCL" */
  const char *all_ranks; /* after "every collective over all ranks": "" or " (MPI_COMM_WORLD)" */
  double max_floats;     /* floats one call takes (0: no limit) */
};

/* Reduce, broadcast, gather and scatter name a root rank. */
int ds_op_kind_is_rooted(enum ds_op_kind k);

/* The devices' rules: dev_cpu.c's (MPI) and dev_cuda.cu's (NCCL). The
 * replay command checks the schedule against its device's before it starts
 * any rank, so that a bad schedule is one message naming FILE:LINE. */
extern const struct ds_coll_rules ds_coll_rules_cpu;
extern const struct ds_coll_rules ds_coll_rules_cuda;

/* DS_OK, or DS_EINPUT naming the first op that breaks a rule (DS_ENOMEM). */
ds_status ds_check_collectives(const struct ds_schedule *s, int32_t world,
                               const struct ds_coll_rules *rules, struct ds_err *err);
/* The same; on DS_EINPUT *bad is the index of the op the message names, or
 * SIZE_MAX when it names a rank (too few or too many collectives). */
ds_status ds_check_collectives_at(const struct ds_schedule *s, int32_t world,
                                  const struct ds_coll_rules *rules, size_t *bad,
                                  struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif
