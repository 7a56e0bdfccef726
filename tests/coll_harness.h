/*
 * Test harness shared by the all-reduce algorithm tests (test_coll_tree.c,
 * test_coll_direct.c, test_coll_hier.c): one collective alone on its own
 * engine and network, every member entering at t = 0.
 */
#ifndef DS_TESTS_COLL_HARNESS_H
#define DS_TESTS_COLL_HARNESS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim/coll.h"
#include "sim/engine.h"
#include "sim/events.h"
#include "sim/net.h"
#include "sim/topo.h"

#define HARNESS_MAXR 64

struct harness {
  struct ds_topo *topo;
  struct ds_ring ring;
  struct ds_engine *eng;
  struct ds_net *net;
  struct ds_coll *coll;
  int64_t done_ns[HARNESS_MAXR];
};

static void harness_on_sent(void *owner, uint64_t tag) {
  struct harness *h = owner;
  cr_assert_eq(ds_coll_flow_sent(h->coll, (int32_t)(tag & 0xffffffffu)), DS_OK);
}

static void harness_on_flow(void *owner, uint64_t tag) {
  struct harness *h = owner;
  cr_assert_eq(ds_coll_flow_done(h->coll, (int32_t)(tag & 0xffffffffu)), DS_OK);
}

static void harness_on_member(void *owner, int32_t member) {
  struct harness *h = owner;
  cr_assert_eq(h->done_ns[member], -1, "member %d finished twice", member);
  h->done_ns[member] = ds_engine_now(h->eng);
}

static void harness_handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)eng;
  ds_net_handle_event(((struct harness *)ctx)->net, ev);
}

/* path: relative to the repository root, e.g. "tests/data/ring8.yaml". */
static void harness_load(struct harness *h, const char *path) {
  struct ds_err err = {0};
  memset(h, 0, sizeof *h);
  cr_assert_eq(ds_topo_load(path, NULL, &h->topo, &err), DS_OK, "%s", err.msg);
}

/* Creates the all-reduce `algo` over GPUs 0..n-1; DS_OK or what
 * ds_coll_new said (err filled). Leaves engine and net ready to run. */
static ds_status harness_new(struct harness *h, enum ds_ar_algo algo, int32_t n,
                             double bytes, int32_t root, int32_t chunks,
                             enum ds_coll_model model, const struct ds_coll_proto *proto,
                             struct ds_err *err) {
  int32_t gpus[HARNESS_MAXR];
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  cr_assert_eq(ds_ring_build(h->topo, gpus, n, &h->ring, err), DS_OK, "%s", err->msg);
  cr_assert_eq(ds_engine_new(0, harness_handle, h, &h->eng), DS_OK);
  cr_assert_eq(ds_net_new(h->topo, h->eng, DS_NET_MAXMIN, harness_on_flow, harness_on_sent,
                          h, &h->net), DS_OK);
  struct ds_coll_spec spec = {.kind = DS_COLL_ALLREDUCE, .topo = h->topo, .ring = &h->ring,
                              .net = h->net, .model = model, .chunks = chunks,
                              .bytes = bytes, .root = root, .proto = proto, .algo = algo,
                              .on_done = harness_on_member, .owner = h};
  h->coll = NULL;
  return ds_coll_new(&spec, &h->coll, err);
}

static void harness_release(struct harness *h) {
  ds_coll_free(h->coll);
  ds_net_free(h->net);
  ds_engine_free(h->eng);
  ds_ring_release(&h->ring);
  h->coll = NULL;
  h->net = NULL;
  h->eng = NULL;
}

/* Runs the all-reduce; returns the last member's finish (ns), h->done_ns
 * holding every member's. */
static int64_t harness_run(struct harness *h, enum ds_ar_algo algo, int32_t n, double bytes,
                           int32_t root, int32_t chunks, enum ds_coll_model model,
                           const struct ds_coll_proto *proto) {
  struct ds_err err = {0};
  cr_assert_eq(harness_new(h, algo, n, bytes, root, chunks, model, proto, &err), DS_OK,
               "%s", err.msg);
  for (int32_t i = 0; i < n; i++) h->done_ns[i] = -1;
  for (int32_t i = 0; i < n; i++) cr_assert_eq(ds_coll_enter(h->coll, i), DS_OK);
  cr_assert_eq(ds_engine_run(h->eng, INT64_MAX), DS_OK);
  int64_t last = 0;
  for (int32_t i = 0; i < n; i++) {
    cr_assert_geq(h->done_ns[i], 0, "%s: member %d never finished", ds_ar_algo_name(algo), i);
    if (h->done_ns[i] > last) last = h->done_ns[i];
  }
  cr_assert_eq(ds_net_flows_pending(h->net), 0);
  harness_release(h);
  return last;
}

/* The bound on an all-reduce's busbw without in-network reduction: any
 * algorithm makes every rank send 2(N-1)/N S at least (Patarasuk and Yuan's
 * lower bound), so busbw = 2(N-1)/N S/T <= what a GPU can inject, the sum
 * of its outgoing links (the smallest over the first n GPUs). On a switch,
 * where a GPU has one link, it is the ring's bottleneck link. */
static double harness_inject_bw(const struct ds_topo *t, int32_t n) {
  double best = INFINITY;
  for (int32_t g = 0; g < n; g++) {
    int32_t v = t->gpu_vertex[g];
    double sum = 0;
    for (int32_t k = t->out_first[v]; k < t->out_first[v + 1]; k++)
      sum += t->links[t->out_links[k]].bw_bytes_per_s;
    if (sum < best) best = sum;
  }
  return best;
}

/* busbw of an all-reduce of `bytes` over n ranks that took t_ns. */
static double harness_busbw(int32_t n, double bytes, int64_t t_ns) {
  return 2.0 * (n - 1) / n * bytes / ((double)t_ns * 1e-9);
}

#endif /* DS_TESTS_COLL_HARNESS_H */
