/* The in-memory store (mem_store.h): a singly linked list of keys under one mutex. */
#include "mem_store.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct mem_entry {
    struct mem_entry *next;
    size_t len;
    unsigned char *val;
    char key[];
} mem_entry_t;

struct mem_store {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* broadcast on every set and add */
    mem_entry_t *head;
};

mem_store_t *mem_store_new(void)
{
    mem_store_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    return s;
}

void mem_store_free(mem_store_t *s)
{
    if (!s)
        return;
    while (s->head) {
        mem_entry_t *e = s->head;
        s->head = e->next;
        free(e->val);
        free(e);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Locked. */
static mem_entry_t *mem_find(mem_store_t *s, const char *key)
{
    for (mem_entry_t *e = s->head; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

/* Locked: the entry of @p key, created empty when absent (NULL: out of memory). */
static mem_entry_t *mem_entry(mem_store_t *s, const char *key)
{
    mem_entry_t *e = mem_find(s, key);
    if (e)
        return e;
    size_t klen = strlen(key);
    if (!(e = calloc(1, sizeof(*e) + klen + 1)))
        return NULL;
    memcpy(e->key, key, klen + 1);
    e->next = s->head;
    s->head = e;
    return e;
}

static int mem_set(void *ctx, const char *key, const void *val, size_t len)
{
    mem_store_t *s = ctx;
    unsigned char *copy = malloc(len ? len : 1);
    if (!copy)
        return TC_STORE_FAILED;
    if (len)
        memcpy(copy, val, len);
    pthread_mutex_lock(&s->mu);
    mem_entry_t *e = mem_entry(s, key);
    if (e) {
        free(e->val);
        e->val = copy;
        e->len = len;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    if (!e)
        free(copy);
    return e ? TC_STORE_OK : TC_STORE_FAILED;
}

static int mem_get(void *ctx, const char *key, void *buf, size_t cap, size_t *len_p)
{
    mem_store_t *s = ctx;
    pthread_mutex_lock(&s->mu);
    const mem_entry_t *e = mem_find(s, key);
    if (e) {
        memcpy(buf, e->val, e->len < cap ? e->len : cap);
        *len_p = e->len;
    }
    pthread_mutex_unlock(&s->mu);
    return e ? TC_STORE_OK : TC_STORE_ABSENT;
}

static int mem_wait(void *ctx, const char *key, int64_t timeout_ms)
{
    mem_store_t *s = ctx;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int64_t ms = timeout_ms > 0 ? timeout_ms : 0;
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = TC_STORE_OK;
    pthread_mutex_lock(&s->mu);
    while (!mem_find(s, key))
        if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT) {
            rc = mem_find(s, key) ? TC_STORE_OK : TC_STORE_TIMEOUT;
            break;
        }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Counters are stored as an int64_t of 8 bytes; another value under the key fails. */
static int mem_add(void *ctx, const char *key, int64_t delta, int64_t *value_p)
{
    mem_store_t *s = ctx;
    int64_t *zero = calloc(1, sizeof(*zero)); /* the value of a new counter */
    if (!zero)
        return TC_STORE_FAILED;
    int rc = TC_STORE_FAILED;
    pthread_mutex_lock(&s->mu);
    mem_entry_t *e = mem_find(s, key);
    if (!e && (e = mem_entry(s, key)) != NULL) {
        e->val = (unsigned char *)zero;
        e->len = sizeof(int64_t);
        zero = NULL;
    }
    if (e && e->len == sizeof(int64_t)) {
        int64_t v;
        memcpy(&v, e->val, sizeof(v));
        v += delta;
        memcpy(e->val, &v, sizeof(v));
        *value_p = v;
        rc = TC_STORE_OK;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    free(zero);
    return rc;
}

tc_store_t mem_store_table(mem_store_t *s)
{
    tc_store_t t = TC_STORE_INIT;
    t.set = mem_set;
    t.get = mem_get;
    t.wait = mem_wait;
    t.add = mem_add;
    t.ctx = s;
    return t;
}
