/*
 * Ring all-reduce, per-flow and aggregated (see coll.h).
 *
 * Per-flow state per ring position i: sends started and finished, chunks
 * received. Sends leave in order s = k*C + c over T = 2(N-1)*C sends; send
 * s needs receipt of s - C (the same chunk one step earlier) when s >= C.
 * A rank is done when it has received T chunks and finished T sends. The
 * reduction arithmetic is not charged: it runs at HBM speed, far above any
 * link, and NCCL fuses it with the copy.
 *
 * Symmetric (ds__coll_ring_fold_symmetric): where every hop crosses links
 * of its own, alike hop for hop, and every member enters at once with
 * nothing else on the net, every flow is alone on its links from start to
 * end, so member i's k-th send starts, moves at min(bottleneck, cap) and
 * is delivered exactly when member 0's does. Only member 0's flows then
 * run, and its counters stand for every member's (its predecessor's sends
 * are its receipts): 2(N-1)C flows instead of 2(N-1)CN, the same times.
 */
#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


struct ring_coll {
  struct ds_coll base; /* first: see coll_impl.h */
  const struct ds_ring *ring;
  int has_proto;
  struct ds_coll_proto proto;
  double *hop_lat_ns;    /* [n] per-step latency of each hop (proto only) */
  double path_lat_ns;    /* critical path of hop_lat_ns (proto only) */
  double agg_lat_ns;     /* plain aggregate: ds_ring_steps_ns less the pacing */
  uint32_t *chan_mult;   /* [max_hop_links] all C: a hop's C channels */
  uint32_t *agg_mult;    /* [n_agg] ring->agg_mult times C */
  struct ds_net *net;
  enum ds_coll_model model;
  int32_t chunks;
  int32_t steps;       /* 2(N-1) all-reduce, N-1 all-gather/reduce-scatter */
  int32_t total_sends; /* steps * chunks */
  double chunk_bytes;
  double bytes;
  uint64_t tag_base;
  ds_coll_done_fn on_done;
  void *owner;
  int32_t n_entered;
  int symmetric; /* per flow: member 0 runs for all (see the top) */
  struct ds__coll_member *members;
};

static int cmp_int32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Latency of 2(N-1) consecutive hops, the largest such sum:
 * 2 * sum - min(lat[i] + lat[i+1]); N = 2: both hops once each. */
static double path_lat(const double *lat, int32_t n) {
  if (n < 2) return 0;
  double sum = 0, min_pair = -1;
  for (int32_t i = 0; i < n; i++) {
    double pair = lat[i] + lat[(i + 1) % n];
    sum += lat[i];
    if (min_pair < 0 || pair < min_pair) min_pair = pair;
  }
  return 2 * sum - min_pair;
}

/* Latency of `steps` consecutive hops, the largest such sum (steps < n:
 * a sliding window; 2(N-1) steps use path_lat above, as before). */
static double window_lat(const double *lat, int32_t n, int32_t steps) {
  if (steps == 2 * (n - 1)) return path_lat(lat, n);
  if (steps <= 0 || n < 2) return 0;
  double sum = 0;
  for (int32_t k = 0; k < steps; k++) sum += lat[k % n];
  double best = sum;
  for (int32_t i = 1; i < n; i++) {
    sum += lat[(i + steps - 1) % n] - lat[i - 1];
    if (sum > best) best = sum;
  }
  return best;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ds_ring_steps_ns (coll.h) on hops of data time d[i], latency l[i] and
 * pace p[i] >= d[i] (the time a send waiting on hop i takes: d[i] for a
 * ring alone; with rails, the step at the hop's share among all rails,
 * which paces the aggregated rails): a run W scores sum_W (d + l) +
 * (steps - |W|) * max_W p. For each value m of p, the runs with no p above
 * m and some p equal to m score sum_W (d + l - m) + steps * m, which is
 * their time exactly (their pacing hop is m): a largest sum over runs of at
 * most `steps` hops that hold a hop of m, found with the prefix sums P over
 * the hops unrolled (run [s, e) starting at s < n) and a sliding minimum of
 * P[s] over the starts allowed, s in [max(e - steps, last hop above m + 1),
 * min(n - 1, last hop of m)], both ends only rising with e: O(n + steps)
 * per distinct p, one or two on the shipped topologies (NVLink and network
 * hops); at least steps * p[i] + l[i] for every hop i. No score rises
 * when a d, l or p falls, so a faster link never makes it longer. Out of
 * memory: the chain of `steps` latencies plus steps * p_slow, the upper
 * bound the aggregate charged before. m_vals[0..n_m) are the distinct
 * values of p (the caller's, see ring_steps); the answer is the largest
 * score over them, so their order does not matter. */
static double steps_time(const double *d, const double *l, const double *p, int32_t n,
                         int32_t steps, const double *m_vals, int32_t n_m) {
  if (n < 2 || steps < 1) return 0;
  int32_t u = n + steps - 1; /* hops unrolled: runs [s, e), s < n, e <= u */
  double *pre = malloc(((size_t)u + 1) * sizeof *pre);
  int32_t *dq = malloc(((size_t)u + 1) * sizeof *dq);
  double best = 0, p_max = 0;
  for (int32_t i = 0; i < n; i++) {
    if (p[i] > p_max) p_max = p[i];
    /* every send on hop i at its pace, then its latency: the rails' links
     * carry all their bytes at the shares at best (no run above may end
     * below that); where p = d the run {i} scores this already */
    if (steps * p[i] + l[i] > best) best = steps * p[i] + l[i];
  }
  if (!pre || !dq) {
    free(pre);
    free(dq);
    return window_lat(l, n, steps) + steps * p_max;
  }
  for (int32_t v = 0; v < n_m; v++) {
    double m = m_vals[v];
    int32_t last_wall = -1, last_mark = -1, head = 0, tail = 0, next_s = 0;
    pre[0] = 0;
    /* h = (e - 1) % n, kept by wrapping rather than a division a hop */
    for (int32_t e = 1, h = 0; e <= u; e++, h = h + 1 < n ? h + 1 : 0) {
      int32_t x = e - 1;
      if (p[h] > m) last_wall = x;
      if (p[h] == m) last_mark = x;
      pre[e] = pre[x] + d[h] + l[h] - m;
      int32_t hi = last_mark < n - 1 ? last_mark : n - 1;
      int32_t lo = e - steps > last_wall + 1 ? e - steps : last_wall + 1;
      for (; next_s <= hi; next_s++) {
        while (tail > head && pre[dq[tail - 1]] >= pre[next_s]) tail--;
        dq[tail++] = next_s;
      }
      while (tail > head && dq[head] < lo) head++;
      if (tail > head && lo <= hi) {
        double t = pre[e] - pre[dq[head]] + steps * m;
        if (t > best) best = t;
      }
    }
  }
  free(pre);
  free(dq);
  return best;
}

static int same_double(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

/* Paces a look through those kept finds: a ring's hops are of one or two
 * kinds (NVLink and network hops on the shipped topologies); more, and
 * they are sorted instead. */
#define PACES_LOOKED_UP 8

/* The distinct values of p[0 .. n) into vals (room for n), in any order
 * (steps_time takes the largest score over them); their count. Sorting a
 * rail's 512 paces for its two values cost more than the scans
 * (bench/README.md, 2026-11-29 "the rails' step time"). */
static int32_t distinct_paces(const double *p, int32_t n, double *vals) {
  int32_t n_v = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t v = 0;
    while (v < n_v && !(vals[v] == p[i])) v++;
    if (v < n_v) continue;
    if (n_v == PACES_LOOKED_UP) {
      memcpy(vals, p, (size_t)n * sizeof *vals);
      qsort(vals, (size_t)n, sizeof *vals, cmp_double);
      n_v = 0;
      for (int32_t w = 0; w < n; w++)
        if (w == 0 || !(vals[w] == vals[n_v - 1])) vals[n_v++] = vals[w];
      return n_v;
    }
    vals[n_v++] = p[i];
  }
  return n_v;
}

/* steps_time on ring r with step_bytes a step, each hop moving at its
 * hop_share_bw; rails_paced: a send waiting on a hop takes the step at its
 * hop_rails_bw where r is a rail (the aggregated rails' pace), else at
 * hop_share_bw (the ring alone). *pace_ns (may be NULL) gets steps *
 * p_slow, the part the slowest pace charges. */
static double ring_steps(const struct ds_ring *r, int32_t steps, double step_bytes,
                         int rails_paced, double *pace_ns) {
  if (pace_ns) *pace_ns = 0;
  if (r->n < 2 || steps < 1) return 0;
  double *d = malloc(3 * (size_t)r->n * sizeof *d), p_max = 0;
  const double *bw = r->hop_share_bw ? r->hop_share_bw : r->hop_bw;
  const double *pace_bw = rails_paced && r->hop_rails_bw ? r->hop_rails_bw : bw;
  if (!d) return r->path_lat_ns + steps * step_bytes / r->min_bw * 1e9;
  double *p = d + r->n, *m_vals = p + r->n;
  for (int32_t i = 0; i < r->n; i++) {
    d[i] = step_bytes / bw[i] * 1e9;
    p[i] = step_bytes / pace_bw[i] * 1e9;
    if (p[i] < d[i]) p[i] = d[i];
    if (p[i] > p_max) p_max = p[i];
  }
  int32_t n_m = distinct_paces(p, r->n, m_vals);
  double t = steps_time(d, r->hop_lat_ns, p, r->n, steps, m_vals, n_m);
  free(d);
  if (pace_ns) *pace_ns = steps * p_max;
  return t;
}

double ds_ring_steps_ns(const struct ds_ring *r, int32_t steps, double step_bytes) {
  return ring_steps(r, steps, step_bytes, 0, NULL);
}

static int same_doubles(const double *a, const double *b, int32_t n) {
  if (!a || !b) return a == b;
  return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

int ds__ring_steps_alike(const struct ds_ring *a, const struct ds_ring *b) {
  if (a == b) return 1;
  return a->n == b->n && same_double(a->path_lat_ns, b->path_lat_ns) &&
         same_double(a->min_bw, b->min_bw) &&
         same_doubles(a->hop_share_bw ? a->hop_share_bw : a->hop_bw,
                      b->hop_share_bw ? b->hop_share_bw : b->hop_bw, a->n) &&
         same_doubles(a->hop_rails_bw, b->hop_rails_bw, a->n) &&
         same_doubles(a->hop_lat_ns, b->hop_lat_ns, a->n);
}

const char *ds_proto_name(enum ds_proto p) {
  switch (p) {
  case DS_PROTO_LL: return "LL";
  case DS_PROTO_LL128: return "LL128";
  case DS_PROTO_SIMPLE: return "Simple";
  default: return "none";
  }
}

ds_status ds_proto_parse(const char *s, enum ds_proto *out) {
  for (int p = 0; p < DS_PROTO_COUNT; p++)
    if (strcasecmp(s, ds_proto_name((enum ds_proto)p)) == 0) {
      *out = (enum ds_proto)p;
      return DS_OK;
    }
  return DS_EUSAGE;
}

void ds_ring_algo_name(enum ds_proto p, char out[DS_RING_ALGO_MAX]) {
  if (p >= DS_PROTO_COUNT) snprintf(out, DS_RING_ALGO_MAX, "ring");
  else snprintf(out, DS_RING_ALGO_MAX, "ring/%s", ds_proto_name(p));
}

ds_status ds_ring_algo_parse(const char *algo, enum ds_proto *out) {
  *out = DS_PROTO_COUNT;
  if (algo[0] == '\0' || strcmp(algo, "ring") == 0) return DS_OK;
  if (strncmp(algo, "ring/", 5) == 0 && ds_proto_parse(algo + 5, out) == DS_OK) return DS_OK;
  return DS_EINPUT;
}

enum ds_hop_class ds_link_hop_class(const struct ds_link *l) {
  if (l->kind && strcmp(l->kind, "ib") == 0) return DS_HOP_NET;
  if (l->kind && (strcmp(l->kind, "pcie") == 0 || strcmp(l->kind, "qpi") == 0))
    return DS_HOP_PCI;
  return DS_HOP_NVLINK;
}

enum ds_hop_class ds_route_hop_class(const struct ds_topo *topo, const int32_t *links,
                                     int32_t len) {
  enum ds_hop_class cls = DS_HOP_NVLINK;
  for (int32_t k = 0; k < len; k++) {
    enum ds_hop_class lc = ds_link_hop_class(&topo->links[links[k]]);
    if (lc == DS_HOP_NET) return DS_HOP_NET;
    if (lc == DS_HOP_PCI) cls = DS_HOP_PCI;
  }
  return cls;
}

ds_status ds_ring_build(struct ds_topo *topo, const int32_t *gpus, int32_t n,
                        struct ds_ring *r, struct ds_err *err) {
  ds_status st = DS_ENOMEM;
  int32_t route[DS_TOPO_MAX_ROUTE];
  size_t cap = (size_t)n * 4 + 4, used = 0;
  memset(r, 0, sizeof *r);
  r->n = n;
  r->gpus = malloc((size_t)n * sizeof *r->gpus);
  r->hop_first = malloc(((size_t)n + 1) * sizeof *r->hop_first);
  r->hop_links = malloc(cap * sizeof *r->hop_links);
  r->hop_lat_ns = calloc((size_t)n, sizeof *r->hop_lat_ns);
  r->hop_bw = calloc((size_t)n, sizeof *r->hop_bw);
  r->hop_class = calloc((size_t)n, sizeof *r->hop_class);
  r->hop_share_bw = calloc((size_t)n, sizeof *r->hop_share_bw);
  if (!r->gpus || !r->hop_first || !r->hop_links || !r->hop_lat_ns || !r->hop_bw ||
      !r->hop_class || !r->hop_share_bw)
    goto fail;
  memcpy(r->gpus, gpus, (size_t)n * sizeof *gpus);
  r->min_bw = 0;
  for (int32_t i = 0; i < n; i++) {
    r->hop_first[i] = (int32_t)used;
    if (n == 1) break;
    int32_t len;
    DS_CHECK_GOTO(ds_topo_route(topo, gpus[i], gpus[(i + 1) % n], route,
                                DS_TOPO_MAX_ROUTE, &len, err), st, fail);
    if (used + (size_t)len > cap) {
      cap = 2 * cap + (size_t)len;
      int32_t *p = realloc(r->hop_links, cap * sizeof *p);
      if (!p) { st = DS_ENOMEM; goto fail; }
      r->hop_links = p;
    }
    double bw = 0;
    for (int32_t k = 0; k < len; k++) {
      const struct ds_link *l = &topo->links[route[k]];
      r->hop_links[used++] = route[k];
      r->hop_lat_ns[i] += l->lat_ns;
      if (k == 0 || l->bw_bytes_per_s < bw) bw = l->bw_bytes_per_s;
    }
    r->hop_class[i] = (uint8_t)ds_route_hop_class(topo, route, len);
    if (len > r->max_hop_links) r->max_hop_links = len;
    r->hop_bw[i] = bw;
    if (r->hop_lat_ns[i] > r->max_lat_ns) r->max_lat_ns = r->hop_lat_ns[i];
    if (i == 0 || bw < r->min_bw) r->min_bw = bw;
  }
  r->hop_first[n] = (int32_t)used;
  if (n == 1) r->hop_first[1] = 0;
  r->path_lat_ns = path_lat(r->hop_lat_ns, n);

  /* Aggregate view: distinct links with the number of hops crossing each. */
  int32_t *sorted = malloc((used + 1) * sizeof *sorted);
  r->agg_links = malloc((used + 1) * sizeof *r->agg_links);
  r->agg_mult = malloc((used + 1) * sizeof *r->agg_mult);
  if (!sorted || !r->agg_links || !r->agg_mult) {
    free(sorted);
    st = DS_ENOMEM;
    goto fail;
  }
  memcpy(sorted, r->hop_links, used * sizeof *sorted);
  qsort(sorted, used, sizeof *sorted, cmp_int32);
  for (size_t i = 0; i < used; i++) {
    if (r->n_agg > 0 && r->agg_links[r->n_agg - 1] == sorted[i]) {
      r->agg_mult[r->n_agg - 1]++;
    } else {
      r->agg_links[r->n_agg] = sorted[i];
      r->agg_mult[r->n_agg++] = 1;
    }
  }
  free(sorted);
  /* each hop's share: its links' bandwidth over the hops crossing them */
  for (int32_t i = 0; i < n && n > 1; i++) {
    double share = 0;
    for (int32_t k = r->hop_first[i]; k < r->hop_first[i + 1]; k++) {
      int32_t lo = 0, hi = r->n_agg - 1, l = r->hop_links[k];
      while (lo < hi) { /* agg_links is sorted and holds l */
        int32_t mid = (lo + hi) / 2;
        if (r->agg_links[mid] < l) lo = mid + 1;
        else hi = mid;
      }
      double b = topo->links[l].bw_bytes_per_s / r->agg_mult[lo];
      if (k == r->hop_first[i] || b < share) share = b;
    }
    r->hop_share_bw[i] = share;
  }
  return DS_OK;
fail:
  if (st == DS_ENOMEM) ds_err_set(err, st, "ring of %d GPUs: out of memory", n);
  ds_ring_release(r);
  return st;
}

void ds_ring_release(struct ds_ring *r) {
  if (!r) return;
  free(r->gpus);
  free(r->hop_first);
  free(r->hop_links);
  free(r->hop_mult);
  free(r->hop_lat_ns);
  free(r->hop_bw);
  free(r->hop_share_bw);
  free(r->hop_rails_bw);
  free(r->agg_links);
  free(r->agg_mult);
  free(r->hop_class);
  for (int32_t k = 0; k < r->n_rails; k++) ds_ring_release(&r->rails[k]);
  free(r->rails);
  free(r->rail_member);
  free(r->rail_pos);
  ds__coll_tree_plans_free(r->tree_plans);
  if (r->rails_one) ds_ring_release(r->rails_one);
  free(r->rails_one);
  if (r->chan) ds_ring_release(r->chan);
  free(r->chan);
  memset(r, 0, sizeof *r);
}

const struct ds_ring *ds_ring_nccl(const struct ds_ring *r) { return r->chan ? r->chan : r; }

double ds_ring_busbw(const struct ds_ring *r) {
  if (r->n_rails > 0) return r->rails_busbw;
  if (r->n < 2 || !r->hop_share_bw) return r->min_bw;
  double bw = r->hop_share_bw[0]; /* min over its links of bw / hops crossing it */
  for (int32_t i = 1; i < r->n; i++)
    if (r->hop_share_bw[i] < bw) bw = r->hop_share_bw[i];
  return bw;
}

double ds_ring_path_lat_ns(const struct ds_ring *r) {
  if (r->n_rails == 0) return r->path_lat_ns;
  double lat = 0;
  for (int32_t k = 0; k < r->n_rails; k++)
    if (r->rails[k].path_lat_ns > lat) lat = r->rails[k].path_lat_ns;
  return lat;
}

double ds_ring_allreduce_ns(const struct ds_ring *r, double bytes) {
  if (r->n < 2) return 0;
  int32_t steps = 2 * (r->n - 1);
  if (r->n_rails == 0) return ring_steps(r, steps, bytes / r->n, 0, NULL);
  /* Each rail's latency is what its own time leaves after the rails'
   * common pace, not after the rail's own: a rail paced below the common
   * pace (it crosses no link as shared as the slowest) would otherwise
   * charge the gap between its pace and the common one as latency, and a
   * faster link on it, lowering its pace by more than its time, would
   * slow the whole (1 MiB 198.8 -> 220.4 us in tests/test_ring_rails.c).
   * Rails that cross the slowest link, as on every symmetric fabric,
   * have both paces equal and keep the form they had. */
  double pace = (double)steps * bytes / r->n / ds_ring_busbw(r) * 1e9;
  double lat = 0, t = 0;
  for (int32_t k = 0; k < r->n_rails; k++) {
    /* a rail alike the one before takes the same time (often all are) */
    if (k == 0 || !ds__ring_steps_alike(&r->rails[k], &r->rails[k - 1]))
      t = ring_steps(&r->rails[k], steps, bytes / r->n_rails / r->n, 1, NULL);
    if (t - pace > lat) lat = t - pace;
  }
  return lat + pace;
}

/* Per-step protocol latency on the critical path of one ring. */
static double proto_path_lat(const struct ds_ring *r, const struct ds_coll_proto *p) {
  double lat_sum = 0, min_pair = -1;
  for (int32_t i = 0; i < r->n; i++) {
    double a = p->hop_lat_ns[r->hop_class[i]];
    double b = p->hop_lat_ns[r->hop_class[(i + 1) % r->n]];
    lat_sum += a;
    if (min_pair < 0 || a + b < min_pair) min_pair = a + b;
  }
  return 2 * lat_sum - min_pair;
}

int32_t ds__ring_rail_channels(int32_t channels, int32_t n_rails) {
  int32_t c = n_rails > 1 ? channels / n_rails : channels;
  return c > 1 ? c : 1;
}

double ds_ring_allreduce_proto_ns(const struct ds_ring *ring,
                                  const struct ds_coll_proto *p, double bytes) {
  const struct ds_ring *r = ds_ring_nccl(ring);
  if (r->n < 2) return 0;
  double lat = 0;
  if (r->n_rails == 0) lat = proto_path_lat(r, p);
  for (int32_t k = 0; k < r->n_rails; k++) {
    double l = proto_path_lat(&r->rails[k], p);
    if (l > lat) lat = l;
  }
  int32_t rails = r->n_rails > 1 ? r->n_rails : 1;
  double bw = rails * ds__ring_rail_channels(p->channels, rails) * p->chan_cap_bytes_per_s;
  if (ds_ring_busbw(r) < bw) bw = ds_ring_busbw(r);
  double steps = 2.0 * (r->n - 1);
  return p->start_lat_ns + lat + steps * bytes * p->wire_factor / r->n / bw * 1e9;
}

ds_status ds_coll_allreduce_new(const struct ds_ring *ring, struct ds_net *net,
                                enum ds_coll_model model, int32_t chunks,
                                double bytes, uint64_t tag_base,
                                ds_coll_done_fn on_done, void *owner,
                                struct ds_coll **out) {
  return ds_coll_allreduce_new_proto(ring, net, model, chunks, bytes, NULL,
                                     tag_base, on_done, owner, out);
}

static ds_status setup_proto(struct ring_coll *c, const struct ds_coll_proto *p) {
  const struct ds_ring *r = c->ring;
  if (p->channels < 1 || !(p->wire_factor >= 1) || !(p->chan_cap_bytes_per_s > 0) ||
      !(p->start_lat_ns >= 0))
    return DS_EINTERNAL;
  c->has_proto = 1;
  c->proto = *p;
  c->hop_lat_ns = malloc((size_t)r->n * sizeof *c->hop_lat_ns);
  /* with hop_mult, one entry per hop link (hop i's at hop_first[i]) */
  size_t n_mult = r->hop_mult ? (size_t)r->hop_first[r->n] : (size_t)r->max_hop_links;
  c->chan_mult = malloc((n_mult + 1) * sizeof *c->chan_mult);
  c->agg_mult = malloc(((size_t)r->n_agg + 1) * sizeof *c->agg_mult);
  if (!c->hop_lat_ns || !c->chan_mult || !c->agg_mult) return DS_ENOMEM;
  for (int32_t i = 0; i < r->n; i++) {
    double h = p->hop_lat_ns[r->hop_class[i]];
    if (!(h >= 0)) return DS_EINTERNAL;
    c->hop_lat_ns[i] = h;
  }
  /* the aggregate's latency: `steps` consecutive hops (N-1 for the ring
   * halves, whose protocols came later; 2(N-1) is path_lat as before) */
  c->path_lat_ns = window_lat(c->hop_lat_ns, r->n, c->steps);
  for (size_t k = 0; k < n_mult; k++)
    c->chan_mult[k] = (r->hop_mult ? r->hop_mult[k] : 1) * (uint32_t)p->channels;
  for (int32_t k = 0; k < r->n_agg; k++)
    c->agg_mult[k] = r->agg_mult[k] * (uint32_t)p->channels;
  /* Per channel and chunk: its share of the payload, inflated on the wire. */
  c->chunk_bytes *= p->wire_factor / p->channels;
  return DS_OK;
}

static const struct ds__coll_vtbl ring_vtbl;

ds_status ds_coll_allreduce_new_proto(const struct ds_ring *ring,
                                      struct ds_net *net,
                                      enum ds_coll_model model, int32_t chunks,
                                      double bytes,
                                      const struct ds_coll_proto *proto,
                                      uint64_t tag_base,
                                      ds_coll_done_fn on_done, void *owner,
                                      struct ds_coll **out) {
  return ds__coll_ring_new(ring, net, model, chunks, 2 * (ring->n - 1), bytes, proto,
                           tag_base, on_done, owner, out);
}

ds_status ds__coll_ring_new(const struct ds_ring *ring, struct ds_net *net,
                            enum ds_coll_model model, int32_t chunks,
                            int32_t steps, double bytes,
                            const struct ds_coll_proto *proto, uint64_t tag_base,
                            ds_coll_done_fn on_done, void *owner,
                            struct ds_coll **out) {
  return ds__coll_ring_new_like(ring, net, model, chunks, steps, bytes, proto, tag_base, on_done,
                                owner, NULL, out);
}

ds_status ds__coll_ring_new_like(const struct ds_ring *ring, struct ds_net *net,
                                 enum ds_coll_model model, int32_t chunks,
                                 int32_t steps, double bytes,
                                 const struct ds_coll_proto *proto, uint64_t tag_base,
                                 ds_coll_done_fn on_done, void *owner,
                                 const struct ds_coll *like, struct ds_coll **out) {
  if (chunks < 1 || !(bytes >= 0) || steps < 0) return DS_EINTERNAL;
  if (!proto) chunks = ds_coll_pieces_bound(chunks, bytes / ring->n);
  struct ring_coll *c = calloc(1, sizeof *c);
  if (!c) return DS_ENOMEM;
  c->members = calloc((size_t)ring->n, sizeof *c->members);
  if (!c->members) {
    free(c);
    return DS_ENOMEM;
  }
  c->base.vt = &ring_vtbl;
  c->ring = ring;
  c->net = net;
  c->model = model;
  c->chunks = chunks;
  c->steps = steps;
  c->total_sends = steps * chunks;
  if (model == DS_COLL_AGGREGATE && !proto) {
    /* the closed form (ds_ring_steps_ns, a rail paced at its share among
     * all rails) less the slowest pace, which the one flow's rate charges */
    const struct ring_coll *twin = (const struct ring_coll *)like;
    if (twin && like->vt == &ring_vtbl && twin->model == model && !twin->has_proto &&
        twin->steps == steps && same_double(twin->bytes, bytes) &&
        ds__ring_steps_alike(twin->ring, ring)) {
      c->agg_lat_ns = twin->agg_lat_ns;
    } else {
      double pace;
      c->agg_lat_ns = ring_steps(ring, steps, bytes / ring->n, 1, &pace);
      c->agg_lat_ns -= pace;
    }
  }
  c->chunk_bytes = bytes / ring->n / chunks;
  c->bytes = bytes;
  c->tag_base = tag_base;
  c->on_done = on_done;
  c->owner = owner;
  if (proto) {
    ds_status st = setup_proto(c, proto);
    if (st != DS_OK) {
      ds_coll_free(&c->base);
      return st;
    }
  }
  *out = &c->base;
  return DS_OK;
}

static void ring_destroy(struct ds_coll *base) {
  struct ring_coll *c = (struct ring_coll *)base;
  free(c->hop_lat_ns);
  free(c->chan_mult);
  free(c->agg_mult);
  free(c->members);
  free(c);
}

static void finish_member(struct ring_coll *c, int32_t i) {
  c->members[i].done = 1;
  c->on_done(c->owner, i);
}

/* Starts member i's next send if everything it needs is there. */
static ds_status try_send(struct ring_coll *c, int32_t i) {
  struct ds__coll_member *m = &c->members[i];
  int32_t succ = i + 1 == c->ring->n ? 0 : i + 1; /* (no division per send) */
  if (!m->entered || !c->members[succ].entered || m->in_flight) return DS_OK;
  int32_t s = m->sends_started;
  if (s >= c->total_sends) return DS_OK;
  if (s >= c->chunks && m->received < s - c->chunks + 1) return DS_OK;
  const struct ds_ring *r = c->ring;
  m->in_flight = 1;
  m->sends_started++;
  if (c->has_proto)
    return ds_net_flow_start_capped(
        c->net, r->hop_links + r->hop_first[i],
        c->chan_mult + (r->hop_mult ? r->hop_first[i] : 0),
        r->hop_first[i + 1] - r->hop_first[i], c->chunk_bytes,
        s == 0 ? c->proto.start_lat_ns : 0, c->hop_lat_ns[i],
        c->proto.chan_cap_bytes_per_s, c->tag_base | (uint64_t)i);
  return ds_net_flow_start(c->net, r->hop_links + r->hop_first[i],
                           r->hop_mult ? r->hop_mult + r->hop_first[i] : NULL,
                           r->hop_first[i + 1] - r->hop_first[i],
                           c->chunk_bytes, 0, r->hop_lat_ns[i],
                           c->tag_base | (uint64_t)i);
}

/* Symmetric: member 0 is done, and with it every member. */
static void finish_all(struct ring_coll *c) {
  for (int32_t k = 0; k < c->ring->n; k++) finish_member(c, k);
}

static void check_done(struct ring_coll *c, int32_t i) {
  struct ds__coll_member *m = &c->members[i];
  if (m->done || m->received != c->total_sends || m->sends_done != c->total_sends) return;
  if (c->symmetric) finish_all(c);
  else finish_member(c, i);
}

static ds_status ring_enter(struct ds_coll *base, int32_t i) {
  struct ring_coll *c = (struct ring_coll *)base;
  const struct ds_ring *r = c->ring;
  c->members[i].entered = 1;
  c->n_entered++;
  if (r->n == 1) {
    finish_member(c, i);
    return DS_OK;
  }
  if (c->model == DS_COLL_AGGREGATE) {
    if (c->n_entered < r->n) return DS_OK;
    double steps = c->steps;
    if (c->has_proto)
      return ds_net_flow_start_capped(
          c->net, r->agg_links, c->agg_mult, r->n_agg,
          steps * c->bytes * c->proto.wire_factor / r->n / c->proto.channels,
          c->proto.start_lat_ns + c->path_lat_ns, 0,
          c->proto.chan_cap_bytes_per_s, c->tag_base);
    return ds_net_flow_start(c->net, r->agg_links, r->agg_mult, r->n_agg,
                             steps * c->bytes / r->n, c->agg_lat_ns, 0,
                             c->tag_base);
  }
  if (c->symmetric) return c->n_entered == r->n ? try_send(c, 0) : DS_OK;
  DS_CHECK(try_send(c, i));
  return try_send(c, (i + r->n - 1) % r->n);
}

static ds_status ring_flow_sent(struct ds_coll *base, int32_t i) {
  struct ring_coll *c = (struct ring_coll *)base;
  if (c->model == DS_COLL_AGGREGATE) return DS_OK;
  c->members[i].in_flight = 0;
  c->members[i].sends_done++;
  DS_CHECK(try_send(c, i));
  check_done(c, i);
  return DS_OK;
}

static ds_status ring_flow_done(struct ds_coll *base, int32_t i) {
  struct ring_coll *c = (struct ring_coll *)base;
  const struct ds_ring *r = c->ring;
  if (c->model == DS_COLL_AGGREGATE) {
    for (int32_t k = 0; k < r->n; k++) finish_member(c, k);
    return DS_OK;
  }
  /* symmetric: member 0's successor receives as member 0 does */
  int32_t succ = c->symmetric ? i : i + 1 == r->n ? 0 : i + 1;
  c->members[succ].received++;
  DS_CHECK(try_send(c, succ));
  check_done(c, succ);
  return DS_OK;
}

int ds__ring_symmetric(const struct ds_topo *topo, const struct ds_ring *r) {
  int32_t n = r->n, len = n > 0 ? r->hop_first[1] - r->hop_first[0] : 0;
  if (n < 2 || r->n_rails > 0) return 0;
  uint8_t *seen = calloc((size_t)topo->n_links + 1, 1);
  if (!seen) return 0; /* out of memory: run every member, as before */
  int ok = 1;
  for (int32_t i = 0; i < n && ok; i++) {
    int32_t a = r->hop_first[i], b = r->hop_first[0];
    ok = r->hop_first[i + 1] - a == len && r->hop_lat_ns[i] == r->hop_lat_ns[0] &&
         r->hop_class[i] == r->hop_class[0];
    for (int32_t k = 0; k < len && ok; k++) {
      const struct ds_link *l = &topo->links[r->hop_links[a + k]];
      const struct ds_link *l0 = &topo->links[r->hop_links[b + k]];
      ok = !seen[r->hop_links[a + k]] && l->bw_bytes_per_s == l0->bw_bytes_per_s &&
           (!r->hop_mult || r->hop_mult[a + k] == r->hop_mult[b + k]);
      seen[r->hop_links[a + k]] = 1;
    }
  }
  free(seen);
  return ok;
}

int ds__coll_ring_fold_symmetric(struct ds_coll *base, const struct ds_topo *topo) {
  struct ring_coll *c = (struct ring_coll *)base;
  if (base->vt != &ring_vtbl || c->model != DS_COLL_FLOW || c->n_entered > 0) return 0;
  c->symmetric = ds__ring_symmetric(topo, c->ring);
  return c->symmetric;
}

/* Aggregated, the one flow's delivery finishes every member in one loop
 * (ring_flow_done); symmetric, member 0's end finishes every member in one
 * loop (finish_all). */
static int ring_together(const struct ds_coll *base) {
  const struct ring_coll *c = (const struct ring_coll *)base;
  return c->model == DS_COLL_AGGREGATE || c->symmetric;
}

static const struct ds__coll_vtbl ring_vtbl = {
    .enter = ring_enter,
    .flow_sent = ring_flow_sent,
    .flow_done = ring_flow_done,
    .destroy = ring_destroy,
    .together = ring_together,
};
