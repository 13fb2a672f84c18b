#!/usr/bin/env bash
# The vectorized kernels (fast exp, GELU, GPT-2's cross-entropy, tile_gemm,
# windowed attention forward and backward) against double-precision references,
# and data-parallel steps on per-thread model copies against one thread. The
# math functions are checked on every 61st float bit pattern (70M floats); in
# the fast tier (FOLDNORM_TEST_TIER=check) on every 997th (4.3M).
# tier: check
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x bin/test_kernels ] || make -s test_kernels
stride=61
[ "${FOLDNORM_TEST_TIER:-full}" = check ] && stride=997
bin/test_kernels $stride
