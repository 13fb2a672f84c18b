#!/usr/bin/env bash
# Bad input to train_gpt2 and test_gpt2: each case must exit with status 1
# (not a signal, not 0) and print an error naming the file or flag and what
# is wrong. One case per line of output.
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/bad_input
mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
fails=0

# expect_error NAME PATTERN COMMAND...: exit status 1 and stderr matching PATTERN
expect_error() {
    local name=$1 pattern=$2; shift 2
    "$@" > "$work/$name.out" 2> "$work/$name.err"
    local rc=$?
    if [ $rc -eq 1 ] && grep -qE -- "$pattern" "$work/$name.err"; then
        echo "ok   $name: $(head -c 160 "$work/$name.err" | head -1)"
    else
        echo "FAIL $name: exit $rc, stderr: $(head -c 300 "$work/$name.err")"
        fails=$((fails + 1))
    fi
}

# a small valid model (V=256, maxT=16) and valid shards to corrupt
$PY dev/reference/gpt2.py --mode ln --seed 5 --L 1 --C 32 --NH 2 --V 256 --Vp 256 --maxT 16 \
    --B 1 --T 8 --model "$work/good.bin" --state "$work/good_state.bin" > /dev/null || exit 1
$PY - "$work" <<'PYEOF'
import struct, sys, numpy as np
w = sys.argv[1]
def shard(path, tokens, magic=20240520, version=1, count=None):
    h = np.zeros(256, dtype=np.int32); h[0] = magic; h[1] = version
    h[2] = len(tokens) if count is None else count
    with open(path, "wb") as f:
        f.write(h.tobytes()); f.write(np.asarray(tokens, dtype=np.uint16).tobytes())
rng = np.random.default_rng(0)
good = rng.integers(0, 256, 5000)
shard(f"{w}/good_shard.bin", good)
shard(f"{w}/short_shard.bin", good[:40])             # B*T+1 = 65 needed
bad = good.copy(); bad[1234] = 300
shard(f"{w}/token_oob_shard.bin", bad)                # token >= V = 256
shard(f"{w}/magic_shard.bin", good, magic=1234)
shard(f"{w}/count_shard.bin", good, count=6000)       # header says more than the file has
model = open(f"{w}/good.bin", "rb").read()
open(f"{w}/truncated.bin", "wb").write(model[:len(model) // 2])
open(f"{w}/header_only.bin", "wb").write(model[:600])
def patched(name, slot, value, fmt="<i"):
    b = bytearray(model); b[4 * slot:4 * slot + 4] = struct.pack(fmt, value)
    open(f"{w}/{name}.bin", "wb").write(bytes(b))
patched("magic", 0, 20240327)
patched("version", 1, 5)
patched("negative_dim", 6, -32)
patched("huge_dim", 3, 2**31 - 1)
patched("mode", 8, 7)
state = open(f"{w}/good_state.bin", "rb").read()
open(f"{w}/trunc_state.bin", "wb").write(state[:-7])
open(f"{w}/magic_state.bin", "wb").write(struct.pack("<i", 7) + state[4:])
b = bytearray(model); b[1024 + 4 * 100:1024 + 4 * 101] = struct.pack("<f", float("nan"))
open(f"{w}/nan.bin", "wb").write(bytes(b))
PYEOF

train() { bin/train_gpt2 -v 0 -x 1 -b 4 -t 16 "$@"; }
W=$work
expect_error truncated_model   "truncated.bin.*truncated"        train -e $W/truncated.bin -i $W/good_shard.bin
expect_error header_only_model "header_only.bin.*truncated"      train -e $W/header_only.bin -i $W/good_shard.bin
expect_error wrong_magic       "magic.bin.*magic"                train -e $W/magic.bin -i $W/good_shard.bin
expect_error wrong_version     "version.bin.*version 5"          train -e $W/version.bin -i $W/good_shard.bin
expect_error negative_dim      "negative_dim.bin.*positive"      train -e $W/negative_dim.bin -i $W/good_shard.bin
expect_error huge_dim          "huge_dim.bin"                    train -e $W/huge_dim.bin -i $W/good_shard.bin
expect_error unknown_mode_slot "mode.bin.*norm mode 7"           train -e $W/mode.bin -i $W/good_shard.bin
expect_error nan_weight        "nan.bin.*not finite"             train -e $W/nan.bin -i $W/good_shard.bin
expect_error missing_model     "nope.bin.*cannot open"           train -e $W/nope.bin -i $W/good_shard.bin
expect_error short_shard       "short_shard.bin.*fewer than"     train -e $W/good.bin -i $W/short_shard.bin
expect_error token_out_of_vocab "token_oob_shard.bin.*token 300" train -e $W/good.bin -i $W/token_oob_shard.bin
expect_error shard_magic       "magic_shard.bin.*magic"          train -e $W/good.bin -i $W/magic_shard.bin
expect_error shard_count       "count_shard.bin.*truncated"      train -e $W/good.bin -i $W/count_shard.bin
expect_error no_shards         "no token shard matches"          train -e $W/good.bin -i "$W/none_*.bin"
expect_error unknown_norm_flag "-N: expected one of ln|rms|cbwc, got 'layer'" train -e $W/good.bin -i $W/good_shard.bin -N layer
expect_error seq_len_too_long  "-t 32: .*maxT 16"                train -e $W/good.bin -i $W/good_shard.bin -t 32
expect_error bad_int_flag      "-b: expected an integer"         train -e $W/good.bin -i $W/good_shard.bin -b four
expect_error unknown_flag      "unknown flag '-Z'"               train -e $W/good.bin -i $W/good_shard.bin -Z 1
expect_error total_batch       "-d 100: .*multiple of B\*T"      train -e $W/good.bin -i $W/good_shard.bin -d 100
expect_error truncated_state   "trunc_state.bin: file is .* bytes" bin/test_gpt2 $W/good.bin $W/trunc_state.bin
expect_error state_magic       "magic_state.bin: not a debug state" bin/test_gpt2 $W/good.bin $W/magic_state.bin
echo "$fails failed"
[ $fails -eq 0 ]
