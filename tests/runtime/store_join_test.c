/*
 * The client's side of joining the store (bootstrap_env.c, through tc_boot_env_join_fd) against
 * a fake store on a socketpair whose frames are written out here byte by byte:
 * - a store that answers the HELLO with "OK" and no CHALLENGE is not joined (it proved nothing:
 *   found by tests/fuzz/runtime:store_auth_fuzz, input in
 *   tests/fuzz/regressions/store_auth_fuzz/);
 * - a CHALLENGE whose MAC is wrong gets no PROOF;
 * - a refusal without a challenge (another version) is reported with the store's text;
 * - an EVENT before the store's verdict ends the join (the store sends events to joined ranks);
 * - a refusal's text reaches the error with its control bytes replaced.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/src/boot_store.h"
#include "tcomms/base/log.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"

static size_t le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return (size_t)n;
}

static size_t frame(uint8_t *out, uint8_t type, const uint8_t *body, uint32_t len)
{
    le(out, len, 4);
    out[4] = type;
    out[5] = out[6] = out[7] = 0;
    memcpy(out + 8, body, len);
    return 8 + (size_t)len;
}

/* Join as rank 1 of 2 over a socketpair pre-filled with @p in; the bytes the client sent go to
 * @p out (their count in *nout). */
static tc_status_t join(const uint8_t *in, size_t nin, const char *secret, uint8_t *out,
                        size_t cap, size_t *nout)
{
    int sv[2];
    tc_boot_t *boot = NULL;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    assert_int_equal(send(sv[1], in, nin, 0), (ssize_t)nin);
    shutdown(sv[1], SHUT_WR);
    tc_status_t rc = tc_boot_env_join_fd(sv[0], 1, 2, secret, secret ? strlen(secret) : 0,
                                         tc_deadline_after_ms(5000), &boot);
    if (rc == TC_OK)
        tc_boot_destroy(boot);
    *nout = 0;
    ssize_t r;
    while (*nout < cap && (r = recv(sv[1], out + *nout, cap - *nout, 0)) > 0)
        *nout += (size_t)r;
    close(sv[1]);
    return rc;
}

static void test_ok_without_challenge(void **state)
{
    (void)state;
    uint8_t in[64], body[16], out[512];
    size_t nout;
    le(body, 0, 8); /* request 0: the hello's */
    le(body + 8, 0, 4); /* TC_OK */
    le(body + 12, 0, 4);
    size_t nin = frame(in, TC_BS_REPLY, body, 16);
    tc_status_t rc = join(in, nin, NULL, out, sizeof(out), &nout);
    assert_int_equal(rc, TC_ERR_PROTOCOL);
    assert_non_null(strstr(tc_last_error(), "accepted the hello without a challenge"));
    /* the HELLO went out, nothing after it */
    assert_int_equal(nout, TC_BS_HDR_LEN + TC_BS_HELLO_LEN);
    assert_int_equal(out[4], TC_BS_HELLO);
    /* the same with a secret */
    rc = join(in, nin, "a-secret", out, sizeof(out), &nout);
    assert_int_equal(rc, TC_ERR_PROTOCOL);
    assert_int_equal(nout, TC_BS_HDR_LEN + TC_BS_HELLO_LEN);
}

static void test_wrong_challenge(void **state)
{
    (void)state;
    uint8_t in[256], body[TC_BS_CHALLENGE_LEN], reply[16], out[512];
    size_t nout, nin;
    body[0] = 1;
    memset(body + 1, 0x11, TC_BS_NONCE_LEN);
    memset(body + 1 + TC_BS_NONCE_LEN, 0x22, TC_BS_MAC_LEN); /* not the MAC */
    nin = frame(in, TC_BS_CHALLENGE, body, sizeof(body));
    le(reply, 0, 8);
    le(reply + 8, 0, 4);
    le(reply + 12, 0, 4);
    nin += frame(in + nin, TC_BS_REPLY, reply, 16);
    tc_status_t rc = join(in, nin, "a-secret", out, sizeof(out), &nout);
    assert_int_equal(rc, TC_ERR_BOOTSTRAP);
    assert_non_null(strstr(tc_last_error(), "does not prove it holds"));
    assert_int_equal(nout, TC_BS_HDR_LEN + TC_BS_HELLO_LEN); /* no PROOF */
}

static void test_refusal_without_challenge(void **state)
{
    (void)state;
    uint8_t in[128], body[64], out[512];
    const char *text = "protocol version 3, the store speaks 4";
    size_t nout, tlen = strlen(text);
    le(body, 0, 8);
    le(body + 8, (uint32_t)(int32_t)TC_ERR_BOOTSTRAP, 4);
    le(body + 12, tlen, 4);
    memcpy(body + 16, text, tlen);
    size_t nin = frame(in, TC_BS_REPLY, body, (uint32_t)(16 + tlen));
    tc_status_t rc = join(in, nin, NULL, out, sizeof(out), &nout);
    assert_int_equal(rc, TC_ERR_BOOTSTRAP);
    assert_non_null(strstr(tc_last_error(), text));
}

/* A refusal's text, from a store that proved nothing, goes into this rank's error with its
 * control bytes replaced (it went in verbatim: a terminal escape or a line of its own in the
 * application's log). */
static void test_refusal_text_printable(void **state)
{
    (void)state;
    uint8_t in[128], body[64], out[512];
    const char text[] = "go away\n\x1b[2Jnow\x7f";
    size_t nout, tlen = sizeof(text) - 1;
    le(body, 0, 8);
    le(body + 8, (uint32_t)(int32_t)TC_ERR_BOOTSTRAP, 4);
    le(body + 12, tlen, 4);
    memcpy(body + 16, text, tlen);
    size_t nin = frame(in, TC_BS_REPLY, body, (uint32_t)(16 + tlen));
    assert_int_equal(join(in, nin, NULL, out, sizeof(out), &nout), TC_ERR_BOOTSTRAP);
    assert_non_null(strstr(tc_last_error(), "refused rank 1: go away??[2Jnow?"));
}

/* An EVENT before the store's verdict: a failure notice from a peer that proved nothing. It was
 * queued, and the refusal after it (TC_ERR_INVALID_STATE, "a lingering store") made the client
 * retry and join the real store with the notice still waiting to be delivered. */
static void test_event_before_join(void **state)
{
    (void)state;
    uint8_t in[128], ev[TC_BS_EVENT_LEN], reply[16], out[512];
    size_t nout;
    le(ev, TC_BOOT_EV_PROC_FAILED, 4);
    le(ev + 4, 0, 4); /* rank 0 failed, */
    le(ev + 8, 0, 4);
    le(ev + 12, 0, 4); /* says rank 0 */
    size_t nin = frame(in, TC_BS_EVENT, ev, sizeof(ev));
    le(reply, 0, 8);
    le(reply + 8, (uint32_t)(int32_t)TC_ERR_INVALID_STATE, 4);
    le(reply + 12, 0, 4);
    nin += frame(in + nin, TC_BS_REPLY, reply, 16);
    for (int keyed = 0; keyed < 2; keyed++) {
        tc_status_t rc = join(in, nin, keyed ? "a-secret" : NULL, out, sizeof(out), &nout);
        assert_int_equal(rc, TC_ERR_PROTOCOL);
        assert_non_null(strstr(tc_last_error(), "sent an EVENT before it let this rank in"));
        assert_int_equal(nout, TC_BS_HDR_LEN + TC_BS_HELLO_LEN); /* the HELLO, nothing after */
    }
}

int main(void)
{
    tc_log_configure("none");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok_without_challenge),      cmocka_unit_test(test_wrong_challenge),
        cmocka_unit_test(test_refusal_without_challenge), cmocka_unit_test(test_event_before_join),
        cmocka_unit_test(test_refusal_text_printable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
