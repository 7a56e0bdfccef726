/* The collectives' rules both replay devices check (real/schedule_check.c):
 * each rule refuses the op that breaks it, and a schedule every rank can
 * run in the same order passes. */
#include <criterion/criterion.h>
#include <string.h>

#include "real/schedule_check.h"

static const struct ds_coll_rules mpi_rules = {
    .device = "cpu", .comm_note = "", .group = "(MPI_COMM_WORLD)", .library = "MPI",
    .all_ranks = "", .max_floats = 2147483647.0};

static struct ds_op coll(int64_t id, int32_t rank, int64_t c, enum ds_op_kind kind,
                         int32_t root) {
  return (struct ds_op){.id = id, .rank = rank, .stream = DS_STREAM_COMM, .kind = kind,
                        .name = "b", .layer = -1, .bucket = 0, .coll = c, .root = root,
                        .algo = "", .bytes = 4096};
}

static ds_status check(struct ds_op *ops, size_t n, struct ds_err *err) {
  struct ds_schedule s = {.world_size = 2, .ops = ops, .n_ops = n};
  return ds_check_collectives(&s, 2, &mpi_rules, err);
}

Test(schedule_check, same_collectives_in_the_same_order_pass) {
  struct ds_op ops[] = {
      coll(0, 0, 7, DS_OP_ALLREDUCE, -1), coll(1, 1, 7, DS_OP_ALLREDUCE, -1),
      coll(2, 0, 8, DS_OP_BROADCAST, 1), coll(3, 1, 8, DS_OP_BROADCAST, 1),
      {.id = 4, .rank = 1, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "l",
       .coll = -1, .root = -1, .algo = ""},
  };
  struct ds_err err = {0};
  cr_assert_eq(check(ops, 5, &err), DS_OK, "%s", err.msg);
}

Test(schedule_check, a_different_order_is_refused_naming_both) {
  struct ds_op ops[] = {
      coll(0, 0, 7, DS_OP_ALLREDUCE, -1), coll(1, 0, 8, DS_OP_ALLREDUCE, -1),
      coll(2, 1, 8, DS_OP_ALLREDUCE, -1), coll(3, 1, 7, DS_OP_ALLREDUCE, -1),
  };
  struct ds_err err = {0};
  cr_assert_eq(check(ops, 4, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "op 2: rank 1's collective #1 is coll 8") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "rank 0's is coll 7") != NULL, "%s", err.msg);
  cr_assert(strstr(err.msg, "MPI would deadlock") != NULL, "%s", err.msg);
}

Test(schedule_check, a_rank_with_fewer_collectives_is_refused) {
  struct ds_op ops[] = {coll(0, 0, 7, DS_OP_ALLREDUCE, -1), coll(1, 0, 8, DS_OP_ALLREDUCE, -1),
                        coll(2, 1, 7, DS_OP_ALLREDUCE, -1)};
  struct ds_err err = {0};
  cr_assert_eq(check(ops, 3, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "rank 1 has 1 collectives but rank 0 has 2") != NULL, "%s",
            err.msg);
}

Test(schedule_check, each_op_rule_names_the_op) {
  struct {
    struct ds_op op;
    const char *says;
  } cases[] = {
      {coll(5, 0, 1, DS_OP_BROADCAST, 2), "op 5: broadcast needs a root rank from 0 to 1, got 2"},
      {coll(6, 0, 1, DS_OP_REDUCE, -1), "needs a root rank"},
      {{.id = 9, .rank = 0, .stream = DS_STREAM_COMM, .kind = DS_OP_SEND, .name = "s",
        .coll = -1, .root = -1, .algo = ""},
       "kind send is not supported by the cpu device"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct ds_err err = {0};
    cr_assert_eq(check(&cases[i].op, 1, &err), DS_EINPUT, "case %zu", i);
    cr_assert(strstr(err.msg, cases[i].says) != NULL, "case %zu: %s", i, err.msg);
  }
  struct ds_op on_compute = coll(3, 0, 1, DS_OP_ALLREDUCE, -1);
  on_compute.stream = DS_STREAM_COMPUTE;
  struct ds_err err = {0};
  cr_assert_eq(check(&on_compute, 1, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "comm stream only") != NULL, "%s", err.msg);
  struct ds_op huge = coll(4, 0, 1, DS_OP_ALLREDUCE, -1);
  huge.bytes = 4.0 * 2147483648.0; /* 2^31 floats: one more than an int counts */
  cr_assert_eq(check(&huge, 1, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "more floats than one MPI call takes") != NULL, "%s", err.msg);
  huge.bytes = 4.0 * 2147483647.0;
  struct ds_op pair[] = {huge, huge};
  pair[1].rank = 1;
  cr_assert_eq(check(pair, 2, &err), DS_OK, "%s", err.msg);
}

/* bytes past 1e18 (a size's bound) are refused for every device and for
 * copies too: the devices convert them to size_t counts, and 1e308 used to
 * convert to a small count (undefined), pass the MPI bound and replay an
 * allreduce of nothing with exit 0. */
Test(schedule_check, bytes_no_device_can_hold_are_refused) {
  struct ds_op big = coll(4, 0, 1, DS_OP_ALLREDUCE, -1);
  big.bytes = 1e308;
  struct ds_op pair[] = {big, big};
  pair[1].id = 5;
  pair[1].rank = 1;
  struct ds_err err = {0};
  cr_assert_eq(check(pair, 2, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "op 4: allreduce of 1e+308 bytes is more than a replay takes "
                            "(at most 1e+18 bytes)");
  struct ds_schedule s = {.world_size = 2, .ops = pair, .n_ops = 2};
  cr_assert_eq(ds_check_collectives(&s, 2, &ds_coll_rules_cuda, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "op 4: allreduce of 1e+308 bytes") != NULL, "%s", err.msg);
  struct ds_op copy = {.id = 7, .rank = 0, .stream = DS_STREAM_COPY, .kind = DS_OP_H2D,
                       .name = "in", .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                       .algo = "", .bytes = 2e18};
  cr_assert_eq(check(&copy, 1, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "op 7: h2d of 2e+18 bytes is more than a replay takes "
                            "(at most 1e+18 bytes)");
  copy.bytes = 1e18;
  cr_assert_eq(check(&copy, 1, &err), DS_OK, "%s", err.msg);
}
