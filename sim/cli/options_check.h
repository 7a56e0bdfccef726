/*
 * ddpsim's options after the walk (options.c): the checks of their
 * combinations and the values some options decide from others. Internal
 * to sim/cli's option parser.
 */
#ifndef DS_OPTIONS_CHECK_H
#define DS_OPTIONS_CHECK_H

#include "base/status.h"
#include "sim/cli/options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ds_options_parse's second half, on o as the walk left it (proto_set:
 * --proto was given; defaults: each sweep variable's default, indexed by
 * enum ds_sweep_var). Resolves --proto from --algo when not given, --iters
 * under --static-graph and --plot's timeline; DS_EUSAGE (err names the
 * options and what to do) for combinations that are not built or options
 * no strategy of the run would use. */
ds_status ds__options_finish(struct ds_options *o, int proto_set, const double *defaults,
                             struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_OPTIONS_CHECK_H */
