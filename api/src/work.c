/* Public work objects: wait, test, status, start, free. */
#include <stdlib.h>

#include "api_impl.h"

tc_status_t tc_api_work_new(const char *fn, tc_work_t **work_p)
{
    tc_work_t *w = tc_api_work_alloc();
    if (!w)
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: allocating the work handle", fn);
    w->magic = TC_WORK_MAGIC;
    *work_p = w;
    return TC_OK;
}

void tc_api_work_drop(tc_work_t *work)
{
    if (work)
        tc_api_work_retire(work);
}

static tc_status_t check_work(const tc_work_t *work, const char *fn)
{
    if (!work)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: work is NULL", fn);
    if (work->magic == TC_WORK_DEAD)
        return tc_error_set(TC_ERR_INVALID_STATE, "%s: work %p was freed", fn, (const void *)work);
    if (work->magic != TC_WORK_MAGIC || !work->rt)
        return tc_error_set(TC_ERR_INVALID_STATE, "%s: work %p is not a live work object", fn,
                            (const void *)work);
    return TC_OK;
}

tc_status_t tc_work_wait(tc_work_t *work, int64_t timeout_ms)
{
    tc_status_t st = check_work(work, "tc_work_wait");
    return st != TC_OK ? st : tc_rt_work_wait(work->rt, timeout_ms);
}

tc_status_t tc_work_test(tc_work_t *work, int *done_p)
{
    tc_status_t st = check_work(work, "tc_work_test");
    if (st != TC_OK)
        return st;
    if (!done_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_work_test: done_p is NULL");
    return tc_rt_work_test(work->rt, done_p);
}

tc_status_t tc_work_status(const tc_work_t *work, tc_work_state_t *state_p, tc_status_t *result_p)
{
    tc_status_t st = check_work(work, "tc_work_status");
    if (st != TC_OK)
        return st;
    if (!state_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_work_status: state_p is NULL");
    int running, started;
    tc_status_t result;
    tc_rt_work_state(work->rt, &running, &started, &result);
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
    if (!work || work->magic != TC_WORK_MAGIC || !work->rt)
        return "not a live work object";
    return tc_rt_work_error(work->rt);
}

tc_status_t tc_work_start(tc_work_t *work)
{
    tc_status_t st = check_work(work, "tc_work_start");
    return st != TC_OK ? st : tc_rt_work_start(work->rt);
}

tc_status_t tc_work_free(tc_work_t *work)
{
    if (!work)
        return TC_OK;
    tc_status_t st = check_work(work, "tc_work_free");
    if (st != TC_OK)
        return st;
    st = tc_rt_work_free(work->rt);
    tc_api_work_drop(work);
    return st;
}
