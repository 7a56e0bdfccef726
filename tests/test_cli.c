/*
 * The ddpsim command end to end: the design card's example, formats, file
 * lookup, a closed-form iteration, the golden run, determinism and the
 * summary's notes (memory, ps, uneven nodes, interference, jitter). DDP's
 * options through the command: test_cli_ddp.c; bad flags and bad files:
 * test_cli_input.c. The binary under test is $DDPSIM_BIN (the sanitizer
 * build in `make test`), else build/asan/ddpsim.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cli/report.h"
#include "tests/support.h"
#include "traces/trace.h"

Test(cli, design_card_example) {
  struct ds_test_result r = ds_test_cli_ok("--topo 4gpu.yaml --bucket-mb 25");
  const char *want[] = {"ddp: resnet50 on 4gpu (4 x A100-SXM4-80GB)",
                        "  iteration ", "    forward ", "    backward ",
                        "    optimizer ", "  communication ", "    exposed ",
                        "    overlap ", "  buckets            4:", "  peak memory "};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_assert(strstr(r.out, want[i]), "missing \"%s\" in:\n%s", want[i], r.out);
  ds_test_release(&r);
}

Test(cli, csv_has_the_promised_columns_and_one_row_per_bucket_size) {
  struct ds_test_result r = ds_test_cli_ok("--topo 4gpu --bucket-mb 1,5,25 --format csv");
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
  struct ds_test_result r = ds_test_cli_ok("--topo 4gpu --bucket-mb 5,25 --format json");
  cr_assert_eq(r.out[0], '[');
  int objects = 0;
  for (const char *p = r.out; (p = strstr(p, "\"iter_ms\"")); p++) objects++;
  cr_assert_eq(objects, 2, "%s", r.out);
  cr_assert(strstr(r.out, "\"bucket_mib\": ["), "%s", r.out);
  ds_test_release(&r);
}

Test(cli, model_names_are_looked_up_without_suffix) {
  struct ds_test_result r = ds_test_cli_ok("--topo dgx-a100 --model bert-base --format csv");
  cr_assert(strstr(r.out, "ddp,bert-base,dgx-a100,"), "%s", r.out);
  ds_test_release(&r);
}

Test(cli, csv_and_json_say_whether_a_configuration_fits_the_gpu) {
  /* 4gpu's A100-SXM4-80GB holds 81920 MiB = 80 GiB (nvidia-smi's total,
   * tools/gen_gpus.py MEM_MIB), not 80e9 B = 74.5 GiB. ResNet-50's DDP
   * peak (at backward's start) grows by 0.0801 GiB per sample: 79.928215
   * GiB at batch 994 fits, 80.008339 GiB at 995 does not. Every row's
   * fits_memory must say peak_mem_gib <= gpu_mem_gib. */
  struct ds_test_result r = ds_test_cli_ok("--topo 4gpu --batch 993:996:1 --format csv");
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
  r = ds_test_cli_ok("--topo 4gpu --batch 995 --format json");
  cr_assert(strstr(r.out, "\"fits_memory\": \"no\""), "%s", r.out);
  ds_test_release(&r);
  /* the text warning compares and says GiB on both sides; at batch 950
   * (76.40 GiB) it is silent, where the decimal 74.5 "GB" warned */
  r = ds_test_cli_ok("--topo 4gpu --batch 995");
  cr_assert(strstr(r.out, "warning: 80.01 GiB per GPU exceeds the A100-SXM4-80GB's 80.00 GiB of "
                          "memory"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 4gpu --batch 950");
  cr_assert_null(strstr(r.out, "warning:"), "%s", r.out);
  ds_test_release(&r);
}

/* The peak of `ddpsim ARGS --format csv`'s first row, and whether it fits. */
static double csv_peak(const char *args, int *fits) {
  char csv_args[512], yes[8];
  snprintf(csv_args, sizeof csv_args, "%s --format csv", args);
  struct ds_test_result r = ds_test_cli_ok(csv_args);
  ds_test_csv_str(r.out, "fits_memory", 0, yes, sizeof yes);
  *fits = strcmp(yes, "yes") == 0;
  double peak = ds_test_csv_num(r.out, "peak_mem_gib", 0);
  ds_test_release(&r);
  return peak;
}

Test(cli, a_batch_over_memory_names_the_largest_that_fits) {
  /* Expected, because the warning bisects the same memory model: the batch
   * N it names fits with the peak it prints, N + 1 does not, under each
   * strategy's own model (dp's GPU 0 holds the scattered inputs, ps's
   * servers the shards: different N). */
  const char *runs[] = {"--topo 4gpu", "--topo 4gpu --strategy dp", "--topo 4gpu --strategy ps",
                        "--topo dgx1-v100 --model bert-large-squad"};
  for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
    char over[256];
    snprintf(over, sizeof over, "%s --batch 2048", runs[i]);
    struct ds_test_result r = ds_test_cli_ok(over);
    const char *w = strstr(r.out, "the largest batch per GPU that fits: ");
    cr_assert_not_null(w, "%s: %s", over, r.out);
    long long n = 0;
    double gib = 0;
    cr_assert_eq(sscanf(w, "the largest batch per GPU that fits: %lld (%lf GiB)", &n, &gib), 2,
                 "%s: %s", over, w);
    ds_test_release(&r);
    char args[256];
    int fits = 0;
    snprintf(args, sizeof args, "%s --batch %lld", runs[i], n);
    double peak = csv_peak(args, &fits);
    cr_assert(fits, "%s: %g GiB", args, peak);
    cr_assert_float_eq(peak, gib, 0.005, "%s: %g GiB, the warning said %g", args, peak, gib);
    snprintf(args, sizeof args, "%s --batch %lld", runs[i], n + 1);
    peak = csv_peak(args, &fits);
    cr_assert(!fits, "%s: %g GiB fits", args, peak);
  }
  /* BERT-large (Adam) on a V100 16 GB: 15.56 GiB at batch 10, 16.62 at 11 */
  struct ds_test_result r = ds_test_cli_ok("--topo dgx1-v100 --model bert-large-squad");
  cr_assert(strstr(r.out, "warning: 38.84 GiB per GPU exceeds the V100-SXM2-16GB's 16.00 GiB of "
                          "memory; the largest batch per GPU that fits: 10 (15.56 GiB)\n"),
            "%s", r.out);
  ds_test_release(&r);
}

Test(cli, a_batch_within_the_margin_names_the_largest_with_it) {
  /* Expected, because the note bisects the same memory model with the
   * margin report.h states (DS_REPORT_PEAK_UNDER_MEASURED, 5.2 %): the batch
   * N it names has peak / (1 - margin) within the GPU's memory, N + 1 not. */
  const char *args = "--topo 4gpu --batch 960"; /* 77.20 of 80 GiB: fits, not with the margin */
  int fits = 0;
  double peak = csv_peak(args, &fits);
  struct ds_test_result cap_run = ds_test_cli_ok("--topo 4gpu --batch 960 --format csv");
  const double cap = ds_test_csv_num(cap_run.out, "gpu_mem_gib", 0); /* 80 GiB */
  ds_test_release(&cap_run);
  const double under = 1 - DS_REPORT_PEAK_UNDER_MEASURED;
  cr_assert(fits && peak / under > cap, "%s: %g GiB", args, peak);
  struct ds_test_result r = ds_test_cli_ok(args);
  const char *w = strstr(r.out, "it may not fit; the largest batch per GPU within that margin: ");
  cr_assert_not_null(w, "%s", r.out);
  long long n = 0;
  double gib = 0;
  cr_assert_eq(sscanf(w, "it may not fit; the largest batch per GPU within that margin: %lld (%lf GiB)",
                      &n, &gib), 2, "%s", w);
  ds_test_release(&r);
  char at[256];
  snprintf(at, sizeof at, "--topo 4gpu --batch %lld", n);
  peak = csv_peak(at, &fits);
  cr_assert(peak / under <= cap, "%s: %g GiB", at, peak);
  cr_assert_float_eq(peak, gib, 0.005, "%s: %g GiB, the note said %g", at, peak, gib);
  snprintf(at, sizeof at, "--topo 4gpu --batch %lld", n + 1);
  peak = csv_peak(at, &fits);
  cr_assert(peak / under > cap, "%s: %g GiB", at, peak);
  /* and no note (nor warning) at that batch */
  snprintf(at, sizeof at, "--topo 4gpu --batch %lld", n);
  r = ds_test_cli_ok(at);
  cr_assert_null(strstr(r.out, "may not fit"), "%s", r.out);
  ds_test_release(&r);
}

Test(cli, a_batch_of_one_over_memory_says_no_batch_fits) {
  /* Expected, because BERT-large's parameters, Adam's two moments, DDP's
   * buckets and the step's gradients and temporaries (6.22 GiB without
   * the buckets) do not depend on the batch: a 4 GiB GPU fits none. */
  char dir[] = "/tmp/ddpsim-nofit-XXXXXX", path[256], args[512];
  ds_test_make_dir(dir);
  char *text = ds_test_slurp("tests/data/gpus.yaml");
  char *mem = strstr(text, "mem: 16GiB");
  cr_assert_not_null(mem);
  memcpy(mem, "mem:  4GiB", 10);
  snprintf(path, sizeof path, "%s/gpus.yaml", dir);
  ds_test_write_file(path, text);
  free(text);
  text = ds_test_slurp("tests/data/pcie4-nop2p-mem.yaml");
  snprintf(path, sizeof path, "%s/mine.yaml", dir);
  ds_test_write_file(path, text);
  free(text);
  snprintf(args, sizeof args, "--topo %s --model bert-large-squad --batch 8", path);
  struct ds_test_result r = ds_test_cli_ok(args);
  cr_assert(strstr(r.out, "of memory; no batch fits: batch 1 already exceeds it\n"), "%s", r.out);
  cr_assert_null(strstr(r.out, "largest batch"), "%s", r.out);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
}

Test(cli, a_user_topology_outside_the_tree_uses_the_shipped_gpu_table) {
  /* Expected, because a user's own file rarely sits beside a gpus.yaml:
   * the shipped table is found as data files are. */
  char dir[] = "/tmp/ddpsim-user-XXXXXX", path[256], args[512];
  ds_test_make_dir(dir);
  snprintf(path, sizeof path, "%s/mine.yaml", dir);
  char *text = ds_test_slurp("topologies/4gpu.yaml");
  ds_test_write_file(path, text);
  free(text);
  snprintf(args, sizeof args, "--topo %s --format csv", path);
  struct ds_test_result r = ds_test_cli_ok(args);
  cr_assert(strstr(r.out, "ddp,resnet50,4gpu,A100-SXM4-80GB,"), "%s", r.out);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
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
  struct ds_test_result r = ds_test_cli_ok(
      "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
      "--format csv");
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
  struct ds_test_result r = ds_test_cli_ok(
      "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
      "--bucket-mb 1,25 --iters 3");
  char *golden = ds_test_slurp("tests/golden/tiny.txt");
  cr_assert_str_eq(r.out, golden);
  free(golden);
  ds_test_release(&r);
}

Test(cli, same_inputs_give_byte_identical_traces) {
  char dir[] = "/tmp/ddpsim-det-XXXXXX", args[512];
  ds_test_make_dir(dir);
  for (int i = 0; i < 2; i++) {
    snprintf(args, sizeof args,
             "--topo 2node-ib --model bert-base --iters 3 --jitter 0.05 --seed 7 --trace %s/t%d.csv "
             "--schedule %s/s%d.csv", dir, i, dir, i);
    struct ds_test_result r = ds_test_cli_ok(args);
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
  ds_test_remove_dir(dir);
}

Test(cli, help_and_version) {
  struct ds_test_result r = ds_test_cli_ok("--help");
  cr_assert(strstr(r.out, "usage: ddpsim --topo"));
  ds_test_release(&r);
  r = ds_test_cli_ok("--version");
  cr_assert(strstr(r.out, "ddpsim 0."));
  ds_test_release(&r);
}

/* --help is where a new user looks first: it names the other commands
 * (main.c's table), each of which answers its own --help, or a user
 * never learns that `ddpsim collective` or `ddpsim analyze` exists. */
Test(cli, help_names_every_command_and_each_has_its_own_help) {
  /* the commands as the unknown-command message lists them (main.c's
   * table): "the commands: collective, analyze, topo, buckets;" */
  struct ds_test_result u = ds_test_cli("no-such-command");
  cr_assert_eq(u.status, 2, "%s", u.err);
  const char *list = strstr(u.err, "the commands: ");
  cr_assert_not_null(list, "%s", u.err);
  list += strlen("the commands: ");
  const char *end = strchr(list, ';');
  cr_assert_not_null(end, "%s", u.err);
  char names[256], *commands[16];
  snprintf(names, sizeof names, "%.*s", (int)(end - list), list);
  size_t n = 0;
  for (char *save = NULL, *c = strtok_r(names, ", ", &save); c && n < 16;
       c = strtok_r(NULL, ", ", &save))
    commands[n++] = c;
  cr_assert_geq(n, 4, "%s", u.err);
  struct ds_test_result r = ds_test_cli_ok("--help");
  for (size_t i = 0; i < n; i++) {
    char line[64];
    snprintf(line, sizeof line, "ddpsim %s ", commands[i]);
    cr_assert(strstr(r.out, line), "--help does not name '%s'", commands[i]);
    char args[64];
    snprintf(args, sizeof args, "%s --help", commands[i]);
    struct ds_test_result sub = ds_test_cli_ok(args);
    cr_assert(strstr(sub.out, line), "'%s --help' prints no usage of its own", commands[i]);
    ds_test_release(&sub);
  }
  ds_test_release(&r);
  ds_test_release(&u);
}

/* Writes text to dir/name. */
static void put_file(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  ds_test_write_file(path, text);
}

/* The text run of tiny-model's DDP on tiny-topo's 4 TestGPUs whose memory
 * is mem (a size); 1 when it warns of the GPU's memory. */
static int warns_of_memory(const char *mem) {
  char dir[] = "/tmp/ddpsim-oom-XXXXXX", args[1024], gpus[1024];
  ds_test_make_dir(dir);
  char *topo = ds_test_slurp("tests/data/tiny-topo.yaml");
  put_file(dir, "t.yaml", topo);
  free(topo);
  snprintf(gpus, sizeof gpus,
           "schema_version: 1\ngpus:\n  - name: TestGPU\n    # no arch\n    sms: 10\n"
           "    fp32: 10TFLOPS\n    fp16: 20TFLOPS\n    mem: %s\n    mem_bw: 1000GBps\n"
           "    source: \"tests only\"\n", mem);
  put_file(dir, "gpus.yaml", gpus);
  snprintf(args, sizeof args, "--topo %s/t.yaml --model tests/data/tiny-model.yaml", dir);
  struct ds_test_result r = ds_test_cli_ok(args);
  int warned = strstr(r.out, "warning: ") && strstr(r.out, "of memory") != NULL;
  ds_test_release(&r);
  ds_test_remove_dir(dir);
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

/* The ps header counts its workers as the dp and ddp ones count GPUs: one
 * worker, several workers (it said "1 workers"). */
Test(cli, the_ps_header_counts_one_worker_or_several) {
  const char *args[][2] = {
      {"--world-size 1", "ps (parameter server, sync): 1 worker, batch "},
      {"--world-size 2", "ps (parameter server, sync): 2 workers, batch "}};
  for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "--topo 4gpu --model tests/data/tiny-model.yaml --strategy ps %s",
             args[i][0]);
    struct ds_test_result r = ds_test_cli(cmd);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, args[i][1]), "want '%s' in %s", args[i][1], r.out);
    ds_test_release(&r);
  }
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
  struct ds_test_result t = ds_test_cli(args), c = ds_test_cli(csv_args);
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
      ds_test_cli_ok("--topo 2node-ib --model tests/data/tiny-model.yaml --world-size 8,9,12,16");
  const char *note = "  note: 9 ranks fill the nodes unevenly (8 + 1): the model runs one "
                     "ring in rank order";
  const char *at = strstr(r.out, note);
  cr_assert_not_null(at, "%s", r.out);
  cr_assert_null(strstr(at + strlen(note), "fill the nodes unevenly"), "one note: %s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("collective --topo 2node-ib -g 9 -b 1M -e 1M");
  cr_assert(strstr(r.out, "\n# note: 9 ranks fill the nodes unevenly (8 + 1): "), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("collective --topo 2node-ib -g 12 -b 1M -e 1M");
  cr_assert_null(strstr(r.out, "unevenly"), "%s", r.out);
  ds_test_release(&r);
  /* the note is about the ring: none over a tree (revlate 3) */
  r = ds_test_cli_ok("collective --topo 2node-ib -g 9 --algo tree -b 1M -e 1M");
  cr_assert_null(strstr(r.out, "unevenly"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("collective --topo 2node-ib -g 16 -b 1M -e 1M");
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
  ds_test_make_dir(dir);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  snprintf(args, sizeof args, "--topo 2node-ib --model tests/data/tiny-model.yaml --trace %s",
           path);
  struct ds_test_result r = ds_test_cli_ok(args);
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
  ds_test_remove_dir(dir);
  /* the CSV's interference_ms is the same sum, to the ns */
  r = ds_test_cli_ok("--topo 2node-ib --model tests/data/tiny-model.yaml --format csv");
  double col = ds_test_csv_num(r.out, "interference_ms", 0);
  cr_assert_float_eq(col, sum_us / 1e3, rows * 1e-6, "%g vs %g ms", col, sum_us / 1e3);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 2node-ib --model tests/data/tiny-model.yaml --algo ring");
  cr_assert_null(strstr(r.out, "interference"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 2node-ib --model tests/data/tiny-model.yaml --algo ring --format csv");
  cr_assert_float_eq(ds_test_csv_num(r.out, "interference_ms", 0), 0, 0, "%s", r.out);
  ds_test_release(&r);
}

/* --jitter alone is one sample: its p50, p95 and p99 would be the
 * iteration three times, so the text prints none of them, and says how to
 * get them; --samples 3 prints the three. --seed without --jitter is
 * refused as --samples is (nothing random to seed), exit 2. */
Test(cli, one_jittered_sample_prints_no_percentiles_and_a_lone_seed_is_refused) {
  struct ds_test_result r =
      ds_test_cli_ok("--topo 4gpu --model tests/data/tiny-model.yaml --jitter 0.1");
  cr_assert(strstr(r.out, "\n    jitter       CV 0.1, one sample: the iteration above "
                          "(--samples N for p50/p95/p99)\n"), "%s", r.out);
  cr_assert_null(strstr(r.out, "p50/p95/p99  "), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 4gpu --model tests/data/tiny-model.yaml --jitter 0.1 --samples 3");
  cr_assert(strstr(r.out, "\n    p50/p95/p99  ") &&
                strstr(r.out, "(3 samples, jitter CV 0.1; every other time: seed 1's)\n"),
            "%s", r.out);
  ds_test_release(&r);
  /* the other times are the first sample's, whose seed is --seed */
  r = ds_test_cli_ok("--topo 4gpu --model tests/data/tiny-model.yaml --jitter 0.1 --samples 3 "
                     "--seed 7");
  cr_assert(strstr(r.out, "(3 samples, jitter CV 0.1; every other time: seed 7's)\n"), "%s",
            r.out);
  ds_test_release(&r);
  /* a sweep's CV 0 row draws nothing: its three samples are one timeline,
   * so it prints no percentiles and does not ask for more samples */
  r = ds_test_cli_ok("--topo 4gpu --model tests/data/tiny-model.yaml --jitter 0,0.1 --samples 3");
  cr_assert(strstr(r.out, "\n    jitter       CV 0: no draws, every sample the iteration above\n"),
            "%s", r.out);
  cr_assert_null(strstr(r.out, "(3 samples, jitter CV 0;"), "%s", r.out);
  cr_assert_not_null(strstr(r.out, "(3 samples, jitter CV 0.1;"), "%s", r.out);
  ds_test_release(&r);
  ds_test_ddpsim_refuses("--topo 4gpu --seed 7", "option --seed 7: seeds differ only in "
                         "--jitter's draws");
  ds_test_ddpsim_refuses("--topo 4gpu --seed 7 --jitter 0", "option --seed 7:");
  r = ds_test_cli("--topo 4gpu --model tests/data/tiny-model.yaml --jitter 0,0.1 --seed 7");
  cr_assert_eq(r.status, 0, "a sweep with a noisy row takes a seed: %s", r.err);
  ds_test_release(&r);
}
