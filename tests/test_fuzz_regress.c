/*
 * Every input `make fuzz` ever found (every file under tests/data/fuzz/READER/, committed
 * after its fix) is run through its reader again, under the sanitizers of
 * `make test`: none may crash, leak or trip ASan/UBSan again. A reader's
 * folder holding no file is fine; a folder named after no reader is not.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/readers.h"

static int is_reader(const char *name) {
  for (const char *const *r = ds_fuzz_readers; *r; r++)
    if (strcmp(*r, name) == 0) return 1;
  return 0;
}

static unsigned char *read_all(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  cr_assert_not_null(fp, "%s", path);
  unsigned char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? 2 * cap : 4096;
      buf = realloc(buf, cap);
      cr_assert_not_null(buf);
    }
    size_t got = fread(buf + n, 1, cap - n, fp);
    n += got;
    if (got == 0) break;
  }
  fclose(fp);
  *len = n;
  return buf;
}

Test(fuzz_regress, every_saved_input_is_read_without_a_crash) {
  DIR *top = opendir("tests/data/fuzz");
  if (!top) cr_skip_test("no tests/data/fuzz");
  int files = 0;
  for (struct dirent *d; (d = readdir(top));) {
    if (d->d_name[0] == '.') continue;
    char dir[512];
    snprintf(dir, sizeof dir, "tests/data/fuzz/%s", d->d_name);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    cr_assert(is_reader(d->d_name), "tests/data/fuzz/%s names no reader", d->d_name);
    DIR *sub = opendir(dir);
    cr_assert_not_null(sub);
    for (struct dirent *e; (e = readdir(sub));) {
      if (e->d_name[0] == '.') continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      size_t len;
      unsigned char *data = read_all(path, &len);
      cr_assert_eq(ds_fuzz_run(d->d_name, data, len), 0, "%s", path);
      free(data);
      files++;
    }
    closedir(sub);
  }
  closedir(top);
  cr_log_info("%d saved inputs replayed", files);
}

/* The readers the harnesses name all exist, and each takes an empty and a
 * garbage input without a crash (the smallest regression set there is). */
Test(fuzz_regress, every_reader_takes_empty_and_garbage_input) {
  static const unsigned char garbage[] = "\xff\xfe[[[{{:\n,,\"\r\n#\x00x";
  for (const char *const *r = ds_fuzz_readers; *r; r++) {
    cr_assert_eq(ds_fuzz_run(*r, (const unsigned char *)"", 0), 0, "%s", *r);
    cr_assert_eq(ds_fuzz_run(*r, garbage, sizeof garbage - 1), 0, "%s", *r);
  }
  cr_assert_eq(ds_fuzz_run("nonesuch", garbage, 1), 1);
}
