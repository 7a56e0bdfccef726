/*
 * One configuration's setup (see run_setup.h). Every configuration of a
 * sweep gets its own ring and NCCL model from the files loaded once; the
 * options column and the trace header's inputs say what the row ran.
 */
#include "sim/cli/run_setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/textout.h"
#include "sim/cli/proto_flag.h"
#include "sim/coll/ring_rails.h"
#include "sim/train/comm_hook.h"
#include "sim/train/jitter.h"
#include "sim/train/kernel_models.h"
#include "sim/train/rates.h"

/* The optimizer column: the loop's optimizer, and its weight decay when
 * --weight-decay (and --no-bn-weight-decay) set one, which changes the
 * step. String literals: a sweep's rows come back from its workers with
 * only their own strings repointed (sweep.c). */
const char *ds__run_optimizer_field(enum ds_optimizer opt, const struct ds_options *o) {
  static const char *const decayed[][2] = {
      [DS_OPT_SGD] = {"sgd;weight_decay", "sgd;weight_decay;no_bn_weight_decay"},
      [DS_OPT_ADAM] = {"adam;weight_decay", "adam;weight_decay;no_bn_weight_decay"}};
  if (!o->weight_decay || (opt != DS_OPT_SGD && opt != DS_OPT_ADAM))
    return ds_optimizer_name(opt);
  return decayed[opt][o->no_bn_weight_decay ? 1 : 0];
}

/* Appends one ';'-separated item to buf (never overflows). */
void ds__run_append_item(char *buf, size_t cap, const char *item) {
  size_t used = strlen(buf);
  snprintf(buf + used, cap - used, "%s%s", used ? ";" : "", item);
}

/* --pytorch-version as an options item ("pytorch=1.9"). */
const char *ds__run_pytorch_item(enum ds_ddp_rules rules) {
  return rules == DS_DDP_RULES_TORCH_1_4 ? "pytorch=1.4" : "pytorch=1.9";
}

/* The DDP options in effect, as one CSV-safe field. */
static void describe_ddp_options(const struct ds_options *o, int32_t grad_accum, char *buf,
                                 size_t cap) {
  char k[32];
  buf[0] = '\0';
  if (o->no_overlap) ds__run_append_item(buf, cap, "no_overlap");
  if (o->no_sync > 1) {
    snprintf(k, sizeof k, "no_sync=%d", o->no_sync);
    ds__run_append_item(buf, cap, k);
  }
  if (o->grad_as_bucket_view) ds__run_append_item(buf, cap, "grad_as_bucket_view");
  if (o->no_broadcast_buffers) ds__run_append_item(buf, cap, "broadcast_buffers=False");
  if (o->find_unused_parameters) ds__run_append_item(buf, cap, "find_unused_parameters");
  if (o->static_graph) ds__run_append_item(buf, cap, "static_graph");
  if (o->ddp_rules != DS_DDP_RULES_CURRENT)
    ds__run_append_item(buf, cap, ds__run_pytorch_item(o->ddp_rules));
  if (grad_accum > 1) {
    snprintf(k, sizeof k, "grad_accum=%d", grad_accum);
    ds__run_append_item(buf, cap, k);
  }
  if (o->free_loop) ds__run_append_item(buf, cap, "loop=free");
  if (o->comm_hook.kind != DS_HOOK_NONE) {
    char h[20];
    ds_comm_hook_name(&o->comm_hook, h, sizeof h);
    snprintf(k, sizeof k, "comm_hook=%s", h);
    ds__run_append_item(buf, cap, k);
  }
  if (buf[0] == '\0') snprintf(buf, cap, "none");
}

_Static_assert(DS_SUMMARY_MAX_STRAGGLERS == DS_MAX_STRAGGLERS,
               "a row holds every --straggler");

/* The row's options that change its numbers and that no other column
 * says (report.h): tf32, memory_format, host_scale, calib, calib_gpu,
 * nccl_extra, ring_chunks, stragglers, seed. Each is the value in effect:
 * nccl_extra "none" where no NCCL model runs (nothing to add to), the
 * stragglers of the ranks the row has (a single row: rank 0's). */
void ds__run_fill_provenance(const struct config_run *c, struct ds_summary *s) {
  const struct ds_options *o = c->opt;
  s->tf32 = ds_tf32_name(o->tf32);
  s->channels_last = o->channels_last;
  s->host_scale = o->host_scale;
  s->calib = o->calib;
  s->calib_keys = c->calib_keys;
  s->calib_gpu_fit = c->topo->compute.calib_gpu_fit;
  s->nccl_extra = c->use_nccl && o->nccl_extra ? "measured" : "none";
  s->ll128_default_off = c->use_nccl && !o->proto.named && c->nccl.ll128_off_by_default;
  s->uneven_nodes[0] = '\0';
  /* out of memory here only loses the note (ds_ring_nodes_uneven: -1) */
  if (o->strategy_id == DS_STRATEGY_DDP && c->world > 1 && c->ring.gpus)
    (void)ds_ring_nodes_uneven(c->topo, c->ring.gpus, c->world, s->uneven_nodes,
                               sizeof s->uneven_nodes);
  s->opt_ring_chunks = o->ring_chunks;
  s->seed = o->seed;
  s->n_stragglers = 0;
  for (int32_t k = 0; k < o->n_stragglers; k++)
    if (o->stragglers[k].rank < c->world)
      s->stragglers[s->n_stragglers++] =
          (struct ds_summary_straggler){o->stragglers[k].rank, o->stragglers[k].factor};
}

/* Who holds what, for ds_ddp_memory (memory.h), as the options say: .grad
 * live at backward's start when 1.4/1.9's zero_grad() keeps it or an
 * earlier micro-step of gradient accumulation or no_sync left it (the
 * later ones add into it); the step's loop or foreach, and weight decay.
 * The caller adds DDP's buckets. */
struct ds_memory_options ds__run_memory_options(const struct config_run *c,
                                                const struct ds_options *o,
                                                enum ds_strategy strategy) {
  return (struct ds_memory_options){
      .grads_kept = c->compute.grad_kept || c->grad_accum > 1 ||
                    (strategy == DS_STRATEGY_DDP && o->no_sync > 1),
      .grads_set_to_none = !c->compute.grad_kept,
      .no_sync_grads = strategy == DS_STRATEGY_DDP && o->no_sync > 1,
      .step_numel = (double)c->model->total_numel,
      .optimizer_loop = c->compute.optimizer_loop,
      .weight_decay = c->compute.weight_decay};
}

ds_status ds__run_write_schedule(const char *path, struct ds_schedule *s, const double *factor,
                                 const struct ds_csv_meta *meta, struct ds_err *err) {
  if (!factor) return ds_schedule_write_csv(path, s, meta, err);
  /* the builder's durations kept aside, not divided back: x * f / f need
   * not be x */
  double *kept = malloc((s->n_ops ? s->n_ops : 1) * sizeof *kept);
  if (!kept) return ds_err_set(err, DS_ENOMEM, "writing %s: out of memory", path);
  for (size_t i = 0; i < s->n_ops; i++) {
    struct ds_op *o = &s->ops[i];
    kept[i] = o->dur_us;
    o->dur_us *= ds_straggler_op_factor(factor, o->rank, o);
  }
  ds_status st = ds_schedule_write_csv(path, s, meta, err);
  for (size_t i = 0; i < s->n_ops; i++) s->ops[i].dur_us = kept[i];
  free(kept);
  return st;
}

/* --straggler factors of the configuration's ranks (factor[0 .. c->world)).
 * run.c checked the ranks against the largest world of the run; a smaller
 * configuration (a --world-size sweep, the single-GPU row) keeps the
 * factors of the ranks it has. */
ds_status ds__run_rank_factors(const struct config_run *c, double **out, struct ds_err *err) {
  const struct ds_options *o = c->opt;
  int32_t n = c->world;
  for (int32_t k = 0; k < o->n_stragglers; k++)
    if (o->stragglers[k].rank >= n) n = o->stragglers[k].rank + 1;
  *out = malloc((size_t)n * sizeof **out);
  if (!*out) return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = ds_options_rank_factors(o, n, *out, err);
  if (st != DS_OK) {
    free(*out);
    *out = NULL;
  }
  return st;
}

/* After a row's run: what its pricing charged (compute.h struct
 * ds_compute_charged, which run.c run_config points c->compute at): PowerSGD's
 * GEMM rate among the compute rates, and the kernel models. Their pass
 * counts come from a census that prices each layer's forward and backward
 * and the loss once at the row's batch (the run prices a layer as often as
 * its schedule asks, so its own counts are no count of passes). */
void ds__run_record_charged(const struct config_run *c, struct ds_summary *s) {
  const struct ds_compute_charged *ch = c->compute.charged;
  if (ch && ch->grad_gemm) ds_rates_add_grad_gemm(&c->compute, &s->rates);
  struct ds_compute_charged census = {0};
  struct ds_compute priced = c->compute;
  priced.charged = &census;
  for (int32_t i = 0; i < c->model->n_layers; i++) {
    ds_compute_fwd_ns(&priced, &c->model->layers[i], c->batch);
    ds_compute_bwd_ns(&priced, &c->model->layers[i], c->batch);
  }
  double loss_bytes;
  ds_compute_loss_ns(&priced, c->model, (double)c->batch, &loss_bytes);
  ds_kernel_models_fill(&c->compute, c->topo->gpu.name, ch ? ch->kernel_models : 0, &census,
                        &s->kernel_models);
}

/* NCCL's protocols for the all-reduces (--algo auto / --proto): the model
 * of the full ring, or the plain ring when --algo auto cannot have one (an
 * unknown GPU architecture), said on stderr. An explicit protocol without a
 * model is a usage error. */
static ds_status setup_nccl(struct config_run *c, const struct ds_options *o,
                            int quiet, struct ds_err *err) {
  /* coll_algo: the algorithm ("auto": NCCL's per bucket), "/" the protocol
   * ("auto": NCCL's per bucket) when NCCL's model runs it. */
  snprintf(c->coll_algo, sizeof c->coll_algo, "%s", ds_ar_algo_name(o->ar_algo));
  if (o->proto.choice == DS_PROTO_CHOICE_NONE) return DS_OK;
  struct ds_err why = {0};
  struct ds_nccl_extra extra = o->nccl_extra ? DS_NCCL_EXTRA_MEASURED : DS_NCCL_EXTRA_NONE;
  /* --calib's measured per-call launch replaces the fitted one */
  if (o->nccl_extra && c->topo->compute.nccl_launch_ns > 0)
    extra.launch_ns = c->topo->compute.nccl_launch_ns;
  const char *no;
  int nvls = !o->algo_auto && o->ar_algo == DS_AR_NVLS;
  if (ds_nccl_model_build(c->topo, &c->ring, extra, &c->nccl, &why) == DS_OK) {
    if (nvls && !ds_nccl_algo_available(&c->nccl, DS_AR_NVLS, DS_PROTO_SIMPLE, &no))
      return ds_err_set(err, DS_EUSAGE, "option --algo nvls: cannot run here: %s", no);
    c->use_nccl = 1;
    /* a --proto set: NCCL chooses among its protocols only (NCCL_PROTO) */
    ds_nccl_model_proto_env(&c->nccl, o->proto.named,
                            o->proto.choice == DS_PROTO_CHOICE_AUTO ? o->proto.disabled : 0);
    char proto[24]; /* "+" between a set's names: coll_algo is a CSV column */
    ds_proto_flag_name(&o->proto, '+', proto, sizeof proto);
    if (o->algo_auto && !o->proto.named)
      snprintf(c->coll_algo, sizeof c->coll_algo, "auto");
    else
      snprintf(c->coll_algo, sizeof c->coll_algo, "%s/%s",
               o->algo_auto ? "auto" : ds_ar_algo_name(o->ar_algo), proto);
    return DS_OK;
  }
  /* nvls, an explicit protocol or a set of protocols needs NCCL's model */
  if (nvls) return ds_err_set(err, DS_EUSAGE, "option --algo nvls: %s", why.msg);
  DS_CHECK(ds_proto_flag_require_model("--proto", &o->proto, why.msg, err));
  /* NCCL's choice by default: where its model is unavailable (a GPU it
   * has no constants for) the plain ring runs, as the summary says; only an
   * explicit --algo gets the note */
  if (!quiet && ds_options_given(o, "--algo"))
    fprintf(stderr, "ddpsim: note: %s; --algo %s runs the plain %s\n", why.msg,
            o->algo_auto ? "auto" : ds_ar_algo_name(o->ar_algo), ds_ar_algo_name(o->ar_algo));
  return DS_OK;
}

/* --ring-chunks > 1 under ddp: refused where it cuts none of ddp's
 * collectives (sim/coll ds_coll_ring_chunks_use): NCCL's model runs them
 * (it pipelines by its own chunks and slices), or the all-reduce has no
 * ring step (direct, reduce-broadcast) and no buffer broadcast (a chain,
 * which the chunks cut) runs. */
static ds_status check_ddp_ring_chunks(const struct config_run *c, const struct ds_options *o,
                                       struct ds_err *err) {
  enum ds_ar_algo algo = o->algo_auto ? DS_AR_RING : o->ar_algo;
  enum ds_ring_chunks_use use = ds_coll_ring_chunks_use(DS_COLL_ALLREDUCE, algo, c->use_nccl);
  int broadcasts = !o->no_broadcast_buffers && c->model->n_buffers > 0;
  if (use == DS_RING_CHUNKS_CUT || (use == DS_RING_CHUNKS_NO_STEP && broadcasts)) return DS_OK;
  char what[96];
  snprintf(what, sizeof what, use == DS_RING_CHUNKS_NCCL ? "ddp's collectives"
                              : "ddp's run (all-reduce %s, no buffer broadcast)",
           ds_ar_algo_name(algo));
  return ds_ring_chunks_refuse(use, what, &o->proto, err);
}

/* An all-reduce algorithm chosen by name that runs per flow whatever
 * --coll-model says (sim/coll ds_coll_aggregates): direct,
 * reduce-broadcast, and NVLS within one node, where it is no NVLSTree.
 * After c->ring is built. */
static int per_flow_only(const struct ds_options *o, const struct config_run *c) {
  return !o->algo_auto && !ds_coll_aggregates(DS_COLL_ALLREDUCE, o->ar_algo,
                                              ds_ring_spans_nodes(c->topo, &c->ring));
}

/* dp's --algo: NCCL runs broadcast and reduce on the ring alone (v2.30.7
 * src/graph/tuning.cc:294 skips every other algorithm for them), so auto
 * (NCCL's ring, its protocol per size) and ring (the plain chain; with
 * --proto, NCCL's ring under it) are what dp can run. */
static ds_status check_dp_algo(const struct ds_options *o, struct ds_err *err) {
  if (o->algo_auto || o->ar_algo == DS_AR_RING) return DS_OK;
  return ds_err_set(err, DS_EUSAGE, "option --algo %s: --strategy dp's broadcasts and "
                    "reduces run NCCL's ring, its only algorithm for them (give --algo auto, "
                    "or --algo ring for the plain chains on the links' own bandwidth and "
                    "latency)", ds_ar_algo_name(o->ar_algo));
}

/* One configuration's setup (o holds its values); quiet: notes already
 * said by configuration 0. */
ds_status ds__run_configure(struct config_run *c, const struct loaded *ld,
                            const struct ds_options *o, int quiet, struct ds_err *err) {
  const char *topo_path = ld->topo_path, *model_path = ld->model_path;
  c->topo = ld->topo;
  c->model = ld->model;
  c->compute = ld->compute;
  c->calib_keys = ld->calib_keys[0] ? ld->calib_keys : NULL;
  /* --host-scale, and the host range's re-runs (host_range.c): after --calib */
  if (o->host_scale != 1) ds_topo_scale_host(&c->compute.params, o->host_scale);
  c->world = o->world_size ? o->world_size : c->topo->n_gpus;
  if (o->strategy_id == DS_STRATEGY_SINGLE) c->world = 1; /* the baseline: one GPU */
  DS_CHECK(ds__run_check_world(ld, c->world, err));
  if (o->strategy_id == DS_STRATEGY_DP && c->world > c->topo->gpus_per_node)
    return ds_err_set(err, DS_EUSAGE, "--strategy dp: torch.nn.DataParallel drives its GPUs "
                      "from one process on one node, but %d ranks span more than the %d GPUs "
                      "of a node of %s (give --world-size %d or less)", c->world,
                      c->topo->gpus_per_node, topo_path, c->topo->gpus_per_node);
  if (o->strategy_id == DS_STRATEGY_DP && o->dp_output_device >= c->world)
    return ds_err_set(err, DS_EUSAGE, "option --dp-output-device: expected a GPU index "
                      "below the world size %d, got %d", c->world, o->dp_output_device);
  c->batch = o->batch ? o->batch : c->model->default_batch;
  c->grad_accum = ds_options_grad_accum(o, c->world, c->batch, err);
  if (c->grad_accum < 0) return DS_EUSAGE;
  int32_t *gpus = malloc((size_t)c->world * sizeof *gpus);
  if (!gpus) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (int32_t r = 0; r < c->world; r++) gpus[r] = r;
  ds_status st = ds_ring_build_rails(c->topo, gpus, c->world, &c->ring, err);
  free(gpus);
  DS_CHECK(st);
  switch (o->coll_model) {
  case DS_COLL_CHOICE_FLOW: c->coll_model = DS_COLL_FLOW; break;
  case DS_COLL_CHOICE_AGGREGATE: c->coll_model = DS_COLL_AGGREGATE; break;
  default:
    c->coll_model = c->world > DS_AUTO_AGGREGATE_ABOVE ? DS_COLL_AGGREGATE
                                                        : DS_COLL_FLOW;
  }
  /* only ddp's all-reduces aggregate (sim/coll ds_coll_aggregates); dp's chains,
   * gathers and scatters are flows whatever --coll-model says, so its row
   * says flow (a review: `--strategy dp,ddp --coll-model aggregate` labelled
   * dp's row aggregate at the same time as flow) */
  if (o->strategy_id != DS_STRATEGY_DDP) c->coll_model = DS_COLL_FLOW;
  /* nor do direct, reduce-broadcast and NVLS within one node (no NVLSTree):
   * ddp's all-reduces and its buffer broadcast ran the same timeline under
   * aggregate, which the row and the header still named (`--algo direct
   * --coll-model aggregate`, and --coll-model auto past 64 ranks) */
  if (per_flow_only(o, c)) c->coll_model = DS_COLL_FLOW;
  if (o->ring_chunks > 1 && c->coll_model == DS_COLL_AGGREGATE)
    return ds_ring_chunks_aggregate_refuse(
        o->coll_model == DS_COLL_CHOICE_AGGREGATE ? 0 : c->world, err);
  /* NCCL's protocols apply to DDP's all-reduces and to dp's broadcasts and
   * reduces (torch/csrc/cuda/nccl.cpp's ncclBcast and ncclReduce: NCCL's
   * ring, its only algorithm for them); dp's gathers and scatters are peer
   * copies, the flow network's (docs/strategies.md). */
  if (o->strategy_id == DS_STRATEGY_DP) DS_CHECK(check_dp_algo(o, err));
  if (o->strategy_id == DS_STRATEGY_DDP || o->strategy_id == DS_STRATEGY_DP)
    DS_CHECK(setup_nccl(c, o, quiet, err));
  else snprintf(c->coll_algo, sizeof c->coll_algo, "ring");
  /* NCCL pipelines by its own chunks and slices, which its model derives
   * (ds_nccl_algo_proto, ds_nccl_chain): --ring-chunks would pipeline twice */
  if (o->strategy_id == DS_STRATEGY_DDP && c->world > 1 && o->ring_chunks > 1)
    DS_CHECK(check_ddp_ring_chunks(c, o, err));
  if (o->strategy_id == DS_STRATEGY_DP && c->world > 1 && o->ring_chunks > 1 && c->use_nccl)
    DS_CHECK(ds_ring_chunks_refuse(DS_RING_CHUNKS_NCCL, "dp's broadcasts and reduces",
                                   &o->proto, err));
  /* One rank has no peer: NCCL's one-rank all-reduce of DDP's bucket, in
   * place, launches nothing (src/enqueue.cc, src/device/onerank.cu
   * ncclLaunchOneRank: a cudaMemcpyAsync only out of place), and single's
   * and dp's lone GPU communicates with none, so no algorithm runs. */
  if (c->world == 1) snprintf(c->coll_algo, sizeof c->coll_algo, "none");
  describe_ddp_options(o, c->grad_accum, c->ddp_options, sizeof c->ddp_options);
  if (o->strategy_id == DS_STRATEGY_DP) {
    /* the ddp_options column carries the row's strategy's options */
    snprintf(c->ddp_options, sizeof c->ddp_options, "output_device=%d%s",
             o->dp_output_device, o->dp_parallel_loss ? ";parallel_loss" : "");
    if (ds_dp_chunks(c->model, ds_dtype_bytes(o->dtype), DS_DP_COALESCE_BYTES,
                     &c->dp_chunks) != DS_OK)
      return ds_err_set(err, DS_ENOMEM, "out of memory");
  } else if (o->strategy_id == DS_STRATEGY_SINGLE) {
    c->ddp_options[0] = '\0';
    if (c->grad_accum > 1)
      snprintf(c->ddp_options, sizeof c->ddp_options, "grad_accum=%d", c->grad_accum);
    if (o->free_loop) ds__run_append_item(c->ddp_options, sizeof c->ddp_options, "loop=free");
  }
  /* PyTorch's version changes every strategy's optimizer loop and .grad
   * (ddp's and ps's lists, describe_ddp_options', say it already) */
  if ((o->strategy_id == DS_STRATEGY_SINGLE || o->strategy_id == DS_STRATEGY_DP) &&
      o->ddp_rules != DS_DDP_RULES_CURRENT)
    ds__run_append_item(c->ddp_options, sizeof c->ddp_options, ds__run_pytorch_item(o->ddp_rules));
  if (c->ddp_options[0] == '\0') snprintf(c->ddp_options, sizeof c->ddp_options, "none");
  /* the trace header's inputs: ds_textout_append keeps counting past the
   * buffer, so one check at the end finds a cut line */
  size_t used = 0;
  c->inputs[0] = '\0';
  ds_textout_append(c->inputs, sizeof c->inputs, &used,
           "topo=%s model=%s strategy=%s world_size=%d batch=%lld dtype=%s amp=%s tf32=%s "
           "bucket_mb=%g first_bucket_mb=%g iters=%d net=%s coll_model=%s "
           "ring_chunks=%d algo=%s nccl_extra=%s ddp_options=%s calib=%s",
           topo_path, model_path, o->strategy, c->world, (long long)c->batch,
           ds_dtype_name(o->dtype), ds_amp_name(o->amp), ds_tf32_name(o->tf32), o->bucket_mb[0],
           ds_options_first_bucket_mb(o, o->bucket_mb[0]),
           o->iters, o->net_mode == DS_NET_MAXMIN ? "maxmin" : "alpha-beta",
           c->coll_model == DS_COLL_FLOW ? "flow" : "aggregate", o->ring_chunks,
           c->coll_algo, c->use_nccl && o->nccl_extra ? "measured" : "none", c->ddp_options,
           o->calib ? o->calib : "none");
  if (o->channels_last) ds_textout_append(c->inputs, sizeof c->inputs, &used, " channels_last=1");
  if (ds_options_given(o, "--optimizer"))
    ds_textout_append(c->inputs, sizeof c->inputs, &used, " optimizer=%s",
                      ds_optimizer_name(o->optimizer));
  if (o->weight_decay) ds_textout_append(c->inputs, sizeof c->inputs, &used, " weight_decay=1");
  if (o->no_bn_weight_decay)
    ds_textout_append(c->inputs, sizeof c->inputs, &used, " no_bn_weight_decay=1");
  if (o->host_scale != 1)
    ds_textout_append(c->inputs, sizeof c->inputs, &used, " host_scale=%g", o->host_scale);
  if (o->jitter)
    ds_textout_append(c->inputs, sizeof c->inputs, &used, " jitter_cv=%g", o->jitter_cv);
  for (int32_t k = 0; k < o->n_stragglers; k++)
    ds_textout_append(c->inputs, sizeof c->inputs, &used, " straggler=%d:%g",
                      o->stragglers[k].rank, o->stragglers[k].factor);
  if (used >= sizeof c->inputs)
    return ds_err_set(err, DS_EUSAGE,
                      "input paths too long for the trace header (%zu bytes max)",
                      sizeof c->inputs - 1);
  return DS_OK;
}

/* What a run past the work bound (sim/train/exec.h work_limit) may change,
 * from what it was given: the per-flow collective model past 64 ranks,
 * more than the 2 iterations a steady state needs, ring chunks, jitter
 * (which runs every rank apart), and the world size; collectives: 0 for
 * ps, which runs none. */
void ds__run_work_advice(const struct config_run *c, int collectives, char *buf, size_t cap) {
  const struct ds_options *o = c->opt;
  size_t n = 0;
  buf[0] = '\0';
#define ADVISE(...)                                                                    \
  do {                                                                                 \
    int w = snprintf(buf + n, cap - n, "%s", n ? ", " : "give ");                      \
    if (w > 0 && (size_t)w < cap - n) n += (size_t)w;                                  \
    w = snprintf(buf + n, cap - n, __VA_ARGS__);                                       \
    if (w > 0 && (size_t)w < cap - n) n += (size_t)w;                                  \
  } while (0)
  if (collectives && c->coll_model == DS_COLL_FLOW && c->world > DS_AUTO_AGGREGATE_ABOVE &&
      !per_flow_only(o, c))
    ADVISE("--coll-model aggregate or auto (one flow per ring or tree past 64 ranks, "
           "within 0.1-10%% of per flow: docs/collectives.md)");
  if (o->iters > 2) ADVISE("fewer --iters (%d; 2 reach DDP's steady state)", (int)o->iters);
  if (collectives && o->ring_chunks > 1) ADVISE("fewer --ring-chunks (%d)", (int)o->ring_chunks);
  if (o->jitter) ADVISE("no --jitter (it runs every rank apart)");
  ADVISE("or a smaller --world-size (%d)", (int)c->world);
#undef ADVISE
}
