/*
 * The summary's text form: a DDP run's blocks (one per row of a sweep),
 * or the strategies' blocks under a common header, and the side-by-side
 * table of rows.
 */
#include "sim/cli/report_impl.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/textout.h"
#include "base/units.h"
#include "sim/coll/nccl_model.h"

/* Whose host costs the measured hosts' factors multiply (host_range.h),
 * into buf: the topology's, else this run's: --calib's measured ones,
 * times --host-scale's F when given. */
static void host_costs_whose(const struct ds_summary *r, char *buf, size_t size) {
  if (r->host_from_calib && r->host_scale != 1)
    snprintf(buf, size, "this run's host costs: --calib's, x%g by --host-scale", r->host_scale);
  else if (r->host_from_calib)
    snprintf(buf, size, "this run's host costs, --calib's");
  else if (r->host_scale != 1)
    snprintf(buf, size, "this run's host costs, x%g by --host-scale", r->host_scale);
  else
    snprintf(buf, size, "the host costs");
}

/* Where rank 0's iteration went besides communication (metrics.h). */
static void print_gpu_time(FILE *fp, const struct ds_summary *r) {
  /* an asynchronous server's workers step at their own pace: rank 0's
   * lines are its own step's, whose length the line names */
  double window = ds_report_rank0_window_ms(r);
  if (r->rank0_own_step)
    fprintf(fp, "  GPU busy       %10.3f ms  (rank 0's kernels and copies: %.1f %% of its own "
                "step, %.3f ms)\n", r->gpu_busy_ms,
            window > 0 ? 100.0 * r->gpu_busy_ms / window : 0, window);
  else
    fprintf(fp, "  GPU busy       %10.3f ms  (rank 0's kernels and copies: %.1f %% of the "
                "iteration)\n", r->gpu_busy_ms,
            r->iter_ms > 0 ? 100.0 * r->gpu_busy_ms / r->iter_ms : 0);
  fprintf(fp, "    host exposed %10.3f ms  (GPU and network idle while the host works)\n",
          r->host_exposed_ms);
  /* the rest of the iteration (analysis/metrics.h): rank 0 idle, waiting
   * on other ranks (a straggler's all-reduce; a parameter server on rank 0
   * waiting for the workers' pushes, which are their communication, not
   * rank 0's); printed where it shows, so the lines add up */
  double waiting = ds_report_waiting_ms(r);
  if (waiting >= 0.0005)
    fprintf(fp, "    waiting      %10.3f ms  (rank 0 idle: no kernel, copy, communication or "
                "host work; waiting on other ranks)\n", waiting);
  /* A tenth of the iteration or more: the host's speed, which the GPU's
   * does not predict, then sets the answer (docs/strategies.md), and the
   * user's own host can be measured into a calibration file. */
  if (!ds_report_host_bound(r)) return;
  fputs("      host-bound: the host_* costs set this, and hosts differ (docs/strategies.md, "
        "\"The host costs\");\n", fp);
  if (r->has_host_range) {
    char whose[96];
    host_costs_whose(r, whose, sizeof whose);
    fprintf(fp, "        at the measured hosts' range (x%.3f to x%.3f %s) the iteration is "
                "%.3f to %.3f ms;\n", r->host_factor_fast, r->host_factor_slow, whose,
            r->host_fast_iter_ms, r->host_slow_iter_ms);
  }
  /* a calibration's dispatch and node are the user's host measured
   * already (its DDP keys alone are not what host_calibrate.py measures) */
  if (r->host_from_calib < 2)
    fputs("        measure yours: bench/host_calibrate.py --calib-out FILE, then --calib FILE\n",
          fp);
}

/* The peak-memory line and where the peak is (ddp.h ds_ddp_memory): the
 * terms live then, which add up to the total. */
static void print_memory(FILE *fp, const struct ds_summary *r) {
  const struct ds_ddp_memory *m = &r->mem;
  const double g = DS_UNITS_GIB;
  fprintf(fp, "  peak memory    %10.3f GiB per GPU (params %.3f + optimizer %.3f + buckets %.3f",
          r->peak_mem_gib, m->params / g, m->optimizer / g, m->buckets / g);
  if (m->hook > 0) fprintf(fp, " + comm hook buffers %.3f", m->hook / g);
  switch (m->peak_at) {
  case DS_PEAK_BACKWARD_START:
    fprintf(fp, " + activations %.3f + output %.3f + loss gradients %.3f", m->live_activations / g,
            m->output / g, m->loss_grads / g);
    if (m->live_grads > 0) fprintf(fp, " + grads %.3f", m->live_grads / g);
    fputs(")\n    at backward's start", fp);
    if (m->live_grads > 0)
      fputs(", .grad live from the start (kept by zero_grad, or an earlier micro-step's)", fp);
    else if (m->grads > 0)
      fprintf(fp, "; grads %.3f allocated later, as activations are freed", m->grads / g);
    fputc('\n', fp);
    break;
  case DS_PEAK_BACKWARD:
    fprintf(fp, " + activations %.3f + output %.3f + grads %.3f", m->live_activations / g,
            m->output / g, m->live_grads / g);
    if (m->live_hook > 0) fprintf(fp, " + comm hook buffers in flight %.3f", m->live_hook / g);
    fprintf(fp, ")\n    in backward, after layer %d's (%s); of %.3f activations",
            (int)m->peak_layer, m->peak_layer_name ? m->peak_layer_name : "?",
            m->activations / g);
    /* grads 0 in all: .grad are the buckets' views (--grad-as-bucket-view),
     * what lives is the fresh .grad the hook has yet to copy into them */
    if (m->grads > 0) fprintf(fp, " and %.3f grads in all\n", m->grads / g);
    else if (m->live_grads > 0)
      fputs(" in all; .grad are the buckets' views, grads the fresh .grad not yet copied "
            "into them\n", fp);
    else fputs(" in all; .grad are the buckets' views\n", fp);
    break;
  case DS_PEAK_STEP:
    fprintf(fp, " + output %.3f + grads %.3f + step temporaries %.3f)\n"
                "    at the optimizer step; activations %.3f were freed in backward\n",
            m->output / g, m->grads / g, m->step_temp / g, m->activations / g);
    break;
  }
}

/* What NCCL's model ran for the all-reduces (report.h nccl_runs): up to
 * NCCL_RUNS_SHOWN runs of equal choices, in the order they ran, each
 * with its count ("ring/LL128 x3, ring/Simple x1"); more runs (choices
 * that alternate with the bucket sizes) as each choice's total, in the
 * order first run, and how many runs: the JSON's nccl_allreduces has the
 * order. */
#define NCCL_RUNS_SHOWN 4
static void print_nccl_calls(FILE *fp, const struct ds_summary *r) {
  if (r->n_nccl_runs == 0) return;
  char name[DS_AR_ALGO_NAME_MAX];
  fputs("    nccl        ", fp);
  if (r->n_nccl_runs <= NCCL_RUNS_SHOWN) {
    for (int32_t k = 0; k < r->n_nccl_runs; k++) {
      ds_allreduce_algo_name((enum ds_ar_algo)r->nccl_runs[k].algo,
                             (enum ds_proto)r->nccl_runs[k].proto, name);
      fprintf(fp, "%s %s x%d", k ? "," : "", name, (int)r->nccl_runs[k].calls);
    }
    fputs("  (in all-reduce order)\n", fp);
    return;
  }
  int32_t printed = 0;
  for (int32_t k = 0; k < r->n_nccl_runs; k++) {
    const struct ds_summary_nccl_run *run = &r->nccl_runs[k];
    int seen = 0;
    for (int32_t j = 0; j < k && !seen; j++)
      seen = r->nccl_runs[j].algo == run->algo && r->nccl_runs[j].proto == run->proto;
    if (seen) continue;
    int64_t calls = 0;
    for (int32_t j = k; j < r->n_nccl_runs; j++)
      if (r->nccl_runs[j].algo == run->algo && r->nccl_runs[j].proto == run->proto)
        calls += r->nccl_runs[j].calls;
    ds_allreduce_algo_name((enum ds_ar_algo)run->algo, (enum ds_proto)run->proto, name);
    fprintf(fp, "%s %s x%lld", printed++ ? "," : "", name, (long long)calls);
  }
  if (r->nccl_calls_unlisted > 0)
    fprintf(fp, ", %d more calls", (int)r->nccl_calls_unlisted);
  fprintf(fp, "  (mixed in %d%s runs; the JSON's nccl_allreduces has the order)\n",
          (int)r->n_nccl_runs, r->nccl_calls_unlisted > 0 ? " or more" : "");
}

/* A bucket's size in MiB, after `sep`: two decimals, or two significant
 * digits where two decimals print 0.00 (PyTorch 1.4's first bucket can
 * hold fc.bias alone, 4000 B: 0.0038). */
static void print_bucket_mib(FILE *fp, const char *sep, double bytes) {
  double mib = bytes / DS_UNITS_MIB;
  fprintf(fp, "%s %.*f", sep, ds_units_decimals_for(mib, 2), mib);
}

static void print_buckets(FILE *fp, const struct ds_summary *r) {
  fprintf(fp, "  buckets            %d:", r->n_buckets);
  int32_t shown = r->n_buckets <= 12 ? r->n_buckets : 10;
  for (int32_t b = 0; b < shown; b++) print_bucket_mib(fp, b ? "," : "", r->bucket_bytes[b]);
  if (shown < r->n_buckets) print_bucket_mib(fp, ", ...", r->bucket_bytes[r->n_buckets - 1]);
  fputs(" MiB\n", fp);
  if (r->bucket_rule) fprintf(fp, "    rule         %s\n", r->bucket_rule);
  print_nccl_calls(fp, r);
}

const char *ds_report_precision(const struct ds_summary *r) {
  if (r->amp && strcmp(r->amp, "fp16") == 0) return "fp32 model, autocast fp16";
  if (r->amp && strcmp(r->amp, "bf16") == 0) return "fp32 model, autocast bf16";
  return r->dtype;
}

static int is_ddp(const struct ds_summary *r) { return strcmp(r->strategy, "ddp") == 0; }

/* Under --optimizer none the optimizer line holds only what else is of
 * kind step on the GPU: 1.9's zero_grad fills (sim/train/host.h). */
static const char *optimizer_note(const struct ds_summary *r) {
  return r->optimizer && strcmp(r->optimizer, "none") == 0
             ? "  (--optimizer none: no step; zero_grad's fills where the "
               "PyTorch version runs them)"
             : "";
}

static void print_dp_gpu(FILE *fp, const char *what, const struct ds_dp_gpu_memory *m) {
  fprintf(fp,
          "    %-12s %10.3f GiB (params %.3f + grads %.3f + optimizer %.3f + "
          "activations %.3f + inputs %.3f + outputs %.3f)\n",
          what, m->total / DS_UNITS_GIB, m->params / DS_UNITS_GIB, m->grads / DS_UNITS_GIB,
          m->optimizer / DS_UNITS_GIB, m->activations / DS_UNITS_GIB, m->inputs / DS_UNITS_GIB,
          m->outputs / DS_UNITS_GIB);
  if (m->step > 0) /* only at the step, on GPU 0 */
    fprintf(fp, "      + the optimizer step's temporaries %.3f GiB\n", m->step / DS_UNITS_GIB);
  if (m->peak_layer_name)
    fprintf(fp, "      in backward, after layer %s's\n", m->peak_layer_name);
  else if (m->peak_at)
    fprintf(fp, "      at %s\n", m->peak_at);
}

/* The flags of the run that change its numbers and that the header does
 * not otherwise name, where not their defaults: one line, "flags: ...",
 * for every row of a run (they do not vary between rows). */
static void print_flags(FILE *fp, const struct ds_summary *r) {
  static const char first[] = "flags: ";
  const char *sep = first; /* after the first flag, ", " */
  if (r->tf32 && strcmp(r->tf32, "conv") != 0) {
    fprintf(fp, "%s--tf32 %s", sep, r->tf32);
    sep = ", ";
  }
  if (r->channels_last) {
    fprintf(fp, "%s--channels-last", sep);
    sep = ", ";
  }
  if (r->host_scale != 1 && r->host_scale > 0) {
    fprintf(fp, "%s--host-scale %.*g", sep, DS__EXACT(r->host_scale));
    sep = ", ";
  }
  if (r->calib) {
    fprintf(fp, "%s--calib ", sep);
    ds_textout_put_printable(fp, r->calib, 0);
    fprintf(fp, " (%s)", ds__report_calib_gpu_names[r->calib_gpu_fit].words);
    sep = ", ";
  }
  if (r->opt_ring_chunks > 1 && !r->has_sweep_ids) { /* a sweep's blocks say theirs */
    fprintf(fp, "%s--ring-chunks %d", sep, r->opt_ring_chunks);
    sep = ", ";
  }
  if (r->has_quantiles && r->jitter_cv > 0) { /* the seed moves only jittered numbers */
    fprintf(fp, "%s--seed %llu", sep, (unsigned long long)r->seed);
    sep = ", ";
  }
  if (sep != first) fputc('\n', fp);
  /* several --calib files merged: which file set each key, a line each */
  if (r->calib && r->calib_keys) {
    fputs("calib keys: ", fp);
    for (const char *p = r->calib_keys;;) {
      const char *end = strchr(p, '\n');
      char line[1024];
      snprintf(line, sizeof line, "%.*s", (int)(end ? end - p : (ptrdiff_t)strlen(p)), p);
      ds_textout_put_printable(fp, line, 0);
      fputc('\n', fp);
      if (!end) break;
      fputs("            ", fp);
      p = end + 1;
    }
  }
}

/* A row's --straggler ranks and factors, "stragglers 1:1.3, 5:2" and
 * then `after`; nothing without. */
static void print_stragglers_text(FILE *fp, const struct ds_summary *r, const char *after) {
  for (int32_t k = 0; k < r->n_stragglers; k++)
    fprintf(fp, "%s%d:%.*g", k ? ", " : "stragglers ", r->stragglers[k].rank,
            DS__EXACT(r->stragglers[k].factor));
  if (r->n_stragglers > 0) fputs(after, fp);
}

/* A row whose ranks fill nodes unevenly with no rails (a node holding one
 * of them or reaching one NIC): the model's ring is a fallback
 * (ds_ring_nodes_uneven), said where the numbers are. */
static void print_uneven_note(FILE *fp, const struct ds_summary *r) {
  if (!r->uneven_nodes[0]) return;
  fprintf(fp, "  note: %d ranks fill the nodes unevenly (%s): the model runs one ring in rank "
              "order, crossing each node boundary through one NIC (a node holds one rank or "
              "reaches one NIC), where NCCL may spread its channels over more NICs; the "
              "all-reduces' time may be too long "
              "(docs/collectives.md, \"Nodes filled unevenly\")\n",
          r->world_size, r->uneven_nodes);
}

/* --jitter's percentiles over --samples; of one sample they are the
 * iteration itself, so one number is printed, and how to get more. */
static void print_quantiles(FILE *fp, const struct ds_summary *r) {
  if (!r->has_quantiles) return;
  /* a sweep's CV 0 row draws nothing: its samples are one timeline */
  if (r->jitter_cv <= 0)
    fprintf(fp, "    jitter       CV 0: no draws, every sample the iteration above\n");
  else if (r->samples > 1)
    /* every other time printed is one sample's, which can lie outside
     * the quantiles of a few: say whose */
    fprintf(fp, "    p50/p95/p99  %10.3f / %.3f / %.3f ms  (%d samples, jitter CV %g; every "
            "other time: seed %llu's)\n", r->iter_p50_ms, r->iter_p95_ms, r->iter_p99_ms,
            r->samples, r->jitter_cv, (unsigned long long)r->seed);
  else
    fprintf(fp, "    jitter       CV %g, one sample: the iteration above (--samples N for "
                "p50/p95/p99)\n", r->jitter_cv);
}

/* --loop free (report.h free_loop): whether the reported iteration is
 * steady, which a fixed count of iterations cannot promise. The host runs
 * ahead of the GPU, and its lead carries from one iteration into the
 * next: it drains or grows by the difference of the host's and the GPU's
 * periods each iteration, so the period can change after many equal ones
 * (4gpu at --host-scale 1.15: 32.626 ms from iteration 2 to 8, 32.678 at
 * 9, 32.711 from 10, as the lead runs out). Compared
 * with the iteration before to the printed microsecond; iteration 0
 * starts with no lead, so --iters 2 cannot compare, nor can --jitter's
 * iterations, each with times of its own. DDP's bucket rebuild runs its
 * forward (broadcasts, blocking copies) once, in iteration 1 (static
 * graph: 2) of a longer run: compared with it, the reported iteration
 * differs by that one-time cost, which the line names, not the lead; so
 * does a reported iteration that is the first on the rebuilt buckets
 * (static_graph at --iters 3), compared with one on the buckets before. */
static void print_loop_steadiness(FILE *fp, const struct ds_summary *r) {
  if (!r->free_loop) return;
  if (r->has_quantiles && r->jitter_cv > 0) /* each iteration's own draws */
    fputs("    loop free    not checked for a steady period: --jitter draws every iteration's "
          "times anew\n", fp);
  else if (r->prev_iter_ms < 0)
    fprintf(fp, "    loop free    not checked for a steady period: iteration 0 starts with no "
                "host lead and iteration %d the lead it built; --iters %d or more compares the "
                "last two\n", r->reported_iter, r->compare_iters);
  else if (r->prev_ran_rebuild) /* a one-time cost, not the lead's drift */
    fprintf(fp, "    loop free    not checked for a steady period: iteration %d took %.3f ms, "
                "running the bucket rebuild's broadcasts and blocking copies (once); --iters %d "
                "or more compares two iterations after it\n",
            r->reported_iter - 1, r->prev_iter_ms, r->compare_iters);
  else if (r->prev_before_rebuild) /* another bucket layout, not the lead's drift */
    fprintf(fp, "    loop free    not checked for a steady period: iteration %d took %.3f ms on "
                "the buckets before their rebuild, iteration %d on the rebuilt ones; --iters %d "
                "or more compares two iterations after the rebuild\n",
            r->reported_iter - 1, r->prev_iter_ms, r->reported_iter, r->compare_iters);
  else if (fabs(r->iter_ms - r->prev_iter_ms) >= 0.0005)
    fprintf(fp, "    loop free    not yet steady: iteration %d took %.3f ms; the host's lead over "
                "the GPU, carried from one iteration into the next, still moves the period "
                "(more --iters)\n", r->reported_iter - 1, r->prev_iter_ms);
  else
    fprintf(fp, "    loop free    iteration %d took the same; the host's lead over the GPU "
                "carries into the next iteration and can move a later one (more --iters to "
                "confirm)\n", r->reported_iter - 1);
}

/* The time NCCL's kernels beside rank 0's compute kernels added to them
 * (interference.h), part of forward, backward and optimizer above; printed
 * where it shows (the plain algorithms hold nothing), and under ps, which
 * runs no NCCL kernel, as the 0 it is, and why. */
static void print_interference(FILE *fp, const struct ds_summary *r) {
  if (r->has_ps)
    fprintf(fp, "    interference %10.3f ms  (pushes and pulls are no NCCL kernels: they slow "
                "no kernel; docs/strategies.md)\n", r->interference_ms);
  else if (r->interference_ms >= 0.0005)
    fprintf(fp, "    interference %10.3f ms  (rank 0's kernels slowed beside NCCL's: their time "
                "less their time alone, within the three above; docs/architecture.md)\n",
            r->interference_ms);
}

/* Samples per second and the speedup over a healthy single GPU at the
 * same per-GPU batch (run.c fill_speedups): the CSV's samples_per_s and
 * speedup_vs_single, on every block, DDP's alone and the strategies'. */
static void print_throughput(FILE *fp, const struct ds_summary *r) {
  fprintf(fp, "  throughput     %10.1f samples/s  (%.3f x single at batch %lld)\n",
          r->samples_per_s, r->speedup_vs_single, (long long)r->batch_per_gpu);
}

/* One row of a run that is not DDP alone (--strategy with other names). */
static void print_strategy_row(FILE *fp, const struct ds_summary *r) {
  fputc('\n', fp);
  if (strcmp(r->strategy, "single") == 0)
    if (r->grad_accum > 1) /* --grad-accum: the iteration is K batches */
      fprintf(fp, "single: 1 GPU, batch %lld, %d micro-steps per optimizer step\n",
              (long long)r->batch_per_gpu, r->grad_accum);
    else
      fprintf(fp, "single: 1 GPU, batch %lld\n", (long long)r->batch_per_gpu);
  else if (strcmp(r->strategy, "dp") == 0)
    fprintf(fp, "dp (torch.nn.DataParallel): %d GPU%s, batch %lld/GPU, %s\n", r->world_size,
            r->world_size == 1 ? "" : "s", (long long)r->batch_per_gpu, r->ddp_options);
  else if (is_ddp(r))
    fprintf(fp, "ddp: %d GPU%s, batch %lld/GPU, bucket cap %g MiB (first bucket %g MiB), "
                "options %s\n", r->world_size, r->world_size == 1 ? "" : "s",
            (long long)r->batch_per_gpu, r->bucket_mb, r->first_bucket_mb, r->ddp_options);
  else if (r->has_ps)
    fprintf(fp, "ps (parameter server, %s): %d worker%s, batch %lld/GPU, %d server%s, "
                "options %s\n", r->ps_async ? "async" : "sync", r->world_size,
            r->world_size == 1 ? "" : "s", (long long)r->batch_per_gpu, r->ps_servers,
            r->ps_servers == 1 ? "" : "s", r->ddp_options);
  else
    fprintf(fp, "%s: %d GPUs, batch %lld/GPU, options %s\n", r->strategy, r->world_size,
            (long long)r->batch_per_gpu, r->ddp_options);
  if (r->has_sweep_ids)
    fprintf(fp, "  sweep options  ring chunks %d, straggler factor %g, comm hook %s "
                "(docs/sweeps.md)\n", r->opt_ring_chunks, r->straggler_factor,
            r->comm_hook);
  if (is_ddp(r)) print_uneven_note(fp, r);
  if (!r->has_ps) { /* ps's options say its stragglers */
    if (r->n_stragglers > 0) fputs("  ", fp);
    print_stragglers_text(fp, r, "\n");
  }
  fprintf(fp, "  iteration      %10.3f ms\n", r->iter_ms);
  if (r->has_ps)
    fprintf(fp, "    per worker   %10.3f to %.3f ms  (each worker's mean step from the end "
                "of iteration 0 to the last; throughput from these)\n",
            r->worker_step_min_ms, r->worker_step_max_ms);
  print_quantiles(fp, r);
  print_loop_steadiness(fp, r);
  fprintf(fp, "    forward      %10.3f ms\n", r->fwd_ms);
  fprintf(fp, "    backward     %10.3f ms\n", r->bwd_ms);
  fprintf(fp, "    optimizer    %10.3f ms%s\n", r->step_ms, optimizer_note(r));
  print_interference(fp, r);
  if (r->has_ps)
    fprintf(fp, "  communication  %10.3f ms  (rank 0's pushes and pulls to other GPUs' servers)\n",
            r->comm_ms);
  else
    fprintf(fp, "  communication  %10.3f ms  (%s on rank 0)\n", r->comm_ms,
            is_ddp(r) ? "all-reduces and any buffer broadcast" /* as the DDP block says */
            : strcmp(r->strategy, "dp") == 0 ? "scatter, broadcast, gather, reduce time"
                                             : "communication time");
  fprintf(fp, "    exposed      %10.3f ms  (not hidden under compute)\n", r->exposed_comm_ms);
  fprintf(fp, "    overlap      %10.1f %%\n", r->overlap_pct);
  print_gpu_time(fp, r);
  if (is_ddp(r)) print_buckets(fp, r);
  else if (strcmp(r->strategy, "dp") == 0 && r->world_size == 1)
    fprintf(fp, "  coalesced      %10d reduce chunks (one GPU: DataParallel calls the module "
                "itself, nothing is reduced)\n", r->n_buckets);
  else if (strcmp(r->strategy, "dp") == 0)
    fprintf(fp, "  coalesced      %10d reduce chunks of at most %g MiB (broadcast chunks "
                "close at %g MiB or more)\n", r->n_buckets, r->bucket_mb, r->bucket_mb);
  if (r->has_ps)
    fprintf(fp, "  staleness      %10.3f mean, %lld max  (updates applied between a "
                "worker's pull and its gradient's)\n", r->staleness_mean,
            (long long)r->staleness_max);
  print_throughput(fp, r);
  if (r->has_dp_mem) {
    fputs("  peak memory\n", fp);
    print_dp_gpu(fp, "GPU 0", &r->dp_mem.gpu0);
    print_dp_gpu(fp, "other GPUs", &r->dp_mem.other);
  } else {
    print_memory(fp, r);
    if (r->has_ps)
      fprintf(fp, "    GPU 0 %.3f GiB, other GPUs up to %.3f GiB  (above: the fullest; a "
                  "server's GPU adds its shard's master copy, optimizer state and "
                  "a buffer per worker for its push (as buckets))\n",
              r->peak_mem_gib_gpu0, r->peak_mem_gib_other);
  }
}

/* The options that vary between two rows of one strategy and that the
 * table's other columns do not show (the bucket cap, no_sync, the swept
 * ids): each a bit of the mask, so that rows alike in the shown columns
 * are told apart. */
enum { SBS_BUCKET = 1, SBS_NO_SYNC = 2, SBS_CHUNKS = 4, SBS_HOOK = 8, SBS_STRAGGLER = 16,
       SBS_PS = 32, SBS_DP_OUT = 64, SBS_JITTER = 128 };

static int sbs_differ(const struct ds_summary *a, const struct ds_summary *b) {
  if (strcmp(a->strategy, b->strategy) != 0) return 0;
  return (a->bucket_mb != b->bucket_mb ? SBS_BUCKET : 0) |
         (a->no_sync != b->no_sync ? SBS_NO_SYNC : 0) |
         (a->opt_ring_chunks != b->opt_ring_chunks ? SBS_CHUNKS : 0) |
         (strcmp(a->comm_hook, b->comm_hook) != 0 ? SBS_HOOK : 0) |
         (a->straggler_factor != b->straggler_factor ? SBS_STRAGGLER : 0) |
         (a->opt_ps_servers != b->opt_ps_servers ? SBS_PS : 0) |
         (a->opt_dp_output_device != b->opt_dp_output_device ? SBS_DP_OUT : 0) |
         (a->jitter_cv != b->jitter_cv ? SBS_JITTER : 0);
}

static void sbs_options(FILE *fp, const struct ds_summary *r, int mask) {
  fputc(' ', fp);
  if (mask & SBS_BUCKET) fprintf(fp, " bucket-mb=%g", r->bucket_mb);
  if (mask & SBS_NO_SYNC) fprintf(fp, " no-sync=%d", r->no_sync);
  if (mask & SBS_CHUNKS) fprintf(fp, " ring-chunks=%d", r->opt_ring_chunks);
  if (mask & SBS_HOOK) fprintf(fp, " comm-hook=%s", r->comm_hook);
  if (mask & SBS_STRAGGLER) fprintf(fp, " straggler=%g", r->straggler_factor);
  if (mask & SBS_PS) fprintf(fp, " ps-servers=%d", r->opt_ps_servers);
  if (mask & SBS_DP_OUT) fprintf(fp, " dp-output-device=%d", r->opt_dp_output_device);
  if (mask & SBS_JITTER) fprintf(fp, " jitter=%g", r->jitter_cv);
}

void ds_report_print_side_by_side(FILE *fp, const struct ds_summary *rows, int32_t n) {
  int mask = 0, scaling = 0;
  for (int32_t i = 0; i < n; i++) {
    scaling |= rows[i].has_scaling;
    for (int32_t j = i + 1; j < n; j++) mask |= sbs_differ(&rows[i], &rows[j]);
  }
  fputs("\nside by side:\n"
        "  strategy  GPUs  batch/GPU   iteration ms     samples/s  vs single  "
        "GPU 0 GiB  other GiB", fp);
  /* a sweep of the world size: each row's scaling efficiency (sweep.h) */
  if (scaling) fputs("  scaling", fp);
  if (mask) fputs("  options", fp);
  fputc('\n', fp);
  for (int32_t i = 0; i < n; i++) {
    const struct ds_summary *r = &rows[i];
    fprintf(fp, "  %-8s  %4d  %9lld  %13.3f  %12.1f  %8.3fx  %9.3f  %9.3f", r->strategy,
            r->world_size, (long long)r->batch_per_gpu, r->iter_ms, r->samples_per_s,
            r->speedup_vs_single, r->peak_mem_gib_gpu0, r->peak_mem_gib_other);
    if (scaling && isnan(r->scaling_efficiency_pct)) fputs("        -", fp);
    else if (scaling) fprintf(fp, "  %6.1f%%", r->scaling_efficiency_pct);
    if (mask) { /* a row's own strategy's varying options; none: "-" */
      int own = 0;
      for (int32_t j = 0; j < n; j++) own |= sbs_differ(r, &rows[j]);
      if (own) sbs_options(fp, r, own);
      else fputs("  -", fp);
    }
    fputc('\n', fp);
  }
}

/* A line a describer wrote (rates.h, kernel_models.h): each returns the
 * whole line's length, so a line longer than the buffer here is described
 * again into one of its length rather than cut. */
typedef size_t (*describe_fn)(const void *what, char *buf, size_t size);

static void print_described(FILE *fp, describe_fn describe, const void *what) {
  char line[640], shown[sizeof line];
  size_t len = describe(what, line, sizeof line);
  if (len < sizeof line) {
    fprintf(fp, "%s\n", ds_textout_printable(line, shown, sizeof shown));
    return;
  }
  char *whole = malloc(len + 1);
  if (!whole) {
    /* out of memory: the line cut, and said so */
    fprintf(fp, "%s...\n", ds_textout_printable(line, shown, sizeof shown));
    return;
  }
  size_t again = describe(what, whole, len + 1);
  assert(again == len);
  (void)again;
  fprintf(fp, "%s\n", ds_textout_printable(whole, whole, len + 1));
  free(whole);
}

static size_t describe_rates(const void *rates, char *buf, size_t size) {
  return ds_rates_describe(rates, buf, size);
}

/* The kernel models and the batch their census was taken at (0: the
 * rows' only batch). */
struct kernel_models_line {
  const struct ds_kernel_models *km;
  int64_t census_batch;
};

static size_t describe_kernel_models(const void *what, char *buf, size_t size) {
  const struct kernel_models_line *l = what;
  return ds_kernel_models_describe(l->km, l->census_batch, buf, size);
}

/* Where the compute rates came from (rates.h), and the measured kernel
 * models the run charged (kernel_models.h): a line each, for every row of
 * a run (one topology, model and precision), the rows' own merged (a
 * PowerSGD row adds its GEMMs' rate; a row's batch or strategy may charge
 * a kernel model another does not). A census of passes is the first row's,
 * the model's passes at one batch (README.md "kernel models"): rows'
 * censuses are not added, and a sweep of batches says which batch. */
static void print_rates(FILE *fp, const struct ds_summary *rows, int32_t n) {
  struct ds_rates rates = rows[0].rates;
  struct ds_kernel_models km = rows[0].kernel_models;
  struct kernel_models_line models = {&km, 0};
  for (int32_t i = 1; i < n; i++) {
    ds_rates_merge(&rates, &rows[i].rates);
    ds_kernel_models_merge(&km, &rows[i].kernel_models);
    if (rows[i].batch_per_gpu != rows[0].batch_per_gpu)
      models.census_batch = rows[0].batch_per_gpu;
  }
  print_described(fp, describe_rates, &rates);
  print_described(fp, describe_kernel_models, &models);
}

/* Whether two optional strings say the same (NULL as ""). */
static int same_text(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

/* The header's collective model (--coll-model): how the ring, tree and
 * NVLSTree collectives execute, whatever algorithm ran (the other
 * algorithms always run per flow). */
static const char *coll_model_text(const char *coll_model) {
  return strcmp(coll_model, "flow") == 0 ? "collectives per flow"
                                         : "rings and trees aggregated";
}

/* "8" or, over a sweep, "1 to 8". */
static void text_range_int(char *buf, size_t cap, long long lo, long long hi) {
  if (lo == hi) snprintf(buf, cap, "%lld", lo);
  else snprintf(buf, cap, "%lld to %lld", lo, hi);
}

/* The header's collective model over the rows: one, or each with the
 * world sizes that ran it (--coll-model auto: per flow up to 64 ranks,
 * aggregated past them; "collectives per flow at 8 to 64 ranks, rings and
 * trees aggregated at 512"). */
static void coll_models_text(const struct ds_summary *rows, int32_t n, char *buf, size_t cap) {
  long long lo[2] = {0, 0}, hi[2] = {0, 0};
  int seen[2] = {0, 0};
  for (int32_t i = 0; i < n; i++) {
    int k = strcmp(rows[i].coll_model, "flow") != 0;
    long long w = rows[i].world_size;
    if (!seen[k] || w < lo[k]) lo[k] = w;
    if (!seen[k] || w > hi[k]) hi[k] = w;
    seen[k] = 1;
  }
  if (!seen[0] || !seen[1]) {
    snprintf(buf, cap, "%s", coll_model_text(rows[0].coll_model));
    return;
  }
  char flow[48], agg[48];
  text_range_int(flow, sizeof flow, lo[0], hi[0]);
  text_range_int(agg, sizeof agg, lo[1], hi[1]);
  snprintf(buf, cap, "collectives per flow at %s ranks, rings and trees aggregated at %s",
           flow, agg);
}

/* The all-reduce's line, after `indent`: NCCL's model when it chooses
 * (auto: the algorithm too, per call) or runs a protocol (nvls/auto); the
 * other names are the plain algorithms; none (one rank) runs nothing. */
static void print_allreduce(FILE *fp, const struct ds_summary *r, const char *indent) {
  if (!r->coll_algo) return;
  if (strcmp(r->coll_algo, "auto") == 0 || strchr(r->coll_algo, '/') != NULL) {
    fprintf(fp, "%sall-reduce %s: %s (cost model %s%s; docs/collectives.md)\n", indent,
            r->coll_algo,
            strcmp(r->coll_algo, "auto") == 0
                ? "NCCL's choice of algorithm and protocol per call, on its channels"
                : "NCCL's channels and protocols",
            ds_nccl_constants_version(),
            r->nccl_extra && strcmp(r->nccl_extra, "none") == 0
                ? ", without the mechanisms it leaves out: --nccl-extra none" : "");
    if (r->ll128_default_off)
      fprintf(fp, "%s  LL128 off: NCCL enables it by default only over NVLink inside a node "
                  "(--proto LL128 forces it, as NCCL_PROTO=LL128)\n", indent);
  } else if (strcmp(r->coll_algo, "none") == 0)
    /* run_setup.c: NCCL's one-rank in-place all-reduce launches nothing */
    fprintf(fp, "%sall-reduce none: one rank, no collective runs\n", indent);
  else
    fprintf(fp, "%sall-reduce %s: the plain algorithm on the links' own bandwidth and "
                "latency, not NCCL's (docs/collectives.md)\n", indent, r->coll_algo);
}

void ds__report_print_text(FILE *fp, const struct ds_summary *rows, int32_t n) {
  int ddp_only = 1;
  for (int32_t i = 0; i < n; i++) ddp_only &= is_ddp(&rows[i]);
  if (!ddp_only) {
    /* Strategies side by side: a common header, then a block per row. */
    const struct ds_summary *r = &rows[0];
    char model[DS_NAME_CAP], topology[DS_NAME_CAP], gpu[DS_NAME_CAP];
    fprintf(fp, "%s on %s (%s), %s, network %s; iterations simulated: %d, reporting "
                "iteration %d\n", ds_textout_printable(r->model, model, sizeof model),
            ds_textout_printable(r->topology, topology, sizeof topology),
            ds_textout_printable(r->gpu, gpu, sizeof gpu), ds_report_precision(r), r->net_model,
            r->iters, r->reported_iter);
    print_flags(fp, r);
    print_rates(fp, rows, n);
    for (int32_t i = 0; i < n; i++) print_strategy_row(fp, &rows[i]);
    return;
  }
  /* A sweep of world size, batch, no_sync, straggler factor, jitter, ring
   * chunks or hook names them on every block (the header line gives the
   * ranks, batch, collective model and iteration 0 over every block). */
  int vary_world = 0, vary_batch = 0, vary_sync = 0, vary_chunks = 0, vary_hook = 0;
  int vary_straggler = 0, vary_jitter = 0, vary_algo = 0;
  for (int32_t i = 1; i < n; i++) {
    vary_world |= rows[i].world_size != rows[0].world_size;
    vary_batch |= rows[i].batch_per_gpu != rows[0].batch_per_gpu;
    vary_sync |= rows[i].no_sync != rows[0].no_sync;
    vary_chunks |= rows[i].opt_ring_chunks != rows[0].opt_ring_chunks;
    vary_hook |= strcmp(rows[i].comm_hook, rows[0].comm_hook) != 0;
    vary_straggler |= rows[i].straggler_factor != rows[0].straggler_factor;
    vary_jitter |= rows[i].jitter_cv != rows[0].jitter_cv;
    /* one rank runs no collective, more NCCL's model: then each block
     * says its own */
    vary_algo |= !same_text(rows[i].coll_algo, rows[0].coll_algo) ||
                 !same_text(rows[i].nccl_extra, rows[0].nccl_extra);
  }
  int32_t least = rows[0].world_size, most = rows[0].world_size;
  long long b_lo = rows[0].batch_per_gpu, b_hi = b_lo;
  double f_lo = rows[0].first_iter_ms, f_hi = f_lo;
  for (int32_t i = 1; i < n; i++) {
    if (rows[i].world_size < least) least = rows[i].world_size;
    if (rows[i].world_size > most) most = rows[i].world_size;
    if (rows[i].batch_per_gpu < b_lo) b_lo = rows[i].batch_per_gpu;
    if (rows[i].batch_per_gpu > b_hi) b_hi = rows[i].batch_per_gpu;
    if (rows[i].first_iter_ms < f_lo) f_lo = rows[i].first_iter_ms;
    if (rows[i].first_iter_ms > f_hi) f_hi = rows[i].first_iter_ms;
  }
  /* The header's ranks, batch, collective model and iteration 0 hold for
   * every block: a range where the sweep moves them (a batch sweep's
   * header named its first batch; --coll-model auto's per-flow header a
   * sweep whose rows past 64 ranks ran aggregated; iteration 0 the first
   * row's, where each configuration has its own: CSV first_iter_ms). */
  char ranks[80], batch[48], coll[160], first[80];
  text_range_int(ranks, sizeof ranks, least, most);
  /* ranks on part of the topology: its size too, as `ddpsim collective`
   * says it ("12 ranks on 2node-ib (16 x ...)") */
  if (most < rows[0].topology_gpus) {
    size_t used = strlen(ranks);
    snprintf(ranks + used, sizeof ranks - used, " of its %d", rows[0].topology_gpus);
  }
  text_range_int(batch, sizeof batch, b_lo, b_hi);
  coll_models_text(rows, n, coll, sizeof coll);
  if (f_lo == f_hi) snprintf(first, sizeof first, "%.3f ms", f_lo);
  else snprintf(first, sizeof first, "%.3f to %.3f ms by configuration", f_lo, f_hi);
  char model[DS_NAME_CAP], topology[DS_NAME_CAP], gpu[DS_NAME_CAP];
  for (int32_t i = 0; i < n; i++) {
    const struct ds_summary *r = &rows[i];
    if (i == 0)
      fprintf(fp,
              "%s: %s on %s (%s x %s), batch %s/GPU, %s, network %s, %s\n"
              "iterations simulated: %d; reporting iteration %d "
              "(iteration 0: %s)\n",
              r->strategy, ds_textout_printable(r->model, model, sizeof model),
              ds_textout_printable(r->topology, topology, sizeof topology), ranks,
              ds_textout_printable(r->gpu, gpu, sizeof gpu),
              batch, ds_report_precision(r), r->net_model, coll,
              r->iters,
              r->reported_iter, first);
    if (i == 0 && !vary_algo) print_allreduce(fp, r, "");
    if (i == 0) print_flags(fp, r);
    if (i == 0) print_rates(fp, rows, n);
    fputc('\n', fp);
    if (vary_world) fprintf(fp, "world size %d, ", r->world_size);
    if (vary_batch) fprintf(fp, "batch %lld/GPU, ", (long long)r->batch_per_gpu);
    if (vary_sync) fprintf(fp, "no_sync %d, ", r->no_sync);
    if (vary_straggler) fprintf(fp, "straggler factor %g, ", r->straggler_factor);
    if (vary_jitter) fprintf(fp, "jitter CV %g, ", r->jitter_cv);
    if (vary_chunks) fprintf(fp, "ring chunks %d, ", r->opt_ring_chunks);
    if (vary_hook) fprintf(fp, "comm hook %s, ", r->comm_hook);
    print_stragglers_text(fp, r, ", ");
    fprintf(fp, "bucket cap %g MiB (first bucket %g MiB)", r->bucket_mb, r->first_bucket_mb);
    /* the options that change what the block's times hold (grad_accum=4:
     * the iteration is 4 batches), as the strategies' blocks name them;
     * nothing for the defaults, whose lines stay as they were */
    if (r->ddp_options && strcmp(r->ddp_options, "none") != 0)
      fprintf(fp, ", options %s", r->ddp_options);
    fputc('\n', fp);
    if (vary_algo) print_allreduce(fp, r, "  ");
    print_uneven_note(fp, r);
    fprintf(fp, "  iteration      %10.3f ms\n", r->iter_ms);
    print_quantiles(fp, r);
    print_loop_steadiness(fp, r);
    fprintf(fp, "    forward      %10.3f ms\n", r->fwd_ms);
    fprintf(fp, "    backward     %10.3f ms\n", r->bwd_ms);
    fprintf(fp, "    optimizer    %10.3f ms%s\n", r->step_ms, optimizer_note(r));
    print_interference(fp, r);
    fprintf(fp, "  communication  %10.3f ms  (all-reduces and any buffer broadcast on rank 0)\n",
            r->comm_ms);
    fprintf(fp, "    exposed      %10.3f ms  (not hidden under compute)\n",
            r->exposed_comm_ms);
    fprintf(fp, "    overlap      %10.1f %%\n", r->overlap_pct);
    print_gpu_time(fp, r);
    print_buckets(fp, r);
    print_throughput(fp, r);
    print_memory(fp, r);
  }
}
