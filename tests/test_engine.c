/*
 * Tests for sim/net/engine.c: firing order by (time, sequence), cancellation by
 * handle, run(until), pool growth, counters and reproducibility.
 *
 * Every event carries its own identity in the payload (a = id, b = the time
 * it was scheduled for), and a recording handler logs (now, a, b) for each
 * fire, so each test compares the log against the order it expects.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net/engine.h"

/* Event kinds the recording handler acts on. */
enum {
  K_PLAIN,      /* only logged */
  K_CANCEL,     /* cancels handle rec->victim, stores the result */
  K_CANCEL_SELF, /* cancels its own handle rec->self, stores the result */
  K_RESCHEDULE, /* random workload: schedules follow-ups (see workload) */
  K_PAST,       /* tries to schedule at now - 1, stores the status */
  K_SAME_TIME   /* schedules id 99 at now */
};

struct fire {
  int64_t now_ns;
  int32_t a;
  int64_t b;
};

struct rec {
  struct fire *log;
  size_t n_log;
  size_t cap_log;
  uint64_t victim;
  uint64_t self;
  int cancel_result;
  ds_status past_status;
  /* random workload */
  uint64_t rng;
  size_t budget;     /* events still to schedule */
  uint64_t *handles; /* every handle issued, for random cancels */
  size_t n_handles;
  int64_t last_now_ns;
};

/* xorshift64: small, fixed, and the same on every platform, so a seed
 * names one workload. */
static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static void log_fire(struct rec *r, int64_t now_ns, const struct ds_event *ev) {
  if (r->n_log == r->cap_log) {
    r->cap_log = r->cap_log ? 2 * r->cap_log : 256;
    r->log = realloc(r->log, r->cap_log * sizeof *r->log);
    cr_assert_not_null(r->log);
  }
  r->log[r->n_log++] = (struct fire){now_ns, ev->a, ev->b};
}

/* A pointer to a payload; the compound literal lives until the end of the
 * enclosing block, and the engine copies it. */
#define EV(kind, a, b) (&(struct ds_event){(kind), (a), (b), NULL})

static void workload_schedule(struct rec *r, struct ds_engine *eng) {
  if (r->budget == 0) return;
  r->budget--;
  /* Delays of 0..63 ns over thousands of events make many exact ties. */
  int64_t t = ds_engine_now(eng) + (int64_t)(xorshift(&r->rng) % 64);
  uint64_t h;
  cr_assert_eq(ds_engine_schedule(eng, t, EV(K_RESCHEDULE, (int32_t)r->n_handles, t), &h),
               DS_OK);
  r->handles[r->n_handles++] = h;
}

static void on_event(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  struct rec *r = ctx;
  int64_t now = ds_engine_now(eng);
  cr_assert(now >= r->last_now_ns, "time went back from %lld to %lld",
            (long long)r->last_now_ns, (long long)now);
  r->last_now_ns = now;
  log_fire(r, now, ev);
  switch (ev->kind) {
  case K_CANCEL:
    r->cancel_result = ds_engine_cancel(eng, r->victim);
    break;
  case K_CANCEL_SELF:
    r->cancel_result = ds_engine_cancel(eng, r->self);
    break;
  case K_RESCHEDULE:
    /* Each fire schedules one or two follow-ups and, one time in eight,
     * cancels a random earlier handle (often stale, sometimes pending). */
    workload_schedule(r, eng);
    if (xorshift(&r->rng) % 2 == 0) workload_schedule(r, eng);
    if (xorshift(&r->rng) % 8 == 0 && r->n_handles > 0)
      ds_engine_cancel(eng, r->handles[xorshift(&r->rng) % r->n_handles]);
    break;
  case K_PAST: {
    uint64_t h = 777;
    r->past_status = ds_engine_schedule(eng, now - 1, EV(K_PLAIN, 0, 0), &h);
    cr_assert_eq(h, 777, "a refused schedule must not write the handle");
    break;
  }
  case K_SAME_TIME:
    cr_assert_eq(ds_engine_schedule(eng, now, EV(K_PLAIN, 99, now), NULL), DS_OK);
    break;
  default:
    break;
  }
}

static struct ds_engine *new_engine(size_t cap, struct rec *r) {
  memset(r, 0, sizeof *r);
  struct ds_engine *eng = NULL;
  cr_assert_eq(ds_engine_new(cap, on_event, r, &eng), DS_OK);
  cr_assert_not_null(eng);
  return eng;
}

static void done(struct ds_engine *eng, struct rec *r) {
  ds_engine_free(eng);
  free(r->log);
  free(r->handles);
}

static void shuffle(int32_t *v, size_t n, uint64_t *rng) {
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = (size_t)(xorshift(rng) % (i + 1));
    int32_t t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

/* Scheduled at 50, 10, 40, 20, 30: expected to fire at 10, 20, 30, 40, 50,
 * with now equal to each event's time, and now == 50 at the end, because the
 * engine always fires the earliest pending event. */
Test(engine, orders_by_time) {
  struct rec r;
  struct ds_engine *eng = new_engine(0, &r);
  const int64_t t[] = {50, 10, 40, 20, 30};
  for (int i = 0; i < 5; i++)
    cr_assert_eq(ds_engine_schedule(eng, t[i], EV(K_PLAIN, i, t[i]), NULL), DS_OK);
  cr_assert_eq(ds_engine_run(eng, INT64_MAX), DS_OK);
  cr_assert_eq(r.n_log, 5);
  for (size_t i = 0; i < 5; i++) {
    cr_assert_eq(r.log[i].now_ns, (int64_t)(10 * (i + 1)));
    cr_assert_eq(r.log[i].b, r.log[i].now_ns);
  }
  cr_assert_eq(ds_engine_now(eng), 50);
  done(eng, &r);
}

/* 2000 events with ids in shuffled order, all at t = 100: expected to fire in
 * exactly the order they were scheduled, because ties in time are broken by
 * the scheduling sequence number (libuv's timer_less_than rule). A second
 * round spreads them over three times: the expected order is then a stable
 * sort of the insertion order by time. */
Test(engine, equal_times_fire_in_scheduling_order) {
  enum { N = 2000 };
  static int32_t ids[N];
  uint64_t rng = 42;
  for (int32_t i = 0; i < N; i++) ids[i] = i;
  shuffle(ids, N, &rng);

  struct rec r;
  struct ds_engine *eng = new_engine(16, &r);
  for (size_t i = 0; i < N; i++)
    cr_assert_eq(ds_engine_schedule(eng, 100, EV(K_PLAIN, ids[i], 100), NULL), DS_OK);
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(r.n_log, N);
  for (size_t i = 0; i < N; i++)
    cr_assert_eq(r.log[i].a, ids[i], "fire %zu: id %d, want %d", i, r.log[i].a, ids[i]);
  done(eng, &r);

  eng = new_engine(16, &r);
  for (size_t i = 0; i < N; i++) {
    int64_t t = 200 + 10 * (ids[i] % 3);
    cr_assert_eq(ds_engine_schedule(eng, t, EV(K_PLAIN, ids[i], t), NULL), DS_OK);
  }
  ds_engine_run(eng, INT64_MAX);
  size_t k = 0;
  for (int bucket = 0; bucket < 3; bucket++)
    for (size_t i = 0; i < N; i++)
      if (ids[i] % 3 == bucket) {
        cr_assert_eq(r.log[k].a, ids[i], "fire %zu", k);
        cr_assert_eq(r.log[k].now_ns, 200 + 10 * bucket);
        k++;
      }
  cr_assert_eq(k, r.n_log);
  done(eng, &r);
}

/* A and B at t = 10; A schedules C at t = 10 (now). Expected order A, B, C:
 * C's sequence number is later than B's, so it fires after B even though it
 * has the same time. */
Test(engine, event_scheduled_at_now_fires_after_earlier_ties) {
  struct rec r;
  struct ds_engine *eng = new_engine(0, &r);
  ds_engine_schedule(eng, 10, EV(K_SAME_TIME, 1, 10), NULL);
  ds_engine_schedule(eng, 10, EV(K_PLAIN, 2, 10), NULL);
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(r.n_log, 3);
  cr_assert_eq(r.log[0].a, 1);
  cr_assert_eq(r.log[1].a, 2);
  cr_assert_eq(r.log[2].a, 99);
  cr_assert_eq(r.log[2].now_ns, 10);
  done(eng, &r);
}

/* Fills the workload's initial events and runs it to the end; a total of
 * `total` events are scheduled (some then cancelled). */
static void run_workload(struct rec *r, struct ds_engine **engp, uint64_t seed,
                         size_t total, size_t initial) {
  *engp = new_engine(64, r);
  r->rng = seed;
  r->budget = total;
  r->handles = malloc(total * sizeof *r->handles);
  cr_assert_not_null(r->handles);
  for (size_t i = 0; i < initial; i++) workload_schedule(r, *engp);
  cr_assert_eq(ds_engine_run(*engp, INT64_MAX), DS_OK);
}

/* A random workload of 100,000 scheduled events with many ties and random
 * cancels: expected that now never decreases (checked in the handler on
 * every fire), that every fire happens at the time the event was scheduled
 * for, and that fired + cancelled == scheduled with nothing left pending. */
Test(engine, time_never_goes_backwards) {
  enum { TOTAL = 100000 };
  struct rec r;
  struct ds_engine *eng;
  run_workload(&r, &eng, 0x9E3779B97F4A7C15u, TOTAL, 1000);
  cr_assert_eq(r.n_handles, TOTAL);
  cr_assert_eq(ds_engine_pending(eng), 0);
  cr_assert_eq(ds_engine_fired(eng), r.n_log);
  for (size_t i = 0; i < r.n_log; i++) {
    cr_assert_eq(r.log[i].now_ns, r.log[i].b);
    if (i > 0) cr_assert(r.log[i].now_ns >= r.log[i - 1].now_ns);
  }
  /* Every cancel that returned 1 removed one event, so the rest fired. */
  size_t cancelled = 0;
  for (size_t i = 0; i < TOTAL; i++) cancelled += (size_t)ds_engine_cancel(eng, r.handles[i]);
  cr_assert_eq(cancelled, 0, "after the run every handle must be stale");
  cr_assert(r.n_log < TOTAL, "the workload is expected to cancel some events");
  cr_assert(r.n_log > TOTAL / 2);
  done(eng, &r);
}

/* Field by field: struct fire has padding, which memcmp would read. */
static int same_log(const struct rec *x, const struct rec *y) {
  if (x->n_log != y->n_log) return 0;
  for (size_t i = 0; i < x->n_log; i++)
    if (x->log[i].now_ns != y->log[i].now_ns || x->log[i].a != y->log[i].a ||
        x->log[i].b != y->log[i].b)
      return 0;
  return 1;
}

/* Two runs of the same seeded workload: expected identical fire logs, event
 * for event, because the engine's order depends only on (time, sequence) and
 * never on addresses or allocation. A different seed gives a different log,
 * showing the comparison is not vacuous. */
Test(engine, same_seed_same_fire_sequence) {
  enum { TOTAL = 50000 };
  struct rec r1, r2, r3;
  struct ds_engine *e1, *e2, *e3;
  run_workload(&r1, &e1, 12345, TOTAL, 500);
  run_workload(&r2, &e2, 12345, TOTAL, 500);
  run_workload(&r3, &e3, 54321, TOTAL, 500);
  cr_assert_eq(r1.n_log, r2.n_log);
  cr_assert(same_log(&r1, &r2));
  cr_assert(!same_log(&r1, &r3));
  done(e1, &r1);
  done(e2, &r2);
  done(e3, &r3);
}

/* Expected: cancel of a pending event returns 1 and it never fires; a second
 * cancel of the same handle returns 0 (already cancelled); a cancel after
 * the event fired returns 0; a handle whose slot was freed and reused by a
 * new event is stale, returns 0 and leaves the new event pending, because
 * the handle's generation no longer matches the slot's. Handles are never 0,
 * so 0 is a safe "no event" value for models. */
Test(engine, cancel_by_handle) {
  struct rec r;
  struct ds_engine *eng = new_engine(0, &r);
  uint64_t ha, hb, hc;
  ds_engine_schedule(eng, 10, EV(K_PLAIN, 1, 10), &ha);
  ds_engine_schedule(eng, 20, EV(K_PLAIN, 2, 20), &hb);
  ds_engine_schedule(eng, 30, EV(K_PLAIN, 3, 30), &hc);
  cr_assert(ha != 0 && hb != 0 && hc != 0);
  cr_assert_eq(ds_engine_cancel(eng, hb), 1);
  cr_assert_eq(ds_engine_pending(eng), 2);
  cr_assert_eq(ds_engine_cancel(eng, hb), 0);
  cr_assert_eq(ds_engine_cancel(eng, 0), 0, "0 is never a valid handle");

  /* The freed slot is reused by the next schedule; hb must not reach it. */
  uint64_t hd;
  ds_engine_schedule(eng, 25, EV(K_PLAIN, 4, 25), &hd);
  cr_assert_neq(hd, hb);
  cr_assert_eq(ds_engine_cancel(eng, hb), 0);
  cr_assert_eq(ds_engine_pending(eng), 3);

  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(r.n_log, 3);
  cr_assert_eq(r.log[0].a, 1);
  cr_assert_eq(r.log[1].a, 4);
  cr_assert_eq(r.log[2].a, 3);
  cr_assert_eq(ds_engine_cancel(eng, ha), 0, "already fired");
  cr_assert_eq(ds_engine_cancel(eng, hd), 0, "already fired");
  done(eng, &r);
}

/* Cancels at every heap position: 500 events at random times, every third
 * one cancelled in random order. Expected: exactly the others fire, in time
 * order, because removal re-sifts the key moved into the hole up or down. */
Test(engine, cancel_anywhere_keeps_heap_order) {
  enum { N = 500 };
  struct rec r;
  struct ds_engine *eng = new_engine(8, &r);
  uint64_t rng = 7;
  uint64_t h[N];
  int64_t t[N];
  int32_t order[N];
  for (int32_t i = 0; i < N; i++) {
    t[i] = (int64_t)(xorshift(&rng) % 1000);
    ds_engine_schedule(eng, t[i], EV(K_PLAIN, i, t[i]), &h[i]);
    order[i] = i;
  }
  shuffle(order, N, &rng);
  for (int i = 0; i < N; i++)
    if (order[i] % 3 == 0) cr_assert_eq(ds_engine_cancel(eng, h[order[i]]), 1);
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(r.n_log, N - (N + 2) / 3);
  for (size_t i = 0; i < r.n_log; i++) {
    cr_assert_neq(r.log[i].a % 3, 0, "cancelled event %d fired", r.log[i].a);
    if (i > 0) cr_assert(r.log[i].now_ns >= r.log[i - 1].now_ns);
  }
  done(eng, &r);
}

/* X at t = 10 cancels Y (t = 20) from its handler; Z at t = 30 is untouched.
 * Expected: the cancel returns 1, Y never fires, Z fires. Then an event that
 * cancels its own handle while firing gets 0, because a firing event is no
 * longer pending. */
Test(engine, cancel_from_handler) {
  struct rec r;
  struct ds_engine *eng = new_engine(0, &r);
  ds_engine_schedule(eng, 10, EV(K_CANCEL, 1, 10), NULL);
  ds_engine_schedule(eng, 20, EV(K_PLAIN, 2, 20), &r.victim);
  ds_engine_schedule(eng, 30, EV(K_PLAIN, 3, 30), NULL);
  r.cancel_result = -1;
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(r.cancel_result, 1);
  cr_assert_eq(r.n_log, 2);
  cr_assert_eq(r.log[0].a, 1);
  cr_assert_eq(r.log[1].a, 3);

  ds_engine_schedule(eng, 40, EV(K_CANCEL_SELF, 4, 40), &r.self);
  ds_engine_schedule(eng, 40, EV(K_PLAIN, 5, 40), NULL);
  r.cancel_result = -1;
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(r.cancel_result, 0);
  cr_assert_eq(r.n_log, 4);
  cr_assert_eq(r.log[3].a, 5, "the next tie still fires");
  done(eng, &r);
}

/* After running to t = 100, scheduling at 99 is expected to fail with
 * DS_EINTERNAL (a model bug: time cannot go back) and change nothing;
 * scheduling at exactly now is allowed. The same holds from a handler. */
Test(engine, schedule_in_past_is_internal_error) {
  struct rec r;
  struct ds_engine *eng = new_engine(0, &r);
  ds_engine_schedule(eng, 100, EV(K_PLAIN, 1, 100), NULL);
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(ds_engine_now(eng), 100);
  uint64_t h = 555;
  cr_assert_eq(ds_engine_schedule(eng, 99, EV(K_PLAIN, 2, 99), &h), DS_EINTERNAL);
  cr_assert_eq(h, 555);
  cr_assert_eq(ds_engine_pending(eng), 0);
  cr_assert_eq(ds_engine_schedule(eng, 100, EV(K_PLAIN, 3, 100), NULL), DS_OK);
  ds_engine_schedule(eng, 150, EV(K_PAST, 4, 150), NULL);
  r.past_status = DS_OK;
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(r.past_status, DS_EINTERNAL);
  cr_assert_eq(r.n_log, 3);
  cr_assert_eq(ds_engine_pending(eng), 0);
  done(eng, &r);
}

/* Events at 10, 20, 30. run(20) is expected to fire 10 and 20 (the bound is
 * inclusive) and stop with 30 pending and now == 20; run(25) fires nothing
 * and leaves now at 20 (now is the time of the last fired event); run to
 * INT64_MAX then resumes with 30. */
Test(engine, run_until_stops_and_resumes) {
  struct rec r;
  struct ds_engine *eng = new_engine(0, &r);
  for (int i = 1; i <= 3; i++) ds_engine_schedule(eng, 10 * i, EV(K_PLAIN, i, 10 * i), NULL);
  cr_assert_eq(ds_engine_run(eng, 20), DS_OK);
  cr_assert_eq(r.n_log, 2);
  cr_assert_eq(ds_engine_now(eng), 20);
  cr_assert_eq(ds_engine_pending(eng), 1);
  cr_assert_eq(ds_engine_run(eng, 25), DS_OK);
  cr_assert_eq(r.n_log, 2);
  cr_assert_eq(ds_engine_now(eng), 20);
  cr_assert_eq(ds_engine_run(eng, INT64_MAX), DS_OK);
  cr_assert_eq(r.n_log, 3);
  cr_assert_eq(r.log[2].a, 3);
  cr_assert_eq(ds_engine_now(eng), 30);
  cr_assert_eq(ds_engine_run(eng, INT64_MAX), DS_OK, "running an empty engine is fine");
  done(eng, &r);
}

/* An engine created with room for 4 receives 20,000 events at random times
 * (the pool doubles about 13 times, moving every record and key). Expected:
 * they fire in (time, id) order — ids were scheduled in increasing order —
 * so growth preserved both keys and payloads. ds_engine_reserve then makes
 * room ahead of time, and a smaller reserve is a no-op. */
Test(engine, pool_growth_keeps_order) {
  enum { N = 20000 };
  struct rec r;
  struct ds_engine *eng = new_engine(4, &r);
  uint64_t rng = 99;
  for (int32_t i = 0; i < N; i++) {
    int64_t t = (int64_t)(xorshift(&rng) % 5000);
    cr_assert_eq(ds_engine_schedule(eng, t, EV(K_PLAIN, i, t), NULL), DS_OK);
  }
  cr_assert_eq(ds_engine_pending(eng), N);
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(r.n_log, N);
  for (size_t i = 1; i < N; i++) {
    const struct fire *p = &r.log[i - 1], *q = &r.log[i];
    cr_assert(p->now_ns < q->now_ns || (p->now_ns == q->now_ns && p->a < q->a),
              "fire %zu out of order", i);
  }
  cr_assert_eq(ds_engine_reserve(eng, 100000), DS_OK);
  cr_assert_eq(ds_engine_reserve(eng, 10), DS_OK);
  done(eng, &r);
}

/* Counters across a sequence: 3 scheduled → pending 3, fired 0; one
 * cancelled → pending 2; run(15) fires one → pending 1, fired 1; run to the
 * end → pending 0, fired 2. A cancelled event is never counted as fired. */
Test(engine, fired_and_pending_counters) {
  struct rec r;
  struct ds_engine *eng = new_engine(0, &r);
  cr_assert_eq(ds_engine_pending(eng), 0);
  cr_assert_eq(ds_engine_fired(eng), 0);
  cr_assert_eq(ds_engine_now(eng), 0);
  uint64_t h;
  ds_engine_schedule(eng, 10, EV(K_PLAIN, 1, 10), NULL);
  ds_engine_schedule(eng, 20, EV(K_PLAIN, 2, 20), &h);
  ds_engine_schedule(eng, 30, EV(K_PLAIN, 3, 30), NULL);
  cr_assert_eq(ds_engine_pending(eng), 3);
  ds_engine_cancel(eng, h);
  cr_assert_eq(ds_engine_pending(eng), 2);
  ds_engine_run(eng, 15);
  cr_assert_eq(ds_engine_pending(eng), 1);
  cr_assert_eq(ds_engine_fired(eng), 1);
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(ds_engine_pending(eng), 0);
  cr_assert_eq(ds_engine_fired(eng), 2);
  done(eng, &r);
}

/* Sequence numbers run out after 2^32 schedules; the engine then renumbers
 * the pending keys. The counter is jumped to 8 short of the limit, then 40
 * events are scheduled over 4 distinct times, so the renumbering happens with
 * ties pending. Expected: the exact (time, scheduling order) firing order is
 * kept, and a handle taken before the renumbering still cancels its event,
 * because handles name slots, not sequence numbers. */
Test(engine, sequence_renumbering_keeps_order) {
  enum { N = 40 };
  struct rec r;
  struct ds_engine *eng = new_engine(0, &r);
  ds__engine_set_next_seq(eng, (UINT64_C(1) << 32) - 8);
  uint64_t h[N];
  for (int32_t i = 0; i < N; i++) {
    int64_t t = 10 * ((i * 7) % 4);
    cr_assert_eq(ds_engine_schedule(eng, t, EV(K_PLAIN, i, t), &h[i]), DS_OK);
  }
  cr_assert_eq(ds_engine_cancel(eng, h[3]), 1, "handle from before the renumbering");
  ds_engine_run(eng, INT64_MAX);
  cr_assert_eq(r.n_log, N - 1);
  size_t k = 0;
  for (int64_t t = 0; t < 40; t += 10)
    for (int32_t i = 0; i < N; i++)
      if (i != 3 && 10 * ((i * 7) % 4) == t) {
        cr_assert_eq(r.log[k].a, i, "fire %zu: id %d, want %d", k, r.log[k].a, i);
        k++;
      }
  done(eng, &r);
}

/* A NULL handler is a caller bug: expected DS_EINTERNAL and *out left NULL.
 * Freeing NULL is allowed. */
Test(engine, new_rejects_null_handler) {
  struct ds_engine *eng = (struct ds_engine *)1;
  cr_assert_eq(ds_engine_new(0, NULL, NULL, &eng), DS_EINTERNAL);
  ds_engine_free(NULL);
}

static void count_only(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)eng;
  (void)ev;
  ++*(int *)ctx;
}

Test(engine, scheduled_counts_every_accepted_schedule) {
  /* Three accepted, one refused (in the past), one
   * of the three cancelled: three scheduled, two fired. The network
   * compares two counts to learn whether anything was scheduled in
   * between. */
  struct ds_engine *eng;
  int fired = 0;
  uint64_t h;
  struct ds_event ev = {.kind = 1};
  cr_assert_eq(ds_engine_new(0, count_only, &fired, &eng), DS_OK);
  cr_assert_eq(ds_engine_scheduled(eng), 0);
  cr_assert_eq(ds_engine_schedule(eng, 10, &ev, NULL), DS_OK);
  cr_assert_eq(ds_engine_schedule(eng, 20, &ev, &h), DS_OK);
  cr_assert_eq(ds_engine_schedule(eng, 30, &ev, NULL), DS_OK);
  cr_assert_eq(ds_engine_schedule(eng, -1, &ev, NULL), DS_EINTERNAL);
  cr_assert_eq(ds_engine_cancel(eng, h), 1);
  cr_assert_eq(ds_engine_scheduled(eng), 3);
  cr_assert_eq(ds_engine_run(eng, 100), DS_OK);
  cr_assert_eq(fired, 2);
  cr_assert_eq(ds_engine_scheduled(eng), 3);
  ds_engine_free(eng);
}

/* ds_engine_set_work_limit (issue #12): an event that schedules the next
 * one forever would keep ds_engine_run busy for ever; under a bound the
 * run stops at the first check past it (every DS_ENGINE_WORK_CHECK
 * events), returns DS_EINPUT and says what the estimate was. Without a
 * bound, or under one it never reaches, nothing changes. */
struct chain {
  int64_t left; /* events still to schedule */
  uint64_t extra; /* added to the events fired by the estimate */
};

static void chain_next(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)ev;
  struct chain *c = ctx;
  struct ds_event next = {.kind = 1};
  if (c->left-- > 0) cr_assert_eq(ds_engine_schedule(eng, ds_engine_now(eng) + 1, &next, NULL), DS_OK);
}

static uint64_t chain_work(void *ctx, uint64_t fired) {
  return fired + ((struct chain *)ctx)->extra;
}

Test(engine, a_work_bound_stops_the_run_with_its_estimate) {
  struct ds_event ev = {.kind = 1};
  for (int bounded = 0; bounded < 3; bounded++) {
    struct chain c = {.left = 100000, .extra = bounded == 2 ? 1000000 : 0};
    struct ds_engine *eng;
    cr_assert_eq(ds_engine_new(0, chain_next, &c, &eng), DS_OK);
    if (bounded) ds_engine_set_work_limit(eng, 50000, chain_work, &c);
    cr_assert_eq(ds_engine_schedule(eng, 0, &ev, NULL), DS_OK);
    ds_status st = ds_engine_run(eng, INT64_MAX);
    if (!bounded) {
      cr_assert_eq(st, DS_OK);
      cr_assert_eq(ds_engine_fired(eng), 100001);
      cr_assert_eq(ds_engine_work_exceeded(eng), 0);
    } else if (bounded == 1) {
      /* checks at 4096, 8192, ...: the first past 50000 is 53248 */
      cr_assert_eq(st, DS_EINPUT);
      cr_assert_eq(ds_engine_fired(eng), 13 * DS_ENGINE_WORK_CHECK);
      cr_assert_eq(ds_engine_work_exceeded(eng), 13 * DS_ENGINE_WORK_CHECK);
      cr_assert(!ds_engine_overflowed(eng));
    } else {
      /* the estimate (work the caller foresees) stops it at the first check */
      cr_assert_eq(st, DS_EINPUT);
      cr_assert_eq(ds_engine_fired(eng), DS_ENGINE_WORK_CHECK);
      cr_assert_eq(ds_engine_work_exceeded(eng), DS_ENGINE_WORK_CHECK + 1000000);
    }
    ds_engine_free(eng);
  }
  /* a bound never reached changes nothing */
  struct chain c = {.left = 1000};
  struct ds_engine *eng;
  cr_assert_eq(ds_engine_new(0, chain_next, &c, &eng), DS_OK);
  ds_engine_set_work_limit(eng, 50000, chain_work, &c);
  cr_assert_eq(ds_engine_schedule(eng, 0, &ev, NULL), DS_OK);
  cr_assert_eq(ds_engine_run(eng, INT64_MAX), DS_OK);
  cr_assert_eq(ds_engine_fired(eng), 1001);
  cr_assert_eq(ds_engine_work_exceeded(eng), 0);
  ds_engine_free(eng);
}
