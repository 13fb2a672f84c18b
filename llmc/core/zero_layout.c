// ZeRO-1's slices (zero_layout.h).
#include "zero_layout.h"

ZeroSlice zero_slice(size_t chunk_offset, size_t n, int rank, int world, ZeroRemainder rule) {
    const size_t w = (size_t)world, r = (size_t)rank;
    const size_t base = n / w, extra = rule == ZERO_SPREAD ? n % w : 0;
    ZeroSlice s = {chunk_offset + r * base + (r < extra ? r : extra), base + (r < extra ? 1 : 0)};
    return s;
}

ZeroSlice zero_tail(size_t chunk_offset, size_t n, int world, ZeroRemainder rule) {
    const size_t in_slices = rule == ZERO_TAIL ? n / (size_t)world * (size_t)world : n;
    ZeroSlice s = {chunk_offset + in_slices, n - in_slices};
    return s;
}

int zero_cuts(size_t n, int world, ZeroRemainder rule) {
    return world > 0 && (rule != ZERO_EXACT || n % (size_t)world == 0);
}
