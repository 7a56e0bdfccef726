/*
 * `ddpsim --plot` without a sweep and `ddpsim --chrome` (timeline.h). The
 * simulation is ds_run's, unchanged, with --trace pointed at a temporary
 * file beside the output when the user gave none; its report is held in
 * memory until the files are written. The trace is then measured and drawn by the same code
 * as `ddpsim analyze TRACE.csv` (compare.h, export.h), so both commands
 * draw the same picture of one trace.
 */
#include "sim/cli/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "sim/cli/run.h"
#include "base/gnuplot.h"
#include "analysis/compare.h"
#include "analysis/export.h"

/* Copies the file at path to out (a trace the user sent to stdout). */
static ds_status copy_file(const char *path, FILE *out, struct ds_err *err) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return ds_err_set(err, DS_EIO, "--trace -: cannot read %s back: %s", path,
                             strerror(errno));
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, fp)) > 0) fwrite(buf, 1, n, out);
  int bad = ferror(fp);
  fclose(fp);
  return bad ? ds_err_set(err, DS_EIO, "--trace -: cannot read %s back", path) : DS_OK;
}

ds_status ds_timeline_run(const struct ds_options *opt, FILE *out, struct ds_err *err) {
  static const char suffix[] = ".trace.XXXXXX";
  struct ds_options o = *opt;
  /* The temporary trace lies beside an output file, where the user can
   * write: "timeline.png.trace.XXXXXX" (under /tmp for --chrome -). */
  const char *target = opt->plot_timeline ? opt->plot : opt->chrome;
  if (strcmp(target, "-") == 0) target = "/tmp/ddpsim-timeline";
  char *tmp = NULL, label[1024];
  int made = 0, to_stdout = o.trace && strcmp(o.trace, "-") == 0;
  char *report = NULL;
  size_t report_len = 0;
  FILE *mem = NULL;
  struct ds_compare *c = NULL;
  ds_status st = DS_OK;
  /* A missing gnuplot is said before the simulation, not after it. */
  if (o.plot_timeline) DS_CHECK(ds_gnuplot_check(err));
  o.plot = NULL;
  o.plot_timeline = 0;
  o.chrome = NULL;
  if (!o.trace || to_stdout) {
    tmp = malloc(strlen(target) + sizeof suffix);
    if (!tmp) return ds_err_set(err, DS_ENOMEM, "out of memory");
    snprintf(tmp, strlen(target) + sizeof suffix, "%s%s", target, suffix);
    int fd = ds_temp_mkstemp(tmp);
    if (fd < 0) {
      st = ds_err_set(err, DS_EIO, "%s %s: cannot create a temporary file %s beside it: "
                      "%s (does the directory exist and is it writable?)",
                      opt->plot_timeline ? "--plot" : "--chrome", target, tmp,
                      strerror(errno));
      goto out;
    }
    close(fd);
    made = 1;
    o.trace = tmp;
  }
  mem = open_memstream(&report, &report_len);
  if (!mem) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
    goto out;
  }
  st = ds_run(&o, mem, err);
  if (fclose(mem) != 0 && st == DS_OK) st = ds_err_set(err, DS_ENOMEM, "out of memory");
  mem = NULL;
  if (st != DS_OK) goto out;
  snprintf(label, sizeof label, "ddpsim --topo %s --model %s --strategy %s", o.topo,
           o.model, o.strategy);
  struct ds_compare_options copt = {.pred_iter = -1, .label = label};
  /* --trace's file is renamed into place with the other outputs, at the end */
  DS_CHECK_GOTO(ds_compare_load_one(ds_atomic_file_pending_path(o.trace), &copt, &c, err), st,
                out);
  DS_CHECK_GOTO(ds_export_write(c, opt->plot_timeline ? opt->plot : NULL, opt->chrome,
                                err), st, out);
  if (to_stdout) DS_CHECK_GOTO(copy_file(tmp, out, err), st, out);
  fwrite(report, 1, report_len, out);
out:
  if (mem) fclose(mem);
  free(report);
  ds_compare_free(c);
  if (made) ds_temp_remove(tmp);
  free(tmp);
  return st;
}
