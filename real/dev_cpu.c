/*
 * The cpu device: one MPI process per rank, one worker thread per stream
 * the rank uses, MPI collectives on real float buffers, CPU compute.
 *
 * Streams are emulated by threads with a FIFO queue each: a worker runs its
 * queue's ops one at a time in issue (= schedule) order, and before an op
 * waits until every op named in its deps has ended in this iteration
 * (per-op done generation + one condition variable). That is exactly the
 * ordering the schedule asks for and nothing more. Times are CLOCK_MONOTONIC
 * readings relative to begin_iter, taken when the op starts running (its
 * deps and its stream predecessor are done) and when it has finished.
 *
 * Key invariants: only the comm-stream worker calls MPI during an iteration
 * (MPI_THREAD_SERIALIZED), and every rank issues the same collectives in the
 * same order on MPI_COMM_WORLD, which open() checks on the whole schedule so
 * that a schedule MPI would deadlock on is refused instead; open() also
 * compares a hash of the schedule across ranks, so ranks given different
 * files are refused before the first op. A failing MPI call aborts the job
 * (MPI_Abort) with a message naming the rank, the call and the op, and so
 * does a collective that waits past the limit (--timeout), naming the ranks
 * that did not arrive: no rank is left waiting.
 *
 * Collective buffers: every collective op of the rank has its own output
 * region (like DDP's per-bucket gradient buffers) and all read one constant
 * input buffer (element i of rank r is (r+1) + (i % 7)), so nothing is
 * written between ops of an iteration; an all-reduce runs in place, as
 * DDP's does, on its region refilled with those input values. end_iter
 * checks every output against the closed-form result, counts wrong
 * elements, and refills the outputs (-1 where the output is not also the
 * input) so a collective that did nothing is caught next time.
 */
#include "device.h"
#include "dev_common.h"
#include "launch.h"
#include "options.h"
#include "schedule_check.h"
#include "base/textout.h"
#include "base/units.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_version.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* GEMMs are capped at this many flops (2*m*n*k) per op: GSL's reference
 * CBLAS runs at a few GFLOP/s, so an op of a real model (tens of GFLOPs)
 * would take seconds. Above the cap the op does less work than it says. */
#define CPU_GEMM_MAX_FLOPS 2e8

#define NO_OP SIZE_MAX

struct worker {
  struct ds_dev_rank *r;
  enum ds_stream stream;
  pthread_t thread;
  int started;
  size_t *queue; /* op indices issued this iteration, in issue order */
  size_t cap, head, tail;
  pthread_cond_t cv; /* signalled when its next op may run or on stop */
  int cv_ready;
  size_t pending;    /* the op it waits to start, or NO_OP */
  double *a, *b, *c; /* GEMM operands, dim x dim each */
  size_t dim;
};

struct ds_dev_rank {
  const struct ds_schedule *s;
  int32_t rank, world;
  enum ds_compute_mode compute;
  size_t *dep_idx;      /* parallel to s->deps: index of the op with that id */
  uint64_t *done_gen;   /* per op: the generation (iteration) it ended in */
  int64_t *start_ns, *end_ns;
  size_t *out_off;      /* per collective op of this rank: its output region */
  size_t *n_in, *n_out; /* per collective op: elements read and written */
  float *in;            /* constant input, in_len elements */
  size_t in_len;
  float *out;           /* all output regions, out_len elements */
  size_t out_len;
  struct worker w[DS_STREAM_COUNT];
  int sync_ready;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* end_iter's: every issued op has ended */
  uint64_t gen;
  size_t issued, finished;
  int stop;
  int64_t t0_ns;
  int64_t wrong;
  int mpi_thread_level;
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
  /* Collective waits are bounded (timeout_s). Every rank tells rank 0 the
   * sequence number of each collective it enters (arrive_seq[op] is the
   * send buffer, one per op so it outlives the send), and rank 0 keeps the
   * highest each rank reached, to name the ranks that did not arrive. */
  double timeout_s;
  uint64_t coll_seq;     /* collectives entered so far, all iterations */
  uint64_t *arrive_seq;  /* [n_ops] */
  uint64_t *arrived;     /* rank 0: [world] highest sequence announced */
};

#define TAG_ARRIVE 7001

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static float in_value(int32_t rank, size_t i) {
  return (float)(rank + 1) + (float)(i % 7);
}

static float sum_value(int32_t world, size_t i) {
  return (float)world * (float)(world + 1) / 2.0f + (float)world * (float)(i % 7);
}

/* What element k of the op's output must hold afterwards. */
static float expected(const struct ds_dev_rank *r, const struct ds_op *o,
                      size_t per, size_t k) {
  switch (o->kind) {
    case DS_OP_ALLREDUCE:
    case DS_OP_REDUCE: return sum_value(r->world, k);
    case DS_OP_BROADCAST: return in_value(o->root, k);
    case DS_OP_ALLGATHER:
    case DS_OP_GATHER: return in_value((int32_t)(k / per), k % per);
    case DS_OP_REDUCESCATTER: return sum_value(r->world, (size_t)r->rank * per + k);
    case DS_OP_SCATTER: return in_value(o->root, (size_t)r->rank * per + k);
    default: return 0;
  }
}

/* Refills the op's output: -1 everywhere, except where the output is the
 * op's input too: the root's broadcast buffer and an all-reduce's (in
 * place), which hold this rank's input values. An all-reduce that did
 * nothing is still caught at two ranks or more (its sum differs). */
static void reset_output(struct ds_dev_rank *r, size_t i) {
  const struct ds_op *o = &r->s->ops[i];
  float *out = r->out + r->out_off[i];
  int own = (o->kind == DS_OP_BROADCAST && o->root == r->rank) || o->kind == DS_OP_ALLREDUCE;
  for (size_t k = 0; k < r->n_out[i]; k++) out[k] = own ? in_value(r->rank, k) : -1.0f;
}

static int64_t count_wrong(const struct ds_dev_rank *r, size_t i) {
  const struct ds_op *o = &r->s->ops[i];
  const float *out = r->out + r->out_off[i];
  size_t n = (size_t)ceil(o->bytes / 4.0), per = n / (size_t)r->world;
  int64_t wrong = 0;
  if (o->kind == DS_OP_ALLREDUCE || o->kind == DS_OP_REDUCE) {
    /* the common case, without a division per element */
    float want[7];
    for (size_t j = 0; j < 7; j++) want[j] = sum_value(r->world, j);
    for (size_t k = 0, j = 0; k < r->n_out[i]; k++, j = j == 6 ? 0 : j + 1)
      wrong += out[k] != want[j];
    return wrong;
  }
  for (size_t k = 0; k < r->n_out[i]; k++) wrong += out[k] != expected(r, o, per, k);
  return wrong;
}

/* ---- running one op --------------------------------------------------- */

static void die_mpi(const struct ds_dev_rank *r, const struct ds_op *o,
                    const char *call, int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
  fprintf(stderr, "ddpreal: rank %d: %s for op %lld (%s, coll %lld) failed: %s\n",
          r->rank, call, (long long)o->id, ds_op_kind_name(o->kind),
          (long long)o->coll, msg);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Rank 0: takes in every arrival announced so far. */
static void drain_arrivals(struct ds_dev_rank *r) {
  for (;;) {
    int flag = 0;
    MPI_Status stt;
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ARRIVE, MPI_COMM_WORLD, &flag, &stt) != MPI_SUCCESS ||
        !flag)
      return;
    uint64_t seq = 0;
    MPI_Recv(&seq, 1, MPI_UINT64_T, stt.MPI_SOURCE, TAG_ARRIVE, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    if (seq > r->arrived[stt.MPI_SOURCE]) r->arrived[stt.MPI_SOURCE] = seq;
  }
}

static void announce_arrival(struct ds_dev_rank *r, size_t i) {
  r->coll_seq++;
  if (r->world == 1) return;
  if (r->rank == 0) {
    r->arrived[0] = r->coll_seq;
    drain_arrivals(r);
    return;
  }
  MPI_Request q;
  r->arrive_seq[i] = r->coll_seq;
  if (MPI_Isend(&r->arrive_seq[i], 1, MPI_UINT64_T, 0, TAG_ARRIVE, MPI_COMM_WORLD, &q) ==
      MPI_SUCCESS)
    MPI_Request_free(&q);
}

/* Waits for a nonblocking collective within the limit. Past it, rank 0
 * names the ranks that never announced this collective and ends the job;
 * the other ranks give rank 0 a grace period to do so, then end it
 * themselves (issue #15, defect 6: a stopped rank hung the replay). */
static void wait_collective(struct ds_dev_rank *r, const struct ds_op *o, const char *call,
                            MPI_Request *q) {
  int64_t t0 = now_ns();
  double limit = r->timeout_s * (r->rank == 0 ? 1.0 : 1.5);
  for (;;) {
    int done = 0;
    int rc = MPI_Test(q, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) die_mpi(r, o, call, rc);
    if (done) return;
    double waited = (double)(now_ns() - t0) * 1e-9;
    if (waited > limit) break;
    /* Poll as a blocking MPI call would for the first 100 ms, so the
     * measured time is not stretched by naps; then nap between polls. */
    if (waited > 0.1) {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    }
  }
  char missing[256] = "";
  size_t used = 0;
  int n_missing = 0;
  if (r->rank == 0) {
    drain_arrivals(r);
    for (int32_t q2 = 1; q2 < r->world; q2++)
      if (r->arrived[q2] < r->coll_seq) {
        n_missing++;
        if (used < sizeof missing) {
          int w = snprintf(missing + used, sizeof missing - used, "%s%d", used ? ", " : "", q2);
          if (w > 0) used += (size_t)w;
        }
      }
  }
  if (n_missing)
    fprintf(stderr, "ddpreal: rank %d: %s for op %lld (coll %lld) waited %.0f s: rank%s %s "
            "did not arrive (stopped, hung, or given another schedule); --timeout S sets "
            "the limit\n", r->rank, call, (long long)o->id, (long long)o->coll, r->timeout_s,
            n_missing > 1 ? "s" : "", missing);
  else if (r->rank == 0)
    fprintf(stderr, "ddpreal: rank 0: %s for op %lld (coll %lld) waited %.0f s: every rank "
            "entered it, so one stopped or hung inside it; --timeout S sets the limit\n",
            call, (long long)o->id, (long long)o->coll, limit);
  else
    fprintf(stderr, "ddpreal: rank %d: %s for op %lld (coll %lld) waited %.0f s for a rank "
            "that did not arrive (rank 0 names it when it runs); --timeout S sets the limit\n",
            r->rank, call, (long long)o->id, (long long)o->coll, limit);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void run_collective(struct ds_dev_rank *r, size_t i) {
  const struct ds_op *o = &r->s->ops[i];
  float *out = r->out + r->out_off[i];
  size_t n = (size_t)ceil(o->bytes / 4.0);
  int per = (int)(n / (size_t)r->world);
  int cnt = (int)n, rc = MPI_SUCCESS;
  const char *call = "";
  MPI_Comm comm = MPI_COMM_WORLD;
  MPI_Request q = MPI_REQUEST_NULL;
  announce_arrival(r, i);
  switch (o->kind) {
    case DS_OP_ALLREDUCE:
      /* in place, as DDP's all-reduce of its bucket is (ProcessGroupNCCL
       * allreduce(bucket) with the bucket as input and output): at one rank
       * MPI, like NCCL, then has nothing to copy */
      call = "MPI_Iallreduce";
      rc = MPI_Iallreduce(MPI_IN_PLACE, out, cnt, MPI_FLOAT, MPI_SUM, comm, &q);
      break;
    case DS_OP_REDUCE:
      call = "MPI_Ireduce";
      rc = MPI_Ireduce(r->in, out, cnt, MPI_FLOAT, MPI_SUM, o->root, comm, &q);
      break;
    case DS_OP_BROADCAST:
      call = "MPI_Ibcast";
      rc = MPI_Ibcast(out, cnt, MPI_FLOAT, o->root, comm, &q);
      break;
    case DS_OP_ALLGATHER:
      call = "MPI_Iallgather";
      rc = MPI_Iallgather(r->in, per, MPI_FLOAT, out, per, MPI_FLOAT, comm, &q);
      break;
    case DS_OP_REDUCESCATTER:
      call = "MPI_Ireduce_scatter_block";
      rc = MPI_Ireduce_scatter_block(r->in, out, per, MPI_FLOAT, MPI_SUM, comm, &q);
      break;
    case DS_OP_GATHER:
      call = "MPI_Igather";
      rc = MPI_Igather(r->in, per, MPI_FLOAT, out, per, MPI_FLOAT, o->root, comm, &q);
      break;
    case DS_OP_SCATTER:
      call = "MPI_Iscatter";
      rc = MPI_Iscatter(r->in, per, MPI_FLOAT, out, per, MPI_FLOAT, o->root, comm, &q);
      break;
    default: break; /* refused by open() */
  }
  if (rc != MPI_SUCCESS) die_mpi(r, o, call, rc);
  if (q != MPI_REQUEST_NULL) wait_collective(r, o, call, &q);
}

/* FNV-1a over what every rank must agree on: each op's identity, place,
 * kind, collective, root, size and dependencies. */
static uint64_t schedule_hash(const struct ds_schedule *s) {
  uint64_t h = 1469598103934665603ull;
#define MIX(v)                                                    \
  do {                                                            \
    uint64_t x_ = (uint64_t)(v);                                  \
    for (int b_ = 0; b_ < 8; b_++) h = (h ^ ((x_ >> (8 * b_)) & 0xff)) * 1099511628211ull; \
  } while (0)
  MIX(s->n_ops);
  MIX(s->world_size);
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    double bytes = o->bytes;
    uint64_t bits;
    memcpy(&bits, &bytes, sizeof bits);
    MIX(o->id);
    MIX(o->rank);
    MIX(o->stream);
    MIX(o->kind);
    MIX(o->coll);
    MIX(o->root);
    MIX(bits);
    const int64_t *deps = ds_schedule_deps(s, o);
    for (uint32_t k = 0; k < o->dep_count; k++) MIX(deps[k]);
  }
#undef MIX
  return h;
}

/* Before the first op: every rank must replay the same schedule, or their
 * collectives would not match and MPI would wait for ever. The check's own
 * wait is bounded like a collective's. */
static ds_status check_same_schedule(struct ds_dev_rank *r, struct ds_err *err) {
  if (r->world == 1) return DS_OK;
  uint64_t mine = schedule_hash(r->s);
  uint64_t *all = calloc((size_t)r->world, sizeof *all);
  if (!all) return ds_err_set(err, DS_ENOMEM, "cpu device: out of memory");
  MPI_Request q;
  int rc = MPI_Iallgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD, &q);
  int64_t t0 = now_ns();
  int done = 0;
  while (rc == MPI_SUCCESS && !done) {
    rc = MPI_Test(&q, &done, MPI_STATUS_IGNORE);
    if (!done && (double)(now_ns() - t0) * 1e-9 > r->timeout_s) {
      free(all);
      fprintf(stderr, "ddpreal: rank %d: comparing schedules waited %.0f s for a rank that "
              "did not arrive; --timeout S sets the limit\n", r->rank, r->timeout_s);
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!done) {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    }
  }
  ds_status st = DS_OK;
  if (rc != MPI_SUCCESS) {
    st = ds_err_set(err, DS_EIO, "rank %d: MPI_Iallgather of the schedule hash failed",
                    r->rank);
  } else {
    for (int32_t q2 = 1; q2 < r->world; q2++)
      if (all[q2] != all[0]) {
        st = ds_err_set(err, DS_EINPUT, "rank %d's schedule differs from rank 0's (hash "
                        "%016llx, not %016llx): every rank must replay the same --schedule "
                        "file", q2, (unsigned long long)all[q2], (unsigned long long)all[0]);
        break;
      }
  }
  free(all);
  return st;
}

static void spin_us(double dur_us) {
  /* the schedule's reader refuses dur_us past DS_UNITS_NS_MAX ns; the
   * clamp keeps llround in range whatever reaches here */
  double ns = dur_us * 1e3, max_ns = (double)DS_UNITS_NS_MAX;
  int64_t until = now_ns() + (int64_t)llround(ns < max_ns ? ns : max_ns);
  while (now_ns() < until) {
  }
}

static size_t gemm_dim(double flops) {
  if (!(flops > 0)) return 0;
  double f = flops < CPU_GEMM_MAX_FLOPS ? flops : CPU_GEMM_MAX_FLOPS;
  long d = lround(cbrt(f / 2.0));
  return d < 1 ? 1 : (size_t)d;
}

static void run_op(struct ds_dev_rank *r, struct worker *w, size_t i) {
  const struct ds_op *o = &r->s->ops[i];
  if (ds_op_kind_is_collective(o->kind)) {
    run_collective(r, i);
    return;
  }
  size_t d = r->compute == DS_COMPUTE_GEMM && ds__dev_is_compute(o->kind) ? gemm_dim(o->flops) : 0;
  if (d == 0) {
    /* spin mode, copies, and compute ops without flops (the optimizer
     * step is memory-bound): occupy the stream for the predicted time */
    spin_us(o->dur_us);
    return;
  }
  gsl_matrix_view a = gsl_matrix_view_array(w->a, d, d);
  gsl_matrix_view b = gsl_matrix_view_array(w->b, d, d);
  gsl_matrix_view c = gsl_matrix_view_array(w->c, d, d);
  gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, &a.matrix, &b.matrix, 0.0, &c.matrix);
}

static int deps_done(const struct ds_dev_rank *r, size_t i) {
  const struct ds_op *o = &r->s->ops[i];
  for (uint32_t k = 0; k < o->dep_count; k++)
    if (r->done_gen[r->dep_idx[o->dep_first + k]] != r->gen) return 0;
  return 1;
}

/* Wakes only the threads that can proceed: a worker whose pending op has
 * all its deps done, and end_iter once every issued op has ended. Waking
 * everyone on every op end costs a context switch per sleeper per op, which
 * on a busy 2-core machine showed up as 20-100 us between ops. */
static void wake_ready(struct ds_dev_rank *r) {
  for (int k = 0; k < DS_STREAM_COUNT; k++) {
    struct worker *w = &r->w[k];
    if (w->pending != NO_OP && deps_done(r, w->pending)) pthread_cond_signal(&w->cv);
  }
  if (r->finished == r->issued) pthread_cond_signal(&r->cv);
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  struct ds_dev_rank *r = w->r;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (!r->stop && w->head == w->tail) pthread_cond_wait(&w->cv, &r->mu);
    if (r->stop) break;
    size_t i = w->queue[w->head++];
    w->pending = i;
    while (!r->stop && !deps_done(r, i)) pthread_cond_wait(&w->cv, &r->mu);
    w->pending = NO_OP;
    if (r->stop) break;
    int64_t t0 = r->t0_ns;
    pthread_mutex_unlock(&r->mu);
    int64_t start = now_ns() - t0;
    run_op(r, w, i);
    int64_t end = now_ns() - t0;
    pthread_mutex_lock(&r->mu);
    r->start_ns[i] = start;
    r->end_ns[i] = end;
    r->done_gen[i] = r->gen;
    r->finished++;
    wake_ready(r);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

/* ---- open: checks of the whole schedule, then buffers and threads ------ */

static ds_status alloc_buffers(struct ds_dev_rank *r, struct ds_err *err) {
  const struct ds_schedule *s = r->s;
  size_t n = s->n_ops ? s->n_ops : 1;
  r->done_gen = calloc(n, sizeof *r->done_gen);
  r->start_ns = calloc(n, sizeof *r->start_ns);
  r->end_ns = calloc(n, sizeof *r->end_ns);
  r->out_off = calloc(n, sizeof *r->out_off);
  r->n_in = calloc(n, sizeof *r->n_in);
  r->n_out = calloc(n, sizeof *r->n_out);
  if (!r->done_gen || !r->start_ns || !r->end_ns || !r->out_off || !r->n_in || !r->n_out)
    return ds_err_set(err, DS_ENOMEM, "cpu device: out of memory");
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (o->rank != r->rank) continue;
    struct worker *w = &r->w[o->stream];
    w->cap++;
    if (r->compute == DS_COMPUTE_GEMM && ds__dev_is_compute(o->kind)) {
      size_t d = gemm_dim(o->flops);
      if (d > w->dim) w->dim = d;
    }
    if (!ds_op_kind_is_collective(o->kind)) continue;
    ds__dev_coll_counts(o, r->rank, r->world, &r->n_in[i], &r->n_out[i]);
    if (o->kind == DS_OP_BROADCAST) r->n_in[i] = 0; /* MPI_Bcast: in place on the output */
    if (r->n_in[i] > r->in_len) r->in_len = r->n_in[i];
    r->out_off[i] = r->out_len;
    r->out_len += r->n_out[i];
  }
  r->in = malloc((r->in_len ? r->in_len : 1) * sizeof *r->in);
  r->out = malloc((r->out_len ? r->out_len : 1) * sizeof *r->out);
  if (!r->in || !r->out)
    return ds_err_set(err, DS_ENOMEM, "cpu device: out of memory for %zu + %zu floats of "
                      "collective buffers", r->in_len, r->out_len);
  for (size_t k = 0; k < r->in_len; k++) r->in[k] = in_value(r->rank, k);
  for (size_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].rank == r->rank && ds_op_kind_is_collective(s->ops[i].kind))
      reset_output(r, i);
  for (int k = 0; k < DS_STREAM_COUNT; k++) {
    struct worker *w = &r->w[k];
    w->r = r;
    w->stream = (enum ds_stream)k;
    if (!w->cap) continue;
    w->queue = malloc(w->cap * sizeof *w->queue);
    if (!w->queue) return ds_err_set(err, DS_ENOMEM, "cpu device: out of memory");
    if (!w->dim) continue;
    size_t dd = w->dim * w->dim;
    w->a = malloc(dd * sizeof *w->a);
    w->b = malloc(dd * sizeof *w->b);
    w->c = malloc(dd * sizeof *w->c);
    if (!w->a || !w->b || !w->c)
      return ds_err_set(err, DS_ENOMEM, "cpu device: out of memory for GEMM operands");
    for (size_t q = 0; q < dd; q++) {
      w->a[q] = 1.0 / (double)(1 + q % 13);
      w->b[q] = 1.0 / (double)(1 + q % 11);
    }
  }
  return DS_OK;
}

static void cpu_close(struct ds_dev_rank *r);

static ds_status cpu_open(const struct ds_dev_config *cfg, struct ds_dev_rank **out,
                          struct ds_err *err) {
  struct ds_dev_rank *r = calloc(1, sizeof *r);
  if (!r) return ds_err_set(err, DS_ENOMEM, "cpu device: out of memory");
  r->s = cfg->sched;
  r->rank = cfg->rank;
  r->world = cfg->world;
  r->compute = cfg->compute;
  ds_status st = DS_OK;
  int inited = 0, size = 0, len = 0;
  if (MPI_Initialized(&inited) != MPI_SUCCESS || !inited) {
    st = ds_err_set(err, DS_EINTERNAL, "cpu device: MPI is not initialised (run it "
                    "through ds_launch_mpi)");
    goto fail;
  }
  MPI_Query_thread(&r->mpi_thread_level);
  if (r->mpi_thread_level < MPI_THREAD_SERIALIZED) {
    st = ds_err_set(err, DS_EIO, "cpu device: the MPI library provides thread level %d, "
                    "below MPI_THREAD_SERIALIZED; the comm-stream thread needs it",
                    r->mpi_thread_level);
    goto fail;
  }
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != r->world) {
    st = ds_err_set(err, DS_EUSAGE, "cpu device: the schedule has %d ranks but MPI has "
                    "%d process%s (run mpirun -np %d)", r->world, size, size == 1 ? "" : "es",
                    r->world);
    goto fail;
  }
  if (MPI_Get_library_version(r->mpi_version, &len) != MPI_SUCCESS) r->mpi_version[0] = '\0';
  r->mpi_version[strcspn(r->mpi_version, "\r\n,")] = '\0';
  r->timeout_s = ds_real_timeout_s(); /* the collective wait's limit */
  DS_CHECK_GOTO(check_same_schedule(r, err), st, fail);
  DS_CHECK_GOTO(ds_check_collectives(r->s, r->world, &ds_coll_rules_cpu, err), st, fail);
  DS_CHECK_GOTO(ds__dev_map_deps(r->s, "cpu device", &r->dep_idx, err), st, fail);
  r->arrive_seq = calloc(r->s->n_ops ? r->s->n_ops : 1, sizeof *r->arrive_seq);
  r->arrived = calloc((size_t)r->world, sizeof *r->arrived);
  if (!r->arrive_seq || !r->arrived) {
    st = ds_err_set(err, DS_ENOMEM, "cpu device: out of memory");
    goto fail;
  }
  DS_CHECK_GOTO(alloc_buffers(r, err), st, fail);
  if (pthread_mutex_init(&r->mu, NULL) != 0) {
    st = ds_err_set(err, DS_EIO, "cpu device: pthread_mutex_init failed");
    goto fail;
  }
  if (pthread_cond_init(&r->cv, NULL) != 0) {
    pthread_mutex_destroy(&r->mu);
    st = ds_err_set(err, DS_EIO, "cpu device: pthread_cond_init failed");
    goto fail;
  }
  r->sync_ready = 1;
  for (int k = 0; k < DS_STREAM_COUNT; k++) {
    struct worker *w = &r->w[k];
    w->pending = NO_OP;
    if (!w->cap) continue;
    if (pthread_cond_init(&w->cv, NULL) != 0) {
      st = ds_err_set(err, DS_EIO, "cpu device: pthread_cond_init failed");
      goto fail;
    }
    w->cv_ready = 1;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
      st = ds_err_set(err, DS_EIO, "cpu device: cannot start the %s-stream thread",
                      ds_stream_name(w->stream));
      goto fail;
    }
    w->started = 1;
  }
  *out = r;
  return DS_OK;
fail:
  cpu_close(r);
  return st;
}

static ds_status cpu_begin_iter(struct ds_dev_rank *r, struct ds_err *err) {
  (void)err;
  pthread_mutex_lock(&r->mu);
  r->gen++;
  r->issued = r->finished = 0;
  for (int k = 0; k < DS_STREAM_COUNT; k++) r->w[k].head = r->w[k].tail = 0;
  r->t0_ns = now_ns();
  pthread_mutex_unlock(&r->mu);
  return DS_OK;
}

static ds_status cpu_issue(struct ds_dev_rank *r, size_t index, struct ds_err *err) {
  const struct ds_op *o = &r->s->ops[index];
  struct worker *w = &r->w[o->stream];
  if (o->rank != r->rank || w->tail == w->cap)
    return ds_err_set(err, DS_EINTERNAL, "cpu device: op %lld issued to rank %d twice or "
                      "on the wrong rank", (long long)o->id, r->rank);
  pthread_mutex_lock(&r->mu);
  w->queue[w->tail++] = index;
  r->issued++;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&r->mu);
  return DS_OK;
}

static ds_status cpu_end_iter(struct ds_dev_rank *r, int64_t *start_ns, int64_t *end_ns,
                              struct ds_err *err) {
  (void)err;
  pthread_mutex_lock(&r->mu);
  while (r->finished < r->issued) pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
  /* The workers are idle until the next issue: the buffers are ours. */
  for (size_t i = 0; i < r->s->n_ops; i++) {
    if (r->done_gen[i] != r->gen) continue;
    start_ns[i] = r->start_ns[i];
    end_ns[i] = r->end_ns[i];
    if (!ds_op_kind_is_collective(r->s->ops[i].kind)) continue;
    r->wrong += count_wrong(r, i);
    reset_output(r, i);
  }
  return DS_OK;
}

static int64_t cpu_wrong(const struct ds_dev_rank *r) { return r->wrong; }

static void cpu_describe(const struct ds_dev_rank *r, char *buf, size_t cap) {
  size_t used = strlen(buf); /* describe appends (device.h) */
  char host[256] = "";
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
  host[sizeof host - 1] = '\0';
  char model[256] = "unknown";
  FILE *fp = fopen("/proc/cpuinfo", "r");
  if (fp) {
    char line[512];
    while (fgets(line, sizeof line, fp)) {
      if (strncmp(line, "model name", 10) != 0) continue;
      const char *v = strchr(line, ':');
      if (!v) continue;
      v += 1 + strspn(v + 1, " \t");
      snprintf(model, sizeof model, "%.*s", (int)strcspn(v, "\r\n"), v);
      break;
    }
    fclose(fp);
  }
  ds_textout_append(buf, cap, &used, "# host: %s\n", host);
  ds_textout_append(buf, cap, &used, "# cpu: %s, %ld online\n", model,
                    sysconf(_SC_NPROCESSORS_ONLN));
  ds_textout_append(buf, cap, &used, "# mpi: %s (thread level %d, serialized is %d)\n",
                    r->mpi_version[0] ? r->mpi_version : "unknown", r->mpi_thread_level,
                    MPI_THREAD_SERIALIZED);
  ds_textout_append(buf, cap, &used, "# compute: %s\n",
                    r->compute == DS_COMPUTE_GEMM
                        ? "gemm (GSL " GSL_VERSION " CBLAS dgemm, at most 2e8 flops per op; "
                          "ops without flops spin)"
                        : "spin (busy-wait dur_us on CLOCK_MONOTONIC)");
  ds_textout_append(buf, cap, &used, "# collectives: MPI on MPI_COMM_WORLD, float sum, checked\n");
}

static void cpu_close(struct ds_dev_rank *r) {
  if (!r) return;
  if (r->sync_ready) {
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    for (int k = 0; k < DS_STREAM_COUNT; k++)
      if (r->w[k].cv_ready) pthread_cond_signal(&r->w[k].cv);
    pthread_mutex_unlock(&r->mu);
  }
  for (int k = 0; k < DS_STREAM_COUNT; k++) {
    struct worker *w = &r->w[k];
    if (w->started) pthread_join(w->thread, NULL);
    if (w->cv_ready) pthread_cond_destroy(&w->cv);
    free(w->queue);
    free(w->a);
    free(w->b);
    free(w->c);
  }
  if (r->sync_ready) {
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
  }
  free(r->dep_idx);
  free(r->arrive_seq);
  free(r->arrived);
  free(r->done_gen);
  free(r->start_ns);
  free(r->end_ns);
  free(r->out_off);
  free(r->n_in);
  free(r->n_out);
  free(r->in);
  free(r->out);
  free(r);
}

const struct ds_device ds_device_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .begin_iter = cpu_begin_iter,
    .issue = cpu_issue,
    .end_iter = cpu_end_iter,
    .wrong = cpu_wrong,
    .describe = cpu_describe,
    .close = cpu_close,
};
