/*
 * The discrete-event engine (see engine.h): a 4-ary min-heap of compact keys
 * over a pool of event records.
 *
 * Invariant: heap[0..n) is a min-heap by (time_ns, order), where order packs
 * the scheduling sequence number (high 32 bits) above the record's slot index
 * (low 32 bits); sequence numbers are unique, so comparing `order` compares
 * them and ties in time fire in scheduling order. For every pending slot s,
 * heap[pos[s]] names s, which lets cancel remove it in O(log n). (While a
 * handler runs, heap[0] may be a hole: see "vacant top" below.)
 *
 * The keys sit inline in the heap array so a sift compares 16-byte keys in
 * contiguous memory and, per moved key, writes only its 4-byte entry of the
 * dense pos array, never the 32-byte event records. A 4-ary
 * heap halves the depth of a binary one, and its four children share a cache
 * line. A handle is (generation << 32 | slot); the generation is bumped each
 * time a slot is freed, so handles of fired or cancelled events go stale.
 *
 * When an event fires, its root key is left as a hole ("vacant top") while the
 * handler runs: the common case of a handler scheduling one follow-up event
 * then drops the new key into the hole and sifts it down once, instead of a
 * pop (sift down) followed by a push (sift up). Any other operation fills the
 * hole first, with the usual pop.
 */
#include "sim/net/engine.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"

#define DEFAULT_CAPACITY 1024u
#define SLOT_BITS 32
#define SLOT_MASK ((UINT64_C(1) << SLOT_BITS) - 1)
/* The largest sequence number that fits above the slot bits; past it the
 * pending keys are renumbered (see renumber). */
#define SEQ_MAX (UINT64_MAX >> SLOT_BITS)
/* Marks the end of the free list; also caps the pool at 2^32 - 1 slots. */
#define NO_SLOT UINT32_MAX
#define ARITY 4
/* heap[0] sits at heap_buf[3], so the children 4i+1..4i+4 of any node start
 * at heap_buf[4i+4]: one 64-byte line holds the four 16-byte keys a sift
 * compares at each level. */
#define HEAP_SHIFT 3
#define LINE_BYTES 64

struct key {
  int64_t time_ns;
  uint64_t order; /* seq << SLOT_BITS | slot */
};

struct slot_rec {
  struct ds_event ev;
  uint32_t gen;       /* never 0, so that no valid handle is 0 */
  uint32_t next_free; /* while free: the next free slot */
};

struct ds_engine {
  struct key *heap;       /* [cap], == heap_buf + HEAP_SHIFT */
  struct key *heap_buf;   /* the allocation, 64-byte aligned */
  uint32_t *pos;          /* [cap] heap index of each pending slot */
  struct slot_rec *slots; /* [cap] */
  size_t n;               /* keys in heap, counting a vacant top */
  uint32_t cap;
  uint32_t fresh;     /* slots [fresh, cap) were never used */
  uint32_t free_head; /* LIFO free list of used slots, NO_SLOT when empty */
  int top_vacant;     /* heap[0] is a hole left by the event firing now */
  uint64_t next_seq;
  int64_t now_ns;
  uint64_t fired;
  uint64_t scheduled;
  int overflowed; /* an event past DS_UNITS_NS_MAX was refused */
  ds_event_fn handler;
  void *ctx;
  /* ds_engine_set_work_limit */
  uint64_t work_limit, work_next_check, work_exceeded;
  ds_work_estimate_fn work_fn;
  void *work_ctx;
};

/* Compares (time_ns, order) as one 128-bit unsigned number; time_ns is
 * never negative (time starts at 0 and schedule refuses the past), so the
 * unsigned view orders it correctly. GCC and Clang compile this to cmp/sbb
 * with no branch: which child is smallest is a coin toss, and one
 * mispredicted branch per compare halved the event rate. */
#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 u128;
static inline int key_less(const struct key *a, const struct key *b) {
  u128 x = (u128)(uint64_t)a->time_ns << 64 | a->order;
  u128 y = (u128)(uint64_t)b->time_ns << 64 | b->order;
  return x < y;
}
#else
static inline int key_less(const struct key *a, const struct key *b) {
  return (a->time_ns < b->time_ns) |
         ((a->time_ns == b->time_ns) & (a->order < b->order));
}
#endif

static inline uint32_t key_slot(const struct key *k) {
  return (uint32_t)(k->order & SLOT_MASK);
}

static inline void place(struct ds_engine *eng, size_t i, struct key k) {
  eng->heap[i] = k;
  eng->pos[key_slot(&k)] = (uint32_t)i;
}

static void sift_up(struct ds_engine *eng, size_t i, struct key k) {
  struct key *heap = eng->heap;
  while (i > 0) {
    size_t parent = (i - 1) / ARITY;
    if (!key_less(&k, &heap[parent])) break;
    place(eng, i, heap[parent]);
    i = parent;
  }
  place(eng, i, k);
}

static void sift_down(struct ds_engine *eng, size_t i, struct key k) {
  struct key *heap = eng->heap;
  size_t n = eng->n;
  for (;;) {
    size_t c = ARITY * i + 1;
    size_t m;
    if (c + ARITY <= n) {
      /* The children of these four children are the next 16 keys from
       * heap[4c + 1]: four whole lines, fetched while we compare. */
      const char *g = (const char *)&heap[ARITY * c + 1];
      __builtin_prefetch(g);
      __builtin_prefetch(g + LINE_BYTES);
      __builtin_prefetch(g + 2 * LINE_BYTES);
      __builtin_prefetch(g + 3 * LINE_BYTES);
      /* All four children exist: a branch-free tournament picks the
       * smallest. With no branch to speculate past, the loads of the next
       * level would wait for this one, so the prefetch starts them now. */
      size_t m01 = c + (size_t)key_less(&heap[c + 1], &heap[c]);
      size_t m23 = c + 2 + (size_t)key_less(&heap[c + 3], &heap[c + 2]);
      size_t pick = (size_t)0 - (size_t)key_less(&heap[m23], &heap[m01]);
      m = m01 ^ ((m01 ^ m23) & pick);
    } else if (c < n) {
      m = c;
      for (size_t j = c + 1; j < n; j++)
        if (key_less(&heap[j], &heap[m])) m = j;
    } else {
      break;
    }
    if (!key_less(&heap[m], &k)) break;
    place(eng, i, heap[m]);
    i = m;
  }
  place(eng, i, k);
}

/* Fills the vacant top with the last key, as a pop would. */
static void fill_top(struct ds_engine *eng) {
  eng->top_vacant = 0;
  eng->n--;
  if (eng->n > 0) sift_down(eng, 0, eng->heap[eng->n]);
}

static void free_slot(struct ds_engine *eng, uint32_t s) {
  struct slot_rec *rec = &eng->slots[s];
  rec->gen = rec->gen + 1 != 0 ? rec->gen + 1 : 1;
  rec->next_free = eng->free_head;
  eng->free_head = s;
}

static ds_status grow_to(struct ds_engine *eng, size_t capacity) {
  if (capacity <= eng->cap) return DS_OK;
  if (capacity > NO_SLOT) return DS_ENOMEM;
  /* aligned_alloc wants a size that is a multiple of the alignment, and
   * there is no aligned realloc: copy instead. */
  size_t heap_bytes = (capacity + HEAP_SHIFT) * sizeof(struct key);
  heap_bytes = (heap_bytes + LINE_BYTES - 1) / LINE_BYTES * LINE_BYTES;
  struct key *buf = aligned_alloc(LINE_BYTES, heap_bytes);
  if (buf == NULL) return DS_ENOMEM;
  if (eng->heap_buf != NULL)
    memcpy(buf, eng->heap_buf, (eng->cap + HEAP_SHIFT) * sizeof *buf);
  free(eng->heap_buf);
  eng->heap_buf = buf;
  eng->heap = buf + HEAP_SHIFT;
  uint32_t *pos = realloc(eng->pos, capacity * sizeof *pos);
  if (pos == NULL) return DS_ENOMEM;
  eng->pos = pos;
  struct slot_rec *slots = realloc(eng->slots, capacity * sizeof *slots);
  if (slots == NULL) return DS_ENOMEM;
  eng->slots = slots;
  eng->cap = (uint32_t)capacity;
  return DS_OK;
}

static ds_status alloc_slot(struct ds_engine *eng, uint32_t *out) {
  uint32_t s = eng->free_head;
  if (s != NO_SLOT) {
    eng->free_head = eng->slots[s].next_free;
    *out = s;
    return DS_OK;
  }
  if (eng->fresh == eng->cap) {
    size_t want = (size_t)eng->cap * 2;
    DS_CHECK(grow_to(eng, want < NO_SLOT ? want : NO_SLOT));
    if (eng->fresh == eng->cap) return DS_ENOMEM;
  }
  s = eng->fresh++;
  eng->slots[s].gen = 1;
  *out = s;
  return DS_OK;
}

static int cmp_key(const void *pa, const void *pb) {
  const struct key *a = pa, *b = pb;
  return key_less(a, b) ? -1 : key_less(b, a) ? 1 : 0;
}

/* Sequence numbers have run out (after 2^32 schedules): gives the pending
 * keys new numbers 0..n-1 in their firing order, which keeps every relative
 * order. A sorted array is a valid heap, so the heap needs no rebuilding.
 * Costs O(n log n) once per 4 billion schedules. */
static void renumber(struct ds_engine *eng) {
  assert(!eng->top_vacant);
  qsort(eng->heap, eng->n, sizeof *eng->heap, cmp_key);
  for (size_t i = 0; i < eng->n; i++) {
    uint32_t s = key_slot(&eng->heap[i]);
    eng->heap[i].order = (uint64_t)i << SLOT_BITS | s;
    eng->pos[s] = (uint32_t)i;
  }
  eng->next_seq = eng->n;
}

ds_status ds_engine_new(size_t capacity, ds_event_fn handler, void *ctx,
                        struct ds_engine **out) {
  if (out == NULL) return DS_EINTERNAL;
  *out = NULL;
  if (handler == NULL) return DS_EINTERNAL;
  struct ds_engine *eng = calloc(1, sizeof *eng);
  if (eng == NULL) return DS_ENOMEM;
  eng->free_head = NO_SLOT;
  eng->handler = handler;
  eng->ctx = ctx;
  ds_status st = grow_to(eng, capacity != 0 ? capacity : DEFAULT_CAPACITY);
  if (st != DS_OK) {
    ds_engine_free(eng);
    return st;
  }
  *out = eng;
  return DS_OK;
}

void ds_engine_free(struct ds_engine *eng) {
  if (eng == NULL) return;
  free(eng->heap_buf);
  free(eng->pos);
  free(eng->slots);
  free(eng);
}

ds_status ds_engine_reserve(struct ds_engine *eng, size_t capacity) {
  return grow_to(eng, capacity);
}

int64_t ds_engine_now(const struct ds_engine *eng) { return eng->now_ns; }

ds_status ds_engine_schedule(struct ds_engine *eng, int64_t time_ns,
                             const struct ds_event *ev, uint64_t *handle) {
  if (time_ns < eng->now_ns || ev == NULL) return DS_EINTERNAL;
  if (time_ns > DS_UNITS_NS_MAX) {
    eng->overflowed = 1;
    return DS_EINPUT;
  }
  if (eng->next_seq > SEQ_MAX) {
    if (eng->top_vacant) fill_top(eng);
    renumber(eng);
  }
  uint32_t s;
  DS_CHECK(alloc_slot(eng, &s));
  struct slot_rec *rec = &eng->slots[s];
  rec->ev = *ev;
  struct key k = {time_ns, eng->next_seq++ << SLOT_BITS | s};
  if (eng->top_vacant) {
    eng->top_vacant = 0;
    sift_down(eng, 0, k);
  } else {
    eng->n++;
    sift_up(eng, eng->n - 1, k);
  }
  if (handle != NULL) *handle = (uint64_t)rec->gen << SLOT_BITS | s;
  eng->scheduled++;
  return DS_OK;
}

int ds_engine_cancel(struct ds_engine *eng, uint64_t handle) {
  uint32_t s = (uint32_t)(handle & SLOT_MASK);
  uint32_t gen = (uint32_t)(handle >> SLOT_BITS);
  /* A free slot's generation was bumped past every handle issued for it, so
   * the generation test alone tells pending from fired or cancelled. */
  if (s >= eng->fresh || eng->slots[s].gen != gen) return 0;
  if (eng->top_vacant) fill_top(eng);
  size_t i = eng->pos[s];
  free_slot(eng, s);
  eng->n--;
  if (i != eng->n) {
    struct key last = eng->heap[eng->n];
    if (i > 0 && key_less(&last, &eng->heap[(i - 1) / ARITY]))
      sift_up(eng, i, last);
    else
      sift_down(eng, i, last);
  }
  return 1;
}

ds_status ds_engine_run(struct ds_engine *eng, int64_t until_ns) {
  /* A vacant top here means run was called from a handler. */
  if (eng->top_vacant) fill_top(eng);
  while (eng->n > 0 && eng->heap[0].time_ns <= until_ns) {
    uint32_t s = key_slot(&eng->heap[0]);
    /* Copy out and free first: the handler may reuse the slot, and a cancel
     * of this event's handle from its own handler must return 0. */
    /* The next event to fire is almost always one of the root's children;
     * its record was written long ago and is likely out of cache. Fetching
     * the four candidates while the handler runs hides that miss. */
    if (eng->n > ARITY)
      for (size_t j = 1; j <= ARITY; j++)
        __builtin_prefetch(&eng->slots[key_slot(&eng->heap[j])]);
    struct ds_event ev = eng->slots[s].ev;
    free_slot(eng, s);
    eng->top_vacant = 1;
    eng->now_ns = eng->heap[0].time_ns;
    eng->fired++;
    eng->handler(eng->ctx, eng, &ev);
    if (eng->top_vacant) fill_top(eng);
    if (eng->overflowed) return DS_EINPUT;
    if (eng->work_limit && eng->fired >= eng->work_next_check) {
      eng->work_next_check = eng->fired + DS_ENGINE_WORK_CHECK;
      uint64_t w = eng->work_fn ? eng->work_fn(eng->work_ctx, eng->fired) : eng->fired;
      if (w > eng->work_limit) {
        eng->work_exceeded = w;
        return DS_EINPUT;
      }
    }
  }
  return eng->overflowed ? DS_EINPUT : DS_OK;
}

int ds_engine_overflowed(const struct ds_engine *eng) { return eng->overflowed; }

void ds_engine_set_work_limit(struct ds_engine *eng, uint64_t limit, ds_work_estimate_fn fn,
                              void *ctx) {
  eng->work_limit = limit;
  eng->work_fn = fn;
  eng->work_ctx = ctx;
  eng->work_next_check = eng->fired + DS_ENGINE_WORK_CHECK;
  eng->work_exceeded = 0;
}

uint64_t ds_engine_work_exceeded(const struct ds_engine *eng) { return eng->work_exceeded; }

size_t ds_engine_pending(const struct ds_engine *eng) {
  return eng->n - (eng->top_vacant ? 1 : 0);
}

uint64_t ds_engine_fired(const struct ds_engine *eng) { return eng->fired; }

uint64_t ds_engine_scheduled(const struct ds_engine *eng) { return eng->scheduled; }

void ds__engine_set_next_seq(struct ds_engine *eng, uint64_t seq) {
  assert(seq >= eng->next_seq);
  eng->next_seq = seq;
}
