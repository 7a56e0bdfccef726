/*
 * Data file lookup (see lookup.h). The executable's directory comes from
 * /proc/self/exe; the source directory is fixed at build time
 * (DS_SOURCE_DIR, set by the Makefile).
 */
#include "base/lookup.h"

#include <dirent.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cli.h"

#ifndef DS_SOURCE_DIR
#define DS_SOURCE_DIR "."
#endif

static int is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int has_yaml_suffix(const char *s) {
  size_t n = strlen(s);
  return n >= 5 && strcmp(s + n - 5, ".yaml") == 0;
}

/* Tries dir/arg and dir/arg.yaml; appends what was tried to `tried`. */
static int try_dir(const char *dir, const char *arg, char *out, size_t cap,
                   char *tried, size_t tried_cap) {
  for (int with_suffix = 0; with_suffix < 2; with_suffix++) {
    if (with_suffix && has_yaml_suffix(arg)) break;
    int n = dir ? snprintf(out, cap, "%s/%s%s", dir, arg, with_suffix ? ".yaml" : "")
                : snprintf(out, cap, "%s%s", arg, with_suffix ? ".yaml" : "");
    if (n < 0 || (size_t)n >= cap) continue;
    if (is_file(out)) return 1;
    size_t used = strlen(tried);
    snprintf(tried + used, tried_cap - used, "%s%s", used ? ", " : "", out);
  }
  return 0;
}

/* The data directories of kind, in the order a name is searched for:
 * $DDPSIM_DATA_DIR/kind, then beside the executable's directory's parent
 * (spelt without "bin/..": the link is resolved, so the parent is the real
 * one; the prefix of an install, or the source tree of a build)
 * share/ddpsim/kind and kind, then DS_SOURCE_DIR/kind unless that is the
 * same parent. Returns how many it wrote into dirs. */
#define DATA_DIRS_MAX 4
#define DATA_DIR_CAP (4096 + 64) /* the executable's path plus the longest suffix */
static int data_dirs(const char *kind, char dirs[DATA_DIRS_MAX][DATA_DIR_CAP]) {
  char exe[4096];
  int nd = 0, source_is_exe_parent = 0;
  const char *env = getenv("DDPSIM_DATA_DIR");
  if (env && *env) snprintf(dirs[nd++], DATA_DIR_CAP, "%s/%s", env, kind);
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    for (int up = 0; up < 2; up++) {
      char *slash = strrchr(exe, '/');
      if (slash) *slash = '\0';
    }
    snprintf(dirs[nd++], DATA_DIR_CAP, "%s/share/ddpsim/%s", exe, kind);
    snprintf(dirs[nd++], DATA_DIR_CAP, "%s/%s", exe, kind);
    source_is_exe_parent = strcmp(exe, DS_SOURCE_DIR) == 0;
  }
  if (!source_is_exe_parent) snprintf(dirs[nd++], DATA_DIR_CAP, "%s/%s", DS_SOURCE_DIR, kind);
  return nd;
}

/* 1 when arg names a file of kind (its path in out), else 0 with the
 * places looked at in tried. search_cwd 0: only the data directories,
 * never arg as a path. */
static int find(const char *kind, const char *arg, int search_cwd, char *out, size_t cap,
                char *tried, size_t tried_cap) {
  if (search_cwd && try_dir(NULL, arg, out, cap, tried, tried_cap)) return 1;
  /* A name with a slash is a path: do not search for it elsewhere. */
  if (strchr(arg, '/') != NULL) return 0;
  char dirs[DATA_DIRS_MAX][DATA_DIR_CAP];
  int nd = data_dirs(kind, dirs);
  for (int k = 0; k < nd; k++)
    if (try_dir(dirs[k], arg, out, cap, tried, tried_cap)) return 1;
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The shipped names of kind (the YAML files, less ".yaml", of the first
 * data directory that opens, data_dirs' order; gpus.yaml is no topology),
 * joined by ", " into list, and into near what arg (less any ".yaml") may
 * have meant (ds_cli_suggest), else "". */
#define SHIPPED_MAX 64
static void shipped(const char *kind, const char *arg, char *list, size_t cap,
                    char names[SHIPPED_MAX][64], char *near, size_t near_cap) {
  char dirs[DATA_DIRS_MAX][DATA_DIR_CAP];
  int nd = data_dirs(kind, dirs);
  list[0] = '\0';
  near[0] = '\0';
  DIR *d = NULL;
  for (int k = 0; k < nd && !d; k++) d = opendir(dirs[k]);
  if (!d) return;
  const char *ptrs[SHIPPED_MAX + 1];
  int count = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL && count < SHIPPED_MAX;) {
    size_t len = strlen(e->d_name);
    if (len <= 5 || len - 5 >= 64 || !has_yaml_suffix(e->d_name) ||
        strcmp(e->d_name, "gpus.yaml") == 0)
      continue;
    snprintf(names[count], 64, "%.*s", (int)(len - 5), e->d_name);
    ptrs[count] = names[count];
    count++;
  }
  closedir(d);
  /* sorted, so the list reads the same on every file system */
  qsort(ptrs, (size_t)count, sizeof ptrs[0], by_name);
  ptrs[count] = NULL;
  for (int i = 0; i < count; i++) {
    size_t used = strlen(list);
    snprintf(list + used, cap - used, "%s%s", i ? ", " : "", ptrs[i]);
  }
  char bare[64];
  size_t na = strlen(arg);
  if (has_yaml_suffix(arg)) na -= 5;
  if (na == 0 || na >= sizeof bare) return;
  snprintf(bare, sizeof bare, "%.*s", (int)na, arg);
  ds_cli_suggest(bare, ptrs, near, near_cap);
}

static ds_status lookup(const char *kind, const char *what, const char *arg,
                        int search_cwd, char *out, size_t cap, struct ds_err *err) {
  char tried[2048] = "";
  if (find(kind, arg, search_cwd, out, cap, tried, sizeof tried)) return DS_OK;
  /* Something is there but is no file: say what it is, not "not found". */
  struct stat st;
  if (search_cwd && stat(arg, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return ds_err_set(err, DS_EUSAGE, "%s '%s' is a directory, not a %s file: give the "
                        "YAML file (a path, or a name in %s/)", what, arg, what, kind);
    return ds_err_set(err, DS_EUSAGE, "%s '%s' is not a regular file: give the YAML file "
                      "(a path, or a name in %s/)", what, arg, kind);
  }
  /* A shipped name of the other kind (--topo resnet50): say where it goes. */
  const char *other = strcmp(kind, "topologies") == 0 ? "models"
                      : strcmp(kind, "models") == 0   ? "topologies" : NULL;
  char found[4096], tried_other[2048] = "";
  if (other && strchr(arg, '/') == NULL &&
      find(other, arg, 0, found, sizeof found, tried_other, sizeof tried_other))
    return ds_err_set(err, DS_EUSAGE, "%s '%s' not found, but %s is a %s: give it to %s "
                      "(looked for: %s)", what, arg, found,
                      other[0] == 'm' ? "model" : "topology",
                      other[0] == 'm' ? "--model" : "--topo", tried);
  /* A name, not a path: the shipped ones, and the one a typo meant. */
  char list[1024] = "", names[SHIPPED_MAX][64], near[256] = "";
  if (strchr(arg, '/') == NULL &&
      (strcmp(kind, "topologies") == 0 || strcmp(kind, "models") == 0))
    shipped(kind, arg, list, sizeof list, names, near, sizeof near);
  if (list[0])
    return ds_err_set(err, DS_EUSAGE, "%s '%s' not found%s%s%s (looked for: %s); shipped "
                      "%s: %s", what, arg, near[0] ? "; did you mean " : "", near,
                      near[0] ? "?" : "", tried, kind, list);
  return ds_err_set(err, DS_EUSAGE, "%s '%s' not found (looked for: %s)", what,
                    arg, tried);
}

ds_status ds_lookup_refuse_stdin(const char *kind, const char *name, const char *value,
                                 struct ds_err *err) {
  const char *why = strcmp(kind, "topologies") == 0
                        ? "a topology's GPU table is looked for beside its file"
                        : "a model is a YAML file found by path or name";
  return ds_cli_refuse_stdin(err, name, value, why, "a file's path or a shipped name");
}

ds_status ds_lookup_file(const char *kind, const char *what, const char *arg,
                         char *out, size_t cap, struct ds_err *err) {
  return lookup(kind, what, arg, 1, out, cap, err);
}

ds_status ds_lookup_shipped_gpu_table(char *out, size_t cap, struct ds_err *err) {
  return lookup("topologies", "shipped GPU table", "gpus.yaml", 0, out, cap, err);
}

ds_status ds_lookup_gpu_table(const char *topo_path, char *out, size_t cap,
                              struct ds_err *err) {
  const char *slash = strrchr(topo_path, '/');
  int dir_len = slash ? (int)(slash - topo_path) : 1;
  const char *dir = slash ? topo_path : ".";
  int n = snprintf(out, cap, "%.*s/gpus.yaml", dir_len, dir);
  if (n > 0 && (size_t)n < cap && is_file(out)) return DS_OK;
  return ds_lookup_file("topologies", "GPU table", "gpus.yaml", out, cap, err);
}
