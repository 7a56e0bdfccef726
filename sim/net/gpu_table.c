/*
 * GPU table reader. Every entry is validated (so a typo anywhere in the
 * table is reported, not only in the entry asked for); optional keys (tf32,
 * bf16, nvlink_bw, pcie_bw) leave 0 where a GPU lacks the feature, and so do
 * the `efficiency` map's keys where nothing was measured.
 */
#include "sim/net/gpu_table.h"

#include <stdio.h>
#include <string.h>

#include "base/config.h"

static const char *const root_keys[] = {"schema_version", "gpus", NULL};
static const char *const gpu_keys[] = {"name", "arch", "sms", "fp32", "tf32",
                                       "fp16", "bf16", "mem", "mem_bw",
                                       "nvlink_bw", "pcie_bw", "source", "efficiency",
                                       NULL};

const char *const ds_gpu_efficiency_keys[] = {
    "conv_fp32",      "conv_tf32",      "conv_half",     "matmul_fp32", "matmul_tf32",
    "matmul_half",    "attention_fp32", "attention_tf32", "attention_half", "memory", NULL};

double *ds_gpu_efficiency_slot(struct ds_gpu_efficiency *e, int key) {
  if (key < 0 || key > 9) return NULL;
  if (key == 9) return &e->memory;
  double *cls = key < 3 ? e->conv : key < 6 ? e->matmul : e->attention;
  return &cls[key % 3];
}

ds_status ds_gpu_efficiency_read(const struct ds_cnode *map, struct ds_gpu_efficiency *e,
                                 int allow_memory, struct ds_err *err) {
  DS_CHECK(ds_cmap_check_keys(map, ds_gpu_efficiency_keys, err));
  for (int k = 0; ds_gpu_efficiency_keys[k]; k++) {
    struct ds_cnode node;
    if (!ds_cmap_get(map, ds_gpu_efficiency_keys[k], &node)) continue;
    if (k == 9 && !allow_memory)
      return ds_cnode_error(&node, err, "memory is set by the compute section's "
                            "mem_efficiency here, not under efficiency");
    double v;
    DS_CHECK(ds_cnode_number(&node, &v, err));
    if (!(v > 0 && v <= 1))
      return ds_cnode_error(&node, err, "expected an achieved / peak fraction in (0, 1], "
                            "got %g", v);
    *ds_gpu_efficiency_slot(e, k) = v;
  }
  return DS_OK;
}

static ds_status read_optional_flops(const struct ds_cnode *entry,
                                     const char *key, double *out,
                                     struct ds_err *err) {
  struct ds_cnode node;
  *out = 0;
  if (!ds_cmap_get(entry, key, &node)) return DS_OK;
  return ds_cnode_flops(&node, out, err);
}

static ds_status read_entry(const struct ds_cnode *entry,
                            struct ds_gpu_spec *spec, struct ds_err *err) {
  struct ds_cnode node;
  const char *name;
  int64_t sms;
  DS_CHECK(ds_cmap_check_keys(entry, gpu_keys, err));
  DS_CHECK(ds_cmap_require(entry, "name", "a GPU name", &node, err));
  DS_CHECK(ds_cnode_string(&node, &name, err));
  if (strlen(name) >= sizeof spec->name)
    return ds_cnode_error(&node, err, "expected a name of at most %zu characters",
                          sizeof spec->name - 1);
  memset(spec, 0, sizeof *spec);
  strcpy(spec->name, name);
  DS_CHECK(ds_cmap_require(entry, "sms", "an SM count", &node, err));
  DS_CHECK(ds_cnode_int64(&node, &sms, err));
  if (sms <= 0 || sms > 100000)
    return ds_cnode_error(&node, err, "expected a positive SM count");
  spec->sms = (int32_t)sms;
  DS_CHECK(ds_cmap_require(entry, "fp32", "a compute rate", &node, err));
  DS_CHECK(ds_cnode_flops(&node, &spec->fp32_flops_per_s, err));
  DS_CHECK(ds_cmap_require(entry, "fp16", "a compute rate", &node, err));
  DS_CHECK(ds_cnode_flops(&node, &spec->fp16_flops_per_s, err));
  DS_CHECK(read_optional_flops(entry, "tf32", &spec->tf32_flops_per_s, err));
  DS_CHECK(read_optional_flops(entry, "bf16", &spec->bf16_flops_per_s, err));
  DS_CHECK(ds_cmap_require(entry, "mem", "a size", &node, err));
  DS_CHECK(ds_cnode_bytes(&node, &spec->mem_bytes, err));
  DS_CHECK(ds_cmap_require(entry, "mem_bw", "a bandwidth", &node, err));
  DS_CHECK(ds_cnode_bw(&node, &spec->mem_bw_bytes_per_s, err));
  if (ds_cmap_get(entry, "efficiency", &node))
    DS_CHECK(ds_gpu_efficiency_read(&node, &spec->eff, 1, err));
  return DS_OK;
}

ds_status ds_gpu_table_lookup(const char *path, const char *gpu_name,
                              struct ds_gpu_spec *out, struct ds_err *err) {
  struct ds_config *cfg = NULL;
  struct ds_cnode root, gpus, entry;
  size_t n = 0;
  char known[512] = "";
  ds_status st;
  int found = 0;

  DS_CHECK_GOTO(ds_config_open(path, root_keys, &cfg, &root, err), st, out);
  DS_CHECK_GOTO(ds_cmap_require(&root, "gpus", "a sequence of GPUs", &gpus, err),
                st, out);
  DS_CHECK_GOTO(ds_cseq_len(&gpus, &n, err), st, out);
  for (size_t i = 0; i < n; i++) {
    struct ds_gpu_spec spec;
    DS_CHECK_GOTO(ds_cseq_at(&gpus, i, &entry, err), st, out);
    DS_CHECK_GOTO(read_entry(&entry, &spec, err), st, out);
    size_t used = strlen(known);
    snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "",
             spec.name);
    if (!found && strcmp(spec.name, gpu_name) == 0) {
      *out = spec;
      found = 1;
    }
  }
  if (!found)
    st = ds_err_set(err, DS_EINPUT, "%s: unknown GPU '%s' (known: %s)", path,
                    gpu_name, known);
out:
  ds_config_free(cfg);
  return st;
}
