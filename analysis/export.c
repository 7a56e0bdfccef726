/*
 * Both output files of one command, or neither (export.h). The Chrome JSON
 * is written first under a temporary name beside its target, the plot
 * (which needs gnuplot, the likelier failure) next, and the JSON is renamed
 * into place only when the plot succeeded; so a failed command leaves no
 * output file and no temporary one.
 */
#include "analysis/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic_file.h"

ds_status ds_export_write(const struct ds_compare *c, const char *plot,
                          const char *chrome, struct ds_err *err) {
  static const char suffix[] = ".part.XXXXXX";
  ds_status st = DS_OK;
  char *tmp = NULL;
  if (chrome && (!plot || strcmp(chrome, "-") == 0)) {
    DS_CHECK(ds_chrome_write(chrome, c, err));
    chrome = NULL;
  }
  if (chrome) {
    size_t n = strlen(chrome) + sizeof suffix;
    if (!(tmp = malloc(n))) return ds_err_set(err, DS_ENOMEM, "out of memory");
    snprintf(tmp, n, "%s%s", chrome, suffix);
    int fd = ds_temp_mkstemp(tmp);
    if (fd < 0) {
      st = ds_err_set(err, DS_EIO, "--chrome %s: cannot create a temporary file %s "
                      "beside it: %s (does the directory exist and is it writable?)",
                      chrome, tmp, strerror(errno));
      free(tmp);
      return st;
    }
    close(fd);
    DS_CHECK_GOTO(ds_chrome_write(tmp, c, err), st, out);
  }
  if (plot) DS_CHECK_GOTO(ds_plot_write(plot, c, err), st, out);
  if (chrome && ds_atomic_file_place(tmp, chrome, err) != DS_OK) {
    st = ds_err_set(err, DS_EIO, "--chrome: cannot rename %s to %s: %s", tmp, chrome,
                    strerror(errno));
    unlink(plot);
  }
out:
  if (tmp && st != DS_OK) ds_temp_remove(tmp);
  free(tmp);
  return st;
}
