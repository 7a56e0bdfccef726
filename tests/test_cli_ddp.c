/*
 * DDP's options through the ddpsim command: bucket caps and PyTorch's first
 * bucket, static_graph, PyTorch 1.4's layout and divisions, `ddpsim buckets`,
 * AMP, a calibration file, overlap, NCCL's protocols and algorithms in ddp
 * and what the summary and the schedule's header say of them. The binary
 * under test is $DDPSIM_BIN (the sanitizer build in `make test`), else
 * build/asan/ddpsim.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"

/* The summary's numeric columns 11.. of a one-row CSV: iter, fwd, bwd, step,
 * comm, exposed, overlap, peak_mem, first_iter. */
struct row_times {
  double iter, fwd, bwd, step, comm, exposed, overlap, mem, first;
};

static struct row_times times_of(const char *args) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  struct row_times t;
  int n = sscanf(strchr(r.out, '\n') + 1,
                 "%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%*d,%*d,%*g,%*g,%*d,"
                 "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf",
                 &t.iter, &t.fwd, &t.bwd, &t.step, &t.comm, &t.exposed, &t.overlap, &t.mem,
                 &t.first);
  cr_assert_eq(n, 9, "%s", r.out);
  ds_test_release(&r);
  return t;
}

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml --format csv "

Test(cli, ddp_options_on_the_tiny_model) {
  /* Worked from the hand computation below (tiny_iteration_...): backward
   * with the reducer's copies into the buckets ends at 1236.682112 us, the
   * buckets' all-reduces take 641.1456 and 484.0128 us, the copies back to
   * .grad 8.388608 and 6.293504 us, the step 58.728448 us (PyTorch's foreach
   * SGD: 8 passes over the parameters); parameters
   * 1,835,264 fp32 = 7,341,056 B.
   * --no-overlap: both all-reduces after backward: 1236.682 + 1125.158,
   *   then bucket 1's copy back and the step: 2426.862 us; bucket 0's copy
   *   back (8.389 us) runs under bucket 1's all-reduce, the only
   *   communication hidden.
   * --no-sync 2: one accumulating micro-step without the reducer (400 + 2
   *   + 800 us; the second micro-step's launches run ahead under it) first:
   *   3022.569 us; then in the second micro-step AccumulateGrad adds into
   *   the .grad the first one created, and l2.weight's add (3 passes of
   *   4 MiB, 12.582912 us) comes before its copy into bucket 0, so the
   *   all-reduces and all after them start that much later (l1's and l0's
   *   adds run under bucket 0's all-reduce): 3035.152 us, 1517.576 per
   *   batch, communication unchanged.
   * --grad-as-bucket-view: the copies back go away: the last one
   *   (6.293504 us) ended the iteration (the copies into the buckets stay:
   *   zero_grad set .grad to None, so each backward makes it afresh).
   * --find-unused-parameters: iteration 0 already has the final buckets,
   *   so it takes as long as the steady one.
   * Iteration 0, one bucket: its all-reduce (1113.156 us) after backward,
   *   its copy back (14.682112 us), the step: 2423.249 us. */
  struct row_times base = times_of(TINY);
  struct row_times nov = times_of(TINY "--no-overlap");
  cr_assert_float_eq(nov.iter, 2.426862, 1e-5);
  cr_assert_float_eq(nov.comm - nov.exposed, 0.008389, 1e-5);
  struct row_times ns = times_of(TINY "--no-sync 2");
  cr_assert_float_eq(ns.iter, 3.022569 + 0.012582912, 1e-5);
  cr_assert_float_eq(ns.fwd, 2 * base.fwd, 1e-9);
  cr_assert_float_eq(ns.comm, base.comm, 1e-9);
  /* the second micro-step's backward starts with the first's .grad live:
   * 3 MB saved + 1 MB output + 7,341,056 B of grads, against the plain
   * run's peak after l0's backward (1 MB output + the grads): 3 MB more */
  cr_assert_float_eq((ns.mem - base.mem) * 1024 * 1024 * 1024, 3e6, 2200);
  struct ds_test_result r = ds_test_cli(TINY "--no-sync 2");
  cr_assert(strstr(r.out, ",no_sync=2,1.5175"), "%s", r.out);
  ds_test_release(&r);
  struct row_times view = times_of(TINY "--grad-as-bucket-view");
  /* the CSV carries 1e-6 GiB (1074 B) per value. Peak memory, what comes
   * and goes (ddp.h): the plain run peaks after l0's backward, its 1 MB
   * output held and all .grad allocated, 1e6 + 7,341,056 B; with the
   * gradients as views into the buckets only one layer's fresh .grad
   * lives, until its copy into the view: the peak is after l2's backward,
   * 2 MB saved + 1 MB output + l2.weight's 4,194,304 B */
  cr_assert_float_eq((base.mem - view.mem) * 1024 * 1024 * 1024,
                     1e6 + 7341056 - (3e6 + 4194304), 2200);
  cr_assert_float_eq(base.iter - view.iter, 0.006293504, 1e-5);
  struct row_times unused = times_of(TINY "--find-unused-parameters");
  cr_assert_float_eq(base.first, 2.423249, 1e-5);
  cr_assert_float_eq(unused.first, unused.iter, 1e-5);
  struct ds_test_result both = ds_test_cli(TINY "--static-graph --find-unused-parameters");
  cr_assert_eq(both.status, 2);
  ds_test_release(&both);
}

Test(cli, the_first_bucket_follows_pytorchs_rule_for_bucket_cap_mb) {
  /* tiny's gradients in ready order: l2.weight 4 MiB, l1.weight 2 MiB,
   * l0.bias 1 KiB, l0.weight 1 MiB. Expected, because distributed.py caps
   * the first bucket at _DEFAULT_FIRST_BUCKET_BYTES (1 MiB) only when
   * bucket_cap_mb is unset: unset, l2.weight alone overshoots 1 MiB and the
   * rest make 3 MiB; with bucket_cap_mb=25 the first cap is 25 MiB and one
   * bucket holds all 7 MiB; --first-bucket-mb 1 restores the small cap,
   * a layout torch DDP no longer makes beside a given bucket_cap_mb, so
   * stderr says so (noted), unless the two caps agree. */
  const struct { const char *args, *want; int noted; } cases[] = {
      {"", "buckets            2: 4.00, 3.00 MiB", 0},
      {"--bucket-mb 25", "buckets            1: 7.00 MiB", 0},
      {"--bucket-mb 25 --first-bucket-mb 1", "buckets            2: 4.00, 3.00 MiB", 1},
      {"--bucket-mb 25 --first-bucket-mb 25", "buckets            1: 7.00 MiB", 0},
      /* no reducer, nothing to say */
      {"--strategy dp --bucket-mb 25 --first-bucket-mb 1", "iteration", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml "
             "--model tests/data/tiny-model.yaml %s", cases[i].args);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, cases[i].want), "%s:\n%s", cases[i].args, r.out);
    cr_assert_eq(strstr(r.err, "ignores _DEFAULT_FIRST_BUCKET_BYTES") != NULL, cases[i].noted,
                 "%s: stderr\n%s", cases[i].args, r.err);
    ds_test_release(&r);
  }
}

/* All-reduce rows per iteration of a trace (iterations 0..2). */
static void count_allreduces(const char *path, int per_iter[3]) {
  char *text = ds_test_slurp(path);
  const char *line = text;
  int kind = -1, iter = -1;
  per_iter[0] = per_iter[1] = per_iter[2] = 0;
  for (; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (*line == '#') continue;
    if (kind < 0) { /* the header */
      kind = ds_test_csv_column(line, "kind");
      iter = ds_test_csv_column(line, "iter");
      continue;
    }
    const char *f = line;
    for (int k = 0; k < kind; k++) f = strchr(f, ',') + 1;
    if (strncmp(f, "allreduce,", 10) != 0) continue;
    int it = (int)ds_test_csv_field(line, iter);
    cr_assert(it >= 0 && it < 3);
    per_iter[it]++;
  }
  free(text);
}

Test(cli, static_graph_runs_one_bucket_twice_then_rebuilds) {
  /* Expected, because the reducer with static_graph=True rebuilds its
   * buckets before iteration 2: iterations 0 and 1 all-reduce one bucket
   * per rank (4 ranks), iteration 0 also its map of locally used
   * parameters (static_graph_first_iteration: all_reduce_local_used_map),
   * iteration 2 the two rebuilt ones; --iters defaults to 3 so that the
   * reported iteration is the rebuilt one. */
  char path[] = "/tmp/ddpsim_test_static_XXXXXX";
  ds_test_write_temp(path, "");
  char args[256];
  snprintf(args, sizeof args, TINY "--static-graph --trace %s", path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  int n[3];
  count_allreduces(path, n);
  cr_assert_eq(n[0], 8);
  cr_assert_eq(n[1], 4);
  cr_assert_eq(n[2], 8);
  unlink(path);
  /* --iters 2 would report iteration 1 (one bucket, 35.750 ms on 4gpu's
   * ResNet-50) under the rebuilt buckets' list: refused, naming why; 3
   * reports the rebuilt iteration, whose buckets the summary lists */
  ds_test_ddpsim_refuses("--topo 4gpu --static-graph --iters 2",
                         "option --iters: --static-graph needs 3 or more (PyTorch rebuilds its "
                         "buckets before iteration 2, and the last iteration is the one "
                         "reported), got 2");
  r = ds_test_cli("--topo 4gpu --static-graph --iters 3 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_eq(ds_test_csv_num(r.out, "n_buckets", 0), 5);
  ds_test_release(&r);
}

/* The trace's ops whose name starts with prefix, per iteration (0..4). */
static void count_prefixed(const char *path, const char *prefix, int per_iter[5]) {
  char *text = ds_test_slurp(path);
  int name = -1, iter = -1;
  size_t k = strlen(prefix);
  memset(per_iter, 0, 5 * sizeof *per_iter);
  for (const char *line = text; line && *line;
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (*line == '#') continue;
    if (name < 0) { /* the header */
      name = ds_test_csv_column(line, "name");
      iter = ds_test_csv_column(line, "iter");
      continue;
    }
    const char *f = line;
    for (int c = 0; c < name; c++) f = strchr(f, ',') + 1;
    if (strncmp(f, prefix, k) != 0) continue;
    int it = (int)ds_test_csv_field(line, iter);
    cr_assert(it >= 0 && it < 5);
    per_iter[it]++;
  }
  free(text);
}

Test(cli, the_rebuilds_forward_runs_where_it_is_not_the_reported_iteration) {
  /* Expected, because reducer.cpp's rebuild_buckets runs
   * sync_bucket_indices (two broadcasts, each with its host op, two copies
   * and the host's wait: 10 ops per rank, 4 ranks) in the first forward on
   * the rebuilt layout: iteration 1, static_graph's 2; never where the
   * buckets are not rebuilt (find_unused_parameters, PyTorch 1.4). The
   * reported (last) iteration stands for the steady state, so with the
   * default --iters 2 (static_graph: 3) it is built without them. With
   * gradient_as_bucket_view and 1.9's kept .grad, the copies into the new
   * buckets too: one kernel op per bucket (2; tiny-topo's host costs are
   * 0, so no host op). (Before the change: no rebuild op: fails.) */
  const struct { const char *args; int iter, ops, copies; } cases[] = {
      {"--iters 2", 1, 0, 0},
      {"--iters 3", 1, 40, 0},
      {"--iters 3 --grad-as-bucket-view", 1, 40, 0},
      {"--iters 3 --grad-as-bucket-view --pytorch-version 1.9", 1, 40, 8},
      {"--iters 3 --pytorch-version 1.9", 1, 40, 0},
      {"--iters 3 --find-unused-parameters", 1, 0, 0},
      {"--iters 3 --pytorch-version 1.4", 1, 0, 0},
      {"--static-graph", 2, 0, 0},
      {"--static-graph --iters 4", 2, 40, 0},
      {"--iters 5 --grad-accum 2", 1, 40, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char path[] = "/tmp/ddpsim_test_rebuild_XXXXXX";
    ds_test_write_temp(path, "");
    char args[256];
    snprintf(args, sizeof args, TINY "%s --trace %s", cases[c].args, path);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    ds_test_release(&r);
    int n[5], v[5];
    count_prefixed(path, "rebuild.", n);
    count_prefixed(path, "bucket0.view_copy", v);
    int v1[5];
    count_prefixed(path, "bucket1.view_copy", v1);
    for (int it = 0; it < 5; it++) {
      cr_assert_eq(n[it], it == cases[c].iter ? cases[c].ops : 0, "%s: iteration %d", args, it);
      cr_assert_eq(v[it] + v1[it], it == cases[c].iter ? cases[c].copies : 0,
                   "%s: iteration %d", args, it);
    }
    unlink(path);
  }
}

Test(cli, pytorch_1_4_pays_one_div_per_bucket) {
  /* Expected, because --pytorch-version 1.4 adds PyTorch 1.4's div_ over
   * each bucket before its all-reduce (ddp.h). On one rank of tiny-topo
   * (no host costs, no kernel overhead, a one-rank all-reduce takes no
   * time) the GPU runs every op in series, so the iteration grows by the
   * divs: every gradient read and written once more, 2 x 1,835,264 x 4 B
   * at 1000 GB/s = 14.682112 us, whatever the layout; and by
   * AccumulateGrad's adds into the .grad 1.4 keeps, 3 passes, 22.023168
   * us (the executor rounds each op to the ns; the loop's step moves the
   * foreach step's bytes, with no kernel overhead here). */
  struct ds_test_result a = ds_test_cli(TINY "--world-size 1");
  struct ds_test_result b = ds_test_cli(TINY "--world-size 1 --pytorch-version 1.4");
  cr_assert_eq(a.status, 0, "%s", a.err);
  cr_assert_eq(b.status, 0, "%s", b.err);
  double d = ds_test_csv_num(b.out, "iter_ms", 0) - ds_test_csv_num(a.out, "iter_ms", 0);
  cr_assert_float_eq(d, 0.014682112 + 0.022023168, 3e-6, "%.9f", d);
  char opts[64];
  ds_test_csv_str(b.out, "ddp_options", 0, opts, sizeof opts);
  cr_assert_str_eq(opts, "pytorch=1.4");
  cr_assert_float_eq(ds_test_csv_num(b.out, "first_bucket_mb", 0), 1, 0);
  ds_test_release(&a);
  ds_test_release(&b);
  ds_test_ddpsim_refuses(TINY "--pytorch-version 1.3",
                         "option --pytorch-version: expected");
  ds_test_ddpsim_refuses(TINY "--pytorch-version 1.4 --comm-hook none,fp16",
                         "PyTorch 1.4 has no --comm-hook");
  ds_test_ddpsim_refuses(TINY "--pytorch-version 1.4 --grad-as-bucket-view",
                         "PyTorch 1.4 has no --grad-as-bucket-view");
  /* torch.cuda.amp came with 1.6 */
  ds_test_ddpsim_refuses(TINY "--pytorch-version 1.4 --amp fp16", "PyTorch 1.4 has no --amp");
}

Test(cli, buckets_prints_pytorch_1_4s_layout) {
  /* Expected, because PyTorch 1.4 bins in registration order (l0.weight,
   * l0.bias, l1.weight, l2.weight) with a 1 MiB first bucket whatever the
   * cap: l0.weight's 1,048,576 B close it; the rest, 6,292,480 B, fill the
   * second; reversed, and never rebuilt (no "rebuilt" phase). */
  struct ds_test_result r = ds_test_cli(
      "buckets --model tests/data/tiny-model.yaml "
      "--bucket-mb 25 --pytorch-version 1.4");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.out, "model,rule,bucket_cap_mb,first_bucket_mb,phase,bucket,bytes,params\n"
                          "tiny,pytorch1.4,25,1,iter0,0,6292480,1 2 3\n"
                          "tiny,pytorch1.4,25,1,iter0,1,1048576,0\n");
  ds_test_release(&r);
}

Test(cli, buckets_names_the_first_buckets_cap) {
  /* first_bucket_mb, the cap the layout was binned with: a given
   * --bucket-mb caps the first bucket too (current rules), so at 25 MiB the
   * first rebuilt bucket takes all 7 MiB, at 5 MiB l2.weight (4 MiB) and
   * l1.weight (2 MiB); unset it is 1 MiB, and --first-bucket-mb 2 sets it:
   * l2.weight alone closes bucket 0 in gradient-ready order. */
  const char *args[] = {"--bucket-mb 25", "--bucket-mb 5", "",
                        "--bucket-mb 25 --first-bucket-mb 2"};
  const char *want[] = {"tiny,default,25,25,rebuilt,0,7341056,3 2 1 0\n",
                        "tiny,default,5,5,rebuilt,0,6291456,3 2\n",
                        "tiny,default,unset,1,rebuilt,0,4194304,3\n",
                        "tiny,default,25,2,rebuilt,0,4194304,3\n"};
  for (int i = 0; i < 4; i++) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "buckets --model tests/data/tiny-model.yaml %s", args[i]);
    struct ds_test_result r = ds_test_cli(cmd);
    cr_assert_eq(r.status, 0, "%s: %s", cmd, r.err);
    cr_assert(strstr(r.out, want[i]), "%s: want %s in\n%s", cmd, want[i], r.out);
    ds_test_release(&r);
  }
}

Test(cli, buckets_bins_the_runs_dtype) {
  /* Expected, because the caps are bytes: under --dtype fp16 each parameter
   * is 2 B, so at 5 MiB the rebuilt first bucket (gradient-ready order
   * l2.weight, l1.weight, l0.bias, l0.weight: 2 MiB + 1 MiB + 512 B +
   * 512 KiB = 3,670,528 B) never reaches the cap and holds all four, where
   * fp32's closes after l1.weight (6 MiB, the test above). The run at that
   * dtype all-reduces the same one bucket. */
  struct ds_test_result r = ds_test_cli(
      "buckets --model tests/data/tiny-model.yaml --bucket-mb 5 --dtype fp16");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "tiny,default,5,5,rebuilt,0,3670528,3 2 1 0\n"), "%s", r.out);
  cr_assert_null(strstr(r.out, "rebuilt,1,"), "one rebuilt bucket:\n%s", r.out);
  ds_test_release(&r);
  struct ds_test_result run = ds_test_cli(TINY "--bucket-mb 5 --dtype fp16");
  cr_assert_eq(run.status, 0, "%s", run.err);
  cr_assert_eq(ds_test_csv_num(run.out, "n_buckets", 0), 1);
  ds_test_release(&run);
  ds_test_ddpsim_refuses("buckets --dtype fp8", "option --dtype: expected fp32, fp16 or bf16");
}

Test(cli, amp_all_reduces_fp32_gradients) {
  /* Expected, because under autocast the gradients and DDP's buckets stay
   * fp32: ResNet-50's 25,557,032 parameters all-reduce 97.49 MiB whatever
   * --amp says, half that under --dtype fp16. */
  struct ds_test_result r = ds_test_cli("--topo 4gpu --amp bf16 --bucket-mb 100 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  char s[16];
  ds_test_csv_str(r.out, "amp", 0, s, sizeof s);
  cr_assert_str_eq(s, "bf16");
  ds_test_csv_str(r.out, "dtype", 0, s, sizeof s);
  cr_assert_str_eq(s, "fp32");
  cr_assert_float_eq(ds_test_csv_num(r.out, "bucket_mib", 0), 25557032.0 * 4 / 1048576, 1e-5);
  ds_test_release(&r);
  r = ds_test_cli("--topo 4gpu --dtype fp16 --bucket-mb 100 --format csv");
  cr_assert_float_eq(ds_test_csv_num(r.out, "bucket_mib", 0), 25557032.0 * 2 / 1048576, 1e-5);
  ds_test_release(&r);
  ds_test_ddpsim_refuses("--topo 4gpu --amp fp8", "option --amp: expected none, fp16 or bf16");
}

Test(cli, a_calibration_file_replaces_the_compute_factors) {
  /* tiny-calib.yaml halves the FLOP efficiency and adds 10 us per kernel:
   * forward 2 * (100 + 200 + 100) + 3 * 10 = 830 us, plus the loss (2 MB
   * at 1000 GB/s, 2 us, + 10 us) = 0.842 ms; backward 2 * 800 + 3 * 10 =
   * 1630 us, plus the reducer's one kernel per tensor into the buckets and
   * one back: 2 * (4 * 10 us + 14,682,112 B at 1000 GB/s) = 109.364224 us.
   * Expected, because only the keys the file has change. */
  struct row_times t = times_of(TINY "--calib tests/data/tiny-calib.yaml");
  cr_assert_float_eq(t.fwd, 0.842, 1e-9);
  cr_assert_float_eq(t.bwd, 1.739364224, 1e-6);
  struct ds_test_result r = ds_test_cli(TINY "--calib tests/data/nope.yaml");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "nope.yaml"), "%s", r.err);
  ds_test_release(&r);
}

Test(cli, overlap_beats_no_overlap_on_two_nodes) {
  /* ResNet-50 and BERT-base on 2node-ib: overlapping all-reduces with
   * backward must beat waiting for its end (issue #4's check). */
  const char *models[] = {"resnet50", "bert-base"};
  for (int i = 0; i < 2; i++) {
    char a[256], b[256];
    snprintf(a, sizeof a, "--topo 2node-ib --model %s --format csv", models[i]);
    snprintf(b, sizeof b, "--topo 2node-ib --model %s --format csv --no-overlap", models[i]);
    struct row_times with = times_of(a), without = times_of(b);
    cr_assert_lt(with.iter, without.iter, "%s: %g vs %g", models[i], with.iter, without.iter);
    cr_assert_lt(with.exposed, without.exposed);
  }
}

Test(cli, nccl_protocols_in_ddp) {
  /* NCCL's choices run by default (as --algo auto): the summary says auto,
   * and its all-reduces are slower than the plain ring's (--algo ring;
   * NCCL's 12 channels of 20 GB/s give 240 GB/s of bus bandwidth where the
   * links carry 300, before the per-call latencies). */
  struct ds_test_result plain =
      ds_test_cli("--topo dgx-a100 --model bert-base --format csv --algo ring");
  struct ds_test_result nccl = ds_test_cli("--topo dgx-a100 --model bert-base --format csv");
  cr_assert_eq(plain.status, 0, "%s", plain.err);
  cr_assert_eq(nccl.status, 0, "%s", nccl.err);
  double comm_plain, comm_nccl;
  cr_assert_eq(sscanf(strchr(plain.out, '\n') + 1,
                      "%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%*d,%*d,%*g,%*g,%*d,%*g,%*g,%*g,%*g,%lf",
                      &comm_plain), 1, "%s", plain.out);
  cr_assert_eq(sscanf(strchr(nccl.out, '\n') + 1,
                      "%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%*d,%*d,%*g,%*g,%*d,%*g,%*g,%*g,%*g,%lf",
                      &comm_nccl), 1, "%s", nccl.out);
  cr_assert(strstr(nccl.out, ",auto,"), "%s", nccl.out);
  cr_assert(strstr(plain.out, ",ring,"), "%s", plain.out);
  cr_assert_gt(comm_nccl, comm_plain * 1.2, "%g vs %g", comm_nccl, comm_plain);
  ds_test_release(&plain);
  ds_test_release(&nccl);
  /* Without NCCL's model (TestGPU has no known architecture): an explicit
   * --algo auto says so and runs the plain ring, the default runs it
   * silently (the summary says ring); an explicit protocol is a usage
   * error. */
  struct ds_test_result quiet = ds_test_cli(
      "--topo tests/data/tiny-topo.yaml --model "
      "tests/data/tiny-model.yaml --format csv");
  cr_assert_str_eq(quiet.err, "");
  cr_assert(strstr(quiet.out, ",ring,"), "%s", quiet.out);
  ds_test_release(&quiet);
  struct ds_test_result fallback = ds_test_cli(
      "--topo tests/data/tiny-topo.yaml --model "
      "tests/data/tiny-model.yaml --format csv --algo auto");
  cr_assert_eq(fallback.status, 0, "%s", fallback.err);
  cr_assert(strstr(fallback.err, "note:"), "%s", fallback.err);
  cr_assert(strstr(fallback.out, ",ring,"), "%s", fallback.out);
  ds_test_release(&fallback);
  struct ds_test_result fixed = ds_test_cli(
      "--topo tests/data/tiny-topo.yaml --model "
      "tests/data/tiny-model.yaml --proto LL128");
  cr_assert_eq(fixed.status, 2);
  cr_assert(strstr(fixed.err, "--proto"), "%s", fixed.err);
  ds_test_release(&fixed);
  struct ds_test_result none = ds_test_cli("--topo 4gpu --algo auto --proto none");
  cr_assert_eq(none.status, 2);
  cr_assert(strstr(none.err, "--proto"), "%s", none.err);
  ds_test_release(&none);
}

/* Counts the schedule's all-reduces run with protocol `proto` ("/LL128,"). */
static int schedule_count(const char *path, const char *proto) {
  FILE *fp = fopen(path, "r");
  cr_assert(fp != NULL, "%s", path);
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, fp)) n += strstr(line, proto) != NULL;
  fclose(fp);
  return n;
}

Test(cli, a_protocol_set_in_ddp) {
  /* --proto LL,Simple is NCCL_PROTO=LL,Simple: NCCL's choice per bucket
   * among LL and Simple. bert-base on dgx-a100: bucket0 (2371596 B) runs
   * LL128 under auto and LL under the set. Expected, because NCCL's ring
   * predictions (test_nccl_model_plan.c's table: lat + S / algbw) are LL128
   * 40.6 + 18.80 = 59.40 us, LL 15 + 47.33 = 62.33 us, Simple 56 + 17.29 =
   * 73.29 us. The summary names the set ('+' keeps the CSV column whole);
   * ^LL128 is the same set. A bad set exits 2 naming the flag. */
  char dir[] = "/tmp/ds_protoset_XXXXXX";
  ds_test_make_dir(dir);
  const char *flags[] = {"auto", "LL,Simple", "^LL128"};
  int ll128[3], ll[3];
  for (int i = 0; i < 3; i++) {
    char args[512], path[256];
    snprintf(path, sizeof path, "%s/s%d.csv", dir, i);
    snprintf(args, sizeof args, "--topo dgx-a100 --model bert-base --format csv --proto %s "
             "--schedule %s", flags[i], path);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    cr_assert(strstr(r.out, i == 0 ? ",auto," : ",auto/LL+Simple,"), "%s: %s", args, r.out);
    ll128[i] = schedule_count(path, "/LL128,");
    ll[i] = schedule_count(path, "/LL,");
    ds_test_release(&r);
    unlink(path);
  }
  rmdir(dir);
  cr_assert_gt(ll128[0], 0);
  cr_assert_eq(ll128[1], 0);
  cr_assert_eq(ll128[2], 0);
  cr_assert_gt(ll[1], ll[0], "LL %d vs %d", ll[1], ll[0]);
  cr_assert_eq(ll[2], ll[1]);
  const char *bad[][2] = {{"--topo dgx-a100 --proto LL,Fast", "option --proto 'LL,Fast'"},
                          {"--topo dgx-a100 --proto ^Simple,LL,LL128", "leaves no protocol"},
                          {"--topo dgx-h100 --algo nvls --proto LL,LL128", "Simple"},
                          {"--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
                           "--proto LL,Simple", "option --proto LL,Simple"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_test_result r = ds_test_cli(bad[i][0]);
    cr_assert_eq(r.status, 2, "%s: %d", bad[i][0], r.status);
    cr_assert(strstr(r.err, bad[i][1]), "%s: %s", bad[i][0], r.err);
    ds_test_release(&r);
  }
}

Test(cli, allreduce_algorithms_in_ddp) {
  /* --algo names DDP's all-reduce algorithm; the summary's coll_algo and
   * the schedule's algo column say what ran; what cannot run is a usage
   * error (exit 2) naming it. */
  const char *ok[][2] = {{"--topo 2node-ib --algo hierarchical", ",hierarchical,"},
                         {"--topo 2node-ib --algo tree --proto auto", ",tree/auto,"},
                         {"--topo dgx-h100 --algo nvls", ",nvls/auto,"},
                         {"--topo 2node-ib --algo nvls", ",nvls/auto,"},
                         {"--topo dgx-a100 --algo direct", ",direct,"},
                         /* every protocol named is NCCL_PROTO set, not auto */
                         {"--topo pcie-8gpu --proto LL,LL128,Simple", ",auto/LL+LL128+Simple,"},
                         {"--topo pcie-8gpu --proto auto", ",auto,"}};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    char args[256];
    snprintf(args, sizeof args, "%s --model bert-base --format csv", ok[i][0]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    cr_assert(strstr(r.out, ok[i][1]), "%s: %s", args, r.out);
    ds_test_release(&r);
  }
  const char *bad[][2] = {{"--topo dgx-a100 --algo nvls", "nvls"},
                          {"--topo dgx-h100 --algo nvls --proto LL", "--proto"},
                          {"--topo dgx-h100 --algo direct --proto Simple", "--proto"},
                          {"--topo dgx-h100 --algo trees", "--algo"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_test_result r = ds_test_cli(bad[i][0]);
    cr_assert_eq(r.status, 2, "%s: %d", bad[i][0], r.status);
    cr_assert(strstr(r.err, bad[i][1]), "%s: %s", bad[i][0], r.err);
    ds_test_release(&r);
  }
}

/* Where NCCL's default leaves LL128 off (pcie-8gpu's rings cross PCIe
 * inside the node), the text says so under the all-reduce line, as
 * `ddpsim collective` does; a set naming LL128, or an NVLink box, has no
 * such line. */
Test(cli, the_text_says_where_ll128_is_off_by_default) {
  const char *note = "  LL128 off: NCCL enables it by default only over NVLink inside a node";
  const struct {
    const char *args;
    int has;
  } cases[] = {{"--topo pcie-8gpu", 1},
               {"--topo pcie-8gpu --proto LL,LL128,Simple", 0},
               {"--topo pcie-8gpu --algo ring", 0},
               {"--topo dgx-a100", 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_test_result r = ds_test_cli(cases[i].args);
    cr_assert_eq(r.status, 0, "%s: %s", cases[i].args, r.err);
    cr_assert_eq(strstr(r.out, note) != NULL, cases[i].has, "%s: %s", cases[i].args, r.out);
    ds_test_release(&r);
  }
}

Test(cli, the_header_names_nccl_only_where_it_runs) {
  /* --algo auto (the default) runs NCCL's cost model, which chooses the
   * algorithm per call, and nvls runs NCCL's protocols; tree and ring are
   * the plain ones on the links, and say so. The header's first line names
   * the collective model (per flow here: 8 ranks), never an algorithm. */
  static const struct {
    const char *algo, *line;
  } cases[] = {
      {"auto", "\nall-reduce auto: NCCL's choice of algorithm and protocol per call, on its "
               "channels"},
      {"nvls", "\nall-reduce nvls/auto: NCCL's channels and protocols"},
      {"tree", "\nall-reduce tree: the plain algorithm on the links' own bandwidth and "
               "latency, not NCCL's"},
      {"ring", "\nall-reduce ring: the plain algorithm on the links' own bandwidth and "
               "latency, not NCCL's"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo dgx-h100 --model tests/data/tiny-model.yaml --algo %s",
             cases[i].algo);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s: %s", cases[i].algo, r.err);
    cr_assert(strstr(r.out, cases[i].line), "%s:\n%s", cases[i].algo, r.out);
    cr_assert(strstr(r.out, ", network maxmin, collectives per flow\n"), "%s:\n%s",
              cases[i].algo, r.out);
    ds_test_release(&r);
  }
}

/* A run of ddp alone names its options on the bucket line, as the
 * strategies' blocks do (a new user's review: --grad-accum 4 printed an
 * iteration of four batches, and --comm-hook, --no-overlap or --loop free
 * their times, with nothing in the text saying so); the defaults print the
 * line as before. */
Test(cli, a_ddp_text_names_its_options) {
  static const struct {
    const char *flags, *line;
  } cases[] = {
      {"", "\nbucket cap 25 MiB (first bucket 1 MiB)\n"},
      {"--grad-accum 4", "\nbucket cap 25 MiB (first bucket 1 MiB), options grad_accum=4\n"},
      {"--no-overlap --comm-hook fp16",
       "\nbucket cap 25 MiB (first bucket 1 MiB), options no_overlap;comm_hook=fp16\n"},
      {"--loop free", "\nbucket cap 25 MiB (first bucket 1 MiB), options loop=free\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml --model "
             "tests/data/tiny-model.yaml %s", cases[i].flags);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s: %s", cases[i].flags, r.err);
    cr_assert(strstr(r.out, cases[i].line), "%s:\n%s", cases[i].flags, r.out);
    ds_test_release(&r);
  }
}

/* --ring-chunks pipelines the plain algorithms; where NCCL's model runs
 * ddp's collectives (--algo auto, the default, or a --proto, on a GPU it
 * knows) NCCL's own chunks and slices do, and the run is refused (a new
 * user's review: the chunks pipelined NCCL's protocols twice). dp's
 * collectives are the plain chains and keep them. --nccl-extra with the
 * plain algorithm has nothing to add to. */
Test(cli, ring_chunks_and_nccl_extra_only_where_they_mean_something) {
  ds_test_ddpsim_refuses("--topo dgx-a100 --model tests/data/tiny-model.yaml --ring-chunks 4",
                         "option --ring-chunks: NCCL's model runs ddp's collectives "
                         "(protocol auto), and NCCL pipelines by its own chunks");
  ds_test_ddpsim_refuses("--topo dgx-a100 --model tests/data/tiny-model.yaml --strategy dp,ddp "
                         "--proto LL --ring-chunks 1,2", "(protocol LL)");
  ds_test_ddpsim_refuses("--topo dgx-a100 --model tests/data/tiny-model.yaml --algo ring "
                         "--nccl-extra measured", "option --nccl-extra measured: it adds the "
                         "mechanisms NCCL's model leaves out to that model, but --proto none "
                         "runs ddp's all-reduce ring as the plain algorithm");
  ds_test_ddpsim_refuses("--topo dgx-a100 --model tests/data/tiny-model.yaml --algo direct "
                         "--nccl-extra measured", "which does not run ddp's all-reduce direct "
                         "(NCCL has no protocol for it): drop --nccl-extra");
  /* the direct and reduce-broadcast all-reduces have no ring step, and the
   * tiny model no buffer to broadcast: nothing to cut, as in ddpsim
   * collective (one rule, sim/coll ds_coll_ring_chunks_use, one wording) */
  ds_test_ddpsim_refuses("--topo dgx-a100 --model tests/data/tiny-model.yaml --algo direct "
                         "--ring-chunks 1,2", "option --ring-chunks: ddp's run (all-reduce "
                         "direct, no buffer broadcast) has no ring step to cut into pieces "
                         "(--ring-chunks pipelines the plain ring");
  ds_test_ddpsim_refuses("collective --topo dgx-a100 -b 1M -e 1M --algo reduce-broadcast "
                         "--ring-chunks 2", "option --ring-chunks: allreduce reduce-broadcast "
                         "has no ring step to cut into pieces (--ring-chunks pipelines the "
                         "plain ring");
  /* the aggregate ring moves one chunk per step: one wording in both
   * commands, naming the rank count where --coll-model auto chose it */
  ds_test_ddpsim_refuses("--topo dgx-a100 --model tests/data/tiny-model.yaml --algo ring "
                         "--proto none --coll-model aggregate --ring-chunks 2",
                         "option --ring-chunks: the aggregate ring moves one chunk per step, "
                         "so --ring-chunks > 1 needs --coll-model flow");
  ds_test_ddpsim_refuses("collective --topo dgx-a100 -b 1M -e 1M --coll-model aggregate "
                         "--ring-chunks 2", "option --ring-chunks: the aggregate ring moves "
                         "one chunk per step, so --ring-chunks > 1 needs --coll-model flow");
  ds_test_ddpsim_refuses("collective --topo cluster-512x8-h100 -g 128 -b 1M -e 1M "
                         "--ring-chunks 2", "and with 128 ranks --coll-model auto "
                         "aggregates: add --coll-model flow");
  /* resnet50's BatchNorm buffers broadcast in a chain, which the chunks cut */
  struct ds_test_result bn = ds_test_cli(
      "--topo dgx-a100 --model "
      "resnet50 --algo direct --ring-chunks 2 --format csv");
  cr_assert_eq(bn.status, 0, "%s", bn.err);
  ds_test_release(&bn);
  /* dp's broadcasts and reduces run NCCL's ring under --algo auto, so
   * the chunks cut its plain chains only (--algo ring) */
  ds_test_ddpsim_refuses("--topo dgx-a100 --model tests/data/tiny-model.yaml --strategy dp "
                         "--ring-chunks 2", "option --ring-chunks: NCCL's model runs dp's "
                         "broadcasts and reduces");
  const char *ok[] = {"--algo ring --ring-chunks 4", "--strategy dp --algo ring --ring-chunks 2",
                      "--strategy dp,ddp --algo ring --ring-chunks 1,2",
                      "--proto LL --nccl-extra none", "--ring-chunks 1",
                      /* none is what the plain ring has */
                      "--algo ring --nccl-extra none"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo dgx-a100 --model tests/data/tiny-model.yaml %s "
             "--format csv", ok[i]);
    struct ds_test_result r = ds_test_cli_ok(args);
    ds_test_release(&r);
  }
}

Test(cli, schedule_header_says_nccl_extra_only_where_nccl_runs) {
  /* The tiny topology runs the plain ring (no NCCL model), one rank no
   * collective at all: the header's nccl_extra is none, as the summary's
   * column says (revuser2 item 8); 4gpu's NCCL model (auto) keeps
   * measured. */
  const char *none[] = {"--algo ring", "--world-size 1"};
  for (size_t k = 0; k < 2; k++) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml --model "
             "tests/data/tiny-model.yaml %s --schedule -", none[k]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, " nccl_extra=none "), "%s: %s", args, r.out);
    ds_test_release(&r);
  }
  struct ds_test_result r =
      ds_test_cli("--topo 4gpu --model tests/data/tiny-model.yaml --schedule -");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, " algo=auto nccl_extra=measured "), "%s", r.out);
  ds_test_release(&r);
}
