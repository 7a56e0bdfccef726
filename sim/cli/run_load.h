/*
 * The files a run loads once for all its configurations (run.c): the
 * topology with its GPU table, the model, --calib's measured factors, and
 * the compute pricing the options set on them. Internal to sim/cli/run*.c.
 */
#ifndef DS_RUN_LOAD_H
#define DS_RUN_LOAD_H

#include <stdint.h>

#include "base/status.h"
#include "sim/cli/options.h"
#include "sim/net/topo.h"
#include "sim/train/calib.h"
#include "sim/train/compute.h"
#include "sim/train/grouped_conv.h"
#include "sim/train/model.h"

/* What every configuration shares: the loaded files. */
struct loaded {
  struct ds_topo *topo;
  struct ds_model *model;
  struct ds_compute compute;
  struct ds_calib *calib;      /* --calib's files merged, or NULL */
  struct ds_calib_sources calib_src; /* which of them set each key */
  /* several --calib files: each and the keys it set, a line each
   * (ds_calib_sources_line), the text summary's "calib keys" lines; "" for
   * one file or none */
  char calib_keys[1024];
  struct ds_gconv_table gconv; /* its grouped_conv table, when it has one */
  char topo_path[4096];
  char model_path[4096];
};

/* Loads o's topology, model and --calib file into *ld (zeroed by the
 * caller), with the notes on stderr where --calib was measured on another
 * GPU than the topology's. On failure *ld holds what was loaded:
 * ds__run_unload releases it. */
ds_status ds__run_load(struct loaded *ld, const struct ds_options *o, struct ds_err *err);

/* DS_EUSAGE when a world of `world` ranks exceeds the topology's GPUs. */
ds_status ds__run_check_world(const struct loaded *ld, int32_t world, struct ds_err *err);

/* Frees what ds__run_load loaded (any part of it). */
void ds__run_unload(struct loaded *ld);

#endif /* DS_RUN_LOAD_H */
