/*
 * The bench/ Python scripts that read a command line: --help and -h print the
 * usage and the module's docstring on stdout and exit 0, a bad argument
 * is a usage error (exit 2, usage on stderr, no traceback). These used to
 * read --help as a file name and crash with a traceback (embed_feature_fit,
 * gconv_published, mem_split, trace_ops), raise a ValueError (host_kinds)
 * or, taking no arguments, run the whole job (aggregate_gap).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/support.h"

static const char *const scripts[] = {"embed_feature_fit", "gconv_published", "mem_split",
                                      "trace_ops", "host_kinds", "aggregate_gap"};

Test(bench_help, help_prints_the_usage_and_exits_0) {
  for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++) {
    for (int dash = 0; dash < 2; dash++) {
      char args[128], usage[128];
      snprintf(args, sizeof args, "bench/%s.py %s", scripts[i], dash ? "-h" : "--help");
      snprintf(usage, sizeof usage, "usage: python3 bench/%s.py", scripts[i]);
      struct ds_test_result r = ds_test_run("", "python3", args);
      cr_assert_eq(r.status, 0, "%s: exit %d\nstderr: %s", args, r.status, r.err);
      cr_assert(strstr(r.out, usage), "%s: stdout: %s", args, r.out);
      cr_assert(!strstr(r.err, "Traceback"), "%s: stderr: %s", args, r.err);
      ds_test_release(&r);
    }
  }
}

Test(bench_help, a_bad_argument_is_a_usage_error) {
  for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++) {
    char args[128], usage[128];
    snprintf(args, sizeof args, "bench/%s.py --no-such-option", scripts[i]);
    snprintf(usage, sizeof usage, "usage: python3 bench/%s.py", scripts[i]);
    struct ds_test_result r = ds_test_run("", "python3", args);
    cr_assert_eq(r.status, 2, "%s: exit %d\nstderr: %s", args, r.status, r.err);
    cr_assert(strstr(r.err, usage), "%s: stderr: %s", args, r.err);
    cr_assert(!strstr(r.err, "Traceback"), "%s: stderr: %s", args, r.err);
    ds_test_release(&r);
  }
}
