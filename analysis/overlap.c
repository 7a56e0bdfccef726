/*
 * Union and uncovered length of interval sets (overlap.h). Linear after the
 * sort: both sets are merged first, so each is a sorted list of disjoint
 * intervals and one sweep over the two lists suffices.
 */
#include "analysis/overlap.h"

#include <stdlib.h>

static int cmp_interval(const void *a, const void *b) {
  const struct ds_interval *x = a, *y = b;
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

size_t ds_overlap_merge(struct ds_interval *iv, size_t n) {
  if (n == 0) return 0;
  qsort(iv, n, sizeof *iv, cmp_interval);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k > 0 && iv[i].start_ns <= iv[k - 1].end_ns) {
      if (iv[i].end_ns > iv[k - 1].end_ns) iv[k - 1].end_ns = iv[i].end_ns;
    } else {
      iv[k++] = iv[i];
    }
  }
  return k;
}

int64_t ds_overlap_total_ns(const struct ds_interval *iv, size_t n) {
  int64_t t = 0;
  for (size_t i = 0; i < n; i++) t += iv[i].end_ns - iv[i].start_ns;
  return t;
}

int64_t ds_overlap_uncovered_ns(const struct ds_interval *a, size_t na,
                                const struct ds_interval *b, size_t nb) {
  int64_t out = 0;
  size_t j = 0;
  for (size_t i = 0; i < na; i++) {
    int64_t cur = a[i].start_ns;
    while (j < nb && b[j].end_ns <= cur) j++;
    for (size_t k = j; k < nb && b[k].start_ns < a[i].end_ns; k++) {
      if (b[k].start_ns > cur) out += b[k].start_ns - cur;
      if (b[k].end_ns > cur) cur = b[k].end_ns;
      if (cur >= a[i].end_ns) break;
    }
    if (cur < a[i].end_ns) out += a[i].end_ns - cur;
  }
  return out;
}
