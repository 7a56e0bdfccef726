/*
 * `ddpsim collective` (see collbench.h). Every size is a fresh simulation:
 * its own engine and network, all ranks entering at t = 0, the time reported
 * being the last rank's finish, as nccl-tests times from before the launch
 * on every rank to after the last rank's completion.
 */
#include "sim/cmd/collbench.h"
#include "sim/cmd/collbench_args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/csvread.h"
#include "base/gnuplot.h"
#include "base/nccltests.h"
#include "base/textout.h"
#include "sim/coll/coll.h"
#include "sim/cmd/collbench_plot.h"
#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "base/lookup.h"
#include "sim/coll/nccl_model.h"
#include "sim/coll/ring_rails.h"
#include "sim/net/net.h"
#include "sim/cli/options.h"
#include "sim/cli/proto_flag.h"
#include "sim/cli/report.h"
#include "sim/net/topo.h"

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
                           const struct ds_collbench_args *o,
                           enum ds_coll_model model, double bytes, enum ds_ar_algo algo,
                           const struct ds_coll_proto *proto, int32_t chain_chunks,
                           uint64_t *work, int64_t *out_ns, struct ds_err *err) {
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
  /* the table's sizes share one work bound (DS_RUN_WORK_LIMIT): *work is
   * what the sizes before this one took */
  ds_engine_set_work_limit(r.eng, *work < DS_RUN_WORK_LIMIT ? DS_RUN_WORK_LIMIT - *work : 1,
                           ds_net_work_done, r.net);
  DS_CHECK_GOTO(ds_engine_run(r.eng, INT64_MAX), st, overflow);
  st = r.st;
  *out_ns = r.last_done_ns;
overflow:
  if (ds_engine_work_exceeded(r.eng))
    st = ds_err_set(err, DS_EINPUT,
                    "this table is too large to simulate in reasonable time: past %.2g steps "
                    "of work (events, flows and flow rates), the bound (a few minutes of one "
                    "core): give fewer or smaller sizes (-b, -e, -f), fewer ranks (-g)%s",
                    (double)DS_RUN_WORK_LIMIT,
                    model == DS_COLL_FLOW && ring->n > DS_AUTO_AGGREGATE_ABOVE
                        ? ", or --coll-model aggregate or auto (one flow per ring or tree "
                          "past 64 ranks)"
                        : "");
  else if (ds_engine_overflowed(r.eng))
    st = ds_err_set(err, DS_EINPUT, "%s", DS_ENGINE_OVERFLOW_MSG);
  if (r.net) *work += ds_net_work_done(r.net, ds_engine_fired(r.eng));
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
  char uneven[48];           /* ranks per node when they fill nodes unevenly: "8 + 4" */
  int spans_nodes;           /* the ranks sit on two nodes or more (ds_ring_spans_nodes) */
};

/* What ran: "flow" or "aggregate" (sim/coll ds_coll_aggregates: the ring
 * kinds, and of the all-reduces the ring, the hierarchical one's rings, the
 * double binary tree and NVLSTree aggregate). */
static const char *coll_model_of(const struct ds_collbench_args *o, const struct plan *pl,
                                 enum ds_ar_algo algo) {
  return pl->model == DS_COLL_AGGREGATE &&
                 ds_coll_aggregates(o->desc->kind, algo, pl->spans_nodes)
             ? "aggregate"
             : "flow";
}

/* nccl-tests' header: what runs, on which topology, and the columns. */
static void print_text_header(FILE *out, const struct ds_collbench_args *o,
                              const struct ds_topo *topo, const struct plan *pl) {
  const char *net = o->net_mode == DS_NET_CONSTANT ? "alpha-beta" : "maxmin";
  /* NCCL's rows: the ring's, tree's and NVLSTree's steps per flow or
   * aggregated, whichever algorithm each row runs (NVLS on one node and
   * p2p always per flow) */
  int plain_flow = strcmp(coll_model_of(o, pl, o->ar_algo), "flow") == 0;
  const char *plain_exec = plain_flow ? "per flow" : "aggregated";
  /* an all-reduce algorithm named, not auto: every row runs it, so the
   * header says what it ran (`--algo nvls --coll-model aggregate` on one
   * node said "rings and trees aggregated" above rows saying flow) */
  int named = o->desc->kind == DS_COLL_ALLREDUCE && !o->ar_auto;
  const char *exec = pl->model == DS_COLL_FLOW || (named && plain_flow)
                         ? "collectives per flow"
                         : "rings and trees aggregated";
  /* the topology's and GPU's names are the user's: control characters
   * shown as '?', as the summary shows them */
  fprintf(out, "# ddpsim collective: %s, algo %s, %d ranks on ", o->op, o->algo, pl->n);
  ds_textout_put_printable(out, topo->name, 0);
  fprintf(out, " (%d x ", topo->n_gpus);
  ds_textout_put_printable(out, topo->gpu.name, 0);
  fputc(')', out);
  if (o->desc->rooted) fprintf(out, ", root %d", o->root);
  fputc('\n', out);
  if (pl->uneven[0])
    fprintf(out, "# note: %d ranks fill the nodes unevenly (%s): the model runs one ring in "
            "rank order, crossing each node boundary through one NIC (a node holds one rank or "
            "reaches one NIC), where NCCL may spread its channels over more NICs; the "
            "bandwidth may be too low "
            "(docs/collectives.md, \"Nodes filled unevenly\")\n", pl->n, pl->uneven);
  /* alpha-beta is contention-free by definition (sim/net/net.h
   * DS_NET_CONSTANT): flows crossing one link at once each get all of it,
   * so busbw is no longer bounded by the links (docs/collectives.md,
   * "Bounds") */
  if (o->net_mode == DS_NET_CONSTANT)
    fprintf(out, "# note: --net alpha-beta gives every flow its route's bottleneck as if "
            "alone: flows that cross a link at once (the tree's up and down streams, "
            "direct's shards, a GPU's p2p transfers) each get all of it, so busbw may exceed "
            "the links' bandwidth (docs/collectives.md, \"Bounds\")\n");
  if (!pl->nccl) {
    fprintf(out, "# network %s, %s executed %s; simulated (NCCL protocols and channels not "
            "modelled)\n",
            net, o->desc->kind == DS_COLL_ALLREDUCE ? ds_ar_algo_name(o->ar_algo)
                                                    : o->desc->algo, plain_exec);
    if (pl->fallback[0]) { /* it may name the GPU and its architecture */
      fputs("# ", out);
      ds_textout_put_printable(out, pl->fallback, 0);
      fputc('\n', out);
    } else if (o->desc->kind == DS_COLL_ALLREDUCE) {
      /* this command's default is the plain ring; DDP's is NCCL's choice,
       * so the same bucket differs between the two (docs/collectives.md) */
      fprintf(out, "# training runs default to --algo auto (NCCL's choice of algorithm and "
              "protocol per call): add --algo auto to compare\n");
    }
    fprintf(out, "#\n# %12s %12s %6s %10s %8s %8s\n# %12s %12s %6s %10s %8s %8s\n",
            "size", "count", "type", "time", "algbw", "busbw", "(B)", "(elements)", "",
            "(us)", "(GB/s)", "(GB/s)");
    return;
  }
  fprintf(out, "# network %s, %s; NCCL %s model: %s, %d node(s), %d channels of %.1f GB/s\n",
          net, ds_collbench_is_p2p(o->desc->kind) ? "p2p per flow" : exec,
          ds_nccl_constants_version(), ds_nccl_arch_name(pl->m.arch), pl->m.nnodes,
          pl->m.channels, pl->m.chan_bw_bytes_per_s / 1e9);
  if (ds_collbench_is_p2p(o->desc->kind))
    fprintf(out, "# p2p: %d channels, %d per peer, chunk %.0f KiB, LL up to 16 KiB per "
            "channel; extra effects: %s; ch: channels per transfer; NCCL has no p2p cost "
            "model\n", pl->p2p.p2p_channels, pl->p2p.per_peer_channels,
            pl->p2p.chunk_bytes / 1024, o->nccl_extra ? "launch (fitted on 8x A100)" : "none");
  else
    fprintf(out, "# extra effects: %s; nccl(us): NCCL's own prediction; ch: channels "
            "(tree: per tree)\n",
            o->nccl_extra ? "launch + slice syncs + pipeline fill (fitted on 8x A100)" : "none");
  /* a set, even one naming every protocol (nothing disabled), is
   * NCCL_PROTO given: it enables LL128 where NCCL's default leaves it off,
   * so the header says which set ran */
  if (o->proto.choice == DS_PROTO_CHOICE_AUTO && o->proto.named) {
    char set[24];
    ds_proto_flag_name(&o->proto, ',', set, sizeof set);
    fprintf(out, "# --proto %s: NCCL's choice per size among these protocols only "
            "(NCCL_PROTO)\n", set);
  } else if (o->proto.choice == DS_PROTO_CHOICE_AUTO && !o->proto.named &&
             pl->m.ll128_off_by_default &&
             !ds_collbench_is_p2p(o->desc->kind)) {
    fprintf(out, "# LL128 off: NCCL enables it by default only over NVLink inside a node "
            "(--proto LL128 forces it, as NCCL_PROTO=LL128)\n");
  }
  fprintf(out, "#\n# %12s %12s %6s %10s %8s %8s %9s %6s %3s %10s\n"
          "# %12s %12s %6s %10s %8s %8s %9s %6s %3s %10s\n",
          "size", "count", "type", "time", "algbw", "busbw", "algo", "proto", "ch",
          "nccl", "(B)", "(elements)", "", "(us)", "(GB/s)", "(GB/s)", "", "", "", "(us)");
}

static void print_header(FILE *out, const struct ds_collbench_args *o,
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

/* The human-readable name of what a row ran: across nodes NCCL runs NVLS
 * as NVLSTree (nccl_model.h nvls_tree), "nvls_tree" in the text table and
 * the plot's curves; the CSV and JSON keep --algo's name, nvls, as the
 * trace's algo column does (docs/collectives.md). */
static const char *row_algo_text(const struct ds_collbench_args *o, const struct plan *pl,
                                 enum ds_ar_algo algo) {
  if (o->desc->kind != DS_COLL_ALLREDUCE) return o->desc->algo;
  if (algo == DS_AR_NVLS && pl->nccl && pl->m.nvls_tree) return "nvls_tree";
  return ds_ar_algo_name(algo);
}

static void print_row(FILE *out, const struct ds_collbench_args *o,
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
      fprintf(out, "  %12.0f %12.0f %6s %10.2f %8.2f %8.2f %9s %6s %3d %10s\n",
              r->size_bytes, r->count, "float", r->time_us, r->algbw_gbps,
              r->busbw_gbps, row_algo_text(o, pl, r->algo), proto, r->channels, pred2);
  }
}

/* Decides plain ring or NCCL's model; a fixed protocol without the model is
 * a usage error, auto without it falls back to the plain ring and says so. */
static ds_status make_plan(const struct ds_collbench_args *o, struct ds_topo *topo,
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
  if (st == DS_OK && ds_collbench_is_p2p(o->desc->kind))
    st = ds_nccl_p2p_build(topo, ring, &pl->m, &pl->p2p, err);
  if (st == DS_OK) {
    /* NCCL pipelines by its own chunks and slices, which the model derives
     * (ds_nccl_chain, ds_nccl_algo_proto): more pieces would pipeline twice */
    if (o->ring_chunks > 1) {
      char what[64];
      snprintf(what, sizeof what, "this %s", o->op);
      return ds_ring_chunks_refuse(
          ds_coll_ring_chunks_use(o->desc->kind, o->ar_auto ? DS_AR_RING : o->ar_algo, 1), what,
          &o->proto, err);
    }
    pl->nccl = 1;
    /* a --proto set: NCCL chooses among its protocols only (NCCL_PROTO) */
    ds_nccl_model_proto_env(&pl->m, o->proto.named,
                            o->proto.choice == DS_PROTO_CHOICE_AUTO ? o->proto.disabled : 0);
    return DS_OK;
  }
  /* an explicit protocol or set of protocols needs NCCL's model */
  DS_CHECK(ds_proto_flag_require_model("--proto", &o->proto, why.msg, err));
  if (!o->ar_auto && o->ar_algo == DS_AR_NVLS)
    return ds_err_set(err, DS_EUSAGE, "option --algo nvls: %s", why.msg);
  /* only auto reaches here: named by the flag that asked for it, --algo
   * auto as the header's first line has it, else --proto auto */
  snprintf(pl->fallback, sizeof pl->fallback,
           "%s; --%s auto runs the plain %s (proto none)", why.msg,
           o->ar_auto || o->bcast_auto ? "algo" : "proto",
           o->desc->kind == DS_COLL_ALLREDUCE ? ds_ar_algo_name(o->ar_algo) : o->desc->algo);
  if (o->format != DS_FORMAT_TEXT) fprintf(stderr, "ddpsim collective: %s\n", pl->fallback);
  return DS_OK;
}

/* The plot curve a row belongs to: "allreduce ring/LL128", "broadcast chain". */
static void row_group(const struct ds_collbench_args *o, const struct plan *pl,
                      const struct row *r, char *buf, size_t cap) {
  const char *algo = row_algo_text(o, pl, r->algo);
  if (r->proto == DS_PROTO_COUNT) snprintf(buf, cap, "%s %s", o->op, algo);
  else snprintf(buf, cap, "%s %s/%s", o->op, algo, ds_proto_name(r->proto));
}

/* ref: the --reference points, or NULL; ref_dropped: its rows at other
 * rank counts, left out (ds_busbw_keep_ranks). */
static ds_status sweep(const struct ds_collbench_args *o, struct ds_topo *topo,
                       const struct ds_busbw_set *ref, size_t ref_dropped, FILE *out,
                       struct ds_err *err) {
  struct ds_busbw_set pts = {0};
  struct plan pl = {.n = o->ranks ? o->ranks : topo->n_gpus};
  int32_t n = pl.n;
  if (n > topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE, "option -g: %d ranks but topology %s has %d GPUs",
                      n, topo->name, topo->n_gpus);
  /* NCCL's collectives of one rank move nothing between GPUs: a
   * cudaMemcpyAsync on the device out of place, nothing in place; the
   * table's time 0 would be neither. -g 1 is refused by the parser; without
   * -g the count is the topology's, so the topology is named. */
  if (n == 1)
    return ds_err_set(err, DS_EUSAGE, "topology %s has 1 GPU; a collective needs 2 or more "
                      "(%s): give a topology of 2 GPUs or more", topo->name,
                      DS_COLLBENCH_ONE_RANK_WHY);
  pl.model = o->coll_model == DS_COLL_CHOICE_FLOW        ? DS_COLL_FLOW
             : o->coll_model == DS_COLL_CHOICE_AGGREGATE ? DS_COLL_AGGREGATE
             : n > DS_AUTO_AGGREGATE_ABOVE               ? DS_COLL_AGGREGATE
                                                         : DS_COLL_FLOW;
  /* Only the ring kinds (and, of the all-reduces, those ds_coll_aggregates
   * names, coll_model_of) have an aggregated execution. */
  if (o->desc->kind != DS_COLL_ALLREDUCE && o->desc->kind != DS_COLL_ALLGATHER &&
      o->desc->kind != DS_COLL_REDUCESCATTER)
    pl.model = DS_COLL_FLOW;
  if (o->desc->kind == DS_COLL_ALLTOALL && n > DS_ALLTOALL_MAX_RANKS)
    return ds_err_set(err, DS_EUSAGE,
                      "%s%s: alltoall runs N(N-1) transfers and is simulated up to %d "
                      "ranks, not %d (give -g %d or fewer)",
                      o->ranks ? "option -g" : "topology ", o->ranks ? "" : topo->name,
                      DS_ALLTOALL_MAX_RANKS, n, DS_ALLTOALL_MAX_RANKS);
  if ((o->desc->rooted || o->root_set) && o->root >= n)
    return ds_err_set(err, DS_EUSAGE, "option --root: %d is not a rank (%d ranks)", o->root,
                      n);
  if (o->ring_chunks > 1 && pl.model == DS_COLL_AGGREGATE)
    return ds_ring_chunks_aggregate_refuse(
        o->coll_model == DS_COLL_CHOICE_AGGREGATE ? 0 : n, err);
  int32_t *gpus = malloc((size_t)n * sizeof *gpus);
  if (!gpus) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  struct ds_ring ring;
  ds_status st = ds_ring_build_rails(topo, gpus, n, &ring, err);
  free(gpus);
  DS_CHECK(st);
  pl.spans_nodes = ds_ring_spans_nodes(topo, &ring);
  st = make_plan(o, topo, &ring, &pl, err);
  /* the ring kinds' rails (ds_ring_plan_rails) need every node to hold 2
   * or more members on 2 or more NICs: where nodes are filled unevenly
   * and one does not, a fallback, said beside the table (out of memory:
   * no note) */
  enum ds_coll_kind kind = o->desc->kind;
  if (st == DS_OK && (kind == DS_COLL_ALLREDUCE || kind == DS_COLL_ALLGATHER ||
                      kind == DS_COLL_REDUCESCATTER) &&
      o->ar_algo == DS_AR_RING &&
      ds_ring_nodes_uneven(topo, ring.gpus, n, pl.uneven, sizeof pl.uneven) == 1 &&
      o->format != DS_FORMAT_TEXT)
    fprintf(stderr, "ddpsim collective: note: %d ranks fill the nodes unevenly (%s): one ring "
            "in rank order through one NIC per node boundary (a node holds one rank or reaches "
            "one NIC), where NCCL may spread its channels over more NICs (docs/collectives.md, "
            "\"Nodes filled unevenly\")\n", n, pl.uneven);
  if (st != DS_OK) {
    ds_ring_release(&ring);
    return st;
  }
  print_header(out, o, topo, &pl);
  int first = 1;
  double busbw_sum = 0;
  uint64_t work = 0; /* the sizes' work so far (time_coll) */
  int32_t n_rows = 0;
  int32_t n_empty = 0; /* rows whose count per rank rounds to 0 */
  /* Sizes asked as nccl-tests steps them (multiplied by -f), each made a
   * row as it makes one: whole floats, per rank a multiple of 16 bytes
   * where the op splits the buffer (base/nccltests.h; the parser bounds
   * sizes to 1e15 bytes, so they fit in 64 bits). */
  for (double s = o->min_bytes; s <= o->max_bytes * (1 + 1e-12); s *= o->factor) {
    struct ds_nccltests_row sz =
        ds_nccltests_row((uint64_t)s, ds_coll_kind_splits_buffer(o->desc->kind), n);
    struct row r = {.size_bytes = (double)sz.size_bytes, .count = (double)sz.count,
                    .proto = DS_PROTO_COUNT, .algo = o->ar_algo, .channels = 1,
                    .nccl_model_us = -1};
    if (r.size_bytes == 0) {
      /* nothing per rank: NCCL discards an empty collective (src/enqueue.cc
       * taskAppend), so nothing runs; nccl-tests' busbw is 0 bytes over
       * its loop's time, 0, and counts in its mean */
      r.channels = 0;
      print_row(out, o, &pl, &r, first);
      first = 0;
      n_rows++;
      n_empty++;
      continue;
    }
    struct ds_coll_proto cp;
    int32_t chain_chunks = 0;
    if (pl.nccl && o->desc->kind != DS_COLL_ALLREDUCE) {
      enum ds_coll_kind k = o->desc->kind;
      if (ds_coll_kind_is_chain(k)) {
        /* DDP's buffer broadcast's path (sim/train/exec_colls.c): the chain with
         * NCCL's channels for the size, latencies and launch */
        r.proto = o->proto.choice == DS_PROTO_CHOICE_FIXED
                      ? o->proto.fixed : ds_nccl_choose_coll_proto(&pl.m, k, r.size_bytes);
        chain_chunks = ds_nccl_chain(&pl.m, r.proto, r.size_bytes, &cp);
        r.nccl_model_us = ds_nccl_predict_coll_ns(&pl.m, k, r.proto, r.size_bytes) / 1e3;
      } else if (ds_collbench_is_p2p(k)) {
        /* each transfer: the message (sendrecv) or S/N (alltoall) */
        double part = k == DS_COLL_SENDRECV ? r.size_bytes : r.size_bytes / n;
        r.proto = o->proto.choice == DS_PROTO_CHOICE_FIXED ? o->proto.fixed
                                                             : ds_nccl_p2p_choose(&pl.p2p, part);
        ds_nccl_p2p_proto(&pl.m, &pl.p2p, r.proto, part, &cp);
      } else {
        r.proto = o->proto.choice == DS_PROTO_CHOICE_FIXED
                      ? o->proto.fixed : ds_nccl_choose_coll_proto(&pl.m, k, r.size_bytes);
        ds_nccl_ring_kind_proto(&pl.m, k, r.proto, r.size_bytes, &cp);
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
                   chain_chunks, &work, &t_ns, err);
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
      row_group(o, &pl, &r, group, sizeof group);
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
    if (n_empty)
      fprintf(out, "# note: %d row%s of size 0: nccl-tests rounds each of the %d ranks' count "
              "down to a multiple of %d bytes, 0 floats there; NCCL runs nothing (an empty "
              "collective), so time and busbw are 0 (nccl-tests times its loop)\n", n_empty,
              n_empty == 1 ? "" : "s", n, DS_NCCLTESTS_RANK_ALIGN_BYTES);
    fprintf(out, "# Avg bus bandwidth    : %.2f GB/s (mean over %d size%s)\n",
            n_rows ? busbw_sum / n_rows : 0.0, n_rows, n_rows == 1 ? "" : "s");
    if (ref && ref_dropped)
      fprintf(out, "# reference: %zu point%s of %s drawn on %s (%zu at other rank counts "
              "left out)\n", ref->n, ref->n == 1 ? "" : "s",
              ds_csvread_input_name(o->reference), o->plot, ref_dropped);
    else if (ref)
      fprintf(out, "# reference: %zu point%s of %s drawn on %s\n", ref->n,
              ref->n == 1 ? "" : "s", ds_csvread_input_name(o->reference), o->plot);
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

ds_status ds_collbench_main(int argc, char **argv, FILE *out,
                            struct ds_err *err) {
  struct ds_collbench_args o;
  DS_CHECK(ds_collbench_args_parse(argc, argv, &o, err));
  if (o.help) {
    ds_collbench_args_usage(out);
    return DS_OK;
  }
  char topo_path[4096], gpus_path[4096];
  DS_CHECK(ds_lookup_file("topologies", "topology", o.topo, topo_path,
                          sizeof topo_path, err));
  DS_CHECK(ds_lookup_gpu_table(topo_path, gpus_path, sizeof gpus_path, err));
  /* The plot's inputs are checked before any row is printed. */
  struct ds_busbw_set ref = {0};
  if (o.reference) DS_CHECK(ds_busbw_reference_load(o.reference, o.op, &ref, err));
  ds_status st = o.plot ? ds_gnuplot_check(err) : DS_OK;
  struct ds_topo *topo = NULL;
  if (st == DS_OK) st = ds_topo_load(topo_path, gpus_path, &topo, err);
  /* a reference row of another rank count is another measurement */
  size_t ref_dropped = 0;
  if (st == DS_OK && o.reference) {
    char from[160];
    if (o.ranks) snprintf(from, sizeof from, "the run's, option -g");
    else snprintf(from, sizeof from, "the run's: every GPU of topology %s", topo->name);
    st = ds_busbw_keep_ranks(&ref, ds_csvread_input_name(o.reference),
                             o.ranks ? o.ranks : topo->n_gpus, from, &ref_dropped, err);
  }
  /* The table is made in memory and printed whole once every size ran and
   * the plot is drawn: a refusal (a collective that cannot run on these
   * ranks, a size that overflows the engine, a plot that fails) leaves
   * stdout empty, never a header or a part of the table that a script
   * would take for a result (a new user's review: the CSV header, then
   * the error, exit 2). */
  char *table = NULL;
  size_t table_len = 0;
  FILE *mem = NULL;
  /* --plot's picture is renamed into place only once the table reached
   * standard output (ds_atomic_file_finish below): a table that cannot be
   * written fails the command whole, and an old picture stays. */
  if (st == DS_OK && o.plot) st = ds_atomic_file_defer(o.plot, err);
  if (st == DS_OK && !(mem = open_memstream(&table, &table_len)))
    st = ds_err_set(err, DS_ENOMEM, "out of memory");
  if (st == DS_OK) st = sweep(&o, topo, o.reference ? &ref : NULL, ref_dropped, mem, err);
  if (mem && fclose(mem) != 0 && st == DS_OK) st = ds_err_set(err, DS_ENOMEM, "out of memory");
  if (st == DS_OK) {
    errno = 0;
    fwrite(table, 1, table_len, out);
    st = ds_textout_flush(out, errno, err);
  }
  if (o.plot) {
    ds_status fst = ds_atomic_file_finish(st == DS_OK, st == DS_OK ? err : NULL);
    if (st == DS_OK) st = fst;
  }
  free(table);
  ds_topo_free(topo);
  ds_busbw_release(&ref);
  return st;
}
