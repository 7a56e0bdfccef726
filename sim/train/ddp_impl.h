/*
 * Internal to DDP's schedule builder (sim/train/ddp.c, the iteration: the
 * layers' ops, the op emitters, the step; sim/train/ddp_reducer.c, the
 * reducer's per-bucket ops and the comm hook's; sim/train/ddp_buffers.c,
 * the buffers' broadcasts; sim/train/ddp_rebuild.c, the bucket rebuild's
 * forward; sim/train/ddp_buckets.c, the bucket assignment,
 * needs none of this): what a rank's streams last ran and the emitters
 * they share. Not for other modules.
 */
#ifndef DS_DDP_IMPL_H
#define DS_DDP_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "sim/train/ddp.h"

/* What a rank's streams last ran: the ids later ops wait for (-1: none). */
struct rank_tails {
  int64_t compute;  /* last op on the compute stream */
  int64_t comm;     /* last all-reduce */
  int64_t callback; /* last hook callback (copy stream) */
  int64_t sync;     /* the next compute op waits for this (PowerSGD's synchronize) */
  int64_t launch;   /* the next compute op waits for this host launch */
  int64_t host;     /* last op on the host stream (the step's launch follows) */
};

/* Appends id to deps when it is an op (>= 0). */
static inline void ds__ddp_add_dep(int64_t *deps, size_t *n, int64_t id) {
  if (id >= 0) deps[(*n)++] = id;
}

/* One bucket of buffers as _broadcast_coalesced sends it: its bytes, and
 * the copies back into its buffers (one kernel each). */
struct buffer_bucket {
  double bytes;
  double copy_ns;
  int32_t count;
};

/* An all-reduce of `bytes` on the rank's comm stream, after deps (ddp.c). */
ds_status ds__ddp_emit_allreduce(const struct ds_ddp_options *opt, double bytes,
                                 const char *name, int32_t rank, int32_t bucket, int64_t coll,
                                 const int64_t *deps, size_t n_deps,
                                 struct ds_schedule_builder *bd, int64_t *out_id);
/* Host work of dur_ns on the rank's host stream; *id gets the op's id, or
 * -1 when dur_ns is 0 (ddp.c). */
ds_status ds__ddp_emit_host(int32_t rank, enum ds_op_kind kind, const char *name,
                            int32_t layer, int32_t bucket, double dur_ns, struct rank_tails *t,
                            struct ds_schedule_builder *bd, int64_t *id);
/* The rest of a run of n launches after its first, host ops of `kind`
 * (ddp.c). */
ds_status ds__ddp_emit_host_rest(int32_t rank, enum ds_op_kind kind, const char *name,
                                 int32_t layer, int32_t bucket, int32_t n, double each_ns,
                                 struct rank_tails *t, struct ds_schedule_builder *bd);
/* One compute-stream op after the stream's last op and any pending sync
 * (ddp.c). */
ds_status ds__ddp_emit_compute(struct ds_op *op, struct rank_tails *t,
                               struct ds_schedule_builder *bd);

/* Bucket b's communication; *last gets its last op (ddp_reducer.c). */
ds_status ds__ddp_emit_bucket(const struct ds_model *m, const struct ds_compute *c,
                              const struct ds_ddp_options *opt, const struct ds_buckets *bk,
                              int32_t b, int32_t rank, int64_t coll_base, struct rank_tails *t,
                              struct ds_schedule_builder *bd, int64_t *last);
/* The reducer's copies of layer l's gradients into their buckets, or,
 * under gradient_as_bucket_view where .grad already is the bucket's view
 * (grad_is_view), its division in place (ddp_reducer.c). */
ds_status ds__ddp_emit_to_bucket(const struct ds_model *m, const struct ds_compute *c,
                                 const struct ds_ddp_options *opt, int32_t l, int grad_is_view,
                                 int32_t rank, struct rank_tails *t,
                                 struct ds_schedule_builder *bd);
/* One of the reducer's per-parameter kernels on tensor p (reads and writes
 * its gradient), ns; *bytes grows by what it moves (ddp_reducer.c). */
double ds__ddp_reducer_copy_ns(const struct ds_model *m, const struct ds_compute *c, int32_t p,
                               double *bytes);
/* finalize_backward's copies of bucket b back to the gradients, after
 * comm_done (ddp_reducer.c). */
ds_status ds__ddp_emit_from_bucket(const struct ds_model *m, const struct ds_compute *c,
                                   const struct ds_ddp_options *opt, const struct ds_buckets *bk,
                                   int32_t b, int64_t comm_done, int32_t rank,
                                   struct rank_tails *t, struct ds_schedule_builder *bd);

/* The model's buffer buckets with their totals; *out (NULL when the model
 * has no buffer) is the caller's to free (ddp_buffers.c). */
ds_status ds__ddp_buffer_buckets(const struct ds_model *m, const struct ds_compute *c,
                                 struct buffer_bucket **out, int32_t *n_out);
/* _sync_buffers' broadcasts of the n buffer buckets bb (ddp_buffers.c). */
ds_status ds__ddp_emit_buffers(const struct ds_compute *c, const struct ds_ddp_options *opt,
                               const struct ds_buckets *bk, const struct buffer_bucket *bb,
                               int32_t n, int32_t rank, int64_t coll_base, int64_t *host_dep,
                               struct rank_tails *t, struct ds_schedule_builder *bd);

/* The algo field of a broadcast of `bytes` (algo, DS_RING_ALGO_MAX
 * bytes): under NCCL's model the ring broadcast's protocol (the fixed one,
 * or NCCL's choice for the bytes), else "" (ddp_buffers.c). */
void ds__ddp_broadcast_algo(const struct ds_ddp_options *opt, double bytes, char *algo);

/* The bucket rebuild's forward (opt->rebuild_forward): sync_bucket_indices's
 * two broadcasts of the rebuilt layout bk, collective ids coll and coll + 1
 * (coll_base's unit), each with its copies to and from the device and the
 * host's wait; under gradient_as_bucket_view with .grad kept, the copies
 * of every .grad into the new buckets. The first host op waits for
 * *host_dep (when >= 0), which becomes -1 (ddp_rebuild.c). */
ds_status ds__ddp_emit_rebuild(const struct ds_model *m, const struct ds_compute *c,
                               const struct ds_ddp_options *opt, const struct ds_buckets *bk,
                               int64_t coll, int64_t *host_dep, struct rank_tails *t,
                               int32_t rank, struct ds_schedule_builder *bd);

#endif /* DS_DDP_IMPL_H */
