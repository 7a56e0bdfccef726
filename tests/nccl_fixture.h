/*
 * What NCCL's cost model's tests (test_nccl_model_plan.c,
 * test_nccl_model_choice.c, test_nccl_model_tuning.c) share: a topology's
 * ring as the program builds it and NCCL's model of it, built and
 * released. The functions are static inline so that an includer need not
 * use them all.
 */
#ifndef DS_TESTS_NCCL_FIXTURE_H
#define DS_TESTS_NCCL_FIXTURE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "sim/coll/coll.h"
#include "sim/coll/nccl_model.h"
#include "sim/coll/ring_rails.h"
#include "sim/net/topo.h"
#include "tests/support.h"

struct fixture {
  struct ds_topo *topo;
  struct ds_ring ring;
  struct ds_nccl_model m;
};

/* The model of the ring the program runs (sim/cli/run_setup.c, collbench.c):
 * ds_ring_build_rails, so that across nodes the tests' oracle
 * (test_nccl_model_choice.c's nccl_time_us) sees the NIC rails NCCL spreads
 * its channels over. */
static inline ds_status build_with_table(struct fixture *f, const char *path,
                                         const char *table, int32_t n, struct ds_err *err) {
  int32_t gpus[64];
  memset(f, 0, sizeof *f);
  cr_assert_eq(ds_topo_load(path, table, &f->topo, err), DS_OK, "%s", err->msg);
  if (n == 0) n = f->topo->n_gpus;
  for (int32_t i = 0; i < n; i++) gpus[i] = i;
  cr_assert_eq(ds_ring_build_rails(f->topo, gpus, n, &f->ring, err), DS_OK, "%s", err->msg);
  return ds_nccl_model_build(f->topo, &f->ring, DS_NCCL_EXTRA_NONE, &f->m, err);
}

/* The same with the GPU table beside the topology file. */
static inline ds_status build(struct fixture *f, const char *path, int32_t n,
                               struct ds_err *err) {
  return build_with_table(f, path, NULL, n, err);
}

static inline void release(struct fixture *f) {
  ds_ring_release(&f->ring);
  ds_topo_free(f->topo);
}

#endif /* DS_TESTS_NCCL_FIXTURE_H */
