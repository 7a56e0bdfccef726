/*
 * The sweep plot (`--plot FILE.png|.svg` with one swept option,
 * docs/sweeps.md): iteration time and exposed communication against the
 * swept option, the best configuration circled, throughput on a second
 * axis when the option changes the work per iteration (world size, batch,
 * no_sync), and the points of a --measured table beside the predicted
 * curves. Drawn by gnuplot through base/gnuplot.h.
 */
#ifndef DS_SWEEP_PLOT_H
#define DS_SWEEP_PLOT_H

#include <stdint.h>

#include "base/status.h"
#include "sim/cli/options.h"
#include "sim/cli/report.h"
#include "sim/cli/sweep_measured.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the plot of pts[0 .. n) along var uses a log x axis: when the
 * values came from an A:B:logN range (log_spaced), or when all are > 0
 * and the largest is at least 8 times the smallest; never for
 * --comm-hook, whose axis is the hooks' names in the order given, nor for
 * an integer option whose values are all at most 8 (1, 2, 4, 8 ranks). */
int ds_sweep_plot_log_x(enum ds_sweep_var var, int log_spaced, const struct ds_sweep_point *pts,
                        int32_t n);

/* Whether the plot's iteration axis spans the predicted times rather than
 * starting at 0: when they lie within a tenth of the largest (the axis
 * label then says "not from 0" and exposed communication goes to the right
 * axis), never in a sweep drawn with its throughput on the right axis
 * (ds_sweep_per_sample). */
int ds_sweep_plot_zoom_y(enum ds_sweep_var var, const struct ds_sweep_point *pts, int32_t n);

/* Draws rows[0 .. n) (configuration i's in row i) of o's one swept option
 * into o->plot with gnuplot ($DDPSIM_GNUPLOT or the first on PATH), and
 * measured's points when measured is not NULL: data to a temporary file,
 * the image to a temporary name beside the target, renamed when gnuplot
 * succeeded. A missing or failing gnuplot is DS_EIO. */
ds_status ds_sweep_plot(const struct ds_options *o, const struct ds_summary *rows,
                        int32_t n, const struct ds_measured *measured, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_SWEEP_PLOT_H */
