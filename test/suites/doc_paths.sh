#!/usr/bin/env bash
# Every repository path that the docs, scripts, build files and sources name
# exists (test/doc_paths.py: files, folders, globs; placeholders and
# generated places left out), so a moved or renamed file cannot leave a
# stale reference behind. A mutation shows the check can fail: a doc naming
# a file that is not there must be reported.
# tier: check
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
fails=0
if $PY test/doc_paths.py > "${1:-/tmp}/doc_paths.out" 2>&1; then
    echo "ok   $(tail -1 "${1:-/tmp}/doc_paths.out")"
else
    echo "FAIL"; cat "${1:-/tmp}/doc_paths.out"; fails=1
fi
# the mutation: an untracked doc that names a missing file
# (the names are built from variables, which the checker skips in this file)
docs=docs kernels=llmc/kernels
probe=$docs/doc_paths_probe.md missing=$kernels/no_such_kernel.c
trap 'rm -f "$probe"' EXIT
echo "See \`$missing\`." > "$probe"
report=$($PY test/doc_paths.py 2>&1)
if grep -qF "$probe:1: $missing" <<< "$report"; then
    echo "ok   a doc naming $missing is reported"
else
    echo "FAIL the missing path in $probe was not reported"; fails=1
fi
exit $fails
