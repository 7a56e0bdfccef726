/*
 * The GPU table (topologies/gpus.yaml): peak compute per precision, memory
 * size and bandwidth per GPU type, and what `ddpsim topo import` needs to
 * recognise a GPU (PCI device ids, nvidia-smi names, NVLink generation and
 * link count), and its CUDA compute capability (per-SM limits). Generated
 * from ../shared/data/gpu_specs.csv and its own tables by tools/gen_gpus.py.
 *
 * A user's own gpus.yaml (beside their topology) adds to the shipped table:
 * an entry whose name is a shipped GPU's replaces that entry whole; other
 * entries are new GPUs.
 */
#ifndef DS_GPU_TABLE_H
#define DS_GPU_TABLE_H

#include <stddef.h>

#include "base/status.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DS_GPU_IDS_MAX 4

/* One entry of the table. */
struct ds_gpu_info {
  struct ds_gpu_spec spec;
  char arch[32];
  double nvlink_bw; /* bytes/s per direction, all links; 0: no NVLink */
  double pcie_bw;   /* bytes/s per direction of the x16 host link; 0: unknown */
  int32_t boost_mhz;    /* 0: not given */
  int32_t nvlink_gen;   /* 0: no NVLink */
  int32_t nvlink_links; /* links of nvlink_bw together; 0 when not given */
  int32_t n_pci_ids, n_smi_names;
  char pci_ids[DS_GPU_IDS_MAX][8];     /* "0x20b2", lower case */
  char smi_names[DS_GPU_IDS_MAX][64];  /* as nvidia-smi prints them */
  char source[512];                    /* the entry's source */
  char table[256];                     /* the file the entry came from */
  int32_t line;                        /* and its line there */
};

struct ds_gpu_table {
  struct ds_gpu_info *gpus;
  size_t n;
};

/* Loads the table at path; when path is not the shipped table, the shipped
 * one (ds_lookup_shipped_gpu_table) is read first and path's entries add to
 * or replace its entries. Every entry of both files is validated. */
ds_status ds_gpu_table_load(const char *path, struct ds_gpu_table *out,
                            struct ds_err *err);
void ds_gpu_table_release(struct ds_gpu_table *t);

/* NULL when absent. pci_id: "0x20b2" (any case); smi name: exact, case
 * insensitive. */
const struct ds_gpu_info *ds_gpu_table_find(const struct ds_gpu_table *t,
                                            const char *name);
const struct ds_gpu_info *ds_gpu_table_by_pci_id(const struct ds_gpu_table *t,
                                                 const char *pci_id);
const struct ds_gpu_info *ds_gpu_table_by_smi_name(const struct ds_gpu_table *t,
                                                   const char *smi_name);
/* The GPU a device's name means, as a calibration file or nvidia-smi gives
 * it: the table's name (exact), else one of its smi_names (case ignored),
 * else the one GPU one of whose smi_names is name after vendor words alone
 * ("NVIDIA", "GeForce", "Tesla", "Quadro"), case ignored: "H100 80GB HBM3"
 * of "NVIDIA H100 80GB HBM3", never "HBM3". NULL for none, and for a name
 * several GPUs' smi names end with, so two GPUs never share a name. */
const struct ds_gpu_info *ds_gpu_table_by_device_name(const struct ds_gpu_table *t,
                                                      const char *name);
/* The table's names, comma separated, into buf (truncated with "..."). */
void ds_gpu_table_names(const struct ds_gpu_table *t, char *buf, size_t cap);

/* What an unknown GPU name can mean, into buf (cap bytes; "" for nothing):
 * "did you mean A or B? " for the names name begins (case ignored: "h100",
 * "a100-sxm4-80gb"), else "did you mean NAME, nvidia-smi's name for it? "
 * for a GPU's smi name or its last words ("H100 PCIe" of "NVIDIA H100
 * PCIe"), else "did you mean A? " for a typo's nearest name
 * (ds_cli_closest). */
void ds_gpu_table_suggest(const struct ds_gpu_table *t, const char *name, char *buf,
                          size_t cap);

/* Looks gpu_name up in the table at path (merged with the shipped table as
 * ds_gpu_table_load does) and fills *out. An unknown name is DS_EINPUT
 * with what it can mean (ds_gpu_table_suggest) and the known names. */
ds_status ds_gpu_table_lookup(const char *path, const char *gpu_name,
                              struct ds_gpu_spec *out, struct ds_err *err);

/* The most threads resident on one of g's SMs (cudaDeviceProp's
 * maxThreadsPerMultiProcessor), from its compute_capability by the table
 * in gpu_table.c (sm_threads_by_cc, the CUDA programming guide's; a
 * capability it lacks takes its family's nearest listed one below), else
 * from its arch where the family's listed capabilities agree; 0 when
 * neither says (an Ampere or Blackwell entry without compute_capability,
 * a made-up GPU). */
int32_t ds_gpu_max_threads_per_sm(const struct ds_gpu_spec *g);

/* The keys of an `efficiency` map (the GPU table's, a calibration file's):
 * CLASS_MATH for CLASS conv, matmul, attention and MATH fp32, tf32, half,
 * then memory; NULL-terminated. */
extern const char *const ds_gpu_efficiency_keys[];
/* The field of e that key index k (into ds_gpu_efficiency_keys) names. */
double *ds_gpu_efficiency_slot(struct ds_gpu_efficiency *e, int k);

struct ds_cnode;
/* The least achieved / peak fraction an efficiency may be, wherever it is
 * read (the GPU table's `efficiency` and `conv_tiles`, a calibration's
 * `efficiency`, a topology's or a calibration's compute efficiencies): 1 %
 * of peak. The GPU table's lowest measured value is 0.125 (an unaligned
 * half GEMM); below 1 % a kernel class is no measurement but a slip
 * (issue #12: a topology's mem_efficiency 1e-9 made a ResNet-50 iteration
 * on dgx-a100 take 4.8 simulated hours, 1e-300 overflowed the clock with a
 * message naming no file). */
#define DS_GPU_EFFICIENCY_MIN 0.01
/* An achieved / peak fraction from DS_GPU_EFFICIENCY_MIN to 1 at node, or a
 * located error (DS_EINPUT). */
ds_status ds_gpu_peak_fraction(const struct ds_cnode *node, double *out, struct ds_err *err);
/* Reads an `efficiency` map into e, setting the keys present (each
 * ds_gpu_peak_fraction); `memory` is refused unless allow_memory. Errors
 * name file, line and key (DS_EINPUT). */
ds_status ds_gpu_efficiency_read(const struct ds_cnode *map, struct ds_gpu_efficiency *e,
                                 int allow_memory, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_GPU_TABLE_H */
