/*
 * Option values shared by every command's parser (see cli.h). Integers go
 * through strtoll with errno checked, so "99999999999999999999" is out of
 * range rather than LLONG_MAX.
 */
#include "base/cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

ds_status ds_cli_bad_value(struct ds_err *err, const char *flag, const char *what,
                           const char *got) {
  return ds_err_set(err, DS_EUSAGE, "option %s: expected %s, got \"%s\"", flag, what, got);
}

ds_status ds_cli_refuse_stdin(struct ds_err *err, const char *name, const char *value,
                              const char *why, const char *give) {
  if (strcmp(value, "-") != 0) return DS_OK;
  return ds_err_set(err, DS_EUSAGE, "%s -: standard input is not read (%s); give %s", name,
                    why, give);
}

const struct ds_cli_option *ds_cli_option_find(const struct ds_cli_option *options,
                                               const char *flag) {
  for (const struct ds_cli_option *o = options; o->flag; o++)
    if (strcmp(flag, o->flag) == 0) return o;
  return NULL;
}

const char *ds_cli_canonical(const struct ds_cli_option *options, const char *flag) {
  const struct ds_cli_option *o = ds_cli_option_find(options, flag);
  return o && o->alias_of ? o->alias_of : flag;
}

int ds_cli_is_help(const char *flag) {
  return strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0;
}

/* The repeat error: first and again are the spellings, one option. */
static ds_status given_twice(struct ds_err *err, const struct ds_cli_option *options,
                             const char *first, const char *again) {
  if (strcmp(first, again) == 0)
    return ds_err_set(err, DS_EUSAGE, "option %s given twice", again);
  return ds_err_set(err, DS_EUSAGE, "option %s given twice (as %s and %s)",
                    ds_cli_canonical(options, again), first, again);
}

static ds_status takes_no_value(struct ds_err *err, const char *flag) {
  return ds_err_set(err, DS_EUSAGE, "option %s takes no value", flag);
}

/* An empty value is a slip of the shell (an unset variable), never a name
 * or a number: ddpsim's own wording (sim/cli/options.c apply), said before
 * a later lookup fails on it or, for an output, after the work. */
static ds_status empty_value(struct ds_err *err, const char *flag) {
  return ds_err_set(err, DS_EUSAGE, "option %s: expected a value, got an empty string", flag);
}

/* Optimal string alignment distance of a and b (lengths below 64), case
 * ignored: edits as ds_cli_closest counts them. */
static size_t typo_distance(const char *a, size_t na, const char *b, size_t nb) {
  size_t d[64][64];
  for (size_t i = 0; i <= na; i++) d[i][0] = i;
  for (size_t j = 0; j <= nb; j++) d[0][j] = j;
  for (size_t i = 1; i <= na; i++)
    for (size_t j = 1; j <= nb; j++) {
      size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
      size_t best = d[i - 1][j - 1] + cost;
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[na][nb];
}

const char *ds_cli_closest(const char *word, const char *const names[]) {
  size_t nw = strlen(word);
  if (nw == 0 || nw >= 64) return NULL;
  size_t limit = nw <= 4 ? 1 : nw / 3;
  const char *best = NULL;
  size_t best_d = limit + 1;
  for (size_t k = 0; names[k] != NULL; k++) {
    size_t nn = strlen(names[k]);
    /* the distance is at least the lengths' difference: a name that far
     * off cannot win, and its table need not be filled (the fuzz build's
     * command-line reader spent 90 % of its time here) */
    if (nn >= 64 || (nn > nw ? nn - nw : nw - nn) >= best_d) continue;
    size_t dist = typo_distance(word, nw, names[k], nn);
    if (dist < best_d) {
      best_d = dist;
      best = names[k];
    }
  }
  return best;
}

/* Whether name holds word, case ignored: at its start only (begins) or
 * anywhere. */
static int holds(const char *name, const char *word, int begins) {
  size_t n = strlen(word);
  for (const char *p = name; *p; p++) {
    if (strncasecmp(p, word, n) == 0) return 1;
    if (begins) return 0;
  }
  return 0;
}

/* names that word is held in (holds) joined into buf as "A, B or C",
 * DS_CLI_SUGGEST_MAX at most (the last then "N more"); 0 when none or
 * when buf is too small. */
static int join_held(const char *word, const char *const names[], int begins, char *buf,
                     size_t cap) {
  int found = 0;
  for (int i = 0; names[i]; i++) found += holds(names[i], word, begins);
  int shown = found > DS_CLI_SUGGEST_MAX ? DS_CLI_SUGGEST_MAX - 1 : found;
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0, k = 0; names[i] && k < shown; i++) {
    if (!holds(names[i], word, begins)) continue;
    k++;
    const char *sep = k == 1 ? "" : k == found ? " or " : ", ";
    int w = snprintf(buf + used, cap - used, "%s%s", sep, names[i]);
    if (w < 0 || (size_t)w >= cap - used) {
      buf[0] = '\0';
      return 0;
    }
    used += (size_t)w;
  }
  if (found > shown) {
    int w = snprintf(buf + used, cap - used, " or %d more", found - shown);
    if (w < 0 || (size_t)w >= cap - used) {
      buf[0] = '\0';
      return 0;
    }
  }
  return found;
}

enum ds_cli_suggest_kind ds_cli_suggest(const char *word, const char *const names[], char *buf,
                                        size_t cap) {
  if (cap == 0) return DS_CLI_SUGGEST_NONE;
  buf[0] = '\0';
  if (!word[0]) return DS_CLI_SUGGEST_NONE;
  if (join_held(word, names, 1, buf, cap)) return DS_CLI_SUGGEST_BEGINS;
  if (join_held(word, names, 0, buf, cap)) return DS_CLI_SUGGEST_CONTAINS;
  const char *typo = ds_cli_closest(word, names);
  if (!typo || (size_t)snprintf(buf, cap, "%s", typo) >= cap) {
    buf[0] = '\0';
    return DS_CLI_SUGGEST_NONE;
  }
  return DS_CLI_SUGGEST_TYPO;
}

ds_status ds_cli_unknown_option(struct ds_err *err, const struct ds_cli_option *options,
                                const char *flag, const char *program) {
  /* the nearest flag of the table to what was typed before any '=' */
  const char *near = NULL;
  char typed[64];
  const char *eq = strchr(flag, '=');
  size_t n = eq ? (size_t)(eq - flag) : strlen(flag);
  if (options && flag[0] == '-' && n < sizeof typed) {
    const char *names[257];
    size_t k = 0;
    for (const struct ds_cli_option *o = options; o->flag && k < 256; o++)
      if (strncmp(o->flag, "--", 2) == 0) names[k++] = o->flag; /* no one-letter hints */
    names[k] = NULL;
    memcpy(typed, flag, n);
    typed[n] = '\0';
    near = ds_cli_closest(typed, names);
  }
  if (near)
    return ds_err_set(err, DS_EUSAGE, "unknown option \"%s\" (did you mean %s? see %s --help)",
                      flag, near, program);
  return ds_err_set(err, DS_EUSAGE, "unknown option \"%s\" (see %s --help)", flag, program);
}

ds_status ds_cli_once(struct ds_cli_seen *seen, const struct ds_cli_option *options,
                      const char *flag, struct ds_err *err) {
  const char *option = ds_cli_canonical(options, flag);
  for (int i = 0; i < seen->n; i++)
    if (strcmp(ds_cli_canonical(options, seen->flag[i]), option) == 0)
      return given_twice(err, options, seen->flag[i], flag);
  /* every table has fewer flags than this (DS_CLI_SEEN_MAX) */
  if (seen->n >= DS_CLI_SEEN_MAX)
    return ds_err_set(err, DS_EINTERNAL, "option %s: more than %d options recorded; "
                      "raise DS_CLI_SEEN_MAX (base/cli.h)", flag, DS_CLI_SEEN_MAX);
  seen->value[seen->n] = NULL;
  seen->flag[seen->n++] = flag;
  return DS_OK;
}

/* The word ds_cli_split_values puts, by address, where it refused an
 * argument (its text only in a message that should never be). */
static char refused_word[] = "(an argument ddpsim refused)";

ds_status ds_cli_split_refused(const char *word) {
  return word == refused_word ? DS_EUSAGE : DS_OK;
}

ds_status ds_cli_split_values(const struct ds_cli_option *options, int argc, char **argv,
                              struct ds_cli_words *out, struct ds_err *err) {
  *out = (struct ds_cli_words){0};
  /* each word becomes at most two, and the array ends with NULL as argv */
  char **words = calloc(2 * (size_t)(argc > 0 ? argc : 0) + 1, sizeof *words);
  if (!words) return ds_err_set(err, DS_ENOMEM, "out of memory");
  int n = 0;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i], *eq = strchr(arg, '=');
    const struct ds_cli_option *o = ds_cli_option_find(options, arg), *joined = NULL;
    /* the first refusal's message; a later one only its word */
    struct ds_err *problem = out->problem.status == DS_OK ? &out->problem : NULL;
    if (i > 0 && !o && eq && strncmp(arg, "--", 2) == 0)
      for (const struct ds_cli_option *r = options; r->flag && !joined; r++)
        if (strncmp(r->flag, arg, (size_t)(eq - arg)) == 0 && r->flag[eq - arg] == '\0')
          joined = r;
    if (joined && !joined->takes_value) {
      takes_no_value(problem, joined->flag);
      words[n++] = refused_word;
      continue;
    }
    const char *value = joined ? eq + 1 : i > 0 && o && o->takes_value && i + 1 < argc
                                                   ? argv[i + 1] : NULL;
    if (value && !value[0]) {
      empty_value(problem, joined ? joined->flag : arg);
      words[n++] = refused_word;
      if (!joined) i++; /* the empty word after the flag goes with it */
      continue;
    }
    if (joined) {
      words[n++] = (char *)joined->flag;
      words[n++] = (char *)(eq + 1);
      continue;
    }
    words[n++] = argv[i];
    /* a flag's value is a word of its own, whatever it looks like */
    if (value) words[n++] = argv[++i];
  }
  out->argc = n;
  out->argv = words;
  return DS_OK;
}

void ds_cli_words_free(struct ds_cli_words *words) {
  free(words->argv);
  *words = (struct ds_cli_words){0};
}

ds_status ds_cli_parse_split(const struct ds_cli_option *options, int argc, char **argv,
                             ds_cli_parse_words parse, void *ctx, struct ds_err *err) {
  struct ds_cli_words words;
  DS_CHECK(ds_cli_split_values(options, argc, argv, &words, err));
  int refused = words.problem.status != DS_OK;
  /* parse returns at the refused word with err as set here, or earlier
   * with an earlier word's error in its place: the first bad argument */
  if (refused && err) *err = words.problem;
  ds_status st = parse(words.argc, words.argv, ctx, err);
  if (st == DS_OK && refused) { /* a parser that stopped short of it (--help) */
    if (err) *err = words.problem;
    st = words.problem.status;
  }
  ds_cli_words_free(&words);
  return st;
}

ds_status ds_cli_walk_flags(const struct ds_cli_option *options, const char *program, int argc,
                            char **argv, ds_cli_on_flag on_flag, void *ctx, int *help,
                            struct ds_err *err) {
  struct ds_cli_walk w = {.program = program, .options = options};
  for (int i = 1; i < argc; i++) {
    char flag[64];
    const char *value;
    DS_CHECK(ds_cli_next_option(&w, argc, argv, &i, flag, sizeof flag, &value, err));
    if (ds_cli_is_help(flag)) {
      *help = 1;
      return DS_OK;
    }
    if (value && !value[0]) return empty_value(err, flag);
    DS_CHECK(on_flag(ctx, ds_cli_option_find(options, flag)->flag, value, err));
  }
  return DS_OK;
}

ds_status ds_cli_unhandled(struct ds_err *err, const char *flag) {
  return ds_err_set(err, DS_EINTERNAL, "option %s: in the option table but not handled", flag);
}

ds_status ds_cli_parse_int(const char *flag, const char *v, int64_t lo, int64_t hi,
                           int64_t *out, struct ds_err *err) {
  char *end;
  errno = 0;
  /* digits with an optional '-', as ds_units_parse_number reads numbers:
   * strtoll alone would take leading blanks and a '+' */
  int plain = isdigit((unsigned char)v[0]) || (v[0] == '-' && isdigit((unsigned char)v[1]));
  long long x = strtoll(v, &end, 10);
  if (!plain || errno || end == v || *end != '\0' || x < lo || x > hi) {
    char what[96];
    snprintf(what, sizeof what, "an integer from %" PRId64 " to %" PRId64, lo, hi);
    return ds_cli_bad_value(err, flag, what, v);
  }
  *out = x;
  return DS_OK;
}

/* The rest of a walk's step once opt is known, alike for argv as typed
 * (ds_cli_next_option) and as split (ds_cli_next_word): its value (*value
 * from "--flag=value", else the next word) and the repeat check. */
static ds_status take_option(struct ds_cli_walk *w, const struct ds_cli_option *opt, int argc,
                             char **argv, int *i, const char **value, struct ds_err *err) {
  if (opt->takes_value && !*value) {
    if (*i + 1 >= argc) return ds_err_set(err, DS_EUSAGE, "option %s needs a value", opt->flag);
    *value = argv[++*i];
  } else if (!opt->takes_value && *value) {
    return takes_no_value(err, opt->flag);
  }
  /* help twice is still help; the table's string, not the caller's
   * buffer, is what seen keeps */
  int repeatable = 0;
  for (const char *const *r = w->repeatable; r && *r; r++)
    repeatable |= strcmp(ds_cli_canonical(w->options, opt->flag),
                         ds_cli_canonical(w->options, *r)) == 0;
  if (ds_cli_is_help(opt->flag) || repeatable) return DS_OK;
  DS_CHECK(ds_cli_once(&w->seen, w->options, opt->flag, err));
  w->seen.value[w->seen.n - 1] = *value;
  return DS_OK;
}

ds_status ds_cli_next_option(struct ds_cli_walk *w, int argc, char **argv, int *i, char *flag,
                             size_t cap, const char **value, struct ds_err *err) {
  const char *arg = argv[*i], *eq = strchr(arg, '=');
  *value = NULL;
  if (strncmp(arg, "--", 2) == 0 && eq) {
    snprintf(flag, cap, "%.*s", (int)(eq - arg), arg);
    *value = eq + 1;
  } else {
    snprintf(flag, cap, "%s", arg);
  }
  const struct ds_cli_option *opt = ds_cli_option_find(w->options, flag);
  if (!opt) return ds_cli_unknown_option(err, w->options, arg, w->program);
  return take_option(w, opt, argc, argv, i, value, err);
}

/* Whether a walk with these positionals reads word as one. */
static int is_positional(enum ds_cli_positionals positionals, const char *word) {
  switch (positionals) {
  case DS_CLI_POSITIONALS_PLAIN: return word[0] != '-';
  case DS_CLI_POSITIONALS_PLAIN_OR_DASH: return word[0] != '-' || strcmp(word, "-") == 0;
  default: return 0;
  }
}

ds_status ds_cli_next_word(struct ds_cli_walk *w, int argc, char **argv, int *i,
                           const char **flag, const char **value, struct ds_err *err) {
  const char *word = argv[*i];
  *flag = NULL;
  *value = NULL;
  DS_CHECK(ds_cli_split_refused(word)); /* before anything reads it as a word */
  if (is_positional(w->positionals, word)) {
    *value = word;
    return DS_OK;
  }
  const struct ds_cli_option *opt = ds_cli_option_find(w->options, word);
  if (!opt) return ds_cli_unknown_option(err, w->options, word, w->program);
  *flag = opt->flag;
  return take_option(w, opt, argc, argv, i, value, err);
}
