// Comparisons the C tests share: relative errors against a reference and the
// one-line "what  error  (tol)  ok|FAIL" report. Small enough to live in a
// header (static inline), so each test stays one .c file.
#ifndef FOLDNORM_TEST_HELPERS_H
#define FOLDNORM_TEST_HELPERS_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

// max|a - b| / max|b| over rows x len values, row r of a at a + r * stride_a
// (of b at b + r * stride_b); the absolute difference when b is all zero.
static inline double strided_relative_error(const float *a, const float *b, size_t rows,
                                            size_t len, size_t stride_a, size_t stride_b) {
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t i = 0; i < len; i++) {
            double d = fabs((double)a[r * stride_a + i] - (double)b[r * stride_b + i]);
            double m = fabs((double)b[r * stride_b + i]);
            max_diff = d > max_diff ? d : max_diff;
            max_ref = m > max_ref ? m : max_ref;
        }
    }
    return max_ref == 0.0 ? max_diff : max_diff / max_ref;
}

// max|a - b| / max|b| over n contiguous values.
static inline double relative_error(const float *a, const float *b, size_t n) {
    return strided_relative_error(a, b, 1, n, n, n);
}

static inline double max_abs(const double *x, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        m = fmax(m, fabs(x[i]));
    }
    return m;
}

// max|a - ref| / max|ref| against a double-precision reference.
static inline double relative_error_vs_double(const float *a, const double *ref, size_t n) {
    double d = 0.0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - ref[i]));
    }
    double m = max_abs(ref, n);
    return m > 0.0 ? d / m : d;
}

// Prints "  what  err  (tol)  ok|FAIL" (what padded to width); 1 when err is
// finite and within tol.
static inline int report_within(const char *what, int width, double err, double tol) {
    int ok = isfinite(err) && err <= tol;
    printf("  %-*s %.3e  (tol %.0e)  %s\n", width, what, err, tol, ok ? "ok" : "FAIL");
    return ok;
}

// report_within at the width of tensor names: the reference tests' lines.
static inline int check_error(const char *what, double err, double tol) {
    return report_within(what, 10, err, tol);
}

#endif
