/*
 * Conformance with real PyTorch: DDP's bucket layouts of the six shipped
 * models, captured from torch's own reducer (gloo, world size 1) by
 * tools/capture_conformance.py into tests/data/conformance/buckets.csv, at
 * bucket_cap_mb unset, 1, 5, 25 and 100, for the default,
 * find_unused_parameters and static_graph; `ddpsim buckets` must print the
 * same rows byte for byte (sizes, order, every parameter index).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/ddp.h"
#include "sim/train/model.h"
#include "tests/support.h"

#define MAX_GROUPS 128

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
  cr_assert_geq(n, 90, "6 models x 5 caps x 3 rules, got %d groups", n);
  for (int g = 0; g < n; g++) {
    char model[32], rule[16], cap[16], args[256];
    cr_assert_eq(sscanf(groups[g].key, "%31[^,],%15[^,],%15s", model, rule, cap), 3);
    snprintf(args, sizeof args, "buckets --model %s%s%s%s", model,
             strcmp(cap, "unset") == 0 ? "" : " --bucket-mb ",
             strcmp(cap, "unset") == 0 ? "" : cap,
             strcmp(rule, "find_unused") == 0    ? " --find-unused-parameters"
             : strcmp(rule, "static_graph") == 0 ? " --static-graph"
                                                 : "");
    struct ds_test_result r = ds_test_run("", ds_test_ddpsim(), args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    const char *rows = strchr(r.out, '\n') + 1;
    cr_assert_str_eq(rows, groups[g].rows, "ddpsim %s differs from PyTorch", args);
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
  cr_assert_eq(rows, 6, "the six shipped models");
  free(text);
}
