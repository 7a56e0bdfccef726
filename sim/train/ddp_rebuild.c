/*
 * The bucket rebuild's forward (ddp.h rebuild_forward): what DDP's
 * _pre_forward runs once, in the first forward on the rebuilt layout
 * (iteration 1; static_graph: 2), when reducer._rebuild_buckets() returns
 * true. rebuild_buckets (c10d/reducer.cpp) bins the gradients again, then
 * sync_bucket_indices sends rank 0's layout to every rank, then
 * initialize_buckets allocates the new buckets. Invariant: every op here
 * is in the rebuild iteration's first micro-step only, before the
 * buffers' broadcast and the first forward launch (distributed.py
 * _pre_forward calls _rebuild_buckets before _sync_buffers).
 */
#include "sim/train/ddp.h"
#include "sim/train/ddp_impl.h"

#include <stdio.h>

/* sync_bucket_indices's int32 tensors, each built on the host, copied to
 * the device (copy_ non_blocking), broadcast from rank 0, and copied back
 * (copy_ non_blocking=false: on CUDA a blocking copy, the host waits):
 * first the indices of every parameter in bucket order and the bucket
 * count (parameters + 1 ints), then, once the host has read the count,
 * the buckets' sizes (one int each). tools/ddp_order_probe.py saw, in
 * the rebuild's forward of its 10 parameters in 2 buckets: aten::copy_
 * 11 (int), gloo:broadcast 11 (int), aten::copy_ 11 (int), then the same
 * with 2. */
static ds_status emit_sync_tensor(const struct ds_compute *c, const struct ds_ddp_options *opt,
                                  const char *what, double n_ints, int64_t coll, int32_t rank,
                                  int64_t *host_dep, struct rank_tails *t,
                                  struct ds_schedule_builder *bd) {
  double bytes = 4 * n_ints;
  char name[48];
  snprintf(name, sizeof name, "rebuild.%s", what);
  /* the host op: the copy to the device's launch, the broadcast's call and
   * the copy back's launch (host_grad_copy each copy, host_collective the
   * call, as the local-used map's all-reduce charges them); emitted at
   * 0 us too, so the shape does not depend on the topology's host costs */
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD, .name = name,
                     .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                     .dur_us = (2 * c->params.host_grad_copy_ns + c->params.host_collective_ns) /
                               1000};
  DS_CHECK(ds_schedule_emit(bd, &op, host_dep, *host_dep >= 0 ? 1 : 0));
  *host_dep = -1;
  t->host = t->launch = op.id;
  /* the copies: memory-bound kernels of their bytes, as local_used.copy */
  char copy_name[56];
  snprintf(copy_name, sizeof copy_name, "%s.h2d", name);
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                      .name = copy_name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                      .bytes = bytes, .dur_us = ds_compute_kernel_ns(c, 0, bytes) / 1000};
  DS_CHECK(ds__ddp_emit_compute(&op, t, bd));
  /* the broadcast from rank 0, after the copy (ProcessGroupNCCL makes its
   * stream wait for the compute stream), NCCL's broadcast as the buffers'
   * (ds__ddp_broadcast_algo) */
  char algo[DS_RING_ALGO_MAX];
  ds__ddp_broadcast_algo(opt, bytes, algo);
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMM, .kind = DS_OP_BROADCAST,
                      .name = name, .layer = -1, .bucket = -1, .coll = coll, .root = 0,
                      .algo = algo, .bytes = bytes};
  int64_t deps[2];
  size_t n = 0;
  ds__ddp_add_dep(deps, &n, t->compute);
  ds__ddp_add_dep(deps, &n, t->comm);
  DS_CHECK(ds_schedule_emit(bd, &op, deps, n));
  t->comm = op.id;
  /* work->wait() makes the compute stream wait for the broadcast (the
   * host does not wait there); the copy back runs after it */
  t->sync = op.id;
  snprintf(copy_name, sizeof copy_name, "%s.d2h", name);
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                      .name = copy_name, .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                      .bytes = bytes, .dur_us = ds_compute_kernel_ns(c, 0, bytes) / 1000};
  DS_CHECK(ds__ddp_emit_compute(&op, t, bd));
  /* the blocking copy: the host waits for it (a 0 us host op after it, as
   * a layer's host sync waits for the compute stream, host.h) */
  snprintf(copy_name, sizeof copy_name, "%s.wait", name);
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD,
                      .name = copy_name, .layer = -1, .bucket = -1, .coll = -1, .root = -1};
  DS_CHECK(ds_schedule_emit(bd, &op, &t->compute, 1));
  t->host = op.id;
  return DS_OK;
}

/* initialize_bucket_views under gradient_as_bucket_view where .grad is
 * defined (kept by zero_grad(set_to_none=False): c->grad_kept): bucket by
 * bucket, each gradient's copy_ into its new bucket view (then .grad
 * points at it): one kernel per tensor, reading and writing its bytes
 * (ds__ddp_reducer_copy_ns), launched on the Python thread (host_grad_copy
 * each: the first before the bucket's kernels, the rest while they run,
 * ds__ddp_emit_host_rest). The probe's view_keep saw aten::copy_ of each
 * of the 10 gradients in the new buckets' order, after the two
 * broadcasts. */
static ds_status emit_view_copies(const struct ds_model *m, const struct ds_compute *c,
                                  const struct ds_buckets *bk, int32_t rank,
                                  struct rank_tails *t, struct ds_schedule_builder *bd) {
  for (int32_t b = 0; b < bk->n; b++) {
    char name[48];
    snprintf(name, sizeof name, "bucket%d.view_copy", b);
    int64_t host;
    DS_CHECK(ds__ddp_emit_host(rank, DS_OP_FWD, name, -1, b, c->params.host_grad_copy_ns, t, bd,
                               &host));
    double ns = 0, bytes = 0;
    for (int32_t k = 0; k < bk->b[b].count; k++)
      ns += ds__ddp_reducer_copy_ns(m, c, bk->order[bk->b[b].first + k], &bytes);
    struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                       .name = name, .layer = -1, .bucket = b, .coll = -1, .root = -1,
                       .bytes = bytes, .dur_us = ns / 1000};
    DS_CHECK(ds__ddp_emit_compute(&op, t, bd));
    DS_CHECK(ds__ddp_emit_host_rest(rank, DS_OP_FWD, name, -1, b, bk->b[b].count,
                                    c->params.host_grad_copy_ns, t, bd));
  }
  return DS_OK;
}

ds_status ds__ddp_emit_rebuild(const struct ds_model *m, const struct ds_compute *c,
                               const struct ds_ddp_options *opt, const struct ds_buckets *bk,
                               int64_t coll, int64_t *host_dep, struct rank_tails *t,
                               int32_t rank, struct ds_schedule_builder *bd) {
  int32_t per = ds_comm_hook_colls_per_bucket(&opt->hook);
  DS_CHECK(emit_sync_tensor(c, opt, "indices", (double)bk->n_order + 1, coll * per, rank,
                            host_dep, t, bd));
  DS_CHECK(emit_sync_tensor(c, opt, "sizes", (double)bk->n, (coll + 1) * per, rank, host_dep, t,
                            bd));
  if (opt->grad_as_bucket_view && c->grad_kept) DS_CHECK(emit_view_copies(m, c, bk, rank, t, bd));
  return DS_OK;
}
