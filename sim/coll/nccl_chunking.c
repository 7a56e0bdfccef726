/*
 * What the simulation runs of NCCL's model (see nccl_model.h): the extra
 * mechanisms kept apart from NCCL's prediction (launch, slice syncs,
 * pipeline fill), NCCL's chunking, the protocol a collective runs
 * (ds_coll_proto: channels, wire factor, caps, start latency) per
 * algorithm, the ring's channel tuning and the broadcast/reduce chains.
 */
#include "sim/coll/nccl_model.h"

#include <math.h>
#include <string.h>

#include "sim/coll/nccl_model_impl.h"

/* NCCL's per-step payload of protocol p (src/enqueue.cc calcCollChunking:
 * buffSize / NCCL_STEPS, LL carries half its lines' bytes, LL128 15 of 16
 * words of each line). */
static double step_payload_bytes(enum ds_proto p) {
  double step = ds__nccl_buff_bytes[p] / ds__nccl_steps;
  if (p == DS_PROTO_LL) return step / 2;
  if (p == DS_PROTO_LL128) return step * 15 / 16;
  return step;
}

int32_t ds_nccl_nvls_ctas(const struct ds_nccl_model *m) {
  int32_t ctas = (unsigned)m->arch < DS_NCCL_ARCH_COUNT ? ds__nccl_nvls_ctas[m->arch] : 0;
  if (ctas < 1) ctas = m->nvls_channels > 0 ? m->nvls_channels : 1;
  return ctas;
}

/* ds_nccl_chunking, the ring's `steps` steps a loop: 2(N-1) for the
 * all-reduce (enqueue.cc ncclPatternRingTwice), N-1 for all-gather and
 * reduce-scatter (ncclPatternRing); both cut N chunks a loop and Simple's
 * chunk into CHUNKSTEPS / SLICESTEPS = 2 slices (collectives.h: ALLREDUCE_,
 * ALLGATHER_ and REDUCESCATTER_ alike). */
static void chunking(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                     double bytes, double ring_steps, struct ds_nccl_chunking *out) {
  memset(out, 0, sizeof *out);
  if (!(bytes > 0) || (int)p < 0 || p >= DS_PROTO_COUNT) return;
  int32_t n = m->nranks;
  if (a == DS_AR_NVLS) {
    /* calcCollChunking: nvlsChunkSize, halved while the buffer is small
     * against concurrentOps = CTAs * heads chunks; all_reduce.h: a loop
     * covers concurrentOps chunks, each CTA's scatter, reduce and gather
     * warps take one slice of it (ProtoSimple<1, 1>). */
    int32_t ctas = ds_nccl_nvls_ctas(m);
    double ops = (double)ctas * n, c = ds__nccl_nvls_chunk_bytes;
    if (m->nvls_tree) {
      /* NVLSTree: concurrentOps = CTAs * heads; the chunk starts at
       * nvlsTreeMaxChunkSize (src/transport/nvls.cc: 64 KiB from 4 nodes,
       * else the NVLS chunk) and halves at 32, 16, 4 and 1 loops. */
      ops = (double)ctas * m->nvls_channels;
      if (m->nnodes >= 4) c = 65536;
      if (bytes < 32 * ops * c && c > 262144) c = 262144;
      if (bytes < 16 * ops * c && c > 131072) c = 131072;
      if (bytes < 4 * ops * c && c > 65536) c = 65536;
      if (bytes < 1 * ops * c && c > 32768) c = 32768;
    } else {
      if (bytes < 64 * ops * c && c > 65536) c = 65536;
      if (bytes < 8 * ops * c && c > 32768) c = 32768;
      if (bytes < 2 * ops * c && c > 16384) c = 16384;
    }
    double loop = ops * c;
    double algbw = m->nvls_busbw_bytes_per_s * n / (2.0 * (n - 1));
    out->ctas = ctas;
    out->chunk_bytes = c;
    out->loops = ceil(bytes / loop);
    out->syncs = out->loops;
    /* The first loop passes scatter, then reduce, then gather; the steady
     * rate overlaps them, so the pipeline is one loop's time longer. */
    out->fill_ns = algbw > 0 ? fmin(bytes, loop) / algbw * 1e9 : 0;
    return;
  }
  int32_t ctas = m->channels > 0 ? m->channels : 1;
  double per_cta = bytes / ctas;
  out->ctas = ctas;
  if (a == DS_AR_TREE) {
    /* One chunk (stepSize) per loop; up and down on separate warps. */
    out->chunk_bytes = step_payload_bytes(p);
    out->loops = ceil(per_cta / out->chunk_bytes);
    out->syncs = p == DS_PROTO_SIMPLE ? out->loops : 0;
    return;
  }
  /* The ring (all_reduce.h runRing): a CTA's share in loops of N chunks,
   * ring_steps steps each; Simple splits a chunk into CHUNKSTEPS/SLICESTEPS
   * slices (prims_simple.h genericOp: empty slices still synchronise). */
  out->chunk_bytes = step_payload_bytes(p) *
                     (p == DS_PROTO_SIMPLE ? ds__nccl_allreduce_chunk_steps : 1);
  out->loops = ceil(per_cta / (n * out->chunk_bytes));
  if (p == DS_PROTO_SIMPLE)
    out->syncs = out->loops * ring_steps *
                 (ds__nccl_allreduce_chunk_steps / ds__nccl_allreduce_slice_steps);
}

void ds_nccl_chunking(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                      double bytes, struct ds_nccl_chunking *out) {
  chunking(m, a, p, bytes, 2.0 * (m->nranks - 1), out);
}

static double extra_ns(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                       double bytes, double ring_steps) {
  const struct ds_nccl_extra *e = &m->extra;
  double t = e->launch_ns;
  if (e->pipeline) {
    struct ds_nccl_chunking c;
    chunking(m, a, p, bytes, ring_steps, &c);
    t += c.syncs * e->sync_ns + c.fill_ns;
  }
  return t;
}

double ds_nccl_extra_ns(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                        double bytes) {
  return extra_ns(m, a, p, bytes, 2.0 * (m->nranks - 1));
}

/* The NVLS latency the simulation charges at the start: the NVLink part
 * (NVLSTree's network part is paid per network hop of its trees). */
static double nvls_sim_lat_ns(const struct ds_nccl_model *m) {
  return m->extra.pipeline ? m->nvls_hops_lat_ns : m->nvls_intra_lat_ns;
}

double ds_nccl_sim_algo_ns(const struct ds_nccl_model *m, enum ds_ar_algo a, enum ds_proto p,
                           double bytes) {
  double t = ds_nccl_predict_algo_ns(m, a, p, bytes);
  if (a == DS_AR_NVLS) t += nvls_sim_lat_ns(m) - m->nvls_intra_lat_ns;
  return t + ds_nccl_extra_ns(m, a, p, bytes);
}

void ds_nccl_coll_proto(const struct ds_nccl_model *m, enum ds_proto p,
                        double bytes, struct ds_coll_proto *out) {
  double bw = m->chan_bw_bytes_per_s, cap = bw, wire = 1;
  if (p == DS_PROTO_LL) {
    wire = 2;
    cap = fmin(bw, 2 * m->ll_max_bw_bytes_per_s / m->channels);
  } else if (p == DS_PROTO_LL128) {
    wire = 128.0 / 120.0;
    cap = fmin(bw, m->ll128_per_ch_max_bytes_per_s * wire);
  }
  *out = (struct ds_coll_proto){.proto = p, .channels = m->channels,
                                .wire_factor = wire, .chan_cap_bytes_per_s = cap,
                                .start_lat_ns = m->base_lat_ns[p] +
                                                ds_nccl_extra_ns(m, DS_AR_RING, p, bytes)};
  for (int h = 0; h < DS_HOP_CLASS_COUNT; h++) out->hop_lat_ns[h] = m->hw_lat_ns[h][p];
}

void ds_nccl_ring_kind_proto(const struct ds_nccl_model *m, enum ds_coll_kind k,
                             enum ds_proto p, double bytes, struct ds_coll_proto *out) {
  ds_nccl_coll_proto(m, p, bytes, out);
  if (k != DS_COLL_ALLGATHER && k != DS_COLL_REDUCESCATTER) return;
  out->start_lat_ns = m->base_lat_ns[p] + extra_ns(m, DS_AR_RING, p, bytes, m->nranks - 1.0);
}

void ds_nccl_algo_proto(const struct ds_nccl_model *m, enum ds_ar_algo a,
                        enum ds_proto p, double bytes, struct ds_coll_proto *out) {
  if (a == DS_AR_TREE) {
    double wire = p == DS_PROTO_LL ? 2 : p == DS_PROTO_LL128 ? 128.0 / 120.0 : 1;
    int32_t per_tree = (m->channels + 1) / 2;
    double algbw = m->tree_busbw_bytes_per_s[p] * 0.5 * ds__nccl_tree_correction_at(p, bytes);
    *out = (struct ds_coll_proto){.proto = p, .channels = per_tree, .wire_factor = wire,
                                  .chan_cap_bytes_per_s = wire * algbw / (2.0 * per_tree),
                                  .start_lat_ns = m->tree_base_lat_ns[p] +
                                                  ds_nccl_extra_ns(m, DS_AR_TREE, p, bytes)};
    for (int h = 0; h < DS_HOP_CLASS_COUNT; h++) out->hop_lat_ns[h] = m->tree_hw_lat_ns[h][p];
    return;
  }
  if (a == DS_AR_NVLS) {
    double algbw = m->nvls_busbw_bytes_per_s * m->nranks / (2.0 * (m->nranks - 1));
    if (m->nvls_tree_size_corrected) algbw *= ds__nccl_nvls_tree_correction_at(p, bytes);
    int32_t nch = m->nvls_channels > 0 ? m->nvls_channels : 1;
    *out = (struct ds_coll_proto){.proto = DS_PROTO_SIMPLE, .channels = nch,
                                  .wire_factor = 1,
                                  .chan_cap_bytes_per_s = algbw > 0 ? algbw / nch : INFINITY,
                                  .start_lat_ns = nvls_sim_lat_ns(m) +
                                                  ds_nccl_extra_ns(m, DS_AR_NVLS, p, bytes)};
    if (m->nvls_tree) out->hop_lat_ns[DS_HOP_NET] = m->nvls_net_hop_lat_ns;
    return;
  }
  ds_nccl_coll_proto(m, p, bytes, out);
}
/* src/graph/tuning.cc ncclTopoTuneModel: maxThreads (Ring: Simple 512, or
 * 256 where bwIntra * nChannels <= PCI_BW, 12 GB/s; LL 512; LL128 640;
 * NCCL_*_MAX_NTHREADS in src/include/device.h) and threadThresholds
 * (NCCL_LL_/LL128_/SIMPLE_THREAD_THRESHOLD in src/include/comm.h: 8, 8, 64
 * bytes per thread, Ring/LL's times nRanks). */
#define LL_THREADS 512
#define LL128_THREADS 640
#define PCI_BW_BYTES_PER_S 12e9
#define SIMPLE_THREADS 512
#define SIMPLE_THREADS_PCI 256

static double per_channel_threshold_bytes(const struct ds_nccl_model *m, enum ds_proto p) {
  if (p == DS_PROTO_LL) return LL_THREADS * 8.0 * m->nranks;
  if (p == DS_PROTO_LL128) return LL128_THREADS * 8.0;
  int nt = m->chan_bw_bytes_per_s * m->channels <= PCI_BW_BYTES_PER_S ? SIMPLE_THREADS_PCI
                                                                      : SIMPLE_THREADS;
  return nt * 64.0;
}

int32_t ds_nccl_ring_channels(const struct ds_nccl_model *m, enum ds_proto p, double bytes) {
  /* src/enqueue.cc topoGetAlgoInfo, "Ring/Tree channel tuning": one channel
   * less while nBytes < nc * nt * threadThreshold, down to one. */
  double per = per_channel_threshold_bytes(m, p);
  double nc = floor(bytes / per);
  if (nc < 1) nc = 1;
  return nc < m->channels ? (int32_t)nc : m->channels;
}

/* The channels a lone broadcast or reduce of `bytes` lands on (src/enqueue.cc
 * scheduleCollTasksToPlan): the plan cuts the buffer into cells of
 * MinTrafficPerChannel = 32 KiB of traffic (a broadcast's or reduce's traffic
 * is its bytes, ncclFuncTrafficPerByte 1; LL's counts four times, so its
 * cells hold 8 KiB); each channel takes the whole cells that reach
 * trafficPerChannel = divUp(max(32 KiB, traffic) / nc, 16) * 16 (nc =
 * ds_nccl_ring_channels, topoGetAlgoInfo's count) and the next channel the
 * rest: ceil(cells / cells per channel) channels, at most nChannels. A 512
 * KiB Simple broadcast on 12 channels: 43696 B of traffic per channel is 2
 * cells, so 8 channels of 64 KiB. The channels need not carry equal shares: the first and
 * middle channels take cells_per_channel whole cells and the last the rest
 * (less the last cell's padding), so 1 MiB Simple on 12 channels runs 11
 * channels, ten of 3 cells (98,304 B) and one of 2, not 11 of S/11 = 95,325
 * B. The slowest channel sets the finish, so the chain is paced by the
 * fullest channel's share (*fullest_bytes). */
#define MIN_TRAFFIC_PER_CHANNEL 32768.0
#define LL_TRAFFIC_PER_BYTE 4.0
static int32_t chain_split(const struct ds_nccl_model *m, enum ds_proto p, double bytes,
                           double *fullest_bytes) {
  int32_t nc = ds_nccl_ring_channels(m, p, bytes);
  double per_byte = p == DS_PROTO_LL ? LL_TRAFFIC_PER_BYTE : 1;
  double cell = ceil(ceil(MIN_TRAFFIC_PER_CHANNEL / per_byte) / 16) * 16;
  double cells = ceil(bytes / cell);
  double traffic = fmax(MIN_TRAFFIC_PER_CHANNEL, bytes * per_byte);
  double per_channel = ceil(floor(traffic / nc) / 16) * 16;
  double cells_per_channel = fmin(cells, ceil(per_channel / (cell * per_byte)));
  if (!(cells_per_channel >= 1)) {
    *fullest_bytes = bytes;
    return 1;
  }
  /* a lone task from channel 0: cellsLo = cellsPerChannel, the middle
   * channels cellsPerChannel each, cellsHi the rest (fewer), the last
   * cell's padding off the last channel. NCCL's overflow past nChannels
   * cannot arise here: cells_per_channel x nc x the cell's traffic >=
   * traffic, so cells_per_channel x nc >= cells. */
  *fullest_bytes = fmin(bytes, cells_per_channel * cell);
  double used = ceil(cells / cells_per_channel);
  return used < m->channels ? (int32_t)used : m->channels;
}

void ds_nccl_chain_proto(const struct ds_nccl_model *m, enum ds_proto p, double bytes,
                         struct ds_coll_proto *out) {
  ds_nccl_coll_proto(m, p, 0, out);
  out->channels = chain_split(m, p, bytes, &out->share_bytes);
  for (int h = 0; h < DS_HOP_CLASS_COUNT; h++)
    out->hop_lat_ns[h] = ds__nccl_hw_lat_us[h][RING][p] * US;
  out->start_lat_ns = m->base_lat_ns[p] + m->extra.launch_ns;
}

/* What a rank of the chain must hold before the next rank can start on it,
 * per channel (payload). Simple: one chunk, i.e. one step. broadcast.h and
 * reduce.h runRing hand prims one chunk per call (nelem = min(chunkCount,
 * what is left of the channel's share); chunkCount is calcCollChunking's
 * stepSize * BROADCAST_CHUNKSTEPS (1), which the ring gets unshrunk at any
 * size: only CollNet, NVLS, NVLSTree, Tree/LL128 and PAT halve it), and
 * prims_simple.h genericOp with SlicePerChunk = CHUNKSTEPS / SLICESTEPS = 1
 * copies that call as one slice (sliceSize at least nelem) and posts the
 * step flag the next rank waits on (postPeer) only after it: a share under
 * a step crosses each hop whole, store and forward. LL and LL128: the line
 * (8 B) and the warp's slice (1920 B) of ds_coll_forward_unit_bytes, as the
 * tree's: runRing's recvCopySend hands LLGenericOp / GenericOp a chunk, but
 * within it each thread (LL) or warp (LL128) forwards its own line or slice
 * as soon as its flags show, and the next rank's thread or warp of the same
 * index polls exactly those flags; nothing waits on the rest of the chunk
 * or on the other threads' trip. */
static double chain_piece_bytes(enum ds_proto p) {
  double unit = ds_coll_forward_unit_bytes(p);
  return unit > 0 ? unit : step_payload_bytes(p);
}

/* Simulation cost: a chain of N ranks cut into K pieces runs (N-1) K
 * flows. LL's 8 B lines would make a 4 MiB broadcast hundreds of thousands
 * of pieces, so LL and LL128 cut at most CHAIN_PIECES_PER_HOP (N-1) pieces
 * per channel, and at most DS_TREE_MAX_PIECES, as the tree caps its own
 * (8 per level, ds_coll_tree_pieces). Equal pieces of s/K cost a fill of
 * (N-1) s/K per chain where lines cost (N-1) lines: the bandwidth term is
 * (N+K-2)/K of s w / c against (s + (N-2) line) w / c, at most
 * (N-2)/(16(N-1)) < 1/16 more (8 ranks, K = 112: 6/112 = 5.4%). 16, not
 * the tree's 8: the chain's hops are N-1, not a tree's log2 N levels, and
 * 16 keeps an 8-rank LL chain up to 4 MiB (a share of 350 KiB on 12
 * channels) in more pieces than the 4 KiB trip it was cut into before. */
#define CHAIN_PIECES_PER_HOP 16

/* The pieces of a channel's share (chain_split's fullest) under p. */
static int32_t chain_pieces(const struct ds_nccl_model *m, enum ds_proto p, double share) {
  double c = ceil(share / chain_piece_bytes(p));
  if (ds_coll_forward_unit_bytes(p) > 0) {
    double cap = fmin(CHAIN_PIECES_PER_HOP * (double)(m->nranks - 1), DS_TREE_MAX_PIECES);
    if (c > cap) c = cap;
  }
  if (c > (1 << 24)) c = 1 << 24;
  return c >= 1 ? (int32_t)c : 1;
}

int32_t ds_nccl_chain_chunks(const struct ds_nccl_model *m, enum ds_proto p, double bytes) {
  double share;
  chain_split(m, p, bytes, &share);
  return chain_pieces(m, p, share);
}

int32_t ds_nccl_chain(const struct ds_nccl_model *m, enum ds_proto p, double bytes,
                      struct ds_coll_proto *out) {
  ds_nccl_chain_proto(m, p, bytes, out);
  int32_t c = chain_pieces(m, p, out->share_bytes); /* the share chain_split just gave */
  /* NCCL's pieces are whole but the last (runRing's nelem), unless the cap
   * on pieces made them equal and larger. */
  double piece = chain_piece_bytes(p);
  if (c > 1 && c * piece >= out->share_bytes) out->piece_bytes = piece;
  return c;
}
