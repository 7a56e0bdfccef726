/*
 * What base/config.c's tests (test_config_values.c, test_config_keys.c,
 * test_config_files.c) share: a file loaded from text (as t.yaml) that
 * must load or must fail, its root and a key of a map that must be there.
 * The functions are static inline so that an includer need not use them
 * all.
 */
#ifndef DS_TESTS_CONFIG_LOAD_H
#define DS_TESTS_CONFIG_LOAD_H

#include <criterion/criterion.h>

#include "base/config.h"

static inline struct ds_config *load(const char *text) {
  struct ds_config *cfg = NULL;
  struct ds_err err = {DS_OK, ""};
  ds_status st = ds_config_load_string("t.yaml", text, &cfg, &err);
  cr_assert_eq(st, DS_OK, "load failed: %s", err.msg);
  cr_assert_not_null(cfg);
  return cfg;
}

/* Loads text that must fail and returns the message. */
static inline const char *load_fail(const char *text, struct ds_err *err) {
  struct ds_config *cfg = NULL;
  ds_status st = ds_config_load_string("t.yaml", text, &cfg, err);
  cr_assert_eq(st, DS_EINPUT, "expected DS_EINPUT, got %s", ds_status_name(st));
  cr_assert_null(cfg);
  return err->msg;
}

static inline struct ds_cnode root_of(const struct ds_config *cfg) {
  struct ds_cnode root;
  struct ds_err err = {DS_OK, ""};
  cr_assert_eq(ds_config_root(cfg, &root, &err), DS_OK, "%s", err.msg);
  return root;
}

static inline struct ds_cnode get(const struct ds_cnode *map, const char *key) {
  struct ds_cnode n;
  cr_assert(ds_cmap_get(map, key, &n), "key '%s' not found", key);
  return n;
}

#endif /* DS_TESTS_CONFIG_LOAD_H */
