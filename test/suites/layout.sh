#!/usr/bin/env bash
# llmc/'s folders keep their order (docs/layout.md, test/layout_rules.py):
# each includes only itself and the folders below it, siblings not each
# other. Mutations show the check can fail: a core/ file including gpt2/, a
# vision/ file including gpt2/ (siblings), and a bare include of another
# folder's header, each in a scratch tree, must be reported; so must a
# model file that compares a norm mode with a MODE_* constant, or switches on
# one, instead of asking the policy (llmc/core/norm_mode.h); so must two .c
# files that call each other (the matmul router's old circle), three round a
# chain, and two headers that include each other.
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
# mode_mutant NAME LINE: a scratch tree whose gpt2/x.c (under llmc) holds LINE
mode_mutant() {
    local tree=$work/$1 rel=gpt2/x.c
    mkdir -p "$tree/llmc/core" "$tree/llmc/gpt2"
    cp llmc/core/norm_mode.h "$tree/llmc/core/"
    printf '#include "core/norm_mode.h"\nint f(NormMode mode) {\n%s\n}\n' "$2" > "$tree/llmc/$rel"
    if $PY test/layout_rules.py "$tree" > "$work/$1.out" 2>&1; then
        echo "FAIL mutant $1 ($2) passed"; fails=1
    elif grep -qF "llmc/$rel:3: compares or switches on a norm mode" "$work/$1.out"; then
        echo "ok   mutant $1 caught: $(head -1 "$work/$1.out" | cut -c1-100)"
    else
        echo "FAIL mutant $1: $(head -1 "$work/$1.out")"; fails=1
    fi
}
mode_mutant mode_equal '    return mode == MODE_CBWC;'
mode_mutant mode_order '    return MODE_FOLDED > mode;'
mode_mutant mode_case '    switch (mode) { case MODE_LN: return 1; default: return 0; }'
# circle_mutant NAME EXPECTED FILE TEXT [FILE TEXT ...]: a scratch kernels/ folder
circle_mutant() {
    local name=$1 tree=$work/$1 expected=$2; shift 2
    mkdir -p "$tree/llmc/kernels"
    while [ $# -gt 0 ]; do printf '%b' "$2" > "$tree/llmc/kernels/$1"; shift 2; done
    if $PY test/layout_rules.py "$tree" > "$work/$name.out" 2>&1; then
        echo "FAIL mutant $name passed"; fails=1
    elif grep -qF "$expected" "$work/$name.out"; then
        echo "ok   mutant $name caught: $(head -1 "$work/$name.out" | cut -c1-100)"
    else
        echo "FAIL mutant $name: $(head -1 "$work/$name.out")"; fails=1
    fi
}
k=llmc/kernels # the scratch folder, as the check names its files
circle_mutant call_pair "$k/a.c <-> $k/b.c: these .c files call each other" \
    a.c 'void a_run(void) {\n    b_run();\n}\n' b.c 'void b_run(void) { a_run(); }\n'
circle_mutant call_chain "$k/a.c <-> $k/b.c <-> $k/c.c" \
    a.c 'int a_run(int x) {\n    return b_run(x);\n}\n' b.c 'int b_run(int x) { return c_run(x); }\n' \
    c.c 'static int helper(int x) { return x; }\nint c_run(int x) { return helper(a_run(x)); }\n'
circle_mutant include_pair "$k/a.h <-> $k/b.h: these headers include each other" \
    a.h '#include "b.h"\n' b.h '#include "a.h"\n'
exit $fails
