/*
 * Status names, messages and exit codes, all generated from DS_STATUS_MAP.
 */
#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const status_names[] = {
#define DS__STATUS_NAME(name, code, msg) #name,
    DS_STATUS_MAP(DS__STATUS_NAME)
#undef DS__STATUS_NAME
};

static const char *const status_messages[] = {
#define DS__STATUS_MSG(name, code, msg) msg,
    DS_STATUS_MAP(DS__STATUS_MSG)
#undef DS__STATUS_MSG
};

static const int status_exit_codes[] = {
#define DS__STATUS_CODE(name, code, msg) code,
    DS_STATUS_MAP(DS__STATUS_CODE)
#undef DS__STATUS_CODE
};

static int status_valid(ds_status st) {
  return (int)st >= 0 && st < DS_STATUS_COUNT;
}

const char *ds_status_name(ds_status st) {
  return status_valid(st) ? status_names[st] : "UNKNOWN";
}

const char *ds_status_message(ds_status st) {
  return status_valid(st) ? status_messages[st] : "unknown status";
}

int ds_status_exit_code(ds_status st) {
  return status_valid(st) ? status_exit_codes[st] : 1;
}

ds_status ds_err_set(struct ds_err *err, ds_status st, const char *fmt, ...) {
  if (err == NULL) return st;
  err->status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return st;
}

void ds_err_clear(struct ds_err *err) {
  if (err == NULL) return;
  err->status = DS_OK;
  err->msg[0] = '\0';
}

ds_status ds_err_prefix(struct ds_err *err, ds_status st, const char *prefix) {
  if (err == NULL) return st;
  char buf[DS_ERR_MSG_MAX];
  snprintf(buf, sizeof buf, "%s%s", prefix, err->msg);
  memcpy(err->msg, buf, sizeof buf);
  err->status = st;
  return st;
}
