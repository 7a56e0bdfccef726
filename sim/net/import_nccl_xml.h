/*
 * NCCL's topology XML (what NCCL_TOPO_DUMP_FILE writes and NCCL_TOPO_FILE
 * reads; format from NCCL's src/graph/xml.cc and topo.cc, v2.30.7) into a
 * struct ds_import_node. Read with libxml2.
 */
#ifndef DS_IMPORT_NCCL_XML_H
#define DS_IMPORT_NCCL_XML_H

#include "sim/net/topo_import.h"

ds_status ds_import_nccl_xml(const char *path, const char *text, size_t len,
                             const struct ds_gpu_table *table,
                             const struct ds_gpu_info *forced_gpu,
                             struct ds_import_node *out, struct ds_err *err);

#endif /* DS_IMPORT_NCCL_XML_H */
