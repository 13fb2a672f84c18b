// Helpers for the dev/cuda kernel programs (llm.c's dev style): random
// inputs, checks against a CPU reference, timing with CUDA events and the
// device-to-device copy bandwidth that the memory-bound kernels are held to.
#ifndef FOLDNORM_DEV_CUDA_COMMON_CUH
#define FOLDNORM_DEV_CUDA_COMMON_CUH

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/cuda_common.cuh"

// xorshift64*; uniform in [-1, 1)
typedef struct {
    uint64_t s;
} DevRng;
static inline float dev_uniform(DevRng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    uint32_t bits = (uint32_t)((r->s * 2685821657736338717ull) >> 40); // 24 bits
    return (float)bits / (float)(1u << 23) - 1.0f;
}

// DEV_CUDA_CHECK_ONLY=1: the correctness checks at small shapes only, no
// timings (the emulated suite: build/emu/dev/cuda, a logic check, not a device run)
static inline bool dev_check_only(void) {
    const char *v = getenv("DEV_CUDA_CHECK_ONLY");
    return v != NULL && v[0] == '1';
}

// The random state from an optional decimal seed argument (a test suite's
// seed, so a failure replays), else fallback; exits on anything else.
static inline DevRng dev_rng_from_args(int argc, char **argv, uint64_t fallback) {
    if (argc < 2) return DevRng{fallback};
    char *end = NULL;
    unsigned long long seed = strtoull(argv[1], &end, 10);
    if (argc > 2 || end == argv[1] || *end != '\0' || argv[1][0] == '-') {
        fprintf(stderr, "error: %s: expected at most one argument, a decimal seed (got '%s')\n",
                argv[0], argv[1]);
        exit(EXIT_FAILURE);
    }
    // splitmix64's mixing: nearby seeds give unrelated states, never 0 (xorshift's fixed point)
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return DevRng{z != 0 ? z : fallback};
}

static inline void *host_alloc(size_t bytes) {
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "error: out of host memory (%zu bytes)\n", bytes);
        exit(EXIT_FAILURE);
    }
    return p;
}

// x[i] = offset + scale * u, rounded to floatX (the host keeps the rounded value in ref)
static inline void fill_random(floatX *x, float *ref, size_t n, DevRng *r, float offset,
                               float scale) {
    for (size_t i = 0; i < n; i++) {
        x[i] = from_float<floatX>(offset + scale * dev_uniform(r));
        ref[i] = to_float(x[i]);
    }
}

template <typename T> static inline T *to_device(const T *host, size_t n) {
    T *d = NULL;
    CUDA_CHECK(cudaMalloc((void **)&d, n * sizeof(T)));
    CUDA_CHECK(cudaMemcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

// device floatX/float -> host float
static inline void floatx_to_host(float *out, const floatX *d, size_t n) {
    floatX *tmp = (floatX *)host_alloc(n * sizeof(floatX));
    CUDA_CHECK(cudaMemcpy(tmp, d, n * sizeof(floatX), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) out[i] = to_float(tmp[i]);
    free(tmp);
}
static inline void float_to_host(float *out, const float *d, size_t n) {
    CUDA_CHECK(cudaMemcpy(out, d, n * sizeof(float), cudaMemcpyDeviceToHost));
}

// max|gpu - ref| / max|ref|; prints one line, returns 1 when within tol
static inline int check_tensor(const char *what, const float *gpu, const double *ref, size_t n,
                               double tol) {
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)gpu[i] - ref[i]);
        if (!(d <= max_diff)) max_diff = d;
        if (fabs(ref[i]) > max_ref) max_ref = fabs(ref[i]);
    }
    double err = max_ref > 0.0 ? max_diff / max_ref : max_diff;
    int ok = isfinite(err) && err <= tol;
    printf("  %-16s rel err %.3e (tol %.0e) %s\n", what, err, tol, ok ? "ok" : "FAIL");
    return ok;
}

// the same over part p (0: q, 1: k, 2: v) of rows of 3C values (dqkv)
static inline int check_tensor_part(const char *what, const float *gpu, const float *ref,
                                    size_t rows, int C, int p, double tol) {
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (int c = 0; c < C; c++) {
            const size_t i = r * 3 * C + (size_t)p * C + c;
            const double d = fabs((double)gpu[i] - ref[i]);
            if (!(d <= max_diff)) max_diff = d;
            if (fabs(ref[i]) > max_ref) max_ref = fabs(ref[i]);
        }
    }
    double err = max_ref > 0.0 ? max_diff / max_ref : max_diff;
    int ok = isfinite(err) && err <= tol;
    printf("  %-16s rel err %.3e (tol %.0e) %s\n", what, err, tol, ok ? "ok" : "FAIL");
    return ok;
}
static inline int check_qkv_parts(const float *gpu, const float *ref, size_t rows, int C,
                                  double tol) {
    int ok = check_tensor_part("dq", gpu, ref, rows, C, 0, tol); // in this order
    ok &= check_tensor_part("dk", gpu, ref, rows, C, 1, tol);
    ok &= check_tensor_part("dv", gpu, ref, rows, C, 2, tol);
    return ok;
}

// milliseconds per call of fn (a lambda launching the kernel), after warmup
template <typename F> static inline float time_ms(F fn, int repeats) {
    fn();
    CUDA_CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < repeats; i++) fn();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return ms / repeats;
}

// device-to-device copy bandwidth in GB/s (bytes read + written), 1 GiB buffers
static inline double copy_bandwidth_gbs(void) {
    const size_t bytes = (size_t)1 << 30;
    void *a, *b;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMemset(a, 1, bytes));
    float ms = time_ms([&] { CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); }, 10);
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    return 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
}

#endif
