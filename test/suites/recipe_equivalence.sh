#!/usr/bin/env bash
# ln == cbwc under Swin-T's training recipe (issue 35 item 6): train_vit with
# RandAugment rand-m9-mstd0.5-inc1, mixup 0.8 / cutmix 1.0 with soft targets,
# random erasing 0.25, drop-path 0.2, label smoothing 0.1, clip 5, weight
# decay 0.05 in timm's groups and an EMA of the weights, 300 steps, ViT and
# Swin with the centring ops (-K 1: every norm foldable) on Fashion-MNIST:
# the logged train loss of every step, the test loss and the EMA's test loss
# of cbwc equal ln's within 1e-4 (measured <= 2e-6 over 7 seeds: the 6
# decimals of the log, fp32 rounding); the rms control differs by > 1e-3.
# Why it holds: the augmentations act on pixels before the centred patch
# embedding and on the targets, drop-path scales a whole branch by one
# number per image (a centred branch stays zero-mean), and the EMA is
# linear in the weights (docs/math.md section 6).
# lr 3e-4: at 1e-3 this small model passes an unstable phase (steps ~110-130)
# where any fp32 difference is amplified to ~1e-3 for a few steps and decays
# again; running ln on one thread instead of two does the same (measured:
# 9.1e-4 at step 125, cbwc vs ln 4.2e-3), so a trajectory there measures
# the dynamics, not the identity.
# Then a resume from step 4 with every part on gives the uninterrupted run's
# step-8 model and state bit for bit (augment, mix and drop-path draws from
# the saved Rng; the EMA in the state), and the emulated GPU trainer (a
# logic check, not a device run) keeps the identity: train_vitfp32cu ln vs
# cbwc within 1e-5 relative over 6 steps (rms differs by > 1e-4),
# train_vitcu (bf16) within 1e-2, bf16's rounding of the two weight copies.
# sanitized: skip its C code runs under the sanitizers in mixup_erasing, randaugment, ema and drop_path; 300-step runs there would take minutes
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/recipe_equivalence
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "recipe_equivalence: seed $seed"
fmnist=/usr/share/datasets/fashion-mnist
if [ ! -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: no Fashion-MNIST in $fmnist (Debian's dataset-fashion-mnist)"
    exit 77
fi
[ -x bin/train_vit ] || make -s train_vit
sd=$((seed % 100000 + 1))
recipe=(-aa rand-m9-mstd0.5-inc1 -mixup 0.8 -cutmix 1.0 -reprob 0.25 -dp 0.2 -ls 0.1 -gc 5 -c 0.05
        -ema 0.99 -u 20 -l 3e-4 -pe 1 -sd "$sd")

. test/trainer_curves.sh # curve_diff
# |a - b| of the last KEY (tel, tel_ema) line of two runs
last_diff() {
    local a b
    a=$(sed -n "s/^s:[0-9]* $3:\([0-9.e+-]*\).*/\1/p" "$1/main.log" | tail -1)
    b=$(sed -n "s/^s:[0-9]* $3:\([0-9.e+-]*\).*/\1/p" "$2/main.log" | tail -1)
    awk -v a="${a:-nan}" -v b="${b:-nan}" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.3e\n", d }'
}
within() { $PY -c "import sys; v, t = map(float, sys.argv[1:]); sys.exit(not v <= t)" "$1" "$2"; }
above() { $PY -c "import sys; v, t = map(float, sys.argv[1:]); sys.exit(not v > t)" "$1" "$2"; }

fails=0
check_family() { # NAME SHAPE... : ln, cbwc (and rms with CONTROL=1)
    local name=$1; shift
    local modes=(ln cbwc); [ "${CONTROL:-0}" = 1 ] && modes+=(rms)
    for m in "${modes[@]}"; do
        bin/train_vit "$@" -N "$m" "${recipe[@]}" -o "$work/${name}_$m" > "$work/${name}_$m.out" ||
            { echo "FAIL: train_vit $name -N $m"; tail -5 "$work/${name}_$m.out"; exit 1; }
    done
    local steps same tel ema
    steps=$(grep -c "^s:[0-9]* trl:" "$work/${name}_ln/main.log")
    same=$(curve_diff "$work/${name}_ln" "$work/${name}_cbwc")
    tel=$(last_diff "$work/${name}_ln" "$work/${name}_cbwc" tel)
    ema=$(last_diff "$work/${name}_ln" "$work/${name}_cbwc" tel_ema)
    if [ "$steps" -ge 300 ] && within "$same" 1e-4 && within "$tel" 1e-4 && within "$ema" 1e-4; then
        echo "ok   $name, $steps steps: cbwc vs ln train loss $same, test loss $tel, EMA test loss $ema (tol 1e-4)"
    else
        echo "FAIL $name, $steps steps (>= 300): cbwc vs ln train loss $same, test loss $tel, EMA test loss $ema (tol 1e-4)"
        fails=$((fails + 1))
    fi
    if [ "${CONTROL:-0}" = 1 ]; then
        local other
        other=$(curve_diff "$work/${name}_ln" "$work/${name}_rms")
        if above "$other" 1e-3; then
            echo "ok   $name control: rms vs ln $other (min 1e-3)"
        else
            echo "FAIL $name control: rms vs ln $other, not above 1e-3"; fails=$((fails + 1))
        fi
    fi
}
echo "== the recipe, 300 steps: ${recipe[*]}"
CONTROL=1 check_family vit -e vit -C 16 -L 2 -H 2 -b 16 -x 300 -nt 4800 -ne 64
check_family swin_k1 -e swin -K 1 -E 16 -D 2,2 -A 1,2 -b 8 -x 300 -nt 2400 -ne 64

echo "== resume from step 4 with every part on (ViT, cbwc)"
run=(bin/train_vit -e vit -C 16 -L 2 -H 2 -N cbwc -b 16 -x 8 -nt 96 -ne 32 -n 4 "${recipe[@]}")
"${run[@]}" -u 2 -o "$work/full" > "$work/full.out"
cp -r "$work/full" "$work/resumed"
rm "$work/resumed/model_00000008.bin" "$work/resumed/state_00000008.bin"
"${run[@]}" -u 2 -o "$work/resumed" -y 1 > "$work/resumed.out"
if same_step_files "$work/full" "$work/resumed" 8; then
    echo "ok   the step-8 model and state (Rng, moments, EMA) bit for bit (the resume crosses an epoch)"
else
    fails=$((fails + 1))
fi

emu=build/emu/train_vitfp32cu emu_bf16=build/emu/train_vitcu
make -s "$emu" "$emu_bf16" > "$work/emu_build.log" 2>&1 ||
    { echo "FAIL: make $emu $emu_bf16"; tail -20 "$work/emu_build.log"; exit 1; }
echo "== emulated GPU trainers (a logic check), ViT, 6 steps"
gpu=(-e vit -C 16 -L 2 -H 2 -b 8 -x 6 -nt 48 -ne 16 "${recipe[@]}" -u 2)
for m in ln cbwc rms; do "$emu" "${gpu[@]}" -N $m -o "$work/g32_$m" > "$work/g32_$m.out" 2>&1; done
for m in ln cbwc; do "$emu_bf16" "${gpu[@]}" -N $m -o "$work/g16_$m" > "$work/g16_$m.out" 2>&1; done
same=$(curve_diff "$work/g32_ln" "$work/g32_cbwc"); other=$(curve_diff "$work/g32_ln" "$work/g32_rms")
if within "$same" 1e-5 && above "$other" 1e-4; then
    echo "ok   train_vitfp32cu: cbwc vs ln $same (tol 1e-5), rms vs ln $other (min 1e-4)"
else
    echo "FAIL train_vitfp32cu: cbwc vs ln $same (tol 1e-5), rms vs ln $other (min 1e-4)"; fails=$((fails + 1))
fi
same=$(curve_diff "$work/g16_ln" "$work/g16_cbwc")
if within "$same" 1e-2; then
    echo "ok   train_vitcu (bf16): cbwc vs ln $same (tol 1e-2)"
else
    echo "FAIL train_vitcu (bf16): cbwc vs ln $same (tol 1e-2)"; fails=$((fails + 1))
fi
[ $fails -eq 0 ] && echo "recipe_equivalence: all checks passed"
exit $((fails > 0))
