// ViT and Swin training on the CPU in fp32 with three norm modes (ln, rms,
// cbwc) on Fashion-MNIST (IDX, gzip) or image shards. The models and kernels
// live in llmc/ (vision/vit.c, vision/swin.c over the shared kernels,
// vision/classifier.c dispatching on the family); this file reads top down:
// flags -> model config -> data -> model -> the training loop, which
// train_vitcu shares (llmc/vision/vision_train_loop.c: AdamW with warmup +
// cosine, label smoothing, gradient clipping, per-epoch test loss and top-1
// accuracy, llm.c-style log lines and checkpoints that -y 1 resumes from
// exactly; SIGINT/SIGTERM/SIGUSR1 checkpoint and stop), filled here with the
// CPU model's calls. Under mpirun the batch is split over the ranks
// (llmc/vision/classifier_parallel.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checkpoint_files.h"
#include "vision/classifier.h"
#include "kernels/classifier_loss.h"
#include "vision/classifier_parallel.h"
#include "core/cli.h"
#include "core/comm.h"
#include "core/logger.h"
#include "kernels/matmul.h"
#include "core/rand.h"
#include "core/run_dir.h"
#include "core/run_dir_ranks.h"
#include "core/stop_signal.h"
#include "core/utils.h"
#include "vision/vision_checkpoint.h"
#include "vision/vision_data.h"
#include "vision/vision_train_loop.h"
#include "vision/vit_train_args.h"
#include "vision/vit_train_start.h"

// -ev is this trainer's alone: the rest is vit_train_args.c's table, the
// GPU trainer's too.
static VitTrainArgs parse_args(int argc, char **argv, int *evaluate_only) {
    VitTrainArgs a = vit_train_args_defaults();
    *evaluate_only = 0;
    CliFlag flags[VIT_TRAIN_MAX_FLAGS + 1];
    int n = vit_train_flags(&a, flags);
    flags[n++] = (CliFlag){"-ev", CLI_INT, evaluate_only, 0, 1,
                           "1: only test the -e model file (any mode, folded too) on the test\n"
                           "data, no training (default 0)", NULL, 0, 0};
    CliSpec spec = {
        .program = "train_vit",
        .synopsis = "[options]",
        .about = "ViT / Swin training on the CPU in fp32 (Fashion-MNIST or image shards).\n"
                 "Shape flags override the -e family's defaults (or the swin-tiny preset's).\n"
                 "Data parallel under mpirun (as train_gpt2): -b images per rank, a global\n"
                 "batch of -b x ranks; rank 0 alone prints, logs and checkpoints.\n",
        .flags = flags,
        .num_flags = n,
    };
    cli_parse(&spec, argc, argv, NULL);
    vit_train_args_check(&spec, &a);
    if (*evaluate_only && (a.resume || a.output_dir != NULL)) {
        cli_error(&spec, "-ev 1 trains nothing: it takes no -o or -y");
    }
    if (*evaluate_only && (strcmp(a.model, "vit") == 0 || strcmp(a.model, "swin") == 0 ||
                           strcmp(a.model, "swin-tiny") == 0)) {
        cli_error(&spec, "-ev 1 tests a model file: give it with -e FILE");
    }
    return a;
}

// Mean loss (no smoothing) and top-1 accuracy over the whole split: rank r
// takes batches r, r + ranks, ... (as train_vit.cu) and the sums are reduced.
static void evaluate(Classifier *model, const Comm *comm, const VisionSplit *s, int B,
                     float *images, int *labels, int *indices, float *mean_loss,
                     float *accuracy) {
    double loss_sum = 0.0, correct = 0.0; // counts are exact in a double
    const int K = classifier_num_classes(model);
    for (int start = comm->rank * B; start < s->count; start += B * comm->world_size) {
        int n = s->count - start < B ? s->count - start : B;
        for (int b = 0; b < n; b++) {
            indices[b] = start + b;
        }
        vision_make_batch(images, labels, s, indices, n, NULL);
        classifier_forward(model, images, labels, 0.0f, n);
        loss_sum += (double)classifier_mean_loss(model) * n;
        correct += classifier_correct_count(classifier_logits(model), labels, n, K);
    }
    comm_sum_double(comm, &loss_sum);
    comm_sum_double(comm, &correct);
    *mean_loss = (float)(loss_sum / s->count);
    *accuracy = (float)correct / (float)s->count;
}

static void print_model(const Classifier *model) {
    char shape[512];
    vit_train_describe_model(shape, sizeof(shape), model);
    printf("train_vit: %s, %zu parameters, mode %s, matmul %s\n", shape,
           classifier_num_parameters(model), norm_mode_name(classifier_mode(model)),
           matmul_backend_name());
    matmul_blas_print_core_note();
}

// The CPU trainer behind vision_train_loop's hooks.
typedef struct {
    Classifier *model;
    const VitTrainArgs *args;
    const VisionSplit *train, *test;
    const Comm *comm;
    int *order;          // the train order, shuffled by the loop
    Rng *rng;            // the loop's shuffling RNG (the checkpoints' RNG)
    Rng rank_flips;      // several ranks: each flips from a stream of its own per batch
    Rng *flips;          // the RNG the flips come from, or NULL (no flips)
    float *images;       // one batch (this rank's slice)
    int *labels, *eval_indices;
} CpuTrainer;

static float cpu_forward_backward(void *ctx, int epoch, int batch) {
    CpuTrainer *t = ctx;
    const int B = t->args->batch_size;
    // this rank's slice of the global batch
    const size_t first = ((size_t)batch * t->comm->world_size + t->comm->rank) * B;
    if (t->flips == &t->rank_flips) {
        rng_seed(&t->rank_flips, vision_batch_flips_seed(t->args->seed, t->comm->rank, epoch, batch));
    }
    vision_make_batch(t->images, t->labels, t->train, t->order + first, B, t->flips);
    classifier_forward(t->model, t->images, t->labels, t->args->smoothing, B);
    double loss_mean = classifier_mean_loss(t->model);
    classifier_zero_grad(t->model);
    classifier_backward(t->model, 1.0f / (float)B);
    comm_mean_double(t->comm, &loss_mean); // the global batch's loss, the mean of equal slices
    return (float)loss_mean;
}

static float cpu_update(void *ctx, const AdamWConfig *adamw, float grad_clip) {
    CpuTrainer *t = ctx;
    return (float)classifier_parallel_update(t->model, t->comm, t->args->zero_stage, adamw,
                                             grad_clip);
}

static void cpu_evaluate(void *ctx, float *loss, float *accuracy) {
    CpuTrainer *t = ctx;
    evaluate(t->model, t->comm, t->test, t->args->batch_size, t->images, t->labels,
             t->eval_indices, loss, accuracy);
}

// A checkpoint of the run after `step` with the next batch at (epoch, batch),
// written by rank 0; every rank calls it (the ZeRO-1 moments are gathered first).
static void cpu_checkpoint(void *ctx, int step, int epoch, int next_batch) {
    CpuTrainer *t = ctx;
    classifier_parallel_gather_moments(t->model, t->comm, t->args->zero_stage);
    VisionProgress now = {.step = step, .epoch = epoch, .next_batch = next_batch,
                          .rng_state = t->rng->state};
    if (t->comm->rank == 0) {
        vision_checkpoint_save(t->model, &now, t->order, t->train->count, t->args->output_dir);
        checkpoint_prune(t->args->output_dir, t->args->checkpoint_keep);
        printf("checkpoint: %s/model_%08d.bin\n", t->args->output_dir, step);
    }
}

static int cpu_max_over_ranks(void *ctx, int value) {
    const CpuTrainer *t = ctx;
    return comm_max_int(t->comm, value);
}

// -ev 1: the test loss and accuracy of the -e model file (a folded one too:
// train_vit's own builder refuses to train those).
static int evaluate_model_file(const VitTrainArgs *args, const Comm *comm) {
    Classifier model;
    classifier_load(&model, args->model, -1);
    VisionSplit train, test;
    vision_data_load(&train, &test, args->train_data, args->test_data, 1, args->max_test);
    vit_train_check_model_fits(&model, args->model, &test);
    print_model(&model);
    const int B = args->batch_size;
    float *images = malloc_check(mul_size_check(B, (size_t)test.channels * test.side * test.side *
                                                       sizeof(float), "batch"), "batch");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    int *indices = malloc_check((size_t)B * sizeof(int), "eval indices");
    float loss, accuracy;
    evaluate(&model, comm, &test, B, images, labels, indices, &loss, &accuracy);
    printf("eval: family %s mode %s test images %d test_accuracy %.4f test_loss %.4f\n",
           vision_family_name(model.family), norm_mode_name(classifier_mode(&model)), test.count,
           accuracy, loss);
    free(images);
    free(labels);
    free(indices);
    vision_split_free(&train);
    vision_split_free(&test);
    classifier_free(&model);
    return 0;
}

// the ranks' part in vit_train_start.h's checks: MPI's
static int comm_ranks_max_int(void *ctx, int value) {
    return comm_max_int((const Comm *)ctx, value);
}

int main(int argc, char **argv) {
    // first, before any thread starts: SIGINT, SIGTERM, SIGUSR1 finish the step,
    // write a checkpoint and exit (llmc/core/stop_signal.h)
    stop_signal_install();
    // data parallel: under mpirun every rank trains on its slice of each batch
    // and the gradients are averaged; rank 0 alone prints, logs and checkpoints
    Comm comm;
    comm_init(&comm, &argc, &argv);
    if (comm.rank != 0 && freopen("/dev/null", "w", stdout) == NULL) {
        fatal("rank %d: cannot silence stdout", comm.rank);
    }
    int evaluate_only;
    VitTrainArgs args = parse_args(argc, argv, &evaluate_only);
    if (evaluate_only) {
        int rc = evaluate_model_file(&args, &comm);
        comm_finalize(&comm);
        return rc;
    }
    const TrainRanks ranks = {.rank = comm.rank, .world = comm.world_size,
                              .report_ranks = comm.world_size, .ctx = &comm,
                              .max_int = comm_ranks_max_int};
    const int resume_step = vit_train_resume_step(&args, &ranks);
    VisionSplit train, test;
    vision_data_load(&train, &test, args.train_data, args.test_data, args.max_train,
                     args.max_test);
    const int B = args.batch_size, global_B = B * comm.world_size;
    if (train.count < global_B) {
        fatal("-b %d x %d ranks: larger than the %d train images", B, comm.world_size,
              train.count);
    }
    VisionProgress start;
    int *order = malloc_check((size_t)train.count * sizeof(int), "train order");
    Classifier model;
    const int resumed_from = vit_train_start(&model, &start, order, &args, &train, global_B,
                                             resume_step, &ranks);
    const int batches_per_epoch = train.count / global_B;
    if (start.next_batch >= batches_per_epoch) {
        fatal("%s: the checkpoint's next batch %d is past the %d batches of an epoch of -b %d x "
              "%d ranks",
              args.output_dir, start.next_batch, batches_per_epoch, B, comm.world_size);
    }
    const int total_steps = args.max_steps > 0 ? args.max_steps : args.epochs * batches_per_epoch;
    // rank 0 alone writes to -o (on a host-local folder the other hosts' stay untouched)
    if (args.output_dir != NULL && comm.rank == 0) {
        make_directories(args.output_dir);
        run_dir_ranks_announce(&ranks, args.output_dir);
        run_dir_remove_stale_tmp(args.output_dir);
        vit_train_check_run_settings(&args, train.count, global_B, resumed_from >= 0);
    }
    Logger logger;
    logger_init(&logger, comm.rank == 0 ? args.output_dir : NULL, resumed_from);
    char shape[512];
    vit_train_describe_model(shape, sizeof(shape), &model);
    logger_log_run_record(&logger, argc, argv,
                          (const char *const[]){"train", args.train_data, "test", args.test_data,
                                                NULL},
                          "mode=%s seed=%llu %s B=%d steps=%d lr=%g ranks=%d",
                          norm_mode_name(classifier_mode(&model)), args.seed, shape, B,
                          total_steps, (double)args.learning_rate, comm.world_size);
    print_model(&model);
    printf("data: %s, %d train / %d test images; B=%d x %d ranks (%s%s), %d steps (%d per "
           "epoch)\n",
           args.train_data, train.count, test.count, B, comm.world_size, comm_backend_name(),
           comm.world_size > 1 ? (args.zero_stage == 1 ? ", ZeRO-1" : ", all-reduce") : "",
           total_steps, batches_per_epoch);
    if (resumed_from >= 0) {
        printf("resumed from %s at step %d\n", args.output_dir, resumed_from);
    }

    const size_t image_floats = (size_t)train.channels * train.side * train.side;
    Rng rng = {.state = start.rng_state};
    CpuTrainer trainer = {
        .model = &model, .args = &args, .train = &train, .test = &test, .comm = &comm,
        .order = order, .rng = &rng,
        .images = malloc_check(mul_size_check(B, image_floats * sizeof(float), "batch"), "batch"),
        .labels = malloc_check((size_t)B * sizeof(int), "labels"),
        .eval_indices = malloc_check((size_t)B * sizeof(int), "eval indices")};
    // one rank flips from the shuffling RNG; several each from a stream of their
    // own per batch (vision_batch_flips_seed: as train_vitcu's ranks)
    trainer.flips = args.flip ? (comm.world_size > 1 ? &trainer.rank_flips : &rng) : NULL;
    const VisionTrainHooks hooks = {.ctx = &trainer,
                                    .forward_backward = cpu_forward_backward,
                                    .update = cpu_update,
                                    .evaluate = cpu_evaluate,
                                    .checkpoint = cpu_checkpoint,
                                    .max_over_ranks = cpu_max_over_ranks};
    const VisionLoopConfig loop = {
        .total_steps = total_steps, .batches_per_epoch = batches_per_epoch, .global_batch = global_B,
        .learning_rate = args.learning_rate, .final_lr_fraction = args.final_lr_fraction,
        .weight_decay = args.weight_decay, .grad_clip = args.grad_clip,
        .warmup_steps = args.warmup_steps, .print_every = args.print_every,
        .checkpoint_every = args.checkpoint_every, .output_dir = args.output_dir,
        .lead = comm.rank == 0, .report_ranks = comm.world_size, .argc = argc, .argv = argv};
    VisionLoopResult r = vision_train_loop(&hooks, &loop, &start, order, train.count, &rng, &logger);
    if (r.stopped_by == 0) {
        printf("final: family %s mode %s test_accuracy %.4f test_loss %.4f "
               "train_images_per_s %.1f median_images_per_s %.1f\n",
               vision_family_name(model.family), norm_mode_name(classifier_mode(&model)),
               r.test_accuracy, r.test_loss, r.images_per_s, r.median_images_per_s);
    }
    free(trainer.images);
    free(trainer.labels);
    free(trainer.eval_indices);
    logger_free(&logger);
    free(order);
    vision_split_free(&train);
    vision_split_free(&test);
    classifier_free(&model);
    comm_finalize(&comm);
    return r.stopped_by != 0 ? 128 + r.stopped_by : 0;
}
