/*
 * Every reader of user input behind one call (readers.h): the YAML files
 * (topology, model, calibration, GPU table), the CSV files (schedule, trace and its
 * analysis, two traces compared, nccl-tests reference tables), ddpsim's command line, its
 * subcommands' and ddpreal's (`ddpreal collective` and `calibrate` too),
 * and the unit and value grammars. The file readers take a path, so the
 * input is written to a file first; the gpu table is the shipped one.
 *
 * Besides crashes, leaks, hangs and sanitizer reports, a refusal that breaks
 * docs/reliability.md's promise aborts (so libFuzzer saves the input): bad
 * input must be DS_EINPUT or DS_EUSAGE (exit 2, never 1) with a message,
 * and a file reader's message must name the file. So does a report that
 * prints nan, inf or a number of more than 24 digits for an input that was
 * accepted (check_printed).
 */
#include "fuzz/readers.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "analysis/analyze.h"
#include "analysis/compare.h"
#include "base/units.h"
#include "base/values.h"
#include "real/calibrate_args.h"
#include "real/collective_args.h"
#include "real/options.h"
#include "real/replay.h"
#include "real/replay_check.h"
#include "sim/cmd/bucketcmd.h"
#include "sim/cmd/collbench.h"
#include "sim/cmd/collbench_plot.h"
#include "sim/cli/options.h"
#include "sim/cli/sweep_measured.h"
#include "sim/cmd/topocmd.h"
#include "sim/net/gpu_table.h"
#include "sim/net/topo.h"
#include "sim/net/topo_import.h"
#include "sim/train/calib.h"
#include "sim/train/grouped_conv.h"
#include "sim/train/model.h"
#include "traces/schedule.h"
#include "traces/trace.h"

#ifndef DS_SOURCE_DIR
#define DS_SOURCE_DIR "."
#endif

const char *const ds_fuzz_readers[] = {"topo",  "model", "calib",  "schedule", "trace",
                                       "reference", "cli", "units", "import", "measured",
                                       "subcmd", "gpus", "analyze", "ddpreal", NULL};

/* Whether msg places something at line 0 of path: its first naming of
 * the file, where a message says where ("PATH:LINE:"), is "PATH:0:" or
 * "PATH:0 " (a key's line never found, not a place in the file). Later
 * namings may be the file's own text quoted back (unknown key '...', got
 * "..."), which the fuzzer learns to write. */
static int names_line_0(const char *msg, const char *path) {
  size_t n = strlen(path);
  const char *p = strstr(msg, path);
  return p && p[n] == ':' && p[n + 1] == '0' && (p[n + 2] == ':' || p[n + 2] == ' ');
}

/* Aborts unless st is success or a refusal as promised: exit status 2
 * (DS_EINPUT, DS_EUSAGE) and a message naming `path` (when not NULL). */
static void check_refusal(const char *what, ds_status st, const struct ds_err *err,
                          const char *path) {
  if (st == DS_OK) return;
  const char *why = NULL;
  if (ds_status_exit_code(st) != 2) why = "exit status not 2";
  else if (!err->msg[0]) why = "no message";
  else if (path && !strstr(err->msg, path)) why = "message does not name the file";
  else if (path && names_line_0(err->msg, path)) why = "message names line 0 of the file";
  if (!why) return;
  fprintf(stderr, "fuzz: %s refused with %s (%s): \"%s\"\n", what, ds_status_name(st), why,
          err->msg);
  abort();
}

/* Aborts when what an accepted input printed holds a number no reader can
 * use: a word "nan" or "inf" (any case, signed), or a run of more than 24
 * digits (a --measured iter_ms of 1e308 printed 300 of them). fp is
 * open_memstream's, closed here; the text is freed. */
static void check_printed(const char *what, FILE *fp, char **text) {
  if (!fp) return;
  if (fclose(fp) != 0 || !*text) return;
  const char *why = NULL, *at = *text;
  for (const char *p = *text; *p && !why; p++) {
    size_t digits = strspn(p, "0123456789");
    if (digits > 24) why = "a number of more than 24 digits", at = p;
    p += digits ? digits - 1 : 0;
    if (digits) continue;
    int word_start = p == *text || !isalnum((unsigned char)p[-1]);
    size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
    if (word_start && (n == 3 || n == 8) &&
        (strncasecmp(p, "nan", 3) == 0 || strncasecmp(p, "inf", 3) == 0) &&
        (n == 3 || strncasecmp(p, "infinity", 8) == 0))
      why = "nan or inf", at = p;
    p += n ? n - 1 : 0;
  }
  if (why) {
    const char *line = at;
    while (line > *text && line[-1] != '\n') line--;
    fprintf(stderr, "fuzz: %s printed %s: \"%.200s\"\n", what, why, line);
    abort();
  }
  free(*text);
  *text = NULL;
}

/* The input as a file; returns its path in buf, or NULL. */
static const char *to_file(const uint8_t *data, size_t size, const char *suffix, char *buf,
                           size_t cap) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, cap, "%s/ddpsim-fuzz-%ld%s", dir && *dir ? dir : "/tmp", (long)getpid(),
           suffix);
  FILE *fp = fopen(buf, "wb");
  if (!fp) return NULL;
  int bad = size && fwrite(data, 1, size, fp) != size;
  if (fclose(fp) != 0 || bad) return NULL;
  return buf;
}

static void run_topo(const char *path) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  ds_status st = ds_topo_load(path, DS_SOURCE_DIR "/topologies/gpus.yaml", &t, &err);
  check_refusal("ds_topo_load", st, &err, path);
  if (st == DS_OK && t->n_gpus > 1) {
    int32_t links[256], n = 0;
    ds_topo_route(t, 0, t->n_gpus - 1, links, 256, &n, &err);
  }
  ds_topo_free(t);
}

/* A GPU table (`gpus.yaml` beside a topology, `topo import --gpus`),
 * merged over the shipped one as ds_gpu_table_load does, then used as a
 * topology (4gpu.yaml names an A100 entry the input may replace) and as
 * `topo import` of an nvidia-smi matrix and an NCCL XML (which look
 * GPUs up by smi name and by PCI id) use it. */
static void run_gpus(const char *path) {
  static const char *const imports[] = {DS_SOURCE_DIR "/tests/data/topo_import/dgx-h100.txt",
                                        DS_SOURCE_DIR "/tests/data/topo_import/dgx-a100.xml"};
  struct ds_gpu_table table = {0};
  struct ds_err err = {0};
  ds_status st = ds_gpu_table_load(path, &table, &err);
  check_refusal("ds_gpu_table_load", st, &err, path);
  if (st != DS_OK) return;
  for (size_t i = 0; i < sizeof imports / sizeof *imports; i++) {
    struct ds_import_node node;
    if (ds_import_read(imports[i], &table, NULL, &node, &err) != DS_OK) continue;
    FILE *sink = fopen("/dev/null", "w");
    struct ds_import_options one = {0};
    if (sink) {
      ds_import_write(sink, &node, 1, &one, &err);
      fclose(sink);
    }
    ds_import_node_release(&node);
  }
  ds_gpu_table_release(&table);
  struct ds_topo *t = NULL;
  st = ds_topo_load(DS_SOURCE_DIR "/topologies/4gpu.yaml", path, &t, &err);
  check_refusal("ds_topo_load", st, &err, NULL);
  if (st == DS_OK && t->n_gpus > 1) {
    int32_t links[256], n = 0;
    ds_topo_route(t, 0, t->n_gpus - 1, links, 256, &n, &err);
  }
  ds_topo_free(t);
}

/* `ddpsim topo import` of one file (NCCL XML or nvidia-smi matrix), as
 * one node and as two (the cluster path), written to nowhere. */
static void run_import(const char *path) {
  struct ds_gpu_table table = {0};
  struct ds_import_node node;
  struct ds_err err = {0};
  if (ds_gpu_table_load(DS_SOURCE_DIR "/topologies/gpus.yaml", &table, &err) != DS_OK) return;
  ds_status st = ds_import_read(path, &table, NULL, &node, &err);
  check_refusal("ds_import_read", st, &err, path);
  if (st == DS_OK) {
    FILE *sink = fopen("/dev/null", "w");
    struct ds_import_options one = {0}, two = {.nodes = 2, .nic_count = 1, .nic_bw = 1e9,
                                               .nic_spec = "1x8Gbps"};
    if (sink) {
      ds_import_write(sink, &node, 1, &one, &err);
      ds_import_write(sink, &node, 1, &two, &err);
      fclose(sink);
    }
    ds_import_node_release(&node);
  }
  ds_gpu_table_release(&table);
}

static void run_model(const char *path) {
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  check_refusal("ds_model_load", ds_model_load(path, &m, &err), &err, path);
  ds_model_free(m);
}


static void run_schedule(const char *path) {
  struct ds_schedule *s = NULL;
  struct ds_err err = {0};
  ds_status st = ds_schedule_read_csv(path, &s, &err);
  check_refusal("ds_schedule_read_csv", st, &err, path);
  if (st == DS_OK) ds_schedule_free(s);
}

static void run_trace(const char *path) {
  struct ds_trace *t = NULL;
  struct ds_err err = {0};
  ds_status st = ds_trace_read_csv(path, &t, &err);
  check_refusal("ds_trace_read_csv", st, &err, path);
  if (st != DS_OK) return;
  ds_trace_free(t);
  /* and what `ddpsim analyze FILE` makes of it */
  struct ds_compare *c = NULL;
  struct ds_compare_options opt = {.pred_iter = -1, .label = "fuzz"};
  st = ds_compare_load_one(path, &opt, &c, &err);
  check_refusal("ds_compare_load_one", st, &err, path);
  if (st == DS_OK) ds_compare_free(c);
}

static void run_reference(const char *path) {
  struct ds_busbw_set set;
  memset(&set, 0, sizeof set);
  struct ds_err err = {0};
  ds_status st = ds_busbw_reference_load(path, NULL, &set, &err);
  check_refusal("ds_busbw_reference_load", st, &err, path);
  if (st != DS_OK) return;
  /* and the rows a run on 8 ranks keeps */
  size_t dropped = 0;
  st = ds_busbw_keep_ranks(&set, path, 8, "fuzz", &dropped, &err);
  check_refusal("ds_busbw_keep_ranks", st, &err, path);
  ds_busbw_release(&set);
}

/* A --measured table beside a sweep of --bucket-mb 1,5,25, and its
 * comparison with a prediction at those three values. */
static void run_measured(const char *path) {
  char *argv[] = {"ddpsim", "--topo", "x", "--bucket-mb", "1,5,25", "--measured",
                  (char *)path, NULL};
  struct ds_options o;
  struct ds_err err = {0};
  if (ds_options_parse(7, argv, &o, &err) != DS_OK) abort(); /* the harness's own argv */
  struct ds_measured m = {0};
  ds_status st = ds_measured_load(&o, &m, &err);
  check_refusal("ds_measured_load", st, &err, path);
  if (st != DS_OK) return;
  static const struct ds_sweep_point pred[] = {
      {1, 10, 2, "1", 0}, {5, 8, 1, "5", 0}, {25, 9, 1.5, "25", 0}};
  struct ds_measured_cmp cmp;
  st = ds_measured_compare(pred, 3, 0, &m, &cmp, &err);
  check_refusal("ds_measured_compare", st, &err, NULL);
  if (st == DS_OK) {
    /* the table ddpsim prints after the sweep */
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    if (fp) ds_measured_print(fp, &o, pred, 3, &m, &cmp);
    check_printed("ds_measured_print", fp, &text);
    free(text);
    ds_measured_cmp_release(&cmp);
  }
  ds_measured_release(&m);
}

/* The input's lines as words argv[first..], at most 63 in all, NULL
 * after the last; returns argc, or -1 without memory. *text is to free. */
#define ARGV_MAX 64
static int to_words(const uint8_t *data, size_t size, char *argv[ARGV_MAX], int first,
                    char **text) {
  *text = malloc(size + 1);
  if (!*text) return -1;
  memcpy(*text, data, size);
  (*text)[size] = '\0';
  int argc = first;
  for (char *p = *text; argc < ARGV_MAX - 1 && p && *p;) {
    argv[argc++] = p;
    p = strchr(p, '\n');
    if (p) *p++ = '\0';
  }
  argv[argc] = NULL;
  return argc;
}

/* ddpsim's command line: the input's lines are the words. */
static void run_cli(const uint8_t *data, size_t size) {
  char *argv[ARGV_MAX] = {"ddpsim"}, *text;
  int argc = to_words(data, size, argv, 1, &text);
  if (argc < 0) return;
  struct ds_options o;
  struct ds_err err = {0};
  check_refusal("ds_options_parse", ds_options_parse(argc, argv, &o, &err), &err, NULL);
  free(text);
}

/* ddpreal's command line as real/main.c dispatches it: `ddpreal collective
 * ...` and `ddpreal calibrate ...` to their own parsers (argv[0] the
 * subcommand's name; parsed here in every build, though only a cuda build
 * runs them), anything else to ddpreal's options. */
static ds_status check_ddpreal(int argc, char **argv, struct ds_err *err) {
  if (argc > 1 && strcmp(argv[1], "collective") == 0) {
    struct ds_collective_args a;
    return ds_collective_args_parse(argc - 1, argv + 1, &a, err);
  }
  if (argc > 1 && strcmp(argv[1], "calibrate") == 0) {
    struct ds_calibrate_args a;
    return ds_calibrate_args_parse(argc - 1, argv + 1, &a, err);
  }
  struct ds_real_options o;
  return ds_real_options_parse(argc, argv, &o, err);
}

/* A subcommand's command line, one word a line: the first names it
 * (`collective`, `analyze`, `topo` (and `topo import`), `buckets`, as
 * after `ddpsim`; or `ddpreal`: its main command's options, `ddpreal
 * collective` and `ddpreal calibrate`'s), the rest are
 * its arguments. Parsing and validation only (the *_check_args seams):
 * nothing is read or run. An output that cannot be written is exit 1 as
 * docs/reliability.md promises (DS_EIO naming the flag: `collective
 * --plot`, `ddpreal --trace`, `ddpreal calibrate --out`); every other
 * refusal must be exit 2. */
static void run_subcmd(const uint8_t *data, size_t size) {
  static const struct {
    const char *name, *output_flags[2];
    ds_status (*check)(int argc, char **argv, struct ds_err *err);
  } cmds[] = {{"collective", {"--plot ", NULL}, ds_collbench_check_args},
              {"analyze", {NULL, NULL}, ds_analyze_check_args},
              {"topo", {NULL, NULL}, ds_topocmd_check_args},
              {"buckets", {NULL, NULL}, ds_bucketcmd_check_args},
              {"ddpreal", {"--trace ", "--out "}, check_ddpreal}};
  char *argv[ARGV_MAX], *text;
  int argc = to_words(data, size, argv, 0, &text);
  if (argc < 0) return;
  for (size_t i = 0; argc > 0 && i < sizeof cmds / sizeof *cmds; i++) {
    if (strcmp(argv[0], cmds[i].name) != 0) continue;
    struct ds_err err = {0};
    ds_status st = cmds[i].check(argc, argv, &err);
    int unwritable = 0;
    for (int k = 0; k < 2 && st == DS_EIO; k++) {
      const char *flag = cmds[i].output_flags[k];
      unwritable |= flag && strncmp(err.msg, flag, strlen(flag)) == 0;
    }
    if (!unwritable) check_refusal(cmds[i].name, st, &err, NULL);
    break;
  }
  /* ddpreal --timeout sets it for the ranks; the next input starts clean */
  unsetenv("DDPREAL_TIMEOUT_S");
  free(text);
}

/* Where the first line beginning "====" at or after from starts (between
 * analyze's two traces, calib's files: fuzz/README.md), or size without
 * one. */
static size_t sep_line(const uint8_t *data, size_t from, size_t size) {
  for (size_t i = from; i + 4 <= size; i++)
    if ((i == 0 || data[i - 1] == '\n') && memcmp(data + i, "====", 4) == 0) return i;
  return size;
}

/* An integer of the separator line's rest at *p, -1 without one; kept in
 * [-1, 1000] so the fuzzer picks iterations a trace can have. */
static int32_t sep_int(const char **p) {
  char *end;
  long v = strtol(*p, &end, 10);
  if (end == *p) return -1;
  *p = end;
  return v < -1 ? -1 : v > 1000 ? 1000 : (int32_t)v;
}

/* `ddpsim analyze PRED MEAS`: the input is the predicted trace, a line
 * beginning "====" (optionally followed by --iter's and --skip-measured's
 * values), then the measured trace; without the line the input is both
 * (a trace joined with itself). Reads both, joins and compares op by op
 * (ds_compare_load), then prints the report in every format, per op too. A
 * refusal must name one of the two files. */
static void run_analyze(const uint8_t *data, size_t size) {
  const uint8_t *meas = data;
  size_t pred_size = size, meas_size = size;
  struct ds_compare_options opt = {.pred_iter = -1, .skip_measured = -1};
  size_t sep = sep_line(data, 0, size);
  if (sep < size) {
    size_t eol = sep;
    while (eol < size && data[eol] != '\n') eol++;
    char line[64] = "";
    size_t rest = eol - sep - 4;
    memcpy(line, data + sep + 4, rest < sizeof line - 1 ? rest : sizeof line - 1);
    const char *p = line;
    opt.pred_iter = sep_int(&p);
    opt.skip_measured = sep_int(&p);
    pred_size = sep;
    meas = data + (eol < size ? eol + 1 : size);
    meas_size = size - (size_t)(meas - data);
  }
  char pred_path[512], meas_path[512];
  const char *pp = to_file(data, pred_size, "-pred.csv", pred_path, sizeof pred_path);
  const char *mp = to_file(meas, meas_size, "-meas.csv", meas_path, sizeof meas_path);
  if (pp && mp) {
    struct ds_compare *c = NULL;
    struct ds_err err = {0};
    ds_status st = ds_compare_load(pp, mp, &opt, &c, &err);
    check_refusal("ds_compare_load", st, &err, strstr(err.msg, pp) ? pp : mp);
    char *text = NULL;
    size_t len = 0;
    FILE *sink = st == DS_OK ? open_memstream(&text, &len) : NULL;
    if (sink) {
      ds_compare_print(sink, c, DS_COMPARE_TEXT, 1);
      ds_compare_print(sink, c, DS_COMPARE_CSV, 0);
      ds_compare_print(sink, c, DS_COMPARE_CSV, 1);
      ds_compare_print(sink, c, DS_COMPARE_JSON, 1);
    }
    check_printed("ds_compare_print", sink, &text);
    free(text);
    ds_compare_free(c);
  }
  if (pp) unlink(pp);
  if (mp) unlink(mp);
}

/* splitmix64: the next of a sequence drawn from *x. */
static uint64_t draw(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* What rank 0 makes of the records a replay of s would gather
 * (real/replay_place.c), built as ds_replay_rank fills them over iters
 * iterations: each rank's host (rank 0's or its own), clock offset (up to
 * 11 days) and, on another host, clock rate (up to 600 ppm off rank 0's:
 * past the 500 ppm ds_replay_clocks applies), its delay after each barrier
 * (up to 1 ms, one in 16 up to 100 ms) and a gap before each op (up to 1
 * us) drawn from seed, each op as long as its dur_us (at most 1 s) on the
 * rank's clock, the next barrier after every rank's last end. Every op
 * must be placed, the earliest begin of iteration 0 at 0, and each
 * iteration's latest end no earlier than the one before (replay_place.c's
 * order guarantee, which ddpsim analyze checks). */
static void place_run(const struct ds_schedule *s, int32_t iters, uint64_t seed) {
  int32_t world = s->world_size;
  size_t n = s->n_ops;
  size_t *own = malloc((n ? n : 1) * sizeof *own);
  size_t most = own ? ds_replay_own_places(s, own) : SIZE_MAX;
  size_t len = most == SIZE_MAX ? 0 : ds_replay_rec_len(most, iters);
  int64_t *all = NULL, *clock = NULL, *t = NULL;
  int32_t *host = NULL;
  double *rate = NULL;
  struct ds_replay_clock *placed = NULL;
  if (most == SIZE_MAX || world > 4096 || len > ((size_t)1 << 20) / (size_t)world) goto out;
  all = malloc((size_t)world * len * sizeof *all);
  placed = malloc((size_t)world * sizeof *placed);
  clock = malloc((size_t)world * sizeof *clock);
  t = malloc((size_t)world * sizeof *t);
  host = malloc((size_t)world * sizeof *host);
  rate = malloc((size_t)world * sizeof *rate);
  if (!all || !placed || !clock || !t || !host || !rate) goto out;
  for (size_t j = 0; j < (size_t)world * len; j++) all[j] = -1;
  for (int32_t q = 0; q < world; q++) {
    uint64_t r = draw(&seed);
    clock[q] = (int64_t)(r % 1000000000000000u);
    host[q] = q > 0 && (r >> 60) % 2 ? q : 0;
    rate[q] = host[q] ? ((double)(draw(&seed) % 1200001) - 600000) * 1e-9 : 0;
  }
  int64_t barrier = 0;
  for (int32_t k = 0; k < iters; k++) {
    int64_t next = barrier;
    for (int32_t q = 0; q < world; q++) {
      uint64_t r = draw(&seed);
      int64_t delay = (int64_t)(r % 16 == 0 ? (r >> 4) % 100000000 : (r >> 4) % 1000000);
      int64_t when = barrier + delay; /* on rank 0's clock */
      all[(size_t)q * len + 1 + (size_t)k] = clock[q] + when + llround((double)when * rate[q]);
      t[q] = 0;
      if (when > next) next = when;
    }
    for (size_t i = 0; i < n; i++) {
      int32_t q = s->ops[i].rank;
      double us = s->ops[i].dur_us > 0 ? fmin(s->ops[i].dur_us, 1e6) : 0;
      int64_t *at = all + (size_t)q * len + ds_replay_rec_time(most, iters, k, own[i]);
      at[0] = t[q] + (int64_t)(draw(&seed) % 1000);
      at[1] = at[0] + (int64_t)(us * 1e3);
      t[q] = at[1];
      /* the rank's last end on rank 0's clock, with room for its rate and
       * rounding: the next barrier is after it on every rank's clock */
      int64_t begin = all[(size_t)q * len + 1 + (size_t)k];
      int64_t done = llround((double)(begin - clock[q]) / (1 + rate[q])) + t[q] + t[q] / 1000 + 1;
      if (done > next) next = done;
    }
    barrier = next + 1 + (int64_t)(draw(&seed) % 1000);
  }
  if (ds_replay_clocks(all, len, world, iters, host, placed) != 0) goto out;
  int64_t first = INT64_MAX, prev_hi = INT64_MIN;
  for (int32_t q = 0; q < world; q++) {
    int64_t b = ds_replay_clock_at(&placed[q], all[(size_t)q * len + 1]);
    if (b < first) first = b;
  }
  const char *why = first != 0 ? "the earliest begin of iteration 0 is not at 0" : NULL;
  for (int32_t q = 0; q < world && !why; q++)
    if (placed[q].fit == DS_REPLAY_CLOCK_FITTED &&
        fabs(placed[q].fitted_ppm) > DS_REPLAY_MAX_DRIFT_PPM)
      why = "a drift past the bound was applied";
  for (int32_t k = 0; k < iters && !why; k++) {
    int64_t hi = INT64_MIN;
    for (size_t i = 0; i < n && !why; i++) {
      int64_t start, end;
      if (ds_replay_place(all, len, placed, s->ops[i].rank, most, iters, k, own[i], &start,
                          &end) != 0)
        why = "an op the record holds was not placed";
      else if (end > hi)
        hi = end;
    }
    if (!why && n && hi < prev_hi) why = "an iteration's latest end is before the previous one's";
    prev_hi = hi;
  }
  if (why) {
    fprintf(stderr, "fuzz: ddpreal's placement of %d rank(s) x %d iteration(s): %s\n", world,
            iters, why);
    abort();
  }
out:
  free(own);
  free(all);
  free(placed);
  free(clock);
  free(t);
  free(host);
  free(rate);
}

/* The ddpreal command before any rank starts (real/replay_check.c): the
 * input is a schedule CSV, then optionally a line beginning "====" whose
 * rest gives ddpreal's words, space-separated (`==== --compute gemm
 * --timeout 1 --iters 9`; a word DDPREAL_TIMEOUT_S=V sets that instead).
 * The command line is `ddpreal --schedule FILE --trace - WORDS`; parsed
 * (ds_real_options_parse), then the schedule read and checked as the
 * device would run it under MPI (ds_replay_check: collectives, spins
 * against the timeout, one rank's results against MPI_Gather's limit). A
 * refusal must be exit 2 and, but for --iters's and an option's, name the
 * schedule. */
static void run_ddpreal(const uint8_t *data, size_t size) {
  size_t sep = sep_line(data, 0, size);
  char *argv[ARGV_MAX] = {"ddpreal", "--schedule", NULL, "--trace", "-"};
  int argc = 5;
  char words[256] = "";
  if (sep < size) {
    size_t eol = sep;
    while (eol < size && data[eol] != '\n') eol++;
    size_t rest = eol - sep - 4;
    memcpy(words, data + sep + 4, rest < sizeof words - 1 ? rest : sizeof words - 1);
    for (char *w = strtok(words, " \t\r"); w && argc < ARGV_MAX - 1; w = strtok(NULL, " \t\r")) {
      if (strncmp(w, "DDPREAL_TIMEOUT_S=", 18) == 0) setenv("DDPREAL_TIMEOUT_S", w + 18, 1);
      else argv[argc++] = w;
    }
  }
  argv[argc] = NULL;
  char path[512];
  argv[2] = (char *)to_file(data, sep, "-schedule.csv", path, sizeof path);
  if (argv[2]) {
    struct ds_real_options o;
    struct ds_err err = {0};
    ds_status st = ds_real_options_parse(argc, argv, &o, &err);
    check_refusal("ds_real_options_parse", st, &err, NULL);
    if (st == DS_OK && !o.help && !o.version) {
      struct ds_schedule *s = NULL;
      st = ds_replay_check(&o, 1, &s, NULL, &err);
      check_refusal("ds_replay_check", st, &err,
                    strncmp(err.msg, "option --iters:", 15) == 0 ? NULL : path);
      /* the clocks and delays drawn from the input's FNV-1a hash */
      uint64_t seed = 14695981039346656037u;
      for (size_t i = 0; i < size; i++) seed = (seed ^ data[i]) * 1099511628211u;
      if (st == DS_OK) place_run(s, o.iters < 32 ? o.iters : 32, seed);
      ds_schedule_free(s);
    }
    unlink(path);
  }
  unsetenv("DDPREAL_TIMEOUT_S"); /* the next input starts clean */
}

/* What ddpsim does with a calibration that loaded (sim/cli/run_load.c):
 * applied over 4gpu.yaml's A100 (loaded once), its GPU and grouped-conv
 * table matched against it, the interference measurement checked against
 * its SMs (a refusal naming the file that set it), the provenance line
 * written short and long, the table looked up; and the calibration
 * written (traces/calib_file.c, what ddpreal calibrate writes) and read
 * again, which must load: every key the writer writes is one the loader
 * accepts. */
static void use_calib(const struct ds_calib *c, const struct ds_calib_sources *src) {
  static struct ds_topo *topo;
  struct ds_err err = {0};
  if (!topo && ds_topo_load(DS_SOURCE_DIR "/topologies/4gpu.yaml",
                            DS_SOURCE_DIR "/topologies/gpus.yaml", &topo, &err) != DS_OK)
    abort(); /* the shipped topology */
  struct ds_compute_params p = topo->compute;
  struct ds_gpu_spec g = topo->gpu;
  ds_calib_apply_compute(c, &p);
  ds_calib_apply_gpu(c, &g);
  (void)ds_calib_gpu_fit(c, &g, NULL);
  int32_t f = src->file[DS_CALIB_KEY_NCCL_INTERFERENCE];
  const char *ipath = src->files[f >= 0 ? f : 0];
  check_refusal("ds_calib_check_interference",
                ds_calib_check_interference(c, ipath, g.sms, g.name, &err), &err, ipath);
  char line[4096];
  ds_calib_sources_line(src, "; ", line, 24);
  ds_calib_sources_line(src, "\n", line, sizeof line);
  if (c->n_gconv > 0) {
    struct ds_gconv_table t;
    ds_calib_gconv_table(c, &t);
    t.on_target = ds_calib_gconv_fit(c, &g, NULL) == DS_GCONV_FIT_THIS_GPU;
    struct ds_gconv_shape shape = {4, 128, 3136, 1}; /* ResNeXt-50's first group */
    for (int m = 0; m < DS_GCONV_MODES; m++)
      for (int k = 0; k < DS_CONV_PASSES; k++)
        (void)ds_gconv_ns(&t, (enum ds_gconv_mode)m, (enum ds_conv_pass)k, &shape, 32, g.sms,
                          g.boost_mhz * 1e6);
  }
  char path[512];
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/ddpsim-fuzz-%ld-written.yaml", dir && *dir ? dir : "/tmp",
           (long)getpid());
  FILE *fp = fopen(path, "w");
  if (!fp) return;
  int bad = ds_calib_write(fp, c, "# fuzz: written back\n") != 0;
  if (fclose(fp) != 0 || bad) {
    unlink(path);
    return;
  }
  struct ds_calib *again = malloc(sizeof *again);
  if (again) {
    ds_status st = ds_calib_load(path, again, &err);
    if (st != DS_OK) {
      fprintf(stderr, "fuzz: a calibration that loaded, written by ds_calib_write, is "
              "refused: \"%s\"\n", err.msg);
      abort();
    }
  }
  free(again);
  unlink(path);
}

/* Calibration files: the input is one file, or several (up to
 * DS_CALIB_MAX_FILES, `--calib A,B,...`) split at lines beginning "====".
 * One file is read by ds_calib_load and by ds_calib_load_files, which
 * must agree (calib.h: with one file, exactly what ds_calib_load gives);
 * several are merged key by key (ds_calib_load_files), a refusal naming
 * one of them. A calibration that loads is then used (use_calib). */
static void run_calib(const uint8_t *data, size_t size) {
  char paths[DS_CALIB_MAX_FILES][512];
  const char *names[DS_CALIB_MAX_FILES];
  int32_t n = 0;
  int ok = 1;
  for (size_t at = 0; n < DS_CALIB_MAX_FILES;) {
    size_t end = n + 1 < DS_CALIB_MAX_FILES ? sep_line(data, at, size) : size;
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-calib%d.yaml", (int)n);
    names[n] = to_file(data + at, end - at, suffix, paths[n], sizeof paths[n]);
    ok &= names[n++] != NULL;
    if (end == size) break;
    while (end < size && data[end] != '\n') end++; /* the separator line's rest */
    at = end < size ? end + 1 : size;
  }
  struct ds_calib *c = malloc(sizeof *c), *one = malloc(sizeof *one);
  struct ds_calib_sources src;
  struct ds_err err = {0};
  if (ok && c && one) {
    ds_status st = ds_calib_load_files(names, n, NULL, c, &src, &err);
    const char *named = NULL;
    for (int32_t i = 0; i < n && !named; i++)
      if (strstr(err.msg, names[i])) named = names[i];
    check_refusal("ds_calib_load_files", st, &err, named ? named : names[0]);
    if (n == 1) {
      struct ds_err err1 = {0};
      ds_status st1 = ds_calib_load(names[0], one, &err1);
      if (st1 != st || (st == DS_OK && memcmp(one, c, sizeof *c) != 0) ||
          strcmp(err1.msg, err.msg) != 0) {
        fprintf(stderr, "fuzz: ds_calib_load (%s: \"%s\") and ds_calib_load_files of the one "
                "file (%s: \"%s\") differ\n", ds_status_name(st1), err1.msg,
                ds_status_name(st), err.msg);
        abort();
      }
    }
    if (st == DS_OK) use_calib(c, &src);
  }
  free(c);
  free(one);
  for (int32_t i = 0; i < n; i++)
    if (names[i]) unlink(names[i]);
}

/* The unit and value grammars: the first byte picks the parser. */
static void run_units(const uint8_t *data, size_t size) {
  if (size == 0) return;
  char *text = malloc(size);
  if (!text) return;
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  double v;
  switch (data[0] % 6) {
    case 0: ds_units_parse_bytes(text, &v); break;
    case 1: ds_units_parse_bw(text, &v); break;
    case 2: ds_units_parse_time_ns(text, &v); break;
    case 3: ds_units_parse_flops(text, &v); break;
    case 4:
      if (ds_units_parse_number(text, &v) == DS_OK && v >= 0) (void)ds_units_round_ns(v);
      break;
    default: {
      struct ds_err err = {0};
      struct ds_values vals;
      struct ds_value_kind k = ds_value_kind_int(1, 1 << 20);
      check_refusal("ds_values_parse",
                    ds_values_parse("--x", text, data[0] & 0x80 ? &k : &ds_value_kind_mib,
                                    &vals, &err),
                    &err, NULL);
      break;
    }
  }
  free(text);
}

int ds_fuzz_run(const char *name, const uint8_t *data, size_t size) {
  if (strcmp(name, "cli") == 0) {
    run_cli(data, size);
    return 0;
  }
  if (strcmp(name, "units") == 0) {
    run_units(data, size);
    return 0;
  }
  if (strcmp(name, "subcmd") == 0) {
    run_subcmd(data, size);
    return 0;
  }
  if (strcmp(name, "analyze") == 0) {
    run_analyze(data, size);
    return 0;
  }
  if (strcmp(name, "calib") == 0) {
    run_calib(data, size);
    return 0;
  }
  if (strcmp(name, "ddpreal") == 0) {
    run_ddpreal(data, size);
    return 0;
  }
  static const struct {
    const char *name, *suffix;
    void (*run)(const char *path);
  } files[] = {{"topo", ".yaml", run_topo},           {"model", ".yaml", run_model},
               {"schedule", ".csv", run_schedule},   {"trace", ".csv", run_trace},
               {"reference", ".csv", run_reference}, {"import", ".txt", run_import},
               {"measured", ".csv", run_measured},   {"gpus", ".yaml", run_gpus}};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    if (strcmp(name, files[i].name) != 0) continue;
    char path[512];
    if (to_file(data, size, files[i].suffix, path, sizeof path)) files[i].run(path);
    unlink(path);
    return 0;
  }
  return 1;
}
