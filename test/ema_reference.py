#!/usr/bin/env python3
"""The EMA of the weights a vision run stored, against numpy's (-ema DECAY).

    test/ema_reference.py DECAY INIT_MODEL RUN_DIR STEPS
    test/ema_reference.py --ema-model STATE MODEL OUT

RUN_DIR holds model_STEP.bin and state_STEP.bin for every step 1..STEPS
(train_vit* -e INIT_MODEL -ema DECAY -n 1): the live weights w_t of each
step's model file, the EMA of each state file (docs/formats.md). numpy
computes timm's ModelEmaV2 rule in fp32 from them, e_0 = w_0 (INIT_MODEL),
e_t = decay * e_{t-1} + (1 - decay) * w_t, and every stored EMA must be within
TOL of it, relative to the largest |e_t|: the recursion's rounding is ~1 ulp
(6e-8) a step, the GPU's fused multiply-add another; TOL = 1e-6 covers
STEPS <= 8 with room. Negative controls at the last step, each of which must
miss by more than 100 x TOL: the live weights themselves, the EMA started a
step late (from w_1) and the EMA of another decay (decay - 0.01).
--ema-model writes OUT, the model file MODEL with the EMA of the state file
STATE as its weights (for train_vit -ev 1).
"""
import sys

import numpy as np

TOL = 1e-6
CONTROL_MARGIN = 100


def model_params(path):
    data = open(path, "rb").read()
    header = np.frombuffer(data[:1024], dtype="<i4")
    if header[0] != 20261129:
        sys.exit(f"FAIL {path}: not a vision model file (magic {header[0]})")
    return np.frombuffer(data[1024:], dtype="<f4")


def state_ema(path, n):
    data = open(path, "rb").read()
    h = np.frombuffer(data[:1024], dtype="<i4")
    if h[0] != 20261202 or h[1] != 2:
        sys.exit(f"FAIL {path}: not a version-2 vision train state (magic {h[0]} version {h[1]})")
    params = int(np.frombuffer(data[32:40], dtype="<u8")[0])
    if params != n or h[12] != 1:
        sys.exit(f"FAIL {path}: {params} parameters (the model has {n}), EMA flag {h[12]}")
    decay = float(np.frombuffer(data[52:56], dtype="<f4")[0])
    at = 1024 + (8 * n if h[10] else 0) + 4 * int(h[11])
    if len(data) != at + 4 * n:
        sys.exit(f"FAIL {path}: {len(data)} bytes, expected {at + 4 * n}")
    return decay, np.frombuffer(data[at:], dtype="<f4")


def ema_steps(weights, decay, start=0):
    keep, take = np.float32(decay), np.float32(1) - np.float32(decay)
    e = weights[start].copy()
    for w in weights[start + 1:]:
        e = keep * e + take * w
    return e


def write_ema_model(state, model, out):
    header = np.frombuffer(open(model, "rb").read(1024), dtype="<i4").copy()
    header[254:256] = 0  # checksum kind 0: none (the weights are not the ones it covered)
    _, ema = state_ema(state, len(model_params(model)))
    open(out, "wb").write(header.tobytes() + ema.tobytes())


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--ema-model":
        write_ema_model(*sys.argv[2:])
        return
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    decay, init, run, steps = float(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    weights = [model_params(init)]
    worst = 0.0
    for t in range(1, steps + 1):
        weights.append(model_params(f"{run}/model_{t:08d}.bin"))
        stored_decay, stored = state_ema(f"{run}/state_{t:08d}.bin", len(weights[0]))
        if stored_decay != np.float32(decay):
            sys.exit(f"FAIL step {t}: the state's decay is {stored_decay}, expected {decay}")
        ref = ema_steps(weights, decay)
        err = float(np.max(np.abs(stored.astype(np.float64) - ref)) / np.max(np.abs(ref)))
        if not err <= TOL:
            sys.exit(f"FAIL step {t}: the stored EMA is {err:.3g} from numpy's (tol {TOL})")
        worst = max(worst, err)
    scale = float(np.max(np.abs(ref)))
    controls = {"the live weights": weights[-1], "started a step late": ema_steps(weights, decay, 1),
                f"decay {decay - 0.01:g}": ema_steps(weights, decay - 0.01)}
    misses = []
    for name, wrong in controls.items():
        miss = float(np.max(np.abs(stored.astype(np.float64) - wrong)) / scale)
        if not miss > CONTROL_MARGIN * TOL:
            sys.exit(f"FAIL control ({name}) is only {miss:.3g} from the stored EMA: the check "
                     f"cannot tell it apart (needs > {CONTROL_MARGIN * TOL:g})")
        misses.append(f"{name} {miss:.2g}")
    print(f"  ok: {steps} steps of {run}: EMA within {worst:.2g} of numpy's (tol {TOL:g}); "
          f"controls miss by {', '.join(misses)}")


if __name__ == "__main__":
    main()
