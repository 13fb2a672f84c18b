// CUDA emulation (a logic check, not a device run): CUDA graphs by stream
// capture. Between cudaStreamBeginCapture(s) and cudaStreamEndCapture(s) the
// work queued on s is recorded, not run: kernel launches (with their
// arguments copied at the launch, emu_launch.h: a pointer by value, a host
// scalar as it was then), cudaMemcpyAsync / cudaMemsetAsync, the cuBLAS(Lt)
// and cuDNN calls (their descriptors read at the call) and the NCCL
// collectives. cudaGraphLaunch(exec, t) issues the recorded operations again,
// in order, on stream t, through the same paths as eager work (launch checks,
// stream order, page-locked copies, the race detector), so a replay equals
// the eager sequence exactly when nothing captured by value went stale.
// The capture rules a device enforces are enforced here with CUDA's codes,
// naming the call, and they invalidate the capture (cudaStreamEndCapture then
// returns cudaErrorStreamCaptureInvalidated):
//   cudaErrorStreamCaptureUnsupported: cudaMalloc, cudaMallocHost, cudaFree,
//     cudaFreeHost, a synchronous cudaMemcpy, cudaDeviceSynchronize (unsafe
//     calls, allowed in cudaStreamCaptureModeRelaxed); cudaStreamSynchronize
//     or cudaEventSynchronize of the capturing stream; a captured copy from
//     or to pageable host memory;
//   cudaErrorStreamCaptureImplicit: work on the legacy stream 0 (a kernel, a
//     copy, a memset, a library call) while a blocking stream captures.
// The project's rule that attributes and occupancy are set up once, at init
// (llmc/cuda/norm.cuh, smem_optin.cuh), is enforced too: cudaFuncSetAttribute
// and cudaOccupancyMaxActiveBlocksPerMultiprocessor during a capture are
// refused (a device allows them; a step that makes them is not set up once).
// Not emulated (refused, saying so): fork/join captures over several streams
// (cudaEventRecord on, cudaStreamWaitEvent into a capturing stream), a graph
// launched into a capturing stream. Capture state is per host thread (ranks
// as threads): cudaStreamCaptureModeGlobal's ban on other threads' unsafe
// calls is not modelled.
#include <stdio.h>
#include <stdlib.h>

#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "cuda_runtime.h"
#include "emu_internal.h"

namespace {

struct Node {
    const char *what;
    std::function<void(cudaStream_t)> issue;
};

} // namespace

struct emu_graph {
    std::vector<Node> nodes;
};
struct emu_graph_exec {
    std::vector<Node> nodes;
};

namespace emu {
namespace {

struct Capture {
    emu_graph *graph;
    cudaStreamCaptureMode mode;
    cudaError_t invalidated; // cudaSuccess while valid
};

thread_local std::map<cudaStream_t, Capture> captures;
std::mutex graphs_mutex;
std::set<emu_graph *> graphs;
std::set<emu_graph_exec *> execs;

const char *code_name(cudaError_t e) { return cudaGetErrorName(e); }

cudaError_t refuse(Capture &c, cudaError_t code, const char *call, const char *why) {
    fprintf(stderr, "emulated CUDA: %s during stream capture: %s (%s); the capture is invalidated\n",
            call, code_name(code), why);
    if (c.invalidated == cudaSuccess) c.invalidated = code;
    return code;
}

} // namespace

bool stream_capturing(cudaStream_t s) { return s != nullptr && captures.count(s) > 0; }
bool stream_capturing_any() { return !captures.empty(); }

void capture_record(cudaStream_t s, const char *what, std::function<void(cudaStream_t)> issue) {
    auto it = captures.find(s);
    if (it == captures.end()) device_abort("capture_record(%s): stream %p is not capturing", what, (void *)s);
    it->second.graph->nodes.push_back(Node{what, std::move(issue)});
}

cudaError_t capture_refuses(const char *call, cudaStream_t s, bool unsafe) {
    for (auto &kv : captures) {
        Capture &c = kv.second;
        if (unsafe) {
            if (c.mode == cudaStreamCaptureModeRelaxed) continue;
            return refuse(c, cudaErrorStreamCaptureUnsupported, call,
                          "a potentially unsafe call, allowed only in cudaStreamCaptureModeRelaxed");
        }
        if (s != nullptr && s == kv.first) {
            return refuse(c, cudaErrorStreamCaptureUnsupported, call, "it waits for the capturing stream");
        }
        if (s == nullptr && kv.first->blocking) {
            return refuse(c, cudaErrorStreamCaptureImplicit, call,
                          "legacy-stream work would depend on a capturing blocking stream");
        }
    }
    return cudaSuccess;
}

cudaError_t capture_invalidate(cudaStream_t s, cudaError_t code, const char *call, const char *why) {
    auto it = captures.find(s);
    if (it == captures.end()) device_abort("capture_invalidate(%s): stream %p is not capturing", call, (void *)s);
    return refuse(it->second, code, call, why);
}

void capture_check_legacy(const char *what) {
    if (capture_refuses(what, nullptr, false) != cudaSuccess) {
        device_abort("%s on the legacy stream while a blocking stream captures a graph "
                     "(cudaErrorStreamCaptureImplicit)", what);
    }
}

void stream_run(cudaStream_t stream, const char *what, std::function<void()> op) {
    if (!stream_capturing(stream)) {
        op();
        return;
    }
    capture_record(stream, what, [what, op](cudaStream_t s) {
        check_stream(s, what);
        stream_op_now(s, what);
        op();
    });
}

} // namespace emu

using emu::device_abort;

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
    if (s == nullptr) return cudaErrorStreamCaptureUnsupported; // the legacy stream cannot capture
    emu::check_stream(s, "cudaStreamBeginCapture");
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed) {
        return cudaErrorInvalidValue;
    }
    if (!emu::captures.empty()) {
        fprintf(stderr, "emulated CUDA: cudaStreamBeginCapture: a capture is under way on this "
                "thread (several at once are not emulated)\n");
        return cudaErrorIllegalState;
    }
    emu_graph *g = new emu_graph();
    {
        std::lock_guard<std::mutex> lock(emu::graphs_mutex);
        emu::graphs.insert(g);
    }
    emu::captures[s] = emu::Capture{g, mode, cudaSuccess};
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) {
    emu::check_stream(s, "cudaStreamEndCapture");
    auto it = emu::captures.find(s);
    if (it == emu::captures.end()) return cudaErrorIllegalState;
    const emu::Capture c = it->second;
    emu::captures.erase(it);
    if (c.invalidated != cudaSuccess) {
        cudaGraphDestroy(c.graph);
        *graph = nullptr;
        return cudaErrorStreamCaptureInvalidated;
    }
    *graph = c.graph;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status) {
    emu::check_stream(s, "cudaStreamIsCapturing");
    auto it = s != nullptr ? emu::captures.find(s) : emu::captures.end();
    if (it == emu::captures.end()) *status = cudaStreamCaptureStatusNone;
    else *status = it->second.invalidated == cudaSuccess ? cudaStreamCaptureStatusActive
                                                         : cudaStreamCaptureStatusInvalidated;
    return cudaSuccess;
}

static void check_graph(cudaGraph_t g, const char *what) {
    std::lock_guard<std::mutex> lock(emu::graphs_mutex);
    if (emu::graphs.count(g) == 0) device_abort("%s: graph %p was never captured or is destroyed", what, (void *)g);
}

static void check_exec(cudaGraphExec_t e, const char *what) {
    std::lock_guard<std::mutex> lock(emu::graphs_mutex);
    if (emu::execs.count(e) == 0) device_abort("%s: graph exec %p was never instantiated or is destroyed", what, (void *)e);
}

// the node count only (nodes == NULL), as the trainers ask it
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *count) {
    check_graph(graph, "cudaGraphGetNodes");
    if (count == nullptr) return cudaErrorInvalidValue;
    if (nodes != nullptr) {
        fprintf(stderr, "emulated CUDA: cudaGraphGetNodes: only the count (nodes = NULL) is emulated\n");
        return cudaErrorInvalidValue;
    }
    *count = graph->nodes.size();
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) {
    if (exec == nullptr) return cudaErrorInvalidValue;
    check_graph(graph, "cudaGraphInstantiate");
    if (flags != 0) {
        fprintf(stderr, "emulated CUDA: cudaGraphInstantiate: flags %llu are not emulated\n", flags);
        return cudaErrorInvalidValue;
    }
    emu_graph_exec *e = new emu_graph_exec{graph->nodes}; // independent of the graph from here on
    std::lock_guard<std::mutex> lock(emu::graphs_mutex);
    emu::execs.insert(e);
    *exec = e;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph,
                                          unsigned long long flags) {
    return cudaGraphInstantiate(exec, graph, flags);
}

// the recorded operations issued on s in capture order: each as the eager call
// would be (a kernel runs after s's queue, a copy joins it, ...)
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
    check_exec(exec, "cudaGraphLaunch");
    emu::check_stream(s, "cudaGraphLaunch");
    if (emu::stream_capturing(s)) {
        fprintf(stderr, "emulated CUDA: cudaGraphLaunch into a capturing stream (a child graph) is not emulated\n");
        return cudaErrorStreamCaptureUnsupported;
    }
    if (s == nullptr) {
        const cudaError_t e = emu::capture_refuses("cudaGraphLaunch", nullptr, false);
        if (e != cudaSuccess) return e;
    }
    for (const Node &n : exec->nodes) n.issue(s);
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    if (exec == nullptr) return cudaSuccess;
    {
        std::lock_guard<std::mutex> lock(emu::graphs_mutex);
        if (emu::execs.erase(exec) == 0) device_abort("cudaGraphExecDestroy(%p): no such graph exec", (void *)exec);
    }
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    if (graph == nullptr) return cudaSuccess;
    {
        std::lock_guard<std::mutex> lock(emu::graphs_mutex);
        if (emu::graphs.erase(graph) == 0) device_abort("cudaGraphDestroy(%p): no such graph", (void *)graph);
    }
    delete graph;
    return cudaSuccess;
}
