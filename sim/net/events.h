/*
 * Event kinds of the simulator. The engine calls one handler per engine;
 * the executor owns it and dispatches on these kinds.
 */
#ifndef DS_EVENTS_H
#define DS_EVENTS_H

enum ds_event_kind {
  DS_EV_NET_ACTIVATE = 1, /* a flow's latency has elapsed: a = flow slot */
  DS_EV_NET_RESOLVE,      /* re-solve flow rates after starts/ends */
  DS_EV_NET_COMPLETE,     /* the earliest active flow finishes */
  DS_EV_NET_DELIVER,      /* a sent flow's trailing latency has elapsed: b = tag */
  DS_EV_OP_DONE,          /* a compute op finishes: b = op index */
  DS_EV_RANK_RELEASE,     /* a rank may start its iteration: a = rank */
};

#endif /* DS_EVENTS_H */
