/*
 * Typed, located access to YAML configuration files, on libyaml's document
 * API: the whole file is loaded into one yaml_document_t and node handles
 * are (config, node index, key, parent index) values.
 *
 * Invariant: every failure returned to a caller carries a message that
 * starts with "FILE:" (and LINE:COL when a node is known) and names the
 * value by its whole path from the document's root (inter_node.fat_tree.
 * link_bw, layers[3].params[0].shape[1]), so the user can go straight to
 * the mistake; nothing here aborts. The path is written when a message is:
 * each node records where it sits (struct place, filled once at load), and
 * the message walks those links up to the root, borrowing the key text
 * from the document.
 */
#include "base/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/units.h"

/* Where a node sits: the index of the mapping or sequence holding it (0 for
 * the root, and for a node not reached from it), and its key node's index
 * in a mapping or its position in a sequence. A node an alias repeats is
 * placed where it first appears, the place its line and column point at. */
struct place {
  int up;
  int key;
  int item;
};

struct ds_config {
  char *path;
  yaml_document_t doc;
  int has_doc;
  struct place *places; /* by node index, [0] unused */
};

/* Longest scalar text quoted in a message; the rest becomes "...". */
#define QUOTE_MAX 64
/* Room for a key path in a message; a longer one is cut at a character
 * boundary and ends in "...". */
#define PATH_MAX_BYTES 256

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */

static const yaml_node_t *node_at(const struct ds_config *cfg, int index) {
  if (cfg == NULL || !cfg->has_doc || index <= 0) return NULL;
  if (index > cfg->doc.nodes.top - cfg->doc.nodes.start) return NULL;
  return cfg->doc.nodes.start + (index - 1);
}

static const yaml_node_t *cnode(const struct ds_cnode *n) {
  return n == NULL ? NULL : node_at(n->cfg, n->index);
}

static const char *scalar_text(const yaml_node_t *node) {
  return (const char *)node->data.scalar.value;
}

/* A plain empty scalar is what YAML gives for "key:" with nothing after. */
static int is_empty_plain(const yaml_node_t *node) {
  return node->type == YAML_SCALAR_NODE && node->data.scalar.length == 0 &&
         node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* Appends len bytes of text to the path in buf (size > 4), at *o. What
 * does not fit is cut at a UTF-8 character boundary and the path ends in
 * "..."; then 0 is returned and nothing more should be added. */
static int path_add(char *buf, size_t size, size_t *o, const char *text, size_t len) {
  size_t room = size - 1 - *o, k = len < room ? len : room;
  memcpy(buf + *o, text, k);
  *o += k;
  buf[*o] = '\0';
  if (k == len) return 1;
  size_t end = size - 4; /* buf is full: its byte `end` is the first cut off */
  while (end > 0 && ((unsigned char)buf[end] & 0xC0) == 0x80) end--;
  memcpy(buf + end, "...", 4);
  *o = end + 3;
  return 0;
}

/* Writes the whole path of node `index` ("a.b[2].c"; "" for the root) into
 * buf by walking its places up to the root; 0 when it had to be cut. The
 * links are at most as many as the file nests, which the load bounded. */
static int node_path(const struct ds_config *cfg, int index, char *buf, size_t size,
                     size_t *o) {
  int chain[DS_CONFIG_DEPTH_MAX + 2];
  size_t n = 0;
  *o = 0;
  buf[0] = '\0';
  for (int at = index; at > 0 && cfg->places[at].up > 0 && n < sizeof chain / sizeof *chain;
       at = cfg->places[at].up)
    chain[n++] = at;
  while (n-- > 0) {
    const struct place *pl = &cfg->places[chain[n]];
    char item[32];
    if (pl->key == 0) {
      int w = snprintf(item, sizeof item, "[%d]", pl->item);
      if (!path_add(buf, size, o, item, (size_t)w)) return 0;
      continue;
    }
    const yaml_node_t *k = node_at(cfg, pl->key);
    const char *text = k != NULL && k->type == YAML_SCALAR_NODE ? scalar_text(k) : "?";
    if ((*o > 0 && !path_add(buf, size, o, ".", 1)) ||
        !path_add(buf, size, o, text, strlen(text)))
      return 0;
  }
  return 1;
}

/* The name messages give n: its whole path when it is in the document,
 * else (absent) the path of the map it was looked for in and its key. buf
 * holds the text when it is not n's own key. */
static const char *node_key(const struct ds_cnode *n, char *buf, size_t size) {
  if (n == NULL) return NULL;
  const struct ds_config *cfg = n->cfg;
  size_t o;
  if (cfg == NULL || cfg->places == NULL) return n->key;
  if (node_at(cfg, n->index) != NULL && (n->index == 1 || cfg->places[n->index].up > 0)) {
    node_path(cfg, n->index, buf, size, &o);
    return buf;
  }
  if (node_at(cfg, n->parent) == NULL || n->key == NULL) return n->key;
  int whole = node_path(cfg, n->parent, buf, size, &o);
  for (size_t i = 0; whole && i < DS_CNODE_ABSENT_MAX && n->absent_maps[i] != NULL; i++)
    whole = (o == 0 || path_add(buf, size, &o, ".", 1)) &&
            path_add(buf, size, &o, n->absent_maps[i], strlen(n->absent_maps[i]));
  if (whole && (o == 0 || path_add(buf, size, &o, ".", 1)))
    path_add(buf, size, &o, n->key, strlen(n->key));
  return buf;
}

/* Writes "PREFIX" + fmt into err: "FILE:LINE:COL: key 'PATH': " when a node
 * and a non-empty key are known, shorter forms otherwise. */
__attribute__((format(printf, 5, 0))) static ds_status
vfail(struct ds_err *err, const struct ds_config *cfg, const yaml_node_t *node,
      const char *key, const char *fmt, va_list ap) {
  if (err == NULL) return DS_EINPUT;
  err->status = DS_EINPUT;
  const char *path = cfg != NULL && cfg->path != NULL ? cfg->path : "<config>";
  int n;
  if (node != NULL)
    n = snprintf(err->msg, sizeof err->msg, "%s:%lu:%lu: ", path,
                 (unsigned long)node->start_mark.line + 1,
                 (unsigned long)node->start_mark.column + 1);
  else
    n = snprintf(err->msg, sizeof err->msg, "%s: ", path);
  if (n < 0 || (size_t)n >= sizeof err->msg) return DS_EINPUT;
  if (key != NULL && key[0] != '\0') {
    int k = snprintf(err->msg + n, sizeof err->msg - (size_t)n, "key '%s': ",
                     key);
    if (k < 0 || (size_t)k >= sizeof err->msg - (size_t)n) return DS_EINPUT;
    n += k;
  }
  vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
  return DS_EINPUT;
}

/* vfail naming no key: for what is not a value (the document, its root). */
__attribute__((format(printf, 4, 5))) static ds_status
fail(struct ds_err *err, const struct ds_config *cfg, const yaml_node_t *node,
     const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ds_status st = vfail(err, cfg, node, NULL, fmt, ap);
  va_end(ap);
  return st;
}

/* vfail at node `at`, naming n by its whole path (node_key). */
__attribute__((format(printf, 4, 0))) static ds_status
vfail_named(struct ds_err *err, const struct ds_cnode *n, const yaml_node_t *at,
            const char *fmt, va_list ap) {
  char path[PATH_MAX_BYTES];
  return vfail(err, n != NULL ? n->cfg : NULL, at, node_key(n, path, sizeof path), fmt, ap);
}

__attribute__((format(printf, 4, 5))) static ds_status
fail_named(struct ds_err *err, const struct ds_cnode *n, const yaml_node_t *at,
           const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ds_status st = vfail_named(err, n, at, fmt, ap);
  va_end(ap);
  return st;
}

/* Copies s into buf as the inside of a double-quoted string: quotes,
 * backslashes and control characters escaped, cut after QUOTE_MAX bytes
 * at a UTF-8 character boundary. */
static void quote_text(char *buf, size_t size, const char *s, size_t len) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (i >= QUOTE_MAX && (c & 0xC0) != 0x80) {
      if (o + 4 <= size) memcpy(buf + o, "...", 3), o += 3;
      break;
    }
    char esc[5];
    size_t e;
    if (c == '"' || c == '\\') {
      esc[0] = '\\', esc[1] = (char)c, e = 2;
    } else if (c == '\n') {
      esc[0] = '\\', esc[1] = 'n', e = 2;
    } else if (c == '\t') {
      esc[0] = '\\', esc[1] = 't', e = 2;
    } else if (c < 0x20 || c == 0x7F) {
      snprintf(esc, sizeof esc, "\\x%02X", c);
      e = 4;
    } else {
      esc[0] = (char)c, e = 1;
    }
    if (o + e + 1 > size) break;
    memcpy(buf + o, esc, e);
    o += e;
  }
  buf[o] = '\0';
}

/* "expected WHAT, got ..." for node, naming what was actually there. */
static ds_status fail_expected(const struct ds_cnode *n, const char *what,
                               struct ds_err *err) {
  const yaml_node_t *node = cnode(n);
  if (node == NULL || is_empty_plain(node))
    return fail_named(err, n, node, "expected %s, got nothing", what);
  if (node->type == YAML_MAPPING_NODE)
    return fail_named(err, n, node, "expected %s, got a mapping", what);
  if (node->type == YAML_SEQUENCE_NODE)
    return fail_named(err, n, node, "expected %s, got a sequence", what);
  char quoted[QUOTE_MAX * 4 + 8];
  quote_text(quoted, sizeof quoted, scalar_text(node), node->data.scalar.length);
  return fail_named(err, n, node, "expected %s, got \"%s\"", what, quoted);
}

ds_status ds_cnode_error(const struct ds_cnode *node, struct ds_err *err,
                         const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ds_status st = vfail_named(err, node, cnode(node), fmt, ap);
  va_end(ap);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                  */

void ds_config_free(struct ds_config *cfg) {
  if (cfg == NULL) return;
  if (cfg->has_doc) yaml_document_delete(&cfg->doc);
  free(cfg->places);
  free(cfg->path);
  free(cfg);
}

/* libyaml's own words for what went wrong, at its 1-based position. A
 * reader error (bad encoding) comes with a byte offset only; the line and
 * column are counted from the text. */
static ds_status syntax_error(const char *name, const yaml_parser_t *p, const char *text,
                              size_t len, struct ds_err *err) {
  if (p->error == YAML_MEMORY_ERROR)
    return ds_err_set(err, DS_ENOMEM, "%s: out of memory while parsing", name);
  const char *problem = p->problem != NULL ? p->problem : "unknown problem";
  if (p->error == YAML_READER_ERROR) {
    size_t off = p->problem_offset < len ? p->problem_offset : len;
    unsigned long line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
      if (text[i] == '\n') line++, col = 1;
      else if (((unsigned char)text[i] & 0xC0) != 0x80) col++;
    }
    return ds_err_set(err, DS_EINPUT,
                      "%s:%lu:%lu: invalid text: %s (the file must be "
                      "UTF-8 YAML)",
                      name, line, col, problem);
  }
  if (p->context != NULL)
    return ds_err_set(err, DS_EINPUT,
                      "%s:%lu:%lu: YAML syntax error: %s %s (started at "
                      "line %lu, column %lu)",
                      name, (unsigned long)p->problem_mark.line + 1,
                      (unsigned long)p->problem_mark.column + 1, problem,
                      p->context, (unsigned long)p->context_mark.line + 1,
                      (unsigned long)p->context_mark.column + 1);
  return ds_err_set(err, DS_EINPUT, "%s:%lu:%lu: YAML syntax error: %s", name,
                    (unsigned long)p->problem_mark.line + 1,
                    (unsigned long)p->problem_mark.column + 1, problem);
}

/* Walks the events once with a nesting counter before anything is built:
 * libyaml's cost grows with the square of the nesting (100 KB of '[' took
 * half a minute), and no ddpsim file nests deeper than a few levels. Stops
 * at the first level past DS_CONFIG_DEPTH_MAX, so the walk itself is cheap.
 * Syntax errors are left to the load, which words them. */
static ds_status check_depth(const char *name, const char *text, size_t len,
                             struct ds_err *err) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    return ds_err_set(err, DS_ENOMEM, "%s: out of memory", name);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  ds_status st = DS_OK;
  int depth = 0, done = 0;
  while (!done) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) break;
    if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
      if (++depth > DS_CONFIG_DEPTH_MAX)
        st = ds_err_set(err, DS_EINPUT,
                        "%s:%lu:%lu: nested more than %d levels deep (a ddpsim file needs "
                        "a few; is a bracket not closed?)",
                        name, (unsigned long)ev.start_mark.line + 1,
                        (unsigned long)ev.start_mark.column + 1, DS_CONFIG_DEPTH_MAX);
    } else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
      depth--;
    }
    done = ev.type == YAML_STREAM_END_EVENT || st != DS_OK;
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&parser);
  return st;
}

/* Parses len bytes of YAML into cfg->doc; exactly one non-empty document is
 * allowed, since a second one would be silently ignored otherwise. */
static ds_status parse_into(struct ds_config *cfg, const char *text,
                            size_t len, struct ds_err *err) {
  ds_status st = DS_OK;
  yaml_parser_t parser;
  yaml_document_t extra;
  int parser_ok = 0;

  if (len > DS_CONFIG_BYTES_MAX)
    return ds_err_set(err, DS_EINPUT,
                      "%s: %zu bytes; a ddpsim file is at most %d MiB", cfg->path, len,
                      DS_CONFIG_BYTES_MAX >> 20);
  DS_CHECK(check_depth(cfg->path, text, len, err));

  if (!yaml_parser_initialize(&parser)) {
    st = ds_err_set(err, DS_ENOMEM, "%s: out of memory", cfg->path);
    goto out;
  }
  parser_ok = 1;
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &cfg->doc)) {
    st = syntax_error(cfg->path, &parser, text, len, err);
    goto out;
  }
  cfg->has_doc = 1;
  if (yaml_document_get_root_node(&cfg->doc) == NULL) {
    st = ds_err_set(err, DS_EINPUT,
                    "%s: empty document (expected a mapping of settings)",
                    cfg->path);
    goto out;
  }
  if (!yaml_parser_load(&parser, &extra)) {
    st = syntax_error(cfg->path, &parser, text, len, err);
    goto out;
  }
  yaml_node_t *extra_root = yaml_document_get_root_node(&extra);
  if (extra_root != NULL) {
    st = ds_err_set(err, DS_EINPUT,
                    "%s:%lu:%lu: a second YAML document; a config file holds "
                    "exactly one (remove the '---' separator)",
                    cfg->path,
                    (unsigned long)extra.start_mark.line + 1,
                    (unsigned long)extra.start_mark.column + 1);
  }
  yaml_document_delete(&extra);

out:
  if (parser_ok) yaml_parser_delete(&parser);
  return st;
}

static void place_items(struct ds_config *cfg, int index, int depth);

/* Records where child sits (in up, under key node `key` or at position
 * item) unless it has a place already: the root, or a node an alias
 * repeats, whose first appearance came earlier in this walk. */
static void place(struct ds_config *cfg, int child, int up, int key, int item, int depth) {
  if (child <= 1 || node_at(cfg, child) == NULL || cfg->places[child].up > 0) return;
  cfg->places[child] = (struct place){up, key, item};
  place_items(cfg, child, depth + 1);
}

/* Places the values of mapping `index`, or the items of sequence `index`,
 * and below them, in the order they appear (so an anchored node is placed
 * before any alias of it). depth stays within the nesting the load allowed. */
static void place_items(struct ds_config *cfg, int index, int depth) {
  const yaml_node_t *node = node_at(cfg, index);
  if (node == NULL || depth > DS_CONFIG_DEPTH_MAX) return;
  if (node->type == YAML_MAPPING_NODE)
    for (const yaml_node_pair_t *p = node->data.mapping.pairs.start;
         p < node->data.mapping.pairs.top; p++)
      place(cfg, p->value, index, p->key, 0, depth);
  if (node->type == YAML_SEQUENCE_NODE)
    for (const yaml_node_item_t *it = node->data.sequence.items.start;
         it < node->data.sequence.items.top; it++)
      place(cfg, *it, index, 0, (int)(it - node->data.sequence.items.start), depth);
}

static ds_status load_bytes(const char *name, const char *text, size_t len,
                            struct ds_config **out, struct ds_err *err) {
  ds_status st = DS_OK;
  struct ds_config *cfg = calloc(1, sizeof *cfg);
  if (cfg == NULL) return ds_err_set(err, DS_ENOMEM, "%s: out of memory", name);
  cfg->path = strdup(name);
  if (cfg->path == NULL) {
    st = ds_err_set(err, DS_ENOMEM, "%s: out of memory", name);
    goto out;
  }
  DS_CHECK_GOTO(parse_into(cfg, text, len, err), st, out);
  cfg->places = calloc((size_t)(cfg->doc.nodes.top - cfg->doc.nodes.start) + 1,
                       sizeof *cfg->places);
  if (cfg->places == NULL) {
    st = ds_err_set(err, DS_ENOMEM, "%s: out of memory", name);
    goto out;
  }
  place_items(cfg, 1, 1);
  *out = cfg;
  return DS_OK;

out:
  ds_config_free(cfg);
  return st;
}

ds_status ds_config_load_string(const char *name, const char *text,
                                struct ds_config **out, struct ds_err *err) {
  if (name == NULL) name = "<string>";
  if (text == NULL)
    return ds_err_set(err, DS_EINTERNAL, "%s: no text given", name);
  return load_bytes(name, text, strlen(text), out, err);
}

ds_status ds_config_load(const char *path, struct ds_config **out,
                         struct ds_err *err) {
  ds_status st = DS_OK;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return ds_err_set(err, DS_EINPUT, "%s: cannot open: %s", path,
                      strerror(errno));
  for (;;) {
    if (len == cap) {
      size_t ncap = cap == 0 ? 4096 : cap * 2;
      char *nbuf = realloc(buf, ncap);
      if (nbuf == NULL) {
        st = ds_err_set(err, DS_ENOMEM, "%s: out of memory", path);
        goto out;
      }
      buf = nbuf;
      cap = ncap;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
    /* Stop reading what will be refused anyway (a device, a huge file). */
    if (len > DS_CONFIG_BYTES_MAX) {
      st = ds_err_set(err, DS_EINPUT, "%s: more than %d MiB; a ddpsim file is at most that",
                      path, DS_CONFIG_BYTES_MAX >> 20);
      goto out;
    }
  }
  if (ferror(f)) {
    /* A directory opens but does not read: that is the user's path. */
    int e = errno;
    st = ds_err_set(err, e == EISDIR ? DS_EINPUT : DS_EIO,
                    "%s: cannot read: %s", path, strerror(e));
    goto out;
  }
  st = load_bytes(path, buf, len, out, err);

out:
  free(buf);
  fclose(f);
  return st;
}

const char *ds_config_path(const struct ds_config *cfg) {
  return cfg != NULL ? cfg->path : NULL;
}

ds_status ds_config_root(const struct ds_config *cfg, struct ds_cnode *out,
                         struct ds_err *err) {
  struct ds_cnode root = {cfg, 1, "", 0, {NULL}};
  const yaml_node_t *node = cnode(&root);
  if (node == NULL)
    return fail(err, cfg, NULL, "empty document (expected a mapping)");
  if (node->type != YAML_MAPPING_NODE)
    return fail_expected(&root, "a mapping of settings at the top level", err);
  *out = root;
  return DS_OK;
}

/* ------------------------------------------------------------------------ */
/* Structure                                                                */

int ds_cnode_line(const struct ds_cnode *node) {
  const yaml_node_t *n = cnode(node);
  return n != NULL ? (int)n->start_mark.line + 1 : 0;
}

int ds_cnode_is_map(const struct ds_cnode *node) {
  const yaml_node_t *n = cnode(node);
  return n != NULL && n->type == YAML_MAPPING_NODE;
}

int ds_cnode_is_seq(const struct ds_cnode *node) {
  const yaml_node_t *n = cnode(node);
  return n != NULL && n->type == YAML_SEQUENCE_NODE;
}

int ds_cnode_is_scalar(const struct ds_cnode *node) {
  const yaml_node_t *n = cnode(node);
  return n != NULL && n->type == YAML_SCALAR_NODE;
}

static int in_list(const char *key, const char *const list[]) {
  for (size_t i = 0; list[i] != NULL; i++)
    if (strcmp(key, list[i]) == 0) return 1;
  return 0;
}

ds_status ds_cmap_check_keys(const struct ds_cnode *map,
                             const char *const allowed[], struct ds_err *err) {
  const yaml_node_t *node = cnode(map);
  if (node == NULL || node->type != YAML_MAPPING_NODE)
    return fail_expected(map, "a mapping", err);
  const struct ds_config *cfg = map->cfg;
  const yaml_node_pair_t *pairs = node->data.mapping.pairs.start;
  size_t n = (size_t)(node->data.mapping.pairs.top - pairs);
  for (size_t i = 0; i < n; i++) {
    const yaml_node_t *k = node_at(cfg, pairs[i].key);
    if (k == NULL || k->type != YAML_SCALAR_NODE)
      return fail_named(err, map, k != NULL ? k : node, "expected a plain word as key, got a %s",
                        k != NULL && k->type == YAML_MAPPING_NODE ? "mapping" : "sequence");
    const char *name = scalar_text(k);
    /* a "\0" escape: the C string would be a shorter key, silently */
    if (strlen(name) != k->data.scalar.length)
      return fail_named(err, map, k, "key '%s' contains a NUL byte (byte %zu); expected a "
                        "plain word", name, strlen(name) + 1);
    if (!in_list(name, allowed)) {
      char list[DS_ERR_MSG_MAX];
      size_t o = 0;
      list[0] = '\0';
      for (size_t a = 0; allowed[a] != NULL && o < sizeof list; a++) {
        int w = snprintf(list + o, sizeof list - o, "%s%s", a ? ", " : "",
                         allowed[a]);
        if (w < 0) break;
        o += (size_t)w;
      }
      /* the map's path names the map the key sits in (none at the top
       * level), so a key unknown inside attn_products or a layer says whose
       * it is */
      if (allowed[0] == NULL)
        return fail_named(err, map, k, "unknown key '%s' (no keys allowed)", name);
      return fail_named(err, map, k, "unknown key '%s' (allowed: %s)", name, list);
    }
    for (size_t j = 0; j < i; j++) {
      const yaml_node_t *prev = node_at(cfg, pairs[j].key);
      if (prev != NULL && prev->type == YAML_SCALAR_NODE &&
          strcmp(scalar_text(prev), name) == 0)
        return fail_named(err, map, k, "duplicate key '%s' (first given at line %lu, column %lu)",
                          name, (unsigned long)prev->start_mark.line + 1,
                          (unsigned long)prev->start_mark.column + 1);
    }
  }
  return DS_OK;
}

/* out is looked up in map, which the file leaves out: out's path goes
 * through map's present ancestor and the absent maps' keys, map's own
 * last. A chain longer than DS_CNODE_ABSENT_MAX keeps its outermost keys and
 * writes "(...)" for the rest. */
static void absent_under(const struct ds_cnode *map, struct ds_cnode *out) {
  size_t n = 0;
  out->parent = map->parent;
  while (n < DS_CNODE_ABSENT_MAX && map->absent_maps[n] != NULL) {
    out->absent_maps[n] = map->absent_maps[n];
    n++;
  }
  if (n < DS_CNODE_ABSENT_MAX)
    out->absent_maps[n] = map->key;
  else
    out->absent_maps[DS_CNODE_ABSENT_MAX - 1] = "(...)";
}

int ds_cmap_get(const struct ds_cnode *map, const char *key,
                struct ds_cnode *out) {
  const yaml_node_t *node = cnode(map);
  out->cfg = map != NULL ? map->cfg : NULL;
  out->index = 0;
  out->key = key;
  out->parent = map != NULL ? map->index : 0;
  for (size_t i = 0; i < DS_CNODE_ABSENT_MAX; i++) out->absent_maps[i] = NULL;
  if (map != NULL && map->index == 0 && map->key != NULL && map->key[0] != '\0')
    absent_under(map, out);
  if (node == NULL || node->type != YAML_MAPPING_NODE) return 0;
  const yaml_node_pair_t *p = node->data.mapping.pairs.start;
  for (; p < node->data.mapping.pairs.top; p++) {
    const yaml_node_t *k = node_at(map->cfg, p->key);
    if (k == NULL || k->type != YAML_SCALAR_NODE) continue;
    if (strcmp(scalar_text(k), key) != 0) continue;
    out->index = p->value;
    out->key = scalar_text(k); /* owned by the document, unlike `key` */
    return 1;
  }
  return 0;
}

ds_status ds_cmap_require(const struct ds_cnode *map, const char *key,
                          const char *what, struct ds_cnode *out,
                          struct ds_err *err) {
  if (!ds_cnode_is_map(map)) return fail_expected(map, "a mapping", err);
  if (ds_cmap_get(map, key, out)) return DS_OK;
  return fail_named(err, map, cnode(map), "missing key '%s' (expected %s)", key, what);
}

ds_status ds_cseq_len(const struct ds_cnode *seq, size_t *out_len,
                      struct ds_err *err) {
  const yaml_node_t *node = cnode(seq);
  if (node == NULL || node->type != YAML_SEQUENCE_NODE)
    return fail_expected(seq, "a sequence", err);
  *out_len = (size_t)(node->data.sequence.items.top -
                      node->data.sequence.items.start);
  return DS_OK;
}

ds_status ds_cseq_at(const struct ds_cnode *seq, size_t i,
                     struct ds_cnode *out, struct ds_err *err) {
  size_t len = 0;
  DS_CHECK(ds_cseq_len(seq, &len, err));
  const yaml_node_t *node = cnode(seq);
  if (i >= len) {
    char path[PATH_MAX_BYTES];
    const char *key = node_key(seq, path, sizeof path);
    return ds_err_set(err, DS_EINTERNAL, "%s: key '%s': item %zu asked of a sequence of %zu",
                      seq->cfg->path, key != NULL ? key : "", i, len);
  }
  out->cfg = seq->cfg;
  out->index = node->data.sequence.items.start[i];
  out->key = ""; /* messages name it by its path, SEQ[i] */
  out->parent = seq->index;
  for (size_t j = 0; j < DS_CNODE_ABSENT_MAX; j++) out->absent_maps[j] = NULL;
  return DS_OK;
}

/* ------------------------------------------------------------------------ */
/* Scalars                                                                  */

/* The scalar's text, or the "expected WHAT, got a mapping" error. */
static ds_status scalar_of(const struct ds_cnode *n, const char *what,
                           const char **out, struct ds_err *err) {
  const yaml_node_t *node = cnode(n);
  if (node == NULL || node->type != YAML_SCALAR_NODE)
    return fail_expected(n, what, err);
  /* a "\0" escape: read as a C string, the value would be cut there */
  size_t len = strlen(scalar_text(node));
  if (len != node->data.scalar.length)
    return fail_named(err, n, node, "the value contains a NUL byte (byte %zu); "
                "expected %s", len + 1, what);
  *out = scalar_text(node);
  return DS_OK;
}

ds_status ds_cnode_string(const struct ds_cnode *node, const char **out,
                          struct ds_err *err) {
  const char *what = "a string";
  const char *s = NULL;
  DS_CHECK(scalar_of(node, what, &s, err));
  /* "key:" with nothing is YAML null, not the empty string; '""' is. */
  if (is_empty_plain(cnode(node))) return fail_expected(node, what, err);
  *out = s;
  return DS_OK;
}

ds_status ds_cnode_name(const struct ds_cnode *node, const char *what, const char **out,
                        struct ds_err *err) {
  const char *s;
  DS_CHECK(ds_cnode_string(node, &s, err));
  size_t n = strlen(s);
  if (n == 0 || n >= DS_NAME_CAP)
    return ds_cnode_error(node, err, "expected %s of 1 to %d bytes, got %zu", what,
                          DS_NAME_CAP - 1, n);
  *out = s;
  return DS_OK;
}

/* Plain decimal text to int64: 0 when s is one, 1 when it is not an
 * integer at all, 2 when it is one but does not fit in 64 bits. Plain
 * decimal digits only: strtoll alone would take blanks and hex, and YAML 1.1
 * would read "010" as octal; here it is ten. */
static int parse_int64(const char *s, int64_t *out) {
  size_t i = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (s[i] == '\0') return 1;
  for (; s[i] != '\0'; i++)
    if (s[i] < '0' || s[i] > '9') return 1;
  errno = 0;
  long long v = strtoll(s, NULL, 10);
  /* long long is 64 bits on every target we build for (LP64, LLP64). */
  if (errno == ERANGE) return 2;
  *out = (int64_t)v;
  return 0;
}

ds_status ds_cnode_int64(const struct ds_cnode *node, int64_t *out,
                         struct ds_err *err) {
  const char *what = "an integer";
  const char *s = NULL;
  DS_CHECK(scalar_of(node, what, &s, err));
  switch (parse_int64(s, out)) {
  case 0: return DS_OK;
  case 2: return fail_expected(node, "an integer that fits in 64 bits", err);
  default: return fail_expected(node, what, err);
  }
}

ds_status ds_cnode_int_range(const struct ds_cnode *node, int64_t lo, int64_t hi,
                             int64_t *out, struct ds_err *err) {
  /* The range as the message states it; a side left at the int64 limit is
   * open ("an integer >= 1"), where the number would only be noise. */
  char what[96];
  if (lo == INT64_MIN && hi == INT64_MAX)
    snprintf(what, sizeof what, "an integer");
  else if (hi == INT64_MAX)
    snprintf(what, sizeof what, "an integer >= %lld", (long long)lo);
  else if (lo == INT64_MIN)
    snprintf(what, sizeof what, "an integer <= %lld", (long long)hi);
  else
    snprintf(what, sizeof what, "an integer from %lld to %lld", (long long)lo, (long long)hi);
  const char *s = NULL;
  int64_t v = 0;
  DS_CHECK(scalar_of(node, what, &s, err));
  switch (parse_int64(s, &v)) {
  case 0: break;
  case 2:
    /* Past 64 bits is past any closed range; an open one says why. */
    if (lo == INT64_MIN || hi == INT64_MAX)
      snprintf(what + strlen(what), sizeof what - strlen(what), " that fits in 64 bits");
    return fail_expected(node, what, err);
  default: return fail_expected(node, what, err);
  }
  if (v < lo || v > hi)
    return ds_cnode_error(node, err, "expected %s, got %lld", what, (long long)v);
  *out = v;
  return DS_OK;
}

ds_status ds_cnode_int_list(const struct ds_cnode *node, const char *what, size_t n,
                            int64_t lo, int64_t hi, int64_t *out, struct ds_err *err) {
  struct ds_cnode item;
  size_t len;
  if (!ds_cnode_is_seq(node)) return ds_cnode_error(node, err, "expected %s", what);
  DS_CHECK(ds_cseq_len(node, &len, err));
  if (len != n)
    return ds_cnode_error(node, err, "expected %s, got %zu number%s", what, len,
                          len == 1 ? "" : "s");
  for (size_t i = 0; i < n; i++) {
    DS_CHECK(ds_cseq_at(node, i, &item, err));
    DS_CHECK(ds_cnode_int_range(&item, lo, hi, &out[i], err));
  }
  return DS_OK;
}

/* Shared shape of the unit-bearing conversions. */
static ds_status convert(const struct ds_cnode *node, const char *what,
                         ds_status (*parse)(const char *, double *),
                         double *out, struct ds_err *err) {
  const char *s = NULL;
  DS_CHECK(scalar_of(node, what, &s, err));
  double v;
  if (parse(s, &v) != DS_OK) return fail_expected(node, what, err);
  *out = v;
  return DS_OK;
}

ds_status ds_cnode_number(const struct ds_cnode *node, double *out,
                          struct ds_err *err) {
  return convert(node, "a number", ds_units_parse_number, out, err);
}

ds_status ds_cnode_bytes(const struct ds_cnode *node, double *out_bytes,
                         struct ds_err *err) {
  return convert(node, "a size like \"25MiB\" (at most 1e18 bytes)", ds_units_parse_bytes,
                 out_bytes, err);
}

/* A rate or a time read from a file with its unit: the units parser reads
 * a bare number in the base unit (seconds, bytes per second, FLOP/s), but
 * what a file holds is microseconds, GB/s, TFLOPS: a bare "27" is a unit
 * left out, and read as 27 s or 27 B/s it would silently make every
 * iteration minutes or years long. 0 needs no unit. */
static ds_status convert_with_unit(const struct ds_cnode *node, const char *what,
                                   const char *noun,
                                   ds_status (*parse)(const char *, double *),
                                   const char *usual_unit, const char *base_unit, double *out,
                                   struct ds_err *err) {
  DS_CHECK(convert(node, what, parse, out, err));
  const char *s = NULL;
  DS_CHECK(scalar_of(node, what, &s, err));
  /* which unit the number was meant in, the message cannot know: it names
   * the usual one and the base unit a bare number used to be read in */
  if (ds_units_unit_left_out(s))
    return ds_cnode_error(node, err,
                          "expected %s with its unit, got \"%s\": write the unit you mean, "
                          "e.g. \"%s%s\" or \"%s%s\"",
                          noun, s, s, usual_unit, s, base_unit);
  return DS_OK;
}

ds_status ds_cnode_bw(const struct ds_cnode *node, double *out_bytes_per_s,
                      struct ds_err *err) {
  /* both spellings: a user copying a NIC's "100Gb" rate needs the bit one */
  return convert_with_unit(node,
                           "a bandwidth like \"25GBps\" or \"400Gbps\" (B bytes, b bits; "
                           "per second as ps or /s; 1 Bps to 1e15 Bps)",
                           "a bandwidth", ds_units_parse_bw, "GBps", "Bps", out_bytes_per_s, err);
}

ds_status ds_cnode_time_ns(const struct ds_cnode *node, double *out_ns,
                           struct ds_err *err) {
  return convert_with_unit(node, "a time like \"1.5us\" (at most 1e6 s)", "a time",
                           ds_units_parse_time_ns, "us", "s", out_ns, err);
}

ds_status ds_cnode_flops(const struct ds_cnode *node, double *out_flops_per_s,
                         struct ds_err *err) {
  return convert_with_unit(node, "a compute rate like \"312TFLOPS\" (from 1 to 1e21 FLOPS)",
                           "a compute rate", ds_units_parse_flops, "TFLOPS", "FLOPS", out_flops_per_s,
                           err);
}

ds_status ds_cnode_bool(const struct ds_cnode *node, int *out,
                        struct ds_err *err) {
  const char *what = "true or false";
  const char *s = NULL;
  DS_CHECK(scalar_of(node, what, &s, err));
  if (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0) {
    *out = 1;
  } else if (strcmp(s, "false") == 0 || strcmp(s, "no") == 0) {
    *out = 0;
  } else {
    return fail_expected(node, what, err);
  }
  return DS_OK;
}

/* Whether key is one of like[l]'s and of no other lookalike's. */
static int only_in(const char *key, const struct ds_config_lookalike *like, size_t n_like,
                   size_t l) {
  if (!in_list(key, like[l].keys)) return 0;
  for (size_t m = 0; m < n_like; m++)
    if (m != l && in_list(key, like[m].keys)) return 0;
  return 1;
}

/* The root key of pair when it is one of keys that allowed lacks (a sign
 * of another kind of file), else NULL. */
static const yaml_node_t *foreign_key(const struct ds_config *cfg, const yaml_node_pair_t *pair,
                                      const char *const allowed[], const char *const keys[]) {
  const yaml_node_t *k = node_at(cfg, pair->key);
  if (k == NULL || k->type != YAML_SCALAR_NODE) return NULL;
  const char *name = scalar_text(k);
  return in_list(name, allowed) || !in_list(name, keys) ? NULL : k;
}

/* The lookalike root looks like (ds_config_open_as): of the root keys
 * `allowed` lacks, the one with most keys only it has, else most keys of
 * its own (two at least), the earlier on a tie; said at the first key that
 * told it, with at most four keys listed. DS_OK when none does. */
static ds_status check_lookalikes(const struct ds_cnode *root, const char *const allowed[],
                                  const char *self, const struct ds_config_lookalike *like,
                                  size_t n_like, struct ds_err *err) {
  const yaml_node_t *node = cnode(root);
  if (node == NULL || node->type != YAML_MAPPING_NODE) return DS_OK;
  const struct ds_config *cfg = root->cfg;
  const yaml_node_pair_t *pairs = node->data.mapping.pairs.start;
  size_t n = (size_t)(node->data.mapping.pairs.top - pairs);
  size_t best = n_like, best_only = 0, best_any = 0;
  for (size_t l = 0; l < n_like; l++) {
    size_t only = 0, any = 0;
    for (size_t i = 0; i < n; i++) {
      const yaml_node_t *k = foreign_key(cfg, &pairs[i], allowed, like[l].keys);
      if (k == NULL) continue;
      any++;
      only += (size_t)only_in(scalar_text(k), like, n_like, l);
    }
    /* one key another kind shares ('gpu', 'name') is no sign of that kind */
    if ((only > 0 || any >= 2) && (only > best_only || (only == best_only && any > best_any))) {
      best = l;
      best_only = only;
      best_any = any;
    }
  }
  if (best == n_like) return DS_OK;
  const yaml_node_t *first = NULL;
  char has[256] = "";
  size_t used = 0, listed = 0;
  for (size_t i = 0; i < n; i++) {
    const yaml_node_t *k = foreign_key(cfg, &pairs[i], allowed, like[best].keys);
    if (k == NULL) continue;
    const char *name = scalar_text(k);
    if (best_only > 0 && !only_in(name, like, n_like, best)) continue;
    if (!first) first = k;
    if (listed++ == 4) {
      snprintf(has + used, sizeof has - used, ", ...");
      break;
    }
    int w = snprintf(has + used, sizeof has - used, "%s'%s'", used ? ", " : "", name);
    if (w > 0 && (size_t)w < sizeof has - used) used += (size_t)w;
  }
  return fail(err, cfg, first, "this looks like %s (it has %s), not %s: %s",
              like[best].what, has, self, like[best].advice);
}

ds_status ds_config_open(const char *path, const char *const allowed[],
                         struct ds_config **out, struct ds_cnode *root,
                         struct ds_err *err) {
  return ds_config_open_as(path, allowed, NULL, NULL, 0, out, root, err);
}

ds_status ds_config_open_as(const char *path, const char *const allowed[], const char *self,
                            const struct ds_config_lookalike *like, size_t n_like,
                            struct ds_config **out, struct ds_cnode *root,
                            struct ds_err *err) {
  struct ds_config *cfg = NULL;
  struct ds_cnode node;
  int64_t version;
  ds_status st;
  *out = NULL;
  DS_CHECK_GOTO(ds_config_load(path, &cfg, err), st, fail);
  DS_CHECK_GOTO(ds_config_root(cfg, root, err), st, fail);
  DS_CHECK_GOTO(check_lookalikes(root, allowed, self, like, n_like, err), st, fail);
  DS_CHECK_GOTO(ds_cmap_check_keys(root, allowed, err), st, fail);
  DS_CHECK_GOTO(ds_cmap_require(root, "schema_version", "1", &node, err), st, fail);
  DS_CHECK_GOTO(ds_cnode_int64(&node, &version, err), st, fail);
  if (version != 1) {
    st = ds_cnode_error(&node, err, "expected schema_version 1, got %lld",
                        (long long)version);
    goto fail;
  }
  *out = cfg;
  return DS_OK;
fail:
  ds_config_free(cfg);
  return st;
}
