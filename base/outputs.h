/*
 * A command's output files, checked together before any work (issue #15,
 * defects 4 and 11): each can be written (ds_atomic_file_check), no two
 * name the same file, and none is one of the command's inputs. A failure is
 * DS_EUSAGE naming both flags, or ds_atomic_file_check's status.
 */
#ifndef DS_OUTPUTS_H
#define DS_OUTPUTS_H

#include <stddef.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A flag and its path; a NULL path is skipped (the flag was not given). */
struct ds_path_arg {
  const char *flag;
  const char *path;
};

/* Checks outs[0..n_out) as above against each other and against the
 * existing files ins[0..n_in). "-" (standard output) is compared only with
 * another "-": two outputs there are refused as two on one file are. */
ds_status ds_outputs_check(const struct ds_path_arg *outs, size_t n_out,
                           const struct ds_path_arg *ins, size_t n_in, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_OUTPUTS_H */
