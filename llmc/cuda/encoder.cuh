// Token + position embedding on the GPU (llmc/kernels/encoder.c). In cbwc the
// rows are centred at the read: out = (e - mean(e)) + (p - mean(p))
// (docs/math.md section 3); the backward centres the gradient rows likewise.
#ifndef FOLDNORM_ENCODER_CUH
#define FOLDNORM_ENCODER_CUH

#include "cuda_common.cuh"

// one warp per (b, t) row
__global__ void encoder_forward_kernel(floatX *out, const int *tokens, const floatX *wte,
                                       const floatX *wpe, int BT, int T, int C, int centred) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= BT) return;
    const floatX *e = wte + (size_t)tokens[row] * C;
    const floatX *p = wpe + (size_t)(row % T) * C;
    float shift = 0.0f;
    if (centred) {
        float sum_e = 0.0f, sum_p = 0.0f;
        for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
            Pack<floatX> pe = load_pack(e + c), pp = load_pack(p + c);
            for (int k = 0; k < PACK_X; k++) {
                sum_e += to_float(pe.v[k]);
                sum_p += to_float(pp.v[k]);
            }
        }
        shift = warp_sum(sum_e) / (float)C + warp_sum(sum_p) / (float)C;
    }
    for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
        Pack<floatX> pe = load_pack(e + c), pp = load_pack(p + c), po;
        for (int k = 0; k < PACK_X; k++) {
            po.v[k] = from_float<floatX>(to_float(pe.v[k]) + to_float(pp.v[k]) - shift);
        }
        store_pack(out + (size_t)row * C + c, po);
    }
}

// row_shift[row] = mean(dout row) in cbwc, 0 otherwise; one warp per row
__global__ void encoder_row_means_kernel(float *row_shift, const floatX *dout, int BT, int C,
                                         int centred) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= BT) return;
    float sum = 0.0f;
    if (centred) {
        for (int c = lane * PACK_X; c < C; c += 32 * PACK_X) {
            Pack<floatX> pd = load_pack(dout + (size_t)row * C + c);
            for (int k = 0; k < PACK_X; k++) sum += to_float(pd.v[k]);
        }
        sum = warp_sum(sum) / (float)C;
    }
    if (lane == 0) row_shift[row] = sum;
}

// The wte gradient without atomics, over the rows grouped by token and cut
// into pieces of at most TOKEN_PIECE_ROWS rows (llmc/kernels/token_buckets.h),
// so that a frequent token's rows are summed by many blocks. The order, fixed:
// a token's rows in increasing order, in pieces of TOKEN_PIECE_ROWS
// consecutive rows each summed from 0; the pieces' sums added in order from
// 0; that total added to the token's row of dwte once. A token of at most
// TOKEN_PIECE_ROWS rows is one piece: the serial sum of its rows, added.
// Thread (piece, column) sums the piece's rows of dout - shift; a whole
// bucket's sum goes into dwte, a split bucket's piece into its partial slot.
// grid (pieces, ceil(C / blockDim.x)).
__global__ void encoder_backward_wte_pieces_kernel(float *dwte, float *partials, const floatX *dout,
                                                   const float *row_shift, const int *piece_start,
                                                   const int *piece_dest, const int *rows, int C) {
    const int p = blockIdx.x;
    const int c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float sum = 0.0f;
    for (int e = piece_start[p]; e < piece_start[p + 1]; e++) {
        const int row = rows[e];
        sum += to_float(dout[(size_t)row * C + c]) - row_shift[row];
    }
    const int dest = piece_dest[p];
    if (dest >= 0) {
        dwte[(size_t)dest * C + c] += sum;
    } else {
        partials[(size_t)(-1 - dest) * C + c] = sum;
    }
}

// split bucket g: dwte[split_token[g]] += its pieces' partial sums, added in
// piece order from 0. grid (split buckets, ceil(C / blockDim.x)).
__global__ void encoder_backward_wte_split_kernel(float *dwte, const float *partials,
                                                  const int *split_token, const int *split_first,
                                                  int C) {
    const int g = blockIdx.x;
    const int c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float total = 0.0f;
    for (int s = split_first[g]; s < split_first[g + 1]; s++) {
        total += partials[(size_t)s * C + c];
    }
    dwte[(size_t)split_token[g] * C + c] += total;
}

// dwpe[t] += sum over b of (dout[b, t] - shift), b in order: deterministic
__global__ void encoder_backward_wpe_kernel(float *dwpe, const floatX *dout, const float *row_shift,
                                            int B, int T, int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    const int t = (int)(i / C), c = (int)(i % C);
    float sum = 0.0f;
    for (int b = 0; b < B; b++) {
        const size_t row = (size_t)b * T + t;
        sum += to_float(dout[row * C + c]) - row_shift[row];
    }
    dwpe[i] += sum;
}

static inline void encoder_forward_cuda(floatX *out, const int *tokens, const floatX *wte,
                                        const floatX *wpe, int B, int T, int C, int centred,
                                        cudaStream_t stream) {
    encoder_forward_kernel<<<ceil_div((long long)B * T, 4), 128, 0, stream>>>(
        out, tokens, wte, wpe, B * T, T, C, centred);
    CUDA_CHECK_LAUNCH();
}

// The rows grouped by token and cut into pieces on the host
// (token_buckets_build, token_pieces_build over the inputs), on the device,
// laid out as TokenBuckets' rows and TokenPieces; partials: scratch of
// token_pieces_max_slots(B T) x C floats.
typedef struct {
    int num_pieces, num_split;
    const int *rows, *piece_start, *piece_dest, *split_token, *split_first;
    float *partials;
} DeviceTokenBuckets;

// row_shift: B*T floats of scratch
static inline void encoder_backward_cuda(float *dwte, float *dwpe, float *row_shift,
                                         const floatX *dout, const DeviceTokenBuckets *buckets,
                                         int B, int T, int C, int centred, cudaStream_t stream) {
    const int BT = B * T;
    encoder_row_means_kernel<<<ceil_div(BT, 4), 128, 0, stream>>>(row_shift, dout, BT, C,
                                                                  centred);
    CUDA_CHECK_LAUNCH();
    if (buckets->num_pieces > 0) {
        dim3 grid(buckets->num_pieces, ceil_div(C, 256));
        encoder_backward_wte_pieces_kernel<<<grid, 256, 0, stream>>>(
            dwte, buckets->partials, dout, row_shift, buckets->piece_start, buckets->piece_dest,
            buckets->rows, C);
        CUDA_CHECK_LAUNCH();
    }
    if (buckets->num_split > 0) {
        dim3 grid(buckets->num_split, ceil_div(C, 256));
        encoder_backward_wte_split_kernel<<<grid, 256, 0, stream>>>(
            dwte, buckets->partials, buckets->split_token, buckets->split_first, C);
        CUDA_CHECK_LAUNCH();
    }
    encoder_backward_wpe_kernel<<<ceil_div((long long)T * C, 256), 256, 0, stream>>>(
        dwpe, dout, row_shift, B, T, C);
    CUDA_CHECK_LAUNCH();
}

#endif
