/*
 * nccl-tests' sendrecv and alltoall as point-to-point flows (coll.h), as
 * NCCL runs them: one group of ncclSend/ncclRecv per rank (sendrecv: to the
 * successor, from the predecessor; alltoall: to and from every rank), all
 * peers progressing at once in one kernel, each transfer on its own
 * channels (src/enqueue.cc scheduleP2pTasksToPlan). A transfer is one flow
 * from its sender's GPU to its receiver's along the topology's route; it
 * starts once both ends have entered (NCCL's p2p rendezvous) and a member
 * is done when every transfer it sends or receives has been delivered, so
 * links shared by several transfers (a rank's own link, a PCIe uplink, host
 * memory) are shared by the network model.
 *
 * Plain (spec->proto NULL): the flow moves the payload at what the network
 * gives it, with its route's latency trailing. Under an NCCL protocol
 * (nccl_model.h ds_nccl_p2p_proto): the wire carries payload * wire_factor,
 * the flow is capped at channels * chan_cap, start_lat_ns leads and the
 * protocol's per-hop latency of the route's class trails. Either way a
 * transfer staged in host memory (its route passes a CPU vertex: no
 * peer-to-peer; NCCL's SHM transport writes each chunk to pinned host
 * memory, the receiver reads it back once whole) also waits one chunk's
 * time on its bottleneck link before its first byte moves.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"


struct a2a_flow {
  int32_t src, dst;   /* members */
  int32_t first, len; /* route: links[first .. first+len) */
  double lead_ns;     /* before the first byte moves */
  double trail_ns;    /* after the last byte has left */
  uint8_t started;
};

struct a2a_coll {
  struct ds_coll base; /* first: see coll_impl.h */
  struct ds_net *net;
  int32_t n;
  double wire_bytes; /* per transfer, on the wire */
  double cap;        /* per transfer, bytes/s; INFINITY for none */
  uint64_t tag_base;
  ds_coll_done_fn on_done;
  void *owner;
  struct a2a_flow *flows;
  int32_t n_flows;
  int32_t *links;
  int32_t *pending; /* [n] transfers of each member not yet delivered */
  uint8_t *entered; /* [n] */
  uint8_t *done;    /* [n] */
  int32_t *by_member_first; /* [n+1] flows touching member m: by_member[...] */
  int32_t *by_member;
};

static void check_done(struct a2a_coll *c, int32_t m) {
  if (c->done[m] || !c->entered[m] || c->pending[m] > 0) return;
  c->done[m] = 1;
  c->on_done(c->owner, m);
}

static ds_status a2a_enter(struct ds_coll *base, int32_t member) {
  struct a2a_coll *c = (struct a2a_coll *)base;
  c->entered[member] = 1;
  for (int32_t i = c->by_member_first[member]; i < c->by_member_first[member + 1]; i++) {
    int32_t k = c->by_member[i];
    struct a2a_flow *f = &c->flows[k];
    if (f->started || !c->entered[f->src] || !c->entered[f->dst]) continue;
    f->started = 1;
    DS_CHECK(ds_net_flow_start_capped(c->net, c->links + f->first, NULL, f->len,
                                      c->wire_bytes, f->lead_ns, f->trail_ns, c->cap,
                                      c->tag_base | (uint64_t)k));
  }
  check_done(c, member);
  return DS_OK;
}

static ds_status a2a_flow_sent(struct ds_coll *base, int32_t k) {
  (void)base;
  (void)k;
  return DS_OK;
}

static ds_status a2a_flow_done(struct ds_coll *base, int32_t k) {
  struct a2a_coll *c = (struct a2a_coll *)base;
  const struct a2a_flow *f = &c->flows[k];
  c->pending[f->src]--;
  c->pending[f->dst]--;
  check_done(c, f->src);
  check_done(c, f->dst);
  return DS_OK;
}

static void a2a_destroy(struct ds_coll *base) {
  struct a2a_coll *c = (struct a2a_coll *)base;
  free(c->flows);
  free(c->links);
  free(c->pending);
  free(c->entered);
  free(c->done);
  free(c->by_member_first);
  free(c->by_member);
  free(c);
}

static const struct ds__coll_vtbl a2a_vtbl = {
    .enter = a2a_enter,
    .flow_sent = a2a_flow_sent,
    .flow_done = a2a_flow_done,
    .destroy = a2a_destroy,
};

/* The hop class of a route, as ds_ring's: NET when it crosses an "ib" link,
 * else PCI when a "pcie" or "qpi" link, else NVLINK. */
static enum ds_hop_class route_class(const struct ds_topo *t, const int32_t *links, int32_t n) {
  enum ds_hop_class cls = DS_HOP_NVLINK;
  for (int32_t k = 0; k < n; k++) {
    const char *kind = t->links[links[k]].kind;
    if (strcmp(kind, "ib") == 0) return DS_HOP_NET;
    if (strcmp(kind, "pcie") == 0 || strcmp(kind, "qpi") == 0) cls = DS_HOP_PCI;
  }
  return cls;
}

double ds__coll_stage_fill_ns(const struct ds_topo *t, const int32_t *links, int32_t n,
                              double wire_bytes_per_channel, double chan_cap) {
  int staged = 0;
  double bw = chan_cap > 0 ? chan_cap : INFINITY;
  for (int32_t k = 0; k < n; k++) {
    const struct ds_link *l = &t->links[links[k]];
    bw = fmin(bw, l->bw_bytes_per_s);
    if (k + 1 < n && t->vertex_kind[l->dst] == DS_VERTEX_CPU) staged = 1;
  }
  if (!staged || !(bw > 0) || isinf(bw)) return 0;
  return fmin(DS_P2P_STAGE_CHUNK_BYTES, wire_bytes_per_channel) / bw * 1e9;
}

/* Fills flow f's route from member src to dst and its latencies. */
static ds_status route_flow(const struct ds_coll_spec *spec, struct a2a_flow *f,
                            int32_t *links, double payload, struct ds_err *err) {
  struct ds_topo *t = spec->topo;
  const struct ds_ring *r = spec->ring;
  DS_CHECK(ds_topo_route(t, r->gpus[f->src], r->gpus[f->dst], links, DS_TOPO_MAX_ROUTE, &f->len,
                         err));
  double lat = 0;
  for (int32_t k = 0; k < f->len; k++) lat += t->links[links[k]].lat_ns;
  const struct ds_coll_proto *p = spec->proto;
  f->trail_ns = p ? p->hop_lat_ns[route_class(t, links, f->len)] : lat;
  f->lead_ns = (p ? p->start_lat_ns : 0) +
               ds__coll_stage_fill_ns(t, links, f->len,
                                      p ? payload * p->wire_factor / p->channels : payload,
                                      p ? p->chan_cap_bytes_per_s : INFINITY);
  return DS_OK;
}

ds_status ds__coll_alltoall_new(const struct ds_coll_spec *spec, enum ds_coll_kind kind,
                                struct ds_coll **out, struct ds_err *err) {
  const struct ds_ring *r = spec->ring;
  int32_t n = r->n;
  /* alltoall has N(N-1) flows: 1024 ranks are a million */
  int32_t max_n = kind == DS_COLL_SENDRECV ? 1 << 24 : DS_ALLTOALL_MAX_RANKS;
  if (n < 1 || n > max_n)
    return ds_err_set(err, DS_EUSAGE, "%s: %d members: needs 1 to %d",
                      kind == DS_COLL_SENDRECV ? "sendrecv" : "alltoall", n, max_n);
  /* one member sends only to itself: a local copy, no flow */
  int32_t n_flows = n == 1 ? 0 : kind == DS_COLL_SENDRECV ? n : n * (n - 1);
  ds_status st = DS_ENOMEM;
  struct a2a_coll *c = calloc(1, sizeof *c);
  if (!c) return ds_err_set(err, DS_ENOMEM, "collective: out of memory");
  c->base.vt = &a2a_vtbl;
  c->flows = calloc((size_t)n_flows + 1, sizeof *c->flows);
  c->pending = calloc((size_t)n, sizeof *c->pending);
  c->entered = calloc((size_t)n, 1);
  c->done = calloc((size_t)n, 1);
  c->by_member_first = calloc((size_t)n + 1, sizeof *c->by_member_first);
  c->by_member = malloc(((size_t)n_flows * 2 + 1) * sizeof *c->by_member);
  if (!c->flows || !c->pending || !c->entered || !c->done ||
      !c->by_member_first || !c->by_member)
    goto fail;
  c->net = spec->net;
  c->n = n;
  double payload = kind == DS_COLL_SENDRECV ? spec->bytes : spec->bytes / n;
  const struct ds_coll_proto *p = spec->proto;
  c->wire_bytes = payload * (p ? p->wire_factor : 1);
  c->cap = p ? p->channels * p->chan_cap_bytes_per_s : INFINITY;
  c->tag_base = spec->tag_base;
  c->on_done = spec->on_done;
  c->owner = spec->owner;
  int32_t used = 0, links_cap = 0;
  /* alltoall in NCCL's p2p round order: round d sends to m + d */
  for (int32_t d = 1; d < n; d++) {
    for (int32_t m = 0; m < n; m++) {
      struct a2a_flow f = {.src = m, .dst = (m + d) % n, .first = used};
      if (used + DS_TOPO_MAX_ROUTE > links_cap) {
        size_t cap = 2 * (size_t)links_cap + DS_TOPO_MAX_ROUTE;
        int32_t *grown = realloc(c->links, cap * sizeof *c->links);
        if (!grown) goto fail;
        c->links = grown;
        links_cap = (int32_t)cap;
      }
      DS_CHECK_GOTO(route_flow(spec, &f, c->links + used, payload, err), st, fail);
      used += f.len;
      c->pending[f.src]++;
      c->pending[f.dst]++;
      c->by_member_first[f.src + 1]++;
      c->by_member_first[f.dst + 1]++;
      c->flows[c->n_flows++] = f;
    }
    if (kind == DS_COLL_SENDRECV) break;
  }
  for (int32_t m = 0; m < n; m++) c->by_member_first[m + 1] += c->by_member_first[m];
  /* each member's transfers in flow order (pending is the cursor here,
   * then counts what each member waits for) */
  memset(c->pending, 0, (size_t)n * sizeof *c->pending);
  for (int32_t k = 0; k < c->n_flows; k++) {
    const struct a2a_flow *f = &c->flows[k];
    c->by_member[c->by_member_first[f->src] + c->pending[f->src]++] = k;
    c->by_member[c->by_member_first[f->dst] + c->pending[f->dst]++] = k;
  }
  *out = &c->base;
  return DS_OK;
fail:
  if (st == DS_ENOMEM) ds_err_set(err, st, "collective: out of memory");
  a2a_destroy(&c->base);
  return st;
}
