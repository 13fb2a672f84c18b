// Comparisons the C and C++ tests share (test_cuda_compare.h includes it):
// the NaN-proof running maximum, relative errors against a reference and the
// one-line "what  error  (tol)  ok|FAIL" report. Small enough to live in a
// header (static inline), so each test stays one .c file.
//
// Every maximum of differences goes through worst_of: `d > m ? d : m` and
// fmax drop a NaN (fmax(0, NaN) = 0), so a NaN gradient element would pass.
// The comparisons are written `!(err <= tol)` (a NaN fails them).
#ifndef FOLDNORM_TEST_HELPERS_H
#define FOLDNORM_TEST_HELPERS_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// the running maximum of differences with d added; NaN sticks (once either
// is NaN the result is NaN, whatever follows), +Inf wins
static inline double worst_of(double worst, double d) {
    if (isnan(worst)) {
        return worst;
    }
    return d <= worst ? worst : d; // d NaN: d
}

// max|a - b| / max|b| over rows x len values, row r of a at a + r * stride_a
// (of b at b + r * stride_b); the absolute difference when b is all zero.
// NaN in either (or an Inf difference) makes it NaN or Inf.
static inline double strided_relative_error(const float *a, const float *b, size_t rows,
                                            size_t len, size_t stride_a, size_t stride_b) {
    double max_diff = 0.0, max_ref = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t i = 0; i < len; i++) {
            double d = fabs((double)a[r * stride_a + i] - (double)b[r * stride_b + i]);
            double m = fabs((double)b[r * stride_b + i]);
            max_diff = worst_of(max_diff, d);
            max_ref = worst_of(max_ref, m);
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
        m = worst_of(m, fabs(x[i]));
    }
    return m;
}

// the largest |a[k] - b[k]| over n values (NaN propagates): step losses
static inline double worst_abs_diff(const float *a, const float *b, size_t n) {
    double worst = 0.0;
    for (size_t k = 0; k < n; k++) {
        worst = worst_of(worst, fabs((double)a[k] - (double)b[k]));
    }
    return worst;
}

// ||a - b|| / ||b|| (2-norms) over n values: the normwise relative error, for
// a difference spread over a whole vector (NaN propagates)
static inline double normwise_relative_error(const float *a, const float *b, size_t n) {
    double diff = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        diff += d * d;
        ref += (double)b[i] * (double)b[i];
    }
    return ref > 0.0 ? sqrt(diff / ref) : sqrt(diff);
}

// max|a - ref| / max|ref| against a double-precision reference.
static inline double relative_error_vs_double(const float *a, const double *ref, size_t n) {
    double d = 0.0;
    for (size_t i = 0; i < n; i++) {
        d = worst_of(d, fabs((double)a[i] - ref[i]));
    }
    double m = max_abs(ref, n);
    return m > 0.0 ? d / m : d;
}

// Prints "  what  err  (tol)  ok|FAIL" (what padded to width); 1 when err is
// finite and within tol.
static inline int report_within(const char *what, int width, double err, double tol) {
    int ok = isfinite(err) && err <= tol; // NaN and Inf fail
    printf("  %-*s %.3e  (tol %.0e)  %s\n", width, what, err, tol, ok ? "ok" : "FAIL");
    return ok;
}

// The mutation check of the comparisons themselves (test/suites/reference.sh,
// equivalence_ln_cbwc.sh): FOLDNORM_TEST_INJECT_NAN=WHAT makes a test put one
// NaN where it names (e.g. "grad": one gradient element, "loss": one step
// loss), and the test must then fail. 1 when WHAT is the one asked for.
static inline int test_inject_nan(const char *what) {
    const char *v = getenv("FOLDNORM_TEST_INJECT_NAN");
    if (v != NULL && strcmp(v, what) == 0) {
        printf("  FOLDNORM_TEST_INJECT_NAN=%s: one NaN put in (this run must fail)\n", what);
        return 1;
    }
    return 0;
}

// report_within at the width of tensor names: the reference tests' lines.
static inline int check_error(const char *what, double err, double tol) {
    return report_within(what, 10, err, tol);
}

#endif
