/*
 * What the ddpsim command refuses, and how: bad flags (exit status 2, a
 * message), its option tables against --help and the parsers (ddpsim and
 * `ddpsim buckets`), base/cli's walks and word reader on a toy table, bad
 * files (a located message, no file left behind), a file of the wrong kind
 * and an unwritable output. The binary under test is $DDPSIM_BIN (the
 * sanitizer build in `make test`), else build/asan/ddpsim.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cmd/bucketcmd.h"
#include "sim/cli/options.h"
#include "tests/options_help.h"
#include "tests/support.h"

Test(cli, bad_flags_exit_2_with_a_message) {
  struct { const char *args, *msg; } cases[] = {
      {"--topo 4gpu --bucket-mb abc", "option --bucket-mb: expected a size in MiB"},
      {"--topo 4gpu --bucket-mb 1,,2", "option --bucket-mb"},
      {"--topo 4gpu --world-size 0", "option --world-size: expected an integer from 1"},
      {"--topo 4gpu --world-size 5", "4 GPUs"},
      {"--topo 4gpu --dtype fp8", "option --dtype: expected fp32, fp16 or bf16"},
      {"--topo 4gpu --iters 1", "option --iters: expected an integer from 2"},
      /* digits only, as every number ddpsim reads: strtoll took these */
      {"--topo 4gpu --world-size ' 2'", "option --world-size: expected an integer from 1"},
      {"--topo 4gpu --iters +3", "option --iters: expected an integer from 2"},
      {"--topo 4gpu --format xml", "option --format: expected one of text or csv or json"},
      {"--topo 4gpu --frobnicate", "unknown option \"--frobnicate\""},
      {"--topo 4gpu --strategy dpp", "unknown strategy \"dpp\""},
      {"--topo 4gpu --strategy dp,ddp,dp", "strategy \"dp\" given twice"},
      {"--bucket-mb 25", "missing --topo"},
      {"--topo 4gpu --batch", "option --batch needs a value"},
      {"--topo nowhere", "topology 'nowhere' not found"},
      {"--topo 4gpu --model nomodel", "model 'nomodel' not found (looked for: "},
      /* a typo's nearest shipped name and flag, and the shipped names */
      {"--topo 4gpu --model resnet5", "model 'resnet5' not found; did you mean resnet50? "
       "(looked for: "},
      {"--topo 4gpux", "; shipped topologies: 2node-ib, 4gpu, cluster-512x8-h100"},
      /* the shipped names the word begins, case ignored, before a typo's
       * (2node is 3 edits from 2node-ib, past a typo's 2) */
      {"--topo 2node", "topology '2node' not found; did you mean 2node-ib? (looked for: "},
      {"--topo 2node.yaml", "topology '2node.yaml' not found; did you mean 2node-ib? "},
      {"--topo dgx", "topology 'dgx' not found; did you mean dgx-a100, dgx-h100 or "
       "dgx1-v100? (looked for: "},
      /* none begins with it: the names holding it */
      {"--topo H100", "topology 'H100' not found; did you mean cluster-512x8-h100, "
       "cluster-64x8-h100 or dgx-h100? (looked for: "},
      {"--topo 4gpu --model BERT-base-squad", "model 'BERT-base-squad' not found; did you "
       "mean bert-base-squad or bert-base-squad-dle? (looked for: "},
      {"--topo 4gpu --model nomodel", "; shipped models: bert-base, bert-base-squad,"},
      {"--topo 4gpu --bucket-mbs 25", "unknown option \"--bucket-mbs\" (did you mean "
       "--bucket-mb? see ddpsim --help)"},
      {"--topo 4gpu --world_size=2", "unknown option \"--world_size=2\" (did you mean "
       "--world-size? see ddpsim --help)"},
      {"--topo 4gpu --frobnicate", "unknown option \"--frobnicate\" (see ddpsim --help)"},
      {"--topo 4gpu --bucket-mb 1,2 --trace /tmp/x.csv", "give one --bucket-mb value"},
      {"--topo 4gpu --trace ''", "option --trace: expected a value, got an empty string"},
      {"--topo '' --bucket-mb 25", "option --topo: expected a value, got an empty string"},
      /* a first word that is no flag is a command: a typo of one was an
       * "unknown option \"colective\"", and a topology without --topo too */
      {"colective --topo 4gpu", "unknown command \"colective\" (did you mean collective? "
       "the commands: collective, analyze, topo, buckets; a run: ddpsim --topo TOPOLOGY "
       "[options]; see ddpsim --help)"},
      {"4gpu --bucket-mb 25", "unknown command \"4gpu\" (the commands: collective, analyze, "
       "topo, buckets; a run: ddpsim --topo TOPOLOGY"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    ds_test_ddpsim_refuses(cases[i].args, cases[i].msg);
}

/* Each run `ddpsim COMMON ACCEPTED[i] --format csv` exits 0. */
static void accepts_each(const char *common, const char *const *accepted, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char args[256];
    cr_assert_lt(snprintf(args, sizeof args, "%s %s --format csv", common, accepted[i]),
                 (int)sizeof args);
    struct ds_test_result r = ds_test_cli_ok(args);
    ds_test_release(&r);
  }
}

/* --tf32 picks fp32 training's math; under --dtype fp16 or bf16 every
 * convolution and matmul runs in the half type, so --tf32 all and none
 * exited 0 with the default's numbers and printed "flags: --tf32 all" and
 * CSV tf32 "all" for a run that ran none of it. The default, conv, is what
 * such a run does anyway, and --amp keeps fp32 GEMMs (PowerSGD's) that
 * --tf32 all moves. */
Test(cli, tf32_under_a_half_dtype_is_refused_as_ignored) {
  ds_test_ddpsim_refuses("--topo 4gpu --dtype fp16 --tf32 all",
                         "option --tf32 all: the TF32 switch of fp32 math, but --dtype fp16 "
                         "runs every convolution and matmul in fp16; it would be ignored");
  ds_test_ddpsim_refuses("--topo 4gpu --dtype bf16 --tf32 none", "option --tf32 none:");
  static const char *const accepted[] = {"--dtype fp16 --tf32 conv", "--amp fp16 --tf32 conv",
                                         "--dtype fp32 --tf32 none"};
  accepts_each("--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml", accepted,
               sizeof accepted / sizeof *accepted);
}

/* Under --amp only PowerSGD's GEMMs run fp32 math: --tf32 none is what conv
 * runs there, and all without PowerSGD moves nothing. Both exited 0 with
 * the default's numbers on every shipped model and CSV tf32 "all"/"none". */
Test(cli, tf32_under_amp_is_refused_where_ignored) {
  ds_test_ddpsim_refuses("--topo 4gpu --amp fp16 --tf32 all",
                         "option --tf32 all: the TF32 switch of fp32 math, but --amp fp16 "
                         "runs every convolution and matmul in fp16 (only --comm-hook "
                         "powersgd:RANK's fp32 GEMMs would move to TF32); it would be ignored");
  ds_test_ddpsim_refuses("--topo 4gpu --amp bf16 --tf32 none --comm-hook powersgd:4",
                         "option --tf32 none: the TF32 switch of fp32 math, but --amp bf16 "
                         "runs every convolution and matmul in bf16, and PowerSGD's fp32 "
                         "GEMMs run in FP32 under conv too; it would be ignored");
  /* PowerSGD in the run, alone or in a sweep of hooks: all moves its GEMMs */
  static const char *const accepted[] = {"--comm-hook powersgd:1",
                                         "--comm-hook none,powersgd:1"};
  accepts_each("--topo 4gpu --world-size 2 --batch 2 --amp fp16 --tf32 all", accepted,
               sizeof accepted / sizeof *accepted);
}

static ds_status parse_ddpsim(int argc, char **argv, struct ds_err *err) {
  struct ds_options o;
  return ds_options_parse(argc, argv, &o, err);
}

/* The flags ddpsim's parser knows, the ones its --help shows and its
 * dispatch agree (options_help.c): a flag added to one of them alone, or
 * shown with a value it does not take, fails here. */
Test(cli, the_option_table_help_and_parser_agree) {
  char *help = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&help, &len);
  cr_assert(fp != NULL);
  ds_options_print_usage(fp);
  cr_assert_eq(fclose(fp), 0);
  const char *lead[] = {"ddpsim"};
  ds_test_options_agree(ds_options_flags(), help, parse_ddpsim, lead, 1);
  free(help);
}

/* The same for `ddpsim buckets`. */
Test(cli, buckets_option_table_help_and_parser_agree) {
  const char *help_words[] = {"buckets", "--help"}, *lead[] = {"buckets"};
  char *help = ds_test_main_text(ds_bucketcmd_main, help_words, 2);
  ds_test_options_agree(ds_bucketcmd_options(), help, ds_bucketcmd_check_args, lead, 1);
  free(help);
}

/* buckets takes a long flag's value after "=" as ddpsim itself does
 * (base/cli.h ds_cli_split_values): the same report; a flag that takes no
 * value refuses one. */
Test(cli, buckets_takes_a_value_after_an_equals_sign) {
  const char *apart[] = {"buckets", "--model", "resnet50", "--bucket-mb", "5"};
  const char *joined[] = {"buckets", "--model=resnet50", "--bucket-mb=5"};
  char *want = ds_test_main_text(ds_bucketcmd_main, apart, 5);
  char *got = ds_test_main_text(ds_bucketcmd_main, joined, 3);
  cr_assert_str_eq(got, want);
  free(want);
  free(got);
  struct ds_err err = {0};
  char *graph[] = {"buckets", "--static-graph=1", NULL};
  cr_assert_eq(ds_bucketcmd_check_args(2, graph, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --static-graph takes no value");
  char *twice[] = {"buckets", "--bucket-mb=5", "--bucket-mb", "25", NULL};
  cr_assert_eq(ds_bucketcmd_check_args(4, twice, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --bucket-mb given twice");
}

Test(cli, bad_files_name_file_line_and_key_and_leave_nothing_behind) {
  char dir[] = "/tmp/ddpsim-bad-XXXXXX", path[600], args[1400];
  ds_test_make_dir(dir);
  struct { const char *text, *msg; } cases[] = {
      {"schema_version: 1\nname: x\nsample: s\ndefault_batch: 8\noptimizer: sgd\nlayers:\n"
       "  - name: a\n    fwd_flops: lots\n", ":8:16: key 'layers[0].fwd_flops': expected an "
                                             "integer"},
      {"schema_version: 1\nname: x\nsample: s\ndefault_batch: 8\noptimizer: lion\n",
       ":5:12: key 'optimizer': expected sgd or adam"},
      {"schema_version: 1\nname: x\ncolour: red\n", ":3:1: unknown key 'colour'"},
      {"schema_version: 1\nname: [unclosed\n", "YAML syntax error"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(path, sizeof path, "%s/bad%zu.yaml", dir, i);
    FILE *fp = fopen(path, "w");
    fputs(cases[i].text, fp);
    fclose(fp);
    snprintf(args, sizeof args, "--topo 4gpu --model %s --trace %s/trace.csv --schedule %s/s.csv",
             path, dir, dir);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 2, "case %zu: status %d", i, r.status);
    cr_assert(strstr(r.err, path) && strstr(r.err, cases[i].msg), "case %zu: stderr \"%s\"",
              i, r.err);
    ds_test_release(&r);
    unlink(path);
    cr_assert_eq(ds_test_count_entries(dir), 0, "case %zu left a file behind", i);
  }
  rmdir(dir);
}

Test(cli, unwritable_trace_fails_cleanly) {
  /* A trace into a missing directory: exit 1 (I/O), a message naming it. */
  struct ds_test_result r = ds_test_cli("--topo 4gpu --trace /tmp/ddpsim-no-such-dir/t.csv");
  cr_assert_eq(r.status, 1, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "/tmp/ddpsim-no-such-dir/t.csv"), "stderr: %s", r.err);
  ds_test_release(&r);
}

/* base/cli's two walks on a table of their own: an alias is one option
 * with its flag in ds_cli_next_option (ddpsim, ddpreal) as in ds_cli_once,
 * and ds_cli_split_values leaves a flag's value alone, whatever it looks
 * like, and an unknown "--x=y" whole. */
static const struct ds_cli_option toy[] = {
    {"--minbytes", 1, NULL}, {"-b", 1, "--minbytes"}, {"--verbose", 0, NULL},
    {"--reference", 1, NULL}, {"--help", 0, NULL},   {"-h", 0, "--help"},
    {NULL, 0, NULL}};

static ds_status walk_toy(int argc, char **argv, struct ds_err *err) {
  struct ds_cli_walk w = {.program = "toy", .options = toy};
  for (int i = 1; i < argc; i++) {
    char flag[64];
    const char *value;
    DS_CHECK(ds_cli_next_option(&w, argc, argv, &i, flag, sizeof flag, &value, err));
  }
  return DS_OK;
}

Test(cli, base_cli_record_keeps_values_and_refuses_overflow) {
  /* the walk keeps each flag's value, as given (NULL for a switch) */
  struct ds_err err = {0};
  struct ds_cli_walk w = {.program = "toy", .options = toy};
  char *argv[] = {"toy", "--minbytes=8", "--verbose", "--reference", "r.csv", NULL};
  for (int i = 1; i < 5; i++) {
    char flag[64];
    const char *value;
    cr_assert_eq(ds_cli_next_option(&w, 5, argv, &i, flag, sizeof flag, &value, &err), DS_OK,
                 "%s", err.msg);
  }
  cr_assert_eq(w.seen.n, 3);
  cr_assert_str_eq(w.seen.value[0], "8");
  cr_assert_null(w.seen.value[1]);
  cr_assert_str_eq(w.seen.value[2], "r.csv");
  /* a full record is a bug, said, not a repeat that goes unnoticed */
  struct ds_cli_seen seen = {0};
  seen.n = DS_CLI_SEEN_MAX;
  for (int i = 0; i < DS_CLI_SEEN_MAX; i++) seen.flag[i] = "--verbose";
  cr_assert_eq(ds_cli_once(&seen, toy, "--minbytes", &err), DS_EINTERNAL);
  cr_assert(strstr(err.msg, "DS_CLI_SEEN_MAX"), "%s", err.msg);
}

Test(cli, base_cli_walks_count_an_alias_as_its_flag) {
  struct ds_err err = {0};
  char *alias[] = {"toy", "-b", "8", "--minbytes=16", NULL};
  cr_assert_eq(walk_toy(4, alias, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --minbytes given twice (as -b and --minbytes)");
  char *same[] = {"toy", "-b", "8", "-b", "16", NULL};
  cr_assert_eq(walk_toy(5, same, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option -b given twice");
  char *help[] = {"toy", "-h", "--help", NULL};
  cr_assert_eq(walk_toy(3, help, &err), DS_OK, "%s", err.msg);
  struct ds_cli_seen seen = {0};
  cr_assert_eq(ds_cli_once(&seen, toy, "--minbytes", &err), DS_OK);
  cr_assert_eq(ds_cli_once(&seen, toy, "-b", &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --minbytes given twice (as --minbytes and -b)");
  char *words[] = {"toy", "--reference", "--minbytes=1", "-b=2", "--x=y", "--minbytes=3", NULL};
  struct ds_cli_words split;
  cr_assert_eq(ds_cli_split_values(toy, 6, words, &split, &err), DS_OK, "%s", err.msg);
  const char *want[] = {"toy", "--reference", "--minbytes=1", "-b=2", "--x=y", "--minbytes", "3"};
  cr_assert_eq(split.argc, 7);
  for (int i = 0; i < 7; i++) cr_assert_str_eq(split.argv[i], want[i], "word %d", i);
  cr_assert_null(split.argv[7]);
  ds_cli_words_free(&split);
  /* an empty value, joined or apart, is a slip of the shell: ddpsim's
   * wording; a refused argument is one word in its place (the empty value
   * apart goes with its flag), the words after it split as ever */
  char *empty_joined[] = {"toy", "--minbytes=", "--minbytes=2", NULL};
  cr_assert_eq(ds_cli_split_values(toy, 3, empty_joined, &split, &err), DS_OK);
  cr_assert_eq(split.problem.status, DS_EUSAGE);
  cr_assert_str_eq(split.problem.msg, "option --minbytes: expected a value, got an empty string");
  cr_assert_eq(split.argc, 4);
  cr_assert_eq(ds_cli_split_refused(split.argv[1]), DS_EUSAGE);
  cr_assert_str_eq(split.argv[3], "2");
  ds_cli_words_free(&split);
  char *empty_apart[] = {"toy", "-b", "", "--verbose", NULL};
  cr_assert_eq(ds_cli_split_values(toy, 4, empty_apart, &split, &err), DS_OK);
  cr_assert_str_eq(split.problem.msg, "option -b: expected a value, got an empty string");
  cr_assert_eq(split.argc, 3);
  cr_assert_eq(ds_cli_split_refused(split.argv[1]), DS_EUSAGE);
  cr_assert_eq(ds_cli_split_refused(split.argv[2]), DS_OK);
  ds_cli_words_free(&split);
  /* the first refusal's message, a later one only its word */
  char *verbose[] = {"toy", "--verbose=1", "--minbytes=", NULL};
  cr_assert_eq(ds_cli_split_values(toy, 3, verbose, &split, &err), DS_OK);
  cr_assert_str_eq(split.problem.msg, "option --verbose takes no value");
  cr_assert_eq(ds_cli_split_refused(split.argv[2]), DS_EUSAGE);
  ds_cli_words_free(&split);
}

/* ds_cli_next_word, the loop of the subcommands that take positionals,
 * on toy's table through ds_cli_parse_split: ctx is the walk's
 * positionals in, what it read out ("P:word" for a positional, "flag=value"
 * or "flag" for a switch, space-separated). */
struct toy_words {
  enum ds_cli_positionals positionals;
  char read[256];
};

static ds_status parse_toy_words(int argc, char **argv, void *ctx, struct ds_err *err) {
  struct toy_words *t = ctx;
  struct ds_cli_walk w = {.program = "toy", .options = toy, .positionals = t->positionals};
  t->read[0] = '\0';
  for (int i = 1; i < argc; i++) {
    const char *f, *v;
    DS_CHECK(ds_cli_next_word(&w, argc, argv, &i, &f, &v, err));
    size_t n = strlen(t->read);
    snprintf(t->read + n, sizeof t->read - n, "%s%s%s%s", n ? " " : "", f ? f : "P:",
             f && v ? "=" : "", v ? v : "");
  }
  return DS_OK;
}

/* Reads argv (NULL-terminated) with positionals; the status, err and
 * what was read in t. */
static ds_status words_toy(enum ds_cli_positionals positionals, char **argv,
                           struct toy_words *t, struct ds_err *err) {
  int argc = 0;
  while (argv[argc]) argc++;
  *t = (struct toy_words){.positionals = positionals};
  *err = (struct ds_err){0};
  return ds_cli_parse_split(toy, argc, argv, parse_toy_words, t, err);
}

Test(cli, base_cli_next_word_reads_positionals_flags_and_their_values) {
  struct toy_words t;
  struct ds_err err;
  /* a flag's value is the next word whatever it looks like; "-" is a
   * positional only where the command says so (analyze) */
  char *mixed[] = {"toy", "a.csv", "-", "-b", "8", "--verbose", "--reference", "--x=y", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN_OR_DASH, mixed, &t, &err), DS_OK, "%s",
               err.msg);
  cr_assert_str_eq(t.read, "P:a.csv P:- -b=8 --verbose --reference=--x=y");
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, mixed, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"-\" (see toy --help)");
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_NONE, mixed, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"a.csv\" (see toy --help)");
  /* given last: a known flag misses its value, an unknown one is unknown */
  char *last[] = {"toy", "--reference", NULL}, *unknown_last[] = {"toy", "--refrence", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, last, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --reference needs a value");
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, unknown_last, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--refrence\" (did you mean --reference? see toy --help)");
  /* a repeat under either spelling, as ds_cli_next_option says it; help
   * twice is help */
  char *twice[] = {"toy", "-b", "8", "--minbytes=16", NULL}, *help[] = {"toy", "-h", "--help", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, twice, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --minbytes given twice (as -b and --minbytes)");
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, help, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(t.read, "-h --help");
  /* the first bad word, left to right: a refused split or the walk's own */
  char *refused_first[] = {"toy", "--verbose=1", "--bogus", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, refused_first, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --verbose takes no value");
  char *refused_later[] = {"toy", "--bogus", "--verbose=1", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, refused_later, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--bogus\" (see toy --help)");
  /* the refused word is never read as a positional */
  char *empty[] = {"toy", "a.csv", "--minbytes=", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, empty, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --minbytes: expected a value, got an empty string");
  cr_assert_str_eq(t.read, "P:a.csv");
}

/* A calibration file names its GPU since `ddpreal calibrate` writes `gpu`,
 * a key topologies have too: given to --model it is a calibration file (by
 * `efficiency`, which only calibration files have), not "a topology (it has
 * 'gpu')" as the old hand-copied key lists said; one with nothing but `gpu`
 * and `compute` (both a topology's keys too) is a calibration file, the
 * earlier kind on the tie; but one shared key alone (a model with a stray
 * `gpu`) is an unknown key, not a topology. And --calib tells the other
 * kinds as --topo and --model do, where it said "unknown key 'name'". */
Test(cli, a_calibration_file_elsewhere_and_other_files_given_to_calib_are_named) {
  char full[] = "/tmp/ddpsim-calibkind-XXXXXX", bare[] = "/tmp/ddpsim-calibkind-XXXXXX";
  ds_test_write_temp(full, "schema_version: 1\ngpu: \"NVIDIA H200\"\ncompute:\n"
                           "  flops_efficiency: 0.5\nefficiency:\n  conv_bf16: 0.4\n");
  ds_test_write_temp(bare, "schema_version: 1\ngpu: \"NVIDIA H200\"\ncompute:\n"
                           "  flops_efficiency: 0.5\n");
  char args[256], msg[256];
  snprintf(args, sizeof args, "--topo 4gpu --model %s", full);
  snprintf(msg, sizeof msg, "%s:5:1: this looks like a calibration file (ddpreal calibrate) "
           "(it has 'efficiency'), not a model: give it to --calib; --model takes a model",
           full);
  ds_test_ddpsim_refuses(args, msg);
  snprintf(args, sizeof args, "--topo 4gpu --model %s", bare);
  snprintf(msg, sizeof msg, "%s:2:1: this looks like a calibration file (ddpreal calibrate) "
           "(it has 'gpu', 'compute'), not a model: give it to --calib", bare);
  ds_test_ddpsim_refuses(args, msg);
  snprintf(args, sizeof args, "--topo %s", full);
  ds_test_ddpsim_refuses(args, "this looks like a calibration file (ddpreal calibrate) (it "
                         "has 'efficiency'), not a topology: give it to --calib");
  /* one key a topology shares is no sign of one: a stray 'gpu' in a model */
  char *model = ds_test_slurp("tests/data/tiny-model.yaml");
  char *stray = malloc(strlen(model) + 32);
  cr_assert_not_null(stray);
  sprintf(stray, "%sgpu: A100-SXM4-80GB\n", model);
  char odd[] = "/tmp/ddpsim-calibkind-XXXXXX";
  ds_test_write_temp(odd, stray);
  snprintf(args, sizeof args, "--topo 4gpu --model %s", odd);
  ds_test_ddpsim_refuses(args, "unknown key 'gpu'");
  unlink(odd);
  free(stray);
  free(model);
  unlink(full);
  unlink(bare);
  struct { const char *args, *msg; } cases[] = {
      {"--topo 4gpu --model resnet50 --calib models/resnet50.yaml",
       "option --calib: models/resnet50.yaml:21:1: this looks like a model file (it has "
       "'sample', 'default_batch', 'optimizer', 'input_bytes', ...), not a calibration "
       "file: give it to --model; --calib takes a calibration file"},
      {"--topo 4gpu --model resnet50 --calib topologies/4gpu.yaml",
       "topologies/4gpu.yaml:11:1: this looks like a topology (it has 'nodes', "
       "'gpus_per_node', 'intra_node'), not a calibration file: give it to --topo"},
      {"--topo 4gpu --model resnet50 --calib topologies/gpus.yaml",
       "this looks like a GPU table (it has 'gpus'), not a calibration file"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    ds_test_ddpsim_refuses(cases[i].args, cases[i].msg);
}

/* A file of the wrong kind, or no file at all, is said as such (a new
 * user's review: --topo models/resnet50.yaml said "unknown key 'sample'
 * (allowed: schema_version, name, gpu, ...)", --topo /tmp "not found"):
 * each kind of ddpsim file is told by root keys only it has, and the
 * message says where the file goes. */
Test(cli, a_file_of_the_wrong_kind_or_a_directory_is_named_as_such) {
  struct { const char *args, *msg; } cases[] = {
      {"--topo models/resnet50.yaml",
       "models/resnet50.yaml:21:1: this looks like a model file (it has 'sample', "
       "'default_batch', 'optimizer', 'input_bytes', ...), not a topology: give it to "
       "--model; --topo takes a topology"},
      {"--topo 4gpu --model topologies/4gpu.yaml",
       "topologies/4gpu.yaml:11:1: this looks like a topology (it has 'nodes', "
       "'gpus_per_node', 'intra_node'), not a model: give it to --topo; --model takes a "
       "model"},
      {"--topo topologies/gpus.yaml", "this looks like a GPU table (it has 'gpus'), not a "
       "topology"},
      {"--topo 4gpu --model topologies/gpus.yaml", "this looks like a GPU table (it has "
       "'gpus'), not a model"},
      {"--topo tests/data", "topology 'tests/data' is a directory, not a topology file"},
      {"--topo 4gpu --model models/", "model 'models/' is a directory, not a model file"},
      {"--topo /dev/null", "topology '/dev/null' is not a regular file"},
      {"collective --topo models/bert-base.yaml", "this looks like a model file"},
      {"topo tests/data", "is a directory"},
      {"--topo resnet50", "topology 'resnet50' not found, but "},
      {"--topo 4gpu --model dgx-a100", "topologies/dgx-a100.yaml is a topology: give it to "
       "--topo"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    ds_test_ddpsim_refuses(cases[i].args, cases[i].msg);
}
