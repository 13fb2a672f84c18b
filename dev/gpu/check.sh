#!/usr/bin/env bash
# The GPU device check: one `run` call of about 10 minutes (docs/cuda.md, "On a
# GPU machine"), ordered so that a first window, which may never come twice,
# yields the GPT-2 speed figures first:
#   preflight          driver, nvcc (also /usr/local/cuda/bin), gcc/g++, make; zlib,
#                      cuDNN and NCCL (where the build finds them: INFO rows, none
#                      blocks); the carried reference states and llm.c checkout
#   build              the GPT-2 trainers and tests and the GPT-2 dev/cuda programs
#                      (sm_90, all cores); the vision programs, the other dev/cuda
#                      programs and llm.c's train_gpt2cu build in the background
#   gpt2 tests         test_gpt2fp32cu, test_gpt2cu against the carried states
#   attention timings  every attention program of dev/cuda (checks, then timings)
#   d12 tok/s          train_gpt2cu -e d12, ln and cbwc, B=16 and 64, T=1024
#                      (median step), beside llm.c's train_gpt2cu when carried:
#                      built USE_CUDNN=1 (the headline row: what llm.c's users
#                      run; needs .llmc/cudnn-frontend and cuDNN found by the
#                      build), then USE_CUDNN=0 (the second row)
#   d12 tok/s cudnn    train_gpt2cu -e d12 -N ln -at cudnn (cuDNN's fused
#                      attention) at the first B, beside tc and llm.c's
#                      USE_CUDNN=1 run above (every llm.c row names its build)
#   kernel timings     the other GPT-2 dev/cuda programs (matmul, cbwc, any new
#                      one), and a cost model's predictions beside when
#                      dev/gpu/cost_model.{sh,py} exists (the .py: its
#                      `measured` lines, each timing beside its H200 roofline)
#   norm bandwidth     the norm kernels against the device-to-device copy
#   sanitizers         compute-sanitizer memcheck and racecheck, small fp32 test
#   vision tests       the ViT and Swin tests (fp32, bf16)
#   fashion-mnist      train_vitcu ViT and Swin per mode, when the data is there
#   resume             train_gpt2cu (bf16) and train_vitcu resumed mid-run end on
#                      the uninterrupted run's files, byte for byte
#   other dev checks   the vision dev/cuda programs (checks, then timings)
#   folded inference   LN vs rms (= folded) forward passes at T = 1024, 4096, 16384
#   swin-tiny          Swin-Tiny images/s at 224, with and without the prefetch pool
# The dev/cuda programs are taken from the dev/cuda/*.cu list by name (dev_group
# below), so a new one is built and run without a change here.
#
# Every row is appended to OUTDIR/summary.txt the moment it is known:
#   ELAPSED s  NAME  STATUS (detail)
# STATUS is START (a stage begins: its estimate), PASS, FAIL, SKIP (with the
# reason), TIME (a measurement) or INFO. A stage whose estimate no longer fits
# before the deadline (CHECK_DEADLINE_S) is skipped with a SKIP row, and no run
# outlasts it. Each run's log is capped at CHECK_LOG_CAP_BYTES (its head and
# tail kept) and appended to OUTDIR/combined.log as it ends (capped at
# CHECK_COMBINED_CAP_BYTES); OUTDIR/results.txt collects every RESULT line of
# the dev/cuda programs. A call killed at its limit still returns the rows so far.
#
#   dev/gpu/check.sh OUTDIR [LLMC_DIR]
# Env: CHECK_DEADLINE_S (default 540), CHECK_STATES (default dev/gpu/states,
# made here by dev/gpu/make_states.sh and carried), LLMC_DIR (default .llmc
# when it holds llm.c's Makefile), CHECK_STEPS (d12 steps, default 6),
# CHECK_LOG_CAP_BYTES (default 4 MiB), CHECK_COMBINED_CAP_BYTES (default 12 MiB),
# CHECK_BUILD_S (the GPT-2 build's limit, default 240), CHECK_LLMC_WAIT_S (how
# long d12 waits for llm.c's build, default 90), CHECK_COST_MODEL (another cost model).
# CHECK_DRY=1: the whole script on the CPU with the emulated programs of
# `make emu` (build/emu) in place of the real ones, a tiny model for d12, small
# B and T, check-only dev programs, no compute-sanitizer: the script's own logic
# check (test/suites/gpu_check_dry.sh), not a device run.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
out=${1:?usage: dev/gpu/check.sh OUTDIR [LLMC_DIR]}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
t0=$SECONDS
dry=${CHECK_DRY:-0}
deadline=${CHECK_DEADLINE_S:-540}
states=${CHECK_STATES:-dev/gpu/states}
steps=${CHECK_STEPS:-6}
log_cap=${CHECK_LOG_CAP_BYTES:-$((4 << 20))}
combined_cap=${CHECK_COMBINED_CAP_BYTES:-$((12 << 20))}
llmc=${2:-${LLMC_DIR:-}}
[ -z "$llmc" ] && [ -f .llmc/Makefile ] && [ -f .llmc/train_gpt2.cu ] && llmc=.llmc
[ -n "$llmc" ] && [ -d "$llmc" ] && llmc=$(cd "$llmc" && pwd)
cores=$(nproc 2> /dev/null || echo 4)
llmc_wait=${CHECK_LLMC_WAIT_S:-90} # the most d12 (and the cudnn stage) waits for llm.c's build
llmc_cudnn=0 # 1: llm.c's cudnn-frontend and cudnn.h are there, so USE_CUDNN=1 is built too (preflight)
why_no_cudnn="not checked"
tmp=$(mktemp -d /tmp/foldnorm_check.XXXXXX)
logs=$tmp/logs
mkdir -p "$logs"
summary=$out/summary.txt
combined=$out/combined.log
results=$out/results.txt
: > "$summary"; : > "$combined"; : > "$results"
blocked=""          # set by a failed preflight or build: every later stage is skipped
declare -A bg_pids  # background jobs (own process groups), ended at exit

# What the dry run swaps in: the emulated programs, tiny shapes, short runs
if [ "$dry" = 1 ]; then
    bindir=build/emu; devdir=build/emu/dev/cuda
    export DEV_CUDA_CHECK_ONLY=1 OMP_NUM_THREADS=1 # emulated timings mean nothing
    model=d2c64h4v256t64; vocab=256; T=16; batches="1 2"; steps=3
    t_run=60; t_d12=90; t_build=${CHECK_BUILD_S:-300}
    curve=2; equiv=0; norm_shapes=(256 96 40 64)
    infer_model=d2c64h4v256t64; infer_T="16 32 64"; infer_tokens=64; infer_passes=2
else
    bindir=bin; devdir=build/dev/cuda
    model=d12; vocab=50257; T=1024; batches="16 64"
    t_run=20; t_d12=45; t_build=${CHECK_BUILD_S:-240} # d12 at B=64 needs its startup and 6 steps
    curve=20; equiv=10; norm_shapes=(65536 768 16384 1600)
    infer_model=d12t16384; infer_T="1024 4096 16384"; infer_tokens=16384; infer_passes=5
fi

left() { echo $((deadline - (SECONDS - t0))); }
# row NAME STATUS: one line of the table, appended to summary.txt at once
n_pass=0; n_fail=0; n_skip=0
row() {
    local line
    line=$(printf '%4d s  %-46s  %s' $((SECONDS - t0)) "$1" "$2")
    printf '%s\n' "$line" >> "$summary"
    printf '%s\n' "$line"
    case $2 in PASS*) n_pass=$((n_pass + 1)) ;; FAIL*) n_fail=$((n_fail + 1)) ;; SKIP*) n_skip=$((n_skip + 1)) ;; esac
}
# stage NAME DEVICE_S DRY_S: a START row when the estimate fits before the
# deadline, else a SKIP row and status 1 (so the stage is skipped, not cut off)
stage() {
    local name=$1 est=$2 l
    [ "$dry" = 1 ] && est=$3
    if [ -n "$blocked" ]; then row "== $name" "SKIP ($blocked)"; return 1; fi
    l=$(left)
    if [ "$est" -gt "$l" ]; then row "== $name" "SKIP (needs ~$est s, $l s left before the deadline)"; return 1; fi
    row "== $name" "START (estimate $est s)"
}

# cap_file FILE LIMIT: a file over LIMIT bytes keeps its first and last LIMIT/2
cap_file() {
    local f=$1 limit=$2 size
    size=$(stat -c %s "$f" 2> /dev/null || echo 0)
    [ "$size" -le "$limit" ] && return 0
    { head -c $((limit / 2 - 128)) "$f"
      printf '\n[... %d bytes left out here: the log is capped at %d bytes ...]\n' $((size - limit + 256)) "$limit"
      tail -c $((limit / 2 - 128)) "$f"; } > "$f.cap" && mv "$f.cap" "$f"
}
# add_log NAME: the run's log, capped, appended to combined.log; once that is
# at its cap only the log's last 5 lines, and past 5/4 of it only its name
add_log() {
    local f=$logs/$1.log used
    [ -f "$f" ] || return 0
    cap_file "$f" "$log_cap"
    used=$(stat -c %s "$combined")
    if [ $((used + $(stat -c %s "$f"))) -le "$combined_cap" ]; then
        { echo "===== $1"; cat "$f"; } >> "$combined"
    elif [ "$used" -le $((combined_cap * 5 / 4)) ]; then
        { echo "===== $1 (combined.log is at its cap: the last 5 lines)"; tail -n 5 "$f" | cut -c1-200; } >> "$combined"
    else
        echo "===== $1 (left out: combined.log is at its cap)" >> "$combined"
    fi
}
# The run helpers below leave the run's log path in last_log and its limit in last_limit.
SKIPPED=222 # execute's status for a run not started: the deadline has passed
# why RC: the reason the last run failed, for its row
why() {
    local err
    if [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; then echo "timed out after $last_limit s; log: $(basename "$last_log" .log)"; return; fi
    if grep -q '^SKIP' "$last_log"; then echo "the program saw no CUDA device: $(grep -m1 '^SKIP' "$last_log" | cut -c1-100)"; return; fi
    err=$(grep -m1 -iE 'error|fail|abort|mismatch' "$last_log" | cut -c1-110)
    echo "exit $1${err:+: $err}; log: $(basename "$last_log" .log)"
}
# execute NAME LIMIT CMD...: CMD under a timeout (at most the time left), its
# output in $logs/KEY.log (KEY: NAME in file-name characters), capped and
# added to combined.log; the status is CMD's, or SKIPPED with a SKIP row
execute() {
    local name=$1 limit=$2 l rc
    shift 2
    l=$(left)
    if [ "$l" -lt 3 ]; then row "$name" "SKIP (deadline: $l s left)"; return $SKIPPED; fi
    [ "$limit" -gt "$l" ] && limit=$l
    last_limit=$limit
    last_log=$logs/${name//[^A-Za-z0-9_.=-]/_}.log
    timeout -k 5 "$limit" "$@" > "$last_log" 2>&1 < /dev/null
    rc=$?
    add_log "$(basename "$last_log" .log)"
    return $rc
}
# run NAME LIMIT CMD...: execute with one PASS/FAIL row (a program that prints
# SKIP saw no device: that fails here; one that prints "NOT APPLICABLE: why",
# e.g. cuDNN attention in an fp32 build, passes with the reason); the status is 0 for PASS
run() {
    local name=$1 rc
    execute "$@"
    rc=$?
    [ $rc -eq $SKIPPED ] && return $rc
    if [ $rc -eq 0 ] && ! grep -q '^SKIP' "$last_log"; then
        row "$name" "PASS$(grep -m1 '^NOT APPLICABLE: ' "$last_log" | sed 's/^NOT APPLICABLE: \(.\{0,100\}\).*/ (not applicable: \1)/')"
        return 0
    fi
    row "$name" "FAIL ($(why $rc))"
    return 1
}
# result_rows NAME: the RESULT lines of the last run (a dev/cuda program) as
# TIME rows, and into results.txt
result_rows() {
    local line
    while IFS= read -r line; do
        printf '%s: %s\n' "$1" "${line#RESULT }" >> "$results"
        row "  $1" "TIME ${line#RESULT }"
    done < <(grep '^RESULT' "$last_log")
}
# bg_start NAME CMD...: CMD in the background in its own process group (ended at
# exit); its log is $logs/NAME.log, its exit status $tmp/NAME.rc
bg_start() {
    local name=$1
    shift
    set -m
    ( "$@" > "$logs/$name.log" 2>&1 < /dev/null; echo $? > "$tmp/$name.rc" ) &
    bg_pids[$name]=$!
    set +m
}
# bg_wait NAME MAX_S: the job's status once it ends within MAX_S (and the deadline), else 124
bg_wait() {
    local t=$SECONDS
    while [ ! -s "$tmp/$1.rc" ] && [ $((SECONDS - t)) -lt "$2" ] && [ "$(left)" -gt 3 ]; do sleep 1; done
    [ -s "$tmp/$1.rc" ] || return 124
    return "$(cat "$tmp/$1.rc")"
}
# at exit: the background jobs still running are ended, and the logs of those
# never waited for go into combined.log
finish() {
    local name
    for name in "${!bg_pids[@]}"; do
        [ -s "$tmp/$name.rc" ] || kill -- -"${bg_pids[$name]}" 2> /dev/null
        add_log "$name"
    done
    rm -rf "$tmp"
}
trap finish EXIT
trap 'row "== end" "INFO (terminated at $((SECONDS - t0)) s)"; exit 143' TERM INT

# The dev/cuda programs by name: attention (GPT-2's attention kernels and the
# tensor-core functions), norm, vision (ViT, Swin, bidirectional attention),
# kernel (the rest: matmul, cbwc, and any new program not named otherwise)
dev_group() {
    case $1 in
    swin_* | vit_* | *bidir*) echo vision ;;
    norm*) echo norm ;;
    *attention* | *attn* | flash* | mma*) echo attention ;;
    *) echo kernel ;;
    esac
}
# dev_names GROUP...: the dev/cuda/*.cu names in those groups
dev_names() {
    local f n
    for f in dev/cuda/*.cu; do
        n=$(basename "$f" .cu)
        case " $* " in *" $(dev_group "$n") "*) echo "$n" ;; esac
    done
}
# dev_targets GROUP...: their programs, both precisions
dev_targets() {
    local n
    for n in $(dev_names "$@"); do echo "$devdir/${n}_bf16 $devdir/${n}_fp32"; done
}
# dev_run GROUP [ARGS...]: each program of the group: checks, then timings (TIME rows)
dev_run() {
    local group=$1 n p
    shift
    for n in $(dev_names "$group"); do
        for p in bf16 fp32; do
            run "dev_${n}_$p" "$t_run" "$devdir/${n}_$p" "$@" && result_rows "${n}_$p"
        done
    done
}

# Data made here in bash (the device needs no python): little-endian int32s as printf escapes
le32() {
    local v e s=""
    for v in "$@"; do
        printf -v e '\\x%02x\\x%02x\\x%02x\\x%02x' $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) $((v >> 24 & 255))
        s+=$e
    done
    printf '%s' "$s"
}
# token_shard FILE TOKENS VOCAB SEED: an llm.c token shard (magic 20240520,
# version 1) of ids below min(VOCAB, 32768): a block of 32768 drawn from bash's
# seeded RANDOM (the same file every call), repeated
token_shard() {
    local file=$1 n=$2 vocab=$3 i t e s="" zeros
    RANDOM=$4
    for ((i = 0; i < 32768; i++)); do
        t=$((RANDOM % vocab))
        printf -v e '\\x%02x\\x%02x' $((t & 255)) $((t >> 8))
        s+=$e
    done
    printf '%b' "$s" > "$file.block"
    zeros=$(printf '0 %.0s' $(seq 253))
    # shellcheck disable=SC2086 # the zeros are separate words
    { printf '%b' "$(le32 20240520 1 "$n" $zeros)"
      for ((i = 0; i < (n + 32767) / 32768; i++)); do cat "$file.block"; done; } |
        head -c $((1024 + 2 * n)) > "$file"
    rm -f "$file.block"
}
# image_shard FILE COUNT SIDE KIND CROP CLASSES: an image shard (magic 20261201,
# llmc/vision/image_shard.c) of random RGB pixels, label i % CLASSES
image_shard() {
    local file=$1 n=$2 side=$3 i labels=() zeros
    zeros=$(printf '0 %.0s' $(seq 248))
    for ((i = 0; i < n; i++)); do labels+=($((i % $6))); done
    # shellcheck disable=SC2086
    { printf '%b' "$(le32 20261201 1 "$n" "$6" "$side" 3 "$4" "$5" $zeros)"
      printf '%b' "$(le32 "${labels[@]}")"
      head -c $((n * side * side * 3)) /dev/urandom; } > "$file"
}
# median_ms LOG: "MEDIAN COUNT" of the step lines' "N ms" field, the first step
# (setup) left out; the same parse for this trainer and llm.c's
median_ms() {
    awk -F'|' '/^step +[0-9]+\/[0-9]+ *\|/ {
            for (i = 2; i <= NF; i++) if ($i ~ /^ *[0-9.]+ ms *$/) { v = $i; sub(/ ms.*/, "", v); ms[n++] = v + 0; break } }
        END {
            if (n < 2) exit 1
            m = 0; for (i = 1; i < n; i++) a[m++] = ms[i]
            for (i = 1; i < m; i++) { x = a[i]; for (j = i - 1; j >= 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            printf "%.2f %d\n", (m % 2 ? a[(m - 1) / 2] : (a[m / 2 - 1] + a[m / 2]) / 2), m }' "$1"
}

# ---------------------------------------------------------------- preflight
# driver, nvcc, host compilers, make, zlib, each named when missing; what the
# later stages need from the carry (the states, llm.c) is reported here too
preflight_failures=()
pf_fail() { row "preflight: $1" "FAIL ($2)"; preflight_failures+=("$1"); }
if stage "preflight" 5 5; then
    for d in /usr/local/nvidia/bin /usr/local/cuda/bin ${CUDA_HOME:+"$CUDA_HOME/bin"}; do
        [ -d "$d" ] && case ":$PATH:" in *":$d:"*) ;; *) PATH=$PATH:$d ;; esac
    done
    export PATH
    if [ "$dry" = 1 ]; then
        row "preflight: driver" "INFO (dry run: the emulator needs no driver)"
    elif ! command -v nvidia-smi > /dev/null; then
        pf_fail driver "nvidia-smi not on the PATH nor in /usr/local/nvidia/bin: no driver on this machine (PATH=$PATH)"
    elif ! gpu=$(timeout 5 nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm \
            --format=csv,noheader 2>&1) || [ -z "$gpu" ]; then
        pf_fail driver "nvidia-smi found no GPU: $(printf '%s' "$gpu" | head -1 | cut -c1-100)"
    else
        row "preflight: driver" "PASS ($(head -1 <<< "$gpu"))"
    fi
    if nvcc=$(command -v nvcc); then
        row "preflight: nvcc" "PASS ($nvcc, $(nvcc --version | grep -o 'release [0-9.]*'))"
    elif [ "$dry" = 1 ]; then
        row "preflight: nvcc" "INFO (dry run: not needed; not on the PATH)"
    else
        pf_fail nvcc "not on the PATH nor in /usr/local/cuda/bin: set CUDA_HOME=<toolkit> or put its bin on the PATH in the run command"
    fi
    for tool in gcc g++ cc make; do
        if command -v $tool > /dev/null; then
            row "preflight: $tool" "PASS ($($tool --version 2>&1 | head -1 | cut -c1-70))"
        else
            pf_fail $tool "not on the PATH: nvcc and the host code need it; the device image must provide it"
        fi
    done
    # zlib: only gzip IDX input (Fashion-MNIST's .gz) needs it, and the build
    # leaves it out where it is missing (ZLIB=0), so it blocks nothing; the
    # system's, else a carried .devdeps/ (zlib1g-dev and zlib1g unpacked: dev/gpu/prepare.sh)
    zlib_ok() { printf '#include <zlib.h>\nint main(void) { return zlibVersion()[0] == 0; }\n' |
                    gcc -x c - -lz -o "$tmp/zlib_check" > "$logs/zlib.log" 2>&1 && "$tmp/zlib_check"; }
    if ! command -v gcc > /dev/null; then
        row "preflight: zlib" "INFO (not checked: no gcc)"
    elif zlib_ok; then
        row "preflight: zlib" "PASS (zlib.h and -lz)"
    elif [ -d .devdeps/usr/include ] && export CPATH=$PWD/.devdeps/usr/include${CPATH:+:$CPATH} \
            LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH} \
            LD_LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} &&
         zlib_ok; then
        row "preflight: zlib" "PASS (the carried .devdeps: CPATH, LIBRARY_PATH set)"
    else
        row "preflight: zlib" "INFO (zlib.h or libz missing: built with ZLIB=0, gzip IDX files refused (Fashion-MNIST's .gz); dev/gpu/prepare.sh makes .devdeps to carry)"
    fi
    add_log zlib
    # cuDNN and NCCL where mk/cuda.mk finds them (CUDNN_HOME, CUDA_HOME, the
    # system, a venv's wheels): their folders go on LD_LIBRARY_PATH too (a
    # wheel's libcudnn.so.9 loads its sub-libraries from its own folder)
    cudnn_incdir=""; cudnn_libdir=""
    if [ "$dry" = 1 ]; then
        row "preflight: cuDNN, NCCL" "INFO (dry run: the emulator's shims; the build's search is checked by test/suites/gpu_build_config.sh)"
    elif [ -n "${nvcc:-}" ] && make -s --no-print-directory CUDA_ARCHS=90 cuda-config > "$logs/cuda_config.log" 2>&1; then
        for lib in CUDNN NCCL; do
            row "preflight: ${lib,,}" "INFO ($(sed -n "s/^$lib=//p" "$logs/cuda_config.log" | cut -c1-120))"
        done
        cudnn_incdir=$(sed -n 's/^CUDNN_INCDIR=//p' "$logs/cuda_config.log")
        cudnn_libdir=$(sed -n 's/^CUDNN_LIBDIR=//p' "$logs/cuda_config.log")
        for d in $(sed -n 's/^CUDA_RUNTIME_LIBDIRS=//p' "$logs/cuda_config.log"); do
            case ":${LD_LIBRARY_PATH:-}:" in *":$d:"*) ;; *) LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;; esac
        done
        export LD_LIBRARY_PATH
    else
        row "preflight: cuDNN, NCCL" "INFO (make cuda-config failed: combined.log, cuda_config)"
    fi
    add_log cuda_config
    if [ -f "$states/seeds.txt" ]; then
        row "preflight: reference states" "PASS ($(find "$states" -name '*.bin' | wc -l) files in $states)"
    else
        row "preflight: reference states" "FAIL (states not carried: run dev/gpu/make_states.sh here and carry dev/gpu/states)"
    fi
    if [ -n "$llmc" ] && [ -f "$llmc/train_gpt2.cu" ]; then
        if [ ! -d "$llmc/cudnn-frontend/include" ]; then
            why_no_cudnn="no $llmc/cudnn-frontend/include: docs/cuda.md says how to carry it"
        elif [ -z "$cudnn_incdir" ]; then
            why_no_cudnn="cudnn-frontend carried, but the build found no cudnn.h (preflight: cudnn)"
        else
            llmc_cudnn=1
        fi
        row "preflight: llm.c" "INFO ($llmc: USE_CUDNN=0 built in the background, run beside d12; $(
            [ "$llmc_cudnn" = 1 ] && echo "USE_CUDNN=1 too, run beside -at cudnn" || echo "no USE_CUDNN=1: $why_no_cudnn"))"
    else
        row "preflight: llm.c" "INFO (not carried: no side-by-side; docs/cuda.md says how to carry .llmc)"
        llmc=""
    fi
    # compute-sanitizer: on the PATH, else in the toolkit's own folder of it
    if ! command -v compute-sanitizer > /dev/null; then
        cs=$(find /usr/local/cuda* ${CUDA_HOME:+"$CUDA_HOME"} /opt/nvidia -maxdepth 3 -name compute-sanitizer \
             -type f -perm -u+x -print -quit 2> /dev/null)
        [ -n "$cs" ] && PATH=$PATH:$(dirname "$cs")
    fi
    if cs=$(command -v compute-sanitizer); then
        row "preflight: compute-sanitizer" "INFO ($cs)"
    elif [ "$dry" = 0 ]; then
        row "preflight: compute-sanitizer" "INFO (not found: the sanitizers stage will skip)"
    fi
    row "preflight: machine" "INFO ($cores cores, $(df -h "$tmp" | awk 'NR == 2 { print $4 }') free in /tmp, deadline $deadline s)"
    if [ "$dry" = 1 ]; then # the log cap, on a log twice its size
        run dry_log_cap 10 bash -c "yes 'log cap self-check' | head -c $((2 * log_cap))"
        size=$(stat -c %s "$logs/dry_log_cap.log")
        if [ "$size" -le "$log_cap" ] && grep -q 'bytes left out here' "$logs/dry_log_cap.log"; then
            row "preflight: log cap" "PASS ($((2 * log_cap)) bytes kept as $size)"
        else
            row "preflight: log cap" "FAIL ($size bytes kept of $((2 * log_cap)), cap $log_cap)"
        fi
    fi
    [ ${#preflight_failures[@]} -eq 0 ] || blocked="preflight failed: ${preflight_failures[*]}"
fi
have_states=0
[ -f "$states/seeds.txt" ] && have_states=1

# ---------------------------------------------------------------- build
# GPT-2 first with all cores; the rest in the background (niced), started once
# the host library is built, so that the two makes never build the same file
gpt2_programs=("$bindir/train_gpt2cu" "$bindir/train_gpt2fp32cu" "$bindir/test_gpt2cu" "$bindir/test_gpt2fp32cu")
vision_programs=("$bindir/train_vitcu" "$bindir/train_vitfp32cu" "$bindir/test_vitcu" "$bindir/test_vitfp32cu"
                 "$bindir/test_swincu" "$bindir/test_swinfp32cu")
read -r -a priority <<< "${gpt2_programs[*]} $(dev_targets attention norm kernel | tr '\n' ' ')"
read -r -a rest <<< "${vision_programs[*]} $(dev_targets vision | tr '\n' ' ')"
make_args=(CUDA_ARCHS=90)
# the background job: with -Werror, then without (another host gcc may warn)
build_rest_job() {
    renice -n 10 -p $BASHPID > /dev/null 2>&1
    make -j"$cores" "${make_args[@]}" "${rest[@]}" && return 0
    echo "=== retry without -Werror (NVCC_WERROR=)"
    make -j"$cores" "${make_args[@]}" NVCC_WERROR= "${rest[@]}"
}
# llm.c's train_gpt2cu from its own Makefile, in a copy $tmp/DIR: one GPU, no
# MPI, USE_CUDNN as asked (1 only where preflight found its cudnn-frontend and
# cudnn.h); -lnvidia-ml through the driver's libnvidia-ml.so.1. CUDA 13 changed
# cudaMemAdvise's last argument to a cudaMemLocation: llm.c's one call (its
# managed-memory fallback after an out-of-memory, not taken here) is rewritten
# for it, and the log says so.
llmc_build_job() { # DIR USE_CUDNN
    local dir=$tmp/$1 cudnn=$2 nvml major
    rm -rf "$dir" && cp -r "$llmc" "$dir" || return 1
    major=$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
    if [ "${major:-0}" -ge 13 ]; then
        sed -i 's/cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId)/cudaMemAdviseSetPreferredLocation, cudaMemLocation{cudaMemLocationTypeHost, 0})/' \
            "$dir/llmc/cuda_utils.cuh"
        echo "llm.c: patched for CUDA $major: $(grep -c 'cudaMemLocation{' "$dir/llmc/cuda_utils.cuh") cudaMemAdvise call"
    fi
    if ! printf 'int main(void) { return 0; }\n' | gcc -x c - -lnvidia-ml -o /dev/null 2> /dev/null; then
        nvml=$( { ldconfig -p 2> /dev/null | awk '/libnvidia-ml\.so\.1 / { print $NF }'
                  find /usr/local/nvidia /usr/lib /usr/lib64 -name libnvidia-ml.so.1 2> /dev/null; } | head -1)
        [ -n "$nvml" ] && mkdir -p "$tmp/nvml" && ln -sf "$nvml" "$tmp/nvml/libnvidia-ml.so" &&
            export LIBRARY_PATH=$tmp/nvml${LIBRARY_PATH:+:$LIBRARY_PATH}
    fi
    if [ "$cudnn" = 1 ]; then # cuDNN where our build found it; a wheel's libcudnn.so.9 as -lcudnn
        export CPATH=$cudnn_incdir${CPATH:+:$CPATH}
        if [ ! -e "$cudnn_libdir/libcudnn.so" ] && [ -n "$cudnn_libdir" ]; then
            mkdir -p "$dir/cudnn_lib" && ln -sf "$(ls "$cudnn_libdir"/libcudnn.so.[0-9]* | head -1)" "$dir/cudnn_lib/libcudnn.so"
            export LIBRARY_PATH=$dir/cudnn_lib${LIBRARY_PATH:+:$LIBRARY_PATH}
        fi
        [ -n "$cudnn_libdir" ] && export LIBRARY_PATH=$cudnn_libdir${LIBRARY_PATH:+:$LIBRARY_PATH}
        echo "llm.c: cuDNN from $cudnn_incdir"
    fi
    echo "llm.c: USE_CUDNN=$cudnn"
    make -C "$dir" train_gpt2cu NO_MULTI_GPU=1 NO_USE_MPI=1 USE_CUDNN="$cudnn" GPU_COMPUTE_CAPABILITY=90
}
# llmc_binary JOB DIR USE_CUDNN: waits for the llm.c build JOB (up to llmc_wait
# s and the deadline), its "build: llm.c USE_CUDNN=N" row; the binary in llmc_bin, or ""
llmc_binary() {
    local l rc
    llmc_bin=""
    l=$(left)
    bg_wait "$1" $((l < llmc_wait ? l : llmc_wait))
    rc=$?
    add_log "$1"
    unset 'bg_pids[$1]'
    if [ $rc -eq 0 ] && [ -x "$tmp/$2/train_gpt2cu" ]; then
        llmc_bin=$tmp/$2/train_gpt2cu
        row "build: llm.c USE_CUDNN=$3" "PASS (train_gpt2cu; $(grep '^llm.c: ' "$logs/$1.log" | sed 's/^llm.c: //' | paste -sd ';'))"
    else
        row "build: llm.c USE_CUDNN=$3" "FAIL ($([ $rc -eq 124 ] && echo 'not done in time' || echo "exit $rc: $(grep -m1 error "$logs/$1.log" | cut -c1-80)"); log: $1)"
    fi
}
if stage "build" 90 10; then
    t_b=$SECONDS
    if [ "$dry" = 1 ]; then host=(build/libllmc.a build/emu/libemu.a); else host=(build/libllmc_cuda.a); fi
    if ! run "build: host library" 120 make -j"$cores" "${make_args[@]}" "${host[@]}"; then
        blocked="build failed (the host library: combined.log, build__host_library)"
    else
        bg_start build_rest build_rest_job
        row "build: background" "INFO (${#rest[@]} programs: vision, the other dev/cuda checks)"
        if [ -n "$llmc" ] && [ "$dry" = 1 ]; then
            row "build: llm.c" "INFO (dry run: llm.c needs nvcc and a device; the emulated train_gpt2cu stands in)"
        elif [ -n "$llmc" ]; then
            bg_start llmc_build llmc_build_job llmc 0
            [ "$llmc_cudnn" = 1 ] && bg_start llmc_cudnn_build llmc_build_job llmc_cudnn 1
            row "build: llm.c" "INFO (train_gpt2cu USE_CUDNN=0$([ "$llmc_cudnn" = 1 ] && echo " and USE_CUDNN=1") in the background from $llmc/Makefile)"
        fi
        execute build "$t_build" make -j"$cores" "${make_args[@]}" "${priority[@]}"
        rc=$?
        if [ $rc -eq 0 ]; then
            row "build: GPT-2 first" "PASS (${#priority[@]} programs in $((SECONDS - t_b)) s, -j$cores, sm_90)"
        elif [ $rc -eq $SKIPPED ]; then
            blocked="build not done before the deadline"
        elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            row "build: GPT-2 first" "FAIL ($(why $rc))"
            blocked="build not done in $last_limit s (combined.log: build)"
        else
            first=$(grep -m1 'error' "$last_log" | cut -c1-90)
            if execute build_no_werror "$t_build" make -j"$cores" "${make_args[@]}" NVCC_WERROR= "${priority[@]}"; then
                row "build: GPT-2 first" "PASS without -Werror ($((SECONDS - t_b)) s; with it: ${first:-exit $rc}; log: build)"
            else
                row "build: GPT-2 first" "FAIL ($(why $?))"
                blocked="build failed (combined.log: build, build_no_werror)"
            fi
        fi
    fi
fi

# ---------------------------------------------------------------- GPT-2 tests
no_states="states not carried: run dev/gpu/make_states.sh here and carry dev/gpu/states"
# model_tests BINARY PREFIX: every carried state; the small ones also run the
# curve against the CPU trainer, ln small the ln == cbwc equivalence
model_tests() {
    local bin=$1 prefix=$2 mode shape seed extra
    while read -r mode shape seed; do
        extra=()
        [ "$shape" = small ] && extra=(--curve "$curve" --seed "$seed")
        [ "$shape" = small ] && [ "$mode" = ln ] && [ "$equiv" -gt 0 ] && extra+=(--equivalence "$equiv")
        run "${prefix}_${mode}_$shape" "$t_run" "$bindir/$bin" "$states/${mode}_$shape.bin" \
            "$states/${mode}_${shape}_state.bin" "${extra[@]}"
    done < "$states/seeds.txt"
}
if stage "gpt2 tests" 45 15; then
    if [ $have_states = 1 ]; then
        model_tests test_gpt2fp32cu fp32
        model_tests test_gpt2cu bf16
    else
        row "gpt2 tests" "SKIP ($no_states)"
    fi
fi

if stage "attention timings" 25 5; then dev_run attention; fi

# ---------------------------------------------------------------- d12 tok/s
# the same token shards for this trainer and llm.c's (ids < 32768, and < V)
make_bench_data() {
    [ -f "$tmp/data/bench_val_000000.bin" ] && return 0
    mkdir -p "$tmp/data"
    if ! { token_shard "$tmp/data/bench_train_000000.bin" $((1 << 20)) "$vocab" 1 &&
           token_shard "$tmp/data/bench_val_000000.bin" $((1 << 17)) "$vocab" 2; } > "$logs/bench_data.log" 2>&1; then
        add_log bench_data
        return 1
    fi
}
data=(-i "$tmp/data/bench_train_*.bin" -j "$tmp/data/bench_val_*.bin")
# speed NAME LIMIT B CMD...: one TIME row, B T over the median step time (the
# first step left out), also from a run cut off at its limit; the median in speed_ms
speed() {
    local name=$1 limit=$2 b=$3 rc m count
    shift 3
    speed_ms=""
    execute "$name" "$limit" "$@"
    rc=$?
    [ $rc -eq $SKIPPED ] && return $rc
    if m=$(median_ms "$last_log"); then
        read -r speed_ms count <<< "$m"
        row "$name" "TIME $(awk -v ms="$speed_ms" -v b="$b" -v t="$T" 'BEGIN { printf "%.0f", b * t * 1000 / ms }') tok/s (median $speed_ms ms/step of $count steps$([ $rc -ne 0 ] && echo "; then $(why $rc)"))"
    else
        row "$name" "FAIL ($(why $rc))"
        return 1
    fi
}
declare -A ours_ln_ms llmc_cudnn_ms # per B, for the cuDNN stage's ratios
# llm.c's train_gpt2cu as it ships (recompute, master weights) on the same
# shards, in the configuration its users run first: built USE_CUDNN=1 (cuDNN's
# fused attention: the headline row) when its cudnn-frontend is carried and
# cuDNN found, then USE_CUDNN=0 (its own attention kernels: the second row).
# The dry run stands in our emulated trainer (-at cudnn for USE_CUDNN=1).
declare -A llmc_bins llmc_waited
# llmc_side B USE_CUDNN: llm.c's speed row at B and its ratio to ours (ln) at B
llmc_side() {
    local B=$1 c=$2 lname args=()
    llmc_bin=""
    if [ "$dry" = 1 ]; then
        llmc_bin=$bindir/train_gpt2cu
        [ "$c" = 1 ] && args=(-at cudnn)
        lname="llm.c USE_CUDNN=$c (dry: our emulated trainer$([ "$c" = 1 ] && echo ' -at cudnn')) B=$B T=$T"
    else
        [ -z "$llmc" ] && return 1
        if [ "$c" = 1 ] && [ "$llmc_cudnn" != 1 ]; then
            [ -z "${llmc_waited[1]:-}" ] && row "llm.c USE_CUDNN=1" "INFO (not built: $why_no_cudnn; the rows below are against USE_CUDNN=0)"
            llmc_waited[1]=1
            return 1
        fi
        if [ -z "${llmc_waited[$c]:-}" ]; then # waited for once: a failed build is not waited for again
            if [ "$c" = 1 ]; then llmc_binary llmc_cudnn_build llmc_cudnn 1; else llmc_binary llmc_build llmc 0; fi
            llmc_bins[$c]=$llmc_bin
            llmc_waited[$c]=1
        fi
        llmc_bin=${llmc_bins[$c]}
        lname="llm.c USE_CUDNN=$c d12 B=$B T=$T"
    fi
    [ -n "$llmc_bin" ] || return 1
    speed "$lname" "$t_d12" "$B" "$llmc_bin" -e "$model" -b "$B" -t "$T" -x "$steps" -v 100000 -s 0 -m 1 \
        "${args[@]}" "${data[@]}" || return 1
    [ -n "$speed_ms" ] || return 1
    [ "$c" = 1 ] && llmc_cudnn_ms[$B]=$speed_ms
    [ -n "${ours_ln_ms[$B]:-}" ] &&
        row "  llm.c USE_CUDNN=$c / ours (ln), B=$B" "TIME $(awk -v a="${ours_ln_ms[$B]}" -v b="$speed_ms" 'BEGIN { printf "ours takes %.2fx llm.c'"'"'s step time", a / b }')"
    return 0
}
if stage "d12 tok/s" 95 30; then
    if ! make_bench_data; then
        row "d12 data" "FAIL (token shards: combined.log, bench_data)"
    else
        tag=d12; [ "$dry" = 1 ] && tag="d12 (dry: $model)"
        for B in $batches; do
            for mode in ln cbwc; do
                speed "$tag $mode B=$B T=$T" "$t_d12" "$B" "$bindir/train_gpt2cu" -e "$model" -N $mode -b "$B" -t "$T" \
                    -x "$steps" -v 0 -sh 0 "${data[@]}"
                [ $mode = ln ] && [ -n "$speed_ms" ] && ours_ln_ms[$B]=$speed_ms
            done
            llmc_side "$B" 1
            llmc_side "$B" 0
        done
    fi
fi

# ---------------------------------------------------------------- d12 tok/s, -at cudnn
# cuDNN's fused attention in the same run as the rows above (ln, the first B):
# beside our default (tc) and llm.c's USE_CUDNN=1 run above (cuDNN's attention
# in both), whose step time is reused, not measured again
if stage "d12 tok/s cudnn" 25 15; then
    B=${batches%% *}
    tag=d12; [ "$dry" = 1 ] && tag="d12 (dry: $model)"
    name="$tag ln -at cudnn B=$B T=$T"
    if ! make_bench_data; then
        row "$name" "FAIL (token shards: combined.log, bench_data)"
    elif speed "$name" "$t_d12" "$B" "$bindir/train_gpt2cu" -e "$model" -N ln -at cudnn -b "$B" -t "$T" \
            -x "$steps" -v 0 -sh 0 "${data[@]}"; then
        nondet=$(grep -m1 'not deterministic' "$last_log" | cut -c1-120)
        row "  cudnn backward" "INFO (${nondet:-deterministic engine: resume stays bit-exact})"
        if [ -n "${ours_ln_ms[$B]:-}" ]; then
            row "  cudnn / tc (ln), B=$B" "TIME $(awk -v a="$speed_ms" -v b="${ours_ln_ms[$B]}" 'BEGIN { printf "cudnn takes %.2fx tc'"'"'s step time", a / b }')"
        fi
        if [ -n "${llmc_cudnn_ms[$B]:-}" ]; then
            row "  llm.c USE_CUDNN=1 / ours (ln, cudnn), B=$B" "TIME $(awk -v a="$speed_ms" -v b="${llmc_cudnn_ms[$B]}" 'BEGIN { printf "ours takes %.2fx llm.c'"'"'s step time", a / b }')"
        fi
    fi
fi

# ---------------------------------------------------------------- kernel timings
if stage "kernel timings" 20 5; then
    dev_run kernel
    # the hook for a cost model: given results.txt (every RESULT line so far),
    # it prints its predicted times, one line a kernel, each line a row
    # (CHECK_COST_MODEL names another one: the dry-run suite's stand-in)
    cost_models=(dev/gpu/cost_model.{sh,py})
    [ -n "${CHECK_COST_MODEL:-}" ] && cost_models=("$CHECK_COST_MODEL")
    for cm in "${cost_models[@]}"; do
        [ -f "$cm" ] || continue
        case $cm in *.sh) cmd=(bash "$cm") ;; *) cmd=(python3 "$cm" measured) ;; esac
        if run cost_model "$t_run" "${cmd[@]}" "$results"; then
            while IFS= read -r line; do [ -n "$line" ] && row "  predicted" "TIME $line"; done < "$last_log"
        fi
    done
fi

if stage "norm bandwidth" 15 3; then dev_run norm "${norm_shapes[@]}"; fi

# ---------------------------------------------------------------- sanitizers
if stage "sanitizers" 75 10; then
    small=("$bindir/test_gpt2fp32cu" "$states/ln_small.bin" "$states/ln_small_state.bin")
    if [ $have_states = 0 ]; then
        row "sanitizers" "SKIP ($no_states)"
    elif [ "$dry" = 1 ]; then # the stage's mechanics only: the emulator has no compute-sanitizer
        run "memcheck (dry: the test plain)" "$t_run" "${small[@]}"
    elif ! command -v compute-sanitizer > /dev/null; then
        row "sanitizers" "SKIP (compute-sanitizer not on the PATH nor under /usr/local/cuda*)"
    else # longer limits than other runs: every access is checked (racecheck: every shared one)
        run sanitizer_memcheck 35 compute-sanitizer --tool memcheck --error-exitcode 3 "${small[@]}"
        run sanitizer_racecheck 50 compute-sanitizer --tool racecheck --error-exitcode 3 "${small[@]}"
    fi
fi

# ---------------------------------------------------------------- vision
# wait_rest: 0 once the background build has ended well (waited for once)
rest_state=""
wait_rest() {
    if [ -z "$rest_state" ]; then
        if [ -z "${bg_pids[build_rest]:-}" ]; then
            rest_state=none
        else
            bg_wait build_rest "$(left)"
            local rc=$?
            add_log build_rest
            unset 'bg_pids[build_rest]'
            if [ $rc -eq 0 ]; then
                rest_state=ok
                row "build: background" "PASS (${#rest[@]} programs$(grep -q '^=== retry without -Werror' "$logs/build_rest.log" && echo ', without -Werror'))"
            else
                rest_state=failed
                row "build: background" "FAIL ($([ $rc -eq 124 ] && echo 'not done before the deadline' || echo "exit $rc: $(grep -m1 error "$logs/build_rest.log" | cut -c1-80)"); log: build_rest)"
            fi
        fi
    fi
    [ "$rest_state" = ok ]
}
no_rest="the background build failed or did not finish"
# vision_tests BINARY PREFIX SEEDS FILE: as model_tests, over vit_seeds.txt
# (MODE SHAPE SEED) or swin_seeds.txt (TAG SEED; ln_b, with centring ops, also ln == cbwc)
vision_tests() {
    local bin=$1 prefix=$2 seeds=$3 file=$4 a b c tag extra
    [ -f "$states/$seeds" ] || { row "$prefix" "SKIP (no $seeds: rerun dev/gpu/make_states.sh here and carry dev/gpu/states)"; return; }
    while read -r a b c; do
        extra=()
        if [ "$file" = vit ]; then
            tag=${a}_$b
            [ "$b" = small ] && extra=(--curve "$curve" --seed "$c")
            [ "$tag" = ln_small ] && [ "$equiv" -gt 0 ] && extra+=(--equivalence "$equiv")
        else
            tag=$a
            [ "$tag" = ln_b ] && [ "$equiv" -gt 0 ] && extra=(--equivalence 8)
        fi
        run "${prefix}_$tag" "$t_run" "$bindir/$bin" "$states/${file}_$tag.bin" "$states/${file}_${tag}_state.bin" "${extra[@]}"
    done < "$states/$seeds"
}
if stage "vision tests" 60 15; then
    if ! wait_rest; then
        row "vision tests" "SKIP ($no_rest)"
    elif [ $have_states = 0 ]; then
        row "vision tests" "SKIP ($no_states)"
    else
        vision_tests test_vitfp32cu vit_fp32 vit_seeds.txt vit
        vision_tests test_vitcu vit_bf16 vit_seeds.txt vit
        vision_tests test_swinfp32cu swin_fp32 swin_seeds.txt swin
        vision_tests test_swincu swin_bf16 swin_seeds.txt swin
    fi
fi

# Fashion-MNIST: Debian's files where installed, else data/fashion-mnist (carried)
fmnist=/usr/share/datasets/fashion-mnist
[ -d "$fmnist" ] || fmnist=data/fashion-mnist
no_fmnist="no Fashion-MNIST: copy /usr/share/datasets/fashion-mnist to data/fashion-mnist and carry it"
# final_field LOG KEY...: "VALUE KEY" pairs from train_vitcu's final: line
final_fields() {
    local log=$1
    shift
    grep '^final:' "$log" | awk -v keys="$*" '{ n = split(keys, k, " ")
        for (i = 1; i < NF; i++) for (j = 1; j <= n; j++) if ($i == k[j]) v[j] = $(i + 1)
        for (j = 1; j <= n; j++) printf "%s%s %s", (j > 1 ? ", " : ""), v[j], k[j] }'
}
if [ "$dry" = 1 ]; then
    fm_modes="ln"; fm_b=4; fm_flags=(-x 2 -nt 8 -ne 4 -pe 1); fm_vit=(-C 24 -L 2 -H 3 -P 7); fm_limit=$t_run
else
    fm_modes="ln rms cbwc"; fm_b=128; fm_flags=(-ep 1 -x 60 -nt 8192 -ne 2048); fm_vit=(); fm_limit=14
fi
if [ ! -d "$fmnist" ]; then
    row "== fashion-mnist" "SKIP ($no_fmnist)"
elif stage "fashion-mnist" 90 30; then
    if ! wait_rest; then
        row "fashion-mnist" "SKIP ($no_rest)"
    else
        for fam in vit swin; do
            for mode in $fm_modes; do
                extra=()
                [ $fam = vit ] && extra=("${fm_vit[@]}")
                execute "fmnist_${fam}_$mode" "$fm_limit" "$bindir/train_vitcu" -i "$fmnist" -e $fam -N "$mode" \
                    -b $fm_b "${fm_flags[@]}" "${extra[@]}"
                rc=$?
                [ $rc -eq $SKIPPED ] && continue
                if [ $rc -eq 0 ] && grep -q '^final:' "$last_log"; then
                    row "train_vitcu $fam $mode (B=$fm_b)" "TIME $(final_fields "$last_log" images_per_s test_accuracy)"
                else
                    row "train_vitcu $fam $mode" "FAIL ($(why $rc))"
                fi
            done
        done
    fi
fi

# ---------------------------------------------------------------- resume
# resumed RUN_NAME BIN HALF FULL FILES FLAGS...: BIN to step FULL with -o, then
# the same run resumed (-y 1) in a fresh folder holding FILES of its step HALF
# must end on the same model and state files, byte for byte
resumed() {
    local name=$1 bin=$2 half=$3 full=$4 files=$5 f
    shift 5
    local d=$tmp/${name// /_}
    run "$name: the whole run" "$t_run" "$bin" "$@" -o "$d/full" || return 1
    mkdir -p "$d/half"
    for f in $files; do cp "$d/full/${f//STEP/$half}" "$d/half/"; done
    run "$name: resumed at step $((10#$half))" "$t_run" "$bin" "$@" -o "$d/half" -y 1 || return 1
    for f in model_$full.bin state_$full.bin; do
        if ! cmp "$d/full/$f" "$d/half/$f" > "$logs/cmp.log" 2>&1; then
            row "$name: step $((10#$full)) files" "FAIL ($f differs: $(head -c 100 "$logs/cmp.log"))"
            return 1
        fi
    done
    row "$name: step $((10#$full)) files" "PASS (model and state the same, byte for byte)"
}
if stage "resume" 25 20; then
    if ! make_bench_data; then
        row "resume train_gpt2cu" "FAIL (token shards: combined.log, bench_data)"
    else
        if [ "$dry" = 1 ]; then
            gr=(-e d2c64h4v256t64 -b 1 -t 16 -x 4 -n 2); gh=00000002; gf=00000004
        else
            gr=(-e d4c128h4v50257t256 -b 4 -t 256 -x 8 -n 4); gh=00000004; gf=00000008
        fi
        resumed "resume train_gpt2cu" "$bindir/train_gpt2cu" $gh $gf "model_STEP.bin state_STEP.bin" \
            "${gr[@]}" -N cbwc -v 0 -sh 1 "${data[@]}"
    fi
    if [ ! -d "$fmnist" ]; then
        row "resume train_vitcu" "SKIP ($no_fmnist)"
    elif ! wait_rest; then
        row "resume train_vitcu" "SKIP ($no_rest)"
    else # an epoch of 4 (dry) or 20 steps, a checkpoint at its middle and end
        if [ "$dry" = 1 ]; then
            vr=(-C 24 -L 2 -H 3 -P 7 -b 4 -x 4 -n 2 -nt 16 -ne 4 -pe 2); vh=00000002; vf=00000004
        else
            vr=(-b 128 -x 20 -n 10 -nt 2560 -ne 256 -pe 10); vh=00000010; vf=00000020
        fi
        resumed "resume train_vitcu" "$bindir/train_vitcu" $vh $vf "run.txt main.log model_STEP.bin state_STEP.bin" \
            -i "$fmnist" -e vit -N cbwc "${vr[@]}"
    fi
fi

if stage "other dev checks" 30 10; then
    if wait_rest; then dev_run vision; else row "other dev checks" "SKIP ($no_rest)"; fi
fi

# ---------------------------------------------------------------- folded inference
if stage "folded inference" 30 10; then
    for t in $infer_T; do
        b=$((infer_tokens / t))
        ms_ln=""; ms_rms=""
        for mode in ln rms; do
            execute "inference_${mode}_$t" "$t_run" "$bindir/train_gpt2cu" -e "$infer_model" -N $mode -b $b -t "$t" -inf $infer_passes
            rc=$?
            [ $rc -eq $SKIPPED ] && continue 2
            ms=$(grep -oE '[0-9.]+ ms/forward' "$last_log" | cut -d' ' -f1)
            [ -n "$ms" ] || { row "inference $mode T=$t (B=$b)" "FAIL ($(why $rc))"; continue 2; }
            eval "ms_$mode=\$ms"
        done
        row "inference T=$t (B=$b)" "TIME $(awk -v a="$ms_ln" -v b="$ms_rms" \
            'BEGIN { printf "ln %.2f ms, rms %.2f ms: folded saves %.1f%%", a, b, 100 * (a - b) / a }')"
    done
fi

# ---------------------------------------------------------------- Swin-Tiny
# images/s at 224 crops of a random-pixel shard (256x256 stored), with the host
# prefetch pool (-dw 8, the default) and with each batch built between steps (-dw 0)
if [ "$dry" = 1 ]; then
    st_side=32; st_crop=28; st_model=swin; st_b=4; st_n=4
else
    st_side=256; st_crop=224; st_model=swin-tiny; st_b=64; st_n=768
fi
if stage "swin-tiny images/s" 45 20; then
    if ! wait_rest; then
        row "swin-tiny" "SKIP ($no_rest)"
    elif ! { image_shard "$tmp/in_train.bin" $st_n $st_side 0 $st_crop 100 &&
             image_shard "$tmp/in_val.bin" $st_b $st_crop 1 $st_crop 100; } 2> "$logs/image_shard.log"; then
        row "swin-tiny" "FAIL (image shards: combined.log, image_shard)"
        add_log image_shard
    else
        for dw in 8 0; do
            execute "swin_tiny_dw$dw" $((t_run + 2)) "$bindir/train_vitcu" -e $st_model -i "$tmp/in_train.bin" \
                -j "$tmp/in_val.bin" -N cbwc -b $st_b -ep 1 -pe 4 -dw $dw
            rc=$?
            [ $rc -eq $SKIPPED ] && continue
            if [ $rc -eq 0 ] && grep -q '^final:' "$last_log"; then
                row "train_vitcu $st_model B=$st_b -dw $dw" "TIME $(final_fields "$last_log" images_per_s)"
            else
                row "train_vitcu $st_model -dw $dw" "FAIL ($(why $rc))"
            fi
        done
    fi
fi

row "== end" "INFO ($((SECONDS - t0)) s of $deadline; $n_pass PASS, $n_fail FAIL, $n_skip SKIP)"
# the reply's output tail holds the last 12000 characters: the rows that matter most
echo
echo "=== headline: ours against llm.c with cuDNN, then without (every row: $summary)"
grep -E '  llm.c USE_CUDNN=1 / ours \(ln\),' "$summary" | cut -c1-170
grep -E '  llm.c USE_CUDNN=0 / ours \(ln\),' "$summary" | cut -c1-170
echo "=== the FAIL and TIME rows"
grep -E '  (FAIL|TIME)' "$summary" | cut -c1-170
tail -n 1 "$summary"
[ "$n_fail" -eq 0 ]
