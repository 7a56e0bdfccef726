/*
 * Tests for base/units.c: every unit of every quantity with its exact value,
 * the texts that must be refused, and the one rounding helper.
 *
 * Values are compared with == where the product is exact in binary (small
 * integers times powers of ten up to 1e15, or times 2^k); a relative
 * tolerance of 1e-15 only where a decimal fraction is involved.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "base/units.h"

struct unit_case {
  const char *text;
  double want;
};

typedef ds_status (*parse_fn)(const char *, double *);

static void expect_ok(parse_fn parse, const struct unit_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double got = -1.0;
    ds_status st = parse(cases[i].text, &got);
    cr_assert_eq(st, DS_OK, "\"%s\" should parse", cases[i].text);
    cr_assert(got == cases[i].want, "\"%s\": got %.17g, want %.17g",
              cases[i].text, got, cases[i].want);
  }
}

static void expect_reject(parse_fn parse, const char *const *texts, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double got = 12345.0;
    ds_status st = parse(texts[i], &got);
    cr_assert_eq(st, DS_EINPUT, "\"%s\" should be refused", texts[i]);
    /* A refused text leaves the output untouched. */
    cr_assert(got == 12345.0, "\"%s\" wrote %.17g", texts[i], got);
  }
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Sizes: decimal prefixes are powers of 1000, "i" prefixes and the bare
 * letters K/M/G (nccl-tests' -e 1G) are powers of 1024. */
Test(units, bytes_every_unit) {
  static const struct unit_case cases[] = {
      {"7", 7.0},
      {"7B", 7.0},
      {"2KB", 2e3},
      {"2kB", 2e3},
      {"2KiB", 2048.0},
      {"3MB", 3e6},
      {"25MiB", 26214400.0}, /* 25 * 2^20 */
      {"4GB", 4e9},
      {"4GiB", 4294967296.0},
      {"5TB", 5e12},
      {"5TiB", 5497558138880.0},
      {"8K", 8192.0},
      {"1M", 1048576.0},
      {"1G", 1073741824.0},
      {"0", 0.0}, /* zero bytes is a valid size (>= 0) */
      {"25 MiB", 26214400.0}, /* one space allowed */
      {"0.5KiB", 512.0},
      {"1e3B", 1000.0},
  };
  expect_ok(ds_units_parse_bytes, cases, N(cases));
}

/* Bandwidths: byte rates as given, bit rates divided by 8, "/s" spelled
 * either way. 400Gbps is the usual NIC figure: 50e9 bytes/s. */
Test(units, bw_every_unit) {
  static const struct unit_case cases[] = {
      {"9", 9.0},
      {"9Bps", 9.0},
      {"9B/s", 9.0},
      {"2KBps", 2e3},
      {"2KB/s", 2e3},
      {"2kBps", 2e3},
      {"2kB/s", 2e3},
      {"3MBps", 3e6},
      {"3MB/s", 3e6},
      {"25GBps", 25e9},
      {"25GB/s", 25e9},
      {"25 GBps", 25e9},
      {"2TBps", 2e12},
      {"2TB/s", 2e12},
      {"1KiBps", 1024.0},
      {"1KiB/s", 1024.0},
      {"1MiBps", 1048576.0},
      {"1MiB/s", 1048576.0},
      {"1GiBps", 1073741824.0},
      {"1GiB/s", 1073741824.0},
      {"1TiBps", 1099511627776.0},
      {"1TiB/s", 1099511627776.0},
      {"8bps", 1.0},
      {"8b/s", 1.0},
      {"8Kbps", 1e3},
      {"8Kb/s", 1e3},
      {"8kbps", 1e3},
      {"8kb/s", 1e3},
      {"8Mbps", 1e6},
      {"8Mb/s", 1e6},
      {"400Gbps", 50e9},
      {"400Gb/s", 50e9},
      {"8Tbps", 1e12},
      {"8Tb/s", 1e12},
  };
  expect_ok(ds_units_parse_bw, cases, N(cases));
}

/* Times in nanoseconds; a bare number is seconds. */
Test(units, time_every_unit) {
  static const struct unit_case cases[] = {
      {"3ns", 3.0},
      {"1.5us", 1500.0},
      {"2\xC2\xB5s", 2000.0}, /* micro sign U+00B5 */
      {"2\xCE\xBCs", 2000.0}, /* Greek mu U+03BC, looks the same */
      {"4ms", 4e6},
      {"2s", 2e9},
      {"2", 2e9},
      {"0ns", 0.0}, /* zero time is valid (>= 0) */
      {"1e3us", 1e6}, /* the exponent belongs to the number */
      {"1.5 us", 1500.0},
      {"1E-3s", 1e6},
  };
  expect_ok(ds_units_parse_time_ns, cases, N(cases));
}

Test(units, flops_every_unit) {
  static const struct unit_case cases[] = {
      {"5", 5.0},
      {"5FLOPS", 5.0},
      {"5FLOP/s", 5.0},
      {"5KFLOPS", 5e3},
      {"5KFLOP/s", 5e3},
      {"5kFLOPS", 5e3},
      {"5kFLOP/s", 5e3},
      {"5MFLOPS", 5e6},
      {"5MFLOP/s", 5e6},
      {"5GFLOPS", 5e9},
      {"5GFLOP/s", 5e9},
      {"312TFLOPS", 312e12}, /* A100 dense BF16 */
      {"312TFLOP/s", 312e12},
      {"2PFLOPS", 2e15},
      {"2PFLOP/s", 2e15},
  };
  expect_ok(ds_units_parse_flops, cases, N(cases));
}

/* Plain numbers may be negative; everything else may not. */
Test(units, number_forms) {
  static const struct unit_case cases[] = {
      {"0", 0.0},   {"-2.5", -2.5}, {"+3", 3.0},  {".5", 0.5},
      {"5.", 5.0},  {"1e-3", 1e-3}, {"2E+2", 200.0},
  };
  expect_ok(ds_units_parse_number, cases, N(cases));
}

/* A decimal fraction times 1e9 need not be exact in binary: within 1 ulp. */
Test(units, decimal_fraction_within_tolerance) {
  double got = 0.0;
  cr_assert_eq(ds_units_parse_bw("0.1GBps", &got), DS_OK);
  cr_assert(fabs(got - 1e8) <= 1e8 * 1e-15, "got %.17g", got);
}

/* Strictness shared by all quantities: whole text, one space at most, the
 * unit spelled exactly, no NaN or infinity, no hex, no blanks around. */
Test(units, rejects_malformed) {
  static const char *const bad[] = {
      "",        " ",        "GBps",      "25GBpsx", "25gbps",  "25 ",
      "25  GBps", " 25GBps", "25GBps ",   "25\tGBps", "nan",     "NaN",
      "inf",     "infinity", "0x10",      "1e",      "1e+",     "e3",
      ".",       "-",        "1.2.3GBps", "25 G Bps", "25GiB/S", "25Gibps",
  };
  expect_reject(ds_units_parse_bw, bad, N(bad));
  cr_assert_eq(ds_units_parse_bw(NULL, &(double){0}), DS_EINPUT);
}

/* Units belong to one quantity: a time is not a size, and so on. */
Test(units, rejects_unit_of_other_quantity) {
  static const char *const bad_bytes[] = {"5us", "5GBps", "5kb", "5k", "5PB"};
  static const char *const bad_time[] = {"5sec", "5S", "5MiB", "5Us", "5m"};
  static const char *const bad_flops[] = {"5flops", "5TFLOP", "5TB", "5TF"};
  static const char *const bad_number[] = {"5us", "5 ", "5B", "5%"};
  expect_reject(ds_units_parse_bytes, bad_bytes, N(bad_bytes));
  expect_reject(ds_units_parse_time_ns, bad_time, N(bad_time));
  expect_reject(ds_units_parse_flops, bad_flops, N(bad_flops));
  expect_reject(ds_units_parse_number, bad_number, N(bad_number));
}

/* Sizes and times are >= 0, rates > 0: a sign is refused outright, and a
 * zero rate would make every transfer or kernel last forever. */
Test(units, rejects_negative_and_zero_rates) {
  static const char *const neg_bytes[] = {"-1", "-1MiB", "+1MiB", "-0B"};
  static const char *const neg_time[] = {"-1us", "-0.5s", "+1us"};
  static const char *const bad_bw[] = {"-1GBps", "0GBps", "0", "0bps"};
  static const char *const bad_flops[] = {"-5TFLOPS", "0TFLOPS", "0"};
  expect_reject(ds_units_parse_bytes, neg_bytes, N(neg_bytes));
  expect_reject(ds_units_parse_time_ns, neg_time, N(neg_time));
  expect_reject(ds_units_parse_bw, bad_bw, N(bad_bw));
  expect_reject(ds_units_parse_flops, bad_flops, N(bad_flops));
}

/* A number or a scaled result that overflows a double is refused rather than
 * becoming infinity. */
Test(units, rejects_overflow) {
  static const char *const big_number[] = {"1e400", "-1e400"};
  static const char *const big_bw[] = {"1e300TBps", "1e400Bps"};
  expect_reject(ds_units_parse_number, big_number, N(big_number));
  expect_reject(ds_units_parse_bw, big_bw, N(big_bw));
}

/* Halves round away from zero (llround), not to even: 2.5 -> 3. */
Test(units, round_ns_halves_away_from_zero) {
  cr_assert_eq(ds_units_round_ns(0.0), 0);
  cr_assert_eq(ds_units_round_ns(0.49), 0);
  cr_assert_eq(ds_units_round_ns(0.5), 1);
  cr_assert_eq(ds_units_round_ns(1.49), 1);
  cr_assert_eq(ds_units_round_ns(1.5), 2);
  cr_assert_eq(ds_units_round_ns(2.5), 3);
  cr_assert_eq(ds_units_round_ns(1500.0), 1500);
  /* 2^53 + 2 is exactly representable and stays exact. */
  cr_assert_eq(ds_units_round_ns(9007199254740994.0),
               INT64_C(9007199254740994));
}

/* The rounding is llround's, exactly, over the whole accepted range: the
 * values next to every half (where adding 0.5 would go wrong), around 2^52
 * and 2^53 (where doubles stop holding fractions), and a spread of random
 * doubles of every magnitude up to 1e18. */
Test(units, round_ns_is_llround) {
  const double edges[] = {0.49999999999999994, 0.5, 0.5000000000000001, 1.4999999999999998,
                          2.5000000000000004, 4503599627370495.5, 4503599627370496.5,
                          4503599627370497.0, 9007199254740993.0, 9007199254740995.0,
                          123456789.49999999, 999999999999999999.0, 1e18};
  for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
    for (int d = -2; d <= 2; d++) {
      double x = edges[i];
      for (int k = 0; k < (d < 0 ? -d : d); k++) x = d < 0 ? nextafter(x, 0) : nextafter(x, 2e18);
      if (x > 1e18) continue;
      cr_assert_eq(ds_units_round_ns(x), (int64_t)llround(x), "%.17g", x);
    }
  }
  uint64_t s = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < 200000; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double x = ldexp((double)(s >> 11), -53) * pow(10, (double)(s % 19)); /* [0, 1e18) */
    cr_assert_eq(ds_units_round_ns(x), (int64_t)llround(x), "%.17g", x);
  }
}

/* Beyond DS_UNITS_NS_MAX (1e18 ns, 31.7 years) the result saturates one past
 * it instead of overflowing: now + duration, both within bounds, stays below
 * 2^63, and the engine refuses the event (issue #15, defect 1). */
Test(units, round_ns_saturates) {
  cr_assert_eq(ds_units_round_ns(1e18), DS_UNITS_NS_MAX);
  cr_assert_eq(ds_units_round_ns(1.0000001e18), DS_UNITS_NS_OVER);
  cr_assert_eq(ds_units_round_ns(9223372036854775808.0), DS_UNITS_NS_OVER);
  cr_assert_eq(ds_units_round_ns(1e300), DS_UNITS_NS_OVER);
  cr_assert_eq(ds_units_round_ns(HUGE_VAL), DS_UNITS_NS_OVER);
  cr_assert(DS_UNITS_NS_OVER + DS_UNITS_NS_OVER > 0, "two saturated times add without wrapping");
}

/* Values that parse but cannot be simulated are refused where they are read
 * (issue #15, defect 1): a 1e12 s link latency used to wrap the clock and
 * print a faster iteration; 1e-300 Bps made every duration infinite. The
 * bounds themselves are accepted. */
Test(units, rejects_values_past_bounds) {
  static const char *const big_time[] = {"1e12s", "1e10s", "1000001s", "2e15ns"};
  static const char *const bad_bw[] = {"1e-300Bps", "0.5Bps", "1bps", "2e15Bps", "9PBps"};
  static const char *const big_bytes[] = {"2e18", "1e19B", "1e7TB"};
  static const char *const bad_flops[] = {"0.5FLOPS", "1e22FLOPS", "1e7PFLOPS"};
  expect_reject(ds_units_parse_time_ns, big_time, N(big_time));
  expect_reject(ds_units_parse_bw, bad_bw, N(bad_bw));
  expect_reject(ds_units_parse_bytes, big_bytes, N(big_bytes));
  expect_reject(ds_units_parse_flops, bad_flops, N(bad_flops));
  double v;
  cr_assert_eq(ds_units_parse_time_ns("1e6s", &v), DS_OK);
  cr_assert_eq(v, 1e15);
  cr_assert_eq(ds_units_parse_bw("1Bps", &v), DS_OK);
  cr_assert_eq(ds_units_parse_bw("1e15Bps", &v), DS_OK);
  cr_assert_eq(ds_units_parse_bytes("1e18", &v), DS_OK);
  cr_assert_eq(ds_units_parse_flops("1e21", &v), DS_OK);
}

Test(units, unit_left_out_is_a_bare_number_other_than_zero) {
  /* A bare "200" parses as 200 B/s or 200 s; every file key and flag that
   * takes a rate or time refuses it through this one check. */
  cr_assert(ds_units_unit_left_out("200"));
  cr_assert(ds_units_unit_left_out("1.5e3"));
  cr_assert_not(ds_units_unit_left_out("0"), "0 needs no unit");
  cr_assert_not(ds_units_unit_left_out("200Gbps"));
  cr_assert_not(ds_units_unit_left_out("1.5 us"));
  cr_assert_not(ds_units_unit_left_out("x"), "malformed is the parser's to refuse");
}

/* Small values print with two significant digits in fixed notation, the
 * rest with the caller's usual decimals (a 4-byte bucket in MiB, a CPU's
 * TFLOP/s): never 0.00 for something, never e-notation. */
Test(units, decimals_show_two_significant_digits_of_small_values) {
  static const struct {
    double x;
    int usual;
    const char *want;
  } cases[] = {
      {25.0, 2, "25.00"},         {0.006, 2, "0.01"},      {0.0038147, 2, "0.0038"},
      {4.0 / (1 << 20), 2, "0.0000038"}, {0.0, 2, "0.00"}, {0.0024, 1, "0.0024"},
      {0.04, 1, "0.040"},         {0.05, 1, "0.1"},        {-0.0038, 2, "-0.0038"},
      {1e-30, 2, "0.000000000000"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.*f", ds_units_decimals_for(cases[i].x, cases[i].usual),
             cases[i].x);
    cr_assert_str_eq(buf, cases[i].want, "%g with %d usual decimals", cases[i].x, cases[i].usual);
  }
}
