# CUDA emulation: the unmodified CUDA programs built with g++
# against dev/cuda/emu's shims and run on the CPU, every block's threads as
# fibers -- a logic check, not a device run (docs/cuda.md). No nvcc needed.
#   build/emu/{test_gpt2cu,test_gpt2fp32cu,train_gpt2cu,train_gpt2fp32cu}
#   build/emu/{test_vitcu,test_vitfp32cu,train_vitcu,train_vitfp32cu}, build/emu/{test_swincu,test_swinfp32cu}
#   build/emu/dev/cuda/<kernel>_{bf16,fp32}, build/emu/emu_selftest, build/emu/emu_cudnn_selftest,
#   build/emu/cudnn_attention_nocudnn (dev/cuda/cudnn_attention.cu without cuDNN),
#   build/emu/attention_counts (the attention kinds' counted FLOPs and bytes)
# rewrite_launches.py copies the .cu/.cuh sources into build/emu/src with
# the launch syntax turned into emulator calls; the kernels are not edited.
# Race detection (docs/cuda.md, dev/cuda/emu/emu_race.cpp): the plain build
# compiles the emulated programs' objects with g++'s thread-sanitizer
# instrumentation (not linked with TSan's runtime: dev/cuda/emu/emu_tsan.cpp
# supplies the hooks; -g1 gives the reports source lines). make SAN=1 builds
# them with ASan + UBSan as the rest instead, and without race detection:
# the TSan instrumentation cannot be combined with ASan.
EMU_DIR := dev/cuda/emu
EMU_BUILD := $(BUILD)/emu
EMU_SRC := $(EMU_BUILD)/src
EMU_CXX ?= g++
EMU_OPT := -O2
EMU_RACE_DEFS := -DEMU_RACE=1
EMU_RACE_FLAGS := -fsanitize=thread --param=tsan-instrument-func-entry-exit=0 -g1
ifeq ($(SAN),1)
  EMU_OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
  EMU_RACE_DEFS :=
  EMU_RACE_FLAGS :=
endif
# the shims stand in for NCCL and cuDNN (dev/cuda/emu/nccl.h, cudnn.h), so both paths build
EMU_CXXFLAGS := -std=c++17 $(EMU_OPT) -Wall -Wextra -D_DEFAULT_SOURCE -DFOLDNORM_NCCL -DFOLDNORM_CUDNN $(EMU_RACE_DEFS) \
                -I$(EMU_SRC)/llmc -I$(EMU_DIR) -Illmc
# the programs' objects (the kernels): instrumented where races are checked;
# expanded late, so that flags other fragments add to EMU_CXXFLAGS (mk/mpi.mk's
# MPI, read after this file) reach the programs too
EMU_PROGRAM_CXXFLAGS = $(EMU_CXXFLAGS) $(EMU_RACE_FLAGS)
EMU_HEADERS := $(wildcard $(EMU_DIR)/*.h)
# the C headers the CUDA sources include (structs shared with libllmc.a, e.g.
# llmc/vision/swin.h): an object older than one of them would lay the structs
# out differently from the library it links with (as mk/cuda.mk's CUDA_HEADERS)
EMU_C_HEADERS = $(LLMC_HEADERS)
EMU_CUDA_SRCS := $(wildcard llmc/cuda/*.cuh dev/cuda/*.cu dev/cuda/*.cuh) test/test_gpt2.cu train_gpt2.cu \
                 test/test_vit.cu test/test_swin.cu test/test_cuda_compare.h test/test_helpers.h train_vit.cu \
                 $(EMU_DIR)/selftest.cu $(EMU_DIR)/cudnn_selftest.cu $(EMU_DIR)/attention_counts.cu
EMU_COPIES := $(patsubst %,$(EMU_SRC)/%,$(EMU_CUDA_SRCS))
EMU_LIB := $(EMU_BUILD)/libemu.a
EMU_RUNTIME_OBJS := $(patsubst %,$(EMU_BUILD)/runtime/%.o,emu_fibers emu_runtime emu_blas emu_nccl emu_mma \
                      emu_race emu_tsan emu_arena emu_traffic emu_cudnn emu_cudnn_graph emu_pinned emu_graph \
                      emu_streams emu_async)
EMU_KERNELS := $(notdir $(basename $(wildcard dev/cuda/*.cu)))
EMU_PROGRAMS := $(patsubst %,$(EMU_BUILD)/%,test_gpt2cu test_gpt2fp32cu train_gpt2cu train_gpt2fp32cu \
                  test_vitcu test_vitfp32cu train_vitcu train_vitfp32cu \
                  test_swincu test_swinfp32cu emu_selftest emu_cudnn_selftest cudnn_attention_nocudnn \
                  attention_counts) \
                $(foreach k,$(EMU_KERNELS),$(EMU_BUILD)/dev/cuda/$(k)_bf16 $(EMU_BUILD)/dev/cuda/$(k)_fp32)
EMU_LINK = $(EMU_CXX) $(EMU_OPT) $(filter %.o,$^) $(EMU_LIB) $(LLMC_LIB) $(LDLIBS) -o $@

.PHONY: emu
emu: $(EMU_PROGRAMS)

$(EMU_SRC)/%: % $(EMU_DIR)/rewrite_launches.py
	@mkdir -p $(dir $@)
	$(PYTHON) $(EMU_DIR)/rewrite_launches.py $< $@

$(EMU_BUILD)/runtime/%.o: $(EMU_DIR)/%.cpp $(EMU_HEADERS) $(BUILD)/config.stamp mk/emu.mk
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_CXXFLAGS) -c $< -o $@
$(EMU_LIB): $(EMU_RUNTIME_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

# train_gpt2's main runs under emu_main.cpp (EMU_RANKS=N: N ranks as threads)
$(EMU_BUILD)/obj/train_gpt2.fp32.o $(EMU_BUILD)/obj/train_gpt2.bf16.o: EMU_DEFS := -Dmain=emu_program_main
$(EMU_BUILD)/obj/train_vit.fp32.o $(EMU_BUILD)/obj/train_vit.bf16.o: EMU_DEFS := -Dmain=emu_program_main
$(EMU_BUILD)/obj/%.fp32.o: $(EMU_SRC)/%.cu $(EMU_COPIES) $(EMU_HEADERS) $(EMU_C_HEADERS) $(BUILD)/config.stamp mk/emu.mk
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_PROGRAM_CXXFLAGS) $(EMU_DEFS) -DFOLDNORM_FP32 -x c++ -c $< -o $@
$(EMU_BUILD)/obj/%.bf16.o: $(EMU_SRC)/%.cu $(EMU_COPIES) $(EMU_HEADERS) $(EMU_C_HEADERS) $(BUILD)/config.stamp mk/emu.mk
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_PROGRAM_CXXFLAGS) $(EMU_DEFS) -x c++ -c $< -o $@

$(EMU_BUILD)/test_gpt2cu: $(EMU_BUILD)/obj/test/test_gpt2.bf16.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/test_gpt2fp32cu: $(EMU_BUILD)/obj/test/test_gpt2.fp32.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/train_gpt2cu: $(EMU_BUILD)/obj/train_gpt2.bf16.o $(EMU_BUILD)/runtime/emu_main.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/train_gpt2fp32cu: $(EMU_BUILD)/obj/train_gpt2.fp32.o $(EMU_BUILD)/runtime/emu_main.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/test_vitcu: $(EMU_BUILD)/obj/test/test_vit.bf16.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/test_vitfp32cu: $(EMU_BUILD)/obj/test/test_vit.fp32.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/test_swincu: $(EMU_BUILD)/obj/test/test_swin.bf16.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/test_swinfp32cu: $(EMU_BUILD)/obj/test/test_swin.fp32.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/train_vitcu: $(EMU_BUILD)/obj/train_vit.bf16.o $(EMU_BUILD)/runtime/emu_main.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/train_vitfp32cu: $(EMU_BUILD)/obj/train_vit.fp32.o $(EMU_BUILD)/runtime/emu_main.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
# the emulator's own checks (dev/cuda/emu/selftest.cu)
$(EMU_BUILD)/emu_selftest: $(EMU_BUILD)/obj/$(EMU_DIR)/selftest.fp32.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
# the cuDNN shim's refusals (dev/cuda/emu/cudnn_selftest.cu: bf16, as cuDNN attention)
$(EMU_BUILD)/emu_cudnn_selftest: $(EMU_BUILD)/obj/$(EMU_DIR)/cudnn_selftest.bf16.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
# one (b, h) of each causal attention kind, its counted FLOPs and bytes against the
# formulas (dev/cuda/emu/attention_counts.cu: bf16, the tensor-core kind's type)
$(EMU_BUILD)/attention_counts: $(EMU_BUILD)/obj/$(EMU_DIR)/attention_counts.bf16.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
# the cuDNN attention check as a build without cudnn.h compiles it: it must say
# NOT APPLICABLE and what -at cudnn answers (no kernel runs: not instrumented)
$(EMU_BUILD)/obj/dev/cuda/cudnn_attention.nocudnn.o: $(EMU_SRC)/dev/cuda/cudnn_attention.cu $(EMU_COPIES) $(EMU_HEADERS) $(EMU_C_HEADERS) $(BUILD)/config.stamp mk/emu.mk
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(EMU_CXXFLAGS) -UFOLDNORM_CUDNN -x c++ -c $< -o $@
$(EMU_BUILD)/cudnn_attention_nocudnn: $(EMU_BUILD)/obj/dev/cuda/cudnn_attention.nocudnn.o $(EMU_LIB) $(LLMC_LIB)
	$(EMU_LINK)
$(EMU_BUILD)/dev/cuda/%_bf16: $(EMU_BUILD)/obj/dev/cuda/%.bf16.o $(EMU_LIB) $(LLMC_LIB)
	@mkdir -p $(dir $@)
	$(EMU_LINK)
$(EMU_BUILD)/dev/cuda/%_fp32: $(EMU_BUILD)/obj/dev/cuda/%.fp32.o $(EMU_LIB) $(LLMC_LIB)
	@mkdir -p $(dir $@)
	$(EMU_LINK)
.PRECIOUS: $(EMU_BUILD)/obj/%.o $(EMU_SRC)/%

# for the mutation check: how an emulated program is compiled and linked
.PHONY: emu-flags
emu-flags: $(EMU_LIB) $(LLMC_LIB) $(EMU_COPIES)
	@echo '$(EMU_CXX) $(EMU_PROGRAM_CXXFLAGS)'
	@echo '$(EMU_OPT) $(abspath $(EMU_LIB)) $(abspath $(LLMC_LIB)) $(LDLIBS)'
