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

/* Rounds a non-negative duration in nanoseconds to the nearest integer
 * nanosecond (halves away from zero). This is the only place where a double
 * duration becomes simulated time. */
int64_t ds_units_round_ns(double ns);

#ifdef __cplusplus
}
#endif

#endif /* DS_UNITS_H */
