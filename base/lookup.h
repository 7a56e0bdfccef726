/*
 * Finding data files: a topology or model argument is a path when such a
 * file exists; otherwise NAME or NAME.yaml is looked up in, in order,
 * $DDPSIM_DATA_DIR/KIND, DIR_OF_EXECUTABLE/../share/ddpsim/KIND (installed),
 * DIR_OF_EXECUTABLE/../KIND (bin/ in a checkout) and the source tree the
 * program was built from.
 */
#ifndef DS_LOOKUP_H
#define DS_LOOKUP_H

#include <stddef.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kind is "topologies" or "models"; what is "topology" or "model" (for
 * messages). Writes the found path into out. DS_EUSAGE listing the places
 * looked at when nothing is found. */
ds_status ds_lookup_file(const char *kind, const char *what, const char *arg,
                         char *out, size_t cap, struct ds_err *err);

/* "-" for a topology or a model (kind as ds_lookup_file; name "option
 * --topo", "argument TOPOLOGY", "option --model"): refused, DS_EUSAGE, by
 * base/cli.h's ds_cli_refuse_stdin with each kind's one reason (a
 * topology's GPU table is looked for beside its file; a model is a YAML
 * file found by path or name), so every flag that takes one says it alike.
 * DS_OK for any other value. */
ds_status ds_lookup_refuse_stdin(const char *kind, const char *name, const char *value,
                                 struct ds_err *err);

/* The GPU table for a topology file: gpus.yaml beside it when there is one
 * (a user's own table), otherwise the shipped topologies/gpus.yaml found as
 * ds_lookup_file finds data files. */
ds_status ds_lookup_gpu_table(const char *topo_path, char *out, size_t cap,
                              struct ds_err *err);

/* The shipped topologies/gpus.yaml, looked for in the data directories only
 * (never in the working directory): the table a user's own gpus.yaml adds
 * to or overrides. */
ds_status ds_lookup_shipped_gpu_table(char *out, size_t cap, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_LOOKUP_H */
