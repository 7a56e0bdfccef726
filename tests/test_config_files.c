/*
 * Tests for base/config.c, whole files: the root a mapping, an empty or a
 * second document, libyaml's syntax errors at their place, deep nesting
 * and huge files refused quickly, loading from a file (missing, a
 * directory), and NULL and absent nodes. Typed reads:
 * test_config_values.c; keys: test_config_keys.c; the shared loaders:
 * tests/config_load.h.
 *
 * Lines and columns in the expected messages are 1-based and counted by
 * hand from the YAML literals; each test says which character they point at.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "tests/config_load.h"
#include "tests/support.h"

/* The root must be a mapping; a list or a bare word is refused at 1:1. */
Test(config, non_mapping_root) {
  struct ds_err err = {DS_OK, ""};
  struct ds_cnode root;
  struct ds_config *cfg = load("- a\n- b\n");
  cr_assert_eq(ds_config_root(cfg, &root, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:1: expected a mapping of settings at "
                            "the top level, got a sequence");
  ds_config_free(cfg);
  cfg = load("hello\n");
  cr_assert_eq(ds_config_root(cfg, &root, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:1: expected a mapping of settings at "
                            "the top level, got \"hello\"");
  ds_config_free(cfg);
}

/* An empty file or one holding only comments has no document. */
Test(config, empty_document) {
  struct ds_err err = {DS_OK, ""};
  cr_assert_str_eq(load_fail("", &err),
                   "t.yaml: empty document (expected a mapping of settings)");
  cr_assert_str_eq(load_fail("# nothing here\n\n", &err),
                   "t.yaml: empty document (expected a mapping of settings)");
}

/* A second document would be ignored silently, so it is an error at its
 * start (the "---" on line 2). */
Test(config, second_document) {
  struct ds_err err = {DS_OK, ""};
  const char *msg = load_fail("a: 1\n---\nb: 2\n", &err);
  cr_assert(strstr(msg, "t.yaml:2:1: a second YAML document") == msg, "%s",
            msg);
}

/* Syntax errors carry libyaml's own problem text at its line and column:
 * the unclosed flow sequence is noticed at the end of input, line 2. */
Test(config, syntax_error) {
  struct ds_err err = {DS_OK, ""};
  const char *msg = load_fail("a: [1, 2\nb: 3\n", &err);
  cr_assert(strstr(msg, "t.yaml:") == msg, "%s", msg);
  cr_assert(strstr(msg, "YAML syntax error: ") != NULL, "%s", msg);
  cr_assert_eq(err.status, DS_EINPUT);

  /* A tab used for indentation: libyaml says "found character that cannot
   * start any token" at line 2, column 1. */
  msg = load_fail("a:\n\tb: 1\n", &err);
  cr_assert_str_eq(msg, "t.yaml:2:1: YAML syntax error: found character "
                        "that cannot start any token while scanning for the "
                        "next token (started at line 2, column 1)");

  /* Bytes that are not UTF-8 are a reader error; libyaml gives a byte
   * offset, the message a line and column (issue #15, defect 10). */
  msg = load_fail("a: \xff\n", &err);
  cr_assert(strstr(msg, "t.yaml:1:4: invalid text: ") == msg, "%s", msg);
  msg = load_fail("a: 1\nbb: \xc3\xa9\xff\n", &err);
  cr_assert(strstr(msg, "t.yaml:2:6: invalid text: ") == msg, "%s", msg);
}

/* Deep nesting is refused before libyaml builds it: 100 KB of unclosed '['
 * cost 27-29 s of CPU in every YAML reader (issue #15, defect 2). 64 levels
 * are accepted, the 65th is refused at its position; the refusal of 100,000
 * levels takes well under a second. */
Test(config, deep_nesting_is_refused_quickly) {
  char text[200];
  memset(text, '[', 64);
  memset(text + 64, ']', 64);
  text[128] = '\0';
  struct ds_config *cfg = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_config_load_string("t.yaml", text, &cfg, &err), DS_OK, "%s", err.msg);
  ds_config_free(cfg);
  cfg = NULL;
  memset(text, '[', 65);
  text[65] = '\0';
  cr_assert_eq(ds_config_load_string("t.yaml", text, &cfg, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:65: nested more than 64 levels deep (a ddpsim file "
                            "needs a few; is a bracket not closed?)");
  size_t n = 100000;
  char *deep = malloc(n + 1);
  memset(deep, '[', n);
  deep[n] = '\0';
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(ds_config_load_string("t.yaml", deep, &cfg, &err), DS_EINPUT);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  cr_assert_lt(s, 1.0, "took %.2f s", s);
  cr_assert(strstr(err.msg, "nested more than 64 levels"), "%s", err.msg);
  free(deep);
}

/* A file past 16 MiB is refused before it is parsed. */
Test(config, huge_files_are_refused) {
  char path[] = "/tmp/ddpsim_test_config_XXXXXX";
  ds_test_write_temp(path, "a: 1\n");
  cr_assert_eq(truncate(path, (off_t)DS_CONFIG_BYTES_MAX + 1), 0);
  struct ds_config *cfg = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_config_load(path, &cfg, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "more than 16 MiB"), "%s", err.msg);
  unlink(path);
}

/* Loading from a file reads it whole; a missing file or a directory is an
 * input error naming the path and the system's reason. */
Test(config, load_file) {
  char path[] = "/tmp/ddpsim_test_config_XXXXXX";
  ds_test_write_temp(path, "schema_version: 1\nlink_bw: fast\n");

  struct ds_config *cfg = NULL;
  struct ds_err err = {DS_OK, ""};
  cr_assert_eq(ds_config_load(path, &cfg, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(ds_config_path(cfg), path);
  struct ds_cnode root = root_of(cfg), bw = get(&root, "link_bw");
  double d;
  cr_assert_eq(ds_cnode_bw(&bw, &d, &err), DS_EINPUT);
  char want[256];
  snprintf(want, sizeof want,
           "%s:2:10: key 'link_bw': expected a bandwidth like \"25GBps\" or \"400Gbps\" "
           "(B bytes, b bits; per second as ps or /s; 1 Bps to 1e15 Bps), got \"fast\"",
           path);
  cr_assert_str_eq(err.msg, want);
  ds_config_free(cfg);
  unlink(path);

  cfg = NULL;
  cr_assert_eq(ds_config_load("/nonexistent/dir/4gpu.yaml", &cfg, &err),
               DS_EINPUT);
  cr_assert_null(cfg);
  cr_assert_str_eq(err.msg, "/nonexistent/dir/4gpu.yaml: cannot open: No "
                            "such file or directory");

  cr_assert_eq(ds_config_load("/", &cfg, &err), DS_EINPUT);
  cr_assert_null(cfg);
  cr_assert_str_eq(err.msg, "/: cannot read: Is a directory");
}

/* Destructors accept NULL; accessors on an absent node fail cleanly. */
Test(config, null_and_absent) {
  ds_config_free(NULL);
  struct ds_config *cfg = load("a: 1\n");
  struct ds_cnode root = root_of(cfg), missing;
  struct ds_err err = {DS_OK, ""};
  int64_t v;
  cr_assert_not(ds_cmap_get(&root, "zzz", &missing));
  cr_assert_not(ds_cnode_is_scalar(&missing));
  cr_assert_eq(ds_cnode_int64(&missing, &v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml: key 'zzz': expected an integer, got "
                            "nothing");
  /* Errors may be discarded by passing NULL. */
  cr_assert_eq(ds_cnode_int64(&missing, &v, NULL), DS_EINPUT);
  ds_config_free(cfg);
}
