// The image trainers' epoch loop (vision_train_loop.h).
#include "vision_train_loop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/run_dir.h"
#include "core/schedule.h"
#include "core/stop_signal.h"
#include "core/utils.h"
#include "vision_data.h"

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

static void synchronize(const VisionTrainHooks *h) {
    if (h->synchronize != NULL) {
        h->synchronize(h->ctx);
    }
}

// The test of the live weights and, with an EMA, of the EMA's.
static void evaluate(const VisionTrainHooks *h, VisionLoopResult *r) {
    h->evaluate(h->ctx, &r->test_loss, &r->test_accuracy, &r->test_top5);
    if (h->evaluate_ema != NULL) {
        h->evaluate_ema(h->ctx, &r->test_ema_loss, &r->test_ema_accuracy, &r->test_ema_top5);
    }
}

static void test_after_epoch(const VisionTrainHooks *h, const VisionLoopConfig *cfg,
                             Logger *logger, int epoch, int step, VisionLoopResult *r) {
    evaluate(h, r);
    if (cfg->lead) {
        printf("epoch %d | step %d | test loss %.4f | test accuracy %.4f | top-5 %.4f", epoch + 1,
               step, r->test_loss, r->test_accuracy, r->test_top5);
        if (h->evaluate_ema != NULL) {
            printf(" | ema loss %.4f | ema accuracy %.4f | ema top-5 %.4f", r->test_ema_loss,
                   r->test_ema_accuracy, r->test_ema_top5);
        }
        printf("\n");
    }
    logger_log_val(logger, step, r->test_loss);
    logger_log_metric(logger, step, "tea", r->test_accuracy);
    logger_log_metric(logger, step, "te5", r->test_top5);
    if (h->evaluate_ema != NULL) {
        logger_log_metric(logger, step, "tel_ema", r->test_ema_loss);
        logger_log_metric(logger, step, "tea_ema", r->test_ema_accuracy);
        logger_log_metric(logger, step, "te5_ema", r->test_ema_top5);
    }
}

VisionLoopResult vision_train_loop(const VisionTrainHooks *h, const VisionLoopConfig *cfg,
                                   const VisionProgress *start, int *order, int count, Rng *rng,
                                   Logger *logger) {
    VisionLoopResult r = {.test_loss = NAN, .test_accuracy = NAN, .test_top5 = NAN,
                          .test_ema_loss = NAN, .test_ema_accuracy = NAN, .test_ema_top5 = NAN};
    AdamWConfig adamw = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                         .weight_decay = cfg->weight_decay};
    const int first_step = start->step;
    double *step_seconds = malloc_check((size_t)(cfg->total_steps - first_step) * sizeof(double) + 1,
                                        "step times");
    double timed_seconds = 0.0;
    long long timed_images = 0;
    int step = first_step, evaluated = 0;
    for (int epoch = start->epoch; step < cfg->total_steps && r.stopped_by == 0; epoch++) {
        int batch = epoch == start->epoch ? start->next_batch : 0;
        if (batch == 0) {
            vision_shuffle(order, count, rng);
        }
        // the batches this epoch will run: up to its end or the run's last step
        const int end_batch = cfg->batches_per_epoch < batch + (cfg->total_steps - step)
                                  ? cfg->batches_per_epoch
                                  : batch + (cfg->total_steps - step);
        if (h->epoch_begins != NULL) {
            h->epoch_begins(h->ctx, epoch, batch, end_batch);
        }
        for (; batch < cfg->batches_per_epoch && step < cfg->total_steps; batch++) {
            synchronize(h);
            const double t0 = now_seconds();
            float loss = h->forward_backward(h->ctx, epoch, batch);
            if (h->step_loss == NULL && !isfinite(loss)) {
                fatal("step %d: the loss is not finite (%f); stopping before the update; try a "
                      "lower -l", step + 1, loss);
            }
            adamw.learning_rate = lr_cosine_with_warmup(step, cfg->total_steps, cfg->warmup_steps,
                                                        cfg->learning_rate, cfg->final_lr_fraction);
            const float grad_norm = h->update(h->ctx, &adamw, cfg->grad_clip);
            if (h->step_loss != NULL) {
                loss = h->step_loss(h->ctx);
                if (!isfinite(loss) || !isfinite(grad_norm)) {
                    fatal("step %d: the loss (%f) or the gradient norm (%f) is not finite; the "
                          "update was skipped; try a lower -l", step + 1, loss, grad_norm);
                }
            }
            synchronize(h);
            const double dt = now_seconds() - t0;
            step_seconds[step - first_step] = dt;
            if (step > first_step) { // a run's first step pays for the libraries' setup
                timed_seconds += dt;
                timed_images += cfg->global_batch;
            }
            step++;
            logger_log_train(logger, step, loss, adamw.learning_rate, grad_norm);
            if (cfg->lead && (step % cfg->print_every == 0 || step == 1 || step == cfg->total_steps)) {
                printf("step %5d/%d | epoch %d | loss %.4f | lr %.2e | norm %.3f | %.2f ms | "
                       "%.0f images/s\n",
                       step, cfg->total_steps, epoch + 1, loss, adamw.learning_rate, grad_norm,
                       dt * 1e3, cfg->global_batch / dt);
                fflush(stdout);
            }
            // a stop signal on any rank stops every rank after the same step
            r.stopped_by = h->max_over_ranks(h->ctx, stop_signal_received());
            // the epoch's last step checkpoints after the test below
            const int epoch_ends = batch + 1 == cfg->batches_per_epoch || step == cfg->total_steps;
            const int periodic = cfg->checkpoint_every > 0 && step % cfg->checkpoint_every == 0;
            if (!epoch_ends && (periodic || r.stopped_by != 0)) {
                if (cfg->output_dir != NULL) {
                    h->checkpoint(h->ctx, step, epoch, batch + 1);
                }
                if (r.stopped_by != 0) {
                    break;
                }
            }
        }
        if (r.stopped_by != 0 && batch < cfg->batches_per_epoch && step < cfg->total_steps) {
            break; // stopped mid-epoch: checkpointed above
        }
        test_after_epoch(h, cfg, logger, epoch, step, &r);
        evaluated = 1;
        if (cfg->output_dir != NULL) {
            const int done = batch == cfg->batches_per_epoch; // the next batch opens the next epoch
            h->checkpoint(h->ctx, step, done ? epoch + 1 : epoch, done ? 0 : batch);
        }
        r.stopped_by = h->max_over_ranks(h->ctx, stop_signal_received());
    }
    if (!evaluated && r.stopped_by == 0) { // resumed at the end
        evaluate(h, &r);
    }
    if (r.stopped_by != 0) {
        if (cfg->lead) {
            run_dir_report_stop(r.stopped_by, step, cfg->output_dir, cfg->argc, cfg->argv,
                                cfg->report_ranks);
        }
        // mpirun aborts the job at a rank's non-zero exit: none leaves before rank 0 wrote
        h->max_over_ranks(h->ctx, 0);
    }
    const int steps_run = step - first_step;
    r.step = step;
    r.images_per_s = timed_images > 0 ? timed_images / timed_seconds : 0.0;
    r.median_images_per_s =
        steps_run > 0 ? cfg->global_batch / median_step_seconds(step_seconds, steps_run) : 0.0;
    free(step_seconds);
    return r;
}
