/* Internal, the fault-tolerance module: failed ranks (learnt from the
 * transports, the launcher or peers), heartbeats, TC_FAULT_INJECT, and the
 * bootstrap's events. It calls the world and the bootstrap, and tells the
 * modules above through the world's hooks (failed, revoked) only. Revoke,
 * shrink and agreement act on communicators and live with them. */
#ifndef TC_RUNTIME_FT_H
#define TC_RUNTIME_FT_H

#include "world.h"

/* A rank of the job known to have failed. */
struct tc_rt_failed {
    int rank; /* world rank */
    int pid;  /* -1 when it could not be learnt */
    char host[TC_RT_HOST_MAX];
    char why[192];    /* how it was learnt */
    uint64_t when_ns; /* when this process learnt it */
    int spread;       /* certain enough to pass on to the watch neighbours (verdict.c) */
    int silent;       /* found silent (heartbeats), not seen dead */
};

/* Heartbeats and fault injection, from the environment (before the fence). */
TC_MUST_USE tc_status_t tc_rt_ft_init(tc_rt_world_t *world);
void tc_rt_ft_free(tc_rt_world_t *world);

/* failure.c */
/* Dequeue the bootstrap's events (failures, revocations) and apply them. */
void tc_rt_world_poll_events(tc_rt_world_t *world);
/* Record that world rank @p rank failed (once); @p notify tells the other ranks. */
const tc_rt_failed_t *tc_rt_world_note_failure(tc_rt_world_t *world, int rank, const char *why,
                                               int notify);
const tc_rt_failed_t *tc_rt_world_failed(const tc_rt_world_t *world, int rank);
/* "rank 3 (world rank 5, host h, pid 42)": @p f is rank @p rank of a
 * communicator; @p renumbered when its ranks are not the world's. */
void tc_rt_failed_describe(const tc_rt_failed_t *f, int rank, int renumbered, char *buf,
                           size_t cap);

/* fault_inject.c: TC_FAULT_INJECT */
TC_MUST_USE tc_status_t tc_rt_fault_init(tc_rt_world_t *world);
/* In round @p round of agreement @p agreement (0: the first) of a shrink: -1, or how many peers
 * to send to before dying. */
int tc_rt_fault_shrink_sends(const tc_rt_world_t *world, uint32_t agreement, uint32_t round);
/* Die if step @p step of collective @p op is this process's failure point. */
void tc_rt_fault_step(tc_rt_world_t *world, uint64_t op, uint32_t step);
/* At the small-message path's first vote, lanes up: -1 (no point here), or the ms to go on
 * progressing before voting; a point without ms dies here. Once per process. */
int64_t tc_rt_fault_vote(tc_rt_world_t *world);
/* Close the endpoint to the next world rank if @p op is the small-path operation a close point
 * names (once; world's lock held). */
void tc_rt_fault_close(tc_rt_world_t *world, uint64_t op);
/* End this process as a crash would (SIGKILL), saying where. */
void tc_rt_fault_die(tc_rt_world_t *world, const char *where);

/* Like tc_rt_world_note_failure(), with the rank's @p pid and @p host when
 * known (a verdict carries them: rank 0's store may be gone), else -1, NULL;
 * @p how: TC_RT_FAIL_* flags. */
#define TC_RT_FAIL_SPREAD 1 /* a verdict to pass on to the watch neighbours */
#define TC_RT_FAIL_SILENT 2 /* found silent (heartbeats), not seen dead */
const tc_rt_failed_t *tc_rt_world_note_failure_at(tc_rt_world_t *world, int rank, const char *why,
                                                  int notify, int how, int pid, const char *host);

/* heartbeat.c: heartbeats with the watch neighbours (tcomms/runtime/watch.h) */
/* TC_HEARTBEAT_MS, TC_HEARTBEAT_MISSES, and the neighbours (before the fence). */
TC_MUST_USE tc_status_t tc_rt_hb_init(tc_rt_world_t *world);
/* After the fence: connect to the neighbours and learn their host and pid. */
TC_MUST_USE tc_status_t tc_rt_hb_start(tc_rt_world_t *world, uint64_t deadline);
/* Say goodbye to the neighbours (bounded), so that leaving is not failing. */
void tc_rt_hb_leave(tc_rt_world_t *world);
void tc_rt_hb_free(tc_rt_world_t *world);
/* A new endpoint: a neighbour's starts (again) its heartbeats. */
void tc_rt_hb_peer(tc_rt_world_t *world, int peer, tc_tp_ep_t *ep);
/* Send due heartbeats and verdicts, take in what came, fail neighbours silent too long. */
void tc_rt_hb_tick(tc_rt_world_t *world, uint64_t now);
/* Is a peer's notice that @p rank failed (@p silent: found silent), sent by world
 * rank @p reporter (-1: unknown), to be believed here (tc_rt_watch_judge)? 1 yes;
 * 0 no, logged why. A notice that names this rank records its reporter in
 * world->accuser1 (a shrink that then leaves this rank out fails as cut off). */
int tc_rt_hb_believe(tc_rt_world_t *world, int rank, int reporter, int silent, uint64_t now);
/* The host and pid of a neighbour, learnt at the start: 1, or 0 when not known. */
int tc_rt_hb_proc(const tc_rt_world_t *world, int rank, int *pid_p, char host[TC_RT_HOST_MAX]);

#endif
