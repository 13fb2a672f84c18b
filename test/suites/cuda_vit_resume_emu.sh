#!/usr/bin/env bash
# train_vitcu's checkpoints and ZeRO-1 under emulation (issue 15; emulated: a
# logic check, not a device run, docs/cuda.md). Fashion-MNIST, a tiny ViT
# (C 24, 2 layers, 32 train images, -b 8: 4 steps an epoch, 8 steps), -n 2:
#   1. SIGTERM stops train_vitfp32cu (exit 143, a checkpoint, the resume
#      command); -y 1 resumes it: main.log's losses and accuracies, the final
#      model and state byte-identical to the uninterrupted run's
#   2. a corrupt newest state is named and skipped, the run resumes from the
#      one before and ends on the uninterrupted run's model, byte for byte
#   3. CPU <-> GPU: train_vit's checkpoint of step 2 resumed by train_vitfp32cu
#      and train_vitfp32cu's of step 6 by train_vit follow the other's curve
#      (main.log's losses within 1e-5 relative, as cuda_vit_emu's CPU vs GPU)
#   4. bf16 (train_vitcu, cbwc, -ema 0.9, 2 steps an epoch): the state holds
#      the fp32 master weights, moments and EMA, so a run resumed from step 2
#      (after the EMA's test pass, which swaps the EMA into the master weights
#      and their bf16 copy and back) ends on the same model, byte for byte
#   5. ZeRO-1, 2 ranks as threads (emulated NCCL), -ema 0.9 (each rank keeps
#      the EMA of its slice): ViT cbwc and Swin cbwc -K 1
#      -z 1 against -z 0 (losses within 1e-5; the checkpoints, the gathered
#      EMA in them too, byte-identical, as the emulated reduce-scatter and
#      all-reduce both sum in rank order);
#      -z 1's checkpoint resumed by one process with the global batch follows
#      the 2-rank curve (1e-5), and by 2 ranks -z 1 with flips (each rank's
#      stream per step) ends on the same model, byte for byte
#   6. -y 1 without -o, -y 1 on a folder without a checkpoint, -z 2: refused
#   7. -ema 0.9 (ViT cbwc from train_vit's one-step model, 6 steps, -n 1): the
#      EMA in every state equals numpy's recursion over the model files
#      (test/ema_reference.py, 1e-6); -y 1 from step 4 (after the EMA's test)
#      ends on the same model and state, byte for byte
# cores: 1
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/cuda_vit_resume_emu
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
s=$(( seed % 1000000 ))
echo "cuda_vit_resume_emu: seed $seed (emulated: a logic check, not a device run)"
E=build/emu
export OMP_NUM_THREADS=1
# the race detector (1.5-2.5x a run) only on Swin's ZeRO-1 run: the rest are
# the trainer's kernels again, race-checked in cuda_vit_emu (test/emu_race_subset.sh)
export EMU_RACECHECK=0
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
make -s $E/train_vitfp32cu $E/train_vitcu bin/train_vit > "$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log"; echo "FAIL make"; exit 1; }

fmnist=/usr/share/datasets/fashion-mnist
vit=(-i "$fmnist" -C 24 -L 2 -H 3 -P 7 -b 8 -x 8 -nt 32 -ne 16 -pe 1 -u 2 -n 2 -sd $((s + 11)))
# same_curve A B: the two main.log's train losses (6 decimals) step by step within 1e-5
# relative (cuda_vit_emu.sh's: fp32 on both sides, summed in other orders, ~1e-7 apart)
same_curve() {
    awk -F'[: ]' '/^s:[0-9]+ trl:/ { v = $4 + 0
                   if (FNR == NR) { a[$2] = v; n++ } else { m++; if (!($2 in a)) bad = 1
                     d = a[$2] - v; if (d < 0) d = -d; if (d > 1e-5 * (v < 0 ? -v : v > 1 ? v : 1)) bad = 1 } }
                   END { exit (bad || n == 0 || n != m) }' "$1/main.log" "$2/main.log"
}
same_log() { [ -n "$(grep -E 'trl|tea' "$1/main.log")" ] && diff <(grep -E 'trl|tea' "$1/main.log") <(grep -E 'trl|tea' "$2/main.log") > /dev/null; }
# seed_dir FROM TO STEP: a run folder holding FROM's checkpoint STEP (and its run.txt, main.log)
seed_dir() { mkdir -p "$2" && cp "$1/run.txt" "$1/main.log" "$1/model_$(printf %08d "$3").bin" "$1/state_$(printf %08d "$3").bin" "$2/"; }
last=$(printf %08d 8)

"$E/train_vitfp32cu" "${vit[@]}" -o "$work/full" > "$work/full.log" 2>&1 || bad "train_vitfp32cu, 8 steps: $(tail -1 "$work/full.log")"

# 1. stop and resume. The signal goes once "data:" is printed (the handler is installed
#    before): the run stops after the step in progress, well before step 8
"$E/train_vitfp32cu" "${vit[@]}" -o "$work/sig" > "$work/sig.log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q '^data:' "$work/sig.log" 2> /dev/null && break; sleep 0.05; done
kill -TERM $pid 2> /dev/null; wait $pid; rc=$?
stopped=$(sed -n 's/^stopped by SIGTERM after step \([0-9]*\).*/\1/p' "$work/sig.log")
if [ $rc -eq 143 ] && [ -n "$stopped" ] && [ "$stopped" -lt 8 ] && grep -q "^resume with: .* -y 1" "$work/sig.log" &&
   [ -f "$work/sig/state_$(printf %08d "$stopped").bin" ]; then
    ok "train_vitfp32cu: SIGTERM after step $stopped of 8: exit 143, checkpoint, resume command"
else
    bad "train_vitfp32cu SIGTERM: exit $rc, step '$stopped'"; tail -3 "$work/sig.log" | sed 's/^/     /'
fi
if "$E/train_vitfp32cu" "${vit[@]}" -o "$work/sig" -y 1 > "$work/sig_resume.log" 2>&1 &&
   grep -q "resumed from $work/sig at step $stopped" "$work/sig_resume.log" && same_log "$work/full" "$work/sig" &&
   cmp -s "$work/full/model_$last.bin" "$work/sig/model_$last.bin" && cmp -s "$work/full/state_$last.bin" "$work/sig/state_$last.bin"; then
    ok "train_vitfp32cu -y 1 from step $stopped: main.log's losses and accuracies, final model and state byte-identical to the uninterrupted run's"
else
    bad "train_vitfp32cu -y 1 from step $stopped differs from the uninterrupted run"
    paste <(grep -E 'trl|tea' "$work/full/main.log") <(grep -E 'trl|tea' "$work/sig/main.log") | sed 's/^/     /'
fi

# 2. a corrupt newest checkpoint (one bit of its moments flipped: the CRC32 catches it)
seed_dir "$work/full" "$work/fallback" 2; seed_dir "$work/full" "$work/fallback" 4
python3 -c "import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[2000] ^= 0x40; open(p, 'wb').write(b)" \
    "$work/fallback/state_00000004.bin"
if "$E/train_vitfp32cu" "${vit[@]}" -o "$work/fallback" -y 1 > "$work/fallback.log" 2>&1 &&
   grep -q "skipping the checkpoint of step 4: .*state_00000004.bin: checksum mismatch" "$work/fallback.log" &&
   grep -q "resumed from $work/fallback at step 2" "$work/fallback.log" &&
   cmp -s "$work/full/model_$last.bin" "$work/fallback/model_$last.bin" && same_log "$work/full" "$work/fallback"; then
    ok "train_vitfp32cu -y 1: corrupt state_00000004 named and skipped, resumed from step 2, the same final model"
else
    bad "train_vitfp32cu fallback past a corrupt newest state"; grep -E 'warning|error|resumed' "$work/fallback.log" | sed 's/^/     /'
fi

# 3. CPU <-> GPU
bin/train_vit "${vit[@]}" -o "$work/cpu" > "$work/cpu.log" 2>&1 || bad "train_vit, 8 steps: $(tail -1 "$work/cpu.log")"
seed_dir "$work/cpu" "$work/cpu_to_gpu" 2
if "$E/train_vitfp32cu" "${vit[@]}" -o "$work/cpu_to_gpu" -y 1 > "$work/cpu_to_gpu.log" 2>&1 &&
   grep -q "resumed from .* at step 2" "$work/cpu_to_gpu.log" && same_curve "$work/cpu" "$work/cpu_to_gpu"; then
    ok "train_vitfp32cu -y 1 from train_vit's step 2: train_vit's losses to 1e-5"
else
    bad "train_vitfp32cu resuming train_vit's checkpoint"; paste <(grep trl "$work/cpu/main.log") <(grep trl "$work/cpu_to_gpu/main.log") | sed 's/^/     /'
    tail -2 "$work/cpu_to_gpu.log" | sed 's/^/     /'
fi
seed_dir "$work/full" "$work/gpu_to_cpu" 6
if bin/train_vit "${vit[@]}" -o "$work/gpu_to_cpu" -y 1 > "$work/gpu_to_cpu.log" 2>&1 &&
   grep -q "resumed from .* at step 6" "$work/gpu_to_cpu.log" && same_curve "$work/full" "$work/gpu_to_cpu"; then
    ok "train_vit -y 1 from train_vitfp32cu's step 6: the GPU run's losses to 1e-5"
else
    bad "train_vit resuming train_vitfp32cu's checkpoint"; paste <(grep trl "$work/full/main.log") <(grep trl "$work/gpu_to_cpu/main.log") | sed 's/^/     /'
    tail -2 "$work/gpu_to_cpu.log" | sed 's/^/     /'
fi

# 4. bf16: 4 steps in cbwc, resumed from step 2
bf=(-i "$fmnist" -C 24 -L 2 -H 3 -P 7 -b 8 -x 4 -nt 16 -ne 16 -pe 1 -u 2 -n 2 -N cbwc -ema 0.9 -sd $((s + 13)))
"$E/train_vitcu" "${bf[@]}" -o "$work/bf16" > "$work/bf16.log" 2>&1 || bad "train_vitcu, 4 steps: $(tail -1 "$work/bf16.log")"
seed_dir "$work/bf16" "$work/bf16_resume" 2
if "$E/train_vitcu" "${bf[@]}" -o "$work/bf16_resume" -y 1 > "$work/bf16_resume.log" 2>&1 &&
   cmp -s "$work/bf16/model_00000004.bin" "$work/bf16_resume/model_00000004.bin" && same_log "$work/bf16" "$work/bf16_resume"; then
    ok "train_vitcu (bf16) cbwc -ema -y 1 from step 2 (after the EMA's test): the same losses and final fp32 master weights, byte for byte"
else
    bad "train_vitcu (bf16) resume"; paste <(grep trl "$work/bf16/main.log") <(grep trl "$work/bf16_resume/main.log") | sed 's/^/     /'
fi

# 5. ZeRO-1 with 2 ranks. ViT: 48 images, -b 4 per rank, 4 steps, cbwc (V re-projected
#    from the gathered weights); no flips where one process must follow two
dp=(-i "$fmnist" -C 24 -L 2 -H 3 -P 7 -x 4 -nt 48 -ne 16 -pe 1 -u 2 -n 2 -N cbwc -ema 0.9 -sd $((s + 5)))
for z in 0 1; do
    EMU_RANKS=2 "$E/train_vitfp32cu" "${dp[@]}" -f 0 -b 4 -z $z -pf "$work/id_z$z" -o "$work/vit_z$z" > "$work/vit_z$z.log" 2>&1 ||
        bad "train_vitfp32cu 2 ranks -z $z: $(tail -1 "$work/vit_z$z.log")"
done
if grep -q "(ZeRO-1)" "$work/vit_z1.log" && same_curve "$work/vit_z0" "$work/vit_z1" &&
   cmp -s "$work/vit_z0/state_00000002.bin" "$work/vit_z1/state_00000002.bin" &&
   cmp -s "$work/vit_z0/state_00000004.bin" "$work/vit_z1/state_00000004.bin"; then
    ok "train_vitfp32cu ViT cbwc, 2 ranks: -z 1 == -z 0 (losses 1e-5, checkpoints byte-identical)"
else
    bad "train_vitfp32cu ViT -z 1 vs -z 0"; paste <(grep trl "$work/vit_z0/main.log") <(grep trl "$work/vit_z1/main.log") | sed 's/^/     /'
fi
seed_dir "$work/vit_z1" "$work/vit_z1_one" 2
if "$E/train_vitfp32cu" "${dp[@]}" -f 0 -b 8 -o "$work/vit_z1_one" -y 1 > "$work/vit_z1_one.log" 2>&1 &&
   same_curve "$work/vit_z1" "$work/vit_z1_one"; then
    ok "train_vitfp32cu -b 8, one process, -y 1 from the 2-rank -z 1 checkpoint of step 2: its losses to 1e-5"
else
    bad "one process resuming the -z 1 checkpoint"; paste <(grep trl "$work/vit_z1/main.log") <(grep trl "$work/vit_z1_one/main.log") | sed 's/^/     /'
fi
EMU_RANKS=2 "$E/train_vitfp32cu" "${dp[@]}" -b 4 -z 1 -pf "$work/id_f" -o "$work/vit_flip" > "$work/vit_flip.log" 2>&1 ||
    bad "train_vitfp32cu 2 ranks -z 1 with flips: $(tail -1 "$work/vit_flip.log")"
seed_dir "$work/vit_flip" "$work/vit_flip_resume" 2
if EMU_RANKS=2 "$E/train_vitfp32cu" "${dp[@]}" -b 4 -z 1 -pf "$work/id_fr" -o "$work/vit_flip_resume" -y 1 > "$work/vit_flip_resume.log" 2>&1 &&
   cmp -s "$work/vit_flip/model_00000004.bin" "$work/vit_flip_resume/model_00000004.bin" && same_log "$work/vit_flip" "$work/vit_flip_resume"; then
    ok "train_vitfp32cu 2 ranks -z 1 with flips, -y 1 from step 2: the same losses and final model, byte for byte"
else
    bad "2 ranks -z 1 resume with flips"; paste <(grep trl "$work/vit_flip/main.log") <(grep trl "$work/vit_flip_resume/main.log") | sed 's/^/     /'
fi
# Swin: 16 images, -b 4 per rank, 2 steps, cbwc with the centring ops (padded device layout)
sw=(-i "$fmnist" -e swin -E 16 -P 2 -W 7 -b 4 -x 2 -nt 16 -ne 8 -pe 1 -u 2 -n 1 -N cbwc -K 1 -ema 0.9 -sd $((s + 7)))
for z in 0 1; do
    r=0; [ $z = 1 ] && r=1
    EMU_RACECHECK=$r EMU_RANKS=2 "$E/train_vitfp32cu" "${sw[@]}" -z $z -pf "$work/id_sz$z" -o "$work/swin_z$z" > "$work/swin_z$z.log" 2>&1 ||
        bad "train_vitfp32cu -e swin 2 ranks -z $z: $(tail -1 "$work/swin_z$z.log")"
done
if grep -q "(ZeRO-1)" "$work/swin_z1.log" && same_curve "$work/swin_z0" "$work/swin_z1" &&
   cmp -s "$work/swin_z0/state_00000001.bin" "$work/swin_z1/state_00000001.bin" &&
   cmp -s "$work/swin_z0/model_00000002.bin" "$work/swin_z1/model_00000002.bin"; then
    ok "train_vitfp32cu Swin cbwc -K 1, 2 ranks: -z 1 == -z 0 (losses 1e-5, checkpoints byte-identical)"
else
    bad "train_vitfp32cu Swin -z 1 vs -z 0"; paste <(grep trl "$work/swin_z0/main.log") <(grep trl "$work/swin_z1/main.log") | sed 's/^/     /'
fi

# bad flags: a clear error and exit 1, nothing run
if "$E/train_vitfp32cu" -y 1 > "$work/bad_y.log" 2>&1; then bad "-y 1 without -o accepted"
elif grep -q -- "-y 1 needs -o" "$work/bad_y.log"; then ok "-y 1 without -o refused"
else bad "-y 1 without -o: $(head -2 "$work/bad_y.log")"; fi
mkdir -p "$work/empty"
if "$E/train_vitfp32cu" -i "$fmnist" -o "$work/empty" -y 1 > "$work/bad_empty.log" 2>&1; then bad "-y 1 on a folder without a checkpoint accepted"
elif grep -q "$work/empty" "$work/bad_empty.log"; then ok "-y 1 on a folder without a checkpoint refused, naming it"
else bad "-y 1 on an empty folder: $(head -2 "$work/bad_empty.log")"; fi
if "$E/train_vitfp32cu" -z 2 > "$work/bad_z.log" 2>&1; then bad "-z 2 accepted"
elif grep -q -- "-z: expected 0 or 1" "$work/bad_z.log"; then ok "-z 2 refused"
else bad "-z 2: $(head -2 "$work/bad_z.log")"; fi

# 7. the EMA of the weights against numpy's, and its resume
bin/train_vit "${vit[@]}" -N cbwc -x 1 -o "$work/ema_init" > "$work/ema_init.log" 2>&1 || bad "train_vit, 1 step: $(tail -1 "$work/ema_init.log")"
ema=(-i "$fmnist" -e "$work/ema_init/model_00000001.bin" -b 8 -x 6 -nt 32 -ne 16 -pe 1 -u 2 -n 1 -ema 0.9 -sd $((s + 17)))
if "$E/train_vitfp32cu" "${ema[@]}" -o "$work/ema" > "$work/ema.log" 2>&1 && grep -q "ema accuracy" "$work/ema.log"; then
    "${PYTHON:-/usr/bin/python3}" test/ema_reference.py 0.9 "$work/ema_init/model_00000001.bin" "$work/ema" 6 || bad "train_vitfp32cu -ema: the stored EMA"
else
    bad "train_vitfp32cu -ema 0.9: $(tail -1 "$work/ema.log")"
fi
seed_dir "$work/ema" "$work/ema_resume" 4
if "$E/train_vitfp32cu" "${ema[@]}" -o "$work/ema_resume" -y 1 > "$work/ema_resume.log" 2>&1 &&
   cmp -s "$work/ema/model_00000006.bin" "$work/ema_resume/model_00000006.bin" &&
   cmp -s "$work/ema/state_00000006.bin" "$work/ema_resume/state_00000006.bin" && same_log "$work/ema" "$work/ema_resume"; then
    ok "train_vitfp32cu -ema -y 1 from step 4 (after the EMA's test): the same losses, final model and state (the EMA), byte for byte"
else
    bad "train_vitfp32cu -ema resume: $(tail -1 "$work/ema_resume.log")"
fi

echo "cuda_vit_resume_emu: $fails failure(s) (emulated: a logic check, not a device run)"
[ $fails -eq 0 ]
