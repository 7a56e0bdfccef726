/*
 * Tests for ds_cnode_int_range (base/config.c): the one reader of a bounded
 * integer that every config file uses (topology counts, GPU table entries,
 * model and calibration counts). Both bounds are included; anything else is
 * DS_EINPUT with "FILE:LINE:COL: key 'PATH': expected an integer from LO to
 * HI, got ..." and leaves the output alone.
 *
 * Each YAML line below is "KEY: VALUE", so a value's column is the key's
 * length plus 3; lines are counted from 1 in the literal.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "base/config.h"

static const char doc[] = "mid: 17\n"                     /* 1 */
                          "lo: 1\n"                       /* 2 */
                          "hi: 4096\n"                    /* 3 */
                          "below: 0\n"                    /* 4 */
                          "above: 4097\n"                 /* 5 */
                          "neg: -3\n"                     /* 6 */
                          "frac: 1.5\n"                   /* 7 */
                          "exp: 1e3\n"                    /* 8 */
                          "word: abc\n"                   /* 9 */
                          "huge: 99999999999999999999\n"  /* 10 */
                          "edge: 9223372036854775808\n"   /* 11 */
                          "list: [1, 2]\n"                /* 12 */
                          "empty:\n"                      /* 13 */
                          "min: -9223372036854775808\n"   /* 14 */
                          "max: 9223372036854775807\n"    /* 15 */
                          "quoted: \"12\"\n";             /* 16 */

static struct ds_config *cfg;
static struct ds_cnode root;

static void setup(void) {
  struct ds_err err = {DS_OK, ""};
  cr_assert_eq(ds_config_load_string("t.yaml", doc, &cfg, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_config_root(cfg, &root, &err), DS_OK, "%s", err.msg);
}

static void teardown(void) { ds_config_free(cfg); }

/* Reads key with bounds lo..hi; must succeed with want. */
static void expect_value(const char *key, int64_t lo, int64_t hi, int64_t want) {
  struct ds_cnode node;
  struct ds_err err = {DS_OK, ""};
  int64_t v = 12345;
  cr_assert(ds_cmap_get(&root, key, &node), "key %s", key);
  cr_assert_eq(ds_cnode_int_range(&node, lo, hi, &v, &err), DS_OK, "%s: %s", key, err.msg);
  cr_assert_eq(v, want, "%s: got %lld", key, (long long)v);
}

/* Reads key with bounds lo..hi; must fail with exactly msg and leave the
 * output as it was. */
static void expect_error(const char *key, int64_t lo, int64_t hi, const char *msg) {
  struct ds_cnode node;
  struct ds_err err = {DS_OK, ""};
  int64_t v = 12345;
  cr_assert(ds_cmap_get(&root, key, &node), "key %s", key);
  cr_assert_eq(ds_cnode_int_range(&node, lo, hi, &v, &err), DS_EINPUT, "%s", key);
  cr_assert_eq(err.status, DS_EINPUT);
  cr_assert_str_eq(err.msg, msg);
  cr_assert_eq(v, 12345, "%s: output written on failure", key);
}

TestSuite(config_int_range, .init = setup, .fini = teardown);

/* Inside the range, and on each bound (both are included). */
Test(config_int_range, in_range_and_both_bounds) {
  expect_value("mid", 1, 4096, 17);
  expect_value("lo", 1, 4096, 1);
  expect_value("hi", 1, 4096, 4096);
  expect_value("hi", 4096, 4096, 4096); /* a range of one value */
  expect_value("quoted", 1, 4096, 12);  /* a quoted integer is still one */
}

/* One past each bound: the message gives the range and the value read. */
Test(config_int_range, one_past_each_bound) {
  expect_error("below", 1, 4096,
               "t.yaml:4:8: key 'below': expected an integer from 1 to 4096, got 0");
  expect_error("above", 1, 4096,
               "t.yaml:5:8: key 'above': expected an integer from 1 to 4096, got 4097");
  expect_error("lo", 2, 4096, "t.yaml:2:5: key 'lo': expected an integer from 2 to 4096, got 1");
  expect_error("hi", 1, 4095,
               "t.yaml:3:5: key 'hi': expected an integer from 1 to 4095, got 4096");
}

/* Negative values: below a positive range, inside a negative one, and a
 * negative lower bound printed as such. */
Test(config_int_range, negative) {
  expect_error("neg", 1, 4096, "t.yaml:6:6: key 'neg': expected an integer from 1 to 4096, got -3");
  expect_value("neg", -10, -1, -3);
  expect_value("neg", -3, 0, -3);
  expect_error("below", -10, -1,
               "t.yaml:4:8: key 'below': expected an integer from -10 to -1, got 0");
}

/* Text that is not a plain decimal integer is quoted as written, with the
 * range still stated. */
Test(config_int_range, not_an_integer) {
  expect_error("frac", 1, 4096,
               "t.yaml:7:7: key 'frac': expected an integer from 1 to 4096, got \"1.5\"");
  expect_error("exp", 1, 4096,
               "t.yaml:8:6: key 'exp': expected an integer from 1 to 4096, got \"1e3\"");
  expect_error("word", 1, 4096,
               "t.yaml:9:7: key 'word': expected an integer from 1 to 4096, got \"abc\"");
  expect_error("list", 1, 4096,
               "t.yaml:12:7: key 'list': expected an integer from 1 to 4096, got a sequence");
  expect_error("empty", 1, 4096,
               "t.yaml:13:7: key 'empty': expected an integer from 1 to 4096, got nothing");
}

/* Text past 64 bits is past any closed range: the same message, the text
 * quoted (strtoll's saturated value is never shown or stored). */
Test(config_int_range, overflowing_text) {
  expect_error("huge", 1, 4096,
               "t.yaml:10:7: key 'huge': expected an integer from 1 to 4096, got "
               "\"99999999999999999999\"");
  expect_error("edge", 0, 1000,
               "t.yaml:11:7: key 'edge': expected an integer from 0 to 1000, got "
               "\"9223372036854775808\"");
}

/* A bound at the int64 limit leaves that side open: the message says ">="
 * or "<=", and past 64 bits says why. The limits themselves are read. */
Test(config_int_range, open_sides) {
  expect_value("max", 1, INT64_MAX, INT64_MAX);
  expect_value("min", INT64_MIN, 0, INT64_MIN);
  expect_value("mid", INT64_MIN, INT64_MAX, 17);
  expect_error("below", 1, INT64_MAX, "t.yaml:4:8: key 'below': expected an integer >= 1, got 0");
  expect_error("mid", INT64_MIN, 16, "t.yaml:1:6: key 'mid': expected an integer <= 16, got 17");
  expect_error("edge", 0, INT64_MAX,
               "t.yaml:11:7: key 'edge': expected an integer >= 0 that fits in 64 bits, got "
               "\"9223372036854775808\"");
  expect_error("frac", INT64_MIN, INT64_MAX,
               "t.yaml:7:7: key 'frac': expected an integer, got \"1.5\"");
}

/* An absent node (index 0, as ds_cmap_get leaves it) and a NULL error
 * buffer fail without crashing. */
Test(config_int_range, absent_node_and_null_err) {
  struct ds_cnode node;
  int64_t v = 7;
  struct ds_err err = {DS_OK, ""};
  cr_assert_not(ds_cmap_get(&root, "nope", &node));
  node.key = "nope";
  cr_assert_eq(ds_cnode_int_range(&node, 1, 2, &v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml: key 'nope': expected an integer from 1 to 2, got nothing");
  cr_assert(ds_cmap_get(&root, "below", &node));
  cr_assert_eq(ds_cnode_int_range(&node, 1, 2, &v, NULL), DS_EINPUT);
  cr_assert_eq(v, 7);
}
