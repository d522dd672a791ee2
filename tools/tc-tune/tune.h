/* tc-tune: the cost model fitted to the job it runs in (measure.c) and the
 * check of the selection against every algorithm (validate.c). */
#ifndef TC_TUNE_TUNE_H
#define TC_TUNE_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/algo/tuning.h"
#include "tcomms/tcomms.h"

/** Where the ranks of the job sit. */
typedef struct tune_job {
    tc_comm_t *comm;
    int rank, size;
    int nnodes;         /* distinct node ids */
    int ranks_per_node; /* the most ranks on one node */
    int *node;          /* [size] node index of each rank (first seen first) */
    char host[64];      /* this rank's hostname */
} tune_job_t;

/** Options of a measurement (measure.c). */
typedef struct tune_opts {
    uint64_t max_bytes; /* largest ping-pong message */
    int reps;           /* round trips per size (fewer for large ones) */
    int quiet;          /* no per-size lines */
} tune_opts_t;

/** Most --rounds of --validate. */
#define TUNE_MAX_ROUNDS 15

/** Options of --validate (validate.c). */
typedef struct tune_vopts {
    uint64_t min_bytes, max_bytes;
    int factor;
    int iters;          /* most timed iterations per measurement */
    int warmup;         /* untimed operations before an algorithm's first measurement */
    double target_ms;   /* a measurement's length: its iterations are found to last this long */
    int rounds;         /* measurements per algorithm (interleaved), the median taken */
    double max_seconds; /* stop after the cell that passes this (0: no cap) */
    int csv;
    int coll; /* a tc_coll_t, or -1 for every collective */
} tune_vopts_t;

/* measure.c */
tc_status_t tune_job_init(tc_comm_t *comm, tune_job_t *job);
void tune_job_free(tune_job_t *job);
/* Measure and fit; on rank 0 @p tuning receives the result (all ranks return
 * the same status). */
tc_status_t tune_measure(const tune_job_t *job, const tune_opts_t *o, tc_algo_tuning_t *tuning);

/* The median of @p n values (sorts them in place). */
double tune_median(double *v, int n);

/* validate.c: prints the table on rank 0; *within_p / *cells_p the summary. */
tc_status_t tune_validate(const tune_job_t *job, const tune_vopts_t *o, int *within_p,
                          int *cells_p);

#endif /* TC_TUNE_TUNE_H */
