#!/usr/bin/env bash
# The learning-rate schedules (-k cosine|linear|constant|wsd, -u, -q, -kd;
# llmc/core/schedule.c) against PyTorch's LambdaLR with llm.c's definitions
# (dev/reference/lr_schedule.py): every step of a full run within 1e-7 of -l.
# The runs: llm.c's GPT-2 124M recipe (warmup 700, 19073 steps, -q 0), a
# warmup as long as the run, warmup past the decay point, no warmup, -kd 1
# (all decay) and an odd -kd.
# tier: check
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/usr/bin/python3}
[ -x bin/test_schedule ] || make -s test_schedule
$PY dev/reference/lr_schedule.py bin/test_schedule \
    "-k cosine -l 6e-4 -u 700 -q 0.0 -x 19073" \
    "-k cosine -l 1e-2 -u 700 -q 0.5 -x 700" \
    "-k linear -l 1e-3 -u 0 -q 0 -x 300" \
    "-k linear -l 3e-4 -u 50 -q 0.1 -x 1000" \
    "-k constant -l 6e-4 -u 10 -q 0.1 -x 200" \
    "-k wsd -l 6e-4 -u 100 -q 0 -x 5000" \
    "-k wsd -l 3e-3 -u 5 -q 0.1 -kd 0.37 -x 173" \
    "-k wsd -l 1e-3 -u 60 -q 0 -kd 0.5 -x 100" \
    "-k wsd -l 1e-3 -u 0 -q 0.2 -kd 1 -x 64"
