/*
 * Max-min fair rates of the moving flows, from the member lists of the
 * links they share (net.c keeps those lists).
 *
 * Incremental max-min: flows sharing a link, directly or through other
 * flows, form a component; a flow's max-min rate depends on its component
 * alone. A re-solve therefore visits only the components of the flows that
 * started or ended since the last one (a breadth-first search from them over
 * each link's member list) and runs progressive filling on each component
 * separately; every other flow keeps its rate and its end time. (The full
 * re-solve of every flow at every event, which this replaces, is kept as
 * the reference mode of ds__net_set_reference for tests.)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net/net_impl.h"

/* ---- solving ---------------------------------------------------------- */

static double route_bottleneck(const struct ds_net *net, const struct flow *f) {
  double best = INFINITY;
  const struct ds_link *links = net->topo->links;
  for (int32_t i = 0; i < f->n_links; i++) {
    double r = links[f->links[i]].bw_bytes_per_s;
    if (f->mult && f->mult[i] != 1) r /= f->mult[i]; /* (x / 1 == x exactly) */
    if (r < best) best = r;
  }
  return best;
}

/* Progressive filling over the flows slots[0..n) (a whole component, or
 * every moving flow in the reference mode): raise every unfrozen flow's
 * rate together until a link saturates; freeze the flows crossing it;
 * repeat. The arithmetic does not depend on the flows' order. */
static void solve_maxmin(struct ds_net *net, const int32_t *slots, int32_t n) {
  const struct ds_link *links = net->topo->links;
  net->n_touched = 0;
  int32_t unfrozen = 0;
  for (int32_t i = 0; i < n; i++) {
    struct flow *f = &net->flows[slots[i]];
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
      net->link_weight[l] += ds__net_mult_at(f, k);
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
    for (int32_t i = 0; i < n; i++) {
      const struct flow *f = &net->flows[slots[i]];
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
    for (int32_t i = 0; i < n; i++) {
      struct flow *f = &net->flows[slots[i]];
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
        net->link_weight[f->links[k]] -= ds__net_mult_at(f, k);
    }
  }
  for (int32_t t = 0; t < net->n_touched; t++)
    net->link_touched[net->touched[t]] = 0;
}

/* Brings a flow's bytes to now at its old rate, before its rate changes
 * (ds__net_enqueue() then files it under its new due time). */
void ds__net_advance(struct ds_net *net, int32_t slot, int64_t now) {
  struct flow *f = &net->flows[slot];
  double dt = (double)(now - f->mark_ns) * 1e-9;
  if (dt > 0) f->left_bytes -= f->rate * dt;
  f->mark_ns = now;
}

/* 1 when the flow is alone on every link of its route and crosses each
 * once: progressive filling then gives it min(bottleneck, cap) with the
 * very same arithmetic (one step of cap/mult), which is cheaper to get. */
static int alone(const struct ds_net *net, const struct flow *f) {
  for (int32_t k = 0; k < f->n_links; k++)
    if (net->members[f->links[k]].n != 1) return 0;
  return 1;
}

/* A flow alone on its links (alone() or DS_NET_CONSTANT): min(bottleneck,
 * cap), as solve_set gives it. */
static void solve_one(struct ds_net *net, int32_t slot, int64_t now) {
  net->n_solved++;
  ds__net_advance(net, slot, now);
  struct flow *f = &net->flows[slot];
  double b = route_bottleneck(net, f);
  f->rate = b < f->cap ? b : f->cap;
  ds__net_enqueue(net, slot);
}

/* What progressive filling's first round sees of a component, gathered by
 * collect_component on its way through it. */
struct comp_bounds {
  double cap_lo, cap_hi; /* its flows' lowest and highest cap */
  double link_step;      /* its links' lowest bandwidth / weight (weight > 0) */
};

/* 1 when progressive filling would end every flow of the component at one
 * finite cap c in its first round: its step is min(lowest link step, c) =
 * c, its level 0 + c, and every flow freezes there at rate c, the very
 * double solve_maxmin gives. A per-flow tree all-reduce's components are
 * all such (14.6 M of 14.6 M flows re-solved at BERT-base on 2node-ib, 16
 * ranks, 1 MiB buckets: the protocol's per-channel cap binds), and the
 * first round's weights, which cost as much as the rest of a re-solve,
 * are the links' running sums instead. */
static int all_at_one_cap(const struct comp_bounds *b) {
  return b->cap_lo == b->cap_hi && isfinite(b->cap_lo) && b->link_step >= b->cap_lo;
}

/* Re-solves slots[0..n) and puts each back in the completion queues.
 * bounds: the component's (collect_component), or NULL (any set). */
static void solve_set(struct ds_net *net, const int32_t *slots, int32_t n,
                      const struct comp_bounds *bounds) {
  int64_t now = ds_engine_now(net->eng);
  net->n_solved += (uint64_t)n;
  for (int32_t i = 0; i < n; i++) ds__net_advance(net, slots[i], now);
  if (net->mode == DS_NET_MAXMIN && !(n == 1 && alone(net, &net->flows[slots[0]]))) {
    if (bounds && !net->no_shortcut && all_at_one_cap(bounds)) {
      net->n_shortcut += (uint64_t)n;
      for (int32_t i = 0; i < n; i++) net->flows[slots[i]].rate = bounds->cap_lo;
    } else {
      solve_maxmin(net, slots, n);
    }
  } else {
    for (int32_t i = 0; i < n; i++) {
      struct flow *f = &net->flows[slots[i]];
      double b = route_bottleneck(net, f);
      f->rate = b < f->cap ? b : f->cap;
    }
  }
  for (int32_t i = 0; i < n; i++) ds__net_enqueue(net, slots[i]);
}

/* The component of the moving flow `seed`: every flow reachable from it
 * through shared links, into net->comp, and its bounds. Stamps what it
 * visits. */
static int32_t collect_component(struct ds_net *net, int32_t seed, struct comp_bounds *b) {
  int32_t n = 0;
  net->flows[seed].visit = net->visit; /* (the caller may have done it) */
  net->comp[n++] = seed;
  *b = (struct comp_bounds){INFINITY, -INFINITY, INFINITY};
  for (int32_t q = 0; q < n; q++) {
    const struct flow *f = &net->flows[net->comp[q]];
    if (f->cap < b->cap_lo) b->cap_lo = f->cap;
    if (f->cap > b->cap_hi) b->cap_hi = f->cap;
    for (int32_t k = 0; k < f->n_links; k++) {
      int32_t l = f->links[k];
      if (net->link_visit[l] == net->visit) continue;
      net->link_visit[l] = net->visit;
      const struct link_members *lm = &net->members[l];
      /* (every member is in the component: the sum is solve_maxmin's
       * weight, exact in a double) */
      if (lm->weight > 0) {
        double step = net->topo->links[l].bw_bytes_per_s / (double)lm->weight;
        if (step < b->link_step) b->link_step = step;
      }
      for (int32_t j = 0; j < lm->n; j++) {
        int32_t s = lm->m[j].slot;
        if (net->flows[s].visit == net->visit) continue;
        net->flows[s].visit = net->visit;
        net->comp[n++] = s;
      }
    }
  }
  return n;
}

static void new_visit(struct ds_net *net) {
  if (++net->visit != 0) return;
  /* The stamp wrapped (after 2^32 re-solves): clear every old stamp. */
  for (int32_t i = 0; i < net->cap_flows; i++) net->flows[i].visit = 0;
  memset(net->link_visit, 0, ((size_t)net->topo->n_links + 1) * sizeof *net->link_visit);
  net->visit = 1;
}

void ds__net_resolve(struct ds_net *net) {
  /* Take the new flows off their list first: they are solved below, in
   * start order (which keeps equal due times in the heap in that order). */
  int32_t n_fresh = net->fresh.n;
  net->fresh.n = 0;
  for (int32_t i = 0; i < n_fresh; i++) net->flows[net->fresh.slot[i]].fresh_pos = -1;
  if (net->reference) {
    /* The full re-solve: every moving flow as one set. */
    int32_t n = 0;
    for (int32_t s = 0; s < net->cap_flows; s++)
      if (net->flows[s].state == FLOW_MOVING) net->comp[n++] = s;
    solve_set(net, net->comp, n, NULL);
  } else if (net->mode == DS_NET_MAXMIN && !net->no_shortcut && net->n_unclean == 0 &&
             net->n_off_cap == n_fresh) {
    /* Every link capped-clean (every member at one finite cap c, bandwidth /
     * weight >= c: net_impl.h ds__net_link_clean) and every flow but the
     * fresh ones already at its cap: then every component passes
     * all_at_one_cap, whose re-solve gives each of its flows its cap again
     * and the fresh ones theirs. Only the fresh need a rate; the others keep
     * theirs, their marks and their due times, as between any two
     * re-solves (net.c's invariant). Walking their components instead cost
     * O(flows in flight) per start and end: a per-flow tree all-reduce
     * over M nodes holds O(M) flows in one component, so its run grew as
     * M^2 (ResNet-50 --coll-model flow on cluster-512x8-h100: 16 s at 1024
     * ranks, 68 s at 2048, over 300 s at 4096; issue #12). */
    int64_t now = ds_engine_now(net->eng);
    net->n_fast++;
    for (int32_t i = 0; i < n_fresh; i++) {
      int32_t s = net->fresh.slot[i];
      struct flow *f = &net->flows[s];
      net->n_solved++;
      ds__net_advance(net, s, now);
      f->rate = f->cap;
      ds__net_enqueue(net, s);
    }
  } else if (net->mode == DS_NET_CONSTANT) {
    /* Every flow alone: only the new ones need a rate. */
    int64_t now = ds_engine_now(net->eng);
    for (int32_t i = 0; i < n_fresh; i++) solve_one(net, net->fresh.slot[i], now);
  } else {
    int64_t now = ds_engine_now(net->eng);
    struct comp_bounds b;
    new_visit(net);
    for (int32_t i = 0; i < n_fresh; i++) {
      int32_t s = net->fresh.slot[i];
      if (net->flows[s].visit == net->visit) continue; /* in an earlier one's component */
      net->flows[s].visit = net->visit;
      if (alone(net, &net->flows[s])) {
        solve_one(net, s, now);
        continue;
      }
      int32_t n = collect_component(net, s, &b);
      solve_set(net, net->comp, n, &b);
    }
    for (int32_t d = 0; d < net->n_dirty; d++) {
      const struct link_members *lm = &net->members[net->dirty[d]];
      if (lm->n == 0 || net->flows[lm->m[0].slot].visit == net->visit) continue;
      int32_t n = collect_component(net, lm->m[0].slot, &b);
      solve_set(net, net->comp, n, &b);
    }
  }
  for (int32_t d = 0; d < net->n_dirty; d++) net->link_dirty[net->dirty[d]] = 0;
  net->n_dirty = 0;
}
