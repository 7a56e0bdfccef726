/*
 * Conformance with real PyTorch, for every shipped model (every models/NAME.yaml: a
 * model file without captured rows fails here), from what
 * tools/capture_conformance.py recorded of torch's own DDP reducer (gloo,
 * world size 1) into tests/data/conformance/:
 *   buckets.csv     the bucket layouts at bucket_cap_mb unset, 1, 5, 25 and
 *                   100, for the default, find_unused_parameters and
 *                   static_graph; `ddpsim buckets` must print the same rows
 *                   byte for byte (sizes, order, every parameter index);
 *   grad_ready.csv  the order gradients became ready in backward, which the
 *                   model file's grad_ready must list (the rebuilt buckets
 *                   follow it);
 *   saved_bytes.csv what autograd saved in one training forward.
 */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/ddp.h"
#include "sim/train/model.h"
#include "tests/support.h"

#define MAX_GROUPS 256
#define MAX_MODELS 32
/* capture_conformance.py's CAPS x RULES: the groups each model must have */
#define GROUPS_PER_MODEL (5 * 3)

/* The shipped models, models/NAME.yaml, by NAME; returns how many. */
static int shipped_models(char names[MAX_MODELS][32]) {
  glob_t g;
  cr_assert_eq(glob("models/*.yaml", 0, NULL, &g), 0, "no models/*.yaml");
  cr_assert_leq(g.gl_pathc, MAX_MODELS);
  int n = (int)g.gl_pathc;
  for (int i = 0; i < n; i++)
    cr_assert_eq(sscanf(g.gl_pathv[i], "models/%31[^.].yaml", names[i]), 1);
  globfree(&g);
  return n;
}

/* How many of the CSV's data lines start with "model,". */
static int rows_of(const char *text, const char *model) {
  size_t len = strlen(model);
  int rows = 0;
  for (const char *line = text; line && *line;) {
    if (line[0] != '#' && strncmp(line, model, len) == 0 && line[len] == ',') rows++;
    line = strchr(line, '\n');
    if (line) line++;
  }
  return rows;
}

struct group {
  char key[96];  /* "model,rule,cap" */
  char *rows;    /* the CSV's rows of this group, in file order */
  size_t len, cap;
};

static void append(struct group *g, const char *line, size_t n) {
  if (g->len + n + 1 > g->cap) {
    g->cap = (g->len + n + 1) * 2;
    g->rows = realloc(g->rows, g->cap);
    cr_assert_not_null(g->rows);
  }
  memcpy(g->rows + g->len, line, n);
  g->len += n;
  g->rows[g->len] = '\0';
}

/* CSV text (no quoted commas) less each line's fourth field; each data
 * line's must be `want` (",VALUE,"). */
static char *without_fourth_column(const char *csv, const char *want) {
  char *out = malloc(strlen(csv) + 1), *o = out;
  cr_assert_not_null(out);
  int header = 1;
  for (const char *line = csv; *line;) {
    const char *c = line;
    for (int k = 0; k < 3; k++) {
      c = strchr(c, ',');
      cr_assert_not_null(c, "%s", line);
      c++;
    }
    const char *end = strchr(c, ',');
    cr_assert_not_null(end, "%s", line);
    if (!header)
      cr_assert(strncmp(c - 1, want, strlen(want)) == 0, "first_bucket_mb: want %s in %.80s",
                want, line);
    header = 0;
    memcpy(o, line, (size_t)(c - line));
    o += c - line;
    const char *nl = strchr(end + 1, '\n');
    size_t rest = nl ? (size_t)(nl + 1 - (end + 1)) : strlen(end + 1);
    memcpy(o, end + 1, rest);
    o += rest;
    line = end + 1 + rest;
  }
  *o = '\0';
  return out;
}

Test(conformance, ddp_buckets_match_pytorch_byte_for_byte) {
  char *text = ds_test_slurp("tests/data/conformance/buckets.csv");
  static struct group groups[MAX_GROUPS];
  int n = 0, header = 0;
  for (char *line = text, *next; line && *line; line = next) {
    char *nl = strchr(line, '\n');
    next = nl ? nl + 1 : NULL;
    size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
    if (line[0] == '#') continue;
    if (!header) { /* the column list ddpsim buckets prints too */
      cr_assert(strncmp(line, "model,rule,bucket_cap_mb,phase,bucket,bytes,params\n", len) == 0);
      header = 1;
      continue;
    }
    /* the group: the first three fields */
    const char *c = line;
    for (int k = 0; k < 3; k++) c = strchr(c, ',') + 1;
    char key[96];
    snprintf(key, sizeof key, "%.*s", (int)(c - line - 1), line);
    int g = 0;
    while (g < n && strcmp(groups[g].key, key) != 0) g++;
    if (g == n) {
      cr_assert_lt(n, MAX_GROUPS);
      snprintf(groups[n++].key, sizeof groups[0].key, "%s", key);
    }
    append(&groups[g], line, len);
  }
  char models[MAX_MODELS][32];
  int n_models = shipped_models(models);
  for (int k = 0; k < n_models; k++) {
    int of_model = 0;
    size_t len = strlen(models[k]);
    for (int g = 0; g < n; g++)
      of_model += strncmp(groups[g].key, models[k], len) == 0 && groups[g].key[len] == ',';
    cr_assert_eq(of_model, GROUPS_PER_MODEL, "%s: %d groups in buckets.csv, want 5 caps x 3 rules",
                 models[k], of_model);
  }
  cr_assert_eq(n, n_models * GROUPS_PER_MODEL, "buckets.csv: a model that models/ does not ship");
  for (int g = 0; g < n; g++) {
    char model[32], rule[16], cap[16], args[256];
    cr_assert_eq(sscanf(groups[g].key, "%31[^,],%15[^,],%15s", model, rule, cap), 3);
    snprintf(args, sizeof args, "buckets --model %s%s%s%s", model,
             strcmp(cap, "unset") == 0 ? "" : " --bucket-mb ",
             strcmp(cap, "unset") == 0 ? "" : cap,
             strcmp(rule, "find_unused") == 0    ? " --find-unused-parameters"
             : strcmp(rule, "static_graph") == 0 ? " --static-graph"
                                                 : "");
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    /* ddpsim adds first_bucket_mb (column 4), which the capture has not:
     * PyTorch's rule is 1 MiB with bucket_cap_mb unset, else the cap. */
    char want_first[24];
    snprintf(want_first, sizeof want_first, ",%s,", strcmp(cap, "unset") == 0 ? "1" : cap);
    char *rows = without_fourth_column(r.out, want_first);
    cr_assert(strncmp(rows, "model,rule,bucket_cap_mb,phase,", 31) == 0, "%.60s", rows);
    cr_assert_str_eq(strchr(rows, '\n') + 1, groups[g].rows, "ddpsim %s differs from PyTorch",
                     args);
    free(rows);
    ds_test_release(&r);
    free(groups[g].rows);
  }
  free(text);
}

Test(conformance, saved_activation_bytes_match_pytorch) {
  /* tests/data/conformance/saved_bytes.csv: what autograd saved in one real
   * training forward at batch 2 (saved_tensors_hooks, unique storages).
   * The shipped models are the eager-attention exports, so each eager row
   * must be exactly what the simulator keeps for backward at that batch
   * (ds_ddp_saved_bytes in fp32, the activations of peak memory), the
   * loss's own aside: the capture excludes them (loss_act_bytes). */
  char *text = ds_test_slurp("tests/data/conformance/saved_bytes.csv");
  int rows = 0;
  for (char *line = text, *next; line && *line; line = next) {
    char *nl = strchr(line, '\n');
    next = nl ? nl + 1 : NULL;
    char model[32], attention[16];
    long long batch;
    double total;
    if (line[0] == '#' || sscanf(line, "%31[^,],%15[^,],%lld,%lf", model, attention, &batch,
                                 &total) != 4)
      continue;
    if (strcmp(attention, "eager") != 0) continue;
    char path[64];
    snprintf(path, sizeof path, "models/%s.yaml", model);
    struct ds_model *m = ds_test_model(path);
    struct ds_precision fp32 = {4, 4, 0};
    double layers = ds_ddp_saved_bytes(m, &fp32, batch) - ds_loss_saved_bytes(m, &fp32, batch);
    cr_assert_float_eq(layers, total, 0.5, "%s", model);
    cr_assert_gt(m->loss_act_bytes, 0, "%s: the export records the loss's", model);
    ds_model_free(m);
    rows++;
  }
  char models[MAX_MODELS][32];
  int n_models = shipped_models(models);
  for (int k = 0; k < n_models; k++) {
    char eager[48];
    snprintf(eager, sizeof eager, "%.31s,eager", models[k]);
    cr_assert_eq(rows_of(text, eager), 1, "%s: saved_bytes.csv needs exactly one eager row",
                 models[k]);
  }
  cr_assert_eq(rows, n_models, "one eager row per shipped model");
  free(text);
}

Test(conformance, gradient_ready_order_matches_pytorch) {
  /* tests/data/conformance/grad_ready.csv: the order the AccumulateGrad
   * hooks fired in iteration 0's backward under real DDP (registration
   * indices); the model file's grad_ready (parameter names, measured by the
   * exporter without DDP) must be that order. */
  char *text = ds_test_slurp("tests/data/conformance/grad_ready.csv");
  char models[MAX_MODELS][32];
  int n_models = shipped_models(models);
  int total = 0;
  for (int k = 0; k < n_models; k++) {
    char path[64];
    snprintf(path, sizeof path, "models/%.31s.yaml", models[k]);
    struct ds_model *m = ds_test_model(path);
    cr_assert_eq(m->n_grad_ready, m->n_params, "%s: the file lists grad_ready", path);
    int32_t *csv = malloc((size_t)m->n_params * sizeof *csv);
    cr_assert_not_null(csv);
    int rows = 0;
    for (char *line = text, *next; line && *line; line = next) {
      char *nl = strchr(line, '\n');
      next = nl ? nl + 1 : NULL;
      char model[32];
      int position, param;
      if (line[0] == '#' || sscanf(line, "%31[^,],%d,%d", model, &position, &param) != 3 ||
          strcmp(model, models[k]) != 0)
        continue;
      cr_assert_eq(position, rows, "%s: grad_ready.csv's positions in order", models[k]);
      cr_assert_lt(rows, m->n_params, "%s: more rows than parameters", models[k]);
      csv[rows++] = param;
    }
    cr_assert_eq(rows, m->n_params, "%s: %d rows in grad_ready.csv for %d parameters", models[k],
                 rows, m->n_params);
    for (int32_t i = 0; i < m->n_params; i++)
      cr_assert_eq(ds_model_registration_index(m, m->grad_ready[i]), csv[i],
                   "%s: ready position %d: the file's parameter %d, PyTorch's %d", models[k], i,
                   ds_model_registration_index(m, m->grad_ready[i]), csv[i]);
    total += rows;
    free(csv);
    ds_model_free(m);
  }
  int lines = 0; /* data lines, the column line included */
  for (const char *c = text; *c; c++)
    lines += (c == text || c[-1] == '\n') && *c != '#';
  cr_assert_eq(total, lines - 1, "grad_ready.csv: rows of a model that models/ does not ship");
  free(text);
}
