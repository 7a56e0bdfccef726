/*
 * `nvidia-smi topo -m` (the GPU/NIC connection matrix, optionally followed
 * or preceded by `nvidia-smi -L`'s "GPU 0: NAME (UUID: ...)" lines, which
 * name the GPU) into a struct ds_import_node.
 */
#ifndef DS_IMPORT_SMI_H
#define DS_IMPORT_SMI_H

#include "sim/net/topo_import.h"

ds_status ds_import_smi(const char *path, const char *text,
                        const struct ds_gpu_table *table,
                        const struct ds_gpu_info *forced_gpu,
                        struct ds_import_node *out, struct ds_err *err);

#endif /* DS_IMPORT_SMI_H */
