/*
 * --strategy single and dp (torch.nn.DataParallel), their schedule and
 * options: strategy lists and their rows, bad lists and options (exit 2),
 * a deterministic and complete trace and schedule, forked sweep rows,
 * ddpreal replaying the schedule on CPU, the coalesced groups (10 MiB, in
 * registration order), replicate against the input scatter, the gather's
 * dtype, and which rows say aggregate. The iteration: test_dp_iteration.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/dp.h"
#include "sim/train/model.h"
#include "tests/dp_cli.h"
#include "tests/support.h"

Test(dp, strategy_lists_and_their_rows) {
  /* dp does not use the bucket cap: one dp row, two ddp rows, in the
   * order given; single ignores the world size. */
  struct ds_test_result r =
      ds_test_cli(TINY "--strategy ddp,dp,single --bucket-mb 1,25 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_eq(rows(r.out), 4, "%s", r.out);
  const char *want[] = {"ddp", "ddp", "dp", "single"};
  for (int i = 0; i < 4; i++) {
    char s[64];
    ds_test_csv_str(r.out, "strategy", i, s, sizeof s);
    cr_assert_str_eq(s, want[i], "row %d", i);
  }
  cr_assert_float_eq(ds_test_csv_num(r.out, "world_size", 3), 1, 0);
  ds_test_release(&r);
  /* a plain ddp run prints no strategy table (its text is unchanged) */
  struct ds_test_result t = ds_test_cli(TINY "--strategy single,dp");
  cr_assert_eq(t.status, 0);
  cr_assert(strstr(t.out, "side by side:"), "%s", t.out);
  ds_test_release(&t);
}

Test(dp, bad_strategy_lists_and_dp_options_exit_2) {
  struct { const char *args, *msg; } cases[] = {
      {"--topo 4gpu --strategy dp,foo", "unknown strategy \"foo\""},
      {"--topo 4gpu --strategy ddp,dp,ddp", "strategy \"ddp\" given twice"},
      {"--topo 4gpu --strategy dp,", "unknown strategy \"\""},
      {"--topo 4gpu --strategy dp --dp-output-device 4", "below the world size 4"},
      {"--topo 4gpu --strategy dp --dp-output-device x", "option --dp-output-device"},
      {"--topo 4gpu --strategy dp,ddp --trace /tmp/x.csv", "give one --strategy"},
      {"--topo 2node-ib --strategy dp", "one process on one node"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    ds_test_ddpsim_refuses(cases[i].args, cases[i].msg);
}

Test(dp, trace_and_schedule_are_deterministic_and_complete) {
  char dir[] = "/tmp/ddpsim-dp-XXXXXX", args[512];
  cr_assert(mkdtemp(dir));
  char *texts[2][2];
  for (int k = 0; k < 2; k++) {
    snprintf(args, sizeof args, TINY "--strategy dp --iters 3 --trace %s/t%d.csv "
             "--schedule %s/s%d.csv", dir, k, dir, k);
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    ds_test_release(&r);
    snprintf(args, sizeof args, "%s/t%d.csv", dir, k);
    texts[k][0] = ds_test_slurp(args);
    unlink(args);
    snprintf(args, sizeof args, "%s/s%d.csv", dir, k);
    texts[k][1] = ds_test_slurp(args);
    unlink(args);
  }
  cr_assert_str_eq(texts[0][0], texts[1][0]);
  cr_assert_str_eq(texts[0][1], texts[1][1]);
  /* every kind DataParallel uses is in the schedule, on rank 0's streams */
  const char *want[] = {",0,comm,scatter,input,", ",0,comm,broadcast,replicate,",
                        ",0,host,fwd,launch,", ",0,comm,gather,outputs,",
                        ",0,compute,loss,loss,", ",0,comm,scatter,output_grad,",
                        ",0,comm,reduce,grads,", ",0,compute,step,optimizer,"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_assert(strstr(texts[0][1], want[i]), "missing %s", want[i]);
  /* the optimizer steps on GPU 0 only */
  cr_assert(!strstr(texts[0][1], ",1,compute,step,"));
  for (int k = 0; k < 2; k++) {
    free(texts[k][0]);
    free(texts[k][1]);
  }
  rmdir(dir);
}

Test(dp, forked_sweep_rows_equal_in_process_rows) {
  /* strategies x batches in worker processes: the same bytes as in process */
  struct ds_test_result a =
      ds_test_cli(TINY "--strategy single,dp,ddp --batch 1,2 --format csv --jobs 1");
  struct ds_test_result b =
      ds_test_cli(TINY "--strategy single,dp,ddp --batch 1,2 --format csv --jobs 3");
  cr_assert_eq(a.status + b.status, 0, "%s%s", a.err, b.err);
  cr_assert_eq(rows(a.out), 6, "%s", a.out);
  cr_assert_str_eq(a.out, b.out);
  /* each row's speedup is over the single row of its own batch */
  for (int row = 2; row < 6; row++) {
    int single = row % 2; /* rows: single b1, single b2, dp b1, dp b2, ddp b1, ddp b2 */
    cr_assert_float_eq(ds_test_csv_num(a.out, "speedup_vs_single", row),
                       ds_test_csv_num(a.out, "samples_per_s", row) /
                           ds_test_csv_num(a.out, "samples_per_s", single), 1e-5);
  }
  ds_test_release(&a);
  ds_test_release(&b);
}

Test(dp, bad_model_io_bytes_and_host_costs_name_the_key) {
  char dir[] = "/tmp/ddpsim-dpkeys-XXXXXX", path[512], args[1024];
  cr_assert(mkdtemp(dir));
  const char *model =
      "schema_version: 1\nname: m\nsample: \"s\"\ndefault_batch: 1\noptimizer: sgd\n"
      "input_bytes: -5\nlayers:\n  - name: l0\n    fwd_flops: 1\n    bwd_flops: 1\n"
      "    fwd_bytes: 0\n    act_bytes: 1\n    params:\n      - {name: w, numel: 1}\n";
  write_file(dir, "m.yaml", model, path, sizeof path);
  snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml --model %s --strategy dp", path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "m.yaml:6:") && strstr(r.err, "input_bytes"), "%s", r.err);
  ds_test_release(&r);
  unlink(path);
  const char *topo =
      "schema_version: 1\nname: t\ngpu: TestGPU\nnodes: 1\ngpus_per_node: 2\n"
      "intra_node:\n  template: nvswitch\n  link_bw: 10GBps\n  link_lat: 1us\n"
      "compute:\n  host_launch: fast\n";
  char gpus[512];
  write_file(dir, "t.yaml", topo, path, sizeof path);
  /* the GPU table beside the topology, as the lookup expects */
  char *table = ds_test_slurp("tests/data/gpus.yaml");
  write_file(dir, "gpus.yaml", table, gpus, sizeof gpus);
  free(table);
  snprintf(args, sizeof args, "--topo %s --model tests/data/tiny-model.yaml --strategy dp",
           path);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "t.yaml:11:") && strstr(r.err, "host_launch"), "%s", r.err);
  ds_test_release(&r);
  unlink(path);
  unlink(gpus);
  rmdir(dir);
}

Test(dp, ddpreal_cpu_replays_a_dataparallel_schedule) {
  /* The schedule is ddpreal's input too: the cpu device runs the host
   * ops as delays and DataParallel's scatter, broadcast, gather and reduce
   * as MPI collectives on real buffers, checked element by element. */
  char dir[] = "/tmp/ddpsim-dpreal-XXXXXX", args[1024];
  cr_assert(mkdtemp(dir));
  snprintf(args, sizeof args, TINY "--strategy dp --world-size 2 --schedule %s/s.csv", dir);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  ds_test_replay_cpu2(dir);
  snprintf(args, sizeof args, "rm -rf %s", dir);
  cr_assert_eq(system(args), 0);
}

Test(dp, coalesced_groups_close_before_passing_10_mib) {
  /* torch._utils._take_tensors: a group is flushed when the next tensor
   * would take it past the limit, so groups never exceed it unless one
   * tensor alone does. fp32 tensors of 4, 4, 4, 12 and 1 MiB (in elements
   * of 4 bytes): [4+4] (a third 4 would make 12), [4] (then 16), [12]
   * alone, [1]. */
  const int64_t mib = 1024 * 1024 / 4;
  struct ds_param p[5] = {{.numel = 4 * mib}, {.numel = 4 * mib}, {.numel = 4 * mib},
                          {.numel = 12 * mib}, {.numel = 1 * mib}};
  struct ds_model m = {.params = p, .n_params = 5};
  struct ds_dp_chunks c;
  cr_assert_eq(ds_dp_chunks(&m, 4, DS_DP_COALESCE_BYTES, &c), DS_OK);
  const double want[] = {8, 4, 12, 1};
  cr_assert_eq(c.n, 4);
  for (int i = 0; i < 4; i++) cr_assert_float_eq(c.bytes[i], want[i] * 1024 * 1024, 0);
  /* replicate's broadcast_coalesced groups by C++ take_tensors
   * (tensor_flatten.cpp): the tensor joins, and the group closes once it
   * holds 10 MiB or more: 4 + 4 + 4 = 12 closes, 12 alone, then 1. (The
   * old code broadcast the reduce's 4 groups: fails.) */
  const double want_bcast[] = {12, 12, 1};
  cr_assert_eq(c.n_bcast, 3);
  for (int i = 0; i < 3; i++)
    cr_assert_float_eq(c.bcast_bytes[i], want_bcast[i] * 1024 * 1024, 0);
  ds_dp_chunks_release(&c);
  /* at exactly 10 MiB both close: 6 + 4 is one group under either rule,
   * the next 1 MiB opens another (Python: 10 + 1 > 10; C++: 10 >= 10) */
  struct ds_param q[3] = {{.numel = 6 * mib}, {.numel = 4 * mib}, {.numel = 1 * mib}};
  m = (struct ds_model){.params = q, .n_params = 3};
  cr_assert_eq(ds_dp_chunks(&m, 4, DS_DP_COALESCE_BYTES, &c), DS_OK);
  cr_assert_eq(c.n, 2);
  cr_assert_eq(c.n_bcast, 2);
  cr_assert_float_eq(c.bcast_bytes[0], 10.0 * 1024 * 1024, 0);
  ds_dp_chunks_release(&c);
  /* ResNet-50 in fp32 (97.5 MiB): 13 reduce groups, the count the CLI
   * reports, and 9 broadcasts in the schedule */
  struct ds_test_result r = ds_test_cli("--topo 4gpu --strategy dp --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_float_eq(ds_test_csv_num(r.out, "n_buckets", 0), 13, 0);
  cr_assert_float_eq(ds_test_csv_num(r.out, "bucket_mb", 0), 10, 0);
  ds_test_release(&r);
  struct ds_model *rn = ds_test_model("models/resnet50.yaml");
  cr_assert_eq(ds_dp_chunks(rn, 4, DS_DP_COALESCE_BYTES, &c), DS_OK);
  cr_assert_eq(c.n, 13);
  cr_assert_eq(c.n_bcast, 9);
  ds_dp_chunks_release(&c);
  ds_model_free(rn);
}

/* DataParallel's groups walk module.parameters(), the registration order:
 * tensors a, b, c of 6, 6, 4 MiB in the file, registered c, a, b. Reduce
 * (Python rule): c + a = 10 (not past 10), then b: 10, 6; broadcast (C++
 * rule): c, then c + a = 10 closes, then b: 10, 6. In file order they
 * were 6, 10 and 12, 4. (The old code walked the file's order: fails.) */
Test(dp, groups_follow_registration_order) {
  const int64_t mib = 1024 * 1024 / 4;
  struct ds_param p[3] = {{.numel = 6 * mib}, {.numel = 6 * mib}, {.numel = 4 * mib}};
  int32_t reg[3] = {2, 0, 1}, reg_index[3] = {1, 2, 0};
  struct ds_model m = {.params = p, .n_params = 3, .registration = reg,
                       .registration_index = reg_index};
  struct ds_dp_chunks c;
  cr_assert_eq(ds_dp_chunks(&m, 4, DS_DP_COALESCE_BYTES, &c), DS_OK);
  cr_assert_eq(c.n, 2);
  cr_assert_float_eq(c.bytes[0], 10.0 * 1024 * 1024, 0);
  cr_assert_float_eq(c.bytes[1], 6.0 * 1024 * 1024, 0);
  cr_assert_eq(c.n_bcast, 2);
  cr_assert_float_eq(c.bcast_bytes[0], 10.0 * 1024 * 1024, 0);
  cr_assert_float_eq(c.bcast_bytes[1], 6.0 * 1024 * 1024, 0);
  ds_dp_chunks_release(&c);
}

Test(dp, replicate_does_not_wait_for_the_input_scatter) {
  /* The scatter's copies are non_blocking (comm.cpp), so replicate()'s
   * Python starts on the main thread right after the scatter's launch:
   * two iterations in one schedule, 2 GPUs. GPU 0's replicate waits for
   * the previous step only (none in iteration 0), never for the scatter;
   * GPU 1's for its last reduce of the previous iteration (a schedule's
   * dependencies stay on one rank), and its first forward kernel for the
   * broadcasts, which follow the scatter on the comm stream. */
  struct ds_err err = {0};
  struct ds_topo *t;
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &t, &err), DS_OK, "%s", err.msg);
  struct ds_model *m = ds_test_model("tests/data/tiny-model.yaml");
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK, "%s", err.msg);
  struct ds_dp_chunks ch;
  cr_assert_eq(ds_dp_chunks(m, 4, DS_DP_COALESCE_BYTES, &ch), DS_OK);
  struct ds_dp_options o = {.world_size = 2, .batch = 1};
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  int64_t n_coll, step0 = -1, reduce0[2] = {-1, -1};
  for (int it = 0; it < 2; it++) {
    size_t first = s->n_ops;
    int64_t base = s->n_ops ? s->ops[s->n_ops - 1].id + 1 : 0;
    cr_assert_eq(ds_dp_build(m, &c, &o, &ch, base, it * 100, s, &n_coll), DS_OK);
    for (size_t i = first; i < s->n_ops; i++) {
      const struct ds_op *op = &s->ops[i];
      if (strcmp(op->name, "replicate") != 0 || op->stream != DS_STREAM_HOST) continue;
      const int64_t *deps = ds_schedule_deps(s, op);
      int64_t want = it == 0 ? -1 : op->rank == 0 ? step0 : reduce0[op->rank];
      if (want < 0) {
        cr_assert_eq(op->dep_count, 0, "iteration %d GPU %d", it, op->rank);
      } else {
        cr_assert_eq(op->dep_count, 1);
        cr_assert_eq(deps[0], want, "iteration %d GPU %d: after %lld, not %lld", it, op->rank,
                     (long long)want, (long long)deps[0]);
      }
    }
    if (it == 0) {
      ds_schedule_last_of_kind(s, DS_OP_STEP, 1, &step0);
      ds_schedule_last_of_kind(s, DS_OP_REDUCE, 2, reduce0);
      cr_assert(step0 >= 0 && reduce0[0] >= 0 && reduce0[1] >= 0);
    }
  }
  ds_schedule_free(s);
  ds_dp_chunks_release(&ch);
  ds_model_free(m);
  ds_topo_free(t);
}

/* DataParallel's gather moves the outputs in the dtype the last layer
 * writes (memory.h ds_output_bytes): under --amp fp16 a layer autocast
 * casts (tiny-model's classless l2) writes half, so 2 GPUs x batch 1 x
 * 1e6 fp32 bytes x 2/4 = 1e6 bytes; a last layer autocast leaves in fp32
 * (class memory) writes fp32: 2e6. The memory walk holds the gathered
 * outputs by the same rule: 2e6 - 1e6 more bytes on GPU 0 after the loss.
 * (The old gather scaled by the parameters' dtype, fp32 under --amp, 2e6
 * in both; the old walk by the activations', half in both: fails.) */
Test(dp, gather_moves_the_outputs_in_the_last_layers_dtype) {
  struct ds_err err = {0};
  struct ds_topo *t;
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &t, &err), DS_OK, "%s", err.msg);
  struct ds_model *m = ds_test_model("tests/data/tiny-model.yaml");
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_FP16, &c, &err), DS_OK, "%s", err.msg);
  struct ds_dp_chunks ch;
  cr_assert_eq(ds_dp_chunks(m, 4, DS_DP_COALESCE_BYTES, &ch), DS_OK);
  struct ds_dp_options o = {.world_size = 2, .batch = 1};
  struct ds_dp_memory mem[2];
  for (int k = 0; k < 2; k++) {
    if (k == 1) m->layers[2].cls = DS_LAYER_MEMORY;
    struct ds_schedule *s;
    int64_t n_coll;
    cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
    cr_assert_eq(ds_dp_build(m, &c, &o, &ch, 0, 0, s, &n_coll), DS_OK);
    int found = 0;
    for (size_t i = 0; i < s->n_ops; i++)
      if (s->ops[i].kind == DS_OP_GATHER) {
        cr_assert_float_eq(s->ops[i].bytes, k == 0 ? 1e6 : 2e6, 1e-6, "case %d", k);
        found = 1;
      }
    cr_assert(found);
    ds_schedule_free(s);
    ds_dp_memory(m, &c.precision, &o, &mem[k]);
  }
  /* GPU 0's peak comes after the loss's backward (backward, the reduce or
   * the step: 1e6 bytes of activations per layer are less than the
   * gradients added), where it holds the gathered outputs: W x batch x
   * (4 - 2)/4 x 1e6 = 1e6 bytes more in fp32 */
  cr_assert_float_eq(mem[1].gpu0.total - mem[0].gpu0.total, 1e6, 1.0,
                     "%.1f %.1f (%s, %s)", mem[0].gpu0.total, mem[1].gpu0.total,
                     mem[0].gpu0.peak_at, mem[1].gpu0.peak_at);
  ds_dp_chunks_release(&ch);
  ds_model_free(m);
  ds_topo_free(t);
}

/* Only ddp's ring and tree all-reduces aggregate: under --coll-model
 * aggregate dp's row says flow, what its chains ran (and the same time as
 * under flow), ddp's says aggregate. */
Test(dp, only_ddp_rows_say_aggregate) {
  struct ds_test_result a =
      ds_test_cli(TINY "--strategy dp,ddp --coll-model aggregate --format csv");
  struct ds_test_result f = ds_test_cli(TINY "--strategy dp,ddp --coll-model flow --format csv");
  cr_assert_eq(a.status, 0, "%s", a.err);
  cr_assert_eq(f.status, 0, "%s", f.err);
  char dp[16], ddp[16];
  ds_test_csv_str(a.out, "coll_model", 0, dp, sizeof dp);
  ds_test_csv_str(a.out, "coll_model", 1, ddp, sizeof ddp);
  cr_assert_str_eq(dp, "flow");
  cr_assert_str_eq(ddp, "aggregate");
  cr_assert_eq(ds_test_csv_num(a.out, "iter_ms", 0), ds_test_csv_num(f.out, "iter_ms", 0));
  ds_test_release(&a);
  ds_test_release(&f);
}

/* Nor do ddp's direct and reduce-broadcast all-reduces, which run per flow
 * whatever --coll-model says: their row said aggregate, and the header
 * "rings and trees aggregated", for the per-flow timeline. The ring's row
 * still says aggregate. */
Test(dp, per_flow_algorithms_say_flow_under_aggregate) {
  static const char *const algos[] = {"direct", "reduce-broadcast", "ring"};
  for (size_t i = 0; i < sizeof algos / sizeof *algos; i++) {
    char args[256], got[16];
    snprintf(args, sizeof args, TINY "--algo %s --coll-model aggregate --format csv", algos[i]);
    struct ds_test_result a = ds_test_cli(args);
    cr_assert_eq(a.status, 0, "%s: %s", args, a.err);
    ds_test_csv_str(a.out, "coll_model", 0, got, sizeof got);
    cr_assert_str_eq(got, strcmp(algos[i], "ring") == 0 ? "aggregate" : "flow", "%s", args);
    ds_test_release(&a);
  }
  struct ds_test_result t = ds_test_cli(TINY "--algo direct --coll-model aggregate");
  cr_assert_eq(t.status, 0, "%s", t.err);
  cr_assert(strstr(t.out, ", collectives per flow\n"), "%s", t.out);
  ds_test_release(&t);
  /* NVLS runs per flow within one node (no NVLSTree), aggregated across
   * nodes (NVLSTree's trees) */
  static const struct { const char *topo, *want; } nvls[] = {{"dgx-h100", "flow"},
                                                             {"2node-ib", "aggregate"}};
  for (size_t i = 0; i < sizeof nvls / sizeof *nvls; i++) {
    char args[256], got[16];
    snprintf(args, sizeof args, "--topo %s --model tests/data/tiny-model.yaml --algo nvls "
             "--coll-model aggregate --format csv", nvls[i].topo);
    struct ds_test_result a = ds_test_cli(args);
    cr_assert_eq(a.status, 0, "%s: %s", args, a.err);
    ds_test_csv_str(a.out, "coll_model", 0, got, sizeof got);
    cr_assert_str_eq(got, nvls[i].want, "%s", args);
    ds_test_release(&a);
  }
}
