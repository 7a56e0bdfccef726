/*
 * Flow-level network: latency phase, then bandwidth sharing.
 *
 * Invariant: a moving flow's rate is constant between two re-solves of its
 * component, so its bytes are exact at mark_ns and advanced lazily
 * (left -= rate * elapsed) only when its rate is about to change or it is
 * checked for completion. Starts and ends at one instant are batched into
 * one DS_EV_NET_RESOLVE event at that instant.
 *
 * Completions: every moving flow has its end time due_ns in a binary heap
 * keyed by (due_ns, start sequence); one DS_EV_NET_COMPLETE event stands
 * for the heap's top and is rescheduled at every re-solve. At that event
 * the flows due within the next 2 ns are popped and ended (in start order,
 * one qsort: O(k log k) for k flows) if at most one nanosecond's worth of
 * their bytes is left, the rule of the full re-solve. Flows ending together
 * with the same trailing latency are delivered by one DS_EV_NET_DELIVER
 * event holding all their tags, instead of one event each.
 *
 * The links' member lists are kept here; the max-min solver that reads
 * them is net_maxmin.c, the due-time heap net_heap.c; net_impl.h is what
 * the three files share.
 */
#include "sim/net/net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "sim/net/events.h"
#include "sim/net/net_impl.h"

/* The heap's window: flows due up to this many ns after a completion
 * event are candidates (the rule ends flows whose exact end is at most
 * 1 ns plus 1e-6 bytes' time away; rounding puts that within 2 ns). */
#define DUE_WINDOW_NS 2

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

uint64_t ds__net_fast_resolves(const struct ds_net *net) { return net->n_fast; }

uint64_t ds_net_work_done(void *ctx, uint64_t fired) {
  const struct ds_net *net = ctx;
  return fired + net->next_seq + net->n_solved;
}

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

/* ---- link member lists ------------------------------------------------ */

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
    int32_t l = f->links[k];
    struct link_members *lm = &net->members[l];
    int was_clean = ds__net_link_clean(net, l);
    if (lm->n == lm->cap) {
      int32_t nc = lm->cap ? 2 * lm->cap : 4;
      struct member *m = realloc(lm->m, (size_t)nc * sizeof *m);
      if (!m) return DS_ENOMEM;
      lm->m = m;
      lm->cap = nc;
    }
    if (lm->n == 0) {
      lm->cap_val = f->cap;
      lm->n_cap_eq = 0;
    }
    lm->n_cap_eq += f->cap == lm->cap_val;
    pos[k] = lm->n;
    lm->m[lm->n++] = (struct member){slot, k};
    lm->weight += ds__net_mult_at(f, k);
    net->n_unclean += was_clean - ds__net_link_clean(net, l);
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
    int was_clean = ds__net_link_clean(net, l);
    lm->n_cap_eq -= f->cap == lm->cap_val;
    lm->weight -= ds__net_mult_at(f, k);
    if (i != --lm->n) { /* (it was the last, as a lone flow is: nothing moves) */
      struct member last = lm->m[lm->n];
      lm->m[i] = last;
      member_pos(net, last.slot)[last.k] = i;
    }
    if (lm->n > 0) mark_dirty(net, l); /* its other flows may speed up */
    net->n_unclean += was_clean - ds__net_link_clean(net, l);
  }
}

/* ---- starting flows --------------------------------------------------- */

static ds_status start_moving(struct ds_net *net, int32_t slot) {
  struct flow *f = &net->flows[slot];
  f->state = FLOW_MOVING;
  f->rate = 0;
  ds__net_note_rate(net, f);
  f->mark_ns = ds_engine_now(net->eng);
  net->n_active++;
  ds__net_list_push(net, &net->fresh, slot);
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
  f->off_cap = 0;
  net->n_pending++;
  int64_t lat = lead_lat_ns > 0 ? ds_units_round_ns(lead_lat_ns) : 0;
  if (lat > 0) {
    struct ds_event ev = {.kind = DS_EV_NET_ACTIVATE, .a = slot};
    return ds_engine_schedule(net->eng, ds_engine_now(net->eng) + lat, &ev, NULL);
  }
  DS_CHECK(start_moving(net, slot));
  return request_resolve(net);
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
    ds__net_list_remove(net, l, slot);
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

static void complete(struct ds_net *net) {
  net->complete_pending = 0;
  int64_t now = ds_engine_now(net->eng);
  int32_t n_done = 0, n_kept = 0;
  int32_t n_cand = ds__net_heap_pop_due(net, now + DUE_WINDOW_NS);
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
      ds__net_heap_push(net, slot);
      continue;
    }
    /* Due but not ended: the rounding of a huge flow's bytes (since its
     * mark) hid the end. From a fresh mark now the due time and the rule
     * agree, so the next completion ends it instead of looping here. */
    ds__net_advance(net, slot, now);
    ds__net_enqueue(net, slot);
  }
  n_done = end_listed(net, &net->slow, now, n_done);
  /* Not solved yet (rate 0): only an empty flow ends, as under the rule. */
  n_done = end_listed(net, &net->fresh, now, n_done);
  /* By start sequence: a deterministic callback order. */
  sort_by_seq(net->done, n_done, net->done_tmp);
  for (int32_t i = 0; i < n_done; i++) {
    int32_t slot = net->done[i].slot;
    net->n_active--;
    net->n_off_cap -= net->flows[slot].off_cap;
    net->flows[slot].off_cap = 0;
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
    ds__net_resolve(net);
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
