/*
 * The simulate command's own timeline files (sim/cli/timeline.c):
 * `ddpsim --plot FILE` with nothing swept draws the reported iteration,
 * `ddpsim --chrome FILE` writes the run's Chrome trace JSON; with a sweep
 * --plot stays the sweep plot (tests/test_sweep.c) and --chrome is refused.
 * The files are drawn by the code of `ddpsim analyze TRACE.csv`, so the
 * Chrome JSON of a run equals analyze's of the run's --trace. A failure
 * leaves no output file behind (the run keeps its trace in memory). The binary
 * under test is $DDPSIM_BIN as in tests/test_cli.c.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support.h"

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Removes dir/name for each name, then dir: fails when anything else is
 * left in it. */
static void clean(const char *dir, const char *const *names, int n) {
  char path[512];
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    cr_assert_eq(unlink(path), 0, "%s was not written", path);
  }
  cr_assert_eq(rmdir(dir), 0, "files left behind in %s", dir);
}

Test(timeline, plot_without_a_sweep_draws_the_run) {
  ds_test_require_gnuplot();
  char dir[] = "/tmp/ddpsim-timeline-test-XXXXXX", args[512];
  cr_assert(mkdtemp(dir) != NULL);
  struct ds_test_result plain = ds_test_cli_env("", TINY "--format csv");
  cr_assert_eq(plain.status, 0, "%s", plain.err);
  const char *ext[] = {"png", "svg"}, *magic[] = {"\x89PNG\r\n\x1a\n", "<?xml"};
  for (int k = 0; k < 2; k++) {
    snprintf(args, sizeof args, TINY "--format csv --plot %s/t.%s", dir, ext[k]);
    struct ds_test_result r = ds_test_cli_env("", args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    /* The report is the run's own, as without --plot. */
    cr_assert_str_eq(r.out, plain.out);
    char path[512];
    snprintf(path, sizeof path, "%s/t.%s", dir, ext[k]);
    ds_test_assert_image(path, magic[k], strlen(magic[k]));
    ds_test_release(&r);
  }
  ds_test_release(&plain);
  const char *names[] = {"t.png", "t.svg"};
  clean(dir, names, 2);
}

Test(timeline, chrome_has_only_the_predicted_ranks) {
  char dir[] = "/tmp/ddpsim-timeline-test-XXXXXX", args[1024], json_path[300],
       trace[300], again[300];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(json_path, sizeof json_path, "%s/run.json", dir);
  snprintf(trace, sizeof trace, "%s/run.csv", dir);
  snprintf(again, sizeof again, "%s/again.json", dir);
  snprintf(args, sizeof args, TINY "--world-size 2 --chrome %s --trace %s", json_path, trace);
  struct ds_test_result r = ds_test_cli_env("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "reporting iteration 1"), "%s", r.out);
  char *json = ds_test_slurp(json_path);
  cr_assert(strncmp(json, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", 42) == 0);
  cr_assert(strstr(json, "\"predicted rank 0\"") && strstr(json, "\"predicted rank 1\""));
  cr_assert_null(strstr(json, "measured"), "a measured process in a prediction");
  cr_assert_null(strstr(json, "\"pid\": 2,"), "2 ranks, pids 0 and 1");
  cr_assert_gt(count(json, "\"ph\": \"X\""), 0);
  /* The same file as analyze draws from the run's trace, which was kept. */
  snprintf(args, sizeof args, "analyze %s --chrome %s", trace, again);
  struct ds_test_result a = ds_test_cli_env("", args);
  cr_assert_eq(a.status, 0, "%s", a.err);
  char *json2 = ds_test_slurp(again);
  cr_assert_str_eq(json, json2);
  free(json);
  free(json2);
  ds_test_release(&r);
  ds_test_release(&a);
  const char *names[] = {"run.json", "run.csv", "again.json"};
  clean(dir, names, 3);
}

Test(timeline, chrome_and_a_trace_on_stdout_keep_the_output) {
  /* --trace - has standard output alone, with or without --chrome; the
   * report is on standard error. */
  char dir[] = "/tmp/ddpsim-timeline-test-XXXXXX", args[512];
  cr_assert(mkdtemp(dir) != NULL);
  struct ds_test_result plain = ds_test_cli_env("", TINY "--trace - --format csv");
  snprintf(args, sizeof args, TINY "--trace - --format csv --chrome %s/t.json", dir);
  struct ds_test_result r = ds_test_cli_env("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strncmp(r.out, "# ddpsim-trace v2\n", 18) == 0, "%.40s", r.out);
  cr_assert_str_eq(r.out, plain.out);
  cr_assert_str_eq(r.err, plain.err);
  ds_test_release(&r);
  ds_test_release(&plain);
  const char *names[] = {"t.json"};
  clean(dir, names, 1);
}

/* The last line of text (without its newline) into buf. */
static const char *last_line(const char *text, char *buf, size_t cap) {
  size_t n = strlen(text);
  while (n > 0 && text[n - 1] == '\n') n--;
  size_t start = n;
  while (start > 0 && text[start - 1] != '\n') start--;
  snprintf(buf, cap, "%.*s", (int)(n - start), text + start);
  return buf;
}

/* An output file on "-" is standard output whole: the Chrome JSON ends the
 * output (it was followed by the text report), a trace or schedule ends
 * with its "# end" line; the report, as a run without it prints it, is on
 * standard error. */
Test(timeline, an_output_on_stdout_has_it_alone) {
  struct ds_test_result plain = ds_test_cli_env("", TINY "--format csv");
  cr_assert_eq(plain.status, 0, "%s", plain.err);
  const char *cases[] = {"--chrome -", "--trace -", "--schedule -"};
  const char *ends[] = {"]}", "# end: ", "# end: "};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[256], line[256];
    snprintf(args, sizeof args, TINY "--format csv %s", cases[i]);
    struct ds_test_result r = ds_test_cli_env("", args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    cr_assert(strncmp(last_line(r.out, line, sizeof line), ends[i], strlen(ends[i])) == 0,
              "%s: stdout ends with \"%s\"", args, line);
    cr_assert_str_eq(r.err, plain.out, "%s: the report is not on stderr", args);
    ds_test_release(&r);
  }
  ds_test_release(&plain);
}

/* Two outputs on "-" would run two files together: refused as two on one
 * file are. */
Test(timeline, two_outputs_on_stdout_are_refused) {
  ds_test_ddpsim_refuses(TINY "--chrome - --trace -",
                         "options --trace - and --chrome -: both write standard output");
  ds_test_ddpsim_refuses(TINY "--trace - --schedule -",
                         "options --trace - and --schedule -: both write standard output");
}

/* A named output that is the file standard output is redirected to (a
 * shell's "> x.csv", or /dev/stdout) would be renamed over it, and what
 * goes to standard output (the report, or a "-" output) would be lost in
 * the unlinked file: refused before any work, the file left as the shell
 * made it (empty). The old ddpsim exited 0 with x.csv the schedule alone. */
Test(timeline, an_output_on_the_file_stdout_writes_is_refused) {
  char dir[] = "/tmp/ddpsim-timeline-test-XXXXXX", cmd[2048], path[64];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/x.csv", dir);
  const char *extra[] = {"", "--trace - "};
  for (size_t i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "%s " TINY "%s--schedule %s > %s 2> %s/err.txt", ds_test_ddpsim(),
             extra[i], path, path, dir);
    int rc = system(cmd);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "%s: %d", cmd, rc);
    char errpath[600];
    snprintf(errpath, sizeof errpath, "%s/err.txt", dir);
    char *err = ds_test_slurp(errpath);
    cr_assert(strstr(err, "option --schedule") &&
                  strstr(err, "standard output is redirected to that file"),
              "%s", err);
    free(err);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 0, "%s: the file was written", cmd);
  }
  const char *names[] = {"x.csv", "err.txt"};
  clean(dir, names, 2);
}

Test(timeline, chrome_with_a_sweep_is_refused) {
  char dir[] = "/tmp/ddpsim-timeline-test-XXXXXX", args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --chrome %s/t.json", dir);
  ds_test_ddpsim_refuses(args, "option --chrome writes one configuration's timeline: "
                               "give one --bucket-mb value");
  snprintf(args, sizeof args, TINY "--strategy dp,ddp --chrome %s/t.json", dir);
  ds_test_ddpsim_refuses(args, "option --chrome writes one configuration's timeline: "
                               "give one --strategy");
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --plot %s/t.png --chrome %s/t.json",
           dir, dir);
  ds_test_ddpsim_refuses(args, "--chrome");
  /* Two swept options: neither a sweep plot nor a timeline. */
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --batch 1,2 --plot %s/t.png", dir);
  ds_test_ddpsim_refuses(args, "(2 given; docs/sweeps.md), or none for the run's timeline");
  clean(dir, NULL, 0);
}

Test(timeline, a_failure_leaves_nothing_behind) {
  char dir[] = "/tmp/ddpsim-timeline-test-XXXXXX", args[512];
  cr_assert(mkdtemp(dir) != NULL);
  /* No gnuplot: said before the simulation; no report, no file. */
  snprintf(args, sizeof args, TINY "--plot %s/t.png --chrome %s/t.json", dir, dir);
  struct ds_test_result r = ds_test_cli_env("DDPSIM_GNUPLOT=/nonexistent/gnuplot", args);
  cr_assert_eq(r.status, 1, "%s", r.err);
  cr_assert(strstr(r.err, "gnuplot"), "%s", r.err);
  cr_assert_str_empty(r.out);
  ds_test_release(&r);
  /* gnuplot fails: the Chrome JSON, written first, is not kept either. */
  r = ds_test_cli_env("DDPSIM_GNUPLOT=/bin/false", args);
  cr_assert_eq(r.status, 1, "%s", r.err);
  cr_assert_str_empty(r.out);
  ds_test_release(&r);
  /* A directory that does not exist: exit 1 naming it. */
  snprintf(args, sizeof args, TINY "--chrome %s/no/t.json", dir);
  r = ds_test_cli_env("", args);
  cr_assert_eq(r.status, 1, "%s", r.err);
  cr_assert(strstr(r.err, "/no/t.json"), "%s", r.err);
  cr_assert_str_empty(r.out);
  ds_test_release(&r);
  /* A bad extension is a usage error before any work. */
  snprintf(args, sizeof args, TINY "--plot %s/t.pdf", dir);
  ds_test_ddpsim_refuses(args, "option --plot: expected a file name ending in .png or .svg");
  clean(dir, NULL, 0);
}

Test(timeline, the_in_memory_trace_draws_as_the_trace_file_reads_back) {
  /* The run draws its trace from memory (ds_run_capture); analyze reads the
   * --trace file the same run wrote. Equal Chrome JSON for every strategy
   * means the in-memory copy is what the file holds. */
  static const char *const strategies[] = {
      "--strategy single", "--strategy dp --world-size 2", "--strategy ddp --static-graph",
      "--strategy ps --world-size 3", "--strategy ps --ps-mode async --world-size 3"};
  char dir[] = "/tmp/ddpsim-timeline-test-XXXXXX", args[1024], json_path[300], trace[300],
       again[300];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(json_path, sizeof json_path, "%s/run.json", dir);
  snprintf(trace, sizeof trace, "%s/run.csv", dir);
  snprintf(again, sizeof again, "%s/again.json", dir);
  for (size_t i = 0; i < sizeof strategies / sizeof *strategies; i++) {
    snprintf(args, sizeof args, TINY "%s --chrome %s --trace %s", strategies[i], json_path,
             trace);
    struct ds_test_result r = ds_test_cli_env("", args);
    cr_assert_eq(r.status, 0, "%s: %s", strategies[i], r.err);
    snprintf(args, sizeof args, "analyze %s --chrome %s", trace, again);
    struct ds_test_result a = ds_test_cli_env("", args);
    cr_assert_eq(a.status, 0, "%s", a.err);
    char *json = ds_test_slurp(json_path), *json2 = ds_test_slurp(again);
    cr_assert_gt(count(json, "\"ph\": \"X\""), 0);
    cr_assert_str_eq(json, json2, "%s", strategies[i]);
    free(json);
    free(json2);
    ds_test_release(&r);
    ds_test_release(&a);
  }
  const char *names[] = {"run.json", "run.csv", "again.json"};
  clean(dir, names, 3);
}

/* One complete event of the Chrome JSON: its track and times in µs. */
struct slice {
  int pid, tid;
  double ts, end;
};

static int slice_order(const void *pa, const void *pb) {
  const struct slice *a = pa, *b = pb;
  if (a->pid != b->pid) return a->pid - b->pid;
  if (a->tid != b->tid) return a->tid - b->tid;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  if (a->end != b->end) return a->end > b->end ? -1 : 1; /* the outer one first */
  return 0;
}

static double number_after(const char *line, const char *key) {
  const char *p = strstr(line, key);
  cr_assert(p, "no %s in %s", key, line);
  return strtod(p + strlen(key), NULL);
}

/* Complete events on one thread must nest, or Perfetto drops or misdraws
 * them. ps with four servers pulls from several at once on one rank's comm
 * stream (a new user's review: 16 pulls on ResNet-50's 4gpu run crossed
 * their neighbours); those go to a second comm thread, "comm 2", and every
 * thread's events nest. Exact to the nanosecond: ts and end differ by 0.001
 * at least where they differ. */
Test(timeline, chrome_events_on_one_thread_nest) {
  struct ds_test_result r =
      ds_test_cli(TINY "--strategy ps --ps-servers 4 --iters 3 --chrome -");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\"tid\": 5, \"args\": {\"name\": \"comm 2\"}"), "%s", r.out);
  size_t n = 0, cap = (size_t)count(r.out, "\"ph\": \"X\"");
  struct slice *s = calloc(cap ? cap : 1, sizeof *s);
  cr_assert(s);
  for (const char *line = r.out, *eol; *line; line = eol ? eol + 1 : line + strlen(line)) {
    eol = strchr(line, '\n');
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s", (int)(eol ? eol - line : (ptrdiff_t)strlen(line)), line);
    if (!strstr(buf, "\"ph\": \"X\"")) continue;
    cr_assert_lt(n, cap);
    double ts = number_after(buf, "\"ts\": ");
    s[n] = (struct slice){(int)number_after(buf, "\"pid\": "), (int)number_after(buf, "\"tid\": "),
                          ts, ts + number_after(buf, "\"dur\": ")};
    n++;
  }
  cr_assert_gt(n, 0);
  qsort(s, n, sizeof *s, slice_order);
  double open[64];
  int depth = 0;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && (s[i].pid != s[i - 1].pid || s[i].tid != s[i - 1].tid)) depth = 0;
    while (depth > 0 && open[depth - 1] <= s[i].ts + 0.0005) depth--;
    cr_assert(depth == 0 || s[i].end <= open[depth - 1] + 0.0005,
              "pid %d tid %d: [%.3f, %.3f] crosses an event ending at %.3f", s[i].pid,
              s[i].tid, s[i].ts, s[i].end, open[depth - 1]);
    cr_assert_lt(depth, 64);
    open[depth++] = s[i].end;
  }
  free(s);
  ds_test_release(&r);
}
