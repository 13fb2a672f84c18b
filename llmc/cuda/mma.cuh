// Tensor-core products for one warp: bf16 mma.sync.m16n8k16 with fp32
// accumulators (D = A B + C, A 16x16, B 16x8, C and D 16x8) and ldmatrix
// loads from shared memory. Kernels call these functions and never hold PTX
// themselves, so the CUDA emulator can stand in for them
// (dev/cuda/emu/emu_mma.cpp). Every function is warp-collective: all 32
// lanes of a full warp call it together, with the same arguments where the
// comment says so. The layouts are the PTX ISA's ("Matrix Fragments for
// mma.m16n8k16 with floating point type" and "Warp-level matrix load
// instruction: ldmatrix", sections 9.7.14.5.8 and 9.7.14.5.15 in PTX ISA 9.0);
// dev/cuda/mma.cu checks them against a host product. Needs sm_80 or newer.
#ifndef FOLDNORM_MMA_CUH
#define FOLDNORM_MMA_CUH

#include <stdint.h>

#include "cuda_common.cuh"

#if defined(__CUDA_EMULATED__)
#include <emu_mma.h> // the emulator's warp rendezvous for mma and ldmatrix
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "llmc/cuda/mma.cuh: bf16 mma.sync.m16n8k16 needs sm_80 or newer (CUDA_ARCHS in mk/cuda.mk)"
#endif

// A lane's registers. Element e of a fragment sits in register e / 2, in its
// low 16 bits for even e (the ISA's "elements, low to high").
struct MmaFragA { uint32_t r[4]; }; // A, 16x16 bf16 row-major ("row"): elements a0..a7
struct MmaFragB { uint32_t r[2]; }; // B, 16x8 (k x n) bf16 ("col"): elements b0..b3
struct MmaFragC { float r[4]; };    // C or D, 16x8 fp32: elements c0..c3

// Which element of the matrix a lane's element e is (groupID = lane / 4,
// threadID_in_group = lane % 4 in the ISA's words):
//   A: row lane/4 (+8 for e = 2, 3, 6, 7), col 2 (lane%4) + e%2 (+8 for e >= 4)
//   B: row (k) 2 (lane%4) + e%2 (+8 for e >= 2), col (n) lane/4
//   C: row lane/4 (+8 for e >= 2), col 2 (lane%4) + e%2
// so a row of C lies in the 4 lanes 4 (row%8) .. 4 (row%8) + 3 (a row
// reduction is two __shfl_xor_sync, offsets 1 and 2).
__host__ __device__ inline int mma_a_row(int lane, int e) { return lane / 4 + (e / 2 % 2) * 8; }
__host__ __device__ inline int mma_a_col(int lane, int e) { return 2 * (lane % 4) + e % 2 + (e / 4) * 8; }
__host__ __device__ inline int mma_b_row(int lane, int e) { return 2 * (lane % 4) + e % 2 + (e / 2) * 8; }
__host__ __device__ inline int mma_b_col(int lane, int /*e*/) { return lane / 4; }
__host__ __device__ inline int mma_c_row(int lane, int e) { return lane / 4 + (e / 2) * 8; }
__host__ __device__ inline int mma_c_col(int lane, int e) { return 2 * (lane % 4) + e % 2; }

// the lane in its warp (warps are runs of 32 in the linear thread index)
__device__ inline int mma_lane_id() {
    return (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32);
}

// two values as one register of bf16 pairs: lo in the low half, rounded to nearest even
__device__ inline uint32_t mma_pack_bf16(float lo, float hi) {
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16;
}

// d = a b + c (d may be c); fp32 accumulation of exact bf16 products, the
// order of the sums is the device's (the emulator's: emu_mma.cpp)
__device__ inline void mma_bf16_m16n8k16(MmaFragC &d, const MmaFragA &a, const MmaFragB &b,
                                         const MmaFragC &c) {
#if defined(__CUDA_EMULATED__)
    emu::mma_m16n8k16_bf16(d.r, a.r, b.r, c.r);
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
                 : "=f"(d.r[0]), "=f"(d.r[1]), "=f"(d.r[2]), "=f"(d.r[3])
                 : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]),
                   "f"(c.r[0]), "f"(c.r[1]), "f"(c.r[2]), "f"(c.r[3]));
#endif
}

// ldmatrix: 1, 2 or 4 matrices of 8x8 b16 from shared memory. Lane j
// (j < 8 x the count; the other lanes' addresses are not used) passes the
// address of row j % 8 of matrix j / 8: 16 bytes, 16-byte aligned, in shared
// memory; a matrix's rows need not be contiguous. Lane l receives in r[i]
// row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of matrix i (the lower
// column in the low half); _trans: of matrix i transposed, i.e. column l / 4,
// rows 2 (l % 4) and 2 (l % 4) + 1. The asm reads memory the compiler cannot
// see: the "memory" clobber keeps earlier stores to the tile before it.
#if !defined(__CUDA_EMULATED__)
__device__ inline uint32_t mma_shared_address(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
#endif
__device__ inline void ldmatrix_x1(uint32_t (&r)[1], const void *row_address) {
#if defined(__CUDA_EMULATED__)
    emu::ldmatrix_m8n8(r, 1, false, row_address);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0]) : "r"(mma_shared_address(row_address)) : "memory");
#endif
}
__device__ inline void ldmatrix_x2(uint32_t (&r)[2], const void *row_address) {
#if defined(__CUDA_EMULATED__)
    emu::ldmatrix_m8n8(r, 2, false, row_address);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(mma_shared_address(row_address)) : "memory");
#endif
}
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const void *row_address) {
#if defined(__CUDA_EMULATED__)
    emu::ldmatrix_m8n8(r, 4, false, row_address);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(mma_shared_address(row_address)) : "memory");
#endif
}
__device__ inline void ldmatrix_x1_trans(uint32_t (&r)[1], const void *row_address) {
#if defined(__CUDA_EMULATED__)
    emu::ldmatrix_m8n8(r, 1, true, row_address);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0]) : "r"(mma_shared_address(row_address)) : "memory");
#endif
}
__device__ inline void ldmatrix_x2_trans(uint32_t (&r)[2], const void *row_address) {
#if defined(__CUDA_EMULATED__)
    emu::ldmatrix_m8n8(r, 2, true, row_address);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(mma_shared_address(row_address)) : "memory");
#endif
}
__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void *row_address) {
#if defined(__CUDA_EMULATED__)
    emu::ldmatrix_m8n8(r, 4, true, row_address);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(mma_shared_address(row_address)) : "memory");
#endif
}

// Fragments from bf16 tiles in shared memory with a row stride of ld
// elements (ld a multiple of 8 and tile 16-byte aligned, so every row
// address is). All lanes pass the same tile and ld.

// A from tile[m * ld + k], m, k < 16 (e.g. 16 query rows by 16 features):
// matrices 0..3 are rows 0-7 | 8-15 by columns 0-7 | 8-15 in the order of A's registers
__device__ inline MmaFragA mma_load_a(const __nv_bfloat16 *tile, int ld) {
    const int l = mma_lane_id();
    MmaFragA a;
    ldmatrix_x4(a.r, tile + (l % 8 + (l / 8 % 2) * 8) * ld + (l / 16) * 8);
    return a;
}
// A from tile[k * ld + m], i.e. A transposed row-major (the P^T of dV = P^T dO
// from P stored as P[query][key]): matrix i is A's rows (i % 2) 8.., columns
// (i / 2) 8.., which is the stored 8x8 block at rows (i / 2) 8.., columns
// (i % 2) 8.., transposed by ldmatrix
__device__ inline MmaFragA mma_load_a_trans(const __nv_bfloat16 *tile, int ld) {
    const int l = mma_lane_id();
    MmaFragA a;
    ldmatrix_x4_trans(a.r, tile + ((l / 16) * 8 + l % 8) * ld + (l / 8 % 2) * 8);
    return a;
}
// B from tile[n * ld + k], n < 8, k < 16, i.e. B transposed row-major (the
// keys of S = Q K^T: 8 keys by 16 features): matrix i is k 8i..8i+7
__device__ inline MmaFragB mma_load_b_nk(const __nv_bfloat16 *tile, int ld) {
    const int l = mma_lane_id() % 16; // lanes 16-31 repeat 0-15 (unused by x2)
    MmaFragB b;
    ldmatrix_x2(b.r, tile + (l % 8) * ld + (l / 8) * 8);
    return b;
}
// B from tile[k * ld + n], k < 16, n < 8, i.e. B row-major (the values of
// O = P V: 16 keys by 8 features): rows k 8i..8i+7, transposed by ldmatrix
__device__ inline MmaFragB mma_load_b_kn(const __nv_bfloat16 *tile, int ld) {
    const int l = mma_lane_id() % 16;
    MmaFragB b;
    ldmatrix_x2_trans(b.r, tile + l * ld);
    return b;
}

// Two B fragments with one ldmatrix.x4 (half the instructions of two
// mma_load_b_*, and each feeds the mma of two 16-row A strips in the
// attention kernels): b0 for n 0-7, b1 for n 8-15.
// From tile[n * ld + k], n, k < 16 (keys by features): matrices 0-3 are
// n 0-7 | k 0-7, n 0-7 | k 8-15, n 8-15 | k 0-7, n 8-15 | k 8-15
__device__ inline void mma_load_b_nk_pair(MmaFragB &b0, MmaFragB &b1, const __nv_bfloat16 *tile,
                                          int ld) {
    const int l = mma_lane_id();
    uint32_t r[4];
    ldmatrix_x4(r, tile + ((l / 16) * 8 + l % 8) * ld + (l / 8 % 2) * 8);
    b0 = MmaFragB{{r[0], r[1]}};
    b1 = MmaFragB{{r[2], r[3]}};
}
// From tile[k * ld + n], k, n < 16 (keys by features), transposed by
// ldmatrix: matrices 0-3 are k 0-7 | n 0-7, k 8-15 | n 0-7, k 0-7 | n 8-15, k 8-15 | n 8-15
__device__ inline void mma_load_b_kn_pair(MmaFragB &b0, MmaFragB &b1, const __nv_bfloat16 *tile,
                                          int ld) {
    const int l = mma_lane_id();
    uint32_t r[4];
    ldmatrix_x4_trans(r, tile + ((l / 8 % 2) * 8 + l % 8) * ld + (l / 16) * 8);
    b0 = MmaFragB{{r[0], r[1]}};
    b1 = MmaFragB{{r[2], r[3]}};
}

// C to tile[m * ld + n], m < 16, n < 8, as T (float, or bf16 rounded to nearest even); any memory
template <typename T> __device__ inline void mma_store_c(T *tile, int ld, const MmaFragC &c) {
    const int l = mma_lane_id();
    for (int e = 0; e < 4; e++) tile[mma_c_row(l, e) * ld + mma_c_col(l, e)] = from_float<T>(c.r[e]);
}

// A (16x16) from the C fragments of its columns 0-7 (left) and 8-15 (right),
// rounded to bf16, with no data leaving the lane: C's (row, col) pairs are
// A's (e.g. P = softmax(S) as the A of P V)
__device__ inline MmaFragA mma_a_from_c(const MmaFragC &left, const MmaFragC &right) {
    MmaFragA a;
    a.r[0] = mma_pack_bf16(left.r[0], left.r[1]);   // row lane/4,     cols 2 (lane%4) + 0, 1
    a.r[1] = mma_pack_bf16(left.r[2], left.r[3]);   // row lane/4 + 8
    a.r[2] = mma_pack_bf16(right.r[0], right.r[1]); // row lane/4,     cols + 8
    a.r[3] = mma_pack_bf16(right.r[2], right.r[3]); // row lane/4 + 8, cols + 8
    return a;
}

#endif
