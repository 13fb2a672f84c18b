#!/usr/bin/env bash
# ONNX Runtime inference, LN vs folded (issue 14): a random GPT-2 (default
# d12, 124M) exported by bin/onnx_export as ln and folded (--fold) graphs,
# timed in onnxruntime-node (CPU) over B:T shapes. Not a test: it prints a
# table (docs/performance.md), it asserts nothing.
#   dev/bench/onnx_bench.sh [DESCRIPTOR [THREADS [REPS [B:T ...]]]]
set -euo pipefail
cd "$(dirname "$0")/../.."
desc=${1:-d12}
threads=${2:-2}
reps=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
shapes=${*:-1:64 1:256 1:1024 8:64 8:256}
out=${BENCH_OUT:-out/onnx_bench}
mkdir -p "$out"
make -s onnx_export
[ -f data/npm_ort/node_modules/onnxruntime-node/package.json ] || scripts/deps/onnx.sh
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo none), model $desc"
line=$(bin/onnx_export -e "$desc" "$out/$desc-ln.onnx")
echo "$line"
bin/onnx_export -e "$desc" --fold "$out/$desc-folded.onnx"
V=$(echo "$line" | sed 's/.* V=\([0-9]*\).*/\1/')
node dev/bench/onnx_bench.js "$out/$desc-ln.onnx" "$out/$desc-folded.onnx" "$V" "$threads" "$reps" $shapes
