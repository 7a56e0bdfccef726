/*
 * `ddpsim collective --plot [--reference]` (sim/cmd/collbench_plot.c,
 * base/gnuplot.c): the picture is written in the format asked for, with
 * one curve per op/algo/proto group and the reference's points; the
 * reference table is read with libcsv and its mistakes name FILE:LINE; a
 * missing gnuplot is a clear error, and no file is left behind.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/cmd/collbench_plot.h"
#include "support.h"

static char dir[] = "/tmp/ddpsim-busbw-XXXXXX";

static void setup(void) { cr_assert_not_null(mkdtemp(dir)); }

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(collbench_plot, .init = setup, .fini = teardown);

static struct ds_test_result collective(const char *prefix, const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "collective %s", args);
  return ds_test_run(prefix, ds_test_ddpsim(), cmd);
}

Test(collbench_plot, png_and_svg_are_written) {
  char png[256], svg[256], args[512];
  snprintf(png, sizeof png, "%s/busbw.png", dir);
  snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml -b 1K -e 64K -f 4 --plot %s",
           png);
  struct ds_test_result r = collective("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  FILE *f = fopen(png, "rb");
  cr_assert_not_null(f);
  unsigned char magic[8] = {0};
  cr_assert_eq(fread(magic, 1, 8, f), 8);
  fclose(f);
  cr_assert_eq(memcmp(magic, "\x89PNG\r\n\x1a\n", 8), 0, "not a PNG");
  ds_test_release(&r);
  /* svg: one curve per (op, algo, proto) group of the rows, in the legend,
   * and the reference's name; nothing else left in the directory. */
  snprintf(svg, sizeof svg, "%s/busbw.svg", dir);
  snprintf(args, sizeof args, "--topo dgx-a100 --algo auto -b 1K -e 1G -f 4 --plot %s "
           "--reference tests/data/nccl_allreduce_8xa100_azure.csv", svg);
  r = collective("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char *text = ds_test_slurp(svg);
  cr_assert(strstr(text, "<svg"), "not an SVG");
  cr_assert(strstr(text, "ddpsim allreduce ring/LL128"), "no LL128 curve");
  cr_assert(strstr(text, "ddpsim allreduce ring/Simple"), "no Simple curve");
  cr_assert(strstr(text, "reference: nccl_allreduce_8xa100_azure.csv"), "no reference");
  free(text);
  /* the text table's closing lines say where the reference's 24 points went */
  char where[400];
  snprintf(where, sizeof where, "# Avg bus bandwidth    : ");
  cr_assert(strstr(r.out, where), "%s", r.out);
  snprintf(where, sizeof where,
           "# reference: 24 points of tests/data/nccl_allreduce_8xa100_azure.csv drawn on %s\n",
           svg);
  const char *at = strstr(r.out, where);
  cr_assert(at && at[strlen(where)] == '\0', "%s", r.out);
  ds_test_release(&r);
  char ls[300];
  snprintf(ls, sizeof ls, "test $(ls %s | wc -l) -eq 2", dir);
  cr_assert_eq(system(ls), 0, "temporary files left in %s", dir);
}

/* One size (-b equal to -e) is one x value: gnuplot's autoscale found an
 * empty range and wrote "Warning: empty x range [8:8], adjusting to
 * [7.92:8.08]" to ddpsim's standard error; the axis is now set around it. */
Test(collbench_plot, one_size_plots_without_a_gnuplot_warning) {
  ds_test_require_gnuplot();
  char png[256], args[512];
  snprintf(png, sizeof png, "%s/one.png", dir);
  snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml -b 8 -e 8 --plot %s", png);
  struct ds_test_result r = collective("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.err, "", "stderr: %s", r.err);
  struct stat sb;
  cr_assert_eq(stat(png, &sb), 0, "no %s", png);
  ds_test_release(&r);
}

Test(collbench_plot, reference_table_reads_nccl_tests_columns) {
  /* tests/data's copy of the Azure table: a # line, then 24 sizes from
   * 1 KiB (0.04 GB/s) to 8 GiB (231.58 GB/s) in the size_bytes_assumed_2^k
   * and busbw_GBps_inplace_published columns. */
  struct ds_busbw_set ref;
  struct ds_err err = {0};
  cr_assert_eq(ds_busbw_reference_load("tests/data/nccl_allreduce_8xa100_azure.csv",
                                       "allreduce", &ref, &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(ref.n, 24);
  cr_assert_float_eq(ref.p[0].size_bytes, 1024, 0);
  cr_assert_float_eq(ref.p[0].busbw_gbps, 0.04, 1e-12);
  cr_assert_float_eq(ref.p[23].size_bytes, 8589934592.0, 0);
  cr_assert_float_eq(ref.p[23].busbw_gbps, 231.58, 1e-12);
  ds_busbw_release(&ref);
}

/* A reference row measured on another number of GPUs is another
 * measurement: rows whose rank column (n_ranks, nranks, ranks) differs
 * from the run's ranks are left out and counted; none left is refused
 * (exit 2, nothing printed or drawn). The Azure table is 8 ranks. */
Test(collbench_plot, reference_rows_at_other_rank_counts_are_left_out) {
  ds_test_require_gnuplot();
  char ref[256], png[256], args[768];
  snprintf(ref, sizeof ref, "%s/mixed.csv", dir);
  snprintf(png, sizeof png, "%s/p.png", dir);
  ds_test_write_file(ref, "size_bytes,busbw_gbps,n_ranks\n1048576,30,8\n1048576,20,4\n"
                          "2097152,40,4\n");
  snprintf(args, sizeof args, "--topo dgx-a100 -g 4 -b 1M -e 2M --plot %s --reference %s",
           png, ref);
  struct ds_test_result r = collective("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char want[600];
  snprintf(want, sizeof want, "# reference: 2 points of %s drawn on %s (1 at other rank "
           "counts left out)\n", ref, png);
  cr_assert(strstr(r.out, want), "%s", r.out);
  ds_test_release(&r);
  unlink(png);
  snprintf(args, sizeof args, "--topo dgx-a100 -g 4 -b 1M -e 2M --plot %s --reference "
           "tests/data/nccl_allreduce_8xa100_azure.csv", png);
  r = collective("", args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "tests/data/nccl_allreduce_8xa100_azure.csv: no row at 4 ranks "
                          "(the run's, option -g); its rank column has 8"), "%s", r.err);
  cr_assert_str_eq(r.out, "");
  cr_assert(access(png, F_OK) != 0, "%s written", png);
  ds_test_release(&r);
  /* every GPU of the topology (8) matches the table: all 24 points */
  snprintf(args, sizeof args, "--topo dgx-a100 -b 1M -e 2M --plot %s --reference "
           "tests/data/nccl_allreduce_8xa100_azure.csv", png);
  r = collective("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "# reference: 24 points of "), "%s", r.out);
  cr_assert_null(strstr(r.out, "left out"), "%s", r.out);
  ds_test_release(&r);
  ds_test_write_file(ref, "size_bytes,busbw_gbps,nranks\n1048576,30,2.5\n");
  snprintf(args, sizeof args, "--topo dgx-a100 -g 4 -b 1M -e 2M --plot %s --reference %s",
           png, ref);
  r = collective("", args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "mixed.csv:2:3: column 'nranks': expected a rank count, a whole "
                          "number >= 1, got \"2.5\""), "%s", r.err);
  ds_test_release(&r);
}

/* A reference table that names its op (ddpsim collective --format csv's op
 * column, or a column named collective) is compared only with a run of
 * that op: busbw of all-gather against a simulated all-reduce was drawn
 * without a word. Another op is refused (exit 2, nothing printed or drawn)
 * naming the file, line, column and both ops; nccl-tests' spelling
 * (all_gather) is the same op; a table without the column is not checked. */
Test(collbench_plot, a_reference_of_another_op_is_refused) {
  ds_test_require_gnuplot();
  char ref[256], png[256], args[768], want[600];
  snprintf(ref, sizeof ref, "%s/ag.csv", dir);
  snprintf(png, sizeof png, "%s/p.png", dir);
  ds_test_write_file(ref, "op,nranks,size_bytes,busbw_gbps\nallgather,4,1048576,30\n");
  snprintf(args, sizeof args, "--topo dgx-a100 -g 4 -b 1M -e 2M --plot %s --reference %s",
           png, ref);
  struct ds_test_result r = collective("", args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  snprintf(want, sizeof want, "%s:2:1: column 'op': the table was measured for allgather, the "
           "run times allreduce (option --op)", ref);
  cr_assert(strstr(r.err, want), "%s", r.err);
  cr_assert(strstr(r.err, "give --op allgather, or a table of allreduce"), "%s", r.err);
  cr_assert_str_eq(r.out, "");
  cr_assert(access(png, F_OK) != 0, "%s written", png);
  ds_test_release(&r);
  snprintf(args, sizeof args, "--topo dgx-a100 -g 4 --op allgather -b 1M -e 2M --plot %s "
           "--reference %s", png, ref);
  r = collective("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "# reference: 1 point of "), "%s", r.out);
  ds_test_release(&r);
  unlink(png);
  ds_test_write_file(ref, "size_bytes,busbw_gbps,collective\n1048576,30,All_Gather\n");
  r = collective("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  unlink(png);
  snprintf(args, sizeof args, "--topo dgx-a100 -g 4 --op reducescatter -b 1M -e 2M --plot %s "
           "--reference %s", png, ref);
  r = collective("", args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "ag.csv:2:3: column 'collective': the table was measured for "
                          "All_Gather, the run times reducescatter"), "%s", r.err);
  ds_test_release(&r);
  /* no op column: not checked (the Azure table is an all-reduce's, drawn
   * beside an all-gather without a word: the docs and --help say so) */
  snprintf(args, sizeof args, "--topo dgx-a100 --op allgather -b 1M -e 2M --plot %s "
           "--reference tests/data/nccl_allreduce_8xa100_azure.csv", png);
  r = collective("", args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  unlink(png);
}

Test(collbench_plot, reference_errors_exit_2_naming_file_and_line) {
  struct { const char *text, *want; } bad[] = {
      {"# ok\nsize_bytes,busbw_gbps\n1024,0.5\n2048,abc\n",
       "ref.csv:4:2: column 'busbw_gbps': expected a bandwidth in GB/s >= 0, got \"abc\""},
      {"size_bytes,busbw_gbps\n0,1\n", "ref.csv:2:1: column 'size_bytes': expected a size"},
      {"size,foo\n1,2\n", "ref.csv:1: the header row has no busbw column"},
      {"size_bytes,busbw_gbps\n1024,0.5,7\n", "ref.csv:2: 3 fields, but the header row has 2"},
      {"size_bytes,busbw_gbps\n1024,\"0.5\n", "ref.csv:2: malformed CSV"},
      {"size_bytes,busbw_gbps\n1024,0.\"5\"\n", "ref.csv:2: malformed CSV"},
      {"size_bytes,busbw_gbps\n", "ref.csv:1: no data rows"},
  };
  char ref[256], out[256], args[768];
  snprintf(ref, sizeof ref, "%s/ref.csv", dir);
  snprintf(out, sizeof out, "%s/p.png", dir);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ds_test_write_file(ref, bad[i].text);
    snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml -b 1K -e 4K --plot %s "
             "--reference %s", out, ref);
    struct ds_test_result r = collective("", args);
    cr_assert_eq(r.status, 2, "case %zu: status %d: %s", i, r.status, r.err);
    cr_assert(strstr(r.err, bad[i].want), "case %zu: %s", i, r.err);
    cr_assert_str_eq(r.out, "", "case %zu: printed rows before the error", i);
    ds_test_release(&r);
    cr_assert(access(out, F_OK) != 0, "case %zu: %s written", i, out);
  }
  /* A missing file, --reference without --plot, a bad extension. */
  snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml --plot %s --reference "
           "%s/none.csv", out, dir);
  struct ds_test_result r = collective("", args);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "none.csv: cannot open"), "%s", r.err);
  ds_test_release(&r);
  r = collective("", "--topo tests/data/tiny-topo.yaml --reference "
                     "tests/data/nccl_allreduce_8xa100_azure.csv");
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "--reference") && strstr(r.err, "--plot"), "%s", r.err);
  ds_test_release(&r);
  r = collective("", "--topo tests/data/tiny-topo.yaml --plot busbw.pdf");
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "--plot") && strstr(r.err, ".png or .svg"), "%s", r.err);
  ds_test_release(&r);
}

Test(collbench_plot, missing_gnuplot_is_a_clear_error) {
  /* No gnuplot on PATH (DDPSIM_GNUPLOT empty is unset): exit 1 before any
   * row, saying how to install it; no file appears. */
  char out[256], args[512];
  snprintf(out, sizeof out, "%s/p.svg", dir);
  snprintf(args, sizeof args, "--topo tests/data/tiny-topo.yaml --plot %s", out);
  struct ds_test_result r = collective("DDPSIM_GNUPLOT= PATH=/nonexistent", args);
  cr_assert_eq(r.status, 1, "%d %s", r.status, r.err);
  cr_assert(strstr(r.err, "gnuplot not found on PATH") && strstr(r.err, "gnuplot-nox"), "%s",
            r.err);
  cr_assert_str_eq(r.out, "");
  ds_test_release(&r);
  cr_assert(access(out, F_OK) != 0, "%s written", out);
  /* DDPSIM_GNUPLOT naming something that is not a program is the same. */
  r = collective("DDPSIM_GNUPLOT=/nonexistent/gnuplot", args);
  cr_assert_eq(r.status, 1, "%d %s", r.status, r.err);
  cr_assert(strstr(r.err, "DDPSIM_GNUPLOT=/nonexistent/gnuplot"), "%s", r.err);
  ds_test_release(&r);
}
