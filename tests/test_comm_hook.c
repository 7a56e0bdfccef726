/*
 * DDP communication hooks (sim/train/comm_hook.c): the fp16 hook's casts and
 * halved all-reduces, PowerSGD's tensor views, P/Q/uncompressed byte counts,
 * kernels and synchronisation, worked by hand on tests/data/tiny-model.yaml
 * and tests/data/psgd-model.yaml; the memory they add; the command line.
 *
 * TestGPU (tests/data/gpus.yaml via tiny-topo): 10 TFLOPS fp32, 1000 GB/s,
 * efficiency 1, no kernel overhead unless a test sets one: a memory-bound
 * kernel moving B bytes takes B / 1e12 s = B / 1e6 us.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/train/comm_hook.h"
#include "sim/train/compute.h"
#include "sim/train/ddp.h"
#include "sim/train/model.h"
#include "sim/net/topo.h"
#include "support.h"

#define MIB (1024.0 * 1024.0)

static struct ds_compute test_gpu(void) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  struct ds_compute c;
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK, "%s", err.msg);
  ds_topo_free(t);
  return c;
}

/* Index of rank 0's op named name; fails the test when absent. */
static size_t find(const struct ds_schedule *s, const char *name) {
  for (size_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].rank == 0 && strcmp(s->ops[i].name, name) == 0) return i;
  cr_assert_fail("no op %s", name);
  return 0;
}

static void assert_deps(const struct ds_schedule *s, size_t i, const int64_t *want, uint32_t n) {
  cr_assert_eq(s->ops[i].dep_count, n, "op %zu (%s): %u deps", i, s->ops[i].name,
               s->ops[i].dep_count);
  const int64_t *d = ds_schedule_deps(s, &s->ops[i]);
  for (uint32_t k = 0; k < n; k++)
    cr_assert_eq(d[k], want[k], "op %zu dep %u: %lld", i, k, (long long)d[k]);
}

static struct ds_schedule *build(const struct ds_model *m, const struct ds_compute *c,
                                 const struct ds_buckets *b, struct ds_comm_hook hook,
                                 int32_t iter) {
  struct ds_schedule *s = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .proto_fixed = DS_PROTO_COUNT,
                               .hook = hook, .iter = iter};
  cr_assert_eq(ds_ddp_build(m, c, &opt, b, 0, 0, s), DS_OK);
  cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
  return s;
}

Test(comm_hook, parse_names_and_ranks) {
  struct ds_comm_hook h;
  struct ds_err err = {0};
  char name[32];
  cr_assert_eq(ds_comm_hook_parse("--comm-hook", "powersgd:4", &h, &err), DS_OK);
  cr_assert_eq(h.kind, DS_HOOK_POWERSGD);
  cr_assert_eq(h.rank, 4);
  ds_comm_hook_name(&h, name, sizeof name);
  cr_assert_str_eq(name, "powersgd:4");
  cr_assert_eq(ds_comm_hook_parse("--comm-hook", "bf16", &h, &err), DS_OK);
  cr_assert_eq(h.kind, DS_HOOK_BF16);
  const char *bad[] = {"fp8", "FP16", "powersgd", "powersgd:", "powersgd:0", "powersgd:-1",
                       "powersgd:2x", "powersgd:1025", "powersgd: 2", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_eq(ds_comm_hook_parse("--comm-hook", bad[i], &h, &err), DS_EUSAGE, "%s", bad[i]);
    cr_assert(strstr(err.msg, "--comm-hook"), "%s", err.msg);
  }
}

Test(comm_hook, fp16_halves_each_allreduce_and_adds_the_casts) {
  /* tiny model, fp32 gradients, caps 1 / 25 MiB: bucket 0 = l2.weight
   * (N0 = 1,048,576), bucket 1 = l1.weight + l0.bias + l0.weight (N1 =
   * 786,688). fp16_compress = buffer.to(fp16) (reads 4N, writes 2N) +
   * div_ (reads and writes 2N): 10N bytes; fp16_decompress = copy_ back
   * (reads 2N, writes 4N): 6N bytes; the all-reduce moves 2N bytes. */
  struct ds_model *m = ds_test_model("tests/data/tiny-model.yaml");
  struct ds_compute c = test_gpu();
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  struct ds_schedule *none = build(m, &c, &b, (struct ds_comm_hook){DS_HOOK_NONE, 0}, 1);
  struct ds_schedule *s = build(m, &c, &b, (struct ds_comm_hook){DS_HOOK_FP16, 0}, 1);
  const double n[2] = {1048576, 786688};
  for (int k = 0; k < 2; k++) {
    char ar[24];
    snprintf(ar, sizeof ar, "bucket%d", k);
    size_t i = find(s, ar), j = find(none, ar);
    cr_assert_float_eq(s->ops[i].bytes, 2 * n[k], 1e-6);
    cr_assert_float_eq(s->ops[i].bytes, none->ops[j].bytes / 2, 1e-6);
  }
  /* per rank: (host launch, fwd) x3, loss, bwd l2, its copy into the
   * bucket, compress, all-reduce, decompress, bwd l1, copy, bwd l0, copy,
   * compress, all-reduce, decompress, the two copies back to .grad, step */
  cr_assert_eq(s->n_ops, 2 * 22);
  size_t c0 = find(s, "bucket0.fp16_compress"), d0 = find(s, "bucket0.fp16_decompress");
  size_t c1 = find(s, "bucket1.fp16_compress"), d1 = find(s, "bucket1.fp16_decompress");
  cr_assert_eq(c0, 9);
  cr_assert_eq(s->ops[c0].stream, DS_STREAM_COMPUTE);
  cr_assert_eq(s->ops[d0].stream, DS_STREAM_COPY);
  cr_assert_eq(s->ops[c0].kind, DS_OP_BWD);
  cr_assert_float_eq(s->ops[c0].bytes, 10 * n[0], 1e-6);
  cr_assert_float_eq(s->ops[c0].dur_us, 10.48576, 1e-9);   /* 10 N0 / 1e6 */
  cr_assert_float_eq(s->ops[d0].dur_us, 6.291456, 1e-9);   /* 6 N0 / 1e6 */
  cr_assert_float_eq(s->ops[c1].dur_us, 7.86688, 1e-9);    /* 10 N1 / 1e6 */
  cr_assert_float_eq(s->ops[d1].dur_us, 4.720128, 1e-9);   /* 6 N1 / 1e6 */
  /* decompress after its all-reduce; the next backward after the compress
   * (stream order, not the communication); each copy back to .grad after
   * its bucket's decompress (finalize_backward waits for the hook's
   * future); the step after everything. */
  assert_deps(s, d0, (int64_t[]){10}, 1);
  assert_deps(s, 12, (int64_t[]){9}, 1);
  assert_deps(s, 17, (int64_t[]){16, 10}, 2);
  assert_deps(s, 19, (int64_t[]){16, 11}, 2);
  assert_deps(s, 20, (int64_t[]){19, 18}, 2);
  /* ... and the host's last op (op 4, the last forward launch: this
   * topology has no backward host work), as step() follows backward() */
  assert_deps(s, 21, (int64_t[]){20, 17, 18, 4}, 4);
  ds_schedule_free(s);
  /* Two kernels in compress, one in decompress: with a 4 us launch
   * overhead, 10.48576 + 2 * 4 and 6.291456 + 4. */
  c.params.kernel_overhead_ns = 4000;
  s = build(m, &c, &b, (struct ds_comm_hook){DS_HOOK_FP16, 0}, 1);
  cr_assert_float_eq(s->ops[find(s, "bucket0.fp16_compress")].dur_us, 18.48576, 1e-9);
  cr_assert_float_eq(s->ops[find(s, "bucket0.fp16_decompress")].dur_us, 10.291456, 1e-9);
  ds_schedule_free(s);
  ds_schedule_free(none);
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
}

Test(comm_hook, half_hook_on_half_gradients_only_divides) {
  /* bf16 gradients under the bf16 hook: .to(bf16) returns the buffer
   * itself, so compress is div_ alone (4N bytes) and there is no
   * decompress; the all-reduce still moves 2N. */
  struct ds_model *m = ds_test_model("tests/data/tiny-model.yaml");
  struct ds_compute c = test_gpu();
  c.dtype = DS_DTYPE_BF16;
  int32_t idx[] = {3}; /* l2.weight, 1,048,576 elements */
  struct ds_hook_plan p;
  ds_comm_hook_plan(&(struct ds_comm_hook){DS_HOOK_BF16, 0}, m, &c, idx, 1, 0, &p);
  cr_assert_eq(p.n, 2);
  cr_assert_str_eq(p.op[0].what, "bf16_compress");
  cr_assert_eq(p.op[0].kernels, 1);
  cr_assert_float_eq(p.op[0].bytes, 4 * 1048576.0, 1e-6);
  cr_assert_eq(p.op[1].where, DS_HOOK_ALLREDUCE);
  cr_assert_float_eq(p.op[1].bytes, 2 * 1048576.0, 1e-6);
  ds_model_free(m);
}

Test(comm_hook, powersgd_views_follow_should_compress) {
  /* view(shape[0], -1), r = min(n, m, R), compressed when (n + m) r 2 < n m. */
  struct ds_model *m = ds_test_model("tests/data/psgd-model.yaml");
  struct { int32_t rank; int64_t n, m, r; int compress; } want[][4] = {
      /* l0.weight, l0.bias, l1.weight, l1.small */
      {{2, 256, 1024, 2, 1}, {2, 256, 1, 1, 0}, {2, 64, 144, 2, 1}, {2, 4, 8, 2, 0}},
      /* rank 1: (4 + 8) 1 2 = 24 < 32, l1.small compresses too */
      {{1, 256, 1024, 1, 1}, {1, 256, 1, 1, 0}, {1, 64, 144, 1, 1}, {1, 4, 8, 1, 1}},
  };
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 4; i++) {
      struct ds_psgd_tensor v;
      ds_psgd_view(&m->params[i], want[k][i].rank, &v);
      cr_assert_eq(v.n, want[k][i].n, "%s", m->params[i].name);
      cr_assert_eq(v.m, want[k][i].m, "%s", m->params[i].name);
      cr_assert_eq(v.r, want[k][i].r, "%s", m->params[i].name);
      cr_assert_eq(v.compress, want[k][i].compress, "%s rank %d", m->params[i].name,
                   want[k][i].rank);
    }
  ds_model_free(m);
}

/* Sum of the plan's all-reduce bytes. */
static double allreduce_bytes(const struct ds_hook_plan *p) {
  double b = 0;
  for (int32_t i = 0; i < p->n; i++)
    if (p->op[i].where == DS_HOOK_ALLREDUCE) b += p->op[i].bytes;
  return b;
}

Test(comm_hook, powersgd_allreduce_bytes_match_the_formula) {
  /* One bucket of the four tensors, fp32. sum(n r + m r) over compressed
   * tensors + sum(numel) of the rest:
   *   rank 2: (256 + 1024) 2 + (64 + 144) 2 + 256 + 32 = 2560 + 416 + 288
   *           = 3264 elements: P 640, Q 2336, uncompressed 288;
   *   rank 1: 1280 + 208 + (4 + 8) + 256 = 1756: P 324, Q 1176, rest 256. */
  struct ds_model *m = ds_test_model("tests/data/psgd-model.yaml");
  struct ds_compute c = test_gpu();
  int32_t idx[] = {3, 2, 1, 0}; /* gradient-ready order */
  struct ds_hook_plan p;
  ds_comm_hook_plan(&(struct ds_comm_hook){DS_HOOK_POWERSGD, 2}, m, &c, idx, 4, 0, &p);
  cr_assert_float_eq(allreduce_bytes(&p), 3264 * 4.0, 1e-6);
  const char *ars[] = {"uncompressed", "p", "q"};
  const double ar_bytes[] = {288 * 4, 640 * 4, 2336 * 4};
  int k = 0;
  for (int32_t i = 0; i < p.n; i++) {
    if (p.op[i].where != DS_HOOK_ALLREDUCE) continue;
    cr_assert_str_eq(p.op[i].what, ars[k]);
    cr_assert_float_eq(p.op[i].bytes, ar_bytes[k], 1e-6, "%s", ars[k]);
    k++;
  }
  cr_assert_eq(k, 3);
  cr_assert(p.blocks_backward);
  ds_comm_hook_plan(&(struct ds_comm_hook){DS_HOOK_POWERSGD, 1}, m, &c, idx, 4, 0, &p);
  cr_assert_float_eq(allreduce_bytes(&p), 1756 * 4.0, 1e-6);
  /* Warm-up (start_powerSGD_iter): div_ (reads and writes 4N bytes) and
   * the vanilla all-reduce of N = 271,648 elements. */
  ds_comm_hook_plan(&(struct ds_comm_hook){DS_HOOK_POWERSGD, 2}, m, &c, idx, 4, 1, &p);
  cr_assert_eq(p.n, 2);
  cr_assert_str_eq(p.op[0].what, "allreduce_div");
  cr_assert_float_eq(p.op[0].bytes, 2 * 271648 * 4.0, 1e-6);
  cr_assert_float_eq(p.op[1].bytes, 271648 * 4.0, 1e-6);
  cr_assert(!p.blocks_backward);
  /* PyTorch 1.9's _allreduce_fut: the all-reduce first, div_ in its
   * callback (on the callback's stream), the same bytes */
  ds_comm_hook_plan(&(struct ds_comm_hook){DS_HOOK_POWERSGD, 2}, m, &c, idx, 4,
                    DS_HOOK_WARMUP_DIV_AFTER, &p);
  cr_assert_eq(p.n, 2);
  cr_assert_eq(p.op[0].where, DS_HOOK_ALLREDUCE);
  cr_assert_float_eq(p.op[0].bytes, 271648 * 4.0, 1e-6);
  cr_assert_eq(p.op[1].where, DS_HOOK_CALLBACK);
  cr_assert_str_eq(p.op[1].what, "allreduce_div");
  cr_assert_float_eq(p.op[1].bytes, 2 * 271648 * 4.0, 1e-6);
  cr_assert_eq(p.pg_calls, 1);
  ds_model_free(m);
}

Test(comm_hook, orthogonalisation_flops) {
  /* l0.weight alone (256 x 1024): Q is 1024 x r. Gram-Schmidt (rank <= 2,
   * or half precision): a r (2r + 1) FLOPs in 6r - 4 kernels; QR (fp32,
   * rank > 2, torch.linalg.qr = geqrf + orgqr): 4 a r^2 - 4/3 r^3. */
  struct ds_model *m = ds_test_model("tests/data/psgd-model.yaml");
  struct ds_compute c = test_gpu();
  int32_t idx[] = {0};
  struct ds_hook_plan p;
  ds_comm_hook_plan(&(struct ds_comm_hook){DS_HOOK_POWERSGD, 2}, m, &c, idx, 1, 0, &p);
  cr_assert_str_eq(p.op[1].what, "psgd_orth_q");
  cr_assert_float_eq(p.op[1].flops, 1024.0 * 2 * 5, 1e-6);
  cr_assert_eq(p.op[1].kernels, 6 * 2 - 4);
  ds_comm_hook_plan(&(struct ds_comm_hook){DS_HOOK_POWERSGD, 4}, m, &c, idx, 1, 0, &p);
  cr_assert_float_eq(p.op[1].flops, 4 * 1024.0 * 16 - 4.0 / 3 * 64, 1e-6);
  cr_assert_eq(p.op[1].kernels, 2);
  c.dtype = DS_DTYPE_FP16;
  ds_comm_hook_plan(&(struct ds_comm_hook){DS_HOOK_POWERSGD, 4}, m, &c, idx, 1, 0, &p);
  cr_assert_float_eq(p.op[1].flops, 1024.0 * 4 * 9, 1e-6);
  cr_assert_eq(p.op[1].kernels, 6 * 4 - 4);
  ds_model_free(m);
}

Test(comm_hook, powersgd_schedule_by_hand) {
  /* psgd model, rank 2, fp32, first cap 36,992 B: bucket 0 = l1.small
   * (uncompressed, 32) + l1.weight (64 x 144), ready after l1's backward;
   * bucket 1 = l0.bias (256) + l0.weight (256 x 1024), after l0's. */
  struct ds_model *m = ds_test_model("tests/data/psgd-model.yaml");
  struct ds_compute c = test_gpu();
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 36992, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  cr_assert_eq(b.n, 2);
  struct ds_schedule *s = build(m, &c, &b, (struct ds_comm_hook){DS_HOOK_POWERSGD, 2}, 1);
  /* per rank: (host launch, fwd) x2, loss, bwd l1, its copy into the
   * bucket, 10 hook ops and the host's synchronize, bwd l0, its copy, 10
   * hook ops and the synchronize, the two copies back to .grad, step */
  cr_assert_eq(s->n_ops, 2 * 34);
  const char *b0[] = {"bucket0.psgd_prep", "bucket0.psgd_orth_q", "bucket0.psgd_p_gemm",
                      "bucket0.uncompressed", "bucket0.psgd_unpack", "bucket0.p",
                      "bucket0.psgd_orth_p", "bucket0.psgd_q_gemm", "bucket0.q",
                      "bucket0.psgd_decompress"};
  const enum ds_stream st[] = {DS_STREAM_COMPUTE, DS_STREAM_COMPUTE, DS_STREAM_COMPUTE,
                               DS_STREAM_COMM, DS_STREAM_COPY, DS_STREAM_COMM,
                               DS_STREAM_COPY, DS_STREAM_COPY, DS_STREAM_COMM,
                               DS_STREAM_COPY};
  for (int k = 0; k < 10; k++) {
    cr_assert_str_eq(s->ops[7 + k].name, b0[k]);
    cr_assert_eq(s->ops[7 + k].stream, st[k], "%s", b0[k]);
    /* each after the one before (an all-reduce also after the last one) */
    cr_assert_eq(ds_schedule_deps(s, &s->ops[7 + k])[0], 6 + k, "%s", b0[k]);
  }
  /* Three collectives per bucket: ids (bucket) * 3 + j. */
  cr_assert_eq(s->ops[find(s, "bucket0.uncompressed")].coll, 0);
  cr_assert_eq(s->ops[find(s, "bucket0.q")].coll, 2);
  cr_assert_eq(s->ops[find(s, "bucket1.p")].coll, 4);
  /* bytes: bucket 0 U 32, P 64*2, Q 144*2; bucket 1 U 256, P 256*2, Q 1024*2 */
  cr_assert_float_eq(s->ops[find(s, "bucket0.uncompressed")].bytes, 32 * 4.0, 1e-9);
  cr_assert_float_eq(s->ops[find(s, "bucket0.p")].bytes, 128 * 4.0, 1e-9);
  cr_assert_float_eq(s->ops[find(s, "bucket0.q")].bytes, 288 * 4.0, 1e-9);
  cr_assert_float_eq(s->ops[find(s, "bucket1.uncompressed")].bytes, 256 * 4.0, 1e-9);
  cr_assert_float_eq(s->ops[find(s, "bucket1.p")].bytes, 512 * 4.0, 1e-9);
  cr_assert_float_eq(s->ops[find(s, "bucket1.q")].bytes, 2048 * 4.0, 1e-9);
  /* Durations (memory bound on TestGPU, B / 1e6 us), bucket 0, N = 9248:
   *   prep: add_ 3N + clone 2N + cat 2U (U = 32) = 20 * 9248 + 8 * 32
   *         words = 185,216 B;
   *   P = M Q: 2 n m r = 36,864 FLOPs, (n m + n r + m r) 4 = 38,528 B;
   *   orth_q (a = 144, r = 2): 1440 FLOPs; bytes (15 a + 2) 4 = 8648
   *         (norm a, divide 2a per column; the projection 2a + 7ak + 2k);
   *   decompress: Q.div_ 2 * 288 * 4 + P Q^T 38,528 + error 3N * 4
   *         = 2304 + 38528 + 110976 = 151,808 B. */
  size_t i = find(s, "bucket0.psgd_prep");
  cr_assert_float_eq(s->ops[i].dur_us, 0.185216, 1e-12);
  i = find(s, "bucket0.psgd_p_gemm");
  cr_assert_float_eq(s->ops[i].flops, 36864, 1e-9);
  cr_assert_float_eq(s->ops[i].dur_us, 0.038528, 1e-12);
  cr_assert_float_eq(s->ops[find(s, "bucket0.psgd_q_gemm")].flops, 36864, 1e-9);
  i = find(s, "bucket0.psgd_orth_q");
  cr_assert_float_eq(s->ops[i].flops, 1440, 1e-9);
  cr_assert_float_eq(s->ops[i].dur_us, 0.008648, 1e-12);
  cr_assert_float_eq(s->ops[find(s, "bucket0.psgd_orth_p")].flops, 640, 1e-9);
  i = find(s, "bucket0.psgd_decompress");
  cr_assert_float_eq(s->ops[i].dur_us, 0.151808, 1e-12);
  cr_assert_float_eq(s->ops[i].flops, 36864, 1e-9);
  /* bucket 1's P = M Q: 1,048,576 FLOPs (0.105 us at 10 TFLOPS) but
   * (262144 + 512 + 2048) 4 = 1,058,816 B: 1.058816 us. */
  cr_assert_float_eq(s->ops[find(s, "bucket1.psgd_p_gemm")].dur_us, 1.058816, 1e-12);
  /* torch.cuda.synchronize in decompress runs on the autograd thread (the
   * hook's callbacks run inline: NCCL's futures complete at enqueue): a
   * 0 us host op (17) after every stream's tail, the compute stream's P =
   * M Q (op 9), the Q all-reduce (15) and the decompress (16); every later
   * host op follows it on the host stream (the old code had no such op:
   * the host ran on through the synchronize). l0's backward (op 18) waits
   * for bucket 0's decompress (op 16) as well as for the compute stream's
   * last op (P = M Q, op 9). finalize_backward's first copy back waits for
   * the compute stream (bucket 1's P = M Q, op 22), bucket 1's decompress
   * (op 29) and bucket 0's last op (op 16); the step for every stream's
   * last op and the host's last, bucket 1's synchronize (op 30). */
  cr_assert_str_eq(s->ops[17].name, "bucket0.psgd_sync");
  cr_assert_eq(s->ops[17].stream, DS_STREAM_HOST);
  cr_assert_float_eq(s->ops[17].dur_us, 0, 0);
  assert_deps(s, 17, (int64_t[]){9, 15, 16}, 3);
  cr_assert_str_eq(s->ops[18].name, "l0");
  assert_deps(s, 18, (int64_t[]){9, 16}, 2);
  cr_assert_str_eq(s->ops[30].name, "bucket1.psgd_sync");
  assert_deps(s, 30, (int64_t[]){22, 28, 29}, 3);
  cr_assert_str_eq(s->ops[31].name, "bucket0.to_grad");
  assert_deps(s, 31, (int64_t[]){22, 29, 16}, 3);
  cr_assert_eq(s->ops[33].kind, DS_OP_STEP);
  assert_deps(s, 33, (int64_t[]){32, 28, 29, 30}, 4);
  ds_schedule_free(s);
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
}

/* powerSGD_hook.py calls dist.all_reduce three times per bucket whatever
 * it holds: the uncompressed buffer (torch.tensor([]) when every tensor
 * compresses), then P and Q in the callbacks (empty when none does). An
 * empty one moves nothing and is left out of the ops, but its
 * ProcessGroupNCCL call costs host_collective like the others. psgd
 * model, one tensor a bucket (caps of 1 byte), host_collective 1 us: each
 * bucket's call is 3 us, the uncompressed-only buckets (l0.bias, l1.small
 * at rank 2) included; the warm-up's one all-reduce 1 us, fp16's 1 us.
 * (The old code charged 1 call for l0.bias's bucket, 2 for l0.weight's:
 * fails.) */
Test(comm_hook, powersgd_calls_three_all_reduces_per_bucket) {
  struct ds_model *m = ds_test_model("tests/data/psgd-model.yaml");
  struct ds_compute c = test_gpu();
  c.params.host_collective_ns = 1000;
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 1, 1, DS_BUCKETS_READY, &b), DS_OK);
  cr_assert_eq(b.n, 4);
  const struct { struct ds_comm_hook hook; int32_t iter; double us; } cases[] = {
      {{DS_HOOK_POWERSGD, 2}, 1, 3}, {{DS_HOOK_POWERSGD, 2}, 0, 1}, {{DS_HOOK_FP16, 0}, 1, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    struct ds_schedule *s = build(m, &c, &b, cases[k].hook, cases[k].iter);
    for (int32_t j = 0; j < b.n; j++) {
      char name[32];
      snprintf(name, sizeof name, "bucket%d.call", j);
      cr_assert_float_eq(s->ops[find(s, name)].dur_us, cases[k].us, 1e-9, "case %zu %s", k,
                         name);
    }
    ds_schedule_free(s);
  }
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
}

/* PowerSGD's GEMMs are torch.matmul's on the gradients: priced at the
 * matmul rate of the gradients' math (grad_gemm_flops_per_s), not at the
 * unclassed peak and typical flops_efficiency. At 2.5 TFLOP/s, bucket 1's
 * P = M Q (1,048,576 FLOPs, 1,058,816 B, the bytes made cheap) is
 * compute-bound: 0.4194304 us, where the unclassed 10 TFLOP/s gives about
 * 0.105 us. */
Test(comm_hook, powersgd_gemms_run_at_the_matmul_rate) {
  struct ds_model *m = ds_test_model("tests/data/psgd-model.yaml");
  struct ds_compute c = test_gpu();
  c.grad_gemm_flops_per_s = 2.5e12;
  c.mem_bw_bytes_per_s *= 1000; /* the bytes no longer bind */
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 36992, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  struct ds_schedule *s = build(m, &c, &b, (struct ds_comm_hook){DS_HOOK_POWERSGD, 2}, 1);
  size_t i = find(s, "bucket1.psgd_p_gemm");
  cr_assert_float_eq(s->ops[i].flops, 1048576, 1e-9);
  cr_assert_float_eq(s->ops[i].dur_us, 1048576 / 2.5e12 * 1e6, 1e-9, "%.9f",
                     s->ops[i].dur_us);
  ds_schedule_free(s);
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
}

/* Under --amp the gradients stay fp32: the hook's GEMMs run at the fp32
 * matmul rate while the model's matmuls run at the half type's; under
 * --dtype fp16 the gradients are half and so are the hook's GEMMs. */
Test(comm_hook, powersgd_gemms_take_the_gradients_math) {
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &t, &err), DS_OK, "%s", err.msg);
  struct ds_compute fp32, amp, half;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &fp32, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_FP16, &amp, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP16, DS_AMP_NONE, &half, &err), DS_OK, "%s",
               err.msg);
  ds_topo_free(t);
  double fp32_mm = fp32.class_peak_flops_per_s[DS_LAYER_MATMUL] *
                   fp32.class_efficiency[DS_LAYER_MATMUL];
  double half_mm = half.class_peak_flops_per_s[DS_LAYER_MATMUL] *
                   half.class_efficiency[DS_LAYER_MATMUL];
  cr_assert_gt(half_mm, fp32_mm); /* the test means something only if they differ */
  cr_assert_float_eq(fp32.grad_gemm_flops_per_s, fp32_mm, 1e-3);
  cr_assert_float_eq(amp.grad_gemm_flops_per_s, fp32_mm, 1e-3);
  cr_assert_float_eq(amp.class_peak_flops_per_s[DS_LAYER_MATMUL] *
                         amp.class_efficiency[DS_LAYER_MATMUL],
                     half_mm, 1e-3);
  cr_assert_float_eq(half.grad_gemm_flops_per_s, half_mm, 1e-3);
}

Test(comm_hook, memory_of_the_hooks) {
  /* psgd model, fp32, the two buckets above, rank 2:
   *   error feedback: every gradient, 271,648 * 4 = 1,086,592 B;
   *   P and Q: ((64 + 144) 2 + (256 + 1024) 2) 4 = 2976 * 4 = 11,904 B;
   *   the largest clone + cat: bucket 1, (262,400 + 256) 4 = 1,050,624 B.
   * fp16 holds nothing all iteration: its half copy of a bucket comes
   * when the bucket is ready, 2 x 9,248 after l1's backward (bucket 0)
   * and 2 x 262,400 after l0's (bucket 1), and goes when its all-reduce
   * has completed (tests/test_memory.c walks it); none for fp16
   * gradients. */
  struct ds_model *m = ds_test_model("tests/data/psgd-model.yaml");
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 36992, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  struct ds_comm_hook psgd = {DS_HOOK_POWERSGD, 2}, fp16 = {DS_HOOK_FP16, 0};
  cr_assert_float_eq(ds_comm_hook_memory(&psgd, m, DS_DTYPE_FP32, &b),
                     1086592 + 11904 + 1050624, 1e-6);
  cr_assert_float_eq(ds_comm_hook_memory(&fp16, m, DS_DTYPE_FP32, &b), 0, 1e-6);
  double ready[2];
  ds_comm_hook_ready_bytes(&fp16, m, DS_DTYPE_FP32, &b, ready);
  cr_assert_float_eq(ready[1], 2 * 9248.0, 1e-9);
  cr_assert_float_eq(ready[0], 2 * 262400.0, 1e-9);
  ds_comm_hook_ready_bytes(&fp16, m, DS_DTYPE_FP16, &b, ready);
  cr_assert_float_eq(ready[0] + ready[1], 0, 1e-9);
  ds_comm_hook_ready_bytes(&psgd, m, DS_DTYPE_FP32, &b, ready);
  cr_assert_float_eq(ready[0] + ready[1], 0, 1e-9, "PowerSGD's are held all iteration");
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
}

Test(comm_hook, model_shapes_are_checked) {
  /* A shape whose product is not numel names the file, line and key. */
  char dir[] = "/tmp/ddpsim-hook-XXXXXX", path[256];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/m.yaml", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("schema_version: 1\nname: bad\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
        "layers:\n  - name: l0\n    fwd_flops: 1\n    bwd_flops: 1\n    fwd_bytes: 0\n"
        "    act_bytes: 0\n    params:\n      - {name: w, numel: 13, shape: [3, 4]}\n", f);
  fclose(f);
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_model_load(path, &m, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "m.yaml:13:") && strstr(err.msg, "shape"), "%s", err.msg);
  unlink(path);
  rmdir(dir);
}

#define TINY "--topo tests/data/tiny-topo.yaml --world-size 2 "

Test(comm_hook, cli_bad_hooks_exit_2) {
  const char *bad[] = {"fp8", "powersgd:0", "powersgd:x", "powersgd:1025"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char args[256];
    snprintf(args, sizeof args, TINY "--model tests/data/psgd-model.yaml --comm-hook %s",
             bad[i]);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 2, "%s: %d %s", bad[i], r.status, r.err);
    cr_assert(strstr(r.err, "--comm-hook") && strstr(r.err, bad[i]), "%s", r.err);
    ds_test_release(&r);
  }
  /* PowerSGD on a model without shapes names the first tensor. */
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(),
                                        TINY "--model tests/data/tiny-model.yaml "
                                        "--comm-hook powersgd:2");
  cr_assert_eq(r.status, 2, "%d %s", r.status, r.err);
  cr_assert(strstr(r.err, "tiny-model.yaml") && strstr(r.err, "l0.weight has no shape"), "%s",
            r.err);
  ds_test_release(&r);
}

Test(comm_hook, cli_schedule_shows_the_hook_ops) {
  char dir[] = "/tmp/ddpsim-hook-XXXXXX", args[512], path[256];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/s.csv", dir);
  snprintf(args, sizeof args, TINY "--model tests/data/psgd-model.yaml --comm-hook "
           "powersgd:2 --format csv --schedule %s", path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "comm_hook=powersgd:2"), "%s", r.out);
  char *text = ds_test_slurp(path);
  cr_assert(strstr(text, ",compute,bwd,bucket0.psgd_p_gemm,"), "%s", text);
  cr_assert(strstr(text, ",copy,bwd,bucket0.psgd_decompress,"), "%s", text);
  cr_assert(strstr(text, ",comm,allreduce,bucket0.q,"), "%s", text);
  free(text);
  ds_test_release(&r);
  unlink(path);
  rmdir(dir);
}

Test(comm_hook, fp16_lowers_bert_communication_on_two_nodes) {
  /* BERT-base on 2node-ib (16 ranks): the fp16 hook halves every bucket's
   * bytes, so the all-reduces' time falls, but not to half: each still
   * pays the ring's 2(N-1) hop latencies, 144.4 us (`ddpsim topo
   * 2node-ib`), about what a 27 MiB bucket's transfer takes over the 8
   * rails, 30/16 * 28.35 MB / 400 GB/s = 133 us. Expected, because only the
   * transfer halves: about (144 + 66) / (144 + 133) = 0.76 of the time. */
  const char *base = "--topo 2node-ib --model bert-base --format csv";
  struct ds_test_result a = ds_test_cli(base);
  char args[256];
  snprintf(args, sizeof args, "%s --comm-hook fp16", base);
  struct ds_test_result h = ds_test_cli(args);
  cr_assert_eq(a.status, 0, "%s", a.err);
  cr_assert_eq(h.status, 0, "%s", h.err);
  double none_ms = ds_test_csv_num(a.out, "comm_ms", 0);
  double fp16_ms = ds_test_csv_num(h.out, "comm_ms", 0);
  cr_assert(fp16_ms > 0.5 * none_ms && fp16_ms < 0.85 * none_ms, "comm %g ms (fp16) vs %g ms", fp16_ms,
            none_ms);
  cr_assert(strstr(h.out, ",comm_hook=fp16,"), "%s", h.out);
  ds_test_release(&a);
  ds_test_release(&h);
}
