/*
 * Atomic output files: write to a temporary file in the target's directory,
 * then rename it over the target. Readers of the target see the old file or
 * the complete new one, never a half-written one.
 */
#ifndef DS_ATOMIC_FILE_H
#define DS_ATOMIC_FILE_H

#include <stdio.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_atomic_file {
  FILE *fp;          /* write here */
  char *path;        /* final path (owned) */
  char *tmp_path;    /* temporary path (owned) */
};

/* Opens a temporary file next to path ("path.tmp.XXXXXX", mkstemp). "-"
 * means standard output: fp is stdout and commit/abort only flush. */
ds_status ds_atomic_file_open(const char *path, struct ds_atomic_file *af,
                              struct ds_err *err);
/* Flushes, fsyncs, closes and renames the temporary file over the target.
 * On any failure the temporary file is removed and the target is left as it
 * was. Always releases af. */
ds_status ds_atomic_file_commit(struct ds_atomic_file *af, struct ds_err *err);
/* Closes and removes the temporary file; the target is untouched. Safe to
 * call on a zeroed or already committed struct. */
void ds_atomic_file_abort(struct ds_atomic_file *af);

#ifdef __cplusplus
}
#endif

#endif /* DS_ATOMIC_FILE_H */
