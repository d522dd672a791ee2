/* Line-by-line forwarding of one rank's stdout or stderr with a "[rank] " prefix. */
#ifndef TCRUN_OUTPUT_H
#define TCRUN_OUTPUT_H

#include <stddef.h>

/* A longer line is forwarded in pieces of this size, each with its prefix. */
#define TC_RUN_LINE_MAX 8192

typedef struct tc_run_stream {
    int fd;     /* read end of the rank's pipe; -1 once closed */
    int out_fd; /* where lines go: 1 or 2 */
    int rank;
    size_t len; /* bytes of an unfinished line held in buf */
    char buf[TC_RUN_LINE_MAX];
} tc_run_stream_t;

void tc_run_stream_init(tc_run_stream_t *s, int fd, int out_fd, int rank);

/* Reads what the pipe has now (the fd is non-blocking) and forwards every complete line.
 * Returns 1 while the pipe is open, 0 once it reached end of file (the fd is then closed and
 * any partial line flushed). If drain is set, reads until the pipe is empty. */
int tc_run_stream_pump(tc_run_stream_t *s, int drain);

/* 1 or 2 once a line could not be written there because its reader closed it (EPIPE),
 * else 0: tcrun then stops the job, as a command of a shell pipeline that SIGPIPE ends. */
int tc_run_output_gone(void);

/* Flushes a partial last line (with a newline added) and closes the pipe. */
void tc_run_stream_close(tc_run_stream_t *s);

#endif
