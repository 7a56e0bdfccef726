/*
 * The ddpsim command end to end: the design card's example, formats,
 * sweeps, file lookup, a closed-form iteration, the golden run, determinism
 * and every kind of bad input (exit status 2, a located message, no file
 * left behind). The binary under test is $DDPSIM_BIN (the sanitizer build
 * in `make test`), else build/asan/ddpsim.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/cmd/bucketcmd.h"
#include "sim/cli/options.h"
#include "sim/cli/report.h"
#include "tests/options_help.h"
#include "tests/support.h"
#include "traces/trace.h"

static struct ds_test_result run(const char *args) {
  return ds_test_run("", ds_test_ddpsim(), args);
}

static void make_dir(char *tmpl) { cr_assert(mkdtemp(tmpl) != NULL); }

Test(cli, design_card_example) {
  struct ds_test_result r = run("--topo 4gpu.yaml --bucket-mb 25");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *want[] = {"ddp: resnet50 on 4gpu (4 x A100-SXM4-80GB)",
                        "  iteration ", "    forward ", "    backward ",
                        "    optimizer ", "  communication ", "    exposed ",
                        "    overlap ", "  buckets            4:", "  peak memory "};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_assert(strstr(r.out, want[i]), "missing \"%s\" in:\n%s", want[i], r.out);
  ds_test_release(&r);
}

Test(cli, csv_has_the_promised_columns_and_one_row_per_bucket_size) {
  struct ds_test_result r = run("--topo 4gpu --bucket-mb 1,5,25 --format csv");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *cols[] = {"strategy", "model", "topology", "world_size", "batch_per_gpu",
                        "bucket_mb", "n_buckets", "iter_ms", "fwd_ms", "bwd_ms",
                        "step_ms", "comm_ms", "exposed_comm_ms", "overlap_pct",
                        "peak_mem_gib"};
  char header[1024];
  sscanf(r.out, "%1023[^\n]", header);
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, ",%s,", cols[i]);
    char padded[1100];
    snprintf(padded, sizeof padded, ",%s,", header);
    cr_assert(strstr(padded, quoted), "column %s missing from %s", cols[i], header);
  }
  int lines = 0;
  for (const char *p = r.out; *p; p++) lines += *p == '\n';
  cr_assert_eq(lines, 4, "%s", r.out);
  cr_assert(strstr(r.out, "ddp,resnet50,4gpu,A100-SXM4-80GB,fp32,4,32,1,"), "%s", r.out);
  ds_test_release(&r);
}

Test(cli, json_has_one_object_per_configuration) {
  struct ds_test_result r = run("--topo 4gpu --bucket-mb 5,25 --format json");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert_eq(r.out[0], '[');
  int objects = 0;
  for (const char *p = r.out; (p = strstr(p, "\"iter_ms\"")); p++) objects++;
  cr_assert_eq(objects, 2, "%s", r.out);
  cr_assert(strstr(r.out, "\"bucket_mib\": ["), "%s", r.out);
  ds_test_release(&r);
}

Test(cli, model_names_are_looked_up_without_suffix) {
  struct ds_test_result r = run("--topo dgx-a100 --model bert-base --format csv");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "ddp,bert-base,dgx-a100,"), "%s", r.out);
  ds_test_release(&r);
}

/* The summary's numeric columns 11.. of a one-row CSV: iter, fwd, bwd, step,
 * comm, exposed, overlap, peak_mem, first_iter. */
struct row_times {
  double iter, fwd, bwd, step, comm, exposed, overlap, mem, first;
};

static struct row_times times_of(const char *args) {
  struct ds_test_result r = run(args);
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
   * --grad-as-bucket-view: the 7,341,056 B of bucket copies go away, and so
   *   do the copies back: the last one (6.293504 us) ended the iteration.
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
  struct ds_test_result r = run(TINY "--no-sync 2");
  cr_assert(strstr(r.out, ",no_sync=2,1.5175"), "%s", r.out);
  ds_test_release(&r);
  struct row_times view = times_of(TINY "--grad-as-bucket-view");
  /* the CSV carries 1e-6 GiB (1074 B) per value. Peak memory, what comes
   * and goes (ddp.h): the plain run peaks after l0's backward, its 1 MB
   * output held and all .grad allocated, 1e6 + 7,341,056 B; with the
   * gradients as views into the buckets nothing is allocated in backward,
   * and the peak is its start: 3 MB saved + 1 MB output */
  cr_assert_float_eq((base.mem - view.mem) * 1024 * 1024 * 1024, 1e6 + 7341056 - 4e6, 2200);
  cr_assert_float_eq(base.iter - view.iter, 0.006293504, 1e-5);
  struct row_times unused = times_of(TINY "--find-unused-parameters");
  cr_assert_float_eq(base.first, 2.423249, 1e-5);
  cr_assert_float_eq(unused.first, unused.iter, 1e-5);
  struct ds_test_result both = run(TINY "--static-graph --find-unused-parameters");
  cr_assert_eq(both.status, 2);
  ds_test_release(&both);
}

Test(cli, the_first_bucket_follows_pytorchs_rule_for_bucket_cap_mb) {
  /* tiny's gradients in ready order: l2.weight 4 MiB, l1.weight 2 MiB,
   * l0.bias 1 KiB, l0.weight 1 MiB. Expected, because distributed.py caps
   * the first bucket at _DEFAULT_FIRST_BUCKET_BYTES (1 MiB) only when
   * bucket_cap_mb is unset: unset, l2.weight alone overshoots 1 MiB and the
   * rest make 3 MiB; with bucket_cap_mb=25 the first cap is 25 MiB and one
   * bucket holds all 7 MiB; --first-bucket-mb 1 restores the small cap. */
  const struct { const char *args, *want; } cases[] = {
      {"", "buckets            2: 4.00, 3.00 MiB"},
      {"--bucket-mb 25", "buckets            1: 7.00 MiB"},
      {"--bucket-mb 25 --first-bucket-mb 1", "buckets            2: 4.00, 3.00 MiB"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml "
             "--model tests/data/tiny-model.yaml %s", cases[i].args);
    struct ds_test_result r = run(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, cases[i].want), "%s:\n%s", cases[i].args, r.out);
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
  struct ds_test_result r = run(args);
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
  r = run("--topo 4gpu --static-graph --iters 3 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_eq(ds_test_csv_num(r.out, "n_buckets", 0), 5);
  ds_test_release(&r);
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
  struct ds_test_result a = run(TINY "--world-size 1");
  struct ds_test_result b = run(TINY "--world-size 1 --pytorch-version 1.4");
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
  struct ds_test_result r = run("buckets --model tests/data/tiny-model.yaml "
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
    struct ds_test_result r = run(cmd);
    cr_assert_eq(r.status, 0, "%s: %s", cmd, r.err);
    cr_assert(strstr(r.out, want[i]), "%s: want %s in\n%s", cmd, want[i], r.out);
    ds_test_release(&r);
  }
}

Test(cli, csv_and_json_say_whether_a_configuration_fits_the_gpu) {
  /* 4gpu's A100-SXM4-80GB holds 81920 MiB = 80 GiB (nvidia-smi's total,
   * tools/gen_gpus.py MEM_MIB), not 80e9 B = 74.5 GiB. ResNet-50's DDP
   * peak (at backward's start) grows by 0.0801 GiB per sample: 79.928215
   * GiB at batch 994 fits, 80.008339 GiB at 995 does not. Every row's
   * fits_memory must say peak_mem_gib <= gpu_mem_gib. */
  struct ds_test_result r = run("--topo 4gpu --batch 993:996:1 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *want[] = {"yes", "yes", "no", "no"};
  for (int i = 0; i < 4; i++) {
    char fits[8];
    ds_test_csv_str(r.out, "fits_memory", i, fits, sizeof fits);
    cr_assert_str_eq(fits, want[i], "row %d", i);
    double peak = ds_test_csv_num(r.out, "peak_mem_gib", i);
    double cap = ds_test_csv_num(r.out, "gpu_mem_gib", i);
    cr_assert_float_eq(cap, 80.0, 1e-6);
    cr_assert_eq(peak <= cap, strcmp(fits, "yes") == 0, "row %d: %g of %g", i, peak, cap);
  }
  ds_test_release(&r);
  r = run("--topo 4gpu --batch 995 --format json");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\"fits_memory\": \"no\""), "%s", r.out);
  ds_test_release(&r);
  /* the text warning compares and says GiB on both sides; at batch 950
   * (76.40 GiB) it is silent, where the decimal 74.5 "GB" warned */
  r = run("--topo 4gpu --batch 995");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "warning: 80.01 GiB per GPU exceeds the A100-SXM4-80GB's 80.00 GiB of "
                          "memory"), "%s", r.out);
  ds_test_release(&r);
  r = run("--topo 4gpu --batch 950");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_null(strstr(r.out, "warning:"), "%s", r.out);
  ds_test_release(&r);
}

Test(cli, amp_all_reduces_fp32_gradients) {
  /* Expected, because under autocast the gradients and DDP's buckets stay
   * fp32: ResNet-50's 25,557,032 parameters all-reduce 97.49 MiB whatever
   * --amp says, half that under --dtype fp16. */
  struct ds_test_result r = run("--topo 4gpu --amp bf16 --bucket-mb 100 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  char s[16];
  ds_test_csv_str(r.out, "amp", 0, s, sizeof s);
  cr_assert_str_eq(s, "bf16");
  ds_test_csv_str(r.out, "dtype", 0, s, sizeof s);
  cr_assert_str_eq(s, "fp32");
  cr_assert_float_eq(ds_test_csv_num(r.out, "bucket_mib", 0), 25557032.0 * 4 / 1048576, 1e-5);
  ds_test_release(&r);
  r = run("--topo 4gpu --dtype fp16 --bucket-mb 100 --format csv");
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
  struct ds_test_result r = run(TINY "--calib tests/data/nope.yaml");
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
  struct ds_test_result plain = run("--topo dgx-a100 --model bert-base --format csv --algo ring");
  struct ds_test_result nccl = run("--topo dgx-a100 --model bert-base --format csv");
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
  struct ds_test_result quiet = run("--topo tests/data/tiny-topo.yaml --model "
                                    "tests/data/tiny-model.yaml --format csv");
  cr_assert_str_eq(quiet.err, "");
  cr_assert(strstr(quiet.out, ",ring,"), "%s", quiet.out);
  ds_test_release(&quiet);
  struct ds_test_result fallback = run("--topo tests/data/tiny-topo.yaml --model "
                               "tests/data/tiny-model.yaml --format csv --algo auto");
  cr_assert_eq(fallback.status, 0, "%s", fallback.err);
  cr_assert(strstr(fallback.err, "note:"), "%s", fallback.err);
  cr_assert(strstr(fallback.out, ",ring,"), "%s", fallback.out);
  ds_test_release(&fallback);
  struct ds_test_result fixed = run("--topo tests/data/tiny-topo.yaml --model "
                            "tests/data/tiny-model.yaml --proto LL128");
  cr_assert_eq(fixed.status, 2);
  cr_assert(strstr(fixed.err, "--proto"), "%s", fixed.err);
  ds_test_release(&fixed);
  struct ds_test_result none = run("--topo 4gpu --algo auto --proto none");
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
   * predictions (test_nccl_model.c's table: lat + S / algbw) are LL128
   * 40.6 + 18.80 = 59.40 us, LL 15 + 47.33 = 62.33 us, Simple 56 + 17.29 =
   * 73.29 us. The summary names the set ('+' keeps the CSV column whole);
   * ^LL128 is the same set. A bad set exits 2 naming the flag. */
  char dir[] = "/tmp/ds_protoset_XXXXXX";
  make_dir(dir);
  const char *flags[] = {"auto", "LL,Simple", "^LL128"};
  int ll128[3], ll[3];
  for (int i = 0; i < 3; i++) {
    char args[512], path[256];
    snprintf(path, sizeof path, "%s/s%d.csv", dir, i);
    snprintf(args, sizeof args, "--topo dgx-a100 --model bert-base --format csv --proto %s "
             "--schedule %s", flags[i], path);
    struct ds_test_result r = run(args);
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
    struct ds_test_result r = run(bad[i][0]);
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
    struct ds_test_result r = run(args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    cr_assert(strstr(r.out, ok[i][1]), "%s: %s", args, r.out);
    ds_test_release(&r);
  }
  const char *bad[][2] = {{"--topo dgx-a100 --algo nvls", "nvls"},
                          {"--topo dgx-h100 --algo nvls --proto LL", "--proto"},
                          {"--topo dgx-h100 --algo direct --proto Simple", "--proto"},
                          {"--topo dgx-h100 --algo trees", "--algo"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_test_result r = run(bad[i][0]);
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
    struct ds_test_result r = run(cases[i].args);
    cr_assert_eq(r.status, 0, "%s: %s", cases[i].args, r.err);
    cr_assert_eq(strstr(r.out, note) != NULL, cases[i].has, "%s: %s", cases[i].args, r.out);
    ds_test_release(&r);
  }
}

Test(cli, a_user_topology_outside_the_tree_uses_the_shipped_gpu_table) {
  /* Expected, because a user's own file rarely sits beside a gpus.yaml:
   * the shipped table is found as data files are. */
  char dir[] = "/tmp/ddpsim-user-XXXXXX", path[256], args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/mine.yaml", dir);
  char *text = ds_test_slurp("topologies/4gpu.yaml");
  FILE *fp = fopen(path, "w");
  cr_assert(fp != NULL);
  fputs(text, fp);
  fclose(fp);
  free(text);
  snprintf(args, sizeof args, "--topo %s --format csv", path);
  struct ds_test_result r = run(args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "ddp,resnet50,4gpu,A100-SXM4-80GB,"), "%s", r.out);
  ds_test_release(&r);
  unlink(path);
  rmdir(dir);
}

/* Tiny model on the tiny topology, worked by hand (tests/data/tiny-*.yaml):
 * the first layer's host launch 20 us (later launches run ahead of the
 * 100+ us kernels); forward 100+200+100 us; the loss reads the 1e6-byte
 * output and writes its gradient, 2 MB at 1000 GB/s = 2 us (forward 402
 * us); backward l2 200 us, then the reducer's copy of l2.weight into its
 * bucket (8.388608 us, ends at 630.388608 us), then the 4 MiB bucket's
 * all-reduce: 6 * 2 us + 1.5 * 4194304 B / 10 GB/s = 641.1456 us while
 * l1, l0 backward and their copies run; the second bucket (3,146,752 B)
 * takes 12 + 472.0128 = 484.0128 us; the copies back to .grad; the SGD
 * step 58.728448 us (the timeline in the test's comment). Each ring step
 * is rounded to the nanosecond, hence the 0.00001 ms tolerance. */
Test(cli, tiny_iteration_matches_the_hand_computation) {
  struct ds_test_result r = run("--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
                        "--format csv");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *row = strchr(r.out, '\n') + 1;
  char strategy[16], model[16], topo[16], gpu[16], dtype[8];
  int world, nb;
  long long batch;
  double bucket, first, iter, fwd, bwd, step, comm, exposed, overlap;
  int n = sscanf(row, "%15[^,],%15[^,],%15[^,],%15[^,],%7[^,],%d,%lld,%lf,%lf,%d,%lf,%lf,%lf,%lf,%lf,%lf,%lf",
                 strategy, model, topo, gpu, dtype, &world, &batch, &bucket, &first, &nb,
                 &iter, &fwd, &bwd, &step, &comm, &exposed, &overlap);
  cr_assert_eq(n, 17, "%s", r.out);
  cr_assert_eq(world, 4);
  /* By hand, in us from the first launch (TestGPU: 10 TFLOPS, 1000 GB/s,
   * ideal; buckets l2.weight 4 MiB, then l1.weight + l0 3 MiB + 1 KiB):
   * launch 20 + forward 400 + loss 2 = 422; l2 backward 200 and its
   * reducer copy (2 x 4,194,304 B read and written: 8.388608) = 630.388608,
   * when bucket 0's all-reduce starts (641.1456) and ends at 1271.534208;
   * l1 backward 400 + copy 4.194304, l0 backward 200 + copy 2.0992 end
   * backward at 1236.682112; bucket 1's all-reduce (484.0128) follows
   * bucket 0's: 1755.547008; finalize_backward copies bucket 0 back
   * (8.388608, from 1271.534208) and bucket 1 (6.293504, from 1755.547008):
   * 1761.840512; the step 58.728448 (8 passes of 7,341,056 B): 1820.56896.
   * Backward: 800 + the five
   * copies 29.364224. Exposed: 1236.682112 .. 1271.534208 and
   * 1279.922816 .. 1755.547008 = 510.476288. Flows round each transfer to
   * the nanosecond, so the simulation is a few ns later. */
  cr_assert_eq(nb, 2);
  cr_assert_float_eq(iter, 1.820569, 1e-5);
  cr_assert_float_eq(fwd, 0.402, 1e-9);
  cr_assert_float_eq(bwd, 0.829364224, 3e-6); /* 5 copies, each rounded to the ns */
  cr_assert_float_eq(step, 0.058728, 1e-5);
  cr_assert_float_eq(comm, 1.125158, 1e-5);
  cr_assert_float_eq(exposed, 0.510476, 1e-5);
  cr_assert_float_eq(overlap, 100.0 * (1.125158 - 0.510476) / 1.125158, 0.05);
  /* Where the 1820.569 us go: the GPU busy 402 + 829.364224 + 58.728448 =
   * 1290.092672 (one stream, no two kernels at once), the exposed
   * all-reduce 510.476288, the host's first launch 20 before any kernel:
   * together the iteration, so no time waits on other ranks. */
  double busy = ds_test_csv_num(r.out, "gpu_busy_ms", 0);
  double host = ds_test_csv_num(r.out, "host_exposed_ms", 0);
  cr_assert_float_eq(busy, 1.290092672, 3e-6);
  cr_assert_float_eq(host, 0.020, 1e-9);
  cr_assert_float_eq(busy + exposed + host, iter, 1e-5);
  ds_test_release(&r);
}

Test(cli, golden_tiny_run) {
  /* Pins every printed digit of the tiny run; regenerate with
   *   bin/ddpsim --topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml \
   *     --bucket-mb 1,25 --iters 3 > tests/golden/tiny.txt
   * only after checking the change against the hand computation above. */
  struct ds_test_result r = run("--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
                        "--bucket-mb 1,25 --iters 3");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  char *golden = ds_test_slurp("tests/golden/tiny.txt");
  cr_assert_str_eq(r.out, golden);
  free(golden);
  ds_test_release(&r);
}

Test(cli, same_inputs_give_byte_identical_traces) {
  char dir[] = "/tmp/ddpsim-det-XXXXXX", args[512];
  make_dir(dir);
  for (int i = 0; i < 2; i++) {
    snprintf(args, sizeof args,
             "--topo 2node-ib --model bert-base --iters 3 --jitter 0.05 --seed 7 --trace %s/t%d.csv "
             "--schedule %s/s%d.csv", dir, i, dir, i);
    struct ds_test_result r = run(args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    ds_test_release(&r);
  }
  char a[600], b[600];
  snprintf(a, sizeof a, "%s/t0.csv", dir);
  snprintf(b, sizeof b, "%s/t1.csv", dir);
  char *ta = ds_test_slurp(a), *tb = ds_test_slurp(b);
  cr_assert(strlen(ta) > 1000);
  cr_assert_str_eq(ta, tb);
  cr_assert(strstr(ta, "# seed: 7"));
  free(ta);
  free(tb);
  /* The files read back: the schedule validates, the trace has every op of
   * every iteration. */
  struct ds_err err = {0};
  struct ds_schedule *s = NULL;
  struct ds_trace *t = NULL;
  snprintf(a, sizeof a, "%s/s0.csv", dir);
  cr_assert_eq(ds_schedule_read_csv(a, &s, &err), DS_OK, "%s", err.msg);
  snprintf(a, sizeof a, "%s/t0.csv", dir);
  cr_assert_eq(ds_trace_read_csv(a, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(s->world_size, 16);
  cr_assert_gt(t->n_rows, 2 * s->n_ops);
  for (size_t i = 0; i < t->n_rows; i++)
    cr_assert_leq(t->rows[i].start_ns, t->rows[i].end_ns);
  ds_schedule_free(s);
  ds_trace_free(t);
  for (const char *f = "t0.csv\0t1.csv\0s0.csv\0s1.csv\0"; *f; f += strlen(f) + 1) {
    snprintf(a, sizeof a, "%s/%s", dir, f);
    unlink(a);
  }
  rmdir(dir);
}

Test(cli, bad_flags_exit_2_with_a_message) {
  struct { const char *args, *msg; } cases[] = {
      {"--topo 4gpu --bucket-mb abc", "option --bucket-mb: expected a size in MiB"},
      {"--topo 4gpu --bucket-mb 1,,2", "option --bucket-mb"},
      {"--topo 4gpu --world-size 0", "option --world-size: expected an integer from 1"},
      {"--topo 4gpu --world-size 5", "4 GPUs"},
      {"--topo 4gpu --dtype fp8", "option --dtype: expected fp32, fp16 or bf16"},
      {"--topo 4gpu --iters 1", "option --iters: expected an integer from 2"},
      {"--topo 4gpu --format xml", "option --format: expected one of text or csv or json"},
      {"--topo 4gpu --frobnicate", "unknown option \"--frobnicate\""},
      {"--topo 4gpu --strategy dpp", "unknown strategy \"dpp\""},
      {"--topo 4gpu --strategy dp,ddp,dp", "strategy \"dp\" given twice"},
      {"--bucket-mb 25", "missing --topo"},
      {"--topo 4gpu --batch", "option --batch needs a value"},
      {"--topo nowhere", "topology 'nowhere' not found"},
      {"--topo 4gpu --model nomodel", "model 'nomodel' not found (looked for: "},
      {"--topo 4gpu --bucket-mb 1,2 --trace /tmp/x.csv", "give one --bucket-mb value"},
      {"--topo 4gpu --trace ''", "option --trace: expected a value, got an empty string"},
      {"--topo '' --bucket-mb 25", "option --topo: expected a value, got an empty string"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    ds_test_ddpsim_refuses(cases[i].args, cases[i].msg);
}

static ds_status parse_ddpsim(int argc, char **argv, struct ds_err *err) {
  struct ds_options o;
  return ds_options_parse(argc, argv, &o, err);
}

/* The flags ddpsim's parser knows, the ones its --help shows and its
 * dispatch agree (options_help.c): a flag added to one of them alone, or
 * shown with a value it does not take, fails here. */
Test(cli, the_option_table_help_and_parser_agree) {
  char *help = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&help, &len);
  cr_assert(fp != NULL);
  ds_options_print_usage(fp);
  cr_assert_eq(fclose(fp), 0);
  const char *lead[] = {"ddpsim"};
  ds_test_options_agree(ds_options_flags(), help, parse_ddpsim, lead, 1);
  free(help);
}

/* The same for `ddpsim buckets`. */
Test(cli, buckets_option_table_help_and_parser_agree) {
  const char *help_words[] = {"buckets", "--help"}, *lead[] = {"buckets"};
  char *help = ds_test_main_text(ds_bucketcmd_main, help_words, 2);
  ds_test_options_agree(ds_bucketcmd_options(), help, ds_bucketcmd_check_args, lead, 1);
  free(help);
}

/* buckets takes a long flag's value after "=" as ddpsim itself does
 * (base/cli.h ds_cli_split_values): the same report; a flag that takes no
 * value refuses one. */
Test(cli, buckets_takes_a_value_after_an_equals_sign) {
  const char *apart[] = {"buckets", "--model", "resnet50", "--bucket-mb", "5"};
  const char *joined[] = {"buckets", "--model=resnet50", "--bucket-mb=5"};
  char *want = ds_test_main_text(ds_bucketcmd_main, apart, 5);
  char *got = ds_test_main_text(ds_bucketcmd_main, joined, 3);
  cr_assert_str_eq(got, want);
  free(want);
  free(got);
  struct ds_err err = {0};
  char *graph[] = {"buckets", "--static-graph=1", NULL};
  cr_assert_eq(ds_bucketcmd_check_args(2, graph, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --static-graph takes no value");
  char *twice[] = {"buckets", "--bucket-mb=5", "--bucket-mb", "25", NULL};
  cr_assert_eq(ds_bucketcmd_check_args(4, twice, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --bucket-mb given twice");
}

Test(cli, bad_files_name_file_line_and_key_and_leave_nothing_behind) {
  char dir[] = "/tmp/ddpsim-bad-XXXXXX", path[600], args[1400];
  make_dir(dir);
  struct { const char *text, *msg; } cases[] = {
      {"schema_version: 1\nname: x\nsample: s\ndefault_batch: 8\noptimizer: sgd\nlayers:\n"
       "  - name: a\n    fwd_flops: lots\n", ":8:16: key 'fwd_flops': expected an integer"},
      {"schema_version: 1\nname: x\nsample: s\ndefault_batch: 8\noptimizer: lion\n",
       ":5:12: key 'optimizer': expected sgd or adam"},
      {"schema_version: 1\nname: x\ncolour: red\n", ":3:1: unknown key 'colour'"},
      {"schema_version: 1\nname: [unclosed\n", "YAML syntax error"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(path, sizeof path, "%s/bad%zu.yaml", dir, i);
    FILE *fp = fopen(path, "w");
    fputs(cases[i].text, fp);
    fclose(fp);
    snprintf(args, sizeof args, "--topo 4gpu --model %s --trace %s/trace.csv --schedule %s/s.csv",
             path, dir, dir);
    struct ds_test_result r = run(args);
    cr_assert_eq(r.status, 2, "case %zu: status %d", i, r.status);
    cr_assert(strstr(r.err, path) && strstr(r.err, cases[i].msg), "case %zu: stderr \"%s\"",
              i, r.err);
    ds_test_release(&r);
    unlink(path);
    cr_assert_eq(ds_test_count_entries(dir), 0, "case %zu left a file behind", i);
  }
  rmdir(dir);
}

Test(cli, unwritable_trace_fails_cleanly) {
  /* A trace into a missing directory: exit 1 (I/O), a message naming it. */
  struct ds_test_result r = run("--topo 4gpu --trace /tmp/ddpsim-no-such-dir/t.csv");
  cr_assert_eq(r.status, 1, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "/tmp/ddpsim-no-such-dir/t.csv"), "stderr: %s", r.err);
  ds_test_release(&r);
}

Test(cli, help_and_version) {
  struct ds_test_result r = run("--help");
  cr_assert_eq(r.status, 0);
  cr_assert(strstr(r.out, "usage: ddpsim --topo"));
  ds_test_release(&r);
  r = run("--version");
  cr_assert_eq(r.status, 0);
  cr_assert(strstr(r.out, "ddpsim 0."));
  ds_test_release(&r);
}

/* Writes text to dir/name. */
static void put_file(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *fp = fopen(path, "w");
  cr_assert(fp, "%s", path);
  fputs(text, fp);
  fclose(fp);
}

/* The text run of tiny-model's DDP on tiny-topo's 4 TestGPUs whose memory
 * is mem (a size); 1 when it warns of the GPU's memory. */
static int warns_of_memory(const char *mem) {
  char dir[] = "/tmp/ddpsim-oom-XXXXXX", args[1024], gpus[1024];
  make_dir(dir);
  char *topo = ds_test_slurp("tests/data/tiny-topo.yaml");
  put_file(dir, "t.yaml", topo);
  free(topo);
  snprintf(gpus, sizeof gpus,
           "schema_version: 1\ngpus:\n  - name: TestGPU\n    arch: Test\n    sms: 10\n"
           "    fp32: 10TFLOPS\n    fp16: 20TFLOPS\n    mem: %s\n    mem_bw: 1000GBps\n"
           "    source: \"tests only\"\n", mem);
  put_file(dir, "gpus.yaml", gpus);
  snprintf(args, sizeof args, "--topo %s/t.yaml --model tests/data/tiny-model.yaml", dir);
  struct ds_test_result r = run(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  int warned = strstr(r.out, "warning: ") && strstr(r.out, "of memory") != NULL;
  ds_test_release(&r);
  snprintf(args, sizeof args, "rm -rf %s", dir);
  cr_assert_eq(system(args), 0);
  return warned;
}

Test(cli, the_memory_warning_fires_exactly_above_the_gpus_memory) {
  /* tiny-model, DDP at batch 1 (docs/architecture.md, DDP memory): params,
   * bucket copies and SGD momentum, 3 x 1,835,264 x 4 B = 22,023,168 B,
   * and at the peak, after l0's backward, every .grad (7,341,056 B) and
   * the 1,000,000 B output the loop holds (the 3 layers' saved activations
   * freed): 30,364,224 B. Expected, because the warning says the peak
   * *exceeds* the GPU's memory: none at exactly that much, one at a byte
   * less. */
  cr_assert_not(warns_of_memory("30364224B"));
  cr_assert(warns_of_memory("30364223B"));
  cr_assert_not(warns_of_memory("16GB"));
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
    struct ds_test_result r = run(args);
    cr_assert_eq(r.status, 0, "%s: %s", cases[i].algo, r.err);
    cr_assert(strstr(r.out, cases[i].line), "%s:\n%s", cases[i].algo, r.out);
    cr_assert(strstr(r.out, ", network maxmin, collectives per flow\n"), "%s:\n%s",
              cases[i].algo, r.out);
    ds_test_release(&r);
  }
}

/* base/cli's two walks on a table of their own: an alias is one option
 * with its flag in ds_cli_next_option (ddpsim, ddpreal) as in ds_cli_once,
 * and ds_cli_split_values leaves a flag's value alone, whatever it looks
 * like, and an unknown "--x=y" whole. */
static const struct ds_cli_option toy[] = {
    {"--minbytes", 1, NULL}, {"-b", 1, "--minbytes"}, {"--verbose", 0, NULL},
    {"--reference", 1, NULL}, {"--help", 0, NULL},   {"-h", 0, "--help"},
    {NULL, 0, NULL}};

static ds_status walk_toy(int argc, char **argv, struct ds_err *err) {
  struct ds_cli_walk w = {.program = "toy", .options = toy};
  for (int i = 1; i < argc; i++) {
    char flag[64];
    const char *value;
    DS_CHECK(ds_cli_next_option(&w, argc, argv, &i, flag, sizeof flag, &value, err));
  }
  return DS_OK;
}

Test(cli, base_cli_record_keeps_values_and_refuses_overflow) {
  /* the walk keeps each flag's value, as given (NULL for a switch) */
  struct ds_err err = {0};
  struct ds_cli_walk w = {.program = "toy", .options = toy};
  char *argv[] = {"toy", "--minbytes=8", "--verbose", "--reference", "r.csv", NULL};
  for (int i = 1; i < 5; i++) {
    char flag[64];
    const char *value;
    cr_assert_eq(ds_cli_next_option(&w, 5, argv, &i, flag, sizeof flag, &value, &err), DS_OK,
                 "%s", err.msg);
  }
  cr_assert_eq(w.seen.n, 3);
  cr_assert_str_eq(w.seen.value[0], "8");
  cr_assert_null(w.seen.value[1]);
  cr_assert_str_eq(w.seen.value[2], "r.csv");
  /* a full record is a bug, said, not a repeat that goes unnoticed */
  struct ds_cli_seen seen = {0};
  seen.n = DS_CLI_SEEN_MAX;
  for (int i = 0; i < DS_CLI_SEEN_MAX; i++) seen.flag[i] = "--verbose";
  cr_assert_eq(ds_cli_once(&seen, toy, "--minbytes", &err), DS_EINTERNAL);
  cr_assert(strstr(err.msg, "DS_CLI_SEEN_MAX"), "%s", err.msg);
}

Test(cli, base_cli_walks_count_an_alias_as_its_flag) {
  struct ds_err err = {0};
  char *alias[] = {"toy", "-b", "8", "--minbytes=16", NULL};
  cr_assert_eq(walk_toy(4, alias, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --minbytes given twice (as -b and --minbytes)");
  char *same[] = {"toy", "-b", "8", "-b", "16", NULL};
  cr_assert_eq(walk_toy(5, same, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option -b given twice");
  char *help[] = {"toy", "-h", "--help", NULL};
  cr_assert_eq(walk_toy(3, help, &err), DS_OK, "%s", err.msg);
  struct ds_cli_seen seen = {0};
  cr_assert_eq(ds_cli_once(&seen, toy, "--minbytes", &err), DS_OK);
  cr_assert_eq(ds_cli_once(&seen, toy, "-b", &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --minbytes given twice (as --minbytes and -b)");
  char *words[] = {"toy", "--reference", "--minbytes=1", "-b=2", "--x=y", "--minbytes=3", NULL};
  struct ds_cli_words split;
  cr_assert_eq(ds_cli_split_values(toy, 6, words, &split, &err), DS_OK, "%s", err.msg);
  const char *want[] = {"toy", "--reference", "--minbytes=1", "-b=2", "--x=y", "--minbytes", "3"};
  cr_assert_eq(split.argc, 7);
  for (int i = 0; i < 7; i++) cr_assert_str_eq(split.argv[i], want[i], "word %d", i);
  cr_assert_null(split.argv[7]);
  ds_cli_words_free(&split);
  /* an empty value, joined or apart, is a slip of the shell: ddpsim's
   * wording; a refused argument is one word in its place (the empty value
   * apart goes with its flag), the words after it split as ever */
  char *empty_joined[] = {"toy", "--minbytes=", "--minbytes=2", NULL};
  cr_assert_eq(ds_cli_split_values(toy, 3, empty_joined, &split, &err), DS_OK);
  cr_assert_eq(split.problem.status, DS_EUSAGE);
  cr_assert_str_eq(split.problem.msg, "option --minbytes: expected a value, got an empty string");
  cr_assert_eq(split.argc, 4);
  cr_assert_eq(ds_cli_split_refused(split.argv[1]), DS_EUSAGE);
  cr_assert_str_eq(split.argv[3], "2");
  ds_cli_words_free(&split);
  char *empty_apart[] = {"toy", "-b", "", "--verbose", NULL};
  cr_assert_eq(ds_cli_split_values(toy, 4, empty_apart, &split, &err), DS_OK);
  cr_assert_str_eq(split.problem.msg, "option -b: expected a value, got an empty string");
  cr_assert_eq(split.argc, 3);
  cr_assert_eq(ds_cli_split_refused(split.argv[1]), DS_EUSAGE);
  cr_assert_eq(ds_cli_split_refused(split.argv[2]), DS_OK);
  ds_cli_words_free(&split);
  /* the first refusal's message, a later one only its word */
  char *verbose[] = {"toy", "--verbose=1", "--minbytes=", NULL};
  cr_assert_eq(ds_cli_split_values(toy, 3, verbose, &split, &err), DS_OK);
  cr_assert_str_eq(split.problem.msg, "option --verbose takes no value");
  cr_assert_eq(ds_cli_split_refused(split.argv[2]), DS_EUSAGE);
  ds_cli_words_free(&split);
}

/* ds_cli_next_word, the loop of the subcommands that take positionals,
 * on toy's table through ds_cli_parse_split: ctx is the walk's
 * positionals in, what it read out ("P:word" for a positional, "flag=value"
 * or "flag" for a switch, space-separated). */
struct toy_words {
  enum ds_cli_positionals positionals;
  char read[256];
};

static ds_status parse_toy_words(int argc, char **argv, void *ctx, struct ds_err *err) {
  struct toy_words *t = ctx;
  struct ds_cli_walk w = {.program = "toy", .options = toy, .positionals = t->positionals};
  t->read[0] = '\0';
  for (int i = 1; i < argc; i++) {
    const char *f, *v;
    DS_CHECK(ds_cli_next_word(&w, argc, argv, &i, &f, &v, err));
    size_t n = strlen(t->read);
    snprintf(t->read + n, sizeof t->read - n, "%s%s%s%s", n ? " " : "", f ? f : "P:",
             f && v ? "=" : "", v ? v : "");
  }
  return DS_OK;
}

/* Reads argv (NULL-terminated) with positionals; the status, err and
 * what was read in t. */
static ds_status words_toy(enum ds_cli_positionals positionals, char **argv,
                           struct toy_words *t, struct ds_err *err) {
  int argc = 0;
  while (argv[argc]) argc++;
  *t = (struct toy_words){.positionals = positionals};
  *err = (struct ds_err){0};
  return ds_cli_parse_split(toy, argc, argv, parse_toy_words, t, err);
}

Test(cli, base_cli_next_word_reads_positionals_flags_and_their_values) {
  struct toy_words t;
  struct ds_err err;
  /* a flag's value is the next word whatever it looks like; "-" is a
   * positional only where the command says so (analyze) */
  char *mixed[] = {"toy", "a.csv", "-", "-b", "8", "--verbose", "--reference", "--x=y", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN_OR_DASH, mixed, &t, &err), DS_OK, "%s",
               err.msg);
  cr_assert_str_eq(t.read, "P:a.csv P:- -b=8 --verbose --reference=--x=y");
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, mixed, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"-\" (see toy --help)");
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_NONE, mixed, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"a.csv\" (see toy --help)");
  /* given last: a known flag misses its value, an unknown one is unknown */
  char *last[] = {"toy", "--reference", NULL}, *unknown_last[] = {"toy", "--refrence", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, last, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --reference needs a value");
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, unknown_last, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--refrence\" (see toy --help)");
  /* a repeat under either spelling, as ds_cli_next_option says it; help
   * twice is help */
  char *twice[] = {"toy", "-b", "8", "--minbytes=16", NULL}, *help[] = {"toy", "-h", "--help", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, twice, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --minbytes given twice (as -b and --minbytes)");
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, help, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(t.read, "-h --help");
  /* the first bad word, left to right: a refused split or the walk's own */
  char *refused_first[] = {"toy", "--verbose=1", "--bogus", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, refused_first, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --verbose takes no value");
  char *refused_later[] = {"toy", "--bogus", "--verbose=1", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, refused_later, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--bogus\" (see toy --help)");
  /* the refused word is never read as a positional */
  char *empty[] = {"toy", "a.csv", "--minbytes=", NULL};
  cr_assert_eq(words_toy(DS_CLI_POSITIONALS_PLAIN, empty, &t, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --minbytes: expected a value, got an empty string");
  cr_assert_str_eq(t.read, "P:a.csv");
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
  struct ds_test_result bn = ds_test_run("", ds_test_ddpsim(), "--topo dgx-a100 --model "
                                         "resnet50 --algo direct --ring-chunks 2 --format csv");
  cr_assert_eq(bn.status, 0, "%s", bn.err);
  ds_test_release(&bn);
  const char *ok[] = {"--algo ring --ring-chunks 4", "--strategy dp --ring-chunks 2",
                      "--strategy dp,ddp --algo ring --ring-chunks 1,2",
                      "--proto LL --nccl-extra none", "--ring-chunks 1",
                      /* none is what the plain ring has */
                      "--algo ring --nccl-extra none"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    char args[256];
    snprintf(args, sizeof args, "--topo dgx-a100 --model tests/data/tiny-model.yaml %s "
             "--format csv", ok[i]);
    struct ds_test_result r = ds_test_run("", ds_test_ddpsim(), args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    ds_test_release(&r);
  }
}

/* A calibration file names its GPU since `ddpreal calibrate` writes `gpu`,
 * a key topologies have too: given to --model it is a calibration file (by
 * `efficiency`, which only calibration files have), not "a topology (it has
 * 'gpu')" as the old hand-copied key lists said; one with nothing but `gpu`
 * and `compute` (both a topology's keys too) is a calibration file, the
 * earlier kind on the tie; but one shared key alone (a model with a stray
 * `gpu`) is an unknown key, not a topology. And --calib tells the other
 * kinds as --topo and --model do, where it said "unknown key 'name'". */
Test(cli, a_calibration_file_elsewhere_and_other_files_given_to_calib_are_named) {
  char full[] = "/tmp/ddpsim-calibkind-XXXXXX", bare[] = "/tmp/ddpsim-calibkind-XXXXXX";
  ds_test_write_temp(full, "schema_version: 1\ngpu: \"NVIDIA H200\"\ncompute:\n"
                           "  flops_efficiency: 0.5\nefficiency:\n  conv_bf16: 0.4\n");
  ds_test_write_temp(bare, "schema_version: 1\ngpu: \"NVIDIA H200\"\ncompute:\n"
                           "  flops_efficiency: 0.5\n");
  char args[256], msg[256];
  snprintf(args, sizeof args, "--topo 4gpu --model %s", full);
  snprintf(msg, sizeof msg, "%s:5:1: this looks like a calibration file (ddpreal calibrate) "
           "(it has 'efficiency'), not a model: give it to --calib; --model takes a model",
           full);
  ds_test_ddpsim_refuses(args, msg);
  snprintf(args, sizeof args, "--topo 4gpu --model %s", bare);
  snprintf(msg, sizeof msg, "%s:2:1: this looks like a calibration file (ddpreal calibrate) "
           "(it has 'gpu', 'compute'), not a model: give it to --calib", bare);
  ds_test_ddpsim_refuses(args, msg);
  snprintf(args, sizeof args, "--topo %s", full);
  ds_test_ddpsim_refuses(args, "this looks like a calibration file (ddpreal calibrate) (it "
                         "has 'efficiency'), not a topology: give it to --calib");
  /* one key a topology shares is no sign of one: a stray 'gpu' in a model */
  char *model = ds_test_slurp("tests/data/tiny-model.yaml");
  char *stray = malloc(strlen(model) + 32);
  cr_assert_not_null(stray);
  sprintf(stray, "%sgpu: A100-SXM4-80GB\n", model);
  char odd[] = "/tmp/ddpsim-calibkind-XXXXXX";
  ds_test_write_temp(odd, stray);
  snprintf(args, sizeof args, "--topo 4gpu --model %s", odd);
  ds_test_ddpsim_refuses(args, "unknown key 'gpu'");
  unlink(odd);
  free(stray);
  free(model);
  unlink(full);
  unlink(bare);
  struct { const char *args, *msg; } cases[] = {
      {"--topo 4gpu --model resnet50 --calib models/resnet50.yaml",
       "option --calib: models/resnet50.yaml:21:1: this looks like a model file (it has "
       "'sample', 'default_batch', 'optimizer', 'input_bytes', ...), not a calibration "
       "file: give it to --model; --calib takes a calibration file"},
      {"--topo 4gpu --model resnet50 --calib topologies/4gpu.yaml",
       "topologies/4gpu.yaml:11:1: this looks like a topology (it has 'nodes', "
       "'gpus_per_node', 'intra_node'), not a calibration file: give it to --topo"},
      {"--topo 4gpu --model resnet50 --calib topologies/gpus.yaml",
       "this looks like a GPU table (it has 'gpus'), not a calibration file"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    ds_test_ddpsim_refuses(cases[i].args, cases[i].msg);
}

/* A file of the wrong kind, or no file at all, is said as such (a new
 * user's review: --topo models/resnet50.yaml said "unknown key 'sample'
 * (allowed: schema_version, name, gpu, ...)", --topo /tmp "not found"):
 * each kind of ddpsim file is told by root keys only it has, and the
 * message says where the file goes. */
Test(cli, a_file_of_the_wrong_kind_or_a_directory_is_named_as_such) {
  struct { const char *args, *msg; } cases[] = {
      {"--topo models/resnet50.yaml",
       "models/resnet50.yaml:21:1: this looks like a model file (it has 'sample', "
       "'default_batch', 'optimizer', 'input_bytes', ...), not a topology: give it to "
       "--model; --topo takes a topology"},
      {"--topo 4gpu --model topologies/4gpu.yaml",
       "topologies/4gpu.yaml:11:1: this looks like a topology (it has 'nodes', "
       "'gpus_per_node', 'intra_node'), not a model: give it to --topo; --model takes a "
       "model"},
      {"--topo topologies/gpus.yaml", "this looks like a GPU table (it has 'gpus'), not a "
       "topology"},
      {"--topo 4gpu --model topologies/gpus.yaml", "this looks like a GPU table (it has "
       "'gpus'), not a model"},
      {"--topo tests/data", "topology 'tests/data' is a directory, not a topology file"},
      {"--topo 4gpu --model models/", "model 'models/' is a directory, not a model file"},
      {"--topo /dev/null", "topology '/dev/null' is not a regular file"},
      {"collective --topo models/bert-base.yaml", "this looks like a model file"},
      {"topo tests/data", "is a directory"},
      {"--topo resnet50", "topology 'resnet50' not found, but "},
      {"--topo 4gpu --model dgx-a100", "topologies/dgx-a100.yaml is a topology: give it to "
       "--topo"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    ds_test_ddpsim_refuses(cases[i].args, cases[i].msg);
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
    struct ds_test_result r = run(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, " nccl_extra=none "), "%s: %s", args, r.out);
    ds_test_release(&r);
  }
  struct ds_test_result r = run("--topo 4gpu --model tests/data/tiny-model.yaml --schedule -");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, " algo=auto nccl_extra=measured "), "%s", r.out);
  ds_test_release(&r);
}

Test(cli, the_parts_of_a_ps_iteration_add_up) {
  /* One parameter server, on rank 0: the workers' pushes to it are their
   * communication, not rank 0's (its comm is 0), and rank 0 waits for
   * them; the text's waiting line is the rest of the iteration, iter_ms -
   * gpu_busy - exposed - host (revuser2 item 6: 8% of resnet50's iteration
   * appeared nowhere). */
  const char *args = "--topo 4gpu --model tests/data/tiny-model.yaml --strategy ps "
                     "--ps-servers 1";
  char csv_args[256];
  snprintf(csv_args, sizeof csv_args, "%s --format csv", args);
  struct ds_test_result t = run(args), c = run(csv_args);
  cr_assert_eq(t.status + c.status, 0, "%s%s", t.err, c.err);
  double rest = ds_test_csv_num(c.out, "iter_ms", 0) - ds_test_csv_num(c.out, "gpu_busy_ms", 0) -
                ds_test_csv_num(c.out, "exposed_comm_ms", 0) -
                ds_test_csv_num(c.out, "host_exposed_ms", 0);
  cr_assert_gt(rest, 0.01, "rank 0 waits for the other workers' pushes");
  char want[128];
  snprintf(want, sizeof want, "\n    waiting      %10.3f ms  (rank 0 idle: ", rest);
  cr_assert(strstr(t.out, want), "want %s in %s", want, t.out);
  ds_test_release(&t);
  ds_test_release(&c);
  /* the sum alone: 10 - 6 - 1 - 0.5 = 2.5; rounding below 0 is 0 */
  struct ds_summary s = {.iter_ms = 10, .gpu_busy_ms = 6, .exposed_comm_ms = 1,
                         .host_exposed_ms = 0.5};
  cr_assert_float_eq(ds_report_waiting_ms(&s), 2.5, 1e-12);
  s.gpu_busy_ms = 8.6;
  cr_assert_eq(ds_report_waiting_ms(&s), 0);
}

Test(cli, ranks_filling_nodes_unevenly_get_a_note) {
  /* 9 ranks on 2node-ib's two 8-GPU nodes (8 + 1): no rails (node 1
   * holds one GPU), the ring in rank order crosses each boundary through
   * one NIC, where NCCL would spread its channels: the training summary
   * and the collective table say so (revuser2 item 5); 12 ranks (8 + 4,
   * rails over 4 NICs), 16 (8 + 8) and one node's 8 do not. */
  struct ds_test_result r =
      run("--topo 2node-ib --model tests/data/tiny-model.yaml --world-size 8,9,12,16");
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *note = "  note: 9 ranks fill the nodes unevenly (8 + 1): the model runs one "
                     "ring in rank order";
  const char *at = strstr(r.out, note);
  cr_assert_not_null(at, "%s", r.out);
  cr_assert_null(strstr(at + strlen(note), "fill the nodes unevenly"), "one note: %s", r.out);
  ds_test_release(&r);
  r = run("collective --topo 2node-ib -g 9 -b 1M -e 1M");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\n# note: 9 ranks fill the nodes unevenly (8 + 1): "), "%s", r.out);
  ds_test_release(&r);
  r = run("collective --topo 2node-ib -g 12 -b 1M -e 1M");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_null(strstr(r.out, "unevenly"), "%s", r.out);
  ds_test_release(&r);
  /* the note is about the ring: none over a tree (revlate 3) */
  r = run("collective --topo 2node-ib -g 9 --algo tree -b 1M -e 1M");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_null(strstr(r.out, "unevenly"), "%s", r.out);
  ds_test_release(&r);
  r = run("collective --topo 2node-ib -g 16 -b 1M -e 1M");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_null(strstr(r.out, "unevenly"), "%s", r.out);
  ds_test_release(&r);
}

/* The summary's interference line is rank 0's compute kernels' time less
 * their time alone in the reported iteration: on 2node-ib NCCL's kernels
 * (auto) hold SMs and HBM beside the backward, so the trace's rank-0
 * compute rows of iteration 1 sum (end - start) - dur_us to it (each end
 * rounded to the ns: 1e-6 ms a row). The plain ring holds nothing: no line.
 * Fails where the line is missing or counts anything else. */
Test(cli, the_interference_line_is_the_traces_slowdown) {
  char dir[] = "/tmp/ddpsim-interf-XXXXXX", args[256], path[128];
  make_dir(dir);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  snprintf(args, sizeof args, "--topo 2node-ib --model tests/data/tiny-model.yaml --trace %s",
           path);
  struct ds_test_result r = run(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *line = strstr(r.out, "\n    interference ");
  cr_assert_not_null(line, "%s", r.out);
  double shown = strtod(line + strlen("\n    interference "), NULL);
  char *csv = ds_test_slurp(path);
  const char *hdr = csv;
  while (*hdr == '#') hdr = strchr(hdr, '\n') + 1;
  int c_rank = ds_test_csv_column(hdr, "rank"), c_iter = ds_test_csv_column(hdr, "iter");
  int c_dur = ds_test_csv_column(hdr, "dur_us"), c_start = ds_test_csv_column(hdr, "start_us");
  int c_end = ds_test_csv_column(hdr, "end_us");
  double sum_us = 0;
  int rows = 0;
  for (const char *p = strchr(hdr, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
    const char *row = p + 1;
    if (*row == '#') break; /* the closing "# end: N rows" */
    if (ds_test_csv_field(row, c_rank) != 0 || ds_test_csv_field(row, c_iter) != 1 ||
        strncmp(strchr(row, ',') + 1, "0,compute,", 10) != 0)
      continue;
    sum_us += ds_test_csv_field(row, c_end) - ds_test_csv_field(row, c_start) -
              ds_test_csv_field(row, c_dur);
    rows++;
  }
  cr_assert_gt(rows, 0);
  cr_assert_gt(shown, 0, "%s", r.out);
  cr_assert_float_eq(shown, sum_us / 1e3, 5e-4 + rows * 1e-6, "%g vs %g ms", shown,
                     sum_us / 1e3);
  free(csv);
  ds_test_release(&r);
  unlink(path);
  rmdir(dir);
  /* the CSV's interference_ms is the same sum, to the ns */
  r = run("--topo 2node-ib --model tests/data/tiny-model.yaml --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  double col = ds_test_csv_num(r.out, "interference_ms", 0);
  cr_assert_float_eq(col, sum_us / 1e3, rows * 1e-6, "%g vs %g ms", col, sum_us / 1e3);
  ds_test_release(&r);
  r = run("--topo 2node-ib --model tests/data/tiny-model.yaml --algo ring");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_null(strstr(r.out, "interference"), "%s", r.out);
  ds_test_release(&r);
  r = run("--topo 2node-ib --model tests/data/tiny-model.yaml --algo ring --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_float_eq(ds_test_csv_num(r.out, "interference_ms", 0), 0, 0, "%s", r.out);
  ds_test_release(&r);
}

/* --jitter alone is one sample: its p50, p95 and p99 would be the
 * iteration three times, so the text prints none of them, and says how to
 * get them; --samples 3 prints the three. --seed without --jitter is
 * refused as --samples is (nothing random to seed), exit 2. */
Test(cli, one_jittered_sample_prints_no_percentiles_and_a_lone_seed_is_refused) {
  struct ds_test_result r = run("--topo 4gpu --model tests/data/tiny-model.yaml --jitter 0.1");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\n    jitter       CV 0.1, one sample: the iteration above "
                          "(--samples N for p50/p95/p99)\n"), "%s", r.out);
  cr_assert_null(strstr(r.out, "p50/p95/p99  "), "%s", r.out);
  ds_test_release(&r);
  r = run("--topo 4gpu --model tests/data/tiny-model.yaml --jitter 0.1 --samples 3");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\n    p50/p95/p99  ") && strstr(r.out, "(3 samples, jitter CV 0.1)"),
            "%s", r.out);
  ds_test_release(&r);
  /* a sweep's CV 0 row draws nothing: its three samples are one timeline,
   * so it prints no percentiles and does not ask for more samples */
  r = run("--topo 4gpu --model tests/data/tiny-model.yaml --jitter 0,0.1 --samples 3");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\n    jitter       CV 0: no draws, every sample the iteration above\n"),
            "%s", r.out);
  cr_assert_null(strstr(r.out, "(3 samples, jitter CV 0)"), "%s", r.out);
  cr_assert_not_null(strstr(r.out, "(3 samples, jitter CV 0.1)"), "%s", r.out);
  ds_test_release(&r);
  ds_test_ddpsim_refuses("--topo 4gpu --seed 7", "option --seed 7: seeds differ only in "
                         "--jitter's draws");
  ds_test_ddpsim_refuses("--topo 4gpu --seed 7 --jitter 0", "option --seed 7:");
  r = run("--topo 4gpu --model tests/data/tiny-model.yaml --jitter 0,0.1 --seed 7");
  cr_assert_eq(r.status, 0, "a sweep with a noisy row takes a seed: %s", r.err);
  ds_test_release(&r);
}
