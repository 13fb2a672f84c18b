// The GPT-2 trainers' step loop (gpt2_train_loop.h).
#include "gpt2_train_loop.h"

#include <math.h>
#include <stdio.h>

#include "core/run_dir.h"
#include "core/stop_signal.h"
#include "core/utils.h"

int gpt2_train_loop(const Gpt2TrainHooks *h, const Gpt2LoopConfig *cfg, Logger *logger) {
    AdamWConfig adamw = {.learning_rate = cfg->schedule.max_lr, .beta1 = 0.9f, .beta2 = 0.95f,
                         .eps = 1e-8f, .weight_decay = cfg->weight_decay};
    StepOutliers *outliers = cfg->outliers;
    int stopped_by = 0; // the stop signal, agreed by all ranks
    for (int step = cfg->first_step; step <= cfg->max_steps; step++) {
        const int last = step == cfg->max_steps;
        // a stop signal on any rank stops every rank after the same step
        stopped_by = h->max_over_ranks(h->ctx, stop_signal_received());
        // not at the step resumed from: its val loss was logged before that checkpoint
        if (cfg->val_every > 0 && (step % cfg->val_every == 0 || last) &&
            (step > cfg->first_step || cfg->resumed_from < 0)) {
            const float val_loss = h->evaluate(h->ctx);
            if (cfg->lead) {
                printf("val loss %.6f | perplexity %.4f\n", val_loss, exp((double)val_loss));
            }
            logger_log_val(logger, step, val_loss);
            if (h->mc_eval != NULL) {
                const float accuracy = h->mc_eval(h->ctx);
                if (cfg->lead) {
                    printf("multiple-choice accuracy %.4f\n", accuracy);
                }
                logger_log_metric(logger, step, "eval", accuracy); // llm.c's HellaSwag line
            }
        }
        // not again at the step resumed from: its sample was drawn before that
        // checkpoint was written, so the saved RNG already follows it
        if (cfg->lead && cfg->sample_every > 0 && (step % cfg->sample_every == 0 || last) &&
            step > cfg->first_step) {
            h->sample(h->ctx);
        }
        const int periodic = cfg->checkpoint_every > 0 && step % cfg->checkpoint_every == 0;
        if (cfg->output_dir != NULL && (last || (periodic && step > cfg->first_step) ||
                                        (stopped_by != 0 && step != cfg->resumed_from))) {
            h->checkpoint(h->ctx, step);
        }
        if (stopped_by != 0) {
            if (cfg->lead) {
                run_dir_report_stop(stopped_by, step, cfg->output_dir, cfg->argc, cfg->argv,
                                    cfg->report_ranks);
            }
            // mpirun aborts the job at a rank's non-zero exit: none leaves before rank 0 wrote
            h->max_over_ranks(h->ctx, 0);
        }
        if (last || stopped_by != 0) {
            break;
        }
        h->forward_backward(h->ctx, step);
        adamw.learning_rate = lr_schedule_at(&cfg->schedule, step);
        // the limits from the windows before this step: the update waits for nothing
        const double loss_limit = outlier_window_limit(&outliers->loss, cfg->skip_loss_z);
        const double norm_limit = outlier_window_limit(&outliers->grad_norm, cfg->skip_grad_z);
        float loss;
        double grad_norm_exact;
        const int updated = h->update(h->ctx, &adamw, cfg->grad_clip, loss_limit, norm_limit,
                                      &loss, &grad_norm_exact);
        const float grad_norm = (float)grad_norm_exact;
        if (!isfinite(loss) || !isfinite(grad_norm_exact)) {
            fatal("step %d: non-finite loss (%f) or gradient norm (%f); the update was skipped, "
                  "stopping", step + 1, loss, grad_norm);
        }
        if (!isfinite(grad_norm)) { // the windows hold finite floats
            fatal("step %d: gradient norm %g overflows a float, stopping", step + 1,
                  grad_norm_exact);
        }
        const double loss_z = outlier_window_push(&outliers->loss, loss);
        // the norm as a float, as llm.c's detector takes it (and ZeRO-1's sum of the
        // shards' squares, rounded otherwise in double, gives the same windows)
        const double norm_z = outlier_window_push(&outliers->grad_norm, grad_norm);
        const int outlier = (double)loss > loss_limit || (double)grad_norm > norm_limit;
        if (outlier == updated) {
            fatal("step %d: the update %s, but loss %.9g (limit %.9g) and norm %.9g (limit "
                  "%.9g) say it should%s have", step + 1, updated ? "ran" : "was skipped",
                  loss, loss_limit, grad_norm, norm_limit, updated ? " not" : "");
        }
        if (outlier) {
            outliers->skipped++;
            if (cfg->lead) {
                printf("step %d: update skipped: loss %.6f (z %+.2f, limit %.6f), norm %.4f "
                       "(z %+.2f, limit %.4f); %d skipped so far\n", step + 1, loss, loss_z,
                       loss_limit, grad_norm, norm_z, norm_limit, outliers->skipped);
            }
            logger_log_metric(logger, step + 1, "skipped", (float)outliers->skipped);
        }
        h->step_done(h->ctx, step, loss, grad_norm, adamw.learning_rate);
        logger_log_train(logger, step + 1, loss, adamw.learning_rate, grad_norm);
    }
    return stopped_by;
}
