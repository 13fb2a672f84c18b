#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utils.h"

// FOLDNORM_SAMPLE_TRACE=1: every draw prints its token, the uniform draw u
// and the token's interval [lo, hi) of the cumulative distribution to stderr.
// Two runs whose logits differ in the last bits (summation orders: -kv 1 and
// -kv 0, two machines) draw the same tokens unless some u falls within that
// difference of an interval's end; the trace shows where (sample_kvcache).
static void trace_draw(int token, double u, double lo, double hi) {
    const char *env = getenv("FOLDNORM_SAMPLE_TRACE");
    if (env != NULL && strcmp(env, "1") == 0) {
        fprintf(stderr, "sample trace: token %d u %.12f in [%.12f, %.12f)\n", token, u, lo, hi);
    }
}

int sample_token(const float *logits, int V, float temperature, int top_k, Rng *rng) {
    int best = 0;
    for (int v = 1; v < V; v++) {
        best = logits[v] > logits[best] ? v : best;
    }
    if (temperature <= 0.0f) {
        return best;
    }
    // the k-th largest logit by repeated selection is O(kV); find the cutoff
    // by sorting a copy instead when top-k is on
    float cutoff = -INFINITY;
    if (top_k > 0 && top_k < V) {
        float *sorted = malloc_check((size_t)V * sizeof(float), "top-k logits");
        for (int v = 0; v < V; v++) sorted[v] = logits[v];
        // partial selection: quickselect for the k-th largest
        int lo = 0, hi = V - 1, k = top_k - 1;
        while (lo < hi) {
            float pivot = sorted[(lo + hi) / 2];
            int i = lo, j = hi;
            while (i <= j) {
                while (sorted[i] > pivot) i++;
                while (sorted[j] < pivot) j--;
                if (i <= j) {
                    float t = sorted[i];
                    sorted[i++] = sorted[j];
                    sorted[j--] = t;
                }
            }
            if (k <= j)
                hi = j;
            else if (k >= i)
                lo = i;
            else
                break;
        }
        cutoff = sorted[k];
        free(sorted);
    }
    // p_v = exp((l_v - l_max) / temperature) / sum over kept v
    const float maxv = logits[best];
    double sum = 0.0;
    for (int v = 0; v < V; v++) {
        if (logits[v] >= cutoff) sum += exp((logits[v] - maxv) / temperature);
    }
    double r = rng_uniform(rng) * sum, acc = 0.0, before = 0.0;
    int chosen = best;
    for (int v = 0; v < V; v++) {
        if (logits[v] < cutoff) continue;
        chosen = v;
        before = acc;
        acc += exp((logits[v] - maxv) / temperature);
        if (acc > r) break;
    }
    trace_draw(chosen, r / sum, before / sum, acc / sum);
    return chosen;
}

int generate_window_keep(int max_seq_len) {
    return (max_seq_len + 1) / 2;
}

// Logits of the last of the n context tokens, by full recompute or the cache.
static const float *context_logits(GPT2 *model, KVCache *cache, const int *context, int n) {
    if (cache != NULL) {
        return kv_cache_forward(cache, model, context, n);
    }
    gpt2_forward(model, context, NULL, 1, n);
    return model->acts.logits + (size_t)(n - 1) * model->config.padded_vocab_size;
}

int generate_text(GPT2 *model, int *tokens, int prompt_len, int total_len,
                  const GenerateOptions *options, Rng *rng) {
    const GPT2Config *c = &model->config;
    if (prompt_len < 1 || total_len < prompt_len) {
        fatal("generate: needs 1 <= prompt (%d) <= total length (%d)", prompt_len, total_len);
    }
    const int keep = generate_window_keep(c->max_seq_len);
    int start = 0;
    for (int t = prompt_len; t < total_len; t++) {
        if (t - start > c->max_seq_len) {
            start = t - keep;
        }
        const float *logits = context_logits(model, options->cache, tokens + start, t - start);
        if (options->logits != NULL) {
            memcpy(options->logits + (size_t)(t - prompt_len) * c->vocab_size, logits,
                   (size_t)c->vocab_size * sizeof(float));
        }
        tokens[t] = sample_token(logits, c->vocab_size, options->temperature, options->top_k, rng);
        if (tokens[t] == options->stop_token) {
            return t + 1;
        }
    }
    return total_len;
}

void generate_tokens(GPT2 *model, int *tokens, int prompt_len, int total_len, float temperature,
                     int top_k, Rng *rng) {
    const GPT2Config *c = &model->config;
    if (prompt_len < 1 || total_len > c->max_seq_len) {
        fatal("generate: needs 1 <= prompt (%d) and a total length (%d) <= maxT %d", prompt_len,
              total_len, c->max_seq_len);
    }
    GenerateOptions options = {.temperature = temperature, .top_k = top_k, .stop_token = -1};
    generate_text(model, tokens, prompt_len, total_len, &options, rng);
}
