/*
 * The summary's CSV and JSON forms. The columns come from one X-macro
 * list so both formats always carry the same fields in the same order.
 */
#include "sim/cli/report_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/textout.h"
#include "base/units.h"
#include "sim/coll/coll.h"

/* X(column, printf format, expression over const struct ds_summary *r) */
#define DS_SUMMARY_COLUMNS(X)                                   \
  X(strategy, "%s", r->strategy)                                \
  X(model, "%s", r->model)                                      \
  X(topology, "%s", r->topology)                                \
  X(gpu, "%s", r->gpu)                                          \
  X(dtype, "%s", r->dtype)                                      \
  X(world_size, "%d", r->world_size)                            \
  X(batch_per_gpu, "%lld", (long long)r->batch_per_gpu)         \
  X(bucket_mb, "%g", r->bucket_mb)                              \
  X(first_bucket_mb, "%g", r->first_bucket_mb)                  \
  X(n_buckets, "%d", r->n_buckets)                              \
  X(iter_ms, "%.6f", r->iter_ms)                                \
  X(fwd_ms, "%.6f", r->fwd_ms)                                  \
  X(bwd_ms, "%.6f", r->bwd_ms)                                  \
  X(step_ms, "%.6f", r->step_ms)                                \
  X(comm_ms, "%.6f", r->comm_ms)                                \
  X(exposed_comm_ms, "%.6f", r->exposed_comm_ms)                \
  X(overlap_pct, "%.3f", r->overlap_pct)                        \
  X(peak_mem_gib, "%.6f", r->peak_mem_gib)                      \
  X(first_iter_ms, "%.6f", r->first_iter_ms)                    \
  X(net_model, "%s", r->net_model)                              \
  X(coll_model, "%s", r->coll_model)                            \
  X(coll_algo, "%s", r->coll_algo)                              \
  X(ddp_options, "%s", r->ddp_options)                          \
  X(per_batch_ms, "%.6f", r->iter_ms / ds_summary_micro_steps(r)) \
  X(samples_per_s, "%.3f", r->samples_per_s)                    \
  X(speedup_vs_single, "%.6f", r->speedup_vs_single)            \
  X(peak_mem_gib_gpu0, "%.6f", r->peak_mem_gib_gpu0)            \
  X(peak_mem_gib_other, "%.6f", r->peak_mem_gib_other)          \
  X(staleness_mean, "%.6f", r->staleness_mean)                  \
  X(staleness_max, "%lld", (long long)r->staleness_max)        \
  X(worker_step_min_ms, "%.6f", r->worker_step_min_ms)          \
  X(worker_step_max_ms, "%.6f", r->worker_step_max_ms)          \
  X(gpu_mem_gib, "%.6f", r->gpu_mem_gib)                        \
  X(fits_memory, "%s", ds_report_fits_memory(r) ? "yes" : "no") \
  X(amp, "%s", r->amp)                                          \
  X(optimizer, "%s", r->optimizer)                              \
  X(interference_ms, "%.6f", r->interference_ms)                \
  X(gpu_busy_ms, "%.6f", r->gpu_busy_ms)                        \
  X(host_exposed_ms, "%.6f", r->host_exposed_ms)                \
  X(tf32, "%s", r->tf32)                                        \
  X(memory_format, "%s", r->channels_last ? "channels_last" : "contiguous_format") \
  X(host_scale, "%.*g", DS__EXACT(r->host_scale))               \
  X(calib, "%s", r->calib)                                      \
  X(calib_gpu, "%s", r->calib ? ds__report_calib_gpu_names[r->calib_gpu_fit].column : NULL) \
  X(nccl_extra, "%s", r->nccl_extra)                            \
  X(ring_chunks, "%d", r->opt_ring_chunks)                      \
  X(iters, "%d", r->iters)                                      \
  X(seed, "%llu", (unsigned long long)r->seed)
/* (then stragglers, a list: print_stragglers) */

/* Printed after DS_SUMMARY_COLUMNS when the rows have quantiles. */
#define DS_QUANTILE_COLUMNS(X)                                  \
  X(jitter_cv, "%g", r->jitter_cv)                              \
  X(samples, "%d", r->samples)                                  \
  X(iter_p50_ms, "%.6f", r->iter_p50_ms)                        \
  X(iter_p95_ms, "%.6f", r->iter_p95_ms)                        \
  X(iter_p99_ms, "%.6f", r->iter_p99_ms)

/* Printed after DS_SUMMARY_COLUMNS when the rows have sweep ids. */
#define DS_SWEEP_ID_COLUMNS(X)                                  \
  X(ps_servers, "%d", r->opt_ps_servers)                        \
  X(dp_output_device, "%d", r->opt_dp_output_device)            \
  X(straggler_factor, "%g", r->straggler_factor)                \
  X(comm_hook, "%s", r->comm_hook)
/* (ring_chunks, once among them, is in every row: DS_SUMMARY_COLUMNS) */

/* After DS_SUMMARY_COLUMNS when the run sweeps the world size
 * (has_scaling): the scaling efficiency, or the absent value (empty in the
 * CSV, null in the JSON, as `ddpsim analyze` writes an undefined error)
 * where the row has none. */
static int print_scaling(FILE *fp, int json, const struct ds_summary *r) {
  if (isnan(r->scaling_efficiency_pct)) return json && fputs("null", fp) == EOF ? EOF : 0;
  return fprintf(fp, "%.3f", r->scaling_efficiency_pct) < 0 ? EOF : 0;
}

/* Machine-readable times carry six decimals of a millisecond: the engine's
 * nanosecond, so nothing it computed is lost in the CSV or JSON. */

static int is_string_format(const char *fmt) { return strcmp(fmt, "%s") == 0; }

/* One value of a column: a string (the names from flags and YAML: GPU,
 * topology, model) as a CSV field or JSON string that its quotes, commas,
 * backslashes or control characters cannot break (base/textout.h), any
 * other value as its format prints it. Returns 0, or EOF on a write error
 * (as traces/trace_write.c's writer, the caller passes it on). */
__attribute__((format(printf, 3, 4))) static int print_value(FILE *fp, int json,
                                                             const char *fmt, ...) {
  va_list ap;
  int failed = 0;
  va_start(ap, fmt);
  if (is_string_format(fmt)) {
    /* NULL: no value (calib without --calib): empty in the CSV, null in
     * the JSON, as print_scaling's absent value */
    const char *s = va_arg(ap, const char *);
    if (!s) failed = json && fputs("null", fp) == EOF;
    else if (json) ds_textout_json_string(fp, s);
    else failed = ds_textout_csv_field(fp, s) != 0;
  } else {
    failed = vfprintf(fp, fmt, ap) < 0;
  }
  va_end(ap);
  return failed ? EOF : 0;
}

/* The stragglers column: RANK:FACTOR by ';' in the CSV ("none" without
 * one), [{"rank", "factor"}] in the JSON; factors exact (ds__report_exact_digits). */
static int print_stragglers(FILE *fp, int json, const struct ds_summary *r) {
  int failed = 0;
  if (json) failed |= fputc('[', fp) == EOF;
  else if (r->n_stragglers == 0) failed |= fputs("none", fp) == EOF;
  for (int32_t k = 0; k < r->n_stragglers; k++) {
    const struct ds_summary_straggler *g = &r->stragglers[k];
    if (json)
      failed |= fprintf(fp, "%s{\"rank\": %d, \"factor\": %.*g}", k ? ", " : "", g->rank,
                        DS__EXACT(g->factor)) < 0;
    else
      failed |= fprintf(fp, "%s%d:%.*g", k ? ";" : "", g->rank, DS__EXACT(g->factor)) < 0;
  }
  if (json) failed |= fputc(']', fp) == EOF;
  return failed ? EOF : 0;
}

int ds__report_print_csv(FILE *fp, const struct ds_summary *rows, int32_t n) {
  const char *sep = "";
  int failed = 0;
#define DS__CSV_HEAD(col, fmt, expr) fprintf(fp, "%s%s", sep, #col); sep = ",";
  DS_SUMMARY_COLUMNS(DS__CSV_HEAD)
  fputs(",stragglers", fp);
  if (n > 0 && rows[0].has_scaling) fputs(",scaling_efficiency_pct", fp);
  if (n > 0 && rows[0].has_sweep_ids) { DS_SWEEP_ID_COLUMNS(DS__CSV_HEAD) }
  if (n > 0 && rows[0].has_quantiles) { DS_QUANTILE_COLUMNS(DS__CSV_HEAD) }
#undef DS__CSV_HEAD
  fputs(",bucket_mib,compute_rates,kernel_models\n", fp);
  for (int32_t i = 0; i < n; i++) {
    const struct ds_summary *r = &rows[i];
    sep = "";
#define DS__CSV_ROW(col, fmt, expr)                                     \
  fputs(sep, fp);                                                      \
  failed |= print_value(fp, 0, fmt, expr) != 0;                        \
  sep = ",";
    DS_SUMMARY_COLUMNS(DS__CSV_ROW)
    failed |= fputc(',', fp) == EOF || print_stragglers(fp, 0, r) != 0;
    if (r->has_scaling) failed |= fputc(',', fp) == EOF || print_scaling(fp, 0, r) != 0;
    if (r->has_sweep_ids) { DS_SWEEP_ID_COLUMNS(DS__CSV_ROW) }
    if (r->has_quantiles) { DS_QUANTILE_COLUMNS(DS__CSV_ROW) }
#undef DS__CSV_ROW
    /* The bucket sizes, in order, as one field: ';' keeps it one column. */
    fputc(',', fp);
    for (int32_t b = 0; b < r->n_buckets; b++)
      fprintf(fp, "%s%.6f", b ? ";" : "", r->bucket_bytes[b] / DS_UNITS_MIB);
    /* last: where the compute rates came from (rates.h), NAME=SOURCE by
     * ';', then the measured kernel models it charged (kernel_models.h),
     * KEY=SOURCE by ';': written whole, however many */
    fputc(',', fp);
    failed |= ds_rates_write_field(fp, &r->rates) != 0;
    fputc(',', fp);
    failed |= ds_kernel_models_write_field(fp, &r->kernel_models) != 0;
    fputc('\n', fp);
  }
  return failed || ferror(fp) ? EOF : 0;
}

/* Each rate charged: {"rate", "source"}, for a typical or topology one
 * the key and value that applied, for a stand-in the table's reason
 * ("proxy") (rates.h). */
static void print_json_rates(FILE *fp, const struct ds_rates *rates) {
  for (int32_t i = 0; i < rates->n; i++) {
    const struct ds_rate_used *u = &rates->r[i];
    char name[32];
    ds_rate_name(u, name, sizeof name);
    fprintf(fp, "%s{\"rate\": \"%s\", \"source\": \"%s\"", i ? ", " : "", name,
            ds_rate_used_source_name(u));
    if (ds_rate_key(u)) fprintf(fp, ", \"key\": \"%s\", \"value\": %g", ds_rate_key(u),
                                u->efficiency);
    if (u->grad_gemm) fputs(", \"for\": \"powersgd\"", fp);
    /* the GPU table's reason (printable, no quotes or backslashes:
     * gpu_table.c), escaped all the same */
    if (u->proxy[0]) {
      fputs(", \"proxy\": ", fp);
      ds_textout_json_string(fp, u->proxy);
    }
    fputc('}', fp);
  }
}

/* Each measured kernel model charged: {"kernel", "source"}, the GPU it
 * was measured on and the SMs and clock it runs on where it was moved, and
 * its passes and model-bound passes (kernel_models.h). */
static void print_json_kernel_models(FILE *fp, const struct ds_kernel_models *km) {
  const char *sep = "";
  for (int k = 0; k < DS_KM_COUNT; k++) {
    if (!(km->used & (1u << k))) continue;
    enum ds_km_source src = ds_kernel_models_source(km, (enum ds_kernel_model)k);
    fprintf(fp, "%s{\"kernel\": \"%s\", \"source\": \"%s\"", sep,
            ds_kernel_models_key((enum ds_kernel_model)k), ds_kernel_models_source_name(src));
    if (src == DS_KM_THIS_GPU || src == DS_KM_SCALED)
      fprintf(fp, ", \"measured_on\": \"%s\"", DS_KM_MEASURED_GPU);
    if (src == DS_KM_SCALED)
      fprintf(fp, ", \"sms\": %d, \"clock_mhz\": %g", km->sms, km->clock_mhz);
    /* --calib's table of another GPU, moved: the GPU it was measured on and
     * the one it was moved to, as the text line gives them */
    if (src == DS_KM_CALIB_SCALED)
      fprintf(fp, ", \"measured_sms\": %d, \"measured_clock_mhz\": %g, \"sms\": %d, "
              "\"clock_mhz\": %g", km->gconv_sms, km->gconv_clock_mhz, km->sms, km->clock_mhz);
    /* the passes that consulted it and those its own time bound (the rest
     * at their bytes' roofline) */
    if (km->passes[k] > 0)
      fprintf(fp, ", \"passes\": %d, \"model_bound\": %d", km->passes[k], km->bound_passes[k]);
    fputc('}', fp);
    sep = ", ";
  }
}

int ds__report_print_json(FILE *fp, const struct ds_summary *rows, int32_t n) {
  int failed = 0;
  fputs("[\n", fp);
  for (int32_t i = 0; i < n; i++) {
    const struct ds_summary *r = &rows[i];
    const char *sep = "";
    fputs("  {", fp);
#define DS__JSON_FIELD(col, fmt, expr)                                 \
  fprintf(fp, "%s\"%s\": ", sep, #col);                                  \
  failed |= print_value(fp, 1, fmt, expr) != 0;                        \
  sep = ", ";
    DS_SUMMARY_COLUMNS(DS__JSON_FIELD)
    fputs(", \"stragglers\": ", fp);
    failed |= print_stragglers(fp, 1, r) != 0;
    if (r->has_scaling) {
      fputs(", \"scaling_efficiency_pct\": ", fp);
      failed |= print_scaling(fp, 1, r) != 0;
    }
    if (r->has_sweep_ids) { DS_SWEEP_ID_COLUMNS(DS__JSON_FIELD) }
    if (r->has_quantiles) { DS_QUANTILE_COLUMNS(DS__JSON_FIELD) }
#undef DS__JSON_FIELD
    /* what rank 0's gpu_busy_ms and host_exposed_ms are measured over
     * when it is not iter_ms (report.h rank0_own_step) */
    if (r->rank0_own_step) {
      fputs(", \"rank0_window_ms\": ", fp);
      failed |= print_value(fp, 1, "%.6f", r->rank0_window_ms) != 0;
    }
    fputs(", \"bucket_mib\": [", fp);
    for (int32_t b = 0; b < r->n_buckets; b++)
      fprintf(fp, "%s%.6f", b ? ", " : "", r->bucket_bytes[b] / DS_UNITS_MIB);
    /* what NCCL's model ran, in order: runs of equal choices (report.h) */
    fputs("], \"nccl_allreduces\": [", fp);
    for (int32_t k = 0; k < r->n_nccl_runs; k++)
      fprintf(fp, "%s{\"algo\": \"%s\", \"proto\": \"%s\", \"calls\": %d}", k ? ", " : "",
              ds_ar_algo_name((enum ds_ar_algo)r->nccl_runs[k].algo),
              ds_proto_name((enum ds_proto)r->nccl_runs[k].proto), (int)r->nccl_runs[k].calls);
    /* always present (0: every call is in nccl_allreduces), so a reader
     * need not test for it */
    fprintf(fp, "], \"nccl_calls_unlisted\": %d", (int)r->nccl_calls_unlisted);
    fputs(", \"compute_rates\": [", fp);
    print_json_rates(fp, &r->rates);
    fputs("], \"kernel_models\": [", fp);
    print_json_kernel_models(fp, &r->kernel_models);
    fprintf(fp, "]}%s\n", i + 1 < n ? "," : "");
  }
  fputs("]\n", fp);
  return failed || ferror(fp) ? EOF : 0;
}
