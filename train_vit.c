// ViT and Swin training on the CPU in fp32 with three norm modes (ln, rms,
// cbwc) on Fashion-MNIST (IDX, gzip) or image shards. The models and kernels
// live in llmc/ (vit.c, swin.c over the shared norm, CBWC, matmul, GELU and
// AdamW kernels, classifier.c dispatching on the family); this file reads top
// down: flags -> model config -> data -> model -> training loop (AdamW with
// warmup + cosine, label smoothing, gradient clipping, per-epoch test loss and
// top-1 accuracy, llm.c-style log lines and checkpoints: the vision model
// file, mode and config in its header, and a state file that -y 1 resumes
// from exactly; SIGINT/SIGTERM/SIGUSR1 checkpoint and stop). Under mpirun
// the batch is split over the ranks (llmc/classifier_parallel.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "classifier.h"
#include "classifier_loss.h"
#include "classifier_parallel.h"
#include "cli.h"
#include "comm.h"
#include "logger.h"
#include "matmul.h"
#include "rand.h"
#include "run_dir.h"
#include "schedule.h"
#include "stop_signal.h"
#include "utils.h"
#include "vision_checkpoint.h"
#include "vision_data.h"
#include "vit_train_args.h"

#define MAX_COUNT 1073741824.0 // 2^30

// The flags of this trainer only (checkpoints, resume, evaluation, ZeRO-1; train_vitcu has
// none yet).
typedef struct {
    int checkpoint_every; // 0: only at the end of each epoch
    int checkpoint_keep;  // 0: all
    int resume;
    int evaluate_only;    // test the -e model file, no training (how a folded model runs)
    int zero_stage;       // under mpirun: 1 = ZeRO-1, 0 = all-reduce
} CheckpointArgs;

static VitTrainArgs parse_args(int argc, char **argv, CheckpointArgs *ck) {
    VitTrainArgs a = vit_train_args_defaults();
    *ck = (CheckpointArgs){.zero_stage = 1};
    CliFlag flags[VIT_TRAIN_MAX_FLAGS + 5];
    int n = vit_train_flags(&a, flags);
    flags[n++] = (CliFlag){"-n", CLI_INT, &ck->checkpoint_every, 0, MAX_COUNT,
                           "checkpoint also every this many steps, 0 = only at the end of each\n"
                           "epoch (default 0)", NULL, 0, 0};
    flags[n++] = (CliFlag){"-nk", CLI_INT, &ck->checkpoint_keep, 0, MAX_COUNT,
                           "keep only the newest this many checkpoints, 0 = all (default 0)",
                           NULL, 0, 0};
    flags[n++] = (CliFlag){"-y", CLI_INT, &ck->resume, 0, 1,
                           "resume from the newest checkpoint in -o (default 0)", NULL, 0, 0};
    flags[n++] = (CliFlag){"-ev", CLI_INT, &ck->evaluate_only, 0, 1,
                           "1: only test the -e model file (any mode, folded too) on the test\n"
                           "data, no training (default 0)", NULL, 0, 0};
    flags[n++] = (CliFlag){"-z", CLI_INT, &ck->zero_stage, 0, 1,
                           "under mpirun: 1 = ZeRO-1, reduce-scatter the gradients, each rank\n"
                           "runs AdamW on its 1/ranks of the parameters, all-gather them;\n"
                           "0 = all-reduce, every rank updates all (default 1)", NULL, 0, 0};
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
    if (ck->resume && a.output_dir == NULL) {
        cli_error(&spec, "-y 1 needs -o, the directory to resume from");
    }
    if (ck->evaluate_only && (ck->resume || a.output_dir != NULL)) {
        cli_error(&spec, "-ev 1 trains nothing: it takes no -o or -y");
    }
    if (ck->evaluate_only && (strcmp(a.model, "vit") == 0 || strcmp(a.model, "swin") == 0 ||
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

// Where a run starts and where it stops.
typedef struct {
    VisionProgress start; // a new run: step 0, epoch 0, batch 0, the seeded RNGs
    int *order;           // the train order (count entries), shuffled in place each epoch
    const CheckpointArgs *ck;
    const Comm *comm;     // the ranks (one without mpirun)
    int stopped_by;       // out: the stop signal, or 0
    int argc;             // the command line, for the resume command
    char **argv;
} RunState;

// A checkpoint of the run after `step` with the next batch at (epoch, batch),
// written by rank 0; every rank calls it (the ZeRO-1 moments are gathered
// first).
static void save_checkpoint(Classifier *model, const VitTrainArgs *args, const VisionSplit *train,
                            RunState *run, int step, int epoch, int batch, const Rng *rng) {
    classifier_parallel_gather_moments(model, run->comm, run->ck->zero_stage);
    VisionProgress now = {.step = step, .epoch = epoch, .next_batch = batch,
                          .rng_state = rng->state};
    if (run->comm->rank == 0) {
        vision_checkpoint_save(model, &now, run->order, train->count, args->output_dir);
        checkpoint_prune(args->output_dir, run->ck->checkpoint_keep);
        printf("checkpoint: %s/model_%08d.bin\n", args->output_dir, step);
    }
}

// total_steps of AdamW over shuffled epochs of the train split from run->start;
// after each epoch the test loss and accuracy (logged) and a checkpoint in -o
// (also every -n steps). A stop signal on any rank ends the run after the
// step it came in, with a checkpoint. Each rank trains on its B of each
// global batch of B x ranks images.
static TrainResult train_model(Classifier *model, const VitTrainArgs *args,
                               const VisionSplit *train, const VisionSplit *test,
                               Logger *logger, int total_steps, RunState *run) {
    const Comm *comm = run->comm;
    const int B = args->batch_size, global_B = B * comm->world_size;
    const int batches_per_epoch = train->count / global_B;
    const size_t image_floats = (size_t)train->channels * train->side * train->side;
    float *images = malloc_check(mul_size_check(B, image_floats * sizeof(float), "batch"), "batch");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    int *eval_indices = malloc_check((size_t)B * sizeof(int), "eval indices");
    int *order = run->order;
    Rng rng = {.state = run->start.rng_state};
    // one rank flips from the shuffling RNG; several each from a stream of their
    // own per batch (vision_batch_flips_seed: as train_vitcu's ranks)
    Rng rank_flips = {0};
    Rng *flips = args->flip ? (comm->world_size > 1 ? &rank_flips : &rng) : NULL;
    AdamWConfig adamw = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                         .weight_decay = args->weight_decay};
    double train_seconds = 0.0;
    double *step_seconds = malloc_check((size_t)total_steps * sizeof(double) + 1, "step times");
    long train_images = 0;
    TrainResult r = {0};
    int step = run->start.step, evaluated = 0;
    const int first_step = step;
    for (int epoch = run->start.epoch; step < total_steps && run->stopped_by == 0; epoch++) {
        int batch = epoch == run->start.epoch ? run->start.next_batch : 0;
        if (batch == 0) {
            vision_shuffle(order, train->count, &rng);
        }
        for (; batch < batches_per_epoch && step < total_steps; batch++) {
            double t0 = now_seconds();
            // this rank's slice of the global batch
            const size_t first = ((size_t)batch * comm->world_size + comm->rank) * B;
            if (flips == &rank_flips) {
                rng_seed(&rank_flips, vision_batch_flips_seed(args->seed, comm->rank, epoch, batch));
            }
            vision_make_batch(images, labels, train, order + first, B, flips);
            classifier_forward(model, images, labels, args->smoothing, B);
            double loss_mean = classifier_mean_loss(model);
            classifier_zero_grad(model);
            classifier_backward(model, 1.0f / (float)B);
            adamw.learning_rate = lr_cosine_with_warmup(step, total_steps, args->warmup_steps,
                                                        args->learning_rate,
                                                        args->final_lr_fraction);
            float grad_norm = (float)classifier_parallel_update(model, comm, run->ck->zero_stage,
                                                                &adamw, args->grad_clip);
            // the global batch's loss, the mean of equal slices; reduced here, where the
            // ranks have just met, so no rank waits for another between forward and backward
            comm_mean_double(comm, &loss_mean);
            float loss = (float)loss_mean;
            double dt = now_seconds() - t0;
            train_seconds += dt;
            step_seconds[step - first_step] = dt;
            train_images += global_B;
            step++;
            if (!isfinite(loss)) {
                fatal("step %d: the loss is not finite (%f); try a lower -l", step, loss);
            }
            logger_log_train(logger, step, loss, adamw.learning_rate, grad_norm);
            if (step % args->print_every == 0 || step == 1 || step == total_steps) {
                printf("step %5d/%d | epoch %d | loss %.4f | lr %.2e | norm %.3f | %.0f images/s\n",
                       step, total_steps, epoch + 1, loss, adamw.learning_rate, grad_norm,
                       global_B / dt);
                fflush(stdout);
            }
            run->stopped_by = comm_max_int(comm, stop_signal_received());
            // the epoch's last step checkpoints after the test below
            int epoch_ends = batch + 1 == batches_per_epoch || step == total_steps;
            int periodic = run->ck->checkpoint_every > 0 && step % run->ck->checkpoint_every == 0;
            if (!epoch_ends && (periodic || run->stopped_by != 0)) {
                if (args->output_dir != NULL) {
                    save_checkpoint(model, args, train, run, step, epoch, batch + 1, &rng);
                }
                if (run->stopped_by != 0) {
                    break;
                }
            }
        }
        if (run->stopped_by != 0 && batch < batches_per_epoch && step < total_steps) {
            break; // stopped mid-epoch: checkpointed above
        }
        evaluate(model, comm, test, B, images, labels, eval_indices, &r.test_loss,
                 &r.test_accuracy);
        evaluated = 1;
        printf("epoch %d | step %d | test loss %.4f | test accuracy %.4f\n", epoch + 1, step,
               r.test_loss, r.test_accuracy);
        logger_log_val(logger, step, r.test_loss);
        if (logger->file != NULL) {
            fprintf(logger->file, "s:%d tea:%.6f\n", step, r.test_accuracy);
            fflush(logger->file);
        }
        if (args->output_dir != NULL) {
            int done = batch == batches_per_epoch; // the next batch opens the next epoch
            save_checkpoint(model, args, train, run, step, done ? epoch + 1 : epoch,
                            done ? 0 : batch, &rng);
        }
        run->stopped_by = comm_max_int(comm, stop_signal_received());
    }
    if (!evaluated && run->stopped_by == 0) { // resumed at the end
        evaluate(model, comm, test, B, images, labels, eval_indices, &r.test_loss,
                 &r.test_accuracy);
    }
    if (run->stopped_by != 0 && comm->rank == 0) {
        run_dir_report_stop(run->stopped_by, step, args->output_dir, run->argc, run->argv,
                            comm->world_size);
    }
    if (run->stopped_by != 0) {
        // mpirun aborts the job at a rank's non-zero exit: none leaves before rank 0 wrote
        comm_barrier(comm);
    }
    int steps_run = step - first_step;
    r.images_per_s = steps_run > 0 ? train_images / train_seconds : 0.0;
    r.median_images_per_s =
        steps_run > 0 ? global_B / median_step_seconds(step_seconds, steps_run) : 0.0;
    free(step_seconds);
    free(images);
    free(labels);
    free(eval_indices);
    return r;
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

// -o's run.txt: what a resume must repeat (llmc/run_dir.h), train_vitcu's:
// -b as the global batch (-b x ranks), so a run resumes on other ranks with
// the same global batch (the state holds whole moments); rank 0 alone.
static void check_run_settings(const VitTrainArgs *args, int train_count, int global_batch,
                               int resuming) {
    RunSetting settings[VIT_RUN_SETTINGS];
    vit_train_run_settings(args, global_batch, train_count, settings);
    run_dir_check_settings(args->output_dir, settings, VIT_RUN_SETTINGS, resuming);
}

int main(int argc, char **argv) {
    // data parallel: under mpirun every rank trains on its slice of each batch
    // and the gradients are averaged; rank 0 alone prints, logs and checkpoints
    Comm comm;
    comm_init(&comm, &argc, &argv);
    if (comm.rank != 0 && freopen("/dev/null", "w", stdout) == NULL) {
        fatal("rank %d: cannot silence stdout", comm.rank);
    }
    CheckpointArgs ck;
    VitTrainArgs args = parse_args(argc, argv, &ck);
    if (ck.evaluate_only) {
        int rc = evaluate_model_file(&args, &comm);
        comm_finalize(&comm);
        return rc;
    }
    stop_signal_install(); // SIGINT, SIGTERM, SIGUSR1: finish the step, checkpoint, exit
    int resumed_from = -1;
    if (args.output_dir != NULL) {
        int newest = checkpoint_find_latest(args.output_dir);
        run_dir_check_start(args.output_dir, ck.resume, newest);
        resumed_from = ck.resume ? newest : -1;
    }
    VisionSplit train, test;
    vision_data_load(&train, &test, args.train_data, args.test_data, args.max_train,
                     args.max_test);
    const int B = args.batch_size, global_B = B * comm.world_size;
    if (train.count < global_B) {
        fatal("-b %d x %d ranks: larger than the %d train images", B, comm.world_size,
              train.count);
    }
    RunState run = {.ck = &ck, .comm = &comm, .argc = argc, .argv = argv};
    run.order = malloc_check((size_t)train.count * sizeof(int), "train order");
    Classifier model;
    if (resumed_from >= 0) {
        // a run.txt with another -b x ranks or -e is named before any
        // checkpoint is read (without one, the check below records this run's)
        if (comm.rank == 0 && run_dir_has_settings(args.output_dir)) {
            check_run_settings(&args, train.count, global_B, 1);
        }
        comm_barrier(&comm);
        // the newest checkpoint that verifies (a damaged newer one is named and skipped)
        resumed_from = vision_checkpoint_resume(&model, &run.start, run.order, train.count,
                                                args.output_dir);
        vit_train_check_resumed(&model, &args, &train);
    } else {
        vit_train_build_model(&model, &args, &train);
        for (int i = 0; i < train.count; i++) {
            run.order[i] = i;
        }
        Rng rng;
        rng_seed(&rng, args.seed ^ 0xDA7AULL);
        run.start.rng_state = rng.state;
    }
    const int batches_per_epoch = train.count / global_B;
    if (run.start.next_batch >= batches_per_epoch) {
        fatal("%s: the checkpoint's next batch %d is past the %d batches of an epoch of -b %d x "
              "%d ranks",
              args.output_dir, run.start.next_batch, batches_per_epoch, B, comm.world_size);
    }
    const int total_steps = args.max_steps > 0 ? args.max_steps : args.epochs * batches_per_epoch;
    if (args.output_dir != NULL) {
        make_directories(args.output_dir);
    }
    if (args.output_dir != NULL && comm.rank == 0) {
        run_dir_remove_stale_tmp(args.output_dir);
        check_run_settings(&args, train.count, global_B, resumed_from >= 0);
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
           comm.world_size > 1 ? (ck.zero_stage == 1 ? ", ZeRO-1" : ", all-reduce") : "",
           total_steps, batches_per_epoch);
    if (resumed_from >= 0) {
        printf("resumed from %s at step %d\n", args.output_dir, resumed_from);
    }

    TrainResult r = train_model(&model, &args, &train, &test, &logger, total_steps, &run);
    if (run.stopped_by == 0) {
        printf("final: family %s mode %s test_accuracy %.4f test_loss %.4f "
               "train_images_per_s %.1f median_images_per_s %.1f\n",
               vision_family_name(model.family), norm_mode_name(classifier_mode(&model)),
               r.test_accuracy, r.test_loss, r.images_per_s, r.median_images_per_s);
    }
    logger_free(&logger);
    free(run.order);
    vision_split_free(&train);
    vision_split_free(&test);
    classifier_free(&model);
    comm_finalize(&comm);
    return run.stopped_by != 0 ? 128 + run.stopped_by : 0;
}
