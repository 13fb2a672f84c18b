#!/usr/bin/env bash
# One command per comparison study of the norm modes (ln, rms, cbwc), each
# run in several seeds, with a CSV summary and PNG curves:
#
#   scripts/study.sh gpt-pretrain quick|full   GPT-2 on the King James Bible:
#       train/val curves, final val loss and tokens/s per mode
#   scripts/study.sh vision quick|full         ViT and Swin on Fashion-MNIST:
#       test accuracy and loss per mode (Swin also with -K 1, the centring ops,
#       and swin_paper: -pv 1, the paper's Swin, cbwc only, NOT the ln model;
#       vit_recipe: ViT under a small Swin-T recipe, swin_recipe on request)
#   scripts/study.sh imagenet quick|full       Swin-Tiny (224x224 RGB) on an
#       ImageNet-style folder (one subfolder of JPEGs per class, e.g.
#       ImageNet-100's train/), converted by images_to_shard: ln, rms, cbwc
#       and the paper's Swin (cbwc -pv 1). quick: Debian opencv-doc's JPEGs
#       in 3 class folders, 2 steps; full: IMAGENET_DIR=FOLDER (required),
#       IMAGENET_VAL_DIR=FOLDER (else 10 % of each class is held out),
#       IMAGENET_EPOCHS (default 100), IMAGENET_RECIPE (1: Swin-T's recipe,
#       the default; 0: crops and flips only)
#   scripts/study.sh sft quick|full            Alpaca fine-tuning on GCIDE
#       records (gcide_to_alpaca, split by headword) from a KJV-pretrained
#       checkpoint per mode, without and with residual dropout (-rd): held-out
#       response loss per mode
#   scripts/study.sh equivalence quick|full     ln vs cbwc (rms the control)
#       trained side by side (bin/equivalence_steps): max relative difference
#       of the logits and every gradient at log-spaced steps, GPT-2, ViT,
#       Swin and Swin -K 1
#   scripts/study.sh speed quick|full          RMS vs LN norm kernels over a grid
#       of rows x C beside the copy bandwidth (bench_norms), the training step
#       per mode (bench_gpt2), folded vs LN inference over T (bench_fold); all
#       ratios from one process each, side by side
#
# quick: seconds (make test runs it, so the runner cannot rot); full: sized
# for this 2-core machine (docs/results.md gives the figures and times).
# Runs go to out/exp/STUDY/ (or $STUDY_OUT): RUN/main.log and RUN/stdout.txt
# per run (RUN = [MODEL_]MODE_seedN), summary.csv, and curves.png drawn by
# scripts/plot_runs.py (mean and min-max band over the seeds).
# (speed: norms.md, step.md, fold.md, the tables as the benchmarks print them,
# and speed.png; nothing is averaged over seeds.)
# Env: STUDY_SEEDS (space-separated seeds), OMP_NUM_THREADS, GCIDE_DICT,
# IMAGENET_DIR, IMAGENET_VAL_DIR, IMAGENET_EPOCHS, IMAGENET_RECIPE, VISION_FAMILIES (vision:
# a subset of "vit vit_recipe swin swin_k1 swin_paper swin_recipe", the
# default all but swin_recipe).
# DEVICE=gpu: gpt-pretrain and sft train with bin/train_gpt2cu, vision and
# imagenet with bin/train_vitcu (make cuda; the same flags, the same runs and
# summaries; equivalence and speed are CPU studies); TRAIN_GPT2CU and
# TRAIN_VITCU name other binaries (e.g. build/emu/train_gpt2fp32cu, emulated).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,46p' "$0" | sed 's/^# \{0,1\}//'; }
[ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] && { usage; exit 0; }
[ $# -eq 2 ] || { usage >&2; exit 1; }
study=$1 preset=$2
case $preset in quick|full) ;; *) echo "study.sh: preset must be quick or full, got '$preset'" >&2; exit 1;; esac
out=${STUDY_OUT:-out/exp/$study}
PY=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# the trainers: the CPU's, or with DEVICE=gpu the GPU's (built here unless named)
device=${DEVICE:-cpu}
case $device in
cpu) train_gpt2=bin/train_gpt2 train_vit=bin/train_vit ;;
gpu)
    case $study in equivalence|speed)
        echo "study.sh: $study is a CPU study (bin/equivalence_steps, the benchmarks): run it without DEVICE=gpu" >&2
        exit 1 ;;
    esac
    train_gpt2=${TRAIN_GPT2CU:-bin/train_gpt2cu} train_vit=${TRAIN_VITCU:-bin/train_vitcu}
    gpu_targets=()
    [ -n "${TRAIN_GPT2CU:-}" ] || gpu_targets+=(train_gpt2cu)
    [ -n "${TRAIN_VITCU:-}" ] || gpu_targets+=(train_vitcu)
    if [ ${#gpu_targets[@]} -gt 0 ]; then
        make -s "${gpu_targets[@]}" > /dev/null ||
            { echo "study.sh: DEVICE=gpu: make ${gpu_targets[*]} failed (needs nvcc: make cuda)" >&2; exit 1; }
    fi
    for b in "$train_gpt2" "$train_vit"; do
        [ -x "$b" ] || { echo "study.sh: DEVICE=gpu: $b is not an executable" >&2; exit 1; }
    done
    ;;
*) echo "study.sh: DEVICE must be cpu or gpu, got '$device'" >&2; exit 1 ;;
esac
make -s train_gpt2 train_vit images_to_shard gcide_to_alpaca gcide_to_mc alpaca_to_sft equivalence_steps bench_norms bench_gpt2 bench_fold > /dev/null
mkdir -p "$out"
commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
t_start=$SECONDS

# run NAME COMMAND...: one run into $out/NAME, its stdout kept (a failure stops the study)
run() {
    local name=$1; shift
    rm -rf "${out:?}/$name"; mkdir -p "$out/$name"
    echo "== $name: $*" | tee -a "$out/commands.txt"
    if ! "$@" -o "$out/$name" > "$out/$name/stdout.txt" 2>&1; then
        tail -5 "$out/$name/stdout.txt"; echo "study.sh: run $name failed" >&2; exit 1
    fi
}
# last_value FILE KEY: the last s:N KEY:VALUE of a main.log
last_value() { grep -oE "^s:[0-9]+ .*\\b$2:[^ ]+" "$1" | tail -1 | sed -E "s/.*\\b$2://"; }
# mc_accuracy RUN ARGS...: the multiple-choice accuracy of RUN's final checkpoint,
# scored once (train_gpt2 -x 0 evaluates a checkpoint and stops; scoring with every
# val loss would take longer than the training at these sizes); ARGS: the run's
# mode and data flags and -mc FILE (-x 0 comes last: the last of a repeated flag wins)
mc_accuracy() {
    local name=$1; shift
    local ckpt; ckpt=$(ls "$out/$name"/model_*.bin | tail -1)
    mkdir -p "$out/$name/mc"
    "$train_gpt2" -e "$ckpt" "$@" -x 0 -o "$out/$name/mc" > "$out/$name/mc/stdout.txt" 2>&1 ||
        { tail -5 "$out/$name/mc/stdout.txt" >&2; echo "study.sh: scoring $name failed" >&2; exit 1; }
    last_value "$out/$name/mc/main.log" eval
}
# median tok/s over the progress lines of a run's stdout
median_rate() {
    grep -oE "[0-9.]+ $2/s" "$1" | awk '{print $1}' | sort -g | awk '{a[NR]=$1} END {print NR ? a[int((NR+1)/2)] : "nan"}'
}

: > "$out/commands.txt"

# vision_runs TRAIN_VIT_ARGS...: bin/train_vit for every mode in $modes and
# seed in $seeds as ${family}_MODE_seedN, a summary.csv row each (top-1 and top-5 test
# accuracy and loss, median images/s, and those of the EMA of the weights,
# nan without -ema, from its final line), the run folders appended to runs
vision_header=model,mode,seed,test_accuracy,test_top5,test_loss,median_images_per_s,test_ema_accuracy,test_ema_top5,test_ema_loss
vision_runs() {
    local mode s name
    for mode in $modes; do
        for s in $seeds; do
            name=${family}_${mode}_seed$s
            run $name "$train_vit" "$@" -N $mode -sd $s
            local ema=$(final_value $name test_ema_accuracy),$(final_value $name test_ema_top5),$(final_value $name test_ema_loss)
            echo "$family,$mode,$s,$(final_value $name test_accuracy),$(final_value $name test_top5),$(final_value $name test_loss),$(final_value $name median_images_per_s),$ema" \
                >> "$out/summary.csv"
            runs+=("$out/$name")
        done
    done
}
# final_value RUN KEY: KEY's value on the 'final:' line of train_vit's output
final_value() { grep '^final:' "$out/$1/stdout.txt" | sed -E "s/.* $2 ([^ ]+).*/\1/"; }

case $study in
gpt-pretrain)
    if [ $preset = quick ]; then # byte-level KJV, a tiny model
        scripts/prepare_kjv_bytes.sh > /dev/null
        data=(-i "data/kjv/kjv_bytes_train_*.bin" -j "data/kjv/kjv_bytes_val_*.bin")
        model=d2c64h4v256t64 flags=(-b 4 -t 64 -x 12 -v 6 -m 2 -l 3e-3 -u 3)
        seeds=${STUDY_SEEDS:-"1 2"}
    else # GPT-2 BPE KJV, the demo's model
        scripts/prepare_kjv.sh > /dev/null
        data=(-i "data/kjv/kjv_train_*.bin" -j "data/kjv/kjv_val_*.bin")
        model=d4c128h4v50257t256 flags=(-b 8 -t 64 -x 600 -v 50 -m 8 -l 1e-3 -u 50)
        seeds=${STUDY_SEEDS:-"1 2 3"}
    fi
    # full: the sft study's GCIDE multiple-choice set (its held-out headwords; the
    # word for its definition among 4 of its part of speech, chance 0.25) scored
    # on each run's final checkpoint (mc_accuracy); the byte-level quick model has no GPT-2 tokens for it,
    # and DEVICE=gpu leaves it out (minutes a run under the emulator): nan; rows
    # within the runs' -t 64 (8 of the 597 held-out headwords are longer)
    mc=()
    if [ $preset = full ] && [ $device = cpu ]; then
        dict=${GCIDE_DICT:-/usr/share/dictd/gcide.dict.dz}
        [ -f "$dict" ] || { echo "study.sh: $dict: no GCIDE dictionary (Debian dict-gcide; GCIDE_DICT=...)" >&2; exit 1; }
        mkdir -p "$out/data"
        bin/gcide_to_mc -nh 6000 -tf 0.1 -t 64 "$dict" "$out/data/gcide_mc.bin" > "$out/data/gcide_mc.txt"
        mc=(-mc "$out/data/gcide_mc.bin")
    fi
    echo "mode,seed,final_train_loss,final_val_loss,final_val_perplexity,median_tok_per_s,final_mc_accuracy" > "$out/summary.csv"
    for mode in ln rms cbwc; do
        for s in $seeds; do
            run ${mode}_seed$s "$train_gpt2" -N $mode -e $model "${data[@]}" "${flags[@]}" -sd $s
            log=$out/${mode}_seed$s/main.log
            accuracy=nan
            if [ ${#mc[@]} -gt 0 ]; then
                accuracy=$(mc_accuracy ${mode}_seed$s -N $mode "${data[@]}" "${flags[@]}" "${mc[@]}") || exit 1
            fi
            echo "$mode,$s,$(last_value "$log" trl),$(last_value "$log" tel),$(last_value "$log" ppl),$(median_rate "$out/${mode}_seed$s/stdout.txt" tok),$accuracy" \
                >> "$out/summary.csv"
        done
    done
    $PY scripts/plot_runs.py "$out"/*_seed* --group --title "gpt-pretrain ($preset, $model, commit $commit)" \
        -o "$out/curves.png" > /dev/null
    ;;
vision)
    if [ $preset = quick ]; then
        common=(-b 32 -x 6 -nt 192 -ne 128 -u 2 -pe 3)
        vit=(-e vit -C 32 -L 2 -H 2) swin=(-e swin -E 16 -D 2,2 -A 1,2)
        seeds=${STUDY_SEEDS:-"1 2"}
    else
        common=(-b 128 -ep 1 -pe 50)
        vit=(-e vit) swin=(-e swin)
        seeds=${STUDY_SEEDS:-"1 2 3"}
    fi
    # vit_recipe, swin_recipe: the same models under a small-scale version of
    # Swin-T's recipe (the imagenet study's, at this study's lr, batch and one
    # epoch): RandAugment, mixup / cutmix, erasing, drop-path 0.1, clip 5 and an
    # EMA of the weights (0.999: a few hundred steps), beside the plain runs
    recipe=(-aa rand-m9-mstd0.5-inc1 -mixup 0.8 -cutmix 1.0 -reprob 0.25 -dp 0.1 -gc 5 -ema 0.999)
    echo "$vision_header" > "$out/summary.csv"
    for family in ${VISION_FAMILIES:-vit vit_recipe swin swin_k1 swin_paper}; do
        modes="ln rms cbwc"
        case $family in
            vit) fam=("${vit[@]}") ;; swin) fam=("${swin[@]}") ;; swin_k1) fam=("${swin[@]}" -K 1) ;;
            vit_recipe) fam=("${vit[@]}" "${recipe[@]}") ;; swin_recipe) fam=("${swin[@]}" "${recipe[@]}") ;;
            # the paper's Swin (every norm RMS, every stream writer CBWC): a cbwc
            # model only, and not the ln model (docs/math.md section 3)
            swin_paper) fam=("${swin[@]}" -pv 1) modes=cbwc ;;
        esac
        runs=()
        vision_runs "${fam[@]}" "${common[@]}"
        title="vision: $family"
        if [ $family = swin_paper ]; then # beside the same Swin's ln and rms runs
            runs+=("$out"/swin_ln_seed* "$out"/swin_rms_seed*)
            title="vision: swin_paper (cbwc -pv 1) beside swin ln, rms"
        fi
        $PY scripts/plot_runs.py "${runs[@]}" --group \
            --title "$title ($preset, commit $commit)" -o "$out/curves_$family.png" > /dev/null
    done
    ;;
imagenet)
    # Swin-Tiny at 224 on JPEG class folders (the paper's ImageNet-100 study
    # where a user has the data); the shards keep 256-pixel sides and
    # train_vit takes random-resized 224 crops and flips
    if [ $preset = quick ]; then
        src=${IMAGENET_DIR:-}
        if [ -z "$src" ]; then # real JPEGs from Debian's opencv-doc, 3 classes
            jpegs=/usr/share/doc/opencv-doc/examples/data
            [ -f "$jpegs/left01.jpg" ] ||
                { echo "study.sh: $jpegs: no sample JPEGs (Debian opencv-doc; or IMAGENET_DIR=...)" >&2; exit 1; }
            src=$out/jpeg
            rm -rf "$src"; mkdir -p "$src/chessboard" "$src/produce" "$src/scenes"
            cp "$jpegs"/left0[1-9].jpg "$src/chessboard/"
            cp "$jpegs"/apple.jpg "$jpegs"/orange.jpg "$jpegs"/fruits.jpg "$jpegs"/baboon.jpg "$jpegs"/butterfly.jpg "$src/produce/"
            cp "$jpegs"/aero1.jpg "$jpegs"/aero3.jpg "$jpegs"/building.jpg "$jpegs"/home.jpg "$jpegs"/board.jpg "$src/scenes/"
        fi
        common=(-b 4 -x 2 -u 1 -pe 1)
        seeds=${STUDY_SEEDS:-"1"}
    else
        src=${IMAGENET_DIR:-}
        [ -n "$src" ] || { echo "study.sh: imagenet full needs IMAGENET_DIR=FOLDER (one subfolder of JPEGs per class)" >&2; exit 1; }
        common=(-b 128 -ep "${IMAGENET_EPOCHS:-100}" -pe 50 -nk 1)
        seeds=${STUDY_SEEDS:-"1 2 3"}
    fi
    # Swin-T's training recipe (Liu et al. 2021, timm's train.py; docs/results.md
    # lists each choice beside the paper's table), lr scaled linearly from its
    # 1e-3 at batch 1024 and the warmup from its 20 of 300 epochs;
    # IMAGENET_RECIPE=0: crops and flips only
    recipe=()
    if [ $preset = full ] && [ "${IMAGENET_RECIPE:-1}" = 1 ]; then
        recipe=(-l 1.25e-4 -q 0.005 -c 0.05 -gc 5 -ls 0.1 -dp 0.2 -aa rand-m9-mstd0.5-inc1
                -mixup 0.8 -cutmix 1.0 -reprob 0.25)
    fi
    [ -d "$src" ] || { echo "study.sh: $src: not a folder" >&2; exit 1; }
    shards=$out/shards/in
    if [ -n "${IMAGENET_VAL_DIR:-}" ]; then # a separate validation folder: every image of it
        bin/images_to_shard -i "$src" -o "$shards" -cs 224 -vf 0 > "$out/convert.txt"
        bin/images_to_shard -i "$IMAGENET_VAL_DIR" -o "$out/shards/val" -cl "${shards}_classes.txt" -cs 224 -vf 0 \
            >> "$out/convert.txt"
        val=$out/shards/val_train.bin
    else
        bin/images_to_shard -i "$src" -o "$shards" -cs 224 -vf "$([ $preset = quick ] && echo 0.3 || echo 0.1)" \
            > "$out/convert.txt"
        val=${shards}_val.bin
    fi
    if [ ${#recipe[@]} -gt 0 ]; then # warmup: 20 of Swin's 300 epochs, in steps of B=128
        n_train=$(sed -n 's/^wrote .*_train\.bin: \([0-9]*\) images.*/\1/p' "$out/convert.txt" | head -1)
        [ -n "$n_train" ] || { echo "study.sh: $out/convert.txt: no train image count" >&2; exit 1; }
        recipe+=(-u $(( (n_train / 128) * ${IMAGENET_EPOCHS:-100} * 20 / 300 )))
    fi
    echo "$vision_header" > "$out/summary.csv"
    for family in swin_tiny swin_tiny_paper; do
        modes="ln rms cbwc" fam=(-e swin-tiny)
        [ $family = swin_tiny_paper ] && modes=cbwc fam=(-e swin-tiny -pv 1)
        runs=()
        vision_runs "${fam[@]}" -i "${shards}_train.bin" -j "$val" "${common[@]}" "${recipe[@]}"
        [ $family = swin_tiny_paper ] && runs+=("$out"/swin_tiny_ln_seed* "$out"/swin_tiny_rms_seed*)
        $PY scripts/plot_runs.py "${runs[@]}" --group \
            --title "imagenet: $family ($preset, commit $commit)" -o "$out/curves_$family.png" > /dev/null
    done
    ;;
sft)
    # pretrain one checkpoint per mode on the KJV (GPT-2 BPE), then fine-tune
    # it on GCIDE Alpaca records, loss on response tokens only; the val loss
    # (tel) is on the held-out headwords' records
    dict=${GCIDE_DICT:-/usr/share/dictd/gcide.dict.dz}
    [ -f "$dict" ] || { echo "study.sh: $dict: no GCIDE dictionary (Debian dict-gcide; GCIDE_DICT=...)" >&2; exit 1; }
    scripts/prepare_kjv.sh > /dev/null
    if [ $preset = quick ]; then
        headwords=300 T=128 model=d1c32h2v50257t128
        pre=(-b 2 -t 64 -x 3 -l 3e-3)
        ft=(-b 2 -t $T -x 4 -v 2 -m 1 -l 1e-3)
        seeds=${STUDY_SEEDS:-"1"}
    else
        headwords=6000 T=128 model=d4c128h4v50257t128
        pre=(-b 8 -t 64 -x 300 -l 1e-3 -u 30)
        ft=(-b 8 -t $T -x 150 -v 25 -m 8 -l 3e-4 -u 15)
        seeds=${STUDY_SEEDS:-"1 2 3"}
    fi
    dropout=0.1 # Hugging Face GPT-2's resid_pdrop
    mkdir -p "$out/data"
    bin/gcide_to_alpaca -nh $headwords -tf 0.1 "$dict" "$out/data/gcide" | tee "$out/data/gcide.txt"
    # the multiple-choice set of the held-out headwords (pick the word for its definition
    # among 4 of its part of speech; chance 0.25), scored on each run's final checkpoint;
    # the 3 others also held out (-dh 1): the fine-tuning has seen the train headwords,
    # and a familiar word's lower loss would pull the answers to it (docs/results.md)
    # (mc_accuracy: the CPU trainer's -mc; DEVICE=gpu runs leave its column nan: train_gpt2cu takes -mc, but
    # scoring the set under the emulator takes minutes a run)
    mc=()
    if [ $device = cpu ]; then
        bin/gcide_to_mc -nh $headwords -tf 0.1 -dh 1 -t $T "$dict" "$out/data/gcide_mc.bin" | tee -a "$out/data/gcide.txt"
        mc=(-mc "$out/data/gcide_mc.bin")
    fi
    # records longer than the context are left out (alpaca_to_sft -sk 1 counts them)
    for split in train test; do
        bin/alpaca_to_sft -sk 1 -t $T "$out/data/gcide_$split.json" "$out/data/sft_$split" 0 |
            grep -E 'left out|records' | tee -a "$out/data/gcide.txt"
    done
    echo "mode,resid_dropout,seed,final_train_loss,final_test_response_loss,best_test_response_loss,final_test_response_perplexity,best_test_response_perplexity,final_mc_accuracy" \
        > "$out/summary.csv"
    for mode in ln rms cbwc; do
        run pretrain_$mode "$train_gpt2" -N $mode -e $model -i "data/kjv/kjv_train_*.bin" -v 0 \
            "${pre[@]}" -sd 1
        ckpt=$(ls "$out/pretrain_$mode"/model_*.bin | tail -1)
        for rd in 0 $dropout; do
            for s in $seeds; do
                name=${mode}_rd${rd}_seed$s
                run $name "$train_gpt2" -N $mode -e "$ckpt" -sft 1 -i "$out/data/sft_train_train_*.bin" \
                    -j "$out/data/sft_test_train_*.bin" "${ft[@]}" -rd $rd -sd $s
                log=$out/$name/main.log
                # the line of the lowest held-out loss: "s:N tel:LOSS ppl:PERPLEXITY"
                best=$(grep -oE '^s:[0-9]+ tel:[^ ]+ ppl:[^ ]+' "$log" | sort -t: -k3 -g | head -1)
                best_loss=$(echo "$best" | sed -E 's/.*tel:([^ ]+).*/\1/') best_ppl=${best##*ppl:}
                accuracy=nan
                if [ ${#mc[@]} -gt 0 ]; then
                    accuracy=$(mc_accuracy $name -N $mode -sft 1 -i "$out/data/sft_train_train_*.bin" \
                        -j "$out/data/sft_test_train_*.bin" "${ft[@]}" "${mc[@]}") || exit 1
                fi
                echo "$mode,$rd,$s,$(last_value "$log" trl),$(last_value "$log" tel),$best_loss,$(last_value "$log" ppl),$best_ppl,$accuracy" \
                    >> "$out/summary.csv"
            done
        done
    done
    for rd in 0 $dropout; do
        $PY scripts/plot_runs.py "$out"/*_rd${rd}_seed* --group \
            --title "sft on GCIDE, residual dropout $rd ($preset, $model, commit $commit)" \
            -o "$out/curves_rd$rd.png" > /dev/null
    done
    ;;
equivalence)
    # steps per family: GPT-2 and ViT are cheap, Swin (4 models side by side) is not
    if [ $preset = quick ]; then
        steps=(gpt2:12 vit:12 swin:3 swin-k1:3)
    else
        steps=(gpt2:1000 vit:1000 swin:300 swin-k1:300)
    fi
    for fs in "${steps[@]}"; do
        family=${fs%%:*}
        echo "== $family: bin/equivalence_steps -e $family -x ${fs#*:} -sd 1" | tee -a "$out/commands.txt"
        bin/equivalence_steps -e $family -x ${fs#*:} -sd 1 > "$out/$family.csv.tmp" ||
            { echo "study.sh: equivalence_steps -e $family failed" >&2; exit 1; }
        mv "$out/$family.csv.tmp" "$out/$family.csv"
    done
    { head -1 "$out/gpt2.csv"; for fs in "${steps[@]}"; do tail -n +2 "$out/${fs%%:*}.csv"; done; } \
        > "$out/diffs.csv"
    # summary: per family, the largest cbwc-vs-ln and smallest rms-vs-ln
    # difference over every step and tensor (logits and gradients; the loss
    # apart), and the largest logits difference of ln started one ulp away
    echo "family,steps,max_cbwc_vs_ln,min_rms_vs_ln,max_loss_cbwc_vs_ln,max_logits_nudged_vs_ln" > "$out/summary.csv"
    awk -F, 'NR > 1 { f = $1; if (!(f in w)) { w[f] = 0; c[f] = 1e30; l[f] = 0; u[f] = 0; order[++n] = f }
             s[f] = $2 > s[f] ? $2 : s[f]
             if ($3 == "loss") { l[f] = $4 > l[f] ? $4 : l[f] }
             else { w[f] = $4 > w[f] ? $4 : w[f]; c[f] = $5 < c[f] ? $5 : c[f] }
             if ($3 == "logits") { u[f] = $6 > u[f] ? $6 : u[f] } }
         END { for (i = 1; i <= n; i++) { f = order[i]; printf "%s,%d,%.3e,%.3e,%.3e,%.3e\n", f, s[f], w[f], c[f], l[f], u[f] } }' \
        "$out/diffs.csv" >> "$out/summary.csv"
    $PY scripts/plot_equivalence.py "$out/diffs.csv" \
        --title "ln vs cbwc over training, rms the control ($preset, commit $commit)" \
        -o "$out/curves.png" > /dev/null
    ;;
speed)
    # ratios are measured side by side inside one process per benchmark (the
    # copy, LN and RMS in one rotation; the modes of one step in one round);
    # a busy machine shows as spread, not as a bias between the columns
    if [ $preset = quick ]; then
        norm_shapes=("256 64" "512 128") norm_reps=(-r 5 -w 1)
        step_models=("d2c64h4v256t64 4 64") step_reps=(-r 2 -w 1)
        fold=(-e d2c64h4v256t256 -b "1 2" -t "64 256" -r 3 -w 1 -tb 5)
    else
        norm_shapes=("1024 256" "1024 768" "1024 1600" "4096 256" "4096 768" "4096 1600"
                     "16384 256" "16384 768" "16384 1600")
        norm_reps=(-r 50 -w 5)
        step_models=("d4c128h4v50257t256 8 64" "d12 4 64") step_reps=(-r 6 -w 1)
        fold=(-e d4c256h4v256t4096 -b "1 8" -t "64 256 1024 4096" -r 7 -w 1 -tb 60)
    fi
    # bench ARGS... > FILE.md, the command recorded
    bench() {
        local file=$1; shift
        echo "== $*" | tee -a "$out/commands.txt"
        if ! "$@" >> "$out/$file"; then echo "study.sh: $* failed" >&2; exit 1; fi
        echo >> "$out/$file"
    }
    : > "$out/norms.md"; : > "$out/step.md"; : > "$out/fold.md"
    for shape in "${norm_shapes[@]}"; do
        set -- $shape
        bench norms.md bin/bench_norms -nr $1 -C $2 "${norm_reps[@]}"
    done
    for m in "${step_models[@]}"; do
        set -- $m
        bench step.md bin/bench_gpt2 -e $1 -b $2 -t $3 "${step_reps[@]}"
    done
    bench fold.md bin/bench_fold "${fold[@]}"
    # summary.csv: one row per comparison, ln the baseline; speedup = ln / other
    echo "part,config,ln,other_mode,other,unit,speedup" > "$out/summary.csv"
    awk -F'|' '/^\| [0-9]+ x [0-9]+ \| (LN|RMS|copy)/ {
            shape = $2; gsub(/^ +| +$/, "", shape); gsub(/ /, "", shape); k = $3; gsub(/^ +| +$/, "", k)
            t[shape, k] = $4 + 0; g[shape, k] = $6 + 0; if (!(shape in seen)) { seen[shape] = 1; order[++n] = shape } }
        END { for (i = 1; i <= n; i++) { s = order[i]
                  for (j = 1; j <= 3; j++) { op = j == 1 ? "fwd" : j == 2 ? "bwd" : "fwd+bwd"
                      a = t[s, "LN " op]; b = t[s, "RMS " op]
                      printf "norm %s,%s,%.2f,rms,%.2f,us,%.4f\n", op, s, a, b, a / b }
                  c = g[s, "copy (OpenMP)"]  # the bandwidth the kernels are measured against
                  printf "copy,%s,%.2f,copy,%.2f,GB/s,1\n", s, c, c } }' "$out/norms.md" >> "$out/summary.csv"
    awk -F'|' '/^bench_gpt2:/ { model = $0; sub(/^bench_gpt2: /, "", model); sub(/ \(.*\), B=/, " B=", model)
                                sub(/, [0-9]+ threads.*/, "", model); gsub(/,/, "", model) }
        /^\| (ln|rms|cbwc) \|/ { m = $2; gsub(/ /, "", m); ms[m] = $6 + 0
            if (m == "cbwc") for (k = 1; k <= 2; k++) { o = k == 1 ? "rms" : "cbwc"
                printf "train step,%s,%.2f,%s,%.2f,ms,%.4f\n", model, ms["ln"], o, ms[o], ms["ln"] / ms[o] } }' \
        "$out/step.md" >> "$out/summary.csv"
    awk -F'|' '/^\| [0-9]+ \| [0-9]+ \| [0-9]+ \|/ {
            printf "inference,B=%d T=%d,%.3f,folded,%.3f,ms,%.4f\n", $2, $3, $5, $6, $5 / $6 }' \
        "$out/fold.md" >> "$out/summary.csv"
    $PY scripts/plot_speed.py "$out/summary.csv" --title "speed ($preset, commit $commit)" \
        -o "$out/speed.png" > /dev/null
    ;;
*)
    echo "study.sh: unknown study '$study' (gpt-pretrain, vision, imagenet, sft, equivalence, speed)" >&2; exit 1 ;;
esac
rows=$(($(wc -l < "$out/summary.csv") - 1))
echo "study $study ($preset$([ $device = gpu ] && echo ", DEVICE=gpu: $train_gpt2, $train_vit"))" \
    "at commit $commit: $((SECONDS - t_start)) s, $rows $([ $study = speed ] && echo comparisons || echo runs)"
column -s, -t < "$out/summary.csv"
