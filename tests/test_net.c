/*
 * Network model: hand-solved flow completions and max-min shares.
 * Links are built by hand (the net reads only topo->links), so every
 * expected number below follows from the numbers in the test.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "sim/net/net.h"

#define MAX_FLOWS 16

struct harness {
  struct ds_topo topo;
  struct ds_link links[8];
  struct ds_engine *eng;
  struct ds_net *net;
  int64_t done_ns[MAX_FLOWS];
  int n_done;
};

static void on_done(void *owner, uint64_t tag) {
  struct harness *h = owner;
  h->done_ns[tag] = ds_engine_now(h->eng);
  h->n_done++;
}

static void handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)eng;
  ds_net_handle_event(((struct harness *)ctx)->net, ev);
}

/* Links 0..n-1 with the given capacities (bytes/s), latency 0. */
static void setup(struct harness *h, const double *caps, int n,
                  enum ds_net_mode mode) {
  memset(h, 0, sizeof *h);
  for (int i = 0; i < n; i++)
    h->links[i] = (struct ds_link){0, 1, caps[i], 0, "test"};
  h->topo.links = h->links;
  h->topo.n_links = n;
  cr_assert_eq(ds_engine_new(0, handle, h, &h->eng), DS_OK);
  cr_assert_eq(ds_net_new(&h->topo, h->eng, mode, on_done, NULL, h, &h->net), DS_OK);
  for (int i = 0; i < MAX_FLOWS; i++) h->done_ns[i] = -1;
}

static void teardown_h(struct harness *h) {
  ds_net_free(h->net);
  ds_engine_free(h->eng);
}

static const int32_t L0[] = {0}, L1[] = {1}, L01[] = {0, 1}, L2[] = {2};

/* A flow's route: the links of r, an array above, and their number. */
#define ON(r) .route = (r), .n = (int32_t)(sizeof(r) / sizeof(r)[0])

/* One flow of a test: its route (n links; mult, when not NULL, how often it
 * crosses each), its bytes, leading and trailing latency (ns), and its cap
 * (bytes/s; 0 for none: started with ds_net_flow_start, not _capped). */
struct flow {
  const int32_t *route;
  int32_t n;
  double bytes, lead_ns, trail_ns, cap;
  const uint32_t *mult;
};

/* setup(h, caps, n_caps, mode), then flows[i] started with tag i, in
 * order, each accepted; nothing has run yet. */
static void start_flows(struct harness *h, const double *caps, int n_caps,
                        enum ds_net_mode mode, const struct flow *flows, int n_flows) {
  setup(h, caps, n_caps, mode);
  for (int i = 0; i < n_flows; i++) {
    const struct flow *f = &flows[i];
    if (f->cap > 0)
      cr_assert_eq(ds_net_flow_start_capped(h->net, f->route, f->mult, f->n, f->bytes,
                                            f->lead_ns, f->trail_ns, f->cap, (uint64_t)i),
                   DS_OK, "flow %d", i);
    else
      cr_assert_eq(ds_net_flow_start(h->net, f->route, f->mult, f->n, f->bytes, f->lead_ns,
                                     f->trail_ns, (uint64_t)i),
                   DS_OK, "flow %d", i);
  }
}

/* start_flows, then the engine run until nothing is left. */
static void run_flows(struct harness *h, const double *caps, int n_caps,
                      enum ds_net_mode mode, const struct flow *flows, int n_flows) {
  start_flows(h, caps, n_caps, mode, flows, n_flows);
  ds_engine_run(h->eng, INT64_MAX);
}

/* One 10 GB/s link, the most tests' network. */
static const double LINK_10G[] = {10e9};

Test(net, single_flow_is_latency_plus_size_over_bandwidth) {
  /* 10 MB over a 10 GB/s link with 5 us latency: 5 us + 1 ms exactly. */
  struct harness h;
  run_flows(&h, LINK_10G, 1, DS_NET_MAXMIN,
            (struct flow[]){{ON(L0), .bytes = 10e6, .lead_ns = 5000}}, 1);
  cr_assert_eq(h.done_ns[0], 1005000);
  cr_assert_eq(ds_net_flows_pending(h.net), 0);
  teardown_h(&h);
}

Test(net, two_equal_flows_share_a_link_in_half) {
  /* Two 10 MB flows on one 10 GB/s link: 5 GB/s each, both end at 2 ms. */
  struct harness h;
  run_flows(&h, LINK_10G, 1, DS_NET_MAXMIN,
            (struct flow[]){{ON(L0), .bytes = 10e6}, {ON(L0), .bytes = 10e6}}, 2);
  cr_assert_eq(h.done_ns[0], 2000000);
  cr_assert_eq(h.done_ns[1], 2000000);
  teardown_h(&h);
}

Test(net, short_flow_leaves_and_long_flow_speeds_up) {
  /* 10 MB and 5 MB on one 10 GB/s link: the short one ends at 1 ms (5 MB
   * at 5 GB/s), then the long one has 5 MB left alone at 10 GB/s: 1.5 ms. */
  struct harness h;
  run_flows(&h, LINK_10G, 1, DS_NET_MAXMIN,
            (struct flow[]){{ON(L0), .bytes = 10e6}, {ON(L0), .bytes = 5e6}}, 2);
  cr_assert_eq(h.done_ns[1], 1000000);
  cr_assert_eq(h.done_ns[0], 1500000);
  teardown_h(&h);
}

Test(net, maxmin_gives_the_unused_share_to_the_other_flow) {
  /* f0 crosses link 0 (10 GB/s); f1 crosses links 0 and 1 (4 GB/s). Max-min:
   * f1 is held to 4 by link 1, f0 takes the remaining 6 of link 0. */
  struct harness h;
  start_flows(&h, (double[]){10e9, 4e9}, 2, DS_NET_MAXMIN,
              (struct flow[]){{ON(L0), .bytes = 60e6}, {ON(L01), .bytes = 40e6}}, 2);
  ds_engine_run(h.eng, 1); /* past the resolve at t = 0 */
  cr_assert_float_eq(ds_net_flow_rate(h.net, 0), 6e9, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 1), 4e9, 1);
  ds_engine_run(h.eng, INT64_MAX);
  /* Both need exactly 10 ms at those rates. */
  cr_assert_eq(h.done_ns[0], 10000000);
  cr_assert_eq(h.done_ns[1], 10000000);
  teardown_h(&h);
}

Test(net, three_flows_two_levels) {
  /* Links: 0 (9 GB/s) carries f0, f1, f2; link 1 (2 GB/s) carries f2 only
   * ... f2 gets 2, f0 and f1 split the remaining 7: 3.5 each. */
  struct harness h;
  start_flows(
      &h, (double[]){9e9, 2e9}, 2, DS_NET_MAXMIN,
      (struct flow[]){{ON(L0), .bytes = 1e9}, {ON(L0), .bytes = 1e9}, {ON(L01), .bytes = 1e9}}, 3);
  ds_engine_run(h.eng, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 0), 3.5e9, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 1), 3.5e9, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 2), 2e9, 1);
  teardown_h(&h);
}

Test(net, multiplicity_counts_each_crossing) {
  /* One flow crossing a 10 GB/s link twice moves at 5 GB/s: 10 MB in 2 ms. */
  struct harness h;
  static const uint32_t twice[] = {2};
  run_flows(&h, LINK_10G, 1, DS_NET_MAXMIN, (struct flow[]){{ON(L0), .bytes = 10e6, .mult = twice}},
            1);
  cr_assert_eq(h.done_ns[0], 2000000);
  teardown_h(&h);
}

Test(net, latency_phase_uses_no_bandwidth) {
  /* f0 (10 MB) starts at once; f1 (10 MB) waits 1 ms of latency. Until 1 ms
   * f0 runs alone at 10 GB/s (10 MB in 1 ms), so it is done exactly when f1
   * begins, and f1 then runs alone: 1 ms + 1 ms. */
  struct harness h;
  run_flows(&h, LINK_10G, 1, DS_NET_MAXMIN,
            (struct flow[]){{ON(L0), .bytes = 10e6}, {ON(L0), .bytes = 10e6, .lead_ns = 1e6}}, 2);
  cr_assert_eq(h.done_ns[0], 1000000);
  cr_assert_eq(h.done_ns[1], 2000000);
  teardown_h(&h);
}

Test(net, constant_model_agrees_with_maxmin_without_contention) {
  /* Three flows on three different links, with latencies: nothing is
   * shared, so alpha-beta and max-min must give identical times. */
  int64_t got[2][3];
  for (int m = 0; m < 2; m++) {
    struct harness h;
    run_flows(&h, (double[]){10e9, 3e9, 7e9}, 3, m == 0 ? DS_NET_MAXMIN : DS_NET_CONSTANT,
              (struct flow[]){{ON(L0), .bytes = 12345678, .lead_ns = 1500},
                              {ON(L1), .bytes = 3e6},
                              {ON(L2), .bytes = 7e3, .lead_ns = 250}},
              3);
    for (int i = 0; i < 3; i++) got[m][i] = h.done_ns[i];
    teardown_h(&h);
  }
  cr_assert_eq(got[0][0], got[1][0]);
  cr_assert_eq(got[0][1], got[1][1]);
  cr_assert_eq(got[0][2], got[1][2]);
  /* and both equal latency + bytes / bandwidth, rounded once */
  cr_assert_eq(got[0][1], 1000000);
  cr_assert_eq(got[0][0], 1500 + (int64_t)llround(12345678 / 10e9 * 1e9));
}

Test(net, constant_model_ignores_contention) {
  /* Alpha-beta gives each of two flows on one link the whole link: both
   * end at 1 ms where max-min says 2 ms. */
  struct harness h;
  run_flows(&h, LINK_10G, 1, DS_NET_CONSTANT,
            (struct flow[]){{ON(L0), .bytes = 10e6}, {ON(L0), .bytes = 10e6}}, 2);
  cr_assert_eq(h.done_ns[0], 1000000);
  cr_assert_eq(h.done_ns[1], 1000000);
  teardown_h(&h);
}

Test(net, zero_byte_flow_ends_after_its_latency) {
  struct harness h;
  run_flows(&h, LINK_10G, 1, DS_NET_MAXMIN, (struct flow[]){{ON(L0), .bytes = 0, .lead_ns = 777}},
            1);
  cr_assert_eq(h.done_ns[0], 777);
  teardown_h(&h);
}

Test(net, trailing_latency_frees_the_link_before_delivery) {
  /* f0 has 1 ms of trailing latency, f1 none; both 10 MB on one 10 GB/s
   * link: they share it from 0 and both leave at 2 ms; f1 is delivered at
   * once, f0 1 ms later. */
  struct harness h;
  run_flows(&h, LINK_10G, 1, DS_NET_MAXMIN,
            (struct flow[]){{ON(L0), .bytes = 10e6, .trail_ns = 1e6}, {ON(L0), .bytes = 10e6}}, 2);
  cr_assert_eq(h.done_ns[1], 2000000);
  cr_assert_eq(h.done_ns[0], 3000000);
  cr_assert_eq(ds_net_flows_pending(h.net), 0);
  teardown_h(&h);
}

/* Per-flow rate caps: a cap is a private link of that capacity. */

Test(net, capped_flow_leaves_the_rest_to_the_other) {
  /* One 10 GB/s link, two 10 MB flows, flow 0 capped at 2 GB/s. Expected,
   * because max-min freezes flow 0 at its cap and flow 1 takes the other
   * 8 GB/s: flow 1 ends at 10 MB / 8 GB/s = 1.25 ms; flow 0 stays at its
   * cap throughout: 10 MB / 2 GB/s = 5 ms. */
  struct harness h;
  run_flows(&h, LINK_10G, 1, DS_NET_MAXMIN,
            (struct flow[]){{ON(L0), .bytes = 10e6, .cap = 2e9}, {ON(L0), .bytes = 10e6}}, 2);
  cr_assert_eq(h.done_ns[1], 1250000);
  cr_assert_eq(h.done_ns[0], 5000000);
  teardown_h(&h);
}

Test(net, cap_above_the_fair_share_changes_nothing) {
  /* Same link, both capped at 6 GB/s: the fair share (5 GB/s) is below the
   * cap, so each ends at 10 MB / 5 GB/s = 2 ms, as uncapped. */
  struct harness h;
  run_flows(
      &h, LINK_10G, 1, DS_NET_MAXMIN,
      (struct flow[]){{ON(L0), .bytes = 10e6, .cap = 6e9}, {ON(L0), .bytes = 10e6, .cap = 6e9}}, 2);
  cr_assert_eq(h.done_ns[0], 2000000);
  cr_assert_eq(h.done_ns[1], 2000000);
  teardown_h(&h);
}

Test(net, capped_multiplicity_equals_separate_capped_flows) {
  /* 10 GB/s link. (a) one flow of multiplicity 2 capped at 3 GB/s and one
   * uncapped flow; (b) two separate flows capped at 3 GB/s and one uncapped.
   * Expected, because progressive filling raises every rate to 3 GB/s
   * (link load 3*3 = 9), freezes the capped ones, then gives the uncapped
   * flow the last 1 GB/s: 3 and 4 GB/s in both. */
  struct harness h;
  const uint32_t two[] = {2};
  start_flows(
      &h, LINK_10G, 1, DS_NET_MAXMIN,
      (struct flow[]){{ON(L0), .bytes = 10e6, .cap = 3e9, .mult = two}, {ON(L0), .bytes = 10e6}},
      2);
  ds_engine_run(h.eng, 1); /* the resolve at t = 0 */
  cr_assert_float_eq(ds_net_flow_rate(h.net, 0), 3e9, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 1), 4e9, 1);
  teardown_h(&h);
  setup(&h, LINK_10G, 1, DS_NET_MAXMIN);
  ds_net_flow_start_capped(h.net, L0, NULL, 1, 10e6, 0, 0, 3e9, 0);
  ds_net_flow_start_capped(h.net, L0, NULL, 1, 10e6, 0, 0, 3e9, 2);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 1);
  ds_engine_run(h.eng, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 0), 3e9, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 2), 3e9, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 1), 4e9, 1);
  teardown_h(&h);
}

Test(net, cap_in_alpha_beta_and_without_links) {
  /* alpha-beta: rate = min(bottleneck, cap): 10 MB at min(10, 4) GB/s =
   * 2.5 ms. A flow with no links moves at its cap: 1 MB at 1 GB/s = 1 ms. */
  struct harness h;
  run_flows(&h, LINK_10G, 1, DS_NET_CONSTANT,
            (struct flow[]){{ON(L0), .bytes = 10e6, .cap = 4e9}, {.bytes = 1e6, .cap = 1e9}}, 2);
  cr_assert_eq(h.done_ns[0], 2500000);
  cr_assert_eq(h.done_ns[1], 1000000);
  teardown_h(&h);
  /* A cap must be positive. */
  setup(&h, LINK_10G, 1, DS_NET_MAXMIN);
  cr_assert_eq(ds_net_flow_start_capped(h.net, L0, NULL, 1, 1, 0, 0, 0, 0), DS_EINTERNAL);
  teardown_h(&h);
}

/* ---- the incremental solver against the full re-solve ------------------
 *
 * The reference mode (ds__net_set_reference) re-solves every moving flow at
 * every event with the same progressive filling: the straightforward solver
 * the incremental one replaced. Random flow sets run through both must give
 * the same end times to the nanosecond, and the same rates after every
 * re-solve. Rates are compared to 1e-9 relative, not bit for bit: a full
 * re-solve raises one water level for all components at once, so a
 * component's level is summed over steps that other components set, which
 * differs from its own steps in the last bits (and the saturation test has
 * a 1e-9 relative tolerance). */

#define RND_LINKS 10
#define RND_FLOWS 60
#define EV_START 100 /* test event: start flow a */

struct rnd_flow {
  int32_t links[9];
  uint32_t mult[9];
  int32_t n;
  int has_mult;
  double bytes, lead_ns, trail_ns, cap;
  int64_t start_ns; /* -1: started by the flow `parent` when it is sent */
  int32_t child;    /* flow started when this one is sent, or -1 */
};

struct rnd_run {
  struct ds_topo topo;
  struct ds_link links[RND_LINKS];
  struct ds_engine *eng;
  struct ds_net *net;
  const struct rnd_flow *spec;
  int64_t done_ns[RND_FLOWS], sent_ns[RND_FLOWS];
  double *rates; /* after every re-solve: every flow's rate (-1: not moving) */
  int32_t n_rates, cap_rates;
};

static uint64_t rnd_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static double rnd_unit(uint64_t *s) { return (double)(rnd_next(s) >> 11) * 0x1p-53; }

static void rnd_start(struct rnd_run *r, int32_t j) {
  const struct rnd_flow *f = &r->spec[j];
  cr_assert_eq(ds_net_flow_start_capped(r->net, f->links, f->has_mult ? f->mult : NULL,
                                        f->n, f->bytes, f->lead_ns, f->trail_ns, f->cap,
                                        (uint64_t)j),
               DS_OK);
}

static void rnd_on_done(void *owner, uint64_t tag) {
  struct rnd_run *r = owner;
  cr_assert_eq(r->done_ns[tag], -1);
  r->done_ns[tag] = ds_engine_now(r->eng);
}

static void rnd_on_sent(void *owner, uint64_t tag) {
  struct rnd_run *r = owner;
  r->sent_ns[tag] = ds_engine_now(r->eng);
  if (r->spec[tag].child >= 0) rnd_start(r, r->spec[tag].child);
}

static void rnd_handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)eng;
  struct rnd_run *r = ctx;
  if (ev->kind == EV_START) {
    rnd_start(r, ev->a);
    return;
  }
  ds_net_handle_event(r->net, ev);
  if (ev->kind != DS_EV_NET_RESOLVE) return;
  if (r->n_rates + RND_FLOWS > r->cap_rates) {
    r->cap_rates = 2 * r->cap_rates + RND_FLOWS;
    r->rates = realloc(r->rates, (size_t)r->cap_rates * sizeof *r->rates);
    cr_assert_not_null(r->rates);
  }
  for (int32_t j = 0; j < RND_FLOWS; j++)
    r->rates[r->n_rates++] = ds_net_flow_rate(r->net, (uint64_t)j);
}

/* A random flow set: 10 links of 1 to 20 GB/s; 60 flows over 0 to 4
 * distinct links, one in ten over 7 to 9 (longer than the net's flat
 * member slots, FLAT_LINKS in sim/net/net_impl.h), some crossing a link up
 * to 3 times, 0 or 10 kB to 100 MB, with or without leading and trailing
 * latency and a cap; most start at random times in the first 2 ms, the rest
 * when another is sent. */
static void rnd_make(uint64_t seed, double *caps, struct rnd_flow *spec) {
  uint64_t s = seed * 0x9E3779B97F4A7C15u + 1;
  for (int l = 0; l < RND_LINKS; l++) caps[l] = 1e9 * (1 + 19 * rnd_unit(&s));
  for (int32_t j = 0; j < RND_FLOWS; j++) {
    struct rnd_flow *f = &spec[j];
    memset(f, 0, sizeof *f);
    f->n = (int32_t)(rnd_next(&s) % 5);
    if (f->n == 0 && rnd_unit(&s) < 0.5) f->n = 1;
    if (rnd_unit(&s) < 0.1) f->n = 7 + (int32_t)(rnd_next(&s) % 3);
    for (int32_t k = 0; k < f->n; k++) {
      int32_t l;
      int dup;
      do {
        l = (int32_t)(rnd_next(&s) % RND_LINKS);
        dup = 0;
        for (int32_t q = 0; q < k; q++) dup |= f->links[q] == l;
      } while (dup);
      f->links[k] = l;
      f->mult[k] = 1 + (uint32_t)(rnd_next(&s) % 3);
    }
    f->has_mult = rnd_unit(&s) < 0.2;
    f->bytes = rnd_unit(&s) < 0.05 ? 0 : 1e4 * pow(1e4, rnd_unit(&s));
    f->lead_ns = rnd_unit(&s) < 0.5 ? 0 : 20e3 * rnd_unit(&s);
    f->trail_ns = rnd_unit(&s) < 0.5 ? 0 : 5e3 * rnd_unit(&s);
    f->cap = rnd_unit(&s) < 0.7 ? INFINITY : 0.5e9 + 9.5e9 * rnd_unit(&s);
    if (f->n == 0 && isinf(f->cap)) f->cap = 5e9;
    f->start_ns = (int64_t)(2e6 * rnd_unit(&s));
    f->child = -1;
  }
  /* About a quarter start when an earlier-numbered flow is sent. */
  for (int32_t j = 1; j < RND_FLOWS; j++) {
    int32_t p = (int32_t)(rnd_next(&s) % (uint64_t)j);
    if (rnd_unit(&s) < 0.25 && spec[p].child < 0) {
      spec[p].child = j;
      spec[j].start_ns = -1;
    }
  }
}

static void rnd_run(struct rnd_run *r, const double *caps, const struct rnd_flow *spec,
                    enum ds_net_mode mode, int reference, int no_shortcut) {
  memset(r, 0, sizeof *r);
  for (int l = 0; l < RND_LINKS; l++) r->links[l] = (struct ds_link){0, 1, caps[l], 0, "test"};
  r->topo.links = r->links;
  r->topo.n_links = RND_LINKS;
  r->spec = spec;
  for (int32_t j = 0; j < RND_FLOWS; j++) r->done_ns[j] = r->sent_ns[j] = -1;
  cr_assert_eq(ds_engine_new(0, rnd_handle, r, &r->eng), DS_OK);
  cr_assert_eq(ds_net_new(&r->topo, r->eng, mode, rnd_on_done, rnd_on_sent, r, &r->net), DS_OK);
  ds__net_set_reference(r->net, reference);
  ds__net_set_no_shortcut(r->net, no_shortcut);
  for (int32_t j = 0; j < RND_FLOWS; j++) {
    if (spec[j].start_ns < 0) continue;
    struct ds_event ev = {.kind = EV_START, .a = j};
    cr_assert_eq(ds_engine_schedule(r->eng, spec[j].start_ns, &ev, NULL), DS_OK);
  }
  cr_assert_eq(ds_engine_run(r->eng, INT64_MAX), DS_OK);
  cr_assert_eq(ds_net_flows_pending(r->net), 0);
  for (int32_t j = 0; j < RND_FLOWS; j++) cr_assert_geq(r->done_ns[j], 0, "flow %d never ended", j);
}

static void rnd_free(struct rnd_run *r) {
  ds_net_free(r->net);
  ds_engine_free(r->eng);
  free(r->rates);
}

static void compare_with_reference(enum ds_net_mode mode) {
  static struct rnd_run inc, ref;
  struct rnd_flow spec[RND_FLOWS];
  double caps[RND_LINKS];
  uint64_t solved_inc = 0, solved_ref = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    rnd_make(seed, caps, spec);
    rnd_run(&ref, caps, spec, mode, 1, 0);
    rnd_run(&inc, caps, spec, mode, 0, 0);
    for (int32_t j = 0; j < RND_FLOWS; j++) {
      cr_assert_eq(inc.done_ns[j], ref.done_ns[j], "seed %llu flow %d: delivered at %lld, "
                   "reference %lld", (unsigned long long)seed, j, (long long)inc.done_ns[j],
                   (long long)ref.done_ns[j]);
      cr_assert_eq(inc.sent_ns[j], ref.sent_ns[j], "seed %llu flow %d: sent", (unsigned long long)seed, j);
    }
    cr_assert_eq(inc.n_rates, ref.n_rates, "seed %llu: re-solves differ", (unsigned long long)seed);
    for (int32_t i = 0; i < inc.n_rates; i++) {
      double a = inc.rates[i], b = ref.rates[i];
      cr_assert(a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)),
                "seed %llu, re-solve %d, flow %d: rate %.17g, reference %.17g",
                (unsigned long long)seed, i / RND_FLOWS, i % RND_FLOWS, a, b);
    }
    solved_inc += ds__net_solved(inc.net);
    solved_ref += ds__net_solved(ref.net);
    rnd_free(&ref);
    rnd_free(&inc);
  }
  /* And it does less: only the components that changed. */
  cr_assert_lt(solved_inc, solved_ref);
}

Test(net, incremental_maxmin_matches_the_full_resolve_on_random_flow_sets) {
  compare_with_reference(DS_NET_MAXMIN);
}

Test(net, incremental_alpha_beta_matches_the_full_resolve_on_random_flow_sets) {
  compare_with_reference(DS_NET_CONSTANT);
}

/* Two runs of one random flow set, with and without a shortcut: the same
 * delivery and send times, and the same rates at every re-solve. */
static void expect_same_run(const struct rnd_run *fast, const struct rnd_run *full,
                            uint64_t seed) {
  for (int32_t j = 0; j < RND_FLOWS; j++) {
    cr_assert_eq(fast->done_ns[j], full->done_ns[j], "seed %llu flow %d: delivered",
                 (unsigned long long)seed, j);
    cr_assert_eq(fast->sent_ns[j], full->sent_ns[j], "seed %llu flow %d: sent",
                 (unsigned long long)seed, j);
  }
  cr_assert_eq(fast->n_rates, full->n_rates, "seed %llu: re-solves differ",
               (unsigned long long)seed);
  for (int32_t i = 0; i < fast->n_rates; i++)
    cr_assert(fast->rates[i] == full->rates[i], "seed %llu, re-solve %d, flow %d: %.17g, %.17g",
              (unsigned long long)seed, i / RND_FLOWS, i % RND_FLOWS, fast->rates[i],
              full->rates[i]);
}

/* The shortcut for a component whose flows all stop at one cap
 * (all_at_one_cap in sim/net/net_maxmin.c) must give progressive filling's very
 * doubles: random flow sets as above, every capped flow at one of two caps
 * (0.1 GB/s, below most links' shares, so many components take the
 * shortcut; 2 GB/s, above some, so others do not), run with and without
 * the shortcut: every rate after every re-solve equal bit for bit, every
 * flow sent and delivered at the same nanosecond. */
Test(net, one_cap_shortcut_gives_progressive_fillings_rates_bit_for_bit) {
  static struct rnd_run fast, full;
  struct rnd_flow spec[RND_FLOWS];
  double caps[RND_LINKS];
  uint64_t shortcut = 0, general = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    rnd_make(seed, caps, spec);
    for (int32_t j = 0; j < RND_FLOWS; j++)
      if (isfinite(spec[j].cap) || seed % 2 == 0) spec[j].cap = j % 4 == 0 ? 2e9 : 0.1e9;
    rnd_run(&full, caps, spec, DS_NET_MAXMIN, 0, 1);
    rnd_run(&fast, caps, spec, DS_NET_MAXMIN, 0, 0);
    expect_same_run(&fast, &full, seed);
    cr_assert_eq(ds__net_shortcut_solved(full.net), 0);
    shortcut += ds__net_shortcut_solved(fast.net);
    general += ds__net_solved(fast.net) - ds__net_shortcut_solved(fast.net);
    rnd_free(&full);
    rnd_free(&fast);
  }
  /* both ways were taken, many times */
  cr_assert_gt(shortcut, 1000, "%llu", (unsigned long long)shortcut);
  cr_assert_gt(general, 1000, "%llu", (unsigned long long)general);
}

/* The all-at-their-caps fast path (ds__net_resolve: every link's members
 * at one finite cap within its bandwidth, every flow but the new ones at
 * its cap: only the new get a rate, the others keep rate, mark and due
 * time) must give what re-solving every changed component gives: random
 * flow sets as above with every flow capped, at 0.1 GB/s (most links
 * clean: the fast path) or 0.6 GB/s (a link with several flows saturates
 * now and then: the general path between), run with and without it. Issue
 * #12: the component walks it saves made a per-flow tree all-reduce grow
 * as the square of its nodes. */
Test(net, the_all_at_caps_fast_path_gives_the_same_times_and_rates) {
  static struct rnd_run fast, full;
  struct rnd_flow spec[RND_FLOWS];
  double caps[RND_LINKS];
  uint64_t took = 0, general = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    rnd_make(seed, caps, spec);
    for (int32_t j = 0; j < RND_FLOWS; j++) spec[j].cap = seed % 2 ? 0.1e9 : 0.6e9;
    rnd_run(&full, caps, spec, DS_NET_MAXMIN, 0, 1);
    rnd_run(&fast, caps, spec, DS_NET_MAXMIN, 0, 0);
    expect_same_run(&fast, &full, seed);
    cr_assert_eq(ds__net_fast_resolves(full.net), 0);
    took += ds__net_fast_resolves(fast.net);
    general += ds__net_solved(full.net) > ds__net_solved(fast.net);
    rnd_free(&full);
    rnd_free(&fast);
  }
  /* the fast path was taken many times, and it re-solved fewer flows */
  cr_assert_gt(took, 1000, "%llu", (unsigned long long)took);
  cr_assert_gt(general, 100, "%llu", (unsigned long long)general);
}

Test(net, flows_ending_within_a_nanosecond_end_together) {
  /* 10 GB/s links: f0 has 10,000 B (1000 ns), f1 10,009 B (1000.9 ns, due
   * 1001). At 1000 ns f1 has 9 B left, less than a nanosecond's worth (10
   * B): the completion at 1000 ns ends it too, as the full re-solve did. */
  struct harness h;
  run_flows(&h, (double[]){10e9, 10e9}, 2, DS_NET_MAXMIN,
            (struct flow[]){{ON(L0), .bytes = 10000}, {ON(L1), .bytes = 10009}}, 2);
  cr_assert_eq(h.done_ns[0], 1000);
  cr_assert_eq(h.done_ns[1], 1000);
  teardown_h(&h);
}

Test(net, a_slow_flow_within_its_byte_slack_ends_with_the_others) {
  /* Link 1 carries 400 B/s (a 1e-6 B slack is 2.5 ns of it). f1 has
   * 400 * 1002.4e-9 B: due at 1002 ns, but at 1000 ns 9.6e-7 B are left,
   * within a nanosecond's worth plus 1e-6 B, so f0's completion at 1000 ns
   * ends it (the heap's 2 ns window alone would miss it: slow flows are
   * checked one by one). */
  struct harness h;
  run_flows(&h, (double[]){10e9, 400}, 2, DS_NET_MAXMIN,
            (struct flow[]){{ON(L0), .bytes = 10000}, {ON(L1), .bytes = 400 * 1002.4e-9}}, 2);
  cr_assert_eq(h.done_ns[0], 1000);
  cr_assert_eq(h.done_ns[1], 1000);
  teardown_h(&h);
}

Test(net, a_flow_on_other_links_keeps_its_rate_and_end_time) {
  /* f0 alone on link 0 (10 GB/s, 10 MB: 1 ms). Ten 1 MB flows follow one
   * another on link 1 (each started when the previous is sent). f0 is
   * solved once; each of the others once when it starts (its link is
   * empty when it ends): 11 rates in all, and f0 still ends at 1 ms. */
  struct harness h;
  start_flows(&h, (double[]){10e9, 10e9}, 2, DS_NET_MAXMIN,
              (struct flow[]){{ON(L0), .bytes = 10e6}}, 1);
  for (int i = 1; i <= 10; i++) {
    ds_net_flow_start(h.net, L1, NULL, 1, 1e6, 0, 0, (uint64_t)i);
    ds_engine_run(h.eng, ds_engine_now(h.eng) + 100000);
    cr_assert_eq(h.done_ns[i], 100000 * i);
  }
  ds_engine_run(h.eng, INT64_MAX);
  cr_assert_eq(h.done_ns[0], 1000000);
  cr_assert_eq(ds__net_solved(h.net), 11);
  teardown_h(&h);
}

static int order_log[8], n_order;

static void order_done(void *owner, uint64_t tag) {
  (void)owner;
  order_log[n_order++] = (int)tag;
}

static void order_sent(void *owner, uint64_t tag) {
  struct harness *h = owner;
  /* f1's departure schedules a test event at the time of the deliveries. */
  if (tag == 1) {
    struct ds_event ev = {.kind = EV_START};
    cr_assert_eq(ds_engine_schedule(h->eng, ds_engine_now(h->eng) + 500, &ev, NULL), DS_OK);
  }
}

static void order_handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  (void)eng;
  if (ev->kind == EV_START) order_log[n_order++] = 99;
  else ds_net_handle_event(((struct harness *)ctx)->net, ev);
}

Test(net, deliveries_batched_in_the_order_of_one_event_per_flow) {
  /* Four equal flows on four links end together at 1000 ns, each with
   * 500 ns of trailing latency. One event per delivery would fire
   * done0, then the event f1's departure scheduled for 1500 ns (it was
   * scheduled before done1's), then done1, done2, done3: the batches keep
   * that order, with two delivery events instead of four. */
  struct harness h;
  memset(&h, 0, sizeof h);
  for (int i = 0; i < 4; i++) h.links[i] = (struct ds_link){0, 1, 10e9, 0, "test"};
  h.topo.links = h.links;
  h.topo.n_links = 4;
  static const int32_t L3[] = {3};
  const int32_t *routes[] = {L0, L1, L2, L3};
  cr_assert_eq(ds_engine_new(0, order_handle, &h, &h.eng), DS_OK);
  cr_assert_eq(ds_net_new(&h.topo, h.eng, DS_NET_MAXMIN, order_done, order_sent, &h, &h.net),
               DS_OK);
  n_order = 0;
  for (int i = 0; i < 4; i++)
    cr_assert_eq(ds_net_flow_start(h.net, routes[i], NULL, 1, 10000, 0, 500, (uint64_t)i), DS_OK);
  cr_assert_eq(ds_engine_run(h.eng, INT64_MAX), DS_OK);
  cr_assert_eq(ds_engine_now(h.eng), 1500);
  int want[] = {0, 99, 1, 2, 3};
  cr_assert_eq(n_order, 5);
  for (int i = 0; i < 5; i++) cr_assert_eq(order_log[i], want[i], "position %d", i);
  /* resolve, complete, resolve, two deliveries, the test event */
  cr_assert_eq(ds_engine_fired(h.eng), 6);
  teardown_h(&h);
}

/* Flow 2's delivery starts flow 3 on link 0 (a step that waits for its
 * chunk), as a ring's next send waits for the previous one's receipt. */
static void chain_done(void *owner, uint64_t tag) {
  struct harness *h = owner;
  on_done(owner, tag);
  if (tag == 2)
    cr_assert_eq(ds_net_flow_start(h->net, L0, NULL, 1, 9000, 0, 0, 3), DS_OK);
}

/* Links 0 (9 GB/s) and 1 (nic_bw); flows 0 and 1, 9000 B each on link 0,
 * and flow 2, 4000 B on link 1, all at t = 0; flow 3 as chain_done says.
 * Runs to the end; the flows' done times are in h. */
static void run_join(struct harness *h, double nic_bw) {
  memset(h, 0, sizeof *h);
  h->links[0] = (struct ds_link){0, 1, 9e9, 0, "port"};
  h->links[1] = (struct ds_link){0, 1, nic_bw, 0, "nic"};
  h->topo.links = h->links;
  h->topo.n_links = 2;
  for (int i = 0; i < MAX_FLOWS; i++) h->done_ns[i] = -1;
  cr_assert_eq(ds_engine_new(0, handle, h, &h->eng), DS_OK);
  cr_assert_eq(ds_net_new(&h->topo, h->eng, DS_NET_MAXMIN, chain_done, NULL, h, &h->net), DS_OK);
  cr_assert_eq(ds_net_flow_start(h->net, L0, NULL, 1, 9000, 0, 0, 0), DS_OK);
  cr_assert_eq(ds_net_flow_start(h->net, L0, NULL, 1, 9000, 0, 0, 1), DS_OK);
  cr_assert_eq(ds_net_flow_start(h->net, L1, NULL, 1, 4000, 0, 0, 2), DS_OK);
  cr_assert_eq(ds_engine_run(h->eng, INT64_MAX), DS_OK);
}

Test(net, a_faster_link_can_delay_flows_that_do_not_cross_it) {
  /* Why a faster NIC can slow a per-flow ring (docs/collectives.md, "A
   * faster link can make a collective slower"): a GPU's NVSwitch port
   * (link 0, 9 GB/s) carries two rails' step sends (flows 0 and 1); a third
   * rail's send (flow 3) waits for its chunk over the NIC (flow 2, 4000 B).
   * Max-min gives flows 0 and 1 4.5 GB/s each until flow 3 joins at t_j
   * (the NIC's delivery), then 3 GB/s each, so they end at
   *   t_j + (9000 B - 4.5 GB/s * t_j) / 3 GB/s = 3 us - t_j / 2,
   * and flow 3 ends when the port has moved all 27000 B, 3 us, whatever
   * t_j. Expected, because of that: NIC 4 GB/s, t_j = 1 us: flows 0 and 1
   * end at 2.5 us; NIC 8 GB/s, t_j = 0.5 us: at 2.75 us, later, while flow
   * 3 gains nothing. Equal shares are no priority for the sends the next
   * steps wait on; the per-flow ring's steps are such sends. */
  struct harness h;
  run_join(&h, 4e9);
  cr_assert_eq(h.done_ns[2], 1000);
  cr_assert_eq(h.done_ns[0], 2500);
  cr_assert_eq(h.done_ns[1], 2500);
  cr_assert_eq(h.done_ns[3], 3000);
  teardown_h(&h);
  run_join(&h, 8e9);
  cr_assert_eq(h.done_ns[2], 500);
  cr_assert_eq(h.done_ns[0], 2750);
  cr_assert_eq(h.done_ns[1], 2750);
  cr_assert_eq(h.done_ns[3], 3000);
  teardown_h(&h);
}
