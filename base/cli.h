/*
 * What the option parsers of every command share (sim/cli/options.c,
 * base/values.c, sim/cmd/collbench.c, sim/cmd/bucketcmd.c,
 * sim/cmd/topocmd.c, sim/cmd/importcmd.c, analysis/analyze.c,
 * real/options.c, real/collective_args.c, real/calibrate_args.c): the
 * table of the flags a command knows, the usage errors for an unknown
 * flag, a missing or bad value, one wording everywhere, integers within
 * bounds, and the walk over argv ("--flag value" or "--flag=value", a flag
 * given twice refused, under either of its spellings; ds_cli_split_values
 * and ds_cli_next_word do the same for a subcommand with positionals).
 * Nothing here knows a flag; errors are DS_EUSAGE naming the flag and what
 * was expected.
 */
#ifndef DS_CLI_H
#define DS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A file argument that standard input cannot stand in for (a YAML file
 * found by path or name, one read again by path; base/csvread.h says which
 * inputs read it): value "-" sets "NAME -: standard input is not read
 * (WHY); give GIVE" (name "option --topo" or "argument TOPOLOGY")
 * and returns DS_EUSAGE; any other value, DS_OK. */
ds_status ds_cli_refuse_stdin(struct ds_err *err, const char *name, const char *value,
                              const char *why, const char *give);

/* Sets "option FLAG: expected WHAT, got \"GOT\"" (DS_EUSAGE) and returns
 * DS_EUSAGE. */
ds_status ds_cli_bad_value(struct ds_err *err, const char *flag, const char *what,
                           const char *got);

/* One flag a command knows and whether a word follows it as its value.
 * Each parser lists every flag it accepts once, in a table ending with
 * {NULL}: the table alone says which flags exist (the parser refuses the
 * others before its dispatch) and which take a value (the "needs a value"
 * error comes from it), and tests/options_help.c checks each table against its
 * command's --help and its dispatch, so that the three cannot drift. */
struct ds_cli_option {
  const char *flag;
  int takes_value;
  /* The row's other spelling when it is an alias ({"-b", 1, "--minbytes"}),
   * NULL for a flag of its own: the two are one option, so giving both is
   * a repeat (tests/options_help.c checks that the row named exists, is no
   * alias itself and agrees on takes_value). */
  const char *alias_of;
};

/* The row of options (ending with {NULL}) naming flag, or NULL. */
const struct ds_cli_option *ds_cli_option_find(const struct ds_cli_option *options,
                                               const char *flag);

/* The spelling that names flag's option: alias_of for an alias, else flag
 * itself (also for a flag not in options). */
const char *ds_cli_canonical(const struct ds_cli_option *options, const char *flag);

/* The name of names (NULL-terminated) nearest to word, when it is near
 * enough to be what a typo meant: the fewest insertions, deletions,
 * substitutions and swaps of neighbouring letters (case ignored), at most
 * 1 for a word of up to 4 letters and a third of its length for a longer
 * one; the first of a tie. NULL when none is that near. */
const char *ds_cli_closest(const char *word, const char *const names[]);

/* What word may have meant among names (NULL-terminated), into buf (cap
 * bytes) joined as "A, B or C": the names word begins, case ignored
 * ("dgx": "dgx-a100, dgx-h100 or dgx1-v100"); else those that contain it
 * ("h100": "cluster-64x8-h100, dgx-h100 or ..."); else the one a typo of it
 * meant (ds_cli_closest). Past DS_CLI_SUGGEST_MAX names the last is
 * "N more". Returns which matched: DS_CLI_SUGGEST_BEGINS, _CONTAINS,
 * _TYPO, or DS_CLI_SUGGEST_NONE with buf "" (also when buf is too small). */
#define DS_CLI_SUGGEST_MAX 6
enum ds_cli_suggest_kind {
  DS_CLI_SUGGEST_NONE,
  DS_CLI_SUGGEST_BEGINS,
  DS_CLI_SUGGEST_CONTAINS,
  DS_CLI_SUGGEST_TYPO
};
enum ds_cli_suggest_kind ds_cli_suggest(const char *word, const char *const names[], char *buf,
                                        size_t cap);

/* Sets "unknown option \"FLAG\" (see PROGRAM --help)" (DS_EUSAGE) and
 * returns DS_EUSAGE; where a long flag of options (may be NULL) is near
 * enough to FLAG (before any '=') to be what a typo meant (ds_cli_closest),
 * "(did you mean --NEAR? see PROGRAM --help)". */
ds_status ds_cli_unknown_option(struct ds_err *err, const struct ds_cli_option *options,
                                const char *flag, const char *program);

/* Most flags one record holds: more than any command's table (ddpsim's,
 * the largest, checks it with a _Static_assert in sim/cli/options.c). */
#define DS_CLI_SEEN_MAX 96

/* The flags a walk (struct ds_cli_walk) has met so far, so that a flag
 * given twice is refused rather than silently keeping its last value;
 * ds_cli_next_option and ds_cli_next_word also keep each flag's value
 * (NULL for a switch, and in ds_cli_once's records). Zero it before the
 * walk. */
struct ds_cli_seen {
  const char *flag[DS_CLI_SEEN_MAX];
  const char *value[DS_CLI_SEEN_MAX];
  int n;
};

/* Records flag in seen, or returns DS_EUSAGE when its option (options:
 * the command's table, aliases one option) is there already: "option FLAG
 * given twice" when it was spelt the same, "option CANONICAL given twice
 * (as FIRST and FLAG)" when not (-b 8 --minbytes 16), as in
 * ds_cli_next_option. DS_EINTERNAL when seen is full (a table larger than
 * DS_CLI_SEEN_MAX: a bug, not the user's). */
ds_status ds_cli_once(struct ds_cli_seen *seen, const struct ds_cli_option *options,
                      const char *flag, struct ds_err *err);

/* argv (argc words, argv[0] the command) as the hand-written parsers read
 * it: each "--flag=value" of a flag options knows split into "--flag"
 * (the table's string) and "value", as ds_cli_next_option reads it, so
 * that every parser takes both forms. The word after a flag that takes a
 * value is its value and left as it is (--reference --a=b.csv); an unknown
 * "--x=y" is left whole for the parser's unknown-option error. An argument
 * it refuses becomes one word that ds_cli_split_refused knows, and the
 * first refusal's DS_EUSAGE error goes in problem (status DS_OK: none):
 * "option FLAG takes no value" for "--flag=value" of a flag that takes
 * none, "option FLAG: expected a value, got an empty string" for "--flag="
 * or "--flag ''". The words point into argv and the table; free the array
 * with ds_cli_words_free. DS_ENOMEM, or DS_OK. */
struct ds_cli_words {
  int argc;
  char **argv;
  struct ds_err problem;
};
ds_status ds_cli_split_values(const struct ds_cli_option *options, int argc, char **argv,
                              struct ds_cli_words *out, struct ds_err *err);
void ds_cli_words_free(struct ds_cli_words *words);
/* DS_EUSAGE for the word ds_cli_split_values put where it refused an
 * argument, else DS_OK: ds_cli_next_word checks each word it reads as a
 * flag or a positional, so that an earlier bad word is reported first. */
ds_status ds_cli_split_refused(const char *word);

/* A hand-written parser of words (ctx: its options): argv as
 * ds_cli_split_values leaves it. It reads each word with ds_cli_next_word,
 * which returns at the refused word with err as it was handed
 * (ds_cli_parse_split put the refusal's message there). */
typedef ds_status (*ds_cli_parse_words)(int argc, char **argv, void *ctx, struct ds_err *err);

/* argv split by ds_cli_split_values, then parse on the words (every
 * hand-walked subcommand: analyze, buckets, collective, topo, topo import):
 * the error of the first bad argument, left to right, as ddpsim's own
 * flags report it (a refused split, or parse's own). */
ds_status ds_cli_parse_split(const struct ds_cli_option *options, int argc, char **argv,
                             ds_cli_parse_words parse, void *ctx, struct ds_err *err);

/* What a command whose every word is a flag or a flag's value (ddpreal
 * collective, ddpreal calibrate) does with one: value is NULL for a flag
 * that takes none. */
typedef ds_status (*ds_cli_on_flag)(void *ctx, const char *flag, const char *value,
                                    struct ds_err *err);

/* Walks argv[1..argc) of such a command: an unknown word is
 * ds_cli_unknown_option's error, -h or --help sets *help and ends the walk,
 * a flag given last without its value is "option FLAG needs a value", a
 * repeat ds_cli_once's; every other flag goes to on_flag. */
ds_status ds_cli_walk_flags(const struct ds_cli_option *options, const char *program, int argc,
                            char **argv, ds_cli_on_flag on_flag, void *ctx, int *help,
                            struct ds_err *err);

/* The error of a dispatch that met a flag of its table with no branch for
 * it: a bug, DS_EINTERNAL, which the tests of each table look for. */
ds_status ds_cli_unhandled(struct ds_err *err, const char *flag);

/* One integer from lo to hi, the whole of v (base 10). */
ds_status ds_cli_parse_int(const char *flag, const char *v, int64_t lo, int64_t hi,
                           int64_t *out, struct ds_err *err);

/* Which words a hand-walked subcommand reads as positionals rather than
 * flags (ds_cli_next_word; ds_cli_next_option reads every word as a flag). */
enum ds_cli_positionals {
  DS_CLI_POSITIONALS_NONE,         /* every word is a flag or its value (buckets) */
  DS_CLI_POSITIONALS_PLAIN,        /* a word not starting with '-' (topo, topo import) */
  DS_CLI_POSITIONALS_PLAIN_OR_DASH /* those and "-" alone (analyze's traces) */
};

/* A command's option walk: the flags it knows (its table), the flags
 * that may repeat (a NULL-terminated list, or NULL for none), its
 * positionals, and the flags seen so far (ds_cli_once's). Zero seen before
 * the walk. */
struct ds_cli_walk {
  const char *program; /* "ddpsim", "ddpsim topo": for "see PROGRAM --help" */
  const struct ds_cli_option *options;
  const char *const *repeatable;
  enum ds_cli_positionals positionals;
  struct ds_cli_seen seen;
};

/* Whether flag is -h or --help (given twice, still help: never recorded
 * in seen). */
int ds_cli_is_help(const char *flag);

/* Reads the option at argv[*i] into flag (cap bytes) and *value (NULL when
 * it takes none), moving *i past a separate value; DS_EUSAGE for an
 * unknown flag, a missing or unexpected value, or a flag given twice under
 * either spelling (a repeated flag is refused rather than silently keeping
 * its last value; the wording is ds_cli_once's). */
ds_status ds_cli_next_option(struct ds_cli_walk *w, int argc, char **argv, int *i, char *flag,
                             size_t cap, const char **value, struct ds_err *err);

/* The loop of every hand-walked subcommand, on the words ds_cli_parse_split
 * hands its parse ("--flag=value" already split): reads argv[*i] as a
 * positional (w->positionals says which words are), *flag NULL and the word
 * in *value, or as a flag of w->options, *flag its row's spelling and
 * *value its value (NULL when it takes none), *i moved past the value.
 * DS_EUSAGE, err as handed, for the word ds_cli_split_values refused (its
 * message is there already), and ds_cli_next_option's errors, in the same
 * words: an unknown flag, a flag given last without its value, a repeat. */
ds_status ds_cli_next_word(struct ds_cli_walk *w, int argc, char **argv, int *i,
                           const char **flag, const char **value, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_CLI_H */
