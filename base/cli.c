/*
 * Option values shared by every command's parser (see cli.h). Integers go
 * through strtoll with errno checked, so "99999999999999999999" is out of
 * range rather than LLONG_MAX.
 */
#include "base/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

ds_status ds_cli_bad_value(struct ds_err *err, const char *flag, const char *what,
                           const char *got) {
  return ds_err_set(err, DS_EUSAGE, "option %s: expected %s, got \"%s\"", flag, what, got);
}

ds_status ds_cli_parse_int(const char *flag, const char *v, int64_t lo, int64_t hi,
                           int64_t *out, struct ds_err *err) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end != '\0' || x < lo || x > hi) {
    char what[96];
    snprintf(what, sizeof what, "an integer from %" PRId64 " to %" PRId64, lo, hi);
    return ds_cli_bad_value(err, flag, what, v);
  }
  *out = x;
  return DS_OK;
}
