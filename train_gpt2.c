// GPT-2 training on the CPU in fp32 with three norm modes (ln, rms, cbwc).
// Flags follow llm.c's train_gpt2.cu; -N picks the norm mode. main reads
// top-down: parse; set up (llmc/gpt2/gpt2_train_setup.c, shared with
// train_gpt2.cu); the hooks table (this file: the CPU model's calls); the
// loop (llmc/gpt2/gpt2_train_loop.c). The step, on every rank:
//   1. forward and backward over grad_accum micro-batches of B x T tokens;
//   2. the gradients averaged over the ranks (all-reduce or ZeRO-1's reduce-scatter);
//   3. the mean loss and the global norm; a non-finite or outlier one skips the update;
//   4. AdamW on the gradient clipped to -c, at the schedule's learning rate;
//   5. main.log's line; every -v / -s / -n steps a val loss, a sample, a checkpoint.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "gpt2/checkpoint.h"
#include "core/comm_trainer.h"
#include "gpt2/dataloader.h"
#include "gpt2/gpt2.h"
#include "gpt2/gpt2_train_args.h"
#include "gpt2/gpt2_train_loop.h"
#include "gpt2/gpt2_train_setup.h"
#include "gpt2/grad_overlap.h"
#include "gpt2/mc_eval.h"
#include "core/logger.h"
#include "kernels/matmul.h"
#include "core/rand.h"
#include "core/run_dir.h"
#include "core/run_dir_ranks.h"
#include "gpt2/sampler.h"
#include "core/schedule.h"
#include "text/tokenizer.h"
#include "core/utils.h"

typedef Gpt2TrainArgs TrainArgs;

static TrainArgs parse_args(int argc, char **argv) {
    TrainArgs args = gpt2_train_args_defaults();
    CliFlag flags[GPT2_TRAIN_MAX_FLAGS];
    CliSpec spec = {
        .program = "train_gpt2",
        .synopsis = "[options]",
        .about = "GPT-2 training on the CPU in fp32, or with bf16 matmuls (-mp bf16)\n"
                 "(llm.c's flags; -N picks the norm mode).\n",
        .flags = flags,
        .num_flags = gpt2_train_flags(&args, GPT2_FLAGS_CORE | GPT2_FLAGS_EXTRAS | GPT2_FLAGS_DROPOUT | GPT2_FLAGS_PRECISION | GPT2_FLAGS_OVERLAP | GPT2_FLAGS_MC, flags),
    };
    cli_parse(&spec, argc, argv, NULL);
    gpt2_train_args_check(&spec, &args);
    return args;
}

// Mean loss over up to max_batches batches of the val loader.
static float evaluate(GPT2 *model, DataLoader *val, int max_batches) {
    dataloader_reset(val);
    size_t available = dataloader_batches_per_epoch(val);
    int n = (size_t)max_batches < available ? max_batches : (int)available;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        dataloader_next_batch(val);
        gpt2_forward(model, val->inputs, val->targets, val->B, val->T);
        sum += model->mean_loss;
    }
    return n > 0 ? (float)(sum / n) : NAN;
}

// Samples gen_tokens tokens after <|endoftext|> (GPT-2 vocabulary) or token
// 0, and prints them as text when a tokenizer is loaded, else as ids.
static void sample_and_print(GPT2 *model, Rng *rng, const TrainArgs *args,
                             const Tokenizer *tok) {
    const GPT2Config *c = &model->config;
    int T = args->gen_tokens + 1 < c->max_seq_len ? args->gen_tokens + 1 : c->max_seq_len;
    int *tokens = calloc_check((size_t)T, sizeof(int), "sample tokens");
    tokens[0] = c->vocab_size == GPT2_EOT_TOKEN + 1 ? GPT2_EOT_TOKEN : 0;
    generate_tokens(model, tokens, 1, T, args->temperature, args->top_k, rng);
    if (tok != NULL) {
        printf("sample: ");
        fflush(stdout);
        for (int t = 1; t < T; t++) {
            int len;
            const unsigned char *bytes = tokenizer_token(tok, tokens[t], &len);
            fwrite_check(bytes, 1, (size_t)len, stdout, "stdout");
        }
        printf("\n---\n");
    } else {
        printf("sample (token ids):");
        for (int t = 1; t < T; t++) printf(" %d", tokens[t]);
        printf("\n");
    }
    free(tokens);
}

// What the loop's hooks (llmc/gpt2/gpt2_train_loop.h) work on: the model,
// its data and its ranks, and the step's times for its line.
typedef struct {
    GPT2 *model;
    const TrainArgs *args;
    Comm *comm;
    DataLoader *train, *val;
    Rng *rng; // sampling (the checkpoints' RNG)
    const Tokenizer *tokenizer; // samples as text; NULL: as ids
    CommAsync *async;           // -ov 1: the gradients reduced during the backward; else NULL
    Gpt2GradOverlap overlap;
    int B, T, grad_accum, total_tokens, max_steps;
    int sharded;              // ZeRO-1 over several ranks
    size_t shard_lo, shard_hi; // this rank's parameters in the update
    double t0, tc, t1, forward_s, backward_s; // the step's times
    const StepOutliers *outliers;             // the loop's, for checkpoints
    const McEvalSet *mc;                      // -mc's examples, or NULL
    float loss;                               // the step's mean loss (over the ranks)
    double grad_norm;                         // and the gradient's global norm
} CpuTrainer;

static float cpu_evaluate(void *ctx) {
    CpuTrainer *t = (CpuTrainer *)ctx;
    double val_loss_mean = evaluate(t->model, t->val, t->args->val_max_steps);
    comm_mean_double(t->comm, &val_loss_mean);
    return (float)val_loss_mean;
}

// every rank scores examples rank, rank + ranks, ...; the counts are summed
static float cpu_mc_eval(void *ctx) {
    CpuTrainer *t = (CpuTrainer *)ctx;
    int scored = 0;
    double counts[2];
    counts[0] = mc_eval_score(t->model, t->mc, t->comm->rank, t->comm->world_size, t->T, &scored);
    counts[1] = scored;
    comm_sum_double(t->comm, &counts[0]);
    comm_sum_double(t->comm, &counts[1]);
    return (float)(counts[0] / counts[1]);
}

static void cpu_sample(void *ctx) {
    CpuTrainer *t = (CpuTrainer *)ctx;
    sample_and_print(t->model, t->rng, t->args, t->tokenizer);
}

static void cpu_checkpoint(void *ctx, int step) {
    CpuTrainer *t = (CpuTrainer *)ctx;
    GPT2 *model = t->model;
    if (t->args->zero_stage == 1 && model->m_memory != NULL) {
        // ZeRO-1: each rank holds its shard of the AdamW moments; rank 0 writes them whole
        comm_allgather_shards(t->comm, model->m_memory, model->num_parameters);
        comm_allgather_shards(t->comm, model->v_memory, model->num_parameters);
    }
    if (t->comm->rank == 0) {
        TrainProgress now = {.step = step, .shard_index = t->train->shard_cursor,
                             .position = t->train->batch_cursor, .rng_state = t->rng->state,
                             .epoch = t->train->epoch,
                             .batch_samples = t->B * t->comm->world_size,
                             .outliers = *t->outliers};
        checkpoint_save(model, &now, t->args->output_dir);
        checkpoint_prune(t->args->output_dir, t->args->checkpoint_keep);
    }
}

static void cpu_forward_backward(void *ctx, int step) {
    CpuTrainer *t = (CpuTrainer *)ctx;
    GPT2 *model = t->model;
    Comm *comm = t->comm;
    const int grad_accum = t->grad_accum;
    t->t0 = now_seconds();
    t->forward_s = 0.0;
    t->backward_s = 0.0;
    gpt2_zero_grad(model);
    double loss_sum = 0.0;
    int reduced = 0; // the last micro-batch's backward reduced the gradients (-ov 1)
    for (int micro = 0; micro < grad_accum; micro++) {
        if (!t->args->overfit_single_batch) {
            dataloader_next_batch(t->train);
        }
        double ta = now_seconds();
        // one dropout draw per micro-batch and rank: a resumed run redraws the same masks
        uint64_t draw = ((uint64_t)step * (uint64_t)grad_accum + (uint64_t)micro) *
                            (uint64_t)comm->world_size + (uint64_t)comm->rank;
        gpt2_forward_train(model, t->train->inputs, t->train->targets, t->B, t->T, draw);
        double tb = now_seconds();
        loss_sum += model->mean_loss;
        // the last micro-batch's backward hands each layer's final
        // gradients to the reduction thread as it goes (-ov 1)
        int overlapped = t->async != NULL && micro == grad_accum - 1;
        if (overlapped) {
            gpt2_grad_overlap_attach(&t->overlap, model, t->async);
        }
        // mean over the targets that count (all but SFT prompt tokens)
        if (model->loss_tokens > 0) {
            gpt2_backward(model, 1.0f / (float)(model->loss_tokens * grad_accum));
        } else if (overlapped) {
            gpt2_grad_overlap_post_all(&t->overlap); // no backward, the same collectives
        }
        t->forward_s += tb - ta;
        t->backward_s += now_seconds() - tb;
        if (overlapped) {
            gpt2_grad_overlap_finish(&t->overlap);
            reduced = 1;
        }
    }
    // the step's gradient and loss are the means over all ranks
    t->shard_lo = 0;
    t->shard_hi = model->num_parameters;
    double grad_sq;
    if (t->sharded) {
        // ZeRO-1: this rank gets the mean gradient of its shard only;
        // the global norm is the sum of the shards' squares
        comm_shard_range(comm, model->num_parameters, comm->rank, &t->shard_lo, &t->shard_hi);
        if (!reduced) {
            comm_reduce_scatter_mean(comm, model->grads_memory, model->num_parameters);
        }
        grad_sq = sum_of_squares(model->grads_memory + t->shard_lo, t->shard_hi - t->shard_lo);
        comm_sum_double(comm, &grad_sq);
    } else {
        if (!reduced) {
            comm_allreduce_mean(comm, model->grads_memory, model->num_parameters);
        }
        grad_sq = sum_of_squares(model->grads_memory, model->num_parameters);
    }
    double loss_mean = loss_sum / grad_accum;
    comm_mean_double(comm, &loss_mean);
    t->loss = (float)loss_mean;
    t->grad_norm = sqrt(grad_sq);
}

static int cpu_update(void *ctx, const AdamWConfig *adamw, float grad_clip, double loss_limit,
                      double norm_limit, float *loss, double *grad_norm) {
    CpuTrainer *t = (CpuTrainer *)ctx;
    *loss = t->loss;
    *grad_norm = t->grad_norm;
    // as the GPU's clip_kernel (llmc/cuda/step_scalars.cuh) decides it
    if (!isfinite(t->loss) || !isfinite(t->grad_norm)) {
        return 0;
    }
    if ((double)t->loss > loss_limit || (double)(float)t->grad_norm > norm_limit) {
        t->model->adamw_step++; // an outlier: the step counts, as on the GPU (and llm.c)
        t->tc = t->t1 = now_seconds();
        return 0;
    }
    t->tc = now_seconds();
    gpt2_update_shard(t->model, adamw, clip_grad_scale(t->grad_norm, grad_clip), t->shard_lo,
                      t->shard_hi);
    if (t->sharded) {
        comm_allgather_shards(t->comm, t->model->params_memory, t->model->num_parameters);
    }
    t->t1 = now_seconds();
    return 1;
}

static void cpu_step_done(void *ctx, int step, float loss, float grad_norm, float learning_rate) {
    CpuTrainer *t = (CpuTrainer *)ctx;
    double ms = (t->t1 - t->t0) * 1e3;
    printf("step %4d/%d | loss %.6f | norm %.4f | lr %.2e | %.1f ms (fwd %.1f bwd %.1f upd %.1f)"
           " | %.0f tok/s\n",
           step + 1, t->max_steps, loss, grad_norm, learning_rate, ms, t->forward_s * 1e3,
           t->backward_s * 1e3, (t->t1 - t->tc) * 1e3, t->total_tokens / (t->t1 - t->t0));
    fflush(stdout);
}

static int cpu_max_over_ranks(void *ctx, int value) {
    return comm_max_int(((CpuTrainer *)ctx)->comm, value);
}

int main(int argc, char **argv) {
    Comm comm; // comm_trainer.h: stop signals, MPI, rank 0 alone prints
    comm_trainer_start(&comm, &argc, &argv);
    TrainArgs args = parse_args(argc, argv);
    const TrainRanks ranks = comm_train_ranks(&comm);
    GPT2 model;
    Gpt2TrainSetup run;
    gpt2_train_setup(&run, &model, &args, &ranks);
    gpt2_set_resid_dropout(&model, args.resid_dropout, args.seed);
    gpt2_set_drop_path(&model, args.drop_path, args.seed);
    const MatmulPrecision precision = (MatmulPrecision)args.matmul_precision;
    gpt2_set_matmul_precision(&model, precision);
    const GPT2Config *cfg = &model.config;
    const int B = run.B, T = run.T;
    const int total_tokens = run.total_tokens, grad_accum = run.grad_accum;
    const int max_steps = run.max_steps, resumed_from = run.resumed_from;
    const int have_val = run.have_val;
    DataLoader *train = &run.train;
    Tokenizer tokenizer;
    const Tokenizer *sample_tokenizer = NULL;
    char encoder_path[4096];
    snprintf(encoder_path, sizeof(encoder_path), "%s/encoder.json", args.vocab_dir);
    FILE *probe = args.sample_every > 0 && cfg->vocab_size == GPT2_EOT_TOKEN + 1
                      ? fopen(encoder_path, "rb") : NULL;
    if (probe != NULL) {
        fclose(probe);
        tokenizer_load(&tokenizer, args.vocab_dir);
        sample_tokenizer = &tokenizer;
    }
    Logger *logger = &run.logger;
    logger_log_run_record(
        logger, argc, argv,
        (const char *const[]){"train", args.train_pattern, "val", have_val ? args.val_pattern : NULL, NULL},
        "mode=%s seed=%llu model=%s L=%d C=%d NH=%d V=%d maxT=%d B=%d T=%d total_batch=%d "
        "steps=%d lr=%g resid_dropout=%g drop_path=%g ranks=%d matmul=%s matmul_engine=%s",
        norm_mode_name(model.mode), args.seed,
        args.model, cfg->num_layers, cfg->channels, cfg->num_heads, cfg->vocab_size,
        cfg->max_seq_len, B, T, total_tokens, max_steps, (double)args.learning_rate,
        (double)args.resid_dropout, (double)args.drop_path, comm.world_size, matmul_precision_name(precision),
        model.matmul_engine == NULL ? matmul_backend_name() : matmul_engine_kind(model.matmul_engine));

    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    printf("train_gpt2 | mode %s | L=%d C=%d NH=%d V=%d (Vp %d) maxT=%d | %.2fM parameters\n",
           norm_mode_name(model.mode), cfg->num_layers, cfg->channels, cfg->num_heads,
           cfg->vocab_size, cfg->padded_vocab_size, cfg->max_seq_len,
           (double)model.num_parameters / 1e6);
    printf("B=%d T=%d grad_accum=%d | %d steps | lr %.2e wd %.2f clip %.2f | matmul %s (%s) | %d threads"
           " x %d ranks (%s)\n",
           B, T, grad_accum, max_steps, args.learning_rate, args.weight_decay, args.grad_clip,
           matmul_precision_name(precision),
           model.matmul_engine == NULL ? matmul_backend_name()
                                       : matmul_engine_describe(model.matmul_engine),
           threads, comm.world_size, comm_backend_name());
    matmul_blas_print_core_note();
    printf("train: %zu tokens in %d shards%s%s", train->total_tokens, train->num_shards,
           train->shuffle ? ", shuffled" : "",
           train->is_sft ? ", SFT: loss on response tokens only" : "");
    if (have_val) {
        printf(" | val: %zu tokens in %d shards", run.val.total_tokens, run.val.num_shards);
    }
    printf("\n");
    if (resumed_from >= 0) {
        printf("resumed from %s at step %d\n", args.output_dir, resumed_from);
    }

    if (args.overfit_single_batch) {
        dataloader_next_batch(train);
    }
    // the step's gradient reduction: ZeRO-1 (-z 1) or all-reduce, overlapped
    // with the backward (-ov 1) where MPI allows a thread of its own
    const int sharded = args.zero_stage == 1 && comm.world_size > 1;
    CommAsync *async = args.overlap ? comm_async_new(&comm, model.grads_memory,
                                                     model.num_parameters, sharded)
                                    : NULL;
    if (comm.world_size > 1) {
        printf("gradients: %s, %s\n", sharded ? "ZeRO-1 (reduce-scatter)" : "all-reduce",
               async != NULL ? "each layer's reduced during the backward (-ov 1)"
               : args.overlap ? "reduced after the backward (this MPI has no thread support)"
                              : "reduced after the backward (-ov 0)");
    }
    CpuTrainer trainer = {.model = &model, .args = &args, .comm = &comm, .train = train,
                          .val = have_val ? &run.val : NULL, .rng = &run.rng,
                          .tokenizer = sample_tokenizer, .async = async, .B = B, .T = T,
                          .grad_accum = grad_accum, .total_tokens = total_tokens,
                          .max_steps = max_steps, .sharded = sharded,
                          .outliers = &run.progress.outliers, .mc = run.have_mc ? &run.mc : NULL};
    const Gpt2TrainHooks hooks = {
        .ctx = &trainer, .evaluate = cpu_evaluate, .sample = cpu_sample,
        .checkpoint = cpu_checkpoint, .forward_backward = cpu_forward_backward,
        .update = cpu_update, .step_done = cpu_step_done, .max_over_ranks = cpu_max_over_ranks,
        .mc_eval = run.have_mc && have_val ? cpu_mc_eval : NULL};
    const Gpt2LoopConfig loop = gpt2_train_loop_config(&run, &args, &ranks, argc, argv);
    const int stopped_by = gpt2_train_loop(&hooks, &loop, logger);
    if (sample_tokenizer != NULL) {
        tokenizer_free(&tokenizer);
    }
    gpt2_train_setup_free(&run);
    comm_async_free(async);
    gpt2_free(&model);
    comm_finalize(&comm);
    return stopped_by != 0 ? 128 + stopped_by : EXIT_SUCCESS;
}
