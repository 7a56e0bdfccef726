/*
 * Writer of calibration files (calib_file.h). Key invariant: every key it
 * writes is one the loader (sim/train/calib.c) accepts, in a unit it parses, and
 * a key is written exactly when its has_ flag is set.
 */
#include "traces/calib_file.h"

#include "base/textout.h"

/* `KEY: "NAME"` with the name escaped as YAML needs: a device's name is the
 * driver's text, and a quote or backslash in it would make a file the
 * loader refuses. */
static void write_name(FILE *fp, const char *indent_key, const char *name) {
  fprintf(fp, "%s: ", indent_key);
  ds_textout_yaml_quoted(fp, name);
  fputc('\n', fp);
}

const char *const ds_calib_efficiency_keys[DS_CALIB_EFF_KEYS] = {
    "conv_fp32",   "conv_tf32",      "conv_half",      "matmul_fp32",   "matmul_tf32",
    "matmul_half", "attention_fp32", "attention_tf32", "attention_half",
    "matmul_unaligned_half", "conv_fp32_fwd", "conv_tf32_fwd", "conv_half_fwd",
    "conv_fp32_bwd", "conv_tf32_bwd", "conv_half_bwd"};

int ds_calib_write(FILE *fp, const struct ds_calib *c, const char *header) {
  if (header) fputs(header, fp);
  fputs("schema_version: 1\n", fp);
  if (c->gpu[0]) write_name(fp, "gpu", c->gpu);
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
  int any_eff = 0;
  for (int k = 0; k < DS_CALIB_EFF_KEYS; k++) any_eff |= c->eff[k] > 0;
  if (any_eff) {
    fputs("efficiency:\n", fp);
    for (int k = 0; k < DS_CALIB_EFF_KEYS; k++)
      if (c->eff[k] > 0) fprintf(fp, "  %s: %.6g\n", ds_calib_efficiency_keys[k], c->eff[k]);
  }
  if (c->has_nccl_launch || c->has_interference) {
    fputs("nccl:\n", fp);
    if (c->has_nccl_launch) fprintf(fp, "  launch: %.6gus\n", c->nccl_launch_ns / 1e3);
    if (c->has_interference) {
      fprintf(fp, "  interference_blocks: %d\n", c->interference_blocks);
      fprintf(fp, "  interference_slowdown: %.6g\n", c->interference_slowdown);
      fprintf(fp, "  interference_predicted: %.6g\n", c->interference_predicted);
    }
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
  if (c->n_gconv > 0) {
    fputs("grouped_conv:\n", fp);
    if (c->gconv_gpu[0]) write_name(fp, "  gpu", c->gconv_gpu);
    fprintf(fp, "  sms: %d\n", c->gconv_sms);
    fprintf(fp, "  boost_mhz: %.6g\n", c->gconv_clock_hz / 1e6);
    fputs("  entries:\n", fp);
    for (int32_t i = 0; i < c->n_gconv && i < DS_GCONV_MAX_ENTRIES; i++) {
      const struct ds_gconv_entry *e = &c->gconv[i];
      fprintf(fp,
              "    - {mode: %s, group_width: %d, out_channels: %d, out_positions: %d, "
              "stride: %d, batch: %d, fwd_us: %.6g, dgrad_us: %.6g, wgrad_us: %.6g}\n",
              ds_gconv_mode_names[e->mode], e->group_width, e->out_channels, e->out_positions,
              e->stride, e->batch, e->us[DS_CONV_FWD], e->us[DS_CONV_DGRAD],
              e->us[DS_CONV_WGRAD]);
    }
  }
  if (c->has_host_dispatch || c->has_host_node || c->has_host_ddp_grad ||
      c->has_host_ddp_bucket || c->has_host_ddp_buffer || c->has_host_ddp_iter) {
    fputs("host:\n", fp);
    if (c->has_host_dispatch || c->has_host_node) fputs("  unit: " DS_CALIB_HOST_UNIT "\n", fp);
    if (c->has_host_dispatch) fprintf(fp, "  dispatch: %.6gus\n", c->host_dispatch_ns / 1e3);
    if (c->has_host_node) fprintf(fp, "  node: %.6gus\n", c->host_node_ns / 1e3);
    if (c->has_host_ddp_grad) fprintf(fp, "  ddp_grad: %.6gus\n", c->host_ddp_grad_ns / 1e3);
    if (c->has_host_ddp_bucket)
      fprintf(fp, "  ddp_bucket: %.6gus\n", c->host_ddp_bucket_ns / 1e3);
    if (c->has_host_ddp_buffer)
      fprintf(fp, "  ddp_buffer: %.6gus\n", c->host_ddp_buffer_ns / 1e3);
    if (c->has_host_ddp_iter) fprintf(fp, "  ddp_iter: %.6gus\n", c->host_ddp_iter_ns / 1e3);
  }
  return ferror(fp) ? -1 : 0;
}
