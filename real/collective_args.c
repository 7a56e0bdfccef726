/*
 * `ddpreal collective`'s options (collective_args.h). Every flag is listed
 * once in `options` with whether it takes a value: a flag not in it is
 * unknown before any dispatch, and "needs a value" comes from it
 * (base/cli.h), so a made-up flag given last is named as unknown. The
 * value messages are the command's own ("-b 'x': expected a size ...").
 */
#include "collective_args.h"

#include <errno.h>
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
    "  -b, --minbytes SIZE  smallest message, with units: 8, 1K, 1M, 1G (default 8)\n"
    "  -e, --maxbytes SIZE  largest message (default 1G)\n"
    "  -f, --stepfactor X   multiply the size by X each step (default 2)\n"
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
    "algbw = size/time, busbw = algbw * bus factor (nccl-tests), #wrong.\n";

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

/* A size as every ddpsim tool reads one (base/units.h: "8", "1K", "256M",
 * "1G" binary as nccl-tests, "1MiB" binary, "1MB" decimal), up to 64 GiB. */
static int parse_size(const char *s, size_t *out) {
  double v;
  if (ds_units_parse_bytes(s, &v) != DS_OK || v > 64.0 * 1024 * 1024 * 1024) return -1;
  *out = (size_t)v;
  return 0;
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
  long x = strtol(v, &end, 10);
  if (end == v || *end || errno || x < lo || x > 1000000) {
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
      return bad_value(err, f, v, "a size like 8, 1K, 1M, 1G (>= 1)");
  } else if (!strcmp(f, "-e") || !strcmp(f, "--maxbytes")) {
    if (parse_size(v, &a->max_bytes)) return bad_value(err, f, v, "a size like 8, 1K, 1M, 1G");
  } else if (!strcmp(f, "-f") || !strcmp(f, "--stepfactor")) {
    char *end;
    a->factor = strtod(v, &end);
    if (*end || !(a->factor > 1)) return bad_value(err, f, v, "a factor > 1");
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

/* ds_cli_walk_flags reads "--flag=value" as ds_cli_next_option does. */
ds_status ds_collective_args_parse(int argc, char **argv, struct ds_collective_args *a,
                                   struct ds_err *err) {
  memset(a, 0, sizeof *a);
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
