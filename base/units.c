/*
 * Parsers for quantities with units in their values, and the rounding of
 * double durations to integer nanoseconds.
 *
 * Invariant: a text is accepted only if it is, in full, a decimal number
 * followed by nothing, or by at most one space and a unit spelled exactly as
 * in that quantity's table. The number's syntax is checked here before
 * strtod sees it, because strtod alone would also take leading blanks, hex
 * floats, "inf" and "nan".
 */
#include "base/units.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct unit {
  const char *name; /* "" is the bare number */
  double scale;     /* multiplier to the base unit */
};

/* Result in bytes. "K", "M", "G" alone are binary because that is what
 * nccl-tests' -b/-e size flags mean, and users copy those. */
static const struct unit bytes_units[] = {
    {"", 1.0},     {"B", 1.0},     {"KB", 1e3},    {"kB", 1e3},
    {"KiB", DS_UNITS_KIB},  {"MB", 1e6},    {"MiB", DS_UNITS_MIB},   {"GB", 1e9},
    {"GiB", DS_UNITS_GIB},  {"TB", 1e12},   {"TiB", DS_UNITS_TIB},   {"K", DS_UNITS_KIB},
    {"M", DS_UNITS_MIB},    {"G", DS_UNITS_GIB},
};

/* Result in bytes per second; bit rates (lower-case b, as network links are
 * sold) are divided by 8 — 0.125 is exact, so "400Gbps" is exactly 50e9. */
static const struct unit bw_units[] = {
    {"", 1.0},           {"Bps", 1.0},          {"B/s", 1.0},
    {"KBps", 1e3},       {"KB/s", 1e3},         {"kBps", 1e3},
    {"kB/s", 1e3},       {"MBps", 1e6},         {"MB/s", 1e6},
    {"GBps", 1e9},       {"GB/s", 1e9},         {"TBps", 1e12},
    {"TB/s", 1e12},      {"KiBps", DS_UNITS_KIB},        {"KiB/s", DS_UNITS_KIB},
    {"MiBps", DS_UNITS_MIB},      {"MiB/s", DS_UNITS_MIB},        {"GiBps", DS_UNITS_GIB},
    {"GiB/s", DS_UNITS_GIB},      {"TiBps", DS_UNITS_TIB},        {"TiB/s", DS_UNITS_TIB},
    {"bps", 0.125},      {"b/s", 0.125},        {"Kbps", 1e3 * 0.125},
    {"Kb/s", 1e3 * 0.125}, {"kbps", 1e3 * 0.125}, {"kb/s", 1e3 * 0.125},
    {"Mbps", 1e6 * 0.125}, {"Mb/s", 1e6 * 0.125}, {"Gbps", 1e9 * 0.125},
    {"Gb/s", 1e9 * 0.125}, {"Tbps", 1e12 * 0.125}, {"Tb/s", 1e12 * 0.125},
};

/* Result in nanoseconds; a bare number is seconds (SI base unit). Both the
 * micro sign U+00B5 and the Greek mu U+03BC are taken: they look the same
 * and keyboards produce either. */
static const struct unit time_units[] = {
    {"", 1e9},           {"ns", 1.0},         {"us", 1e3},
    {"\xC2\xB5s", 1e3},  {"\xCE\xBCs", 1e3},  {"ms", 1e6},
    {"s", 1e9},
};

/* Result in FLOP/s. */
static const struct unit flops_units[] = {
    {"", 1.0},          {"FLOPS", 1.0},     {"FLOP/s", 1.0},
    {"KFLOPS", 1e3},    {"KFLOP/s", 1e3},   {"kFLOPS", 1e3},
    {"kFLOP/s", 1e3},   {"MFLOPS", 1e6},    {"MFLOP/s", 1e6},
    {"GFLOPS", 1e9},    {"GFLOP/s", 1e9},   {"TFLOPS", 1e12},
    {"TFLOP/s", 1e12},  {"PFLOPS", 1e15},   {"PFLOP/s", 1e15},
};

static const struct unit number_units[] = {
    {"", 1.0},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of the decimal number at the start of s, or 0 when there is none:
 * [sign] digits [. digits] [e [sign] digits], with at least one mantissa
 * digit. An "e" not followed by digits is left for the unit to reject. */
static size_t scan_number(const char *s, int allow_sign) {
  size_t i = 0;
  size_t digits = 0;
  if (allow_sign && (s[i] == '+' || s[i] == '-')) i++;
  while (is_digit(s[i])) i++, digits++;
  if (s[i] == '.') {
    i++;
    while (is_digit(s[i])) i++, digits++;
  }
  if (digits == 0) return 0;
  if (s[i] == 'e' || s[i] == 'E') {
    size_t j = i + 1;
    if (s[j] == '+' || s[j] == '-') j++;
    if (is_digit(s[j])) {
      while (is_digit(s[j])) j++;
      i = j;
    }
  }
  return i;
}

static ds_status parse_with(const char *text, const struct unit *table,
                            size_t n, int allow_sign, double *out) {
  if (text == NULL) return DS_EINPUT;
  size_t len = scan_number(text, allow_sign);
  if (len == 0) return DS_EINPUT;

  /* strtod must agree with the scan; it would not under a locale whose
   * decimal point is not '.', and then we refuse rather than misread. */
  errno = 0;
  char *end = NULL;
  double value = strtod(text, &end);
  if (end != text + len || errno == ERANGE || !isfinite(value))
    return DS_EINPUT;

  const char *unit = text + len;
  int spaced = 0;
  if (*unit == ' ') {
    unit++;
    spaced = 1;
  }
  for (size_t k = 0; k < n; k++) {
    if (strcmp(unit, table[k].name) != 0) continue;
    if (spaced && table[k].name[0] == '\0') return DS_EINPUT; /* "25 " */
    double scaled = value * table[k].scale;
    if (!isfinite(scaled)) return DS_EINPUT;
    *out = scaled;
    return DS_OK;
  }
  return DS_EINPUT;
}

ds_status ds_units_parse_bytes(const char *text, double *out_bytes) {
  double v;
  DS_CHECK(parse_with(text, bytes_units, COUNT(bytes_units), 0, &v));
  if (!(v <= DS_UNITS_BYTES_MAX)) return DS_EINPUT;
  *out_bytes = v;
  return DS_OK;
}

ds_status ds_units_parse_bw(const char *text, double *out_bytes_per_s) {
  double v;
  DS_CHECK(parse_with(text, bw_units, COUNT(bw_units), 0, &v));
  /* a zero link would never finish; 1e-300 Bps would take longer than
   * simulated time can say */
  if (!(v >= DS_UNITS_BW_MIN && v <= DS_UNITS_BW_MAX)) return DS_EINPUT;
  *out_bytes_per_s = v;
  return DS_OK;
}

ds_status ds_units_parse_time_ns(const char *text, double *out_ns) {
  double v;
  DS_CHECK(parse_with(text, time_units, COUNT(time_units), 0, &v));
  if (!(v <= DS_UNITS_TIME_MAX_NS)) return DS_EINPUT;
  *out_ns = v;
  return DS_OK;
}

ds_status ds_units_parse_flops(const char *text, double *out_flops_per_s) {
  double v;
  DS_CHECK(parse_with(text, flops_units, COUNT(flops_units), 0, &v));
  if (!(v >= DS_UNITS_FLOPS_MIN && v <= DS_UNITS_FLOPS_MAX)) return DS_EINPUT;
  *out_flops_per_s = v;
  return DS_OK;
}

ds_status ds_units_parse_number(const char *text, double *out) {
  return parse_with(text, number_units, COUNT(number_units), 1, out);
}

int ds_units_unit_left_out(const char *text) {
  double bare;
  return ds_units_parse_number(text, &bare) == DS_OK && bare != 0;
}

int ds_units_decimals_for(double x, int usual) {
  double mag = fabs(x);
  if (!(mag > 0) || !isfinite(mag) || mag >= 0.5 * pow(10, -usual)) return usual;
  /* two significant digits: the first one sits floor(log10) places in */
  int decimals = 1 - (int)floor(log10(mag));
  return decimals < usual ? usual : decimals > 12 ? 12 : decimals;
}

int64_t ds_units_round_ns(double ns) {
  /* Callers only pass durations they computed; a negative or NaN one is a
   * bug upstream. Without assertions it becomes 0 rather than undefined
   * behaviour in llround. */
  assert(ns >= 0.0);
  if (!(ns >= 0.0)) return 0;
  /* A longer duration (a huge transfer on a slow link) saturates one past
   * the longest simulated time instead of overflowing int64_t; the engine
   * refuses to schedule it, so it surfaces as an error, never a wrap. */
  if (!(ns <= (double)DS_UNITS_NS_MAX)) return DS_UNITS_NS_OVER;
  /* llround(ns), without its call (7 % of a per-flow ring's instructions,
   * issue #14): in [0, 1e18] the truncation is floor(ns), exact as a
   * double, and ns - floor(ns) is exact too, so a fraction of one half or
   * more rounds up, away from zero, as llround does. */
  int64_t whole = (int64_t)ns;
  return whole + (ns - (double)whole >= 0.5);
}
