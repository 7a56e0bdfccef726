/*
 * What test_trace.c and test_trace_read.c share: the suite's fresh
 * directory under /tmp for every test (made by the suite's init, removed
 * with its files by its fini), a file's path in it, writing a file, the
 * schedule and trace CSV headers, and a read expected to fail. Included by
 * one test file per binary (it defines the suite `trace`); the functions
 * are static inline so that an includer need not use them all.
 */
#ifndef DS_TESTS_TRACE_FILES_H
#define DS_TESTS_TRACE_FILES_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "traces/trace.h"

static char dir[64];

static inline void make_dir(void) {
  strcpy(dir, "/tmp/ds_test_trace_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

/* Removes the files in dir (no subdirectories are created), then dir. */
static inline void remove_dir(void) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (unlink(p) != 0) rmdir(p);
  }
  closedir(d);
  rmdir(dir);
}

TestSuite(trace, .init = make_dir, .fini = remove_dir);

static inline const char *in_dir(const char *name) {
  static char p[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

static inline void spit(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  cr_assert_not_null(fp);
  fputs(text, fp);
  fclose(fp);
}

#define SCHED_HEADER \
  "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps\n"

#define TRACE_HEADER                                                       \
  "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us," \
  "deps,source,iter,start_us,end_us\n"

/* Writes text to a file, reads it as a schedule (or trace) and checks that
 * the read fails with DS_EINPUT and a message "PATH<want>". */
static inline void expect_read_error(int trace, const char *text, const char *want) {
  const char *path = in_dir("bad.csv");
  spit(path, text);
  struct ds_err err = {0};
  ds_status st;
  if (trace) {
    struct ds_trace *t = (struct ds_trace *)1;
    st = ds_trace_read_csv(path, &t, &err);
    cr_assert_eq(t, (struct ds_trace *)1, "no trace is returned on failure");
  } else {
    struct ds_schedule *s = (struct ds_schedule *)1;
    st = ds_schedule_read_csv(path, &s, &err);
    cr_assert_eq(s, (struct ds_schedule *)1, "no schedule is returned on failure");
  }
  cr_assert_eq(st, DS_EINPUT, "want failure \"%s\", got %d: %s", want, st, err.msg);
  char full[1024];
  snprintf(full, sizeof full, "%s%s", path, want);
  cr_assert(strstr(err.msg, full), "message \"%s\"\nlacks \"%s\"", err.msg, full);
}

#endif /* DS_TESTS_TRACE_FILES_H */
