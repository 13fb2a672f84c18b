// llm.c's outlier skipping (-sl, -sg; llm.c/llmc/outlier_detector.h): a window
// of the last OUTLIER_WINDOW values of the step loss and of the gradient norm;
// once it is full, each new value replaces the oldest and its z-score is
// taken over the window it joined (mean and population standard deviation,
// z = 0 when they are all equal). A step whose loss z-score exceeds -sl, or
// whose norm z-score exceeds -sg, skips its update; its values join the
// windows all the same, as in llm.c. The norm enters as a float, as llm.c's.
//
// The trainers decide before they know the value: z grows with the value
// (z = sqrt(k) d / sqrt(n s^2 + d^2), d the value's distance above the mean m
// of the k = n - 1 others, s^2 their variance), so "z > z_max" is "value >
// m + z_max s sqrt(n / (k - z_max^2))" (never when z_max^2 >= k). The GPU
// compares its loss and norm with these limits on the device, without a wait.
#ifndef FOLDNORM_OUTLIER_H
#define FOLDNORM_OUTLIER_H

#define OUTLIER_WINDOW 128

typedef struct {
    double values[OUTLIER_WINDOW];
    int count; // values held, up to OUTLIER_WINDOW
    int next;  // once full: the oldest, which the next value replaces
} OutlierWindow;

typedef struct {
    OutlierWindow loss, grad_norm; // pushed together: the same count and next
    int skipped;                   // updates skipped so far in the run
} StepOutliers;

// Adds value; returns its z-score over the window it joined, NaN while the
// window was not yet full (llm.c's update_detector).
double outlier_window_push(OutlierWindow *w, double value);

// The value above which the next push's z-score exceeds z_max; +infinity when
// z_max <= 0 (off), while the window is not full, or when no value can.
double outlier_window_limit(const OutlierWindow *w, double z_max);

#endif
