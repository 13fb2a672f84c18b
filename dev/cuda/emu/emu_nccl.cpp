// CUDA emulation (a logic check, not a device run): NCCL with ranks as
// threads of one process. A communicator is a group the ranks join through
// the unique id; a collective is two barriers: every rank posts its call
// (checked to match the others'), computes its own result from all ranks'
// send buffers in rank order, waits until all have read, then writes. A rank
// that never arrives (say, one more step on one rank) is reported after
// EMU_NCCL_TIMEOUT seconds (default 60) or when a peer destroys the
// communicator, instead of hanging.
// Built with MPI (FOLDNORM_MPI) the ranks may also be processes, one per
// (namespace) host under mpirun, the id sent by MPI_Bcast (multi_gpu.cuh):
// when MPI is initialized with as many processes as the communicator's
// ranks, each collective all-gathers the calls (checked as above) and the
// send buffers over MPI, and every rank computes its result with the same
// code in the same rank order, so both transports give the same bits.
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
#include "emu_race.h"
#include "nccl.h"

#ifdef FOLDNORM_MPI
#include <mpi.h>
#endif

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
    std::shared_ptr<Group> group; // threads: the shared group; processes: this rank's alone
    int rank;
    unsigned long long seq;
#ifdef FOLDNORM_MPI
    MPI_Comm mpi = MPI_COMM_NULL; // processes: a duplicate of MPI_COMM_WORLD
#endif
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

// every rank's call matches rank r's
void check_calls(const Call &call, const Call *calls, int W, int r) {
    for (int q = 0; q < W; q++) {
        const Call &o = calls[q];
        if (o.kind != call.kind || o.count != call.count || o.type != call.type ||
            (call.kind != ALL_GATHER && call.kind != BROADCAST && o.op != call.op) ||
            (call.kind == BROADCAST && o.root != call.root)) {
            emu::device_abort("emulated NCCL: call %llu differs between ranks: rank %d %s of %zu "
                              "(type %d op %d), rank %d %s of %zu (type %d op %d)", call.seq, r,
                              kind_name(call.kind), call.count, (int)call.type, (int)call.op, q,
                              kind_name(o.kind), o.count, (int)o.type, (int)o.op);
        }
    }
}

// rank r's result (recv_n values) from every rank's send buffer, in rank order
std::vector<double> compute(const Call &call, const void *const *sends, int W, int r, size_t recv_n) {
    std::vector<double> out(recv_n);
    for (size_t i = 0; i < recv_n; i++) {
        if (call.kind == ALL_GATHER) {
            out[i] = load(call.type, sends[i / call.count], i % call.count);
        } else if (call.kind == BROADCAST) {
            out[i] = load(call.type, sends[call.root], i);
        } else {
            const size_t src = call.kind == REDUCE_SCATTER ? r * call.count + i : i;
            double v = load(call.type, sends[0], src);
            for (int q = 1; q < W; q++) {
                const double x = load(call.type, sends[q], src);
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
    return out;
}

#ifdef FOLDNORM_MPI
void mpi_check(int rc, const char *what) {
    if (rc != MPI_SUCCESS) emu::device_abort("emulated NCCL over MPI: %s failed (error %d)", what, rc);
}

// processes: the calls and the send buffers (send_n values, or none off a
// broadcast's root) all-gathered, then the same computation
ncclResult_t collective_mpi(const Call &call, ncclComm_t c, int W, size_t send_n, size_t recv_n) {
    std::vector<Call> calls(W);
    mpi_check(MPI_Allgather(&call, (int)sizeof(Call), MPI_BYTE, calls.data(), (int)sizeof(Call),
                            MPI_BYTE, c->mpi), "MPI_Allgather of the calls");
    check_calls(call, calls.data(), W, c->rank);
    const size_t bytes = send_n * type_bytes(call.type);
    if (bytes > (size_t)1 << 30) {
        emu::device_abort("emulated NCCL over MPI: %s of %zu bytes (at most 1 GiB a call)",
                          kind_name(call.kind), bytes);
    }
    std::vector<unsigned char> mine(bytes, 0), all(bytes * W);
    if (call.count > 0 && (call.kind != BROADCAST || c->rank == call.root)) {
        memcpy(mine.data(), call.send, bytes);
    }
    mpi_check(MPI_Allgather(mine.data(), (int)bytes, MPI_BYTE, all.data(), (int)bytes, MPI_BYTE,
                            c->mpi), "MPI_Allgather of the send buffers");
    std::vector<const void *> sends(W);
    for (int q = 0; q < W; q++) sends[q] = all.data() + (size_t)q * bytes;
    const std::vector<double> out = compute(call, sends.data(), W, c->rank, recv_n);
    for (size_t i = 0; i < recv_n; i++) store(call.type, call.recv, i, out[i]);
    return ncclSuccess;
}
#endif

// the call on this rank, when its stream runs it (emu_streams.cpp)
ncclResult_t run_collective(Call call, ncclComm_t c) {
    Group &g = *c->group;
    const int W = g.world, r = c->rank;
    const size_t es = type_bytes(call.type);
    const size_t send_n = call.kind == REDUCE_SCATTER ? call.count * W : call.count;
    const size_t recv_n = call.kind == ALL_GATHER ? call.count * W : call.count;
    if (call.count > 0 && emu::stream_op_queued()) { // stream-0 work it is not ordered after?
        if (call.kind != BROADCAST || r == call.root) emu::race::stream_order_check(call.send, send_n * es, kind_name(call.kind));
        emu::race::stream_order_check(call.recv, recv_n * es, kind_name(call.kind));
    }
    if (call.count > 0) emu::race::legacy_wrote(call.recv, recv_n * es);
    call.seq = ++c->seq;
#ifdef FOLDNORM_MPI
    if (c->mpi != MPI_COMM_NULL) return collective_mpi(call, c, W, send_n, recv_n);
#endif
    {
        std::lock_guard<std::mutex> lock(g.mu);
        g.calls[r] = call;
    }
    barrier(c, kind_name(call.kind)); // every rank has posted its call
    check_calls(call, g.calls.data(), W, r);
    std::vector<const void *> sends(W);
    for (int q = 0; q < W; q++) sends[q] = g.calls[q].send;
    const std::vector<double> out = compute(call, sends.data(), W, r, recv_n);
    barrier(c, kind_name(call.kind)); // every rank has read every send buffer
    for (size_t i = 0; i < recv_n; i++) store(call.type, call.recv, i, out[i]);
    return ncclSuccess;
}

// the checks at the call; the collective in the stream's order: at once on
// stream 0, else when the stream's queue runs it
ncclResult_t collective(Call call, ncclComm_t c, cudaStream_t stream) {
    if (c == nullptr) return ncclInvalidArgument;
    emu::check_stream(stream, kind_name(call.kind));
    const int W = c->group->world, r = c->rank;
    const size_t es = type_bytes(call.type);
    const size_t send_n = call.kind == REDUCE_SCATTER ? call.count * W : call.count;
    const size_t recv_n = call.kind == ALL_GATHER ? call.count * W : call.count;
    if (call.count > 0) {
        if (call.kind != BROADCAST || r == call.root) emu::check_device_range(call.send, send_n * es, kind_name(call.kind));
        emu::check_device_range(call.recv, recv_n * es, kind_name(call.kind));
    }
    if (emu::stream_capturing(stream)) { // recorded: the graph's launch queues it (emu_graph.cpp)
        emu::capture_record(stream, kind_name(call.kind), [=](cudaStream_t s) {
            emu::stream_submit(s, kind_name(call.kind), [=] { run_collective(call, c); });
        });
        return ncclSuccess;
    }
    emu::stream_submit(stream, kind_name(call.kind), [=] { run_collective(call, c); });
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
        fprintf(stderr, "emulated NCCL: the unique id was not made by the emulated ncclGetUniqueId\n");
        return ncclInvalidUsage;
    }
#ifdef FOLDNORM_MPI
    // ranks as processes: MPI is up with one process per rank
    int mpi_up = 0, mpi_world = 0;
    mpi_check(MPI_Initialized(&mpi_up), "MPI_Initialized");
    if (mpi_up) mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &mpi_world), "MPI_Comm_size");
    if (nranks > 1 && mpi_world == nranks) {
        auto g = std::make_shared<Group>();
        g->world = nranks;
        *comm = new emu_nccl_comm{g, rank, 0};
        mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &(*comm)->mpi), "MPI_Comm_dup");
        // every rank holds rank 0's id
        char first[sizeof(id.internal)];
        memcpy(first, id.internal, sizeof(first));
        mpi_check(MPI_Bcast(first, (int)sizeof(first), MPI_CHAR, 0, (*comm)->mpi), "MPI_Bcast");
        if (memcmp(first, id.internal, sizeof(first)) != 0) {
            fprintf(stderr, "emulated NCCL: rank %d joins with another unique id than rank 0\n", rank);
            return ncclInvalidUsage;
        }
        return ncclSuccess;
    }
#endif
    if (key.rfind("emu-nccl-" + std::to_string((int)getpid()) + "-", 0) != 0) {
        fprintf(stderr, "emulated NCCL: the unique id was made by another process: ranks in "
                "processes of their own need a build with MPI, run by mpirun without -pf "
                "(else ranks are threads: EMU_RANKS)\n");
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
#ifdef FOLDNORM_MPI
    if (comm->mpi != MPI_COMM_NULL) mpi_check(MPI_Comm_free(&comm->mpi), "MPI_Comm_free");
#endif
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
    return collective(Call{ALL_REDUCE, send, recv, count, type, op, 0, 0}, comm, stream);
}
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recv_count,
                               ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
    return collective(Call{REDUCE_SCATTER, send, recv, recv_count, type, op, 0, 0}, comm, stream);
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t send_count, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
    return collective(Call{ALL_GATHER, send, recv, send_count, type, ncclSum, 0, 0}, comm, stream);
}
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream) {
    return collective(Call{BROADCAST, send, recv, count, type, ncclSum, root, 0}, comm, stream);
}
