// Which attention kernels a GPU model runs (the trainers' -at flag, the test
// programs' -at): one name per kernel family, turned into the enum once.
//   tc      tensor cores, flash-style (flash_attention_tc.cuh; Swin:
//           swin_window_attention_tc.cuh): bf16 mma, only the per-row lse kept;
//           bf16 builds only, their default
//   cublas  batched cuBLAS matmuls + a softmax kernel (attention.cuh): the
//           (T, T) probabilities kept per layer; GPT-2 and ViT
//   flash   fp32 FMAs from shared memory, flash-style (flash_attention.cuh);
//           GPT-2 and ViT, the fp32 builds' default
//   window  Swin's fp32-FMA window kernel (swin_window_attention.cuh), which
//           keeps the (T, T) probabilities of each window; the fp32 default
//   cudnn   cuDNN's fused flash attention (cudnn_attention.cuh), the same lse
//           kept; GPT-2 and ViT, bf16 builds that found cudnn.h
#ifndef FOLDNORM_ATTENTION_KIND_CUH
#define FOLDNORM_ATTENTION_KIND_CUH

#include <string.h>

#include "cudnn_attention.cuh" // cudnn_attention_unavailable

typedef enum { ATTENTION_TC, ATTENTION_CUBLAS, ATTENTION_FLASH, ATTENTION_WINDOW, ATTENTION_CUDNN } AttentionKind;
#define ATTENTION_KIND_COUNT 5

static const char *const ATTENTION_KIND_NAMES[] = {"tc", "cublas", "flash", "window", "cudnn"};

static inline const char *attention_kind_name(AttentionKind k) { return ATTENTION_KIND_NAMES[k]; }

// 0 and *k set when name is one of the names, else -1
static inline int attention_kind_parse(const char *name, AttentionKind *k) {
    for (int i = 0; i < ATTENTION_KIND_COUNT; i++) {
        if (strcmp(name, ATTENTION_KIND_NAMES[i]) == 0) {
            *k = (AttentionKind)i;
            return 0;
        }
    }
    return -1;
}

// the build's default: tc in bf16; in fp32 flash, or window for Swin (windowed)
static inline AttentionKind attention_kind_default(bool windowed) {
#ifdef FOLDNORM_FP32
    return windowed ? ATTENTION_WINDOW : ATTENTION_FLASH;
#else
    (void)windowed;
    return ATTENTION_TC;
#endif
}

// NULL when kind runs in this build for the family (windowed: Swin), else why not
static inline const char *attention_kind_refusal(AttentionKind k, bool windowed) {
#ifdef FOLDNORM_FP32
    if (k == ATTENTION_TC) {
        return "the tensor-core kernels take bf16: an fp32 build keeps its fp32 attention "
               "(flash, or window for Swin; also cublas for GPT-2 and ViT)";
    }
#endif
    if (windowed && (k == ATTENTION_CUBLAS || k == ATTENTION_FLASH || k == ATTENTION_CUDNN)) {
        return "Swin's window attention is tc or window";
    }
    if (!windowed && k == ATTENTION_WINDOW) {
        return "window is Swin's kernel (GPT-2 and ViT: tc, cublas, flash or cudnn)";
    }
    if (k == ATTENTION_CUDNN) return cudnn_attention_unavailable(); // NULL: this build has it
    return NULL;
}

#endif
