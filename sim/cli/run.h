/*
 * The simulate command: loads the files, builds each strategy's schedules
 * (single, dp, ddp; ps its own loop), runs them on the executor for every
 * requested configuration, prints the summary and writes the requested
 * trace and schedule files.
 */
#ifndef DS_RUN_H
#define DS_RUN_H

#include <stdio.h>

#include "base/status.h"
#include "sim/cli/options.h"
#include "traces/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DS_VERSION "0.1.0"

/* Runs the command described by opt, printing the summary to out. */
ds_status ds_run(const struct ds_options *opt, FILE *out, struct ds_err *err);

/* The trace of a run of one configuration, kept in memory (sim/cli/timeline.c
 * draws it): what --trace would write, and its '#' header's fields. */
struct ds_run_trace {
  /* set by the caller: the timeline the trace will be drawn as, or NULL;
   * one that cannot be drawn (analysis/export.h ds_plot_check_size) is
   * refused once the schedule is built, before the simulation */
  const char *plot;
  struct ds_trace *trace; /* self-contained (ds_trace_detach); owned */
  char inputs[1152];      /* the '# inputs' line */
  uint64_t seed;
};

/* ds_run of a command of one configuration (nothing swept, one strategy),
 * handing its trace back in *cap (released by ds_run_trace_release, also
 * on failure); opt's --trace and --schedule files are written as ds_run
 * writes them. DS_EINTERNAL when opt has several configurations. */
ds_status ds_run_capture(const struct ds_options *opt, FILE *out, struct ds_run_trace *cap,
                         struct ds_err *err);
void ds_run_trace_release(struct ds_run_trace *cap);

#ifdef __cplusplus
}
#endif

#endif /* DS_RUN_H */
