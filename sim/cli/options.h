/*
 * Command-line options of `ddpsim` (the simulate command).
 */
#ifndef DS_OPTIONS_H
#define DS_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "base/cli.h"
#include "base/status.h"
#include "sim/coll/coll.h"
#include "sim/train/comm_hook.h"
#include "sim/train/calib.h"
#include "sim/train/compute.h"
#include "sim/train/ddp.h"
#include "sim/net/net.h"
#include "sim/cli/proto_flag.h"
#include "sim/cli/report.h"
#include "base/values.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most configurations one run's cross product may have. */
#define DS_MAX_CONFIGS 4096

/* Most --straggler entries one run may give. */
#define DS_MAX_STRAGGLERS 64

/* Largest --host-scale F: a host a thousand times slower than the topology's
 * is far past any measured one (the lent hosts span x0.841 to x1.171,
 * sim/net/topo_compute.c), and the bound keeps every scaled host cost, also at the
 * host range's x1.171 re-run, far below the engine's longest simulated time
 * (sim/net/engine.h), which a huge F would hit with a message that does not
 * name the option. The smallest is its inverse, 0.001: a host a thousand
 * times faster (below it every host cost rounds to nothing; 1e-300 was
 * taken, issue #12). */
#define DS_MAX_HOST_SCALE 1000.0

/* The bound on one run's simulation work (sim/train/exec.h work_limit:
 * events + flows started + flow rates re-solved), refused as an input
 * error (exit 2) naming what to change, once foreseen past it (issue #12:
 * --coll-model flow on 4096 ranks ran past 300 s, --iters 1000 for hours,
 * without a word). Measured on this project's 2-core VM: 1.4 to 3.6
 * million per second of one core (docs/reliability.md, "Work"). */
#define DS_RUN_WORK_LIMIT 500000000ull

/* The options that take a list or a range (docs/sweeps.md), in cross
 * product order: the first is the outermost loop, the bucket cap the
 * innermost. The strategy's shape comes first, then noise, then the
 * collective and the hook, the buckets last (a bucket curve varies
 * fastest). */
enum ds_sweep_var {
  DS_VAR_WORLD_SIZE,
  DS_VAR_BATCH,
  DS_VAR_NO_SYNC,
  DS_VAR_PS_SERVERS,       /* --ps-servers */
  DS_VAR_DP_OUTPUT_DEVICE, /* --dp-output-device */
  DS_VAR_STRAGGLER,        /* the factor of the one --straggler given a list */
  DS_VAR_JITTER,           /* --jitter CV */
  DS_VAR_RING_CHUNKS,      /* --ring-chunks */
  DS_VAR_COMM_HOOK,        /* --comm-hook; values index ds_options.comm_hooks */
  DS_VAR_FIRST_BUCKET_MB,
  DS_VAR_BUCKET_MB,
  DS_VAR_COUNT
};

/* Training strategies (--strategy, docs/strategies.md). A run takes a list
 * of them, each at most once; rows come strategy by strategy in the order
 * given. */
enum ds_strategy {
  DS_STRATEGY_SINGLE, /* one GPU, no communication: the baseline */
  DS_STRATEGY_DP,     /* torch.nn.DataParallel */
  DS_STRATEGY_DDP,    /* DistributedDataParallel */
  DS_STRATEGY_PS,     /* parameter server */
  DS_STRATEGY_COUNT
};

/* "single", "dp", "ddp", "ps". */
const char *ds_strategy_name(enum ds_strategy s);

/* Whether sweep variable v changes what strategy s simulates. A strategy
 * runs the cross product of only the variables it uses; the others keep
 * their first value (and are not printed as varying for its rows), so
 * --strategy dp,ddp --bucket-mb 1,25 gives one dp row and two ddp rows.
 * Every strategy uses the batch and --jitter; single nothing else (its
 * world is one GPU, rank 0's straggler factor: ds_options_uses_var); dp also world size,
 * --dp-output-device, the straggler factor and --ring-chunks (its
 * broadcast and reduce chains); ps world size, --ps-servers and the
 * straggler factor; ddp everything but --ps-servers and
 * --dp-output-device. */
int ds_strategy_uses_var(enum ds_strategy s, enum ds_sweep_var v);

enum ds_coll_choice { DS_COLL_CHOICE_AUTO, DS_COLL_CHOICE_FLOW, DS_COLL_CHOICE_AGGREGATE };

/* Above this many ranks `--coll-model auto` aggregates ring steps. */
#define DS_AUTO_AGGREGATE_ABOVE 64

/* Largest --seed (with --samples, the last sample's): GSL's mt19937
 * keeps a seed's low 32 bits and takes 0 as its default seed 4357
 * (sim/train/jitter.c), so 1 .. 2^32 - 1 are the distinct seeds. */
#define DS_SEED_MAX 4294967295LL

struct ds_options {
  const char *topo;       /* required */
  const char *model;      /* default "resnet50" */
  const char *strategy;   /* this configuration's strategy's name ("ddp") */
  enum ds_strategy strategy_id; /* this configuration's strategy */
  /* --strategy LIST: the strategies to run, in the order given, each once */
  enum ds_strategy strategies[DS_STRATEGY_COUNT];
  int32_t n_strategies;
  /* DataParallel's options (--strategy dp) */
  int32_t dp_output_device;         /* output_device: where outputs gather and loss runs */
  int dp_parallel_loss;             /* each replica computes its loss; scalars gathered */
  /* Parameter server (--strategy ps, sim/train/ps.h) */
  int32_t ps_servers;               /* >= 1 (checked against the world size at run) */
  int ps_async;                     /* --ps-mode async; 0: sync */
  int ps_push_per_layer;            /* --ps-push per-layer; 0: after-backward */
  /* --straggler RANK:FACTOR: that rank's compute ops take FACTOR times
   * longer (every strategy; times --jitter's multiplier) */
  struct ds_straggler { int32_t rank; double factor; } stragglers[DS_MAX_STRAGGLERS];
  int32_t n_stragglers;
  double bucket_mb[DS_MAX_SWEEP];
  int32_t n_bucket_mb;
  double first_bucket_mb;
  /* Whether --bucket-mb, --first-bucket-mb and --iters were given
   * (ds_options_given): PyTorch caps the first bucket at 1 MiB only when
   * bucket_cap_mb is unset (ds_options_first_bucket_mb), and --static-graph
   * rebuilds one iteration later, so its default --iters is 3. */
  int32_t world_size;     /* 0: every GPU of the topology */
  int64_t batch;          /* 0: the model's default_batch */
  int32_t iters;
  uint64_t seed;          /* 1 .. DS_SEED_MAX */
  enum ds_dtype dtype;
  enum ds_amp amp;        /* --amp: autocast's half type, DS_AMP_NONE without */
  enum ds_tf32 tf32;      /* --tf32: op classes on TF32 in fp32 training (conv) */
  int channels_last;      /* --channels-last: NHWC activations (compute.h batch norm) */
  int weight_decay;       /* --weight-decay: a nonzero weight_decay (compute.h step) */
  /* --optimizer (when given, ds_options_given): replaces the model file's
   * optimizer (model.h; DS_OPT_NONE: no step; not with ps) */
  enum ds_optimizer optimizer;
  int no_bn_weight_decay; /* --no-bn-weight-decay: "bn" parameters undecayed (compute.h) */
  enum ds_format format;
  const char *trace;      /* NULL: none */
  const char *schedule;   /* NULL: none */
  /* --calib: NULL without; else its value as given, or the values of a
   * repeated --calib joined by ',' (calib_list): the calib column and the
   * flags line. calib_files: the files it names, in order (a value that
   * is no file is split at its commas), merged key by key
   * (sim/train/calib.h ds_calib_load_files). Both point into calib_list or
   * argv, so a copy of the options (ds_options_config) shares them. */
  const char *calib;
  const char *calib_files[DS_CALIB_MAX_FILES];
  int32_t n_calib_files;
  char calib_list[2][DS_CALIB_LIST_BYTES]; /* the joined value; the split files */
  double host_scale;      /* --host-scale: every host_* cost times this (1: as given) */
  enum ds_coll_choice coll_model;
  enum ds_net_mode net_mode;
  int32_t ring_chunks;
  int algo_auto;                    /* --algo auto (the default): NCCL's choice */
  enum ds_ar_algo ar_algo;          /* --algo: the all-reduce algorithm (ring with auto) */
  struct ds_proto_flag proto;       /* --proto (proto_flag.h), its choice resolved
                                       from --algo when not given */
  int nccl_extra;                   /* add the measured effects (docs/collectives.md) */
  /* DDP's options (PyTorch's names) */
  int no_overlap;                   /* all-reduces wait for the end of backward */
  int32_t no_sync;                  /* K >= 1: K-1 accumulating micro-steps, then a sync one */
  int grad_as_bucket_view;          /* gradients are views into the buckets */
  int no_broadcast_buffers;         /* broadcast_buffers=False: no buffer broadcast */
  int find_unused_parameters;       /* buckets by registration order, never rebuilt */
  int static_graph;
  /* --pytorch-version: which PyTorch's rules (ddp.h, compute.h): current
   * (the default), 1.4's reducer (registration-order buckets with a 1 MiB
   * first bucket, no rebuild, a div_ kernel per bucket) or 1.9's (rebuilt
   * buckets); under 1.4 and 1.9 also the per-tensor optimizer loop and
   * .grad kept (AccumulateGrad's adds), under 1.9 zero_grad's fills */
  enum ds_ddp_rules ddp_rules;
  /* --grad-accum K (>= 1) or --optimizer-batch N (> 0; 0 without):
   * gradient accumulation outside no_sync, single and ddp only;
   * ds_options_grad_accum gives a configuration's K */
  int32_t grad_accum;
  int64_t optimizer_batch;
  /* --loop free (1): the training loop never syncs with the GPU, so the
   * host starts the next iteration after the step's host work (ddp.h
   * free_loop); 0 (sync, the default): after the step's GPU op. single
   * and ddp only. */
  int free_loop;
  struct ds_comm_hook comm_hook;    /* --comm-hook: DDP communication hook (comm_hook.h) */
  /* Sweeps and noise (docs/sweeps.md). The scalars above (bucket_mb[0],
   * first_bucket_mb, world_size, batch, no_sync) are the first value of
   * each option; the sweep runs the cross product of sweep[]. */
  struct ds_values sweep[DS_VAR_COUNT];
  /* --comm-hook LIST: the hooks in the order given; the scalar comm_hook
   * is comm_hooks[sweep[DS_VAR_COMM_HOOK].v[0]] */
  struct ds_comm_hook comm_hooks[DS_MAX_SWEEP];
  /* --straggler RANK:F1,F2,...: stragglers[straggler_swept_k]'s factor is
   * sweep[DS_VAR_STRAGGLER] when straggler_swept */
  int straggler_swept;
  int32_t straggler_swept_k;
  const char *measured;             /* NULL: none; else --measured FILE.csv */
  int32_t jobs;                     /* 0: every online core; 1: in process */
  double jitter_cv;                 /* per-kernel coefficient of variation */
  int jitter;                       /* --jitter given */
  int32_t samples;                  /* seeds per configuration, >= 1 */
  const char *plot;                 /* NULL: none; else a .png or .svg path */
  int plot_timeline;                /* --plot with nothing swept: the run's
                                     * timeline (sim/cli/timeline.h), not
                                     * the sweep plot */
  const char *chrome;               /* NULL: none; else --chrome FILE.json, one
                                     * configuration only */
  int help;
  int version;
  /* The flags given on the command line (the walk's record, base/cli.h):
   * ds_options_given. */
  struct ds_cli_seen given;
};

/* Whether flag ("--world-size") was given on the command line (--straggler,
 * which repeats, and --help are not recorded). */
int ds_options_given(const struct ds_options *o, const char *flag);

/* The value flag was given with (NULL for a switch or a flag not given). */
const char *ds_options_given_value(const struct ds_options *o, const char *flag);

/* ds_strategy_uses_var for the run o: single also uses the straggler
 * factor when the swept straggler (--straggler 0:1,2) is rank 0, the rank
 * it runs. What the sweep's cross product and the unused-option check use. */
int ds_options_uses_var(const struct ds_options *o, enum ds_strategy s, enum ds_sweep_var v);

/* The most micro-steps per optimizer step (--grad-accum K, --optimizer-batch
 * N / (world x batch)). */
#define DS_GRAD_ACCUM_MAX 1024

/* The micro-steps per optimizer step of a configuration of `world` ranks
 * at `batch` per GPU: --grad-accum's K, or --optimizer-batch N / (world x
 * batch); -1 (err set, DS_EUSAGE) when N is not a whole number of 1 to
 * DS_GRAD_ACCUM_MAX micro-steps. */
int ds_options_grad_accum(const struct ds_options *o, int32_t world, int64_t batch,
                          struct ds_err *err);

/* Parses argv[1..argc) (both "--flag value" and "--flag=value"). Usage
 * errors are DS_EUSAGE with a message naming the flag and what was
 * expected. */
ds_status ds_options_parse(int argc, char **argv, struct ds_options *opt,
                           struct ds_err *err);

/* The flag of a sweep variable ("--bucket-mb"). */
const char *ds_options_var_flag(enum ds_sweep_var v);

/* The CSV column that carries a sweep variable's value ("bucket_mb",
 * "world_size", "batch_per_gpu", "straggler_factor", "comm_hook", ...): in
 * ddpsim's own --format csv output and in a --measured table. */
const char *ds_options_var_column(enum ds_sweep_var v);

/* Configuration c's value of sweep variable v (c from ds_options_config):
 * for --comm-hook the index into c->comm_hooks. */
double ds_options_var_value(const struct ds_options *c, enum ds_sweep_var v);

/* The value of v in configuration c as text ("25", "0.05", "powersgd:4"). */
void ds_options_var_text(const struct ds_options *c, enum ds_sweep_var v, char *buf,
                         size_t cap);

/* Number of configurations: for each strategy of the list, the cross
 * product of the sweep variables it uses (ds_strategy_uses_var). */
/* The first bucket's cap in MiB for a configuration whose cap is
 * bucket_mb: --first-bucket-mb when given; else bucket_mb when --bucket-mb
 * was given (bucket_cap_mb=C caps the first bucket at C too); else PyTorch's
 * _DEFAULT_FIRST_BUCKET_BYTES, 1 MiB (torch/nn/parallel/distributed.py). */
double ds_options_first_bucket_mb(const struct ds_options *o, double bucket_mb);

int64_t ds_options_n_configs(const struct ds_options *o);

/* The options of configuration i (0 <= i < ds_options_n_configs): strategy
 * by strategy (outermost), then that strategy's cross product; a copy of
 * *o whose strategy fields and scalars hold that configuration's values and
 * whose sweep[] holds one value each (a variable the strategy does not use
 * keeps its first value). */
void ds_options_config(const struct ds_options *o, int64_t i, struct ds_options *out);

/* Fills factor[0 .. world) with each rank's --straggler factor (1 for the
 * others; factor NULL: only checks). DS_EUSAGE, naming the flag, when a
 * straggler's rank is not below world. */
ds_status ds_options_rank_factors(const struct ds_options *o, int32_t world,
                                  double *factor, struct ds_err *err);

/* Prints the --help text. */
void ds_options_print_usage(FILE *fp);

/* Every flag ddpsim knows, with whether it takes a value (ending with
 * {NULL}): what the parser accepts, for the tests that compare it with
 * --help. */
const struct ds_cli_option *ds_options_flags(void);

#ifdef __cplusplus
}
#endif

#endif /* DS_OPTIONS_H */
