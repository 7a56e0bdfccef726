/*
 * The schedule and trace readers (schema in traces/SCHEMA.md): the schema
 * line, the header row mapped back to the column list, each row's fields
 * (trace_fields.c) into an op, the end line, then the whole file's checks
 * (ranks without gaps, a schedule's validation, a trace's keys and
 * iteration ends), every refusal naming the file and line.
 */
#include "traces/trace.h"
#include "traces/trace_impl.h"
#include "traces/trace_keys.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/csvread.h"

/* Header field k (0-based). Past the n_cols-th field every column was
 * named once already (an earlier unknown or repeated name stopped the
 * read), so a known name there is a repeat. */
static void header_field(struct reader *r, size_t k, const char *text) {
  for (size_t c = 0; c < r->n_cols; c++) {
    if (strcmp(text, ds__trace_col_names[c]) != 0) continue;
    for (size_t j = 0; j < k && j < r->n_cols; j++)
      if (r->col_of_field[j] == (enum col)c) {
        r->st = ds_err_set(r->err, DS_EINPUT,
                           "%s:%zu: column '%s' appears twice in the header",
                           r->path, r->row_line, text);
        return;
      }
    if (k < r->n_cols) r->col_of_field[k] = (enum col)c;
    return;
  }
  /* The header is where a missing header row or a newer schema shows, so
   * the message lists what this version expects. */
  char cols[512];
  size_t used = 0;
  for (size_t c = 0; c < r->n_cols && used < sizeof cols; c++)
    used += (size_t)snprintf(cols + used, sizeof cols - used, "%s%s",
                             c ? "," : "", ds__trace_col_names[c]);
  r->st = ds_err_set(r->err, DS_EINPUT,
                     "%s:%zu: unknown column '%.*s'; the header row of a %s "
                     "v%d file names the columns %s (in any order)",
                     r->path, r->row_line, ERR_TEXT_MAX, text,
                     r->is_trace ? DS_TRACE_SCHEMA : DS_SCHEDULE_SCHEMA,
                     DS_SCHEMA_VERSION, cols);
}

static void on_field(void *data, size_t len, void *ctx) {
  struct reader *r = ctx;
  if (r->st != DS_OK) return;
  size_t k = r->n_fields++;
  if (len + 1 > r->text_cap) {
    char *t = realloc(r->text, len + 1);
    if (!t) {
      r->st = ds_err_set(r->err, DS_ENOMEM, "%s:%zu: out of memory", r->path,
                         r->row_line);
      return;
    }
    r->text = t;
    r->text_cap = len + 1;
  }
  if (len) memcpy(r->text, data, len);
  r->text[len] = '\0';
  if (len && memchr(data, '\0', len)) {
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: field %zu contains a NUL byte",
                       r->path, r->row_line, k + 1);
    return;
  }
  if (r->end_line) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: a row after the end line (line %zu); the end line "
                       "must be the file's last", r->path, r->row_line, r->end_line);
    return;
  }
  if (!r->header_done) {
    header_field(r, k, r->text);
    return;
  }
  if (k < r->n_cols) ds__trace_parse_field(r, r->col_of_field[k], r->text);
}

static void finish_header(struct reader *r) {
  for (size_t c = 0; c < r->n_cols; c++) {
    size_t k = 0;
    while (k < r->n_fields && r->col_of_field[k] != (enum col)c) k++;
    if (k == r->n_fields) {
      r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: missing column '%s'",
                         r->path, r->row_line, ds__trace_col_names[c]);
      return;
    }
  }
  r->header_done = 1;
}

static void finish_row(struct reader *r) {
  if (r->n_fields != r->n_cols) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: expected %zu fields, got %zu", r->path,
                       r->row_line, r->n_cols, r->n_fields);
    return;
  }
  size_t idx;
  ds_status st = DS_OK;
  if (r->is_trace) {
    if (r->start_ns > r->end_ns) {
      char want[40], got[40];
      ds__trace_fmt_time_ns(want, sizeof want, r->start_ns);
      ds__trace_fmt_time_ns(got, sizeof got, r->end_ns);
      char what[64];
      snprintf(what, sizeof what, "a time >= start_us (%s)", want);
      ds__trace_field_error(r, COL_END_US, what, got);
      return;
    }
    /* One source per file: a trace is either simulated or measured. */
    if (r->t->n_rows == 0) {
      memcpy(r->t->source, r->source, sizeof r->source);
    } else if (strcmp(r->t->source, r->source) != 0) {
      char what[64];
      snprintf(what, sizeof what, "\"%s\" like the rows before it",
               r->t->source);
      ds__trace_field_error(r, COL_SOURCE, what, r->source);
      return;
    }
  }
  st = ds_schedule_add(r->s, &r->op, r->deps, r->n_deps, &idx);
  if (st == DS_OK && r->is_trace) {
    struct ds_trace_row row = {r->s, (uint32_t)idx, r->iter, r->start_ns,
                               r->end_ns};
    st = ds_trace_add(r->t, &row);
  }
  if (st != DS_OK) {
    r->st = ds_err_set(r->err, st, "%s:%zu: out of memory (or more than 2^32 "
                       "ops)", r->path, r->row_line);
    return;
  }
  if (r->op.rank > r->max_rank) r->max_rank = r->op.rank, r->max_rank_line = r->row_line;
  if (r->op.bucket > r->max_bucket)
    r->max_bucket = r->op.bucket, r->max_bucket_line = r->row_line;
  if (idx >= r->op_line_cap) {
    size_t cap = r->op_line_cap ? 2 * r->op_line_cap : 1024;
    size_t *p = realloc(r->op_line, cap * sizeof *p);
    if (!p) {
      r->st = ds_err_set(r->err, DS_ENOMEM, "%s:%zu: out of memory", r->path, r->row_line);
      return;
    }
    r->op_line = p;
    r->op_line_cap = cap;
  }
  r->op_line[idx] = r->row_line;
}

/* Ranks size every per-rank array downstream (world size = largest rank
 * + 1), so a rank no smaller than the number of rows cannot be dense
 * (every rank 0..R has a row) and is refused at its line: one row naming
 * rank 49,999,999 made `ddpsim analyze` allocate 5 GB (issue #15, defect 7).
 * Bucket numbers size the per-bucket spans of `ddpsim analyze` the same
 * way (analysis/compare.c, add_op_metrics): one row naming bucket 10^8
 * took 1.3 s and 4 GB of address space, and bucket 2*10^9 lost every
 * bucket metric without a word (the allocation failed). DDP numbers its
 * buckets 0..B-1 and every bucket has a collective, so the same rule
 * holds for them. */
static ds_status check_dense(struct reader *r, int32_t max, size_t line, const char *col,
                             const char *rule) {
  if (max >= 0 && (size_t)max >= r->s->n_ops)
    return ds_err_set(r->err, DS_EINPUT,
                      "%s:%zu: column '%s': %s %" PRId32 " in a file of %zu rows; %s",
                      r->path, line, col, col, max, r->s->n_ops, rule);
  return DS_OK;
}

/* Every rank in 0..R is one that ran (after check_dense, so R is below
 * the row count): the first rank below the largest that no row has is
 * refused (a trace without rank 0 read as rank 0's metrics all 0: revana
 * finding 5). Buckets need not be dense: a rank's trace may hold some. */
static ds_status check_rank_gaps(struct reader *r) {
  if (r->max_rank < 0) return DS_OK;
  unsigned char *seen = calloc((size_t)r->max_rank + 1, 1);
  if (!seen) return ds_err_set(r->err, DS_ENOMEM, "%s: out of memory", r->path);
  for (size_t i = 0; i < r->s->n_ops; i++) seen[r->s->ops[i].rank] = 1;
  int32_t missing = 0;
  while (missing < r->max_rank && seen[missing]) missing++;
  free(seen);
  if (missing < r->max_rank)
    return ds_err_set(r->err, DS_EINPUT,
                      "%s:%zu: column 'rank': rank %" PRId32 ", but no row has rank %" PRId32
                      "; ranks must be numbered 0, 1, ... without gaps",
                      r->path, r->max_rank_line, r->max_rank, missing);
  return DS_OK;
}

static ds_status check_ranks_and_buckets(struct reader *r) {
  /* ranks must also leave no gap (check_rank_gaps); buckets only the bound */
  DS_CHECK(check_dense(r, r->max_rank, r->max_rank_line, "rank",
                       "ranks must be numbered 0, 1, ... without gaps"));
  DS_CHECK(check_rank_gaps(r));
  return check_dense(r, r->max_bucket, r->max_bucket_line, "bucket",
                     "a bucket number must be below the number of rows (DDP numbers its "
                     "buckets 0, 1, ..., each with a row)");
}

static void on_row(int c, void *ctx) {
  struct reader *r = ctx;
  (void)c;
  r->at_row_start = 1;
  if (r->st == DS_OK) {
    if (!r->header_done)
      finish_header(r);
    else
      finish_row(r);
  }
  r->n_fields = 0;
  r->n_deps = 0;
}

/* How much of line a message quotes, and whether it was cut. */
static int quoted_len(const char *line) {
  size_t n = strcspn(line, "\r\n");
  return (int)(n > ERR_TEXT_MAX ? ERR_TEXT_MAX : n);
}
static const char *quoted_more(const char *line) {
  return strcspn(line, "\r\n") > ERR_TEXT_MAX ? "..." : "";
}

/* The first line names the schema and its version. */
static ds_status check_schema(struct reader *r, const char *line, size_t len) {
  const char *want = r->is_trace ? DS_TRACE_SCHEMA : DS_SCHEDULE_SCHEMA;
  const char *other = r->is_trace ? DS_SCHEDULE_SCHEMA : DS_TRACE_SCHEMA;
  if (!line)
    return ds_err_set(r->err, DS_EINPUT,
                      "%s:1: the file is empty; expected the schema line "
                      "\"# %s v%d\"",
                      r->path, want, DS_SCHEMA_VERSION);
  /* the checks below read a C string, which a NUL would cut short */
  const char *nul = memchr(line, '\0', len);
  if (nul)
    return ds_err_set(r->err, DS_EINPUT,
                      "%s:1: a NUL byte in the schema line (byte %zu); expected \"# %s v%d\"",
                      r->path, (size_t)(nul - line) + 1, want, DS_SCHEMA_VERSION);
  const char *p = line;
  /* a UTF-8 byte order mark (an editor's "UTF-8 with BOM") is not part of
   * the schema line */
  if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
  if (*p == '#') {
    p++;
    p += strspn(p, " \t");
    size_t n = strcspn(p, " \t\r\n");
    const char *q = p + n;
    q += strspn(q, " \t");
    long version = -1;
    if (*q == 'v' && q[1] >= '0' && q[1] <= '9') {
      char *end;
      errno = 0;
      version = strtol(q + 1, &end, 10);
      if (errno || end[strspn(end, " \t\r\n")] != '\0') version = -1;
    }
    if (version >= 0 && n == strlen(other) && strncmp(p, other, n) == 0)
      return ds_err_set(r->err, DS_EINPUT,
                        "%s:1: this is a %s file, not a %s file", r->path,
                        other, want);
    if (version >= 0 && n == strlen(want) && strncmp(p, want, n) == 0) {
      if (version == DS_SCHEMA_VERSION) return DS_OK;
      /* v1 had no end line: a v1 file cut between rows reads as a whole one,
       * so none is trusted (SCHEMA.md, "Versioning"). */
      if (version == 1)
        return ds_err_set(r->err, DS_EINPUT,
                          "%s:1: %s version 1 is not read any more: it has no end "
                          "line, so a copy cut short cannot be told from a whole one; "
                          "write it again with this ddpsim or ddpreal (or, when you "
                          "know it is whole, change this line to \"# %s v%d\" and add "
                          "\"# end: N rows\" after its N rows)",
                          r->path, want, want, DS_SCHEMA_VERSION);
      return ds_err_set(r->err, DS_EINPUT,
                        "%s:1: %s version %ld is not supported; this ddpsim "
                        "reads version %d",
                        r->path, want, version, DS_SCHEMA_VERSION);
    }
  }
  return ds_err_set(r->err, DS_EINPUT,
                    "%s:1: expected the schema line \"# %s v%d\", got \"%.*s%s\"",
                    r->path, want, DS_SCHEMA_VERSION, quoted_len(line), line,
                    quoted_more(line));
}

/* A `#` line after the header row: -1 when it is not an end line ("# end:"
 * does not begin it), 0 when it is one but not "# end: N rows" ("# end: 1
 * row"; blanks free around the words), 1 when it is, with N in *n. The
 * plural follows N, so no prefix of one end line is another: "# end: 8
 * rows" cut to "# end: 8 row" is refused. */
static int parse_end(const char *line, uint64_t *n) {
  const char *p = line + 1;
  p += strspn(p, " \t");
  if (strncmp(p, "end:", 4) != 0) return -1;
  p += 4;
  p += strspn(p, " \t");
  size_t digits = strspn(p, "0123456789");
  if (digits == 0 || digits > 19) return 0;
  *n = strtoull(p, NULL, 10);
  p += digits;
  size_t blanks = strspn(p, " \t");
  if (blanks == 0 || strncmp(p + blanks, "row", 3) != 0) return 0;
  p += blanks + 3;
  if (*n != 1 && *p++ != 's') return 0;
  return p[strspn(p, " \t\r\n")] == '\0';
}

/* `#` lines: before the header row provenance, skipped; after it only the
 * end line, once, counting the rows read. */
static int comment_ok(void *ctx, const char *line, size_t len) {
  struct reader *r = ctx;
  /* the checks below read C strings, which a NUL would cut short: "# end:
   * 1 row\0 and 5 more" would pass as the end line */
  if (memchr(line, '\0', len)) {
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: a NUL byte in a comment line (byte %zu)",
                       r->path, r->line, (size_t)((const char *)memchr(line, '\0', len) - line) + 1);
    return 0;
  }
  if (!r->header_done) return 1;
  if (r->end_line) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: a line after the end line (line %zu), got \"%.*s%s\"; "
                       "the end line must be the file's last",
                       r->path, r->line, r->end_line, quoted_len(line), line,
                       quoted_more(line));
    return 0;
  }
  uint64_t n = 0;
  int end = parse_end(line, &n);
  if (end < 0) return 0; /* the loop's "comment lines are allowed only before ..." */
  if (end == 0) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: expected the end line \"# end: N rows\" (\"# end: 1 row\" "
                       "for one), got \"%.*s%s\"",
                       r->path, r->line, quoted_len(line), line, quoted_more(line));
    return 0;
  }
  r->end_line = r->line;
  if (n != r->s->n_ops) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: the end line counts %" PRIu64 " rows but the file has %zu: "
                       "rows were removed or added after it was written; write it again",
                       r->path, r->line, n, r->s->n_ops);
    return 0;
  }
  return 1;
}

/* The schema line, then the rest through the one CSV read loop
 * (ds_csvread_lines: every row knows the line it began on); `#` lines
 * before the header row are provenance and skipped, after it only the end
 * line is taken, and a file without one was cut short. */
static ds_status read_file(struct reader *r, const char *open_path) {
  FILE *fp = ds_csvread_open_input(open_path);
  if (!fp)
    return ds_err_set(r->err, DS_EIO, "%s: cannot open: %s", r->path,
                      strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  errno = 0;
  ssize_t len = getline(&line, &cap, fp);
  r->line = 1;
  /* a read that fails (a directory: EISDIR) is not an empty file */
  if (len < 0 && ferror(fp))
    r->st = ds_err_set(r->err, DS_EIO, "%s: cannot read: %s", r->path,
                       strerror(errno ? errno : EIO));
  else
    r->st = check_schema(r, len < 0 ? NULL : line, len < 0 ? 0 : (size_t)len);
  free(line);
  r->at_row_start = 1;
  if (r->st == DS_OK) {
    struct ds_csvread_lines l = {r->path, r->err, &r->st, &r->line, &r->row_line,
                                 &r->at_row_start, comment_ok, on_field, on_row, r};
    ds_csvread_lines(fp, &l);
  }
  const char *schema = r->is_trace ? DS_TRACE_SCHEMA : DS_SCHEDULE_SCHEMA;
  if (r->st == DS_OK && !r->header_done)
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: no header row", r->path,
                       r->line);
  else if (r->st == DS_OK && !r->end_line)
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: the file ends without its end line \"# end: N rows\", "
                       "which every %s v%d file has after its last row: it was cut "
                       "short; write it again",
                       r->path, r->line, schema, DS_SCHEMA_VERSION);
  else if (r->st == DS_EINPUT && r->row_line > 0 && !r->end_line && getc(fp) == EOF &&
           r->err) {
    /* A row (or the header row) refused in the file's last line is most
     * likely one cut in two. */
    size_t used = strlen(r->err->msg);
    snprintf(r->err->msg + used, sizeof r->err->msg - used,
             " (the file ends there, without its end line \"# end: N rows\": was it "
             "cut short?)");
  }
  ds_csvread_close_input(fp);
  free(r->text);
  free(r->deps);
  return r->st;
}

ds_status ds_schedule_read_csv(const char *path, struct ds_schedule **out,
                               struct ds_err *err) {
  return ds_schedule_read_csv_lines(path, out, NULL, err);
}

ds_status ds_schedule_read_csv_lines(const char *path, struct ds_schedule **out,
                                     size_t **op_line, struct ds_err *err) {
  const char *open_path = path; /* "-": standard input, named so below */
  path = ds_csvread_input_name(path);
  struct reader r = {.path = path, .err = err, .n_cols = N_SCHED_COLS,
                     .max_rank = -1, .max_bucket = -1};
  ds_status st = ds_schedule_new(1, &r.s);
  if (st != DS_OK) return ds_err_set(err, st, "%s: out of memory", path);
  st = read_file(&r, open_path);
  if (st == DS_OK) st = check_ranks_and_buckets(&r);
  if (st == DS_OK) {
    /* The file has no world-size line: the ranks that have ops are it. */
    r.s->world_size = r.max_rank + 1 > 1 ? r.max_rank + 1 : 1;
    struct ds_err verr = {0};
    size_t bad;
    st = ds_schedule_validate_at(r.s, &bad, &verr);
    /* The message names the op; the line is where the user looks. */
    if (st != DS_OK && bad < r.s->n_ops)
      ds_err_set(err, st, "%s:%zu: %s", path, r.op_line[bad], verr.msg);
    else if (st != DS_OK)
      ds_err_set(err, st, "%s: %s", path, verr.msg);
  }
  if (st == DS_OK && op_line) {
    if (!r.op_line) /* no ops: an empty array the caller can free */
      r.op_line = malloc(sizeof *r.op_line);
    if (!r.op_line) st = ds_err_set(err, DS_ENOMEM, "%s: out of memory", path);
    *op_line = r.op_line;
    r.op_line = NULL;
  }
  free(r.op_line);
  if (st != DS_OK) {
    if (op_line) {
      free(*op_line);
      *op_line = NULL;
    }
    ds_schedule_free(r.s);
    return st;
  }
  *out = r.s;
  return DS_OK;
}

ds_status ds_trace_read_csv(const char *path, struct ds_trace **out,
                            struct ds_err *err) {
  const char *open_path = path; /* "-": standard input, named so below */
  path = ds_csvread_input_name(path);
  struct reader r = {.path = path, .err = err, .n_cols = N_TRACE_COLS,
                     .is_trace = 1, .max_rank = -1, .max_bucket = -1};
  r.t = calloc(1, sizeof *r.t);
  ds_status st = r.t ? ds_schedule_new(1, &r.s) : DS_ENOMEM;
  if (st != DS_OK) {
    free(r.t);
    return ds_err_set(err, st, "%s: out of memory", path);
  }
  /* Ids repeat across iterations, so the owned schedule is not validated
   * as a schedule; every field was checked as it was read, and the keys
   * and dependencies as a whole below (trace_keys.h). */
  r.t->owned = r.s;
  st = read_file(&r, open_path);
  if (st == DS_OK) st = check_ranks_and_buckets(&r);
  if (st == DS_OK) {
    struct ds_err kerr = {0};
    size_t bad = 0, other = 0;
    st = ds_trace_check_keys(r.t, &bad, &other, &kerr);
    /* The line a row began on, through its op (one op per row). */
    size_t bad_line = st == DS_EINPUT ? r.op_line[r.t->rows[bad].op] : 0;
    if (st == DS_EINPUT && other != bad)
      ds_err_set(err, st, "%s:%zu: %s (first at line %zu)", path, bad_line, kerr.msg,
                 r.op_line[r.t->rows[other].op]);
    else if (st == DS_EINPUT)
      ds_err_set(err, st, "%s:%zu: %s", path, bad_line, kerr.msg);
    else if (st != DS_OK)
      ds_err_set(err, st, "%s: %s", path, kerr.msg);
  }
  if (st == DS_OK) {
    struct ds_err kerr = {0};
    size_t bad = 0, other = 0;
    st = ds_trace_check_iter_ends(r.t, &bad, &other, &kerr);
    if (st == DS_EINPUT)
      ds_err_set(err, st, "%s:%zu: %s (line %zu)", path, r.op_line[r.t->rows[bad].op],
                 kerr.msg, r.op_line[r.t->rows[other].op]);
    else if (st != DS_OK)
      ds_err_set(err, st, "%s: %s", path, kerr.msg);
  }
  free(r.op_line);
  if (st != DS_OK) {
    ds_trace_free(r.t);
    return st;
  }
  r.s->world_size = r.max_rank + 1 > 1 ? r.max_rank + 1 : 1;
  *out = r.t;
  return DS_OK;
}
