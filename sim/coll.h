/*
 * Collectives on the network model. This version implements the ring
 * all-reduce (reduce-scatter then all-gather, 2(N-1) steps), in two
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
 */
#ifndef DS_COLL_H
#define DS_COLL_H

#include <stdint.h>

#include "../traces/status.h"
#include "engine.h"
#include "net.h"
#include "topo.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_coll_model { DS_COLL_FLOW, DS_COLL_AGGREGATE };

/* A ring over GPUs: routes of each hop, and its slowest hop. */
struct ds_ring {
  int32_t n;             /* ranks */
  int32_t *gpus;         /* [n] GPU of each ring position (owned) */
  int32_t *hop_first;    /* [n+1] hop i's links are hop_links[hop_first[i]..] */
  int32_t *hop_links;    /* owned */
  double *hop_lat_ns;    /* [n] */
  double *hop_bw;        /* [n] bottleneck bandwidth of hop i (alone) */
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
};

/* Builds the ring gpus[0] -> gpus[1] -> ... -> gpus[n-1] -> gpus[0]. */
ds_status ds_ring_build(struct ds_topo *topo, const int32_t *gpus, int32_t n,
                        struct ds_ring *out, struct ds_err *err);
void ds_ring_release(struct ds_ring *ring);

/* Closed form of a ring all-reduce of `bytes` on this ring with one chunk
 * per step and no contention: path_lat + 2(N-1) * bytes/N / min_bw, in ns;
 * on a uniform ring 2(N-1)*alpha + 2(N-1)/N * S/B. Exact for the per-flow
 * ring when every hop has the same bandwidth; with unequal hops the slowest
 * one paces every step and this is a lower bound within the latency sum. */
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
void ds_coll_free(struct ds_coll *coll);

/* Rank at ring position `member` has reached the collective. */
ds_status ds_coll_enter(struct ds_coll *coll, int32_t member);
/* The flow tagged tag_base | member has left its links. */
ds_status ds_coll_flow_sent(struct ds_coll *coll, int32_t member);
/* The flow tagged tag_base | member has been delivered. */
ds_status ds_coll_flow_done(struct ds_coll *coll, int32_t member);

#ifdef __cplusplus
}
#endif

#endif /* DS_COLL_H */
