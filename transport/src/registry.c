/* The table of known transport backends, looked up by name. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/transport.h"

/* A handful of backends exist (self, shm, tcp, ib, cuda_ipc): a fixed table is enough. */
#define TC_TP_REGISTRY_MAX 16

static pthread_mutex_t tc_tp_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static const tc_tp_ops_t *tc_tp_registry[TC_TP_REGISTRY_MAX];
static tc_tp_reach_t tc_tp_registry_reach[TC_TP_REGISTRY_MAX];
static int tc_tp_registry_count;

tc_status_t tc_tp_register(const tc_tp_ops_t *ops)
{
    return tc_tp_register_reach(ops, TC_TP_REACH_ANY);
}

tc_status_t tc_tp_register_reach(const tc_tp_ops_t *ops, tc_tp_reach_t reach)
{
    if (ops == NULL || ops->name == NULL || ops->name[0] == '\0')
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_register: ops or ops->name is NULL/empty");
    if (ops->version != TC_TP_API_VERSION)
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "tc_tp_register: backend '%s' has ops version %u, this build "
                            "expects %u",
                            ops->name, ops->version, TC_TP_API_VERSION);
    if ((unsigned)reach > TC_TP_REACH_SELF)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_register: backend '%s': reach %d unknown",
                            ops->name, (int)reach);

    tc_status_t status = TC_OK;
    pthread_mutex_lock(&tc_tp_registry_lock);
    for (int i = 0; i < tc_tp_registry_count; i++) {
        if (strcmp(tc_tp_registry[i]->name, ops->name) != 0)
            continue;
        if (tc_tp_registry[i] != ops)
            status = tc_error_set(TC_ERR_INVALID_STATE,
                                  "tc_tp_register: another backend named '%s' is already "
                                  "registered",
                                  ops->name);
        else if (tc_tp_registry_reach[i] != reach)
            status = tc_error_set(TC_ERR_INVALID_STATE,
                                  "tc_tp_register: backend '%s' is already registered with "
                                  "another reach (%d, not %d)",
                                  ops->name, (int)tc_tp_registry_reach[i], (int)reach);
        goto out; /* the same table again: nothing to do */
    }
    if (tc_tp_registry_count == TC_TP_REGISTRY_MAX) {
        status = tc_error_set(TC_ERR_NO_RESOURCE,
                              "tc_tp_register: cannot register '%s': the table of %d backends "
                              "is full",
                              ops->name, TC_TP_REGISTRY_MAX);
        goto out;
    }
    tc_tp_registry_reach[tc_tp_registry_count] = reach;
    tc_tp_registry[tc_tp_registry_count++] = ops;
out:
    pthread_mutex_unlock(&tc_tp_registry_lock);
    return status;
}

const tc_tp_ops_t *tc_tp_lookup(const char *name)
{
    if (name == NULL) {
        tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_lookup: name is NULL");
        return NULL;
    }

    const tc_tp_ops_t *found = NULL;
    char known[TC_TP_REGISTRY_MAX * 24] = "";
    size_t used = 0;

    pthread_mutex_lock(&tc_tp_registry_lock);
    for (int i = 0; i < tc_tp_registry_count && found == NULL; i++) {
        if (strcmp(tc_tp_registry[i]->name, name) == 0)
            found = tc_tp_registry[i];
    }
    if (found == NULL) {
        for (int i = 0; i < tc_tp_registry_count && used < sizeof(known); i++) {
            int n = snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                             tc_tp_registry[i]->name);
            if (n < 0)
                break;
            used += (size_t)n;
        }
    }
    pthread_mutex_unlock(&tc_tp_registry_lock);

    if (found == NULL)
        tc_error_set(TC_ERR_NOT_FOUND, "no transport backend named '%s' (registered: %s)", name,
                     used ? known : "none");
    return found;
}

int tc_tp_registered(const tc_tp_ops_t **ops, tc_tp_reach_t *reach, int cap)
{
    pthread_mutex_lock(&tc_tp_registry_lock);
    int n = tc_tp_registry_count;
    for (int i = 0; i < n && i < cap; i++) {
        ops[i] = tc_tp_registry[i];
        if (reach)
            reach[i] = tc_tp_registry_reach[i];
    }
    pthread_mutex_unlock(&tc_tp_registry_lock);
    return n;
}
