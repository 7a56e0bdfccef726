/*
 * The files of a run, loaded once (see run_load.h), and the notes on
 * --calib: where its GPU or its grouped-convolution table was measured on
 * another GPU than the topology's, what applies and how, said on stderr
 * before any configuration runs.
 */
#include "sim/cli/run_load.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/lookup.h"
#include "base/textout.h"
#include "sim/net/gpu_table.h"
#include "sim/train/comm_hook.h"

/* The modes --calib's grouped-convolution table has ("fp32, tf32"). */
static void gconv_modes(const struct ds_gconv_table *t, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (int m = 0; m < DS_GCONV_MODES; m++)
    if (ds_gconv_has_mode(t, (enum ds_gconv_mode)m))
      used += (size_t)snprintf(buf + used, used < cap ? cap - used : 0, "%s%s",
                               used ? ", " : "", ds_gconv_mode_names[m]);
}

/* A note or warning on stderr, formatted by printf whole (any conversion),
 * then written with its control characters as '?' (ds_textout_put_printable):
 * its %s arguments are paths from the command line and GPU names from
 * files, written whole rather than cut to a buffer or printed raw. fmt ends
 * in the one newline it may hold. */
__attribute__((format(printf, 1, 2))) static void say_user(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  char *line = malloc((size_t)n + 1);
  if (!line) {
    fputs("ddpsim: note: out of memory writing a --calib note\n", stderr);
    return;
  }
  va_start(ap, fmt);
  vsnprintf(line, (size_t)n + 1, fmt, ap);
  va_end(ap);
  int newline = n > 0 && line[n - 1] == '\n';
  if (newline) line[n - 1] = '\0';
  ds_textout_put_printable(stderr, line, 0);
  if (newline) fputc('\n', stderr);
  free(line);
}

/* --calib's grouped-convolution table, where it fits the topology's GPU
 * (calib.h ds_calib_gconv_fit): as measured on the GPU it names (or, a
 * file naming none, of the same SMs), moved by SMs x clock to another GPU
 * whose table entry has boost_mhz, else not applied; a note says which
 * when it is not plainly this GPU's, and when the table lacks the run's
 * mode (those convolutions then run at the conv class's rate). */
static ds_status plug_calib_gconv(struct loaded *ld, const char *gpus_path,
                                  struct ds_err *err) {
  const struct ds_gpu_spec *g = &ld->topo->gpu;
  struct ds_gpu_table table;
  DS_CHECK(ds_gpu_table_load(gpus_path, &table, err)); /* for the smi_names */
  enum ds_gconv_fit fit = ds_calib_gconv_fit(ld->calib, g, &table);
  ds_gpu_table_release(&table);
  char measured_on[160];
  const char *named = ld->calib->gconv_gpu;
  if (named[0])
    snprintf(measured_on, sizeof measured_on, "%s (%d SMs at %g MHz)", named,
             ld->calib->gconv_sms, ld->calib->gconv_clock_hz / 1e6);
  else
    snprintf(measured_on, sizeof measured_on, "a GPU of %d SMs at %g MHz", ld->calib->gconv_sms,
             ld->calib->gconv_clock_hz / 1e6);
  if (fit == DS_GCONV_FIT_REFUSED) {
    say_user(
        "ddpsim: note: --calib's grouped convolutions were measured on %s, not %s's %s "
        "(%s), which has no boost_mhz to move them to: not applied (grouped convolutions "
        "at the conv class's rate)\n",
        measured_on, ld->topo_path, g->name,
        named[0] ? "another name" : "another SM count");
    return DS_OK;
  }
  ds_calib_gconv_table(ld->calib, &ld->gconv);
  ld->compute.gconv = &ld->gconv;
  /* another GPU's: its SM cycles on g's SMs and clock (ds_gconv_ns) */
  if (fit == DS_GCONV_FIT_SCALED) ld->gconv.on_target = 0;
  enum ds_gconv_mode mode = ds_compute_gconv_mode(&ld->compute);
  if (!ds_gconv_has_mode(&ld->gconv, mode)) {
    /* nothing of the table prices this run (ds_gconv_ns gives 0) */
    char modes[64];
    gconv_modes(&ld->gconv, modes, sizeof modes);
    say_user(
        "ddpsim: note: --calib's grouped convolutions have no %s entries (the file has %s, "
        "measured on %s): this run's grouped convolutions run at the conv class's rate\n",
        ds_gconv_mode_names[mode], modes, measured_on);
  } else if (fit == DS_GCONV_FIT_SCALED) {
    say_user(
        "ddpsim: note: --calib's grouped convolutions were measured on %s, not %s's %s "
        "(%s): their SM cycles run on its %d SMs at %d MHz, not as measured\n",
        measured_on, ld->topo_path, g->name,
        named[0] ? "another name" : "another SM count", g->sms, g->boost_mhz);
  } else if (g->boost_mhz <= 0) {
    /* applied at the file's own SMs and clock (ds_gconv_ns), even where the
     * GPU table has no boost_mhz and the built-in models fall to the roofline */
    say_user(
        "ddpsim: note: --calib's grouped convolutions were measured on %s, %s's %s has "
        "no boost_mhz: their times apply as measured (the other kernel models run at the "
        "roofline)\n",
        measured_on, ld->topo_path, g->name);
  } else if (g->sms != ld->gconv.sms || g->boost_mhz * 1e6 != ld->gconv.clock_hz) {
    say_user(
        "ddpsim: note: --calib's grouped convolutions were measured on %s, %s's %s has "
        "%d at %d MHz: their times apply as measured\n",
        measured_on, ld->topo_path, g->name, g->sms, g->boost_mhz);
  }
  return DS_OK;
}

/* --calib's GPU against the topology's (calib.h ds_calib_gpu_fit), which
 * words its rates. The file's efficiencies are fractions of the measured
 * GPU's peak, and ddpsim multiplies each into this GPU's own peak: on
 * another GPU they are that GPU's fractions standing in for this one's,
 * as the GPU table's stand-ins are (the H100's matmul_half is the H200's
 * fraction), not nonsense and not a measurement of this GPU. So they
 * apply, labelled as another GPU's on the compute-rates line, with a
 * warning, rather than being refused (which would leave the typical
 * placeholders, further from any GPU); the absolute values (kernel_overhead,
 * nccl, host) apply as measured there. A file naming no GPU (older
 * ddpreal) is said to name none, with a warning too: which GPU it was,
 * ddpsim cannot know. A name the GPU table does not know (a GPU it has no
 * row for, or a typo) applies alike, its warning listing the table's names.
 * The nccl section's interference_blocks is checked against the measured
 * GPU's SMs where the table knows them (ds_calib_check_interference).
 * Several files merged: the one that names the GPU is the one named, a
 * file naming none taking it (ds_calib_load_files); calib_list is --calib
 * as given, for files none of which names one. */
static ds_status note_calib_gpu(struct loaded *ld, const char *calib_list,
                                const struct ds_gpu_table *table, struct ds_err *err) {
  struct ds_compute_params *p = &ld->topo->compute;
  const struct ds_calib *c = ld->calib;
  const struct ds_calib_sources *src = &ld->calib_src;
  int32_t gpu_file = src->file[DS_CALIB_KEY_GPU];
  int32_t intf_file = src->file[DS_CALIB_KEY_NCCL_INTERFERENCE];
  const char *gpu_path = gpu_file >= 0 ? src->files[gpu_file] : calib_list;
  const char *intf_path = intf_file >= 0 ? src->files[intf_file] : calib_list;
  const struct ds_gpu_spec *g = &ld->topo->gpu;
  p->calib_gpu_fit = ds_calib_gpu_fit(c, g, table);
  /* the GPU measured: this one, or the one the file names (its SMs where
   * the table knows it, else 0: unchecked) */
  int32_t sms = g->sms;
  const char *measured = g->name;
  if (p->calib_gpu_fit == DS_CALIB_GPU_OTHER) {
    /* the table's name for the file's device name, where the table has it */
    const struct ds_gpu_info *named = ds_gpu_table_by_device_name(table, c->gpu);
    sms = named ? named->spec.sms : 0;
    measured = named ? named->spec.name : c->gpu;
    ds_textout_printable(measured, p->calib_gpu, sizeof p->calib_gpu);
    int rates = c->has_flops_efficiency || c->has_mem_efficiency;
    for (int k = 0; k < DS_CALIB_EFF_KEYS; k++) rates |= c->eff[k] > 0;
    char unknown[900] = "";
    if (!named) {
      char known[768];
      ds_gpu_table_names(table, known, sizeof known);
      snprintf(unknown, sizeof unknown, " (a GPU the GPU table does not know: %s)", known);
    }
    say_user("ddpsim: warning: %s: key 'gpu': measured on %s%s, not %s's %s: %s; "
             "its kernel_overhead, nccl and host values apply as measured there\n",
             gpu_path, c->gpu, unknown, ld->topo_path, g->name,
             rates ? "its efficiencies (fractions of that GPU's peak) stand in for this GPU's, "
                    "not as measured (the compute-rates line says so)"
                  : "it has no efficiencies");
  } else if (p->calib_gpu_fit == DS_CALIB_GPU_UNNAMED) {
    say_user("ddpsim: warning: %s: %s (no top-level key 'gpu': a file of an older "
             "ddpreal calibrate, bench/host_calibrate.py or bench/torch_ddp_host.py): applied "
             "as %s's %s's, which ddpsim cannot check; add gpu: with the measured GPU's name "
             "to have it checked\n",
             calib_list, src->n_files > 1 ? "none of them names a GPU" : "names no GPU",
             ld->topo_path, g->name);
  }
  return ds_calib_check_interference(c, intf_path, sms, measured, err);
}

/* --calib's files, merged and applied to the topology's compute and GPU.
 * One GPU table (the topology's, for its smi_names) reads the files' gpu
 * names for the merge (two files naming one GPU two ways are one GPU) and
 * for the fit, so both say the same GPU. */
static ds_status load_calib(struct loaded *ld, const struct ds_options *o,
                            const char *gpus_path, struct ds_err *err) {
  ld->calib = malloc(sizeof *ld->calib); /* its table of up to 1024 entries: not the stack */
  if (!ld->calib) return ds_err_set(err, DS_ENOMEM, "out of memory");
  struct ds_gpu_table table;
  DS_CHECK(ds_gpu_table_load(gpus_path, &table, err));
  ds_status st = ds_calib_load_files(o->calib_files, o->n_calib_files, &table, ld->calib,
                                     &ld->calib_src, err);
  if (st != DS_OK) {
    st = ds_err_prefix(err, st, "option --calib: ");
    goto out;
  }
  if (o->n_calib_files > 1)
    ds_calib_sources_line(&ld->calib_src, "\n", ld->calib_keys, sizeof ld->calib_keys);
  ds_calib_apply_compute(ld->calib, &ld->topo->compute);
  ds_calib_apply_gpu(ld->calib, &ld->topo->gpu);
  /* while the table lives: the interference check's GPU may be its name */
  st = note_calib_gpu(ld, o->calib, &table, err);
out:
  ds_gpu_table_release(&table);
  return st;
}

ds_status ds__run_load(struct loaded *ld, const struct ds_options *o, struct ds_err *err) {
  char gpus_path[4096];
  DS_CHECK(ds_lookup_file("topologies", "topology", o->topo, ld->topo_path,
                          sizeof ld->topo_path, err));
  DS_CHECK(ds_lookup_file("models", "model", o->model, ld->model_path,
                          sizeof ld->model_path, err));
  DS_CHECK(ds_lookup_gpu_table(ld->topo_path, gpus_path, sizeof gpus_path, err));
  DS_CHECK(ds_topo_load(ld->topo_path, gpus_path, &ld->topo, err));
  /* A measured machine's compute factors replace the topology file's. */
  if (o->calib) DS_CHECK(load_calib(ld, o, gpus_path, err));
  DS_CHECK(ds_model_load(ld->model_path, &ld->model, err));
  /* --optimizer: every reader of the optimizer (compute_step.c, host.c,
   * memory.c, the strategies) then sees it as the file's */
  if (ds_options_given(o, "--optimizer")) ld->model->optimizer = o->optimizer;
  for (int32_t k = 0; k < o->sweep[DS_VAR_COMM_HOOK].n; k++) /* every hook of a list */
    DS_CHECK(ds_comm_hook_check_model(&o->comm_hooks[k], ld->model, err));
  DS_CHECK(ds_compute_init(ld->topo, o->dtype, o->amp, &ld->compute, err));
  ds_compute_set_tf32(&ld->compute, ld->topo, o->tf32);
  ld->compute.channels_last = o->channels_last;
  /* bertadam's loop is the script's own, whatever the PyTorch version */
  ld->compute.optimizer_loop =
      o->ddp_rules != DS_DDP_RULES_CURRENT || ld->model->optimizer == DS_OPT_BERTADAM;
  ld->compute.grad_kept = o->ddp_rules != DS_DDP_RULES_CURRENT;
  ld->compute.zero_grad_fill = o->ddp_rules == DS_DDP_RULES_TORCH_1_9;
  ld->compute.clip_foreach = o->ddp_rules == DS_DDP_RULES_CURRENT;
  ld->compute.weight_decay = o->weight_decay;
  ld->compute.no_bn_weight_decay = o->no_bn_weight_decay;
  if (ld->calib && ld->calib->n_gconv > 0) DS_CHECK(plug_calib_gconv(ld, gpus_path, err));
  return DS_OK;
}

ds_status ds__run_check_world(const struct loaded *ld, int32_t world, struct ds_err *err) {
  if (world > ld->topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE,
                      "option --world-size: %d ranks but topology %s has %d GPUs",
                      world, ld->topo_path, ld->topo->n_gpus);
  return DS_OK;
}

void ds__run_unload(struct loaded *ld) {
  ds_model_free(ld->model);
  ds_topo_free(ld->topo);
  free(ld->calib);
}
