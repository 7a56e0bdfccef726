/*
 * Where an output's temporary file is made, what its old file keeps and
 * which paths are one file (base/atomic_file.c, base/gnuplot.c,
 * base/outputs.c, analysis/export.c): a plot or a Chrome JSON written
 * through a symbolic link to another file system is made beside the link's
 * target, since a rename cannot cross file systems; `ddpsim analyze` keeps
 * the user's old files unless both outputs were written; a dangling link
 * and its target are one output; a replaced output keeps its permissions
 * and a new one follows the umask. The cross-file-system cases need
 * /dev/shm on another file system than /tmp and skip, saying so, without.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support.h"

#define H100 "bench/results/gpu-2026-11-23-h100/"
#define PNG_MAGIC "\x89PNG\r\n\x1a\n", 8

/* A directory in /tmp (here) and one in /dev/shm (there), on two file
 * systems; skips the test when /dev/shm is missing or on /tmp's. */
static void two_file_systems(char *here, char *there) {
  struct stat a, b;
  if (stat("/dev/shm", &b) != 0 || !S_ISDIR(b.st_mode) || access("/dev/shm", W_OK) != 0)
    cr_skip_test("no writable /dev/shm: the cross-file-system case is not run");
  cr_assert_eq(stat("/tmp", &a), 0);
  if (a.st_dev == b.st_dev)
    cr_skip_test("/dev/shm and /tmp are one file system: the cross-file-system case is "
                 "not run");
  ds_test_make_dir(here);
  ds_test_make_dir(there);
}

static void link_to(const char *here, const char *name, const char *there,
                    const char *target, char *link, size_t cap) {
  char to[512];
  snprintf(link, cap, "%s/%s", here, name);
  snprintf(to, sizeof to, "%s/%s", there, target);
  cr_assert_eq(symlink(to, link), 0);
}

static void expect_ok(const char *args) {
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "ddpsim %s: status %d, stderr %s", args, r.status, r.err);
  ds_test_release(&r);
}

/* Every command that plots, through a link in /tmp to a file in /dev/shm:
 * the picture lands on the target, the link stays, and neither directory
 * keeps a temporary file (before the fix: "cannot rename ... Invalid
 * cross-device link", exit 1, after all the work). */
Test(output_paths, a_plot_through_a_link_to_another_file_system) {
  ds_test_require_gnuplot();
  char here[] = "/tmp/ddpsim-xfs-XXXXXX", there[] = "/dev/shm/ddpsim-xfs-XXXXXX";
  two_file_systems(here, there);
  static const char *const commands[] = {
      "analyze " H100 "p2.csv " H100 "t2-spin.csv --plot ",
      "analyze " H100 "p2.csv --plot ",
      "--topo 4gpu --plot ",
      "--topo 4gpu --batch 16,32 --plot ",
      "collective --topo 4gpu --plot ",
  };
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
    char link[600], target[600], name[32], args[1024];
    snprintf(name, sizeof name, "p%zu.png", i);
    link_to(here, name, there, name, link, sizeof link);
    snprintf(target, sizeof target, "%s/%s", there, name);
    snprintf(args, sizeof args, "%s%s", commands[i], link);
    expect_ok(args);
    ds_test_assert_image(target, PNG_MAGIC);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "%s: the link was replaced", args);
    cr_assert_eq(ds_test_count_entries(there), (int)i + 1, "%s: a file left in %s", args,
                 there);
    cr_assert_eq(ds_test_count_entries(here), (int)i + 1, "%s: a file left in %s", args, here);
  }
  ds_test_remove_dir(here);
  ds_test_remove_dir(there);
}

/* `analyze --chrome LINK --plot plot.png` with the link to another file
 * system: both written, and the user's plot.png replaced by the new
 * picture (before the fix the Chrome JSON's rename failed after the new
 * plot had replaced the old one, which was then unlinked: the old plot
 * lost, exit 1). */
Test(output_paths, analyze_chrome_through_a_link_keeps_the_plot) {
  ds_test_require_gnuplot();
  char here[] = "/tmp/ddpsim-xfs-XXXXXX", there[] = "/dev/shm/ddpsim-xfs-XXXXXX";
  two_file_systems(here, there);
  char link[600], plot[600], target[600], args[2048];
  link_to(here, "c.json", there, "c.json", link, sizeof link);
  snprintf(target, sizeof target, "%s/c.json", there);
  snprintf(plot, sizeof plot, "%s/plot.png", here);
  FILE *fp = fopen(plot, "w");
  cr_assert_not_null(fp);
  fputs("the user's old plot\n", fp);
  fclose(fp);
  snprintf(args, sizeof args, "analyze " H100 "p2.csv --chrome %s --plot %s", link, plot);
  expect_ok(args);
  ds_test_assert_image(plot, PNG_MAGIC);
  char *json = ds_test_slurp(target);
  cr_assert(strstr(json, "\"traceEvents\""), "%s: %.80s", target, json);
  free(json);
  cr_assert_eq(ds_test_count_entries(here), 2);  /* the link and plot.png */
  cr_assert_eq(ds_test_count_entries(there), 1); /* c.json */
  ds_test_remove_dir(here);
  ds_test_remove_dir(there);
}

/* The second output failing (gnuplot missing) leaves both of the user's
 * old files as they were and no temporary file. */
Test(output_paths, analyze_keeps_both_old_files_when_one_fails) {
  char dir[] = "/tmp/ddpsim-keep-XXXXXX", json[300], png[300], args[1024];
  ds_test_make_dir(dir);
  snprintf(json, sizeof json, "%s/old.json", dir);
  snprintf(png, sizeof png, "%s/old.png", dir);
  const char *paths[] = {json, png};
  for (int i = 0; i < 2; i++) {
    FILE *fp = fopen(paths[i], "w");
    cr_assert_not_null(fp);
    fputs("old\n", fp);
    fclose(fp);
  }
  snprintf(args, sizeof args, "analyze " H100 "p2.csv --chrome %s --plot %s", json, png);
  struct ds_test_result r = ds_test_run("DDPSIM_GNUPLOT=/nonexistent/gnuplot",
                                        ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 1, "stderr: %s", r.err);
  ds_test_release(&r);
  for (int i = 0; i < 2; i++) {
    char *text = ds_test_slurp(paths[i]);
    cr_assert_str_eq(text, "old\n", "%s was changed", paths[i]);
    free(text);
  }
  cr_assert_eq(ds_test_count_entries(dir), 2, "a temporary file was left in %s", dir);
  ds_test_remove_dir(dir);
}

/* A dangling link and the file it names are one output: refused before
 * any work (before the fix: exit 0, the schedule written over by the
 * trace). */
Test(output_paths, a_dangling_link_and_its_target_are_one_output) {
  char dir[] = "/tmp/ddpsim-dangle-XXXXXX", link[300], target[300], args[1024];
  ds_test_make_dir(dir);
  snprintf(link, sizeof link, "%s/link2.csv", dir);
  snprintf(target, sizeof target, "%s/target.csv", dir);
  cr_assert_eq(symlink("target.csv", link), 0);
  snprintf(args, sizeof args, "--topo 4gpu --trace %s --schedule %s", link, target);
  ds_test_ddpsim_refuses(args, "both write the same file");
  snprintf(args, sizeof args, "--topo 4gpu --schedule %s --trace %s", link, target);
  ds_test_ddpsim_refuses(args, "both write the same file");
  cr_assert_eq(ds_test_count_entries(dir), 1, "a file was written in %s", dir);
  ds_test_remove_dir(dir);
}

static unsigned mode_of(const char *path) {
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "%s", path);
  return (unsigned)(st.st_mode & 07777);
}

/* A replaced output keeps its permissions (0600 stays 0600, 0640 stays
 * 0640: before the fix both became 0644), through the atomic writer
 * (--trace, --chrome) and through gnuplot (--plot); a new output gets
 * 0644 less the umask (umask 077: 0600). */
Test(output_paths, outputs_keep_their_permissions_and_follow_the_umask) {
  ds_test_require_gnuplot();
  char dir[] = "/tmp/ddpsim-mode-XXXXXX", args[2048], p[4][300];
  ds_test_make_dir(dir);
  static const char *const names[] = {"t.csv", "c.json", "p.png", "s.csv"};
  for (int i = 0; i < 4; i++) snprintf(p[i], sizeof p[i], "%s/%s", dir, names[i]);
  for (unsigned mode = 0600; mode <= 0640; mode += 040) {
    for (int i = 0; i < 3; i++) {
      FILE *fp = fopen(p[i], "w");
      cr_assert_not_null(fp);
      fclose(fp);
      cr_assert_eq(chmod(p[i], mode), 0);
    }
    snprintf(args, sizeof args, "--topo 4gpu --trace %s", p[0]);
    expect_ok(args);
    snprintf(args, sizeof args, "analyze %s --chrome %s --plot %s", p[0], p[1], p[2]);
    expect_ok(args);
    for (int i = 0; i < 3; i++)
      cr_assert_eq(mode_of(p[i]), mode, "%s: mode %o, was %o", p[i], mode_of(p[i]), mode);
  }
  for (int i = 0; i < 3; i++) unlink(p[i]);
  snprintf(args, sizeof args, "--topo 4gpu --trace %s --schedule %s", p[0], p[3]);
  struct ds_test_result r = ds_test_run("umask 077;", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  ds_test_release(&r);
  snprintf(args, sizeof args, "analyze %s --chrome %s --plot %s", p[0], p[1], p[2]);
  r = ds_test_run("umask 077;", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  ds_test_release(&r);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(mode_of(p[i]), 0600u, "%s: mode %o under umask 077", p[i], mode_of(p[i]));
  ds_test_remove_dir(dir);
}

/* A plot's data file is scratch: it goes where $TMPDIR says (mkstemp's
 * convention; before, always /tmp), is gone after, and a $TMPDIR that
 * cannot hold it is named in the error (exit 1, no picture). */
Test(output_paths, a_plots_scratch_data_goes_to_tmpdir) {
  ds_test_require_gnuplot();
  static const char *const commands[] = {
      "analyze " H100 "p2.csv --plot ",
      "--topo 4gpu --batch 16,32 --plot ",
      "collective --topo 4gpu --plot ",
  };
  char scratch[] = "/tmp/ddpsim-tmpdir-XXXXXX", out[] = "/tmp/ddpsim-tmpout-XXXXXX";
  cr_assert_not_null(mkdtemp(scratch));
  cr_assert_not_null(mkdtemp(out));
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
    char env[600], args[1024], picture[600];
    snprintf(picture, sizeof picture, "%s/p%zu.png", out, i);
    snprintf(args, sizeof args, "%s%s", commands[i], picture);
    snprintf(env, sizeof env, "TMPDIR=%s/missing", scratch);
    struct ds_test_result r = ds_test_cli_env(env, args);
    cr_assert_eq(r.status, 1, "%s: status %d, %s", args, r.status, r.err);
    cr_assert(strstr(r.err, "cannot create a temporary file in ") &&
                  strstr(r.err, "/missing (TMPDIR): No such file or directory"),
              "%s: %s", args, r.err);
    ds_test_release(&r);
    cr_assert(access(picture, F_OK) != 0, "%s: %s written", args, picture);
    snprintf(env, sizeof env, "TMPDIR=%s", scratch);
    r = ds_test_cli_env(env, args);
    cr_assert_eq(r.status, 0, "%s: status %d, %s", args, r.status, r.err);
    ds_test_release(&r);
    ds_test_assert_image(picture, PNG_MAGIC);
    cr_assert_eq(ds_test_count_entries(scratch), 0, "%s: a file left in %s", args, scratch);
  }
  ds_test_remove_dir(scratch);
  ds_test_remove_dir(out);
}

/* With PATH unset (`env -i`, a bare service environment) gnuplot was "not
 * found on PATH" although /usr/bin/gnuplot exists: the search had no path
 * to walk. It now walks the system's default, "/bin:/usr/bin", as execvp
 * and sh do (gnuplot-nox installs /usr/bin/gnuplot). */
Test(output_paths, a_plot_with_path_unset_finds_gnuplot_on_the_default_path) {
  ds_test_require_gnuplot();
  cr_assert(access("/usr/bin/gnuplot", X_OK) == 0 || access("/bin/gnuplot", X_OK) == 0,
            "gnuplot is not in /bin or /usr/bin (scripts/deps.sh installs it there)");
  char out[] = "/tmp/ddpsim-tmpout-XXXXXX", args[700], picture[600];
  cr_assert_not_null(mkdtemp(out));
  snprintf(picture, sizeof picture, "%s/p.png", out);
  snprintf(args, sizeof args, "--topo 4gpu --batch 16,32 --plot %s", picture);
  struct ds_test_result r = ds_test_run("env -u PATH", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "status %d, %s", r.status, r.err);
  ds_test_release(&r);
  ds_test_assert_image(picture, PNG_MAGIC);
  ds_test_remove_dir(out);
}

/* A PNG timeline taller than cairo's largest surface (32767 pixels) failed
 * inside gnuplot ("Cairo is unhappy: invalid value (typically too big)",
 * exit 1), after the whole simulation when ddpsim drew a 512-rank run. It
 * is refused before gnuplot runs, naming the size and the ways out: 906
 * one-stream ranks are 160 + 36 x 906 = 32776 pixels (905 are 32740 and
 * draw). The same trace draws as SVG, which has no such limit. */
Test(output_paths, a_png_timeline_past_cairos_size_is_refused_before_gnuplot) {
  ds_test_require_gnuplot();
  char dir[] = "/tmp/ddpsim-tmpout-XXXXXX", trace[600], args[1400], picture[600];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(trace, sizeof trace, "%s/wide.csv", dir);
  FILE *fp = fopen(trace, "w");
  cr_assert_not_null(fp);
  fputs("# ddpsim-trace v2\nid,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,"
        "dur_us,deps,source,iter,start_us,end_us\n", fp);
  for (int r = 0; r < 906; r++)
    fprintf(fp, "%d,%d,compute,fwd,k,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n", r, r);
  fputs("# end: 906 rows\n", fp);
  cr_assert_eq(fclose(fp), 0);
  snprintf(picture, sizeof picture, "%s/wide.png", dir);
  snprintf(args, sizeof args, "%s --plot %s", trace, picture);
  struct ds_test_result r = ds_test_analyze(NULL, args);
  cr_assert_eq(r.status, 2, "status %d, %s", r.status, r.err);
  cr_assert(strstr(r.err, "the timeline has 906 lanes (a rank's stream each) and would be "
                          "32776 pixels tall, past a PNG's 32767 (cairo); write .svg"),
            "%s", r.err);
  ds_test_release(&r);
  cr_assert_eq(ds_test_count_entries(dir), 1, "a picture or a temporary file was left");
  snprintf(picture, sizeof picture, "%s/wide.svg", dir);
  snprintf(args, sizeof args, "%s --plot %s", trace, picture);
  r = ds_test_analyze(NULL, args);
  cr_assert_eq(r.status, 0, "status %d, %s", r.status, r.err);
  ds_test_release(&r);
  ds_test_remove_dir(dir);
}

/* ddpsim's own timeline of 512 ranks (cluster-64x8-h100: 1,536 lanes,
 * compute, comm and host of each) was refused the same way, but only after
 * the whole simulation: 100 iterations of the tiny model took 8 s and
 * 490 MB (release build) before the refusal. It is refused once the
 * schedule is built, before the simulation (run_schedule.c,
 * check_plot_size): 0.2 s under the sanitizers, so `timeout 10` never ends
 * it, where the simulation ran past 10 s. The lanes are the same the drawing
 * counts. */
Test(output_paths, ddpsims_png_timeline_past_cairos_size_is_refused_before_the_simulation) {
  ds_test_require_gnuplot();
  char dir[] = "/tmp/ddpsim-tmpout-XXXXXX", args[1024];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(args, sizeof args, "--topo cluster-64x8-h100 --model tests/data/tiny-model.yaml "
           "--iters 100 --plot %s/wide.png --trace %s/wide.csv", dir, dir);
  struct ds_test_result r = ds_test_run("timeout 10", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 2, "status %d (124: still simulating after 10 s), %s", r.status,
               r.err);
  cr_assert(strstr(r.err, "/wide.png: the timeline has 1536 lanes (a rank's stream each) and "
                          "would be 55456 pixels tall, past a PNG's 32767 (cairo); write .svg, "
                          "or --chrome FILE.json for Perfetto, or plot fewer ranks"),
            "%s", r.err);
  cr_assert_str_eq(r.out, "");
  ds_test_release(&r);
  cr_assert_eq(ds_test_count_entries(dir), 0, "a trace, a picture or a temporary file was left");
  ds_test_remove_dir(dir);
}
