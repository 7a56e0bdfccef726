/* See support.h. */
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/net/gpu_table.h"
#include "sim/net/topo.h"
#include "sim/train/calib.h"
#include "sim/train/model.h"
#include "sim/cmd/collbench.h"
#include "sim/cli/options.h"
#include "traces/schedule.h"

char *ds_test_slurp(const char *path) {
  FILE *fp = fopen(path, "rb");
  cr_assert(fp != NULL, "cannot open %s", path);
  cr_assert_eq(fseek(fp, 0, SEEK_END), 0);
  long n = ftell(fp);
  cr_assert(n >= 0);
  cr_assert_eq(fseek(fp, 0, SEEK_SET), 0);
  char *buf = malloc((size_t)n + 1);
  cr_assert(buf != NULL);
  cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v && *v ? v : fallback;
}

const char *ds_test_ddpsim(void) { return env_or("DDPSIM_BIN", "build/asan/ddpsim"); }
const char *ds_test_ddpreal(void) { return env_or("DDPREAL_BIN", "build/asan/ddpreal"); }

struct ds_test_result ds_test_run(const char *prefix, const char *binary,
                                  const char *args) {
  char out[] = "/tmp/ddpsim-test-out-XXXXXX", err[] = "/tmp/ddpsim-test-err-XXXXXX";
  int fo = mkstemp(out), fe = mkstemp(err);
  cr_assert(fo >= 0 && fe >= 0, "mkstemp failed");
  close(fo);
  close(fe);
  /* Commands are long (paths, sweeps): size the buffer to what it holds. */
  size_t cap = strlen(prefix) + strlen(binary) + strlen(args) + 2 * sizeof out + 32;
  char *cmd = malloc(cap);
  cr_assert(cmd != NULL);
  snprintf(cmd, cap, "%s%s%s %s >%s 2>%s </dev/null", prefix, *prefix ? " " : "",
           binary, args, out, err);
  int st = system(cmd);
  free(cmd);
  struct ds_test_result r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128,
                             ds_test_slurp(out), ds_test_slurp(err)};
  unlink(out);
  unlink(err);
  return r;
}

struct ds_test_result ds_test_cli(const char *args) {
  return ds_test_run("", ds_test_ddpsim(), args);
}

struct ds_test_result ds_test_cli_env(const char *env, const char *args) {
  return ds_test_run(env ? env : "", ds_test_ddpsim(), args);
}

struct ds_test_result ds_test_cli_ok(const char *args) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "ddpsim %s: %s", args, r.err);
  return r;
}

void ds_test_cli_step(const char *args, double step_ms, double tol, const char *optimizer) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_float_eq(ds_test_csv_num(r.out, "step_ms", 0), step_ms, tol);
  if (optimizer) {
    char opt[32];
    ds_test_csv_str(r.out, "optimizer", 0, opt, sizeof opt);
    cr_assert_str_eq(opt, optimizer);
  }
  ds_test_release(&r);
}

struct ds_test_result ds_test_analyze(const char *env, const char *args) {
  size_t cap = strlen(args) + sizeof "analyze ";
  char *cmd = malloc(cap);
  cr_assert(cmd != NULL);
  snprintf(cmd, cap, "analyze %s", args);
  struct ds_test_result r = ds_test_cli_env(env, cmd);
  free(cmd);
  return r;
}

void ds_test_analyze_tmpname(char *buf, size_t n, const char *tag) {
  snprintf(buf, n, "/tmp/ddpsim-analyze-%d-%s.csv", (int)getpid(), tag);
}

void ds_test_release(struct ds_test_result *r) {
  free(r->out);
  free(r->err);
  r->out = r->err = NULL;
}

void ds_test_write_file(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  cr_assert_not_null(fp, "%s", path);
  cr_assert_geq(fputs(text, fp), 0, "%s", path);
  cr_assert_eq(fclose(fp), 0, "%s", path);
}

void ds_test_make_dir(char *tmpl) { cr_assert(mkdtemp(tmpl) != NULL, "mkdtemp %s", tmpl); }

void ds_test_remove_dir(const char *dir) {
  size_t cap = strlen(dir) + sizeof "rm -rf ";
  char *cmd = malloc(cap);
  cr_assert(cmd != NULL);
  snprintf(cmd, cap, "rm -rf %s", dir);
  int st = system(cmd);
  free(cmd);
  cr_assert_eq(st, 0, "rm -rf %s", dir);
}

void ds_test_write_temp(char *path, const char *text) {
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0, "mkstemp %s", path);
  FILE *fp = fdopen(fd, "w");
  cr_assert_not_null(fp);
  cr_assert_geq(fputs(text, fp), 0);
  cr_assert_eq(fclose(fp), 0);
}

ds_status ds_test_lookup_gpu_text(const char *text, const char *gpu, struct ds_gpu_spec *g,
                                  struct ds_err *err, char *path) {
  char own[64];
  if (!path) path = own;
  strcpy(path, "/tmp/ddpsim-gputext-XXXXXX");
  ds_test_write_temp(path, text);
  ds_status st = ds_gpu_table_lookup(path, gpu, g, err);
  unlink(path);
  return st;
}

void ds_test_gpu_entry_refused(const char *entry, const char *expect) {
  char text[512], path[64];
  snprintf(text, sizeof text,
           "schema_version: 1\ngpus:\n  - name: G\n    sms: 1\n    fp32: 1TFLOPS\n"
           "    tf32: 8TFLOPS\n    fp16: 2TFLOPS\n    mem: 1GB\n    mem_bw: 1GBps\n    %s\n",
           entry);
  struct ds_gpu_spec g;
  struct ds_err err = {0};
  ds_status st = ds_test_lookup_gpu_text(text, "G", &g, &err, path);
  cr_assert_eq(st, DS_EINPUT, "%s", entry);
  cr_assert(strstr(err.msg, expect) != NULL, "%s: %s", entry, err.msg);
  cr_assert(strstr(err.msg, path) != NULL && strstr(err.msg, ":10:") != NULL,
            "%s: the file and line of the entry: %s", entry, err.msg);
}

ds_status ds_test_load_calib_text(const char *text, struct ds_calib *c, struct ds_err *err,
                                  char *path) {
  char own[64];
  if (!path) path = own;
  strcpy(path, "/tmp/ddpsim-calibtext-XXXXXX");
  ds_test_write_temp(path, text);
  ds_status st = ds_calib_load(path, c, err);
  unlink(path);
  return st;
}

void ds_test_ddpsim_refuses_all(const char *args, const char *const *msgs, size_t n) {
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 2, "%s: status %d, stderr %s", args, r.status, r.err);
  for (size_t i = 0; i < n; i++)
    cr_assert(strstr(r.err, msgs[i]), "%s: stderr \"%s\" lacks \"%s\"", args, r.err, msgs[i]);
  cr_assert_str_eq(r.out, "", "%s printed to stdout", args);
  ds_test_release(&r);
}

void ds_test_ddpsim_refuses(const char *args, const char *msg) {
  ds_test_ddpsim_refuses_all(args, &msg, 1);
}

int ds_test_csv_column(const char *csv, const char *col) {
  size_t len = strlen(col);
  const char *p = csv;
  for (int k = 0;; k++) {
    size_t n = strcspn(p, ",\n");
    if (n == len && strncmp(p, col, len) == 0) return k;
    if (p[n] != ',') break;
    p += n + 1;
  }
  cr_assert_fail("no column %s in %.*s", col, (int)strcspn(csv, "\n"), csv);
  return -1;
}

const char *ds_test_csv_row(const char *csv, int row) {
  const char *p = strchr(csv, '\n');
  for (int i = 0; i < row && p; i++) p = strchr(p + 1, '\n');
  cr_assert(p != NULL && p[1], "no data row %d in %s", row, csv);
  return p + 1;
}

/* The start of field k of line. */
static const char *field_start(const char *line, int k) {
  for (int i = 0; i < k; i++) {
    line += strcspn(line, ",\n");
    cr_assert(*line == ',', "line has fewer than %d fields", k + 1);
    line++;
  }
  return line;
}

double ds_test_csv_field(const char *line, int k) { return strtod(field_start(line, k), NULL); }

double ds_test_csv_num(const char *csv, const char *col, int row) {
  return ds_test_csv_field(ds_test_csv_row(csv, row), ds_test_csv_column(csv, col));
}

void ds_test_csv_str(const char *csv, const char *col, int row, char *buf, size_t cap) {
  const char *f = field_start(ds_test_csv_row(csv, row), ds_test_csv_column(csv, col));
  size_t n = strcspn(f, ",\n");
  if (n >= cap) n = cap - 1;
  memcpy(buf, f, n);
  buf[n] = '\0';
}

void ds_test_trace_span(const char *csv, const char *row, double *start_us, double *end_us) {
  char want[96];
  snprintf(want, sizeof want, ",0,%s,", row);
  for (const char *line = strchr(csv, '\n'); line; line = strchr(line + 1, '\n')) {
    const char *comma = strchr(line + 1, ',');
    if (!comma || strncmp(comma, want, strlen(want)) != 0) continue;
    const char *last = strchr(line + 1, '\n');
    while (*--last != ',') {}
    const char *prev = last;
    while (*--prev != ',') {}
    *start_us = strtod(prev + 1, NULL);
    *end_us = strtod(last + 1, NULL);
    return;
  }
  cr_assert_fail("no %s on rank 0 in the trace", row);
}

ds_status ds_test_collective(const char *args, char **text, struct ds_err *err) {
  char buf[1024], *argv[64];
  int argc = 0;
  cr_assert_lt(snprintf(buf, sizeof buf, "collective %s", args), (int)sizeof buf, "%s", args);
  for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) argv[argc++] = t;
  argv[argc] = NULL;
  memset(err, 0, sizeof *err);
  size_t len = 0;
  *text = NULL;
  FILE *fp = open_memstream(text, &len);
  cr_assert(fp != NULL);
  ds_status st = ds_collbench_main(argc, argv, fp, err);
  cr_assert_eq(fclose(fp), 0);
  return st;
}

struct ds_test_output ds_test_collective_run(const char *args) {
  struct ds_test_output o = {0};
  o.st = ds_test_collective(args, &o.text, &o.err);
  return o;
}

struct ds_test_output ds_test_collective_ok(const char *args) {
  struct ds_test_output o = ds_test_collective_run(args);
  cr_assert_eq(o.st, DS_OK, "collective %s: %s", args, o.err.msg);
  return o;
}

void ds_test_collective_usage_error(const char *args, const char *msg) {
  struct ds_test_output o = ds_test_collective_run(args);
  cr_assert_eq(o.st, DS_EUSAGE, "collective %s: status %d", args, o.st);
  cr_assert_str_eq(o.err.msg, msg, "collective %s", args);
  free(o.text);
}

char *ds_test_report_printed(enum ds_format fmt, const struct ds_summary *rows, int32_t n) {
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&text, &len);
  cr_assert(fp);
  cr_assert_eq(ds_report_print(fp, fmt, rows, n), 0);
  cr_assert_eq(fclose(fp), 0);
  return text;
}

ds_status ds_test_options_parse(const char *args, struct ds_options *o, struct ds_err *err) {
  static char buf[1024]; /* o keeps pointers into it */
  char *argv[64];
  int argc = 0;
  snprintf(buf, sizeof buf, "%s", args);
  argv[argc++] = "ddpsim";
  for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) argv[argc++] = t;
  argv[argc] = NULL;
  memset(err, 0, sizeof *err);
  return ds_options_parse(argc, argv, o, err);
}

void ds_test_options_ok(const char *args, struct ds_options *o) {
  struct ds_err err;
  cr_assert_eq(ds_test_options_parse(args, o, &err), DS_OK, "%s: %s", args, err.msg);
}

struct ds_model *ds_test_model(const char *path) {
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_model_load(path, &m, &err), DS_OK, "%s", err.msg);
  return m;
}

void ds_test_one_bwd_schedule(struct ds_schedule_builder *bd, int64_t *tail) {
  *bd = (struct ds_schedule_builder){0};
  cr_assert_eq(ds_schedule_new(1, &bd->s), DS_OK);
  struct ds_op gpu = {.rank = 0, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "l0",
                      .layer = 0, .bucket = -1, .coll = -1, .root = -1, .dur_us = 1};
  cr_assert_eq(ds_schedule_emit(bd, &gpu, NULL, 0), DS_OK);
  *tail = gpu.id;
}

void ds_test_bert_toy_setup(struct ds_test_bert_toy *f, const char *topo, enum ds_dtype dtype,
                            enum ds_optimizer optimizer, double kernel_overhead_ns) {
  static char w[] = "enc.dense.weight", b[] = "enc.dense.bias", g[] = "enc.LayerNorm.weight",
              pool[] = "pooler.dense.weight";
  struct ds_err err = {0};
  memset(f, 0, sizeof *f);
  cr_assert_eq(ds_topo_load(topo, NULL, &f->t, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compute_init(f->t, dtype, DS_AMP_NONE, &f->c, &err), DS_OK, "%s", err.msg);
  f->c.params.kernel_overhead_ns = kernel_overhead_ns;
  f->c.optimizer_loop = optimizer == DS_OPT_BERTADAM;
  char *names[4] = {w, b, g, pool};
  int64_t numel[4] = {1000000, 100000, 100000, 1000000};
  for (int i = 0; i < 4; i++) f->ps[i] = (struct ds_param){.name = names[i], .numel = numel[i]};
  f->m = (struct ds_model){.params = f->ps, .n_params = 4, .total_numel = 2200000,
                           .optimizer = optimizer};
}

void ds_test_bert_toy_free(struct ds_test_bert_toy *f) { ds_topo_free(f->t); }

void ds_test_require_gnuplot(void) {
  cr_assert(system("command -v gnuplot >/dev/null 2>&1") == 0,
            "gnuplot is not on PATH: it is a dependency of ddpsim's plots (make deps, "
            "scripts/deps.sh, installs gnuplot-nox)");
}

void ds_test_assert_image(const char *path, const char *magic, size_t magic_len) {
  FILE *fp = fopen(path, "rb");
  cr_assert(fp != NULL, "%s: no picture", path);
  char head[64] = {0};
  cr_assert_leq(magic_len, sizeof head);
  size_t got = fread(head, 1, sizeof head, fp);
  fseek(fp, 0, SEEK_END);
  long size = ftell(fp);
  fclose(fp);
  cr_assert(got >= magic_len && memcmp(head, magic, magic_len) == 0, "%s starts %.8s", path,
            head);
  cr_assert_gt(size, 1000, "%s is %ld bytes: an image, not an empty file", path, size);
}

int ds_test_command_value(const char *cmd, const char *key, double *value, char *out,
                          size_t out_len) {
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "popen %s", cmd);
  size_t n = fread(out, 1, out_len - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  *value = -1;
  const char *line = strstr(out, key);
  const char *eq = line ? strstr(line, " = ") : NULL;
  if (eq) *value = atof(eq + 3);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int ds_test_count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  if (d) closedir(d);
  return n;
}

void ds_test_replay_cpu2(const char *dir) {
  char args[1024];
  snprintf(args, sizeof args, "-np 2 %s --device cpu --schedule %s/s.csv --trace %s/m.csv "
           "--iters 2", ds_test_ddpreal(), dir, dir);
  struct ds_test_result r =
      ds_test_run("ASAN_OPTIONS=detect_leaks=0 OMPI_ALLOW_RUN_AS_ROOT=1 "
                  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
                  "mpirun --oversubscribe -x ASAN_OPTIONS", "", args);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "#wrong: 0"), "%s", r.out);
  ds_test_release(&r);
}

ds_status ds_test_load_model_text(const char *text, struct ds_model **out, struct ds_err *err) {
  char path[] = "/tmp/ddpsim-test-model-XXXXXX";
  ds_test_write_temp(path, text);
  ds_status st = ds_model_load(path, out, err);
  unlink(path);
  return st;
}

const char ds_test_clock_gpus[] =
    "schema_version: 1\ngpus:\n"
    "  - name: ClockGPU\n    # no arch\n    sms: 4\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n"
    "    fp16: 160TFLOPS\n    bf16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
    "    boost_mhz: 1000\n"
    "  - name: SlowMemGPU\n    # no arch\n    sms: 1000\n    fp32: 10TFLOPS\n"
    "    fp16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1GBps\n    boost_mhz: 2000\n"
    "  - name: NoClockGPU\n    # no arch\n    sms: 4\n    fp32: 10TFLOPS\n    fp16: 160TFLOPS\n"
    "    mem: 16GB\n    mem_bw: 1000GBps\n";

const char ds_test_pool_model[] =
    "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - {name: pool, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 640,"
    " act_bytes: 256, op_fwd_bytes: 896, bwd_bytes: 1408, amp_bwd_bytes: 896,"
    " pool_kernel: [3, 3], pool_stride: [2, 2], pool_padding: [1, 1],"
    " pool_input: [2, 8, 8], params: []}\n"
    "  - {name: relu, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 640,"
    " act_bytes: 0, params: [{name: w, numel: 1}]}\n";

void ds_test_one_layer_model(char *text, size_t cap, const char *cls, const char *keys) {
  snprintf(text, cap,
           "schema_version: 1\nname: b\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
           "layers:\n  - name: l\n    class: %s\n    fwd_flops: 0\n    bwd_flops: 0\n"
           "    fwd_bytes: 1\n    act_bytes: 0\n%s    params:\n      - {name: w, numel: 1}\n",
           cls, keys);
}

void ds_test_assert_model_refused(const char *text, const char *expect, const char *label) {
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_EINPUT, "%s: loaded", label);
  cr_assert(strstr(err.msg, expect), "%s: expected \"%s\" in: %s", label, expect, err.msg);
  cr_assert(strstr(err.msg, "/tmp/ddpsim-test-model-"), "%s names no file: %s", label,
            err.msg);
}

void ds_test_assert_bytes_hint(const char *text, const char *where, int per_sample) {
  char path[] = "/tmp/ddpsim-test-model-XXXXXX", expect[512], args[256];
  ds_test_write_temp(path, text);
  snprintf(expect, sizeof expect,
           "%s%s: expected an integer from 0 to 1000000000000000, got \"12MiB\": integer "
           "bytes%s, without a unit (12582912, not 12MiB; docs/models.md)",
           path, where, per_sample ? " per sample" : "");
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  ds_status st = ds_model_load(path, &m, &err);
  snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml --model %s", path);
  struct ds_test_result r = ds_test_cli(args);
  unlink(path);
  cr_assert_eq(st, DS_EINPUT, "%s: loaded", where);
  cr_assert(strstr(err.msg, expect), "expected \"%s\" in: %s", expect, err.msg);
  cr_assert_eq(r.status, 2, "%s: exit %d: %s", where, r.status, r.err);
  cr_assert(strstr(r.err, expect), "expected \"%s\" on stderr: %s", expect, r.err);
  ds_test_release(&r);
}

void ds_test_compute_setup(struct ds_test_compute *f, const char *gpus_text, const char *gpu,
                           double flops_efficiency, double kernel_overhead_us,
                           const char *model_text,
                           enum ds_dtype dtype, enum ds_amp amp) {
  ds_test_compute_setup_extra(f, gpus_text, gpu, flops_efficiency, kernel_overhead_us, "",
                              model_text, dtype, amp);
}

void ds_test_compute_setup_extra(struct ds_test_compute *f, const char *gpus_text,
                                 const char *gpu, double flops_efficiency,
                                 double kernel_overhead_us, const char *compute_lines,
                                 const char *model_text, enum ds_dtype dtype, enum ds_amp amp) {
  char text[1024];
  strcpy(f->gpus, "/tmp/ddpsim-testgpus-XXXXXX");
  ds_test_write_temp(f->gpus, gpus_text);
  snprintf(text, sizeof text,
           "schema_version: 1\nname: t\ngpu: %s\nnodes: 1\ngpus_per_node: 1\n"
           "intra_node:\n  template: nvswitch\n  link_bw: 100GBps\n  link_lat: 1us\n"
           "compute:\n  flops_efficiency: %g\n  mem_efficiency: 1\n  kernel_overhead: %gus\n%s",
           gpu, flops_efficiency, kernel_overhead_us, compute_lines);
  strcpy(f->topo, "/tmp/ddpsim-testtopo-XXXXXX");
  ds_test_write_temp(f->topo, text);
  strcpy(f->model, "/tmp/ddpsim-testmodel-XXXXXX");
  ds_test_write_temp(f->model, model_text);
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(f->topo, f->gpus, &f->topo_loaded, &err), DS_OK, "%s", err.msg);
  f->m = ds_test_model(f->model);
  cr_assert_eq(ds_compute_init(f->topo_loaded, dtype, amp, &f->c, &err), DS_OK, "%s", err.msg);
}

void ds_test_compute_free(struct ds_test_compute *f) {
  ds_model_free(f->m);
  ds_topo_free(f->topo_loaded);
  unlink(f->gpus);
  unlink(f->topo);
  unlink(f->model);
}

void ds_test_write_topo(const char *dir, const char *topo_path, const char *from,
                        const char *tail, char *out, size_t cap) {
  char *text = ds_test_slurp(topo_path);
  char *at = strstr(text, from);
  cr_assert(at, "%s has no %s", topo_path, from);
  *at = 0;
  snprintf(out, cap, "%s/t.yaml", dir);
  FILE *fp = fopen(out, "w");
  cr_assert(fp, "%s", out);
  cr_assert_geq(fprintf(fp, "%s%s", text, tail), 0);
  cr_assert_eq(fclose(fp), 0);
  free(text);
  char gpus[512];
  snprintf(gpus, sizeof gpus, "%s/gpus.yaml", dir);
  text = ds_test_slurp("tests/data/gpus.yaml");
  ds_test_write_file(gpus, text);
  free(text);
}
