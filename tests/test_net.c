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

Test(net, single_flow_is_latency_plus_size_over_bandwidth) {
  /* 10 MB over a 10 GB/s link with 5 us latency: 5 us + 1 ms exactly. */
  struct harness h;
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  cr_assert_eq(ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 5000, 0, 0), DS_OK);
  ds_engine_run(h.eng, INT64_MAX);
  cr_assert_eq(h.done_ns[0], 1005000);
  cr_assert_eq(ds_net_flows_pending(h.net), 0);
  teardown_h(&h);
}

Test(net, two_equal_flows_share_a_link_in_half) {
  /* Two 10 MB flows on one 10 GB/s link: 5 GB/s each, both end at 2 ms. */
  struct harness h;
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 0);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 1);
  ds_engine_run(h.eng, INT64_MAX);
  cr_assert_eq(h.done_ns[0], 2000000);
  cr_assert_eq(h.done_ns[1], 2000000);
  teardown_h(&h);
}

Test(net, short_flow_leaves_and_long_flow_speeds_up) {
  /* 10 MB and 5 MB on one 10 GB/s link: the short one ends at 1 ms (5 MB
   * at 5 GB/s), then the long one has 5 MB left alone at 10 GB/s: 1.5 ms. */
  struct harness h;
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 0);
  ds_net_flow_start(h.net, L0, NULL, 1, 5e6, 0, 0, 1);
  ds_engine_run(h.eng, INT64_MAX);
  cr_assert_eq(h.done_ns[1], 1000000);
  cr_assert_eq(h.done_ns[0], 1500000);
  teardown_h(&h);
}

Test(net, maxmin_gives_the_unused_share_to_the_other_flow) {
  /* f0 crosses link 0 (10 GB/s); f1 crosses links 0 and 1 (4 GB/s). Max-min:
   * f1 is held to 4 by link 1, f0 takes the remaining 6 of link 0. */
  struct harness h;
  double caps[] = {10e9, 4e9};
  setup(&h, caps, 2, DS_NET_MAXMIN);
  ds_net_flow_start(h.net, L0, NULL, 1, 60e6, 0, 0, 0);
  ds_net_flow_start(h.net, L01, NULL, 2, 40e6, 0, 0, 1);
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
  double caps[] = {9e9, 2e9};
  setup(&h, caps, 2, DS_NET_MAXMIN);
  ds_net_flow_start(h.net, L0, NULL, 1, 1e9, 0, 0, 0);
  ds_net_flow_start(h.net, L0, NULL, 1, 1e9, 0, 0, 1);
  ds_net_flow_start(h.net, L01, NULL, 2, 1e9, 0, 0, 2);
  ds_engine_run(h.eng, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 0), 3.5e9, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 1), 3.5e9, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 2), 2e9, 1);
  teardown_h(&h);
}

Test(net, multiplicity_counts_each_crossing) {
  /* One flow crossing a 10 GB/s link twice moves at 5 GB/s: 10 MB in 2 ms. */
  struct harness h;
  double caps[] = {10e9};
  static const uint32_t twice[] = {2};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  ds_net_flow_start(h.net, L0, twice, 1, 10e6, 0, 0, 0);
  ds_engine_run(h.eng, INT64_MAX);
  cr_assert_eq(h.done_ns[0], 2000000);
  teardown_h(&h);
}

Test(net, latency_phase_uses_no_bandwidth) {
  /* f0 (10 MB) starts at once; f1 (10 MB) waits 1 ms of latency. Until 1 ms
   * f0 runs alone at 10 GB/s (10 MB in 1 ms), so it is done exactly when f1
   * begins, and f1 then runs alone: 1 ms + 1 ms. */
  struct harness h;
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 0);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 1e6, 0, 1);
  ds_engine_run(h.eng, INT64_MAX);
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
    double caps[] = {10e9, 3e9, 7e9};
    setup(&h, caps, 3, m == 0 ? DS_NET_MAXMIN : DS_NET_CONSTANT);
    ds_net_flow_start(h.net, L0, NULL, 1, 12345678, 1500, 0, 0);
    ds_net_flow_start(h.net, L1, NULL, 1, 3e6, 0, 0, 1);
    ds_net_flow_start(h.net, L2, NULL, 1, 7e3, 250, 0, 2);
    ds_engine_run(h.eng, INT64_MAX);
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
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_CONSTANT);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 0);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 1);
  ds_engine_run(h.eng, INT64_MAX);
  cr_assert_eq(h.done_ns[0], 1000000);
  cr_assert_eq(h.done_ns[1], 1000000);
  teardown_h(&h);
}

Test(net, zero_byte_flow_ends_after_its_latency) {
  struct harness h;
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  ds_net_flow_start(h.net, L0, NULL, 1, 0, 777, 0, 0);
  ds_engine_run(h.eng, INT64_MAX);
  cr_assert_eq(h.done_ns[0], 777);
  teardown_h(&h);
}

Test(net, trailing_latency_frees_the_link_before_delivery) {
  /* f0 has 1 ms of trailing latency, f1 none; both 10 MB on one 10 GB/s
   * link: they share it from 0 and both leave at 2 ms; f1 is delivered at
   * once, f0 1 ms later. */
  struct harness h;
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 1e6, 0);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 1);
  ds_engine_run(h.eng, INT64_MAX);
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
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  cr_assert_eq(ds_net_flow_start_capped(h.net, L0, NULL, 1, 10e6, 0, 0, 2e9, 0), DS_OK);
  cr_assert_eq(ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 1), DS_OK);
  ds_engine_run(h.eng, INT64_MAX);
  cr_assert_eq(h.done_ns[1], 1250000);
  cr_assert_eq(h.done_ns[0], 5000000);
  teardown_h(&h);
}

Test(net, cap_above_the_fair_share_changes_nothing) {
  /* Same link, both capped at 6 GB/s: the fair share (5 GB/s) is below the
   * cap, so each ends at 10 MB / 5 GB/s = 2 ms, as uncapped. */
  struct harness h;
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  ds_net_flow_start_capped(h.net, L0, NULL, 1, 10e6, 0, 0, 6e9, 0);
  ds_net_flow_start_capped(h.net, L0, NULL, 1, 10e6, 0, 0, 6e9, 1);
  ds_engine_run(h.eng, INT64_MAX);
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
  double caps[] = {10e9};
  const uint32_t two[] = {2};
  setup(&h, caps, 1, DS_NET_MAXMIN);
  ds_net_flow_start_capped(h.net, L0, two, 1, 10e6, 0, 0, 3e9, 0);
  ds_net_flow_start(h.net, L0, NULL, 1, 10e6, 0, 0, 1);
  ds_engine_run(h.eng, 1); /* the resolve at t = 0 */
  cr_assert_float_eq(ds_net_flow_rate(h.net, 0), 3e9, 1);
  cr_assert_float_eq(ds_net_flow_rate(h.net, 1), 4e9, 1);
  teardown_h(&h);
  setup(&h, caps, 1, DS_NET_MAXMIN);
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
  double caps[] = {10e9};
  setup(&h, caps, 1, DS_NET_CONSTANT);
  ds_net_flow_start_capped(h.net, L0, NULL, 1, 10e6, 0, 0, 4e9, 0);
  ds_net_flow_start_capped(h.net, NULL, NULL, 0, 1e6, 0, 0, 1e9, 1);
  ds_engine_run(h.eng, INT64_MAX);
  cr_assert_eq(h.done_ns[0], 2500000);
  cr_assert_eq(h.done_ns[1], 1000000);
  teardown_h(&h);
  /* A cap must be positive. */
  setup(&h, caps, 1, DS_NET_MAXMIN);
  cr_assert_eq(ds_net_flow_start_capped(h.net, L0, NULL, 1, 1, 0, 0, 0, 0), DS_EINTERNAL);
  teardown_h(&h);
}
