/*
 * Routes: the adjacency arrays derived from a topology's links (each
 * vertex's out links, in links and links from hubs), the route search over
 * them, and the cache of routes per GPU pair.
 *
 * Breadth-first search, as the plain one: a FIFO queue, each vertex's out
 * links in creation order, a vertex reached first through the link of the
 * earliest vertex. Two changes find the same prev links in less time:
 *   - A hub (more than hub_degree out links: a fabric switch reaching
 *     every NIC) is expanded lazily: its out links go into the queue as one
 *     entry (-1 - hub), and the vertices they reach are marked only when
 *     that entry comes out of the queue, in link order, each expanded right
 *     away (the plain search would take them out next, in that order). A
 *     vertex that a hub expanded earlier reaches is that hub's ("pending"):
 *     no other vertex takes it in the meantime.
 *   - With a target, the search stops as soon as the vertex that will reach
 *     the target is known: the first vertex marked that has a link into the
 *     target and may use it (not a GPU, not a NIC leading only out of the
 *     target's node) is the first such vertex out of the queue, so its link
 *     reaches the target. A hub expanded lazily checks the target's in
 *     links against its own links at once.
 * A route therefore costs the vertices near its two ends, not the whole
 * fabric (issue #14: 4096 GPUs on one switch took ~4096 steps per route).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "sim/net/topo_build.h"

/* A vertex of more out links than this is a hub: a route search expands it
 * lazily (ds__topo_search). A one-switch fabric's switch reaches every NIC;
 * a node's NVSwitch has one link per GPU (8 in the shipped boxes). */
#define HUB_DEGREE 16

/* The in links of every vertex and those from hubs, in link order. */
static ds_status build_in_links(struct ds_topo *t) {
  int32_t nv = t->n_vertices, n_hub = 0;
  memset(t->in_first, 0, ((size_t)nv + 1) * sizeof *t->in_first);
  memset(t->hub_in_first, 0, ((size_t)nv + 1) * sizeof *t->hub_in_first);
  free(t->hub_in);
  for (int32_t i = 0; i < t->n_links; i++) {
    int32_t w = t->links[i].dst, h = t->links[i].src;
    t->in_first[w + 1]++;
    if (t->out_first[h + 1] - t->out_first[h] > t->hub_degree) {
      t->hub_in_first[w + 1]++;
      n_hub++;
    }
  }
  for (int32_t v = 0; v < nv; v++) {
    t->in_first[v + 1] += t->in_first[v];
    t->hub_in_first[v + 1] += t->hub_in_first[v];
  }
  t->hub_in = malloc(((size_t)n_hub + 1) * sizeof *t->hub_in);
  int32_t *fill = calloc((size_t)nv, sizeof *fill), *hub_fill = calloc((size_t)nv, sizeof *fill);
  if (!t->hub_in || !fill || !hub_fill) {
    free(fill);
    free(hub_fill);
    return DS_ENOMEM;
  }
  for (int32_t i = 0; i < t->n_links; i++) {
    int32_t w = t->links[i].dst, h = t->links[i].src;
    t->in_links[t->in_first[w] + fill[w]++] = i;
    if (t->out_first[h + 1] - t->out_first[h] > t->hub_degree)
      t->hub_in[t->hub_in_first[w] + hub_fill[w]++] = i;
  }
  free(fill);
  free(hub_fill);
  return DS_OK;
}

ds_status ds__topo_set_hub_degree(struct ds_topo *t, int32_t degree) {
  t->hub_degree = degree;
  return build_in_links(t);
}

ds_status ds__topo_build_adjacency(struct ds_topo *t) {
  t->out_first = calloc((size_t)t->n_vertices + 1, sizeof *t->out_first);
  t->out_links = malloc(((size_t)t->n_links + 1) * sizeof *t->out_links);
  t->scratch_prev = malloc((size_t)t->n_vertices * sizeof *t->scratch_prev);
  t->scratch_seen = calloc((size_t)t->n_vertices, sizeof *t->scratch_seen);
  t->scratch_queue = malloc((2 * (size_t)t->n_vertices + 1) * sizeof *t->scratch_queue);
  t->scratch_hub = calloc((size_t)t->n_vertices, sizeof *t->scratch_hub);
  t->scratch_hub_out = calloc((size_t)t->n_vertices, sizeof *t->scratch_hub_out);
  t->scratch_inn = calloc((size_t)t->n_vertices, sizeof *t->scratch_inn);
  t->scratch_inn_link = malloc((size_t)t->n_vertices * sizeof *t->scratch_inn_link);
  t->in_first = calloc((size_t)t->n_vertices + 1, sizeof *t->in_first);
  t->in_links = malloc(((size_t)t->n_links + 1) * sizeof *t->in_links);
  t->hub_in_first = calloc((size_t)t->n_vertices + 1, sizeof *t->hub_in_first);
  if (!t->out_first || !t->out_links || !t->scratch_prev || !t->scratch_seen ||
      !t->scratch_queue || !t->scratch_hub || !t->scratch_hub_out || !t->scratch_inn ||
      !t->scratch_inn_link || !t->in_first || !t->in_links || !t->hub_in_first)
    return DS_ENOMEM;
  if (t->hub_degree == 0) t->hub_degree = HUB_DEGREE;
  for (int32_t i = 0; i < t->n_links; i++) t->out_first[t->links[i].src + 1]++;
  for (int32_t v = 0; v < t->n_vertices; v++)
    t->out_first[v + 1] += t->out_first[v];
  int32_t *fill = calloc((size_t)t->n_vertices, sizeof *fill);
  if (!fill) return DS_ENOMEM;
  /* Filling in link order keeps each vertex's out links in creation order,
   * which is the tie-break order of route search. */
  for (int32_t i = 0; i < t->n_links; i++) {
    int32_t v = t->links[i].src;
    t->out_links[t->out_first[v] + fill[v]++] = i;
  }
  free(fill);
  return build_in_links(t);
}


/* Whether hub h, expanded in this search, leads to w (the NIC rule). */
static int hub_leads(const struct ds_topo *t, int32_t h, int32_t w, uint32_t stamp) {
  return t->scratch_hub[h] == stamp &&
         !(t->scratch_hub_out[h] && t->vertex_node[w] == t->vertex_node[h]);
}

/* Whether w waits in the out links of a hub expanded in this search (other
 * than `except`). */
static int pending(const struct ds_topo *t, int32_t w, int32_t except, uint32_t stamp) {
  for (int32_t i = t->hub_in_first[w]; i < t->hub_in_first[w + 1]; i++) {
    int32_t h = t->links[t->hub_in[i]].src;
    if (h != except && hub_leads(t, h, w, stamp)) return 1;
  }
  return 0;
}

/* Whether v, marked with its prev link, leads only out of its node (a NIC
 * entered from inside it). */
static int nic_outbound(const struct ds_topo *t, int32_t v) {
  return t->vertex_kind[v] == DS_VERTEX_NIC && t->scratch_prev[v] >= 0 &&
         t->vertex_node[t->links[t->scratch_prev[v]].src] == t->vertex_node[v];
}

/* Marks w reached by link l; with a target, whether w's link into it is
 * the target's (the search may stop). */
static int mark(struct ds_topo *t, int32_t w, int32_t l, int32_t to, uint32_t stamp,
                int32_t *tail) {
  t->scratch_seen[w] = stamp;
  t->scratch_prev[w] = l;
  if (w == to) return 1;
  if (to >= 0 && t->scratch_inn[w] == stamp && t->vertex_kind[w] != DS_VERTEX_GPU &&
      !(nic_outbound(t, w) && t->vertex_node[to] == t->vertex_node[w])) {
    t->scratch_seen[to] = stamp;
    t->scratch_prev[to] = t->scratch_inn_link[w];
    return 1;
  }
  if (tail) t->scratch_queue[(*tail)++] = w;
  return 0;
}

/* Expands v (taken out of the queue, or out of a hub's entry): 1 once the
 * target is reached. */
static int expand(struct ds_topo *t, int32_t v, int32_t from, int32_t to, uint32_t stamp,
                  int32_t *tail) {
  /* GPUs do not forward traffic (a route only starts or ends at one). */
  if (v != from && t->vertex_kind[v] == DS_VERTEX_GPU) return 0;
  /* A NIC entered from inside its node (from a GPU, or the PCIe switch in
   * front of it) leads only into the fabric, never back into the node. */
  int out = nic_outbound(t, v);
  if (t->out_first[v + 1] - t->out_first[v] > t->hub_degree) {
    t->scratch_hub[v] = stamp;
    t->scratch_hub_out[v] = (uint8_t)out;
    if (to >= 0) {
      /* The target, or the first of its in-neighbours v reaches and that
       * may lead into it: v's entry would mark it before anything else
       * that could. */
      int32_t best = -1, best_in = -1;
      for (int32_t i = t->in_first[to]; i < t->in_first[to + 1]; i++) {
        int32_t lu = t->in_links[i], u = t->links[lu].src, lv = -1;
        if (u == v) {
          if (!hub_leads(t, v, to, stamp) || t->scratch_seen[to] == stamp) continue;
          t->scratch_seen[to] = stamp;
          t->scratch_prev[to] = lu;
          return 1;
        }
        if (t->scratch_seen[u] == stamp || t->vertex_kind[u] == DS_VERTEX_GPU ||
            !hub_leads(t, v, u, stamp) || pending(t, u, v, stamp))
          continue;
        for (int32_t k = t->hub_in_first[u]; k < t->hub_in_first[u + 1] && lv < 0; k++)
          if (t->links[t->hub_in[k]].src == v) lv = t->hub_in[k];
        if (lv < 0) continue;
        /* u entered from v: a NIC from inside its node cannot go back in */
        if (t->vertex_kind[u] == DS_VERTEX_NIC &&
            t->vertex_node[v] == t->vertex_node[u] && t->vertex_node[to] == t->vertex_node[u])
          continue;
        if (best < 0 || lv < best) best = lv, best_in = lu;
      }
      /* v's links into u come before its link into the target only if u's
       * link id is smaller; the target itself was handled above. */
      if (best >= 0) {
        int32_t u = t->links[best].dst;
        t->scratch_seen[u] = stamp;
        t->scratch_prev[u] = best;
        t->scratch_seen[to] = stamp;
        t->scratch_prev[to] = best_in;
        return 1;
      }
    }
    t->scratch_queue[(*tail)++] = -1 - v;
    return 0;
  }
  for (int32_t i = t->out_first[v]; i < t->out_first[v + 1]; i++) {
    int32_t l = t->out_links[i], w = t->links[l].dst;
    if (t->scratch_seen[w] == stamp) continue;
    if (out && t->vertex_node[w] == t->vertex_node[v]) continue;
    if (t->hub_in_first[w] < t->hub_in_first[w + 1] && pending(t, w, -1, stamp)) continue;
    if (mark(t, w, l, to, stamp, tail)) return 1;
  }
  return 0;
}

uint32_t ds__topo_search(struct ds_topo *t, int32_t from, int32_t to) {
  uint32_t stamp = ++t->scratch_stamp;
  int32_t head = 0, tail = 0;
  t->scratch_seen[from] = stamp;
  t->scratch_prev[from] = -1;
  if (to >= 0)
    for (int32_t i = t->in_first[to]; i < t->in_first[to + 1]; i++) {
      int32_t u = t->links[t->in_links[i]].src;
      t->scratch_inn[u] = stamp;
      t->scratch_inn_link[u] = t->in_links[i];
    }
  if (to >= 0 && t->scratch_inn[from] == stamp) {
    /* from's own link reaches the target as from is expanded first: the
     * rule below (the first vertex marked with a link into the target)
     * holds for the vertices from reaches, not for from */
    t->scratch_seen[to] = stamp;
    t->scratch_prev[to] = t->scratch_inn_link[from];
    return stamp;
  }
  t->scratch_queue[tail++] = from;
  while (head < tail) {
    int32_t q = t->scratch_queue[head++];
    if (q >= 0) {
      if (expand(t, q, from, to, stamp, &tail)) break;
      continue;
    }
    /* A hub's entry: the vertices it reaches that nothing reached before,
     * in link order, each expanded as the plain search would take it out. */
    int32_t h = -1 - q, done = 0;
    for (int32_t i = t->out_first[h]; i < t->out_first[h + 1] && !done; i++) {
      int32_t l = t->out_links[i], w = t->links[l].dst;
      if (t->scratch_seen[w] == stamp || !hub_leads(t, h, w, stamp)) continue;
      if (mark(t, w, l, to, stamp, NULL)) done = 1;
      else done = expand(t, w, from, to, stamp, &tail);
    }
    if (done) break;
  }
  return stamp;
}

/* Routes of up to ROUTE_CACHE_LINKS links are cached, 64 slots per GPU
 * (a power of two, at most 2^20 slots of 68 bytes): the collectives of one
 * run ask for the same GPU pairs again and again (a 1024-GPU tree sweep
 * spent 79 % of its time in route searches; its trees and rails use about
 * 40 routes per GPU). A longer route is searched every time. */
#define ROUTE_CACHE_PER_GPU 64
#define ROUTE_CACHE_MAX_SLOTS (1u << 20)
#define ROUTE_CACHE_LINKS 14

struct ds_route_cache_entry {
  int32_t src, dst; /* src == dst (calloc's zeros): empty; no route has src == dst */
  int32_t n;
  int32_t links[ROUTE_CACHE_LINKS];
};

static struct ds_route_cache_entry *cache_slot(struct ds_topo *t, int32_t src, int32_t dst) {
  if (!t->route_cache) {
    uint32_t slots = 1;
    while (slots < ROUTE_CACHE_MAX_SLOTS && slots < (uint32_t)t->n_gpus * ROUTE_CACHE_PER_GPU)
      slots <<= 1;
    /* calloc: zeroed pages cost no memory until a route is cached in them,
     * so a small run on a large topology stays small (issue #14) */
    t->route_cache = calloc(slots, sizeof *t->route_cache);
    if (!t->route_cache) return NULL;
    t->route_cache_slots = slots;
  }
  uint32_t h = ((uint32_t)src * 2654435761u) ^ ((uint32_t)dst * 2246822519u);
  return &t->route_cache[(h ^ (h >> 16)) & (t->route_cache_slots - 1)];
}

ds_status ds_topo_route(struct ds_topo *t, int32_t src, int32_t dst,
                        int32_t *links, int32_t cap, int32_t *n_links,
                        struct ds_err *err) {
  if (src < 0 || dst < 0 || src >= t->n_gpus || dst >= t->n_gpus || src == dst)
    return ds_err_set(err, DS_EINTERNAL, "route: bad GPU pair %d -> %d", src, dst);
  struct ds_route_cache_entry *slot = cache_slot(t, src, dst);
  if (slot && slot->src == src && slot->dst == dst) {
    if (slot->n > cap)
      return ds_err_set(err, DS_EINTERNAL, "route: %d links exceed buffer of %d", slot->n,
                        cap);
    memcpy(links, slot->links, (size_t)slot->n * sizeof *links);
    *n_links = slot->n;
    return DS_OK;
  }
  int32_t from = t->gpu_vertex[src], to = t->gpu_vertex[dst];
  uint32_t stamp = ds__topo_search(t, from, to);
  if (t->scratch_seen[to] != stamp)
    return ds_err_set(err, DS_EINPUT, "%s: GPU %d cannot reach GPU %d", t->path,
                      src, dst);
  int32_t n = 0;
  for (int32_t v = to; v != from; v = t->links[t->scratch_prev[v]].src) n++;
  if (n > cap)
    return ds_err_set(err, DS_EINTERNAL, "route: %d links exceed buffer of %d", n, cap);
  int32_t i = n;
  for (int32_t v = to; v != from; v = t->links[t->scratch_prev[v]].src)
    links[--i] = t->scratch_prev[v];
  *n_links = n;
  if (slot && n <= ROUTE_CACHE_LINKS) {
    *slot = (struct ds_route_cache_entry){.src = src, .dst = dst, .n = n};
    memcpy(slot->links, links, (size_t)n * sizeof *links);
  }
  return DS_OK;
}
