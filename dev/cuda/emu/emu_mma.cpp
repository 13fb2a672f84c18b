// CUDA emulation (a logic check, not a device run): bf16 mma.m16n8k16 and
// ldmatrix.m8n8 as warp rendezvous (emu_mma.h), with the register layouts of
// the PTX ISA (sections "Matrix Fragments for mma.m16n8k16 with floating
// point type" and "Warp-level matrix load instruction: ldmatrix", 9.7.14.5.8
// and 9.7.14.5.15 in PTX ISA 9.0). This is an independent transcription of
// those tables; the self-check (dev/cuda/mma_check.cuh) holds
// llmc/cuda/mma.cuh's own transcription and a host product against it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_bf16.h"
#include "cuda_runtime.h"
#include "emu_internal.h"
#include "emu_mma.h"
#include "emu_race.h"

namespace emu {
namespace {

enum Mutation { MUTATION_NONE, MUTATION_SWAP_LANES, MUTATION_NO_TRANS };

// EMU_MMA_MUTATION: a deliberately wrong layout that the self-check must catch
//   swap-lanes: lanes 0 and 4 trade their operands (in mma, A's rows 0 and 1
//               for k 0-1 and B's columns 0 and 1; in ldmatrix, rows 0 and 4
//               of the first matrix)
//   no-trans:   ldmatrix ignores .trans
Mutation mutation() {
    static const Mutation m = [] {
        const char *v = getenv("EMU_MMA_MUTATION");
        if (v == nullptr || v[0] == '\0') return MUTATION_NONE;
        if (strcmp(v, "swap-lanes") == 0) return MUTATION_SWAP_LANES;
        if (strcmp(v, "no-trans") == 0) return MUTATION_NO_TRANS;
        device_abort("EMU_MMA_MUTATION=%s: expected swap-lanes or no-trans", v);
    }();
    return m;
}

// the lane whose staged operands stand for lane l's
int source_lane(int l) {
    if (mutation() != MUTATION_SWAP_LANES) return l;
    return l == 0 ? 4 : l == 4 ? 0 : l;
}

// the last staging word names the operation a lane is at (0: none of these)
const int TAG_WORD = WARP_SLOT_WORDS - 1;
const uint64_t TAG_MMA = 1;
uint64_t ldmatrix_tag(int count, bool trans) {
    return 2 | (uint64_t)count << 8 | (uint64_t)trans << 16;
}
void describe(char *buf, size_t n, uint64_t tag) {
    if (tag == TAG_MMA) snprintf(buf, n, "mma.m16n8k16");
    else if ((tag & 0xff) == 2) snprintf(buf, n, "ldmatrix.x%d%s", (int)(tag >> 8 & 0xff), tag >> 16 ? ".trans" : "");
    else snprintf(buf, n, "no mma or ldmatrix (a shuffle, vote or __syncwarp)");
}

// the first barrier: every lane has staged its inputs; all must be at the same operation
void arrive(uint64_t tag, const char *what) {
    const int lane = lane_id();
    warp_slot(lane)[TAG_WORD] = tag;
    warp_barrier(0xffffffffu, what); // aborts in a partial warp or with an exited lane
    for (int l = 0; l < 32; l++) {
        const uint64_t other = warp_slot(l)[TAG_WORD];
        if (other != tag) {
            char mine[64], theirs[64];
            describe(mine, sizeof(mine), tag);
            describe(theirs, sizeof(theirs), other);
            device_abort("divergent warp: lane %d is at %s while lane %d is at %s", lane, mine, l,
                         theirs);
        }
    }
}

// the second barrier: every lane has read the staging; the tag is cleared, so
// a lane that meets a later mma at a shuffle is caught
void depart(const char *what) {
    warp_barrier(0xffffffffu, what);
    warp_slot(lane_id())[TAG_WORD] = 0;
}

float bf16_half(uint32_t r, int high) { return bf16_bits_to_float((uint16_t)(r >> (16 * high))); }

void check_row_address(const void *p, int lane, const char *what) {
    const uintptr_t a = (uintptr_t)p;
    if (a % 16 != 0) {
        device_abort("%s: lane %d's row address %p is not 16-byte aligned (a row of 8 b16 is read "
                     "as 16 bytes)", what, lane, p);
    }
    if (on_own_stack(p)) {
        device_abort("%s: lane %d's row address %p is in its local memory (a variable of the "
                     "thread), not in shared memory", what, lane, p);
    }
    if (device_bytes_after(p) > 0) {
        device_abort("%s: lane %d's row address %p is in global memory (cudaMalloc), not in "
                     "shared memory", what, lane, p);
    }
    const uintptr_t base = (uintptr_t)dynamic_shared_buffer(), bytes = dynamic_shared_bytes();
    if (a >= base && a < base + bytes && a + 16 > base + bytes) {
        device_abort("%s: lane %d's row of 16 bytes at %p overruns the dynamic shared memory "
                     "(%zu bytes)", what, lane, p, (size_t)bytes);
    }
}

// element col (b16) of the row that lane j supplied, read by the running lane:
// the race detector sees the read as this lane's, after the warp's first
// barrier (a warp collective orders the warp's earlier accesses before it; a
// write by another warp with no __syncthreads between is a race), at the
// kernel's call site pc
uint16_t row_element(int j, int col, const void *pc) {
    const char *row = (const char *)(uintptr_t)warp_slot(source_lane(j))[0];
    if (race::active) race::access(row + 2 * col, 2, race::READ, pc);
    uint16_t v;
    memcpy(&v, row + 2 * col, sizeof(v));
    return v;
}

} // namespace

void mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
    const char *what = "mma.sync.m16n8k16";
    const int lane = lane_id();
    uint64_t *mine = warp_slot(lane);
    mine[0] = a[0] | (uint64_t)a[1] << 32;
    mine[1] = a[2] | (uint64_t)a[3] << 32;
    mine[2] = b[0] | (uint64_t)b[1] << 32;
    arrive(TAG_MMA, what);
    if (lane == 0) race::mma_issued(); // one warp-wide mma (emu_traffic.h's count)
    // A (16x16) and B (16x8) whole from the lanes' registers; groupID = lane / 4,
    // threadID_in_group = lane % 4; element i is half i % 2 (low first) of register i / 2:
    //   a_i: row groupID (+8 for i = 2, 3, 6, 7), col 2 threadID_in_group + i % 2 (+8 for i >= 4)
    //   b_i: row (k) 2 threadID_in_group + i % 2 (+8 for i >= 2), col (n) groupID
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; l++) {
        const uint64_t *s = warp_slot(source_lane(l));
        const uint32_t ra[4] = {(uint32_t)s[0], (uint32_t)(s[0] >> 32), (uint32_t)s[1],
                                (uint32_t)(s[1] >> 32)};
        const uint32_t rb[2] = {(uint32_t)s[2], (uint32_t)(s[2] >> 32)};
        const int group = l / 4, in_group = l % 4;
        for (int i = 0; i < 8; i++) {
            A[group + (i / 2 % 2) * 8][2 * in_group + i % 2 + (i / 4) * 8] = bf16_half(ra[i / 2], i % 2);
        }
        for (int i = 0; i < 4; i++) {
            B[2 * in_group + i % 2 + (i / 2) * 8][group] = bf16_half(rb[i / 2], i % 2);
        }
    }
    depart(what);
    // this lane's c_i and d_i: row groupID (+8 for i >= 2), col 2 threadID_in_group + i % 2.
    // The order: c, then the products for k = 0..15 in turn, each exact in fp32
    // (two 8-bit significands) and added with one fp32 add, rounded to nearest
    // even. The device's tensor core may add in another order and round its
    // intermediate sums otherwise: bf16 tolerances must allow for that.
    const int group = lane / 4, in_group = lane % 4;
    float out[4];
    for (int i = 0; i < 4; i++) {
        const int row = group + (i / 2) * 8, col = 2 * in_group + i % 2;
        float acc = c[i];
        for (int k = 0; k < 16; k++) acc += A[row][k] * B[k][col];
        out[i] = acc;
    }
    for (int i = 0; i < 4; i++) d[i] = out[i]; // d may be c
}

void ldmatrix_m8n8(uint32_t *r, int count, bool trans, const void *row_address) {
    static const char *const names[2][5] = {
        {"", "ldmatrix.x1", "ldmatrix.x2", "", "ldmatrix.x4"},
        {"", "ldmatrix.x1.trans", "ldmatrix.x2.trans", "", "ldmatrix.x4.trans"}};
    if (count != 1 && count != 2 && count != 4) device_abort("ldmatrix of %d matrices", count);
    const char *what = names[trans][count];
    const void *pc = __builtin_return_address(0); // in the kernel (its inlined ldmatrix_x*)
    const int lane = lane_id();
    if (lane < 8 * count) check_row_address(row_address, lane, what); // the others are unused
    warp_slot(lane)[0] = (uint64_t)(uintptr_t)row_address;
    arrive(ldmatrix_tag(count, trans), what);
    // lane j < 8 count supplies row j % 8 of matrix j / 8; lane l receives in
    // r[i] row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of matrix i (the
    // lower column in the low half); .trans: the same of the transposed matrix
    const bool transpose = trans && mutation() != MUTATION_NO_TRANS;
    const int row = lane / 4, col = 2 * (lane % 4);
    uint32_t out[4];
    for (int i = 0; i < count; i++) {
        const uint16_t lo = transpose ? row_element(8 * i + col, row, pc) : row_element(8 * i + row, col, pc);
        const uint16_t hi = transpose ? row_element(8 * i + col + 1, row, pc)
                                      : row_element(8 * i + row, col + 1, pc);
        out[i] = lo | (uint32_t)hi << 16;
    }
    depart(what);
    for (int i = 0; i < count; i++) r[i] = out[i];
}

} // namespace emu
