/* Fuzz the heartbeat verdicts (runtime/include/tcomms/runtime/watch.h): the bytes a watch
 * neighbour sends to say that a rank failed, checked by tc_rt_verdict_valid() and then judged
 * by tc_rt_watch_judge() as runtime/src/verdict.c does.
 *
 * Input: u8 ranks - 1 (1..256), u8 the judging rank, u8 the accuser, u8 what the judging rank
 * knows (bit 0 accused known, 1 accuser failed, 2 accused watched, 3 heard lately), then the
 * received bytes (any length: a receive into the message's buffer reports how many came).
 *
 * Properties: the check accepts exactly the messages of the exact size, with the magic, a rank
 * in range and a NUL in the host field (an independent reading of those rules); an accepted
 * message's host is read only up to its NUL (ASan guards the copy's end); the judgement is one
 * of the enum's values and never ACCEPT for the judging rank itself, a known failure or a
 * failed accuser. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/runtime/watch.h"

static int expect_valid(const uint8_t *raw, size_t n, int size)
{
    if (n != sizeof(tc_rt_verdict_msg_t))
        return 0;
    uint32_t magic;
    int32_t rank;
    memcpy(&magic, raw + offsetof(tc_rt_verdict_msg_t, magic), 4);
    memcpy(&rank, raw + offsetof(tc_rt_verdict_msg_t, rank), 4);
    if (magic != TC_RT_VERDICT_MAGIC || rank < 0 || rank >= size)
        return 0;
    for (size_t i = 0; i < sizeof(((tc_rt_verdict_msg_t *)0)->host); i++)
        if (raw[offsetof(tc_rt_verdict_msg_t, host) + i] == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    int n = data[0] + 1, self = data[1] % n, accuser = data[2] % n, knows = data[3];
    const uint8_t *raw = data + 4;
    size_t bytes = size - 4;

    /* The receiver's buffer holds one message; a longer arrival is cut to it but reports
     * its full length, as a transport receive that truncates does. */
    tc_rt_verdict_msg_t *m = malloc(sizeof(*m));
    if (!m)
        return 0;
    memset(m, 0, sizeof(*m));
    memcpy(m, raw, bytes < sizeof(*m) ? bytes : sizeof(*m));
    int valid = tc_rt_verdict_valid(m, bytes, n);
    if (valid != expect_valid(raw, bytes, n))
        abort();
    if (!valid) {
        free(m);
        return 0;
    }
    char why[160];
    snprintf(why, sizeof(why), "rank %d, pid %d, host %s", m->rank, m->pid, m->host);
    if (strlen(m->host) >= sizeof(m->host))
        abort();

    tc_rt_watch_case_t c = {
        .size = n,
        .self = self,
        .accused = m->rank,
        .accuser = accuser,
        .silent = m->silent != 0,
        .accused_known = knows & 1,
        .accuser_failed = knows >> 1 & 1,
        .accused_watched = knows >> 2 & 1,
        .heard_ago_ns = (knows >> 3 & 1) ? 1000 : 10000000,
        .period_ns = 250000,
    };
    tc_rt_watch_judgement_t j = tc_rt_watch_judge(&c);
    if (j < TC_RT_WATCH_ACCEPT || j > TC_RT_WATCH_BAD || j == TC_RT_WATCH_BAD)
        abort(); /* a valid message names a rank in range */
    if (j == TC_RT_WATCH_ACCEPT && (c.accused == self || c.accused_known || c.accuser_failed))
        abort();
    free(m);
    return 0;
}
