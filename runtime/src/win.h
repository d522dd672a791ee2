/* Internal, windows (win.c: create, destroy, shared memory; win_ops.c: put,
 * get, signals; win_wait.c: signal waits, flush). A window belongs to a communicator; its
 * operations are works of that communicator that run no schedule (their
 * tc_rt_work_ops_t), so waits, timeouts, abort, revoke, failures and the
 * flight recorder treat them like any operation. It calls work, progress,
 * the world and fault tolerance. */
#ifndef TC_RUNTIME_WIN_H
#define TC_RUNTIME_WIN_H

#include "comms.h"
#include "tcomms/runtime/win.h"

/* A peer's window as this rank reaches it. */
typedef struct tc_rt_win_peer {
    size_t bytes;        /* its window's size */
    tc_tp_ep_t *ep;      /* the endpoint the keys were unpacked for */
    tc_tp_rkey_t *data;  /* its window */
    tc_tp_rkey_t *slots; /* its signal slots */
    void *shared;        /* its window mapped here (same node, allocated), or NULL */
    int shared_why;      /* why not: 1 not in shared memory, 2 another node, 3 not mapped */
    int pending;         /* operations to it not yet completed (atomic: flush reads it unlocked) */
    /* The pool record its next fire-and-forget operations may join (win_ops.c), or NULL; a
     * pool record lives as long as the window, so the pointer stays valid, but the record
     * may have ended or moved on: checked before each use. */
    tc_rt_work_t *batch;
    /* The direct path (win_ops.c): its window and signal slots loaded and stored
     * here without the lock or a work object: this rank, or a same-node peer
     * whose segment is mapped and that a same-node backend reaches (not with
     * TC_SHM=0). Set at creation, never changed: NULL when not direct. */
    char *direct;
    uint64_t *direct_slots;
    void *map; /* the mapping of its segment (slots, then the window), for shared */
} tc_rt_win_peer_t;

/* The records of fire-and-forget operations (win_pool.c): TC_WIN_POOL of them
 * (default 64), allocated with the first, reused after a flush or once ended;
 * beyond, one is allocated per operation and freed when released. A pool
 * record carries up to TC_RT_WIN_BATCH transport requests: the operations of
 * one kind issued to one peer one after another share it (win_ops.c), so a
 * burst of small puts costs one record, one flight-recorder entry and one
 * completion per batch. */
#define TC_RT_WIN_BATCH 16
typedef struct tc_rt_win_pool {
    tc_rt_work_t *recs; /* cap records, or NULL until the first is needed */
    tc_tp_req_t *reqs;  /* their requests, TC_RT_WIN_BATCH each */
    tc_rt_work_t *free; /* the unused ones, linked through next */
    int cap, used;      /* used: taken and not given back */
    int ended;          /* pool records ended since the last reclaim */
    int used_max;       /* most used at once */
    uint64_t allocated; /* records allocated because the pool was empty */
} tc_rt_win_pool_t;

/* This rank's memory registered with one backend of the world. */
typedef struct tc_rt_win_reg {
    tc_tp_mem_t *data, *slots;
} tc_rt_win_reg_t;

struct tc_rt_win {
    tc_rt_comm_t *comm;         /* NULL once the communicator was destroyed */
    tc_rt_win_t *cnext, *cprev; /* the communicator's windows */
    uint64_t id;                /* 1 + windows of the communicator before it */
    void *base;
    size_t bytes;
    int allocated; /* the library allocated base */
    int shm_fd;    /* 1: in a shared-memory segment (the slots, then base), mapped for map_bytes */
    size_t map_bytes;
    void *map_base;  /* allocated: the shared mapping holding base (the segment's, or anonymous) */
    uint64_t *slots; /* TC_RT_WIN_SLOTS words, 64-byte aligned (in the segment with shm_fd) */
    tc_rt_win_reg_t regs[TC_RT_BACKENDS_MAX]; /* by the world's backend index */
    tc_rt_win_peer_t *peers;                  /* by rank of the communicator */
    int pending;                              /* operations not yet completed (atomic) */
    uint64_t ops;                             /* operations issued (their sequence) */
    int released; /* transport resources given back (atomic: the direct path reads it unlocked) */
    int linked;   /* on the communicator's list */
    int counted;  /* counted in the world's nasync */
    tc_rt_work_t *inline_work; /* blocking operations without a work object, reused */
    /* asynchronous operations without a work object to peers off the direct
     * path (lock held; nff read unlocked by flush): released by a flush */
    tc_rt_work_t **ff;
    int nff, ffcap;
    /* The clock of the current burst of those (read by its first operation, or
     * by a flush): their flight-recorder times, never their deadlines. */
    uint64_t burst_ns;
    tc_rt_win_pool_t pool;
};

/* An allocated window's shared-memory segment: the signal slots in its
 * first page, the window from the second (page-aligned for the caller). */
#define TC_RT_WIN_SEG_HDR ((size_t)4096)

/* win.c */
/* Give back what @p win holds of the world (keys, registrations, the
 * progress thread's duty); lock held. The window stays, unusable. */
void tc_rt_win_release(tc_rt_win_t *win);
/* The communicator is destroyed (lock held): its windows release. */
void tc_rt_comm_release_wins(tc_rt_comm_t *comm);

/* win_ops.c */
/* Cancel @p win's running operations with @p st (lock held). */
void tc_rt_win_cancel(tc_rt_win_t *win, tc_status_t st, const char *why);
/* TC_OK while @p win's communicator lives and is not broken; else the error, set, in @p fn's
 * name. */
TC_MUST_USE tc_status_t tc_rt_win_usable(tc_rt_win_t *win, const char *fn);

/* win_pool.c (lock held for all) */
/* Read TC_WIN_POOL for a new communicator's windows (no lock needed). */
TC_MUST_USE tc_status_t tc_rt_win_pool_config(tc_rt_comm_t *comm);
/* A record for a fire-and-forget operation: the pool's, else a heap work of
 * the communicator; NULL when out of memory. */
tc_rt_work_t *tc_rt_win_rec_take(tc_rt_win_t *win);
/* Give back a record that is not running (pool: reused; heap: freed). */
void tc_rt_win_rec_give(tc_rt_win_t *win, tc_rt_work_t *w);
/* A pool record of a fire-and-forget operation ended (its work's end). */
void tc_rt_win_rec_ended(tc_rt_win_t *win, tc_rt_work_t *w);
/* Keep @p w, running, until a flush releases it. */
void tc_rt_win_ff_keep(tc_rt_win_t *win, tc_rt_work_t *w);
/* Release the ended fire-and-forget works to @p peer (-1: every rank); the
 * first failure among them is returned, set. */
tc_status_t tc_rt_win_ff_sweep(tc_rt_win_t *win, int peer);
/* Free the pool's memory (no record running: after the sweep of every rank). */
void tc_rt_win_pool_free(tc_rt_win_t *win);

#endif
