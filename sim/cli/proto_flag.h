/*
 * The --proto flag of `ddpsim` and `ddpsim collective`, parsed in one
 * place: none (the plain algorithm), auto (NCCL's choice per call), one
 * protocol (that protocol for every call), or a set of allowed protocols
 * as NCCL_PROTO writes it ("LL,Simple", or "^LL128" for all but LL128):
 * NCCL's choice per call among the allowed ones (src/graph/tuning.cc
 * parseList and ncclTopoTuneModel).
 */
#ifndef DS_PROTO_FLAG_H
#define DS_PROTO_FLAG_H

#include <stddef.h>

#include "base/status.h"
#include "sim/coll/coll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --proto: the plain ring, one NCCL protocol, or NCCL's choice per call
 * (among all protocols, or among a set's). */
enum ds_proto_choice { DS_PROTO_CHOICE_NONE, DS_PROTO_CHOICE_FIXED, DS_PROTO_CHOICE_AUTO };

struct ds_proto_flag {
  enum ds_proto_choice choice;
  enum ds_proto fixed;   /* with DS_PROTO_CHOICE_FIXED */
  unsigned disabled;     /* with DS_PROTO_CHOICE_AUTO: bit 1u << p for each
                            protocol the set leaves out (0: auto, all) */
  int named;             /* protocols were named (a fixed one or a set, as
                            NCCL_PROTO set), not none or auto: NCCL then
                            enables what the set holds, LL128 included where
                            its default leaves it off (tuning.cc) */
};

/* Parses v (flag names the option in messages, "--proto"): "none", "auto",
 * one protocol name, or NCCL_PROTO's list: names separated by commas (any
 * case, as NCCL's strcasecmp), with a leading '^' meaning every protocol
 * but those. A list that names every protocol chooses as auto does among
 * all of them, but is `named` (NCCL_PROTO set: LL128 enabled even where
 * NCCL's default turns it off); a one-name list without '^' is that
 * protocol fixed. DS_EUSAGE (err names the flag and
 * what was expected) for an unknown name, an empty element, or a set that
 * leaves no protocol. */
ds_status ds_proto_flag_parse(const char *flag, const char *v, struct ds_proto_flag *out,
                              struct ds_err *err);

/* Whether the flag lets protocol p run: never under none, the one protocol
 * under a fixed choice, and under auto each protocol its set leaves in.
 * The one statement of that rule for both commands (NVLS needs Simple
 * admitted: NCCL runs it with Simple only). */
int ds_proto_flag_admits(const struct ds_proto_flag *flag, enum ds_proto p);

/* What a DS_PROTO_CHOICE_FIXED or DS_PROTO_CHOICE_AUTO flag runs, for
 * messages and the coll_algo column: the fixed protocol's name, or the
 * set's as ds_proto_flag_set_name writes it with sep. */
void ds_proto_flag_name(const struct ds_proto_flag *flag, char sep, char *buf, size_t cap);

/* Called where NCCL's model could not be built (why: its reason). A fixed
 * protocol or a set asks for NCCL's protocols, which run only under the
 * model: DS_EUSAGE, err "option FLAG NAME: why" (NAME as ds_proto_flag_name
 * writes it with ','). DS_OK for none and plain auto: the caller runs the
 * plain algorithm instead. */
ds_status ds_proto_flag_require_model(const char *flag, const struct ds_proto_flag *pf,
                                      const char *why, struct ds_err *err);

/* The refusal of --ring-chunks > 1 where the aggregate ring runs, which
 * moves one chunk per step, worded once for ddpsim and ddpsim collective:
 * `ranks` > 0 when --coll-model auto chose it for that many ranks, 0 when
 * --coll-model aggregate was given. */
ds_status ds_ring_chunks_aggregate_refuse(int32_t ranks, struct ds_err *err);

/* The usage error (DS_EUSAGE) of --ring-chunks > 1 on collectives it does
 * not cut (use from sim/coll's ds_coll_ring_chunks_use, not
 * DS_RING_CHUNKS_CUT), in both commands' one wording. what names them:
 * "this allreduce" (NCCL) or "allreduce direct" (no ring step) in
 * `ddpsim collective`, "ddp's collectives" in ddpsim; proto the NCCL
 * protocol choice that runs them (DS_RING_CHUNKS_NCCL only). */
ds_status ds_ring_chunks_refuse(enum ds_ring_chunks_use use, const char *what,
                                const struct ds_proto_flag *proto, struct ds_err *err);

/* The usage error (DS_EUSAGE) of --nccl-extra given where the plain
 * algorithm runs (--proto none): the extras add to NCCL's model. what:
 * the collective and its algorithm ("allreduce ring"); has_protocols:
 * whether NCCL runs it under a protocol (then --proto auto is the way). */
ds_status ds_nccl_extra_refuse(const char *what, int has_protocols, struct ds_err *err);

/* The allowed protocols of a DS_PROTO_CHOICE_AUTO set, in NCCL's order,
 * separated by sep ("LL,Simple" with ','; "auto" when none is disabled). */
void ds_proto_flag_set_name(unsigned disabled, char sep, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
