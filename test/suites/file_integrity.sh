#!/usr/bin/env bash
# tier: check
# Files that survive bit flips, full disks and wrong paths (issue 17):
# - every model, folded model, vision model and training state foldnorm writes
#   carries a CRC32 in header slots 254-255 (checked here with Python's zlib,
#   independently of llmc/core/checksum.c); the same file with the slots zeroed, as
#   llm.c's files are, still loads; a flipped byte is refused naming the file
# - train_gpt2 -y 1 skips a corrupt newest checkpoint, says so, resumes from
#   the newest that verifies and ends bit-identical to the uninterrupted run;
#   with none verifying it stops with a clear error
# - a write that fails (EFBIG from ulimit -f, ENOSPC on a small tmpfs) stops
#   train_gpt2, fold, hf_gpt2 export and train_vit naming the file and the
#   error, removes the .tmp and leaves every earlier file byte-identical
# - a directory or device given as an input file, and an output into a
#   missing or read-only folder or onto a directory, fail cleanly with nothing
#   left behind
# Every error must come without a sanitizer report (make SAN=1).
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/suite_outcome.sh
work=${1:-$(mktemp -d)}/file_integrity
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=1
for p in train_gpt2 text_to_shard fold sample hf_gpt2 train_vit foldcheck bpe_shards images_to_shard; do
    [ -x "bin/$p" ] || make -s "$p" || { echo "FAIL: cannot build $p"; exit 1; }
done
# the tmpfs mounts below go away even if the suite is interrupted
trap 'umount "$work/tmpfs" "$work/readonly" 2> /dev/null' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }
# expect_error NAME PATTERN CMD...: exit status 1 and stderr matching PATTERN
expect_error() {
    local name=$1 pattern=$2; shift 2
    "$@" > "$work/out" 2> "$work/err"
    local rc=$?
    if grep -qE 'Sanitizer|runtime error:' "$work/err"; then
        fail "$name: sanitizer report: $(head -c 300 "$work/err")"
    elif [ $rc -ne 1 ]; then
        fail "$name: exit $rc (expected 1): $(head -c 300 "$work/err")"
    elif ! grep -qE -- "$pattern" "$work/err"; then
        fail "$name: error does not match '$pattern': $(head -c 300 "$work/err")"
    else
        ok "$name: $(head -1 "$work/err" | cut -c1-140)"
    fi
}
# no_leftovers NAME DIR: no *.tmp in DIR
no_leftovers() {
    local left
    left=$(find "$2" -name '*.tmp' 2> /dev/null)
    [ -z "$left" ] || fail "$1: temporary files left: $left"
}
# crc_check FILE...: each carries the CRC32 kind and a right CRC (docs/formats.md)
crc_check() {
    $PY - "$@" <<'EOF'
import struct, sys, zlib
for path in sys.argv[1:]:
    b = bytearray(open(path, "rb").read())
    kind, crc = struct.unpack_from("<iI", b, 1016)
    b[1016:1024] = bytes(8)
    if kind != 0x31435243 or crc != zlib.crc32(b):
        sys.exit(f"{path}: slot 254 = {kind:#x}, slot 255 = {crc:08x}, zlib.crc32 = {zlib.crc32(b):08x}")
EOF
}
# set_bytes FILE OFFSET HEX: overwrite bytes in place
set_bytes() { printf "$(echo "$3" | sed 's/../\\x&/g')" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
flip_byte() { # FILE OFFSET: xor 0x10 into one byte
    $PY -c "import sys; p, o = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, 'rb').read()); b[o] ^= 0x10; open(p, 'wb').write(b)" "$1" "$2"
}

cat llmc/*/*.c > "$work/text.txt"
bin/text_to_shard "$work/text.txt" "$work/src" 0.1 > /dev/null || exit 1
flags=(-N ln -e d2c64h4v256t64 -i "$work/src_train_*.bin" -j "$work/src_val_*.bin" -b 4 -t 32
       -x 6 -n 2 -v 3 -sd 5)
bin/train_gpt2 "${flags[@]}" -o "$work/full" > "$work/full.out" 2>&1 || { echo "FAIL: the full run"; exit 1; }
full=$work/full

# ---- checksums
bin/fold "$full/model_00000006.bin" "$work/folded.bin" > /dev/null || fail "fold"
bin/train_vit -C 16 -L 1 -H 2 -b 10 -x 2 -nt 100 -ne 50 -o "$work/vit" > /dev/null 2>&1 || fail "train_vit"
if msg=$(crc_check "$full/model_00000006.bin" "$full/state_00000006.bin" "$work/folded.bin" \
             "$work/vit/model_00000002.bin" 2>&1); then
    ok "CRC32 in slots 254-255 of a model, a training state, a folded model and a ViT model (zlib.crc32 agrees)"
else
    fail "checksum layout: $msg"
fi
cp "$full/model_00000006.bin" "$work/llmc_style.bin"
set_bytes "$work/llmc_style.bin" 1016 0000000000000000
bin/fold "$work/llmc_style.bin" "$work/folded2.bin" > /dev/null 2> "$work/err" &&
    cmp -s "$work/folded.bin" "$work/folded2.bin" &&
    ok "the model with slots 254-255 zeroed (llm.c's files) loads, unchecked, to the same folded model" ||
    fail "a model without a checksum does not load: $(cat "$work/err")"
cp "$full/model_00000006.bin" "$work/flipped.bin"; flip_byte "$work/flipped.bin" 5000
expect_error "fold: flipped weight byte" "flipped.bin: checksum mismatch: stored [0-9a-f]{8}, computed [0-9a-f]{8}" \
    bin/fold "$work/flipped.bin" "$work/never.bin"
[ -e "$work/never.bin" ] && fail "fold wrote an output from a corrupt model"
cp "$work/vit/model_00000002.bin" "$work/vit_flipped.bin"; flip_byte "$work/vit_flipped.bin" 2000
expect_error "train_vit -e: flipped ViT weight byte" "vit_flipped.bin: checksum mismatch" \
    bin/train_vit -e "$work/vit_flipped.bin" -b 10 -x 1 -nt 100 -ne 50

# ---- -y 1 falls back to the newest checkpoint that verifies
mkdir -p "$work/fallback"
cp "$full"/model_0000000[24].bin "$full"/state_0000000[24].bin "$work/fallback/"
flip_byte "$work/fallback/state_00000004.bin" 3000
bin/train_gpt2 "${flags[@]}" -o "$work/fallback" -y 1 > "$work/fallback.out" 2> "$work/fallback.err"
rc=$?
if [ $rc -eq 0 ] && ! grep -qE 'Sanitizer|runtime error:' "$work/fallback.err" && grep -q "skipping the checkpoint of step 4: .*state_00000004.bin: checksum mismatch" "$work/fallback.err" &&
    grep -q "resuming from step 2, the newest checkpoint .* that verifies" "$work/fallback.err" &&
    cmp -s "$full/model_00000006.bin" "$work/fallback/model_00000006.bin"; then
    ok "-y 1: a corrupt step-4 state is skipped (said on stderr), step 2 resumed, final weights bit-identical"
else
    fail "-y 1 fallback: exit $rc: $(head -c 400 "$work/fallback.err")"
fi
for s in 2 4 6; do flip_byte "$work/fallback/model_0000000$s.bin" 1500; done
expect_error "-y 1 with every checkpoint corrupt" "none of the 3 checkpoints in .*fallback verifies" \
    bin/train_gpt2 "${flags[@]}" -o "$work/fallback" -y 1

# ---- the same for train_vit: checkpoints at steps 1, 2, 3; the newest state damaged
vflags=(-C 16 -L 1 -H 2 -b 10 -nt 100 -ne 50 -sd 3)
bin/train_vit "${vflags[@]}" -x 3 -n 1 -o "$work/vit_full" > /dev/null 2>&1 || fail "train_vit -n 1"
mkdir -p "$work/vit_fallback"
cp "$work/vit_full"/model_0000000[12].bin "$work/vit_full"/state_0000000[12].bin \
   "$work/vit_full/run.txt" "$work/vit_fallback/"
flip_byte "$work/vit_fallback/state_00000002.bin" 300
bin/train_vit "${vflags[@]}" -x 3 -n 1 -o "$work/vit_fallback" -y 1 > /dev/null 2> "$work/vit_fallback.err"
rc=$?
if [ $rc -eq 0 ] && ! grep -qE 'Sanitizer|runtime error:' "$work/vit_fallback.err" &&
    grep -q "skipping the checkpoint of step 2: .*state_00000002.bin: checksum mismatch" "$work/vit_fallback.err" &&
    grep -q "resuming from step 1, the newest checkpoint .* that verifies" "$work/vit_fallback.err" &&
    cmp -s "$work/vit_full/model_00000003.bin" "$work/vit_fallback/model_00000003.bin"; then
    ok "train_vit -y 1: a corrupt step-2 state is skipped (said on stderr), step 1 resumed, final weights bit-identical"
else
    fail "train_vit -y 1 fallback: exit $rc: $(head -c 400 "$work/vit_fallback.err")"
fi
# the resumed run rewrote steps 2 and 3: damage both that are left, drop step 3
rm -f "$work/vit_fallback"/*_00000003.bin
flip_byte "$work/vit_fallback/model_00000001.bin" 1500
flip_byte "$work/vit_fallback/state_00000002.bin" 300
expect_error "train_vit -y 1 with every checkpoint corrupt" "none of the 2 checkpoints in .*vit_fallback verifies" \
    bin/train_vit "${vflags[@]}" -x 3 -n 1 -o "$work/vit_fallback" -y 1

# ---- failed writes: EFBIG (ulimit -f, SIGXFSZ ignored so write returns EFBIG)
snapshot() { (cd "$1" && sha256sum -- *.bin); }
# limited KB CMD...: the command with files capped at KB kilobytes
limited() { (trap '' XFSZ; ulimit -f "$1"; shift; "$@"); }
model_kb=$(( $(stat -c %s "$full/model_00000002.bin") / 1024 ))
for what in model state; do
    d=$work/efbig_$what; mkdir -p "$d"
    cp "$full/model_00000002.bin" "$full/state_00000002.bin" "$d/"
    before=$(snapshot "$d")
    kb=$([ $what = model ] && echo $((model_kb / 2)) || echo $((model_kb + 100)))
    expect_error "EFBIG writing the $what file" "$what"'_00000004.bin: write failed: File too large' \
        limited "$kb" bin/train_gpt2 "${flags[@]}" -o "$d" -y 1
    no_leftovers "EFBIG $what" "$d"
    [ "$(cd "$d" && sha256sum -- model_00000002.bin state_00000002.bin)" = "$before" ] ||
        fail "EFBIG $what: the step-2 checkpoint changed"
done
mkdir -p "$work/efbig_fold"
expect_error "EFBIG in fold" "out.bin: write failed: File too large" \
    limited $((model_kb / 2)) bin/fold "$full/model_00000006.bin" "$work/efbig_fold/out.bin"
[ -z "$(ls -A "$work/efbig_fold")" ] || fail "EFBIG in fold: left $(ls "$work/efbig_fold")"
expect_error "EFBIG in hf_gpt2 export" "model.safetensors: write failed: File too large" \
    limited $((model_kb / 2)) bin/hf_gpt2 export "$full/model_00000006.bin" "$work/efbig_hf"
no_leftovers "EFBIG in hf_gpt2 export" "$work/efbig_hf"
[ -e "$work/efbig_hf/model.safetensors" ] && fail "EFBIG in hf_gpt2 export: model.safetensors written"
expect_error "EFBIG in train_vit -o" "model_00000002.bin: write failed: File too large" \
    limited 10 bin/train_vit -C 16 -L 1 -H 2 -b 10 -x 2 -nt 100 -ne 50 -o "$work/efbig_vit"
no_leftovers "EFBIG in train_vit" "$work/efbig_vit"

# ---- ENOSPC on a real filesystem: a tmpfs with room for one checkpoint
mnt=$work/tmpfs; mkdir -p "$mnt"
ckpt_kb=$(( ($(stat -c %s "$full/model_00000002.bin") + $(stat -c %s "$full/state_00000002.bin")) / 1024 ))
if mount -t tmpfs -o size=$((ckpt_kb + 200))k tmpfs "$mnt" 2> "$work/mount.err"; then
    expect_error "ENOSPC writing the second checkpoint" "model_00000004.bin: write failed: No space left on device" \
        bin/train_gpt2 "${flags[@]}" -o "$mnt/run"
    no_leftovers "ENOSPC" "$mnt"
    cmp -s "$mnt/run/model_00000002.bin" "$full/model_00000002.bin" &&
        cmp -s "$mnt/run/state_00000002.bin" "$full/state_00000002.bin" &&
        ok "ENOSPC: the step-2 checkpoint is intact (equal to the unlimited run's)" ||
        fail "ENOSPC: the step-2 checkpoint differs"
    umount "$mnt" || fail "umount $mnt"
else
    skip_part "ENOSPC on a tmpfs: mount is not permitted here ($(head -c 200 "$work/mount.err"))"
fi

# ---- files that are not files
model=$full/model_00000006.bin
expect_error "foldcheck DIR" "/tmp: is a directory" bin/foldcheck /tmp
expect_error "bpe_shards DIR" "/tmp: is a directory" bin/bpe_shards /tmp "$work/x"
expect_error "text_to_shard DIR" "/tmp: is a directory" bin/text_to_shard /tmp "$work/x" 0.1
expect_error "fold DIR in" "/tmp: is a directory" bin/fold /tmp "$work/x.bin"
expect_error "train_gpt2 -e DIR" "/tmp: is a directory" bin/train_gpt2 -e /tmp -i "$work/src_train_*.bin" -x 1
expect_error "sample -e /dev/null" "/dev/null: is a character device" bin/sample -e /dev/null -p "x" -g 1
expect_error "text_to_shard /dev/zero" "/dev/zero: is a character device" bin/text_to_shard /dev/zero "$work/x" 0.1
expect_error "fold /dev/zero" "/dev/zero: is a character device" bin/fold /dev/zero "$work/x.bin"
mkdir -p "$work/outdir"
expect_error "fold onto a directory" "outdir: cannot write the output there: it is a directory" \
    bin/fold "$model" "$work/outdir"
[ -e "$work/outdir.tmp" ] && fail "fold onto a directory left $work/outdir.tmp"
expect_error "fold into a missing folder" "no_such_dir/x.bin: cannot create the temporary file .*No such file or directory" \
    bin/fold "$model" "$work/no_such_dir/x.bin"
[ -e "$work/no_such_dir" ] && fail "fold into a missing folder created it"
# a special file of our own (never a device: were the check gone, the rename would replace it)
mkfifo "$work/fifo"
expect_error "fold onto a pipe" "fifo: cannot write the output there: it is a special file" \
    bin/fold "$model" "$work/fifo"
[ -p "$work/fifo" ] || fail "fold onto a pipe replaced it"
mkdir -p "$work/jpeg/a"; cp /usr/share/doc/opencv-doc/examples/data/apple.jpg "$work/jpeg/a/"
expect_error "images_to_shard -cl DIR" "/tmp: is a directory" \
    bin/images_to_shard -i "$work/jpeg" -o "$work/i2s" -cs 8 -cl /tmp
ro=$work/readonly; mkdir -p "$ro"
if [ "$(id -u)" -ne 0 ]; then
    chmod 555 "$ro"; ro_ok=1
elif mount -t tmpfs -o ro,size=64k tmpfs "$ro" 2> "$work/mount.err"; then
    ro_ok=1
else
    ro_ok=0; skip_part "read-only folder: root ignores permissions and mount is not permitted ($(head -c 200 "$work/mount.err"))"
fi
if [ $ro_ok = 1 ]; then
    expect_error "fold into a read-only folder" "readonly/x.bin: cannot create the temporary file .*(Read-only file system|Permission denied)" \
        bin/fold "$model" "$ro/x.bin"
    [ -z "$(ls -A "$ro")" ] || fail "fold into a read-only folder left $(ls "$ro")"
    [ "$(id -u)" -ne 0 ] && chmod 755 "$ro" || umount "$ro"
fi
no_leftovers "outputs" "$work"
echo "$fails failed"
suite_exit $fails
