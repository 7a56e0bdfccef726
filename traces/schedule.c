/*
 * The schedule container: growable arrays of ops and dependency ids, a
 * string intern table, a lazily built id index, and the structural checks
 * every executor relies on.
 *
 * Key invariants: interned strings never move (they live in chunks that are
 * never reallocated), so op->name and op->algo stay valid while ops grow;
 * the id index (sorted_ids) is valid only while n_sorted == n_ops, and every
 * ds_schedule_add() invalidates it by setting n_sorted to 0.
 */
#include "traces/schedule.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/coll_key.h"

/* ---- names ------------------------------------------------------------ */

static const char *const stream_names[] = {
#define DS__STREAM_NAME(e, s) s,
    DS_STREAM_MAP(DS__STREAM_NAME)
#undef DS__STREAM_NAME
};

static const char *const kind_names[] = {
#define DS__KIND_NAME(e, s, c) s,
    DS_OP_KIND_MAP(DS__KIND_NAME)
#undef DS__KIND_NAME
};

static const unsigned char kind_collective[] = {
#define DS__KIND_COLL(e, s, c) c,
    DS_OP_KIND_MAP(DS__KIND_COLL)
#undef DS__KIND_COLL
};

const char *ds_stream_name(enum ds_stream stream) {
  return (int)stream >= 0 && stream < DS_STREAM_COUNT ? stream_names[stream]
                                                       : "?";
}

int ds_stream_parse(const char *name, enum ds_stream *out) {
  for (int i = 0; i < DS_STREAM_COUNT; i++)
    if (strcmp(name, stream_names[i]) == 0) {
      *out = (enum ds_stream)i;
      return 0;
    }
  return -1;
}

const char *ds_op_kind_name(enum ds_op_kind kind) {
  return (int)kind >= 0 && kind < DS_OP_KIND_COUNT ? kind_names[kind] : "?";
}

int ds_op_kind_parse(const char *name, enum ds_op_kind *out) {
  for (int i = 0; i < DS_OP_KIND_COUNT; i++)
    if (strcmp(name, kind_names[i]) == 0) {
      *out = (enum ds_op_kind)i;
      return 0;
    }
  return -1;
}

int ds_op_kind_is_collective(enum ds_op_kind kind) {
  return (int)kind >= 0 && kind < DS_OP_KIND_COUNT && kind_collective[kind];
}

/* ---- string intern table ---------------------------------------------- */

/* Strings are copied into chunks that are never reallocated, so a pointer
 * handed out stays valid until the table is freed; only the hash slots
 * (pointers to those strings) are rehashed on growth. */
#define STRTAB_CHUNK_BYTES 65536

struct strchunk {
  struct strchunk *next;
  size_t used, cap;
  char data[];
};

struct ds__strtab {
  const char **slots; /* open addressing, linear probing; NULL = empty */
  size_t cap;         /* power of two */
  size_t n;
  struct strchunk *chunks; /* newest first */
};

/* FNV-1a: short names, no adversarial input, so a simple hash is enough. */
static uint64_t str_hash(const char *s, size_t len) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

static void strtab_free(struct ds__strtab *t) {
  if (!t) return;
  struct strchunk *c = t->chunks;
  while (c) {
    struct strchunk *next = c->next;
    free(c);
    c = next;
  }
  free(t->slots);
  free(t);
}

static ds_status strtab_grow(struct ds__strtab *t) {
  size_t cap = t->cap ? t->cap * 2 : 64;
  const char **slots = calloc(cap, sizeof *slots);
  if (!slots) return DS_ENOMEM;
  for (size_t i = 0; i < t->cap; i++) {
    const char *s = t->slots[i];
    if (!s) continue;
    size_t j = (size_t)str_hash(s, strlen(s)) & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = s;
  }
  free(t->slots);
  t->slots = slots;
  t->cap = cap;
  return DS_OK;
}

static char *strtab_store(struct ds__strtab *t, const char *str, size_t len) {
  struct strchunk *c = t->chunks;
  if (!c || c->cap - c->used < len + 1) {
    size_t cap = len + 1 > STRTAB_CHUNK_BYTES ? len + 1 : STRTAB_CHUNK_BYTES;
    c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->used = 0;
    c->cap = cap;
    c->next = t->chunks;
    t->chunks = c;
  }
  char *p = c->data + c->used;
  memcpy(p, str, len);
  p[len] = '\0';
  c->used += len + 1;
  return p;
}

ds_status ds_schedule_intern(struct ds_schedule *s, const char *str,
                             const char **out) {
  struct ds__strtab *t = s->strings;
  if (!str) str = "";
  size_t len = strlen(str);
  uint64_t h = str_hash(str, len);
  /* Keep the load factor at or below 1/2 so probe runs stay short. */
  if ((t->n + 1) * 2 > t->cap) DS_CHECK(strtab_grow(t));
  size_t j = (size_t)h & (t->cap - 1);
  while (t->slots[j]) {
    if (strcmp(t->slots[j], str) == 0) {
      *out = t->slots[j];
      return DS_OK;
    }
    j = (j + 1) & (t->cap - 1);
  }
  char *copy = strtab_store(t, str, len);
  if (!copy) return DS_ENOMEM;
  t->slots[j] = copy;
  t->n++;
  *out = copy;
  return DS_OK;
}

/* ---- construction ----------------------------------------------------- */

ds_status ds_schedule_new(int32_t world_size, struct ds_schedule **out) {
  struct ds_schedule *s = calloc(1, sizeof *s);
  if (!s) return DS_ENOMEM;
  s->strings = calloc(1, sizeof *s->strings);
  if (!s->strings) {
    free(s);
    return DS_ENOMEM;
  }
  s->world_size = world_size;
  *out = s;
  return DS_OK;
}

void ds_schedule_free(struct ds_schedule *s) {
  if (!s) return;
  free(s->ops);
  free(s->deps);
  free(s->sorted_ids);
  free(s->id_slot);
  strtab_free(s->strings);
  free(s);
}

/* Grows *p (elements of size elem) to hold at least need; doubling keeps
 * appends amortised O(1). */
static ds_status grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return DS_OK;
  size_t n = *cap ? *cap : 64;
  while (n < need) {
    if (n > SIZE_MAX / 2 / elem) return DS_ENOMEM;
    n *= 2;
  }
  void *q = realloc(*p, n * elem);
  if (!q) return DS_ENOMEM;
  *p = q;
  *cap = n;
  return DS_OK;
}

/* Grows *p (elements of size elem) to hold exactly want when it holds
 * fewer. */
static ds_status grow_exact(void **p, size_t *cap, size_t want, size_t elem) {
  if (want <= *cap) return DS_OK;
  if (want > SIZE_MAX / elem) return DS_ENOMEM;
  void *q = realloc(*p, want * elem);
  if (!q) return DS_ENOMEM;
  *p = q;
  *cap = want;
  return DS_OK;
}

ds_status ds_schedule_reserve(struct ds_schedule *s, size_t n_ops, size_t n_deps) {
  DS_CHECK(grow_exact((void **)&s->ops, &s->cap_ops, n_ops, sizeof *s->ops));
  return grow_exact((void **)&s->deps, &s->cap_deps, n_deps, sizeof *s->deps);
}

ds_status ds_schedule_add(struct ds_schedule *s, const struct ds_op *op,
                          const int64_t *deps, size_t n_deps,
                          size_t *out_index) {
  /* Copy first: op or deps may point into s's own arrays, which the
   * reallocations below can move. */
  struct ds_op o = *op;
  uintptr_t dp = (uintptr_t)deps, base = (uintptr_t)s->deps;
  int deps_inside = s->deps && n_deps > 0 && dp >= base &&
                    dp < base + s->n_deps * sizeof *s->deps;
  size_t deps_off = deps_inside ? (dp - base) / sizeof *s->deps : 0;

  /* dep_first/dep_count and the trace's row.op are 32-bit. */
  if (s->n_ops >= UINT32_MAX || n_deps > UINT32_MAX - s->n_deps)
    return DS_ENOMEM;
  DS_CHECK(ds_schedule_intern(s, o.name, &o.name));
  DS_CHECK(ds_schedule_intern(s, o.algo, &o.algo));
  DS_CHECK(grow((void **)&s->ops, &s->cap_ops, s->n_ops + 1, sizeof *s->ops));
  DS_CHECK(grow((void **)&s->deps, &s->cap_deps, s->n_deps + n_deps,
                sizeof *s->deps));
  if (deps_inside) deps = s->deps + deps_off;
  if (n_deps > 0) memmove(s->deps + s->n_deps, deps, n_deps * sizeof *deps);
  o.dep_first = (uint32_t)s->n_deps;
  o.dep_count = (uint32_t)n_deps;
  s->n_deps += n_deps;
  if (out_index) *out_index = s->n_ops;
  s->ops[s->n_ops++] = o;
  s->n_sorted = 0;
  return DS_OK;
}

ds_status ds_schedule_emit(struct ds_schedule_builder *b, struct ds_op *op,
                           const int64_t *deps, size_t n_deps) {
  op->id = b->next_id++;
  return ds_schedule_add(b->s, op, deps, n_deps, NULL);
}

/* Each rank's last op (by position) that `match` accepts, -1 for none:
 * the scan from the end stops once every rank has one. */
static void last_per_rank(const struct ds_schedule *s, int32_t n_ranks, int64_t *ids,
                          int (*match)(const struct ds_op *, int), int want) {
  for (int32_t r = 0; r < n_ranks; r++) ids[r] = -1;
  int32_t missing = n_ranks;
  for (size_t i = s->n_ops; i-- > 0 && missing > 0;) {
    const struct ds_op *o = &s->ops[i];
    if (match(o, want) && o->rank >= 0 && o->rank < n_ranks && ids[o->rank] < 0) {
      ids[o->rank] = o->id;
      missing--;
    }
  }
}

static int is_kind(const struct ds_op *o, int kind) { return (int)o->kind == kind; }

static int is_on_stream(const struct ds_op *o, int stream) { return (int)o->stream == stream; }

void ds_schedule_last_of_kind(const struct ds_schedule *s, enum ds_op_kind kind,
                              int32_t n_ranks, int64_t *ids) {
  last_per_rank(s, n_ranks, ids, is_kind, (int)kind);
}

void ds_schedule_last_on_stream(const struct ds_schedule *s, enum ds_stream stream,
                                int32_t n_ranks, int64_t *ids) {
  last_per_rank(s, n_ranks, ids, is_on_stream, (int)stream);
}

/* ---- id index --------------------------------------------------------- */

static int cmp_pair(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Builds sorted_ids as (id, index) pairs ordered by id, then index. Builders
 * number ops in order, so the already-sorted case skips the sort. */
static int build_index(struct ds_schedule *s) {
  if (s->n_sorted == s->n_ops && s->sorted_ids) return 0;
  free(s->sorted_ids);
  free(s->id_slot);
  s->id_slot = NULL;
  s->n_sorted = 0;
  s->sorted_ids = malloc((s->n_ops + 1) * 2 * sizeof *s->sorted_ids);
  if (!s->sorted_ids) return -1;
  int sorted = 1;
  s->ids_dense = 1;
  for (size_t i = 0; i < s->n_ops; i++) {
    s->sorted_ids[2 * i] = s->ops[i].id;
    s->sorted_ids[2 * i + 1] = (int64_t)i;
    if (i > 0 && s->ops[i].id < s->ops[i - 1].id) sorted = 0;
    /* in uint64_t: ids near INT64_MAX would overflow int64_t */
    if ((uint64_t)s->ops[i].id != (uint64_t)s->ops[0].id + (uint64_t)i) s->ids_dense = 0;
  }
  if (!sorted) qsort(s->sorted_ids, s->n_ops, 2 * sizeof *s->sorted_ids, cmp_pair);
  s->n_sorted = s->n_ops;
  if (!s->ids_dense && s->n_ops > 0 && s->n_ops < UINT32_MAX) {
    int64_t lo = s->sorted_ids[0], hi = s->sorted_ids[2 * (s->n_ops - 1)];
    /* in uint64_t: a span of ids far apart would overflow int64_t */
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    if (span != 0 && span <= 4 * (uint64_t)s->n_ops) {
      s->id_slot = malloc((size_t)span * sizeof *s->id_slot);
      if (s->id_slot) {
        /* sorted_ids is ordered by (id, index): the first of each id wins */
        memset(s->id_slot, 0xff, (size_t)span * sizeof *s->id_slot);
        for (size_t k = s->n_ops; k-- > 0;)
          s->id_slot[(uint64_t)s->sorted_ids[2 * k] - (uint64_t)lo] =
              (uint32_t)s->sorted_ids[2 * k + 1];
        s->id_base = lo;
        s->id_span = (size_t)span;
      }
    }
  }
  return 0;
}

int ds_schedule_find(struct ds_schedule *s, int64_t id, size_t *index) {
  if (build_index(s) != 0) {
    /* Out of memory for the index: a linear scan still answers. */
    for (size_t i = 0; i < s->n_ops; i++)
      if (s->ops[i].id == id) {
        *index = i;
        return 0;
      }
    return -1;
  }
  if (s->ids_dense && s->n_ops > 0) {
    /* Unsigned: an id below ops[0].id wraps to a large offset. */
    uint64_t off = (uint64_t)id - (uint64_t)s->ops[0].id;
    if (off >= s->n_ops) return -1;
    *index = (size_t)off;
    return 0;
  }
  if (s->id_slot) {
    uint64_t off = (uint64_t)id - (uint64_t)s->id_base;
    if (off >= s->id_span || s->id_slot[off] == UINT32_MAX) return -1;
    *index = s->id_slot[off];
    return 0;
  }
  /* Lower bound, so that with duplicate ids the first op is found. */
  size_t lo = 0, hi = s->n_sorted;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->sorted_ids[2 * mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == s->n_sorted || s->sorted_ids[2 * lo] != id) return -1;
  *index = (size_t)s->sorted_ids[2 * lo + 1];
  return 0;
}

/* ---- validation ------------------------------------------------------- */

static ds_status check_op(const struct ds_schedule *s, const struct ds_op *o,
                          struct ds_err *err) {
  if (o->id < 0)
    return ds_err_set(err, DS_EINPUT, "op %" PRId64 ": id must be >= 0", o->id);
  if (o->rank < 0 || o->rank >= s->world_size)
    return ds_err_set(err, DS_EINPUT,
                      "op %" PRId64 ": rank %" PRId32
                      " is outside 0..%" PRId32 " (world size %" PRId32 ")",
                      o->id, o->rank, s->world_size - 1, s->world_size);
  if ((int)o->stream < 0 || o->stream >= DS_STREAM_COUNT)
    return ds_err_set(err, DS_EINPUT, "op %" PRId64 ": stream %d is not a stream",
                      o->id, (int)o->stream);
  if ((int)o->kind < 0 || o->kind >= DS_OP_KIND_COUNT)
    return ds_err_set(err, DS_EINPUT, "op %" PRId64 ": kind %d is not an op kind",
                      o->id, (int)o->kind);
  if (!o->name || !o->algo)
    return ds_err_set(err, DS_EINTERNAL, "op %" PRId64 ": name or algo is NULL",
                      o->id);
  if (o->layer < -1 || o->bucket < -1 || o->coll < -1)
    return ds_err_set(err, DS_EINPUT,
                      "op %" PRId64 ": layer, bucket and coll must be >= -1",
                      o->id);
  if (o->root < -1 || o->root >= s->world_size)
    return ds_err_set(err, DS_EINPUT,
                      "op %" PRId64 ": root %" PRId32
                      " is neither -1 nor a rank below %" PRId32,
                      o->id, o->root, s->world_size);
  /* The executors turn these into times and message sizes. */
  if (!isfinite(o->bytes) || o->bytes < 0 || !isfinite(o->flops) ||
      o->flops < 0 || !isfinite(o->dur_us) || o->dur_us < 0)
    return ds_err_set(err, DS_EINPUT,
                      "op %" PRId64 ": bytes, flops and dur_us must be finite "
                      "and >= 0 (got %g, %g, %g)",
                      o->id, o->bytes, o->flops, o->dur_us);
  /* The executors look collectives up by coll id. */
  if (ds_op_kind_is_collective(o->kind) && o->coll < 0)
    return ds_err_set(err, DS_EINPUT,
                      "op %" PRId64 ": %s is a collective and needs a coll id "
                      ">= 0",
                      o->id, ds_op_kind_name(o->kind));
  return DS_OK;
}

static ds_status check_deps(struct ds_schedule *s, size_t i,
                            struct ds_err *err) {
  const struct ds_op *o = &s->ops[i];
  const int64_t *deps = ds_schedule_deps(s, o);
  for (uint32_t k = 0; k < o->dep_count; k++) {
    size_t d;
    const char *why = NULL;
    char buf[64];
    if (ds_schedule_find(s, deps[k], &d) != 0) {
      why = "no op has that id";
    } else if (s->ops[d].rank != o->rank) {
      snprintf(buf, sizeof buf, "it is on rank %" PRId32, s->ops[d].rank);
      why = buf;
    } else if (d == i) {
      why = "it is the op itself";
    } else if (d > i) {
      why = "it comes later in the schedule";
    }
    if (why)
      return ds_err_set(err, DS_EINPUT,
                        "op %" PRId64 ": dependency %" PRId64
                        " is not an op of rank %" PRId32
                        " that comes earlier (%s)",
                        o->id, deps[k], o->rank, why);
  }
  return DS_OK;
}

/* Ops sharing a coll id form one collective instance: one op per rank, all
 * of one kind and with the same per-rank payload. */
static ds_status check_colls(const struct ds_schedule *s, size_t *bad, struct ds_err *err) {
  size_t n = 0;
  for (size_t i = 0; i < s->n_ops; i++) n += s->ops[i].coll >= 0;
  if (n == 0) return DS_OK;
  struct ds_coll_key *keys = malloc(n * sizeof *keys);
  if (!keys)
    return ds_err_set(err, DS_ENOMEM, "validating the schedule: out of memory");
  n = 0;
  for (size_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].coll >= 0)
      keys[n++] = (struct ds_coll_key){s->ops[i].coll, s->ops[i].rank, (uint32_t)i};
  qsort(keys, n, sizeof *keys, ds_coll_key_cmp);
  ds_status st = DS_OK;
  size_t first = 0;
  for (size_t k = 1; k < n && st == DS_OK; k++) {
    if (keys[k].coll != keys[first].coll) {
      first = k;
      continue;
    }
    const struct ds_op *a = &s->ops[keys[first].op], *b = &s->ops[keys[k].op];
    *bad = keys[k].op;
    if (keys[k].rank == keys[k - 1].rank)
      st = ds_err_set(err, DS_EINPUT,
                      "op %" PRId64 ": collective %" PRId64
                      " already has op %" PRId64 " on rank %" PRId32,
                      s->ops[keys[k].op].id, b->coll,
                      s->ops[keys[k - 1].op].id, b->rank);
    else if (a->kind != b->kind)
      st = ds_err_set(err, DS_EINPUT,
                      "op %" PRId64 ": collective %" PRId64
                      " is a %s but op %" PRId64 " of it is a %s",
                      b->id, b->coll, ds_op_kind_name(b->kind), a->id,
                      ds_op_kind_name(a->kind));
    else if (a->bytes != b->bytes)
      st = ds_err_set(err, DS_EINPUT,
                      "op %" PRId64 ": collective %" PRId64
                      " has %.17g bytes here but %.17g in op %" PRId64,
                      b->id, b->coll, b->bytes, a->bytes, a->id);
  }
  free(keys);
  if (st == DS_OK) *bad = SIZE_MAX;
  return st;
}

ds_status ds_schedule_validate(struct ds_schedule *s, struct ds_err *err) {
  size_t bad;
  return ds_schedule_validate_at(s, &bad, err);
}

ds_status ds_schedule_validate_at(struct ds_schedule *s, size_t *bad, struct ds_err *err) {
  *bad = SIZE_MAX;
  if (s->world_size < 1)
    return ds_err_set(err, DS_EINPUT,
                      "schedule: world size %" PRId32 " must be >= 1",
                      s->world_size);
  for (size_t i = 0; i < s->n_ops; i++) {
    *bad = i;
    DS_CHECK(check_op(s, &s->ops[i], err));
  }
  *bad = SIZE_MAX;
  if (build_index(s) != 0)
    return ds_err_set(err, DS_ENOMEM, "validating the schedule: out of memory");
  for (size_t k = 1; k < s->n_sorted; k++)
    if (s->sorted_ids[2 * k] == s->sorted_ids[2 * k - 2]) {
      size_t a = (size_t)s->sorted_ids[2 * k - 1], b = (size_t)s->sorted_ids[2 * k + 1];
      *bad = a > b ? a : b;
      return ds_err_set(err, DS_EINPUT,
                        "op %" PRId64 ": id is used twice (ops number %zu and "
                        "%zu of the schedule)",
                        s->ops[b].id, a + 1, b + 1);
    }
  for (size_t i = 0; i < s->n_ops; i++) {
    *bad = i;
    DS_CHECK(check_deps(s, i, err));
  }
  *bad = SIZE_MAX;
  return check_colls(s, bad, err);
}
