// Swin's PatchMerging gather (llmc/cuda/swin_patch_merge.cuh) against the CPU
// Swin's (llmc/kernels/swin_window.c) on random activations: the forward gather and
// the backward scatter, in 16-byte packs (C a multiple of the pack) and
// element-wise (C not, or a buffer not 16-byte aligned). Both are copies, so
// the check is exact: tolerance 0 in fp32 and bf16 (the CPU reads the same
// rounded values). The backward overwrites dx: it starts as NaN bytes.
// Then timed at Swin-T's first merge (56x56 -> 28x28, C 96, B=64) against
// the copy bandwidth.
#include <string.h>

#include "common.cuh"
#include "cuda/swin_patch_merge.cuh"

extern "C" {
#include "kernels/swin_window.h"
}

// offset: elements by which the device buffers start past a 16-byte boundary
static int check(int B, int res_out, int C, int offset, DevRng *rng) {
    const size_t n = (size_t)B * res_out * res_out * 4 * C; // = B (2 res_out)^2 C
    printf("swin patch merge B=%d res_out=%d C=%d offset=%d (%s, %s):\n", B, res_out, C, offset,
           FLOATX_NAME, offset == 0 && C % PACK_X == 0 ? "16-byte packs" : "element-wise");
    floatX *h = (floatX *)host_alloc(n * sizeof(floatX));
    float *x = (float *)host_alloc(n * 4), *dmerged = (float *)host_alloc(n * 4);
    float *merged = (float *)host_alloc(n * 4), *dx = (float *)host_alloc(n * 4);
    float *got = (float *)host_alloc(n * 4);
    floatX *d_x, *d_merged, *d_dmerged, *d_dx;
    CUDA_CHECK(cudaMalloc(&d_x, (n + offset) * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_merged, (n + offset) * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dmerged, (n + offset) * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dx, (n + offset) * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(d_dx, 0xFF, (n + offset) * sizeof(floatX)));
    fill_random(h, x, n, rng, 0.0f, 1.0f);
    CUDA_CHECK(cudaMemcpy(d_x + offset, h, n * sizeof(floatX), cudaMemcpyHostToDevice));
    fill_random(h, dmerged, n, rng, 0.0f, 1.0f);
    CUDA_CHECK(cudaMemcpy(d_dmerged + offset, h, n * sizeof(floatX), cudaMemcpyHostToDevice));
    swin_patch_merge_forward_cuda(d_merged + offset, d_x + offset, B, res_out, C, 0);
    swin_patch_merge_backward_cuda(d_dx + offset, d_dmerged + offset, B, res_out, C, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    swin_patch_merge_forward(merged, x, B, res_out, C);
    swin_patch_merge_backward(dx, dmerged, B, res_out, C);
    double *ref = (double *)host_alloc(n * sizeof(double));
    int ok = 1;
    for (size_t i = 0; i < n; i++) ref[i] = merged[i];
    floatx_to_host(got, d_merged + offset, n);
    ok &= check_tensor("merged", got, ref, n, 0.0);
    for (size_t i = 0; i < n; i++) ref[i] = dx[i];
    floatx_to_host(got, d_dx + offset, n);
    ok &= check_tensor("dx", got, ref, n, 0.0);
    void *dev[] = {d_x, d_merged, d_dmerged, d_dx};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {h, x, dmerged, merged, dx, got, ref};
    for (void *p : host) free(p);
    return ok;
}

static void timing(int B, int res_out, int C) {
    const size_t n = (size_t)B * res_out * res_out * 4 * C;
    floatX *x, *merged;
    CUDA_CHECK(cudaMalloc(&x, n * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&merged, n * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(x, 0, n * sizeof(floatX)));
    float fwd = time_ms([&] { swin_patch_merge_forward_cuda(merged, x, B, res_out, C, 0); }, 10);
    float bwd = time_ms([&] { swin_patch_merge_backward_cuda(x, merged, B, res_out, C, 0); }, 10);
    const double gb = 2.0 * n * sizeof(floatX) / 1e9;
    printf("RESULT swin_patch_merge %s B=%d res_out=%d C=%d fwd %.3f ms (%.0f GB/s) | bwd %.3f ms "
           "(%.0f GB/s) | copy %.0f GB/s\n",
           FLOATX_NAME, B, res_out, C, fwd, gb / (fwd * 1e-3), bwd, gb / (bwd * 1e-3),
           copy_bandwidth_gbs());
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(merged));
}

int main(int argc, char **argv) {
    DevRng rng = dev_rng_from_args(argc, argv, 0x2545F4914F6CDD1Dull); // [SEED]
    if (!cuda_device_present("dev/cuda/swin_patch_merge")) return EXIT_SUCCESS;
    int ok = 1;
    ok &= check(2, 4, 48, 0, &rng);  // packs in fp32 and bf16
    ok &= check(1, 7, 96, 0, &rng);  // Swin-T's first merge at 1/4 the resolution
    ok &= check(3, 2, 6, 0, &rng);   // C not a multiple of a pack
    ok &= check(2, 3, 16, 1, &rng);  // misaligned buffers: element-wise
    if (!dev_check_only()) timing(64, 28, 96);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
