/*
 * DDP communication hooks: the ops one bucket's hook adds to the schedule
 * and the memory it holds (see comm_hook.h for the PyTorch behaviour).
 * Pure arithmetic on the model file and the roofline: the plan of a bucket
 * depends only on its tensors, the dtype and the hook.
 */
#include "sim/train/comm_hook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/ddp.h"

ds_status ds_comm_hook_parse(const char *flag, const char *text, struct ds_comm_hook *out,
                             struct ds_err *err) {
  static const char prefix[] = "powersgd:";
  memset(out, 0, sizeof *out);
  if (strcmp(text, "none") == 0) return DS_OK;
  if (strcmp(text, "fp16") == 0) {
    out->kind = DS_HOOK_FP16;
    return DS_OK;
  }
  if (strcmp(text, "bf16") == 0) {
    out->kind = DS_HOOK_BF16;
    return DS_OK;
  }
  if (strncmp(text, prefix, sizeof prefix - 1) == 0) {
    const char *r = text + sizeof prefix - 1;
    char *end = NULL;
    long v = r[0] >= '0' && r[0] <= '9' ? strtol(r, &end, 10) : 0;
    if (end && *end == '\0' && v >= 1 && v <= DS_POWERSGD_MAX_RANK) {
      out->kind = DS_HOOK_POWERSGD;
      out->rank = (int32_t)v;
      return DS_OK;
    }
    return ds_err_set(err, DS_EUSAGE,
                      "option %s: expected powersgd:RANK with RANK an integer from 1 to %d "
                      "(matrix_approximation_rank), got \"%s\"",
                      flag, DS_POWERSGD_MAX_RANK, text);
  }
  return ds_err_set(err, DS_EUSAGE,
                    "option %s: expected one of none, fp16, bf16, powersgd:RANK, got \"%s\"",
                    flag, text);
}

void ds_comm_hook_name(const struct ds_comm_hook *h, char *buf, size_t cap) {
  switch (h->kind) {
  case DS_HOOK_FP16: snprintf(buf, cap, "fp16"); break;
  case DS_HOOK_BF16: snprintf(buf, cap, "bf16"); break;
  case DS_HOOK_POWERSGD: snprintf(buf, cap, "powersgd:%d", h->rank); break;
  default: snprintf(buf, cap, "none"); break;
  }
}

ds_status ds_comm_hook_check_model(const struct ds_comm_hook *h, const struct ds_model *m,
                                   struct ds_err *err) {
  if (h->kind != DS_HOOK_POWERSGD) return DS_OK;
  for (int32_t i = 0; i < m->n_params; i++)
    if (m->params[i].ndim == 0)
      return ds_err_set(err, DS_EUSAGE,
                        "--comm-hook powersgd:%d: %s: tensor %s has no shape (PowerSGD views "
                        "each tensor as shape[0] x rest): add shape: [...] to its params entry",
                        h->rank, m->path ? m->path : m->name, m->params[i].name);
  return DS_OK;
}

void ds_psgd_view(const struct ds_param *p, int32_t rank, struct ds_psgd_tensor *out) {
  /* tensor.view(tensor.shape[0], -1); a 1-D tensor is k x 1. */
  out->n = p->ndim > 0 ? p->rows : p->numel;
  out->m = p->numel / out->n;
  int64_t r = rank;
  if (out->n < r) r = out->n;
  if (out->m < r) r = out->m;
  out->r = r;
  /* _should_compress: worth it when the low-rank pair is smaller than the
   * tensor by at least min_compression_rate. */
  out->compress = (double)(out->n + out->m) * (double)r * DS_POWERSGD_MIN_COMPRESSION_RATE <
                  (double)out->n * (double)out->m;
}

/* Accumulates kernels into one op. */
static void add_kernel(struct ds_hook_op *op, double flops, double bytes) {
  op->flops += flops;
  op->bytes += bytes;
  op->kernels++;
}

/* Orthogonalising an a x r matrix (_orthogonalize): Gram-Schmidt for rank
 * <= 2 or half precision, column by column (norm, divide; then project the
 * k = r-1-i later columns out: multiply, sum, multiply, subtract), a r
 * (2r + 1) FLOPs in 6r - 4 kernels; otherwise torch.linalg.qr (geqrf +
 * orgqr, Householder: 4 a r^2 - 4/3 r^3 FLOPs, the matrix read and written
 * by each). */
static void orthogonalize(struct ds_hook_op *op, double a, int64_t r, int half, int d) {
  if (r <= 2 || half) {
    for (int64_t i = 0; i < r; i++) {
      double k = (double)(r - 1 - i);
      add_kernel(op, 2 * a, a * d);  /* norm */
      add_kernel(op, a, 2 * a * d);  /* col /= norm */
      if (k == 0) continue;
      add_kernel(op, a * k, (a + 2 * a * k) * d); /* col * rest */
      add_kernel(op, a * k, (a * k + k) * d);     /* sum over rows */
      add_kernel(op, a * k, (k + a + a * k) * d); /* * col */
      add_kernel(op, a * k, 3 * a * k * d);       /* rest -= */
    }
    return;
  }
  double rr = (double)r;
  add_kernel(op, 2 * a * rr * rr - 2 * rr * rr * rr / 3, 2 * a * rr * d); /* geqrf */
  add_kernel(op, 2 * a * rr * rr - 2 * rr * rr * rr / 3, 2 * a * rr * d); /* orgqr */
}

static struct ds_hook_op *new_op(struct ds_hook_plan *p, enum ds_hook_where where,
                                 const char *what) {
  struct ds_hook_op *op = &p->op[p->n++];
  memset(op, 0, sizeof *op);
  op->where = where;
  snprintf(op->what, sizeof op->what, "%s", what);
  return op;
}

static void allreduce(struct ds_hook_plan *p, const char *what, double bytes) {
  new_op(p, DS_HOOK_ALLREDUCE, what)->bytes = bytes;
}

/* The roofline of the summed kernels, one overhead per kernel. Their FLOPs
 * are torch.matmul's and linalg.qr's on the gradients, so they run at the
 * matmul rate of the gradients' math (fp32 unless --tf32 all, as PyTorch's
 * matmul.allow_tf32 defaults to False, also under --amp, whose gradients
 * stay fp32; the half type under --dtype fp16/bf16: ds_compute_grad_gemm_ns),
 * not at the topology's unclassed peak and typical flops_efficiency; the
 * elementwise kernels among them are bound by their bytes either way. */
static void price(const struct ds_compute *c, struct ds_hook_op *op) {
  if (op->where == DS_HOOK_ALLREDUCE) return;
  op->dur_ns = ds_compute_grad_gemm_ns(c, op->flops, op->bytes) +
               (op->kernels - 1) * c->params.kernel_overhead_ns;
}

static void plan_half(enum ds_dtype half, const struct ds_compute *c, double numel,
                      struct ds_hook_plan *p) {
  int d = ds_dtype_bytes(c->dtype);
  int cast = c->dtype != half; /* .to() of a tensor already that type is itself */
  struct ds_hook_op *op = new_op(p, DS_HOOK_IN_BACKWARD,
                                 half == DS_DTYPE_FP16 ? "fp16_compress" : "bf16_compress");
  if (cast) add_kernel(op, 0, numel * (d + 2)); /* buffer.to(half) */
  add_kernel(op, 0, 4 * numel);                 /* .div_(world_size) */
  allreduce(p, "", 2 * numel);
  if (cast) /* decompress: bucket.buffer().copy_(result) */
    add_kernel(new_op(p, DS_HOOK_CALLBACK,
                      half == DS_DTYPE_FP16 ? "fp16_decompress" : "bf16_decompress"),
               0, numel * (2 + d));
}

static void plan_powersgd(int32_t rank, const struct ds_model *m, const struct ds_compute *c,
                          const int32_t *idx, int32_t count, struct ds_hook_plan *p) {
  int d = ds_dtype_bytes(c->dtype);
  int half = c->dtype != DS_DTYPE_FP32;
  double numel = 0, unc = 0, ps = 0, qs = 0;
  int32_t n_unc = 0, n_comp = 0;
  for (int32_t i = 0; i < count; i++) {
    const struct ds_param *t = &m->params[idx[i]];
    struct ds_psgd_tensor v;
    ds_psgd_view(t, rank, &v);
    numel += (double)t->numel;
    if (v.compress) {
      ps += (double)(v.n * v.r);
      qs += (double)(v.m * v.r);
      n_comp++;
    } else {
      unc += (double)t->numel;
      n_unc++;
    }
  }
  struct ds_hook_op *prep = new_op(p, DS_HOOK_IN_BACKWARD, "psgd_prep");
  add_kernel(prep, 0, 3 * numel * d);          /* input.add_(error) */
  add_kernel(prep, 0, 2 * numel * d);          /* input_tensor_cp = clone */
  if (n_unc) add_kernel(prep, 0, 2 * unc * d); /* torch.cat(uncompressed) */
  struct ds_hook_op *orth_q = NULL, *p_gemm = NULL, *orth_p = NULL, *q_gemm = NULL;
  if (n_comp) {
    orth_q = new_op(p, DS_HOOK_IN_BACKWARD, "psgd_orth_q");
    p_gemm = new_op(p, DS_HOOK_IN_BACKWARD, "psgd_p_gemm");
  }
  if (n_unc) {
    allreduce(p, "uncompressed", unc * d);
    struct ds_hook_op *unpack = new_op(p, DS_HOOK_CALLBACK, "psgd_unpack");
    add_kernel(unpack, 0, 2 * unc * d); /* .div_(world_size) */
    for (int32_t i = 0; i < count; i++) {
      struct ds_psgd_tensor v;
      ds_psgd_view(&m->params[idx[i]], rank, &v);
      if (!v.compress) add_kernel(unpack, 0, 2 * (double)m->params[idx[i]].numel * d);
    }
  }
  if (n_comp) {
    allreduce(p, "p", ps * d);
    orth_p = new_op(p, DS_HOOK_CALLBACK, "psgd_orth_p");
    q_gemm = new_op(p, DS_HOOK_CALLBACK, "psgd_q_gemm");
    allreduce(p, "q", qs * d);
  }
  struct ds_hook_op *dec = new_op(p, DS_HOOK_CALLBACK, "psgd_decompress");
  if (n_comp) add_kernel(dec, 0, 2 * qs * d); /* qs.div_(world_size) */
  for (int32_t i = 0; i < count; i++) {
    struct ds_psgd_tensor v;
    ds_psgd_view(&m->params[idx[i]], rank, &v);
    if (!v.compress) continue;
    double n = (double)v.n, mm = (double)v.m, r = (double)v.r;
    double gemm_flops = 2 * n * mm * r, gemm_bytes = (n * mm + n * r + mm * r) * d;
    orthogonalize(orth_q, mm, v.r, half, d);
    add_kernel(p_gemm, gemm_flops, gemm_bytes); /* P = M Q */
    orthogonalize(orth_p, n, v.r, half, d);
    add_kernel(q_gemm, gemm_flops, gemm_bytes); /* Q = M^T P */
    add_kernel(dec, gemm_flops, gemm_bytes);    /* M = P Q^T */
  }
  add_kernel(dec, 0, 3 * numel * d); /* error = input_tensor_cp - input */
  /* decompress ends with torch.cuda.synchronize(device) */
  p->blocks_backward = 1;
  /* powerSGD_hook.py calls dist.all_reduce three times whatever the
   * bucket holds: the uncompressed buffer is `torch.tensor([])` when no
   * tensor is left uncompressed, and P's and Q's (empty without a
   * compressed tensor) are all-reduced in the callbacks unconditionally */
  p->pg_calls = 3;
}

void ds_comm_hook_plan(const struct ds_comm_hook *h, const struct ds_model *m,
                       const struct ds_compute *c, const int32_t *idx, int32_t count,
                       enum ds_hook_warmup warmup, struct ds_hook_plan *out) {
  int d = ds_dtype_bytes(c->dtype);
  double numel = 0;
  for (int32_t i = 0; i < count; i++) numel += (double)m->params[idx[i]].numel;
  memset(out, 0, sizeof *out);
  switch (h->kind) {
  case DS_HOOK_FP16: plan_half(DS_DTYPE_FP16, c, numel, out); break;
  case DS_HOOK_BF16: plan_half(DS_DTYPE_BF16, c, numel, out); break;
  case DS_HOOK_POWERSGD:
    if (warmup == DS_HOOK_NO_WARMUP) {
      plan_powersgd(h->rank, m, c, idx, count, out);
      break;
    }
    /* default._allreduce_fut: tensor.div_(world_size), then all-reduce;
     * 1.9's: the all-reduce, then div_ in its callback (comm_hook.h) */
    if (warmup == DS_HOOK_WARMUP_DIV_FIRST)
      add_kernel(new_op(out, DS_HOOK_IN_BACKWARD, "allreduce_div"), 0, 2 * numel * d);
    allreduce(out, "", numel * d);
    if (warmup == DS_HOOK_WARMUP_DIV_AFTER)
      add_kernel(new_op(out, DS_HOOK_CALLBACK, "allreduce_div"), 0, 2 * numel * d);
    break;
  default: allreduce(out, "", numel * d); break;
  }
  for (int32_t i = 0; i < out->n; i++) {
    price(c, &out->op[i]);
    if (h->kind != DS_HOOK_POWERSGD || warmup != DS_HOOK_NO_WARMUP)
      out->pg_calls += out->op[i].where == DS_HOOK_ALLREDUCE;
  }
}

int32_t ds_comm_hook_colls_per_bucket(const struct ds_comm_hook *h) {
  return h->kind == DS_HOOK_POWERSGD ? 3 : 1;
}

void ds_comm_hook_ready_bytes(const struct ds_comm_hook *h, const struct ds_model *m,
                              enum ds_dtype dtype, const struct ds_buckets *bk,
                              double *per_layer) {
  for (int32_t l = 0; l < m->n_layers; l++) per_layer[l] = 0;
  int half = (h->kind == DS_HOOK_FP16 && dtype != DS_DTYPE_FP16) ||
             (h->kind == DS_HOOK_BF16 && dtype != DS_DTYPE_BF16);
  if (!half) return;
  for (int32_t b = 0; b < bk->n; b++) {
    double numel = 0;
    for (int32_t i = 0; i < bk->b[b].count; i++)
      numel += (double)m->params[bk->order[bk->b[b].first + i]].numel;
    per_layer[bk->b[b].ready_layer] += 2 * numel;
  }
}

double ds_comm_hook_memory(const struct ds_comm_hook *h, const struct ds_model *m,
                           enum ds_dtype dtype, const struct ds_buckets *bk) {
  int d = ds_dtype_bytes(dtype);
  double total = (double)m->total_numel;
  if (h->kind != DS_HOOK_POWERSGD) return 0; /* fp16/bf16: ds_comm_hook_ready_bytes */
  double pq = 0, worst = 0;
  for (int32_t b = 0; b < bk->n; b++) {
    double numel = 0, unc = 0;
    for (int32_t i = 0; i < bk->b[b].count; i++) {
      const struct ds_param *t = &m->params[bk->order[bk->b[b].first + i]];
      struct ds_psgd_tensor v;
      ds_psgd_view(t, h->rank, &v);
      numel += (double)t->numel;
      if (v.compress) pq += (double)((v.n + v.m) * v.r);
      else unc += (double)t->numel;
    }
    if (numel + unc > worst) worst = numel + unc; /* clone + cat while its hook runs */
  }
  return (total + pq + worst) * d;
}
