/* See support.h. */
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char *ds_test_slurp(const char *path) {
  FILE *fp = fopen(path, "rb");
  cr_assert(fp != NULL, "cannot open %s", path);
  cr_assert_eq(fseek(fp, 0, SEEK_END), 0);
  long n = ftell(fp);
  cr_assert(n >= 0);
  cr_assert_eq(fseek(fp, 0, SEEK_SET), 0);
  char *buf = malloc((size_t)n + 1);
  cr_assert(buf != NULL);
  cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v && *v ? v : fallback;
}

const char *ds_test_ddpsim(void) { return env_or("DDPSIM_BIN", "build/asan/ddpsim"); }
const char *ds_test_ddpreal(void) { return env_or("DDPREAL_BIN", "build/asan/ddpreal"); }

struct ds_test_result ds_test_run(const char *prefix, const char *binary,
                                  const char *args) {
  char out[] = "/tmp/ddpsim-test-out-XXXXXX", err[] = "/tmp/ddpsim-test-err-XXXXXX";
  int fo = mkstemp(out), fe = mkstemp(err);
  cr_assert(fo >= 0 && fe >= 0, "mkstemp failed");
  close(fo);
  close(fe);
  /* Commands are long (paths, sweeps): size the buffer to what it holds. */
  size_t cap = strlen(prefix) + strlen(binary) + strlen(args) + 2 * sizeof out + 32;
  char *cmd = malloc(cap);
  cr_assert(cmd != NULL);
  snprintf(cmd, cap, "%s%s%s %s >%s 2>%s </dev/null", prefix, *prefix ? " " : "",
           binary, args, out, err);
  int st = system(cmd);
  free(cmd);
  struct ds_test_result r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128,
                             ds_test_slurp(out), ds_test_slurp(err)};
  unlink(out);
  unlink(err);
  return r;
}

void ds_test_release(struct ds_test_result *r) {
  free(r->out);
  free(r->err);
  r->out = r->err = NULL;
}
