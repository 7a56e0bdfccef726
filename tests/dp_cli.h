/*
 * What the tests of --strategy single and dp (test_dp_iteration.c,
 * test_dp_schedule.c) share: the tiny topology and model's options, the
 * data rows of ddpsim's CSV output, and a file written into a directory.
 * The functions are static inline so that an includer need not use them
 * all.
 */
#ifndef DS_TESTS_DP_CLI_H
#define DS_TESTS_DP_CLI_H

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>

/* The tiny topology and model (test_dp_iteration.c works them by hand). */
#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

/* The data rows of ddpsim's CSV output: its lines less the header. */
static inline int rows(const char *out) {
  int n = -1;
  for (const char *p = out; *p; p++) n += *p == '\n';
  return n;
}

/* Writes text to dir/name and returns the path in buf. */
static inline const char *write_file(const char *dir, const char *name, const char *text,
                                     char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s", dir, name);
  FILE *fp = fopen(buf, "w");
  cr_assert(fp);
  fputs(text, fp);
  fclose(fp);
  return buf;
}

#endif /* DS_TESTS_DP_CLI_H */
