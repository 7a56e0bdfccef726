/*
 * What a replay spins before a rank meets the others (real/spin_check.c),
 * and ddpreal's refusal of a schedule whose spins would keep another
 * rank's wait past --timeout (real/replay_check.c, check_spins), and one
 * whose iterations would spin past --max-seconds in all (check_total).
 *
 * Each schedule below is two ranks, 1 KiB all-reduces and spinning ops of
 * a few hundred ms; "expected, because" gives the chain. A wait runs from
 * where the ranks last met (the start of the iteration, the end of a
 * collective) to the next meeting, along stream order and deps: ops on two
 * streams overlap (the longest counts, not the sum), and an op listed
 * before a collective in the file may still delay the next one.
 *
 * ddpreal is $DDPREAL_BIN (else the sanitizer build). A refused schedule
 * ends before any rank starts, so those runs need no mpirun; a schedule
 * that passes every check reaches the cpu device's "run it as: mpirun -np 2"
 * (also exit 2, without a word on dur_us), and one run under mpirun shows
 * such a schedule replays within its --timeout.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real/spin_check.h"
#include "tests/support.h"
#include "traces/trace.h"

#define HEAD \
  "# ddpsim-schedule v2\nid,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops," \
  "dur_us,deps\n"
/* rank R's all-reduce of collective C, op ID, after DEPS */
#define AR(id, r, c, deps) \
  #id "," #r ",comm,allreduce,b" #c ",-1," #c "," #c ",-1,,1024,0,10," deps "\n"

static char dir[] = "/tmp/ddpreal-spin-XXXXXX";
static void make_dir(void) { ds_test_make_dir(dir); }
static void remove_dir(void) { ds_test_remove_dir(dir); }
TestSuite(spin_check, .init = make_dir, .fini = remove_dir);

/* Writes dir/name: HEAD, rows, the end line; its path in path (512). */
static void write_schedule(char *path, const char *name, const char *rows) {
  size_t n = 0;
  for (const char *p = rows; *p; p++) n += *p == '\n';
  char *text = malloc(strlen(HEAD) + strlen(rows) + 64);
  cr_assert(text != NULL);
  sprintf(text, "%s%s# end: %zu row%s\n", HEAD, rows, n, n == 1 ? "" : "s");
  snprintf(path, 512, "%s/%s", dir, name);
  ds_test_write_file(path, text);
  free(text);
}

static struct ds_schedule *load(const char *rows) {
  char path[512];
  write_schedule(path, "s.csv", rows);
  struct ds_schedule *s = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_read_csv(path, &s, &err), DS_OK, "%s", err.msg);
  return s;
}

static struct ds_spin_path wait_within(struct ds_schedule *s, enum ds_compute_mode m,
                                       double max_steps) {
  struct ds_spin_path p;
  struct ds_err err = {0};
  cr_assert_eq(ds_spin_longest_wait(s, m, max_steps, &p, &err), DS_OK, "%s", err.msg);
  return p;
}

static struct ds_spin_path wait_of(struct ds_schedule *s, enum ds_compute_mode m) {
  return wait_within(s, m, DS_SPIN_EXACT_STEPS);
}

static struct ds_spin_path iteration_of(struct ds_schedule *s) {
  struct ds_spin_path p;
  struct ds_err err = {0};
  cr_assert_eq(ds_spin_longest_iteration(s, DS_COMPUTE_SPIN, &p, &err), DS_OK, "%s", err.msg);
  return p;
}

/* Rank 1 spins 600 ms on compute and 600 ms on copy, both before its
 * all-reduce. Expected 600 ms, because the two streams run together:
 * rank 0 waits 600 ms, not the 1200 ms of their sum. */
static const char two_streams[] = AR(0, 0, 0, "")
    "1,1,compute,fwd,a,0,-1,-1,-1,,0,0,600000,\n"
    "2,1,copy,h2d,x,-1,-1,-1,-1,,64,0,600000,\n"
    AR(3, 1, 0, "1 2");

Test(spin_check, two_streams_overlap_the_longest_counts_not_the_sum) {
  struct ds_schedule *s = load(two_streams);
  struct ds_spin_path p = wait_of(s, DS_COMPUTE_SPIN);
  cr_assert_float_eq(p.us, 600000, 1e-6);
  cr_assert_eq(p.n_spins, 1);
  cr_assert_eq(p.first, 1); /* the first of equals: the compute op */
  cr_assert_eq(p.last, 3);
  cr_assert_eq(p.ends_at_collective, 1);
  ds_schedule_free(s);
}

/* Rank 1: a (600 ms), its all-reduce of coll 0 (not after a), b (600 ms,
 * after a on compute), the all-reduce of coll 1 after b. Expected 1200 ms
 * from coll 0's end to coll 1, because coll 0 may end at once, a still
 * running: the other rank enters coll 1 right after coll 0 and waits for
 * a and b. The ops between the two all-reduces in the file sum to 600 ms. */
static const char across[] = AR(0, 0, 0, "") AR(1, 0, 1, "")
    "2,1,compute,fwd,a,0,-1,-1,-1,,0,0,600000,\n"
    AR(3, 1, 0, "")
    "4,1,compute,fwd,b,1,-1,-1,-1,,0,0,600000,\n"
    AR(5, 1, 1, "4");

Test(spin_check, a_chain_the_previous_collective_did_not_wait_for_counts) {
  struct ds_schedule *s = load(across);
  struct ds_spin_path p = wait_of(s, DS_COMPUTE_SPIN);
  cr_assert_float_eq(p.us, 1200000, 1e-6);
  cr_assert_eq(p.n_spins, 2);
  cr_assert_eq(p.first, 2);
  cr_assert_eq(p.last, 5);
  cr_assert_eq(p.since, 3);
  cr_assert_eq(p.ends_at_collective, 1);
  ds_schedule_free(s);
}

/* Rank 1: a (600 ms), coll 0 after a, b (500 ms) after a on compute and
 * after coll 0, coll 1 after b. Expected 600 ms (a, before coll 0) and
 * 500 ms before coll 1, because coll 0 waited for a: b starts when coll 0
 * ends. The chain since the last collective on it (a, b) is 1100 ms. */
static const char waited[] = AR(0, 0, 0, "") AR(1, 0, 1, "")
    "2,1,compute,fwd,a,0,-1,-1,-1,,0,0,600000,\n"
    AR(3, 1, 0, "2")
    "4,1,compute,bwd,b,0,-1,-1,-1,,0,0,500000,3\n"
    AR(5, 1, 1, "4");

Test(spin_check, spins_the_previous_collective_waited_for_do_not_count_again) {
  struct ds_schedule *s = load(waited);
  struct ds_spin_path p = wait_of(s, DS_COMPUTE_SPIN);
  cr_assert_float_eq(p.us, 600000, 1e-6);
  cr_assert_eq(p.first, 2);
  cr_assert_eq(p.last, 3);
  cr_assert_eq(p.since, SIZE_MAX);
  ds_schedule_free(s);
  /* b alone past a: 700 ms before coll 1, from coll 0's end */
  s = load(AR(0, 0, 0, "") AR(1, 0, 1, "")
           "2,1,compute,fwd,a,0,-1,-1,-1,,0,0,600000,\n"
           AR(3, 1, 0, "2")
           "4,1,compute,bwd,b,0,-1,-1,-1,,0,0,700000,3\n"
           AR(5, 1, 1, "4"));
  p = wait_of(s, DS_COMPUTE_SPIN);
  cr_assert_float_eq(p.us, 700000, 1e-6);
  cr_assert_eq(p.first, 4);
  cr_assert_eq(p.n_spins, 1);
  cr_assert_eq(p.last, 5);
  cr_assert_eq(p.since, 3);
  ds_schedule_free(s);
}

/* waited (a 600 ms, coll 0 after a, b 500 ms after a
 * and coll 0, coll 1 after b) with the exact wait's work limited to 0
 * steps, as a schedule past DS_SPIN_EXACT_STEPS would be: expected the
 * chain since the last meeting on it, a then b (coll 0 ends at once
 * there), 1100 ms from the start of the iteration to coll 1, because the
 * fallback counts spins coll 0 waited for again: longer than the exact
 * 600 ms, never shorter. */
Test(spin_check, past_the_step_limit_the_chain_since_the_last_meeting_is_used) {
  struct ds_schedule *s = load(waited);
  struct ds_spin_path p = wait_within(s, DS_COMPUTE_SPIN, 0);
  cr_assert_float_eq(p.us, 1100000, 1e-6);
  cr_assert_eq(p.n_spins, 2);
  cr_assert_eq(p.first, 2);
  cr_assert_eq(p.last, 5);
  cr_assert_eq(p.since, SIZE_MAX);
  cr_assert_eq(p.ends_at_collective, 1);
  /* the work one pass takes here is far below the default limit */
  cr_assert_float_eq(wait_within(s, DS_COMPUTE_SPIN, 100).us, 600000, 1e-6);
  ds_schedule_free(s);
}

/* Rank 1: coll 0 first; y (300 ms, copy) then coll 1; x (700 ms, compute,
 * after coll 0) then coll 2. Expected 700 ms before coll 2, from coll 1's
 * end, because the others may be late to coll 0: x then starts when coll 0
 * ends, y is long done, coll 1 ends at once and the others wait all of x.
 * With every rank on time the wait would be 700 - 300 = 400 ms. */
Test(spin_check, the_others_may_be_late_to_an_earlier_collective) {
  struct ds_schedule *s = load(AR(0, 0, 0, "") AR(1, 0, 1, "") AR(2, 0, 2, "")
                               AR(3, 1, 0, "")
                               "4,1,copy,h2d,y,-1,-1,-1,-1,,64,0,300000,\n"
                               AR(5, 1, 1, "4")
                               "6,1,compute,bwd,x,0,-1,-1,-1,,0,0,700000,3\n"
                               AR(7, 1, 2, "6"));
  struct ds_spin_path p = wait_of(s, DS_COMPUTE_SPIN);
  cr_assert_float_eq(p.us, 700000, 1e-6);
  cr_assert_eq(p.first, 6);
  cr_assert_eq(p.last, 7);
  cr_assert_eq(p.since, 5);
  ds_schedule_free(s);
}

/* Rank 1 steps twice (600 ms each) after its last all-reduce. Expected
 * 1200 ms ending at the second step, not at a collective, because only
 * the barrier before the next iteration waits for them. */
static const char tail[] = AR(0, 0, 0, "") AR(1, 1, 0, "")
    "2,1,compute,step,a,0,-1,-1,-1,,0,0,600000,1\n"
    "3,1,compute,step,b,1,-1,-1,-1,,0,0,600000,2\n";

Test(spin_check, spins_after_the_last_collective_end_at_the_iteration) {
  struct ds_schedule *s = load(tail);
  struct ds_spin_path p = wait_of(s, DS_COMPUTE_SPIN);
  cr_assert_float_eq(p.us, 1200000, 1e-6);
  cr_assert_eq(p.first, 2);
  cr_assert_eq(p.last, 3);
  cr_assert_eq(p.since, 1);
  cr_assert_eq(p.ends_at_collective, 0);
  ds_schedule_free(s);
}

/* --compute gemm: a compute op with flops runs GEMMs, its dur_us is not
 * its time (counted 0); one without flops and a copy still spin. Expected
 * 300 + 200 ms, because the 900 ms op has flops. */
Test(spin_check, gemm_ops_with_flops_do_not_count) {
  struct ds_schedule *s = load(AR(0, 0, 0, "")
                               "1,1,compute,fwd,a,0,-1,-1,-1,,0,1e9,900000,\n"
                               "2,1,compute,step,b,0,-1,-1,-1,,0,0,300000,1\n"
                               "3,1,copy,d2h,x,-1,-1,-1,-1,,64,0,200000,2\n"
                               AR(4, 1, 0, "3"));
  struct ds_spin_path gemm = wait_of(s, DS_COMPUTE_GEMM);
  cr_assert_float_eq(gemm.us, 500000, 1e-6);
  cr_assert_eq(gemm.n_spins, 2);
  cr_assert_eq(gemm.first, 2);
  struct ds_spin_path spin = wait_of(s, DS_COMPUTE_SPIN);
  cr_assert_float_eq(spin.us, 1400000, 1e-6);
  ds_schedule_free(s);
}

/* The cuda device's bound: rank 0 spins 400 ms before coll 0, rank 1
 * 300 ms after it and before coll 1. Expected 700 ms for the iteration,
 * from rank 0's op to rank 1's entry into coll 1, because coll 0 ends at
 * 400 ms when rank 0 enters it; each wait is at most 400 ms. */
Test(spin_check, the_iteration_chain_crosses_ranks_at_collectives) {
  struct ds_schedule *s = load("0,0,compute,fwd,a,0,-1,-1,-1,,0,0,400000,\n"
                               AR(1, 0, 0, "0") AR(2, 0, 1, "")
                               AR(3, 1, 0, "")
                               "4,1,compute,bwd,b,0,-1,-1,-1,,0,0,300000,3\n"
                               AR(5, 1, 1, "4"));
  struct ds_spin_path it = iteration_of(s);
  cr_assert_float_eq(it.us, 700000, 1e-6);
  cr_assert_eq(it.n_spins, 2);
  cr_assert_eq(it.first, 0);
  cr_assert_eq(it.last, 5);
  struct ds_spin_path w = wait_of(s, DS_COMPUTE_SPIN);
  cr_assert_float_eq(w.us, 400000, 1e-6);
  ds_schedule_free(s);
}

/* ---- ddpreal --------------------------------------------------------- */

/* ddpreal --device cpu on dir/name (rows), env and flags added. */
static struct ds_test_result replay(const char *name, const char *rows, const char *env,
                                    const char *flags) {
  char path[512], args[1024], prefix[256];
  write_schedule(path, name, rows);
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s/t.csv --iters 1 "
           "--warmup 0 %s", path, dir, flags);
  snprintf(prefix, sizeof prefix, "ASAN_OPTIONS=detect_leaks=0 %s ", env);
  return ds_test_run(prefix, ds_test_ddpreal(), args);
}

/* Passed every check before the launcher: the cpu device's two-rank
 * message, and nothing on dur_us. */
static void expect_accepted(struct ds_test_result *r) {
  cr_assert_eq(r->status, 2, "exit %d, stderr %s", r->status, r->err);
  cr_assert(strstr(r->err, "run it as: mpirun -np 2") != NULL, "stderr: %s", r->err);
  cr_assert(strstr(r->err, "dur_us") == NULL, "stderr: %s", r->err);
}

/* Before: each op was under --timeout 1 s, so both runs started and rank 0
 * gave up after 1 s: "rank 1 did not arrive" (before coll 0, and before
 * coll 1 with the chain from before coll 0). Now refused first, naming the
 * file, the chain's first op's line and the collective's. */
Test(spin_check, a_chain_past_the_timeout_is_refused_naming_its_lines) {
  struct ds_test_result r = replay("before.csv", AR(0, 0, 0, "")
                                   "1,1,compute,fwd,a,0,-1,-1,-1,,0,0,600000,\n"
                                   "2,1,compute,fwd,b,1,-1,-1,-1,,0,0,600000,1\n"
                                   AR(3, 1, 0, "2"), "", "--timeout 1");
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "before.csv:4: column 'dur_us': rank 1's spins keep it from entering "
                          "op 3 (allreduce coll 0, line 6) until 1.2e+06 us (1.2 s) after the "
                          "start of its iteration, the earliest the other ranks enter it: a "
                          "chain of 2 spinning ops (stream order and deps) from op 1 (fwd, "
                          "this line); longer than --timeout 1 s") != NULL, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "give a --timeout above 1.2 s") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
  r = replay("across.csv", across, "", "--timeout 1");
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "across.csv:5: column 'dur_us': rank 1's spins keep it from entering "
                          "op 5 (allreduce coll 1, line 8) until 1.2e+06 us (1.2 s) after op 3 "
                          "(allreduce coll 0, line 6) ends") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
  /* DDPREAL_TIMEOUT_S is the same limit */
  r = replay("across-env.csv", across, "DDPREAL_TIMEOUT_S=1.1", "");
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "longer than --timeout 1.1 s") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
  /* after the last collective: the barrier */
  r = replay("tail.csv", tail, "", "--timeout 1");
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "tail.csv:5: column 'dur_us': rank 1's spins end its iteration "
                          "1.2e+06 us (1.2 s) after op 1 (allreduce coll 0, line 4) ends, the "
                          "earliest the other ranks can end theirs: a chain of 2 spinning ops "
                          "(stream order and deps) from op 2 (step, this line) to op 3 (step, "
                          "line 6); longer than --timeout 1 s, the longest they wait for it in "
                          "the barrier") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
}

/* 1 us either side of --timeout 1 s: 499999 + 500000 us is accepted,
 * 500000 + 500001 us refused. */
Test(spin_check, a_chain_just_under_the_timeout_is_accepted) {
  struct ds_test_result r = replay("under.csv", AR(0, 0, 0, "")
                                   "1,1,compute,fwd,a,0,-1,-1,-1,,0,0,499999,\n"
                                   "2,1,compute,fwd,b,1,-1,-1,-1,,0,0,500000,1\n"
                                   AR(3, 1, 0, "2"), "", "--timeout 1");
  expect_accepted(&r);
  ds_test_release(&r);
  r = replay("over.csv", AR(0, 0, 0, "")
             "1,1,compute,fwd,a,0,-1,-1,-1,,0,0,500000,\n"
             "2,1,compute,fwd,b,1,-1,-1,-1,,0,0,500001,1\n"
             AR(3, 1, 0, "2"), "", "--timeout 1");
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "over.csv:4: column 'dur_us': rank 1's spins keep it from entering "
                          "op 3 (allreduce coll 0, line 6) until 1e+06 us") != NULL,
            "stderr: %s", r.err);
  ds_test_release(&r);
}

/* Two streams: 550 + 550 ms listed before one all-reduce, more than
 * --timeout 1 s summed, 550 ms as they run. Accepted, and it runs under
 * mpirun: rank 0 waits about 550 ms. */
Test(spin_check, spins_on_two_streams_are_not_summed_and_run) {
  static const char rows[] = AR(0, 0, 0, "")
      "1,1,compute,fwd,a,0,-1,-1,-1,,0,0,550000,\n"
      "2,1,copy,h2d,x,-1,-1,-1,-1,,64,0,550000,\n"
      AR(3, 1, 0, "1 2");
  struct ds_test_result r = replay("streams.csv", rows, "", "--timeout 1");
  expect_accepted(&r);
  ds_test_release(&r);
  char args[1024];
  snprintf(args, sizeof args, "-np 2 %s --device cpu --schedule %s/streams.csv --trace "
           "%s/m.csv --iters 1 --warmup 0 --timeout 1", ds_test_ddpreal(), dir, dir);
  r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 OMPI_ALLOW_RUN_AS_ROOT=1 "
                  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
                  "mpirun --oversubscribe -x ASAN_OPTIONS", "", args);
  cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
  cr_assert(strstr(r.out, "#wrong: 0") != NULL, "stdout: %s", r.out);
  ds_test_release(&r);
}

/* What ddpsim writes is accepted at the default --timeout (300 s): GPT-2
 * and ResNet-50 on 2 ranks of the 4-GPU box, DDP and DataParallel. GPT-2's
 * longest wait (DDP: the forward and the backward up to its first bucket;
 * DataParallel: the backward pass) is 0.25-0.3 s, so a limit of 0.2 s
 * refuses it: the check sees these schedules. */
Test(spin_check, ddpsim_schedules_pass_at_the_default_timeout) {
  const char *models[] = {"gpt2", "resnet50"};
  const char *strategies[] = {"ddp", "dp"};
  for (size_t m = 0; m < 2; m++)
    for (size_t k = 0; k < 2; k++) {
      char sched[512], args[1024];
      snprintf(sched, sizeof sched, "%s/%s-%s.csv", dir, models[m], strategies[k]);
      snprintf(args, sizeof args, "--topo 4gpu --model %s --strategy %s --world-size 2 "
               "--schedule %s", models[m], strategies[k], sched);
      struct ds_test_result r = ds_test_cli_ok(args);
      ds_test_release(&r);
      snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s/t.csv", sched, dir);
      r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
      expect_accepted(&r);
      ds_test_release(&r);
      if (m == 0) {
        r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 DDPREAL_TIMEOUT_S=0.2 ",
                        ds_test_ddpreal(), args);
        cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
        cr_assert(strstr(r.err, "longer than --timeout 0.2 s") != NULL, "stderr: %s", r.err);
        ds_test_release(&r);
      }
    }
}

/* --max-seconds bounds the whole replay (replay_check.c, check_total):
 * every iteration, the warmup's too, spins at least its longest chain. Rank
 * 1 spins 600 ms before its all-reduce: one iteration is 0.6 s, refused
 * under --max-seconds 0.59 and run under 0.61. A ddpsim --straggler 1:1e6
 * schedule of the tiny model spins 276 s an iteration: every step fits in
 * --timeout 1e6 and 21 iterations would take 97 minutes; refused past the
 * default hour (before, it passed every check), and 6 iterations (27.6
 * minutes) still run. Where the --max-seconds needed is past the option's
 * cap (1e9 s) the refusal advises only fewer iterations or another
 * schedule: 20,000 s an iteration, 100,000 iterations and the warmup. */
Test(spin_check, iterations_spinning_past_max_seconds_in_all_are_refused) {
  static const char rows[] = AR(0, 0, 0, "")
      "1,1,compute,fwd,a,0,-1,-1,-1,,0,0,600000,\n"
      AR(2, 1, 0, "1");
  struct ds_test_result r = replay("total.csv", rows, "", "--max-seconds 0.59");
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "total.csv:4: column 'dur_us': one iteration spins at least 600000 us "
                          "(0.6 s) in a chain of 1 ops (stream order, deps, and collectives, "
                          "which wait for every rank) from op 1 (fwd on rank 1, this line) to "
                          "the end of op 2 (allreduce on rank 1, line 5), so --warmup 0 and "
                          "--iters 1 would take at least 0.6 s (0.6 s), longer than "
                          "--max-seconds 0.59 s; give --max-seconds 1 or more to run it "
                          "anyway") != NULL,
            "stderr: %s", r.err);
  ds_test_release(&r);
  r = replay("total.csv", rows, "", "--max-seconds 0.61");
  expect_accepted(&r);
  ds_test_release(&r);
  static const char long_rows[] = AR(0, 0, 0, "")
      "1,1,compute,fwd,a,0,-1,-1,-1,,0,0,2e10,\n"
      AR(2, 1, 0, "1");
  char long_path[512], long_args[1024];
  write_schedule(long_path, "long.csv", long_rows);
  snprintf(long_args, sizeof long_args, "--device cpu --schedule %s --trace %s/t.csv "
           "--timeout 1e6 --iters 100000", long_path, dir);
  r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), long_args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "--warmup 1 and --iters 100000 would take at least 2.00002e+09 "
                          "s (") != NULL,
            "stderr: %s", r.err);
  cr_assert(strstr(r.err, "longer than --max-seconds 3600 s; give fewer --iters or --warmup, or "
                          "correct the schedule (--max-seconds takes at most 1e+09 s)\n") != NULL,
            "stderr: %s", r.err);
  cr_assert_null(strstr(r.err, "give --max-seconds"), "stderr: %s", r.err);
  ds_test_release(&r);
  char sched[512], args[1024];
  snprintf(sched, sizeof sched, "%s/straggler.csv", dir);
  snprintf(args, sizeof args, "--topo 4gpu --model tests/data/tiny-model.yaml --world-size 2 "
           "--straggler 1:1e6 --schedule %s", sched);
  r = ds_test_cli_ok(args);
  ds_test_release(&r);
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s/t.csv --timeout 1e6 "
           "--iters 20", sched, dir);
  r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "one iteration spins at least 2.75942e+08 us (276 s)") != NULL,
            "stderr: %s", r.err);
  cr_assert(strstr(r.err, "so --warmup 1 and --iters 20 would take at least 5794.79 s (1.61 "
                          "hours), longer than --max-seconds 3600 s; give --max-seconds 5795 "
                          "or more") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s/t.csv --timeout 1e6",
           sched, dir);
  r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
  expect_accepted(&r);
  ds_test_release(&r);
}
