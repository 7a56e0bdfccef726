/*
 * `ddpsim collective` (see collbench.h). Every size is a fresh simulation:
 * its own engine and network, all ranks entering at t = 0, the time reported
 * being the last rank's finish, as nccl-tests times from before the launch
 * on every rank to after the last rank's completion.
 */
#include "sim/cli/collbench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/gnuplot.h"
#include "base/outputs.h"
#include "base/textout.h"
#include "sim/coll/coll.h"
#include "sim/cli/collbench_plot.h"
#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "base/lookup.h"
#include "sim/coll/nccl_model.h"
#include "sim/net/net.h"
#include "sim/cli/options.h"
#include "sim/cli/report.h"
#include "sim/net/topo.h"
#include "base/units.h"

#define FLOAT_BYTES 4

struct collbench_options {
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
  int32_t ranks; /* 0: every GPU */
  enum ds_coll_choice coll_model;
  enum ds_net_mode net_mode;
  int32_t ring_chunks;
  enum ds_format format;
  const char *plot;      /* --plot FILE: busbw against size (collbench_plot.h) */
  const char *reference; /* --reference CSV: measured points on the plot */
  int help;
};

static const char usage[] =
    "usage: ddpsim collective --topo TOPOLOGY [options]\n"
    "\n"
    "Simulates one collective alone over a range of sizes and prints an\n"
    "nccl-tests style table (time, algbw, busbw).\n"
    "\n"
    "  --topo FILE|NAME       topology YAML (a path, or a name in topologies/)\n"
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
    "                         reduce: the launch only; docs/collectives.md); refused\n"
    "                         with --proto none (nothing to add to)\n"
    "  -b, --minbytes SIZE    smallest size, e.g. 8, 1K, 32MiB (default 8)\n"
    "  -e, --maxbytes SIZE    largest size (default 128M)\n"
    "  -f, --stepfactor X     multiply the size by X each step, > 1 (default 2)\n"
    "  -g, --ranks N          ranks, on the first N GPUs (default: every GPU)\n"
    "  --coll-model auto|flow|aggregate  ring, tree and NVLSTree (and\n"
    "                         hierarchical's ring phases) per flow or aggregated\n"
    "                         (default auto: flow up to 64 ranks; nvls on one node,\n"
    "                         direct and reduce-broadcast always run per flow)\n"
    "  --net maxmin|alpha-beta  link sharing model (default maxmin)\n"
    "  --ring-chunks N        pipelined chunks per step of the plain algorithms\n"
    "                         (proto none: the ring kinds, hierarchical's rings, the\n"
    "                         chains; at least N pieces of the plain tree), flow only\n"
    "                         (default 1); refused under NCCL's protocols, which\n"
    "                         pipeline by NCCL's own chunks, and where there is no\n"
    "                         ring step\n"
    "  --format text|csv|json (default text)\n"
    "  --plot FILE.png|.svg   draw busbw against size (gnuplot), one curve per\n"
    "                         op/algo/proto of the rows printed\n"
    "  --reference CSV        with --plot: a measured table's points (nccl-tests'\n"
    "                         size and busbw columns; docs/collectives.md)\n"
    "  --help\n";

/* Rows of one table: nccl-tests' own sweeps have a few dozen. */
#define MAX_SIZES 1000

static ds_status parse_size(const char *flag, const char *v, double *out,
                            struct ds_err *err) {
  if (ds_units_parse_bytes(v, out) != DS_OK || *out < FLOAT_BYTES || *out > 1e15)
    return ds_cli_bad_value(err, flag, "a size of at least 4 bytes, e.g. 8, 1K, 32MiB, 1G", v);
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

/* Kinds NCCL runs as grouped sends and receives. */
static int is_p2p_kind(enum ds_coll_kind k) {
  return k == DS_COLL_SENDRECV || k == DS_COLL_ALLTOALL;
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
  struct collbench_options *o = ctx;
  *o = (struct collbench_options){.op = "allreduce", .algo = "ring",
                                  .min_bytes = 8, .max_bytes = 128.0 * 1024 * 1024,
                                  .factor = 2, .ring_chunks = 1, .nccl_extra = 1};
  struct ds_cli_seen seen = {0};
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    DS_CHECK(ds_cli_split_refused(f)); /* a "--flag=" the split refused, in its turn */
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      o->help = 1;
      continue;
    }
    if (i + 1 >= argc)
      return f[0] == '-' ? ds_cli_missing_value(err, f, options, "ddpsim collective")
                         : ds_err_set(err, DS_EUSAGE, "unexpected argument \"%s\" (see --help)", f);
    const char *v = argv[++i];
    /* A repeated flag is refused, not silently replaced (issue #15). */
    DS_CHECK(ds_cli_once(&seen, options, f, err));
    if (!ds_cli_option_find(options, f)) return ds_cli_unknown_option(err, f, "ddpsim collective");
    if (strcmp(f, "--topo") == 0) o->topo = v;
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
    } else if (strcmp(f, "-g") == 0 || strcmp(f, "--ranks") == 0)
      DS_CHECK(parse_int(f, v, 1, 1 << 20, &o->ranks, err));
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
      return ds_err_set(err, DS_EUSAGE,
                        "option --algo: \"%s\" is not simulated for %s by this version "
                        "(%s runs %s; auto: allreduce, broadcast and reduce only)",
                        o->algo, o->op, o->op, o->desc->algo);
    if (o->proto_set && o->proto.choice != DS_PROTO_CHOICE_NONE &&
        !ds_coll_kind_has_protocols(o->desc->kind))
      return ds_err_set(err, DS_EUSAGE,
                        "option --proto: NCCL's protocols are simulated for allreduce, "
                        "broadcast, reduce, allgather, reducescatter, alltoall and "
                        "sendrecv, not %s (use --proto none)", o->op);
    if (is_p2p_kind(o->desc->kind) && o->proto.choice == DS_PROTO_CHOICE_FIXED &&
        o->proto.fixed == DS_PROTO_LL128)
      return ds_err_set(err, DS_EUSAGE,
                        "option --proto LL128: NCCL's p2p (%s) runs LL or Simple only",
                        o->op);
    /* NCCL_PROTO feeds the collectives' tuning model (tuning.cc); p2p's
     * LL or Simple is enqueue.cc's size rule (P2P_LL_THRESHOLD), which
     * does not read it */
    if (is_p2p_kind(o->desc->kind) && o->proto.disabled)
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
  /* The extras are added to NCCL's model; the plain algorithm has none. */
  if (o->nccl_extra_set && o->proto.choice == DS_PROTO_CHOICE_NONE) {
    int has_protocols = o->desc->kind == DS_COLL_ALLREDUCE
                            ? !no_proto : ds_coll_kind_has_protocols(o->desc->kind);
    if (has_protocols)
      return ds_err_set(err, DS_EUSAGE,
                        "option --nccl-extra: it adds the mechanisms NCCL's model leaves out "
                        "to that model, but --proto none runs %s %s as the plain algorithm, "
                        "without it: drop --nccl-extra, or give a protocol (--proto auto)",
                        o->op, o->algo);
    return ds_err_set(err, DS_EUSAGE,
                      "option --nccl-extra: it adds the mechanisms NCCL's model leaves out "
                      "to that model, which does not run %s %s (NCCL has no protocol for "
                      "it): drop --nccl-extra", o->op, o->algo);
  }
  /* --ring-chunks cuts a ring step (or the plain chain) into pieces; these
   * have no ring step to cut, so it would be ignored */
  int no_ring_step = o->desc->kind == DS_COLL_GATHER || o->desc->kind == DS_COLL_SCATTER ||
                     is_p2p_kind(o->desc->kind) ||
                     (o->desc->kind == DS_COLL_ALLREDUCE && !algo_auto &&
                      (o->ar_algo == DS_AR_DIRECT || o->ar_algo == DS_AR_REDUCE_BCAST));
  if (o->ring_chunks > 1 && no_ring_step)
    return ds_err_set(err, DS_EUSAGE,
                      "option --ring-chunks: %s %s has no ring step to cut into pieces "
                      "(--ring-chunks pipelines the plain ring, its all-gather and "
                      "reduce-scatter, hierarchical's rings, the broadcast and reduce "
                      "chains and the plain tree)", o->op, o->algo);
  if (o->max_bytes < o->min_bytes)
    return ds_err_set(err, DS_EUSAGE, "option -e: %.0f bytes is below -b %.0f bytes",
                      o->max_bytes, o->min_bytes);
  return DS_OK;
}

/* One all-reduce on its own engine and network. */
struct one_run {
  struct ds_net *net;
  struct ds_coll *coll;
  struct ds_engine *eng;
  int64_t last_done_ns;
  ds_status st; /* first failure inside a callback */
};

static void on_sent(void *owner, uint64_t tag) {
  struct one_run *r = owner;
  ds_status st = ds_coll_flow_sent(r->coll, (int32_t)(tag & 0xffffffffu));
  if (r->st == DS_OK) r->st = st;
}

static void on_delivered(void *owner, uint64_t tag) {
  struct one_run *r = owner;
  ds_status st = ds_coll_flow_done(r->coll, (int32_t)(tag & 0xffffffffu));
  if (r->st == DS_OK) r->st = st;
}

static void on_member_done(void *owner, int32_t member) {
  struct one_run *r = owner;
  (void)member;
  r->last_done_ns = ds_engine_now(r->eng);
}

static void handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)eng;
  ds_net_handle_event(((struct one_run *)ctx)->net, ev);
}

/* One collective of `bytes` alone, all members entering at t = 0; *out_ns
 * is the last member's finish. chain_chunks: a broadcast's or reduce's
 * pieces under NCCL's protocol (ds_nccl_chain); 0 for the plain chain's. */
static ds_status time_coll(struct ds_topo *topo, const struct ds_ring *ring,
                           const struct collbench_options *o,
                           enum ds_coll_model model, double bytes, enum ds_ar_algo algo,
                           const struct ds_coll_proto *proto, int32_t chain_chunks,
                           int64_t *out_ns, struct ds_err *err) {
  struct one_run r = {0};
  ds_status st;
  DS_CHECK_GOTO(ds_engine_new(0, handle, &r, &r.eng), st, out);
  DS_CHECK_GOTO(ds_net_new(topo, r.eng, o->net_mode, on_delivered, on_sent, &r,
                           &r.net), st, out);
  enum ds_coll_kind k = o->desc->kind;
  struct ds_coll_spec spec = {
      .kind = k, .topo = topo, .ring = ring, .net = r.net, .model = model,
      /* --ring-chunks pipelines the plain algorithms; under a protocol
       * the pieces are NCCL's (make_plan refuses the two together) */
      .chunks = chain_chunks > 0 ? chain_chunks
                : proto ? 1
                : ds_coll_kind_is_chain(k) ? ds_coll_chain_chunks(bytes, o->ring_chunks)
                                   : o->ring_chunks,
      .bytes = bytes, .root = o->root, .proto = proto, .algo = algo, .tag_base = 0,
      .on_done = on_member_done, .owner = &r,
      .alone = 1 /* every member enters at t = 0 on a net of its own */};
  DS_CHECK_GOTO(ds_coll_new(&spec, &r.coll, err), st, out);
  for (int32_t i = 0; i < ring->n && !ds_engine_overflowed(r.eng); i++)
    DS_CHECK_GOTO(ds_coll_enter(r.coll, i), st, overflow);
  DS_CHECK_GOTO(ds_engine_run(r.eng, INT64_MAX), st, overflow);
  st = r.st;
  *out_ns = r.last_done_ns;
overflow:
  if (ds_engine_overflowed(r.eng)) st = ds_err_set(err, DS_EINPUT, "%s", DS_ENGINE_OVERFLOW_MSG);
out:
  ds_coll_free(r.coll);
  ds_net_free(r.net);
  ds_engine_free(r.eng);
  return st;
}

struct row {
  double size_bytes;
  double count;
  double time_us;
  double algbw_gbps;
  double busbw_gbps;
  enum ds_proto proto;  /* DS_PROTO_COUNT: the plain algorithm */
  enum ds_ar_algo algo; /* allreduce: what ran */
  int32_t channels;
  double nccl_model_us; /* NCCL's own prediction; < 0 for the plain ring */
};

/* What the sweep runs: the plain ring, or NCCL's model for the ring. */
struct plan {
  int32_t n;
  enum ds_coll_model model;
  int nccl;                  /* rows use a protocol */
  struct ds_nccl_model m;
  struct ds_nccl_p2p p2p;    /* alltoall, sendrecv */
  char fallback[1200];       /* why auto runs the plain ring; "" if it does not */
};

/* What ran: "flow" or "aggregate". Only the ring kinds and, of the
 * all-reduces, the ring, the hierarchical one's rings and the double binary
 * tree aggregate (sim/coll/coll_tree.c: nvls and reduce-broadcast run per flow
 * whatever the model, as direct does). */
static const char *coll_model_of(const struct collbench_options *o, const struct plan *pl,
                                 enum ds_ar_algo algo) {
  int per_flow_only = o->desc->kind == DS_COLL_ALLREDUCE && algo != DS_AR_RING &&
                      algo != DS_AR_HIER && algo != DS_AR_TREE;
  return pl->model == DS_COLL_FLOW || per_flow_only ? "flow" : "aggregate";
}

/* nccl-tests' header: what runs, on which topology, and the columns. */
static void print_text_header(FILE *out, const struct collbench_options *o,
                              const struct ds_topo *topo, const struct plan *pl) {
  const char *net = o->net_mode == DS_NET_CONSTANT ? "alpha-beta" : "maxmin";
  const char *exec = pl->model == DS_COLL_FLOW ? "per flow" : "aggregated";
  const char *plain_exec =
      strcmp(coll_model_of(o, pl, o->ar_algo), "flow") == 0 ? "per flow" : "aggregated";
  /* the topology's and GPU's names are the user's: control characters
   * shown as '?', as the summary shows them */
  fprintf(out, "# ddpsim collective: %s, algo %s, %d ranks on ", o->op, o->algo, pl->n);
  ds_textout_put_printable(out, topo->name, 0);
  fprintf(out, " (%d x ", topo->n_gpus);
  ds_textout_put_printable(out, topo->gpu.name, 0);
  fputc(')', out);
  if (o->desc->rooted) fprintf(out, ", root %d", o->root);
  fputc('\n', out);
  if (!pl->nccl) {
    fprintf(out, "# network %s, %s %s; simulated (NCCL protocols and channels not modelled)\n",
            net, o->desc->kind == DS_COLL_ALLREDUCE ? ds_ar_algo_name(o->ar_algo)
                                                    : o->desc->algo, plain_exec);
    if (pl->fallback[0]) { /* it may name the GPU and its architecture */
      fputs("# ", out);
      ds_textout_put_printable(out, pl->fallback, 0);
      fputc('\n', out);
    }
    fprintf(out, "#\n# %12s %12s %6s %10s %8s %8s\n# %12s %12s %6s %10s %8s %8s\n",
            "size", "count", "type", "time", "algbw", "busbw", "(B)", "(elements)", "",
            "(us)", "(GB/s)", "(GB/s)");
    return;
  }
  fprintf(out, "# network %s, %s %s; NCCL %s model: %s, %d node(s), %d channels of %.1f GB/s\n",
          net, is_p2p_kind(o->desc->kind) ? "p2p" : "ring", exec,
          ds_nccl_constants_version(), ds_nccl_arch_name(pl->m.arch), pl->m.nnodes,
          pl->m.channels, pl->m.chan_bw_bytes_per_s / 1e9);
  if (is_p2p_kind(o->desc->kind))
    fprintf(out, "# p2p: %d channels, %d per peer, chunk %.0f KiB, LL up to 16 KiB per "
            "channel; extra effects: %s; ch: channels per transfer; NCCL has no p2p cost "
            "model\n", pl->p2p.p2p_channels, pl->p2p.per_peer_channels,
            pl->p2p.chunk_bytes / 1024, o->nccl_extra ? "launch (fitted on 8x A100)" : "none");
  else
    fprintf(out, "# extra effects: %s; nccl(us): NCCL's own prediction; ch: channels "
            "(tree: per tree)\n",
            o->nccl_extra ? "launch + slice syncs + pipeline fill (fitted on 8x A100)" : "none");
  if (pl->m.proto_disabled) {
    char set[24];
    ds_proto_flag_set_name(pl->m.proto_disabled, ',', set, sizeof set);
    fprintf(out, "# --proto %s: NCCL's choice per size among these protocols only "
            "(NCCL_PROTO)\n", set);
  }
  fprintf(out, "#\n# %12s %12s %6s %10s %8s %8s %5s %6s %3s %10s\n"
          "# %12s %12s %6s %10s %8s %8s %5s %6s %3s %10s\n",
          "size", "count", "type", "time", "algbw", "busbw", "algo", "proto", "ch",
          "nccl", "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)", "", "", "", "(us)");
}

static void print_header(FILE *out, const struct collbench_options *o,
                         const struct ds_topo *topo, const struct plan *pl) {
  switch (o->format) {
  case DS_FORMAT_CSV:
    fputs("op,algo,proto,nranks,size_bytes,count,type,time_us,algbw_gbps,"
          "busbw_gbps,net_model,coll_model,channels,nccl_model_us\n", out);
    break;
  case DS_FORMAT_JSON:
    fputs("[\n", out);
    break;
  default:
    print_text_header(out, o, topo, pl);
    break;
  }
}

static void print_row(FILE *out, const struct collbench_options *o,
                      const struct plan *pl, const struct row *r, int first) {
  const char *net = o->net_mode == DS_NET_CONSTANT ? "alpha-beta" : "maxmin";
  const char *coll = coll_model_of(o, pl, r->algo);
  const char *proto = ds_proto_name(r->proto);
  const char *algo = o->desc->kind == DS_COLL_ALLREDUCE ? ds_ar_algo_name(r->algo)
                                                        : o->desc->algo;
  char pred[32] = "", pred2[32] = "-";
  if (r->nccl_model_us >= 0) snprintf(pred, sizeof pred, "%.3f", r->nccl_model_us);
  if (r->nccl_model_us >= 0) snprintf(pred2, sizeof pred2, "%.2f", r->nccl_model_us);
  switch (o->format) {
  case DS_FORMAT_CSV:
    fprintf(out, "%s,%s,%s,%d,%.0f,%.0f,float,%.3f,%.6f,%.6f,%s,%s,%d,%s\n", o->op,
            algo, proto, pl->n, r->size_bytes, r->count, r->time_us, r->algbw_gbps,
            r->busbw_gbps, net, coll, r->channels, pred);
    break;
  case DS_FORMAT_JSON:
    fprintf(out,
            "%s  {\"op\": \"%s\", \"algo\": \"%s\", \"proto\": \"%s\", "
            "\"nranks\": %d, \"size_bytes\": %.0f, \"count\": %.0f, "
            "\"type\": \"float\", \"time_us\": %.3f, \"algbw_gbps\": %.6f, "
            "\"busbw_gbps\": %.6f, \"net_model\": \"%s\", \"coll_model\": \"%s\", "
            "\"channels\": %d, \"nccl_model_us\": %s}",
            first ? "" : ",\n", o->op, algo, proto, pl->n, r->size_bytes, r->count,
            r->time_us, r->algbw_gbps, r->busbw_gbps, net, coll, r->channels,
            pred[0] ? pred : "null");
    break;
  default:
    if (!pl->nccl)
      fprintf(out, "  %12.0f %12.0f %6s %10.2f %8.2f %8.2f\n", r->size_bytes,
              r->count, "float", r->time_us, r->algbw_gbps, r->busbw_gbps);
    else
      fprintf(out, "  %12.0f %12.0f %6s %10.2f %8.2f %8.2f %5s %6s %3d %10s\n",
              r->size_bytes, r->count, "float", r->time_us, r->algbw_gbps,
              r->busbw_gbps, algo, proto, r->channels, pred2);
  }
}

/* Decides plain ring or NCCL's model; a fixed protocol without the model is
 * a usage error, auto without it falls back to the plain ring and says so. */
static ds_status make_plan(const struct collbench_options *o, struct ds_topo *topo,
                           const struct ds_ring *ring, struct plan *pl, struct ds_err *err) {
  if (o->proto.choice == DS_PROTO_CHOICE_NONE) return DS_OK;
  struct ds_err why = {0};
  ds_status st = ds_nccl_model_build(
      topo, ring, o->nccl_extra ? DS_NCCL_EXTRA_MEASURED : DS_NCCL_EXTRA_NONE, &pl->m,
      &why);
  const char *no;
  if (st == DS_OK && !o->ar_auto && o->ar_algo == DS_AR_NVLS &&
      !ds_nccl_algo_available(&pl->m, DS_AR_NVLS, DS_PROTO_SIMPLE, &no))
    return ds_err_set(err, DS_EUSAGE, "option --algo nvls: cannot run here: %s", no);
  if (st == DS_OK && is_p2p_kind(o->desc->kind))
    st = ds_nccl_p2p_build(topo, ring, &pl->m, &pl->p2p, err);
  if (st == DS_OK) {
    /* NCCL pipelines by its own chunks and slices, which the model derives
     * (ds_nccl_chain, ds_nccl_algo_proto): more pieces would pipeline twice */
    if (o->ring_chunks > 1) {
      char proto[24];
      ds_proto_flag_name(&o->proto, ',', proto, sizeof proto);
      return ds_err_set(err, DS_EUSAGE,
                        "option --ring-chunks: NCCL's model runs this %s (protocol %s), and "
                        "NCCL pipelines by its own chunks and slices, which the model "
                        "derives; --ring-chunks pipelines the plain algorithm only (give "
                        "--algo ring --proto none, or drop --ring-chunks)", o->op, proto);
    }
    pl->nccl = 1;
    /* a --proto set: NCCL chooses among its protocols only (NCCL_PROTO) */
    if (o->proto.choice == DS_PROTO_CHOICE_AUTO) pl->m.proto_disabled = o->proto.disabled;
    return DS_OK;
  }
  /* an explicit protocol or set of protocols needs NCCL's model */
  DS_CHECK(ds_proto_flag_require_model("--proto", &o->proto, why.msg, err));
  if (!o->ar_auto && o->ar_algo == DS_AR_NVLS)
    return ds_err_set(err, DS_EUSAGE, "option --algo nvls: %s", why.msg);
  snprintf(pl->fallback, sizeof pl->fallback,
           "%s; --proto auto runs the plain %s (proto none)", why.msg,
           o->desc->kind == DS_COLL_ALLREDUCE ? ds_ar_algo_name(o->ar_algo) : o->desc->algo);
  if (o->format != DS_FORMAT_TEXT) fprintf(stderr, "ddpsim collective: %s\n", pl->fallback);
  return DS_OK;
}

/* The plot curve a row belongs to: "allreduce ring/LL128", "broadcast chain". */
static void row_group(const struct collbench_options *o, const struct row *r, char *buf,
                      size_t cap) {
  const char *algo = o->desc->kind == DS_COLL_ALLREDUCE ? ds_ar_algo_name(r->algo)
                                                        : o->desc->algo;
  if (r->proto == DS_PROTO_COUNT) snprintf(buf, cap, "%s %s", o->op, algo);
  else snprintf(buf, cap, "%s %s/%s", o->op, algo, ds_proto_name(r->proto));
}

/* ref: the --reference points, or NULL. */
static ds_status sweep(const struct collbench_options *o, struct ds_topo *topo,
                       const struct ds_busbw_set *ref, FILE *out, struct ds_err *err) {
  struct ds_busbw_set pts = {0};
  struct plan pl = {.n = o->ranks ? o->ranks : topo->n_gpus};
  int32_t n = pl.n;
  if (n > topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE, "option -g: %d ranks but topology %s has %d GPUs",
                      n, topo->name, topo->n_gpus);
  pl.model = o->coll_model == DS_COLL_CHOICE_FLOW        ? DS_COLL_FLOW
             : o->coll_model == DS_COLL_CHOICE_AGGREGATE ? DS_COLL_AGGREGATE
             : n > DS_AUTO_AGGREGATE_ABOVE               ? DS_COLL_AGGREGATE
                                                         : DS_COLL_FLOW;
  /* Only the ring kinds (and, of the all-reduces, those of coll_model_of)
   * have an aggregated execution. */
  if (o->desc->kind != DS_COLL_ALLREDUCE && o->desc->kind != DS_COLL_ALLGATHER &&
      o->desc->kind != DS_COLL_REDUCESCATTER)
    pl.model = DS_COLL_FLOW;
  if (o->desc->kind == DS_COLL_ALLTOALL && n > DS_ALLTOALL_MAX_RANKS)
    return ds_err_set(err, DS_EUSAGE,
                      "option -g: alltoall runs N(N-1) transfers and is simulated up to %d "
                      "ranks, not %d (give -g %d or fewer)", DS_ALLTOALL_MAX_RANKS, n,
                      DS_ALLTOALL_MAX_RANKS);
  if ((o->desc->rooted || o->root_set) && o->root >= n)
    return ds_err_set(err, DS_EUSAGE, "option --root: %d is not a rank (%d ranks)", o->root,
                      n);
  if (o->ring_chunks > 1 && pl.model == DS_COLL_AGGREGATE)
    return ds_err_set(err, DS_EUSAGE,
                      "--ring-chunks > 1 needs the per-flow ring: add --coll-model flow");
  int32_t *gpus = malloc((size_t)n * sizeof *gpus);
  if (!gpus) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  struct ds_ring ring;
  ds_status st = ds_ring_build_rails(topo, gpus, n, &ring, err);
  free(gpus);
  DS_CHECK(st);
  st = make_plan(o, topo, &ring, &pl, err);
  if (st != DS_OK) {
    ds_ring_release(&ring);
    return st;
  }
  print_header(out, o, topo, &pl);
  int first = 1;
  double busbw_sum = 0;
  int32_t n_rows = 0;
  /* Sizes as nccl-tests makes them: whole elements, multiplied by -f. */
  for (double s = o->min_bytes; s <= o->max_bytes * (1 + 1e-12); s *= o->factor) {
    struct row r = {.count = (double)(int64_t)(s / FLOAT_BYTES), .proto = DS_PROTO_COUNT,
                    .algo = o->ar_algo, .channels = 1, .nccl_model_us = -1};
    r.size_bytes = r.count * FLOAT_BYTES;
    struct ds_coll_proto cp;
    int32_t chain_chunks = 0;
    if (pl.nccl && o->desc->kind != DS_COLL_ALLREDUCE) {
      enum ds_coll_kind k = o->desc->kind;
      if (ds_coll_kind_is_chain(k)) {
        /* DDP's buffer broadcast's path (sim/train/exec.c): the chain with
         * NCCL's channels for the size, latencies and launch */
        r.proto = o->proto.choice == DS_PROTO_CHOICE_FIXED
                      ? o->proto.fixed : ds_nccl_choose_coll_proto(&pl.m, k, r.size_bytes);
        chain_chunks = ds_nccl_chain(&pl.m, r.proto, r.size_bytes, &cp);
        r.nccl_model_us = ds_nccl_predict_coll_ns(&pl.m, k, r.proto, r.size_bytes) / 1e3;
      } else if (is_p2p_kind(k)) {
        /* each transfer: the message (sendrecv) or S/N (alltoall) */
        double part = k == DS_COLL_SENDRECV ? r.size_bytes : r.size_bytes / n;
        r.proto = o->proto.choice == DS_PROTO_CHOICE_FIXED ? o->proto.fixed
                                                             : ds_nccl_p2p_choose(&pl.p2p, part);
        ds_nccl_p2p_proto(&pl.m, &pl.p2p, r.proto, part, &cp);
      } else {
        r.proto = o->proto.choice == DS_PROTO_CHOICE_FIXED
                      ? o->proto.fixed : ds_nccl_choose_coll_proto(&pl.m, k, r.size_bytes);
        ds_nccl_coll_proto(&pl.m, r.proto, r.size_bytes, &cp);
        r.nccl_model_us = ds_nccl_predict_coll_ns(&pl.m, k, r.proto, r.size_bytes) / 1e3;
      }
      r.channels = cp.channels;
    } else if (pl.nccl) {
      /* NCCL's choice of algorithm (auto) and protocol (auto), or the fixed ones */
      if (o->ar_auto && o->proto.choice != DS_PROTO_CHOICE_FIXED)
        ds_nccl_choose_algo(&pl.m, r.size_bytes, &r.algo, &r.proto);
      else if (o->proto.choice == DS_PROTO_CHOICE_FIXED)
        r.proto = o->proto.fixed;
      else
        r.proto = ds_nccl_choose_proto(&pl.m, r.algo, r.size_bytes);
      /* a fixed protocol under --algo auto: the fastest algorithm that has it */
      if (o->ar_auto && o->proto.choice == DS_PROTO_CHOICE_FIXED)
        r.algo = ds_nccl_choose_algo_with(&pl.m, r.size_bytes, r.proto);
      ds_nccl_algo_proto(&pl.m, r.algo, r.proto, r.size_bytes, &cp);
      r.channels = cp.channels;
      r.nccl_model_us = ds_nccl_predict_algo_ns(&pl.m, r.algo, r.proto, r.size_bytes) / 1e3;
    }
    int64_t t_ns = 0;
    st = time_coll(topo, &ring, o, pl.model, r.size_bytes, r.algo, pl.nccl ? &cp : NULL,
                   chain_chunks, &t_ns, err);
    if (st != DS_OK) {
      if (!err->msg[0]) ds_err_set(err, st, "simulating %.0f bytes failed", r.size_bytes);
      else if (n_rows > 0) { /* the sizes below ran: say which one did not */
        char at[64];
        snprintf(at, sizeof at, "at %.0f bytes: ", r.size_bytes);
        ds_err_prefix(err, st, at);
      }
      break;
    }
    r.time_us = (double)t_ns / 1e3;
    r.algbw_gbps = t_ns > 0 ? r.size_bytes / (double)t_ns : 0; /* B/ns = GB/s */
    r.busbw_gbps = r.algbw_gbps * o->desc->bus_factor(n);
    print_row(out, o, &pl, &r, first);
    first = 0;
    busbw_sum += r.busbw_gbps;
    n_rows++;
    if (o->plot) {
      char group[DS_BUSBW_GROUP_MAX];
      row_group(o, &r, group, sizeof group);
      if (ds_busbw_add(&pts, group, r.size_bytes, r.busbw_gbps) != DS_OK) {
        st = ds_err_set(err, DS_ENOMEM, "--plot: out of memory");
        break;
      }
    }
  }
  if (st == DS_OK && o->format == DS_FORMAT_JSON) fputs("\n]\n", out);
  /* The text table closes as nccl-tests' does, with the mean bus bandwidth
   * over its sizes (a comment line, so readers of the rows skip it), and
   * says where --reference's points went: they are drawn, not tabled. */
  if (st == DS_OK && o->format == DS_FORMAT_TEXT) {
    fprintf(out, "# Avg bus bandwidth    : %.2f GB/s (mean over %d size%s)\n",
            n_rows ? busbw_sum / n_rows : 0.0, n_rows, n_rows == 1 ? "" : "s");
    if (ref)
      fprintf(out, "# reference: %zu point%s of %s drawn on %s\n", ref->n,
              ref->n == 1 ? "" : "s", o->reference, o->plot);
  }
  if (st == DS_OK && o->plot) {
    /* fits: --op is a known name (ds_coll_desc_find), the topology's name
     * is under DS_NAME_CAP (base/config.c ds_cnode_name), the GPU's 64 bytes */
    char title[512];
    snprintf(title, sizeof title, "ddpsim collective: %s, %d ranks on %s (%d x %s): busbw "
             "against size", o->op, n, topo->name, topo->n_gpus, topo->gpu.name);
    st = ds_busbw_plot(o->plot, title, &pts, ref, err);
  }
  ds_busbw_release(&pts);
  ds_ring_release(&ring);
  return st;
}

ds_status ds_collbench_check_args(int argc, char **argv, struct ds_err *err) {
  struct collbench_options o;
  return ds_cli_parse_split(options, argc, argv, parse_words, &o, err);
}

ds_status ds_collbench_main(int argc, char **argv, FILE *out,
                            struct ds_err *err) {
  struct collbench_options o;
  DS_CHECK(ds_cli_parse_split(options, argc, argv, parse_words, &o, err));
  if (o.help) {
    fputs(usage, out);
    fputs(usage_rest, out);
    return DS_OK;
  }
  char topo_path[4096], gpus_path[4096];
  DS_CHECK(ds_lookup_file("topologies", "topology", o.topo, topo_path,
                          sizeof topo_path, err));
  DS_CHECK(ds_lookup_gpu_table(topo_path, gpus_path, sizeof gpus_path, err));
  /* The plot's inputs are checked before any row is printed. */
  struct ds_busbw_set ref = {0};
  if (o.reference) DS_CHECK(ds_busbw_reference_load(o.reference, &ref, err));
  ds_status st = o.plot ? ds_gnuplot_check(err) : DS_OK;
  struct ds_topo *topo = NULL;
  if (st == DS_OK) st = ds_topo_load(topo_path, gpus_path, &topo, err);
  /* The table is made in memory and printed whole once every size ran and
   * the plot is drawn: a refusal (a collective that cannot run on these
   * ranks, a size that overflows the engine, a plot that fails) leaves
   * stdout empty, never a header or a part of the table that a script
   * would take for a result (a new user's review: the CSV header, then
   * the error, exit 2). */
  char *table = NULL;
  size_t table_len = 0;
  FILE *mem = NULL;
  if (st == DS_OK && !(mem = open_memstream(&table, &table_len)))
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
  if (st == DS_OK) st = sweep(&o, topo, o.reference ? &ref : NULL, mem, err);
  if (mem && fclose(mem) != 0 && st == DS_OK) st = ds_err_set(err, DS_ENOMEM, "out of memory");
  if (st == DS_OK && fwrite(table, 1, table_len, out) != table_len)
    st = ds_err_set(err, DS_EIO, "writing the table failed");
  free(table);
  ds_topo_free(topo);
  ds_busbw_release(&ref);
  return st;
}
