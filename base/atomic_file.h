/*
 * Atomic output files: write to a temporary file in the target's directory,
 * then rename it over the target. Readers of the target see the old file or
 * the complete new one, never a half-written one.
 *
 * Only a regular file (or a path that does not exist) is replaced. A
 * symbolic link is followed and its target replaced; a FIFO or a character
 * or block device is written through (opened as it is, never renamed
 * over); a directory or a socket is refused. Temporary files are removed
 * on every error path, and also when the process dies of SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT or SIGPIPE (a handler installed on first use, where the
 * signal's disposition was the default); SIGXFSZ (a file-size limit) is
 * ignored so that the write fails with EFBIG and the error path cleans up.
 */
#ifndef DS_ATOMIC_FILE_H
#define DS_ATOMIC_FILE_H

#include <stdio.h>
#include <sys/types.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_atomic_file {
  FILE *fp;          /* write here */
  char *path;        /* final path (owned; a symlink's target, resolved) */
  char *tmp_path;    /* temporary path (owned); NULL when writing through */
  int direct;        /* a FIFO or device: fp writes to path itself */
};

/* Checks, before any work, that path can be written as an output: not
 * empty, not a directory or socket, a symlink that resolves, and a
 * directory that exists and is writable. `flag` ("--trace") starts the
 * message. DS_EUSAGE for an empty path, DS_EIO otherwise. "-" is fine. */
ds_status ds_atomic_file_check(const char *flag, const char *path, struct ds_err *err);

/* Opens a temporary file next to path ("path.tmp.XXXXXX", mkstemp; the
 * name before ".tmp." cut short where the whole would pass NAME_MAX or
 * PATH_MAX, so any name the file system takes is an output), or
 * path itself when it is a FIFO or a device (see above). "-" means standard
 * output: fp is stdout and commit/abort only flush. */
ds_status ds_atomic_file_open(const char *path, struct ds_atomic_file *af,
                              struct ds_err *err);
/* Flushes, fsyncs, closes and renames the temporary file over the target.
 * On any failure the temporary file is removed and the target is left as it
 * was. Always releases af. */
ds_status ds_atomic_file_commit(struct ds_atomic_file *af, struct ds_err *err);
/* Closes and removes the temporary file; the target is untouched. Safe to
 * call on a zeroed or already committed struct. */
void ds_atomic_file_abort(struct ds_atomic_file *af);

/* The path a write to path lands on: symbolic links followed (40 at most,
 * as the kernel does), a dangling one to the file it would create. Returned
 * owned; NULL with errno set when a link cannot be read or there are too
 * many. A temporary file renamed over the target must be made beside this
 * path, not beside a link to it: a rename does not cross file systems. */
char *ds_atomic_file_resolve(const char *path);

/* The permissions an output written to target (resolved) gets: those of
 * the regular file it replaces (& 07777), else 0644 less the umask. */
mode_t ds_atomic_file_mode(const char *target);

/* A temporary file for a program other than ddpsim to write (gnuplot):
 * made empty, with ds_atomic_file_mode's permissions, beside path's
 * resolved target ("TARGET.tmp.XXXXXX" into tmp, cap bytes) and listed for
 * removal on a fatal signal (ds_temp_remove, or ds_atomic_file_place). */
ds_status ds_atomic_file_temp(const char *path, char *tmp, size_t cap, struct ds_err *err);

/* Outputs committed together (issue #15, defect 4). A command registers
 * each final output with ds_atomic_file_defer before its work; a commit to
 * a registered target then flushes, fsyncs and closes the temporary file
 * but leaves it pending, and ds_atomic_file_finish renames every pending
 * file into place (commit != 0) or removes them all. A pending target is
 * read through ds_atomic_file_pending_path (its temporary file's name, or
 * path itself when nothing is pending). Process-wide, like the signal
 * table: one command per process. */
ds_status ds_atomic_file_defer(const char *path, struct ds_err *err);
const char *ds_atomic_file_pending_path(const char *path);
/* Puts a finished temporary file (made beside path, e.g. by gnuplot) in
 * place: pending when path is registered, renamed now otherwise. */
ds_status ds_atomic_file_place(const char *tmp, const char *path, struct ds_err *err);
ds_status ds_atomic_file_finish(int commit, struct ds_err *err);

/* Temporary files other modules make (a plot's data, a trace read back):
 * ds_temp_mkstemp is mkstemp that also lists the file for removal on a
 * fatal signal; ds_temp_remove unlinks and unlists it; ds_temp_untrack
 * unlists a file that was renamed into place (or that the caller removes
 * itself); ds_temp_track lists a name made otherwise. Any number may be
 * listed at once; ds_temp_track returns 0, or -1 with errno ENOMEM when it
 * cannot list the file (ds_temp_mkstemp then removes it and returns -1). */
int ds_temp_mkstemp(char *tmpl);
/* The folder for scratch files: $TMPDIR when set and not empty, else
 * /tmp, as mkstemp(3)'s callers conventionally choose. */
const char *ds_temp_dir(void);
/* ds_temp_mkstemp of "<ds_temp_dir()>/<prefix>-XXXXXX", the name left in
 * buf; -1 with errno ENAMETOOLONG when it does not fit in size. */
int ds_temp_mkstemp_in_dir(const char *prefix, char *buf, size_t size);
void ds_temp_remove(const char *path);
int ds_temp_track(const char *path);
void ds_temp_untrack(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* DS_ATOMIC_FILE_H */
