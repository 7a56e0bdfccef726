/*
 * The GPU table (topologies/gpus.yaml): peak compute per precision, memory
 * size and bandwidth per GPU type, generated from ../shared/data/gpu_specs.csv
 * by tools/gen_gpus.py.
 */
#ifndef DS_GPU_TABLE_H
#define DS_GPU_TABLE_H

#include "base/status.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Looks gpu_name up in the table file at path and fills *out. An unknown
 * name is DS_EINPUT listing the known names. */
ds_status ds_gpu_table_lookup(const char *path, const char *gpu_name,
                              struct ds_gpu_spec *out, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_GPU_TABLE_H */
