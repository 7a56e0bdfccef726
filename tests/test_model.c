/*
 * Tests for sim/model.c's optional keys that tools/export_model.py writes:
 * a layer's `class` and the model's `grad_ready` order. Files without them
 * load as before (class unknown, no grad_ready).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/train/model.h"
#include "tests/support.h"

#define HEAD "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
#define L0 "  - name: l0\n%s    fwd_flops: 1\n    bwd_flops: 1\n    fwd_bytes: 0\n" \
           "    act_bytes: 0\n    params:\n      - {name: a, numel: 4}\n      - {name: b, numel: 2}\n"
#define L1 "  - name: l1\n    fwd_flops: 1\n    bwd_flops: 1\n    fwd_bytes: 0\n" \
           "    act_bytes: 0\n    params:\n      - {name: c, numel: 8}\n"

/* Writes HEAD + layers (L0 with `cls` spliced in) + tail to a temporary file
 * and loads it; returns the status, the model in *out on success. */
static ds_status load(const char *cls, const char *tail, struct ds_model **out,
                      struct ds_err *err) {
  char dir[] = "/tmp/ddpsim-model-XXXXXX", path[256];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/m.yaml", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(HEAD "layers:\n", f);
  fprintf(f, L0, cls);
  fputs(L1, f);
  fputs(tail, f);
  fclose(f);
  *out = NULL;
  memset(err, 0, sizeof *err);
  ds_status st = ds_model_load(path, out, err);
  unlink(path);
  rmdir(dir);
  return st;
}

Test(model, class_and_grad_ready_absent_keep_the_old_behaviour) {
  struct ds_model *m;
  struct ds_err err;
  cr_assert_eq(load("", "", &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m->layers[0].cls, DS_LAYER_UNKNOWN);
  cr_assert_eq(m->layers[1].cls, DS_LAYER_UNKNOWN);
  cr_assert_null(m->grad_ready);
  cr_assert_eq(m->n_grad_ready, 0);
  ds_model_free(m);
}

Test(model, class_is_read) {
  const char *names[] = {"conv", "matmul", "attention", "memory"};
  enum ds_layer_class want[] = {DS_LAYER_CONV, DS_LAYER_MATMUL, DS_LAYER_ATTENTION,
                                DS_LAYER_MEMORY};
  for (int i = 0; i < 4; i++) {
    char line[64];
    snprintf(line, sizeof line, "    class: %s\n", names[i]);
    struct ds_model *m;
    struct ds_err err;
    cr_assert_eq(load(line, "", &m, &err), DS_OK, "%s", err.msg);
    cr_assert_eq(m->layers[0].cls, want[i], "%s", names[i]);
    cr_assert_str_eq(ds_layer_class_name(m->layers[0].cls), names[i]);
    cr_assert_eq(m->layers[1].cls, DS_LAYER_UNKNOWN);
    ds_model_free(m);
  }
}

Test(model, bad_class_names_the_line) {
  struct ds_model *m;
  struct ds_err err;
  /* line 8: the class key, the second line of layer l0 */
  cr_assert_eq(load("    class: gemm\n", "", &m, &err), DS_EINPUT);
  cr_assert_null(m);
  cr_assert(strstr(err.msg, "m.yaml:8:") && strstr(err.msg, "conv, matmul, attention or memory"),
            "%s", err.msg);
}

Test(model, grad_ready_maps_names_to_registration_indices) {
  /* registration order a, b, c; ready c, a, b -> 2, 0, 1 */
  struct ds_model *m;
  struct ds_err err;
  cr_assert_eq(load("", "grad_ready: [c, a, b]\n", &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m->n_grad_ready, 3);
  cr_assert_eq(m->grad_ready[0], 2);
  cr_assert_eq(m->grad_ready[1], 0);
  cr_assert_eq(m->grad_ready[2], 1);
  ds_model_free(m);
}

Test(model, grad_ready_must_list_every_tensor_once) {
  const char *bad[][2] = {
      {"grad_ready: [c, a]\n",
       "every one of the 3 parameter names once, got 2 names: \"b\" is missing"},
      {"grad_ready: [c, a, x]\n", "got \"x\""},
      /* one too many: the unknown name, at its item, not a count */
      {"grad_ready: [c, a, b, x]\n", "key 'grad_ready[3]': expected a parameter name of this "
                                     "model, got \"x\""},
      {"grad_ready: [c, a, b, a]\n", "key 'grad_ready[3]': parameter \"a\" is listed twice"},
      {"grad_ready: [c, a, a]\n", "\"a\" is listed twice"},
      {"grad_ready: c\n", "a list of parameter names"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_model *m;
    struct ds_err err;
    cr_assert_eq(load("", bad[i][0], &m, &err), DS_EINPUT, "%s", bad[i][0]);
    cr_assert_null(m);
    cr_assert(strstr(err.msg, "m.yaml:") && strstr(err.msg, bad[i][1]), "%s: %s", bad[i][0],
              err.msg);
  }
}

Test(model, registration_gives_pytorchs_parameter_order) {
  /* The file lists a, b (layer l0) then c (l1), the forward order; where
   * PyTorch registered c first (model.parameters(): c, a, b, as BERT's
   * position embeddings come before its token-type ones), `registration`
   * says so: registration position 0 is c (file index 2), and a sits at
   * registration position 1. Without the key the file's order is it. */
  struct ds_model *m;
  struct ds_err err;
  cr_assert_eq(load("", "registration: [c, a, b]\n", &m, &err), DS_OK, "%s", err.msg);
  const int32_t want[] = {2, 0, 1}, pos[] = {1, 2, 0};
  for (int32_t i = 0; i < 3; i++) {
    cr_assert_eq(ds_model_registered(m, i), want[i], "position %d", i);
    cr_assert_eq(ds_model_registration_index(m, i), pos[i], "param %d", i);
  }
  ds_model_free(m);
  cr_assert_eq(load("", "", &m, &err), DS_OK, "%s", err.msg);
  cr_assert_null(m->registration);
  for (int32_t i = 0; i < 3; i++) {
    cr_assert_eq(ds_model_registered(m, i), i);
    cr_assert_eq(ds_model_registration_index(m, i), i);
  }
  ds_model_free(m);
  cr_assert_eq(load("", "registration: [c, a, a]\n", &m, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'registration[2]'") && strstr(err.msg, "\"a\" is listed twice"),
            "%s", err.msg);
}

Test(model, autocast_traffic_is_read_and_absent_is_minus_one) {
  struct ds_model *m;
  struct ds_err err;
  cr_assert_eq(load("    amp_fwd_bytes: 300\n    amp_cast_bytes: 120\n"
                    "    amp_grad_cast_bytes: 60\n", "", &m, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(m->layers[0].amp_fwd_bytes, 300, 1e-9);
  cr_assert_float_eq(m->layers[0].amp_cast_bytes, 120, 1e-9);
  cr_assert_float_eq(m->layers[0].amp_grad_cast_bytes, 60, 1e-9);
  cr_assert_float_eq(m->layers[1].amp_fwd_bytes, -1, 1e-9, "absent: --amp halves fwd_bytes");
  cr_assert_float_eq(m->layers[1].amp_cast_bytes, 0, 1e-9);
  cr_assert_float_eq(m->layers[1].amp_grad_cast_bytes, 0, 1e-9);
  ds_model_free(m);
}

Test(model, autocast_traffic_keys_come_together_and_are_not_negative) {
  struct ds_model *m;
  struct ds_err err;
  const char *partial[] = {"    amp_fwd_bytes: 300\n",
                           "    amp_fwd_bytes: 300\n    amp_cast_bytes: 1\n",
                           "    amp_grad_cast_bytes: 1\n"};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(load(partial[i], "", &m, &err), DS_EINPUT, "%s", partial[i]);
    cr_assert_null(m);
    cr_assert(strstr(err.msg, "m.yaml:") &&
                  strstr(err.msg, "expected amp_fwd_bytes, amp_cast_bytes and "
                                  "amp_grad_cast_bytes together"),
              "%s", err.msg);
  }
  cr_assert_eq(load("    amp_fwd_bytes: 300\n    amp_cast_bytes: -1\n"
                    "    amp_grad_cast_bytes: 0\n", "", &m, &err),
               DS_EINPUT);
  cr_assert(strstr(err.msg, "m.yaml:9:") && strstr(err.msg, "amp_cast_bytes"), "%s", err.msg);
}

Test(model, output_classes_is_read_and_defaults_to_zero) {
  struct ds_model *m;
  struct ds_err err;
  cr_assert_eq(load("", "", &m, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(m->output_classes, 0, 1e-9);
  ds_model_free(m);
  char path[] = "/tmp/ddpsim-model-cls-XXXXXX";
  ds_test_write_temp(path, HEAD "output_classes: 1000\nlayers:\n" L1);
  cr_assert_eq(ds_model_load(path, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(m->output_classes, 1000, 1e-9);
  ds_model_free(m);
  unlink(path);
}

Test(model, buffers_are_read_in_order_with_their_dtype) {
  struct ds_model *m;
  struct ds_err err;
  cr_assert_eq(load("", "buffers:\n  - {name: rm, numel: 4, bytes: 16, dtype: float32}\n"
                    "  - {name: n, numel: 1, bytes: 8, dtype: int64}\n", &m, &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(m->n_buffers, 2);
  cr_assert_eq(m->buffers[0].numel, 4);
  cr_assert_float_eq(m->buffers[1].bytes, 8, 0);
  cr_assert_str_eq(m->buffers[1].dtype, "int64");
  ds_model_free(m);
  cr_assert_eq(load("", "", &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m->n_buffers, 0);
  ds_model_free(m);
}

Test(model, bad_buffers_name_the_line_and_key) {
  const char *bad[][2] = {
      {"buffers:\n  - {name: rm, numel: 4, bytes: 10, dtype: float32}\n",
       "m.yaml:23:33: key 'buffers[0].bytes'"},
      {"buffers:\n  - {name: rm, numel: -1, bytes: 0, dtype: float32}\n", "numel"},
      {"buffers:\n  - {name: rm, numel: 4, bytes: 16}\n", "dtype"},
      /* past DS_MODEL_NUMEL_MAX (1e12 elements, model.h) */
      {"buffers:\n  - {name: rm, numel: 1000000000001, bytes: 1000000000001, dtype: uint8}\n",
       "m.yaml:23:23: key 'buffers[0].numel': expected an integer from 0 to 1000000000000, got "
       "1000000000001"},
      {"buffers:\n  - {name: rm, numel: 4, bytes: 16, dtype: float32, x: 1}\n", "x"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_model *m;
    struct ds_err err;
    cr_assert_eq(load("", bad[i][0], &m, &err), DS_EINPUT, "%s", bad[i][0]);
    cr_assert_null(m);
    cr_assert(strstr(err.msg, "m.yaml:") && strstr(err.msg, bad[i][1]), "%s: %s", bad[i][0],
              err.msg);
  }
}

/* Names are unique paths in PyTorch (named_modules, named_parameters,
 * named_buffers): a repeat in the file is refused at its second use, with
 * the line of the first. HEAD is lines 1-5, "layers:" 6, L0 lines 7-14
 * (a on 13), L1 lines 15-21; the tail starts at line 22. Before this check
 * a second layer "l1" loaded (and a second "bn" lost its batch norm), a
 * repeated parameter loaded until grad_ready blamed grad_ready's entry. */
#define L2(name, params) "  - name: " name "\n    fwd_flops: 1\n    bwd_flops: 1\n" \
  "    fwd_bytes: 0\n    act_bytes: 0\n    params:\n" params
Test(model, repeated_names_and_unknown_dtypes_are_refused_with_both_lines) {
  const char *bad[][2] = {
      {L2("l1", "      - {name: d, numel: 2}\n"),
       "m.yaml:22:11: key 'layers[2].name': layer \"l1\" already given at line 15"},
      {L2("l2", "      - {name: a, numel: 2}\n"),
       "m.yaml:28:16: key 'layers[2].params[0].name': parameter \"a\" already given at line 13"},
      {L2("l2", "      - {name: a, numel: 4}\n") "grad_ready: [a, c, b, a]\n",
       "m.yaml:28:16: key 'layers[2].params[0].name': parameter \"a\" already given at line 13"},
      {"buffers:\n  - {name: l0.running_mean, numel: 4, bytes: 16, dtype: float32}\n"
       "  - {name: l0.running_mean, numel: 4, bytes: 16, dtype: float32}\n",
       "m.yaml:24:12: key 'buffers[1].name': buffer \"l0.running_mean\" already given at line 23"},
      {"buffers:\n  - {name: rm, numel: 4, bytes: 16, dtype: float33}\n",
       "m.yaml:23:44: key 'buffers[0].dtype': expected one of PyTorch's dtype names"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_model *m;
    struct ds_err err;
    cr_assert_eq(load("", bad[i][0], &m, &err), DS_EINPUT, "%s", bad[i][0]);
    cr_assert_null(m);
    cr_assert(strstr(err.msg, bad[i][1]), "%s: %s", bad[i][0], err.msg);
  }
  /* the longest dtype name fits, and distinct names load */
  struct ds_model *m;
  struct ds_err err;
  cr_assert_eq(load("", L2("l2", "      - {name: d, numel: 2}\n")
                    "buffers:\n  - {name: q, numel: 4, bytes: 4, dtype: float4_e2m1fn_x2}\n",
                    &m, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(m->buffers[0].dtype, "float4_e2m1fn_x2");
  ds_model_free(m);
}

Test(model, op_fwd_bytes_is_read_and_absent_is_minus_one) {
  struct ds_model *m;
  struct ds_err err;
  cr_assert_eq(load("    op_fwd_bytes: 500\n", "", &m, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(m->layers[0].op_fwd_bytes, 500, 1e-9);
  cr_assert_float_eq(m->layers[1].op_fwd_bytes, -1, 1e-9, "absent: fwd_bytes is charged");
  ds_model_free(m);
  cr_assert_eq(load("    op_fwd_bytes: -5\n", "", &m, &err), DS_EINPUT);
  cr_assert_null(m);
  cr_assert(strstr(err.msg, "m.yaml:") && strstr(err.msg, "op_fwd_bytes"), "%s", err.msg);
}

/* tools/export_model.py checks its flags and the factory file before it
 * imports torch (seconds, or missing: `make test` runs without it): a
 * missing file is one line naming it, exit 2 (it was a FileNotFoundError
 * traceback, exit 1, under torch; without torch the install message hid
 * the typo). The other mistakes (no such function, a factory returning no
 * model, the default 3x224x224 input not fitting the model) need torch
 * and are checked by hand (tools/README.md). */
Test(model, the_exporter_names_a_missing_factory_file_in_one_line) {
  struct ds_test_result r =
      ds_test_run("", "python3", "tools/export_model.py /nonexistent/m.py --name x");
  cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_assert_str_eq(r.err, "export_model.py: /nonexistent/m.py: no such file (FACTORY is "
                          "module:function or file.py[:function])\n");
  cr_assert_str_eq(r.out, "");
  ds_test_release(&r);
  r = ds_test_run("", "python3", "tools/export_model.py /nonexistent/m.py:make --name x");
  cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_assert(strstr(r.err, "/nonexistent/m.py: no such file"), "%s", r.err);
  ds_test_release(&r);
}

/* docs/models.md's hand-written example loads as the page shows it: two
 * layers, the ReLU with `params: []` (no tensors of its own), fc's two
 * tensors 1048576 + 1024 elements. */
Test(model, the_docs_example_loads) {
  char *doc = ds_test_slurp("docs/models.md");
  const char *mark = "<!-- docs-example: model -->\n```yaml\n";
  char *start = strstr(doc, mark);
  cr_assert_not_null(start, "docs/models.md has no example block");
  start += strlen(mark);
  char *end = strstr(start, "```\n");
  cr_assert_not_null(end);
  *end = '\0';
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(start, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m->n_layers, 2);
  cr_assert_eq(m->n_params, 2);
  cr_assert_eq(m->layers[1].param_count, 0);
  cr_assert_eq(m->total_numel, 1048576 + 1024);
  cr_assert_eq(m->layers[0].cls, DS_LAYER_MATMUL);
  ds_model_free(m);
  free(doc);
}

/* A byte count with a unit is refused, and the message says a model file's
 * sizes are integer bytes (a topology's take units; these do not). */
Test(model, a_byte_count_with_a_unit_says_integer_bytes) {
  ds_test_assert_model_refused(HEAD "layers:\n  - name: l0\n    fwd_flops: 1\n    bwd_flops: 1\n"
                               "    fwd_bytes: 12MiB\n    act_bytes: 0\n    params:\n"
                               "      - {name: a, numel: 4}\n",
                               "key 'layers[0].fwd_bytes': expected an integer from 0 to "
                               "1000000000000000, got \"12MiB\": integer bytes per sample, "
                               "without a unit (12582912, not 12MiB",
                               "fwd_bytes 12MiB");
  /* the whole message, and through the CLI: exit 2 */
  ds_test_assert_bytes_hint(HEAD "layers:\n  - name: l0\n    fwd_flops: 1\n    bwd_flops: 1\n"
                            "    fwd_bytes: 12MiB\n    act_bytes: 0\n    params:\n"
                            "      - {name: a, numel: 4}\n",
                            ":10:16: key 'layers[0].fwd_bytes'", 1);
}

/* A buffer's bytes (its whole size, not per sample) written with a unit
 * are refused the same way, line 23 after the two layers, also through the
 * CLI (exit 2). */
Test(model, a_buffers_bytes_with_a_unit_says_integer_bytes) {
  ds_test_assert_bytes_hint(HEAD "layers:\n  - name: l0\n    fwd_flops: 1\n    bwd_flops: 1\n"
                            "    fwd_bytes: 0\n    act_bytes: 0\n    params:\n"
                            "      - {name: a, numel: 4}\n"
                            "buffers:\n  - {name: rm, numel: 4, bytes: 12MiB, dtype: float32}\n",
                            ":15:33: key 'buffers[0].bytes'", 0);
}

/* The toy tools/export_model.py exported (tests/data/view_nodes_toy.py: its
 * command is the file's second line): one layer per kind of backward node,
 * each on a contiguous gradient. A node is a view node when it launches
 * nothing (host.py: every aten op it dispatches is a view or makes an empty
 * tensor), worked by hand from what each runs in backward (derivatives.yaml,
 * FunctionsManual.cpp): unsqueeze's, view's and t's backward reshape (free);
 * clone's and an expand to its own size return the gradient (free); add's
 * passes it on (free); an expand that broadcast sums, select's and slice's
 * fill zeros and copy, split's concatenates, unbind's stacks (kernels).
 * Under autocast (host_view_nodes_amp, the exporter's rerun with CUDA's cast
 * lists) the same, but for join's add: x (mix2's half output) plus
 * layer_norm(x) (fp32: autocast's fp32 list) is fp32, so autograd casts x's
 * share of its gradient to half inside AddBackward0, a kernel. */
Test(model, the_exporter_counts_a_node_that_launches_nothing_as_a_view_node) {
  static const struct { const char *name; int nodes, view_nodes, amp_view_nodes; } want[] = {
      {"lin", 4, 1, 1},   /* AddmmBackward0, TBackward0 (free), 2 AccumulateGrad */
      {"unsq", 1, 1, 1},  /* UnsqueezeBackward0 */
      {"bcast", 1, 0, 0}, /* ExpandBackward0 [B,1,16] -> [B,4,16]: a sum */
      {"same", 1, 1, 1},  /* ExpandBackward0 to its own size */
      {"copy", 1, 1, 1},  /* CloneBackward0 */
      {"mix", 6, 3, 3},   /* UnsafeView-, View-, TBackward0 free; Addmm, 2 AccumulateGrad */
      {"pick", 2, 0, 0},  /* SelectBackward0, SliceBackward0: zeros, then a copy */
      {"pad", 4, 1, 1},
      {"flat", 1, 1, 1},  /* ViewBackward0 */
      {"mix2", 6, 3, 3},
      {"join", 2, 1, 0},   /* NativeLayerNormBackward0; AddBackward0 free, under autocast a cast */
      {"halves", 2, 1, 1}, /* SplitBackward0 (cat), AddBackward0 (free: fp32 + fp32) */
      {"rows", 2, 1, 1},   /* StackBackward0 (unbind: views), UnbindBackward0 (stack) */
      {"head", 5, 2, 2},   /* the reshape's ViewBackward0 and TBackward0 free */
  };
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_model_load("tests/data/view-nodes-model.yaml", &m, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(m->n_layers, (int32_t)(sizeof want / sizeof want[0]));
  cr_assert(m->host_view_node_amp_counts);
  for (int32_t i = 0; i < m->n_layers; i++) {
    const struct ds_layer *l = &m->layers[i];
    cr_assert_str_eq(l->name, want[i].name);
    cr_expect_float_eq(l->host_nodes, want[i].nodes, 0, "%s: host_nodes %g", l->name,
                       l->host_nodes);
    cr_expect_float_eq(l->host_view_nodes, want[i].view_nodes, 0, "%s: host_view_nodes %g",
                       l->name, l->host_view_nodes);
    cr_expect_float_eq(l->host_view_nodes_amp, want[i].amp_view_nodes, 0,
                       "%s: host_view_nodes_amp %g", l->name, l->host_view_nodes_amp);
  }
  ds_model_free(m);
}
