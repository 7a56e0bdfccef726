/*
 * Files drawn from a comparison: Chrome trace / Perfetto JSON (chrome.c) and
 * a gnuplot timeline (plot.c). Both write to a temporary name beside the
 * target and rename it into place, so a failure leaves no partial file.
 */
#ifndef DS_EXPORT_H
#define DS_EXPORT_H

#include "compare.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every row of both traces as a complete event ("ph": "X", ts and dur in
 * microseconds); pid = rank for the predicted trace and world_size + rank
 * for the measured one, named "predicted rank R" / "measured rank R"; tid =
 * the stream (0 compute, 1 comm, 2 copy, 3 host). */
ds_status ds_chrome_write(const char *path, const struct ds_compare *c,
                          struct ds_err *err);

/* A Gantt chart of the predicted iteration above the measured iteration of
 * median time, one row per (rank, stream), buckets labelled, on one time
 * axis from each iteration's start. The extension picks the format (.png
 * or .svg). gnuplot is found on PATH (or $DDPSIM_GNUPLOT); when it is
 * missing or fails the status is DS_EIO (exit 1) with what to do. */
ds_status ds_plot_write(const char *path, const struct ds_compare *c,
                        struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_EXPORT_H */
