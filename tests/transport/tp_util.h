/* Backend-neutral helpers for the transport tests: contexts of any backend, connected pairs,
 * bounded waits, patterns, guarded buffers, and fork()ed peers talking over pipes.
 * Backend-specific helpers live next to their tests (tcp_util.h, shm/shm_util.h). */
#ifndef TCOMMS_TESTS_TRANSPORT_TP_UTIL_H
#define TCOMMS_TESTS_TRANSPORT_TP_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/transport.h"

/* The default bound of a wait in these tests. */
#define TP_WAIT_MS 30000
/* Bound on the packed address of every backend tested here. */
#define TP_ADDR_MAX 64

/* Functions marked "no cmocka" may run in forked children and worker threads: a failed
 * assertion there would run the rest of the suite in the child, or longjmp across threads. */

/* Create a context of @p ops with id @p id, @p secret (NULL: none) and hints "k=v,..."
 * (NULL: none); returns the status (and *ctx_p on success). No cmocka. */
tc_status_t tc_tpt_ctx_try(const tc_tp_ops_t *ops, uint64_t id, const char *secret,
                           const char *hints, tc_tp_ctx_t **ctx_p);
/* The same, asserting success. */
tc_tp_ctx_t *tc_tpt_ctx_new(const tc_tp_ops_t *ops, uint64_t id, const char *secret,
                            const char *hints);

/* Pack @p ctx's address into @p addr; asserts success and returns its length. */
size_t tc_tpt_addr(tc_tp_ctx_t *ctx, unsigned char addr[TP_ADDR_MAX]);

/* Two contexts, ids 0 and 1, each with an endpoint to the other. */
typedef struct tp_pair {
    tc_tp_ctx_t *ctx[2];
    tc_tp_ep_t *ep[2]; /* ep[i] belongs to ctx[i] and leads to the other */
} tp_pair_t;

/* Connect pair->ctx[i] to id 1 - i at @p addr[1 - i] (of @p len[1 - i] bytes), both ways. */
void tc_tpt_pair_connect(tp_pair_t *pair, unsigned char addr[2][TP_ADDR_MAX], const size_t len[2]);
/* Create both contexts of @p ops with the same @p secret and @p hints, and connect them. */
void tc_tpt_pair_open(tp_pair_t *pair, const tc_tp_ops_t *ops, const char *secret,
                      const char *hints);
/* Bring the pair up: a zero-byte message each way (tag 999), each within @p timeout_ms. */
void tc_tpt_pair_up(tp_pair_t *pair, int timeout_ms);
void tc_tpt_pair_close(tp_pair_t *pair);

/* Progress @p n contexts until @p req completes or @p timeout_ms passes; returns req->status. */
tc_status_t tc_tpt_wait_req(tc_tp_ctx_t *const *ctxs, int n, tc_tp_req_t *req, int timeout_ms);
/* The same for an endpoint failure: until ep->failed != TC_OK. */
tc_status_t tc_tpt_wait_failed(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *ep, int timeout_ms);
/* Progress for @p ms milliseconds. */
void tc_tpt_spin(tc_tp_ctx_t *const *ctxs, int n, int ms);
/* Progress one context until @p req completes or @p timeout_ms passes, sleeping up to
 * @p idle_ms in tc_tp_wait() when nothing progressed; returns req->status. No cmocka. */
tc_status_t tc_tpt_wait_bare(tc_tp_ctx_t *ctx, tc_tp_req_t *req, int timeout_ms, int idle_ms);

/* The byte at @p i of the pattern @p seed: an independent reference for contents. */
static inline unsigned char tc_tpt_pattern(uint64_t seed, size_t i)
{
    uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)((x >> 29) ^ (x >> 47) ^ i);
}
void tc_tpt_fill(unsigned char *buf, size_t len, uint64_t seed);
/* Index of the first byte not matching the pattern, or len. No cmocka. */
size_t tc_tpt_check(const unsigned char *buf, size_t len, uint64_t seed);

/* A buffer of @p cap bytes between two 64-byte guard zones of 0xA5. */
unsigned char *tc_tpt_guarded_alloc(size_t cap);
/* Assert that both guard zones are intact, then free the buffer. */
void tc_tpt_guarded_check_free(unsigned char *buf, size_t cap);

/* Send @p len bytes of @p src (pattern @p seed) from pair side @p from to the other side,
 * tag @p tag, into a guarded receive (posted first when @p recv_first, else after the send
 * completed, buffered as unexpected); asserts both complete whole within TP_WAIT_MS. */
void tc_tpt_transfer(tp_pair_t *p, int from, uint64_t tag, const unsigned char *src, size_t len,
                     uint64_t seed, int recv_first);
/* @p n messages each way at once, lengths @p len[i], on three tags: the first half of the
 * receives posted before any send in one tag order, the rest after @p spin_ms of progress in
 * another. Asserts FIFO per tag by contents (the k-th message of tag t from side d carries
 * pattern d * 100000 + t * 1000 + k), each within TP_WAIT_MS. */
void tc_tpt_many_in_flight(tp_pair_t *p, int n, const size_t *len, int spin_ms);

/* Cancel receive @p r on pair->ep[1] while send @p s fills it: the cancel works, @p s still
 * completes within @p timeout_ms, and in @p spin_ms more nothing lands in @p dst (@p len
 * bytes, checked every @p stride bytes). */
void tc_tpt_cancel_filling(tp_pair_t *p, tc_tp_req_t *r, tc_tp_req_t *s, unsigned char *dst,
                           size_t len, int timeout_ms, int spin_ms, size_t stride);

/* ---- fork()ed peers: pipes carry addresses and go-aheads ---- */

/* Write or read exactly @p len bytes (retrying on EINTR); 0, or -1 on error or EOF. */
int tc_tpt_write_all(int fd, const void *buf, size_t len);
int tc_tpt_read_all(int fd, void *buf, size_t len);
/* Fork a child that runs @p body(@p arg, in, out) and _exit()s with its result; it reads on
 * in what the parent writes on *out_p and writes on out what the parent reads on *in_p. An
 * alarm kills a child stuck for two minutes. Asserts (in the parent) that the fork worked. */
pid_t tc_tpt_fork(int (*body)(void *arg, int in, int out), void *arg, int *in_p, int *out_p);
/* Wait up to @p timeout_ms for @p pid to end: its waitpid() status, or -1 when it had to be
 * killed. No cmocka. */
int tc_tpt_reap(pid_t pid, int timeout_ms);
/* Write @p len bytes of address @p addr on @p out (a u64 length first) and read the peer's
 * into @p peer and *peer_len from @p in; 0 or -1. No cmocka. */
int tc_tpt_swap_addr(int in, int out, const unsigned char *addr, size_t len,
                     unsigned char peer[TP_ADDR_MAX], size_t *peer_len);
/* A context of @p ops (id @p self), addresses swapped over the pipes, an endpoint to id
 * @p peer; 0 and both outputs, or -1 (the reason on stderr). No cmocka. */
int tc_tpt_exchange(const tc_tp_ops_t *ops, uint64_t self, uint64_t peer, const char *secret,
                    const char *hints, int in, int out, tc_tp_ctx_t **ctx_p, tc_tp_ep_t **ep_p);

/* A checking sink consumer: out[off + k] = local[off + k] + data[k] (mod 256). It marks the
 * sink bad for a piece out of order, empty, off the unit, short before @p end (the bytes
 * the receive keeps: only the piece ending there may be short), or whose data is not
 * aligned to the unit (16 bytes at most: consumers read pieces as elements). */
typedef struct tc_tpt_sum_sink {
    const unsigned char *local;
    unsigned char *out;
    size_t unit;
    size_t next;    /* the offset the next piece must start at */
    size_t pieces;  /* calls */
    size_t fail_at; /* fail the call that starts at or past this offset (SIZE_MAX: never) */
    int bad;
    size_t end;
} tc_tpt_sum_sink_t;
tc_status_t tc_tpt_sum_fn(void *arg, size_t off, const void *data, size_t len);
/* out[0, n) must be local + the pattern of @p seed (tc_tpt_fill), byte by byte, and the 64
 * guard bytes 0xA5 past @p cap untouched; @p what names the case in a failure. */
void tc_tpt_check_sum(const unsigned char *out, const unsigned char *local, size_t n, size_t cap,
                      uint64_t seed, const char *what);
/* One message of @p len bytes ep[0] -> ep[1] into a checking sink of unit @p unit and capacity
 * @p cap (posted after the message arrived when @p unexpected): the statuses, bytes, the
 * pieces' order and the sums are checked. Returns the number of pieces the sink got. */
size_t tc_tpt_one_sum(tp_pair_t *p, size_t len, size_t cap, size_t unit, int unexpected,
                      uint64_t seed, int wait_ms);
/* @p n messages of @p len bytes ep[0] -> ep[1], tags 100.., all sent and arrived before any
 * receive is posted; then received in order, each checked byte by byte. */
void tc_tpt_unexpected_burst(tp_pair_t *p, int n, size_t len, uint64_t seed, int wait_ms);

/* tc_tp_discard() on pair->ep[1]: 6 messages of @p len bytes (tags 300..305) from ep[0], all
 * arrived whole and unexpected; dropping the even tags frees 3 (a second call none), their
 * receives then get nothing, the odd ones arrive intact, and all 6 sends complete (those of a
 * rendezvous or single-copy size too: the sender of a dropped announcement is released). */
void tc_tpt_discard_check(tp_pair_t *p, size_t len, int wait_ms);
/* tc_tp_probe() on pair->ep[1] for messages of @p len bytes from ep[0]: nothing found before a
 * send; once the first of two messages with one tag has arrived (whole or, for @p len beyond
 * a cell or a stripe, in part) it is found with its length, another tag is not; a receive
 * posted then takes that message (contents checked), after which the probe finds the second
 * message (@p len2 bytes), and nothing once both are received. */
void tc_tpt_probe_check(tp_pair_t *p, size_t len, size_t len2, uint64_t seed);
/* The same on one context of the self backend, whose endpoint leads to itself. */
void tc_tpt_probe_check_self(tc_tp_ctx_t *ctx, tc_tp_ep_t *ep);
/* A send (16 MiB, no receive yet) and a receive, each posted a second time while pending, are
 * refused (TC_ERR_INVALID_STATE naming peer and tag) and stay pending; then both complete
 * intact, and completed requests post again without TC_TP_REQ_INIT. @p from and @p to are
 * endpoints of @p ctxs (the same for self). */
void tc_tpt_repost_check(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *from, tc_tp_ep_t *to);

#endif
