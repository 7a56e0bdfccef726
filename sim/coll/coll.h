/*
 * Collectives on the network model: the ring all-reduce (reduce-scatter
 * then all-gather, 2(N-1) steps), described here, and every other kind
 * behind one interface (struct ds_coll_desc, below). The all-reduce has two
 * executions that give the same answer where the ring is symmetric:
 *
 *   - DS_COLL_FLOW: every rank sends chunks to its successor as separate
 *     flows; a rank sends chunk (k, c) of step k once it has received chunk
 *     (k-1, c) from its predecessor and its previous send has left its
 *     link (the hop's latency is trailing: propagation, so the next chunk
 *     may go while the previous one travels), and a rank begins only when
 *     it and its successor have entered the collective. No global barrier
 *     per step. The segment of each step (S/N bytes) is cut into `chunks`
 *     pipelined pieces; with C chunks of t = S/(N C B) each, a uniform
 *     symmetric ring takes (2N-3) max(C t, t + a) + C t + a.
 *   - DS_COLL_AGGREGATE: one flow stands for all N ring hops at once (each
 *     link weighted by how many hops cross it), moving 2(N-1)/N * S bytes
 *     per rank after 2(N-1) times the slowest hop's latency; it starts when
 *     the last rank enters. With one chunk per step this is exactly the
 *     per-flow answer on a uniform ring; on a non-uniform ring it paces
 *     every hop at the slowest one, as the per-flow ring does in steady
 *     state. It costs O(1) events per collective instead of O(N^2).
 *
 * Uniform ring of bandwidth B and hop latency a, one chunk per step:
 *   T = 2(N-1) * a + 2(N-1)/N * S/B.
 *
 * NCCL protocols and channels (struct ds_coll_proto, filled from NCCL's
 * model by sim/coll/nccl_model.c, or by hand): C channels are C rings over the
 * same routes in lockstep; one flow of multiplicity C stands for the C
 * flows of a hop's step (under max-min C equal flows get what one flow of
 * multiplicity C gets, each capped alike). Each carries its share of the
 * payload times the protocol's wire factor, at most at the per-channel cap;
 * a step's latency is the protocol's per-hop latency for the hop's class
 * (replacing the links' own latency), and start_lat_ns is paid once, before
 * a rank's first send (aggregate: before the one flow). Uniform ring of C
 * channels, link bandwidth B, cap c, wire factor w, per-step latency h:
 *   T = start + 2(N-1) * h + 2(N-1)/N * S * w / min(C * c, B).
 *
 * Rails (sim/coll/ring_rails.c, sim/coll/coll_rails.c): a ring built by
 * ds_ring_build_rails may carry K rings over the same members in other
 * orders (one per NIC across nodes, or one reordered ring on one node);
 * the ring kinds (all-reduce, all-gather, reduce-scatter) then run those
 * side by side, S/K each, the C channels spread C/K per rail. Uncontended:
 *   T = the rails' largest path latency + 2(N-1)/N * S / busbw_max,
 * busbw_max = min over links of K * bw / (rail hops crossing the link).
 */
#ifndef DS_COLL_H
#define DS_COLL_H

#include <stdint.h>

#include "base/status.h"
#include "sim/net/engine.h"
#include "sim/net/net.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_coll_model { DS_COLL_FLOW, DS_COLL_AGGREGATE };

/* NCCL's protocols, in NCCL's order. */
enum ds_proto { DS_PROTO_LL, DS_PROTO_LL128, DS_PROTO_SIMPLE, DS_PROTO_COUNT };
/* Class of a ring hop, as NCCL's hwLat table has them: NET when the hop
 * crosses an "ib" link, else PCI when it crosses a "pcie" link, else NVLINK. */
enum ds_hop_class { DS_HOP_NVLINK, DS_HOP_PCI, DS_HOP_NET, DS_HOP_CLASS_COUNT };

/* A link's class by its kind: "ib" NET, "pcie" or "qpi" PCI, any other
 * NVLINK. */
enum ds_hop_class ds_link_hop_class(const struct ds_link *l);
/* A route's: NET if one of its links is, else PCI if one is, else NVLINK. */
enum ds_hop_class ds_route_hop_class(const struct ds_topo *topo, const int32_t *links,
                                     int32_t len);

/* The schedule's `algo` of a ring all-reduce: "ring" for the plain ring,
 * "ring/LL", "ring/LL128", "ring/Simple" for NCCL's protocols. */
#define DS_RING_ALGO_MAX 16
void ds_ring_algo_name(enum ds_proto p, char out[DS_RING_ALGO_MAX]);
/* Parses an algo written by ds_ring_algo_name ("" is the plain ring too);
 * *out is DS_PROTO_COUNT for the plain ring. DS_EINPUT for anything else. */
ds_status ds_ring_algo_parse(const char *algo, enum ds_proto *out);

/* "LL", "LL128", "Simple"; "none" for DS_PROTO_COUNT. */
const char *ds_proto_name(enum ds_proto p);
/* Parses a protocol name (case-insensitive); DS_EUSAGE if none. */
ds_status ds_proto_parse(const char *s, enum ds_proto *out);

/* How a ring all-reduce runs under an NCCL protocol (see above). */
struct ds_coll_proto {
  enum ds_proto proto;
  int32_t channels;                     /* >= 1 */
  double wire_factor;                   /* wire bytes per payload byte, >= 1 */
  double chan_cap_bytes_per_s;          /* > 0; INFINITY for none */
  double hop_lat_ns[DS_HOP_CLASS_COUNT]; /* per step, by hop class */
  double start_lat_ns;                  /* once per all-reduce */
  /* Chains (broadcast, reduce) only: payload per channel of every piece
   * but the last, which carries the rest of the channel's share (NCCL's
   * runRing cuts whole chunks; ds_nccl_chain); 0: spec.chunks equal pieces. */
  double piece_bytes;
  /* Chains only: the payload of the fullest channel, which paces the chain
   * (NCCL's plan gives the first and middle channels whole cells and the
   * last the rest: ds_nccl_chain_proto); 0: an equal share, bytes /
   * channels. */
  double share_bytes;
};

struct ds__tree_plan;

/* A ring over GPUs: routes of each hop, and its slowest hop. */
struct ds_ring {
  int32_t n;             /* ranks */
  int32_t *gpus;         /* [n] GPU of each ring position (owned) */
  int32_t *hop_first;    /* [n+1] hop i's links are hop_links[hop_first[i]..] */
  int32_t *hop_links;    /* owned */
  uint32_t *hop_mult;    /* parallel to hop_links: times a hop crosses each
                            link; NULL: once each (only the quotient of
                            interchangeable rails sets it, ring_rails.h) */
  double *hop_lat_ns;    /* [n] */
  double *hop_bw;        /* [n] bottleneck bandwidth of hop i (alone) */
  /* [n] hop i's bottleneck when every hop of the ring sends at once: min over
   * its links of bw / (hops of this ring crossing it), the shares the
   * aggregated ring runs at (hop_bw where no link is crossed twice; owned;
   * NULL: hop_bw, as in the rails' quotient) */
  double *hop_share_bw;
  /* [n] a rail's hops only (set by ds_ring_build_rails on each of K >= 2
   * rails; owned): hop i's bottleneck when every hop of every rail sends at
   * once, min over its links of bw / (hops of all the rails crossing it).
   * The smallest is the rate the aggregated rails' flows share links at,
   * which paces them (a rail's NVSwitch port: 450/7 GB/s on a DGX H100,
   * where its own hops see 450). NULL: hop_share_bw paces. */
  double *hop_rails_bw;
  double max_lat_ns;
  /* Latency on the critical path of 2(N-1) steps: data advances one hop per
   * step, so the chain crosses 2(N-1) consecutive hops; this is the largest
   * such sum, 2*sum(hop_lat) - min(hop_lat[i] + hop_lat[i+1]). Equals
   * 2(N-1) * hop_lat on a uniform ring. */
  double path_lat_ns;
  double min_bw;         /* the ring's bottleneck link bandwidth */
  int32_t *agg_links;    /* distinct links of all hops, sorted (owned) */
  uint32_t *agg_mult;    /* how many hops cross each */
  int32_t n_agg;
  uint8_t *hop_class;    /* [n] enum ds_hop_class of each hop (owned) */
  int32_t max_hop_links; /* longest hop route */
  /* The rings that run in its place (sim/coll/ring_rails.c, filled only by
   * ds_ring_build_rails; ds_ring_build leaves n_rails 0: this ring runs).
   * n_rails rings over the same GPUs in other orders, each carrying
   * 1/n_rails of the payload in parallel: one per NIC when the ring spans
   * nodes (rails), or one reordered ring on one node. Ring positions of
   * rail k: rails[k].gpus; rail_member[k*n + p] is the member (index into
   * gpus above) at position p of rail k, rail_pos[k*n + i] the position of
   * member i. */
  int32_t n_rails;
  struct ds_ring *rails;  /* [n_rails] (owned) */
  int32_t *rail_member;   /* [n_rails * n] (owned) */
  int32_t *rail_pos;      /* [n_rails * n] (owned) */
  /* Bus bandwidth bound of the rails together: one rail: its own
   * (ds_ring_busbw); K rails: min over links of K * bw / (hops of all
   * rails crossing it). */
  double rails_busbw;
  /* The rails as one ring, built on first use when they are interchangeable
   * (ds__ring_rails_quotient, ring_rails.h; owned, freed with the ring):
   * rails_one_state 0 not yet checked, 1 not interchangeable, 2 rails_one. */
  struct ds_ring *rails_one;
  int32_t rails_one_state;
  /* Tree collectives' shapes and routes over these members, built on first
   * use (sim/coll/coll_tree_plan.c; owned, freed with the ring). */
  struct ds__tree_plan *tree_plans;
  /* NCCL's channels where they are not the rails above (filled only by
   * ds_ring_build_rails, on one node where some pair of GPUs has a direct
   * link: sim/coll/ring_channels.h): a ring over the same members, in the
   * same order, whose rails are the rings NCCL's search packs, one per
   * channel (orders may repeat). NCCL's protocols run it (ds_ring_nccl);
   * the plain ring runs this ring's rails, one ring. NULL: none (owned). */
  struct ds_ring *chan;
  double chan_speed_bytes_per_s; /* the search's per-channel speed, NCCL's units */
  double chan_total_bytes_per_s; /* NCCL's totalBw: a GPU's links, NCCL's units */
  int32_t chan_routed;           /* 1: some ring takes a route where no direct link is */
  int32_t chan_same;             /* 1: the rings are one order repeated (NCCL's sameChannels) */
  int32_t chan_nvb;              /* 1: every member pair without an NVLink is bridged by a
                                    member's NVLinks (NCCL's PATH_NVB, ds__ring_nvb_bridged) */
};

/* Builds the ring gpus[0] -> gpus[1] -> ... -> gpus[n-1] -> gpus[0]. */
ds_status ds_ring_build(struct ds_topo *topo, const int32_t *gpus, int32_t n,
                        struct ds_ring *out, struct ds_err *err);
void ds_ring_release(struct ds_ring *ring);
/* ds_ring_build, then the rings NCCL would run in its place (n_rails
 * above; sim/coll/ring_rails.c says how they are chosen). */
ds_status ds_ring_build_rails(struct ds_topo *topo, const int32_t *gpus, int32_t n,
                              struct ds_ring *out, struct ds_err *err);
/* The ring NCCL's protocols run over these members: ring->chan when the
 * channel search made one, else ring itself. */
const struct ds_ring *ds_ring_nccl(const struct ds_ring *ring);
/* The bus bandwidth a plain ring all-reduce paces at, what the closed
 * forms pace by (ds_ring_allreduce_ns with rails,
 * ds_ring_allreduce_proto_ns under C x cap) and the bound `ddpsim topo`
 * prints. Every hop carries 2(N-1)/N of the buffer, each step behind the
 * last, so all hops move at one pace; a link that k of the ring's hops
 * cross (a hop crossing it twice counts twice) carries k times a hop's
 * bytes and holds that pace to bw / k. The least over the links crossed:
 * min_bw where no link is crossed twice, below it where hops share one
 * (host-staged copies all crossing host memory: 44.8 / 4 = 11.2 GB/s on
 * docs/examples/4x-rtx4090-nop2p.yaml, whose hops alone reach 32). With K
 * rails, each S/K: rails_busbw, K bw / k over the hops of all the rails;
 * one rail (a reordered ring): its own hops'. A bound under max-min
 * sharing (the default) whatever the chunking, and the pace the ring
 * runs at when every hop sends at once, as per flow it does (`--net
 * alpha-beta` shares no link: there the ring may run faster,
 * docs/collectives.md). */
double ds_ring_busbw(const struct ds_ring *ring);
/* The latency on the critical path: the largest path_lat_ns of the rails,
 * else path_lat_ns. */
double ds_ring_path_lat_ns(const struct ds_ring *ring);

/* The time of `steps` ring steps of step_bytes on every hop, one piece per
 * step, every member in at t = 0 and nothing else on the net, each hop
 * moving at hop_share_bw after its hop_lat_ns (ns): the longest path of the
 * per-flow ring's step dataflow
 *   S(i,k) = max(S(i,k-1) + d_i, S(i-1,k-1) + d_(i-1) + l_(i-1)),
 * d_i = step_bytes / hop_share_bw[i]. A path crosses a run W of L
 * consecutive hops (1 <= L <= steps) and spends its other steps - L sends on
 * the slowest of them, so
 *   T = max over runs W of  sum_W (d + l) + (steps - L) * max_W d,
 * at least both lower bounds: the chain of `steps` consecutive hops
 * (latency and fill each) and steps * d_slow + l_slow. Uniform ring (d, a):
 * steps * (a + d). n_rails is not looked at: this ring's own hops. */
double ds_ring_steps_ns(const struct ds_ring *ring, int32_t steps, double step_bytes);

/* Closed form of a ring all-reduce of `bytes` on this ring with one chunk
 * per step and no other traffic: ds_ring_steps_ns(2(N-1), bytes/N); on a
 * uniform ring 2(N-1)*alpha + 2(N-1)/N * S/B. Exact for the per-flow ring
 * of one ring (hops sharing a link at their shares), and for the aggregated
 * ring, which runs this form: its latency is the form less the pacing
 * 2(N-1) * d_slow. With rails: the largest of the rails' forms (each S/K;
 * a send waiting on a hop at the hop's hop_rails_bw, the pace of the rails
 * together, so that no faster link lengthens it) less the common pace
 * 2(N-1)/N * bytes / ds_ring_busbw, then plus that pace; per flow the rails' hops that share a link (the NVLink
 * ports the rails cross in a node) slow each other where they overlap,
 * which this form leaves out (docs/collectives.md). */
double ds_ring_allreduce_ns(const struct ds_ring *ring, double bytes);

struct ds_coll;

/* Called when rank `member` (its ring position) has finished its part. */
typedef void (*ds_coll_done_fn)(void *owner, int32_t member);

/* Creates a ring all-reduce of `bytes` per rank over ring (borrowed). Flows
 * are tagged (tag_base | member); the caller routes the net's callbacks
 * back with ds_coll_flow_sent and ds_coll_flow_done. */
ds_status ds_coll_allreduce_new(const struct ds_ring *ring,
                                struct ds_net *net, enum ds_coll_model model,
                                int32_t chunks, double bytes,
                                uint64_t tag_base, ds_coll_done_fn on_done,
                                void *owner, struct ds_coll **out);
/* As ds_coll_allreduce_new, under an NCCL protocol with channels: proto
 * (copied) NULL is exactly ds_coll_allreduce_new. */
ds_status ds_coll_allreduce_new_proto(const struct ds_ring *ring,
                                      struct ds_net *net,
                                      enum ds_coll_model model, int32_t chunks,
                                      double bytes,
                                      const struct ds_coll_proto *proto,
                                      uint64_t tag_base,
                                      ds_coll_done_fn on_done, void *owner,
                                      struct ds_coll **out);
/* Closed form of the above on a ring with no other traffic and one chunk
 * per step: start + sum of the path's per-step latencies + 2(N-1)/N * S *
 * w / min(C * cap, ds_ring_busbw), ns: the ring's own hops sharing a link
 * slow each other (a host-staged box's copies all crossing host memory),
 * so its busbw, not the slowest hop's own bandwidth, paces the channels.
 * With rails (largest path of the rails): the C channels are spread over
 * the K rails, C/K each. A proto runs ds_ring_nccl(ring) (its channel
 * rings, where the search made them), and so does this form. */
double ds_ring_allreduce_proto_ns(const struct ds_ring *ring,
                                  const struct ds_coll_proto *proto,
                                  double bytes);
void ds_coll_free(struct ds_coll *coll);

/* Rank at ring position `member` has reached the collective. */
ds_status ds_coll_enter(struct ds_coll *coll, int32_t member);
/* The flow tagged tag_base | member has left its links. */
ds_status ds_coll_flow_sent(struct ds_coll *coll, int32_t member);
/* The flow tagged tag_base | member has been delivered. */
ds_status ds_coll_flow_done(struct ds_coll *coll, int32_t member);
/* Whether the collective finishes every member together: all its on_done
 * calls come in one uninterrupted run at one instant, nothing else called
 * between them (the aggregated ring, its rails and the aggregated tree, whose
 * one flow per ring or tree ends every member). The executor then acts on a
 * class of ranks in lockstep at its last member instead of splitting it. */
int ds_coll_finishes_together(const struct ds_coll *coll);

/*
 * Every collective kind (issue #3), behind one interface. A table entry per
 * kind (struct ds_coll_desc, as nccl-tests' struct testColl) names it, gives
 * nccl-tests' bus factor and creates instances; ds_coll_enter/flow_sent/
 * flow_done/free above work on an instance of any kind. `bytes` follows
 * nccl-tests (and ddpreal's devices, traces/SCHEMA.md): the buffer per rank
 * for allreduce, broadcast and reduce; all-gather and gather: the receive
 * buffer (bytes/N from each rank); reduce-scatter and scatter: the send
 * buffer (bytes/N to each rank); sendrecv: the message.
 *
 *   allreduce      ring, as above (2(N-1) steps of S/N)
 *   allgather,     ring, N-1 steps of S/N (flow or aggregate):
 *   reducescatter    T = (N-1) a + (N-1)/N S/B on a uniform ring
 *   broadcast      pipelined chain along the ring from the root (reduce:
 *   reduce           to the root, from root+1), C chunks of S/C, per flow:
 *                    T = (N-1) a + (N+C-2) S/(C B)   (latency trailing);
 *                    on the ring's rails where it has them, as the ring
 *                    kinds (coll_chain_rails.c): a chain of S/K per rail
 *   gather,        point to point between the root and every other rank,
 *   scatter          all at once (NCCL 2.28 ncclGather/ncclScatter on p2p):
 *                    T = a + (N-1)/N S/B when the root's link is the bottleneck
 *   sendrecv       nccl-tests' sendrecv_perf: every member sends S to its
 *                    successor (member m to m+1 mod N) and receives S from
 *                    its predecessor, all at once (sim/coll/coll_alltoall.c):
 *                    T = a + S/B when each rank has its own link of B
 *   alltoall       nccl-tests' alltoall_perf: every member sends S/N to each
 *                    other member, all at once (its own S/N stays: a local
 *                    copy, not simulated; sim/coll/coll_alltoall.c):
 *                    T = a + (N-1)/N S/B when each rank's link of B binds
 *   send           one flow of S from member 0 (the sender) to member 1
 *                    (a schedule's send meeting its recv): T = a + S/B
 * sendrecv and alltoall run under NCCL's p2p protocols (LL or Simple) with
 * a ds_coll_proto (nccl_model.h, ds_nccl_p2p_proto): each transfer is one
 * flow carrying S * wire_factor, capped at channels * chan_cap, paying
 * start_lat_ns before and its route's hop-class latency after; a transfer
 * through host memory (its route crosses a CPU: no peer-to-peer, NCCL's SHM
 * transport) also pays one chunk's store-and-forward,
 * min(DS_P2P_STAGE_CHUNK_BYTES, its per-channel part) / its bottleneck link.
 * all-gather and reduce-scatter run under NCCL's ring protocols as the
 * all-reduce does, with N-1 steps.
 * A member finishes when it has received everything it receives and its
 * last send has left its link (p2p kinds: when its flows are delivered).
 * Flows start only once both ends have entered.
 */
enum ds_coll_kind {
  DS_COLL_ALLREDUCE,
  DS_COLL_BROADCAST,
  DS_COLL_REDUCE,
  DS_COLL_ALLGATHER,
  DS_COLL_REDUCESCATTER,
  DS_COLL_GATHER,
  DS_COLL_SCATTER,
  DS_COLL_SENDRECV,
  DS_COLL_ALLTOALL,
  DS_COLL_SEND,
  DS_COLL_KIND_COUNT
};

/*
 * All-reduce algorithms (docs/collectives.md has each one's closed form):
 *   ring              as above (sim/coll/coll_ring.c)
 *   tree              NCCL's double binary tree (sim/coll/coll_tree.c): two
 *                     complementary binary trees over the nodes, a chain
 *                     inside each node, each tree carrying half the buffer,
 *                     reduced up and broadcast down in pipelined pieces;
 *                     per flow, or aggregated (one flow per tree, equal to
 *                     per flow where NCCL's per-channel caps bind)
 *   nvls              NVLink SHARP: every GPU sends its buffer to the
 *                     NVSwitch, which reduces it and multicasts the result
 *                     back, pipelined (sim/coll/coll_tree.c, the switch as root)
 *   reduce-broadcast  every rank sends its whole buffer to the root, which
 *                     sends the sum back to each: not pipelined (sim/coll/coll_tree.c)
 *   direct            reduce-scatter then all-gather, each all-to-all: every
 *                     rank sends its S/N shard to every other (sim/coll/coll_direct.c)
 *   hierarchical      ring reduce-scatter inside each node, ring all-reduce
 *                     across nodes among the same local rank, ring
 *                     all-gather inside each node (sim/coll/coll_hier.c)
 * Only ring, tree and nvls run under NCCL's protocols (NCCL has no others).
 */
enum ds_ar_algo {
  DS_AR_RING,
  DS_AR_TREE,
  DS_AR_NVLS,
  DS_AR_DIRECT,
  DS_AR_REDUCE_BCAST,
  DS_AR_HIER,
  DS_AR_ALGO_COUNT
};

/* "ring", "tree", "nvls", "direct", "reduce-broadcast", "hierarchical". */
const char *ds_ar_algo_name(enum ds_ar_algo a);
/* Parses one of those names; DS_EUSAGE for anything else. */
ds_status ds_ar_algo_parse(const char *s, enum ds_ar_algo *out);
/* "ring, tree, nvls, direct, reduce-broadcast, hierarchical". */
const char *ds_ar_algo_names(void);

/* The schedule's `algo` of an all-reduce: the algorithm's name, with
 * "/PROTO" when it runs under an NCCL protocol ("tree/LL128"). */
#define DS_AR_ALGO_NAME_MAX 32
void ds_allreduce_algo_name(enum ds_ar_algo a, enum ds_proto p,
                            char out[DS_AR_ALGO_NAME_MAX]);
/* Parses such a name ("" is the plain ring); *p is DS_PROTO_COUNT without a
 * protocol. DS_EINPUT for anything else, or a protocol on an algorithm that
 * has none (direct, reduce-broadcast, hierarchical). */
ds_status ds_allreduce_algo_parse(const char *algo, enum ds_ar_algo *a,
                                  enum ds_proto *p);

/* The parent of node r (0..m-1) in tree 0 or 1 of NCCL's double binary tree
 * over m nodes (sim/coll/coll_tree_plan.c), -1 for the tree's root. */
int32_t ds_coll_dtree_parent(int tree, int32_t r, int32_t m);

/* The least a pipelined piece of a plain algorithm carries: one 4-byte
 * element (fp32: DDP's gradient buckets, nccl-tests' float). --ring-chunks
 * N asks for N pieces of a step (ring: S/N each step; chain: S; tree: S
 * over its trees), but NCCL never cuts more chunks than it has data for
 * (v2.30.7 src/device/all_reduce.h runRing: one loop per nranks x
 * chunkSize elements, a message smaller than a loop runs one loop of at
 * least one element), so the pieces are at most floor(step / 4 B), at
 * least 1: an 8-byte all-reduce with --ring-chunks 4096 runs one piece,
 * not 4096 of 1/512 byte. ds_coll_pieces_bound(chunks, step_bytes) is
 * that count. */
#define DS_PIECE_MIN_BYTES 4.0
int32_t ds_coll_pieces_bound(int32_t chunks, double step_bytes);

/* Pieces a tree of `depth` levels cuts `bytes` into (sim/coll/coll_tree.c): NCCL
 * moves trees in 512 KiB chunks and shrinks them so that a deep tree still
 * pipelines, here: ceil(bytes / 512 KiB), raised to min(8 depth, bytes /
 * min_piece_bytes), at most 1024 (simulation cost), at least min_pieces
 * (bounded by ds_coll_pieces_bound).
 * min_piece_bytes is what a hop must hold before it forwards
 * (ds_coll_tree_min_piece_bytes).
 * Sources: 512 KiB is Simple's stepSize, buffSizes[SIMPLE] / NCCL_STEPS =
 * 4 MiB / 8 (NCCL v2.30.7-1 src/enqueue.cc:2222 calcCollChunking,
 * src/init.cc:813 DEFAULT_BUFFSIZE, src/include/device.h:26 NCCL_STEPS);
 * 8 per level is NCCL 2.18.5's tree chunk rule (v2.18.5-1
 * src/enqueue.cc:1316 computeColl: halve chunkSize while nBytes /
 * (nChannels chunkSize) < depth * 8), which 2.20.3 dropped
 * (docs/collectives.md, "Double binary tree"); 1024 pieces: simulation
 * cost.
 * DS_TREE_MIN_PIECE_BYTES (1 KiB) is a guess (71cbcf6a, no measurement or
 * NCCL figure): NCCL 2.18.5's rule above halves the Simple tree chunk no
 * lower than 32 KiB (depth x 8 down to 128 KiB, x 4 to 64 KiB, x 1 to
 * 32 KiB), and 2.30.7's calcCollChunking has no tree branch (the chunk
 * stays stepSize). Sensitivity (2026-11-29): 512 B or 2 KiB in its place
 * move tree all-reduces (--algo tree, --proto none and Simple, 8 B-1 GiB
 * on dgx-h100, dgx-a100, 2node-ib) only from 2 KiB to 1 MiB, by -1.3 %
 * and +2.6 % at most (2node-ib Simple at 128 KiB: 113.45 us, 111.97,
 * 116.42); validation/run.py's report is byte-identical at 512 B, and at
 * 2 KiB two rows' error (busbw at 8 KiB, Azure ND H100/H200 v5) moves by
 * 0.1 %. */
#define DS_TREE_PIECE_BYTES (512.0 * 1024)
#define DS_TREE_MIN_PIECE_BYTES 1024.0
#define DS_TREE_MAX_PIECES 1024
int32_t ds_coll_tree_pieces(double bytes, int32_t depth, int32_t min_pieces,
                            double min_piece_bytes);

/* The least payload a rank of a tree or chain must hold under protocol p
 * before the next rank can start on it, 0 where the protocol has no such
 * unit (Simple). LL forwards line by line: every thread polls its own 16 B
 * line's flags, reduces it and stores it to the next rank with no wait on
 * the rest of the chunk, and the next rank's thread of the same index polls
 * that same line (NCCL v2.30.7 src/device/prims_ll.h LLGenericOp: readLL,
 * applyReduce, storeLL; 8 B of payload a line). LL128 forwards warp by warp:
 * a warp loads its slice of WARP_SIZE x NCCL_LL128_SHMEM_ELEMS_PER_THREAD =
 * 256 words (2 KiB, 16 lines of 128 B) and spins until every line's flag
 * shows (prims_ll128.h recvReduceSendCopy: __any_sync(WARP_MASK,
 * needReload)) before it stores any of it, so the unit is the slice's
 * DataEltPerSlice, 15/16 of 2 KiB = 1920 B of payload, not one 120 B line.
 * The threads' barriers per chunk (waitSend, postRecv) order a rank's own
 * threads and the buffer's credits, not the next rank's start. */
#define DS_LL_LINE_PAYLOAD_BYTES 8.0
#define DS_LL128_SLICE_PAYLOAD_BYTES 1920.0
double ds_coll_forward_unit_bytes(enum ds_proto p);

/* The least a tree's hop holds before forwarding, payload bytes: LL and
 * LL128 ds_coll_forward_unit_bytes (8, 1920); Simple posts a step only after
 * copying all of it (prims_simple.h genericOp), and the plain tree (p NULL)
 * has no protocol: DS_TREE_MIN_PIECE_BYTES. */
double ds_coll_tree_min_piece_bytes(const struct ds_coll_proto *p);

/* What to create. Pointers are borrowed and must outlive the instance. */
struct ds_coll_spec {
  enum ds_coll_kind kind;
  struct ds_topo *topo;          /* routes of point-to-point kinds */
  const struct ds_ring *ring;    /* the members, in ring order */
  struct ds_net *net;
  enum ds_coll_model model;      /* ignored where the collective has no
                                    aggregated execution (ds_coll_aggregates) */
  int32_t chunks;                /* pipelined pieces per step (chain: in all), >= 1 */
  double bytes;                  /* as above */
  int32_t root;                  /* member index of the root; send: 0; else ignored */
  const struct ds_coll_proto *proto; /* allreduce ring, tree or nvls; allgather,
                                        reducescatter (ring); sendrecv, alltoall
                                        (p2p, LL or Simple); broadcast (its
                                        chain, ds_nccl_chain_proto); NULL: links' own
                                        bandwidth and latency */
  enum ds_ar_algo algo;          /* allreduce only (0: the ring) */
  uint64_t tag_base;             /* flows are tagged tag_base | index (< 2^32) */
  ds_coll_done_fn on_done;
  void *owner;
  /* The caller's promise: every member enters at the same time and no other
   * flow shares the net while it runs. The per-flow ring's rails then run
   * as one when they are interchangeable (ds__ring_rails_quotient,
   * sim/coll/ring_rails.h): the same times with 1/K of the flows; and a
   * per-flow ring whose hops cross links of their own, alike hop for hop
   * (ds__ring_symmetric, coll_impl.h), runs member 0's flows alone for
   * every member: the same times with 1/N of the flows. */
  int alone;
};

struct ds_coll_desc {
  enum ds_coll_kind kind;
  const char *name;  /* the schedule's kind ("allgather"); "sendrecv" */
  const char *algo;  /* what runs: "ring" or "p2p" */
  int rooted;        /* needs spec.root */
  /* nccl-tests' busbw = algbw * bus_factor(N). */
  double (*bus_factor)(int32_t n);
  ds_status (*create)(const struct ds_coll_spec *spec, struct ds_coll **out,
                      struct ds_err *err);
};

/* Whether the kind runs under NCCL's protocols (spec.proto): allreduce,
 * allgather and reducescatter (rings), broadcast and reduce (chains,
 * ds_nccl_chain), sendrecv and alltoall (p2p). */
int ds_coll_kind_has_protocols(enum ds_coll_kind kind);

/* Whether the kind runs as a pipelined chain along the ring from or to its
 * root (broadcast, reduce: coll_chain.c), NCCL's one algorithm for them. */
int ds_coll_kind_is_chain(enum ds_coll_kind kind);

/* Whether the kind splits its buffer over the ranks (allgather,
 * reducescatter, alltoall, gather, scatter): nccl-tests gives each rank a
 * share and prints its count (base/nccltests.h). */
int ds_coll_kind_splits_buffer(enum ds_coll_kind kind);

/* What --ring-chunks N > 1 does to a collective of kind (an all-reduce
 * runs algo; nccl: under one of NCCL's protocols). It cuts each step of
 * the plain ring, its all-gather and reduce-scatter, hierarchical's rings,
 * the broadcast and reduce chains and the plain tree into N pieces (or
 * more); gather, scatter, sendrecv, alltoall and the direct and
 * reduce-broadcast all-reduces have no ring step to cut; under NCCL's model
 * NCCL pipelines by its own chunks and slices, which the model derives
 * (ds_nccl_algo_proto, ds_nccl_chain), so more pieces would pipeline
 * twice. The one rule of ddpsim and ddpsim collective (sim/cli/proto_flag.h
 * ds_ring_chunks_refuse says it). */
enum ds_ring_chunks_use { DS_RING_CHUNKS_CUT, DS_RING_CHUNKS_NO_STEP, DS_RING_CHUNKS_NCCL };
enum ds_ring_chunks_use ds_coll_ring_chunks_use(enum ds_coll_kind kind, enum ds_ar_algo algo,
                                                int nccl);

/* Whether a collective of kind (an all-reduce: algo) has an aggregated
 * execution, so that DS_COLL_AGGREGATE changes what runs: the ring kinds
 * (all-reduce ring, all-gather, reduce-scatter), hierarchical's rings, the
 * double binary tree, and nvls whose members span nodes (NCCL's NVLSTree,
 * a double binary tree over the nodes: coll_tree.c). The others run per
 * flow whatever the model: direct, reduce-broadcast, nvls within one node,
 * the chains (broadcast, reduce) and the p2p kinds. spans_nodes: the
 * members sit on two nodes or more (ds_ring_spans_nodes). The one rule of
 * the collective model ddpsim's rows and `ddpsim collective`'s coll_model
 * column name. */
int ds_coll_aggregates(enum ds_coll_kind kind, enum ds_ar_algo algo, int spans_nodes);
/* Whether the ring's members sit on two topology nodes or more (the nodes
 * coll_tree.c groups them by). */
int ds_ring_spans_nodes(const struct ds_topo *topo, const struct ds_ring *ring);

/* The table entry of a kind, or of a name; NULL when there is none. */
const struct ds_coll_desc *ds_coll_desc_of(enum ds_coll_kind kind);
const struct ds_coll_desc *ds_coll_desc_find(const char *name);
/* "allreduce, broadcast, ..." (every name, for messages). */
const char *ds_coll_kind_names(void);

/* Creates an instance of spec->kind; DS_EUSAGE (message in err) for what
 * the kind cannot run (a protocol where NCCL has none, a root out of range,
 * send of other than 2 members, sendrecv or alltoall of fewer than 2). */
ds_status ds_coll_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                      struct ds_err *err);

/* Chunks of a pipelined chain (broadcast, reduce) as NCCL cuts it: its
 * Simple protocol moves a chain in steps of buffSize/NCCL_STEPS = 4 MiB / 8
 * = 512 KiB (BROADCAST_CHUNKSTEPS = 1), so ceil(bytes / 512 KiB), at least
 * min_chunks and at least 1, at most 2^24 (a chain is (N-1) C flows: past
 * 8.8e12 bytes the pieces grow instead). The chain cuts whole 512 KiB
 * pieces and a last of the rest when chunks is ceil(bytes / 512 KiB)
 * (plain; under a protocol NCCL's own pieces, ds_nccl_chain), equal pieces
 * where min_chunks asks for more or the cap holds fewer
 * (ds_coll_chain_cut). */
#define DS_CHAIN_CHUNK_BYTES (512.0 * 1024)
int32_t ds_coll_chain_chunks(double bytes, int32_t min_chunks);

/* The plain chain's cut of bytes into chunks >= 1 pieces: every piece but
 * the last *piece_bytes, the last *last_bytes (<= *piece_bytes; together
 * bytes). NCCL's whole 512 KiB pieces and a last of the rest where chunks
 * is ds_coll_chain_chunks(bytes, 1) and they hold bytes; else chunks equal
 * pieces. */
void ds_coll_chain_cut(double bytes, int32_t chunks, double *piece_bytes, double *last_bytes);

/* The chunk a host-staged transfer (NCCL's SHM transport: no peer-to-peer,
 * the route crosses the CPU) is stored and forwarded in: NCCL's p2p chunk
 * off NVLink, NCCL_P2P_PCI_CHUNKSIZE = 128 KiB (src/init.cc
 * computeBuffSizes). The receiver reads a chunk from host memory once the
 * sender has written all of it, so a staged transfer ends one chunk's time
 * on its bottleneck link after a cut-through one would. Used with and
 * without NCCL's protocols. */
#define DS_P2P_STAGE_CHUNK_BYTES (128.0 * 1024)
/* alltoall runs N(N-1) flows: it is simulated up to this many ranks. */
#define DS_ALLTOALL_MAX_RANKS 1024

#ifdef __cplusplus
}
#endif

#endif /* DS_COLL_H */
