#!/usr/bin/env bash
# scripts/study.sh's quick presets (so the study runner cannot rot): every run
# of gpt-pretrain and vision completes, summary.csv has a row per run with
# numbers, the curves render, and where cbwc is the ln model (GPT-2; ViT; Swin,
# whose non-foldable LNs stay LN) its final losses equal ln's to fp32 chaos.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/study_quick
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
for study in gpt-pretrain vision; do
    if STUDY_OUT="$work/$study" scripts/study.sh $study quick > "$work/$study.log" 2>&1; then
        ok "$study quick: $(grep '^study ' "$work/$study.log")"
    else
        bad "$study quick:"; tail -10 "$work/$study.log"; continue
    fi
done
$PY - "$work" <<'PYEOF' && ok "summaries: rows, numbers, ln == cbwc where exact, PNGs" || bad "summaries"
import csv, glob, os, sys
w = sys.argv[1]
def rows(study):
    return list(csv.DictReader(open(os.path.join(w, study, "summary.csv"))))
gpt, vis = rows("gpt-pretrain"), rows("vision")
assert len(gpt) == 6 and len(vis) == 18, (len(gpt), len(vis))
for r in gpt + vis:
    for k, v in r.items():
        if k not in ("mode", "model"):
            float(v)  # every cell a number
def final(rs, key, **match):
    return {r["seed"]: float(r[key]) for r in rs if all(r[k] == v for k, v in match.items())}
for seed, v in final(gpt, "final_val_loss", mode="ln").items():
    c = final(gpt, "final_val_loss", mode="cbwc")[seed]
    assert abs(v - c) < 2e-3 * abs(v), f"gpt seed {seed}: ln {v} vs cbwc {c}"
for fam in ("vit", "swin", "swin_k1"):
    ln, cb = final(vis, "test_loss", model=fam, mode="ln"), final(vis, "test_loss", model=fam, mode="cbwc")
    for seed in ln:
        assert abs(ln[seed] - cb[seed]) < 2e-3 * abs(ln[seed]), f"{fam} seed {seed}: {ln[seed]} vs {cb[seed]}"
pngs = glob.glob(os.path.join(w, "*", "curves*.png"))
assert len(pngs) == 4, pngs
for p in pngs:
    assert open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n" and 10_000 < os.path.getsize(p) < 200_000, p
PYEOF
[ $fails -eq 0 ]
