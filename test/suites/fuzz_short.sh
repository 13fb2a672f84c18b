#!/usr/bin/env bash
# Short fuzz runs (issue 7): builds every libFuzzer target with clang
# (mk/fuzz.mk: ASan + UBSan), generates their seeds from real files
# (test/fuzz/make_seeds.sh), then runs each for FUZZ_SHORT_SECONDS (default 5)
# on a fresh corpus in the work dir. Any crash, leak, timeout or UB report
# fails; so does a missing clang or libFuzzer (declared in scripts/deps/fuzz.txt).
# The long runs and their figures: make fuzz, docs/reliability.md.
# sanitized: skip its libFuzzer targets are always built with ASan + UBSan (clang), so the plain run already runs them sanitized
# cores: 1
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/fuzz_short
rm -rf "$work"; mkdir -p "$work"
seconds=${FUZZ_SHORT_SECONDS:-5}
if ! command -v clang > /dev/null; then
    echo "FAIL: clang not found; it is a declared dependency (scripts/deps/fuzz.txt): run make deps"
    exit 1
fi
t0=$SECONDS
if ! make -s fuzz-build > "$work/build.log" 2>&1; then
    echo "FAIL: building the fuzz targets (libFuzzer is in libclang-rt-dev, scripts/deps/fuzz.txt):"
    tail -20 "$work/build.log"
    exit 1
fi
echo "ok   fuzz targets built ($((SECONDS - t0)) s)"
t0=$SECONDS
if ! test/fuzz/make_seeds.sh build-fuzz/seeds > "$work/seeds.log" 2>&1; then
    echo "FAIL: generating the seeds:"; tail -20 "$work/seeds.log"; exit 1
fi
echo "ok   seeds ($((SECONDS - t0)) s): $(find build-fuzz/seeds -type f ! -name .complete | wc -l) files"
names=$(ls test/fuzz/fuzz_*.c | sed 's|test/fuzz/fuzz_||; s|\.c$||')
FUZZ_OUT=$work test/fuzz/run_fuzz.sh "$seconds" $names
rc=$?
echo "fuzz_short: $(echo $names | wc -w) targets, ${seconds} s each: $([ $rc -eq 0 ] && echo pass || echo FAIL)"
exit $rc
