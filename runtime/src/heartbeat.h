/* Internal to fault tolerance: the state of one watch neighbour, shared by
 * heartbeat.c (heartbeats, silence) and verdict.c (verdicts over the data
 * network). One per neighbour (at most TC_RT_WATCH_MAX), never per rank of
 * the world. */
#ifndef TC_RUNTIME_HEARTBEAT_H
#define TC_RUNTIME_HEARTBEAT_H

#include "ft.h"
#include "tcomms/runtime/watch.h"

typedef struct tc_rt_hb {
    int peer; /* world rank */
    int pid;  /* -1 until learnt */
    char host[TC_RT_HOST_MAX];
    tc_tp_ep_t *ep;           /* the endpoint the requests were posted on; NULL before */
    tc_tp_req_t rreq, sreq;   /* heartbeats */
    tc_tp_req_t vrreq, vsreq; /* verdicts */
    uint64_t rbuf, sbuf;      /* a heartbeat: its send time; 0 says goodbye */
    tc_rt_verdict_msg_t vrbuf, vsbuf;
    uint64_t last_heard; /* ns: its last heartbeat, or the last period its bytes arrived */
    uint64_t rx_seen;    /* ep->rx_bytes when last looked at */
    uint64_t last_sent;  /* ns */
    uint64_t runs_seen;  /* ns: when its process was last seen running here while silent; 0 never */
    int forwarded;       /* entries of world->failed passed on to this neighbour */
    int reported;        /* failed here: no longer watched */
    int left;            /* said goodbye: no longer watched */
    int said_bye;        /* this rank said goodbye to it */
} tc_rt_hb_t;

/* heartbeat.c: the neighbour state of world rank @p rank, or NULL. */
tc_rt_hb_t *tc_rt_hb_find(const tc_rt_world_t *world, int rank);

/* verdict.c */
/* Post the receive of @p hb's next verdict. */
void tc_rt_verdict_post(tc_rt_hb_t *hb);
/* Take in a verdict that arrived from @p hb, pass known failures on to it. */
void tc_rt_verdict_tick(tc_rt_world_t *world, tc_rt_hb_t *hb, uint64_t now);

#endif
