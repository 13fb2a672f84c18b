# Sourced by the emulated suites that run a model's test program with each
# attention kind (test/suites/cuda_emu.sh, cuda_vit_emu.sh). Needs $E, $work,
# ok and bad, and the reference states $work/TAG.bin + $work/TAG_state.bin.

# attention_kinds "TAG..." "PROGRAM KIND"...: on every state, PROGRAM -at KIND
# must pass its checks and say "attention KIND"; ln_small runs race-checked
attention_kinds() {
    local tags=$1 tag run b at r log
    shift
    for tag in $tags; do
        r=0; [ "$tag" = ln_small ] && r=1
        for run in "$@"; do
            read -r b at <<< "$run"
            log=$work/$b.$tag.$at.log
            if EMU_RACECHECK=$r "$E/$b" "$work/$tag.bin" "$work/${tag}_state.bin" -at "$at" > "$log" 2>&1 &&
               grep -q "attention $at" "$log"; then
                ok "$b -at $at $tag: logits, loss, gradients, steps"
            else
                bad "$b -at $at $tag"; grep -E 'FAIL|error' "$log" | head -10 | sed 's/^/     /'
            fi
        done
    done
}
