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
# NCCL data parallel where nccl.h is found (else train_gpt2cu runs one process)
NCCL_HEADER := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
ifneq ($(NCCL_HEADER),)
  NVCC_FLAGS += -DFOLDNORM_NCCL
  CUDA_LDLIBS += -lnccl
endif
# cuDNN's fused attention (llmc/cuda/cudnn_attention.cuh) where cudnn.h is
# found (else the path is left out and asking for it says so); CUDNN=0 leaves it out
ifneq ($(CUDNN),0)
  CUDNN_HEADER := $(firstword $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h \
                    /usr/include/$(shell uname -m)-linux-gnu/cudnn.h))
endif
ifneq ($(CUDNN_HEADER),)
  CUDNN_INCDIR := $(patsubst %/,%,$(dir $(CUDNN_HEADER)))
  NVCC_FLAGS += -DFOLDNORM_CUDNN $(if $(filter $(CUDNN_INCDIR),$(CUDA_HOME)/include /usr/include),,-I$(CUDNN_INCDIR))
  CUDA_LDLIBS += -lcudnn
endif
CUDA_HEADERS := $(wildcard llmc/cuda/*.cuh) $(LLMC_HEADERS) $(wildcard dev/cuda/*.cuh) test/test_cuda_compare.h test/test_helpers.h
# The host side: the llmc/ objects of every folder but the ones a GPU image
# may lack the libraries for (GPU machines have no pcre2, cJSON, protobuf-c
# or MPI): the files that include those headers are left out, found by grep.
CUDA_HOST_LIB := $(BUILD)/libllmc_cuda.a
CUDA_HOST_EXCLUDED := $(shell grep -l -E '^\#include (<(mpi|pcre2|cjson/cJSON)\.h>|"onnx\.pb-c\.h")' $(LLMC_SRCS))
CUDA_HOST_SRCS := $(filter-out $(CUDA_HOST_EXCLUDED),$(LLMC_SRCS))
CUDA_HOST_OBJS := $(patsubst llmc/%.c,$(BUILD)/llmc/%.o,$(CUDA_HOST_SRCS))
CUDA_LINK = mkdir -p $(@D) && $(CC) $(filter %.o,$^) $(CUDA_HOST_LIB) $(BLAS_LIBS) $(DNNL_LIBS) -lm -lz -fopenmp $(CUDA_LDLIBS) -o $@
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
