// GPT-2 training on an NVIDIA GPU in the three norm modes (ln, rms, cbwc):
// the CUDA counterpart of train_gpt2.c with the same flags (one table,
// llmc/gpt2/gpt2_train_args.c; -rd draws the CPU's dropout masks, -dp its drop-path scales; no -vd:
// samples print as token ids). bf16
// mixed precision by default, fp32 throughout when built with -DFOLDNORM_FP32
// (make train_gpt2fp32cu). The model and its kernels live in llmc/cuda/*.cuh;
// model files, checkpoints (the same model_STEP.bin + state_STEP.bin as
// train_gpt2.c, so a run moves between CPU and GPU), data loader, sampler,
// step loop (llmc/gpt2/gpt2_train_loop.c) and learning-rate schedule are the
// CPU trainer's (libllmc). -at chooses the attention kernels
// (llmc/cuda/attention_kind.cuh): tensor cores by default in bf16, flash
// (fp32 FMAs) in fp32, the cuBLAS + softmax path, or cuDNN's fused attention.
// main reads top-down: parse; set up (llmc/gpt2/gpt2_train_setup.c, shared
// with train_gpt2.c); the hooks table (this file: the GPU model's calls);
// the loop (llmc/gpt2/gpt2_train_loop.c). The step, on every GPU:
//   1. forward and backward over grad_accum micro-batches, fed by a host thread
//      (-cg 1, one rank: each micro-step's forward and backward as one CUDA
//      graph, llmc/cuda/gpt2_step_graph.cuh; the run's first step eager);
//   2. each layer's gradients reduced over the ranks as its backward ends (ZeRO-1 or all-reduce);
//   3. the mean loss, the global norm and the clip scale on the GPU; a bad one skips the update;
//   4. AdamW on the device, then the step's one wait for the GPU;
//   5. main.log's line; every -v / -s / -n steps a val loss, a sample, a checkpoint.

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpt2_cuda.cuh"
#include "cuda/gpt2_feed.cuh"
#include "cuda/gpt2_mc_eval.cuh"
#include "cuda/gpt2_step_graph.cuh"
#include "cuda/gpu_trainer_cli.cuh"
#include "cuda/grad_sync.cuh"
#include "cuda/multi_gpu.cuh"
#include "cuda/multi_gpu_ranks.cuh"

extern "C" {
#include "gpt2/checkpoint.h"
#include "core/cli.h"
#include "gpt2/dataloader.h"
#include "gpt2/gpt2_train_args.h"
#include "gpt2/gpt2_train_loop.h"
#include "gpt2/gpt2_train_setup.h"
#include "core/logger.h"
#include "core/rand.h"
#include "core/run_dir.h"
#include "gpt2/sampler.h"
#include "core/schedule.h"
#include "core/stop_signal.h"
#include "text/tokenizer.h" // GPT2_EOT_TOKEN only: the tokenizer is not linked
}

typedef Gpt2TrainArgs TrainArgs;

// The flags only the GPU trainer takes.
typedef struct {
    int inference_passes; // > 0: time this many forward passes on random tokens, no training
    GpuProcessArgs proc;  // -pn, -pr, -pf (llmc/cuda/gpu_trainer_cli.cuh)
    const char *attention_name; // -at: NULL = the build's default
    AttentionKind attention;    // from -at, checked against the build
    int recompute;              // -r: 0, 1 or 2 (llmc/cuda/transformer_block.cuh)
    int fuse_epilogues;         // -fe: 0 or 1 (llmc/cuda/matmul_plan.cuh)
    int tune_algos;             // -ga: 0 or 1 (llmc/cuda/matmul_algo_choice.cuh)
    int cuda_graphs;            // -cg: 1 = micro-steps as CUDA graphs where they can be
} GpuArgs;

// The GPT-2 trainers' shared flags (llmc/gpt2/gpt2_train_args.c) with the GPU
// defaults (d12, T = 1024), then the GPU-only ones.
static TrainArgs parse_args(int argc, char **argv, GpuArgs *gpu) {
    TrainArgs a = gpt2_train_args_defaults();
    a.model = "d12";
    a.seq_len = 1024;
    memset(gpu, 0, sizeof(*gpu));
    gpu->fuse_epilogues = 1;
    gpu->cuda_graphs = 1;
    CliFlag flags[GPT2_TRAIN_MAX_FLAGS + 9];
    int all = gpt2_train_flags(&a, GPT2_FLAGS_CORE | GPT2_FLAGS_EXTRAS | GPT2_FLAGS_DROPOUT | GPT2_FLAGS_MC,
                               flags),
        n = 0;
    for (int i = 0; i < all; i++) { // no tokenizer on the GPU (yet): no -vd
        if (strcmp(flags[i].name, "-vd") != 0) flags[n++] = flags[i];
    }
    const CliFlag gpu_flags[] = {
        GPU_PROCESS_CLI_FLAGS(&gpu->proc),
        {"-inf", CLI_INT, &gpu->inference_passes, 0, 1000000,
         "inference benchmark: time this many forward passes (B, T) on random\n"
         "tokens, no data, no training (default 0 = train)", NULL, 0, 0},
        {"-at", CLI_CHOICE, &gpu->attention_name, 0, 0,
         "attention kernels: tc = tensor cores, flash-style (bf16 builds only);\n"
         "cublas = batched cuBLAS matmuls + softmax, keeps the (T, T)\n"
         "probabilities of every layer; flash = fp32 FMAs, flash-style;\n"
         "cudnn = cuDNN's fused flash attention (bf16 builds with cuDNN)\n"
         "(default: tc in bf16 builds, flash in fp32 builds)", "tc|cublas|flash|cudnn", 0, 0},
        RECOMPUTE_CLI_FLAG(&gpu->recompute),
        FUSE_EPILOGUES_CLI_FLAG(&gpu->fuse_epilogues),
        GEMM_ALGO_CLI_FLAG(&gpu->tune_algos),
        CUDA_GRAPHS_CLI_FLAG(&gpu->cuda_graphs, "several ranks and SFT data"),
    };
    for (int i = 0; i < CLI_COUNT(gpu_flags); i++) flags[n++] = gpu_flags[i];
    char about[256];
    snprintf(about, sizeof(about),
             "GPT-2 training on an NVIDIA GPU, %s build (llm.c's flags).\n"
             "No -vd (train_gpt2 only): the tokenizer is not linked, samples print as token ids.\n",
             FLOATX_NAME);
    CliSpec spec;
    gpu_trainer_parse(&spec, GPU_PROGRAM_NAME("train_gpt2"), about, flags, n, &gpu->proc, argc, argv);
    gpt2_train_args_check(&spec, &a);
    gpu->attention = attention_kind_default(false);
    if (gpu->attention_name != NULL) attention_kind_parse(gpu->attention_name, &gpu->attention);
    const char *refusal = attention_kind_refusal(gpu->attention, false);
    if (refusal != NULL) cli_error(&spec, "-at %s: %s", gpu->attention_name, refusal);
    return a;
}

static float evaluate(GPT2Cuda *model, DataLoader *val, int max_batches) {
    dataloader_reset(val);
    size_t available = dataloader_batches_per_epoch(val);
    int n = (size_t)max_batches < available ? max_batches : (int)available;
    gpt2cuda_loss_reset(model);
    for (int i = 0; i < n; i++) {
        dataloader_next_batch(val);
        gpt2cuda_forward(model, val->inputs, val->targets, val->B, val->T, 0.0f);
    }
    // the batches' mean losses, summed on the GPU: one wait
    return n > 0 ? (float)(gpt2cuda_loss_sum(model) / n) : NAN;
}

// Forward passes only (the cost of inference; a folded model runs the rms
// mode's kernels): mean time of `passes` forwards after one warmup.
static void inference_benchmark(const GPT2 *host, int B, int T, int passes, unsigned long long seed,
                                AttentionKind attention) {
    GPT2Cuda model;
    gpt2cuda_init(&model, host, B, T, 1, attention);
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
    printf("inference | mode %s | %s | attention %s | B=%d T=%d | %.3f ms/forward | %.0f tok/s\n",
           norm_mode_name(host->mode), FLOATX_NAME, attention_kind_name(attention), B, T,
           seconds * 1e3, B * T / seconds);
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

// Writes model_STEP.bin + state_STEP.bin (llmc/gpt2/checkpoint.c, train_gpt2.c's
// files) from the GPU state; every rank calls it (ZeRO-1 gathers the moments),
// rank 0 writes. host: the host model, its parameters and moments overwritten.
static void save_checkpoint(GradSync *gs, GPT2 *host, const TrainProgress *now, const char *dir,
                            int keep) {
    GPT2Cuda *model = gs->model;
    grad_sync_params_to_host(gs, host->params_memory); // ZeRO-1 bf16: the fp32 slices gathered
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

// What the loop's hooks (llmc/gpt2/gpt2_train_loop.h) work on: the GPU
// model, its host copy (for checkpoints), data and ranks, and the step's
// time and the timed steps' totals for the step lines and the summary.
typedef struct {
    GPT2Cuda *model;
    GPT2 *host;
    GradSync *sync;
    MultiGpu *mg;
    const TrainArgs *args;
    DataLoader *val;
    const McEvalSet *mc; // -mc: scored with every val loss (NULL: none)
    int T;
    Gpt2Feed *feed; // the training micro-batches, prepared on a host thread (it owns the loader)
    Gpt2StepGraph *graph; // -cg 1: the micro-steps' graph (NULL: eager)
    Rng *rng;       // sampling (the checkpoints' RNG)
    const StepOutliers *outliers; // the loop's windows (the checkpoints')
    int grad_accum, total_tokens, max_steps, first_step, lead;
    double flops_per_token, peak_flops; // MFU
    double t0;                          // the step's start
    double timed_seconds;               // the steps after a run's first
    long long timed_tokens;
} GpuTrainer;

static float gpu_evaluate(void *ctx) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    return multi_gpu_mean(t->mg, evaluate(t->model, t->val, t->args->val_max_steps));
}

// every rank scores examples rank, rank + ranks, ...; the counts are summed
static float gpu_mc_eval(void *ctx) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    int scored = 0;
    const int right = gpt2cuda_mc_eval_score(t->model, t->mc, t->mg->rank, t->mg->world, t->T,
                                             &scored);
    return (float)(multi_gpu_sum_double(t->mg, right) / multi_gpu_sum_double(t->mg, scored));
}

static void gpu_sample(void *ctx) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    sample_and_print(t->model, t->rng, t->args);
}

static void gpu_checkpoint(void *ctx, int step) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    TrainProgress now;
    memset(&now, 0, sizeof(now));
    now.step = step;
    size_t position; // the loader's, before the next batch the thread prepared
    gpt2_feed_position(t->feed, &now.epoch, &now.shard_index, &position);
    now.position = position;
    now.rng_state = t->rng->state;
    now.batch_samples = t->args->batch_size * t->mg->world;
    now.outliers = *t->outliers;
    save_checkpoint(t->sync, t->host, &now, t->args->output_dir, t->args->checkpoint_keep);
}

// queued: nothing here waits for the GPU but gpt2_feed_next's wait for the
// copy out of the slot it refills (a micro-step back)
static void gpu_forward_backward(void *ctx, int step) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    GPT2Cuda *model = t->model;
    const int grad_accum = t->grad_accum;
    CUDA_CHECK(cudaDeviceSynchronize());
    t->t0 = now_seconds();
    gpt2cuda_zero_grad(model); // and the loss sum: the micro-steps add theirs on the GPU
    for (int micro = 0; micro < grad_accum; micro++) {
        cudaEvent_t copied; // recorded by the forward after copying the batch
        const TokenBatch *batch = gpt2_feed_next(t->feed, &copied);
        const int counted = batch->counted;
        // mean over the counted targets of this rank's micro-batches; the
        // reduction averages the ranks
        const float scale = counted > 0 ? 1.0f / (float)(counted * grad_accum) : 0.0f;
        const int final_micro = micro == grad_accum - 1;
        // the last backward hands each layer's gradients to the reduction as it finishes
        if (final_micro) grad_sync_attach(t->sync);
        // one dropout draw per micro-batch and rank, as train_gpt2.c: the same masks
        const uint64_t draw = ((uint64_t)step * (uint64_t)grad_accum + (uint64_t)micro) *
                                  (uint64_t)t->mg->world + (uint64_t)t->mg->rank;
        gpt2cuda_arm_dropout(model, draw);
        if (t->graph != NULL && step > t->first_step && counted > 0) {
            gpt2_step_graph_micro_step(t->graph, batch, scale, copied);
            grad_sync_detach(t->sync);
            continue;
        }
        gpt2cuda_forward_batch(model, batch, scale, copied);
        if (counted > 0) {
            gpt2cuda_backward(model, scale);
        } else if (final_micro) {
            grad_sync_reduce_all(t->sync); // no backward: the same collectives, in order
        }
        grad_sync_detach(t->sync);
    }
    grad_sync_wait(t->sync);
}

// The loss, the norm and the clip scale computed on the GPU; AdamW reads the
// scale there and skips the update when the loss or the norm is not finite
// or above its -sl / -sg limit (the host passes the limits, computed from
// the windows before the step: no wait); then the step's one wait for the GPU.
static int gpu_update(void *ctx, const AdamWConfig *adamw, float grad_clip, double loss_limit,
                      double norm_limit, float *loss, double *grad_norm) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    grad_sync_clip(t->sync, t->grad_accum, grad_clip, loss_limit, norm_limit);
    grad_sync_update(t->sync, adamw);
    return grad_sync_step_result(t->sync, loss, grad_norm);
}

static void gpu_step_done(void *ctx, int step, float loss, float grad_norm, float learning_rate) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    CUDA_CHECK(cudaDeviceSynchronize());
    const double seconds = now_seconds() - t->t0;
    if (step > t->first_step) { // the first step pays for cuBLAS's setup
        t->timed_seconds += seconds;
        t->timed_tokens += t->total_tokens;
    }
    const double tokens_per_s = t->total_tokens / seconds;
    if (t->lead) {
        printf("step %4d/%d | loss %.6f | norm %.4f | lr %.2e | %.2f ms | %.0f tok/s | MFU %.1f%%\n",
               step + 1, t->max_steps, loss, grad_norm, learning_rate, seconds * 1e3,
               tokens_per_s, 100.0 * tokens_per_s * t->flops_per_token / t->peak_flops);
        fflush(stdout);
    }
}

static int gpu_max_over_ranks(void *ctx, int value) {
    return multi_gpu_max_int(((GpuTrainer *)ctx)->mg, value);
}

int main(int argc, char **argv) {
    // first, before any thread starts: SIGINT, SIGTERM, SIGUSR1 finish the step,
    // write a checkpoint and exit (llmc/core/stop_signal.h)
    stop_signal_install();
    GpuArgs gpu;
    TrainArgs args = parse_args(argc, argv, &gpu);
    if (!cuda_device_present(argv[0])) return EXIT_FAILURE;
    MultiGpu mg = multi_gpu_init(gpu.proc.num_processes, gpu.proc.process_rank, gpu.proc.id_file);
    const int lead = mg.rank == 0; // prints, logs and writes checkpoints
    GPT2 host;
    if (gpu.inference_passes > 0) { // a benchmark of the forward: no run, no -o
        gpt2_train_setup_model(&host, &args);
        if (args.seq_len > host.config.max_seq_len) {
            fatal("-t %d: sequence length exceeds the model's maxT %d", args.seq_len,
                  host.config.max_seq_len);
        }
        if (lead) {
            inference_benchmark(&host, args.batch_size, args.seq_len, gpu.inference_passes,
                                args.seed, gpu.attention);
        }
        gpt2_free(&host);
        multi_gpu_free(&mg);
        return EXIT_SUCCESS;
    }
    const TrainRanks ranks = multi_gpu_train_ranks(&mg, gpu.proc.num_processes);
    Gpt2TrainSetup run;
    gpt2_train_setup(&run, &host, &args, &ranks);
    const GPT2Config *cfg = &host.config;
    const int B = run.B, T = run.T;
    const int total_tokens = run.total_tokens, grad_accum = run.grad_accum;
    const int max_steps = run.max_steps, resumed_from = run.resumed_from;
    const int have_val = run.have_val;
    Logger *logger = &run.logger;
    const char *const record_data[] = {"train", args.train_pattern, "val",
                                       have_val ? args.val_pattern : NULL, NULL};
    logger_log_run_record(logger, argc, argv, record_data,
                          "mode=%s seed=%llu model=%s L=%d C=%d NH=%d V=%d maxT=%d B=%d T=%d "
                          "total_batch=%d steps=%d lr=%g precision=%s attention=%s gpus=%d "
                          "resid_dropout=%g drop_path=%g",
                          norm_mode_name(host.mode), args.seed, args.model, cfg->num_layers,
                          cfg->channels, cfg->num_heads, cfg->vocab_size, cfg->max_seq_len, B, T,
                          total_tokens, max_steps, (double)args.learning_rate,
                          FLOATX_NAME, attention_kind_name(gpu.attention), mg.world,
                          (double)args.resid_dropout, (double)args.drop_path);

    GPT2Cuda model;
    gpt2cuda_init(&model, &host, B, T, 0, gpu.attention, gpu.recompute);
    if (lead) {
        transformer_blocks_report_acts("gpt2cuda", gpu.recompute, model.block_act_bytes, B, T);
    }
    model.mm.fuse_epilogues = gpu.fuse_epilogues;
    if (gpu.tune_algos && mg.world > 1) {
        fatal("-ga 1: one process only (each rank would time its own algorithms)");
    }
    matmul_algo_choice_setup(&model.mm, gpu.tune_algos, args.output_dir, resumed_from >= 0);
    gpt2cuda_set_resid_dropout(&model, args.resid_dropout, args.seed);
    gpt2cuda_set_drop_path(&model, args.drop_path, args.seed);
    // CUDA graphs need one rank (the reduction's second stream is not captured);
    // SFT batches count a different number of targets each, a scale the graph
    // takes by value: each would be captured anew
    Gpt2StepGraph graph;
    const int use_graphs = gpu.cuda_graphs && mg.world == 1 && !run.train.is_sft;
    if (use_graphs) gpt2_step_graph_init(&graph, &model);
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
        printf("train_gpt2cu | %s x %d | %s | attention %s | mode %s | L=%d C=%d NH=%d V=%d (Vp %d) "
               "maxT=%d | %.2fM parameters\n",
               prop.name, mg.world, FLOATX_NAME, attention_kind_name(gpu.attention),
               norm_mode_name(model.mode), cfg->num_layers,
               cfg->channels, cfg->num_heads, cfg->vocab_size, cfg->padded_vocab_size,
               cfg->max_seq_len, (double)model.num_parameters / 1e6);
        printf("B=%d T=%d processes=%d (%s) grad_accum=%d | %d steps | lr %.2e wd %.2f clip "
               "%.2f\n",
               B, T, mg.world, sync.sharded ? "ZeRO-1" : "all-reduce", grad_accum, max_steps,
               args.learning_rate, args.weight_decay, args.grad_clip);
        if (run.train.is_sft) printf("train: SFT shards, loss on response tokens only\n");
        if (args.resid_dropout > 0.0f) {
            printf("residual dropout %g, masks from -sd\n", (double)args.resid_dropout);
        }
        if (args.drop_path > 0.0f) {
            printf("drop-path %g at the last block, masks from -sd\n", (double)args.drop_path);
        }
        if (resumed_from >= 0) {
            printf("resumed from %s at step %d\n", args.output_dir, resumed_from);
        }
        printf("CUDA graphs: %s\n",
               use_graphs ? "on (-cg 1): each micro-step's forward and backward as one graph after "
                            "the first step; the wte gradient, the update and eval eager"
               : !gpu.cuda_graphs ? "off (-cg 0)"
               : mg.world > 1     ? "off: several ranks (-cg 1 needs one)"
                                  : "off: SFT batches (their counted targets, a captured scale, change every batch)");
    }
    // MFU: 6 N flops per token for the matmuls with weights, 12 L C T for attention
    // (forward + backward, causal mask not discounted), against the dense peak
    // of one H100/H200 SXM (bf16 tensor cores 989 TFLOP/s, fp32 67 TFLOP/s) per GPU
    const double flops_per_token = 6.0 * (double)model.num_parameters +
                                   12.0 * cfg->num_layers * cfg->channels * (double)T;
    const double peak_flops = (sizeof(floatX) == 2 ? 989e12 : 67e12) * mg.world;

    if (args.overfit_single_batch) dataloader_next_batch(&run.train);
    // the micro-batches and their token buckets from here on prepared on a host
    // thread, a micro-step ahead, in page-locked memory (it owns `train` now)
    Gpt2Feed feed;
    gpt2_feed_init(&feed, &run.train, args.overfit_single_batch, cfg->vocab_size);
    GpuTrainer trainer;
    memset(&trainer, 0, sizeof(trainer));
    trainer.model = &model;
    trainer.host = &host;
    trainer.sync = &sync;
    trainer.mg = &mg;
    trainer.args = &args;
    trainer.feed = &feed;
    trainer.graph = use_graphs ? &graph : NULL;
    trainer.val = have_val ? &run.val : NULL;
    trainer.mc = run.have_mc ? &run.mc : NULL;
    trainer.T = T;
    trainer.rng = &run.rng;
    trainer.grad_accum = grad_accum;
    trainer.total_tokens = total_tokens;
    trainer.max_steps = max_steps;
    trainer.first_step = run.progress.step;
    trainer.lead = lead;
    trainer.outliers = &run.progress.outliers;
    trainer.flops_per_token = flops_per_token;
    trainer.peak_flops = peak_flops;
    Gpt2TrainHooks hooks;
    memset(&hooks, 0, sizeof(hooks));
    hooks.ctx = &trainer;
    hooks.evaluate = gpu_evaluate;
    hooks.mc_eval = run.have_mc && have_val ? gpu_mc_eval : NULL;
    hooks.sample = gpu_sample;
    hooks.checkpoint = gpu_checkpoint;
    hooks.forward_backward = gpu_forward_backward;
    hooks.update = gpu_update;
    hooks.step_done = gpu_step_done;
    hooks.max_over_ranks = gpu_max_over_ranks;
    const Gpt2LoopConfig loop = gpt2_train_loop_config(&run, &args, &ranks, argc, argv);
    const int stopped_by = gpt2_train_loop(&hooks, &loop, logger);
    const double timed_seconds = trainer.timed_seconds;
    const long long timed_tokens = trainer.timed_tokens;
    if (lead && timed_tokens > 0) {
        const double tps = timed_tokens / timed_seconds;
        printf("summary | mode %s | %s | B=%d T=%d x %d GPU | %.0f tok/s | %.2f ms/step | MFU %.1f%%\n",
               norm_mode_name(model.mode), FLOATX_NAME, B, T, mg.world, tps,
               1e3 * timed_seconds * total_tokens / timed_tokens,
               100.0 * tps * flops_per_token / peak_flops);
    }
    if (use_graphs) {
        if (lead && graph.graph.launches > 0) {
            printf("CUDA graphs: %d captured (%zu nodes each), %d launched\n",
                   graph.graph.captures, graph.graph.nodes, graph.graph.launches);
        }
        gpt2_step_graph_free(&graph);
    }
    gpt2_feed_free(&feed); // joins the thread before the loader goes
    gpt2_train_setup_free(&run);
    grad_sync_free(&sync);
    gpt2cuda_free(&model);
    gpt2_free(&host);
    multi_gpu_free(&mg);
    return stopped_by != 0 ? 128 + stopped_by : EXIT_SUCCESS;
}
