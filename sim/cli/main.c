/*
 * ddpsim: predicts what data-parallel training costs on a machine, and why.
 * `ddpsim [options]` simulates training iterations; `ddpsim collective ...`
 * one collective over a size sweep; `ddpsim topo FILE` shows what a
 * topology file describes; `ddpsim buckets` prints DDP's bucket layouts of a
 * model; `ddpsim analyze` compares a predicted and a
 * measured trace, or measures one. Maps statuses to exit codes: 0 ok, 2
 * usage or input error, 1 failure.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/analyze.h"
#include "sim/cli/bucketcmd.h"
#include "sim/cli/timeline.h"
#include "sim/cli/collbench.h"
#include "sim/cli/options.h"
#include "sim/cli/run.h"
#include "sim/cli/topocmd.h"

static int finish(ds_status st, const struct ds_err *err) {
  if (st != DS_OK) {
    fprintf(stderr, "ddpsim: %s\n", err->msg[0] ? err->msg : ds_status_message(st));
    return ds_status_exit_code(st);
  }
  return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  struct ds_options opt;
  struct ds_err err = {0};
  if (argc > 1 && strcmp(argv[1], "collective") == 0)
    return finish(ds_collbench_main(argc - 1, argv + 1, stdout, &err), &err);
  if (argc > 1 && strcmp(argv[1], "analyze") == 0)
    return finish(ds_analyze_main(argc - 1, argv + 1, stdout, &err), &err);
  if (argc > 1 && strcmp(argv[1], "topo") == 0)
    return finish(ds_topocmd_main(argc - 1, argv + 1, stdout, &err), &err);
  if (argc > 1 && strcmp(argv[1], "buckets") == 0)
    return finish(ds_bucketcmd_main(argc - 1, argv + 1, stdout, &err), &err);
  ds_status st = ds_options_parse(argc, argv, &opt, &err);
  if (st == DS_OK && opt.help) {
    ds_options_print_usage(stdout);
    return 0;
  }
  if (st == DS_OK && opt.version) {
    puts("ddpsim " DS_VERSION);
    return 0;
  }
  /* --chrome, and --plot with nothing swept, draw the run's own trace. */
  if (st == DS_OK && (opt.chrome || opt.plot_timeline))
    st = ds_timeline_run(&opt, stdout, &err);
  else if (st == DS_OK)
    st = ds_run(&opt, stdout, &err);
  return finish(st, &err);
}
