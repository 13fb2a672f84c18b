# Sourced by the suites that compare two trainer runs' curves (drop_path,
# randaugment, mixup_erasing, recipe_equivalence).
#
# curve_diff DIR_A DIR_B: the largest |a - b| / max(1, |b|) over the "trl"
# (train loss) lines of the two runs' main.log, matched by step; nan when
# either has none or their step counts differ.
curve_diff() {
    awk -F'[: ]' '/^s:[0-9]+ trl:/ { v = $4 + 0; if (FNR == NR) { a[$2] = v; n++ } else { m++
                   d = a[$2] - v; if (d < 0) d = -d; r = d / (v > 1 ? v : 1); if (r > w) w = r } }
                   END { if (n == 0 || n != m) print "nan"; else printf "%.3e\n", w }' "$1/main.log" "$2/main.log"
}
