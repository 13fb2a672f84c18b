# GPT-2 and ViT on NVIDIA GPUs: built by `make` only where nvcc is found.
#   bin/train_gpt2cu / test_gpt2cu          bf16 mixed precision (fp32 master weights)
#   bin/train_gpt2fp32cu / test_gpt2fp32cu  fp32 throughout (the 1e-4 reference checks)
#   bin/train_vitcu / test_vitcu, bin/train_vitfp32cu / test_vitfp32cu  the same for ViT
#   bin/test_swincu / test_swinfp32cu       the GPU Swin's checks (trained by train_vit*cu)
#   build/dev/cuda/<kernel>_{bf16,fp32} dev/cuda kernel checks + timings (make cuda-dev)
# bf16 objects use --use_fast_math, fp32 ones exact expf/tanhf (the 1e-4 checks).
# CUDA_ARCHS picks the targets (default sm_80 and sm_90; `make CUDA_ARCHS=90`
# for one). The host side links the llmc/ objects it needs (model files, data
# loader, the CPU model for the tests).

ifneq ($(NVCC),)
CUDA_ARCHS ?= 80 90
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(realpath $(NVCC))))
CUDA_LIBDIR ?= $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/targets/x86_64-linux/lib))
NVCC_GENCODE := $(foreach a,$(CUDA_ARCHS),-gencode=arch=compute_$(a),code=sm_$(a))
NVCC_FLAGS ?= -O3
# warnings are errors; `make NVCC_WERROR=` builds without (dev/gpu/check.sh's
# retry where another host gcc warns)
NVCC_WERROR ?= -Werror=all-warnings
NVCC_FLAGS += -std=c++17 $(NVCC_GENCODE) -Illmc -Xcompiler=-Wall,-Wextra --threads 2 \
              $(NVCC_WERROR) -D_DEFAULT_SOURCE
CUDA_LDLIBS := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublasLt -lcublas -lcudart -lstdc++
# cuDNN (llmc/cuda/cudnn_attention.cuh: -at cudnn) and NCCL (data parallel):
# each where its header is found, in this order (cuda_lib_find below):
#   CUDNN_HOME / NCCL_HOME, CUDA_HOME (and its targets/ folder), the system
#   (CUDA_SYSTEM_ROOTS: include/ and include/<multiarch>/), then the wheels of
#   a Python environment: site-packages/nvidia/cudnn and nvidia/nccl
#   (nvidia-cudnn-cu13, nvidia-nccl-cu13; also nvidia/cu13), asked of each
#   interpreter in CUDA_PYTHONS (python3 on the PATH, then the GPU image's venv).
# A library folder that holds only a versioned file (the wheels ship
# libcudnn.so.9 and libnccl.so.2, no libcudnn.so) is linked by that name
# (-l:libcudnn.so.9); every folder outside the system's gets an rpath.
# Without a header the feature is left out (asking for it then says so);
# CUDNN=0 / NCCL=0 leave it out anyway. `make cuda-config` prints what was found.
CUDA_SYSTEM_ROOTS ?= /usr /usr/local
CUDA_PYTHONS ?= python3 /opt/torch/.venv/bin/python3
CUDA_MULTIARCH := $(shell uname -m)-linux-gnu
# cuda_include_dirs NAME: the include folders to look in, before the wheels
cuda_include_dirs = $(foreach r,$($(1)_HOME) $(CUDA_HOME) $(CUDA_HOME)/targets/$(shell uname -m)-linux,$(r)/include) \
                    $(foreach r,$(CUDA_SYSTEM_ROOTS),$(r)/include $(r)/include/$(CUDA_MULTIARCH))
# the site-packages folders of CUDA_PYTHONS (asked only when a header is not found before them)
cuda_site_dirs = $(shell for p in $(CUDA_PYTHONS); do command -v "$$p" > /dev/null 2>&1 && \
                   "$$p" -c 'import site; print(*site.getsitepackages(), site.getusersitepackages())' 2> /dev/null; \
                 done | tr ' ' '\n' | awk 'NF && !seen[$$0]++')
# cuda_wheel_include_dirs WHEEL: the wheels' include folders
cuda_wheel_include_dirs = $(foreach d,$(CUDA_SITE_DIRS),$(d)/nvidia/$(1)/include $(d)/nvidia/cu13/include)
# cuda_lib_dir INCDIR LIB: the folder beside INCDIR (or the system's) that holds libLIB.so*
cuda_lib_dir = $(patsubst %/,%,$(dir $(firstword $(wildcard $(foreach d,$(patsubst %/include,%,$(patsubst %/include/$(CUDA_MULTIARCH),%,$(1))), \
                 $(d)/lib64/lib$(2).so* $(d)/lib/lib$(2).so* $(d)/lib/$(CUDA_MULTIARCH)/lib$(2).so*)))))
# cuda_link_flags LIBDIR LIB: -lLIB, or -l:libLIB.so.N where only versioned names are there;
# -L and an rpath for a folder other than the system's and the toolkit's (linked with both already)
cuda_link_flags = $(if $(filter $(1),$(CUDA_LIBDIR) $(foreach r,$(CUDA_SYSTEM_ROOTS),$(r)/lib $(r)/lib64 $(r)/lib/$(CUDA_MULTIARCH))),,-L$(1) -Wl,-rpath,$(1)) \
                  $(if $(wildcard $(1)/lib$(2).so),-l$(2),-l:$(notdir $(firstword $(wildcard $(1)/lib$(2).so.[0-9]*))))
# cuda_lib_find NAME HEADER LIB WHEEL: sets NAME_HEADER, NAME_INCDIR, NAME_LIBDIR, NAME_LDLIBS,
# NAME_FOUND_IN (where); NAME_HEADER empty when not found or NAME=0
define cuda_lib_find
ifneq ($$($(1)),0)
  $(1)_HEADER := $$(firstword $$(wildcard $$(addsuffix /$(2),$$(call cuda_include_dirs,$(1)))))
  $(1)_FOUND_IN := $$(if $$($(1)_HEADER),$$(patsubst %/,%,$$(dir $$($(1)_HEADER))))
  ifeq ($$($(1)_HEADER),)
    ifeq ($$(origin CUDA_SITE_DIRS),undefined)
      CUDA_SITE_DIRS := $$(cuda_site_dirs)
    endif
    $(1)_HEADER := $$(firstword $$(wildcard $$(addsuffix /$(2),$$(call cuda_wheel_include_dirs,$(4)))))
    $(1)_FOUND_IN := $$(if $$($(1)_HEADER),a Python wheel: $$(patsubst %/,%,$$(dir $$($(1)_HEADER))))
  endif
endif
ifneq ($$($(1)_HEADER),)
  $(1)_INCDIR := $$(patsubst %/,%,$$(dir $$($(1)_HEADER)))
  $(1)_LIBDIR := $$(call cuda_lib_dir,$$($(1)_INCDIR),$(3))
  $(1)_LDLIBS := $$(if $$($(1)_LIBDIR),$$(call cuda_link_flags,$$($(1)_LIBDIR),$(3)),-l$(3))
endif
endef
$(eval $(call cuda_lib_find,NCCL,nccl.h,nccl,nccl))
$(eval $(call cuda_lib_find,CUDNN,cudnn.h,cudnn,cudnn))
# -I for a header outside the folders nvcc searches anyway
cuda_include_flag = $(if $(filter $(1),$(CUDA_HOME)/include /usr/include),,-I$(1))
ifneq ($(NCCL_HEADER),)
  NVCC_FLAGS += -DFOLDNORM_NCCL $(call cuda_include_flag,$(NCCL_INCDIR))
  CUDA_LDLIBS += $(NCCL_LDLIBS)
endif
ifneq ($(CUDNN_HEADER),)
  NVCC_FLAGS += -DFOLDNORM_CUDNN $(call cuda_include_flag,$(CUDNN_INCDIR))
  CUDA_LDLIBS += $(CUDNN_LDLIBS)
endif
# the folders a program's libraries load from at run time (dev/gpu/check.sh
# puts them on LD_LIBRARY_PATH too: a wheel's libcudnn.so.9 loads its own
# sub-libraries, libcudnn_graph.so.9 and the others, from its folder)
cuda_unique = $(if $(1),$(firstword $(1)) $(call cuda_unique,$(filter-out $(firstword $(1)),$(1))))
CUDA_RUNTIME_LIBDIRS := $(strip $(call cuda_unique,$(CUDA_LIBDIR) $(NCCL_LIBDIR) $(CUDNN_LIBDIR)))
.PHONY: cuda-config
cuda-config:
	@echo 'NVCC=$(NVCC)'
	@echo 'CUDA_HOME=$(CUDA_HOME)'
	@echo 'CUDNN=$(if $(CUDNN_HEADER),found in $(CUDNN_FOUND_IN),not found)'
	@echo 'CUDNN_LDLIBS=$(strip $(CUDNN_LDLIBS))'
	@echo 'CUDNN_INCDIR=$(CUDNN_INCDIR)'
	@echo 'CUDNN_LIBDIR=$(CUDNN_LIBDIR)'
	@echo 'NCCL=$(if $(NCCL_HEADER),found in $(NCCL_FOUND_IN),not found)'
	@echo 'NCCL_LDLIBS=$(strip $(NCCL_LDLIBS))'
	@echo 'ZLIB=$(ZLIB)'
	@echo 'NVCC_FLAGS=$(strip $(NVCC_FLAGS))'
	@echo 'CUDA_LDLIBS=$(strip $(CUDA_LDLIBS))'
	@echo 'CUDA_RUNTIME_LIBDIRS=$(CUDA_RUNTIME_LIBDIRS)'
CUDA_HEADERS := $(wildcard llmc/cuda/*.cuh) $(LLMC_HEADERS) $(wildcard dev/cuda/*.cuh) test/test_cuda_compare.h test/test_helpers.h
# The host side: the llmc/ objects of every folder but the ones a GPU image
# may lack the libraries for (GPU machines have no pcre2, cJSON, protobuf-c
# or MPI): the files that include those headers are left out, found by grep.
CUDA_HOST_LIB := $(BUILD)/libllmc_cuda.a
CUDA_HOST_EXCLUDED := $(shell grep -l -E '^\#include (<(mpi|pcre2|cjson/cJSON)\.h>|"onnx\.pb-c\.h")' $(LLMC_SRCS))
CUDA_HOST_SRCS := $(filter-out $(CUDA_HOST_EXCLUDED),$(LLMC_SRCS))
CUDA_HOST_OBJS := $(patsubst llmc/%.c,$(BUILD)/llmc/%.o,$(CUDA_HOST_SRCS))
CUDA_LINK = mkdir -p $(@D) && $(CC) $(filter %.o,$^) $(CUDA_HOST_LIB) $(BLAS_LIBS) $(DNNL_LIBS) -lm $(ZLIB_LIBS) -fopenmp $(CUDA_LDLIBS) -o $@
# rebuilt when the list above changes too (an old library would lack an object added to it)
$(CUDA_HOST_LIB): $(CUDA_HOST_OBJS) mk/cuda.mk
	rm -f $@
	$(AR) rcs $@ $(filter %.o,$^)

CUDA_PROGRAMS += train_gpt2cu test_gpt2cu train_gpt2fp32cu test_gpt2fp32cu
CUDA_PROGRAMS += train_vitcu test_vitcu train_vitfp32cu test_vitfp32cu
CUDA_PROGRAMS += test_swincu test_swinfp32cu

$(BUILD)/cuda/%.bf16.o: %.cu $(CUDA_HEADERS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) --use_fast_math -c $< -o $@
$(BUILD)/cuda/%.fp32.o: %.cu $(CUDA_HEADERS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -DFOLDNORM_FP32 -c $< -o $@

$(BIN)/train_gpt2cu: $(BUILD)/cuda/train_gpt2.bf16.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)
$(BIN)/train_gpt2fp32cu: $(BUILD)/cuda/train_gpt2.fp32.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)
$(BIN)/test_gpt2cu: $(BUILD)/cuda/test/test_gpt2.bf16.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)
$(BIN)/test_gpt2fp32cu: $(BUILD)/cuda/test/test_gpt2.fp32.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)
$(BIN)/train_vitcu: $(BUILD)/cuda/train_vit.bf16.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)
$(BIN)/train_vitfp32cu: $(BUILD)/cuda/train_vit.fp32.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)
$(BIN)/test_vitcu: $(BUILD)/cuda/test/test_vit.bf16.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)
$(BIN)/test_vitfp32cu: $(BUILD)/cuda/test/test_vit.fp32.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)

$(BIN)/test_swincu: $(BUILD)/cuda/test/test_swin.bf16.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)
$(BIN)/test_swinfp32cu: $(BUILD)/cuda/test/test_swin.fp32.o $(CUDA_HOST_LIB)
	$(CUDA_LINK)

# dev/cuda: one program per kernel family, fp32 and bf16
CUDA_DEV_SRCS := $(wildcard dev/cuda/*.cu)
CUDA_DEV_PROGRAMS := $(foreach s,$(CUDA_DEV_SRCS),$(BUILD)/$(s:.cu=)_bf16 $(BUILD)/$(s:.cu=)_fp32)
.PHONY: cuda-dev
.PRECIOUS: $(BUILD)/cuda/dev/cuda/%.o
cuda-dev: $(CUDA_DEV_PROGRAMS)
# the checks' oracles are the llmc/ CPU kernels (norm, cbwc, adamw, attention, matmul,
# attention_bidir and swin_window for the Swin kernels, patch_embed, classifier_loss)
$(BUILD)/dev/cuda/%_bf16: $(BUILD)/cuda/dev/cuda/%.bf16.o $(CUDA_HOST_LIB)
	@mkdir -p $(dir $@)
	$(CUDA_LINK)
$(BUILD)/dev/cuda/%_fp32: $(BUILD)/cuda/dev/cuda/%.fp32.o $(CUDA_HOST_LIB)
	@mkdir -p $(dir $@)
	$(CUDA_LINK)
endif
