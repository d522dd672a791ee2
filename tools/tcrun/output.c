/* Forwards a rank's output line by line; each line is one write() so that lines of different
 * ranks never interleave. */
#include "tools/tcrun/output.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void tc_run_stream_init(tc_run_stream_t *s, int fd, int out_fd, int rank)
{
    s->fd = fd;
    s->out_fd = out_fd;
    s->rank = rank;
    s->len = 0;
}

/* The first of tcrun's outputs found closed by its reader (1 or 2), or 0. */
static int output_gone;

int tc_run_output_gone(void)
{
    return output_gone;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EPIPE && output_gone == 0) {
                output_gone = fd; /* the reader is gone (`tcrun ... | head`): the job stops */
            }
            return; /* the output is dropped */
        }
        p += w;
        n -= (size_t)w;
    }
}

static void emit_line(const tc_run_stream_t *s, const char *line, size_t n)
{
    char out[TC_RUN_LINE_MAX + 32];
    int plen = snprintf(out, sizeof(out), "[%d] ", s->rank);
    memcpy(out + plen, line, n);
    out[(size_t)plen + n] = '\n';
    write_all(s->out_fd, out, (size_t)plen + n + 1);
}

/* Forwards the complete lines in buf and keeps the unfinished tail. */
static void emit_complete_lines(tc_run_stream_t *s)
{
    size_t start = 0;
    for (size_t i = 0; i < s->len; i++) {
        if (s->buf[i] == '\n') {
            emit_line(s, s->buf + start, i - start);
            start = i + 1;
        }
    }
    if (start == 0 && s->len == sizeof(s->buf)) {
        emit_line(s, s->buf, s->len); /* a full buffer without newline: forward a piece */
        start = s->len;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
}

int tc_run_stream_pump(tc_run_stream_t *s, int drain)
{
    if (s->fd < 0) {
        return 0;
    }
    do {
        ssize_t r = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len);
        if (r > 0) {
            s->len += (size_t)r;
            emit_complete_lines(s);
            continue;
        }
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 1;
        }
        tc_run_stream_close(s); /* end of file, or an error that ends the stream */
        return 0;
    } while (drain);
    return 1;
}

void tc_run_stream_close(tc_run_stream_t *s)
{
    if (s->len > 0) {
        emit_line(s, s->buf, s->len);
        s->len = 0;
    }
    if (s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
}
