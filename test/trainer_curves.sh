# Sourced by the suites that compare two trainer runs (drop_path, randaugment,
# mixup_erasing, recipe_equivalence): their curves, and a resume against the
# uninterrupted run.
#
# curve_diff DIR_A DIR_B: the largest |a - b| / max(1, |b|) over the "trl"
# (train loss) lines of the two runs' main.log, matched by step; nan when
# either has none or their step counts differ.
curve_diff() {
    awk -F'[: ]' '/^s:[0-9]+ trl:/ { v = $4 + 0; if (FNR == NR) { a[$2] = v; n++ } else { m++
                   d = a[$2] - v; if (d < 0) d = -d; r = d / (v > 1 ? v : 1); if (r > w) w = r } }
                   END { if (n == 0 || n != m) print "nan"; else printf "%.3e\n", w }' "$1/main.log" "$2/main.log"
}

# same_step_files FULL RESUMED STEP: STEP's model and state files are the same
# bytes in both run folders (a resume reproduces the uninterrupted run); a
# FAIL line names each that differs, and the status is 1
same_step_files() {
    local f step rc=0
    step=$(printf %08d "$3")
    for f in "model_$step.bin" "state_$step.bin"; do
        cmp -s "$1/$f" "$2/$f" || { echo "FAIL: $f differs after the resume ($2 against $1)"; rc=1; }
    done
    return $rc
}
