/*
 * The checks a trace needs as a whole, which its reader cannot make row by
 * row: (iter, rank, id) names one op (the join key ddpsim analyze matches two
 * traces on, traces/SCHEMA.md "Join key"), and every dependency names an op
 * of its own rank earlier in the file in the same iteration, or one of the
 * iteration before (SCHEMA.md, "Dependencies in a trace": iteration 1's
 * first op may name iteration 0's last step).
 *
 * The iterations follow one another, too: the metrics time an iteration from
 * the end of the ones before it to its own last end (analysis/metrics.h),
 * so an iteration whose last op ends before an earlier iteration's would
 * last a negative time.
 *
 * A schedule's ids are unique outright and ds_schedule_validate checks them;
 * a trace repeats them once per iteration, so it needs its own check.
 */
#ifndef DS_TRACE_KEYS_H
#define DS_TRACE_KEYS_H

#include <stddef.h>

#include "base/status.h"
#include "traces/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DS_OK when every row's (iter, rank, id) is its own and every dependency
 * resolves; otherwise DS_EINPUT with the message in err (without a file
 * name: the caller prefixes "FILE:LINE: "), *bad the index of the row at
 * fault (the later of two rows sharing a key) and *other the row it clashes
 * with (or *bad itself). DS_ENOMEM when the index cannot be allocated. */
ds_status ds_trace_check_keys(const struct ds_trace *t, size_t *bad, size_t *other,
                              struct ds_err *err);

/* DS_OK when every iteration's latest end_us is no earlier than the latest
 * of the iterations before it (in iteration order); otherwise DS_EINPUT,
 * *bad the row holding the iteration's latest end and *other the row of the
 * earlier iteration's later end. DS_ENOMEM as ds_trace_check_keys. */
ds_status ds_trace_check_iter_ends(const struct ds_trace *t, size_t *bad, size_t *other,
                                   struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_TRACE_KEYS_H */
