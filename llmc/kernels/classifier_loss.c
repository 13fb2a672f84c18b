#include "classifier_loss.h"

#include <math.h>
#include <stddef.h>

// A batch of logits is usually small (B x K): below PARALLEL_MIN one thread,
// no parallel region's barrier.
enum { PARALLEL_MIN = 1 << 15 };

static float row_max(const float *z, int K) {
    float m = z[0];
    for (int k = 1; k < K; k++) {
        m = z[k] > m ? z[k] : m;
    }
    return m;
}

// Row n's targets: labels y, y2 and the weight lam of y (y2 = y, lam = 1 unmixed).
static void row_targets(const int *labels, MixTargets mix, int n, int *y, int *y2, double *lam) {
    *y = labels[n];
    *y2 = mix.labels2 != NULL ? mix.labels2[n] : *y;
    *lam = mix.labels2 != NULL ? (double)mix.lam[n] : 1.0;
}

void classifier_loss_forward(float *losses, const float *logits, const int *labels, MixTargets mix,
                             float smoothing, int N, int K) {
#pragma omp parallel for schedule(static) if ((long)N * K >= PARALLEL_MIN)
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * K;
        float m = row_max(z, K);
        double sum_exp = 0.0, sum_z = 0.0;
        for (int k = 0; k < K; k++) {
            sum_exp += exp((double)(z[k] - m));
            sum_z += z[k];
        }
        double lse = m + log(sum_exp), lam;
        int y, y2;
        row_targets(labels, mix, n, &y, &y2, &lam);
        // -sum_k q_k (z_k - lse) = lse - (1 - s) (lam z_y + (1 - lam) z_y2) - (s / K) sum_k z_k
        const double z_mix = lam * z[y] + (1.0 - lam) * z[y2];
        losses[n] = (float)(lse - (1.0 - smoothing) * z_mix - smoothing * sum_z / K);
    }
}

void classifier_loss_backward(float *dlogits, const float *logits, const int *labels,
                              MixTargets mix, float smoothing, float scale, int N, int K) {
#pragma omp parallel for schedule(static) if ((long)N * K >= PARALLEL_MIN)
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * K;
        float *dz = dlogits + (size_t)n * K;
        float m = row_max(z, K);
        double sum_exp = 0.0;
        for (int k = 0; k < K; k++) {
            sum_exp += exp((double)(z[k] - m));
        }
        int y, y2;
        double lam;
        row_targets(labels, mix, n, &y, &y2, &lam);
        for (int k = 0; k < K; k++) {
            double p = exp((double)(z[k] - m)) / sum_exp;
            double hot = (k == y ? lam : 0.0) + (k == y2 ? 1.0 - lam : 0.0);
            double q = smoothing / K + (1.0 - smoothing) * hot;
            dz[k] = (float)(scale * (p - q));
        }
    }
}

int classifier_topk_count(const float *logits, const int *labels, int N, int K, int k) {
    int hits = 0;
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * K;
        const int y = labels[n];
        if (isnan(z[y])) {
            continue; // a NaN logit is never a hit
        }
        int rank = 0; // the label's place in the order: larger logits, then equal ones before it
        for (int j = 0; j < K; j++) {
            rank += z[j] > z[y] || (z[j] == z[y] && j < y);
        }
        hits += rank < k;
    }
    return hits;
}
