/*
 * The network model: flows over routes of directed links.
 *
 * A flow waits out its leading latency (it occupies no bandwidth meanwhile),
 * then moves its bytes at a rate set by the model, then waits out its
 * trailing latency before it is delivered. A leading latency stands for
 * per-message overheads that keep the link idle; a trailing one for
 * propagation: the link is free for the next message while the bytes are
 * still on their way. Rates:
 *   - DS_NET_MAXMIN: concurrent flows share every link max-min fairly
 *     (progressive filling), re-solved whenever a flow starts moving or
 *     ends, for the flows that share links (directly or through others)
 *     with the ones that changed; the others keep their rates. A flow
 *     may cross a link several times (multiplicity m: it then uses m
 *     times its rate there), which is how an aggregated collective
 *     stands for many symmetric flows at once.
 *   - DS_NET_CONSTANT: every flow gets its route's bottleneck, min(cap/m),
 *     as if alone: the alpha-beta model. The two agree whenever no link is
 *     shared, which the tests check.
 * Uncontended, a flow of S bytes over a route of bottleneck B with latency
 * L (leading, trailing or split) is delivered after exactly L + S/B
 * (each latency and the data phase rounded to the nanosecond once).
 */
#ifndef DS_NET_H
#define DS_NET_H

#include <stdint.h>

#include "base/status.h"
#include "sim/net/engine.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_net_mode { DS_NET_MAXMIN, DS_NET_CONSTANT };

struct ds_net;

/* Called when a flow has delivered its last byte; tag is the caller's. */
typedef void (*ds_net_done_fn)(void *owner, uint64_t tag);
/* Called when a flow's last byte has left (its links are free again),
 * before its trailing latency; at delivery when there is none. */
typedef void (*ds_net_sent_fn)(void *owner, uint64_t tag);

/* Creates a network over topo's links (topo is borrowed and must outlive
 * the net). Events go to eng, whose handler must pass every DS_EV_NET_*
 * event to ds_net_handle_event. */
ds_status ds_net_new(const struct ds_topo *topo, struct ds_engine *eng,
                     enum ds_net_mode mode, ds_net_done_fn on_done,
                     ds_net_sent_fn on_sent, void *owner,
                     struct ds_net **out);
void ds_net_free(struct ds_net *net);

/* Starts a flow now. links[0..n) are link ids of the topology and mult[i]
 * how many times the flow crosses links[i] (NULL means once each); both are
 * borrowed and must stay valid until the flow is sent. bytes >= 0,
 * latencies >= 0. n may be 0 (a flow with no links takes only its
 * latencies). on_sent (if any) and on_done are called for every flow. */
ds_status ds_net_flow_start(struct ds_net *net, const int32_t *links,
                            const uint32_t *mult, int32_t n, double bytes,
                            double lead_lat_ns, double trail_lat_ns,
                            uint64_t tag);

/* As ds_net_flow_start, with the flow's rate never above cap_bytes_per_s
 * (> 0; INFINITY for none). Under max-min the cap acts as a private link of
 * that capacity: a capped flow freezes at its cap and the others share what
 * it leaves (progressive filling). Under alpha-beta the rate is
 * min(bottleneck, cap). A flow with no links moves at its cap. */
ds_status ds_net_flow_start_capped(struct ds_net *net, const int32_t *links,
                                   const uint32_t *mult, int32_t n,
                                   double bytes, double lead_lat_ns,
                                   double trail_lat_ns, double cap_bytes_per_s,
                                   uint64_t tag);

/* Handles every DS_EV_NET_* event. */
void ds_net_handle_event(struct ds_net *net, const struct ds_event *ev);

/* Number of flows not yet done (waiting out latency or moving bytes). */
int32_t ds_net_flows_pending(const struct ds_net *net);
/* Current rate of a moving flow by tag, for tests; -1 when not moving. */
double ds_net_flow_rate(const struct ds_net *net, uint64_t tag);

/* Internal, for tests only: on, every event re-solves every moving flow
 * at once (the straightforward full re-solve the incremental one replaces),
 * as the reference the incremental solver is checked against. */
void ds__net_set_reference(struct ds_net *net, int on);
/* Internal, for tests only: on, every component is solved by progressive
 * filling, without the shortcut for one whose flows all stop at one cap
 * (which must give the very same doubles). */
void ds__net_set_no_shortcut(struct ds_net *net, int on);
/* Internal, for tests only: how many flow rates that shortcut gave. */
uint64_t ds__net_shortcut_solved(const struct ds_net *net);
/* Internal, for tests only: how many re-solves took the all-at-their-caps
 * fast path (every link capped-clean: only the new flows get a rate; off
 * with ds__net_set_no_shortcut). */
uint64_t ds__net_fast_resolves(const struct ds_net *net);
/* The work of a run on this network so far, as a ds_work_estimate_fn
 * (sim/net/engine.h; ctx: the struct ds_net): events fired, flows started,
 * flow rates re-solved. */
uint64_t ds_net_work_done(void *net, uint64_t fired);
/* Internal, for tests only: how many flow rates were computed so far (a
 * flow re-solved k times counts k). */
uint64_t ds__net_solved(const struct ds_net *net);

#ifdef __cplusplus
}
#endif

#endif /* DS_NET_H */
