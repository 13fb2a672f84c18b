#!/usr/bin/env bash
# dev/gpu/check.sh's dry run (CHECK_DRY=1): the whole device check on the CPU
# with the emulated programs of `make emu` (build/emu), tiny shapes and the
# reference states the device gets (dev/gpu/make_states.sh's, all of them), so
# that every stage, the deadline, the summary and the log caps are exercised
# before the script meets a device. A check of the script, not a device run
# (the emulated programs' own checks: cuda_emu and the others).
#   1. a full dry run: a START row for every stage; PASS rows for the builds,
#      every GPT-2, ViT and Swin state in both precisions, every dev/cuda program
#      (both precisions, found by name), the resumes; TIME rows for d12 (each mode
#      and B; -at cudnn), the llm.c stand-ins (USE_CUDNN=1, the headline, then
#      USE_CUDNN=0 at each B: each row names the build), inference and the
#      cost-model hook; the headline first in the output's tail; no FAIL; the
#      logs within their caps; at most 8 files back; rows in summary.txt while
#      the script still runs (each row is written the moment it is known)
#   2. a dry run with CHECK_DEADLINE_S=25: every stage has a row, the build and
#      perhaps a few more start, the later ones SKIP naming the deadline; it ends
#      soon after the deadline
#   3. a device run here, where no driver is (skipped where nvidia-smi is found):
#      preflight names the driver and the missing states, every later stage is
#      a SKIP naming the failed preflight, and the exit status is 1
#   4. dev/gpu/prepare.sh --offline: without mirrors it names llm.c,
#      cudnn-frontend and .devdeps MISSING with the way to get each and prints
#      the call carrying the states; from local git mirrors it makes .llmc with
#      its cudnn-frontend/include and carries it
# sanitized: skip dev/gpu/check.sh's stages, deadline and rows; the emulated programs it calls run under the sanitizers in cuda_emu and cuda_vit_emu
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. test/suite_outcome.sh
work=${1:-$(mktemp -d)}/gpu_check_dry
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
fails=0
[ -d /usr/share/datasets/fashion-mnist ] ||
    skip_part "the fashion-mnist stage and train_vitcu's resume: no /usr/share/datasets/fashion-mnist"
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# a no-op after `make test`
make -s emu > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "FAIL make emu"; exit 1; }
stages=("preflight" "build" "gpt2 tests" "attention timings" "d12 tok/s" "d12 tok/s cudnn" "kernel timings" "norm bandwidth"
        "sanitizers" "vision tests" "fashion-mnist" "resume" "other dev checks" "folded inference"
        "swin-tiny images/s")
# has FILE NAME STATUS_REGEX: a row NAME whose status matches
has() {
    local name
    name=$(printf '%s' "$2" | sed 's/[][().*+?^$|]/\\&/g') # the name as an ERE
    grep -qE "^ *[0-9]+ s  $name +$3" "$1"
}

# the reference states the device gets: exactly dev/gpu/make_states.sh's
# (every GPT-2, ViT and Swin state, both precisions tested), made in the
# background while runs 3 and 2 need none
states=$work/states
dev/gpu/make_states.sh "$states" > "$work/make_states.log" 2>&1 &
refs=$!

# 3. no driver here: preflight names it, nothing else runs
if command -v nvidia-smi > /dev/null || [ -x /usr/local/nvidia/bin/nvidia-smi ]; then
    skip_part "the no-driver run: nvidia-smi is on this machine"
else
    t=$SECONDS
    CHECK_STATES=$work/no_states dev/gpu/check.sh "$work/out3" > "$work/run3.log" 2>&1
    rc=$?
    s3=$work/out3/summary.txt
    later=0
    for st in "${stages[@]:1}"; do has "$s3" "== $st" 'SKIP \(preflight failed: driver\)' && later=$((later + 1)); done
    if [ $rc -eq 1 ] && has "$s3" "preflight: driver" 'FAIL \(nvidia-smi not on the PATH' &&
       has "$s3" "preflight: reference states" 'FAIL \(states not carried: run dev/gpu/make_states.sh here and carry dev/gpu/states\)' &&
       [ $later -eq $((${#stages[@]} - 1)) ] && has "$s3" "== end" INFO; then
        ok "no driver: preflight names it and the missing states, the $later later stages SKIP ($((SECONDS - t)) s)"
    else
        bad "no-driver run (exit $rc, $later of $((${#stages[@]} - 1)) stages skipped):"; sed 's/^/     /' "$s3"
    fi
fi

# 2. a deadline of 25 s: the stages that no longer fit are skipped, not cut off
#    (the SKIP rows show it; the wall time is printed, not bounded: the suite's
#    own reference jobs run beside it on a shared machine)
t=$SECONDS
CHECK_DRY=1 CHECK_DEADLINE_S=25 CHECK_STATES=$work/no_states CHECK_LOG_CAP_BYTES=65536 \
    dev/gpu/check.sh "$work/out2" > "$work/run2.log" 2>&1
took=$((SECONDS - t))
s2=$work/out2/summary.txt
rows=0
for st in "${stages[@]}"; do has "$s2" "== $st" '(START|SKIP)' && rows=$((rows + 1)); done
deadline_skips=$(grep -cE '  SKIP \((needs ~[0-9]+ s, -?[0-9]+ s left before the deadline|deadline: )' "$s2")
started=$(grep -cE '^ *[0-9]+ s  == .* +START' "$s2")
if [ $rows -eq ${#stages[@]} ] && [ "$deadline_skips" -ge 5 ] && has "$s2" "== build" START &&
   has "$s2" "== end" INFO; then
    ok "CHECK_DEADLINE_S=25: a row for each of the ${#stages[@]} stages, $started started, $deadline_skips SKIP rows at the deadline, ended after $took s"
else
    bad "CHECK_DEADLINE_S=25: $rows of ${#stages[@]} stages, $deadline_skips deadline SKIPs, $took s:"; sed 's/^/     /' "$s2"
fi

wait $refs || { bad "reference states: $(tail -3 "$work/make_states.log")"; echo "$fails failed"; exit 1; }

# 4. dev/gpu/prepare.sh without network: what it cannot fetch is named with
#    the way to get it, the rest is made (the states: reused, being fresh), and
#    the call it prints carries what is there; then from local git mirrors
#    (stand-ins for the fetch tool's) it makes .llmc and its cudnn-frontend
prep=$work/prepare
# a carried path as prepare.sh prints it: relative inside the checkout
rel() { case $1 in "$PWD"/*) echo "${1#"$PWD"/}" ;; *) echo "$1" ;; esac; }
LLMC_MIRROR=$work/none FRONTEND_MIRROR=$work/none dev/gpu/prepare.sh --offline --root "$prep/root" \
    --states "$states" > "$prep.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "^MISSING .llmc (llm.c: no side-by-side rows): no git mirror at $work/none and --offline: call the fetch tool with github:karpathy/llm.c" "$prep.log" &&
   grep -q '^MISSING .llmc/cudnn-frontend (llm.c USE_CUDNN=1, the headline row): needs .llmc first' "$prep.log" &&
   grep -q '^MISSING .devdeps (only Fashion-MNIST' "$prep.log" &&
   grep -q "^ok      $states: the reference states already there" "$prep.log" &&
   grep -qF "run(command=\"bash dev/gpu/check.sh \$OUT\", carry=[\"$(rel "$states")\"], timeout_s=600)" "$prep.log"; then
    ok "prepare.sh --offline without mirrors: llm.c, cudnn-frontend and .devdeps named MISSING with the fetch to make, the states reused, the call carries them"
else
    bad "prepare.sh --offline without mirrors (exit $rc):"; sed 's/^/     /' "$prep.log"
fi
mkdir -p "$prep/llmc_src" "$prep/fe_src/include"
echo 'train_gpt2cu:' > "$prep/llmc_src/Makefile"; echo '// stand-in' > "$prep/llmc_src/train_gpt2.cu"
echo '// stand-in' > "$prep/fe_src/include/cudnn_frontend.h"; echo 'not carried' > "$prep/fe_src/README.md"
for r in llmc_src fe_src; do
    git -C "$prep/$r" init -q && git -C "$prep/$r" add -A &&
        git -C "$prep/$r" -c user.name=t -c user.email=t@t commit -qm stand-in || bad "git stand-in $r"
done
LLMC_MIRROR=$prep/llmc_src/.git FRONTEND_MIRROR=$prep/fe_src/.git dev/gpu/prepare.sh --offline \
    --root "$prep/root" --states "$states" > "$prep.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -f "$prep/root/.llmc/train_gpt2.cu" ] && [ -f "$prep/root/.llmc/cudnn-frontend/include/cudnn_frontend.h" ] &&
   [ ! -e "$prep/root/.llmc/cudnn-frontend/README.md" ] &&
   grep -qF "carry=[\"$(rel "$states")\", \"$(rel "$prep/root/.llmc")\"]" "$prep.log" && grep -q 'of 65536 KiB, 2 of 8 paths' "$prep.log"; then
    ok "prepare.sh from git mirrors: .llmc and .llmc/cudnn-frontend/include (include/ only) made, carried, sizes checked"
else
    bad "prepare.sh from git mirrors (exit $rc):"; sed 's/^/     /' "$prep.log"
fi

# 1. the full dry run, small log caps so that the capping is exercised, and a
#    stand-in cost model (it reads results.txt and prints one line)
cat > "$work/cost_model.sh" << 'EOF'
[ -f "$1" ] && echo "stand-in cost model: $(wc -l < "$1") RESULT lines in $(basename "$1")"
EOF
log_cap=65536 combined_cap=65536
t=$SECONDS
CHECK_DRY=1 CHECK_DEADLINE_S=900 CHECK_STATES=$states CHECK_COST_MODEL=$work/cost_model.sh \
    CHECK_LOG_CAP_BYTES=$log_cap CHECK_COMBINED_CAP_BYTES=$combined_cap \
    dev/gpu/check.sh "$work/out1" > "$work/run1.log" 2>&1 &
pid=$!
s1=$work/out1/summary.txt
# rows while it runs: the d12 stage's START row, with the script still running
early=""
while kill -0 $pid 2> /dev/null; do
    if [ -z "$early" ] && has "$s1" "== d12 tok/s" START 2> /dev/null && kill -0 $pid 2> /dev/null; then
        early=$(wc -l < "$s1")
    fi
    sleep 0.5
done
wait $pid
rc=$?
took=$((SECONDS - t))
final=$(wc -l < "$s1")
if [ -n "$early" ] && [ "$early" -ge 10 ] && [ "$early" -lt "$final" ]; then
    ok "summary.txt is written as the rows come: $early rows while the script ran (of $final)"
else
    bad "summary.txt not incremental: ${early:-no} rows seen while it ran, $final at the end"
fi
missing=()
for st in "${stages[@]}"; do
    [ "$st" = fashion-mnist ] && [ ! -d /usr/share/datasets/fashion-mnist ] && continue
    has "$s1" "== $st" START || missing+=("$st")
done
if [ ${#missing[@]} -eq 0 ]; then ok "a START row for each of the ${#stages[@]} stages"
else bad "stages without a START row: ${missing[*]}"; fi
want=("build: host library" "build: GPT-2 first" "build: background" "memcheck (dry: the test plain)"
      "preflight: log cap" "resume train_gpt2cu: step 4 files" cost_model)
# every state make_states.sh made, in both precisions
while read -r a b _; do want+=("fp32_${a}_$b" "bf16_${a}_$b"); done < "$states/seeds.txt"
while read -r a b _; do want+=("vit_fp32_${a}_$b" "vit_bf16_${a}_$b"); done < "$states/vit_seeds.txt"
while read -r a _; do want+=("swin_fp32_$a" "swin_bf16_$a"); done < "$states/swin_seeds.txt"
[ -d /usr/share/datasets/fashion-mnist ] && want+=("resume train_vitcu: step 4 files")
for f in dev/cuda/*.cu; do want+=("dev_$(basename "$f" .cu)_bf16" "dev_$(basename "$f" .cu)_fp32"); done
missing=()
for name in "${want[@]}"; do has "$s1" "$name" PASS || missing+=("$name"); done
if [ ${#missing[@]} -eq 0 ]; then ok "PASS rows: ${#want[@]} (every dev/cuda program in both precisions)"
else bad "no PASS row for: ${missing[*]}"; fi
times=0
for B in 1 2; do
    for mode in ln cbwc; do has "$s1" "d12 (dry: d2c64h4v256t64) $mode B=$B T=16" 'TIME [0-9]+ tok/s' && times=$((times + 1)); done
    has "$s1" "llm.c USE_CUDNN=1 (dry: our emulated trainer -at cudnn) B=$B T=16" 'TIME [0-9]+ tok/s' && times=$((times + 1))
    has "$s1" "llm.c USE_CUDNN=0 (dry: our emulated trainer) B=$B T=16" 'TIME [0-9]+ tok/s' && times=$((times + 1))
    has "$s1" "  llm.c USE_CUDNN=1 / ours (ln), B=$B" 'TIME ours takes' && times=$((times + 1))
    has "$s1" "  llm.c USE_CUDNN=0 / ours (ln), B=$B" 'TIME ours takes' && times=$((times + 1))
done
for T in 16 32 64; do has "$s1" "inference T=$T (B=$((64 / T)))" 'TIME ln [0-9.]+ ms, rms' && times=$((times + 1)); done
has "$s1" "  predicted" 'TIME stand-in cost model: 0 RESULT lines in results.txt' && times=$((times + 1))
has "$s1" "d12 (dry: d2c64h4v256t64) ln -at cudnn B=1 T=16" 'TIME [0-9]+ tok/s' && times=$((times + 1))
has "$s1" "  cudnn / tc (ln), B=1" 'TIME cudnn takes' && times=$((times + 1))
has "$s1" "  llm.c USE_CUDNN=1 / ours (ln, cudnn), B=1" 'TIME ours takes' && times=$((times + 1))
if [ $times -eq 19 ]; then ok "TIME rows: d12 in each mode and B, the llm.c stand-ins (USE_CUDNN=1, then 0, at each B) and their ratios, -at cudnn and its ratios, inference at 3 T, the cost model"
else bad "$times of 19 TIME rows"; fi
# the headline: llm.c with cuDNN first, without it second, in the rows and the tail
head1=$(grep -n '  llm.c USE_CUDNN=1 / ours (ln), B=1 ' "$s1" | cut -d: -f1)
head0=$(grep -n '  llm.c USE_CUDNN=0 / ours (ln), B=1 ' "$s1" | cut -d: -f1)
if [ -n "$head1" ] && [ -n "$head0" ] && [ "$head1" -lt "$head0" ] &&
   grep -A2 '^=== headline' "$work/run1.log" | sed -n 2p | grep -q 'llm.c USE_CUDNN=1 / ours (ln), B=1' &&
   grep -A2 '^=== headline' "$work/run1.log" | sed -n 3p | grep -q 'llm.c USE_CUDNN=1 / ours (ln), B=2'; then
    ok "the headline: llm.c with cuDNN (USE_CUDNN=1) before llm.c without, in summary.txt and the output's tail"
else
    bad "headline order: USE_CUDNN=1 row at line ${head1:-none}, USE_CUDNN=0 at ${head0:-none}; tail: $(grep -A4 '^=== headline' "$work/run1.log" | tr '\n' '|')"
fi
if [ $rc -eq 0 ] && ! grep -q '  FAIL' "$s1" && has "$s1" "== end" 'INFO \([0-9]+ s of 900; [0-9]+ PASS, 0 FAIL, 0 SKIP\)'; then
    ok "dry run: exit 0, no FAIL, no SKIP ($took s)"
else
    bad "dry run (exit $rc, $took s):"; grep -E '  (FAIL|SKIP)' "$s1" | sed 's/^/     /'
fi
files=$(find "$work/out1" -type f | wc -l)
big=$(find "$work/out1" -type f -size +$(( (combined_cap * 5 / 4 + 16384) / 1024 ))k)
if [ "$files" -le 8 ] && [ -z "$big" ] && grep -q 'combined.log is at its cap' "$work/out1/combined.log" &&
   grep -q 'bytes left out here: the log is capped' "$work/out1/combined.log"; then
    ok "$files files back, each within its cap (combined.log $(stat -c %s "$work/out1/combined.log") bytes, cap $combined_cap)"
else
    bad "files back: $files (at most 8), over the cap: ${big:-none}; capping markers: $(grep -c 'at its cap\|bytes left out' "$work/out1/combined.log")"
fi
echo "$fails failed"
suite_exit $fails
