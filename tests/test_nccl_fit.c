/*
 * The fit of NCCL's extra mechanisms (DS_NCCL_EXTRA_MEASURED: launch and
 * the Simple slice sync) to the 8x A100 nccl-tests table, the only table
 * they may be fitted to (docs/collectives.md, docs/validation.md). These
 * tests are the committed fit procedure: the whole table's fit must give
 * the committed constants, and a fit on half the rows must predict the
 * other half.
 *
 * Both constants enter linearly: the simulated time of a row is NCCL's
 * model alone (t0, `--nccl-extra none`) + launch + syncs * sync + fill, with
 * syncs and fill from NCCL's chunking (ds_nccl_chunking; the ring has no
 * fill). The fit: a grid, launch 0..40 us by 0.5 us (outer), sync 0..5 us
 * by 0.05 us (inner), minimising the median of |T_measured / T - 1| (the
 * busbw error `make validate` prints) over the table's sizes >= 1 MiB; the
 * first grid point wins ties. The median, not the worst row, because NCCL's
 * LL128 at 4-16 MiB is 18-45% slower on this machine than NCCL's own
 * bandwidth says, which none of the mechanisms explains (docs/collectives.md).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cmd/collbench.h"
#include "tests/support.h"
#include "sim/coll/nccl_model.h"
#include "sim/coll/ring_rails.h"
#include "sim/net/topo.h"

#define MAX_ROWS 16
#define MIB 1048576.0

struct fit_rows {
  int n;
  double size[MAX_ROWS];
  double meas_us[MAX_ROWS]; /* from the published busbw: S 2(N-1)/N / busbw */
  double t0_us[MAX_ROWS];   /* NCCL's model alone, simulated */
  double syncs[MAX_ROWS];
  double fill_us[MAX_ROWS];
  char proto[MAX_ROWS][8];
};

static char *run_collective(const char *args) {
  char *text;
  struct ds_err err;
  cr_assert_eq(ds_test_collective(args, &text, &err), DS_OK, "%s", err.msg);
  return text;
}

/* time_us and proto of each CSV row (sizes 1 MiB .. 8 GiB by 2). */
static int parse_times(const char *text, double *size, double *time_us, char (*proto)[8]) {
  int n = 0;
  for (const char *line = strchr(text, '\n'); line && line[1] && n < MAX_ROWS;
       line = strchr(line + 1, '\n')) {
    double count;
    int nranks;
    int got = sscanf(line + 1, "allreduce,ring,%7[^,],%d,%lf,%lf,float,%lf", proto[n],
                     &nranks, &size[n], &count, &time_us[n]);
    cr_assert_eq(got, 5, "bad row: %.80s", line + 1);
    n++;
  }
  return n;
}

/* The table's rows >= 1 MiB with what the fit needs. */
static void load_rows(struct fit_rows *r) {
  memset(r, 0, sizeof *r);
  FILE *fp = fopen("tests/data/nccl_allreduce_8xa100_azure.csv", "r");
  cr_assert(fp != NULL);
  char line[512];
  while (fgets(line, sizeof line, fp)) {
    if (line[0] == '#' || strncmp(line, "system,", 7) == 0) continue;
    /* system,n_ranks,version,label,size,busbw,algbw,time */
    char *f[8];
    int k = 0;
    for (char *tok = strtok(line, ",\n"); tok && k < 8; tok = strtok(NULL, ",\n")) f[k++] = tok;
    cr_assert_eq(k, 8);
    double size = atof(f[4]);
    if (size < MIB) continue;
    cr_assert_lt(r->n, MAX_ROWS);
    r->size[r->n] = size;
    r->meas_us[r->n] = size * 2 * 7 / 8 / (atof(f[5]) * 1e3);
    r->n++;
  }
  fclose(fp);
  cr_assert_eq(r->n, 14);

  double size[MAX_ROWS];
  char *text = run_collective("--topo topologies/dgx-a100.yaml --algo auto -b 1M -e 8G "
                              "--nccl-extra none --format csv");
  cr_assert_eq(parse_times(text, size, r->t0_us, r->proto), r->n, "%s", text);
  free(text);

  struct ds_err err = {0};
  struct ds_topo *topo;
  struct ds_ring ring;
  struct ds_nccl_model m;
  int32_t gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  cr_assert_eq(ds_topo_load("topologies/dgx-a100.yaml", NULL, &topo, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_ring_build_rails(topo, gpus, 8, &ring, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_nccl_model_build(topo, &ring, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s",
               err.msg);
  for (int i = 0; i < r->n; i++) {
    cr_assert_float_eq(size[i], r->size[i], 0.5);
    enum ds_proto p;
    cr_assert_eq(ds_proto_parse(r->proto[i], &p), DS_OK);
    struct ds_nccl_chunking c;
    ds_nccl_chunking(&m, DS_AR_RING, p, r->size[i], &c);
    r->syncs[i] = c.syncs;
    r->fill_us[i] = c.fill_ns / 1e3;
  }
  ds_ring_release(&ring);
  ds_topo_free(topo);
}

static double row_err(const struct fit_rows *r, int i, double launch_us, double sync_us) {
  double t = r->t0_us[i] + launch_us + r->syncs[i] * sync_us + r->fill_us[i];
  return fabs(r->meas_us[i] / t - 1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median |error| over the rows i with i % step == first (step 1: all). */
static double median_err(const struct fit_rows *r, int first, int step, double launch_us,
                         double sync_us) {
  double e[MAX_ROWS];
  int k = 0;
  for (int i = first; i < r->n; i += step) e[k++] = row_err(r, i, launch_us, sync_us);
  qsort(e, (size_t)k, sizeof *e, cmp_double);
  return k % 2 ? e[k / 2] : (e[k / 2 - 1] + e[k / 2]) / 2;
}

/* The fit (see the file comment) on the rows first, first + step, ... */
static void fit(const struct fit_rows *r, int first, int step, double *launch_us,
                double *sync_us) {
  double best = INFINITY;
  for (int l = 0; l <= 80; l++)
    for (int s = 0; s <= 100; s++) {
      double e = median_err(r, first, step, l * 0.5, s * 0.05);
      if (e < best) {
        best = e;
        *launch_us = l * 0.5;
        *sync_us = s * 0.05;
      }
    }
}

Test(nccl_fit, the_whole_table_gives_the_committed_constants) {
  /* Reproduces DS_NCCL_EXTRA_MEASURED. Measured today: launch 14 us, sync
   * 2.5 us per slice; in sample the median error is 2.4% (NCCL's model
   * alone: 24.9%), Simple from 256 MiB up within 1.3%, and the worst rows
   * are LL128 at 8 and 16 MiB (36%, 45% optimistic). */
  struct fit_rows r;
  load_rows(&r);
  double launch_us = -1, sync_us = -1;
  fit(&r, 0, 1, &launch_us, &sync_us);
  struct ds_nccl_extra e = DS_NCCL_EXTRA_MEASURED;
  cr_assert_float_eq(launch_us * 1e3, e.launch_ns, 1e-6, "fit launch %g us", launch_us);
  cr_assert_float_eq(sync_us * 1e3, e.sync_ns, 1e-6, "fit sync %g us", sync_us);
  double alone = median_err(&r, 0, 1, 0, 0);
  double fitted = median_err(&r, 0, 1, launch_us, sync_us);
  cr_assert_gt(alone, 0.2, "NCCL's model alone: %.3f", alone);
  cr_assert_leq(fitted, 0.05, "in sample: %.3f", fitted);
  for (int i = 0; i < r.n; i++) {
    double e_i = row_err(&r, i, launch_us, sync_us);
    if (r.size[i] >= 256 * MIB) cr_assert_leq(e_i, 0.05, "S=%g: %.3f", r.size[i], e_i);
    cr_assert_leq(e_i, 0.5, "S=%g %s: %.3f", r.size[i], r.proto[i], e_i);
  }
}

Test(nccl_fit, half_the_rows_predict_the_other_half) {
  /* Refitted as above on every other row (7 rows), judged on the 7 left
   * out. Measured today: fitted on 1, 4, 16, ... MiB: 29 us, 2.4 us,
   * held-out median 11.4%; on 2, 8, 32, ... MiB: 11 us, 2.5 us, held-out
   * median 8.0%, against 20.6% and 29.2% for NCCL's model alone on the same
   * rows. Expected: within 15%, and under two thirds of the model alone. */
  struct fit_rows r;
  load_rows(&r);
  for (int train = 0; train < 2; train++) {
    double launch_us = -1, sync_us = -1;
    fit(&r, train, 2, &launch_us, &sync_us);
    double held = median_err(&r, 1 - train, 2, launch_us, sync_us);
    double alone = median_err(&r, 1 - train, 2, 0, 0);
    cr_assert_leq(held, 0.15, "held out (rows %d, %d, ...), fit %g us, %g us: %.3f", 1 - train,
                  3 - train, launch_us, sync_us, held);
    cr_assert_lt(held, alone * 2 / 3, "held out %.3f vs alone %.3f", held, alone);
  }
}

Test(nccl_fit, the_simulation_adds_exactly_what_the_fit_assumes) {
  /* The fit assumes time = t0 + launch + syncs * sync + fill per row; the
   * simulation with the fitted constants (the default) must run that. */
  struct fit_rows r;
  load_rows(&r);
  double size[MAX_ROWS], t_us[MAX_ROWS];
  char proto[MAX_ROWS][8];
  char *text = run_collective("--topo topologies/dgx-a100.yaml --algo auto -b 1M -e 8G "
                              "--format csv");
  cr_assert_eq(parse_times(text, size, t_us, proto), r.n);
  free(text);
  struct ds_nccl_extra e = DS_NCCL_EXTRA_MEASURED;
  for (int i = 0; i < r.n; i++) {
    cr_assert_str_eq(proto[i], r.proto[i], "extras never change NCCL's choice");
    double want = r.t0_us[i] + e.launch_ns / 1e3 + r.syncs[i] * e.sync_ns / 1e3 + r.fill_us[i];
    cr_assert_float_eq(t_us[i], want, 2e-3, "S=%g: %g vs %g", size[i], t_us[i], want);
  }
}
