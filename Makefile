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

# oneDNN for train_gpt2 -mp bf16 (bf16 matmuls, llmc/matmul_dnnl.c) when
# present (make NO_DNNL=1 to leave it out: then -mp bf16 is refused)
ifneq ($(NO_DNNL),1)
  ifneq ($(wildcard /usr/include/oneapi/dnnl/dnnl.h),)
    CFLAGS += -DFOLDNORM_DNNL
    # linked only into the programs that call it (libdnnl is large to load)
    DNNL_LIBS := -Wl,--as-needed -ldnnl -Wl,--no-as-needed
    LDLIBS += $(DNNL_LIBS)
  endif
endif

# sanitizer build of everything: make SAN=1 test
ifeq ($(SAN),1)
  CFLAGS := $(filter-out -O3,$(CFLAGS)) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
  LDLIBS += -fsanitize=address,undefined
endif

BUILD := build
# every program lands in bin/ (make NAME is a shortcut for make bin/NAME)
BIN := bin
LLMC_SRCS := $(wildcard llmc/*.c)
LLMC_OBJS := $(patsubst llmc/%.c,$(BUILD)/llmc/%.o,$(LLMC_SRCS))
# an archive, so each program links only the llmc/ objects it uses
LLMC_LIB := $(BUILD)/libllmc.a

CPU_PROGRAMS := train_gpt2 bench_norms bench_gpt2 bench_adamw text_to_shard
# every test/test_NAME.c is a test program bin/test_NAME (helpers go elsewhere,
# without the test_ prefix); a suite in test/suites/ runs it
TEST_PROGRAMS := $(patsubst test/%.c,%,$(wildcard test/test_*.c))
CPU_PROGRAMS += $(TEST_PROGRAMS)
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
BUILD_CONFIG := $(CC) $(CFLAGS) | $(LDLIBS)
$(BUILD)/config.stamp: FORCE | $(BUILD)/llmc
	@echo '$(BUILD_CONFIG)' | cmp -s - $@ || echo '$(BUILD_CONFIG)' > $@
.PHONY: FORCE
FORCE:

# The commit a run record names (llmc/logger.c): git describe at build time,
# "unknown" outside a git checkout; logger.o is rebuilt when it changes.
FOLDNORM_COMMIT := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/commit.stamp: FORCE | $(BUILD)/llmc
	@echo '$(FOLDNORM_COMMIT)' | cmp -s - $@ || echo '$(FOLDNORM_COMMIT)' > $@
$(BUILD)/llmc/logger.o: $(BUILD)/commit.stamp
$(BUILD)/llmc/logger.o: CFLAGS += -DFOLDNORM_COMMIT='"$(FOLDNORM_COMMIT)"'

$(BUILD)/llmc/%.o: llmc/%.c $(wildcard llmc/*.h) $(BUILD)/config.stamp | $(BUILD)/llmc
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/%.o: %.c $(wildcard llmc/*.h) $(BUILD)/config.stamp | $(BUILD)/llmc
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
# AdamW's sqrtf as a vector instruction: without errno to set, gcc vectorizes
# it (the argument, v >= 0, never sets errno anyway)
$(BUILD)/llmc/adamw.o: CFLAGS += -fno-math-errno
$(BUILD)/llmc:
	mkdir -p $@
$(LLMC_LIB): $(LLMC_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN)/train_gpt2: $(BUILD)/train_gpt2.o $(LLMC_LIB)
	$(LINK)
$(BIN)/test_%: $(BUILD)/test/test_%.o $(LLMC_LIB)
	$(LINK)
$(BIN)/bench_norms: $(BUILD)/dev/bench/bench_norms.o $(LLMC_LIB)
	$(LINK)
$(BIN)/bench_gpt2: $(BUILD)/dev/bench/bench_gpt2.o $(LLMC_LIB)
	$(LINK)
$(BIN)/bench_adamw: $(BUILD)/dev/bench/bench_adamw.o $(LLMC_LIB)
	$(LINK)
$(BIN)/text_to_shard: $(BUILD)/tools/text_to_shard.o $(LLMC_LIB)
	$(LINK)

# installs the Debian packages the demo and the tests need (quick no-op when present)
deps:
	@scripts/install_deps.sh

# deps first, then a fresh make for the build: the Makefile looks for OpenBLAS
# and MPI when it is read, so on a fresh machine the build must start after
# deps installed them (else the first build would use the portable matmul).
# make test: the full suite (CI runs it plain and with SAN=1); test/run_tests.sh
# NAME... runs some
test: deps
	@$(MAKE) --no-print-directory cpu emu
	@test/run_tests.sh

# make check: the fast tier, under a minute: the suites marked "# tier: check"
# (test/run_tests.sh --list)
check: deps
	@$(MAKE) --no-print-directory cpu
	@test/run_tests.sh --tier check

demo: deps
	@$(MAKE) --no-print-directory cpu
	@scripts/demo.sh

bench: deps
	@$(MAKE) --no-print-directory cpu emu
	@dev/bench/bench.sh

clean:
	rm -rf $(BUILD) $(BIN)
