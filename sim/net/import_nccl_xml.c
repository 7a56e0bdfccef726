/*
 * NCCL topology XML reader (see import_nccl_xml.h). The tree, as NCCL's
 * src/graph/topo.cc (v2.30.7) reads it:
 *   <system version="1">
 *     <cpu numaid= arch= vendor= familyid= modelid=>     a NUMA node
 *       <pci busid= class= device= link_speed= link_width=>  a bridge/switch,
 *         <pci class="0x03..." device="0x20b2" ...>            a GPU (class 0x03)
 *           <gpu dev= sm= rank=> <nvlink target= count= tclass=/> </gpu>
 *         <pci class="0x02..."> <nic> <net name= speed= (Mb/s)/> </nic>
 * A <pci>'s link_speed and link_width describe its link to its parent.
 * NVLink targets are GPUs (by bus id, tclass 0x03...), NVSwitches (tclass
 * 0x068000: all of a node's NVSwitches are one vertex, as NCCL makes them
 * one NVS node) or the CPU (0x068001). NCCL joins every pair of CPUs with a
 * link whose bandwidth it sets by CPU model (ncclTopoGetInterCpuBw).
 */
#include "sim/net/import_nccl_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct reader {
  const char *path;
  const struct ds_gpu_table *table;
  const struct ds_gpu_info *forced_gpu;
  struct ds_import_node *n;
  int32_t nvswitch;    /* -1 until a GPU links to an NVSwitch */
  int gpu_known;       /* n->gpu is set */
  int seen_gpu_element;
};

static ds_status located(const struct reader *r, const xmlNode *x, struct ds_err *err,
                         const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static ds_status located(const struct reader *r, const xmlNode *x, struct ds_err *err,
                         const char *key, const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ds_err_set(err, DS_EINPUT, "%s:%ld: <%s> key '%s': expected %s", r->path,
                    x ? xmlGetLineNo(x) : 0L, x ? (const char *)x->name : "?", key, what);
}

/* The attribute as a string in buf; NULL when absent. */
static const char *attr(const xmlNode *x, const char *key, char *buf, size_t cap) {
  xmlChar *v = xmlGetProp(x, (const xmlChar *)key);
  if (!v) return NULL;
  snprintf(buf, cap, "%s", (const char *)v);
  xmlFree(v);
  return buf;
}

static ds_status need_attr(const struct reader *r, const xmlNode *x, const char *key,
                           const char *what, char *buf, size_t cap, struct ds_err *err) {
  /* said as such: "expected an integer" alone read as a bad value */
  if (!attr(x, key, buf, cap)) return located(r, x, err, key, "%s, the attribute is missing", what);
  if (buf[0] == '\0') return located(r, x, err, key, "%s, the attribute is empty", what);
  return DS_OK;
}

static ds_status int_attr(const struct reader *r, const xmlNode *x, const char *key,
                          long lo, long hi, long *out, struct ds_err *err) {
  char buf[64], *end;
  DS_CHECK(need_attr(r, x, key, "an integer", buf, sizeof buf, err));
  long v = strtol(buf, &end, 0);
  if (*end != '\0' || v < lo || v > hi)
    return located(r, x, err, key, "an integer from %ld to %ld, got \"%s\"", lo, hi, buf);
  *out = v;
  return DS_OK;
}

static int is(const xmlNode *x, const char *name) {
  return x->type == XML_ELEMENT_NODE && strcmp((const char *)x->name, name) == 0;
}

/* Bytes/s per direction of a PCIe link: the lane rate over 8 bits, the
 * nominal figure the GPU table uses (Gen3 x16 16, Gen4 32, Gen5 64 GB/s);
 * Gen1/2 (8b/10b) lose a fifth. NCCL's kvDictPciGen spellings. */
static ds_status pcie_bw(const struct reader *r, const xmlNode *x, double *bw,
                         char *why, size_t cap, struct ds_err *err) {
  char speed[64], *end;
  long width;
  DS_CHECK(need_attr(r, x, "link_speed", "a PCIe link speed (\"16.0 GT/s PCIe\")", speed,
                     sizeof speed, err));
  double gts = strtod(speed, &end);
  while (*end == ' ') end++;
  if (!(gts >= 2.5 && gts <= 128) || strncmp(end, "GT/s", 4) != 0)
    return located(r, x, err, "link_speed", "a PCIe link speed (\"16.0 GT/s PCIe\"), got \"%s\"",
                   speed);
  DS_CHECK(int_attr(r, x, "link_width", 0, 32, &width, err));
  int assumed = width == 0; /* NCCL: width 0 (not in /sys) counts as x16 */
  if (assumed) width = 16;
  double lane = gts >= 8 ? gts / 8 : gts * 0.8 / 8; /* GB/s */
  *bw = lane * (double)width * 1e9;
  snprintf(why, cap, "PCIe %g GT/s x%ld%s: %g GB/s per direction (line %ld)", gts, width,
           assumed ? " (width 0 in the file: x16 assumed, as NCCL does)" : "",
           lane * (double)width, xmlGetLineNo(x));
  return DS_OK;
}

static int class_is(const char *cls, const char *prefix) {
  return strncasecmp(cls, prefix, strlen(prefix)) == 0;
}

static ds_status set_gpu(struct reader *r, const xmlNode *pci, struct ds_err *err) {
  char dev[32];
  const struct ds_gpu_info *g = r->forced_gpu;
  char why[512];
  if (g) {
    snprintf(why, sizeof why, "--gpu %s", g->spec.name);
  } else {
    if (!attr(pci, "device", dev, sizeof dev) || dev[0] == '\0')
      return located(r, pci, err, "device",
                     "the GPU's PCI device id (\"0x20b2\"); this file has none: pass --gpu NAME");
    g = ds_gpu_table_by_pci_id(r->table, dev);
    if (!g)
      return located(r, pci, err, "device",
                     "a PCI device id of the GPU table; %s is none: add it to a GPU's pci_ids "
                     "in your gpus.yaml, or pass --gpu NAME", dev);
    snprintf(why, sizeof why, "PCI device id %s (line %ld) in %s", dev, xmlGetLineNo(pci),
             g->table);
  }
  if (!r->gpu_known) {
    r->n->gpu = *g;
    snprintf(r->n->gpu_why, sizeof r->n->gpu_why, "%s", why);
    r->gpu_known = 1;
  } else if (strcmp(r->n->gpu.spec.name, g->spec.name) != 0) {
    return located(r, pci, err, "device", "one GPU model per machine: %s here, %s before",
                   g->spec.name, r->n->gpu.spec.name);
  }
  return DS_OK;
}

static ds_status walk_pci(struct reader *r, const xmlNode *x, int32_t parent,
                          int *attached, struct ds_err *err);

static ds_status add_nets(struct reader *r, const xmlNode *nic, int32_t parent,
                          double pci_bw, const char *pci_why, int *attached,
                          struct ds_err *err) {
  for (const xmlNode *c = nic->children; c; c = c->next) {
    if (!is(c, "net")) continue;
    char name[64], label[64];
    long speed = 0;
    int32_t d;
    if (!attr(c, "name", name, sizeof name)) snprintf(name, sizeof name, "net");
    char sbuf[32];
    if (attr(c, "speed", sbuf, sizeof sbuf)) DS_CHECK(int_attr(r, c, "speed", 0, 100000000, &speed, err));
    snprintf(label, sizeof label, "%s", name);
    DS_CHECK(ds_import_add_dev(r->n, DS_IMPORT_NIC, label, (int)xmlGetLineNo(c), &d, err));
    r->n->devs[d].nic_bw = (double)speed * 1e6 / 8; /* Mb/s */
    if (parent >= 0)
      DS_CHECK(ds_import_add_link(r->n, d, parent, DS_IMPORT_PCIE, pci_bw, 1,
                                  (int)xmlGetLineNo(c), pci_why, err));
    *attached = 1;
  }
  return DS_OK;
}

static ds_status walk_pci(struct reader *r, const xmlNode *x, int32_t parent,
                          int *attached, struct ds_err *err) {
  char busid[64], cls[32], why[160];
  double bw;
  DS_CHECK(need_attr(r, x, "busid", "a PCI bus id (\"0000:07:00.0\")", busid, sizeof busid, err));
  DS_CHECK(need_attr(r, x, "class", "a PCI class (\"0x030200\")", cls, sizeof cls, err));
  int line = (int)xmlGetLineNo(x);
  int32_t d;
  /* a bus id names one PCI function: NCCL's XML keeps one <pci> per bus id
   * (xmlFindTagKv on busid, src/graph/xml.cc), so a repeat is a hand edit */
  for (int32_t i = 0; i < r->n->n_devs; i++)
    if (r->n->devs[i].kind != DS_IMPORT_CPU && strcasecmp(r->n->devs[i].label, busid) == 0)
      return located(r, x, err, "busid", "each PCI bus id once, got \"%s\" again (first at "
                     "line %d)", busid, r->n->devs[i].line);
  if (class_is(cls, "0x03")) { /* a GPU */
    DS_CHECK(pcie_bw(r, x, &bw, why, sizeof why, err));
    DS_CHECK(set_gpu(r, x, err));
    DS_CHECK(ds_import_add_dev(r->n, DS_IMPORT_GPU, busid, line, &d, err));
    DS_CHECK(ds_import_add_link(r->n, d, parent, DS_IMPORT_PCIE, bw, 1, line, why, err));
    for (const xmlNode *c = x->children; c; c = c->next)
      if (is(c, "gpu")) {
        long dev;
        r->seen_gpu_element = 1;
        DS_CHECK(int_attr(r, c, "dev", 0, 1 << 20, &dev, err));
        r->n->devs[d].order = (int)dev;
      }
    *attached = 1;
    return DS_OK;
  }
  if (class_is(cls, "0x02")) { /* a NIC: its <nic><net/> children */
    int nets = 0;
    DS_CHECK(pcie_bw(r, x, &bw, why, sizeof why, err));
    for (const xmlNode *c = x->children; c; c = c->next)
      if (is(c, "nic")) DS_CHECK(add_nets(r, c, parent, bw, why, &nets, err));
    if (!nets) { /* a hand-written file's NIC without <nic>: speed unknown */
      DS_CHECK(ds_import_add_dev(r->n, DS_IMPORT_NIC, busid, line, &d, err));
      DS_CHECK(ds_import_add_link(r->n, d, parent, DS_IMPORT_PCIE, bw, 1, line, why, err));
    }
    *attached = 1;
    return DS_OK;
  }
  /* A bridge or switch: a vertex only when a GPU or NIC is below it. */
  int32_t keep_devs = r->n->n_devs, keep_links = r->n->n_links;
  int below = 0;
  DS_CHECK(ds_import_add_dev(r->n, DS_IMPORT_SWITCH, busid, line, &d, err));
  for (const xmlNode *c = x->children; c; c = c->next)
    if (is(c, "pci")) DS_CHECK(walk_pci(r, c, d, &below, err));
  if (!below) {
    r->n->n_devs = keep_devs;
    r->n->n_links = keep_links;
    return DS_OK;
  }
  DS_CHECK(pcie_bw(r, x, &bw, why, sizeof why, err));
  DS_CHECK(ds_import_add_link(r->n, d, parent, DS_IMPORT_PCIE, bw, 1, line, why, err));
  *attached = 1;
  return DS_OK;
}

/* NCCL's inter-CPU bandwidth (src/graph/topo.h, topo.cc v2.30.7), GB/s. */
static double inter_cpu_gbps(const struct reader *r, const xmlNode *cpu, const char **what) {
  char arch[32] = "", vendor[32] = "", buf[32];
  long family = 0, model = 0;
  attr(cpu, "arch", arch, sizeof arch);
  attr(cpu, "vendor", vendor, sizeof vendor);
  if (attr(cpu, "familyid", buf, sizeof buf)) family = strtol(buf, NULL, 0);
  if (attr(cpu, "modelid", buf, sizeof buf)) model = strtol(buf, NULL, 0);
  (void)r;
  if (strcmp(arch, "ppc64") == 0) return *what = "POWER9 (P9_BW)", 32;
  if (strcmp(arch, "arm64") == 0) return *what = "ARM (ARM_BW)", 6;
  if (strcmp(arch, "x86_64") == 0 && strcmp(vendor, "GenuineIntel") == 0) {
    if (family == 6 && model >= 0xCF) return *what = "Intel Emerald Rapids (ERP_QPI_BW)", 40;
    if (family == 6 && model >= 0x8F) return *what = "Intel Sapphire Rapids (SRP_QPI_BW)", 22;
    if (family == 6 && model >= 0x55) return *what = "Intel Skylake (SKL_QPI_BW)", 10;
    return *what = "Intel Broadwell or older (BDW_QPI_BW)", 6;
  }
  if (strcmp(arch, "x86_64") == 0 && strcmp(vendor, "AuthenticAMD") == 0)
    return *what = "AMD (AMD_BW)", 16;
  return *what = "unknown CPU: NCCL's Broadwell figure (BDW_QPI_BW)", 6;
}

static int32_t find_gpu(const struct ds_import_node *n, const char *busid) {
  for (int32_t i = 0; i < n->n_devs; i++)
    if (n->devs[i].kind == DS_IMPORT_GPU && strcasecmp(n->devs[i].label, busid) == 0) return i;
  return -1;
}

static int32_t gpu_cpu(const struct ds_import_node *n, int32_t gpu) {
  /* Up the PCIe links (each added child first) to the CPU. */
  int32_t v = gpu;
  for (int hops = 0; hops < 64 && n->devs[v].kind != DS_IMPORT_CPU; hops++) {
    int32_t up = -1;
    for (int32_t l = 0; l < n->n_links; l++)
      if (n->links[l].kind == DS_IMPORT_PCIE && n->links[l].a == v) up = n->links[l].b;
    if (up < 0) return -1;
    v = up;
  }
  return n->devs[v].kind == DS_IMPORT_CPU ? v : -1;
}


static int32_t find_link(const struct ds_import_node *n, int32_t a, int32_t b) {
  for (int32_t l = 0; l < n->n_links; l++)
    if (n->links[l].kind == DS_IMPORT_NVLINK &&
        ((n->links[l].a == a && n->links[l].b == b) || (n->links[l].a == b && n->links[l].b == a)))
      return l;
  return -1;
}

static ds_status add_one_nvlink(struct reader *r, int32_t me, const xmlNode *l,
                                struct ds_err *err) {
  struct ds_import_node *n = r->n;
  long count, line = xmlGetLineNo(l);
  char why[160], cls[32], target[64];
  DS_CHECK(int_attr(r, l, "count", 1, 1024, &count, err));
  if (is(l, "c2c")) { /* NVLink-C2C to the CPU (Grace): bw in MB/s per link */
    long mbps;
    DS_CHECK(int_attr(r, l, "bw", 1, 100000000, &mbps, err));
    int32_t cpu = gpu_cpu(n, me);
    if (cpu < 0) return located(r, l, err, "c2c", "a GPU under a <cpu>");
    snprintf(why, sizeof why, "NVLink-C2C: %ld x %ld MB/s (line %ld)", count, mbps, line);
    return ds_import_add_link(n, me, cpu, DS_IMPORT_NVLINK, (double)count * (double)mbps * 1e6,
                              (int32_t)count, (int)line, why, err);
  }
  double per_link = ds_import_nvlink_link_bw(&n->gpu);
  if (per_link <= 0)
    return located(r, l, err, "count", "no NVLink: the GPU table gives %s none (nvlink_bw, "
                   "nvlink_links); correct it in your gpus.yaml", n->gpu.spec.name);
  DS_CHECK(need_attr(r, l, "tclass", "the target's PCI class (0x0302.. GPU, 0x068000 NVSwitch, "
                     "0x068001 CPU)", cls, sizeof cls, err));
  snprintf(why, sizeof why, "%ld x NVLink%d at %g GB/s (%s: nvlink_bw / nvlink_links; line %ld)",
           count, n->gpu.nvlink_gen, per_link / 1e9, n->gpu.spec.name, line);
  double bw = (double)count * per_link;
  int32_t peer;
  if (class_is(cls, "0x03")) {
    DS_CHECK(need_attr(r, l, "target", "the bus id of a GPU", target, sizeof target, err));
    peer = find_gpu(n, target);
    if (peer < 0)
      return located(r, l, err, "target", "the bus id of a GPU in this file, got \"%s\"", target);
    if (find_link(n, me, peer) >= 0) return DS_OK; /* the peer listed it first */
  } else if (strcasecmp(cls, "0x068000") == 0) {
    if (r->nvswitch < 0)
      DS_CHECK(ds_import_add_dev(n, DS_IMPORT_NVSWITCH, "nvswitch", (int)line, &r->nvswitch, err));
    peer = r->nvswitch;
    int32_t have = find_link(n, me, peer);
    if (have >= 0) { /* one more NVSwitch chip: the links add up */
      struct ds_import_link *k = &n->links[have];
      k->count += (int32_t)count;
      k->bw = k->count * per_link;
      snprintf(k->why, sizeof k->why, "%d x NVLink%d at %g GB/s into the NVSwitches (%s: "
               "nvlink_bw / nvlink_links; lines %d-%ld)", k->count, n->gpu.nvlink_gen,
               per_link / 1e9, n->gpu.spec.name, k->line, line);
      return DS_OK;
    }
  } else if (strcasecmp(cls, "0x068001") == 0) {
    peer = gpu_cpu(n, me);
    if (peer < 0) return located(r, l, err, "tclass", "a GPU under a <cpu>");
  } else {
    return located(r, l, err, "tclass", "0x03.... (GPU), 0x068000 (NVSwitch) or 0x068001 (CPU), "
                   "got \"%s\"", cls);
  }
  return ds_import_add_link(n, me, peer, DS_IMPORT_NVLINK, bw, (int32_t)count, (int)line, why, err);
}

/* The NVLinks of every GPU, once all GPUs are known. */
static ds_status add_nvlinks(struct reader *r, const xmlNode *x, struct ds_err *err) {
  for (; x; x = x->next) {
    if (x->type != XML_ELEMENT_NODE) continue;
    if (is(x, "pci")) {
      char busid[64], cls[32];
      attr(x, "busid", busid, sizeof busid);
      if (attr(x, "class", cls, sizeof cls) && class_is(cls, "0x03")) {
        int32_t me = find_gpu(r->n, busid);
        long links = 0; /* this GPU's NVLinks so far (C2C is not among them) */
        for (const xmlNode *g = x->children; g; g = g->next) {
          if (!is(g, "gpu")) continue;
          for (const xmlNode *l = g->children; l; l = l->next) {
            if (!is(l, "nvlink") && !is(l, "c2c")) continue;
            DS_CHECK(add_one_nvlink(r, me, l, err));
            if (is(l, "c2c")) continue;
            long count;
            DS_CHECK(int_attr(r, l, "count", 1, 1024, &count, err));
            links += count;
            /* a GPU has the links the table gives it (A100: 12); more is a
             * typo, and each would add nvlink_bw / nvlink_links */
            if (r->n->gpu.nvlink_links > 0 && links > r->n->gpu.nvlink_links)
              return located(r, l, err, "count", "at most %d NVLinks on this GPU in all (the "
                             "GPU table's nvlink_links for %s), got %ld (%ld here)",
                             r->n->gpu.nvlink_links, r->n->gpu.spec.name, links, count);
          }
        }
        continue;
      }
    }
    DS_CHECK(add_nvlinks(r, x->children, err));
  }
  return DS_OK;
}

static ds_status read_system(struct reader *r, const xmlNode *sys, struct ds_err *err) {
  int32_t cpus[64];
  const xmlNode *cpu_x[64];
  int n_cpus = 0;
  for (const xmlNode *c = sys->children; c; c = c->next) {
    if (c->type != XML_ELEMENT_NODE) continue;
    if (!is(c, "cpu")) continue; /* NCCL ignores others too (<nic> of plugins) */
    char numa[32], label[64];
    long id;
    DS_CHECK(int_attr(r, c, "numaid", -1, 1 << 20, &id, err));
    attr(c, "numaid", numa, sizeof numa);
    if (n_cpus == 64) return located(r, c, err, "numaid", "at most 64 <cpu> elements");
    snprintf(label, sizeof label, "numa %s", numa);
    char arch[32] = "", vendor[32] = "";
    attr(c, "arch", arch, sizeof arch);
    attr(c, "vendor", vendor, sizeof vendor);
    if (!r->n->cpu_line) {
      snprintf(r->n->cpu_arch, sizeof r->n->cpu_arch, "%s", arch);
      snprintf(r->n->cpu_vendor, sizeof r->n->cpu_vendor, "%s",
               strcmp(arch, "x86_64") == 0 ? vendor : "");
      r->n->cpu_line = (int)xmlGetLineNo(c);
    }
    DS_CHECK(ds_import_add_dev(r->n, DS_IMPORT_CPU, label, (int)xmlGetLineNo(c), &cpus[n_cpus], err));
    cpu_x[n_cpus++] = c;
    int below = 0;
    for (const xmlNode *p = c->children; p; p = p->next) {
      if (is(p, "pci")) DS_CHECK(walk_pci(r, p, cpus[n_cpus - 1], &below, err));
      if (is(p, "nic")) DS_CHECK(add_nets(r, p, cpus[n_cpus - 1], 0, "", &below, err));
    }
  }
  if (n_cpus == 0) return located(r, sys, err, "cpu", "at least one <cpu> element");
  int n_gpus = 0;
  for (int32_t i = 0; i < r->n->n_devs; i++) n_gpus += r->n->devs[i].kind == DS_IMPORT_GPU;
  if (n_gpus == 0)
    return located(r, sys, err, "pci", "at least one GPU (a <pci> of class 0x03....)");
  const char *what;
  double qpi = inter_cpu_gbps(r, cpu_x[0], &what);
  for (int a = 0; a < n_cpus; a++)
    for (int b = a + 1; b < n_cpus; b++) {
      char why[160];
      snprintf(why, sizeof why, "NCCL's inter-CPU bandwidth for %s: %g GB/s (src/graph/topo.h)",
               what, qpi);
      DS_CHECK(ds_import_add_link(r->n, cpus[a], cpus[b], DS_IMPORT_QPI, qpi * 1e9, 1,
                                  (int)xmlGetLineNo(cpu_x[b]), why, err));
    }
  DS_CHECK(add_nvlinks(r, sys->children, err));
  if (!r->seen_gpu_element)
    ds_import_note(r->n, "no <gpu> elements (a hand-written NCCL_TOPO_FILE): no NVLink known, "
                   "GPUs in file order");
  return DS_OK;
}

ds_status ds_import_nccl_xml(const char *path, const char *text, size_t len,
                             const struct ds_gpu_table *table,
                             const struct ds_gpu_info *forced_gpu,
                             struct ds_import_node *out, struct ds_err *err) {
  struct reader r = {.path = path, .table = table, .forced_gpu = forced_gpu, .n = out,
                     .nvswitch = -1};
  out->format = "NCCL topology XML";
  xmlResetLastError();
  xmlDoc *doc = xmlReadMemory(text, (int)len, path, NULL,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (!doc) {
    const xmlError *e = xmlGetLastError();
    char msg[256] = "not well-formed";
    if (e && e->message) {
      snprintf(msg, sizeof msg, "%s", e->message);
      size_t k = strlen(msg);
      while (k && (msg[k - 1] == '\n' || msg[k - 1] == ' ')) msg[--k] = '\0';
    }
    return ds_err_set(err, DS_EINPUT, "%s:%d: malformed XML: %s", path, e ? e->line : 0, msg);
  }
  const xmlNode *root = xmlDocGetRootElement(doc);
  ds_status st;
  if (!root || !is(root, "system"))
    st = located(&r, root, err, "system", "the root element <system> of an NCCL topology file");
  else
    st = read_system(&r, root, err);
  xmlFreeDoc(doc);
  return st;
}
