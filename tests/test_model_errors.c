/*
 * Every refusal of the model reader (sim/train/model.c and its friends
 * model_names.c, model_ops.c) that the rest of the suite did not reach
 * (gcov over `make test`, 2026-11-28): a small valid model with one edit,
 * run through `ddpsim --model FILE`, must exit 2 with one line on stderr
 * that names the file, the line and column, the key and what was
 * expected, and print nothing on stdout. The whole line is compared, so a
 * changed place or wording fails here.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support.h"

/* The base model: it loads (the test below checks). Line numbers are the
 * cases' coordinates. */
static const char *const base[] = {
    /*  1 */ "schema_version: 1",
    /*  2 */ "name: t",
    /*  3 */ "sample: \"s\"",
    /*  4 */ "default_batch: 1",
    /*  5 */ "optimizer: sgd",
    /*  6 */ "layers:",
    /*  7 */ "  - name: l0",
    /*  8 */ "    fwd_flops: 1",
    /*  9 */ "    bwd_flops: 1",
    /* 10 */ "    fwd_bytes: 0",
    /* 11 */ "    act_bytes: 0",
    /* 12 */ "    params:",
    /* 13 */ "      - {name: a, numel: 4, shape: [2, 2]}",
    /* 14 */ "  - name: l1",
    /* 15 */ "    fwd_flops: 1",
    /* 16 */ "    bwd_flops: 1",
    /* 17 */ "    fwd_bytes: 0",
    /* 18 */ "    act_bytes: 0",
    /* 19 */ "    params:",
    /* 20 */ "      - {name: b, numel: 8}",
};
#define BASE_LINES ((int)(sizeof base / sizeof *base))

/* One edit of the base: lines first .. first + count - 1 replaced by
 * `with` (NULL or "": deleted; may hold several lines), then `tail`
 * appended; the refusal expected after "ddpsim: FILE:" (a `want` ending
 * in "..." is a prefix: the rest is a long list of allowed keys). */
struct model_case {
  int first, count;
  const char *with, *tail, *want;
};

#define POOL "    class: memory\n    pool_kernel: [2, 2]\n    pool_stride: [1, 1]\n"
#define HOST4 "    host_ops: 1\n    host_nodes: 1\n    host_amp_casts: 0\n    host_amp_nodes: 0"
#define INT_BYTES "expected an integer from 0 to 1000000000000000"
#define PER_SAMPLE \
  ": integer bytes per sample, without a unit (12582912, not 12MiB; docs/models.md)"

static const struct model_case cases[] = {
    /* the document (model.c load) */
    {2, 1, NULL, NULL, "1:1: missing key 'name' (expected a model name)"},
    {3, 1, NULL, NULL, "1:1: missing key 'sample' (expected a description of one sample)"},
    {3, 1, "sample: \"\"", NULL,
     "3:9: key 'sample': expected a description of one sample, got \"\""},
    {3, 1, "sample: [s]", NULL, "3:9: key 'sample': expected a string, got a sequence"},
    {4, 1, NULL, NULL, "1:1: missing key 'default_batch' (expected a positive integer)"},
    {4, 1, "default_batch: 0", NULL,
     "4:16: key 'default_batch': expected an integer from 1 to 1048576, got 0"},
    {5, 1, NULL, NULL, "1:1: missing key 'optimizer' (expected sgd or adam)"},
    {5, 1, "optimizer: [sgd]", NULL, "5:12: key 'optimizer': expected a string, got a sequence"},
    {5, 1, "optimizer: lamb", NULL, "5:12: key 'optimizer': expected sgd or adam, got \"lamb\""},
    /* the command line's optimizers are not the file's: it says so */
    {5, 1, "optimizer: bertadam", NULL,
     "5:12: key 'optimizer': expected sgd or adam, got \"bertadam\" (a choice of ddpsim's "
     "command line: keep the model's optimizer here and give --optimizer bertadam)"},
    {5, 1, "optimizer: none", NULL,
     "5:12: key 'optimizer': expected sgd or adam, got \"none\" (a choice of ddpsim's command "
     "line: keep the model's optimizer here and give --optimizer none)"},
    {5, 1, "optimizer: apex-o2-fusedadam", NULL,
     "5:12: key 'optimizer': expected sgd or adam, got \"apex-o2-fusedadam\" (a choice of "
     "ddpsim's command line: keep the model's optimizer here and give --optimizer "
     "apex-o2-fusedadam)"},
    {6, 15, NULL, NULL, "1:1: missing key 'layers' (expected a sequence of layers)"},
    {6, 15, "layers: 5", NULL, "6:9: key 'layers': expected a sequence, got \"5\""},
    {6, 15, "layers: []", NULL, "6:9: key 'layers': expected at least one layer"},
    {12, 9, "    params: []\n  - name: l1\n    fwd_flops: 1\n    bwd_flops: 1\n"
            "    fwd_bytes: 0\n    act_bytes: 0\n    params: []",
     NULL, "7:3: key 'layers': expected at least one parameter tensor"},
    {0, 0, NULL, "output_bytes: -1", "21:15: key 'output_bytes': " INT_BYTES ", got -1" PER_SAMPLE},
    {0, 0, NULL, "output_classes: many",
     "21:17: key 'output_classes': " INT_BYTES ", got \"many\""},
    /* a layer's own keys */
    {7, 1, "  - name: l0\n    colour: red", NULL,
     "8:5: key 'layers[0]': unknown key 'colour' (allowed: name, fwd_flops, bwd_flops, ..."},
    {7, 2, "  - fwd_flops: 1", NULL,
     "7:5: key 'layers[0]': missing key 'name' (expected a layer name)"},
    {9, 1, NULL, NULL,
     "7:5: key 'layers[0]': missing key 'bwd_flops' (expected a non-negative integer)"},
    {11, 1, NULL, NULL,
     "7:5: key 'layers[0]': missing key 'act_bytes' (expected a non-negative integer)"},
    {11, 1, "    act_bytes: 1\n    act_int_bytes: x", NULL,
     "12:20: key 'layers[0].act_int_bytes': " INT_BYTES ", got \"x\"" PER_SAMPLE},
    {11, 1, "    act_bytes: 0\n    amp_act_bytes: 1MiB", NULL,
     "12:20: key 'layers[0].amp_act_bytes': " INT_BYTES ", got \"1MiB\"" PER_SAMPLE},
    {11, 1, "    act_bytes: 0\n    class: [conv]", NULL,
     "12:12: key 'layers[0].class': expected a string, got a sequence"},
    /* host counts on every layer or none: the first layer lacking them */
    {14, 1, "  - name: l1\n" HOST4, NULL,
     "14:5: key 'layers[1]': expected host_ops, host_nodes, host_amp_casts and host_amp_nodes "
     "on every layer or on none (the first layer lacks them)"},
    {7, 8, "  - name: l0\n" HOST4 "\n    fwd_flops: 1\n    bwd_flops: 1\n    fwd_bytes: 0\n"
           "    act_bytes: 0\n    params:\n      - {name: a, numel: 4, shape: [2, 2]}\n"
           "  - name: l1\n" HOST4 "\n    host_dispatches: 1",
     NULL,
     "18:5: key 'layers[1]': expected host_dispatches on every layer or on none (the first "
     "layer lacks it)"},
    /* parameters */
    {12, 2, NULL, NULL,
     "7:5: key 'layers[0]': missing key 'params' (expected a list of {name, numel} maps, or "
     "[] for none)"},
    {12, 2, "    params: 5", NULL, "12:13: key 'layers[0].params': expected a sequence, got \"5\""},
    {13, 1, "      - {name: a, numel: 4, dtype: f32}", NULL,
     "13:29: key 'layers[0].params[0]': unknown key 'dtype' (allowed: name, numel, shape)"},
    {13, 1, "      - {numel: 4}", NULL,
     "13:9: key 'layers[0].params[0]': missing key 'name' (expected a tensor name)"},
    {13, 1, "      - {name: a}", NULL,
     "13:9: key 'layers[0].params[0]': missing key 'numel' (expected a positive integer)"},
    {13, 1, "      - {name: a, numel: 4, shape: [0, 4]}", NULL,
     "13:37: key 'layers[0].params[0].shape[0]': expected an integer from 1 to 4, got 0"},
    {13, 1, "      - {name: a, numel: 4, shape: 4}", NULL,
     "13:36: key 'layers[0].params[0].shape': expected a list of dimensions like [768, 3072]"},
    {13, 1, "      - {name: a, numel: 4, shape: []}", NULL,
     "13:36: key 'layers[0].params[0].shape': expected 1 to 8 dimensions, got 0"},
    {13, 1, "      - {name: a, numel: 4, shape: [1, 1, 1, 1, 1, 1, 1, 1, 4]}", NULL,
     "13:36: key 'layers[0].params[0].shape': expected 1 to 8 dimensions, got 9"},
    {13, 1, "      - {name: a, numel: 4, shape: [4, 4]}", NULL,
     "13:36: key 'layers[0].params[0].shape': expected dimensions whose product is numel 4, got "
     "a product above it"},
    {13, 1, "      - {name: a, numel: 4, shape: [3]}", NULL,
     "13:36: key 'layers[0].params[0].shape': expected dimensions whose product is numel 4, got 3"},
    {18, 0, "    tied_params: [[a]]", NULL,
     "18:19: key 'layers[1].tied_params[0]': expected a string, got a sequence"},
    {18, 0, "    tied_params: [a, [b]]", NULL,
     "18:22: key 'layers[1].tied_params[1]': expected a string, got a sequence"},
    /* an op's geometry (model_ops.c) */
    {12, 0, POOL "    pool_padding: [x, 0]\n    pool_input: [1, 4, 4]", NULL,
     "15:20: key 'layers[0].pool_padding[0]': expected an integer from 0 to 1024, got \"x\""},
    {12, 0, POOL "    pool_padding: [0, 0]\n    pool_input: [1, 2000000, 4]", NULL,
     "16:17: key 'layers[0].pool_input': expected the input's sides at most 1048576, got 2000000"},
    {12, 0, "    class: attention\n    attn_products: {fwd: [1, 1, 1, 1], bwd: [1, 1, 1, 1], "
            "mid: [1, 1, 1, 1]}\n    attn_rest: {fwd: [1, 1, 1], bwd: [1, 1, 1]}",
     NULL, "13:59: key 'layers[0].attn_products': unknown key 'mid' (allowed: fwd, bwd)"},
    {12, 0, "    class: attention\n    attn_products: {fwd: [1, 1, 1, 1], bwd: [1, 5, 1, 1]}\n"
            "    attn_rest: {fwd: [1, 1, 1], bwd: [1, 1, 1]}",
     NULL, "13:20: key 'layers[0].attn_products': expected attn_products' FLOPs at most the "
           "layer's fwd_flops (1) and bwd_flops (1), got 1 and 5"},
    {12, 0, "    class: attention\n    attn_products: {fwd: [1, 1, 1, 1], bwd: [0, 0, 0, 1]}\n"
            "    attn_rest: {fwd: [1, 1, 1], bwd: [1, 1, 1]}",
     NULL, "13:20: key 'layers[0].attn_products': expected at least one bwd kernel in "
           "attn_products where it has FLOPs or bytes"},
    {12, 0, "    class: attention\n    attn_products: {fwd: [1, 1, 1, 1], bwd: [1, 1, 1, 1]}\n"
            "    attn_rest: {fwd: [1, 1, 1], bwd: [0, 0, 1]}",
     NULL, "14:16: key 'layers[0].attn_rest': expected at least one bwd kernel in attn_rest "
           "where it has bytes"},
    {12, 0, "    class: memory\n    embedding: [1, 4]", NULL,
     "13:16: key 'layers[0].embedding': expected embedding's D to be the row length of a (numel 4, "
     "shape's second dimension), got 4"},
    {15, 4, "    fwd_flops: 0\n    bwd_flops: 1\n    fwd_bytes: 0\n    act_bytes: 0\n"
            "    class: memory\n    embedding: [0, 8, 1]\n    bytes_per: step",
     NULL, "21:16: key 'layers[1].bytes_per': expected fwd_flops and bwd_flops 0 beside "
           "bytes_per: step (an embedding's gather and scatter run none), got 0 and 1"},
    {12, 0, "    bytes_per: [step]", NULL,
     "12:16: key 'layers[0].bytes_per': expected a string, got a sequence"},
    {19, 0, "    class: memory\n    embedding: [1, 3]", NULL,
     "20:16: key 'layers[1].embedding': expected embedding's D to be the row length of b (numel "
     "8), got 3"},
    /* the lists after the layers (model_names.c) */
    {0, 0, NULL, "grad_ready: [a, [b]]",
     "21:17: key 'grad_ready[1]': expected a string, got a sequence"},
    {0, 0, NULL, "buffers:\n  - {numel: 1, bytes: 4, dtype: float32}",
     "22:5: key 'buffers[0]': missing key 'name' (expected a buffer name)"},
    {0, 0, NULL, "buffers:\n  - {name: [x], numel: 1, bytes: 4, dtype: float32}",
     "22:12: key 'buffers[0].name': expected a string, got a sequence"},
    {0, 0, NULL, "buffers:\n  - {name: x, bytes: 4, dtype: float32}",
     "22:5: key 'buffers[0]': missing key 'numel' (expected a non-negative integer)"},
    {0, 0, NULL, "buffers:\n  - {name: x, numel: 1, dtype: float32}",
     "22:5: key 'buffers[0]': missing key 'bytes' (expected a non-negative integer)"},
    {0, 0, NULL, "buffers:\n  - {name: x, numel: 2, bytes: 0, dtype: float32}",
     "22:32: key 'buffers[0].bytes': expected bytes a whole multiple (>= 1) of numel 2, got 0"},
    {0, 0, NULL, "buffers:\n  - {name: x, numel: 1, bytes: 4, dtype: [f]}",
     "22:42: key 'buffers[0].dtype': expected a string, got a sequence"},
};

/* The base with case c's edit, into path. */
static void write_case(const char *path, const struct model_case *c) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  for (int i = 1; i <= BASE_LINES; i++) {
    if (c && i == c->first && c->with && c->with[0]) fprintf(f, "%s\n", c->with);
    if (c && c->first > 0 && i >= c->first && i < c->first + c->count) continue;
    fprintf(f, "%s\n", base[i - 1]);
  }
  if (c && c->tail) fprintf(f, "%s\n", c->tail);
  fclose(f);
}

static struct ds_test_result run_model(const char *path) {
  char args[512];
  snprintf(args, sizeof args, "--model %s --topo tests/data/tiny-topo.yaml --world-size 2",
           path);
  return ds_test_cli(args);
}

Test(model_errors, the_base_model_loads) {
  char dir[] = "/tmp/ddpsim-merr-XXXXXX", path[128];
  ds_test_make_dir(dir);
  snprintf(path, sizeof path, "%s/m.yaml", dir);
  write_case(path, NULL);
  struct ds_test_result r = run_model(path);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
}

Test(model_errors, each_refusal_names_file_line_key_and_what_was_expected) {
  char dir[] = "/tmp/ddpsim-merr-XXXXXX", path[128];
  ds_test_make_dir(dir);
  snprintf(path, sizeof path, "%s/m.yaml", dir);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const struct model_case *c = &cases[i];
    write_case(path, c);
    struct ds_test_result r = run_model(path);
    char want[1024];
    snprintf(want, sizeof want, "ddpsim: %s:%s", path, c->want);
    size_t n = strlen(want);
    /* cr_expect: every case that fails is reported, not only the first */
    cr_expect_eq(r.status, 2, "case %zu (%s): status %d, stderr %s", i, c->want, r.status, r.err);
    cr_expect_str_eq(r.out, "", "case %zu printed to stdout", i);
    if (n > 3 && strcmp(want + n - 3, "...") == 0) {
      cr_expect(strncmp(r.err, want, n - 3) == 0, "case %zu: want\n%s\ngot\n%s", i, want, r.err);
      cr_expect(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "case %zu: one line: %s", i,
                r.err);
    } else {
      strcat(want, "\n");
      cr_expect_str_eq(r.err, want, "case %zu: want\n%sgot\n%s", i, want, r.err);
    }
    ds_test_release(&r);
  }
  ds_test_remove_dir(dir);
}
