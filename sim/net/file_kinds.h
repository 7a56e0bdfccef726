/*
 * The kinds of YAML file ddpsim reads (topology, model, GPU table,
 * calibration file) with each kind's ONE table of root keys: the loaders
 * (sim/net/topo.c, sim/train/model.c, sim/net/gpu_table.c,
 * sim/train/calib.c) take their allowed keys from here, and a file given
 * where another kind goes is named for the kind it looks like, from these
 * same tables, so the two can never drift apart (a review found the copies
 * in topo.c and model.c had: a calibration file's new `gpu` key made one
 * given to --model "look like a topology").
 */
#ifndef DS_FILE_KINDS_H
#define DS_FILE_KINDS_H

#include "base/config.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_file_kind {
  DS_FILE_CALIB,
  DS_FILE_TOPOLOGY,
  DS_FILE_MODEL,
  DS_FILE_GPU_TABLE,
  DS_FILE_KINDS
};

/* The NULL-terminated root keys a file of `kind` may have. */
const char *const *ds_file_kind_root_keys(enum ds_file_kind kind);

/* ds_config_open_as for a file of `kind`, every other kind its lookalike:
 * a root with keys of another kind is said to look like that kind (the one
 * with most keys that only it has, else most keys it shares, two at least,
 * ties to the earlier kind in the enum), with where that file goes and what this
 * place takes. */
ds_status ds_file_kind_open(const char *path, enum ds_file_kind kind, struct ds_config **out,
                            struct ds_cnode *root, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif
