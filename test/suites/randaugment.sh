#!/usr/bin/env bash
# RandAugment (llmc/vision/randaugment.c, train_vit / train_vitcu -aa, issue
# 35 item 1) against dev/reference/randaugment.py on the same draws:
#   ops: each of the 21 ops (the inc1 set and the plain one) on 1- and 3-channel
#     images of two sides, magnitudes 0, 10 and random, both signs: bytes equal
#     PIL's ImageOps / ImageEnhance calls as timm makes them, and a numpy
#     affine in PIL's convention for the geometric ops (NEAREST), exactly;
#     PIL's own NEAREST rotate / transform differ in <= 2e-3 of the pixels
#     (pixel edges), the opposite direction in most;
#   pipeline: vision_make_batch with -aa rand-m9-mstd0.5-inc1 (and
#     rand-n8-m10-mstd101: the plain set, uniform magnitudes) on grey images
#     (flip, ops, normalise) and shard crops (the crop's bytes, ops,
#     normalise) equals the reference's floats within 1e-6 (measured 0), and
#     differs by > 1e-2 without the ops;
#   draws: over 20000 images, ops uniform over the inc1 set, p 0.5, signs 1/2,
#     magnitudes N(9, 0.5) clipped to [0, 10] (6 sigma);
#   specs: timm's names parse to their parts; bad ones are refused with the
#     reason, by the parser and by train_vit;
#   resume: train_vit -aa resumed at step 4 gives step 8's model and state bit
#     for bit; control: without -aa another model (SKIP without Fashion-MNIST;
#     left out under SAN=1: train_vit runs under the sanitizers elsewhere);
#   GPU: the emulated train_vitfp32cu -aa (its prefetch workers) follows
#     train_vit -aa's curve within 1e-5 relative (as cuda_vit_emu), train_vit
#     without -aa's differs by > 1e-4 (SKIP without make emu).
# About 10 s (the emulated run 5 s); the fast tier stops before the resume.
# tier: check
set -euo pipefail
quick=0; [ "${FOLDNORM_TEST_TIER:-full}" = check ] && quick=1
cd "$(dirname "$0")/../.."
. test/trainer_curves.sh # curve_diff, same_step_files
work=${1:-$(mktemp -d)}
mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "randaugment: seed $seed"
[ -x bin/test_randaugment ] || make -s test_randaugment
echo "== specs"
check_spec() { # SPEC EXPECTED
    local got
    got=$(bin/test_randaugment parse "$1") || { echo "FAIL: $1 refused: $got"; exit 1; }
    [ "$got" = "$2" ] || { echo "FAIL: $1 parsed as '$got', expected '$2'"; exit 1; }
}
check_spec rand-m9-mstd0.5-inc1 "n=2 m=9 mstd=0.5 mmax=10 p=0.5 inc=1"
check_spec rand-n3-m5.5-p0.7 "n=3 m=5.5 mstd=0 mmax=10 p=0.7 inc=0"
check_spec rand "n=2 m=10 mstd=0 mmax=10 p=0.5 inc=0"
check_spec rand-m7-mstd101-mmax8 "n=2 m=7 mstd=101 mmax=8 p=0.5 inc=0"
for bad in rond-m9 rand-m11 rand-m9-x1 rand-n0 rand-n2.5 rand-inc2 rand-m rand-m9x rand-p1.5 randm9 rand-mmax0 rand--m9 rand-m9-; do
    if out=$(bin/test_randaugment parse $bad); then echo "FAIL: $bad accepted ($out)"; exit 1; fi
done
echo "  ok: 4 specs parsed to their parts, 13 bad ones refused"
[ -x bin/train_vit ] || make -s train_vit
for args in "-aa rand-m9-mstd0.5-foo1" "-aa rand-m9 -f 0"; do
    # shellcheck disable=SC2086
    if bin/train_vit $args -x 1 > "$work/bad.out" 2>&1; then echo "FAIL: train_vit $args ran"; exit 1; fi
    grep -q -- "-aa" "$work/bad.out" || { echo "FAIL: train_vit $args: no -aa in the error"; cat "$work/bad.out"; exit 1; }
    echo "  ok: train_vit $args refused: $(tail -1 "$work/bad.out")"
done
echo "== ops: ours vs the reference, byte for byte"
bin/test_randaugment ops "$seed" "$work/ops.bin"
$PY dev/reference/randaugment.py ops "$work/ops.bin"
echo "== pipeline: vision_make_batch -aa rand-m9-mstd0.5-inc1 vs the reference"
bin/test_randaugment pipeline rand-m9-mstd0.5-inc1 $((seed + 1)) "$work/pipe.bin"
$PY dev/reference/randaugment.py pipeline "$work/pipe.bin"
echo "== pipeline: -aa rand-n8-m10-mstd101 (the plain set, 8 ops, magnitudes uniform in [0, 10])"
bin/test_randaugment pipeline rand-n8-m10-mstd101 $((seed + 3)) "$work/pipe2.bin"
$PY dev/reference/randaugment.py pipeline "$work/pipe2.bin"
echo "== draws"
bin/test_randaugment draws rand-m9-mstd0.5-inc1 $((seed + 2)) 20000 > "$work/draws.txt"
$PY dev/reference/randaugment.py draws 9 0.5 0.5 < "$work/draws.txt"
if [ $quick = 1 ]; then echo "randaugment: all checks of the fast tier passed"; exit 0; fi
if [ "${FOLDNORM_SANITIZED:-0}" = 1 ]; then
    echo "SKIP: train_vit -aa resume under SAN=1 (train_vit runs under the sanitizers in other suites)"
    exit 0
fi
fmnist=/usr/share/datasets/fashion-mnist
if [ ! -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: train_vit -aa resume: no Fashion-MNIST in $fmnist (Debian's fashion-mnist)"
    exit 77
fi
echo "== train_vit -aa rand-m9-mstd0.5-inc1: a resume from step 4 gives step 8's model and state bit for bit"
run=(bin/train_vit -e vit -C 16 -L 2 -H 2 -b 32 -x 8 -nt 256 -ne 64 -u 2 -pe 4 -n 4 -sd $((seed % 1000 + 1)))
rm -rf "$work/full" "$work/resumed" "$work/noaa"
"${run[@]}" -aa rand-m9-mstd0.5-inc1 -o "$work/full" > "$work/full.out"
mkdir -p "$work/resumed"
cp "$work/full/model_00000004.bin" "$work/full/state_00000004.bin" "$work/resumed/"
"${run[@]}" -aa rand-m9-mstd0.5-inc1 -o "$work/resumed" -y 1 > "$work/resumed.out"
same_step_files "$work/full" "$work/resumed" 8 || exit 1
echo "  ok: the same model and state (augment RNG, moments) at step 8"
"${run[@]}" -o "$work/noaa" > "$work/noaa.out"
if cmp -s "$work/full/model_00000008.bin" "$work/noaa/model_00000008.bin"; then
    echo "FAIL: -aa trained the model that no -aa trains (RandAugment did nothing)"; exit 1
fi
echo "  control: without -aa another model"
# train_vitcu shares the set-up and the prefetch pool (llmc/vision/batch_prefetch.c):
# emulated, a logic check, not a device run
emu=build/emu/train_vitfp32cu
if [ ! -x $emu ]; then
    echo "SKIP: train_vitfp32cu -aa: $emu not built (make emu)"
    exit 77
fi
echo "== $emu -aa (emulated, -dw 8 workers): train_vit -aa's curve within 1e-5 relative; train_vit without -aa differs"
gpu=(-e vit -C 16 -L 2 -H 2 -b 16 -x 3 -nt 96 -ne 16 -u 1 -pe 1 -N cbwc -sd $((seed % 1000 + 1)))
rm -rf "$work/g_cpu" "$work/g_cpu0" "$work/g_gpu"
bin/train_vit "${gpu[@]}" -aa rand-m9-mstd0.5-inc1 -o "$work/g_cpu" > /dev/null
bin/train_vit "${gpu[@]}" -o "$work/g_cpu0" > /dev/null
$emu "${gpu[@]}" -aa rand-m9-mstd0.5-inc1 -o "$work/g_gpu" > "$work/g_gpu.out" 2>&1 || { tail "$work/g_gpu.out"; exit 1; }
same=$(curve_diff "$work/g_cpu" "$work/g_gpu"); other=$(curve_diff "$work/g_cpu0" "$work/g_gpu")
echo "  CPU vs emulated GPU with -aa: $same; CPU without -aa vs emulated GPU with: $other"
$PY -c "import sys; s, o = map(float, sys.argv[1:]); sys.exit(not (s <= 1e-5 and o > 1e-4))" "$same" "$other" ||
    { echo "FAIL: the GPU trainer's -aa"; exit 1; }
echo "randaugment: all checks passed"
