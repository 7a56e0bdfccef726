/*
 * The hand-walked subcommands (analyze, buckets, collective, topo, topo
 * import: base/cli.h ds_cli_parse_split) report the first bad argument,
 * left to right, as ddpsim's own flags do (`ddpsim --bogus --batch=`:
 * "--bogus"): an unknown flag or a word too many before a "--flag=" with
 * nothing after '=' (or "--flag ''", or a value given to a flag that takes
 * none) is the one named, and the refused split is named when it comes
 * first. No file is read (check_args; none of these files exists).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "analysis/analyze.h"
#include "base/cli.h"
#include "sim/cmd/bucketcmd.h"
#include "sim/cmd/collbench.h"
#include "sim/cmd/topocmd.h"

typedef ds_status (*check_fn)(int argc, char **argv, struct ds_err *err);

/* check(argv) refuses it with a message holding want. */
static void refuses(check_fn check, char **argv, const char *want) {
  int argc = 0;
  while (argv[argc]) argc++;
  struct ds_err err = {0};
  cr_assert_eq(check(argc, argv, &err), DS_EUSAGE, "%s %s: %s", argv[0], argv[1], err.msg);
  cr_assert(strstr(err.msg, want), "%s %s ...: got \"%s\", want \"%s\"", argv[0], argv[1],
            err.msg, want);
}

Test(cli_split, the_first_bad_argument_is_reported) {
  char *analyze[] = {"analyze", "--bogus", "--per-op=1", NULL};
  refuses(ds_analyze_check_args, analyze, "unknown option \"--bogus\"");
  char *analyze3[] = {"analyze", "a.csv", "b.csv", "c.csv", "--iter=", NULL};
  refuses(ds_analyze_check_args, analyze3, "unexpected argument \"c.csv\"");
  char *buckets[] = {"buckets", "--bogus", "--model=", NULL};
  refuses(ds_bucketcmd_check_args, buckets, "unknown option \"--bogus\"");
  char *collective[] = {"collective", "--bogus", "--op", "", NULL};
  refuses(ds_collbench_check_args, collective, "unknown option \"--bogus\"");
  char *topo[] = {"topo", "a.yaml", "b.yaml", "--from=", NULL};
  refuses(ds_topocmd_check_args, topo, "one topology, got \"a.yaml\" and \"b.yaml\"");
  char *import[] = {"topo", "import", "--bogus", "--nodes=", NULL};
  refuses(ds_topocmd_check_args, import, "unknown option \"--bogus\"");
}

/* The refused split first: its own message, before a later bad word's. */
Test(cli_split, a_refused_split_first_is_reported_first) {
  char *analyze[] = {"analyze", "--per-op=1", "--bogus", NULL};
  refuses(ds_analyze_check_args, analyze, "option --per-op takes no value");
  char *collective[] = {"collective", "--op=", "--bogus", NULL};
  refuses(ds_collbench_check_args, collective, "option --op: expected a value, got an empty");
  char *help[] = {"collective", "--help", "--op=", NULL};
  refuses(ds_collbench_check_args, help, "option --op: expected a value, got an empty");
  char *import[] = {"topo", "import", "--nodes", "", "--nodes", "0", NULL};
  refuses(ds_topocmd_check_args, import, "option --nodes: expected a value, got an empty");
}

/* ds_cli_closest: a typo's nearest name (a missing, extra, changed or
 * swapped letter; case ignored), none when nothing is near: at most 1 edit
 * up to 4 letters, a third of the word's length above. */
Test(cli_split, the_closest_name_is_a_typos_and_only_a_typos) {
  const char *const names[] = {"ring", "tree", "allreduce", "allgather", "reducescatter",
                               NULL};
  cr_assert_str_eq(ds_cli_closest("allreduc", names), "allreduce");   /* 1 missing */
  cr_assert_str_eq(ds_cli_closest("allreudce", names), "allreduce");  /* 1 swap */
  cr_assert_str_eq(ds_cli_closest("AllReduce", names), "allreduce");  /* case */
  cr_assert_str_eq(ds_cli_closest("all_gather", names), "allgather"); /* 1 extra */
  cr_assert_str_eq(ds_cli_closest("treee", names), "tree");           /* 1 of 5 letters */
  cr_assert_str_eq(ds_cli_closest("rign", names), "ring");            /* 1 swap of 4 */
  cr_assert_null(ds_cli_closest("rang", (const char *const[]){"tree", NULL})); /* 3 edits */
  cr_assert_null(ds_cli_closest("trie", (const char *const[]){"ring", NULL}));
  cr_assert_null(ds_cli_closest("bcast", names));
  cr_assert_null(ds_cli_closest("", names));
  cr_assert_str_eq(ds_cli_closest("reduce_scatter", names), "reducescatter");
}

/* ds_cli_suggest: the names a word begins, else those holding it, else a
 * typo's nearest; joined "A, B or C", DS_CLI_SUGGEST_MAX at most. */
Test(cli_split, a_suggestion_begins_then_holds_then_corrects) {
  const char *const topos[] = {"2node-ib",  "4gpu",    "cluster-512x8-h100", "cluster-64x8-h100",
                               "dgx-a100", "dgx-h100", "dgx1-v100",          "pcie-8gpu",
                               NULL};
  char buf[128];
  cr_assert_eq(ds_cli_suggest("DGX", topos, buf, sizeof buf), DS_CLI_SUGGEST_BEGINS);
  cr_assert_str_eq(buf, "dgx-a100, dgx-h100 or dgx1-v100");
  cr_assert_eq(ds_cli_suggest("H100", topos, buf, sizeof buf), DS_CLI_SUGGEST_CONTAINS);
  cr_assert_str_eq(buf, "cluster-512x8-h100, cluster-64x8-h100 or dgx-h100");
  cr_assert_eq(ds_cli_suggest("dgx-a10", (const char *const[]){"dgx-a100", NULL}, buf,
                              sizeof buf),
               DS_CLI_SUGGEST_BEGINS);
  cr_assert_eq(ds_cli_suggest("dgx-h10o", topos, buf, sizeof buf), DS_CLI_SUGGEST_TYPO);
  cr_assert_str_eq(buf, "dgx-h100");
  cr_assert_eq(ds_cli_suggest("xyzzy", topos, buf, sizeof buf), DS_CLI_SUGGEST_NONE);
  cr_assert_str_eq(buf, "");
  cr_assert_eq(ds_cli_suggest("", topos, buf, sizeof buf), DS_CLI_SUGGEST_NONE);
  /* 7 names hold "-": 5 shown, then the rest counted */
  cr_assert_eq(ds_cli_suggest("-", topos, buf, sizeof buf), DS_CLI_SUGGEST_CONTAINS);
  cr_assert_str_eq(buf, "2node-ib, cluster-512x8-h100, cluster-64x8-h100, dgx-a100, dgx-h100 "
                        "or 2 more");
  /* no room: nothing rather than a cut name */
  char small[12];
  cr_assert_eq(ds_cli_suggest("dgx", topos, small, sizeof small), DS_CLI_SUGGEST_NONE);
  cr_assert_str_eq(small, "");
}

/* Which words each subcommand reads as positionals (base/cli.h
 * ds_cli_next_word): collective takes none, and names a plain word as an
 * unknown option, or as an argument too many when it is the last word;
 * buckets takes none; topo's, topo import's and analyze's are the words
 * not starting with '-' and "-" alone, which topo and topo import refuse as
 * standard input (tests/test_cli_stdin.c) and analyze reads. */
Test(cli_split, each_subcommand_reads_its_own_positionals) {
  char *mid[] = {"collective", "dgx-a100", "--op", "allreduce", NULL};
  refuses(ds_collbench_check_args, mid, "unknown option \"dgx-a100\" (see ddpsim collective "
          "--help)");
  char *last[] = {"collective", "--op", "allreduce", "dgx-a100", NULL};
  refuses(ds_collbench_check_args, last, "unexpected argument \"dgx-a100\" (see --help)");
  char *buckets[] = {"buckets", "resnet50", NULL};
  refuses(ds_bucketcmd_check_args, buckets, "unknown option \"resnet50\" (see ddpsim buckets "
          "--help)");
  char *topo[] = {"topo", "-", NULL};
  refuses(ds_topocmd_check_args, topo, "argument TOPOLOGY -: standard input is not read");
  char *import[] = {"topo", "import", "a.xml", "-", NULL};
  refuses(ds_topocmd_check_args, import, "argument FILE -: standard input is not read");
  char *analyze[] = {"analyze", "-", "-", "-", NULL};
  refuses(ds_analyze_check_args, analyze, "unexpected argument \"-\": analyze takes one trace "
          "or two");
}
