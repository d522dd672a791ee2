/* The store's requests (boot_store.c serves the connections): the key table, PUT, GET, FENCE
 * (the barrier, its timeouts and ranks that leave before reaching it), NOTIFY and the EVENT
 * frames it fans out. Runs on the store's thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot_store_impl.h"
#include "tcomms/base/hmap.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/base/vec.h"
#include "tcomms/base/wire.h"

static uint64_t bs_hash(uint32_t rank, const uint8_t *key, size_t klen)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (int i = 0; i < 4; i++) {
        h ^= (rank >> (8 * i)) & 0xff;
        h *= 1099511628211ull;
    }
    for (size_t i = 0; i < klen; i++) {
        h ^= key[i];
        h *= 1099511628211ull;
    }
    return h;
}

static bs_entry_t *bs_find(tc_boot_store_t *st, uint32_t rank, const uint8_t *key, size_t klen)
{
    for (bs_entry_t *e = tc_hmap_get(&st->table, bs_hash(rank, key, klen)); e; e = e->next)
        if (e->rank == rank && e->klen == klen && memcmp(e->data, key, klen) == 0)
            return e;
    return NULL;
}

static tc_status_t bs_store(tc_boot_store_t *st, uint32_t rank, const uint8_t *key, uint16_t klen,
                            const uint8_t *val, uint32_t vlen)
{
    uint64_t h = bs_hash(rank, key, klen);
    bs_entry_t *head = tc_hmap_get(&st->table, h);
    bs_entry_t *e = malloc(sizeof(*e) + klen + (size_t)vlen);
    if (!e)
        return tc_error_set(TC_ERR_NO_MEMORY, "store: no memory for a value of %u bytes", vlen);
    e->rank = rank;
    e->klen = klen;
    e->vlen = vlen;
    memcpy(e->data, key, klen);
    if (vlen)
        memcpy(e->data + klen, val, vlen);
    /* An earlier value of the same key is replaced in place in its chain. */
    bs_entry_t **pp = &head;
    while (*pp &&
           !((*pp)->rank == rank && (*pp)->klen == klen && memcmp((*pp)->data, key, klen) == 0))
        pp = &(*pp)->next;
    bs_entry_t *old = *pp;
    e->next = old ? old->next : head;
    if (old && pp != &head) {
        *pp = e; /* inside the chain: the map still points at its head */
    } else {
        tc_status_t rc = tc_hmap_put(&st->table, h, e);
        if (rc != TC_OK) {
            free(e); /* the table is unchanged */
            return rc;
        }
    }
    if (old)
        free(old);
    else
        st->nkeys++;
    return TC_OK;
}

void tc_bs_table_free(tc_boot_store_t *st)
{
    size_t it = 0;
    void *v;
    while (tc_hmap_next(&st->table, &it, NULL, &v)) {
        for (bs_entry_t *e = v, *next; e; e = next) {
            next = e->next;
            free(e);
        }
    }
    tc_hmap_free(&st->table);
}

/* ---- output ---- */

/* Queue an EVENT frame for @p c and try to send it at once. */
static void bs_event(tc_boot_store_t *st, bs_conn_t *c, uint32_t kind, uint32_t rank,
                     uint32_t comm_id, uint32_t from)
{
    if (c->out_off == c->out_len)
        c->events_unsent = 0;
    if (c->events_unsent >= BS_MAX_EVENTS) {
        tc_log_error(TC_SUBSYS_RUNTIME,
                     "bootstrap store: dropping %s%s: it leaves more than %u "
                     "events unread (%zu bytes queued)",
                     c->name, tc_bs_who(c), BS_MAX_EVENTS, c->out_len - c->out_off);
        tc_bs_drop(st, c, "too many unread events");
        return;
    }
    uint8_t *p = tc_bs_out_reserve(st, c, TC_BS_HDR_LEN + TC_BS_EVENT_LEN);
    if (!p)
        return;
    tc_wire_writer_t w;
    tc_boot_store_hdr_write(p, TC_BS_EVENT, TC_BS_EVENT_LEN);
    tc_wire_writer_init(&w, p + TC_BS_HDR_LEN, TC_BS_EVENT_LEN);
    (void)tc_wire_put_u32(&w, kind);
    (void)tc_wire_put_u32(&w, rank);
    (void)tc_wire_put_u32(&w, comm_id);
    (void)tc_wire_put_u32(&w, from);
    c->out_len += TC_BS_HDR_LEN + TC_BS_EVENT_LEN;
    c->events_unsent++;
    tc_bs_flush(st, c);
}

/* ---- fences ---- */

static uint32_t bs_fence_count(const tc_boot_store_t *st, uint64_t seq)
{
    uint32_t *n = tc_vec_at(&st->fence_count, (size_t)(seq - 1));
    return n ? *n : 0;
}

/* Answer every client waiting in fence @p seq if all ranks have reached it. */
static void bs_fence_check_complete(tc_boot_store_t *st, uint64_t seq)
{
    if (bs_fence_count(st, seq) != (uint32_t)st->world)
        return;
    for (size_t i = 0; i < st->nconns; i++) {
        bs_conn_t *c = st->conns[i];
        if (c->fence_waiting && c->fence_seq == seq) {
            c->fence_waiting = false;
            tc_bs_reply(st, c, c->fence_req, TC_OK, NULL, 0);
        }
    }
}

/* A rank that left before fence s dooms it: answer its waiters now, not at their deadline. */
static void bs_fence_fail_doomed(tc_boot_store_t *st)
{
    for (size_t i = 0; i < st->nconns; i++) {
        bs_conn_t *c = st->conns[i];
        if (c->fence_waiting && c->fence_seq > st->left_min_arrived) {
            c->fence_waiting = false;
            tc_bs_reply_text(st, c, c->fence_req, TC_ERR_PEER_FAILED,
                             "fence %llu cannot complete: rank %d left the store after reaching "
                             "fence %llu only",
                             (unsigned long long)c->fence_seq, st->left_min_rank,
                             (unsigned long long)st->left_min_arrived);
        }
    }
}

void tc_bs_fence_timeout(tc_boot_store_t *st, bs_conn_t *c, uint64_t now)
{
    char list[TC_BS_MAX_TEXT / 2];
    size_t off = 0;
    int missing = 0, never = 0;
    uint64_t seq = c->fence_seq;
    list[0] = '\0';
    for (int r = 0; r < st->world; r++) {
        if (st->arrived[r] >= seq)
            continue;
        if (st->rank_state[r] == BS_RANK_ABSENT)
            never++;
        if (missing++ < BS_MISSING_LISTED && off < sizeof(list)) {
            int n = snprintf(list + off, sizeof(list) - off, "%s%d", off ? " " : "", r);
            off += n > 0 ? (size_t)n : 0;
        }
    }
    c->fence_waiting = false;
    tc_bs_reply_text(st, c, c->fence_req, TC_ERR_TIMEOUT,
                     "fence %llu: %d of %d ranks arrived within %llu ms; missing %s%s "
                     "(%d of the missing never connected to the store)",
                     (unsigned long long)seq, st->world - missing, st->world,
                     (unsigned long long)((now - c->fence_start_ns) / BS_NS_PER_MS), list,
                     missing > BS_MISSING_LISTED ? " ..." : "", never);
}

static tc_status_t bs_on_fence(tc_boot_store_t *st, bs_conn_t *c)
{
    tc_bs_fence_t f;
    tc_status_t rc = tc_boot_store_fence_parse(c->body, c->body_len, &f);
    if (rc != TC_OK)
        return rc;
    uint64_t req = f.req, seq = f.seq;
    uint32_t wait_ms = f.wait_ms;
    uint64_t have = st->arrived[c->rank];
    if (seq != have && seq != have + 1)
        return tc_error_set(TC_ERR_PROTOCOL, "FENCE %llu after fence %llu", (unsigned long long)seq,
                            (unsigned long long)have);
    if (seq == 0)
        return tc_error_set(TC_ERR_PROTOCOL, "FENCE 0 (fences count from 1)");
    uint64_t now = tc_time_ns();
    if (seq == have + 1) {
        if (tc_vec_size(&st->fence_count) < seq) {
            uint32_t zero = 0;
            if (tc_vec_push(&st->fence_count, &zero) != TC_OK)
                return tc_error_set(TC_ERR_NO_MEMORY, "store: no memory for fence %llu",
                                    (unsigned long long)seq);
        }
        (*(uint32_t *)tc_vec_at(&st->fence_count, (size_t)(seq - 1)))++;
        st->arrived[c->rank] = seq;
    }
    /* A repeated fence (the client timed out and tries again) replaces the old wait. */
    c->fence_waiting = true;
    c->fence_req = req;
    c->fence_seq = seq;
    c->fence_start_ns = now;
    c->fence_deadline_ns =
        wait_ms == TC_BS_WAIT_FOREVER ? UINT64_MAX : now + (uint64_t)wait_ms * BS_NS_PER_MS;
    bs_fence_check_complete(st, seq);
    if (c->fence_waiting && st->left_min_arrived < seq)
        bs_fence_fail_doomed(st);
    return TC_OK;
}

void tc_bs_rank_left(tc_boot_store_t *st, int rank, const char *how)
{
    st->rank_state[rank] = BS_RANK_LEFT;
    if (st->arrived[rank] < st->left_min_arrived) {
        st->left_min_arrived = st->arrived[rank];
        st->left_min_rank = rank;
    }
    tc_log_debug(TC_SUBSYS_RUNTIME, "bootstrap store: rank %d %s after fence %llu", rank, how,
                 (unsigned long long)st->arrived[rank]);
    bs_fence_fail_doomed(st);
}

/* ---- requests ---- */

static tc_status_t bs_on_put(tc_boot_store_t *st, bs_conn_t *c)
{
    tc_bs_put_t put;
    tc_status_t rc = tc_boot_store_put_parse(c->body, c->body_len, &put);
    if (rc != TC_OK)
        return rc;
    return bs_store(st, (uint32_t)c->rank, put.key, put.klen, put.val, put.vlen);
}

static tc_status_t bs_on_get(tc_boot_store_t *st, bs_conn_t *c)
{
    tc_bs_get_t g;
    tc_status_t rc = tc_boot_store_get_parse(c->body, c->body_len, &g);
    if (rc != TC_OK)
        return rc;
    uint64_t req = g.req;
    uint32_t rank = g.rank;
    const uint8_t *key = g.key;
    uint16_t klen = g.klen;
    if (rank >= (uint32_t)st->world) {
        tc_bs_reply_text(st, c, req, TC_ERR_INVALID_ARG, "get of rank %u of %d", rank, st->world);
        return TC_OK;
    }
    bs_entry_t *e = bs_find(st, rank, key, klen);
    if (!e)
        tc_bs_reply_text(st, c, req, TC_ERR_NOT_FOUND,
                         "rank %u has no key '%.*s' in the store "
                         "(never put, or not fenced yet)",
                         rank, (int)klen, (const char *)key);
    else
        tc_bs_reply(st, c, req, TC_OK, e->data + e->klen, e->vlen);
    return TC_OK;
}

/* A notice for every other rank. Only what a rank may say is accepted: it
 * revokes its own communicators, and reports others (not itself) failed. */
static tc_status_t bs_on_notify(tc_boot_store_t *st, bs_conn_t *c)
{
    tc_bs_notice_t n;
    tc_status_t rc = tc_boot_store_notify_parse(c->body, c->body_len, (uint32_t)st->world,
                                                (uint32_t)c->rank, &n);
    if (rc != TC_OK)
        return rc;
    uint32_t kind = n.kind, rank = n.rank, comm_id = n.comm_id;
    tc_log_debug(TC_SUBSYS_RUNTIME, "bootstrap store: rank %d notifies %s of rank %u (comm %u)",
                 c->rank, kind == TC_BOOT_EV_REVOKE ? "a revoke" : "the failure", rank, comm_id);
    for (size_t i = 0; i < st->nconns; i++) {
        bs_conn_t *o = st->conns[i];
        if (kind == TC_BOOT_EV_PROC_FAILED && o->rank == (int)rank)
            o->reported_failed = true; /* rank 0, leaving, does not wait for its goodbye */
        if (o != c && o->rank >= 0 && !o->said_bye && !o->dead && !o->closing)
            bs_event(st, o, kind, rank, comm_id, (uint32_t)c->rank);
    }
    return TC_OK;
}

tc_status_t tc_bs_on_frame(tc_boot_store_t *st, bs_conn_t *c)
{
    tc_wire_reader_t r;
    tc_wire_reader_init(&r, c->body, c->body_len);
    if (c->rank < 0 && c->type != TC_BS_HELLO && c->type != TC_BS_PROOF)
        return tc_error_set(TC_ERR_PROTOCOL, "frame of type %u before the hello", c->type);
    if (c->rank >= 0 && c->type == TC_BS_PROOF)
        return tc_error_set(TC_ERR_PROTOCOL, "PROOF after joining");
    if (c->said_bye)
        return tc_error_set(TC_ERR_PROTOCOL, "frame of type %u after the goodbye", c->type);
    switch (c->type) {
    case TC_BS_HELLO:
        if (c->rank >= 0 || c->auth != BS_AUTH_HELLO)
            return tc_error_set(TC_ERR_PROTOCOL, "second HELLO");
        return tc_bs_on_hello(st, c, &r);
    case TC_BS_PROOF:
        return tc_bs_on_proof(st, c, &r);
    case TC_BS_PUT:
        return bs_on_put(st, c);
    case TC_BS_FENCE:
        return bs_on_fence(st, c);
    case TC_BS_GET:
        return bs_on_get(st, c);
    case TC_BS_NOTIFY:
        return bs_on_notify(st, c);
    case TC_BS_BYE:
        if (c->body_len != 0)
            return tc_error_set(TC_ERR_PROTOCOL, "BYE with a body of %u bytes", c->body_len);
        c->said_bye = true;
        c->fence_waiting = false;
        tc_bs_rank_left(st, c->rank, "said goodbye");
        return TC_OK;
    default:
        return tc_error_set(TC_ERR_PROTOCOL, "frame of type %u from a client", c->type);
    }
}

/* ---- connections ---- */
