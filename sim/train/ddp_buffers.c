/*
 * DDP's buffers (broadcast_buffers): the buffer buckets _broadcast_coalesced
 * sends from rank 0 before the forward, and their flatten, broadcast and
 * copy-back ops, at most two broadcasts in flight (comm.cpp).
 */
#include "sim/train/ddp.h"
#include "sim/train/ddp_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/coll/nccl_model.h"

int32_t ds_ddp_buffer_buckets(const struct ds_model *m, int32_t *group) {
  /* Each dtype's open bucket and its bytes so far: at most one per buffer. */
  struct open_bucket {
    const char *dtype;
    int32_t id;
    double bytes;
  } *open = malloc(((size_t)m->n_buffers + 1) * sizeof *open);
  if (!open) return -1;
  int32_t n = 0, n_dtypes = 0;
  for (int32_t i = 0; i < m->n_buffers; i++) {
    const struct ds_buffer *buf = &m->buffers[i];
    struct open_bucket *o = NULL;
    for (int32_t d = 0; d < n_dtypes && !o; d++)
      if (strcmp(open[d].dtype, buf->dtype) == 0) o = &open[d];
    if (!o) {
      o = &open[n_dtypes++];
      *o = (struct open_bucket){buf->dtype, -1, 0};
    }
    if (o->id < 0 || o->bytes >= DS_DDP_BROADCAST_BUCKET_BYTES) *o = (struct open_bucket){
        buf->dtype, n++, 0};
    o->bytes += buf->bytes;
    if (group) group[i] = o->id;
  }
  free(open);
  return n;
}

/* The model's buffer buckets (ds_ddp_buffer_buckets) with their totals,
 * once per build: every rank sends the same ones. *out is NULL when the
 * model has none; the caller frees it. */
ds_status ds__ddp_buffer_buckets(const struct ds_model *m, const struct ds_compute *c,
                                 struct buffer_bucket **out, int32_t *n_out) {
  *out = NULL;
  *n_out = 0;
  if (m->n_buffers == 0) return DS_OK;
  int32_t *group = malloc((size_t)m->n_buffers * sizeof *group);
  if (!group) return DS_ENOMEM;
  int32_t n = ds_ddp_buffer_buckets(m, group);
  struct buffer_bucket *bb = n < 0 ? NULL : calloc((size_t)n, sizeof *bb);
  if (!bb) {
    free(group);
    return DS_ENOMEM;
  }
  for (int32_t i = 0; i < m->n_buffers; i++) {
    struct buffer_bucket *k = &bb[group[i]];
    k->bytes += m->buffers[i].bytes;
    k->copy_ns += ds_compute_kernel_ns(c, 0, 2 * m->buffers[i].bytes);
    k->count++;
  }
  free(group);
  *out = bb;
  *n_out = n;
  return DS_OK;
}

/* _sync_buffers before the forward (broadcast_buffers=True):
 * broadcast_coalesced (c10d comm.cpp) keeps at most two broadcasts in
 * flight. Issuing bucket k (BroadcastWork's constructor), on the Python
 * thread: flatten_dense_tensors's cat (one launch, host_grad_copy) and the
 * process group's broadcast call (host_collective); the cat reads and
 * writes the bucket's bytes; the broadcast from rank 0 waits for it.
 * Before bucket k is issued, once two are in flight, the oldest (k - 2) is
 * finished (BroadcastWork::finish): it copies each buffer back from the
 * flat tensor on every rank (one kernel per buffer), after its broadcast;
 * the last two are finished after the loop, oldest first. So two buckets
 * (BatchNorm's float32 and int64 ones) run flatten0, broadcast0, flatten1,
 * broadcast1, copies0, copies1: broadcast1 overlaps copies0's host work.
 * The host's per-buffer work, host_buffer each (sim/net/topo_compute.c: measured as
 * a whole), is charged at the copies: the copy_'s launch, unflatten's
 * narrow and view, and also what runs before the cat (the flatten's view,
 * _sync_buffers' walk over the modules' buffers). All of it is serial on
 * the Python thread before the first forward launch, which waits for the
 * sum wherever it sits.
 * A bucket of one buffer (a dtype only one buffer has: BatchNorm's int64
 * num_batches_tracked where there is one BatchNorm) runs no kernel: its
 * flat tensor is the buffer itself (a view, no cat), the broadcast writes
 * the buffer in place, and the copy back onto itself returns at once
 * (copy_'s same-data early return). tools/ddp_order_probe.py's one_buffer
 * saw a 16 MiB buffer's flat tensor share its storage, no cat, and its
 * copy_ take 7 us against 1.2-1.3 ms for each of two 8 MiB ones
 * (docs/strategies.md). Its host op is the broadcast's call (no launch),
 * its finish the buffer's host work, and the compute stream waits for the
 * broadcast (work.wait()) before its next kernel. */

void ds__ddp_broadcast_algo(const struct ds_ddp_options *opt, double bytes, char *algo) {
  algo[0] = '\0';
  if (opt->nccl)
    ds_ring_algo_name(opt->proto_fixed < DS_PROTO_COUNT
                          ? opt->proto_fixed
                          : ds_nccl_choose_coll_proto(opt->nccl, DS_COLL_BROADCAST, bytes),
                      algo);
}

/* Issues buffer bucket k: the flatten's launch and the broadcast's call on
 * the host, the flatten's kernel (none for one buffer), the broadcast;
 * *bcast gets its id. */
static ds_status issue_buffer_bucket(const struct ds_compute *c,
                                     const struct ds_ddp_options *opt,
                                     const struct ds_buckets *bk,
                                     const struct buffer_bucket *bb, int32_t k, int32_t rank,
                                     int64_t coll_base, int64_t *host_dep, struct rank_tails *t,
                                     struct ds_schedule_builder *bd, int64_t *bcast) {
  int32_t per = ds_comm_hook_colls_per_bucket(&opt->hook);
  double bytes = bb[k].bytes;
  char name[48];
  /* a host cost of 0 still emits the op (0 us): the flatten's kernel
   * waits for it either way */
  snprintf(name, sizeof name, "buffers%d.flatten", k);
  /* the host op: the cat's launch (none for one buffer) and the
   * broadcast's call */
  int cat = bb[k].count > 1;
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                     .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                     .dur_us = ((cat ? c->params.host_grad_copy_ns : 0) +
                                c->params.host_collective_ns) /
                               1000};
  DS_CHECK(ds_schedule_emit(bd, &op, host_dep, *host_dep >= 0 ? 1 : 0));
  *host_dep = -1;
  t->host = op.id;
  int64_t call = op.id;
  if (cat) {
    t->launch = op.id;
    op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                        .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                        .bytes = 2 * bytes,
                        .dur_us = ds_compute_kernel_ns(c, 0, 2 * bytes) / 1000};
    DS_CHECK(ds__ddp_emit_compute(&op, t, bd));
  }
  snprintf(name, sizeof name, "buffers%d", k);
  /* under NCCL's model (the all-reduces' --algo auto or a --proto), NCCL's
   * ring broadcast: the protocol NCCL's tuning picks for a broadcast of
   * these bytes (or the fixed one), its channels, latencies and launch
   * (exec_colls.c, ds_nccl_chain_proto); else the plain chain */
  char algo[DS_RING_ALGO_MAX];
  ds__ddp_broadcast_algo(opt, bytes, algo);
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMM, .kind = DS_OP_BROADCAST,
                      .name = name, .layer = -1, .bucket = -1,
                      .coll = (coll_base + bk->n + k) * per, .root = 0, .algo = algo,
                      .bytes = bytes};
  int64_t deps[3];
  size_t nd = 0;
  ds__ddp_add_dep(deps, &nd, t->compute);
  ds__ddp_add_dep(deps, &nd, t->comm);
  if (!cat) ds__ddp_add_dep(deps, &nd, call); /* no kernel carries the call's time */
  DS_CHECK(ds_schedule_emit(bd, &op, deps, nd));
  *bcast = t->comm = op.id;
  return DS_OK;
}

/* Finishes buffer bucket k (BroadcastWork::finish) once its broadcast
 * `bcast` is issued: the first buffer's host work, its copy back's kernel
 * (all the bucket's copies as one; none for one buffer), then the other
 * buffers' host work while the GPU runs them (ds__ddp_emit_host_rest). */
static ds_status finish_buffer_bucket(const struct ds_compute *c,
                                      const struct buffer_bucket *bb, int32_t k, int32_t rank,
                                      int64_t bcast, struct rank_tails *t,
                                      struct ds_schedule_builder *bd) {
  char name[48];
  snprintf(name, sizeof name, "buffers%d.copy", k);
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                     .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                     .dur_us = c->params.host_buffer_ns / 1000};
  DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
  int64_t host = t->host = op.id;
  if (bb[k].count == 1) {
    /* no copy kernel (the broadcast wrote the buffer itself): the next
     * kernel waits for the broadcast */
    t->sync = bcast;
    return DS_OK;
  }
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                      .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                      .bytes = 2 * bb[k].bytes, .dur_us = bb[k].copy_ns / 1000};
  int64_t deps[3];
  size_t nd = 0;
  ds__ddp_add_dep(deps, &nd, t->compute);
  ds__ddp_add_dep(deps, &nd, bcast);
  ds__ddp_add_dep(deps, &nd, host);
  DS_CHECK(ds_schedule_emit(bd, &op, deps, nd));
  t->compute = op.id;
  t->launch = -1;
  if (bb[k].count > 1) {
    op = (struct ds_op){.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                        .name = name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                        .dur_us = (bb[k].count - 1) * c->params.host_buffer_ns / 1000};
    DS_CHECK(ds_schedule_emit(bd, &op, NULL, 0));
    t->host = op.id;
  }
  return DS_OK;
}

/* comm.cpp's max_in_flight */
#define BUFFER_BROADCASTS_IN_FLIGHT 2

ds_status ds__ddp_emit_buffers(const struct ds_compute *c, const struct ds_ddp_options *opt,
                               const struct ds_buckets *bk, const struct buffer_bucket *bb,
                               int32_t n, int32_t rank, int64_t coll_base, int64_t *host_dep,
                               struct rank_tails *t, struct ds_schedule_builder *bd) {
  /* the broadcasts in flight, by bucket index modulo the cap */
  int64_t bcast[BUFFER_BROADCASTS_IN_FLIGHT];
  for (int32_t k = 0; k < n; k++) {
    int32_t slot = k % BUFFER_BROADCASTS_IN_FLIGHT;
    if (k >= BUFFER_BROADCASTS_IN_FLIGHT)
      DS_CHECK(finish_buffer_bucket(c, bb, k - BUFFER_BROADCASTS_IN_FLIGHT, rank, bcast[slot],
                                    t, bd));
    DS_CHECK(issue_buffer_bucket(c, opt, bk, bb, k, rank, coll_base, host_dep, t, bd,
                                 &bcast[slot]));
  }
  for (int32_t k = n > BUFFER_BROADCASTS_IN_FLIGHT ? n - BUFFER_BROADCASTS_IN_FLIGHT : 0;
       k < n; k++)
    DS_CHECK(finish_buffer_bucket(c, bb, k, rank, bcast[k % BUFFER_BROADCASTS_IN_FLIGHT], t,
                                  bd));
  return DS_OK;
}
