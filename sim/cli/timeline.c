/*
 * `ddpsim --plot` without a sweep and `ddpsim --chrome` (timeline.h). The
 * simulation is ds_run's, unchanged, keeping the run's trace in memory
 * (ds_run_capture); its report is held in memory until the files are
 * written. The trace is then measured and drawn by the same code as
 * `ddpsim analyze TRACE.csv` (compare.h, export.h), so both commands draw
 * the same picture of one trace; nothing is written and read back.
 */
#include "sim/cli/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "sim/cli/run.h"
#include "base/gnuplot.h"
#include "analysis/compare.h"
#include "analysis/export.h"

ds_status ds_timeline_run(const struct ds_options *opt, FILE *out, struct ds_err *err) {
  struct ds_options o = *opt;
  char label[1024];
  /* --trace - prints the trace before the report, once the files are
   * written: the run keeps it, and it is printed from memory below. */
  int to_stdout = o.trace && strcmp(o.trace, "-") == 0;
  char *report = NULL;
  size_t report_len = 0;
  FILE *mem = NULL;
  struct ds_compare *c = NULL;
  struct ds_run_trace cap = {.plot = o.plot_timeline ? o.plot : NULL};
  ds_status st = DS_OK;
  /* A missing gnuplot is said before the simulation, not after it. */
  if (o.plot_timeline) DS_CHECK(ds_gnuplot_check(err));
  o.plot = NULL;
  o.plot_timeline = 0;
  o.chrome = NULL;
  if (to_stdout) o.trace = NULL;
  mem = open_memstream(&report, &report_len);
  if (!mem) return ds_err_set(err, DS_ENOMEM, "out of memory");
  st = ds_run_capture(&o, mem, &cap, err);
  if (fclose(mem) != 0 && st == DS_OK) st = ds_err_set(err, DS_ENOMEM, "out of memory");
  if (st != DS_OK) goto out;
  snprintf(label, sizeof label, "ddpsim --topo %s --model %s --strategy %s", o.topo,
           o.model, o.strategy);
  struct ds_compare_options copt = {.pred_iter = -1, .label = label};
  struct ds_trace *kept = NULL;
  if (to_stdout) DS_CHECK_GOTO(ds_trace_detach(cap.trace, &kept), st, oom);
  else {
    kept = cap.trace;
    cap.trace = NULL;
  }
  DS_CHECK_GOTO(ds_compare_from_trace(label, kept, &copt, &c, err), st, out);
  DS_CHECK_GOTO(ds_export_write(c, opt->plot_timeline ? opt->plot : NULL, opt->chrome,
                                err), st, out);
  if (to_stdout) {
    struct ds_csv_meta meta = {"ddpsim " DS_VERSION, cap.inputs, cap.seed, NULL, 0};
    fflush(out);
    DS_CHECK_GOTO(ds_trace_write_csv("-", cap.trace, &meta, err), st, out);
  }
  fwrite(report, 1, report_len, out);
  goto out;
oom:
  ds_err_set(err, st, "out of memory");
out:
  free(report);
  ds_compare_free(c);
  ds_run_trace_release(&cap);
  return st;
}
