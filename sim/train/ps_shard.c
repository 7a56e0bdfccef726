/*
 * The parameter server's sharding (see ps.h): the mode and push names,
 * whole tensors to the least-loaded server, a server's update bytes, and
 * the memory of a GPU that hosts servers.
 */
#include "sim/train/ps.h"

#include <stdlib.h>
#include <string.h>

const char *ds_ps_mode_name(enum ds_ps_mode mode) {
  return mode == DS_PS_ASYNC ? "async" : "sync";
}

int ds_ps_mode_parse(const char *name, enum ds_ps_mode *out) {
  if (strcmp(name, "sync") == 0) *out = DS_PS_SYNC;
  else if (strcmp(name, "async") == 0) *out = DS_PS_ASYNC;
  else return -1;
  return 0;
}

const char *ds_ps_push_name(enum ds_ps_push push) {
  return push == DS_PS_PUSH_PER_LAYER ? "per-layer" : "after-backward";
}

int ds_ps_push_parse(const char *name, enum ds_ps_push *out) {
  if (strcmp(name, "after-backward") == 0) *out = DS_PS_PUSH_AFTER_BACKWARD;
  else if (strcmp(name, "per-layer") == 0) *out = DS_PS_PUSH_PER_LAYER;
  else return -1;
  return 0;
}

void ds_ps_shards_release(struct ds_ps_shards *s) {
  if (!s) return;
  free(s->server_of_param);
  free(s->numel);
  free(s->gpu);
  memset(s, 0, sizeof *s);
}

ds_status ds_ps_shard(const struct ds_model *m, int32_t n_servers, int32_t world,
                      struct ds_ps_shards *out, struct ds_err *err) {
  memset(out, 0, sizeof *out);
  if (world < 1 || n_servers < 1 || n_servers > world)
    return ds_err_set(err, DS_EUSAGE,
                      "option --ps-servers: expected 1 to %d (one server per rank at "
                      "most: servers are colocated on the ranks' GPUs), got %d",
                      world, n_servers);
  out->n = n_servers;
  out->server_of_param = malloc(((size_t)m->n_params + 1) * sizeof *out->server_of_param);
  out->numel = calloc((size_t)n_servers, sizeof *out->numel);
  out->gpu = malloc((size_t)n_servers * sizeof *out->gpu);
  if (!out->server_of_param || !out->numel || !out->gpu) {
    ds_ps_shards_release(out);
    return ds_err_set(err, DS_ENOMEM, "parameter server: out of memory");
  }
  for (int32_t k = 0; k < n_servers; k++)
    out->gpu[k] = (int32_t)((int64_t)k * world / n_servers);
  /* whole tensors in registration order (ds_model_registered; the
   * file's order is the forward's), each to the least-loaded server */
  for (int32_t i = 0; i < m->n_params; i++) {
    int32_t p = ds_model_registered(m, i), best = 0;
    for (int32_t k = 1; k < n_servers; k++)
      if (out->numel[k] < out->numel[best]) best = k;
    out->server_of_param[p] = best;
    out->numel[best] += m->params[p].numel;
  }
  return DS_OK;
}

double ds_ps_update_bytes(const struct ds_model *m, const struct ds_compute *c,
                          int64_t shard_numel, enum ds_ps_mode mode, int32_t world) {
  double passes = ds_compute_optimizer_passes(c, m->optimizer); /* as a worker's step */
  /* Sync: the N pushed gradients are first summed (read N, write 1). */
  if (mode == DS_PS_SYNC && world > 1) passes += world + 1;
  return (double)shard_numel * ds_dtype_bytes(c->dtype) * passes;
}

void ds_ps_memory(const struct ds_model *m, const struct ds_precision *pr, int64_t batch,
                  const struct ds_memory_options *opt, const struct ds_ps_shards *sh,
                  int32_t world, int32_t gpu, struct ds_ddp_memory *out) {
  /* the workers step nothing; a server's GPU steps its shards */
  double stepped = 0;
  for (int32_t k = 0; k < sh->n; k++)
    if (sh->gpu[k] == gpu) stepped += (double)sh->numel[k];
  ds_ps_memory_stepped(m, pr, batch, opt, stepped, world, out);
}

void ds_ps_memory_stepped(const struct ds_model *m, const struct ds_precision *pr,
                          int64_t batch, const struct ds_memory_options *opt, double stepped,
                          int32_t world, struct ds_ddp_memory *out) {
  struct ds_memory_options mo = *opt;
  mo.ddp = 0;
  mo.step_numel = stepped;
  ds_ddp_memory(m, pr, batch, &mo, out);
  /* the shards' master copies and optimizer state (workers keep none: the
   * servers step); every worker's pushed gradient lands in a buffer of its
   * own (a push writes while the server works on the others): sync sums
   * the `world` of them in one kernel after the last push, in place into
   * the first (ds_ps_update_bytes: read N, write 1), so all are resident
   * then; async holds each until its update, one per worker at most (a
   * worker pushes again only after its pull), all of them when the pushes
   * arrive together, as in the first step */
  double shards = stepped * pr->param_bytes;
  out->params += shards;
  out->optimizer = shards * ds_optimizer_states(m->optimizer);
  out->buckets = shards * world;
  ds_ddp_memory_total(out);
}

