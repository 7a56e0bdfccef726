/*
 * The collective tests' harness (test_coll*.c): one collective alone on its
 * own engine and network, every member entering at t = 0. Linked into every
 * test binary (Makefile: TEST_SUPPORT_OBJ); failures are Criterion
 * assertions. The topology is loaded once per test and outlives the runs.
 */
#ifndef DS_TESTS_COLL_HARNESS_H
#define DS_TESTS_COLL_HARNESS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim/coll/coll.h"
#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "sim/net/net.h"
#include "sim/net/topo.h"

#define HARNESS_MAXR 64

struct harness {
  struct ds_topo *topo; /* owned; the test frees it (ds_topo_free) */
  struct ds_ring ring;
  struct ds_engine *eng;
  struct ds_net *net;
  struct ds_coll *coll;
  int64_t done_ns[HARNESS_MAXR]; /* each member's finish; -1 before it */
};

/* The ds_coll_done_fn every harness collective reports to (owner: the
 * harness); fails the test when a member finishes twice. */
void harness_on_member(void *owner, int32_t member);

/* Zeroes h and loads path, relative to the repository root, e.g.
 * "tests/data/ring8.yaml". */
void harness_load(struct harness *h, const char *path);

/* Zeroes h and loads the topology whose text is `text` (written to a
 * temporary file, removed after) with the GPU table at gpus (relative to
 * the repository root; NULL: the one beside the file). */
void harness_load_text(struct harness *h, const char *text, const char *gpus);

/* Builds into *out the ring over GPUs 0..n-1 of t in rank order. */
void harness_ring(struct ds_topo *t, int32_t n, struct ds_ring *out);

/* Builds h->ring over gpus[0..n-1] (NULL: GPUs 0..n-1) and a fresh engine
 * and network (mode) for it; the caller then creates h->coll on them, with
 * harness_on_member and h as its on_done and owner. */
void harness_open(struct harness *h, const int32_t *gpus, int32_t n, enum ds_net_mode mode);

/* Enters members 0..n-1 of h->coll at t = 0 and runs the engine to the end;
 * fails the test (naming `what`) unless every member finished once and no
 * flow is left. Frees the collective, network and engine, keeps h->ring;
 * returns the last member's finish (ns), h->done_ns holding every one's. */
int64_t harness_finish(struct harness *h, int32_t n, const char *what);

/* Frees what h holds but its topology; safe after any of the calls above. */
void harness_release(struct harness *h);

/* Opens h on GPUs 0..n-1 over the max-min network and creates the
 * collective of spec (its topo, ring, net, on_done and owner are filled in
 * here); DS_OK or what ds_coll_new said (err filled). */
ds_status harness_new_spec(struct harness *h, int32_t n, struct ds_coll_spec spec,
                           struct ds_err *err);

/* harness_new_spec for the all-reduce `algo`. */
ds_status harness_new(struct harness *h, enum ds_ar_algo algo, int32_t n, double bytes,
                      int32_t root, int32_t chunks, enum ds_coll_model model,
                      const struct ds_coll_proto *proto, struct ds_err *err);

/* Runs the all-reduce `algo` over GPUs 0..n-1; returns the last member's
 * finish (ns), h->done_ns holding every member's. */
int64_t harness_run(struct harness *h, enum ds_ar_algo algo, int32_t n, double bytes,
                    int32_t root, int32_t chunks, enum ds_coll_model model,
                    const struct ds_coll_proto *proto);

/* The same for a collective of any kind (the all-reduce: its ring). */
int64_t harness_run_kind(struct harness *h, enum ds_coll_kind kind, int32_t n, double bytes,
                         int32_t root, int32_t chunks, enum ds_coll_model model);

/* The bound on an all-reduce's busbw without in-network reduction: any
 * algorithm makes every rank send 2(N-1)/N S at least (Patarasuk and Yuan's
 * lower bound), so busbw = 2(N-1)/N S/T <= what a GPU can inject, the sum
 * of its outgoing links (the smallest over the first n GPUs). On a switch,
 * where a GPU has one link, it is the ring's bottleneck link. */
double harness_inject_bw(const struct ds_topo *t, int32_t n);

/* busbw of an all-reduce of `bytes` over n ranks that took t_ns. */
double harness_busbw(int32_t n, double bytes, int64_t t_ns);

/* Runs the all-reduce `algo` (root as given) over every GPU of the
 * topology at path, at 4 KiB, 1 MiB and 256 MiB, and fails the test where
 * its busbw passes harness_inject_bw. */
void harness_check_inject_bound(const char *path, enum ds_ar_algo algo, int32_t root);

#endif /* DS_TESTS_COLL_HARNESS_H */
