/*
 * Files drawn from a comparison or from one trace alone: Chrome trace /
 * Perfetto JSON (chrome.c) and a gnuplot timeline (plot.c). Both write to a
 * temporary name beside the target and rename it into place, so a failure
 * leaves no partial file; ds_export_write (export.c) writes the two of one
 * command together.
 */
#ifndef DS_EXPORT_H
#define DS_EXPORT_H

#include "analysis/compare.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every row of both traces as a complete event ("ph": "X", ts and dur in
 * microseconds); pid = rank for the predicted trace and world_size + rank
 * for the measured one, named "predicted rank R" / "measured rank R"; tid =
 * the stream (0 compute, 1 comm, 2 copy, 3 host), or 4k + the stream for an
 * op that overlaps its stream's without nesting ("comm 2", ...: events on
 * one thread must nest). One trace alone (c->meas
 * NULL): only its pids 0..world_size-1, named "predicted" for a ddpsim
 * trace and "measured" for a ddpreal one. */
ds_status ds_chrome_write(const char *path, const struct ds_compare *c,
                          struct ds_err *err);

/* A Gantt chart of the predicted iteration above the measured iteration of
 * median time, one row per (rank, stream), buckets labelled, on one time
 * axis from each iteration's start; one trace alone: its iteration only,
 * the title naming the trace (c->label) and how the iteration was chosen.
 * The extension picks the format (.png or .svg). gnuplot is found on PATH
 * (or $DDPSIM_GNUPLOT); when it is missing or fails the status is DS_EIO
 * (exit 1) with what to do. */
ds_status ds_plot_write(const char *path, const struct ds_compare *c,
                        struct ds_err *err);

/* DS_EUSAGE, naming the size and the ways out, when the timeline path
 * names (.png, drawn by cairo) would be taller than cairo's largest
 * surface with lanes_per_side (rank, stream) rows on each of sides (1: one
 * trace, 2: predicted above measured); DS_OK otherwise. ds_plot_write
 * checks it, and ddpsim before its simulation, whose schedule gives the
 * lanes (sim/cli/run_schedule.c). */
ds_status ds_plot_check_size(const char *path, size_t lanes_per_side, int sides,
                             struct ds_err *err);

/* Writes the Chrome JSON (when chrome is not NULL) and the plot (when plot
 * is not NULL). Both or, on failure, neither, and no temporary file, when
 * the caller registered both with ds_atomic_file_defer and ends with
 * ds_atomic_file_finish (the renames happen there); "-" (standard output)
 * is written at once. */
ds_status ds_export_write(const struct ds_compare *c, const char *plot,
                          const char *chrome, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_EXPORT_H */
