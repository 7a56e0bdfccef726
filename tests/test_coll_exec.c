/*
 * The executor (sim/train/exec.c) running every collective kind and send/recv
 * from hand-built schedules, at hand-computed times; contention between a
 * broadcast and an all-reduce running at once; and what it refuses.
 *
 * tiny-topo: 4 GPUs on one switch, 10 GB/s and 1 us per link: a hop is
 * alpha = 2 us, B = 10 bytes/ns. Every rank runs fwd (10 us), then the
 * collective (comm stream, after fwd), then step (5 us, after it).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/coll.h"
#include "sim/coll/nccl_model.h"
#include "sim/train/exec.h"
#include "sim/net/topo.h"
#include "traces/schedule.h"

struct sim {
  struct ds_topo *topo;
  struct ds_schedule *s;
  int64_t start[64], end[64], rank_time[8];
};

static void setup(struct sim *x, int32_t world) {
  struct ds_err err = {0};
  memset(x, 0, sizeof *x);
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &x->topo, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_schedule_new(world, &x->s), DS_OK);
}

static void add(struct sim *x, int64_t id, int32_t rank, enum ds_stream stream,
                enum ds_op_kind kind, int64_t coll, int32_t root, double bytes, double dur_us,
                const char *algo, int64_t dep) {
  struct ds_op o = {.id = id, .rank = rank, .stream = stream, .kind = kind, .name = "op",
                    .layer = -1, .bucket = -1, .coll = coll, .root = root, .algo = algo,
                    .bytes = bytes, .dur_us = dur_us};
  cr_assert_eq(ds_schedule_add(x->s, &o, &dep, dep >= 0 ? 1 : 0, NULL), DS_OK);
}

static ds_status run(struct sim *x, struct ds_err *err) {
  struct ds_exec_options opt = {.net_mode = DS_NET_MAXMIN, .coll_model = DS_COLL_FLOW,
                                .ring_chunks = 1, .nccl = NULL};
  struct ds_exec *ex = NULL;
  cr_assert_eq(ds_schedule_validate(x->s, err), DS_OK, "%s", err->msg);
  cr_assert_eq(ds_exec_new(x->topo, &opt, &ex, err), DS_OK);
  ds_status st = ds_exec_run(ex, x->s, x->rank_time, x->start, x->end, err);
  ds_exec_free(ex);
  return st;
}

static void done(struct sim *x) {
  ds_schedule_free(x->s);
  ds_topo_free(x->topo);
}

/* fwd (id 10r), the collective (10r+1), step (10r+2) on each of 4 ranks. */
static void build(struct sim *x, enum ds_op_kind kind, int32_t root, double bytes,
                  const char *algo) {
  setup(x, 4);
  for (int32_t r = 0; r < 4; r++) {
    add(x, 10 * r, r, DS_STREAM_COMPUTE, DS_OP_FWD, -1, -1, 0, 10, "", -1);
    add(x, 10 * r + 1, r, DS_STREAM_COMM, kind, 7, root, bytes, 0, algo, 10 * r);
    add(x, 10 * r + 2, r, DS_STREAM_COMPUTE, DS_OP_STEP, -1, -1, 0, 5, "", 10 * r + 1);
  }
}

Test(coll_exec, every_kind_at_hand_computed_times) {
  /* S = 1.2 MB; every collective starts at 10 us on every rank; times
   * below are after that (us), per rank 0..3. Expected, because:
   *   allreduce: 2(N-1) alpha + 2(N-1)/N S/B = 12 + 180 = 192 everywhere;
   *   allgather, reducescatter: (N-1) alpha + (N-1)/N S/B = 6 + 90 = 96;
   *   broadcast root 0: 1.2 MB is NCCL's 512 KiB steps, two whole pieces
   *     (P = 524288 B, p = 52.4288 us) and the rest (151424 B, r =
   *     15.1424 us), which trails them; position p has sent its last piece
   *     at p (p + alpha) + 2p + r = 120, 174.4288, 228.8576 and the last
   *     one received it at 3 alpha + 4p + r = 230.8576 (each piece's time
   *     rounded to the ns: within 3 ns);
   *   reduce root 2: the chain 3, 0, 1, 2: rank 3 120, rank 0 174.4288,
   *     rank 1 228.8576, the root 230.8576;
   *   gather root 1, scatter root 3: three flows of S/N = 300 KB share
   *     the root's link, which carries 900 KB: alpha + 90 = 92. */
  const struct {
    enum ds_op_kind kind;
    int32_t root;
    double after_us[4];
  } cases[] = {
      {DS_OP_ALLREDUCE, -1, {192, 192, 192, 192}},
      {DS_OP_ALLGATHER, -1, {96, 96, 96, 96}},
      {DS_OP_REDUCESCATTER, -1, {96, 96, 96, 96}},
      {DS_OP_BROADCAST, 0, {120, 174.4288, 228.8576, 230.8576}},
      {DS_OP_REDUCE, 2, {174.4288, 228.8576, 230.8576, 120}},
      {DS_OP_GATHER, 1, {92, 92, 92, 92}},
      {DS_OP_SCATTER, 3, {92, 92, 92, 92}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    struct sim x;
    struct ds_err err = {0};
    build(&x, cases[c].kind, cases[c].root, 1.2e6, "");
    cr_assert_eq(run(&x, &err), DS_OK, "%s: %s", ds_op_kind_name(cases[c].kind), err.msg);
    for (int32_t r = 0; r < 4; r++) {
      size_t i = (size_t)r * 3;
      double want_ns = (10 + cases[c].after_us[r]) * 1000;
      int64_t end_ns = x.end[i + 1];
      cr_assert_eq(x.start[i + 1], 10000, "%s rank %d", ds_op_kind_name(cases[c].kind), r);
      cr_assert_leq(fabs((double)end_ns - want_ns), 3, "%s rank %d: %lld, expected %.1f",
                    ds_op_kind_name(cases[c].kind), r, (long long)end_ns, want_ns);
      cr_assert_eq(x.end[i + 2], end_ns + 5000);
      cr_assert_eq(x.rank_time[r], end_ns + 5000);
    }
    done(&x);
  }
}

Test(coll_exec, send_recv_pairs_in_order) {
  /* Rank 0 sends 1.2 MB then 0.4 MB to rank 3 (its comm stream, in order);
   * rank 3 receives them in the same order; rank 1 sends 0.6 MB to rank 2
   * meanwhile, over other links. Expected, because a pair starts when both
   * ops have started and takes alpha + S/B: 0->3 first: 10 + 2 + 120 =
   * 132 us; second: 132 + 2 + 40 = 174 us; 1->2: 10 + 2 + 60 = 72 us. */
  struct sim x;
  struct ds_err err = {0};
  setup(&x, 4);
  for (int32_t r = 0; r < 4; r++)
    add(&x, 10 * r, r, DS_STREAM_COMPUTE, DS_OP_FWD, -1, -1, 0, 10, "", -1);
  add(&x, 1, 0, DS_STREAM_COMM, DS_OP_SEND, -1, 3, 1.2e6, 0, "", 0);
  add(&x, 2, 0, DS_STREAM_COMM, DS_OP_SEND, -1, 3, 0.4e6, 0, "", -1);
  add(&x, 11, 1, DS_STREAM_COMM, DS_OP_SEND, -1, 2, 0.6e6, 0, "", 10);
  add(&x, 21, 2, DS_STREAM_COMM, DS_OP_RECV, -1, 1, 0.6e6, 0, "", 20);
  add(&x, 31, 3, DS_STREAM_COMM, DS_OP_RECV, -1, 0, 1.2e6, 0, "", 30);
  add(&x, 32, 3, DS_STREAM_COMM, DS_OP_RECV, -1, 0, 0.4e6, 0, "", -1);
  cr_assert_eq(run(&x, &err), DS_OK, "%s", err.msg);
  const int64_t want_end[] = {10000, 10000, 10000, 10000, 132000, 174000,
                              72000, 72000, 132000, 174000};
  const int64_t ids[] = {0, 10, 20, 30, 1, 2, 11, 21, 31, 32};
  for (size_t k = 0; k < sizeof ids / sizeof *ids; k++) {
    size_t i;
    cr_assert_eq(ds_schedule_find(x.s, ids[k], &i), 0);
    cr_assert_eq(x.end[i], want_end[k], "op %lld: %lld vs %lld", (long long)ids[k],
                 (long long)x.end[i], (long long)want_end[k]);
  }
  done(&x);
}

Test(coll_exec, broadcast_and_allreduce_contend) {
  /* Ranks 0 and 1: an all-reduce of 20 MB (comm stream) and a broadcast of
   * 10 MB from rank 0 (copy stream) start together at 10 us. The
   * all-reduce's two steps move 10 MB each way; the broadcast's 20 pieces
   * (19 of 512 KiB and the rest, 38528 B) go 0 -> 1 one after another.
   * Hand-solved max-min (each piece ends on a rounded ns, 104857.6 ns at
   * 5 GB/s: within 10 ns):
   *   - GPU 0's uplink (and GPU 1's downlink) carries the all-reduce's
   *     0 -> 1 step and the broadcast: 5 GB/s each, both done at +2 ms;
   *     1 -> 0 has its links alone: done at +1 ms;
   *   - broadcast: root done at +2 ms, rank 1 at +2.002 ms (last chunk's
   *     latency);
   *   - all-reduce: rank 0's second step starts at +2 ms (its link frees,
   *     it had 1 -> 0's data at +1.002 ms), alone: sent at +3 ms, at rank
   *     1 at +3.002; rank 1's second step starts when it has rank 0's
   *     first (+2.002), sent +3.002, at rank 0 at +3.004 ms.
   * Alone the all-reduce would take 2 alpha + S/B = 2.004 ms: contention
   * costs it 1 ms. */
  struct sim x;
  struct ds_err err = {0};
  setup(&x, 2);
  for (int32_t r = 0; r < 2; r++) {
    add(&x, 10 * r, r, DS_STREAM_COMPUTE, DS_OP_FWD, -1, -1, 0, 10, "", -1);
    add(&x, 10 * r + 1, r, DS_STREAM_COMM, DS_OP_ALLREDUCE, 1, -1, 20e6, 0, "ring", 10 * r);
    add(&x, 10 * r + 2, r, DS_STREAM_COPY, DS_OP_BROADCAST, 2, 0, 10e6, 0, "", 10 * r);
  }
  cr_assert_eq(run(&x, &err), DS_OK, "%s", err.msg);
  cr_assert_leq(llabs(x.end[1] - 3014000), 10, "allreduce rank 0: %lld", (long long)x.end[1]);
  cr_assert_leq(llabs(x.end[4] - 3012000), 10, "allreduce rank 1: %lld", (long long)x.end[4]);
  cr_assert_leq(llabs(x.end[2] - 2010000), 10, "broadcast root: %lld", (long long)x.end[2]);
  cr_assert_leq(llabs(x.end[5] - 2012000), 10, "broadcast rank 1: %lld", (long long)x.end[5]);
  cr_log_info("ends %lld %lld %lld %lld", (long long)x.end[1], (long long)x.end[4],
              (long long)x.end[2], (long long)x.end[5]);
  done(&x);
}

Test(coll_exec, allreduce_algorithms_by_name) {
  /* The schedule's algo picks the all-reduce algorithm (tiny-topo: 4 GPUs on
   * a switch, alpha = 2 us, B = 10 GB/s; S = 1.2 MB; after the 10 us fwd):
   *   direct: 2 alpha + 2(N-1)/N S/B = 4 + 180 = 184 us;
   *   reduce-broadcast (root rank 0): 2 alpha + 2(N-1) S/B = 4 + 720 = 724 us
   *     for the others; the root is done when its last byte has left, one
   *     alpha earlier (722 us);
   *   hierarchical on one node: ring reduce-scatter + all-gather, the ring's
   *     2(N-1) alpha + 2(N-1)/N S/B = 192 us. */
  const struct {
    const char *algo;
    int64_t after_us[4];
  } cases[] = {{"direct", {184, 184, 184, 184}},
               {"reduce-broadcast", {722, 724, 724, 724}},
               {"hierarchical", {192, 192, 192, 192}}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    struct sim x;
    struct ds_err err = {0};
    build(&x, DS_OP_ALLREDUCE, -1, 1.2e6, cases[c].algo);
    cr_assert_eq(run(&x, &err), DS_OK, "%s: %s", cases[c].algo, err.msg);
    for (int32_t r = 0; r < 4; r++)
      cr_assert_eq(x.end[(size_t)r * 3 + 1], (10 + cases[c].after_us[r]) * 1000, "%s rank %d: %lld",
                   cases[c].algo, r, (long long)x.end[(size_t)r * 3 + 1]);
    done(&x);
  }
}

Test(coll_exec, two_direct_allreduces_share_the_links) {
  /* Two direct all-reduces of 1.2 MB on all 4 ranks (comm and copy
   * streams), both starting after the 10 us fwd. Alone each takes
   * 2 alpha + 2(N-1)/N S/B = 184 us; together every link carries both
   * instances' shards, symmetric, so every flow gets half its rate:
   * 2 alpha + 2 x 2(N-1)/N S/B = 4 + 360 = 364 us, for both. */
  struct sim x;
  struct ds_err err = {0};
  setup(&x, 4);
  for (int32_t r = 0; r < 4; r++) {
    add(&x, 10 * r, r, DS_STREAM_COMPUTE, DS_OP_FWD, -1, -1, 0, 10, "", -1);
    add(&x, 10 * r + 1, r, DS_STREAM_COMM, DS_OP_ALLREDUCE, 1, -1, 1.2e6, 0, "direct", 10 * r);
    add(&x, 10 * r + 2, r, DS_STREAM_COPY, DS_OP_ALLREDUCE, 2, -1, 1.2e6, 0, "direct", 10 * r);
  }
  cr_assert_eq(run(&x, &err), DS_OK, "%s", err.msg);
  for (int32_t r = 0; r < 4; r++)
    for (int k = 1; k <= 2; k++)
      cr_assert_eq(x.end[(size_t)r * 3 + (size_t)k], 374000, "rank %d op %d: %lld", r, k,
                   (long long)x.end[(size_t)r * 3 + (size_t)k]);
  done(&x);
}

static void expect_refusal(struct sim *x, const char *what1, const char *what2) {
  struct ds_err err = {0};
  cr_assert_eq(run(x, &err), DS_EUSAGE, "expected a refusal naming %s", what1);
  cr_assert(strstr(err.msg, what1) && strstr(err.msg, what2), "message: %s", err.msg);
  done(x);
}

Test(coll_exec, refuses_what_is_not_simulated_by_name) {
  struct sim x;
  build(&x, DS_OP_BROADCAST, 0, 1e6, "tree");
  expect_refusal(&x, "broadcast with algo 'tree'", "op 1");
  build(&x, DS_OP_ALLREDUCE, -1, 1e6, "treee");
  expect_refusal(&x, "allreduce with algo 'treee'", "op 1");
  build(&x, DS_OP_ALLREDUCE, -1, 1e6, "direct/LL");
  expect_refusal(&x, "allreduce with algo 'direct/LL'", "op 1");
  build(&x, DS_OP_ALLREDUCE, -1, 1e6, "nvls");
  expect_refusal(&x, "nvls", "NCCL's model");
  build(&x, DS_OP_ALLGATHER, -1, 1e6, "ring/LL");
  expect_refusal(&x, "allgather with algo 'ring/LL'", "allreduce, broadcast and reduce");
  build(&x, DS_OP_BROADCAST, 0, 1e6, "ring/LL"); /* no NCCL model in this executor */
  expect_refusal(&x, "algo 'ring/LL' needs NCCL's model", "op 1");
  build(&x, DS_OP_BROADCAST, 0, 1e6, "ring/LL256");
  expect_refusal(&x, "broadcast with algo 'ring/LL256'", "ring/Simple");
  build(&x, DS_OP_GATHER, -1, 1e6, "");
  expect_refusal(&x, "gather", "root -1");
  /* a send with no recv; a recv whose peer is itself */
  setup(&x, 2);
  add(&x, 1, 0, DS_STREAM_COMM, DS_OP_SEND, -1, 1, 1e6, 0, "", -1);
  expect_refusal(&x, "op 1: send on rank 0 to rank 1 has no matching recv", "k-th");
  setup(&x, 2);
  add(&x, 1, 1, DS_STREAM_COMM, DS_OP_RECV, -1, 1, 1e6, 0, "", -1);
  expect_refusal(&x, "op 1: recv", "peer rank");
  /* pairs of different sizes */
  setup(&x, 2);
  add(&x, 1, 0, DS_STREAM_COMM, DS_OP_SEND, -1, 1, 1e6, 0, "", -1);
  add(&x, 2, 1, DS_STREAM_COMM, DS_OP_RECV, -1, 0, 2e6, 0, "", -1);
  expect_refusal(&x, "op 1: send of 1000000 bytes", "op 2");
  /* a non-collective kind carrying a coll id */
  setup(&x, 2);
  add(&x, 1, 0, DS_STREAM_COMPUTE, DS_OP_FWD, 3, -1, 0, 1, "", -1);
  expect_refusal(&x, "op 1: fwd is not a collective", "coll 3");
}

/* Under an NCCL protocol the pieces are NCCL's (sim/coll/nccl_chunking.c: its
 * chunks and slices in the ring's per-step form, the chain's pieces from
 * runRing), so the executor's ring_chunks, which pipelines the plain
 * algorithms' steps, must leave a ring/LL128 all-reduce and a ring/Simple
 * broadcast exactly as they are with one chunk, and still cut the plain
 * ring's steps (its time falls with 4 chunks: the pipeline fill shrinks).
 * A new user's review found `ddpsim collective --topo 4gpu --algo auto -b 1M`
 * at 60.37 us, 50.88 with --ring-chunks 4: NCCL's pipelining twice. */
static int64_t end_on_dgx_a100(const char *algo, enum ds_op_kind kind, int32_t chunks) {
  struct ds_err err = {0};
  struct sim x;
  memset(&x, 0, sizeof x);
  cr_assert_eq(ds_topo_load("topologies/dgx-a100.yaml", NULL, &x.topo, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_schedule_new(8, &x.s), DS_OK);
  for (int32_t r = 0; r < 8; r++)
    add(&x, r, r, DS_STREAM_COMM, kind, 7, kind == DS_OP_BROADCAST ? 0 : -1, 8 << 20, 0,
        algo, -1);
  int32_t gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  struct ds_ring ring;
  struct ds_nccl_model m;
  cr_assert_eq(ds_ring_build_rails(x.topo, gpus, 8, &ring, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_nccl_model_build(x.topo, &ring, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s",
               err.msg);
  struct ds_exec_options opt = {.net_mode = DS_NET_MAXMIN, .coll_model = DS_COLL_FLOW,
                                .ring_chunks = chunks, .nccl = &m};
  struct ds_exec *ex = NULL;
  cr_assert_eq(ds_schedule_validate(x.s, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_exec_new(x.topo, &opt, &ex, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_exec_run(ex, x.s, x.rank_time, x.start, x.end, &err), DS_OK, "%s", err.msg);
  int64_t end = 0;
  for (int32_t r = 0; r < 8; r++)
    if (x.end[r] > end) end = x.end[r];
  ds_exec_free(ex);
  ds_ring_release(&ring);
  done(&x);
  return end;
}

Test(coll_exec, ring_chunks_leave_nccls_pieces_alone) {
  cr_assert_eq(end_on_dgx_a100("ring/LL128", DS_OP_ALLREDUCE, 4),
               end_on_dgx_a100("ring/LL128", DS_OP_ALLREDUCE, 1));
  cr_assert_eq(end_on_dgx_a100("ring/Simple", DS_OP_BROADCAST, 16),
               end_on_dgx_a100("ring/Simple", DS_OP_BROADCAST, 1));
  cr_assert_lt(end_on_dgx_a100("ring", DS_OP_ALLREDUCE, 4),
               end_on_dgx_a100("ring", DS_OP_ALLREDUCE, 1));
}
