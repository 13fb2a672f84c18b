#!/usr/bin/env bash
# Mixup / cutmix with mixed soft targets and random erasing (llmc/vision/
# mixup.c, random_erasing.c, batch_augment.c; train_vit -mixup -cutmix
# -reprob): each op equals dev/reference/mixup_erasing.py's PyTorch version of
# timm's (Mixup mode 'batch' with correct_lam, RandomErasing mode 'pixel')
# drawn from the same random numbers (the reference replays our Rng), pixels
# within 1e-6 (the fp32 products of mixup; erasing and cutmix copy values:
# exact), second labels exactly, lam within 1e-7 and the soft targets within
# 1e-6 of timm's mixup_target; negative control: the images against a
# reference that mixes with the next image instead of the mirror differ by
# > 1e-2. The Beta draws behind lam pass a two-sample Kolmogorov-Smirnov test
# against torch.distributions.Beta (alpha 0.8, 1.0, 2.5; 20000 each, at
# p = 1e-6); control: Beta(alpha) against Beta(2 alpha) fails it. The
# mixed-target loss and its gradient equal F.cross_entropy with the soft
# targets (1e-6 relative: ours is fp64 inside, rounded once); control: the
# unmixed loss differs. Bad -reprob / -mixup / -cutmix values are refused.
# Then (full tier) train_vit with all three on: a resume gives the
# uninterrupted run's model and state bit for bit, and without them the model
# differs; the emulated train_vitfp32cu (a logic check, not a device run)
# follows train_vit's curve within 1e-5 relative, and without the ops differs;
# ln == cbwc under the ops over 40 steps (the logged losses within 1e-5; the
# ops act on the pixels before the centred patch embedding and on the
# targets), rms differing by > 1e-4.
# The fast tier (FOLDNORM_TEST_TIER=check) and the sanitized build (SAN=1:
# test_mixup's C code, the loss included, under the sanitizers) stop before
# the trainers (the prefetcher's ops run sanitized in test_batch_prefetch;
# the models' mixed-target plumbing only in the plain run).
# tier: check
set -euo pipefail
quick=0; [ "${FOLDNORM_TEST_TIER:-full}" = check ] && quick=1
cd "$(dirname "$0")/../.."
. test/trainer_curves.sh # curve_diff, same_step_files
work=${1:-$(mktemp -d)}
PY=${PYTHON:-/usr/bin/python3}
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "mixup_erasing: seed $seed"
[ -x bin/test_mixup ] || make -s test_mixup
$PY - bin/test_mixup "$work" "$seed" <<'PYEOF'
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, "dev/reference")
import mixup_erasing as ref

exe, work, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
failed = []


def check(ok, what):
    print(("  ok   " if ok else "  FAIL ") + what)
    if not ok:
        failed.append(what)


def run(*args):
    subprocess.run([exe, *map(str, args)], check=True, stdout=subprocess.DEVNULL)


def read_ops(path):
    raw = open(path, "rb").read()
    B, C, S, mixed, cutmix = np.frombuffer(raw, "<i4", 5)
    B, C, S = int(B), int(C), int(S)
    o = 20
    beta = np.frombuffer(raw, "<f8", 1, o)[0]; o += 8
    labels = np.frombuffer(raw, "<i4", B, o).astype(np.int64); o += 4 * B
    n = B * C * S * S
    before = np.frombuffer(raw, "<f4", n, o).reshape(B, C, S, S).copy(); o += 4 * n
    after = np.frombuffer(raw, "<f4", n, o).reshape(B, C, S, S).copy(); o += 4 * n
    labels2 = lam = None
    if mixed:
        labels2 = np.frombuffer(raw, "<i4", B, o).astype(np.int64); o += 4 * B
        lam = np.frombuffer(raw, "<f4", B, o).copy(); o += 4 * B
    assert o == len(raw), f"{path}: {len(raw) - o} bytes left over"
    return int(C), int(S), bool(cutmix), float(beta), labels, before, after, labels2, lam


print("== each op against the timm-semantics reference on the same draws")
K, smoothing = 10, 0.1
# (B, C, S, mixup, cutmix, reprob): mixup only, cutmix only (odd B), erasing
# only, then both on, batch after batch until each kind and its control
# (on a batch with lam in [0.1, 0.9], where a wrong partner shows) was seen
fixed = [(8, 3, 16, 0.8, 0, 0.5), (7, 1, 28, 0, 1.0, 1.0), (6, 3, 12, 0, 0, 1.0)]
both = (8, 3, 16, 0.8, 1.0, 0.25)
wanted = {"mixup", "cutmix", "control mixup", "control cutmix"}
seen = set()
for i in range(64):
    if i >= len(fixed) + 4 and wanted <= seen:
        break
    B, C, S, mixup, cutmix, reprob = fixed[i] if i < len(fixed) else both
    s = seed * 31 + i
    path = f"{work}/ops{i}.bin"
    run("ops", path, s, B, C, S, mixup, cutmix, reprob)
    C, S, used_cutmix, beta, labels, before, after, labels2, lam = read_ops(path)
    rng = ref.OurRng(s)
    x = torch.from_numpy(before.copy())
    erased = sum(ref.random_erasing(x[b], reprob, rng) for b in range(B))
    name = f"B {B} C {C} S {S} mixup {mixup} cutmix {cutmix} reprob {reprob} (seed {s})"
    if mixup == 0 and cutmix == 0:
        d = float((x - torch.from_numpy(after)).abs().max())
        check(d <= 1e-6 and labels2 is None, f"{name}: erasing only ({erased} erased), max |d| {d:.1e}")
        y = torch.from_numpy(before.copy())
        other = ref.OurRng(s + 1)
        for b in range(B):
            ref.random_erasing(y[b], reprob, other)
        dc = float((y - torch.from_numpy(after)).abs().max())
        check(dc > 1e-2, f"control: erasing drawn from another seed, max |d| {dc:.2f} > 1e-2")
        continue
    control = x.clone()
    lam_ref, use_cutmix, flip = ref.mix_batch(x, torch.from_numpy(labels), mixup, cutmix, beta, rng)
    seen.add("cutmix" if use_cutmix else "mixup")
    d = float((x - torch.from_numpy(after)).abs().max())
    kind = "cutmix" if use_cutmix else "mixup"
    check(d <= 1e-6 and use_cutmix == used_cutmix,
          f"{name}: {erased} erased, {kind} lam {lam_ref:.4f}: max |d| {d:.1e} (1e-6)")
    check(labels2 is not None and (labels2 == labels[flip.numpy()]).all() and
          np.abs(lam - lam_ref).max() <= 1e-7, f"{name}: second labels exact, lam within 1e-7")
    ours = ref.soft_targets(torch.from_numpy(labels), torch.from_numpy(labels2),
                            torch.from_numpy(lam.copy()), K, smoothing)
    theirs = ref.mixup_target(torch.from_numpy(labels), K, lam_ref, smoothing, flip)
    dt = float((ours - theirs).abs().max())
    check(dt <= 1e-6, f"{name}: soft targets vs timm's mixup_target, max |d| {dt:.1e}")
    if "control " + kind not in seen and 0.1 <= lam_ref <= 0.9:
        seen.add("control " + kind)
        rng_c = ref.OurRng(s)
        y = torch.from_numpy(before.copy())
        for b in range(B):
            ref.random_erasing(y[b], reprob, rng_c)
        nxt = torch.tensor([(b + 1) % B for b in range(B)])
        ref.mix_batch(y, torch.from_numpy(labels), mixup, cutmix, beta, rng_c, partner=nxt)
        dc = float((y - torch.from_numpy(after)).abs().max())
        check(dc > 1e-2, f"control: mixed with the next image instead of the mirror, max |d| {dc:.2f} > 1e-2")
check(wanted <= seen,
      f"both kinds and their controls seen ({sorted(seen)})")

print("== Beta(alpha, alpha) draws vs torch.distributions.Beta (two-sample KS, p = 1e-6)")
n = 20000
crit = np.sqrt(-np.log(1e-6 / 2) / 2) * np.sqrt(2.0 / n)


def ks(a, b):
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    return np.abs(np.searchsorted(a, grid, "right") / len(a) - np.searchsorted(b, grid, "right") / len(b)).max()


g = torch.Generator().manual_seed(seed)
for alpha in (0.8, 1.0, 2.5):
    run("beta", f"{work}/beta.bin", seed + int(alpha * 10), alpha, n)
    ours = np.fromfile(f"{work}/beta.bin", "<f8")
    torch.manual_seed(seed + int(alpha * 100))
    theirs = torch.distributions.Beta(alpha, alpha).sample((n,)).double().numpy()
    D = ks(ours, theirs)
    check(D <= crit, f"alpha {alpha}: D {D:.4f} <= {crit:.4f}")
    twice = torch.distributions.Beta(2 * alpha, 2 * alpha).sample((n,)).double().numpy()
    Dc = ks(ours, twice)
    check(Dc > crit, f"control: against Beta({2 * alpha}, {2 * alpha}) D {Dc:.4f} > {crit:.4f}")

print("== the mixed-target loss and its gradient vs F.cross_entropy with soft targets")
for i, (N, K, s) in enumerate(((37, 10, 0.1), (16, 100, 0.0), (9, 3, 0.3))):
    path = f"{work}/loss{i}.bin"
    run("loss", path, seed + i, N, K, s)
    raw = open(path, "rb").read()
    o = 8
    sm = np.frombuffer(raw, "<f4", 1, o)[0]; o += 4
    labels = torch.from_numpy(np.frombuffer(raw, "<i4", N, o).astype(np.int64)); o += 4 * N
    labels2 = torch.from_numpy(np.frombuffer(raw, "<i4", N, o).astype(np.int64)); o += 4 * N
    lam = torch.from_numpy(np.frombuffer(raw, "<f4", N, o).copy()); o += 4 * N
    logits = np.frombuffer(raw, "<f4", N * K, o).reshape(N, K); o += 4 * N * K
    losses = np.frombuffer(raw, "<f4", N, o); o += 4 * N
    dlogits = np.frombuffer(raw, "<f4", N * K, o).reshape(N, K); o += 4 * N * K
    assert o == len(raw)
    z = torch.from_numpy(logits.astype(np.float64)).requires_grad_()
    target = ref.soft_targets(labels, labels2, lam, K, float(sm))
    per_row = F.cross_entropy(z, target, reduction="none")
    per_row.mean().backward()
    dl = float(np.abs(losses - per_row.detach().numpy()).max() / max(1.0, per_row.abs().max().item()))
    dg = float(np.abs(dlogits - z.grad.numpy()).max() / z.grad.abs().max().item())
    check(dl <= 1e-6 and dg <= 1e-6, f"N {N} K {K} s {sm:.1f}: losses {dl:.1e}, gradient {dg:.1e} (1e-6 relative)")
    plain = F.cross_entropy(z.detach(), labels, label_smoothing=float(sm), reduction="none")
    dp = float(np.abs(losses - plain.numpy()).max())
    check(dp > 1e-2, f"control: the unmixed loss differs by {dp:.2f}")
sys.exit(1 if failed else 0)
PYEOF
echo "== bad values refused"
[ -x bin/train_vit ] || make -s train_vit
for bad in "-reprob -0.1" "-reprob 1.5" "-mixup nan" "-mixup -1" "-cutmix 101" "-cutmix x" "-mixup 0.8 -f 0"; do
    # shellcheck disable=SC2086
    if bin/train_vit $bad -x 1 > "$work/bad.out" 2>&1; then echo "FAIL: train_vit $bad ran"; exit 1; fi
    grep -q "^error: train_vit: -" "$work/bad.out" || { echo "FAIL: train_vit $bad: no error naming the flag"; cat "$work/bad.out"; exit 1; }
    echo "  ok: $bad: $(head -1 "$work/bad.out")"
done
if [ $quick = 1 ] || [ "${FOLDNORM_SANITIZED:-0}" = 1 ]; then
    echo "mixup_erasing: all checks of the fast tier passed"; exit 0
fi
fmnist=/usr/share/datasets/fashion-mnist
if [ ! -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: train_vit -mixup -cutmix -reprob: no Fashion-MNIST in $fmnist (Debian's fashion-mnist)"
    exit 77
fi
ops=(-mixup 0.8 -cutmix 1.0 -reprob 0.25)
echo "== train_vit ${ops[*]} (ViT, cbwc): a resume from step 4 gives step 8's model and state bit for bit"
run=(bin/train_vit -e vit -C 16 -L 2 -H 2 -N cbwc -b 16 -x 8 -nt 96 -ne 32 -u 2 -pe 4 -n 4 -sd $((seed % 1000 + 1)))
rm -rf "$work/full" "$work/resumed" "$work/plain"
"${run[@]}" "${ops[@]}" -o "$work/full" > "$work/full.out"
cp -r "$work/full" "$work/resumed"
rm "$work/resumed/model_00000008.bin" "$work/resumed/state_00000008.bin"
"${run[@]}" "${ops[@]}" -o "$work/resumed" -y 1 > "$work/resumed.out"
same_step_files "$work/full" "$work/resumed" 8 || exit 1
echo "  ok: the same model and state (augment RNG, moments) at step 8 (6 batches of 16 an epoch: the resume crosses an epoch)"
"${run[@]}" -o "$work/plain" > "$work/plain.out"
if cmp -s "$work/full/model_00000008.bin" "$work/plain/model_00000008.bin"; then
    echo "FAIL: the ops trained the model that training without them trains"; exit 1
fi
echo "  control: without the ops, another model"
echo "== train_vit ${ops[*]}: ln == cbwc over 40 steps (the logged losses, 6 decimals: within 1e-5); rms differs"
eq=(bin/train_vit -e vit -C 16 -L 2 -H 2 -b 16 -x 40 -nt 320 -ne 32 -u 2 -pe 1 -sd $((seed % 1000 + 2)))
for m in ln cbwc rms; do rm -rf "$work/eq_$m"; "${eq[@]}" "${ops[@]}" -N $m -o "$work/eq_$m" > /dev/null; done
same=$(curve_diff "$work/eq_ln" "$work/eq_cbwc"); other=$(curve_diff "$work/eq_ln" "$work/eq_rms")
echo "  ln vs cbwc: $same; ln vs rms: $other"
$PY -c "import sys; s, o = map(float, sys.argv[1:]); sys.exit(not (s <= 1e-5 and o > 1e-4))" "$same" "$other" ||
    { echo "FAIL: ln == cbwc under mixup, cutmix and erasing"; exit 1; }
# the GPU loss with mixed targets and the prefetcher's ops, emulated: a logic check, not a device run
emu=build/emu/train_vitfp32cu
if [ ! -x $emu ]; then
    echo "SKIP: train_vitfp32cu ${ops[*]}: $emu not built (make emu)"
    exit 77
fi
echo "== $emu ${ops[*]} (emulated, ViT cbwc, 4 workers): train_vit's curve (1e-5 relative, as cuda_vit_emu); without the ops differs"
gpu=(-e vit -C 16 -L 2 -H 2 -b 16 -x 5 -nt 96 -ne 32 -u 1 -pe 1 -N cbwc -sd $((seed % 1000 + 1)))
rm -rf "$work/g_cpu" "$work/g_gpu" "$work/g_cpu0"
bin/train_vit "${gpu[@]}" "${ops[@]}" -o "$work/g_cpu" > /dev/null
bin/train_vit "${gpu[@]}" -o "$work/g_cpu0" > /dev/null
$emu "${gpu[@]}" "${ops[@]}" -dw 4 -o "$work/g_gpu" > "$work/g_gpu.out" 2>&1 || { tail "$work/g_gpu.out"; exit 1; }
same=$(curve_diff "$work/g_cpu" "$work/g_gpu"); other=$(curve_diff "$work/g_cpu0" "$work/g_gpu")
echo "  CPU vs emulated GPU with the ops: $same; CPU without them vs emulated GPU with them: $other"
$PY -c "import sys; s, o = map(float, sys.argv[1:]); sys.exit(not (s <= 1e-5 and o > 1e-4))" "$same" "$other" ||
    { echo "FAIL: the GPU trainer's mixed targets"; exit 1; }
echo "mixup_erasing: all checks passed"
