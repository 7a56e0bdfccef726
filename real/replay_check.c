/*
 * The ddpreal command's checks of its schedule before any rank starts
 * (replay_check.h): what the device would refuse when it opens, an op that
 * would spin past --timeout, results too large for one MPI_Gather, each
 * said once with the schedule's line. Pure over the schedule file, the
 * options and DDPREAL_TIMEOUT_S: no MPI, no device.
 */
#include "replay_check.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>

#include "schedule_check.h"
#include "traces/trace.h"

size_t ds_replay_own_places(const struct ds_schedule *s, size_t *own) {
  size_t *count = calloc((size_t)s->world_size, sizeof *count);
  if (!count) return SIZE_MAX;
  size_t most = 0;
  for (size_t i = 0; i < s->n_ops; i++) {
    size_t k = count[s->ops[i].rank]++;
    if (own) own[i] = k;
    if (k + 1 > most) most = k + 1;
  }
  free(count);
  return most;
}

/* Whether the device takes the op's time from its dur_us (a spin, on the
 * CPU or the GPU, or a host function): every op but a collective and,
 * under --compute gemm, a compute op with flops, which runs GEMMs of them
 * instead (the cpu device's are capped at 2e8 flops). */
static int spins(const struct ds_op *o, enum ds_compute_mode compute) {
  if (ds_op_kind_is_collective(o->kind)) return 0;
  int computes = o->kind == DS_OP_FWD || o->kind == DS_OP_BWD || o->kind == DS_OP_LOSS ||
                 o->kind == DS_OP_STEP;
  return !(compute == DS_COMPUTE_GEMM && computes && o->flops > 0);
}

/* --timeout bounds every step of the replay: the waits for other ranks and
 * the GPU at run time, and an op that spins for its dur_us here, before
 * any rank starts, since its length is known. A spin past the limit is bad
 * input (a 1e12 us op spun for 12 days; on more than one rank the others'
 * waits would end the job after the limit anyway, blaming a rank that "did
 * not arrive"). */
static ds_status check_spins(const struct ds_schedule *s, const size_t *op_line,
                             const struct ds_real_options *opt, struct ds_err *err) {
  double limit_s = ds_real_timeout_s();
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (!spins(o, opt->compute) || !(o->dur_us * 1e-6 > limit_s)) continue;
    double d = o->dur_us * 1e-6;
    return ds_err_set(err, DS_EINPUT,
                      "%s:%zu: column 'dur_us': op %" PRId64 " (%s on rank %d) spins %g us "
                      "(%.3g %s), longer than --timeout %g s, the longest one step of the "
                      "replay may take; correct the schedule, or give a larger --timeout "
                      "(at most 1e6 s)",
                      opt->schedule, op_line[i], o->id, ds_op_kind_name(o->kind), o->rank,
                      o->dur_us, d >= 86400 ? d / 86400 : d >= 3600 ? d / 3600 : d,
                      d >= 86400 ? "days" : d >= 3600 ? "hours" : "s", limit_s);
  }
  return DS_OK;
}

ds_status ds_replay_check(const struct ds_real_options *opt, int use_mpi,
                          struct ds_schedule **out, size_t *most_out, struct ds_err *err) {
  struct ds_schedule *s = NULL;
  size_t *op_line = NULL;
  *out = NULL;
  ds_status st = ds_schedule_read_csv_lines(opt->schedule, &s, &op_line, err);
  if (st == DS_EIO) st = DS_EINPUT; /* a schedule that cannot be read is bad input */
  if (st != DS_OK) return ds_err_prefix(err, st, "option --schedule: ");
  const struct ds_coll_rules *rules = &ds_coll_rules_cpu;
#ifdef DS_HAVE_CUDA
  if (opt->device == DS_REAL_DEVICE_CUDA) rules = &ds_coll_rules_cuda;
#endif
  /* What the device would refuse when it opens, said once, before any rank
   * starts, with the file's line. */
  size_t bad = SIZE_MAX;
  struct ds_err cerr = {0};
  st = ds_check_collectives_at(s, s->world_size, rules, &bad, &cerr);
  if (st != DS_OK && bad < s->n_ops)
    ds_err_set(err, st, "%s:%zu: %s", opt->schedule, op_line[bad], cerr.msg);
  else if (st != DS_OK)
    ds_err_set(err, st, "%s: %s", opt->schedule, cerr.msg);
  if (st == DS_OK) st = check_spins(s, op_line, opt, err);
  free(op_line);
  if (st != DS_OK) {
    ds_schedule_free(s);
    return st;
  }
  /* Each rank's results go to rank 0 in one gather: under MPI one call
   * carries at most INT_MAX bytes. Refused now rather than after the run. */
  size_t most = ds_replay_own_places(s, NULL);
  if (most == SIZE_MAX) {
    ds_schedule_free(s);
    return ds_err_set(err, DS_ENOMEM, "out of memory");
  }
  double rec_bytes = 8.0 * (1.0 + (double)opt->iters * (1.0 + 2.0 * (double)most));
  if (use_mpi && rec_bytes > (double)INT_MAX) {
    long long fits = (long long)(((double)INT_MAX / 8.0 - 1.0) / (1.0 + 2.0 * (double)most));
    st = ds_err_set(err, DS_EUSAGE,
                    "option --iters: %d iterations of %zu ops on one rank make %.0f bytes of "
                    "results per rank, more than one MPI_Gather carries (%d); use --iters "
                    "%lld or fewer",
                    opt->iters, most, rec_bytes, INT_MAX, fits);
    ds_schedule_free(s);
    return st;
  }
  *out = s;
  if (most_out) *most_out = most;
  return DS_OK;
}
