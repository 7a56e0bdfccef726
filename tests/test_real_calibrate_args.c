/*
 * `ddpreal calibrate`'s options (real/calibrate_args.c), which build and
 * run without CUDA: the flags its parser knows, the ones its --help shows
 * and its dispatch agree (options_help.c); a flag given last is missing
 * its value or unknown; values reach their fields; what is required or
 * bad is refused naming the flag.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real/calibrate_args.h"
#include "real/collective_args.h"
#include "tests/options_help.h"

static ds_status check_calibrate(int argc, char **argv, struct ds_err *err) {
  struct ds_calibrate_args a;
  return ds_calibrate_args_parse(argc, argv, &a, err);
}

Test(real_calibrate_args, the_option_table_help_and_parser_agree) {
  const char *lead[] = {"calibrate"};
  ds_test_options_agree(ds_calibrate_args_flags(), ds_calibrate_args_usage(), check_calibrate,
                        lead, 1);
}

/* A made-up flag given last was "--colour needs a value (see --help)"; it
 * is unknown, and one that takes a value is missing it. */
Test(real_calibrate_args, a_flag_given_last_is_missing_its_value_or_unknown) {
  struct ds_err err = {0};
  char *made_up[] = {"calibrate", "--schedule", "s.csv", "--colour", NULL};
  cr_assert_eq(check_calibrate(4, made_up, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--colour\" (see ddpreal calibrate --help)");
  char *out[] = {"calibrate", "--schedule", "s.csv", "--out", NULL};
  cr_assert_eq(check_calibrate(4, out, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --out needs a value");
}

/* Every value lands in its field, and the command line is kept whole for
 * the calibration file's header. */
Test(real_calibrate_args, values_reach_their_fields) {
  char *argv[] = {"calibrate", "--schedule", "s.csv", "--out", "c.yaml", "--device", "cuda",
                  "-g", "2", "--share-gpus", "--fp32-math", "fp32", "--peak-tflops", "19.5",
                  "--mem-bw", "1555", "--iters", "3", "--nccl-blocks", "24", "-b", "1K",
                  "--maxbytes", "64M", "--stepfactor", "8", NULL};
  struct ds_calibrate_args a;
  struct ds_err err = {0};
  cr_assert_eq(ds_calibrate_args_parse(26, argv, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(a.schedule, "s.csv");
  cr_assert_str_eq(a.out, "c.yaml");
  cr_assert_eq(a.nranks, 2);
  cr_assert_eq(a.share_gpus, 1);
  cr_assert_eq(a.fp32_math, 0);
  cr_assert_eq(a.peak_tflops, 19.5);
  cr_assert_eq(a.mem_gbps, 1555.0);
  cr_assert_eq(a.iters, 3);
  cr_assert_eq(a.nccl_blocks, 24);
  cr_assert_eq(a.min_bytes, 1024);
  cr_assert_eq(a.max_bytes, (size_t)64 << 20);
  cr_assert_eq(a.factor, 8.0);
  cr_assert_str_eq(a.command, "ddpreal calibrate --schedule s.csv --out c.yaml --device cuda "
                   "-g 2 --share-gpus --fp32-math fp32 --peak-tflops 19.5 --mem-bw 1555 "
                   "--iters 3 --nccl-blocks 24 -b 1K --maxbytes 64M --stepfactor 8");
}

/* Only the two files given: one rank, tf32 when cuBLAS has it (-1), the
 * GPU table's peaks (0), 10 executions per shape, 16 copy blocks, the
 * all-reduce from 8 B to 256 MiB by 2. */
Test(real_calibrate_args, defaults) {
  char *argv[] = {"calibrate", "--schedule", "s.csv", "--out", "c.yaml", NULL};
  struct ds_calibrate_args a;
  struct ds_err err = {0};
  cr_assert_eq(ds_calibrate_args_parse(5, argv, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.nranks, 1);
  cr_assert_eq(a.fp32_math, -1);
  cr_assert_eq(a.peak_tflops, 0.0);
  cr_assert_eq(a.mem_gbps, 0.0);
  cr_assert_eq(a.iters, 10);
  cr_assert_eq(a.nccl_blocks, 16);
  cr_assert_eq(a.min_bytes, 8);
  cr_assert_eq(a.max_bytes, (size_t)256 << 20);
  cr_assert_eq(a.factor, 2.0);
}

/* Required files, bad values (each naming what was expected) and the
 * sizes' order; --help ends the parse, so it needs no files. */
Test(real_calibrate_args, what_is_missing_or_bad_is_refused) {
  static const char *const cases[][3] = {
      {"--device", "cpu", "option --device: expected cuda, got \"cpu\" (calibrate measures a "
                          "GPU: a CPU has no roofline to fit)"},
      {"-g", "4097", "-g '4097': expected a rank count from 1 to 4096"},
      /* decimal only: strtod alone read "0x4" as 4 ranks, "0x1p10" as 1024 */
      {"-g", "0x4", "-g '0x4': expected a rank count from 1 to 4096"},
      {"--mem-bw", "0x1p10", "--mem-bw '0x1p10': expected a positive number of GB/s"},
      {"--peak-tflops", " 500", "--peak-tflops ' 500': expected a positive number of TFLOP/s"},
      {"-b", "0x10", "-b '0x10': expected a size like 8 or 1K (>= 4)"},
      {"--iters", "2.5", "--iters '2.5': expected an integer from 1 to 1000"},
      {"--nccl-blocks", "0", "--nccl-blocks '0': expected an integer from 1 to 1024"},
      {"--fp32-math", "bf16", "--fp32-math 'bf16': expected tf32 or fp32"},
      {"--peak-tflops", "inf", "--peak-tflops 'inf': expected a positive number of TFLOP/s"},
      {"--mem-bw", "0", "--mem-bw '0': expected a positive number of GB/s"},
      {"-b", "2", "-b '2': expected a size like 8 or 1K (>= 4)"},
      {"-e", "32G", "-e '32G': expected a size like 256M"},
      {"-f", "1", "-f '1': expected a factor > 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *argv[] = {"calibrate", (char *)cases[i][0], (char *)cases[i][1], NULL};
    struct ds_err err = {0};
    cr_assert_eq(check_calibrate(3, argv, &err), DS_EUSAGE, "%s %s", cases[i][0], cases[i][1]);
    cr_assert_str_eq(err.msg, cases[i][2]);
  }
  struct ds_err err = {0};
  char *no_schedule[] = {"calibrate", "--out", "c.yaml", NULL};
  cr_assert_eq(check_calibrate(3, no_schedule, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "missing --schedule (a file written by ddpsim --schedule: its "
                   "compute ops give the GEMM sizes)");
  char *no_out[] = {"calibrate", "--schedule", "s.csv", NULL};
  cr_assert_eq(check_calibrate(3, no_out, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "missing --out (where to write the calibration file)");
  char *order[] = {"calibrate", "--schedule", "s.csv", "--out", "c.yaml", "-b", "1K", "-e",
                   "512", NULL};
  cr_assert_eq(check_calibrate(9, order, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "-e 512 is below -b 1024");
  char *help[] = {"calibrate", "-h", NULL};
  struct ds_calibrate_args a;
  cr_assert_eq(ds_calibrate_args_parse(2, help, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.help, 1);
}

/* A flag given twice is refused (base/cli.h ds_cli_once). */
Test(real_calibrate_args, a_flag_given_twice_is_refused) {
  struct ds_err err = {0};
  struct ds_calibrate_args a;
  char *out[] = {"calibrate", "--schedule", "s.csv", "--out", "a.yaml", "--out", "b.yaml", NULL};
  cr_assert_eq(ds_calibrate_args_parse(7, out, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --out given twice");
}

/* -g and --nranks (and -b/--minbytes, -e/--maxbytes, -f/--stepfactor) are
 * one option (base/cli.h alias_of). */
Test(real_calibrate_args, an_alias_and_its_flag_are_one_option) {
  struct ds_err err = {0};
  struct ds_calibrate_args a;
  char *argv[] = {"calibrate", "--schedule", "s.csv", "--out", "c.yaml", "-g", "2",
                  "--nranks", "4", NULL};
  cr_assert_eq(ds_calibrate_args_parse(9, argv, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --nranks given twice (as -g and --nranks)");
}

/* The command goes on a comment line of the calibration file: a newline,
 * NEL or LS in a path would end the comment and start a line the YAML
 * reader parses, so each shows as '?' (ds_textout_comment_text); an
 * ordinary UTF-8 name stays as given. */
Test(real_calibrate_args, the_command_line_stays_on_its_comment_line) {
  struct ds_err err = {0};
  struct ds_calibrate_args a;
  char *argv[] = {"calibrate", "--schedule", "s\nout: x.csv", "--out",
                  "c\xc2\x85\xe2\x80\xa8\xc3\xa9.yaml", NULL};
  cr_assert_eq(ds_calibrate_args_parse(5, argv, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(a.command,
                   "ddpreal calibrate --schedule s?out: x.csv --out c??\xc3\xa9.yaml");
}

/* A long flag takes its value after "=", as ddpreal's own options do
 * (base/cli.h ds_cli_split_values); the command kept for the calibration
 * file's header is the one given. */
Test(real_calibrate_args, a_long_flag_takes_its_value_after_an_equals_sign) {
  struct ds_err err = {0};
  struct ds_calibrate_args a;
  char *argv[] = {"calibrate", "--schedule=s.csv", "--out=c.yaml", "--maxbytes=64M", NULL};
  cr_assert_eq(ds_calibrate_args_parse(4, argv, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(a.schedule, "s.csv");
  cr_assert_str_eq(a.out, "c.yaml");
  cr_assert_eq(a.max_bytes, (size_t)64 << 20);
  cr_assert_str_eq(a.command, "ddpreal calibrate --schedule=s.csv --out=c.yaml --maxbytes=64M");
  char *share[] = {"calibrate", "--schedule", "s.csv", "--out", "c.yaml", "--share-gpus=yes",
                   NULL};
  cr_assert_eq(ds_calibrate_args_parse(6, share, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --share-gpus takes no value");
}

/* The calibration file can be written, checked before the GPU is measured
 * (minutes of work), and an empty --out= is a slip of the shell. */
Test(real_calibrate_args, the_output_is_checked_before_any_measurement) {
  struct ds_err err = {0};
  struct ds_calibrate_args a;
  char *missing_dir[] = {"calibrate", "--schedule", "s.csv", "--out", "/nonexistent-dir/c.yaml",
                         NULL};
  cr_assert_neq(ds_calibrate_args_parse(5, missing_dir, &a, &err), DS_OK);
  cr_assert(strstr(err.msg, "--out /nonexistent-dir/c.yaml"), "%s", err.msg);
  char *empty[] = {"calibrate", "--schedule", "s.csv", "--out=", NULL};
  cr_assert_eq(ds_calibrate_args_parse(4, empty, &a, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --out: expected a value, got an empty string");
}

/* --out goes through the checks every command's outputs get
 * (base/outputs.h): it may not be the schedule it reads (on a GPU machine
 * the calibration would replace its own input) nor the file standard
 * output is redirected to (calibrate prints its tables there: the renamed
 * file would lose them). Both usage errors naming the flags and path. */
Test(real_calibrate_args, the_output_is_not_an_input_or_standard_output) {
  char dir[] = "/tmp/ddpsim-calargs-XXXXXX", sched[64], out[64];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(sched, sizeof sched, "%s/s.csv", dir);
  snprintf(out, sizeof out, "%s/cal.yaml", dir);
  FILE *fp = fopen(sched, "w");
  cr_assert(fp);
  fputs("# a schedule\n", fp);
  cr_assert_eq(fclose(fp), 0);
  struct ds_err err = {0};
  struct ds_calibrate_args a;
  char *same[] = {"calibrate", "--schedule", sched, "--out", sched, NULL};
  cr_assert_eq(ds_calibrate_args_parse(5, same, &a, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "--out") && strstr(err.msg, "--schedule") && strstr(err.msg, sched),
            "%s", err.msg);

  /* standard output redirected to the --out file, as `> cal.yaml` does */
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert(saved >= 0 && fd >= 0);
  cr_assert_eq(dup2(fd, STDOUT_FILENO), STDOUT_FILENO);
  close(fd);
  char *redirected[] = {"calibrate", "--schedule", sched, "--out", out, NULL};
  ds_status st = ds_calibrate_args_parse(5, redirected, &a, &err);
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  cr_assert_eq(st, DS_EUSAGE);
  cr_assert(strstr(err.msg, "--out") && strstr(err.msg, "standard output"), "%s", err.msg);

  /* elsewhere it is accepted */
  char *fine[] = {"calibrate", "--schedule", sched, "--out", out, NULL};
  cr_assert_eq(ds_calibrate_args_parse(5, fine, &a, &err), DS_OK, "%s", err.msg);
  unlink(out);
  unlink(sched);
  rmdir(dir);
}

/* Every all-reduce size is a point of calibrate's fit, which keeps at most
 * DS_CALIBRATE_MAX_POINTS (64): the sweep used to drop the sizes past the
 * 64th silently (-f 1.1 from 8 B to 256 MiB is 182 sizes). It is refused,
 * proposing (2^25)^(1/64) = 1.3109612, rounded up 1.31097 (64 sizes; 1.31096
 * gives 65). Sizes
 * read as ddpreal collective reads them (nccl-tests: "-b8M", 1MB = 1 MiB). */
Test(real_calibrate_args, a_sweep_past_the_fits_points_is_refused) {
  struct ds_calibrate_args a;
  struct ds_err err = {0};
  char *many[] = {"calibrate", "--schedule", "s.csv", "--out", "c.yaml", "-f", "1.1", NULL};
  cr_assert_eq(check_calibrate(7, many, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "-f 1.1: the sweep from 8 to 268435456 bytes would take more than "
                   "64 sizes, the most the fit keeps; use -f 1.31097 or more");
  char *fits[] = {"calibrate", "--schedule", "s.csv", "--out", "c.yaml", "-f", "1.31097", NULL};
  cr_assert_eq(check_calibrate(7, fits, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_collective_sweep_steps(8, (size_t)256 << 20, 1.31097, 64), 64);
  cr_assert_eq(ds_collective_sweep_steps(8, (size_t)256 << 20, 1.31096, 64), 65);
  char *sizes[] = {"calibrate", "--schedule", "s.csv", "--out", "c.yaml", "-b8M", "-e", "1GB",
                   NULL};
  cr_assert_eq(ds_calibrate_args_parse(8, sizes, &a, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(a.min_bytes, (size_t)8 << 20);
  cr_assert_eq(a.max_bytes, (size_t)1 << 30);
}
