/* Public work objects: wait, test, status, start, free. */
#include <stdlib.h>

#include "api_impl.h"

tc_status_t tc_work_wait(tc_work_t *work, int64_t timeout_ms)
{
    tc_api_work_t *w;
    tc_status_t st = tc_api_work_get(work, "tc_work_wait", &w);
    if (st == TC_OK && (st = tc_rt_work_wait(w->rt, timeout_ms)) == TC_ERR_INVALID_STATE)
        tc_error_prefix("tc_work_wait: ");
    return st;
}

tc_status_t tc_work_test(tc_work_t *work, int *done_p)
{
    tc_api_work_t *w;
    tc_status_t st = tc_api_work_get(work, "tc_work_test", &w);
    if (st != TC_OK)
        return st;
    if (!done_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_work_test: done_p is NULL");
    if ((st = tc_rt_work_test(w->rt, done_p)) == TC_ERR_INVALID_STATE)
        tc_error_prefix("tc_work_test: ");
    return st;
}

tc_status_t tc_work_status(const tc_work_t *work, tc_work_state_t *state_p, tc_status_t *result_p)
{
    tc_api_work_t *w;
    tc_status_t st = tc_api_work_get(work, "tc_work_status", &w);
    if (st != TC_OK)
        return st;
    if (!state_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_work_status: state_p is NULL");
    int running, started;
    tc_status_t result;
    tc_rt_work_state(w->rt, &running, &started, &result);
    if (running)
        *state_p = TC_WORK_IN_PROGRESS;
    else if (!started)
        *state_p = TC_WORK_NOT_STARTED;
    else if (result == TC_OK)
        *state_p = TC_WORK_COMPLETED;
    else if (result == TC_ERR_TIMEOUT)
        *state_p = TC_WORK_TIMED_OUT;
    else
        *state_p = TC_WORK_FAILED;
    if (result_p)
        *result_p = running ? TC_INPROGRESS : started ? result : TC_OK;
    return TC_OK;
}

const char *tc_work_error(const tc_work_t *work)
{
    tc_api_work_t *w;
    if (tc_api_work_get(work, "tc_work_error", &w) != TC_OK)
        return tc_last_error(); /* "tc_work_error: work ... was freed", and so on */
    return tc_rt_work_error(w->rt);
}

tc_status_t tc_work_source(const tc_work_t *work, int *src_p)
{
    tc_api_work_t *w;
    tc_status_t st = tc_api_work_get(work, "tc_work_source", &w);
    if (st == TC_OK && !src_p)
        st = tc_error_set(TC_ERR_INVALID_ARG, "tc_work_source: src_p is NULL");
    if (st == TC_OK && (st = tc_rt_work_source(w->rt, src_p)) != TC_OK)
        tc_error_prefix("tc_work_source: ");
    return st;
}

tc_status_t tc_work_start(tc_work_t *work)
{
    tc_api_work_t *w;
    tc_status_t st = tc_api_work_get(work, "tc_work_start", &w);
    if (st == TC_OK && (st = tc_rt_work_start(w->rt)) == TC_ERR_INVALID_STATE)
        tc_error_prefix("tc_work_start: ");
    return st;
}

tc_status_t tc_work_free(tc_work_t *work)
{
    if (!work)
        return TC_OK;
    tc_api_work_t *w;
    tc_status_t st = tc_api_work_get(work, "tc_work_free", &w);
    if (st != TC_OK)
        return st;
    st = tc_rt_work_free(w->rt);
    tc_api_work_drop(w);
    return st;
}
