/*
 * What sim/cli/report.c, sim/cli/report_text.c and sim/cli/report_csv_json.c
 * share: the forms ds_report_print picks from, and the two things both
 * forms print alike (an exact double, --calib's GPU). Private to those
 * three files.
 */
#ifndef DS_REPORT_IMPL_H
#define DS_REPORT_IMPL_H

#include <stdint.h>
#include <stdio.h>

#include "sim/cli/report.h"

/* report.c: --calib's GPU (report.h calib_gpu_fit), indexed by enum
 * ds_calib_gpu_fit: the calib_gpu column's value and the text's words. */
struct ds__report_calib_gpu_name {
  const char *column, *words;
};
extern const struct ds__report_calib_gpu_name ds__report_calib_gpu_names[];

/* report.c: the fewest significant digits (15 to 17) that print x exactly;
 * DS__EXACT(x) gives a "%.*g" its precision and x. */
int ds__report_exact_digits(double x);
#define DS__EXACT(x) ds__report_exact_digits(x), (x)

/* report_csv_json.c: every row, with its header line (CSV) or as an array
 * of objects (JSON); 0, or EOF on a write error. */
int ds__report_print_csv(FILE *fp, const struct ds_summary *rows, int32_t n);
int ds__report_print_json(FILE *fp, const struct ds_summary *rows, int32_t n);

/* report_text.c: the text form of every row (the caller checks ferror). */
void ds__report_print_text(FILE *fp, const struct ds_summary *rows, int32_t n);

#endif
