#!/usr/bin/env bash
# llmc/'s folders keep their order (docs/layout.md, test/layout_rules.py):
# each includes only itself and the folders below it, siblings not each
# other. Mutations show the check can fail: a core/ file including gpt2/, a
# vision/ file including gpt2/ (siblings), and a bare include of another
# folder's header, each in a scratch tree, must be reported.
# tier: check
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/layout
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
fails=0
if $PY test/layout_rules.py > "$work/tree.out" 2>&1; then
    echo "ok   $(tail -1 "$work/tree.out")"
else
    echo "FAIL"; cat "$work/tree.out"; fails=1
fi
# mutant NAME FILE INCLUDE EXPECTED: a scratch tree where FILE includes INCLUDE
mutant() {
    local tree=$work/$1
    mkdir -p "$tree/llmc/core" "$tree/llmc/gpt2" "$tree/llmc/vision"
    touch "$tree/llmc/core/utils.h" "$tree/llmc/gpt2/gpt2.h" "$tree/llmc/vision/vit.h"
    printf '#include "%s"\n' "$3" > "$tree/llmc/$2"
    if $PY test/layout_rules.py "$tree" > "$work/$1.out" 2>&1; then
        echo "FAIL mutant $1 ($2 including \"$3\") passed"; fails=1
    elif grep -qF "$4" "$work/$1.out"; then
        echo "ok   mutant $1 caught: $(head -1 "$work/$1.out")"
    else
        echo "FAIL mutant $1: $(head -1 "$work/$1.out")"; fails=1
    fi
}
mutant upward core/x.c gpt2/gpt2.h 'core/ includes "gpt2/gpt2.h"'
mutant sibling vision/x.c gpt2/gpt2.h 'vision/ includes "gpt2/gpt2.h"'
mutant bare gpt2/x.c utils.h '"utils.h" is not in llmc/gpt2/'
exit $fails
