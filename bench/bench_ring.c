/*
 * Benchmark of one ring all-reduce's simulation, apart from its set-up (a
 * benchmark, not a test).
 *
 * Loads a topology, builds the ring over its first N GPUs in id order (N
 * routes; no ring-order search), then simulates one all-reduce of S bytes
 * per flow and aggregated, and prints the CPU seconds of each phase and the
 * predicted time. The simulation phase is what sim/net and sim/coll cost;
 * `ddpsim collective` adds the set-up (ring order, NCCL's model) on top.
 *
 *   bench_ring TOPOLOGY N BYTES [flow|aggregate|both]   (DS_GPUS: a gpus.yaml)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/units.h"
#include "sim/coll/coll.h"
#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "sim/net/net.h"
#include "sim/net/topo.h"

struct run {
  struct ds_engine *eng;
  struct ds_net *net;
  struct ds_coll *coll;
  int32_t n_done;
  int64_t last_ns;
};

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void on_sent(void *owner, uint64_t tag) {
  struct run *r = owner;
  (void)ds_coll_flow_sent(r->coll, (int32_t)(tag & 0xffffffffu));
}

static void on_flow(void *owner, uint64_t tag) {
  struct run *r = owner;
  (void)ds_coll_flow_done(r->coll, (int32_t)(tag & 0xffffffffu));
}

static void on_member(void *owner, int32_t member) {
  struct run *r = owner;
  (void)member;
  r->n_done++;
  r->last_ns = ds_engine_now(r->eng);
}

static void handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)eng;
  ds_net_handle_event(((struct run *)ctx)->net, ev);
}

static int simulate(struct ds_topo *topo, const struct ds_ring *ring, double bytes,
                    enum ds_coll_model model) {
  struct run r = {0};
  double t0 = cpu_s();
  if (ds_engine_new(0, handle, &r, &r.eng) != DS_OK ||
      ds_net_new(topo, r.eng, DS_NET_MAXMIN, on_flow, on_sent, &r, &r.net) != DS_OK ||
      ds_coll_allreduce_new(ring, r.net, model, 1, bytes, 0, on_member, &r, &r.coll) != DS_OK) {
    fprintf(stderr, "bench_ring: set-up failed\n");
    return 1;
  }
  for (int32_t i = 0; i < ring->n; i++) (void)ds_coll_enter(r.coll, i);
  ds_status st = ds_engine_run(r.eng, INT64_MAX);
  double t1 = cpu_s();
  printf("ring_sim n=%d bytes=%.0f model=%s sim_cpu_s=%.4f events=%" PRIu64
         " time_us=%.3f members_done=%d status=%d\n",
         ring->n, bytes, model == DS_COLL_FLOW ? "flow" : "aggregate", t1 - t0,
         ds_engine_fired(r.eng), (double)r.last_ns / 1e3, r.n_done, (int)st);
  ds_coll_free(r.coll);
  ds_net_free(r.net);
  ds_engine_free(r.eng);
  return r.n_done == ring->n ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: bench_ring TOPOLOGY N BYTES [flow|aggregate|both]\n");
    return 2;
  }
  int32_t n = (int32_t)strtol(argv[2], NULL, 10);
  double bytes;
  const char *which = argc > 4 ? argv[4] : "both";
  if (ds_units_parse_bytes(argv[3], &bytes) != DS_OK || n < 1) {
    fprintf(stderr, "bench_ring: bad N or BYTES\n");
    return 2;
  }
  struct ds_err err = {0};
  struct ds_topo *topo = NULL;
  double t0 = cpu_s();
  if (ds_topo_load(argv[1], getenv("DS_GPUS"), &topo, &err) != DS_OK) {
    fprintf(stderr, "bench_ring: %s\n", err.msg);
    return 2;
  }
  if (n > topo->n_gpus) {
    fprintf(stderr, "bench_ring: %s has %d GPUs\n", argv[1], topo->n_gpus);
    return 2;
  }
  double t1 = cpu_s();
  int32_t *gpus = malloc((size_t)n * sizeof *gpus);
  struct ds_ring ring;
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  if (!gpus || ds_ring_build(topo, gpus, n, &ring, &err) != DS_OK) {
    fprintf(stderr, "bench_ring: %s\n", err.msg);
    return 1;
  }
  double t2 = cpu_s();
  printf("ring_setup n=%d load_cpu_s=%.4f ring_build_cpu_s=%.4f\n", n, t1 - t0, t2 - t1);
  int rc = 0;
  if (strcmp(which, "aggregate") != 0) rc |= simulate(topo, &ring, bytes, DS_COLL_FLOW);
  if (strcmp(which, "flow") != 0) rc |= simulate(topo, &ring, bytes, DS_COLL_AGGREGATE);
  ds_ring_release(&ring);
  free(gpus);
  ds_topo_free(topo);
  return rc;
}
