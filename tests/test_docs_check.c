/*
 * scripts/docs_check.py (make docs-check): a doc's pasted outputs against
 * their commands. On a scratch doc: a stale block is found (exit 1, a diff),
 * --update rewrites exactly the marked blocks (fenced, fenced inside a list
 * item, an unfenced table) and nothing else, a second --update changes
 * nothing, a skipped block is listed and left alone, exit=N is honoured and
 * a failing command is an error (exit 2) that --update does not paper over;
 * a backticked repository path that names nothing fails (exit 1, FILE:LINE),
 * --update too, while placeholders and globs that match pass; so does a
 * backticked ds_/DS_ name that no code has (a comment's mention does not
 * count, nor the tests' code where the doc's line does not talk of tests);
 * needs=PATH
 * checks its block where PATH exists and lists it as not checked where not.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"

static const char doc[] =
    "# scratch\n"
    "\n"
    "<!-- docs-check: printf 'one\\ntwo\\n' -->\n"
    "```\n"
    "one\n"
    "stale\n"
    "```\n"
    "\n"
    "- a list item:\n"
    "\n"
    "  <!-- docs-check: printf 'x  \\n  y\\n'\n"
    "    | sed 's/x/z/' -->\n"
    "  ```text\n"
    "  old\n"
    "  ```\n"
    "\n"
    "<!-- docs-check: printf '| a |\\n| --- |\\n| 1 |\\n' -->\n"
    "| a |\n"
    "| --- |\n"
    "| 0 |\n"
    "\n"
    "prose stays\n"
    "\n"
    "<!-- docs-check exit=2: echo refused; exit 2 -->\n"
    "```\n"
    "refused\n"
    "```\n"
    "\n"
    "<!-- docs-check skip: a timing -->\n"
    "```\n"
    "12.3 ms\n"
    "```\n";

static const char want[] =
    "# scratch\n"
    "\n"
    "<!-- docs-check: printf 'one\\ntwo\\n' -->\n"
    "```\n"
    "one\n"
    "two\n"
    "```\n"
    "\n"
    "- a list item:\n"
    "\n"
    "  <!-- docs-check: printf 'x  \\n  y\\n'\n"
    "    | sed 's/x/z/' -->\n"
    "  ```text\n"
    "  z\n"
    "    y\n"
    "  ```\n"
    "\n"
    "<!-- docs-check: printf '| a |\\n| --- |\\n| 1 |\\n' -->\n"
    "| a |\n"
    "| --- |\n"
    "| 1 |\n"
    "\n"
    "prose stays\n"
    "\n"
    "<!-- docs-check exit=2: echo refused; exit 2 -->\n"
    "```\n"
    "refused\n"
    "```\n"
    "\n"
    "<!-- docs-check skip: a timing -->\n"
    "```\n"
    "12.3 ms\n"
    "```\n";

static struct ds_test_result check(const char *flags, const char *path) {
  char args[512];
  snprintf(args, sizeof args, "scripts/docs_check.py %s %s", flags, path);
  return ds_test_run("", "python3", args);
}

Test(docs_check, finds_stale_blocks_and_update_rewrites_exactly_them) {
  char path[] = "/tmp/ddpsim-docs-check-XXXXXX";
  ds_test_write_temp(path, doc);
  struct ds_test_result r = check("", path);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "is stale: printf 'one\\ntwo\\n'") && strstr(r.out, "+two"), "%s",
            r.out);
  cr_assert(strstr(r.out, "not checked") && strstr(r.out, "(a timing)"), "%s", r.out);
  cr_assert(strstr(r.out, "4 blocks checked, 3 stale, 1 not checked, 0 commands failed"),
            "%s", r.out);
  ds_test_release(&r);
  r = check("--update", path);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  ds_test_release(&r);
  char *got = ds_test_slurp(path);
  cr_assert_str_eq(got, want);
  free(got);
  r = check("--update", path);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "4 blocks checked, 0 updated"), "%s", r.out);
  ds_test_release(&r);
  got = ds_test_slurp(path);
  cr_assert_str_eq(got, want, "a second --update changed the doc");
  free(got);
  r = check("", path);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  ds_test_release(&r);
  unlink(path);
}

Test(docs_check, a_failing_command_is_an_error_even_with_update) {
  char path[] = "/tmp/ddpsim-docs-check-XXXXXX";
  const char *bad = "<!-- docs-check: echo out; exit 3 -->\n```\nout\n```\n";
  ds_test_write_temp(path, bad);
  struct ds_test_result r = check("--update", path);
  cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
  cr_assert(strstr(r.err, "command exited 3 (expected 0)"), "%s", r.err);
  ds_test_release(&r);
  char *got = ds_test_slurp(path);
  cr_assert_str_eq(got, bad, "the block was touched");
  free(got);
  unlink(path);
  char path2[] = "/tmp/ddpsim-docs-check-XXXXXX";
  ds_test_write_temp(path2, "<!-- docs-check: echo x\n");
  r = check("", path2);
  cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
  cr_assert(strstr(r.err, "marker without -->"), "%s", r.err);
  ds_test_release(&r);
  unlink(path2);
}

Test(docs_check, a_backticked_path_that_names_nothing_fails) {
  char path[] = "/tmp/ddpsim-docs-check-XXXXXX";
  ds_test_write_temp(path, "# scratch\n"
                           "exists: `docs/architecture.md`, `sim/net/topo` (a module), `sim/net/`\n"
                           "globs: `sim/train/compute*.c`, `tests/test_{net,lockstep}.c`\n"
                           "placeholders: `tests/data/fuzz/READER/`, `tests/test_<module>.c`\n"
                           "outside the repository: `torch/nn/parallel/distributed.py`\n"
                           "planted: `sim/net/no_such_module.c` and `docs/nope/`\n");
  struct ds_test_result r = check("", path);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, ":6: `sim/net/no_such_module.c` names no file or folder"), "%s", r.out);
  cr_assert(strstr(r.out, ":6: `docs/nope/` names no file or folder"), "%s", r.out);
  cr_assert(strstr(r.out, "2 backticked paths missing"), "%s", r.out);
  ds_test_release(&r);
  r = check("--update", path);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  ds_test_release(&r);
  unlink(path);
}

/* A backticked ds_/DS_ name must be in the code, so that a function or
 * macro renamed or removed is not left named in a doc; `NAME*` and `NAME/`
 * are prefixes; a name outside backticks is prose and a fenced block
 * literal text, neither checked. Backticks pair as markdown's code spans
 * do, over a line break: on line 7 alone the span would be "` and `" and
 * the name after it prose. */
Test(docs_check, a_backticked_name_the_code_does_not_have_fails) {
  char path[] = "/tmp/ddpsim-docs-check-XXXXXX";
  ds_test_write_temp(path, "# scratch\n"
                           "in the code: `ds_topo_load`, `struct ds_calib_sources`, `DS_UNITS_MIB`\n"
                           "prefixes: `ds_units_parse_*`, `DS_LEGACY_STRIDED/TRANSPOSED_CYCLES`\n"
                           /* split, so that this file, a source file, has none of them */
                           "prose: ds_not_" "backticked_at_all\n"
                           "planted: `ds_no_such_" "function(x)` and `DS_NO_SUCH_" "MACRO_*`\n"
                           "a span that goes `on over\n"
                           "a line break` and `ds_no_such_" "span_name`\n"
                           "```\n`ds_no_such_" "fenced_name`\n```\n");
  struct ds_test_result r = check("", path);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, ":5: `ds_no_such_" "function` is named in no code of the repository"), "%s", r.out);
  cr_assert(strstr(r.out, ":5: `DS_NO_SUCH_" "MACRO_` is named in no code of the repository"), "%s", r.out);
  cr_assert(strstr(r.out, ":7: `ds_no_such_" "span_name` is named in no code of the repository"), "%s", r.out);
  cr_assert(strstr(r.out, "0 backticked paths missing, 3 backticked names missing"), "%s", r.out);
  ds_test_release(&r);
  r = check("--update", path);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  ds_test_release(&r);
  unlink(path);
}

/* A name counts where code has it, not a comment: ds_docs_check_comment_only
 * is in this comment alone (the doc below splits it), so a doc naming it
 * fails, as it would once the code it named were gone and a comment still
 * said it. The tests' code counts where the doc's line talks of tests:
 * ds_test_run (tests/support.c) on such a line passes, on another fails
 * (a word that ends in "test", fastest or latest, is not one); the name's
 * own "test" does not count. */
Test(docs_check, a_name_only_a_comment_or_the_tests_have_fails) {
  char path[] = "/tmp/ddpsim-docs-check-XXXXXX";
  ds_test_write_temp(path, "# scratch\n"
                           "only a comment has `ds_docs_check_" "comment_only`, said in tests too\n"
                           "the tests' helper `ds_test_run`\n"
                           "a helper: `ds_test_run`\n"
                           "in the code: `ds_topo_load`\n"
                           "the fastest and latest: `ds_test_run`\n");
  struct ds_test_result r = check("", path);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, ":2: `ds_docs_check_" "comment_only` is named in no code"), "%s",
            r.out);
  cr_assert_null(strstr(r.out, ":3: "), "%s", r.out);
  cr_assert(strstr(r.out, ":4: `ds_test_run` is named in no code"), "%s", r.out);
  cr_assert(strstr(r.out, ":6: `ds_test_run` is named in no code"), "%s", r.out);
  cr_assert(strstr(r.out, "0 backticked paths missing, 3 backticked names missing"), "%s", r.out);
  ds_test_release(&r);
  unlink(path);
}

/* needs=PATH: a block whose input lies outside the repository (../shared)
 * is checked where the input exists and listed, not run, where it does not,
 * as the tests skip without it; a malformed option is still an error. */
Test(docs_check, a_block_that_needs_an_absent_input_is_listed_not_run) {
  char path[] = "/tmp/ddpsim-docs-check-XXXXXX";
  ds_test_write_temp(path, "<!-- docs-check needs=tests/data: printf 'new\\n' -->\n"
                           "```\nold\n```\n\n"
                           "<!-- docs-check needs=../no/such/input.csv: exit 3 -->\n"
                           "```\nold\n```\n");
  struct ds_test_result r = check("", path);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "is stale: printf 'new\\n'"), "%s", r.out);
  cr_assert(strstr(r.out, "(needs ../no/such/input.csv, which is not beside the repository)"),
            "%s", r.out);
  cr_assert(strstr(r.out, "1 blocks checked, 1 stale, 1 not checked, 0 commands failed"), "%s",
            r.out);
  ds_test_release(&r);
  unlink(path);
  char path2[] = "/tmp/ddpsim-docs-check-XXXXXX";
  ds_test_write_temp(path2, "<!-- docs-check exit=two: echo x -->\n```\nx\n```\n");
  r = check("", path2);
  cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
  cr_assert(strstr(r.err, "unknown docs-check option 'exit=two'"), "%s", r.err);
  ds_test_release(&r);
  unlink(path2);
}
