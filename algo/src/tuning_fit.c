/*
 * Least-squares fit of t = alpha + beta x (tcomms/algo/tuning.h): the
 * latency and the time per byte of a link from ping-pong times, the time per
 * byte of a reduction from its times. Weights 1 / t^2 minimise the relative
 * error, so that 8-byte messages (alpha) and megabytes (beta) both count.
 */
#include <math.h>

#include "tcomms/algo/tuning.h"

tc_status_t tc_algo_fit_line(const double *x, const double *t, size_t n, double *alpha_p,
                             double *beta_p)
{
    double xmax = 0, s = 0, sx = 0, sxx = 0, st = 0, sxt = 0, det, a, b;
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
    /* x scaled to [0, 1] for the conditioning of the normal equations */
    for (i = 0; i < n; i++) {
        double w = 1.0 / (t[i] * t[i]), xs = xmax > 0 ? x[i] / xmax : 0;
        s += w;
        sx += w * xs;
        sxx += w * xs * xs;
        st += w * t[i];
        sxt += w * xs * t[i];
    }
    det = s * sxx - sx * sx;
    if (!(det > 1e-12 * s * sxx))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_algo_fit_line: fewer than two distinct sizes among %zu points", n);
    b = (s * sxt - sx * st) / det;
    a = (st - b * sx) / s;
    if (a < 0) { /* through the origin */
        a = 0;
        b = sxt / sxx;
    }
    if (b < 0) { /* a constant */
        b = 0;
        a = st / s;
    }
    *alpha_p = a;
    *beta_p = xmax > 0 ? b / xmax : 0;
    return TC_OK;
}
