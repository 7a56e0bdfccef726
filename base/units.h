/*
 * Units in values: sizes ("25MiB"), bandwidths ("25GBps"), times ("1.5us")
 * and compute rates ("312TFLOPS"), and the one helper that rounds a double
 * duration to integer nanoseconds.
 *
 * Parsers accept a decimal number (optionally with exponent) followed by an
 * optional unit, with no space or one space between. Decimal prefixes
 * k/K, M, G, T, P are powers of 1000; binary Ki, Mi, Gi, Ti are powers of
 * 1024. They return DS_EINPUT without a message: the caller knows the file,
 * line and key to name.
 */
#ifndef DS_UNITS_H
#define DS_UNITS_H

#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds on what a reader accepts, so that every duration computed from
 * accepted values stays far below int64_t nanoseconds (2^63 ns is 292
 * years): times at most 1e6 s, sizes at most 1e18 bytes, bandwidths from
 * 1 B/s to 1e15 B/s, compute rates from 1 FLOP/s to 1e21 FLOP/s. A value
 * outside its bounds is DS_EINPUT, like a malformed one. */
#define DS_UNITS_TIME_MAX_NS 1e15
#define DS_UNITS_BYTES_MAX 1e18
#define DS_UNITS_BW_MIN 1.0
#define DS_UNITS_BW_MAX 1e15
#define DS_UNITS_FLOPS_MIN 1.0
#define DS_UNITS_FLOPS_MAX 1e21

/* The longest simulated time: 1e18 ns (31.7 years). ds_units_round_ns
 * saturates at DS_UNITS_NS_OVER (one past it), so `now + duration` with
 * both within bounds never overflows int64_t, and the engine refuses any
 * event past DS_UNITS_NS_MAX. */
#define DS_UNITS_NS_MAX INT64_C(1000000000000000000)
#define DS_UNITS_NS_OVER (DS_UNITS_NS_MAX + 1)

/* The units' sizes, for code that converts or prints in them (the
 * parsers' tables below use the same): binary byte multiples, a GB/s in
 * bytes per second (decimal, as NCCL and nccl-tests count), a millisecond
 * in nanoseconds. */
#define DS_UNITS_KIB 1024.0
#define DS_UNITS_MIB (1024.0 * DS_UNITS_KIB)
#define DS_UNITS_GIB (1024.0 * DS_UNITS_MIB)
#define DS_UNITS_TIB (1024.0 * DS_UNITS_GIB)
#define DS_UNITS_GBPS 1e9
#define DS_UNITS_NS_PER_MS 1e6

/* Sizes: "B", "KB", "KiB", "MB", "MiB", "GB", "GiB", "TB", "TiB" (case of the
 * prefix letter as listed, "k" also accepted); a bare number is bytes; "K",
 * "M", "G" alone are accepted as binary (nccl-tests' -b 8 -e 1G). Result in
 * bytes, >= 0. */
ds_status ds_units_parse_bytes(const char *text, double *out_bytes);

/* Bandwidths: bytes per second "Bps", "KBps", "MBps", "GBps", "TBps",
 * "GiBps", also written "GB/s"; bits per second "bps", "Kbps", "Mbps",
 * "Gbps", "Tbps" (also "Gb/s"), divided by 8. A bare number is bytes per
 * second. Result > 0. */
ds_status ds_units_parse_bw(const char *text, double *out_bytes_per_s);

/* Times: "ns", "us" (also "µs"), "ms", "s"; a bare number is seconds.
 * Result in nanoseconds (double), >= 0. */
ds_status ds_units_parse_time_ns(const char *text, double *out_ns);

/* Compute rates: "FLOPS", "KFLOPS" ... "PFLOPS" (also "TFLOP/s").
 * Result in FLOP/s, > 0. */
ds_status ds_units_parse_flops(const char *text, double *out_flops_per_s);

/* Plain numbers: a finite decimal number with no unit. */
ds_status ds_units_parse_number(const char *text, double *out);

/* 1 when text is a number without a unit other than 0: for a time,
 * bandwidth or compute rate that is a unit left out (the parsers above read
 * a bare "200" as 200 s or 200 B/s, where a file or flag meant us or Gbps),
 * which every reader of a file or flag refuses with this one check. A
 * size keeps its bare bytes (nccl-tests' -b 8), 0 needs no unit. */
int ds_units_unit_left_out(const char *text);

/* Decimals for printing x with "%.*f": `usual` where that shows x as more
 * than zero (or x is 0 or not finite), else as many as show two
 * significant digits (0.0038 MiB, 0.0000038 for 4 bytes), never
 * e-notation, at most 12. */
int ds_units_decimals_for(double x, int usual);

/* Rounds a non-negative duration in nanoseconds to the nearest integer
 * nanosecond (halves away from zero). This is the only place where a double
 * duration becomes simulated time. A duration past DS_UNITS_NS_MAX (or
 * infinite) saturates at DS_UNITS_NS_OVER, which the engine refuses. */
int64_t ds_units_round_ns(double ns);

#ifdef __cplusplus
}
#endif

#endif /* DS_UNITS_H */
