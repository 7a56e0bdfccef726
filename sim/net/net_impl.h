/*
 * Internal to the network model (sim/net/net.c, sim/net/net_heap.c,
 * sim/net/net_maxmin.c): the flow slots, the per-link member lists and the
 * scratch arrays of struct ds_net, and the calls between the three files.
 * Not for other modules.
 */
#ifndef DS_NET_IMPL_H
#define DS_NET_IMPL_H

#include <math.h>
#include <stdint.h>

#include "base/status.h"
#include "sim/net/net.h"
#include "sim/net/topo.h"

enum flow_state { FLOW_FREE, FLOW_LATENCY, FLOW_MOVING };

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
  uint8_t off_cap; /* moving at a rate other than its cap (counted in n_off_cap) */
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
  double cap_val;   /* the cap of the member that joined the empty link */
  int32_t n_cap_eq; /* members whose cap is cap_val */
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
  /* The all-at-their-caps fast path (net_maxmin.c ds__net_resolve):
   * links with members that are not "capped-clean" (every member at one
   * finite cap c, bandwidth / weight >= c), and moving flows whose rate is
   * not their cap (fresh ones: rate 0). */
  int32_t n_unclean;
  int32_t n_off_cap;
  uint64_t n_fast; /* re-solves the fast path took, for tests */
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

/* ---- inline: called per flow from more than one file ------------------ */

/* Whether link l is capped-clean: empty, or every member at one finite cap
 * c with bandwidth / weight >= c, the very test of net_maxmin.c's
 * all_at_one_cap, so no member is held below its cap by l. */
static inline int ds__net_link_clean(const struct ds_net *net, int32_t l) {
  const struct link_members *lm = &net->members[l];
  if (lm->n == 0) return 1;
  return lm->n_cap_eq == lm->n && isfinite(lm->cap_val) &&
         net->topo->links[l].bw_bytes_per_s / (double)lm->weight >= lm->cap_val;
}

/* Records whether the flow moves at its cap (after its rate was set). */
static inline void ds__net_note_rate(struct ds_net *net, struct flow *f) {
  uint8_t off = !(f->rate == f->cap);
  net->n_off_cap += (int32_t)off - (int32_t)f->off_cap;
  f->off_cap = off;
}
/* (A call across files is never inlined: these run at every flow's start,
 * end or re-solve.) */

/* How many times the flow crosses the i-th link of its route. */
static inline uint32_t ds__net_mult_at(const struct flow *f, int32_t i) {
  return f->mult ? f->mult[i] : 1;
}

/* The flow's index field for list l: slow_pos or fresh_pos. */
static inline int32_t *ds__net_list_pos(struct ds_net *net, const struct slot_list *l,
                                        int32_t slot) {
  struct flow *f = &net->flows[slot];
  return l == &net->slow ? &f->slow_pos : &f->fresh_pos;
}

static inline void ds__net_list_push(struct ds_net *net, struct slot_list *l,
                                     int32_t slot) {
  *ds__net_list_pos(net, l, slot) = l->n;
  l->slot[l->n++] = slot;
}

static inline void ds__net_list_remove(struct ds_net *net, struct slot_list *l,
                                       int32_t slot) {
  int32_t i = *ds__net_list_pos(net, l, slot);
  int32_t last = l->slot[--l->n];
  l->slot[i] = last;
  *ds__net_list_pos(net, l, last) = i;
  *ds__net_list_pos(net, l, slot) = -1;
}

/* ---- net_heap.c: where moving flows wait for completion --------------- */

/* Pushes a moving flow onto the due-time heap at its due_ns. */
void ds__net_heap_push(struct ds_net *net, int32_t slot);
/* Sets the due time of a flow whose rate and mark are set, and files it in
 * the heap or the slow list. */
void ds__net_enqueue(struct ds_net *net, int32_t slot);
/* Takes every heap entry due by `limit` out of the heap, into net->kept;
 * returns their number. */
int32_t ds__net_heap_pop_due(struct ds_net *net, int64_t limit);

/* ---- net_maxmin.c: the rate solver ------------------------------------ */

/* Brings a flow's bytes to now at its old rate. */
void ds__net_advance(struct ds_net *net, int32_t slot, int64_t now);
/* Gives a rate to every flow that started moving since the last re-solve
 * and re-solves the components they and the flows that ended changed. */
void ds__net_resolve(struct ds_net *net);

#endif /* DS_NET_IMPL_H */
