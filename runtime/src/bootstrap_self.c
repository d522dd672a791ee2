/* A world of one: rank 0 of 1; keys are kept in this process. */
#include <stdlib.h>
#include <string.h>

#include "bootstrap_impl.h"

#define SELF_MAX_KEYS 16

typedef struct {
    char *key;
    void *val;
    size_t len;
} self_entry_t;

typedef struct {
    tc_boot_t head;
    int nkeys;
    self_entry_t keys[SELF_MAX_KEYS];
} tc_boot_self_t;

static self_entry_t *self_find(tc_boot_self_t *s, const char *key)
{
    for (int i = 0; i < s->nkeys; i++)
        if (strcmp(s->keys[i].key, key) == 0)
            return &s->keys[i];
    return NULL;
}

static tc_status_t self_put(tc_boot_t *boot, const char *key, const void *val, size_t len)
{
    tc_boot_self_t *s = (tc_boot_self_t *)boot;
    self_entry_t *e = self_find(s, key);
    if (!e && s->nkeys == SELF_MAX_KEYS)
        return tc_error_set(TC_ERR_NO_RESOURCE, "bootstrap(self): more than %d keys",
                            SELF_MAX_KEYS);
    void *copy = malloc(len ? len : 1);
    if (!copy)
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(self): put of %zu bytes", len);
    memcpy(copy, val, len);
    if (!e) {
        char *k = strdup(key);
        if (!k) {
            free(copy);
            return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(self): put of key '%s'", key);
        }
        e = &s->keys[s->nkeys++];
        e->key = k;
        e->val = NULL;
    }
    free(e->val);
    e->val = copy;
    e->len = len;
    return TC_OK;
}

static tc_status_t self_fence(tc_boot_t *boot, uint64_t deadline_ns)
{
    return TC_OK;
}

static tc_status_t self_get(tc_boot_t *boot, int peer, const char *key, void *buf, size_t cap,
                            size_t *len_p, uint64_t deadline_ns)
{
    self_entry_t *e = self_find((tc_boot_self_t *)boot, key);
    if (!e)
        return tc_error_set(TC_ERR_NOT_FOUND, "bootstrap(self): no key '%s'", key);
    if (e->len > cap)
        return tc_error_set(TC_ERR_TRUNCATED,
                            "bootstrap(self): key '%s' has %zu bytes, buffer %zu", key, e->len,
                            cap);
    memcpy(buf, e->val, e->len);
    *len_p = e->len;
    return TC_OK;
}

static void self_destroy(tc_boot_t *boot)
{
    tc_boot_self_t *s = (tc_boot_self_t *)boot;
    for (int i = 0; i < s->nkeys; i++) {
        free(s->keys[i].key);
        free(s->keys[i].val);
    }
    free(s);
}

static const tc_boot_ops_t self_ops = {"self", self_put, self_fence, self_get, self_destroy,
                                       NULL, NULL};

tc_status_t tc_boot_self_create(tc_boot_t **boot_p)
{
    tc_boot_self_t *s = calloc(1, sizeof(*s));
    if (!s)
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(self): allocating the bootstrap");
    s->head.ops = &self_ops;
    s->head.rank = 0;
    s->head.size = 1;
    s->head.local_size = 1;
    s->head.local_rank = 0;
    strcpy(s->head.launcher, "self");
    tc_boot_fill_common(&s->head);
    /* One rank has no peer to authenticate; a secret set anyway is kept for its listeners. */
    tc_status_t rc = tc_boot_secret_from_env(&s->head, "self");
    if (rc != TC_OK) {
        free(s);
        return rc;
    }
    *boot_p = &s->head;
    return TC_OK;
}
