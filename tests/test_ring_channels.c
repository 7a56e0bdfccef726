/*
 * NCCL's ring channels on one node with direct GPU-to-GPU links
 * (sim/coll/ring_channels.c): the rings the search packs on DGX-1's hybrid
 * cube-mesh and its subsets, on the uniform 4gpu mesh and on NVLink pairs,
 * worked by hand in NCCL's units (Volta and Ampere: an NVLink 20 of its 25
 * GB/s, PCIe 12 of 16), the busbw they run at, and the boxes where nothing
 * changes. Every result is also checked against the
 * links by an independent count (fits_links).
 */
#include "coll_harness.h"

#include <unistd.h>

#include "support.h"

#include "sim/coll/nccl_model.h"
#include "sim/coll/ring_channels.h"
#include "sim/coll/ring_rails.h"

#define MIB (1024.0 * 1024)
#define MAXL 256

/* dgx1-v100's doubled pairs (0-3 0-4 1-2 1-5 2-3 4-7 5-6 6-7, 50 GB/s) and
 * single pairs (0-1 0-2 1-3 2-6 3-7 4-5 4-6 5-7, 25 GB/s). */
static const int32_t ring_a[8] = {0, 3, 2, 1, 5, 6, 7, 4};  /* the doubled cycle */
static const int32_t ring_a2[8] = {0, 4, 7, 6, 5, 1, 2, 3}; /* ... reversed */
static const int32_t ring_b[8] = {0, 1, 3, 7, 5, 4, 6, 2};  /* the single cycle */
static const int32_t ring_b2[8] = {0, 2, 6, 4, 5, 7, 3, 1}; /* ... reversed */

static struct ds_topo *load(const char *path) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(path, NULL, &t, &err), DS_OK, "%s: %s", path, err.msg);
  return t;
}

static void search(struct ds_topo *t, const int32_t *gpus, int32_t n,
                   struct ds_ring_channels *c) {
  struct ds_err err = {0};
  cr_assert_eq(ds_ring_channels_search(t, gpus, n, DS_NCCL_ARCH_VOLTA, c, &err), DS_OK, "%s",
               err.msg);
}

/* Counts, per link, the hops of every ring crossing it (routes as the
 * simulation takes them), and checks each count times the speed against
 * NCCL's bandwidth of the link (Volta: NVLink x 20/25, PCIe and QPI x
 * 12/16). Returns the counts in hits[t->n_links]. */
static void fits_links(struct ds_topo *t, const int32_t *gpus, const struct ds_ring_channels *c,
                       int32_t *hits) {
  memset(hits, 0, (size_t)t->n_links * sizeof *hits);
  for (int32_t k = 0; k < c->n_rings; k++)
    for (int32_t p = 0; p < c->n; p++) {
      int32_t a = gpus[c->orders[k * c->n + p]], b = gpus[c->orders[k * c->n + (p + 1) % c->n]];
      int32_t route[64], len;
      struct ds_err err = {0};
      cr_assert_eq(ds_topo_route(t, a, b, route, 64, &len, &err), DS_OK, "%s", err.msg);
      for (int32_t i = 0; i < len; i++) hits[route[i]]++;
    }
  for (int32_t l = 0; l < t->n_links; l++) {
    const struct ds_link *k = &t->links[l];
    double nccl = k->bw_bytes_per_s / 1e9 * (strcmp(k->kind, "nvlink") == 0 ? 20.0 / 25 : 12.0 / 16);
    cr_assert_leq(hits[l] * c->speed_gbps, nccl * (1 + 1e-9), "link %d: %d rings of %g GB/s > %g",
                  l, hits[l], c->speed_gbps, nccl);
  }
}

/* The link from GPU a to GPU b (-1: none). */
static int32_t link_between(const struct ds_topo *t, int32_t a, int32_t b) {
  int32_t va = t->gpu_vertex[a], vb = t->gpu_vertex[b];
  for (int32_t k = t->out_first[va]; k < t->out_first[va + 1]; k++)
    if (t->links[t->out_links[k]].dst == vb) return t->out_links[k];
  return -1;
}

static void assert_order(const struct ds_ring_channels *c, int32_t k, const int32_t *want) {
  for (int32_t p = 0; p < c->n; p++)
    cr_assert_eq(c->orders[k * c->n + p], want[p], "ring %d position %d: %d, want %d", k, p,
                 c->orders[k * c->n + p], want[p]);
}

Test(ring_channels, dgx1_packs_six_rings_of_20) {
  /* NCCL's units: a doubled pair 2 x 20 = 40 GB/s each way, a single one
   * 20; maxBw 40 (a doubled pair), totalBw 6 x 20 = 120 (a GPU's six
   * NVLinks). At 40 only the doubled cycle fits, once each way: 2 x 40 =
   * 80 < 120, so the search goes on; at 30 the same 2 rings (60, and the
   * bound 2 x 30 cannot beat 80); at 20 (20/40 > 0.49) a doubled link holds
   * 2 rings and a single one 1: the doubled cycle twice each way, then the
   * single links, which form one cycle, once each way: 6 x 20 = 120 =
   * totalBw, and the search stops. Rings as found, member 0 first, next
   * members tried faster hop first: A, A, A reversed twice, B, B reversed. */
  struct ds_topo *t = load("topologies/dgx1-v100.yaml");
  const int32_t gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  struct ds_ring_channels c;
  search(t, gpus, 8, &c);
  cr_assert_eq(c.n_rings, 6);
  cr_assert_float_eq(c.speed_gbps, 20, 1e-9);
  cr_assert_float_eq(c.max_gbps, 40, 1e-9);
  cr_assert_float_eq(c.total_gbps, 120, 1e-9);
  cr_assert_eq(c.routed, 0);
  cr_assert_eq(c.exhausted, 0);
  assert_order(&c, 0, ring_a);
  assert_order(&c, 1, ring_a);
  assert_order(&c, 2, ring_a2);
  assert_order(&c, 3, ring_a2);
  assert_order(&c, 4, ring_b);
  assert_order(&c, 5, ring_b2);
  /* Every directed NVLink full: a doubled one crossed by 2 rings, a single
   * one by 1; no PCIe or QPI link crossed. */
  int32_t hits[MAXL];
  cr_assert_leq(t->n_links, MAXL);
  fits_links(t, gpus, &c, hits);
  int32_t nvlinks = 0;
  for (int32_t l = 0; l < t->n_links; l++) {
    const struct ds_link *k = &t->links[l];
    if (strcmp(k->kind, "nvlink") != 0) {
      cr_assert_eq(hits[l], 0, "link %d (%s) crossed", l, k->kind);
      continue;
    }
    nvlinks++;
    cr_assert_eq(hits[l], k->bw_bytes_per_s > 30e9 ? 2 : 1, "link %d: %d rings", l, hits[l]);
  }
  cr_assert_eq(nvlinks, 32);
  ds_ring_channels_release(&c);
  ds_topo_free(t);
}

Test(ring_channels, dgx1_first_four_gpus_pack_four_rings_of_20) {
  /* GPUs 0-3: doubled 0-3, 1-2, 2-3 (40), single 0-1, 0-2, 1-3 (20).
   * totalBw: GPU 2 and 3 have 20 + 40 + 40 = 100 (links to GPUs 4-7 are
   * outside the communicator). At 40 and 30 only doubled hops fit, and they
   * form the path 0-3-2-1, no cycle. At 20 GPU 0's links hold 1 + 1 + 2 = 4
   * rings. The rings of 4 GPUs, member 0 first, in the order tried (next
   * GPU by faster hop, then the next index): 0321, 0312, 0123, 0132, 0231,
   * 0213. Packing: 0321, then 0312 (0->3 holds 2), 0123 (1->2 holds 2),
   * 0213 (2->1, 3->0 their second): 4 = the bound, 80 GB/s < 100, so lower
   * speeds are tried; 18, 15 and 12 give at most 4 or 5 rings (72, 60,
   * 60), 10 at most 8 x 10 = 80, a tie with more links crossed; 9/20 <
   * 0.49 stops. */
  struct ds_topo *t = load("topologies/dgx1-v100.yaml");
  const int32_t gpus[4] = {0, 1, 2, 3};
  struct ds_ring_channels c;
  search(t, gpus, 4, &c);
  cr_assert_eq(c.n_rings, 4);
  cr_assert_float_eq(c.speed_gbps, 20, 1e-9);
  cr_assert_float_eq(c.total_gbps, 100, 1e-9);
  const int32_t want[4][4] = {{0, 3, 2, 1}, {0, 3, 1, 2}, {0, 1, 2, 3}, {0, 2, 1, 3}};
  for (int k = 0; k < 4; k++) assert_order(&c, k, want[k]);
  /* 0-3 and 1-2 full both ways (2 rings), 2-3 one ring each way, every
   * single link once. */
  int32_t hits[MAXL];
  fits_links(t, gpus, &c, hits);
  const int32_t pairs[][3] = {{0, 3, 2}, {3, 0, 2}, {1, 2, 2}, {2, 1, 2}, {2, 3, 1}, {3, 2, 1},
                              {0, 1, 1}, {1, 0, 1}, {0, 2, 1}, {2, 0, 1}, {1, 3, 1}, {3, 1, 1}};
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
    int32_t l = link_between(t, pairs[i][0], pairs[i][1]);
    cr_assert_geq(l, 0);
    cr_assert_eq(hits[l], pairs[i][2], "%d -> %d: %d rings", pairs[i][0], pairs[i][1], hits[l]);
  }
  ds_ring_channels_release(&c);
  ds_topo_free(t);
}

Test(ring_channels, two_gpus_one_ring_each_way) {
  /* A pair of GPUs has one ring, both directions of its link. GPUs 0 and
   * 3 (doubled, 40): 1 ring of 40 = totalBw; GPUs 0 and 1 (single): 1 of
   * 20. The pair is searched when the ring is built (it has a direct
   * link); its rings are one order, so sameChannels holds, and NCCL's model
   * gives what one route gave before, after ncclTopoDupChannels: 2
   * channels of 20 on 0-3 (40 >= 25), 1 of 20 on 0-1. */
  struct ds_topo *t = load("topologies/dgx1-v100.yaml");
  const int32_t pair[2][2] = {{0, 3}, {0, 1}};
  const double speed[2] = {40, 20};
  const int32_t model_channels[2] = {2, 1};
  for (int i = 0; i < 2; i++) {
    struct ds_ring_channels c;
    search(t, pair[i], 2, &c);
    cr_assert_eq(c.n_rings, 1);
    cr_assert_float_eq(c.speed_gbps, speed[i], 1e-9);
    int32_t hits[MAXL];
    fits_links(t, pair[i], &c, hits);
    cr_assert_eq(hits[link_between(t, pair[i][0], pair[i][1])], 1);
    cr_assert_eq(hits[link_between(t, pair[i][1], pair[i][0])], 1);
    cr_assert(ds_ring_channels_same(&c));
    ds_ring_channels_release(&c);
    cr_assert(ds__ring_has_direct_link(t, pair[i], 2));
    struct ds_ring r;
    struct ds_err err = {0};
    cr_assert_eq(ds_ring_build_rails(t, pair[i], 2, &r, &err), DS_OK, "%s", err.msg);
    cr_assert_not_null(r.chan);
    cr_assert_eq(r.chan->n_rails, 1);
    struct ds_nccl_model m;
    cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
    cr_assert_eq(m.channels, model_channels[i]);
    cr_assert_float_eq(m.chan_bw_bytes_per_s, 20e9, 1);
    cr_assert(m.same_channels);
    ds_ring_release(&r);
  }
  ds_topo_free(t);
}

Test(ring_channels, nvlink_pair_where_a_lower_speed_packs_more) {
  /* Two A100s joined by 3 NVLinks (tests/data/pair3-a100: 75 GB/s a
   * direction, 60 in NCCL's units; maxBw = totalBw = 60). Ampere's speeds
   * 40, 30, 20, ...: at 40 the link holds 1 ring (40 < 60); 30/40 > 0.49,
   * at 30 it holds 2: 60 = totalBw, stop. ncclTopoDupChannels (30 >= 25):
   * 4 channels of 15 = 60. One route (the model's rule where nothing is
   * searched) takes the first speed not above 60, 40, floor(60/40) = 1
   * channel, duplicated to 2 of 20 = 40. */
  struct ds_topo *t = load("tests/data/pair3-a100.yaml");
  const int32_t gpus[2] = {0, 1};
  struct ds_ring_channels c;
  struct ds_err err = {0};
  cr_assert_eq(ds_ring_channels_search(t, gpus, 2, ds_nccl_arch_of_topo(t), &c, &err), DS_OK,
               "%s", err.msg);
  cr_assert_eq(c.n_rings, 2);
  cr_assert_float_eq(c.speed_gbps, 30, 1e-9);
  cr_assert_float_eq(c.max_gbps, 60, 1e-9);
  cr_assert_float_eq(c.total_gbps, 60, 1e-9);
  int32_t hits[MAXL];
  fits_links(t, gpus, &c, hits);
  cr_assert_eq(hits[link_between(t, 0, 1)], 2);
  cr_assert_eq(hits[link_between(t, 1, 0)], 2);
  ds_ring_channels_release(&c);
  struct ds_ring r;
  cr_assert_eq(ds_ring_build_rails(t, gpus, 2, &r, &err), DS_OK, "%s", err.msg);
  cr_assert_not_null(r.chan);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m.channels, 4);
  cr_assert_float_eq(m.chan_bw_bytes_per_s, 15e9, 1);
  cr_assert(m.same_channels);
  ds_ring_release(&r);
  ds_topo_free(t);
}

Test(ring_channels, uniform_4gpu_mesh_packs_all_six_rings_of_40) {
  /* 4gpu: 4 A100s, every pair joined by 4 NVLinks, 100 GB/s a direction,
   * 80 in NCCL's units (4 x SM80_NVLINK_BW 20). maxBw = 80, totalBw = a
   * GPU's 3 pairs = 240. Ampere's speeds from the first not above 80: 40.
   * At 40 each directed link holds 2 rings. The directed rings through 4
   * GPUs from GPU 0 are 3! = 6 (0123 0132 0213 0231 0312 0321); each
   * crosses 4 of the 12 directed links, 24 crossings, and by symmetry
   * every directed link a -> b is crossed by exactly 2 of them (the rings
   * with b right after a: 2 orders of the other two). So all 6 fit: 6 x 40
   * = 240 = totalBw, the search stops. ncclTopoDupChannels (40 >= 25;
   * Ampere's ccMin 80 is not > 80): 12 channels of 20 = 240 GB/s. One
   * route gave floor(80/40) = 2 channels, duplicated to 4 of 20 = 80. */
  struct ds_topo *t = load("topologies/4gpu.yaml");
  const int32_t gpus[4] = {0, 1, 2, 3};
  cr_assert(ds__ring_has_direct_link(t, gpus, 4));
  struct ds_ring_channels c;
  struct ds_err err = {0};
  cr_assert_eq(ds_ring_channels_search(t, gpus, 4, ds_nccl_arch_of_topo(t), &c, &err), DS_OK,
               "%s", err.msg);
  cr_assert_eq(c.n_rings, 6);
  cr_assert_float_eq(c.speed_gbps, 40, 1e-9);
  cr_assert_float_eq(c.max_gbps, 80, 1e-9);
  cr_assert_float_eq(c.total_gbps, 240, 1e-9);
  cr_assert_not(c.routed);
  cr_assert_not(ds_ring_channels_same(&c));
  int32_t hits[MAXL];
  fits_links(t, gpus, &c, hits);
  for (int32_t a = 0; a < 4; a++)
    for (int32_t b = 0; b < 4; b++)
      if (a != b) cr_assert_eq(hits[link_between(t, a, b)], 2, "%d -> %d", a, b);
  /* the 6 rings are the 6 different orders */
  for (int32_t x = 0; x < 6; x++)
    for (int32_t y = x + 1; y < 6; y++)
      cr_assert_neq(memcmp(c.orders + x * 4, c.orders + y * 4, 4 * sizeof *c.orders), 0,
                    "rings %d and %d", x, y);
  ds_ring_channels_release(&c);
  struct ds_ring r;
  cr_assert_eq(ds_ring_build_rails(t, gpus, 4, &r, &err), DS_OK, "%s", err.msg);
  cr_assert_not_null(r.chan);
  cr_assert_eq(r.chan->n_rails, 6);
  struct ds_nccl_model m;
  cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m.channels, 12);
  cr_assert_float_eq(m.chan_bw_bytes_per_s, 20e9, 1);
  cr_assert_float_eq(m.busbw_bytes_per_s[DS_PROTO_SIMPLE], 240e9, 1);
  cr_assert_not(m.same_channels);
  ds_ring_release(&r);
  ds_topo_free(t);
}

Test(ring_channels, routes_where_a_pair_has_no_nvlink) {
  /* GPUs 0, 1, 5: 0-5 has no NVLink, so no ring of direct links exists and
   * the search takes the pair's route (PCIe and QPI through both sockets:
   * 16 GB/s, 12 in NCCL's units). Speeds 40 down to 15 fit no ring; at 12
   * both directions fit once (the two routes share no directed link): 2 x
   * 12 = 24 GB/s, against totalBw 60 (GPU 1: 20 + 40). Lower speeds: 10,
   * 9 and 7 still fit 2 rings (each route holds one), 6 fits 4 (24, a tie
   * that crosses more links), 5/12 < 0.49 stops. */
  struct ds_topo *t = load("topologies/dgx1-v100.yaml");
  const int32_t gpus[3] = {0, 1, 5};
  struct ds_ring_channels c;
  search(t, gpus, 3, &c);
  cr_assert_eq(c.n_rings, 2);
  cr_assert_float_eq(c.speed_gbps, 12, 1e-9);
  cr_assert_float_eq(c.total_gbps, 60, 1e-9);
  cr_assert_eq(c.routed, 1);
  const int32_t want[2][3] = {{0, 1, 2}, {0, 2, 1}};
  for (int k = 0; k < 2; k++) assert_order(&c, k, want[k]);
  int32_t hits[MAXL];
  fits_links(t, gpus, &c, hits);
  ds_ring_channels_release(&c);
  ds_topo_free(t);
}

Test(ring_channels, greedy_above_ten_gpus) {
  /* tests/data/nvring12.yaml: 12 V100s in a cycle of NVLinks, doubled from
   * an even GPU (40 in NCCL's units), single from an odd one (20); totalBw
   * 60. 12 members: rings are packed greedily. At 40 and 30 no cycle of
   * direct links fits (single links hold none) and routes (PCIe, 12) fit
   * none either; at 20 the cycle fits once each way (its single links are
   * then full): 0 1 2 ... 11, then 0 11 10 ... 1: 40 GB/s < 60; 18 to 12
   * fit the same 2 rings, 10 fits 4 (a tie crossing more links), 9/20 <
   * 0.49 stops. */
  struct ds_topo *t = load("tests/data/nvring12.yaml");
  int32_t gpus[12];
  for (int32_t i = 0; i < 12; i++) gpus[i] = i;
  struct ds_ring_channels c;
  search(t, gpus, 12, &c);
  cr_assert_eq(c.n_rings, 2);
  cr_assert_float_eq(c.speed_gbps, 20, 1e-9);
  cr_assert_float_eq(c.total_gbps, 60, 1e-9);
  for (int32_t p = 0; p < 12; p++) {
    cr_assert_eq(c.orders[p], p);
    cr_assert_eq(c.orders[12 + p], (12 - p) % 12);
  }
  int32_t hits[MAXL];
  fits_links(t, gpus, &c, hits);
  ds_ring_channels_release(&c);
  ds_topo_free(t);
}

/* Opens h on dgx1-v100's GPUs 0..n-1 with its rails and channels planned. */
static void open_dgx1(struct harness *h, int32_t n) {
  struct ds_err err = {0};
  harness_open(h, NULL, n, DS_NET_MAXMIN);
  cr_assert_eq(ds_ring_plan_rails(h->topo, &h->ring, &err), DS_OK, "%s", err.msg);
}

Test(ring_channels, dgx1_busbw_is_the_channels_closed_form) {
  /* 8 GPUs under NCCL's Simple protocol, the extra mechanisms left out:
   * 6 channels (one per rail, each carrying S/6) capped at 20 GB/s; a
   * doubled link (50 GB/s) carries 2 of them, a single one (25) 1, so the
   * caps bind: busbw 6 x 20 = 120 GB/s, NCCL's own nChannels x bwIntra.
   * Every hop one NVLink Simple step of 3.4 us: the path crosses 2 x 8 x
   * 3.4 - 6.8 = 47.6 us; with baseLat 8.4 us, 240 MiB takes
   *   T = 8.4 + 47.6 us + 14/8 x 240 MiB / 120 GB/s,
   * per flow and aggregated. 4 GPUs: 4 channels, 80 GB/s, path 2 x 4 x 3.4
   * - 6.8 = 20.4 us. (240 MiB: a channel's step, S/(K N), takes a whole
   * number of ns at 20 GB/s, so the per-flow steps do not round.) */
  const int32_t ns[2] = {8, 4};
  const double busbw[2] = {120e9, 80e9};
  const enum ds_coll_model models[2] = {DS_COLL_FLOW, DS_COLL_AGGREGATE};
  double bytes = 240 * MIB;
  struct harness h;
  harness_load(&h, "topologies/dgx1-v100.yaml");
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++) {
      int32_t n = ns[i];
      open_dgx1(&h, n);
      cr_assert_not_null(h.ring.chan);
      struct ds_nccl_model m;
      struct ds_err err = {0};
      cr_assert_eq(ds_nccl_model_build(h.topo, &h.ring, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK,
                   "%s", err.msg);
      cr_assert_eq(m.channels, h.ring.chan->n_rails);
      cr_assert_eq(m.hw_intra, DS_HOP_NVLINK);
      cr_assert_float_eq(m.busbw_bytes_per_s[DS_PROTO_SIMPLE], busbw[i], 1);
      struct ds_coll_proto cp;
      ds_nccl_coll_proto(&m, DS_PROTO_SIMPLE, bytes, &cp);
      double lat = 8400 + 2 * n * 3400.0 - 6800;
      double expect = lat + 2.0 * (n - 1) / n * bytes / busbw[i] * 1e9;
      cr_assert_float_eq(ds_ring_allreduce_proto_ns(&h.ring, &cp, bytes), expect, 1e-3);
      struct ds_coll_spec spec = {.kind = DS_COLL_ALLREDUCE, .topo = h.topo, .ring = &h.ring,
                                  .net = h.net, .model = models[k], .chunks = 1,
                                  .bytes = bytes, .root = -1, .proto = &cp,
                                  .on_done = harness_on_member, .owner = &h};
      cr_assert_eq(ds_coll_new(&spec, &h.coll, &err), DS_OK, "%s", err.msg);
      int64_t t = harness_finish(&h, n, "dgx1 channels");
      cr_assert(llabs(t - (int64_t)llround(expect)) <= 2, "%d GPUs, model %d: %lld ns, want %.0f",
                n, k, (long long)t, expect);
      harness_release(&h);
    }
  ds_topo_free(h.topo);
}

Test(ring_channels, plain_ring_keeps_one_ring) {
  /* Without a protocol the ring stays one ring (the doubled cycle at 50
   * GB/s, ring_rails.h): 256 MiB in 47.6 us + 14/8 x 256 MiB / 50 GB/s. */
  struct harness h;
  harness_load(&h, "topologies/dgx1-v100.yaml");
  open_dgx1(&h, 8);
  cr_assert_eq(h.ring.n_rails, 1);
  cr_assert_eq(h.ring.chan->n_rails, 6);
  cr_assert_eq(ds_ring_nccl(&h.ring), h.ring.chan);
  double bytes = 256 * MIB, expect = 47600 + 14.0 / 8 * bytes / 50e9 * 1e9;
  cr_assert_float_eq(ds_ring_allreduce_ns(&h.ring, bytes), expect, 1e-3);
  struct ds_err err = {0};
  struct ds_coll_spec spec = {.kind = DS_COLL_ALLREDUCE, .topo = h.topo, .ring = &h.ring,
                              .net = h.net, .model = DS_COLL_AGGREGATE, .chunks = 1,
                              .bytes = bytes, .root = -1, .on_done = harness_on_member,
                              .owner = &h};
  cr_assert_eq(ds_coll_new(&spec, &h.coll, &err), DS_OK, "%s", err.msg);
  int64_t t = harness_finish(&h, 8, "plain ring");
  cr_assert(llabs(t - (int64_t)llround(expect)) <= 2, "%lld ns, want %.0f", (long long)t, expect);
  harness_release(&h);
  ds_topo_free(h.topo);
}

Test(ring_channels, boxes_without_gpu_links_are_not_searched) {
  /* NVSwitch and PCIe boxes have no GPU-to-GPU link: no channel rings, and
   * NCCL's model keeps the one-route count. dgx-a100: a GPU's 12 NVLinks
   * to the switches, 240 in NCCL's units, 6 channels of 40, duplicated to
   * 12 of 20. dgx-h100: 18 x 20.6 = 370.8; Hopper's first speed, 60, is
   * not above it: floor(370.8/60) = 6 channels of 60, duplicated to 12 of
   * 30 (60 is not below 50). pcie-8gpu: PCIe Gen4 x16 (32 GB/s) is 24 in
   * NCCL's units: speed 20, 1 channel, no duplication (20 < 25). */
  const char *files[] = {"topologies/dgx-a100.yaml", "topologies/dgx-h100.yaml",
                         "topologies/pcie-8gpu.yaml"};
  const int32_t want_channels[] = {12, 12, 1};
  const double want_speed[] = {20e9, 30e9, 20e9};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    struct ds_topo *t = load(files[i]);
    int32_t gpus[8];
    for (int32_t g = 0; g < t->n_gpus; g++) gpus[g] = g;
    cr_assert_not(ds__ring_has_direct_link(t, gpus, t->n_gpus), "%s", files[i]);
    struct ds_ring r;
    struct ds_err err = {0};
    cr_assert_eq(ds_ring_build_rails(t, gpus, t->n_gpus, &r, &err), DS_OK, "%s", err.msg);
    cr_assert_null(r.chan, "%s", files[i]);
    cr_assert_eq(ds_ring_nccl(&r), &r);
    struct ds_nccl_model m;
    cr_assert_eq(ds_nccl_model_build(t, &r, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s", err.msg);
    cr_assert_eq(m.channels, want_channels[i], "%s: %d channels", files[i], m.channels);
    cr_assert_float_eq(m.chan_bw_bytes_per_s, want_speed[i], 1, "%s", files[i]);
    cr_assert(m.same_channels, "%s", files[i]);
    ds_ring_release(&r);
    ds_topo_free(t);
  }
  /* A GPU NCCL's model does not know (mesh4, list4: TestGPU) is not
   * searched although its GPUs have direct links. */
  const char *unknown[] = {"tests/data/mesh4.yaml", "tests/data/list4.yaml"};
  for (size_t i = 0; i < 2; i++) {
    struct ds_topo *t = load(unknown[i]);
    const int32_t gpus[4] = {0, 1, 2, 3};
    cr_assert(ds__ring_has_direct_link(t, gpus, 4), "%s", unknown[i]);
    struct ds_ring r;
    struct ds_err err = {0};
    cr_assert_eq(ds_ring_build_rails(t, gpus, 4, &r, &err), DS_OK, "%s", err.msg);
    cr_assert_null(r.chan, "%s", unknown[i]);
    ds_ring_release(&r);
    ds_topo_free(t);
  }
}

Test(ring_channels, search_is_deterministic) {
  /* Two searches over the same members give the same rings. */
  struct ds_topo *t = load("topologies/dgx1-v100.yaml");
  const int32_t gpus[7] = {0, 1, 2, 3, 4, 5, 6};
  struct ds_ring_channels a, b;
  search(t, gpus, 7, &a);
  search(t, gpus, 7, &b);
  cr_assert_eq(a.n_rings, b.n_rings);
  cr_assert_gt(a.n_rings, 0);
  cr_assert_float_eq(a.speed_gbps, b.speed_gbps, 0);
  cr_assert_arr_eq(a.orders, b.orders, (size_t)a.n_rings * 7 * sizeof *a.orders);
  int32_t hits[MAXL];
  fits_links(t, gpus, &a, hits);
  ds_ring_channels_release(&a);
  ds_ring_channels_release(&b);
  ds_topo_free(t);
}

Test(ring_channels, a_mesh_packs_more_than_sixteen_rings) {
  /* tests/data/nvmesh30.yaml: 30 V100s, one NVLink (20 in NCCL's units)
   * per pair. maxBw 20, so the speed is 20 and every directed link holds
   * one ring; a ring leaves each GPU once, so at most 29 rings (totalBw 29
   * x 20 = 580). NCCL's search stops at ringGraph.maxChannels =
   * MAXCHANNELS / 2 = 32 in v2.30.7 (init.cc:1177, device.h:91), not 16
   * (MAXCHANNELS 32 before v2.25): the greedy packing (30 members) finds
   * more than 16 here, each one a permutation that fits the links. */
  cr_assert_eq(DS_NCCL_SEARCH_MAX_CHANNELS, 32);
  struct ds_topo *t = load("tests/data/nvmesh30.yaml");
  int32_t gpus[30];
  for (int32_t i = 0; i < 30; i++) gpus[i] = i;
  struct ds_ring_channels c;
  search(t, gpus, 30, &c);
  cr_assert_float_eq(c.speed_gbps, 20, 1e-9);
  cr_assert_gt(c.n_rings, 16, "%d rings: capped at 16", c.n_rings);
  cr_assert_leq(c.n_rings, 29);
  for (int32_t k = 0; k < c.n_rings; k++) {
    int seen[30] = {0};
    for (int32_t p = 0; p < 30; p++) seen[c.orders[k * 30 + p]]++;
    for (int32_t g = 0; g < 30; g++) cr_assert_eq(seen[g], 1, "ring %d: GPU %d", k, g);
  }
  int32_t *hits = calloc((size_t)t->n_links, sizeof *hits);
  cr_assert(hits);
  fits_links(t, gpus, &c, hits);
  free(hits);
  ds_ring_channels_release(&c);
  ds_topo_free(t);
}

Test(ring_channels, pairs_without_nvlink_bridged_by_a_member_gpu) {
  /* NCCL's PATH_NVB (paths.cc: one GPU crossed, NVLink in and out; the
   * GPU a member). dgx1-v100's NVLinks (above): 0-1 0-2 0-3 0-4, 1-2 1-3
   * 1-5, 2-3 2-6, 3-7, 4-5 4-6 4-7, 5-6 5-7, 6-7.
   *   0..4: 4 has no NVLink to 1, 2, 3; GPU 0 has NVLinks to all four:
   *         bridged (NCCL's paths NVB, LL128 on by default);
   *   0..3: every pair direct: bridged (nothing to bridge);
   *   all 8: each missing pair (0-5 via 1 or 4, 3-6 via 2 or 7, ...) has
   *         two bridges;
   *   0 5 6: 0-5 and 0-6 have no NVLink and 5, 6 no NVLink to 0: no;
   *   1 4:   no third GPU: no;
   *   0 1 5 6: 0-6 needs 2 or 4, neither a member: no. */
  struct ds_topo *t = load("topologies/dgx1-v100.yaml");
  const int32_t first5[] = {0, 1, 2, 3, 4}, all8[] = {0, 1, 2, 3, 4, 5, 6, 7};
  const int32_t g056[] = {0, 5, 6}, g14[] = {1, 4}, g0156[] = {0, 1, 5, 6};
  cr_assert(ds__ring_nvb_bridged(t, first5, 5));
  cr_assert(ds__ring_nvb_bridged(t, first5, 4));
  cr_assert(ds__ring_nvb_bridged(t, all8, 8));
  cr_assert_not(ds__ring_nvb_bridged(t, g056, 3));
  cr_assert_not(ds__ring_nvb_bridged(t, g14, 2));
  cr_assert_not(ds__ring_nvb_bridged(t, g0156, 4));
  ds_topo_free(t);
}

Test(ring_channels, ll128_is_on_where_nccl_bridges_the_pcie_hops) {
  /* dgx1-v100, GPUs 0-4: ddpsim's rings cross PCIe (4's only NVLink is to
   * 0), but NCCL routes 4 <-> 1, 2, 3 through GPU 0 (PATH_NVB), so its
   * typeIntra is at most NVB and LL128 is on by default (tuning.cc:531);
   * the hop latency stays PCI's (tuning.cc:285: NVLink's row only for
   * PATH_NVL). GPUs 0-3 are all NVLink: on, NVLink latency. */
  struct harness h;
  harness_load(&h, "topologies/dgx1-v100.yaml");
  const int32_t ns[2] = {5, 4};
  const int32_t hw[2] = {DS_HOP_PCI, DS_HOP_NVLINK};
  for (int i = 0; i < 2; i++) {
    struct ds_nccl_model m;
    struct ds_err err = {0};
    open_dgx1(&h, ns[i]);
    cr_assert_eq(ds_nccl_model_build(h.topo, &h.ring, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK,
                 "%s", err.msg);
    cr_assert_eq(m.hw_intra, hw[i], "%d GPUs", ns[i]);
    cr_assert_eq(h.ring.chan_nvb, 1, "%d GPUs", ns[i]);
    cr_assert_eq(m.ll128_off_by_default, 0, "%d GPUs", ns[i]);
    cr_assert_eq(m.proto_disabled & (1u << DS_PROTO_LL128), 0u, "%d GPUs", ns[i]);
    harness_release(&h);
  }
  ds_topo_free(h.topo);
}

/* Four V100s, NVLink pairs 0-1 and 2-3 (25 GB/s, NCCL's 20), each GPU on
 * PCIe (16 GB/s, NCCL's 12) to one CPU (the reviewer's bridged4), or the
 * same without the NVLinks; cpu_vendor as given ("" leaves the key out). */
static struct ds_topo *load_bridged4(int nvlinks, const char *vendor) {
  char text[1024], path[] = "/tmp/ddpsim-bridged4-XXXXXX";
  snprintf(text, sizeof text,
           "schema_version: 1\nname: bridged4\ngpu: V100-SXM2-16GB\nnodes: 1\n"
           "gpus_per_node: 4\n%s%s%s"
           "devices:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu}\n"
           "  - {name: gpu2, kind: gpu}\n  - {name: gpu3, kind: gpu}\n"
           "  - {name: cpu0, kind: cpu}\nlinks:\n%s"
           "  - {from: gpu0, to: cpu0, bw: 16GBps, lat: 1.5us, kind: pcie}\n"
           "  - {from: gpu1, to: cpu0, bw: 16GBps, lat: 1.5us, kind: pcie}\n"
           "  - {from: gpu2, to: cpu0, bw: 16GBps, lat: 1.5us, kind: pcie}\n"
           "  - {from: gpu3, to: cpu0, bw: 16GBps, lat: 1.5us, kind: pcie}\n"
           "compute:\n  flops_efficiency: 1\n  kernel_overhead: 0us\n",
           vendor[0] ? "cpu_vendor: " : "", vendor, vendor[0] ? "\n" : "",
           nvlinks ? "  - {from: gpu0, to: gpu1, bw: 25GBps, lat: 3.4us, kind: nvlink}\n"
                     "  - {from: gpu2, to: gpu3, bw: 25GBps, lat: 3.4us, kind: nvlink}\n"
                   : "");
  ds_test_write_temp(path, text);
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  ds_status st = ds_topo_load(path, "topologies/gpus.yaml", &t, &err);
  unlink(path);
  cr_assert_eq(st, DS_OK, "%s", err.msg);
  return t;
}

Test(ring_channels, intel_root_complex_charges_six_fifths_on_pcie) {
  /* bridged4: maxBw 20 (an NVLink), totalBw 20 (a GPU's NVLink; its PCIe
   * is 12). No ring of direct links (0-2 has none); with routes, a pair
   * across the pairs goes GPU -> CPU -> GPU (NCCL's PATH_PHB): speeds 20,
   * 18, 15 exceed a PCIe link. On an Intel host NCCL's followPath charges
   * 6/5 x speed on those PCIe links: at 12, 14.4 > 12 fits none; at 10,
   * 12 fits one hop per directed PCIe link. Every ring crosses between
   * the pairs once each way, taking one GPU's up-link and another's
   * down-link, and there are 4 of each: 2 rings, 0 1 2 3 (from 0 the
   * NVLink first, from 1 on to 2, the next index) and 0 3 2 1 (0 -> 1 -> x
   * finds 1's up-link spent, 0 -> 2 2's down-link; 0 -> 3 fits), 2 x 10 =
   * totalBw: done. Mixed hosts as Intel (an Intel node's graph binds,
   * init.cc's min over ranks). On AMD and Arm hosts no 6/5: at 12 each
   * directed PCIe link fits one hop, the same 2 rings, 24 >= totalBw. */
  const char *vendors[] = {"", "intel", "mixed", "amd", "arm"};
  const double speed[] = {10, 10, 10, 12, 12};
  const int32_t gpus[4] = {0, 1, 2, 3}, want[2][4] = {{0, 1, 2, 3}, {0, 3, 2, 1}};
  for (int v = 0; v < 5; v++) {
    struct ds_topo *t = load_bridged4(1, vendors[v]);
    struct ds_ring_channels c;
    search(t, gpus, 4, &c);
    cr_assert_eq(c.n_rings, 2, "%s: %d rings", vendors[v], c.n_rings);
    cr_assert_float_eq(c.speed_gbps, speed[v], 1e-9, "%s: %g", vendors[v], c.speed_gbps);
    cr_assert_float_eq(c.total_gbps, 20, 1e-9);
    for (int k = 0; k < 2; k++) assert_order(&c, k, want[k]);
    /* an independent count: each PCIe link carries one hop, charged 6/5 of
     * the speed through an Intel root complex, within NCCL's 12 */
    int32_t hits[MAXL];
    fits_links(t, gpus, &c, hits);
    for (int32_t l = 0; l < t->n_links; l++)
      if (strcmp(t->links[l].kind, "pcie") == 0) {
        cr_assert_eq(hits[l], 1, "%s: link %d", vendors[v], l);
        cr_assert_leq(hits[l] * c.speed_gbps * (speed[v] < 12 ? 1.2 : 1), 12 * (1 + 1e-9),
                      "%s: link %d", vendors[v], l);
      }
    ds_ring_channels_release(&c);
    ds_topo_free(t);
  }
}

Test(ring_channels, one_route_model_charges_six_fifths_on_intel_only) {
  /* bridged4 without NVLinks: no search (no direct link); the one ring
   * 0 1 2 3 goes GPU -> CPU -> GPU on every hop, each directed PCIe link
   * crossed once. Intel (and mixed): NCCL's 12 over a load of 6/5 = 10,
   * 1 channel of 10; AMD and Arm: 1 channel of 12. */
  const char *vendors[] = {"", "intel", "mixed", "amd", "arm"};
  const double speed[] = {10, 10, 10, 12, 12};
  for (int v = 0; v < 5; v++) {
    struct harness h = {0};
    h.topo = load_bridged4(0, vendors[v]);
    struct ds_err err = {0};
    harness_open(&h, NULL, 4, DS_NET_MAXMIN);
    cr_assert_eq(ds_ring_plan_rails(h.topo, &h.ring, &err), DS_OK, "%s", err.msg);
    cr_assert_null(h.ring.chan);
    struct ds_nccl_model m;
    cr_assert_eq(ds_nccl_model_build(h.topo, &h.ring, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK,
                 "%s", err.msg);
    cr_assert_eq(m.channels, 1, "%s", vendors[v]);
    cr_assert_float_eq(m.chan_bw_bytes_per_s / 1e9, speed[v], 1e-9, "%s: %g", vendors[v],
                       m.chan_bw_bytes_per_s / 1e9);
    harness_release(&h);
    ds_topo_free(h.topo);
  }
}
