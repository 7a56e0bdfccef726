/*
 * Atomic output files: every output goes to "<path>.tmp.XXXXXX" in the
 * target's directory (so rename() stays within one file system) and is
 * renamed over the target only after fflush, fsync and fclose succeeded.
 *
 * Key invariant: while af->tmp_path is set the temporary file exists and
 * belongs to af; commit and abort both remove it unless it became the
 * target, and both leave af zeroed.
 */
#include "base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void release(struct ds_atomic_file *af) {
  free(af->path);
  free(af->tmp_path);
  af->fp = NULL;
  af->path = NULL;
  af->tmp_path = NULL;
}

static int is_stdout(const struct ds_atomic_file *af) {
  return af->fp == stdout && af->tmp_path == NULL;
}

ds_status ds_atomic_file_open(const char *path, struct ds_atomic_file *af,
                              struct ds_err *err) {
  memset(af, 0, sizeof *af);
  if (strcmp(path, "-") == 0) {
    af->fp = stdout;
    return DS_OK;
  }
  static const char suffix[] = ".tmp.XXXXXX";
  size_t len = strlen(path);
  af->path = malloc(len + 1);
  af->tmp_path = malloc(len + sizeof suffix);
  if (!af->path || !af->tmp_path) {
    release(af);
    return ds_err_set(err, DS_ENOMEM, "%s: out of memory", path);
  }
  memcpy(af->path, path, len + 1);
  memcpy(af->tmp_path, path, len);
  memcpy(af->tmp_path + len, suffix, sizeof suffix);
  int fd = mkstemp(af->tmp_path);
  if (fd < 0) {
    int e = errno;
    release(af);
    return ds_err_set(err, DS_EIO,
                      "%s: cannot create a temporary file next to it: %s "
                      "(does the directory exist and is it writable?)",
                      path, strerror(e));
  }
  /* mkstemp creates the file 0600; outputs should get the usual
   * permissions, 0644 less the umask. umask() can only be read by setting
   * it, so set and restore it. */
  mode_t mask = umask(022);
  umask(mask);
  if (fchmod(fd, 0644 & ~mask) != 0 || !(af->fp = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    unlink(af->tmp_path);
    release(af);
    return ds_err_set(err, DS_EIO, "%s: cannot prepare the temporary file: %s",
                      path, strerror(e));
  }
  return DS_OK;
}

/* Makes the rename itself durable; a failure here does not undo the
 * (already visible) new file, so it is not reported. */
static void sync_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
                    : strdup(".");
  if (!dir) return;
  int fd = open(dir, O_RDONLY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(dir);
}

ds_status ds_atomic_file_commit(struct ds_atomic_file *af, struct ds_err *err) {
  if (!af->fp) return ds_err_set(err, DS_EINTERNAL, "commit of a closed file");
  if (is_stdout(af)) {
    int bad = fflush(stdout) != 0 || ferror(stdout);
    release(af);
    return bad ? ds_err_set(err, DS_EIO, "writing to standard output failed: %s",
                            strerror(errno))
               : DS_OK;
  }
  const char *step = "write";
  int bad = 0;
  if (fflush(af->fp) != 0 || ferror(af->fp)) bad = 1;
  if (!bad && fsync(fileno(af->fp)) != 0) step = "fsync", bad = 1;
  int e = errno;
  if (fclose(af->fp) != 0 && !bad) step = "close", bad = 1, e = errno;
  af->fp = NULL;
  if (!bad && rename(af->tmp_path, af->path) != 0)
    step = "rename", bad = 1, e = errno;
  if (bad) {
    unlink(af->tmp_path);
    ds_status st = ds_err_set(err, DS_EIO, "%s: %s failed: %s", af->path, step,
                              strerror(e));
    release(af);
    return st;
  }
  sync_dir(af->path);
  release(af);
  return DS_OK;
}

void ds_atomic_file_abort(struct ds_atomic_file *af) {
  if (!af->fp) {
    release(af);
    return;
  }
  if (is_stdout(af)) {
    fflush(stdout);
    release(af);
    return;
  }
  fclose(af->fp);
  unlink(af->tmp_path);
  release(af);
}
