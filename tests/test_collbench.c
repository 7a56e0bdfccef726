/*
 * `ddpsim collective`: the table's numbers are the ring's closed form on a
 * uniform ring, busbw stays under the bottleneck link, and bad flags are
 * usage errors that name the flag.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/collbench.h"

struct output {
  ds_status st;
  struct ds_err err;
  char *text;
};

static struct output run(const char *args) {
  char buf[1024], *argv[64];
  int argc = 0;
  snprintf(buf, sizeof buf, "collective %s", args);
  for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " "))
    argv[argc++] = tok;
  argv[argc] = NULL;
  struct output o = {0};
  size_t len = 0;
  FILE *fp = open_memstream(&o.text, &len);
  cr_assert(fp != NULL);
  o.st = ds_collbench_main(argc, argv, fp, &o.err);
  fclose(fp);
  return o;
}

struct csv_row {
  int nranks;
  double size, time_us, busbw;
};

/* Parses the CSV rows after the header; returns how many. */
static int parse_rows(const char *text, struct csv_row *rows, int cap) {
  const char *line = strchr(text, '\n');
  int n = 0;
  while (line && line[1] && n < cap) {
    line++;
    double count, algbw;
    int got = sscanf(line, "allreduce,ring,none,%d,%lf,%lf,float,%lf,%lf,%lf",
                     &rows[n].nranks, &rows[n].size, &count, &rows[n].time_us,
                     &algbw, &rows[n].busbw);
    cr_assert_eq(got, 6, "bad row: %.80s", line);
    n++;
    line = strchr(line, '\n');
  }
  return n;
}

Test(collbench, table_is_the_ring_closed_form_on_a_uniform_ring) {
  /* ring8: a hop crosses two 12.5 GB/s, 1 us links (alpha = 2 us).
   * Expected, because T = 2(N-1) alpha + 2(N-1)/N S/B, to within the
   * half-nanosecond rounding of each of the 2(N-1) steps. */
  struct output o = run("--topo tests/data/ring8.yaml -b 8 -e 1G -f 8 --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  struct csv_row rows[32];
  int n = parse_rows(o.text, rows, 32);
  cr_assert_eq(n, 10, "%s", o.text); /* 8 B .. 1 GiB by 8x */
  for (int i = 0; i < n; i++) {
    double expect_ns = 14 * 2000 + 14.0 / 8 * rows[i].size / 12.5e9 * 1e9;
    cr_assert_eq(rows[i].nranks, 8);
    cr_assert_leq(fabs(rows[i].time_us * 1e3 - expect_ns), 8.0, "S=%g: %g us vs %g ns",
                  rows[i].size, rows[i].time_us, expect_ns);
  }
  free(o.text);
}

Test(collbench, busbw_never_exceeds_the_bottleneck_and_reaches_it) {
  /* Expected, because each rank sends 2(N-1)/N S bytes through its 12.5 GB/s
   * link: busbw = that / T <= 12.5, and the latency term vanishes at 1 GiB. */
  struct output o = run("--topo tests/data/ring8.yaml -b 1K -e 1G -f 4 --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  struct csv_row rows[32];
  int n = parse_rows(o.text, rows, 32);
  cr_assert_gt(n, 5);
  for (int i = 0; i < n; i++) cr_assert_leq(rows[i].busbw, 12.5 * (1 + 1e-9));
  cr_assert_geq(rows[n - 1].busbw, 12.49, "%g", rows[n - 1].busbw);
  free(o.text);
}

Test(collbench, fewer_ranks_with_g) {
  /* -g 4: the first four GPUs; same formula with N = 4. */
  struct output o = run("--topo tests/data/ring8.yaml -g 4 -b 100M -e 100M --format csv");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  struct csv_row rows[4];
  cr_assert_eq(parse_rows(o.text, rows, 4), 1);
  cr_assert_eq(rows[0].nranks, 4);
  double expect_ns = 6 * 2000 + 6.0 / 4 * rows[0].size / 12.5e9 * 1e9;
  cr_assert_leq(fabs(rows[0].time_us * 1e3 - expect_ns), 4.0);
  free(o.text);
}

Test(collbench, json_has_one_object_per_size) {
  struct output o = run("--topo tests/data/ring8.yaml -b 1M -e 4M --format json");
  cr_assert_eq(o.st, DS_OK, "%s", o.err.msg);
  cr_assert(strncmp(o.text, "[\n", 2) == 0 && strstr(o.text, "\n]\n"), "%s", o.text);
  int objects = 0;
  for (const char *p = o.text; (p = strstr(p, "\"op\": \"allreduce\"")); p++) objects++;
  cr_assert_eq(objects, 3); /* 1, 2, 4 MiB */
  free(o.text);
}

Test(collbench, bad_flags_are_usage_errors_naming_the_flag) {
  const char *cases[][2] = {
      {"--topo tests/data/ring8.yaml --op broadcast", "--op"},
      {"--topo tests/data/ring8.yaml --algo tree", "--algo"},
      {"--topo tests/data/ring8.yaml -b 2", "-b"},
      {"--topo tests/data/ring8.yaml -e 1X", "-e"},
      {"--topo tests/data/ring8.yaml -f 1", "-f"},
      {"--topo tests/data/ring8.yaml -g 9", "-g"},
      {"--topo tests/data/ring8.yaml -b 1M -e 1K", "-e"},
      {"--topo tests/data/ring8.yaml --format xml", "--format"},
      {"--topo tests/data/ring8.yaml --frobnicate 1", "--frobnicate"},
      {"-b 8", "--topo"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct output o = run(cases[i][0]);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", cases[i][0], o.st);
    cr_assert(strstr(o.err.msg, cases[i][1]), "%s: message \"%s\"", cases[i][0], o.err.msg);
    free(o.text);
  }
}
