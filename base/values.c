/*
 * The values of one command-line option (see values.h): a value, a list
 * or a range. Lists are split by hand rather than with strtok, which would
 * silently skip the empty item in "1,,2"; ranges are generated, then
 * checked against the option's bounds like the items of a list.
 */
#include "base/values.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/units.h"

const struct ds_value_kind ds_value_kind_mib = {
    0, 0, 1e6, 1, "a size in MiB greater than 0 and at most 1e6 (e.g. 25 or 0.5)",
    "a comma-separated list of sizes in MiB, e.g. 1,5,25"};
const struct ds_value_kind ds_value_kind_cv = {
    0, 0, 10, 0, "a coefficient of variation from 0 to 10 (e.g. 0.05)",
    "a comma-separated list of coefficients of variation, e.g. 0,0.05,0.1"};
/* A straggler's factor: from 0.01 (a rank 100 times faster than the rest,
 * beyond any mix of GPU generations; below it a rank's compute rounds to
 * nothing: 1e-300 printed forward and backward 0.000 ms, issue #12) to 1e6. */
const struct ds_value_kind ds_value_kind_factor = {
    0, 0.01, 1e6, 0, "a factor from 0.01 to 1e6 (e.g. 1.5; below 1 the rank is faster)",
    "RANK:FACTOR, e.g. 3:2 (a list: 1:1.5,3:2; factors of one rank: 3:1,1.5,2)"};

struct ds_value_kind ds_value_kind_int(int64_t lo, int64_t hi) {
  return (struct ds_value_kind){1, (double)lo, (double)hi, 0, NULL,
                                "a comma-separated list of integers, e.g. 1,2,4"};
}

int ds_value_in_kind(const struct ds_value_kind *k, double x) {
  return (k->lo_open ? x > k->lo : x >= k->lo) && x <= k->hi;
}

/* One item of a list or a range endpoint. Range endpoints of integer
 * options may be fractional: their values are rounded afterwards. */
ds_status ds_values_parse_item(const char *flag, const char *item,
                               const struct ds_value_kind *k, double *out,
                               struct ds_err *err) {
  if (k->is_int) {
    int64_t x;
    DS_CHECK(ds_cli_parse_int(flag, item, (int64_t)k->lo, (int64_t)k->hi, &x, err));
    *out = (double)x;
    return DS_OK;
  }
  if (ds_units_parse_number(item, out) != DS_OK || !isfinite(*out) ||
      !ds_value_in_kind(k, *out))
    return ds_cli_bad_value(err, flag, k->item, item);
  return DS_OK;
}

ds_status ds_values_too_many(const char *flag, struct ds_err *err) {
  return ds_err_set(err, DS_EUSAGE, "option %s: at most %d values", flag, DS_MAX_SWEEP);
}

/* "A:B:logN" or "A:B:STEP" (docs/sweeps.md). Log ranges hit both
 * endpoints exactly; linear ranges start exactly at A and step while the
 * value stays <= B (a relative 1e-9 of slack absorbs the sum's rounding).
 * A linear range may start at 0 where the option takes 0 (--jitter). */
ds_status ds_values_parse_range(const char *flag, const char *v, int zero_ok,
                                struct ds_values *out, struct ds_err *err) {
  const char *expected = "a range START:END:STEP or START:END:logCOUNT, e.g. 1:100:log12";
  char buf[128], *c1, *c2, *end;
  if (strlen(v) >= sizeof buf) return ds_cli_bad_value(err, flag, expected, v);
  strcpy(buf, v);
  c1 = strchr(buf, ':');
  c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c1 || !c2 || strchr(c2 + 1, ':')) return ds_cli_bad_value(err, flag, expected, v);
  *c1 = *c2 = '\0';
  double a, b;
  if (ds_units_parse_number(buf, &a) != DS_OK || ds_units_parse_number(c1 + 1, &b) != DS_OK)
    return ds_cli_bad_value(err, flag, expected, v);
  const char *third = c2 + 1;
  int is_log = strncmp(third, "log", 3) == 0;
  if (!(zero_ok && !is_log ? a >= 0 : a > 0) || !(b > 0))
    return ds_err_set(err, DS_EUSAGE, "option %s: range \"%s\": start and end must be "
                      "greater than 0%s", flag, v,
                      zero_ok ? " (a linear range may start at 0)" : "");
  if (!(a < b))
    return ds_err_set(err, DS_EUSAGE, "option %s: range \"%s\": start must be less than "
                      "end", flag, v);
  out->n = 0;
  if (is_log) {
    errno = 0;
    long k = strtol(third + 3, &end, 10);
    if (errno || end == third + 3 || *end != '\0')
      return ds_cli_bad_value(err, flag, expected, v);
    if (k < 2)
      return ds_err_set(err, DS_EUSAGE, "option %s: range \"%s\": a log range needs a "
                        "count of at least 2", flag, v);
    if (k > DS_MAX_SWEEP) return ds_values_too_many(flag, err);
    double la = log(a), lb = log(b);
    for (long i = 0; i < k; i++)
      out->v[i] = exp(la + (lb - la) * (double)i / (double)(k - 1));
    out->v[0] = a;
    out->v[k - 1] = b;
    out->n = (int32_t)k;
    out->log_spaced = 1;
    return DS_OK;
  }
  double step;
  if (ds_units_parse_number(third, &step) != DS_OK)
    return ds_cli_bad_value(err, flag, expected, v);
  if (!(step > 0))
    return ds_err_set(err, DS_EUSAGE, "option %s: range \"%s\": the step must be greater "
                      "than 0", flag, v);
  for (int64_t i = 0;; i++) {
    double x = a + step * (double)i;
    if (x > b * (1 + 1e-9)) break;
    if (out->n == DS_MAX_SWEEP) return ds_values_too_many(flag, err);
    out->v[out->n++] = x > b ? b : x;
  }
  out->log_spaced = 0;
  return DS_OK;
}

/* A range's values checked against the option's kind: integer options
 * round them and drop repeats, saying so on stderr. */
ds_status ds_values_check_range(const char *flag, const char *v,
                                const struct ds_value_kind *k, struct ds_values *out,
                                struct ds_err *err) {
  if (!k->is_int) {
    for (int32_t i = 0; i < out->n; i++)
      if (!ds_value_in_kind(k, out->v[i]))
        return ds_err_set(err, DS_EUSAGE, "option %s: range \"%s\" gives %g, expected %s",
                          flag, v, out->v[i], k->item);
    return DS_OK;
  }
  int32_t n = 0, changed = 0;
  for (int32_t i = 0; i < out->n; i++) {
    double r = round(out->v[i]);
    changed |= fabs(r - out->v[i]) > 1e-9 * fabs(r); /* not exp/log's last bits */
    if (r < k->lo || r > k->hi)
      return ds_err_set(err, DS_EUSAGE, "option %s: range \"%s\" gives %g, expected "
                        "integers from %lld to %lld", flag, v, r, (long long)k->lo,
                        (long long)k->hi);
    if (n > 0 && out->v[n - 1] == r) continue; /* values only grow */
    out->v[n++] = r;
  }
  if (changed || n != out->n) {
    fprintf(stderr, "ddpsim: note: %s %s rounded to integers:", flag, v);
    for (int32_t i = 0; i < n; i++) fprintf(stderr, "%s%g", i ? "," : " ", out->v[i]);
    if (n != out->n) fprintf(stderr, " (%d repeated values dropped)", out->n - n);
    fputc('\n', stderr);
  }
  out->n = n;
  return DS_OK;
}

/* A list "1,5,25" or a range into *out. Lists are split by hand rather
 * than with strtok, which would silently skip the empty item in "1,,2". */
ds_status ds_values_parse(const char *flag, const char *v, const struct ds_value_kind *k,
                          struct ds_values *out, struct ds_err *err) {
  memset(out, 0, sizeof *out);
  if (strchr(v, ':')) {
    DS_CHECK(ds_values_parse_range(flag, v, k->lo == 0 && !k->lo_open, out, err));
    return ds_values_check_range(flag, v, k, out, err);
  }
  const char *tok = v;
  for (;;) {
    const char *end = strchr(tok, ',');
    size_t len = end ? (size_t)(end - tok) : strlen(tok);
    char item[64];
    if (len == 0 || len >= sizeof item) return ds_cli_bad_value(err, flag, k->list, v);
    if (out->n == DS_MAX_SWEEP) return ds_values_too_many(flag, err);
    memcpy(item, tok, len);
    item[len] = '\0';
    DS_CHECK(ds_values_parse_item(flag, item, k, &out->v[out->n], err));
    /* a repeat would run its configuration twice and rank it against
     * itself ("0.0% faster than the slowest"): refuse it */
    for (int32_t j = 0; j < out->n; j++)
      if (out->v[j] == out->v[out->n])
        return ds_err_set(err, DS_EUSAGE, "option %s: \"%s\" lists %s twice", flag, v, item);
    out->n++;
    if (!end) return DS_OK;
    tok = end + 1;
  }
}

