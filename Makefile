# foldnorm: CPU targets always; CUDA targets only where nvcc is found.
CC ?= gcc
CFLAGS ?= -O3 -march=native
CFLAGS += -std=c11 -Wall -Wextra -fopenmp -D_DEFAULT_SOURCE -Illmc
LDLIBS += -lm -fopenmp
PYTHON ?= /usr/bin/python3

# OpenBLAS for the matmuls when present (make NO_BLAS=1 for the portable loops).
# Its OpenMP build shares our OpenMP thread pool; the pthread build would put
# 2x the threads on the cores and spin against our parallel loops.
MULTIARCH := $(shell $(CC) -dumpmachine)
OPENBLAS_OMP_LIB := /usr/lib/$(MULTIARCH)/openblas-openmp
ifneq ($(NO_BLAS),1)
  ifneq ($(wildcard $(OPENBLAS_OMP_LIB)/libopenblas.so),)
    BLAS_CFLAGS := -I/usr/include/$(MULTIARCH)/openblas-openmp
    BLAS_LIBS := -L$(OPENBLAS_OMP_LIB) -Wl,-rpath,$(OPENBLAS_OMP_LIB) -lopenblas
  else
    BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
    BLAS_LIBS := $(shell pkg-config --libs openblas 2>/dev/null)
  endif
  ifneq ($(BLAS_LIBS),)
    CFLAGS += -DFOLDNORM_BLAS $(BLAS_CFLAGS)
    LDLIBS += $(BLAS_LIBS)
  endif
endif

# oneDNN for train_gpt2 -mp bf16 (bf16 matmuls, llmc/kernels/matmul_dnnl.c) when
# present (make NO_DNNL=1 to leave it out: then -mp bf16 is refused)
ifneq ($(NO_DNNL),1)
  ifneq ($(wildcard /usr/include/oneapi/dnnl/dnnl.h),)
    CFLAGS += -DFOLDNORM_DNNL
    # linked only into the programs that call it (libdnnl is large to load)
    DNNL_LIBS := -Wl,--as-needed -ldnnl -Wl,--no-as-needed
    LDLIBS += $(DNNL_LIBS)
  endif
endif

# zlib for gzip-compressed IDX files (llmc/vision/idx.c: Fashion-MNIST's .gz)
# where zlib.h and -lz are found (CPATH and LIBRARY_PATH count: dev/gpu/check.sh's
# carried .devdeps); make ZLIB=0 leaves it out, and gzip input is then refused.
# Nothing else needs zlib (the file CRC32 is llmc/core/checksum.c's own).
ifeq ($(origin ZLIB),undefined)
  ZLIB := $(shell printf '\043include <zlib.h>\nint main(void) { return zlibVersion()[0] == 0; }\n' | \
            $(CC) -x c - -lz -o /dev/null > /dev/null 2>&1 && echo 1 || echo 0)
endif
ifeq ($(ZLIB),1)
  CFLAGS += -DFOLDNORM_ZLIB
  ZLIB_LIBS := -lz
endif

# sanitizer build of everything: make SAN=1 test
ifeq ($(SAN),1)
  CFLAGS := $(filter-out -O3,$(CFLAGS)) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
  LDLIBS += -fsanitize=address,undefined
endif

BUILD := build
# every program lands in bin/ (make NAME is a shortcut for make bin/NAME)
BIN := bin
# llmc/ holds one folder per concern (docs/layout.md); every list below is
# derived from the folders
LLMC_SRCS := $(wildcard llmc/*/*.c)
LLMC_HEADERS := $(wildcard llmc/*/*.h)
LLMC_OBJS := $(patsubst llmc/%.c,$(BUILD)/llmc/%.o,$(LLMC_SRCS))
# an archive, so each program links only the llmc/ objects it uses
LLMC_LIB := $(BUILD)/libllmc.a

# every program's rule is in a fragment mk/NAME.mk (below), which adds it here
CPU_PROGRAMS :=
NVCC := $(shell command -v nvcc 2>/dev/null)
CUDA_PROGRAMS :=

# the fragments below define rules before `all:`; `make` still means `make all`
.DEFAULT_GOAL := all

# Each feature adds its programs and rules in a fragment mk/NAME.mk:
#   CPU_PROGRAMS += prog;  $(BIN)/prog: $(BUILD)/.../prog.o $(LLMC_LIB) ; $(LINK)
include $(wildcard mk/*.mk)

LINK = mkdir -p $(@D) && $(CC) $(filter %.o,$^) $(LLMC_LIB) $(LDLIBS) -o $@

.PHONY: all cpu cuda test check demo bench deps clean
all: cpu cuda
cpu: $(addprefix $(BIN)/,$(CPU_PROGRAMS))
cuda: $(if $(NVCC),$(addprefix $(BIN)/,$(CUDA_PROGRAMS)) $(CUDA_DEV_PROGRAMS),)
# shortcuts: `make train_gpt2` builds bin/train_gpt2
.PHONY: $(CPU_PROGRAMS) $(CUDA_PROGRAMS)
$(CPU_PROGRAMS) $(CUDA_PROGRAMS): %: $(BIN)/%

# Objects depend on a stamp that holds the compiler and flags, so that switching
# between `make` and `make SAN=1` (or NO_BLAS=1) rebuilds everything instead of
# mixing sanitized and plain objects. The stamp is rewritten only when it changes.
# -march=native means another instruction set on another CPU, so the stamp
# also holds what it resolves to here (the compiler's ISA macros): objects
# built on one machine are rebuilt, not reused, on a machine of another kind.
NATIVE_ISA := $(shell $(CC) $(filter -march=% -mno-% -mavx% -mfma,$(CFLAGS)) -dM -E -x c /dev/null 2>/dev/null | \
                grep -E '__(AVX|FMA|F16C|AMX|SSE4)' | sort | cksum)
BUILD_CONFIG := $(CC) $(CFLAGS) | $(LDLIBS) | isa $(NATIVE_ISA)
$(BUILD)/config.stamp: FORCE | $(BUILD)/llmc
	@echo '$(BUILD_CONFIG)' | cmp -s - $@ || echo '$(BUILD_CONFIG)' > $@
.PHONY: FORCE
FORCE:

# The commit a run record names (llmc/core/logger.c): git describe at build time,
# "unknown" outside a git checkout; logger.o is rebuilt when it changes.
FOLDNORM_COMMIT := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/commit.stamp: FORCE | $(BUILD)/llmc
	@echo '$(FOLDNORM_COMMIT)' | cmp -s - $@ || echo '$(FOLDNORM_COMMIT)' > $@
$(BUILD)/llmc/core/logger.o: $(BUILD)/commit.stamp
$(BUILD)/llmc/core/logger.o: CFLAGS += -DFOLDNORM_COMMIT='"$(FOLDNORM_COMMIT)"'

$(BUILD)/llmc/%.o: llmc/%.c $(LLMC_HEADERS) $(BUILD)/config.stamp | $(BUILD)/llmc
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/%.o: %.c $(LLMC_HEADERS) $(BUILD)/config.stamp | $(BUILD)/llmc
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
# AdamW's sqrtf as a vector instruction: without errno to set, gcc vectorizes
# it (the argument, v >= 0, never sets errno anyway)
$(BUILD)/llmc/kernels/adamw.o: CFLAGS += -fno-math-errno
# fast_expf's clamp is a branch that gcc if-converts only where floating
# point operations may not trap: without -fno-trapping-math the loops that
# call it (GELU, softmax, cross-entropy) stay scalar on AVX2 (AVX-512 masks
# them anyway). The same operations per element, so the same results; the
# list is every llmc/ file that includes fast_exp.h.
FAST_EXP_USERS := $(patsubst llmc/%.c,$(BUILD)/llmc/%.o,$(shell grep -l 'fast_exp\.h' $(LLMC_SRCS)))
$(FAST_EXP_USERS): CFLAGS += -fno-trapping-math
$(BUILD)/llmc:
	mkdir -p $@
$(LLMC_LIB): $(LLMC_OBJS)
	rm -f $@
	$(AR) rcs $@ $^


# the builds that test, check, demo and bench start run one compiler a core
# (make JOBS=1 test: one at a time)
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

# installs the Debian packages the demo and the tests need (quick no-op when present)
deps:
	@scripts/install_deps.sh

# deps first, then a fresh make for the build: the Makefile looks for OpenBLAS
# and MPI when it is read, so on a fresh machine the build must start after
# deps installed them (else the first build would use the portable matmul).
# make test: the full suite (CI runs it plain and with SAN=1); test/run_tests.sh
# NAME... runs some
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) cpu emu
	@test/run_tests.sh

# make check: the fast tier, under a minute: the suites marked "# tier: check"
# (test/run_tests.sh --list)
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) cpu
	@test/run_tests.sh --tier check

demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) cpu
	@scripts/demo.sh

bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) cpu emu
	@dev/bench/bench.sh

clean:
	rm -rf $(BUILD) $(BIN)
