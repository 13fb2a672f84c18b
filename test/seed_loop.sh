#!/usr/bin/env bash
# Runs the randomised suites (those that read FOLDNORM_TEST_SEED) over many
# seeds, to find any threshold that some seed misses: a test that fails at
# random. Fast-tier suites get -n seeds, the others -N. Every suite log is
# kept, and each threshold's worst use over the seeds (test/seed_margins.py:
# measured / allowed for an upper bound, required / measured for a lower one;
# a pass is <= 1) goes into a summary table, the form docs/reliability.md
# records. Meant to run in the background, niced, for an hour or more:
#
#   nice test/seed_loop.sh -o out/seeds &          50 fast, 10 slow seeds each
#   test/seed_loop.sh -n 5 -N 0 resid_dropout      some suites, fewer seeds
#
# Flags: -n FAST (50), -N SLOW (10), -s FIRST (the first seed; random by
# default), -o DIR (out/seed_loop). The seeds are FIRST + k * 7919 (k = 0,
# 1, ...), so a run can be replayed; a failing seed replays alone with
# FOLDNORM_TEST_SEED=SEED test/run_tests.sh SUITE. Builds nothing: run
# make cpu emu first. Exit 1 when any suite failed at any seed.
set -uo pipefail
cd "$(dirname "$0")/.."
fast=50 slow=10 first=$(( (RANDOM << 15 | RANDOM) % 1000000000 )) out=out/seed_loop
while getopts "n:N:s:o:h" opt; do
    case $opt in
    n) fast=$OPTARG ;; N) slow=$OPTARG ;; s) first=$OPTARG ;; o) out=$OPTARG ;;
    h) sed -n 2,18p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
randomised=$(test/run_tests.sh --randomised) || exit 2
fast_suites=$(test/run_tests.sh --list | awk '/\(check\)/ { print $1 }')
if [ $# -gt 0 ]; then
    for want in "$@"; do
        grep -qx "$want" <<< "$randomised" ||
            { echo "error: '$want' is not a randomised suite (test/run_tests.sh --randomised)" >&2; exit 2; }
    done
    randomised=$(printf '%s\n' "$@")
fi
fast_list=() slow_list=()
for name in $randomised; do
    if grep -qx "$name" <<< "$fast_suites"; then fast_list+=("$name"); else slow_list+=("$name"); fi
done
mkdir -p "$out/logs"
echo "seed_loop: first seed $first, $fast seeds for ${#fast_list[@]} fast suites, $slow for" \
    "${#slow_list[@]} slow ones, logs in $out/logs; $(bin/cpu_info 2>/dev/null | head -1)"
t0=$SECONDS
# run_seeds COUNT SUITE...: one run_tests.sh per seed over the suites
run_seeds() {
    local count=$1 k seed; shift
    [ "$count" -gt 0 ] && [ $# -gt 0 ] || return 0
    for ((k = 0; k < count; k++)); do
        seed=$(( (first + k * 7919) % 1000000000 ))
        FOLDNORM_TEST_SEED=$seed test/run_tests.sh --logs "$out/logs/$seed" "$@" > "$out/logs/run_$seed.txt" 2>&1
        echo "seed $seed: $(tail -1 "$out/logs/run_$seed.txt") ($((SECONDS - t0)) s so far)"
    done
}
run_seeds "$fast" "${fast_list[@]}"
run_seeds "$slow" "${slow_list[@]}"

# the table: per suite, seeds run, seeds failed, the worst threshold use and its line
summary=$out/summary.md
{
    echo "| suite | seeds | failed | checks per run | worst use (<= 1 passes) | at seed | the check |"
    echo "|---|---:|---:|---:|---:|---:|---|"
    for name in "${fast_list[@]}" "${slow_list[@]}"; do
        logs=$(ls "$out"/logs/*/"$name.log" 2>/dev/null)
        [ -n "$logs" ] || continue
        runs=$(wc -l <<< "$logs")
        failed_seeds=$(grep -l "^FAIL $name " "$out"/logs/run_*.txt 2>/dev/null | sed 's/.*run_\([0-9]*\).txt/\1/' | tr '\n' ' ')
        # shellcheck disable=SC2086
        test/seed_margins.py $logs | sort -t$'\t' -k3,3 -g | tail -1 |
            awk -F'\t' -v n="$name" -v r="$runs" -v f="${failed_seeds:- }" '{
                split($1, p, "/"); seed = p[length(p) - 1]; nf = split(f, fs, " ")
                printf "| %s | %d | %s | %s | %s | %s | `%s` |\n", n, r, nf ? nf " (" f ")" : "0", $2, $3, seed, $4 }'
    done
} > "$summary"
cat "$summary"
echo "seed_loop: $((SECONDS - t0)) s; table in $summary"
! grep -q '^FAIL' "$out"/logs/run_*.txt
