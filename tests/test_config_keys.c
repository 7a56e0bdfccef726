/*
 * Tests for base/config.c, its keys: sequences' items, nested maps' values,
 * aliased values and values in absent maps named by their whole path in
 * messages, the allowed keys checked, a NUL byte in a key or value
 * refused, a missing key required. Typed reads: test_config_values.c;
 * whole files: test_config_files.c; the shared loaders:
 * tests/config_load.h.
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
