// Checks a folded model against the ln (or cbwc) model it came from on real data.
// GPT-2: logits over (B, T) windows of a token shard (max|folded - ln| /
// max|ln|), and greedy generations of N tokens from a prompt taken from the shard.
// ViT / Swin (told apart by the model file's magic): the logits of both models
// on the first images of a Fashion-MNIST folder (its t10k split) or an image
// shard, and the predicted classes.
//
// usage: test_fold [-t T] [-g N] [-rt rel_tol] [-of offset] LN.bin FOLDED.bin SHARD.bin
//        test_fold [-ne N] [-rt rel_tol] LN.bin FOLDED.bin FMNIST_DIR|SHARD.bin
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vision/classifier.h"
#include "core/cli.h"
#include "gpt2/gpt2.h"
#include "core/utils.h"
#include "vision/vision_data.h"
#include "test_helpers.h"

// A plain llm.c token shard (magic 20240520, version 1, uint16 tokens),
// checked: header, exact size, at least min_tokens, every token < V.
static uint16_t *read_shard(const char *path, size_t min_tokens, int V) {
    FILE *f = fopen_check(path, "rb");
    long bytes = file_size_bytes(f, path);
    int32_t h[256];
    fread_check(h, sizeof(int32_t), 256, f, path, "the shard header");
    if (h[0] != 20240520 || h[1] != 1 || h[2] < 0) {
        fatal("%s: not a token shard (magic %d version %d, expected 20240520 and 1)", path, h[0], h[1]);
    }
    size_t n = (size_t)h[2];
    if ((size_t)bytes != 1024 + 2 * n || n < min_tokens) {
        fatal("%s: %ld bytes for %zu tokens (need the exact size and >= %zu tokens)", path, bytes,
              n, min_tokens);
    }
    uint16_t *tokens = malloc_check(n * sizeof(uint16_t), "shard tokens");
    fread_check(tokens, sizeof(uint16_t), n, f, path, "the tokens");
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        if (tokens[i] >= V) {
            fatal("%s: token %u at %zu is not below the vocab size %d", path, tokens[i], i, V);
        }
    }
    return tokens;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        best = x[i] > x[best] ? i : best;
    }
    return best;
}

// Appends n greedy tokens to seq (which holds len tokens) with model.
static void greedy(GPT2 *model, int *seq, int len, int n, float *gaps) {
    const int maxT = model->config.max_seq_len, V = model->config.vocab_size;
    const int Vp = model->config.padded_vocab_size;
    for (int k = 0; k < n; k++, len++) {
        int T = len < maxT ? len : maxT;
        gpt2_forward(model, seq + len - T, NULL, 1, T);
        const float *row = model->acts.logits + (size_t)(T - 1) * Vp;
        int best = argmax(row, V);
        float second = -INFINITY;
        for (int i = 0; i < V; i++) {
            second = i != best && row[i] > second ? row[i] : second;
        }
        gaps[k] = row[best] - second; // how far from a tie the choice was
        seq[len] = best;
    }
}

// The header of a model's config with the mode left out (what must match).
static void config_header(const Classifier *model, int32_t h[VISION_HEADER_INTS]) {
    VisionConfig c = classifier_config(model);
    c.mode = MODE_LN;
    vision_header_from_config(&c, h);
}

// A ViT / Swin and its fold on the first n images of data: logits within
// rel_tol relative, the same predicted classes (a flip passes only where the ln
// model's top two logits were within the logits tolerance: an fp32 tie).
static int check_vision(const char *ln_path, const char *folded_path, const char *data_path,
                        int n, double rel_tol) {
    Classifier ln, folded;
    classifier_load(&ln, ln_path, -1);
    classifier_load(&folded, folded_path, -1);
    const NormMode mode = classifier_mode(&ln);
    if ((mode != MODE_LN && mode != MODE_CBWC) || classifier_mode(&folded) != MODE_FOLDED) {
        fatal("expected an ln or cbwc model and a folded model, got %s and %s",
              norm_mode_name(mode), norm_mode_name(classifier_mode(&folded)));
    }
    int32_t h_ln[VISION_HEADER_INTS], h_folded[VISION_HEADER_INTS];
    config_header(&ln, h_ln);
    config_header(&folded, h_folded);
    if (memcmp(h_ln, h_folded, sizeof(h_ln)) != 0) {
        fatal("%s and %s have different configs", ln_path, folded_path);
    }
    VisionSplit data;
    vision_split_load(&data, data_path, "t10k", n);
    const int K = classifier_num_classes(&ln), S = classifier_image_size(&ln);
    if (data.side != S || data.channels != classifier_image_channels(&ln) ||
        data.num_classes != K) {
        fatal("%s: %dx%d images with %d channel(s) and %d classes; the model takes %dx%d with %d "
              "and %d", data_path, data.side, data.side, data.channels, data.num_classes, S, S,
              classifier_image_channels(&ln), K);
    }
    enum { B = 32 };
    const size_t image_floats = (size_t)data.channels * S * S;
    float *images = malloc_check(B * image_floats * sizeof(float), "images");
    int labels[B], indices[B];
    double max_diff = 0.0, max_ref = 0.0, min_gap = INFINITY;
    int flips = 0, ties = 0, correct_ln = 0, correct_folded = 0;
    float *gaps = malloc_check((size_t)data.count * sizeof(float), "gaps");
    int *flipped = malloc_check((size_t)data.count * sizeof(int), "flips");
    for (int start = 0; start < data.count; start += B) {
        const int nb = data.count - start < B ? data.count - start : B;
        for (int b = 0; b < nb; b++) {
            indices[b] = start + b;
        }
        vision_make_batch(images, labels, &data, indices, nb, NULL);
        classifier_forward(&ln, images, NULL, 0.0f, nb);
        classifier_forward(&folded, images, NULL, 0.0f, nb);
        const float *a = classifier_logits(&ln), *f = classifier_logits(&folded);
        for (int b = 0; b < nb; b++) {
            const float *ra = a + (size_t)b * K, *rf = f + (size_t)b * K;
            int best_a = 0, best_f = 0;
            for (int k = 0; k < K; k++) {
                max_diff = worst_of(max_diff, fabs((double)ra[k] - rf[k]));
                max_ref = worst_of(max_ref, fabs((double)ra[k]));
                best_a = ra[k] > ra[best_a] ? k : best_a;
                best_f = rf[k] > rf[best_f] ? k : best_f;
            }
            float second = -INFINITY;
            for (int k = 0; k < K; k++) {
                second = k != best_a && ra[k] > second ? ra[k] : second;
            }
            gaps[start + b] = ra[best_a] - second; // how far from a tie the ln model was
            min_gap = fmin(min_gap, gaps[start + b]);
            flipped[start + b] = best_a != best_f;
            correct_ln += best_a == labels[b];
            correct_folded += best_f == labels[b];
        }
    }
    const double rel = max_diff / (max_ref > 0 ? max_ref : 1.0);
    for (int i = 0; i < data.count; i++) {
        flips += flipped[i];
        ties += flipped[i] && gaps[i] <= rel_tol * max_ref;
    }
    int ok_logits = rel <= rel_tol, ok_classes = flips == ties;
    printf("%s %s (%s) vs folded on %d images of %s: max|folded - ln| / max|ln| = %.3e (tol %.0e)\n",
           ok_logits ? "ok  " : "FAIL", vision_family_name(ln.family), norm_mode_name(mode),
           data.count, data_path, rel, rel_tol);
    printf("%s predicted classes: %d of %d differ (%d of them fp32 ties); smallest top-2 logit gap "
           "of the ln model %.3e; accuracy ln %.4f, folded %.4f\n",
           ok_classes ? "ok  " : "FAIL", flips, data.count, ties, min_gap,
           (double)correct_ln / data.count, (double)correct_folded / data.count);
    printf("%s\n", ok_logits && ok_classes ? "OK" : "FAILED");
    free(gaps);
    free(flipped);
    free(images);
    vision_split_free(&data);
    classifier_free(&ln);
    classifier_free(&folded);
    return ok_logits && ok_classes;
}

int main(int argc, char **argv) {
    int T = 0, gen = 100, offset = 0, num_images = 256;
    double rel_tol = 1e-5;
    CliFlag flags[] = {
        {"-t", CLI_INT, &T, 1, 1048576, "window length, <= maxT (default: min(64, maxT))", NULL, 0,
         0},
        {"-g", CLI_INT, &gen, 0, 100000, "greedy tokens (default 100)", NULL, 0, 0},
        {"-rt", CLI_DOUBLE, &rel_tol, 0, 1, "logits relative tolerance (default 1e-5)", NULL,
         CLI_OPEN_LO, 0},
        {"-of", CLI_INT, &offset, 0, 2147483647, "first token of the windows (default 0)", NULL, 0,
         0},
        {"-ne", CLI_INT, &num_images, 1, 1073741824,
         "ViT / Swin: the first this many images of the data (default 256)", NULL, 0, 0},
    };
    CliSpec spec = {.program = "test_fold",
                    .synopsis = "[options] LN.bin FOLDED.bin DATA",
                    .about = "Checks a folded model against the ln or cbwc model it came from on your data.\n"
                             "  GPT-2: DATA is a token shard (logits on windows, greedy tokens; -t -g -of)\n"
                             "  ViT / Swin: DATA is a Fashion-MNIST folder (its t10k images) or an image\n"
                             "  shard (logits and predicted classes on the first -ne images)\n",
                    .flags = flags, .num_flags = CLI_COUNT(flags),
                    .min_positional = 3, .max_positional = 3};
    const char *files[3];
    cli_parse(&spec, argc, argv, files);
    const char *ln_path = files[0], *folded_path = files[1], *shard_path = files[2];
    if (file_magic(ln_path) == VISION_MODEL_MAGIC) {
        return check_vision(ln_path, folded_path, shard_path, num_images, rel_tol) ? EXIT_SUCCESS
                                                                                  : EXIT_FAILURE;
    }
    GPT2 ln, folded;
    gpt2_load(&ln, ln_path);
    gpt2_load(&folded, folded_path);
    if ((ln.mode != MODE_LN && ln.mode != MODE_CBWC) || folded.mode != MODE_FOLDED) {
        fatal("expected an ln or cbwc model and a folded model, got %s and %s", norm_mode_name(ln.mode),
              norm_mode_name(folded.mode));
    }
    const GPT2Config *c = &ln.config;
    if (memcmp(c, &folded.config, sizeof(*c)) != 0) {
        fatal("%s and %s have different configs", ln_path, folded_path);
    }
    const int V = c->vocab_size, Vp = c->padded_vocab_size, B = 4;
    T = T > 0 ? T : (c->max_seq_len < 64 ? c->max_seq_len : 64);
    if (T > c->max_seq_len) {
        fatal("-t %d must be <= maxT %d", T, c->max_seq_len);
    }
    uint16_t *shard = read_shard(shard_path, (size_t)offset + (size_t)B * T + 1, V);
    int *tokens = malloc_check((size_t)B * T * sizeof(int), "tokens");
    for (int i = 0; i < B * T; i++) {
        tokens[i] = shard[offset + i];
    }
    gpt2_forward(&ln, tokens, NULL, B, T);
    gpt2_forward(&folded, tokens, NULL, B, T);
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t r = 0; r < (size_t)B * T; r++) {
        for (int v = 0; v < V; v++) {
            double a = ln.acts.logits[r * Vp + v], b = folded.acts.logits[r * Vp + v];
            max_diff = worst_of(max_diff, fabs(a - b));
            max_ref = worst_of(max_ref, fabs(a));
        }
    }
    double rel = max_diff / (max_ref > 0 ? max_ref : 1.0);
    int ok = rel <= rel_tol;
    printf("%s logits on %dx%d real tokens (offset %d): max|folded - ln| / max|ln| = %.3e (tol %.0e)\n",
           ok ? "ok  " : "FAIL", B, T, offset, rel, rel_tol);

    const int prompt = T < 16 ? T : 16;
    int *seq_ln = malloc_check(((size_t)prompt + gen) * sizeof(int), "sequence");
    int *seq_folded = malloc_check(((size_t)prompt + gen) * sizeof(int), "sequence");
    float *gaps_ln = malloc_check(((size_t)gen + 1) * sizeof(float), "gaps");
    float *gaps_folded = malloc_check(((size_t)gen + 1) * sizeof(float), "gaps");
    memcpy(seq_ln, tokens, (size_t)prompt * sizeof(int));
    memcpy(seq_folded, tokens, (size_t)prompt * sizeof(int));
    greedy(&ln, seq_ln, prompt, gen, gaps_ln);
    greedy(&folded, seq_folded, prompt, gen, gaps_folded);
    int first_diff = -1;
    float min_gap = INFINITY;
    for (int k = 0; k < gen; k++) {
        min_gap = gaps_ln[k] < min_gap ? gaps_ln[k] : min_gap;
        if (first_diff < 0 && seq_ln[prompt + k] != seq_folded[prompt + k]) {
            first_diff = k;
        }
    }
    int same = first_diff < 0;
    // fp32 rounding may flip an exact tie: a divergence passes only where the ln
    // model's top two logits were within the logits tolerance of each other
    double tie_bound = rel_tol * max_ref;
    int tie = !same && gaps_ln[first_diff] <= tie_bound;
    printf("%s greedy: %d tokens %s (smallest top-2 logit gap of the ln model %.3e)\n",
           same || tie ? "ok  " : "FAIL", gen, same ? "identical" : "differ", min_gap);
    if (!same) {
        printf("     first difference at token %d: ln %d (gap %.3e), folded %d: %s\n", first_diff,
               seq_ln[prompt + first_diff], gaps_ln[first_diff], seq_folded[prompt + first_diff],
               tie ? "a tie within the tolerance" : "not a tie");
    }
    ok &= same || tie;
    if (V <= 256) { // byte-level: show the text
        printf("     sample: \"");
        for (int k = 0; k < prompt + gen; k++) {
            int ch = seq_folded[k];
            putchar(ch >= 32 && ch < 127 ? ch : ch == '\n' ? '|' : '?');
        }
        printf("\"\n");
    }
    printf("%s\n", ok ? "OK" : "FAILED");
    free(seq_ln);
    free(seq_folded);
    free(gaps_ln);
    free(gaps_folded);
    free(tokens);
    free(shard);
    gpt2_free(&ln);
    gpt2_free(&folded);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
