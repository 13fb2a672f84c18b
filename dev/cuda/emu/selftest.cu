// CUDA emulation: the emulator's own checks must fire. Each case below is a
// bug the emulator promises to report; `selftest CASE` must abort with the
// message test/suites/cuda_emu.sh expects, `selftest ok` must pass (shared
// memory, shuffles and barriers that are right, and the race detector's
// negatives: a barrier, a warp exchange after __syncwarp, an ldmatrix after
// a barrier, atomics of every block). `selftest racecheck` says whether this build checks races.
// `selftest mma` runs the tensor-core layout checks (dev/cuda/mma_check.cuh),
// which must pass, and fail under EMU_MMA_MUTATION. `selftest pinned-ok` must
// pass (page-locked copies waited for by an event and a stream), `selftest
// pinned-reuse` abort (the source rewritten before the wait). `selftest
// stream-order` must pass (a created stream's work runs when stream 0 waits
// for it, not before), `selftest stream-race` abort (the race detector's
// stream race: queued work touching what stream 0 wrote, no wait between).
// `selftest lt-epilogue`, `lt-aux-ld`, `lt-aux-align` must stop with the
// cuBLASLt shim's refusal (an epilogue it does not implement; a GELU aux
// matrix against cuBLASLt's leading-dimension and alignment rules).
// `selftest graph-ok` must pass and `graph-stale` fail (CUDA graphs: replay
// equals eager, arguments by value), graph-malloc, graph-sync, graph-memcpy
// and graph-legacy abort with the capture error naming the call.
// Built only under emulation.
#include <stdio.h>
#include <string.h>

#include "../mma_check.cuh"
#include "cuda/cuda_common.cuh"
#include "cuda/cp_async.cuh"
#include "cuda/mma.cuh"

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

// the race detector (dev/cuda/emu/emu_race.cpp): thread 0 writes what thread
// 1 reads, with (synced) or without a __syncthreads between
__global__ void shared_handoff_kernel(float *out, int synced) {
    __shared__ float word[2];
    if (threadIdx.x == 0) word[0] = 1.0f;
    if (synced) __syncthreads(); // the same in every thread
    if (threadIdx.x == 1) out[0] = word[0];
}

// each lane reads its neighbour's word, with (synced) or without a __syncwarp between
__global__ void warp_exchange_kernel(float *out, int synced) {
    __shared__ float words[64];
    const int lane = threadIdx.x % 32, warp_base = threadIdx.x - lane;
    words[threadIdx.x] = (float)threadIdx.x;
    if (synced) __syncwarp();
    out[threadIdx.x] = words[warp_base + (lane + 1) % 32];
}

// thread 0 of every block writes x[0]
__global__ void blocks_write_kernel(float *x) {
    if (threadIdx.x == 0) x[0] = (float)blockIdx.x;
}

// block 1 reads what block 0 writes
__global__ void block_reads_kernel(float *x) {
    if (blockIdx.x == 0 && threadIdx.x == 0) x[0] = 1.0f;
    if (blockIdx.x == 1 && threadIdx.x == 0) x[1] = x[0];
}

// thread 1 reads the global word thread 0 of its block writes, no barrier between
__global__ void thread_reads_global_kernel(float *x) {
    if (threadIdx.x == 0) x[0] = 1.0f;
    if (threadIdx.x == 1) x[1] = x[0];
}

// every thread of every block adds 1 (plain_read: block 1 also reads the count)
__global__ void count_kernel(int *count, int *seen, int plain_read) {
    atomicAdd(count, 1);
    if (plain_read && blockIdx.x == 1 && threadIdx.x == 0) *seen = *count;
}

// warp 1 writes an 8x8 bf16 tile (element i is i) that warp 0 then reads with
// ldmatrix, with (synced) or without a __syncthreads between; lane l of warp 0
// gets row l / 4, columns 2 (l % 4) and + 1: out[l] is element 2 l
__global__ void ldmatrix_handoff_kernel(float *out, int synced) {
    extern __shared__ __align__(16) __nv_bfloat16 tile[];
    if (threadIdx.x >= 32) {
        for (int i = threadIdx.x - 32; i < 64; i += 32) tile[i] = __float2bfloat16((float)i);
    }
    if (synced) __syncthreads(); // the same in every thread
    if (threadIdx.x < 32) {
        uint32_t r[1];
        ldmatrix_x1(r, tile + 8 * (threadIdx.x % 8));
        out[threadIdx.x] = __bfloat162float(__ushort_as_bfloat16((unsigned short)(r[0] & 0xffff)));
    }
}

// the race detector's negatives: what is right must pass (0 = passed)
static int race_negatives() {
    int bad = 0;
    float *f, h[64];
    int *count, n = 0;
    CUDA_CHECK(cudaMalloc(&f, 64 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&count, 2 * sizeof(int)));
    shared_handoff_kernel<<<1, 32>>>(f, 1);
    CUDA_CHECK(cudaMemcpy(h, f, sizeof(float), cudaMemcpyDeviceToHost));
    if (h[0] != 1.0f) bad++;
    warp_exchange_kernel<<<1, 64>>>(f, 1);
    CUDA_CHECK(cudaMemcpy(h, f, sizeof(h), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; i++) bad += h[i] != (float)(i / 32 * 32 + (i % 32 + 1) % 32);
    ldmatrix_handoff_kernel<<<1, 64, 128>>>(f, 1);
    CUDA_CHECK(cudaMemcpy(h, f, 32 * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++) bad += h[i] != (float)(2 * i);
    CUDA_CHECK(cudaMemset(count, 0, 2 * sizeof(int)));
    count_kernel<<<8, 64>>>(count, count + 1, 0);
    CUDA_CHECK(cudaMemcpy(&n, count, sizeof(int), cudaMemcpyDeviceToHost));
    if (n != 8 * 64) bad++;
    printf("race detector negatives (a __syncthreads hand-off, a warp exchange after __syncwarp, "
           "an ldmatrix after __syncthreads, atomicAdd by 8 x 64 threads = %d): %s\n", n, bad ? "WRONG RESULTS" : "ran, results right");
    CUDA_CHECK(cudaFree(f));
    CUDA_CHECK(cudaFree(count));
    return bad;
}

// the row addresses: 0 the shared buffer 2 bytes in, 1 global memory, 2 a
// local array, 3 rows 80..208 bytes into a shared buffer of 200
__global__ void ldmatrix_bad_address_kernel(const __nv_bfloat16 *global, int where) {
    extern __shared__ __align__(16) __nv_bfloat16 tile[];
    __align__(16) __nv_bfloat16 local[8] = {};
    const int row = 8 * (threadIdx.x % 8);
    const __nv_bfloat16 *rows[4] = {tile + row + 1, global + row, local, tile + row + 40};
    uint32_t r[1];
    ldmatrix_x1(r, rows[where]);
}

// lanes below `split` at an mma, the others at a shuffle (split 32: all at the mma)
__global__ void mma_split_kernel(float *out, int split) {
    MmaFragA a = {};
    MmaFragB b = {};
    MmaFragC c = {};
    if ((int)threadIdx.x % 32 < split) mma_bf16_m16n8k16(c, a, b, c);
    else c.r[0] = warp_sum(1.0f);
    out[threadIdx.x] = c.r[0];
}

// y = y * a + x over n values: the graph cases' kernel
__global__ void scale_add_kernel(float *y, const float *x, float a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * a + x[i];
}

// y = 0, then y = y a + x for each a, then a copy of y to `copy` (64 values), on s
static void graph_sequence(float *y, float *copy, const float *x, const float *as, int count,
                           cudaStream_t s) {
    CUDA_CHECK(cudaMemsetAsync(y, 0, 64 * sizeof(float), s));
    for (int i = 0; i < count; i++) {
        scale_add_kernel<<<2, 32, 0, s>>>(y, x, as[i], 64);
        CUDA_CHECK_LAUNCH();
    }
    CUDA_CHECK(cudaMemcpyAsync(copy, y, 64 * sizeof(float), cudaMemcpyDeviceToDevice, s));
}

// CUDA graphs (dev/cuda/emu/emu_graph.cpp). graph-ok: a captured sequence
// runs nothing at the capture, its replays equal the eager run bit for bit,
// and a host scalar changed after the capture does not reach them (the
// launch's arguments are copies); graph-stale: the eager run with the
// changed scalar differs from a replay (the equality can fail: exit 1).
// graph-malloc, graph-sync, graph-memcpy, graph-legacy, graph-pageable: a
// call a capture forbids (cudaMalloc, cudaStreamSynchronize of the capturing
// stream, a synchronous cudaMemcpy, a kernel on stream 0, a copy from
// pageable memory) fails with CUDA's code; graph-attribute: a
// cudaFuncSetAttribute during a capture is refused (the project sets
// attributes once, at init: llmc/cuda/norm.cuh, smem_optin.cuh).
static int graph_case(const char *c, float *x) {
    float h[64], eager[64], replay[64];
    for (int i = 0; i < 64; i++) h[i] = 0.25f * (float)i - 3.0f;
    CUDA_CHECK(cudaMemcpy(x, h, sizeof(h), cudaMemcpyHostToDevice));
    float *y, *copy;
    CUDA_CHECK(cudaMalloc(&y, 64 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&copy, 64 * sizeof(float)));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    float as[3] = {0.5f, -1.75f, 3.0f};
    graph_sequence(y, copy, x, as, 3, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(eager, copy, sizeof(eager), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemset(copy, 0xff, 64 * sizeof(float))); // NaN until a replay writes it

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    cudaStreamCaptureStatus status;
    CUDA_CHECK(cudaStreamIsCapturing(s, &status));
    if (strcmp(c, "graph-malloc") == 0) {
        float *more;
        CUDA_CHECK(cudaMalloc(&more, 64));
    }
    if (strcmp(c, "graph-sync") == 0) CUDA_CHECK(cudaStreamSynchronize(s));
    if (strcmp(c, "graph-memcpy") == 0) CUDA_CHECK(cudaMemcpy(h, y, sizeof(h), cudaMemcpyDeviceToHost));
    if (strcmp(c, "graph-legacy") == 0) scale_add_kernel<<<2, 32>>>(y, x, 1.0f, 64);
    if (strcmp(c, "graph-attribute") == 0) { // the project's rule: attributes at init only
        CUDA_CHECK(cudaFuncSetAttribute(scale_add_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
    }
    if (strcmp(c, "graph-pageable") == 0) {
        CUDA_CHECK(cudaMemcpyAsync(y, h, sizeof(h), cudaMemcpyHostToDevice, s));
    }
    graph_sequence(y, copy, x, as, 3, s);
    as[1] = 100.0f; // after the capture: the graph keeps -1.75
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    size_t nodes = 0;
    CUDA_CHECK(cudaGraphGetNodes(graph, NULL, &nodes));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph)); // the exec stands alone
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(replay, copy, sizeof(replay), cudaMemcpyDeviceToHost));
    const int ran_at_capture = !isnan(replay[9]);
    int same = 1;
    for (int round = 0; round < 2; round++) { // twice: a graph replays as often as launched
        CUDA_CHECK(cudaMemset(copy, 0xff, 64 * sizeof(float)));
        CUDA_CHECK(cudaGraphLaunch(exec, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
        CUDA_CHECK(cudaMemcpy(replay, copy, sizeof(replay), cudaMemcpyDeviceToHost));
        same = same && memcmp(replay, eager, sizeof(eager)) == 0;
    }
    if (strcmp(c, "graph-stale") == 0) { // eager with the changed scalar: must differ
        graph_sequence(y, copy, x, as, 3, s);
        CUDA_CHECK(cudaStreamSynchronize(s));
        CUDA_CHECK(cudaMemcpy(eager, copy, sizeof(eager), cudaMemcpyDeviceToHost));
        same = memcmp(replay, eager, sizeof(eager)) == 0;
    }
    printf("graph: %zu nodes, status while capturing %d (expected 1), %s at the capture, replays "
           "%s the eager run (y[9] %g, eager %g)\n", nodes, (int)status,
           ran_at_capture ? "RAN" : "nothing ran", same ? "equal" : "DIFFER FROM", replay[9], eager[9]);
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaStreamDestroy(s));
    CUDA_CHECK(cudaFree(copy));
    CUDA_CHECK(cudaFree(y));
    CUDA_CHECK(cudaFree(x));
    return same && !ran_at_capture && nodes == 5 && status == cudaStreamCaptureStatusActive ? 0 : 1;
}

// cp.async (llmc/cuda/cp_async.cuh, dev/cuda/emu/emu_async.cpp): 64 threads,
// each copying 16 bytes into each of three groups (buffers 0-2 of 256
// floats, from src's three 256-float parts), then 8 of 16 bytes (the rest
// zero-filled, src-size 8) into buffer 3 and (threads 0-7) 4 bytes (.ca) after it, uncommitted.
// mode CP_OK: the waits in turn, each checking what landed (wait_group 2:
// group 0; 1: group 1 too; wait_all: all); CP_PEEK (the detector off): also
// whether the buffers not yet covered still hold their poison (NaN) at each
// wait; CP_EARLY: reads group 2's destination before its wait; CP_SOURCE:
// overwrites a pending source; CP_UNWAITED: leaves without waiting for group 2.
// out[t]: the thread's count of wrong values (0: all as the rules say)
enum { CP_OK, CP_PEEK, CP_EARLY, CP_SOURCE, CP_UNWAITED };
__global__ void cp_async_kernel(float *out, float *src, int mode) {
    extern __shared__ __align__(16) float cp_buf[]; // 4 x 256 + 8 floats
    const int t = threadIdx.x;
    int wrong = 0;
    for (int g = 0; g < 3; g++) {
        cp_async_cg16(cp_buf + 256 * g + 4 * t, src + 256 * g + 4 * t);
        cp_async_commit_group();
    }
    cp_async_cg16(cp_buf + 768 + 4 * t, src + 4 * t, 8); // floats 2, 3 zero-filled
    if (t < 8) cp_async_ca<4>(cp_buf + 1024 + t, src + 8 * t);
    if (mode == CP_EARLY) out[t] = cp_buf[512 + 4 * t];
    if (mode == CP_SOURCE && t == 5) src[512 + 4 * 5] = -1.0f; // its own copy's, pending
    // a buffer's element i of this thread's 4: landed (src), or still poison
    auto landed = [&](int g, int i) { return cp_buf[256 * g + 4 * t + i] == src[256 * g + 4 * t + i]; };
    auto poison = [&](int g, int i) { return isnan(cp_buf[256 * g + 4 * t + i]); };
    cp_async_wait_group<2>(); // group 0 has landed; 1 and 2 may not have
    for (int i = 0; i < 4; i++) wrong += !landed(0, i) + (mode == CP_PEEK && !(poison(1, i) && poison(2, i)));
    cp_async_wait_group<1>();
    for (int i = 0; i < 4; i++) wrong += !landed(1, i) + (mode == CP_PEEK && !poison(2, i));
    if (mode == CP_PEEK) wrong += !isnan(cp_buf[768 + 4 * t]); // uncommitted: no wait_group lands it
    if (mode == CP_UNWAITED) {
        out[t] = (float)wrong;
        return;
    }
    cp_async_wait_all();
    for (int i = 0; i < 4; i++) wrong += !landed(2, i);
    wrong += cp_buf[768 + 4 * t] != src[4 * t] || cp_buf[768 + 4 * t + 1] != src[4 * t + 1] ||
             cp_buf[768 + 4 * t + 2] != 0.0f || cp_buf[768 + 4 * t + 3] != 0.0f;
    __syncthreads(); // another thread's copies, seen after its wait and a barrier
    const int u = 63 - t;
    wrong += cp_buf[4 * u] != src[4 * u];
    if (t < 8) wrong += cp_buf[1024 + t] != src[8 * t];
    out[t] = (float)wrong;
}

// cp_async_kernel in MODE; 0: every thread's checks passed
static int cp_async_run(int mode) {
    float *src, *out, h[768];
    CUDA_CHECK(cudaMalloc(&src, sizeof(h)));
    CUDA_CHECK(cudaMalloc(&out, 64 * sizeof(float)));
    for (int i = 0; i < 768; i++) h[i] = 0.5f * (float)i + 1.0f;
    CUDA_CHECK(cudaMemcpy(src, h, sizeof(h), cudaMemcpyHostToDevice));
    cp_async_kernel<<<1, 64, (4 * 256 + 8) * sizeof(float)>>>(out, src, mode);
    CUDA_CHECK(cudaMemcpy(h, out, 64 * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < 64; i++) wrong += h[i] != 0.0f;
    CUDA_CHECK(cudaFree(src));
    CUDA_CHECK(cudaFree(out));
    return wrong;
}

// the cuBLASLt cases' set-up: a handle, an fp32 matmul descriptor, one 4x4
// fp32 layout for every operand and a default preference
static void lt_small(cublasLtHandle_t *lt, cublasLtMatmulDesc_t *op, cublasLtMatrixLayout_t *l,
                     cublasLtMatmulPreference_t *pref) {
    CUBLAS_CHECK(cublasLtCreate(lt));
    CUBLAS_CHECK(cublasLtMatmulDescCreate(op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, CUDA_R_32F, 4, 4, 4));
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(pref));
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
    if (strcmp(c, "racecheck") == 0) {
        printf("race checking: %s\n", emu::race_checking() ? "on" : "off (not built: SAN=1, or EMU_RACECHECK=0)");
        CUDA_CHECK(cudaFree(x));
        return 0;
    }
    if (strcmp(c, "shared-race") == 0) shared_handoff_kernel<<<1, 32>>>(x, 0);
    if (strcmp(c, "warp-race") == 0) warp_exchange_kernel<<<1, 64>>>(x, 0);
    if (strcmp(c, "blocks-write") == 0) blocks_write_kernel<<<2, 32>>>(x);
    if (strcmp(c, "block-reads") == 0) block_reads_kernel<<<2, 32>>>(x);
    if (strcmp(c, "thread-reads-global") == 0) thread_reads_global_kernel<<<1, 32>>>(x);
    if (strcmp(c, "ldmatrix-race") == 0) ldmatrix_handoff_kernel<<<1, 64, 128>>>(x, 0);
    if (strcmp(c, "atomic-read") == 0) count_kernel<<<2, 32>>>((int *)x, (int *)x + 1, 1);
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
    if (strcmp(c, "lt-align") == 0) { // an algorithm chosen for 256-byte operands, run 4 bytes off
        cublasLtHandle_t lt;
        cublasLtMatmulDesc_t op;
        cublasLtMatrixLayout_t l;
        cublasLtMatmulPreference_t pref;
        lt_small(&lt, &op, &l, &pref);
        cublasLtMatmulHeuristicResult_t h;
        int found = 0;
        CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, l, l, l, l, pref, 1, &h, &found));
        const float one = 1.0f, zero = 0.0f;
        CUBLAS_CHECK(cublasLtMatmul(lt, op, &one, x + 1, l, x, l, &zero, x + 32, l, x + 32, l,
                                    &h.algo, NULL, 0, 0));
    }
    // lt-epilogue: an epilogue the shim does not implement (RELU_AUX, 130) is
    // refused; lt-aux-ld: GELU_AUX_BIAS with an aux leading dimension of 12
    // (cuBLASLt wants a multiple of 8); lt-aux-align: its aux 4 bytes off 16
    if (strcmp(c, "lt-epilogue") == 0 || strcmp(c, "lt-aux-ld") == 0 ||
        strcmp(c, "lt-aux-align") == 0) {
        cublasLtHandle_t lt;
        cublasLtMatmulDesc_t op;
        cublasLtMatrixLayout_t l;
        cublasLtMatmulPreference_t pref;
        lt_small(&lt, &op, &l, &pref);
        cublasLtMatmulHeuristicResult_t h;
        int found = 0;
        const int unknown = strcmp(c, "lt-epilogue") == 0;
        cublasLtEpilogue_t e = unknown ? (cublasLtEpilogue_t)130 : CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
        CUBLAS_CHECK(
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
        const float *bias = x + 48;
        float *aux = strcmp(c, "lt-aux-align") == 0 ? x + 17 : x + 16;
        const int64_t aux_ld = strcmp(c, "lt-aux-ld") == 0 ? 12 : 8;
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                    sizeof(bias)));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                                    &aux, sizeof(aux)));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                    &aux_ld, sizeof(aux_ld)));
        CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, l, l, l, l, pref, 1, &h, &found));
        const float one = 1.0f, zero = 0.0f;
        CUBLAS_CHECK(cublasLtMatmul(lt, op, &one, x, l, x, l, &zero, x, l, x, l, &h.algo, NULL,
                                    0, 0));
    }
    if (strcmp(c, "ldmatrix-align") == 0) ldmatrix_bad_address_kernel<<<1, 32, 256>>>((__nv_bfloat16 *)x, 0);
    if (strcmp(c, "ldmatrix-global") == 0) ldmatrix_bad_address_kernel<<<1, 32, 256>>>((__nv_bfloat16 *)x, 1);
    if (strcmp(c, "ldmatrix-local") == 0) ldmatrix_bad_address_kernel<<<1, 32, 256>>>((__nv_bfloat16 *)x, 2);
    if (strcmp(c, "ldmatrix-overrun") == 0) ldmatrix_bad_address_kernel<<<1, 32, 200>>>((__nv_bfloat16 *)x, 3);
    if (strcmp(c, "mma-partial-warp") == 0) mma_split_kernel<<<1, 16>>>(x, 32);
    if (strcmp(c, "mma-divergent") == 0) mma_split_kernel<<<1, 32>>>(x, 16);
    if (strcmp(c, "mma") == 0) {
        DevRng rng = dev_rng_from_args(argc - 1, argv + 1, 0x2545F4914F6CDD1Dull);
        const int failed = mma_check_all(&rng);
        CUDA_CHECK(cudaFree(x));
        return failed == 0 ? 0 : 1;
    }
    if (strcmp(c, "pinned-reuse") == 0 || strcmp(c, "pinned-ok") == 0) {
        // a batch in page-locked memory copied asynchronously, refilled after the
        // event that follows its copy (ok) or before it (reuse: the copy may not
        // have read it yet on a device); and a copy back into page-locked memory,
        // NaN until the stream is waited for
        float *h, *back;
        cudaStream_t s;
        cudaEvent_t copied;
        CUDA_CHECK(cudaMallocHost(&h, 64 * sizeof(float)));
        CUDA_CHECK(cudaMallocHost(&back, 64 * sizeof(float)));
        CUDA_CHECK(cudaStreamCreate(&s));
        CUDA_CHECK(cudaEventCreate(&copied));
        for (int i = 0; i < 64; i++) h[i] = (float)i;
        CUDA_CHECK(cudaMemcpyAsync(x, h, 64 * sizeof(float), cudaMemcpyHostToDevice, s));
        CUDA_CHECK(cudaEventRecord(copied, s));
        if (strcmp(c, "pinned-reuse") == 0) h[7] = -1.0f; // too early
        CUDA_CHECK(cudaEventSynchronize(copied));
        h[7] = -2.0f; // after the wait: fine
        CUDA_CHECK(cudaMemcpyAsync(back, x, 64 * sizeof(float), cudaMemcpyDeviceToHost, s));
        const int early_nan = isnan(back[5]);
        CUDA_CHECK(cudaStreamSynchronize(s));
        const int ok = early_nan && back[5] == 5.0f && back[7] == 7.0f;
        printf("page-locked copies: %s before the wait, %g after (expected 5)\n",
               early_nan ? "NaN" : "a number", back[5]);
        CUDA_CHECK(cudaEventDestroy(copied));
        CUDA_CHECK(cudaStreamDestroy(s));
        CUDA_CHECK(cudaFreeHost(h));
        CUDA_CHECK(cudaFreeHost(back));
        CUDA_CHECK(cudaFree(x));
        return ok ? 0 : 1;
    }
    if (strcmp(c, "stream-order") == 0 || strcmp(c, "stream-race") == 0) {
        // stream-order: a created stream's memset runs only when stream 0 waits
        // for its event (before: the bytes stream 0 copies are the old NaN);
        // stream-race: a memset queued on it overwrites what stream 0 wrote,
        // with no wait between: the race detector's stream race
        cudaStream_t s;
        cudaEvent_t done;
        float h[64];
        CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
        if (strcmp(c, "stream-race") == 0) {
            CUDA_CHECK(cudaMemset(x, 0, 64 * sizeof(float)));
            CUDA_CHECK(cudaMemsetAsync(x, 0, 64 * sizeof(float), s));
            CUDA_CHECK(cudaStreamSynchronize(s));
        }
        CUDA_CHECK(cudaMemsetAsync(x, 0, 64 * sizeof(float), s));
        CUDA_CHECK(cudaMemcpy(h, x, sizeof(h), cudaMemcpyDeviceToHost));
        const int late = isnan(h[3]);
        CUDA_CHECK(cudaEventRecord(done, s));
        CUDA_CHECK(cudaStreamWaitEvent(0, done, 0));
        CUDA_CHECK(cudaMemcpy(h, x, sizeof(h), cudaMemcpyDeviceToHost));
        printf("a created stream's memset: %s before stream 0 waits for it, %g after (expected 0)\n",
               late ? "not run" : "run", h[3]);
        CUDA_CHECK(cudaEventDestroy(done));
        CUDA_CHECK(cudaStreamDestroy(s));
        CUDA_CHECK(cudaFree(x));
        return late && h[3] == 0.0f ? 0 : 1;
    }
    if (strncmp(c, "graph-", 6) == 0) return graph_case(c, x);
    if (strcmp(c, "cp-async-ok") == 0 || strcmp(c, "cp-async-peek") == 0) {
        const int wrong = cp_async_run(strcmp(c, "cp-async-ok") == 0 ? CP_OK : CP_PEEK);
        printf("cp.async: %d of 64 threads saw a copy land before its wait or not at it\n", wrong);
        CUDA_CHECK(cudaFree(x));
        return wrong == 0 ? 0 : 1;
    }
    if (strcmp(c, "cp-async-early") == 0) cp_async_run(CP_EARLY);
    if (strcmp(c, "cp-async-source") == 0) cp_async_run(CP_SOURCE);
    if (strcmp(c, "cp-async-unwaited") == 0) cp_async_run(CP_UNWAITED);
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
            if (race_negatives() != 0) out = 0.0f;
        }
        CUDA_CHECK(cudaFree(x));
        CUDA_CHECK(cudaFree(y));
        return out == 2016.0f ? 0 : 1;
    }
    printf("no emulator check fired for '%s'\n", c);
    CUDA_CHECK(cudaFree(x));
    return 0;
}
