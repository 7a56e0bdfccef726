/*
 * The checks and resolutions of ddpsim's options after the walk
 * (ds_options_parse's second half): combinations PyTorch or the simulator
 * does not have, options no strategy of the run would use (a list, or a
 * value other than what those strategies run anyway), and the values
 * other options decide (--proto from --algo, --iters under
 * --static-graph, --plot's timeline). Invariant: a ds_options it accepts
 * describes only configurations that run as given.
 */
#include "sim/cli/options_check.h"

#include <stdio.h>
#include <string.h>

#include "sim/cli/proto_flag.h"
#include "sim/coll/coll.h"
#include "sim/train/ddp.h"

/* The strategies of a set (bit 1 << s for strategy s) as "ddp does" or
 * "dp, ddp, ps do". */
static void users_text(unsigned users, char *buf, size_t cap) {
  int n = 0;
  buf[0] = '\0';
  for (int s = 0; s < DS_STRATEGY_COUNT; s++)
    if (users & (1u << s)) {
      size_t used = strlen(buf);
      snprintf(buf + used, cap - used, "%s%s", n++ ? ", " : "", ds_strategy_name((enum ds_strategy)s));
    }
  size_t used = strlen(buf);
  snprintf(buf + used, cap - used, " %s", n > 1 ? "do" : "does");
}

/* Options of a few strategies that are not sweep variables: a switch,
 * given, always changes what its strategies do; an option with a value
 * changes nothing when its value is one of inert (what the other
 * strategies do anyway: the option's default, or what it resolves to). */
#define BIT(s) (1u << (s))
#define DDP_ONLY BIT(DS_STRATEGY_DDP)
#define COMMUNICATING (BIT(DS_STRATEGY_DP) | BIT(DS_STRATEGY_DDP) | BIT(DS_STRATEGY_PS))
#define NCCL_USERS (BIT(DS_STRATEGY_DP) | BIT(DS_STRATEGY_DDP))
#define INERT(...) ((const char *const[]){__VA_ARGS__, NULL})
static const struct strategy_switch {
  const char *flag;
  unsigned users;           /* the strategies that read it */
  const char *const *inert; /* NULL-ended values that change nothing; NULL: a switch */
} strategy_switches[] = {
    {"--no-overlap", DDP_ONLY, NULL},
    {"--grad-as-bucket-view", DDP_ONLY, NULL},
    {"--no-broadcast-buffers", DDP_ONLY, NULL},
    {"--find-unused-parameters", DDP_ONLY, NULL},
    {"--static-graph", DDP_ONLY, NULL},
    /* ddp's all-reduces and dp's broadcasts and reduces run on NCCL's model
     * (run_setup.c ds__run_configure): ps's transfers are flows of their
     * own; --proto auto is what --algo auto resolves it to */
    {"--algo", NCCL_USERS, INERT("auto")},
    {"--proto", NCCL_USERS, INERT("auto")},
    {"--nccl-extra", NCCL_USERS, INERT("measured")},
    /* only the ring and tree all-reduces aggregate (sim/coll coll_ring.c,
     * coll_tree.c); dp's chains, gathers and scatters and ps's transfers
     * are always flows, and single has none */
    {"--coll-model", DDP_ONLY, INERT("auto", "flow")},
    /* single's one GPU sends nothing over the network */
    {"--net", COMMUNICATING, INERT("maxmin")},
    {"--dp-parallel-loss", BIT(DS_STRATEGY_DP), NULL},
    {"--ps-mode", BIT(DS_STRATEGY_PS), INERT("sync")},
    {"--ps-push", BIT(DS_STRATEGY_PS), INERT("after-backward")},
};

/* Whether value is one of the NULL-ended list inert. */
static int is_inert(const char *const *inert, const char *value) {
  for (; inert && *inert; inert++)
    if (value && strcmp(*inert, value) == 0) return 1;
  return 0;
}

/* Whether sweep variable v, given one value, is what a strategy that does
 * not use it runs anyway: single's world is one GPU (--world-size 1); the
 * others' is the option's default (--no-sync 1, --ring-chunks 1,
 * --comm-hook none, --ps-servers 1, --bucket-mb 25, ...). */
static int var_inert(const struct ds_options *o, enum ds_sweep_var v, double dflt) {
  if (v == DS_VAR_COMM_HOOK) return o->comm_hooks[0].kind == DS_HOOK_NONE;
  return o->sweep[v].v[0] == (v == DS_VAR_WORLD_SIZE ? 1 : dflt);
}

/* An option no strategy of the run uses would be silently ignored: a list
 * (it would give one value) or a value other than what those strategies
 * run anyway (--strategy single --world-size 1 is consistent, 2 is not).
 * A --straggler of rank 0 is single's too; the other ranks are checked
 * against the world size when the run starts. */
static ds_status check_unused(const struct ds_options *o, const double *dflt,
                              struct ds_err *err) {
  unsigned run = 0;
  char users[64];
  for (int32_t k = 0; k < o->n_strategies; k++) run |= BIT(o->strategies[k]);
  for (int v = 0; v < DS_VAR_COUNT; v++) {
    unsigned by = 0;
    for (int s = 0; s < DS_STRATEGY_COUNT; s++)
      if (ds_options_uses_var(o, (enum ds_strategy)s, (enum ds_sweep_var)v)) by |= BIT(s);
    if (by & run) continue;
    users_text(by, users, sizeof users);
    if (o->sweep[v].n > 1 && v == DS_VAR_STRAGGLER)
      return ds_err_set(err, DS_EUSAGE, "option --straggler %d: %d values, but no strategy of "
                        "the run uses it (%s; single runs rank 0 alone)",
                        o->stragglers[o->straggler_swept_k].rank, o->sweep[v].n, users);
    if (o->sweep[v].n > 1)
      return ds_err_set(err, DS_EUSAGE, "option %s: %d values, but no strategy of the run "
                        "uses it (%s)", ds_options_var_flag((enum ds_sweep_var)v), o->sweep[v].n, users);
    if (v != DS_VAR_STRAGGLER && ds_options_given(o, ds_options_var_flag((enum ds_sweep_var)v)) &&
        !var_inert(o, (enum ds_sweep_var)v, dflt[v])) {
      char text[32];
      ds_options_var_text(o, (enum ds_sweep_var)v, text, sizeof text);
      return ds_err_set(err, DS_EUSAGE, "option %s %s: no strategy of the run uses it (%s); "
                        "it would be ignored", ds_options_var_flag((enum ds_sweep_var)v), text, users);
    }
  }
  /* single runs rank 0 alone: another rank's factor changes nothing */
  for (int32_t k = 0; run == BIT(DS_STRATEGY_SINGLE) && k < o->n_stragglers; k++)
    if (o->stragglers[k].rank > 0)
      return ds_err_set(err, DS_EUSAGE, "option --straggler %d:%g: no strategy of the run "
                        "uses it (dp, ddp, ps do; single runs rank 0 alone); it would be "
                        "ignored", o->stragglers[k].rank, o->stragglers[k].factor);
  for (size_t i = 0; i < sizeof strategy_switches / sizeof *strategy_switches; i++) {
    const struct strategy_switch *w = &strategy_switches[i];
    const char *value = ds_options_given_value(o, w->flag);
    if ((w->users & run) || !ds_options_given(o, w->flag) || is_inert(w->inert, value))
      continue;
    /* a --proto list naming every protocol is auto (proto_flag.h), as inert */
    if (strcmp(w->flag, "--proto") == 0 && o->proto.choice == DS_PROTO_CHOICE_AUTO &&
        o->proto.disabled == 0)
      continue;
    users_text(w->users, users, sizeof users);
    return ds_err_set(err, DS_EUSAGE, "option %s%s%s: no strategy of the run uses it (%s); "
                      "it would be ignored", w->flag, value ? " " : "", value ? value : "",
                      users);
  }
  return DS_OK;
}
#undef BIT
#undef DDP_ONLY
#undef COMMUNICATING
#undef NCCL_USERS
#undef INERT

/* --loop free: built for single and ddp, whose host chains one iteration
 * to the next on one rank; dp's replicas wait for GPU 0's main thread and
 * ps's workers for their servers, whose free-running loops are not
 * modelled. */
static ds_status check_loop(const struct ds_options *o, struct ds_err *err) {
  if (!o->free_loop) return DS_OK;
  for (int32_t k = 0; k < o->n_strategies; k++)
    if (o->strategies[k] != DS_STRATEGY_SINGLE && o->strategies[k] != DS_STRATEGY_DDP)
      return ds_err_set(err, DS_EUSAGE, "option --loop free: built for --strategy single "
                        "and ddp, not %s", ds_strategy_name(o->strategies[k]));
  return DS_OK;
}

/* Whether --strategy's list holds s. */
static int runs_strategy(const struct ds_options *o, enum ds_strategy s) {
  for (int32_t k = 0; k < o->n_strategies; k++)
    if (o->strategies[k] == s) return 1;
  return 0;
}

/* Current PyTorch builds its reducer with _DEFAULT_FIRST_BUCKET_BYTES as the
 * first cap only when bucket_cap_mb is left at its default; a given
 * bucket_cap_mb caps the first bucket too (torch/nn/parallel/distributed.py,
 * the first_bucket_bytes_cap argument of dist.Reducer). So --first-bucket-mb
 * beside a different --bucket-mb is a layout current torch DDP does not make
 * (apex's DistributedDataParallel does: validation/notes-dlebert.md); run,
 * but say so once. */
static void note_first_bucket_beside_cap(const struct ds_options *o) {
  if (!runs_strategy(o, DS_STRATEGY_DDP) || o->ddp_rules != DS_DDP_RULES_CURRENT ||
      !ds_options_given(o, "--first-bucket-mb") || !ds_options_given(o, "--bucket-mb"))
    return;
  const struct ds_values *first = &o->sweep[DS_VAR_FIRST_BUCKET_MB];
  const struct ds_values *cap = &o->sweep[DS_VAR_BUCKET_MB];
  for (int32_t i = 0; i < first->n; i++)
    for (int32_t j = 0; j < cap->n; j++)
      if (first->v[i] != cap->v[j]) {
        fprintf(stderr, "ddpsim: note: --first-bucket-mb %g beside --bucket-mb %g: current "
                "PyTorch ignores _DEFAULT_FIRST_BUCKET_BYTES once bucket_cap_mb is given "
                "(its first bucket gets the cap), so this layout is another reducer's "
                "(apex's), not torch DDP's\n", first->v[i], cap->v[j]);
        return;
      }
}

/* 1.9's default_hooks.py: allreduce_hook, fp16_compress_hook and
 * fp16_compress_wrapper; bf16_compress_hook came with 1.10. */
static ds_status check_torch19_hooks(const struct ds_options *o, struct ds_err *err) {
  for (int32_t k = 0; o->ddp_rules == DS_DDP_RULES_TORCH_1_9 && k < o->sweep[DS_VAR_COMM_HOOK].n;
       k++)
    if (o->comm_hooks[k].kind == DS_HOOK_BF16)
      return ds_err_set(err, DS_EUSAGE,
                        "option --pytorch-version 1.9: PyTorch 1.9 has no bf16_compress_hook "
                        "(--comm-hook bf16; it came with 1.10): use fp16, powersgd:RANK or none");
  return DS_OK;
}

/* --grad-accum and --optimizer-batch: one of them, built for single and
 * ddp only, not with no_sync's micro-steps. */
static ds_status check_grad_accum(const struct ds_options *o, struct ds_err *err) {
  const char *flag = o->optimizer_batch > 0 ? "--optimizer-batch" : "--grad-accum";
  if (o->optimizer_batch > 0 && ds_options_given(o, "--grad-accum"))
    return ds_err_set(err, DS_EUSAGE, "options --grad-accum and --optimizer-batch: give one "
                      "(--optimizer-batch sets K from the world size and batch)");
  if (o->grad_accum <= 1 && o->optimizer_batch == 0) return DS_OK;
  for (int32_t k = 0; k < o->n_strategies; k++)
    if (o->strategies[k] != DS_STRATEGY_SINGLE && o->strategies[k] != DS_STRATEGY_DDP)
      return ds_err_set(err, DS_EUSAGE, "option %s: gradient accumulation is built for "
                        "--strategy single and ddp, not %s", flag,
                        ds_strategy_name(o->strategies[k]));
  for (int32_t k = 0; k < o->sweep[DS_VAR_NO_SYNC].n; k++)
    if (o->sweep[DS_VAR_NO_SYNC].v[k] > 1)
      return ds_err_set(err, DS_EUSAGE, "option %s with --no-sync %g: choose one (no_sync "
                        "accumulates without the all-reduce, %s all-reduces every "
                        "micro-step)", flag, o->sweep[DS_VAR_NO_SYNC].v[k], flag);
  return DS_OK;
}

ds_status ds__options_finish(struct ds_options *o, int proto_set, const double *defaults,
                             struct ds_err *err) {
  /* the reported (last) iteration is the first with rebuilt buckets: under
   * static_graph PyTorch's first backward records no gradient order
   * (reducer.cpp autograd_hook returns at static_graph_first_iteration),
   * the second does, and DDP's forward rebuilds before iteration 2. An
   * earlier last iteration would report a time with the initial buckets
   * beside the rebuilt ones' list, a state training leaves after two
   * steps: refused, as --iters 1 is without static_graph. */
  if (o->static_graph && !ds_options_given(o, "--iters")) o->iters = 3;
  if (o->static_graph && o->iters < 3)
    return ds_err_set(err, DS_EUSAGE,
                      "option --iters: --static-graph needs 3 or more (PyTorch rebuilds its "
                      "buckets before iteration 2, and the last iteration is the one "
                      "reported), got %d", (int)o->iters);
  if (o->static_graph && o->find_unused_parameters)
    return ds_err_set(err, DS_EUSAGE,
                      "--static-graph and --find-unused-parameters: choose one (PyTorch "
                      "ignores find_unused_parameters under a static graph)");
  if (o->ddp_rules == DS_DDP_RULES_TORCH_1_4) {
    /* DDP options PyTorch 1.4 did not have */
    const char *newer = o->static_graph          ? "--static-graph"
                        : o->grad_as_bucket_view ? "--grad-as-bucket-view"
                        : o->amp != DS_AMP_NONE  ? "--amp"
                        : NULL;
    for (int32_t k = 0; !newer && k < o->sweep[DS_VAR_COMM_HOOK].n; k++)
      if (o->comm_hooks[k].kind != DS_HOOK_NONE) newer = "--comm-hook";
    if (newer)
      return ds_err_set(err, DS_EUSAGE,
                        "option --pytorch-version 1.4: PyTorch 1.4 has no %s "
                        "(static_graph, gradient_as_bucket_view, comm hooks and torch.cuda.amp "
                        "came later)",
                        newer);
  }
  if (o->ddp_rules == DS_DDP_RULES_TORCH_1_9 && o->static_graph)
    return ds_err_set(err, DS_EUSAGE,
                      "option --pytorch-version 1.9: PyTorch 1.9 has no static_graph argument "
                      "(its experimental _set_static_graph() is not modelled)");
  DS_CHECK(check_torch19_hooks(o, err));
  if (o->ddp_rules == DS_DDP_RULES_TORCH_1_9 && ds_options_given(o, "--first-bucket-mb"))
    return ds_err_set(err, DS_EUSAGE, DS_DDP_TORCH19_FIRST_BUCKET_REFUSAL);
  DS_CHECK(check_grad_accum(o, err));
  DS_CHECK(check_loop(o, err));
  /* --jitter's draws are the only random input (sim/train/jitter.c, the
   * one use of the seed): without them every seed runs one timeline, and
   * its p50/p95/p99 would pass a repeat off as a distribution, and a
   * --seed would change nothing it seems to. */
  int noisy = 0;
  for (int32_t k = 0; k < o->sweep[DS_VAR_JITTER].n; k++)
    noisy |= o->sweep[DS_VAR_JITTER].v[k] > 0;
  if (o->samples > 1 && !noisy)
    return ds_err_set(err, DS_EUSAGE, "option --samples %d: seeds differ only in --jitter's "
                      "draws, the one random input, so without --jitter (or at CV 0) every "
                      "sample is the same timeline; give --jitter CV, or --samples 1",
                      o->samples);
  if (ds_options_given(o, "--seed") && !noisy)
    return ds_err_set(err, DS_EUSAGE, "option --seed %llu: seeds differ only in --jitter's "
                      "draws, the one random input, so without --jitter (or at CV 0) every "
                      "seed is the same timeline; give --jitter CV, or leave --seed out",
                      (unsigned long long)o->seed);
  unsigned long long last_seed = (unsigned long long)o->seed + (unsigned long long)o->samples - 1;
  if (last_seed > (unsigned long long)DS_SEED_MAX) {
    /* what mt19937 would make of it (jitter.c): the low 32 bits, 0 as 4357 */
    unsigned long long as = last_seed & 0xffffffffULL ? last_seed & 0xffffffffULL : 4357;
    return ds_err_set(err, DS_EUSAGE, "options --seed %llu --samples %d: the last sample's "
                      "seed %llu passes %lld (GSL's mt19937 keeps a seed's low 32 bits, so it "
                      "would repeat seed %llu's timeline); give a smaller --seed",
                      (unsigned long long)o->seed, o->samples, last_seed,
                      (long long)DS_SEED_MAX, as);
  }
  /* --tf32 chooses fp32 math (compute.c ds_compute_set_tf32): under --dtype
   * fp16 or bf16 every class runs in the half type whatever it says, so
   * all or none would change nothing (conv, the default, is accepted as
   * the run anyway); --amp keeps fp32 GEMMs (PowerSGD's) that all moves */
  if (o->dtype != DS_DTYPE_FP32 && o->tf32 != DS_TF32_CONV)
    return ds_err_set(err, DS_EUSAGE, "option --tf32 %s: the TF32 switch of fp32 math, but "
                      "--dtype %s runs every convolution and matmul in %s; it would be "
                      "ignored (drop it, or train in fp32: --dtype fp32 or --amp)",
                      ds_tf32_name(o->tf32), ds_dtype_name(o->dtype), ds_dtype_name(o->dtype));
  /* Under --amp autocast runs every convolution, matmul and attention (and
   * every layer without a class) in the half type, so the one fp32 math
   * left is PowerSGD's GEMMs: matmuls, which none leaves in FP32 as conv
   * does and all moves to TF32. Without PowerSGD in the run, all and none
   * changed nothing (every shipped model, fp16 and bf16) yet printed
   * "flags: --tf32 all" and CSV tf32 "all". */
  if (o->amp != DS_AMP_NONE && o->tf32 != DS_TF32_CONV) {
    int powersgd = 0;
    for (int32_t k = 0; k < o->sweep[DS_VAR_COMM_HOOK].n; k++)
      powersgd |= o->comm_hooks[k].kind == DS_HOOK_POWERSGD;
    if (o->tf32 == DS_TF32_NONE || !powersgd)
      return ds_err_set(err, DS_EUSAGE, "option --tf32 %s: the TF32 switch of fp32 math, but "
                        "--amp %s runs every convolution and matmul in %s%s; it would be "
                        "ignored (drop it)", ds_tf32_name(o->tf32), ds_amp_name(o->amp),
                        ds_amp_name(o->amp),
                        o->tf32 == DS_TF32_NONE
                            ? ", and PowerSGD's fp32 GEMMs run in FP32 under conv too"
                            : " (only --comm-hook powersgd:RANK's fp32 GEMMs would move to TF32)");
  }
  if (o->no_bn_weight_decay && !o->weight_decay)
    return ds_err_set(err, DS_EUSAGE, "option --no-bn-weight-decay: needs --weight-decay "
                      "(without it no parameter decays)");
  /* GradScaler's step() unscales and checks every gradient, then skips the
   * whole step if any is infinite, all with the optimizer beside the
   * gradients (torch/amp/grad_scaler.py). Under ps the optimizer runs on
   * the servers, each over its shard: unscaling there is a kernel, but the
   * all-shards skip decision and the new scale back to the workers are a
   * protocol between servers and workers that PyTorch does not have and
   * ps.c does not model, so the combination is refused rather than priced
   * without them (bf16 autocast runs no GradScaler). */
  if (o->amp == DS_AMP_FP16 && runs_strategy(o, DS_STRATEGY_PS))
    return ds_err_set(err, DS_EUSAGE,
                      "option --amp fp16: not built for --strategy ps (GradScaler's step "
                      "needs the optimizer beside the gradients; ps's servers would have "
                      "to agree on skipping a step with an infinite gradient and send the "
                      "new scale back, which is not modelled); use --amp bf16, which "
                      "needs no GradScaler");
  /* --optimizer bertadam is run_squad.py's fp32 step as the script
   * builds it (compute.h): its groups decay by name, its clipper runs
   * every micro-step, its PyTorch is 1.10 or later (1.4's clip_grad_norm_
   * syncs per tensor), and under --fp16 the script runs apex's FusedAdam
   * with O2 master weights instead (--optimizer apex-o2-fusedadam). */
  if (ds_options_given(o, "--optimizer") && o->optimizer == DS_OPT_BERTADAM) {
    if (o->weight_decay || o->no_bn_weight_decay)
      return ds_err_set(err, DS_EUSAGE, "option %s: --optimizer bertadam decays by "
                        "run_squad.py's parameter names (weight_decay 0.01, 0 on bias and "
                        "LayerNorm.weight); drop it",
                        o->weight_decay ? "--weight-decay" : "--no-bn-weight-decay");
    if (o->amp != DS_AMP_NONE || o->dtype != DS_DTYPE_FP32)
      return ds_err_set(err, DS_EUSAGE, "option --optimizer bertadam: run_squad.py's fp32 "
                        "step, not with %s (its --fp16 path, apex FusedAdam with O2 master "
                        "weights, is --optimizer apex-o2-fusedadam --dtype fp16)",
                        o->amp != DS_AMP_NONE ? "--amp" : "--dtype other than fp32");
    if (o->ddp_rules == DS_DDP_RULES_TORCH_1_4)
      return ds_err_set(err, DS_EUSAGE, "option --optimizer bertadam: its clip_grad_norm_ "
                        "is PyTorch 1.10's or later's, not with --pytorch-version 1.4 (whose "
                        "clip_grad_norm_ syncs per tensor)");
    /* --grad-accum 1 is the script's own default: no accumulation */
    if (o->grad_accum > 1 || o->optimizer_batch > 0)
      return ds_err_set(err, DS_EUSAGE, "option %s: not built for --optimizer bertadam "
                        "(run_squad.py clips every micro-step, before its accumulation "
                        "check)",
                        o->optimizer_batch > 0 ? "--optimizer-batch" : "--grad-accum");
    if (runs_strategy(o, DS_STRATEGY_PS))
      return ds_err_set(err, DS_EUSAGE, "option --optimizer bertadam: not built for "
                        "--strategy ps (use single, dp or ddp)");
  }
  /* --optimizer apex-o2-fusedadam is run_squad.py's --fp16 step (compute.h):
   * amp O2 casts the whole model to fp16 (--dtype fp16, no autocast), its
   * groups decay by name, it zeroes and drops the fp16 gradients itself
   * whatever the PyTorch (so no --pytorch-version rules), and its unscale
   * and clipper run on every backward. Built for single and ddp. */
  if (ds_options_given(o, "--optimizer") && o->optimizer == DS_OPT_APEX_O2) {
    if (o->amp != DS_AMP_NONE)
      return ds_err_set(err, DS_EUSAGE, "option --amp: --optimizer apex-o2-fusedadam is apex "
                        "amp O2, which casts the model to fp16 and patches no function "
                        "(no autocast); use --dtype fp16 without --amp");
    if (o->dtype != DS_DTYPE_FP16)
      return ds_err_set(err, DS_EUSAGE, "option --optimizer apex-o2-fusedadam: needs --dtype "
                        "fp16 (amp O2 casts the whole model to fp16, its fp32 master weights "
                        "live in the optimizer)");
    if (o->weight_decay || o->no_bn_weight_decay)
      return ds_err_set(err, DS_EUSAGE, "option %s: --optimizer apex-o2-fusedadam decays by "
                        "run_squad.py's parameter names (weight_decay 0.01, 0 on bias and "
                        "LayerNorm.weight); drop it",
                        o->weight_decay ? "--weight-decay" : "--no-bn-weight-decay");
    if (ds_options_given(o, "--pytorch-version"))
      return ds_err_set(err, DS_EUSAGE, "option --pytorch-version: not with --optimizer "
                        "apex-o2-fusedadam, whose zero_grad and dropped gradients are amp's "
                        "whatever the PyTorch, and whose step is built under current rules "
                        "only; drop it");
    int no_sync = 0;
    for (int32_t k = 0; k < o->sweep[DS_VAR_NO_SYNC].n; k++)
      no_sync |= o->sweep[DS_VAR_NO_SYNC].v[k] > 1;
    if (o->grad_accum > 1 || o->optimizer_batch > 0 || no_sync)
      return ds_err_set(err, DS_EUSAGE, "option %s: not built for --optimizer "
                        "apex-o2-fusedadam (amp unscales into new master gradients and "
                        "run_squad.py clips after every backward)",
                        o->optimizer_batch > 0 ? "--optimizer-batch"
                        : no_sync              ? "--no-sync"
                                               : "--grad-accum");
    for (int32_t k = 0; k < o->n_strategies; k++)
      if (o->strategies[k] == DS_STRATEGY_PS || o->strategies[k] == DS_STRATEGY_DP)
        return ds_err_set(err, DS_EUSAGE, "option --optimizer apex-o2-fusedadam: not built "
                          "for --strategy %s (use single or ddp)",
                          o->strategies[k] == DS_STRATEGY_PS ? "ps" : "dp");
  }
  if (ds_options_given(o, "--optimizer") && o->optimizer == DS_OPT_NONE && o->weight_decay)
    return ds_err_set(err, DS_EUSAGE, "option --weight-decay: the optimizer's weight_decay, "
                      "but --optimizer none runs no optimizer");
  /* accumulation counts micro-steps per optimizer step: with no step there
   * is nothing to count (a loop of forward and backward alone is K = 1) */
  int no_step = ds_options_given(o, "--optimizer") && o->optimizer == DS_OPT_NONE;
  if (no_step && (ds_options_given(o, "--grad-accum") || o->optimizer_batch > 0))
    return ds_err_set(err, DS_EUSAGE, "option %s: micro-steps per optimizer step, but "
                      "--optimizer none runs no optimizer step",
                      o->optimizer_batch > 0 ? "--optimizer-batch" : "--grad-accum");
  /* A parameter server is the optimizer: its servers apply the pushed
   * gradients to the parameters the workers pull (ps.h), so a loop
   * without optimizer.step() has no meaning there. */
  if (no_step && runs_strategy(o, DS_STRATEGY_PS))
    return ds_err_set(err, DS_EUSAGE,
                      "option --optimizer none: not built for --strategy ps (its servers "
                      "apply the pushed gradients, the optimizer's step, and the workers "
                      "pull the result; without a step there is nothing to pull); use "
                      "--optimizer sgd or adam, or --strategy single, dp or ddp");
  if (o->no_bn_weight_decay && runs_strategy(o, DS_STRATEGY_PS))
    return ds_err_set(err, DS_EUSAGE, "option --no-bn-weight-decay: not built for "
                      "--strategy ps (its servers decay every tensor)");
  /* nvls exists only under NCCL's model; direct, reduce-broadcast and
   * hierarchical are not NCCL's, so they have no protocol. */
  int nccl_only = !o->algo_auto && o->ar_algo == DS_AR_NVLS;
  if (!proto_set)
    o->proto.choice = o->algo_auto || nccl_only ? DS_PROTO_CHOICE_AUTO : DS_PROTO_CHOICE_NONE;
  if (!o->algo_auto && o->proto.choice != DS_PROTO_CHOICE_NONE &&
      (o->ar_algo == DS_AR_DIRECT || o->ar_algo == DS_AR_REDUCE_BCAST ||
       o->ar_algo == DS_AR_HIER))
    return ds_err_set(err, DS_EUSAGE,
                      "option --proto: NCCL has no %s algorithm, so no protocol (use "
                      "--proto none)", ds_ar_algo_name(o->ar_algo));
  if (nccl_only && !ds_proto_flag_admits(&o->proto, DS_PROTO_SIMPLE))
    return ds_err_set(err, DS_EUSAGE,
                      "option --proto: nvls runs only under NCCL's model, with Simple "
                      "(use --proto Simple or auto, or a set with Simple)");
  if (o->algo_auto && o->proto.choice == DS_PROTO_CHOICE_NONE)
    return ds_err_set(err, DS_EUSAGE,
                      "option --proto: none is the plain ring, not an NCCL choice: use "
                      "--algo ring --proto none, or a protocol with --algo auto");
  /* measured extras on the plain algorithm mean nothing; none is what it
   * has, so an explicit none (docs/collectives.md's protocol loops) is
   * accepted */
  if (ds_options_given(o, "--nccl-extra") && o->nccl_extra &&
      o->proto.choice == DS_PROTO_CHOICE_NONE) {
    int ddp = runs_strategy(o, DS_STRATEGY_DDP), dp = runs_strategy(o, DS_STRATEGY_DP);
    char what[96];
    if (dp && !ddp) snprintf(what, sizeof what, "dp's broadcasts and reduces");
    else
      snprintf(what, sizeof what, "ddp's all-reduce %s%s", ds_ar_algo_name(o->ar_algo),
               dp ? " and dp's broadcasts and reduces" : "");
    return ds_nccl_extra_refuse(what, o->ar_algo == DS_AR_RING || o->ar_algo == DS_AR_TREE, err);
  }
  if (!o->topo)
    return ds_err_set(err, DS_EUSAGE, "missing --topo (e.g. --topo 4gpu.yaml; see ddpsim --help)");
  int64_t n_configs = ds_options_n_configs(o);
  if (n_configs > DS_MAX_CONFIGS)
    return ds_err_set(err, DS_EUSAGE, "the sweep has %lld configurations; at most %d: "
                      "give fewer values", (long long)n_configs, DS_MAX_CONFIGS);
  if ((o->trace || o->schedule) && o->n_strategies > 1)
    return ds_err_set(err, DS_EUSAGE,
                      "--trace and --schedule describe one configuration: give one --strategy");
  for (int v = DS_VAR_COUNT - 1; v >= 0; v--)
    if ((o->trace || o->schedule) && o->sweep[v].n > 1)
      return ds_err_set(err, DS_EUSAGE,
                        "--trace and --schedule describe one configuration: give one %s value",
                        ds_options_var_flag((enum ds_sweep_var)v));
  DS_CHECK(check_unused(o, defaults, err));
  /* --chrome is one run's timeline, as --trace is. */
  if (o->chrome && o->n_strategies > 1)
    return ds_err_set(err, DS_EUSAGE, "option --chrome writes one configuration's "
                      "timeline: give one --strategy");
  for (int v = DS_VAR_COUNT - 1; v >= 0; v--)
    if (o->chrome && o->sweep[v].n > 1)
      return ds_err_set(err, DS_EUSAGE, "option --chrome writes one configuration's "
                        "timeline: give one %s value, not a sweep", ds_options_var_flag((enum ds_sweep_var)v));
  int varying = 0;
  for (int v = 0; v < DS_VAR_COUNT; v++) varying += o->sweep[v].n > 1;
  /* --plot with nothing swept draws the run's timeline (analysis/). */
  o->plot_timeline = o->plot && !o->measured && varying == 0 && o->n_strategies == 1;
  const char *one = o->plot && !o->measured ? "--plot" : "--measured";
  if ((o->plot || o->measured) && o->n_strategies > 1)
    return ds_err_set(err, DS_EUSAGE, "option %s draws a sweep of one strategy%s: give "
                      "one --strategy", one, o->plot && !o->measured && varying == 0
                      ? " or one run's timeline" : "");
  if ((o->plot || o->measured) && !o->plot_timeline && varying != 1)
    return ds_err_set(err, DS_EUSAGE, "option %s draws a sweep of one option: give "
                      "a list or range to exactly one option (%d given; docs/sweeps.md)%s",
                      one, varying, o->plot && !o->measured
                      ? ", or none for the run's timeline" : "");
  /* the comparison is the text report's and the points --plot's; CSV and
   * JSON stay tables, so without --plot the file would change nothing */
  if (o->measured && !o->plot && o->format != DS_FORMAT_TEXT)
    return ds_err_set(err, DS_EUSAGE, "option --measured: with --format %s and no --plot it "
                      "would be ignored (the comparison is the text report's, the points "
                      "--plot's): give --format text or --plot FILE.png",
                      o->format == DS_FORMAT_CSV ? "csv" : "json");
  for (int32_t k = 0; k < o->sweep[DS_VAR_RING_CHUNKS].n; k++)
    if (o->sweep[DS_VAR_RING_CHUNKS].v[k] > 1 && o->coll_model == DS_COLL_CHOICE_AGGREGATE)
      return ds_ring_chunks_aggregate_refuse(0, err);
  note_first_bucket_beside_cap(o);
  return DS_OK;
}
