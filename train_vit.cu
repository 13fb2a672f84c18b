// ViT and Swin training on an NVIDIA GPU in the three norm modes (ln, rms, cbwc): the
// CUDA counterpart of train_vit.c with the same flags (one table,
// llmc/vit_train_args.c), data (llmc/vision_data.c: Fashion-MNIST IDX or
// image shards, augmented on the host), model files (llmc/vision_model.c:
// a file written here loads in train_vit and back) and checkpoints
// (llmc/vision_checkpoint.c: -n, -nk, -y 1 resumes exactly, a CPU run's
// checkpoint resumes here and back; a stop signal checkpoints and exits). The
// host augments the next batches on a pool of threads while the GPU trains on
// this one (llmc/batch_prefetch.c). bf16
// mixed precision by default (fp32 master weights and moments, which is what
// the checkpoints hold), fp32 throughout when built with -DFOLDNORM_FP32
// (train_vitfp32cu). The models live in llmc/vit_cuda.cuh and
// llmc/swin_cuda.cuh (one interface: llmc/classifier_cuda.cuh). Data parallel
// over NCCL (-pn/-pr/-pf or mpirun, as train_gpt2cu): -b images per GPU, the
// gradients averaged by an all-reduce per step, or with -z 1 (ZeRO-1)
// reduce-scattered, each rank updating its shard of the AdamW moments
// (llmc/vision_grad_sync.cuh).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multi_gpu.cuh"
#include "vision_grad_sync.cuh"

extern "C" {
#include "batch_prefetch.h"
#include "checkpoint.h"
#include "classifier.h"
#include "classifier_loss.h"
#include "cli.h"
#include "logger.h"
#include "rand.h"
#include "run_dir.h"
#include "schedule.h"
#include "stop_signal.h"
#include "vision_checkpoint.h"
#include "vision_data.h"
#include "vit_train_args.h"
}

#define MAX_COUNT 1073741824.0 // 2^30

// The flags only this trainer takes: train_vit's checkpoint flags and
// train_gpt2cu's data parallel ones.
typedef struct {
    int checkpoint_every; // -n: 0 = only at the end of each epoch
    int checkpoint_keep;  // -nk: 0 = all
    int resume;           // -y
    int zero_stage;       // -z: 1 = ZeRO-1 (with several processes), 0 = all-reduce
    int data_workers;     // -dw: host threads building batches ahead (0: between steps)
    int num_processes;    // -pn: 0 = from mpirun's environment, else 1
    int process_rank;     // -pr
    const char *id_file;  // -pf: shared file for the NCCL unique id
} GpuArgs;

// Batches queued ahead of the GPU: k+1 and k+2 are built while step k runs.
#define PREFETCH_DEPTH 2

static VitTrainArgs parse_args(int argc, char **argv, GpuArgs *gpu) {
    VitTrainArgs a = vit_train_args_defaults();
    memset(gpu, 0, sizeof(*gpu));
    gpu->zero_stage = 1; // train_gpt2cu's default
    gpu->data_workers = 8; // ~550 Swin-Tiny crops/s each (docs/performance.md): 8 feed ~4k images/s
    CliFlag flags[VIT_TRAIN_MAX_FLAGS + 8];
    int n = vit_train_flags(&a, flags);
    const CliFlag gpu_flags[] = {
        {"-n", CLI_INT, &gpu->checkpoint_every, 0, MAX_COUNT,
         "checkpoint also every this many steps, 0 = only at the end of each\n"
         "epoch (default 0)", NULL, 0, 0},
        {"-nk", CLI_INT, &gpu->checkpoint_keep, 0, MAX_COUNT,
         "keep only the newest this many checkpoints, 0 = all (default 0)", NULL, 0, 0},
        {"-y", CLI_INT, &gpu->resume, 0, 1, "resume from the newest checkpoint in -o (default 0)",
         NULL, 0, 0},
        {"-z", CLI_INT, &gpu->zero_stage, 0, 1,
         "ZeRO stage: 1 shards the AdamW moments over the processes, 0 all-reduces\n"
         "the gradients and every process updates all (default 1)", NULL, 0, 0},
        {"-dw", CLI_INT, &gpu->data_workers, 0, 256,
         "host threads that augment the next batches while the GPU trains (default 8;\n"
         "0: each batch is built between steps); the same batches either way", NULL, 0, 0},
        {"-pn", CLI_INT, &gpu->num_processes, 0, 65536,
         "data parallel: number of processes, one GPU each, -b images each (default:\n"
         "mpirun's environment, else 1)", NULL, 0, 0},
        {"-pr", CLI_INT, &gpu->process_rank, 0, 65535, "this process's rank, 0 .. pn-1 (with -pn)",
         NULL, 0, 0},
        {"-pf", CLI_STRING, &gpu->id_file, 0, 0,
         "shared file through which rank 0 hands the NCCL id to the others;\n"
         "must not exist at launch, rank 0 removes it once all have joined", "file", 0, 0},
    };
    for (int i = 0; i < CLI_COUNT(gpu_flags); i++) flags[n++] = gpu_flags[i];
    char about[200];
    snprintf(about, sizeof(about),
             "ViT and Swin training on an NVIDIA GPU, %s build (train_vit's flags).\n",
             FLOATX_NAME);
    CliSpec spec;
    memset(&spec, 0, sizeof(spec));
#ifdef FOLDNORM_FP32
    spec.program = "train_vitfp32cu";
#else
    spec.program = "train_vitcu";
#endif
    spec.synopsis = "[options]";
    spec.about = about;
    spec.flags = flags;
    spec.num_flags = n;
    cli_parse(&spec, argc, argv, NULL);
    if (gpu->num_processes > 0 && gpu->process_rank >= gpu->num_processes) {
        cli_error(&spec, "-pn %d -pr %d: need 0 <= pr < pn", gpu->num_processes,
                  gpu->process_rank);
    }
    if (gpu->resume && a.output_dir == NULL) {
        cli_error(&spec, "-y 1 needs -o, the directory to resume from");
    }
    return a;
}

// Mean loss (no smoothing) and top-1 accuracy over the whole split: rank r
// takes batches r, r + world, ... and the sums are reduced.
static void evaluate(ClassifierCuda *model, MultiGpu *mg, const VisionSplit *s, int B, float *images,
                     int *labels, int *indices, float *mean_loss, float *accuracy) {
    double loss_sum = 0.0;
    int correct = 0;
    const int K = classifier_cuda_num_classes(model);
    for (int start = mg->rank * B; start < s->count; start += B * mg->world) {
        const int n = s->count - start < B ? s->count - start : B;
        for (int b = 0; b < n; b++) indices[b] = start + b;
        vision_make_batch(images, labels, s, indices, n, NULL);
        classifier_cuda_forward(model, images, labels, 0.0f, n);
        loss_sum += (double)classifier_cuda_mean_loss(model) * n;
        correct += classifier_correct_count(classifier_cuda_logits(model), labels, n, K);
    }
    // the ranks' sums: mean over ranks times ranks (counts stay integers below 2^24)
    loss_sum = (double)multi_gpu_mean(mg, (float)loss_sum) * mg->world;
    const double total_correct = round((double)multi_gpu_mean(mg, (float)correct) * mg->world);
    *mean_loss = (float)(loss_sum / s->count);
    *accuracy = (float)(total_correct / s->count);
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

// Where a run starts, where it is and how it saves itself.
typedef struct {
    VisionProgress start; // a new run: step 0, epoch 0, batch 0, the seeded RNG
    int *order;           // the train order (count entries), shuffled in place each epoch
    int count;
    Classifier *host;     // the checkpoints' host copy (parameters, moments overwritten)
    VisionGradSync *sync;
    const GpuArgs *gpu;
    const char *dir;      // -o, or NULL
} RunState;

// train_vit's checkpoint (model_STEP.bin + state_STEP.bin) after `step`
// with the next batch at (epoch, batch) from the GPU's fp32 master weights
// and moments; every rank calls it (ZeRO-1 gathers the moments), rank 0 writes.
static void save_checkpoint(RunState *run, int step, int epoch, int batch, const Rng *rng) {
    ClassifierCuda *model = run->sync->model;
    Classifier *host = run->host;
    classifier_cuda_params_to_host(model, host);
    ClassifierAdamW adamw = classifier_adamw(host);
    const size_t bytes = classifier_num_parameters(host) * sizeof(float);
    if (*adamw.m == NULL) {
        *adamw.m = (float *)malloc_check(bytes, "AdamW m for the checkpoint");
        *adamw.v = (float *)malloc_check(bytes, "AdamW v for the checkpoint");
    }
    if (!vision_grad_sync_moments_to_host(run->sync, *adamw.m, *adamw.v)) {
        free(*adamw.m); // no update yet: a state without moments
        free(*adamw.v);
        *adamw.m = NULL;
        *adamw.v = NULL;
    }
    *adamw.step = *classifier_cuda_state(model).adamw_step;
    if (run->sync->mg->rank != 0) return;
    VisionProgress now = {step, epoch, batch, rng->state};
    vision_checkpoint_save(host, &now, run->order, run->count, run->dir);
    checkpoint_prune(run->dir, run->gpu->checkpoint_keep);
    printf("checkpoint: %s/model_%08d.bin\n", run->dir, step);
}

int main(int argc, char **argv) {
    GpuArgs gpu;
    VitTrainArgs args = parse_args(argc, argv, &gpu);
    stop_signal_install(); // SIGINT, SIGTERM, SIGUSR1: finish the step, checkpoint, exit
    int resumed_from = -1;
    if (args.output_dir != NULL) {
        int newest = checkpoint_find_latest(args.output_dir);
        run_dir_check_start(args.output_dir, gpu.resume, newest);
        resumed_from = gpu.resume ? newest : -1;
    }
    VisionSplit train, test;
    vision_data_load(&train, &test, args.train_data, args.test_data, args.max_train,
                     args.max_test);
    RunState run;
    memset(&run, 0, sizeof(run));
    run.count = train.count;
    run.gpu = &gpu;
    run.dir = args.output_dir;
    run.order = (int *)malloc_check((size_t)train.count * sizeof(int), "train order");
    Classifier host;
    run.host = &host;
    if (resumed_from >= 0) {
        // the newest checkpoint that verifies (a damaged newer one is named and skipped);
        // a CPU run's as well as a GPU run's
        resumed_from = vision_checkpoint_resume(&host, &run.start, run.order, train.count,
                                                args.output_dir);
        vit_train_check_resumed(&host, &args, &train);
    } else {
        vit_train_build_model(&host, &args, &train); // the same seed on every rank
        for (int i = 0; i < train.count; i++) run.order[i] = i;
        Rng seeded; // the CPU trainer's shuffles (the same on every rank) and, one process, flips
        rng_seed(&seeded, args.seed ^ 0xDA7AULL);
        run.start.rng_state = seeded.state;
    }
    if (!cuda_device_present(argv[0])) {
        free(run.order);
        vision_split_free(&train);
        vision_split_free(&test);
        classifier_free(&host);
        return EXIT_SUCCESS;
    }
    MultiGpu mg = multi_gpu_init(gpu.num_processes, gpu.process_rank, gpu.id_file);
    const int lead = mg.rank == 0; // prints, logs and writes checkpoints
    const int B = args.batch_size, global_B = B * mg.world;
    if (train.count < global_B) {
        fatal("-b %d x %d processes: larger than the %d train images", B, mg.world, train.count);
    }
    const int batches_per_epoch = train.count / global_B;
    if (run.start.next_batch >= batches_per_epoch) {
        fatal("%s: the checkpoint's next batch %d is past the %d batches of an epoch of %d images",
              args.output_dir, run.start.next_batch, batches_per_epoch, global_B);
    }
    const int total_steps = args.max_steps > 0 ? args.max_steps : args.epochs * batches_per_epoch;
    if (lead && args.output_dir != NULL) {
        make_directories(args.output_dir);
        run_dir_remove_stale_tmp(args.output_dir);
        RunSetting settings[VIT_RUN_SETTINGS];
        vit_train_run_settings(&args, global_B, train.count, settings);
        run_dir_check_settings(args.output_dir, settings, VIT_RUN_SETTINGS, resumed_from >= 0);
    }
    Logger logger;
    logger_init(&logger, lead ? args.output_dir : NULL, lead ? resumed_from : -1);
    char shape[512];
    vit_train_describe_model(shape, sizeof(shape), &host);
    const char *const record_data[] = {"train", args.train_data, "test", args.test_data, NULL};
    logger_log_run_record(&logger, argc, argv, record_data,
                          "mode=%s seed=%llu %s B=%d steps=%d lr=%g precision=%s gpus=%d",
                          norm_mode_name(classifier_mode(&host)), args.seed, shape, B,
                          total_steps, (double)args.learning_rate, FLOATX_NAME, mg.world);
    ClassifierCuda model;
    classifier_cuda_init(&model, &host, B); // a resumed host's moments and step come along
    VisionGradSync sync;
    vision_grad_sync_init(&sync, &mg, &model, gpu.zero_stage);
    run.sync = &sync;
    cudaDeviceProp prop;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    if (lead) {
        printf("train_vitcu | %s x %d | %s | %s, %zu parameters, mode %s\n", prop.name, mg.world,
               FLOATX_NAME, shape, classifier_cuda_num_parameters(&model),
               norm_mode_name(classifier_cuda_mode(&model)));
        printf("data: %s, %d train / %d test images; B=%d x %d processes (%s), %d steps (%d per "
               "epoch)\n",
               args.train_data, train.count, test.count, B, mg.world,
               sync.sharded ? "ZeRO-1" : "all-reduce", total_steps, batches_per_epoch);
        if (resumed_from >= 0) printf("resumed from %s at step %d\n", args.output_dir, resumed_from);
        fflush(stdout);
    }

    const size_t image_floats = (size_t)train.channels * train.side * train.side;
    float *images = (float *)malloc_check(mul_size_check(B, image_floats * sizeof(float), "batch"),
                                          "batch");
    int *labels = (int *)malloc_check((size_t)B * sizeof(int), "labels");
    int *eval_indices = (int *)malloc_check((size_t)B * sizeof(int), "eval indices");
    int *order = run.order;
    Rng rng; // shuffles and, with one process, flips: the checkpoints' RNG
    rng.state = run.start.rng_state;
    Rng rank_flips; // several processes: each rank flips its slice from its own stream
    FlipSource flips = {NULL, mg.world > 1, args.seed, mg.rank};
    if (args.flip) flips.rng = mg.world == 1 ? &rng : &rank_flips;
    flips.per_batch = flips.per_batch && flips.rng != NULL;
    BatchPrefetch *prefetch = batch_prefetch_create(&train, B, PREFETCH_DEPTH, gpu.data_workers,
                                                    BatchBufferAllocator{pinned_alloc, pinned_free});
    AdamWConfig adamw = {0.0f, 0.9f, 0.999f, 1e-8f, args.weight_decay};
    double timed_seconds = 0.0;
    long long timed_images = 0;
    float test_loss = NAN, test_accuracy = NAN;
    int step = run.start.step, evaluated = 0;
    const int first_step = step;
    int stopped_by = 0; // the stop signal, agreed by all ranks after each step
    // train_vit.c's loop: a checkpoint every -n steps inside an epoch, and after each
    // epoch's test (its progress the next epoch's start when the epoch is complete)
    for (int epoch = run.start.epoch; step < total_steps && stopped_by == 0; epoch++) {
        int batch = epoch == run.start.epoch ? run.start.next_batch : 0;
        if (batch == 0) vision_shuffle(order, train.count, &rng);
        const int epoch_batches = batches_per_epoch < batch + (total_steps - step)
                                      ? batches_per_epoch
                                      : batch + (total_steps - step);
        int next_batch = batch;
        queue_batches(prefetch, order, epoch, &next_batch, epoch_batches, B, &mg, &flips);
        for (; batch < batches_per_epoch && step < total_steps; batch++) {
            CUDA_CHECK(cudaDeviceSynchronize());
            const double t0 = now_seconds();
            const float *batch_images; // this rank's slice of the global batch
            const int *batch_labels;
            batch_prefetch_take(prefetch, &batch_images, &batch_labels);
            queue_batches(prefetch, order, epoch, &next_batch, epoch_batches, B, &mg, &flips);
            classifier_cuda_forward(&model, batch_images, batch_labels, args.smoothing, B);
            const float loss = multi_gpu_mean(&mg, classifier_cuda_mean_loss(&model));
            classifier_cuda_zero_grad(&model);
            classifier_cuda_backward(&model, 1.0f / (float)B);
            // the mean gradient over the ranks: every rank makes the same update
            vision_grad_sync_reduce(&sync);
            adamw.learning_rate = lr_cosine_with_warmup(step, total_steps, args.warmup_steps,
                                                        args.learning_rate, args.final_lr_fraction);
            if (!isfinite(loss)) {
                fatal("step %d: the loss is not finite (%f); try a lower -l", step + 1, loss);
            }
            const float grad_norm = vision_grad_sync_update(&sync, &adamw, args.grad_clip);
            CUDA_CHECK(cudaDeviceSynchronize());
            const double seconds = now_seconds() - t0;
            if (step > first_step) { // the first step pays for cuBLAS's setup
                timed_seconds += seconds;
                timed_images += global_B;
            }
            step++;
            logger_log_train(&logger, step, loss, adamw.learning_rate, grad_norm);
            if (lead && (step % args.print_every == 0 || step == 1 || step == total_steps)) {
                printf("step %5d/%d | epoch %d | loss %.4f | lr %.2e | norm %.3f | %.2f ms | "
                       "%.0f images/s\n",
                       step, total_steps, epoch + 1, loss, adamw.learning_rate, grad_norm,
                       seconds * 1e3, global_B / seconds);
                fflush(stdout);
            }
            // a stop signal on any rank stops every rank after the same step (max = -min(-x))
            stopped_by = -multi_gpu_min_int(&mg, -stop_signal_received());
            // the epoch's last step checkpoints after the test below
            const int epoch_ends = batch + 1 == batches_per_epoch || step == total_steps;
            const int periodic = gpu.checkpoint_every > 0 && step % gpu.checkpoint_every == 0;
            if (!epoch_ends && (periodic || stopped_by != 0)) {
                if (args.output_dir != NULL) {
                    const Rng at = checkpoint_rng(&rng, &flips, prefetch);
                    save_checkpoint(&run, step, epoch, batch + 1, &at);
                }
                if (stopped_by != 0) break;
            }
        }
        if (stopped_by != 0 && batch < batches_per_epoch && step < total_steps) {
            break; // stopped mid-epoch: checkpointed above
        }
        evaluate(&model, &mg, &test, B, images, labels, eval_indices, &test_loss, &test_accuracy);
        evaluated = 1;
        if (lead) printf("epoch %d | step %d | test loss %.4f | test accuracy %.4f\n", epoch + 1, step,
               test_loss, test_accuracy);
        logger_log_val(&logger, step, test_loss);
        if (logger.file != NULL) {
            fprintf(logger.file, "s:%d tea:%.6f\n", step, test_accuracy);
            fflush(logger.file);
        }
        if (args.output_dir != NULL) {
            const int done = batch == batches_per_epoch; // the next batch opens the next epoch
            // nothing is queued past the epoch's last batch or the run's last step
            const Rng at = checkpoint_rng(&rng, &flips, prefetch);
            save_checkpoint(&run, step, done ? epoch + 1 : epoch, done ? 0 : batch, &at);
        }
        stopped_by = -multi_gpu_min_int(&mg, -stop_signal_received());
    }
    if (!evaluated && stopped_by == 0) { // resumed at the end
        evaluate(&model, &mg, &test, B, images, labels, eval_indices, &test_loss, &test_accuracy);
    }
    if (stopped_by != 0) {
        // "mpirun -np N" in the command only when mpirun started the ranks (-pn 0)
        if (lead) run_dir_report_stop(stopped_by, step, args.output_dir, argc, argv,
                                      gpu.num_processes == 0 ? mg.world : 1);
        // mpirun aborts the job at a rank's non-zero exit: none leaves before rank 0 wrote
        multi_gpu_min_int(&mg, 0);
    } else if (lead) {
        printf("final: family %s mode %s %s test_accuracy %.4f test_loss %.4f images_per_s %.1f\n",
               vision_family_name(host.family), norm_mode_name(classifier_cuda_mode(&model)),
               FLOATX_NAME, test_accuracy, test_loss,
               timed_images > 0 ? timed_images / timed_seconds : 0.0);
    }
    batch_prefetch_free(prefetch); // joins the workers (a stop may leave batches queued)
    free(images);
    free(labels);
    free(eval_indices);
    free(run.order);
    logger_free(&logger);
    vision_grad_sync_free(&sync);
    classifier_cuda_free(&model);
    multi_gpu_free(&mg);
    vision_split_free(&train);
    vision_split_free(&test);
    classifier_free(&host);
    return stopped_by != 0 ? 128 + stopped_by : EXIT_SUCCESS;
}
