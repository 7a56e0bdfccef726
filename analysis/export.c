/*
 * Both output files of one command, or neither (export.h). The caller has
 * registered both with ds_atomic_file_defer (ddpsim's main, `ddpsim
 * analyze`), so each is written to a temporary file beside its resolved
 * target and left pending; ds_atomic_file_finish renames both into place
 * when the command succeeded, or removes both. A user's old files are
 * never touched on failure.
 */
#include "analysis/export.h"

#include "base/atomic_file.h"

ds_status ds_export_write(const struct ds_compare *c, const char *plot,
                          const char *chrome, struct ds_err *err) {
  if (chrome) DS_CHECK(ds_chrome_write(chrome, c, err));
  if (plot) DS_CHECK(ds_plot_write(plot, c, err));
  return DS_OK;
}
