/* Messages that arrived before their receive (the endpoint's unexpected queue,
 * filled by ib_data.c): the probe, and the discard of those no receive will
 * take. An eager message is whole when queued; a rendezvous announcement
 * (rts) is whole too, its data still at the sender, which waits for our FIN. */
#include <stdlib.h>

#include "ib_internal.h"

int tc_ib_probe(tc_tp_ep_t *super, uint64_t tag, uint64_t *len_p)
{
    const tc_ib_ep_t *ep = (const tc_ib_ep_t *)super;
    for (const tc_ib_unexp_t *u = ep->uq_head; u != NULL; u = u->next)
        if (u->tag == tag) {
            *len_p = u->len;
            return 1;
        }
    return 0;
}

int tc_ib_discard(tc_tp_ep_t *super, int (*drop)(void *arg, uint64_t tag), void *arg)
{
    tc_ib_ep_t *ep = (tc_ib_ep_t *)super;
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super->ctx;
    int n = 0;
    tc_ib_unexp_t **pp = &ep->uq_head, *last = NULL;
    while (*pp != NULL) {
        tc_ib_unexp_t *u = *pp;
        if (!drop(arg, u->tag)) {
            last = u;
            pp = &u->next;
            continue;
        }
        *pp = u->next;
        n++;
        /* an announcement's sender is told it is done, as an eager send is once its bytes are
         * out: nothing will read its buffer */
        int fin = u->rts && super->failed == TC_OK && ep->state == TC_IB_EP_UP;
        uint64_t cookie = u->cookie;
        free(u);
        if (fin) {
            tc_ib_post_fin(ctx, ep, cookie);
            if (ep->state != TC_IB_EP_UP)
                return n; /* failing the endpoint freed the announcements and set the tail */
        }
    }
    ep->uq_tail = last;
    return n;
}
