/*
 * DDP strategy builder (see ddp.h for the PyTorch behaviour it follows).
 * Everything here is deterministic arithmetic on the model file: no event
 * is simulated, the schedule is the output.
 */
#include "ddp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_model.h"

ds_status ds_ddp_buckets(const struct ds_model *m, int dtype_bytes,
                         double first_cap, double cap, int single,
                         struct ds_buckets *out) {
  memset(out, 0, sizeof *out);
  out->order = malloc((size_t)m->n_params * sizeof *out->order);
  out->b = calloc((size_t)m->n_params, sizeof *out->b);
  if (!out->order || !out->b) {
    ds_ddp_buckets_release(out);
    return DS_ENOMEM;
  }
  for (int32_t i = 0; i < m->n_params; i++)
    out->order[i] = m->n_params - 1 - i;
  out->n_order = m->n_params;
  struct ds_bucket *cur = NULL;
  for (int32_t i = 0; i < m->n_params; i++) {
    const struct ds_param *p = &m->params[out->order[i]];
    if (cur == NULL) {
      cur = &out->b[out->n++];
      cur->first = i;
    }
    cur->count++;
    cur->bytes += (double)p->numel * dtype_bytes;
    cur->ready_layer = p->layer; /* ready order walks layers downwards */
    double limit = out->n == 1 ? first_cap : cap;
    if (!single && cur->bytes >= limit) cur = NULL;
  }
  return DS_OK;
}

void ds_ddp_buckets_release(struct ds_buckets *b) {
  if (!b) return;
  free(b->order);
  free(b->b);
  memset(b, 0, sizeof *b);
}

struct builder {
  struct ds_schedule *s;
  int64_t next_id;
};

static ds_status emit(struct builder *bd, struct ds_op *op, const int64_t *deps,
                      size_t n_deps) {
  op->id = bd->next_id++;
  return ds_schedule_add(bd->s, op, deps, n_deps, NULL);
}

/* A bucket's all-reduce on the rank's comm stream, after deps. */
static ds_status emit_allreduce(const struct ds_ddp_options *opt, const struct ds_bucket *b,
                                int32_t rank, int32_t bucket, int64_t coll_base,
                                const int64_t *deps, size_t n_deps, struct builder *bd,
                                int64_t *out_id) {
  char name[64], algo[DS_RING_ALGO_MAX];
  double dur_ns = 0;
  snprintf(name, sizeof name, "bucket%d", bucket);
  if (opt->nccl) {
    enum ds_proto p = opt->proto_fixed < DS_PROTO_COUNT ? opt->proto_fixed
                                                        : ds_nccl_choose(opt->nccl, b->bytes);
    struct ds_coll_proto cp;
    ds_nccl_coll_proto(opt->nccl, p, b->bytes, &cp);
    ds_ring_algo_name(p, algo);
    if (opt->ring) dur_ns = ds_ring_allreduce_proto_ns(opt->ring, &cp, b->bytes);
  } else {
    ds_ring_algo_name(DS_PROTO_COUNT, algo);
    if (opt->ring) dur_ns = ds_ring_allreduce_ns(opt->ring, b->bytes);
  }
  struct ds_op op = {.rank = rank, .stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE,
                     .name = name, .layer = -1, .bucket = bucket,
                     .coll = coll_base + bucket, .root = -1, .algo = algo,
                     .bytes = b->bytes, .dur_us = dur_ns / 1000};
  DS_CHECK(emit(bd, &op, deps, n_deps));
  *out_id = op.id;
  return DS_OK;
}

static ds_status build_rank(const struct ds_model *m, const struct ds_compute *c,
                            const struct ds_ddp_options *opt,
                            const struct ds_buckets *bk, int32_t rank,
                            int64_t coll_base, struct builder *bd) {
  int64_t prev = -1, last_bwd = -1, last_ar = -1;
  int32_t next_bucket = 0;
  int32_t steps = opt->accum_steps > 1 ? opt->accum_steps : 1;
  struct ds_op op;
  for (int32_t step = 0; step < steps; step++) {
    /* Under no_sync, every micro-step but the last accumulates locally. */
    int sync = step == steps - 1;
    for (int32_t l = 0; l < m->n_layers; l++) {
      const struct ds_layer *ly = &m->layers[l];
      op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE,
                          .kind = DS_OP_FWD, .name = ly->name, .layer = l,
                          .bucket = -1, .coll = -1, .root = -1,
                          .flops = ly->fwd_flops * (double)opt->batch,
                          .dur_us = ds_compute_fwd_ns(c, ly, opt->batch) / 1000};
      DS_CHECK(emit(bd, &op, &prev, prev >= 0));
      prev = op.id;
    }
    op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE,
                        .kind = DS_OP_LOSS, .name = "loss", .layer = -1,
                        .bucket = -1, .coll = -1, .root = -1,
                        .dur_us = ds_compute_kernel_ns(c, 0, 0) / 1000};
    DS_CHECK(emit(bd, &op, &prev, 1));
    prev = op.id;
    for (int32_t l = m->n_layers - 1; l >= 0; l--) {
      const struct ds_layer *ly = &m->layers[l];
      op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE,
                          .kind = DS_OP_BWD, .name = ly->name, .layer = l,
                          .bucket = -1, .coll = -1, .root = -1,
                          .flops = ly->bwd_flops * (double)opt->batch,
                          .dur_us = ds_compute_bwd_ns(c, ly, opt->batch) / 1000};
      DS_CHECK(emit(bd, &op, &prev, 1));
      prev = last_bwd = op.id;
      /* Overlapped: a bucket goes once its last gradient is ready. */
      while (sync && !opt->no_overlap && next_bucket < bk->n &&
             bk->b[next_bucket].ready_layer == l) {
        int64_t deps[2] = {last_bwd, last_ar};
        DS_CHECK(emit_allreduce(opt, &bk->b[next_bucket], rank, next_bucket, coll_base, deps,
                                last_ar >= 0 ? 2 : 1, bd, &last_ar));
        next_bucket++;
      }
    }
  }
  /* --no-overlap: every bucket waits for the end of backward. */
  while (next_bucket < bk->n) {
    int64_t deps[2] = {last_bwd, last_ar};
    DS_CHECK(emit_allreduce(opt, &bk->b[next_bucket], rank, next_bucket, coll_base, deps,
                            last_ar >= 0 ? 2 : 1, bd, &last_ar));
    next_bucket++;
  }
  int64_t deps[2] = {last_bwd, last_ar};
  op = (struct ds_op){.rank = rank, .stream = DS_STREAM_COMPUTE,
                      .kind = DS_OP_STEP, .name = "optimizer", .layer = -1,
                      .bucket = -1, .coll = -1, .root = -1,
                      .bytes = ds_compute_step_bytes(c, m),
                      .dur_us = ds_compute_step_ns(c, m) / 1000};
  return emit(bd, &op, deps, last_ar >= 0 ? 2 : 1);
}

ds_status ds_ddp_build(const struct ds_model *m, const struct ds_compute *c,
                       const struct ds_ddp_options *opt,
                       const struct ds_buckets *bk, int64_t id_base,
                       int64_t coll_base, struct ds_schedule *out) {
  struct builder bd = {out, id_base};
  for (int32_t r = 0; r < opt->world_size; r++)
    DS_CHECK(build_rank(m, c, opt, bk, r, coll_base, &bd));
  return DS_OK;
}

void ds_ddp_memory(const struct ds_model *m, int dtype_bytes, int64_t batch,
                   int grad_as_bucket_view, struct ds_ddp_memory *out) {
  double p = (double)m->total_numel * dtype_bytes;
  double act = 0;
  for (int32_t l = 0; l < m->n_layers; l++) act += m->layers[l].act_bytes;
  out->params = p;
  out->grads = p;
  /* gradient_as_bucket_view: .grad tensors are views into the buckets. */
  out->buckets = grad_as_bucket_view ? 0 : p;
  out->optimizer = p * ds_optimizer_states(m->optimizer);
  out->activations = act * (dtype_bytes / 4.0) * (double)batch;
  out->total = out->params + out->grads + out->buckets + out->optimizer +
               out->activations;
}
