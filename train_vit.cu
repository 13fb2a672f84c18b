// ViT and Swin training on an NVIDIA GPU in the three norm modes (ln, rms, cbwc): the
// CUDA counterpart of train_vit.c with the same flags (one table,
// llmc/vision/vit_train_args.c), data (llmc/vision/vision_data.c: Fashion-MNIST IDX or
// image shards, augmented on the host), model files (llmc/vision/vision_model.c:
// a file written here loads in train_vit and back) and checkpoints
// (llmc/vision/vision_checkpoint.c: -n, -nk, -y 1 resumes exactly, a CPU run's
// checkpoint resumes here and back; a stop signal checkpoints and exits). The
// host augments the next batches on a pool of threads while the GPU trains on
// this one (llmc/vision/batch_prefetch.c). bf16
// mixed precision by default (fp32 master weights and moments, which is what
// the checkpoints hold), fp32 throughout when built with -DFOLDNORM_FP32
// (train_vitfp32cu). The models live in llmc/cuda/vit_cuda.cuh and
// llmc/cuda/swin_cuda.cuh (one interface: llmc/cuda/classifier_cuda.cuh). Data parallel
// over NCCL (-pn/-pr/-pf or mpirun, as train_gpt2cu): -b images per GPU, the
// gradients averaged by an all-reduce per step, or with -z 1 (ZeRO-1)
// reduce-scattered, each rank updating its shard of the AdamW moments
// (llmc/cuda/vision_grad_sync.cuh). -at chooses the attention kernels
// (llmc/cuda/attention_kind.cuh): tensor cores by default in bf16.
// main reads top-down: parse; set up (llmc/vision/vit_train_start.c, shared
// with train_vit.c); the hooks table (this file: the GPU model's calls); the
// loop (llmc/vision/vision_train_loop.c). The step, on every GPU:
//   1. its slice of a global batch of -b x ranks images, augmented ahead on host threads
//      (train_vit's flips, crops, -reprob erasing, -mixup / -cutmix of the slice);
//   2. forward, label-smoothed cross-entropy (mixed targets) and backward on the GPU
//      (-cg 1, ViT on one rank: as one CUDA graph, llmc/cuda/vit_step_graph.cuh;
//      the run's first step eager);
//   3. the gradients averaged over the ranks (all-reduce or ZeRO-1), the global norm, clipped to -c;
//   4. AdamW on the device at the warmup + cosine learning rate; -ema: the EMA of the weights
//      (llmc/cuda/vision_ema.cuh, each rank its slices under ZeRO-1);
//   5. a step line every -pe steps; a test loss, top-1 and top-5 accuracy each epoch (and the
//      EMA's); checkpoints (-n, -y 1).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpu_trainer_cli.cuh"
#include "cuda/multi_gpu.cuh"
#include "cuda/multi_gpu_ranks.cuh"
#include "cuda/vit_step_graph.cuh"
#include "cuda/vision_ema.cuh"
#include "cuda/vision_grad_sync.cuh"

extern "C" {
#include "vision/batch_prefetch.h"
#include "kernels/drop_path.h"
#include "core/checkpoint_files.h"
#include "vision/classifier.h"
#include "kernels/classifier_loss.h"
#include "core/cli.h"
#include "core/logger.h"
#include "core/rand.h"
#include "core/run_dir.h"
#include "core/stop_signal.h"
#include "vision/vision_checkpoint.h"
#include "vision/vision_data.h"
#include "vision/vision_train_loop.h"
#include "vision/vit_train_args.h"
#include "vision/vit_train_start.h"
}


// The flags only this trainer takes: the prefetch workers and train_gpt2cu's
// data parallel ones (the rest, checkpoints and -z included, is
// vit_train_args.c's table, train_vit's too).
typedef struct {
    int data_workers;     // -dw: host threads building batches ahead (0: between steps)
    GpuProcessArgs proc;  // -pn, -pr, -pf (llmc/cuda/gpu_trainer_cli.cuh)
    const char *attention_name; // -at: NULL = the build's default for the model's family
    int recompute;              // -r: 0, 1 or 2, ViT only (llmc/cuda/transformer_block.cuh)
    int fuse_epilogues;         // -fe: 0 or 1, ViT's blocks (llmc/cuda/matmul_plan.cuh)
    int cuda_graphs;            // -cg: 1 = ViT steps as CUDA graphs where they can be
} GpuArgs;

// Batches queued ahead of the GPU: k+1 and k+2 are built while step k runs.
#define PREFETCH_DEPTH 2

static VitTrainArgs parse_args(int argc, char **argv, GpuArgs *gpu) {
    VitTrainArgs a = vit_train_args_defaults();
    memset(gpu, 0, sizeof(*gpu));
    gpu->fuse_epilogues = 1;
    // ~0.78 ms an image each under Swin-T's recipe (bench_augment, docs/performance.md):
    // 8 workers cover ~10,000 images/s
    gpu->data_workers = 8;
    gpu->cuda_graphs = 1;
    CliFlag flags[VIT_TRAIN_MAX_FLAGS + 8];
    int n = vit_train_flags(&a, flags);
    const CliFlag gpu_flags[] = {
        {"-dw", CLI_INT, &gpu->data_workers, 0, 256,
         "host threads that augment the next batches while the GPU trains (default 8;\n"
         "0: each batch is built between steps); the same batches either way", NULL, 0, 0},
        GPU_PROCESS_CLI_FLAGS(&gpu->proc),
        {"-at", CLI_CHOICE, &gpu->attention_name, 0, 0,
         "attention kernels: tc = tensor cores, flash-style (ViT) or per window\n"
         "(Swin), bf16 builds only; ViT: cublas = batched cuBLAS matmuls +\n"
         "softmax, keeps the (T, T) probabilities, flash = fp32 FMAs,\n"
         "flash-style, cudnn = cuDNN's fused flash attention (bf16 builds with\n"
         "cuDNN); Swin: window = fp32 FMAs, keeps each window's (T, T)\n"
         "probabilities (default: tc in bf16 builds; flash, Swin window, in fp32)",
         "tc|cublas|flash|window|cudnn", 0, 0},
        RECOMPUTE_CLI_FLAG(&gpu->recompute),
        FUSE_EPILOGUES_CLI_FLAG(&gpu->fuse_epilogues),
        CUDA_GRAPHS_CLI_FLAG(&gpu->cuda_graphs, "Swin and several ranks"),
    };
    for (int i = 0; i < CLI_COUNT(gpu_flags); i++) flags[n++] = gpu_flags[i];
    char about[200];
    snprintf(about, sizeof(about),
             "ViT and Swin training on an NVIDIA GPU, %s build (train_vit's flags).\n",
             FLOATX_NAME);
    CliSpec spec;
    gpu_trainer_parse(&spec, GPU_PROGRAM_NAME("train_vit"), about, flags, n, &gpu->proc, argc, argv);
    vit_train_args_check(&spec, &a);
    return a;
}

// Mean loss (no smoothing), top-1 and top-5 accuracy over the whole split:
// rank r takes batches r, r + world, ... and the sums are reduced.
static void evaluate(ClassifierCuda *model, MultiGpu *mg, const VisionSplit *s, int B, float *images,
                     int *labels, int *indices, float *mean_loss, float *top1, float *top5) {
    double loss_sum = 0.0;
    int correct = 0, correct5 = 0;
    const int K = classifier_cuda_num_classes(model);
    for (int start = mg->rank * B; start < s->count; start += B * mg->world) {
        const int n = s->count - start < B ? s->count - start : B;
        for (int b = 0; b < n; b++) indices[b] = start + b;
        vision_make_batch(images, labels, s, indices, n, NULL);
        classifier_cuda_forward(model, images, labels, 0.0f, n);
        loss_sum += (double)classifier_cuda_mean_loss(model) * n;
        correct += classifier_topk_count(classifier_cuda_logits(model), labels, n, K, 1);
        correct5 += classifier_topk_count(classifier_cuda_logits(model), labels, n, K, 5);
    }
    // the ranks' sums, exact in a double (counts below 2^53)
    loss_sum = multi_gpu_sum_double(mg, loss_sum);
    const double total_correct = multi_gpu_sum_double(mg, (double)correct);
    const double total_correct5 = multi_gpu_sum_double(mg, (double)correct5);
    *mean_loss = (float)(loss_sum / s->count);
    *top1 = (float)(total_correct / s->count);
    *top5 = (float)(total_correct5 / s->count);
}

// Page-locked batch buffers: the forward's cudaMemcpyAsync from them is a true DMA.
static void *pinned_alloc(size_t bytes) {
    void *p = NULL;
    CUDA_CHECK(cudaMallocHost(&p, bytes));
    return p;
}
static void pinned_free(void *p) { CUDA_CHECK(cudaFreeHost(p)); }

// How this rank's batches are flipped: from the shuffle's Rng (one process,
// train_vit's stream), from a stream per rank and batch (several), or not.
typedef struct {
    Rng *rng;             // NULL: no flips
    int per_batch;        // several processes: rng is reseeded for each batch
    unsigned long long seed;
    int rank;
} FlipSource;

// Queues this rank's slices of the epoch's next batches until PREFETCH_DEPTH
// wait; their augmentation is drawn now, in batch order, as the sequential
// trainer draws it. Never past the epoch: its end is where the next shuffle
// draws from the same Rng.
static void queue_batches(BatchPrefetch *prefetch, const int *order, int epoch, int *next_batch,
                          int epoch_batches, int B, const MultiGpu *mg, const FlipSource *flips) {
    while (*next_batch < epoch_batches && batch_prefetch_queued(prefetch) < PREFETCH_DEPTH) {
        if (flips->per_batch) {
            rng_seed(flips->rng, vision_batch_flips_seed(flips->seed, flips->rank, epoch, *next_batch));
        }
        batch_prefetch_submit(prefetch, order + ((size_t)*next_batch * mg->world + mg->rank) * B,
                              flips->rng);
        (*next_batch)++;
    }
}

// The shuffle Rng's state after the batches taken so far, as train_vit's
// sequential loop holds it (a checkpoint's): with one process the queued
// batches' flips have been drawn from it already, so the state before them.
static Rng checkpoint_rng(const Rng *rng, const FlipSource *flips, const BatchPrefetch *prefetch) {
    Rng at = *rng;
    if (flips->rng == rng) batch_prefetch_pending_rng(prefetch, &at.state);
    return at;
}

// The GPU trainer behind vision_train_loop's hooks.
typedef struct {
    ClassifierCuda *model;
    VisionGradSync *sync;
    MultiGpu *mg;
    const VitTrainArgs *args;
    const VisionSplit *test;
    BatchPrefetch *prefetch;
    FlipSource flips;
    int *order;           // the train order (count entries), shuffled by the loop
    int count;
    Rng *rng;             // the loop's shuffling RNG (with one process, the flips' too)
    int epoch, next_batch, end_batch; // the batches queued so far in this epoch
    Classifier *host;     // the checkpoints' host copy (parameters, moments overwritten)
    float *images;        // the test batches
    int *labels, *eval_indices;
    int world, rank;
    float *drop_scales;   // -dp: the global batch's drop-path scales (world * B, L, 2), or NULL
    VisionEmaCuda *ema;   // -ema: the EMA of the weights on the device, or NULL
    WeightEma *host_ema;  // its host copy for the checkpoints (the set-up's)
    VitStepGraph *graph;  // -cg 1: the steps' graph (NULL: eager)
    int steps_run;        // by this process: its first step runs eager
} GpuTrainer;

static void gpu_epoch_begins(void *ctx, int epoch, int first_batch, int end_batch) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    t->epoch = epoch;
    t->next_batch = first_batch;
    t->end_batch = end_batch;
    queue_batches(t->prefetch, t->order, epoch, &t->next_batch, end_batch, t->args->batch_size,
                  t->mg, &t->flips);
}

static float gpu_forward_backward(void *ctx, int epoch, int batch) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    // the prefetch hands the batches out in the loop's order; (epoch, batch) seed the masks
    const int B = t->args->batch_size;
    const float *images; // this rank's slice of the global batch
    const int *labels;
    batch_prefetch_take(t->prefetch, &images, &labels);
    classifier_cuda_set_mix_targets(t->model, batch_prefetch_taken_mix(t->prefetch), B);
    queue_batches(t->prefetch, t->order, t->epoch, &t->next_batch, t->end_batch, B, t->mg,
                  &t->flips);
    if (t->drop_scales != NULL) { // train_vit's masks: the global batch's, this rank's slice
        const int blocks = classifier_num_blocks(t->host);
        Rng drop_rng;
        rng_seed(&drop_rng, drop_path_batch_seed(t->args->seed, epoch, batch));
        drop_path_draw(t->drop_scales, B * t->world, blocks, t->args->drop_path, &drop_rng);
        classifier_cuda_set_drop_path(
            t->model, t->drop_scales + (size_t)t->rank * B * blocks * DROP_PATH_BRANCHES, B);
    }
    // queued: the loss is averaged over the ranks and read with the norm (gpu_step_loss)
    if (t->graph != NULL && t->steps_run > 0) {
        vit_step_graph_step(t->graph, images, labels, t->args->smoothing, B, 1.0f / (float)B);
    } else {
        classifier_cuda_forward_queued(t->model, images, labels, t->args->smoothing, B);
        classifier_cuda_zero_grad(t->model);
        classifier_cuda_backward(t->model, 1.0f / (float)B);
    }
    t->steps_run++;
    classifier_cuda_set_drop_path(t->model, NULL, B); // the test pass keeps every branch
    classifier_cuda_set_mix_targets(t->model, MixTargets{NULL, NULL}, B); // and its labels
    return NAN;
}

static float gpu_update(void *ctx, const AdamWConfig *adamw, float grad_clip) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    vision_grad_sync_reduce(t->sync); // the mean gradient: every rank makes the same update
    const float norm = vision_grad_sync_update(t->sync, adamw, grad_clip);
    if (t->ema != NULL) vision_ema_cuda_update(t->ema); // queued before the next forward
    return norm;
}

static float gpu_step_loss(void *ctx) { return ((GpuTrainer *)ctx)->sync->loss; }

static void gpu_evaluate(void *ctx, float *loss, float *top1, float *top5) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    evaluate(t->model, t->mg, t->test, t->args->batch_size, t->images, t->labels, t->eval_indices,
             loss, top1, top5);
}

// The test of the EMA: swapped into the master weights for the pass, then back (exact).
static void gpu_evaluate_ema(void *ctx, float *loss, float *top1, float *top5) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    float *live = NULL;
    vision_ema_cuda_swap(t->ema, 1, &live);
    gpu_evaluate(ctx, loss, top1, top5);
    vision_ema_cuda_swap(t->ema, 0, &live);
}

// train_vit's checkpoint (model_STEP.bin + state_STEP.bin) after `step`
// with the next batch at (epoch, next_batch) from the GPU's fp32 master
// weights and moments; every rank calls it (ZeRO-1 gathers the moments),
// rank 0 writes. Nothing is queued past the epoch's last batch or the run's
// last step, so the RNG's state is the sequential trainer's.
static void gpu_checkpoint(void *ctx, int step, int epoch, int next_batch) {
    GpuTrainer *t = (GpuTrainer *)ctx;
    const Rng at = checkpoint_rng(t->rng, &t->flips, t->prefetch);
    Classifier *host = t->host;
    classifier_cuda_params_to_host(t->model, host);
    ClassifierAdamW adamw = classifier_adamw(host);
    const size_t bytes = classifier_num_parameters(host) * sizeof(float);
    if (*adamw.m == NULL) {
        *adamw.m = (float *)malloc_check(bytes, "AdamW m for the checkpoint");
        *adamw.v = (float *)malloc_check(bytes, "AdamW v for the checkpoint");
    }
    if (!vision_grad_sync_moments_to_host(t->sync, *adamw.m, *adamw.v)) {
        free(*adamw.m); // no update yet: a state without moments
        free(*adamw.v);
        *adamw.m = NULL;
        *adamw.v = NULL;
    }
    *adamw.step = *classifier_cuda_state(t->model).adamw_step;
    if (t->ema != NULL) vision_ema_cuda_to_host(t->ema, t->host_ema->values);
    if (t->mg->rank != 0) return;
    VisionProgress now = {step, epoch, next_batch, at.state};
    vision_checkpoint_save(host, &now, t->order, t->count, t->host_ema, t->args->output_dir);
    checkpoint_prune(t->args->output_dir, t->args->checkpoint_keep);
    printf("checkpoint: %s/model_%08d.bin\n", t->args->output_dir, step);
}

static int gpu_max_over_ranks(void *ctx, int value) {
    return multi_gpu_max_int(((GpuTrainer *)ctx)->mg, value);
}

static void gpu_synchronize(void *ctx) {
    (void)ctx;
    CUDA_CHECK(cudaDeviceSynchronize());
}

int main(int argc, char **argv) {
    // first, before any thread starts: SIGINT, SIGTERM, SIGUSR1 finish the step,
    // write a checkpoint and exit (llmc/core/stop_signal.h)
    stop_signal_install();
    GpuArgs gpu;
    VitTrainArgs args = parse_args(argc, argv, &gpu);
    if (!cuda_device_present(argv[0])) return EXIT_FAILURE; // before any work, as train_gpt2cu
    // every process's, before the resume's run.txt check (-b x processes)
    MultiGpu mg = multi_gpu_init(gpu.proc.num_processes, gpu.proc.process_rank, gpu.proc.id_file);
    const int lead = mg.rank == 0; // prints, logs and writes checkpoints
    const TrainRanks ranks = multi_gpu_train_ranks(&mg, gpu.proc.num_processes);
    Classifier host;
    VitTrainSetup run;
    vit_train_setup(&run, &host, &args, &ranks);
    VisionSplit *train = &run.train, *test = &run.test;
    const int B = run.B, resumed_from = run.resumed_from;
    const int total_steps = run.total_steps, batches_per_epoch = run.batches_per_epoch;
    Logger *logger = &run.logger;
    const bool windowed = host.family == FAMILY_SWIN;
    AttentionKind attention = attention_kind_default(windowed);
    if (gpu.attention_name != NULL) attention_kind_parse(gpu.attention_name, &attention);
    const char *refusal = attention_kind_refusal(attention, windowed);
    if (refusal != NULL) fatal("-at %s: %s", gpu.attention_name, refusal);
    char shape[512];
    vit_train_describe_model(shape, sizeof(shape), &host);
    const char *const record_data[] = {"train", args.train_data, "test", args.test_data, NULL};
    logger_log_run_record(logger, argc, argv, record_data,
                          "mode=%s seed=%llu %s B=%d steps=%d lr=%g precision=%s attention=%s "
                          "gpus=%d",
                          norm_mode_name(classifier_mode(&host)), args.seed, shape, B,
                          total_steps, (double)args.learning_rate, FLOATX_NAME,
                          attention_kind_name(attention), mg.world);
    ClassifierCuda model;
    // a resumed host's moments and step come along
    classifier_cuda_init(&model, &host, B, attention, gpu.recompute);
    if (model.family == FAMILY_VIT) model.vit.mm.fuse_epilogues = gpu.fuse_epilogues;
    if (lead && model.family == FAMILY_VIT) {
        transformer_blocks_report_acts("vitcuda", gpu.recompute, model.vit.block_act_bytes, B,
                                       vit_num_tokens(&model.vit.config));
    }
    // CUDA graphs: ViT on one rank (the reduction is not captured; Swin runs eager)
    VitStepGraph graph;
    const int use_graphs = gpu.cuda_graphs && mg.world == 1 && model.family == FAMILY_VIT;
    if (use_graphs) vit_step_graph_init(&graph, &model.vit);
    VisionGradSync sync;
    vision_grad_sync_init(&sync, &mg, &model, args.zero_stage);
    VisionEmaCuda ema; // -ema: from the set-up's (a copy of the weights, or the checkpoint's)
    memset(&ema, 0, sizeof(ema));
    if (run.ema.values != NULL) vision_ema_cuda_init(&ema, &sync, &run.ema);
    cudaDeviceProp prop;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    if (lead) {
        printf("train_vitcu | %s x %d | %s | attention %s | %s, %zu parameters, mode %s\n",
               prop.name, mg.world, FLOATX_NAME, attention_kind_name(attention), shape,
               classifier_cuda_num_parameters(&model), norm_mode_name(classifier_cuda_mode(&model)));
        printf("data: %s, %d train / %d test images; B=%d x %d processes (%s), %d steps (%d per "
               "epoch)\n",
               args.train_data, train->count, test->count, B, mg.world,
               sync.sharded ? "ZeRO-1" : "all-reduce", total_steps, batches_per_epoch);
        if (resumed_from >= 0) printf("resumed from %s at step %d\n", args.output_dir, resumed_from);
        printf("CUDA graphs: %s\n",
               use_graphs ? "on (-cg 1): each step's forward and backward as one graph after the "
                            "first step; the update and the test passes eager"
               : !gpu.cuda_graphs ? "off (-cg 0)"
               : mg.world > 1     ? "off: several ranks (-cg 1 needs one)"
                                  : "off: Swin steps run eager");
        fflush(stdout);
    }

    const size_t image_floats = (size_t)train->channels * train->side * train->side;
    Rng rng; // shuffles and, with one process, flips: the checkpoints' RNG
    rng.state = run.start.rng_state;
    GpuTrainer trainer;
    memset(&trainer, 0, sizeof(trainer));
    trainer.model = &model;
    trainer.sync = &sync;
    trainer.mg = &mg;
    trainer.args = &args;
    trainer.test = test;
    trainer.order = run.order;
    trainer.count = train->count;
    trainer.rng = &rng;
    trainer.host = &host;
    trainer.ema = run.ema.values != NULL ? &ema : NULL;
    trainer.host_ema = &run.ema;
    trainer.graph = use_graphs ? &graph : NULL;
    trainer.images = (float *)malloc_check(mul_size_check(B, image_floats * sizeof(float), "batch"),
                                           "batch");
    trainer.labels = (int *)malloc_check((size_t)B * sizeof(int), "labels");
    trainer.eval_indices = (int *)malloc_check((size_t)B * sizeof(int), "eval indices");
    Rng rank_flips; // several processes: each rank flips its slice from its own stream
    trainer.flips = FlipSource{NULL, mg.world > 1, args.seed, mg.rank};
    trainer.world = mg.world;
    trainer.rank = mg.rank;
    if (args.drop_path > 0.0f) {
        trainer.drop_scales = (float *)malloc_check(
            mul_size_check((size_t)run.global_B, (size_t)classifier_num_blocks(&host) * DROP_PATH_BRANCHES *
                                                 sizeof(float), "drop-path scales"),
            "drop-path scales");
    }
    if (args.flip) trainer.flips.rng = mg.world == 1 ? &rng : &rank_flips;
    trainer.flips.per_batch = trainer.flips.per_batch && trainer.flips.rng != NULL;
    BatchPrefetch *prefetch = batch_prefetch_create(train, B, PREFETCH_DEPTH, gpu.data_workers,
                                                    BatchBufferAllocator{pinned_alloc, pinned_free});
    batch_prefetch_set_augment(prefetch, &args.augment);
    trainer.prefetch = prefetch;
    VisionTrainHooks hooks;
    memset(&hooks, 0, sizeof(hooks));
    hooks.ctx = &trainer;
    hooks.epoch_begins = gpu_epoch_begins;
    hooks.forward_backward = gpu_forward_backward;
    hooks.update = gpu_update;
    hooks.step_loss = gpu_step_loss;
    hooks.evaluate = gpu_evaluate;
    hooks.evaluate_ema = run.ema.values != NULL ? gpu_evaluate_ema : NULL;
    hooks.checkpoint = gpu_checkpoint;
    hooks.max_over_ranks = gpu_max_over_ranks;
    hooks.synchronize = gpu_synchronize;
    const VisionLoopConfig loop = vit_train_loop_config(&run, &args, &ranks, argc, argv);
    const VisionLoopResult r =
        vision_train_loop(&hooks, &loop, &run.start, run.order, train->count, &rng, logger);
    if (r.stopped_by == 0 && lead) {
        // median_images_per_s as train_vit's (scripts/study.sh reads it), after the fields check.sh reads
        printf("final: family %s mode %s %s test_accuracy %.4f test_loss %.4f images_per_s %.1f "
               "median_images_per_s %.1f test_top5 %.4f test_ema_accuracy %.4f test_ema_top5 "
               "%.4f test_ema_loss %.4f\n",
               vision_family_name(host.family), norm_mode_name(classifier_cuda_mode(&model)),
               FLOATX_NAME, r.test_accuracy, r.test_loss, r.images_per_s, r.median_images_per_s,
               r.test_top5, r.test_ema_accuracy, r.test_ema_top5, r.test_ema_loss);
    }
    if (use_graphs) {
        if (lead && graph.graph.launches > 0) {
            printf("CUDA graphs: %d captured (%zu nodes each), %d launched\n",
                   graph.graph.captures, graph.graph.nodes, graph.graph.launches);
        }
        vit_step_graph_free(&graph);
    }
    batch_prefetch_free(prefetch); // joins the workers (a stop may leave batches queued)
    free(trainer.images);
    free(trainer.drop_scales);
    free(trainer.labels);
    free(trainer.eval_indices);
    if (trainer.ema != NULL) vision_ema_cuda_free(&ema);
    vision_grad_sync_free(&sync);
    classifier_cuda_free(&model);
    multi_gpu_free(&mg);
    vit_train_setup_free(&run);
    classifier_free(&host);
    return r.stopped_by != 0 ? 128 + r.stopped_by : EXIT_SUCCESS;
}
