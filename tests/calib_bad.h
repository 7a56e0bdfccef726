/*
 * What the calibration file's tests (test_calib_load.c, test_calib_write.c)
 * share: a bad file and the message its load must give. The function is
 * static inline so that an includer need not use it.
 */
#ifndef DS_TESTS_CALIB_BAD_H
#define DS_TESTS_CALIB_BAD_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sim/train/calib.h"
#include "tests/support.h"

/* Each bad file: the message must start with FILE:LINE:COL and name the
 * key; line and column point at the offending key or value (1-based). */
struct bad_case {
  const char *text;
  /* ":LINE:COL: key 'SECTION.KEY'" or ":LINE:COL: [key 'SECTION': ]unknown key 'KEY'" */
  const char *where;
  const char *what;  /* a part of the message */
};

static inline void expect_bad(const struct bad_case *b) {
  struct ds_calib c;
  struct ds_err err = {0};
  char path[64], want[160];
  ds_status st = ds_test_load_calib_text(b->text, &c, &err, path);
  cr_assert_eq(st, DS_EINPUT, "expected DS_EINPUT for:\n%s\ngot %s: %s", b->text,
               ds_status_name(st), err.msg);
  snprintf(want, sizeof want, "%s%s", path, b->where);
  cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "message: %s\nwant prefix: %s",
            err.msg, want);
  cr_assert(strstr(err.msg, b->what) != NULL, "message: %s\nwant: %s", err.msg, b->what);
  /* nothing half-loaded */
  cr_assert_eq(c.has_flops_efficiency + c.has_kernel_overhead + c.has_collective +
                   c.has_host_dispatch + c.has_host_node + c.has_host_ddp_grad +
                   c.has_host_ddp_bucket + c.has_host_ddp_buffer, 0);
}

#endif /* DS_TESTS_CALIB_BAD_H */
