#!/usr/bin/env bash
# tier: check
# Generation with the KV cache (llmc/gpt2/kv_cache.c, sample -kv 1) against the
# full recompute (-kv 0): for random small models in ln, rms, cbwc and a
# folded one (bin/fold of the ln model), the logits of every generated
# position equal gpt2_forward's within 1e-5 relative and greedy and seeded
# top-k tokens are identical, over 100 tokens past a context of 64 (the
# window slides twice; and a prompt longer than the context); bin/sample
# gives the same ids and text both ways; -I 1 reads prompts line by line
# (empty line, CRLF, a long line, no final newline) and replies to each as
# -p LINE does, with -sft 1 in the Alpaca template and stopping at
# <|endoftext|>; bad stdin and flags give clear errors. The fast tier runs
# the ln and cbwc checks and one interactive comparison.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/sample_kvcache
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000000 ))}
echo "sample_kvcache: seed $seed"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
tier=${FOLDNORM_TEST_TIER:-full}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
run() { # NAME COMMAND...: passes when the command exits 0; its output indented
    local name=$1; shift
    if "$@" > "$work/run.log" 2>&1; then ok "$name"; else bad "$name"; fi
    sed 's/^/     /' "$work/run.log"
}
[ -x bin/test_kv_cache ] && [ -x bin/sample ] && [ -x bin/fold ] || make -s test_kv_cache sample fold

# 1. logits and tokens, cache vs full recompute, per norm mode (d2 C64 V256 maxT64)
modes="ln rms cbwc"
[ "$tier" = check ] && modes="ln cbwc"
for mode in $modes; do
    s=$(( (seed + ${#mode}) % 1000000 ))
    bin/test_kv_cache -w "$work/$mode.bin" -N $mode -sd $s || bad "writing a random $mode model"
    run "$mode: 100 tokens after a prompt of 8 (context 64)" \
        bin/test_kv_cache "$work/$mode.bin" -g 100 -pl 8 -sd $((s + 1))
done
if [ "$tier" != check ]; then
    run "fold the ln model" bin/fold "$work/ln.bin" "$work/folded.bin"
    run "folded: 100 tokens after a prompt of 8" bin/test_kv_cache "$work/folded.bin" -g 100 -pl 8 -sd $((seed + 3))
    run "ln: a prompt of 80 tokens, longer than the context of 64" \
        bin/test_kv_cache "$work/ln.bin" -g 20 -pl 80 -sd $((seed + 4))
fi

# 2. bin/sample on a GPT-2-vocabulary model (d2 C32, maxT 64) that draws
#    <|endoftext|> within a few tokens (-eb 12): -kv 0 and -kv 1 print the same
m=$work/gpt2v.bin
bin/test_kv_cache -w "$m" -e d2c32h2t64 -N ln -eb 12 -sd $((seed % 1000000 + 5)) || bad "writing a V = 50257 model"
sample() { bin/sample -e "$m" "$@"; }
# near_tie TRACE_A TRACE_B: the first draw (FOLDNORM_SAMPLE_TRACE lines) whose
# token differs is a near tie: the same u, and the end of one run's interval
# and the start of the other's (the boundary between the two tokens, moved by
# the paths' last-bit differences) lie on either side of u, less than 1e-6
# apart. Prints the draw; fails when no draw differs or the gap is wider.
# Why 1e-6: the cache and the full recompute sum in other orders, and their
# logits differ by <= ~4e-7 relative (test_kv_cache above, tol 1e-5); that
# moved a boundary by 1.4e-7 at seed 53666807, whose u fell between. On this
# untrained model over 50257 tokens an interval is ~2e-5 wide, so such a
# straddle comes up now and then (1 seed in 50 of test/seed_loop.sh,
# 2026-12-02); an error in the cache path moves the logits by far more (and
# the greedy and logits checks above compare them).
near_tie() {
    awk '/^sample trace:/ { gsub(/[\[,)]/, ""); f = (FNR == NR) ? 1 : 2; n[f]++
                             tok[f, n[f]] = $4; u[f, n[f]] = $6; lo[f, n[f]] = $8; hi[f, n[f]] = $9 }
         END { for (k = 1; k <= n[1] && k <= n[2]; k++) if (tok[1, k] != tok[2, k]) break
               if (k > n[1] || k > n[2]) exit 1
               a = (tok[1, k] < tok[2, k]) ? 1 : 2; b = 3 - a  # a: the lower token, b: the next
               gap = hi[a, k] - lo[b, k]
               printf "draw %d: u %s, tokens %s and %s, boundary %s vs %s (gap %.2e)\n", k, u[1, k],
                      tok[1, k], tok[2, k], hi[a, k], lo[b, k], gap
               exit !(u[1, k] == u[2, k] && lo[b, k] <= u[1, k] + 0 && u[1, k] + 0 < hi[a, k] && gap < 1e-6) }' "$1" "$2"
}
# the tie rule bites: a divergence whose intervals overlap widely is no tie
printf 'sample trace: token 5 u 0.500000000000 in [0.400000000000, 0.600000000000)\n' > "$work/tie_a"
printf 'sample trace: token 9 u 0.500000000000 in [0.450000000000, 0.550000000000)\n' > "$work/tie_b"
near_tie "$work/tie_a" "$work/tie_b" > /dev/null && bad "near_tie takes a wide divergence for a tie"
same_both_ways() { # NAME FLAGS...: -kv 0 and -kv 1 print the same (up to a near tie)
    local name=$1 tie; shift
    if ! FOLDNORM_SAMPLE_TRACE=1 sample "$@" -kv 1 > "$work/kv1.out" 2> "$work/kv1.err" ||
       ! FOLDNORM_SAMPLE_TRACE=1 sample "$@" -kv 0 > "$work/kv0.out" 2> "$work/kv0.err"; then
        bad "sample $name: failed"; head -c 300 "$work"/kv*.err
    elif cmp -s "$work/kv1.out" "$work/kv0.out"; then
        ok "sample $name: the same with -kv 1 and -kv 0"
    elif tie=$(near_tie "$work/kv1.err" "$work/kv0.err"); then
        ok "sample $name: the same with -kv 1 and -kv 0 up to a near tie, $tie"
    else
        bad "sample $name: -kv 1 and -kv 0 differ (${tie:-no draw differs})"; head -c 300 "$work"/kv*.out
    fi
}
same_both_ways "greedy ids past the context (4 + 100 > 64)" -p "And God said" -g 100 -tp 0 -ids 1
n=$(wc -w < "$work/kv1.out")
[ "$n" = 100 ] && ok "100 ids printed" || bad "$n ids printed, expected 100"
same_both_ways "top-k text, seed $seed" -p "In the beginning" -g 40 -tk 40 -sd $seed
if [ "$tier" != check ]; then
    same_both_ways "-sft 1 text" -p "Name a colour." -g 24 -sft 1 -sd $((seed + 1))
fi

# 3. interactive: a reply line per stdin line, each as -p LINE gives it
long=$(for i in $(seq 1 40); do printf 'and the earth was without form, '; done)
printf 'And God said\n\nName a colour.\r\n%s\nWhat is a verb?' "$long" > "$work/prompts.txt"
lines=("And God said" "" "Name a colour." "$long" "What is a verb?")
interactive_vs_p() { # NAME FLAGS...
    local name=$1; shift
    if ! sample -I 1 "$@" < "$work/prompts.txt" > "$work/i.out" 2> "$work/i.err"; then
        bad "-I 1 $name: exit status $?: $(head -c 300 "$work/i.err")"; return
    fi
    local got; got=$(wc -l < "$work/i.out")
    [ "$got" = 5 ] || { bad "-I 1 $name: $got reply lines for 5 prompts"; return; }
    local i
    for i in 0 1 2 3 4; do
        sample -p "${lines[$i]}" "$@" > "$work/p.out" 2> /dev/null
        if ! cmp -s <(sed -n "$((i + 1))p" "$work/i.out") "$work/p.out"; then
            bad "-I 1 $name: reply $((i + 1)) differs from -p's"; return
        fi
    done
    ok "-I 1 $name: 5 replies (empty line, CRLF, $(( ${#long} )) bytes, no final newline) as -p gives them"
}
interactive_vs_p "-sft 1 ids" -sft 1 -g 24 -ids 1 -sd $seed
grep -q "note: sample: the prompt is .* tokens, longer than the context of 64" "$work/i.err" &&
    ok "the long prompt's note: $(head -1 "$work/i.err")" || bad "no note for the prompt longer than the context"
# -sft 1: a reply ends at its first <|endoftext|> (its id printed last) or runs all 24 tokens
stops=$(awk -v eot=50256 '{ for (i = 1; i <= NF; i++) if ($i == eot && i != NF) bad = 1;
    if ($NF == eot) stop++; else if (NF != 24) bad = 1 } END { print (bad ? "bad" : stop + 0) }' "$work/i.out")
case $stops in
bad) bad "-sft 1: a reply runs past <|endoftext|> or stops short: $(cat "$work/i.out")" ;;
0) bad "-sft 1: no reply stopped at <|endoftext|> (the -eb model draws it within a few tokens)" ;;
*) ok "-sft 1: $stops of 5 replies stopped at <|endoftext|> (any other ran all 24 tokens)" ;;
esac
if [ "$tier" != check ]; then
    interactive_vs_p "-sft 1 ids, -kv 0" -sft 1 -g 24 -kv 0 -ids 1 -sd $seed
    interactive_vs_p "plain ids, greedy" -g 12 -tp 0 -ids 1
    sample -I 1 -sft 1 -g 24 -sd $seed < "$work/prompts.txt" > "$work/i.out" 2> /dev/null &&
        ! grep -q "endoftext" "$work/i.out" && ok "-I 1 -sft 1 text: no <|endoftext|> printed" ||
        bad "-I 1 -sft 1 text: failed or printed <|endoftext|>"
fi

# 4. bad input
expect_error() { # NAME PATTERN COMMAND... (stdin from $work/stdin)
    local name=$1 pattern=$2; shift 2
    "$@" < "$work/stdin" > "$work/e.out" 2> "$work/e.err"
    local rc=$?
    if [ $rc -eq 1 ] && grep -qE -- "$pattern" "$work/e.err"; then
        ok "bad $name: $(head -1 "$work/e.err")"
    else
        bad "bad $name: exit $rc, stderr: $(head -c 300 "$work/e.err")"
    fi
}
printf 'fine\nbad\0line\n' > "$work/stdin"
expect_error "NUL in a stdin line" "stdin: line 2 holds a NUL byte" sample -I 1 -g 2
: > "$work/stdin"
expect_error "-p with -I 1" "-p: not with -I 1" sample -I 1 -p x
expect_error "-kv 2" "-kv" sample -kv 2
sample -I 1 -g 2 < /dev/null > "$work/e.out" 2>&1 && [ ! -s "$work/e.out" ] &&
    ok "-I 1 with empty stdin: no reply, exit 0" || bad "-I 1 with empty stdin: $(head -c 200 "$work/e.out")"

[ $fails -eq 0 ] && echo "sample_kvcache: all passed" || echo "sample_kvcache: $fails failed"
[ $fails -eq 0 ]
