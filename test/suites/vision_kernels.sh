#!/usr/bin/env bash
# The vectorized kernels of the ViT/Swin step (fast exp, GELU, tile_gemm,
# windowed attention forward and backward) against double-precision references,
# and data-parallel steps on per-thread model copies against one thread.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x bin/test_kernels ] || make -s test_kernels
bin/test_kernels
