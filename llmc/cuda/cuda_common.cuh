// Shared CUDA helpers: checked calls (the call, file and line in every
// message), the activation type floatX (bf16 by default, fp32 with
// -DFOLDNORM_FP32), 16-byte packs and warp/block reductions.
#ifndef FOLDNORM_CUDA_COMMON_CUH
#define FOLDNORM_CUDA_COMMON_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_CHECK(call) cuda_check_((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) cublas_check_((call), #call, __FILE__, __LINE__)
// after a kernel launch: launch errors (bad configuration) surface here
#define CUDA_CHECK_LAUNCH() cuda_check_(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

static inline void cuda_check_(cudaError_t err, const char *call, const char *file, int line) {
    if (err != cudaSuccess) {
        fprintf(stderr, "error: %s failed at %s:%d: %s (%s)\n", call, file, line,
                cudaGetErrorString(err), cudaGetErrorName(err));
        exit(EXIT_FAILURE);
    }
}

static inline void cublas_check_(cublasStatus_t status, const char *call, const char *file,
                                 int line) {
    if (status != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "error: %s failed at %s:%d: cuBLAS status %d (%s)\n", call, file, line,
                (int)status, cublasGetStatusString(status));
        exit(EXIT_FAILURE);
    }
}

#ifdef FOLDNORM_FP32
typedef float floatX;
#define FLOATX_CUDA_TYPE CUDA_R_32F
#define FLOATX_NAME "fp32"
#else
typedef __nv_bfloat16 floatX;
#define FLOATX_CUDA_TYPE CUDA_R_16BF
#define FLOATX_NAME "bf16"
#endif

__host__ __device__ inline float to_float(float x) { return x; }
__host__ __device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __host__ __device__ inline T from_float(float x);
template <> __host__ __device__ inline float from_float<float>(float x) { return x; }
template <> __host__ __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
    return __float2bfloat16(x);
}

// 16 bytes of T, loaded and stored as one vector access.
template <typename T> struct alignas(16) Pack {
    static constexpr int size = 16 / (int)sizeof(T);
    T v[16 / sizeof(T)];
};
template <typename T> __device__ inline Pack<T> load_pack(const T *p) {
    return *reinterpret_cast<const Pack<T> *>(p);
}
template <typename T> __device__ inline void store_pack(T *p, const Pack<T> &x) {
    *reinterpret_cast<Pack<T> *>(p) = x;
}
// elements of floatX in one 16-byte pack; C must be a multiple of this
#define PACK_X (16 / (int)sizeof(floatX))

__device__ inline float warp_sum(float x) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        x += __shfl_xor_sync(0xffffffffu, x, offset);
    }
    return x;
}
__device__ inline float warp_max(float x) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
    }
    return x;
}
// Sum over the block (blockDim.x a multiple of 32, at most 1024), returned to
// every thread. Uses 33 floats of shared memory; safe to call repeatedly.
__device__ inline float block_sum(float x) {
    __shared__ float warp_values[32];
    __shared__ float result;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    x = warp_sum(x);
    __syncthreads(); // the previous call's readers are done
    if (lane == 0) warp_values[warp] = x;
    __syncthreads();
    if (warp == 0) {
        float y = lane < warps ? warp_values[lane] : 0.0f;
        y = warp_sum(y);
        if (lane == 0) result = y;
    }
    __syncthreads();
    return result;
}

static inline int ceil_div(long long a, long long b) { return (int)((a + b - 1) / b); }

// the current device's number of SMs (grid sizes of the reduction kernels)
static inline int cuda_device_sm_count(void) {
    cudaDeviceProp prop;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    return prop.multiProcessorCount;
}

// "SKIP: no CUDA device (reason)" and 0 when there is none; else 1.
static inline int cuda_device_present(const char *program) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        printf("SKIP: no CUDA device (%s: %s)\n", program,
               err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount found 0 devices");
        return 0;
    }
    return 1;
}

#endif
