# ddpsim — one non-recursive Makefile.
#
#   make            build bin/ddpsim (and bin/ddpreal's CUDA device when found)
#   make test       install missing Debian packages, build with sanitizers, run every test
#   make run        the design card's example: bin/ddpsim --topo 4gpu.yaml --bucket-mb 25
#   make bench      benchmarks (not tests); results go to bench/README.md by hand
#   make validate   predictions against published measurements (python3; docs/validation.md)
#   make conformance  ddpsim against real PyTorch (needs torch in a venv; tools/README.md)
#   make test-export  the exporter's tests that need torch (TORCH_PYTHON; tools/README.md)
#   make docs-check re-run every command whose output a doc pastes, fail on a difference,
#                   on a backticked repository path in a doc that names nothing or on
#                   a backticked ds_/DS_ name that no source file has
#                   (scripts/docs_check.py; --update rewrites the pasted blocks)
#   make fuzz       libFuzzer targets for every reader, FUZZ_SECONDS each (fuzz/README.md)
#   make info       what was detected
#
# Knobs: DEBUG=1 (-O0 -g), ASAN=1 (address+undefined sanitizers), WERROR=0,
# V=1 (show full command lines).

DEBUG  ?= 0
ASAN   ?= 0
WERROR ?= 1
V      ?= 0
CUDA_HOME ?= /usr/local/cuda

CC ?= cc
ifeq ($(origin CC),default)
CC := cc
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

BUILD := build/$(if $(filter 1,$(ASAN)),asan,$(if $(filter 1,$(DEBUG)),debug,release))

WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wformat=2 -Wundef -Wcast-align -Wvla
ifeq ($(WERROR),1)
WARN += -Werror
endif
OPT := $(if $(filter 1,$(DEBUG) $(ASAN)),-O1 -g,-O2 -g)
SANITIZERS := -fsanitize=address -fsanitize=undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=all
SAN := $(if $(filter 1,$(ASAN)),$(SANITIZERS))

# FUZZ=1: the libFuzzer build (`make fuzz`, fuzz/README.md): clang, address
# and undefined sanitizers, coverage for libFuzzer, under build/fuzz.
FUZZ ?= 0
ifeq ($(FUZZ),1)
CC    := clang
BUILD := build/fuzz
SAN   := $(SANITIZERS) -fsanitize=fuzzer-no-link
WARN  += -Wno-error
endif

# libxml2 (Debian libxml2-dev) reads NCCL's topology XML (sim/net/import_nccl_xml.c).
XML_CFLAGS := $(or $(shell pkg-config --cflags libxml-2.0 2>/dev/null),-I/usr/include/libxml2)
CPPFLAGS += -D_POSIX_C_SOURCE=200809L -I. $(XML_CFLAGS)
$(BUILD)/base/lookup.o: CPPFLAGS += -DDS_SOURCE_DIR=\"$(CURDIR)\"
CFLAGS   += -std=c11 $(OPT) $(WARN) $(SAN) -MMD -MP
LDFLAGS  += $(SAN)
LDLIBS   += -lyaml -lxml2 -lcsv -lgsl -lgslcblas -lm

# Folders by layer (docs/architecture.md): base/ <- traces/ <- sim/net <-
# sim/coll <- sim/train <- analysis/ <- sim/cli <- sim/cmd (the ddpsim command). Link
# order is the reverse: libddpsim (sim/cli calls analysis/) before libddpanalysis.
BASE_SRC  := $(sort $(wildcard base/*.c))
TRACE_SRC := $(sort $(wildcard traces/*.c))
SIM_SRC   := $(sort $(filter-out sim/cmd/main.c,$(wildcard sim/*/*.c)))
ANALYSIS_SRC := $(sort $(wildcard analysis/*.c))
TEST_SRC  := $(sort $(wildcard tests/test_*.c))
BENCH_SRC := $(sort $(wildcard bench/bench_*.c))

BASE_OBJ  := $(BASE_SRC:%.c=$(BUILD)/%.o)
TRACE_OBJ := $(TRACE_SRC:%.c=$(BUILD)/%.o)
SIM_OBJ   := $(SIM_SRC:%.c=$(BUILD)/%.o)
ANALYSIS_OBJ := $(ANALYSIS_SRC:%.c=$(BUILD)/%.o)
LIBBASE   := $(BUILD)/libddpbase.a
LIBTRACE  := $(BUILD)/libddptrace.a
LIBSIM    := $(BUILD)/libddpsim.a
LIBANALYSIS := $(BUILD)/libddpanalysis.a
DDPSIM    := $(BUILD)/ddpsim
TESTS     := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCHES   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# tests/support.c: what the end-to-end tests share; tests/coll_harness.c:
# the collective tests' harness; tests/options_help.c: each parser's option
# table against its --help; tests/json_check.c: a strict JSON parse and
# lookups by path. All linked into every test.
TEST_SUPPORT_OBJ := $(BUILD)/tests/support.o $(BUILD)/tests/coll_harness.o \
                    $(BUILD)/tests/options_help.o $(BUILD)/tests/json_check.o

comma := ,
HAVE_NVCC := $(shell test -x $(CUDA_HOME)/bin/nvcc && echo 1)
HAVE_NCCL := $(shell test -f $(CUDA_HOME)/include/nccl.h && echo 1)
HAVE_CUDA := $(and $(HAVE_NVCC),$(HAVE_NCCL))
NVCC      := $(CUDA_HOME)/bin/nvcc

# ddpreal: the replay executor (real/). The cpu device needs Open MPI; the
# cuda device is built only where nvcc and nccl.h are found (DS_HAVE_CUDA);
# it loads cuBLAS itself (dlopen, gemm mode only), so -lcublas is not linked.
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)
REAL_SRC   := $(sort $(filter-out real/main.c,$(wildcard real/*.c)))
REAL_CU    := $(if $(HAVE_CUDA),$(sort $(wildcard real/*.cu)))
REAL_OBJ   := $(REAL_SRC:%.c=$(BUILD)/%.o) $(REAL_CU:%.cu=$(BUILD)/%.cu.o)
LIBREAL    := $(BUILD)/libddpreal.a
DDPREAL    := $(BUILD)/ddpreal
REAL_CPPFLAGS := $(MPI_CFLAGS) $(if $(HAVE_CUDA),-DDS_HAVE_CUDA -I$(CUDA_HOME)/include)
REAL_LIBS  := $(MPI_LIBS) -lpthread \
              $(if $(HAVE_CUDA),-L$(CUDA_HOME)/lib64 -Wl$(comma)-rpath$(comma)$(CUDA_HOME)/lib64 \
                -lnccl -lcudart -lstdc++ -ldl -lrt)
NVCCFLAGS  := -O2 -g -std=c++17 -arch=sm_90 -I. --compiler-options \
              -Wall,-Wextra,-Wno-unused-parameter$(if $(filter 1,$(WERROR)),$(comma)-Werror)

.PHONY: all test run bench validate docs-check docs-update info clean deps check-build gpu-check conformance test-export fuzz fuzz-build
all: bin/ddpsim $(if $(wildcard real/main.c),bin/ddpreal)

bin/ddpsim: $(DDPSIM)
	@mkdir -p bin
	$(Q)cp $< $@

bin/ddpreal: $(DDPREAL)
	@mkdir -p bin
	$(Q)cp $< $@

$(BUILD)/real/%.o: CPPFLAGS += $(REAL_CPPFLAGS)
$(BUILD)/tests/test_real%.o: CPPFLAGS += $(REAL_CPPFLAGS)

# Objects depend on a stamp of the flags they were built with, so a change
# of knobs or of what was detected (CUDA found or not) rebuilds them.
FLAGS_STAMP := $(BUILD)/flags.stamp
FLAGS_NOW   := $(CC) $(CPPFLAGS) $(CFLAGS) $(REAL_CPPFLAGS) $(NVCCFLAGS) cuda=$(HAVE_CUDA)
$(shell mkdir -p $(BUILD) && (echo '$(FLAGS_NOW)' | cmp -s - $(FLAGS_STAMP) || \
  echo '$(FLAGS_NOW)' > $(FLAGS_STAMP)))

$(BUILD)/%.cu.o: %.cu $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

$(LIBREAL): $(REAL_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(DDPREAL): $(BUILD)/real/main.o $(LIBREAL) $(LIBTRACE) $(LIBBASE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(REAL_LIBS) $(LDLIBS) -o $@

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIBBASE): $(BASE_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBTRACE): $(TRACE_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBSIM): $(SIM_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBANALYSIS): $(ANALYSIS_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(DDPSIM): $(BUILD)/sim/cmd/main.o $(LIBSIM) $(LIBANALYSIS) $(LIBTRACE) $(LIBBASE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_SUPPORT_OBJ) $(LIBSIM) $(LIBANALYSIS) $(LIBTRACE) $(LIBBASE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $^ -lcriterion $(LDLIBS) -o $@

# The fuzz targets' readers (fuzz/readers.c), shared with the test that
# replays the saved crashing inputs (tests/test_fuzz_regress.c). They link
# ddpreal's option parsers, schedule checks and trace placement alone
# (real/options.c, real/collective_args.c, real/calibrate_args.c,
# real/replay_check.c, real/replay_place.c, real/schedule_check.c,
# real/spin_check.c: no MPI,
# no CUDA, built with or without nvcc).
FUZZ_READERS_OBJ := $(BUILD)/fuzz/readers.o $(BUILD)/real/options.o \
                    $(BUILD)/real/collective_args.o $(BUILD)/real/calibrate_args.o \
                    $(BUILD)/real/replay_check.o $(BUILD)/real/replay_place.o \
                    $(BUILD)/real/schedule_check.o $(BUILD)/real/spin_check.o
$(BUILD)/fuzz/readers.o: CPPFLAGS += -DDS_SOURCE_DIR=\"$(CURDIR)\"
$(BUILD)/tests/test_fuzz_regress: $(BUILD)/tests/test_fuzz_regress.o $(FUZZ_READERS_OBJ) $(TEST_SUPPORT_OBJ) $(LIBANALYSIS) $(LIBSIM) $(LIBTRACE) $(LIBBASE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $^ -lcriterion $(LDLIBS) -o $@

FUZZ_READERS := topo model calib schedule trace reference cli units import measured subcmd gpus analyze ddpreal
FUZZ_SECONDS ?= 60
$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/fuzz_%.o $(FUZZ_READERS_OBJ) $(LIBANALYSIS) $(LIBSIM) $(LIBTRACE) $(LIBBASE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -fsanitize=fuzzer $^ $(LDLIBS) -o $@

fuzz-build: $(FUZZ_READERS:%=$(BUILD)/fuzz/fuzz_%)

# Not part of `make test`: builds one libFuzzer target per reader with
# clang (scripts/deps.sh fuzz installs it), seeds each from the shipped
# files and runs each for FUZZ_SECONDS (default 60); crashing inputs land in
# tests/data/fuzz/READER/, which tests/test_fuzz_regress.c replays.
fuzz:
	$(Q)scripts/deps.sh fuzz
	$(Q)$(MAKE) --no-print-directory FUZZ=1 fuzz-build
	$(Q)$(MAKE) --no-print-directory bin/ddpsim
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh build/fuzz/fuzz $(FUZZ_READERS)

# Tests of real/ (tests/test_real*.c) link the replay library too.
$(BUILD)/tests/test_real%: $(BUILD)/tests/test_real%.o $(TEST_SUPPORT_OBJ) $(LIBREAL) $(LIBSIM) $(LIBANALYSIS) $(LIBTRACE) $(LIBBASE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $^ -lcriterion $(REAL_LIBS) $(LDLIBS) -o $@

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIBSIM) $(LIBANALYSIS) $(LIBTRACE) $(LIBBASE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The test suite: sanitizer build of the library, the tests and the command
# (tests/test_cli*.c and the other end-to-end tests run $(DDPSIM) of the same
# build).
test: deps
	$(Q)scripts/check_layers.sh
	$(Q)$(MAKE) --no-print-directory docs-check
	$(Q)$(MAKE) --no-print-directory ASAN=1 check-build
	$(Q)DDPSIM_BIN=build/asan/ddpsim DDPREAL_BIN=build/asan/ddpreal \
	  scripts/run_tests.sh build/asan/tests

check-build: $(DDPSIM) $(if $(wildcard real/main.c),$(DDPREAL)) $(TESTS)

deps:
	$(Q)scripts/deps.sh

run: bin/ddpsim
	bin/ddpsim --topo 4gpu.yaml --bucket-mb 25

bench: $(BENCHES) $(DDPSIM)
	$(Q)DDPSIM_BIN=$(DDPSIM) bench/run.sh $(BUILD)/bench

# A benchmark, not a test: prints errors, asserts nothing (python3, stdlib only).
validate: bin/ddpsim
	$(Q)DDPSIM_BIN=bin/ddpsim python3 validation/run.py

# Conformance with real PyTorch (needs torch in a virtual environment,
# $TORCH_VENV, default /root/venv-torch; not part of make test): re-runs the
# exporter and the DDP capture and shows any difference with the committed
# models and tests/data/conformance/ (tools/README.md).
conformance: bin/ddpsim
	$(Q)tools/conformance.sh

# The model exporter's tests that need PyTorch (not part of make test, which
# needs no torch): tests/test_export_autocast.py, its rerun under CUDA's
# autocast lists (tools/model_export/autocast.py) on a tiny model. TORCH_PYTHON:
# a Python that imports torch (make test-export TORCH_PYTHON=/root/venv-torch/bin/python).
TORCH_PYTHON ?= python3
test-export:
	$(Q)if ! command -v $(TORCH_PYTHON) >/dev/null 2>&1; then \
	  echo "make test-export: TORCH_PYTHON=$(TORCH_PYTHON): no such program." >&2; \
	  echo "  Give a Python that imports torch, or make one (CPU is enough):" \
	    "python3 -m venv /root/venv-torch && /root/venv-torch/bin/pip install torch (tools/README.md)" >&2; \
	  exit 2; \
	fi
	$(Q)if ! $(TORCH_PYTHON) -c 'import torch' >/dev/null 2>&1; then \
	  echo "make test-export: needs PyTorch, and TORCH_PYTHON=$(TORCH_PYTHON) cannot import torch." >&2; \
	  echo "  Give a Python that has it: make test-export TORCH_PYTHON=/root/venv-torch/bin/python" >&2; \
	  echo "  or install it (CPU is enough): python3 -m venv /root/venv-torch &&" \
	    "/root/venv-torch/bin/pip install torch (tools/README.md)" >&2; \
	  exit 2; \
	fi
	$(Q)$(TORCH_PYTHON) tests/test_export_autocast.py

# Docs that paste a command's output mark it (<!-- docs-check: CMD -->);
# docs-check re-runs each on bin/ddpsim (and bin/ddpreal, whose refusals
# real/README.md pastes) and fails on a difference, on a backticked
# repository path that names no file or on a backticked ds_/DS_ name that
# no source file has (FILE:LINE), docs-update
# rewrites the pasted blocks (after a prediction changes). python3, stdlib.
# Deterministic and about 3 minutes (120 s of CPU) on the shared 2-core VM (validation/run.py
# runs three times: its report and the two blocks of its targets;
# bench/aggregate_gap.py about 30 s), so make test runs it.
docs-check: bin/ddpsim $(if $(wildcard real/main.c),bin/ddpreal)
	$(Q)python3 scripts/docs_check.py

docs-update: bin/ddpsim $(if $(wildcard real/main.c),bin/ddpreal)
	$(Q)python3 scripts/docs_check.py --update

# GPU checks (needs a GPU; see scripts/gpu-check.sh): build, replay, sweep.
gpu-check: bin/ddpsim bin/ddpreal
	$(Q)scripts/gpu-check.sh

info:
	@echo "build dir:     $(BUILD)"
	@echo "cc:            $$($(CC) --version | head -n1)"
	@echo "nvcc:          $(if $(HAVE_NVCC),found,not found)"
	@echo "nccl.h:        $(if $(HAVE_NCCL),found under $(CUDA_HOME)/include,not found)"
	@echo "mpi:           $(if $(MPI_LIBS),$(MPI_LIBS),not found (mpicc missing))"
	@echo "ddpreal:       devices cpu$(if $(HAVE_CUDA), and cuda (DS_HAVE_CUDA), only: the cuda device needs nvcc and nccl.h)"
	@echo "sources:       $(words $(BASE_SRC) $(TRACE_SRC) $(SIM_SRC) $(ANALYSIS_SRC)) library files, $(words $(TEST_SRC)) test files"

clean:
	rm -rf build bin

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d $(BUILD)/*/*/*/*.d)
