/*
 * Tests for torch.cat's generic CUDA kernel (sim/train/cat_copy.h): the
 * cats a model file lists under cat_copy take their index divisions at
 * DS_CAT_DIVISION_CYCLES SM cycles each where that is slower than their
 * bytes at the roofline. Worked by hand on tiny-topo's TestGPU (10 SMs,
 * 1000 GB/s, efficiencies 1, no kernel overhead), its clock set to 1 GHz.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sim/net/topo.h"
#include "sim/train/cat_copy.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "tests/support.h"

/* kv: a memory layer of 48 MB of ops per sample, 8 MB of them a cat (a
 * KV-cache update) and 20 MB of backward copies, 4 MB of them a cat
 * (split's backward), each counted as the exporter counts a real fp32 cat:
 * 4 bytes read and 4 written an element. The forward's: 8e6 B / 8 = 1e6
 * elements of 4 dimensions, 2 x (4 - 1) = 6 divisions each, 6e6 (0.75 a
 * byte); the backward's: 4e6 / 8 = 5e5 elements of 3 dimensions, 4 each,
 * 2e6 (0.5 a byte); both under the bound of 6 a byte. plain: the same
 * without cat_copy. w: the one parameter a model file needs. */
static const char *model_text =
    "schema_version: 1\nname: cc\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - name: w\n    class: matmul\n    fwd_flops: 1\n    bwd_flops: 2\n    fwd_bytes: 1\n"
    "    act_bytes: 0\n    params:\n      - {name: w, numel: 1}\n"
    "  - name: kv\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 48000000\n    op_fwd_bytes: 48000000\n    act_bytes: 0\n"
    "    bwd_copy_bytes: 20000000\n"
    "    cat_copy: {fwd: [8000000, 6000000], bwd: [4000000, 2000000]}\n    params: []\n"
    "  - name: plain\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 48000000\n    op_fwd_bytes: 48000000\n    act_bytes: 0\n"
    "    bwd_copy_bytes: 20000000\n    params: []\n";

static struct ds_compute init(const struct ds_topo *topo, enum ds_dtype dtype) {
  struct ds_compute c;
  struct ds_err err = {0};
  cr_assert_eq(ds_compute_init(topo, dtype, DS_AMP_NONE, &c, &err), DS_OK, "%s", err.msg);
  c.sm_clock_hz = 1e9;
  return c;
}

Test(cat_copy, the_divisions_cost_what_the_roofline_does_not_cover) {
  /* fp32, batch 2 (10 SMs x 1 GHz = 1e10 SM cycles a second). Forward:
   * the layer's ops 2 x 48 MB = 96 MB at 1000 GB/s, 96 us; the cat's 2 x
   * 6e6 = 1.2e7 divisions x 0.237 cycles = 2.844e6 cycles / 1e10 = 284.4
   * us, less its 2 x 8 MB = 16 MB's 16 us already in the 96: an extra
   * 268.4 us, 96 + 268.4 = 364.4 us. Backward's extras: the copies' 2 x 20
   * = 40 MB, 40 us, and the cat's 2 x 2e6 = 4e6 x 0.237 = 9.48e5 cycles /
   * 1e10 = 94.8 us less its 8 MB's 8 us, 86.8 us: 126.8 us. The layer
   * without the key: 96 and 40 us. */
  struct ds_model *m;
  struct ds_topo *topo;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(model_text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &topo, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(topo->gpu.sms, 10);
  cr_assert_float_eq(DS_CAT_DIVISION_CYCLES, 0.237, 1e-12);
  const struct ds_layer *kv = &m->layers[1], *plain = &m->layers[2];
  struct ds_compute c = init(topo, DS_DTYPE_FP32);
  cr_assert_float_eq(ds_cat_copy_extra_ns(&c, kv, DS_ATTN_FWD, 2), 268400, 1e-3);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, kv, 2), 364400, 1e-3);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&c, kv, 2), 126800, 1e-3);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, plain, 2), 96000, 1e-3);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&c, plain, 2), 40000, 1e-3);
  /* fp16: the bytes halve (16 MB x 2 / 4 = 8 MB, 8 us), the divisions do
   * not: 284.4 - 8 = 276.4 us forward. A kernel overhead of 5 us: the
   * cat's launch is the pass's (its bytes' kernel), so the extra stays
   * 268.4 us in fp32. */
  struct ds_compute half = init(topo, DS_DTYPE_FP16);
  cr_assert_float_eq(ds_cat_copy_extra_ns(&half, kv, DS_ATTN_FWD, 2), 276400, 1e-3);
  c.params.kernel_overhead_ns = 5000;
  cr_assert_float_eq(ds_cat_copy_extra_ns(&c, kv, DS_ATTN_FWD, 2), 268400, 1e-3);
  /* a cat small enough for the roofline: 1 division a sample, 2 x 0.237 /
   * 1e10 s = 4.74e-5 us against its 16 us */
  struct ds_layer tiny = *kv;
  tiny.cat_copy[DS_ATTN_FWD].divisions = 1;
  cr_assert_float_eq(ds_cat_copy_extra_ns(&c, &tiny, DS_ATTN_FWD, 2), 0, 1e-9);
  /* no clock: the bytes stay at the roofline */
  c.sm_clock_hz = 0;
  cr_assert_float_eq(ds_cat_copy_extra_ns(&c, kv, DS_ATTN_FWD, 2), 0, 1e-9);
  ds_model_free(m);
  ds_topo_free(topo);
}

Test(cat_copy, bad_values_are_located) {
  static const char *const bad[][2] = {
      {"    cat_copy: [1, 2]\n", "expected cat_copy as a map"},
      {"    cat_copy: {fwd: [1]}\n", "[bytes, index divisions]"},
      {"    cat_copy: {fwd: [1, -2]}\n", "key 'layers[0].cat_copy.fwd[1]': expected an integer "
                                         "from 0"},
      {"    cat_copy: {side: [1, 2]}\n", "side"},
      {"    cat_copy: {fwd: [2000, 1]}\n",
       "key 'layers[0].cat_copy.fwd': expected fwd bytes at most the layer's op_fwd_bytes "
       "(1000), got 2000"},
      {"    cat_copy: {bwd: [1, 1]}\n",
       "key 'layers[0].cat_copy.bwd': expected bwd bytes at most the layer's bwd_copy_bytes (0), "
       "got 1"},
      /* divisions past 6 a byte + 3: 6 x 1000 + 3 = 6003 (6003 itself
       * loads: below), and 0 + 3 for no bytes */
      {"    cat_copy: {fwd: [1000, 6004]}\n",
       "key 'layers[0].cat_copy.fwd[1]': expected fwd index divisions at most 6 a byte + 3 = "
       "6003 for 1000 bytes"},
      {"    cat_copy: {fwd: [1000, 6004]}\n", "an element of at least 1 byte), got 6004"},
      {"    cat_copy: {fwd: [0, 1000000000000000]}\n",
       "= 3 for 0 bytes"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "schema_version: 1\nname: b\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
             "layers:\n  - name: l\n%s    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
             "    fwd_bytes: 1000\n    act_bytes: 0\n    params: []\n",
             bad[i][0]);
    struct ds_model *m = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_EINPUT, "%s", bad[i][0]);
    cr_assert(strstr(err.msg, bad[i][1]) && strstr(err.msg, ":8:"), "%s: %s", bad[i][0],
              err.msg);
  }
}

/* At the bound: 6 x 1000 + 3 divisions over 1000 bytes load. */
Test(cat_copy, divisions_at_the_bound_load) {
  char text[1024];
  ds_test_one_layer_model(text, sizeof text, "memory",
                          "    op_fwd_bytes: 1000\n    cat_copy: {fwd: [1000, 6003]}\n");
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(m->layers[0].cat_copy[DS_ATTN_FWD].divisions, 6003, 0);
  ds_model_free(m);
}

/* A cat's bytes written with a unit ("12MiB") are refused at their line
 * and column naming the file and the key, with the reminder that a model
 * file's sizes are integer bytes per sample, also through the CLI (exit
 * 2); the index divisions beside them are no bytes: no reminder there. */
Test(cat_copy, a_byte_count_with_a_unit_says_integer_bytes) {
  char text[1024];
  ds_test_one_layer_model(text, sizeof text, "memory", "    cat_copy: {bwd: [12MiB, 0]}\n");
  ds_test_assert_bytes_hint(text, ":13:22: key 'layers[0].cat_copy.bwd[0]'", 1);
  ds_test_one_layer_model(text, sizeof text, "memory", "    cat_copy: {fwd: [1, 12MiB]}\n");
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'layers[0].cat_copy.fwd[1]'") && !strstr(err.msg, "integer bytes"),
            "%s", err.msg);
}
