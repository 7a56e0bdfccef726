/*
 * NCCL's tuning model over a built ds_nccl_model (see nccl_model.h): the
 * time of each algorithm and protocol (tuning.cc ncclTopoGetAlgoTime: latency
 * plus bytes over the bus bandwidth, nccl_model.c's ds_nccl_model_build
 * sets both), the protocols enabled, and the choice of least predicted
 * time. Nothing here adds to NCCL's formulas (nccl_chunking.c does).
 */
#include "sim/coll/nccl_model.h"

#include <math.h>
#include <stddef.h>

#include "sim/coll/nccl_model_impl.h"

double ds_nccl_predict_ns(const struct ds_nccl_model *m, enum ds_proto p,
                          double bytes) {
  double algbw = m->busbw_bytes_per_s[p] * m->nranks / (2.0 * (m->nranks - 1));
  double lat = m->lat_ns[p];
  /* the ring's plateau on several nodes (Simple): NCCL v2.30.7-1
   * src/graph/tuning.cc:647-650 (minCompCap < 80 ? 1.9 : 1.4). */
  if (p == DS_PROTO_SIMPLE && m->nnodes > 1 &&
      floor(bytes / ((double)m->channels * m->nranks)) >= 64)
    lat *= m->arch == DS_NCCL_ARCH_VOLTA ? 1.9 : 1.4;
  return lat + bytes / algbw * 1e9;
}
void ds_nccl_model_proto_env(struct ds_nccl_model *m, int set, unsigned disabled) {
  m->proto_set = set != 0;
  m->proto_disabled =
      set ? disabled : m->ll128_off_by_default ? 1u << DS_PROTO_LL128 : 0u;
}

int ds_nccl_algo_available(const struct ds_nccl_model *m, enum ds_ar_algo a,
                           enum ds_proto p, const char **why) {
  const char *no = NULL;
  if ((int)p < 0 || p >= DS_PROTO_COUNT) no = "no NCCL protocol";
  else if (m->proto_disabled & (1u << p))
    no = !m->proto_set && p == DS_PROTO_LL128 && m->ll128_off_by_default
             ? "NCCL enables LL128 by default only over NVLink inside a node (--proto LL128 "
               "forces it, as NCCL_PROTO=LL128)"
             : "the protocol is not in --proto's set (NCCL_PROTO)";
  else if (a == DS_AR_NVLS && !m->nvls_ok) no = m->nvls_why;
  else if (a == DS_AR_NVLS && p != DS_PROTO_SIMPLE) no = "NCCL runs NVLS with Simple only";
  else if (a != DS_AR_RING && a != DS_AR_TREE && a != DS_AR_NVLS)
    no = "not an NCCL algorithm (NCCL never runs it)";
  if (why) *why = no;
  return no == NULL;
}

double ds_nccl_predict_algo_ns(const struct ds_nccl_model *m, enum ds_ar_algo a,
                               enum ds_proto p, double bytes) {
  if (!ds_nccl_algo_available(m, a, p, NULL)) return INFINITY;
  if (a == DS_AR_RING) return ds_nccl_predict_ns(m, p, bytes);
  if (a == DS_AR_TREE) {
    double algbw = m->tree_busbw_bytes_per_s[p] * 0.5 * ds__nccl_tree_correction_at(p, bytes);
    return m->tree_lat_ns[p] + bytes / algbw * 1e9;
  }
  double algbw = m->nvls_busbw_bytes_per_s * m->nranks / (2.0 * (m->nranks - 1));
  if (m->nvls_tree_size_corrected) algbw *= ds__nccl_nvls_tree_correction_at(p, bytes);
  return m->nvls_lat_ns + bytes / algbw * 1e9;
}

enum ds_ar_algo ds_nccl_choose_algo_with(const struct ds_nccl_model *m, double bytes,
                                         enum ds_proto p) {
  static const enum ds_ar_algo order[] = {DS_AR_TREE, DS_AR_RING, DS_AR_NVLS};
  enum ds_ar_algo best = DS_AR_RING;
  double best_ns = INFINITY;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    double t = ds_nccl_predict_algo_ns(m, order[i], p, bytes);
    if (t < best_ns) {
      best_ns = t;
      best = order[i];
    }
  }
  return best;
}

/* The protocol of least predicted time (NCCL's order on ties: LL, LL128,
 * Simple), or `none` when every protocol is unavailable (infinite time).
 * `algo` < 0 asks ds_nccl_predict_coll_ns for `kind`; else the all-reduce
 * algorithm's prediction. */
static enum ds_proto fastest_proto(const struct ds_nccl_model *m, int algo,
                                   enum ds_coll_kind kind, double bytes, enum ds_proto none) {
  enum ds_proto best = none;
  double best_ns = INFINITY;
  for (int p = 0; p < DS_PROTO_COUNT; p++) {
    double t = algo >= 0 ? ds_nccl_predict_algo_ns(m, (enum ds_ar_algo)algo, (enum ds_proto)p, bytes)
                         : ds_nccl_predict_coll_ns(m, kind, (enum ds_proto)p, bytes);
    if (t < best_ns) {
      best_ns = t;
      best = (enum ds_proto)p;
    }
  }
  return best;
}

enum ds_proto ds_nccl_choose_proto(const struct ds_nccl_model *m, enum ds_ar_algo a,
                                   double bytes) {
  return fastest_proto(m, (int)a, (enum ds_coll_kind)0, bytes, DS_PROTO_COUNT);
}

void ds_nccl_choose_algo(const struct ds_nccl_model *m, double bytes,
                         enum ds_ar_algo *a, enum ds_proto *p) {
  /* NCCL's algorithm order: Tree 0, Ring 1, ..., NVLS 4. */
  static const enum ds_ar_algo order[] = {DS_AR_TREE, DS_AR_RING, DS_AR_NVLS};
  double best_ns = INFINITY;
  *a = DS_AR_RING;
  *p = DS_PROTO_LL;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++)
    for (int q = 0; q < DS_PROTO_COUNT; q++) {
      double t = ds_nccl_predict_algo_ns(m, order[i], (enum ds_proto)q, bytes);
      if (t < best_ns) {
        best_ns = t;
        *a = order[i];
        *p = (enum ds_proto)q;
      }
    }
}

enum ds_proto ds_nccl_choose(const struct ds_nccl_model *m, double bytes) {
  return fastest_proto(m, DS_AR_RING, (enum ds_coll_kind)0, bytes, DS_PROTO_LL);
}
/* ---- all-gather and reduce-scatter on the ring (tuning.cc, nsteps N-1) ---- */

double ds_nccl_predict_coll_ns(const struct ds_nccl_model *m, enum ds_coll_kind kind,
                               enum ds_proto p, double bytes) {
  if ((int)p >= 0 && p < DS_PROTO_COUNT && (m->proto_disabled & (1u << p))) return INFINITY;
  if (kind == DS_COLL_ALLREDUCE) return ds_nccl_predict_ns(m, p, bytes);
  if (ds_coll_kind_is_chain(kind) && (int)p >= 0 &&
      p < DS_PROTO_COUNT) {
    int hw = m->nnodes > 1 ? DS_HOP_NET : m->hw_intra;
    double hop = m->same_channels
                     ? ds__nccl_hw_lat_us[hw][RING][p]
                     : m->nranks * ds__nccl_hw_lat_us[hw][p == DS_PROTO_SIMPLE ? TREE : RING][p];
    double lat = m->base_lat_ns[p] + hop * US;
    return lat + bytes / m->busbw_bytes_per_s[p] * 1e9;
  }
  if ((kind != DS_COLL_ALLGATHER && kind != DS_COLL_REDUCESCATTER) || (int)p < 0 ||
      p >= DS_PROTO_COUNT)
    return INFINITY;
  int32_t nsteps = m->nranks - 1;
  int32_t ninter = m->nnodes > 1 ? m->nnodes - 1 : 0;
  double intra = m->hw_lat_ns[m->hw_intra][p];
  double inter = m->nnodes > 1 ? m->hw_lat_ns[DS_HOP_NET][p] : intra;
  double lat = m->base_lat_ns[p] + (nsteps - ninter) * intra + ninter * inter;
  double algbw = m->busbw_bytes_per_s[p] * m->nranks / (double)nsteps;
  return lat + bytes / algbw * 1e9;
}

enum ds_proto ds_nccl_choose_coll_proto(const struct ds_nccl_model *m, enum ds_coll_kind kind,
                                        double bytes) {
  return fastest_proto(m, -1, kind, bytes, DS_PROTO_LL);
}
