/*
 * Peak memory (sim/train/memory.c, dp.c, comm_hook.c) on toy models worked
 * by hand: a tied weight's autocast cast, DataParallel's walk, and the
 * communication hooks' buffers.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sim/train/comm_hook.h"
#include "sim/train/ddp.h"
#include "sim/train/dp.h"
#include "sim/train/memory.h"
#include "sim/train/model.h"
#include "tests/support.h"

/* emb (an embedding: memory class) owns w (1,000 elements); mid (a matmul)
 * owns m (500) and saves 40,000 B per sample; head (a matmul, GPT-2's
 * lm_head) has no parameters of its own and uses w (`head_keys`), saving
 * 2,000 B; the output is 8 B per sample. */
static struct ds_model *tied_model(const char *head_keys) {
  char text[2048];
  snprintf(text, sizeof text,
           "schema_version: 1\nname: tied\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
           "output_bytes: 8\nlayers:\n"
           "  - {name: emb, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 8,"
           " act_bytes: 0, params: [{name: w, numel: 1000}]}\n"
           "  - {name: mid, class: matmul, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8,"
           " act_bytes: 40000, params: [{name: m, numel: 500}]}\n"
           "  - {name: head, class: matmul, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8,"
           " act_bytes: 2000, params: []%s}\n",
           head_keys);
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  return m;
}

Test(memory, a_tied_weights_autocast_cast_is_held_until_its_users_backward) {
  /* autocast casts every fp32 weight a matmul reads and caches the copy
   * until the context exits (autocast_mode.cpp cached_cast); the matmul
   * saves it for its backward. head reads emb's w, which emb (an
   * embedding, not on autocast's lists) never casts: head's cast is the
   * one copy, 1,000 x 2 B. Saved under --amp at batch 1: mid 20,000 and
   * head 1,000 (half of fp32's: the file has no amp_act_bytes), the half
   * weights (500 + 1,000) x 2 = 3,000: 24,000 B (without the key 22,000,
   * the cast missed). Peak at backward's start: 24,000 + the half output
   * 4: 24,004; after head's backward its 1,000 and the tied cast's 2,000
   * are gone (20,004). fp32 casts nothing: 42,000 either way. */
  struct ds_precision fp32 = {4, 4, 0}, amp = {4, 2, 2};
  struct ds_model *plain = tied_model(""), *m = tied_model(", tied_params: [w]");
  cr_assert_eq(m->layers[2].tied_cast_numel, 1000);
  cr_assert_eq(m->layers[0].tied_cast_numel + m->layers[1].tied_cast_numel, 0);
  cr_assert_float_eq(ds_ddp_saved_bytes(plain, &amp, 1), 22000, 1e-9);
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &amp, 1), 24000, 1e-9);
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &fp32, 1), 42000, 1e-9);
  struct ds_memory_options single = {.step_numel = 1500};
  struct ds_ddp_memory mem;
  ds_ddp_memory(m, &amp, 1, &single, &mem);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD_START);
  cr_assert_float_eq(mem.dynamic, 24004, 1e-9);
  cr_assert_float_eq(mem.total, 1500 * 4 * 2 + 24004.0, 1e-9);
  ds_model_free(plain);
  ds_model_free(m);
}

Test(memory, a_tied_weight_is_cast_once_and_not_when_its_owner_casts_it) {
  /* Two matmuls reading w: autocast's cache holds one copy, counted in the
   * first (head); a weight whose own layer is a matmul is cast there
   * already (its param_numel), so a later use adds nothing. */
  char text[2048];
  snprintf(text, sizeof text,
           "schema_version: 1\nname: t2\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
           "layers:\n"
           "  - {name: emb, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 8,"
           " act_bytes: 0, params: [{name: w, numel: 1000}]}\n"
           "  - {name: a, class: matmul, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8,"
           " act_bytes: 0, params: [{name: x, numel: 300}], tied_params: [w]}\n"
           "  - {name: b, class: matmul, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8,"
           " act_bytes: 0, params: [], tied_params: [w, x]}\n"
           "  - {name: n, class: memory, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8,"
           " act_bytes: 0, params: [{name: y, numel: 7}], tied_params: [w]}\n");
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m->layers[1].tied_cast_numel, 1000);
  cr_assert_eq(m->layers[2].tied_cast_numel, 0);
  cr_assert_eq(m->layers[3].tied_cast_numel, 0, "a memory layer casts nothing");
  struct ds_precision amp = {4, 2, 2};
  /* half weights: x 300 + w 1,000, each once */
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &amp, 1), 1300 * 2, 1e-9);
  ds_model_free(m);
}

/* Two matmuls a (owning w) and b (owning v), with a_keys and b_keys after
 * their params. */
static void two_layers(char *text, size_t cap, const char *a_keys, const char *b_keys) {
  snprintf(text, cap,
           "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
           "layers:\n"
           "  - {name: a, class: matmul, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8,"
           " act_bytes: 0, params: [{name: w, numel: 10}]%s}\n"
           "  - {name: b, class: matmul, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8,"
           " act_bytes: 0, params: [{name: v, numel: 10}]%s}\n",
           a_keys, b_keys);
}

Test(memory, a_bad_tied_params_list_is_refused_where_it_stands) {
  char text[1024];
  two_layers(text, sizeof text, "", ", tied_params: [q]");
  ds_test_assert_model_refused(text, "expected the name of a parameter listed under an "
                               "earlier layer's params, got \"q\"", "unknown name");
  two_layers(text, sizeof text, ", tied_params: [v]", "");
  ds_test_assert_model_refused(text, "got \"v\" (listed under this layer or a later one)",
                               "a later layer's");
  two_layers(text, sizeof text, "", ", tied_params: [w, w]");
  ds_test_assert_model_refused(text, "parameter \"w\" is listed twice", "twice");
  two_layers(text, sizeof text, "", ", tied_params: w");
  ds_test_assert_model_refused(text, "expected a list of parameter names", "not a list");
}

/* Two layers, a (1,000 parameters, saves 100,000 B per sample) and b
 * (2,000; 50,000 B); 10,000 B of output, 20,000 B of loss log-probs and
 * 3,000 B of input per sample; SGD. */
static struct ds_model *dp_model(void) {
  const char *text =
      "schema_version: 1\nname: dpm\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
      "output_bytes: 10000\nloss_act_bytes: 20000\ninput_bytes: 3000\nlayers:\n"
      "  - {name: a, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8, act_bytes: 100000,"
      " params: [{name: wa, numel: 1000}]}\n"
      "  - {name: b, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8, act_bytes: 50000,"
      " params: [{name: wb, numel: 2000}]}\n";
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  return m;
}

static void expect_gpu(const struct ds_dp_gpu_memory *g, double total, double act, double out,
                       double grads, const char *at) {
  cr_assert_float_eq(g->total, total, 1e-6, "total %.0f, want %.0f", g->total, total);
  cr_assert_float_eq(g->activations, act, 1e-6, "activations %.0f", g->activations);
  cr_assert_float_eq(g->outputs, out, 1e-6, "outputs %.0f", g->outputs);
  cr_assert_float_eq(g->grads, grads, 1e-6, "grads %.0f", g->grads);
  cr_assert_str_eq(g->peak_at, at);
}

Test(memory, dataparallel_walks_each_gpu_through_the_iteration) {
  /* 3 replicas of batch 2, fp32: P = 12,000 B; each replica saves S =
   * 2 x 150,000 = 300,000 B.
   * GPU 0 holds the module P, the momentum P and the other replicas'
   * inputs 2 x 2 x 3,000: 36,000. At the loss's backward, over the 6
   * gathered samples: S, the log-probs 120,000 (activations 420,000), the
   * gathered outputs 60,000, their gradient 60,000 and nll_loss's
   * gradient 120,000 (outputs 240,000): 696,000, the peak. After b's
   * backward: 200,000 saved + 8,000 of gradients + the held outputs
   * 60,000; after a's: 12,000 + 60,000; the reduce: replica 0's P and the
   * sum's P + 60,000: all below.
   * GPU 1 and 2: the replica's P; at the loss's backward S and their chunk
   * of the outputs' gradient 20,000: 332,000. The old sum (everything at
   * once, GPU 0): 4P + 12,000 + 420,000 + 240,000 = 720,000. */
  struct ds_model *m = dp_model();
  struct ds_precision fp32 = {4, 4, 0};
  struct ds_dp_options o = {.world_size = 3, .batch = 2};
  struct ds_dp_memory mem;
  ds_dp_memory(m, &fp32, &o, &mem);
  expect_gpu(&mem.gpu0, 696000, 420000, 240000, 0, "the loss's backward");
  cr_assert_float_eq(mem.gpu0.inputs, 12000, 1e-9);
  expect_gpu(&mem.other, 332000, 300000, 20000, 0, "the loss's backward");
  /* 1.4/1.9's kept .grad: P more on GPU 0 all along */
  o.grad_kept = 1;
  ds_dp_memory(m, &fp32, &o, &mem);
  expect_gpu(&mem.gpu0, 708000, 420000, 240000, 12000, "the loss's backward");
  /* --dp-parallel-loss: each replica's loss over its 2 samples: its
   * log-probs 40,000, nll_loss's gradient 40,000, its outputs' gradient
   * 20,000, and on GPU 0 the 3 losses and theirs (24 B): GPU 0 36,000 +
   * 340,000 + 60,024; the others 12,000 + 340,000 + 60,024 */
  o.grad_kept = 0;
  o.parallel_loss = 1;
  ds_dp_memory(m, &fp32, &o, &mem);
  expect_gpu(&mem.gpu0, 436024, 340000, 60024, 0, "the loss's backward");
  expect_gpu(&mem.other, 412024, 340000, 60024, 0, "the loss's backward");
  /* output_device 1: the gathered terms move there; GPU 0 gets its chunk
   * of the gradient: 36,000 + 300,000 + 20,000 */
  o.parallel_loss = 0;
  o.output_device = 1;
  ds_dp_memory(m, &fp32, &o, &mem);
  expect_gpu(&mem.gpu0, 356000, 300000, 20000, 0, "the loss's backward");
  expect_gpu(&mem.other, 672000, 420000, 240000, 0, "the loss's backward");
  ds_model_free(m);
}

/* l0: 100,000 parameters, saves 1,000,000 B; l1: 50,000, saves 1,000 B;
 * output 8 B; SGD: the hook and bucket-view walks below. */
static struct ds_model *two_layer_model(void) {
  const char *text =
      "schema_version: 1\nname: h\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
      "output_bytes: 8\nlayers:\n"
      "  - {name: l0, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8, act_bytes: 1000000,"
      " params: [{name: a, numel: 100000}]}\n"
      "  - {name: l1, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8, act_bytes: 1000,"
      " params: [{name: b, numel: 50000}]}\n";
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  return m;
}

Test(memory, fp16_hook_buffers_count_from_their_bucket_until_the_step) {
  /* l0 (100,000 parameters, saves 1,000,000 B) and l1 (50,000; 1,000 B),
   * output 8 B, fp32 at batch 1, DDP, SGD: P = 600,000 B each for the
   * parameters, momentum and buckets. First cap 200,000 B: bucket 0 is
   * l1's (ready after l1's backward), bucket 1 l0's. The fp16 hook's half
   * copy of a bucket (2 B per element) lives from its hook until its
   * all-reduce completes; the walk counts every ready one as in flight.
   *   backward's start: 1,001,000 saved + 8 = 1,001,008;
   *   after l1's: 1,000,000 + 8 + l1's .grad 200,000 + bucket 0's copy
   *     100,000 = 1,300,008, the peak;
   *   after l0's: 8 + 600,000 + both copies 300,000 = 900,008;
   *   the step: 8 + 600,000 (every future was waited for).
   * Total 3 x 600,000 + 1,300,008; all copies counted as held all
   * iteration, as before, it was 3 x 600,000 + 300,000 + 1,200,008. */
  struct ds_model *m = two_layer_model();
  struct ds_buckets bk;
  cr_assert_eq(ds_ddp_buckets(m, 4, 200000, 25 * 1048576.0, DS_BUCKETS_READY, &bk), DS_OK);
  cr_assert_eq(bk.n, 2);
  struct ds_comm_hook fp16 = {DS_HOOK_FP16, 0};
  double ready[2];
  ds_comm_hook_ready_bytes(&fp16, m, DS_DTYPE_FP32, &bk, ready);
  struct ds_precision fp32 = {4, 4, 0};
  struct ds_memory_options o = {.ddp = 1, .step_numel = 150000, .hook_ready_bytes = ready};
  struct ds_ddp_memory mem;
  ds_ddp_memory(m, &fp32, 1, &o, &mem);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD);
  cr_assert_str_eq(mem.peak_layer_name, "l1");
  cr_assert_float_eq(mem.live_hook, 100000, 1e-9);
  cr_assert_float_eq(mem.dynamic, 1300008, 1e-9);
  cr_assert_float_eq(mem.total, 3 * 600000.0 + 1300008, 1e-9);
  /* without the hook the same walk peaks there at 1,200,008 */
  o.hook_ready_bytes = NULL;
  ds_ddp_memory(m, &fp32, 1, &o, &mem);
  cr_assert_float_eq(mem.dynamic, 1200008, 1e-9);
  cr_assert_float_eq(mem.live_hook, 0, 0);
  ds_ddp_buckets_release(&bk);
  ds_model_free(m);
}

Test(memory, dataparallel_gpu0_counts_the_optimizer_steps_temporaries) {
  /* One layer a (10,000 parameters, saves 1,000 B per sample), 10 B of
   * output and 100 B of input per sample, no loss log-probs, Adam; 2
   * replicas of batch 1, fp32: P = 40,000 B, Adam's two moments 80,000.
   * GPU 0 holds P + 80,000 + the other replica's input 100 = 120,100.
   * The loss's backward: 1,000 saved + the gathered outputs 20 and their
   * gradient 20: 121,140. After a's backward: its gradient P + the held
   * outputs 20: 160,120. The reduce: replica 0's P and the sum's P:
   * 200,120. The step (torch.nn.DataParallel's optimizer runs on GPU 0):
   * .grad P + outputs 20 + the step's temporaries, as single's
   * (memory.c): foreach Adam's sqrt of the second moments, P (200,120:
   * ties the reduce, which stays the peak); with weight decay the decayed
   * gradients, P more: 240,120, at the step; 1.4/1.9's loop, one
   * tensor's worth (10,000 x 4 B) of sqrt, division and decayed gradient:
   * 120,000, 280,120. The other GPU never steps: its replica P, then its
   * gradient P at most: 80,000 + the outputs' gradient chunk 10 during
   * the loss's backward is below. */
  const char *text =
      "schema_version: 1\nname: step\nsample: s\ndefault_batch: 1\noptimizer: adam\n"
      "output_bytes: 10\ninput_bytes: 100\nlayers:\n"
      "  - {name: a, fwd_flops: 1, bwd_flops: 2, fwd_bytes: 8, act_bytes: 1000,"
      " params: [{name: wa, numel: 10000}]}\n";
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  struct ds_precision fp32 = {4, 4, 0};
  struct ds_dp_options o = {.world_size = 2, .batch = 1};
  struct ds_dp_memory mem;
  ds_dp_memory(m, &fp32, &o, &mem);
  expect_gpu(&mem.gpu0, 200120, 0, 20, 80000, "the reduce");
  cr_assert_float_eq(mem.gpu0.step, 0, 1e-9);
  o.weight_decay = 1;
  ds_dp_memory(m, &fp32, &o, &mem);
  expect_gpu(&mem.gpu0, 240120, 0, 20, 40000, "the step");
  cr_assert_float_eq(mem.gpu0.step, 80000, 1e-9);
  cr_assert_float_eq(mem.other.step, 0, 1e-9);
  cr_assert_float_eq(mem.other.total, 80000, 1e-9);
  o.optimizer_loop = 1;
  ds_dp_memory(m, &fp32, &o, &mem);
  expect_gpu(&mem.gpu0, 280120, 0, 20, 40000, "the step");
  ds_model_free(m);
}

Test(memory, bucket_views_set_to_none_hold_each_fresh_grad_until_its_copy) {
  /* The hook test's model (l0: 100,000 parameters, saves 1,000,000 B;
   * l1: 50,000, 1,000 B; output 8 B; fp32, DDP, SGD) with .grad as bucket
   * views. Current rules: zero_grad() sets them to None, so each layer's
   * backward makes a fresh .grad that the hook copies into its view:
   *   backward's start: 1,001,000 saved + 8 = 1,001,008;
   *   after l1's: 1,000,000 + 8 + l1's fresh 200,000 = 1,200,008, the peak;
   *   after l0's: 8 + l0's fresh 400,000 = 400,008.
   * 1.9's rules (zero_grad fills: the views stay) peak at the start. */
  struct ds_model *m = two_layer_model();
  struct ds_precision fp32 = {4, 4, 0};
  struct ds_memory_options o = {.ddp = 1, .step_numel = 150000, .grad_as_bucket_view = 1,
                                .grads_set_to_none = 1};
  struct ds_ddp_memory mem;
  ds_ddp_memory(m, &fp32, 1, &o, &mem);
  cr_assert_float_eq(mem.grads, 0, 0);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD);
  cr_assert_str_eq(mem.peak_layer_name, "l1");
  cr_assert_float_eq(mem.live_grads, 200000, 1e-9);
  cr_assert_float_eq(mem.dynamic, 1200008, 1e-9);
  /* --grad-accum 2: the first micro-step's backward is the walk above
   * (the second adds into the views), whatever grads_kept says */
  o.grads_kept = 1;
  ds_ddp_memory(m, &fp32, 1, &o, &mem);
  cr_assert_float_eq(mem.dynamic, 1200008, 1e-9);
  /* --no-sync 2: the no_sync micro-step left every .grad outside the
   * buckets (no hook copied it): 1,001,008 + 600,000 at the synchronising
   * backward's start, the peak; after l1's copy 1,000,008 + 400,000 */
  o.no_sync_grads = 1;
  ds_ddp_memory(m, &fp32, 1, &o, &mem);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD_START);
  cr_assert_float_eq(mem.live_grads, 600000, 1e-9);
  cr_assert_float_eq(mem.dynamic, 1601008, 1e-9);
  /* 1.9's zero_grad fills: the views stay .grad, nothing made afresh */
  o.grads_set_to_none = 0;
  o.no_sync_grads = 0;
  ds_ddp_memory(m, &fp32, 1, &o, &mem);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD_START);
  cr_assert_float_eq(mem.dynamic, 1001008, 1e-9);
  ds_model_free(m);
}
