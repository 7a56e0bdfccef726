/*
 * ddpreal with the cpu device, end to end: ddpsim predicts a schedule,
 * ddpreal replays it under mpirun, and the measured trace must hold every
 * op exactly once per iteration with the schedule's order (deps and
 * streams) respected, checked collectives, and the usual exit statuses for
 * bad flags, bad files and a rank count that does not match.
 *
 * Binaries: $DDPSIM_BIN and $DDPREAL_BIN (the sanitizer builds in `make
 * test`), else build/asan/. mpirun runs as root (the CI container) with
 * --oversubscribe (2 cores); Open MPI's own allocations are not freed at
 * exit, so leak detection is off for the mpirun'd processes only.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support.h"
#include "traces/trace.h"
#include "traces/trace_keys.h"

#define MPIRUN                                                                    \
  "ASAN_OPTIONS=detect_leaks=0 OMPI_ALLOW_RUN_AS_ROOT=1 "                         \
  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpirun " \
  "--oversubscribe -x ASAN_OPTIONS "

static char dir[] = "/tmp/ddpreal-test-XXXXXX";

static void make_dir(void) { cr_assert(mkdtemp(dir) != NULL); }

static void remove_dir(void) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

/* No Criterion timeout: a shared, loaded machine is not a failure. */
TestSuite(real_cpu, .init = make_dir, .fini = remove_dir);

/* dir/name in the caller's buffer (PATH_BUF bytes). */
#define PATH_BUF 512
static char *in_dir(char *buf, const char *name) {
  snprintf(buf, PATH_BUF, "%s/%s", dir, name);
  return buf;
}

/* ddpsim's tiny two-layer-group model on `world` ranks: 10 ops per rank,
 * two all-reduce buckets overlapping the backward pass. */
static void predict(int world, const char *schedule) {
  char args[1024];
  snprintf(args, sizeof args,
           "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
           "--world-size %d --schedule %s",
           world, schedule);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "ddpsim failed: %s", r.err);
  ds_test_release(&r);
}

/* Checks the measured trace against the schedule: each op once per
 * iteration 0..iters-1 on its own rank, end >= start, every dep ended
 * before the op started, ops of one (rank, stream) one after the other in
 * schedule order, source "real". */
static void check_trace(const char *schedule, const char *trace, int iters) {
  struct ds_err err = {0};
  struct ds_schedule *s;
  struct ds_trace *t;
  cr_assert_eq(ds_schedule_read_csv(schedule, &s, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_trace_read_csv(trace, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(t->source, "real");
  size_t n = s->n_ops;
  cr_assert_eq(t->n_rows, n * (size_t)iters, "rows %zu, expected %zu ops x %d", t->n_rows,
               n, iters);
  int64_t *start = calloc(n * (size_t)iters, sizeof *start);
  int64_t *end = calloc(n * (size_t)iters, sizeof *end);
  int *seen = calloc(n * (size_t)iters, sizeof *seen);
  cr_assert(start && end && seen);
  for (size_t k = 0; k < t->n_rows; k++) {
    const struct ds_trace_row *row = &t->rows[k];
    const struct ds_op *o = &row->sched->ops[row->op];
    size_t idx;
    cr_assert_eq(ds_schedule_find(s, o->id, &idx), 0, "trace op %lld not in the schedule",
                 (long long)o->id);
    cr_assert(row->iter >= 0 && row->iter < iters, "iteration %d", row->iter);
    cr_assert_eq(o->rank, s->ops[idx].rank);
    cr_assert_eq(o->kind, s->ops[idx].kind);
    cr_assert_geq(row->end_ns, row->start_ns);
    size_t at = (size_t)row->iter * n + idx;
    seen[at]++;
    start[at] = row->start_ns;
    end[at] = row->end_ns;
  }
  for (int it = 0; it < iters; it++) {
    for (size_t i = 0; i < n; i++) {
      const struct ds_op *o = &s->ops[i];
      size_t at = (size_t)it * n + i;
      cr_assert_eq(seen[at], 1, "op %lld seen %d times in iteration %d", (long long)o->id,
                   seen[at], it);
      const int64_t *deps = ds_schedule_deps(s, o);
      for (uint32_t d = 0; d < o->dep_count; d++) {
        size_t j;
        cr_assert_eq(ds_schedule_find(s, deps[d], &j), 0);
        cr_assert_geq(start[at], end[(size_t)it * n + j],
                      "iteration %d: op %lld started at %lld ns before its dep %lld ended "
                      "at %lld ns",
                      it, (long long)o->id, (long long)start[at], (long long)deps[d],
                      (long long)end[(size_t)it * n + j]);
      }
      /* the previous op of the same rank and stream */
      for (size_t j = i; j-- > 0;) {
        if (s->ops[j].rank != o->rank || s->ops[j].stream != o->stream) continue;
        cr_assert_geq(start[at], end[(size_t)it * n + j],
                      "iteration %d: op %lld overlaps op %lld on its stream", it,
                      (long long)o->id, (long long)s->ops[j].id);
        break;
      }
    }
    /* iterations follow each other on the run's timeline */
    if (it > 0) cr_assert_gt(start[(size_t)it * n], start[(size_t)(it - 1) * n]);
  }
  /* what ddpsim analyze checks: no iteration ends before an earlier one
   * (each rank is placed on its own clock, real/replay.c) */
  size_t bad = 0, other = 0;
  cr_assert_eq(ds_trace_check_iter_ends(t, &bad, &other, &err), DS_OK, "%s", err.msg);
  free(start);
  free(end);
  free(seen);
  ds_trace_free(t);
  ds_schedule_free(s);
}

/* Two ranks under mpirun: the schedule's two all-reduces run as
 * MPI_Allreduce on real buffers whose sums are checked. */
Test(real_cpu, replay_two_ranks_under_mpirun) {
  char sched[PATH_BUF], measured[PATH_BUF];
  in_dir(sched, "s2.csv");
  in_dir(measured, "measured.csv");
  predict(2, sched);
  char args[1024];
  snprintf(args, sizeof args,
           "--device cpu --schedule %s --trace %s/measured.csv --iters 3 --warmup 1",
           sched, dir);
  struct ds_test_result r = ds_test_run(MPIRUN "-np 2 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
  cr_assert(strstr(r.out, "#wrong: 0\n") != NULL, "stdout: %s", r.out);
  cr_assert(strstr(r.out, "36 ops on 2 ranks, 3 iterations") != NULL, "stdout: %s", r.out);
  cr_assert(strstr(r.out, "p50 ") != NULL, "stdout: %s", r.out);
  check_trace(sched, measured, 3);
  char *text = ds_test_slurp(measured);
  cr_assert(strstr(text, "\n# device: cpu\n# ranks: 2\n# launcher: mpi\n") != NULL, "%s", text);
  cr_assert(strstr(text, "\n# mpi: ") != NULL, "%s", text);
  /* the replay draws nothing: no seed line (it wrote "# seed: 0") */
  cr_assert(strstr(text, "\n# seed") == NULL, "%s", text);
  /* ddpreal's trace ends with its row count: 36 ops x 3 iterations */
  const char *end = "\n# end: 108 rows\n";
  size_t len = strlen(text);
  cr_assert(len > strlen(end) && strcmp(text + len - strlen(end), end) == 0, "%s",
            text + (len > 200 ? len - 200 : 0));
  free(text);
  ds_test_release(&r);
}

/* A one-rank schedule runs without mpirun (a singleton MPI process). */
Test(real_cpu, replay_one_rank_without_mpirun) {
  char sched[PATH_BUF], measured[PATH_BUF];
  in_dir(sched, "s1.csv");
  in_dir(measured, "m1.csv");
  predict(1, sched);
  char args[1024];
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s/m1.csv --iters 2 --warmup 0",
           sched, dir);
  struct ds_test_result r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
  cr_assert(strstr(r.out, "#wrong: 0\n") != NULL, "stdout: %s", r.out);
  /* one rank in the singular (it said "on 1 ranks") */
  cr_assert(strstr(r.out, " ops on 1 rank, 2 iterations after 0 warmup ") != NULL, "stdout: %s",
            r.out);
  check_trace(sched, measured, 2);
  ds_test_release(&r);
}

/* DDP all-reduces its bucket in place, and at one rank NCCL's in-place
 * all-reduce does nothing: the replay's MPI_Iallreduce runs in place too,
 * so at one rank it copies nothing. ResNet-50 in one 97.5 MiB bucket
 * (--bucket-mb 100): out of place MPI copied the bucket, 4.1-5.0 ms a
 * time on the 2-core test machine; in place 1-6 us. The fastest of three
 * under 0.5 ms leaves a loaded machine room and no copy of 97.5 MiB
 * (0.5 ms would be 200 GB/s). The sums stay checked (#wrong: 0). */
Test(real_cpu, a_one_rank_all_reduce_runs_in_place_and_copies_nothing) {
  char sched[PATH_BUF], measured[PATH_BUF], args[2048];
  in_dir(sched, "r1.csv");
  in_dir(measured, "mr1.csv");
  snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml --model models/resnet50.yaml "
           "--world-size 1 --bucket-mb 100 --batch 1 --schedule %s", sched);
  struct ds_test_result p = ds_test_cli(args);
  cr_assert_eq(p.status, 0, "ddpsim failed: %s", p.err);
  ds_test_release(&p);
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s --iters 3 --warmup 0",
           sched, measured);
  struct ds_test_result r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
  cr_assert(strstr(r.out, "#wrong: 0\n") != NULL, "stdout: %s", r.out);
  ds_test_release(&r);
  struct ds_err err = {0};
  struct ds_trace *t;
  cr_assert_eq(ds_trace_read_csv(measured, &t, &err), DS_OK, "%s", err.msg);
  int64_t fastest = INT64_MAX;
  int seen = 0;
  for (size_t k = 0; k < t->n_rows; k++) {
    const struct ds_trace_row *row = &t->rows[k];
    const struct ds_op *o = &row->sched->ops[row->op];
    if (o->kind != DS_OP_ALLREDUCE) continue;
    cr_assert_gt(o->bytes, 90e6, "one bucket of the whole model, got %.0f bytes", o->bytes);
    seen++;
    if (row->end_ns - row->start_ns < fastest) fastest = row->end_ns - row->start_ns;
  }
  cr_assert_eq(seen, 3, "one all-reduce per iteration, got %d", seen);
  cr_assert_lt(fastest, 500000, "the fastest one-rank all-reduce took %lld ns",
               (long long)fastest);
  ds_trace_free(t);
}

Test(real_cpu, bad_flags_exit_2) {
  struct {
    const char *args, *want;
  } cases[] = {
      {"--bogus", "unknown option \"--bogus\""},
      {"--schedule x.csv --trace y.csv --iters 0", "option --iters: expected an integer from 1"},
      {"--schedule x.csv --trace y.csv --compute fast", "option --compute: expected spin or gemm"},
      {"--schedule x.csv --trace y.csv --device tpu", "option --device: expected cpu or cuda"},
      {"--trace y.csv", "missing --schedule"},
      {"--schedule x.csv", "missing --trace"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_test_result r = ds_test_run("", ds_test_ddpreal(), cases[i].args);
    cr_assert_eq(r.status, 2, "%s: exit %d, stderr %s", cases[i].args, r.status, r.err);
    cr_assert(strstr(r.err, cases[i].want) != NULL, "%s: stderr %s", cases[i].args, r.err);
    ds_test_release(&r);
  }
  struct ds_test_result r = ds_test_run("", ds_test_ddpreal(), "--help");
  cr_assert_eq(r.status, 0);
  cr_assert(strstr(r.out, "usage: ddpreal --schedule") != NULL, "%s", r.out);
  ds_test_release(&r);
}

/* The schedule has 2 ranks: one MPI process, or none at all, is refused
 * before anything runs, naming both numbers and what to run. */
Test(real_cpu, rank_count_mismatch_exit_2) {
  char sched[PATH_BUF], never[PATH_BUF];
  in_dir(sched, "s2m.csv");
  in_dir(never, "never.csv");
  predict(2, sched);
  char args[1024];
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s/never.csv", sched, dir);
  struct ds_test_result r = ds_test_run(MPIRUN "-np 1 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "has 2 ranks (world size 2) but mpirun started 1 process: run "
                          "mpirun -np 2") != NULL,
            "stderr: %s", r.err);
  ds_test_release(&r);
  r = ds_test_run("", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "run it as: mpirun -np 2 ddpreal") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
  cr_assert_neq(access(never, F_OK), 0, "a trace was written");
}

/* Issue #15, defect 6: ranks given different schedules used to wait for
 * ever in mismatched collectives. A hash of the schedule is compared
 * before the first op: exit 2, naming the rank. */
Test(real_cpu, ranks_with_different_schedules_are_refused) {
  char a[PATH_BUF], b[PATH_BUF], args[2048];
  in_dir(a, "sa.csv");
  in_dir(b, "sb.csv");
  predict(2, a);
  char pargs[1024];
  snprintf(pargs, sizeof pargs,
           "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
           "--world-size 2 --bucket-mb 1 --schedule %s", b);
  struct ds_test_result r = ds_test_cli(pargs);
  cr_assert_eq(r.status, 0, "ddpsim failed: %s", r.err);
  ds_test_release(&r);
  snprintf(args, sizeof args,
           "--device cpu --schedule %s --trace %s/never.csv --timeout 20 : -np 1 %s "
           "--device cpu --schedule %s --trace %s/never.csv --timeout 20",
           a, dir, ds_test_ddpreal(), b, dir);
  r = ds_test_run(MPIRUN "-np 1 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "rank 1's schedule differs from rank 0's"), "stderr: %s", r.err);
  ds_test_release(&r);
}

/* Issue #15, defect 6: a rank stopped with SIGSTOP hung the replay. Every
 * collective and barrier wait is bounded (--timeout): the job ends with
 * exit 1, and a collective's timeout names the rank that did not arrive. */
Test(real_cpu, a_stopped_rank_ends_the_job_after_the_timeout) {
  char sched[PATH_BUF], script[PATH_BUF];
  in_dir(sched, "s-stop.csv");
  in_dir(script, "stop1.sh");
  predict(2, sched);
  FILE *fp = fopen(script, "w");
  cr_assert_not_null(fp);
  fprintf(fp, "#!/bin/sh\nif [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then "
          "(sleep 1; kill -STOP $$) & fi\n"
          "exec %s --device cpu --schedule %s --trace %s/never.csv --iters 100000 "
          "--timeout 2\n", ds_test_ddpreal(), sched, dir);
  fclose(fp);
  cr_assert_eq(chmod(script, 0755), 0);
  struct ds_test_result r = ds_test_run(MPIRUN "-np 2 ", script, "");
  cr_assert_eq(r.status, 1, "exit %d, stderr %s", r.status, r.err);
  /* Where rank 1 stopped decides the words: before a collective (named),
   * inside one, or before the barrier between iterations. */
  cr_assert(strstr(r.err, "rank 1 did not arrive") ||
                strstr(r.err, "every rank entered it, so one stopped or hung inside it") ||
                strstr(r.err, "the barrier between iterations waited 2 s"),
            "stderr: %s", r.err);
  cr_assert(strstr(r.err, "--timeout S sets the limit"), "stderr: %s", r.err);
  ds_test_release(&r);
}

/* A schedule that is missing, or is not a schedule, is bad input: exit 2
 * with a message naming the file. */
Test(real_cpu, unreadable_schedule_exit_2) {
  char args[1024];
  snprintf(args, sizeof args, "--device cpu --schedule %s/missing.csv --trace %s/t.csv", dir,
           dir);
  struct ds_test_result r = ds_test_run("", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "missing.csv: cannot open") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
  char bad[PATH_BUF];
  FILE *fp = fopen(in_dir(bad, "not-a-schedule.csv"), "w");
  cr_assert(fp != NULL);
  fputs("# ddpsim-trace v2\n", fp);
  fclose(fp);
  snprintf(args, sizeof args, "--device cpu --schedule %s/not-a-schedule.csv --trace %s/t.csv",
           dir, dir);
  r = ds_test_run("", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "not-a-schedule.csv:1: this is a ddpsim-trace file") != NULL,
            "stderr: %s", r.err);
  ds_test_release(&r);
}

/* A one-row schedule whose op lasts 1e300 us: the old reader took it and
 * the cpu device's spin computed llround(1e303), out of range (LLONG_MIN on
 * glibc), so the op "ran" in no time and ddpreal exited 0. Now the reader
 * refuses it naming file, line and column, exit 2, before anything runs. */
Test(real_cpu, a_duration_past_the_longest_time_exit_2) {
  char sched[PATH_BUF], args[1024];
  FILE *fp = fopen(in_dir(sched, "huge.csv"), "w");
  cr_assert(fp != NULL);
  fputs("# ddpsim-schedule v2\n"
        "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps\n"
        "0,0,compute,fwd,conv1,0,-1,-1,-1,,0,0,1e300,\n# end: 1 row\n", fp);
  fclose(fp);
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s/t.csv --iters 1 "
           "--warmup 0", sched, dir);
  struct ds_test_result r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "huge.csv:3: column 'dur_us': expected microseconds >= 0 and at "
                          "most 1e15") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
}

/* A one-op schedule in the given compute mode, dur_us and flops, run with
 * --timeout (NULL: the default); its result. */
static struct ds_test_result run_one_op(const char *name, const char *dur_us, const char *flops,
                                        const char *compute, const char *timeout) {
  char sched[PATH_BUF], args[1024];
  FILE *fp = fopen(in_dir(sched, name), "w");
  cr_assert(fp != NULL);
  fprintf(fp, "# ddpsim-schedule v2\n"
          "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps\n"
          "0,0,compute,fwd,conv1,0,-1,-1,-1,,0,%s,%s,\n# end: 1 row\n", flops, dur_us);
  fclose(fp);
  snprintf(args, sizeof args, "--device cpu --compute %s --schedule %s --trace %s/t.csv "
           "--iters 1 --warmup 0%s%s", compute, sched, dir, timeout ? " --timeout " : "",
           timeout ? timeout : "");
  return ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
}

/* A compute op of 1e12 us (a fuzzed schedule) spun for 12 days: --timeout
 * covered only waits for other ranks. Now an op that spins longer than
 * --timeout is refused before anything runs, naming file, line, column and
 * the limit, exit 2; one within it runs; under --compute gemm a compute op
 * with flops runs GEMMs of them (capped), so its dur_us is not its time. */
Test(real_cpu, a_spin_longer_than_the_timeout_exit_2) {
  struct ds_test_result r = run_one_op("days.csv", "1e12", "0", "spin", NULL);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "days.csv:3: column 'dur_us': op 0 (fwd on rank 0) spins 1e+12 us "
                          "(11.6 days), longer than --timeout 300 s") != NULL,
            "stderr: %s", r.err);
  ds_test_release(&r);
  r = run_one_op("two-s.csv", "2000000", "0", "spin", "1.5");
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "two-s.csv:3: column 'dur_us': op 0 (fwd on rank 0) spins 2e+06 us "
                          "(2 s), longer than --timeout 1.5 s") != NULL,
            "stderr: %s", r.err);
  ds_test_release(&r);
  /* gemm mode: an op without flops spins, so it is checked too */
  r = run_one_op("gemm-noflops.csv", "1e12", "0", "gemm", NULL);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  ds_test_release(&r);
  /* within the limit: runs (0.2 s against 1.5 s) */
  r = run_one_op("short.csv", "200000", "0", "spin", "1.5");
  cr_assert_eq(r.status, 0, "exit %d, stderr %s", r.status, r.err);
  ds_test_release(&r);
  r = run_one_op("gemm-flops.csv", "1e12", "1e6", "gemm", NULL);
  cr_assert_eq(r.status, 0, "exit %d, stderr %s", r.status, r.err);
  ds_test_release(&r);
}

/* With the cuda device, options are checked before any GPU is looked for,
 * so this runs on a machine without one. */
#ifdef DS_HAVE_CUDA
/* Issue #15, defect 13: without a GPU (no driver, or none visible) the
 * cuda device stopped with CUDA's "driver version is insufficient"; it
 * now says that no GPU was found and that --device cpu replays on CPU
 * ranks. CUDA_VISIBLE_DEVICES="" hides every GPU, so this runs anywhere. */
Test(real_cpu, no_gpu_says_so_and_names_the_cpu_device) {
  char sched[PATH_BUF], args[1024];
  in_dir(sched, "s-nogpu.csv");
  predict(1, sched);
  snprintf(args, sizeof args, "--device cuda --schedule %s --trace %s/m-nogpu.csv", sched, dir);
  struct ds_test_result r =
      ds_test_run("ASAN_OPTIONS=detect_leaks=0 CUDA_VISIBLE_DEVICES=", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 1, "exit %d\nstderr: %s", r.status, r.err);
  cr_assert(strstr(r.err, "no GPU found") && strstr(r.err, "--device cpu replays on CPU ranks"),
            "stderr: %s", r.err);
  ds_test_release(&r);
}

/* calibrate without a GPU says it needs one: the replay's way out,
 * --device cpu, is one calibrate refuses. */
Test(real_cpu, calibrate_without_a_gpu_says_it_needs_one) {
  char sched[PATH_BUF], args[1024];
  in_dir(sched, "s-nogpu-cal.csv");
  predict(1, sched);
  snprintf(args, sizeof args, "calibrate --schedule %s --out %s/cal-nogpu.yaml", sched, dir);
  struct ds_test_result r =
      ds_test_run("ASAN_OPTIONS=detect_leaks=0 CUDA_VISIBLE_DEVICES=", ds_test_ddpreal(), args);
  cr_assert_neq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "no GPU found") &&
                strstr(r.err, "calibrate measures a GPU and needs one (no --device cpu)") &&
                !strstr(r.err, "replays on CPU ranks"),
            "stderr: %s", r.err);
  ds_test_release(&r);
}

/* collective without a GPU says so as the replay and calibrate do, CUDA's
 * reason included, whether the GPU count is probed (no -g) or each rank
 * picks its GPU (-g 2); it used to say "cudaGetDeviceCount failed or
 * returned 0" without the reason in the first case, and neither said there
 * is no CPU device to fall back on. */
Test(real_cpu, collective_without_a_gpu_says_it_needs_one) {
  const char *args[] = {"collective -b 8 -e 8", "collective -g 2 -b 8 -e 8"};
  for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
    struct ds_test_result r =
        ds_test_run("ASAN_OPTIONS=detect_leaks=0 CUDA_VISIBLE_DEVICES=", ds_test_ddpreal(), args[i]);
    cr_assert_eq(r.status, 1, "%s: exit %d\nstderr: %s", args[i], r.status, r.err);
    cr_assert(strstr(r.err, "no GPU found (CUDA: ") &&
                  strstr(r.err, "collective measures GPUs and needs one (no CPU device)"),
              "%s: stderr: %s", args[i], r.err);
    ds_test_release(&r);
  }
}

Test(real_cpu, collective_algo_and_proto_are_checked) {
  const char *bad[][2] = {{"collective --algo foo", "--algo 'foo': expected ring, tree"},
                          {"collective --proto LL64", "--proto 'LL64': expected LL, LL128"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_test_result r = ds_test_run("", ds_test_ddpreal(), bad[i][0]);
    cr_assert_eq(r.status, 2, "%s: exit %d, stderr %s", bad[i][0], r.status, r.err);
    cr_assert(strstr(r.err, bad[i][1]) != NULL, "%s: stderr %s", bad[i][0], r.err);
    ds_test_release(&r);
  }
  struct ds_test_result h = ds_test_run("", ds_test_ddpreal(), "collective --algo Tree --help");
  cr_assert_eq(h.status, 0);
  cr_assert(strstr(h.out, "--proto P") != NULL, "%s", h.out);
  ds_test_release(&h);
}

/* ddpreal names the subcommand once, and a made-up flag given last is
 * unknown: `ddpreal collective --colour` said "ddpreal collective:
 * collective: --colour needs a value (see --help)" (the parsers alone:
 * test_real_collective_args.c, test_real_calibrate_args.c). */
Test(real_cpu, collective_and_calibrate_name_a_made_up_flag_once) {
  const char *cases[][2] = {
      {"collective --colour",
       "ddpreal collective: unknown option \"--colour\" (see ddpreal collective --help)\n"},
      {"calibrate --schedule s.csv --colour",
       "ddpreal calibrate: unknown option \"--colour\" (see ddpreal calibrate --help)\n"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_test_result r = ds_test_run("", ds_test_ddpreal(), cases[i][0]);
    cr_assert_eq(r.status, 2, "%s: exit %d, stderr %s", cases[i][0], r.status, r.err);
    cr_assert(strstr(r.err, cases[i][1]) == r.err, "%s: stderr %s", cases[i][0], r.err);
    ds_test_release(&r);
  }
}
#endif

/* Without the cuda device, `ddpreal collective` says what it needs. */
#ifndef DS_HAVE_CUDA
Test(real_cpu, collective_needs_cuda) {
  struct ds_test_result r = ds_test_run("", ds_test_ddpreal(), "collective -g 2");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "needs the cuda device") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
  /* its options are read first: help and usage errors as in a cuda build */
  r = ds_test_run("", ds_test_ddpreal(), "collective --help");
  cr_assert_eq(r.status, 0);
  cr_assert(strstr(r.out, "usage: ddpreal collective") != NULL, "stdout: %s", r.out);
  ds_test_release(&r);
  r = ds_test_run("", ds_test_ddpreal(), "calibrate --colour");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "unknown option \"--colour\"") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
}
#endif

/* A collective the device cannot run (here an all-reduce on the compute
 * stream) used to be found when the device opened, inside the MPI job:
 * no file or line, and an MPI_ABORT banner even on one rank. It is now
 * checked right after the schedule is read: FILE:LINE: op N, exit 2. */
Test(real_cpu, a_collective_the_device_cannot_run_names_file_and_line) {
  char sched[PATH_BUF], args[1024];
  FILE *fp = fopen(in_dir(sched, "comp-ar.csv"), "w");
  cr_assert(fp != NULL);
  fputs("# ddpsim-schedule v2\n"
        "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps\n"
        "0,0,compute,fwd,l0,0,-1,-1,-1,,0,0,5,\n"
        "1,0,compute,allreduce,ar,-1,0,0,-1,,1024,0,10,0\n"
        "# end: 2 rows\n",
        fp);
  fclose(fp);
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s/never.csv", sched, dir);
  struct ds_test_result r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "comp-ar.csv:4: op 1: allreduce on the compute stream") != NULL,
            "stderr: %s", r.err);
  cr_assert(strstr(r.err, "MPI_ABORT") == NULL, "stderr: %s", r.err);
  ds_test_release(&r);
}

/* Rank 0 gathers every rank's times in one MPI_Gather, at most INT_MAX
 * bytes: 8 * (1 + iters * (1 + 2 * ops of the busiest rank)). With 1344
 * ops on one rank the ceiling is (INT_MAX / 8 - 1) / 2689 = 99827
 * iterations. --iters 99828 used to run (about 70 s) and then fail at the
 * gather; it is refused before anything runs, naming the ceiling. */
Test(real_cpu, iters_past_what_the_results_gather_carries_exit_2_before_running) {
  char sched[PATH_BUF], never[PATH_BUF], args[2048];
  FILE *fp = fopen(in_dir(sched, "many.csv"), "w");
  cr_assert(fp != NULL);
  fputs("# ddpsim-schedule v2\n"
        "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps\n",
        fp);
  for (int i = 0; i < 1344; i++) fprintf(fp, "%d,0,host,fwd,h,-1,-1,-1,-1,,0,0,0,\n", i);
  fputs("# end: 1344 rows\n", fp);
  fclose(fp);
  in_dir(never, "never.csv");
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s --iters 99828 --warmup 0",
           sched, never);
  struct ds_test_result r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "option --iters: 99828 iterations of 1344 ops on one rank") != NULL,
            "stderr: %s", r.err);
  cr_assert(strstr(r.err, "use --iters 99827 or fewer") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
  cr_assert_neq(access(never, F_OK), 0, "a trace was written");
}

/* --trace - writes the trace on standard output; the summary used to
 * follow it there, and `ddpsim analyze` refused the result. The summary
 * goes to standard error then, as ddpsim's report does. */
Test(real_cpu, trace_to_stdout_keeps_the_summary_off_it) {
  char sched[PATH_BUF], trace[PATH_BUF], args[1024];
  in_dir(sched, "s1-dash.csv");
  predict(1, sched);
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace - --iters 2", sched);
  struct ds_test_result r = ds_test_run("ASAN_OPTIONS=detect_leaks=0 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 0, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.out, "#wrong:") == NULL, "the summary is on stdout: %s", r.out);
  cr_assert(strstr(r.err, "#wrong: 0") != NULL, "stderr: %s", r.err);
  FILE *fp = fopen(in_dir(trace, "dash.csv"), "w");
  cr_assert(fp != NULL);
  fputs(r.out, fp);
  fclose(fp);
  ds_test_release(&r);
  check_trace(sched, trace, 2);
}

/* Under mpirun every rank reads the flags and the schedule; an error there
 * used to print on rank 0 only, so a rank that failed alone (its node
 * lacking the file, say) said nothing. Every rank prints, after "rank R:". */
Test(real_cpu, an_error_before_the_launcher_prints_on_every_rank) {
  char args[1024];
  snprintf(args, sizeof args, "--device cpu --schedule %s/missing.csv --trace %s/t.csv", dir,
           dir);
  struct ds_test_result r = ds_test_run(MPIRUN "-np 2 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 2, "exit %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "ddpreal: rank 0: option --schedule:") != NULL, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "ddpreal: rank 1: option --schedule:") != NULL, "stderr: %s", r.err);
  ds_test_release(&r);
}

/* Each rank sends rank 0 the times of its own ops only (records as long as
 * the busiest rank's): with ranks of unequal op counts (3 compute ops on
 * rank 0, 1 on rank 1, then an all-reduce) every op still lands on its own
 * row: rank 1's 70 us op lasts at least 70 us and rank 0's 50 us ones at
 * least 50 us, which a mix-up of the ranks' slots would break. */
Test(real_cpu, ranks_with_unequal_op_counts_keep_their_times) {
  char sched[PATH_BUF], trace[PATH_BUF], args[2048];
  FILE *fp = fopen(in_dir(sched, "uneven.csv"), "w");
  cr_assert(fp != NULL);
  fputs("# ddpsim-schedule v2\n"
        "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps\n"
        "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,50,\n"
        "1,0,compute,fwd,b,0,-1,-1,-1,,0,0,50,0\n"
        "2,0,compute,fwd,c,0,-1,-1,-1,,0,0,50,1\n"
        "3,1,compute,fwd,a,0,-1,-1,-1,,0,0,70,\n"
        "4,0,comm,allreduce,ar,-1,0,0,-1,,4096,0,10,2\n"
        "5,1,comm,allreduce,ar,-1,0,0,-1,,4096,0,10,3\n"
        "# end: 6 rows\n",
        fp);
  fclose(fp);
  in_dir(trace, "uneven-measured.csv");
  snprintf(args, sizeof args, "--device cpu --schedule %s --trace %s --iters 3", sched, trace);
  struct ds_test_result r = ds_test_run(MPIRUN "-np 2 ", ds_test_ddpreal(), args);
  cr_assert_eq(r.status, 0, "exit %d, stderr %s", r.status, r.err);
  ds_test_release(&r);
  check_trace(sched, trace, 3);
  struct ds_err err = {0};
  struct ds_trace *t;
  cr_assert_eq(ds_trace_read_csv(trace, &t, &err), DS_OK, "%s", err.msg);
  for (size_t i = 0; i < t->n_rows; i++) {
    const struct ds_op *o = &t->rows[i].sched->ops[t->rows[i].op];
    double us = (double)(t->rows[i].end_ns - t->rows[i].start_ns) / 1e3;
    if (o->kind == DS_OP_FWD)
      cr_assert_geq(us, o->dur_us, "op %lld lasted %.1f us, its dur_us is %.0f",
                    (long long)o->id, us, o->dur_us);
  }
  ds_trace_free(t);
}
