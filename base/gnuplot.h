/*
 * Drawing with gnuplot (`--plot`), shared by the sweep plot (sim/cli/sweep.c),
 * the collective's busbw plot (sim/cmd/collbench_plot.c) and the timeline
 * (analysis/plot.c): finding the program, quoting strings for its scripts,
 * and running a script so that the picture appears atomically: gnuplot
 * writes a temporary file beside the target, which is renamed over it only
 * when gnuplot exited 0 and wrote something. A missing gnuplot is DS_EIO
 * with a message saying how to install it, never a crash.
 */
#ifndef DS_GNUPLOT_H
#define DS_GNUPLOT_H

#include <stdio.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gnuplot's terminal for a file name: "pngcairo" for .png, "svg" for
 * .svg, NULL for anything else. */
const char *ds_gnuplot_terminal(const char *path);

/* Writes s as a gnuplot single-quoted string (only ' is special: doubled). */
void ds_gnuplot_string(FILE *fp, const char *s);

/* Writes the plot script to gp (gnuplot's standard input): the terminal
 * term, output to `out` (the temporary file), then the plot. */
typedef void (*ds_gnuplot_script_fn)(FILE *gp, const char *term, const char *out,
                                     void *ctx);

/* DS_OK when a gnuplot can be run (see below); DS_EIO saying how to get
 * one otherwise: lets a command fail before its work rather than after. */
ds_status ds_gnuplot_check(struct ds_err *err);

/* Runs gnuplot ($DDPSIM_GNUPLOT, else the first gnuplot on PATH) on the
 * script and renames its output over path (.png or .svg, else DS_EUSAGE).
 * Data files the script reads are the caller's. */
ds_status ds_gnuplot_draw(const char *path, ds_gnuplot_script_fn script, void *ctx,
                          struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_GNUPLOT_H */
