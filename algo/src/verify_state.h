/* The verifier's state (private to verify.c and verify_result.c): the ranks it builds, the
 * event heap of the execution, scratch of the race check. */
#ifndef TCOMMS_ALGO_SRC_VERIFY_STATE_H
#define TCOMMS_ALGO_SRC_VERIFY_STATE_H

#include "algo_internal.h"
#include "verify_internal.h"

#define TC_V_NOSTEP UINT32_MAX

/* Sampled mode: peers built per sampled rank, at most. */
#define TC_V_MAX_PEERS 16u

typedef struct tc_vrank {
    int rank;
    int sampled;
    tc_sched_t sched;
    tc_algo_layout_t lay;
    tc_vbuf_t buf[3];  /* indexed by tc_buf_t; buf[SEND] unused in place */
    uint64_t size[3];  /* elements of each buffer */
    uint8_t *state;    /* per step: 0 waiting, 1 ready (comm), 2 done */
    uint8_t *npend;    /* per step: dependencies not done */
    uint32_t *match;   /* per communication step: the matching step on its peer */
    uint32_t *ordinal; /* per communication step: its message number on the pair */
    uint32_t *dstart;  /* dependents of step i: dlist[dstart[i] .. dstart[i+1]) */
    uint32_t *dlist;
    double *t;              /* per step: ready time, then completion time */
    const tc_vset_t **know; /* barrier: per step, the ranks known to have started */
    const tc_vset_t *know_all;
    tc_vcomm_t *comm;
    size_t ncomm;
    double send_free, recv_free;
    uint64_t send_msgs, send_elems, recv_elems, red_elems;
} tc_vrank_t;

typedef struct tc_vevent {
    double t;
    int32_t r;
    uint32_t i;
} tc_vevent_t;

typedef struct tc_verify {
    const tc_algo_args_t *args;
    const char *name;
    const tc_algo_verify_opts_t *opts;
    int p;
    tc_vrank_t **ranks; /* [p]; NULL where not built */
    int *built;         /* the built ranks, ascending */
    int nbuilt;
    tc_varena_t arena;
    tc_algo_model_t model;
    size_t esize;
    /* the event heap */
    tc_vevent_t *heap;
    size_t nheap, capheap;
    /* race check scratch */
    uint32_t *stamp;
    uint32_t stamp_cap, stamp_gen;
    uint32_t *stack;
    /* all_to_all_v: [p * p], row r: rank r's send offsets (block to q) and
     * receive offsets (block from q); NULL otherwise */
    uint64_t *a2a_soff, *a2a_roff;
} tc_verify_t;

/* verify.c: a TC_ERR_INTERNAL naming the collective, the algorithm and the size, then the text. */
TC_MUST_USE tc_status_t tc_v_fail(const tc_verify_t *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* verify_result.c: step 5, the collective's rule on every built rank's output; all_to_all_v's
 * offsets, prepared before the ranks are built. */
TC_MUST_USE tc_status_t tc_v_check_result(tc_verify_t *v);
TC_MUST_USE tc_status_t tc_v_a2av_prepare(tc_verify_t *v);

/* verify.c: the steps' vocabulary. verify_race.c: step 3 and the explanation of a wait.
 * verify_exec.c: step 4. */
TC_MUST_USE tc_status_t tc_v_check_races(tc_verify_t *v, int r);
void tc_v_explain(const tc_verify_t *v, int r, uint32_t i, char *out, size_t len);
TC_MUST_USE tc_status_t tc_v_execute(tc_verify_t *v, double *t_end);
void tc_v_describe(const tc_step_t *st, char *out, size_t len);
unsigned tc_v_resolve(const tc_verify_t *v, unsigned b);
/* A local source that overlaps the destination: copy and reduce never may; a
 * receive-reduce with its own source may name exactly the destination. */
static inline int tc_v_src_overlaps(const tc_verify_t *v, const tc_step_t *st)
{
    if ((st->kind != TC_STEP_COPY && st->kind != TC_STEP_REDUCE &&
         st->kind != TC_STEP_RECV_REDUCE_SRC) ||
        st->count == 0 || tc_v_resolve(v, st->buf) != tc_v_resolve(v, st->dst_buf)) {
        return 0;
    }
    if (st->kind == TC_STEP_RECV_REDUCE_SRC && st->off == st->dst_off) {
        return 0;
    }
    return st->off < st->dst_off + st->count && st->dst_off < st->off + st->count;
}
int tc_v_writes_dst(unsigned kind);

#endif /* TCOMMS_ALGO_SRC_VERIFY_STATE_H */
