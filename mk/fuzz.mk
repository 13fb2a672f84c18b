# Fuzzing: one libFuzzer target per parser of outside input,
# test/fuzz/fuzz_<name>.c, built with clang into build-fuzz/ (never build/,
# whose objects are gcc's): the llmc/ sources with
# -fsanitize=fuzzer-no-link,address,undefined (no OpenMP, BLAS or MPI), each
# target linked with -fsanitize=fuzzer,address,undefined.
#   make fuzz-build                 build-fuzz/fuzz_<name> for every target
#   make fuzz [FUZZ_SECONDS=60]     seeds (test/fuzz/make_seeds.sh), then each target for
#                                   FUZZ_SECONDS on build-fuzz/corpus/<name> (docs/reliability.md)
# test/suites/fuzz_short.sh runs each briefly in make test.
FUZZ_CC ?= clang
FUZZ_BUILD := build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SAN := address,undefined
FUZZ_CFLAGS := -std=c11 -D_DEFAULT_SOURCE -Illmc -Itest/fuzz -g -O1 -Wall -Wextra \
               -Wno-unknown-pragmas -Wno-psabi -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_LDLIBS := -lpcre2-8 -lcjson -lz -lm
FUZZ_NAMES := $(patsubst test/fuzz/fuzz_%.c,%,$(wildcard test/fuzz/fuzz_*.c))
FUZZ_TARGETS := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_LIB := $(FUZZ_BUILD)/libllmc.a
FUZZ_OBJS := $(patsubst llmc/%.c,$(FUZZ_BUILD)/llmc/%.o,$(LLMC_SRCS))
# the ONNX reader's generated protobuf-c code (mk/onnx.mk)
FUZZ_CFLAGS += -I$(BUILD)/onnx
FUZZ_LDLIBS += -lprotobuf-c
FUZZ_OBJS += $(FUZZ_BUILD)/onnx/onnx.pb-c.o
$(FUZZ_BUILD)/onnx/onnx.pb-c.o: $(BUILD)/onnx/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -c $< -o $@
$(FUZZ_BUILD)/llmc/fold/onnx_graph.o $(FUZZ_BUILD)/llmc/fold/onnx_fold.o: $(BUILD)/onnx/onnx.pb-c.h

$(FUZZ_BUILD)/llmc/%.o: llmc/%.c $(LLMC_HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -c $< -o $@
$(FUZZ_LIB): $(FUZZ_OBJS)
	rm -f $@
	$(AR) rcs $@ $^
$(FUZZ_BUILD)/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/fuzz.h $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) $< $(FUZZ_LIB) $(FUZZ_LDLIBS) -o $@

.PHONY: fuzz fuzz-build fuzz-seeds
fuzz-build: $(FUZZ_TARGETS)
fuzz-seeds:
	@test/fuzz/make_seeds.sh $(FUZZ_BUILD)/seeds
fuzz: fuzz-build fuzz-seeds
	@test/fuzz/run_fuzz.sh $(FUZZ_SECONDS) $(FUZZ_NAMES)
