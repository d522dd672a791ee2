/* Handles stay allocated after destroy (tc_comm_destroy, tc_work_free): a
 * destroyed handle is kept, marked, on a list the next new handle of its kind
 * is taken from. A call on a destroyed handle therefore reads live memory and
 * fails with TC_ERR_INVALID_STATE ("was destroyed") instead of touching freed
 * memory. Memory is bounded by the most handles ever alive at once; the lists
 * are reachable, so leak checkers see no leak. Only create and destroy take
 * the lock. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"

static pthread_mutex_t handles_mu = PTHREAD_MUTEX_INITIALIZER;
static tc_comm_t *comms_free;
static tc_work_t *works_free;

tc_comm_t *tc_api_comm_alloc(void)
{
    pthread_mutex_lock(&handles_mu);
    tc_comm_t *c = comms_free;
    if (c)
        comms_free = c->next_free;
    pthread_mutex_unlock(&handles_mu);
    if (!c)
        return calloc(1, sizeof(*c));
    memset(c, 0, sizeof(*c));
    return c;
}

void tc_api_comm_retire(tc_comm_t *c)
{
    free(c->batch);
    memset(c, 0, sizeof(*c));
    c->magic = TC_COMM_DEAD;
    pthread_mutex_lock(&handles_mu);
    c->next_free = comms_free;
    comms_free = c;
    pthread_mutex_unlock(&handles_mu);
}

tc_work_t *tc_api_work_alloc(void)
{
    pthread_mutex_lock(&handles_mu);
    tc_work_t *w = works_free;
    if (w)
        works_free = w->next_free;
    pthread_mutex_unlock(&handles_mu);
    if (!w)
        return calloc(1, sizeof(*w));
    memset(w, 0, sizeof(*w));
    return w;
}

void tc_api_work_retire(tc_work_t *w)
{
    memset(w, 0, sizeof(*w));
    w->magic = TC_WORK_DEAD;
    pthread_mutex_lock(&handles_mu);
    w->next_free = works_free;
    works_free = w;
    pthread_mutex_unlock(&handles_mu);
}
