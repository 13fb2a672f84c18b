#!/usr/bin/env bash
# Sourced by suites that can leave a part out: the outcome a suite reports to
# test/run_tests.sh. A left-out part is a SKIP, never a PASS:
#   skip_part REASON   prints "SKIP: REASON" (the runner lists it) and counts it
#   suite_exit FAILS   exit 1 when FAILS > 0, else 77 when a part was skipped,
#                      else 0
skipped_parts=${skipped_parts:-0} # sourced twice (by a helper too): the count stays
skip_part() {
    echo "SKIP: $*"
    skipped_parts=$((skipped_parts + 1))
}
suite_exit() {
    [ "$1" -eq 0 ] || exit 1
    [ "$skipped_parts" -eq 0 ] || exit 77
    exit 0
}
