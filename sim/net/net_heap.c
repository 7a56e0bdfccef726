/*
 * Where a moving flow waits for its completion: the binary heap of due
 * times keyed by (due_ns, start sequence), of the flows at SLOW_RATE or
 * above, or the list of slower flows, checked one by one (net.c's
 * complete() reads both, and the list of fresh flows, not solved yet).
 */
#include <math.h>
#include <stdint.h>

#include "base/units.h"
#include "sim/net/net_impl.h"

/* Below this rate (bytes/s) a flow is "slow": the completion rule's
 * absolute slack of 1e-6 bytes is worth more than 1 ns of it, so it may end
 * earlier than the 2 ns window of the heap would find; the few such flows
 * are checked one by one at every completion event instead. A flow not yet
 * solved (rate 0) is slow too. */
#define SLOW_RATE 1e3
/* What one step of a removal from the heap's top (two comparisons and a
 * move, down a path through the array) costs, counted in steps of a
 * rebuild (a scan and sifts near the leaves): measured, BERT-base on
 * 2node-ib at 16 ranks, 1 MiB buckets, 4 iterations (a per-flow tree
 * all-reduce, 23 flows ending per completion in a heap of ~180; perf stat
 * task-clock, 3 runs each): 1 938 ms, 2 861 ms, 4 828 ms, 8 827 ms,
 * always rebuilding 824 ms; the 1024- and 2048-rank per-flow rings and
 * GPT-2 on 4096 ranks unchanged at 4. */
#define POP_STEP_COST 4

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

/* heap_down on the keys alone, for the rebuild: it leaves the flows'
 * heap_pos to the rebuild's last pass, one write per flow, where
 * heap_down's writes at every level of every sift reached flows all over
 * the flow array (a cache miss each past a few thousand flows in flight:
 * a fifth of a per-flow run on 4096 ranks was heap_down). */
static void sift_keys_down(struct heap_key *heap, int32_t n, int32_t i) {
  struct heap_key k = heap[i];
  for (;;) {
    int32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && key_less(&heap[c + 1], &heap[c])) c++;
    if (!key_less(&heap[c], &k)) break;
    heap[i] = heap[c];
    i = c;
  }
  heap[i] = k;
}

static void heap_remove(struct ds_net *net, int32_t slot) {
  int32_t i = net->flows[slot].heap_pos;
  net->flows[slot].heap_pos = -1;
  struct heap_key last = net->heap[--net->n_heap];
  if (i == net->n_heap) return;
  if (i > 0 && key_less(&last, &net->heap[(i - 1) / 2])) heap_up(net, i, last);
  else heap_down(net, i, last);
}

void ds__net_heap_push(struct ds_net *net, int32_t slot) {
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

/* Puts a flow whose rate and mark are set where completion looks for it:
 * the heap, or the slow list below SLOW_RATE (a fresh flow is in neither:
 * ds__net_resolve() takes every one off its list first). A flow already in the
 * heap is moved to its new key's place there, where taking it out before
 * its re-solve and pushing it back after walked the heap twice per flow
 * (40 % of a per-flow tree all-reduce's run, docs/sweeps.md). Where in the
 * heap a flow sits changes no result: everything read from the heap (its
 * top, the flows due by a time) depends only on the set of keys, and the
 * flows that end together are sorted by start sequence. */
void ds__net_enqueue(struct ds_net *net, int32_t slot) {
  struct flow *f = &net->flows[slot];
  ds__net_note_rate(net, f);
  double left = f->left_bytes > 0 ? f->left_bytes : 0;
  double t = isinf(f->rate) ? 0 : left / f->rate * 1e9;
  /* rate 0 (not solved yet): never, unless the rule ends it (0/0 is NaN) */
  f->due_ns = !(f->rate > 0) || isinf(t) ? INT64_MAX : f->mark_ns + ds_units_round_ns(t);
  if (f->rate < SLOW_RATE) {
    if (f->heap_pos >= 0) heap_remove(net, slot);
    if (f->slow_pos < 0) ds__net_list_push(net, &net->slow, slot);
  } else {
    if (f->slow_pos >= 0) ds__net_list_remove(net, &net->slow, slot);
    if (f->heap_pos >= 0) heap_move(net, slot);
    else ds__net_heap_push(net, slot);
  }
}

/* Takes every heap entry due by `limit` out of the heap, into net->kept;
 * returns their number. A depth-first walk finds the k of them in O(k)
 * (below an entry due later, all are); removing them one by one costs
 * O(k log n), rebuilding the heap from the rest O(n): whichever is less,
 * a removal's step counted POP_STEP_COST rebuild steps.
 * (The flows of a symmetric collective all end together; pushed in start
 * order with one due time, they sit in the array in that order, which the
 * rebuild's scan keeps, so they need no sorting.) */
int32_t ds__net_heap_pop_due(struct ds_net *net, int64_t limit) {
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
  for (int32_t i = m / 2 - 1; i >= 0; i--) sift_keys_down(net->heap, m, i);
  for (int32_t i = 0; i < m; i++) net->flows[net->heap[i].slot].heap_pos = i;
  return k;
}
