/*
 * The discrete-event engine: a priority queue of timestamped events.
 *
 * Time is an integer number of nanoseconds. Events are ordered by (time,
 * sequence number): events at equal times fire in the order they were
 * scheduled, so runs are reproducible bit for bit. The engine knows nothing
 * of GPUs or networks; it calls one handler, given at creation, for every
 * event, and the model dispatches on the event's `kind`.
 *
 * Event records live in a pool owned by the engine that grows geometrically
 * (ds_engine_reserve preallocates it): scheduling and firing do not allocate
 * on the hot path. The payload is small plain data copied into the record.
 */
#ifndef DS_ENGINE_H
#define DS_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Plain-data payload copied into the engine on ds_engine_schedule. */
struct ds_event {
  uint32_t kind; /* model-defined event type */
  int32_t a;     /* model-defined small integer (a rank, a flow index...) */
  int64_t b;     /* model-defined integer (an op index, a generation...) */
  void *ptr;     /* borrowed model pointer, never dereferenced by the engine */
};

struct ds_engine;

/* Called once per fired event, at ds_engine_now() == the event's time. The
 * handler may schedule and cancel events. ev points to a copy valid for the
 * duration of the call. */
typedef void (*ds_event_fn)(void *ctx, struct ds_engine *eng,
                            const struct ds_event *ev);

/* Creates an engine at time 0 with room for `capacity` pending events
 * (0 picks a default). handler must not be NULL; ctx is borrowed. */
ds_status ds_engine_new(size_t capacity, ds_event_fn handler, void *ctx,
                        struct ds_engine **out);
/* Frees the engine and every pending event; NULL is allowed. */
void ds_engine_free(struct ds_engine *eng);

/* Grows the pool so that `capacity` events can be pending at once. */
ds_status ds_engine_reserve(struct ds_engine *eng, size_t capacity);

/* Current simulated time in nanoseconds. */
int64_t ds_engine_now(const struct ds_engine *eng);

/* Schedules *ev at absolute time time_ns (must be >= now, else
 * DS_EINTERNAL). A time past DS_UNITS_NS_MAX (base/units.h: 1e18 ns, 31.7
 * years; a duration computed from huge but accepted inputs) is refused with
 * DS_EINPUT, and the engine remembers it: ds_engine_run stops and returns
 * DS_EINPUT, and ds_engine_overflowed says so. When handle is not NULL it
 * receives an id for ds_engine_cancel. */
ds_status ds_engine_schedule(struct ds_engine *eng, int64_t time_ns,
                             const struct ds_event *ev, uint64_t *handle);

/* Cancels a pending event. Returns 1 if it was pending and is now removed,
 * 0 if it already fired, was cancelled, or the handle is stale. */
int ds_engine_cancel(struct ds_engine *eng, uint64_t handle);

/* Fires events in (time, sequence) order until none is pending or the next
 * one is later than until_ns (use INT64_MAX for "until empty"). Time never
 * goes backwards. Returns DS_OK, or DS_EINPUT (and stops) once an event was
 * refused for lying past the longest simulated time. */
ds_status ds_engine_run(struct ds_engine *eng, int64_t until_ns);

/* 1 when an event was refused for lying past DS_UNITS_NS_MAX. */
int ds_engine_overflowed(const struct ds_engine *eng);

/* The message callers give for that refusal (no location: the duration was
 * computed, not read). It names every input a duration is computed from:
 * a host cost of 1e6 s (each key's bound) times a model's dispatches passes
 * the clock too, where a message naming only FLOPs, bytes and links sent
 * the user to the wrong file. */
#define DS_ENGINE_OVERFLOW_MSG                                                   \
  "a computed duration exceeds the longest simulated time (1e18 ns, 31.7 "      \
  "years): check the model's FLOPs and bytes, the batch, the topology's "       \
  "bandwidths, latencies and host_* costs, and --calib's and --host-scale's "   \
  "values"

/* A bound on the work of one run, so that no input keeps ddpsim busy for
 * hours without a word (issue #12). Every DS_ENGINE_WORK_CHECK events
 * ds_engine_run asks estimate(ctx, fired) for the run's whole work as the
 * caller foresees it (at least what was done: events fired plus what the
 * caller counts, the flows the network re-solved); past limit it stops the
 * run, returns DS_EINPUT, and ds_engine_work_exceeded gives the estimate.
 * The counts are the simulation's own, not the clock's, so whether a run
 * is refused depends on its inputs alone. limit 0: no bound. */
typedef uint64_t (*ds_work_estimate_fn)(void *ctx, uint64_t fired);
#define DS_ENGINE_WORK_CHECK 4096
void ds_engine_set_work_limit(struct ds_engine *eng, uint64_t limit, ds_work_estimate_fn fn,
                              void *ctx);
/* The estimate that stopped the run, 0 when none did. */
uint64_t ds_engine_work_exceeded(const struct ds_engine *eng);

/* Number of events pending now. */
size_t ds_engine_pending(const struct ds_engine *eng);
/* Number of events fired since creation. */
uint64_t ds_engine_fired(const struct ds_engine *eng);
/* Number of events scheduled since creation (a model compares two counts to
 * learn whether anything was scheduled in between). */
uint64_t ds_engine_scheduled(const struct ds_engine *eng);

/* Internal, for tests only: jumps the sequence counter forward to seq, so
 * that the renumbering done when sequence numbers run out (after 2^32
 * schedules) can be tested without scheduling 4 billion events. */
void ds__engine_set_next_seq(struct ds_engine *eng, uint64_t seq);

#ifdef __cplusplus
}
#endif

#endif /* DS_ENGINE_H */
