#!/usr/bin/env bash
# Makes here every input dev/gpu/check.sh takes to a device (it has no network
# and may lack PyTorch), then prints the device tool's exact call:
#   .llmc/                       llm.c's tree (the side-by-side rows), from a git
#                                mirror (the session's fetch tool: github:karpathy/llm.c)
#                                or, with network, a shallow clone
#   .llmc/cudnn-frontend/include cudnn-frontend's headers (llm.c's USE_CUDNN=1 row),
#                                likewise (github:NVIDIA/cudnn-frontend)
#   dev/gpu/states/              the reference states (dev/gpu/make_states.sh:
#                                PyTorch here), remade only when missing or older
#                                than the scripts that make them
#   .devdeps/                    zlib1g-dev and zlib1g unpacked (apt-get download,
#                                dpkg -x): gzip Fashion-MNIST on an image without zlib
# Whatever cannot be made is named with the reason and the way to get it; the
# rest is still made, and the call printed carries what is there. The carry
# list is checked against the tool's limits: 8 paths, 64 MiB with the tree.
#   dev/gpu/prepare.sh [--offline] [--root DIR] [--states DIR]
#   --offline      no network: mirrors only, no clone, no apt-get
#   --root DIR     put .llmc and .devdeps under DIR instead of the checkout (the
#                  dry run of test/suites/gpu_check_dry.sh)
#   --states DIR   the states' folder (default dev/gpu/states)
# Env: LLMC_MIRROR, FRONTEND_MIRROR (git folders; default the fetch tool's
# /work/.mirror/karpathy+llm.c/repo and /work/.mirror/NVIDIA+cudnn-frontend/repo).
# Exit 0 when the states are there (the one input the device cannot do
# without); the others missing are MISSING lines, not failures.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
repo=$PWD
offline=0 root=$repo states=dev/gpu/states
while [ $# -gt 0 ]; do
    case $1 in
    --offline) offline=1 ;;
    --root) root=${2:?--root needs a folder}; shift ;;
    --states) states=${2:?--states needs a folder}; shift ;;
    -h | --help) sed -n 2,27p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument '$1' (dev/gpu/prepare.sh -h)" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$root" && root=$(cd "$root" && pwd) || exit 2
llmc_mirror=${LLMC_MIRROR:-/work/.mirror/karpathy+llm.c/repo}
frontend_mirror=${FRONTEND_MIRROR:-/work/.mirror/NVIDIA+cudnn-frontend/repo}
missing=0
ok() { echo "ok      $*"; }
miss() { echo "MISSING $*"; missing=$((missing + 1)); }
tmp=$(mktemp -d /tmp/foldnorm_prepare.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# git_tree MIRROR URL DEST [PATH]: DEST holds the tree (or its PATH) of the
# mirror's HEAD, else of a shallow clone of URL; status 1 when neither works
git_tree() {
    local mirror=$1 url=$2 dest=$3 path=${4:-} src
    if git --git-dir="$mirror" rev-parse -q --verify HEAD > /dev/null 2>&1; then
        src=$mirror
    elif [ "$offline" = 0 ] && timeout 120 git clone -q --depth 1 "$url" "$tmp/clone" > "$tmp/clone.log" 2>&1; then
        src=$tmp/clone/.git
    else
        return 1
    fi
    rm -rf "$dest.part" && mkdir -p "$dest.part" &&
        git --git-dir="$src" archive HEAD ${path:+"$path"} | tar -x -C "$dest.part" &&
        git --git-dir="$src" rev-parse --short HEAD > "$dest.part/.prepared_from"
}
no_source() { # NAME MIRROR URL FETCH
    if [ "$offline" = 1 ]; then echo "no git mirror at $2 and --offline: call the fetch tool with $4 (or run without --offline where $3 is reachable), then rerun"
    else echo "no git mirror at $2 and no clone of $3 ($(tail -1 "$tmp/clone.log" 2> /dev/null | cut -c1-80)): call the fetch tool with $4, then rerun"; fi
}

# 1. llm.c's tree (cudnn-frontend kept when already there)
llmc=$root/.llmc
if [ -f "$llmc/train_gpt2.cu" ] && [ -f "$llmc/Makefile" ]; then
    ok ".llmc: llm.c already there ($(cat "$llmc/.prepared_from" 2> /dev/null || echo 'commit unknown'))"
elif git_tree "$llmc_mirror" https://github.com/karpathy/llm.c "$llmc"; then
    [ -d "$llmc/cudnn-frontend" ] && mv "$llmc/cudnn-frontend" "$llmc.part/"
    rm -rf "$llmc" && mv "$llmc.part" "$llmc"
    ok ".llmc: llm.c at $(cat "$llmc/.prepared_from")"
else
    miss ".llmc (llm.c: no side-by-side rows): $(no_source llm.c "$llmc_mirror" https://github.com/karpathy/llm.c github:karpathy/llm.c)"
fi

# 2. cudnn-frontend's include/ (llm.c's Makefile looks for ./cudnn-frontend/include)
fe=$llmc/cudnn-frontend
if [ ! -f "$llmc/Makefile" ]; then
    miss ".llmc/cudnn-frontend (llm.c USE_CUDNN=1, the headline row): needs .llmc first"
elif [ -d "$fe/include" ]; then
    ok ".llmc/cudnn-frontend/include already there"
elif git_tree "$frontend_mirror" https://github.com/NVIDIA/cudnn-frontend "$fe" include; then
    rm -rf "$fe" && mv "$fe.part" "$fe"
    ok ".llmc/cudnn-frontend/include at $(cat "$fe/.prepared_from")"
else
    miss ".llmc/cudnn-frontend (llm.c USE_CUDNN=1, the headline row): $(no_source cudnn-frontend "$frontend_mirror" https://github.com/NVIDIA/cudnn-frontend github:NVIDIA/cudnn-frontend)"
fi

# 3. the reference states: remade when a seeds list is missing or older than its makers
fresh=1
for f in seeds.txt vit_seeds.txt swin_seeds.txt; do
    [ -f "$states/$f" ] || { fresh=0; break; }
    for src in dev/gpu/make_states.sh dev/reference/gpt2.py dev/reference/vit.py dev/reference/swin.py; do
        [ "$src" -nt "$states/$f" ] && fresh=0
    done
done
states_ok=0
if [ $fresh = 1 ]; then
    ok "$states: the reference states already there and newer than their makers"
    states_ok=1
elif dev/gpu/make_states.sh "$states" > "$tmp/states.log" 2>&1; then
    ok "$states: $(tail -1 "$tmp/states.log")"
    states_ok=1
else
    miss "$states (every GPT-2, ViT and Swin test would SKIP): dev/gpu/make_states.sh failed: $(tail -2 "$tmp/states.log" | tr '\n' ' ' | cut -c1-160)"
fi

# 4. zlib for gzip input on an image without it
deps=$root/.devdeps
if [ -f "$deps/usr/include/zlib.h" ]; then
    ok ".devdeps: zlib already there"
elif [ "$offline" = 1 ]; then
    miss ".devdeps (only Fashion-MNIST's .gz needs it; the build leaves gzip out without): --offline: rerun without it where apt-get download works"
elif (cd "$tmp" && timeout 120 apt-get download zlib1g-dev zlib1g > "$tmp/apt.log" 2>&1) &&
     mkdir -p "$deps" && for deb in "$tmp"/zlib1g*.deb; do dpkg -x "$deb" "$deps" || exit 1; done; then
    ok ".devdeps: $(cd "$tmp" && ls zlib1g*.deb | tr '\n' ' ')unpacked"
else
    miss ".devdeps (only Fashion-MNIST's .gz needs it): apt-get download zlib1g-dev zlib1g failed: $(tail -1 "$tmp/apt.log" 2> /dev/null | cut -c1-100)"
fi

# the call: what is there is carried; sizes against the tool's limits
rel() { case $1 in "$repo"/*) echo "${1#"$repo"/}" ;; /*) echo "$1" ;; *) echo "$1" ;; esac; }
carry=()
[ $states_ok = 1 ] && carry+=("$(rel "$(cd "$states" && pwd)")")
[ -f "$llmc/Makefile" ] && carry+=("$(rel "$llmc")")
[ -f "$deps/usr/include/zlib.h" ] && carry+=("$(rel "$deps")")
[ -d data/fashion-mnist ] && carry+=(data/fashion-mnist)
tree_bytes=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2> /dev/null | tail -1 | cut -f1)
total=$tree_bytes
echo
echo "carried (the tree: $((tree_bytes / 1024)) KiB):"
for c in "${carry[@]}"; do
    b=$(du -sb "$c" | cut -f1)
    total=$((total + b))
    printf '  %-40s %6d KiB\n' "$c" $((b / 1024))
    case $c in /*) echo "  warning: $c is outside the checkout: the device tool carries only paths inside it" ;; esac
done
limit=$((64 << 20))
echo "  total $((total / 1024)) KiB of $((limit / 1024)) KiB, ${#carry[@]} of 8 paths"
list=$(printf '"%s", ' "${carry[@]}")
echo
echo "the device call (the tool run; about 10 minutes of the 15 a task gets):"
echo "  run(command=\"bash dev/gpu/check.sh \$OUT\", carry=[${list%, }], timeout_s=600)"
status=0
if [ "$total" -gt "$limit" ] || [ ${#carry[@]} -gt 8 ]; then
    echo "FAIL the carry is over the tool's limits: leave data/fashion-mnist behind"
    status=1
fi
[ $missing -gt 0 ] && echo "($missing input(s) MISSING above: the call still runs; their rows will say so)"
[ $states_ok = 1 ] || status=1
exit $status
