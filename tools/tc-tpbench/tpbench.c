/* tc-tpbench: ping-pong latency (half a round trip) and streaming bandwidth of a transport
 * backend between two forked processes that exchange their addresses through a pipe.
 *
 *   tc-tpbench [-t tcp|shm|...] [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WINDOW]
 *   tc-tpbench --memcpy [-e MAX]     single-core memcpy bandwidth, for reference
 *
 * Sizes accept K/M/G suffixes; defaults 1 B to 64 MiB by factors of 2. Output, one line per
 * size: "size lat_us bw_MBps" (MB = 1e6 bytes). A bad argument is named with its accepted
 * range, status 2 (usage()). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcomms/base/config.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/builtin.h"
#include "tcomms/transport/transport.h"

#define WAIT_MS 60000
#define MAX_FACTOR 1024
#define MAX_ITERS 1000000000
/* Streaming sends at least WINDOW messages of every size: 1024 of 64 MiB are 64 GiB already,
 * and bandwidth stops growing with the window long before. */
#define MAX_WINDOW 1024
#define MEMCPY_MIN 4096

static void die(const char *what, tc_status_t st)
{
    fprintf(stderr, "tc-tpbench: %s: %s: %s\n", what, tc_status_string(st), tc_last_error());
    exit(1);
}

/* Every backend of this build, by name (two processes: "self" does not apply). */
static const tc_tp_ops_t *backend(const char *name)
{
    tc_status_t st = tc_tp_register_builtin();
    if (st != TC_OK)
        die("tc_tp_register_builtin", st);
    const tc_tp_ops_t *ops = tc_tp_lookup(name);
    if (ops == NULL)
        fprintf(stderr, "tc-tpbench: -t %s: %s\n", name, tc_last_error());
    return ops;
}


static void wait_req(tc_tp_ctx_t *ctx, tc_tp_req_t *req)
{
    /* The clock is read only after 256 passes, and then every 256: a read per
     * wait would be a good part of the small-message latency measured. */
    uint64_t deadline = 0;
    for (unsigned pass = 1; req->status == TC_INPROGRESS; pass++) {
        tc_tp_progress(ctx);
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause(); /* less contention on the ring line the peer writes */
#endif
        if (pass % 256 != 0)
            continue;
        if (deadline == 0)
            deadline = tc_deadline_after_ms(WAIT_MS);
        else if (tc_deadline_passed(deadline))
            die("wait", TC_ERR_TIMEOUT);
    }
    if (req->status != TC_OK)
        die("request", req->status);
}

static size_t iters_for(size_t size, size_t n)
{
    size_t budget = (size_t)256 << 20; /* bytes per measurement, roughly */
    size_t k = size ? budget / size : n;
    return k < 3 ? 3 : k > n ? n : k;
}

/* One side of the benchmark. */
static void run(int rank, int rfd, int wfd, const tc_tp_ops_t *ops, size_t min, size_t max,
                size_t factor, size_t n, int window)
{
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    p.self_id = (uint64_t)rank;
    tc_tp_ctx_t *ctx;
    tc_status_t st = tc_tp_ctx_create(ops, &p, &ctx);
    if (st != TC_OK)
        die("ctx_create", st);
    unsigned char addr[256], paddr[256];
    size_t alen;
    uint32_t plen = 0, len32;
    if ((st = tc_tp_addr_pack(ctx, addr, sizeof(addr), &alen)) != TC_OK)
        die("addr_pack", st);
    len32 = (uint32_t)alen;
    if (write(wfd, &len32, 4) != 4 || write(wfd, addr, alen) != (ssize_t)alen ||
        read(rfd, &plen, 4) != 4 || plen > sizeof(paddr) ||
        read(rfd, paddr, plen) != (ssize_t)plen) {
        fprintf(stderr, "tc-tpbench: address exchange through the pipe failed\n");
        exit(1);
    }
    tc_tp_ep_t *ep;
    if ((st = tc_tp_ep_connect(ctx, (uint64_t)(1 - rank), paddr, plen, &ep)) != TC_OK)
        die("ep_connect", st);
    unsigned char *buf = malloc(max ? max : 1);
    tc_tp_req_t *reqs = calloc((size_t)window, sizeof(*reqs));
    if (buf == NULL || reqs == NULL)
        die("malloc", TC_ERR_NO_MEMORY);
    memset(buf, rank + 1, max);
    if (rank == 0)
        printf("# backend %s, %d processes on this node; lat = half round trip, bw streaming "
               "with %d messages in flight\n# %10s %10s %10s\n",
               ops->name, 2, window, "size", "lat_us", "bw_MBps");
    for (size_t size = min;; size = size * factor > size ? size * factor : size + 1) {
        if (size > max)
            break;
        size_t it = iters_for(size, n);
        /* ping-pong; the first round trip is warm-up */
        double lat = 0;
        uint64_t lat_t0 = 0;
        for (size_t i = 0; i <= it; i++) {
            if (i == 1)
                lat_t0 = tc_time_ns(); /* timed as a whole after one warm-up, as the MPI peer */
            tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
            if (rank == 0) {
                tc_tp_send(ep, 1, buf, size, &s);
                tc_tp_recv(ep, 2, buf, size, &r);
            } else {
                tc_tp_recv(ep, 1, buf, size, &r);
                wait_req(ctx, &r);
                tc_tp_send(ep, 2, buf, size, &s);
            }
            wait_req(ctx, &r);
            wait_req(ctx, &s);
        }
        if (it > 0)
            lat = (double)(tc_time_ns() - lat_t0);
        /* streaming: rank 0 sends `it` messages with `window` in flight, rank 1 acks the end */
        size_t sit = it < (size_t)window ? (size_t)window : it;
        uint64_t t0 = tc_time_ns();
        for (size_t i = 0; i < sit; i += (size_t)window) {
            int w = (int)(sit - i < (size_t)window ? sit - i : (size_t)window);
            for (int k = 0; k < w; k++) {
                reqs[k] = (tc_tp_req_t)TC_TP_REQ_INIT;
                if (rank == 0)
                    tc_tp_send(ep, 3, buf, size, &reqs[k]);
                else
                    tc_tp_recv(ep, 3, buf, size, &reqs[k]);
            }
            for (int k = 0; k < w; k++)
                wait_req(ctx, &reqs[k]);
        }
        tc_tp_req_t a = TC_TP_REQ_INIT;
        char ack = 0;
        if (rank == 0)
            tc_tp_recv(ep, 4, &ack, 1, &a);
        else
            tc_tp_send(ep, 4, &ack, 1, &a);
        wait_req(ctx, &a);
        double secs = (double)(tc_time_ns() - t0) / 1e9;
        if (rank == 0)
            printf("  %10zu %10.2f %10.1f\n", size, lat / (double)it / 2 / 1e3,
                   (double)size * (double)sit / secs / 1e6);
        fflush(stdout);
        if (size == max)
            break;
    }
    free(reqs);
    free(buf);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

static void memcpy_bench(size_t max)
{
    unsigned char *a = malloc(max), *b = malloc(max);
    if (a == NULL || b == NULL)
        die("malloc", TC_ERR_NO_MEMORY);
    memset(a, 1, max);
    memset(b, 2, max);
    printf("# single-core memcpy\n# %10s %10s\n", "size", "bw_MBps");
    for (size_t size = MEMCPY_MIN; size <= max; size *= 4) {
        size_t it = iters_for(size, 100000);
        memcpy(b, a, size);
        uint64_t t0 = tc_time_ns();
        for (size_t i = 0; i < it; i++) {
            memcpy(b, a, size);
            __asm__ volatile("" ::"r"(b) : "memory");
        }
        double secs = (double)(tc_time_ns() - t0) / 1e9;
        printf("  %10zu %10.1f\n", size, (double)size * (double)it / secs / 1e6);
    }
    free(a);
    free(b);
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: tc-tpbench [-t tcp|shm|...] [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WINDOW]\n"
        "       tc-tpbench --memcpy [-e MAX]\n"
        "  -t  the transport backend (default tcp)\n"
        "  -b, -e  smallest and largest message, bytes with K/M/G suffixes, 1 <= MIN <= MAX\n"
        "      (default 1 and 64M)\n"
        "  -f  factor between sizes, 2 to %d (default 2)\n"
        "  -n  round trips per size at most (about 256 MiB per size), 1 to %d\n"
        "      (default 1000)\n"
        "  -w  messages in flight when streaming, 1 to %d (default 16)\n"
        "  --memcpy  memcpy bandwidth from %d bytes to MAX (at least %d) by factors of 4\n",
        MAX_FACTOR, MAX_ITERS, MAX_WINDOW, MEMCPY_MIN, MEMCPY_MIN);
}

typedef struct opts {
    const char *name;
    size_t min, max, factor, n;
    int window, do_memcpy;
} opts_t;

/* The options into @p o; 0, or the exit status after saying what is wrong. */
static int parse(int argc, char **argv, opts_t *o)
{
    const char *other = NULL; /* an option --memcpy does not take */
    tc_status_t st;
    uint64_t size = 0;
    int64_t v = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--memcpy") == 0) {
            o->do_memcpy = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
        if (a[0] != '-' || strlen(a) != 2 || strchr("tbefnw", a[1]) == NULL) {
            fprintf(stderr,
                    a[0] != '-' ? "tc-tpbench: unexpected argument '%s'\n"
                                : "tc-tpbench: unknown option %s\n",
                    a);
            usage(stderr);
            return 2;
        }
        if (val == NULL) {
            fprintf(stderr, "tc-tpbench: %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        if (a[1] != 'e')
            other = a;
        st = TC_OK;
        switch (a[1]) {
        case 't':
            o->name = val;
            break;
        case 'b':
        case 'e':
            st = tc_parse_size(a, val, &size);
            if (a[1] == 'b')
                o->min = (size_t)size;
            else
                o->max = (size_t)size;
            break;
        case 'f':
            st = tc_parse_int(a, val, 2, MAX_FACTOR, &v);
            o->factor = (size_t)v;
            break;
        case 'n':
            st = tc_parse_int(a, val, 1, MAX_ITERS, &v);
            o->n = (size_t)v;
            break;
        default:
            st = tc_parse_int(a, val, 1, MAX_WINDOW, &v);
            o->window = (int)v;
            break;
        }
        if (st != TC_OK) {
            fprintf(stderr, "tc-tpbench: %s\n", tc_last_error());
            return 2;
        }
    }
    if (o->do_memcpy && other != NULL) {
        fprintf(stderr, "tc-tpbench: --memcpy takes -e only, not %s\n", other);
        return 2;
    }
    if (o->do_memcpy && o->max < MEMCPY_MIN) {
        fprintf(stderr, "tc-tpbench: --memcpy -e %zu: the memcpy table starts at %d bytes\n",
                o->max, MEMCPY_MIN);
        return 2;
    }
    if (!o->do_memcpy && o->min == 0) {
        fprintf(stderr, "tc-tpbench: -b 0: a message must be at least 1 byte\n");
        return 2;
    }
    if (!o->do_memcpy && o->min > o->max) {
        fprintf(stderr, "tc-tpbench: -b %zu is larger than -e %zu\n", o->min, o->max);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o = {
        .name = "tcp", .min = 1, .max = (size_t)64 << 20, .factor = 2, .n = 1000, .window = 16};
    int rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc;
    if (o.do_memcpy) {
        memcpy_bench(o.max);
        return 0;
    }
    const tc_tp_ops_t *ops = backend(o.name);
    if (ops == NULL)
        return 2;
    int p01[2], p10[2];
    if (pipe(p01) != 0 || pipe(p10) != 0) {
        perror("pipe");
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        run(1, p01[0], p10[1], ops, o.min, o.max, o.factor, o.n, o.window);
        _exit(0);
    }
    run(0, p10[0], p01[1], ops, o.min, o.max, o.factor, o.n, o.window);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
