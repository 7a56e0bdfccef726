/*
 * NCCL's point-to-point channels and protocol (see nccl_model.h): the
 * channels per peer and per operation, the LL threshold, and the protocol
 * a send runs.
 */
#include "sim/coll/nccl_model.h"

#include <math.h>
#include <string.h>

#include "base/units.h"
#include "sim/coll/nccl_model_impl.h"

/* ---- point-to-point (src/enqueue.cc addP2pToPlan, src/graph/paths.cc) ---- */

/* p2p (src/graph/paths.cc, src/enqueue.cc, src/include/device.h):
 * NCCL_P2P_PER_CHANNEL_NET_BW, NCCL_P2P_LL_THRESHOLD,
 * NCCL_MAX_DEV_WORK_P2P_PER_BATCH. */
#define P2P_PER_CHANNEL_NET_GBPS 14.0
#define P2P_LL_THRESHOLD_BYTES 16384.0
#define P2P_PER_BATCH 8

static int32_t pow2_up(int32_t x) {
  int32_t p = 1;
  while (p < x && p < (1 << 30)) p <<= 1;
  return p;
}

/* ncclTopoGetNchannels for a peer reached by `route`: NVLink: 2 per NVLink
 * of the path (at least 2); PCIe (or host memory): 2; network: 2, or one
 * per NIC, or one per 14 GB/s of NIC (NCCL_P2P_PER_CHANNEL_NET_BW), the
 * most. The NVLink count is the path's bandwidth over the raw per-link rate
 * (paths.cc:935-936 at v2.30.7-1: NCCL's path bandwidth, count x
 * ncclTopoNVLinkBw, over ncclTopoNVLinkBw, the same ratio; a 3090 pair's
 * 56.25 GB/s is 4 links of 14.0625, 8 channels). */
static int32_t peer_channels(const struct ds_topo *t, const struct ds_nccl_nvlink *nv,
                             const int32_t *route, int32_t len) {
  double bw = INFINITY, nic_bw = 0;
  int pci = 0, net = 0;
  for (int32_t k = 0; k < len; k++) {
    const struct ds_link *l = &t->links[route[k]];
    bw = fmin(bw, l->bw_bytes_per_s);
    if (strcmp(l->kind, "ib") == 0) {
      net = 1;
      if (nic_bw == 0) nic_bw = l->bw_bytes_per_s;
    } else if (strcmp(l->kind, "nvlink") != 0) {
      pci = 1;
    }
  }
  if (net) {
    int32_t per_bw = (int32_t)ceil(nic_bw / (P2P_PER_CHANNEL_NET_GBPS * DS_UNITS_GBPS) - 1e-9);
    return per_bw > 2 ? per_bw : 2;
  }
  if (pci) return 2;
  int32_t links = (int32_t)floor(fmin(bw / (nv->raw_gbps * DS_UNITS_GBPS) + 1e-9, INT32_MAX / 4));
  return 2 * (links > 1 ? links : 1);
}

ds_status ds_nccl_p2p_build(struct ds_topo *topo, const struct ds_ring *ring,
                            const struct ds_nccl_model *m, struct ds_nccl_p2p *out,
                            struct ds_err *err) {
  memset(out, 0, sizeof *out);
  /* paths.cc ncclTopoComputeP2pChannelsPerPeer: the least over the peers
   * (here: of member 0, whose routes are every member's on the shipped
   * templates), a power of two */
  int32_t route[64], len, per_peer = 1 << 30;
  for (int32_t i = 1; i < ring->n; i++) {
    DS_CHECK(ds_topo_route(topo, ring->gpus[0], ring->gpus[i], route, 64, &len, err));
    int32_t c = peer_channels(topo, &m->nvlink, route, len);
    if (c < per_peer) per_peer = c;
  }
  per_peer = pow2_up(per_peer);
  /* ncclTopoComputeP2pChannels: p2pnChannels = pow2Up(nChannels) */
  int32_t p2p_channels =
      pow2_up(m->channels < DS_NCCL_MAXCHANNELS ? m->channels : DS_NCCL_MAXCHANNELS);
  if (m->nnodes > 1) {
    int32_t batches = (ring->n + P2P_PER_BATCH - 1) / P2P_PER_BATCH;
    while (per_peer * batches > p2p_channels && per_peer > 1) per_peer /= 2;
  } else if (per_peer > p2p_channels) {
    per_peer = p2p_channels;
  }
  out->p2p_channels = p2p_channels;
  out->per_peer_channels = per_peer;
  /* init.cc computeBuffSizes: 128 KiB across nodes and off NVLink, 512 KiB
   * when every GPU pair is on NVLink */
  out->chunk_bytes = m->nnodes > 1 || m->hw_intra != DS_HOP_NVLINK ? 128.0 * 1024
                                                                     : 512.0 * 1024;
  out->nranks = ring->n;
  out->nnodes = m->nnodes;
  return DS_OK;
}

int32_t ds_nccl_p2p_channels(const struct ds_nccl_p2p *q, double bytes) {
  /* scheduleP2pTasksToPlan: one channel per op when all peers would not
   * fit on p2pnChannels */
  int32_t nmin = q->per_peer_channels;
  while ((int64_t)nmin * q->nranks > q->p2p_channels && nmin > 1) nmin /= 2;
  if (!(bytes > 0)) return 1;
  /* addP2pToPlan: parts of at least chunk/8 (chunk/2 across nodes), split
   * further while a part exceeds 32 chunks (one chunk across nodes) */
  double min_part = q->nnodes > 1 ? q->chunk_bytes / 2 : q->chunk_bytes / 8;
  double max_part = q->nnodes > 1 ? q->chunk_bytes : q->chunk_bytes * 32;
  double by_size = ceil(bytes / min_part);
  int32_t nch = by_size < nmin ? (int32_t)by_size : nmin;
  if (nch < 1) nch = 1;
  double part = fmax(min_part, ceil(bytes / nch));
  while (part > max_part && nch <= q->per_peer_channels / 2) {
    nch *= 2;
    part = ceil(bytes / nch);
  }
  return nch;
}

enum ds_proto ds_nccl_p2p_choose(const struct ds_nccl_p2p *q, double bytes) {
  return bytes <= ds_nccl_p2p_channels(q, bytes) * P2P_LL_THRESHOLD_BYTES ? DS_PROTO_LL
                                                                           : DS_PROTO_SIMPLE;
}

void ds_nccl_p2p_proto(const struct ds_nccl_model *m, const struct ds_nccl_p2p *q,
                       enum ds_proto p, double bytes, struct ds_coll_proto *out) {
  ds_nccl_coll_proto(m, p, bytes, out);
  out->channels = ds_nccl_p2p_channels(q, bytes);
  /* no size ramp: it was measured on all-reduce rings */
  out->start_lat_ns = m->base_lat_ns[p] + m->extra.launch_ns;
}
