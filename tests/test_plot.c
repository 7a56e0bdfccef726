/*
 * The timeline plot's colours (analysis/plot.c): every colour a box is
 * drawn in has a key entry, and no two key entries look alike, to normal
 * vision or to a colour-blind reader. The script gnuplot is given and the
 * data file it reads are caught by a stand-in gnuplot ($DDPSIM_GNUPLOT, a
 * shell script that copies both, then runs the real gnuplot on them). The
 * binary under test is $DDPSIM_BIN as in tests/test_cli.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support.h"

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

/* sRGB (0xRRGGBB) to CIELAB (D65), seen through m: a colour-vision
 * deficiency's matrix on linear RGB (Machado, Oliveira and Fernandes 2009,
 * severity 1), or the identity. */
static void to_lab(unsigned rgb, const double m[3][3], double lab[3]) {
  double c[3], s[3];
  for (int i = 0; i < 3; i++) {
    double v = ((rgb >> (16 - 8 * i)) & 0xFF) / 255.0;
    c[i] = v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
  }
  for (int i = 0; i < 3; i++)
    s[i] = fmin(1, fmax(0, m[i][0] * c[0] + m[i][1] * c[1] + m[i][2] * c[2]));
  double xyz[3] = {(0.4124 * s[0] + 0.3576 * s[1] + 0.1805 * s[2]) / 0.95047,
                   0.2126 * s[0] + 0.7152 * s[1] + 0.0722 * s[2],
                   (0.0193 * s[0] + 0.1192 * s[1] + 0.9505 * s[2]) / 1.08883};
  double f[3];
  for (int i = 0; i < 3; i++)
    f[i] = xyz[i] > 0.008856 ? cbrt(xyz[i]) : 7.787 * xyz[i] + 16.0 / 116;
  lab[0] = 116 * f[1] - 16;
  lab[1] = 500 * (f[0] - f[1]);
  lab[2] = 200 * (f[1] - f[2]);
}

/* The key's colours, in order, from the script's keyentry lines. */
static int key_colours(const char *script, unsigned *out, int cap) {
  int n = 0;
  static const char mark[] = "keyentry with boxes lc rgb '#";
  for (const char *p = script; (p = strstr(p, mark)) && n < cap; p += sizeof mark - 1)
    out[n++] = (unsigned)strtoul(p + sizeof mark - 1, NULL, 16);
  return n;
}

/* A one-rank run's trace with one op moved to the copy stream as a d2h
 * (iteration 1's bucket1.to_grad): a series ddpsim's own schedules never
 * have (an imported or hand-made trace can), so that all six are drawn. */
static void trace_with_a_copy(const char *path) {
  char args[512];
  snprintf(args, sizeof args, TINY "--world-size 1 --trace %s", path);
  struct ds_test_result r = ds_test_cli_ok(args);
  ds_test_release(&r);
  char *text = ds_test_slurp(path);
  static const char from[] = "\n16,0,compute,bwd,", to[] = "\n16,0,copy,d2h,";
  char *at = strstr(text, from);
  cr_assert_not_null(at, "no op 16 on the compute stream in %s", path);
  size_t head = (size_t)(at - text);
  char *edited = malloc(strlen(text) + 1);
  memcpy(edited, text, head);
  strcpy(edited + head, to);
  strcat(edited, at + strlen(from));
  ds_test_write_file(path, edited);
  free(edited);
  free(text);
}

/* Closed form of the bound: CIE76 distance (Euclidean in L*a*b*) of at
 * least 15 between every two key colours, in normal vision and each
 * dichromacy; 2.3 is a just-noticeable difference. The seaborn colours
 * before gave forward (#4C72B0) and loss (#8172B3) 16.1 apart in normal
 * vision and 2.7 under protanopia; Okabe-Ito's, 16.1 at the least
 * (optimizer step and copy, tritanopia; 26.4 in normal vision). And every
 * colour in the data file's
 * boxes (index 0, column 4) is one of the key's: the copy stream's colour
 * (#937860 before) had no key entry. */
Test(plot, every_series_has_a_key_entry_of_a_colour_of_its_own) {
  ds_test_require_gnuplot();
  char dir[] = "/tmp/ddpsim-plot-colours-XXXXXX", path[256], fake[256], args[1024];
  ds_test_make_dir(dir);
  snprintf(fake, sizeof fake, "%s/gnuplot", dir);
  char body[1024];
  snprintf(body, sizeof body,
           "#!/bin/sh\ncat > '%s/script.gp'\n"
           "data=$(sed -n \"s/^plot '\\([^']*\\)'.*/\\1/p\" '%s/script.gp')\n"
           "cp \"$data\" '%s/data.txt' || exit 1\nexec gnuplot '%s/script.gp'\n",
           dir, dir, dir, dir);
  ds_test_write_file(fake, body);
  cr_assert_eq(chmod(fake, 0755), 0);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  trace_with_a_copy(path);
  char env[300];
  snprintf(env, sizeof env, "DDPSIM_GNUPLOT=%s", fake);
  snprintf(args, sizeof args, "%s --plot %s/t.png", path, dir);
  struct ds_test_result r = ds_test_analyze(env, args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  snprintf(path, sizeof path, "%s/t.png", dir);
  ds_test_assert_image(path, "\x89PNG\r\n\x1a\n", 8);

  snprintf(path, sizeof path, "%s/script.gp", dir);
  char *script = ds_test_slurp(path);
  unsigned key[16];
  int n = key_colours(script, key, 16);
  static const double views[4][3][3] = {
      {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}},
      {{0.152286, 1.052583, -0.204868}, {0.114503, 0.786281, 0.099216},
       {-0.003882, -0.048116, 1.051998}}, /* protanopia */
      {{0.367322, 0.860646, -0.227968}, {0.280085, 0.672501, 0.047413},
       {-0.011820, 0.042940, 0.968881}}, /* deuteranopia */
      {{1.255528, -0.076749, -0.178779}, {-0.078411, 0.930809, 0.147602},
       {0.004733, 0.691367, 0.303900}}, /* tritanopia */
  };
  static const char *view_names[] = {"normal vision", "protanopia", "deuteranopia",
                                     "tritanopia"};
  for (int v = 0; v < 4; v++)
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++) {
        double a[3], b[3];
        to_lab(key[i], views[v], a);
        to_lab(key[j], views[v], b);
        double d = sqrt(pow(a[0] - b[0], 2) + pow(a[1] - b[1], 2) + pow(a[2] - b[2], 2));
        cr_assert_geq(d, 15, "#%06X and #%06X are %.1f apart under %s", key[i], key[j], d,
                      view_names[v]);
      }

  cr_assert_eq(n, 6, "forward, backward, loss, step, communication, copy: %s", script);
  snprintf(path, sizeof path, "%s/data.txt", dir);
  char *data = ds_test_slurp(path);
  char *blocks_end = strstr(data, "\n\n\n"); /* index 1: the bucket labels */
  if (blocks_end) *blocks_end = '\0';
  int boxes = 0;
  for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
    double x0, x1, y;
    unsigned rgb;
    if (line[0] == '#' || sscanf(line, "%lf %lf %lf %u", &x0, &x1, &y, &rgb) != 4) continue;
    boxes++;
    int known = 0;
    for (int i = 0; i < n; i++) known |= key[i] == rgb;
    cr_assert(known, "a box drawn in #%06X, which no key entry has", rgb);
  }
  cr_assert_gt(boxes, 0);
  free(data);
  free(script);
  ds_test_remove_dir(dir);
}
