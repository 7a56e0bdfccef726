/*
 * `ddpsim topo` (see topocmd.h). Everything printed is read back from the
 * loaded struct ds_topo and the ring built on it -- the same objects the
 * simulator uses -- not from the file's text, so what is shown is what is
 * simulated.
 */
#include "sim/cmd/topocmd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "sim/cmd/importcmd.h"
#include "sim/cmd/topocmd_impl.h"
#include "sim/coll/coll.h"
#include "base/lookup.h"
#include "base/textout.h"
#include "base/units.h"
#include "sim/coll/nccl_model.h"
#include "sim/net/gpu_table.h"
#include "sim/net/topo.h"

/* Every ordered pair is checked up to this many GPUs; above, the ring's
 * hops and GPU 0 to and from every GPU. */
#define ALL_PAIRS_MAX 64
/* Rails whose GPU order `ddpsim topo` lists (more ranks: the count only). */
#define RAILS_LISTED_MAX 64

struct topocmd_options {
  const char *topo;
  int32_t from, to; /* -1: default 0 -> last GPU of the ring */
  int32_t world;    /* 0: every GPU */
  int json;         /* --format json */
  int help;
};

static const char usage[] =
    "usage: ddpsim topo TOPOLOGY [--from GPU --to GPU] [--world-size N]\n"
    "                            [--format text|json] [--help]\n"
    "       ddpsim topo import FILE... [--nodes N] [--nic COUNTxBW] [--gpu NAME]\n"
    "                          [--gpus TABLE] [--name NAME] [-o OUT]\n"
    "\n"
    "Prints what the topology describes, as the simulator understood it: the\n"
    "GPU, the compute factors, devices and links, the route between two GPUs\n"
    "(GPU: an index, 3 or gpu3 as printed; default: GPU 0 to the last; one\n"
    "GPU to itself says so), and the ring of\n"
    "the first N GPUs (default: all) with its bottleneck. Unreachable GPUs are\n"
    "an error that names them. TOPOLOGY is a file's path or a shipped name, not\n"
    "- (standard input): its GPU table is looked for beside it.\n"
    "\n"
    "--format json prints the same facts as one JSON object, numbers whole\n"
    "(the text rounds them), every rail and channel listed\n"
    "(docs/topologies.md); text is the default.\n"
    "\n"
    "`ddpsim topo import` writes a topology from NCCL's topology XML or\n"
    "`nvidia-smi topo -m` (ddpsim topo import --help).\n";

/* A GPU index, written 3 or as the output labels it, gpu3. */
static ds_status parse_gpu(const char *flag, const char *v, int32_t *out,
                           struct ds_err *err) {
  const char *digits = strncmp(v, "gpu", 3) == 0 ? v + 3 : v;
  char *end;
  long x = strtol(digits, &end, 10);
  if (*digits < '0' || *digits > '9' || *end != '\0' || x > (1L << 20))
    return ds_err_set(err, DS_EUSAGE, "option %s: expected a GPU index (0, 1, ... or gpu0, "
                      "gpu1, ...), got \"%s\"", flag, v);
  *out = (int32_t)x;
  return DS_OK;
}

/* Every flag topo knows (base/cli.h): its parser refuses the others and
 * says which of these is missing its value. */
static const struct ds_cli_option options[] = {
    {"--from", 1, NULL}, {"--to", 1, NULL}, {"--world-size", 1, NULL}, {"--format", 1, NULL},
    {"--help", 0, NULL},
    {"-h", 0, "--help"}, {NULL, 0, NULL}};

const struct ds_cli_option *ds_topocmd_options(void) { return options; }

/* ds_cli_parse_split's parse: the words, "--flag=value" already split. */
static ds_status parse_words(int argc, char **argv, void *ctx, struct ds_err *err) {
  struct topocmd_options *o = ctx;
  *o = (struct topocmd_options){.from = -1, .to = -1};
  struct ds_cli_walk w = {.program = "ddpsim topo", .options = options,
                          .positionals = DS_CLI_POSITIONALS_PLAIN_OR_DASH};
  for (int i = 1; i < argc; i++) {
    const char *f, *v;
    DS_CHECK(ds_cli_next_word(&w, argc, argv, &i, &f, &v, err));
    if (!f) {
      if (o->topo)
        return ds_err_set(err, DS_EUSAGE, "ddpsim topo: one topology, got \"%s\" and \"%s\"",
                          o->topo, v);
      DS_CHECK(ds_lookup_refuse_stdin("topologies", "argument TOPOLOGY", v, err));
      o->topo = v;
    } else if (ds_cli_is_help(f)) {
      o->help = 1;
    } else if (strcmp(f, "--from") == 0) {
      DS_CHECK(parse_gpu(f, v, &o->from, err));
    } else if (strcmp(f, "--to") == 0) {
      DS_CHECK(parse_gpu(f, v, &o->to, err));
    } else if (strcmp(f, "--world-size") == 0) {
      DS_CHECK(parse_gpu(f, v, &o->world, err));
      if (o->world < 1)
        return ds_err_set(err, DS_EUSAGE, "option --world-size: expected at least 1");
    } else if (strcmp(f, "--format") == 0) {
      /* csv refused by name: the facts nest (link groups, a route's links,
       * rails), no one table holds them */
      if (strcmp(v, "csv") == 0)
        return ds_err_set(err, DS_EUSAGE, "option --format: ddpsim topo has no csv (its facts "
                          "nest: link groups, the route's links, rails); use text or json");
      if (strcmp(v, "json") != 0 && strcmp(v, "text") != 0)
        return ds_cli_bad_value(err, f, "text or json", v);
      o->json = strcmp(v, "json") == 0;
    } else {
      return ds_cli_unhandled(err, f);
    }
  }
  if (!o->help && !o->topo)
    return ds_err_set(err, DS_EUSAGE, "ddpsim topo: missing the topology (see --help)");
  return DS_OK;
}

int ds__topocmd_first_of_reason(const struct ds_gpu_spec *g, int k) {
  const char *why = g->eff_proxy[k];
  if (why[0] == '\0') return 0;
  for (int j = 0; j < k; j++)
    if (strcmp(g->eff_proxy[j], why) == 0) return 0;
  return 1;
}

/* "gpu3", "switch0", "nic2@node1", "switch0@fabric": the vertex's kind, its
 * index among the vertices of that kind in its node, and the node when there
 * are several (devices outside every node belong to the fabric). A device
 * list's devices keep the file's names: a GPU is gpuN (what --from takes)
 * with its name after it where that differs, "gpu0(x)"; any other device
 * is its name ("pcie0"), unique in the file. */
void ds__topocmd_vertex_label(const struct ds_topo *t, int32_t v, int printable, char *buf,
                              size_t cap) {
  const char *name = t->vertex_name ? t->vertex_name[v] : NULL;
  char own[128];
  if (name && printable) ds_textout_printable(name, own, sizeof own);
  else if (name) snprintf(own, sizeof own, "%s", name);
  if (name && t->vertex_kind[v] != DS_VERTEX_GPU) {
    snprintf(buf, cap, "%s", own);
    return;
  }
  if (name) {
    char gpu[32];
    snprintf(gpu, sizeof gpu, "gpu%d", (int)v); /* GPUs are vertices 0..N-1 */
    snprintf(buf, cap, strcmp(gpu, own) == 0 ? "%s" : "%s(%s)", gpu, own);
    return;
  }
  int32_t idx = 0;
  for (int32_t u = 0; u < v; u++)
    idx += t->vertex_kind[u] == t->vertex_kind[v] && t->vertex_node[u] == t->vertex_node[v];
  if (t->vertex_kind[v] == DS_VERTEX_GPU) idx = v; /* GPUs keep their global index */
  if (t->vertex_kind[v] != DS_VERTEX_GPU && t->vertex_node[v] < 0)
    snprintf(buf, cap, "%s%d@fabric", ds_vertex_kind_name(t->vertex_kind[v]), idx);
  else if (t->n_nodes > 1 && t->vertex_kind[v] != DS_VERTEX_GPU)
    snprintf(buf, cap, "%s%d@node%d", ds_vertex_kind_name(t->vertex_kind[v]), idx,
             t->vertex_node[v]);
  else
    snprintf(buf, cap, "%s%d", ds_vertex_kind_name(t->vertex_kind[v]), idx);
}

/* TFLOP/s with one decimal, as every GPU's; a rate that would print 0.0
 * but is not 0 (a CPU rank's GFLOP/s, topologies/cpu/gpus.yaml) with two
 * significant digits instead, so a measured rate never reads as none. */
static const char *tflops_text(double flops_per_s, char *buf, size_t cap) {
  double tflops = flops_per_s / 1e12;
  snprintf(buf, cap, "%.*f", ds_units_decimals_for(tflops, 1), tflops);
  return buf;
}

static void print_gpu(FILE *out, const struct ds_topo *t) {
  const struct ds_gpu_spec *g = &t->gpu;
  char rates[4][32];
  /* "memory": the table knows its bandwidth, not whether it is HBM or
   * GDDR (an L40S's GDDR6) */
  fprintf(out, "  gpu        %s x %d (%d node%s x %d), %d SMs, %.1f GiB, memory %.0f GB/s\n",
          g->name, t->n_gpus, t->n_nodes, t->n_nodes == 1 ? "" : "s", t->gpus_per_node,
          g->sms, g->mem_bytes / DS_UNITS_GIB, g->mem_bw_bytes_per_s / 1e9);
  fprintf(out, "             dense TFLOP/s: fp32 %s, tf32 %s, fp16 %s, bf16 %s\n",
          tflops_text(g->fp32_flops_per_s, rates[0], sizeof rates[0]),
          tflops_text(g->tf32_flops_per_s, rates[1], sizeof rates[1]),
          tflops_text(g->fp16_flops_per_s, rates[2], sizeof rates[2]),
          tflops_text(g->bf16_flops_per_s, rates[3], sizeof rates[3]));
  const struct ds_compute_params *c = &t->compute;
  fprintf(out, "  compute    flops_efficiency %g, mem_efficiency %g, kernel_overhead %g us, "
          "fp32 math %s, comm_interference %g (an extra factor: NCCL's kernels slow compute "
          "beside them anyway, interference.h)\n", c->flops_efficiency, c->mem_efficiency,
          c->kernel_overhead_ns / 1e3, c->fp32_uses_tf32 ? "tf32" : "fp32",
          c->comm_interference);
  /* the GPU table's measured efficiencies (gpus.yaml efficiency), "-" where
   * nothing was measured; a class's own topology key overrides them */
  const struct ds_gpu_efficiency *e = &g->eff;
  const char *cls[] = {"conv", "matmul", "attention"};
  const double *v[] = {e->conv, e->matmul, e->attention};
  fprintf(out, "  measured  ");
  for (int k = 0; k < 3; k++) {
    fprintf(out, " %s", cls[k]);
    for (int m = 0; m < DS_GPU_MATH_COUNT; m++) {
      static const char *const math[] = {"fp32", "tf32", "half"};
      if (v[k][m] > 0) fprintf(out, " %s %.3f", math[m], v[k][m]);
      else fprintf(out, " %s -", math[m]);
    }
    fprintf(out, ";");
  }
  /* a convolution's passes apart (compute.h): shown where measured */
  for (int m = 0; m < DS_GPU_MATH_COUNT; m++) {
    static const char *const math[] = {"fp32", "tf32", "half"};
    if (e->conv_fwd[m] > 0) fprintf(out, " conv_%s_fwd %.3f;", math[m], e->conv_fwd[m]);
    if (e->conv_bwd[m] > 0) fprintf(out, " conv_%s_bwd %.3f;", math[m], e->conv_bwd[m]);
  }
  /* half GEMMs on unaligned operands (compute.h): shown where measured */
  if (e->matmul_unaligned_half > 0)
    fprintf(out, " matmul_unaligned_half %.3f;", e->matmul_unaligned_half);
  if (e->memory > 0) fprintf(out, " memory %.3f\n", e->memory);
  else fprintf(out, " memory -\n");
  /* of those, the ones the table marks as another GPU's, math's or
   * operation's measurement standing in (gpus.yaml efficiency_proxy), the
   * keys of one reason together (the H100's seven H200 values) */
  const char *sep = "  stand-ins  ";
  for (int k = 0; k < DS_GPU_EFF_KEYS; k++) {
    if (!ds__topocmd_first_of_reason(g, k)) continue;
    const char *why = g->eff_proxy[k];
    fprintf(out, "%s%s", sep, ds_gpu_efficiency_keys[k]);
    for (int j = k + 1; j < DS_GPU_EFF_KEYS; j++)
      if (strcmp(g->eff_proxy[j], why) == 0) fprintf(out, ", %s", ds_gpu_efficiency_keys[j]);
    fprintf(out, " (%s)", why);
    sep = "; ";
  }
  if (sep[0] == ';') fputc('\n', out);
}

static int same_group(const struct ds_link *a, const struct ds_link *b) {
  return strcmp(a->kind, b->kind) == 0 && a->bw_bytes_per_s == b->bw_bytes_per_s &&
         a->lat_ns == b->lat_ns;
}

ds_status ds__topocmd_link_groups(const struct ds_topo *t, struct ds__topocmd_link_groups *g,
                                  struct ds_err *err) {
  size_t cap = t->n_links > 0 ? (size_t)t->n_links : 1;
  *g = (struct ds__topocmd_link_groups){.first = malloc(cap * sizeof *g->first),
                                        .count = calloc(cap, sizeof *g->count)};
  if (!g->first || !g->count) {
    ds__topocmd_link_groups_free(g);
    return ds_err_set(err, DS_ENOMEM, "out of memory");
  }
  for (int32_t i = 0; i < t->n_links; i++) {
    int32_t k = 0;
    while (k < g->n && !same_group(&t->links[g->first[k]], &t->links[i])) k++;
    if (k == g->n) g->first[g->n++] = i;
    g->count[k]++;
  }
  return DS_OK;
}

void ds__topocmd_link_groups_free(struct ds__topocmd_link_groups *g) {
  free(g->first);
  free(g->count);
  *g = (struct ds__topocmd_link_groups){0};
}

static void print_devices_and_links(FILE *out, const struct ds_topo *t) {
  int32_t count[DS_VERTEX_KIND_COUNT] = {0};
  for (int32_t v = 0; v < t->n_vertices; v++) count[t->vertex_kind[v]]++;
  fprintf(out, "  devices    ");
  for (int k = 0; k < DS_VERTEX_KIND_COUNT; k++)
    fprintf(out, "%s%d %s", k ? ", " : "", count[k], ds_vertex_kind_name((enum ds_vertex_kind)k));
  fprintf(out, "  (intra-node %s%s%s)\n", t->intra_template,
          t->n_nodes > 1 ? ", inter-node " : "", t->n_nodes > 1 ? t->inter_template : "");
  /* a gpus_per_switch that does not divide gpus_per_node leaves the node's
   * last PCIe switch partly filled (topo.c): "3+3+2" for 8 GPUs by 3 */
  int32_t per = t->gpus_per_switch, gpn = t->gpus_per_node;
  if (per > 0 && gpn % per != 0) {
    fprintf(out, "  pcie       %d switches per node of ", (gpn + per - 1) / per);
    for (int32_t a = 0; a < gpn; a += per)
      fprintf(out, "%s%d", a ? "+" : "", a + per <= gpn ? per : gpn - a);
    fprintf(out, " GPUs (gpus_per_switch %d does not divide gpus_per_node %d: the last "
            "switch holds the rest)\n", per, gpn);
  }
  /* the key NCCL's tuning reads across nodes (topo.h ds_cpu_vendor) */
  fprintf(out, "  cpu_vendor %s (NCCL's LL cap across nodes and network overhead)\n",
          ds_topo_cpu_vendor_name(t->cpu_vendor));
  /* Links grouped by (kind, bandwidth, latency): a handful of lines even
   * for thousands of GPUs. */
  struct ds__topocmd_link_groups groups;
  struct ds_err ignored = {0};
  if (ds__topocmd_link_groups(t, &groups, &ignored) != DS_OK) return;
  fprintf(out, "  links      %d directed\n", t->n_links);
  for (int32_t g = 0; g < groups.n; g++) {
    const struct ds_link *r = &t->links[groups.first[g]];
    int32_t n = groups.count[g];
    char a[160], b[160];
    ds__topocmd_vertex_label(t, r->src, 1, a, sizeof a);
    ds__topocmd_vertex_label(t, r->dst, 1, b, sizeof b);
    fprintf(out, "             %6d x %-6s %8.1f GB/s %6.2f us   e.g. %s -> %s\n", n, r->kind,
            r->bw_bytes_per_s / 1e9, r->lat_ns / 1e3, a, b);
  }
  ds__topocmd_link_groups_free(&groups);
}

static ds_status print_route(FILE *out, struct ds_topo *t, int32_t from, int32_t to,
                             struct ds_err *err) {
  int32_t links[DS_TOPO_MAX_ROUTE], n;
  DS_CHECK(ds_topo_route(t, from, to, links, DS_TOPO_MAX_ROUTE, &n, err));
  double bw = 0, lat = 0;
  char label[160];
  ds__topocmd_vertex_label(t, t->gpu_vertex[from], 1, label, sizeof label);
  fprintf(out, "  route      %s", label);
  for (int32_t k = 0; k < n; k++) {
    const struct ds_link *l = &t->links[links[k]];
    ds__topocmd_vertex_label(t, l->dst, 1, label, sizeof label);
    /* whole GB/s as such, else one decimal: 100 Gb/s is 12.5, not %.0f's 12 */
    double gbps = l->bw_bytes_per_s / 1e9;
    fprintf(out, " -[%s %.*f GB/s]-> %s", l->kind, fabs(gbps - round(gbps)) < 0.05 ? 0 : 1,
            gbps, label);
    if (k == 0 || l->bw_bytes_per_s < bw) bw = l->bw_bytes_per_s;
    lat += l->lat_ns;
  }
  fprintf(out, "\n             %d link%s, bottleneck %.1f GB/s, latency %.2f us\n", n,
          n == 1 ? "" : "s", bw / 1e9,
          lat / 1e3);
  return DS_OK;
}

/* Every GPU of the first `world` must reach every other one without
 * passing through a third GPU; checked for all pairs up to ALL_PAIRS_MAX
 * GPUs, else for GPU 0 to and from each. The first failure names both. */
static ds_status check_reachable(struct ds_topo *t, int32_t world, struct ds_err *err) {
  int32_t links[DS_TOPO_MAX_ROUTE], n;
  for (int32_t a = 0; a < world; a++)
    for (int32_t b = 0; b < world; b++) {
      if (a == b || (world > ALL_PAIRS_MAX && a != 0 && b != 0)) continue;
      DS_CHECK(ds_topo_route(t, a, b, links, DS_TOPO_MAX_ROUTE, &n, err));
    }
  return DS_OK;
}

/* The rings that run in the ring's place (coll.h rails): each rail's GPUs
 * when there are few, node boundaries marked '|'. */
static void print_rails(FILE *out, const struct ds_topo *t, const struct ds_ring *r) {
  if (r->n_rails == 0) return;
  if (r->n_rails > 1)
    fprintf(out, "  rails      %d rings, one per NIC, each carrying 1/%d of the buffer\n",
            r->n_rails, r->n_rails);
  else
    fprintf(out, "  rails      1 ring in another order (its bottleneck beats rank order's)\n");
  for (int32_t k = 0; k < r->n_rails && r->n <= RAILS_LISTED_MAX; k++) {
    const struct ds_ring *q = &r->rails[k];
    fprintf(out, "             rail %d: GPUs", k);
    for (int32_t p = 0; p < q->n; p++) {
      int boundary = p > 0 && t->vertex_node[t->gpu_vertex[q->gpus[p]]] !=
                                  t->vertex_node[t->gpu_vertex[q->gpus[p - 1]]];
      fprintf(out, "%s %d", boundary ? " |" : "", q->gpus[p]);
    }
    fprintf(out, "; bottleneck %.1f GB/s\n", q->min_bw / 1e9);
  }
  fprintf(out, "             2(N-1) steps cross %.2f us at most\n",
          ds_ring_path_lat_ns(r) / 1e3);
}

/* NCCL's channel rings (coll.h chan), each ring's GPUs when there are few. */
static void print_channels(FILE *out, const struct ds_ring *r) {
  const struct ds_ring *c = r->chan;
  if (!c) return;
  fprintf(out, "  channels   NCCL's search: %d ring%s of %.1f GB/s over %s (a GPU's links: "
          "%.1f GB/s)\n", c->n_rails, c->n_rails == 1 ? "" : "s",
          r->chan_speed_bytes_per_s / 1e9,
          r->chan_routed ? "direct links and routes" : "direct links",
          r->chan_total_bytes_per_s / 1e9);
  for (int32_t k = 0; k < c->n_rails && r->n <= RAILS_LISTED_MAX; k++) {
    fprintf(out, "             channel %d: GPUs", k);
    for (int32_t p = 0; p < c->n; p++) fprintf(out, " %d", c->rails[k].gpus[p]);
    fprintf(out, "\n");
  }
}

int32_t ds__topocmd_bound_link(const struct ds_topo *t, const struct ds_ring *r,
                               uint32_t *hops) {
  if (r->n_rails > 1) return -1;
  const struct ds_ring *q = r->n_rails == 1 ? &r->rails[0] : r;
  int32_t at = -1;
  for (int32_t a = 0; a < q->n_agg; a++) {
    double share = t->links[q->agg_links[a]].bw_bytes_per_s / q->agg_mult[a];
    if (q->agg_mult[a] > 1 && share < q->min_bw &&
        (at < 0 || share < t->links[q->agg_links[at]].bw_bytes_per_s / q->agg_mult[at]))
      at = a;
  }
  if (at < 0) return -1;
  *hops = q->agg_mult[at];
  return q->agg_links[at];
}

int32_t ds__topocmd_nccl_cap_link(const struct ds_topo *t, const struct ds_ring *r,
                                  double nccl_busbw, uint32_t *hops, double *cap_bw) {
  const struct ds_ring *q = ds_ring_nccl(r);
  int32_t link = ds__topocmd_bound_link(t, q, hops);
  if (link < 0 || !(ds_ring_busbw(q) < nccl_busbw)) return -1;
  *cap_bw = ds_ring_busbw(q);
  return link;
}

/* The bound's reason where hops of the ring that runs share the link
 * that sets it (ds__topocmd_bound_link): " (4 hops cross cpu0 -> cpu1,
 * 44.8 GB/s)"; reordered: the one rail that runs in rank order's place. */
static void print_shared_link(FILE *out, const struct ds_topo *t, const struct ds_ring *r) {
  int reordered = r->n_rails == 1;
  uint32_t hops = 0;
  int32_t link = ds__topocmd_bound_link(t, r, &hops);
  if (link < 0) {
    if (reordered) fputs(" (reordered)", out);
    return;
  }
  const struct ds_link *l = &t->links[link];
  char a[128], b[128];
  ds__topocmd_vertex_label(t, l->src, 1, a, sizeof a);
  ds__topocmd_vertex_label(t, l->dst, 1, b, sizeof b);
  fprintf(out, " (%s%u hops cross %s -> %s, %.1f GB/s)", reordered ? "reordered; " : "",
          hops, a, b, l->bw_bytes_per_s / 1e9);
}

static void print_ring(FILE *out, struct ds_topo *t, const struct ds_ring *r) {
  int32_t slow = 0;
  for (int32_t i = 1; i < r->n; i++)
    if (r->hop_bw[i] < r->hop_bw[slow]) slow = i;
  fprintf(out, "  ring       %d ranks on GPUs 0..%d in order; bottleneck hop %d -> %d at "
          "%.1f GB/s\n", r->n, r->n - 1, slow, (slow + 1) % r->n, r->min_bw / 1e9);
  fprintf(out, "             hop latency up to %.2f us; 2(N-1) steps cross %.2f us in all\n",
          r->max_lat_ns / 1e3, r->path_lat_ns / 1e3);
  print_rails(out, t, r);
  fprintf(out, "             plain ring all-reduce: busbw at most %.1f GB/s",
          ds_ring_busbw(r) / 1e9);
  if (r->n_rails > 1) fputs(" (the rails together)", out);
  else print_shared_link(out, t, r);
  fputc('\n', out);
  print_channels(out, r);
  struct ds_nccl_model m;
  struct ds_err why = {0};
  if (ds_nccl_model_build(t, r, DS_NCCL_EXTRA_NONE, &m, &why) == DS_OK) {
    double busbw = m.busbw_bytes_per_s[DS_PROTO_SIMPLE], cap = 0;
    fprintf(out, "             NCCL model (%s, %s): %d channel%s x %.1f GB/s = %.1f GB/s "
            "(Simple; %s)", ds_nccl_arch_name(m.arch),
            ds_nccl_constants_version(), m.channels, m.channels == 1 ? "" : "s",
            m.chan_bw_bytes_per_s / 1e9, busbw / 1e9,
            r->chan            ? "channels on the searched rings"
            : r->n_rails > 1   ? "channels spread over the rails"
                               : "all channels on the ring's routes");
    uint32_t hops = 0;
    int32_t link = ds__topocmd_nccl_cap_link(t, r, busbw, &hops, &cap);
    if (link >= 0) {
      char a[128], b[128];
      ds__topocmd_vertex_label(t, t->links[link].src, 1, a, sizeof a);
      ds__topocmd_vertex_label(t, t->links[link].dst, 1, b, sizeof b);
      fprintf(out, "; the ring runs at most %.1f GB/s, %u hops sharing %s -> %s", cap / 1e9,
              hops, a, b);
    }
    fputc('\n', out);
  } else {
    fprintf(out, "             NCCL model: unavailable (%s)\n", why.msg);
  }
}

/* Builds the ring over GPUs 0..world-1 (world >= 2) and what runs in its
 * place (coll.h ds_ring_build_rails). */
static ds_status build_ring(struct ds_topo *t, int32_t world, struct ds_ring *ring,
                            struct ds_err *err) {
  int32_t *gpus = malloc((size_t)world * sizeof *gpus);
  if (!gpus) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (int32_t i = 0; i < world; i++) gpus[i] = i;
  ds_status st = ds_ring_build_rails(t, gpus, world, ring, err);
  free(gpus);
  return st;
}

/* The JSON form: the route and the ring settled first, so an error leaves
 * no half-written object. */
static ds_status describe_json(FILE *out, struct ds_topo *t, int32_t from, int32_t to,
                               int32_t world, struct ds_err *err) {
  int32_t links[DS_TOPO_MAX_ROUTE], n = 0;
  if (from != to) DS_CHECK(ds_topo_route(t, from, to, links, DS_TOPO_MAX_ROUTE, &n, err));
  struct ds__topocmd_facts f = {.from = from, .to = to, .world = world, .route = links,
                                .n_route = n};
  if (world < 2) return ds__topocmd_json(out, t, &f, err);
  struct ds_ring ring;
  DS_CHECK(build_ring(t, world, &ring, err));
  f.ring = &ring;
  ds_status st = ds__topocmd_json(out, t, &f, err);
  ds_ring_release(&ring);
  return st;
}

static ds_status describe(FILE *out, struct ds_topo *t, const struct topocmd_options *o,
                          struct ds_err *err) {
  int32_t world = o->world ? o->world : t->n_gpus;
  if (world > t->n_gpus)
    return ds_err_set(err, DS_EUSAGE, "option --world-size: %d ranks but topology %s has %d GPUs",
                      world, t->name, t->n_gpus);
  int32_t from = o->from >= 0 ? o->from : 0;
  int32_t to = o->to >= 0 ? o->to : world - 1;
  if (from >= t->n_gpus || to >= t->n_gpus)
    return ds_err_set(err, DS_EUSAGE, "option %s: GPU %d does not exist (%s has GPUs 0..%d)",
                      from >= t->n_gpus ? "--from" : "--to", from >= t->n_gpus ? from : to,
                      t->name, t->n_gpus - 1);
  if (world > 1) DS_CHECK(check_reachable(t, world, err));
  if (o->json) return describe_json(out, t, from, to, world, err);
  /* the name and path are the user's: control characters shown as '?' */
  fputs("topology ", out);
  ds_textout_put_printable(out, t->name, 0);
  fputs(" (", out);
  ds_textout_put_printable(out, t->path, 0);
  fputs(")\n", out);
  print_gpu(out, t);
  print_devices_and_links(out, t);
  /* --from A --to A (or --from the last GPU, the default --to): said, where
   * the route section was left out without a word */
  if (from != to) {
    DS_CHECK(print_route(out, t, from, to, err));
  } else {
    char label[160];
    ds__topocmd_vertex_label(t, t->gpu_vertex[from], 1, label, sizeof label);
    fprintf(out, "  route      %s -> %s: the same GPU, no link crossed\n", label, label);
  }
  if (world < 2) {
    fprintf(out, "  ring       one rank: no communication\n");
    return DS_OK;
  }
  struct ds_ring ring;
  DS_CHECK(build_ring(t, world, &ring, err));
  print_ring(out, t, &ring);
  ds_ring_release(&ring);
  return DS_OK;
}

ds_status ds_topocmd_check_args(int argc, char **argv, struct ds_err *err) {
  if (argc > 1 && strcmp(argv[1], "import") == 0)
    return ds_importcmd_check_args(argc - 1, argv + 1, err);
  struct topocmd_options o;
  return ds_cli_parse_split(options, argc, argv, parse_words, &o, err);
}

ds_status ds_topocmd_main(int argc, char **argv, FILE *out, struct ds_err *err) {
  if (argc > 1 && strcmp(argv[1], "import") == 0)
    return ds_importcmd_main(argc - 1, argv + 1, out, err);
  struct topocmd_options o;
  DS_CHECK(ds_cli_parse_split(options, argc, argv, parse_words, &o, err));
  if (o.help) {
    fputs(usage, out);
    return DS_OK;
  }
  char path[4096], gpus_path[4096];
  DS_CHECK(ds_lookup_file("topologies", "topology", o.topo, path, sizeof path, err));
  DS_CHECK(ds_lookup_gpu_table(path, gpus_path, sizeof gpus_path, err));
  struct ds_topo *t = NULL;
  DS_CHECK(ds_topo_load(path, gpus_path, &t, err));
  ds_status st = describe(out, t, &o, err);
  ds_topo_free(t);
  return st;
}
