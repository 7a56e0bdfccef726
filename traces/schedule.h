/*
 * The schedule: a DAG of operations for one training iteration, per rank.
 *
 * This is the one intermediate form shared by the simulator (sim/), the
 * real backend (real/) and the analysis (analysis/). Both executors honour
 * exactly the dependencies in `deps` (ids of ops on the same rank) plus the
 * order of ops on each (rank, stream); cross-rank dependencies come only
 * from collectives (ops sharing a `coll` id) and send/recv pairs.
 *
 * Ownership: a schedule owns its ops, its dependency array and its interned
 * strings. Pointers returned by the accessors stay valid until the next
 * ds_schedule_add() (ops may move) or ds_schedule_free(); interned strings
 * stay valid until ds_schedule_free().
 */
#ifndef DS_SCHEDULE_H
#define DS_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(ENUM, "csv-name") */
#define DS_STREAM_MAP(X) \
  X(COMPUTE, "compute")  \
  X(COMM, "comm")        \
  X(COPY, "copy")        \
  X(HOST, "host")

enum ds_stream {
#define DS__STREAM_ENUM(e, s) DS_STREAM_##e,
  DS_STREAM_MAP(DS__STREAM_ENUM)
#undef DS__STREAM_ENUM
  DS_STREAM_COUNT
};

/* X(ENUM, "csv-name", is_collective) */
#define DS_OP_KIND_MAP(X)                 \
  X(FWD, "fwd", 0)                        \
  X(BWD, "bwd", 0)                        \
  X(LOSS, "loss", 0)                      \
  X(STEP, "step", 0)                      \
  X(ALLREDUCE, "allreduce", 1)            \
  X(REDUCE, "reduce", 1)                  \
  X(BROADCAST, "broadcast", 1)            \
  X(SCATTER, "scatter", 1)                \
  X(GATHER, "gather", 1)                  \
  X(ALLGATHER, "allgather", 1)            \
  X(REDUCESCATTER, "reducescatter", 1)    \
  X(SEND, "send", 0)                      \
  X(RECV, "recv", 0)                      \
  X(H2D, "h2d", 0)                        \
  X(D2H, "d2h", 0)                        \
  X(PUSH, "push", 0)                      \
  X(PULL, "pull", 0)

enum ds_op_kind {
#define DS__KIND_ENUM(e, s, c) DS_OP_##e,
  DS_OP_KIND_MAP(DS__KIND_ENUM)
#undef DS__KIND_ENUM
  DS_OP_KIND_COUNT
};

struct ds_op {
  int64_t id;           /* unique within the schedule, >= 0 */
  int32_t rank;         /* 0 .. world_size-1 */
  enum ds_stream stream;
  enum ds_op_kind kind;
  const char *name;     /* layer or bucket name; interned, never NULL */
  int32_t layer;        /* model layer index, -1 when none */
  int32_t bucket;       /* gradient bucket index, -1 when none */
  int64_t coll;         /* collective instance, -1 when none */
  int32_t root;         /* root rank of rooted collectives, -1 when none */
  const char *algo;     /* collective algorithm ("ring"); interned, "" when none */
  double bytes;         /* payload bytes (per rank for collectives) */
  double flops;         /* floating-point operations of compute ops */
  double dur_us;        /* builder's predicted stand-alone duration */
  uint32_t dep_first;   /* index of the first dependency in the deps array */
  uint32_t dep_count;   /* number of dependencies */
};

struct ds__strtab;

struct ds_schedule {
  int32_t world_size;
  struct ds_op *ops;
  size_t n_ops;
  size_t cap_ops;
  int64_t *deps; /* dependency ids, ops[i] owns deps[dep_first .. +dep_count) */
  size_t n_deps;
  size_t cap_deps;
  struct ds__strtab *strings; /* owned */
  int64_t *sorted_ids;        /* (id, index) pairs sorted by id; built lazily */
  size_t n_sorted;
  /* With the index built: 1 when op i's id is ops[0].id + i for every i
   * (what the builders write), so a lookup is a subtraction. */
  int ids_dense;
  /* With the index built and ids not dense but within a span of at most
   * 4 x n_ops (the shared template: one rank class's ops, ids sorted with
   * gaps): id_slot[id - id_base] is the first op of that id, UINT32_MAX
   * none, so a lookup is a load, not a binary search (8 % of a
   * 64-configuration sweep's time on 4gpu.yaml, bench/README.md
   * 2026-11-29). NULL otherwise. */
  uint32_t *id_slot;
  int64_t id_base;
  size_t id_span;
};

/* Creates an empty schedule for world_size ranks in *out (owned by caller). */
ds_status ds_schedule_new(int32_t world_size, struct ds_schedule **out);
/* Frees s and everything it owns; NULL is allowed. */
void ds_schedule_free(struct ds_schedule *s);

/* Returns a copy of str owned by s; equal strings share one copy. */
ds_status ds_schedule_intern(struct ds_schedule *s, const char *str,
                             const char **out);

/* Appends a copy of *op with the n_deps dependency ids in deps. op->name and
 * op->algo are interned into s (they may point anywhere; NULL means "").
 * op->dep_first/dep_count are ignored and set by the call. The index of the
 * new op is stored in *out_index when out_index is not NULL. */
ds_status ds_schedule_add(struct ds_schedule *s, const struct ds_op *op,
                          const int64_t *deps, size_t n_deps,
                          size_t *out_index);

/* Makes room for n_ops ops and n_deps dependency ids in all (counting
 * those s has): a builder that knows its size up front (sim/train/ps.c's
 * one step of workers x servers pushes and pulls) allocates exactly that
 * much instead of up to twice it by doubling. DS_ENOMEM when out of
 * memory (s unchanged). */
ds_status ds_schedule_reserve(struct ds_schedule *s, size_t n_ops, size_t n_deps);

/* Appends ops numbered in the order they are built: what the strategies'
 * schedule builders (sim/train/ddp*.c, sim/train/dp.c, sim/train/ps_schedule.c) share. s is
 * borrowed. */
struct ds_schedule_builder {
  struct ds_schedule *s;
  int64_t next_id; /* the id the next op gets */
};

/* Numbers *op (op->id = b->next_id, which then advances) and appends it
 * with its n_deps dependency ids (ds_schedule_add). */
ds_status ds_schedule_emit(struct ds_schedule_builder *b, struct ds_op *op,
                           const int64_t *deps, size_t n_deps);

/* The dependency ids of op (op must belong to s). A schedule without any
 * dependency has no deps array: NULL + 0 is undefined behaviour (UBSan,
 * found by `make fuzz`), so an empty one is returned instead. */
static inline const int64_t *ds_schedule_deps(const struct ds_schedule *s,
                                              const struct ds_op *op) {
  static const int64_t none[1] = {0};
  return s->deps ? s->deps + op->dep_first : none;
}

/* The previous iteration's last op of `kind` on each rank, as the
 * strategies' builders chain a new iteration after it (DDP, dp and single:
 * the optimizer step, after which the host launches the next forward): for
 * r < n_ranks, ids[r] = the id of rank r's last op of that kind in s, or -1
 * when it has none (a schedule of its own). One backward pass, stopping
 * once every rank has one. */
void ds_schedule_last_of_kind(const struct ds_schedule *s, enum ds_op_kind kind,
                              int32_t n_ranks, int64_t *ids);

/* The previous iteration's last op on `stream` on each rank, as
 * ds_schedule_last_of_kind: under --loop free the builders chain a new
 * iteration's first host op after the previous one's last host op (its
 * optimizer step's host work, sim/train/host.h, where it has any). */
void ds_schedule_last_on_stream(const struct ds_schedule *s, enum ds_stream stream,
                                int32_t n_ranks, int64_t *ids);

/* Finds the index of the op with the given id; returns 0 and sets *index
 * when found, -1 otherwise. Builds an index on first use (O(n log n)). */
int ds_schedule_find(struct ds_schedule *s, int64_t id, size_t *index);

/* Checks the structural invariants every executor relies on: world_size
 * >= 1, ids unique and >= 0, ranks in range, every dependency the id of an
 * op on the same rank that comes earlier in the schedule (so the schedule
 * order is a topological order), ops of one collective on distinct ranks,
 * of one kind and with equal bytes. On failure err names the op id. */
ds_status ds_schedule_validate(struct ds_schedule *s, struct ds_err *err);
/* The same; on failure *bad is the index of the op the message is about
 * (its row, for a reader that knows rows' lines), or SIZE_MAX. */
ds_status ds_schedule_validate_at(struct ds_schedule *s, size_t *bad, struct ds_err *err);

const char *ds_stream_name(enum ds_stream stream);
/* Returns 0 and sets *out when name is a stream name, -1 otherwise. */
int ds_stream_parse(const char *name, enum ds_stream *out);

const char *ds_op_kind_name(enum ds_op_kind kind);
int ds_op_kind_parse(const char *name, enum ds_op_kind *out);
/* 1 for collective kinds (allreduce, reduce, broadcast, ...), 0 otherwise. */
int ds_op_kind_is_collective(enum ds_op_kind kind);

#ifdef __cplusplus
}
#endif

#endif /* DS_SCHEDULE_H */
