/*
 * --proto's parser (proto_flag.h). A set of protocols is NCCL_PROTO's
 * syntax (src/graph/tuning.cc parseList: comma-separated names compared
 * with strcasecmp, a leading '^' inverts the list); NCCL then zeroes the
 * bandwidth of each disabled protocol (ncclTopoTuneModel), so its per-call
 * choice (enqueue.cc topoGetAlgoInfo) never picks one. ddpsim keeps that
 * as the model's disabled mask (nccl_model.h proto_disabled). NCCL's
 * per-function prefixes ("allreduce:^LL") are not taken: ddpsim's
 * --proto applies to every collective of the run.
 */
#include "sim/cli/proto_flag.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define ALL_PROTOS ((1u << DS_PROTO_COUNT) - 1)
#define EXPECTED "none, auto, LL, LL128, Simple, or a set as NCCL_PROTO writes it " \
                 "(\"LL,Simple\", \"^LL128\")"

ds_status ds_proto_flag_parse(const char *flag, const char *v, struct ds_proto_flag *out,
                              struct ds_err *err) {
  struct ds_proto_flag r = {.choice = DS_PROTO_CHOICE_AUTO, .fixed = DS_PROTO_COUNT};
  if (strcmp(v, "none") == 0) {
    r.choice = DS_PROTO_CHOICE_NONE;
    *out = r;
    return DS_OK;
  }
  if (strcmp(v, "auto") == 0) {
    *out = r;
    return DS_OK;
  }
  int exclude = v[0] == '^';
  const char *s = v + exclude;
  unsigned named = 0;
  int n_names = 0;
  for (;;) {
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    char name[16];
    enum ds_proto p;
    if (len == 0 || len >= sizeof name)
      return ds_err_set(err, DS_EUSAGE, "option %s '%s': %s; expected %s", flag, v,
                        len == 0 ? "an empty protocol name" : "an unknown protocol", EXPECTED);
    memcpy(name, s, len);
    name[len] = '\0';
    if (ds_proto_parse(name, &p) != DS_OK)
      return ds_err_set(err, DS_EUSAGE, "option %s '%s': unknown protocol '%s'; expected %s",
                        flag, v, name, EXPECTED);
    named |= 1u << p;
    n_names++;
    r.fixed = p;
    if (!comma) break;
    s = comma + 1;
  }
  unsigned allowed = exclude ? ALL_PROTOS & ~named : named;
  if (allowed == 0)
    return ds_err_set(err, DS_EUSAGE, "option %s '%s': the set leaves no protocol; expected %s",
                      flag, v, EXPECTED);
  r.named = 1;
  if (!exclude && n_names == 1) {
    r.choice = DS_PROTO_CHOICE_FIXED; /* one name: that protocol for every call */
  } else {
    r.disabled = ALL_PROTOS & ~allowed;
    r.fixed = DS_PROTO_COUNT;
  }
  *out = r;
  return DS_OK;
}

/* The protocols disabled leaves in, joined by sep, into buf (cut at cap). */
static void allowed_names(unsigned disabled, char sep, char *buf, size_t cap) {
  size_t off = 0;
  for (int p = 0; p < DS_PROTO_COUNT; p++) {
    if (disabled & (1u << p)) continue;
    int w = off ? snprintf(buf + off, cap - off, "%c%s", sep, ds_proto_name((enum ds_proto)p))
                : snprintf(buf + off, cap - off, "%s", ds_proto_name((enum ds_proto)p));
    if (w < 0 || (size_t)w >= cap - off) return;
    off += (size_t)w;
  }
}

void ds_proto_flag_set_name(unsigned disabled, char sep, char *buf, size_t cap) {
  if (cap == 0) return;
  buf[0] = '\0';
  if ((disabled & ALL_PROTOS) == 0) snprintf(buf, cap, "auto");
  else allowed_names(disabled, sep, buf, cap);
}

int ds_proto_flag_admits(const struct ds_proto_flag *flag, enum ds_proto p) {
  assert((unsigned)p < DS_PROTO_COUNT);
  switch (flag->choice) {
  case DS_PROTO_CHOICE_NONE: return 0;
  case DS_PROTO_CHOICE_FIXED: return flag->fixed == p;
  case DS_PROTO_CHOICE_AUTO: return (flag->disabled & (1u << p)) == 0;
  }
  return 0;
}

void ds_proto_flag_name(const struct ds_proto_flag *flag, char sep, char *buf, size_t cap) {
  if (flag->choice == DS_PROTO_CHOICE_FIXED) {
    snprintf(buf, cap, "%s", ds_proto_name(flag->fixed));
  } else if (flag->named && (flag->disabled & ALL_PROTOS) == 0 && cap > 0) {
    /* a set naming every protocol: its names, not "auto", since it is not
     * auto's default everywhere (LL128 where NCCL turns it off) */
    buf[0] = '\0';
    allowed_names(0, sep, buf, cap);
  } else {
    ds_proto_flag_set_name(flag->disabled, sep, buf, cap);
  }
}

ds_status ds_proto_flag_require_model(const char *flag, const struct ds_proto_flag *pf,
                                      const char *why, struct ds_err *err) {
  if (pf->choice != DS_PROTO_CHOICE_FIXED && pf->disabled == 0) return DS_OK;
  char name[24];
  ds_proto_flag_name(pf, ',', name, sizeof name);
  return ds_err_set(err, DS_EUSAGE, "option %s %s: %s", flag, name, why);
}

ds_status ds_ring_chunks_refuse(enum ds_ring_chunks_use use, const char *what,
                                const struct ds_proto_flag *proto, struct ds_err *err) {
  if (use == DS_RING_CHUNKS_NCCL) {
    char name[24];
    ds_proto_flag_name(proto, ',', name, sizeof name);
    return ds_err_set(err, DS_EUSAGE,
                      "option --ring-chunks: NCCL's model runs %s (protocol %s), and NCCL "
                      "pipelines by its own chunks and slices, which the model derives; "
                      "--ring-chunks pipelines the plain algorithms only (give --algo ring "
                      "--proto none, or drop --ring-chunks)", what, name);
  }
  return ds_err_set(err, DS_EUSAGE,
                    "option --ring-chunks: %s has no ring step to cut into pieces "
                    "(--ring-chunks pipelines the plain ring, its all-gather and "
                    "reduce-scatter, hierarchical's rings, the broadcast and reduce chains "
                    "and the plain tree; give one of those, or drop --ring-chunks)", what);
}

ds_status ds_nccl_extra_refuse(const char *what, int has_protocols, struct ds_err *err) {
  if (has_protocols)
    return ds_err_set(err, DS_EUSAGE,
                      "option --nccl-extra measured: it adds the mechanisms NCCL's model "
                      "leaves out to that model, but --proto none runs %s as the plain "
                      "algorithm, without it: drop --nccl-extra (none is what the plain "
                      "algorithm has), or give a protocol (--proto auto)", what);
  return ds_err_set(err, DS_EUSAGE,
                    "option --nccl-extra measured: it adds the mechanisms NCCL's model leaves "
                    "out to that model, which does not run %s (NCCL has no protocol for it): "
                    "drop --nccl-extra (none is what %s has)", what, what);
}

ds_status ds_ring_chunks_aggregate_refuse(int32_t ranks, struct ds_err *err) {
  if (ranks > 0)
    return ds_err_set(err, DS_EUSAGE,
                      "option --ring-chunks: the aggregate ring moves one chunk per step, "
                      "and with %d ranks --coll-model auto aggregates: add --coll-model "
                      "flow (the per-flow ring, which the chunks pipeline)", (int)ranks);
  return ds_err_set(err, DS_EUSAGE,
                    "option --ring-chunks: the aggregate ring moves one chunk per step, so "
                    "--ring-chunks > 1 needs --coll-model flow (the per-flow ring)");
}
