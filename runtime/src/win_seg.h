/* Internal: the names of allocated windows' segments in /dev/shm (win_sweep.c). A name carries
 * its creator's pid namespace and pid, so that a later allocation on this machine can tell a
 * segment whose creator ended (tc_rt_win_sweep). A name is read back from a directory that other
 * processes write: tests/fuzz/runtime/win_seg_fuzz.c drives the parser. */
#ifndef TC_RUNTIME_WIN_SEG_H
#define TC_RUNTIME_WIN_SEG_H

#include <stddef.h>
#include <stdint.h>

/* "/tcw.NS.PID.COMM.N": the segment of window N (this process's count) on communicator COMM,
 * made by process @p pid of this pid namespace; 0 when it does not fit @p cap. */
int tc_rt_win_seg_name(char *buf, size_t cap, int pid, uint32_t comm_id, unsigned seq);

/* The creator's pid when @p name (without the slash) is a window segment's name of pid
 * namespace @p ns: four decimal fields, each without a sign or spaces and within 64 bits, the
 * pid within 1 to INT_MAX; else 0. */
int tc_rt_win_seg_pid(const char *name, unsigned long long ns);

/* Remove the window segments whose creator (of this pid namespace and user) has ended. */
void tc_rt_win_sweep(void);

#endif
