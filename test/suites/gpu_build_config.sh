#!/usr/bin/env bash
# tier: check
# mk/cuda.mk finds cuDNN and NCCL where a GPU image has them, and the GPU
# side's host code needs no zlib: checked on fake trees laid out like the
# device image (docs/cuda.md, "On a GPU machine"), through `make cuda-config`
# (what the build would use) and a real link against stub libraries.
#   1. the device image: no cuDNN or NCCL in the toolkit or the system folders,
#      only NVIDIA's wheels (site-packages/nvidia/cudnn, nvidia/nccl: headers
#      and the versioned libcudnn.so.9, libnccl.so.2 alone) in a Python venv:
#      both found there, -I for each, linked by full name (-l:libcudnn.so.9)
#      with an rpath; a program linked with those flags runs and calls the
#      stubs with no LD_LIBRARY_PATH
#   2. controls: the venv not asked (CUDA_PYTHONS=none): neither found, no
#      -DFOLDNORM_CUDNN; CUDNN=0: left out although the wheel is there
#   3. CUDNN_HOME (a tarball layout, with libcudnn.so) comes before the wheel:
#      -lcudnn from there; cudnn.h in CUDA_HOME: -lcudnn with the toolkit's -L
#   4. no zlib: a compiler whose zlib.h is an #error (as an image without
#      zlib1g-dev): ZLIB=0 is detected, checksum.o and idx.o build with it;
#      control: forcing ZLIB=1 with that compiler fails on the #error
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
work=${1:-$(mktemp -d)}/gpu_build_config
rm -rf "$work"; mkdir -p "$work"
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
PY=${PYTHON:-/usr/bin/python3}

# the fake toolkit: an nvcc that only says its version, empty include/ and lib64/
fake=$work/image
mkdir -p "$fake/cuda/bin" "$fake/cuda/include" "$fake/cuda/lib64" "$fake/usr/include" "$fake/usr/lib"
printf '#!/bin/sh\necho "Cuda compilation tools, release 13.0, V13.0.0"\n' > "$fake/cuda/bin/nvcc"
chmod +x "$fake/cuda/bin/nvcc"
# a venv as the device image's /opt/torch/.venv, with the two wheels' folders
if ! "$PY" -m venv --without-pip "$fake/venv" > "$work/venv.log" 2>&1; then
    echo "FAIL python3 -m venv: $(tail -2 "$work/venv.log")"; exit 1
fi
site=$("$fake/venv/bin/python3" -c 'import site; print(site.getsitepackages()[0])')
# stub_lib DIR SONAME SYMBOL VALUE: a shared library whose SYMBOL() returns VALUE
stub_lib() {
    printf 'int %s(void) { return %d; }\n' "$3" "$4" > "$work/$3.c"
    gcc -shared -fPIC -Wl,-soname,"$2" "$work/$3.c" -o "$1/$2"
}
for lib in cudnn nccl; do mkdir -p "$site/nvidia/$lib/include" "$site/nvidia/$lib/lib"; done
echo '/* stub */' > "$site/nvidia/cudnn/include/cudnn.h"
echo '/* stub */' > "$site/nvidia/nccl/include/nccl.h"
stub_lib "$site/nvidia/cudnn/lib" libcudnn.so.9 stub_cudnn_version 91700 || { echo "FAIL stub library"; exit 1; }
stub_lib "$site/nvidia/nccl/lib" libnccl.so.2 stub_nccl_version 22809 || { echo "FAIL stub library"; exit 1; }

# config VAR=VALUE...: make cuda-config on the fake image, into $work/config.txt
config() {
    env -u CUDNN_HOME -u NCCL_HOME -u CUDA_LIBDIR -u CUDA_SITE_DIRS -u CUDNN -u NCCL -u ZLIB \
        make -s --no-print-directory NVCC="$fake/cuda/bin/nvcc" CUDA_HOME="$fake/cuda" CUDA_SYSTEM_ROOTS="$fake/usr" \
        CUDA_PYTHONS="$fake/venv/bin/python3" "$@" cuda-config > "$work/config.txt" 2> "$work/config.err"
}
field() { sed -n "s/^$1=//p" "$work/config.txt"; }

# 1. the device image's layout
cudnn_lib=$site/nvidia/cudnn/lib nccl_lib=$site/nvidia/nccl/lib
if ! config; then
    bad "make cuda-config on the device layout: $(head -3 "$work/config.err")"
else
    want_cudnn="-L$cudnn_lib -Wl,-rpath,$cudnn_lib -l:libcudnn.so.9"
    want_nccl="-L$nccl_lib -Wl,-rpath,$nccl_lib -l:libnccl.so.2"
    flags=$(field NVCC_FLAGS)
    if [ "$(field CUDNN)" = "found in a Python wheel: $site/nvidia/cudnn/include" ] &&
       [ "$(field NCCL)" = "found in a Python wheel: $site/nvidia/nccl/include" ] &&
       [ "$(field CUDNN_LDLIBS)" = "$want_cudnn" ] && [ "$(field NCCL_LDLIBS)" = "$want_nccl" ] &&
       [[ " $flags " == *" -DFOLDNORM_CUDNN -I$site/nvidia/cudnn/include "* ]] &&
       [[ " $flags " == *" -DFOLDNORM_NCCL -I$site/nvidia/nccl/include "* ]] &&
       [[ " $(field CUDA_LDLIBS) " == *" $want_nccl $want_cudnn "* ]] &&
       [ "$(field CUDA_RUNTIME_LIBDIRS)" = "$fake/cuda/lib64 $nccl_lib $cudnn_lib" ]; then
        ok "wheels only: cuDNN and NCCL found in the venv's site-packages, -I each, -l:libcudnn.so.9 -l:libnccl.so.2 with rpaths"
    else
        bad "wheels only: the config is not what the build needs:"; sed 's/^/     /' "$work/config.txt"
    fi
    # the flags as the build uses them, on a real link and run (no LD_LIBRARY_PATH)
    printf '#include <stdio.h>\nint stub_cudnn_version(void);\nint stub_nccl_version(void);\n%s\n' \
        'int main(void) { printf("%d %d\n", stub_cudnn_version(), stub_nccl_version()); return 0; }' > "$work/main.c"
    # shellcheck disable=SC2046 # the flags are words
    if gcc "$work/main.c" $(field NCCL_LDLIBS) $(field CUDNN_LDLIBS) -o "$work/main" > "$work/link.log" 2>&1 &&
       [ "$(env -u LD_LIBRARY_PATH "$work/main" 2>&1)" = "91700 22809" ]; then
        ok "a program linked with those flags runs and reaches both stubs through the rpaths"
    else
        bad "link and run with the wheel flags: $(head -3 "$work/link.log") $("$work/main" 2>&1 | head -2)"
    fi
fi

# 2. controls: without the venv neither is found; CUDNN=0 leaves the wheel's out
if config CUDA_PYTHONS=none && [ "$(field CUDNN)" = "not found" ] && [ "$(field NCCL)" = "not found" ] &&
   [[ " $(field NVCC_FLAGS) " != *FOLDNORM_CUDNN* ]] && [[ " $(field CUDA_LDLIBS) " != *cudnn* ]]; then
    ok "control: the venv not asked, neither is found and the build leaves both out"
else
    bad "control without the venv:"; sed 's/^/     /' "$work/config.txt"
fi
if config CUDNN=0 && [ "$(field CUDNN)" = "not found" ] && [[ " $(field NVCC_FLAGS) " != *FOLDNORM_CUDNN* ]] &&
   [[ "$(field NCCL)" == "found in a Python wheel: "* ]]; then
    ok "CUDNN=0 leaves cuDNN out although its wheel is there (NCCL still found)"
else
    bad "CUDNN=0:"; sed 's/^/     /' "$work/config.txt"
fi

# 3. CUDNN_HOME before the wheel; cudnn.h in the toolkit
home=$work/cudnn_home
mkdir -p "$home/include" "$home/lib"
echo '/* stub */' > "$home/include/cudnn.h"
stub_lib "$home/lib" libcudnn.so.9 stub_cudnn_version 90000 && ln -s libcudnn.so.9 "$home/lib/libcudnn.so"
if config CUDNN_HOME="$home" && [ "$(field CUDNN)" = "found in $home/include" ] &&
   [ "$(field CUDNN_LDLIBS)" = "-L$home/lib -Wl,-rpath,$home/lib -lcudnn" ]; then
    ok "CUDNN_HOME comes before the wheel: -lcudnn (its unversioned libcudnn.so) with its -L and rpath"
else
    bad "CUDNN_HOME:"; sed 's/^/     /' "$work/config.txt"
fi
echo '/* stub */' > "$fake/cuda/include/cudnn.h"
stub_lib "$fake/cuda/lib64" libcudnn.so.9 stub_cudnn_version 90000 && ln -s libcudnn.so.9 "$fake/cuda/lib64/libcudnn.so"
if config && [ "$(field CUDNN)" = "found in $fake/cuda/include" ] && [ "$(field CUDNN_LDLIBS)" = "-lcudnn" ] &&
   [[ " $(field NVCC_FLAGS) " == *" -DFOLDNORM_CUDNN "* ]] && [[ " $(field NVCC_FLAGS) " != *" -I$fake/cuda/include "* ]]; then
    ok "cudnn.h in CUDA_HOME: -lcudnn with the toolkit's own -L, no extra -I"
else
    bad "cudnn.h in CUDA_HOME:"; sed 's/^/     /' "$work/config.txt"
fi
rm -f "$fake/cuda/include/cudnn.h" "$fake/cuda/lib64"/libcudnn.so*

# 4. no zlib headers: ZLIB=0 detected; the host objects that once needed zlib build without it
mkdir -p "$work/nozlib"
echo '#error "zlib.h is not on this image"' > "$work/nozlib/zlib.h"
nozlib_cc="gcc -I$work/nozlib"
objs=("$work/build/llmc/core/checksum.o" "$work/build/llmc/vision/idx.o")
if config CC="$nozlib_cc" && [ "$(field ZLIB)" = 0 ] &&
   make -s --no-print-directory CC="$nozlib_cc" BUILD="$work/build" "${objs[@]}" > "$work/nozlib.log" 2>&1; then
    ok "no zlib.h: ZLIB=0 detected, checksum.o and idx.o (gzip refused) build without it"
else
    bad "no zlib.h: ZLIB=$(field ZLIB); $(grep -m2 -E 'error|Error' "$work/nozlib.log")"
fi
rm -rf "$work/build"
if ! make -s --no-print-directory CC="$nozlib_cc" ZLIB=1 BUILD="$work/build" "${objs[1]}" > "$work/zlib1.log" 2>&1 &&
   grep -q 'zlib.h is not on this image' "$work/zlib1.log"; then
    ok "control: ZLIB=1 with that compiler stops on the missing zlib.h (the stand-in works)"
else
    bad "control: ZLIB=1 built idx.o without zlib.h: the stand-in header is not seen"
fi
echo "$fails failed"
[ $fails -eq 0 ]
