/*
 * `ddpreal collective`: an nccl-tests-style sweep of one NCCL collective
 * over message sizes, on ranks forked on this node (launch_fork.c), timed
 * with CUDA events and checked (#wrong). Built with the cuda device only
 * (DS_HAVE_CUDA).
 *
 *   ddpreal collective [--op allreduce|broadcast|reduce|allgather|reducescatter]
 *                      [-b 8] [-e 1G] [-f 2] [-g NRANKS] [--share-gpus]
 *                      [--iters 20] [--warmup 5] [--format text|csv|json]
 */
#ifndef DS_REAL_COLLECTIVE_H
#define DS_REAL_COLLECTIVE_H

#ifdef __cplusplus
extern "C" {
#endif

/* argv[0] is "collective"; returns the process exit code (0 ok, 2 usage,
 * 1 failure), messages on stderr, the table on stdout. */
int ds_collective_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* DS_REAL_COLLECTIVE_H */
