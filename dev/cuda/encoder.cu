// The embedding backward on the GPU (llmc/cuda/encoder.cuh) on random
// gradients of rows whose tokens are skewed as in text (half of them one
// token, a quarter another, ..., the rest uniform over V), so that the
// largest buckets hold hundreds of rows and are cut into many pieces.
//   dwte: bit for bit against a host sum in the order the kernels promise:
//     a token's rows (llmc/kernels/token_buckets.h) in increasing order, in
//     pieces of TOKEN_PIECE_ROWS consecutive rows, each summed from 0 in
//     float; the pieces' sums added in order from 0; that total added to the
//     token's row of dwte once (a bucket of one piece: the serial sum of its
//     rows, as before the pieces). dwte starts from random values (the LM
//     head's gradient comes first). cbwc's row shift is read back from the device.
//   dwte, dwpe: against llmc/kernels/encoder.c (fp32 rounding apart).
// Then timed at d12's shape (B=16, T=1024, C=768, V=50257) on the same skew.
#include <string.h>

#include "common.cuh"
#include "cuda/encoder.cuh"

extern "C" {
#include "kernels/encoder.h"
#include "kernels/token_buckets.h"
}

// half the rows: token k with probability 2^-(k+1); the rest uniform
static void skewed_tokens(int *tokens, int n, int V, DevRng *rng) {
    for (int i = 0; i < n; i++) {
        if (dev_uniform(rng) < 0.0f) {
            tokens[i] = (int)((dev_uniform(rng) + 1.0f) * 0.5f * (float)(V - 1));
            continue;
        }
        int t = 0;
        while (t < V - 1 && dev_uniform(rng) < 0.0f) t++;
        tokens[i] = t;
    }
}

// The buckets and their pieces on the device (as gpt2_cuda.cuh copies them).
typedef struct {
    TokenBuckets tb;
    TokenPieces tp;
    int *rows, *piece_start, *piece_dest, *split_token, *split_first;
    float *partials;
} DeviceBatch;

static void device_batch(DeviceBatch *d, const int *tokens, int n, int V, int C) {
    token_buckets_init(&d->tb, V, n);
    token_buckets_build(&d->tb, tokens, n);
    int *storage = (int *)host_alloc(token_pieces_ints(n) * sizeof(int));
    token_pieces_init_at(&d->tp, n, storage);
    token_pieces_build(&d->tp, &d->tb);
    d->rows = to_device(d->tb.rows, (size_t)n);
    d->piece_start = to_device(d->tp.piece_start, (size_t)d->tp.num_pieces + 1);
    d->piece_dest = to_device(d->tp.piece_dest, (size_t)d->tp.num_pieces);
    d->split_token = to_device(d->tp.split_token, (size_t)d->tp.num_split + 1);
    d->split_first = to_device(d->tp.split_first, (size_t)d->tp.num_split + 1);
    CUDA_CHECK(cudaMalloc(&d->partials, (size_t)token_pieces_max_slots(n) * C * sizeof(float)));
}

static void device_batch_free(DeviceBatch *d) {
    void *dev[] = {d->rows, d->piece_start, d->piece_dest, d->split_token, d->split_first,
                   d->partials};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    free(d->tp.piece_start); // the storage
    token_buckets_free(&d->tb);
}

static DeviceTokenBuckets device_view(const DeviceBatch *d) {
    DeviceTokenBuckets v;
    v.num_pieces = d->tp.num_pieces;
    v.num_split = d->tp.num_split;
    v.rows = d->rows;
    v.piece_start = d->piece_start;
    v.piece_dest = d->piece_dest;
    v.split_token = d->split_token;
    v.split_first = d->split_first;
    v.partials = d->partials;
    return v;
}

static int check(int B, int T, int C, int V, int centred, DevRng *rng) {
    const int n = B * T;
    printf("encoder backward B=%d T=%d C=%d V=%d %s (%s):\n", B, T, C, V,
           centred ? "cbwc" : "plain", FLOATX_NAME);
    int *tokens = (int *)host_alloc((size_t)n * sizeof(int));
    skewed_tokens(tokens, n, V, rng);
    DeviceBatch d;
    device_batch(&d, tokens, n, V, C);
    int largest = 0;
    for (int u = 0; u < d.tb.num_buckets; u++) {
        const int rows = d.tb.start[u + 1] - d.tb.start[u];
        largest = rows > largest ? rows : largest;
    }
    printf("  %d buckets, the largest %d rows; %d pieces, %d buckets split\n", d.tb.num_buckets,
           largest, d.tp.num_pieces, d.tp.num_split);
    const size_t nc = (size_t)n * C, vc = (size_t)V * C, tc = (size_t)T * C;
    floatX *h = (floatX *)host_alloc(nc * sizeof(floatX));
    float *dout = (float *)host_alloc(nc * sizeof(float));
    float *dwte0 = (float *)host_alloc(vc * sizeof(float)), *dwpe0 = (float *)host_alloc(tc * 4);
    fill_random(h, dout, nc, rng, 0.0f, 1.0f);
    for (size_t i = 0; i < vc; i++) dwte0[i] = dev_uniform(rng);
    for (size_t i = 0; i < tc; i++) dwpe0[i] = dev_uniform(rng);
    floatX *d_dout = to_device(h, nc);
    float *d_dwte = to_device(dwte0, vc), *d_dwpe = to_device(dwpe0, tc), *d_shift;
    CUDA_CHECK(cudaMalloc(&d_shift, (size_t)n * sizeof(float)));
    const DeviceTokenBuckets view = device_view(&d);
    encoder_backward_cuda(d_dwte, d_dwpe, d_shift, d_dout, &view, B, T, C, centred, 0);
    CUDA_CHECK(cudaDeviceSynchronize());
    const size_t most = vc > tc ? vc : tc; // got and ref hold dwte, then dwpe
    float *got = (float *)host_alloc(most * sizeof(float)), *shift = (float *)host_alloc(n * 4);
    float_to_host(shift, d_shift, (size_t)n);
    // the promised order, in float
    float *want = (float *)host_alloc(vc * sizeof(float));
    memcpy(want, dwte0, vc * sizeof(float));
    for (int u = 0; u < d.tb.num_buckets; u++) {
        const int e0 = d.tb.start[u], e1 = d.tb.start[u + 1];
        float *row = want + (size_t)d.tb.token[u] * C;
        for (int c = 0; c < C; c++) {
            float total = 0.0f;
            for (int p0 = e0; p0 < e1; p0 += TOKEN_PIECE_ROWS) {
                const int p1 = p0 + TOKEN_PIECE_ROWS < e1 ? p0 + TOKEN_PIECE_ROWS : e1;
                float piece = 0.0f;
                for (int e = p0; e < p1; e++) {
                    const int r = d.tb.rows[e];
                    piece += dout[(size_t)r * C + c] - shift[r];
                }
                total = p0 == e0 && p1 == e1 ? piece : total + piece;
            }
            row[c] += total;
        }
    }
    float_to_host(got, d_dwte, vc);
    size_t differ = 0;
    for (size_t i = 0; i < vc; i++) differ += memcmp(&got[i], &want[i], sizeof(float)) != 0;
    int ok = differ == 0;
    printf("  %-16s %zu of %zu values differ from the promised order %s\n", "dwte bits", differ, vc,
           ok ? "ok" : "FAIL");
    // and the CPU model's encoder (its own order: rows one by one into dwte)
    float *cpu_wte = (float *)host_alloc(vc * 4), *cpu_wpe = (float *)host_alloc(tc * 4);
    memcpy(cpu_wte, dwte0, vc * 4);
    memcpy(cpu_wpe, dwpe0, tc * 4);
    encoder_backward(cpu_wte, cpu_wpe, dout, tokens, B, T, C, centred);
    double *ref = (double *)host_alloc(most * sizeof(double));
    for (size_t i = 0; i < vc; i++) ref[i] = cpu_wte[i];
    ok &= check_tensor("dwte vs CPU", got, ref, vc, 1e-5);
    for (size_t i = 0; i < tc; i++) ref[i] = cpu_wpe[i];
    float_to_host(got, d_dwpe, tc);
    ok &= check_tensor("dwpe vs CPU", got, ref, tc, 1e-5);
    device_batch_free(&d);
    void *dev[] = {d_dout, d_dwte, d_dwpe, d_shift};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    void *host[] = {tokens, h, dout, dwte0, dwpe0, got, shift, want, cpu_wte, cpu_wpe, ref};
    for (void *p : host) free(p);
    return ok;
}

static void timing(int B, int T, int C, int V, DevRng *rng) {
    const int n = B * T;
    int *tokens = (int *)host_alloc((size_t)n * sizeof(int));
    skewed_tokens(tokens, n, V, rng);
    DeviceBatch d;
    device_batch(&d, tokens, n, V, C);
    floatX *dout;
    float *dwte, *dwpe, *shift;
    CUDA_CHECK(cudaMalloc(&dout, (size_t)n * C * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dwte, (size_t)V * C * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dwpe, (size_t)T * C * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&shift, (size_t)n * sizeof(float)));
    CUDA_CHECK(cudaMemset(dout, 0, (size_t)n * C * sizeof(floatX)));
    CUDA_CHECK(cudaMemset(dwte, 0, (size_t)V * C * sizeof(float)));
    CUDA_CHECK(cudaMemset(dwpe, 0, (size_t)T * C * sizeof(float)));
    const DeviceTokenBuckets view = device_view(&d);
    const float ms = time_ms([&] {
        encoder_backward_cuda(dwte, dwpe, shift, dout, &view, B, T, C, 0, 0);
    }, 20);
    // reads dout twice (row means, then the sums) and the touched dwte rows, writes them and dwpe
    const double gb = (2.0 * n * C * sizeof(floatX) + 2.0 * d.tb.num_buckets * C * 4 +
                       2.0 * T * C * 4) / 1e9;
    const int largest = d.tb.start[1] - d.tb.start[0];
    printf("RESULT encoder_backward %s B=%d T=%d C=%d V=%d | %d buckets (first %d rows), %d "
           "pieces | %.3f ms (%.0f GB/s) | copy %.0f GB/s\n",
           FLOATX_NAME, B, T, C, V, d.tb.num_buckets, largest, d.tp.num_pieces, ms,
           gb / (ms * 1e-3), copy_bandwidth_gbs());
    void *dev[] = {dout, dwte, dwpe, shift};
    for (void *p : dev) CUDA_CHECK(cudaFree(p));
    device_batch_free(&d);
    free(tokens);
}

int main(int argc, char **argv) {
    DevRng rng = dev_rng_from_args(argc, argv, 0x2545F4914F6CDD1Dull); // [SEED]
    if (!cuda_device_present("dev/cuda/encoder")) return EXIT_SUCCESS;
    int ok = 1;
    ok &= check(8, 128, 64, 512, 0, &rng); // the largest bucket ~256 rows: 8 pieces
    ok &= check(2, 100, 40, 97, 1, &rng);  // cbwc's row shift, T and C off the powers of two
    ok &= check(1, 20, 16, 50, 0, &rng);   // no bucket split
    if (!dev_check_only()) timing(16, 1024, 768, 50257, &rng);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
