/*
 * A calibration file's host keys through ddpsim (--calib), worked by hand
 * on host-bound toys: the host section and --host-scale on single's
 * iteration, the DDP keys on DDP's, and a bad host section or a host time
 * without its unit refused with its place (exit 2). The loader:
 * test_calib_load.c. No GPU needed.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/train/calib.h"
#include "tests/support.h"

/* --calib's host section through ddpsim, worked by hand on the host-bound
 * toy of tests/test_host_ops.c: tests/data/tiny-model-dispatch.yaml
 * (dispatches l0 5, l1 2, l2 4; nodes 4, 3, 2) on
 * tests/data/tiny-hostops-topo.yaml (host_dispatch D = 150 us, host_node
 * N = 300 us). Single, fp32: the host's forward 11 D, its backward 9 N,
 * then l0's backward kernel (200 us) and the step (58.728 us): every
 * kernel waits for its launch, so the iteration is 11 D + 9 N + 258.728 us
 * and moves by 11 dD + 9 dN when a calibration changes D and N. */
#define HOST_TOY "--topo tests/data/tiny-hostops-topo.yaml " \
                 "--model tests/data/tiny-model-dispatch.yaml --strategy single --format csv"

/* ddpsim HOST_TOY with `--calib FILE` when text is not NULL (FILE holds
 * text), then the options `extra`; its iteration in us. */
static double host_toy_iter_us(const char *text, const char *extra) {
  char path[64] = "", args[512];
  if (text) {
    strcpy(path, "/tmp/ddpsim-calibh-XXXXXX");
    ds_test_write_temp(path, text);
  }
  snprintf(args, sizeof args, HOST_TOY "%s%s %s", text ? " --calib " : "", path, extra);
  struct ds_test_result r = ds_test_cli(args);
  if (text) unlink(path);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  double us = ds_test_csv_num(r.out, "iter_ms", 0) * 1e3;
  ds_test_release(&r);
  return us;
}

Test(calib, host_section_moves_a_host_bound_iteration_by_hand) {
  const double d_us = 150, n_us = 300, tail_us = 200 + 58.728;
  double base = host_toy_iter_us(NULL, "");
  cr_assert_float_eq(base, 11 * d_us + 9 * n_us + tail_us, 1e-3);
  /* host dispatch doubled: + 11 x 150 = 1650 us exactly */
  double twice = host_toy_iter_us("schema_version: 1\nhost:\n  unit: launching\n"
                                  "  dispatch: 300us\n", "");
  cr_assert_float_eq(twice - base, 11 * d_us, 1e-3, "%g -> %g", base, twice);
  /* and the node too: + 9 x 300 = 2700 us more */
  double both =
      host_toy_iter_us("schema_version: 1\nhost:\n  unit: launching\n"
                       "  dispatch: 300us\n  node: 600us\n", "");
  cr_assert_float_eq(both - twice, 9 * n_us, 1e-3, "%g -> %g", twice, both);
}

/* ddpsim with a bad --calib file: exit 2, the file, line, column and key. */
static void host_calib_refused(const char *text, const char *where, const char *what) {
  char path[64] = "/tmp/ddpsim-calibh-XXXXXX", args[256], want[128];
  ds_test_write_temp(path, text);
  snprintf(args, sizeof args, HOST_TOY " --calib %s", path);
  struct ds_test_result r = ds_test_cli(args);
  unlink(path);
  snprintf(want, sizeof want, "%s%s", path, where);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, want) && strstr(r.err, what), "want %s ... %s\ngot: %s", want, what,
            r.err);
  ds_test_release(&r);
}

Test(calib, bad_host_section_exits_2_with_its_place) {
  host_calib_refused("schema_version: 1\nhost:\n  unit: launching\n  dispatch: 27us\n  op: 50us\n",
                     ":5:3: key 'host': unknown key 'op'", "allowed: unit, dispatch, node");
  host_calib_refused("schema_version: 1\nhost:\n  unit: launching\n  dispatch: 27 parsecs\n",
                     ":4:13: key 'host.dispatch'", "expected a time");
  host_calib_refused("schema_version: 1\nhost:\n  dispatch: 27us\n",
                     ":3:13: key 'host.dispatch'", "without `unit: launching`");
}

Test(calib, host_scale_doubles_exactly_the_host_part) {
  /* --host-scale 2 doubles every host_* cost: the host's 11 D + 9 N
   * (4350 us) becomes 8700 us; the GPU's tail (258.728 us) stays. */
  const double d_us = 150, n_us = 300, tail_us = 200 + 58.728;
  double base = host_toy_iter_us(NULL, "");
  double twice = host_toy_iter_us(NULL, "--host-scale 2");
  cr_assert_float_eq(twice, 2 * (11 * d_us + 9 * n_us) + tail_us, 1e-3, "%g", twice);
  cr_assert_float_eq(twice - base, 11 * d_us + 9 * n_us, 1e-3, "%g -> %g", base, twice);
  /* after --calib: its D = 300 us and N = 600 us, then doubled */
  double both = host_toy_iter_us("schema_version: 1\nhost:\n  unit: launching\n"
                                 "  dispatch: 300us\n  node: 600us\n",
                                 "--host-scale 2");
  cr_assert_float_eq(both, 2 * (11 * 300 + 9 * 600) + tail_us, 1e-3, "%g", both);
}

Test(calib, host_time_without_a_unit_exits_2_with_its_place) {
  /* the units parser takes a bare number as seconds; a host time (tens of
   * us) without one is a unit left out, refused, quoted or not
   * (ds_cnode_time_ns, as every time a file holds); a bare 0 needs none */
  host_calib_refused("schema_version: 1\nhost:\n  unit: launching\n  dispatch: 27\n",
                     ":4:13: key 'host.dispatch'", "expected a time with its unit, got \"27\"");
  host_calib_refused("schema_version: 1\nhost:\n  unit: launching\n"
                     "  dispatch: 27.3us\n  node: \"26.25\"\n",
                     ":5:9: key 'host.node'", "e.g. \"26.25us\" or \"26.25s\"");
  struct ds_calib c;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_calib_text("schema_version: 1\nhost:\n  unit: launching\n"
                                       "  dispatch: 0\n", &c, &err,
                                       NULL),
               DS_OK, "%s", err.msg);
  cr_assert_float_eq(c.host_dispatch_ns, 0, 1e-12);
}

/* --calib's DDP keys through ddpsim, worked by hand on tests/test_host.c's
 * host-bound DDP toy: tests/data/tiny-model.yaml (4 gradients) on
 * tests/data/tiny-host-topo.yaml (host_launch L = 1000 us, host_backward
 * H = 2000, host_grad_hook K = 300, host_grad_copy P = 200, host_collective
 * C = 500, host_buffer B = 400). At one rank the iteration is 3 L + 3 H +
 * 4 K + n C + 4 P + the step (58.728 us), n buckets: the host's sum, so a
 * per-gradient cost G in place of K + P moves it by 4 (G - K - P) and a
 * per-bucket cost by n (C' - C). */
#define DDP_TOY "--topo tests/data/tiny-host-topo.yaml --strategy ddp --world-size 1 " \
                "--format csv "
#define TOY_L 1000.0
#define TOY_H 2000.0
#define TOY_K 300.0
#define TOY_P 200.0
#define TOY_C 500.0
#define TOY_B 400.0
#define TOY_STEP 58.728

/* ddpsim DDP_TOY with `--calib FILE` when text is not NULL (FILE holds
 * text), then `extra`; the iteration (us) of each of its n rows into it. */
static void ddp_toy_iter_us(const char *text, const char *extra, double *it, int n) {
  char path[64] = "", args[768];
  if (text) {
    strcpy(path, "/tmp/ddpsim-calibd-XXXXXX");
    ds_test_write_temp(path, text);
  }
  snprintf(args, sizeof args, DDP_TOY "%s%s %s", text ? "--calib " : "", path, extra);
  struct ds_test_result r = ds_test_cli(args);
  if (text) unlink(path);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  for (int k = 0; k < n; k++) it[k] = ds_test_csv_num(r.out, "iter_ms", k) * 1e3;
  ds_test_release(&r);
}

Test(calib, ddp_keys_move_a_host_bound_ddp_iteration_by_hand) {
  /* --bucket-mb 1,25: 3 buckets and 1 (tests/test_host.c) */
  const int n_b[] = {3, 1};
  double base[2], grad[2], both[2];
  ddp_toy_iter_us(NULL, "--model tests/data/tiny-model.yaml --bucket-mb 1,25", base, 2);
  for (int k = 0; k < 2; k++)
    cr_assert_float_eq(base[k], 3 * TOY_L + 3 * TOY_H + 4 * (TOY_K + TOY_P) + n_b[k] * TOY_C +
                       TOY_STEP, 1e-3, "%g", base[k]);
  /* ddp_grad 1350 us a gradient: 4 x (1350 - 500) = 3400 us more, either cap */
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_grad: 1350us\n",
                  "--model tests/data/tiny-model.yaml --bucket-mb 1,25", grad, 2);
  for (int k = 0; k < 2; k++)
    cr_assert_float_eq(grad[k] - base[k], 4 * (1350 - TOY_K - TOY_P), 1e-3, "%g -> %g",
                       base[k], grad[k]);
  /* and ddp_bucket 700 us a call: n x 200 us more, 600 at 3 buckets, 200 at 1 */
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_grad: 1350us\n  ddp_bucket: 700us\n",
                  "--model tests/data/tiny-model.yaml --bucket-mb 1,25", both, 2);
  for (int k = 0; k < 2; k++)
    cr_assert_float_eq(both[k] - grad[k], n_b[k] * (700 - TOY_C), 1e-3, "%g -> %g", grad[k],
                       both[k]);
}

Test(calib, ddp_grad_under_the_bucket_view_keeps_the_hooks_share) {
  /* --grad-as-bucket-view drops the copies back (P per gradient): 3 L +
   * 3 H + 4 K + 2 C + step (default caps: 2 buckets). With ddp_grad 1350
   * us, K = 1350 - 5.8 = 1344.2 us: 4 x (1344.2 - 300) = 4176.8 us more,
   * not 4 x (1350 - 300) (the copy's 5.8 us goes with the view). */
  double base, view;
  ddp_toy_iter_us(NULL, "--model tests/data/tiny-model.yaml --grad-as-bucket-view", &base, 1);
  cr_assert_float_eq(base, 3 * TOY_L + 3 * TOY_H + 4 * TOY_K + 2 * TOY_C + TOY_STEP, 1e-3, "%g",
                     base);
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_grad: 1350us\n",
                  "--model tests/data/tiny-model.yaml --grad-as-bucket-view", &view, 1);
  cr_assert_float_eq(view - base, 4 * (1350 - 5.8 - TOY_K), 1e-3, "%g -> %g", base,
                     view);
}

Test(calib, ddp_buffer_moves_broadcast_buffers_by_hand) {
  /* tests/test_host.c broadcast_buffers_by_hand's model: three buffers in
   * two dtype buckets; broadcast_buffers adds P + 2 C + 3 B of host
   * before the first forward (the int64 bucket holds one buffer: its
   * flatten is a view, no cat to launch). ddp_buffer 900 us: 3 x (900 -
   * 400) = 1500 us more; with ddp_grad 1350 and ddp_bucket 700 too, the
   * buckets' part is 5.8 + 2 x 700 (P = the cat's launch, 5.8 us). */
  char path[64] = "/tmp/ddpsim-calibm-XXXXXX", model[96];
  char *tiny = ds_test_slurp("tests/data/tiny-model.yaml");
  size_t cap = strlen(tiny) + 512;
  char *text = malloc(cap);
  cr_assert(text);
  cr_assert_lt(snprintf(text, cap, "%sbuffers:\n"
                        "  - {name: bn.running_mean, numel: 1000, bytes: 4000, dtype: float32}\n"
                        "  - {name: bn.num_batches_tracked, numel: 1, bytes: 8, dtype: int64}\n"
                        "  - {name: bn.running_var, numel: 3000, bytes: 12000, dtype: float32}\n",
                        tiny), (int)cap);
  ds_test_write_temp(path, text);
  free(text);
  free(tiny);
  snprintf(model, sizeof model, "--model %s", path);
  char nob[160];
  snprintf(nob, sizeof nob, "%s --no-broadcast-buffers", model);
  double with, without, buf, buf_off, all, all_off;
  ddp_toy_iter_us(NULL, model, &with, 1);
  ddp_toy_iter_us(NULL, nob, &without, 1);
  cr_assert_float_eq(with - without, TOY_P + 2 * TOY_C + 3 * TOY_B, 1e-3);
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_buffer: 900us\n", model, &buf, 1);
  ddp_toy_iter_us("schema_version: 1\nhost:\n  ddp_buffer: 900us\n", nob, &buf_off, 1);
  cr_assert_float_eq(buf - with, 3 * (900 - TOY_B), 1e-3, "%g -> %g", with, buf);
  cr_assert_float_eq(buf_off, without, 1e-3, "no broadcast, no buffer cost");
  const char *three = "schema_version: 1\nhost:\n  ddp_grad: 1350us\n  ddp_bucket: 700us\n"
                      "  ddp_buffer: 900us\n";
  ddp_toy_iter_us(three, model, &all, 1);
  ddp_toy_iter_us(three, nob, &all_off, 1);
  cr_assert_float_eq(all - all_off, 5.8 + 2 * 700 + 3 * 900, 1e-3, "%g - %g",
                     all, all_off);
  unlink(path);
}

Test(calib, bad_ddp_host_key_exits_2_with_its_place) {
  host_calib_refused("schema_version: 1\nhost:\n  ddp_grad: 33us\n  ddp_buckets: 45us\n",
                     ":4:3: key 'host': unknown key 'ddp_buckets'",
                     "allowed: unit, dispatch, node, ddp_grad, ddp_bucket, ddp_buffer, ddp_iter");
  host_calib_refused("schema_version: 1\nhost:\n  ddp_grad: 33\n",
                     ":3:13: key 'host.ddp_grad'", "expected a time with its unit, got \"33\"");
}
