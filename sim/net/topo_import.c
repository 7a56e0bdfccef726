/*
 * `ddpsim topo import`: building the per-file machines and writing them as
 * a topology YAML (see topo_import.h).
 *
 * Shape: when every GPU's only NVLink goes into the NVSwitches, all with the
 * same count, the node is the `nvswitch` template (which keeps NVLS,
 * docs/topologies.md); otherwise an explicit device and link list, which
 * keeps the PCIe tree, NVLink pairs and CPU sockets as read. Across nodes,
 * the template case gets the `ib` template, the explicit case one fabric
 * switch that every NIC joins.
 *
 * Latencies are not in either input; they are the shipped files' (see the
 * comments of dgx-a100.yaml, 4gpu.yaml, pcie-8gpu.yaml, 2node-ib.yaml: NCCL's
 * Ring/Simple per-step latencies of src/graph/tuning.cc v2.30.7 split over
 * the links a hop crosses).
 */
#include "sim/net/topo_import.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/textout.h"
#include "sim/net/import_nccl_xml.h"
#include "sim/net/import_smi.h"

#define IMPORT_BYTES_MAX (16 << 20)
#define IMPORT_DEVS_MAX 4096

#define LAT_NVSWITCH "1.7us" /* dgx-a100.yaml: 3.4us NVLink step over 2 links */
#define LAT_NVLINK "3.4us"   /* 4gpu.yaml: NCCL's NVLink step, one link */
#define LAT_PCIE "1.5us"     /* pcie-8gpu.yaml: between NCCL's 5.7us PCI step over 2 and 4 links */
#define LAT_NIC "6us"        /* 2node-ib.yaml: NCCL's 14us network step = 2 x 1us + 2 x 6us */
/* 2node-ib.yaml: the GPU->NIC 1us of that 14us sum. The split of the sum
 * between LAT_NIC and LAT_GPU_NIC is an assumption (NCCL has one figure for
 * the whole network step); a route's latency is the sum of its links', so
 * it reaches an output only where a route crosses more GPU-NIC links than
 * NIC links, as behind a PCIe switch (2node-ib.yaml says which). */
#define LAT_GPU_NIC "1us"

ds_status ds_import_add_dev(struct ds_import_node *n, enum ds_import_dev_kind kind,
                            const char *label, int line, int32_t *index,
                            struct ds_err *err) {
  if (n->n_devs == IMPORT_DEVS_MAX)
    return ds_err_set(err, DS_EINPUT, "%s:%d: expected at most %d devices", n->file, line,
                      IMPORT_DEVS_MAX);
  if (n->n_devs == n->cap_devs) {
    int32_t cap = n->cap_devs ? 2 * n->cap_devs : 32;
    struct ds_import_dev *d = realloc(n->devs, (size_t)cap * sizeof *d);
    if (!d) return ds_err_set(err, DS_ENOMEM, "out of memory");
    n->devs = d;
    n->cap_devs = cap;
  }
  struct ds_import_dev *d = &n->devs[n->n_devs];
  memset(d, 0, sizeof *d);
  d->kind = kind;
  snprintf(d->label, sizeof d->label, "%s", label);
  d->line = line;
  d->order = -1;
  *index = n->n_devs++;
  return DS_OK;
}

ds_status ds_import_add_link(struct ds_import_node *n, int32_t a, int32_t b,
                             enum ds_import_link_kind kind, double bw, int32_t count,
                             int line, const char *why, struct ds_err *err) {
  if (n->n_links == 4 * IMPORT_DEVS_MAX)
    return ds_err_set(err, DS_EINPUT, "%s:%d: expected at most %d links", n->file, line,
                      4 * IMPORT_DEVS_MAX);
  if (n->n_links == n->cap_links) {
    int32_t cap = n->cap_links ? 2 * n->cap_links : 64;
    struct ds_import_link *l = realloc(n->links, (size_t)cap * sizeof *l);
    if (!l) return ds_err_set(err, DS_ENOMEM, "out of memory");
    n->links = l;
    n->cap_links = cap;
  }
  n->links[n->n_links++] = (struct ds_import_link){
      .a = a, .b = b, .kind = kind, .bw = bw, .count = count, .line = line};
  snprintf(n->links[n->n_links - 1].why, sizeof n->links[0].why, "%s", why);
  return DS_OK;
}

void ds_import_note(struct ds_import_node *n, const char *fmt, ...) {
  if (n->n_notes == (int32_t)(sizeof n->notes / sizeof n->notes[0])) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(n->notes[n->n_notes++], sizeof n->notes[0], fmt, ap);
  va_end(ap);
}

void ds_import_node_release(struct ds_import_node *n) {
  free(n->devs);
  free(n->links);
  n->devs = NULL;
  n->links = NULL;
  n->n_devs = n->n_links = n->cap_devs = n->cap_links = 0;
}

double ds_import_nvlink_link_bw(const struct ds_gpu_info *g) {
  if (g->nvlink_bw <= 0 || g->nvlink_links <= 0) return 0;
  return g->nvlink_bw / g->nvlink_links;
}

ds_status ds_import_read(const char *path, const struct ds_gpu_table *table,
                         const struct ds_gpu_info *forced_gpu,
                         struct ds_import_node *out, struct ds_err *err) {
  memset(out, 0, sizeof *out);
  out->file = path;
  struct stat sb;
  if (stat(path, &sb) != 0)
    return ds_err_set(err, DS_EUSAGE, "%s: cannot read: %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode))
    return ds_err_set(err, DS_EUSAGE, "%s: cannot read: not a regular file", path);
  if (sb.st_size > IMPORT_BYTES_MAX)
    return ds_err_set(err, DS_EINPUT, "%s: expected at most %d bytes, got %lld", path,
                      IMPORT_BYTES_MAX, (long long)sb.st_size);
  FILE *fp = fopen(path, "rb");
  if (!fp) return ds_err_set(err, DS_EUSAGE, "%s: cannot open", path);
  char *text = malloc((size_t)sb.st_size + 1);
  size_t len = text ? fread(text, 1, (size_t)sb.st_size, fp) : 0;
  fclose(fp);
  if (!text) return ds_err_set(err, DS_ENOMEM, "out of memory");
  text[len] = '\0';
  ds_status st;
  if (memchr(text, '\0', len)) {
    st = ds_err_set(err, DS_EINPUT, "%s:1: expected a text file (an NCCL topology XML or "
                    "`nvidia-smi topo -m`), found a NUL byte", path);
  } else {
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) i++;
    if (i < len && text[i] == '<')
      st = ds_import_nccl_xml(path, text, len, table, forced_gpu, out, err);
    else
      st = ds_import_smi(path, text, table, forced_gpu, out, err);
  }
  free(text);
  if (st != DS_OK) ds_import_node_release(out);
  return st;
}

/* ---- writing ---- */

static const char *kind_name(enum ds_import_dev_kind k) {
  switch (k) {
    case DS_IMPORT_GPU: return "gpu";
    case DS_IMPORT_CPU: return "cpu";
    case DS_IMPORT_NIC: return "nic";
    default: return "switch";
  }
}

static const char *prefix(enum ds_import_dev_kind k) {
  switch (k) {
    case DS_IMPORT_GPU: return "gpu";
    case DS_IMPORT_CPU: return "cpu";
    case DS_IMPORT_NIC: return "nic";
    case DS_IMPORT_NVSWITCH: return "nvswitch";
    default: return "pcisw";
  }
}

static int32_t count_kind(const struct ds_import_node *n, enum ds_import_dev_kind k) {
  int32_t c = 0;
  for (int32_t i = 0; i < n->n_devs; i++) c += n->devs[i].kind == k;
  return c;
}

/* Per-direction NVSwitch bandwidth of every GPU when the node is the
 * nvswitch template's shape, else 0. */
static double nvswitch_shape(const struct ds_import_node *n, int32_t *count) {
  double bw = 0;
  for (int32_t g = 0; g < n->n_devs; g++) {
    if (n->devs[g].kind != DS_IMPORT_GPU) continue;
    int found = 0;
    for (int32_t l = 0; l < n->n_links; l++) {
      const struct ds_import_link *k = &n->links[l];
      if (k->kind != DS_IMPORT_NVLINK || (k->a != g && k->b != g)) continue;
      int32_t other = k->a == g ? k->b : k->a;
      if (n->devs[other].kind != DS_IMPORT_NVSWITCH || found) return 0;
      if (bw > 0 && k->bw != bw) return 0;
      bw = k->bw;
      *count = k->count;
      found = 1;
    }
    if (!found) return 0;
  }
  return bw;
}

/* Device names, per node: GPUs gpu0.. in CUDA device order, the others in
 * file order by kind. */
static void name_devs(const struct ds_import_node *n, int32_t node, int multi, char (*names)[48],
                      int32_t *gpu_order) {
  int32_t counter[5] = {0};
  int32_t n_gpus = 0;
  for (int32_t i = 0; i < n->n_devs; i++)
    if (n->devs[i].kind == DS_IMPORT_GPU) gpu_order[n_gpus++] = i;
  /* stable insertion sort by CUDA device index (file order without one) */
  for (int32_t i = 1; i < n_gpus; i++) {
    int32_t v = gpu_order[i], j = i;
    while (j > 0 && n->devs[gpu_order[j - 1]].order > n->devs[v].order) {
      gpu_order[j] = gpu_order[j - 1];
      j--;
    }
    gpu_order[j] = v;
  }
  for (int32_t i = 0; i < n_gpus; i++)
    snprintf(names[gpu_order[i]], 48, "%sgpu%d", multi ? "" : "", i);
  for (int32_t i = 0; i < n->n_devs; i++)
    if (n->devs[i].kind != DS_IMPORT_GPU)
      snprintf(names[i], 48, "%s%d", prefix(n->devs[i].kind), counter[n->devs[i].kind]++);
  if (multi)
    for (int32_t i = 0; i < n->n_devs; i++) {
      char tmp[48];
      snprintf(tmp, sizeof tmp, "n%d_%s", node, names[i]);
      memcpy(names[i], tmp, sizeof tmp);
    }
}

static const char *lat_of(const struct ds_import_node *n, const struct ds_import_link *l) {
  if (l->kind != DS_IMPORT_NVLINK) return LAT_PCIE;
  if (n->devs[l->a].kind == DS_IMPORT_NVSWITCH || n->devs[l->b].kind == DS_IMPORT_NVSWITCH)
    return LAT_NVSWITCH;
  return LAT_NVLINK;
}

static const char *link_kind(enum ds_import_link_kind k) {
  return k == DS_IMPORT_NVLINK ? "nvlink" : k == DS_IMPORT_QPI ? "qpi" : "pcie";
}

struct cluster {
  int32_t nodes, nics;
  double nic_bw, gpu_nic_bw;
  char nic_why[320], gpu_nic_why[320];
};

static ds_status cluster_of(const struct ds_import_node *nodes, int32_t n_files,
                            const struct ds_import_options *o, struct cluster *c,
                            struct ds_err *err) {
  const struct ds_import_node *n0 = &nodes[0];
  c->nodes = o->nodes ? o->nodes : n_files;
  if (n_files > 1 && c->nodes != n_files)
    return ds_err_set(err, DS_EUSAGE, "option --nodes: %d files describe %d nodes, got --nodes %d "
                      "(give one file and --nodes N, or one file per node)", n_files, n_files,
                      c->nodes);
  if (c->nodes < 2) return DS_OK;
  int32_t file_nics = count_kind(n0, DS_IMPORT_NIC);
  c->nics = o->nic_count ? o->nic_count : file_nics;
  if (c->nics == 0)
    return ds_err_set(err, DS_EUSAGE, "%s: no NICs in the file: pass --nic COUNTxBW "
                      "(e.g. --nic 8x400Gbps) to join %d nodes", n0->file, c->nodes);
  double file_bw = 0;
  const struct ds_import_dev *slowest = NULL;
  for (int32_t i = 0; i < n0->n_devs; i++)
    if (n0->devs[i].kind == DS_IMPORT_NIC && (!slowest || n0->devs[i].nic_bw < file_bw)) {
      slowest = &n0->devs[i];
      file_bw = slowest->nic_bw;
    }
  if (o->nic_bw > 0) {
    c->nic_bw = o->nic_bw;
    snprintf(c->nic_why, sizeof c->nic_why, "--nic %s", o->nic_spec);
  } else if (file_bw > 0) {
    c->nic_bw = file_bw;
    snprintf(c->nic_why, sizeof c->nic_why, "the NICs' speed, %g Mb/s (%s:%d)", file_bw * 8 / 1e6,
             n0->file, slowest->line);
  } else {
    return ds_err_set(err, DS_EINPUT, "%s:%d: key '%s': expected the NIC's speed (the file has "
                      "none): pass --nic COUNTxBW (e.g. --nic 8x400Gbps)", n0->file,
                      slowest ? slowest->line : 1, slowest ? slowest->label : "speed");
  }
  /* The GPU-NIC path: the NIC's own PCIe link when the file has it. */
  c->gpu_nic_bw = n0->gpu.pcie_bw;
  snprintf(c->gpu_nic_why, sizeof c->gpu_nic_why, "assumed: the GPU's PCIe x16, %s pcie_bw",
           n0->gpu.spec.name);
  for (int32_t l = 0; l < n0->n_links; l++) {
    const struct ds_import_link *k = &n0->links[l];
    if (n0->devs[k->a].kind == DS_IMPORT_NIC && k->bw > 0) {
      c->gpu_nic_bw = k->bw;
      snprintf(c->gpu_nic_why, sizeof c->gpu_nic_why, "the NIC's link: %s", k->why);
      break;
    }
  }
  return DS_OK;
}

/* s as a YAML scalar: plain where it is only letters, digits and ._+-/
 * (every shipped name), else double-quoted (ds_textout_yaml_quoted: quotes,
 * backslashes, control characters and Unicode line breaks escaped, an
 * ill-formed UTF-8 byte '?'), so that a name like `a: b` or one with a
 * quote reads back as itself (YAML 1.2, 7.3.1 double-quoted scalars). */
static void write_yaml_scalar(FILE *out, const char *s) {
  int plain = s[0] != '\0' && s[0] != '-' && s[0] != '.';
  for (const char *p = s; *p && plain; p++)
    plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("._+-/", *p) != NULL;
  if (plain) {
    fputs(s, out);
    return;
  }
  ds_textout_yaml_quoted(out, s);
}

/* A line that ends in a comment, formatted, then its newline: the comment
 * names input paths and strings read from the files (labels, notes), any
 * of which may hold a line break (a newline, NEL, LS, PS) or bytes that are
 * not UTF-8, so it goes through ds_textout_put_comment (each shown as '?'); else a path such as
 * "a<newline>name: x.xml" would write a second `name:` key into the YAML. */
__attribute__((format(printf, 2, 3))) static void comment(FILE *out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (text) {
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    ds_textout_put_comment(out, text);
    free(text);
  }
  fputc('\n', out);
}

static void write_header(FILE *out, const struct ds_import_node *nodes, int32_t n_files,
                         const struct cluster *c) {
  fprintf(out, "# Written by `ddpsim topo import` from:\n");
  for (int32_t f = 0; f < n_files; f++)
    comment(out, "#   %s (%s)%s", nodes[f].file, nodes[f].format,
            n_files == 1 && c->nodes > 1 ? ", for every node" : "");
  comment(out, "# GPU: %s, from %s.", nodes[0].gpu.spec.name, nodes[0].gpu_why);
  for (int32_t f = 0; f < n_files; f++)
    for (int32_t i = 0; i < nodes[f].n_notes; i++)
      comment(out, "# Assumed (%s): %s.", nodes[f].file, nodes[f].notes[i]);
  fprintf(out, "# Latencies are assumed, as in the shipped topologies: NVSwitch link %s, NVLink "
          "pair %s,\n# PCIe or CPU link %s, NIC %s, GPU-NIC %s (NCCL's per-step latencies of "
          "src/graph/tuning.cc\n# v2.30.7 split over the links a hop crosses).\n", LAT_NVSWITCH,
          LAT_NVLINK, LAT_PCIE, LAT_NIC, LAT_GPU_NIC);
  fprintf(out, "# No compute section: the defaults (docs/architecture.md) until measured.\n");
}

static void write_explicit_node(FILE *out, const struct ds_import_node *n, int32_t node,
                                int multi, int devices) {
  char (*names)[48] = calloc((size_t)n->n_devs, sizeof *names);
  int32_t *order = calloc((size_t)n->n_devs + 1, sizeof *order);
  if (!names || !order) {
    free(names);
    free(order);
    return;
  }
  name_devs(n, node, multi, names, order);
  int32_t n_gpus = count_kind(n, DS_IMPORT_GPU);
  if (devices) {
    for (int32_t i = 0; i < n_gpus; i++) {
      const struct ds_import_dev *d = &n->devs[order[i]];
      fprintf(out, "  - {name: %s, kind: gpu, node: %d}  # ", names[order[i]], node);
      comment(out, "%s, %s:%d", d->label, n->file, d->line);
    }
    for (int32_t i = 0; i < n->n_devs; i++) {
      const struct ds_import_dev *d = &n->devs[i];
      if (d->kind == DS_IMPORT_GPU || (d->kind == DS_IMPORT_NIC && !multi)) continue;
      fprintf(out, "  - {name: %s, kind: %s, node: %d}  # ", names[i], kind_name(d->kind), node);
      comment(out, "%s, %s:%d", d->label, n->file, d->line);
    }
  } else {
    for (int32_t l = 0; l < n->n_links; l++) {
      const struct ds_import_link *k = &n->links[l];
      if (!multi && (n->devs[k->a].kind == DS_IMPORT_NIC || n->devs[k->b].kind == DS_IMPORT_NIC))
        continue;
      fprintf(out, "  - {from: %s, to: %s, bw: %gGBps, lat: %s, kind: %s}  # ", names[k->a],
              names[k->b], k->bw / 1e9, lat_of(n, k), link_kind(k->kind));
      comment(out, "%s", k->why);
    }
  }
  free(names);
  free(order);
}

/* Key cpu_vendor, as NCCL's tuning reads the hosts: each rank takes its
 * host's first CPU (search.cc ncclTopoComputeCommCPU), and where two ranks'
 * vendors differ every rank's becomes NCCL_TOPO_CPU_VENDOR_MIXED (init.cc
 * :1306-1307, before ncclTopoTuneModel). So `mixed` where two files' first
 * <cpu> differ in arch or x86 vendor, `amd` where every file's is an x86
 * AMD, `arm` where every file's is not x86 (arm64, or ppc64: NCCL's tuning
 * and search treat every non-x86 host alike but for Power's tree latency,
 * tuning.cc:278, not modelled), nothing (intel) otherwise; files without a
 * <cpu> do not count. */
static void write_cpu_vendor(FILE *out, const struct ds_import_node *nodes, int32_t n_files) {
  const struct ds_import_node *first = NULL;
  for (int32_t f = 0; f < n_files; f++) {
    const struct ds_import_node *n = &nodes[f];
    if (!n->cpu_line) continue;
    if (!first) {
      first = n;
    } else if (strcmp(n->cpu_arch, first->cpu_arch) != 0 ||
               strcmp(n->cpu_vendor, first->cpu_vendor) != 0) {
      comment(out, "cpu_vendor: mixed  # hosts' CPUs differ: %s %s at %s:%d, %s %s at %s:%d "
              "(NCCL: every rank's vendor MIXED, AMD's LL cap across nodes, Intel's network "
              "overhead)", first->cpu_arch, first->cpu_vendor, first->file, first->cpu_line,
              n->cpu_arch, n->cpu_vendor, n->file, n->cpu_line);
      return;
    }
  }
  if (first && strcmp(first->cpu_arch, "x86_64") == 0 &&
      strcmp(first->cpu_vendor, "AuthenticAMD") == 0)
    comment(out, "cpu_vendor: amd  # an AMD x86 <cpu> at %s:%d (NCCL's tuning: LL's cap across "
            "nodes, the network overhead)", first->file, first->cpu_line);
  else if (first && strcmp(first->cpu_arch, "x86_64") != 0)
    comment(out, "cpu_vendor: arm  # an %s <cpu> at %s:%d, not x86 (NCCL: Intel's LL cap and "
            "network overhead, no 6/5 charge through the root complex)", first->cpu_arch,
            first->file, first->cpu_line);
}

ds_status ds_import_write(FILE *out, const struct ds_import_node *nodes, int32_t n_files,
                          const struct ds_import_options *o, struct ds_err *err) {
  const struct ds_import_node *n0 = &nodes[0];
  struct cluster c = {0};
  DS_CHECK(cluster_of(nodes, n_files, o, &c, err));
  int32_t gpn = count_kind(n0, DS_IMPORT_GPU);
  /* what the topology reader accepts, refused here rather than written
   * (--nodes 65536 wrote 524288 GPUs, exit 0, that every run refused) */
  if ((int64_t)c.nodes * gpn > DS_TOPO_MAX_GPUS)
    return ds_err_set(err, DS_EUSAGE, "%s%d nodes x %d GPUs = %lld GPUs; a topology holds at "
                      "most %d (give %d nodes or fewer)", o->nodes ? "option --nodes: " : "",
                      c.nodes, gpn, (long long)c.nodes * gpn, DS_TOPO_MAX_GPUS,
                      DS_TOPO_MAX_GPUS / gpn);
  for (int32_t f = 1; f < n_files; f++) {
    const struct ds_import_node *n = &nodes[f];
    if (count_kind(n, DS_IMPORT_GPU) != gpn || strcmp(n->gpu.spec.name, n0->gpu.spec.name) != 0)
      return ds_err_set(err, DS_EINPUT, "%s: expected the GPUs of %s (%d x %s), got %d x %s",
                        n->file, n0->file, gpn, n0->gpu.spec.name, count_kind(n, DS_IMPORT_GPU),
                        n->gpu.spec.name);
    if (c.nodes > 1 && !o->nic_count && count_kind(n, DS_IMPORT_NIC) != c.nics)
      return ds_err_set(err, DS_EINPUT, "%s: expected %d NICs as %s has, got %d", n->file,
                        c.nics, n0->file, count_kind(n, DS_IMPORT_NIC));
  }
  int32_t nv_count = 0;
  double nvs_bw = nvswitch_shape(n0, &nv_count);
  for (int32_t f = 1; f < n_files && nvs_bw > 0; f++) {
    int32_t k = 0;
    if (nvswitch_shape(&nodes[f], &k) != nvs_bw) nvs_bw = 0;
  }
  int explicit_nics = c.nodes > 1 && count_kind(n0, DS_IMPORT_NIC) != c.nics;
  if (nvs_bw <= 0 && explicit_nics)
    return ds_err_set(err, DS_EUSAGE, "option --nic: %s has %d NICs, --nic gives %d (an explicit "
                      "device list keeps the file's NICs)", n0->file, count_kind(n0, DS_IMPORT_NIC),
                      c.nics);
  if (nvs_bw > 0 && c.nodes > 1 && c.nics > gpn && c.nics % gpn != 0)
    /* the ib template takes at most one NIC per GPU, and more are bundled
     * only as a multiple (--nic 65x400Gbps on 8 GPUs wrote nics_per_node:
     * 65, which the reader refuses) */
    return ds_err_set(err, DS_EUSAGE, "%s%s: %d NICs a node on %d GPUs: the ib template has at "
                      "most one NIC per GPU (a multiple of %d is bundled as %d faster ones): "
                      "give %d NICs or fewer, or a multiple of %d",
                      o->nic_count ? "option --nic " : "", o->nic_count ? o->nic_spec : n0->file,
                      c.nics, gpn, gpn, gpn, gpn, gpn);
  const char *base = o->name;
  char name[NAME_MAX + 1]; /* a base name: the file was read, so it is at most NAME_MAX */
  if (!base) {
    const char *slash = strrchr(n0->file, '/');
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : n0->file);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
    base = name;
  }
  write_header(out, nodes, n_files, &c);
  fputs("schema_version: 1\nname: ", out);
  write_yaml_scalar(out, base);
  fputs("\ngpu: ", out);
  write_yaml_scalar(out, n0->gpu.spec.name);
  fprintf(out, "\nnodes: %d\ngpus_per_node: %d\n", c.nodes, gpn);
  write_cpu_vendor(out, nodes, n_files);
  if (nvs_bw > 0) {
    fprintf(out, "intra_node:\n  template: nvswitch  # every GPU's NVLinks go into the NVSwitches "
            "(one vertex, as NCCL's NVS node)\n");
    for (int32_t l = 0; l < n0->n_links; l++)
      if (n0->links[l].kind == DS_IMPORT_NVLINK) {
        fprintf(out, "  link_bw: %gGBps  # ", nvs_bw / 1e9);
        comment(out, "%s", n0->links[l].why);
        break;
      }
    fprintf(out, "  link_lat: %s\n", LAT_NVSWITCH);
    if (c.nodes > 1) {
      int32_t nics = c.nics;
      double bw = c.nic_bw;
      fprintf(out, "inter_node:\n  template: ib  # one non-blocking switch (the files do not "
              "describe the fabric)\n");
      if (nics > gpn && nics % gpn == 0) {
        fprintf(out, "  # %d NICs of %gGbps bundled as %d of %gGbps: the template has at most one "
                "NIC per GPU\n", nics, bw * 8 / 1e9, gpn, bw * 8 / 1e9 * (nics / gpn));
        bw *= nics / gpn;
        nics = gpn;
      }
      fprintf(out, "  nics_per_node: %d  # %s\n", nics,
              o->nic_count ? "--nic" : "the file's NICs (<net> elements)");
      fprintf(out, "  nic_bw: %gGbps  # ", bw * 8 / 1e9);
      comment(out, "%s", c.nic_why);
      fprintf(out, "  nic_lat: %s\n  gpu_nic_bw: %gGBps  # ", LAT_NIC, c.gpu_nic_bw / 1e9);
      comment(out, "%s", c.gpu_nic_why);
      fprintf(out, "  gpu_nic_lat: %s\n", LAT_GPU_NIC);
    }
    return DS_OK;
  }
  int multi = c.nodes > 1;
  fprintf(out, "# An explicit device and link list: the file's PCIe tree, NVLinks and CPUs%s.\n",
          multi ? "; every NIC joins one non-blocking fabric switch" : " (NICs carry nothing "
          "inside one node: left out)");
  fprintf(out, "devices:\n");
  for (int32_t k = 0; k < c.nodes; k++)
    write_explicit_node(out, &nodes[n_files == 1 ? 0 : k], k, multi, 1);
  if (multi) fprintf(out, "  - {name: fabric, kind: switch}  # assumed: one non-blocking switch\n");
  fprintf(out, "links:\n");
  for (int32_t k = 0; k < c.nodes; k++)
    write_explicit_node(out, &nodes[n_files == 1 ? 0 : k], k, multi, 0);
  if (multi)
    for (int32_t k = 0; k < c.nodes; k++) {
      const struct ds_import_node *n = &nodes[n_files == 1 ? 0 : k];
      for (int32_t i = 0, nic = 0; i < n->n_devs; i++)
        if (n->devs[i].kind == DS_IMPORT_NIC)
          comment(out, "  - {from: n%d_nic%d, to: fabric, bw: %gGbps, lat: %s, kind: ib}  # %s", k,
                  nic++, c.nic_bw * 8 / 1e9, LAT_NIC, c.nic_why);
    }
  return DS_OK;
}
