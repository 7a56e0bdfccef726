/*
 * The closed forms that the parameter server's tests (test_ps_shard.c,
 * test_ps_step.c, test_ps_cli.c) work by hand on tests/data/tiny-topo.yaml
 * (tests/ps_fixture.h describes it): a link's bandwidth
 * and a route's latency, the GPUs' memory bandwidth, the loss's and the
 * first launch's time, a flow's rounding, and the sync period with one
 * server. The functions are static inline so that an includer need not
 * use them all.
 */
#ifndef DS_TESTS_PS_HAND_H
#define DS_TESTS_PS_HAND_H

#include <math.h>

#define B_LINK 10e9   /* bytes/s per link */
#define ALPHA_NS 2000 /* two links of 1 us */
#define MEM_BW 1000e9
/* The loss of every test model: it reads the 1e6-byte output of each
 * sample (the last layer's act_bytes) and writes its gradient, 2e6 bytes
 * per sample at 1000 GB/s: 2 us per sample. */
#define LOSS_NS(batch) (2e6 * (batch) / MEM_BW * 1e9)

/* The first forward layer waits for its host launch (host_launch, 20 us by
 * default) after the step starts; the later launches run ahead of the
 * test models' 100+ us kernels. */
#define LAUNCH_NS 20e3

/* Data phase of a flow, rounded once as the network model does. */
static inline double rnd(double ns) { return floor(ns + 0.5); }

/* Sync period with one server on GPU 0, W workers, shard S bytes, compute
 * C ns, every worker alike: the W-1 remote pushes share the server GPU's
 * ingress link (each at B/(W-1)): a + (W-1) S/B; worker 0's push is a
 * local copy (2S/mem_bw, shorter); the update reads and writes (8 + W + 1)
 * S bytes at 1000 GB/s; the pulls share its egress link alike. */
static inline double sync_period_ns(double c_ns, double S, int W) {
  double push = ALPHA_NS + rnd((W - 1) * S / B_LINK * 1e9);
  double upd = rnd((8 + W + 1) * S / MEM_BW * 1e9);
  return c_ns + push + upd + push;
}

#endif /* DS_TESTS_PS_HAND_H */
