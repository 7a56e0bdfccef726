/*
 * Benchmark of the event engine (a benchmark, not a test).
 *
 * Hold model: N events are pending; each fired event schedules one new event
 * at now + a pseudo-random delay, so the queue size stays N and every fire
 * costs one pop and one push, the steady state of a simulation. It also
 * measures schedule+cancel pairs at N pending, each cancel hitting a random
 * pending event (deep in the heap, the expensive case).
 *
 *   bench_engine [--events E] [N ...]     defaults: E = 20000000, N = 1e3 1e5 1e6
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/net/engine.h"

/* Delays uniform in [1, 2^20] ns (~1 ms): wide enough that ties are rare and
 * new events land all over the heap, not only at its bottom. */
#define DELAY_MASK ((UINT64_C(1) << 20) - 1)

struct hold {
  uint64_t rng;
  uint64_t target; /* fires to time */
  uint64_t count;
  double end_s;
};

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void on_hold(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  struct hold *h = ctx;
  /* After the timed fires, stop rescheduling so the run drains and ends;
   * the clock is read once, at the last timed fire. */
  if (++h->count == h->target) h->end_s = now_s();
  if (h->count >= h->target) return;
  int64_t t = ds_engine_now(eng) + 1 + (int64_t)(xorshift(&h->rng) & DELAY_MASK);
  if (ds_engine_schedule(eng, t, ev, NULL) != DS_OK) {
    fprintf(stderr, "bench_engine: schedule failed\n");
    exit(1);
  }
}

static ds_status bench_hold(size_t pending, uint64_t events) {
  struct hold h = {.rng = 0x2545F4914F6CDD1Du, .target = events};
  struct ds_engine *eng = NULL;
  ds_status st;
  DS_CHECK_GOTO(ds_engine_new(pending, on_hold, &h, &eng), st, out);
  struct ds_event ev = {0, 0, 0, NULL};
  for (size_t i = 0; i < pending; i++) {
    int64_t t = 1 + (int64_t)(xorshift(&h.rng) & DELAY_MASK);
    DS_CHECK_GOTO(ds_engine_schedule(eng, t, &ev, NULL), st, out);
  }
  double t0 = now_s();
  DS_CHECK_GOTO(ds_engine_run(eng, INT64_MAX), st, out);
  double wall = h.end_s - t0;
  printf("engine_hold pending=%zu events=%" PRIu64 " wall_s=%.3f events_per_s=%.4g\n",
         pending, events, wall, (double)events / wall);
out:
  ds_engine_free(eng);
  return st;
}

static void on_never(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)ctx;
  (void)eng;
  (void)ev;
}

static ds_status bench_cancel(size_t pending, uint64_t pairs) {
  uint64_t rng = 0x9E3779B97F4A7C15u;
  struct ds_engine *eng = NULL;
  uint64_t *handles = malloc(pending * sizeof *handles);
  ds_status st = DS_OK;
  if (handles == NULL) return DS_ENOMEM;
  DS_CHECK_GOTO(ds_engine_new(pending, on_never, NULL, &eng), st, out);
  struct ds_event ev = {0, 0, 0, NULL};
  for (size_t i = 0; i < pending; i++) {
    int64_t t = 1 + (int64_t)(xorshift(&rng) & DELAY_MASK);
    DS_CHECK_GOTO(ds_engine_schedule(eng, t, &ev, &handles[i]), st, out);
  }
  double t0 = now_s();
  for (uint64_t k = 0; k < pairs; k++) {
    uint64_t r = xorshift(&rng);
    size_t j = (size_t)(r % pending);
    if (ds_engine_cancel(eng, handles[j]) != 1) {
      st = DS_EINTERNAL;
      goto out;
    }
    int64_t t = 1 + (int64_t)((r >> 32) & DELAY_MASK);
    DS_CHECK_GOTO(ds_engine_schedule(eng, t, &ev, &handles[j]), st, out);
  }
  double wall = now_s() - t0;
  printf("engine_cancel pending=%zu pairs=%" PRIu64 " wall_s=%.3f pairs_per_s=%.4g\n",
         pending, pairs, wall, (double)pairs / wall);
out:
  ds_engine_free(eng);
  free(handles);
  return st;
}

/* Accepts "1000", "1e6" or "20000000"; the value must be a whole number
 * from 1 to 2^40. */
static int parse_count(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= 1 && v <= 1099511627776.0) ||
      v != (double)(uint64_t)v)
    return -1;
  *out = (uint64_t)v;
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: bench_engine [--events E] [N ...]\n"
                  "  E: fired events (and cancel pairs) per N, default 20000000\n"
                  "  N: pending events, default 1e3 1e5 1e6\n");
  return ds_status_exit_code(DS_EUSAGE);
}

int main(int argc, char **argv) {
  uint64_t events = 20000000;
  uint64_t ns[64];
  size_t n_ns = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--events") == 0) {
      if (i + 1 >= argc || parse_count(argv[++i], &events) != 0) return usage();
    } else if (n_ns < sizeof ns / sizeof ns[0] && parse_count(argv[i], &ns[n_ns]) == 0) {
      n_ns++;
    } else {
      return usage();
    }
  }
  if (n_ns == 0) {
    ns[0] = 1000;
    ns[1] = 100000;
    ns[2] = 1000000;
    n_ns = 3;
  }
  for (size_t i = 0; i < n_ns; i++) {
    ds_status st = bench_hold((size_t)ns[i], events);
    if (st == DS_OK) st = bench_cancel((size_t)ns[i], events);
    if (st != DS_OK) {
      fprintf(stderr, "bench_engine: pending=%" PRIu64 ": %s\n", ns[i], ds_status_message(st));
      return ds_status_exit_code(st);
    }
  }
  return 0;
}
