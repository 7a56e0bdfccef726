/*
 * gnuplot runner (see gnuplot.h). The script goes to gnuplot's standard
 * input through popen; SIGPIPE is ignored meanwhile, since gnuplot may exit
 * on an error before reading it all.
 */
#include "base/gnuplot.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/atomic_file.h"

#define MAX_PATH 4096

const char *ds_gnuplot_terminal(const char *path) {
  const char *dot = strrchr(path, '.');
  if (dot && strcmp(dot, ".png") == 0) return "pngcairo";
  if (dot && strcmp(dot, ".svg") == 0) return "svg";
  return NULL;
}

void ds_gnuplot_string(FILE *fp, const char *s) {
  fputc('\'', fp);
  for (; *s; s++) {
    if (*s == '\'') fputc('\'', fp);
    fputc(*s, fp);
  }
  fputc('\'', fp);
}

/* gnuplot from $DDPSIM_GNUPLOT or the first "gnuplot" on PATH; with PATH
 * unset (`env -i`, some service managers), on the system's default path
 * (confstr _CS_PATH, "/bin:/usr/bin" in glibc), as execvp and the shell
 * search it. */
static ds_status find_gnuplot(char *out, size_t len, struct ds_err *err) {
  const char *env = getenv("DDPSIM_GNUPLOT");
  if (env && *env) {
    if (access(env, X_OK) == 0) {
      snprintf(out, len, "%s", env);
      return DS_OK;
    }
    return ds_err_set(err, DS_EIO, "--plot: DDPSIM_GNUPLOT=%s is not an "
                      "executable file: point it at gnuplot or unset it", env);
  }
  const char *path = getenv("PATH");
  char default_path[256] = "";
  if (!path) {
    size_t n = confstr(_CS_PATH, default_path, sizeof default_path);
    if (n == 0 || n > sizeof default_path) snprintf(default_path, sizeof default_path,
                                                    "/bin:/usr/bin");
    path = default_path;
  }
  for (const char *p = path; *p;) {
    const char *colon = strchr(p, ':');
    size_t k = colon ? (size_t)(colon - p) : strlen(p);
    if (k > 0 && k + 9 < len) {
      snprintf(out, len, "%.*s/gnuplot", (int)k, p);
      if (access(out, X_OK) == 0) return DS_OK;
    }
    p += k + (colon != NULL);
  }
  return ds_err_set(err, DS_EIO, "--plot: gnuplot not found on PATH: install it "
                    "(apt-get install gnuplot-nox) or leave out --plot");
}

ds_status ds_gnuplot_check(struct ds_err *err) {
  char gnuplot[MAX_PATH];
  return find_gnuplot(gnuplot, sizeof gnuplot, err);
}

/* Runs gnuplot on the script; DS_OK only when it exited 0. */
static ds_status run(const char *gnuplot, const char *term, const char *tmp_out,
                     const char *path, ds_gnuplot_script_fn script, void *ctx,
                     struct ds_err *err) {
  /* The command line: gnuplot's path single-quoted for the shell. */
  char cmd[4 * MAX_PATH + 3];
  char *p = cmd;
  *p++ = '\'';
  for (const char *s = gnuplot; *s; s++) {
    if (*s == '\'') { memcpy(p, "'\\''", 4); p += 4; }
    else *p++ = *s;
  }
  *p++ = '\'';
  *p = '\0';
  struct sigaction ign = {0}, old;
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old);
  fflush(NULL);
  FILE *gp = popen(cmd, "w");
  if (!gp) {
    sigaction(SIGPIPE, &old, NULL);
    return ds_err_set(err, DS_EIO, "--plot: cannot run %s: %s", gnuplot, strerror(errno));
  }
  script(gp, term, tmp_out, ctx);
  int status = pclose(gp);
  sigaction(SIGPIPE, &old, NULL);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return ds_err_set(err, DS_EIO, "--plot: %s failed (status %d) drawing %s; its "
                      "messages are above", gnuplot,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1, path);
  return DS_OK;
}

ds_status ds_gnuplot_draw(const char *path, ds_gnuplot_script_fn script, void *ctx,
                          struct ds_err *err) {
  const char *term = ds_gnuplot_terminal(path);
  if (!term)
    return ds_err_set(err, DS_EUSAGE, "--plot %s: expected a file name ending in "
                      ".png or .svg", path);
  if (strlen(path) > MAX_PATH - 32) return ds_err_set(err, DS_EUSAGE, "--plot: path too long");
  char gnuplot[MAX_PATH], tmp_out[MAX_PATH];
  DS_CHECK(find_gnuplot(gnuplot, sizeof gnuplot, err));
  /* beside the resolved target, so that the rename stays on its file
   * system; the output's permissions set before gnuplot writes it */
  struct ds_err terr = {0};
  ds_status tst = ds_atomic_file_temp(path, tmp_out, sizeof tmp_out, &terr);
  if (tst != DS_OK) return ds_err_set(err, tst, "--plot %s", terr.msg);
  ds_status st = run(gnuplot, term, tmp_out, path, script, ctx, err);
  struct stat sb;
  if (st == DS_OK && (stat(tmp_out, &sb) != 0 || sb.st_size == 0))
    st = ds_err_set(err, DS_EIO, "--plot: gnuplot wrote nothing to %s", path);
  if (st == DS_OK) {
    /* renamed now, or with the command's other outputs; its own status
     * and message (a failed rename's, or out of memory) */
    if ((st = ds_atomic_file_place(tmp_out, path, err)) != DS_OK)
      ds_err_prefix(err, st, "--plot: ");
  }
  if (st != DS_OK) ds_temp_remove(tmp_out);
  return st;
}
