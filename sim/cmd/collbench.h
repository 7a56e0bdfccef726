/*
 * `ddpsim collective`: one collective simulated alone over a size sweep,
 * printed as nccl-tests prints its measurements (size, count, type, time,
 * algbw, busbw with nccl-tests' bus factor), so that a prediction and a
 * measured all_reduce_perf table can be read side by side.
 *
 * Every collective kind of sim/coll/coll.h's table but sendrecv (--op, --root);
 * the all-reduce by any algorithm of enum ds_ar_algo (--algo), ring and tree
 * also under NCCL's protocols and channels, NVLS under NCCL's model only,
 * and NCCL's choice of algorithm and protocol per size (--algo auto;
 * sim/coll/nccl_model.h, docs/collectives.md). What cannot run is refused by name.
 */
#ifndef DS_COLLBENCH_H
#define DS_COLLBENCH_H

#include <stdio.h>

#include "base/status.h"
#include "sim/cmd/collbench_args.h" /* its options, the check alone */

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the subcommand with argv[0] == "collective"; prints to out. Usage
 * errors are DS_EUSAGE with the flag named; --help prints the usage. */
ds_status ds_collbench_main(int argc, char **argv, FILE *out,
                            struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_COLLBENCH_H */
