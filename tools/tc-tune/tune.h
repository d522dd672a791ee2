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

#define TUNE_MAX_ALGOS 16

/* One (collective, size) cell of a sweep: every algorithm that applies, its
 * time (the median of the rounds, the largest over the ranks, the same on
 * every rank), the fastest, and the choice without a hint when asked for
 * (which may be a path no hint forces, appended as the last). */
typedef struct tune_cell {
    tc_coll_t coll;
    size_t count;   /* the count the calls passed */
    uint64_t bytes; /* total bytes as tcperf counts them (tc_algo_args_bytes) */
    const char *name[TUNE_MAX_ALGOS + 1];
    double us[TUNE_MAX_ALGOS + 1];
    int n;
    int chosen;  /* index of the choice without a hint, or -1 when not asked */
    int fastest; /* index of the fastest */
} tune_cell_t;

/* Called on every rank with each cell measured; an error stops the sweep. */
typedef tc_status_t (*tune_cell_fn)(void *arg, const tune_cell_t *cell);

/* sweep.c: the cells of -b to -e (x -f) of every collective (or --coll),
 * until --max-seconds passes; @p with_choice: also the call without a hint. */
tc_status_t tune_sweep(const tune_job_t *job, const tune_vopts_t *o, int with_choice,
                       tune_cell_fn fn, void *arg);

/* rules.c: the fastest algorithm of every cell as the tuning file's rules,
 * into @p tuning on rank 0 (which must hold the job's shape). */
tc_status_t tune_rules(const tune_job_t *job, const tune_vopts_t *o, tc_algo_tuning_t *tuning);

/* validate.c: prints the table on rank 0; *within_p / *cells_p the summary. */
tc_status_t tune_validate(const tune_job_t *job, const tune_vopts_t *o, int *within_p,
                          int *cells_p);

#endif /* TC_TUNE_TUNE_H */
