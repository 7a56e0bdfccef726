/*
 * One check of a command's options, shared by the tests of every parser
 * (test_cli_input for ddpsim and buckets, test_collbench_flags,
 * test_analyze_cmd, test_topocmd, test_real_options,
 * test_real_collective_args, test_real_calibrate_args): its option table
 * (base/cli.h), its --help text and its parser must agree, so that a flag
 * added to one and not the others fails a test instead of reaching a user
 * as a wrong message or an undocumented option. Linked into every test
 * binary (Makefile: TEST_SUPPORT_OBJ); failures are Criterion assertions.
 */
#ifndef DS_TESTS_OPTIONS_HELP_H
#define DS_TESTS_OPTIONS_HELP_H

#include <stdio.h>

#include "base/cli.h"
#include "base/status.h"

/* A command's argument check (ds_collbench_check_args and the like). */
typedef ds_status (*ds_test_check_args_fn)(int argc, char **argv, struct ds_err *err);

/* A command's main (ds_collbench_main and the like). */
typedef ds_status (*ds_test_main_fn)(int argc, char **argv, FILE *out, struct ds_err *err);

/* What main_fn prints for words[0..n) (its --help: words ending with it),
 * owned by the caller (free). */
char *ds_test_main_text(ds_test_main_fn main_fn, const char *const *words, int n);

/* Checks, for the command whose flags are options (ending with {NULL}),
 * whose --help prints help, and whose parser check takes the words
 * lead[0..n_lead) (at most 6) before a flag:
 *  - help shows every flag of options but -h (everywhere the short of
 *    --help), on an option line ("  -b, --minbytes SIZE  ...") or in a
 *    synopsis bracket ("[--from GPU --to GPU]"), where it first appears
 *    followed by a placeholder of its value exactly when it takes one;
 *  - every flag help's option lines or its own synopsis (the "usage:"
 *    line and the indented lines continuing it that name no program) show
 *    is in options (another program's synopsis may show its own flags:
 *    topo's shows topo import's);
 *  - options holds --help and -h, each flag once; an alias names a flag
 *    of options that is no alias and takes a value exactly when it does;
 *  - each flag given last is refused as "option FLAG needs a value" when
 *    it takes one, and otherwise is neither unknown nor missing a value;
 *  - each flag given (with the value "x" when it takes one) reaches a
 *    branch of the parser's dispatch: it is never unknown, nor the
 *    internal error of a flag listed but not handled;
 *  - each long flag given as "--flag=x" or "--flag=" is read as "--flag x"
 *    or "--flag ''" (the same status and message), and "--flag=1" of one
 *    that takes no value is refused as "option --flag takes no value". */
void ds_test_options_agree(const struct ds_cli_option *options, const char *help,
                           ds_test_check_args_fn check, const char *const *lead, int n_lead);

#endif /* DS_TESTS_OPTIONS_HELP_H */
