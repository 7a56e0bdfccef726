/* libFuzzer target: the ddpreal reader (fuzz/readers.c, fuzz/README.md). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz/readers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ds_fuzz_run("ddpreal", data, size);
  return 0;
}
