/*
 * `ddpsim collective`'s flags: bad flags are usage errors that name the
 * flag (an unknown op with the nearest known one, --algo auto where --proto
 * auto is meant, --ring-chunks and --nccl-extra where they mean nothing),
 * checked without reading the topology and against its --help; aliases and
 * --flag=value; a refusal prints no header or row in any format.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cmd/collbench.h"
#include "tests/options_help.h"
#include "tests/support.h"

Test(collbench, bad_flags_are_usage_errors_naming_the_flag) {
  const char *cases[][2] = {
      {"--topo tests/data/ring8.yaml --op alltoallv", "--op"},
      {"--topo tests/data/ring8.yaml --op send", "--op"},
      {"--topo topologies/dgx-a100.yaml --op alltoall --proto LL128", "--proto"},
      {"--topo topologies/dgx-a100.yaml --op gather --proto LL", "--proto"},
      {"--topo topologies/dgx-a100.yaml --op scatter --algo auto", "--algo"},
      {"--topo topologies/dgx-a100.yaml --op allgather --algo auto", "--algo"},
      {"--topo topologies/dgx-a100.yaml --op broadcast --algo auto --proto none", "--proto"},
      {"--topo topologies/dgx-a100.yaml --op reduce --proto LL129", "--proto"},
      {"--topo tests/data/ring8.yaml --op alltoall --algo ring", "--algo"},
      {"--topo topologies/cluster-512x8-h100.yaml --op alltoall", "give -g 1024 or fewer"},
      {"--topo tests/data/ring8.yaml --op gather --algo ring", "--algo"},
      {"--topo tests/data/ring8.yaml --op allgather --proto LL", "--proto"},
      {"--topo tests/data/ring8.yaml --op allgather --root 1", "--root"},
      {"--topo tests/data/ring8.yaml --op broadcast --root 8", "--root"},
      {"--topo tests/data/ring8.yaml --algo treee", "--algo"},
      {"--topo tests/data/ring8.yaml --op broadcast --algo tree", "--algo"},
      {"--topo tests/data/ring8.yaml -b 2", "-b"},
      {"--topo tests/data/ring8.yaml -e 1X", "-e"},
      {"--topo tests/data/ring8.yaml -f 1", "-f"},
      {"--topo tests/data/ring8.yaml -g 9", "-g"},
      {"--topo tests/data/ring8.yaml -b 1M -e 1K", "-e"},
      {"--topo tests/data/ring8.yaml --format xml", "--format"},
      {"--topo tests/data/ring8.yaml --frobnicate 1", "--frobnicate"},
      {"-b 8", "--topo"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_test_output o = ds_test_collective_run(cases[i][0]);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", cases[i][0], o.st);
    cr_assert(strstr(o.err.msg, cases[i][1]), "%s: message \"%s\"", cases[i][0], o.err.msg);
    free(o.text);
  }
}

/* --algo auto on an op NCCL runs on one algorithm (allgather: ring;
 * alltoall: p2p) is refused, and the message points at --proto auto, which
 * runs NCCL's model for it (the protocol per size, the launch cost); an op
 * without NCCL's protocols here (gather) is not pointed at it. */
Test(collbench, algo_auto_on_a_one_algorithm_op_suggests_proto_auto) {
  const char *with[] = {"allgather", "alltoall", "reducescatter"};
  for (size_t i = 0; i < sizeof with / sizeof *with; i++) {
    char *argv[] = {"collective", "--topo", "4gpu", "--op", (char *)with[i], "--algo", "auto",
                    NULL};
    struct ds_err err = {0};
    cr_assert_eq(ds_collbench_check_args(7, argv, &err), DS_EUSAGE, "%s", with[i]);
    cr_assert(strstr(err.msg, "option --algo") && strstr(err.msg, "use --proto auto"), "%s: %s",
              with[i], err.msg);
  }
  char *gather[] = {"collective", "--topo", "4gpu", "--op", "gather", "--algo", "auto", NULL};
  struct ds_err err = {0};
  cr_assert_eq(ds_collbench_check_args(7, gather, &err), DS_EUSAGE);
  cr_assert_null(strstr(err.msg, "--proto auto"), "%s", err.msg);
  char *ok[] = {"collective", "--topo", "4gpu", "--op", "allgather", "--proto", "auto", NULL};
  cr_assert_eq(ds_collbench_check_args(7, ok, &err), DS_OK, "%s", err.msg);
}

/* The seam the subcmd fuzz reader drives (fuzz/readers.c): the flags are
 * validated as ds_collbench_main validates them, and nothing is read, so a
 * topology that does not exist passes and a bad -b does not. */
Test(collbench, check_args_validates_the_flags_without_reading_the_topology) {
  char *bad[] = {"collective", "--topo", "no-such-topology", "-b", "3", NULL};
  struct ds_err err = {0};
  cr_assert_eq(ds_collbench_check_args(5, bad, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "option -b: expected a size of at least 4 bytes"), "%s", err.msg);
  char *good[] = {"collective", "--topo", "no-such-topology", "--op", "broadcast", NULL};
  cr_assert_eq(ds_collbench_check_args(5, good, &err), DS_OK, "%s", err.msg);
  struct ds_test_output o = ds_test_collective_run("--topo no-such-topology --op broadcast");
  cr_assert_eq(o.st, DS_EUSAGE, "the command itself reads it: %s", o.err.msg);
  free(o.text);
}

/* A flag given last, with nothing after it: one that takes a value is
 * missing it (options_help.c, from the flags the parser knows and the
 * ones its --help shows, which must agree); one collective does not know
 * is unknown (the subcmd fuzz reader found `ddpsim collective --topo 4gpu
 * --frobnicate` refused as "option --frobnicate needs a value"); a word
 * that is no flag is unexpected. */
Test(collbench, a_flag_given_last_is_missing_its_value_or_unknown) {
  const char *help_words[] = {"collective", "--help"};
  char *help = ds_test_main_text(ds_collbench_main, help_words, 2);
  ds_test_options_agree(ds_collbench_options(), help, ds_collbench_check_args, help_words, 2);
  free(help);
  struct ds_err err = {0};
  char *made_up[] = {"collective", "--topo", "4gpu", "--frobnicate", NULL};
  cr_assert_eq(ds_collbench_check_args(4, made_up, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--frobnicate\" (see ddpsim collective --help)");
  char *word[] = {"collective", "--topo", "4gpu", "dgx-a100", NULL};
  cr_assert_eq(ds_collbench_check_args(4, word, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unexpected argument \"dgx-a100\" (see --help)");
}

/* NCCL's protocols and channels (--algo auto, --proto). */

Test(collbench, algo_and_proto_flags) {
  const char *cases[][2] = {
      {"--topo topologies/dgx-a100.yaml --algo nvls", "nvls"},
      {"--topo tests/data/ring8.yaml --algo nvls", "nvls"},
      {"--topo topologies/dgx-h100.yaml --algo nvls --proto LL", "--proto"},
      {"--topo topologies/dgx-h100.yaml --algo nvls --proto none", "--proto"},
      {"--topo topologies/dgx-a100.yaml --algo direct --proto LL", "--proto"},
      {"--topo topologies/dgx-a100.yaml --algo hierarchical --proto auto", "--proto"},
      {"--topo topologies/dgx-a100.yaml --algo reduce-broadcast --proto Simple", "--proto"},
      {"--topo tests/data/twonode.yaml -g 6 --algo hierarchical", "hierarchical"},
      {"--topo tests/data/ring8.yaml --algo tree --proto LL", "--proto"},
      {"--topo topologies/dgx-a100.yaml --proto LL64", "--proto"},
      {"--topo topologies/dgx-a100.yaml --algo auto --proto none", "--proto"},
      {"--topo topologies/dgx-a100.yaml --nccl-extra some", "--nccl-extra"},
      {"--topo topologies/dgx-a100.yaml --proto LL,LL64", "--proto 'LL,LL64': unknown protocol"},
      {"--topo topologies/dgx-a100.yaml --proto ^LL,LL128,Simple", "leaves no protocol"},
      {"--topo topologies/dgx-h100.yaml --algo nvls --proto LL,LL128", "Simple"},
      {"--topo topologies/dgx-a100.yaml --op sendrecv --proto LL,Simple", "p2p"},
      {"--topo tests/data/ring8.yaml --algo ring --proto LL,Simple", "--proto LL,Simple"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_test_output o = ds_test_collective_run(cases[i][0]);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", cases[i][0], o.st);
    cr_assert(strstr(o.err.msg, cases[i][1]), "%s: \"%s\"", cases[i][0], o.err.msg);
    free(o.text);
  }
  /* --algo ring keeps the plain ring unless a protocol is asked for; the
   * text table then names what ran per row. */
  struct ds_test_output o = ds_test_collective_ok(
      "--topo topologies/dgx-a100.yaml --algo ring --proto auto -b 1G -e 1G");
  cr_assert(strstr(o.text, " ring Simple  12 "), "%s", o.text);
  free(o.text);
}

/* Every operation (issue #3). */

/* -b and --minbytes (and -e/--maxbytes, -f/--stepfactor, -g/--ranks) are
 * one option: giving both is the repeat the check exists to refuse, not a
 * silent overwrite by the last (base/cli.h alias_of). */
Test(collbench, an_alias_and_its_flag_are_one_option) {
  ds_test_collective_usage_error("--topo tests/data/ring8.yaml -b 8 --minbytes 16",
                                 "option --minbytes given twice (as -b and --minbytes)");
  ds_test_collective_usage_error("--topo tests/data/ring8.yaml --ranks 2 -g 4",
                                 "option --ranks given twice (as --ranks and -g)");
  ds_test_collective_usage_error("--topo tests/data/ring8.yaml -e 1K -e 2K",
                                 "option -e given twice");
}

/* "--flag=value" as ddpsim itself reads it (base/cli.h
 * ds_cli_split_values): the same table as "--flag value"; an unknown one
 * stays unknown, whole; a flag that takes no value refuses one. */
Test(collbench, a_long_flag_takes_its_value_after_an_equals_sign) {
  struct ds_test_output apart =
      ds_test_collective_run("--topo tests/data/ring8.yaml --op broadcast --maxbytes 1K");
  struct ds_test_output joined =
      ds_test_collective_run("--topo=tests/data/ring8.yaml --op=broadcast --maxbytes=1K");
  cr_assert_eq(apart.st, DS_OK, "%s", apart.err.msg);
  cr_assert_eq(joined.st, DS_OK, "%s", joined.err.msg);
  cr_assert(strstr(joined.text, "broadcast"), "%s", joined.text);
  cr_assert_str_eq(joined.text, apart.text);
  free(apart.text);
  free(joined.text);
  ds_test_collective_usage_error("--topo tests/data/ring8.yaml --op=allreduce --op broadcast",
                                 "option --op given twice");
  ds_test_collective_usage_error("--topo tests/data/ring8.yaml --help=1",
                                 "option --help takes no value");
  ds_test_collective_usage_error("--topo tests/data/ring8.yaml --colour=red",
                                 "unknown option \"--colour=red\" (see ddpsim collective --help)");
}

/* A refusal prints nothing on stdout, in every format: the table is
 * printed whole once every size ran (a new user's review: the CSV header,
 * then the error, exit 2, left a well-formed empty CSV for a script). The
 * hierarchical all-reduce of 3 ranks on two nodes of 2 (2 + 1) is refused
 * when its collective is built, after the options were read. */
Test(collbench, a_refusal_prints_no_header_or_row_in_any_format) {
  const char *formats[] = {"csv", "json", "text"};
  for (size_t i = 0; i < 3; i++) {
    char args[256];
    snprintf(args, sizeof args, "collective --topo tests/data/twonode-2x2.yaml -g 3 "
             "--algo hierarchical -b 1K -e 4K --format %s", formats[i]);
    /* and says what to do (a new user's review: it named no way out) */
    ds_test_ddpsim_refuses(args, "needs the same number of ranks on every node, but node 0 "
                           "has 2 and node 1 has 1 (give a multiple of 2 ranks, --world-size "
                           "or collective's -g, or another --algo)");
  }
  /* a plot that fails after every row ran: exit 1, no table either */
  struct ds_test_result r =
      ds_test_run("DDPSIM_GNUPLOT=/bin/false", ds_test_ddpsim(),
                  "collective --topo tests/data/tiny-topo.yaml -e 64 --plot "
                  "/tmp/ddpsim-collbench-refusal.svg");
  cr_assert_eq(r.status, 1, "status %d, stderr %s", r.status, r.err);
  cr_assert(strstr(r.err, "/bin/false failed"), "%s", r.err);
  cr_assert_str_eq(r.out, "", "printed: %s", r.out);
  ds_test_release(&r);
}

/* --ring-chunks pipelines the plain algorithms' steps. Under NCCL's
 * protocols NCCL pipelines by its own chunks and slices, which the model
 * derives, so more pieces would pipeline twice (a new user's review:
 * --topo 4gpu --algo auto -b 1M took 60.37 us, 50.88 with --ring-chunks
 * 4): refused, as it is where nothing has ring steps to cut. Where --algo
 * auto has no NCCL model (TestGPU) it runs the plain ring, which the chunks
 * cut as --algo ring's. --nccl-extra adds to NCCL's model: refused with the
 * plain algorithm. */
Test(collbench, ring_chunks_and_nccl_extra_only_where_they_mean_something) {
  const char *refused[][2] = {
      {"--algo auto --ring-chunks 4", "NCCL's model runs this allreduce (protocol auto)"},
      {"--algo ring --proto LL --ring-chunks 2", "NCCL's model runs this allreduce (protocol LL)"},
      {"--algo tree --proto Simple --ring-chunks 2", "pipelines the plain algorithms only"},
      {"--op broadcast --algo auto --ring-chunks 2", "NCCL's model runs this broadcast"},
      {"--op allgather --proto LL128 --ring-chunks 2", "NCCL's model runs this allgather"},
      {"--op alltoall --ring-chunks 2", "alltoall p2p has no ring step"},
      {"--op gather --ring-chunks 2", "gather p2p has no ring step"},
      {"--algo direct --ring-chunks 2", "allreduce direct has no ring step"},
      {"--algo ring --nccl-extra measured", "--proto none runs allreduce ring as the plain"},
      {"--op broadcast --nccl-extra measured", "--proto none runs broadcast ring as the plain"},
      {"--op scatter --nccl-extra measured", "which does not run scatter p2p"},
      {"--algo hierarchical --nccl-extra measured", "which does not run allreduce hierarchical"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml -b 1M -e 1M %s", refused[i][0]);
    struct ds_test_output o = ds_test_collective_run(args);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", args, o.st);
    cr_assert(strstr(o.err.msg, refused[i][1]), "%s: \"%s\"", args, o.err.msg);
    free(o.text);
  }
  const char *accepted[] = {"--algo ring --ring-chunks 4", "--op broadcast --ring-chunks 4",
                            "--op reducescatter --ring-chunks 4", "--algo tree --ring-chunks 4",
                            "--algo hierarchical --ring-chunks 2", "--algo ring --ring-chunks 1",
                            "--algo auto --ring-chunks 1", "--proto LL --nccl-extra none",
                            "--algo auto --nccl-extra measured",
                            /* none is what the plain algorithms have (docs/collectives.md's
                             * loop over --proto none LL LL128 Simple) */
                            "--algo ring --nccl-extra none", "--op scatter --nccl-extra none",
                            "--algo tree --proto none --nccl-extra none"};
  for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo topologies/dgx-a100.yaml -b 1M -e 1M %s", accepted[i]);
    struct ds_test_output o = ds_test_collective_ok(args);
    free(o.text);
  }
  /* TestGPU: auto falls back to the plain ring, which the chunks cut */
  struct ds_test_output a = ds_test_collective_run(
      "--topo tests/data/tiny-topo.yaml -b 1M -e 1M --algo auto "
      "--ring-chunks 4 --format csv");
  struct ds_test_output r = ds_test_collective_run(
      "--topo tests/data/tiny-topo.yaml -b 1M -e 1M --algo ring "
      "--ring-chunks 4 --format csv");
  struct ds_test_output r1 = ds_test_collective_run(
      "--topo tests/data/tiny-topo.yaml -b 1M -e 1M --algo ring "
      "--format csv");
  cr_assert_eq(a.st + r.st + r1.st, DS_OK, "%s %s", a.err.msg, r.err.msg);
  cr_assert_str_eq(a.text, r.text);
  cr_assert_str_neq(r.text, r1.text);
  free(a.text);
  free(r.text);
  free(r1.text);
}

/* An unknown --op is said to be unknown, with the operations and the
 * nearest of them (a new user's review: "allreduc" was "not simulated by
 * this version", as if a real operation); send, a real one that the
 * command does not time alone, points to sendrecv. */
Test(collbench, an_unknown_op_is_named_with_the_nearest_known_one) {
  const char *cases[][2] = {
      {"allreduc", "unknown operation \"allreduc\" (did you mean allreduce?); the "
                   "operations: allreduce, broadcast, reduce, allgather, reducescatter, "
                   "gather, scatter, alltoall, sendrecv"},
      {"all_gather", "(did you mean allgather?)"},
      {"reduce-scatter", "(did you mean reducescatter?)"},
      {"ALLTOALL", "(did you mean alltoall?)"},
      {"bcast", "unknown operation \"bcast\"; the operations"},
      {"send", "send is one side of a point-to-point pair"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[128];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml --op %s", cases[i][0]);
    struct ds_test_output o = ds_test_collective_run(args);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", args, o.st);
    cr_assert(strstr(o.err.msg, cases[i][1]), "%s: \"%s\"", args, o.err.msg);
    free(o.text);
  }
}

/* -g's values agree with its --help ("2 or more"): 0 and 1048577 are out
 * of the range the message gives, from 2 (it said "from 1", while 1 was
 * refused later as one rank); 1 gets the one-rank reason, under either
 * spelling, before the topology is read. */
Test(collbench, ranks_from_2_as_the_help_says) {
  struct ds_test_output help = ds_test_collective_ok("--help");
  cr_assert(strstr(help.text, "ranks, on the first N GPUs, 2 or more"), "%s", help.text);
  free(help.text);
  const char *out_of_range[] = {"-g 0", "-g -3", "--ranks 1048577", "-g x"};
  for (size_t i = 0; i < sizeof out_of_range / sizeof *out_of_range; i++) {
    char args[128];
    snprintf(args, sizeof args, "--topo tests/data/ring8.yaml %s", out_of_range[i]);
    struct ds_test_output o = ds_test_collective_run(args);
    cr_assert_eq(o.st, DS_EUSAGE, "%s: status %d", args, o.st);
    cr_assert(strstr(o.err.msg, "expected an integer from 2 to 1048576"), "%s: \"%s\"", args,
              o.err.msg);
    free(o.text);
  }
  struct ds_test_output o = ds_test_collective_run("--topo no-such-topology -g 1");
  cr_assert_eq(o.st, DS_EUSAGE, "status %d", o.st);
  cr_assert(strstr(o.err.msg, "option -g: one rank, but a collective needs two or more ("),
            "\"%s\"", o.err.msg);
  cr_assert(strstr(o.err.msg, "give -g 2 or more"), "\"%s\"", o.err.msg);
  free(o.text);
  o = ds_test_collective_run("--topo tests/data/ring8.yaml --ranks 01");
  cr_assert_eq(o.st, DS_EUSAGE, "status %d", o.st);
  cr_assert(strstr(o.err.msg, "option --ranks: one rank") && strstr(o.err.msg, "give --ranks 2"),
            "\"%s\"", o.err.msg);
  free(o.text);
}
