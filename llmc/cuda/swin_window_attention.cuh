// Swin's (shifted-)window multi-head attention on the GPU (llmc/vision/swin.c's
// block: llmc/kernels/attention_bidir.c with the tables of llmc/kernels/swin_window.c). qkv
// (B, res*res, 3C) and out (B, res*res, C) stay in image order: window g =
// (image b, window w) token t is read and written in place at image token
// ((wy W + t / W + shift) % res, (wx W + t % W + shift) % res), which is the
// cyclic shift by -shift, the window partition and, on the write, the
// reverse shift, with no permuted copies. Per window and head:
//   att = softmax(q k^T / sqrt(hs) + table[rel(i, j)][h] + mask(w, i, j)),  out = att v
// with rel(i, j) the relative position index and the -100 mask of the
// official code for pairs from different regions of the shifted frame
// (shift > 0). att (B nW, NH, T, T) is kept for the backward, which writes
// dqkv and adds the bias table's gradient: the score gradients are summed
// over windows in fixed chunks (each chunk in window order, one block owns a
// chunk and head), then over the chunks in order, then per table entry over
// its (i, j) pairs in order; no atomics, the same bits every run.
#ifndef FOLDNORM_SWIN_WINDOW_ATTENTION_CUH
#define FOLDNORM_SWIN_WINDOW_ATTENTION_CUH

#include <math.h>

#include "cuda_common.cuh"
#include "smem_optin.cuh"
extern "C" {
#include "kernels/swin_window.h" // SWIN_MASK_VALUE
}

#define SWIN_ATT_THREADS 128
#define SWIN_SCORE_CHUNKS 512 // partial score-gradient sums, at most (the default)

typedef struct {
    int B, res, W, shift, C, NH; // images, resolution, window, shift, channels, heads
    int score_chunks;            // partial score-gradient sums at most; 0: SWIN_SCORE_CHUNKS
} SwinWindowShape;

// image row of window g's token t (g = b nW + w)
__device__ inline size_t swin_window_row(int g, int t, int res, int W, int shift) {
    const int per_side = res / W, nW = per_side * per_side;
    const int b = g / nW, w = g % nW;
    const int y = ((w / per_side) * W + t / W + shift) % res;
    const int x = ((w % per_side) * W + t % W + shift) % res;
    return (size_t)b * res * res + (size_t)y * res + x;
}

// region of a coordinate of the shifted frame: 3 bands per axis
__device__ inline int swin_shift_band(int v, int res, int W, int shift) {
    return v < res - W ? 0 : v < res - shift ? 1 : 2;
}

// region (0 .. 8) of window w's token t in the shifted frame (any shift > 0)
__device__ inline int swin_shift_region(int w, int t, int res, int W, int shift) {
    const int per_side = res / W, oy = (w / per_side) * W, ox = (w % per_side) * W;
    return swin_shift_band(oy + t / W, res, W, shift) * 3 + swin_shift_band(ox + t % W, res, W, shift);
}

// the shifted-window mask of window w's pair (i, j): 0 or -100
__device__ inline float swin_shift_mask_value(int w, int i, int j, int res, int W, int shift) {
    if (shift == 0) return 0.0f;
    return swin_shift_region(w, i, res, W, shift) == swin_shift_region(w, j, res, W, shift)
               ? 0.0f
               : SWIN_MASK_VALUE;
}

// row of the ((2W-1)^2, NH) bias table for the pair (i, j)
__device__ inline int swin_relative_row(int i, int j, int W) {
    return (i / W - j / W + W - 1) * (2 * W - 1) + (i % W - j % W + W - 1);
}

// Window g's q, k, v (and dy) of head h into shared rows of stride hs + 1
// (conflict-free when the lanes of a warp walk the rows).
__device__ inline void swin_window_load(float *q, float *k, float *v, float *dy,
                                        const floatX *qkv, const floatX *dout, int g, int h,
                                        int res, int W, int shift, int C, int hs) {
    const int T = W * W, ks = hs + 1;
    for (int idx = threadIdx.x; idx < T * hs; idx += blockDim.x) {
        const int t = idx / hs, d = idx % hs;
        const size_t row = swin_window_row(g, t, res, W, shift);
        const floatX *src = qkv + row * 3 * C + (size_t)h * hs + d;
        q[t * ks + d] = to_float(src[0]);
        k[t * ks + d] = to_float(src[C]);
        v[t * ks + d] = to_float(src[2 * C]);
        if (dy != NULL) dy[t * ks + d] = to_float(dout[row * C + (size_t)h * hs + d]);
    }
}

// grid (B nW, NH): one block a window and head; shared: q, k, v (T, hs + 1), p (T, T)
__global__ void swin_window_attention_forward_kernel(floatX *out, floatX *att, const floatX *qkv,
                                                     const floatX *table, int res, int W,
                                                     int shift, int C, int NH, float scale) {
    extern __shared__ float smem[];
    const int g = blockIdx.x, h = blockIdx.y, T = W * W, hs = C / NH, ks = hs + 1;
    const int nW = (res / W) * (res / W), w = g % nW;
    float *q = smem, *k = q + T * ks, *v = k + T * ks, *p = v + T * ks;
    swin_window_load(q, k, v, NULL, qkv, NULL, g, h, res, W, shift, C, hs);
    __syncthreads();
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    floatX *a = att + ((size_t)g * NH + h) * T * T;
    for (int i = warp; i < T; i += warps) { // a warp per row, a lane per key
        float m = -INFINITY;
        for (int j = lane; j < T; j += 32) {
            float s = 0.0f;
            for (int d = 0; d < hs; d++) s += q[i * ks + d] * k[j * ks + d];
            const float bias = to_float(table[(size_t)swin_relative_row(i, j, W) * NH + h]) +
                               swin_shift_mask_value(w, i, j, res, W, shift);
            s = s * scale + bias;
            p[i * T + j] = s;
            m = fmaxf(m, s);
        }
        m = warp_max(m);
        float sum = 0.0f;
        for (int j = lane; j < T; j += 32) {
            const float e = expf(p[i * T + j] - m);
            p[i * T + j] = e;
            sum += e;
        }
        const float inv = 1.0f / warp_sum(sum);
        for (int j = lane; j < T; j += 32) {
            p[i * T + j] *= inv;
            a[i * T + j] = from_float<floatX>(p[i * T + j]);
        }
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < T * hs; idx += blockDim.x) { // out = p v
        const int i = idx / hs, d = idx % hs;
        float o = 0.0f;
        for (int j = 0; j < T; j++) o += p[i * T + j] * v[j * ks + d];
        out[swin_window_row(g, i, res, W, shift) * C + (size_t)h * hs + d] = from_float<floatX>(o);
    }
}

// grid (chunks, NH): block (c, h) runs the backward of head h in windows
// [G c / chunks, G (c+1) / chunks) in order and owns dscore_partial[c][h]
// (T, T), the sum of their score gradients. Shared: q, k, v, dy (T, hs + 1)
// and ds (T, T); att is read from global memory where it is used.
__global__ void swin_window_attention_backward_kernel(floatX *dqkv, float *dscore_partial,
                                                      const floatX *dout, const floatX *qkv,
                                                      const floatX *att, int G, int chunks,
                                                      int res, int W, int shift, int C, int NH,
                                                      float scale) {
    extern __shared__ float smem[];
    const int c = blockIdx.x, h = blockIdx.y, T = W * W, hs = C / NH, ks = hs + 1;
    float *q = smem, *k = q + T * ks, *v = k + T * ks, *dy = v + T * ks;
    float *ds = dy + T * ks;
    float *partial = dscore_partial + ((size_t)c * NH + h) * T * T;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int ij = threadIdx.x; ij < T * T; ij += blockDim.x) partial[ij] = 0.0f;
    const int g0 = (int)((long long)G * c / chunks), g1 = (int)((long long)G * (c + 1) / chunks);
    for (int g = g0; g < g1; g++) {
        __syncthreads(); // the previous window's readers are done
        swin_window_load(q, k, v, dy, qkv, dout, g, h, res, W, shift, C, hs);
        const floatX *a = att + ((size_t)g * NH + h) * T * T; // read where used (L1)
        __syncthreads();
        for (int idx = threadIdx.x; idx < T * hs; idx += blockDim.x) { // dv = a^T dy
            const int j = idx / hs, d = idx % hs;
            float s = 0.0f;
            for (int i = 0; i < T; i++) s += to_float(a[i * T + j]) * dy[i * ks + d];
            const size_t row = swin_window_row(g, j, res, W, shift);
            dqkv[row * 3 * C + 2 * (size_t)C + (size_t)h * hs + d] = from_float<floatX>(s);
        }
        for (int i = warp; i < T; i += warps) { // ds = a (datt - rowsum(a datt)), datt = dy v^T
            float dot = 0.0f;
            for (int j = lane; j < T; j += 32) {
                float datt = 0.0f;
                for (int d = 0; d < hs; d++) datt += dy[i * ks + d] * v[j * ks + d];
                ds[i * T + j] = datt;
                dot += to_float(a[i * T + j]) * datt;
            }
            dot = warp_sum(dot);
            for (int j = lane; j < T; j += 32) {
                ds[i * T + j] = to_float(a[i * T + j]) * (ds[i * T + j] - dot);
            }
        }
        __syncthreads();
        for (int ij = threadIdx.x; ij < T * T; ij += blockDim.x) partial[ij] += ds[ij];
        for (int idx = threadIdx.x; idx < T * hs; idx += blockDim.x) { // dq = scale ds k
            const int i = idx / hs, d = idx % hs;
            float s = 0.0f;
            for (int j = 0; j < T; j++) s += ds[i * T + j] * k[j * ks + d];
            dqkv[swin_window_row(g, i, res, W, shift) * 3 * C + (size_t)h * hs + d] =
                from_float<floatX>(scale * s);
        }
        for (int idx = threadIdx.x; idx < T * hs; idx += blockDim.x) { // dk = scale ds^T q
            const int j = idx / hs, d = idx % hs;
            float s = 0.0f;
            for (int i = 0; i < T; i++) s += ds[i * T + j] * q[i * ks + d];
            dqkv[swin_window_row(g, j, res, W, shift) * 3 * C + (size_t)C + (size_t)h * hs + d] =
                from_float<floatX>(scale * s);
        }
    }
}

// dscore_sum (NH, T, T) = the chunks' partial sums added in chunk order; a thread an entry
__global__ void swin_score_sum_kernel(float *dscore_sum, const float *dscore_partial, int chunks,
                                      int entries) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= entries) return;
    float sum = 0.0f;
    for (int c = 0; c < chunks; c++) sum += dscore_partial[(size_t)c * entries + idx];
    dscore_sum[idx] = sum;
}

// dtable[r][h] += the summed score gradients of every pair (i, j) with
// rel(i, j) = r, in order of i; a thread a table entry
__global__ void swin_bias_table_backward_kernel(float *dtable, const float *dscore_sum, int W,
                                                int NH) {
    const int side = 2 * W - 1, T = W * W;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= side * side * NH) return;
    const int r = idx / NH, h = idx % NH;
    const int oy = r / side - (W - 1), ox = r % side - (W - 1); // i - j in rows and columns
    const float *sum_h = dscore_sum + (size_t)h * T * T;
    float sum = 0.0f;
    for (int iy = max(0, oy); iy < min(W, W + oy); iy++) {
        for (int ix = max(0, ox); ix < min(W, W + ox); ix++) {
            sum += sum_h[(iy * W + ix) * T + (iy - oy) * W + (ix - ox)];
        }
    }
    dtable[idx] += sum;
}

static inline void swin_window_attention_check_shape(const SwinWindowShape *s) {
    if (s->B <= 0 || s->W <= 0 || s->res <= 0 || s->res % s->W != 0 || s->shift < 0 ||
        s->shift >= s->W || s->NH <= 0 || s->C <= 0 || s->C % s->NH != 0 || s->score_chunks < 0) {
        fprintf(stderr,
                "error: Swin window attention needs positive sizes, res %% W == 0, 0 <= shift < W,"
                " C %% NH == 0 and score_chunks >= 0 (B=%d res=%d W=%d shift=%d C=%d NH=%d"
                " score_chunks=%d)\n",
                s->B, s->res, s->W, s->shift, s->C, s->NH, s->score_chunks);
        exit(EXIT_FAILURE);
    }
}

static inline int swin_window_groups(const SwinWindowShape *s) {
    return s->B * (s->res / s->W) * (s->res / s->W);
}

// the backward's score-gradient chunks and their scratch (floats) for a shape
static inline int swin_score_chunks(const SwinWindowShape *s) {
    const int G = swin_window_groups(s);
    const int most = s->score_chunks > 0 ? s->score_chunks : SWIN_SCORE_CHUNKS;
    return G < most ? G : most;
}
static inline size_t swin_window_attention_scratch_floats(const SwinWindowShape *s) {
    return ((size_t)swin_score_chunks(s) + 1) * s->NH * s->W * s->W * s->W * s->W;
}

static inline size_t swin_forward_smem_bytes(int T, int hs) {
    return sizeof(float) * (3 * (size_t)T * (hs + 1) + (size_t)T * T);
}
static inline size_t swin_backward_smem_bytes(int T, int hs) {
    return sizeof(float) * (4 * (size_t)T * (hs + 1) + (size_t)T * T);
}

// out (B, res^2, C) and att (B nW, NH, T, T) from qkv (B, res^2, 3C) and the
// bias table ((2W-1)^2, NH)
static inline void swin_window_attention_forward_cuda(floatX *out, floatX *att, const floatX *qkv,
                                                      const floatX *table,
                                                      const SwinWindowShape *s,
                                                      cudaStream_t stream) {
    swin_window_attention_check_shape(s);
    const int hs = s->C / s->NH, T = s->W * s->W;
    const size_t smem = swin_forward_smem_bytes(T, hs);
    // a window of T tokens needs O(T hs + T^2) floats: W = 7 with hs 32 uses
    // 35 KB in the backward, W = 12 with hs 32 155 KB
    smem_optin(swin_window_attention_forward_kernel, smem, "Swin window attention");
    dim3 grid(swin_window_groups(s), s->NH);
    swin_window_attention_forward_kernel<<<grid, SWIN_ATT_THREADS, smem, stream>>>(
        out, att, qkv, table, s->res, s->W, s->shift, s->C, s->NH, 1.0f / sqrtf((float)hs));
    CUDA_CHECK_LAUNCH();
}

// dtable ((2W-1)^2, NH) += the table gradient from the backward's chunk partials
// at the start of scratch (chunks, NH, T, T): summed in chunk order into the
// scratch after them, then each entry over its pairs
static inline void swin_window_table_gradient_cuda(float *dtable, float *scratch,
                                                   const SwinWindowShape *s, cudaStream_t stream) {
    const int T = s->W * s->W, chunks = swin_score_chunks(s);
    const int scores = s->NH * T * T, entries = (2 * s->W - 1) * (2 * s->W - 1) * s->NH;
    float *dscore_sum = scratch + (size_t)chunks * scores; // after the partial sums
    swin_score_sum_kernel<<<ceil_div(scores, 256), 256, 0, stream>>>(dscore_sum, scratch, chunks,
                                                                     scores);
    CUDA_CHECK_LAUNCH();
    swin_bias_table_backward_kernel<<<ceil_div(entries, 128), 128, 0, stream>>>(
        dtable, dscore_sum, s->W, s->NH);
    CUDA_CHECK_LAUNCH();
}

// dqkv (B, res^2, 3C) overwritten from dout (B, res^2, C), qkv and the
// forward's att; dtable ((2W-1)^2, NH, fp32) accumulated; scratch:
// swin_window_attention_scratch_floats(s) floats
static inline void swin_window_attention_backward_cuda(floatX *dqkv, float *dtable,
                                                       float *scratch, const floatX *dout,
                                                       const floatX *qkv, const floatX *att,
                                                       const SwinWindowShape *s,
                                                       cudaStream_t stream) {
    swin_window_attention_check_shape(s);
    const int hs = s->C / s->NH, T = s->W * s->W, chunks = swin_score_chunks(s);
    const size_t smem = swin_backward_smem_bytes(T, hs);
    smem_optin(swin_window_attention_backward_kernel, smem, "Swin window attention");
    dim3 grid(chunks, s->NH);
    swin_window_attention_backward_kernel<<<grid, SWIN_ATT_THREADS, smem, stream>>>(
        dqkv, scratch, dout, qkv, att, swin_window_groups(s), chunks, s->res, s->W, s->shift,
        s->C, s->NH, 1.0f / sqrtf((float)hs));
    CUDA_CHECK_LAUNCH();
    swin_window_table_gradient_cuda(dtable, scratch, s, stream);
}

#endif
