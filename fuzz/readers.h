/*
 * The readers the fuzz targets drive (fuzz/README.md), one entry point for
 * the libFuzzer harnesses and for tests/test_fuzz_regress.c, which runs
 * every saved crashing input through the same code.
 */
#ifndef DS_FUZZ_READERS_H
#define DS_FUZZ_READERS_H

#include <stddef.h>
#include <stdint.h>

/* The reader names, NULL-terminated: "topo", "model", "calib",
 * "schedule", "trace", "reference", "cli", "units", "import", "measured",
 * "subcmd", "gpus", "analyze", "ddpreal". */
extern const char *const ds_fuzz_readers[];

/* Runs data through reader `name` (1 when the name is unknown, else 0).
 * A refusal is not a failure: what is fuzzed is that no input crashes,
 * leaks, hangs or trips a sanitizer. Input files go to a per-process file
 * under $TMPDIR (or /tmp), removed before returning. */
int ds_fuzz_run(const char *name, const uint8_t *data, size_t size);

#endif
