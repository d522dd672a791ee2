/* bad_input_test's rows (bad_input.h): every public call x every class of bad argument. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/api/bad_input.h"

const char *const fn_names[F_NFN] = {"tc_all_reduce",
                                     "tc_reduce",
                                     "tc_broadcast",
                                     "tc_all_gather",
                                     "tc_all_gather_v",
                                     "tc_reduce_scatter",
                                     "tc_reduce_scatter_v",
                                     "tc_all_to_all",
                                     "tc_all_to_all_v",
                                     "tc_gather",
                                     "tc_scatter",
                                     "tc_barrier",
                                     "tc_send",
                                     "tc_recv",
                                     "tc_all_gather_init",
                                     "tc_comm_destroy",
                                     "tc_comm_rank",
                                     "tc_comm_size",
                                     "tc_comm_name",
                                     "tc_comm_info",
                                     "tc_comm_split",
                                     "tc_comm_split_ranks",
                                     "tc_comm_dup",
                                     "tc_comm_abort",
                                     "tc_comm_revoke",
                                     "tc_comm_shrink",
                                     "tc_comm_failed_ranks",
                                     "tc_comm_stats",
                                     "tc_comm_add_hook",
                                     "tc_comm_dump_fr",
                                     "tc_batch_begin",
                                     "tc_batch_end"};

row_t rows[MAX_ROWS];
int nrows;

row_t base(fn_t fn)
{
    row_t r = {fn, C_LIVE, B_A, B_B, O_NULL, 0, V_OK, 0, 0, 4, TC_INT32, TC_SUM, TC_OK, ""};
    if (fn == F_ALL_GATHER_INIT)
        r.wp = 1;
    if (fn == F_ALL_TO_ALL_V) /* never in place; blocks of 4 */
        r.rbuf = B_B;
    return r;
}

void add(row_t r, tc_status_t want, const char *fmt, ...)
{
    assert_true(nrows < MAX_ROWS);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.needle, sizeof(r.needle), fmt, ap);
    va_end(ap);
    r.want = want;
    rows[nrows++] = r;
}

/* ---- the rows ---- */

static int rooted(fn_t f)
{
    return f == F_REDUCE || f == F_BROADCAST || f == F_GATHER || f == F_SCATTER;
}
static int reduces(fn_t f)
{
    return f == F_ALL_REDUCE || f == F_REDUCE || f == F_REDUCE_SCATTER || f == F_REDUCE_SCATTER_V;
}
static int p2p(fn_t f)
{
    return f == F_SEND || f == F_RECV;
}
static int has_count(fn_t f)
{
    return f != F_BARRIER && f != F_REDUCE_SCATTER_V && f != F_ALL_TO_ALL_V;
}
static int has_recvbuf(fn_t f)
{
    return f != F_BARRIER && f != F_BROADCAST && !p2p(f);
}

/* Handles and states, for every function that takes a communicator. */
void rows_handles(void)
{
    for (int f = 0; f < F_NFN; f++) {
        const char *fn = fn_names[f];
        row_t r = base((fn_t)f);
        if (f == F_DESTROY) { /* NULL is allowed: nothing happens */
            add(r, TC_OK, "");
            rows[nrows - 1].comm = C_NULL;
        } else {
            r.comm = C_NULL;
            add(r, TC_ERR_INVALID_ARG, "%s: comm is NULL", fn);
        }
        r = base((fn_t)f);
        r.comm = C_STALE;
        add(r, TC_ERR_INVALID_STATE, "%s: comm %p was destroyed", fn, (void *)fx.stale);
        r.comm = C_GARBAGE;
        add(r, TC_ERR_INVALID_STATE, "%s: comm %p is not a communicator handle", fn,
            (void *)&fx.garbage);
        r.comm = C_WORKH;
        add(r, TC_ERR_INVALID_STATE, "%s: comm %p is a work handle, not a communicator", fn,
            (void *)fx.work);
    }
    /* operations on an aborted or revoked communicator: refused, saying why */
    for (int f = 0; f < F_NCOLL; f++) {
        row_t r = base((fn_t)f);
        r.comm = C_ABORTED;
        add(r, TC_ERR_ABORTED, "was aborted");
        r.comm = C_REVOKED;
        add(r, TC_ERR_REVOKED, "was revoked");
    }
    static const fn_t more[] = {F_SPLIT, F_SPLIT_RANKS, F_DUP};
    for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
        row_t r = base(more[i]);
        r.count = 1;
        r.comm = C_ABORTED;
        add(r, TC_ERR_ABORTED, "was aborted");
        r.comm = C_REVOKED;
        add(r, TC_ERR_REVOKED, "was revoked");
    }
    /* inside a batch only send and recv (without opts and work_p) */
    for (int f = 0; f < F_NFN; f++) {
        row_t r = base((fn_t)f);
        r.comm = C_BATCH;
        r.count = f == F_SPLIT_RANKS ? 1 : r.count;
        if (f < F_NCOLL && !p2p((fn_t)f))
            add(r, TC_ERR_INVALID_STATE, "%s: comm 'world' is recording a batch", fn_names[f]);
        else if (f == F_SPLIT || f == F_SPLIT_RANKS || f == F_DUP || f == F_BATCH_BEGIN)
            add(r, TC_ERR_INVALID_STATE, "%s: comm 'world' is recording a batch", fn_names[f]);
        else if (p2p((fn_t)f)) {
            r.opts = O_DEF;
            add(r, TC_ERR_INVALID_ARG, "%s: inside a batch, opts and work_p must be NULL",
                fn_names[f]);
            r.opts = O_NULL;
            r.wp = 1;
            add(r, TC_ERR_INVALID_ARG, "%s: inside a batch, opts and work_p must be NULL",
                fn_names[f]);
        }
    }
}

/* Arguments of every operation. */
void rows_operations(void)
{
    for (int f = 0; f < F_NCOLL; f++) {
        const char *fn = fn_names[f];
        fn_t ff = (fn_t)f;
        row_t r;
        if (f != F_BARRIER) {
            r = base(ff), r.dtype = (tc_dtype_t)42;
            add(r, TC_ERR_INVALID_ARG, "%s: dtype 42 is not a tc_dtype_t", fn);
            r.dtype = (tc_dtype_t)-1;
            add(r, TC_ERR_INVALID_ARG, "%s: dtype -1 is not a tc_dtype_t", fn);
            r = base(ff), r.sbuf = B_NULL;
            add(r, TC_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                f == F_BROADCAST || p2p(ff) ? "buf" : "sendbuf");
        }
        if (reduces(ff)) {
            r = base(ff), r.op = (tc_redop_t)99;
            add(r, TC_ERR_INVALID_ARG, "%s: op 99 is not a tc_redop_t", fn);
            r.op = (tc_redop_t)-1;
            add(r, TC_ERR_INVALID_ARG, "%s: op -1 is not a tc_redop_t", fn);
            r = base(ff), r.dtype = TC_FLOAT32, r.op = TC_BAND;
            add(r, TC_ERR_UNSUPPORTED, "%s: op band does not apply to dtype float32", fn);
            r.dtype = TC_FLOAT64, r.op = TC_BXOR;
            add(r, TC_ERR_UNSUPPORTED, "%s: op bxor does not apply to dtype float64", fn);
        }
        if (has_recvbuf(ff)) {
            r = base(ff), r.rbuf = B_NULL;
            add(r, TC_ERR_INVALID_ARG, "%s: recvbuf is NULL", fn);
        }
        if (rooted(ff) || p2p(ff)) {
            const char *what = p2p(ff) ? "peer" : "root";
            static const int bad[] = {-1, 1, INT_MAX, INT_MIN};
            for (int i = 0; i < 4; i++) {
                r = base(ff), r.root = bad[i];
                if (f == F_RECV && bad[i] == TC_ANY_SOURCE)
                    r.root = -2; /* -1 is TC_ANY_SOURCE: the next value below */
                add(r, TC_ERR_INVALID_ARG, "%s: %s %d is not a rank of the communicator (size 1)",
                    fn, what, r.root);
            }
        }
        if (has_count(ff)) {
            /* SIZE_MAX elements; 2^61 int32 (the bytes overflow size_t); past 2^48 */
            static const size_t huge[] = {SIZE_MAX, (size_t)1 << 61, ((size_t)1 << 48) + 1};
            for (int i = 0; i < 3; i++) {
                r = base(ff), r.count = huge[i];
                if (f == F_ALL_GATHER_V) /* count is recvcounts[0] (and sendcount) */
                    add(r, TC_ERR_INVALID_ARG, "%s: recvcounts[0] = %zu is too large", fn, huge[i]);
                else
                    add(r, TC_ERR_INVALID_ARG, "%s: %s %zu of int32 is too large", fn,
                        f == F_REDUCE_SCATTER ? "recvcount" : "count", huge[i]);
            }
        }
        if (f == F_ALL_GATHER_V || f == F_REDUCE_SCATTER_V || f == F_ALL_TO_ALL_V) {
            r = base(ff), r.v = V_NULL;
            add(r, TC_ERR_INVALID_ARG, "%s: recvcounts is NULL", fn);
            r.v = V_HUGE;
            add(r, TC_ERR_INVALID_ARG, "%s: recvcounts[0] = %zu is too large", fn, (size_t)1 << 49);
            r.v = V_HUGE_DISPL;
            add(r, TC_ERR_INVALID_ARG, "%s: %s[0] = %zu is too large", fn,
                f == F_ALL_TO_ALL_V ? "rdispls" : "displs", (size_t)1 << 49);
        }
        /* overlapping buffers where the call is not in place */
        if (has_recvbuf(ff) && f != F_ALL_GATHER_INIT) {
            r = base(ff), r.rbuf = B_A1;
            void *a = fx.a, *a1 = (char *)fx.a + 4;
            if (f == F_SCATTER) /* recvbuf is the small one */
                add(r, TC_ERR_INVALID_ARG,
                    "%s: recvbuf %p (16 bytes) and sendbuf %p (16 bytes) "
                    "overlap",
                    fn, a1, a);
            else
                add(r, TC_ERR_INVALID_ARG,
                    "%s: sendbuf %p (16 bytes) and recvbuf %p (16 bytes) "
                    "overlap",
                    fn, a, a1);
        }
        /* options */
        r = base(ff), r.opts = O_SIZE0;
        add(r, TC_ERR_INVALID_ARG,
            "%s: opts->size is 0, expected %zu (initialise with "
            "TC_OP_OPTS_INIT)",
            fn, sizeof(tc_op_opts_t));
        r.opts = O_SIZE4;
        add(r, TC_ERR_INVALID_ARG, "%s: opts->size is 4", fn);
        r = base(ff), r.opts = O_ASYNC, r.wp = 0;
        add(r, TC_ERR_INVALID_ARG, "%s: %s", fn,
            f == F_ALL_GATHER_INIT ? "work_p is NULL" : "opts->async is set but work_p is NULL");
        r = base(ff), r.opts = O_HINT_SYNTAX;
        add(r, TC_ERR_CONFIG, "%s: opts->hints: ", fn);
        r.opts = O_HINT_NOVALUE;
        add(r, TC_ERR_CONFIG, "novalue");
        r = base(ff), r.opts = O_HINT_KEY; /* ignored before */
        add(r, TC_ERR_INVALID_ARG, "%s: opts->hints: unknown key 'alg' (%s)", fn,
            p2p(ff) ? "this call takes no hints" : "this call takes only algo=...");
        r.opts = O_HINT_ALGO;
        if (p2p(ff)) /* no algorithm: ignored before */
            add(r, TC_ERR_INVALID_ARG,
                "%s: opts->hints: unknown key 'algo' (this call takes no "
                "hints)",
                fn);
        else
            add(r, TC_ERR_NOT_FOUND, "bogus");
    }
    /* call-specific */
    row_t r = base(F_ALL_GATHER_V);
    r.arg = 3; /* sendcount 3, recvcounts[0] 4 */
    add(r, TC_ERR_INVALID_ARG, "tc_all_gather_v: sendcount 3 differs from recvcounts[0] = 4");
    r = base(F_ALL_TO_ALL_V);
    r.arg = 3;
    add(r, TC_ERR_INVALID_ARG,
        "tc_all_to_all_v: sendcounts[0] = 3 but recvcounts[0] = 4 (this rank's block to itself)");
    r = base(F_ALL_TO_ALL_V), r.rbuf = B_A;
    add(r, TC_ERR_INVALID_ARG,
        "tc_all_to_all_v: sendbuf == recvbuf: all_to_all_v is never in "
        "place");
    r = base(F_ALL_GATHER_V), r.v = V_DISPL, r.rbuf = B_A1;
    add(r, TC_ERR_INVALID_ARG, "tc_all_gather_v: sendbuf");
    r = base(F_BATCH_END);
    add(r, TC_ERR_INVALID_STATE, "tc_batch_end: no tc_batch_begin on comm 'world'");
    r = base(F_ALL_GATHER_INIT), r.wp = 0;
    add(r, TC_ERR_INVALID_ARG, "tc_all_gather_init: work_p is NULL");
    /* count 0 with NULL buffers is allowed */
    for (int f = 0; f < F_NCOLL; f++)
        if (has_count((fn_t)f) && !p2p((fn_t)f)) { /* (a blocking send to itself waits) */
            r = base((fn_t)f), r.count = 0, r.sbuf = B_NULL, r.rbuf = B_NULL;
            add(r, TC_OK, "");
        }
}

/* Arguments of the communicator calls. */
void rows_comm_calls(void)
{
    static const fn_t outs[] = {F_RANK, F_SIZE, F_NAME, F_INFO};
    static const char *const outn[] = {"rank_p", "size_p", "name_p", "info"};
    for (int i = 0; i < 4; i++) {
        row_t r = base(outs[i]);
        r.arg = 1;
        add(r, TC_ERR_INVALID_ARG, "%s: %s is NULL", fn_names[outs[i]], outn[i]);
    }
    static const fn_t news[] = {F_SPLIT, F_SPLIT_RANKS, F_DUP, F_SHRINK};
    for (int i = 0; i < 4; i++) {
        row_t r = base(news[i]);
        r.count = 1;
        r.arg = 1;
        add(r, TC_ERR_INVALID_ARG, "%s: newcomm_p is NULL", fn_names[news[i]]);
        r.arg = 0;
        r.opts = O_SIZE0;
        add(r, TC_ERR_INVALID_ARG,
            "%s: opts->size is 0, expected %zu (initialise with "
            "TC_COMM_OPTS_INIT)",
            fn_names[news[i]], sizeof(tc_comm_opts_t));
        r.opts = O_HINT_SYNTAX;
        add(r, TC_ERR_CONFIG, "%s: opts->hints: ", fn_names[news[i]]);
        r.opts = O_HINT_NOVALUE;
        add(r, TC_ERR_CONFIG, "novalue");
    }
    row_t r = base(F_SPLIT);
    r.root = -2;
    add(r, TC_ERR_INVALID_ARG, "tc_comm_split: color -2 is negative");
    r.root = INT_MIN;
    add(r, TC_ERR_INVALID_ARG, "tc_comm_split: color -2147483648 is negative");
    /* split_ranks: list {0, 0, 5} from offset root, count entries */
    static const struct {
        int sbuf, off;
        size_t n;
        const char *needle;
    } sr[] = {
        {B_NULL, 0, 1, "tc_comm_split_ranks: ranks is NULL (1 ranks; the communicator has 1)"},
        {B_A, 0, 0, "tc_comm_split_ranks: the list must hold 1 to size ranks (0 ranks"},
        {B_A, 0, (size_t)-1, "the list must hold 1 to size ranks (-1 ranks"},
        {B_A, 0, 2, "the list must hold 1 to size ranks (2 ranks; the communicator has 1)"},
        {B_A, 2, 1, "tc_comm_split_ranks: ranks[0] = 5 is out of range"},
    };
    for (size_t i = 0; i < sizeof(sr) / sizeof(sr[0]); i++) {
        r = base(F_SPLIT_RANKS);
        r.sbuf = sr[i].sbuf, r.root = sr[i].off, r.count = sr[i].n;
        add(r, TC_ERR_INVALID_ARG, "%s", sr[i].needle);
    }
    static const fn_t lists[] = {F_FAILED, F_STATS};
    static const char *const listn[] = {"ranks", "stats"};
    for (int i = 0; i < 2; i++) {
        const char *fn = fn_names[lists[i]];
        r = base(lists[i]);
        r.arg = 1;
        add(r, TC_ERR_INVALID_ARG, "%s: n_p is NULL", fn);
        r = base(lists[i]);
        r.count = (size_t)-1;
        add(r, TC_ERR_INVALID_ARG, "%s: cap is negative", fn);
        r.count = (size_t)INT_MIN;
        add(r, TC_ERR_INVALID_ARG, "%s: cap is negative", fn);
        r.count = 2, r.sbuf = B_NULL;
        add(r, TC_ERR_INVALID_ARG, "%s: %s is NULL", fn, listn[i]);
        r.count = 0; /* NULL with cap 0 is allowed */
        add(r, TC_OK, "");
    }
    r = base(F_ADD_HOOK);
    r.arg = 1;
    add(r, TC_ERR_INVALID_ARG, "tc_comm_add_hook: fn is NULL");
    r = base(F_DUMP_FR);
    add(r, TC_ERR_CONFIG, "TC_FR_DIR");
}

/* tc_comm_create's own arguments. */
