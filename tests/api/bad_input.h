/* bad_input_test's table of calls: what a row selects (communicator, buffers, options, ...),
 * the rows themselves (bad_input_rows.c) and how the test adds them. */
#ifndef TC_TESTS_API_BAD_INPUT_H
#define TC_TESTS_API_BAD_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/tcomms.h"

enum { C_LIVE, C_NULL, C_STALE, C_GARBAGE, C_WORKH, C_ABORTED, C_REVOKED, C_BATCH };
enum { B_A, B_B, B_NULL, B_A1 }; /* buffers: a, b (disjoint), NULL, a + 1 element */
enum {
    O_NULL,
    O_DEF,
    O_SIZE0,
    O_SIZE4,
    O_ASYNC,
    O_HINT_SYNTAX,
    O_HINT_NOVALUE,
    O_HINT_ALGO,
    O_HINT_KEY /* a misspelt key */
};
enum { V_OK, V_NULL, V_HUGE, V_HUGE_DISPL, V_DISPL };

/* What the C_* and B_* of a row stand for (set up by the test). */
typedef struct {
    tc_comm_t *live, *stale, *aborted, *revoked, *batch;
    tc_work_t *work; /* a live, completed work (its handle passed as a comm) */
    int garbage;
    int64_t a[64], b[64];
} fixtures_t;
extern fixtures_t fx;

typedef enum {
    F_ALL_REDUCE,
    F_REDUCE,
    F_BROADCAST,
    F_ALL_GATHER,
    F_ALL_GATHER_V,
    F_REDUCE_SCATTER,
    F_REDUCE_SCATTER_V,
    F_ALL_TO_ALL,
    F_ALL_TO_ALL_V,
    F_GATHER,
    F_SCATTER,
    F_BARRIER,
    F_SEND,
    F_RECV,
    F_ALL_GATHER_INIT,
    F_NCOLL, /* the operations above, the rest below */
    F_DESTROY = F_NCOLL,
    F_RANK,
    F_SIZE,
    F_NAME,
    F_INFO,
    F_SPLIT,
    F_SPLIT_RANKS,
    F_DUP,
    F_ABORT,
    F_REVOKE,
    F_SHRINK,
    F_FAILED,
    F_STATS,
    F_ADD_HOOK,
    F_DUMP_FR,
    F_BATCH_BEGIN,
    F_BATCH_END,
    F_NFN
} fn_t;

extern const char *const fn_names[F_NFN];

typedef struct {
    fn_t fn;
    int comm, sbuf, rbuf, opts, wp, v, root, arg;
    size_t count;
    tc_dtype_t dtype;
    tc_redop_t op;
    tc_status_t want;
    char needle[200];
} row_t;

enum { MAX_ROWS = 1024 };
extern row_t rows[MAX_ROWS];
extern int nrows;

/* A row calling @p fn with good arguments; a test changes one of them. */
row_t base(fn_t fn);
/* Add @p r expecting @p want and a detail that contains the formatted text. */
void add(row_t r, tc_status_t want, const char *fmt, ...);
/* Handles and states, for every function that takes a communicator. */
void rows_handles(void);
void rows_operations(void);
void rows_comm_calls(void);

#endif
