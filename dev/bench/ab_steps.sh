#!/usr/bin/env bash
# Before/after of the training steps of two builds (e.g. a checkout of an
# older commit, built with `make bench_gpt2 bench_vision`), side by side:
# bench_gpt2 (d12, B=4, T=64, ln and cbwc, fp32 and bf16) and bench_vision
# (ViT and Swin, ln and cbwc, B=64) of each build alternate, ROUNDS rounds
# (VISION_ROUNDS for bench_vision); prints each case's after / before ratio
# per round and their median.
#   dev/bench/ab_steps.sh /tmp/old-checkout .
#   (env: THREADS=2 ROUNDS=3 VISION_ROUNDS=8 OUT=out/ab_steps GPT2_MODEL=d12 VISION_B=64)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BEFORE_TREE AFTER_TREE (each with bin/bench_gpt2, bin/bench_vision)" >&2; exit 2; }
for tree in "$1" "$2"; do
    for b in bench_gpt2 bench_vision; do
        [ -x "$tree/bin/$b" ] || { echo "error: $tree/bin/$b: not an executable (make $b there)" >&2; exit 2; }
    done
done
before=$(realpath "$1") after=$(realpath "$2")
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=${THREADS:-2} OMP_WAIT_POLICY=passive
rounds=${ROUNDS:-3} vision_rounds=${VISION_ROUNDS:-8} out=${OUT:-out/ab_steps}
model=${GPT2_MODEL:-d12} vision_b=${VISION_B:-64}
rm -rf "$out"; mkdir -p "$out"
echo "ab_steps: $OMP_NUM_THREADS threads, load average $(cut -d' ' -f1-3 /proc/loadavg)"
bin/cpu_info 2>/dev/null | head -3 || true
# the step ms of each case, one "case round ms" line a run
for r in $(seq 1 "$rounds"); do
    for which in before after; do
        tree=$before; [ $which = after ] && tree=$after
        "$tree/bin/bench_gpt2" -e $model -b 4 -t 64 -r 4 -w 1 -N ln,cbwc -mp fp32,bf16 |
            awk -v r=$r -v m_=$model -F'|' 'NF > 7 && $6 ~ /[0-9]/ { gsub(/ /, "", $2); gsub(/ /, "", $6);
                split($8, m, " "); print m_ "-" $2 "-" m[1], r, $6 }' >> "$out/$which.txt"
    done
done
for r in $(seq 1 "$vision_rounds"); do
    for which in before after; do
        tree=$before; [ $which = after ] && tree=$after
        for family in vit swin; do
            for mode in ln cbwc; do
                "$tree/bin/bench_vision" -e $family -N $mode -b $vision_b -r 20 -w 3 |
                    sed -n "s/.*wall \([0-9.]*\) ms.*/$family-$mode $r \1/p" >> "$out/$which.txt"
            done
        done
    done
done
echo "| case | after / before, one a round (sorted) | median |"
echo "|---|---|---:|"
awk 'FNR == NR { b[$1 " " $2] = $3; next } { k = $1 " " $2; if (k in b) print $1, $3 / b[k] }' \
    "$out/before.txt" "$out/after.txt" | sort -s -k1,1 |
    awk '{ if ($1 != c && c != "") flush(); c = $1; v[++n] = $2 }
         function flush(  i, j, t, s) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
             if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
             s = ""; for (i = 1; i <= n; i++) s = s sprintf("%.3f ", v[i])
             printf "| %s | %s| %.3f |\n", c, s, n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; n = 0 }
         END { if (c != "") flush() }'
