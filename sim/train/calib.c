/*
 * Loader of calibration files (format in traces/calib_file.h): written by
 * `ddpreal calibrate` (gpu, compute, efficiency, nccl, collective; writer in
 * traces/calib_file.c), tools/gen_grouped_conv.py --calib (grouped_conv),
 * bench/host_calibrate.py --calib-out (host: dispatch, node) and
 * bench/torch_ddp_host.py --calib-out (host: ddp_grad, ddp_bucket,
 * ddp_buffer, ddp_iter).
 *
 * Invariant: a key absent from the file leaves its has_ flag 0 (its eff[]
 * slot 0), and ds_calib_apply_compute / ds_calib_apply_gpu change exactly
 * the keys present, so a partial calibration never resets what the
 * topology file or the GPU table says. Several files (one per tool that
 * measured the machine) merge into one struct key by key
 * (ds_calib_load_files): each key set by one file at most, so a merge
 * applies exactly what one file of all their keys would.
 */
#include "sim/train/calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/config.h"
#include "sim/net/file_kinds.h"
#include "base/units.h"
#include "sim/net/gpu_table.h"
#include "sim/net/topo.h"

static const char *const nccl_keys[] = {"launch", "interference_blocks",
                                        "interference_slowdown", "interference_predicted",
                                        NULL};
static const char *const compute_keys[] = {"flops_efficiency", "mem_efficiency",
                                           "kernel_overhead", "fp32_math", NULL};
static const char *const host_keys[] = {"unit", "dispatch", "node", "ddp_grad", "ddp_bucket",
                                        "ddp_buffer", "ddp_iter", NULL};
static const char *const coll_keys[] = {"op", "nranks", "shared", "copy", "alpha",
                                        "bus_bw", "fit_r2", "fit_rms_rel_residual", NULL};

/* A number in (0, 1], when present. */
static ds_status read_fraction(const struct ds_cnode *map, const char *key, int *has,
                               double *out, struct ds_err *err) {
  struct ds_cnode node;
  if (!ds_cmap_get(map, key, &node)) return DS_OK;
  DS_CHECK(ds_gpu_peak_fraction(&node, out, err));
  *has = 1;
  return DS_OK;
}

static ds_status read_compute(const struct ds_cnode *root, struct ds_calib *c,
                              struct ds_err *err) {
  struct ds_cnode map, node;
  if (!ds_cmap_get(root, "compute", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, compute_keys, err));
  DS_CHECK(read_fraction(&map, "flops_efficiency", &c->has_flops_efficiency,
                         &c->flops_efficiency, err));
  DS_CHECK(read_fraction(&map, "mem_efficiency", &c->has_mem_efficiency, &c->mem_efficiency,
                         err));
  if (ds_cmap_get(&map, "kernel_overhead", &node)) {
    DS_CHECK(ds_cnode_time_ns(&node, &c->kernel_overhead_ns, err));
    c->has_kernel_overhead = 1;
  }
  if (ds_cmap_get(&map, "fp32_math", &node)) {
    DS_CHECK(ds_topo_read_fp32_math(&node, &c->fp32_uses_tf32, err));
    c->has_fp32_math = 1;
  }
  return DS_OK;
}

/* The efficiency section: the GPU table's keys (memory excepted), read by
 * the GPU table's own reader, so the two files cannot disagree on a key. */
static ds_status read_efficiency(const struct ds_cnode *root, struct ds_calib *c,
                                 struct ds_err *err) {
  struct ds_cnode map;
  struct ds_gpu_efficiency e;
  if (!ds_cmap_get(root, "efficiency", &map)) return DS_OK;
  memset(&e, 0, sizeof e);
  DS_CHECK(ds_gpu_efficiency_read(&map, &e, 0, err));
  for (int k = 0; k < DS_CALIB_EFF_KEYS; k++) c->eff[k] = *ds_gpu_efficiency_slot(&e, k);
  return DS_OK;
}

/* A number >= 1 (a slowdown factor). */
static ds_status read_factor(const struct ds_cnode *map, const char *key, double *out,
                             struct ds_err *err) {
  struct ds_cnode node;
  DS_CHECK(ds_cmap_require(map, key, "a slowdown factor >= 1", &node, err));
  DS_CHECK(ds_cnode_number(&node, out, err));
  if (!(*out >= 1 && *out <= 100))
    return ds_cnode_error(&node, err, "expected a slowdown factor from 1 to 100, got %g", *out);
  return DS_OK;
}

static ds_status read_nccl(const struct ds_cnode *root, struct ds_calib *c,
                           struct ds_err *err) {
  struct ds_cnode map, node;
  if (!ds_cmap_get(root, "nccl", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, nccl_keys, err));
  if (ds_cmap_get(&map, "launch", &node)) {
    DS_CHECK(ds_cnode_time_ns(&node, &c->nccl_launch_ns, err));
    c->has_nccl_launch = 1;
  }
  if (ds_cmap_get(&map, "interference_blocks", &node)) {
    int64_t n;
    DS_CHECK(ds_cnode_int_range(&node, 1, 100000, &n, err));
    c->interference_blocks = (int32_t)n;
    c->interference_blocks_line = ds_cnode_line(&node);
    DS_CHECK(read_factor(&map, "interference_slowdown", &c->interference_slowdown, err));
    DS_CHECK(read_factor(&map, "interference_predicted", &c->interference_predicted, err));
    if (ds_cmap_get(&map, "interference_predicted", &node))
      c->interference_predicted_line = ds_cnode_line(&node);
    c->has_interference = 1;
  } else if (ds_cmap_get(&map, "interference_slowdown", &node) ||
             ds_cmap_get(&map, "interference_predicted", &node)) {
    return ds_cnode_error(&node, err, "needs interference_blocks beside it");
  }
  return DS_OK;
}

static ds_status read_collective(const struct ds_cnode *root, struct ds_calib *c,
                                 struct ds_err *err) {
  struct ds_cnode map, node;
  const char *s;
  int64_t n;
  if (!ds_cmap_get(root, "collective", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, coll_keys, err));
  DS_CHECK(ds_cmap_require(&map, "op", "allreduce", &node, err));
  DS_CHECK(ds_cnode_string(&node, &s, err));
  if (strcmp(s, "allreduce") != 0)
    return ds_cnode_error(&node, err, "expected allreduce, got \"%s\"", s);
  DS_CHECK(ds_cmap_require(&map, "nranks", "a rank count", &node, err));
  DS_CHECK(ds_cnode_int_range(&node, 1, INT32_MAX, &n, err));
  c->coll_nranks = (int32_t)n;
  DS_CHECK(ds_cmap_require(&map, "shared", "true or false", &node, err));
  DS_CHECK(ds_cnode_bool(&node, &c->coll_shared, err));
  DS_CHECK(ds_cmap_require(&map, "copy", "true or false", &node, err));
  DS_CHECK(ds_cnode_bool(&node, &c->coll_copy, err));
  DS_CHECK(ds_cmap_require(&map, "alpha", "a time like \"12us\"", &node, err));
  DS_CHECK(ds_cnode_time_ns(&node, &c->coll_alpha_ns, err));
  DS_CHECK(ds_cmap_require(&map, "bus_bw", "a bandwidth like \"350GBps\"", &node, err));
  DS_CHECK(ds_cnode_bw(&node, &c->coll_bus_bw_bytes_per_s, err));
  /* R^2 = 1 - SS_res / SS_tot: at most 1 (a perfect fit), negative for a
   * fit worse than the mean, so no lower bound; the number reader refuses
   * what is not finite */
  if (ds_cmap_get(&map, "fit_r2", &node)) {
    DS_CHECK(ds_cnode_number(&node, &c->coll_fit_r2, err));
    if (c->coll_fit_r2 > 1)
      return ds_cnode_error(&node, err, "expected an R^2 <= 1, got %g", c->coll_fit_r2);
  }
  if (ds_cmap_get(&map, "fit_rms_rel_residual", &node)) {
    DS_CHECK(ds_cnode_number(&node, &c->coll_fit_rms_rel_residual, err));
    if (c->coll_fit_rms_rel_residual < 0)
      return ds_cnode_error(&node, err, "expected a residual >= 0, got %g",
                            c->coll_fit_rms_rel_residual);
  }
  c->has_collective = 1;
  return DS_OK;
}

static const char *const gconv_keys[] = {"gpu", "sms", "boost_mhz", "entries", NULL};
static const char *const gconv_entry_keys[] = {
    "mode",  "group_width", "out_channels", "out_positions", "stride",
    "batch", "fwd_us",      "dgrad_us",     "wgrad_us",      NULL};

/* A required integer from 1 to max. */
static ds_status read_count(const struct ds_cnode *map, const char *key, int64_t max,
                            int32_t *out, struct ds_err *err) {
  struct ds_cnode node;
  int64_t n;
  DS_CHECK(ds_cmap_require(map, key, "an integer >= 1", &node, err));
  DS_CHECK(ds_cnode_int_range(&node, 1, max, &n, err));
  *out = (int32_t)n;
  return DS_OK;
}

/* A required kernel time in microseconds, from 1 ns (the clock's tick: a
 * time of 1e-300 us was taken and rounded to nothing) to 1e12. */
static ds_status read_us(const struct ds_cnode *map, const char *key, double *out,
                         struct ds_err *err) {
  struct ds_cnode node;
  DS_CHECK(ds_cmap_require(map, key, "a time in microseconds", &node, err));
  DS_CHECK(ds_cnode_number(&node, out, err));
  if (!(*out >= 1e-3 && *out < 1e12))
    return ds_cnode_error(&node, err,
                          "expected a time in microseconds from 0.001 (1 ns) to 1e12, got %g",
                          *out);
  return DS_OK;
}

/* One entry of grouped_conv.entries (item i, node item) into *e. */
static ds_status read_gconv_entry(const struct ds_cnode *item, size_t i,
                                  const struct ds_calib *c, struct ds_gconv_entry *e,
                                  struct ds_err *err) {
  struct ds_cnode node;
  const char *s;
  DS_CHECK(ds_cmap_check_keys(item, gconv_entry_keys, err));
  DS_CHECK(ds_cmap_require(item, "mode", "fp32, tf32, half or half_nhwc", &node, err));
  DS_CHECK(ds_cnode_string(&node, &s, err));
  int m = 0;
  while (m < DS_GCONV_MODES && strcmp(s, ds_gconv_mode_names[m]) != 0) m++;
  if (m == DS_GCONV_MODES)
    return ds_cnode_error(&node, err, "expected fp32, tf32, half or half_nhwc, got \"%s\"", s);
  e->mode = (enum ds_gconv_mode)m;
  /* bounds keep every product the lookup forms (batch x channels x
   * positions) exact in a double */
  DS_CHECK(read_count(item, "group_width", 1 << 20, &e->group_width, err));
  DS_CHECK(read_count(item, "out_channels", 1 << 20, &e->out_channels, err));
  DS_CHECK(read_count(item, "out_positions", 1 << 24, &e->out_positions, err));
  DS_CHECK(read_count(item, "stride", 64, &e->stride, err));
  DS_CHECK(read_count(item, "batch", 1 << 20, &e->batch, err));
  DS_CHECK(read_us(item, "fwd_us", &e->us[DS_CONV_FWD], err));
  DS_CHECK(read_us(item, "dgrad_us", &e->us[DS_CONV_DGRAD], err));
  DS_CHECK(read_us(item, "wgrad_us", &e->us[DS_CONV_WGRAD], err));
  for (size_t j = 0; j < i; j++)
    if (c->gconv[j].mode == e->mode && c->gconv[j].batch == e->batch &&
        ds_gconv_same_shape(&c->gconv[j], e))
      return ds_cnode_error(item, err,
                            "the same mode, shape and batch as entries[%zu]: one time each",
                            j);
  return DS_OK;
}

/* A map's optional gpu key (the top level's or grouped_conv's) into out
 * (cap bytes); files before 2026-11-27 lack it. */
static ds_status read_gpu_name(const struct ds_cnode *map, char *out, size_t cap,
                               struct ds_err *err) {
  struct ds_cnode node;
  if (!ds_cmap_get(map, "gpu", &node)) return DS_OK;
  const char *s;
  DS_CHECK(ds_cnode_string(&node, &s, err));
  if (!s[0] || strlen(s) >= cap)
    return ds_cnode_error(&node, err, "expected the GPU's name (1 to %zu characters)", cap - 1);
  snprintf(out, cap, "%s", s);
  return DS_OK;
}

static ds_status read_gconv(const struct ds_cnode *root, struct ds_calib *c,
                            struct ds_err *err) {
  struct ds_cnode map, node, list;
  size_t n;
  double mhz;
  if (!ds_cmap_get(root, "grouped_conv", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, gconv_keys, err));
  DS_CHECK(read_gpu_name(&map, c->gconv_gpu, sizeof c->gconv_gpu, err));
  DS_CHECK(read_count(&map, "sms", 100000, &c->gconv_sms, err));
  DS_CHECK(ds_cmap_require(&map, "boost_mhz", "the measured GPU's boost clock in MHz", &node,
                           err));
  DS_CHECK(ds_cnode_number(&node, &mhz, err));
  /* the GPU table's bound (sim/net/gpu_table.c): a clock of 1e-9 MHz was
   * taken, and every grouped convolution scaled to another GPU took
   * 1e-12 of its measured time */
  if (!(mhz >= 1 && mhz <= 100000))
    return ds_cnode_error(&node, err, "expected a clock in MHz from 1 to 100000, got %g", mhz);
  c->gconv_clock_hz = mhz * 1e6;
  DS_CHECK(ds_cmap_require(&map, "entries", "a list of measured kernels", &list, err));
  DS_CHECK(ds_cseq_len(&list, &n, err));
  if (n < 1 || n > DS_GCONV_MAX_ENTRIES)
    return ds_cnode_error(&list, err, "expected 1 to %d entries, got %zu",
                          DS_GCONV_MAX_ENTRIES, n);
  for (size_t i = 0; i < n; i++) {
    struct ds_cnode item;
    DS_CHECK(ds_cseq_at(&list, i, &item, err));
    DS_CHECK(read_gconv_entry(&item, i, c, &c->gconv[i], err));
  }
  c->n_gconv = (int32_t)n;
  return DS_OK;
}

/* A host time, when present (ds_cnode_time_ns refuses a bare number other
 * than 0: a host time is tens of microseconds, a bare "27" a unit left
 * out). */
static ds_status read_host_time(const struct ds_cnode *map, const char *key, int *has,
                                double *out_ns, struct ds_err *err) {
  struct ds_cnode node;
  if (!ds_cmap_get(map, key, &node)) return DS_OK;
  DS_CHECK(ds_cnode_time_ns(&node, out_ns, err));
  *has = 1;
  return DS_OK;
}

/* The unit of a host section's dispatch and node (`unit: launching`,
 * DS_CALIB_HOST_UNIT): per aten op dispatched that launches a kernel and per
 * autograd node that launches one, the model files' host_views and
 * host_view_nodes left out (topology keys host_dispatch and host_node). The
 * files of the units before it (per every dispatch and node, until
 * 2026-11-28c; per node not a view's backward by name, until 2026-11-28d)
 * have no such key and would apply 5-25 % low on a CNN, silently: refused at
 * `cost` (the section's dispatch or node), with how to mend them. */
static ds_status check_host_unit(const struct ds_cnode *map, const struct ds_cnode *cost,
                                 int merging, struct ds_err *err) {
  struct ds_cnode node;
  const char *unit = NULL;
  if (!ds_cmap_get(map, "unit", &node))
    return ds_cnode_error(
        cost, err,
        "a host cost without `unit: " DS_CALIB_HOST_UNIT "` in its section%s: a file written "
        "before 2026-11-28d divided by every dispatch or node, or counted a node free by its "
        "name; write it again (bench/host_pool.py --calib-dir over its CSVs, "
        "bench/host_calibrate.py --calib-out), rescale it from its comments "
        "(bench/host_rescale.py FILE) or scale dispatch by dispatches / kernel-launching "
        "dispatches and node by nodes / nodes that launch a kernel (the model file's "
        "host_dispatches, host_views, host_nodes, host_view_nodes), then add `unit: "
        DS_CALIB_HOST_UNIT "`",
        merging ? " (each --calib file's own: a unit in another file does not cover it)" : "");
  DS_CHECK(ds_cnode_string(&node, &unit, err));
  if (strcmp(unit, DS_CALIB_HOST_UNIT) != 0)
    return ds_cnode_error(&node, err, "expected `" DS_CALIB_HOST_UNIT "` (per dispatch and "
                          "per node that launch a kernel), got '%s'", unit);
  return DS_OK;
}

/* The host section: bench/host_calibrate.py's medians, in the units of the
 * topology's host_dispatch and host_node (check_host_unit), and
 * bench/torch_ddp_host.py's fits of DDP's reducer: per gradient, per bucket
 * call, per broadcast buffer, per iteration (ddp_iter) (a unit required on
 * each). */
static ds_status read_host(const struct ds_cnode *root, struct ds_calib *c, int merging,
                           struct ds_err *err) {
  struct ds_cnode map, node;
  if (!ds_cmap_get(root, "host", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, host_keys, err));
  if (ds_cmap_get(&map, "dispatch", &node) || ds_cmap_get(&map, "node", &node) ||
      ds_cmap_get(&map, "unit", &node))
    DS_CHECK(check_host_unit(&map, &node, merging, err));
  DS_CHECK(read_host_time(&map, "dispatch", &c->has_host_dispatch, &c->host_dispatch_ns, err));
  DS_CHECK(read_host_time(&map, "node", &c->has_host_node, &c->host_node_ns, err));
  DS_CHECK(read_host_time(&map, "ddp_grad", &c->has_host_ddp_grad, &c->host_ddp_grad_ns, err));
  DS_CHECK(read_host_time(&map, "ddp_bucket", &c->has_host_ddp_bucket, &c->host_ddp_bucket_ns,
                          err));
  DS_CHECK(read_host_time(&map, "ddp_buffer", &c->has_host_ddp_buffer, &c->host_ddp_buffer_ns,
                          err));
  DS_CHECK(read_host_time(&map, "ddp_iter", &c->has_host_ddp_iter, &c->host_ddp_iter_ns, err));
  return DS_OK;
}

void ds_calib_gconv_table(const struct ds_calib *c, struct ds_gconv_table *out) {
  *out = (struct ds_gconv_table){c->gconv, c->n_gconv, c->gconv_sms, c->gconv_clock_hz, 1, 1};
}

/* Whether a file's GPU name is g: the device's name (cudaDeviceProp.name,
 * which nvidia-smi prints too) is g's table name (case ignored), or means
 * g in the GPU table as its smi-name hints read it: one of g's smi_names,
 * or their words without the vendor's ("H100 80GB HBM3"), where they end
 * no other GPU's (ds_gpu_table_by_device_name, the one rule for both). */
static int names_gpu(const char *name, const struct ds_gpu_spec *g,
                     const struct ds_gpu_table *table) {
  if (strcasecmp(name, g->name) == 0) return 1;
  const struct ds_gpu_info *named = table ? ds_gpu_table_by_device_name(table, name) : NULL;
  return named && strcmp(named->spec.name, g->name) == 0;
}

enum ds_calib_gpu_fit ds_calib_gpu_fit(const struct ds_calib *c, const struct ds_gpu_spec *g,
                                       const struct ds_gpu_table *table) {
  if (!c->gpu[0]) return DS_CALIB_GPU_UNNAMED;
  return names_gpu(c->gpu, g, table) ? DS_CALIB_GPU_SAME : DS_CALIB_GPU_OTHER;
}

enum ds_gconv_fit ds_calib_gconv_fit(const struct ds_calib *c, const struct ds_gpu_spec *g,
                                     const struct ds_gpu_table *table) {
  int same;
  if (c->gconv_gpu[0]) {
    same = names_gpu(c->gconv_gpu, g, table);
  } else {
    /* an older file names no GPU: another SM count is another GPU */
    same = g->sms > 0 && g->sms == c->gconv_sms;
  }
  if (same) return DS_GCONV_FIT_THIS_GPU;
  /* another GPU's cycles, as the built-in H200 table's (grouped_conv.h) */
  if (g->sms > 0 && g->boost_mhz > 0) return DS_GCONV_FIT_SCALED;
  return DS_GCONV_FIT_REFUSED;
}

static int has_key(const struct ds_calib *c, enum ds_calib_key k);

/* A file that sets no key applies nothing, yet the run would be labelled
 * calibrated: refused (a file cut after its header, or the wrong file),
 * and so is one whose sections set nothing (`host: {unit: launching}`,
 * `compute: {}`), at its first section. The sections are the root keys
 * sim/net/file_kinds.c allows a calibration file, less schema_version and
 * gpu (which applies nothing by itself). */
static ds_status require_a_key(const struct ds_cnode *root, const struct ds_calib *c,
                               const char *path, struct ds_err *err) {
  for (int k = 0; k < DS_CALIB_KEY_COUNT; k++)
    if (k != DS_CALIB_KEY_GPU && has_key(c, (enum ds_calib_key)k)) return DS_OK;
  const char *const *keys = ds_file_kind_root_keys(DS_FILE_CALIB);
  char names[256] = "";
  struct ds_cnode node, first;
  const char *first_name = NULL;
  for (int i = 0; keys[i]; i++) {
    if (strcmp(keys[i], "schema_version") == 0 || strcmp(keys[i], "gpu") == 0) continue;
    if (!first_name && ds_cmap_get(root, keys[i], &node)) {
      first = node;
      first_name = keys[i];
    }
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", keys[i]);
  }
  if (first_name)
    return ds_cnode_error(&first, err, "nothing to apply in it or in another section "
                          "(expected at least one key%s): a file that sets none would label "
                          "the run calibrated and change nothing",
                          strcmp(first_name, "host") == 0 ? " besides unit" : "");
  return ds_err_set(err, DS_EINPUT, "%s: no section to apply (expected at least one of %s): a "
                    "file with none would label the run calibrated and change nothing", path,
                    names);
}

/* Each merge key's section and key in the file (section NULL: a root key;
 * key NULL: the section whole), for its line. */
static void key_place(enum ds_calib_key k, const char **section, const char **key) {
  static const char *const places[][2] = {
      [DS_CALIB_KEY_GPU] = {NULL, "gpu"},
      [DS_CALIB_KEY_FLOPS_EFFICIENCY] = {"compute", "flops_efficiency"},
      [DS_CALIB_KEY_MEM_EFFICIENCY] = {"compute", "mem_efficiency"},
      [DS_CALIB_KEY_KERNEL_OVERHEAD] = {"compute", "kernel_overhead"},
      [DS_CALIB_KEY_FP32_MATH] = {"compute", "fp32_math"},
      [DS_CALIB_KEY_NCCL_LAUNCH] = {"nccl", "launch"},
      [DS_CALIB_KEY_NCCL_INTERFERENCE] = {"nccl", "interference_blocks"},
      [DS_CALIB_KEY_COLLECTIVE] = {"collective", NULL},
      [DS_CALIB_KEY_GROUPED_CONV] = {"grouped_conv", NULL},
      [DS_CALIB_KEY_HOST_DISPATCH] = {"host", "dispatch"},
      [DS_CALIB_KEY_HOST_NODE] = {"host", "node"},
      [DS_CALIB_KEY_HOST_DDP_GRAD] = {"host", "ddp_grad"},
      [DS_CALIB_KEY_HOST_DDP_BUCKET] = {"host", "ddp_bucket"},
      [DS_CALIB_KEY_HOST_DDP_BUFFER] = {"host", "ddp_buffer"},
      [DS_CALIB_KEY_HOST_DDP_ITER] = {"host", "ddp_iter"}};
  if (k >= DS_CALIB_KEY_EFF0 && k < DS_CALIB_KEY_EFF0 + DS_CALIB_EFF_KEYS) {
    *section = "efficiency";
    *key = ds_calib_efficiency_keys[k - DS_CALIB_KEY_EFF0];
    return;
  }
  *section = places[k][0];
  *key = places[k][1];
}

const char *ds_calib_key_name(enum ds_calib_key key) {
  /* "section.key", written once per key (ddpsim's workers are processes,
   * not threads): the efficiency keys come from their list */
  static char names[DS_CALIB_KEY_COUNT][64];
  if ((int)key < 0 || key >= DS_CALIB_KEY_COUNT) return "?";
  if (key == DS_CALIB_KEY_NCCL_INTERFERENCE) return "nccl.interference";
  if (!names[key][0]) {
    const char *section, *k;
    key_place(key, &section, &k);
    snprintf(names[key], sizeof names[key], "%s%s%s", section ? section : "",
             section && k ? "." : "", k ? k : "");
  }
  return names[key];
}

/* The line of each merge key the file has (0 where absent). */
static void key_lines(const struct ds_cnode *root, int32_t *lines) {
  for (int k = 0; k < DS_CALIB_KEY_COUNT; k++) {
    const char *section, *key;
    struct ds_cnode map, node;
    key_place((enum ds_calib_key)k, &section, &key);
    lines[k] = 0;
    if (!section) {
      if (ds_cmap_get(root, key, &node)) lines[k] = ds_cnode_line(&node);
    } else if (ds_cmap_get(root, section, &map)) {
      if (!key) lines[k] = ds_cnode_line(&map);
      else if (ds_cmap_get(&map, key, &node)) lines[k] = ds_cnode_line(&node);
    }
  }
}

/* One file into *out (zeroed first); lines (DS_CALIB_KEY_COUNT, or NULL)
 * gets each merge key's line; merging: one of several --calib files (the
 * host unit's message says a unit does not carry across files). */
static ds_status load_one(const char *path, struct ds_calib *out, int32_t *lines, int merging,
                          struct ds_err *err) {
  struct ds_config *cfg = NULL;
  struct ds_cnode root;
  memset(out, 0, sizeof *out);
  ds_status st = ds_file_kind_open(path, DS_FILE_CALIB, &cfg, &root, err);
  if (st == DS_EIO) st = DS_EINPUT; /* an unreadable file named on the command line */
  DS_CHECK_GOTO(st, st, done);
  DS_CHECK_GOTO(read_gpu_name(&root, out->gpu, sizeof out->gpu, err), st, done);
  DS_CHECK_GOTO(read_compute(&root, out, err), st, done);
  DS_CHECK_GOTO(read_efficiency(&root, out, err), st, done);
  DS_CHECK_GOTO(read_nccl(&root, out, err), st, done);
  DS_CHECK_GOTO(read_collective(&root, out, err), st, done);
  DS_CHECK_GOTO(read_gconv(&root, out, err), st, done);
  DS_CHECK_GOTO(read_host(&root, out, merging, err), st, done);
  DS_CHECK_GOTO(require_a_key(&root, out, path, err), st, done);
  if (lines) key_lines(&root, lines);
done:
  ds_config_free(cfg);
  if (st != DS_OK) memset(out, 0, sizeof *out);
  return st;
}

ds_status ds_calib_load(const char *path, struct ds_calib *out, struct ds_err *err) {
  return load_one(path, out, NULL, 0, err);
}

/* Whether c sets merge key k. */
static int has_key(const struct ds_calib *c, enum ds_calib_key k) {
  if (k >= DS_CALIB_KEY_EFF0 && k < DS_CALIB_KEY_EFF0 + DS_CALIB_EFF_KEYS)
    return c->eff[k - DS_CALIB_KEY_EFF0] > 0;
  switch (k) {
  case DS_CALIB_KEY_GPU: return c->gpu[0] != '\0';
  case DS_CALIB_KEY_FLOPS_EFFICIENCY: return c->has_flops_efficiency;
  case DS_CALIB_KEY_MEM_EFFICIENCY: return c->has_mem_efficiency;
  case DS_CALIB_KEY_KERNEL_OVERHEAD: return c->has_kernel_overhead;
  case DS_CALIB_KEY_FP32_MATH: return c->has_fp32_math;
  case DS_CALIB_KEY_NCCL_LAUNCH: return c->has_nccl_launch;
  case DS_CALIB_KEY_NCCL_INTERFERENCE: return c->has_interference;
  case DS_CALIB_KEY_COLLECTIVE: return c->has_collective;
  case DS_CALIB_KEY_GROUPED_CONV: return c->n_gconv > 0;
  case DS_CALIB_KEY_HOST_DISPATCH: return c->has_host_dispatch;
  case DS_CALIB_KEY_HOST_NODE: return c->has_host_node;
  case DS_CALIB_KEY_HOST_DDP_GRAD: return c->has_host_ddp_grad;
  case DS_CALIB_KEY_HOST_DDP_BUCKET: return c->has_host_ddp_bucket;
  case DS_CALIB_KEY_HOST_DDP_BUFFER: return c->has_host_ddp_buffer;
  case DS_CALIB_KEY_HOST_DDP_ITER: return c->has_host_ddp_iter;
  default: return 0;
  }
}

/* Copies merge key k (its value and has_ flag, a section's every field)
 * from src into dst. */
static void take_key(struct ds_calib *dst, const struct ds_calib *src, enum ds_calib_key k) {
  if (k >= DS_CALIB_KEY_EFF0 && k < DS_CALIB_KEY_EFF0 + DS_CALIB_EFF_KEYS) {
    dst->eff[k - DS_CALIB_KEY_EFF0] = src->eff[k - DS_CALIB_KEY_EFF0];
    return;
  }
  switch (k) {
  case DS_CALIB_KEY_GPU: memcpy(dst->gpu, src->gpu, sizeof dst->gpu); break;
  case DS_CALIB_KEY_FLOPS_EFFICIENCY:
    dst->has_flops_efficiency = 1;
    dst->flops_efficiency = src->flops_efficiency;
    break;
  case DS_CALIB_KEY_MEM_EFFICIENCY:
    dst->has_mem_efficiency = 1;
    dst->mem_efficiency = src->mem_efficiency;
    break;
  case DS_CALIB_KEY_KERNEL_OVERHEAD:
    dst->has_kernel_overhead = 1;
    dst->kernel_overhead_ns = src->kernel_overhead_ns;
    break;
  case DS_CALIB_KEY_FP32_MATH:
    dst->has_fp32_math = 1;
    dst->fp32_uses_tf32 = src->fp32_uses_tf32;
    break;
  case DS_CALIB_KEY_NCCL_LAUNCH:
    dst->has_nccl_launch = 1;
    dst->nccl_launch_ns = src->nccl_launch_ns;
    break;
  case DS_CALIB_KEY_NCCL_INTERFERENCE:
    dst->has_interference = 1;
    dst->interference_blocks = src->interference_blocks;
    dst->interference_slowdown = src->interference_slowdown;
    dst->interference_predicted = src->interference_predicted;
    dst->interference_blocks_line = src->interference_blocks_line;
    dst->interference_predicted_line = src->interference_predicted_line;
    break;
  case DS_CALIB_KEY_COLLECTIVE:
    dst->has_collective = 1;
    dst->coll_nranks = src->coll_nranks;
    dst->coll_shared = src->coll_shared;
    dst->coll_copy = src->coll_copy;
    dst->coll_alpha_ns = src->coll_alpha_ns;
    dst->coll_bus_bw_bytes_per_s = src->coll_bus_bw_bytes_per_s;
    dst->coll_fit_r2 = src->coll_fit_r2;
    dst->coll_fit_rms_rel_residual = src->coll_fit_rms_rel_residual;
    break;
  case DS_CALIB_KEY_GROUPED_CONV:
    dst->n_gconv = src->n_gconv;
    dst->gconv_sms = src->gconv_sms;
    memcpy(dst->gconv_gpu, src->gconv_gpu, sizeof dst->gconv_gpu);
    dst->gconv_clock_hz = src->gconv_clock_hz;
    memcpy(dst->gconv, src->gconv, (size_t)src->n_gconv * sizeof *src->gconv);
    break;
  case DS_CALIB_KEY_HOST_DISPATCH:
    dst->has_host_dispatch = 1;
    dst->host_dispatch_ns = src->host_dispatch_ns;
    break;
  case DS_CALIB_KEY_HOST_NODE:
    dst->has_host_node = 1;
    dst->host_node_ns = src->host_node_ns;
    break;
  case DS_CALIB_KEY_HOST_DDP_GRAD:
    dst->has_host_ddp_grad = 1;
    dst->host_ddp_grad_ns = src->host_ddp_grad_ns;
    break;
  case DS_CALIB_KEY_HOST_DDP_BUCKET:
    dst->has_host_ddp_bucket = 1;
    dst->host_ddp_bucket_ns = src->host_ddp_bucket_ns;
    break;
  case DS_CALIB_KEY_HOST_DDP_BUFFER:
    dst->has_host_ddp_buffer = 1;
    dst->host_ddp_buffer_ns = src->host_ddp_buffer_ns;
    break;
  case DS_CALIB_KEY_HOST_DDP_ITER:
    dst->has_host_ddp_iter = 1;
    dst->host_ddp_iter_ns = src->host_ddp_iter_ns;
    break;
  default: break;
  }
}

/* Whether two files' gpu names are one GPU: the same words (case
 * ignored), or, by names_gpu's rule (the one the fit reads a file's name
 * with), one names the table GPU the other means ("NVIDIA H100 80GB HBM3",
 * "H100 80GB HBM3", "H100-SXM5-80GB"). Names the table does not know, or
 * no table, only as the same words. */
static int same_gpu(const char *a, const char *b, const struct ds_gpu_table *table) {
  if (strcasecmp(a, b) == 0) return 1;
  if (!table) return 0;
  const struct ds_gpu_info *ga = ds_gpu_table_by_device_name(table, a);
  const struct ds_gpu_info *gb = ds_gpu_table_by_device_name(table, b);
  return (ga && names_gpu(b, &ga->spec, table)) || (gb && names_gpu(a, &gb->spec, table));
}

/* File i's keys into the merge so far: a key an earlier file set is
 * refused at both places, the gpu unless both name the same GPU. */
static ds_status merge_file(struct ds_calib *out, struct ds_calib_sources *src,
                            const struct ds_calib *c, const int32_t *lines, int32_t i,
                            const struct ds_gpu_table *table, struct ds_err *err) {
  for (int k = 0; k < DS_CALIB_KEY_COUNT; k++) {
    if (!has_key(c, (enum ds_calib_key)k)) continue;
    int32_t j = src->file[k];
    if (j >= 0 && k == DS_CALIB_KEY_GPU) {
      if (same_gpu(out->gpu, c->gpu, table)) continue; /* the same GPU, named again */
      return ds_err_set(err, DS_EINPUT, "%s:%d: key 'gpu': \"%s\", but %s:%d names \"%s\": "
                        "files measured on two GPUs are not one machine's calibration "
                        "(give the files of the GPU you simulate)",
                        src->files[i], lines[k], c->gpu, src->files[j], src->line[k], out->gpu);
    }
    if (j >= 0)
      return ds_err_set(err, DS_EINPUT, "%s:%d: key '%s': set by %s:%d too: each key may come "
                        "from one --calib file only (remove it from one of them)",
                        src->files[i], lines[k], ds_calib_key_name((enum ds_calib_key)k),
                        src->files[j], src->line[k]);
    take_key(out, c, (enum ds_calib_key)k);
    src->file[k] = i;
    src->line[k] = lines[k];
  }
  return DS_OK;
}

ds_status ds_calib_load_files(const char *const *paths, int32_t n,
                              const struct ds_gpu_table *table, struct ds_calib *out,
                              struct ds_calib_sources *src, struct ds_err *err) {
  ds_status st = DS_OK;
  struct ds_calib *one = NULL;
  memset(out, 0, sizeof *out);
  memset(src, 0, sizeof *src);
  for (int k = 0; k < DS_CALIB_KEY_COUNT; k++) src->file[k] = -1;
  if (n < 1 || n > DS_CALIB_MAX_FILES)
    return ds_err_set(err, DS_EUSAGE, "expected 1 to %d calibration files, got %d",
                      DS_CALIB_MAX_FILES, n);
  src->n_files = n;
  for (int32_t i = 0; i < n; i++) src->files[i] = paths[i];
  if (n == 1) {
    int32_t lines[DS_CALIB_KEY_COUNT];
    DS_CHECK(load_one(paths[0], out, lines, 0, err));
    for (int k = 0; k < DS_CALIB_KEY_COUNT; k++)
      if (has_key(out, (enum ds_calib_key)k)) {
        src->file[k] = 0;
        src->line[k] = lines[k];
      }
    return DS_OK;
  }
  /* the same file twice would clash on every key: said as what it is */
  for (int32_t i = 0; i < n; i++) {
    struct stat a, b;
    for (int32_t j = 0; j < i; j++)
      if (stat(paths[i], &a) == 0 && stat(paths[j], &b) == 0 && a.st_dev == b.st_dev &&
          a.st_ino == b.st_ino)
        return ds_err_set(err, DS_EINPUT, "%s: the same file as %s, given twice", paths[i],
                          paths[j]);
  }
  one = malloc(sizeof *one); /* its table of up to 1024 entries: not the stack */
  if (!one) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    int32_t lines[DS_CALIB_KEY_COUNT];
    DS_CHECK_GOTO(load_one(paths[i], one, lines, 1, err), st, done);
    DS_CHECK_GOTO(merge_file(out, src, one, lines, i, table, err), st, done);
  }
done:
  free(one);
  if (st != DS_OK) memset(out, 0, sizeof *out);
  return st;
}

void ds_calib_sources_line(const struct ds_calib_sources *src, const char *sep, char *buf,
                           size_t cap) {
  size_t used = 0;
  if (cap == 0) return;
  buf[0] = '\0';
  for (int32_t i = 0; i < src->n_files; i++) {
    used += (size_t)snprintf(buf + (used < cap ? used : cap), used < cap ? cap - used : 0,
                             "%s%s:", i ? sep : "", src->files[i]);
    int any = 0;
    for (int k = 0; k < DS_CALIB_KEY_COUNT; k++) {
      if (src->file[k] != i) continue;
      used += (size_t)snprintf(buf + (used < cap ? used : cap), used < cap ? cap - used : 0,
                               "%s %s", any ? "," : "", ds_calib_key_name((enum ds_calib_key)k));
      any = 1;
    }
    if (!any)
      used += (size_t)snprintf(buf + (used < cap ? used : cap), used < cap ? cap - used : 0,
                               " no key of its own");
  }
  if (used >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
}

ds_status ds_calib_check_interference(const struct ds_calib *c, const char *path, int32_t sms,
                                      const char *gpu, struct ds_err *err) {
  if (!c->has_interference || sms <= 0) return DS_OK;
  int32_t b = c->interference_blocks;
  if (b >= sms)
    return ds_err_set(err, DS_EINPUT, "%s:%d: key 'interference_blocks': expected fewer "
                      "blocks than %s's %d SMs (the GEMM beside them runs on SMs - blocks), "
                      "got %d", path, c->interference_blocks_line, gpu, sms, b);
  /* ddpreal calibrate writes SMs / (SMs - blocks) (real/calibrate.cu) with
   * 6 significant digits; a hand-written file may round it to 3 (1.14 for
   * 132 / 116 = 1.1379: 0.2 %). Off by more than 1 % it is another GPU's
   * (16 blocks: 1.1739 on 108 SMs, 1.1379 on 132) or a mistake. */
  double want = (double)sms / (sms - b);
  if (fabs(c->interference_predicted / want - 1) > 0.01)
    return ds_err_set(err, DS_EINPUT, "%s:%d: key 'interference_predicted': expected %s's "
                      "SMs / (SMs - interference_blocks) = %d / (%d - %d) = %.6g (within 1 %%), "
                      "got %.6g",
                      path, c->interference_predicted_line, gpu, sms, sms, b, want,
                      c->interference_predicted);
  return DS_OK;
}

void ds_calib_apply_compute(const struct ds_calib *c, struct ds_compute_params *p) {
  if (c->has_flops_efficiency) {
    p->flops_efficiency = c->flops_efficiency;
    p->flops_efficiency_source = DS_RATE_CALIB;
  }
  if (c->has_mem_efficiency) {
    p->mem_efficiency = c->mem_efficiency;
    p->mem_efficiency_source = DS_RATE_CALIB;
  }
  if (c->has_kernel_overhead) p->kernel_overhead_ns = c->kernel_overhead_ns;
  if (c->has_fp32_math) p->fp32_uses_tf32 = c->fp32_uses_tf32;
  if (c->has_nccl_launch) p->nccl_launch_ns = c->nccl_launch_ns;
  if (c->has_host_dispatch) p->host_dispatch_ns = c->host_dispatch_ns;
  if (c->has_host_node) p->host_node_ns = c->host_node_ns;
  /* DDP's per-gradient cost measured as a whole (torch_ddp_host.py's
   * ddp-one - plain), split as the defaults are: the copy back is a
   * kernel launch, whose host cost does not grow with a host's DDP cost
   * (sim/net/topo_compute.c), so it keeps the default's 5.8 us (all of a
   * smaller measurement) and the hook takes the rest; the copy part is
   * what --grad-as-bucket-view drops */
  if (c->has_host_ddp_grad) {
    double copy = fmin(ds_topo_host_grad_copy_default_ns, c->host_ddp_grad_ns);
    p->host_grad_copy_ns = copy;
    p->host_grad_hook_ns = c->host_ddp_grad_ns - copy;
  }
  if (c->has_host_ddp_bucket) p->host_collective_ns = c->host_ddp_bucket_ns;
  if (c->has_host_ddp_buffer) p->host_buffer_ns = c->host_ddp_buffer_ns;
  if (c->has_host_ddp_iter) p->host_ddp_iter_ns = c->host_ddp_iter_ns;
  /* what the measured slowdown leaves beyond the mechanism's SMs/(SMs-blocks)
   * (sim/train/interference.h): never negative */
  if (c->has_interference)
    p->comm_interference = fmax(0.0, c->interference_slowdown / c->interference_predicted - 1);
}

void ds_calib_apply_gpu(const struct ds_calib *c, struct ds_gpu_spec *g) {
  struct ds_gpu_efficiency *e = &g->eff;
  /* Any convolution value measured here (pooled or a pass) wins over the
   * table's tiles of its math (topo.h conv_tiles), and a pooled one over the
   * table's per-pass values too (unless the file sets those as well, written
   * below): they were measured on the table's machine, the file's on this.
   * Each key's math is the one of the slot the GPU table maps it to. */
  for (int k = 0; k < DS_CALIB_EFF_KEYS; k++) {
    if (!(c->eff[k] > 0)) continue;
    const double *slot = ds_gpu_efficiency_slot(e, k);
    for (int m = 0; m < DS_GPU_MATH_COUNT; m++) {
      if (slot == &e->conv[m]) e->conv_fwd[m] = e->conv_bwd[m] = 0;
      if (slot == &e->conv[m] || slot == &e->conv_fwd[m] || slot == &e->conv_bwd[m])
        g->conv_tiles[m] = (struct ds_conv_tiles){0};
    }
  }
  for (int k = 0; k < DS_CALIB_EFF_KEYS; k++)
    if (c->eff[k] > 0)
      *ds_gpu_efficiency_slot(e, k) = *ds_gpu_efficiency_slot(&g->eff_calib, k) = c->eff[k];
}
