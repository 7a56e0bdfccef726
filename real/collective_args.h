/*
 * The command line of `ddpreal collective` (collective.cu): the flags it
 * knows, its --help text and its parser. Plain C without CUDA or MPI, so
 * that it is built, tested (tests/test_real_collective_args.c) and fuzzed
 * (fuzz/readers.c, `subcmd`) whether or not the cuda device is; the sweep
 * itself needs the cuda device.
 *
 *   ddpreal collective [--op allreduce|broadcast|reduce|allgather|reducescatter]
 *                      [-b 8] [-e 1G] [-f 2] [-g NRANKS] [--share-gpus]
 *                      [--iters 20] [--warmup 5] [--format text|csv|json]
 *                      [--algo A] [--proto P]
 */
#ifndef DS_REAL_COLLECTIVE_ARGS_H
#define DS_REAL_COLLECTIVE_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/cli.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_collective_op {
  DS_COLLECTIVE_OP_ALLREDUCE,
  DS_COLLECTIVE_OP_BROADCAST,
  DS_COLLECTIVE_OP_REDUCE,
  DS_COLLECTIVE_OP_ALLGATHER,
  DS_COLLECTIVE_OP_REDUCESCATTER
};

enum ds_collective_format {
  DS_COLLECTIVE_FORMAT_TEXT,
  DS_COLLECTIVE_FORMAT_CSV,
  DS_COLLECTIVE_FORMAT_JSON,
  DS_COLLECTIVE_FORMAT_NONE /* prints nothing: ds__coll_allreduce_sweep, never parsed */
};

struct ds_collective_args {
  enum ds_collective_op op;   /* --op, default allreduce */
  size_t min_bytes, max_bytes; /* -b, -e: default 8 and 1 GiB */
  double factor;              /* -f, > 1, default 2 */
  int32_t nranks;             /* -g; 0: one per GPU */
  int share_gpus;             /* --share-gpus */
  int32_t iters, warmup;      /* default 20 and 5 */
  enum ds_collective_format format;
  const char *algo;  /* NCCL_ALGO's value in NCCL's spelling (static), NULL: NCCL's choice */
  const char *proto; /* NCCL_PROTO's value, likewise */
  int help;          /* -h, --help: nothing after it is read */
};

/* Parses argv[1..argc) (argv[0] is "collective"); argv is borrowed, the
 * strings a points to are static. Usage errors are DS_EUSAGE with a
 * message naming the flag (ddpreal prefixes "ddpreal collective: "). */
ds_status ds_collective_args_parse(int argc, char **argv, struct ds_collective_args *a,
                                   struct ds_err *err);

/* The --help text. */
const char *ds_collective_args_usage(void);

/* A size for -b/-e as nccl-tests reads one (src/common.cu, parsesize): a
 * number, then optionally k, m or g in either case, binary (1K = 1024);
 * ddpreal also takes a trailing "B" or "iB" after the letter, binary too
 * ("1MB" = "1MiB" = 1048576, as nccl-tests reads "1MB"), and "B" alone.
 * -1 when not a size, negative, not finite or over max bytes. */
int ds_collective_parse_size(const char *s, double max, size_t *out);

/* The sizes a sweep from min to max multiplying by factor visits (the
 * loop's steps), counted up to limit + 1: a factor barely above 1 would
 * make the sweep endless in practice. */
long ds_collective_sweep_steps(size_t min, size_t max, double factor, long limit);
/* The smallest factor (5 decimals) whose sweep from min to max takes at
 * most limit (>= 2) sizes: what the refusal of a smaller -f proposes. */
double ds_collective_min_factor(size_t min, size_t max, long limit);

/* nccl-tests' short flags with the value attached ("-b8M", "-g2"): argv
 * copied into *out (malloc'd, argc words at most doubled, *out_argc set),
 * each such word split into the flag and its value; shorts lists the
 * short flags that take a value ("-b", "-e", "-f", "-g"). -1 when out of
 * memory. The strings are argv's or static. */
int ds_collective_split_attached(int argc, char **argv, const char *const *shorts,
                                 int *out_argc, char ***out);

/* Every flag the parser knows, with whether it takes a value (ending with
 * {NULL}), for the tests that compare it with --help. */
const struct ds_cli_option *ds_collective_args_flags(void);

/* "allreduce", "broadcast", ...: --op's spelling of op. */
const char *ds_collective_op_name(enum ds_collective_op op);

/* One size's result, as the sweep's table prints it. */
struct ds_collective_result {
  enum ds_collective_op op;
  const char *algo, *proto; /* NCCL_ALGO's and NCCL_PROTO's values, or "auto" */
  int32_t nranks;
  size_t size_bytes, count;
  double time_us, algbw_gbps, busbw_gbps;
  unsigned long long wrong;
};

/* Writes r as one row of the sweep's output in format (text: nccl-tests'
 * columns; CSV: a line; JSON: an object, after ",\n" unless first).
 * algo and proto are the user's environment, in NCCL's syntax a list
 * ("Tree,Ring", "^NVLS,CollnetDirect"): CSV-quoted and JSON-escaped
 * (base/textout.h), so they stay one field. Plain C, so a CPU test checks
 * it (collective.cu calls it). Returns 0, or EOF on a write error. */
int ds_collective_result_write(FILE *fp, enum ds_collective_format format,
                               const struct ds_collective_result *r, int first);

#ifdef __cplusplus
}
#endif

#endif /* DS_REAL_COLLECTIVE_ARGS_H */
