/*
 * --optimizer sgd|adam|none (sim/cli/options.c; model.h DS_OPT_NONE),
 * worked by hand on the tiny model: 4 parameter tensors, 1835264
 * parameters (P = 7341056 bytes in fp32), SGD with momentum in its file.
 *
 * sgd and adam replace the file's optimizer, and give exactly what a file
 * with that optimizer gives. none is a loop without optimizer.step(): no
 * step kernels, no step host work, no optimizer state, no GradScaler step
 * (unscale_, found_inf.item()); zero_grad stays as the PyTorch version
 * charges it (1.9's fills and their launches); under --loop sync a 0 us
 * host op "synchronize" after the GPU's last work is what the next
 * iteration waits for. A parameter server refuses none.
 *
 * On TestGPU (10 TFLOPS, 1000 GB/s, no kernel overhead): the SGD step
 * 58.728 us (P x 8 passes), 1.9's zero_grad 7.341056 us (P x 1 pass).
 * tests/data/tiny-host-topo.yaml's host costs (test_loop.c): forward
 * launches L = 1000 us a layer, backward H = 2000 us a layer, the loop's
 * launches P_US = 200 us each (host_grad_copy); l0's backward kernel,
 * 200 us, is the GPU's tail after the host.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/train/memory.h"
#include "sim/train/model.h"
#include "tests/support.h"

#define HOST_TOPO "--topo tests/data/tiny-host-topo.yaml "
#define GPU_TOPO "--topo tests/data/tiny-topo.yaml "
#define TINY "--model tests/data/tiny-model.yaml "
#define L_US 1000.0
#define H_US 2000.0
#define P_US 200.0
#define L0_BWD_US 200.0
/* 1.4 and 1.9 keep .grad: AccumulateGrad's add after l0's backward, its
 * 262400 parameters x 4 B x 3 passes at 1000 GB/s */
#define L0_ACCUM_US 3.1488
#define STEP_US 58.728      /* 1835264 x 4 B x 8 passes at 1000 GB/s */
#define ZERO_GRAD_US 7.341056 /* 1835264 x 4 B x 1 pass */
#define TENSORS 4
#define P_BYTES 7341056.0

/* Column col of ddpsim's CSV row 0 for args. */
static double run_num(const char *args, const char *col) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  double v = ds_test_csv_num(r.out, col, 0);
  ds_test_release(&r);
  return v;
}

static double iter_us(const char *args) {
  char a[1024];
  snprintf(a, sizeof a, "%s --format csv", args);
  return run_num(a, "iter_ms") * 1e3;
}

/* The schedule ddpsim writes for args, one line per op without its id and
 * deps (rank through dur_us), ops named in skip (a list of ",name,"
 * entries) left out; owned. */
static char *schedule_ops(const char *args, const char *skip) {
  char path[] = "/tmp/ddpsim-optflag-XXXXXX", cmd[1200];
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd); /* ddpsim replaces the file (an atomic rename): read it by name */
  snprintf(cmd, sizeof cmd, "%s --format csv --schedule %s", args, path);
  struct ds_test_result r = ds_test_cli(cmd);
  cr_assert_eq(r.status, 0, "%s: %s", cmd, r.err);
  ds_test_release(&r);
  FILE *f = fopen(path, "r");
  cr_assert(f);
  size_t cap = 1 << 16, len = 0;
  char *out = malloc(cap), line[1024];
  cr_assert(out);
  out[0] = '\0';
  int header = 1;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    if (header) { header = 0; continue; } /* the column names */
    /* fields 1..12: from after the id to the last comma (before deps) */
    char *start = strchr(line, ',') + 1, *end = strrchr(line, ',');
    char name[160];
    const char *n0 = start;
    for (int k = 0; k < 3; k++) n0 = strchr(n0, ',') + 1; /* rank, stream, kind */
    size_t nl = (size_t)(strchr(n0, ',') - n0);
    snprintf(name, sizeof name, ",%.*s,", (int)nl, n0);
    if (skip && strstr(skip, name)) continue;
    size_t l = (size_t)(end - start);
    cr_assert(len + l + 2 < cap, "schedule too long for the test's buffer");
    memcpy(out + len, start, l);
    len += l;
    out[len++] = '\n';
    out[len] = '\0';
  }
  fclose(f);
  remove(path);
  cr_assert(len > 0, "%s: an empty schedule", cmd);
  return out;
}

static int count_lines(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

Test(optimizer_flag, none_is_the_step_less_its_kernels_gpu_bound) {
  /* tiny-topo (no host costs beyond 20 us launches): each strategy's
   * iteration ends with the step's kernels after the GPU's backward, so
   * none is sgd less exactly the step, 58.728 us, under current PyTorch,
   * 1.4 and 1.9 (whose zero_grad, 7.341056 us, stays: step_ms keeps it) */
  static const char *const strategies[] = {"--strategy single",
                                           "--strategy dp --world-size 2",
                                           "--strategy ddp --world-size 2"};
  static const char *const versions[] = {"current", "1.4", "1.9"};
  char a[512], b[600];
  for (int s = 0; s < 3; s++)
    for (int v = 0; v < 3; v++) {
      snprintf(a, sizeof a, GPU_TOPO TINY "%s --pytorch-version %s", strategies[s],
               versions[v]);
      snprintf(b, sizeof b, "%s --optimizer none", a);
      cr_assert_float_eq(iter_us(b), iter_us(a) - STEP_US, 1e-3, "%s", b);
      char c[700];
      snprintf(c, sizeof c, "%s --format csv", b);
      cr_assert_float_eq(run_num(c, "step_ms") * 1e3, v == 2 ? ZERO_GRAD_US : 0, 1e-3, "%s", b);
    }
}

Test(optimizer_flag, none_drops_exactly_the_optimizers_ops) {
  /* The schedule under none is sgd's without its ops named "optimizer"
   * (the step's kernels; the foreach step's host op), plus one
   * "synchronize" per rank (0 us, host); every other op, zero_grad's fill
   * kernels under 1.9 included, the same. */
  static const char *const cases[] = {
      GPU_TOPO TINY "--strategy single", GPU_TOPO TINY "--strategy single --pytorch-version 1.9",
      GPU_TOPO TINY "--strategy ddp --world-size 2 --pytorch-version 1.9",
      GPU_TOPO TINY "--strategy dp --world-size 2",
      HOST_TOPO TINY "--strategy ddp --world-size 2"};
  char b[600];
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    snprintf(b, sizeof b, "%s --optimizer none", cases[k]);
    char *with = schedule_ops(cases[k], ",optimizer,");
    char *without = schedule_ops(b, ",synchronize,");
    char *all = schedule_ops(b, NULL);
    cr_assert_str_eq(without, with, "%s:\n%s---\n%s", b, without, with);
    /* dp's loop is one process: GPU 0's host waits */
    int ranks = strstr(cases[k], "ddp --world-size 2") ? 2 : 1;
    cr_assert_eq(count_lines(all, ",host,step,synchronize,"), ranks, "%s\n%s", b, all);
    cr_assert_eq(count_lines(all, ",step,optimizer,"), 0, "%s", b);
    free(with);
    free(without);
    free(all);
  }
}

Test(optimizer_flag, host_bound_none_has_no_step_host_and_keeps_zero_grads_launches) {
  /* single on tiny-host-topo, the keys of the foreach step's host at
   * their defaults there (0 us). The host launches forward and backward
   * (3 L + 3 H); l0's backward kernel (200 us) follows its launch. sgd:
   * then the step (test_loop.c: 3 L + 3 H + 200 + step); none: the loop's
   * synchronize waits for l0's kernel: 3 L + 3 H + 200. Under 1.4 (no
   * fills in its zero_grad) the loop's 12 step launches (P each) go, and
   * l0's AccumulateGrad add (3.1488 us) follows its kernel: 3 L + 3 H +
   * 200 + 3.1488. Under 1.9 the loop dispatched 12 step kernels and
   * 4 fills (16 P); none keeps the 4 fills' launches (4 P = 800 us, more
   * than l0's 200 us and the fills' 7.34 us): 3 L + 3 H + 4 P. */
  double bare = 3 * L_US + 3 * H_US;
  cr_assert_float_eq(iter_us(HOST_TOPO TINY "--strategy single"), bare + L0_BWD_US + STEP_US,
                     1e-3);
  cr_assert_float_eq(iter_us(HOST_TOPO TINY "--strategy single --optimizer none"),
                     bare + L0_BWD_US, 1e-3);
  cr_assert_float_eq(
      iter_us(HOST_TOPO TINY "--strategy single --pytorch-version 1.4 --optimizer none"),
      bare + L0_BWD_US + L0_ACCUM_US, 1e-3);
  cr_assert_float_eq(
      iter_us(HOST_TOPO TINY "--strategy single --pytorch-version 1.9 --optimizer none"),
      bare + TENSORS * P_US, 1e-3);
  /* the 1.9 schedule: two host ops named zero_grad, P then 3 P (the
   * loop's first launch, which the fills wait for, then the rest); none
   * named optimizer */
  char *ops = schedule_ops(HOST_TOPO TINY "--strategy single --pytorch-version 1.9 "
                                          "--optimizer none", NULL);
  cr_assert(strstr(ops, "0,host,step,zero_grad,-1,-1,-1,-1,,0,0,200\n"), "%s", ops);
  cr_assert(strstr(ops, "0,host,step,zero_grad,-1,-1,-1,-1,,0,0,600\n"), "%s", ops);
  cr_assert_eq(count_lines(ops, ",optimizer,"), 0, "%s", ops);
  free(ops);
  /* --loop free: no synchronize; the host's own sum, 3 L + 3 H */
  cr_assert_float_eq(iter_us(HOST_TOPO TINY "--strategy single --loop free --optimizer none"),
                     bare, 1e-3);
  char *free_ops = schedule_ops(HOST_TOPO TINY "--strategy single --loop free --optimizer none",
                                NULL);
  cr_assert_eq(count_lines(free_ops, ",step,"), 0, "%s", free_ops);
  free(free_ops);
}

Test(optimizer_flag, none_under_amp_fp16_has_no_grad_scaler_step) {
  /* GradScaler.step (unscale_, found_inf.item()) exists only for the
   * step: a loop that calls scaler.scale(loss).backward() alone runs
   * neither (nor update(), which needs step's found_inf). Under 1.9 and
   * current PyTorch the sgd schedule has both, none neither. */
  static const char *const versions[] = {"current", "1.9"};
  char a[512], b[600];
  for (int v = 0; v < 2; v++) {
    snprintf(a, sizeof a, HOST_TOPO TINY "--strategy single --amp fp16 --pytorch-version %s",
             versions[v]);
    snprintf(b, sizeof b, "%s --optimizer none", a);
    char *with = schedule_ops(a, NULL), *without = schedule_ops(b, NULL);
    cr_assert_eq(count_lines(with, ",unscale_,"), 2, "%s", with);
    cr_assert_eq(count_lines(with, ",found_inf.item,"), 1, "%s", with);
    cr_assert_eq(count_lines(without, ",unscale_,"), 0, "%s", without);
    cr_assert_eq(count_lines(without, ",found_inf.item,"), 0, "%s", without);
    free(with);
    free(without);
  }
}

/* dir/adam.yaml: the tiny model with `optimizer: adam`; path gets it. */
static void write_adam_model(const char *dir, char *path, size_t cap) {
  snprintf(path, cap, "%s/adam.yaml", dir);
  char cmd[1200];
  snprintf(cmd, sizeof cmd,
           "sed 's/^optimizer: sgd$/optimizer: adam/' tests/data/tiny-model.yaml > %s && "
           "grep -q '^optimizer: adam$' %s", path, path);
  cr_assert_eq(system(cmd), 0);
}

Test(optimizer_flag, sgd_and_adam_equal_a_model_file_that_says_them) {
  /* The same summary and the same schedule (ops, bytes, durations, deps)
   * as the file's optimizer, for every strategy and loop: --optimizer
   * adam on the SGD file is the Adam file; --optimizer sgd on either is
   * the SGD file. */
  char dir[] = "/tmp/ddpsim-optflag-XXXXXX", adam[512];
  cr_assert(mkdtemp(dir));
  write_adam_model(dir, adam, sizeof adam);
  static const char *const cases[] = {
      "--strategy single", "--strategy single --pytorch-version 1.9 --weight-decay",
      "--strategy single --amp fp16", "--strategy dp --world-size 2",
      "--strategy ddp --world-size 2 --pytorch-version 1.4",
      "--strategy ps --world-size 2 --ps-servers 1"};
  static const char *const cols[] = {"iter_ms", "step_ms", "peak_mem_gib"};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    char file_adam[1200], flag_adam[1200], file_sgd[1200], flag_sgd[1200];
    snprintf(file_adam, sizeof file_adam, HOST_TOPO "--model %s %s", adam, cases[k]);
    snprintf(flag_adam, sizeof flag_adam, HOST_TOPO TINY "%s --optimizer adam", cases[k]);
    snprintf(file_sgd, sizeof file_sgd, HOST_TOPO TINY "%s", cases[k]);
    snprintf(flag_sgd, sizeof flag_sgd, HOST_TOPO "--model %s %s --optimizer sgd", adam,
             cases[k]);
    const char *pairs[2][2] = {{file_adam, flag_adam}, {file_sgd, flag_sgd}};
    for (int p = 0; p < 2; p++) {
      for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
        char x[1300], y[1300];
        snprintf(x, sizeof x, "%s --format csv", pairs[p][0]);
        snprintf(y, sizeof y, "%s --format csv", pairs[p][1]);
        cr_assert_eq(run_num(x, cols[c]), run_num(y, cols[c]), "%s: %s", pairs[p][1], cols[c]);
      }
      char *a = schedule_ops(pairs[p][0], NULL), *b = schedule_ops(pairs[p][1], NULL);
      cr_assert_str_eq(a, b, "%s", pairs[p][1]);
      free(a);
      free(b);
    }
    /* and Adam is not SGD: the step differs (18 passes over 8) */
    char x[1300], y[1300];
    snprintf(x, sizeof x, "%s --format csv", flag_adam);
    snprintf(y, sizeof y, "%s --format csv", file_sgd);
    cr_assert_neq(run_num(x, "step_ms"), run_num(y, "step_ms"), "%s", cases[k]);
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

Test(optimizer_flag, memory_holds_no_optimizer_state_under_none) {
  /* ds_ddp_memory on the tiny model: SGD's momentum P and no step
   * temporaries (in place); Adam's two moments 2 P and foreach Adam's
   * sqrt P; none 0 and 0. The params P stay. */
  struct ds_model *m = ds_test_model("tests/data/tiny-model.yaml");
  struct ds_precision pr = {.param_bytes = 4, .act_bytes = 4};
  struct ds_memory_options mo = {.step_numel = (double)m->total_numel};
  struct ds_ddp_memory mem;
  static const enum ds_optimizer opts[] = {DS_OPT_SGD, DS_OPT_ADAM, DS_OPT_NONE};
  static const double state[] = {P_BYTES, 2 * P_BYTES, 0}, temp[] = {0, P_BYTES, 0};
  for (int k = 0; k < 3; k++) {
    m->optimizer = opts[k];
    ds_ddp_memory(m, &pr, 1, &mo, &mem);
    cr_assert_float_eq(mem.params, P_BYTES, 1e-6);
    cr_assert_float_eq(mem.optimizer, state[k], 1e-6, "%s", ds_optimizer_name(opts[k]));
    cr_assert_float_eq(mem.step_temp, temp[k], 1e-6, "%s", ds_optimizer_name(opts[k]));
  }
  ds_model_free(m);
  /* ddpsim's peak: none is sgd's less the momentum, P (the peak is
   * backward's either way: SGD's step adds nothing) */
  double sgd = run_num(GPU_TOPO TINY "--strategy single --format csv", "peak_mem_gib");
  double none = run_num(GPU_TOPO TINY "--strategy single --optimizer none --format csv",
                        "peak_mem_gib");
  cr_assert_float_eq((sgd - none) * 1073741824.0, P_BYTES, 2e3);
}

Test(optimizer_flag, refused_for_ps_and_bad_values) {
  /* a parameter server is the optimizer: none has no meaning there */
  ds_test_ddpsim_refuses(GPU_TOPO TINY "--strategy ps --optimizer none",
                         "option --optimizer none: not built for --strategy ps");
  ds_test_ddpsim_refuses(GPU_TOPO TINY "--strategy ddp,ps --optimizer none",
                         "option --optimizer none: not built for --strategy ps");
  ds_test_ddpsim_refuses(GPU_TOPO TINY "--optimizer lamb", "--optimizer");
  /* weight decay is the optimizer's: nothing to decay without one */
  ds_test_ddpsim_refuses(GPU_TOPO TINY "--optimizer none --weight-decay",
                         "option --weight-decay: the optimizer's weight_decay, but "
                         "--optimizer none runs no optimizer");
  /* accumulation counts micro-steps per step: none has no step to count to */
  ds_test_ddpsim_refuses(GPU_TOPO TINY "--optimizer none --grad-accum 2",
                         "option --grad-accum: micro-steps per optimizer step, but "
                         "--optimizer none runs no optimizer step");
  ds_test_ddpsim_refuses(GPU_TOPO TINY "--optimizer none --optimizer-batch 8",
                         "option --optimizer-batch: micro-steps per optimizer step");
  /* the text report says what its optimizer line holds under none */
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(),
                                        GPU_TOPO TINY "--optimizer none --pytorch-version 1.9");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "0.007 ms  (--optimizer none: no step;"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli(GPU_TOPO TINY);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(!strstr(r.out, "--optimizer none"), "%s", r.out);
  ds_test_release(&r);
  /* ps with an optimizer named is built */
  cr_assert_gt(iter_us(GPU_TOPO TINY "--strategy ps --world-size 2 --optimizer adam"), 0);
}

/* The CSV and JSON say which optimizer the loop ran: step_ms 0 means no
 * step only under "none" (a step can also be short). */
Test(optimizer_flag, the_outputs_name_the_optimizer) {
  const char *flags[] = {"", "--optimizer adam", "--optimizer none"};
  const char *want[] = {"sgd", "adam", "none"};
  for (int k = 0; k < 3; k++) {
    char args[256], got[16];
    snprintf(args, sizeof args, GPU_TOPO TINY "--format csv %s", flags[k]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    ds_test_csv_str(r.out, "optimizer", 0, got, sizeof got);
    cr_assert_str_eq(got, want[k], "%s", flags[k]);
    ds_test_release(&r);
  }
  struct ds_test_result r = ds_test_cli(GPU_TOPO TINY "--format json --optimizer none");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\"amp\": \"none\", \"optimizer\": \"none\""), "%s", r.out);
  ds_test_release(&r);
}

/* Every input that changes the answer is in the outputs that list a run's
 * inputs: --weight-decay adds a kernel to the step (compute.h) and was in
 * neither the CSV (optimizer "sgd", ddp_options "none") nor the trace's
 * "# inputs:" line; --pytorch-version and --loop free change single's,
 * dp's and ps's loop and were in no CSV column of theirs. The optimizer
 * column now names the decay, each strategy's options column the version
 * and the loop. */
Test(optimizer_flag, the_outputs_record_the_optimizer_side_flags) {
  static const char *const cases[][4] = {
      /* flags, column, row 0's value, row 1's value or NULL */
      {"--weight-decay", "optimizer", "sgd;weight_decay", NULL},
      {"--weight-decay --no-bn-weight-decay --optimizer adam", "optimizer",
       "adam;weight_decay;no_bn_weight_decay", NULL},
      {"--strategy single,dp --world-size 2 --pytorch-version 1.9", "ddp_options",
       "pytorch=1.9", "output_device=0;pytorch=1.9"},
      {"--strategy ps --world-size 2 --pytorch-version 1.4", "ddp_options",
       "mode=sync;servers=1;pytorch=1.4", NULL},
      {"--strategy single,ddp --world-size 2 --loop free", "ddp_options", "loop=free",
       "loop=free"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[256], got[64];
    snprintf(args, sizeof args, GPU_TOPO TINY "--format csv %s", cases[i][0]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    for (int row = 0; row < 2 && cases[i][2 + row]; row++) {
      ds_test_csv_str(r.out, cases[i][1], row, got, sizeof got);
      cr_assert_str_eq(got, cases[i][2 + row], "%s row %d", args, row);
    }
    ds_test_release(&r);
  }
  /* the trace's inputs line */
  char dir[] = "/tmp/ddpsim-wdtrace-XXXXXX", args[512], path[300];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  snprintf(args, sizeof args, GPU_TOPO TINY "--weight-decay --no-bn-weight-decay --trace %s",
           path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char *trace = ds_test_slurp(path);
  const char *inputs = strstr(trace, "# inputs:");
  cr_assert(inputs, "%s", trace);
  char line[1024];
  snprintf(line, sizeof line, "%.*s", (int)strcspn(inputs, "\n"), inputs);
  cr_assert(strstr(line, " weight_decay=1") && strstr(line, " no_bn_weight_decay=1"), "%s",
            line);
  free(trace);
  ds_test_release(&r);
  unlink(path);
  rmdir(dir);
}
