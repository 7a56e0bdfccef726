/*
 * `ddpsim collective`'s options: what the command was asked (struct
 * ds_collbench_args), read and validated from argv by one parser that
 * refuses what cannot run and what would be ignored (--ring-chunks under
 * NCCL's protocols or without ring steps, --nccl-extra with the plain
 * algorithm, an unknown --op with its nearest name), and the usage text.
 * sim/cmd/collbench.c runs what it says.
 */
#ifndef DS_COLLBENCH_ARGS_H
#define DS_COLLBENCH_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "base/cli.h"
#include "base/status.h"
#include "sim/cli/options.h"
#include "sim/cli/proto_flag.h"
#include "sim/cli/report.h"
#include "sim/coll/coll.h"
#include "sim/net/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What `ddpsim collective` was asked, validated (ds_collbench_args_parse). */
/* Why a collective of one rank is refused (by -g 1 and by a one-GPU
 * topology): NCCL's collectives of one rank move nothing between GPUs
 * (src/enqueue.cc, src/device/onerank.cu ncclLaunchOneRank). */
#define DS_COLLBENCH_ONE_RANK_WHY                                             \
  "NCCL's one-rank all-reduce is a device copy out of place and nothing in " \
  "place, not a communication ddpsim prices"

struct ds_collbench_args {
  const char *topo;
  const char *op;
  const struct ds_coll_desc *desc; /* of op */
  int32_t root;     /* rooted ops */
  int root_set;
  const char *algo; /* an all-reduce algorithm or "auto"; "p2p" for gather, scatter */
  int algo_set;
  enum ds_ar_algo ar_algo; /* allreduce: what --algo names (ring with auto) */
  int ar_auto;             /* allreduce --algo auto: NCCL's choice of algorithm */
  int bcast_auto;          /* broadcast, reduce --algo auto: the ring, NCCL's protocol */
  /* --proto: none (plain ring), one protocol, or NCCL's choice per size
   * (among a set's protocols when it disables any); its choice resolved
   * from --algo when not given (proto_set 0) */
  struct ds_proto_flag proto;
  int proto_set;
  int nccl_extra; /* add the mechanisms NCCL's model leaves out */
  int nccl_extra_set; /* --nccl-extra given */
  double min_bytes, max_bytes, factor;
  int32_t ranks; /* 0: every GPU; else 2 or more (-g 1 is refused) */
  enum ds_coll_choice coll_model;
  enum ds_net_mode net_mode;
  int32_t ring_chunks;
  enum ds_format format;
  const char *plot;      /* --plot FILE: busbw against size (collbench_plot.h) */
  const char *reference; /* --reference CSV: measured points on the plot */
  int help;
};

/* Parses argv (argv[0] "collective") into *o and validates it; DS_EUSAGE
 * naming the flag. Reads no file. */
ds_status ds_collbench_args_parse(int argc, char **argv, struct ds_collbench_args *o,
                                  struct ds_err *err);

/* The --help text. */
void ds_collbench_args_usage(FILE *out);

/* Kinds NCCL runs as grouped sends and receives (sendrecv, alltoall). */
int ds_collbench_is_p2p(enum ds_coll_kind k);

/* Parses and validates argv as ds_collbench_main does (--plot's file
 * checked as an output), then stops: no topology or table is read, nothing
 * runs. What the `subcmd` fuzz reader drives (fuzz/README.md). */
ds_status ds_collbench_check_args(int argc, char **argv, struct ds_err *err);

/* Every flag `ddpsim collective` knows, with whether it takes a value (ending with
 * {NULL}): what its parser accepts, for the tests that compare it with
 * its --help. */
const struct ds_cli_option *ds_collbench_options(void);

#ifdef __cplusplus
}
#endif

#endif /* DS_COLLBENCH_ARGS_H */
