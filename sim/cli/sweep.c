/*
 * Running a sweep's configurations (see sweep.h). The simulator's objects
 * (topology scratch arrays, engine, network) are not thread-safe, so
 * parallel configurations run in forked worker processes, one per
 * configuration and at most `jobs` at a time; each inherits the loaded
 * files copy-on-write and writes its row back through a pipe as one
 * message (status, error text, the row, its bucket sizes). Rows land in
 * their configuration's slot, so the output never depends on which worker
 * finished first.
 */
#include "sim/cli/sweep.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>


void ds_row_own(struct ds_row *r) {
  struct ds_summary *s = &r->sum;
#define DS__OWN(field)                                            \
  {                                                               \
    const char *from = s->field ? s->field : "";                  \
    assert(strlen(from) < sizeof r->field);                       \
    memcpy(r->field, from, strlen(from) + 1);                     \
    s->field = r->field;                                          \
  }
  DS__OWN(strategy) DS__OWN(model) DS__OWN(topology) DS__OWN(gpu) DS__OWN(dtype)
  DS__OWN(net_model) DS__OWN(coll_model) DS__OWN(coll_algo) DS__OWN(ddp_options)
#undef DS__OWN
  s->bucket_bytes = r->bucket_bytes;
}

/* Points a received row's summary at its own buffers (the worker's
 * addresses mean nothing here). */
static void repoint(struct ds_row *r) {
  struct ds_summary *s = &r->sum;
  s->strategy = r->strategy;
  s->model = r->model;
  s->topology = r->topology;
  s->gpu = r->gpu;
  s->dtype = r->dtype;
  s->net_model = r->net_model;
  s->coll_model = r->coll_model;
  s->coll_algo = r->coll_algo;
  s->ddp_options = r->ddp_options;
  s->bucket_bytes = r->bucket_bytes;
}

void ds_row_release(struct ds_row *r) {
  if (!r) return;
  free(r->bucket_bytes);
  r->bucket_bytes = NULL;
  r->sum.bucket_bytes = NULL;
}

/* What a worker sends: this, then row.sum.n_buckets doubles. */
struct wire {
  ds_status st;
  char msg[DS_ERR_MSG_MAX];
  struct ds_row row;
};

static int write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* Reads exactly n bytes; 0 on success, -1 on EOF or error first. */
static int read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t k = read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* The worker's side: compute, send, exit without running atexit handlers
 * or flushing the parent's stdio buffers (flushed before the fork). */
static void worker(int fd, int64_t i, ds_sweep_fn fn, void *ctx) {
  static struct wire w; /* large: keep it off the stack */
  struct ds_err err = {0};
  memset(&w, 0, sizeof w);
  w.st = fn(ctx, i, &w.row, &err);
  snprintf(w.msg, sizeof w.msg, "%s", err.msg);
  if (w.st != DS_OK) w.row.sum.n_buckets = 0;
  int bad = write_all(fd, &w, sizeof w);
  if (!bad && w.row.sum.n_buckets > 0)
    bad = write_all(fd, w.row.bucket_bytes,
                    (size_t)w.row.sum.n_buckets * sizeof *w.row.bucket_bytes);
  _exit(bad ? 3 : 0);
}

/* The parent's side of one finished worker: its row into *row. */
static ds_status receive(int fd, pid_t pid, int64_t i, struct ds_row *row,
                         struct ds_err *err) {
  static struct wire w;
  ds_status st = DS_OK;
  int got = read_all(fd, &w, sizeof w) == 0;
  double *bb = NULL;
  if (got && w.st == DS_OK && w.row.sum.n_buckets > 0) {
    bb = malloc((size_t)w.row.sum.n_buckets * sizeof *bb);
    if (!bb) st = ds_err_set(err, DS_ENOMEM, "sweep: out of memory");
    else got = read_all(fd, bb, (size_t)w.row.sum.n_buckets * sizeof *bb) == 0;
  }
  close(fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (st != DS_OK) return st;
  if (!got) {
    free(bb);
    if (WIFSIGNALED(status))
      return ds_err_set(err, DS_EINTERNAL, "sweep: the worker of configuration %lld "
                        "died of signal %d", (long long)i, WTERMSIG(status));
    return ds_err_set(err, DS_EINTERNAL, "sweep: the worker of configuration %lld "
                      "exited (status %d) without its result", (long long)i,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  if (w.st != DS_OK) {
    free(bb);
    return ds_err_set(err, w.st, "%s", w.msg);
  }
  *row = w.row;
  row->bucket_bytes = bb;
  repoint(row);
  return DS_OK;
}

static void progress(int show, int64_t done, int64_t n) {
  if (!show) return;
  if (done < n) fprintf(stderr, "\rddpsim: %lld/%lld configurations", (long long)done,
                        (long long)n);
  else fputs("\r\033[K", stderr);
  fflush(stderr);
}

struct slot {
  pid_t pid;
  int fd;
  int64_t i;
};

static ds_status run_forked(int64_t n, int32_t jobs, ds_sweep_fn fn, void *ctx,
                            struct ds_row *rows, int show, struct ds_err *err) {
  struct slot *sl = calloc((size_t)jobs, sizeof *sl);
  struct pollfd *pfd = calloc((size_t)jobs, sizeof *pfd);
  ds_status first_st = DS_OK;
  int64_t first_bad = n, next = 0, done = 0;
  size_t active = 0, cap = (size_t)jobs;
  struct ds_err one;
  if (!sl || !pfd) {
    free(sl);
    free(pfd);
    return ds_err_set(err, DS_ENOMEM, "sweep: out of memory");
  }
  for (;;) {
    while (active < cap && next < n && first_bad == n) {
      int p[2];
      if (pipe(p) != 0) {
        first_bad = next;
        first_st = ds_err_set(err, DS_EIO, "sweep: pipe: %s", strerror(errno));
        break;
      }
      fflush(NULL);
      pid_t pid = fork();
      if (pid < 0) {
        close(p[0]);
        close(p[1]);
        first_bad = next;
        first_st = ds_err_set(err, DS_EIO, "sweep: fork: %s", strerror(errno));
        break;
      }
      if (pid == 0) {
        close(p[0]);
        for (size_t k = 0; k < active; k++) close(sl[k].fd);
        worker(p[1], next, fn, ctx);
      }
      close(p[1]);
      sl[active++] = (struct slot){pid, p[0], next++};
    }
    if (active == 0) break;
    for (size_t k = 0; k < active; k++) pfd[k] = (struct pollfd){sl[k].fd, POLLIN, 0};
    if (poll(pfd, active, -1) < 0) {
      if (errno == EINTR) continue;
      /* cannot wait selectively: collect the oldest worker */
      pfd[0].revents = POLLIN;
    }
    for (size_t k = 0; k < active;) {
      if (!pfd[k].revents) {
        k++;
        continue;
      }
      int64_t i = sl[k].i;
      ds_err_clear(&one);
      ds_status st = receive(sl[k].fd, sl[k].pid, i, &rows[i], &one);
      if (st != DS_OK && i < first_bad) {
        first_bad = i;
        first_st = st;
        *err = one;
      }
      progress(show, ++done, n);
      sl[k] = sl[active - 1];
      pfd[k] = pfd[active - 1];
      active--;
    }
  }
  free(sl);
  free(pfd);
  return first_st;
}

ds_status ds_sweep_run(int64_t n, int32_t jobs, ds_sweep_fn fn, void *ctx,
                       struct ds_row *rows, int show_progress, struct ds_err *err) {
  int show = show_progress && n > 1 && isatty(STDERR_FILENO);
  if (jobs <= 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    jobs = cores > 0 ? (int32_t)(cores < 1024 ? cores : 1024) : 1;
  }
  if (jobs > n) jobs = (int32_t)n;
  if (jobs <= 1) {
    for (int64_t i = 0; i < n; i++) {
      DS_CHECK(fn(ctx, i, &rows[i], err));
      progress(show, i + 1, n);
    }
    return DS_OK;
  }
  return run_forked(n, jobs, fn, ctx, rows, show, err);
}

int ds_sweep_single_var(const struct ds_options *o) {
  int var = -1;
  for (int v = 0; v < DS_VAR_COUNT; v++) {
    if (o->sweep[v].n < 2) continue;
    if (var >= 0) return -1;
    var = v;
  }
  return var;
}

/* --samples N > 1: a row's median over its seeds stands for it (a lone
 * noisy run, --jitter alone, has quantiles of one sample). */
static int by_median(const struct ds_summary *r) { return r->has_quantiles && r->samples > 1; }

double ds_sweep_rank_ms(const struct ds_summary *r) {
  return by_median(r) ? r->iter_p50_ms : r->iter_ms;
}

double ds_sweep_rank_samples_per_s(const struct ds_summary *r) {
  double ms = ds_sweep_rank_ms(r);
  return ms > 0 ? r->samples_per_s * r->iter_ms / ms : r->samples_per_s;
}

/* " (medians of N seeds)" with --samples, else "". */
static const char *median_note(const struct ds_summary *r, char *buf, size_t cap) {
  if (!by_median(r)) return "";
  snprintf(buf, cap, " (medians of %d seeds)", r->samples);
  return buf;
}

/* Time per trained sample: what "best" means when more than the bucket
 * varies (a larger world or batch does more work per iteration). */
static double ms_per_sample(const struct ds_summary *r) {
  /* ps: each worker steps at its own rate and the row's throughput sums
   * them, while the iteration is the slowest worker's (async with a
   * straggler: half the rate), so the throughput sets the time per sample */
  if (r->has_ps) {
    double per_s = ds_sweep_rank_samples_per_s(r);
    if (per_s > 0) return 1000.0 / per_s;
  }
  double samples = (double)r->world_size * (double)r->batch_per_gpu *
                   (double)ds_summary_micro_steps(r);
  return samples > 0 ? ds_sweep_rank_ms(r) / samples : ds_sweep_rank_ms(r);
}

int ds_sweep_per_sample(enum ds_sweep_var var) {
  return var == DS_VAR_WORLD_SIZE || var == DS_VAR_BATCH || var == DS_VAR_NO_SYNC;
}

/* A configuration whose peak memory does not fit in the GPU's cannot run:
 * it is never called best (nor slowest), however fast its simulation. */
static int fits(const struct ds_summary *r) { return ds_report_fits_memory(r); }

int32_t ds_sweep_best_row(const struct ds_options *o, const struct ds_summary *rows,
                          int32_t n) {
  int by_iter = ds_sweep_single_var(o) == DS_VAR_BUCKET_MB;
  int32_t best = -1;
  for (int32_t i = 0; i < n; i++)
    if (fits(&rows[i]) &&
        (best < 0 || (by_iter ? ds_sweep_rank_ms(&rows[i]) < ds_sweep_rank_ms(&rows[best])
                              : ms_per_sample(&rows[i]) < ms_per_sample(&rows[best]))))
      best = i;
  return best;
}

void ds_sweep_set_ids(const struct ds_options *all, const struct ds_options *c,
                      struct ds_summary *s) {
  static const enum ds_sweep_var ids[] = {DS_VAR_PS_SERVERS, DS_VAR_DP_OUTPUT_DEVICE,
                                          DS_VAR_STRAGGLER, DS_VAR_RING_CHUNKS,
                                          DS_VAR_COMM_HOOK};
  s->has_sweep_ids = 0;
  for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
    s->has_sweep_ids |= all->sweep[ids[k]].n > 1;
  s->opt_ps_servers = c->ps_servers;
  s->opt_dp_output_device = c->dp_output_device;
  s->opt_ring_chunks = c->ring_chunks;
  s->straggler_factor = c->straggler_swept     ? c->stragglers[c->straggler_swept_k].factor
                        : c->n_stragglers > 0 ? c->stragglers[0].factor
                                              : 1.0;
  ds_comm_hook_name(&c->comm_hook, s->comm_hook, sizeof s->comm_hook);
}

void ds_sweep_points(const struct ds_options *o, const struct ds_summary *rows, int32_t n,
                     struct ds_sweep_point *out) {
  enum ds_sweep_var var = (enum ds_sweep_var)ds_sweep_single_var(o);
  static struct ds_options c; /* large: off the stack */
  for (int32_t i = 0; i < n; i++) {
    ds_options_config(o, i, &c);
    out[i].x = ds_options_var_value(&c, var);
    out[i].iter_ms = ds_sweep_rank_ms(&rows[i]);
    out[i].exposed_comm_ms = rows[i].exposed_comm_ms;
    out[i].over_memory = !fits(&rows[i]);
    ds_options_var_text(&c, var, out[i].label, sizeof out[i].label);
  }
}

/* "world-size=8 bucket-mb=25": the values of configuration i's options
 * that vary. */
static void print_config(FILE *out, const struct ds_options *o, int32_t i) {
  static struct ds_options c; /* large: off the stack */
  ds_options_config(o, i, &c);
  const char *sep = "";
  for (int k = 0; k < DS_VAR_COUNT; k++) {
    if (o->sweep[k].n < 2) continue;
    char text[32]; /* a number as %g, or a hook's name ("powersgd:4") */
    ds_options_var_text(&c, (enum ds_sweep_var)k, text, sizeof text);
    fprintf(out, "%s%s=%s", sep, ds_options_var_flag((enum ds_sweep_var)k) + 2, text);
    sep = " ";
  }
}

/* The options that set which row configuration i's scaling efficiency is
 * over: its strategy and every swept value but the world size. */
struct scaling_key {
  enum ds_strategy strategy;
  double v[DS_VAR_COUNT];
};

static int same_key(const struct scaling_key *a, const struct scaling_key *b) {
  if (a->strategy != b->strategy) return 0;
  for (int v = 0; v < DS_VAR_COUNT; v++)
    if (v != DS_VAR_WORLD_SIZE && a->v[v] != b->v[v]) return 0;
  return 1;
}

static double per_rank(const struct ds_summary *r) {
  return r->world_size > 0 ? ds_sweep_rank_samples_per_s(r) / r->world_size : 0;
}

ds_status ds_sweep_fill_scaling(const struct ds_options *o, struct ds_summary *rows, int32_t n,
                                struct ds_err *err) {
  int swept = o->sweep[DS_VAR_WORLD_SIZE].n > 1;
  static struct ds_options c; /* large: off the stack */
  for (int32_t i = 0; i < n; i++) {
    rows[i].has_scaling = swept;
    rows[i].scaling_efficiency_pct = NAN;
  }
  if (!swept || n < 1) return DS_OK;
  struct scaling_key *key = malloc((size_t)n * sizeof *key);
  if (!key) return ds_err_set(err, DS_ENOMEM, "sweep: out of memory");
  for (int32_t i = 0; i < n; i++) {
    ds_options_config(o, i, &c);
    key[i].strategy = c.strategy_id;
    for (int v = 0; v < DS_VAR_COUNT; v++) key[i].v[v] = c.sweep[v].v[0];
  }
  for (int32_t i = 0; i < n; i++) {
    /* single's rows do not vary with --world-size: no ratio to state */
    if (!ds_strategy_uses_var(key[i].strategy, DS_VAR_WORLD_SIZE)) continue;
    int32_t base = -1; /* the first row of the smallest world size among i's */
    for (int32_t j = 0; j < n; j++)
      if (same_key(&key[j], &key[i]) &&
          (base < 0 || rows[j].world_size < rows[base].world_size))
        base = j;
    double b = per_rank(&rows[base]);
    if (b > 0) rows[i].scaling_efficiency_pct = 100.0 * per_rank(&rows[i]) / b;
  }
  free(key);
  return DS_OK;
}

/* A world-size sweep's scaling efficiency (ds_sweep_fill_scaling's): each
 * row's over the smallest world size's, which is the first row with it. */
static void print_scaling(FILE *out, const struct ds_summary *rows, int32_t n) {
  int32_t base = 0;
  for (int32_t i = 1; i < n; i++)
    if (rows[i].world_size < rows[base].world_size) base = i;
  if (!rows[base].has_scaling || isnan(rows[base].scaling_efficiency_pct)) return;
  fprintf(out, "scaling efficiency (samples/s per rank over world-size=%d's):",
          rows[base].world_size);
  const char *sep = "";
  for (int32_t i = 0; i < n; i++) {
    if (i == base) continue;
    fprintf(out, "%s %d: %.1f%%", sep, rows[i].world_size, rows[i].scaling_efficiency_pct);
    sep = ",";
  }
  fputc('\n', out);
}

/* "; K of N configurations fit in the GPU's memory, the others are not
 * ranked" when only k of the n fit, else "". */
static const char *fit_note(int32_t k, int32_t n, char *buf, size_t cap) {
  if (k == n) return "";
  snprintf(buf, cap, "; %d of %d configurations fit in the GPU's memory, the others are not "
           "ranked", k, n);
  return buf;
}

/* The same with other options swept too: each row's over the smallest
 * world size's among the rows of its other values, written whole. */
static void print_scaling_each(FILE *out, const struct ds_options *o,
                               const struct ds_summary *rows, int32_t n) {
  int32_t least = rows[0].world_size;
  for (int32_t i = 1; i < n; i++)
    if (rows[i].world_size < least) least = rows[i].world_size;
  const char *sep = "";
  for (int32_t i = 0; i < n; i++) {
    if (rows[i].world_size == least || !rows[i].has_scaling ||
        isnan(rows[i].scaling_efficiency_pct))
      continue;
    if (!*sep)
      fprintf(out, "scaling efficiency (samples/s per rank over world-size=%d's with the same "
              "other options):", least);
    fputs(*sep ? ", " : " ", out);
    print_config(out, o, i);
    fprintf(out, ": %.1f%%", rows[i].scaling_efficiency_pct);
    sep = ",";
  }
  if (*sep) fputc('\n', out);
}

/* The scaling line of a sweep of the world size, alone or with others. */
static void print_any_scaling(FILE *out, const struct ds_options *o,
                              const struct ds_summary *rows, int32_t n) {
  if (ds_sweep_single_var(o) == DS_VAR_WORLD_SIZE) print_scaling(out, rows, n);
  else if (o->sweep[DS_VAR_WORLD_SIZE].n > 1) print_scaling_each(out, o, rows, n);
}

void ds_sweep_print_best(FILE *out, const struct ds_options *o,
                         const struct ds_summary *rows, int32_t n) {
  if (n < 2) return;
  char note[48], fit[128];
  int32_t best = ds_sweep_best_row(o, rows, n);
  if (best < 0) {
    fprintf(out, "\nbest configuration: none; not one of the %d configurations fits in the "
            "GPU's memory\n", n);
    print_any_scaling(out, o, rows, n);
    return;
  }
  int32_t worst = best, flat = 0, ranked = 0;
  if (ds_sweep_single_var(o) == DS_VAR_BUCKET_MB) {
    for (int32_t i = 0; i < n; i++)
      if (fits(&rows[i]) && ds_sweep_rank_ms(&rows[i]) > ds_sweep_rank_ms(&rows[worst]))
        worst = i;
    double fast = ds_sweep_rank_ms(&rows[best]), slow = ds_sweep_rank_ms(&rows[worst]);
    for (int32_t i = 0; i < n; i++) {
      ranked += fits(&rows[i]);
      flat += fits(&rows[i]) && ds_sweep_rank_ms(&rows[i]) <= fast * 1.01;
    }
    /* nothing slower: every cap that fits ties (or one fits), and naming
     * one as both best and slowest would read as a difference */
    if (worst == best && ranked > 1) {
      fprintf(out, "\nbest bucket cap: none better: every cap ties at %.3f ms per iteration%s%s\n",
              fast, fit_note(ranked, n, fit, sizeof fit),
              median_note(&rows[0], note, sizeof note));
      return;
    }
    if (worst == best) {
      fprintf(out, "\nbest bucket cap: %g MiB (%.3f ms per iteration), the one cap that fits%s%s\n",
              rows[best].bucket_mb, fast, fit_note(ranked, n, fit, sizeof fit),
              median_note(&rows[0], note, sizeof note));
      return;
    }
    /* the cut in iteration time, not a ratio of speeds */
    fprintf(out, "\nbest bucket cap: %g MiB (%.3f ms per iteration, %.1f%% less time than "
            "the slowest, %g MiB at %.3f ms); within 1%% of the best: %d of %d caps "
            "(flatness)%s%s\n",
            rows[best].bucket_mb, fast, slow > 0 ? 100.0 * (slow - fast) / slow : 0.0,
            rows[worst].bucket_mb, slow, flat, ranked, fit_note(ranked, n, fit, sizeof fit),
            median_note(&rows[0], note, sizeof note));
    return;
  }
  for (int32_t i = 0; i < n; i++)
    if (fits(&rows[i]) && ms_per_sample(&rows[i]) > ms_per_sample(&rows[worst])) worst = i;
  double b = ms_per_sample(&rows[best]), w = ms_per_sample(&rows[worst]);
  for (int32_t i = 0; i < n; i++) {
    ranked += fits(&rows[i]);
    flat += fits(&rows[i]) && ms_per_sample(&rows[i]) <= b * 1.01;
  }
  if (worst == best) { /* as for the bucket caps above */
    if (ranked > 1) {
      fputs("\nbest configuration: none better: every configuration ties at", out);
    } else {
      fputs("\nbest configuration: ", out);
      print_config(out, o, best);
      fputs(", the one configuration that fits:", out);
    }
    fprintf(out, " %.3f ms per iteration, %.1f samples/s%s%s\n", ds_sweep_rank_ms(&rows[best]),
            b > 0 ? 1000.0 / b : 0.0, fit_note(ranked, n, fit, sizeof fit),
            median_note(&rows[0], note, sizeof note));
    print_any_scaling(out, o, rows, n);
    return;
  }
  /* the configurations written whole, however many options are swept */
  fputs("\nbest configuration: ", out);
  print_config(out, o, best);
  /* throughput over throughput: time per sample w / b */
  /* the lowest throughput by name: under a world-size or batch sweep its
   * iteration can be the shortest, so "slowest" would mislead */
  fprintf(out, " (%.3f ms per iteration, %.1f samples/s, %.2fx the lowest throughput, ",
          ds_sweep_rank_ms(&rows[best]), b > 0 ? 1000.0 / b : 0.0, b > 0 ? w / b : 0.0);
  print_config(out, o, worst);
  fprintf(out, " at %.1f samples/s and %.3f ms); within 1%% of the best: %d of %d configurations "
          "(flatness)%s%s\n", w > 0 ? 1000.0 / w : 0.0, ds_sweep_rank_ms(&rows[worst]), flat,
          ranked, fit_note(ranked, n, fit, sizeof fit), median_note(&rows[0], note, sizeof note));
  print_any_scaling(out, o, rows, n);
}

void ds_sweep_print_memory_warnings(FILE *out, const struct ds_options *o,
                                    const struct ds_summary *rows, int32_t n,
                                    const char *gpu) {
  int first = 1; /* the warnings and notes as one block after a blank line */
  for (int32_t i = 0; i < n; i++) {
    double peak = ds_report_peak_mem_gib(&rows[i]), cap = rows[i].gpu_mem_gib;
    int over = !fits(&rows[i]);
    /* the peak is up to DS_REPORT_PEAK_UNDER_MEASURED below the
     * measurement, which may be 5.5 % above it (report.h) */
    if (!over && ds_report_fits_memory_with_margin(&rows[i])) continue;
    fputs(first ? "\n" : "", out);
    fputs(over ? "warning: " : "note: ", out);
    first = 0;
    if (n > 1) { /* several strategies: the row's first, then what it sweeps */
      int swept = 0;
      for (int k = 0; k < DS_VAR_COUNT; k++) swept |= o->sweep[k].n > 1;
      if (o->n_strategies > 1) fprintf(out, "%s%s", rows[i].strategy, swept ? " " : "");
      print_config(out, o, i);
      fputs(": ", out);
    }
    if (over) {
      fprintf(out, "%.2f GiB per GPU exceeds the %s's %.2f GiB of memory", peak, gpu, cap);
      /* what to do: the same memory model's largest batch under it */
      if (rows[i].fit_searched && rows[i].fit_batch > 0)
        fprintf(out, "; the largest batch per GPU that fits: %lld (%.2f GiB)",
                (long long)rows[i].fit_batch, rows[i].fit_batch_mem_gib);
      else if (rows[i].fit_searched)
        fputs("; no batch fits: batch 1 already exceeds it", out);
      fputc('\n', out);
    } else {
      fprintf(out, "%.2f GiB per GPU is %.1f %% of the %s's %.2f GiB: the peak runs up to "
              "%.1f %% below PyTorch's max_memory_allocated (validation/memory.csv) and "
              "leaves out the CUDA context: it may not fit",
              peak, 100 * peak / cap, gpu, cap, 100 * DS_REPORT_PEAK_UNDER_MEASURED);
      if (rows[i].fit_searched && rows[i].fit_searched_with_margin && rows[i].fit_batch > 0)
        fprintf(out, "; the largest batch per GPU within that margin: %lld (%.2f GiB)",
                (long long)rows[i].fit_batch, rows[i].fit_batch_mem_gib);
      fputc('\n', out);
    }
  }
}
