/*
 * `ddpsim buckets` (see bucketcmd.h). The layouts come from ds_ddp_plan,
 * the function the simulation itself runs, so what is printed is what is
 * simulated: iteration 0's layout (and iteration 1's under static_graph,
 * the same one) as phase iter0 (iter1), then the rebuilt one.
 */
#include "sim/cmd/bucketcmd.h"

#include <errno.h>
#include <string.h>

#include "base/cli.h"
#include "base/lookup.h"
#include "base/textout.h"
#include "base/values.h"
#include "base/units.h"
#include "sim/train/compute.h"
#include "sim/train/ddp.h"
#include "sim/train/model.h"


struct bucketcmd_options {
  const char *model;
  double bucket_mb;       /* 0: unset (PyTorch's default, 25 MiB, first 1 MiB) */
  double first_bucket_mb; /* 0: by the rule of bucket_mb */
  int find_unused, static_graph, help;
  enum ds_ddp_rules rules; /* --pytorch-version */
  enum ds_dtype dtype;     /* --dtype: the caps are bytes, so the type moves the layout */
};

static const char usage[] =
    "usage: ddpsim buckets [--model FILE|NAME] [--bucket-mb C] [--first-bucket-mb F]\n"
    "                      [--find-unused-parameters | --static-graph]\n"
    "                      [--pytorch-version current|1.4|1.9] [--dtype fp32|fp16|bf16]\n"
    "                      [--help]\n"
    "\n"
    "Prints DDP's bucket layouts of a model (default resnet50) as PyTorch builds\n"
    "them, one CSV row per bucket: model, rule, bucket_cap_mb (unset without\n"
    "--bucket-mb), first_bucket_mb (the first bucket's cap), phase (iter0, iter1\n"
    "under --static-graph, rebuilt), bucket (0 is all-reduced first), bytes (of\n"
    "--dtype's gradients, fp32 unless given: a run's --dtype fp16 or bf16 halves\n"
    "each parameter, so the caps hold more of them; --amp keeps fp32),\n"
    "params (registration indices, in the bucket's order). The format of\n"
    "tests/data/conformance/buckets.csv, with first_bucket_mb added. C and F: one\n"
    "size in MiB each, greater than 0 and at most 1e6 (no list: one layout). F is\n"
    "torch.distributed._DEFAULT_FIRST_BUCKET_BYTES assigned before DDP is built (no\n"
    "DDP argument sets it).\n"
    "--pytorch-version 1.4: PyTorch 1.4's rule (registration order, a 1 MiB first\n"
    "bucket whatever --bucket-mb, never rebuilt; rule pytorch1.4). 1.9: iteration 0\n"
    "binned so too, rebuilt in gradient-ready order with a 1 MiB first bucket\n"
    "(rule pytorch1.9; find_unused under --find-unused-parameters); the rebuild's\n"
    "1 MiB is C++'s, so 1.9 refuses F.\n"
    "--model: a file's path or a shipped name; - (standard input) is refused: a\n"
    "model is a YAML file found by path or name.\n";

static ds_status parse_mib(const char *flag, const char *v, double *out, struct ds_err *err) {
  /* one layout per call: a list or range would otherwise read as a bad size */
  if (strpbrk(v, ",:"))
    return ds_err_set(err, DS_EUSAGE, "option %s: ddpsim buckets takes one value (one "
                      "layout), got \"%s\" (a run sweeps a list: ddpsim --topo T %s %s)", flag, v,
                      flag, v);
  return ds_values_parse_item(flag, v, &ds_value_kind_mib, out, err);
}

/* Every flag buckets knows (base/cli.h): its parser refuses the others and
 * says which of these is missing its value. */
static const struct ds_cli_option options[] = {
    {"--model", 1, NULL}, {"--bucket-mb", 1, NULL}, {"--first-bucket-mb", 1, NULL},
    {"--pytorch-version", 1, NULL}, {"--find-unused-parameters", 0, NULL},
    {"--static-graph", 0, NULL}, {"--dtype", 1, NULL}, {"--help", 0, NULL},
    {"-h", 0, "--help"}, {NULL, 0, NULL}};

const struct ds_cli_option *ds_bucketcmd_options(void) { return options; }

/* ds_cli_parse_split's parse: the words, "--flag=value" already split. */
static ds_status parse_words(int argc, char **argv, void *ctx, struct ds_err *err) {
  struct bucketcmd_options *o = ctx;
  *o = (struct bucketcmd_options){.model = "resnet50"};
  struct ds_cli_walk w = {.program = "ddpsim buckets", .options = options};
  for (int i = 1; i < argc; i++) {
    const char *f, *v;
    DS_CHECK(ds_cli_next_word(&w, argc, argv, &i, &f, &v, err));
    if (ds_cli_is_help(f)) o->help = 1;
    else if (strcmp(f, "--model") == 0) {
      DS_CHECK(ds_lookup_refuse_stdin("models", "option --model", v, err));
      o->model = v;
    }
    else if (strcmp(f, "--bucket-mb") == 0) DS_CHECK(parse_mib(f, v, &o->bucket_mb, err));
    else if (strcmp(f, "--first-bucket-mb") == 0)
      DS_CHECK(parse_mib(f, v, &o->first_bucket_mb, err));
    else if (strcmp(f, "--find-unused-parameters") == 0) o->find_unused = 1;
    else if (strcmp(f, "--static-graph") == 0) o->static_graph = 1;
    else if (strcmp(f, "--dtype") == 0) {
      if (ds_dtype_parse(v, &o->dtype) != 0)
        return ds_err_set(err, DS_EUSAGE, "option --dtype: expected fp32, fp16 or bf16, got "
                          "\"%s\"", v);
    }
    else if (strcmp(f, "--pytorch-version") == 0) {
      if (strcmp(v, "1.4") == 0) o->rules = DS_DDP_RULES_TORCH_1_4;
      else if (strcmp(v, "1.9") == 0) o->rules = DS_DDP_RULES_TORCH_1_9;
      else if (strcmp(v, "current") == 0) o->rules = DS_DDP_RULES_CURRENT;
      else return ds_err_set(err, DS_EUSAGE, "option --pytorch-version: expected current, "
                             "1.4 or 1.9, got \"%s\"", v);
    } else return ds_cli_unhandled(err, f);
  }
  if (o->find_unused && o->static_graph)
    return ds_err_set(err, DS_EUSAGE, "--static-graph and --find-unused-parameters: choose "
                      "one (PyTorch ignores find_unused_parameters under a static graph)");
  if (o->rules == DS_DDP_RULES_TORCH_1_4 && o->static_graph)
    return ds_err_set(err, DS_EUSAGE, "option --pytorch-version 1.4: PyTorch 1.4's DDP has no "
                      "--static-graph");
  if (o->rules == DS_DDP_RULES_TORCH_1_9 && o->static_graph)
    return ds_err_set(err, DS_EUSAGE, "option --pytorch-version 1.9: PyTorch 1.9's DDP has no "
                      "static_graph argument");
  if (o->rules == DS_DDP_RULES_TORCH_1_9 && o->first_bucket_mb > 0)
    return ds_err_set(err, DS_EUSAGE, DS_DDP_TORCH19_FIRST_BUCKET_REFUSAL);
  return DS_OK;
}

/* Returns 0, or EOF on a write error (as traces/trace_write.c's writer). */
static int print_layout(FILE *out, const struct ds_model *m, const char *rule,
                        const char *cap, double first_mb, const char *phase,
                        const struct ds_buckets *bk) {
  for (int32_t b = 0; b < bk->n; b++) {
    /* the model file's name: user text */
    if (ds_textout_csv_field(out, m->name) != 0) return EOF;
    fprintf(out, ",%s,%s,%g,%s,%d,%.0f,", rule, cap, first_mb, phase, b, bk->b[b].bytes);
    for (int32_t k = 0; k < bk->b[b].count; k++)
      fprintf(out, "%s%d", k ? " " : "",
              ds_model_registration_index(m, bk->order[bk->b[b].first + k]));
    fputc('\n', out);
  }
  return ferror(out) ? EOF : 0;
}

ds_status ds_bucketcmd_check_args(int argc, char **argv, struct ds_err *err) {
  struct bucketcmd_options o;
  return ds_cli_parse_split(options, argc, argv, parse_words, &o, err);
}

ds_status ds_bucketcmd_main(int argc, char **argv, FILE *out, struct ds_err *err) {
  struct bucketcmd_options o;
  DS_CHECK(ds_cli_parse_split(options, argc, argv, parse_words, &o, err));
  if (o.help) {
    fputs(usage, out);
    return DS_OK;
  }
  char path[4096];
  DS_CHECK(ds_lookup_file("models", "model", o.model, path, sizeof path, err));
  struct ds_model *m = NULL;
  DS_CHECK(ds_model_load(path, &m, err));
  /* distributed.py: bucket_cap_mb unset means 25 MiB */
  double cap = o.bucket_mb > 0 ? o.bucket_mb : 25;
  double first = ds_ddp_first_bucket_mb(o.rules, o.bucket_mb, o.first_bucket_mb);
  struct ds_ddp_plan plan;
  ds_status st = ds_ddp_plan_rules(m, ds_dtype_bytes(o.dtype), first * DS_UNITS_MIB,
                                   cap * DS_UNITS_MIB, o.find_unused, o.static_graph, o.rules,
                                   &plan);
  if (st != DS_OK) {
    ds_model_free(m);
    return ds_err_set(err, st, "out of memory");
  }
  char cap_text[32];
  if (o.bucket_mb > 0) snprintf(cap_text, sizeof cap_text, "%g", o.bucket_mb);
  else snprintf(cap_text, sizeof cap_text, "unset");
  const char *rule = o.rules == DS_DDP_RULES_TORCH_1_4   ? "pytorch1.4"
                     : o.find_unused                     ? "find_unused"
                     : o.rules == DS_DDP_RULES_TORCH_1_9 ? "pytorch1.9"
                     : o.static_graph                  ? "static_graph"
                                                       : "default";
  fputs("model,rule,bucket_cap_mb,first_bucket_mb,phase,bucket,bytes,params\n", out);
  int failed =
      print_layout(out, m, rule, cap_text, first, "iter0", ds_ddp_plan_layout(&plan, 0));
  if (!failed && plan.rebuild_iter > 1)
    failed = print_layout(out, m, rule, cap_text, first, "iter1", ds_ddp_plan_layout(&plan, 1));
  if (!failed && plan.rebuild_iter > 0)
    failed = print_layout(out, m, rule, cap_text, first, "rebuilt", &plan.rebuilt);
  int e = errno;
  ds_ddp_plan_release(&plan);
  ds_model_free(m);
  if (failed)
    return ds_err_set(err, DS_EIO, "writing the bucket layout failed: %s",
                      e ? strerror(e) : "write error");
  return DS_OK;
}
