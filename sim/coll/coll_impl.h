/*
 * Internal to the collectives (sim/coll_*.c): every collective instance
 * begins with struct ds_coll, whose table says how it runs; the public
 * ds_coll_enter / ds_coll_flow_sent / ds_coll_flow_done / ds_coll_free
 * (sim/coll/coll_table.c) dispatch through it. An implementation embeds struct
 * ds_coll as its first member and converts back with a plain pointer cast
 * (C11 6.7.2.1: a pointer to a struct points to its first member).
 */
#ifndef DS_COLL_IMPL_H
#define DS_COLL_IMPL_H

#include "sim/coll/coll.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds__tree_plan;

struct ds__coll_vtbl {
  ds_status (*enter)(struct ds_coll *c, int32_t member);
  /* idx: the low 32 bits of the flow's tag, the implementation's own index. */
  ds_status (*flow_sent)(struct ds_coll *c, int32_t idx);
  ds_status (*flow_done)(struct ds_coll *c, int32_t idx);
  void (*destroy)(struct ds_coll *c);
  /* Whether every member's done comes in one uninterrupted run of on_done
   * calls at one instant (ds_coll_finishes_together); NULL: never. */
  int (*together)(const struct ds_coll *c);
};

struct ds_coll {
  const struct ds__coll_vtbl *vt;
};

/* One member's progress in a pipelined chain of sends, the same counters
 * for the ring (sim/coll/coll_ring.c, by ring position) and the
 * broadcast/reduce chain (sim/coll/coll_chain.c, by chain position): each
 * file's rules say when a send may start and when the member is done. */
struct ds__coll_member {
  int32_t sends_started;
  int32_t sends_done;
  int32_t received;  /* chunks that have arrived from the predecessor */
  uint8_t entered;   /* the member has entered the collective */
  uint8_t in_flight; /* its last send has not left its link yet: the next waits */
  uint8_t done;
};

/* Ring of `steps` steps per chunk (2(N-1): all-reduce; N-1: all-gather and
 * reduce-scatter), chunk_bytes = bytes/N/chunks (sim/coll/coll_ring.c). */
ds_status ds__coll_ring_new(const struct ds_ring *ring, struct ds_net *net,
                            enum ds_coll_model model, int32_t chunks,
                            int32_t steps, double bytes,
                            const struct ds_coll_proto *proto, uint64_t tag_base,
                            ds_coll_done_fn on_done, void *owner,
                            struct ds_coll **out);
/* ds__coll_ring_new taking the aggregated ring's step time from `like` (may
 * be NULL), a collective of ds__coll_ring_new over a ring that
 * ds__ring_steps_alike says alike, built with the same model, steps, bytes
 * and no protocol, where it is one; else computed: the rails of a
 * composite, often all alike, compute it once (bench/README.md, 2026-11-29
 * "the rails' step time"). */
ds_status ds__coll_ring_new_like(const struct ds_ring *ring, struct ds_net *net,
                                 enum ds_coll_model model, int32_t chunks,
                                 int32_t steps, double bytes,
                                 const struct ds_coll_proto *proto, uint64_t tag_base,
                                 ds_coll_done_fn on_done, void *owner,
                                 const struct ds_coll *like, struct ds_coll **out);
/* Whether rings a and b take the same step times (coll_ring.c's
 * ring_steps: the same hops' bandwidths, paces and latencies, bit for
 * bit): a rail alike the one before need not compute its own. */
int ds__ring_steps_alike(const struct ds_ring *a, const struct ds_ring *b);

/* Whether every hop of r crosses links of its own (no link in two hops, none
 * twice), alike hop for hop: as many, of equal bandwidth and multiplicity
 * position by position, equal hop latency and class. Plain rings only
 * (n_rails 0), N >= 2. */
int ds__ring_symmetric(const struct ds_topo *topo, const struct ds_ring *r);
/* Under ds_coll_spec's alone promise (every member enters at once, nothing
 * else on the net): a per-flow ring (from ds__coll_ring_new, before any
 * member entered) over a symmetric ring runs member 0's flows alone, for
 * every member (sim/coll/coll_ring.c); anything else is left as it is.
 * Returns 1 when it folded. */
int ds__coll_ring_fold_symmetric(struct ds_coll *c, const struct ds_topo *topo);

/* Builds rail k's collective for ds__coll_rails_compose: its flows tagged
 * tag_base | its own index, on_done(owner, the rail's position) when it has
 * finished a member. arg: the caller's, the same for every rail. */
typedef ds_status (*ds__coll_rail_new_fn)(void *arg, int32_t k, uint64_t tag_base,
                                          ds_coll_done_fn on_done, void *owner,
                                          struct ds_coll **out);
/* Rails 0..k-1 of ring (1 <= k <= ring->n_rails) run side by side
 * (sim/coll/coll_rails.c), each built by rail_new: member i enters rail r at
 * rail_pos[r*n + i] and is done (on_done(owner, i)) when all k have finished
 * it. Flows are tagged tag_base | (r << bits | the rail's own index).
 * folded: only rail 0 runs, the quotient of all k (ds__ring_rails_quotient),
 * its position p entered once the k members at p have. err may be NULL. */
ds_status ds__coll_rails_compose(const struct ds_ring *ring, int32_t k, int folded,
                                 uint64_t tag_base, ds_coll_done_fn on_done, void *owner,
                                 ds__coll_rail_new_fn rail_new, void *arg, struct ds_coll **out,
                                 struct ds_err *err);
/* The rings of ring->rails together (sim/coll/coll_rails.c, on
 * ds__coll_rails_compose): rail k runs a ring of `steps` steps over
 * rails[k] with bytes/K and proto's channels spread over the rails
 * (ds__ring_rail_channels each); a member is done when every rail is.
 * ring->n_rails >= 1. alone_topo (non-NULL only per flow, under
 * ds_coll_spec's alone promise): interchangeable rails run as one
 * (ds__ring_rails_quotient). */
ds_status ds__coll_rails_new(const struct ds_ring *ring, struct ds_net *net,
                             enum ds_coll_model model, int32_t chunks, int32_t steps,
                             double bytes, const struct ds_coll_proto *proto,
                             uint64_t tag_base, ds_coll_done_fn on_done, void *owner,
                             const struct ds_topo *alone_topo, struct ds_coll **out);
/* Channels of each of n_rails rails when `channels` are spread over them:
 * channels / n_rails, at least 1 (n_rails <= 1: channels). */
int32_t ds__ring_rail_channels(int32_t channels, int32_t n_rails);

ds_status ds__coll_chain_new(const struct ds_coll_spec *spec, int reduce,
                             struct ds_coll **out, struct ds_err *err);
/* The chain over ring's rails (sim/coll/coll_chain_rails.c, on
 * ds__coll_rails_compose): ring is spec->ring, or under a protocol
 * ds_ring_nccl's, with n_rails >= 1. */
ds_status ds__coll_chain_rails_new(const struct ds_coll_spec *spec, const struct ds_ring *ring,
                                   int reduce, struct ds_coll **out, struct ds_err *err);
/* All-reduce algorithms other than the ring (coll.h enum ds_ar_algo). */
ds_status ds__coll_tree_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                            struct ds_err *err);
ds_status ds__coll_reduce_bcast_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                                    struct ds_err *err);
/* Frees the tree plans cached on a ring (sim/coll/coll_tree_plan.c); NULL is fine. */
void ds__coll_tree_plans_free(struct ds__tree_plan *plans);
ds_status ds__coll_nvls_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                            struct ds_err *err);
ds_status ds__coll_direct_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                              struct ds_err *err);
ds_status ds__coll_hier_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                            struct ds_err *err);
/* The store-and-forward wait of a transfer whose route (links[0..n)) is
 * staged in host memory, i.e. passes a CPU vertex: one chunk,
 * min(DS_P2P_STAGE_CHUNK_BYTES, wire_bytes_per_channel), at the route's
 * bottleneck (no faster than chan_cap; INFINITY: none), ns; 0 for a route
 * that is not staged (sim/coll/coll_alltoall.c). */
double ds__coll_stage_fill_ns(const struct ds_topo *t, const int32_t *links, int32_t n,
                              double wire_bytes_per_channel, double chan_cap);
/* sendrecv and alltoall (sim/coll/coll_alltoall.c). */
ds_status ds__coll_alltoall_new(const struct ds_coll_spec *spec, enum ds_coll_kind kind,
                                struct ds_coll **out, struct ds_err *err);
/* gather, scatter and send (sim/coll/coll_p2p.c). */
ds_status ds__coll_p2p_new(const struct ds_coll_spec *spec,
                           enum ds_coll_kind kind, struct ds_coll **out,
                           struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_COLL_IMPL_H */
