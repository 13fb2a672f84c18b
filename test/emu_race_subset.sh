# Sourced by the emulated suites (test/suites/cuda_*emu*.sh). The race
# detector (dev/cuda/emu/emu_race.cpp, docs/cuda.md) costs 1.3-2.5x a run's
# CPU time (7x on the FMA window-attention check), so a suite race-checks
# chosen runs (EMU_RACECHECK=1 before the command) and runs the repeats
# without it (EMU_RACECHECK=0: the instrumentation stays, its hooks return at
# once); race_coverage then fails the suite when a kernel it launched never
# ran race-checked (EMU_KERNEL_LOG). Needs build/emu/emu_selftest, $work, ok
# and bad. The plain build must have the detector: without it race_coverage
# fails the suite; the SAN=1 build (FOLDNORM_SANITIZED=1: ASan and TSan do
# not combine) has none, a SKIP (test/suite_outcome.sh).
. test/suite_outcome.sh

# after the build: are races checked at all (not in SAN=1), the cheap default, the log
race_subset_begin() {
    race_built=0
    EMU_RACECHECK=1 build/emu/emu_selftest racecheck 2> /dev/null | grep -q 'race checking: on' && race_built=1
    race_log=$work/kernels.log
    export EMU_RACECHECK=0 EMU_KERNEL_LOG=$race_log
    : > "$race_log"
}

# every kernel launched since race_subset_begin ran race-checked at least once;
# the log stops here (the mutants that follow are not the suite's kernels)
race_coverage() {
    unset EMU_KERNEL_LOG
    if [ "$race_built" = 0 ]; then
        if [ "${FOLDNORM_SANITIZED:-0}" = 1 ]; then
            skip_part "race coverage: the SAN=1 build has no race detector (ASan and TSan do not combine)"
        else
            bad "race coverage: this plain build has no race detector (build/emu/emu_selftest racecheck: $(build/emu/emu_selftest racecheck 2>&1 | head -1); mk/emu.mk builds it with -DEMU_RACE and -fsanitize=thread)"
        fi
        return
    fi
    local missed n
    missed=$(awk '{ kind = $1; sub(/^[a-z]+ /, ""); if (kind == "checked") c[$0] = 1; else u[$0] = 1 }
                  END { for (k in u) if (!(k in c)) print k }' "$race_log" | sort)
    n=$(sed 's/^[a-z]* //' "$race_log" | sort -u | grep -c .)
    if [ -z "$missed" ]; then
        ok "race detector: each of the $n kernels launched ran race-checked at least once"
    else
        bad "race detector: kernels launched only unchecked: $(tr '\n' ';' <<< "$missed")"
    fi
}
