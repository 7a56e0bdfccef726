/*
 * `ddpsim topo import`: a machine as NCCL's topology XML or `nvidia-smi
 * topo -m` describes it, read into one struct ds_import_node per file
 * (import_nccl_xml, import_smi), then written as a topology YAML that
 * ds_topo_load reads (docs/topologies.md), with comments saying where each
 * value came from and what was assumed.
 */
#ifndef DS_TOPO_IMPORT_H
#define DS_TOPO_IMPORT_H

#include <stdio.h>

#include "base/status.h"
#include "sim/net/gpu_table.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_import_dev_kind { DS_IMPORT_GPU, DS_IMPORT_SWITCH, DS_IMPORT_NVSWITCH,
                          DS_IMPORT_CPU, DS_IMPORT_NIC };
enum ds_import_link_kind { DS_IMPORT_PCIE, DS_IMPORT_NVLINK, DS_IMPORT_QPI };

struct ds_import_dev {
  enum ds_import_dev_kind kind;
  char label[64]; /* PCI bus id, NUMA node or matrix label */
  int line;       /* in the node's file */
  int order;      /* GPUs: CUDA device index (sort key); -1: file order */
  double nic_bw;  /* NICs: bytes/s per direction; 0: not given */
};

struct ds_import_link {
  int32_t a, b; /* device indexes */
  enum ds_import_link_kind kind;
  double bw;    /* bytes/s per direction, all `count` links together */
  int32_t count;
  int line;
  char why[160]; /* where bw came from */
};

/* One node: one file. */
struct ds_import_node {
  const char *file;   /* the path read (borrowed: ds_import_read's path) */
  const char *format; /* "NCCL topology XML" or "nvidia-smi topo -m" */
  struct ds_gpu_info gpu;
  char gpu_why[512];  /* how the GPU was recognised */
  struct ds_import_dev *devs;
  struct ds_import_link *links;
  int32_t n_devs, n_links, cap_devs, cap_links;
  char notes[8][224]; /* assumptions this file needed */
  int32_t n_notes;
  /* The host's CPU type as NCCL takes it, from the file's first <cpu>
   * (search.cc ncclTopoComputeCommCPU reads the system's first CPU; topo.cc
   * ncclTopoAddCpu reads the vendor on x86 only): its arch, its vendor
   * ("" off x86) and line; cpu_line 0 where the file names no CPU
   * (nvidia-smi's matrix). Topology key cpu_vendor. */
  char cpu_arch[32], cpu_vendor[32];
  int cpu_line;
};

struct ds_import_options {
  const char *name;     /* topology name; NULL: the first file's base name */
  int32_t nodes;        /* 0: one node per file */
  int32_t nic_count;    /* --nic COUNTxBW; 0: the files' NICs */
  double nic_bw;        /* bytes/s per direction; 0: the files' speeds */
  const char *nic_spec; /* as given, for comments */
};

/* Building blocks for the readers. */
ds_status ds_import_add_dev(struct ds_import_node *n, enum ds_import_dev_kind kind,
                            const char *label, int line, int32_t *index,
                            struct ds_err *err);
ds_status ds_import_add_link(struct ds_import_node *n, int32_t a, int32_t b,
                             enum ds_import_link_kind kind, double bw, int32_t count,
                             int line, const char *why, struct ds_err *err);
void ds_import_note(struct ds_import_node *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ds_import_node_release(struct ds_import_node *n);

/* Per-direction bandwidth of one NVLink of the GPU: its table nvlink_bw over
 * nvlink_links; 0 when the table has no NVLink for it. */
double ds_import_nvlink_link_bw(const struct ds_gpu_info *g);

/* Reads FILE (format detected: '<' first is XML, else the matrix) into *out.
 * forced_gpu: a table entry naming the GPU (--gpu), or NULL. out->file is
 * path itself, which must outlive *out (the command line's word). */
ds_status ds_import_read(const char *path, const struct ds_gpu_table *table,
                         const struct ds_gpu_info *forced_gpu,
                         struct ds_import_node *out, struct ds_err *err);

/* Writes the topology YAML of nodes[0..n_files) to out. */
ds_status ds_import_write(FILE *out, const struct ds_import_node *nodes, int32_t n_files,
                          const struct ds_import_options *o, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_TOPO_IMPORT_H */
