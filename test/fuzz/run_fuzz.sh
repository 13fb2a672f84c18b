#!/usr/bin/env bash
# Runs fuzz targets one after another (make fuzz; docs/reliability.md):
#   test/fuzz/run_fuzz.sh SECONDS NAME...     each build-fuzz/fuzz_NAME for SECONDS
# on OUT/corpus/NAME (grown across runs), seeded from build-fuzz/seeds/NAME
# (test/fuzz/make_seeds.sh); OUT is $FUZZ_OUT, default build-fuzz. Crash
# inputs go to OUT/artifacts/, logs to OUT/logs/. FUZZ_RUNS=N stops a target
# after N executions instead; FUZZ_ARGS adds libFuzzer flags. Prints one line
# per target (executions, rate, corpus, libFuzzer's last status line); exits
# non-zero when any target found a crash, leak, timeout or UB report.
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:?usage: run_fuzz.sh SECONDS NAME...}; shift
build=build-fuzz out=${FUZZ_OUT:-build-fuzz}
mkdir -p "$out/artifacts" "$out/logs"
status=0
for name in "$@"; do
    bin=$build/fuzz_$name corpus=$out/corpus/$name seeds=$build/seeds/$name
    mkdir -p "$corpus"
    [ -d "$seeds" ] || { echo "run_fuzz: no seeds in $seeds (make fuzz-seeds)" >&2; exit 1; }
    limit=(-max_total_time="$seconds")
    [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
    log=$out/logs/$name.log
    # max_len: 1 KiB above the largest seed, so inputs stay small and runs fast
    max_len=$(( $(find "$seeds" -type f -printf '%s\n' | sort -n | tail -1) + 1024 ))
    "$bin" "${limit[@]}" -max_len=$max_len -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$out/artifacts/$name-" ${FUZZ_ARGS:-} "$corpus" "$seeds" > "$log" 2>&1
    rc=$?
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    rate=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}')
    if [ $rc -eq 0 ] && ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log"; then
        echo "ok   $name: ${execs:-?} execs, ${rate:-?}/s, corpus $(ls "$corpus" | wc -l) | $last"
    else
        echo "FAIL $name (exit $rc): $log"
        grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -8 | sed 's/^/    /'
        status=1
    fi
done
exit $status
