/*
 * Where a run's compute rates came from: for each op class the run charges
 * (a layer of that class with FLOPs; memory always: every roofline's byte
 * floor, the memory-bound kernels, the optimizer step), the math it runs in
 * and the source of its efficiency (topo.h enum ds_rate_source: the GPU
 * table's measurement, a calibration file, the topology's own per-class
 * key, matmul's rate standing in for attention, a GPU table value the table
 * marks a stand-in (another GPU's, math's or operation's measurement), or the typical
 * flops_efficiency / mem_efficiency no measurement backs). The summary
 * prints it (docs/architecture.md, "Compute"), so a prediction priced by
 * placeholders says so.
 */
#ifndef DS_RATES_H
#define DS_RATES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/train/compute.h"
#include "sim/train/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One rate charged. Plain data: summaries cross process boundaries. */
struct ds_rate_used {
  int32_t cls;       /* enum ds_layer_class; DS_LAYER_UNKNOWN: layers without a class */
  int32_t math;      /* enum ds_gpu_math of its FLOPs (memory: unused) */
  int32_t source;    /* enum ds_rate_source */
  double efficiency; /* the class's (a convolution's pooled), memory's mem_efficiency */
  /* DS_RATE_GPU_PROXY: the GPU table's reason ("the f16 convolution's
   * fraction"); DS_RATE_CALIB and _CALIB_FLOPS: "measured on GPU" where
   * the file names another GPU, "the file names no GPU" where it names
   * none (calib_fit); "" otherwise */
  char proxy[DS_GPU_PROXY_WHY_MAX];
  /* 1: half GEMMs on unaligned operands (matmul_unaligned_half), which
   * layers of class matmul or attention run at in place of their class's */
  int32_t unaligned;
  /* 1: the GEMMs on the gradients (PowerSGD's, ds_compute_grad_gemm_ns),
   * listed apart where the model's matmuls do not run their math (--amp) */
  int32_t grad_gemm;
  /* DS_RATE_CALIB and _CALIB_FLOPS: enum ds_calib_gpu_fit (topo.h), the
   * file's GPU against the run's; 0 (DS_CALIB_GPU_SAME) otherwise */
  int32_t calib_fit;
};

/* Conv, matmul, attention, unaligned half GEMMs, class-less, memory: at
 * most one each, in that order; then PowerSGD's GEMMs where listed apart. */
#define DS_RATES_MAX 7
struct ds_rates {
  int32_t n;
  struct ds_rate_used r[DS_RATES_MAX];
};

/* The rates c charges for model m's layers, and memory's. */
void ds_rates_used(const struct ds_compute *c, const struct ds_model *m, struct ds_rates *out);

/* After a run that priced GEMMs on the gradients (c->charged's
 * grad_gemm: PowerSGD's): adds their rate, matmul in the gradients' math
 * (compute.h grad_gemm_*), unless the list has that matmul rate already
 * (the model's matmuls in the same math, so the same source). */
void ds_rates_add_grad_gemm(const struct ds_compute *c, struct ds_rates *out);
/* Adds src's rates that dst lacks (a run's rows: one GPU, model and
 * precision, whose PowerSGD rows may add the hook's rate). */
void ds_rates_merge(struct ds_rates *dst, const struct ds_rates *src);

/* "gpu_table", "calib", "topology", "as_matmul", "gpu_table_proxy",
 * "calib_flops", "typical". */
const char *ds_rate_source_name(enum ds_rate_source source);
/* r's source as the CSV and JSON name it: ds_rate_source_name's, with
 * "_other_gpu" after a calibration file's measured on another GPU
 * ("calib_other_gpu", "calib_flops_other_gpu"). */
const char *ds_rate_used_source_name(const struct ds_rate_used *r);
/* The rate's name, the GPU table's key where it has one: "conv_tf32",
 * "matmul_fp32", "attention_half", "memory"; class-less layers
 * "unclassed_MATH". */
void ds_rate_name(const struct ds_rate_used *r, char *buf, size_t size);
/* The key whose value applies to a typical or topology rate
 * ("flops_efficiency", "mem_efficiency", "conv_efficiency", ...); NULL for
 * the other sources (their values live in the GPU table or the file). */
const char *ds_rate_key(const struct ds_rate_used *r);
/* Whether any rate is unmeasured for its class and math: typical,
 * attention at matmul's rate, or the GPU table's stand-in. */
int ds_rates_unmeasured(const struct ds_rates *rates);
/* The summary's line, without a newline: "compute rates: measured (GPU
 * table) for conv_tf32, memory; typical flops_efficiency 0.5 (not measured)
 * for attention_fp32", grouped by source (a stand-in: "a stand-in (GPU
 * table: REASON) for conv_tf32"); "compute rates: all measured (GPU
 * table): ..." when every rate is the table's own measurement. Returns the
 * whole line's length, which size may not have held (then buf holds its
 * first size - 1 bytes: describe again into a buffer of that length + 1). */
size_t ds_rates_describe(const struct ds_rates *rates, char *buf, size_t size);
/* Writes the CSV field, whole: NAME=SOURCE joined by ';'
 * ("conv_tf32=gpu_table;memory=typical"); names and sources are
 * identifiers, so the field never needs CSV quoting. Returns 0, or EOF on a
 * write error. */
int ds_rates_write_field(FILE *fp, const struct ds_rates *rates);

#ifdef __cplusplus
}
#endif

#endif /* DS_RATES_H */
