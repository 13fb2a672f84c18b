#!/usr/bin/env bash
# scripts/plot_runs.py: curves of real main.log files (a tiny train_gpt2 run
# per mode, one resumed so steps repeat) and of seed groups render to a valid
# PNG of the expected size with drawn content; bad logs give a clear error
# naming the file and exit 1; the legend names each run's mode and seed from
# its run record (a resumed log keeps its first record).
# sanitized: skip Python plotting of main.log files; its one C step (a tiny train_gpt2 run) runs under the sanitizers elsewhere
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/plot_runs
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# real logs: 6 steps of a tiny model on this repository's sources, per mode and 2 seeds
cat llmc/*/*.c > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
mkdir -p "$work/runs"
for mode in ln cbwc; do
    for seed in 1 2; do
        bin/train_gpt2 -N $mode -e d1c32h2v256t32 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" \
            -b 2 -t 16 -x 6 -v 2 -m 1 -sd $seed -o "$work/runs/${mode}_seed$seed" > /dev/null 2>&1 ||
            bad "train_gpt2 $mode seed $seed"
    done
done
# a resumed run appends steps already logged: the last value must win, not a zigzag
cp "$work/runs/ln_seed1/main.log" "$work/resumed.log"; echo "s:4 trl:1.0" >> "$work/resumed.log"

# check_png FILE: PNG magic, 1100x420 (11x4.2 in at 100 dpi), < 200 kB, > 1% drawn pixels
check_png() {
    $PY - "$1" <<'PYEOF'
import sys
from PIL import Image
path = sys.argv[1]
with open(path, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"
import os
size = os.path.getsize(path)
assert size < 200_000, f"{size} bytes"
img = Image.open(path).convert("L")
assert img.size == (1100, 420), img.size
px = img.getdata()
drawn = sum(1 for p in px if p < 200) / len(px)
assert drawn > 0.01, f"only {drawn:.3%} drawn"
print(f"{path}: {img.size[0]}x{img.size[1]}, {size} bytes, {drawn:.1%} drawn")
PYEOF
}
if $PY scripts/plot_runs.py "$work"/runs/* -o "$work/all.png" > "$work/all.out" 2>&1 &&
   check_png "$work/all.png"; then ok "four runs"; else bad "four runs: $(cat "$work/all.out")"; fi
if $PY scripts/plot_runs.py "$work"/runs/* --group --smooth 0.5 --logy --title t -o "$work/sub/grouped.png" \
       > "$work/grouped.out" 2>&1 && grep -q "4 runs" "$work/grouped.out" && check_png "$work/sub/grouped.png"
then ok "grouped by mode, smoothed, log axis, folder created"; else bad "grouped: $(cat "$work/grouped.out")"; fi
grep -q "cbwc_seed2 (mode cbwc, seed 2)" "$work/all.out" && grep -q "ln (mode ln, seeds 1,2, n=2)" "$work/grouped.out" &&
    ok "legend from the run records: $(sed 's/.*runs): //' "$work/grouped.out")" ||
    bad "legend lacks mode/seed: $(cat "$work/all.out" "$work/grouped.out")"
if $PY scripts/plot_runs.py "$work/resumed.log" -o "$work/resumed.png" > /dev/null 2>&1 &&
   check_png "$work/resumed.png"; then ok "resumed log"; else bad "resumed log"; fi

# bad input: exit 1, the file named
expect_error() { # NAME PATTERN ARGS...
    local name=$1 pattern=$2; shift 2
    local out rc
    out=$($PY scripts/plot_runs.py "$@" -o "$work/bad.png" 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$pattern" <<< "$out" && [ ! -e "$work/bad.png" ]; then ok "$name"
    else bad "$name (exit $rc): $out"; fi
}
printf 's:1 trl:2.5\ns:2 trl:oops\n' > "$work/nan.log"
printf 's:1 trl:2.5\ns:2trl\n' > "$work/malformed.log"
printf 'hello\n' > "$work/empty.log"
mkdir -p "$work/nolog"
expect_error "missing run" "missing_dir" "$work/missing_dir"
expect_error "folder without main.log" "nolog" "$work/nolog"
expect_error "value not a number" "nan.log:2" "$work/nan.log"
expect_error "malformed line" "malformed.log:2" "$work/malformed.log"
expect_error "no curve lines" "empty.log" "$work/empty.log"
[ $fails -eq 0 ]
