/*
 * base/atomic_file.c beyond the plain replace (which tests/test_trace.c
 * covers): what is not a regular file is never replaced (a symlink is
 * followed, a FIFO or a device written through, a directory refused), and
 * no temporary file survives a fatal signal or a file-size limit (issue
 * #15, defects 3 and 5). Every case works in a fresh temporary directory
 * and counts what is left in it.
 */
#define _XOPEN_SOURCE 700 /* mknod */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "tests/support.h"

static ds_status write_text(const char *path, const char *text, struct ds_err *err) {
  struct ds_atomic_file af;
  ds_status st = ds_atomic_file_open(path, &af, err);
  if (st != DS_OK) return st;
  fputs(text, af.fp);
  return ds_atomic_file_commit(&af, err);
}

static void read_into(const char *path, char *buf, size_t cap) {
  FILE *fp = fopen(path, "r");
  cr_assert_not_null(fp, "%s: %s", path, strerror(errno));
  size_t n = fread(buf, 1, cap - 1, fp);
  buf[n] = '\0';
  fclose(fp);
}

/* A symlink is followed: its target gets the new content, the link stays a
 * link (rename over the link would have replaced it by a file). */
Test(atomic_file, a_symlink_is_followed_to_its_target) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX", link[300], target[300], buf[64];
  ds_test_make_dir(dir);
  snprintf(target, sizeof target, "%s/target.csv", dir);
  snprintf(link, sizeof link, "%s/link.csv", dir);
  cr_assert_eq(symlink("target.csv", link), 0);
  struct ds_err err = {0};
  /* Dangling: the write creates the target. */
  cr_assert_eq(write_text(link, "first\n", &err), DS_OK, "%s", err.msg);
  cr_assert_eq(write_text(link, "second\n", &err), DS_OK, "%s", err.msg);
  struct stat st;
  cr_assert_eq(lstat(link, &st), 0);
  cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
  read_into(target, buf, sizeof buf);
  cr_assert_str_eq(buf, "second\n");
  cr_assert_eq(ds_test_count_entries(dir), 2);
  ds_test_remove_dir(dir);
}

/* A FIFO is written through: a reader gets the bytes and the FIFO stays. */
Test(atomic_file, a_fifo_is_written_through) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX", fifo[300], buf[64];
  ds_test_make_dir(dir);
  snprintf(fifo, sizeof fifo, "%s/pipe", dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  int rd = open(fifo, O_RDWR | O_NONBLOCK); /* a reader, so the open does not wait */
  cr_assert(rd >= 0);
  struct ds_err err = {0};
  cr_assert_eq(write_text(fifo, "row\n", &err), DS_OK, "%s", err.msg);
  struct stat st;
  cr_assert_eq(stat(fifo, &st), 0);
  cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced by a regular file");
  ssize_t n = read(rd, buf, sizeof buf - 1);
  cr_assert_eq(n, 4);
  buf[n] = '\0';
  cr_assert_str_eq(buf, "row\n");
  close(rd);
  cr_assert_eq(ds_test_count_entries(dir), 1);
  ds_test_remove_dir(dir);
}

/* A device is written through, never replaced: a copy of /dev/full (made
 * with mknod, so that no test can touch the real one) fails the write with
 * ENOSPC and is still a character device; a copy of /dev/null takes it. */
Test(atomic_file, a_device_is_written_through_not_replaced) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX", full[300], null[300];
  ds_test_make_dir(dir);
  snprintf(full, sizeof full, "%s/full", dir);
  snprintf(null, sizeof null, "%s/null", dir);
  if (mknod(full, S_IFCHR | 0666, makedev(1, 7)) != 0 ||
      mknod(null, S_IFCHR | 0666, makedev(1, 3)) != 0) {
    ds_test_remove_dir(dir);
    cr_skip_test("mknod: %s (needs root)", strerror(errno));
  }
  struct ds_err err = {0};
  cr_assert_eq(write_text(full, "row\n", &err), DS_EIO);
  cr_assert(strstr(err.msg, "No space left on device"), "%s", err.msg);
  cr_assert_eq(write_text(null, "row\n", &err), DS_OK, "%s", err.msg);
  struct stat st;
  cr_assert_eq(stat(full, &st), 0);
  cr_assert(S_ISCHR(st.st_mode), "the device was replaced by a regular file");
  cr_assert_eq(stat(null, &st), 0);
  cr_assert(S_ISCHR(st.st_mode), "the device was replaced by a regular file");
  cr_assert_eq(ds_test_count_entries(dir), 2);
  ds_test_remove_dir(dir);
}

Test(atomic_file, a_directory_is_refused) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX";
  ds_test_make_dir(dir);
  struct ds_err err = {0};
  cr_assert_eq(write_text(dir, "row\n", &err), DS_EIO);
  cr_assert(strstr(err.msg, "is a directory"), "%s", err.msg);
  cr_assert_eq(ds_test_count_entries(dir), 0);
  ds_test_remove_dir(dir);
}

/* The check every command runs on its outputs before any work. */
Test(atomic_file, outputs_are_checked_before_the_work) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX", path[300];
  ds_test_make_dir(dir);
  struct ds_err err = {0};
  cr_assert_eq(ds_atomic_file_check("--trace", "", &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --trace: expected a value, got an empty string");
  cr_assert_eq(ds_atomic_file_check("--chrome", "/tmp/ddpsim-no-such-dir/c.json", &err), DS_EIO);
  cr_assert_str_eq(err.msg, "--chrome /tmp/ddpsim-no-such-dir/c.json: directory "
                            "/tmp/ddpsim-no-such-dir does not exist");
  cr_assert_eq(ds_atomic_file_check("--trace", dir, &err), DS_EIO);
  cr_assert(strstr(err.msg, "is a directory"), "%s", err.msg);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  cr_assert_eq(ds_atomic_file_check("--trace", path, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_atomic_file_check("--trace", "-", &err), DS_OK);
  cr_assert_eq(ds_test_count_entries(dir), 0);
  ds_test_remove_dir(dir);
}

/* A process killed by SIGTERM in the middle of a write leaves no
 * "PATH.tmp.XXXXXX" behind, and still dies of SIGTERM. */
Test(atomic_file, sigterm_during_a_write_removes_the_temporary_file) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX", path[300];
  ds_test_make_dir(dir);
  snprintf(path, sizeof path, "%s/trace.csv", dir);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    struct ds_atomic_file af;
    struct ds_err err = {0};
    if (ds_atomic_file_open(path, &af, &err) != DS_OK) _exit(3);
    fputs("half a trace", af.fp);
    fflush(af.fp);
    raise(SIGTERM);
    _exit(4);
  }
  int ws;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  cr_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM, "status %d", ws);
  cr_assert_eq(ds_test_count_entries(dir), 0, "a temporary file was left behind");
  ds_test_remove_dir(dir);
}

/* Past a file-size limit (RLIMIT_FSIZE) the write fails with EFBIG instead
 * of SIGXFSZ killing the process: a located error, nothing left behind. */
Test(atomic_file, a_file_size_limit_is_an_error_and_leaves_nothing) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX", path[300];
  ds_test_make_dir(dir);
  snprintf(path, sizeof path, "%s/trace.csv", dir);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    struct rlimit lim = {4096, 4096};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(3);
    struct ds_atomic_file af;
    struct ds_err err = {0};
    if (ds_atomic_file_open(path, &af, &err) != DS_OK) _exit(4);
    for (int i = 0; i < 10000; i++) fputs("0123456789\n", af.fp);
    ds_status st = ds_atomic_file_commit(&af, &err);
    _exit(st == DS_EIO && strstr(err.msg, "File too large") ? 0 : 5);
  }
  int ws;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "status %d", ws);
  cr_assert_eq(ds_test_count_entries(dir), 0, "a temporary file was left behind");
  ds_test_remove_dir(dir);
}

/* Registered outputs are committed together: a commit leaves the file
 * pending (readable through ds_atomic_file_pending_path, the target
 * untouched), ds_atomic_file_finish(1) renames all, finish(0) removes all. */
Test(atomic_file, deferred_outputs_are_committed_or_dropped_together) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX", a[300], b[300], buf[64];
  ds_test_make_dir(dir);
  snprintf(a, sizeof a, "%s/a.csv", dir);
  snprintf(b, sizeof b, "%s/b.csv", dir);
  struct ds_err err = {0};
  for (int commit = 0; commit <= 1; commit++) {
    cr_assert_eq(write_text(a, "old a\n", &err), DS_OK, "%s", err.msg);
    cr_assert_eq(ds_atomic_file_defer(a, &err), DS_OK);
    cr_assert_eq(ds_atomic_file_defer(b, &err), DS_OK);
    cr_assert_eq(write_text(a, "new a\n", &err), DS_OK, "%s", err.msg);
    cr_assert_eq(write_text(b, "new b\n", &err), DS_OK, "%s", err.msg);
    read_into(a, buf, sizeof buf);
    cr_assert_str_eq(buf, "old a\n", "a pending output replaced its target early");
    cr_assert_neq(strcmp(ds_atomic_file_pending_path(a), a), 0);
    read_into(ds_atomic_file_pending_path(a), buf, sizeof buf);
    cr_assert_str_eq(buf, "new a\n");
    cr_assert_eq(ds_atomic_file_finish(commit, &err), DS_OK, "%s", err.msg);
    read_into(a, buf, sizeof buf);
    cr_assert_str_eq(buf, commit ? "new a\n" : "old a\n");
    cr_assert_eq(access(b, F_OK) == 0, commit, "b exists only when committed");
    cr_assert_eq(ds_test_count_entries(dir), 1 + commit, "a temporary file was left behind");
    unlink(b);
  }
  ds_test_remove_dir(dir);
}

/* A temporary file placed on a deferred target (gnuplot's picture) is
 * listed for signal cleanup once, not twice: 40 plots put in place and
 * committed leave no listing behind, so two writes after them are both
 * removed when SIGTERM comes (each place once left a stale slot of the
 * then 32 behind, 31 of them after 40, and the second write was no longer
 * listed and survived the signal). */
Test(atomic_file, placed_temporaries_leave_no_slot_behind) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX", path[300], path2[300], pic[300];
  ds_test_make_dir(dir);
  snprintf(path, sizeof path, "%s/trace.csv", dir);
  snprintf(path2, sizeof path2, "%s/schedule.csv", dir);
  snprintf(pic, sizeof pic, "%s/p.png", dir);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    struct ds_err err = {0};
    for (int i = 0; i < 40; i++) {
      char tmp[320];
      if (ds_atomic_file_defer(pic, &err) != DS_OK) _exit(3);
      if (ds_atomic_file_temp(pic, tmp, sizeof tmp, &err) != DS_OK) _exit(4);
      if (ds_atomic_file_place(tmp, pic, &err) != DS_OK) _exit(5);
      if (ds_atomic_file_finish(1, &err) != DS_OK) _exit(6);
    }
    unlink(pic);
    struct ds_atomic_file af, af2;
    if (ds_atomic_file_open(path, &af, &err) != DS_OK) _exit(7);
    if (ds_atomic_file_open(path2, &af2, &err) != DS_OK) _exit(8);
    fputs("half a trace", af.fp);
    fflush(af.fp);
    raise(SIGTERM);
    _exit(9);
  }
  int ws;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  cr_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM, "status %d", ws);
  cr_assert_eq(ds_test_count_entries(dir), 0, "a temporary file was left behind");
  ds_test_remove_dir(dir);
}

/* The signal cleanup has no limit on live temporary files (it once listed
 * 32 and let the 33rd go unlisted): 40 outputs open at once, the first 5
 * committed, then SIGTERM: the 5 targets stay and none of the 35 other
 * "PATH.tmp.XXXXXX" files does (dir holds exactly 5 entries). */
Test(atomic_file, more_than_32_live_temporaries_are_all_removed_on_a_signal) {
  enum { OPEN = 40, COMMITTED = 5 };
  char dir[] = "/tmp/ddpsim-af-XXXXXX";
  ds_test_make_dir(dir);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    struct ds_atomic_file af[OPEN];
    struct ds_err err = {0};
    for (int i = 0; i < OPEN; i++) {
      char path[320];
      snprintf(path, sizeof path, "%s/out%02d.csv", dir, i);
      if (ds_atomic_file_open(path, &af[i], &err) != DS_OK) _exit(3);
      fputs("half an output", af[i].fp);
      fflush(af[i].fp);
    }
    for (int i = 0; i < COMMITTED; i++)
      if (ds_atomic_file_commit(&af[i], &err) != DS_OK) _exit(4);
    raise(SIGTERM);
    _exit(5);
  }
  int ws;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  cr_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM, "status %d", ws);
  cr_assert_eq(ds_test_count_entries(dir), COMMITTED,
               "temporary files were left behind (or a committed output removed)");
  ds_test_remove_dir(dir);
}

/* Every name the file system takes is an output: a 254-byte name (NAME_MAX
 * is 255) had a 265-byte temporary name, and the write failed with
 * ENAMETOOLONG ("cannot create a temporary file next to it: File name too
 * long") though `> NAME` works. The temporary name is now cut to fit, at a
 * UTF-8 character's start: "x" + 124 two-byte "é" + ".cs" is 252 bytes,
 * 244 bytes fit before ".tmp.XXXXXX" and byte 244 is an "é"'s second byte,
 * so 243 are kept. ds_atomic_file_temp (gnuplot's picture) too. */
Test(atomic_file, a_name_near_name_max_is_written_through_a_shortened_temporary) {
  char dir[] = "/tmp/ddpsim-af-XXXXXX", name[256], path[400], tmp[4096], buf[64];
  ds_test_make_dir(dir);
  size_t n = 0;
  name[n++] = 'x';
  for (int i = 0; i < 124; i++) name[n++] = (char)0xC3, name[n++] = (char)0xA9;
  memcpy(name + n, ".cs", 4);
  cr_assert_eq(strlen(name), 252);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct ds_err err = {0};
  struct ds_atomic_file af;
  cr_assert_eq(ds_atomic_file_open(path, &af, &err), DS_OK, "%s", err.msg);
  const char *tmp_name = strrchr(af.tmp_path, '/') + 1;
  cr_assert_eq(strlen(tmp_name), 243 + strlen(".tmp.XXXXXX"), "%s", tmp_name);
  cr_assert_eq(strncmp(tmp_name, name, 243), 0);
  cr_assert_eq(strncmp(tmp_name + 243, ".tmp.", 5), 0);
  fputs("long\n", af.fp);
  cr_assert_eq(ds_atomic_file_commit(&af, &err), DS_OK, "%s", err.msg);
  read_into(path, buf, sizeof buf);
  cr_assert_str_eq(buf, "long\n");
  cr_assert_eq(ds_atomic_file_temp(path, tmp, sizeof tmp, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(strlen(strrchr(tmp, '/') + 1), 243 + strlen(".tmp.XXXXXX"));
  ds_temp_remove(tmp);
  cr_assert_eq(ds_test_count_entries(dir), 1, "only the output is left");
  ds_test_remove_dir(dir);
}
