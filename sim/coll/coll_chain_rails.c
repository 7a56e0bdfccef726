/*
 * Broadcast and reduce over a ring's rails (coll.h, struct ds_ring's
 * n_rails): NCCL runs them with its Ring algorithm on the same ring
 * channels as the all-reduce, each channel a ring in the searched order
 * carrying its part of the payload (src/device/broadcast.h runRing walks
 * ncclShmem.channel.ring, the channel's userRanks; ncclCollCbdPart gives
 * each channel its offset and count; src/enqueue.cc topoGetAlgoInfo picks
 * nc of comm->nChannels for the Ring algorithm, as for the all-reduce).
 * So, as the ring kinds run their rails (sim/coll/coll_rails.c's
 * ds__coll_rails_compose, which runs the rails side by side), rail k runs
 * sim/coll/coll_chain.c's chain over rails[k] in that rail's order, from
 * (broadcast) or towards (reduce) the root, which is the same member in
 * every rail and so sits at rail_pos[k*n + root]; a member is done when
 * every rail it runs in is.
 *
 * Plain (no protocol): K rails, S/K each, in NCCL's 512 KiB pieces of the
 * rail's share where the caller asked for NCCL's cut of S
 * (ds_coll_chain_chunks), else spec.chunks equal pieces. Uniform rails:
 *   T = max over rails of ((N-1) a_k + (N+C-2) (S/K) / (C B)).
 * Under a protocol of nc channels: NCCL runs channel j on ring channel j,
 * so only the first min(nc, K) rails run (the ring channels of one node
 * are one rail each; across nodes each rail is a NIC's), each with nc / K'
 * channels (at least 1, ds__ring_rail_channels as the ring kinds) and S/K'
 * of the payload; every channel runs as the fullest one (coll_chain.c),
 * whose share is the protocol's share_bytes, raised to S / (K' channels)
 * where the rounding of nc / K' leaves channels out (its pieces recut:
 * whole pieces and a last of the rest).
 */
#include <math.h>
#include <stdlib.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"

/* What every rail's chain shares: the spec with a rail's bytes, chunks and
 * protocol; rail_new fills in the rail's ring, root, tag and owner. */
struct chain_rail_args {
  struct ds_coll_spec rail_spec;
  const struct ds_ring *ring;
  int32_t root; /* the member */
  int reduce;
  struct ds_err *err;
};

static ds_status chain_rail_new(void *arg, int32_t k, uint64_t tag_base, ds_coll_done_fn on_done,
                                void *owner, struct ds_coll **out) {
  const struct chain_rail_args *a = arg;
  struct ds_coll_spec rs = a->rail_spec;
  rs.ring = &a->ring->rails[k];
  rs.root = a->ring->rail_pos[(size_t)k * a->ring->n + a->root];
  rs.tag_base = tag_base;
  rs.on_done = on_done;
  rs.owner = owner;
  return ds__coll_chain_new(&rs, a->reduce, out, a->err);
}

ds_status ds__coll_chain_rails_new(const struct ds_coll_spec *spec, const struct ds_ring *ring,
                                   int reduce, struct ds_coll **out, struct ds_err *err) {
  if (ring->n_rails < 1 || ring->n != spec->ring->n)
    return ds_err_set(err, DS_EINTERNAL, "chain: no rails to run on");
  int32_t k = ring->n_rails;
  if (spec->proto && spec->proto->channels >= 1 && spec->proto->channels < k)
    k = spec->proto->channels; /* NCCL's channel j runs on ring channel j */
  struct chain_rail_args a = {.rail_spec = *spec, .ring = ring, .root = spec->root,
                              .reduce = reduce, .err = err};
  struct ds_coll_spec *rs = &a.rail_spec;
  rs->bytes = spec->bytes / k;
  if (!spec->proto && spec->chunks > 1 && spec->chunks == ds_coll_chain_chunks(spec->bytes, 1))
    rs->chunks = ds_coll_chain_chunks(rs->bytes, 1); /* NCCL's cut of the rail's share */
  struct ds_coll_proto rail_proto;
  if (spec->proto) {
    const struct ds_coll_proto *p = spec->proto;
    rail_proto = *p;
    rail_proto.channels = ds__ring_rail_channels(p->channels, k);
    double share = p->share_bytes > 0 ? p->share_bytes : spec->bytes / p->channels;
    double least = rs->bytes / rail_proto.channels;
    if (share < least) {
      /* channels left out by nc / K' rounding: the others carry their part */
      share = least;
      if (p->piece_bytes > 0) {
        double pieces = ceil(share / p->piece_bytes * (1 - 1e-12));
        rs->chunks = pieces > (1 << 24) ? (1 << 24) : (int32_t)pieces;
        if (rs->chunks < 2) rail_proto.piece_bytes = 0;
      }
    }
    rail_proto.share_bytes = share;
    /* a rail moves at least its fullest channel's share */
    if (rs->bytes < share) rs->bytes = share;
    rs->proto = &rail_proto;
  }
  return ds__coll_rails_compose(ring, k, 0, spec->tag_base, spec->on_done, spec->owner,
                                chain_rail_new, &a, out, err);
}
