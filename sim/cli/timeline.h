/*
 * The simulate command's own timeline files: `ddpsim --topo T --plot
 * FILE.png` with nothing swept draws the reported iteration of the run as a
 * Gantt chart, and `--chrome FILE.json` writes the run as Chrome trace JSON,
 * both with the analysis code that draws a lone trace (export.h). The run
 * keeps its trace in memory (ds_run_capture, a self-contained copy: what
 * `ddpsim analyze TRACE.csv` would read back), so no file is written and
 * read back; a --trace file the user asked for is written as usual.
 */
#ifndef DS_TIMELINE_H
#define DS_TIMELINE_H

#include <stdio.h>

#include "sim/cli/options.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the command of opt (one configuration: ds_options_parse checked)
 * and writes opt->plot (when opt->plot_timeline) and opt->chrome from its
 * trace, before printing the report to out, so a failed file prints no
 * report. A missing gnuplot fails before the simulation (DS_EIO, exit 1);
 * a failure leaves no output file behind, and with --trace - prints
 * nothing (the trace is printed, before the report, once the files are
 * written). */
ds_status ds_timeline_run(const struct ds_options *opt, FILE *out, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_TIMELINE_H */
