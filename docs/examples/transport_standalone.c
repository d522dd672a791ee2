/* Standalone use of the tcomms transport layer: no runtime, no bootstrap service.
 *
 *   transport_standalone RANK DIR      (RANK is 0 or 1; run both, sharing DIR)
 *
 * Each process creates a TCP transport context, registers a buffer, and writes
 * its address and remote-key blobs to DIR/RANK.blob (written to a temporary
 * name, then renamed, so the peer never reads half a file). It reads the
 * peer's file, connects, and then:
 *   1. rank 0 puts a message into rank 1's buffer and signals (ADD 1) after it;
 *      rank 1 waits for the signal word and checks the message;
 *   2. rank 1 gets rank 0's buffer and checks it;
 *   3. a tagged send/recv in both directions.
 * Exit status 0 means every check passed. Only //transport and //base are used. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

#define BUF_LEN 4096
#define SIGNAL_OFF 4088 /* the last 8 bytes of the buffer are the signal word */
#define WAIT_MS 20000

static int fail(const char *what, tc_status_t st)
{
    fprintf(stderr, "transport_standalone: %s: %s: %s\n", what, tc_status_string(st),
            tc_last_error());
    return 1;
}

/* Progress until @p req completes (bounded). */
static tc_status_t wait_req(tc_tp_ctx_t *ctx, tc_tp_req_t *req)
{
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    while (req->status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        if (tc_tp_progress(ctx) == 0)
            tc_tp_wait(ctx, 1);
    return req->status == TC_INPROGRESS ? TC_ERR_TIMEOUT : req->status;
}

/* Blob file: u32 address length, address, u32 key length, key (host order: same machine). */
static int write_blob(const char *dir, int rank, const void *addr, uint32_t alen, const void *key,
                      uint32_t klen)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof(tmp), "%s/%d.blob.tmp", dir, rank);
    snprintf(path, sizeof(path), "%s/%d.blob", dir, rank);
    FILE *f = fopen(tmp, "wb");
    if (f == NULL)
        return -1;
    int ok = fwrite(&alen, 4, 1, f) == 1 && fwrite(addr, alen, 1, f) == 1 &&
             fwrite(&klen, 4, 1, f) == 1 && fwrite(key, klen, 1, f) == 1;
    if (fclose(f) != 0 || !ok)
        return -1;
    return rename(tmp, path);
}

static int read_blob(const char *dir, int rank, unsigned char *addr, uint32_t *alen,
                     unsigned char *key, uint32_t *klen)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%d.blob", dir, rank);
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    FILE *f;
    while ((f = fopen(path, "rb")) == NULL && !tc_deadline_passed(deadline))
        usleep(10000);
    if (f == NULL)
        return -1;
    int ok = fread(alen, 4, 1, f) == 1 && *alen <= 256 && fread(addr, *alen, 1, f) == 1 &&
             fread(klen, 4, 1, f) == 1 && *klen <= 256 && fread(key, *klen, 1, f) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "0") != 0 && strcmp(argv[1], "1") != 0)) {
        fprintf(stderr, "usage: %s RANK(0|1) DIR\n", argv[0]);
        return 2;
    }
    int rank = argv[1][0] - '0', peer = 1 - rank;
    const char *dir = argv[2];
    const char secret[] = "example-job-secret";

    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    params.self_id = (uint64_t)rank;
    params.secret = secret;
    params.secret_len = sizeof(secret) - 1;
    tc_tp_ctx_t *ctx = NULL;
    tc_status_t st = tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx);
    if (st != TC_OK)
        return fail("ctx_create", st);

    /* the buffer the peer may write and read; the signal word at its end */
    static _Alignas(64) unsigned char buf[BUF_LEN];
    for (int i = 0; i < BUF_LEN; i++)
        buf[i] = rank == 0 ? (unsigned char)(i * 7 + 1) : 0;
    memset(buf + SIGNAL_OFF, 0, 8);
    tc_tp_mem_t *mem = NULL;
    if ((st = tc_tp_mem_reg(ctx, buf, BUF_LEN, &mem)) != TC_OK)
        return fail("mem_reg", st);

    unsigned char addr[256], key[256], paddr[256], pkey[256];
    size_t alen = 0, klen = 0;
    uint32_t palen = 0, pklen = 0;
    if ((st = tc_tp_addr_pack(ctx, addr, sizeof(addr), &alen)) != TC_OK)
        return fail("addr_pack", st);
    if ((st = tc_tp_rkey_pack(mem, key, sizeof(key), &klen)) != TC_OK)
        return fail("rkey_pack", st);
    if (write_blob(dir, rank, addr, (uint32_t)alen, key, (uint32_t)klen) != 0 ||
        read_blob(dir, peer, paddr, &palen, pkey, &pklen) != 0) {
        fprintf(stderr, "transport_standalone: exchanging blobs in %s: %s\n", dir,
                strerror(errno));
        return 1;
    }

    tc_tp_ep_t *ep = NULL;
    if ((st = tc_tp_ep_connect(ctx, (uint64_t)peer, paddr, palen, &ep)) != TC_OK)
        return fail("ep_connect", st);
    tc_tp_rkey_t *rkey = NULL;
    if ((st = tc_tp_rkey_unpack(ep, pkey, pklen, &rkey)) != TC_OK)
        return fail("rkey_unpack", st);

    const char msg[] = "written by rank 0 with put";
    int errors = 0;
    if (rank == 0) {
        /* 1. put, then a signal that lands after it */
        tc_tp_req_t put = TC_TP_REQ_INIT, sig = TC_TP_REQ_INIT;
        if ((st = tc_tp_put(ep, msg, sizeof(msg), rkey, 100, &put)) != TC_OK ||
            (st = tc_tp_signal(ep, rkey, SIGNAL_OFF, TC_TP_SIGNAL_ADD, 1, &sig)) != TC_OK)
            return fail("put/signal", st);
        if ((st = wait_req(ctx, &put)) != TC_OK || (st = wait_req(ctx, &sig)) != TC_OK)
            return fail("put/signal completion", st);
    } else {
        /* 1. wait for the signal (the data moves inside progress), then check the data */
        uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
        while (tc_tp_signal_read(mem, SIGNAL_OFF) < 1 && !tc_deadline_passed(deadline))
            if (tc_tp_progress(ctx) == 0)
                tc_tp_wait(ctx, 1);
        if (tc_tp_signal_read(mem, SIGNAL_OFF) != 1 || memcmp(buf + 100, msg, sizeof(msg)) != 0) {
            fprintf(stderr, "rank 1: signal %llu, data '%.*s'\n",
                    (unsigned long long)tc_tp_signal_read(mem, SIGNAL_OFF), (int)sizeof(msg),
                    buf + 100);
            errors++;
        }
        /* 2. get rank 0's first 1000 bytes and check them */
        unsigned char got[1000];
        tc_tp_req_t get = TC_TP_REQ_INIT;
        if ((st = tc_tp_get(ep, got, sizeof(got), rkey, 0, &get)) != TC_OK ||
            (st = wait_req(ctx, &get)) != TC_OK)
            return fail("get", st);
        for (int i = 0; i < 1000; i++)
            errors += got[i] != (unsigned char)(i * 7 + 1);
    }

    /* 3. send/recv both ways; the receives also keep both sides alive until the end */
    char out[64], in[64] = "";
    snprintf(out, sizeof(out), "hello from rank %d", rank);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    if ((st = tc_tp_recv(ep, 42, in, sizeof(in), &r)) != TC_OK ||
        (st = tc_tp_send(ep, 42, out, strlen(out) + 1, &s)) != TC_OK)
        return fail("send/recv", st);
    if ((st = wait_req(ctx, &r)) != TC_OK || (st = wait_req(ctx, &s)) != TC_OK)
        return fail("send/recv completion", st);
    char want[64];
    snprintf(want, sizeof(want), "hello from rank %d", peer);
    errors += strcmp(in, want) != 0;

    /* a last exchange so that neither side closes while the other still needs it */
    tc_tp_req_t s2 = TC_TP_REQ_INIT, r2 = TC_TP_REQ_INIT;
    char b = 0;
    tc_tp_recv(ep, 43, &b, 1, &r2);
    tc_tp_send(ep, 43, "x", 1, &s2);
    if (wait_req(ctx, &r2) != TC_OK || wait_req(ctx, &s2) != TC_OK)
        errors++;

    printf("rank %d: %s (received '%s')\n", rank, errors ? "FAILED" : "ok", in);
    tc_tp_rkey_release(rkey);
    tc_tp_ep_close(ep);
    tc_tp_mem_dereg(mem);
    tc_tp_ctx_destroy(ctx);
    return errors ? 1 : 0;
}
