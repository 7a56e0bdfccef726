/*
 * Where a run's measured kernel models came from. Some kernels are priced
 * not by an op class's efficiency (rates.h) but by a model measured on
 * this project's GPUs and moved to the simulated one: cuDNN's batch norm,
 * layer norm, max-pool, grouped convolutions, the elementwise kernels off
 * PyTorch's vectorised path, torch.cat's generic kernel, half-to-fp32
 * casts, bias gradients' row reductions and the embedding backward's
 * feature kernel (each listed below with the
 * file that sets its constants). Every one of them was measured on the
 * H200 (132 SMs at 1980 MHz) and is applied to another GPU as the same SM
 * cycles on that GPU's SMs at its boost clock; a GPU whose table entry has
 * no SM count or boost clock (boost_mhz) runs those kernels at the memory
 * roofline instead (grouped convolutions at the conv class's rate, its
 * roofline: compute_roofline.c ds__compute_layer_kernel_ns); grouped
 * convolutions from a calibration file's table (--calib) apply as measured
 * on the simulated machine, at the file's own SMs and clock, whatever the
 * GPU table knows.
 *
 * Every model takes the longer of its own time and its bytes at the
 * roofline: each pass that consults a model is counted, and whether the
 * model's time won (bound it), so the line can say where the roofline
 * bound some of a model's passes.
 *
 * Which models a run charges is recorded where each prices its kernel
 * (ds_compute_charge_model, compute.h, called from the pricing code of
 * norm.c, compute_pool.c, compute_conv.c and compute_layer.c, legacy_ew.c,
 * cat_copy.c, cast_reduce.c), and the
 * transfer is read from the same fields of struct ds_compute the prices
 * use (SMs, clock, the grouped-convolution table), so the words and the
 * numbers cannot disagree. The summary prints them (docs/architecture.md,
 * "Measured kernel models").
 */
#ifndef DS_KERNEL_MODELS_H
#define DS_KERNEL_MODELS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The measured kernel models, in the order the summary lists them. */
enum ds_kernel_model {
  DS_KM_BN_NCHW,        /* cuDNN's NCHW batch norm, per CTA / SM clock (norm.c BN_*) */
  DS_KM_BN_NHWC,        /* cuDNN's persistent channels-last batch norm (norm.c BN_NHWC_*) */
  DS_KM_LAYER_NORM,     /* PyTorch's layer norm kernels (norm.c LN_*) */
  DS_KM_MAX_POOL,       /* max-pool, cycles per element and pair (compute_pool.c POOL_*) */
  DS_KM_GROUPED_CONV,   /* grouped convolutions, times per shape (grouped_conv_table.inc) */
  DS_KM_LEGACY_EW,      /* elementwise_kernel off the vectorised path (legacy_ew.h) */
  DS_KM_MIXED_EW,       /* contiguous mixed-dtype elementwise (legacy_ew.h UNROLLED_CAST) */
  DS_KM_CAT,            /* torch.cat's generic kernel (cat_copy.h) */
  DS_KM_UPCAST,         /* half-to-fp32 casts (cast_reduce.h DS_UPCAST_CYCLES) */
  DS_KM_ROW_REDUCE,     /* bias gradients' row reductions (cast_reduce.h) */
  DS_KM_EMBED_FEATURE,  /* embedding_backward_feature_kernel's chain (compute_layer.c) */
  DS_KM_COUNT
};
/* struct ds_compute_charged and struct ds_kernel_models keep a bit per model */
_Static_assert(DS_KM_COUNT <= 32, "enum ds_kernel_model must fit a uint32_t bit set");

/* How a model's constants reach the simulated GPU. */
enum ds_km_source {
  DS_KM_THIS_GPU,  /* measured on this GPU: its own SMs and clock */
  DS_KM_SCALED,    /* the measured GPU's SM cycles on this GPU's SMs at its clock */
  DS_KM_ROOFLINE,  /* not applied: the GPU has no SM count or boost clock */
  DS_KM_CALIB,     /* grouped convolutions from --calib's table, as measured */
  /* grouped convolutions from --calib's table measured on another GPU (its
   * gpu or SMs not this one's: calib.h ds_calib_gconv_fit), its SM cycles
   * on this GPU's SMs at its clock */
  DS_KM_CALIB_SCALED
};

/* What the summary keeps: the models charged and the GPU they were moved
 * to. Plain data: summaries cross process boundaries. */
struct ds_kernel_models {
  uint32_t used;    /* bit k: enum ds_kernel_model k priced a kernel of the run */
  /* per model: the model's layer passes at the row's batch (forward,
   * backward and the loss, each priced once) and those its own time bound */
  int32_t passes[DS_KM_COUNT];
  int32_t bound_passes[DS_KM_COUNT];
  int32_t knows_sms; /* ds_compute_knows_sms: the GPU's SMs and clock known */
  int32_t sms;
  double clock_mhz;
  /* the grouped-convolution table's GPU: its SMs and clock, and whether it
   * was measured on the simulated machine (--calib) */
  int32_t gconv_on_target;
  int32_t gconv_from_calib; /* the table is --calib's (as measured or moved) */
  /* --calib's table has no entry of the run's mode (compute.h
   * ds_compute_gconv_mode): 1 + that mode, its convolutions at the conv
   * class's rate; 0 otherwise */
  int32_t gconv_missing_mode;
  int32_t gconv_sms;
  double gconv_clock_mhz;
  char gpu[sizeof((struct ds_gpu_spec *)0)->name]; /* the GPU table's name */
};

/* The GPU the built-in models were measured on (the GPU table's name) and
 * its SMs and boost clock: every constant's comment cites an H200 run. */
#define DS_KM_MEASURED_GPU "H200-SXM-141GB"
#define DS_KM_MEASURED_GPU_SHORT "H200"
#define DS_KM_MEASURED_SMS 132
#define DS_KM_MEASURED_CLOCK_MHZ 1980.0

struct ds_compute;
struct ds_compute_charged;

/* The summary's record of a run: the models `used` records (struct
 * ds_compute_charged, compute.h), the passes and bound passes a census
 * counted (charged by pricing each layer pass once; NULL: none), and the
 * GPU they price on, read from c's SMs, clock and grouped-convolution
 * table; gpu is the GPU table's name. */
void ds_kernel_models_fill(const struct ds_compute *c, const char *gpu, uint32_t used,
                           const struct ds_compute_charged *census,
                           struct ds_kernel_models *out);
/* The model's name in the text ("batch norm (NCHW)") and in the CSV and
 * JSON ("batch_norm_nchw"). */
const char *ds_kernel_models_label(enum ds_kernel_model k);
const char *ds_kernel_models_key(enum ds_kernel_model k);
/* Where model k's constants reach this run's GPU. */
enum ds_km_source ds_kernel_models_source(const struct ds_kernel_models *km,
                                          enum ds_kernel_model k);
/* "this_gpu", "scaled_H200", "roofline", "calib", "scaled_calib". */
const char *ds_kernel_models_source_name(enum ds_km_source s);
/* Adds src's models to dst (the same GPU: a run's rows). dst's census
 * (passes, bound_passes) stays as it is: a census counts one row's passes
 * of the model, and adding rows' would count the model several times. */
void ds_kernel_models_merge(struct ds_kernel_models *dst, const struct ds_kernel_models *src);
/* The summary's line, without a newline, grouped by source: "kernel
 * models: measured on this GPU (H200) for batch norm (NCHW), max-pool";
 * "kernel models: H200's SM cycles on V100-SXM2-16GB's 80 SMs at 1530 MHz
 * for batch norm (NCHW; roofline bound 99 of 106 passes), ..." (the clause
 * where the roofline set the time of some of a model's passes);
 * "kernel models: none" when the run charges none. */
/* census_batch > 0 says the census is that batch's ("roofline bound 13 of
 * 37 passes at batch 16)": a sweep of batches prints its first row's); 0
 * says nothing. Returns the line's length in full: the line was cut where
 * that is size or more (buf stays terminated). */
size_t ds_kernel_models_describe(const struct ds_kernel_models *km, int64_t census_batch, char *buf,
                                 size_t size);
/* Writes the CSV field, whole: KEY=SOURCE joined by ';'
 * ("batch_norm_nchw=scaled_H200"), nothing for none; keys and sources are
 * identifiers, so the field never needs CSV quoting. Returns 0, or EOF on a
 * write error. */
int ds_kernel_models_write_field(FILE *fp, const struct ds_kernel_models *km);

#ifdef __cplusplus
}
#endif

#endif /* DS_KERNEL_MODELS_H */
