/*
 * Tests for base/config.c, its typed reads: every accessor's value in base
 * units, and the exact text of the messages a bad value gets (bandwidths,
 * a list's length, bare times and rates, each quantity's example, strict
 * integers and booleans, quoted text escaped and cut, values out of range).
 * Keys and their names: test_config_keys.c; whole files:
 * test_config_files.c; the shared loaders: tests/config_load.h.
 *
 * Lines and columns in the expected messages are 1-based and counted by
 * hand from the YAML literals; each test says which character they point at.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "tests/config_load.h"
#include "tests/support.h"

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
