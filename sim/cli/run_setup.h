/*
 * One configuration of a run (run.c): its setup from the loaded files and
 * its options (world, batch, ring, NCCL's model, the options column, the
 * trace header's inputs), and what its row's fields derive from them.
 * Internal to sim/cli/run*.c.
 */
#ifndef DS_RUN_SETUP_H
#define DS_RUN_SETUP_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "sim/cli/options.h"
#include "sim/cli/report.h"
#include "sim/cli/run.h"
#include "sim/cli/run_load.h"
#include "sim/coll/coll.h"
#include "sim/coll/nccl_model.h"
#include "sim/train/ddp.h"
#include "sim/train/dp.h"
#include "sim/train/memory.h"
#include "traces/trace.h"

struct config_run {
  const struct ds_options *opt;
  struct ds_topo *topo;
  struct ds_model *model;
  struct ds_compute compute;
  struct ds_ring ring;
  int32_t world;
  int64_t batch;
  enum ds_coll_model coll_model;
  struct ds_nccl_model nccl; /* valid when use_nccl */
  int use_nccl;
  char coll_algo[32];        /* "ring", "ring/auto", "ring/LL128", "auto/LL+Simple", ... */
  char ddp_options[128];     /* "none", or e.g. "no_overlap;no_sync=4" */
  int32_t grad_accum;        /* micro-steps per optimizer step (ds_options_grad_accum) */
  char inputs[1024];
  struct ds_dp_chunks dp_chunks; /* dp: reduce_add_coalesced's 10 MiB groups */
  struct ds_run_trace *capture;  /* ds_run_capture: the trace kept in memory, or NULL */
  const char *calib_keys;        /* loaded's calib_keys, NULL when "" */
};

/* One configuration's setup (o holds its values) into *c, whose opt and
 * capture the caller set; quiet: notes already said by configuration 0.
 * The caller releases c->ring and c->dp_chunks, also on failure. */
ds_status ds__run_configure(struct config_run *c, const struct loaded *ld,
                            const struct ds_options *o, int quiet, struct ds_err *err);

/* The optimizer column of a row (a string literal). */
const char *ds__run_optimizer_field(enum ds_optimizer opt, const struct ds_options *o);

/* What a run refused by the work bound (DS_RUN_WORK_LIMIT) may change
 * ("give --coll-model aggregate or auto (...), fewer --iters (1000), ...,
 * or a smaller --world-size (4096)") into buf; collectives: 0 for ps. */
void ds__run_work_advice(const struct config_run *c, int collectives, char *buf, size_t cap);

/* Appends one ';'-separated item to buf (never overflows). */
void ds__run_append_item(char *buf, size_t cap, const char *item);

/* --pytorch-version as an options item ("pytorch=1.9"). */
const char *ds__run_pytorch_item(enum ds_ddp_rules rules);

/* Who holds what, for ds_ddp_memory, as the options say (DDP's buckets
 * are the caller's to add). */
struct ds_memory_options ds__run_memory_options(const struct config_run *c,
                                                const struct ds_options *o,
                                                enum ds_strategy strategy);

/* --straggler factors of the configuration's ranks in *out (malloc'd, the
 * caller's to free; NULL on failure). */
ds_status ds__run_rank_factors(const struct config_run *c, double **out, struct ds_err *err);

/* Writes s to the --schedule file `path` with every op's dur_us as the
 * simulation ran it: times its rank's --straggler factor where the
 * executor applies one (jitter.h ds_straggler_op_factor; factor may be
 * NULL: no stragglers), so that a replay (ddpreal) slows the same ops. No
 * --jitter draw: a replay has noise of its own. s's durations are scaled
 * for the write and restored exactly after it. */
ds_status ds__run_write_schedule(const char *path, struct ds_schedule *s, const double *factor,
                                 const struct ds_csv_meta *meta, struct ds_err *err);

/* The row's provenance fields (report.h: tf32 to stragglers), from
 * c's options and setup. */
void ds__run_fill_provenance(const struct config_run *c, struct ds_summary *s);

/* After a row's run: what its pricing charged, into s's rates and kernel
 * models. */
void ds__run_record_charged(const struct config_run *c, struct ds_summary *s);

#endif /* DS_RUN_SETUP_H */
