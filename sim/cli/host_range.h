/*
 * The measured hosts' range of a run's host-bound rows (report.h
 * ds_report_host_bound): each such configuration simulated again with its
 * host_* costs times the fastest and then the slowest measured host's
 * factor (sim/net/topo_compute.c ds_topo_host_factor_*). Only the text summary
 * prints it (report_text.c print_gpu_time).
 */
#ifndef DS_HOST_RANGE_H
#define DS_HOST_RANGE_H

#include <stdint.h>

#include "base/status.h"
#include "sim/cli/options.h"
#include "sim/cli/sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Simulates configuration i of o (o's host_scale already set to the
 * factor's) into row, quietly (configuration 0's notes said already); ctx
 * is the caller's (run.c: the loaded files). */
typedef ds_status (*ds_host_range_fn)(const void *ctx, const struct ds_options *o, int64_t i,
                                      struct ds_row *row, struct ds_err *err);

/* Sets has_host_range and the range's fields of every host-bound row of
 * rows[0 .. n) (report.h), re-running each with run: no output files, one
 * sample (the row's timings are its first sample's). host_from_calib says
 * the run's host costs came from --calib's host section (report.h: 2 its
 * dispatch or node, 1 only its DDP keys), which the summary then says. A re-run's error is prefixed "host range (xF): ". */
ds_status ds_host_range_fill(const struct ds_options *o, ds_host_range_fn run, const void *ctx,
                             int host_from_calib, struct ds_row *rows, int64_t n,
                             struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif
