/*
 * The summary of one simulated configuration: what `ddpsim` prints.
 *
 * Every timing number is measured on the simulated timeline of the
 * reported (steady-state) iteration by analysis/metrics.c, the definitions
 * `ddpsim analyze` applies to a trace (docs/analysis.md, "Metrics"): on
 * rank 0 unless said otherwise,
 *   iter_ms          last op end of the iteration, over all ranks, minus its
 *                    start: its first op's start, or the previous
 *                    iteration's last op end when later (the period);
 *   fwd_ms, bwd_ms   sums of rank 0's forward (and loss) / backward op
 *                    durations (host-stream launches are not compute);
 *   step_ms          rank 0's optimizer steps (a parameter server's updates
 *                    on GPU 0);
 *   comm_ms          length of the union of rank 0's communication ops;
 *   exposed_comm_ms  the part of comm_ms during which no rank-0 compute op
 *                    (compute or copy stream) runs;
 *   overlap_pct      100 * (comm_ms - exposed_comm_ms) / comm_ms (0 when no
 *                    communication);
 *   gpu_busy_ms      the union of rank 0's compute and copy ops in rank 0's
 *                    window (analysis/metrics.h: as long as the iteration,
 *                    or an asynchronous server's rank 0's own step);
 *   host_exposed_ms  the part of the window where rank 0's host works while
 *                    neither its compute nor its communication runs: the
 *                    GPU waits for the host (host-bound).
 */
#ifndef DS_REPORT_H
#define DS_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "traces/schedule.h"
#include "traces/shared_schedule.h"
#include "sim/train/ddp.h"
#include "sim/train/dp.h"
#include "sim/train/kernel_models.h"
#include "sim/train/ps.h"
#include "sim/train/rates.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DS_MAX_BUCKETS_SHOWN 4096
#define DS_SUMMARY_MAX_STRAGGLERS 64 /* options.h DS_MAX_STRAGGLERS */
#define DS_SUMMARY_MAX_NCCL_RUNS 256

struct ds_summary {
  const char *strategy;
  const char *model;
  const char *topology;
  const char *gpu;
  const char *dtype;
  const char *net_model;  /* "maxmin" or "alpha-beta" */
  const char *coll_model; /* "flow" or "aggregate" */
  const char *coll_algo;  /* "ring" (plain), "ring/auto", "ring/LL128", ... */
  const char *ddp_options; /* "none" or e.g. "no_overlap;no_sync=4" */
  int32_t no_sync;         /* micro-steps per iteration (1: every step syncs) */
  int32_t grad_accum;      /* --grad-accum's micro-steps per iteration (1: none) */
  int32_t world_size;
  int32_t topology_gpus; /* the topology's GPUs: the ranks are its first world_size */
  int64_t batch_per_gpu;
  double bucket_mb;
  double first_bucket_mb;
  const char *bucket_rule; /* DDP: PyTorch's bucketing rule applied (ds_ddp_plan), static */
  int32_t n_buckets;
  const double *bucket_bytes; /* [n_buckets], borrowed */
  int32_t iters;
  int32_t reported_iter;
  double first_iter_ms;
  /* --loop free carries the host's lead over the GPU from one iteration
   * into the next, so the reported iteration need not be steady: free_loop
   * 1 there, and prev_iter_ms the iteration before the reported one when
   * that is not iteration 0 (which starts with no lead), else -1 (--iters
   * 2). 0 and 0 under --loop sync, which waits for the step every
   * iteration. */
  int free_loop;
  double prev_iter_ms;
  /* --loop free, DDP: 1 when the iteration before the reported one ran
   * the bucket rebuild's forward (its one-time broadcasts and blocking
   * copies, sim/train/ddp_rebuild.c), which the host's lead does not
   * explain; compare_iters the fewest --iters whose last two iterations
   * both follow that forward (3 where no rebuild runs one);
   * prev_before_rebuild 1 when that iteration ran on the buckets before
   * their rebuild and the reported one on the rebuilt ones (static_graph
   * at --iters 3: a layout of its own, not the lead either) */
  int prev_ran_rebuild, prev_before_rebuild;
  int32_t compare_iters;
  double iter_ms, fwd_ms, bwd_ms, step_ms, comm_ms, exposed_comm_ms;
  double overlap_pct, gpu_busy_ms, host_exposed_ms;
  /* rank0_own_step: rank 0's lines (gpu_busy_ms, host_exposed_ms,
   * waiting) are measured over its own step, rank0_window_ms long, not
   * over the iteration: an asynchronous parameter server's workers step
   * at their own pace (analysis/metrics.h); the text says so and the JSON
   * row has rank0_window_ms */
  int rank0_own_step;
  double rank0_window_ms;
  /* rank 0's compute ops' time added by interference in the iteration
   * (exec.h r0_slowed_ns; ds_report_measure_shared): the text's
   * interference line, the interference_ms column; 0 under ps, whose
   * pushes and pulls are no NCCL kernels (run_ps.c) */
  double interference_ms;
  struct ds_ddp_memory mem;
  double peak_mem_gib;
  /* Every strategy (docs/strategies.md): peak memory of GPU 0 and of the
   * fullest other GPU (equal under ddp; 0 for single, which has no other
   * GPU); dp's per-GPU breakdown when has_dp_mem. */
  double peak_mem_gib_gpu0, peak_mem_gib_other;
  double gpu_mem_gib; /* the GPU's memory (the topology's GPU table entry) */
  /* When the peak does not fit with the margin (fit_searched): the largest
   * batch per GPU that fits under the same memory model (0: not even 1) and
   * its peak (run_memory.h ds__run_fit_batch); with fit_searched_with_margin, the
   * largest that fits with the margin (the row fits, but not with it). The
   * text's warning or note says them. */
  int fit_searched, fit_searched_with_margin;
  int64_t fit_batch;
  double fit_batch_mem_gib;
  /* The compute rates the run charged and where each came from
   * (sim/train/rates.h): the text's "compute rates" line, the CSV's
   * compute_rates column, the JSON's compute_rates list. */
  struct ds_rates rates;
  /* The measured kernel models the run charged and how they reach its GPU
   * (sim/train/kernel_models.h): the text's "kernel models" line, the
   * CSV's kernel_models column, the JSON's kernel_models list. */
  struct ds_kernel_models kernel_models;
  const char *amp;    /* --amp: "none", "fp16", "bf16" */
  /* What else the row ran that changes its numbers, so that a row alone
   * says how to reproduce it (the columns after host_exposed_ms; set by
   * run_setup.c ds__run_fill_provenance). Strings are literals or, for
   * calib, the command line's own argument: a sweep's worker, a fork,
   * holds them at the addresses its parent does (sweep.c repoints only
   * the row's own buffers). */
  const char *tf32;       /* --tf32: "conv" (default), "all", "none" */
  int channels_last;      /* --channels-last: memory_format channels_last */
  const char *calib;      /* --calib's path as given, NULL without */
  /* several --calib files: "A: gpu, compute.flops_efficiency\nB: host.dispatch"
   * (sim/train/calib.h ds_calib_sources_line), the text's "calib keys" lines
   * (not in the CSV or JSON, whose calib names the files, which merge the
   * same way again); NULL for one file or none */
  const char *calib_keys;
  /* with --calib: whether the file names the topology's GPU (its
   * measurement), another GPU (its fractions standing in) or none (an
   * older file: applied as this GPU's) (calib.h ds_calib_gpu_fit); the
   * calib_gpu column and the text's flags line name it */
  enum ds_calib_gpu_fit calib_gpu_fit;
  /* "measured" where NCCL's model runs the all-reduces with the
   * mechanisms it leaves out added (--nccl-extra measured, the default),
   * else "none" (--nccl-extra none, or no NCCL model runs) */
  const char *nccl_extra;
  /* NCCL's model runs with LL128 off as NCCL's default leaves it where the
   * rings cross PCIe inside a node (no --proto set naming it): the text says so */
  int ll128_default_off;
  /* ddp's ranks filling two or more nodes unevenly where no rails run
   * (a node holding one of them or reaching one NIC), each node's count
   * ("8 + 1"; ds_ring_nodes_uneven): the ring's bandwidth is a fallback's
   * (text: a note); "" otherwise */
  char uneven_nodes[48];
  /* Where NCCL's model runs the all-reduces: what it ran for rank 0's
   * all-reduces of the reported iteration (one per bucket, more under a
   * comm hook that reduces twice), in the order they ran, as runs of the
   * same algorithm and protocol (coll.h's enums: ring/LL128 x3 is one run
   * of 3 calls). The text's "nccl" line under buckets, the JSON's
   * nccl_allreduces; no CSV column (its last column is documented as
   * kernel_models). n_nccl_runs 0 without NCCL's model (plain algorithms,
   * one rank, dp, ps). Calls past DS_SUMMARY_MAX_NCCL_RUNS runs are
   * counted in nccl_calls_unlisted. Plain data: rows cross process
   * boundaries in sweeps. */
  int32_t n_nccl_runs;
  int32_t nccl_calls_unlisted;
  struct ds_summary_nccl_run {
    uint8_t algo, proto; /* enum ds_ar_algo, enum ds_proto */
    int32_t calls;
  } nccl_runs[DS_SUMMARY_MAX_NCCL_RUNS];
  uint64_t seed;          /* --seed: the first sample's (the timing fields') */
  /* --straggler's ranks and factors that exist in this row's world */
  int32_t n_stragglers;
  struct ds_summary_straggler {
    int32_t rank;
    double factor;
  } stragglers[DS_SUMMARY_MAX_STRAGGLERS];
  const char *optimizer; /* the loop's: the model file's or --optimizer's ("none": no step) */
  int has_dp_mem;
  struct ds_dp_memory dp_mem;
  /* Throughput: samples trained per second over all GPUs, and its ratio to
   * single-GPU training at the same per-GPU batch (whose samples/s is
   * single_samples_per_s). */
  double samples_per_s, single_samples_per_s, speedup_vs_single;
  /* A world-size sweep (has_scaling: --world-size took several values;
   * ds_sweep_fill_scaling, sweep.h): 100 x this row's samples/s per rank
   * over that of the smallest world size among the rows of its strategy
   * and its other options' values (100: linear scaling); NAN where no such
   * ratio exists (a strategy that does not use the world size, single, or
   * a baseline without throughput): empty in the CSV, null in the JSON. */
  int has_scaling;
  double scaling_efficiency_pct;
  /* Parameter server (--strategy ps, sim/train/ps.h), when has_ps: its mode
   * (ps_async: 1 for async, 0 for sync), servers, the staleness of the applied gradients
   * (0 in sync mode) and the slowest and fastest worker's step time (the
   * per-worker iteration time; iter_ms is their mean). Plain data: rows
   * cross process boundaries in sweeps. */
  int has_ps;
  int ps_async;
  int32_t ps_servers;
  double staleness_mean;
  int64_t staleness_max;
  double worker_step_min_ms, worker_step_max_ms;
  /* --samples / --jitter (docs/sweeps.md): the timing fields above are the
   * first sample's (seed --seed); these are over all samples. Printed only
   * when has_quantiles. */
  int has_quantiles;
  int32_t samples;
  double jitter_cv;
  double iter_p50_ms, iter_p95_ms, iter_p99_ms;
  /* When the run sweeps --ps-servers, --dp-output-device, a --straggler
   * factor, --ring-chunks or --comm-hook (has_sweep_ids), every row says
   * its values of them (docs/sweeps.md): the configuration's options, also
   * for strategies that do not use them; straggler_factor is the swept
   * straggler's (else the first's; 1 without stragglers). opt_ring_chunks
   * is set for every row and always printed (the ring_chunks column, with
   * the provenance columns). Inline text: rows cross process boundaries. */
  int has_sweep_ids;
  int32_t opt_ps_servers, opt_dp_output_device, opt_ring_chunks;
  double straggler_factor;
  char comm_hook[24];
  /* The text summary of a host-bound row (ds_report_host_bound), when
   * has_host_range: its iteration re-simulated with every host_* cost times
   * the fastest and the slowest measured host's factor (sim/net/topo_compute.c
   * ds_topo_host_factor_*), over the run's own (after --calib and
   * --host-scale). Not in the CSV or JSON. host_from_calib: the run's host
   * costs came from --calib's host section (2: its dispatch or node, which
   * bench/host_calibrate.py measures; 1: only its DDP keys, ddp_grad,
   * ddp_bucket, ddp_buffer); host_scale: --host-scale's F
   * (every row's: the host_scale column). */
  int has_host_range, host_from_calib;
  double host_scale;
  double host_factor_fast, host_factor_slow;
  double host_fast_iter_ms, host_slow_iter_ms;
};

/* Fills the timing fields of s from the op times of ops[first .. first+n)
 * of sched (one iteration of every rank); ops[0 .. first) are the earlier
 * iterations (their last end is the previous iteration's). DS_ENOMEM. */
ds_status ds_report_measure(const struct ds_schedule *sched, size_t first, size_t n,
                            const int64_t *op_start_ns, const int64_t *op_end_ns,
                            struct ds_summary *s);

/* The same of one iteration given alone: ops[0 .. n) with their times,
 * prev_end_ns the latest end of the iterations before it and
 * prev_rank0_end_ns the latest of rank 0's (INT64_MIN,
 * analysis/metrics.h's DS_METRICS_NO_PREVIOUS, when none). DS_ENOMEM. */
ds_status ds_report_measure_iter(const struct ds_op *ops, size_t n, const int64_t *op_start_ns,
                                 const int64_t *op_end_ns, int64_t prev_end_ns,
                                 int64_t prev_rank0_end_ns, struct ds_summary *s);
/* The same where other[0..n_other) are runs of ops[] in other iterations
 * (a parameter server's, sim/train/ps.h before_last_rank0): rank 0's
 * inside its own step count there (analysis/metrics.h,
 * ds_metrics_measure_among). */
ds_status ds_report_measure_iter_among(const struct ds_op *ops, size_t n,
                                       const int64_t *op_start_ns, const int64_t *op_end_ns,
                                       const struct ds_ps_op_time *other, size_t n_other,
                                       int64_t prev_end_ns, int64_t prev_rank0_end_ns,
                                       struct ds_summary *s);

/* What a run keeps of its ops' times, recorded by ds_report_times_record
 * (a ds_exec_op_fn, sim/train/exec.h) as ops end: rank 0's times of every
 * template op of a block it runs, each (block, rank)'s first start and last
 * end, and with `full` every op's, by full-schedule index (the trace's).
 * Without full: O(template + the blocks' ranks), all the summary needs. */
struct ds_report_times {
  const struct ds_shared_schedule *s; /* borrowed */
  int64_t *r0_start, *r0_end;         /* [template ops] */
  int64_t *r0_slowed_ns;              /* [template ops]: exec.h's, 0 until set */
  size_t *slot_at;                    /* [blocks + 1]: block b's ranks' slots */
  int64_t *first_start, *last_end;    /* [slots] */
  int64_t *start, *end;               /* [s->n_ops], or NULL without full */
};

/* Allocates t for s, every time unknown (ds_report_times_reset). */
ds_status ds_report_times_new(const struct ds_shared_schedule *s, int full,
                              struct ds_report_times *t);
/* Forgets every recorded time (before another run of the same schedule). */
void ds_report_times_reset(struct ds_report_times *t);
void ds_report_times_release(struct ds_report_times *t);
void ds_report_times_record(void *ctx, size_t block, int32_t rank, uint32_t op,
                            int64_t start_ns, int64_t end_ns);

/* ds_report_measure over the full schedule's ops of blocks [b0, b1) (one
 * iteration of every rank), blocks [0, b0) the earlier iterations, from
 * what t recorded: the same summary, from rank 0's ops and the other ranks'
 * first starts and last ends. */
ds_status ds_report_measure_shared(const struct ds_report_times *t, size_t b0, size_t b1,
                                   struct ds_summary *s);

enum ds_format { DS_FORMAT_TEXT, DS_FORMAT_CSV, DS_FORMAT_JSON };

/* 1 when the row is host-bound: rank 0's host exposed a tenth of the
 * iteration or more (the summary's "host-bound:" line). */
int ds_report_host_bound(const struct ds_summary *s);

/* Appends one all-reduce NCCL's model ran, named as the schedule's algo
 * field names it ("ring/LL128"; coll.h ds_allreduce_algo_parse), to s's
 * runs (nccl_runs above); a name without a protocol is ignored. */
void ds_report_add_nccl_call(struct ds_summary *s, const char *algo);

/* The training precision in words, as the text header says it: the
 * dtype, or "fp32 model, autocast fp16" (bf16) under --amp. */
const char *ds_report_precision(const struct ds_summary *r);

/* The largest per-GPU peak memory of the row, GiB. */
double ds_report_peak_mem_gib(const struct ds_summary *s);
/* Batches one reported iteration trains per GPU: no_sync's micro-steps
 * times --grad-accum's (each at least 1). */
int32_t ds_summary_micro_steps(const struct ds_summary *s);
/* 1 when that peak fits the GPU's memory (the csv and json column
 * fits_memory; the text output warns after the table). */
int ds_report_fits_memory(const struct ds_summary *s);

/* How far below PyTorch's torch.cuda.max_memory_allocated the peak ran on
 * the six H200 runs of validation/memory.csv (0.3 to 5.2 %: the input
 * batch, workspaces and gradients in flight are not counted): a peak within
 * that of the capacity may not fit, though fits_memory says yes. */
#define DS_REPORT_PEAK_UNDER_MEASURED 0.052

/* 1 when that peak fits with that margin: the measurement it stands for,
 * up to peak / (1 - DS_REPORT_PEAK_UNDER_MEASURED), still fits (the text's
 * "may not fit" note is for a row that fits but not with the margin). */
int ds_report_fits_memory_with_margin(const struct ds_summary *s);

/* The span rank 0's lines are measured over: iter_ms, or rank 0's own
 * step (rank0_own_step). */
double ds_report_rank0_window_ms(const struct ds_summary *r);

/* The part of rank 0's window (above) it is idle, waiting on other ranks:
 * the window less gpu_busy_ms, exposed_comm_ms and host_exposed_ms
 * (analysis/metrics.h's "rest"), 0 where rounding makes it negative. */
double ds_report_waiting_ms(const struct ds_summary *r);

/* The closing table of a run of several strategies: one line per row with
 * iteration time, samples/s, speedup over single and GPU 0 / other memory. */
void ds_report_print_side_by_side(FILE *fp, const struct ds_summary *rows, int32_t n);

/* Prints rows in the format; CSV and JSON carry the header / brackets once
 * for all n rows. Returns 0, or EOF when a write failed (a field's write
 * or fp's error indicator; errno says why). */
int ds_report_print(FILE *fp, enum ds_format fmt, const struct ds_summary *rows, int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* DS_REPORT_H */
