// GPT-2 training on an NVIDIA GPU in the three norm modes (ln, rms, cbwc):
// the CUDA counterpart of train_gpt2.c with the same flags (no -sft, -vd:
// samples print as token ids). bf16 mixed precision by default, fp32
// throughout when built with -DFOLDNORM_FP32 (make train_gpt2fp32cu). The
// model and its kernels live in llmc/*.cuh; model files, checkpoints (the
// same model_STEP.bin + state_STEP.bin as train_gpt2.c, so a run moves
// between CPU and GPU), data loader, sampler and learning-rate schedule are
// the CPU trainer's (libllmc).
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpt2_cuda.cuh"
#include "grad_sync.cuh"
#include "multi_gpu.cuh"

extern "C" {
#include "checkpoint.h"
#include "dataloader.h"
#include "logger.h"
#include "rand.h"
#include "sampler.h"
#include "schedule.h"
#include "tokenizer.h" // GPT2_EOT_TOKEN only: the tokenizer is not linked
}

typedef struct {
    const char *train_pattern;
    const char *val_pattern;
    const char *model;
    const char *output_dir;
    const char *norm_mode;
    int batch_size;
    int seq_len;
    int total_batch_tokens;
    float learning_rate;
    int warmup_steps;
    float final_lr_fraction;
    float weight_decay;
    float grad_clip;
    int max_steps;
    int val_every;
    int val_max_steps;
    int overfit_single_batch;
    int shuffle;
    int inference_passes; // > 0: time this many forward passes on random tokens, no training
    int num_processes;    // -pn: 0 = from mpirun's environment, else 1
    int process_rank;     // -pr
    const char *id_file;  // -pf: shared file for the NCCL unique id
    unsigned long long seed;
    // checkpoints, sampling, ZeRO-1: train_gpt2.c's flags (parse_checkpoint_sampling_flag)
    int sample_every;
    int gen_tokens;
    int top_k;
    float temperature;
    int checkpoint_every;
    int checkpoint_keep;
    int resume;
    int zero_stage; // 1: ZeRO-1 sharded AdamW over the ranks, 0: all-reduce
} TrainArgs;

static void usage(void) {
    fprintf(stderr,
            "usage: train_gpt2cu [options]   (%s build)\n"
            "  -N <mode>   norm mode: ln | rms | cbwc (default: the model file's, ln for descriptors)\n"
            "  -e <model>  model file (llm.c format) or descriptor d<L>[c<C>h<NH>v<V>t<maxT>]\n"
            "              (default d12: GPT-2 124M)\n"
            "  -i <glob>   train token shards (default data/kjv/kjv_train_*.bin)\n"
            "  -j <glob>   val token shards (default data/kjv/kjv_val_*.bin)\n"
            "  -o <dir>    output dir for main.log and checkpoints (default: none)\n"
            "  -b <int>    micro-batch size B (default 4)\n"
            "  -t <int>    sequence length T <= maxT (default 1024)\n"
            "  -d <int>    total batch size in tokens, a multiple of B*T (default B*T)\n"
            "  -l <float>  learning rate (default 3e-4)\n"
            "  -u <int>    warmup steps (default 0)\n"
            "  -q <float>  final learning rate fraction, cosine decay (default 1.0)\n"
            "  -c <float>  weight decay on matrices (default 0.0)\n"
            "  -gc <float> gradient clipping by global norm, 0 = off (default 1.0)\n"
            "  -x <int>    max steps (default: one epoch)\n"
            "  -v <int>    evaluate every this many steps, 0 = never (default 20)\n"
            "  -m <int>    max val batches per evaluation (default 20)\n"
            "  -a <0|1>    overfit a single batch (default 0)\n"
            "  -sh <0|1>   shuffle train shards and samples every epoch (default 1)\n"
            "  -sd <int>   seed for init and shuffling (default 1337)\n"
            "  -pn <int>   data parallel: number of processes, one GPU each (default: mpirun's\n"
            "              environment, else 1)\n"
            "  -pr <int>   this process's rank, 0 .. pn-1 (with -pn)\n"
            "  -pf <file>  shared file through which rank 0 hands the NCCL id to the others;\n"
            "              must not exist at launch, rank 0 removes it once all have joined\n"
            "  -inf <int>  inference benchmark: time this many forward passes (B, T) on random\n"
            "              tokens, no data, no training (default 0 = train)\n"
            "  -s <int>    sample every this many steps, 0 = never (default 0)\n"
            "  -g <int>    tokens to generate when sampling (default 64)\n"
            "  -tk <int>   sampling top-k, 0 = all (default 0)\n"
            "  -tp <float> sampling temperature (default 1.0)\n"
            "  -n <int>    checkpoint every this many steps, 0 = only at the end (default 0)\n"
            "  -nk <int>   keep only the newest this many checkpoints, 0 = all (default 0)\n"
            "  -y <0|1>    resume from the newest checkpoint in -o (train_gpt2's or ours)\n"
            "              (default 0)\n"
            "  -z <0|1>    with several processes: 1 = ZeRO-1, reduce-scatter the gradients,\n"
            "              each rank runs AdamW on its 1/ranks of the parameters, all-gather\n"
            "              them; 0 = all-reduce, every rank updates all (default 1)\n"
            "  -h          this help\n",
            FLOATX_NAME);
}

// The flags of checkpoints, sampling and ZeRO-1 (train_gpt2.c's letters);
// 1 if f is one of them.
static int parse_checkpoint_sampling_flag(TrainArgs *a, const char *f, const char *v);

static int parse_int_flag(const char *flag, const char *value) {
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno != 0 || *end != '\0' || v < -2147483647L || v > 2147483647L) {
        fatal("%s: expected an integer, got '%s'", flag, value);
    }
    return (int)v;
}

static float parse_float_flag(const char *flag, const char *value) {
    char *end;
    errno = 0;
    float v = strtof(value, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v)) {
        fatal("%s: expected a number, got '%s'", flag, value);
    }
    return v;
}

static TrainArgs parse_args(int argc, char **argv) {
    TrainArgs a;
    memset(&a, 0, sizeof(a));
    a.train_pattern = "data/kjv/kjv_train_*.bin";
    a.val_pattern = "data/kjv/kjv_val_*.bin";
    a.model = "d12";
    a.batch_size = 4;
    a.seq_len = 1024;
    a.total_batch_tokens = -1;
    a.learning_rate = 3e-4f;
    a.final_lr_fraction = 1.0f;
    a.grad_clip = 1.0f;
    a.max_steps = -1;
    a.val_every = 20;
    a.val_max_steps = 20;
    a.shuffle = 1;
    a.seed = 1337;
    a.gen_tokens = 64;
    a.temperature = 1.0f;
    a.zero_stage = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *f = argv[i];
        if (strcmp(f, "-h") == 0 || strcmp(f, "--help") == 0) {
            usage();
            exit(EXIT_SUCCESS);
        }
        if (f[0] != '-' || f[1] == '\0') {
            usage();
            fatal("unexpected argument '%s'", f);
        }
        if (i + 1 >= argc) fatal("%s: missing value", f);
        const char *v = argv[i + 1];
        if (strcmp(f, "-N") == 0) a.norm_mode = v;
        else if (strcmp(f, "-e") == 0) a.model = v;
        else if (strcmp(f, "-i") == 0) a.train_pattern = v;
        else if (strcmp(f, "-j") == 0) a.val_pattern = v;
        else if (strcmp(f, "-o") == 0) a.output_dir = v;
        else if (strcmp(f, "-b") == 0) a.batch_size = parse_int_flag(f, v);
        else if (strcmp(f, "-t") == 0) a.seq_len = parse_int_flag(f, v);
        else if (strcmp(f, "-d") == 0) a.total_batch_tokens = parse_int_flag(f, v);
        else if (strcmp(f, "-l") == 0) a.learning_rate = parse_float_flag(f, v);
        else if (strcmp(f, "-u") == 0) a.warmup_steps = parse_int_flag(f, v);
        else if (strcmp(f, "-q") == 0) a.final_lr_fraction = parse_float_flag(f, v);
        else if (strcmp(f, "-c") == 0) a.weight_decay = parse_float_flag(f, v);
        else if (strcmp(f, "-gc") == 0) a.grad_clip = parse_float_flag(f, v);
        else if (strcmp(f, "-x") == 0) a.max_steps = parse_int_flag(f, v);
        else if (strcmp(f, "-v") == 0) a.val_every = parse_int_flag(f, v);
        else if (strcmp(f, "-m") == 0) a.val_max_steps = parse_int_flag(f, v);
        else if (strcmp(f, "-a") == 0) a.overfit_single_batch = parse_int_flag(f, v);
        else if (strcmp(f, "-sh") == 0) a.shuffle = parse_int_flag(f, v);
        else if (strcmp(f, "-sd") == 0) a.seed = (unsigned long long)parse_int_flag(f, v);
        else if (strcmp(f, "-inf") == 0) a.inference_passes = parse_int_flag(f, v);
        else if (strcmp(f, "-pn") == 0) a.num_processes = parse_int_flag(f, v);
        else if (strcmp(f, "-pr") == 0) a.process_rank = parse_int_flag(f, v);
        else if (strcmp(f, "-pf") == 0) a.id_file = v;
        else if (parse_checkpoint_sampling_flag(&a, f, v)) continue;
        else {
            usage();
            fatal("unknown flag '%s'", f);
        }
    }
    if (a.batch_size <= 0) fatal("-b: batch size must be positive, got %d", a.batch_size);
    if (a.seq_len <= 0) fatal("-t: sequence length must be positive, got %d", a.seq_len);
    if (a.val_every < 0 || a.val_max_steps < 0 || a.warmup_steps < 0) {
        fatal("-v, -m and -u take values >= 0");
    }
    if (a.learning_rate <= 0.0f) fatal("-l: learning rate must be positive");
    if (a.num_processes < 0 || a.process_rank < 0 ||
        (a.num_processes > 0 && a.process_rank >= a.num_processes)) {
        fatal("-pn %d -pr %d: need pn >= 1 and 0 <= pr < pn", a.num_processes, a.process_rank);
    }
    if (a.inference_passes < 0) fatal("-inf: expected a count >= 0, got %d", a.inference_passes);
    if (a.sample_every < 0 || a.gen_tokens < 0 || a.checkpoint_every < 0 ||
        a.checkpoint_keep < 0) {
        fatal("-s, -g, -n and -nk take values >= 0");
    }
    if (a.resume && a.output_dir == NULL) fatal("-y 1 needs -o, the directory to resume from");
    if (a.zero_stage != 0 && a.zero_stage != 1) fatal("-z: expected 0 or 1, got %d", a.zero_stage);
    return a;
}

static int parse_checkpoint_sampling_flag(TrainArgs *a, const char *f, const char *v) {
    if (strcmp(f, "-s") == 0) a->sample_every = parse_int_flag(f, v);
    else if (strcmp(f, "-g") == 0) a->gen_tokens = parse_int_flag(f, v);
    else if (strcmp(f, "-tk") == 0) a->top_k = parse_int_flag(f, v);
    else if (strcmp(f, "-tp") == 0) a->temperature = parse_float_flag(f, v);
    else if (strcmp(f, "-n") == 0) a->checkpoint_every = parse_int_flag(f, v);
    else if (strcmp(f, "-nk") == 0) a->checkpoint_keep = parse_int_flag(f, v);
    else if (strcmp(f, "-y") == 0) a->resume = parse_int_flag(f, v);
    else if (strcmp(f, "-z") == 0) a->zero_stage = parse_int_flag(f, v);
    else return 0;
    return 1;
}

static void setup_host_model(GPT2 *model, const TrainArgs *args) {
    NormMode mode = MODE_LN;
    if (args->norm_mode != NULL && norm_mode_parse(args->norm_mode, &mode) != 0) {
        fatal("-N: unknown norm mode '%s' (expected ln, rms or cbwc)", args->norm_mode);
    }
    GPT2Config cfg;
    if (gpt2_parse_descriptor(args->model, &cfg) == 0) {
        gpt2_init_random(model, &cfg, mode, args->seed);
    } else {
        gpt2_load(model, args->model);
        if (args->norm_mode != NULL) model->mode = mode;
    }
    if (model->mode == MODE_FOLDED) fatal("-e %s: a folded model cannot be trained", args->model);
}

static int count_targets(const int *targets, int n) {
    int counted = 0;
    for (int i = 0; i < n; i++) counted += targets[i] >= 0;
    return counted;
}

static float evaluate(GPT2Cuda *model, DataLoader *val, int max_batches) {
    dataloader_reset(val);
    size_t available = dataloader_batches_per_epoch(val);
    int n = (size_t)max_batches < available ? max_batches : (int)available;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        dataloader_next_batch(val);
        gpt2cuda_forward(model, val->inputs, val->targets, val->B, val->T, 0.0f);
        sum += model->mean_loss;
    }
    return n > 0 ? (float)(sum / n) : NAN;
}

// Forward passes only (the cost of inference; a folded model runs the rms
// mode's kernels): mean time of `passes` forwards after one warmup.
static void inference_benchmark(const GPT2 *host, int B, int T, int passes, unsigned long long seed) {
    GPT2Cuda model;
    gpt2cuda_init(&model, host, B, T, 1);
    int *tokens = (int *)malloc_check((size_t)B * T * sizeof(int), "tokens");
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < B * T; i++) tokens[i] = (int)(rng_u32(&rng) % (uint32_t)host->config.vocab_size);
    gpt2cuda_forward(&model, tokens, NULL, B, T, 0.0f); // warmup: cuBLAS's setup
    CUDA_CHECK(cudaDeviceSynchronize());
    const double t0 = now_seconds();
    for (int i = 0; i < passes; i++) gpt2cuda_forward(&model, tokens, NULL, B, T, 0.0f);
    CUDA_CHECK(cudaDeviceSynchronize());
    const double seconds = (now_seconds() - t0) / passes;
    printf("inference | mode %s | %s | B=%d T=%d | %.3f ms/forward | %.0f tok/s\n",
           norm_mode_name(host->mode), FLOATX_NAME, B, T, seconds * 1e3, B * T / seconds);
    free(tokens);
    gpt2cuda_free(&model);
}

// Samples gen_tokens tokens after <|endoftext|> (GPT-2 vocabulary) or token
// 0 with the CPU trainer's sampler: one forward (1, t) per token, the logits
// of the last position copied to the host. Prints token ids.
static void sample_and_print(GPT2Cuda *model, Rng *rng, const TrainArgs *args) {
    const GPT2Config *c = &model->config;
    const int cap = model->max_T < c->max_seq_len ? model->max_T : c->max_seq_len;
    const int T = args->gen_tokens + 1 < cap ? args->gen_tokens + 1 : cap;
    const int V = c->vocab_size, Vp = c->padded_vocab_size;
    int *tokens = (int *)calloc_check((size_t)T, sizeof(int), "sample tokens");
    floatX *row_x = (floatX *)malloc_check((size_t)V * sizeof(floatX), "sample logits");
    float *row = (float *)malloc_check((size_t)V * sizeof(float), "sample logits");
    tokens[0] = V == GPT2_EOT_TOKEN + 1 ? GPT2_EOT_TOKEN : 0;
    for (int t = 1; t < T; t++) {
        gpt2cuda_forward(model, tokens, NULL, 1, t, 0.0f);
        CUDA_CHECK(cudaMemcpy(row_x, model->acts.logits + (size_t)(t - 1) * Vp,
                              (size_t)V * sizeof(floatX), cudaMemcpyDeviceToHost));
        for (int v = 0; v < V; v++) row[v] = to_float(row_x[v]);
        tokens[t] = sample_token(row, V, args->temperature, args->top_k, rng);
    }
    printf("sample (token ids):");
    for (int t = 1; t < T; t++) printf(" %d", tokens[t]);
    printf("\n");
    fflush(stdout);
    free(tokens);
    free(row_x);
    free(row);
}

// Writes model_STEP.bin + state_STEP.bin (llmc/checkpoint.c, train_gpt2.c's
// files) from the GPU state; every rank calls it (ZeRO-1 gathers the moments),
// rank 0 writes. host: the host model, its parameters and moments overwritten.
static void save_checkpoint(GradSync *gs, GPT2 *host, const TrainProgress *now, const char *dir,
                            int keep) {
    GPT2Cuda *model = gs->model;
    gpt2cuda_params_to_host(model, host->params_memory);
    host->adamw_step = model->adamw_step;
    if (model->m_memory != NULL) {
        const size_t bytes = model->num_parameters * sizeof(float);
        if (host->m_memory == NULL) {
            host->m_memory = (float *)malloc_check(bytes, "AdamW m for the checkpoint");
            host->v_memory = (float *)malloc_check(bytes, "AdamW v for the checkpoint");
        }
        grad_sync_moments_to_host(gs, host->m_memory, host->v_memory);
    }
    if (gs->mg->rank == 0) {
        checkpoint_save(host, now, dir);
        checkpoint_prune(dir, keep);
    }
}

int main(int argc, char **argv) {
    TrainArgs args = parse_args(argc, argv);
    if (!cuda_device_present(argv[0])) return EXIT_FAILURE;
    MultiGpu mg = multi_gpu_init(args.num_processes, args.process_rank, args.id_file);
    const int lead = mg.rank == 0; // prints, logs and writes checkpoints
    GPT2 host;
    TrainProgress progress;
    memset(&progress, 0, sizeof(progress));
    Rng rng; // sampling
    rng_seed(&rng, args.seed);
    const int resumed_from =
        args.resume && args.inference_passes == 0 ? checkpoint_find_latest(args.output_dir) : -1;
    if (resumed_from >= 0) {
        checkpoint_load(&host, &progress, args.output_dir, resumed_from);
        NormMode mode;
        if (args.norm_mode != NULL && (norm_mode_parse(args.norm_mode, &mode) != 0 ||
                                       mode != host.mode)) {
            fatal("-N %s: the checkpoint in %s was trained in mode %s", args.norm_mode,
                  args.output_dir, norm_mode_name(host.mode));
        }
        rng.state = progress.rng_state;
    } else {
        setup_host_model(&host, &args); // the same seed on every rank: the same weights
    }
    const GPT2Config *cfg = &host.config;
    const int B = args.batch_size, T = args.seq_len;
    if (T > cfg->max_seq_len) {
        fatal("-t %d: sequence length exceeds the model's maxT %d", T, cfg->max_seq_len);
    }
    if (args.inference_passes > 0) {
        if (lead) inference_benchmark(&host, B, T, args.inference_passes, args.seed);
        gpt2_free(&host);
        multi_gpu_free(&mg);
        return EXIT_SUCCESS;
    }
    const int tokens_per_micro = B * T;
    const int total_tokens = args.total_batch_tokens < 0 ? tokens_per_micro * mg.world
                                                         : args.total_batch_tokens;
    if (total_tokens <= 0 || total_tokens % (tokens_per_micro * mg.world) != 0) {
        fatal("-d %d: total batch size must be a positive multiple of B*T*processes = %d",
              total_tokens, tokens_per_micro * mg.world);
    }
    const int grad_accum = total_tokens / (tokens_per_micro * mg.world);
    DataLoader train, val;
    // each rank reads its own slice of every shard
    dataloader_init(&train, args.train_pattern, B, T, cfg->vocab_size, mg.rank, mg.world,
                    args.shuffle, args.seed);
    const int have_val = args.val_every > 0;
    if (have_val) {
        dataloader_init(&val, args.val_pattern, B, T, cfg->vocab_size, mg.rank, mg.world, 0, 0);
    }
    int max_steps = args.max_steps;
    if (max_steps < 0) {
        // rank r of W gets batches r, r+W, ... of each shard, so the ranks' counts can
        // differ by one per shard: every rank takes the smallest, or the all-reduce hangs
        const int batches = multi_gpu_min_int(&mg, (int)dataloader_batches_per_epoch(&train));
        max_steps = batches / grad_accum;
        max_steps = max_steps > 0 ? max_steps : 1;
    }
    if (lead && args.output_dir != NULL && mkdir(args.output_dir, 0755) != 0 && errno != EEXIST) {
        fatal("-o %s: cannot create directory: %s", args.output_dir, strerror(errno));
    }
    if (resumed_from >= 0) {
        dataloader_seek(&train, progress.epoch, progress.shard_index, (size_t)progress.position);
    }
    Logger logger;
    logger_init(&logger, lead ? args.output_dir : NULL, resumed_from >= 0);

    GPT2Cuda model;
    gpt2cuda_init(&model, &host, B, T, 0);
    GradSync sync;
    grad_sync_init(&sync, &mg, &model, args.zero_stage); // ZeRO-1: shards the moments
    if (host.m_memory != NULL) {
        gpt2cuda_moments_from_host(&model, host.m_memory, host.v_memory, host.adamw_step);
    } else {
        model.adamw_step = host.adamw_step;
    }
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, mg.device));
    if (lead) {
        printf("train_gpt2cu | %s x %d | %s | mode %s | L=%d C=%d NH=%d V=%d (Vp %d) maxT=%d | "
               "%.2fM parameters\n",
               prop.name, mg.world, FLOATX_NAME, norm_mode_name(model.mode), cfg->num_layers,
               cfg->channels, cfg->num_heads, cfg->vocab_size, cfg->padded_vocab_size,
               cfg->max_seq_len, (double)model.num_parameters / 1e6);
        printf("B=%d T=%d processes=%d (%s) grad_accum=%d | %d steps | lr %.2e wd %.2f clip "
               "%.2f\n",
               B, T, mg.world, sync.sharded ? "ZeRO-1" : "all-reduce", grad_accum, max_steps,
               args.learning_rate, args.weight_decay, args.grad_clip);
        if (resumed_from >= 0) {
            printf("resumed from %s at step %d\n", args.output_dir, resumed_from);
        }
    }
    // MFU: 6 N flops per token for the matmuls with weights, 12 L C T for attention
    // (forward + backward, causal mask not discounted), against the dense peak
    // of one H100/H200 SXM (bf16 tensor cores 989 TFLOP/s, fp32 67 TFLOP/s) per GPU
    const double flops_per_token = 6.0 * (double)model.num_parameters +
                                   12.0 * cfg->num_layers * cfg->channels * (double)T;
    const double peak_flops = (sizeof(floatX) == 2 ? 989e12 : 67e12) * mg.world;

    AdamWConfig adamw = {args.learning_rate, 0.9f, 0.95f, 1e-8f, args.weight_decay};
    if (args.overfit_single_batch) dataloader_next_batch(&train);
    double timed_seconds = 0.0;
    long long timed_tokens = 0;
    // the loop of train_gpt2.c: eval, sample, checkpoint at the top of each step
    for (int step = progress.step; step <= max_steps; step++) {
        const int last = step == max_steps;
        if (have_val && (step % args.val_every == 0 || last)) {
            float val_loss = multi_gpu_mean(&mg, evaluate(&model, &val, args.val_max_steps));
            if (lead) printf("val loss %.6f\n", val_loss);
            logger_log_val(&logger, step, val_loss);
        }
        // not at the step resumed from: its sample was drawn before its checkpoint,
        // so the RNG goes on as in the uninterrupted run
        if (lead && args.sample_every > 0 && (step % args.sample_every == 0 || last) &&
            step > progress.step) {
            sample_and_print(&model, &rng, &args);
        }
        const int periodic = args.checkpoint_every > 0 && step % args.checkpoint_every == 0;
        if (args.output_dir != NULL && (last || (periodic && step > progress.step))) {
            TrainProgress now;
            memset(&now, 0, sizeof(now));
            now.step = step;
            now.shard_index = train.shard_cursor;
            now.position = train.batch_cursor;
            now.rng_state = rng.state;
            now.epoch = train.epoch;
            save_checkpoint(&sync, &host, &now, args.output_dir, args.checkpoint_keep);
        }
        if (last) break;
        CUDA_CHECK(cudaDeviceSynchronize());
        const double t0 = now_seconds();
        gpt2cuda_zero_grad(&model);
        double loss_sum = 0.0;
        for (int micro = 0; micro < grad_accum; micro++) {
            if (!args.overfit_single_batch) dataloader_next_batch(&train);
            const int counted = count_targets(train.targets, B * T);
            // mean over the counted targets of this rank's micro-batches; the
            // reduction averages the ranks
            const float scale = counted > 0 ? 1.0f / (float)(counted * grad_accum) : 0.0f;
            const int final_micro = micro == grad_accum - 1;
            // the last backward hands each layer's gradients to the reduction as it finishes
            if (final_micro) grad_sync_attach(&sync);
            gpt2cuda_forward(&model, train.inputs, train.targets, B, T, scale);
            loss_sum += model.mean_loss;
            if (counted > 0) {
                gpt2cuda_backward(&model, scale);
            } else if (final_micro) {
                grad_sync_reduce_all(&sync); // no backward: the same collectives, in order
            }
            grad_sync_detach(&sync);
        }
        grad_sync_wait(&sync);
        const float loss = multi_gpu_mean(&mg, (float)(loss_sum / grad_accum));
        const double grad_norm_exact = grad_sync_norm(&sync);
        const float grad_norm = (float)grad_norm_exact;
        if (!isfinite(loss) || !isfinite(grad_norm)) {
            fatal("step %d: non-finite loss (%f) or gradient norm (%f); stopping before the update",
                  step + 1, loss, grad_norm);
        }
        adamw.learning_rate = lr_cosine_with_warmup(step, max_steps, args.warmup_steps,
                                                    args.learning_rate, args.final_lr_fraction);
        grad_sync_update(&sync, &adamw, clip_grad_scale(grad_norm_exact, args.grad_clip));
        CUDA_CHECK(cudaDeviceSynchronize());
        const double seconds = now_seconds() - t0;
        if (step > progress.step) { // the first step pays for cuBLAS's setup
            timed_seconds += seconds;
            timed_tokens += total_tokens;
        }
        const double tokens_per_s = total_tokens / seconds;
        if (lead) {
            printf("step %4d/%d | loss %.6f | norm %.4f | lr %.2e | %.2f ms | %.0f tok/s | MFU %.1f%%\n",
                   step + 1, max_steps, loss, grad_norm, adamw.learning_rate, seconds * 1e3,
                   tokens_per_s, 100.0 * tokens_per_s * flops_per_token / peak_flops);
            fflush(stdout);
        }
        logger_log_train(&logger, step + 1, loss, adamw.learning_rate, grad_norm);
    }
    if (lead && timed_tokens > 0) {
        const double tps = timed_tokens / timed_seconds;
        printf("summary | mode %s | %s | B=%d T=%d x %d GPU | %.0f tok/s | %.2f ms/step | MFU %.1f%%\n",
               norm_mode_name(model.mode), FLOATX_NAME, B, T, mg.world, tps,
               1e3 * timed_seconds * total_tokens / timed_tokens,
               100.0 * tps * flops_per_token / peak_flops);
    }
    logger_free(&logger);
    dataloader_free(&train);
    if (have_val) dataloader_free(&val);
    grad_sync_free(&sync);
    gpt2cuda_free(&model);
    gpt2_free(&host);
    multi_gpu_free(&mg);
    return EXIT_SUCCESS;
}
