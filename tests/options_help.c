/*
 * See options_help.h. The help text is read the way a user reads it: a
 * flag is defined where it first appears on an option line (two spaces,
 * then the flag) or in a synopsis bracket, and the word after it is its
 * value's placeholder (FILE, N, text|csv|json) unless it is another flag,
 * a "|" between alternatives or a remark in parentheses. Prose mentions
 * ("rank --root and back") are never definitions, so they cannot mislead.
 */
#include "options_help.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS_MAX 64
#define WORD_CAP 64
#define DEFS_MAX 256

struct help_def {
  char flag[WORD_CAP];
  int metavar;     /* a placeholder follows it */
  int own;         /* on an option line or in the command's own synopsis */
};

struct help_defs {
  struct help_def d[DEFS_MAX];
  int n;
};

static const struct help_def *find_def(const struct help_defs *defs, const char *flag) {
  for (int i = 0; i < defs->n; i++)
    if (strcmp(defs->d[i].flag, flag) == 0) return &defs->d[i];
  return NULL;
}

static int is_flag(const char *w) {
  return w[0] == '-' && (w[1] == '-' || (w[1] >= 'a' && w[1] <= 'z') ||
                         (w[1] >= 'A' && w[1] <= 'Z'));
}

/* The flags of one definition (len characters of s, split at spaces), each
 * added the first time it appears. "-b, --minbytes SIZE": an alias
 * followed by a comma shares the placeholder of the flag after it. */
static void add_definition(struct help_defs *defs, const char *s, size_t len, int own) {
  char w[WORDS_MAX][WORD_CAP];
  int n = 0;
  for (size_t i = 0; i < len && n < WORDS_MAX;) {
    while (i < len && s[i] == ' ') i++;
    size_t start = i;
    while (i < len && s[i] != ' ') i++;
    if (i > start) snprintf(w[n++], WORD_CAP, "%.*s", (int)(i - start), s + start);
  }
  for (int k = 0; k < n; k++) {
    if (!is_flag(w[k])) continue;
    char flag[WORD_CAP];
    memcpy(flag, w[k], sizeof flag); /* both WORD_CAP, w[k] terminated */
    int j = k;
    while (j + 1 < n && w[j][strlen(w[j]) - 1] == ',' && is_flag(w[j + 1])) j++;
    flag[strcspn(flag, ",")] = '\0';
    if (find_def(defs, flag)) continue;
    cr_assert_lt(defs->n, DEFS_MAX);
    struct help_def *d = &defs->d[defs->n++];
    snprintf(d->flag, sizeof d->flag, "%s", flag);
    d->metavar = j + 1 < n && !strchr("-|(", w[j + 1][0]);
    d->own = own;
  }
}

/* Whether the len characters of line name a program ("ddpsim topo import
 * FILE..." on topo's second usage line): a synopsis of another command. */
static int names_a_program(const char *line, size_t len) {
  for (const char *p = line; (p = strstr(p, "ddp")) && p < line + len; p++)
    if (strncmp(p, "ddpsim ", 7) == 0 || strncmp(p, "ddpreal ", 8) == 0) return 1;
  return 0;
}

/* Every definition in help, in the order a reader meets them. The
 * command's own synopsis is its "usage:" line and the indented lines that
 * continue it (not an option line, naming no program). */
static void read_definitions(const char *help, struct help_defs *defs) {
  defs->n = 0;
  int in_usage = 0;
  for (const char *line = help; *line;) {
    size_t len = strcspn(line, "\n");
    if (strncmp(line, "usage:", 6) == 0) in_usage = 1;
    else if (len == 0 || line[0] != ' ' || line[strspn(line, " ")] == '-' ||
             names_a_program(line, len))
      in_usage = 0; /* a blank line, prose, an option line or another program's */
    if (in_usage) { /* its bare flags (ddpsim --topo TOPOLOGY), brackets blanked */
      char bare[512];
      size_t n = len < sizeof bare - 1 ? len : sizeof bare - 1;
      int depth = 0;
      for (size_t k = 0; k < n; k++) {
        depth += line[k] == '[';
        bare[k] = depth ? ' ' : line[k];
        depth -= line[k] == ']' && depth;
      }
      add_definition(defs, bare, n, 1);
    }
    if (len > 3 && strncmp(line, "  -", 3) == 0) {
      /* the head of an option line: its description starts after two spaces */
      const char *end = strstr(line + 2, "  ");
      size_t head = end && end < line + len ? (size_t)(end - line) : len;
      add_definition(defs, line + 2, head - 2, 1);
    }
    for (const char *b = line; (b = strstr(b, "[-")) && b < line + len; b++) {
      const char *close = memchr(b, ']', (size_t)(line + len - b));
      cr_assert(close, "help: \"[\" without \"]\": %.*s", (int)len, line);
      add_definition(defs, b + 1, (size_t)(close - b - 1), in_usage);
    }
    line += len + (line[len] == '\n');
  }
}

/* check(lead..., words...) and its error. */
static ds_status run_check(ds_test_check_args_fn check, const char *const *lead, int n_lead,
                           const char *w1, const char *w2, struct ds_err *err) {
  char *argv[9];
  int argc = 0;
  for (int k = 0; k < n_lead; k++) argv[argc++] = (char *)lead[k];
  argv[argc++] = (char *)w1;
  if (w2) argv[argc++] = (char *)w2;
  argv[argc] = NULL;
  memset(err, 0, sizeof *err);
  return check(argc, argv, err);
}

/* "--flag=VALUE" is read as "--flag VALUE" (the same status and message,
 * for a value and for an empty one), and "--flag=1" of a flag that takes
 * no value is refused as taking none (base/cli.h ds_cli_split_values). */
static void check_joined_value(ds_test_check_args_fn check, const char *const *lead,
                               int n_lead, const struct ds_cli_option *o) {
  struct ds_err apart, joined;
  char word[128];
  if (!o->takes_value) {
    snprintf(word, sizeof word, "%s=1", o->flag);
    cr_assert_eq(run_check(check, lead, n_lead, word, NULL, &joined), DS_EUSAGE, "%s %s",
                 lead[0], word);
    char none[128];
    snprintf(none, sizeof none, "option %s takes no value", o->flag);
    cr_assert_str_eq(joined.msg, none, "%s %s", lead[0], word);
    return;
  }
  const char *values[] = {"x", ""};
  for (int k = 0; k < 2; k++) {
    snprintf(word, sizeof word, "%s=%s", o->flag, values[k]);
    ds_status st_apart = run_check(check, lead, n_lead, o->flag, values[k], &apart);
    ds_status st_joined = run_check(check, lead, n_lead, word, NULL, &joined);
    cr_assert_eq(st_joined, st_apart, "%s %s: %s, apart: %s", lead[0], word, joined.msg,
                 apart.msg);
    cr_assert_str_eq(joined.msg, apart.msg, "%s %s", lead[0], word);
  }
}

char *ds_test_main_text(ds_test_main_fn main_fn, const char *const *words, int n) {
  cr_assert(n >= 1 && n <= 8);
  char *argv[9];
  for (int k = 0; k < n; k++) argv[k] = (char *)words[k];
  argv[n] = NULL;
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&text, &len);
  cr_assert(fp != NULL);
  struct ds_err err = {0};
  cr_assert_eq(main_fn(n, argv, fp, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(fclose(fp), 0);
  return text;
}

void ds_test_options_agree(const struct ds_cli_option *options, const char *help,
                           ds_test_check_args_fn check, const char *const *lead, int n_lead) {
  cr_assert(n_lead >= 1 && n_lead <= 6);
  static struct help_defs defs; /* Criterion runs each test in its own process */
  read_definitions(help, &defs);
  /* every command takes both spellings of help; -h is in no help text, so
   * only the table (and the given-last check below) can keep it */
  cr_assert(ds_cli_option_find(options, "--help"), "%s: no --help in its table", lead[0]);
  cr_assert(ds_cli_option_find(options, "-h"), "%s: no -h in its table", lead[0]);
  for (const struct ds_cli_option *o = options; o->flag; o++) {
    cr_assert_eq(ds_cli_option_find(options, o->flag), o, "%s: %s twice in its table",
                 lead[0], o->flag);
    if (strcmp(o->flag, "-h") == 0) continue;
    const struct help_def *d = find_def(&defs, o->flag);
    cr_assert(d, "%s: the parser knows %s, --help does not show it", lead[0], o->flag);
    cr_assert_eq(d->metavar, o->takes_value, "%s %s: --help shows it %s a value, the parser "
                 "takes %s", lead[0], o->flag, d->metavar ? "with" : "without",
                 o->takes_value ? "one" : "none");
  }
  for (const struct ds_cli_option *o = options; o->flag; o++) {
    if (!o->alias_of) continue;
    const struct ds_cli_option *canon = ds_cli_option_find(options, o->alias_of);
    cr_assert(canon, "%s: %s is an alias of %s, not in its table", lead[0], o->flag,
              o->alias_of);
    cr_assert(!canon->alias_of, "%s: %s is an alias of %s, itself an alias", lead[0], o->flag,
              o->alias_of);
    cr_assert_eq(canon->takes_value, o->takes_value, "%s: %s and its alias %s disagree on "
                 "taking a value", lead[0], o->alias_of, o->flag);
  }
  for (int i = 0; i < defs.n; i++)
    cr_assert(!defs.d[i].own || ds_cli_option_find(options, defs.d[i].flag),
              "%s: --help shows %s, the parser does not know it", lead[0], defs.d[i].flag);
  for (const struct ds_cli_option *o = options; o->flag; o++) {
    struct ds_err err;
    ds_status st = run_check(check, lead, n_lead, o->flag, NULL, &err);
    char missing[128];
    snprintf(missing, sizeof missing, "option %s needs a value", o->flag);
    if (o->takes_value) {
      cr_assert_eq(st, DS_EUSAGE, "%s %s given last", lead[0], o->flag);
      cr_assert_str_eq(err.msg, missing);
    } else {
      cr_assert_neq(st, DS_EINTERNAL, "%s %s: %s", lead[0], o->flag, err.msg);
      cr_assert(!strstr(err.msg, "unknown option") && !strstr(err.msg, "needs a value"),
                "%s %s given last: %s", lead[0], o->flag, err.msg);
    }
    st = run_check(check, lead, n_lead, o->flag, o->takes_value ? "x" : NULL, &err);
    cr_assert_neq(st, DS_EINTERNAL, "%s %s: %s", lead[0], o->flag, err.msg);
    cr_assert(!strstr(err.msg, "unknown option"), "%s %s: %s", lead[0], o->flag, err.msg);
    if (strncmp(o->flag, "--", 2) == 0) check_joined_value(check, lead, n_lead, o);
  }
}
