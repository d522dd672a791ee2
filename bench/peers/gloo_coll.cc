// Gloo's collectives (C++ API, TCP transport on 127.0.0.1, FileStore rendezvous) timed the way
// tcperf times tcomms' (warm-up, then the mean of iters back-to-back operations, max over
// ranks; float32 sum; root 0), for bench/run_collectives.sh. Start one process per rank:
//   gloo_coll -r RANK -s NRANKS -p STORE_DIR [-c all_reduce,...] [-b 8] [-e 64M] [-f 2]
//             [-n iters] [-w warmup] [-L large_bytes -N large_iters -W large_warmup]
// Prints "<coll> <bytes> <time_us> <algbw GB/s> <busbw GB/s>" (see coll_sweep.h).
//
// Gloo 0.5 (Debian 12) has no reduce_scatter in its options API: that one is timed with the
// older algorithm object gloo::ReduceScatterHalvingDoubling (in place, built once per size,
// outside the timed loop), the only reduce-scatter this Gloo provides.
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include "coll_sweep.h"

namespace
{

using ReduceFn = void (*)(void *, const void *, const void *, size_t);
using Clock = std::chrono::steady_clock;

struct Args {
    int rank = -1, size = 0;
    std::string store;
};

int parse_extra(int c, const char *arg, void *ctx)
{
    Args *a = static_cast<Args *>(ctx);
    switch (c) {
    case 'r':
        a->rank = atoi(arg);
        return 0;
    case 's':
        a->size = atoi(arg);
        return 0;
    case 'p':
        a->store = arg;
        return 0;
    default:
        return 1;
    }
}

struct Bench {
    std::shared_ptr<gloo::Context> ctx;
    int rank, n;
    std::vector<float> s, r;
    std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> rs; // current size's
};

// One operation of coll on count elements (per rank, or per chunk for the chunked ones).
void run_op(Bench &b, int coll, size_t count)
{
    float *s = b.s.data(), *r = b.r.data();
    switch (coll) {
    case COLL_ALL_REDUCE: {
        gloo::AllreduceOptions o(b.ctx);
        o.setInput(s, count);
        o.setOutput(r, count);
        o.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
        gloo::allreduce(o);
        break;
    }
    case COLL_REDUCE: {
        gloo::ReduceOptions o(b.ctx);
        o.setInput(s, count);
        o.setOutput(r, count);
        o.setRoot(0);
        o.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
        gloo::reduce(o);
        break;
    }
    case COLL_BROADCAST: {
        gloo::BroadcastOptions o(b.ctx);
        o.setOutput(r, count);
        o.setRoot(0);
        gloo::broadcast(o);
        break;
    }
    case COLL_ALL_GATHER: {
        gloo::AllgatherOptions o(b.ctx);
        o.setInput(s, count);
        o.setOutput(r, count * b.n);
        gloo::allgather(o);
        break;
    }
    case COLL_REDUCE_SCATTER:
        b.rs->run();
        break;
    case COLL_ALL_TO_ALL: {
        gloo::AlltoallOptions o(b.ctx);
        o.setInput(s, count * b.n);
        o.setOutput(r, count * b.n);
        gloo::alltoall(o);
        break;
    }
    case COLL_GATHER: {
        gloo::GatherOptions o(b.ctx);
        o.setInput(s, count);
        if (b.rank == 0)
            o.setOutput(r, count * b.n);
        o.setRoot(0);
        gloo::gather(o);
        break;
    }
    case COLL_SCATTER: {
        gloo::ScatterOptions o(b.ctx);
        if (b.rank == 0) {
            std::vector<float *> chunks;
            for (int i = 0; i < b.n; i++)
                chunks.push_back(s + (size_t)i * count);
            o.setInputs(chunks, count);
        }
        o.setOutput(r, count);
        o.setRoot(0);
        gloo::scatter(o);
        break;
    }
    case COLL_BARRIER: {
        gloo::BarrierOptions o(b.ctx);
        gloo::barrier(o);
        break;
    }
    default:
        break;
    }
}

double max_over_ranks(Bench &b, double v)
{
    double out = 0;
    gloo::AllreduceOptions o(b.ctx);
    o.setInput(&v, 1);
    o.setOutput(&out, 1);
    o.setReduceFunction(static_cast<ReduceFn>(&gloo::max<double>));
    gloo::allreduce(o);
    return out;
}

double time_op(Bench &b, const sweep_opts_t &o, int coll, size_t count)
{
    if (coll == COLL_REDUCE_SCATTER) {
        std::vector<int> recv(b.n, (int)count);
        b.rs.reset(new gloo::ReduceScatterHalvingDoubling<float>(
            b.ctx, std::vector<float *>{b.r.data()}, (int)(count * b.n), recv));
    }
    int iters, warmup;
    sweep_iters(&o, sweep_bytes(coll, count, b.n), &iters, &warmup);
    for (int i = 0; i < warmup; i++)
        run_op(b, coll, count);
    max_over_ranks(b, 0); // align the ranks' start
    auto t0 = Clock::now();
    for (int i = 0; i < iters; i++)
        run_op(b, coll, count);
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
    b.rs.reset();
    return max_over_ranks(b, us);
}

} // namespace

int main(int argc, char **argv)
{
    Args a;
    sweep_opts_t o;
    if (sweep_parse(argc, argv, &o, "r:s:p:", parse_extra, &a) != 0)
        return 2;
    if (a.size < 1 || a.rank < 0 || a.rank >= a.size || a.store.empty()) {
        fprintf(stderr, "gloo_coll: need -r RANK -s NRANKS -p STORE_DIR (0 <= RANK < NRANKS)\n");
        return 2;
    }
    try {
        gloo::transport::tcp::attr attr("127.0.0.1");
        auto dev = gloo::transport::tcp::CreateDevice(attr);
        gloo::rendezvous::FileStore store(a.store);
        auto ctx = std::make_shared<gloo::rendezvous::Context>(a.rank, a.size);
        ctx->setTimeout(std::chrono::seconds(300));
        ctx->connectFullMesh(store, dev);
        Bench b{ctx, a.rank, a.size, {}, {}, nullptr};
        b.s.assign(o.max_bytes / 4 + 1, 1.0f);
        b.r.assign(o.max_bytes / 4 + 1, 1.0f);
        if (a.rank == 0)
            printf("# gloo_coll: %d ranks, tcp on 127.0.0.1, float32 sum, root 0\n", a.size);
        for (int k = 0; k < o.ncolls; k++) {
            int coll = o.colls[k];
            if (coll == COLL_BARRIER) {
                double us = time_op(b, o, coll, 0);
                if (a.rank == 0)
                    sweep_print(coll, 0, us, a.size);
                continue;
            }
            size_t prev = 0;
            for (size_t req = o.min_bytes; req <= o.max_bytes; req *= (size_t)o.factor) {
                size_t count = sweep_count(coll, req, a.size);
                size_t bytes = sweep_bytes(coll, count, a.size);
                if (count == 0 || bytes == prev)
                    continue;
                prev = bytes;
                double us = time_op(b, o, coll, count);
                if (a.rank == 0)
                    sweep_print(coll, bytes, us, a.size);
            }
        }
    } catch (const std::exception &e) {
        fprintf(stderr, "gloo_coll: rank %d: %s\n", a.rank, e.what());
        return 1;
    }
    return 0;
}
