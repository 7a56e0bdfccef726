/*
 * `ddpsim collective`'s options (see collbench_args.h): the usage, the
 * table of its flags, and the parser that reads and validates them, refusing
 * before anything is read or run what cannot run or would be ignored.
 */
#include "sim/cmd/collbench_args.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/lookup.h"
#include "base/gnuplot.h"
#include "base/nccltests.h"
#include "base/outputs.h"
#include "base/units.h"

static const char usage[] =
    "usage: ddpsim collective --topo TOPOLOGY [options]\n"
    "\n"
    "Simulates one collective alone over a range of sizes and prints an\n"
    "nccl-tests style table (time, algbw, busbw).\n"
    "algbw = size / time; busbw = algbw x nccl-tests' bus factor for N ranks:\n"
    "allreduce 2(N-1)/N; allgather, reducescatter, gather, scatter, alltoall\n"
    "(N-1)/N; broadcast, reduce, sendrecv 1 (docs/collectives.md).\n"
    "\n"
    "  --topo FILE|NAME       topology YAML (a path, or a name in topologies/; - is\n"
    "                         refused: its GPU table is looked for beside it)\n"
    "  --op OP                allreduce (default), broadcast, reduce, allgather,\n"
    "                         reducescatter, gather, scatter, alltoall, sendrecv.\n"
    "                         -b/-e sizes are the buffer as nccl-tests counts it\n"
    "                         (all-gather, gather: received; reduce-scatter, scatter,\n"
    "                         alltoall: sent, S/N to each rank; sendrecv: the message\n"
    "                         each rank sends to the next)\n"
    "  --root R               root rank of broadcast, reduce, gather, scatter and\n"
    "                         the reduce-broadcast all-reduce (default 0)\n"
    "  --algo ALGO            algorithm (default ring; p2p for gather, scatter,\n"
    "                         alltoall, sendrecv).\n"
    "                         allreduce: ring, tree (NCCL's double binary tree), nvls\n"
    "                         (in-switch reduction; NVLS-capable NVSwitch; across\n"
    "                         nodes NCCL's NVLSTree, a tree over the nodes' heads),\n"
    "                         direct (all-to-all reduce-scatter + all-gather),\n"
    "                         reduce-broadcast (all to rank --root and back),\n"
    "                         hierarchical (in-node ring reduce-scatter, ring\n"
    "                         all-reduce across nodes per local rank, in-node\n"
    "                         all-gather), or auto: NCCL's choice of algorithm (ring,\n"
    "                         tree, nvls) and protocol per size by its cost model\n"
    "                         (v2.30.7 constants). The algo/proto columns say what ran.\n"
    "                         Ring kinds across nodes run one ring per NIC (S/K each),\n"
    "                         on a box with unequal links the fastest ring order\n"
    "                         (ddpsim topo prints them; docs/collectives.md).\n"
    "                         broadcast, reduce: ring (NCCL's only one for them), or\n"
    "                         auto: the ring with the protocol NCCL picks per size\n";

/* two strings: C99 guarantees literals up to 4095 characters */
static const char usage_rest[] =
    "  --proto none|LL|LL128|Simple|auto|SET  NCCL protocol (default: none with\n"
    "                         --algo ring or tree, auto with auto or nvls; direct,\n"
    "                         reduce-broadcast and hierarchical have none).\n"
    "                         allgather and reducescatter: the ring's protocols;\n"
    "                         broadcast and reduce: a chain on the ring's protocols,\n"
    "                         as DDP's buffer broadcast runs (NCCL's channels for\n"
    "                         the size: small ones run on fewer);\n"
    "                         alltoall and sendrecv: NCCL's p2p (LL or Simple, LL up\n"
    "                         to 16 KiB per channel). none: the\n"
    "                         plain algorithm (one channel, the links' own latency);\n"
    "                         a protocol: NCCL's channels, wire overhead, caps and\n"
    "                         latencies for every size; auto:\n"
    "                         the protocol NCCL's model picks for each size; SET:\n"
    "                         NCCL_PROTO's allowed protocols (LL,Simple; ^LL128 for\n"
    "                         all but LL128; not p2p's): NCCL's pick among them. Needs\n"
    "                         the GPU table's arch Volta to Blackwell (NCCL's tuning\n"
    "                         rows); else auto runs the plain ring and says so\n"
    "  --nccl-extra measured|none  with a protocol: add the mechanisms NCCL's model\n"
    "                         leaves out (launch, Simple slice syncs, NVLS pipeline;\n"
    "                         fitted on 8x A100; default measured; broadcast and\n"
    "                         reduce: the launch only; docs/collectives.md); measured\n"
    "                         refused with --proto none (nothing to add to)\n"
    "  -b, --minbytes SIZE    smallest size, e.g. 8, 1K, 32MiB (default 8)\n"
    "  -e, --maxbytes SIZE    largest size (default 128M)\n"
    "  -f, --stepfactor X     multiply the size by X each step, > 1 (default 2).\n"
    "                         Rows as nccl-tests sizes them: whole floats; allgather,\n"
    "                         reducescatter, alltoall, gather, scatter: each rank's\n"
    "                         share down to 16 bytes, count per rank (0: nothing runs)\n"
    "  -g, --ranks N          ranks, on the first N GPUs, 2 or more (default: every GPU)\n"
    "  --coll-model auto|flow|aggregate  ring, tree and NVLSTree (and\n"
    "                         hierarchical's ring phases) per flow or aggregated\n"
    "                         (default auto: flow up to 64 ranks; nvls on one node,\n"
    "                         direct and reduce-broadcast always run per flow)\n"
    "  --net maxmin|alpha-beta  link sharing model (default maxmin)\n"
    "  --ring-chunks N        pipelined chunks per step of the plain algorithms\n"
    "                         (proto none: the ring kinds, hierarchical's rings, the\n"
    "                         chains; at least N pieces of the plain tree; a piece\n"
    "                         holds 4 bytes at least), flow only\n"
    "                         (default 1); refused under NCCL's protocols, which\n"
    "                         pipeline by NCCL's own chunks, and where there is no\n"
    "                         ring step\n"
    "  --format text|csv|json (default text)\n"
    "  --plot FILE.png|.svg   draw busbw against size (gnuplot), one curve per\n"
    "                         op/algo/proto of the rows printed\n"
    "  --reference CSV        with --plot: a measured table's points (nccl-tests'\n"
    "                         size and busbw columns; docs/collectives.md); rows\n"
    "                         whose n_ranks column is not the run's left out; a\n"
    "                         table whose op column names another op than --op\n"
    "                         refused; one without an op column (nccl-tests') is\n"
    "                         not checked: give it the --op it was measured for;\n"
    "                         -: read from standard input\n"
    "  --help\n";

/* Rows of one table: nccl-tests' own sweeps have a few dozen. */
#define MAX_SIZES 1000

static ds_status parse_size(const char *flag, const char *v, double *out,
                            struct ds_err *err) {
  if (ds_units_parse_bytes(v, out) != DS_OK || *out < DS_NCCLTESTS_ELEM_BYTES || *out > 1e15)
    return ds_cli_bad_value(err, flag, "a size of at least 4 bytes and at most 1e15, e.g. 8, "
                            "1K, 32MiB, 1G", v);
  return DS_OK;
}

static ds_status parse_int(const char *flag, const char *v, int32_t lo,
                           int32_t hi, int32_t *out, struct ds_err *err) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || x < lo || x > hi) {
    char what[64];
    snprintf(what, sizeof what, "an integer from %d to %d", lo, hi);
    return ds_cli_bad_value(err, flag, what, v);
  }
  *out = (int32_t)x;
  return DS_OK;
}


/* Every flag collective knows (base/cli.h): its parser refuses the others
 * and says which of these is missing its value. */
static const struct ds_cli_option options[] = {
    {"--topo", 1, NULL}, {"--op", 1, NULL}, {"--root", 1, NULL}, {"--algo", 1, NULL},
    {"--proto", 1, NULL}, {"--nccl-extra", 1, NULL}, {"-b", 1, "--minbytes"},
    {"--minbytes", 1, NULL}, {"-e", 1, "--maxbytes"}, {"--maxbytes", 1, NULL},
    {"-f", 1, "--stepfactor"}, {"--stepfactor", 1, NULL}, {"-g", 1, "--ranks"},
    {"--ranks", 1, NULL}, {"--ring-chunks", 1, NULL}, {"--coll-model", 1, NULL}, {"--net", 1, NULL},
    {"--plot", 1, NULL}, {"--reference", 1, NULL}, {"--format", 1, NULL}, {"--help", 0, NULL},
    {"-h", 0, "--help"}, {NULL, 0, NULL}};

const struct ds_cli_option *ds_collbench_options(void) { return options; }

/* ds_cli_parse_split's parse: the words, "--flag=value" already split. */
static ds_status parse_words(int argc, char **argv, void *ctx, struct ds_err *err) {
  struct ds_collbench_args *o = ctx;
  *o = (struct ds_collbench_args){.op = "allreduce", .algo = "ring",
                                  .min_bytes = 8, .max_bytes = 128.0 * 1024 * 1024,
                                  .factor = 2, .ring_chunks = 1, .nccl_extra = 1};
  /* collective takes no positional: a plain word is an unknown option,
   * named as an argument too many when it is the last word */
  struct ds_cli_walk w = {.program = "ddpsim collective", .options = options,
                          .positionals = DS_CLI_POSITIONALS_PLAIN};
  for (int i = 1; i < argc; i++) {
    const char *f, *v;
    DS_CHECK(ds_cli_next_word(&w, argc, argv, &i, &f, &v, err));
    if (!f)
      return i + 1 < argc ? ds_cli_unknown_option(err, options, v, w.program)
                          : ds_err_set(err, DS_EUSAGE, "unexpected argument \"%s\" (see --help)", v);
    if (ds_cli_is_help(f)) o->help = 1;
    else if (strcmp(f, "--topo") == 0) {
      DS_CHECK(ds_lookup_refuse_stdin("topologies", "option --topo", v, err));
      o->topo = v;
    }
    else if (strcmp(f, "--op") == 0) o->op = v;
    else if (strcmp(f, "--root") == 0) {
      DS_CHECK(parse_int(f, v, 0, (1 << 20) - 1, &o->root, err));
      o->root_set = 1;
    }
    else if (strcmp(f, "--algo") == 0) {
      o->algo = v;
      o->algo_set = 1;
    } else if (strcmp(f, "--proto") == 0) {
      DS_CHECK(ds_proto_flag_parse(f, v, &o->proto, err));
      o->proto_set = 1;
    } else if (strcmp(f, "--nccl-extra") == 0) {
      o->nccl_extra_set = 1;
      if (strcmp(v, "measured") == 0) o->nccl_extra = 1;
      else if (strcmp(v, "none") == 0) o->nccl_extra = 0;
      else return ds_cli_bad_value(err, f, "one of measured, none", v);
    }
    else if (strcmp(f, "-b") == 0 || strcmp(f, "--minbytes") == 0)
      DS_CHECK(parse_size(f, v, &o->min_bytes, err));
    else if (strcmp(f, "-e") == 0 || strcmp(f, "--maxbytes") == 0)
      DS_CHECK(parse_size(f, v, &o->max_bytes, err));
    else if (strcmp(f, "-f") == 0 || strcmp(f, "--stepfactor") == 0) {
      if (ds_units_parse_number(v, &o->factor) != DS_OK || !(o->factor > 1) ||
          o->factor > 1e6)
        return ds_cli_bad_value(err, f, "a factor greater than 1 and at most 1e6, e.g. 2", v);
    } else if (strcmp(f, "-g") == 0 || strcmp(f, "--ranks") == 0) {
      /* 2 or more, as --help says; one rank gets its reason */
      struct ds_err scratch = {0};
      int32_t one = 0;
      if (parse_int(f, v, 1, 1, &one, &scratch) == DS_OK)
        return ds_err_set(err, DS_EUSAGE, "option %s: one rank, but a collective needs two "
                          "or more (%s): give %s 2 or more", f, DS_COLLBENCH_ONE_RANK_WHY, f);
      DS_CHECK(parse_int(f, v, 2, 1 << 20, &o->ranks, err));
    }
    else if (strcmp(f, "--ring-chunks") == 0)
      DS_CHECK(parse_int(f, v, 1, 1 << 16, &o->ring_chunks, err));
    else if (strcmp(f, "--coll-model") == 0) {
      if (strcmp(v, "auto") == 0) o->coll_model = DS_COLL_CHOICE_AUTO;
      else if (strcmp(v, "flow") == 0) o->coll_model = DS_COLL_CHOICE_FLOW;
      else if (strcmp(v, "aggregate") == 0) o->coll_model = DS_COLL_CHOICE_AGGREGATE;
      else return ds_cli_bad_value(err, f, "one of auto, flow, aggregate", v);
    } else if (strcmp(f, "--net") == 0) {
      if (strcmp(v, "maxmin") == 0) o->net_mode = DS_NET_MAXMIN;
      else if (strcmp(v, "alpha-beta") == 0) o->net_mode = DS_NET_CONSTANT;
      else return ds_cli_bad_value(err, f, "one of maxmin, alpha-beta", v);
    } else if (strcmp(f, "--plot") == 0) {
      if (!ds_gnuplot_terminal(v))
        return ds_cli_bad_value(err, f, "a file name ending in .png or .svg", v);
      o->plot = v;
    } else if (strcmp(f, "--reference") == 0) {
      o->reference = v;
    } else if (strcmp(f, "--format") == 0) {
      if (strcmp(v, "text") == 0) o->format = DS_FORMAT_TEXT;
      else if (strcmp(v, "csv") == 0) o->format = DS_FORMAT_CSV;
      else if (strcmp(v, "json") == 0) o->format = DS_FORMAT_JSON;
      else return ds_cli_bad_value(err, f, "one of text, csv, json", v);
    } else {
      return ds_cli_unhandled(err, f);
    }
  }
  if (o->help) return DS_OK;
  if (o->reference && !o->plot)
    return ds_err_set(err, DS_EUSAGE, "option --reference: it adds points to --plot: give "
                      "--plot FILE.png|.svg too");
  if (!o->topo) return ds_err_set(err, DS_EUSAGE, "missing --topo (see --help)");
  /* -e 1M -f 1.0000001 asked for 1.2e8 identical rows (issue #15, defect 8). */
  double n_sizes = o->max_bytes >= o->min_bytes
                       ? floor(log(o->max_bytes / o->min_bytes) / log(o->factor)) + 1 : 0;
  if (n_sizes > MAX_SIZES)
    return ds_err_set(err, DS_EUSAGE,
                      "options -b, -e and -f: %.0f sizes from %g to %g bytes; at most %d "
                      "(give a larger -f)", n_sizes, o->min_bytes, o->max_bytes, MAX_SIZES);
  const struct ds_path_arg outs[] = {{"--plot", o->plot}}, ins[] = {{"--reference", o->reference}};
  DS_CHECK(ds_outputs_check(outs, 1, ins, 1, err));
  o->desc = ds_coll_desc_find(o->op);
  if (o->desc && o->desc->kind == DS_COLL_SEND)
    return ds_err_set(err, DS_EUSAGE,
                      "option --op: send is one side of a point-to-point pair, which "
                      "ddpsim collective does not time alone: --op sendrecv times every "
                      "rank sending to the next");
  if (!o->desc) {
    static const char *const ops[] = {"allreduce", "broadcast", "reduce", "allgather",
                                      "reducescatter", "gather", "scatter", "alltoall",
                                      "sendrecv", NULL};
    const char *near = ds_cli_closest(o->op, ops);
    char hint[64] = "";
    if (near) snprintf(hint, sizeof hint, " (did you mean %s?)", near);
    return ds_err_set(err, DS_EUSAGE,
                      "option --op: unknown operation \"%s\"%s; the operations: allreduce, "
                      "broadcast, reduce, allgather, reducescatter, gather, scatter, "
                      "alltoall, sendrecv", o->op, hint);
  }
  if (o->root_set && !o->desc->rooted &&
      !(o->desc->kind == DS_COLL_ALLREDUCE && strcmp(o->algo, "reduce-broadcast") == 0))
    return ds_err_set(err, DS_EUSAGE, "option --root: %s has no root", o->op);
  if (o->desc->kind != DS_COLL_ALLREDUCE) {
    if (!o->algo_set) o->algo = o->desc->algo;
    /* broadcast and reduce: NCCL runs them on the ring only, so auto is
     * the ring with NCCL's protocol per size */
    if (strcmp(o->algo, "auto") == 0 && ds_coll_kind_is_chain(o->desc->kind)) o->bcast_auto = 1;
    else if (strcmp(o->algo, o->desc->algo) != 0)
      /* NCCL picks no algorithm for these (one each), only the protocol:
       * --proto auto is its model for them */
      return ds_err_set(err, DS_EUSAGE,
                        "option --algo: \"%s\" is not simulated for %s by this version "
                        "(%s runs %s; auto: allreduce, broadcast and reduce only)%s",
                        o->algo, o->op, o->op, o->desc->algo,
                        strcmp(o->algo, "auto") == 0 && ds_coll_kind_has_protocols(o->desc->kind)
                            ? "; for NCCL's model of it (protocol per size, launch cost) "
                              "use --proto auto"
                            : "");
    if (o->proto_set && o->proto.choice != DS_PROTO_CHOICE_NONE &&
        !ds_coll_kind_has_protocols(o->desc->kind))
      return ds_err_set(err, DS_EUSAGE,
                        "option --proto: NCCL's protocols are simulated for allreduce, "
                        "broadcast, reduce, allgather, reducescatter, alltoall and "
                        "sendrecv, not %s (use --proto none)", o->op);
    if (ds_collbench_is_p2p(o->desc->kind) && o->proto.choice == DS_PROTO_CHOICE_FIXED &&
        o->proto.fixed == DS_PROTO_LL128)
      return ds_err_set(err, DS_EUSAGE,
                        "option --proto LL128: NCCL's p2p (%s) runs LL or Simple only",
                        o->op);
    /* NCCL_PROTO feeds the collectives' tuning model (tuning.cc); p2p's
     * LL or Simple is enqueue.cc's size rule (P2P_LL_THRESHOLD), which
     * does not read it */
    if (ds_collbench_is_p2p(o->desc->kind) && o->proto.disabled)
      return ds_err_set(err, DS_EUSAGE,
                        "option --proto: a set of protocols is NCCL_PROTO, which NCCL's p2p "
                        "(%s) does not read (it picks LL or Simple by size): use auto, LL "
                        "or Simple", o->op);
  }
  int algo_auto = strcmp(o->algo, "auto") == 0;
  /* broadcast and reduce have one algorithm: auto is the ring, the
   * protocol NCCL's model picks per size */
  if (o->bcast_auto) o->algo = o->desc->algo;
  if (o->desc->kind == DS_COLL_ALLREDUCE) {
    o->ar_auto = algo_auto;
    if (!algo_auto && ds_ar_algo_parse(o->algo, &o->ar_algo) != DS_OK)
      return ds_cli_bad_value(err, "--algo",
                              "one of ring, tree, nvls, direct, reduce-broadcast, "
                              "hierarchical, auto", o->algo);
  } else if (strcmp(o->algo, "p2p") != 0 && strcmp(o->algo, "ring") != 0) {
    return ds_err_set(err, DS_EUSAGE, "option --algo: \"%s\" is not simulated for %s",
                      o->algo, o->op);
  }
  int nccl_only = o->ar_algo == DS_AR_NVLS && !algo_auto;
  int no_proto = !algo_auto && (o->ar_algo == DS_AR_DIRECT ||
                                o->ar_algo == DS_AR_REDUCE_BCAST || o->ar_algo == DS_AR_HIER);
  if (!o->proto_set)
    o->proto.choice = algo_auto || nccl_only ? DS_PROTO_CHOICE_AUTO : DS_PROTO_CHOICE_NONE;
  if (no_proto && o->proto.choice != DS_PROTO_CHOICE_NONE)
    return ds_err_set(err, DS_EUSAGE,
                      "option --proto: NCCL has no %s algorithm, so no protocol: it runs on "
                      "the links' own bandwidth and latency (use --proto none)", o->algo);
  /* nvls needs Simple admitted; the message says which way it is not */
  if (nccl_only && !ds_proto_flag_admits(&o->proto, DS_PROTO_SIMPLE)) {
    if (o->proto.choice == DS_PROTO_CHOICE_NONE)
      return ds_err_set(err, DS_EUSAGE,
                        "option --proto: nvls runs only under NCCL's model, with Simple "
                        "(use --proto Simple or auto)");
    if (o->proto.choice == DS_PROTO_CHOICE_FIXED)
      return ds_err_set(err, DS_EUSAGE, "option --proto %s: NCCL runs nvls with Simple only",
                        ds_proto_name(o->proto.fixed));
    return ds_err_set(err, DS_EUSAGE,
                      "option --proto: NCCL runs nvls with Simple only, and the set leaves "
                      "Simple out");
  }
  if (algo_auto && o->proto.choice == DS_PROTO_CHOICE_NONE)
    return ds_err_set(err, DS_EUSAGE,
                      "option --proto: none is the plain ring, not an NCCL choice: "
                      "use --algo ring --proto none, or a protocol with --algo auto");
  /* The extras are added to NCCL's model; the plain algorithm has none, so
   * only measured ones are refused there (none is what it runs). */
  char what[64];
  snprintf(what, sizeof what, "%s %s", o->op, o->algo);
  if (o->nccl_extra_set && o->nccl_extra && o->proto.choice == DS_PROTO_CHOICE_NONE)
    return ds_nccl_extra_refuse(what, o->desc->kind == DS_COLL_ALLREDUCE
                                          ? !no_proto : ds_coll_kind_has_protocols(o->desc->kind),
                                err);
  /* where there is no ring step; under NCCL's model make_plan refuses */
  enum ds_ring_chunks_use use =
      ds_coll_ring_chunks_use(o->desc->kind, algo_auto ? DS_AR_RING : o->ar_algo, 0);
  if (o->ring_chunks > 1 && use != DS_RING_CHUNKS_CUT)
    return ds_ring_chunks_refuse(use, what, &o->proto, err);
  if (o->max_bytes < o->min_bytes)
    return ds_err_set(err, DS_EUSAGE, "option -e: %.0f bytes is below -b %.0f bytes",
                      o->max_bytes, o->min_bytes);
  return DS_OK;
}

int ds_collbench_is_p2p(enum ds_coll_kind k) {
  return k == DS_COLL_SENDRECV || k == DS_COLL_ALLTOALL;
}

ds_status ds_collbench_args_parse(int argc, char **argv, struct ds_collbench_args *o,
                                  struct ds_err *err) {
  return ds_cli_parse_split(options, argc, argv, parse_words, o, err);
}

void ds_collbench_args_usage(FILE *out) {
  fputs(usage, out);
  fputs(usage_rest, out);
}

ds_status ds_collbench_check_args(int argc, char **argv, struct ds_err *err) {
  struct ds_collbench_args o;
  return ds_cli_parse_split(options, argc, argv, parse_words, &o, err);
}
