/* The collectives' rules every replay device checks (schedule_check.h). */
#include "schedule_check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/units.h"

const struct ds_coll_rules ds_coll_rules_cpu = {
    .device = "cpu",
    .comm_note = "",
    .group = "(MPI_COMM_WORLD)",
    .library = "MPI",
    .all_ranks = " (MPI_COMM_WORLD)",
    .max_floats = 2147483647.0, /* an MPI count is an int */
};

const struct ds_coll_rules ds_coll_rules_cuda = {
    .device = "cuda",
    .comm_note = " (one NCCL communicator)",
    .group = "(one NCCL communicator)",
    .library = "NCCL",
    .all_ranks = "",
    .max_floats = 0, /* NCCL counts are size_t */
};

int ds_op_kind_is_rooted(enum ds_op_kind k) {
  return k == DS_OP_REDUCE || k == DS_OP_BROADCAST || k == DS_OP_GATHER ||
         k == DS_OP_SCATTER;
}

/* The op's own rules: kinds the devices run, the comm stream, the root and
 * the size limit. */
static ds_status check_op(const struct ds_op *o, int32_t world,
                          const struct ds_coll_rules *rules, struct ds_err *err) {
  long long id = (long long)o->id;
  const char *kind = ds_op_kind_name(o->kind);
  if (o->kind == DS_OP_SEND || o->kind == DS_OP_RECV || o->kind == DS_OP_PUSH ||
      o->kind == DS_OP_PULL)
    return ds_err_set(err, DS_EINPUT, "op %lld: kind %s is not supported by the %s "
                      "device (it runs compute ops, copies and collectives)", id, kind,
                      rules->device);
  /* The devices turn a collective's bytes into a size_t count of floats
   * and a copy's into a size_t buffer: past 1e18 bytes (a size's bound,
   * base/units.h) no device holds it, and the conversion of 1e308 was
   * undefined (it came out small: the MPI check passed and the allreduce
   * ran on nothing, exit 0). */
  if ((ds_op_kind_is_collective(o->kind) || o->kind == DS_OP_H2D || o->kind == DS_OP_D2H) &&
      o->bytes > DS_UNITS_BYTES_MAX)
    return ds_err_set(err, DS_EINPUT, "op %lld: %s of %g bytes is more than a replay "
                      "takes (at most %g bytes)", id, kind, o->bytes, DS_UNITS_BYTES_MAX);
  if (!ds_op_kind_is_collective(o->kind)) return DS_OK;
  if (o->stream != DS_STREAM_COMM)
    return ds_err_set(err, DS_EINPUT, "op %lld: %s on the %s stream; the %s device runs "
                      "collectives on the comm stream only%s", id, kind,
                      ds_stream_name(o->stream), rules->device, rules->comm_note);
  if (ds_op_kind_is_rooted(o->kind) && (o->root < 0 || o->root >= world))
    return ds_err_set(err, DS_EINPUT, "op %lld: %s needs a root rank from 0 to %d, got %d",
                      id, kind, world - 1, o->root);
  if (rules->max_floats > 0 && ceil(o->bytes / 4.0) > rules->max_floats)
    return ds_err_set(err, DS_EINPUT, "op %lld: %s of %.0f bytes is more floats than one "
                      "%s call takes (%.0f)", id, kind, o->bytes, rules->library,
                      rules->max_floats);
  return DS_OK;
}

ds_status ds_check_collectives(const struct ds_schedule *s, int32_t world,
                               const struct ds_coll_rules *rules, struct ds_err *err) {
  size_t bad;
  return ds_check_collectives_at(s, world, rules, &bad, err);
}

ds_status ds_check_collectives_at(const struct ds_schedule *s, int32_t world,
                                  const struct ds_coll_rules *rules, size_t *bad,
                                  struct ds_err *err) {
  size_t n = s->n_ops;
  *bad = SIZE_MAX;
  size_t *pos = calloc((size_t)world, sizeof *pos); /* per rank: collectives seen */
  size_t *seq0 = malloc((n ? n : 1) * sizeof *seq0); /* rank 0's collectives */
  size_t n0 = 0;
  ds_status st = DS_OK;
  if (!pos || !seq0) {
    st = ds_err_set(err, DS_ENOMEM, "%s device: out of memory", rules->device);
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    if (s->ops[i].rank == 0 && ds_op_kind_is_collective(s->ops[i].kind)) seq0[n0++] = i;
  for (size_t i = 0; i < n && st == DS_OK; i++) {
    const struct ds_op *o = &s->ops[i];
    st = check_op(o, world, rules, err);
    if (st != DS_OK) *bad = i;
    if (st != DS_OK || !ds_op_kind_is_collective(o->kind)) continue;
    size_t k = pos[o->rank]++;
    const struct ds_op *p = k < n0 ? &s->ops[seq0[k]] : NULL;
    if (!p || p->coll != o->coll || p->root != o->root) {
      *bad = i;
      st = ds_err_set(err, DS_EINPUT,
                      "op %lld: rank %d's collective #%zu is coll %lld (root %d) but "
                      "rank 0's is %s%lld (root %d); the %s device needs every rank to "
                      "issue the same collectives in the same order over all ranks "
                      "%s, or %s would deadlock",
                      (long long)o->id, o->rank, k + 1, (long long)o->coll, o->root,
                      p ? "coll " : "none, ", p ? (long long)p->coll : -1LL,
                      p ? p->root : -1, rules->device, rules->group, rules->library);
    }
  }
  for (int32_t q = 0; q < world && st == DS_OK; q++)
    if (pos[q] != n0)
      st = ds_err_set(err, DS_EINPUT, "rank %d has %zu collectives but rank 0 has %zu; the "
                      "%s device runs every collective over all ranks%s", q, pos[q], n0,
                      rules->device, rules->all_ranks);
out:
  free(pos);
  free(seq0);
  return st;
}
