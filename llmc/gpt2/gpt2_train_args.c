// The GPT-2 trainers' flags (gpt2_train_args.h).
#include "gpt2_train_args.h"

#include <stddef.h>
#include <stdio.h>

#include "core/norm_mode.h"
#include "core/schedule.h"
#include "kernels/matmul.h"

// -mp's words are the enum's values in order (CLI_ENUM stores the index)
_Static_assert(MATMUL_FP32 == 0 && MATMUL_BF16 == 1, "-mp: fp32|bf16");
_Static_assert(LR_COSINE == 0 && LR_LINEAR == 1 && LR_CONSTANT == 2 && LR_WSD == 3,
               "-k: " LR_SCHEDULE_WORDS);

#define MAX_INT 2147483647.0
#define MAX_STEPS 1073741824.0 // 2^30

Gpt2TrainArgs gpt2_train_args_defaults(void) {
    return (Gpt2TrainArgs){
        .model = "d4c128h4v50257t256",
        .train_pattern = "data/kjv/kjv_train_*.bin",
        .val_pattern = "data/kjv/kjv_val_*.bin",
        .shuffle = 1,
        .batch_size = 4,
        .seq_len = 64,
        .total_batch_tokens = -1,
        .learning_rate = 3e-4f,
        .lr_schedule = LR_COSINE,
        .final_lr_fraction = 1.0f,
        .wsd_decay_fraction = 0.2f,
        .grad_clip = 1.0f,
        .max_steps = -1,
        .val_every = 20,
        .val_max_steps = 20,
        .seed = 1337,
        .gen_tokens = 64,
        .temperature = 1.0f,
        .vocab_dir = "data/gpt2",
        .zero_stage = 1,
        .norm_mode = -1,
        .matmul_precision = MATMUL_FP32,
        .overlap = 1,
    };
}

int gpt2_train_flags(Gpt2TrainArgs *a, int groups, CliFlag *flags) {
    const CliFlag core[] = {
        NORM_MODE_CLI_FLAGS(&a->norm_mode,
                            "norm mode (default: the model file's, ln for descriptors)"),
        {"-e", CLI_STRING, &a->model, 0, 0,
         "model file (llm.c format) or descriptor d<L>[c<C>h<NH>v<V>t<maxT>]\n"
         "e.g. d12, d2, d4c128h4v50257t256 (default d4c128h4v50257t256 on the CPU,\n"
         "d12 on the GPU)", "model", 0, 0},
        {"-i", CLI_STRING, &a->train_pattern, 0, 0,
         "train token or SFT shards (default data/kjv/kjv_train_*.bin, GPT-2 BPE\n"
         "from scripts/prepare_kjv.sh)", "glob", 0, 0},
        {"-j", CLI_STRING, &a->val_pattern, 0, 0,
         "val token shards (default data/kjv/kjv_val_*.bin)", "glob", 0, 0},
        {"-sh", CLI_INT, &a->shuffle, 0, 1,
         "shuffle train shards and samples every epoch, seeded by -sd (default 1)", NULL, 0, 0},
        {"-o", CLI_STRING, &a->output_dir, 0, 0,
         "output dir for main.log and checkpoints, created with its parents\n"
         "(default: none)", "dir", 0, 0},
        {"-b", CLI_INT, &a->batch_size, 1, 65536, "micro-batch size B (default 4)", NULL, 0, 0},
        {"-t", CLI_INT, &a->seq_len, 1, 1048576,
         "sequence length T <= maxT (default 64 on the CPU, 1024 on the GPU)", NULL, 0, 0},
        {"-d", CLI_INT, &a->total_batch_tokens, 1, MAX_INT,
         "total batch size in tokens, a multiple of B*T*ranks (default B*T*ranks)", NULL, 0, 0},
        {"-l", CLI_FLOAT, &a->learning_rate, 0, 10, "learning rate (default 3e-4)", NULL,
         CLI_OPEN_LO, 0},
        {"-u", CLI_INT, &a->warmup_steps, 0, MAX_STEPS, "warmup steps (default 0)", NULL, 0, 0},
        {"-k", CLI_ENUM, &a->lr_schedule, 0, 0,
         "learning rate schedule after the -u warmup, as llm.c's: cosine or linear\n"
         "decay to -q x -l, constant (no warmup), wsd = warmup, stable, then\n"
         "1 - sqrt decay to -q x -l over the last -kd of the steps (default cosine)",
         LR_SCHEDULE_WORDS, 0, 0},
        {"-q", CLI_FLOAT, &a->final_lr_fraction, 0, 1,
         "final learning rate as a fraction of -l (default 1.0: no decay)", NULL, 0, 0},
        {"-kd", CLI_FLOAT, &a->wsd_decay_fraction, 0, 1,
         "-k wsd: the fraction of the steps that decays (default 0.2, llm.c's)", NULL, 0, 0},
        {"-sl", CLI_FLOAT, &a->skip_loss_z, 0, 1e6,
         "skip an update whose loss z-score over the last 128 steps exceeds this,\n"
         "0 = off (default 0)", NULL, 0, 0},
        {"-sg", CLI_FLOAT, &a->skip_grad_z, 0, 1e6,
         "skip an update whose gradient norm z-score over the last 128 steps\n"
         "exceeds this, 0 = off (default 0)", NULL, 0, 0},
        {"-c", CLI_FLOAT, &a->weight_decay, 0, 10, "weight decay on matrices (default 0.0)", NULL,
         0, 0},
        {"-gc", CLI_FLOAT, &a->grad_clip, 0, 1e6,
         "gradient clipping by global norm, 0 = off (default 1.0)", NULL, 0, 0},
        {"-x", CLI_INT, &a->max_steps, 0, MAX_STEPS,
         "max steps, 0 = evaluate only (default: one epoch of the train shards)", NULL, 0, 0},
        {"-v", CLI_INT, &a->val_every, 0, MAX_STEPS,
         "evaluate every this many steps, 0 = never (default 20)", NULL, 0, 0},
        {"-m", CLI_INT, &a->val_max_steps, 1, MAX_STEPS,
         "max val batches per evaluation (default 20)", NULL, 0, 0},
        {"-a", CLI_INT, &a->overfit_single_batch, 0, 1, "overfit a single batch (default 0)",
         NULL, 0, 0},
        {"-sd", CLI_SEED, &a->seed, 0, 0, "seed for init, shuffling and sampling (default 1337)",
         NULL, 0, 0},
    };
    const CliFlag extras[] = {
        {"-sft", CLI_INT, &a->sft, 0, 1,
         "supervised fine-tuning: -i must be SFT shards, loss on response\n"
         "tokens only (SFT shards are detected anyway) (default 0)", NULL, 0, 0},
        {"-s", CLI_INT, &a->sample_every, 0, MAX_STEPS,
         "sample every this many steps, 0 = never (default 0)", NULL, 0, 0},
        {"-g", CLI_INT, &a->gen_tokens, 1, 1048576, "tokens to generate when sampling (default 64)",
         NULL, 0, 0},
        {"-tk", CLI_INT, &a->top_k, 0, MAX_INT, "sampling top-k, 0 = all (default 0)", NULL, 0,
         0},
        {"-tp", CLI_FLOAT, &a->temperature, 0, 100,
         "sampling temperature, 0 = greedy (default 1.0)", NULL, 0, 0},
        {"-vd", CLI_STRING, &a->vocab_dir, 0, 0,
         "GPT-2 tokenizer files, to print samples as text when V = 50257\n"
         "(default data/gpt2)", "dir", 0, 0},
        {"-n", CLI_INT, &a->checkpoint_every, 0, MAX_STEPS,
         "checkpoint every this many steps, 0 = only at the end (default 0)", NULL, 0, 0},
        {"-nk", CLI_INT, &a->checkpoint_keep, 0, MAX_INT,
         "keep only the newest this many checkpoints, 0 = all (default 0)", NULL, 0, 0},
        {"-y", CLI_INT, &a->resume, 0, 1, "resume from the newest checkpoint in -o (default 0)",
         NULL, 0, 0},
        {"-z", CLI_INT, &a->zero_stage, 0, 1,
         "under mpirun: 1 = ZeRO-1, reduce-scatter the gradients, each rank\n"
         "runs AdamW on its 1/ranks of the parameters, all-gather them;\n"
         "0 = all-reduce, every rank updates all (default 1)", NULL, 0, 0},
    };
    const CliFlag dropout[] = {
        {"-rd", CLI_FLOAT, &a->resid_dropout, 0, 1,
         "residual dropout: train-mode dropout with this probability on the\n"
         "attention and MLP outputs before the residual add (Hugging Face's\n"
         "resid_pdrop), masks from -sd, off in evaluation; makes cbwc differ\n"
         "from ln (docs/math.md section 6) (default 0 = off)", NULL, CLI_OPEN_HI, 0},
        {"-dp", CLI_FLOAT, &a->drop_path, 0, 1,
         "stochastic depth (timm's --drop-path): in training each sample's\n"
         "attention and MLP branch of block l of L is dropped with probability\n"
         "RATE * l / (L - 1), else scaled by 1 / (1 - p); masks from -sd, off in\n"
         "evaluation; keeps cbwc the ln model; not with -rd (default 0 = off)", NULL,
         CLI_OPEN_HI, 0},
    };
    const CliFlag precision[] = {
        {"-mp", CLI_ENUM, &a->matmul_precision, 0, 0,
         "matmul precision: fp32, or bf16 = bf16 inputs with fp32 accumulation,\n"
         "outputs, master weights and AdamW (fp32 norms, attention, softmax,\n"
         "GELU, loss), through oneDNN where the build has it (default fp32)",
         "fp32|bf16", 0, 0},
    };
    const CliFlag overlap[] = {
        {"-ov", CLI_INT, &a->overlap, 0, 1,
         "under mpirun: 1 = reduce each layer's gradients as soon as its\n"
         "backward is done, overlapped with the layers below (non-blocking MPI\n"
         "on a thread of its own); 0 = one reduction after the backward; the\n"
         "same bits with 2 ranks (default 1)", NULL, 0, 0},
    };
    const CliFlag mc[] = {
        {"-mc", CLI_STRING, &a->mc_eval_path, 0, 0,
         "multiple-choice eval file in llm.c's format (its HellaSwag file's;\n"
         "bin/gcide_to_mc): accuracy with every val loss, the completion of\n"
         "lowest mean token loss the answer (llm.c's -h 1) (default: none)", "file", 0, 0},
    };
    int n = 0;
    if (groups & GPT2_FLAGS_CORE) {
        for (int i = 0; i < CLI_COUNT(core); i++) flags[n++] = core[i];
    }
    if (groups & GPT2_FLAGS_EXTRAS) {
        for (int i = 0; i < CLI_COUNT(extras); i++) flags[n++] = extras[i];
    }
    if (groups & GPT2_FLAGS_DROPOUT) {
        for (int i = 0; i < CLI_COUNT(dropout); i++) flags[n++] = dropout[i];
    }
    if (groups & GPT2_FLAGS_PRECISION) {
        for (int i = 0; i < CLI_COUNT(precision); i++) flags[n++] = precision[i];
    }
    if (groups & GPT2_FLAGS_OVERLAP) {
        for (int i = 0; i < CLI_COUNT(overlap); i++) flags[n++] = overlap[i];
    }
    if (groups & GPT2_FLAGS_MC) {
        for (int i = 0; i < CLI_COUNT(mc); i++) flags[n++] = mc[i];
    }
    return n;
}

void gpt2_train_args_check(const CliSpec *spec, const Gpt2TrainArgs *a) {
    if (a->resume && a->output_dir == NULL) {
        cli_error(spec, "-y 1 needs -o, the directory to resume from");
    }
    if (a->resid_dropout > 0.0f && a->drop_path > 0.0f) {
        cli_error(spec, "-rd and -dp: choose one (the block applies one residual mask)");
    }
}

LrSchedule gpt2_train_schedule(const Gpt2TrainArgs *a, int max_steps) {
    return (LrSchedule){.kind = (LrScheduleKind)a->lr_schedule, .max_lr = a->learning_rate,
                        .warmup_steps = a->warmup_steps, .max_steps = max_steps,
                        .final_fraction = a->final_lr_fraction,
                        .decay_fraction = a->wsd_decay_fraction};
}

void gpt2_run_settings(const Gpt2TrainArgs *args, int total_tokens,
                       RunSetting settings[GPT2_RUN_SETTINGS]) {
    // the global batch (-d: tokens a step), not its split into ranks x -b x
    // micro-steps: a resume may split it otherwise (train_progress_cursor)
    static const char *const flags[GPT2_RUN_SETTINGS] = {"-e", "-t", "-d"};
    for (int i = 0; i < GPT2_RUN_SETTINGS; i++) {
        settings[i].flag = flags[i];
    }
    snprintf(settings[0].value, sizeof(settings[0].value), "%s", args->model);
    snprintf(settings[1].value, sizeof(settings[1].value), "%d", args->seq_len);
    snprintf(settings[2].value, sizeof(settings[2].value), "%d", total_tokens);
}
