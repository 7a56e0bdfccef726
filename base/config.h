/*
 * Typed, located access to YAML configuration files (libyaml).
 *
 * A file is loaded whole into a document; every accessor that fails writes
 * "FILE:LINE:COL: key 'PATH': expected WHAT, got \"TEXT\"" (1-based line and
 * column of the offending node; PATH the value's whole path from the
 * document's root, as intra_node.link_bw or layers[3].params[0].shape; one
 * past 252 bytes is cut at a character and ends in "...") into the
 * caller's ds_err and returns DS_EINPUT. Unknown keys are errors that list
 * the allowed keys. Nothing here aborts or exits.
 *
 * Ownership: a struct ds_config owns its document; node handles
 * (struct ds_cnode) borrow from it and are valid until ds_config_free.
 */
#ifndef DS_CONFIG_H
#define DS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_config;

/* Limits on what a file may be, checked before libyaml builds anything:
 * its size, and how deep mappings and sequences nest (libyaml's time grows
 * with the square of the nesting). Beyond either: DS_EINPUT, located. */
#define DS_CONFIG_BYTES_MAX (16 << 20)
#define DS_CONFIG_DEPTH_MAX 64

/* A node of a loaded document. Messages name a node in the document by
 * its whole path from the root (inter_node.fat_tree.link_bw,
 * layers[3].params[0]), which the config keeps for each node and writes out
 * only when a message is: nothing here holds a pointer to another handle.
 * An absent node (ds_cmap_get found nothing) is named by the path of the
 * map it was looked for in and its key. */
/* How many absent maps in a row a node's path names (ds_cnode.absent_maps). */
#define DS_CNODE_ABSENT_MAX 3

struct ds_cnode {
  const struct ds_config *cfg;
  int index; /* libyaml node index (1-based); 0 means "absent" */
  /* The mapping key it was looked up by (ds_cmap_get); "" for the root and
   * sequence items. Borrowed from the document or from the caller. */
  const char *key;
  /* The node index of the map or sequence it was looked up in; 0 for the
   * root. When that map is itself absent from the file, the nearest map
   * above it that is present. */
  int parent;
  /* The keys of the absent maps between `parent` and this node, outermost
   * first, NULL past the last: a value looked up in a map the file leaves
   * out is still named by its whole path ("inter_node.fat_tree.radix").
   * Deeper chains keep the outermost and write "(...)" for the rest. */
  const char *absent_maps[DS_CNODE_ABSENT_MAX];
};

/* Loads and parses path. A missing file, a YAML syntax error (with its
 * line and column) or an empty document is DS_EINPUT with a message. */
ds_status ds_config_load(const char *path, struct ds_config **out,
                         struct ds_err *err);
/* Parses YAML text held in memory; `name` is used as the file name in
 * messages. */
ds_status ds_config_load_string(const char *name, const char *text,
                                struct ds_config **out, struct ds_err *err);
void ds_config_free(struct ds_config *cfg);

/* The file name given at load time. */
const char *ds_config_path(const struct ds_config *cfg);
/* The root node; DS_EINPUT unless it is a mapping. */
ds_status ds_config_root(const struct ds_config *cfg, struct ds_cnode *out,
                         struct ds_err *err);

/* The opening every ddpsim file shares: loads path, takes the root mapping,
 * rejects keys not in `allowed` and requires `schema_version: 1`. On
 * success *out owns the document and *root is its root; on failure *out is
 * NULL. */
ds_status ds_config_open(const char *path, const char *const allowed[],
                         struct ds_config **out, struct ds_cnode *root,
                         struct ds_err *err);

/* Another kind of ddpsim file that the one being opened may be mistaken
 * for: `keys` is all the root keys that kind allows; those at the root that
 * this kind does not allow tell it, as a model's `layers` tells a model
 * given where a topology goes (one key another kind has too, a stray `gpu`
 * in a model, does not). */
struct ds_config_lookalike {
  const char *const *keys; /* NULL-terminated */
  const char *what;        /* "a model file" */
  const char *advice;      /* "give it to --model; --topo takes a topology" */
};

/* ds_config_open for a file of kind `self` ("a topology"), which first
 * refuses a root that has a key `allowed` lacks and one of the n lookalikes
 * has, before its unknown keys are listed. The lookalike named is the one
 * with most such keys that no other lookalike has, else with most such
 * keys (two or more), the earlier on a tie: DS_EINPUT at the first key that told it,
 * "this looks like WHAT (it has 'KEY', ... at most four), not SELF: ADVICE". */
ds_status ds_config_open_as(const char *path, const char *const allowed[], const char *self,
                            const struct ds_config_lookalike *like, size_t n_like,
                            struct ds_config **out, struct ds_cnode *root,
                            struct ds_err *err);

/* 1-based line of a node (0 when absent). */
int ds_cnode_line(const struct ds_cnode *node);
int ds_cnode_is_map(const struct ds_cnode *node);
int ds_cnode_is_seq(const struct ds_cnode *node);
int ds_cnode_is_scalar(const struct ds_cnode *node);

/* Fails with a message naming the first key of map that is not in the
 * NULL-terminated list `allowed` (and listing the allowed keys), or a key
 * that appears twice. map must be a mapping (else DS_EINPUT). */
ds_status ds_cmap_check_keys(const struct ds_cnode *map,
                             const char *const allowed[], struct ds_err *err);

/* Looks key up in map. Returns 1 and fills *out when present, 0 when absent
 * (then out->index == 0). */
int ds_cmap_get(const struct ds_cnode *map, const char *key,
                struct ds_cnode *out);

/* Like ds_cmap_get but a missing key is DS_EINPUT "missing key 'KEY'
 * (expected WHAT)" located at the map, and naming it below the root
 * ("key 'intra_node': missing key 'link_bw' ..."). */
ds_status ds_cmap_require(const struct ds_cnode *map, const char *key,
                          const char *what, struct ds_cnode *out,
                          struct ds_err *err);

/* Sequences. ds_cseq_len fails unless node is a sequence. */
ds_status ds_cseq_len(const struct ds_cnode *seq, size_t *out_len,
                      struct ds_err *err);
/* Item i of a sequence; messages name it PATH[i] (layers[3].params[0]). */
ds_status ds_cseq_at(const struct ds_cnode *seq, size_t i,
                     struct ds_cnode *out, struct ds_err *err);

/* Scalar conversions; each fails unless node is a scalar of that form. The
 * returned string is borrowed from the config. */
ds_status ds_cnode_string(const struct ds_cnode *node, const char **out,
                          struct ds_err *err);

/* The most bytes a name (model, topology, GPU) may have, its terminator
 * included: the outputs copy names into fixed buffers of this size (a
 * sweep row, sim/cli/sweep.h, travels between processes as plain data),
 * so a longer name is refused where it is read, never cut there (a cut
 * could split a UTF-8 character and make the JSON invalid). */
#define DS_NAME_CAP 128

/* A name: a string of 1 to DS_NAME_CAP - 1 bytes; anything else fails with
 * "expected WHAT of 1 to 127 bytes, got N". *out is borrowed from the
 * config. */
ds_status ds_cnode_name(const struct ds_cnode *node, const char *what, const char **out,
                        struct ds_err *err);
ds_status ds_cnode_int64(const struct ds_cnode *node, int64_t *out,
                         struct ds_err *err);
/* An integer from lo to hi, both included (lo <= hi). Anything else fails
 * with "expected an integer from LO to HI, got V", or got "TEXT" for text
 * that is not a plain decimal integer ("1.5", "1e3", "x") or does not fit
 * in 64 bits. A bound at INT64_MIN or INT64_MAX leaves that side open and
 * the message says "an integer >= LO" (or "<= HI"). *out is written only
 * on success. */
ds_status ds_cnode_int_range(const struct ds_cnode *node, int64_t lo, int64_t hi,
                             int64_t *out, struct ds_err *err);
/* A sequence of exactly n integers, each from lo to hi, into out[0..n):
 * "expected WHAT" when node is not a sequence, "expected WHAT, got K
 * numbers" for another length, and ds_cnode_int_range's message (at the
 * item) for an item. */
ds_status ds_cnode_int_list(const struct ds_cnode *node, const char *what, size_t n,
                            int64_t lo, int64_t hi, int64_t *out, struct ds_err *err);
ds_status ds_cnode_number(const struct ds_cnode *node, double *out,
                          struct ds_err *err);
ds_status ds_cnode_bytes(const struct ds_cnode *node, double *out_bytes,
                         struct ds_err *err);
/* A bandwidth, time or compute rate (base/units.h's grammars) must carry
 * its unit in a file: a bare number other than 0 is refused ("expected a
 * time with its unit, got \"27\": write the unit you mean, e.g. \"27us\" or
 * \"27s\""), where base/units.h would read it in the base unit (27 s). A
 * size keeps its bare bytes. */
ds_status ds_cnode_bw(const struct ds_cnode *node, double *out_bytes_per_s,
                      struct ds_err *err);
ds_status ds_cnode_time_ns(const struct ds_cnode *node, double *out_ns,
                           struct ds_err *err);
ds_status ds_cnode_flops(const struct ds_cnode *node, double *out_flops_per_s,
                         struct ds_err *err);
ds_status ds_cnode_bool(const struct ds_cnode *node, int *out,
                        struct ds_err *err);

/* Formats "FILE:LINE:COL: key 'PATH': " + message into err and returns
 * DS_EINPUT; for checks the caller makes itself (cross-field rules,
 * ranges of numbers other than integers: those have ds_cnode_int_range). */
ds_status ds_cnode_error(const struct ds_cnode *node, struct ds_err *err,
                         const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif /* DS_CONFIG_H */
