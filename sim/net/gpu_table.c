/*
 * GPU table reader. Every entry is validated (so a typo anywhere in the
 * table is reported, not only in the entry asked for); optional keys (tf32,
 * bf16, nvlink_bw, pcie_bw and the import facts) leave 0 where a GPU lacks
 * the feature or the table does not say, and so do the `efficiency` map's
 * keys where nothing was measured; `efficiency_proxy` marks, with a short
 * reason, the map's values that stand in for a measurement of their own.
 */
#include "sim/net/gpu_table.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/cli.h"
#include "base/config.h"
#include "sim/net/file_kinds.h"
#include "base/lookup.h"

static const char *const gpu_keys[] = {
    "name",       "arch",         "sms",     "fp32",      "tf32",   "fp16",
    "bf16",       "mem",          "mem_bw",  "nvlink_bw", "pcie_bw", "boost_mhz",
    "nvlink_gen", "nvlink_links", "pci_ids", "smi_names", "source", "efficiency",
    "compute_capability", "conv_tiles", "efficiency_proxy", NULL};

const char *const ds_gpu_efficiency_keys[] = {
    "conv_fp32",      "conv_tf32",      "conv_half",     "matmul_fp32", "matmul_tf32",
    "matmul_half",    "attention_fp32", "attention_tf32", "attention_half",
    "matmul_unaligned_half", "conv_fp32_fwd", "conv_tf32_fwd", "conv_half_fwd",
    "conv_fp32_bwd", "conv_tf32_bwd", "conv_half_bwd", "memory", NULL};

enum {
  EFF_KEY_UNALIGNED = DS_GPU_EFF_UNALIGNED,
  EFF_KEY_CONV_FWD = DS_GPU_EFF_CONV_FWD,
  EFF_KEY_CONV_BWD = DS_GPU_EFF_CONV_BWD,
  EFF_KEY_MEMORY = DS_GPU_EFF_MEMORY
};
_Static_assert(sizeof ds_gpu_efficiency_keys / sizeof *ds_gpu_efficiency_keys ==
                   DS_GPU_EFF_KEYS + 1,
               "topo.h enum ds_gpu_eff_key follows ds_gpu_efficiency_keys");

double *ds_gpu_efficiency_slot(struct ds_gpu_efficiency *e, int key) {
  if (key < 0 || key > EFF_KEY_MEMORY) return NULL;
  if (key == EFF_KEY_MEMORY) return &e->memory;
  if (key == EFF_KEY_UNALIGNED) return &e->matmul_unaligned_half;
  if (key >= EFF_KEY_CONV_BWD) return &e->conv_bwd[key - EFF_KEY_CONV_BWD];
  if (key >= EFF_KEY_CONV_FWD) return &e->conv_fwd[key - EFF_KEY_CONV_FWD];
  double *cls = key < 3 ? e->conv : key < 6 ? e->matmul : e->attention;
  return &cls[key % 3];
}

ds_status ds_gpu_peak_fraction(const struct ds_cnode *node, double *out, struct ds_err *err) {
  double v;
  DS_CHECK(ds_cnode_number(node, &v, err));
  if (!(v >= DS_GPU_EFFICIENCY_MIN && v <= 1))
    return ds_cnode_error(node, err,
                          "expected an achieved / peak fraction from %g to 1, got %g (1 %% "
                          "of peak at least; the GPU table's lowest measured is 0.125)",
                          DS_GPU_EFFICIENCY_MIN, v);
  *out = v;
  return DS_OK;
}

ds_status ds_gpu_efficiency_read(const struct ds_cnode *map, struct ds_gpu_efficiency *e,
                                 int allow_memory, struct ds_err *err) {
  DS_CHECK(ds_cmap_check_keys(map, ds_gpu_efficiency_keys, err));
  for (int k = 0; ds_gpu_efficiency_keys[k]; k++) {
    struct ds_cnode node;
    if (!ds_cmap_get(map, ds_gpu_efficiency_keys[k], &node)) continue;
    if (k == EFF_KEY_MEMORY && !allow_memory)
      return ds_cnode_error(&node, err, "memory is set by the compute section's "
                            "mem_efficiency here, not under efficiency");
    DS_CHECK(ds_gpu_peak_fraction(&node, ds_gpu_efficiency_slot(e, k), err));
  }
  return DS_OK;
}

/* A GPU entry's per-pass convolution keys come with the pooled key of their
 * math: a pass the table leaves out takes the pooled value, and so does
 * whatever asks without a pass (compute.h), so the pooled one must be there.
 * (A calibration file's may set a pass alone: the GPU table supplies the
 * pooled value: calib.h.) */
static ds_status check_conv_passes(const struct ds_cnode *map, const struct ds_gpu_efficiency *e,
                                   struct ds_err *err) {
  for (int m = 0; m < DS_GPU_MATH_COUNT; m++) {
    if (e->conv[m] > 0) continue;
    for (int k = EFF_KEY_CONV_FWD; k < EFF_KEY_MEMORY; k++) {
      struct ds_cnode node;
      if ((k - EFF_KEY_CONV_FWD) % DS_GPU_MATH_COUNT != m ||
          !ds_cmap_get(map, ds_gpu_efficiency_keys[k], &node))
        continue;
      return ds_cnode_error(&node, err, "%s needs %s, the pooled value its other pass "
                            "and pass-less uses take", ds_gpu_efficiency_keys[k],
                            ds_gpu_efficiency_keys[m]);
    }
  }
  return DS_OK;
}

static const char *const conv_tile_maths[] = {"fp32", "tf32", "half", NULL};
static const char *const conv_tile_keys[] = {"tile_m", "tile_n", "fwd", "bwd",
                                             "fwd_us", "bwd_us", NULL};

/* An optional `conv_tiles` map, {MATH: {tile_m, tile_n, fwd, bwd, fwd_us,
 * bwd_us}} with MATH fp32, tf32 or half (topo.h struct ds_conv_tiles):
 * every key required, tiles 1 to 1024 wide, fwd and bwd fractions of peak
 * in (0, 1], the fixed times 0 to 1000 us. */
static ds_status read_conv_tiles(const struct ds_cnode *entry, struct ds_gpu_spec *spec,
                                 struct ds_err *err) {
  struct ds_cnode map, math, node;
  if (!ds_cmap_get(entry, "conv_tiles", &map)) return DS_OK;
  DS_CHECK(ds_cmap_check_keys(&map, conv_tile_maths, err));
  for (int m = 0; m < DS_GPU_MATH_COUNT; m++) {
    if (!ds_cmap_get(&map, conv_tile_maths[m], &math)) continue;
    struct ds_conv_tiles *t = &spec->conv_tiles[m];
    int64_t side;
    DS_CHECK(ds_cmap_check_keys(&math, conv_tile_keys, err));
    DS_CHECK(ds_cmap_require(&math, "tile_m", "a tile's rows", &node, err));
    DS_CHECK(ds_cnode_int_range(&node, 1, 1024, &side, err));
    t->tile_m = (int32_t)side;
    DS_CHECK(ds_cmap_require(&math, "tile_n", "a tile's columns", &node, err));
    DS_CHECK(ds_cnode_int_range(&node, 1, 1024, &side, err));
    t->tile_n = (int32_t)side;
    for (int pass = 0; pass < 2; pass++) {
      double v;
      DS_CHECK(ds_cmap_require(&math, conv_tile_keys[2 + pass], "an achieved / peak fraction",
                               &node, err));
      DS_CHECK(ds_gpu_peak_fraction(&node, &t->eff[pass], err));
      DS_CHECK(ds_cmap_require(&math, conv_tile_keys[4 + pass], "a time in us", &node, err));
      DS_CHECK(ds_cnode_number(&node, &v, err));
      if (!(v >= 0 && v <= 1000))
        return ds_cnode_error(&node, err, "expected microseconds in [0, 1000], got %g", v);
      t->call_ns[pass] = v * 1e3;
    }
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

static ds_status read_optional_bw(const struct ds_cnode *entry, const char *key,
                                  double *out, struct ds_err *err) {
  struct ds_cnode node;
  *out = 0;
  if (!ds_cmap_get(entry, key, &node)) return DS_OK;
  return ds_cnode_bw(&node, out, err);
}

/* Per-link NVLink bandwidths (nvlink_bw over nvlink_links) below this are
 * refused: every NVLink generation runs 20 to 50 GB/s per link and
 * direction (the table's own entries), and NCCL's view of a link counts
 * the topology's bandwidth in such links (nccl_model.c ds_nccl_link_bw:
 * bw x NCCL's rate / the link's), so a tiny one turned a topology's
 * 300 GB/s into channel counts past int32_t. At 1 GB/s, with bandwidths
 * at most 1e15 B/s (base/config.c), counts stay below 1e8. */
#define MIN_NVLINK_LINK_BW (1e9)

/* A GPU's memory is at least 1 MiB: a size of 1 byte was read (a fuzzing
 * run). The table's smallest is 11264 MiB, but a test table's GPU holds
 * 30 MB to put tiny-model's peak exactly at its memory
 * (cli::the_memory_warning_fires_exactly_above_the_gpus_memory), so the
 * bound refuses what no tensor fits in, not what no card is. */
#define MIN_GPU_MEM_BYTES (1048576.0)

static ds_status check_nvlink_link_bw(const struct ds_cnode *entry, double link_bw,
                                      int32_t links, struct ds_err *err) {
  struct ds_cnode node;
  if (link_bw >= MIN_NVLINK_LINK_BW) return DS_OK;
  DS_CHECK(ds_cmap_require(entry, "nvlink_bw", "a bandwidth", &node, err));
  return ds_cnode_error(&node, err,
                        "expected at least 1 GBps per NVLink link: nvlink_bw over "
                        "nvlink_links (%d) is %g Bps",
                        links, link_bw);
}

static ds_status read_optional_int(const struct ds_cnode *entry, const char *key,
                                   int64_t lo, int64_t hi, int32_t *out,
                                   struct ds_err *err) {
  struct ds_cnode node;
  int64_t v;
  *out = 0;
  if (!ds_cmap_get(entry, key, &node)) return DS_OK;
  DS_CHECK(ds_cnode_int_range(&node, lo, hi, &v, err));
  *out = (int32_t)v;
  return DS_OK;
}

static ds_status read_string(const struct ds_cnode *node, char *out, size_t cap,
                             const char *what, struct ds_err *err) {
  const char *s;
  DS_CHECK(ds_cnode_string(node, &s, err));
  if (*s == '\0' || strlen(s) >= cap)
    return ds_cnode_error(node, err, "expected %s of 1 to %zu characters", what, cap - 1);
  strcpy(out, s);
  return DS_OK;
}

/* The compute capabilities each architecture family owns: the one
 * statement of this rule (tools/gen_gpus.py's FAMILY_CC points here). The
 * CUDA C++ Programming Guide, "Compute Capability": devices with the same
 * major revision number share a core architecture (7 Volta, 8 Ampere, 9
 * Hopper, 10 and 12 Blackwell; 11.0 is Blackwell's Thor), Turing's 7.5 is
 * "an incremental update based on the Volta architecture" and Ada's 8.9
 * one based on Ampere. So a family owns a range of 10 x major + minor:
 * Volta 7.0-7.4 (7.0, 7.2 exist), Turing 7.5-7.9, Ampere 8.0-8.8 (8.0,
 * 8.6, 8.7), Ada 8.9, Hopper 9.0-9.9, Blackwell 10.0-12.9 (10.0, 10.3,
 * 11.0, 12.0, 12.1). An entry whose arch is one of these and whose
 * compute_capability is outside its range is refused. */
static const struct {
  const char *family;
  int32_t lo, hi;
} cc_families[] = {{"Volta", 70, 74},  {"Turing", 75, 79}, {"Ampere", 80, 88},
                   {"Ada", 89, 89},    {"Hopper", 90, 99}, {"Blackwell", 100, 129}};

static int cc_family_by_name(const char *arch) {
  for (size_t i = 0; i < sizeof cc_families / sizeof *cc_families; i++)
    if (strcmp(arch, cc_families[i].family) == 0) return (int)i;
  return -1;
}

static int cc_family_of(int32_t cc) {
  for (size_t i = 0; i < sizeof cc_families / sizeof *cc_families; i++)
    if (cc >= cc_families[i].lo && cc <= cc_families[i].hi) return (int)i;
  return -1;
}

/* An optional compute_capability "MAJOR.MINOR" (1 or 2 digits, then 1:
 * "8.9", "12.0") into 10 x major + minor; 0 when absent. It must lie in
 * the range of arch's family (cc_families) where arch names one. */
static ds_status read_compute_capability(const struct ds_cnode *entry, const char *arch,
                                         int32_t *out, struct ds_err *err) {
  struct ds_cnode node;
  const char *s;
  *out = 0;
  if (!ds_cmap_get(entry, "compute_capability", &node)) return DS_OK;
  DS_CHECK(ds_cnode_string(&node, &s, err));
  size_t n = strlen(s);
  int ok = (n == 3 || n == 4) && s[n - 2] == '.' && isdigit((unsigned char)s[n - 1]) &&
           isdigit((unsigned char)s[0]) && s[0] != '0' &&
           (n == 3 || isdigit((unsigned char)s[1]));
  if (!ok)
    return ds_cnode_error(&node, err, "expected a compute capability MAJOR.MINOR like "
                          "\"8.9\" or \"12.0\", got \"%s\"", s);
  int major = n == 3 ? s[0] - '0' : (s[0] - '0') * 10 + (s[1] - '0');
  *out = major * 10 + (s[n - 1] - '0');
  int f = cc_family_by_name(arch);
  if (f >= 0 && (*out < cc_families[f].lo || *out > cc_families[f].hi))
    return ds_cnode_error(&node, err,
                          "compute capability %s is not %s's: expected %d.%d to %d.%d "
                          "(the CUDA programming guide's families, sim/net/gpu_table.c)",
                          s, arch, cc_families[f].lo / 10, cc_families[f].lo % 10,
                          cc_families[f].hi / 10, cc_families[f].hi % 10);
  return DS_OK;
}

/* Maximum number of resident threads per SM, per compute capability: the
 * CUDA C++ Programming Guide's table of technical specifications per
 * compute capability (the limit cudaDeviceProp's maxThreadsPerMultiProcessor
 * reports; pytorch/pytorch#45889 cites that table for 8.6's 1536; Turing's
 * 1024: the Turing Tuning Guide, 32 warps an SM). This is the project's one
 * list of these numbers (gpu_table.h, cast_reduce and norm point here;
 * docs/topologies.md repeats it for users). */
static const struct {
  int32_t compute_capability, threads;
} sm_threads_by_cc[] = {{70, 2048}, {75, 1024}, {80, 2048},  {86, 1536},
                        {89, 1536}, {90, 2048}, {100, 2048}, {120, 1536}};

/* A capability the table lacks takes its family's nearest listed one at or
 * below it (12.1 -> 12.0's 1536, 8.7 -> 8.6's 1536, 10.3 and 11.0 ->
 * 10.0's 2048, 7.2 -> 7.0's 2048); add a row when the guide's table gives
 * the capability its own. An entry without compute_capability takes its
 * family's value where all the family's listed capabilities agree (Volta,
 * Turing, Ada, Hopper; Ampere's 8.0 and 8.6 and Blackwell's 10.0 and 12.0
 * do not). */
int32_t ds_gpu_max_threads_per_sm(const struct ds_gpu_spec *g) {
  const size_t n = sizeof sm_threads_by_cc / sizeof *sm_threads_by_cc;
  int32_t cc = g->compute_capability, threads = 0;
  if (cc > 0) {
    int f = cc_family_of(cc);
    int32_t best = 0;
    for (size_t i = 0; i < n; i++) {
      int32_t listed = sm_threads_by_cc[i].compute_capability;
      if (listed == cc) return sm_threads_by_cc[i].threads;
      if (f >= 0 && listed >= cc_families[f].lo && listed < cc && listed > best) {
        best = listed;
        threads = sm_threads_by_cc[i].threads;
      }
    }
    return threads;
  }
  int f = cc_family_by_name(g->arch);
  if (f < 0) return 0;
  for (size_t i = 0; i < n; i++) {
    int32_t listed = sm_threads_by_cc[i].compute_capability;
    if (listed < cc_families[f].lo || listed > cc_families[f].hi) continue;
    if (threads && threads != sm_threads_by_cc[i].threads) return 0;
    threads = sm_threads_by_cc[i].threads;
  }
  return threads;
}

/* A sequence of strings (pci_ids, smi_names) into out[DS_GPU_IDS_MAX][cap]. */
static ds_status read_strings(const struct ds_cnode *entry, const char *key,
                              char *out, size_t cap, int32_t *n_out, int pci,
                              struct ds_err *err) {
  struct ds_cnode seq, item;
  size_t n;
  *n_out = 0;
  if (!ds_cmap_get(entry, key, &seq)) return DS_OK;
  if (!ds_cnode_is_seq(&seq))
    return ds_cnode_error(&seq, err, "expected a list of %s",
                          pci ? "PCI device ids (\"0x20b2\")" : "nvidia-smi names");
  DS_CHECK(ds_cseq_len(&seq, &n, err));
  if (n > DS_GPU_IDS_MAX)
    return ds_cnode_error(&seq, err, "expected at most %d entries", DS_GPU_IDS_MAX);
  for (size_t i = 0; i < n; i++) {
    char *dst = out + i * cap;
    DS_CHECK(ds_cseq_at(&seq, i, &item, err));
    DS_CHECK(read_string(&item, dst, cap, pci ? "a PCI device id" : "a name", err));
    if (pci) {
      int ok = strlen(dst) == 6 && dst[0] == '0' && (dst[1] == 'x' || dst[1] == 'X');
      for (int k = 2; ok && k < 6; k++) ok = isxdigit((unsigned char)dst[k]);
      if (!ok)
        return ds_cnode_error(&item, err, "expected a PCI device id of 4 hex digits (\"0x20b2\")");
      for (char *c = dst; *c; c++) *c = (char)tolower((unsigned char)*c);
    }
  }
  *n_out = (int32_t)n;
  return DS_OK;
}

/* An optional `efficiency_proxy` map, {KEY: "reason"}: the entry's
 * efficiency values that are another GPU's, math's or operation's
 * measurement standing in for one of their own (tools/gen_gpus.py says
 * which and why). Each KEY needs a value in the entry's efficiency map; the
 * reason, which the run's compute-rates line prints (and its JSON quotes),
 * is 1 to 63 printable characters without quotes or backslashes. */
static ds_status read_efficiency_proxy(const struct ds_cnode *entry, struct ds_gpu_spec *spec,
                                       struct ds_err *err) {
  struct ds_cnode map, node;
  if (!ds_cmap_get(entry, "efficiency_proxy", &map)) return DS_OK;
  if (!ds_cnode_is_map(&map))
    return ds_cnode_error(&map, err, "expected a map of efficiency keys to a short reason, "
                          "e.g. {conv_tf32: \"the f16 convolution's fraction\"}");
  DS_CHECK(ds_cmap_check_keys(&map, ds_gpu_efficiency_keys, err));
  for (int k = 0; ds_gpu_efficiency_keys[k]; k++) {
    if (!ds_cmap_get(&map, ds_gpu_efficiency_keys[k], &node)) continue;
    if (!(*ds_gpu_efficiency_slot(&spec->eff, k) > 0))
      return ds_cnode_error(&node, err, "a stand-in for %s, which the entry's efficiency map "
                            "does not set", ds_gpu_efficiency_keys[k]);
    char *why = spec->eff_proxy[k];
    DS_CHECK(read_string(&node, why, sizeof spec->eff_proxy[k], "a short reason", err));
    for (const char *c = why; *c; c++)
      if (!isprint((unsigned char)*c) || *c == '"' || *c == '\\')
        return ds_cnode_error(&node, err, "expected a reason of printable characters without "
                              "quotes or backslashes (it is printed in the run's summary)");
  }
  return DS_OK;
}

static ds_status read_entry(const struct ds_cnode *entry, struct ds_gpu_info *g,
                            struct ds_err *err) {
  struct ds_cnode node;
  struct ds_gpu_spec *spec = &g->spec;
  int64_t sms;
  memset(g, 0, sizeof *g);
  g->line = ds_cnode_line(entry);
  DS_CHECK(ds_cmap_check_keys(entry, gpu_keys, err));
  DS_CHECK(ds_cmap_require(entry, "name", "a GPU name", &node, err));
  DS_CHECK(read_string(&node, spec->name, sizeof spec->name, "a name", err));
  if (ds_cmap_get(entry, "arch", &node)) {
    DS_CHECK(read_string(&node, g->arch, sizeof g->arch, "an architecture", err));
    /* A misspelt family ("Lovelace", "ada") used to load and silently cost
     * the GPU NCCL's model: every all-reduce then ran the plain ring (8x L40S,
     * ResNet-50: communication 5.9 instead of 10.1 ms). No arch at all is the
     * way to say "no NCCL row" (docs/topologies.md, CPU ranks). */
    if (cc_family_by_name(g->arch) < 0)
      return ds_cnode_error(&node, err,
                            "expected an architecture family: Volta, Turing, Ampere, Ada, "
                            "Hopper or Blackwell (as spelt here; NCCL's model picks its tuning "
                            "row by it), got \"%s\"; leave arch out for a device NCCL's "
                            "model has no row for",
                            g->arch);
  }
  /* the spec carries it too: NCCL's model picks its tuning row by it */
  snprintf(spec->arch, sizeof spec->arch, "%s", g->arch);
  DS_CHECK(read_compute_capability(entry, g->arch, &spec->compute_capability, err));
  if (ds_cmap_get(entry, "source", &node))
    DS_CHECK(read_string(&node, g->source, sizeof g->source, "a source", err));
  DS_CHECK(ds_cmap_require(entry, "sms", "an SM count", &node, err));
  DS_CHECK(ds_cnode_int_range(&node, 1, 100000, &sms, err));
  spec->sms = (int32_t)sms;
  DS_CHECK(ds_cmap_require(entry, "fp32", "a compute rate", &node, err));
  DS_CHECK(ds_cnode_flops(&node, &spec->fp32_flops_per_s, err));
  DS_CHECK(ds_cmap_require(entry, "fp16", "a compute rate", &node, err));
  DS_CHECK(ds_cnode_flops(&node, &spec->fp16_flops_per_s, err));
  DS_CHECK(read_optional_flops(entry, "tf32", &spec->tf32_flops_per_s, err));
  DS_CHECK(read_optional_flops(entry, "bf16", &spec->bf16_flops_per_s, err));
  DS_CHECK(ds_cmap_require(entry, "mem", "a size", &node, err));
  DS_CHECK(ds_cnode_bytes(&node, &spec->mem_bytes, err));
  if (spec->mem_bytes < MIN_GPU_MEM_BYTES)
    return ds_cnode_error(&node, err, "expected at least 1MiB of GPU memory, got %g bytes",
                          spec->mem_bytes);
  DS_CHECK(ds_cmap_require(entry, "mem_bw", "a bandwidth", &node, err));
  DS_CHECK(ds_cnode_bw(&node, &spec->mem_bw_bytes_per_s, err));
  if (ds_cmap_get(entry, "efficiency", &node)) {
    DS_CHECK(ds_gpu_efficiency_read(&node, &spec->eff, 1, err));
    DS_CHECK(check_conv_passes(&node, &spec->eff, err));
  }
  DS_CHECK(read_efficiency_proxy(entry, spec, err));
  DS_CHECK(read_conv_tiles(entry, spec, err));
  DS_CHECK(read_optional_bw(entry, "nvlink_bw", &g->nvlink_bw, err));
  DS_CHECK(read_optional_bw(entry, "pcie_bw", &g->pcie_bw, err));
  DS_CHECK(read_optional_int(entry, "boost_mhz", 1, 100000, &g->boost_mhz, err));
  spec->boost_mhz = g->boost_mhz; /* compute.h: kernels bound by a per-SM rate */
  DS_CHECK(read_optional_int(entry, "nvlink_gen", 0, 99, &g->nvlink_gen, err));
  DS_CHECK(read_optional_int(entry, "nvlink_links", 1, 1024, &g->nvlink_links, err));
  if ((g->nvlink_gen > 0 || g->nvlink_links > 0) && g->nvlink_bw <= 0) {
    DS_CHECK(ds_cmap_require(entry, "nvlink_gen", "", &node, err));
    return ds_cnode_error(&node, err, "expected nvlink_bw with nvlink_gen and nvlink_links");
  }
  if (g->nvlink_links > 0) {
    spec->nvlink_link_bw_bytes_per_s = g->nvlink_bw / g->nvlink_links;
    DS_CHECK(check_nvlink_link_bw(entry, spec->nvlink_link_bw_bytes_per_s, g->nvlink_links, err));
  }
  DS_CHECK(read_strings(entry, "pci_ids", &g->pci_ids[0][0], sizeof g->pci_ids[0],
                        &g->n_pci_ids, 1, err));
  DS_CHECK(read_strings(entry, "smi_names", &g->smi_names[0][0], sizeof g->smi_names[0],
                        &g->n_smi_names, 0, err));
  return DS_OK;
}

static struct ds_gpu_info *find_mut(struct ds_gpu_table *t, const char *name) {
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->gpus[i].spec.name, name) == 0) return &t->gpus[i];
  return NULL;
}

/* Adds path's entries to t: a name already in t (from an earlier file)
 * is replaced; a name twice in one file is an error. */
static ds_status merge_file(const char *path, const char *shown, struct ds_gpu_table *t,
                            struct ds_err *err) {
  struct ds_config *cfg = NULL;
  struct ds_cnode root, gpus, entry;
  size_t n = 0, first_new = t->n;
  ds_status st;
  DS_CHECK_GOTO(ds_file_kind_open(path, DS_FILE_GPU_TABLE, &cfg, &root, err), st, out);
  DS_CHECK_GOTO(ds_cmap_require(&root, "gpus", "a sequence of GPUs", &gpus, err), st, out);
  DS_CHECK_GOTO(ds_cseq_len(&gpus, &n, err), st, out);
  struct ds_gpu_info *grown = realloc(t->gpus, (t->n + n + 1) * sizeof *grown);
  if (!grown) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
    goto out;
  }
  t->gpus = grown;
  for (size_t i = 0; i < n; i++) {
    struct ds_gpu_info g;
    DS_CHECK_GOTO(ds_cseq_at(&gpus, i, &entry, err), st, out);
    DS_CHECK_GOTO(read_entry(&entry, &g, err), st, out);
    snprintf(g.table, sizeof g.table, "%s", shown);
    struct ds_gpu_info *old = find_mut(t, g.spec.name);
    if (old && old >= t->gpus + first_new) {
      st = ds_cnode_error(&entry, err, "GPU '%s' is listed twice (first at line %d)",
                          g.spec.name, old->line);
      goto out;
    }
    if (old)
      *old = g;
    else
      t->gpus[t->n++] = g;
  }
out:
  ds_config_free(cfg);
  return st;
}

/* How entries of the shipped table name their file (comments of imports). */
#define SHIPPED_NAME "topologies/gpus.yaml"

static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return strcmp(a, b) == 0;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

ds_status ds_gpu_table_load(const char *path, struct ds_gpu_table *out,
                            struct ds_err *err) {
  char shipped[4096];
  struct ds_err ignored;
  *out = (struct ds_gpu_table){0};
  ds_status st = DS_OK;
  /* Without a shipped table (an unusual install) the user's file is the
   * whole table, as before tables merged. */
  int have_shipped = ds_lookup_shipped_gpu_table(shipped, sizeof shipped, &ignored) == DS_OK;
  int is_shipped = have_shipped && same_file(shipped, path);
  if (have_shipped && !is_shipped) st = merge_file(shipped, SHIPPED_NAME, out, err);
  if (st == DS_OK) st = merge_file(path, is_shipped ? SHIPPED_NAME : path, out, err);
  if (st != DS_OK) ds_gpu_table_release(out);
  return st;
}

void ds_gpu_table_release(struct ds_gpu_table *t) {
  free(t->gpus);
  *t = (struct ds_gpu_table){0};
}

const struct ds_gpu_info *ds_gpu_table_find(const struct ds_gpu_table *t,
                                            const char *name) {
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->gpus[i].spec.name, name) == 0) return &t->gpus[i];
  return NULL;
}

const struct ds_gpu_info *ds_gpu_table_by_pci_id(const struct ds_gpu_table *t,
                                                 const char *pci_id) {
  for (size_t i = 0; i < t->n; i++)
    for (int32_t k = 0; k < t->gpus[i].n_pci_ids; k++)
      if (strcasecmp(t->gpus[i].pci_ids[k], pci_id) == 0) return &t->gpus[i];
  return NULL;
}

const struct ds_gpu_info *ds_gpu_table_by_smi_name(const struct ds_gpu_table *t,
                                                   const char *smi_name) {
  for (size_t i = 0; i < t->n; i++)
    for (int32_t k = 0; k < t->gpus[i].n_smi_names; k++)
      if (strcasecmp(t->gpus[i].smi_names[k], smi_name) == 0) return &t->gpus[i];
  return NULL;
}

void ds_gpu_table_names(const struct ds_gpu_table *t, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < t->n; i++) {
    const char *name = t->gpus[i].spec.name;
    if (used + strlen(name) + 8 >= cap) {
      snprintf(buf + used, cap - used, ", ...");
      return;
    }
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", name);
  }
}

/* Whether smi[0..len) is only the vendor's and brand words nvidia-smi puts
 * before a model ("NVIDIA", "NVIDIA GeForce", "Tesla"), each followed by
 * its space: what users leave out, unlike a model's own words ("H100",
 * "RTX"), without which "HBM3" or "4090" would name a GPU. */
static int only_vendor_words(const char *smi, size_t len) {
  static const char *const vendor_words[] = {"NVIDIA", "GeForce", "Tesla", "Quadro"};
  size_t at = 0;
  while (at < len) {
    size_t word = strcspn(smi + at, " ");
    int known = 0;
    for (size_t v = 0; v < sizeof vendor_words / sizeof *vendor_words; v++)
      if (strlen(vendor_words[v]) == word && strncasecmp(smi + at, vendor_words[v], word) == 0)
        known = 1;
    if (!known || at + word >= len || smi[at + word] != ' ') return 0;
    at += word + 1;
  }
  return 1;
}

/* The GPU one of whose nvidia-smi names is name after vendor words alone,
 * case ignored: the name as users write it ("H100 PCIe", "RTX 4090" for
 * "NVIDIA H100 PCIe", "NVIDIA GeForce RTX 4090"); NULL for none, and for a
 * name that several GPUs' names end with, where naming one would be a
 * guess. */
static const struct ds_gpu_info *by_smi_name_tail(const struct ds_gpu_table *t,
                                                  const char *name) {
  size_t n = strlen(name);
  const struct ds_gpu_info *found = NULL;
  if (n == 0) return NULL;
  for (size_t i = 0; i < t->n; i++)
    for (int32_t k = 0; k < t->gpus[i].n_smi_names; k++) {
      const char *smi = t->gpus[i].smi_names[k];
      size_t m = strlen(smi);
      if (m > n && only_vendor_words(smi, m - n) && strcasecmp(smi + m - n, name) == 0) {
        if (found && found != &t->gpus[i]) return NULL;
        found = &t->gpus[i];
      }
    }
  return found;
}

const struct ds_gpu_info *ds_gpu_table_by_device_name(const struct ds_gpu_table *t,
                                                      const char *name) {
  const struct ds_gpu_info *g = ds_gpu_table_find(t, name);
  if (!g) g = ds_gpu_table_by_smi_name(t, name);
  if (!g) g = by_smi_name_tail(t, name);
  return g;
}

void ds_gpu_table_suggest(const struct ds_gpu_table *t, const char *name, char *buf,
                          size_t cap) {
  buf[0] = '\0';
  const char *names[257];
  size_t k = 0;
  for (size_t i = 0; i < t->n && k < 256; i++) names[k++] = t->gpus[i].spec.name;
  names[k] = NULL;
  /* the names the word begins first ("h100": the SXM and PCIe cards),
   * which covers an exact name in another case too; then nvidia-smi's
   * name for a card, whole or without its vendor words; then the names
   * holding it, or a typo's nearest */
  char near[192];
  enum ds_cli_suggest_kind kind = ds_cli_suggest(name, names, near, sizeof near);
  /* name is no table name here (ds_gpu_table_lookup's miss), so this
   * finds nvidia-smi's name, whole or without its vendor words */
  const struct ds_gpu_info *smi = ds_gpu_table_by_device_name(t, name);
  if (kind != DS_CLI_SUGGEST_BEGINS && smi)
    snprintf(buf, cap, "did you mean %s, nvidia-smi's name for it? ", smi->spec.name);
  else if (kind != DS_CLI_SUGGEST_NONE &&
           (size_t)snprintf(buf, cap, "did you mean %s? ", near) >= cap)
    buf[0] = '\0';
}

ds_status ds_gpu_table_lookup(const char *path, const char *gpu_name,
                              struct ds_gpu_spec *out, struct ds_err *err) {
  struct ds_gpu_table t;
  DS_CHECK(ds_gpu_table_load(path, &t, err));
  const struct ds_gpu_info *g = ds_gpu_table_find(&t, gpu_name);
  ds_status st = DS_OK;
  if (g) {
    *out = g->spec;
  } else {
    char known[768], hint[256];
    ds_gpu_table_names(&t, known, sizeof known);
    ds_gpu_table_suggest(&t, gpu_name, hint, sizeof hint);
    st = ds_err_set(err, DS_EINPUT, "%s: unknown GPU '%s' (%sknown: %s)", path, gpu_name,
                    hint, known);
  }
  ds_gpu_table_release(&t);
  return st;
}
