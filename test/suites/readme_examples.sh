#!/usr/bin/env bash
# The README's examples run as written: every command line in README.md's
# ```sh blocks, in order, at tiny sizes. out/ and the placeholder files
# (FILE, TEXT, gpt2_124M.bin, alpaca_data.json, imagenet100/, out/ln, ...)
# point into the work folder (a run of 300 steps takes 3: model_00000300.bin
# is then model_00000003.bin); the table below appends the flags that make a run tiny
# (a later flag wins) or says why a command is left out. A command the table
# does not know fails the suite: a new README example needs a line here.
# sanitized: skip the README's command lines as written; every program they call runs under the sanitizers in its own suite
set -uo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}/readme_examples
rm -rf "$work"; mkdir -p "$work"
PY=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
fails=0 ran=0 skipped=0
jpegs=/usr/share/doc/opencv-doc/examples/data

# ---- the placeholders' stand-ins
tiny=d1c8h2v50257t128  # a GPT-2-vocabulary model, tiny
mkdir -p "$work/x" "$work/gcide"  # (bpe_shards and gcide_to_alpaca create no folders)
printf 'In the beginning God created the heaven and the earth.\n' > "$work/FILE"
printf 'A first document.<|endoftext|>And a second one, a little longer.<|endoftext|>' > "$work/TEXT"
for class in fruit scenes; do mkdir -p "$work/imagenet100/$class"; done
cp "$jpegs"/apple.jpg "$jpegs"/orange.jpg "$jpegs"/fruits.jpg "$work/imagenet100/fruit/" &&
    cp "$jpegs"/aero1.jpg "$jpegs"/building.jpg "$jpegs"/home.jpg "$work/imagenet100/scenes/" ||
    { echo "FAIL: sample JPEGs missing in $jpegs (make deps)"; exit 1; }
[ -f data/kjv/kjv_val_000000.bin ] || scripts/prepare_kjv.sh > /dev/null
bin/train_gpt2 -e $tiny -b 1 -t 8 -x 1 -v 0 -o "$work/llmc" > "$work/llmc.log" 2>&1 &&
    cp "$work/llmc/model_00000001.bin" "$work/gpt2_124M.bin" ||
    { cat "$work/llmc.log"; echo "FAIL: making a stand-in for gpt2_124M.bin"; exit 1; }
for mode in ln cbwc; do  # two runs' main.log for plot_runs.py
    bin/train_gpt2 -e $tiny -N $mode -b 1 -t 8 -x 4 -v 2 -m 1 -o "$work/out/$mode" > "$work/$mode.log" 2>&1 ||
        { cat "$work/$mode.log"; echo "FAIL: a $mode run for plot_runs.py"; exit 1; }
done

# rewrite CMD: the command with its paths pointing into the work folder
rewrite() {
    sed -e "s#\bout/#$work/out/#g" -e "s#model_00000300\.bin#model_00000003.bin#g" -e "s#out/sft/model_00000200\.bin#out/sft/model_00000002.bin#g" -e "s#\bFILE\b#$work/FILE#g" -e "s#\bTEXT\b#$work/TEXT#g" \
        -e "s#\bids\.txt\b#$work/ids.txt#g" -e "s#\bgpt2_tokenizer\.bin\b#$work/gpt2_tokenizer.bin#g" \
        -e "s#\bgpt2_124M\.bin\b#$work/gpt2_124M.bin#g" -e "s#\bdata/x/x\b#$work/x/x#g" \
        -e "s#\balpaca_data\.json\b#test/fixtures/alpaca_fixture.json#g" \
        -e "s#\bmy_net\.txt\b#docs/graphs/post_ln.txt#g" -e "s#\bimagenet100/#$work/imagenet100/#g" \
        -e "s#\bdata/in100#$work/in100#g" -e "s#\bdata/gcide/instr\b#$work/gcide/instr#g" \
        -e "s#\bcurves\.png\b#$work/curves.png#g" <<< "$1"
}

# how CMD runs here: "run EXTRA_FLAGS" or "skip REASON" (the README's text, comment removed)
how() {
    local small="-b 1 -t 8 -v 0"
    case $1 in
    "make demo") echo "skip minutes; writes out/demo (scripts/demo.sh: DEMO_STEPS=N shortens it)" ;;
    "make test"|"make check") echo "skip the test suite itself" ;;
    "test/run_tests.sh --list") echo "run" ;;
    "nice test/seed_loop.sh "*) echo "skip an hour: every randomised suite over many seeds" ;;
    "bin/cpu_info") echo "run" ;;
    "test/run_tests.sh "*|"FOLDNORM_TEST_SEED="*) echo "skip runs suites, as make test does" ;;
    "bin/train_gpt2 -h") echo "run" ;;
    "bin/train_gpt2 -N cbwc -e d12 -b 4 -t 64 -o out/d12 -y 1") echo "run -e $tiny $small -x 3" ;;
    "bin/train_gpt2 -N cbwc -e d12 "*) echo "run -e $tiny $small -x 2" ;;
    "bin/train_gpt2 -e gpt2_124M.bin -N ln") echo "run $small -x 1" ;;
    "bin/train_gpt2 -N ln -x 300 -o out/kjv") echo "run -e $tiny $small -x 3" ;;  # model_00000003
    "scripts/vit_fashion.sh") echo "skip minutes: ViT and Swin in 3 modes on all of Fashion-MNIST" ;;
    "bin/train_vit -e swin -N cbwc -K 1 -x 300 -o out/swin") echo "run -x 3 -b 8 -nt 32 -ne 16 -E 16 -A 2,4" ;;
    "bin/train_vit -e vit "*|"bin/train_vit -e swin "*) echo "run -x 2 -b 16 -nt 64 -ne 32" ;;
    "bin/train_vit -e out/swin/folded.bin -ev 1") echo "run -ne 32" ;;
    "bin/images_to_shard -i imagenet100/ "*) echo "run" ;;
    "bin/train_vit -e swin-tiny -i data/in100_train.bin") echo "run -x 1 -b 2" ;;
    "scripts/vit_bench.sh") echo "skip minutes: a benchmark against PyTorch" ;;
    "bin/tokenizer "*|"scripts/prepare_kjv.sh"|"bin/bpe_shards "*|"bin/gcide_to_alpaca "*) echo "run" ;;
    "scripts/prepare_gcide.sh") echo "skip minutes: 16M tokens (suite data_gcide reads GCIDE)" ;;
    "bin/train_gpt2 -i \"data/gcide/"*) echo "skip needs scripts/prepare_gcide.sh's shards" ;;
    "bin/sample "*|"printf "*" | bin/sample "*) echo "run" ;;
    "scripts/finetune_alpaca.sh "*) echo "run -x 2 -v 1 -s 0" ;;
    "bin/test_fold "*/fashion-mnist) echo "run -ne 32" ;;
    "bin/test_fold "*) echo "run -g 10" ;;
    "bin/foldcheck "*|"bin/fold "*|"bin/test_gpt2 "*) echo "run" ;;
    "bin/onnx_export "*) echo "run" ;;
    "/usr/bin/python3 test/zoo_export.py "*) echo "run --image 32" ;;
    "dev/bench/onnx_bench.sh "*) echo "skip minutes: a benchmark (docs/performance.md)" ;;
    "/usr/bin/python3 dev/reference/gpt2.py "*) echo "run" ;;
    "scripts/study.sh "*" quick") echo "skip suite study_quick runs the quick studies" ;;
    "IMAGENET_DIR=imagenet100/train "*) echo "skip days: Swin-Tiny on ImageNet-100, which this machine does not have" ;;
    "scripts/plot_runs.py "*) echo "run" ;;
    *) echo "unknown" ;;
    esac
}

# every command line of the ```sh blocks, its trailing comment removed
commands=$(awk '/^```sh$/ { inside = 1; next } /^```/ { inside = 0 } inside' README.md |
    sed -e 's/[[:space:]]#.*$//' -e 's/[[:space:]]*$//' | grep -v '^#' | grep -v '^$')
while IFS= read -r cmd; do
    verdict=$(how "$cmd")
    case $verdict in
    skip*) skipped=$((skipped + 1)); echo "skip $cmd (${verdict#skip })" ;;
    run*)
        line="$(rewrite "$cmd") ${verdict#run}"
        t0=$SECONDS
        if timeout 600 bash -c "$line" < /dev/null > "$work/out.log" 2>&1; then
            ran=$((ran + 1)); echo "ok   $cmd ($((SECONDS - t0)) s)"
        else
            fails=$((fails + 1)); echo "FAIL $cmd"; echo "     ran: $line"; tail -5 "$work/out.log" | sed 's/^/     /'
        fi ;;
    *) fails=$((fails + 1)); echo "FAIL $cmd: not in readme_examples.sh's table (add how to run it)" ;;
    esac
done <<< "$commands"
echo "readme_examples: $ran ran, $skipped left out, $fails failed"
[ $fails -eq 0 ]
