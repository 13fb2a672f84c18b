// ViT and Swin training on the CPU in fp32 with the norm modes (-N) on
// Fashion-MNIST (IDX, gzip) or image shards. The models and kernels live in
// llmc/vision/. main reads top-down: parse; set up (llmc/vision/vit_train_start.c,
// shared with train_vit.cu); the hooks table (this file: the CPU model's
// calls); the loop (llmc/vision/vision_train_loop.c). The step, on every rank:
//   1. its slice of a global batch of -b x ranks images, in the epoch's shuffled order (-f: flips;
//      -reprob: random erasing; -mixup, -cutmix: the slice mixed with itself reversed);
//   2. forward, label-smoothed cross-entropy (mixed targets) and backward over the slice;
//   3. the gradients averaged over the ranks (all-reduce or ZeRO-1), the global norm, clipped to -c;
//   4. AdamW at the warmup + cosine learning rate; -ema: the EMA of the weights (core/ema.h);
//   5. a step line every -pe steps; a test loss, top-1 and top-5 accuracy each epoch (and the
//      EMA's); checkpoints (-n, -y 1).
// Under mpirun the batch is split over the ranks (llmc/vision/classifier_parallel.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checkpoint_files.h"
#include "vision/classifier.h"
#include "kernels/classifier_loss.h"
#include "kernels/drop_path.h"
#include "vision/classifier_parallel.h"
#include "core/cli.h"
#include "core/comm_trainer.h"
#include "core/logger.h"
#include "kernels/matmul.h"
#include "core/rand.h"
#include "core/run_dir.h"
#include "core/run_dir_ranks.h"
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
    if (*evaluate_only && (a.resume || a.output_dir != NULL || a.ema > 0.0f)) {
        cli_error(&spec, "-ev 1 trains nothing: it takes no -o, -y or -ema");
    }
    if (*evaluate_only && (strcmp(a.model, "vit") == 0 || strcmp(a.model, "swin") == 0 ||
                           strcmp(a.model, "swin-tiny") == 0)) {
        cli_error(&spec, "-ev 1 tests a model file: give it with -e FILE");
    }
    return a;
}

// Mean loss (no smoothing), top-1 and top-5 accuracy over the whole split:
// rank r takes batches r, r + ranks, ... (as train_vit.cu) and the sums are reduced.
static void evaluate(Classifier *model, const Comm *comm, const VisionSplit *s, int B,
                     float *images, int *labels, int *indices, float *mean_loss, float *top1,
                     float *top5) {
    double loss_sum = 0.0, correct = 0.0, correct5 = 0.0; // counts are exact in a double
    const int K = classifier_num_classes(model);
    for (int start = comm->rank * B; start < s->count; start += B * comm->world_size) {
        int n = s->count - start < B ? s->count - start : B;
        for (int b = 0; b < n; b++) {
            indices[b] = start + b;
        }
        vision_make_batch(images, labels, s, indices, n, NULL);
        classifier_forward(model, images, labels, 0.0f, n);
        loss_sum += (double)classifier_mean_loss(model) * n;
        correct += classifier_topk_count(classifier_logits(model), labels, n, K, 1);
        correct5 += classifier_topk_count(classifier_logits(model), labels, n, K, 5);
    }
    comm_sum_double(comm, &loss_sum);
    comm_sum_double(comm, &correct);
    comm_sum_double(comm, &correct5);
    *mean_loss = (float)(loss_sum / s->count);
    *top1 = (float)correct / (float)s->count;
    *top5 = (float)correct5 / (float)s->count;
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
    float *drop_scales;  // -dp: the global batch's drop-path scales (ranks * B, blocks, 2), or NULL
    WeightEma *ema;      // -ema: the EMA of the weights (under ZeRO-1 current on this rank's shard)
    float *images;       // one batch (this rank's slice)
    int *labels, *eval_indices;
    int *labels2;        // -mixup, -cutmix: the batch's mixed targets
    float *lam;
} CpuTrainer;

static float cpu_forward_backward(void *ctx, int epoch, int batch) {
    CpuTrainer *t = ctx;
    const int B = t->args->batch_size;
    // this rank's slice of the global batch
    const size_t first = ((size_t)batch * t->comm->world_size + t->comm->rank) * B;
    if (t->flips == &t->rank_flips) {
        rng_seed(&t->rank_flips, vision_batch_flips_seed(t->args->seed, t->comm->rank, epoch, batch));
    }
    const MixTargets mix = vision_make_train_batch(t->images, t->labels, t->labels2, t->lam,
                                                   t->train, t->order + first, B, t->flips,
                                                   &t->args->augment);
    classifier_set_mix_targets(t->model, mix);
    if (t->drop_scales != NULL) { // every rank draws the global batch's masks, takes its own
        const int blocks = classifier_num_blocks(t->model);
        Rng drop_rng;
        rng_seed(&drop_rng, drop_path_batch_seed(t->args->seed, epoch, batch));
        drop_path_draw(t->drop_scales, B * t->comm->world_size, blocks, t->args->drop_path,
                       &drop_rng);
        classifier_set_drop_path(t->model, t->drop_scales + (size_t)t->comm->rank * B * blocks *
                                                                DROP_PATH_BRANCHES);
    }
    classifier_forward(t->model, t->images, t->labels, t->args->smoothing, B);
    double loss_mean = classifier_mean_loss(t->model);
    classifier_zero_grad(t->model);
    classifier_backward(t->model, 1.0f / (float)B);
    classifier_set_drop_path(t->model, NULL); // the test pass keeps every branch
    classifier_set_mix_targets(t->model, (MixTargets){NULL, NULL}); // and its labels
    comm_mean_double(t->comm, &loss_mean); // the global batch's loss, the mean of equal slices
    return (float)loss_mean;
}

static float cpu_update(void *ctx, const AdamWConfig *adamw, float grad_clip) {
    CpuTrainer *t = ctx;
    const float norm = (float)classifier_parallel_update(t->model, t->comm, t->args->zero_stage,
                                                         adamw, grad_clip);
    if (t->ema->values != NULL) {
        classifier_parallel_update_ema(t->model, t->comm, t->args->zero_stage, t->ema);
    }
    return norm;
}

static void cpu_evaluate(void *ctx, float *loss, float *top1, float *top5) {
    CpuTrainer *t = ctx;
    evaluate(t->model, t->comm, t->test, t->args->batch_size, t->images, t->labels,
             t->eval_indices, loss, top1, top5);
}

// The test of the EMA: swapped into the model for the pass, then back (exact).
static void cpu_evaluate_ema(void *ctx, float *loss, float *top1, float *top5) {
    CpuTrainer *t = ctx;
    const size_t n = classifier_num_parameters(t->model);
    classifier_parallel_gather_ema(t->model, t->comm, t->args->zero_stage, t->ema);
    ema_swap(classifier_params(t->model), t->ema->values, n);
    classifier_params_changed(t->model);
    cpu_evaluate(ctx, loss, top1, top5);
    ema_swap(classifier_params(t->model), t->ema->values, n);
    classifier_params_changed(t->model);
}

// A checkpoint of the run after `step` with the next batch at (epoch, batch),
// written by rank 0; every rank calls it (the ZeRO-1 moments are gathered first).
static void cpu_checkpoint(void *ctx, int step, int epoch, int next_batch) {
    CpuTrainer *t = ctx;
    classifier_parallel_gather_moments(t->model, t->comm, t->args->zero_stage);
    if (t->ema->values != NULL) {
        classifier_parallel_gather_ema(t->model, t->comm, t->args->zero_stage, t->ema);
    }
    VisionProgress now = {.step = step, .epoch = epoch, .next_batch = next_batch,
                          .rng_state = t->rng->state};
    if (t->comm->rank == 0) {
        vision_checkpoint_save(t->model, &now, t->order, t->train->count, t->ema,
                               t->args->output_dir);
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
    float loss, accuracy, top5;
    evaluate(&model, comm, &test, B, images, labels, indices, &loss, &accuracy, &top5);
    printf("eval: family %s mode %s test images %d test_accuracy %.4f test_loss %.4f "
           "test_top5 %.4f\n",
           vision_family_name(model.family), norm_mode_name(classifier_mode(&model)), test.count,
           accuracy, loss, top5);
    free(images);
    free(labels);
    free(indices);
    vision_split_free(&train);
    vision_split_free(&test);
    classifier_free(&model);
    return 0;
}

int main(int argc, char **argv) {
    Comm comm; // comm_trainer.h: stop signals, MPI, rank 0 alone prints
    comm_trainer_start(&comm, &argc, &argv);
    int evaluate_only;
    VitTrainArgs args = parse_args(argc, argv, &evaluate_only);
    if (evaluate_only) {
        int rc = evaluate_model_file(&args, &comm);
        comm_finalize(&comm);
        return rc;
    }
    const TrainRanks ranks = comm_train_ranks(&comm);
    Classifier model;
    VitTrainSetup run;
    vit_train_setup(&run, &model, &args, &ranks);
    VisionSplit *train = &run.train, *test = &run.test;
    const int B = run.B, resumed_from = run.resumed_from;
    const int total_steps = run.total_steps, batches_per_epoch = run.batches_per_epoch;
    Logger *logger = &run.logger;
    char shape[512];
    vit_train_describe_model(shape, sizeof(shape), &model);
    logger_log_run_record(logger, argc, argv,
                          (const char *const[]){"train", args.train_data, "test", args.test_data,
                                                NULL},
                          "mode=%s seed=%llu %s B=%d steps=%d lr=%g ranks=%d",
                          norm_mode_name(classifier_mode(&model)), args.seed, shape, B,
                          total_steps, (double)args.learning_rate, comm.world_size);
    print_model(&model);
    printf("data: %s, %d train / %d test images; B=%d x %d ranks (%s%s), %d steps (%d per "
           "epoch)\n",
           args.train_data, train->count, test->count, B, comm.world_size, comm_backend_name(),
           comm.world_size > 1 ? (args.zero_stage == 1 ? ", ZeRO-1" : ", all-reduce") : "",
           total_steps, batches_per_epoch);
    if (resumed_from >= 0) {
        printf("resumed from %s at step %d\n", args.output_dir, resumed_from);
    }

    const size_t image_floats = (size_t)train->channels * train->side * train->side;
    Rng rng = {.state = run.start.rng_state};
    CpuTrainer trainer = {
        .model = &model, .args = &args, .train = train, .test = test, .comm = &comm,
        .order = run.order, .rng = &rng, .ema = &run.ema,
        .images = malloc_check(mul_size_check(B, image_floats * sizeof(float), "batch"), "batch"),
        .labels = malloc_check((size_t)B * sizeof(int), "labels"),
        .labels2 = malloc_check((size_t)B * sizeof(int), "mixed labels"),
        .lam = malloc_check((size_t)B * sizeof(float), "mix weights"),
        .eval_indices = malloc_check((size_t)B * sizeof(int), "eval indices")};
    // one rank flips from the shuffling RNG; several each from a stream of their
    // own per batch (vision_batch_flips_seed: as train_vitcu's ranks)
    trainer.flips = args.flip ? (comm.world_size > 1 ? &trainer.rank_flips : &rng) : NULL;
    if (args.drop_path > 0.0f) {
        const size_t per_image = (size_t)classifier_num_blocks(&model) * DROP_PATH_BRANCHES;
        trainer.drop_scales = malloc_check(
            mul_size_check((size_t)run.global_B, per_image * sizeof(float), "drop-path scales"),
            "drop-path scales");
    }
    const VisionTrainHooks hooks = {.ctx = &trainer,
                                    .forward_backward = cpu_forward_backward,
                                    .update = cpu_update,
                                    .evaluate = cpu_evaluate,
                                    .evaluate_ema = run.ema.values != NULL ? cpu_evaluate_ema : NULL,
                                    .checkpoint = cpu_checkpoint,
                                    .max_over_ranks = cpu_max_over_ranks};
    const VisionLoopConfig loop = vit_train_loop_config(&run, &args, &ranks, argc, argv);
    VisionLoopResult r =
        vision_train_loop(&hooks, &loop, &run.start, run.order, train->count, &rng, logger);
    if (r.stopped_by == 0) {
        printf("final: family %s mode %s test_accuracy %.4f test_loss %.4f "
               "train_images_per_s %.1f median_images_per_s %.1f test_top5 %.4f "
               "test_ema_accuracy %.4f test_ema_top5 %.4f test_ema_loss %.4f\n",
               vision_family_name(model.family), norm_mode_name(classifier_mode(&model)),
               r.test_accuracy, r.test_loss, r.images_per_s, r.median_images_per_s, r.test_top5,
               r.test_ema_accuracy, r.test_ema_top5, r.test_ema_loss);
    }
    free(trainer.images);
    free(trainer.drop_scales);
    free(trainer.labels);
    free(trainer.labels2);
    free(trainer.lam);
    free(trainer.eval_indices);
    vit_train_setup_free(&run);
    classifier_free(&model);
    comm_finalize(&comm);
    return r.stopped_by != 0 ? 128 + r.stopped_by : 0;
}
