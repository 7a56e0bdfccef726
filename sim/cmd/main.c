/*
 * ddpsim: predicts what data-parallel training costs on a machine, and why.
 * `ddpsim [options]` simulates training iterations; `ddpsim collective ...`
 * one collective over a size sweep; `ddpsim topo FILE` shows what a
 * topology file describes; `ddpsim buckets` prints DDP's bucket layouts of a
 * model; `ddpsim analyze` compares a predicted and a
 * measured trace, or measures one. Maps statuses to exit codes: 0 ok, 2
 * usage or input error, 1 failure.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analyze.h"
#include "base/atomic_file.h"
#include "base/cli.h"
#include "base/lookup.h"
#include "base/outputs.h"
#include "base/textout.h"
#include "sim/cmd/bucketcmd.h"
#include "sim/cli/timeline.h"
#include "sim/cmd/collbench.h"
#include "sim/cli/options.h"
#include "sim/cli/run.h"
#include "sim/cmd/topocmd.h"

/* Every output checked before any work (issue #15, defects 4 and 11): it
 * can be written, no two outputs name one file, none is an input. */
static ds_status check_outputs(const struct ds_options *o, struct ds_err *err) {
  static char topo[4096], model[4096];
  struct ds_err ignored = {0};
  const char *topo_path =
      o->topo && ds_lookup_file("topologies", "topology", o->topo, topo, sizeof topo,
                                &ignored) == DS_OK ? topo : NULL;
  const char *model_path =
      o->model && ds_lookup_file("models", "model", o->model, model, sizeof model,
                                 &ignored) == DS_OK ? model : NULL;
  const struct ds_path_arg outs[] = {{"--trace", o->trace},
                                     {"--schedule", o->schedule},
                                     {"--chrome", o->chrome},
                                     {"--plot", o->plot}};
  /* every --calib file is an input an output must not replace */
  struct ds_path_arg ins[3 + DS_CALIB_MAX_FILES] = {{"--topo", topo_path},
                                                    {"--model", model_path}};
  size_t n_ins = 2;
  for (int32_t i = 0; i < o->n_calib_files; i++)
    ins[n_ins++] = (struct ds_path_arg){"--calib", o->calib_files[i]};
  ins[n_ins++] = (struct ds_path_arg){"--measured", o->measured};
  DS_CHECK(ds_outputs_check(outs, sizeof outs / sizeof *outs, ins, n_ins, err));
  /* All or nothing: each is renamed into place only when the whole command
   * succeeded (ds_atomic_file_finish in main). */
  for (size_t i = 0; i < sizeof outs / sizeof *outs; i++)
    if (outs[i].path) DS_CHECK(ds_atomic_file_defer(outs[i].path, err));
  return DS_OK;
}

/* An output file on standard output (`--trace -`, `--schedule -`,
 * `--chrome -`) has it alone, so that it is that file whole (a pipe into
 * `ddpsim analyze -`, a JSON parser): the report goes to standard error. */
static FILE *report_stream(const struct ds_options *o) {
  const char *files[] = {o->trace, o->schedule, o->chrome};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    if (files[i] && strcmp(files[i], "-") == 0) return stderr;
  return stdout;
}

/* A standard output that cannot take what was printed (`> /dev/full`, a
 * closed pipe) is a failure with a message, for --help too (defect 12).
 * print_errno: errno after the printing, 0 if unknown. Output longer than
 * stdio's buffer fails while it is printed, and glibc then drops what it
 * could not write, so the flush may find nothing to write and no errno:
 * the printing's errno says why. */
static int flush_stdout(int print_errno) {
  struct ds_err err = {0};
  if (ds_textout_flush(stdout, print_errno, &err) == DS_OK) return 0;
  fprintf(stderr, "ddpsim: %s\n", err.msg);
  return 1;
}

static int finish(ds_status st, const struct ds_err *err) {
  if (st != DS_OK) {
    /* a message quotes paths and names as given: control characters in
     * them shown as '?', never sent to the terminal raw */
    fputs("ddpsim: ", stderr);
    ds_textout_put_printable(stderr, err->msg[0] ? err->msg : ds_status_message(st), 0);
    fputc('\n', stderr);
    return ds_status_exit_code(st);
  }
  return flush_stdout(0);
}

/* The commands, by the first word: each runs on the words after it. */
static const struct command {
  const char *name;
  ds_status (*run)(int argc, char **argv, FILE *out, struct ds_err *err);
} commands[] = {{"collective", ds_collbench_main},
                {"analyze", ds_analyze_main},
                {"topo", ds_topocmd_main},
                {"buckets", ds_bucketcmd_main}};
#define N_COMMANDS (sizeof commands / sizeof *commands)

/* A first word that is no flag stands where a command would: said as
 * one (it was an "unknown option"), with the nearest command for a typo. */
static ds_status unknown_command(const char *word, struct ds_err *err) {
  const char *names[N_COMMANDS + 1];
  char list[128] = "";
  for (size_t i = 0; i < N_COMMANDS; i++) {
    names[i] = commands[i].name;
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
             commands[i].name);
  }
  names[N_COMMANDS] = NULL;
  const char *near = ds_cli_closest(word, names);
  char hint[64] = "";
  if (near) snprintf(hint, sizeof hint, "did you mean %s? ", near);
  return ds_err_set(err, DS_EUSAGE, "unknown command \"%s\" (%sthe commands: %s; a run: "
                    "ddpsim --topo TOPOLOGY [options]; see ddpsim --help)", word, hint, list);
}

int main(int argc, char **argv) {
  struct ds_options opt;
  struct ds_err err = {0};
  /* Output to a file or pipe is held until the end (up to 1 MiB), so that a
   * write that fails (`> /dev/full`) fails at the flush, whose errno names
   * why: a write failing mid-print loses it (flush_stdout). */
  static char stdout_buffer[1 << 20]; /* glibc ignores the size without a buffer */
  if (!isatty(STDOUT_FILENO)) setvbuf(stdout, stdout_buffer, _IOFBF, sizeof stdout_buffer);
  for (size_t i = 0; argc > 1 && i < N_COMMANDS; i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return finish(commands[i].run(argc - 1, argv + 1, stdout, &err), &err);
  if (argc > 1 && argv[1][0] != '-') return finish(unknown_command(argv[1], &err), &err);
  ds_status st = ds_options_parse(argc, argv, &opt, &err);
  if (st == DS_OK && opt.help) {
    errno = 0;
    ds_options_print_usage(stdout);
    return flush_stdout(errno);
  }
  if (st == DS_OK && opt.version) {
    errno = 0;
    puts("ddpsim " DS_VERSION);
    return flush_stdout(errno);
  }
  if (st == DS_OK) st = check_outputs(&opt, &err);
  /* --chrome, and --plot with nothing swept, draw the run's own trace. */
  if (st == DS_OK && (opt.chrome || opt.plot_timeline))
    st = ds_timeline_run(&opt, report_stream(&opt), &err);
  else if (st == DS_OK)
    st = ds_run(&opt, report_stream(&opt), &err);
  /* The report reaches standard output before the outputs are renamed
   * into place: one that cannot be written (`> /dev/full`, a closed pipe)
   * fails the command whole, and the user's old files stay (they were
   * replaced, and the command then said it failed). */
  int stdout_failed = st == DS_OK && flush_stdout(0) != 0;
  ds_status fst = ds_atomic_file_finish(st == DS_OK && !stdout_failed, &err);
  if (stdout_failed) return 1;
  if (st == DS_OK) st = fst;
  return finish(st, &err);
}
