/*
 * The iteration metrics (metrics.h): one pass over the iteration's ops
 * collects rank 0's sums and its communication and compute intervals, then
 * the interval arithmetic of overlap.c gives communication and the part of
 * it no compute op covers. Times are integer nanoseconds until the one
 * division into ms at the end.
 */
#include "analysis/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "analysis/overlap.h"


static const char *const metric_names[DS_METRIC_COUNT] = {
#define DS__METRIC_NAME(n) #n,
    DS_METRICS_LIST(DS__METRIC_NAME)
#undef DS__METRIC_NAME
};

const char *ds_metrics_name(enum ds_metric_id id) {
  return id >= 0 && id < DS_METRIC_COUNT ? metric_names[id] : "?";
}

/* A server's update: a `step` of the server (bucket, its index >= 0) on
 * the host stream (a rank's own optimizer launches have bucket -1). */
static int server_update(const struct ds_op *op) {
  return op->kind == DS_OP_STEP && op->stream == DS_STREAM_HOST && op->bucket >= 0;
}

/* A parameter server's work on its own GPU, which the trace keeps on the
 * streams of its kinds (traces/SCHEMA.md, "Push/pull"): the server's
 * update, a `step` of the server (bucket, its index >= 0) on the host
 * stream, is kernels on that GPU (sim/train/ps.h), not host time (a rank's
 * own optimizer launches are steps of bucket -1: sim/train/host.h); and a
 * push or pull between a worker and the server on its own GPU (root, the
 * server's rank, its rank) is a device-local copy, no link, as a DDP
 * bucket's copies are. */
static int ps_gpu_work(const struct ds_op *op) {
  if (op->kind == DS_OP_STEP) return server_update(op);
  return (op->kind == DS_OP_PUSH || op->kind == DS_OP_PULL) && op->root == op->rank;
}

static int cmp_int32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Whether the n servers' updates whose servers (buckets) are in bucket[]
 * (sorted here) are an asynchronous server's: one server applies more
 * than one update in the iteration, one per worker's gradient (sync sums
 * the gradients into one update). */
static int asynchronous_updates(int32_t *bucket, size_t n) {
  qsort(bucket, n, sizeof *bucket, cmp_int32);
  for (size_t i = 1; i < n; i++)
    if (bucket[i] == bucket[i - 1]) return 1;
  return 0;
}

enum ds_metrics_class ds_metrics_class(const struct ds_op *op) {
  if (ps_gpu_work(op)) return DS_METRICS_COMPUTE;
  if (op->stream == DS_STREAM_COMM) return DS_METRICS_COMM;
  if (op->stream == DS_STREAM_HOST) return DS_METRICS_HOST;
  return DS_METRICS_COMPUTE;
}

/* A collective of a gradient bucket: DDP's all-reduces and its comm hook's
 * collectives, not the broadcast of buffers (bucket -1) nor a parameter
 * server's pushes and pulls (their bucket is the server). */
static int bucket_collective(const struct ds_op *op) {
  return ds_metrics_class(op) == DS_METRICS_COMM && op->bucket >= 0 &&
         op->kind != DS_OP_PUSH && op->kind != DS_OP_PULL;
}

/* A backward op PyTorch's DDP logger counts as backward compute: the
 * compute stream's kernels up to the autograd engine's end, whose queued
 * callback records backward_compute_end before finalize_backward waits for
 * the buckets and copies them back (`bucketK.to_grad`, docs/strategies.md),
 * and not a comm hook's work after a collective (on the copy stream). */
static int logger_backward(const struct ds_op *op) {
  static const char to_grad[] = ".to_grad";
  size_t n = strlen(op->name), k = sizeof to_grad - 1;
  return op->stream == DS_STREAM_COMPUTE && !(n >= k && strcmp(op->name + n - k, to_grad) == 0);
}

int32_t ds_metrics_bucket(const struct ds_op *op) {
  return op->rank == 0 && bucket_collective(op) ? op->bucket : -1;
}

/* Clips the sorted, disjoint iv[0..n) to [lo, hi) in place, dropping what
 * falls outside; returns the new count. */
static size_t clip(struct ds_interval *iv, size_t n, int64_t lo, int64_t hi) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t s = iv[i].start_ns > lo ? iv[i].start_ns : lo;
    int64_t e = iv[i].end_ns < hi ? iv[i].end_ns : hi;
    if (s < e) iv[k++] = (struct ds_interval){s, e};
  }
  return k;
}

int64_t ds_metrics_last_end(const struct ds_timed_op *ops, size_t n) {
  int64_t t = DS_METRICS_NO_PREVIOUS;
  for (size_t i = 0; i < n; i++)
    if (ops[i].end_ns > t) t = ops[i].end_ns;
  return t;
}

int64_t ds_metrics_rank0_last_end(const struct ds_timed_op *ops, size_t n) {
  int64_t t = DS_METRICS_NO_PREVIOUS;
  for (size_t i = 0; i < n; i++)
    if (ops[i].op->rank == 0 && ops[i].end_ns > t) t = ops[i].end_ns;
  return t;
}

/* Where rank 0's window of the iteration starts (metrics.h): where its own
 * step starts, its first op or, when that ran before its previous step
 * ended (--loop free's launches run ahead of the GPU), that end; never
 * later than the iteration's origin. */
static int64_t window_start(int64_t origin_ns, int64_t rank0_first_ns,
                            int64_t prev_rank0_end_ns) {
  int64_t own = rank0_first_ns > prev_rank0_end_ns ? rank0_first_ns : prev_rank0_end_ns;
  return own < origin_ns ? own : origin_ns;
}

ds_status ds_metrics_measure(const struct ds_timed_op *ops, size_t n, int64_t prev_end_ns,
                             int64_t prev_rank0_end_ns, struct ds_metrics *m) {
  return ds_metrics_measure_among(ops, n, NULL, 0, prev_end_ns, prev_rank0_end_ns, m);
}

/* Adds the ops of other[0..n_other) that are rank 0's and overlap
 * [w0, w1) to its communication, compute and host intervals, clipped to
 * it (the room ds_metrics_measure_among made for them). */
static void add_others(const struct ds_timed_op *other, size_t n_other, int64_t w0, int64_t w1,
                       struct ds_interval *comm, size_t *n_comm, struct ds_interval *comp,
                       size_t *n_comp, struct ds_interval *host, size_t *n_host) {
  for (size_t i = 0; i < n_other; i++) {
    int64_t s = other[i].start_ns > w0 ? other[i].start_ns : w0;
    int64_t e = other[i].end_ns < w1 ? other[i].end_ns : w1;
    if (other[i].op->rank != 0 || s >= e) continue;
    struct ds_interval iv = {s, e};
    enum ds_metrics_class cls = ds_metrics_class(other[i].op);
    if (cls == DS_METRICS_HOST)
      host[(*n_host)++] = iv;
    else if (cls == DS_METRICS_COMM)
      comm[(*n_comm)++] = iv;
    else
      comp[(*n_comp)++] = iv;
  }
}

ds_status ds_metrics_measure_among(const struct ds_timed_op *ops, size_t n,
                                   const struct ds_timed_op *other, size_t n_other,
                                   int64_t prev_end_ns, int64_t prev_rank0_end_ns,
                                   struct ds_metrics *m) {
  /* rank 0's communication, compute and host intervals, and room for the
   * union of the first two: each op is in one of the three, so the first
   * two hold at most n together; the other iterations' ops (n_other) may
   * join any of them */
  if (!other) n_other = 0;
  size_t room = n + n_other + 1;
  struct ds_interval *comm = malloc(4 * room * sizeof *comm);
  int32_t *upd_bucket = malloc((n + 1) * sizeof *upd_bucket);
  if (!comm || !upd_bucket) {
    free(comm);
    free(upd_bucket);
    return DS_ENOMEM;
  }
  size_t n_upd = 0;
  /* rank 0's own ops' span, its servers' updates left out (metrics.h) */
  int64_t own_first = INT64_MAX, own_last = INT64_MIN;
  struct ds_interval *comp = comm + room, *host = comp + room, *gpu = host + room;
  size_t n_comm = 0, n_comp = 0, n_host = 0;
  int64_t t0 = INT64_MAX, t1 = INT64_MIN, r0_first = INT64_MAX;
  /* Sums of durations, in double: each is at most 1e18 ns (the reader's
   * cap) but overlapping ops' add past int64_t; below 2^53 ns (104 days)
   * the double sum of integers is exact, so no real trace's value moves. */
  double fwd = 0, bwd = 0, step = 0;
  int64_t bwd_first = INT64_MAX, bwd_last = INT64_MIN, fwd_last_start = INT64_MIN;
  int64_t comm_first = INT64_MAX, comm_last = INT64_MIN;
  for (size_t i = 0; i < n; i++) {
    const struct ds_op *o = ops[i].op;
    int64_t s = ops[i].start_ns, e = ops[i].end_ns;
    if (s < t0) t0 = s;
    if (e > t1) t1 = e;
    if (server_update(o)) upd_bucket[n_upd++] = o->bucket;
    if (o->rank != 0) continue;
    if (s < r0_first) r0_first = s;
    if (!server_update(o)) {
      if (s < own_first) own_first = s;
      if (e > own_last) own_last = e;
    }
    /* The step counts its GPU work (a parameter server's updates
     * included: ds_metrics_class), not the optimizer's launches (PyTorch
     * 1.4's loop), which overlap its kernels. Host ops enter nothing else. */
    enum ds_metrics_class cls = ds_metrics_class(o);
    if (o->kind == DS_OP_STEP && cls == DS_METRICS_COMPUTE) step += (double)(e - s);
    struct ds_interval iv = {s, e};
    if (cls == DS_METRICS_HOST) {
      host[n_host++] = iv;
      continue;
    }
    if (cls == DS_METRICS_COMM) {
      comm[n_comm++] = iv;
      continue;
    }
    comp[n_comp++] = iv;
    if (o->kind == DS_OP_FWD || o->kind == DS_OP_LOSS) {
      fwd += (double)(e - s);
      if (o->kind == DS_OP_FWD && s > fwd_last_start) fwd_last_start = s;
    } else if (o->kind == DS_OP_BWD) {
      bwd += (double)(e - s);
      if (logger_backward(o) && e > bwd_last) bwd_last = e;
    }
  }
  /* The logger times one backward: the last micro-step's (--no-sync's
   * accumulating ones and --grad-accum's earlier ones run before it), the
   * backward after the last forward, and the gradient buckets'
   * collectives that start after it. Its compute starts at
   * prepare_for_backward, which DDP's forward calls as it returns
   * (reducer.cpp, backward_compute_start): the loss, computed outside the
   * module, counts as backward. */
  for (size_t i = 0; i < n; i++) {
    const struct ds_op *o = ops[i].op;
    int64_t s = ops[i].start_ns, e = ops[i].end_ns;
    if (o->rank != 0 || s < fwd_last_start) continue;
    if ((o->kind == DS_OP_BWD || o->kind == DS_OP_LOSS) &&
        ds_metrics_class(o) == DS_METRICS_COMPUTE && s < bwd_first)
      bwd_first = s;
    if (bucket_collective(o) && s < comm_first) comm_first = s;
    if (bucket_collective(o) && e > comm_last) comm_last = e;
  }
  double *v = m->v;
  for (int i = 0; i < DS_METRIC_COUNT; i++) v[i] = 0;
  n_comm = ds_overlap_merge(comm, n_comm);
  n_comp = ds_overlap_merge(comp, n_comp);
  int64_t c = ds_overlap_total_ns(comm, n_comm);
  int64_t x = ds_overlap_uncovered_ns(comm, n_comm, comp, n_comp);
  int64_t origin = prev_end_ns > t0 ? prev_end_ns : t0;
  v[DS_METRIC_iter_ms] = n ? (double)(t1 - origin) / DS_UNITS_NS_PER_MS : 0;
  v[DS_METRIC_fwd_ms] = fwd / DS_UNITS_NS_PER_MS;
  v[DS_METRIC_bwd_ms] = bwd / DS_UNITS_NS_PER_MS;
  v[DS_METRIC_step_ms] = step / DS_UNITS_NS_PER_MS;
  v[DS_METRIC_comm_ms] = (double)c / DS_UNITS_NS_PER_MS;
  v[DS_METRIC_exposed_comm_ms] = (double)x / DS_UNITS_NS_PER_MS;
  v[DS_METRIC_overlap_pct] = c > 0 ? 100.0 * (double)(c - x) / (double)c : 0;
  /* Rank 0's lines over its own step (below) take in every op of the run
   * on rank 0 inside it: the iteration's, and the other iterations' (an
   * update of another worker's other step on GPU 0, metrics.h); the
   * communication lines above are the iteration's ops' alone. */
  m->rank0_own_step = asynchronous_updates(upd_bucket, n_upd) && own_first < own_last;
  if (m->rank0_own_step && n_other) {
    add_others(other, n_other, own_first, own_last, comm, &n_comm, comp, &n_comp, host,
               &n_host);
    n_comm = ds_overlap_merge(comm, n_comm);
    n_comp = ds_overlap_merge(comp, n_comp);
  }
  /* the GPU's and the network's union covers what the host's time may not */
  size_t n_gpu = 0;
  for (size_t i = 0; i < n_comp; i++) gpu[n_gpu++] = comp[i];
  for (size_t i = 0; i < n_comm; i++) gpu[n_gpu++] = comm[i];
  n_gpu = ds_overlap_merge(gpu, n_gpu);
  /* rank 0's share of the iteration: a window of its length from where
   * rank 0's own step starts, or under an asynchronous server rank 0's
   * own step (metrics.h) */
  int64_t w0 = window_start(origin, r0_first, prev_rank0_end_ns);
  int64_t w1 = n ? w0 + (t1 - origin) : w0;
  if (m->rank0_own_step) {
    w0 = own_first;
    w1 = own_last;
  }
  m->rank0_window_ms = (double)(w1 - w0) / DS_UNITS_NS_PER_MS;
  n_host = clip(host, ds_overlap_merge(host, n_host), w0, w1);
  n_comp = clip(comp, n_comp, w0, w1);
  v[DS_METRIC_gpu_busy_ms] = (double)ds_overlap_total_ns(comp, n_comp) / DS_UNITS_NS_PER_MS;
  v[DS_METRIC_host_exposed_ms] =
      (double)ds_overlap_uncovered_ns(host, n_host, gpu, n_gpu) / DS_UNITS_NS_PER_MS;
  /* PyTorch's DDP logger (torch/csrc/distributed/c10d/logger.cpp):
   * backward compute = compute end - compute start, comm = comm end - comm
   * start, overlap = backward compute end - comm start; a negative span
   * gives no value there (reducer_timer.hpp), 0 here. */
  if (bwd_first <= bwd_last)
    v[DS_METRIC_ddp_bwd_compute_ms] = (double)(bwd_last - bwd_first) / DS_UNITS_NS_PER_MS;
  if (comm_first <= comm_last) {
    int64_t span = comm_last - comm_first;
    v[DS_METRIC_ddp_bwd_comm_ms] = (double)span / DS_UNITS_NS_PER_MS;
    if (bwd_first <= bwd_last && bwd_last > comm_first) {
      int64_t ov = bwd_last - comm_first;
      v[DS_METRIC_ddp_overlap_ms] = (double)ov / DS_UNITS_NS_PER_MS;
      v[DS_METRIC_ddp_overlap_pct] =
          span > 0 ? 100.0 * (double)(ov < span ? ov : span) / (double)span : 0;
    }
  }
  /* without communication time (one rank: the all-reduces do nothing;
   * --strategy single: none at all) or without a bucket collective
   * (DataParallel, a parameter server: no gradient bucket to overlap) the
   * share of it hidden is undefined, not the 100 the logger's span between
   * zero-length ops gives nor a 0: n/a (docs/analysis.md) */
  if (c == 0 || comm_first > comm_last) v[DS_METRIC_ddp_overlap_pct] = NAN;
  m->t0_ns = n ? t0 : 0;
  free(comm);
  free(upd_bucket);
  return DS_OK;
}
