/*
 * Root-key tables of each kind of ddpsim file (file_kinds.h). Each table is
 * the whole set its loader accepts; which keys tell one kind from another
 * is worked out from the tables together (base/config.c check_lookalikes),
 * never listed by hand.
 */
#include "sim/net/file_kinds.h"

#include <stdio.h>

/* ddpreal calibrate (traces/calib_file.c), tools/gen_grouped_conv.py
 * --calib, bench/host_calibrate.py --calib-out; read by sim/train/calib.c */
static const char *const calib_keys[] = {"schema_version", "compute", "efficiency", "nccl",
                                         "collective", "grouped_conv", "host", "gpu", NULL};
/* sim/net/topo.c */
static const char *const topology_keys[] = {
    "schema_version", "name", "gpu", "nodes", "gpus_per_node",
    "intra_node", "inter_node", "devices", "links", "compute", "cpu_vendor", NULL};
/* sim/train/model.c */
static const char *const model_keys[] = {"schema_version", "name", "sample",
                                         "default_batch", "optimizer", "input_bytes",
                                         "output_bytes", "output_classes", "loss_copy_bytes",
                                         "loss_legacy_ew", "loss_act_bytes", "layers",
                                         "grad_ready", "registration", "buffers", NULL};
/* sim/net/gpu_table.c */
static const char *const gpu_table_keys[] = {"schema_version", "gpus", NULL};

static const struct {
  const char *const *keys;
  const char *what; /* as a lookalike: "this looks like WHAT" */
  const char *self; /* as the file expected: "not SELF" */
  const char *goes; /* where a file of this kind goes */
  const char *takes; /* what this kind's place takes */
} kinds[DS_FILE_KINDS] = {
    [DS_FILE_CALIB] = {calib_keys, "a calibration file (ddpreal calibrate)",
                       "a calibration file", "give it to --calib",
                       "--calib takes a calibration file (written by ddpreal calibrate)"},
    [DS_FILE_TOPOLOGY] = {topology_keys, "a topology", "a topology", "give it to --topo",
                          "--topo takes a topology (a name in topologies/ such as 4gpu, or "
                          "its file)"},
    [DS_FILE_MODEL] = {model_keys, "a model file", "a model", "give it to --model",
                       "--model takes a model (a name in models/ such as resnet50, or its "
                       "file)"},
    [DS_FILE_GPU_TABLE] = {gpu_table_keys, "a GPU table", "a GPU table",
                           "a topology names its GPU and the table is read from gpus.yaml "
                           "beside it or from topologies/ (docs/topologies.md)",
                           "gpus.yaml holds a GPU table (docs/topologies.md)"},
};

const char *const *ds_file_kind_root_keys(enum ds_file_kind kind) {
  return kinds[kind].keys;
}

ds_status ds_file_kind_open(const char *path, enum ds_file_kind kind, struct ds_config **out,
                            struct ds_cnode *root, struct ds_err *err) {
  struct ds_config_lookalike like[DS_FILE_KINDS - 1];
  char advice[DS_FILE_KINDS - 1][512];
  size_t n = 0;
  for (int k = 0; k < DS_FILE_KINDS; k++) {
    if (k == (int)kind) continue;
    snprintf(advice[n], sizeof advice[n], "%s; %s", kinds[k].goes, kinds[kind].takes);
    like[n] = (struct ds_config_lookalike){kinds[k].keys, kinds[k].what, advice[n]};
    n++;
  }
  return ds_config_open_as(path, kinds[kind].keys, kinds[kind].self, like, n, out, root, err);
}
