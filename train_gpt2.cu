// GPT-2 training on an NVIDIA GPU in the three norm modes (ln, rms, cbwc):
// the CUDA counterpart of train_gpt2.c with the same flags (a subset: no
// sampling, no resume). bf16 mixed precision by default, fp32 throughout
// when built with -DFOLDNORM_FP32 (make train_gpt2fp32cu). The model and its
// kernels live in llmc/*.cuh; model files, data loader and the learning-rate
// schedule are the CPU trainer's (libllmc).
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpt2_cuda.cuh"
#include "multi_gpu.cuh"

extern "C" {
#include "dataloader.h"
#include "logger.h"
#include "rand.h"
#include "schedule.h"
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
} TrainArgs;

static void usage(void) {
    fprintf(stderr,
            "usage: train_gpt2cu [options]   (%s build)\n"
            "  -N <mode>   norm mode: ln | rms | cbwc (default: the model file's, ln for descriptors)\n"
            "  -e <model>  model file (llm.c format) or descriptor d<L>[c<C>h<NH>v<V>t<maxT>]\n"
            "              (default d12: GPT-2 124M)\n"
            "  -i <glob>   train token shards (default data/kjv/kjv_train_*.bin)\n"
            "  -j <glob>   val token shards (default data/kjv/kjv_val_*.bin)\n"
            "  -o <dir>    output dir for main.log and the final model (default: none)\n"
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
            "  -h          this help\n",
            FLOATX_NAME);
}

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
    return a;
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

int main(int argc, char **argv) {
    TrainArgs args = parse_args(argc, argv);
    if (!cuda_device_present(argv[0])) return EXIT_FAILURE;
    MultiGpu mg = multi_gpu_init(args.num_processes, args.process_rank, args.id_file);
    const int lead = mg.rank == 0; // prints, logs and writes the model
    GPT2 host;
    setup_host_model(&host, &args); // the same seed on every rank: the same weights
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
    Logger logger;
    logger_init(&logger, lead ? args.output_dir : NULL, 0);

    GPT2Cuda model;
    gpt2cuda_init(&model, &host, B, T, 0);
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, mg.device));
    if (lead) {
        printf("train_gpt2cu | %s x %d | %s | mode %s | L=%d C=%d NH=%d V=%d (Vp %d) maxT=%d | "
               "%.2fM parameters\n",
               prop.name, mg.world, FLOATX_NAME, norm_mode_name(model.mode), cfg->num_layers,
               cfg->channels, cfg->num_heads, cfg->vocab_size, cfg->padded_vocab_size,
               cfg->max_seq_len, (double)model.num_parameters / 1e6);
        printf("B=%d T=%d processes=%d grad_accum=%d | %d steps | lr %.2e wd %.2f clip %.2f\n", B,
               T, mg.world, grad_accum, max_steps, args.learning_rate, args.weight_decay,
               args.grad_clip);
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
    for (int step = 0; step <= max_steps; step++) {
        const int last = step == max_steps;
        if (have_val && (step % args.val_every == 0 || last)) {
            float val_loss = multi_gpu_mean(&mg, evaluate(&model, &val, args.val_max_steps));
            if (lead) printf("val loss %.6f\n", val_loss);
            logger_log_val(&logger, step, val_loss);
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
            // all-reduce below averages the ranks
            const float scale = counted > 0 ? 1.0f / (float)(counted * grad_accum) : 0.0f;
            gpt2cuda_forward(&model, train.inputs, train.targets, B, T, scale);
            loss_sum += model.mean_loss;
            if (counted > 0) gpt2cuda_backward(&model, scale);
        }
        multi_gpu_average(&mg, model.grads_memory, model.num_parameters, model.mm.stream);
        const float loss = multi_gpu_mean(&mg, (float)(loss_sum / grad_accum));
        adamw.learning_rate = lr_cosine_with_warmup(step, max_steps, args.warmup_steps,
                                                    args.learning_rate, args.final_lr_fraction);
        const float grad_norm = gpt2cuda_update(&model, &adamw, args.grad_clip);
        if (!isfinite(loss) || !isfinite(grad_norm)) {
            fatal("step %d: non-finite loss (%f) or gradient norm (%f)", step + 1, loss, grad_norm);
        }
        CUDA_CHECK(cudaDeviceSynchronize());
        const double seconds = now_seconds() - t0;
        if (step > 0) { // the first step pays for cuBLAS's setup
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
    if (lead && args.output_dir != NULL) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/model_final.bin", args.output_dir);
        gpt2cuda_params_to_host(&model, host.params_memory);
        gpt2_save(&host, path);
        printf("wrote %s\n", path);
    }
    logger_free(&logger);
    dataloader_free(&train);
    if (have_val) dataloader_free(&val);
    gpt2cuda_free(&model);
    gpt2_free(&host);
    multi_gpu_free(&mg);
    return EXIT_SUCCESS;
}
