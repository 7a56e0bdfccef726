/*
 * What the option parsers of every command share (sim/cli/options.c,
 * base/values.c, sim/cli/collbench.c, real/options.c): the usage error for a
 * bad value, one wording everywhere, integers within bounds, and the
 * walk over argv ("--flag value" or "--flag=value", a flag given twice
 * refused). Nothing here knows a flag; errors are DS_EUSAGE naming the flag
 * and what was expected.
 */
#ifndef DS_CLI_H
#define DS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets "option FLAG: expected WHAT, got \"GOT\"" (DS_EUSAGE) and returns
 * DS_EUSAGE. */
ds_status ds_cli_bad_value(struct ds_err *err, const char *flag, const char *what,
                           const char *got);

/* The usage error for a flag given last, with no word after it: "option
 * FLAG needs a value" when FLAG is one of value_flags (NULL-terminated),
 * else "unknown option \"FLAG\" (see PROGRAM --help)", so that a mistyped
 * or made-up flag at the end of a line is named as unknown rather than as
 * missing a value. Returns DS_EUSAGE. */
ds_status ds_cli_missing_value(struct ds_err *err, const char *flag,
                               const char *const *value_flags, const char *program);

/* One integer from lo to hi, the whole of v (base 10). */
ds_status ds_cli_parse_int(const char *flag, const char *v, int64_t lo, int64_t hi,
                           int64_t *out, struct ds_err *err);

/* A command's option walk: which flags it knows and whether each takes a
 * value (takes_value sets *known), the one flag that may repeat (or NULL),
 * and the flags seen so far. Zero seen/n_seen before the walk. */
struct ds_cli_walk {
  const char *program; /* "ddpsim", "ddpreal": for "see PROGRAM --help" */
  int (*takes_value)(const char *flag, int *known);
  const char *repeatable;
  char seen[64][64];
  int n_seen;
};

/* Reads the option at argv[*i] into flag (cap bytes) and *value (NULL when
 * it takes none), moving *i past a separate value; DS_EUSAGE for an
 * unknown flag, a missing or unexpected value, or a flag given twice (a
 * repeated flag is refused rather than silently keeping its last value). */
ds_status ds_cli_next_option(struct ds_cli_walk *w, int argc, char **argv, int *i, char *flag,
                             size_t cap, const char **value, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_CLI_H */
