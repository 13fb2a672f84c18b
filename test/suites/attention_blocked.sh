#!/usr/bin/env bash
# The blocked causal attention of the CPU GPT-2 (llmc/kernels/attention.c: online
# softmax, only the per-row logsumexp kept) against a naive double-precision
# attention, forward and backward, at T = 1, around the block size and past
# it (T not a multiple of the block), tolerance 1e-5 (test/test_attention.c).
# tier: check
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x bin/test_attention ] || make -s test_attention
bin/test_attention
