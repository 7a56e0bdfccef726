/*
 * From `ddpreal calibrate`'s measurements to its calibration file
 * (traces/calib_file.h): the GPUs' peaks, the fits (GSL), the values
 * written, the header that says how each was fitted, the atomic write and
 * the summary on stdout. Runs on rank 0 after the all-reduce sweep; it
 * touches no GPU.
 */
#include "calibrate_impl.h"
#include "collective.h"
#include "dev_cuda.h"
#include "traces/calib_file.h"

#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/atomic_file.h"
#include "base/textout.h"

/* Peaks of the GPUs ddpsim's table knows (topologies/gpus.yaml, which
 * cites glennklockwood.com/garden/processors for the dense rates and the
 * vendors' datasheets for memory). `match` and `also` must both occur in
 * the CUDA device name (cudaDeviceProp.name), `not` must not. */
struct peak_row {
  const char *match, *also, *not_;
  const char *table_name;
  double fp32_tflops, tf32_tflops, mem_gbps;
  double half_tflops; /* dense fp16/bf16 tensor rate */
};
static const struct peak_row peak_table[] = {
    {"H100", "", "PCIe", "H100-SXM5-80GB", 66.9, 494.7, 3350, 989.4},
    {"H200", "", "NVL", "H200-SXM-141GB", 66.9, 494.7, 4800, 989.4},
    {"A100", "80GB", "PCIe", "A100-SXM4-80GB", 19.5, 156, 2039, 312},
    {"A100", "40GB", "PCIe", "A100-SXM4-40GB", 19.5, 156, 1555, 312},
    {"V100", "", "PCIe", "V100-SXM2", 15.7, 0, 900, 125},
};

/* ---- fits (GSL) --------------------------------------------------------- */

/* R^2 and relative residuals of t = c0 + c1 x; weights w may be NULL. */
static void fit_stats(const double *x, const double *y, const double *w, size_t n,
                      struct linfit *f) {
  double sw = 0, swy = 0;
  for (size_t i = 0; i < n; i++) {
    double wi = w ? w[i] : 1;
    sw += wi;
    swy += wi * y[i];
  }
  double mean = swy / sw, ssr = 0, sst = 0, rel2 = 0;
  f->max_rel = 0;
  for (size_t i = 0; i < n; i++) {
    double wi = w ? w[i] : 1, r = f->c0 + f->c1 * x[i] - y[i], rel = r / y[i];
    ssr += wi * r * r;
    sst += wi * (y[i] - mean) * (y[i] - mean);
    rel2 += rel * rel;
    if (fabs(rel) > fabs(f->max_rel)) f->max_rel = rel;
  }
  f->r2 = sst > 0 ? 1 - ssr / sst : 0;
  f->rms_rel = sqrt(rel2 / (double)n);
}

static void fit_free(const double *x, const double *y, size_t n, struct linfit *f) {
  double cov00, cov01, cov11, sumsq;
  gsl_fit_linear(x, 1, y, 1, n, &f->c0, &f->c1, &cov00, &cov01, &cov11, &sumsq);
  fit_stats(x, y, NULL, n, f);
}

/* t - off = c1 x (the overhead fixed at off). */
static void fit_fixed(const double *x, const double *y, size_t n, double off,
                      struct linfit *f) {
  double *yy = (double *)malloc(n * sizeof *yy), cov11, sumsq;
  if (!yy) {
    memset(f, 0, sizeof *f);
    return;
  }
  for (size_t i = 0; i < n; i++) yy[i] = y[i] - off;
  gsl_fit_mul(x, 1, yy, 1, n, &f->c1, &cov11, &sumsq);
  f->c0 = off;
  free(yy);
  fit_stats(x, y, NULL, n, f);
}

/* Weighted by 1/t^2: least squares of the relative error. */
static void fit_relative(const double *x, const double *y, size_t n, struct linfit *f) {
  double *w = (double *)malloc(n * sizeof *w), cov00, cov01, cov11, chisq;
  if (!w) {
    memset(f, 0, sizeof *f);
    return;
  }
  for (size_t i = 0; i < n; i++) w[i] = 1.0 / (y[i] * y[i]);
  gsl_fit_wlinear(x, 1, w, 1, y, 1, n, &f->c0, &f->c1, &cov00, &cov01, &cov11, &chisq);
  fit_stats(x, y, w, n, f);
  free(w);
}

static const struct peak_row *peak_lookup(const char *name) {
  for (size_t i = 0; i < sizeof peak_table / sizeof *peak_table; i++) {
    const struct peak_row *p = &peak_table[i];
    if (strstr(name, p->match) && strstr(name, p->also) && !strstr(name, p->not_)) return p;
  }
  return NULL;
}

static void utc_now(char *buf, size_t cap) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Appends printf output to a growing text (for the file's header). */
struct text {
  char buf[8192];
  size_t len;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...) {
  if (t->len + 1 >= sizeof t->buf) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
  va_end(ap);
  if (n > 0) t->len += (size_t)n < sizeof t->buf - t->len ? (size_t)n : sizeof t->buf - t->len - 1;
}

ds_status ds__calibrate_finish(struct cal_ctx *c, const struct compute_meas *m, int32_t world,
                               int gpu_count, const struct ds_coll_point *pts, size_t n_pts,
                               struct ds_err *err) {
  const struct ds_calibrate_args *o = c->o;
  int shared = world > gpu_count;
  /* peaks */
  const struct peak_row *row = peak_lookup(m->gpu_name);
  int tf32 = o->fp32_math >= 0 ? o->fp32_math : m->have_tf32;
  if (tf32 && !m->have_tf32)
    return ds_err_set(err, DS_EIO, "--fp32-math tf32, but %s has no "
                      "cublasSetMathMode: use --fp32-math fp32", m->cublas);
  double peak = o->peak_tflops > 0 ? o->peak_tflops * 1e12
                : row ? (tf32 ? row->tf32_tflops : row->fp32_tflops) * 1e12 : 0;
  double mem_peak = o->mem_gbps > 0 ? o->mem_gbps * 1e9 : row ? row->mem_gbps * 1e9 : 0;
  if (!(peak > 0) || !(mem_peak > 0))
    return ds_err_set(err, DS_EUSAGE, "GPU '%s' is not in ddpreal's peak table "
                      "(or has no %s peak there); pass --peak-tflops (the %s peak) and "
                      "--mem-bw (GB/s)", m->gpu_name, tf32 ? "TF32" : "FP32",
                      tf32 ? "TF32" : "FP32");
  /* compute fits */
  size_t n = c->n_shapes;
  double *x = (double *)malloc(n * sizeof *x), *y = (double *)malloc(n * sizeof *y);
  if (!x || !y) {
    free(x);
    free(y);
    return ds_err_set(err, DS_ENOMEM, "out of memory");
  }
  struct compute_meas mm = *m;
  for (int math = 0; math < 1 + mm.have_tf32; math++) {
    for (size_t i = 0; i < n; i++) {
      x[i] = c->shapes[i].flops;
      y[i] = c->shapes[i].t_s[math];
    }
    fit_free(x, y, n, &mm.free_fit[math]);
    fit_fixed(x, y, n, mm.launch_ns * 1e-9, &mm.fixed_fit[math]);
  }
  free(x);
  free(y);
  /* The free least-squares fit is the roofline's own form; its intercept
   * is the per-kernel cost GEMMs really have (cuBLAS setup, small-shape
   * inefficiency), larger than an empty kernel's launch. Only when it comes
   * out below zero is the overhead fixed at the launch time instead. */
  int free_ok = mm.free_fit[tf32].c0 >= 0 && mm.free_fit[tf32].c1 > 0;
  const struct linfit *used = free_ok ? &mm.free_fit[tf32] : &mm.fixed_fit[tf32];
  double rate = 1.0 / used->c1;
  double sum_meas = 0, sum_model = 0; /* over the schedule's ops, one iteration */
  for (size_t i = 0; i < n; i++) {
    sum_meas += c->shapes[i].n_ops * c->shapes[i].t_s[tf32];
    sum_model += c->shapes[i].n_ops * (used->c0 + used->c1 * c->shapes[i].flops);
  }
  double mem_bw = mm.memcpy_bw > mm.kernel_bw ? mm.memcpy_bw : mm.kernel_bw;
  struct ds_calib cal;
  memset(&cal, 0, sizeof cal);
  /* the device measured, as CUDA names it (nvidia-smi prints the same):
   * ddpsim calls the efficiencies measured only on that GPU (sim/train/
   * calib.h ds_calib_gpu_fit) */
  snprintf(cal.gpu, sizeof cal.gpu, "%.63s", mm.gpu_name);
  cal.has_flops_efficiency = 1;
  cal.flops_efficiency = fmin(rate / peak, 1.0);
  cal.has_mem_efficiency = 1;
  cal.mem_efficiency = fmin(mem_bw / mem_peak, 1.0);
  cal.has_kernel_overhead = 1;
  cal.kernel_overhead_ns = used->c0 * 1e9;
  cal.has_fp32_math = 1;
  cal.fp32_uses_tf32 = tf32;
  /* By op class: each math's rate over that math's peak (the table's, or
   * --peak-tflops for the math it names); eff[] is indexed as
   * ds_calib_efficiency_keys, class * 3 + math (fp32 0, tf32 1). */
  enum { EFF_CONV = 0, EFF_MATMUL = 3 };
  double peak_of[2] = {row ? row->fp32_tflops * 1e12 : 0, row ? row->tf32_tflops * 1e12 : 0};
  if (o->peak_tflops > 0) peak_of[tf32] = o->peak_tflops * 1e12;
  double mm_rate[2] = {0, 0}, conv_rate[2] = {0, 0};
  for (int math = 0; math < 1 + mm.have_tf32; math++) {
    const struct linfit *f = mm.free_fit[math].c0 >= 0 && mm.free_fit[math].c1 > 0
                                 ? &mm.free_fit[math] : &mm.fixed_fit[math];
    mm_rate[math] = f->c1 > 0 ? 1.0 / f->c1 : 0;
    conv_rate[math] = mm.conv_t_s[math] > 0 ? mm.conv_flops / mm.conv_t_s[math] : 0;
    if (!(peak_of[math] > 0)) continue;
    if (mm_rate[math] > 0) cal.eff[EFF_MATMUL + math] = fmin(mm_rate[math] / peak_of[math], 1.0);
    if (conv_rate[math] > 0) cal.eff[EFF_CONV + math] = fmin(conv_rate[math] / peak_of[math], 1.0);
  }
  /* Unaligned half GEMMs: the LM head's rate with N = 50257 over the half
   * peak (ds_calib_efficiency_keys[EFF_UNALIGNED]). */
  enum { EFF_UNALIGNED = 9 };
  double lm_flops = 2.0 * UNALIGNED_M * UNALIGNED_K, half_peak = row ? row->half_tflops * 1e12 : 0;
  double un_rate = mm.unaligned_t_s[0] > 0 ? lm_flops * UNALIGNED_N / mm.unaligned_t_s[0] : 0;
  double al_rate = mm.unaligned_t_s[1] > 0 ? lm_flops * ALIGNED_N / mm.unaligned_t_s[1] : 0;
  if (un_rate > 0 && half_peak > 0) cal.eff[EFF_UNALIGNED] = fmin(un_rate / half_peak, 1.0);
  /* Interference: the measured slowdown (at least 1: a GEMM that came out
   * faster beside the copy is noise) and the mechanism's prediction. */
  double slowdown = mm.interf_alone_s > 0 ? mm.interf_beside_s / mm.interf_alone_s : 0;
  if (slowdown > 0 && mm.interf_blocks > 0 && mm.interf_blocks < mm.sms) {
    cal.has_interference = 1;
    cal.interference_blocks = mm.interf_blocks;
    cal.interference_slowdown = fmin(fmax(slowdown, 1.0), 100.0);
    cal.interference_predicted = (double)mm.sms / (mm.sms - mm.interf_blocks);
  }
  /* collective fit */
  double f = world > 1 ? 2.0 * (world - 1) / world : 1.0;
  double cx[MAX_POINTS], cy[MAX_POINTS];
  unsigned long long wrong = 0;
  for (size_t i = 0; i < n_pts; i++) {
    cx[i] = (double)pts[i].size_bytes * f;
    cy[i] = pts[i].time_us * 1e-6;
    wrong += pts[i].wrong;
  }
  if (wrong)
    return ds_err_set(err, DS_EIO, "the all-reduce sweep had %llu wrong result "
                      "elements (#wrong); no calibration written", wrong);
  if (n_pts < 2)
    return ds_err_set(err, DS_EUSAGE, "the all-reduce sweep has %zu size%s; "
                      "widen -b/-e", n_pts, n_pts == 1 ? "" : "s");
  struct linfit cf, cu;
  fit_relative(cx, cy, n_pts, &cf);
  fit_free(cx, cy, n_pts, &cu);
  cal.has_collective = 1;
  cal.coll_nranks = world;
  cal.coll_shared = shared;
  cal.coll_copy = world == 1;
  cal.coll_alpha_ns = cf.c0 > 0 ? cf.c0 * 1e9 : 0;
  cal.coll_bus_bw_bytes_per_s = cf.c1 > 0 ? 1.0 / cf.c1 : 0;
  cal.coll_fit_r2 = cf.r2;
  cal.coll_fit_rms_rel_residual = cf.rms_rel;
  if (!(cal.coll_bus_bw_bytes_per_s > 0))
    return ds_err_set(err, DS_EIO, "the all-reduce fit has a slope of %g s/B "
                      "(times do not grow with size); no calibration written", cf.c1);
  /* NCCL's per-call cost: the smallest all-reduce's time per call, issued
   * back to back; only where it is a collective across separate GPUs and
   * small enough that its bytes cost nothing. */
  const char *no_launch = world == 1 ? "one rank: a device copy, not NCCL's kernel"
                          : shared   ? "ranks share GPUs"
                          : pts[0].size_bytes > 4096 ? "the smallest size is over 4 KiB (-b)"
                                                     : NULL;
  if (!no_launch) {
    cal.has_nccl_launch = 1;
    cal.nccl_launch_ns = pts[0].time_us * 1e3;
  }

  /* the file */
  char date[32];
  utc_now(date, sizeof date);
  struct text h;
  h.len = 0;
  h.buf[0] = '\0';
  int nv = mm.nccl;
  add(&h, "# ddpreal calibrate, %s\n# command: %s\n", date, o->command);
  add(&h, "# gpu: %s (%d SMs), driver %s (CUDA %d.%d), runtime %d.%d, NCCL %d.%d.%d, %s "
      "(cublasGetVersion %d)\n", mm.gpu_name, mm.sms, mm.driver, mm.drv / 1000,
      mm.drv % 1000 / 10, mm.rt / 1000, mm.rt % 1000 / 10, nv / 10000, nv / 100 % 100,
      nv % 100, mm.cublas, mm.cublas_version);
  add(&h, "# peaks: %s %.1f TFLOP/s, memory %.0f GB/s (%s)\n", tf32 ? "tf32" : "fp32",
      peak / 1e12, mem_peak / 1e9,
      o->peak_tflops > 0 || o->mem_gbps > 0 ? "given on the command line"
      : row ? row->table_name : "?");
  if (row && !(o->peak_tflops > 0 || o->mem_gbps > 0))
    add(&h, "#   (table: topologies/gpus.yaml %s, dense rates from "
        "glennklockwood.com/garden/processors)\n", row->table_name);
  char schedule_shown[512]; /* the path on a comment line (ds_textout_comment_text) */
  add(&h, "# gemm: %zu shapes from %zu fwd/bwd ops of rank 0 in %s (cuBLAS SGEMM, edge "
      "cbrt(flops/2) <= %d, repeated to the flops), median of %d\n", c->n_shapes, c->n_ops,
      ds_textout_comment_text(o->schedule, schedule_shown, sizeof schedule_shown),
      DS_CUDA_GEMM_MAX_DIM, o->iters);
  for (int math = 0; math < 1 + mm.have_tf32; math++) {
    const struct linfit *ff = &mm.free_fit[math], *fx = &mm.fixed_fit[math];
    add(&h, "#   %s: free fit t = %.3gus + F/(%.4g TFLOP/s), R2 %.5f, rms rel residual "
        "%.3f, max %.3f\n", math ? "tf32" : "fp32", ff->c0 * 1e6, 1e-12 / ff->c1, ff->r2,
        ff->rms_rel, ff->max_rel);
    add(&h, "#   %s: overhead fixed at the launch time: F/(%.4g TFLOP/s), R2 %.5f, rms rel "
        "residual %.3f, max %.3f\n", math ? "tf32" : "fp32", 1e-12 / fx->c1, fx->r2,
        fx->rms_rel, fx->max_rel);
  }
  add(&h, "# flops_efficiency = %.4g TFLOP/s (%s, %s) / %.1f peak%s\n", rate / 1e12,
      tf32 ? "tf32" : "fp32", free_ok ? "free fit" : "overhead fixed at the launch time",
      peak / 1e12, rate > peak ? " (above the peak: clamped to 1; check the peak)" : "");
  add(&h, "# mem_efficiency = %.0f GB/s (2*S/t, 512 MiB: cudaMemcpy D2D %.0f, copy kernel "
      "%.0f) / %.0f peak\n", mem_bw / 1e9, mm.memcpy_bw / 1e9, mm.kernel_bw / 1e9,
      mem_peak / 1e9);
  add(&h, "# kernel_overhead = %s: %.3f us (launch floor: %d empty kernels back to back "
      "%.3f us each, one between two events %.3f us)\n",
      free_ok ? "the free fit's intercept" : "the launch time", used->c0 * 1e6, LAUNCHES,
      mm.launch_ns / 1e3, mm.launch_pair_ns / 1e3);
  add(&h, "# check: the schedule's %zu GEMM ops of one iteration: measured %.3f ms, this "
      "model %.3f ms (%+.1f%%)\n", c->n_ops, sum_meas * 1e3, sum_model * 1e3,
      100.0 * (sum_model - sum_meas) / sum_meas);
  for (int math = 0; math < 1 + mm.have_tf32; math++) {
    const char *mname = math ? "tf32" : "fp32";
    if (!(peak_of[math] > 0)) {
      add(&h, "# efficiency %s: no %s peak known (the table's, or --peak-tflops with "
          "--fp32-math %s): not written\n", mname, mname, mname);
      continue;
    }
    add(&h, "# efficiency.matmul_%s = %.4g TFLOP/s (the GEMM fit above) / %.1f peak\n", mname,
        mm_rate[math] / 1e12, peak_of[math] / 1e12);
    add(&h, "# efficiency.conv_%s = %.4g TFLOP/s / %.1f peak: convolution proxy, SGEMMs shaped "
        "as ResNet-50's 3x3 convolutions at batch 32 (MxNxK", mname, conv_rate[math] / 1e12,
        peak_of[math] / 1e12);
    for (size_t i = 0; i < N_CONV; i++)
      add(&h, "%s%dx%dx%d", i ? ", " : " ", conv_shapes[i][0], conv_shapes[i][1],
          conv_shapes[i][2]);
    add(&h, "), %.4g GFLOP in %.3f ms\n", mm.conv_flops / 1e9, mm.conv_t_s[math] * 1e3);
  }
  if (cal.eff[EFF_UNALIGNED] > 0)
    add(&h, "# efficiency.matmul_unaligned_half = %.4g TFLOP/s / %.1f peak: cublasGemmEx %s "
        "%dx%dx%d (N unaligned) %.3f ms; N = %d (aligned) %.3f ms, %.4g TFLOP/s (%.2fx)\n",
        un_rate / 1e12, half_peak / 1e12, mm.unaligned_bf16 ? "bf16" : "fp16", UNALIGNED_M,
        UNALIGNED_N, UNALIGNED_K, mm.unaligned_t_s[0] * 1e3, ALIGNED_N,
        mm.unaligned_t_s[1] * 1e3, al_rate / 1e12, al_rate / un_rate);
  else
    add(&h, "# efficiency.matmul_unaligned_half: not written (%s)\n",
        !(half_peak > 0) ? "no half peak known for this GPU" : "cuBLAS lacks cublasGemmEx");
  if (cal.has_interference)
    add(&h, "# nccl.interference: SGEMM %d^3 (FP32 math) %.3f ms alone, %.3f ms beside a copy "
        "kernel of %d blocks x %d threads: slowdown %.4f%s; the mechanism's %d/(%d-%d) = %.4f; "
        "ddpsim's comm_interference = max(0, %.4f/%.4f - 1) = %.4f\n", INTERF_EDGE,
        mm.interf_alone_s * 1e3, mm.interf_beside_s * 1e3, mm.interf_blocks, INTERF_THREADS,
        slowdown, slowdown < 1 ? " (below 1: written as 1)" : "", mm.sms, mm.sms,
        mm.interf_blocks, cal.interference_predicted, cal.interference_slowdown,
        cal.interference_predicted,
        fmax(0.0, cal.interference_slowdown / cal.interference_predicted - 1));
  if (cal.has_nccl_launch)
    add(&h, "# nccl.launch = %.3f us: the %zu-byte all-reduce per call, %d calls back to back on "
        "%d ranks (includes its own latency, which NCCL's model also charges)\n",
        pts[0].time_us, pts[0].size_bytes, 20, world);
  else
    add(&h, "# nccl.launch: not written (%s)\n", no_launch);
  add(&h, "# collective: allreduce on %d rank%s (forked), %zu sizes %zu..%zu B, fit "
      "t = alpha + S*%.4g/bus_bw weighted by 1/t^2%s%s\n", world, world == 1 ? "" : "s",
      n_pts, pts[0].size_bytes, pts[n_pts - 1].size_bytes, f,
      world == 1 ? "; ONE RANK: a device copy, not a collective (copy: true)" : "",
      shared ? "; RANKS SHARE GPUS: not representative of separate GPUs (shared: true)" : "");
  if (cf.c0 < 0) add(&h, "#   (fitted alpha %.3g us < 0, written as 0)\n", cf.c0 * 1e6);
  add(&h, "#   weighted fit: alpha %.3f us, bus_bw %.2f GB/s, R2 %.4f, rms rel residual %.3f, "
      "max %.3f\n", cf.c0 * 1e6, cf.c1 > 0 ? 1e-9 / cf.c1 : 0, cf.r2, cf.rms_rel, cf.max_rel);
  add(&h, "#   unweighted fit (gsl_fit_linear, for comparison; large sizes dominate): alpha "
      "%.3f us, bus_bw %.2f GB/s, R2 %.4f, rms rel residual %.3f\n", cu.c0 * 1e6,
      cu.c1 > 0 ? 1e-9 / cu.c1 : 0, cu.r2, cu.rms_rel);
  struct ds_atomic_file af;
  memset(&af, 0, sizeof af);
  DS_CHECK(ds_atomic_file_open(o->out, &af, err));
  if (ds_calib_write(af.fp, &cal, h.buf) != 0) {
    ds_atomic_file_abort(&af);
    return ds_err_set(err, DS_EIO, "writing %s failed", o->out);
  }
  DS_CHECK(ds_atomic_file_commit(&af, err));

  /* the summary */
  printf("%s", h.buf);
  printf("\n# per GEMM shape: time per op (median), achieved TFLOP/s, residual of the "
         "written model\n");
  printf("#%14s %6s %5s %4s %11s %9s %11s %9s %9s\n", "flops", "edge", "reps", "ops",
         "fp32(us)", "TFLOP/s", "tf32(us)", "TFLOP/s", "resid");
  for (size_t i = 0; i < n; i++) {
    const struct shape *s = &c->shapes[i];
    double model = used->c0 + used->c1 * s->flops, t = s->t_s[tf32];
    printf(" %14.4g %6zu %5ld %4d %11.2f %9.2f %11.2f %9.2f %+8.1f%%\n", s->flops, s->d,
           s->reps, s->n_ops, s->t_s[0] * 1e6, s->flops / s->t_s[0] / 1e12,
           s->t_s[1] * 1e6, s->t_s[1] > 0 ? s->flops / s->t_s[1] / 1e12 : 0,
           100.0 * (model - t) / t);
  }
  printf("\n# all-reduce: measured, fit alpha %.3f us, bus_bw %.2f GB/s, R2 %.5f, rms rel "
         "residual %.3f, max %.3f\n", cal.coll_alpha_ns / 1e3,
         cal.coll_bus_bw_bytes_per_s / 1e9, cf.r2, cf.rms_rel, cf.max_rel);
  printf("#%13s %11s %11s %9s\n", "size(B)", "time(us)", "fit(us)", "resid");
  for (size_t i = 0; i < n_pts; i++) {
    double fit = cf.c0 + cf.c1 * cx[i];
    printf(" %13zu %11.2f %11.2f %+8.1f%%\n", pts[i].size_bytes, cy[i] * 1e6, fit * 1e6,
           100.0 * (fit - cy[i]) / cy[i]);
  }
  printf("\ncalibration written to %s:\n", o->out);
  ds_calib_write(stdout, &cal, NULL);
  return DS_OK;
}
