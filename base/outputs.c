/*
 * Checking a command's outputs before its work (outputs.h). Two paths name
 * the same file when both exist and share device and inode (hard links,
 * symlinks, "./x" and "x"), or when neither exists, their directories are
 * the same directory (device and inode) and the last components are equal,
 * symbolic links followed first (a dangling link names its target).
 *
 * Invariant: nothing here creates, opens for writing or removes a file.
 */
#include "base/outputs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"

/* The directory part of path ("." for none) into dir, and its last
 * component. */
static const char *split(const char *path, char *dir, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(dir, cap, ".");
    return path;
  }
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  if (n >= cap) n = cap - 1;
  memcpy(dir, path, n);
  dir[n] = '\0';
  return slash + 1;
}

static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return 0;
  /* Neither exists yet: the same name in the same directory, once symbolic
   * links are followed (a dangling link names the file a write creates). */
  char *ra = ds_atomic_file_resolve(a), *rb = ds_atomic_file_resolve(b);
  int same;
  if (!ra || !rb) {
    same = strcmp(a, b) == 0;
  } else {
    char da[PATH_MAX], db[PATH_MAX];
    const char *na = split(ra, da, sizeof da), *nb = split(rb, db, sizeof db);
    if (strcmp(na, nb) != 0) same = 0;
    else if (stat(da, &sa) != 0 || stat(db, &sb) != 0) same = strcmp(ra, rb) == 0;
    else same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  free(ra);
  free(rb);
  return same;
}

/* Whether path is the regular file standard output writes to (a shell's
 * "> x.csv"): an output renamed over it would leave what the command
 * writes to standard output in the replaced, unlinked file. */
static int is_stdout_file(const char *path) {
  struct stat so, sp;
  if (fstat(STDOUT_FILENO, &so) != 0 || !S_ISREG(so.st_mode)) return 0;
  return stat(path, &sp) == 0 && sp.st_dev == so.st_dev && sp.st_ino == so.st_ino;
}

ds_status ds_outputs_check(const struct ds_path_arg *outs, size_t n_out,
                           const struct ds_path_arg *ins, size_t n_in, struct ds_err *err) {
  for (size_t i = 0; i < n_out; i++) {
    if (!outs[i].path) continue;
    DS_CHECK(ds_atomic_file_check(outs[i].flag, outs[i].path, err));
  }
  for (size_t i = 0; i < n_out; i++) {
    const char *p = outs[i].path;
    if (p && strcmp(p, "-") != 0 && is_stdout_file(p))
      return ds_err_set(err, DS_EUSAGE,
                        "option %s %s: standard output is redirected to that file; written "
                        "in its place, it would lose what goes to standard output",
                        outs[i].flag, p);
  }
  for (size_t i = 0; i < n_out; i++) {
    const char *p = outs[i].path;
    if (p && strcmp(p, "-") == 0) {
      /* Standard output holds one file, or two files run together. */
      for (size_t j = i + 1; j < n_out; j++)
        if (outs[j].path && strcmp(outs[j].path, "-") == 0)
          return ds_err_set(err, DS_EUSAGE, "options %s - and %s -: both write standard output",
                            outs[i].flag, outs[j].flag);
      continue;
    }
    if (!p) continue;
    for (size_t j = i + 1; j < n_out; j++) {
      const char *q = outs[j].path;
      if (q && strcmp(q, "-") != 0 && same_file(p, q))
        return ds_err_set(err, DS_EUSAGE, "options %s %s and %s %s: both write the same file",
                          outs[i].flag, p, outs[j].flag, q);
    }
    for (size_t j = 0; j < n_in; j++) {
      const char *q = ins[j].path;
      struct stat st;
      if (q && stat(q, &st) == 0 && same_file(p, q))
        return ds_err_set(err, DS_EUSAGE,
                          "option %s %s: would overwrite the input of %s %s", outs[i].flag, p,
                          ins[j].flag, q);
    }
  }
  return DS_OK;
}
