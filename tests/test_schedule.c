/*
 * Tests for traces/schedule.c: the name tables, string interning, adding
 * and finding ops, and every rule of ds_schedule_validate, each broken once
 * with the message that must name the op and what is wrong.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "traces/schedule.h"

/* A compute op on `rank` with the given id; every optional field "none". */
static struct ds_op op_on(int64_t id, int32_t rank) {
  return (struct ds_op){.id = id, .rank = rank, .stream = DS_STREAM_COMPUTE,
                        .kind = DS_OP_FWD, .name = "layer", .layer = 0,
                        .bucket = -1, .coll = -1, .root = -1, .algo = "",
                        .bytes = 0, .flops = 1e9, .dur_us = 10};
}

/* A per-rank allreduce op of collective `coll`. */
static struct ds_op allreduce_on(int64_t id, int32_t rank, int64_t coll,
                                 double bytes) {
  struct ds_op o = op_on(id, rank);
  o.stream = DS_STREAM_COMM;
  o.kind = DS_OP_ALLREDUCE;
  o.name = "bucket0";
  o.layer = -1;
  o.bucket = 0;
  o.coll = coll;
  o.algo = "ring";
  o.bytes = bytes;
  o.flops = 0;
  return o;
}

static void add(struct ds_schedule *s, struct ds_op o, const int64_t *deps,
                size_t n) {
  cr_assert_eq(ds_schedule_add(s, &o, deps, n, NULL), DS_OK);
}

/* Expects validate to fail with DS_EINPUT and a message containing want. */
static void expect_invalid(struct ds_schedule *s, const char *want) {
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_validate(s, &err), DS_EINPUT,
               "expected a failure mentioning \"%s\"", want);
  cr_assert(strstr(err.msg, want), "message \"%s\" lacks \"%s\"", err.msg, want);
}

/* A valid two-rank iteration: fwd -> bwd -> allreduce -> step per rank.
 * Ids: rank r uses 10r .. 10r+3. */
static struct ds_schedule *two_rank_iteration(void) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  for (int32_t r = 0; r < 2; r++) {
    int64_t b = 10 * r;
    struct ds_op bwd = op_on(b + 1, r);
    bwd.kind = DS_OP_BWD;
    struct ds_op step = op_on(b + 3, r);
    step.kind = DS_OP_STEP;
    add(s, op_on(b, r), NULL, 0);
    add(s, bwd, (int64_t[]){b}, 1);
    add(s, allreduce_on(b + 2, r, 0, 26214400), (int64_t[]){b + 1}, 1);
    add(s, step, (int64_t[]){b + 1, b + 2}, 2);
  }
  return s;
}

/* Every stream and kind name parses back to its enum, because the writer
 * and reader of schedule files rely on the two tables being inverses. */
Test(schedule, names_round_trip) {
  for (int i = 0; i < DS_STREAM_COUNT; i++) {
    enum ds_stream st;
    cr_assert_eq(ds_stream_parse(ds_stream_name((enum ds_stream)i), &st), 0);
    cr_assert_eq((int)st, i);
  }
  for (int i = 0; i < DS_OP_KIND_COUNT; i++) {
    enum ds_op_kind k;
    cr_assert_eq(ds_op_kind_parse(ds_op_kind_name((enum ds_op_kind)i), &k), 0);
    cr_assert_eq((int)k, i);
  }
  enum ds_stream st = DS_STREAM_HOST;
  enum ds_op_kind k = DS_OP_PULL;
  cr_assert_eq(ds_stream_parse("Compute", &st), -1); /* names are exact */
  cr_assert_eq(ds_op_kind_parse("all-reduce", &k), -1);
  cr_assert_eq(st, DS_STREAM_HOST, "a refused name leaves *out alone");
  cr_assert_str_eq(ds_stream_name(DS_STREAM_COMM), "comm");
  cr_assert_str_eq(ds_op_kind_name(DS_OP_REDUCESCATTER), "reducescatter");
}

/* The collective flag comes from the X-macro: the seven collectives only. */
Test(schedule, collective_kinds) {
  int n = 0;
  for (int i = 0; i < DS_OP_KIND_COUNT; i++)
    n += ds_op_kind_is_collective((enum ds_op_kind)i);
  cr_assert_eq(n, 7);
  cr_assert(ds_op_kind_is_collective(DS_OP_ALLREDUCE));
  cr_assert(ds_op_kind_is_collective(DS_OP_BROADCAST));
  cr_assert(!ds_op_kind_is_collective(DS_OP_SEND));
  cr_assert(!ds_op_kind_is_collective(DS_OP_FWD));
}

/* Equal strings share one copy, NULL interns as "", and a pointer handed out
 * stays valid (same address, same text) after the table grew many times,
 * because strings live in chunks that never move. */
Test(schedule, intern_shares_and_keeps_pointers) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  char buf[32] = "conv1";
  const char *a, *b, *e;
  cr_assert_eq(ds_schedule_intern(s, buf, &a), DS_OK);
  strcpy(buf, "changed");
  cr_assert_str_eq(a, "conv1", "the table holds a copy, not the caller's buffer");
  cr_assert_eq(ds_schedule_intern(s, "conv1", &b), DS_OK);
  cr_assert_eq(a, b);
  cr_assert_eq(ds_schedule_intern(s, NULL, &e), DS_OK);
  cr_assert_str_eq(e, "");
  for (int i = 0; i < 100000; i++) {
    const char *p;
    snprintf(buf, sizeof buf, "name%d", i);
    cr_assert_eq(ds_schedule_intern(s, buf, &p), DS_OK);
  }
  cr_assert_eq(ds_schedule_intern(s, "conv1", &b), DS_OK);
  cr_assert_eq(a, b);
  cr_assert_str_eq(a, "conv1");
  cr_assert_eq(ds_schedule_intern(s, "name99999", &b), DS_OK);
  cr_assert_str_eq(b, "name99999");
  ds_schedule_free(s);
}

/* add copies the op, interns its strings, ignores the caller's dep_first /
 * dep_count and lays dependencies out contiguously. */
Test(schedule, add_copies_and_lays_out_deps) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  char name[] = "fc";
  struct ds_op o = op_on(5, 0);
  o.name = name;
  o.algo = NULL;
  o.dep_first = 77;
  o.dep_count = 99;
  size_t idx = 123;
  cr_assert_eq(ds_schedule_add(s, &o, NULL, 0, &idx), DS_OK);
  cr_assert_eq(idx, 0);
  o.id = 6;
  cr_assert_eq(ds_schedule_add(s, &o, (int64_t[]){5}, 1, &idx), DS_OK);
  cr_assert_eq(idx, 1);
  o.id = 7;
  cr_assert_eq(ds_schedule_add(s, &o, (int64_t[]){5, 6}, 2, NULL), DS_OK);
  name[0] = 'X';
  cr_assert_eq(s->n_ops, 3);
  cr_assert_str_eq(s->ops[0].name, "fc");
  cr_assert_str_eq(s->ops[0].algo, "", "NULL algo is stored as \"\"");
  cr_assert_eq(s->ops[0].dep_count, 0);
  cr_assert_eq(s->ops[1].dep_first, 0);
  cr_assert_eq(s->ops[1].dep_count, 1);
  cr_assert_eq(s->ops[2].dep_first, 1);
  cr_assert_eq(s->ops[2].dep_count, 2);
  const int64_t *d = ds_schedule_deps(s, &s->ops[2]);
  cr_assert_eq(d[0], 5);
  cr_assert_eq(d[1], 6);
  cr_assert_eq(s->n_deps, 3);
  ds_schedule_free(s);
}

/* Adding an op copied from the schedule itself, with deps from its own
 * array, works although both arrays may move while growing. */
Test(schedule, add_from_own_arrays) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  add(s, op_on(0, 0), NULL, 0);
  add(s, op_on(1, 0), (int64_t[]){0}, 1);
  for (int64_t i = 2; i < 1000; i++) {
    struct ds_op *last = &s->ops[s->n_ops - 1];
    cr_assert_eq(ds_schedule_add(s, last, ds_schedule_deps(s, last), 1, NULL),
                 DS_OK);
    s->ops[s->n_ops - 1].id = i;
  }
  for (size_t i = 1; i < s->n_ops; i++)
    cr_assert_eq(ds_schedule_deps(s, &s->ops[i])[0], 0);
  ds_schedule_free(s);
}

/* A builder that knows its size reserves it (ds_schedule_reserve): the
 * arrays hold exactly that, and appends up to it neither move nor grow
 * them (doubling would have made room for 1024 ops where 1000 are used);
 * one past it grows as before. */
Test(schedule, reserve_makes_exactly_the_room_asked_for) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  cr_assert_eq(ds_schedule_reserve(s, 1000, 999), DS_OK);
  cr_assert_eq(s->cap_ops, 1000);
  cr_assert_eq(s->cap_deps, 999);
  const struct ds_op *ops = s->ops;
  const int64_t *deps = s->deps;
  add(s, op_on(0, 0), NULL, 0);
  for (int64_t i = 1; i < 1000; i++) add(s, op_on(i, 0), (int64_t[]){i - 1}, 1);
  cr_assert_eq(s->ops, ops);
  cr_assert_eq(s->deps, deps);
  cr_assert_eq(s->cap_ops, 1000);
  /* reserving less than it holds changes nothing */
  cr_assert_eq(ds_schedule_reserve(s, 10, 10), DS_OK);
  cr_assert_eq(s->cap_ops, 1000);
  add(s, op_on(1000, 0), (int64_t[]){999}, 1);
  cr_assert_gt(s->cap_ops, 1000);
  cr_assert_eq(ds_schedule_deps(s, &s->ops[1000])[0], 999);
  ds_schedule_free(s);
}

/* find works on unsorted ids, misses cleanly, and sees ops added after the
 * index was built (add invalidates it). */
Test(schedule, find_by_id) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  size_t idx = 0;
  cr_assert_eq(ds_schedule_find(s, 0, &idx), -1, "empty schedule");
  int64_t ids[] = {40, 10, 30, 20};
  for (size_t i = 0; i < 4; i++) add(s, op_on(ids[i], 0), NULL, 0);
  for (size_t i = 0; i < 4; i++) {
    cr_assert_eq(ds_schedule_find(s, ids[i], &idx), 0);
    cr_assert_eq(idx, i);
  }
  cr_assert_eq(ds_schedule_find(s, 25, &idx), -1);
  cr_assert_eq(ds_schedule_find(s, 50, &idx), -1);
  cr_assert_eq(ds_schedule_find(s, -1, &idx), -1);
  add(s, op_on(25, 0), NULL, 0);
  cr_assert_eq(ds_schedule_find(s, 25, &idx), 0, "index rebuilt after add");
  cr_assert_eq(idx, 4);
  ds_schedule_free(s);
}

/* Ids at the ends of int64_t: the check whether ids run densely from the
 * first (ops[0].id + i) is done in uint64_t, since INT64_MAX + 1 overflows
 * int64_t (the sanitizer build stopped here before); both ops are found,
 * in either order, and ids missing are not. */
Test(schedule, find_by_id_at_the_ends_of_int64) {
  static const int64_t cases[][2] = {
      {INT64_MAX, 0}, {INT64_MAX, INT64_MIN}, {INT64_MIN, INT64_MAX}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    struct ds_schedule *s;
    cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
    for (size_t i = 0; i < 2; i++) add(s, op_on(cases[c][i], 0), NULL, 0);
    size_t idx = 9;
    for (size_t i = 0; i < 2; i++) {
      cr_assert_eq(ds_schedule_find(s, cases[c][i], &idx), 0, "case %zu id %zu", c, i);
      cr_assert_eq(idx, i, "case %zu", c);
    }
    cr_assert_eq(ds_schedule_find(s, 1, &idx), -1, "case %zu", c);
    cr_assert_eq(ds_schedule_find(s, INT64_MAX - 1, &idx), -1, "case %zu", c);
    ds_schedule_free(s);
  }
}

/* The two-rank iteration satisfies every rule. */
Test(schedule, validate_accepts_a_good_schedule) {
  struct ds_schedule *s = two_rank_iteration();
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
  ds_schedule_free(s);
}

/* An empty schedule is valid (nothing to run); a world of 0 ranks is not. */
Test(schedule, validate_world_size) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  cr_assert_eq(ds_schedule_validate(s, NULL), DS_OK);
  s->world_size = 0;
  expect_invalid(s, "world size 0 must be >= 1");
  ds_schedule_free(s);
}

/* Two ops with id 11: executors find ops by id, so ids must be unique. */
Test(schedule, validate_duplicate_id) {
  struct ds_schedule *s = two_rank_iteration();
  add(s, op_on(11, 1), NULL, 0);
  expect_invalid(s, "op 11: id is used twice");
  ds_schedule_free(s);
}

/* Op 4 on rank 0 depends on op 10 of rank 1: cross-rank edges come only
 * from collectives, so this is refused and the message names both ranks. */
Test(schedule, validate_dep_on_other_rank) {
  struct ds_schedule *s = two_rank_iteration();
  add(s, op_on(4, 0), (int64_t[]){3, 10}, 2);
  expect_invalid(s, "op 4: dependency 10 is not an op of rank 0 that comes "
                    "earlier (it is on rank 1)");
  ds_schedule_free(s);
}

/* A dependency on an op later in the schedule would break the promise that
 * schedule order is a topological order. */
Test(schedule, validate_dep_on_later_op) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  add(s, op_on(1, 0), (int64_t[]){2}, 1);
  add(s, op_on(2, 0), NULL, 0);
  expect_invalid(s, "op 1: dependency 2 is not an op of rank 0 that comes "
                    "earlier (it comes later in the schedule)");
  ds_schedule_free(s);
}

/* Unknown ids and self-dependencies are refused with their own reason. */
Test(schedule, validate_dep_unknown_or_self) {
  struct ds_schedule *s = two_rank_iteration();
  add(s, op_on(17, 1), (int64_t[]){99}, 1);
  expect_invalid(s, "op 17: dependency 99 is not an op of rank 1 that comes "
                    "earlier (no op has that id)");
  ds_schedule_free(s);
  s = two_rank_iteration();
  add(s, op_on(17, 1), (int64_t[]){17}, 1);
  expect_invalid(s, "op 17: dependency 17 is not an op of rank 1 that comes "
                    "earlier (it is the op itself)");
  ds_schedule_free(s);
}

/* Ranks must lie in 0..world_size-1, since executors index per-rank arrays. */
Test(schedule, validate_bad_rank) {
  struct ds_schedule *s = two_rank_iteration();
  add(s, op_on(20, 2), NULL, 0);
  expect_invalid(s, "op 20: rank 2 is outside 0..1 (world size 2)");
  ds_schedule_free(s);
  s = two_rank_iteration();
  add(s, op_on(20, -1), NULL, 0);
  expect_invalid(s, "op 20: rank -1 is outside 0..1");
  ds_schedule_free(s);
}

/* Negative ids are reserved (-1 means "none" in coll). */
Test(schedule, validate_negative_id) {
  struct ds_schedule *s = two_rank_iteration();
  add(s, op_on(-5, 0), NULL, 0);
  expect_invalid(s, "op -5: id must be >= 0");
  ds_schedule_free(s);
}

/* Collective 0 with 26214400 bytes on rank 0 and 1000 on rank 1: a ring
 * all-reduce moves the same payload on every member, so this is refused. */
Test(schedule, validate_collective_bytes_mismatch) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  add(s, allreduce_on(1, 0, 0, 26214400), NULL, 0);
  add(s, allreduce_on(2, 1, 0, 1000), NULL, 0);
  expect_invalid(s, "op 2: collective 0 has 1000 bytes here but 26214400 in "
                    "op 1");
  ds_schedule_free(s);
}

/* One collective may not have two ops on one rank, nor mix kinds. */
Test(schedule, validate_collective_rank_and_kind) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  add(s, allreduce_on(1, 0, 3, 64), NULL, 0);
  add(s, allreduce_on(2, 0, 3, 64), NULL, 0);
  expect_invalid(s, "op 2: collective 3 already has op 1 on rank 0");
  ds_schedule_free(s);

  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  struct ds_op bc = allreduce_on(2, 1, 3, 64);
  bc.kind = DS_OP_BROADCAST;
  bc.root = 0;
  add(s, allreduce_on(1, 0, 3, 64), NULL, 0);
  add(s, bc, NULL, 0);
  expect_invalid(s, "op 2: collective 3 is a broadcast but op 1 of it is a "
                    "allreduce");
  ds_schedule_free(s);
}

/* A collective kind without a coll id could not be matched with its peers
 * by any executor. */
Test(schedule, validate_collective_needs_coll) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  add(s, allreduce_on(1, 0, -1, 64), NULL, 0);
  expect_invalid(s, "op 1: allreduce is a collective and needs a coll id");
  ds_schedule_free(s);
}

/* Payloads and durations feed time computations: negative or non-finite
 * values are refused, and so is a root outside the world. */
Test(schedule, validate_numbers_and_root) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  struct ds_op o = op_on(1, 0);
  o.dur_us = -1;
  add(s, o, NULL, 0);
  expect_invalid(s, "op 1: bytes, flops and dur_us must be finite and >= 0");
  ds_schedule_free(s);

  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  o = allreduce_on(1, 0, 0, 8);
  o.root = 2;
  add(s, o, NULL, 0);
  expect_invalid(s, "op 1: root 2 is neither -1 nor a rank below 2");
  ds_schedule_free(s);
}

/* 2 million ops (a chain per rank over 8 ranks, 64 distinct names): what
 * keeps adding, indexing and validating them O(n log n) is checked on the
 * structures, not on a clock (this machine is shared; its speed is
 * bench/'s business): arrays grow by doubling (capacity under twice the
 * count: amortised O(1) appends), names are interned (64 distinct
 * pointers), and the id index is built once, dense (ids in build order:
 * a lookup is a subtraction) and not rebuilt by later lookups. */
Test(schedule, two_million_ops_scale) {
  enum { N = 2000000, RANKS = 8 };
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(RANKS, &s), DS_OK);
  char name[16];
  for (int64_t i = 0; i < N; i++) {
    struct ds_op o = op_on(i, (int32_t)(i % RANKS));
    snprintf(name, sizeof name, "layer%d", (int)(i % 64));
    o.name = name;
    int64_t dep = i - RANKS;
    cr_assert_eq(ds_schedule_add(s, &o, &dep, i >= RANKS, NULL), DS_OK);
  }
  cr_assert_eq(s->n_ops, (size_t)N);
  cr_assert_eq(s->n_deps, (size_t)N - RANKS);
  cr_assert(s->cap_ops >= s->n_ops && s->cap_ops < 2 * s->n_ops, "cap %zu", s->cap_ops);
  cr_assert(s->cap_deps >= s->n_deps && s->cap_deps < 2 * s->n_deps, "cap %zu", s->cap_deps);
  const char *names[64] = {0};
  for (int i = 0; i < 64; i++) names[i] = s->ops[i].name;
  for (int64_t i = 0; i < N; i++)
    cr_assert_eq(s->ops[i].name, names[i % 64], "op %lld: not interned", (long long)i);
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
  size_t idx;
  cr_assert_eq(ds_schedule_find(s, N - 1, &idx), 0);
  cr_assert_eq(idx, (size_t)N - 1);
  cr_assert_eq(s->n_sorted, (size_t)N);
  cr_assert_eq(s->ids_dense, 1);
  const int64_t *index = s->sorted_ids;
  cr_assert_eq(ds_schedule_find(s, 12345, &idx), 0);
  cr_assert_eq(idx, 12345);
  cr_assert_eq(s->sorted_ids, index, "a lookup rebuilt the index");
  ds_schedule_free(s);
}

Test(schedule, last_of_kind_finds_each_ranks_previous_step) {
  /* The builders chain an iteration after each rank's last step already in
   * the schedule (DDP per rank, dp and single rank 0's). Ops in order:
   * step 5 on rank 0, step 7 on rank 1, a forward on rank 2, step 9 on rank
   * 0 again: rank 0's last is 9, rank 1's 7, rank 2 has none (-1); a rank
   * past the schedule's is -1 too. */
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(4, &s), DS_OK);
  const struct { int64_t id; int32_t rank; enum ds_op_kind kind; } ops[] = {
      {5, 0, DS_OP_STEP}, {7, 1, DS_OP_STEP}, {8, 2, DS_OP_FWD}, {9, 0, DS_OP_STEP}};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    struct ds_op o = op_on(ops[i].id, ops[i].rank);
    o.kind = ops[i].kind;
    cr_assert_eq(ds_schedule_add(s, &o, NULL, 0, NULL), DS_OK);
  }
  int64_t ids[4];
  ds_schedule_last_of_kind(s, DS_OP_STEP, 4, ids);
  cr_assert_eq(ids[0], 9);
  cr_assert_eq(ids[1], 7);
  cr_assert_eq(ids[2], -1);
  cr_assert_eq(ids[3], -1);
  ds_schedule_last_of_kind(s, DS_OP_STEP, 1, ids);
  cr_assert_eq(ids[0], 9);
  ds_schedule_free(s);
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK); /* a schedule of its own */
  ds_schedule_last_of_kind(s, DS_OP_STEP, 1, ids);
  cr_assert_eq(ids[0], -1);
  ds_schedule_free(s);
}

Test(schedule, last_on_stream_finds_each_ranks_last_host_op) {
  /* --loop free chains an iteration after each rank's last host op. Ops in
   * order: host 5 and compute 6 on rank 0, host 7 on rank 1, compute 8 on
   * rank 1: rank 0's last host op is 5 (the later compute op is not), rank
   * 1's 7, rank 2 has none (-1). */
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(3, &s), DS_OK);
  const struct { int64_t id; int32_t rank; enum ds_stream stream; } ops[] = {
      {5, 0, DS_STREAM_HOST}, {6, 0, DS_STREAM_COMPUTE}, {7, 1, DS_STREAM_HOST},
      {8, 1, DS_STREAM_COMPUTE}};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    struct ds_op o = op_on(ops[i].id, ops[i].rank);
    o.stream = ops[i].stream;
    cr_assert_eq(ds_schedule_add(s, &o, NULL, 0, NULL), DS_OK);
  }
  int64_t ids[3];
  ds_schedule_last_on_stream(s, DS_STREAM_HOST, 3, ids);
  cr_assert_eq(ids[0], 5);
  cr_assert_eq(ids[1], 7);
  cr_assert_eq(ids[2], -1);
  ds_schedule_last_on_stream(s, DS_STREAM_COMPUTE, 3, ids);
  cr_assert_eq(ids[0], 6);
  cr_assert_eq(ids[1], 8);
  ds_schedule_free(s);
}

Test(schedule, find_on_gapped_ids_gives_the_first_op_of_each_id) {
  /* Ids sorted with gaps (a shared template's: one rank class's ops) take
   * the id_slot table; out of order they take it too. With an id twice the
   * first op (by position) is found, as the binary search found it. */
  const int64_t ids[] = {10, 12, 13, 13, 17, 20, 11};
  const size_t n = sizeof ids / sizeof *ids;
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  for (size_t i = 0; i < n; i++) {
    struct ds_op o = op_on(ids[i], 0);
    cr_assert_eq(ds_schedule_add(s, &o, NULL, 0, NULL), DS_OK);
  }
  size_t idx = 99;
  cr_assert_eq(ds_schedule_find(s, 13, &idx), 0);
  cr_assert_eq(idx, 2, "id 13: op %zu", idx);
  cr_assert_neq(s->id_slot, NULL, "span 11 over 7 ops: the table");
  cr_assert_eq(ds_schedule_find(s, 20, &idx), 0);
  cr_assert_eq(idx, 5);
  cr_assert_eq(ds_schedule_find(s, 11, &idx), 0);
  cr_assert_eq(idx, 6);
  cr_assert_eq(ds_schedule_find(s, 10, &idx), 0);
  cr_assert_eq(idx, 0);
  const int64_t absent[] = {9, 14, 15, 16, 18, 19, 21, INT64_MIN, INT64_MAX};
  for (size_t k = 0; k < sizeof absent / sizeof *absent; k++)
    cr_assert_eq(ds_schedule_find(s, absent[k], &idx), -1, "id %lld found", (long long)absent[k]);
  /* ids too far apart for a table: the binary search answers */
  struct ds_op far = op_on(1000, 0);
  cr_assert_eq(ds_schedule_add(s, &far, NULL, 0, NULL), DS_OK);
  cr_assert_eq(ds_schedule_find(s, 1000, &idx), 0);
  cr_assert_eq(s->id_slot, NULL, "span 991 over 8 ops: no table");
  cr_assert_eq(idx, 7);
  cr_assert_eq(ds_schedule_find(s, 13, &idx), 0);
  cr_assert_eq(idx, 2);
  cr_assert_eq(ds_schedule_find(s, 14, &idx), -1);
  ds_schedule_free(s);
}
