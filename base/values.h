/*
 * The values of one command-line option that sweeps (docs/sweeps.md): one
 * value, a list "1,5,25", or a range "A:B:STEP" / "A:B:logN", checked
 * against what the option takes (a ds_value_kind). Errors are DS_EUSAGE
 * naming the flag and what was expected.
 */
#ifndef DS_VALUES_H
#define DS_VALUES_H

#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DS_MAX_SWEEP 64

/* The values one option takes: n >= 1; log_spaced when given as A:B:logN
 * (plots then use a log axis). */
struct ds_values {
  double v[DS_MAX_SWEEP];
  int32_t n;
  int log_spaced;
};

/* What the values of one option must be: integers (a range's
 * values are then rounded) or reals, within [lo, hi] (lo itself excluded
 * when lo_open); item and list say so in messages. */
struct ds_value_kind {
  int is_int;
  double lo, hi;
  int lo_open;
  const char *item; /* "a size in MiB greater than 0 (e.g. 25 or 0.5)" */
  const char *list; /* "a comma-separated list of sizes in MiB, e.g. 1,5,25" */
};

/* Sizes in MiB (> 0, <= 1e6); coefficients of variation (0 to 10); factors
 * (0.01 to 1e6). */
extern const struct ds_value_kind ds_value_kind_mib, ds_value_kind_cv, ds_value_kind_factor;

/* Integers from lo to hi. */
struct ds_value_kind ds_value_kind_int(int64_t lo, int64_t hi);

/* Whether x is within k's bounds. */
int ds_value_in_kind(const struct ds_value_kind *k, double x);

/* One item of a list into *out. */
ds_status ds_values_parse_item(const char *flag, const char *item,
                               const struct ds_value_kind *k, double *out,
                               struct ds_err *err);

/* "A:B:STEP" or "A:B:logN" into *out, unchecked against a kind (zero_ok: a
 * linear range may start at 0). */
ds_status ds_values_parse_range(const char *flag, const char *v, int zero_ok,
                                struct ds_values *out, struct ds_err *err);

/* Checks a range's values against k; integer kinds round them and drop
 * repeats, saying so on stderr when that changed anything. */
ds_status ds_values_check_range(const char *flag, const char *v,
                                const struct ds_value_kind *k, struct ds_values *out,
                                struct ds_err *err);

/* A value, a list or a range (v holds a ':') into *out, checked against k. */
ds_status ds_values_parse(const char *flag, const char *v, const struct ds_value_kind *k,
                          struct ds_values *out, struct ds_err *err);

/* "option FLAG: at most 64 values". */
ds_status ds_values_too_many(const char *flag, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_VALUES_H */
