#include "sampler.h"

#include <math.h>
#include <stdlib.h>

#include "utils.h"

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
    double r = rng_uniform(rng) * sum, acc = 0.0;
    int last_kept = best;
    for (int v = 0; v < V; v++) {
        if (logits[v] < cutoff) continue;
        last_kept = v;
        acc += exp((logits[v] - maxv) / temperature);
        if (acc > r) return v;
    }
    return last_kept;
}

void generate_tokens(GPT2 *model, int *tokens, int prompt_len, int total_len, float temperature,
                     int top_k, Rng *rng) {
    const GPT2Config *c = &model->config;
    if (prompt_len < 1 || total_len > c->max_seq_len) {
        fatal("generate: needs 1 <= prompt (%d) and a total length (%d) <= maxT %d", prompt_len,
              total_len, c->max_seq_len);
    }
    for (int t = prompt_len; t < total_len; t++) {
        gpt2_forward(model, tokens, NULL, 1, t);
        const float *logits = model->acts.logits + (size_t)(t - 1) * c->padded_vocab_size;
        tokens[t] = sample_token(logits, c->vocab_size, temperature, top_k, rng);
    }
}
