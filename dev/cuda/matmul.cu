// The matmul layouts of llmc/cuda/matmul_cublaslt.cuh on random data against the
// CPU kernels of llmc/kernels/matmul.c (the batched products, which have none there,
// against a loop in double): y = x W^T + b (bias epilogue), dx = dy W,
// dW += dy^T x (fp32, accumulated onto a random start), and the row-major
// strided-batched products with every transpose combination. Then the
// GPT-2 124M shapes are timed (TFLOP/s). The bias gradient's column sums
// (reduce.cuh) are checked against the CPU's. Odd sizes catch leading-dimension
// mistakes that square ones hide.
#include <string.h>

#include "common.cuh"
#include "cuda/matmul_cublaslt.cuh"
#include "cuda/reduce.cuh"

extern "C" {
#include "kernels/gelu.h"
#include "kernels/matmul.h"
}

static const double TOL = sizeof(floatX) == 4 ? 1e-5 : 2e-2;

static floatX *random_device(size_t n, float *host_ref, DevRng *rng) {
    floatX *h = (floatX *)host_alloc(n * sizeof(floatX));
    fill_random(h, host_ref, n, rng, 0.0f, 1.0f);
    floatX *d = to_device(h, n);
    free(h);
    return d;
}

static int check_linear(const MatmulContext *ctx, int N, int IC, int OC, DevRng *rng) {
    printf("linear N=%d IC=%d OC=%d (%s):\n", N, IC, OC, FLOATX_NAME);
    float *x = (float *)host_alloc((size_t)N * IC * 4), *w = (float *)host_alloc((size_t)OC * IC * 4);
    float *b = (float *)host_alloc((size_t)OC * 4), *dy = (float *)host_alloc((size_t)N * OC * 4);
    float *dw0 = (float *)host_alloc((size_t)OC * IC * 4);
    floatX *dx_ = random_device((size_t)N * IC, x, rng), *dw_ = random_device((size_t)OC * IC, w, rng);
    floatX *db_ = random_device(OC, b, rng), *ddy = random_device((size_t)N * OC, dy, rng);
    for (size_t i = 0; i < (size_t)OC * IC; i++) dw0[i] = dev_uniform(rng);
    float *dweight = to_device(dw0, (size_t)OC * IC);
    floatX *y, *dinp;
    CUDA_CHECK(cudaMalloc(&y, (size_t)N * OC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dinp, (size_t)N * IC * sizeof(floatX)));
    matmul_forward_cuda(ctx, y, dx_, dw_, db_, N, IC, OC);
    matmul_backward_cuda(ctx, dinp, dweight, ddy, dx_, dw_, N, IC, OC);
    CUDA_CHECK(cudaDeviceSynchronize());
    // the oracle: llmc/kernels/matmul.c (the tested CPU kernels; dinp and dweight accumulate)
    float *fy = (float *)host_alloc((size_t)N * OC * 4), *fdx = (float *)host_alloc((size_t)N * IC * 4);
    float *fdw = (float *)host_alloc((size_t)OC * IC * 4);
    memset(fdx, 0, (size_t)N * IC * 4);
    memcpy(fdw, dw0, (size_t)OC * IC * 4);
    matmul_forward(fy, x, w, b, N, IC, OC);
    matmul_backward(fdx, fdw, NULL, dy, x, w, N, IC, OC);
    double *ry = (double *)host_alloc((size_t)N * OC * 8), *rdx = (double *)host_alloc((size_t)N * IC * 8);
    double *rdw = (double *)host_alloc((size_t)OC * IC * 8);
    for (size_t i = 0; i < (size_t)N * OC; i++) ry[i] = fy[i];
    for (size_t i = 0; i < (size_t)N * IC; i++) rdx[i] = fdx[i];
    for (size_t i = 0; i < (size_t)OC * IC; i++) rdw[i] = fdw[i];
    free(fy);
    free(fdx);
    free(fdw);
    float *got = (float *)host_alloc((size_t)(N > OC ? N : OC) * (IC > OC ? IC : OC) * 4);
    int ok = 1;
    floatx_to_host(got, y, (size_t)N * OC);
    ok &= check_tensor("y = x W^T + b", got, ry, (size_t)N * OC, TOL);
    floatx_to_host(got, dinp, (size_t)N * IC);
    ok &= check_tensor("dx = dy W", got, rdx, (size_t)N * IC, TOL);
    float_to_host(got, dweight, (size_t)OC * IC);
    ok &= check_tensor("dW += dy^T x", got, rdw, (size_t)OC * IC, TOL);
    void *device[] = {dx_, dw_, db_, ddy, dweight, y, dinp};
    for (void *p : device) CUDA_CHECK(cudaFree(p));
    void *host[] = {x, w, b, dy, dw0, ry, rdx, rdw, got};
    for (void *p : host) free(p);
    return ok;
}

// db (fp32) += the column sums of dy (N, OC) (reduce.cuh: fixed chunks of
// rows, then the chunks in a fixed grouped order) against llmc/kernels/matmul.c's
// bias gradient, onto a random start; OC % PACK_X == 0 takes the 16-byte
// kernel, other widths the one-column kernel.
static int check_bias_grad(int N, int OC, DevRng *rng) {
    printf("bias gradient N=%d OC=%d (%s, %s loads, %d chunks):\n", N, OC, FLOATX_NAME,
           OC % PACK_X == 0 ? "16-byte" : "scalar", column_sum_chunks(N));
    float *dy = (float *)host_alloc((size_t)N * OC * 4), *db0 = (float *)host_alloc((size_t)OC * 4);
    floatX *ddy = random_device((size_t)N * OC, dy, rng);
    for (int c = 0; c < OC; c++) db0[c] = dev_uniform(rng);
    float *ddb = to_device(db0, OC);
    float *scratch;
    CUDA_CHECK(cudaMalloc(&scratch, (size_t)column_sum_chunks(N) * OC * sizeof(float)));
    column_sum_accumulate(ddb, scratch, ddy, N, OC, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    float *fdb = (float *)host_alloc((size_t)OC * 4), *got = (float *)host_alloc((size_t)OC * 4);
    memcpy(fdb, db0, (size_t)OC * 4);
    matmul_backward(NULL, NULL, fdb, dy, NULL, NULL, N, 1, OC);
    double *ref = (double *)host_alloc((size_t)OC * 8);
    for (int c = 0; c < OC; c++) ref[c] = fdb[c];
    float_to_host(got, ddb, OC);
    int ok = check_tensor("db += sum_n dy", got, ref, OC, 1e-5); // fp32 sums either way
    CUDA_CHECK(cudaFree(ddy));
    CUDA_CHECK(cudaFree(ddb));
    CUDA_CHECK(cudaFree(scratch));
    void *host[] = {dy, db0, fdb, got, ref};
    for (void *p : host) free(p);
    return ok;
}

// The fused epilogues (matmul_cublaslt.cuh) against the CPU kernels of
// llmc/kernels/matmul.c and gelu.c (the tanh GELU, checked against PyTorch
// in test_kernels): forward GELU_AUX_BIAS (pre = x W^T + b kept, y =
// GELU(pre)); DGELU_BGRAD (dpre = (dy W) GELU'(pre), db = column sums of
// dpre); BGRADB (dW += dy^T x onto a random start, db = column sums of dy,
// overwritten). A device whose cuBLASLt has no algorithm for one says SKIP.
static int check_fused(const MatmulContext *ctx, int N, int IC, int OC, DevRng *rng) {
    printf("fused epilogues N=%d IC=%d OC=%d (%s):\n", N, IC, OC, FLOATX_NAME);
    const size_t nx = (size_t)N * IC, nw = (size_t)OC * IC, ny = (size_t)N * OC;
    float *x = (float *)host_alloc(nx * 4), *w = (float *)host_alloc(nw * 4);
    float *b = (float *)host_alloc((size_t)OC * 4), *dy = (float *)host_alloc(ny * 4);
    float *pre_in = (float *)host_alloc(nx * 4), *dw0 = (float *)host_alloc(nw * 4);
    floatX *d_x = random_device(nx, x, rng), *d_w = random_device(nw, w, rng);
    floatX *d_b = random_device(OC, b, rng), *d_dy = random_device((size_t)N * OC, dy, rng);
    floatX *d_pre_in = random_device((size_t)N * IC, pre_in, rng);
    for (size_t i = 0; i < (size_t)OC * IC; i++) dw0[i] = dev_uniform(rng);
    float *d_dw = to_device(dw0, (size_t)OC * IC);
    floatX *d_y, *d_pre, *d_dpre;
    float *d_db_pre, *d_db;
    CUDA_CHECK(cudaMalloc(&d_y, (size_t)N * OC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_pre, (size_t)N * OC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_dpre, (size_t)N * IC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_db_pre, (size_t)IC * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_db, (size_t)OC * sizeof(float)));
    const int fwd = matmul_forward_gelu_cuda(ctx, d_y, d_pre, d_x, d_w, d_b, N, IC, OC);
    const int dgelu =
        matmul_backward_dgelu_cuda(ctx, d_dpre, d_db_pre, d_dy, d_w, d_pre_in, N, IC, OC);
    const int bgrad = matmul_backward_weight_bgrad_cuda(ctx, d_dw, d_db, d_dy, d_x, N, IC, OC);
    CUDA_CHECK(cudaDeviceSynchronize());
    // the oracle
    float *fpre = (float *)host_alloc(ny * 4), *fy = (float *)host_alloc(ny * 4);
    float *fdx = (float *)host_alloc(nx * 4), *fdpre = (float *)host_alloc(nx * 4);
    float *fdb_pre = (float *)calloc((size_t)IC, 4), *fdb = (float *)calloc((size_t)OC, 4);
    float *fdw = (float *)host_alloc((size_t)OC * IC * 4);
    matmul_forward(fpre, x, w, b, N, IC, OC);
    gelu_forward(fy, fpre, (size_t)N * OC);
    memset(fdx, 0, (size_t)N * IC * 4);
    memcpy(fdw, dw0, (size_t)OC * IC * 4);
    matmul_backward(fdx, fdw, fdb, dy, x, w, N, IC, OC);
    gelu_backward(fdpre, pre_in, fdx, (size_t)N * IC);
    matmul_backward(NULL, NULL, fdb_pre, fdpre, NULL, NULL, N, 1, IC);
    const size_t most = (size_t)N * (IC > OC ? IC : OC) + (size_t)OC * IC;
    double *ref = (double *)host_alloc(most * 8);
    float *got = (float *)host_alloc(most * 4);
    int ok = 1;
    // tensor NAME: device ptr (floatX or fp32) against host fp32 values
    auto compare = [&](const char *name, const void *dev, bool is_x, const float *want, size_t n) {
        for (size_t i = 0; i < n; i++) ref[i] = want[i];
        if (is_x) floatx_to_host(got, (const floatX *)dev, n);
        else float_to_host(got, (const float *)dev, n);
        ok &= check_tensor(name, got, ref, n, TOL);
    };
    if (fwd) {
        compare("GELU_AUX_BIAS aux = x W^T + b", d_pre, true, fpre, (size_t)N * OC);
        compare("GELU_AUX_BIAS y = GELU(aux)", d_y, true, fy, (size_t)N * OC);
    } else {
        printf("SKIP GELU_AUX_BIAS: cuBLASLt has no algorithm here\n");
    }
    if (dgelu) {
        compare("DGELU_BGRAD dpre = (dy W) GELU'(pre)", d_dpre, true, fdpre, (size_t)N * IC);
        compare("DGELU_BGRAD db = sum_n dpre", d_db_pre, false, fdb_pre, (size_t)IC);
    } else {
        printf("SKIP DGELU_BGRAD: cuBLASLt has no algorithm here\n");
    }
    if (bgrad) {
        compare("BGRADB dW += dy^T x", d_dw, false, fdw, (size_t)OC * IC);
        compare("BGRADB db = sum_n dy", d_db, false, fdb, (size_t)OC);
    } else {
        printf("SKIP BGRADB: cuBLASLt has no algorithm here\n");
    }
    void *device[] = {d_x, d_w, d_b, d_dy, d_pre_in, d_dw, d_y, d_pre, d_dpre, d_db_pre, d_db};
    for (void *p : device) CUDA_CHECK(cudaFree(p));
    void *host[] = {x, w, b, dy, pre_in, dw0, fpre, fy, fdx, fdpre, fdb_pre, fdb, fdw, ref, got};
    for (void *p : host) free(p);
    return ok;
}

// C (M, N) = op(A) op(B) per batch, row-major, fp32 output
static int check_batched(const MatmulContext *ctx, int batch, int M, int N, int K, bool ta, bool tb,
                         DevRng *rng) {
    const size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *a = (float *)host_alloc(batch * na * 4), *b = (float *)host_alloc(batch * nb * 4);
    floatX *da = random_device(batch * na, a, rng), *db = random_device(batch * nb, b, rng);
    float *dc;
    CUDA_CHECK(cudaMalloc(&dc, batch * nc * sizeof(float)));
    batched_matmul_rowmajor(ctx, dc, CUDA_R_32F, da, db, M, N, K, ta, tb, (long long)na,
                            (long long)nb, (long long)nc, batch, 1.0f, 0.0f);
    CUDA_CHECK(cudaDeviceSynchronize());
    double *ref = (double *)host_alloc(batch * nc * 8);
    for (int z = 0; z < batch; z++) {
        for (int i = 0; i < M; i++) {
            for (int j = 0; j < N; j++) {
                double s = 0.0;
                for (int k = 0; k < K; k++) {
                    // A is (M, K), or stored (K, M); B is (K, N), or stored (N, K)
                    double av = ta ? a[z * na + (size_t)k * M + i] : a[z * na + (size_t)i * K + k];
                    double bv = tb ? b[z * nb + (size_t)j * K + k] : b[z * nb + (size_t)k * N + j];
                    s += av * bv;
                }
                ref[z * nc + (size_t)i * N + j] = s;
            }
        }
    }
    float *got = (float *)host_alloc(batch * nc * 4);
    float_to_host(got, dc, batch * nc);
    char name[64];
    snprintf(name, sizeof(name), "batched %s%s", ta ? "A^T" : "A", tb ? "B^T" : "B");
    printf("batched %d x (%d, %d, %d) transA=%d transB=%d:\n", batch, M, N, K, ta, tb);
    int ok = check_tensor(name, got, ref, batch * nc, TOL);
    CUDA_CHECK(cudaFree(da));
    CUDA_CHECK(cudaFree(db));
    CUDA_CHECK(cudaFree(dc));
    free(a);
    free(b);
    free(ref);
    free(got);
    return ok;
}

static void time_linear(const MatmulContext *ctx, int N, int IC, int OC) {
    floatX *x, *w, *b, *y, *dy, *dx;
    float *dw;
    CUDA_CHECK(cudaMalloc(&x, (size_t)N * IC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&w, (size_t)OC * IC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&b, (size_t)OC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&y, (size_t)N * OC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dy, (size_t)N * OC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dx, (size_t)N * IC * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dw, (size_t)OC * IC * sizeof(float)));
    CUDA_CHECK(cudaMemset(x, 0, (size_t)N * IC * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(w, 0, (size_t)OC * IC * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(b, 0, (size_t)OC * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(dy, 0, (size_t)N * OC * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(dw, 0, (size_t)OC * IC * sizeof(float)));
    const double flops = 2.0 * N * IC * OC;
    float fwd = time_ms([&] { matmul_forward_cuda(ctx, y, x, w, b, N, IC, OC); }, 10);
    float bwd = time_ms([&] { matmul_backward_cuda(ctx, dx, dw, dy, x, w, N, IC, OC); }, 10);
    printf("RESULT matmul %s N=%d IC=%d OC=%d fwd %.3f ms %.0f TFLOP/s | bwd %.3f ms %.0f TFLOP/s "
           "(zeros)\n", FLOATX_NAME, N, IC, OC, fwd, flops / (fwd * 1e-3) / 1e12, bwd,
           2 * flops / (bwd * 1e-3) / 1e12);
    void *device[] = {x, w, b, y, dy, dx, dw};
    for (void *p : device) CUDA_CHECK(cudaFree(p));
}

int main(void) {
    if (!cuda_device_present("dev/cuda/matmul")) return EXIT_SUCCESS;
    MatmulContext ctx;
    matmul_context_create(&ctx);
    DevRng rng = {0x2545F4914F6CDD1Dull};
    int ok = 1;
    ok &= check_linear(&ctx, 40, 64, 96, &rng);
    ok &= check_linear(&ctx, 72, 96, 384, &rng);
    ok &= check_linear(&ctx, 24, 256, 64, &rng);
    // GELU aux widths (OC forward, IC backward) multiples of 8, as cuBLASLt wants
    ok &= check_fused(&ctx, 40, 64, 96, &rng);
    ok &= check_fused(&ctx, 24, 96, 40, &rng);
    // several chunks with a partial last one; a width of 16-byte packs and one that is not
    ok &= check_bias_grad(3 * COLUMN_SUM_ROWS_PER_CHUNK + 17, 96, &rng);
    ok &= check_bias_grad(2 * COLUMN_SUM_ROWS_PER_CHUNK + 5, 37, &rng);
    for (int t = 0; t < 4; t++) ok &= check_batched(&ctx, 3, 24, 40, 16, t & 1, t & 2, &rng);
    for (int t = 0; t < 4; t++) ok &= check_batched(&ctx, 2, 16, 8, 40, t & 1, t & 2, &rng);
    // GPT-2 124M, B*T = 32768: qkv, attn proj, fc, fc proj, the LM head
    const int shapes[5][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}, {768, 50304}};
    for (int i = 0; i < 5 && !dev_check_only(); i++) time_linear(&ctx, 32768, shapes[i][0], shapes[i][1]);
    matmul_context_destroy(&ctx);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
