/* libFuzzer target: the gpus reader (a GPU table) (fuzz/readers.c, fuzz/README.md). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz/readers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ds_fuzz_run("gpus", data, size);
  return 0;
}
