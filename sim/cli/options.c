/*
 * Option parsing for `ddpsim`. Every flag is listed once in OPTION_MAP
 * with what its value must look like; the parser and the unknown-flag
 * message both come from it.
 */
#include "sim/cli/options.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cli.h"
#include "base/lookup.h"
#include "base/units.h"
#include "base/values.h"
#include "sim/cli/options_check.h"
#include "sim/train/ddp.h"

static const char usage[] =
    "usage: ddpsim --topo TOPOLOGY [options]\n"
    "\n"
    "Simulates data-parallel training iterations and prints the predicted\n"
    "iteration time with its breakdown.\n"
    "\n"
    "  --topo FILE|NAME       topology YAML (a path, or a name in topologies/)\n"
    "  --model FILE|NAME      model YAML (default resnet50)\n"
    "                         (--topo, --model, --calib: files; - is refused)\n"
    "  --strategy LIST        training strategies, one row each: single, dp, ddp, ps, or a\n"
    "                         list like dp,ddp (default ddp); every row also gets its\n"
    "                         speedup over single at the same per-GPU batch\n"
    "  --bucket-mb LIST       DDP bucket_cap_mb, e.g. 25 or 1,5,25; the first bucket gets\n"
    "                         the same cap. Unset: 25 MiB, first bucket 1 MiB (PyTorch)\n"
    "  --first-bucket-mb X    cap of the first bucket in MiB (as assigning PyTorch's\n"
    "                         dist._DEFAULT_FIRST_BUCKET_BYTES; default: as above);\n"
    "                         not with --pytorch-version 1.9 (its rebuild keeps 1 MiB)\n"
    "  --world-size N         ranks, one per GPU (default: every GPU of the topology);\n"
    "                         several add scaling_efficiency_pct, each row's samples/s\n"
    "                         per rank over the smallest world size's (same strategy)\n"
    "  --batch N              samples per GPU (default: the model's default_batch)\n"
    "                         These four and the options of Sweeps below take a value,\n"
    "                         a list 1,5,25, or a range A:B:STEP (A, A+STEP, ... <= B)\n"
    "                         or A:B:logN (N log-spaced values); their cross product runs\n"
    "  --jobs N               configurations run in parallel (default: every core; 1: in\n"
    "                         process)\n"
    "  --jitter CV            per-kernel lognormal noise of mean 1 and this coefficient of\n"
    "                         variation on compute ops (GSL mt19937 seeded by --seed)\n"
    "  --samples N            seeds per configuration (--seed, --seed+1, ...); adds\n"
    "                         iter_p50_ms, iter_p95_ms, iter_p99_ms (default 1); N > 1\n"
    "                         needs --jitter CV > 0, the one random input\n"
    "  --plot FILE.png|.svg   a sweep of one option: iteration time and exposed\n"
    "                         communication against it; nothing swept: the reported\n"
    "                         iteration's timeline per rank and stream (gnuplot)\n"
    "  --iters N              iterations to simulate, 2 to 1000 (default 2); the last is\n"
    "                         reported\n"
    "  --seed N               seed of --jitter, 1 to 4294967295, recorded in outputs\n"
    "                         (default 1); needs --jitter CV > 0, as --samples does\n"
    "  --format text|csv|json summary format (default text)\n"
    "  --trace FILE.csv       write the predicted timeline of every iteration\n"
    "  --chrome FILE.json     the predicted timeline as Chrome trace JSON, a process per\n"
    "                         rank (ui.perfetto.dev); one configuration, no sweep\n"
    "  --schedule FILE.csv    write the steady-state iteration's schedule\n"
    "                         FILE - of these three: standard output, the file alone\n"
    "                         (the report then goes to standard error; one of them)\n"
    "  --coll-model auto|flow|aggregate\n"
    "                         ring, tree and NVLSTree all-reduces (hierarchical's\n"
    "                         ring phases too) per flow, or aggregated (one flow per\n"
    "                         ring or tree; default auto: flow up to 64 ranks)\n"
    "  --net maxmin|alpha-beta  link sharing model (default maxmin)\n"
    "  --ring-chunks N        pipelined chunks per step of the plain algorithms (ring,\n"
    "                         tree, hierarchical's rings, the chains of dp and of\n"
    "                         ddp's buffer broadcast), flow model only (default 1);\n"
    "                         refused where NCCL's protocols run ddp's collectives\n"
    "                         (--algo auto, the default), which pipeline by NCCL's own\n"
    "                         chunks (give --algo ring), and where ddp's run has no\n"
    "                         ring step (--algo direct or reduce-broadcast without a\n"
    "                         buffer broadcast), as in ddpsim collective\n"
    ;

/* All-reduce algorithm and protocol (NCCL's model) and calibration. */
static const char usage_nccl[] =
    "  --algo ALGO            all-reduce: auto (default): NCCL's algorithm and protocol\n"
    "                         per bucket (v2.30.7 model; the plain ring on a GPU it does\n"
    "                         not know); ring (the plain ring), tree, nvls, direct,\n"
    "                         reduce-broadcast, hierarchical\n"
    "  --proto none|LL|LL128|Simple|auto|SET  NCCL protocol of ring or tree (default:\n"
    "                         none with --algo ring or tree, auto with auto or nvls).\n"
    "                         none: the plain algorithm (links' own bandwidth and\n"
    "                         latency); a protocol: that one for every call, with\n"
    "                         NCCL's channels, wire overhead and latencies\n"
    "                         (docs/collectives.md); auto: NCCL's choice per call;\n"
    "                         SET: NCCL_PROTO's allowed protocols (LL,Simple; ^LL128\n"
    "                         for all but LL128): NCCL's choice among them per call\n"
    "  --nccl-extra measured|none  with a protocol: add the mechanisms NCCL's model leaves\n"
    "                         out (launch, slice syncs, NVLS pipeline; default measured);\n"
    "                         measured refused with --proto none (nothing to add to)\n"
    "  --calib FILE           a calibration file (ddpreal calibrate): its compute\n"
    "                         factors replace the topology's, its measured efficiencies\n"
    "                         the GPU table's, its NCCL launch the fitted one, its\n"
    "                         grouped_conv times (tools/gen_grouped_conv.py --calib)\n"
    "                         the built-in H200 table, its host times\n"
    "                         (bench/host_calibrate.py --calib-out) host_dispatch and\n"
    "                         host_node, its DDP ones (bench/torch_ddp_host.py\n"
    "                         --calib-out) host_grad_hook + host_grad_copy (the\n"
    "                         copy 5.8us, the hook the rest), host_collective,\n"
    "                         host_buffer and host_ddp_iter\n"
    "  --calib A,B / --calib A --calib B  several calibration files (up to 8, one\n"
    "                         per tool), merged key by key; a key two files set is\n"
    "                         refused with both places (exit 2); the text's \"calib\n"
    "                         keys\" line says which file set each\n"
    "  --host-scale F         multiply every host_* cost (the Python/PyTorch host's CPU\n"
    "                         time: launch, replicate, backward, op, dispatch, cast,\n"
    "                         node, grad_hook, grad_copy, collective, buffer, ddp_iter,\n"
    "                         step_call, step_param, step_param_adam), after --calib,\n"
    "                         by 0.001 <= F <= 1000 (default 1): a slower (F > 1) or\n"
    "                         faster host\n"
    ;

/* Literals of at most 4095 characters each: one past it is not portable C. */
static const char usage_precision[] =
    "Precision:\n"
    "  --dtype fp32|fp16|bf16 training dtype of parameters, gradients, activations (default fp32)\n"
    "  --tf32 conv|all|none   fp32 training: op classes on TF32 tensor cores; conv (default,\n"
    "                         PyTorch's: cudnn.allow_tf32 True, matmul.allow_tf32 False),\n"
    "                         all (matmuls too), none; not all or none with --dtype\n"
    "                         fp16 or bf16 (every class then in the half type), nor\n"
    "                         under --amp but all with --comm-hook powersgd:RANK (its GEMMs)\n"
    "  --amp fp16|bf16        mixed precision as torch.autocast: convolutions and matmuls in\n"
    "                         the half type on tensor cores, activations in it; parameters,\n"
    "                         gradients, buckets and optimizer state fp32 (default none)\n"
    "  --channels-last        activations in NHWC (model.to(memory_format=channels_last)):\n"
    "                         cuDNN's persistent batch-norm kernels instead of its\n"
    "                         one-CTA-per-channel NCHW ones, and the elementwise ops\n"
    "                         that mix layouts (the model's nhwc_legacy_ew; default NCHW)\n"
    "  --optimizer sgd|adam|none|bertadam|apex-o2-fusedadam  the training loop's optimizer\n"
    "                         instead of the model file's: none runs forward and backward\n"
    "                         without optimizer.step() (a benchmark's train time): no step\n"
    "                         kernels, host work, state or GradScaler step; zero_grad as the\n"
    "                         PyTorch version charges it; ddp still all-reduces (single, dp,\n"
    "                         ddp).\n"
    "                         bertadam: DeepLearningExamples' BERT run_squad.py fp32 step,\n"
    "                         apex's gradient-norm clip (a .item() sync), then BertAdam's\n"
    "                         Python loop, 18 or 20 kernels and launches per tensor, decay\n"
    "                         by parameter name, under any --pytorch-version but 1.4 (fp32,\n"
    "                         single, dp, ddp; not with --weight-decay or --grad-accum).\n"
    "                         apex-o2-fusedadam: the same script's --fp16 step, apex amp O2\n"
    "                         (with --dtype fp16: the model in fp16, fp32 master weights):\n"
    "                         the unscale into fp32 master gradients and its .item() sync,\n"
    "                         the same clip on them, FusedAdam's multi-tensor kernels, the\n"
    "                         copy back to the fp16 model, amp's zero_grad fills (single,\n"
    "                         ddp; not with --pytorch-version, --weight-decay, --grad-accum)\n"
    "  --weight-decay         the optimizer has a nonzero weight_decay: one more kernel\n"
    "                         (3 passes) per foreach step, or per tensor under the loop\n"
    "                         of --pytorch-version 1.4 and 1.9\n"
    "  --no-bn-weight-decay   with --weight-decay: parameters named *bn* in a group of\n"
    "                         weight_decay 0 (DeepLearningExamples' bn_weight_decay False):\n"
    "                         no decay kernel on them (single, dp, ddp)\n"
    ;

static const char usage_ddp[] =
    "DDP options (PyTorch's):\n"
    "  --no-overlap           every all-reduce waits for the end of backward (baseline)\n"
    "  --no-sync K            K-1 micro-steps accumulate without communication, then one\n"
    "                         synchronises and the optimizer steps (default 1: off)\n"
    "  --grad-as-bucket-view  gradient_as_bucket_view=True: no separate bucket copies\n"
    "  --no-broadcast-buffers  broadcast_buffers=False: no broadcast of the model's buffers\n"
    "                         (BatchNorm statistics) before each forward\n"
    "  --find-unused-parameters  buckets binned in registration order, the list reversed,\n"
    "                         never rebuilt (the graph traversal's CPU cost is not modelled)\n"
    "  --static-graph         static_graph=True: one bucket in iterations 0 and 1, rebuilt\n"
    "                         before iteration 2 (--iters 3 or more, default 3)\n"
    "  --pytorch-version V    PyTorch V's rules: current (default), 1.4 or 1.9. 1.4 (every\n"
    "                         strategy: the optimizer as a Python loop, kernels per parameter\n"
    "                         tensor, AccumulateGrad's add into the kept .grad; DDP: buckets\n"
    "                         binned in registration order with a 1 MiB first bucket, never\n"
    "                         rebuilt; one div_ kernel per bucket before its all-reduce).\n"
    "                         1.9: the same loop and adds, zero_grad's fill_ per gradient; DDP's\n"
    "                         buckets binned in registration order in iteration 0, rebuilt\n"
    "                         in gradient-ready order with a 1 MiB first bucket (--amp fp16:\n"
    "                         the step's launches wait for GradScaler's .item() sync)\n"
    "  --grad-accum K         gradient accumulation without no_sync (single, ddp): K micro-\n"
    "                         steps of forward and backward (under ddp each all-reduces\n"
    "                         every bucket), then one optimizer step and zero_grad; the\n"
    "                         iteration, per_batch_ms and samples/s count K batches\n"
    "  --optimizer-batch N    samples per optimizer step (DeepLearningExamples'\n"
    "                         optimizer_batch_size): --grad-accum N / (world x batch) for\n"
    "                         each configuration, which must divide exactly\n"
    "  --loop sync|free       the training loop (single, ddp): sync (default) waits for\n"
    "                         the GPU's optimizer step every iteration (loss.item()); free\n"
    "                         never syncs, the host starts the next iteration after the\n"
    "                         step's host work; its lead carries over, and the text\n"
    "                         says whether the period is steady (--iters 3 or more)\n"
  "  --comm-hook HOOK       DDP comm hook: none, fp16, bf16 (half the bytes plus the\n"
  "                         casts), powersgd:RANK (docs/strategies.md)\n"
    ;

/* The other strategies' options and the sweeps (a literal of its own, as above). */
static const char usage_ps[] =
    "DataParallel options (--strategy dp, torch.nn.DataParallel's):\n"
    "  --dp-output-device N   GPU where outputs are gathered and the loss runs (default 0)\n"
    "  --dp-parallel-loss     each replica computes its own loss; only scalars are gathered\n"
    "Parameter server (--strategy ps; docs/strategies.md):\n"
    "  --ps-servers N         servers, parameters sharded over them by whole tensors,\n"
    "                         server k on GPU k*world/N (default 1)\n"
    "  --ps-mode sync|async   sync: every server applies all workers' gradients before\n"
    "                         any worker pulls (default); async: each push applied as\n"
    "                         it arrives, staleness reported\n"
    "  --ps-push after-backward|per-layer  each shard once after backward\n"
    "                         (default), or each layer's gradients as soon as its\n"
    "                         backward ends, overlapping the rest of backward\n"
    "  --straggler RANK:FACTOR  that rank's compute takes FACTOR times longer (every\n"
    "                         strategy; repeatable or a list 1:1.5,3:2; 0.01 to 1e6)\n"
    "Sweeps (docs/sweeps.md): these also take lists and ranges:\n"
    "  --no-sync, --ps-servers, --dp-output-device, --jitter (a linear range may start\n"
    "  at 0), --ring-chunks; --comm-hook a list none,fp16,powersgd:4 (ranks:\n"
    "  powersgd:1,2,4 or powersgd:1:16:log5); --straggler 3:1,1.5,2 or 3:1:2:0.25 (one\n"
    "  rank's factors). --iters, --seed, --samples take one value. An option no\n"
    "  strategy of the run uses is refused, unless its value is what they do anyway\n"
    "  (--strategy single --world-size 1, --comm-hook none, a default).\n"
    "  --measured FILE.csv    with --plot or text alone, a sweep of one option: measured\n"
    "                         iter_ms (and exposed_comm_ms) per value of its column\n"
    "                         (bucket_mb, world_size, ...); the report adds the\n"
    "                         prediction's error there and whether the optima match\n"
    "                         (-: read from standard input)\n"
    "  --help, --version\n"
    "\n"
    "Other commands (each with its own --help):\n"
    "  ddpsim collective --topo T [-b MIN -e MAX -f F]  one collective over a size\n"
    "                         sweep, as nccl-tests prints it (docs/collectives.md)\n"
    "  ddpsim analyze PREDICTED.csv [MEASURED.csv]  a trace's metrics, or predicted\n"
    "                         against measured op by op (docs/analysis.md)\n"
    "  ddpsim topo T          what a topology file describes: links, routes, rings,\n"
    "                         NCCL's channels; ddpsim topo import (docs/topologies.md)\n"
    "  ddpsim buckets [--model M]  DDP's bucket layouts of a model\n";

void ds_options_print_usage(FILE *fp) {
  fputs(usage, fp);
  fputs(usage_nccl, fp);
  fputs(usage_precision, fp);
  fputs(usage_ddp, fp);
  fputs(usage_ps, fp);
}

ds_status ds_options_rank_factors(const struct ds_options *o, int32_t world,
                                  double *factor, struct ds_err *err) {
  for (int32_t r = 0; factor && r < world; r++) factor[r] = 1.0;
  for (int32_t k = 0; k < o->n_stragglers; k++) {
    const struct ds_straggler *s = &o->stragglers[k];
    if (s->rank >= world)
      return ds_err_set(err, DS_EUSAGE,
                        "option --straggler: rank %d, but the run has %d rank%s (0..%d)",
                        s->rank, world, world == 1 ? "" : "s", world - 1);
    if (factor) factor[s->rank] = s->factor;
  }
  return DS_OK;
}

static ds_status bad(struct ds_err *err, const char *flag, const char *what,
                     const char *got) {
  return ds_err_set(err, DS_EUSAGE, "option %s: expected %s, got \"%s\"", flag,
                    what, got);
}

static ds_status parse_int(const char *flag, const char *v, int64_t lo,
                           int64_t hi, int64_t *out, struct ds_err *err) {
  return ds_cli_parse_int(flag, v, lo, hi, out, err);
}

static const char *const var_flags[DS_VAR_COUNT] = {
    [DS_VAR_WORLD_SIZE] = "--world-size", [DS_VAR_BATCH] = "--batch",
    [DS_VAR_NO_SYNC] = "--no-sync", [DS_VAR_PS_SERVERS] = "--ps-servers",
    [DS_VAR_DP_OUTPUT_DEVICE] = "--dp-output-device", [DS_VAR_STRAGGLER] = "--straggler",
    [DS_VAR_JITTER] = "--jitter", [DS_VAR_RING_CHUNKS] = "--ring-chunks",
    [DS_VAR_COMM_HOOK] = "--comm-hook", [DS_VAR_FIRST_BUCKET_MB] = "--first-bucket-mb",
    [DS_VAR_BUCKET_MB] = "--bucket-mb"};

static const char *const var_columns[DS_VAR_COUNT] = {
    [DS_VAR_WORLD_SIZE] = "world_size", [DS_VAR_BATCH] = "batch_per_gpu",
    [DS_VAR_NO_SYNC] = "no_sync", [DS_VAR_PS_SERVERS] = "ps_servers",
    [DS_VAR_DP_OUTPUT_DEVICE] = "dp_output_device", [DS_VAR_STRAGGLER] = "straggler_factor",
    [DS_VAR_JITTER] = "jitter_cv", [DS_VAR_RING_CHUNKS] = "ring_chunks",
    [DS_VAR_COMM_HOOK] = "comm_hook", [DS_VAR_FIRST_BUCKET_MB] = "first_bucket_mb",
    [DS_VAR_BUCKET_MB] = "bucket_mb"};

const char *ds_options_var_flag(enum ds_sweep_var v) { return var_flags[v]; }

const char *ds_options_var_column(enum ds_sweep_var v) { return var_columns[v]; }

double ds_options_var_value(const struct ds_options *c, enum ds_sweep_var v) {
  return c->sweep[v].v[0];
}

void ds_options_var_text(const struct ds_options *c, enum ds_sweep_var v, char *buf,
                         size_t cap) {
  if (v == DS_VAR_COMM_HOOK) ds_comm_hook_name(&c->comm_hook, buf, cap);
  else snprintf(buf, cap, "%g", c->sweep[v].v[0]);
}

static const char *const strategy_names[DS_STRATEGY_COUNT] = {
    [DS_STRATEGY_SINGLE] = "single", [DS_STRATEGY_DP] = "dp", [DS_STRATEGY_DDP] = "ddp",
    [DS_STRATEGY_PS] = "ps"};

const char *ds_strategy_name(enum ds_strategy s) {
  return s >= 0 && s < DS_STRATEGY_COUNT ? strategy_names[s] : "?";
}

int ds_strategy_uses_var(enum ds_strategy s, enum ds_sweep_var v) {
  if (v == DS_VAR_BATCH || v == DS_VAR_JITTER) return 1; /* every strategy computes */
  switch (s) {
  case DS_STRATEGY_SINGLE: return 0;
  case DS_STRATEGY_DP:
    return v == DS_VAR_WORLD_SIZE || v == DS_VAR_DP_OUTPUT_DEVICE || v == DS_VAR_STRAGGLER ||
           v == DS_VAR_RING_CHUNKS; /* its broadcast and reduce chains are chunked */
  case DS_STRATEGY_PS:
    return v == DS_VAR_WORLD_SIZE || v == DS_VAR_PS_SERVERS || v == DS_VAR_STRAGGLER;
  default: return v != DS_VAR_PS_SERVERS && v != DS_VAR_DP_OUTPUT_DEVICE;
  }
}

/* Single runs rank 0 alone: a swept factor of rank 0 is single's too. */
int ds_options_uses_var(const struct ds_options *o, enum ds_strategy s, enum ds_sweep_var v) {
  if (ds_strategy_uses_var(s, v)) return 1;
  return s == DS_STRATEGY_SINGLE && v == DS_VAR_STRAGGLER && o->straggler_swept &&
         o->stragglers[o->straggler_swept_k].rank == 0;
}

/* The record's index of flag, -1 when not given. A flag ddpsim does not
 * know is a typo in the caller, which would read as "not given" forever. */
static int given_index(const struct ds_options *o, const char *flag) {
  assert(ds_cli_option_find(ds_options_flags(), flag) && "flag not in ddpsim's table");
  /* the walk records no repeatable flag (base/cli ds_cli_once): asking
   * would always say no (o->n_stragglers says whether --straggler was) */
  assert(strcmp(flag, "--straggler") != 0 && strcmp(flag, "--calib") != 0 &&
         "a repeatable flag is not recorded");
  for (int i = 0; i < o->given.n; i++)
    if (strcmp(o->given.flag[i], flag) == 0) return i;
  return -1;
}

int ds_options_given(const struct ds_options *o, const char *flag) {
  return given_index(o, flag) >= 0;
}

const char *ds_options_given_value(const struct ds_options *o, const char *flag) {
  int i = given_index(o, flag);
  return i >= 0 ? o->given.value[i] : NULL;
}


/* Configurations of one strategy: the cross product of its variables. */
static int64_t strategy_configs(const struct ds_options *o, enum ds_strategy s) {
  int64_t n = 1;
  for (int v = 0; v < DS_VAR_COUNT; v++)
    if (ds_options_uses_var(o, s, (enum ds_sweep_var)v)) n *= o->sweep[v].n;
  return n;
}

double ds_options_first_bucket_mb(const struct ds_options *o, double bucket_mb) {
  return ds_ddp_first_bucket_mb(o->ddp_rules, ds_options_given(o, "--bucket-mb") ? bucket_mb : 0,
                                ds_options_given(o, "--first-bucket-mb") ? o->first_bucket_mb : 0);
}

int64_t ds_options_n_configs(const struct ds_options *o) {
  int64_t n = 0;
  for (int32_t k = 0; k < o->n_strategies; k++) n += strategy_configs(o, o->strategies[k]);
  return n;
}

/* Sets the scalar fields from sweep[] (each option's first value). */
static void set_scalars(struct ds_options *o) {
  o->world_size = (int32_t)o->sweep[DS_VAR_WORLD_SIZE].v[0];
  o->batch = (int64_t)o->sweep[DS_VAR_BATCH].v[0];
  o->no_sync = (int32_t)o->sweep[DS_VAR_NO_SYNC].v[0];
  o->first_bucket_mb = o->sweep[DS_VAR_FIRST_BUCKET_MB].v[0];
  o->ps_servers = (int32_t)o->sweep[DS_VAR_PS_SERVERS].v[0];
  o->dp_output_device = (int32_t)o->sweep[DS_VAR_DP_OUTPUT_DEVICE].v[0];
  if (o->straggler_swept)
    o->stragglers[o->straggler_swept_k].factor = o->sweep[DS_VAR_STRAGGLER].v[0];
  o->jitter_cv = o->sweep[DS_VAR_JITTER].v[0];
  o->ring_chunks = (int32_t)o->sweep[DS_VAR_RING_CHUNKS].v[0];
  o->comm_hook = o->comm_hooks[(int)o->sweep[DS_VAR_COMM_HOOK].v[0]];
  o->n_bucket_mb = o->sweep[DS_VAR_BUCKET_MB].n;
  memcpy(o->bucket_mb, o->sweep[DS_VAR_BUCKET_MB].v, sizeof o->bucket_mb);
}

void ds_options_config(const struct ds_options *o, int64_t i, struct ds_options *out) {
  *out = *o;
  int32_t k = 0;
  while (k + 1 < o->n_strategies && i >= strategy_configs(o, o->strategies[k]))
    i -= strategy_configs(o, o->strategies[k++]);
  out->strategy_id = o->strategies[k];
  out->strategy = strategy_names[out->strategy_id];
  out->strategies[0] = out->strategy_id;
  out->n_strategies = 1;
  for (int v = DS_VAR_COUNT - 1; v >= 0; v--) { /* the last varies fastest */
    struct ds_values *d = &out->sweep[v];
    int64_t j = 0;
    if (ds_options_uses_var(o, out->strategy_id, (enum ds_sweep_var)v)) {
      j = i % d->n;
      i /= d->n;
    }
    d->v[0] = d->v[j];
    d->n = 1;
  }
  set_scalars(out);
}

/* "dp,ddp": names from strategy_names, each at most once, in any order. */
static ds_status parse_strategies(const char *flag, const char *v, struct ds_options *o,
                                  struct ds_err *err) {
  const char *tok = v;
  o->n_strategies = 0;
  for (;;) {
    const char *end = strchr(tok, ',');
    size_t len = end ? (size_t)(end - tok) : strlen(tok);
    int found = -1;
    for (int s = 0; s < DS_STRATEGY_COUNT; s++)
      if (strlen(strategy_names[s]) == len && strncmp(tok, strategy_names[s], len) == 0)
        found = s;
    if (found < 0)
      return ds_err_set(err, DS_EUSAGE, "option %s: expected a comma-separated list of "
                        "single, dp, ddp, ps (each at most once), got \"%s\" (unknown "
                        "strategy \"%.*s\")", flag, v, (int)len, tok);
    for (int32_t k = 0; k < o->n_strategies; k++)
      if (o->strategies[k] == (enum ds_strategy)found)
        return ds_err_set(err, DS_EUSAGE, "option %s: strategy \"%s\" given twice in "
                          "\"%s\"", flag, strategy_names[found], v);
    o->strategies[o->n_strategies++] = (enum ds_strategy)found;
    if (!end) break;
    tok = end + 1;
  }
  o->strategy_id = o->strategies[0];
  o->strategy = strategy_names[o->strategy_id];
  return DS_OK;
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

/* "3:2" or "1:1.5,3:2" (repeatable): RANK:FACTOR, a rank at most once,
 * a factor > 0 (whether the rank exists is checked against the world size
 * when the run starts). One straggler's factor may be swept: an item
 * without a colon is a further factor of the rank before it
 * ("3:1,1.5,2"), and RANK:A:B:STEP or RANK:A:B:logN a range of them. */
static ds_status parse_stragglers(const char *flag, const char *v, struct ds_options *o,
                                  struct ds_err *err) {
  struct ds_values *sw = &o->sweep[DS_VAR_STRAGGLER];
  const char *p = v;
  int32_t prev = -1; /* the straggler of this value's previous item */
  for (;;) {
    const char *end = strchr(p, ','), *colon = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char item[64], *stop;
    if (len == 0 || len >= sizeof item) return bad(err, flag, ds_value_kind_factor.list, v);
    snprintf(item, sizeof item, "%.*s", (int)len, p);
    if (!colon || colon >= p + len) {
      /* a further factor of the previous rank */
      double f;
      if (prev < 0) return bad(err, flag, ds_value_kind_factor.list, v);
      if (o->straggler_swept && o->straggler_swept_k != prev)
        return ds_err_set(err, DS_EUSAGE, "option %s: only one straggler's factor can "
                          "take a list (rank %d's already does)", flag,
                          o->stragglers[o->straggler_swept_k].rank);
      DS_CHECK(ds_values_parse_item(flag, item, &ds_value_kind_factor, &f, err));
      if (!o->straggler_swept) {
        sw->v[0] = o->stragglers[prev].factor;
        sw->n = 1;
        sw->log_spaced = 0;
      }
      if (sw->n == DS_MAX_SWEEP) return ds_values_too_many(flag, err);
      /* a repeat would run one configuration twice (ds_values_parse) */
      for (int32_t j = 0; j < sw->n; j++)
        if (sw->v[j] == f)
          return ds_err_set(err, DS_EUSAGE, "option %s: \"%s\" lists rank %d's factor %s "
                            "twice", flag, v, o->stragglers[prev].rank, item);
      sw->v[sw->n++] = f;
      o->straggler_swept = 1;
      o->straggler_swept_k = prev;
    } else {
      item[colon - p] = '\0';
      errno = 0;
      long rank = strtol(item, &stop, 10);
      const char *factor_text = item + (colon - p) + 1;
      if (item[0] == '\0' || *stop != '\0' || errno || rank < 0 || rank > (1 << 20))
        return bad(err, flag, "RANK:FACTOR with RANK an integer from 0 to 1048576, e.g. 3:2",
                   v);
      for (int32_t k = 0; k < o->n_stragglers; k++)
        if (o->stragglers[k].rank == (int32_t)rank)
          return ds_err_set(err, DS_EUSAGE, "option %s: rank %ld given twice", flag, rank);
      if (o->n_stragglers >= DS_MAX_STRAGGLERS)
        return ds_err_set(err, DS_EUSAGE, "option %s: at most %d stragglers", flag,
                          DS_MAX_STRAGGLERS);
      prev = o->n_stragglers++;
      o->stragglers[prev].rank = (int32_t)rank;
      if (strchr(factor_text, ':')) {
        /* RANK:A:B:STEP: a range of factors */
        if (o->straggler_swept)
          return ds_err_set(err, DS_EUSAGE, "option %s: only one straggler's factor can "
                            "take a list (rank %d's already does)", flag,
                            o->stragglers[o->straggler_swept_k].rank);
        DS_CHECK(ds_values_parse_range(flag, factor_text, 0, sw, err));
        DS_CHECK(ds_values_check_range(flag, factor_text, &ds_value_kind_factor, sw, err));
        o->stragglers[prev].factor = sw->v[0];
        o->straggler_swept = 1;
        o->straggler_swept_k = prev;
      } else if (ds_units_parse_number(factor_text, &o->stragglers[prev].factor) != DS_OK ||
                 !ds_value_in_kind(&ds_value_kind_factor, o->stragglers[prev].factor)) {
        return bad(err, flag, "RANK:FACTOR with FACTOR a number from 0.01 to 1e6, e.g. 3:2",
                   v);
      }
    }
    if (!end) return DS_OK;
    p = end + 1;
  }
}

/* Appends hook h to --comm-hook's list; a hook already listed is a usage
 * error, since it would run one configuration twice (ds_values_parse). */
static ds_status add_hook(const char *flag, const char *v, struct ds_options *o,
                          struct ds_comm_hook h, struct ds_err *err) {
  struct ds_values *sw = &o->sweep[DS_VAR_COMM_HOOK];
  if (sw->n == DS_MAX_SWEEP) return ds_values_too_many(flag, err);
  for (int32_t j = 0; j < sw->n; j++)
    if (o->comm_hooks[j].kind == h.kind && o->comm_hooks[j].rank == h.rank) {
      char name[32];
      ds_comm_hook_name(&h, name, sizeof name);
      return ds_err_set(err, DS_EUSAGE, "option %s: \"%s\" lists %s twice", flag, v, name);
    }
  o->comm_hooks[sw->n] = h;
  sw->v[sw->n] = sw->n;
  sw->n++;
  return DS_OK;
}

/* --comm-hook: one hook, a list of them ("none,fp16,powersgd:4"), where
 * a bare integer is a further rank of the powersgd before it
 * ("powersgd:1,2,4"), or powersgd:A:B:STEP / powersgd:A:B:logN, a range of
 * ranks (rounded to integers). */
static ds_status parse_hooks(const char *flag, const char *v, struct ds_options *o,
                             struct ds_err *err) {
  static const char psgd[] = "powersgd:";
  struct ds_values *sw = &o->sweep[DS_VAR_COMM_HOOK];
  const char *p = v;
  int prev_psgd = 0;
  memset(sw, 0, sizeof *sw);
  for (;;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char item[64];
    if (len == 0 || len >= sizeof item)
      return bad(err, flag, "none, fp16, bf16, powersgd:RANK or a list of them, e.g. "
                 "none,fp16,powersgd:4 (ranks of one powersgd: powersgd:1,2,4)", v);
    snprintf(item, sizeof item, "%.*s", (int)len, p);
    struct ds_values ranks = {.n = 0};
    if (prev_psgd && strspn(item, "0123456789") == len) {
      struct ds_value_kind k = ds_value_kind_int(1, DS_POWERSGD_MAX_RANK);
      DS_CHECK(ds_values_parse_item(flag, item, &k, &ranks.v[0], err));
      ranks.n = 1;
    } else if (strncmp(item, psgd, sizeof psgd - 1) == 0 &&
               strchr(item + sizeof psgd - 1, ':')) {
      struct ds_value_kind k = ds_value_kind_int(1, DS_POWERSGD_MAX_RANK);
      DS_CHECK(ds_values_parse_range(flag, item + sizeof psgd - 1, 0, &ranks, err));
      DS_CHECK(ds_values_check_range(flag, item + sizeof psgd - 1, &k, &ranks, err));
      sw->log_spaced = ranks.log_spaced;
    } else {
      struct ds_comm_hook h;
      DS_CHECK(ds_comm_hook_parse(flag, item, &h, err));
      DS_CHECK(add_hook(flag, v, o, h, err));
      prev_psgd = h.kind == DS_HOOK_POWERSGD;
    }
    for (int32_t i = 0; i < ranks.n; i++) {
      DS_CHECK(add_hook(flag, v, o,
                        (struct ds_comm_hook){DS_HOOK_POWERSGD, (int32_t)ranks.v[i]}, err));
      prev_psgd = 1;
    }
    if (!end) return DS_OK;
    p = end + 1;
  }
}

/* One --calib value: a file, or, a value with a comma that names no file
 * (so one whose name has a comma still works), a comma list of files,
 * each appended to o->calib_files (the list's copies in calib_list[1]).
 * o->calib is the value as given; a second --calib makes it the values
 * joined by ',' (calib_list[0]), which names the same files again. */
static ds_status add_calib(struct ds_options *o, const char *v, struct ds_err *err) {
  char *joined = o->calib_list[0], *names = o->calib_list[1];
  const size_t cap = sizeof o->calib_list[0];
  if (o->calib) {
    size_t have = strlen(o->calib), more = strlen(v);
    if (have + 1 + more >= cap)
      return ds_err_set(err, DS_EUSAGE, "option --calib: expected the files' names to come to "
                        "at most %zu bytes in all (joined by ','), got %zu", cap - 1,
                        have + 1 + more);
    if (o->calib != joined) memcpy(joined, o->calib, have + 1);
    joined[have] = ',';
    memcpy(joined + have + 1, v, more + 1);
    o->calib = joined;
  } else {
    o->calib = v;
  }
  if (!strchr(v, ',') || access(v, F_OK) == 0) {
    if (o->n_calib_files >= DS_CALIB_MAX_FILES)
      return ds_err_set(err, DS_EUSAGE, "option --calib: more than %d calibration files",
                        DS_CALIB_MAX_FILES);
    o->calib_files[o->n_calib_files++] = v;
    return DS_OK;
  }
  /* the list's copies go after those of an earlier --calib's list */
  size_t used = 0;
  for (int32_t i = 0; i < o->n_calib_files; i++)
    if (o->calib_files[i] >= names && o->calib_files[i] < names + cap)
      used = (size_t)(o->calib_files[i] - names) + strlen(o->calib_files[i]) + 1;
  if (used + strlen(v) + 1 > cap)
    return ds_err_set(err, DS_EUSAGE, "option --calib: expected the files' names to come to "
                      "at most %zu bytes in all (joined by ','), got %zu", cap - 1,
                      used + strlen(v));
  for (const char *p = v;;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 0)
      return ds_err_set(err, DS_EUSAGE, "option --calib: expected calibration files "
                        "separated by single commas, got an empty name in \"%s\"", v);
    if (o->n_calib_files >= DS_CALIB_MAX_FILES)
      return ds_err_set(err, DS_EUSAGE, "option --calib: more than %d calibration files",
                        DS_CALIB_MAX_FILES);
    memcpy(names + used, p, len);
    names[used + len] = '\0';
    o->calib_files[o->n_calib_files++] = names + used;
    used += len + 1;
    if (!end) return DS_OK;
    p = end + 1;
  }
}

/* Every flag ddpsim knows, and whether a value follows it (base/cli.h). */
static const struct ds_cli_option options[] = {
    {"--topo", 1, NULL}, {"--model", 1, NULL}, {"--strategy", 1, NULL}, {"--bucket-mb", 1, NULL},
    {"--first-bucket-mb", 1, NULL}, {"--world-size", 1, NULL}, {"--batch", 1, NULL},
    {"--iters", 1, NULL}, {"--dtype", 1, NULL}, {"--amp", 1, NULL}, {"--tf32", 1, NULL},
    {"--channels-last", 0, NULL}, {"--weight-decay", 0, NULL}, {"--no-bn-weight-decay", 0, NULL},
    {"--optimizer", 1, NULL}, {"--seed", 1, NULL}, {"--format", 1, NULL}, {"--trace", 1, NULL},
    {"--schedule", 1, NULL}, {"--coll-model", 1, NULL}, {"--net", 1, NULL},
    {"--ring-chunks", 1, NULL}, {"--algo", 1, NULL}, {"--proto", 1, NULL},
    {"--nccl-extra", 1, NULL}, {"--calib", 1, NULL}, {"--host-scale", 1, NULL},
    {"--no-overlap", 0, NULL}, {"--no-sync", 1, NULL}, {"--grad-as-bucket-view", 0, NULL},
    {"--no-broadcast-buffers", 0, NULL}, {"--find-unused-parameters", 0, NULL},
    {"--static-graph", 0, NULL}, {"--comm-hook", 1, NULL}, {"--pytorch-version", 1, NULL},
    {"--grad-accum", 1, NULL}, {"--optimizer-batch", 1, NULL}, {"--loop", 1, NULL},
    {"--dp-output-device", 1, NULL}, {"--dp-parallel-loss", 0, NULL}, {"--ps-servers", 1, NULL},
    {"--ps-mode", 1, NULL}, {"--ps-push", 1, NULL}, {"--straggler", 1, NULL}, {"--jobs", 1, NULL},
    {"--jitter", 1, NULL}, {"--samples", 1, NULL}, {"--plot", 1, NULL}, {"--measured", 1, NULL},
    {"--chrome", 1, NULL}, {"--help", 0, NULL}, {"--version", 0, NULL}, {"-h", 0, "--help"},
    {NULL, 0, NULL}};

/* the walk records each flag given (base/cli.h) */
_Static_assert(sizeof options / sizeof *options - 1 <= DS_CLI_SEEN_MAX,
               "ddpsim has more flags than struct ds_cli_seen records");

const struct ds_cli_option *ds_options_flags(void) { return options; }

static ds_status apply(struct ds_options *o, const char *flag, const char *v,
                       int *proto_set, struct ds_err *err) {
  int64_t x;
  int c;
  /* An empty value is a slip of the shell (an unset variable), never a
   * name or a number: say so before a later rename or lookup fails. */
  if (v && v[0] == '\0')
    return ds_err_set(err, DS_EUSAGE, "option %s: expected a value, got an empty string",
                      flag);
  /* YAML inputs are files, found by path or name: "-" refused
   * (base/csvread.h: the CSV tables read standard input) */
  if (strcmp(flag, "--topo") == 0) {
    DS_CHECK(ds_lookup_refuse_stdin("topologies", "option --topo", v, err));
    o->topo = v;
  } else if (strcmp(flag, "--model") == 0) {
    DS_CHECK(ds_lookup_refuse_stdin("models", "option --model", v, err));
    o->model = v;
  }
  else if (strcmp(flag, "--strategy") == 0)
    DS_CHECK(parse_strategies(flag, v, o, err));
  else if (strcmp(flag, "--bucket-mb") == 0) {
    DS_CHECK(ds_values_parse(flag, v, &ds_value_kind_mib, &o->sweep[DS_VAR_BUCKET_MB], err));
  } else if (strcmp(flag, "--first-bucket-mb") == 0) {
    DS_CHECK(ds_values_parse(flag, v, &ds_value_kind_mib, &o->sweep[DS_VAR_FIRST_BUCKET_MB], err));
  }
  else if (strcmp(flag, "--world-size") == 0) {
    struct ds_value_kind k = ds_value_kind_int(1, 1 << 20);
    DS_CHECK(ds_values_parse(flag, v, &k, &o->sweep[DS_VAR_WORLD_SIZE], err));
  } else if (strcmp(flag, "--batch") == 0) {
    struct ds_value_kind k = ds_value_kind_int(1, 1 << 20);
    DS_CHECK(ds_values_parse(flag, v, &k, &o->sweep[DS_VAR_BATCH], err));
  }
  else if (strcmp(flag, "--iters") == 0) {
    DS_CHECK(parse_int(flag, v, 2, 1000, &x, err));
    o->iters = (int32_t)x;
  } else if (strcmp(flag, "--seed") == 0) {
    /* GSL's mt19937 keeps a seed's low 32 bits and replaces 0 by its
     * default 4357 (jitter.c): 1 .. 2^32 - 1 are the distinct seeds */
    struct ds_err scratch = {0};
    if (ds_cli_parse_int(flag, v, 1, DS_SEED_MAX, &x, &scratch) != DS_OK)
      return ds_err_set(err, DS_EUSAGE, "option --seed: expected an integer from 1 to %lld "
                        "(GSL's mt19937 keeps a seed's low 32 bits and takes 0 as its "
                        "default seed 4357, so other values would repeat one of these "
                        "timelines), got \"%s\"", (long long)DS_SEED_MAX, v);
    o->seed = (uint64_t)x;
  } else if (strcmp(flag, "--dtype") == 0) {
    if (ds_dtype_parse(v, &o->dtype) != 0) return bad(err, flag, "fp32, fp16 or bf16", v);
  } else if (strcmp(flag, "--tf32") == 0) {
    if (ds_tf32_parse(v, &o->tf32) != 0) return bad(err, flag, "conv, all or none", v);
  } else if (strcmp(flag, "--channels-last") == 0) {
    o->channels_last = 1;
  } else if (strcmp(flag, "--amp") == 0) {
    if (ds_amp_parse(v, &o->amp) != 0) return bad(err, flag, "none, fp16 or bf16", v);
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
    struct ds_value_kind k = ds_value_kind_int(1, 4096);
    DS_CHECK(ds_values_parse(flag, v, &k, &o->sweep[DS_VAR_RING_CHUNKS], err));
  } else if (strcmp(flag, "--algo") == 0) {
    o->algo_auto = strcmp(v, "auto") == 0;
    o->ar_algo = DS_AR_RING;
    if (!o->algo_auto && ds_ar_algo_parse(v, &o->ar_algo) != DS_OK)
      return bad(err, flag, "one of ring, tree, nvls, direct, reduce-broadcast, "
                 "hierarchical, auto", v);
  } else if (strcmp(flag, "--proto") == 0) {
    *proto_set = 1;
    DS_CHECK(ds_proto_flag_parse(flag, v, &o->proto, err));
  } else if (strcmp(flag, "--nccl-extra") == 0) {
    static const char *const names[] = {"none", "measured"};
    DS_CHECK(parse_choice(flag, v, names, 2, &c, err));
    o->nccl_extra = c;
  } else if (strcmp(flag, "--calib") == 0) {
    int32_t had = o->n_calib_files; /* the earlier --calib's files were checked then */
    DS_CHECK(add_calib(o, v, err));
    for (int32_t i = had; i < o->n_calib_files; i++)
      DS_CHECK(ds_cli_refuse_stdin(err, "option --calib", o->calib_files[i], "a calibration "
                                   "is a YAML file", "the file ddpreal calibrate --out wrote"));
  }
  else if (strcmp(flag, "--host-scale") == 0) {
    if (ds_units_parse_number(v, &o->host_scale) != DS_OK || !isfinite(o->host_scale) ||
        o->host_scale < 1 / DS_MAX_HOST_SCALE || o->host_scale > DS_MAX_HOST_SCALE)
      return bad(err, flag, "a number from 0.001 to 1000, e.g. 1.25", v);
  }
  else if (strcmp(flag, "--no-overlap") == 0) o->no_overlap = 1;
  else if (strcmp(flag, "--no-sync") == 0) {
    struct ds_value_kind k = ds_value_kind_int(1, 1024);
    DS_CHECK(ds_values_parse(flag, v, &k, &o->sweep[DS_VAR_NO_SYNC], err));
  }
  else if (strcmp(flag, "--jobs") == 0) {
    DS_CHECK(parse_int(flag, v, 1, 1024, &x, err));
    o->jobs = (int32_t)x;
  } else if (strcmp(flag, "--jitter") == 0) {
    DS_CHECK(ds_values_parse(flag, v, &ds_value_kind_cv, &o->sweep[DS_VAR_JITTER], err));
    o->jitter = 1;
  } else if (strcmp(flag, "--samples") == 0) {
    DS_CHECK(parse_int(flag, v, 1, 100000, &x, err));
    o->samples = (int32_t)x;
  } else if (strcmp(flag, "--plot") == 0) {
    size_t len = strlen(v);
    if (len < 5 || (strcmp(v + len - 4, ".png") != 0 && strcmp(v + len - 4, ".svg") != 0))
      return bad(err, flag, "a file name ending in .png or .svg", v);
    o->plot = v;
  } else if (strcmp(flag, "--measured") == 0) o->measured = v;
  else if (strcmp(flag, "--chrome") == 0) o->chrome = v;
  else if (strcmp(flag, "--grad-as-bucket-view") == 0) o->grad_as_bucket_view = 1;
  else if (strcmp(flag, "--no-broadcast-buffers") == 0) o->no_broadcast_buffers = 1;
  else if (strcmp(flag, "--weight-decay") == 0) o->weight_decay = 1;
  else if (strcmp(flag, "--optimizer") == 0) {
    static const char *const names[] = {"sgd", "adam", "none", "bertadam",
                                        "apex-o2-fusedadam"};
    static const enum ds_optimizer kinds[] = {DS_OPT_SGD, DS_OPT_ADAM, DS_OPT_NONE,
                                              DS_OPT_BERTADAM, DS_OPT_APEX_O2};
    DS_CHECK(parse_choice(flag, v, names, 5, &c, err));
    o->optimizer = kinds[c];
  }
  else if (strcmp(flag, "--no-bn-weight-decay") == 0) o->no_bn_weight_decay = 1;
  else if (strcmp(flag, "--find-unused-parameters") == 0) o->find_unused_parameters = 1;
  else if (strcmp(flag, "--static-graph") == 0) o->static_graph = 1;
  else if (strcmp(flag, "--pytorch-version") == 0) {
    static const char *const names[] = {"current", "1.4", "1.9"};
    DS_CHECK(parse_choice(flag, v, names, 3, &c, err));
    o->ddp_rules = c == 1   ? DS_DDP_RULES_TORCH_1_4
                   : c == 2 ? DS_DDP_RULES_TORCH_1_9
                            : DS_DDP_RULES_CURRENT;
  } else if (strcmp(flag, "--grad-accum") == 0) {
    DS_CHECK(parse_int(flag, v, 1, DS_GRAD_ACCUM_MAX, &x, err));
    o->grad_accum = (int32_t)x;
  } else if (strcmp(flag, "--loop") == 0) {
    static const char *const names[] = {"sync", "free"};
    DS_CHECK(parse_choice(flag, v, names, 2, &c, err));
    o->free_loop = c == 1;
  } else if (strcmp(flag, "--optimizer-batch") == 0) {
    DS_CHECK(parse_int(flag, v, 1, (int64_t)1 << 40, &x, err));
    o->optimizer_batch = x;
  } else if (strcmp(flag, "--comm-hook") == 0)
    DS_CHECK(parse_hooks(flag, v, o, err));
  else if (strcmp(flag, "--dp-output-device") == 0) {
    struct ds_value_kind k = ds_value_kind_int(0, 1 << 20);
    DS_CHECK(ds_values_parse(flag, v, &k, &o->sweep[DS_VAR_DP_OUTPUT_DEVICE], err));
  } else if (strcmp(flag, "--dp-parallel-loss") == 0) o->dp_parallel_loss = 1;
  else if (strcmp(flag, "--ps-servers") == 0) {
    struct ds_value_kind k = ds_value_kind_int(1, 1 << 20);
    DS_CHECK(ds_values_parse(flag, v, &k, &o->sweep[DS_VAR_PS_SERVERS], err));
  } else if (strcmp(flag, "--ps-mode") == 0) {
    static const char *const names[] = {"sync", "async"};
    DS_CHECK(parse_choice(flag, v, names, 2, &c, err));
    o->ps_async = c == 1;
  } else if (strcmp(flag, "--ps-push") == 0) {
    static const char *const names[] = {"after-backward", "per-layer"};
    DS_CHECK(parse_choice(flag, v, names, 2, &c, err));
    o->ps_push_per_layer = c == 1;
  } else if (strcmp(flag, "--straggler") == 0)
    DS_CHECK(parse_stragglers(flag, v, o, err));
  else if (ds_cli_is_help(flag)) o->help = 1;
  else if (strcmp(flag, "--version") == 0) o->version = 1;
  else return ds_cli_unhandled(err, flag);
  return DS_OK;
}

int ds_options_grad_accum(const struct ds_options *o, int32_t world, int64_t batch,
                          struct ds_err *err) {
  if (o->optimizer_batch <= 0) return o->grad_accum > 1 ? o->grad_accum : 1;
  int64_t per_micro = (int64_t)world * batch;
  if (per_micro <= 0 || o->optimizer_batch % per_micro != 0 ||
      o->optimizer_batch / per_micro > DS_GRAD_ACCUM_MAX) {
    if (per_micro <= 0) {
      ds_err_set(err, DS_EUSAGE, "option --optimizer-batch %lld: not a whole number of "
                 "micro-steps (1 to 1024) of world size %d x batch %lld",
                 (long long)o->optimizer_batch, world, (long long)batch);
      return -1;
    }
    /* say which values work: the multiples of world x batch nearest N */
    int64_t below = o->optimizer_batch / per_micro, most = DS_GRAD_ACCUM_MAX;
    if (below > most) below = most;
    char near[96];
    if (below < 1)
      snprintf(near, sizeof near, "%lld", (long long)per_micro);
    else if (below == most)
      snprintf(near, sizeof near, "%lld", (long long)(most * per_micro));
    else
      snprintf(near, sizeof near, "%lld or %lld", (long long)(below * per_micro),
               (long long)((below + 1) * per_micro));
    ds_err_set(err, DS_EUSAGE, "option --optimizer-batch %lld: not a whole number of "
               "micro-steps (1 to 1024) of world size %d x batch %lld (give a multiple of "
               "%lld from %lld to %lld: %s here)",
               (long long)o->optimizer_batch, world, (long long)batch, (long long)per_micro,
               (long long)per_micro, (long long)(most * per_micro), near);
    return -1;
  }
  return (int32_t)(o->optimizer_batch / per_micro);
}

ds_status ds_options_parse(int argc, char **argv, struct ds_options *o,
                           struct ds_err *err) {
  memset(o, 0, sizeof *o);
  o->model = "resnet50";
  o->strategy = "ddp";
  o->strategy_id = DS_STRATEGY_DDP;
  o->strategies[0] = DS_STRATEGY_DDP;
  o->n_strategies = 1;
  /* comm hook 0: comm_hooks[0], none (zeroed). The bucket defaults are
   * DDP's: first bucket 1 MiB, the rest 25 MiB
   * (torch/csrc/distributed/c10d/reducer.hpp kDefaultFirstBucketBytes,
   * kDefaultBucketBytesCap). */
  static const double defaults[DS_VAR_COUNT] = {
      [DS_VAR_WORLD_SIZE] = 0, [DS_VAR_BATCH] = 0, [DS_VAR_NO_SYNC] = 1,
      [DS_VAR_PS_SERVERS] = 1, [DS_VAR_DP_OUTPUT_DEVICE] = 0, [DS_VAR_STRAGGLER] = 1,
      [DS_VAR_JITTER] = 0, [DS_VAR_RING_CHUNKS] = 1, [DS_VAR_COMM_HOOK] = 0,
      [DS_VAR_FIRST_BUCKET_MB] = 1, [DS_VAR_BUCKET_MB] = 25};
  for (int v = 0; v < DS_VAR_COUNT; v++) {
    o->sweep[v].v[0] = defaults[v];
    o->sweep[v].n = 1;
  }
  o->samples = 1;
  o->host_scale = 1;
  o->grad_accum = 1;
  o->iters = 2;
  o->seed = 1;
  o->nccl_extra = 1;
  /* DDP runs on NCCL: its choice of algorithm and protocol per bucket by
   * default (issue #12); --algo ring is the plain ring */
  o->algo_auto = 1;
  int proto_set = 0;
  /* --straggler (one item per straggler) and --calib (one file or list
   * each, merged) are repeatable */
  static const char *const repeatable[] = {"--straggler", "--calib", NULL};
  struct ds_cli_walk walk = {.program = "ddpsim", .options = options,
                             .repeatable = repeatable};
  for (int i = 1; i < argc; i++) {
    char flag[64];
    const char *value;
    DS_CHECK(ds_cli_next_option(&walk, argc, argv, &i, flag, sizeof flag, &value, err));
    DS_CHECK(apply(o, flag, value, &proto_set, err));
  }
  o->given = walk.seen;
  set_scalars(o);
  if (o->help || o->version) return DS_OK;
  return ds__options_finish(o, proto_set, defaults, err);
}
