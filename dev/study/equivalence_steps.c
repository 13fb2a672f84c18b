// How far "exact" holds as training goes on: trains four copies of one
// model side by side on the same batches: modes ln, cbwc and rms (the
// control, a different model) from the same initial weights, and ln again
// from those weights nudged by one ulp (nextafterf away from zero: the fp32
// chaos baseline, what one rounding difference grows into). Prints at
// log-spaced steps the max relative difference (max|a - b| / max|b|) of the
// logits and of every parameter gradient of cbwc, rms and the nudged ln
// against ln. Step k is the k-th forward/backward, after k-1 AdamW updates.
// Batches are random (tokens, or N(0, 1) images with random labels), the same
// for the four; the point is the arithmetic, not the task.
//
//   equivalence_steps -e gpt2|vit|swin|swin-k1 -x 300 > diffs.csv
//
// CSV columns: family,step,tensor,cbwc_vs_ln,rms_vs_ln,nudged_vs_ln; tensor "logits",
// "loss" (absolute difference) or a parameter's name (its gradient).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vision/classifier.h"
#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "core/rand.h"
#include "core/utils.h"

enum { NUM_MODELS = 4 }; // ln, cbwc, rms, ln nudged
static const NormMode MODES[NUM_MODELS] = {MODE_LN, MODE_CBWC, MODE_RMS, MODE_LN};
enum { NUDGED = 3 };

// One model of either kind, with what a step needs.
typedef struct {
    int is_gpt2;
    GPT2 gpt2;
    Classifier vision;
} Net;

typedef struct {
    const char *family;
    int steps, batch_size, seq_len;
    float learning_rate;
    unsigned long long seed;
} Args;

static double max_relative_difference(const float *a, const float *b, size_t n) {
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        max_diff = fmax(max_diff, fabs((double)a[i] - (double)b[i]));
        max_ref = fmax(max_ref, fabs((double)b[i]));
    }
    return max_ref > 0.0 ? max_diff / max_ref : max_diff;
}

// Every weight one ulp further from zero (zeros stay 0, so a zero bias or a
// structural zero is not turned into a denormal).
static void nudge_by_one_ulp(float *params, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (params[i] != 0.0f) params[i] = nextafterf(params[i], params[i] > 0 ? INFINITY : -INFINITY);
    }
}

static void init_nets(Net nets[NUM_MODELS], const Args *args) {
    for (int k = 0; k < NUM_MODELS; k++) {
        Net *n = &nets[k];
        memset(n, 0, sizeof(*n));
        if (strcmp(args->family, "gpt2") == 0) {
            GPT2Config c;
            if (gpt2_parse_descriptor("d2c64h4v256t64", &c) != 0) {
                fatal("equivalence_steps: bad GPT-2 descriptor");
            }
            n->is_gpt2 = 1;
            gpt2_init_random(&n->gpt2, &c, MODE_LN, args->seed); // the same weights in every copy
            n->gpt2.mode = MODES[k];
        } else if (strcmp(args->family, "vit") == 0) {
            ViTConfig c = {.image_size = 28, .image_channels = 1, .patch_size = 7,
                           .num_classes = 10, .channels = 32, .num_layers = 2, .num_heads = 2,
                           .mlp_ratio = 2};
            classifier_init_vit(&n->vision, &c, MODE_LN, args->seed);
            classifier_set_mode(&n->vision, MODES[k]);
        } else {
            SwinConfig c = {.image_size = 28, .image_channels = 1, .patch_size = 2,
                            .num_classes = 10, .embed_dim = 16, .num_stages = 2,
                            .depths = {2, 2}, .heads = {1, 2}, .window = 7, .mlp_ratio = 2,
                            .centre_ops = strcmp(args->family, "swin-k1") == 0};
            classifier_init_swin(&n->vision, &c, MODE_LN, args->seed);
            classifier_set_mode(&n->vision, MODES[k]);
        }
        if (k == NUDGED) {
            if (n->is_gpt2) {
                nudge_by_one_ulp(n->gpt2.params_memory, n->gpt2.num_parameters);
            } else {
                nudge_by_one_ulp(classifier_params(&n->vision),
                                 classifier_num_parameters(&n->vision));
            }
        }
    }
}

static int net_num_tensors(const Net *n) {
    return n->is_gpt2 ? GPT2_NUM_PARAM_TENSORS : classifier_num_tensors(&n->vision);
}

static const char *net_tensor_name(const Net *n, int i) {
    return n->is_gpt2 ? gpt2_param_name(i) : classifier_tensor_name(&n->vision, i);
}

static size_t net_tensor_size(const Net *n, int i) {
    return n->is_gpt2 ? n->gpt2.param_sizes[i] : classifier_tensor_size(&n->vision, i);
}

static const float *net_grads(Net *n) {
    return n->is_gpt2 ? n->gpt2.grads_memory : classifier_grads(&n->vision);
}

// Logits of the last forward as one contiguous array of *count floats (GPT-2:
// the V real columns are compared, copied out of the padded rows into rows).
static const float *net_logits(Net *n, float *rows, size_t *count, const Args *a) {
    if (!n->is_gpt2) {
        *count = (size_t)a->batch_size * (size_t)classifier_num_classes(&n->vision);
        return classifier_logits(&n->vision);
    }
    const int V = n->gpt2.config.vocab_size, Vp = n->gpt2.config.padded_vocab_size;
    const size_t BT = (size_t)a->batch_size * (size_t)a->seq_len;
    for (size_t r = 0; r < BT; r++) {
        memcpy(rows + r * V, n->gpt2.acts.logits + r * Vp, (size_t)V * sizeof(float));
    }
    *count = BT * (size_t)V;
    return rows;
}

static float net_forward_backward(Net *n, const int *tokens, const int *targets,
                                  const float *images, const int *labels, const Args *a) {
    if (n->is_gpt2) {
        gpt2_forward(&n->gpt2, tokens, targets, a->batch_size, a->seq_len);
        float loss = n->gpt2.mean_loss;
        gpt2_zero_grad(&n->gpt2);
        gpt2_backward(&n->gpt2, 1.0f / (float)n->gpt2.loss_tokens);
        return loss;
    }
    classifier_forward(&n->vision, images, labels, 0.0f, a->batch_size);
    float loss = classifier_mean_loss(&n->vision);
    classifier_zero_grad(&n->vision);
    classifier_backward(&n->vision, 1.0f / (float)a->batch_size);
    return loss;
}

static void net_update(Net *n, const AdamWConfig *adamw) {
    if (n->is_gpt2) {
        gpt2_update(&n->gpt2, adamw, 1.0f);
    } else {
        classifier_update(&n->vision, adamw, 1.0f);
    }
}

static void net_free(Net *n) {
    if (n->is_gpt2) {
        gpt2_free(&n->gpt2);
    } else {
        classifier_free(&n->vision);
    }
}

// The logits' first touch happens in the forward; the GPT-2 copies are made
// here so that the logits of the four models can be compared after all four
// forwards (each net keeps its own).
static void report(Net nets[NUM_MODELS], const float loss[NUM_MODELS], int step, float *rows[2],
                   const Args *a) {
    Net *ln = &nets[0];
    printf("%s,%d,loss", a->family, step);
    for (int k = 1; k < NUM_MODELS; k++) printf(",%.3e", fabs((double)loss[k] - loss[0]));
    printf("\n%s,%d,logits", a->family, step);
    size_t n;
    const float *l0 = net_logits(ln, rows[0], &n, a);
    for (int k = 1; k < NUM_MODELS; k++) {
        const float *lk = net_logits(&nets[k], rows[1], &n, a);
        printf(",%.3e", max_relative_difference(lk, l0, n));
    }
    printf("\n");
    size_t offset = 0;
    for (int i = 0; i < net_num_tensors(ln); i++) {
        size_t size = net_tensor_size(ln, i);
        printf("%s,%d,%s", a->family, step, net_tensor_name(ln, i));
        for (int k = 1; k < NUM_MODELS; k++) {
            printf(",%.3e", max_relative_difference(net_grads(&nets[k]) + offset,
                                                    net_grads(ln) + offset, size));
        }
        printf("\n");
        offset += size;
    }
}

int main(int argc, char **argv) {
    Args a = {.family = "gpt2", .steps = 100, .batch_size = 4, .seq_len = 32,
              .learning_rate = 1e-3f, .seed = 1};
    CliFlag flags[] = {
        {"-e", CLI_CHOICE, &a.family, 0, 0,
         "model: GPT-2 d2c64h4v256t64, ViT (28x28, P 7, C 32, 2 layers), Swin\n"
         "(P 2, embed 16, depths 2,2), Swin with the centring ops (default gpt2)",
         "gpt2|vit|swin|swin-k1", 0, 0},
        {"-x", CLI_INT, &a.steps, 1, 1000000, "steps (default 100)", NULL, 0, 0},
        {"-b", CLI_INT, &a.batch_size, 1, 4096, "batch size B (default 4)", NULL, 0, 0},
        {"-t", CLI_INT, &a.seq_len, 1, 64, "GPT-2 sequence length T (default 32)", NULL, 0, 0},
        {"-l", CLI_FLOAT, &a.learning_rate, 0, 1, "AdamW learning rate (default 1e-3)", NULL,
         CLI_OPEN_LO, 0},
        {"-sd", CLI_SEED, &a.seed, 0, 0, "seed for the weights and the batches (default 1)", NULL,
         0, 0},
    };
    CliSpec spec = {.program = "equivalence_steps",
                    .synopsis = "[options] > diffs.csv",
                    .about = "ln vs cbwc (the rms control, and ln nudged by one ulp) side by side: max relative\n"
                             "differences of the logits and every gradient at log-spaced steps.\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags)};
    cli_parse(&spec, argc, argv, NULL);

    Net nets[NUM_MODELS];
    init_nets(nets, &a);
    const int B = a.batch_size, T = a.seq_len;
    const int is_gpt2 = nets[0].is_gpt2;
    const size_t BT = (size_t)B * (size_t)T;
    size_t image_floats = 0, logit_floats = 1;
    int classes = 0, vocab = 0;
    if (is_gpt2) {
        vocab = nets[0].gpt2.config.vocab_size;
        logit_floats = BT * (size_t)vocab;
    } else {
        const Classifier *m = &nets[0].vision;
        image_floats = (size_t)B * (size_t)classifier_image_channels(m) *
                       (size_t)classifier_image_size(m) * (size_t)classifier_image_size(m);
        classes = classifier_num_classes(m);
    }
    int *tokens = malloc_check(BT * sizeof(int), "tokens");
    int *targets = malloc_check(BT * sizeof(int), "targets");
    int *labels = malloc_check((size_t)B * sizeof(int), "labels");
    float *images = malloc_check((image_floats > 0 ? image_floats : 1) * sizeof(float), "images");
    float *rows[2] = {malloc_check(logit_floats * sizeof(float), "logits"),
                      malloc_check(logit_floats * sizeof(float), "logits")};
    AdamWConfig adamw = {.learning_rate = a.learning_rate, .beta1 = 0.9f, .beta2 = 0.95f,
                         .eps = 1e-8f, .weight_decay = 0.1f};
    Rng rng;
    rng_seed(&rng, a.seed + 1);
    printf("family,step,tensor,cbwc_vs_ln,rms_vs_ln,nudged_vs_ln\n");
    double next_report = 1.0;
    for (int step = 1; step <= a.steps; step++) {
        if (is_gpt2) {
            for (size_t i = 0; i < BT; i++) {
                tokens[i] = (int)(rng_u32(&rng) % (unsigned)vocab);
                targets[i] = (int)(rng_u32(&rng) % (unsigned)vocab);
            }
        } else {
            rng_normal_fill(&rng, images, image_floats, 0.0f, 1.0f);
            for (int i = 0; i < B; i++) labels[i] = (int)(rng_u32(&rng) % (unsigned)classes);
        }
        float loss[NUM_MODELS];
        for (int k = 0; k < NUM_MODELS; k++) {
            loss[k] = net_forward_backward(&nets[k], tokens, targets, images, labels, &a);
        }
        if (step >= next_report || step == a.steps) { // ~8 points per decade
            report(nets, loss, step, rows, &a);
            while (next_report <= step) next_report *= 1.33;
        }
        for (int k = 0; k < NUM_MODELS; k++) {
            net_update(&nets[k], &adamw);
        }
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fatal("equivalence_steps: cannot write the CSV to stdout");
    }
    for (int k = 0; k < NUM_MODELS; k++) {
        net_free(&nets[k]);
    }
    free(tokens);
    free(targets);
    free(labels);
    free(images);
    free(rows[0]);
    free(rows[1]);
    return 0;
}
