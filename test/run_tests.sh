#!/usr/bin/env bash
# foldnorm's test runner. Every suite is a script test/suites/NAME.sh, run as
#   test/suites/NAME.sh WORK_DIR [VARIANT]      exit 0 = pass
# and picked up here by its file name. Lines near a suite's top declare:
#   # tier: check         part of the fast tier (make check); the runner exports
#                         FOLDNORM_TEST_TIER=check there, so a suite may run a
#                         shorter form of itself (make test exports full)
#   # variants: a b c     the suite runs once per variant, named NAME_a, NAME_b, ...
#
#   test/run_tests.sh                 every suite (make test; what CI runs)
#   test/run_tests.sh --tier check    the fast tier (make check)
#   test/run_tests.sh NAME...         these suites (a file's name runs all its variants)
#   test/run_tests.sh --list          the suite names, with the fast tier marked
# Fresh random seeds every run; FOLDNORM_TEST_SEED=N replays one. Ends with
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# threads sleep at a barrier instead of spinning: the same results, and on a
# shared, loaded machine 10-20x less time (a spinning thread holds the core
# its partner needs); on a quiet one the tests' small steps hardly notice
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

usage() {
    sed -n 2,15p "$0" | sed 's/^# \{0,1\}//'
}

# suite_header FILE KEY: the value of a "# KEY: value" line in the first 20 lines
suite_header() {
    head -20 "$1" | sed -n "s/^# $2: *//p" | head -1
}

# every runnable name, one a line: NAME FILE VARIANT TIER (fast tier first)
list_suites() {
    local file name tier variant
    for file in test/suites/*.sh; do
        [ -e "$file" ] || continue
        name=$(basename "$file" .sh)
        tier=$(suite_header "$file" tier)
        local variants
        variants=$(suite_header "$file" variants)
        if [ -z "$variants" ]; then
            echo "$name $file - ${tier:-full}"
        else
            for variant in $variants; do echo "${name}_$variant $file $variant ${tier:-full}"; done
        fi
    done | sort -s -k4,4   # "check" sorts before "full"; the file order stays within each tier
}

tier=full
names=()
while [ $# -gt 0 ]; do
    case $1 in
    --tier) [ $# -ge 2 ] || { echo "error: --tier needs a value (check or full)" >&2; exit 2; }
        tier=$2; shift 2
        [ "$tier" = check ] || [ "$tier" = full ] ||
            { echo "error: --tier: expected check or full, got '$tier'" >&2; exit 2; } ;;
    --list) list_suites | awk '{ print $1 ($4 == "check" ? "  (check)" : "") }'; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "error: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
    esac
done

# the selection: named suites (a file's name selects all its variants), else the tier
all=$(list_suites)
selected=()
if [ ${#names[@]} -gt 0 ]; then
    for want in "${names[@]}"; do
        match=$(awk -v w="$want" '$1 == w || ($3 != "-" && $2 == "test/suites/" w ".sh")' <<< "$all")
        if [ -z "$match" ]; then
            echo "error: no suite named '$want'; the suites are:" >&2
            awk '{ print "  " $1 }' <<< "$all" >&2
            exit 2
        fi
        while IFS= read -r line; do selected+=("$line"); done <<< "$match"
    done
elif [ "$tier" = check ]; then
    while IFS= read -r line; do selected+=("$line"); done < <(awk '$4 == "check"' <<< "$all")
else
    while IFS= read -r line; do selected+=("$line"); done <<< "$all"
fi
export FOLDNORM_TEST_TIER=$tier

seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
export FOLDNORM_TEST_SEED=$seed  # suites derive their seeds from it
export PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d /tmp/foldnorm_test.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0; failed=0; failures=()
echo "foldnorm tests ($tier tier): seed $seed (FOLDNORM_TEST_SEED=$seed replays), work dir $work"

# run_suite NAME FILE VARIANT: runs it in its own work dir, logs to $work/NAME.log
run_suite() {
    local name=$1 file=$2 variant=$3 t0=$SECONDS
    local args=("$work/$name")
    [ "$variant" = - ] || args+=("$variant")
    mkdir -p "$work/$name"
    if "$file" "${args[@]}" > "$work/$name.log" 2>&1; then
        passed=$((passed + 1)); echo "PASS $name ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1)); failures+=("$name"); echo "FAIL $name ($((SECONDS - t0)) s)"
        sed 's/^/    /' "$work/$name.log" | tail -40
    fi
}

for line in "${selected[@]}"; do
    read -r name file variant _ <<< "$line"
    run_suite "$name" "$file" "$variant"
done

echo
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]} (seed $seed)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
