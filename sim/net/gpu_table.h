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

/* The keys of an `efficiency` map (the GPU table's, a calibration file's):
 * CLASS_MATH for CLASS conv, matmul, attention and MATH fp32, tf32, half,
 * then memory; NULL-terminated. */
extern const char *const ds_gpu_efficiency_keys[];
/* The field of e that key index k (into ds_gpu_efficiency_keys) names. */
double *ds_gpu_efficiency_slot(struct ds_gpu_efficiency *e, int k);

struct ds_cnode;
/* Reads an `efficiency` map into e, setting the keys present (each a
 * fraction in (0, 1]); `memory` is refused unless allow_memory. Errors
 * name file, line and key (DS_EINPUT). */
ds_status ds_gpu_efficiency_read(const struct ds_cnode *map, struct ds_gpu_efficiency *e,
                                 int allow_memory, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_GPU_TABLE_H */
