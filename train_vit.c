// ViT and Swin training on the CPU in fp32 with three norm modes (ln, rms,
// cbwc) on Fashion-MNIST (IDX, gzip) or image shards. The models and kernels
// live in llmc/ (vit.c, swin.c over the shared norm, CBWC, matmul, GELU and
// AdamW kernels, classifier.c dispatching on the family); this file reads top
// down: flags -> model config -> data -> model -> training loop (AdamW with
// warmup + cosine, label smoothing, gradient clipping, per-epoch test loss and
// top-1 accuracy, llm.c-style log lines and checkpoints: the vision model
// file, mode and config in its header).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classifier.h"
#include "classifier_loss.h"
#include "cli.h"
#include "logger.h"
#include "matmul.h"
#include "rand.h"
#include "schedule.h"
#include "utils.h"
#include "vision_data.h"
#include "vit_train_args.h"

static VitTrainArgs parse_args(int argc, char **argv) {
    VitTrainArgs a = vit_train_args_defaults();
    CliFlag flags[VIT_TRAIN_MAX_FLAGS];
    CliSpec spec = {
        .program = "train_vit",
        .synopsis = "[options]",
        .about = "ViT / Swin training on the CPU in fp32 (Fashion-MNIST or image shards).\n"
                 "Shape flags override the -e family's defaults (or the swin-tiny preset's).\n",
        .flags = flags,
        .num_flags = vit_train_flags(&a, flags),
    };
    cli_parse(&spec, argc, argv, NULL);
    return a;
}

// Mean loss (no smoothing) and top-1 accuracy over the whole split.
static void evaluate(Classifier *model, const VisionSplit *s, int B, float *images, int *labels,
                     int *indices, float *mean_loss, float *accuracy) {
    double loss_sum = 0.0;
    int correct = 0;
    const int K = classifier_num_classes(model);
    for (int start = 0; start < s->count; start += B) {
        int n = s->count - start < B ? s->count - start : B;
        for (int b = 0; b < n; b++) {
            indices[b] = start + b;
        }
        vision_make_batch(images, labels, s, indices, n, NULL);
        classifier_forward(model, images, labels, 0.0f, n);
        loss_sum += (double)classifier_mean_loss(model) * n;
        correct += classifier_correct_count(classifier_logits(model), labels, n, K);
    }
    *mean_loss = (float)(loss_sum / s->count);
    *accuracy = (float)correct / (float)s->count;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Median of the step times after the first two (warm-up), or of all if fewer.
static double median_step_seconds(double *times, int n) {
    int skip = n > 4 ? 2 : 0;
    qsort(times + skip, (size_t)(n - skip), sizeof(double), compare_doubles);
    return times[skip + (n - skip) / 2];
}

static void save_checkpoint(const Classifier *model, const char *dir, int step) {
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/model_%08d.bin", dir, step);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        fatal("-o: output directory path too long: %s", dir);
    }
    classifier_save(model, path);
    printf("checkpoint: %s\n", path);
}

static void print_model(const Classifier *model) {
    char shape[512];
    vit_train_describe_model(shape, sizeof(shape), model);
    printf("train_vit: %s, %zu parameters, mode %s, matmul %s\n", shape,
           classifier_num_parameters(model), norm_mode_name(classifier_mode(model)),
           matmul_backend_name());
}

typedef struct {
    float test_loss, test_accuracy;
    double images_per_s, median_images_per_s;
} TrainResult;

// total_steps of AdamW over shuffled epochs of the train split; after each
// epoch the test loss and accuracy (logged) and a checkpoint in -o.
static TrainResult train_model(Classifier *model, const VitTrainArgs *args, const VisionSplit *train,
                               const VisionSplit *test, Logger *logger, int total_steps) {
    const int B = args->batch_size;
    const int batches_per_epoch = train->count / B;
    const size_t image_floats = (size_t)train->channels * train->side * train->side;
    float *images = malloc_check(mul_size_check(B, image_floats * sizeof(float), "batch"), "batch");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    int *eval_indices = malloc_check((size_t)B * sizeof(int), "eval indices");
    int *order = malloc_check((size_t)train->count * sizeof(int), "train order");
    for (int i = 0; i < train->count; i++) {
        order[i] = i;
    }
    Rng rng;
    rng_seed(&rng, args->seed ^ 0xDA7AULL);
    AdamWConfig adamw = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                         .weight_decay = args->weight_decay};
    double train_seconds = 0.0;
    double *step_seconds = malloc_check((size_t)total_steps * sizeof(double), "step times");
    long train_images = 0;
    TrainResult r = {0};
    int step = 0;
    for (int epoch = 0; step < total_steps; epoch++) {
        vision_shuffle(order, train->count, &rng);
        for (int batch = 0; batch < batches_per_epoch && step < total_steps; batch++) {
            double t0 = now_seconds();
            vision_make_batch(images, labels, train, order + (size_t)batch * B, B,
                       args->flip ? &rng : NULL);
            classifier_forward(model, images, labels, args->smoothing, B);
            float loss = classifier_mean_loss(model);
            classifier_zero_grad(model);
            classifier_backward(model, 1.0f / (float)B);
            float grad_norm = (float)classifier_grad_norm(model);
            adamw.learning_rate = lr_cosine_with_warmup(step, total_steps, args->warmup_steps,
                                                        args->learning_rate,
                                                        args->final_lr_fraction);
            classifier_update(model, &adamw, args->grad_clip);
            double dt = now_seconds() - t0;
            train_seconds += dt;
            step_seconds[step] = dt;
            train_images += B;
            step++;
            if (!isfinite(loss)) {
                fatal("step %d: the loss is not finite (%f); try a lower -l", step, loss);
            }
            logger_log_train(logger, step, loss, adamw.learning_rate, grad_norm);
            if (step % args->print_every == 0 || step == 1 || step == total_steps) {
                printf("step %5d/%d | epoch %d | loss %.4f | lr %.2e | norm %.3f | %.0f images/s\n",
                       step, total_steps, epoch + 1, loss, adamw.learning_rate, grad_norm,
                       B / dt);
                fflush(stdout);
            }
        }
        evaluate(model, test, B, images, labels, eval_indices, &r.test_loss, &r.test_accuracy);
        printf("epoch %d | step %d | test loss %.4f | test accuracy %.4f\n", epoch + 1, step,
               r.test_loss, r.test_accuracy);
        logger_log_val(logger, step, r.test_loss);
        if (logger->file != NULL) {
            fprintf(logger->file, "s:%d tea:%.6f\n", step, r.test_accuracy);
            fflush(logger->file);
        }
        if (args->output_dir != NULL) {
            save_checkpoint(model, args->output_dir, step);
        }
    }
    r.images_per_s = train_images / train_seconds;
    r.median_images_per_s = B / median_step_seconds(step_seconds, step);
    free(step_seconds);
    free(images);
    free(labels);
    free(eval_indices);
    free(order);
    return r;
}

int main(int argc, char **argv) {
    VitTrainArgs args = parse_args(argc, argv);
    VisionSplit train, test;
    vision_data_load(&train, &test, args.train_data, args.test_data, args.max_train,
                     args.max_test);
    Classifier model;
    vit_train_build_model(&model, &args, &train);
    const int B = args.batch_size;
    if (train.count < B) {
        fatal("-b %d: larger than the %d train images", B, train.count);
    }
    const int batches_per_epoch = train.count / B;
    const int total_steps = args.max_steps > 0 ? args.max_steps : args.epochs * batches_per_epoch;
    if (args.output_dir != NULL) {
        make_directories(args.output_dir);
    }
    Logger logger;
    logger_init(&logger, args.output_dir, 0);
    char shape[512];
    vit_train_describe_model(shape, sizeof(shape), &model);
    logger_log_run_record(&logger, argc, argv,
                          (const char *const[]){"train", args.train_data, "test", args.test_data,
                                                NULL},
                          "mode=%s seed=%llu %s B=%d steps=%d lr=%g",
                          norm_mode_name(classifier_mode(&model)), args.seed, shape, B,
                          total_steps, (double)args.learning_rate);
    print_model(&model);
    printf("data: %s, %d train / %d test images; B=%d, %d steps (%d per epoch)\n",
           args.train_data, train.count, test.count, B, total_steps, batches_per_epoch);

    TrainResult r = train_model(&model, &args, &train, &test, &logger, total_steps);
    printf("final: family %s mode %s test_accuracy %.4f test_loss %.4f train_images_per_s %.1f "
           "median_images_per_s %.1f\n",
           vision_family_name(model.family), norm_mode_name(classifier_mode(&model)),
           r.test_accuracy, r.test_loss, r.images_per_s, r.median_images_per_s);
    logger_free(&logger);
    vision_split_free(&train);
    vision_split_free(&test);
    classifier_free(&model);
    return 0;
}
