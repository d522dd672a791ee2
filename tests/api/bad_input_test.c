/* Every public function of tcomms.h x every class of bad argument that applies,
 * as a table of rows {call, expected status, text the detail must contain}:
 * NULL pointers, out-of-range ranks / roots / peers, counts whose byte size
 * overflows size_t or passes the limit, invalid enums, wrong states (destroyed,
 * aborted, revoked, recording a batch; work freed, not persistent, never
 * started), stale and foreign handles, overlapping buffers, bad options.
 * Then every TC_* variable the library reads, malformed: tc_comm_create (or,
 * for a variable read later, the first operation) fails with TC_ERR_CONFIG
 * naming it. Before each row a decoy detail is set, so a call that fails
 * without its own detail is caught. Rows are checked all, failures listed,
 * and the number of cases printed. A world of one (TC_BOOTSTRAP_SELF). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/tcomms.h"
#include "tests/api/bad_input.h"

/* ---- fixtures ---- */

fixtures_t fx;

static tc_comm_t *self_comm(void)
{
    tc_comm_opts_t o = TC_COMM_OPTS_INIT;
    o.bootstrap = TC_BOOTSTRAP_SELF;
    tc_comm_t *c = NULL;
    assert_int_equal(tc_comm_create(&o, &c), TC_OK);
    return c;
}

static tc_comm_t *comm_of(int which)
{
    switch (which) {
    case C_NULL:
        return NULL;
    case C_STALE:
        return fx.stale;
    case C_GARBAGE:
        return (tc_comm_t *)&fx.garbage;
    case C_WORKH:
        return (tc_comm_t *)fx.work;
    case C_ABORTED:
        return fx.aborted;
    case C_REVOKED:
        return fx.revoked;
    case C_BATCH:
        return fx.batch;
    default:
        return fx.live;
    }
}

static void *buf_of(int which, size_t es)
{
    switch (which) {
    case B_B:
        return fx.b;
    case B_NULL:
        return NULL;
    case B_A1:
        return (char *)fx.a + es;
    default:
        return fx.a;
    }
}

static const tc_op_opts_t *opts_of(int which, tc_op_opts_t *o)
{
    *o = (tc_op_opts_t)TC_OP_OPTS_INIT;
    switch (which) {
    case O_NULL:
        return NULL;
    case O_SIZE0:
        o->size = 0;
        break;
    case O_SIZE4:
        o->size = 4;
        break;
    case O_ASYNC:
        o->async = 1;
        break;
    case O_HINT_SYNTAX:
        o->hints = "=x";
        break;
    case O_HINT_NOVALUE:
        o->hints = "novalue";
        break;
    case O_HINT_ALGO:
        o->hints = "algo=bogus";
        break;
    case O_HINT_KEY:
        o->hints = "alg=ring";
        break;
    }
    return o;
}

/* ---- the table ---- */

static void hook(tc_comm_t *c, const tc_op_info_t *i, int after, void *arg)
{
    (void)c, (void)i, (void)after, (void)arg;
}

/* Run row @p r: the call it names with the arguments it selects. */
static tc_status_t run(const row_t *r)
{
    tc_comm_t *c = comm_of(r->comm), *nc = NULL;
    size_t es = (unsigned)r->dtype < TC_DTYPE_COUNT ? tc_dtype_size(r->dtype) : 1;
    void *s = buf_of(r->sbuf, es), *rb = buf_of(r->rbuf, es);
    tc_op_opts_t ob;
    const tc_op_opts_t *o = opts_of(r->opts, &ob);
    tc_work_t *w = NULL, **wp = r->wp ? &w : NULL;
    size_t n1[1] = {r->count}, d1[1] = {0};
    const size_t *cn = n1, *dp = NULL;
    if (r->v == V_NULL)
        cn = NULL;
    else if (r->v == V_HUGE)
        n1[0] = (size_t)1 << 49;
    else if (r->v == V_HUGE_DISPL)
        d1[0] = (size_t)1 << 49, dp = d1;
    else if (r->v == V_DISPL)
        d1[0] = 2, dp = d1;
    tc_comm_opts_t co = TC_COMM_OPTS_INIT, *cop = r->opts == O_NULL ? NULL : &co;
    if (r->opts == O_SIZE0)
        co.size = 0;
    else if (r->opts == O_HINT_SYNTAX)
        co.hints = "=x";
    else if (r->opts == O_HINT_NOVALUE)
        co.hints = "novalue";
    int ranks[3] = {0, 0, 5}, n_out, rk;
    const char *name;
    tc_comm_info_t info;
    tc_comm_stat_t st8[8];
    tc_status_t st;
    switch (r->fn) {
    case F_ALL_REDUCE:
        st = tc_all_reduce(c, s, rb, r->count, r->dtype, r->op, o, wp);
        break;
    case F_REDUCE:
        st = tc_reduce(c, s, rb, r->count, r->dtype, r->op, r->root, o, wp);
        break;
    case F_BROADCAST:
        st = tc_broadcast(c, s, r->count, r->dtype, r->root, o, wp);
        break;
    case F_ALL_GATHER:
        st = tc_all_gather(c, s, rb, r->count, r->dtype, o, wp);
        break;
    case F_ALL_GATHER_V:
        st = tc_all_gather_v(c, s, (size_t)r->arg ? (size_t)r->arg : r->count, rb, cn, dp, r->dtype,
                             o, wp);
        break;
    case F_REDUCE_SCATTER:
        st = tc_reduce_scatter(c, s, rb, r->count, r->dtype, r->op, o, wp);
        break;
    case F_REDUCE_SCATTER_V:
        st = tc_reduce_scatter_v(c, s, rb, cn, dp, r->dtype, r->op, o, wp);
        break;
    case F_ALL_TO_ALL:
        st = tc_all_to_all(c, s, rb, r->count, r->dtype, o, wp);
        break;
    case F_ALL_TO_ALL_V: {
        size_t other[1] = {r->arg ? (size_t)r->arg : r->count};
        st = tc_all_to_all_v(c, s, other, NULL, rb, cn, dp, r->dtype, o, wp);
        break;
    }
    case F_GATHER:
        st = tc_gather(c, s, rb, r->count, r->dtype, r->root, o, wp);
        break;
    case F_SCATTER:
        st = tc_scatter(c, s, rb, r->count, r->dtype, r->root, o, wp);
        break;
    case F_BARRIER:
        st = tc_barrier(c, o, wp);
        break;
    case F_SEND:
        st = tc_send(c, s, r->count, r->dtype, r->root, o, wp);
        break;
    case F_RECV:
        st = tc_recv(c, s, r->count, r->dtype, r->root, o, wp);
        break;
    case F_ALL_GATHER_INIT:
        st = tc_all_gather_init(c, s, rb, r->count, r->dtype, o, wp);
        break;
    case F_DESTROY:
        st = tc_comm_destroy(c);
        break;
    case F_RANK:
        st = tc_comm_rank(c, r->arg ? NULL : &rk);
        break;
    case F_SIZE:
        st = tc_comm_size(c, r->arg ? NULL : &rk);
        break;
    case F_NAME:
        st = tc_comm_name(c, r->arg ? NULL : &name);
        break;
    case F_INFO:
        st = tc_comm_info(c, r->arg ? NULL : &info);
        break;
    case F_SPLIT:
        st = tc_comm_split(c, r->root, 0, cop, r->arg ? NULL : &nc);
        break;
    case F_SPLIT_RANKS:
        st = tc_comm_split_ranks(c, r->sbuf == B_NULL ? NULL : ranks + r->root, (int)r->count, cop,
                                 r->arg ? NULL : &nc);
        break;
    case F_DUP:
        st = tc_comm_dup(c, cop, r->arg ? NULL : &nc);
        break;
    case F_ABORT:
        st = tc_comm_abort(c);
        break;
    case F_REVOKE:
        st = tc_comm_revoke(c);
        break;
    case F_SHRINK:
        st = tc_comm_shrink(c, cop, r->arg ? NULL : &nc);
        break;
    case F_FAILED:
        st = tc_comm_failed_ranks(c, r->sbuf == B_NULL ? NULL : ranks, (int)r->count,
                                  r->arg ? NULL : &n_out);
        break;
    case F_STATS:
        st =
            tc_comm_stats(c, r->sbuf == B_NULL ? NULL : st8, (int)r->count, r->arg ? NULL : &n_out);
        break;
    case F_ADD_HOOK:
        st = tc_comm_add_hook(c, r->arg ? NULL : hook, NULL);
        break;
    case F_DUMP_FR:
        st = tc_comm_dump_fr(c);
        break;
    case F_BATCH_BEGIN:
        st = tc_batch_begin(c);
        break;
    case F_BATCH_END:
        st = tc_batch_end(c, o, wp);
        break;
    default:
        fail_msg("row with no call");
        return TC_ERR_INTERNAL;
    }
    if (w)
        tc_work_free(w);
    if (nc)
        tc_comm_destroy(nc);
    return st;
}

typedef struct {
    int null_comm_p;
    uint32_t size;
    int bootstrap, device;
    const char *name, *hints;
    tc_status_t want;
    const char *needle;
} create_row_t;

static const create_row_t create_rows[] = {
    {1, sizeof(tc_comm_opts_t), 2, -1, NULL, NULL, TC_ERR_INVALID_ARG,
     "tc_comm_create: comm_p is NULL"},
    {0, 0, 2, -1, NULL, NULL, TC_ERR_INVALID_ARG, "tc_comm_create: opts->size is 0"},
    {0, 8, 2, -1, NULL, NULL, TC_ERR_INVALID_ARG, "TC_COMM_OPTS_INIT"},
    {0, sizeof(tc_comm_opts_t), 17, -1, NULL, NULL, TC_ERR_INVALID_ARG,
     "tc_comm_create: opts->bootstrap is 17 (accepted: TC_BOOTSTRAP_AUTO"},
    {0, sizeof(tc_comm_opts_t), -1, -1, NULL, NULL, TC_ERR_INVALID_ARG,
     "tc_comm_create: opts->bootstrap is -1"},
    {0, sizeof(tc_comm_opts_t), 2, -2, NULL, NULL, TC_ERR_INVALID_ARG,
     "tc_comm_create: opts->device is -2"},
    {0, sizeof(tc_comm_opts_t), 2, INT_MIN, NULL, NULL, TC_ERR_INVALID_ARG,
     "tc_comm_create: opts->device is -2147483648"},
    {0, sizeof(tc_comm_opts_t), 2, -1,
     "a-name-of-sixty-four-characters-is-one-too-many-for-the-info-xxx", NULL, TC_ERR_INVALID_ARG,
     "tc_comm_create: opts->name is 64 characters (at most 63)"},
    {0, sizeof(tc_comm_opts_t), 2, -1, "", NULL, TC_ERR_INVALID_ARG,
     "tc_comm_create: opts->name is empty (NULL gives the default name)"},
    {0, sizeof(tc_comm_opts_t), 2, -1, NULL, "=x", TC_ERR_CONFIG, "tc_comm_create: opts->hints: "},
    {0, sizeof(tc_comm_opts_t), 2, -1, NULL, "novalue", TC_ERR_CONFIG, "novalue"},
    {0, sizeof(tc_comm_opts_t), 2, -1, NULL, "algo=ring,algo", TC_ERR_CONFIG, "opts->hints"},
};

/* tc_comm_create_from_store's own arguments; no callback may run for these. */
static int never_set(void *ctx, const char *key, const void *val, size_t len)
{
    fail_msg("store set called on '%s'", key);
    return TC_STORE_FAILED;
}

static int never_get(void *ctx, const char *key, void *buf, size_t cap, size_t *len_p)
{
    fail_msg("store get called on '%s'", key);
    return TC_STORE_FAILED;
}

static int never_wait(void *ctx, const char *key, int64_t timeout_ms)
{
    fail_msg("store wait called on '%s'", key);
    return TC_STORE_FAILED;
}

static int never_add(void *ctx, const char *key, int64_t delta, int64_t *value_p)
{
    fail_msg("store add called on '%s'", key);
    return TC_STORE_FAILED;
}

enum { S_OK, S_NULL, S_SIZE0, S_NO_SET, S_NO_WAIT, S_NO_ADD };
static const char long_prefix[] = "p123456789p123456789p123456789p123456789p123456789p123456789"
                                  "p123456789p123456789p123456789p123456789p123456789p123456789"
                                  "p12345678"; /* 129 */

typedef struct {
    int null_comm_p, store, rank, size, opts_size0;
    const char *prefix;
    tc_status_t want;
    const char *needle;
} store_row_t;

static const store_row_t store_rows[] = {
    {1, S_OK, 0, 1, 0, "p", TC_ERR_INVALID_ARG, "tc_comm_create_from_store: comm_p is NULL"},
    {0, S_NULL, 0, 1, 0, "p", TC_ERR_INVALID_ARG, "tc_comm_create_from_store: store is NULL"},
    {0, S_SIZE0, 0, 1, 0, "p", TC_ERR_INVALID_ARG, "store->size is 0, expected"},
    {0, S_NO_SET, 0, 1, 0, "p", TC_ERR_INVALID_ARG, "the set callback is NULL"},
    {0, S_NO_WAIT, 0, 1, 0, "p", TC_ERR_INVALID_ARG, "the wait callback is NULL"},
    {0, S_NO_ADD, 0, 1, 0, "p", TC_ERR_INVALID_ARG, "the add callback is NULL"},
    {0, S_OK, -1, 2, 0, "p", TC_ERR_INVALID_ARG, "rank -1 of size 2"},
    {0, S_OK, 2, 2, 0, "p", TC_ERR_INVALID_ARG, "rank 2 of size 2"},
    {0, S_OK, 0, 0, 0, "p", TC_ERR_INVALID_ARG, "rank 0 of size 0"},
    {0, S_OK, 0, 1, 0, NULL, TC_ERR_INVALID_ARG, "the prefix is NULL"},
    {0, S_OK, 0, 1, 0, "", TC_ERR_INVALID_ARG, "the prefix is empty"},
    {0, S_OK, 0, 1, 0, long_prefix, TC_ERR_INVALID_ARG, "the prefix is too long (1 to 128"},
    {0, S_OK, 0, 1, 1, "p", TC_ERR_INVALID_ARG, "tc_comm_create_from_store: opts->size is 0"},
};

static tc_status_t run_store_row(const store_row_t *r)
{
    tc_store_t s = {sizeof(tc_store_t), never_set, never_get, never_wait, never_add, NULL};
    s.size = r->store == S_SIZE0 ? 0 : s.size;
    s.set = r->store == S_NO_SET ? NULL : s.set;
    s.wait = r->store == S_NO_WAIT ? NULL : s.wait;
    s.add = r->store == S_NO_ADD ? NULL : s.add;
    tc_comm_opts_t o = TC_COMM_OPTS_INIT;
    o.size = r->opts_size0 ? 0 : o.size;
    tc_comm_t *c = NULL;
    tc_status_t st = tc_comm_create_from_store(r->store == S_NULL ? NULL : &s, r->rank, r->size,
                                               r->prefix, &o, r->null_comm_p ? NULL : &c);
    if (c)
        tc_comm_destroy(c);
    return st;
}

/* Work objects: NULL, freed, foreign, a communicator's handle; wrong states. */
enum { WK_NULL, WK_FREED, WK_GARBAGE, WK_COMMH, WK_DONE, WK_PERSIST };
enum { WF_WAIT, WF_TEST, WF_STATUS, WF_START, WF_FREE, WF_ERROR, WF_N };
static const char *const wf_names[WF_N] = {"tc_work_wait",  "tc_work_test", "tc_work_status",
                                           "tc_work_start", "tc_work_free", "tc_work_error"};

typedef struct {
    int fn, work, null_out;
    tc_status_t want;
    char needle[200];
} work_row_t;

static work_row_t work_rows[64];
static int nwork;

static void wadd(int fn, int work, int null_out, tc_status_t want, const char *fmt, ...)
{
    work_row_t *r = &work_rows[nwork++];
    assert_true(nwork <= 64);
    *r = (work_row_t){fn, work, null_out, want, ""};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->needle, sizeof(r->needle), fmt, ap);
    va_end(ap);
}

static void rows_work(tc_work_t *freed)
{
    for (int f = 0; f < WF_N; f++) {
        const char *fn = wf_names[f];
        if (f == WF_FREE)
            wadd(f, WK_NULL, 0, TC_OK, ""); /* NULL: nothing happens */
        else
            wadd(f, WK_NULL, 0, f == WF_ERROR ? TC_OK : TC_ERR_INVALID_ARG, "%s: work is NULL", fn);
        wadd(f, WK_FREED, 0, f == WF_ERROR ? TC_OK : TC_ERR_INVALID_STATE, "%s: work %p was freed",
             fn, (void *)freed);
        wadd(f, WK_GARBAGE, 0, f == WF_ERROR ? TC_OK : TC_ERR_INVALID_STATE,
             "%s: work %p is not a work handle", fn, (void *)&fx.garbage);
        wadd(f, WK_COMMH, 0, f == WF_ERROR ? TC_OK : TC_ERR_INVALID_STATE,
             "%s: work %p is a communicator handle, not a work object", fn, (void *)fx.live);
    }
    wadd(WF_TEST, WK_DONE, 1, TC_ERR_INVALID_ARG, "tc_work_test: done_p is NULL");
    wadd(WF_STATUS, WK_DONE, 1, TC_ERR_INVALID_ARG, "tc_work_status: state_p is NULL");
    wadd(WF_START, WK_DONE, 0, TC_ERR_INVALID_STATE,
         "tc_work_start: barrier #1 on comm 'world' is not persistent");
    wadd(WF_WAIT, WK_PERSIST, 0, TC_ERR_INVALID_STATE,
         "tc_work_wait: the persistent work was never started");
    wadd(WF_TEST, WK_PERSIST, 0, TC_ERR_INVALID_STATE,
         "tc_work_test: the persistent work was never started");
}

static tc_status_t run_work(const work_row_t *r, tc_work_t *freed, tc_work_t *done,
                            tc_work_t *persist, const char **text_p)
{
    tc_work_t *w = r->work == WK_NULL      ? NULL
                   : r->work == WK_FREED   ? freed
                   : r->work == WK_GARBAGE ? (tc_work_t *)&fx.garbage
                   : r->work == WK_COMMH   ? (tc_work_t *)fx.live
                   : r->work == WK_DONE    ? done
                                           : persist;
    int d;
    tc_work_state_t ws;
    *text_p = NULL;
    switch (r->fn) {
    case WF_WAIT:
        return tc_work_wait(w, 0);
    case WF_TEST:
        return tc_work_test(w, r->null_out ? NULL : &d);
    case WF_STATUS:
        return tc_work_status(w, r->null_out ? NULL : &ws, NULL);
    case WF_START:
        return tc_work_start(w);
    case WF_FREE:
        return tc_work_free(w);
    default:
        *text_p = tc_work_error(w);
        return TC_OK;
    }
}

#include "bad_input_env.h"

static int check(const char *what, tc_status_t got, tc_status_t want, const char *needle)
{
    const char *detail = tc_last_error();
    if (got == want && (want == TC_OK || strstr(detail, needle)))
        return 0;
    print_error("FAIL %s: got %s '%s', want %s '%s'\n", what, tc_status_string(got), detail,
                tc_status_string(want), needle);
    return 1;
}

static void test_bad_input(void **state)
{
    (void)state;
    env_clean();
    int32_t one = 1, out = 0;
    fx.live = self_comm();
    fx.stale = self_comm();
    assert_int_equal(tc_comm_destroy(fx.stale), TC_OK);
    fx.aborted = self_comm();
    assert_int_equal(tc_comm_abort(fx.aborted), TC_OK);
    fx.revoked = self_comm();
    (void)tc_comm_revoke(fx.revoked); /* no notices in a world of one: revoked here only */
    fx.batch = self_comm();
    assert_int_equal(tc_batch_begin(fx.batch), TC_OK);
    tc_work_t *freed = NULL, *persist = NULL;
    assert_int_equal(tc_barrier(fx.live, NULL, &fx.work), TC_OK);
    assert_int_equal(tc_barrier(fx.live, NULL, &freed), TC_OK);
    assert_int_equal(tc_work_free(freed), TC_OK);
    assert_int_equal(tc_all_gather_init(fx.live, &one, &out, 1, TC_INT32, NULL, &persist), TC_OK);

    nrows = nwork = 0;
    rows_handles();
    rows_operations();
    rows_comm_calls();
    rows_work(freed);
    int failed = 0, cases = 0;
    char what[96];
    for (int i = 0; i < nrows; i++, cases++) {
        tc_error_set(TC_ERR_INTERNAL, "decoy: not this call's detail");
        if (getenv("BAD_INPUT_VERBOSE"))
            print_message("row %d: %s, comm %d, opts %d: %s\n", i, fn_names[rows[i].fn],
                          rows[i].comm, rows[i].opts, rows[i].needle);
        tc_status_t st = run(&rows[i]);
        snprintf(what, sizeof(what), "row %d (%s, comm %d)", i, fn_names[rows[i].fn], rows[i].comm);
        failed += check(what, st, rows[i].want, rows[i].needle);
    }
    for (size_t i = 0; i < sizeof(create_rows) / sizeof(create_rows[0]); i++, cases++) {
        const create_row_t *r = &create_rows[i];
        tc_comm_opts_t o = TC_COMM_OPTS_INIT;
        o.size = r->size, o.bootstrap = (tc_bootstrap_t)r->bootstrap, o.device = r->device;
        o.name = r->name, o.hints = r->hints;
        tc_comm_t *c = NULL;
        tc_error_set(TC_ERR_INTERNAL, "decoy: not this call's detail");
        tc_status_t st = tc_comm_create(&o, r->null_comm_p ? NULL : &c);
        if (c)
            tc_comm_destroy(c);
        snprintf(what, sizeof(what), "create row %zu", i);
        failed += check(what, st, r->want, r->needle);
    }
    for (size_t i = 0; i < sizeof(store_rows) / sizeof(store_rows[0]); i++, cases++) {
        tc_error_set(TC_ERR_INTERNAL, "decoy: not this call's detail");
        tc_status_t st = run_store_row(&store_rows[i]);
        snprintf(what, sizeof(what), "store row %zu", i);
        failed += check(what, st, store_rows[i].want, store_rows[i].needle);
    }
    for (int i = 0; i < nwork; i++, cases++) {
        const char *text;
        tc_error_set(TC_ERR_INTERNAL, "decoy: not this call's detail");
        tc_status_t st = run_work(&work_rows[i], freed, fx.work, persist, &text);
        snprintf(what, sizeof(what), "work row %d (%s)", i, wf_names[work_rows[i].fn]);
        if (text && !strstr(text, work_rows[i].needle)) {
            print_error("FAIL %s: returned '%s', want '%s'\n", what, text, work_rows[i].needle);
            failed++;
        } else if (!text) {
            failed += check(what, st, work_rows[i].want, work_rows[i].needle);
        }
    }
    /* the environment */
    for (size_t i = 0; i < sizeof(env_rows) / sizeof(env_rows[0]); i++, cases++) {
        const env_row_t *r = &env_rows[i];
        int boot_env =
            strcmp(r->var, "TC_STORE_PORT") == 0 || strcmp(r->var, "TC_BOOT_LINGER_S") == 0;
        if (boot_env) {
            setenv("TC_BOOTSTRAP", "env", 1);
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            setenv("MASTER_PORT", "29517", 1);
            setenv("RANK", "0", 1);
            setenv("WORLD_SIZE", "1", 1);
        }
        setenv(r->var, r->value, 1);
        tc_comm_t *c = NULL;
        tc_error_set(TC_ERR_INTERNAL, "decoy: not this call's detail");
        tc_status_t st = tc_comm_create(NULL, &c);
        snprintf(what, sizeof(what), "%s=\"%s\" (%s)", r->var, r->value,
                 r->later ? "first operation" : "tc_comm_create");
        if (st == TC_OK && r->later)
            st = tc_all_reduce(c, &one, &out, 1, TC_INT32, TC_SUM, NULL, NULL);
        if (c)
            tc_comm_destroy(c);
        failed += check(what, st, TC_ERR_CONFIG, r->needle);
        unsetenv(r->var);
        env_clean();
    }
    /* the fixtures still work after all that */
    assert_int_equal(tc_all_reduce(fx.live, &one, &out, 1, TC_INT32, TC_SUM, NULL, NULL), TC_OK);
    assert_int_equal(out, 1);
    assert_int_equal(tc_work_free(persist), TC_OK);
    assert_int_equal(tc_work_free(fx.work), TC_OK);
    assert_int_equal(tc_batch_end(fx.batch, NULL, NULL), TC_OK);
    tc_comm_t *all[] = {fx.live, fx.aborted, fx.revoked, fx.batch};
    for (int i = 0; i < 4; i++)
        assert_int_equal(tc_comm_destroy(all[i]), TC_OK);
    print_message("bad_input: %d cases, %d failed\n", cases, failed);
    assert_true(cases >= 300);
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
