/*
 * Broadcast and reduce as NCCL's ring algorithm runs them: a pipelined
 * chain along the ring, from the root (broadcast: root, root+1, ..., root-1)
 * or towards it (reduce: root+1, ..., root-1, root). The payload is cut into
 * C chunks of S/C; chain position p sends chunk c to p+1 once it has
 * received chunk c (p > 0) and its previous send has left its link. The
 * hop's latency is trailing, as in the ring all-reduce (sim/coll/coll_ring.c), so
 * on a uniform chain of hop latency a, bandwidth B, t = S/(C B):
 *   start(p, c) = p (t + a) + c t,
 *   T = (N-1) a + (N+C-2) t = (N-1) a + (N+C-2) S/(C B).
 * Without a protocol the C chunks are NCCL's (ds_coll_chain_chunks, coll.h):
 * whole 512 KiB pieces P and a last of the rest r = S - (C-1) P, which
 * trails the whole ones (as under a protocol, below):
 *   T = (N-1) a + ((N+C-3) P + r) / B      (C >= 2),
 * equal pieces only where --ring-chunks asks for more than NCCL's count or
 * its cap of 2^24 holds fewer (ds_coll_chain_cut).
 * Position p finishes when it has received C chunks (p > 0) and its C sends
 * have left (p < N-1). The reduction arithmetic is not charged (as for the
 * all-reduce). Always per flow: (N-1) C flows.
 *
 * Under an NCCL protocol (spec->proto; nccl_model.h ds_nccl_chain_proto) the
 * proto's channels run the chain side by side over the same routes, as the
 * ring's do (coll.h): each piece is one flow of multiplicity nChannels
 * carrying its share times the wire factor, capped per channel; the share
 * is the fullest channel's s (proto->share_bytes: NCCL's plan gives the
 * first channels whole cells, the last the rest; S/C where equal), which
 * sets the finish; a hop's latency is the protocol's for its class, and
 * the start latency (NCCL's base latency and the kernel's launch) is paid
 * once, before the root's first send (every rank's kernel is launched
 * alike; the others wait for data). Uniform chain, C channels of cap c,
 * wire w, hop latency h:
 *   T = start + (N-1) h + (N+K-2) s w / (K min(c, B / C))   (K pieces).
 * NCCL's pieces (proto->piece_bytes, ds_nccl_chain) are whole but the
 * last: K-1 of P per channel and the rest r = s - (K-1) P <= P. Each
 * position forwards a piece once it holds all of it, so the whole pieces
 * set the pace and r trails them:
 *   T = start + (N-1) h + ((N-1) P + (K-2) P + r) w / min(c, B / C)
 * (K >= 2; K = 1 is store and forward of the share, (N-1) s). Under
 * Simple a piece is one 512 KiB step and a channel's share under a step
 * crosses each hop whole: NCCL posts a chunk only once it is copied. Under
 * LL and LL128 a piece is what the next rank can start on, a line (8 B) or
 * a warp slice (1920 B), at most 16 (N-1) equal pieces (nccl_model.h,
 * ds_nccl_chain_chunks; coll.h ds_coll_forward_unit_bytes).
 *
 * This is one chain over one ring (spec->ring, in its order). A ring with
 * rails runs one such chain per rail, S/K each, from the same root GPU
 * (sim/coll/coll_chain_rails.c), as NCCL runs each channel's part on that
 * channel's ring.
 */
#include <stdlib.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"

struct chain_coll {
  struct ds_coll base; /* first: see coll_impl.h */
  const struct ds_ring *ring;
  struct ds_net *net;
  int32_t n;
  int32_t start;  /* member at chain position 0 */
  int32_t chunks;
  double chunk_bytes;      /* every piece's flow but the last */
  double last_chunk_bytes; /* the last piece's flow */
  uint64_t tag_base;
  ds_coll_done_fn on_done;
  void *owner;
  struct ds__coll_member *pos; /* [n] by chain position */
  /* under a protocol: start latency, per-hop latency by ring hop, and each
   * hop link's multiplicity (the channels); hop_lat NULL without one */
  double start_lat_ns;
  double chan_cap;
  double *hop_lat;   /* [n] */
  uint32_t *mult;    /* [max_hop_links] */
};

static int32_t member_at(const struct chain_coll *c, int32_t p) {
  return (c->start + p) % c->n;
}

static void check_done(struct chain_coll *c, int32_t p) {
  struct ds__coll_member *s = &c->pos[p];
  if (s->done || !s->entered) return;
  if (p > 0 && s->received < c->chunks) return;
  if (p < c->n - 1 && s->sends_done < c->chunks) return;
  s->done = 1;
  c->on_done(c->owner, member_at(c, p));
}

static ds_status try_send(struct chain_coll *c, int32_t p) {
  if (p >= c->n - 1) return DS_OK;
  struct ds__coll_member *s = &c->pos[p];
  if (!s->entered || !c->pos[p + 1].entered || s->in_flight) return DS_OK;
  if (s->sends_started >= c->chunks) return DS_OK;
  if (p > 0 && s->received <= s->sends_started) return DS_OK;
  const struct ds_ring *r = c->ring;
  int32_t m = member_at(c, p); /* its ring hop m -> m+1 */
  s->in_flight = 1;
  s->sends_started++;
  double bytes = s->sends_started == c->chunks ? c->last_chunk_bytes : c->chunk_bytes;
  if (c->hop_lat)
    return ds_net_flow_start_capped(c->net, r->hop_links + r->hop_first[m], c->mult,
                                    r->hop_first[m + 1] - r->hop_first[m], bytes,
                                    p == 0 && s->sends_started == 1 ? c->start_lat_ns : 0,
                                    c->hop_lat[m], c->chan_cap, c->tag_base | (uint64_t)p);
  return ds_net_flow_start(c->net, r->hop_links + r->hop_first[m], NULL,
                           r->hop_first[m + 1] - r->hop_first[m], bytes, 0,
                           r->hop_lat_ns[m], c->tag_base | (uint64_t)p);
}

static ds_status chain_enter(struct ds_coll *base, int32_t member) {
  struct chain_coll *c = (struct chain_coll *)base;
  int32_t p = (member - c->start + c->n) % c->n;
  c->pos[p].entered = 1;
  DS_CHECK(try_send(c, p));
  if (p > 0) DS_CHECK(try_send(c, p - 1));
  check_done(c, p);
  return DS_OK;
}

static ds_status chain_flow_sent(struct ds_coll *base, int32_t p) {
  struct chain_coll *c = (struct chain_coll *)base;
  c->pos[p].in_flight = 0;
  c->pos[p].sends_done++;
  DS_CHECK(try_send(c, p));
  check_done(c, p);
  return DS_OK;
}

static ds_status chain_flow_done(struct ds_coll *base, int32_t p) {
  struct chain_coll *c = (struct chain_coll *)base;
  c->pos[p + 1].received++;
  DS_CHECK(try_send(c, p + 1));
  check_done(c, p + 1);
  return DS_OK;
}

static void chain_destroy(struct ds_coll *base) {
  struct chain_coll *c = (struct chain_coll *)base;
  free(c->hop_lat);
  free(c->mult);
  free(c->pos);
  free(c);
}

static const struct ds__coll_vtbl chain_vtbl = {
    .enter = chain_enter,
    .flow_sent = chain_flow_sent,
    .flow_done = chain_flow_done,
    .destroy = chain_destroy,
};

ds_status ds__coll_chain_new(const struct ds_coll_spec *spec, int reduce,
                             struct ds_coll **out, struct ds_err *err) {
  const struct ds_ring *r = spec->ring;
  struct chain_coll *c = calloc(1, sizeof *c);
  if (c) c->pos = calloc((size_t)r->n, sizeof *c->pos);
  if (!c || !c->pos) {
    free(c);
    return ds_err_set(err, DS_ENOMEM, "collective: out of memory");
  }
  c->base.vt = &chain_vtbl;
  c->ring = r;
  c->net = spec->net;
  c->n = r->n;
  c->start = reduce ? (spec->root + 1) % r->n : spec->root;
  c->chunks = spec->proto ? spec->chunks : ds_coll_pieces_bound(spec->chunks, spec->bytes);
  c->chunk_bytes = spec->bytes / c->chunks;
  c->last_chunk_bytes = c->chunk_bytes;
  if (!spec->proto) /* NCCL's cut (ds_coll_chain_cut) */
    ds_coll_chain_cut(spec->bytes, c->chunks, &c->chunk_bytes, &c->last_chunk_bytes);
  c->tag_base = spec->tag_base;
  c->on_done = spec->on_done;
  c->owner = spec->owner;
  const struct ds_coll_proto *p = spec->proto;
  if (p) {
    if (p->channels < 1 || !(p->wire_factor >= 1) || !(p->chan_cap_bytes_per_s > 0) ||
        !(p->start_lat_ns >= 0)) {
      chain_destroy(&c->base);
      return ds_err_set(err, DS_EINTERNAL, "chain: bad protocol parameters");
    }
    c->hop_lat = malloc((size_t)r->n * sizeof *c->hop_lat);
    c->mult = malloc(((size_t)r->max_hop_links + 1) * sizeof *c->mult);
    if (!c->hop_lat || !c->mult) {
      chain_destroy(&c->base);
      return ds_err_set(err, DS_ENOMEM, "collective: out of memory");
    }
    for (int32_t i = 0; i < r->n; i++) c->hop_lat[i] = p->hop_lat_ns[r->hop_class[i]];
    for (int32_t k = 0; k < r->max_hop_links; k++) c->mult[k] = (uint32_t)p->channels;
    c->start_lat_ns = p->start_lat_ns;
    c->chan_cap = p->chan_cap_bytes_per_s;
    /* every channel runs as the fullest one: it sets the finish */
    double share = p->share_bytes > 0 ? p->share_bytes : spec->bytes / p->channels;
    if (share > spec->bytes * (1 + 1e-12) || share < spec->bytes / p->channels * (1 - 1e-12)) {
      chain_destroy(&c->base);
      return ds_err_set(err, DS_EINTERNAL, "chain: a channel's share of %g B is not between "
                        "%g B / %d channels and the whole", share, spec->bytes, p->channels);
    }
    c->chunk_bytes = share / spec->chunks * p->wire_factor;
    c->last_chunk_bytes = c->chunk_bytes;
    if (p->piece_bytes > 0) {
      /* Whole pieces but the last, which carries the rest of the share. */
      double last = share - (c->chunks - 1) * p->piece_bytes;
      if (!(last > 0) || last > p->piece_bytes * (1 + 1e-12)) {
        chain_destroy(&c->base);
        return ds_err_set(err, DS_EINTERNAL, "chain: %d pieces of %g B do not make a share of %g B",
                          (int)spec->chunks, p->piece_bytes, share);
      }
      c->chunk_bytes = p->piece_bytes * p->wire_factor;
      c->last_chunk_bytes = last * p->wire_factor;
    }
  }
  *out = &c->base;
  return DS_OK;
}
