#!/usr/bin/env bash
# Checks that Fashion-MNIST is where train_vit looks for it by default: the
# Debian package dataset-fashion-mnist installs the four IDX .gz files under
# /usr/share/datasets/fashion-mnist (scripts/deps/vit.txt lists it; `make deps`
# installs it). Prints the directory; exit 1 with a hint if a file is missing.
set -euo pipefail
dir=${1:-/usr/share/datasets/fashion-mnist}
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    if [ ! -s "$dir/$f" ]; then
        echo "error: $dir/$f is missing; install Debian's dataset-fashion-mnist (make deps)" >&2
        exit 1
    fi
done
echo "$dir"
