/* Communicators bound to a CUDA device: the caller's buffers are device
 * memory. A collective copies its input to host memory when it starts, runs
 * its schedule on the host copies (the transports move host memory), and
 * copies the result back to the device when it completes. The whole extent of
 * the receive buffer goes both ways, so parts the collective leaves untouched
 * (gaps of a v-variant) keep their device contents.
 *
 * This path has not run on a GPU: no device was lent to the project yet. */
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "tcomms/base/log.h"
#include "tcomms/kernels/cuda_reduce.h"

tc_status_t tc_rt_cuda_bind(tc_rt_comm_t *comm, int device)
{
    int count = 0;
    tc_status_t st = tc_kern_cuda_available(&count);
    if (st != TC_OK)
        return st;
    if (device >= count)
        return tc_error_set(TC_ERR_INVALID_ARG, "CUDA device %d does not exist (%d device%s)",
                            device, count, count == 1 ? "" : "s");
    if ((st = tc_kern_cuda_set_device(device)) != TC_OK)
        return st;
    comm->device = device;
    tc_log_info(TC_SUBSYS_RUNTIME,
                "comm '%s': bound to CUDA device %d of %d (buffers staged "
                "through host memory)",
                comm->name, device, count);
    return TC_OK;
}

tc_status_t tc_rt_cuda_stage_in(tc_rt_work_t *w)
{
    const tc_sched_t *sched = w->main_sched;
    size_t esize = w->call.coll == TC_COLL_BARRIER ? 1 : tc_dtype_size(w->call.dtype);
    if (!w->staged) { /* first start: the caller's device pointers */
        w->d_send = (void *)w->call.sendbuf;
        w->d_recv = w->call.recvbuf;
        w->staged = 1;
    }
    int in_place = w->d_send == w->d_recv;
    size_t send_bytes = w->d_send && !in_place ? sched->buf_count[TC_BUF_SEND] * esize : 0;
    size_t recv_bytes = w->d_recv ? sched->buf_count[TC_BUF_RECV] * esize : 0;
    if (send_bytes + recv_bytes > w->h_cap) {
        void *p = realloc(w->h_buf, send_bytes + recv_bytes);
        if (!p)
            return tc_error_set(TC_ERR_NO_MEMORY, "%zu bytes of host copies of device buffers",
                                send_bytes + recv_bytes);
        w->h_buf = p;
        w->h_cap = send_bytes + recv_bytes;
    }
    char *h_recv = w->h_buf, *h_send = in_place ? h_recv : h_recv + recv_bytes;
    tc_status_t st = tc_kern_cuda_set_device(w->comm->device);
    if (st == TC_OK && recv_bytes)
        st = tc_kern_cuda_memcpy(h_recv, w->d_recv, recv_bytes);
    if (st == TC_OK && send_bytes)
        st = tc_kern_cuda_memcpy(h_send, w->d_send, send_bytes);
    if (st != TC_OK) {
        tc_error_prefix("staging the input in host memory: ");
        return st;
    }
    w->call.sendbuf = w->d_send ? h_send : NULL;
    w->call.recvbuf = w->d_recv ? h_recv : NULL;
    w->h_recv_bytes = recv_bytes;
    return TC_OK;
}

tc_status_t tc_rt_cuda_stage_out(tc_rt_work_t *w)
{
    if (!w->staged || !w->h_recv_bytes)
        return TC_OK;
    tc_status_t st = tc_kern_cuda_set_device(w->comm->device);
    if (st == TC_OK)
        st = tc_kern_cuda_memcpy(w->d_recv, w->h_buf, w->h_recv_bytes);
    if (st != TC_OK)
        tc_error_prefix("copying the result to the device: ");
    return st;
}
