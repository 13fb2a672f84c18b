// CUDA emulation: what one (batch, head) of GPT-2's causal attention asks of
// the device, counted by the emulator (dev/cuda/emu/emu_traffic.h) and held to
// the hand-derived formulas below, for the kinds that run here: tc (tensor
// cores), cublas (batched cuBLAS + softmax) and flash (fp32 FMAs), forward and
// backward as llmc/cuda/attention_layers.cuh runs them. Counted: tensor-core
// FLOPs (warp-wide mma.m16n8k16, 4096 FLOPs each), the emulated cuBLAS's GEMM
// FLOPs (2 m n k), and global-memory bytes (every load and store the kernels
// issue, tile re-reads included; cuBLAS: its operands once). Not counted: the
// CUDA-core FLOPs (no hook sees arithmetic). B = NH = 1 is exact for d12: every
// count is per (b, h), so a layer is B NH = 192 times it.
//   attention_counts [T]   T a multiple of 64 (default 256), head size 64
// Needs the counts on (EMU_TRAFFIC=1 or the race detector; a SAN=1 build has
// no hooks and says so, exit 2). Built only under emulation, in bf16.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.cuh"
#include "cuda/attention_layers.cuh"
#include "emu_traffic.h"

typedef unsigned long long u64;

static const int HS = 64; // d12's head size; tc's padded width D equals it (no zero features)

// what one pass should count: tensor-core FLOPs, GEMM FLOPs, bytes read and written
typedef struct {
    u64 tc_flops, gemm_flops, bytes_read, bytes_written;
} Counts;

// The formulas, per (b, h), from the kernels' loops (d = 64, bf16 tensors: 2
// bytes an element; lse, D, scores: fp32). Pairs (query, key) the tc kernels
// compute: forward in 16-key chunks up to the diagonal of a warp's 32 rows,
//   P0 = T^2/2 + 16T (the warp of rows 32 k .. 32 k + 31 sees 32 (k + 1) keys),
// an mma covers 16 x 16 pairs x 16 features (or 16 x 16 pairs of P V), so a
// pair costs 4d FLOPs forward (S, P V); the backward's count is walked below.
static Counts expected(AttentionKind kind, bool forward, u64 T) {
    const u64 d = HS, Td = T * d;
    Counts c = {0, 0, 0, 0};
    if (kind == ATTENTION_TC) {
        if (forward) {
            // blocks of 128 query rows: the one from q0 streams its keys up to
            // min(q0 + 128, T) in 64-key tiles of k and v (256 d bytes a tile)
            u64 forward_tiles = 0;
            for (u64 q0 = 0; q0 < T; q0 += 128) forward_tiles += (q0 + 128 < T ? q0 + 128 : T) / 64;
            c.tc_flops = 4 * d * (T * T / 2 + 16 * T);
            c.bytes_read = 2 * Td + 256 * d * forward_tiles; // q once, k and v tiles
            c.bytes_written = 2 * Td + 4 * T; // out, lse
        } else {
            // blocks of 128 keys (T a multiple of 64: every block's 16-key
            // warps hold valid keys) stream 32-query tiles from their first
            // key: per tile, each warp whose keys a query of the tile sees
            // makes S^T, dP^T, dV, dK (q16 x d/8 mma each, q16 = 2), and each
            // of the (32/16) (d/16) dQ units of a 16-query strip by 16 features
            // 2 mma a 16-key chunk up to the strip's last query
            const u64 BKEYS = 128, BQ = 32;
            u64 mma = 0, rows = 0; // rows: the dQ partials, one per (key block, query)
            for (u64 first = 0; first < T; first += BKEYS) {
                const u64 keys = first + BKEYS < T ? BKEYS : T - first;
                rows += T - first;
                for (u64 q0 = first; q0 < T; q0 += BQ) {
                    for (u64 w = 0; w < BKEYS / 16; w++) {
                        if (first + 16 * w < T && q0 + BQ - 1 >= first + 16 * w) mma += 2 * d / 2;
                    }
                    for (u64 u = 0; u < (BQ / 16) * (d / 16); u++) {
                        const u64 seen = q0 + 16 * (u % (BQ / 16)) + 16 - first;
                        mma += 2 * (((seen < keys ? seen : keys) + 15) / 16);
                    }
                }
            }
            c.tc_flops = 4096 * mma;
            c.bytes_read = 4 * Td            // D = dy . y
                           + 4 * Td          // k, v once
                           + 4 * d * rows    // q, dy rows of every tile (a row per partial row)
                           + 8 * rows        // lse, D of those rows
                           + 4 * d * rows;   // the reduce: every partial row once
            c.bytes_written = 4 * T + 4 * Td // D; dk, dv
                              + 4 * d * rows // the partials
                              + 2 * Td;      // dq
        }
    } else if (kind == ATTENTION_FLASH) {
        // blocks of 16 rows, tiles of 32: n = T/16 blocks; forward and dq stream
        // ceil((i + 1) / 2) tiles of k, v in block i: m (m + 1) tiles in all, m = T/32
        const u64 n = T / 16, m = T / 32, tiles = 128 * d * m * (m + 1);
        if (forward) {
            c.bytes_read = 2 * Td + tiles;
            c.bytes_written = 2 * Td + 4 * T;
        } else {
            c.bytes_read = 4 * Td                      // D = dy . y
                           + 4 * Td + tiles            // dq: q, dy; k, v
                           + 4 * T * (T + 1)           // dq: lse[row] and D[row] for every causal pair
                           + 4 * Td                    // dk/dv: k, v
                           + 32 * d * n * (n + 1)      // q, dy rows from the block's first key: T - 16 i
                           + 64 * n * (n + 1);         // lse, D of those rows
            c.bytes_written = 4 * T + 2 * Td + 4 * Td;
        }
    } else { // cublas: split q, k, v; GEMMs (operands once); the softmax reads a row's
        // t + 1 scores three times (max, sum, write) forward, its probabilities and
        // gradients twice backward; the elementwise kernels read and write once
        if (forward) {
            c.gemm_flops = 2 * (2 * T * T * d); // q k^T, att v
            c.bytes_read = 6 * Td + 4 * Td + 6 * T * (T + 1) + 2 * T * T + 2 * Td + 2 * Td;
            c.bytes_written = 6 * Td + 4 * T * T + 2 * T * T + 2 * Td + 2 * Td;
        } else {
            c.gemm_flops = 4 * (2 * T * T * d); // dy v^T, att^T dy, dS k, dS^T q
            c.bytes_read = 6 * Td + 2 * Td + 4 * Td + (2 * T * T + 2 * Td) + 6 * T * (T + 1) +
                           2 * (2 * T * T + 2 * Td) + 6 * Td;
            c.bytes_written = 6 * Td + 2 * Td + 4 * T * T + 2 * Td + 2 * T * T + 2 * (2 * Td) + 6 * Td;
        }
    }
    return c;
}

// a formula, not a count: each kernel's inputs read once and its outputs
// written once (what reaches HBM when a kernel's re-reads hit its caches and
// nothing stays cached from one kernel to the next)
static u64 unique_bytes(AttentionKind kind, bool forward, u64 T) {
    const u64 Td = T * HS;
    if (kind == ATTENTION_CUBLAS) {
        // forward: split (q, k, v in and out), q k^T (fp32 scores out), softmax (the
        // causal scores in, att out, bf16), att v, heads; backward: split, heads,
        // dy v^T, att^T dy, softmax (att and datt in, dpreatt out), dS k, dS^T q, merge
        return forward ? 12 * Td + (4 * Td + 4 * T * T) + (2 * T * (T + 1) + 2 * T * T) +
                             (2 * T * T + 4 * Td) + 4 * Td
                       : 12 * Td + 4 * Td + (4 * Td + 4 * T * T) + (2 * T * T + 4 * Td) +
                             (3 * T * (T + 1) + 2 * T * T) + 2 * (2 * T * T + 4 * Td) + 12 * Td;
    }
    if (kind == ATTENTION_TC && !forward) {
        // D = dy . y (dy, out in, D out); the backward (q, k, v, dy, lse, D in, dk,
        // dv and the dQ partials out: a row of d fp32 per (key block of 128, query
        // from its first key)); the reduce (the partials in, dq out)
        u64 rows = 0;
        for (u64 first = 0; first < T; first += 128) rows += T - first;
        return (4 * Td + 4 * T) + (8 * Td + 8 * T + 4 * Td + 4 * HS * rows) + (4 * HS * rows + 2 * Td);
    }
    // flash-style: forward q, k, v in, out and lse out; backward D = dy . y (dy,
    // out in, D out), dq (q, dy, k, v, lse, D in, dq out), dk/dv (the same in, dk, dv out)
    return forward ? 8 * Td + 4 * T
                   : (4 * Td + 4 * T) + (8 * Td + 8 * T + 2 * Td) + (8 * Td + 8 * T + 4 * Td);
}

static int compare(const char *what, u64 got, u64 want) {
    const bool ok = got == want;
    printf("    %-22s counted %14llu  formula %14llu  %s\n", what, got, want, ok ? "ok" : "FAIL");
    return ok;
}

// one pass's counts (the table since the last reset) against the formulas
static int check_pass(AttentionKind kind, bool forward, int T) {
    const emu::KernelTraffic t = emu::traffic_total();
    const Counts want = expected(kind, forward, (u64)T);
    printf("  %s %s (%llu launches and calls):\n", attention_kind_name(kind),
           forward ? "forward" : "backward", t.launches);
    int ok = 1;
    ok &= compare("tensor-core FLOPs", t.mma * emu::MMA_M16N8K16_FLOPS, want.tc_flops);
    ok &= compare("cuBLAS GEMM FLOPs", t.gemm_flops, want.gemm_flops);
    ok &= compare("bytes read", t.bytes_read, want.bytes_read);
    ok &= compare("bytes written", t.bytes_written, want.bytes_written);
    // d12: 192 (b, h) a layer
    const double n = 192.0, bytes = (double)(t.bytes_read + t.bytes_written);
    printf("    at d12 (B NH = 192, T = %d): tensor-core %.2f GFLOP, GEMM %.2f GFLOP, bytes "
           "%.3f G issued, %.3f G once a kernel (formula)\n",
           T, n * (double)(t.mma * emu::MMA_M16N8K16_FLOPS) * 1e-9, n * (double)t.gemm_flops * 1e-9,
           n * bytes * 1e-9, n * (double)unique_bytes(kind, forward, (u64)T) * 1e-9);
    emu::print_traffic(stdout);
    emu::traffic_reset();
    return ok;
}

int main(int argc, char **argv) {
    int T = 256;
    if (argc > 2 || (argc == 2 && (sscanf(argv[1], "%d", &T) != 1 || T < 64 || T % 64 != 0))) {
        fprintf(stderr, "usage: %s [T]: T a multiple of 64 (default 256)\n", argv[0]);
        return 2;
    }
    if (!emu::traffic_counted()) {
        printf("NOT COUNTED: run with EMU_TRAFFIC=1 (or the race detector on); a SAN=1 build has no "
               "access hooks\n");
        return 2;
    }
    const int B = 1, NH = 1, C = HS;
    const size_t btc = (size_t)B * T * C;
    MatmulContext mm;
    matmul_context_create(&mm);
    floatX *h = (floatX *)host_alloc(3 * btc * sizeof(floatX));
    float *unused = (float *)host_alloc(3 * btc * 4);
    DevRng rng = {0x9E3779B97F4A7C15ull};
    fill_random(h, unused, 3 * btc, &rng, 0.0f, 1.0f);
    floatX *qkv = to_device(h, 3 * btc);
    fill_random(h, unused, btc, &rng, 0.0f, 1.0f);
    floatX *dout = to_device(h, btc);
    floatX *out, *dqkv;
    CUDA_CHECK(cudaMalloc(&out, btc * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&dqkv, 3 * btc * sizeof(floatX)));
    printf("causal attention, one (b, h): T=%d hs=%d (%s)\n", T, HS, FLOATX_NAME);
    int ok = 1;
    const AttentionKind kinds[] = {ATTENTION_TC, ATTENTION_CUBLAS, ATTENTION_FLASH};
    for (AttentionKind k : kinds) {
        AttentionLayers a;
        attention_layers_init(&a, k, true, 1, B, T, C, NH, 0);
        emu::traffic_reset();
        attention_layers_forward(&a, &mm, 0, out, qkv, B, T, C, NH);
        ok &= check_pass(k, true, T);
        attention_layers_backward(&a, &mm, 0, dqkv, dout, out, qkv, B, T, C, NH);
        ok &= check_pass(k, false, T);
        attention_layers_free(&a);
    }
    CUDA_CHECK(cudaFree(qkv));
    CUDA_CHECK(cudaFree(dout));
    CUDA_CHECK(cudaFree(out));
    CUDA_CHECK(cudaFree(dqkv));
    matmul_context_destroy(&mm);
    free(h);
    free(unused);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
