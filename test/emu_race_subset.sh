# Sourced by the emulated suites (test/suites/cuda_*emu*.sh). The race
# detector (dev/cuda/emu/emu_race.cpp, docs/cuda.md) costs 1.3-2.5x a run's
# CPU time (7x on the FMA window-attention check), so a suite race-checks
# chosen runs (EMU_RACECHECK=1 before the command) and runs the repeats
# without it (EMU_RACECHECK=0: the instrumentation stays, its hooks return at
# once); race_coverage then fails the suite when a kernel instance it
# launched never ran race-checked, or only with one warp a block where some
# launch of it has two or more (EMU_KERNEL_LOG). Needs build/emu/emu_selftest,
# $work, ok and bad. The plain build must have the detector: without it
# race_coverage fails the suite; the SAN=1 build (FOLDNORM_SANITIZED=1: ASan
# and TSan do not combine) has none, a SKIP (test/suite_outcome.sh).
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
    # a kernel is its instance (the name with its template arguments); covered:
    # race-checked in a launch of two or more warps a block, or of one where no
    # launch of it has more (between warps nothing can race) (emu_race.cpp)
    missed=$(awk '{ kind = $1; sub(/^[a-z-]+ /, ""); seen[$0] = 1; k[kind, $0] = 1 }
                  END { for (n in seen) if (!k["checked", n] && !(k["one-warp", n] && !k["multi-warp", n]))
                            print n (k["one-warp", n] ? " (race-checked with one warp a block only)" : " (never race-checked)") }' "$race_log" | sort)
    n=$(sed 's/^[a-z-]* //' "$race_log" | sort -u | grep -c .)
    if [ -z "$missed" ]; then
        ok "race detector: each of the $n kernel instances launched ran race-checked, with two or more warps a block where it has them"
    else
        bad "race detector: kernel instances not covered: $(tr '\n' ';' <<< "$missed")"
    fi
}
