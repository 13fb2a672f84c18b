// ViT and Swin training on an NVIDIA GPU in the three norm modes (ln, rms, cbwc): the
// CUDA counterpart of train_vit.c with the same flags (one table,
// llmc/vit_train_args.c), data (llmc/vision_data.c: Fashion-MNIST IDX or
// image shards, augmented on the host by a pool of threads that builds the
// next batches while the GPU trains on this one: llmc/batch_prefetch.c) and model files (llmc/vision_model.c:
// a file written here loads in train_vit and back). bf16 mixed precision by
// default, fp32 throughout when built with -DFOLDNORM_FP32 (train_vitfp32cu).
// The models live in llmc/vit_cuda.cuh and llmc/swin_cuda.cuh (one interface:
// llmc/classifier_cuda.cuh). Data parallel over
// NCCL (-pn/-pr/-pf or mpirun, as train_gpt2cu): -b images per GPU, the
// gradients averaged with one all-reduce per step. No resumable checkpoints
// (train_vit has none).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multi_gpu.cuh"
#include "classifier_cuda.cuh"

extern "C" {
#include "batch_prefetch.h"
#include "classifier.h"
#include "classifier_loss.h"
#include "cli.h"
#include "logger.h"
#include "rand.h"
#include "schedule.h"
#include "stop_signal.h"
#include "vision_data.h"
#include "vit_train_args.h"
}

// The flags only the GPU trainer takes (train_gpt2cu's).
typedef struct {
    int num_processes;   // -pn: 0 = from mpirun's environment, else 1
    int process_rank;    // -pr
    const char *id_file; // -pf: shared file for the NCCL unique id
    int data_workers;    // -dw: host threads building batches ahead (0: between steps)
} GpuArgs;

// Batches queued ahead of the GPU: k+1 and k+2 are built while step k runs.
#define PREFETCH_DEPTH 2

static VitTrainArgs parse_args(int argc, char **argv, GpuArgs *gpu) {
    VitTrainArgs a = vit_train_args_defaults();
    memset(gpu, 0, sizeof(*gpu));
    gpu->data_workers = 8; // ~550 Swin-Tiny crops/s each (docs/performance.md): 8 feed ~4k images/s
    CliFlag flags[VIT_TRAIN_MAX_FLAGS + 4];
    int n = vit_train_flags(&a, flags);
    const CliFlag gpu_flags[] = {
        {"-pn", CLI_INT, &gpu->num_processes, 0, 65536,
         "data parallel: number of processes, one GPU each, -b images each (default:\n"
         "mpirun's environment, else 1)", NULL, 0, 0},
        {"-pr", CLI_INT, &gpu->process_rank, 0, 65535, "this process's rank, 0 .. pn-1 (with -pn)",
         NULL, 0, 0},
        {"-pf", CLI_STRING, &gpu->id_file, 0, 0,
         "shared file through which rank 0 hands the NCCL id to the others;\n"
         "must not exist at launch, rank 0 removes it once all have joined", "file", 0, 0},
        {"-dw", CLI_INT, &gpu->data_workers, 0, 256,
         "host threads that augment the next batches while the GPU trains (default 8;\n"
         "0: each batch is built between steps); the same batches either way", NULL, 0, 0},
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

// Queues this rank's slices of the epoch's next batches until PREFETCH_DEPTH
// wait; their augmentation is drawn now, in batch order, as the sequential
// trainer draws it. Never past the epoch: its end is where the next shuffle
// draws from the same Rng.
static void queue_batches(BatchPrefetch *prefetch, const int *order, int *next_batch,
                          int epoch_batches, int B, const MultiGpu *mg, Rng *flips) {
    while (*next_batch < epoch_batches && batch_prefetch_queued(prefetch) < PREFETCH_DEPTH) {
        batch_prefetch_submit(prefetch, order + ((size_t)*next_batch * mg->world + mg->rank) * B,
                              flips);
        (*next_batch)++;
    }
}

// The GPU's fp32 master weights into the host model, written as a vision
// model file (train_vit.c's model_STEP.bin).
static void save_model(const ClassifierCuda *gpu, Classifier *host, const char *dir, int step) {
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/model_%08d.bin", dir, step);
    if (n < 0 || (size_t)n >= sizeof(path)) fatal("-o: output directory path too long: %s", dir);
    classifier_cuda_params_to_host(gpu, host);
    classifier_save(host, path);
    printf("checkpoint: %s\n", path);
}

int main(int argc, char **argv) {
    GpuArgs gpu;
    VitTrainArgs args = parse_args(argc, argv, &gpu);
    stop_signal_install(); // SIGINT, SIGTERM, SIGUSR1: finish the step, write the model, exit
    VisionSplit train, test;
    vision_data_load(&train, &test, args.train_data, args.test_data, args.max_train,
                     args.max_test);
    Classifier host;
    vit_train_build_model(&host, &args, &train);
    if (!cuda_device_present(argv[0])) {
        vision_split_free(&train);
        vision_split_free(&test);
        classifier_free(&host);
        return EXIT_SUCCESS;
    }
    MultiGpu mg = multi_gpu_init(gpu.num_processes, gpu.process_rank, gpu.id_file);
    const int lead = mg.rank == 0; // prints, logs and writes model files
    const int B = args.batch_size, global_B = B * mg.world;
    if (train.count < global_B) {
        fatal("-b %d x %d processes: larger than the %d train images", B, mg.world, train.count);
    }
    const int batches_per_epoch = train.count / global_B;
    const int total_steps = args.max_steps > 0 ? args.max_steps : args.epochs * batches_per_epoch;
    if (lead && args.output_dir != NULL) make_directories(args.output_dir);
    Logger logger;
    logger_init(&logger, lead ? args.output_dir : NULL, -1); // a new log: no resume yet
    char shape[512];
    vit_train_describe_model(shape, sizeof(shape), &host);
    const char *const record_data[] = {"train", args.train_data, "test", args.test_data, NULL};
    logger_log_run_record(&logger, argc, argv, record_data,
                          "mode=%s seed=%llu %s B=%d steps=%d lr=%g precision=%s gpus=%d",
                          norm_mode_name(classifier_mode(&host)), args.seed, shape, B,
                          total_steps, (double)args.learning_rate, FLOATX_NAME, mg.world);
    ClassifierCuda model;
    classifier_cuda_init(&model, &host, B);
    cudaDeviceProp prop;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    if (lead) {
        printf("train_vitcu | %s x %d | %s | %s, %zu parameters, mode %s\n", prop.name, mg.world,
               FLOATX_NAME, shape, classifier_cuda_num_parameters(&model),
               norm_mode_name(classifier_cuda_mode(&model)));
        printf("data: %s, %d train / %d test images; B=%d x %d processes, %d steps (%d per "
               "epoch)\n",
               args.train_data, train.count, test.count, B, mg.world, total_steps,
               batches_per_epoch);
    }

    const size_t image_floats = (size_t)train.channels * train.side * train.side;
    float *images = (float *)malloc_check(mul_size_check(B, image_floats * sizeof(float), "batch"),
                                          "batch");
    int *labels = (int *)malloc_check((size_t)B * sizeof(int), "labels");
    int *eval_indices = (int *)malloc_check((size_t)B * sizeof(int), "eval indices");
    int *order = (int *)malloc_check((size_t)train.count * sizeof(int), "train order");
    for (int i = 0; i < train.count; i++) order[i] = i;
    Rng rng; // the CPU trainer's shuffles (the same on every rank) and, with one process, flips
    rng_seed(&rng, args.seed ^ 0xDA7AULL);
    Rng rank_flips; // several processes: each flips its own slice from its own stream
    rng_seed(&rank_flips, (args.seed ^ 0xF11BULL) + 0x9E3779B97F4A7C15ULL * (unsigned long long)mg.rank);
    Rng *flips = args.flip ? (mg.world == 1 ? &rng : &rank_flips) : NULL;
    BatchPrefetch *prefetch = batch_prefetch_create(&train, B, PREFETCH_DEPTH, gpu.data_workers,
                                                    BatchBufferAllocator{pinned_alloc, pinned_free});
    AdamWConfig adamw = {0.0f, 0.9f, 0.999f, 1e-8f, args.weight_decay};
    double timed_seconds = 0.0;
    long long timed_images = 0;
    float test_loss = NAN, test_accuracy = NAN;
    int step = 0;
    int stopped_by = 0; // the stop signal, agreed by all ranks after each step
    for (int epoch = 0; step < total_steps && stopped_by == 0; epoch++) {
        vision_shuffle(order, train.count, &rng);
        const int epoch_batches = batches_per_epoch < total_steps - step ? batches_per_epoch
                                                                          : total_steps - step;
        int next_batch = 0;
        queue_batches(prefetch, order, &next_batch, epoch_batches, B, &mg, flips);
        for (int batch = 0; batch < batches_per_epoch && step < total_steps; batch++) {
            CUDA_CHECK(cudaDeviceSynchronize());
            const double t0 = now_seconds();
            const float *batch_images; // this rank's slice of the global batch
            const int *batch_labels;
            batch_prefetch_take(prefetch, &batch_images, &batch_labels);
            queue_batches(prefetch, order, &next_batch, epoch_batches, B, &mg, flips);
            classifier_cuda_forward(&model, batch_images, batch_labels, args.smoothing, B);
            const float loss = multi_gpu_mean(&mg, classifier_cuda_mean_loss(&model));
            classifier_cuda_zero_grad(&model);
            classifier_cuda_backward(&model, 1.0f / (float)B);
            // the mean gradient over the ranks: every rank makes the same update
            size_t grad_count = 0;
            float *grads = classifier_cuda_grads(&model, &grad_count);
            multi_gpu_average(&mg, grads, grad_count, classifier_cuda_stream(&model));
            adamw.learning_rate = lr_cosine_with_warmup(step, total_steps, args.warmup_steps,
                                                        args.learning_rate, args.final_lr_fraction);
            if (!isfinite(loss)) {
                fatal("step %d: the loss is not finite (%f); try a lower -l", step + 1, loss);
            }
            const float grad_norm = classifier_cuda_update(&model, &adamw, args.grad_clip);
            CUDA_CHECK(cudaDeviceSynchronize());
            const double seconds = now_seconds() - t0;
            if (step > 0) { // the first step pays for cuBLAS's setup
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
            stopped_by = -multi_gpu_min_int(&mg, -stop_signal_received());
            if (stopped_by != 0) break;
        }
        if (stopped_by != 0) { // the step is finished: keep it, say so, exit 128 + signal
            if (lead) {
                printf("stopped by %s after step %d\n", stop_signal_name(stopped_by), step);
                if (args.output_dir != NULL) save_model(&model, &host, args.output_dir, step);
                printf("train_vitcu has no resume yet: the model file trains on with -e FILE\n");
            }
            break;
        }
        evaluate(&model, &mg, &test, B, images, labels, eval_indices, &test_loss, &test_accuracy);
        if (lead) printf("epoch %d | step %d | test loss %.4f | test accuracy %.4f\n", epoch + 1, step,
               test_loss, test_accuracy);
        logger_log_val(&logger, step, test_loss);
        if (logger.file != NULL) {
            fprintf(logger.file, "s:%d tea:%.6f\n", step, test_accuracy);
            fflush(logger.file);
        }
        if (lead && args.output_dir != NULL) save_model(&model, &host, args.output_dir, step);
    }
    if (lead) printf("final: family %s mode %s %s test_accuracy %.4f test_loss %.4f images_per_s %.1f\n",
           vision_family_name(host.family), norm_mode_name(classifier_cuda_mode(&model)), FLOATX_NAME, test_accuracy, test_loss,
           timed_images > 0 ? timed_images / timed_seconds : 0.0);
    batch_prefetch_free(prefetch); // joins the workers (a stop may leave batches queued)
    free(images);
    free(labels);
    free(eval_indices);
    free(order);
    logger_free(&logger);
    classifier_cuda_free(&model);
    multi_gpu_free(&mg);
    vision_split_free(&train);
    vision_split_free(&test);
    classifier_free(&host);
    return stopped_by != 0 ? 128 + stopped_by : EXIT_SUCCESS;
}
