/*
 * Writer of calibration files (calib_file.h). Key invariant: every key it
 * writes is one the loader (sim/train/calib.c) accepts, in a unit it parses, and
 * a key is written exactly when its has_ flag is set.
 */
#include "traces/calib_file.h"

int ds_calib_write(FILE *fp, const struct ds_calib *c, const char *header) {
  if (header) fputs(header, fp);
  fputs("schema_version: 1\n", fp);
  if (c->has_flops_efficiency || c->has_mem_efficiency || c->has_kernel_overhead ||
      c->has_fp32_math) {
    fputs("compute:\n", fp);
    if (c->has_flops_efficiency)
      fprintf(fp, "  flops_efficiency: %.6g\n", c->flops_efficiency);
    if (c->has_mem_efficiency) fprintf(fp, "  mem_efficiency: %.6g\n", c->mem_efficiency);
    if (c->has_kernel_overhead)
      fprintf(fp, "  kernel_overhead: %.6gus\n", c->kernel_overhead_ns / 1e3);
    if (c->has_fp32_math) fprintf(fp, "  fp32_math: %s\n", c->fp32_uses_tf32 ? "tf32" : "fp32");
  }
  if (c->has_collective) {
    fputs("collective:\n", fp);
    fputs("  op: allreduce\n", fp);
    fprintf(fp, "  nranks: %d\n", c->coll_nranks);
    fprintf(fp, "  shared: %s\n", c->coll_shared ? "true" : "false");
    fprintf(fp, "  copy: %s\n", c->coll_copy ? "true" : "false");
    fprintf(fp, "  alpha: %.6gus\n", c->coll_alpha_ns / 1e3);
    fprintf(fp, "  bus_bw: %.6gGBps\n", c->coll_bus_bw_bytes_per_s / 1e9);
    fprintf(fp, "  fit_r2: %.6g\n", c->coll_fit_r2);
    fprintf(fp, "  fit_rms_rel_residual: %.6g\n", c->coll_fit_rms_rel_residual);
  }
  return ferror(fp) ? -1 : 0;
}
