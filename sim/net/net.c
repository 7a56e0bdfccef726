/*
 * Flow-level network: latency phase, then bandwidth sharing.
 *
 * Invariant: between two events, every moving flow's rate is constant, so
 * its remaining bytes are advanced lazily (remaining -= rate * elapsed)
 * whenever rates are about to change. One DS_EV_NET_COMPLETE event is kept
 * for the earliest finishing flow and rescheduled on every re-solve; starts
 * and ends at one instant are batched into one DS_EV_NET_RESOLVE event at
 * that instant, so N flows starting together cost one solve, not N.
 */
#include "sim/net/net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net/events.h"
#include "base/units.h"

enum flow_state { FLOW_FREE, FLOW_LATENCY, FLOW_MOVING };

struct flow {
  const int32_t *links;
  const uint32_t *mult;
  int32_t n_links;
  enum flow_state state;
  double remaining_bytes;
  double rate; /* bytes per second while moving */
  double cap;  /* rate never above this (INFINITY: uncapped) */
  int64_t trail_lat_ns;
  uint64_t tag;
  uint64_t seq; /* start order: completions at one instant fire in it */
  int32_t active_pos; /* index in net->active while moving */
  int32_t next_free;
  int frozen; /* progressive filling scratch */
};

/* A flow that ends at this instant, keyed by its start order. */
struct done_flow {
  uint64_t seq;
  int32_t slot;
};

struct ds_net {
  const struct ds_topo *topo;
  struct ds_engine *eng;
  enum ds_net_mode mode;
  ds_net_done_fn on_done;
  ds_net_sent_fn on_sent;
  void *owner;
  struct flow *flows;
  int32_t cap_flows;
  int32_t free_head;
  int32_t n_pending;
  int32_t *active; /* slots of moving flows */
  int32_t n_active;
  struct done_flow *done; /* scratch for completions */
  uint64_t next_seq;
  int64_t advanced_ns; /* time up to which remaining bytes are exact */
  int resolve_pending;
  uint64_t complete_handle;
  int complete_pending;
  /* per-link scratch for progressive filling */
  double *link_cap_left;
  double *link_weight;
  int32_t *touched;
  int32_t n_touched;
  uint8_t *link_touched;
};

ds_status ds_net_new(const struct ds_topo *topo, struct ds_engine *eng,
                     enum ds_net_mode mode, ds_net_done_fn on_done,
                     ds_net_sent_fn on_sent, void *owner,
                     struct ds_net **out) {
  struct ds_net *net = calloc(1, sizeof *net);
  if (!net) return DS_ENOMEM;
  size_t nl = (size_t)topo->n_links + 1;
  net->topo = topo;
  net->eng = eng;
  net->mode = mode;
  net->on_done = on_done;
  net->on_sent = on_sent;
  net->owner = owner;
  net->free_head = -1;
  net->link_cap_left = malloc(nl * sizeof *net->link_cap_left);
  net->link_weight = malloc(nl * sizeof *net->link_weight);
  net->touched = malloc(nl * sizeof *net->touched);
  net->link_touched = calloc(nl, 1);
  if (!net->link_cap_left || !net->link_weight || !net->touched ||
      !net->link_touched) {
    ds_net_free(net);
    return DS_ENOMEM;
  }
  *out = net;
  return DS_OK;
}

void ds_net_free(struct ds_net *net) {
  if (!net) return;
  free(net->flows);
  free(net->active);
  free(net->done);
  free(net->link_cap_left);
  free(net->link_weight);
  free(net->touched);
  free(net->link_touched);
  free(net);
}

static ds_status grow(struct ds_net *net) {
  int32_t nc = net->cap_flows ? 2 * net->cap_flows : 64;
  struct flow *f = realloc(net->flows, (size_t)nc * sizeof *f);
  if (!f) return DS_ENOMEM;
  net->flows = f;
  int32_t *a = realloc(net->active, (size_t)nc * sizeof *a);
  if (!a) return DS_ENOMEM;
  net->active = a;
  struct done_flow *d = realloc(net->done, (size_t)nc * sizeof *d);
  if (!d) return DS_ENOMEM;
  net->done = d;
  for (int32_t i = nc - 1; i >= net->cap_flows; i--) {
    f[i].state = FLOW_FREE;
    f[i].next_free = net->free_head;
    net->free_head = i;
  }
  net->cap_flows = nc;
  return DS_OK;
}

static ds_status request_resolve(struct ds_net *net) {
  if (net->resolve_pending) return DS_OK;
  struct ds_event ev = {.kind = DS_EV_NET_RESOLVE};
  net->resolve_pending = 1;
  return ds_engine_schedule(net->eng, ds_engine_now(net->eng), &ev, NULL);
}

static void start_moving(struct ds_net *net, int32_t slot) {
  struct flow *f = &net->flows[slot];
  f->state = FLOW_MOVING;
  f->rate = 0;
  f->active_pos = net->n_active;
  net->active[net->n_active++] = slot;
}

ds_status ds_net_flow_start(struct ds_net *net, const int32_t *links,
                            const uint32_t *mult, int32_t n, double bytes,
                            double lead_lat_ns, double trail_lat_ns,
                            uint64_t tag) {
  return ds_net_flow_start_capped(net, links, mult, n, bytes, lead_lat_ns,
                                  trail_lat_ns, INFINITY, tag);
}

ds_status ds_net_flow_start_capped(struct ds_net *net, const int32_t *links,
                                   const uint32_t *mult, int32_t n,
                                   double bytes, double lead_lat_ns,
                                   double trail_lat_ns, double cap_bytes_per_s,
                                   uint64_t tag) {
  if (!(bytes >= 0) || !(lead_lat_ns >= 0) || !(trail_lat_ns >= 0) || n < 0 ||
      !(cap_bytes_per_s > 0))
    return DS_EINTERNAL;
  if (net->free_head < 0) DS_CHECK(grow(net));
  int32_t slot = net->free_head;
  struct flow *f = &net->flows[slot];
  net->free_head = f->next_free;
  *f = (struct flow){.links = links, .mult = mult, .n_links = n,
                     .state = FLOW_LATENCY, .remaining_bytes = bytes,
                     .cap = cap_bytes_per_s,
                     .trail_lat_ns = ds_units_round_ns(trail_lat_ns), .tag = tag, .seq = net->next_seq++, .active_pos = -1,
                     .next_free = -1};
  net->n_pending++;
  int64_t lat = ds_units_round_ns(lead_lat_ns);
  if (lat > 0) {
    struct ds_event ev = {.kind = DS_EV_NET_ACTIVATE, .a = slot};
    return ds_engine_schedule(net->eng, ds_engine_now(net->eng) + lat, &ev, NULL);
  }
  start_moving(net, slot);
  return request_resolve(net);
}

static uint32_t mult_at(const struct flow *f, int32_t i) {
  return f->mult ? f->mult[i] : 1;
}

static void advance(struct ds_net *net) {
  int64_t now = ds_engine_now(net->eng);
  double dt = (double)(now - net->advanced_ns) * 1e-9;
  if (dt > 0)
    for (int32_t i = 0; i < net->n_active; i++) {
      struct flow *f = &net->flows[net->active[i]];
      f->remaining_bytes -= f->rate * dt;
    }
  net->advanced_ns = now;
}

static double route_bottleneck(const struct ds_net *net, const struct flow *f) {
  double best = INFINITY;
  for (int32_t i = 0; i < f->n_links; i++) {
    double r = net->topo->links[f->links[i]].bw_bytes_per_s / mult_at(f, i);
    if (r < best) best = r;
  }
  return best;
}

/* Progressive filling: raise every unfrozen flow's rate together until a
 * link saturates; freeze the flows crossing it; repeat. */
static void solve_maxmin(struct ds_net *net) {
  const struct ds_link *links = net->topo->links;
  net->n_touched = 0;
  int32_t unfrozen = 0;
  for (int32_t i = 0; i < net->n_active; i++) {
    struct flow *f = &net->flows[net->active[i]];
    f->frozen = 0;
    f->rate = 0;
    if (f->n_links == 0) { /* only its cap limits it (if any) */
      f->rate = f->cap;
      f->frozen = 1;
      continue;
    }
    unfrozen++;
    for (int32_t k = 0; k < f->n_links; k++) {
      int32_t l = f->links[k];
      if (!net->link_touched[l]) {
        net->link_touched[l] = 1;
        net->touched[net->n_touched++] = l;
        net->link_cap_left[l] = links[l].bw_bytes_per_s;
        net->link_weight[l] = 0;
      }
      net->link_weight[l] += mult_at(f, k);
    }
  }
  double level = 0; /* rate every unfrozen flow has reached */
  while (unfrozen > 0) {
    double step = INFINITY;
    for (int32_t t = 0; t < net->n_touched; t++) {
      int32_t l = net->touched[t];
      if (net->link_weight[l] > 0) {
        double s = net->link_cap_left[l] / net->link_weight[l];
        if (s < step) step = s;
      }
    }
    /* A cap is a private link: the level may rise no further than the
     * lowest cap of an unfrozen flow. */
    for (int32_t i = 0; i < net->n_active; i++) {
      const struct flow *f = &net->flows[net->active[i]];
      if (!f->frozen && f->cap - level < step) step = f->cap - level;
    }
    if (step < 0) step = 0;
    level += step;
    for (int32_t t = 0; t < net->n_touched; t++) {
      int32_t l = net->touched[t];
      net->link_cap_left[l] -= step * net->link_weight[l];
    }
    /* A link is saturated when what is left is negligible next to its
     * capacity; relative tolerance absorbs rounding of the subtraction. */
    for (int32_t i = 0; i < net->n_active; i++) {
      struct flow *f = &net->flows[net->active[i]];
      if (f->frozen) continue;
      int saturated = isfinite(f->cap) && f->cap - level <= 1e-12 * f->cap;
      for (int32_t k = 0; k < f->n_links && !saturated; k++) {
        int32_t l = f->links[k];
        saturated = net->link_cap_left[l] <= 1e-9 * links[l].bw_bytes_per_s;
      }
      if (!saturated) continue;
      f->frozen = 1;
      f->rate = level < f->cap ? level : f->cap;
      unfrozen--;
      for (int32_t k = 0; k < f->n_links; k++)
        net->link_weight[f->links[k]] -= mult_at(f, k);
    }
  }
  for (int32_t t = 0; t < net->n_touched; t++)
    net->link_touched[net->touched[t]] = 0;
}

static void solve(struct ds_net *net) {
  if (net->mode == DS_NET_MAXMIN) {
    solve_maxmin(net);
    return;
  }
  for (int32_t i = 0; i < net->n_active; i++) {
    struct flow *f = &net->flows[net->active[i]];
    double b = route_bottleneck(net, f);
    f->rate = b < f->cap ? b : f->cap;
  }
}

static void schedule_completion(struct ds_net *net) {
  if (net->complete_pending) {
    ds_engine_cancel(net->eng, net->complete_handle);
    net->complete_pending = 0;
  }
  double best_ns = INFINITY;
  for (int32_t i = 0; i < net->n_active; i++) {
    const struct flow *f = &net->flows[net->active[i]];
    double left = f->remaining_bytes > 0 ? f->remaining_bytes : 0;
    double t = isinf(f->rate) ? 0 : left / f->rate * 1e9;
    if (t < best_ns) best_ns = t;
  }
  if (isinf(best_ns)) return;
  struct ds_event ev = {.kind = DS_EV_NET_COMPLETE};
  int64_t when = ds_engine_now(net->eng) + ds_units_round_ns(best_ns);
  if (ds_engine_schedule(net->eng, when, &ev, &net->complete_handle) == DS_OK)
    net->complete_pending = 1;
}

static void resolve(struct ds_net *net) {
  advance(net);
  solve(net);
  schedule_completion(net);
}


static void remove_active(struct ds_net *net, int32_t slot) {
  struct flow *f = &net->flows[slot];
  int32_t pos = f->active_pos;
  int32_t last = net->active[--net->n_active];
  net->active[pos] = last;
  net->flows[last].active_pos = pos;
}

static int by_seq(const void *a, const void *b) {
  uint64_t x = ((const struct done_flow *)a)->seq, y = ((const struct done_flow *)b)->seq;
  return (x > y) - (x < y);
}

static void complete(struct ds_net *net) {
  net->complete_pending = 0;
  advance(net);
  int32_t n_done = 0;
  for (int32_t i = 0; i < net->n_active; i++) {
    int32_t slot = net->active[i];
    const struct flow *f = &net->flows[slot];
    /* The event time was rounded to the nanosecond: up to half a
     * nanosecond's worth of bytes may be left (or overshot). */
    double slack = isinf(f->rate) ? INFINITY : f->rate * 1e-9;
    if (f->remaining_bytes <= slack + 1e-6)
      net->done[n_done++] = (struct done_flow){f->seq, slot};
  }
  /* By start sequence (unique): a deterministic callback order, in
   * O(k log k) for k flows ending together (an insertion sort was
   * quadratic: 942 M moves at 1024 ranks, issue #14). */
  qsort(net->done, (size_t)n_done, sizeof *net->done, by_seq);
  for (int32_t i = 0; i < n_done; i++) remove_active(net, net->done[i].slot);
  /* Callbacks may start flows (which may grow and move the flow array), so
   * copy what is needed and free the slots first. */
  for (int32_t i = 0; i < n_done; i++) {
    int32_t slot = net->done[i].slot;
    uint64_t tag = net->flows[slot].tag;
    int64_t trail = net->flows[slot].trail_lat_ns;
    net->flows[slot].state = FLOW_FREE;
    net->flows[slot].next_free = net->free_head;
    net->free_head = slot;
    if (net->on_sent) net->on_sent(net->owner, tag);
    if (trail > 0) {
      struct ds_event ev = {.kind = DS_EV_NET_DELIVER, .b = (int64_t)tag};
      if (ds_engine_schedule(net->eng, ds_engine_now(net->eng) + trail, &ev,
                             NULL) == DS_OK)
        continue;
    }
    net->n_pending--;
    net->on_done(net->owner, tag);
  }
  if (n_done > 0 || net->n_active > 0) request_resolve(net);
}

void ds_net_handle_event(struct ds_net *net, const struct ds_event *ev) {
  switch (ev->kind) {
  case DS_EV_NET_ACTIVATE:
    advance(net);
    start_moving(net, ev->a);
    request_resolve(net);
    break;
  case DS_EV_NET_RESOLVE:
    net->resolve_pending = 0;
    resolve(net);
    break;
  case DS_EV_NET_COMPLETE:
    complete(net);
    break;
  case DS_EV_NET_DELIVER:
    net->n_pending--;
    net->on_done(net->owner, (uint64_t)ev->b);
    break;
  default:
    break;
  }
}

int32_t ds_net_flows_pending(const struct ds_net *net) { return net->n_pending; }

double ds_net_flow_rate(const struct ds_net *net, uint64_t tag) {
  for (int32_t i = 0; i < net->n_active; i++) {
    const struct flow *f = &net->flows[net->active[i]];
    if (f->tag == tag) return f->rate;
  }
  return -1;
}
