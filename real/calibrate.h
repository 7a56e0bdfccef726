/*
 * `ddpreal calibrate`: measures this machine and writes a calibration file
 * (traces/calib_file.h) that ddpsim reads with --calib. Built with the cuda device
 * only (DS_HAVE_CUDA); its options, --help and parser are calibrate_args.h,
 * built always.
 *
 * Compute: cuBLAS SGEMMs with the FLOPs of the schedule's fwd/bwd ops, in
 * FP32 and TF32 math, a device copy for memory bandwidth, and a run of
 * empty kernels (the launch floor); fitted (GSL) against the GPU's
 * peaks. Collectives: an all-reduce sweep on N forked ranks, fitted to
 * t = alpha + S * 2(N-1)/N / bus_bw.
 */
#ifndef DS_REAL_CALIBRATE_H
#define DS_REAL_CALIBRATE_H

#ifdef __cplusplus
extern "C" {
#endif

/* argv[0] is "calibrate"; returns the process exit code (0 ok, 2 usage or
 * input, 1 failure); the summary on stdout, messages on stderr. */
int ds_calibrate_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* DS_REAL_CALIBRATE_H */
