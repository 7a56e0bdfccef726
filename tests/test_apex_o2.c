/*
 * --optimizer apex-o2-fusedadam (compute.h ds_compute_step_ns;
 * compute_step.c's apex block): DeepLearningExamples' BERT run_squad.py
 * --fp16 step, apex amp O2 with FusedAdam, worked by hand.
 *
 * Toy: tests/test_bertadam.c's four tensors under --dtype fp16 (2 bytes a
 * model element, 4 a master one), in registration order enc.dense.weight
 * (1,000,000 elements, 16 chunks of 65,536; weight_decay 0.01),
 * enc.dense.bias and enc.LayerNorm.weight (100,000, 2 chunks each;
 * weight_decay 0), pooler.dense.weight (1,000,000: run_squad.py:959 leaves
 * it out). P = 1,200,000 stepped elements. On TestGPU (1000 GB/s,
 * mem_efficiency 1: 1000 bytes a ns) with a kernel_overhead of 5 us:
 *   amp's unscale: the overflow flag's zero_ (4 B) and multi_tensor_scale
 *   over [fp16 grads, fp32 master grads] (depth 2, 64 tensors: 20 chunks,
 *   3 tensors, one launch), 2 + 4 B an element: 2 launches, 4 + 7,200,000
 *   = 7,200,004 B, (0.004 + 5000) + (7200 + 5000) = 17,200.004 ns;
 *   the clipper on the fp32 master gradients, as bertadam's toy (fp32 there
 *   too): l2norm 3 kernels, 4,802,564 B, 19,802.564 ns; scale 1 launch,
 *   9,600,000 B, 14,600 ns;
 *   FusedAdam, a multi_tensor_adam per group (depth 4, 36 tensors): the
 *   weight's 16 chunks one launch, the bias and LayerNorm weight's 4
 *   another; 7 fp32 passes (g, p, m, v read, p, m, v written), 28 B an
 *   element; then the copy to the fp16 model, multi_tensor_scale over
 *   [masters, fp16 params] (depth 2: one launch), 4 + 2 B: 3 launches,
 *   1,200,000 x 34 = 40,800,000 B, 40,800 + 3 x 5000 = 55,800 ns;
 *   amp's zero_grad: zero_ on the 3 fp16 gradients, 2,400,000 B, 2400 + 3 x
 *   5000 = 17,400 ns.
 *   Per stepped element 6 + 4 + 8 + 34 + 2 = 54 bytes; host dispatches: the
 *   step's 3 launches and 3 fills; memory: masters and moments 12 B an
 *   element (14,400,000 B), master gradients 4 (4,800,000 B) at the step.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/host.h"
#include "sim/train/memory.h"
#include "sim/train/model.h"
#include "tests/support.h"

#define OVERHEAD_NS 5000.0
#define P_US 200.0 /* tests/data/tiny-host-topo.yaml's host_grad_copy */

static char W[] = "enc.dense.weight", BIAS[] = "l.bias"; /* decayed, not */

/* The toy (support.h) under --dtype fp16 and this file's optimizer. */
static void toy_setup(struct ds_test_bert_toy *f, const char *topo) {
  ds_test_bert_toy_setup(f, topo, DS_DTYPE_FP16, DS_OPT_APEX_O2, OVERHEAD_NS);
}

Test(apex_o2, toy_unscale) {
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  cr_assert_float_eq(f.c.precision.param_bytes, 2, 0); /* the fp16 model */
  double bytes;
  cr_assert_eq(ds_compute_amp_unscale_launches(&f.c, &f.m), 2);
  cr_assert_float_eq(ds_compute_amp_unscale_ns(&f.c, &f.m, &bytes), 17200.004, 1e-6);
  cr_assert_float_eq(bytes, 7200004, 1e-3);
  /* nothing to unscale under bertadam or Adam */
  f.m.optimizer = DS_OPT_ADAM;
  cr_assert_eq(ds_compute_amp_unscale_launches(&f.c, &f.m), 0);
  cr_assert_float_eq(ds_compute_amp_unscale_ns(&f.c, &f.m, &bytes), 0, 0);
  cr_assert_float_eq(bytes, 0, 0);
  f.m.optimizer = DS_OPT_BERTADAM;
  cr_assert_eq(ds_compute_amp_unscale_launches(&f.c, &f.m), 0);
  ds_test_bert_toy_free(&f);
}

Test(apex_o2, toy_clipper_on_fp32_master_gradients) {
  /* 4 bytes an element under --dtype fp16: bertadam's toy numbers */
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  double bytes;
  cr_assert_eq(ds_compute_clip_norm_launches(&f.c, &f.m), 3);
  cr_assert_float_eq(ds_compute_clip_norm_ns(&f.c, &f.m, &bytes), 19802.564, 1e-6);
  cr_assert_float_eq(bytes, 4802564, 1e-3);
  cr_assert_eq(ds_compute_clip_scale_launches(&f.c, &f.m), 1);
  cr_assert_float_eq(ds_compute_clip_scale_ns(&f.c, &f.m, &bytes), 14600, 1e-6);
  cr_assert_float_eq(bytes, 9600000, 1e-3);
  ds_test_bert_toy_free(&f);
}

Test(apex_o2, toy_step_zero_grad_and_host_dispatches) {
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  cr_assert_eq(ds_compute_step_launches(&f.c, &f.m), 3);
  cr_assert_eq(ds_compute_step_kernels(&f.c, &f.m), 3);
  cr_assert_float_eq(ds_compute_step_bytes(&f.c, &f.m), 40800000, 1e-3);
  cr_assert_float_eq(ds_compute_step_ns(&f.c, &f.m), 55800, 1e-6);
  cr_assert_eq(ds_compute_optimizer_passes(&f.c, DS_OPT_APEX_O2), 17);
  cr_assert_float_eq(ds_compute_step_numel(&f.m), 1200000, 0);
  /* amp's zero_grad fills whatever the PyTorch (zero_grad_fill unset) */
  double zbytes;
  cr_assert_float_eq(ds_compute_zero_grad_ns(&f.c, &f.m, &zbytes), 17400, 1e-6);
  cr_assert_float_eq(zbytes, 2400000, 1e-3);
  cr_assert_eq(ds_compute_step_host_ops(&f.c, &f.m), 6);
  cr_assert_float_eq(ds_host_foreach_step_ns(&f.c, &f.m), 0, 0);
  /* 54 bytes a stepped element over the whole step */
  double b, total = 0;
  ds_compute_amp_unscale_ns(&f.c, &f.m, &b);
  total += b - 4; /* less the flag's fill */
  ds_compute_clip_norm_ns(&f.c, &f.m, &b);
  total += b - 1280 - 1284; /* less the partials' fill and cleanup */
  ds_compute_clip_scale_ns(&f.c, &f.m, &b);
  total += b + ds_compute_step_bytes(&f.c, &f.m) + zbytes;
  cr_assert_float_eq(total, 54.0 * 1200000, 1e-3);
  ds_test_bert_toy_free(&f);
}

Test(apex_o2, fusedadam_launches_per_group) {
  /* FusedAdam calls multi_tensor_adam once per param group (fused_adam.py
   * :105-170): 10 one-chunk weights and 10 one-chunk biases, 2 launches
   * (one list of 20 would be 1), and the copy back over all 20 at depth 2,
   * 1: 3. 70 weights alone: 36 + 34, 2 launches, the empty group none, the
   * copy 64 + 6, 2: 4; the unscale's flag and 64 + 6: 3. */
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  struct ds_param ps[70];
  for (int i = 0; i < 20; i++) ps[i] = (struct ds_param){.name = i < 10 ? W : BIAS, .numel = 1000};
  struct ds_model m = {.params = ps, .n_params = 20, .total_numel = 20000,
                       .optimizer = DS_OPT_APEX_O2};
  cr_assert_eq(ds_compute_step_launches(&f.c, &m), 3);
  cr_assert_eq(ds_compute_amp_unscale_launches(&f.c, &m), 2);
  for (int i = 0; i < 70; i++) ps[i] = (struct ds_param){.name = W, .numel = 1000};
  m.n_params = 70;
  m.total_numel = 70000;
  cr_assert_eq(ds_compute_step_launches(&f.c, &m), 4);
  cr_assert_eq(ds_compute_amp_unscale_launches(&f.c, &m), 3);
  ds_test_bert_toy_free(&f);
}

Test(apex_o2, host_ops_two_syncs_before_the_step) {
  /* ds_host_emit_step: the unscale's 2 launches on the host (2 P), its
   * kernels after the GPU's tail and them, overflow.item (P) waiting for
   * them; the clipper's l2norm (3 P), its kernels, total_norm.item (P),
   * the scale (P) and its kernels; then the step's first launch (which
   * its kernels wait for) and the other 2 launches and 3 fills (5 P). */
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-host-topo.yaml");
  struct ds_schedule_builder bd;
  int64_t first, tail;
  ds_test_one_bwd_schedule(&bd, &tail);
  struct ds_schedule *s = bd.s;
  cr_assert_eq(ds_host_emit_step(&bd, &f.c, &f.m, 0, &tail, 1, &first), DS_OK);
  cr_assert_eq(s->n_ops, 11);
  const struct ds_op *o = s->ops;
  static const struct {
    const char *name;
    enum ds_stream stream;
    double host_us; /* host ops' durations */
  } want[] = {{"amp.unscale", DS_STREAM_HOST, 2 * P_US},
              {"amp.unscale", DS_STREAM_COMPUTE, 0},
              {"overflow.item", DS_STREAM_HOST, P_US},
              {"clip.l2norm", DS_STREAM_HOST, 3 * P_US},
              {"clip.l2norm", DS_STREAM_COMPUTE, 0},
              {"total_norm.item", DS_STREAM_HOST, P_US},
              {"clip.scale", DS_STREAM_HOST, P_US},
              {"clip.scale", DS_STREAM_COMPUTE, 0},
              {"optimizer", DS_STREAM_HOST, P_US},
              {"optimizer", DS_STREAM_HOST, 5 * P_US}};
  for (int i = 0; i < 10; i++) {
    cr_assert_str_eq(o[i + 1].name, want[i].name, "op %d", i + 1);
    cr_assert_eq(o[i + 1].stream, want[i].stream, "op %d", i + 1);
    if (want[i].stream == DS_STREAM_HOST)
      cr_assert_float_eq(o[i + 1].dur_us, want[i].host_us, 1e-9, "op %d", i + 1);
  }
  /* the unscale's kernels after the tail and their launch; the sync after them */
  cr_assert_eq(o[2].dep_count, 2);
  cr_assert_eq(ds_schedule_deps(s, &o[2])[0], tail);
  cr_assert_eq(ds_schedule_deps(s, &o[2])[1], o[1].id);
  cr_assert_float_eq(o[2].dur_us, 17.200004, 1e-9);
  cr_assert_eq(o[3].dep_count, 1);
  cr_assert_eq(ds_schedule_deps(s, &o[3])[0], o[2].id);
  cr_assert_eq(ds_schedule_deps(s, &o[6])[0], o[5].id);
  cr_assert_eq(first, o[9].id);
  ds_schedule_free(s);
  ds_test_bert_toy_free(&f);
}

Test(apex_o2, memory_masters_moments_and_master_grads) {
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  cr_assert_eq(ds_optimizer_states(DS_OPT_APEX_O2), 3);
  cr_assert_str_eq(ds_optimizer_name(DS_OPT_APEX_O2), "apex-o2-fusedadam");
  struct ds_memory_options mo = {.step_numel = 2200000};
  cr_assert_float_eq(ds_step_temporaries(&f.m, &f.c.precision, &mo), 4800000, 1e-3);
  struct ds_ddp_memory mem;
  ds_ddp_memory(&f.m, &f.c.precision, 1, &mo, &mem);
  cr_assert_float_eq(mem.params, 4400000, 1e-3); /* the fp16 model, pooler included */
  cr_assert_float_eq(mem.optimizer, 14400000, 1e-3);
  cr_assert_float_eq(mem.step_temp, 4800000, 1e-3);
  ds_test_bert_toy_free(&f);
}

Test(apex_o2, cli_runs_and_refuses) {
  /* the tiny model under fp16 (l0.weight, l1.weight, l2.weight decayed,
   * l0.bias not; P = 1,835,264 elements) on TestGPU (no overhead), 4
   * ranks of ddp: the step ops' bytes at 1000 B a ns, each rounded to a
   * ns (ds_schedule's one rounding): the unscale 4 + 6P = 11,011,588 B
   * (11,012 ns), l2norm 1280 + 4P + 1284 = 7,343,620 (7344), scale 8P =
   * 14,682,112 (14,682), FusedAdam and the copy 34P = 62,398,976 (62,399),
   * the fills 2P = 3,670,528 (3671): 99,108 ns */
  ds_test_cli_step("--topo tests/data/tiny-topo.yaml --model "
                   "tests/data/tiny-model.yaml --batch 2 --dtype fp16 "
                   "--optimizer apex-o2-fusedadam --format csv",
                   0.099108, 1e-9, "apex-o2-fusedadam");
  /* each refusal names the flag it refuses (and the optimizer where the
   * flag alone would not say why) */
  static const char *const refused[][3] = {
      {"", "--dtype", "apex-o2-fusedadam"},
      {"--dtype bf16", "--dtype", "apex-o2-fusedadam"},
      {"--dtype fp16 --amp fp16", "--amp", "apex-o2-fusedadam"},
      {"--dtype fp16 --weight-decay", "--weight-decay", "apex-o2-fusedadam"},
      {"--dtype fp16 --pytorch-version 1.9", "--pytorch-version", "apex-o2-fusedadam"},
      {"--dtype fp16 --grad-accum 2", "--grad-accum", "apex-o2-fusedadam"},
      {"--dtype fp16 --optimizer-batch 4", "--optimizer-batch", "apex-o2-fusedadam"},
      {"--dtype fp16 --no-sync 2", "--no-sync", "apex-o2-fusedadam"},
      {"--dtype fp16 --strategy ps", "--strategy ps", "apex-o2-fusedadam"},
      {"--dtype fp16 --strategy single,dp", "--strategy dp", "apex-o2-fusedadam"}};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    char args[512];
    snprintf(args, sizeof args,
             "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml --batch 2 "
             "--optimizer apex-o2-fusedadam %s --format csv",
             refused[i][0]);
    ds_test_ddpsim_refuses_all(args, &refused[i][1], 2);
  }
  /* bertadam under fp16 points to it */
  struct ds_test_result r = ds_test_cli("--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
                  "--batch 2 --optimizer bertadam --dtype fp16 --format csv");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "apex-o2-fusedadam --dtype fp16") != NULL, "%s", r.err);
  ds_test_release(&r);
}
