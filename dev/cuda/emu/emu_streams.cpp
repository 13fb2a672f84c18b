// CUDA emulation (a logic check, not a device run): stream order. The
// legacy default stream (0) runs its work at once, in host order. Work on a
// created stream is queued (a queue per stream) and runs only when something
// forces it, so it runs as late as CUDA allows and after later stream-0 work:
//   cudaStreamWaitEvent(0, e) and cudaEventSynchronize(e): e's stream up to e;
//   cudaStreamSynchronize(s): s (s = 0: every blocking stream's queue);
//   cudaDeviceSynchronize, cudaFree, cudaFreeHost, cudaStreamDestroy: all (its);
//   legacy semantics: any stream-0 work (a kernel, copy, memset, library call,
//   event record, synchronous cudaMemcpy) first runs the queued work of every
//   blocking stream (created without cudaStreamNonBlocking).
// cudaStreamWaitEvent(s, e) on a created stream queues a wait that, when s
// reaches it, runs e's stream up to e. So a stream-0 consumer that misses the
// wait for a queued producer reads what the producer had not written yet.
// Queued: cudaMemcpyAsync, cudaMemsetAsync and the NCCL collectives. Kernels,
// cuBLAS and cuDNN calls on a created stream run at the call, after the
// stream's queue. A stream that captures a CUDA graph runs nothing: its work
// is recorded and issued again, in order, by cudaGraphLaunch (emu_graph.cpp).
// The other direction (a created stream's work that misses the wait for
// stream-0 work) cannot show in the numbers, since stream-0 work is done
// when the host queues anything: the race detector (emu_race.cpp) stamps
// each device write with the stream-0 operation that made it, and a queued
// operation checks what it touches against the last stream-0 operation its
// waits order it after (stream_order_bound).
// State is per OS thread, as the scheduler's (ranks as threads).
#include <deque>
#include <functional>
#include <map>

#include "emu_internal.h"
#include "emu_race.h"

namespace emu {
namespace {

struct Entry {
    bool is_wait;             // a cudaStreamWaitEvent: run mark's stream up to mark
    StreamMark mark;
    std::function<void()> op; // else the work
    const char *what;
    unsigned long long bound; // the last stream-0 operation ordered before it
};

struct Queue {
    bool blocking = true;
    std::deque<Entry> entries;
    unsigned long long submitted = 0, done = 0;
    unsigned long long bound = 0; // the last stream-0 operation ordered before the next entry
};

thread_local std::map<cudaStream_t, Queue> queues;
thread_local unsigned long long legacy_ops = 0;  // stream-0 operations so far (positions 1..)
thread_local unsigned long long host_known = 0;  // the last stream-0 operation the host waited for
thread_local unsigned long long running_bound = 0; // of the queued operation running now
thread_local bool running_queued = false;

Queue &queue_of(cudaStream_t s) {
    auto it = queues.find(s);
    if (it != queues.end()) return it->second;
    Queue &q = queues[s];
    q.blocking = s->blocking;
    q.bound = host_known;
    return q;
}

void run_until(cudaStream_t s, unsigned long long upto);

void run_to_mark(const StreamMark &m) {
    if (m.stream != nullptr) run_until(m.stream, m.pos);
}

// runs s's queued entries until `upto` of them are done
void run_until(cudaStream_t s, unsigned long long upto) {
    auto it = queues.find(s);
    if (it == queues.end()) return;
    Queue &q = it->second;
    while (q.done < upto && !q.entries.empty()) {
        Entry e = std::move(q.entries.front());
        q.entries.pop_front();
        if (e.is_wait) {
            run_to_mark(e.mark);
        } else {
            const bool was_queued = running_queued;
            const unsigned long long was_bound = running_bound;
            running_queued = true;
            running_bound = e.bound;
            race::legacy_op_begins(0, e.what); // its writes are no stream-0 operation's
            e.op();
            running_queued = was_queued;
            running_bound = was_bound;
        }
        q.done++;
    }
}

void run_blocking_streams() {
    for (auto &kv : queues) {
        if (kv.second.blocking) run_until(kv.first, kv.second.submitted);
    }
}

} // namespace

void stream_created(cudaStream_t s) { queue_of(s); }

void stream_destroyed(cudaStream_t s) {
    auto it = queues.find(s);
    if (it == queues.end()) return;
    run_until(s, it->second.submitted); // its work completes (CUDA: after the call returns)
    queues.erase(s);
}

void stream_op_now(cudaStream_t s, const char *what) {
    if (s == nullptr) {
        capture_check_legacy(what); // not while a blocking stream captures (emu_graph.cpp)
        run_blocking_streams(); // legacy: after every blocking stream's work queued so far
        ++legacy_ops;
        race::legacy_op_begins(legacy_ops, what);
    } else {
        run_until(s, queue_of(s).submitted);
        race::legacy_op_begins(0, what);
    }
}

void stream_submit(cudaStream_t s, const char *what, std::function<void()> op) {
    if (s == nullptr) {
        stream_op_now(s, what);
        op();
        return;
    }
    Queue &q = queue_of(s);
    // a blocking stream's work follows the stream-0 work queued before it (done at once)
    if (q.blocking && legacy_ops > q.bound) q.bound = legacy_ops;
    if (host_known > q.bound) q.bound = host_known;
    q.entries.push_back(Entry{false, StreamMark{}, std::move(op), what, q.bound});
    q.submitted++;
}

StreamMark stream_mark(cudaStream_t s) {
    if (s == nullptr) {
        run_blocking_streams(); // an event record is stream-0 work
        ++legacy_ops;
        return StreamMark{nullptr, legacy_ops, legacy_ops};
    }
    Queue &q = queue_of(s);
    if (host_known > q.bound) q.bound = host_known;
    return StreamMark{s, q.submitted, q.bound};
}

void stream_wait(cudaStream_t s, const StreamMark &m) {
    if (s == nullptr) {
        run_to_mark(m); // stream 0 runs at once: the marked work first
        return;
    }
    Queue &q = queue_of(s);
    if (m.bound > q.bound) q.bound = m.bound;
    q.entries.push_back(Entry{true, m, nullptr, "cudaStreamWaitEvent", q.bound});
    q.submitted++;
}

void stream_host_waits(const StreamMark &m) {
    run_to_mark(m);
    if (m.bound > host_known) host_known = m.bound;
}

void stream_synchronize(cudaStream_t s) {
    if (s == nullptr) {
        run_blocking_streams();
        host_known = legacy_ops;
        return;
    }
    Queue &q = queue_of(s);
    run_until(s, q.submitted);
    if (q.bound > host_known) host_known = q.bound;
}

void streams_synchronize_all() {
    for (auto &kv : queues) run_until(kv.first, kv.second.submitted);
    host_known = legacy_ops;
}

bool stream_op_queued() { return running_queued; }
unsigned long long stream_order_bound() { return running_bound; }

} // namespace emu
