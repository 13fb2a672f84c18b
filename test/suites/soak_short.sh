#!/usr/bin/env bash
# The soak benchmark (dev/bench/soak.sh) in short: a tiny GPT-2 for 2000
# steps, checkpoints every 100, 3 kept: resident memory flat (< 1% growth
# after warm-up), no file descriptor leak, at most 4 checkpoints on disk.
# dev/bench/soak.sh without arguments runs the full 20,000 steps.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/soak_short
rm -rf "$work"; mkdir -p "$work"
# under make SAN=1: ASan holds freed blocks in a quarantine (256 MB), which
# would read as growth; without it the sanitized trainer's RSS is flat too
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
dev/bench/soak.sh 2000 "$work"
