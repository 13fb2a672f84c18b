// CUDA emulation: the emulator's own checks must fire. Each case below is a
// bug the emulator promises to report; `selftest CASE` must abort with the
// message test/suites/cuda_emu.sh expects, `selftest ok` must pass (shared
// memory, shuffles and a GEMM that are right). Built only under emulation.
#include <stdio.h>
#include <string.h>

#include "cuda_common.cuh"

__global__ void divergent_barrier_kernel(float *x) {
    if (threadIdx.x < 16) return; // half the block leaves before the barrier
    __syncthreads();
    x[threadIdx.x] = 1.0f;
}

__global__ void exited_lane_kernel(float *x) {
    if (threadIdx.x == 5) return; // lane 5 leaves before the shuffle
    x[threadIdx.x] = warp_sum(1.0f);
}

__global__ void uninitialised_shared_kernel(float *out) {
    __shared__ float tile[64];
    if (threadIdx.x < 32) tile[threadIdx.x] = 1.0f; // the upper half is never written
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x];
}

__global__ void reduce_kernel(float *out, const float *x) {
    __shared__ float partial[2];
    float v = warp_sum(x[threadIdx.x]);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) *out = partial[0] + partial[1];
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "ok";
    float *x;
    CUDA_CHECK(cudaMalloc(&x, 64 * sizeof(float)));
    if (strcmp(c, "divergent") == 0) divergent_barrier_kernel<<<1, 32>>>(x);
    if (strcmp(c, "exited-lane") == 0) exited_lane_kernel<<<1, 32>>>(x);
    if (strcmp(c, "block-size") == 0) divergent_barrier_kernel<<<1, 2048>>>(x);
    if (strcmp(c, "grid-y") == 0) divergent_barrier_kernel<<<dim3(1, 70000), 32>>>(x);
    if (strcmp(c, "shared-size") == 0) divergent_barrier_kernel<<<1, 32, 64 << 10>>>(x);
    if (strcmp(c, "memcpy-overrun") == 0) {
        float h[65];
        CUDA_CHECK(cudaMemcpy(x, h, sizeof(h), cudaMemcpyHostToDevice));
    }
    if (strcmp(c, "gemm-ld") == 0 || strcmp(c, "gemm-range") == 0) {
        cublasHandle_t h;
        CUBLAS_CHECK(cublasCreate(&h));
        const float one = 1.0f, zero = 0.0f;
        // 8x8 = 8x8 * 8x8 in 64 floats; gemm-ld: lda 4 < 8 rows; gemm-range: 9 columns overrun
        const int n = strcmp(c, "gemm-range") == 0 ? 9 : 8, lda = strcmp(c, "gemm-ld") == 0 ? 4 : 8;
        CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, n, 8, &one, x, lda, x, 8, &zero, x, 8));
    }
    if (strcmp(c, "nan-shared") == 0 || strcmp(c, "ok") == 0) {
        float h[64], out;
        for (int i = 0; i < 64; i++) h[i] = (float)i;
        CUDA_CHECK(cudaMemcpy(x, h, sizeof(h), cudaMemcpyHostToDevice));
        float *y;
        CUDA_CHECK(cudaMalloc(&y, 64 * sizeof(float)));
        if (strcmp(c, "nan-shared") == 0) {
            uninitialised_shared_kernel<<<1, 64>>>(y);
            CUDA_CHECK(cudaMemcpy(h, y, sizeof(h), cudaMemcpyDeviceToHost));
            printf("shared memory never written reads %s\n", isnan(h[40]) ? "NaN" : "a number");
            out = isnan(h[40]) ? 0.0f : 2016.0f; // NaN: the check fired, exit 1
        } else {
            reduce_kernel<<<1, 64>>>(y, x);
            CUDA_CHECK(cudaMemcpy(&out, y, sizeof(out), cudaMemcpyDeviceToHost));
            printf("sum 0..63 = %g (expected 2016)\n", out);
        }
        CUDA_CHECK(cudaFree(x));
        CUDA_CHECK(cudaFree(y));
        return out == 2016.0f ? 0 : 1;
    }
    printf("no emulator check fired for '%s'\n", c);
    CUDA_CHECK(cudaFree(x));
    return 0;
}
