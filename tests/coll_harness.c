/* See coll_harness.h. */
#include "coll_harness.h"

#include <unistd.h>

#include "tests/support.h"

static void on_sent(void *owner, uint64_t tag) {
  struct harness *h = owner;
  cr_assert_eq(ds_coll_flow_sent(h->coll, (int32_t)(tag & 0xffffffffu)), DS_OK);
}

static void on_flow(void *owner, uint64_t tag) {
  struct harness *h = owner;
  cr_assert_eq(ds_coll_flow_done(h->coll, (int32_t)(tag & 0xffffffffu)), DS_OK);
}

void harness_on_member(void *owner, int32_t member) {
  struct harness *h = owner;
  cr_assert_eq(h->done_ns[member], -1, "member %d finished twice", member);
  h->done_ns[member] = ds_engine_now(h->eng);
}

static void handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)eng;
  ds_net_handle_event(((struct harness *)ctx)->net, ev);
}

void harness_load(struct harness *h, const char *path) {
  struct ds_err err = {0};
  memset(h, 0, sizeof *h);
  cr_assert_eq(ds_topo_load(path, NULL, &h->topo, &err), DS_OK, "%s", err.msg);
}

void harness_load_text(struct harness *h, const char *text, const char *gpus) {
  char path[] = "/tmp/ddpsim-harness-topo-XXXXXX";
  struct ds_err err = {0};
  memset(h, 0, sizeof *h);
  ds_test_write_temp(path, text);
  ds_status st = ds_topo_load(path, gpus, &h->topo, &err);
  unlink(path);
  cr_assert_eq(st, DS_OK, "%s", err.msg);
}

void harness_ring(struct ds_topo *t, int32_t n, struct ds_ring *out) {
  struct ds_err err = {0};
  int32_t gpus[HARNESS_MAXR];
  cr_assert_leq(n, HARNESS_MAXR);
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  cr_assert_eq(ds_ring_build(t, gpus, n, out, &err), DS_OK, "%s", err.msg);
}

void harness_open(struct harness *h, const int32_t *gpus, int32_t n, enum ds_net_mode mode) {
  struct ds_err err = {0};
  cr_assert_leq(n, HARNESS_MAXR);
  if (gpus) cr_assert_eq(ds_ring_build(h->topo, gpus, n, &h->ring, &err), DS_OK, "%s", err.msg);
  else harness_ring(h->topo, n, &h->ring);
  cr_assert_eq(ds_engine_new(0, handle, h, &h->eng), DS_OK);
  cr_assert_eq(ds_net_new(h->topo, h->eng, mode, on_flow, on_sent, h, &h->net), DS_OK);
  h->coll = NULL;
  for (int32_t i = 0; i < n; i++) h->done_ns[i] = -1;
}

int64_t harness_finish(struct harness *h, int32_t n, const char *what) {
  for (int32_t i = 0; i < n; i++) cr_assert_eq(ds_coll_enter(h->coll, i), DS_OK);
  cr_assert_eq(ds_engine_run(h->eng, INT64_MAX), DS_OK);
  int64_t last = 0;
  for (int32_t i = 0; i < n; i++) {
    cr_assert_geq(h->done_ns[i], 0, "%s: member %d never finished", what, i);
    if (h->done_ns[i] > last) last = h->done_ns[i];
  }
  cr_assert_eq(ds_net_flows_pending(h->net), 0, "%s: flows left", what);
  ds_coll_free(h->coll);
  ds_net_free(h->net);
  ds_engine_free(h->eng);
  h->coll = NULL;
  h->net = NULL;
  h->eng = NULL;
  return last;
}

void harness_release(struct harness *h) {
  ds_coll_free(h->coll);
  ds_net_free(h->net);
  ds_engine_free(h->eng);
  ds_ring_release(&h->ring);
  h->coll = NULL;
  h->net = NULL;
  h->eng = NULL;
}

ds_status harness_new_spec(struct harness *h, int32_t n, struct ds_coll_spec spec,
                           struct ds_err *err) {
  harness_open(h, NULL, n, DS_NET_MAXMIN);
  spec.topo = h->topo;
  spec.ring = &h->ring;
  spec.net = h->net;
  spec.on_done = harness_on_member;
  spec.owner = h;
  return ds_coll_new(&spec, &h->coll, err);
}

ds_status harness_new(struct harness *h, enum ds_ar_algo algo, int32_t n, double bytes,
                      int32_t root, int32_t chunks, enum ds_coll_model model,
                      const struct ds_coll_proto *proto, struct ds_err *err) {
  struct ds_coll_spec spec = {.kind = DS_COLL_ALLREDUCE, .model = model, .chunks = chunks,
                              .bytes = bytes, .root = root, .proto = proto, .algo = algo};
  return harness_new_spec(h, n, spec, err);
}

/* Creates spec's collective on GPUs 0..n-1, runs it and frees it all. */
static int64_t run_spec(struct harness *h, int32_t n, struct ds_coll_spec spec,
                        const char *what) {
  struct ds_err err = {0};
  cr_assert_eq(harness_new_spec(h, n, spec, &err), DS_OK, "%s: %s", what, err.msg);
  int64_t last = harness_finish(h, n, what);
  harness_release(h);
  return last;
}

int64_t harness_run(struct harness *h, enum ds_ar_algo algo, int32_t n, double bytes,
                    int32_t root, int32_t chunks, enum ds_coll_model model,
                    const struct ds_coll_proto *proto) {
  struct ds_coll_spec spec = {.kind = DS_COLL_ALLREDUCE, .model = model, .chunks = chunks,
                              .bytes = bytes, .root = root, .proto = proto, .algo = algo};
  return run_spec(h, n, spec, ds_ar_algo_name(algo));
}

int64_t harness_run_kind(struct harness *h, enum ds_coll_kind kind, int32_t n, double bytes,
                         int32_t root, int32_t chunks, enum ds_coll_model model) {
  struct ds_coll_spec spec = {.kind = kind, .model = model, .chunks = chunks, .bytes = bytes,
                              .root = root};
  const struct ds_coll_desc *d = ds_coll_desc_of(kind);
  return run_spec(h, n, spec, d ? d->name : "?");
}

double harness_inject_bw(const struct ds_topo *t, int32_t n) {
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

double harness_busbw(int32_t n, double bytes, int64_t t_ns) {
  return 2.0 * (n - 1) / n * bytes / ((double)t_ns * 1e-9);
}

void harness_check_inject_bound(const char *path, enum ds_ar_algo algo, int32_t root) {
  struct harness h;
  harness_load(&h, path);
  int32_t n = h.topo->n_gpus;
  double bound = harness_inject_bw(h.topo, n);
  const double sizes[] = {4096, 1 << 20, 256.0 * (1 << 20)};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    int64_t t = harness_run(&h, algo, n, sizes[s], root, 1, DS_COLL_FLOW, NULL);
    double busbw = harness_busbw(n, sizes[s], t);
    cr_assert_leq(busbw, bound * (1 + 1e-9), "%s %s S=%g: busbw %g > %g", path,
                  ds_ar_algo_name(algo), sizes[s], busbw, bound);
  }
  ds_topo_free(h.topo);
}
