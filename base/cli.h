/*
 * What the option parsers of every command share (sim/cli/options.c,
 * base/values.c, sim/cli/collbench.c, real/options.c): the usage error for a
 * bad value, one wording everywhere, and integers within bounds. Nothing
 * here knows a flag; errors are DS_EUSAGE naming the flag and what was
 * expected.
 */
#ifndef DS_CLI_H
#define DS_CLI_H

#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets "option FLAG: expected WHAT, got \"GOT\"" (DS_EUSAGE) and returns
 * DS_EUSAGE. */
ds_status ds_cli_bad_value(struct ds_err *err, const char *flag, const char *what,
                           const char *got);

/* One integer from lo to hi, the whole of v (base 10). */
ds_status ds_cli_parse_int(const char *flag, const char *v, int64_t lo, int64_t hi,
                           int64_t *out, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_CLI_H */
