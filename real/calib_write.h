/*
 * The text of a calibration file (format: sim/calib.h), written by
 * `ddpreal calibrate` and read back by ddpsim's loader (sim/calib.c). Plain
 * stdio, no CUDA and no libyaml, so that ddpreal and the tests can both
 * link it.
 */
#ifndef DS_CALIB_WRITE_H
#define DS_CALIB_WRITE_H

#include <stdio.h>

#include "../sim/calib.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes `header` as is (comment lines, each starting with '#' and ending
 * with '\n'; may be NULL), then schema_version and the sections whose keys
 * are present in c. Values carry 6 significant digits in the units the
 * loader reads (times in us, bandwidths in GBps), so write -> load -> write
 * gives the same text. Returns 0, or -1 when the stream reports an error. */
int ds_calib_write(FILE *fp, const struct ds_calib *c, const char *header);

#ifdef __cplusplus
}
#endif

#endif /* DS_CALIB_WRITE_H */
