/*
 * Flow-level network: latency phase, then bandwidth sharing.
 *
 * Invariant: a moving flow's rate is constant between two re-solves of its
 * component, so its bytes are exact at mark_ns and advanced lazily
 * (left -= rate * elapsed) only when its rate is about to change or it is
 * checked for completion. Starts and ends at one instant are batched into
 * one DS_EV_NET_RESOLVE event at that instant.
 *
 * Incremental max-min: flows sharing a link, directly or through other
 * flows, form a component; a flow's max-min rate depends on its component
 * alone. A re-solve therefore visits only the components of the flows that
 * started or ended since the last one (a breadth-first search from them over
 * each link's member list) and runs progressive filling on each component
 * separately; every other flow keeps its rate and its end time. (The full
 * re-solve of every flow at every event, which this replaces, is kept as
 * the reference mode of ds__net_set_reference for tests.)
 *
 * Completions: every moving flow has its end time due_ns in a binary heap
 * keyed by (due_ns, start sequence); one DS_EV_NET_COMPLETE event stands
 * for the heap's top and is rescheduled at every re-solve. At that event
 * the flows due within the next 2 ns are popped and ended (in start order,
 * one qsort: O(k log k) for k flows) if at most one nanosecond's worth of
 * their bytes is left, the rule of the full re-solve. Flows ending together
 * with the same trailing latency are delivered by one DS_EV_NET_DELIVER
 * event holding all their tags, instead of one event each.
 */
#include "sim/net/net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "sim/net/events.h"

enum flow_state { FLOW_FREE, FLOW_LATENCY, FLOW_MOVING };

/* Below this rate (bytes/s) a flow is "slow": the completion rule's
 * absolute slack of 1e-6 bytes is worth more than 1 ns of it, so it may end
 * earlier than the 2 ns window of the heap would find; the few such flows
 * are checked one by one at every completion event instead. A flow not yet
 * solved (rate 0) is slow too. */
#define SLOW_RATE 1e3
/* The heap's window: flows due up to this many ns after a completion
 * event are candidates (the rule ends flows whose exact end is at most
 * 1 ns plus 1e-6 bytes' time away; rounding puts that within 2 ns). */
#define DUE_WINDOW_NS 2
/* What one step of a removal from the heap's top (two comparisons and a
 * move, down a path through the array) costs, counted in steps of a
 * rebuild (a scan and sifts near the leaves): measured, BERT-base on
 * 2node-ib at 16 ranks, 1 MiB buckets, 4 iterations (a per-flow tree
 * all-reduce, 23 flows ending per completion in a heap of ~180; perf stat
 * task-clock, 3 runs each): 1 938 ms, 2 861 ms, 4 828 ms, 8 827 ms,
 * always rebuilding 824 ms; the 1024- and 2048-rank per-flow rings and
 * GPT-2 on 4096 ranks unchanged at 4. */
#define POP_STEP_COST 4
/* Distinct trailing latencies among the flows ending at one instant that
 * get a delivery batch each; more fall back to fresh batches. */
#define OPEN_BATCHES 8
/* A flow's places in its links' member lists sit in one flat array, this
 * many per flow slot (routes longer than this keep their own array): the
 * lists are walked once per start and end of every flow, and one array
 * beside the flows costs fewer cache misses than one allocation per flow. */
#define FLAT_LINKS 6

/* The fields a re-solve reads and writes of every flow of its component
 * come first, within 64 bytes (fewer cache lines touched per flow: 3 %
 * less time on a per-flow tree all-reduce). */
struct flow {
  const int32_t *links;
  int32_t n_links;
  uint32_t visit; /* component search stamp */
  double left_bytes; /* bytes left at mark_ns */
  int64_t mark_ns;
  double rate; /* bytes per second while moving */
  double cap;  /* rate never above this (INFINITY: uncapped) */
  int64_t due_ns; /* when it ends at this rate (INT64_MAX: never) */
  int32_t heap_pos;   /* index in net->heap, or -1 */
  int32_t slow_pos;   /* index in net->slow, or -1 */
  const uint32_t *mult;
  enum flow_state state;
  int frozen;     /* progressive filling scratch */
  int64_t trail_lat_ns;
  uint64_t tag;
  uint64_t seq;       /* start order: completions at one instant fire in it */
  int32_t fresh_pos;  /* index in net->fresh (not solved yet), or -1 */
  int32_t next_free;
  int32_t *member_pos; /* [n_links] when n_links > FLAT_LINKS, else unused */
  int32_t member_cap;
};

/* A moving flow on a link: its slot and the index of the link in its route. */
struct member {
  int32_t slot;
  int32_t k;
};

struct link_members {
  struct member *m;
  int32_t n, cap;
  int64_t weight; /* the members' multiplicities summed */
};

/* An unordered list of flow slots. Each flow keeps its index in the list
 * (list_pos), so it leaves in O(1): the last slot moves into its place. */
struct slot_list {
  int32_t *slot;
  int32_t n;
};

struct heap_key {
  int64_t due_ns;
  uint64_t seq;
  int32_t slot;
};

/* A flow that ends at this instant, keyed by its start order. */
struct done_flow {
  uint64_t seq;
  int32_t slot;
};

/* Tags delivered together by one DS_EV_NET_DELIVER event (a = batch id). */
struct batch {
  uint64_t *tags;
  int32_t n, cap;
  int32_t next_free;
};

struct open_batch {
  int64_t trail_ns;
  int32_t id;
};

struct ds_net {
  const struct ds_topo *topo;
  struct ds_engine *eng;
  enum ds_net_mode mode;
  ds_net_done_fn on_done;
  ds_net_sent_fn on_sent;
  void *owner;
  int reference; /* re-solve every flow at every event (tests) */
  int no_shortcut; /* never all_at_one_cap (tests) */
  uint64_t n_solved; /* flows (re-)solved so far, for tests */
  uint64_t n_shortcut; /* of which by all_at_one_cap, for tests */
  struct flow *flows;
  int32_t *flat_pos; /* [cap_flows * FLAT_LINKS]: see member_pos() */
  int32_t cap_flows;
  int32_t free_head;
  int32_t n_pending;
  int32_t n_active; /* moving flows */
  struct heap_key *heap; /* moving flows that are not slow, by due time */
  int32_t n_heap;
  struct slot_list slow;  /* slow moving flows */
  struct slot_list fresh; /* flows that started moving since the last re-solve */
  int32_t *comp; /* scratch: a component's flows */
  struct done_flow *done; /* scratch for completions */
  struct done_flow *done_tmp; /* scratch for their sort */
  int32_t *kept;          /* scratch: candidates that were not yet done */
  int32_t *done_stack;    /* scratch: heap walk */
  uint64_t next_seq;
  int resolve_pending;
  uint64_t complete_handle;
  int complete_pending;
  uint32_t visit; /* current component search stamp */
  /* per link */
  struct link_members *members;
  uint32_t *link_visit;
  int32_t *dirty; /* links whose member set changed since the last re-solve */
  int32_t n_dirty;
  uint8_t *link_dirty;
  int32_t *comp_links; /* scratch: a component's links */
  /* per-link scratch for progressive filling */
  double *link_cap_left;
  double *link_weight;
  int32_t *touched;
  int32_t n_touched;
  uint8_t *link_touched;
  /* delivery batches */
  struct batch *batches;
  int32_t n_batches, batch_free;
  struct open_batch open[OPEN_BATCHES];
  int32_t n_open;
  uint64_t open_sched; /* engine schedule count when open[] was last valid */
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
  net->batch_free = -1;
  net->members = calloc(nl, sizeof *net->members);
  net->link_visit = calloc(nl, sizeof *net->link_visit);
  net->dirty = malloc(nl * sizeof *net->dirty);
  net->link_dirty = calloc(nl, 1);
  net->comp_links = malloc(nl * sizeof *net->comp_links);
  net->link_cap_left = malloc(nl * sizeof *net->link_cap_left);
  net->link_weight = malloc(nl * sizeof *net->link_weight);
  net->touched = malloc(nl * sizeof *net->touched);
  net->link_touched = calloc(nl, 1);
  if (!net->members || !net->link_visit || !net->dirty || !net->link_dirty ||
      !net->comp_links || !net->link_cap_left || !net->link_weight ||
      !net->touched || !net->link_touched) {
    ds_net_free(net);
    return DS_ENOMEM;
  }
  *out = net;
  return DS_OK;
}

void ds_net_free(struct ds_net *net) {
  if (!net) return;
  for (int32_t i = 0; i < net->cap_flows; i++) free(net->flows[i].member_pos);
  free(net->flows);
  free(net->flat_pos);
  free(net->heap);
  free(net->slow.slot);
  free(net->fresh.slot);
  free(net->comp);
  free(net->done);
  free(net->done_tmp);
  free(net->kept);
  free(net->done_stack);
  if (net->members)
    for (int32_t l = 0; l <= net->topo->n_links; l++) free(net->members[l].m);
  free(net->members);
  free(net->link_visit);
  free(net->dirty);
  free(net->link_dirty);
  free(net->comp_links);
  free(net->link_cap_left);
  free(net->link_weight);
  free(net->touched);
  free(net->link_touched);
  for (int32_t b = 0; b < net->n_batches; b++) free(net->batches[b].tags);
  free(net->batches);
  free(net);
}

void ds__net_set_reference(struct ds_net *net, int on) { net->reference = on; }

void ds__net_set_no_shortcut(struct ds_net *net, int on) { net->no_shortcut = on; }

uint64_t ds__net_shortcut_solved(const struct ds_net *net) { return net->n_shortcut; }

uint64_t ds__net_solved(const struct ds_net *net) { return net->n_solved; }

static ds_status grow_array(void **p, size_t n, size_t size) {
  void *q = realloc(*p, n * size);
  if (!q) return DS_ENOMEM;
  *p = q;
  return DS_OK;
}

static ds_status grow(struct ds_net *net) {
  int32_t nc = net->cap_flows ? 2 * net->cap_flows : 64;
  size_t n = (size_t)nc;
  DS_CHECK(grow_array((void **)&net->flows, n, sizeof *net->flows));
  DS_CHECK(grow_array((void **)&net->flat_pos, n * FLAT_LINKS, sizeof *net->flat_pos));
  DS_CHECK(grow_array((void **)&net->heap, n, sizeof *net->heap));
  DS_CHECK(grow_array((void **)&net->slow.slot, n, sizeof *net->slow.slot));
  DS_CHECK(grow_array((void **)&net->comp, n, sizeof *net->comp));
  DS_CHECK(grow_array((void **)&net->fresh.slot, n, sizeof *net->fresh.slot));
  DS_CHECK(grow_array((void **)&net->done, n, sizeof *net->done));
  DS_CHECK(grow_array((void **)&net->done_tmp, n, sizeof *net->done_tmp));
  DS_CHECK(grow_array((void **)&net->kept, n, sizeof *net->kept));
  DS_CHECK(grow_array((void **)&net->done_stack, n, sizeof *net->done_stack));
  struct flow *f = net->flows;
  for (int32_t i = nc - 1; i >= net->cap_flows; i--) {
    f[i] = (struct flow){.state = FLOW_FREE, .next_free = net->free_head};
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

/* ---- the due-time heap ------------------------------------------------ */

static int key_less(const struct heap_key *a, const struct heap_key *b) {
  return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_place(struct ds_net *net, int32_t i, struct heap_key k) {
  net->heap[i] = k;
  net->flows[k.slot].heap_pos = i;
}

static void heap_up(struct ds_net *net, int32_t i, struct heap_key k) {
  while (i > 0) {
    int32_t p = (i - 1) / 2;
    if (!key_less(&k, &net->heap[p])) break;
    heap_place(net, i, net->heap[p]);
    i = p;
  }
  heap_place(net, i, k);
}

static void heap_down(struct ds_net *net, int32_t i, struct heap_key k) {
  int32_t n = net->n_heap;
  for (;;) {
    int32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && key_less(&net->heap[c + 1], &net->heap[c])) c++;
    if (!key_less(&net->heap[c], &k)) break;
    heap_place(net, i, net->heap[c]);
    i = c;
  }
  heap_place(net, i, k);
}

static void heap_remove(struct ds_net *net, int32_t slot) {
  int32_t i = net->flows[slot].heap_pos;
  net->flows[slot].heap_pos = -1;
  struct heap_key last = net->heap[--net->n_heap];
  if (i == net->n_heap) return;
  if (i > 0 && key_less(&last, &net->heap[(i - 1) / 2])) heap_up(net, i, last);
  else heap_down(net, i, last);
}

static void heap_push(struct ds_net *net, int32_t slot) {
  const struct flow *f = &net->flows[slot];
  struct heap_key k = {f->due_ns, f->seq, slot};
  heap_up(net, net->n_heap++, k);
}

/* Restores the heap's order after the due time of a flow in it changed:
 * a walk from its place. Mostly it did not (a re-solve of a per-flow tree
 * all-reduce's component leaves every due time as it was: 12.8 M of 12.8 M
 * at BERT-base on 2node-ib, 16 ranks, 1 MiB buckets), and the heap is
 * left alone. */
static void heap_move(struct ds_net *net, int32_t slot) {
  const struct flow *f = &net->flows[slot];
  int32_t i = f->heap_pos;
  if (net->heap[i].due_ns == f->due_ns) return;
  struct heap_key k = {f->due_ns, f->seq, slot};
  if (i > 0 && key_less(&k, &net->heap[(i - 1) / 2])) heap_up(net, i, k);
  else heap_down(net, i, k);
}

/* The flow's index field for list l: slow_pos or fresh_pos. */
static int32_t *list_pos(struct ds_net *net, const struct slot_list *l, int32_t slot) {
  struct flow *f = &net->flows[slot];
  return l == &net->slow ? &f->slow_pos : &f->fresh_pos;
}

static void list_push(struct ds_net *net, struct slot_list *l, int32_t slot) {
  *list_pos(net, l, slot) = l->n;
  l->slot[l->n++] = slot;
}

static void list_remove(struct ds_net *net, struct slot_list *l, int32_t slot) {
  int32_t i = *list_pos(net, l, slot);
  int32_t last = l->slot[--l->n];
  l->slot[i] = last;
  *list_pos(net, l, last) = i;
  *list_pos(net, l, slot) = -1;
}

/* Puts a flow whose rate and mark are set where completion looks for it:
 * the heap, or the slow list below SLOW_RATE (a fresh flow is in neither:
 * resolve() takes every one off its list first). A flow already in the
 * heap is moved to its new key's place there, where taking it out before
 * its re-solve and pushing it back after walked the heap twice per flow
 * (40 % of a per-flow tree all-reduce's run, docs/sweeps.md). Where in the
 * heap a flow sits changes no result: everything read from the heap (its
 * top, the flows due by a time) depends only on the set of keys, and the
 * flows that end together are sorted by start sequence. */
static void enqueue(struct ds_net *net, int32_t slot) {
  struct flow *f = &net->flows[slot];
  double left = f->left_bytes > 0 ? f->left_bytes : 0;
  double t = isinf(f->rate) ? 0 : left / f->rate * 1e9;
  /* rate 0 (not solved yet): never, unless the rule ends it (0/0 is NaN) */
  f->due_ns = !(f->rate > 0) || isinf(t) ? INT64_MAX : f->mark_ns + ds_units_round_ns(t);
  if (f->rate < SLOW_RATE) {
    if (f->heap_pos >= 0) heap_remove(net, slot);
    if (f->slow_pos < 0) list_push(net, &net->slow, slot);
  } else {
    if (f->slow_pos >= 0) list_remove(net, &net->slow, slot);
    if (f->heap_pos >= 0) heap_move(net, slot);
    else heap_push(net, slot);
  }
}

/* ---- link member lists ------------------------------------------------ */

static uint32_t mult_at(const struct flow *f, int32_t i) {
  return f->mult ? f->mult[i] : 1;
}

static void mark_dirty(struct ds_net *net, int32_t l) {
  if (net->link_dirty[l]) return;
  net->link_dirty[l] = 1;
  net->dirty[net->n_dirty++] = l;
}

/* Index in each of the flow's links' member lists, [n_links]. */
static int32_t *member_pos(struct ds_net *net, int32_t slot) {
  const struct flow *f = &net->flows[slot];
  return f->n_links <= FLAT_LINKS ? net->flat_pos + (size_t)slot * FLAT_LINKS : f->member_pos;
}

static ds_status join_links(struct ds_net *net, int32_t slot) {
  struct flow *f = &net->flows[slot];
  if (f->n_links > FLAT_LINKS && f->n_links > f->member_cap) {
    int32_t *p = realloc(f->member_pos, (size_t)f->n_links * sizeof *p);
    if (!p) return DS_ENOMEM;
    f->member_pos = p;
    f->member_cap = f->n_links;
  }
  int32_t *pos = member_pos(net, slot);
  for (int32_t k = 0; k < f->n_links; k++) {
    struct link_members *lm = &net->members[f->links[k]];
    if (lm->n == lm->cap) {
      int32_t nc = lm->cap ? 2 * lm->cap : 4;
      struct member *m = realloc(lm->m, (size_t)nc * sizeof *m);
      if (!m) return DS_ENOMEM;
      lm->m = m;
      lm->cap = nc;
    }
    pos[k] = lm->n;
    lm->m[lm->n++] = (struct member){slot, k};
    lm->weight += mult_at(f, k);
  }
  return DS_OK;
}

static void leave_links(struct ds_net *net, int32_t slot) {
  const struct flow *f = &net->flows[slot];
  const int32_t *pos = member_pos(net, slot);
  for (int32_t k = 0; k < f->n_links; k++) {
    int32_t l = f->links[k];
    struct link_members *lm = &net->members[l];
    int32_t i = pos[k];
    lm->weight -= mult_at(f, k);
    if (i != --lm->n) { /* (it was the last, as a lone flow is: nothing moves) */
      struct member last = lm->m[lm->n];
      lm->m[i] = last;
      member_pos(net, last.slot)[last.k] = i;
    }
    if (lm->n > 0) mark_dirty(net, l); /* its other flows may speed up */
  }
}

/* ---- starting flows --------------------------------------------------- */

static ds_status start_moving(struct ds_net *net, int32_t slot) {
  struct flow *f = &net->flows[slot];
  f->state = FLOW_MOVING;
  f->rate = 0;
  f->mark_ns = ds_engine_now(net->eng);
  net->n_active++;
  list_push(net, &net->fresh, slot);
  if (net->mode == DS_NET_MAXMIN) DS_CHECK(join_links(net, slot));
  return DS_OK;
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
  f->links = links;
  f->mult = mult;
  f->n_links = n;
  f->state = FLOW_LATENCY;
  f->left_bytes = bytes;
  f->rate = 0;
  f->cap = cap_bytes_per_s;
  f->trail_lat_ns = trail_lat_ns > 0 ? ds_units_round_ns(trail_lat_ns) : 0;
  f->tag = tag;
  f->seq = net->next_seq++;
  f->heap_pos = f->slow_pos = f->fresh_pos = -1;
  f->next_free = -1;
  net->n_pending++;
  int64_t lat = lead_lat_ns > 0 ? ds_units_round_ns(lead_lat_ns) : 0;
  if (lat > 0) {
    struct ds_event ev = {.kind = DS_EV_NET_ACTIVATE, .a = slot};
    return ds_engine_schedule(net->eng, ds_engine_now(net->eng) + lat, &ev, NULL);
  }
  DS_CHECK(start_moving(net, slot));
  return request_resolve(net);
}

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
        net->link_weight[f->links[k]] -= mult_at(f, k);
    }
  }
  for (int32_t t = 0; t < net->n_touched; t++)
    net->link_touched[net->touched[t]] = 0;
}

/* Brings a flow's bytes to now at its old rate, before its rate changes
 * (enqueue() then files it under its new due time). */
static void advance(struct ds_net *net, int32_t slot, int64_t now) {
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
  advance(net, slot, now);
  struct flow *f = &net->flows[slot];
  double b = route_bottleneck(net, f);
  f->rate = b < f->cap ? b : f->cap;
  enqueue(net, slot);
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
  for (int32_t i = 0; i < n; i++) advance(net, slots[i], now);
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
  for (int32_t i = 0; i < n; i++) enqueue(net, slots[i]);
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

static void resolve(struct ds_net *net) {
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

/* One DS_EV_NET_COMPLETE event at the earliest due time, rescheduled (new
 * sequence number) at every re-solve. */
static void schedule_completion(struct ds_net *net) {
  if (net->complete_pending) {
    ds_engine_cancel(net->eng, net->complete_handle);
    net->complete_pending = 0;
  }
  int64_t when = net->n_heap > 0 ? net->heap[0].due_ns : INT64_MAX;
  for (int32_t i = 0; i < net->slow.n; i++) {
    int64_t d = net->flows[net->slow.slot[i]].due_ns;
    if (d < when) when = d;
  }
  if (when == INT64_MAX) return;
  int64_t now = ds_engine_now(net->eng);
  if (when < now) when = now;
  struct ds_event ev = {.kind = DS_EV_NET_COMPLETE};
  if (ds_engine_schedule(net->eng, when, &ev, &net->complete_handle) == DS_OK)
    net->complete_pending = 1;
}

/* ---- completion and delivery ------------------------------------------ */

/* Sorts d[0..n) by start sequence (unique): a natural merge sort, O(k)
 * when the flows come in a few ascending runs (the heap hands them out by
 * due time, each due time's flows in start order), O(k log k) at worst
 * (an insertion sort was quadratic: 942 M moves at 1024 ranks, issue #14;
 * the C library's qsort, with a call per comparison, 10-20 % of a run). */
static void sort_by_seq(struct done_flow *d, int32_t n, struct done_flow *tmp) {
  int32_t sorted = 1;
  while (sorted < n && d[sorted - 1].seq < d[sorted].seq) sorted++;
  if (sorted >= n) return;
  while (n > 1) {
    int32_t runs = 0, out = 0;
    for (int32_t a = 0; a < n;) {
      int32_t b = a + 1;
      while (b < n && d[b - 1].seq < d[b].seq) b++;
      int32_t c = b;
      if (c < n) {
        c++;
        while (c < n && d[c - 1].seq < d[c].seq) c++;
      }
      int32_t i = a, j = b;
      while (i < b && j < c) tmp[out++] = d[i].seq < d[j].seq ? d[i++] : d[j++];
      while (i < b) tmp[out++] = d[i++];
      while (j < c) tmp[out++] = d[j++];
      runs++;
      a = c;
    }
    memcpy(d, tmp, (size_t)n * sizeof *d);
    if (runs == 1) break;
  }
}

/* 1 when at most one nanosecond's worth of the flow's bytes (plus 1e-6
 * bytes of rounding) is left now: the event time was rounded to the
 * nanosecond, so up to half a nanosecond's worth may be left or overshot. */
static int ends_now(const struct flow *f, int64_t now) {
  double left = f->left_bytes - f->rate * ((double)(now - f->mark_ns) * 1e-9);
  if (isinf(f->rate)) return 1;
  return left <= f->rate * 1e-9 + 1e-6;
}

/* Moves the flows of list l that end now to net->done (from index n_done
 * on); returns the new count. The lists are short (slow or unsolved flows
 * only), so each is checked one by one. */
static int32_t end_listed(struct ds_net *net, struct slot_list *l, int64_t now, int32_t n_done) {
  for (int32_t i = 0; i < l->n;) {
    int32_t slot = l->slot[i];
    if (!ends_now(&net->flows[slot], now)) {
      i++;
      continue;
    }
    list_remove(net, l, slot);
    net->done[n_done++] = (struct done_flow){net->flows[slot].seq, slot};
  }
  return n_done;
}

static ds_status batch_new(struct ds_net *net, int32_t *out) {
  if (net->batch_free < 0) {
    int32_t nb = net->n_batches ? 2 * net->n_batches : 8;
    struct batch *b = realloc(net->batches, (size_t)nb * sizeof *b);
    if (!b) return DS_ENOMEM;
    net->batches = b;
    for (int32_t i = nb - 1; i >= net->n_batches; i--)
      b[i] = (struct batch){.next_free = net->batch_free};
    for (int32_t i = net->n_batches; i < nb; i++) b[i].next_free = i + 1 < nb ? i + 1 : -1;
    net->batch_free = net->n_batches;
    net->n_batches = nb;
  }
  int32_t id = net->batch_free;
  net->batch_free = net->batches[id].next_free;
  net->batches[id].n = 0;
  *out = id;
  return DS_OK;
}

static ds_status batch_add(struct batch *b, uint64_t tag) {
  if (b->n == b->cap) {
    int32_t nc = b->cap ? 2 * b->cap : 16;
    uint64_t *t = realloc(b->tags, (size_t)nc * sizeof *t);
    if (!t) return DS_ENOMEM;
    b->tags = t;
    b->cap = nc;
  }
  b->tags[b->n++] = tag;
  return DS_OK;
}

/* Schedules the delivery of `tag` after `trail` ns. Deliveries the old
 * one-event-per-flow scheme would have scheduled back to back for one time
 * (nothing else scheduled in between) share one event: they fire in the
 * same order at the same place among the other events. */
static ds_status deliver_later(struct ds_net *net, uint64_t tag, int64_t trail) {
  if (ds_engine_scheduled(net->eng) != net->open_sched) net->n_open = 0;
  for (int32_t i = 0; i < net->n_open; i++)
    if (net->open[i].trail_ns == trail)
      return batch_add(&net->batches[net->open[i].id], tag);
  int32_t id;
  DS_CHECK(batch_new(net, &id));
  DS_CHECK(batch_add(&net->batches[id], tag));
  struct ds_event ev = {.kind = DS_EV_NET_DELIVER, .a = id};
  ds_status st = ds_engine_schedule(net->eng, ds_engine_now(net->eng) + trail, &ev, NULL);
  if (st != DS_OK) {
    net->batches[id].next_free = net->batch_free;
    net->batch_free = id;
    return st;
  }
  if (net->n_open == OPEN_BATCHES) net->n_open = 0;
  net->open[net->n_open++] = (struct open_batch){trail, id};
  net->open_sched = ds_engine_scheduled(net->eng);
  return DS_OK;
}

static void deliver(struct ds_net *net, int32_t id) {
  /* Callbacks may start flows but never add batches (only complete()
   * does), so the batch stays where it is. */
  for (int32_t i = 0; i < net->batches[id].n; i++) {
    net->n_pending--;
    net->on_done(net->owner, net->batches[id].tags[i]);
  }
  net->batches[id].next_free = net->batch_free;
  net->batch_free = id;
}

/* Takes every heap entry due by `limit` out of the heap, into net->kept;
 * returns their number. A depth-first walk finds the k of them in O(k)
 * (below an entry due later, all are); removing them one by one costs
 * O(k log n), rebuilding the heap from the rest O(n): whichever is less,
 * a removal's step counted POP_STEP_COST rebuild steps.
 * (The flows of a symmetric collective all end together; pushed in start
 * order with one due time, they sit in the array in that order, which the
 * rebuild's scan keeps, so they need no sorting.) */
static int32_t heap_pop_due(struct ds_net *net, int64_t limit) {
  int32_t k = 0, n = net->n_heap;
  if (n == 0 || net->heap[0].due_ns > limit) return 0;
  int32_t *stack = net->done_stack;
  int32_t sp = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    int32_t i = stack[--sp];
    net->kept[k++] = net->heap[i].slot;
    for (int32_t c = 2 * i + 1; c <= 2 * i + 2 && c < n; c++)
      if (net->heap[c].due_ns <= limit) stack[sp++] = c;
  }
  int32_t log_n = 1;
  while ((1 << log_n) < n) log_n++;
  if ((int64_t)k * log_n * POP_STEP_COST < n) {
    /* From the top: by (due, start), so a few ascending runs to sort. */
    for (int32_t i = 0; i < k; i++) {
      net->kept[i] = net->heap[0].slot;
      heap_remove(net, net->kept[i]);
    }
    return k;
  }
  int32_t m = 0;
  k = 0;
  for (int32_t i = 0; i < n; i++) {
    struct heap_key key = net->heap[i];
    if (key.due_ns <= limit) {
      net->flows[key.slot].heap_pos = -1;
      net->kept[k++] = key.slot;
    } else {
      net->heap[m++] = key;
    }
  }
  net->n_heap = m;
  for (int32_t i = m / 2 - 1; i >= 0; i--) heap_down(net, i, net->heap[i]);
  for (int32_t i = 0; i < m; i++) net->flows[net->heap[i].slot].heap_pos = i;
  return k;
}

static void complete(struct ds_net *net) {
  net->complete_pending = 0;
  int64_t now = ds_engine_now(net->eng);
  int32_t n_done = 0, n_kept = 0;
  int32_t n_cand = heap_pop_due(net, now + DUE_WINDOW_NS);
  for (int32_t i = 0; i < n_cand; i++) {
    int32_t slot = net->kept[i];
    if (ends_now(&net->flows[slot], now))
      net->done[n_done++] = (struct done_flow){net->flows[slot].seq, slot};
    else
      net->kept[n_kept++] = slot;
  }
  for (int32_t i = 0; i < n_kept; i++) {
    int32_t slot = net->kept[i];
    if (net->flows[slot].due_ns > now) {
      heap_push(net, slot);
      continue;
    }
    /* Due but not ended: the rounding of a huge flow's bytes (since its
     * mark) hid the end. From a fresh mark now the due time and the rule
     * agree, so the next completion ends it instead of looping here. */
    advance(net, slot, now);
    enqueue(net, slot);
  }
  n_done = end_listed(net, &net->slow, now, n_done);
  /* Not solved yet (rate 0): only an empty flow ends, as under the rule. */
  n_done = end_listed(net, &net->fresh, now, n_done);
  /* By start sequence: a deterministic callback order. */
  sort_by_seq(net->done, n_done, net->done_tmp);
  for (int32_t i = 0; i < n_done; i++) {
    int32_t slot = net->done[i].slot;
    net->n_active--;
    if (net->mode == DS_NET_MAXMIN) leave_links(net, slot);
  }
  /* Callbacks may start flows (which may grow and move the flow array), so
   * copy what is needed and free the slots first. */
  net->n_open = 0;
  for (int32_t i = 0; i < n_done; i++) {
    int32_t slot = net->done[i].slot;
    uint64_t tag = net->flows[slot].tag;
    int64_t trail = net->flows[slot].trail_lat_ns;
    net->flows[slot].state = FLOW_FREE;
    net->flows[slot].next_free = net->free_head;
    net->free_head = slot;
    if (net->on_sent) net->on_sent(net->owner, tag);
    if (trail > 0 && deliver_later(net, tag, trail) == DS_OK) continue;
    net->n_pending--;
    net->on_done(net->owner, tag);
  }
  if (n_done > 0 || net->n_active > 0) request_resolve(net);
}

void ds_net_handle_event(struct ds_net *net, const struct ds_event *ev) {
  switch (ev->kind) {
  case DS_EV_NET_ACTIVATE:
    (void)start_moving(net, ev->a); /* out of memory: the flow never ends */
    request_resolve(net);
    break;
  case DS_EV_NET_RESOLVE:
    net->resolve_pending = 0;
    resolve(net);
    schedule_completion(net);
    break;
  case DS_EV_NET_COMPLETE:
    complete(net);
    break;
  case DS_EV_NET_DELIVER:
    deliver(net, ev->a);
    break;
  default:
    break;
  }
}

int32_t ds_net_flows_pending(const struct ds_net *net) { return net->n_pending; }

double ds_net_flow_rate(const struct ds_net *net, uint64_t tag) {
  for (int32_t s = 0; s < net->cap_flows; s++) {
    const struct flow *f = &net->flows[s];
    if (f->state == FLOW_MOVING && f->tag == tag) return f->rate;
  }
  return -1;
}
