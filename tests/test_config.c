/*
 * Tests for base/config.c: loading, typed reads, sequences, key checks, and
 * the exact text of the messages users see, line and column included.
 *
 * Lines and columns in the expected messages are 1-based and counted by
 * hand from the YAML literals; each test says which character they point at.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "tests/support.h"

static struct ds_config *load(const char *text) {
  struct ds_config *cfg = NULL;
  struct ds_err err = {DS_OK, ""};
  ds_status st = ds_config_load_string("t.yaml", text, &cfg, &err);
  cr_assert_eq(st, DS_OK, "load failed: %s", err.msg);
  cr_assert_not_null(cfg);
  return cfg;
}

/* Loads text that must fail and returns the message. */
static const char *load_fail(const char *text, struct ds_err *err) {
  struct ds_config *cfg = NULL;
  ds_status st = ds_config_load_string("t.yaml", text, &cfg, err);
  cr_assert_eq(st, DS_EINPUT, "expected DS_EINPUT, got %s", ds_status_name(st));
  cr_assert_null(cfg);
  return err->msg;
}

static struct ds_cnode root_of(const struct ds_config *cfg) {
  struct ds_cnode root;
  struct ds_err err = {DS_OK, ""};
  cr_assert_eq(ds_config_root(cfg, &root, &err), DS_OK, "%s", err.msg);
  return root;
}

static struct ds_cnode get(const struct ds_cnode *map, const char *key) {
  struct ds_cnode n;
  cr_assert(ds_cmap_get(map, key, &n), "key '%s' not found", key);
  return n;
}

/* Every typed accessor on a well-formed file returns the value in base
 * units: bytes, bytes/s, ns, FLOP/s. */
Test(config, typed_reads) {
  struct ds_config *cfg = load("schema_version: 1\n"
                               "name: ring\n"
                               "bucket: 25MiB\n"
                               "link_bw: 400Gbps\n"
                               "latency: 1.5us\n"
                               "peak: 312TFLOPS\n"
                               "ratio: -0.25\n"
                               "overlap: yes\n"
                               "debug: false\n"
                               "quoted: \"\"\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_err err = {DS_OK, ""};
  struct ds_cnode n;
  int64_t i64 = 0;
  double d = 0.0;
  int b = -1;
  const char *s = NULL;

  n = get(&root, "schema_version");
  cr_assert_eq(ds_cnode_int64(&n, &i64, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(i64, 1);
  n = get(&root, "name");
  cr_assert_eq(ds_cnode_string(&n, &s, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(s, "ring");
  n = get(&root, "bucket");
  cr_assert_eq(ds_cnode_bytes(&n, &d, &err), DS_OK, "%s", err.msg);
  cr_assert(d == 26214400.0); /* 25 * 2^20 */
  n = get(&root, "link_bw");
  cr_assert_eq(ds_cnode_bw(&n, &d, &err), DS_OK, "%s", err.msg);
  cr_assert(d == 50e9); /* 400 Gbit/s / 8 */
  n = get(&root, "latency");
  cr_assert_eq(ds_cnode_time_ns(&n, &d, &err), DS_OK, "%s", err.msg);
  cr_assert(d == 1500.0);
  n = get(&root, "peak");
  cr_assert_eq(ds_cnode_flops(&n, &d, &err), DS_OK, "%s", err.msg);
  cr_assert(d == 312e12);
  n = get(&root, "ratio");
  cr_assert_eq(ds_cnode_number(&n, &d, &err), DS_OK, "%s", err.msg);
  cr_assert(d == -0.25);
  n = get(&root, "overlap");
  cr_assert_eq(ds_cnode_bool(&n, &b, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(b, 1);
  n = get(&root, "debug");
  cr_assert_eq(ds_cnode_bool(&n, &b, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(b, 0);
  /* A quoted empty string is a string; only a bare "key:" is nothing. */
  n = get(&root, "quoted");
  cr_assert_eq(ds_cnode_string(&n, &s, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(s, "");

  cr_assert_str_eq(ds_config_path(cfg), "t.yaml");
  ds_config_free(cfg);
}

/* The example from the design: 'nvlink.link_bw' on line 7, its value "fast"
 * starting at column 12 (after two spaces of indent and "link_bw: "). */
Test(config, bad_bandwidth_message_exact) {
  struct ds_config *cfg = load("schema_version: 1\n"
                               "# comment lines count\n"
                               "\n"
                               "nodes: 1\n"
                               "gpus_per_node: 4\n"
                               "nvlink:\n"
                               "  link_bw: fast\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode nv = get(&root, "nvlink");
  struct ds_cnode bw = get(&nv, "link_bw");
  struct ds_err err = {DS_OK, ""};
  double d = 7.0;
  cr_assert_eq(ds_cnode_bw(&bw, &d, &err), DS_EINPUT);
  cr_assert_eq(err.status, DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:7:12: key 'nvlink.link_bw': expected a "
                            "bandwidth like \"25GBps\" or \"400Gbps\" (B bytes, b bits; per "
                            "second as ps or /s; 1 Bps to 1e15 Bps), got \"fast\"");
  cr_assert(d == 7.0, "output untouched on failure");
  cr_assert_eq(ds_cnode_line(&bw), 7);
  ds_config_free(cfg);
}

/* A list of the wrong length names how many numbers it has, in the
 * singular for one: "got 1 number", "got 3 numbers". */
Test(config, a_list_of_the_wrong_length_counts_its_numbers) {
  struct ds_config *cfg = load("one: [4]\nthree: [1, 2, 3]\n");
  struct ds_cnode root = root_of(cfg);
  int64_t v[2];
  struct ds_err err = {DS_OK, ""};
  struct ds_cnode one = get(&root, "one"), three = get(&root, "three");
  cr_assert_eq(ds_cnode_int_list(&one, "[a, b]", 2, 0, 9, v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:6: key 'one': expected [a, b], got 1 number");
  err = (struct ds_err){DS_OK, ""};
  cr_assert_eq(ds_cnode_int_list(&three, "[a, b]", 2, 0, 9, v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:2:8: key 'three': expected [a, b], got 3 numbers");
  ds_config_free(cfg);
}

/* A time in a file carries its unit: the units parser reads a bare number
 * as seconds, which for a latency or a host cost (microseconds) is a unit
 * left out. 0 needs none; a unit makes any value a time. */
Test(config, a_bare_time_other_than_zero_is_refused) {
  struct ds_config *cfg = load("a: 4\nb: 0\nc: 4s\nd: \"2.5\"\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode a = get(&root, "a"), b = get(&root, "b"), c = get(&root, "c"),
                  d = get(&root, "d");
  struct ds_err err = {DS_OK, ""};
  double ns = -1;
  cr_assert_eq(ds_cnode_time_ns(&a, &ns, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:4: key 'a': expected a time with its unit, got \"4\": "
                            "write the unit you mean, e.g. \"4us\" or \"4s\"");
  err = (struct ds_err){DS_OK, ""};
  cr_assert_eq(ds_cnode_time_ns(&d, &ns, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "t.yaml:4:4: key 'd'"), "%s", err.msg);
  err = (struct ds_err){DS_OK, ""};
  cr_assert_eq(ds_cnode_time_ns(&b, &ns, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(ns, 0, 0);
  cr_assert_eq(ds_cnode_time_ns(&c, &ns, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(ns, 4e9, 0);
  ds_config_free(cfg);
}

/* Bandwidths and compute rates too: a bare 25 would be 25 B/s or 25
 * FLOP/s. A size keeps its bare bytes. */
Test(config, a_bare_rate_is_refused_a_bare_size_is_bytes) {
  struct ds_config *cfg = load("a: 25\nb: 312\nc: 1024\nd: 25GBps\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode a = get(&root, "a"), b = get(&root, "b"), c = get(&root, "c"),
                  d = get(&root, "d");
  struct ds_err err = {DS_OK, ""};
  double v = -1;
  cr_assert_eq(ds_cnode_bw(&a, &v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:4: key 'a': expected a bandwidth with its unit, got "
                            "\"25\": write the unit you mean, e.g. \"25GBps\" or \"25Bps\"");
  err = (struct ds_err){DS_OK, ""};
  cr_assert_eq(ds_cnode_flops(&b, &v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:2:4: key 'b': expected a compute rate with its unit, got "
                            "\"312\": write the unit you mean, e.g. \"312TFLOPS\" or "
                            "\"312FLOPS\"");
  err = (struct ds_err){DS_OK, ""};
  cr_assert_eq(ds_cnode_bytes(&c, &v, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(v, 1024, 0);
  cr_assert_eq(ds_cnode_bw(&d, &v, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(v, 25e9, 0);
  ds_config_free(cfg);
}

/* Each quantity names its own example in the message; the value of 'a' is
 * at line 1, column 4. */
Test(config, expected_phrases) {
  static const struct {
    const char *yaml;
    int which;
    const char *msg;
  } cases[] = {
      {"a: 5us\n", 0, "t.yaml:1:4: key 'a': expected a size like \"25MiB\" (at most 1e18 bytes), got \"5us\""},
      {"a: 5us\n", 1, "t.yaml:1:4: key 'a': expected a bandwidth like \"25GBps\" or \"400Gbps\" (B bytes, b bits; per second as ps or /s; 1 Bps to 1e15 Bps), got \"5us\""},
      {"a: 5MiB\n", 2, "t.yaml:1:4: key 'a': expected a time like \"1.5us\" (at most 1e6 s), got \"5MiB\""},
      {"a: 5us\n", 3, "t.yaml:1:4: key 'a': expected a compute rate like \"312TFLOPS\" (from 1 to 1e21 FLOPS), got \"5us\""},
      {"a: 5us\n", 4, "t.yaml:1:4: key 'a': expected a number, got \"5us\""},
      {"a: 1.5\n", 5, "t.yaml:1:4: key 'a': expected an integer, got \"1.5\""},
      {"a: on\n", 6, "t.yaml:1:4: key 'a': expected true or false, got \"on\""},
      {"a: [x]\n", 7, "t.yaml:1:4: key 'a': expected a string, got a sequence"},
      {"a: {x: 1}\n", 4, "t.yaml:1:4: key 'a': expected a number, got a mapping"},
      {"a: x\n", 8, "t.yaml:1:4: key 'a': expected a sequence, got \"x\""},
      /* "a:" alone is YAML null: not a string, even an empty one. Its
       * position is where the value would be (after "a:"). */
      {"a:\n", 7, "t.yaml:1:3: key 'a': expected a string, got nothing"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct ds_config *cfg = load(cases[i].yaml);
    struct ds_cnode root = root_of(cfg);
    struct ds_cnode a = get(&root, "a");
    struct ds_err err = {DS_OK, ""};
    double d;
    int64_t i64;
    int b;
    const char *s;
    size_t len;
    ds_status st = DS_OK;
    switch (cases[i].which) {
    case 0: st = ds_cnode_bytes(&a, &d, &err); break;
    case 1: st = ds_cnode_bw(&a, &d, &err); break;
    case 2: st = ds_cnode_time_ns(&a, &d, &err); break;
    case 3: st = ds_cnode_flops(&a, &d, &err); break;
    case 4: st = ds_cnode_number(&a, &d, &err); break;
    case 5: st = ds_cnode_int64(&a, &i64, &err); break;
    case 6: st = ds_cnode_bool(&a, &b, &err); break;
    case 7: st = ds_cnode_string(&a, &s, &err); break;
    case 8: st = ds_cseq_len(&a, &len, &err); break;
    }
    cr_assert_eq(st, DS_EINPUT, "case %zu", i);
    cr_assert_str_eq(err.msg, cases[i].msg, "case %zu", i);
    ds_config_free(cfg);
  }
}

/* Integers are plain decimal digits with an optional sign: no unit, no
 * fraction, no hex, no exponent, and they must fit in 64 bits. "010" is ten
 * (not YAML 1.1 octal). */
Test(config, int64_strict) {
  struct ds_config *cfg = load("ok: [-42, +7, \"12\", 010, 9223372036854775807]\n"
                               "bad: [1.0, 0x10, 1e3, 25MiB, \"\", \"-\", 1_000, "
                               "\" 1\", 9223372036854775808]\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode ok = get(&root, "ok"), bad = get(&root, "bad");
  static const int64_t want[] = {-42, 7, 12, 10, INT64_MAX};
  struct ds_err err = {DS_OK, ""};
  size_t len = 0;
  cr_assert_eq(ds_cseq_len(&ok, &len, &err), DS_OK);
  cr_assert_eq(len, 5);
  for (size_t i = 0; i < len; i++) {
    struct ds_cnode item;
    int64_t v = 0;
    cr_assert_eq(ds_cseq_at(&ok, i, &item, &err), DS_OK);
    cr_assert_eq(ds_cnode_int64(&item, &v, &err), DS_OK, "%s", err.msg);
    cr_assert_eq(v, want[i]);
  }
  cr_assert_eq(ds_cseq_len(&bad, &len, &err), DS_OK);
  cr_assert_eq(len, 9);
  for (size_t i = 0; i < len; i++) {
    struct ds_cnode item;
    int64_t v = 99;
    cr_assert_eq(ds_cseq_at(&bad, i, &item, &err), DS_OK);
    cr_assert_eq(ds_cnode_int64(&item, &v, &err), DS_EINPUT, "item %zu", i);
    cr_assert_eq(v, 99);
  }
  /* The last one is well-formed but out of range, and says so. */
  cr_assert(strstr(err.msg, "key 'bad[8]': expected an integer that fits in "
                            "64 bits, got \"9223372036854775808\"") != NULL,
            "%s", err.msg);
  ds_config_free(cfg);
}

/* Booleans: exactly true/false/yes/no; YAML 1.1's on/off, y/n and the
 * capitalised forms are refused so that each file reads one way. */
Test(config, bool_strict) {
  struct ds_config *cfg = load("t: [true, yes]\nf: [false, no]\n"
                               "bad: [True, on, off, 1, 0, y, \"\"]\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_err err = {DS_OK, ""};
  const char *keys[] = {"t", "f", "bad"};
  for (int k = 0; k < 3; k++) {
    struct ds_cnode seq = get(&root, keys[k]);
    size_t len = 0;
    cr_assert_eq(ds_cseq_len(&seq, &len, &err), DS_OK);
    for (size_t i = 0; i < len; i++) {
      struct ds_cnode item;
      int b = -1;
      cr_assert_eq(ds_cseq_at(&seq, i, &item, &err), DS_OK);
      ds_status st = ds_cnode_bool(&item, &b, &err);
      if (k == 2) {
        cr_assert_eq(st, DS_EINPUT, "bad[%zu]", i);
      } else {
        cr_assert_eq(st, DS_OK, "%s", err.msg);
        cr_assert_eq(b, k == 0);
      }
    }
  }
  ds_config_free(cfg);
}

/* Sequence items are named "KEY[i]", nested ones "KEY[i][j]", a value in
 * an item "KEY[i].VALUE", each at its own line. */
Test(config, sequences) {
  struct ds_config *cfg = load("layers:\n"
                               "  - {name: embed, params: 1M}\n"
                               "  - {name: attn, params: 4M}\n"
                               "  - {name: mlp, params: 8M}\n"
                               "  - {name: head, params: oops}\n"
                               "grid: [[1, 2], [3, 4]]\n"
                               "empty: []\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode layers = get(&root, "layers");
  struct ds_err err = {DS_OK, ""};
  size_t len = 0;
  cr_assert(ds_cnode_is_seq(&layers));
  cr_assert_not(ds_cnode_is_map(&layers));
  cr_assert_eq(ds_cseq_len(&layers, &len, &err), DS_OK);
  cr_assert_eq(len, 4);

  struct ds_cnode l2, l2again, name;
  const char *s = NULL;
  cr_assert_eq(ds_cseq_at(&layers, 2, &l2, &err), DS_OK);
  cr_assert_eq(ds_cnode_error(&l2, &err, "bad"), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:4:5: key 'layers[2]': bad");
  cr_assert(ds_cnode_is_map(&l2));
  cr_assert_eq(ds_cnode_line(&l2), 4);
  name = get(&l2, "name");
  cr_assert_eq(ds_cnode_string(&name, &s, &err), DS_OK);
  cr_assert_str_eq(s, "mlp");
  cr_assert_eq(ds_cseq_at(&layers, 2, &l2again, &err), DS_OK);
  cr_assert_eq(l2.index, l2again.index, "same item");

  /* A bad value inside an item names the item and the value's key, at
   * the value: "oops" is on line 5, column 26. */
  struct ds_cnode l3, params;
  double d;
  cr_assert_eq(ds_cseq_at(&layers, 3, &l3, &err), DS_OK);
  params = get(&l3, "params");
  cr_assert_eq(ds_cnode_bytes(&params, &d, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:5:26: key 'layers[3].params': expected a size "
                            "like \"25MiB\" (at most 1e18 bytes), got \"oops\"");
  /* A layer-level check by the caller names the item. */
  cr_assert_eq(ds_cnode_error(&l3, &err, "params must be %s", "positive"),
               DS_EINPUT);
  cr_assert_str_eq(err.msg,
                   "t.yaml:5:5: key 'layers[3]': params must be positive");

  struct ds_cnode grid = get(&root, "grid"), row, cell;
  int64_t v = 0;
  cr_assert_eq(ds_cseq_at(&grid, 1, &row, &err), DS_OK);
  cr_assert_eq(ds_cseq_at(&row, 0, &cell, &err), DS_OK);
  cr_assert_eq(ds_cnode_int64(&cell, &v, &err), DS_OK);
  cr_assert_eq(v, 3);
  cr_assert_eq(ds_cnode_bool(&cell, &(int){0}, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:6:17: key 'grid[1][0]': expected true or false, got \"3\"");

  struct ds_cnode empty = get(&root, "empty");
  cr_assert_eq(ds_cseq_len(&empty, &len, &err), DS_OK);
  cr_assert_eq(len, 0);
  ds_config_free(cfg);
}

/* The items of a sequence found in a map inside a sequence are named by
 * the whole path (layers[1].params[0], and below it
 * layers[1].params[0].shape[1]), so an error in one layer's list names
 * the layer; a sequence at the top level keeps its bare key. (Before, the
 * items were params[0] and shape[1].) The map value `params` (line 4,
 * column 5, where its block starts) is layers[1].params. */
Test(config, items_below_an_item_are_named_by_their_whole_path) {
  struct ds_config *cfg = load("layers:\n"
                               "  - {name: a, params: []}\n"
                               "  - name: b\n"
                               "    params:\n"
                               "      - {name: w, shape: [4, oops]}\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_err err = {DS_OK, ""};
  struct ds_cnode layers = get(&root, "layers"), l1, params, p0, shape, dim;
  cr_assert_eq(ds_cseq_at(&layers, 1, &l1, &err), DS_OK);
  params = get(&l1, "params");
  cr_assert_eq(ds_cnode_error(&params, &err, "bad"), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:5:7: key 'layers[1].params': bad");
  cr_assert_eq(ds_cseq_at(&params, 0, &p0, &err), DS_OK);
  shape = get(&p0, "shape");
  cr_assert_eq(ds_cseq_at(&shape, 1, &dim, &err), DS_OK);
  int64_t v = 0;
  cr_assert_eq(ds_cnode_int64(&dim, &v, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "t.yaml:5:30: key 'layers[1].params[0].shape[1]': ") == err.msg,
            "%s", err.msg);
  ds_config_free(cfg);
}

/* A value of a nested map is named by its whole path, and so are its
 * items; under the root the name stays the bare key, never doubled
 * (cat_copy.fwd[1], not cat_copy.cat_copy.fwd[1]). */
Test(config, a_nested_maps_values_are_named_by_their_whole_path) {
  struct ds_config *cfg = load("top: x\n"
                               "cat_copy:\n"
                               "  fwd: [8, oops]\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_err err = {DS_OK, ""};
  struct ds_cnode top = get(&root, "top");
  int64_t v = 0;
  cr_assert_eq(ds_cnode_int64(&top, &v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:6: key 'top': expected an integer, got \"x\"");

  struct ds_cnode map = get(&root, "cat_copy"), fwd = get(&map, "fwd"), item;
  cr_assert_eq(ds_cnode_int64(&fwd, &v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:3:8: key 'cat_copy.fwd': expected an integer, got a "
                            "sequence");
  cr_assert_eq(ds_cseq_at(&fwd, 1, &item, &err), DS_OK);
  cr_assert_eq(ds_cnode_int64(&item, &v, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "t.yaml:3:12: key 'cat_copy.fwd[1]'") == err.msg, "%s", err.msg);

  /* An absent key is named under its map, without a place. */
  struct ds_cnode none;
  cr_assert_not(ds_cmap_get(&map, "bwd", &none));
  cr_assert_eq(ds_cnode_int64(&none, &v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml: key 'cat_copy.bwd': expected an integer, got nothing");
  ds_config_free(cfg);
}

/* A node an alias repeats is named where it first appears, the place its
 * line and column point at (line 1, column 13), whichever way it was
 * reached; a path longer than a message has room for is cut at a
 * character boundary and ends in "...". */
Test(config, an_aliased_value_is_named_where_it_first_appears) {
  struct ds_config *cfg = load("a: {b: &x {c: bad}}\n"
                               "d: *x\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode d = get(&root, "d"), c = get(&d, "c");
  struct ds_err err = {DS_OK, ""};
  int64_t v = 0;
  cr_assert_eq(ds_cnode_int64(&c, &v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:15: key 'a.b.c': expected an integer, got \"bad\"");
  ds_config_free(cfg);

  /* 300 two-byte characters ("\xC3\xA9", é) as one key: the 256-byte room
   * keeps 252 bytes, 126 whole characters, then "...". */
  char key[601] = "", text[700], want[300] = "t.yaml:1:";
  for (int i = 0; i < 300; i++) strcat(key, "\xC3\xA9");
  snprintf(text, sizeof text, "%s: {v: bad}\n", key);
  cfg = load(text);
  root = root_of(cfg);
  struct ds_cnode map = get(&root, key), val = get(&map, "v");
  cr_assert_eq(ds_cnode_int64(&val, &v, &err), DS_EINPUT);
  char *at = strstr(err.msg, " key '");
  cr_assert_not_null(at, "%s", err.msg);
  strcpy(want, " key '");
  for (int i = 0; i < 126; i++) strcat(want, "\xC3\xA9");
  strcat(want, "...': expected an integer, got \"bad\"");
  cr_assert_str_eq(at, want);
  ds_config_free(cfg);
}

/* A value two maps deep is named by its whole path from the root, as a
 * topology's inter_node.fat_tree.link_bw: the bad value ("fast", line 3,
 * column 14), an unknown key in the inner map (line 3, column 5) and an
 * absent value (no line) alike; never just the nearest map or the bare key. */
Test(config, a_value_two_maps_deep_is_named_by_its_whole_path) {
  static const char *const allowed[] = {"radix", NULL};
  struct ds_config *cfg = load("inter_node:\n"
                               "  fat_tree:\n"
                               "    link_bw: fast\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode inter = get(&root, "inter_node"), tree = get(&inter, "fat_tree");
  struct ds_cnode bw = get(&tree, "link_bw"), radix;
  struct ds_err err = {DS_OK, ""};
  double v = 0;
  int64_t r = 0;
  cr_assert_eq(ds_cnode_bw(&bw, &v, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "t.yaml:3:14: key 'inter_node.fat_tree.link_bw': expected a "
                            "bandwidth") == err.msg, "%s", err.msg);
  cr_assert_eq(ds_cmap_check_keys(&tree, allowed, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:3:5: key 'inter_node.fat_tree': unknown key 'link_bw' "
                            "(allowed: radix)");
  cr_assert_not(ds_cmap_get(&tree, "radix", &radix));
  cr_assert_eq(ds_cnode_int64(&radix, &r, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml: key 'inter_node.fat_tree.radix': expected an integer, "
                            "got nothing");
  ds_config_free(cfg);
}

/* A value looked up in maps the file leaves out is named through them, from
 * the nearest map that is present: "inter_node.fat_tree.radix" with no
 * fat_tree, and with neither inter_node nor fat_tree; past
 * DS_CNODE_ABSENT_MAX absent maps the path writes "(...)" for the rest. */
Test(config, a_value_in_absent_maps_is_named_through_them) {
  struct ds_config *cfg = load("inter_node:\n"
                               "  nodes: 2\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode inter = get(&root, "inter_node"), tree, radix;
  struct ds_err err = {DS_OK, ""};
  int64_t r = 0;
  cr_assert_not(ds_cmap_get(&inter, "fat_tree", &tree));
  cr_assert_not(ds_cmap_get(&tree, "radix", &radix));
  cr_assert_eq(ds_cnode_int64(&radix, &r, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml: key 'inter_node.fat_tree.radix': expected an integer, "
                            "got nothing");

  struct ds_cnode intra, ring, lat;
  cr_assert_not(ds_cmap_get(&root, "intra_node", &intra));
  cr_assert_not(ds_cmap_get(&intra, "ring", &ring));
  cr_assert_not(ds_cmap_get(&ring, "lat", &lat));
  cr_assert_eq(ds_cnode_int64(&lat, &r, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml: key 'intra_node.ring.lat': expected an integer, "
                            "got nothing");

  struct ds_cnode level[DS_CNODE_ABSENT_MAX + 2];
  static const char *const names[] = {"a", "b", "c", "d", "e"};
  cr_assert_eq(sizeof names / sizeof *names, DS_CNODE_ABSENT_MAX + 2);
  struct ds_cnode *up = &root;
  for (size_t i = 0; i < DS_CNODE_ABSENT_MAX + 2; i++) {
    cr_assert_not(ds_cmap_get(up, names[i], &level[i]));
    up = &level[i];
  }
  cr_assert_eq(ds_cnode_int64(up, &r, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml: key 'a.b.(...).e': expected an integer, got nothing");
  ds_config_free(cfg);
}

/* Allowed keys pass; an unknown key is reported at the key itself with the
 * allowed list; a repeated key is reported at its second occurrence. */
Test(config, check_keys) {
  static const char *const allowed[] = {"nodes", "gpus_per_node", "link_bw",
                                        NULL};
  struct ds_err err = {DS_OK, ""};

  struct ds_config *cfg = load("nodes: 2\nlink_bw: 25GBps\n");
  struct ds_cnode root = root_of(cfg);
  cr_assert_eq(ds_cmap_check_keys(&root, allowed, &err), DS_OK, "%s", err.msg);
  ds_config_free(cfg);

  /* "link_bandwith" starts line 2, column 1. */
  cfg = load("nodes: 2\nlink_bandwith: 25GBps\n");
  root = root_of(cfg);
  cr_assert_eq(ds_cmap_check_keys(&root, allowed, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:2:1: unknown key 'link_bandwith' "
                            "(allowed: nodes, gpus_per_node, link_bw)");
  ds_config_free(cfg);

  /* The second "nodes" is at line 3, column 1; the first at 1:1. */
  cfg = load("nodes: 2\nlink_bw: 25GBps\nnodes: 4\n");
  root = root_of(cfg);
  cr_assert_eq(ds_cmap_check_keys(&root, allowed, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:3:1: duplicate key 'nodes' (first given "
                            "at line 1, column 1)");
  ds_config_free(cfg);

  /* Nested maps are checked at their own indentation, column 3, and the
   * message names the map the key sits in. */
  cfg = load("nvlink:\n  bw: 1GBps\n");
  root = root_of(cfg);
  struct ds_cnode nv = get(&root, "nvlink");
  cr_assert_eq(ds_cmap_check_keys(&nv, allowed, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "t.yaml:2:3: key 'nvlink': unknown key 'bw'") == err.msg, "%s",
            err.msg);
  /* Checking keys of a scalar is itself an input error. */
  struct ds_cnode bw = get(&nv, "bw");
  cr_assert_eq(ds_cmap_check_keys(&bw, allowed, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg,
                   "t.yaml:2:7: key 'nvlink.bw': expected a mapping, got \"1GBps\"");
  ds_config_free(cfg);
}

/* A "\0" escape in a double-quoted key or value is a NUL byte, which a C
 * string would silently cut at ("nodes\0x" was the key nodes, "ring\0x"
 * the name ring): refused where it stands, naming the key and the byte.
 * The key starts line 2, column 1; the value line 1, column 7. */
Test(config, a_nul_byte_in_a_key_or_value_is_refused) {
  static const char *const allowed[] = {"nodes", "name", NULL};
  struct ds_err err = {DS_OK, ""};
  struct ds_config *cfg = load("name: \"ring\\0x\"\n\"nodes\\0x\": 2\n");
  struct ds_cnode root = root_of(cfg);
  cr_assert_eq(ds_cmap_check_keys(&root, allowed, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:2:1: key 'nodes' contains a NUL byte (byte 6); "
                            "expected a plain word");
  struct ds_cnode name = get(&root, "name");
  const char *s = NULL;
  cr_assert_eq(ds_cnode_string(&name, &s, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:7: key 'name': the value contains a NUL byte "
                            "(byte 5); expected a string");
  ds_config_free(cfg);
  /* a number's text too: "12\0" was 12 */
  cfg = load("n: \"12\\0\"\n");
  root = root_of(cfg);
  struct ds_cnode n = get(&root, "n");
  int64_t v = 0;
  cr_assert_eq(ds_cnode_int64(&n, &v, &err), DS_EINPUT, "read as %lld", (long long)v);
  cr_assert(strstr(err.msg, "t.yaml:1:4: key 'n': the value contains a NUL byte (byte 3)"),
            "%s", err.msg);
  ds_config_free(cfg);
}

/* ds_cmap_get reports absence; ds_cmap_require turns it into a message
 * located at the map (its first key, line 2 column 3 here) and naming it. */
Test(config, missing_key) {
  struct ds_config *cfg = load("topo:\n  nodes: 2\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode topo = get(&root, "topo"), n;
  struct ds_err err = {DS_OK, ""};
  cr_assert_not(ds_cmap_get(&topo, "link_bw", &n));
  cr_assert_eq(n.index, 0);
  cr_assert_eq(ds_cnode_line(&n), 0);
  cr_assert_eq(ds_cmap_require(&topo, "link_bw", "a bandwidth like \"25GBps\"",
                               &n, &err),
               DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:2:3: key 'topo': missing key 'link_bw' (expected a "
                            "bandwidth like \"25GBps\")");
  cr_assert_eq(ds_cmap_require(&topo, "nodes", "an integer", &n, &err), DS_OK);
  cr_assert_eq(ds_cnode_line(&n), 2);
  ds_config_free(cfg);
}

/* The root must be a mapping; a list or a bare word is refused at 1:1. */
Test(config, non_mapping_root) {
  struct ds_err err = {DS_OK, ""};
  struct ds_cnode root;
  struct ds_config *cfg = load("- a\n- b\n");
  cr_assert_eq(ds_config_root(cfg, &root, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:1: expected a mapping of settings at "
                            "the top level, got a sequence");
  ds_config_free(cfg);
  cfg = load("hello\n");
  cr_assert_eq(ds_config_root(cfg, &root, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:1: expected a mapping of settings at "
                            "the top level, got \"hello\"");
  ds_config_free(cfg);
}

/* An empty file or one holding only comments has no document. */
Test(config, empty_document) {
  struct ds_err err = {DS_OK, ""};
  cr_assert_str_eq(load_fail("", &err),
                   "t.yaml: empty document (expected a mapping of settings)");
  cr_assert_str_eq(load_fail("# nothing here\n\n", &err),
                   "t.yaml: empty document (expected a mapping of settings)");
}

/* A second document would be ignored silently, so it is an error at its
 * start (the "---" on line 2). */
Test(config, second_document) {
  struct ds_err err = {DS_OK, ""};
  const char *msg = load_fail("a: 1\n---\nb: 2\n", &err);
  cr_assert(strstr(msg, "t.yaml:2:1: a second YAML document") == msg, "%s",
            msg);
}

/* Syntax errors carry libyaml's own problem text at its line and column:
 * the unclosed flow sequence is noticed at the end of input, line 2. */
Test(config, syntax_error) {
  struct ds_err err = {DS_OK, ""};
  const char *msg = load_fail("a: [1, 2\nb: 3\n", &err);
  cr_assert(strstr(msg, "t.yaml:") == msg, "%s", msg);
  cr_assert(strstr(msg, "YAML syntax error: ") != NULL, "%s", msg);
  cr_assert_eq(err.status, DS_EINPUT);

  /* A tab used for indentation: libyaml says "found character that cannot
   * start any token" at line 2, column 1. */
  msg = load_fail("a:\n\tb: 1\n", &err);
  cr_assert_str_eq(msg, "t.yaml:2:1: YAML syntax error: found character "
                        "that cannot start any token while scanning for the "
                        "next token (started at line 2, column 1)");

  /* Bytes that are not UTF-8 are a reader error; libyaml gives a byte
   * offset, the message a line and column (issue #15, defect 10). */
  msg = load_fail("a: \xff\n", &err);
  cr_assert(strstr(msg, "t.yaml:1:4: invalid text: ") == msg, "%s", msg);
  msg = load_fail("a: 1\nbb: \xc3\xa9\xff\n", &err);
  cr_assert(strstr(msg, "t.yaml:2:6: invalid text: ") == msg, "%s", msg);
}

/* Deep nesting is refused before libyaml builds it: 100 KB of unclosed '['
 * cost 27-29 s of CPU in every YAML reader (issue #15, defect 2). 64 levels
 * are accepted, the 65th is refused at its position; the refusal of 100,000
 * levels takes well under a second. */
Test(config, deep_nesting_is_refused_quickly) {
  char text[200];
  memset(text, '[', 64);
  memset(text + 64, ']', 64);
  text[128] = '\0';
  struct ds_config *cfg = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_config_load_string("t.yaml", text, &cfg, &err), DS_OK, "%s", err.msg);
  ds_config_free(cfg);
  cfg = NULL;
  memset(text, '[', 65);
  text[65] = '\0';
  cr_assert_eq(ds_config_load_string("t.yaml", text, &cfg, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:65: nested more than 64 levels deep (a ddpsim file "
                            "needs a few; is a bracket not closed?)");
  size_t n = 100000;
  char *deep = malloc(n + 1);
  memset(deep, '[', n);
  deep[n] = '\0';
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(ds_config_load_string("t.yaml", deep, &cfg, &err), DS_EINPUT);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  cr_assert_lt(s, 1.0, "took %.2f s", s);
  cr_assert(strstr(err.msg, "nested more than 64 levels"), "%s", err.msg);
  free(deep);
}

/* A file past 16 MiB is refused before it is parsed. */
Test(config, huge_files_are_refused) {
  char path[] = "/tmp/ddpsim_test_config_XXXXXX";
  ds_test_write_temp(path, "a: 1\n");
  cr_assert_eq(truncate(path, (off_t)DS_CONFIG_BYTES_MAX + 1), 0);
  struct ds_config *cfg = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_config_load(path, &cfg, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "more than 16 MiB"), "%s", err.msg);
  unlink(path);
}

/* A scalar quoted in a message is escaped and cut, so the message stays
 * one readable line. */
Test(config, quoted_text_escaped_and_cut) {
  struct ds_config *cfg =
      load("a: \"say \\\"hi\\\"\\n\"\n"
           "b: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
           "yyyy\n");
  struct ds_cnode root = root_of(cfg);
  struct ds_cnode a = get(&root, "a"), b = get(&root, "b");
  struct ds_err err = {DS_OK, ""};
  double d;
  cr_assert_eq(ds_cnode_number(&a, &d, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:4: key 'a': expected a number, got "
                            "\"say \\\"hi\\\"\\n\"");
  cr_assert_eq(ds_cnode_number(&b, &d, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg,
                   "t.yaml:2:4: key 'b': expected a number, got \""
                   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                   "...\"");
  ds_config_free(cfg);
}

/* A value that parses but lies outside what can be simulated is refused
 * where it is read, naming file, line and key (issue #15, defects 1 and
 * 10): 1e-300 Bps used to surface as "op 10: ... dur_us ... inf". */
Test(config, out_of_range_values_are_located) {
  struct ds_config *cfg = load("bw: 1e-300Bps\nlat: 1e12s\n");
  struct ds_cnode root = root_of(cfg), bw = get(&root, "bw"), lat = get(&root, "lat");
  struct ds_err err = {DS_OK, ""};
  double d;
  cr_assert_eq(ds_cnode_bw(&bw, &d, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:1:5: key 'bw': expected a bandwidth like \"25GBps\" or "
                            "\"400Gbps\" (B bytes, b bits; per second as ps or /s; 1 Bps to "
                            "1e15 Bps), got \"1e-300Bps\"");
  cr_assert_eq(ds_cnode_time_ns(&lat, &d, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml:2:6: key 'lat': expected a time like \"1.5us\" "
                            "(at most 1e6 s), got \"1e12s\"");
  ds_config_free(cfg);
}

/* Loading from a file reads it whole; a missing file or a directory is an
 * input error naming the path and the system's reason. */
Test(config, load_file) {
  char path[] = "/tmp/ddpsim_test_config_XXXXXX";
  ds_test_write_temp(path, "schema_version: 1\nlink_bw: fast\n");

  struct ds_config *cfg = NULL;
  struct ds_err err = {DS_OK, ""};
  cr_assert_eq(ds_config_load(path, &cfg, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(ds_config_path(cfg), path);
  struct ds_cnode root = root_of(cfg), bw = get(&root, "link_bw");
  double d;
  cr_assert_eq(ds_cnode_bw(&bw, &d, &err), DS_EINPUT);
  char want[256];
  snprintf(want, sizeof want,
           "%s:2:10: key 'link_bw': expected a bandwidth like \"25GBps\" or \"400Gbps\" "
           "(B bytes, b bits; per second as ps or /s; 1 Bps to 1e15 Bps), got \"fast\"",
           path);
  cr_assert_str_eq(err.msg, want);
  ds_config_free(cfg);
  unlink(path);

  cfg = NULL;
  cr_assert_eq(ds_config_load("/nonexistent/dir/4gpu.yaml", &cfg, &err),
               DS_EINPUT);
  cr_assert_null(cfg);
  cr_assert_str_eq(err.msg, "/nonexistent/dir/4gpu.yaml: cannot open: No "
                            "such file or directory");

  cr_assert_eq(ds_config_load("/", &cfg, &err), DS_EINPUT);
  cr_assert_null(cfg);
  cr_assert_str_eq(err.msg, "/: cannot read: Is a directory");
}

/* Destructors accept NULL; accessors on an absent node fail cleanly. */
Test(config, null_and_absent) {
  ds_config_free(NULL);
  struct ds_config *cfg = load("a: 1\n");
  struct ds_cnode root = root_of(cfg), missing;
  struct ds_err err = {DS_OK, ""};
  int64_t v;
  cr_assert_not(ds_cmap_get(&root, "zzz", &missing));
  cr_assert_not(ds_cnode_is_scalar(&missing));
  cr_assert_eq(ds_cnode_int64(&missing, &v, &err), DS_EINPUT);
  cr_assert_str_eq(err.msg, "t.yaml: key 'zzz': expected an integer, got "
                            "nothing");
  /* Errors may be discarded by passing NULL. */
  cr_assert_eq(ds_cnode_int64(&missing, &v, NULL), DS_EINPUT);
  ds_config_free(cfg);
}
