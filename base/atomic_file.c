/*
 * Atomic output files: every output goes to "<path>.tmp.XXXXXX" (a long
 * name cut to fit, see temp_template) in the target's directory (so
 * rename() stays within one file system) and is renamed over the target
 * only after fflush, fsync and fclose succeeded.
 * Only regular files are replaced: a symlink is followed to its target, a
 * FIFO or a device is written through, anything else refused.
 *
 * Key invariant: while af->tmp_path is set the temporary file exists and
 * belongs to af, and it is listed among the process's live temporary
 * files, which a fatal signal's handler unlinks (async-signal-safe: a list
 * of copied paths it only reads, unlink, raise; any number of files);
 * commit and abort both remove it unless it became the target, and both
 * leave af zeroed.
 */
#include "base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/textout.h"

/* ---- temporary files a fatal signal removes ---------------------------- */

/* Every live temporary file is a node of one list, as many as the process
 * has open (no limit: a command may hold more than any fixed table). Its
 * path is copied into the node, so a caller's buffer going away can never
 * leave the handler a dangling pointer. Nodes are allocated when a file is
 * listed and never freed, only reused (one unlisted and long enough), so
 * the handler, which must not allocate or take a lock, only reads: it
 * walks from live_head, and the list changes in two steps it can see
 * whole on either side of, a node's `used` (set last, cleared first) and
 * live_head (set to a node already filled in, whose next never changes).
 * Both are lock-free atomics (C11 7.14.1.1: what a handler may touch).
 * Listed from one thread (every command writes its outputs from its main
 * thread). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_POINTER_LOCK_FREE == 2,
               "the signal handler reads the list through lock-free atomics only");
struct live_temp {
  atomic_int used;
  pid_t pid;
  size_t cap; /* bytes of path */
  struct live_temp *next;
  char path[];
};
static struct live_temp *_Atomic live_head;
static int handlers_installed;

static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

static void on_fatal_signal(int sig) {
  int saved = errno;
  pid_t me = getpid();
  /* Only this process's files: a forked child inherits the list. */
  for (struct live_temp *n = atomic_load(&live_head); n; n = n->next)
    if (atomic_load(&n->used) && n->pid == me) unlink(n->path);
  signal(sig, SIG_DFL);
  errno = saved;
  raise(sig);
}

static void install_handlers(void) {
  if (handlers_installed) return;
  handlers_installed = 1;
  for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++) {
    struct sigaction old, sa;
    if (sigaction(fatal_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(fatal_signals[i], &sa, NULL);
  }
  /* A file-size limit kills by default; ignored, the write fails with
   * EFBIG and the ordinary error path removes the file. */
  struct sigaction old;
  if (sigaction(SIGXFSZ, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
    signal(SIGXFSZ, SIG_IGN);
}

/* This process's listing of path, or NULL. */
static struct live_temp *listed(const char *path) {
  pid_t me = getpid();
  for (struct live_temp *n = atomic_load(&live_head); n; n = n->next)
    if (atomic_load(&n->used) && n->pid == me && strcmp(n->path, path) == 0) return n;
  return NULL;
}

int ds_temp_track(const char *path) {
  install_handlers();
  /* listed once: one ds_temp_untrack unlists it */
  if (listed(path)) return 0;
  size_t len = strlen(path) + 1;
  struct live_temp *n = atomic_load(&live_head);
  while (n && (atomic_load(&n->used) || n->cap < len)) n = n->next;
  if (n) {
    /* unused, so the handler skips it while it is rewritten */
    n->pid = getpid();
    memcpy(n->path, path, len);
    atomic_store(&n->used, 1);
    return 0;
  }
  n = malloc(sizeof *n + len);
  if (!n) {
    errno = ENOMEM;
    return -1;
  }
  n->pid = getpid();
  n->cap = len;
  memcpy(n->path, path, len);
  atomic_init(&n->used, 1);
  n->next = atomic_load(&live_head);
  atomic_store(&live_head, n); /* whole before the handler can reach it */
  return 0;
}

void ds_temp_untrack(const char *path) {
  struct live_temp *n = listed(path);
  if (n) atomic_store(&n->used, 0);
}

int ds_temp_mkstemp(char *tmpl) {
  int fd = mkstemp(tmpl);
  if (fd >= 0 && ds_temp_track(tmpl) != 0) {
    /* a file a signal could leave behind is not made at all */
    close(fd);
    unlink(tmpl);
    errno = ENOMEM;
    return -1;
  }
  return fd;
}

const char *ds_temp_dir(void) {
  const char *dir = getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

int ds_temp_mkstemp_in_dir(const char *prefix, char *buf, size_t size) {
  int n = snprintf(buf, size, "%s/%s-XXXXXX", ds_temp_dir(), prefix);
  if (n < 0 || (size_t)n >= size) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return ds_temp_mkstemp(buf);
}

void ds_temp_remove(const char *path) {
  unlink(path);
  ds_temp_untrack(path);
}

/* ---- paths --------------------------------------------------------------- */

/* The path a write to `path` lands on: symlinks followed (40 at most, as
 * the kernel does), a dangling one to the file it would create. Returns
 * an owned string, or NULL with errno set. */
char *ds_atomic_file_resolve(const char *path) {
  char *cur = strdup(path);
  for (int hops = 0; cur && hops < 40; hops++) {
    struct stat st;
    if (lstat(cur, &st) != 0) {
      if (errno == ENOENT) return cur;
      free(cur);
      return NULL;
    }
    if (!S_ISLNK(st.st_mode)) return cur;
    char buf[4096];
    ssize_t n = readlink(cur, buf, sizeof buf - 1);
    if (n < 0) {
      free(cur);
      return NULL;
    }
    buf[n] = '\0';
    char *next;
    const char *slash = strrchr(cur, '/');
    if (buf[0] == '/' || !slash) {
      next = strdup(buf);
    } else {
      size_t dl = (size_t)(slash - cur) + 1;
      next = malloc(dl + (size_t)n + 1);
      if (next) memcpy(next, cur, dl), memcpy(next + dl, buf, (size_t)n + 1);
    }
    free(cur);
    cur = next;
  }
  if (cur) {
    free(cur);
    errno = ELOOP;
  }
  return NULL;
}

mode_t ds_atomic_file_mode(const char *target) {
  struct stat st;
  if (stat(target, &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 07777;
  /* umask() can only be read by setting it, so set and restore it. */
  mode_t mask = umask(022);
  umask(mask);
  return 0644 & ~mask;
}

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
}

/* The mkstemp template of a temporary file beside target (resolved):
 * "TARGET.tmp.XXXXXX", its last name cut short where the suffix would
 * carry it past the folder's NAME_MAX or the whole path past PATH_MAX, so
 * that every name the file system takes can be an output (a 250-byte name
 * is legal, its temporary 261 bytes was not: ENAMETOOLONG). The cut falls
 * at the start of a UTF-8 character. Returned owned; NULL when out of
 * memory. */
static char *temp_template(const char *target) {
  static const char suffix[] = ".tmp.XXXXXX";
  const size_t suffix_len = sizeof suffix - 1;
  const char *slash = strrchr(target, '/');
  const char *base = slash ? slash + 1 : target;
  size_t dir_len = (size_t)(base - target), base_len = strlen(base), keep = base_len;
  char *dir = dir_of(target);
  if (!dir) return NULL;
  long name_max = pathconf(dir, _PC_NAME_MAX);
  free(dir);
  if (name_max <= 0) name_max = NAME_MAX;
  if (keep + suffix_len > (size_t)name_max)
    keep = (size_t)name_max > suffix_len ? (size_t)name_max - suffix_len : 0;
  if (dir_len + keep + suffix_len >= PATH_MAX)
    keep = dir_len + suffix_len < PATH_MAX ? PATH_MAX - 1 - dir_len - suffix_len : 0;
  while (keep > 0 && keep < base_len && ((unsigned char)base[keep] & 0xC0) == 0x80) keep--;
  char *tmpl = malloc(dir_len + keep + sizeof suffix);
  if (!tmpl) return NULL;
  memcpy(tmpl, target, dir_len + keep);
  memcpy(tmpl + dir_len + keep, suffix, sizeof suffix);
  return tmpl;
}

ds_status ds_atomic_file_temp(const char *path, char *tmp, size_t cap, struct ds_err *err) {
  char *target = ds_atomic_file_resolve(path);
  if (!target)
    return ds_err_set(err, errno == ENOMEM ? DS_ENOMEM : DS_EIO,
                      "%s: cannot follow the path: %s", path, strerror(errno));
  char *tmpl = temp_template(target);
  if (!tmpl) {
    free(target);
    return ds_err_set(err, DS_ENOMEM, "%s: out of memory", path);
  }
  if (strlen(tmpl) >= cap) {
    free(tmpl);
    free(target);
    return ds_err_set(err, DS_EUSAGE, "%s: path too long", path);
  }
  memcpy(tmp, tmpl, strlen(tmpl) + 1);
  free(tmpl);
  mode_t mode = ds_atomic_file_mode(target);
  free(target);
  int fd = ds_temp_mkstemp(tmp);
  if (fd < 0)
    return ds_err_set(err, DS_EIO,
                      "%s: cannot create a temporary file next to it: %s "
                      "(does the directory exist and is it writable?)",
                      path, strerror(errno));
  if (fchmod(fd, mode) != 0) {
    int e = errno;
    close(fd);
    ds_temp_remove(tmp);
    return ds_err_set(err, DS_EIO, "%s: cannot prepare the temporary file: %s", path,
                      strerror(e));
  }
  close(fd);
  return DS_OK;
}

ds_status ds_atomic_file_check(const char *flag, const char *path, struct ds_err *err) {
  if (path == NULL || path[0] == '\0')
    return ds_err_set(err, DS_EUSAGE, "option %s: expected a value, got an empty string",
                      flag);
  if (strcmp(path, "-") == 0) return DS_OK;
  char *target = ds_atomic_file_resolve(path);
  if (!target)
    return ds_err_set(err, DS_EIO, "%s %s: cannot follow the path: %s", flag, path,
                      strerror(errno));
  ds_status rc = DS_OK;
  struct stat st;
  if (stat(target, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      rc = ds_err_set(err, DS_EIO, "%s %s: is a directory, not a file", flag, path);
    else if (S_ISSOCK(st.st_mode))
      rc = ds_err_set(err, DS_EIO, "%s %s: is a socket, not a file", flag, path);
    else if (!S_ISREG(st.st_mode) && access(target, W_OK) != 0)
      rc = ds_err_set(err, DS_EIO, "%s %s: cannot write: %s", flag, path, strerror(errno));
  }
  if (rc == DS_OK && (stat(target, &st) != 0 || S_ISREG(st.st_mode))) {
    /* Replaced by a rename: the directory must take a new file. */
    char *dir = dir_of(target);
    struct stat ds;
    if (!dir)
      rc = ds_err_set(err, DS_ENOMEM, "out of memory");
    else if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode))
      rc = ds_err_set(err, DS_EIO, "%s %s: directory %s does not exist", flag, path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
      rc = ds_err_set(err, DS_EIO, "%s %s: directory %s is not writable: %s", flag, path,
                      dir, strerror(errno));
    free(dir);
  }
  free(target);
  return rc;
}

/* ---- outputs committed together -------------------------------------------- */

/* Targets registered with ds_atomic_file_defer, and the files committed to
 * them and not yet renamed into place (their tmp stays listed for signal
 * cleanup until renamed or removed). */
#define DEFER_MAX 16
static char *defer_target[DEFER_MAX];
static int n_defer;
static struct {
  char *path, *tmp;
} pending[DEFER_MAX];
static int n_pending;

ds_status ds_atomic_file_defer(const char *path, struct ds_err *err) {
  if (strcmp(path, "-") == 0) return DS_OK;
  if (n_defer == DEFER_MAX)
    return ds_err_set(err, DS_EINTERNAL, "more than %d outputs deferred", DEFER_MAX);
  char *target = ds_atomic_file_resolve(path);
  if (!target)
    return ds_err_set(err, DS_EIO, "%s: cannot follow the path: %s", path, strerror(errno));
  defer_target[n_defer++] = target;
  return DS_OK;
}

static int is_deferred(const char *target) {
  for (int i = 0; i < n_defer; i++)
    if (strcmp(defer_target[i], target) == 0) return 1;
  return 0;
}

/* Takes ownership of path and tmp; a second commit to one target replaces
 * the first. */
static void add_pending(char *path, char *tmp) {
  for (int i = 0; i < n_pending; i++)
    if (strcmp(pending[i].path, path) == 0) {
      ds_temp_remove(pending[i].tmp);
      free(pending[i].path);
      free(pending[i].tmp);
      pending[i].path = path;
      pending[i].tmp = tmp;
      return;
    }
  pending[n_pending].path = path;
  pending[n_pending].tmp = tmp;
  n_pending++;
}

ds_status ds_atomic_file_place(const char *tmp, const char *path, struct ds_err *err) {
  char *target = ds_atomic_file_resolve(path);
  if (target && is_deferred(target)) {
    char *t = strdup(tmp);
    if (!t) {
      free(target);
      return ds_err_set(err, DS_ENOMEM, "out of memory");
    }
    /* listed once, however the caller made it */
    if (ds_temp_track(t) != 0) {
      free(t);
      free(target);
      return ds_err_set(err, DS_ENOMEM, "out of memory");
    }
    add_pending(target, t);
    return DS_OK;
  }
  int bad = rename(tmp, target ? target : path) != 0;
  int e = errno;
  free(target);
  if (bad) return ds_err_set(err, DS_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
  ds_temp_untrack(tmp);
  return DS_OK;
}

const char *ds_atomic_file_pending_path(const char *path) {
  char *target = ds_atomic_file_resolve(path);
  const char *found = path;
  for (int i = 0; target && i < n_pending; i++)
    if (strcmp(pending[i].path, target) == 0) found = pending[i].tmp;
  free(target);
  return found;
}

static void sync_dir(const char *path);

ds_status ds_atomic_file_finish(int commit, struct ds_err *err) {
  ds_status st = DS_OK;
  for (int i = 0; i < n_pending; i++) {
    if (commit && st == DS_OK) {
      if (rename(pending[i].tmp, pending[i].path) == 0) {
        ds_temp_untrack(pending[i].tmp);
        sync_dir(pending[i].path);
      } else {
        st = ds_err_set(err, DS_EIO, "%s: rename failed: %s", pending[i].path,
                        strerror(errno));
        ds_temp_remove(pending[i].tmp);
      }
    } else {
      ds_temp_remove(pending[i].tmp);
    }
    free(pending[i].path);
    free(pending[i].tmp);
  }
  n_pending = 0;
  for (int i = 0; i < n_defer; i++) free(defer_target[i]);
  n_defer = 0;
  return st;
}

/* ---- the file ------------------------------------------------------------ */

static void release(struct ds_atomic_file *af) {
  if (af->tmp_path) ds_temp_untrack(af->tmp_path);
  free(af->path);
  free(af->tmp_path);
  af->fp = NULL;
  af->path = NULL;
  af->tmp_path = NULL;
  af->direct = 0;
}

static int is_stdout(const struct ds_atomic_file *af) {
  return af->fp == stdout && af->tmp_path == NULL && !af->direct;
}

/* Opens a FIFO or a device as it is: no temporary file, no rename. */
static ds_status open_direct(const char *path, struct ds_atomic_file *af,
                             struct ds_err *err) {
  int fd = open(af->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 || !(af->fp = fdopen(fd, "w"))) {
    int e = errno;
    if (fd >= 0) close(fd);
    release(af);
    return ds_err_set(err, DS_EIO, "%s: cannot open for writing: %s", path, strerror(e));
  }
  af->direct = 1;
  return DS_OK;
}

ds_status ds_atomic_file_open(const char *path, struct ds_atomic_file *af,
                              struct ds_err *err) {
  memset(af, 0, sizeof *af);
  if (strcmp(path, "-") == 0) {
    af->fp = stdout;
    return DS_OK;
  }
  if (path[0] == '\0') return ds_err_set(err, DS_EUSAGE, "an output path is empty");
  af->path = ds_atomic_file_resolve(path);
  if (!af->path) {
    int e = errno;
    release(af);
    return ds_err_set(err, e == ENOMEM ? DS_ENOMEM : DS_EIO, "%s: cannot follow the path: %s",
                      path, strerror(e));
  }
  struct stat st;
  if (stat(af->path, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
      return open_direct(path, af, err);
    release(af);
    return ds_err_set(err, DS_EIO, "%s: is a %s, not a file", path,
                      S_ISDIR(st.st_mode) ? "directory" : "socket or other special file");
  }
  af->tmp_path = temp_template(af->path);
  if (!af->tmp_path) {
    release(af);
    return ds_err_set(err, DS_ENOMEM, "%s: out of memory", path);
  }
  int fd = ds_temp_mkstemp(af->tmp_path);
  if (fd < 0) {
    int e = errno;
    release(af);
    return ds_err_set(err, DS_EIO,
                      "%s: cannot create a temporary file next to it: %s "
                      "(does the directory exist and is it writable?)",
                      path, strerror(e));
  }
  if (fchmod(fd, ds_atomic_file_mode(af->path)) != 0 || !(af->fp = fdopen(fd, "w"))) {
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
  char *dir = dir_of(path);
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
    ds_status st = ds_textout_flush(stdout, 0, err);
    release(af);
    return st;
  }
  const char *step = "write";
  int bad = 0;
  if (fflush(af->fp) != 0 || ferror(af->fp)) bad = 1;
  /* fsync means nothing on a FIFO or a device (EINVAL); it is skipped. */
  if (!bad && !af->direct && fsync(fileno(af->fp)) != 0) step = "fsync", bad = 1;
  int e = errno;
  if (fclose(af->fp) != 0 && !bad) step = "close", bad = 1, e = errno;
  af->fp = NULL;
  if (!bad && !af->direct && is_deferred(af->path)) {
    /* Renamed with the command's other outputs by ds_atomic_file_finish. */
    add_pending(af->path, af->tmp_path);
    af->path = af->tmp_path = NULL;
    release(af);
    return DS_OK;
  }
  if (!bad && !af->direct && rename(af->tmp_path, af->path) != 0)
    step = "rename", bad = 1, e = errno;
  if (bad) {
    if (af->tmp_path) unlink(af->tmp_path);
    ds_status st = ds_err_set(err, DS_EIO, "%s: %s failed: %s", af->path, step,
                              strerror(e));
    release(af);
    return st;
  }
  if (!af->direct) sync_dir(af->path);
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
  if (af->tmp_path) unlink(af->tmp_path);
  release(af);
}
