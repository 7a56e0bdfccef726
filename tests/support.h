/*
 * What the tests share: reading and writing a file whole, running a command
 * with its stdout and stderr captured (and expecting ddpsim to refuse), its
 * CSV output read by column name, parsing a ddpsim command line in process,
 * loading a model, a schedule of one backward op to emit a step after, the
 * summary's rows printed to memory.
 * Linked into every test binary (Makefile: TEST_SUPPORT_OBJ); failures are
 * Criterion assertions.
 */
#ifndef DS_TEST_SUPPORT_H
#define DS_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "sim/cli/report.h"
#include "sim/train/compute.h"

struct ds_model;
struct ds_options;

struct ds_test_result {
  int status; /* exit status; 128 when killed by a signal */
  char *out;  /* stdout, NUL-terminated (owned) */
  char *err;  /* stderr (owned) */
};

/* The whole file, NUL-terminated; the caller frees it. */
char *ds_test_slurp(const char *path);

/* `ddpsim collective ARGS` in process (ds_collbench_main, args split at
 * spaces): its status; *text gets what it printed (owned, also on failure)
 * and *err its message. */
ds_status ds_test_collective(const char *args, char **text, struct ds_err *err);

/* A subcommand run in process: its status, message and what it printed
 * (text, owned: the caller frees it). */
struct ds_test_output {
  ds_status st;
  struct ds_err err;
  char *text;
};
/* ds_test_collective's status, message and text as one value. */
struct ds_test_output ds_test_collective_run(const char *args);
/* The same, failing the test (with args and the message) unless it
 * succeeds. */
struct ds_test_output ds_test_collective_ok(const char *args);
/* Fails the test unless `ddpsim collective ARGS` is refused as a usage
 * mistake (DS_EUSAGE) with exactly the message msg. */
void ds_test_collective_usage_error(const char *args, const char *msg);

/* The summary rows as ds_report_print writes them in fmt (owned). */
char *ds_test_report_printed(enum ds_format fmt, const struct ds_summary *rows, int32_t n);

/* $DDPSIM_BIN, else the sanitizer build's ddpsim. */
const char *ds_test_ddpsim(void);
/* $DDPREAL_BIN, else the sanitizer build's ddpreal. */
const char *ds_test_ddpreal(void);

/* Runs `prefix binary args </dev/null` through the shell (prefix: e.g.
 * environment assignments, "" for none), capturing both outputs. */
struct ds_test_result ds_test_run(const char *prefix, const char *binary,
                                  const char *args);

/* `ddpsim args` (ds_test_run of ds_test_ddpsim() with no prefix). */
struct ds_test_result ds_test_cli(const char *args);
/* `env ddpsim args` (env: e.g. environment assignments; NULL or "" for
 * none). */
struct ds_test_result ds_test_cli_env(const char *env, const char *args);
/* `ddpsim args`, failing the test (with its stderr) unless it exits 0. */
struct ds_test_result ds_test_cli_ok(const char *args);
/* `ddpsim args` (a run printing CSV: args hold --format csv), failing the
 * test unless it exits 0 with its first row's step_ms within tol of
 * step_ms and, where optimizer is not NULL, that name in its optimizer
 * column. */
void ds_test_cli_step(const char *args, double step_ms, double tol, const char *optimizer);
/* `env ddpsim analyze args` (env as ds_test_cli_env's). */
struct ds_test_result ds_test_analyze(const char *env, const char *args);
/* /tmp/ddpsim-analyze-PID-TAG.csv into buf (n bytes): a trace file for
 * ddpsim analyze; the caller removes it. */
void ds_test_analyze_tmpname(char *buf, size_t n, const char *tag);

void ds_test_release(struct ds_test_result *r);

/* Replays dir/s.csv with ddpreal on 2 CPU ranks under mpirun (run as root,
 * oversubscribed, leak checks off for Open MPI's own allocations), writing
 * dir/m.csv, and expects success with every collective's result right
 * ("#wrong: 0"). */
void ds_test_replay_cpu2(const char *dir);

/* Writes text to a new file named after the template path (ending in
 * XXXXXX, which the name replaces); the caller unlinks it. */
void ds_test_write_temp(char *path, const char *text);

/* Writes text to path (created or truncated). */
void ds_test_write_file(const char *path, const char *text);

/* mkdtemp(tmpl) (a template ending in XXXXXX, which the name replaces),
 * failing the test if it cannot. */
void ds_test_make_dir(char *tmpl);
/* `rm -rf dir`, failing the test unless it succeeds. */
void ds_test_remove_dir(const char *dir);

/* Writes text to a temporary GPU table, looks up gpu in it into *g and
 * removes the file; returns ds_gpu_table_lookup's status (message in err).
 * path, when not NULL (64 bytes), receives the file's name, which a
 * message names. */
struct ds_gpu_spec;
ds_status ds_test_lookup_gpu_text(const char *text, const char *gpu, struct ds_gpu_spec *g,
                                  struct ds_err *err, char *path);

/* A GPU table whose one GPU, G (sms 1, fp32 1TFLOPS, tf32 8TFLOPS, fp16
 * 2TFLOPS, mem 1GB, mem_bw 1GBps), has `entry` as its line 10: asserts the
 * lookup refuses it with a message holding `expect`, the file's path and
 * ":10:". */
void ds_test_gpu_entry_refused(const char *entry, const char *expect);

/* Writes text to a temporary calibration file, loads it into *c and
 * removes the file; returns ds_calib_load's status (message in err). path,
 * when not NULL (64 bytes), receives the file's name, which a message
 * names. */
struct ds_calib;
ds_status ds_test_load_calib_text(const char *text, struct ds_calib *c, struct ds_err *err,
                                  char *path);

/* Writes dir/t.yaml, the topology file topo_path with its lines from the
 * first `from` on replaced by `tail`, and dir/gpus.yaml (tests/data's
 * TestGPU table, which a topology finds beside it); out gets dir/t.yaml. */
void ds_test_write_topo(const char *dir, const char *topo_path, const char *from,
                        const char *tail, char *out, size_t cap);

/* Runs the shell command cmd (a bench/ script, say): its output (cut to
 * out_len - 1 bytes) in out, its exit status returned (-1 if it did not
 * exit), and in *value the number after " = " on the first line from key on
 * (-1 if key or " = " is missing). */
int ds_test_command_value(const char *cmd, const char *key, double *value, char *out,
                          size_t out_len);

/* Runs ddpsim with args and expects a refusal: exit status 2, msg in its
 * stderr, nothing on its stdout. */
void ds_test_ddpsim_refuses(const char *args, const char *msg);
/* The same, once, with every one of the n msgs in its stderr (a refusal
 * that must name several things, or a run too slow to repeat). */
void ds_test_ddpsim_refuses_all(const char *args, const char *const *msgs, size_t n);

/* CSV text as ddpsim prints it: a header line of column names, then data
 * rows. Rows and columns count from 0; a missing one fails the test. */

/* The index of the column named col (the whole name). */
int ds_test_csv_column(const char *csv, const char *col);
/* The start of data row `row` (the line after the header is row 0). */
const char *ds_test_csv_row(const char *csv, int row);
/* Field k of one CSV line, as a number. */
double ds_test_csv_field(const char *line, int k);
/* Column col of data row `row`, as a number. */
double ds_test_csv_num(const char *csv, const char *col, int row);
/* Column col of data row `row` as a string, cut to cap - 1 characters. */
void ds_test_csv_str(const char *csv, const char *col, int row, char *buf, size_t cap);

/* Rank 0's first op `stream,kind,name` (row) in a --trace file's text:
 * its start and end (us), the trace's last two columns. */
void ds_test_trace_span(const char *csv, const char *row, double *start_us, double *end_us);

/* ds_options_parse of the command line "ddpsim ARGS", args split at
 * spaces (62 words at most), err cleared first. o borrows the words, which
 * stay valid until the next call. */
ds_status ds_test_options_parse(const char *args, struct ds_options *o, struct ds_err *err);
/* The same, failing the test (with the message) unless it succeeds. */
void ds_test_options_ok(const char *args, struct ds_options *o);

/* The model at path (relative to the repository root); the caller frees it
 * (ds_model_free). */
struct ds_model *ds_test_model(const char *path);

/* ds_model_load of a model file whose text is `text` (written to a
 * temporary file /tmp/ddpsim-test-model-XXXXXX, which its messages name,
 * removed after): its status, *out and err as it left them. */
ds_status ds_test_load_model_text(const char *text, struct ds_model **out, struct ds_err *err);

/* A new one-rank schedule in bd->s (the caller frees it, ds_schedule_free)
 * holding one op, rank 0's backward of layer 0 ("l0", 1 us on the compute
 * stream), whose id *tail gets; *bd emits after it: the GPU work that
 * ds_host_emit_step's step follows in test_bertadam.c, test_apex_o2.c and
 * test_pytorch19.c. */
struct ds_schedule_builder;
void ds_test_one_bwd_schedule(struct ds_schedule_builder *bd, int64_t *tail);

/* The toy BERT step of test_bertadam.c and test_apex_o2.c (each works its
 * numbers by hand): the topology file topo loaded, ds_compute_init for dtype
 * (amp none) with a kernel_overhead of kernel_overhead_ns, optimizer_loop on
 * for bertadam as run_load.c sets it under the current rules, and a model of
 * four tensors in registration order, enc.dense.weight (1,000,000 elements),
 * enc.dense.bias and enc.LayerNorm.weight (100,000 each), pooler.dense.weight
 * (1,000,000; run_squad.py leaves it out of the optimizer), under optimizer.
 * ds_test_bert_toy_free frees the topology. */
struct ds_test_bert_toy {
  struct ds_topo *t;
  struct ds_compute c;
  struct ds_param ps[4];
  struct ds_model m;
};
void ds_test_bert_toy_setup(struct ds_test_bert_toy *f, const char *topo, enum ds_dtype dtype,
                            enum ds_optimizer optimizer, double kernel_overhead_ns);
void ds_test_bert_toy_free(struct ds_test_bert_toy *f);

/* A GPU table of made-up GPUs for kernels timed per SM clock: ClockGPU, 4
 * SMs at 1000 MHz (4e9 SM cycles/s) and 1000 GB/s; SlowMemGPU, 1000 SMs at
 * 2000 MHz and 1 GB/s (the roofline binds); NoClockGPU, 4 SMs without a
 * boost_mhz. */
extern const char ds_test_clock_gpus[];

/* A model file of a max-pool layer and a ReLU (test_max_pool.c works its
 * windows, elements and bytes by hand): pool 3x3, stride 2, padding 1 on 2
 * channels of 8x8 per sample, then relu, a memory layer without pool keys. */
extern const char ds_test_pool_model[];

/* Into text (cap bytes): a model file of one layer `l` of class cls, with
 * `keys` (lines indented by four spaces, each ending in a newline) written
 * at line 13, after its fwd_flops, bwd_flops, fwd_bytes and act_bytes, and
 * one parameter tensor: what the tests of a layer key's reader load. */
void ds_test_one_layer_model(char *text, size_t cap, const char *cls, const char *keys);

/* Fails unless ds_model_load refuses the model file text with DS_EINPUT
 * and a message containing `expect` that names its temporary file; `label`
 * says which case in the failure message. */
void ds_test_assert_model_refused(const char *text, const char *expect, const char *label);

/* Fails unless the model file text, whose byte count at `where` (":LINE:COL:
 * key 'PATH'") is "12MiB", is refused naming its file there, with the
 * reminder that a model file's sizes are plain integers: by ds_model_load
 * (DS_EINPUT) and by `ddpsim --topo tests/data/tiny-topo.yaml --model FILE`
 * (exit 2, the same message on stderr). The message ends "expected an
 * integer from 0 to 1000000000000000, got "12MiB": integer bytes per sample,
 * without a unit (12582912, not 12MiB; docs/models.md)", "per sample" left
 * out where per_sample is 0 (a buffer's bytes). */
void ds_test_assert_bytes_hint(const char *text, const char *where, int per_sample);

/* A compute model to test kernels on: a one-GPU topology on GPU `gpu` of
 * the GPU table gpus_text (NVSwitch template, mem_efficiency 1, the
 * given flops_efficiency and kernel_overhead in microseconds), the model file
 * model_text, and ds_compute_init for dtype and amp. The three files are
 * temporary; ds_test_compute_free removes them and frees what was loaded. */
struct ds_test_compute {
  char gpus[64], topo[64], model[64];
  struct ds_topo *topo_loaded;
  struct ds_model *m;
  struct ds_compute c;
};
void ds_test_compute_setup(struct ds_test_compute *f, const char *gpus_text, const char *gpu,
                           double flops_efficiency, double kernel_overhead_us,
                           const char *model_text,
                           enum ds_dtype dtype, enum ds_amp amp);
/* The same with compute_lines (each "  key: value\n") after the topology's
 * compute keys: a topology's own efficiency, say. */
void ds_test_compute_setup_extra(struct ds_test_compute *f, const char *gpus_text,
                                 const char *gpu, double flops_efficiency,
                                 double kernel_overhead_us, const char *compute_lines,
                                 const char *model_text, enum ds_dtype dtype, enum ds_amp amp);
void ds_test_compute_free(struct ds_test_compute *f);

/* Fails the test unless gnuplot is on PATH: it is a dependency
 * (scripts/deps.sh installs gnuplot-nox), so a plot test never skips. */
void ds_test_require_gnuplot(void);

/* Fails the test unless path is a picture: it starts with the magic bytes
 * (magic_len of them: "\x89PNG\r\n\x1a\n", "<?xml") and has more than
 * 1000 bytes (an image, not an empty or truncated file). */
void ds_test_assert_image(const char *path, const char *magic, size_t magic_len);

/* Number of entries in dir other than . and .. (0 when it cannot be read):
 * what an atomic write may leave behind. */
int ds_test_count_entries(const char *dir);

#endif
