/*
 * `ddpreal collective`'s options (collective_args.h). Every flag is listed
 * once in `options` with whether it takes a value: a flag not in it is
 * unknown before any dispatch, and "needs a value" comes from it
 * (base/cli.h), so a made-up flag given last is named as unknown. The
 * value messages are the command's own ("-b 'x': expected a size ...").
 */
#include "collective_args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/textout.h"
#include "base/units.h"

#define PROGRAM "ddpreal collective"

static const char usage[] =
    "usage: ddpreal collective [options]\n"
    "  --op NAME            allreduce (default), broadcast, reduce, allgather,\n"
    "                       reducescatter\n"
    "  -b, --minbytes SIZE  smallest message, with units as nccl-tests: 8, 1K, 1M, 1G\n"
    "                       (binary; k/m/g too; 1MB = 1M; default 8)\n"
    "  -e, --maxbytes SIZE  largest message (default 1G)\n"
    "  -f, --stepfactor X   multiply the size by X each step (default 2; at most 1000\n"
    "                       sizes)\n"
    "  -g, --nranks N       ranks, one process each (default: one per GPU)\n"
    "  --share-gpus         allow more ranks than GPUs (timings then do not represent\n"
    "                       separate GPUs)\n"
    "  --iters N            timed calls per size (default 20)\n"
    "  --warmup N           untimed calls first (default 5)\n"
    "  --format F           text (default), csv or json\n"
    "  --algo A             NCCL's algorithm: ring, tree, nvls, nvlstree, collnetdirect,\n"
    "                       collnetchain or pat (sets NCCL_ALGO; default: NCCL's choice)\n"
    "  --proto P            NCCL's protocol: LL, LL128 or Simple (sets NCCL_PROTO)\n"
    "  -h, --help           this text\n"
    "Columns: size, count (floats), type, time (us per call, mean over ranks),\n"
    "algbw = size/time, busbw = algbw * bus factor (nccl-tests), #wrong. Sizes and\n"
    "counts as nccl-tests makes them: whole floats; allgather and reducescatter give\n"
    "each rank a multiple of 16 bytes and print its count (sizes under 16 B a rank\n"
    "run nothing and print no row).\n";

const char *ds_collective_args_usage(void) { return usage; }

/* Every flag collective knows (base/cli.h). */
static const struct ds_cli_option options[] = {
    {"--op", 1, NULL}, {"-b", 1, "--minbytes"}, {"--minbytes", 1, NULL}, {"-e", 1, "--maxbytes"},
    {"--maxbytes", 1, NULL}, {"-f", 1, "--stepfactor"}, {"--stepfactor", 1, NULL},
    {"-g", 1, "--nranks"}, {"--nranks", 1, NULL}, {"--share-gpus", 0, NULL}, {"--iters", 1, NULL},
    {"--warmup", 1, NULL}, {"--format", 1, NULL}, {"--algo", 1, NULL}, {"--proto", 1, NULL},
    {"--help", 0, NULL}, {"-h", 0, "--help"}, {NULL, 0, NULL}};

const struct ds_cli_option *ds_collective_args_flags(void) { return options; }

static const char *const op_names[] = {"allreduce", "broadcast", "reduce", "allgather",
                                       "reducescatter"};

const char *ds_collective_op_name(enum ds_collective_op op) { return op_names[op]; }

/* ddpsim's algorithm names (docs/collectives.md) and NCCL's: `--algo`
 * takes either spelling and passes NCCL's to NCCL_ALGO, so a measured row
 * and a predicted one name the same thing. */
static const char *const algo_names[][2] = {
    {"ring", "Ring"}, {"tree", "Tree"}, {"nvls", "NVLS"}, {"nvlstree", "NVLSTree"},
    {"collnetdirect", "CollnetDirect"}, {"collnetchain", "CollnetChain"}, {"pat", "PAT"}};
static const char *const proto_names[] = {"LL", "LL128", "Simple"};

int ds_collective_parse_size(const char *s, double max, size_t *out) {
  /* The number before the unit letter is decimal (ds_units_parse_number):
   * strtod alone also took hex ("0x10" as 16, where nccl-tests' %zu reads
   * 0) and leading blanks. */
  char number[64];
  size_t len = strcspn(s, "kKmMgGB");
  double v;
  if (len == 0 || len >= sizeof number) return -1;
  memcpy(number, s, len);
  number[len] = '\0';
  if (ds_units_parse_number(number, &v) != DS_OK || v < 0) return -1;
  const char *end = s + len;
  double unit = 1;
  switch (*end) {
  case 'k': case 'K': unit = 1024.0; end++; break;
  case 'm': case 'M': unit = 1024.0 * 1024; end++; break;
  case 'g': case 'G': unit = 1024.0 * 1024 * 1024; end++; break;
  default: break;
  }
  if (unit > 1 && *end == 'i' && end[1] == 'B') end += 2;
  else if (*end == 'B') end++;
  if (*end) return -1;
  v *= unit;
  if (v > max) return -1;
  *out = (size_t)v;
  return 0;
}

long ds_collective_sweep_steps(size_t min, size_t max, double factor, long limit) {
  long n = 0;
  for (double b = (double)min; b <= (double)max && n <= limit; b *= factor) n++;
  return n;
}

int ds_collective_split_attached(int argc, char **argv, const char *const *shorts,
                                 int *out_argc, char ***out) {
  char **v = malloc((2 * (size_t)argc + 1) * sizeof *v);
  if (!v) return -1;
  int n = 0;
  for (int i = 0; i < argc; i++) {
    const char *w = argv[i];
    int split = 0;
    if (i > 0 && w[0] == '-' && w[1] && w[1] != '-' && w[2])
      for (const char *const *s = shorts; *s && !split; s++)
        if (w[1] == (*s)[1] && w[2] != '=') {
          v[n++] = (char *)*s;
          v[n++] = argv[i] + 2;
          split = 1;
        }
    if (!split) v[n++] = argv[i];
  }
  v[n] = NULL;
  *out_argc = n;
  *out = v;
  return 0;
}

double ds_collective_min_factor(size_t min, size_t max, long limit) {
  /* 5 decimals, rounded up, then up again until it fits */
  /* floor(ln(max/min) / ln f) + 1 sizes: at most limit once f > (max/min)^(1/limit) */
  double f = ceil(pow((double)max / (double)min, 1.0 / (double)limit) * 1e5) / 1e5;
  while (ds_collective_sweep_steps(min, max, f, limit) > limit) f += 1e-5;
  return f;
}

/* At most this many sizes in one sweep (-b, -e, -f). */
#define MAX_SWEEP 1000

static int parse_size(const char *s, size_t *out) {
  return ds_collective_parse_size(s, 64.0 * 1024 * 1024 * 1024, out);
}

/* The command's own wording of a bad value: "-b 'x': expected WHAT". */
static ds_status bad_value(struct ds_err *err, const char *f, const char *v, const char *what) {
  return ds_err_set(err, DS_EUSAGE, "%s '%s': expected %s", f, v, what);
}

/* A whole number from lo to a million (-g, --iters, --warmup). */
static ds_status parse_int(struct ds_err *err, const char *f, const char *v, int32_t lo,
                           int32_t *out) {
  char *end;
  errno = 0;
  /* digits only, as the command's other numbers: strtol alone would take
   * leading blanks and a sign */
  long x = strtol(v, &end, 10);
  if (!isdigit((unsigned char)v[0]) || end == v || *end || errno || x < lo || x > 1000000) {
    char what[64];
    snprintf(what, sizeof what, "a whole number from %d to 1000000", (int)lo);
    return bad_value(err, f, v, what);
  }
  *out = (int32_t)x;
  return DS_OK;
}

/* The value v of flag f (a flag of `options` that takes one) into a. */
static ds_status apply(struct ds_collective_args *a, const char *f, const char *v,
                       struct ds_err *err) {
  if (!strcmp(f, "--op")) {
    for (size_t k = 0; k < sizeof op_names / sizeof *op_names; k++)
      if (!strcmp(v, op_names[k])) {
        a->op = (enum ds_collective_op)k;
        return DS_OK;
      }
    return bad_value(err, f, v, "allreduce, broadcast, reduce, allgather or reducescatter");
  }
  if (!strcmp(f, "-b") || !strcmp(f, "--minbytes")) {
    /* 0 would never grow: the sweep multiplied it by -f for ever */
    if (parse_size(v, &a->min_bytes) || a->min_bytes == 0)
      return bad_value(err, f, v, "a size like 8, 1K, 1M, 1G (>= 1, at most 64G)");
  } else if (!strcmp(f, "-e") || !strcmp(f, "--maxbytes")) {
    if (parse_size(v, &a->max_bytes))
      return bad_value(err, f, v, "a size like 8, 1K, 1M, 1G (at most 64G)");
  } else if (!strcmp(f, "-f") || !strcmp(f, "--stepfactor")) {
    /* decimal only, as every number ddpsim and ddpreal read */
    if (ds_units_parse_number(v, &a->factor) != DS_OK || !(a->factor > 1))
      return bad_value(err, f, v, "a finite factor > 1");
  } else if (!strcmp(f, "-g") || !strcmp(f, "--nranks")) {
    DS_CHECK(parse_int(err, f, v, 1, &a->nranks));
  } else if (!strcmp(f, "--iters")) {
    DS_CHECK(parse_int(err, f, v, 1, &a->iters));
  } else if (!strcmp(f, "--warmup")) {
    DS_CHECK(parse_int(err, f, v, 0, &a->warmup));
  } else if (!strcmp(f, "--algo")) {
    for (size_t k = 0; k < sizeof algo_names / sizeof *algo_names; k++)
      if (!strcasecmp(v, algo_names[k][0])) {
        a->algo = algo_names[k][1];
        return DS_OK;
      }
    return bad_value(err, f, v,
                     "ring, tree, nvls, nvlstree, collnetdirect, collnetchain or pat");
  } else if (!strcmp(f, "--proto")) {
    for (size_t k = 0; k < sizeof proto_names / sizeof *proto_names; k++)
      if (!strcasecmp(v, proto_names[k])) {
        a->proto = proto_names[k];
        return DS_OK;
      }
    return bad_value(err, f, v, "LL, LL128 or Simple");
  } else if (!strcmp(f, "--format")) {
    if (!strcmp(v, "text")) a->format = DS_COLLECTIVE_FORMAT_TEXT;
    else if (!strcmp(v, "csv")) a->format = DS_COLLECTIVE_FORMAT_CSV;
    else if (!strcmp(v, "json")) a->format = DS_COLLECTIVE_FORMAT_JSON;
    else return bad_value(err, f, v, "text, csv or json");
  } else {
    return ds_cli_unhandled(err, f);
  }
  return DS_OK;
}

/* ds_cli_walk_flags' callback: --share-gpus, the one flag without a
 * value, or a flag's value. */
static ds_status on_flag(void *ctx, const char *f, const char *v, struct ds_err *err) {
  struct ds_collective_args *a = ctx;
  if (v) return apply(a, f, v, err);
  if (strcmp(f, "--share-gpus") != 0) return ds_cli_unhandled(err, f);
  a->share_gpus = 1;
  return DS_OK;
}

static ds_status parse_split(int argc, char **argv, struct ds_collective_args *a,
                             struct ds_err *err);

/* ds_cli_walk_flags reads "--flag=value" as ds_cli_next_option does; "-b8M"
 * is split first (ds_collective_split_attached). */
ds_status ds_collective_args_parse(int argc, char **argv, struct ds_collective_args *a,
                                   struct ds_err *err) {
  memset(a, 0, sizeof *a);
  static const char *const shorts[] = {"-b", "-e", "-f", "-g", NULL};
  char **words;
  int n_words;
  if (ds_collective_split_attached(argc, argv, shorts, &n_words, &words))
    return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = parse_split(n_words, words, a, err);
  free(words);
  return st;
}

static ds_status parse_split(int argc, char **argv, struct ds_collective_args *a,
                             struct ds_err *err) {
  a->op = DS_COLLECTIVE_OP_ALLREDUCE;
  a->min_bytes = 8;
  a->max_bytes = (size_t)1 << 30;
  a->factor = 2;
  a->iters = 20;
  a->warmup = 5;
  a->format = DS_COLLECTIVE_FORMAT_TEXT;
  DS_CHECK(ds_cli_walk_flags(options, PROGRAM, argc, argv, on_flag, a, &a->help, err));
  if (a->help) return DS_OK;
  if (a->min_bytes > a->max_bytes)
    return ds_err_set(err, DS_EUSAGE, "-b %zu is more than -e %zu", a->min_bytes,
                      a->max_bytes);
  if (ds_collective_sweep_steps(a->min_bytes, a->max_bytes, a->factor, MAX_SWEEP) > MAX_SWEEP)
    return ds_err_set(err, DS_EUSAGE,
                      "-f %.10g: the sweep from %zu to %zu bytes would take more than %d sizes; "
                      "use -f %.5f or more",
                      a->factor, a->min_bytes, a->max_bytes, MAX_SWEEP,
                      ds_collective_min_factor(a->min_bytes, a->max_bytes, MAX_SWEEP));
  return DS_OK;
}

int ds_collective_result_write(FILE *fp, enum ds_collective_format format,
                               const struct ds_collective_result *r, int first) {
  const char *op = ds_collective_op_name(r->op);
  int bad = 0;
  if (format == DS_COLLECTIVE_FORMAT_CSV) {
    bad |= fprintf(fp, "%s,", op) < 0;
    bad |= ds_textout_csv_field(fp, r->algo) != 0;
    bad |= fputc(',', fp) == EOF;
    bad |= ds_textout_csv_field(fp, r->proto) != 0;
    bad |= fprintf(fp, ",%d,%zu,%.3f,%.3f,%.3f,%llu\n", r->nranks, r->size_bytes, r->time_us,
                   r->algbw_gbps, r->busbw_gbps, r->wrong) < 0;
  } else if (format == DS_COLLECTIVE_FORMAT_JSON) {
    bad |= fprintf(fp, "%s\n  {\"op\": \"%s\", \"algo\": ", first ? "" : ",", op) < 0;
    ds_textout_json_string(fp, r->algo);
    bad |= fputs(", \"proto\": ", fp) == EOF;
    ds_textout_json_string(fp, r->proto);
    bad |= fprintf(fp, ", \"nranks\": %d, \"size_bytes\": %zu, \"time_us\": %.3f, "
                   "\"algbw_gbps\": %.3f, \"busbw_gbps\": %.3f, \"wrong\": %llu}",
                   r->nranks, r->size_bytes, r->time_us, r->algbw_gbps, r->busbw_gbps,
                   r->wrong) < 0;
  } else if (format == DS_COLLECTIVE_FORMAT_TEXT) {
    bad |= fprintf(fp, " %13zu %12zu %6s %10.2f %12.2f %12.2f %8llu\n", r->size_bytes, r->count,
                   "float", r->time_us, r->algbw_gbps, r->busbw_gbps, r->wrong) < 0;
  }
  return bad || ferror(fp) ? EOF : 0;
}
