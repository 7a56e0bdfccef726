/*
 * Tests for bench/half_gemm_rates.py, which sets the H200's matmul_half
 * (tools/gen_gpus.py) from the half-precision GEMMs of the aligned linears
 * in the fit rows' own training traces: which kernels it pools, how it
 * splits the passes and how many kernel overheads it takes off. Expected
 * values are worked by hand from a made-up trace with round numbers.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "tests/support.h"

/* GPU "G": fp16 and bf16 0.32 TFLOPS. */
static const char *gpus_text = "schema_version: 1\ngpus:\n  - name: G\n    smi_names: [\"G\"]\n"
                               "    fp16: 0.32TFLOPS\n    bf16: 0.32TFLOPS\n";

#define OP(tid, name, ts, dur, id, dims, types)                                                  \
  "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" name "\", \"tid\": " #tid ", \"ts\": " #ts \
  ", \"dur\": " #dur ", \"args\": {\"External id\": " #id ", \"Input Dims\": " dims             \
  ", \"Input type\": " types "}},\n"
#define GPU(cat, name, ts, dur, id)                                                              \
  "{\"ph\": \"X\", \"cat\": \"" cat "\", \"name\": \"" name "\", \"tid\": 7, \"ts\": " #ts       \
  ", \"dur\": " #dur ", \"args\": {\"External id\": " #id "}},\n"
#define H "\"c10::Half\""

/* One iteration of a made-up fp16 run on G:
 *   a linear 200 -> 40 on 1000 tokens (aligned): its addmm's GEMM kernel
 *     100 us and a memset 2 us; an autocast cast (aten::copy_) under the
 *     same addmm, 7 us: not a GEMM, left out;
 *   its backward (AddmmBackward0, incoming gradient [1000, 40]): dgrad
 *     [1000, 40] x [40, 200] 96 us, wgrad [200, 1000] x [1000, 40] 110 us;
 *   a linear 200 -> 3 (3 is not a multiple of 8: unaligned), 50 us;
 *   an attention bmm (1000 us), an LM head mm over a vocabulary of 50304
 *   (aligned, so counted as a linear it would change the value: 2000 us)
 *   and an fp32 mm (3000 us): none of them this value's.
 * Each GEMM is 2 x 1000 x 200 x 40 = 16e6 FLOPs: 48e6 in 102 + 96 + 110 =
 * 308 us; ddpsim charges the layer two kernels (forward, backward), so
 * 308 - 2 x 4 = 300 us: 0.16 TFLOP/s, 0.500 of 0.32. An overhead per GEMM
 * kernel (3) would leave 296 us; none, 308 us: 0.487. */
static const char *trace_text =
    "{\"deviceProperties\": [{\"name\": \"G\"}], \"traceEvents\": [\n"
    OP(1, "aten::linear", 0, 300, 1, "[[1000, 200], [40, 200], [40]]", "[" H ", " H ", " H "]")
    OP(1, "aten::addmm", 10, 100, 2, "[[40], [1000, 200], [200, 40], [], []]",
       "[" H ", " H ", " H ", \"Scalar\", \"Scalar\"]")
    OP(1, "aten::copy_", 20, 10, 3, "[[200, 40], [200, 40], []]", "[" H ", \"float\", \"Scalar\"]")
    OP(1, "aten::linear", 400, 100, 4, "[[1000, 200], [3, 200], [3]]", "[" H ", " H ", " H "]")
    OP(1, "aten::addmm", 410, 50, 5, "[[3], [1000, 200], [200, 3], [], []]",
       "[" H ", " H ", " H ", \"Scalar\", \"Scalar\"]")
    OP(1, "aten::bmm", 600, 50, 6, "[[4, 1000, 64], [4, 64, 1000]]", "[" H ", " H "]")
    OP(1, "aten::mm", 700, 50, 7, "[[1000, 200], [200, 50304]]", "[" H ", " H "]")
    OP(1, "aten::mm", 800, 50, 8, "[[1000, 200], [200, 40]]", "[\"float\", \"float\"]")
    OP(2, "autograd::engine::evaluate_function: AddmmBackward0", 1000, 500, 10, "[]", "[]")
    OP(2, "AddmmBackward0", 1001, 400, 11, "[[1000, 40]]", "[" H "]")
    OP(2, "aten::mm", 1010, 50, 12, "[[1000, 40], [40, 200]]", "[" H ", " H "]")
    OP(2, "aten::mm", 1100, 50, 13, "[[200, 1000], [1000, 40]]", "[" H ", " H "]")
    GPU("kernel", "gemm_fwd", 2000, 100, 2)
    GPU("gpu_memset", "Memset (Device)", 2101, 2, 2)
    GPU("kernel", "cast", 2110, 7, 3)
    GPU("kernel", "gemm_align1", 2200, 50, 5)
    GPU("kernel", "bmm", 2300, 1000, 6)
    GPU("kernel", "lm_head", 3400, 2000, 7)
    GPU("kernel", "sgemm", 5500, 3000, 8)
    GPU("kernel", "gemm_dgrad", 9000, 96, 12)
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_wgrad\", \"tid\": 7, \"ts\": 9100, "
    "\"dur\": 110, \"args\": {\"External id\": 13}}\n]}\n";

/* The third number on the line of out starting with `start` (a pass's ms). */
static double pass_ms(const char *out, const char *start) {
  const char *line = strstr(out, start);
  cr_assert_not_null(line, "no line %s: %s", start, out);
  double gflop, kernels, ms;
  char name[16];
  cr_assert_eq(sscanf(line, "%15s %lf %lf %lf", name, &gflop, &kernels, &ms), 4, "%s", line);
  return ms;
}

Test(half_gemm_rates, pools_the_aligned_half_gemms_less_an_overhead_per_charged_kernel) {
  char gpus[] = "/tmp/ds_half_gemm_gpus_XXXXXX", trace[] = "/tmp/ds_half_gemm_trace_XXXXXX";
  ds_test_write_temp(gpus, gpus_text);
  ds_test_write_temp(trace, trace_text);
  char cmd[512], out[8192];
  double v;
  snprintf(cmd, sizeof cmd, "python3 bench/half_gemm_rates.py --iters 1 --gpus %s %s 2>&1", gpus,
           trace);
  cr_assert_eq(ds_test_command_value(cmd, "gpus.yaml matmul_half", &v, out, sizeof out), 0, "%s",
               out);
  cr_assert_float_eq(v, 0.500, 1e-9, "%s", out);
  /* the passes as timed: the forward's memset counts, the cast does not */
  cr_assert_float_eq(pass_ms(out, "  fwd "), 0.102, 1e-9, "%s", out);
  cr_assert_float_eq(pass_ms(out, "  dgrad "), 0.096, 1e-9, "%s", out);
  cr_assert_float_eq(pass_ms(out, "  wgrad "), 0.110, 1e-9, "%s", out);
  /* the kernels' time less 2 overheads (ddpsim's), or 3 (one per GEMM kernel) */
  cr_assert_eq(ds_test_command_value(cmd, "  all (ddpsim's kernels)", &v, out, sizeof out), 0);
  cr_assert_float_eq(v, 0.300, 1e-9, "%s", out);
  cr_assert_eq(ds_test_command_value(cmd, "  all, an overhead per GEMM kernel", &v, out,
                                     sizeof out), 0);
  cr_assert_float_eq(v, 0.296, 1e-9, "%s", out);
  cr_assert_not_null(strstr(out, "left out: 0.007 ms of other kernels"), "%s", out);
  cr_assert_not_null(strstr(out, "left out (unaligned: matmul_unaligned_half's): fwd 1000x200x3, "
                                 "50.0 us"),
                     "%s", out);
  snprintf(cmd, sizeof cmd,
           "python3 bench/half_gemm_rates.py --iters 1 --kernel-overhead-us 0 --gpus %s %s 2>&1",
           gpus, trace);
  cr_assert_eq(ds_test_command_value(cmd, "gpus.yaml matmul_half", &v, out, sizeof out), 0, "%s",
               out);
  cr_assert_float_eq(v, 0.487, 1e-9, "%s", out);
  unlink(trace);
  unlink(gpus);
}

/* The script's output for trace text on GPU G (one iteration), into out. */
static int run_on(const char *text, char *out, size_t cap, double *value) {
  char gpus[] = "/tmp/ds_half_gemm_gpus_XXXXXX", trace[] = "/tmp/ds_half_gemm_trace_XXXXXX";
  char cmd[512];
  ds_test_write_temp(gpus, gpus_text);
  ds_test_write_temp(trace, text);
  snprintf(cmd, sizeof cmd, "python3 bench/half_gemm_rates.py --iters 1 --gpus %s %s 2>&1", gpus,
           trace);
  int rc = ds_test_command_value(cmd, "gpus.yaml matmul_half", value, out, cap);
  unlink(trace);
  unlink(gpus);
  return rc;
}

/* The passes of a backward node by the order PyTorch runs them (the input's
 * gradient, then the weight's), not by operand shapes:
 *   layer A, 64 tokens, 32 -> 64 (M == N): forward 20 us; its backward
 *     (incoming gradient [64, 64]) runs dgrad grad.mm(W) [64, 64] x [64, 32],
 *     30 us, then wgrad the way nn.Linear does, grad.t().mm(mat1) [64, 64] x
 *     [64, 32], 50 us: the same shapes, the first operand the gradient's;
 *   layer B, 1000 tokens, 200 -> 40, its input column-major: forward 100 us;
 *     dgrad mat2.mm(grad.t()) [200, 40] x [40, 1000], 96 us (its first
 *     operand not the gradient), wgrad grad.t().mm(mat1) [40, 1000] x [1000,
 *     200] (BERT's real form), 110 us.
 * So fwd 20 + 100 = 120 us, dgrad 30 + 96 = 126 us, wgrad 50 + 110 = 160
 * us (by the first operand alone: dgrad 30 + 50, wgrad 96 + 110). */
#define NODE(ts, inner_ts, id, inner_id, grad)                                                  \
  OP(2, "autograd::engine::evaluate_function: AddmmBackward0", ts, 300, id, "[]", "[]")         \
  OP(2, "AddmmBackward0", inner_ts, 200, inner_id, grad, "[" H "]")
static const char *passes_text =
    "{\"deviceProperties\": [{\"name\": \"G\"}], \"traceEvents\": [\n"
    OP(1, "aten::addmm", 0, 50, 1, "[[64], [64, 32], [32, 64], [], []]",
       "[" H ", " H ", " H ", \"Scalar\", \"Scalar\"]")
    OP(1, "aten::addmm", 100, 50, 2, "[[40], [1000, 200], [200, 40], [], []]",
       "[" H ", " H ", " H ", \"Scalar\", \"Scalar\"]")
    NODE(1000, 1001, 10, 11, "[[64, 64]]")
    OP(2, "aten::mm", 1010, 20, 12, "[[64, 64], [64, 32]]", "[" H ", " H "]")
    OP(2, "aten::mm", 1050, 20, 13, "[[64, 64], [64, 32]]", "[" H ", " H "]")
    NODE(2000, 2001, 20, 21, "[[1000, 40]]")
    OP(2, "aten::mm", 2010, 20, 22, "[[200, 40], [40, 1000]]", "[" H ", " H "]")
    OP(2, "aten::mm", 2050, 20, 23, "[[40, 1000], [1000, 200]]", "[" H ", " H "]")
    GPU("kernel", "gemm_a_fwd", 3000, 20, 1)
    GPU("kernel", "gemm_b_fwd", 3100, 100, 2)
    GPU("kernel", "gemm_a_dgrad", 3300, 30, 12)
    GPU("kernel", "gemm_a_wgrad", 3400, 50, 13)
    GPU("kernel", "gemm_b_dgrad", 3500, 96, 22)
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_b_wgrad\", \"tid\": 7, \"ts\": "
    "3600, \"dur\": 110, \"args\": {\"External id\": 23}}\n]}\n";

Test(half_gemm_rates, a_nodes_passes_go_by_launch_order_not_operand_shapes) {
  char out[8192];
  double v;
  cr_assert_eq(run_on(passes_text, out, sizeof out, &v), 0, "%s", out);
  cr_assert_float_eq(pass_ms(out, "  fwd "), 0.120, 1e-9, "%s", out);
  cr_assert_float_eq(pass_ms(out, "  dgrad "), 0.126, 1e-9, "%s", out);
  cr_assert_float_eq(pass_ms(out, "  wgrad "), 0.160, 1e-9, "%s", out);
}

/* An LM head is the layer whose output features (the weight's vocabulary
 * dimension) pass 30000, never one whose token count does: a linear 200 ->
 * 40 over 40000 tokens (aligned), 4004 us, is this value's: 2 x 40000 x 200
 * x 40 = 640e6 FLOPs in 4004 - 4 = 4000 us, 0.16 TFLOP/s, 0.500 of G's
 * 0.32; the LM head beside it (50304 output features, aligned, 2000 us)
 * is not. */
Test(half_gemm_rates, many_tokens_are_not_an_lm_head) {
  char out[8192];
  double v;
  cr_assert_eq(
      run_on("{\"deviceProperties\": [{\"name\": \"G\"}], \"traceEvents\": [\n"
             OP(1, "aten::addmm", 0, 50, 1, "[[40], [40000, 200], [200, 40], [], []]",
                "[" H ", " H ", " H ", \"Scalar\", \"Scalar\"]")
             OP(1, "aten::mm", 100, 50, 2, "[[1000, 200], [200, 50304]]", "[" H ", " H "]")
             GPU("kernel", "gemm", 1000, 4004, 1) GPU("kernel", "lm_head", 6000, 2000, 2) "{}]}\n",
             out, sizeof out, &v),
      0, "%s", out);
  cr_assert_float_eq(v, 0.500, 1e-9, "%s", out);
}

Test(half_gemm_rates, refuses_a_trace_without_half_gemms_naming_it) {
  char gpus[] = "/tmp/ds_half_gemm_gpus_XXXXXX", trace[] = "/tmp/ds_half_gemm_trace_XXXXXX";
  ds_test_write_temp(gpus, gpus_text);
  ds_test_write_temp(trace, "{\"deviceProperties\": [{\"name\": \"G\"}], \"traceEvents\": [\n"
                     OP(1, "aten::mm", 0, 50, 1, "[[1000, 200], [200, 40]]",
                        "[\"float\", \"float\"]")
                     GPU("kernel", "sgemm", 100, 30, 1) "{}]}\n");
  char cmd[512], out[4096], want[128];
  double v;
  snprintf(cmd, sizeof cmd, "python3 bench/half_gemm_rates.py --gpus %s %s 2>&1", gpus, trace);
  cr_assert_eq(ds_test_command_value(cmd, "gpus.yaml matmul_half", &v, out, sizeof out), 2, "%s",
               out);
  snprintf(want, sizeof want, "%s: no half-precision GEMMs", trace);
  cr_assert_not_null(strstr(out, want), "%s", out);
  unlink(trace);
  unlink(gpus);
}

Test(half_gemm_rates, h200_matmul_half_is_what_the_fit_traces_give) {
  /* topologies/gpus.yaml's H200 matmul_half is the script's pooled value
   * of the two fit rows' H200 traces (tools/gen_gpus.py): a changed trace,
   * script or table fails here. */
  char out[16384];
  double v;
  cr_assert_eq(ds_test_command_value("python3 bench/half_gemm_rates.py 2>&1",
                                     "gpus.yaml matmul_half", &v, out, sizeof out),
               0, "%s", out);
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("validation/topologies/nd-h200-v5.yaml", "topologies/gpus.yaml", &t,
                            &err),
               DS_OK, "%s", err.msg);
  cr_assert_float_eq(t->gpu.eff.matmul[DS_GPU_MATH_HALF], v, 1e-9, "%s", out);
  ds_topo_free(t);
}
