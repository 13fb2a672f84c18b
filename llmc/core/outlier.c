// llm.c's outlier windows (outlier.h).
#include "outlier.h"

#include <math.h>

// mean and population variance of the window's values but skip (-1: none)
static void window_moments(const OutlierWindow *w, int skip, double *mean, double *variance) {
    double sum = 0.0;
    int n = 0;
    for (int i = 0; i < w->count; i++) {
        if (i != skip) {
            sum += w->values[i];
            n++;
        }
    }
    *mean = sum / n;
    double squares = 0.0; // two passes: no cancellation
    for (int i = 0; i < w->count; i++) {
        if (i != skip) {
            const double d = w->values[i] - *mean;
            squares += d * d;
        }
    }
    *variance = squares / n;
}

double outlier_window_push(OutlierWindow *w, double value) {
    if (w->count < OUTLIER_WINDOW) {
        w->values[w->count++] = value;
        return NAN;
    }
    w->values[w->next] = value;
    w->next = (w->next + 1) % OUTLIER_WINDOW;
    double mean, variance;
    window_moments(w, -1, &mean, &variance);
    return variance == 0.0 ? 0.0 : (value - mean) / sqrt(variance);
}

double outlier_window_limit(const OutlierWindow *w, double z_max) {
    const double n = OUTLIER_WINDOW, k = n - 1.0;
    if (!(z_max > 0.0) || w->count < OUTLIER_WINDOW || z_max * z_max >= k) {
        return INFINITY;
    }
    double mean, variance; // of the values that stay when the oldest leaves
    window_moments(w, w->next, &mean, &variance);
    return mean + z_max * sqrt(variance * n / (k - z_max * z_max));
}
