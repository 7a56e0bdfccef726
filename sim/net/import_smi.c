/*
 * `nvidia-smi topo -m` reader (see import_smi.h). The matrix:
 *           GPU0  GPU1  NIC0  CPU Affinity  NUMA Affinity  GPU NUMA ID
 *   GPU0     X    NV12  SYS   0-63          0              N/A
 * cells: X (self), NV# (# bonded NVLinks), PIX (at most one PCIe bridge),
 * PXB (several bridges, no host bridge), PHB (through the CPU's host
 * bridge), NODE (between host bridges of one NUMA node), SYS (across the
 * SMP interconnect), SOC (older drivers' SYS). NIC columns are NICn (with
 * a "NIC Legend") or the NIC's name (mlx5_0) in older drivers.
 *
 * The matrix names relations, not the tree, so the tree is assumed (each
 * assumption is a note in the output): one CPU per NUMA affinity (or per
 * group of devices not SYS to each other); one PCIe switch per group of
 * devices joined by PIX or PXB, under its CPU; every other device straight
 * on its CPU; every PCIe link the GPU's x16 generation (the GPU table's
 * pcie_bw). An NV# cell hides the pair's PCIe relation.
 */
#include "sim/net/import_smi.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SMI_MAX_DEVS 256
#define SMI_MAX_TOKENS (SMI_MAX_DEVS + 16)

struct matrix {
  char label[SMI_MAX_DEVS][32];
  int is_gpu[SMI_MAX_DEVS];
  int n;
  char cell[SMI_MAX_DEVS][SMI_MAX_DEVS][8];
  int row_line[SMI_MAX_DEVS];
  long numa[SMI_MAX_DEVS]; /* -1: not given */
  int has_numa;
  /* the first `nvidia-smi -L` line naming another GPU than the first's */
  char other_gpu[128];
  int other_gpu_index, other_gpu_line;
};

static int split(char *line, char **tok, int max) {
  int n = 0;
  for (char *p = strtok(line, " \t\r"); p && n < max; p = strtok(NULL, " \t\r")) tok[n++] = p;
  return n;
}

static int is_dev_label(const char *t) {
  if (strncmp(t, "GPU", 3) == 0 && isdigit((unsigned char)t[3])) return 1;
  if (strncmp(t, "NIC", 3) == 0 && isdigit((unsigned char)t[3])) return 1;
  return strncmp(t, "mlx", 3) == 0 || strncmp(t, "ib", 2) == 0 || strncmp(t, "bnxt", 4) == 0 ||
         strncmp(t, "eth", 3) == 0;
}

static int find_root(int *parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

static void join(int *parent, int a, int b) { parent[find_root(parent, a)] = find_root(parent, b); }

/* "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)": the name, into buf, and
 * the GPU's index. */
static int smi_l_name(const char *line, char *buf, size_t cap, int *idx) {
  int off = 0;
  if (sscanf(line, "GPU %d: %n", idx, &off) != 1 || off == 0) return 0;
  const char *s = line + off, *e = strstr(s, " (UUID");
  size_t n = e ? (size_t)(e - s) : strcspn(s, "\r\n");
  if (n == 0 || n >= cap) return 0;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return 1;
}

static ds_status fail(const char *path, int line, const char *key, struct ds_err *err,
                      const char *what) {
  return ds_err_set(err, DS_EINPUT, "%s:%d: key '%s': expected %s", path, line, key, what);
}

static ds_status parse(const char *path, const char *text, struct matrix *m, char *smi_name,
                       size_t name_cap, int *name_line, struct ds_err *err) {
  char *tok[SMI_MAX_TOKENS], msg[256], line[4096], buf[4096];
  int lineno = 0, header = 0, rows = 0, numa_col = -1;
  ds_status st = DS_OK;
  m->n = 0;
  for (const char *p = text; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    lineno++;
    if (len >= sizeof line) return fail(path, lineno, "line", err, "lines under 4096 characters");
    memcpy(line, p, len);
    line[len] = '\0';
    p += len + (e != NULL);
    char name[128];
    int gpu_index;
    if (smi_l_name(line, name, sizeof name, &gpu_index)) {
      /* every -L line: the topology has one gpu (XML's set_gpu refuses a
       * second model too), so another name is refused unless --gpu says */
      if (!smi_name[0]) {
        snprintf(smi_name, name_cap, "%s", name);
        *name_line = lineno;
      } else if (strcmp(name, smi_name) != 0 && !m->other_gpu[0]) {
        snprintf(m->other_gpu, sizeof m->other_gpu, "%s", name);
        m->other_gpu_index = gpu_index;
        m->other_gpu_line = lineno;
      }
      continue;
    }
    snprintf(buf, sizeof buf, "%s", line);
    int has_affinity = strstr(line, "Affinity") != NULL;
    int nt = split(buf, tok, SMI_MAX_TOKENS);
    if (nt == 0) continue;
    if (!header) {
      if (!is_dev_label(tok[0]) || strncmp(tok[0], "GPU", 3) != 0 || !has_affinity) continue;
      for (int i = 0; i < nt && is_dev_label(tok[i]); i++) {
        if (m->n == SMI_MAX_DEVS) {
          snprintf(msg, sizeof msg, "at most %d devices", SMI_MAX_DEVS);
          st = fail(path, lineno, tok[i], err, msg);
          return st;
        }
        snprintf(m->label[m->n], sizeof m->label[0], "%s", tok[i]);
        m->is_gpu[m->n] = strncmp(tok[i], "GPU", 3) == 0;
        m->numa[m->n] = -1;
        m->n++;
      }
      /* Columns after the devices: "CPU Affinity", "NUMA Affinity", ...
       * two tokens each; NUMA affinity is the second such column. */
      const char *numa_at = strstr(line, "NUMA Affinity");
      if (numa_at) {
        const char *cpu_at = strstr(line, "CPU Affinity");
        numa_col = cpu_at && cpu_at < numa_at ? 1 : 0;
      }
      header = lineno;
      continue;
    }
    /* The legend follows the matrix; `nvidia-smi -L` lines appended after it
     * (the documented recipe) were taken above, so skip the rest, not stop. */
    if (rows == m->n) continue;
    if (header && !is_dev_label(tok[0])) continue;
    if (strcmp(tok[0], m->label[rows]) != 0) {
      /* A row whose device has no column: the header lost it, so the error
       * is the header's, located there. */
      int in_header = 0;
      for (int j = 0; j < m->n; j++) in_header |= strcmp(tok[0], m->label[j]) == 0;
      if (!in_header) {
        snprintf(msg, sizeof msg,
                 "a column for every row's device (%s's row is line %d; the header lists %d)",
                 tok[0], lineno, m->n);
        return fail(path, header, tok[0], err, msg);
      }
      snprintf(msg, sizeof msg, "the row of %s (rows in the header's order)", m->label[rows]);
      st = fail(path, lineno, tok[0], err, msg);
      return st;
    }
    if (nt < 1 + m->n) {
      snprintf(msg, sizeof msg, "%d cells (one per column), got %d", m->n, nt - 1);
      st = fail(path, lineno, m->label[rows], err, msg);
      return st;
    }
    for (int j = 0; j < m->n; j++) {
      const char *c = tok[1 + j];
      int ok = strcmp(c, "X") == 0 || strcmp(c, "PIX") == 0 || strcmp(c, "PXB") == 0 ||
               strcmp(c, "PHB") == 0 || strcmp(c, "NODE") == 0 || strcmp(c, "SYS") == 0 ||
               strcmp(c, "SOC") == 0;
      if (!ok && strncmp(c, "NV", 2) == 0) {
        char *end;
        long k = strtol(c + 2, &end, 10);
        ok = *end == '\0' && k >= 1 && k <= 1024;
      }
      if (!ok || (j == rows) != (strcmp(c, "X") == 0)) {
        snprintf(msg, sizeof msg, "X on the diagonal, else NV#, PIX, PXB, PHB, NODE or SYS "
                 "(column %s), got \"%s\"", m->label[j], c);
        st = fail(path, lineno, m->label[rows], err, msg);
        return st;
      }
      snprintf(m->cell[rows][j], sizeof m->cell[0][0], "%s", strcmp(c, "SOC") == 0 ? "SYS" : c);
    }
    m->row_line[rows] = lineno;
    /* NUMA affinity: the token after the CPU affinity, when a number. */
    if (numa_col >= 0 && m->is_gpu[rows] && nt > 1 + m->n + numa_col) {
      char *end;
      long v = strtol(tok[1 + m->n + numa_col], &end, 10);
      if (*end == '\0' && v >= 0) {
        m->numa[rows] = v;
        m->has_numa = 1;
      }
    }
    rows++;
  }
  if (!header) {
    st = fail(path, 1, "GPU0", err, "an `nvidia-smi topo -m` matrix (a header line of GPU0 GPU1 "
              "... CPU Affinity) or an NCCL topology XML");
  } else if (rows < m->n) {
    snprintf(msg, sizeof msg, "a row for every column: %d of %d rows", rows, m->n);
    st = fail(path, lineno, m->label[rows], err, msg);
  } else {
    for (int i = 0; i < m->n && st == DS_OK; i++)
      for (int j = 0; j < m->n; j++)
        if (strcmp(m->cell[i][j], m->cell[j][i]) != 0) {
          snprintf(msg, sizeof msg, "a symmetric matrix: %s/%s is %s but %s/%s is %s",
                   m->label[i], m->label[j], m->cell[i][j], m->label[j], m->label[i],
                   m->cell[j][i]);
          st = fail(path, m->row_line[i], m->label[i], err, msg);
          break;
        }
  }
  return st;
}

static int rank_of(const char *cell) {
  if (strcmp(cell, "PIX") == 0) return 1;
  if (strcmp(cell, "PXB") == 0) return 2;
  if (strcmp(cell, "PHB") == 0) return 3;
  if (strcmp(cell, "NODE") == 0) return 4;
  return 99; /* SYS, NV#, X */
}

static ds_status build(const char *path, const struct matrix *m, struct ds_import_node *n,
                       struct ds_err *err) {
  int cpu_of[SMI_MAX_DEVS], sw_of[SMI_MAX_DEVS], dev_of[SMI_MAX_DEVS];
  int sock[SMI_MAX_DEVS], swp[SMI_MAX_DEVS];
  int n_gpus = 0;
  for (int i = 0; i < m->n; i++) {
    sock[i] = swp[i] = i;
    n_gpus += m->is_gpu[i];
  }
  /* Sockets: by NUMA affinity when the matrix gives it (a NIC joins its
   * nearest GPU), else devices not SYS to each other share one. */
  for (int i = 0; i < m->n; i++)
    for (int j = 0; j < m->n; j++) {
      int r = rank_of(m->cell[i][j]);
      if (r <= 2) join(swp, i, j);
      if (m->has_numa) {
        if (m->is_gpu[i] && m->is_gpu[j] && m->numa[i] >= 0 && m->numa[i] == m->numa[j])
          join(sock, i, j);
      } else if (r <= 4) {
        join(sock, i, j);
      }
    }
  if (m->has_numa)
    for (int i = 0; i < m->n; i++) {
      if (m->is_gpu[i]) continue;
      int best = -1, best_r = 99;
      for (int j = 0; j < m->n; j++)
        if (m->is_gpu[j] && rank_of(m->cell[i][j]) < best_r) best = j, best_r = rank_of(m->cell[i][j]);
      if (best >= 0) join(sock, i, best);
    }
  /* GPUs first, in matrix order (ranks), then NICs. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < m->n; i++) {
      if (m->is_gpu[i] != (pass == 0)) continue;
      DS_CHECK(ds_import_add_dev(n, pass == 0 ? DS_IMPORT_GPU : DS_IMPORT_NIC, m->label[i],
                                 m->row_line[i], &dev_of[i], err));
    }
  int n_cpus = 0;
  for (int i = 0; i < m->n; i++) cpu_of[i] = sw_of[i] = -1;
  for (int i = 0; i < m->n; i++) {
    int root = find_root(sock, i);
    if (cpu_of[root] < 0) {
      char label[64];
      snprintf(label, sizeof label, "socket of %s", m->label[i]);
      DS_CHECK(ds_import_add_dev(n, DS_IMPORT_CPU, label, m->row_line[i], &cpu_of[root], err));
      n_cpus++;
      (void)n_cpus;
    }
  }
  double pcie = n->gpu.pcie_bw;
  char why[160];
  snprintf(why, sizeof why, "assumed: PCIe x16 at the GPU's generation, %g GB/s (%s pcie_bw)",
           pcie / 1e9, n->gpu.spec.name);
  for (int i = 0; i < m->n; i++) {
    int root = find_root(swp, i), size = 0;
    for (int j = 0; j < m->n; j++) size += find_root(swp, j) == root;
    int32_t up = cpu_of[find_root(sock, i)];
    if (size > 1) {
      if (sw_of[root] < 0) {
        char label[64];
        snprintf(label, sizeof label, "PCIe switch of %s", m->label[i]);
        DS_CHECK(ds_import_add_dev(n, DS_IMPORT_SWITCH, label, m->row_line[i], &sw_of[root], err));
        DS_CHECK(ds_import_add_link(n, sw_of[root], up, DS_IMPORT_PCIE, pcie, 1,
                                    m->row_line[i], why, err));
      }
      up = sw_of[root];
    }
    DS_CHECK(ds_import_add_link(n, dev_of[i], up, DS_IMPORT_PCIE, pcie, 1, m->row_line[i], why, err));
  }
  /* CPUs: the matrix does not say which; NCCL's Skylake figure. */
  int32_t first_cpu = -1;
  for (int32_t d = 0; d < n->n_devs; d++) {
    if (n->devs[d].kind != DS_IMPORT_CPU) continue;
    if (first_cpu < 0) {
      first_cpu = d;
      continue;
    }
    for (int32_t e = first_cpu; e < d; e++)
      if (n->devs[e].kind == DS_IMPORT_CPU)
        DS_CHECK(ds_import_add_link(n, e, d, DS_IMPORT_QPI, 10e9, 1, n->devs[d].line,
                                    "assumed: the matrix names no CPU; NCCL's Skylake "
                                    "inter-CPU figure, 10 GB/s (SKL_QPI_BW, src/graph/topo.h)", err));
  }
  /* NVLinks; all of every GPU's links to every other GPU is an NVSwitch. */
  double per_link = ds_import_nvlink_link_bw(&n->gpu);
  int all_nv = n_gpus > 2, k_all = -1;
  for (int i = 0; i < m->n; i++)
    for (int j = 0; j < m->n; j++) {
      if (!m->is_gpu[i] || !m->is_gpu[j] || i == j) continue;
      const char *c = m->cell[i][j];
      if (strncmp(c, "NV", 2) != 0) {
        all_nv = 0;
        continue;
      }
      int k = atoi(c + 2);
      if (per_link <= 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "no NVLink: the GPU table gives %s none (nvlink_bw, "
                 "nvlink_links); correct it in your gpus.yaml", n->gpu.spec.name);
        return fail(path, m->row_line[i], m->label[i], err, msg);
      }
      if (n->gpu.nvlink_links > 0 && k > n->gpu.nvlink_links) {
        char msg[256];
        snprintf(msg, sizeof msg, "at most NV%d (the GPU table's nvlink_links for %s), got %s "
                 "(column %s)", n->gpu.nvlink_links, n->gpu.spec.name, c, m->label[j]);
        return fail(path, m->row_line[i], m->label[i], err, msg);
      }
      if (k_all < 0) k_all = k;
      if (k != k_all) all_nv = 0;
    }
  if (all_nv && k_all == n->gpu.nvlink_links) {
    int32_t sw;
    DS_CHECK(ds_import_add_dev(n, DS_IMPORT_NVSWITCH, "nvswitch", m->row_line[0], &sw, err));
    for (int i = 0; i < m->n; i++) {
      if (!m->is_gpu[i]) continue;
      snprintf(why, sizeof why, "NV%d to every GPU: all of %s's %d links, so an NVSwitch; "
               "%d x NVLink%d at %g GB/s", k_all, n->gpu.spec.name, n->gpu.nvlink_links, k_all,
               n->gpu.nvlink_gen, per_link / 1e9);
      DS_CHECK(ds_import_add_link(n, dev_of[i], sw, DS_IMPORT_NVLINK, k_all * per_link, k_all,
                                  m->row_line[i], why, err));
    }
    return DS_OK;
  }
  /* Direct links: a GPU's NV# cells share its links (an NVSwitch machine
   * shows all of them to every GPU, handled above) */
  for (int i = 0; i < m->n && n->gpu.nvlink_links > 0; i++) {
    int sum = 0;
    for (int j = 0; j < m->n; j++)
      if (m->is_gpu[i] && m->is_gpu[j] && i != j && strncmp(m->cell[i][j], "NV", 2) == 0)
        sum += atoi(m->cell[i][j] + 2);
    if (sum > n->gpu.nvlink_links) {
      char msg[320];
      snprintf(msg, sizeof msg, "NV# cells adding up to at most %d (the GPU table's "
               "nvlink_links for %s; an NVSwitch machine shows NV%d to every GPU), got %d",
               n->gpu.nvlink_links, n->gpu.spec.name, n->gpu.nvlink_links, sum);
      return fail(path, m->row_line[i], m->label[i], err, msg);
    }
  }
  for (int i = 0; i < m->n; i++)
    for (int j = i + 1; j < m->n; j++) {
      if (!m->is_gpu[i] || !m->is_gpu[j] || strncmp(m->cell[i][j], "NV", 2) != 0) continue;
      int k = atoi(m->cell[i][j] + 2);
      snprintf(why, sizeof why, "%s: %d x NVLink%d at %g GB/s (%s: nvlink_bw / nvlink_links)",
               m->cell[i][j], k, n->gpu.nvlink_gen, per_link / 1e9, n->gpu.spec.name);
      DS_CHECK(ds_import_add_link(n, dev_of[i], dev_of[j], DS_IMPORT_NVLINK, k * per_link, k,
                                  m->row_line[i], why, err));
    }
  return DS_OK;
}

ds_status ds_import_smi(const char *path, const char *text,
                        const struct ds_gpu_table *table,
                        const struct ds_gpu_info *forced_gpu,
                        struct ds_import_node *out, struct ds_err *err) {
  struct matrix *m = calloc(1, sizeof *m);
  char smi_name[128] = "";
  int name_line = 0;
  if (!m) return ds_err_set(err, DS_ENOMEM, "out of memory");
  out->format = "nvidia-smi topo -m";
  ds_status st = parse(path, text, m, smi_name, sizeof smi_name, &name_line, err);
  const struct ds_gpu_info *g = forced_gpu;
  if (st == DS_OK && g) {
    out->gpu = *g;
    snprintf(out->gpu_why, sizeof out->gpu_why, "--gpu %s", g->spec.name);
  } else if (st == DS_OK && m->other_gpu[0]) {
    char key[32], msg[384];
    snprintf(key, sizeof key, "GPU %d", m->other_gpu_index);
    snprintf(msg, sizeof msg, "one GPU model per machine: \"%s\" here, \"%s\" at line %d "
             "(or pass --gpu NAME)", m->other_gpu, smi_name, name_line);
    st = fail(path, m->other_gpu_line, key, err, msg);
  } else if (st == DS_OK && smi_name[0]) {
    /* older drivers print GeForce cards without "NVIDIA ": the name
     * without its vendor words means the one GPU it names so */
    g = ds_gpu_table_by_device_name(table, smi_name);
    if (!g) {
      char msg[384];
      snprintf(msg, sizeof msg, "a GPU of the table (smi_names), got \"%s\": add it to a GPU's "
               "smi_names in your gpus.yaml, or pass --gpu NAME", smi_name);
      st = fail(path, name_line, "GPU 0", err, msg);
    } else {
      out->gpu = *g;
      snprintf(out->gpu_why, sizeof out->gpu_why, "nvidia-smi name \"%s\" (line %d) in %s",
               smi_name, name_line, g->table);
    }
  } else if (st == DS_OK) {
    st = fail(path, 1, "gpu", err, "the GPU model: `nvidia-smi -L` lines (\"GPU 0: NAME (UUID: "
              "...)\") in the file, or --gpu NAME");
  }
  if (st == DS_OK) st = build(path, m, out, err);
  if (st == DS_OK) {
    ds_import_note(out, "the matrix gives relations, not the PCIe tree: one switch per group "
                   "joined by PIX/PXB, other devices on their CPU; an NV# pair's PCIe relation "
                   "is unknown");
    ds_import_note(out, "%s", m->has_numa ? "CPUs: one per NUMA affinity of the GPU rows"
                                          : "CPUs: one per group of devices not SYS to each other");
  }
  free(m);
  return st;
}
