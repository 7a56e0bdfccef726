/*
 * Option parsing for `ddpsim`. Every flag is listed once in OPTION_MAP
 * with what its value must look like; the parser and the unknown-flag
 * message both come from it.
 */
#include "options.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

static const char usage[] =
    "usage: ddpsim --topo TOPOLOGY [options]\n"
    "\n"
    "Simulates data-parallel training iterations and prints the predicted\n"
    "iteration time with its breakdown.\n"
    "\n"
    "  --topo FILE|NAME       topology YAML (a path, or a name in topologies/)\n"
    "  --model FILE|NAME      model YAML (default resnet50)\n"
    "  --strategy ddp         training strategy (this version: ddp)\n"
    "  --bucket-mb LIST       DDP bucket cap(s) in MiB, e.g. 25 or 1,5,25 (default 25)\n"
    "  --first-bucket-mb X    cap of the first rebuilt bucket in MiB (default 1)\n"
    "  --world-size N         ranks, one per GPU (default: every GPU of the topology)\n"
    "  --batch N              samples per GPU (default: the model's default_batch)\n"
    "  --iters N              iterations to simulate, >= 2 (default 2); the last is reported\n"
    "  --dtype fp32|fp16|bf16 training dtype of parameters, gradients, activations (default fp32)\n"
    "  --seed N               recorded in outputs (this version has no random inputs)\n"
    "  --format text|csv|json summary format (default text)\n"
    "  --trace FILE.csv       write the predicted timeline of every iteration\n"
    "  --schedule FILE.csv    write the steady-state iteration's schedule\n"
    "  --coll-model auto|flow|aggregate\n"
    "                         ring all-reduce per flow, or aggregated over symmetric\n"
    "                         hops (default auto: flow up to 64 ranks)\n"
    "  --net maxmin|alpha-beta  link sharing model (default maxmin)\n"
    "  --ring-chunks N        pipelined chunks per ring step, flow model only (default 1)\n"
    "  --algo ring|auto       all-reduce algorithm (default ring). auto: NCCL's choice by\n"
    "                         its cost model (v2.30.7; ring protocols only)\n"
    "  --proto none|LL|LL128|Simple|auto  NCCL protocol of the ring (default: none with\n"
    "                         --algo ring, auto with --algo auto). none: the plain ring\n"
    "                         (links' own bandwidth and latency); a protocol: NCCL's\n"
    "                         channels, wire overhead and latencies (docs/collectives.md)\n"
    "  --nccl-extra measured|none  with a protocol: add the per-call effects NCCL's model\n"
    "                         leaves out, fitted to nccl-tests (default measured)\n"
    "  --calib FILE           a calibration file (ddpreal calibrate): its compute\n"
    "                         factors replace the topology's\n"
    "DDP options (PyTorch's):\n"
    "  --no-overlap           every all-reduce waits for the end of backward (baseline)\n"
    "  --no-sync K            K-1 micro-steps accumulate without communication, then one\n"
    "                         synchronises and the optimizer steps (default 1: off)\n"
    "  --grad-as-bucket-view  gradient_as_bucket_view=True: no separate bucket copies\n"
    "  --find-unused-parameters  buckets in reverse registration order from iteration 0,\n"
    "                         never rebuilt (the graph traversal's CPU cost is not modelled)\n"
    "  --static-graph         static_graph=True: same buckets and timeline as the default\n"
    "  --help, --version\n";

const char *ds_options_usage(void) { return usage; }

static ds_status bad(struct ds_err *err, const char *flag, const char *what,
                     const char *got) {
  return ds_err_set(err, DS_EUSAGE, "option %s: expected %s, got \"%s\"", flag,
                    what, got);
}

static ds_status parse_int(const char *flag, const char *v, int64_t lo,
                           int64_t hi, int64_t *out, struct ds_err *err) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end != '\0' || x < lo || x > hi) {
    char what[96];
    snprintf(what, sizeof what, "an integer from %" PRId64 " to %" PRId64, lo, hi);
    return bad(err, flag, what, v);
  }
  *out = x;
  return DS_OK;
}

static ds_status parse_mb(const char *flag, const char *v, double *out,
                          struct ds_err *err) {
  if (ds_units_parse_number(v, out) != DS_OK || !(*out > 0) || *out > 1e6)
    return bad(err, flag, "a size in MiB greater than 0 (e.g. 25 or 0.5)", v);
  return DS_OK;
}

/* Splits by hand rather than with strtok, which would silently skip the
 * empty item in "1,,2". */
static ds_status parse_list(const char *flag, const char *v,
                            struct ds_options *o, struct ds_err *err) {
  const char *expected = "a comma-separated list of sizes in MiB, e.g. 1,5,25";
  o->n_bucket_mb = 0;
  const char *tok = v;
  for (;;) {
    const char *end = strchr(tok, ',');
    size_t len = end ? (size_t)(end - tok) : strlen(tok);
    char item[64];
    if (len == 0 || len >= sizeof item) return bad(err, flag, expected, v);
    if (o->n_bucket_mb == DS_MAX_SWEEP)
      return ds_err_set(err, DS_EUSAGE, "option %s: at most %d values", flag,
                        DS_MAX_SWEEP);
    memcpy(item, tok, len);
    item[len] = '\0';
    DS_CHECK(parse_mb(flag, item, &o->bucket_mb[o->n_bucket_mb++], err));
    if (!end) return DS_OK;
    tok = end + 1;
  }
}

static ds_status parse_choice(const char *flag, const char *v,
                              const char *const names[], int n, int *out,
                              struct ds_err *err) {
  char what[128] = "";
  for (int i = 0; i < n; i++) {
    if (strcmp(v, names[i]) == 0) {
      *out = i;
      return DS_OK;
    }
    size_t used = strlen(what);
    snprintf(what + used, sizeof what - used, "%s%s", i ? " or " : "one of ", names[i]);
  }
  return bad(err, flag, what, v);
}

/* X(flag, takes_value) */
#define OPTION_MAP(X)                                                     \
  X("--topo", 1) X("--model", 1) X("--strategy", 1) X("--bucket-mb", 1)   \
  X("--first-bucket-mb", 1) X("--world-size", 1) X("--batch", 1)          \
  X("--iters", 1) X("--dtype", 1) X("--seed", 1) X("--format", 1)         \
  X("--trace", 1) X("--schedule", 1) X("--coll-model", 1) X("--net", 1)   \
  X("--ring-chunks", 1) X("--algo", 1) X("--proto", 1) X("--nccl-extra", 1) \
  X("--calib", 1) X("--no-overlap", 0) X("--no-sync", 1) X("--grad-as-bucket-view", 0)         \
  X("--find-unused-parameters", 0) X("--static-graph", 0)                      \
  X("--help", 0) X("--version", 0) X("-h", 0)

static int takes_value(const char *flag, int *known) {
#define DS__OPT_CHECK(f, v) \
  if (strcmp(flag, f) == 0) { *known = 1; return v; }
  OPTION_MAP(DS__OPT_CHECK)
#undef DS__OPT_CHECK
  *known = 0;
  return 0;
}

static ds_status apply(struct ds_options *o, const char *flag, const char *v,
                       int *proto_set, struct ds_err *err) {
  int64_t x;
  int c;
  if (strcmp(flag, "--topo") == 0) o->topo = v;
  else if (strcmp(flag, "--model") == 0) o->model = v;
  else if (strcmp(flag, "--strategy") == 0) {
    if (strcmp(v, "ddp") != 0)
      return ds_err_set(err, DS_EUSAGE,
                        "option --strategy: this version simulates ddp only, got \"%s\" "
                        "(dp, ps and single are planned)", v);
    o->strategy = v;
  } else if (strcmp(flag, "--bucket-mb") == 0) DS_CHECK(parse_list(flag, v, o, err));
  else if (strcmp(flag, "--first-bucket-mb") == 0) DS_CHECK(parse_mb(flag, v, &o->first_bucket_mb, err));
  else if (strcmp(flag, "--world-size") == 0) {
    DS_CHECK(parse_int(flag, v, 1, 1 << 20, &x, err));
    o->world_size = (int32_t)x;
  } else if (strcmp(flag, "--batch") == 0) {
    DS_CHECK(parse_int(flag, v, 1, 1 << 20, &x, err));
    o->batch = x;
  } else if (strcmp(flag, "--iters") == 0) {
    DS_CHECK(parse_int(flag, v, 2, 1000, &x, err));
    o->iters = (int32_t)x;
  } else if (strcmp(flag, "--seed") == 0) {
    DS_CHECK(parse_int(flag, v, 0, INT64_MAX, &x, err));
    o->seed = (uint64_t)x;
  } else if (strcmp(flag, "--dtype") == 0) {
    if (ds_dtype_parse(v, &o->dtype) != 0) return bad(err, flag, "fp32, fp16 or bf16", v);
  } else if (strcmp(flag, "--format") == 0) {
    static const char *const names[] = {"text", "csv", "json"};
    DS_CHECK(parse_choice(flag, v, names, 3, &c, err));
    o->format = (enum ds_format)c;
  } else if (strcmp(flag, "--trace") == 0) o->trace = v;
  else if (strcmp(flag, "--schedule") == 0) o->schedule = v;
  else if (strcmp(flag, "--coll-model") == 0) {
    static const char *const names[] = {"auto", "flow", "aggregate"};
    DS_CHECK(parse_choice(flag, v, names, 3, &c, err));
    o->coll_model = (enum ds_coll_choice)c;
  } else if (strcmp(flag, "--net") == 0) {
    static const char *const names[] = {"maxmin", "alpha-beta"};
    DS_CHECK(parse_choice(flag, v, names, 2, &c, err));
    o->net_mode = c == 0 ? DS_NET_MAXMIN : DS_NET_CONSTANT;
  } else if (strcmp(flag, "--ring-chunks") == 0) {
    DS_CHECK(parse_int(flag, v, 1, 4096, &x, err));
    o->ring_chunks = (int32_t)x;
  } else if (strcmp(flag, "--algo") == 0) {
    static const char *const names[] = {"ring", "auto"};
    DS_CHECK(parse_choice(flag, v, names, 2, &c, err));
    o->algo_auto = c == 1;
  } else if (strcmp(flag, "--proto") == 0) {
    *proto_set = 1;
    if (strcmp(v, "none") == 0) o->proto_choice = DS_PROTO_CHOICE_NONE;
    else if (strcmp(v, "auto") == 0) o->proto_choice = DS_PROTO_CHOICE_AUTO;
    else if (ds_proto_parse(v, &o->proto_fixed) == DS_OK) o->proto_choice = DS_PROTO_CHOICE_FIXED;
    else return bad(err, flag, "one of none, LL, LL128, Simple, auto", v);
  } else if (strcmp(flag, "--nccl-extra") == 0) {
    static const char *const names[] = {"none", "measured"};
    DS_CHECK(parse_choice(flag, v, names, 2, &c, err));
    o->nccl_extra = c;
  } else if (strcmp(flag, "--calib") == 0) o->calib = v;
  else if (strcmp(flag, "--no-overlap") == 0) o->no_overlap = 1;
  else if (strcmp(flag, "--no-sync") == 0) {
    DS_CHECK(parse_int(flag, v, 1, 1024, &x, err));
    o->no_sync = (int32_t)x;
  } else if (strcmp(flag, "--grad-as-bucket-view") == 0) o->grad_as_bucket_view = 1;
  else if (strcmp(flag, "--find-unused-parameters") == 0) o->find_unused_parameters = 1;
  else if (strcmp(flag, "--static-graph") == 0) o->static_graph = 1;
  else if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) o->help = 1;
  else if (strcmp(flag, "--version") == 0) o->version = 1;
  return DS_OK;
}

ds_status ds_options_parse(int argc, char **argv, struct ds_options *o,
                           struct ds_err *err) {
  memset(o, 0, sizeof *o);
  o->model = "resnet50";
  o->strategy = "ddp";
  o->bucket_mb[0] = 25;
  o->n_bucket_mb = 1;
  o->first_bucket_mb = 1;
  o->iters = 2;
  o->seed = 1;
  o->ring_chunks = 1;
  o->nccl_extra = 1;
  o->no_sync = 1;
  int proto_set = 0;
  for (int i = 1; i < argc; i++) {
    char flag[64];
    const char *arg = argv[i], *value = NULL, *eq = strchr(arg, '=');
    if (strncmp(arg, "--", 2) == 0 && eq) {
      snprintf(flag, sizeof flag, "%.*s", (int)(eq - arg), arg);
      value = eq + 1;
    } else {
      snprintf(flag, sizeof flag, "%s", arg);
    }
    int known;
    int needs = takes_value(flag, &known);
    if (!known)
      return ds_err_set(err, DS_EUSAGE, "unknown option \"%s\" (see ddpsim --help)", arg);
    if (needs && !value) {
      if (i + 1 >= argc)
        return ds_err_set(err, DS_EUSAGE, "option %s needs a value", flag);
      value = argv[++i];
    } else if (!needs && value) {
      return ds_err_set(err, DS_EUSAGE, "option %s takes no value", flag);
    }
    DS_CHECK(apply(o, flag, value, &proto_set, err));
  }
  if (o->help || o->version) return DS_OK;
  if (o->static_graph && o->find_unused_parameters)
    return ds_err_set(err, DS_EUSAGE,
                      "--static-graph and --find-unused-parameters: choose one (PyTorch "
                      "ignores find_unused_parameters under a static graph)");
  if (!proto_set)
    o->proto_choice = o->algo_auto ? DS_PROTO_CHOICE_AUTO : DS_PROTO_CHOICE_NONE;
  if (o->algo_auto && o->proto_choice == DS_PROTO_CHOICE_NONE)
    return ds_err_set(err, DS_EUSAGE,
                      "option --proto: none is the plain ring, not an NCCL choice: use "
                      "--algo ring --proto none, or a protocol with --algo auto");
  if (!o->topo)
    return ds_err_set(err, DS_EUSAGE, "missing --topo (e.g. --topo 4gpu.yaml; see ddpsim --help)");
  if ((o->trace || o->schedule) && o->n_bucket_mb > 1)
    return ds_err_set(err, DS_EUSAGE,
                      "--trace and --schedule describe one configuration: give one --bucket-mb value");
  if (o->ring_chunks > 1 && o->coll_model == DS_COLL_CHOICE_AGGREGATE)
    return ds_err_set(err, DS_EUSAGE,
                      "--ring-chunks > 1 needs --coll-model flow (the aggregate ring moves one chunk per step)");
  return DS_OK;
}
