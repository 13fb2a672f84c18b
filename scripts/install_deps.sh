#!/usr/bin/env bash
# Installs the Debian packages foldnorm's build, demo and tests need.
# Fast no-op when they are all present; uses sudo when not root.
set -euo pipefail
packages=(build-essential pkg-config libopenblas-openmp-dev python3-torch python3-numpy bible-kjv bible-kjv-text time)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
