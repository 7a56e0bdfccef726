/*
 * `ddpsim topo --format json`: the facts the text prints (topocmd.c), as one
 * JSON object for scripts. Both forms read the same loaded topology, route
 * and ring (topocmd_impl.h). Numbers are written whole -- the shortest
 * decimal that reads back as the simulator's double, as the summary's JSON
 * writes its factors (base/textout.h ds_textout_json_number) -- so the
 * text's rounded figures are these rounded; units are in the key names
 * (_gbps: 1e9 bytes/s, _us, _gib, _tflops), as the summary's keys carry
 * theirs. User strings (names, the path) go through ds_textout_json_string.
 * Top-level keys one per line, so `grep '"ring"'` finds one fact.
 */
#include <stdlib.h>
#include <string.h>

#include "base/textout.h"
#include "base/units.h"
#include "sim/cmd/topocmd_impl.h"
#include "sim/coll/nccl_model.h"
#include "sim/net/gpu_table.h"

static void num(FILE *out, const char *key, double x) {
  fprintf(out, "\"%s\": ", key);
  ds_textout_json_number(out, x);
}

/* A further member: ", " and then num's. */
static void next_num(FILE *out, const char *key, double x) {
  fputs(", ", out);
  num(out, key, x);
}

static void str(FILE *out, const char *key, const char *s) {
  fprintf(out, "\"%s\": ", key);
  if (s) ds_textout_json_string(out, s);
  else fputs("null", out);
}

static void label(FILE *out, const struct ds_topo *t, int32_t v) {
  char buf[160];
  ds__topocmd_vertex_label(t, v, 0, buf, sizeof buf);
  ds_textout_json_string(out, buf);
}

static void gpu_list(FILE *out, const int32_t *gpus, int32_t n) {
  fputc('[', out);
  for (int32_t p = 0; p < n; p++) fprintf(out, "%s%d", p ? ", " : "", gpus[p]);
  fputc(']', out);
}

static void write_gpu(FILE *out, const struct ds_topo *t) {
  const struct ds_gpu_spec *g = &t->gpu;
  fputs("  \"gpu\": {", out);
  str(out, "name", g->name);
  fprintf(out, ", \"count\": %d, \"nodes\": %d, \"gpus_per_node\": %d, \"sms\": %d, ",
          t->n_gpus, t->n_nodes, t->gpus_per_node, g->sms);
  num(out, "memory_gib", g->mem_bytes / DS_UNITS_GIB);
  next_num(out, "memory_gbps", g->mem_bw_bytes_per_s / 1e9);
  fputs(", \"dense_tflops\": {", out);
  num(out, "fp32", g->fp32_flops_per_s / 1e12);
  next_num(out, "tf32", g->tf32_flops_per_s / 1e12);
  next_num(out, "fp16", g->fp16_flops_per_s / 1e12);
  next_num(out, "bf16", g->bf16_flops_per_s / 1e12);
  fputs("}},\n", out);
  const struct ds_compute_params *c = &t->compute;
  fputs("  \"compute\": {", out);
  num(out, "flops_efficiency", c->flops_efficiency);
  next_num(out, "mem_efficiency", c->mem_efficiency);
  next_num(out, "kernel_overhead_us", c->kernel_overhead_ns / 1e3);
  fprintf(out, ", \"fp32_math\": \"%s\", ", c->fp32_uses_tf32 ? "tf32" : "fp32");
  num(out, "comm_interference", c->comm_interference);
  fputs("},\n", out);
  /* every key of the GPU table's efficiency map, null where nothing was
   * measured (the text's "-" and the keys it leaves out) */
  struct ds_gpu_efficiency e = g->eff; /* a copy: the slot accessor is not const */
  fputs("  \"measured_efficiency\": {", out);
  for (int k = 0; ds_gpu_efficiency_keys[k]; k++) {
    double v = *ds_gpu_efficiency_slot(&e, k);
    fprintf(out, "%s\"%s\": ", k ? ", " : "", ds_gpu_efficiency_keys[k]);
    if (v > 0) ds_textout_json_number(out, v);
    else fputs("null", out);
  }
  /* the stand-ins, keys of one reason together, as the text groups them */
  fputs("},\n  \"stand_ins\": [", out);
  const char *sep = "";
  for (int k = 0; k < DS_GPU_EFF_KEYS; k++) {
    if (!ds__topocmd_first_of_reason(g, k)) continue;
    const char *why = g->eff_proxy[k];
    fprintf(out, "%s{\"keys\": [\"%s\"", sep, ds_gpu_efficiency_keys[k]);
    for (int j = k + 1; j < DS_GPU_EFF_KEYS; j++)
      if (strcmp(g->eff_proxy[j], why) == 0) fprintf(out, ", \"%s\"", ds_gpu_efficiency_keys[j]);
    fputs("], ", out);
    str(out, "reason", why);
    fputc('}', out);
    sep = ", ";
  }
  fputs("],\n", out);
}

static ds_status write_devices_and_links(FILE *out, const struct ds_topo *t,
                                         struct ds_err *err) {
  int32_t count[DS_VERTEX_KIND_COUNT] = {0};
  for (int32_t v = 0; v < t->n_vertices; v++) count[t->vertex_kind[v]]++;
  fputs("  \"devices\": {", out);
  for (int k = 0; k < DS_VERTEX_KIND_COUNT; k++)
    fprintf(out, "%s\"%s\": %d", k ? ", " : "", ds_vertex_kind_name((enum ds_vertex_kind)k),
            count[k]);
  fputs("},\n  ", out);
  str(out, "intra_node", t->intra_template);
  fputs(",\n  ", out);
  str(out, "inter_node", t->n_nodes > 1 ? t->inter_template : NULL);
  fputs(",\n", out);
  /* each PCIe switch's GPUs in a node, the last one partly filled where
   * gpus_per_switch does not divide gpus_per_node; absent without PCIe
   * switches */
  int32_t per = t->gpus_per_switch, gpn = t->gpus_per_node;
  if (per > 0) {
    fputs("  \"pcie_switch_gpus\": [", out);
    for (int32_t a = 0; a < gpn; a += per)
      fprintf(out, "%s%d", a ? ", " : "", a + per <= gpn ? per : gpn - a);
    fputs("],\n", out);
  }
  fprintf(out, "  \"cpu_vendor\": \"%s\",\n", ds_topo_cpu_vendor_name(t->cpu_vendor));
  struct ds__topocmd_link_groups g;
  DS_CHECK(ds__topocmd_link_groups(t, &g, err));
  fprintf(out, "  \"links_directed\": %d,\n  \"link_groups\": [", t->n_links);
  for (int32_t k = 0; k < g.n; k++) {
    const struct ds_link *l = &t->links[g.first[k]];
    fprintf(out, "%s\n    {", k ? "," : "");
    str(out, "kind", l->kind);
    fprintf(out, ", \"count\": %d, ", g.count[k]);
    num(out, "bw_gbps", l->bw_bytes_per_s / 1e9);
    next_num(out, "lat_us", l->lat_ns / 1e3);
    fputs(", \"example\": [", out);
    label(out, t, l->src);
    fputs(", ", out);
    label(out, t, l->dst);
    fputs("]}", out);
  }
  fputs(g.n ? "\n  ],\n" : "],\n", out);
  ds__topocmd_link_groups_free(&g);
  return DS_OK;
}

/* from == to: no link, no bottleneck (null), latency 0. */
static void write_route(FILE *out, const struct ds_topo *t, const struct ds__topocmd_facts *f) {
  fprintf(out, "  \"route\": {\"from_gpu\": %d, \"to_gpu\": %d, \"from\": ", f->from, f->to);
  label(out, t, t->gpu_vertex[f->from]);
  fputs(", \"to\": ", out);
  label(out, t, t->gpu_vertex[f->to]);
  fprintf(out, ", \"hops\": %d, \"path\": [", f->n_route);
  double bw = 0, lat = 0;
  for (int32_t k = 0; k < f->n_route; k++) {
    const struct ds_link *l = &t->links[f->route[k]];
    fprintf(out, "%s{", k ? ", " : "");
    str(out, "kind", l->kind);
    next_num(out, "bw_gbps", l->bw_bytes_per_s / 1e9);
    fputs(", \"to\": ", out);
    label(out, t, l->dst);
    fputc('}', out);
    if (k == 0 || l->bw_bytes_per_s < bw) bw = l->bw_bytes_per_s;
    lat += l->lat_ns;
  }
  fputs("], \"bottleneck_gbps\": ", out);
  if (f->n_route > 0) ds_textout_json_number(out, bw / 1e9);
  else fputs("null", out);
  next_num(out, "lat_us", lat / 1e3);
  fputs("},\n", out);
}

/* The ring, the rails that run in its place ([] where it runs itself) and
 * the bound on a plain ring all-reduce's busbw, with the link that sets it
 * where several hops cross one (null where none does: the text's "4 hops
 * cross cpu0 -> cpu1, 44.8 GB/s"). */
static void write_ring(FILE *out, const struct ds_topo *t, const struct ds_ring *r) {
  int32_t slow = 0;
  for (int32_t i = 1; i < r->n; i++)
    if (r->hop_bw[i] < r->hop_bw[slow]) slow = i;
  const char *order = r->n_rails > 1 ? "rails" : r->n_rails == 1 ? "reordered" : "rank";
  fprintf(out, "  \"ring\": {\"ranks\": %d, \"runs_as\": \"%s\", \"bottleneck_hop\": [%d, %d], ",
          r->n, order, slow, (slow + 1) % r->n);
  num(out, "bottleneck_gbps", r->min_bw / 1e9);
  next_num(out, "max_hop_lat_us", r->max_lat_ns / 1e3);
  next_num(out, "steps_lat_us", r->path_lat_ns / 1e3);
  next_num(out, "busbw_bound_gbps", ds_ring_busbw(r) / 1e9);
  uint32_t hops = 0;
  int32_t link = ds__topocmd_bound_link(t, r, &hops);
  fputs(", \"busbw_bound_link\": ", out);
  if (link >= 0) {
    fputs("{\"from\": ", out);
    label(out, t, t->links[link].src);
    fputs(", \"to\": ", out);
    label(out, t, t->links[link].dst);
    fprintf(out, ", \"hops\": %u, ", hops);
    num(out, "bw_gbps", t->links[link].bw_bytes_per_s / 1e9);
    fputc('}', out);
  } else {
    fputs("null", out);
  }
  fputs(", \"rails\": [", out);
  for (int32_t k = 0; k < r->n_rails; k++) {
    const struct ds_ring *q = &r->rails[k];
    fprintf(out, "%s{\"gpus\": ", k ? ", " : "");
    gpu_list(out, q->gpus, q->n);
    next_num(out, "bottleneck_gbps", q->min_bw / 1e9);
    fputc('}', out);
  }
  fputs("], \"rails_steps_lat_us\": ", out);
  if (r->n_rails > 0) ds_textout_json_number(out, ds_ring_path_lat_ns(r) / 1e3);
  else fputs("null", out);
  fputs("},\n", out);
}

/* NCCL's searched channel rings (null where the search does not run) and
 * its model's channels (null, and why, where it has none). */
static void write_channels(FILE *out, struct ds_topo *t, const struct ds_ring *r) {
  const struct ds_ring *c = r->chan;
  fputs("  \"channels\": ", out);
  if (c) {
    fprintf(out, "{\"rings\": %d, ", c->n_rails);
    num(out, "ring_gbps", r->chan_speed_bytes_per_s / 1e9);
    fprintf(out, ", \"over_routes\": %s, ", r->chan_routed ? "true" : "false");
    num(out, "gpu_links_gbps", r->chan_total_bytes_per_s / 1e9);
    fputs(", \"orders\": [", out);
    for (int32_t k = 0; k < c->n_rails; k++) {
      fputs(k ? ", " : "", out);
      gpu_list(out, c->rails[k].gpus, c->n);
    }
    fputs("]},\n", out);
  } else {
    fputs("null,\n", out);
  }
  struct ds_nccl_model m;
  struct ds_err why = {0};
  fputs("  \"nccl_model\": ", out);
  if (ds_nccl_model_build(t, r, DS_NCCL_EXTRA_NONE, &m, &why) == DS_OK) {
    fprintf(out, "{\"arch\": \"%s\", \"constants\": \"%s\", \"protocol\": \"simple\", "
            "\"channels\": %d, ", ds_nccl_arch_name(m.arch), ds_nccl_constants_version(),
            m.channels);
    double busbw = m.busbw_bytes_per_s[DS_PROTO_SIMPLE], cap = 0;
    num(out, "channel_gbps", m.chan_bw_bytes_per_s / 1e9);
    next_num(out, "busbw_gbps", busbw / 1e9);
    fprintf(out, ", \"placement\": \"%s\"", r->chan ? "searched_rings"
                                          : r->n_rails > 1 ? "rails" : "ring_routes");
    /* the text's "the ring runs at most 11.2 GB/s, 4 hops sharing cpu0 -> cpu1" */
    uint32_t hops = 0;
    int32_t link = ds__topocmd_nccl_cap_link(t, r, busbw, &hops, &cap);
    fputs(", \"ring_cap\": ", out);
    if (link >= 0) {
      fputc('{', out);
      num(out, "busbw_gbps", cap / 1e9);
      fputs(", \"from\": ", out);
      label(out, t, t->links[link].src);
      fputs(", \"to\": ", out);
      label(out, t, t->links[link].dst);
      fprintf(out, ", \"hops\": %u}", hops);
    } else {
      fputs("null", out);
    }
    fputc('}', out);
    fputs(",\n  \"nccl_model_unavailable\": null\n", out);
  } else {
    fputs("null,\n  ", out);
    str(out, "nccl_model_unavailable", why.msg);
    fputc('\n', out);
  }
}

ds_status ds__topocmd_json(FILE *out, struct ds_topo *t, const struct ds__topocmd_facts *f,
                           struct ds_err *err) {
  fputs("{\n  ", out);
  str(out, "topology", t->name);
  fputs(",\n  ", out);
  str(out, "file", t->path);
  fputs(",\n", out);
  write_gpu(out, t);
  DS_CHECK(write_devices_and_links(out, t, err));
  write_route(out, t, f);
  fprintf(out, "  \"world_size\": %d,\n", f->world);
  if (!f->ring) {
    /* one rank: no ring, no channels (the text's "no communication") */
    fputs("  \"ring\": null,\n  \"channels\": null,\n  \"nccl_model\": null,\n"
          "  \"nccl_model_unavailable\": \"one rank: no communication\"\n", out);
  } else {
    write_ring(out, t, f->ring);
    write_channels(out, t, f->ring);
  }
  fputs("}\n", out);
  return DS_OK;
}
