/*
 * Broadcast and reduce over a ring's rails (coll.h, struct ds_ring's
 * n_rails): NCCL runs them with its Ring algorithm on the same ring
 * channels as the all-reduce, each channel a ring in the searched order
 * carrying its part of the payload (src/device/broadcast.h runRing walks
 * ncclShmem.channel.ring, the channel's userRanks; ncclCollCbdPart gives
 * each channel its offset and count; src/enqueue.cc topoGetAlgoInfo picks
 * nc of comm->nChannels for the Ring algorithm, as for the all-reduce).
 * So, as sim/coll/coll_rails.c runs the ring kinds, rail k runs
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
 * Flows are tagged tag_base | (k << bits | the chain's own index).
 */
#include <math.h>
#include <stdlib.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"

struct chain_rail {
  struct chain_rails *rc;
  int32_t k;
  struct ds_coll *coll;
};

struct chain_rails {
  struct ds_coll base; /* first: see coll_impl.h */
  const struct ds_ring *ring;
  int32_t k;           /* rails run */
  struct chain_rail *rails; /* [k] */
  int32_t *rails_done; /* [n] per member: rails that finished it */
  int bits;            /* flow index: rail << bits | the chain's own index */
  ds_coll_done_fn on_done;
  void *owner;
};

static void rail_done(void *owner, int32_t pos) {
  struct chain_rail *r = owner;
  struct chain_rails *c = r->rc;
  int32_t member = c->ring->rail_member[(size_t)r->k * c->ring->n + pos];
  if (++c->rails_done[member] == c->k) c->on_done(c->owner, member);
}

static ds_status chain_rails_enter(struct ds_coll *base, int32_t member) {
  struct chain_rails *c = (struct chain_rails *)base;
  for (int32_t k = 0; k < c->k; k++)
    DS_CHECK(ds_coll_enter(c->rails[k].coll, c->ring->rail_pos[(size_t)k * c->ring->n + member]));
  return DS_OK;
}

static ds_status chain_rails_flow_sent(struct ds_coll *base, int32_t idx) {
  struct chain_rails *c = (struct chain_rails *)base;
  uint32_t u = (uint32_t)idx;
  return ds_coll_flow_sent(c->rails[u >> c->bits].coll, (int32_t)(u & ((1u << c->bits) - 1)));
}

static ds_status chain_rails_flow_done(struct ds_coll *base, int32_t idx) {
  struct chain_rails *c = (struct chain_rails *)base;
  uint32_t u = (uint32_t)idx;
  return ds_coll_flow_done(c->rails[u >> c->bits].coll, (int32_t)(u & ((1u << c->bits) - 1)));
}

static void chain_rails_destroy(struct ds_coll *base) {
  struct chain_rails *c = (struct chain_rails *)base;
  if (c->rails)
    for (int32_t k = 0; k < c->k; k++) ds_coll_free(c->rails[k].coll);
  free(c->rails);
  free(c->rails_done);
  free(c);
}

static const struct ds__coll_vtbl chain_rails_vtbl = {
    .enter = chain_rails_enter,
    .flow_sent = chain_rails_flow_sent,
    .flow_done = chain_rails_flow_done,
    .destroy = chain_rails_destroy,
};

ds_status ds__coll_chain_rails_new(const struct ds_coll_spec *spec, const struct ds_ring *ring,
                                   int reduce, struct ds_coll **out, struct ds_err *err) {
  if (ring->n_rails < 1 || ring->n != spec->ring->n)
    return ds_err_set(err, DS_EINTERNAL, "chain: no rails to run on");
  struct chain_rails *c = calloc(1, sizeof *c);
  if (!c) return ds_err_set(err, DS_ENOMEM, "collective: out of memory");
  c->base.vt = &chain_rails_vtbl;
  c->ring = ring;
  c->k = ring->n_rails;
  if (spec->proto && spec->proto->channels >= 1 && spec->proto->channels < c->k)
    c->k = spec->proto->channels; /* NCCL's channel j runs on ring channel j */
  c->on_done = spec->on_done;
  c->owner = spec->owner;
  while ((1 << c->bits) < ring->n) c->bits++;
  if (((int64_t)c->k << c->bits) > INT32_MAX) {
    int32_t k = c->k;
    free(c);
    return ds_err_set(err, DS_EINTERNAL, "chain: %d rails of %d members overflow a flow index",
                      (int)k, (int)ring->n);
  }
  c->rails = calloc((size_t)c->k, sizeof *c->rails);
  c->rails_done = calloc((size_t)ring->n, sizeof *c->rails_done);
  if (!c->rails || !c->rails_done) {
    chain_rails_destroy(&c->base);
    return ds_err_set(err, DS_ENOMEM, "collective: out of memory");
  }
  struct ds_coll_spec rs = *spec;
  rs.bytes = spec->bytes / c->k;
  rs.on_done = rail_done;
  if (!spec->proto && spec->chunks > 1 && spec->chunks == ds_coll_chain_chunks(spec->bytes, 1))
    rs.chunks = ds_coll_chain_chunks(rs.bytes, 1); /* NCCL's cut of the rail's share */
  struct ds_coll_proto rail_proto;
  if (spec->proto) {
    const struct ds_coll_proto *p = spec->proto;
    rail_proto = *p;
    rail_proto.channels = ds__ring_rail_channels(p->channels, c->k);
    double share = p->share_bytes > 0 ? p->share_bytes : spec->bytes / p->channels;
    double least = rs.bytes / rail_proto.channels;
    if (share < least) {
      /* channels left out by nc / K' rounding: the others carry their part */
      share = least;
      if (p->piece_bytes > 0) {
        double pieces = ceil(share / p->piece_bytes * (1 - 1e-12));
        rs.chunks = pieces > (1 << 24) ? (1 << 24) : (int32_t)pieces;
        if (rs.chunks < 2) rail_proto.piece_bytes = 0;
      }
    }
    rail_proto.share_bytes = share;
    /* a rail moves at least its fullest channel's share */
    if (rs.bytes < share) rs.bytes = share;
    rs.proto = &rail_proto;
  }
  for (int32_t k = 0; k < c->k; k++) {
    c->rails[k] = (struct chain_rail){.rc = c, .k = k};
    rs.ring = &ring->rails[k];
    rs.root = ring->rail_pos[(size_t)k * ring->n + spec->root];
    rs.tag_base = spec->tag_base | ((uint64_t)k << c->bits);
    rs.owner = &c->rails[k];
    ds_status st = ds__coll_chain_new(&rs, reduce, &c->rails[k].coll, err);
    if (st != DS_OK) {
      chain_rails_destroy(&c->base);
      return st;
    }
  }
  *out = &c->base;
  return DS_OK;
}
