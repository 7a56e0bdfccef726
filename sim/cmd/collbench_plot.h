/*
 * `ddpsim collective --plot FILE [--reference CSV]`: busbw against size,
 * one curve per (op, algo, proto) group of the printed rows, and the points
 * of a measured table (nccl-tests' all_reduce_perf as in
 * ../shared/data/nccl_allreduce_8xa100_azure.csv, or a `ddpsim collective
 * --format csv` table) for comparison. Drawn by gnuplot
 * (base/gnuplot.h): written atomically, a missing gnuplot is an error.
 */
#ifndef DS_COLLBENCH_PLOT_H
#define DS_COLLBENCH_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_busbw_point {
  double size_bytes;
  double busbw_gbps;
  int32_t group; /* index into ds_busbw_set.groups */
  int32_t ranks; /* a reference row's rank count; 0 where its table has none */
};

#define DS_BUSBW_MAX_GROUPS 32
#define DS_BUSBW_GROUP_MAX 64

/* Points in the order added; groups in order of first appearance. */
struct ds_busbw_set {
  struct ds_busbw_point *p; /* owned */
  size_t n, cap;
  char groups[DS_BUSBW_MAX_GROUPS][DS_BUSBW_GROUP_MAX];
  int32_t n_groups;
};

/* Adds a point to the curve named group ("allreduce ring/LL128"). */
ds_status ds_busbw_add(struct ds_busbw_set *s, const char *group, double size_bytes,
                       double busbw_gbps);
void ds_busbw_release(struct ds_busbw_set *s);

/* Reads a reference table: CSV (RFC 4180, libcsv), `#` and blank lines
 * skipped, a header row naming the size column (size_bytes,
 * size_bytes_assumed_2^k or size, in bytes) and the busbw column
 * (busbw_gbps, busbw_GBps_inplace_published or busbw, in GB/s), and
 * optionally the rank count (n_ranks, nranks or ranks) and the op (op or
 * collective), then one row per size. Errors are DS_EINPUT naming
 * FILE:LINE (and :FIELD and the column for a bad value). When op is not
 * NULL, a row whose op column names another op (case, '_' and '-'
 * ignored: all_reduce is allreduce) is DS_EINPUT naming both ops; a table
 * without the column is not checked (nccl-tests' own tables name the op
 * only in their binary's name). Points go to group 0, named
 * "reference: BASENAME". */
ds_status ds_busbw_reference_load(const char *path, const char *op, struct ds_busbw_set *out,
                                  struct ds_err *err);

/* Keeps the points measured at `ranks` ranks: those of a row whose rank
 * column (n_ranks, nranks or ranks) says another count are dropped
 * (*dropped counts them), rows of a table without the column kept. None
 * left is DS_EINPUT naming path and the counts the table has: its busbw
 * was measured on another number of GPUs than the run compares it with. */
ds_status ds_busbw_keep_ranks(struct ds_busbw_set *s, const char *path, int32_t ranks,
                              const char *ranks_from, size_t *dropped, struct ds_err *err);

/* Draws the curves of sim and, when ref is not NULL, ref's points into
 * path (.png or .svg); title on top. */
ds_status ds_busbw_plot(const char *path, const char *title, const struct ds_busbw_set *sim,
                        const struct ds_busbw_set *ref, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_COLLBENCH_PLOT_H */
