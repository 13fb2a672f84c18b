# Sourced by the emulated suites (test/suites/cuda_*emu*.sh). The race
# detector (dev/cuda/emu/emu_race.cpp, docs/cuda.md) costs 1.3-2.5x a run's
# CPU time (7x on the FMA window-attention check), so a suite race-checks
# chosen runs (EMU_RACECHECK=1 before the command) and runs the repeats
# without it (EMU_RACECHECK=0: the instrumentation stays, its hooks return at
# once); race_coverage then fails the suite when a kernel instance it
# launched never ran race-checked with two or more warps a block (EMU_KERNEL_LOG). Needs build/emu/emu_selftest, $work, ok
# and bad.

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
        echo "SKIP race coverage: this build has no race detector (SAN=1)"
        return
    fi
    local missed n
    # a kernel is its instance (the name with its template arguments); covered:
    # race-checked in a launch of two or more warps a block (emu_race.cpp)
    missed=$(awk '{ kind = $1; sub(/^[a-z-]+ /, ""); if (kind == "checked") c[$0] = 1; else if (!($0 in u) || kind == "one-warp") u[$0] = kind }
                  END { for (k in u) if (!(k in c)) print k " (" u[k] ")" }' "$race_log" | sort)
    n=$(sed 's/^[a-z-]* //' "$race_log" | sort -u | grep -c .)
    if [ -z "$missed" ]; then
        ok "race detector: each of the $n kernel instances launched ran race-checked with two or more warps a block"
    else
        bad "race detector: kernel instances never race-checked with two or more warps a block: $(tr '\n' ';' <<< "$missed")"
    fi
}
