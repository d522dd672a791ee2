/* The flow trace's state (private to verify_flow.c and verify_flow_rank.c): the cache of built
 * ranks and what one trace needs. */
#ifndef TCOMMS_ALGO_SRC_VERIFY_FLOW_H
#define TCOMMS_ALGO_SRC_VERIFY_FLOW_H

#include "algo_internal.h"
#include "verify_internal.h"

#define TC_F_NOSTEP UINT32_MAX
#define TC_F_END UINT32_MAX           /* "before": after the last step */
#define TC_F_CACHE_STEPS (1ull << 24) /* about 1.3 GB at most */
#define TC_F_SYM_RANDOM 16            /* random ranks checked for symmetry */

typedef struct tc_frank {
    int rank;
    tc_sched_t sched;
    tc_algo_layout_t lay;
    uint64_t size[3];
    tc_vcomm_t *comm; /* sorted by (peer, dir, step) */
    size_t ncomm;
    uint32_t *ordinal; /* per step: its message number with its peer, per direction */
    /* writers per elementary interval of each buffer: [cut[e], cut[e+1]) is
     * written by wlist[wstart[e] .. wstart[e+1]), ascending; NULL: scan */
    uint64_t *cut[3];
    size_t ncut[3];
    uint32_t *wstart[3];
    uint32_t *wlist[3];
    uint8_t *chained[3];          /* per elementary interval: its writers proven in order */
    struct tc_frank *prev, *next; /* LRU: head is the most recent */
} tc_frank_t;

typedef struct tc_fq {
    int32_t r;
    uint32_t before;
    uint64_t y;
    uint8_t b;
} tc_fq_t;

typedef struct tc_flow {
    const tc_vflow_in_t *in;
    const tc_algo_args_t *a;
    int p;
    tc_frank_t **slot; /* [p] cached ranks */
    tc_frank_t *head, *tail;
    uint64_t cached_steps;
    uint64_t built_steps, nbuilt, hops;
    int exhausted; /* the budget is spent */
    uint32_t *stamp, *stack;
    uint32_t stamp_cap, stamp_gen;
    tc_fq_t *work;
    size_t nwork, capwork;
    uint8_t *seen;                       /* [p] per element: contributions seen */
    uint32_t max_nsteps;                 /* longest schedule seen (the cycle bound) */
    uint64_t sym_built, sym_built_steps; /* the check's builds: outside the budget */
    /* rotational symmetry: tmpl is rank 0, vs its rotation; sym: the element
     * being traced goes through tmpl only */
    int sym;
    int sym_state; /* as tc_algo_verify_report_t.flow_sym_state */
    int sym_checked, sym_rank;
    uint32_t sym_step;
    tc_frank_t *tmpl;
    tc_vsym_t vs;
} tc_flow_t;

/* verify_flow.c */
TC_MUST_USE tc_status_t tc_f_fail(const tc_flow_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int tc_f_before(tc_flow_t *f, const tc_sched_t *s, uint32_t a, uint32_t b);
unsigned tc_f_resolve(const tc_flow_t *f, unsigned b);

/* verify_flow_rank.c: the cache of built ranks (least recently used out first), a rank's
 * schedule checked and its writes indexed, and the views of a rank through the symmetry. */
void tc_f_free_rank(tc_frank_t *fr);
void tc_f_unlink(tc_flow_t *f, tc_frank_t *fr);
TC_MUST_USE tc_status_t tc_f_build(tc_flow_t *f, int r, tc_frank_t **out);
TC_MUST_USE tc_status_t tc_f_stamp_fit(tc_flow_t *f, uint32_t n);
TC_MUST_USE tc_status_t tc_f_view(tc_flow_t *f, int q, tc_frank_t **fr_p, int *rot_p);
uint64_t tc_f_in(const tc_flow_t *f, unsigned b, uint64_t y, int rot);
uint64_t tc_f_out(const tc_flow_t *f, unsigned b, uint64_t y, int rot);

#endif /* TCOMMS_ALGO_SRC_VERIFY_FLOW_H */
