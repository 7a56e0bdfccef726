/*
 * `ddpreal collective`'s options (real/collective_args.c), which build and
 * run without CUDA: the flags its parser knows, the ones its --help shows
 * and its dispatch agree (options_help.c); a flag given last is missing
 * its value or unknown; values reach their fields; bad ones are refused
 * naming the flag. And the rows it writes: NCCL_ALGO's lists stay one
 * CSV field and one JSON string.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real/collective_args.h"
#include "tests/options_help.h"

static ds_status check_collective(int argc, char **argv, struct ds_err *err) {
  struct ds_collective_args a;
  return ds_collective_args_parse(argc, argv, &a, err);
}

Test(real_collective_args, the_option_table_help_and_parser_agree) {
  const char *lead[] = {"collective"};
  ds_test_options_agree(ds_collective_args_flags(), ds_collective_args_usage(),
                        check_collective, lead, 1);
}

/* `ddpreal collective --colour` said "ddpreal collective: collective:
 * --colour needs a value (see --help)": a made-up flag given last is
 * unknown; one that takes a value is missing it (the one wording of
 * base/cli.h, without the command's name, which ddpreal prints first). */
Test(real_collective_args, a_flag_given_last_is_missing_its_value_or_unknown) {
  struct ds_err err = {0};
  char *made_up[] = {"collective", "-g", "2", "--colour", NULL};
  cr_assert_eq(check_collective(4, made_up, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--colour\" (see ddpreal collective --help)");
  char *nranks[] = {"collective", "--op", "reduce", "-g", NULL};
  cr_assert_eq(check_collective(4, nranks, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option -g needs a value");
}

/* Every value lands in its field: sizes with units (binary, as nccl-tests:
 * 1K = 1024), either spelling of an algorithm (NCCL's is what NCCL_ALGO
 * gets), a protocol in any case. */
Test(real_collective_args, values_reach_their_fields) {
  char *argv[] = {"collective", "--op", "allgather", "-b", "1K", "--maxbytes", "1M",
                  "-f", "4", "--nranks", "2", "--share-gpus", "--iters", "7",
                  "--warmup", "0", "--format", "csv", "--algo", "nvlstree", "--proto",
                  "ll128", NULL};
  struct ds_collective_args a;
  struct ds_err err = {0};
  cr_assert_eq(ds_collective_args_parse(22, argv, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.op, DS_COLLECTIVE_OP_ALLGATHER);
  cr_assert_str_eq(ds_collective_op_name(a.op), "allgather");
  cr_assert_eq(a.min_bytes, 1024);
  cr_assert_eq(a.max_bytes, 1024 * 1024);
  cr_assert_eq(a.factor, 4.0);
  cr_assert_eq(a.nranks, 2);
  cr_assert_eq(a.share_gpus, 1);
  cr_assert_eq(a.iters, 7);
  cr_assert_eq(a.warmup, 0);
  cr_assert_eq(a.format, DS_COLLECTIVE_FORMAT_CSV);
  cr_assert_str_eq(a.algo, "NVLSTree");
  cr_assert_str_eq(a.proto, "LL128");
  cr_assert_eq(a.help, 0);
}

/* Nothing given: nccl-tests' all-reduce from 8 B to 1 GiB by 2, one rank
 * per GPU (0), 20 timed and 5 warm-up calls, NCCL's own algorithm. */
Test(real_collective_args, defaults) {
  char *argv[] = {"collective", NULL};
  struct ds_collective_args a;
  struct ds_err err = {0};
  cr_assert_eq(ds_collective_args_parse(1, argv, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.op, DS_COLLECTIVE_OP_ALLREDUCE);
  cr_assert_eq(a.min_bytes, 8);
  cr_assert_eq(a.max_bytes, (size_t)1 << 30);
  cr_assert_eq(a.factor, 2.0);
  cr_assert_eq(a.nranks, 0);
  cr_assert_eq(a.iters, 20);
  cr_assert_eq(a.warmup, 5);
  cr_assert_eq(a.format, DS_COLLECTIVE_FORMAT_TEXT);
  cr_assert_null(a.algo);
  cr_assert_null(a.proto);
}

/* Bad values, each named with what was expected; -b 0 never grew (the
 * sweep multiplied 0 by -f for ever), so it is refused; --help ends the
 * parse (a bad flag after it is not read). */
Test(real_collective_args, bad_values_are_refused_naming_the_flag) {
  static const char *const cases[][4] = {
      {"--op", "alltoall", "--op 'alltoall': expected allreduce, broadcast, reduce, "
                           "allgather or reducescatter"},
      {"-b", "0", "-b '0': expected a size like 8, 1K, 1M, 1G (>= 1, at most 64G)"},
      {"-e", "lots", "-e 'lots': expected a size like 8, 1K, 1M, 1G (at most 64G)"},
      {"-e", "1Mx", "-e '1Mx': expected a size like 8, 1K, 1M, 1G (at most 64G)"},
      {"-f", "1", "-f '1': expected a finite factor > 1"},
      {"-f", "inf", "-f 'inf': expected a finite factor > 1"},
      {"-f", "1e400", "-f '1e400': expected a finite factor > 1"},
      {"-f", "nan", "-f 'nan': expected a finite factor > 1"},
      /* decimal only: strtod alone read hex, which nccl-tests reads as 0 */
      {"-b", "0x10", "-b '0x10': expected a size like 8, 1K, 1M, 1G (>= 1, at most 64G)"},
      {"-e", "0x1p20", "-e '0x1p20': expected a size like 8, 1K, 1M, 1G (at most 64G)"},
      {"-f", "0x2", "-f '0x2': expected a finite factor > 1"},
      {"-f", " 2", "-f ' 2': expected a finite factor > 1"},
      {"-g", "0", "-g '0': expected a whole number from 1 to 1000000"},
      {"-g", " 4", "-g ' 4': expected a whole number from 1 to 1000000"},
      {"-g", "+4", "-g '+4': expected a whole number from 1 to 1000000"},
      {"--warmup", "-1", "--warmup '-1': expected a whole number from 0 to 1000000"},
      {"--format", "xml", "--format 'xml': expected text, csv or json"},
      {"--algo", "direct", "--algo 'direct': expected ring, tree, nvls, nvlstree, "
                           "collnetdirect, collnetchain or pat"},
      {"--proto", "LL64", "--proto 'LL64': expected LL, LL128 or Simple"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *argv[] = {"collective", (char *)cases[i][0], (char *)cases[i][1], NULL};
    struct ds_err err = {0};
    cr_assert_eq(check_collective(3, argv, &err), DS_EUSAGE, "%s %s", cases[i][0], cases[i][1]);
    cr_assert_str_eq(err.msg, cases[i][2]);
  }
  char *order[] = {"collective", "-b", "1M", "-e", "1K", NULL};
  struct ds_err err = {0};
  cr_assert_eq(check_collective(5, order, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "-b 1048576 is more than -e 1024");
  char *help[] = {"collective", "--help", "--colour", NULL};
  struct ds_collective_args a;
  cr_assert_eq(ds_collective_args_parse(3, help, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.help, 1);
}

/* A flag given twice is refused, as ddpreal's own options refuse it
 * (base/cli.h ds_cli_once), not silently replaced by its last value. */
Test(real_collective_args, a_flag_given_twice_is_refused) {
  struct ds_err err = {0};
  struct ds_collective_args a;
  char *iters[] = {"collective", "--iters", "3", "--iters", "4", NULL};
  cr_assert_eq(ds_collective_args_parse(5, iters, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --iters given twice");
  char *share[] = {"collective", "--share-gpus", "--share-gpus", NULL};
  cr_assert_eq(ds_collective_args_parse(3, share, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --share-gpus given twice");
}

/* -b and --minbytes (and -e/--maxbytes, -f/--stepfactor, -g/--nranks) are
 * one option (base/cli.h alias_of): both given is a repeat, not the last
 * silently winning. */
Test(real_collective_args, an_alias_and_its_flag_are_one_option) {
  struct ds_err err = {0};
  struct ds_collective_args a;
  char *bytes[] = {"collective", "-b", "8", "--minbytes", "16", NULL};
  cr_assert_eq(ds_collective_args_parse(5, bytes, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --minbytes given twice (as -b and --minbytes)");
  char *ranks[] = {"collective", "--nranks", "2", "-g", "4", NULL};
  cr_assert_eq(ds_collective_args_parse(5, ranks, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --nranks given twice (as --nranks and -g)");
}

/* A long flag takes its value after "=", as ddpreal's own options do
 * (base/cli.h ds_cli_walk_flags on ds_cli_next_option); --share-gpus takes
 * none; an empty value is refused as ddpsim refuses it. */
Test(real_collective_args, a_long_flag_takes_its_value_after_an_equals_sign) {
  struct ds_err err = {0};
  struct ds_collective_args a;
  char *argv[] = {"collective", "--op=broadcast", "--minbytes=1K", "--nranks=2", "--iters=",
                  NULL};
  cr_assert_eq(ds_collective_args_parse(5, argv, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --iters: expected a value, got an empty string");
  argv[4] = "--iters=7";
  cr_assert_eq(ds_collective_args_parse(5, argv, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.op, DS_COLLECTIVE_OP_BROADCAST);
  cr_assert_eq(a.min_bytes, 1024);
  cr_assert_eq(a.nranks, 2);
  cr_assert_eq(a.iters, 7);
  char *share[] = {"collective", "--share-gpus=1", NULL};
  cr_assert_eq(ds_collective_args_parse(2, share, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --share-gpus takes no value");
}

static char *written(enum ds_collective_format format, const struct ds_collective_result *r,
                     int first) {
  char *buf = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&buf, &len);
  cr_assert(fp);
  cr_assert_eq(ds_collective_result_write(fp, format, r, first), 0);
  fclose(fp);
  return buf;
}

/* NCCL_ALGO and NCCL_PROTO are lists in NCCL's syntax ("Tree,Ring",
 * "^NVLS,CollnetDirect"): one CSV field each (RFC 4180 quotes), one JSON
 * string each; before, "Tree,Ring" shifted every later CSV column. */
Test(real_collective_args, algo_and_proto_lists_stay_one_field) {
  struct ds_collective_result r = {DS_COLLECTIVE_OP_ALLREDUCE, "Tree,Ring", "^NVLS,CollnetDirect",
                                   8, 1048576, 262144, 50.0, 20.97152, 36.70016, 0};
  char *csv = written(DS_COLLECTIVE_FORMAT_CSV, &r, 1);
  cr_assert_str_eq(csv, "allreduce,\"Tree,Ring\",\"^NVLS,CollnetDirect\",8,1048576,50.000,"
                        "20.972,36.700,0\n");
  free(csv);
  char *json = written(DS_COLLECTIVE_FORMAT_JSON, &r, 0);
  cr_assert_str_eq(json, ",\n  {\"op\": \"allreduce\", \"algo\": \"Tree,Ring\", \"proto\": "
                         "\"^NVLS,CollnetDirect\", \"nranks\": 8, \"size_bytes\": 1048576, "
                         "\"time_us\": 50.000, \"algbw_gbps\": 20.972, \"busbw_gbps\": 36.700, "
                         "\"wrong\": 0}");
  free(json);
  r.algo = "a\"b\\", r.proto = "auto";
  csv = written(DS_COLLECTIVE_FORMAT_CSV, &r, 1);
  cr_assert_str_eq(csv, "allreduce,\"a\"\"b\\\",auto,8,1048576,50.000,20.972,36.700,0\n");
  free(csv);
  json = written(DS_COLLECTIVE_FORMAT_JSON, &r, 1);
  cr_assert(strstr(json, "\"algo\": \"a\\\"b\\\\\", \"proto\": \"auto\""), "%s", json);
  free(json);
  char *text = written(DS_COLLECTIVE_FORMAT_TEXT, &r, 1);
  cr_assert_str_eq(text, "       1048576       262144  float      50.00        20.97        "
                         "36.70        0\n");
  free(text);
}

/* Sizes as nccl-tests reads them (src/common.cu, parsesize: a number and
 * one letter k, m or g in either case, binary): "-b8M" with the value
 * attached, lowercase units, and "1MB" = 1 MiB as nccl-tests reads it
 * (ddpsim's own files read 1MB as 10^6; this command follows nccl-tests,
 * whose flags it copies). The old parser refused -b8M as an unknown flag
 * and read 1MB as 1000000. */
Test(real_collective_args, sizes_are_read_as_nccl_tests_reads_them) {
  struct ds_collective_args a;
  struct ds_err err = {0};
  char *attached[] = {"collective", "-b8M", "-e1g", "-g2", "-f4", NULL};
  cr_assert_eq(ds_collective_args_parse(5, attached, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.min_bytes, (size_t)8 << 20);
  cr_assert_eq(a.max_bytes, (size_t)1 << 30);
  cr_assert_eq(a.nranks, 2);
  cr_assert_float_eq(a.factor, 4.0, 0);
  char *units[] = {"collective", "-b", "1MB", "-e", "3m", NULL};
  cr_assert_eq(ds_collective_args_parse(5, units, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.min_bytes, (size_t)1 << 20);
  cr_assert_eq(a.max_bytes, (size_t)3 << 20);
  char *more[] = {"collective", "-b", "1KiB", "-e", "5k", NULL};
  cr_assert_eq(ds_collective_args_parse(5, more, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.min_bytes, 1024);
  cr_assert_eq(a.max_bytes, 5 * 1024);
  char *bytes[] = {"collective", "-b", "12B", "-e", "1.5K", NULL};
  cr_assert_eq(ds_collective_args_parse(5, bytes, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.min_bytes, 12);
  cr_assert_eq(a.max_bytes, 1536);
}

/* A factor barely above 1 made the sweep endless in practice (-f
 * 1.0000001 from 8 B to 1 GiB: about 1.9e8 sizes). At most 1000 sizes,
 * floor(ln(2^27) / ln f) + 1: f must pass (2^27)^(1/1000) = 1.0188912;
 * the message proposes the smallest factor that fits at 5 decimals,
 * 1.01890 (1000 sizes), and 1.01889 (1001) is refused. */
Test(real_collective_args, a_factor_too_close_to_one_is_refused_with_the_limit) {
  struct ds_collective_args a;
  struct ds_err err = {0};
  char *tiny[] = {"collective", "-f", "1.0000001", NULL};
  cr_assert_eq(ds_collective_args_parse(3, tiny, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "-f 1.0000001: the sweep from 8 to 1073741824 bytes would take "
                   "more than 1000 sizes; use -f 1.01890 or more");
  char *fits[] = {"collective", "-f", "1.0189", NULL};
  cr_assert_eq(ds_collective_args_parse(3, fits, &a, &err), DS_OK, "%s", err.msg);
  char *just_not[] = {"collective", "-f", "1.01889", NULL};
  cr_assert_eq(ds_collective_args_parse(3, just_not, &a, &err), DS_EUSAGE);
  cr_assert_eq(ds_collective_sweep_steps(8, (size_t)1 << 30, 1.0189, 1000), 1000);
  cr_assert_eq(ds_collective_sweep_steps(8, (size_t)1 << 30, 1.01889, 1000), 1001);
  /* nccl-tests' defaults for -b 8 -e 128M -f 2: 25 sizes */
  cr_assert_eq(ds_collective_sweep_steps(8, (size_t)128 << 20, 2, 1000), 25);
}
