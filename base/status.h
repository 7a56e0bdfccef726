/*
 * Status codes and per-context error buffers shared by every ddpsim module.
 *
 * One X-macro list (DS_STATUS_MAP) generates the enum, the names, the
 * messages and the process exit code of each status, so they cannot drift
 * apart. User mistakes (bad flag, bad file) map to exit status 2; runtime and
 * internal failures to 1. The human detail of a failure lives in a struct
 * ds_err owned by the caller, never in a global.
 */
#ifndef DS_STATUS_H
#define DS_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, exit_code, message) */
#define DS_STATUS_MAP(X)                                               \
  X(OK, 0, "success")                                                  \
  X(EUSAGE, 2, "invalid command-line usage")                           \
  X(EINPUT, 2, "invalid input file")                                   \
  X(EIO, 1, "input/output error")                                      \
  X(ENOMEM, 1, "out of memory")                                        \
  X(EINTERNAL, 1, "internal error (a bug in ddpsim: please report it)")

typedef enum ds_status {
#define DS__STATUS_ENUM(name, code, msg) DS_##name,
  DS_STATUS_MAP(DS__STATUS_ENUM)
#undef DS__STATUS_ENUM
  DS_STATUS_COUNT
} ds_status;

/* "OK", "EUSAGE", ...; "UNKNOWN" for out-of-range values. */
const char *ds_status_name(ds_status st);
/* One-line generic description of the status. */
const char *ds_status_message(ds_status st);
/* Process exit code for the status: 0 ok, 2 usage/input, 1 otherwise. */
int ds_status_exit_code(ds_status st);

#define DS_ERR_MSG_MAX 1024

/* Detail of the last failure of one context (a command, a loader, ...). */
struct ds_err {
  ds_status status;
  char msg[DS_ERR_MSG_MAX];
};

/* Records st and a printf-style message in err (err may be NULL); returns st
 * so that callers can write `return ds_err_set(err, DS_EINPUT, ...)`. */
ds_status ds_err_set(struct ds_err *err, ds_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts prefix in front of err's message (cut to fit) and returns st:
 * `return ds_err_prefix(err, st, "option --calib: ")` names the flag a
 * reader did not know. */
ds_status ds_err_prefix(struct ds_err *err, ds_status st, const char *prefix);

/* Clears err to DS_OK with an empty message. */
void ds_err_clear(struct ds_err *err);

/* Returns the status of expr from the current function when it is not DS_OK. */
#define DS_CHECK(expr)                  \
  do {                                  \
    ds_status ds__st_ = (expr);         \
    if (ds__st_ != DS_OK) return ds__st_; \
  } while (0)

/* Stores the status of expr in st and jumps to label when it is not DS_OK. */
#define DS_CHECK_GOTO(expr, st, label) \
  do {                                 \
    (st) = (expr);                     \
    if ((st) != DS_OK) goto label;     \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif /* DS_STATUS_H */
