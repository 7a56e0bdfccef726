/*
 * The rails of a ring (coll.h, struct ds_ring's n_rails), run together:
 * ds__coll_rails_compose runs K rails side by side, rail k a collective
 * over rails[k] that the caller's constructor builds (the ring kinds below:
 * sim/coll/coll_ring.c's ring; broadcast and reduce:
 * sim/coll/coll_chain_rails.c's chain). Members are the ring's members; in
 * rail k member i sits at position rail_pos[k*n + i]. A member enters
 * every rail at once and is done when all its rails are (the composition of
 * sim/coll/coll_hier.c, with the rails in parallel instead of phases in
 * sequence). Flows are tagged tag_base | (k << bits | the rail's own
 * index): K rails of N members cost K times the flows of one rail per flow,
 * and K flows aggregated.
 *
 * Folded (the ring kinds per flow, members entering at once, nothing else
 * on the net, the rails interchangeable: ds__ring_rails_quotient in
 * sim/coll/ring_rails.h): only rail 0's quotient runs, since every rail's
 * position p runs as rail 0's does. Position p starts once the K members
 * at p (one per rail) have entered; member i is done once rail 0 has
 * finished all K of its positions rail_pos[k*n + i].
 */
#include <stdlib.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"
#include "sim/coll/ring_rails.h"

struct rail {
  struct rails_coll *rc;
  int32_t k;
  struct ds_coll *coll;
};

struct rails_coll {
  struct ds_coll base; /* first: see coll_impl.h */
  const struct ds_ring *ring;
  int32_t k;            /* rails */
  int32_t n_run;        /* rails run: k, or 1 folded */
  int32_t *pos_entered; /* folded: [n] members entered per rail 0 position */
  struct rail *rails;   /* [n_run] */
  int32_t *rails_done;  /* [n] per member: rails that finished it */
  int bits;             /* flow index: rail << bits | the rail's own index */
  ds_coll_done_fn on_done;
  void *owner;
};

static void rail_done(void *owner, int32_t pos) {
  struct rail *r = owner;
  struct rails_coll *c = r->rc;
  if (c->n_run == 1 && c->k > 1) {
    for (int32_t k = 0; k < c->k; k++) {
      int32_t m = c->ring->rail_member[(size_t)k * c->ring->n + pos];
      if (++c->rails_done[m] == c->k) c->on_done(c->owner, m);
    }
    return;
  }
  int32_t member = c->ring->rail_member[(size_t)r->k * c->ring->n + pos];
  if (++c->rails_done[member] == c->k) c->on_done(c->owner, member);
}

static ds_status rails_enter(struct ds_coll *base, int32_t member) {
  struct rails_coll *c = (struct rails_coll *)base;
  if (c->n_run == 1 && c->k > 1) {
    for (int32_t k = 0; k < c->k; k++) {
      int32_t p = c->ring->rail_pos[(size_t)k * c->ring->n + member];
      if (++c->pos_entered[p] == c->k) DS_CHECK(ds_coll_enter(c->rails[0].coll, p));
    }
    return DS_OK;
  }
  for (int32_t k = 0; k < c->k; k++)
    DS_CHECK(ds_coll_enter(c->rails[k].coll, c->ring->rail_pos[(size_t)k * c->ring->n + member]));
  return DS_OK;
}

static ds_status rails_flow_sent(struct ds_coll *base, int32_t idx) {
  struct rails_coll *c = (struct rails_coll *)base;
  uint32_t u = (uint32_t)idx;
  return ds_coll_flow_sent(c->rails[u >> c->bits].coll, (int32_t)(u & ((1u << c->bits) - 1)));
}

static ds_status rails_flow_done(struct ds_coll *base, int32_t idx) {
  struct rails_coll *c = (struct rails_coll *)base;
  uint32_t u = (uint32_t)idx;
  return ds_coll_flow_done(c->rails[u >> c->bits].coll, (int32_t)(u & ((1u << c->bits) - 1)));
}

static void rails_destroy(struct ds_coll *base) {
  struct rails_coll *c = (struct rails_coll *)base;
  if (c->rails)
    for (int32_t k = 0; k < c->n_run; k++) ds_coll_free(c->rails[k].coll);
  free(c->rails);
  free(c->pos_entered);
  free(c->rails_done);
  free(c);
}

/* Rails that each finish their members together do so together: every
 * member counts one rail done in each rail's loop, so all reach k in the
 * last rail's loop (rail_done). Folded rails run per flow. */
static int rails_together(const struct ds_coll *base) {
  const struct rails_coll *c = (const struct rails_coll *)base;
  if (c->n_run != c->k) return 0;
  for (int32_t k = 0; k < c->n_run; k++)
    if (!ds_coll_finishes_together(c->rails[k].coll)) return 0;
  return 1;
}

static const struct ds__coll_vtbl rails_vtbl = {
    .enter = rails_enter,
    .flow_sent = rails_flow_sent,
    .flow_done = rails_flow_done,
    .destroy = rails_destroy,
    .together = rails_together,
};

ds_status ds__coll_rails_compose(const struct ds_ring *ring, int32_t k, int folded,
                                 uint64_t tag_base, ds_coll_done_fn on_done, void *owner,
                                 ds__coll_rail_new_fn rail_new, void *arg, struct ds_coll **out,
                                 struct ds_err *err) {
  if (k < 1 || k > ring->n_rails) return ds_err_set(err, DS_EINTERNAL, "rails: none to run on");
  struct rails_coll *c = calloc(1, sizeof *c);
  if (!c) return ds_err_set(err, DS_ENOMEM, "collective: out of memory");
  c->base.vt = &rails_vtbl;
  c->ring = ring;
  c->k = k;
  c->n_run = folded ? 1 : k;
  c->on_done = on_done;
  c->owner = owner;
  while ((1 << c->bits) < ring->n) c->bits++;
  if (((int64_t)c->k << c->bits) > INT32_MAX) {
    free(c);
    return ds_err_set(err, DS_EINTERNAL, "rails: %d rails of %d members overflow a flow index",
                      (int)k, (int)ring->n);
  }
  c->rails = calloc((size_t)c->n_run, sizeof *c->rails);
  c->rails_done = calloc((size_t)ring->n, sizeof *c->rails_done);
  if (folded) c->pos_entered = calloc((size_t)ring->n, sizeof *c->pos_entered);
  if (!c->rails || !c->rails_done || (folded && !c->pos_entered)) {
    rails_destroy(&c->base);
    return ds_err_set(err, DS_ENOMEM, "collective: out of memory");
  }
  for (int32_t r = 0; r < c->n_run; r++) {
    c->rails[r] = (struct rail){.rc = c, .k = r};
    ds_status st = rail_new(arg, r, tag_base | ((uint64_t)r << c->bits), rail_done, &c->rails[r],
                            &c->rails[r].coll);
    if (st != DS_OK) {
      rails_destroy(&c->base);
      return st;
    }
  }
  *out = &c->base;
  return DS_OK;
}

/* The ring kinds: rail k is a ring over rails[k] (per flow or aggregated)
 * carrying bytes/K, under proto with its channels spread over the rails;
 * folded, the rails' quotient. */
struct ring_rail_args {
  const struct ds_ring *ring;
  const struct ds_ring *folded; /* the rails' quotient, or NULL */
  struct ds_net *net;
  enum ds_coll_model model;
  int32_t chunks, steps;
  double bytes; /* a rail's */
  const struct ds_coll_proto *proto;
  const struct ds_topo *fold_topo; /* the one ring runs alone: it may fold too */
  const struct ds_coll *last;      /* the rail built before, NULL at first */
};

static ds_status ring_rail_new(void *arg, int32_t k, uint64_t tag_base, ds_coll_done_fn on_done,
                               void *owner, struct ds_coll **out) {
  struct ring_rail_args *a = arg;
  DS_CHECK(ds__coll_ring_new_like(a->folded ? a->folded : &a->ring->rails[k], a->net, a->model,
                                  a->chunks, a->steps, a->bytes, a->proto, tag_base, on_done,
                                  owner, a->last, out));
  a->last = *out;
  if (a->fold_topo) (void)ds__coll_ring_fold_symmetric(*out, a->fold_topo);
  return DS_OK;
}

ds_status ds__coll_rails_new(const struct ds_ring *ring, struct ds_net *net,
                             enum ds_coll_model model, int32_t chunks, int32_t steps,
                             double bytes, const struct ds_coll_proto *proto,
                             uint64_t tag_base, ds_coll_done_fn on_done, void *owner,
                             const struct ds_topo *alone_topo, struct ds_coll **out) {
  if (ring->n_rails < 1) return DS_EINTERNAL;
  int32_t k = ring->n_rails;
  const struct ds_ring *folded = NULL;
  if (alone_topo && model == DS_COLL_FLOW)
    DS_CHECK(ds__ring_rails_quotient(alone_topo, ring, &folded));
  struct ds_coll_proto rail_proto;
  if (proto) {
    rail_proto = *proto;
    rail_proto.channels = ds__ring_rail_channels(proto->channels, k);
  }
  struct ring_rail_args a = {
      .ring = ring,
      .folded = folded,
      .net = net,
      .model = model,
      .chunks = chunks,
      .steps = steps,
      .bytes = bytes / k,
      .proto = proto ? &rail_proto : NULL,
      /* One ring runs alone (one rail, or the rails folded): it may fold too. */
      .fold_topo = alone_topo && model == DS_COLL_FLOW && (folded || k == 1) ? alone_topo : NULL,
  };
  return ds__coll_rails_compose(ring, k, folded != NULL, tag_base, on_done, owner, ring_rail_new,
                                &a, out, NULL);
}
