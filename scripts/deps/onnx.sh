#!/usr/bin/env bash
# onnxruntime-node (MIT; it ships the CPU ONNX Runtime for linux-x64) into
# data/npm_ort/, for the ONNX export test (test/onnx_ort.js) and benchmark
# (dev/bench/onnx_bench.sh). ONNXRUNTIME_NODE_INSTALL=skip: its install script
# would otherwise fetch CUDA binaries from nuget.org, which the CPU runtime does
# not need. No-op when done.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=1.30.0
pkg=data/npm_ort/node_modules/onnxruntime-node
if [ ! -f "$pkg/package.json" ] || ! grep -q "\"version\": \"$version\"" "$pkg/package.json"; then
    if ! command -v npm > /dev/null; then  # Debian's nodejs comes without it
        sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends npm
    fi
    echo "installing onnxruntime-node@$version (npm) into data/npm_ort"
    mkdir -p data/npm_ort
    ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-audit --no-fund --prefix data/npm_ort \
        "onnxruntime-node@$version" > /dev/null
fi
