/*
 * Tests for memory layers' backward bytes (sim/train/compute.h, model.h):
 * a memory layer's backward moves the file's bwd_bytes (amp_bwd_bytes
 * under --amp) when it has them, else twice its forward traffic; a
 * backward that runs no op launches no kernel; autograd's gradient
 * accumulations (bwd_accum_bytes) are a kernel of their own on any layer;
 * an embedding (model.h embed_lookups) moves the rows it looks up, and in
 * backward a zero-filled table and those rows, not whole-table passes,
 * its ids per sample or shared by the batch (embed_step_lookups), by
 * embedding_dense_backward_cuda's one-kernel path up to 3072 ids and its
 * sort path above; an embedding of shared ids whose file gives its bytes
 * per step (bytes_per: step) moves them once a step, at any batch.
 * Worked by hand on tiny-topo's TestGPU (1000 GB/s, efficiencies 1, no
 * kernel overhead unless the test sets one).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/memory.h"
#include "sim/train/model.h"
#include "tests/support.h"

/* Per sample, as tools/export_model.py writes ResNet's: relu, in place on
 * 1 MB of fp32 (forward reads and writes it, 2 MB; threshold_backward
 * reads the gradient and the saved output and writes the input's gradient,
 * 3 MB; under autocast half of each), and it made a tensor whose two
 * gradients meet (read two, write one: 3 MB, 1.5 MB half). add: the
 * residual add of two 1 MB tensors (3 MB forward), whose backward runs no
 * op. pool: max-pool 4 MB -> 1 MB with 2 MB of int64 indices (7 MB
 * forward); backward reads the 1 MB gradient and the indices and
 * zero-fills then writes the 4 MB input gradient: 11 MB. old: a memory
 * layer without the keys (forward 2 MB). conv: 1 GFLOP forward, 2
 * backward, with an accumulation of 3 MB. */
static const char *model_text =
    "schema_version: 1\nname: eb\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - name: conv\n    class: conv\n    fwd_flops: 1000000000\n    bwd_flops: 2000000000\n"
    "    fwd_bytes: 2000000\n    act_bytes: 0\n    bwd_accum_bytes: 3000000\n"
    "    amp_bwd_accum_bytes: 1500000\n    params:\n      - {name: w, numel: 1000}\n"
    "  - name: relu\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 2000000\n    act_bytes: 1000000\n    op_fwd_bytes: 2000000\n"
    "    amp_fwd_bytes: 1000000\n    amp_cast_bytes: 0\n    amp_grad_cast_bytes: 0\n"
    "    bwd_bytes: 3000000\n    amp_bwd_bytes: 1500000\n    bwd_accum_bytes: 3000000\n"
    "    amp_bwd_accum_bytes: 1500000\n    params: []\n"
    "  - name: add\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 3000000\n    act_bytes: 0\n    op_fwd_bytes: 3000000\n"
    "    bwd_bytes: 0\n    amp_bwd_bytes: 0\n    params: []\n"
    "  - name: pool\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 5000000\n    act_bytes: 2000000\n    op_fwd_bytes: 7000000\n"
    "    bwd_bytes: 11000000\n    amp_bwd_bytes: 7500000\n    params: []\n"
    "  - name: old\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 2000000\n    act_bytes: 0\n    params: []\n"
    "  - name: drop\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 2000000\n    act_bytes: 250000\n    act_int_bytes: 250000\n"
    "    op_fwd_bytes: 2250000\n    bwd_bytes: 2250000\n    amp_bwd_bytes: 1250000\n"
    "    params: []\n";

enum { CONV, RELU, ADD, POOL, OLD, DROP };

struct fixture {
  struct ds_topo *topo;
  struct ds_model *model;
};

/* the model `text` on tiny-topo.yaml */
static void load(struct fixture *f, const char *text) {
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &f->model, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &f->topo, &err), DS_OK, "%s",
               err.msg);
}

static void setup(struct fixture *f) { load(f, model_text); }

static void teardown(struct fixture *f) {
  ds_model_free(f->model);
  ds_topo_free(f->topo);
}

static struct ds_compute init(const struct fixture *f, enum ds_dtype dtype, enum ds_amp amp) {
  struct ds_compute c;
  struct ds_err err = {0};
  cr_assert_eq(ds_compute_init(f->topo, dtype, amp, &c, &err), DS_OK, "%s", err.msg);
  return c;
}

Test(elt_bwd, relu_add_and_pool_backward_move_their_ops_bytes) {
  /* fp32, batch 4, 1000 GB/s (1 MB = 1 us): relu's backward is its 3 MB
   * x 4 = 12 us, not twice its forward (16 us), plus the accumulation at
   * its output, 12 us: 24 us. add's backward runs nothing: 0 (its forward,
   * 12 us, stays). pool's: 11 MB x 4 = 44 us (twice the forward would be
   * 56). old keeps the rule: 2 x 2 MB x 4 = 16 us. */
  struct fixture f;
  setup(&f);
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  const struct ds_layer *L = f.model->layers;
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&c, &L[RELU], 4), 12000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &L[RELU], 4), 24000, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, &L[ADD], 4), 12000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &L[ADD], 4), 0, 1e-9);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &L[POOL], 4), 44000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &L[OLD], 4), 16000, 1e-6);
  /* with a 5 us overhead per kernel: relu's two kernels pay it twice, the
   * add's none */
  c.params.kernel_overhead_ns = 5000;
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &L[RELU], 4), 34000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &L[ADD], 4), 0, 1e-9);
  teardown(&f);
}

Test(elt_bwd, half_types_scale_the_bytes_and_amp_takes_autocasts) {
  /* --dtype fp16 halves the fp32 file bytes: relu 6 + 6 us, pool 22 us.
   * --amp fp16 takes amp_bwd_bytes as written: relu 1.5 MB x 4 = 6 us plus
   * its accumulation 1.5 MB x 4 = 6 us; pool 7.5 MB x 4 = 30 us. */
  struct fixture f;
  setup(&f);
  const struct ds_layer *L = f.model->layers;
  struct ds_compute half = init(&f, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_bwd_ns(&half, &L[RELU], 4), 12000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&half, &L[POOL], 4), 22000, 1e-6);
  struct ds_compute amp = init(&f, DS_DTYPE_FP32, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_bwd_ns(&amp, &L[RELU], 4), 12000, 1e-6);
  /* pool has no amp_fwd_bytes: its fp32 bytes scaled to 2 B, 22 us */
  cr_assert_float_eq(ds_compute_bwd_ns(&amp, &L[POOL], 4), 22000, 1e-6);
  teardown(&f);
}

Test(elt_bwd, a_half_dtype_leaves_a_bool_mask_its_byte) {
  /* drop: dropout on 1 MB of fp32 (250,000 elements): forward reads 1 MB,
   * writes 1 MB and the 0.25 MB bool mask it saves (act_int_bytes);
   * backward reads the gradient and the mask, writes 1 MB. fp32, batch 4:
   * 2.25 MB x 4 = 9 us each way. --dtype fp16 halves the float bytes, not
   * the mask's: (2 / 2 + 0.25) MB x 4 = 5 us each way (4.5 if the mask
   * were halved too). */
  struct fixture f;
  setup(&f);
  const struct ds_layer *L = f.model->layers;
  struct ds_compute fp32 = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&fp32, &L[DROP], 4), 9000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&fp32, &L[DROP], 4), 9000, 1e-6);
  struct ds_compute half = init(&f, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&half, &L[DROP], 4), 5000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&half, &L[DROP], 4), 5000, 1e-6);
  teardown(&f);
}

Test(elt_bwd, an_accumulation_is_charged_on_any_layer) {
  /* conv in fp32 at batch 2 (TestGPU: TF32 convolutions off, 10 TFLOPS):
   * backward math 4e9 / 10e12 = 400 us, then the accumulation 3 MB x 2 =
   * 6 us: 406 us. A layer without it adds nothing. */
  struct fixture f;
  setup(&f);
  const struct ds_layer *L = f.model->layers;
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  double math = ds_compute_bwd_ns(&c, &L[CONV], 2) - ds_compute_bwd_extra_ns(&c, &L[CONV], 2);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&c, &L[CONV], 2), 6000, 1e-6);
  cr_assert_float_eq(math, 4e9 / (c.class_peak_flops_per_s[DS_LAYER_CONV] *
                                  c.class_efficiency[DS_LAYER_CONV]) * 1e9, 1e-3);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&c, &L[OLD], 2), 0, 1e-9);
  teardown(&f);
}

Test(elt_bwd, bad_values_are_refused_with_file_line_and_key) {
  /* class, the layer's extra keys (from line 13), what the message names,
   * and the line it names */
  static const char *const bad[][4] = {
      {"memory", "    bwd_bytes: -1\n    amp_bwd_bytes: 0\n", "bwd_bytes", ":13:"},
      {"memory", "    bwd_bytes: 1.5\n    amp_bwd_bytes: 0\n", "bwd_bytes", ":13:"},
      {"memory", "    bwd_bytes: 1\n    amp_bwd_bytes: x\n", "amp_bwd_bytes", ":14:"},
      {"memory", "    bwd_bytes: 1\n", "amp_bwd_bytes together", ":7:"},
      {"memory", "    amp_bwd_accum_bytes: 1\n", "bwd_accum_bytes and amp_bwd_accum_bytes",
       ":7:"},
      {"memory", "    bwd_accum_bytes: -3\n    amp_bwd_accum_bytes: 1\n", "bwd_accum_bytes",
       ":13:"},
      {"conv", "    bwd_bytes: 1\n    amp_bwd_bytes: 1\n", "memory-class", ":13:"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "schema_version: 1\nname: b\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
             "layers:\n  - name: l\n    class: %s\n    fwd_flops: 1\n    bwd_flops: 1\n"
             "    fwd_bytes: 1\n    act_bytes: 0\n%s    params:\n      - {name: w, numel: 1}\n",
             bad[i][0], bad[i][1]);
    struct ds_model *m = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_EINPUT, "%s", bad[i][1]);
    cr_assert(strstr(err.msg, bad[i][2]), "%s: %s", bad[i][1], err.msg);
    cr_assert(strstr(err.msg, "/tmp/ddpsim-test-model-") && strstr(err.msg, bad[i][3]),
              "%s: %s", bad[i][1], err.msg);
  }
}

Test(elt_bwd, shipped_resnet50_relu_add_and_pool_follow_the_ops) {
  /* models/resnet50.yaml as exported: the stem's relu (64 x 112 x 112 fp32
   * per sample, 3,211,264 B) has bwd_bytes of 3 passes, the residual adds
   * 0, the max-pool its gradient and indices read and the input gradient
   * written twice; every bottleneck block's input gets one accumulation of
   * 3 passes of its tensor (16 in all). */
  struct ds_model *m;
  struct ds_err err = {0};
  cr_assert_eq(ds_model_load("models/resnet50.yaml", &m, &err), DS_OK, "%s", err.msg);
  int accum = 0;
  for (int32_t i = 0; i < m->n_layers; i++) {
    const struct ds_layer *l = &m->layers[i];
    if (strcmp(l->name, "relu") == 0) cr_assert_float_eq(l->bwd_bytes, 3 * 3211264.0, 0.5);
    if (strstr(l->name, ".add")) cr_assert_float_eq(l->bwd_bytes, 0, 0.5, "%s", l->name);
    if (strcmp(l->name, "maxpool") == 0)
      cr_assert_float_eq(l->bwd_bytes, 802816 + 1605632 + 2 * 3211264.0, 0.5);
    accum += l->bwd_accum_bytes > 0;
  }
  cr_assert_eq(accum, 16);
  ds_model_free(m);
}

/* revuser3 finding 3: an embedding was charged its whole table in forward
 * and twice in backward. Per sample, as tools/export_model.py writes an
 * nn.Embedding of 1000 rows of 100 fp32 (400,000 B) looked up 50 times:
 * op_fwd_bytes 50 x 8 B of int64 ids + 50 x 100 x 4 B out = 20,400;
 * bwd_bytes the output gradient and the ids, 20,400; embedding [50, 100].
 * "plain" is the same layer without the key (the table rule). */
#define EMBED_LAYER(name, key)                                                      \
  "  - name: " name "\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"     \
  "    fwd_bytes: 20400\n    act_bytes: 400\n    act_int_bytes: 400\n"              \
  "    op_fwd_bytes: 20400\n    bwd_bytes: 20400\n    amp_bwd_bytes: 20400\n" key     \
  "    params:\n      - {name: " name ".weight, numel: 100000, shape: [1000, 100]}\n"
static const char *embed_text =
    "schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n" EMBED_LAYER(
        "embed", "    embedding: [50, 100]\n") EMBED_LAYER("plain", "");

Test(elt_bwd, an_embedding_moves_the_rows_it_looks_up) {
  /* TestGPU: 1000 GB/s, 1 B/ns, efficiency 1, no kernel overhead. fp32,
   * batch 4: forward the ids and output, 4 x 20,400 = 81,600 B, plus the
   * 200 rows looked up, 200 x 100 x 4 = 80,000 B (index_select): 161.6 ns
   * (the table rule: 81,600 + 400,000 = 481.6 ns). Backward: 81,600 B of
   * gradient and ids, the zero-filled table 400,000 B, each looked-up
   * row's gradient added into its row, read and written, 2 x 80,000:
   * 641.6 ns (the table rule: 81,600 + 2 x 400,000 = 881.6 ns). Batch 40:
   * 2000 lookups, but a row read once from memory: the table's 1000 rows,
   * 400,000 B; forward 816,000 + 400,000 = 1216 ns, backward 816,000 +
   * 400,000 + 800,000 = 2016 ns. */
  struct fixture f;
  load(&f, embed_text);
  const struct ds_layer *e = &f.model->layers[0], *plain = &f.model->layers[1];
  cr_assert_eq(e->embed_lookups, 50);
  cr_assert_eq(e->embed_dim, 100);
  cr_assert_eq(plain->embed_lookups, 0);
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, e, 4), 161.6, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, plain, 4), 481.6, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 4), 641.6, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, plain, 4), 881.6, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, e, 40), 1216, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 40), 2016, 1e-6);
  teardown(&f);
}

/* revtonight finding 1: ids the batch shares ([1, seq] position ids) were
 * written per sample at the export batch and charged x batch. The same
 * table, its 50 ids per step: [0, 100, 50]. fp32, batch 4: the layer's
 * ids and output bytes as before, 81,600 B, and 50 rows, 20,000 B, not
 * 200: forward 101.6 ns; backward 81,600 + the 400,000 B zero-filled
 * table + 2 x 20,000 (each row read and written) = 521.6 ns. At batch 40
 * still 50 ids: forward 816,000 + 20,000 = 836 ns. */
static const char *embed_step_text =
    "schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n" EMBED_LAYER(
        "embed", "    embedding: [0, 100, 50]\n");

Test(elt_bwd, ids_the_batch_shares_are_counted_once_per_step) {
  struct fixture f;
  load(&f, embed_step_text);
  const struct ds_layer *e = &f.model->layers[0];
  cr_assert_eq(e->embed_lookups, 0);
  cr_assert_eq(e->embed_step_lookups, 50);
  cr_assert_eq(e->embed_dim, 100);
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, e, 4), 101.6, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 4), 521.6, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, e, 40), 836, 1e-6);
  teardown(&f);
}

/* posemb: the layer's own bytes were per sample too. With ids shaped
 * [1, 50] every tensor of the layer is the batch's: PyTorch's forward,
 * embedding -> weight.index_select(0, ids.reshape(-1)) (Embedding.cpp),
 * reads the 50 ids (400 B) and the 50 rows and writes [1, 50, 100]
 * (20,000 B); its backward, embedding_dense_backward_cuda (Embedding.cu,
 * 1c94016e: grad_.contiguous() of the [1, 50, 100] gradient, which the
 * broadcast add's backward has already summed over the batch; at::zeros
 * of the table; embedding_backward_feature_kernel reading the ids and
 * that gradient and adding each into its row) reads 20,000 + 400 B
 * beside the table and rows. tools/export_model.py writes them per step:
 * fwd_bytes 20,400, act_bytes 400 (the ids saved), bwd_bytes 20,400,
 * bytes_per: step (tests/data/shared-ids-model.yaml's pos layer, at
 * --batch 2 and 4 alike). fp32 on TestGPU (1 B/ns), batch 4 or 40:
 * forward 20,400 + 50 rows x 400 B = 40,400 B, 40.4 ns (as per sample,
 * embed_step_text above: 101.6 ns at batch 4, 836 at 40); backward 20,400
 * + the 400,000 B zero-filled table + 2 x 20,000 = 460.4 ns (521.6 per
 * sample at batch 4). --dtype fp16: the float part halves, the 400 B of
 * ids stay: 10,400, rows of 2 B, 10,000: 20.4 ns; backward 10,400 +
 * 200,000 + 2 x 10,000 = 230.4 ns. Under --amp the file's autocast bytes,
 * the same 20,400 (the fp32 table's rows, which autocast leaves fp32),
 * and the fp32 rows: 40.4 ns. Saved for backward: 400 B a step (1600 B at
 * batch 4 per sample). */
static const char *embed_shared_text =
    "schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n" EMBED_LAYER(
        "embed", "    amp_act_bytes: 400\n    amp_fwd_bytes: 20400\n    amp_cast_bytes: 0\n"
                 "    amp_grad_cast_bytes: 0\n    embedding: [0, 100, 50]\n    bytes_per: step\n");

Test(elt_bwd, an_embedding_of_shared_ids_moves_its_bytes_once_per_step) {
  struct fixture f;
  load(&f, embed_shared_text);
  const struct ds_layer *e = &f.model->layers[0];
  cr_assert_eq(e->bytes_per_step, 1);
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  for (int64_t b = 4; b <= 40; b += 36) {
    cr_assert_float_eq(ds_compute_fwd_ns(&c, e, b), 40.4, 1e-6, "batch %lld", (long long)b);
    cr_assert_float_eq(ds_compute_bwd_ns(&c, e, b), 460.4, 1e-6, "batch %lld", (long long)b);
    cr_assert_float_eq(ds_layer_saved_bytes(f.model, &c.precision, 0, b), 400, 1e-9);
  }
  c = init(&f, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, e, 40), 20.4, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 40), 230.4, 1e-6);
  c = init(&f, DS_DTYPE_FP32, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, e, 40), 40.4, 1e-6);
  cr_assert_float_eq(ds_layer_saved_bytes(f.model, &c.precision, 0, 40), 400, 1e-9);
  teardown(&f);
  /* the same layer without the key, or with bytes_per: sample, keeps the
   * old meaning: per sample, x batch */
  load(&f, embed_step_text);
  cr_assert_eq(f.model->layers[0].bytes_per_step, 0);
  c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(ds_layer_saved_bytes(f.model, &c.precision, 0, 4), 1600, 1e-9);
  teardown(&f);
}

/* issue 12: embedding_backward_feature_kernel (Embedding.cu, 1c94016e)
 * runs ceil(D / 32) CTAs of 32 x 32 threads, each walking every id of the
 * step 32 at a time, a chunk two dependent global round trips and two
 * barriers: DS_EMBED_FEATURE_CHUNK_CYCLES = 1484 SM cycles a chunk
 * (compute_layer.c), the kernel's time where longer than its bytes at the
 * roofline. TestGPU given 2 SMs at 1.484 GHz: 1000 ns a chunk. The shared
 * ids above, 50 a step of D = 100: 4 CTAs; 2048 threads an SM hold 2 CTAs
 * each, 4 on 2 SMs, one wave; 2 chunks: 2000 ns. The feature kernel's
 * bytes, the gradient and ids (20,400) and the 50 rows read and written
 * (40,000), take 60.4 ns at 1 B/ns, so the chain adds 2000 - 60.4: the
 * backward 460.4 + 1939.6 = 2400 ns (the zero-filled table's 400 + the
 * chain), at batch 4 and 40 alike. 1024 threads an SM: 1 CTA each, two
 * waves, 4000 ns: 4400. An unknown thread count reads as 2048: 2400. A
 * clock 1000 times faster, 1 ns a chunk: the chain (2 ns) is shorter than
 * the bytes, 460.4 unchanged. Ids per sample ([50, 100]) at batch 4: 200
 * ids, 7 chunks, 7000 ns beside 641.6 ns of bytes of which the kernel's
 * are 81,600 + 2 x 80,000 (241.6 ns): 641.6 - 241.6 + 7000 = 7400; batch
 * 60, 3000 ids, 94 chunks: 2424 - (1,224,000 + 800,000) / 1000 + 94,000 =
 * 94,400; batch 80 (4000 ids) takes the sort path: 3392 as without SMs. */
Test(elt_bwd, the_feature_kernel_walks_every_id_32_at_a_time) {
  struct fixture f;
  load(&f, embed_shared_text);
  const struct ds_layer *e = &f.model->layers[0];
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 4), 460.4, 1e-6, "no SMs: the roofline");
  struct ds_compute_charged ch = {0};
  c.charged = &ch;
  c.sms = 2;
  c.sm_clock_hz = 1.484e9;
  c.sm_max_threads = 2048;
  for (int64_t b = 4; b <= 40; b += 36) {
    double ns = ds_compute_bwd_ns(&c, e, b); /* once: the census counts each call */
    cr_assert_float_eq(ns, 2400, 1e-6, "batch %lld", (long long)b);
  }
  cr_assert(ch.kernel_models & (1u << DS_KM_EMBED_FEATURE));
  cr_assert_eq(ch.passes[DS_KM_EMBED_FEATURE], 2);
  cr_assert_eq(ch.bound_passes[DS_KM_EMBED_FEATURE], 2);
  c.sm_max_threads = 1024;
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 4), 4400, 1e-6);
  c.sm_max_threads = 0;
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 4), 2400, 1e-6);
  c.sm_clock_hz = 1.484e12;
  ch = (struct ds_compute_charged){0};
  double fast = ds_compute_bwd_ns(&c, e, 4);
  cr_assert_float_eq(fast, 460.4, 1e-6);
  cr_assert_eq(ch.passes[DS_KM_EMBED_FEATURE], 1);
  cr_assert_eq(ch.bound_passes[DS_KM_EMBED_FEATURE], 0, "the bytes bound it");
  teardown(&f);
  load(&f, embed_text);
  e = &f.model->layers[0];
  c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  c.sms = 2;
  c.sm_clock_hz = 1.484e9;
  c.sm_max_threads = 2048;
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 4), 7400, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 60), 94400, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 80), 3392, 1e-6);
  teardown(&f);
}

/* The toy tools/export_model.py exported (tests/data/shared_ids_toy.py:
 * its command is the file's second line): token ids [batch, 50] into
 * 1000 rows of 100 fp32, position ids [1, 50] (an arange) into 64 rows,
 * their broadcast sum, a linear head. The position layer's bytes are per
 * step, worked by hand as above: 50 int64 ids + [1, 50, 100] fp32 out =
 * 20,400 forward and backward, the ids saved 400; the token layer's per
 * sample, the same numbers. fp32, TestGPU: pos forward 20,400 + 50 rows
 * (20,000) = 40.4 ns at every batch; backward 20,400 + its 25,600 B table
 * zero-filled + 2 x 20,000 = 86 ns. tok at batch 4: 4 x 20,400 + 200 rows
 * (80,000) = 161.6 ns, at batch 8: 163,200 + 160,000 = 323.2 ns. */
Test(elt_bwd, the_exporter_writes_a_shared_embeddings_bytes_per_step) {
  struct fixture f;
  struct ds_err err = {0};
  cr_assert_eq(ds_model_load("tests/data/shared-ids-model.yaml", &f.model, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &f.topo, &err), DS_OK, "%s",
               err.msg);
  const struct ds_layer *tok = &f.model->layers[1], *pos = &f.model->layers[2];
  cr_assert_str_eq(tok->name, "tok");
  cr_assert_str_eq(pos->name, "pos");
  cr_assert_eq(tok->bytes_per_step, 0);
  cr_assert_eq(tok->embed_lookups, 50);
  cr_assert_eq(pos->bytes_per_step, 1);
  cr_assert_eq(pos->embed_step_lookups, 50);
  cr_assert_float_eq(pos->fwd_bytes, 20400, 0);
  cr_assert_float_eq(pos->act_bytes, 400, 0);
  cr_assert_float_eq(pos->bwd_bytes, 20400, 0);
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  for (int64_t b = 1; b <= 64; b *= 4) {
    cr_assert_float_eq(ds_compute_fwd_ns(&c, pos, b), 40.4, 1e-6, "batch %lld", (long long)b);
    cr_assert_float_eq(ds_compute_bwd_ns(&c, pos, b), 86, 1e-6, "batch %lld", (long long)b);
  }
  cr_assert_float_eq(ds_compute_fwd_ns(&c, tok, 4), 161.6, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, tok, 8), 323.2, 1e-6);
  teardown(&f);
}

Test(elt_bwd, bytes_per_step_is_refused_off_an_embedding_of_shared_ids) {
#define BP_HEAD                                                                               \
  "schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n" \
  "  - name: e\n    class: memory\n"
#define BP_TAIL "    params:\n      - {name: w, numel: 100, shape: [10, 10]}\n"
  const char *bad[][2] = {
      {BP_HEAD "    fwd_flops: 0\n    bwd_flops: 0\n    fwd_bytes: 0\n    act_bytes: 0\n"
               "    embedding: [5, 10]\n    bytes_per: step\n" BP_TAIL,
       ":14:16: key 'layers[0].bytes_per': bytes_per: step is for an embedding of ids the batch "
       "shares (embedding [0, D, lookups per step]); this layer has lookups per sample"},
      {BP_HEAD "    fwd_flops: 0\n    bwd_flops: 0\n    fwd_bytes: 0\n    act_bytes: 0\n"
               "    bytes_per: step\n" BP_TAIL,
       "this layer has no embedding key"},
      {BP_HEAD "    fwd_flops: 0\n    bwd_flops: 0\n    fwd_bytes: 0\n    act_bytes: 0\n"
               "    embedding: [0, 10, 5]\n    bytes_per: batch\n" BP_TAIL,
       "expected bytes_per sample or step, got \"batch\""},
      {BP_HEAD "    fwd_flops: 1\n    bwd_flops: 0\n    fwd_bytes: 0\n    act_bytes: 0\n"
               "    embedding: [0, 10, 5]\n    bytes_per: step\n" BP_TAIL,
       "expected fwd_flops and bwd_flops 0 beside bytes_per: step"},
      {BP_HEAD "    fwd_flops: 0\n    bwd_flops: 0\n    fwd_bytes: 0\n    act_bytes: 0\n"
               "    bwd_reduce_bytes: 8\n    embedding: [0, 10, 5]\n    bytes_per: step\n" BP_TAIL,
       ":13:23: key 'layers[0].bwd_reduce_bytes': bwd_reduce_bytes is per sample; bytes_per: "
       "step (line 15) is for an embedding whose bytes are all per step"},
  };
#undef BP_HEAD
#undef BP_TAIL
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_model *m = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_test_load_model_text(bad[i][0], &m, &err), DS_EINPUT, "case %zu", i);
    cr_assert(strstr(err.msg, bad[i][1]) && strstr(err.msg, "/tmp/ddpsim-test-model-"),
              "case %zu: %s", i, err.msg);
  }
  /* bytes_per: sample is the default, said out loud */
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text("schema_version: 1\nname: em\nsample: s\ndefault_batch: "
                                       "1\noptimizer: sgd\nlayers:\n" EMBED_LAYER(
                                           "e", "    embedding: [5, 100]\n    bytes_per: sample\n"),
                                       &m, &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(m->layers[0].bytes_per_step, 0);
  ds_model_free(m);
}

/* revtonight finding 2: above 3072 ids embedding_dense_backward_cuda
 * sorts (Embedding.cu:295-344, EmbeddingBackwardKernel.cu:188). The
 * [50, 100] table of 1000 rows, fp32, gradient and ids 20,400 B a sample.
 * Batch 60: 3000 ids, the one-kernel path: 60 x 20,400 = 1,224,000 + the
 * zero table 400,000 + the 1000 rows read and written 800,000 = 2424 ns.
 * Batch 80: 4000 ids, the sort path: the ids' 8 B positions written
 * (arange, 32,000) and ids and positions read and written once (the
 * radix sort, 128,000), the zero table 400,000, 1000 rows of 4000 ids =
 * 1000 x ceil(4 / 10) = 1000 fp32 partial rows written and read (2 x
 * 400,000), each row written once (400,000): 1,760,000 + 80 x 20,400 =
 * 3392 ns (the zero table and the rows read and written: 2832 ns).
 * Batch 240: 12,000 ids, 1000 rows, 1000 x ceil(12 / 10) = 2000 partial
 * rows: 96,000 + 384,000 + 400,000 + 2 x 800,000 + 400,000 + 240 x 20,400
 * = 7776 ns. Kernels: a kernel overhead of 1000 ns adds 2 x 1000 at batch
 * 60 (at::zeros and the feature kernel) and 9 x 1000 at batch 80 (arange,
 * the sort, at::zeros, unique_by_key, the partial counts, their scan,
 * their offsets, compute_grad_weight, sum_and_scatter). */
Test(elt_bwd, an_embedding_backward_takes_the_sort_path_above_3072_ids) {
  struct fixture f;
  load(&f, embed_text);
  const struct ds_layer *e = &f.model->layers[0];
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 60), 2424, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 80), 3392, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 240), 7776, 1e-6);
  c.params.kernel_overhead_ns = 1000;
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 60), 2424 + 2000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, e, 80), 3392 + 9000, 1e-6);
  teardown(&f);
}

Test(elt_bwd, a_bad_embedding_key_names_its_line) {
  /* a memory layer of one parameter whose rows are D long: a matmul, two
   * tensors, or a D the table's shape contradicts are refused */
  const char *bad[][2] = {
      {"schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
       "  - name: e\n    class: matmul\n    fwd_flops: 1\n    bwd_flops: 1\n    fwd_bytes: 0\n"
       "    act_bytes: 0\n    embedding: [5, 10]\n    params:\n"
       "      - {name: w, numel: 100, shape: [10, 10]}\n",
       ":13:16: key 'layers[0].embedding': embedding is for memory-class layers"},
      {"schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
       "  - name: e\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n    fwd_bytes: 0\n"
       "    act_bytes: 0\n    embedding: [5, 10]\n    params:\n"
       "      - {name: w, numel: 100}\n      - {name: v, numel: 10}\n",
       "expected embedding on a layer of one parameter (its table), got 2"},
      {"schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
       "  - name: e\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n    fwd_bytes: 0\n"
       "    act_bytes: 0\n    embedding: [5, 20]\n    params:\n"
       "      - {name: w, numel: 100, shape: [10, 10]}\n",
       "expected embedding's D to be the row length of w"},
      {"schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
       "  - name: e\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n    fwd_bytes: 0\n"
       "    act_bytes: 0\n    embedding: [0, 10, 0]\n    params:\n"
       "      - {name: w, numel: 100, shape: [10, 10]}\n",
       "expected embedding to look up at least one row"},
      {"schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
       "  - name: e\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n    fwd_bytes: 0\n"
       "    act_bytes: 0\n    embedding: [5, 10, 1, 1]\n    params:\n"
       "      - {name: w, numel: 100, shape: [10, 10]}\n",
       "or [lookups per sample, D, lookups per step], got 4 numbers"},
      {"schema_version: 1\nname: em\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
       "  - name: e\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n    fwd_bytes: 0\n"
       "    act_bytes: 0\n    embedding: [5, 0]\n    params:\n"
       "      - {name: w, numel: 100, shape: [10, 10]}\n",
       "expected embedding's D (its second number) at least 1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_model *m = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_test_load_model_text(bad[i][0], &m, &err), DS_EINPUT, "case %zu", i);
    cr_assert(strstr(err.msg, bad[i][1]) && strstr(err.msg, "/tmp/ddpsim-test-model-"),
              "case %zu: %s", i, err.msg);
  }
}
