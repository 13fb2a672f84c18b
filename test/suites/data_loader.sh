#!/usr/bin/env bash
# Data loader (test_dataloader): every token once per epoch, seeded order,
# rank slices, save/restore, SFT masks; then bad shards through train_gpt2:
# wrong magic, truncated plain and SFT shards, a bad mask byte, mixed kinds,
# too short for one batch: clear error naming the file, non-zero exit.
# tier: check
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/data_loader
rm -rf "$work"; mkdir -p "$work"
seed=${FOLDNORM_TEST_SEED:-$RANDOM}
echo "seed $seed"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
bin/test_dataloader "$work" "$seed" || fail "test_dataloader"

/usr/bin/python3 - "$work" <<'PY'
import struct, sys
w = sys.argv[1]
def shard(path, n, magic=20240520, version=1, count=None, mask=None, cut=0):
    data = struct.pack("<256i", magic, version, n if count is None else count, *([0] * 253))
    data += struct.pack(f"<{n}H", *[i % 200 for i in range(n)])
    if mask is not None:
        data += bytes(mask)
    open(path, "wb").write(data[:len(data) - cut])
shard(f"{w}/good.bin", 600)
shard(f"{w}/magic.bin", 600, magic=20240521)
shard(f"{w}/version.bin", 600, version=2)
shard(f"{w}/trunc.bin", 600, cut=7)
shard(f"{w}/sft_trunc.bin", 600, magic=20241202, mask=[1] * 600, cut=100)
shard(f"{w}/sft_badmask.bin", 600, magic=20241202, mask=[1] * 599 + [2])
shard(f"{w}/sft_short.bin", 60, magic=20241202, mask=[1] * 60)
shard(f"{w}/mix_0.bin", 600)
shard(f"{w}/mix_1.bin", 600, magic=20241202, mask=[0, 1] * 300)
PY
expect_error() { # NAME PATTERN SHARDS
    local out; out=$(bin/train_gpt2 -e d1c32h2v256t64 -i "$3" -v 0 -x 1 -b 2 -t 32 2>&1); local rc=$?
    if [ $rc -ne 0 ] && echo "$out" | grep -qE "$2"; then echo "ok   $1: $(echo "$out" | tail -1)"
    else fail "$1: rc $rc, output: $out"; fi
}
bin/train_gpt2 -e d1c32h2v256t64 -i "$work/good.bin" -v 0 -x 1 -b 2 -t 32 > /dev/null 2>&1 || fail "good shard rejected"
expect_error wrong_magic "magic.bin: not a token shard \(magic 20240521" "$work/magic.bin"
expect_error wrong_version "version.bin: shard version 2" "$work/version.bin"
expect_error truncated "trunc.bin: .*truncated" "$work/trunc.bin"
expect_error sft_truncated "sft_trunc.bin: .*truncated" "$work/sft_trunc.bin"
expect_error sft_bad_mask "sft_badmask.bin: loss mask 2 at position 599" "$work/sft_badmask.bin"
expect_error too_short "sft_short.bin: shard holds 60 tokens, fewer than the 65" "$work/sft_short.bin"
expect_error mixed_kinds "mix_1.bin: an SFT shard among plain token shards" "$work/mix_*.bin"
expect_error no_match "no token shard matches" "$work/nothing_*.bin"
echo "$fails failed"
[ $fails -eq 0 ]
