// llmc/core/zero_layout: for random chunk sizes n, offsets and 1..9 ranks,
// under each remainder rule, the ranks' slices in rank order (and the tail)
// tile the chunk exactly, with the sizes the rule promises: ZERO_SPREAD sizes
// differ by at most one, larger first; ZERO_TAIL and ZERO_EXACT slices are
// equal, the tail holds n % W values (ZERO_TAIL) or none; ZERO_EXACT cuts
// only multiples of W. A layout that gives ZERO_SPREAD's extra values to the
// last ranks must fail the same checks. Prints its seed; any seed must pass.
#include <stdio.h>
#include <stdlib.h>

#include "core/cli.h"
#include "core/rand.h"
#include "core/zero_layout.h"

static int fails = 0;
static int quiet = 0; // the negative control's failures are expected

static void check(int ok, const char *what, size_t n, int world, int rule) {
    if (!ok && fails++ < 10 && !quiet) {
        printf("FAIL %s: n %zu, world %d, rule %d\n", what, n, world, rule);
    }
}

typedef ZeroSlice (*SliceFn)(size_t, size_t, int, int, ZeroRemainder);

// the negative control: ZERO_SPREAD's extra values given to the last ranks
static ZeroSlice slice_extra_last(size_t offset, size_t n, int rank, int world, ZeroRemainder rule) {
    return rule == ZERO_SPREAD ? zero_slice(offset, n, world - 1 - rank, world, rule)
                               : zero_slice(offset, n, rank, world, rule);
}

static void check_chunk(SliceFn slice, size_t offset, size_t n, int world, ZeroRemainder rule) {
    const int cuts = zero_cuts(n, world, rule);
    check(cuts == (rule != ZERO_EXACT || n % (size_t)world == 0), "zero_cuts", n, world, rule);
    if (!cuts) {
        return;
    }
    size_t next = offset, smallest = n, largest = 0, previous = n + 1;
    for (int r = 0; r < world; r++) {
        const ZeroSlice s = slice(offset, n, r, world, rule);
        check(s.offset == next, "slices contiguous in rank order", n, world, rule);
        check(s.count <= previous, "larger slices first", n, world, rule);
        next = s.offset + s.count;
        previous = s.count;
        smallest = s.count < smallest ? s.count : smallest;
        largest = s.count > largest ? s.count : largest;
    }
    const ZeroSlice tail = zero_tail(offset, n, world, rule);
    check(tail.offset == next, "the tail follows the slices", n, world, rule);
    check(tail.offset + tail.count == offset + n, "slices and tail cover the chunk", n, world, rule);
    check(tail.count == (rule == ZERO_TAIL ? n % (size_t)world : 0), "tail size", n, world, rule);
    check(rule == ZERO_SPREAD ? largest - smallest <= 1 : largest == smallest, "slice sizes", n,
          world, rule);
}

int main(int argc, char **argv) {
    unsigned long long seed = 20261204ULL;
    CliFlag flags[] = {
        {"-sd", CLI_SEED, &seed, 0, 0, "seed (default 20261204)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "test_zero_layout", .synopsis = "[options]",
                    .about = "llmc/core/zero_layout: the ranks' ZeRO-1 slices tile every chunk\n"
                             "under each remainder rule, for random sizes and 1..9 ranks.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);
    printf("test_zero_layout: seed %llu\n", seed);
    Rng rng;
    rng_seed(&rng, seed);
    int chunks = 0;
    for (int world = 1; world <= 9; world++) {
        for (int k = 0; k < 200; k++) {
            // small n (fewer values than ranks included) and large ones
            const size_t n = k < 20 ? (size_t)k : (size_t)(rng_uniform(&rng) * 1e7);
            const size_t offset = (size_t)(rng_uniform(&rng) * 1e6);
            for (int rule = ZERO_SPREAD; rule <= ZERO_EXACT; rule++) {
                check_chunk(zero_slice, offset, n, world, (ZeroRemainder)rule);
                chunks++;
            }
        }
    }
    printf("%s: %d chunks, %d failures\n", fails ? "FAIL" : "ok", chunks, fails);
    const int real_fails = fails;
    fails = 0;
    quiet = 1;
    for (int world = 2; world <= 9; world++) {
        check_chunk(slice_extra_last, 0, 7 * (size_t)world + 1, world, ZERO_SPREAD);
    }
    printf("%s negative control (ZERO_SPREAD's extra value on the last rank): %d failures, "
           "expected some\n", fails ? "ok" : "FAIL", fails);
    return real_fails != 0 || fails == 0;
}
