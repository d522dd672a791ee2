/*
 * The fit of t = alpha + beta x to measured times (tcomms/algo/tuning.h): the
 * latency and the time per byte of a link from ping-pong times, the time per
 * byte of a reduction from its times.
 *
 * Two least-squares steps, because real links are not quite affine (a token
 * bucket lets a burst through at line rate, protocols switch at a size) and
 * the model needs beta right for large messages and alpha right for small
 * ones:
 *  1. beta: the ordinary least-squares slope over every point (absolute
 *     error, so the largest sizes, where the bytes dominate, decide it);
 *  2. alpha: the least-squares intercept with that slope, in relative error
 *     (weights 1 / t^2), over the points the latency dominates (beta x <=
 *     t / 2); when there is none, the smallest size's t - beta x.
 * Both are clamped at 0. On exact affine data both are exact.
 */
#include <math.h>

#include "tcomms/algo/tuning.h"

tc_status_t tc_algo_fit_line(const double *x, const double *t, size_t n, double *alpha_p,
                             double *beta_p)
{
    double xmax = 0, xmin = INFINITY, sx = 0, sxx = 0, st = 0, sxt = 0, det, b, a;
    double sw = 0, swr = 0, small_r = 0;
    size_t i;

    if (x == NULL || t == NULL || alpha_p == NULL || beta_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_fit_line: NULL argument");
    if (n < 2)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_fit_line: %zu points (at least 2)", n);
    for (i = 0; i < n; i++) {
        if (!(t[i] > 0) || !isfinite(t[i]) || !(x[i] >= 0) || !isfinite(x[i]))
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "tc_algo_fit_line: point %zu (x %g, t %g): x must be >= 0 and "
                                "t > 0, both finite",
                                i, x[i], t[i]);
        if (x[i] > xmax)
            xmax = x[i];
    }
    if (!(xmax > 0))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_algo_fit_line: fewer than two distinct sizes among %zu points", n);
    /* 1. the slope; x scaled to [0, 1] for the conditioning */
    for (i = 0; i < n; i++) {
        double xs = x[i] / xmax;
        sx += xs;
        sxx += xs * xs;
        st += t[i];
        sxt += xs * t[i];
    }
    det = (double)n * sxx - sx * sx;
    if (!(det > 1e-12 * (double)n * sxx))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_algo_fit_line: fewer than two distinct sizes among %zu points", n);
    b = ((double)n * sxt - sx * st) / det / xmax;
    if (b < 0)
        b = 0;
    /* 2. the intercept over the latency-dominated points */
    for (i = 0; i < n; i++) {
        double r = t[i] - b * x[i], w = 1.0 / (t[i] * t[i]);
        if (x[i] < xmin) {
            xmin = x[i];
            small_r = r;
        }
        if (b * x[i] <= t[i] / 2) {
            sw += w;
            swr += w * r;
        }
    }
    a = sw > 0 ? swr / sw : small_r;
    *alpha_p = a > 0 ? a : 0;
    *beta_p = b;
    return TC_OK;
}
