#!/usr/bin/env bash
# The EMA of the weights in train_vit (-ema DECAY; llmc/core/ema.c, timm's
# ModelEmaV2 rule). Fashion-MNIST (SKIP without it), ViT and Swin in cbwc
# (centred weights derived from the parameters), 32 train images, -b 8: 4
# steps an epoch, so the EMA is tested (swapped into the model and back) at
# step 4, inside a 6-step run. Each run starts from the model file of a
# one-step run, so numpy knows w_0:
#   1. the EMA in every step's state file equals numpy's recursion over the
#      step's model files (test/ema_reference.py: 1e-6 of the largest value;
#      its negative controls, the live weights, a late start and another decay,
#      miss by > 100x that);
#   2. the live weights and losses equal a run without -ema, bit for bit (the
#      EMA's test pass restores the model and its centred weights);
#   3. the EMA's test line is the test of a model file holding the EMA
#      (train_vit -ev 1): top-1, top-5 and loss the same to the printed digit;
#   4. -y 1 from step 2 with -ema: main.log (EMA lines too), the final model
#      and state byte-identical to the uninterrupted run's;
#   5. ZeRO-1 on 2 MPI ranks (each rank keeps the EMA of its shard): 1. holds,
#      and a 2-rank resume is bit-exact (SKIP without MPI);
#   6. refused with an error naming the flag or the state file: -ema 1.5, -ema
#      -1, -ema 0.999999999 (1 in fp32); -y 1 of an EMA checkpoint without
#      -ema or with another decay; -y 1 of a checkpoint without an EMA with
#      -ema; and a version-1 state (before the EMA) still resumes, bit-exact.
# In the fast tier (FOLDNORM_TEST_TIER=check): 1. for ViT and the refusals of
# the flag only. Under SAN=1 (FOLDNORM_SANITIZED=1) all but Swin's runs, whose
# EMA is the same C code as ViT's (llmc/core/ema.c, the checkpoint's).
# tier: check
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
work=${1:-$(mktemp -d)}/ema
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "ema: seed $seed"
quick=0; [ "${FOLDNORM_TEST_TIER:-full}" = check ] && quick=1
fmnist=/usr/share/datasets/fashion-mnist
if [ ! -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: train_vit -ema: no Fashion-MNIST in $fmnist (Debian's fashion-mnist)"
    exit 77
fi
[ -x bin/train_vit ] || make -s train_vit || exit 1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
s=$((seed % 100000))
common=(-i "$fmnist" -b 8 -nt 32 -ne 16 -pe 1 -u 2 -N cbwc -sd $s)
vit=(-e vit -C 24 -L 2 -H 3 -P 7)
swin=(-e swin -E 16 -D 2,2 -A 1,2 -W 7 -K 1)
# refused CMD... : the run fails (exit 1) and its stderr holds $want
refused() {
    local name=$1; shift
    if "$@" > "$work/$name.out" 2> "$work/$name.err"; then
        bad "$name: accepted"
    elif grep -qF -- "$want" "$work/$name.err"; then
        ok "$name: refused ($(head -1 "$work/$name.err"))"
    else
        bad "$name: not the expected error '$want': $(head -2 "$work/$name.err" | tr '\n' ' ')"
    fi
}
# seed_dir FROM TO STEP: a run folder holding FROM's checkpoint STEP (and its run.txt, main.log)
seed_dir() { mkdir -p "$2" && cp "$1/run.txt" "$1/main.log" "$1/model_$(printf %08d "$3").bin" "$1/state_$(printf %08d "$3").bin" "$2/"; }
lines() { grep -E "$2" "$1/main.log"; }

for fam in vit swin; do
    [ $fam = swin ] && { [ $quick = 1 ] || [ "${FOLDNORM_SANITIZED:-0}" = 1 ]; } && continue
    if [ $fam = vit ]; then shape=("${vit[@]}"); else shape=("${swin[@]}"); fi
    bin/train_vit "${common[@]}" "${shape[@]}" -x 1 -o "$work/${fam}_init" > "$work/${fam}_init.out" 2>&1 ||
        { bad "$fam: the one-step run: $(tail -1 "$work/${fam}_init.out")"; continue; }
    init=$work/${fam}_init/model_00000001.bin
    run=(bin/train_vit "${common[@]}" -e "$init" -x 6 -n 1)
    "${run[@]}" -ema 0.9 -o "$work/$fam" > "$work/$fam.out" 2>&1 || { bad "$fam -ema 0.9: $(tail -1 "$work/$fam.out")"; continue; }
    echo "== $fam: the stored EMA against numpy's"
    $PY test/ema_reference.py 0.9 "$init" "$work/$fam" 6 || bad "$fam: the stored EMA"
    [ $quick = 1 ] && continue
    "${run[@]}" -o "$work/${fam}_live" > "$work/${fam}_live.out" 2>&1 || { bad "$fam without -ema: $(tail -1 "$work/${fam}_live.out")"; continue; }
    if grep -q "ema accuracy" "$work/$fam.out" && cmp -s "$work/$fam/model_00000006.bin" "$work/${fam}_live/model_00000006.bin" &&
       diff <(lines "$work/$fam" 'trl|tea:') <(lines "$work/${fam}_live" 'trl|tea:') > /dev/null; then
        ok "$fam: the EMA, tested at step 4, leaves the live weights and losses as without -ema, bit for bit"
    else
        bad "$fam: the -ema run's live weights or losses differ from the run without it"
    fi
    $PY test/ema_reference.py --ema-model "$work/$fam/state_00000006.bin" "$work/$fam/model_00000006.bin" "$work/${fam}_ema.bin"
    bin/train_vit -ev 1 -e "$work/${fam}_ema.bin" -i "$fmnist" -ne 16 -b 8 > "$work/${fam}_ev.out" 2>&1
    want=$(sed -nE 's/^final: .* test_ema_accuracy ([^ ]+) test_ema_top5 ([^ ]+) test_ema_loss ([^ ]+)$/\1 \2 \3/p' "$work/$fam.out")
    got=$(sed -nE 's/^eval: .* test_accuracy ([^ ]+) test_loss ([^ ]+) test_top5 ([^ ]+)$/\1 \3 \2/p' "$work/${fam}_ev.out")
    if [ -n "$want" ] && [ "$want" = "$got" ]; then
        ok "$fam: the final EMA line (top-1, top-5, loss: $want) is -ev 1's of a model file holding the EMA"
    else
        bad "$fam: the run's EMA test '$want', -ev 1 of the EMA's model file '$got'"
    fi
    seed_dir "$work/$fam" "$work/${fam}_resumed" 2
    if "${run[@]}" -ema 0.9 -o "$work/${fam}_resumed" -y 1 > "$work/${fam}_resumed.out" 2>&1 &&
       cmp -s "$work/$fam/model_00000006.bin" "$work/${fam}_resumed/model_00000006.bin" &&
       cmp -s "$work/$fam/state_00000006.bin" "$work/${fam}_resumed/state_00000006.bin" &&
       diff <(lines "$work/$fam" '^s:') <(lines "$work/${fam}_resumed" '^s:') > /dev/null; then
        ok "$fam: -y 1 from step 2 with -ema: main.log, the final model and state (the EMA) byte-identical"
    else
        bad "$fam: the resumed -ema run differs: $(tail -1 "$work/${fam}_resumed.out")"
    fi
done

echo "== refusals"
want="-ema: expected a number in [0, 1), got '1.5'" refused ema_1.5 bin/train_vit -ema 1.5
want="-ema: expected a number in [0, 1), got '-1'" refused ema_-1 bin/train_vit -ema -1
want="-ema: expected a number in [0, 1), got '0.999999999'" refused ema_1_in_fp32 bin/train_vit -ema 0.999999999
if [ $quick = 1 ]; then
    [ $fails -eq 0 ] && echo "ema: the fast tier's checks passed"
    [ $fails -eq 0 ]; exit
fi
vit_run=(bin/train_vit "${common[@]}" -e "$work/vit_init/model_00000001.bin" -x 6 -n 1)
state2=state_00000002.bin
seed_dir "$work/vit" "$work/no_flag" 2
want="$work/no_flag/$state2 holds an EMA of the weights of decay 0.9: resume with -ema 0.9" \
    refused resume_without_ema "${vit_run[@]}" -o "$work/no_flag" -y 1
seed_dir "$work/vit" "$work/other_decay" 2
want="$work/other_decay/$state2 holds an EMA of the weights of decay 0.9: resume with -ema 0.9" \
    refused resume_other_decay "${vit_run[@]}" -ema 0.99 -o "$work/other_decay" -y 1
seed_dir "$work/vit_live" "$work/no_ema" 2
want="-ema 0.9: $work/no_ema/$state2 holds no EMA of the weights" \
    refused resume_no_ema "${vit_run[@]}" -ema 0.9 -o "$work/no_ema" -y 1
# a version-1 state: the run without -ema's, its version slot 1 and checksum slots cleared
seed_dir "$work/vit_live" "$work/v1" 2
$PY - "$work/v1/$state2" <<'PYEOF'
import sys
import numpy as np
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
h = np.frombuffer(data[:1024], dtype="<i4").copy()
assert h[1] == 2 and h[12] == 0, (h[1], h[12])
h[1], h[254], h[255] = 1, 0, 0
data[:1024] = h.tobytes()
open(path, "wb").write(data)
PYEOF
if "${vit_run[@]}" -o "$work/v1" -y 1 > "$work/v1.out" 2>&1 &&
   cmp -s "$work/vit_live/model_00000006.bin" "$work/v1/model_00000006.bin"; then
    ok "a version-1 state resumes (no EMA), ending on the uninterrupted run's model byte for byte"
else
    bad "the version-1 state: $(tail -1 "$work/v1.out")"
fi

echo "== ZeRO-1, 2 MPI ranks"
if ! command -v mpirun > /dev/null || ! ldd bin/train_vit | grep -q libmpi; then
    echo "SKIP: ZeRO-1: this build has no MPI (scripts/deps/mpi.txt installs Debian's Open MPI)"
    [ $fails -eq 0 ] && exit 77
else
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpi=(env OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} mpirun --oversubscribe -np 2 -x OMP_NUM_THREADS -x ASAN_OPTIONS)
    zflags=(-i "$fmnist" -b 4 -nt 32 -ne 16 -pe 1 -u 2 -N cbwc -sd $s -e "$work/vit_init/model_00000001.bin" -x 6 -n 1 -z 1 -ema 0.9)
    if "${mpi[@]}" bin/train_vit "${zflags[@]}" -o "$work/z1" > "$work/z1.out" 2>&1 && grep -q "ZeRO-1" "$work/z1.out"; then
        $PY test/ema_reference.py 0.9 "$work/vit_init/model_00000001.bin" "$work/z1" 6 || bad "ZeRO-1: the stored EMA"
        seed_dir "$work/z1" "$work/z1_resumed" 2
        if "${mpi[@]}" bin/train_vit "${zflags[@]}" -o "$work/z1_resumed" -y 1 > "$work/z1_resumed.out" 2>&1 &&
           cmp -s "$work/z1/state_00000006.bin" "$work/z1_resumed/state_00000006.bin" &&
           cmp -s "$work/z1/model_00000006.bin" "$work/z1_resumed/model_00000006.bin"; then
            ok "ZeRO-1, 2 ranks: -y 1 from step 2, the final model and state (the gathered EMA) byte-identical"
        else
            bad "ZeRO-1: the 2-rank resume differs: $(tail -1 "$work/z1_resumed.out")"
        fi
    else
        bad "ZeRO-1: the 2-rank run: $(tail -2 "$work/z1.out" | tr '\n' ' ')"
    fi
fi
echo "ema: $fails failure(s)"
[ $fails -eq 0 ]
