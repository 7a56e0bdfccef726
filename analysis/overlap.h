/*
 * Interval arithmetic behind the overlap metrics: the union of a set of
 * busy intervals and the part of one union not covered by another.
 * analysis/metrics.c, the one definition of the metrics, uses it.
 */
#ifndef DS_OVERLAP_H
#define DS_OVERLAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A half-open busy interval [start_ns, end_ns). */
struct ds_interval {
  int64_t start_ns;
  int64_t end_ns;
};

/* Sorts iv[0..n) by start and merges overlapping or touching intervals in
 * place; returns the new count. */
size_t ds_overlap_merge(struct ds_interval *iv, size_t n);

/* Total length of n merged intervals. */
int64_t ds_overlap_total_ns(const struct ds_interval *iv, size_t n);

/* Length of the merged set a minus its intersection with the merged set b:
 * for a = communication and b = compute, the exposed communication. */
int64_t ds_overlap_uncovered_ns(const struct ds_interval *a, size_t na,
                                const struct ds_interval *b, size_t nb);

#ifdef __cplusplus
}
#endif

#endif /* DS_OVERLAP_H */
