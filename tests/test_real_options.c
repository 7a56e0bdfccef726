/* ddpreal's options (real/options.c): the flags its parser knows, the
 * ones its --help shows and its dispatch agree (options_help.c), so that
 * a flag added to one of them alone fails here. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "real/options.h"
#include "tests/options_help.h"

static ds_status parse_ddpreal(int argc, char **argv, struct ds_err *err) {
  struct ds_real_options o;
  return ds_real_options_parse(argc, argv, &o, err);
}

Test(real_options, the_option_table_help_and_parser_agree) {
  const char *lead[] = {"ddpreal"};
  ds_test_options_agree(ds_real_options_flags(), ds_real_options_usage(), parse_ddpreal, lead, 1);
}

/* A flag given last that ddpreal does not know is unknown, not missing a
 * value; one that takes a value is missing it. */
Test(real_options, a_flag_given_last_is_missing_its_value_or_unknown) {
  struct ds_err err = {0};
  char *made_up[] = {"ddpreal", "--frobnicate", NULL};
  cr_assert_eq(parse_ddpreal(2, made_up, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--frobnicate\" (see ddpreal --help)");
  char *iters[] = {"ddpreal", "--schedule", "s.csv", "--iters", NULL};
  cr_assert_eq(parse_ddpreal(4, iters, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --iters needs a value");
}

/* DDPREAL_TIMEOUT_S set by hand obeys --timeout's rule: a value that is
 * not a number of seconds is refused by name, not replaced by the
 * default 300 s in silence; a valid one is read as given. */
Test(real_options, a_bad_timeout_in_the_environment_is_refused) {
  struct ds_err err = {0};
  char *argv[] = {"ddpreal", "--schedule", "s.csv", "--trace", "t.csv", NULL};
  cr_assert_eq(setenv("DDPREAL_TIMEOUT_S", "5min", 1), 0);
  cr_assert_eq(parse_ddpreal(5, argv, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "DDPREAL_TIMEOUT_S=\"5min\""), "%s", err.msg);
  cr_assert(strstr(err.msg, "above 0, at most 1e6"), "%s", err.msg);
  cr_assert_eq(setenv("DDPREAL_TIMEOUT_S", "-3", 1), 0);
  cr_assert_eq(parse_ddpreal(5, argv, &err), DS_EUSAGE);
  /* 0 is refused, as --timeout 0 is: the message does not say "from 0" */
  cr_assert_eq(setenv("DDPREAL_TIMEOUT_S", "0", 1), 0);
  cr_assert_eq(parse_ddpreal(5, argv, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "above 0"), "%s", err.msg);
  char *zero[] = {"ddpreal", "--schedule", "s.csv", "--trace", "t.csv", "--timeout", "0", NULL};
  cr_assert_eq(unsetenv("DDPREAL_TIMEOUT_S"), 0);
  cr_assert_eq(parse_ddpreal(7, zero, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "above 0, at most 1e6"), "%s", err.msg);
  /* a decimal number only: strtod alone read "0x10" as 16 s */
  char *hex[] = {"ddpreal", "--schedule", "s.csv", "--trace", "t.csv", "--timeout", "0x10", NULL};
  cr_assert_eq(parse_ddpreal(7, hex, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "got \"0x10\""), "%s", err.msg);
  cr_assert_eq(setenv("DDPREAL_TIMEOUT_S", "0x10", 1), 0);
  cr_assert_eq(parse_ddpreal(5, argv, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "DDPREAL_TIMEOUT_S=\"0x10\""), "%s", err.msg);
  cr_assert_eq(setenv("DDPREAL_TIMEOUT_S", "45", 1), 0);
  cr_assert_eq(parse_ddpreal(5, argv, &err), DS_OK);
  cr_assert_float_eq(ds_real_timeout_s(), 45.0, 1e-12);
  cr_assert_eq(unsetenv("DDPREAL_TIMEOUT_S"), 0);
  cr_assert_eq(parse_ddpreal(5, argv, &err), DS_OK);
  cr_assert_float_eq(ds_real_timeout_s(), 300.0, 1e-12);
}

/* --share-gpus lets several ranks share a GPU under the cuda device; the
 * cpu device runs one MPI process per rank and no GPU, so `ddpreal
 * --device cpu --share-gpus` replayed exactly as without it, exit 0, and
 * wrote share_gpus=1 into the trace's header. */
Test(real_options, share_gpus_on_the_cpu_device_is_refused_as_ignored) {
  struct ds_err err = {0};
  char *argv[] = {"ddpreal", "--schedule", "s.csv", "--trace", "t.csv", "--device", "cpu",
                  "--share-gpus", NULL};
  cr_assert_eq(parse_ddpreal(8, argv, &err), DS_EUSAGE);
  /* the cuda device is offered only where the build has it */
#ifdef DS_HAVE_CUDA
  cr_assert_str_eq(err.msg, "option --share-gpus: the cpu device runs one process per rank "
                   "and no GPU; it would be ignored (drop it, or give --device cuda)");
#else
  cr_assert_str_eq(err.msg, "option --share-gpus: the cpu device runs one process per rank "
                   "and no GPU; it would be ignored (drop it)");
#endif
  char *plain[] = {"ddpreal", "--schedule", "s.csv", "--trace", "t.csv", "--device", "cpu",
                   NULL};
  cr_assert_eq(parse_ddpreal(7, plain, &err), DS_OK, "%s", err.msg);
}
