/*
 * What test_ddp.c and test_ddp_memory.c share: the tiny topology and
 * model, and a model on a topology with its compute model (the schedule
 * tests, and the memory and math under autocast). The functions are static
 * inline so that an includer need not use them all.
 */
#ifndef DS_TESTS_DDP_FIXTURE_H
#define DS_TESTS_DDP_FIXTURE_H

#include <criterion/criterion.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "tests/support.h"

#define TINY_TOPO "tests/data/tiny-topo.yaml"   /* TestGPU: 10 TFLOPS fp32, 1000 GB/s */
#define TINY_MODEL "tests/data/tiny-model.yaml" /* 3 layers, 1,835,264 parameters */

/* A model on a topology with its compute model (fp32, autocast amp): what
 * the schedule and compute tests build on. */
struct fixture {
  struct ds_model *m;
  struct ds_topo *t;
  struct ds_compute c;
};

static inline void setup(struct fixture *f, const char *topo, const char *model, enum ds_amp amp) {
  struct ds_err err = {0};
  *f = (struct fixture){0};
  cr_assert_eq(ds_topo_load(topo, NULL, &f->t, &err), DS_OK, "%s", err.msg);
  f->m = ds_test_model(model);
  cr_assert_eq(ds_compute_init(f->t, DS_DTYPE_FP32, amp, &f->c, &err), DS_OK, "%s", err.msg);
}

static inline void teardown(struct fixture *f) {
  ds_model_free(f->m);
  ds_topo_free(f->t);
}

#endif /* DS_TESTS_DDP_FIXTURE_H */
