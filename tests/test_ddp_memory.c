/*
 * DDP's memory and its math under autocast: the memory walk backward
 * through the layers, the step's temporaries, what autocast saves (the
 * loss's tensors in fp32, integer saves at their size), the FLOPs on the
 * half rate with fp32 state, bf16 without a grad scaler or on a GPU without
 * it, and the math PyTorch picks for each op class. Worked by hand on the
 * tiny model (tests/ddp_fixture.h) and dgx-a100.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/compute.h"
#include "sim/train/memory.h"
#include "sim/train/model.h"
#include "sim/net/topo.h"
#include "tests/support.h"
#include "tests/ddp_fixture.h"

Test(ddp, memory_walks_backward_through_the_layers) {
  /* tiny: 1,835,264 parameters, P = 7,341,056 B each for params, momentum
   * and DDP's buckets; at batch 4 its layers save 4 MB each (12 MB) and
   * its output (output_bytes, by default the last layer's 1 MB) holds
   * 4 MB. Backward's start: 12 + 4 = 16 MB. After l2's backward: its 4 MB
   * freed, its .grad allocated (1,048,576 x 4 = 4,194,304): 8e6 + 4e6 +
   * 4,194,304 = 16,194,304, the peak (after l1's: 4e6 + 4e6 + 6,291,456;
   * after l0's and at SGD's step, which works in place: 4e6 + P). */
  struct ds_model *m = ds_test_model(TINY_MODEL);
  struct ds_ddp_memory mem;
  struct ds_precision fp32 = {4, 4, 0};
  double P = 1835264.0 * 4;
  struct ds_memory_options ddp = {.ddp = 1, .step_numel = 1835264};
  ds_ddp_memory(m, &fp32, 4, &ddp, &mem);
  cr_assert_float_eq(mem.params, P, 0.5);
  cr_assert_float_eq(mem.optimizer, P, 0.5);
  cr_assert_float_eq(mem.buckets, P, 0.5);
  cr_assert_float_eq(mem.activations, 12e6, 0.5);
  cr_assert_float_eq(mem.output, 4e6, 0.5);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD);
  cr_assert_eq(mem.peak_layer, 2);
  cr_assert_str_eq(mem.peak_layer_name, "l2");
  cr_assert_float_eq(mem.live_activations, 8e6, 0.5);
  cr_assert_float_eq(mem.live_grads, 4194304, 0.5);
  cr_assert_float_eq(mem.total, 3 * P + 16194304, 0.5);
  /* gradient_as_bucket_view, the views kept by zero_grad (1.9's fill):
   * .grad are the buckets, nothing allocated in backward, so the start's
   * 16 MB is the peak (set to None, each layer's .grad is made afresh
   * first: test_memory.c) */
  ddp.grad_as_bucket_view = 1;
  ds_ddp_memory(m, &fp32, 4, &ddp, &mem);
  cr_assert_float_eq(mem.grads, 0, 0);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD_START);
  cr_assert_float_eq(mem.total, 3 * P + 16e6, 0.5);
  /* SGD with --weight-decay: foreach's decayed gradients at the step,
   * 4 MB output + P grads + P: above backward's peak */
  ddp.grad_as_bucket_view = 0;
  ddp.weight_decay = 1;
  ds_ddp_memory(m, &fp32, 4, &ddp, &mem);
  cr_assert_eq(mem.peak_at, DS_PEAK_STEP);
  cr_assert_float_eq(mem.total, 3 * P + 4e6 + 2 * P, 0.5);
  /* 1.4/1.9's zero_grad() keeps .grad: live from the start, 16e6 + P */
  struct ds_memory_options kept = {.grads_kept = 1, .step_numel = 1835264};
  ds_ddp_memory(m, &fp32, 4, &kept, &mem);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD_START);
  cr_assert_float_eq(mem.live_grads, P, 0.5);
  cr_assert_float_eq(mem.total, 2 * P + 16e6 + P, 0.5);
  ds_model_free(m);
}

/* tiny-model with the first `find` in its text replaced by `replace`
 * (which may repeat `find` to insert beside it), loaded. */
static struct ds_model *tiny_edited(const char *find, const char *replace) {
  char *text = ds_test_slurp(TINY_MODEL);
  char *at = strstr(text, find);
  cr_assert(at, "tiny-model has no '%s'", find);
  char buf[8192];
  snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - text), text, replace, at + strlen(find));
  free(text);
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(buf, &m, &err), DS_OK, "%s", err.msg);
  return m;
}

Test(ddp, the_steps_temporaries_peak_when_activations_are_small) {
  /* tiny with Adam at batch 1: saved 3 MB + output 1 MB at backward's
   * start; after l0's backward 1e6 + P; the foreach step's sqrt of the
   * second moments adds P: 1e6 + 2P, the peak. Total: params P + moments
   * 2P + 1e6 + 2P. */
  struct ds_model *m = tiny_edited("optimizer: sgd\n", "optimizer: adam\n");
  struct ds_ddp_memory mem;
  struct ds_precision fp32 = {4, 4, 0};
  double P = 1835264.0 * 4;
  struct ds_memory_options single = {.step_numel = 1835264};
  ds_ddp_memory(m, &fp32, 1, &single, &mem);
  cr_assert_eq(mem.peak_at, DS_PEAK_STEP);
  cr_assert_float_eq(mem.step_temp, P, 0.5);
  cr_assert_float_eq(mem.total, P + 2 * P + 1e6 + 2 * P, 0.5);
  /* --weight-decay: foreach's decayed gradients, P more */
  single.weight_decay = 1;
  ds_ddp_memory(m, &fp32, 1, &single, &mem);
  cr_assert_float_eq(mem.step_temp, 2 * P, 0.5);
  cr_assert_float_eq(mem.total, P + 2 * P + 1e6 + 3 * P, 0.5);
  /* 1.4/1.9's per-parameter loop: one tensor at a time, the largest l2's
   * 1,048,576 x 4 B, twice for Adam's sqrt and division, once more for
   * the decayed gradient: 3 x 4,194,304 */
  single.optimizer_loop = 1;
  ds_ddp_memory(m, &fp32, 1, &single, &mem);
  cr_assert_float_eq(mem.step_temp, 3 * 4194304.0, 0.5);
  cr_assert_eq(mem.peak_at, DS_PEAK_STEP);
  cr_assert_float_eq(mem.total, P + 2 * P + 1e6 + P + 3 * 4194304.0, 0.5);
  ds_model_free(m);
}

Test(ddp, the_loss_keeps_its_saved_tensors_in_fp32_under_autocast) {
  /* tiny with loss_act_bytes 1e6 per sample (a log_softmax's rows): at
   * batch 4 the activations grow by 4 MB in fp32; under --amp the layers'
   * 12 MB are kept in half (6 MB) but the loss's stay fp32 (autocast runs
   * it in fp32): 6 + 4 MB plus the half weights; under --dtype fp16 they
   * halve with the rest: 6 + 2 MB. (tiny's layers save 3 MB per sample.) */
  struct ds_model *m = tiny_edited("layers:", "loss_act_bytes: 1000000\nlayers:");
  cr_assert_float_eq(m->loss_act_bytes, 1e6, 0);
  struct ds_precision fp32 = {4, 4, 0}, amp = {4, 2, 2}, half = {2, 2, 0};
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &fp32, 4), 16e6, 0.5);
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &amp, 4), 10e6 + 1835264.0 * 2, 0.5);
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &half, 4), 8e6, 0.5);
  /* its backward: nll_loss's gradient and log_softmax's, 4 MB each in
   * fp32 and under autocast, 2 MB each under --dtype fp16; at backward's
   * start beside everything saved and the 4 MB output (2 MB in half):
   * the peak, 16 + 4 + 8 MB in fp32 */
  struct ds_memory_options single = {.step_numel = 1835264};
  struct ds_ddp_memory mem;
  ds_ddp_memory(m, &fp32, 4, &single, &mem);
  cr_assert_float_eq(mem.loss_grads, 8e6, 0.5);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD_START);
  cr_assert_float_eq(mem.total, 2 * 1835264.0 * 4 + 16e6 + 4e6 + 8e6, 0.5);
  ds_ddp_memory(m, &amp, 4, &single, &mem);
  cr_assert_float_eq(mem.loss_grads, 8e6, 0.5);
  ds_ddp_memory(m, &half, 4, &single, &mem);
  cr_assert_float_eq(mem.loss_grads, 4e6, 0.5);
  cr_assert_float_eq(mem.output, 2e6, 0.5);
  /* DataParallel's placement of the loss: tests/test_memory.c */
  ds_model_free(m);
  /* a negative count is refused where it stands */
  char buf[512];
  snprintf(buf, sizeof buf, "schema_version: 1\nname: b\nsample: s\ndefault_batch: 1\n"
           "optimizer: sgd\nloss_act_bytes: -1\nlayers:\n  - {name: l, fwd_flops: 0,"
           " bwd_flops: 0, fwd_bytes: 1, act_bytes: 0, params: [{name: w, numel: 1}]}\n");
  ds_test_assert_model_refused(buf, "loss_act_bytes", "negative loss_act_bytes");
}

Test(ddp, integer_saves_keep_their_size_and_autocast_saves_what_the_file_says) {
  /* tiny's l0 saves 1 MB per sample, of which 0.4 MB integer
   * (act_int_bytes: max-pool indices, dropout masks), and under autocast
   * 0.9 MB (amp_act_bytes: say an fp32 op's input and a half cast of it);
   * l1 and l2 have neither key. Batch 2, fp32: 2 x 3 MB. --dtype fp16: l0
   * 0.6 / 2 + 0.4 = 0.7 MB, l1 and l2 0.5 each: 2 x 1.7 MB. --amp: l0 its
   * 0.9 MB, l1 and l2 halved: 2 x 1.9 MB, plus the half weights. */
  char *text = ds_test_slurp(TINY_MODEL);
  char *at = strstr(text, "    act_bytes: 1000000\n");
  cr_assert(at);
  at += strlen("    act_bytes: 1000000\n");
  char buf[8192];
  snprintf(buf, sizeof buf, "%.*s    act_int_bytes: 400000\n    amp_act_bytes: 900000\n%s",
           (int)(at - text), text, at);
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(buf, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(m->layers[0].act_int_bytes, 4e5, 0);
  cr_assert_float_eq(m->layers[0].amp_act_bytes, 9e5, 0);
  cr_assert_float_eq(m->layers[1].act_int_bytes, 0, 0);
  cr_assert_float_eq(m->layers[1].amp_act_bytes, -1, 0, "absent");
  struct ds_precision fp32 = {4, 4, 0}, amp = {4, 2, 2}, half = {2, 2, 0};
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &fp32, 2), 6e6, 0.5);
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &half, 2), 3.4e6, 0.5);
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &amp, 2), 3.8e6 + 1835264.0 * 2, 0.5);
  /* autocast casts a matmul's weights, not a normalisation's: with l0 a
   * memory layer its 262,400 parameters have no half copy */
  m->layers[0].cls = DS_LAYER_MEMORY;
  m->layers[1].cls = m->layers[2].cls = DS_LAYER_MATMUL;
  cr_assert_float_eq(ds_ddp_saved_bytes(m, &amp, 2), 3.8e6 + (1835264.0 - 262400) * 2, 0.5);
  ds_model_free(m);
  /* more integer bytes than bytes is refused, located */
  snprintf(buf, sizeof buf, "%.*s    act_int_bytes: 1000001\n%s", (int)(at - text), text, at);
  free(text);
  m = NULL;
  cr_assert_eq(ds_test_load_model_text(buf, &m, &err), DS_EINPUT);
  cr_assert(strstr(err.msg,
                   "key 'layers[0].act_int_bytes': expected act_int_bytes at most act_bytes "
                   "(1000000)"),
            "%s", err.msg);
}

Test(ddp, autocast_runs_the_math_in_half_and_keeps_fp32_state) {
  /* tiny on TestGPU (fp32 10 TFLOPS, fp16 20 TFLOPS, 1000 GB/s, ideal):
   * --amp fp16 puts the FLOPs on the fp16 rate: l1's forward (2 GFLOP,
   * 524,288 parameters) takes max(2e9 / 20e12 = 100 us, 8 B x 524,288 /
   * 1000 GB/s = 4.19 us) = 100 us (fp32: 200 us); its backward 4 GFLOP:
   * 200 us. Memory at batch 4: parameters, gradients, buckets and SGD
   * momentum stay fp32 (4 x 1,835,264 x 4 B = 29,364,224 B); the 12 MB
   * of fp32 activations are kept in half (6 MB), plus autocast's half copy
   * of every weight (1,835,264 x 2 = 3,670,528 B). The step's foreach SGD
   * passes 8 times over the fp32 parameters, 8 x 7,341,056 B; GradScaler's
   * unscale_ is an op of its own before it, 2 passes: 14,682,112 B. bf16
   * has no scaler. */
  struct fixture f;
  setup(&f, TINY_TOPO, TINY_MODEL, DS_AMP_FP16);
  struct ds_err err = {0};
  cr_assert_eq(f.c.dtype, DS_DTYPE_FP32);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, &f.m->layers[1], 1), 100000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, &f.m->layers[1], 1), 200000, 1e-6);
  cr_assert_float_eq(ds_compute_step_bytes(&f.c, f.m), 8 * 7341056.0, 0.5);
  double unscale_bytes;
  ds_compute_unscale_ns(&f.c, f.m, &unscale_bytes);
  cr_assert_float_eq(unscale_bytes, 2 * 7341056.0, 0.5);
  struct ds_ddp_memory mem;
  struct ds_memory_options ddp = {.ddp = 1, .step_numel = 1835264};
  ds_ddp_memory(f.m, &f.c.precision, 4, &ddp, &mem);
  cr_assert_float_eq(mem.params, 7341056, 0.5);
  cr_assert_float_eq(mem.buckets, 7341056, 0.5);
  cr_assert_float_eq(mem.activations, 6e6 + 3670528, 0.5);
  /* the output in half (tiny's last layer has no class: autocast runs
   * it in half), 2 MB; after l2's backward its 2 MB of activations and
   * its weight's half copy (2,097,152) are freed and its .grad
   * (4,194,304) allocated: the peak */
  cr_assert_float_eq(mem.output, 2e6, 0.5);
  cr_assert_eq(mem.peak_at, DS_PEAK_BACKWARD);
  cr_assert_float_eq(mem.total,
                     3 * 7341056.0 + (6e6 + 3670528 - 2e6 - 2097152) + 2e6 + 4194304, 0.5);
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(f.t, DS_DTYPE_FP32, DS_AMP_BF16, &c, &err), DS_EUSAGE,
               "TestGPU has no bf16");
  cr_assert_eq(ds_compute_init(f.t, DS_DTYPE_FP16, DS_AMP_FP16, &c, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "cannot be combined with --dtype fp16"), "%s", err.msg);
  teardown(&f);
}

Test(ddp, autocast_bf16_needs_no_grad_scaler) {
  struct fixture f;
  setup(&f, "topologies/dgx-a100.yaml", TINY_MODEL, DS_AMP_BF16);
  cr_assert_float_eq(ds_compute_step_bytes(&f.c, f.m), 8 * 7341056.0, 0.5);
  cr_assert_float_eq(f.c.peak_flops_per_s, f.t->gpu.bf16_flops_per_s, 1);
  teardown(&f);
}

Test(ddp, each_op_class_runs_the_math_pytorch_picks) {
  /* dgx-a100's A100: FP32 19.5, TF32 156, FP16 312 TFLOPS; without the GPU
   * table's measured efficiencies (cleared here; test_efficiency.c covers
   * them) every class has flops_efficiency 0.5 unless the topology gives it
   * its own. 1 TFLOP, no bytes, 4 us overhead. Expected,
   * because in fp32 training PyTorch runs convolutions on TF32
   * (cudnn.allow_tf32 True) and matmuls and attention in FP32
   * (matmul.allow_tf32 False): conv 1e12 / (156e12 * 0.5) = 12.820513 ms,
   * matmul 1e12 / (19.5e12 * 0.5) = 102.564103 ms; --tf32 all puts matmuls
   * on TF32, --tf32 none convolutions on FP32; --amp fp16 every class on
   * FP16 (6.410256 ms); a class's own efficiency (matmul_efficiency 0.8)
   * replaces flops_efficiency for it; a layer without a class keeps the
   * topology's fp32_math (tf32). */
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("topologies/dgx-a100.yaml", NULL, &t, &err), DS_OK, "%s", err.msg);
  memset(&t->gpu.eff, 0, sizeof t->gpu.eff);
  t->compute.mem_efficiency = 0.7;
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK);
  const double tf = 1e12 / (156e12 * 0.5) * 1e9 + 4000, fp = 1e12 / (19.5e12 * 0.5) * 1e9 + 4000;
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_CONV, 1e12, 0), tf, 1e-3);
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_MATMUL, 1e12, 0), fp, 1e-3);
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_ATTENTION, 1e12, 0), fp, 1e-3);
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_UNKNOWN, 1e12, 0), tf, 1e-3);
  ds_compute_set_tf32(&c, t, DS_TF32_ALL);
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_MATMUL, 1e12, 0), tf, 1e-3);
  ds_compute_set_tf32(&c, t, DS_TF32_NONE);
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_CONV, 1e12, 0), fp, 1e-3);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_FP16, &c, &err), DS_OK);
  for (int k = DS_LAYER_CONV; k <= DS_LAYER_ATTENTION; k++)
    cr_assert_float_eq(ds_compute_class_kernel_ns(&c, (enum ds_layer_class)k, 1e12, 0),
                       1e12 / (312e12 * 0.5) * 1e9 + 4000, 1e-3, "class %d", k);
  /* a memory-class kernel is its bytes: 1 GB at 2039 GB/s x 0.7 */
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_MEMORY, 0, 1e9),
                     1e9 / (2039e9 * 0.7) * 1e9 + 4000, 1e-3);
  t->compute.matmul_efficiency = 0.8;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK);
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_MATMUL, 1e12, 0),
                     1e12 / (19.5e12 * 0.8) * 1e9 + 4000, 1e-3);
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_ATTENTION, 1e12, 0),
                     1e12 / (19.5e12 * 0.8) * 1e9 + 4000, 1e-3);
  cr_assert_float_eq(ds_compute_class_kernel_ns(&c, DS_LAYER_CONV, 1e12, 0), tf, 1e-3);
  ds_topo_free(t);
}

Test(ddp, bf16_on_a_gpu_without_it_is_a_usage_error) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load(TINY_TOPO, NULL, &t, &err), DS_OK);
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_BF16, DS_AMP_NONE, &c, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "TestGPU has no bf16"), "message: %s", err.msg);
  ds_topo_free(t);
}
