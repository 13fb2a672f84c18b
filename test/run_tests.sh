#!/usr/bin/env bash
# foldnorm's test runner. Every suite is a script test/suites/NAME.sh, run as
#   test/suites/NAME.sh WORK_DIR [VARIANT]
# and picked up here by its file name. Its exit status is its outcome:
#   0   PASS: everything it checks ran and held
#   77  SKIP: all or part of it did nothing; it prints one "SKIP: REASON" line
#       a left-out part (a "SKIP: " line with exit 0 counts as a SKIP too, and
#       exit 77 without one as a FAIL: a skip names its reason)
#   any other: FAIL
# A SKIP is never a PASS: the closing line counts the three apart, and the
# skips are listed with their reasons. Lines near a suite's top declare:
#   # tier: check         part of the fast tier (make check); the runner exports
#                         FOLDNORM_TEST_TIER=check there, so a suite may run a
#                         shorter form of itself (make test exports full)
#   # variants: a b c     the suite runs once per variant, named NAME_a, NAME_b, ...
#   # sanitized: skip WHY  the SAN=1 run (make SAN=1 test) leaves it out, saying
#                         why: for suites whose C code runs under the
#                         sanitizers in another suite and whose own value is
#                         not memory safety (printed as "SKIP NAME (SAN=1: WHY)",
#                         counted as skipped)
#   # cores: 1            the suite keeps one core busy (the emulated CUDA
#                         suites: the emulation is serial); the runner runs
#                         such suites side by side, one a core (nproc, or
#                         FOLDNORM_TEST_JOBS=N; 1 runs every suite alone),
#                         before the others; every other suite runs alone
#
#   test/run_tests.sh                 every suite (make test; what CI runs)
#   test/run_tests.sh --tier check    the fast tier (make check)
#   test/run_tests.sh NAME...         these suites (a file's name runs all its variants)
#   test/run_tests.sh --list          the suite names, with the fast tier marked
#   test/run_tests.sh --randomised    the names of the suites that use the seed
#   test/run_tests.sh --logs DIR ...  also keeps every suite's whole log in DIR
# Fresh random seeds every run; FOLDNORM_TEST_SEED=N replays one
# (test/seed_loop.sh runs suites over many seeds). Ends with
# "N passed, N failed, N skipped" (exit 1 when any failed; .ci/run reads it).
set -uo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# threads sleep at a barrier instead of spinning: the same results, and on a
# shared, loaded machine 10-20x less time (a spinning thread holds the core
# its partner needs); on a quiet one the tests' small steps hardly notice
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

usage() {
    awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0" | sed 's/^# \{0,1\}//'
}

# suite_header FILE KEY: the value of a "# KEY: value" line in the file's
# header (its leading comment block); such a line further down is an error
suite_header() {
    local header
    header=$(awk 'NR == 1 || /^#/ { print; next } { exit }' "$1" | sed -n "s/^# $2: *//p" | head -1)
    if [ -z "$header" ] && grep -q "^# $2:" "$1"; then
        echo "error: $1: its '# $2:' line is below the header comment (the runner reads only the header)" >&2
        exit 2
    fi
    echo "$header"
}

# every runnable name, one a line: NAME FILE VARIANT TIER CORES (the one-core
# suites first, so they run side by side; then the fast tier first)
list_suites() {
    local file name tier variant cores
    for file in test/suites/*.sh; do
        [ -e "$file" ] || continue
        name=$(basename "$file" .sh)
        tier=$(suite_header "$file" tier)
        cores=$(suite_header "$file" cores)
        case ${cores:-all} in
        1|all) ;;
        *) echo "error: $file: '# cores:' expects 1 (or no such line), got '$cores'" >&2; exit 2 ;;
        esac
        local variants
        variants=$(suite_header "$file" variants)
        if [ -z "$variants" ]; then
            echo "$name $file - ${tier:-full} ${cores:-all}"
        else
            for variant in $variants; do echo "${name}_$variant $file $variant ${tier:-full} ${cores:-all}"; done
        fi
    done | sort -s -k5,5 -k4,4   # "1" before "all", "check" before "full"; the file order stays within
}

tier=full
names=()
logs=
while [ $# -gt 0 ]; do
    case $1 in
    --logs) [ $# -ge 2 ] || { echo "error: --logs needs a directory" >&2; exit 2; }
        logs=$2; shift 2; mkdir -p "$logs" || exit 2 ;;
    --randomised) list_suites | while read -r name file _; do
            grep -q FOLDNORM_TEST_SEED "$file" && echo "$name"; done; exit 0 ;;
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
# the suites' one test for the sanitized build (make SAN=1 test): 1 there, else 0
FOLDNORM_SANITIZED=0
[ -n "${SAN:-}" ] && [ "${SAN}" != 0 ] && FOLDNORM_SANITIZED=1
export FOLDNORM_SANITIZED

seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
export FOLDNORM_TEST_SEED=$seed  # suites derive their seeds from it
work=$(mktemp -d /tmp/foldnorm_test.XXXXXX)
# the suites' python3: test/python hands each reference script to one server
# that imported torch once (test/python_server.py: a fork a script, ~3 s less
# a run); PYTHON=/usr/bin/python3 (or FOLDNORM_PY_SERVER=0) runs them plainly
if [ -z "${PYTHON:-}" ] && [ "${FOLDNORM_PY_SERVER:-1}" != 0 ]; then
    export FOLDNORM_REAL_PYTHON=/usr/bin/python3 PYTHON=$PWD/test/python
    export FOLDNORM_PY_SOCKET=$work/python.sock
    /usr/bin/python3 test/python_server.py "$FOLDNORM_PY_SOCKET" > "$work/python_server.log" 2>&1 &
    export FOLDNORM_PY_SERVER_PID=$!
fi
export PYTHON=${PYTHON:-/usr/bin/python3}
trap '[ -z "${FOLDNORM_PY_SERVER_PID:-}" ] || kill "$FOLDNORM_PY_SERVER_PID" 2>/dev/null; rm -rf "$work"' EXIT
passed=0; failed=0; skipped=0; failures=(); skip_names=()
echo "foldnorm tests ($tier tier): seed $seed (FOLDNORM_TEST_SEED=$seed replays), work dir $work"

# run_suite NAME FILE VARIANT: runs it in its own work dir, logs to
# $work/NAME.log; its report (the PASS, SKIP or FAIL line, a skip's reasons,
# a failure's log tail) goes to $work/NAME.report, a skip's reasons to
# $work/NAME.skips; returns 0 (pass), 77 (skip) or 1 (fail)
run_suite() {
    local name=$1 file=$2 variant=$3 t0=$SECONDS rc
    local args=("$work/$name")
    [ "$variant" = - ] || args+=("$variant")
    mkdir -p "$work/$name"
    "$file" "${args[@]}" > "$work/$name.log" 2>&1
    rc=$?
    sed -n 's/^SKIP: *//p' "$work/$name.log" > "$work/$name.skips"
    if [ $rc -eq 0 ] && [ -s "$work/$name.skips" ]; then
        rc=77 # it said that a part did nothing
    elif [ $rc -eq 77 ] && [ ! -s "$work/$name.skips" ]; then
        echo "exit 77 (skip) without a 'SKIP: REASON' line: a skip names its reason" >> "$work/$name.log"
        rc=1
    elif [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
        rc=1
    fi
    case $rc in
    0) echo "PASS $name ($((SECONDS - t0)) s)" ;;
    77) echo "SKIP $name ($((SECONDS - t0)) s)"; sed 's/^/    SKIP: /' "$work/$name.skips" ;;
    *) echo "FAIL $name ($((SECONDS - t0)) s)"; sed 's/^/    /' "$work/$name.log" | tail -40 ;;
    esac > "$work/$name.report"
    [ -z "$logs" ] || cp "$work/$name.log" "$logs/$name.log"
    return $rc
}
# count_outcome NAME RC: adds the suite's outcome to the tallies
count_outcome() {
    case $2 in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)); skip_names+=("$1") ;;
    *) failed=$((failed + 1)); failures+=("$1") ;;
    esac
}

# the scheduler: a one-core suite ("# cores: 1") starts in the background
# once a core is free; any other runs alone, in the foreground; reports print
# as suites end
jobs_max=${FOLDNORM_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[[ $jobs_max =~ ^[1-9][0-9]*$ ]] ||
    { echo "error: FOLDNORM_TEST_JOBS: expected a positive whole number, got '$jobs_max'" >&2; exit 2; }
declare -A running=() # pid -> "NAME CORES"
busy=0
reap_one() {
    local pid rc name cores
    wait -n -p pid "${!running[@]}"
    rc=$?
    read -r name cores <<< "${running[$pid]}"
    unset "running[$pid]"
    busy=$((busy - cores))
    cat "$work/$name.report"
    count_outcome "$name" $rc
}
sanitized_skip() { # FILE: the reason SAN=1 leaves it out, or nothing
    [ "$FOLDNORM_SANITIZED" = 1 ] || return 0
    local why
    why=$(suite_header "$1" sanitized)
    case $why in
    '') ;;
    skip\ *) echo "${why#skip }" ;;
    *) echo "error: $1: '# sanitized:' expects 'skip REASON', got '$why'" >&2; exit 2 ;;
    esac
}

# the one-core suites build what they run (make, a no-op after make test);
# side by side, two makes would race on the same targets: one build first
ones=$(printf '%s\n' "${selected[@]}" | awk '$5 == "1"' | wc -l)
if [ "$jobs_max" -gt 1 ] && [ "$ones" -gt 1 ]; then
    make -s emu > "$work/make_emu.log" 2>&1 ||
        { echo "error: make emu failed (the emulated suites need it):"; tail -20 "$work/make_emu.log"; exit 2; }
fi

for line in "${selected[@]}"; do
    read -r name file variant _ cores <<< "$line"
    why=$(sanitized_skip "$file") || exit 2
    if [ -n "$why" ]; then
        echo "SAN=1: $why" > "$work/$name.skips"
        count_outcome "$name" 77; echo "SKIP $name (SAN=1: $why)"; continue
    fi
    if [ "$cores" = 1 ] && [ "$jobs_max" -gt 1 ]; then
        while [ $((busy + 1)) -gt "$jobs_max" ]; do reap_one; done
        run_suite "$name" "$file" "$variant" &
        running[$!]="$name 1"
        busy=$((busy + 1))
    else # alone, in the foreground (a background job would ignore SIGINT, and pass that on)
        while [ ${#running[@]} -gt 0 ]; do reap_one; done
        run_suite "$name" "$file" "$variant"
        rc=$?
        cat "$work/$name.report"
        count_outcome "$name" $rc
    fi
done
while [ ${#running[@]} -gt 0 ]; do reap_one; done

echo
if [ "$skipped" -gt 0 ]; then
    echo "skipped (each did nothing, or part of it did nothing):"
    for name in "${skip_names[@]}"; do
        while IFS= read -r why; do echo "  $name: $why"; done < "$work/$name.skips"
    done
fi
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]} (seed $seed)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
