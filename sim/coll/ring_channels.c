/*
 * NCCL's ring channels on one node (ring_channels.h): the speed loop of
 * ncclTopoCompute around a packing of rings at each speed. Invariant: the
 * rings returned fit together, every directed link crossed by at most
 * floor(its NCCL bandwidth / speed) of their hops, and the search is a
 * pure function of the topology and the members (budgets count steps,
 * never time).
 */
#include "sim/coll/ring_channels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"

#define REL 1e-9
/* A link's units are fifths of the speed (NCCL's 6/5 is then whole): a
 * hop charges WEIGHT_ONE on each of its links, WEIGHT_INTEL_RC on the PCIe
 * links of a path through an Intel root complex (ds__ring_pci_overhead). */
#define WEIGHT_ONE 5
#define WEIGHT_INTEL_RC 6
/* Units above this are as good as unlimited (at most 32 rings, each
 * charging a link at most members x WEIGHT_INTEL_RC): clamped before the
 * cast, so that a huge capacity over speed cannot overflow int32_t. */
#define UNITS_MAX 1e9

/* A hop from member a to member b: its route's links, in NCCL's units. */
struct hop {
  int32_t first, len; /* links[first .. first + len) */
  int direct;         /* one GPU-to-GPU link */
  double gbps;        /* its bottleneck as NCCL rates it */
};

struct search {
  int32_t n;
  int32_t n_links;
  struct hop *hops;   /* [n*n] */
  int32_t *links;     /* the hops' links, concatenated */
  int32_t *weights;   /* [as links]: units the hop charges on that link per ring */
  double *cap;        /* [n_links]: NCCL's bandwidth of each link; < 0 unused */
  int32_t *next;      /* [n*(n-1)]: members after a, in the order tried */
  /* one packing (a speed and a level) */
  int level;          /* 0: direct links only; 1: routes too */
  int exhaustive;     /* 1: branch and bound; 0: greedy, ring by ring */
  int32_t *units;     /* [n_links]: rings each link still holds */
  int32_t *ring;      /* [MAXC * n]: the rings being built, member 0 first */
  int32_t *rank;      /* [MAXC * n]: the rank in next[] of each ring's choices */
  uint8_t *used;      /* [MAXC * n]: members each ring has visited */
  int32_t *best;      /* [MAXC * n]: the most rings found */
  int32_t best_count, bound;
  int64_t budget;
  int exhausted, stop;
};

/* The sum of the direct links from GPU vertex a to GPU vertex b (0: none). */
static double direct_bw(const struct ds_topo *t, int32_t a, int32_t b) {
  double bw = 0;
  for (int32_t k = t->out_first[a]; k < t->out_first[a + 1]; k++)
    if (t->links[t->out_links[k]].dst == b) bw += t->links[t->out_links[k]].bw_bytes_per_s;
  return bw;
}

/* ring_channels.h */
int ds__ring_has_direct_link(const struct ds_topo *t, const int32_t *gpus, int32_t n) {
  for (int32_t a = 0; a < n; a++)
    for (int32_t b = 0; b < n; b++)
      if (a != b && direct_bw(t, t->gpu_vertex[gpus[a]], t->gpu_vertex[gpus[b]]) > 0) return 1;
  return 0;
}

/* Whether GPU vertex a has an NVLink straight to GPU vertex b. */
static int nvlink_to(const struct ds_topo *t, int32_t a, int32_t b) {
  for (int32_t k = t->out_first[a]; k < t->out_first[a + 1]; k++) {
    const struct ds_link *l = &t->links[t->out_links[k]];
    if (l->dst == b && strcmp(l->kind, "nvlink") == 0) return 1;
  }
  return 0;
}

/* ring_channels.h */
int ds__ring_nvb_bridged(const struct ds_topo *t, const int32_t *gpus, int32_t n) {
  for (int32_t a = 0; a < n; a++)
    for (int32_t b = 0; b < n; b++) {
      int32_t va = t->gpu_vertex[gpus[a]], vb = t->gpu_vertex[gpus[b]];
      if (a == b || nvlink_to(t, va, vb)) continue;
      int bridged = 0;
      for (int32_t w = 0; w < n && !bridged; w++) {
        int32_t vw = t->gpu_vertex[gpus[w]];
        bridged = w != a && w != b && nvlink_to(t, va, vw) && nvlink_to(t, vw, vb);
      }
      if (!bridged) return 0;
    }
  return 1;
}

static int is_pcie(const struct ds_link *l) { return l->kind && strcmp(l->kind, "pcie") == 0; }

/* ring_channels.h */
int ds__ring_intel_root_complex(enum ds_cpu_vendor v) {
  return v == DS_CPU_VENDOR_INTEL || v == DS_CPU_VENDOR_MIXED;
}

/* ring_channels.h */
double ds__ring_pci_overhead(const struct ds_topo *t, const int32_t *route, int32_t len,
                             enum ds_hop_class cls) {
  if (!ds__ring_intel_root_complex(t->cpu_vendor) || cls != DS_HOP_PCI) return 1;
  int via_cpu = 0;
  for (int32_t k = 0; k < len; k++) {
    const struct ds_link *l = &t->links[route[k]];
    if (l->kind && strcmp(l->kind, "qpi") == 0) return 1; /* PATH_SYS */
    if (t->vertex_kind[l->dst] == DS_VERTEX_CPU) via_cpu = 1;
  }
  return via_cpu ? (double)WEIGHT_INTEL_RC / WEIGHT_ONE : 1;
}

/* ring_channels.h */
int ds_ring_channels_same(const struct ds_ring_channels *c) {
  for (int32_t r = 1; r < c->n_rings; r++)
    if (memcmp(c->orders + (size_t)r * c->n, c->orders, (size_t)c->n * sizeof *c->orders) != 0)
      return 0;
  return 1;
}

/* Charges (sign -1) or frees (+1) one ring's worth of hop a -> b; a charge
 * that overdraws a link is undone and fails (0). */
static int charge_hop(struct search *s, int32_t a, int32_t b, int sign) {
  const struct hop *h = &s->hops[a * s->n + b];
  if (sign < 0 && s->level == 0 && !h->direct) return 0;
  for (int32_t k = 0; k < h->len; k++) {
    int32_t l = s->links[h->first + k];
    s->units[l] += sign * s->weights[h->first + k];
    if (s->units[l] < 0) {
      for (int32_t j = 0; j <= k; j++)
        s->units[s->links[h->first + j]] -= sign * s->weights[h->first + j];
      return 0;
    }
  }
  return 1;
}

/* At most how many more rings fit: each ring leaves every member by one
 * hop, and hop a -> b is left at most as often as its fullest link allows
 * (its units over the hop's weight there). */
static int32_t rings_bound(const struct search *s) {
  int32_t best = DS_NCCL_SEARCH_MAX_CHANNELS;
  for (int32_t a = 0; a < s->n; a++) {
    int32_t sum = 0;
    for (int32_t b = 0; b < s->n && sum < best; b++) {
      const struct hop *h = &s->hops[a * s->n + b];
      if (a == b || (s->level == 0 && !h->direct)) continue;
      int32_t u = INT32_MAX;
      for (int32_t k = 0; k < h->len; k++) {
        int32_t fit = s->units[s->links[h->first + k]] / s->weights[h->first + k];
        if (fit < u) u = fit;
      }
      sum += u;
    }
    if (sum < best) best = sum;
  }
  return best;
}

/* Builds ring k (depth members placed), depth first, each hop charged as
 * it is taken; a closed ring is counted, then ring k + 1 is built on what
 * the links still hold. Rings come in the order the search meets them, so
 * ring k's choices are kept, rank by rank, no earlier than ring k-1's
 * while its prefix equals ring k-1's (`tight`): every multiset of rings is
 * met once. Greedy (not exhaustive): the first ring that fits is kept and
 * no other is tried in its place. */
static void build(struct search *s, int32_t k, int32_t depth, int tight) {
  if (s->budget <= 0) {
    s->exhausted = 1;
    return;
  }
  s->budget--;
  int32_t n = s->n, *ring = s->ring + (size_t)k * n, *rank = s->rank + (size_t)k * n;
  uint8_t *used = s->used + (size_t)k * n;
  int32_t last = ring[depth - 1];
  if (depth == n) {
    if (!charge_hop(s, last, ring[0], -1)) return;
    if (k + 1 > s->best_count) {
      s->best_count = k + 1;
      memcpy(s->best, s->ring, (size_t)(k + 1) * n * sizeof *s->ring);
    }
    if (s->best_count >= s->bound) {
      s->stop = 1;
    } else if (!s->exhaustive || k + 1 + rings_bound(s) > s->best_count) {
      memset(used + n, 0, (size_t)n);
      used[n] = 1;
      ring[n] = 0;
      if (!s->exhaustive) s->budget = DS_RING_CHANNELS_RING_BUDGET;
      build(s, k + 1, 1, 1);
      if (!s->exhaustive) s->stop = 1;
    }
    charge_hop(s, last, ring[0], +1);
    return;
  }
  for (int32_t i = 0; i < n - 1; i++) {
    if (tight && k > 0 && i < s->rank[(size_t)(k - 1) * n + depth]) continue;
    int32_t b = s->next[last * (n - 1) + i];
    if (used[b] || !charge_hop(s, last, b, -1)) continue;
    used[b] = 1;
    ring[depth] = b;
    rank[depth] = i;
    build(s, k, depth + 1, tight && k > 0 && i == s->rank[(size_t)(k - 1) * n + depth]);
    used[b] = 0;
    charge_hop(s, last, b, +1);
    if (s->stop || s->exhausted) return;
  }
}

/* Units of every link at `speed`, all free: fifths of the speed it holds. */
static void set_units(struct search *s, double speed) {
  for (int32_t l = 0; l < s->n_links; l++)
    s->units[l] = s->cap[l] < 0 ? 0
                                : (int32_t)floor(fmin(WEIGHT_ONE * s->cap[l] / speed * (1 + REL),
                                                      UNITS_MAX));
}

/* The most rings that fit at `speed` over level's hops (ring_channels.h):
 * left in s->best, their count returned. */
static int32_t pack_at(struct search *s, double speed, int level) {
  int32_t n = s->n;
  s->level = level;
  s->exhaustive = n <= DS_RING_CHANNELS_EXHAUSTIVE_MAX;
  set_units(s, speed);
  s->best_count = 0;
  s->stop = 0;
  s->exhausted = 0;
  s->bound = rings_bound(s);
  if (s->bound == 0) return 0;
  s->budget = s->exhaustive ? DS_RING_CHANNELS_BUDGET : DS_RING_CHANNELS_RING_BUDGET;
  memset(s->used, 0, (size_t)n);
  s->used[0] = 1;
  s->ring[0] = 0;
  build(s, 0, 1, 0);
  return s->best_count;
}

/* Hops, NCCL's link bandwidths, maxBw, totalBw and the order of next
 * members; *routed_pairs whether some pair has no direct link. */
static ds_status prepare(struct ds_topo *t, const int32_t *gpus, int32_t n,
                         enum ds_nccl_arch arch, struct search *s, struct ds_ring_channels *c,
                         int *routed_pairs, struct ds_err *err) {
  int32_t used = 0, route[DS_TOPO_MAX_ROUTE], len;
  struct ds_nccl_nvlink nvl = ds_nccl_nvlink_of(arch, &t->gpu);
  for (int32_t l = 0; l < t->n_links; l++) s->cap[l] = -1;
  *routed_pairs = 0;
  for (int32_t a = 0; a < n; a++)
    for (int32_t b = 0; b < n; b++) {
      struct hop *h = &s->hops[a * n + b];
      memset(h, 0, sizeof *h);
      if (a == b) continue;
      DS_CHECK(ds_topo_route(t, gpus[a], gpus[b], route, DS_TOPO_MAX_ROUTE, &len, err));
      enum ds_hop_class cls = ds_route_hop_class(t, route, len);
      h->first = used;
      h->len = len;
      h->direct = len == 1 && t->links[route[0]].dst == t->gpu_vertex[gpus[b]];
      h->gbps = INFINITY;
      int rc = ds__ring_pci_overhead(t, route, len, cls) > 1;
      for (int32_t k = 0; k < len; k++) {
        int32_t l = route[k];
        double g = ds_nccl_link_bw(&nvl, cls, t->links[l].bw_bytes_per_s) / DS_UNITS_GBPS;
        if (s->cap[l] < 0 || g < s->cap[l]) s->cap[l] = g;
        if (g < h->gbps) h->gbps = g;
        s->weights[used] = rc && is_pcie(&t->links[l]) ? WEIGHT_INTEL_RC : WEIGHT_ONE;
        s->links[used++] = l;
      }
      if (h->gbps > c->max_gbps) c->max_gbps = h->gbps;
      if (!h->direct) *routed_pairs = 1;
    }
  /* totalBw: a GPU's NVLinks (to members or switches) summed, or its PCIe */
  uint8_t *member = calloc((size_t)t->n_vertices, 1);
  if (!member) return ds_err_set(err, DS_ENOMEM, "channel search: out of memory");
  for (int32_t a = 0; a < n; a++) member[t->gpu_vertex[gpus[a]]] = 1;
  for (int32_t a = 0; a < n; a++) {
    int32_t v = t->gpu_vertex[gpus[a]];
    double nv = 0, pci = 0;
    for (int32_t k = t->out_first[v]; k < t->out_first[v + 1]; k++) {
      const struct ds_link *l = &t->links[t->out_links[k]];
      if (t->vertex_kind[l->dst] == DS_VERTEX_GPU && !member[l->dst]) continue;
      enum ds_hop_class cls = ds_link_hop_class(l);
      double g = ds_nccl_link_bw(&nvl, cls, l->bw_bytes_per_s) / DS_UNITS_GBPS;
      if (cls == DS_HOP_NVLINK && !(l->kind && strcmp(l->kind, "mem") == 0)) nv += g;
      if (cls == DS_HOP_PCI && g > pci) pci = g;
    }
    double total = nv > pci ? nv : pci;
    if (total > c->total_gbps) c->total_gbps = total;
  }
  free(member);
  /* next members from a: faster hop, then fewer links, then the next index
   * after a (ncclTopoSearchNextGpuSort's intraBw, intraNhops, startIndex) */
  for (int32_t a = 0; a < n; a++) {
    int32_t *nx = s->next + (size_t)a * (n - 1), k = 0;
    for (int32_t i = 1; i < n; i++) {
      int32_t b = (a + i) % n, p = k++;
      const struct hop *hb = &s->hops[a * n + b];
      while (p > 0) {
        const struct hop *hp = &s->hops[a * n + nx[p - 1]];
        if (hp->gbps > hb->gbps * (1 + REL) ||
            (hp->gbps >= hb->gbps * (1 - REL) && hp->len <= hb->len))
          break;
        nx[p] = nx[p - 1];
        p--;
      }
      nx[p] = b;
    }
  }
  return DS_OK;
}

static void search_free(struct search *s) {
  free(s->hops);
  free(s->links);
  free(s->weights);
  free(s->cap);
  free(s->next);
  free(s->units);
  free(s->ring);
  free(s->rank);
  free(s->used);
  free(s->best);
}

static int32_t links_crossed(const struct search *s, const int32_t *orders, int32_t rings) {
  int32_t sum = 0;
  for (int32_t c = 0; c < rings; c++)
    for (int32_t p = 0; p < s->n; p++) {
      const int32_t *ord = orders + (size_t)c * s->n;
      sum += s->hops[ord[p] * s->n + ord[(p + 1) % s->n]].len;
    }
  return sum;
}

ds_status ds_ring_channels_search(struct ds_topo *t, const int32_t *gpus, int32_t n,
                                  enum ds_nccl_arch arch, struct ds_ring_channels *c,
                                  struct ds_err *err) {
  memset(c, 0, sizeof *c);
  c->n = n;
  if (n < 2) return ds_err_set(err, DS_EINTERNAL, "channel search needs 2 members");
  struct search s = {.n = n, .n_links = t->n_links};
  size_t nn = (size_t)n * n, maxc = DS_NCCL_SEARCH_MAX_CHANNELS;
  s.hops = malloc(nn * sizeof *s.hops);
  s.links = malloc(nn * DS_TOPO_MAX_ROUTE * sizeof *s.links);
  s.weights = malloc(nn * DS_TOPO_MAX_ROUTE * sizeof *s.weights);
  s.cap = malloc(((size_t)t->n_links + 1) * sizeof *s.cap);
  s.next = malloc(nn * sizeof *s.next);
  s.units = malloc(((size_t)t->n_links + 1) * sizeof *s.units);
  s.ring = malloc((maxc + 1) * n * sizeof *s.ring);
  s.rank = malloc((maxc + 1) * n * sizeof *s.rank);
  s.used = malloc((maxc + 1) * n);
  s.best = malloc(maxc * n * sizeof *s.best);
  c->orders = malloc(maxc * n * sizeof *c->orders);
  ds_status st = DS_OK;
  if (!s.hops || !s.links || !s.weights || !s.cap || !s.next || !s.units || !s.ring ||
      !s.rank || !s.used || !s.best || !c->orders) {
    st = ds_err_set(err, DS_ENOMEM, "channel search over %d GPUs: out of memory", n);
    goto out;
  }
  int routed_pairs;
  DS_CHECK_GOTO(prepare(t, gpus, n, arch, &s, c, &routed_pairs, err), st, out);

  size_t n_speeds, idx = 0;
  const double *speeds = ds_nccl_search_speeds(arch, 0, &n_speeds);
  while (idx + 1 < n_speeds && (speeds[idx] > c->max_gbps * (1 + REL) ||
                                speeds[idx] > c->total_gbps * (1 + REL)))
    idx++;
  int best_level = 0;
  int32_t best_links = 0;
  for (;;) {
    double speed = speeds[idx], best = c->n_rings * c->speed_gbps;
    for (int level = 0; level <= routed_pairs; level++) {
      if (level == 1 && c->n_rings > 0 && best_level == 0) break;
      s.level = level;
      set_units(&s, speed);
      /* no packing at this speed can reach the best */
      if (rings_bound(&s) * speed < best * (1 - REL)) continue;
      int32_t rings = pack_at(&s, speed, level);
      c->exhausted |= s.exhausted;
      if (rings == 0) continue;
      double bw = rings * speed;
      int32_t crossed = links_crossed(&s, s.best, rings);
      if (c->n_rings == 0 || bw > best * (1 + REL) ||
          (bw >= best * (1 - REL) && crossed < best_links)) {
        c->n_rings = rings;
        c->speed_gbps = speed;
        best = bw;
        best_level = level;
        best_links = crossed;
        memcpy(c->orders, s.best, (size_t)rings * n * sizeof *s.best);
      }
    }
    if (c->n_rings > 0 && (c->n_rings * c->speed_gbps >= c->total_gbps * (1 - REL) ||
                           c->n_rings >= DS_NCCL_SEARCH_MAX_CHANNELS))
      break;
    if (idx + 1 >= n_speeds) break;
    if (c->n_rings > 0 && !(speeds[idx + 1] / c->speed_gbps > 0.49)) break;
    idx++;
  }
  c->routed = c->n_rings > 0 && best_level == 1;
out:
  search_free(&s);
  if (st != DS_OK) ds_ring_channels_release(c);
  return st;
}

void ds_ring_channels_release(struct ds_ring_channels *c) {
  if (!c) return;
  free(c->orders);
  memset(c, 0, sizeof *c);
}
