/*
 * What the end-to-end tests share: reading a file whole and running a
 * command with its stdout and stderr captured. Linked into every test
 * binary (Makefile: TEST_SUPPORT_OBJ); failures are Criterion assertions.
 */
#ifndef DS_TEST_SUPPORT_H
#define DS_TEST_SUPPORT_H

struct ds_test_result {
  int status; /* exit status; 128 when killed by a signal */
  char *out;  /* stdout, NUL-terminated (owned) */
  char *err;  /* stderr (owned) */
};

/* The whole file, NUL-terminated; the caller frees it. */
char *ds_test_slurp(const char *path);

/* $DDPSIM_BIN, else the sanitizer build's ddpsim. */
const char *ds_test_ddpsim(void);
/* $DDPREAL_BIN, else the sanitizer build's ddpreal. */
const char *ds_test_ddpreal(void);

/* Runs `prefix binary args </dev/null` through the shell (prefix: e.g.
 * environment assignments, "" for none), capturing both outputs. */
struct ds_test_result ds_test_run(const char *prefix, const char *binary,
                                  const char *args);

void ds_test_release(struct ds_test_result *r);

#endif
