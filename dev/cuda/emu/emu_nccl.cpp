// CUDA emulation (a logic check, not a device run): NCCL with ranks as
// threads of one process. A communicator is a group the ranks join through
// the unique id; a collective is two barriers: every rank posts its call
// (checked to match the others'), computes its own result from all ranks'
// send buffers in rank order, waits until all have read, then writes. A rank
// that never arrives (say, one more step on one rank) is reported after
// EMU_NCCL_TIMEOUT seconds (default 60) or when a peer destroys the
// communicator, instead of hanging.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_bf16.h"
#include "emu_internal.h"
#include "nccl.h"

namespace {

enum Kind { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST };
const char *kind_name(int k) {
    static const char *names[] = {"ncclAllReduce", "ncclReduceScatter", "ncclAllGather", "ncclBroadcast"};
    return names[k];
}

struct Call {
    int kind;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;
    unsigned long long seq;
};

struct Group {
    int world = 0, joined = 0, destroyed = 0;
    std::mutex mu;
    std::condition_variable cv;
    unsigned long long generation = 0;
    int arrived = 0;
    std::vector<Call> calls;
    std::vector<bool> in_use;
};

std::mutex registry_mutex;
std::map<std::string, std::shared_ptr<Group>> registry;

int timeout_seconds() {
    const char *v = getenv("EMU_NCCL_TIMEOUT");
    int t = v != nullptr ? atoi(v) : 60;
    return t > 0 ? t : 60;
}

size_t type_bytes(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
    }
}

double load(ncclDataType_t t, const void *p, size_t i) {
    switch (t) {
    case ncclFloat32: return ((const float *)p)[i];
    case ncclFloat64: return ((const double *)p)[i];
    case ncclBfloat16: return (float)((const __nv_bfloat16 *)p)[i];
    case ncclInt32: return ((const int32_t *)p)[i];
    case ncclUint32: return ((const uint32_t *)p)[i];
    case ncclInt64: return (double)((const int64_t *)p)[i];
    default: emu::device_abort("emulated NCCL: data type %d is not emulated", (int)t);
    }
}

// the value as the type stores it (fp32 sums are rounded after every rank, as a ring in order)
double round_to(ncclDataType_t t, double v) {
    switch (t) {
    case ncclFloat32: return (float)v;
    case ncclBfloat16: return (float)__nv_bfloat16((float)v);
    default: return v;
    }
}

void store(ncclDataType_t t, void *p, size_t i, double v) {
    switch (t) {
    case ncclFloat32: ((float *)p)[i] = (float)v; break;
    case ncclFloat64: ((double *)p)[i] = v; break;
    case ncclBfloat16: ((__nv_bfloat16 *)p)[i] = __nv_bfloat16((float)v); break;
    case ncclInt32: ((int32_t *)p)[i] = (int32_t)v; break;
    case ncclUint32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case ncclInt64: ((int64_t *)p)[i] = (int64_t)v; break;
    default: emu::device_abort("emulated NCCL: data type %d is not emulated", (int)t);
    }
}

} // namespace

struct emu_nccl_comm {
    std::shared_ptr<Group> group;
    int rank;
    unsigned long long seq;
};

namespace {

// all ranks of the group arrive; aborts after the timeout or when a peer left
void barrier(ncclComm_t c, const char *what) {
    Group &g = *c->group;
    std::unique_lock<std::mutex> lock(g.mu);
    const unsigned long long gen = g.generation;
    if (++g.arrived == g.world) {
        g.arrived = 0;
        g.generation++;
        g.cv.notify_all();
        return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds());
    while (g.generation == gen) {
        if (g.destroyed > 0) {
            emu::device_abort("emulated NCCL: rank %d waits in %s (call %llu) but a peer destroyed "
                              "the communicator: the ranks made different numbers of collective "
                              "calls", c->rank, what, c->seq);
        }
        if (g.cv.wait_until(lock, deadline) == std::cv_status::timeout && g.generation == gen) {
            emu::device_abort("emulated NCCL: rank %d waited %d s in %s (call %llu): %d of %d ranks "
                              "arrived; a real run would hang here", c->rank, timeout_seconds(),
                              what, c->seq, g.arrived, g.world);
        }
    }
}

ncclResult_t collective(Call call, ncclComm_t c) {
    if (c == nullptr) return ncclInvalidArgument;
    emu::check_stream(nullptr, kind_name(call.kind));
    Group &g = *c->group;
    const int W = g.world, r = c->rank;
    const size_t es = type_bytes(call.type);
    const size_t send_n = call.kind == REDUCE_SCATTER ? call.count * W : call.count;
    const size_t recv_n = call.kind == ALL_GATHER ? call.count * W : call.count;
    if (call.count > 0) {
        if (call.kind != BROADCAST || r == call.root) emu::check_device_range(call.send, send_n * es, kind_name(call.kind));
        emu::check_device_range(call.recv, recv_n * es, kind_name(call.kind));
    }
    call.seq = ++c->seq;
    {
        std::lock_guard<std::mutex> lock(g.mu);
        g.calls[r] = call;
    }
    barrier(c, kind_name(call.kind)); // every rank has posted its call
    for (int q = 0; q < W; q++) {
        const Call &o = g.calls[q];
        if (o.kind != call.kind || o.count != call.count || o.type != call.type ||
            (call.kind != ALL_GATHER && call.kind != BROADCAST && o.op != call.op) ||
            (call.kind == BROADCAST && o.root != call.root)) {
            emu::device_abort("emulated NCCL: call %llu differs between ranks: rank %d %s of %zu "
                              "(type %d op %d), rank %d %s of %zu (type %d op %d)", call.seq, r,
                              kind_name(call.kind), call.count, (int)call.type, (int)call.op, q,
                              kind_name(o.kind), o.count, (int)o.type, (int)o.op);
        }
    }
    std::vector<double> out(recv_n);
    for (size_t i = 0; i < recv_n; i++) {
        if (call.kind == ALL_GATHER) {
            out[i] = load(call.type, g.calls[i / call.count].send, i % call.count);
        } else if (call.kind == BROADCAST) {
            out[i] = load(call.type, g.calls[call.root].send, i);
        } else {
            const size_t src = call.kind == REDUCE_SCATTER ? r * call.count + i : i;
            double v = load(call.type, g.calls[0].send, src);
            for (int q = 1; q < W; q++) {
                const double x = load(call.type, g.calls[q].send, src);
                switch (call.op) {
                case ncclSum: case ncclAvg: v = round_to(call.type, v + x); break;
                case ncclProd: v = round_to(call.type, v * x); break;
                case ncclMax: v = v > x ? v : x; break;
                case ncclMin: v = v < x ? v : x; break;
                }
            }
            if (call.op == ncclAvg) v = round_to(call.type, v / W);
            out[i] = v;
        }
    }
    barrier(c, kind_name(call.kind)); // every rank has read every send buffer
    for (size_t i = 0; i < recv_n; i++) store(call.type, call.recv, i, out[i]);
    return ncclSuccess;
}

} // namespace

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static std::mutex mu;
    static unsigned long long counter = 0;
    std::lock_guard<std::mutex> lock(mu);
    memset(id, 0, sizeof(*id));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id->internal, sizeof(id->internal), "emu-nccl-%d-%lld-%ld-%llu", (int)getpid(),
             (long long)ts.tv_sec, ts.tv_nsec, ++counter);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    if (nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
    std::string key(id.internal, strnlen(id.internal, sizeof(id.internal)));
    if (key.rfind("emu-nccl-", 0) != 0) {
        fprintf(stderr, "emulated NCCL: the unique id was not made by ncclGetUniqueId in this process "
                "(ranks must be threads: EMU_RANKS)\n");
        return ncclInvalidUsage;
    }
    std::shared_ptr<Group> g;
    {
        std::lock_guard<std::mutex> lock(registry_mutex);
        auto &slot = registry[key];
        if (!slot) {
            slot = std::make_shared<Group>();
            slot->world = nranks;
            slot->calls.resize(nranks);
            slot->in_use.assign(nranks, false);
        }
        g = slot;
    }
    std::unique_lock<std::mutex> lock(g->mu);
    if (g->world != nranks) {
        fprintf(stderr, "emulated NCCL: rank %d joins with %d ranks, the communicator has %d\n", rank, nranks, g->world);
        return ncclInvalidArgument;
    }
    if (g->in_use[rank]) {
        fprintf(stderr, "emulated NCCL: rank %d joined twice\n", rank);
        return ncclInvalidUsage;
    }
    g->in_use[rank] = true;
    g->joined++;
    g->cv.notify_all();
    if (!g->cv.wait_for(lock, std::chrono::seconds(120), [&] { return g->joined == g->world; })) {
        fprintf(stderr, "emulated NCCL: rank %d waited 120 s for %d ranks\n", rank, g->world);
        return ncclSystemError;
    }
    *comm = new emu_nccl_comm{g, rank, 0};
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) { return comm == nullptr ? ncclInvalidArgument : ncclSuccess; }

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (comm == nullptr) return ncclInvalidArgument;
    {
        std::lock_guard<std::mutex> lock(comm->group->mu);
        comm->group->destroyed++;
        comm->group->cv.notify_all();
    }
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(ncclComm_t comm, int *count) {
    *count = comm->group->world;
    return ncclSuccess;
}
ncclResult_t ncclCommUserRank(ncclComm_t comm, int *rank) {
    *rank = comm->rank;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclSystemError: return "system error";
    default: return "internal error";
    }
}

ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    emu::check_stream(stream, "ncclAllReduce");
    return collective(Call{ALL_REDUCE, send, recv, count, type, op, 0, 0}, comm);
}
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recv_count,
                               ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
    emu::check_stream(stream, "ncclReduceScatter");
    return collective(Call{REDUCE_SCATTER, send, recv, recv_count, type, op, 0, 0}, comm);
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t send_count, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
    emu::check_stream(stream, "ncclAllGather");
    return collective(Call{ALL_GATHER, send, recv, send_count, type, ncclSum, 0, 0}, comm);
}
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream) {
    emu::check_stream(stream, "ncclBroadcast");
    return collective(Call{BROADCAST, send, recv, count, type, ncclSum, root, 0}, comm);
}
