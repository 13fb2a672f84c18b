// CUDA emulation (a logic check, not a device run): a kernel launch's
// arguments bound by value. kernel<<<cfg>>>(args) is rewritten
// (rewrite_launches.py) into launch(..., bind_kernel(&kernel)(args)): the
// arguments are evaluated once, at the launch, and converted to the kernel's
// parameter types as a call converts them, as the device copies them into
// the launch's parameter buffer. A launch on a stream that is capturing a
// CUDA graph (emu_graph.cpp) is recorded with that copy and replayed by
// cudaGraphLaunch with the same values: a host variable changed after the
// capture does not reach the graph, as on the device.
#ifndef FOLDNORM_EMU_LAUNCH_H
#define FOLDNORM_EMU_LAUNCH_H

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace emu {

// a kernel and its arguments, already in its parameter types
template <typename... P> struct KernelCall {
    void (*kernel)(P...);
    std::tuple<std::decay_t<P>...> args;
    void operator()() const { std::apply(kernel, args); }
};

// bind_kernel(&k)(args): a call's conversions (NULL or 0 to a pointer, int to size_t) at the launch
template <typename... P> struct KernelBinder {
    void (*kernel)(P...);
    KernelCall<P...> operator()(P... args) const {
        return KernelCall<P...>{kernel, std::tuple<std::decay_t<P>...>(args...)};
    }
};
template <typename... P> inline KernelBinder<P...> bind_kernel(void (*kernel)(P...)) {
    return KernelBinder<P...>{kernel};
}

// emu_graph.cpp: whether s is capturing a graph on this thread; the
// operation `what`, recorded: the graph's launch calls issue(its stream)
bool stream_capturing(cudaStream_t s);
void capture_record(cudaStream_t s, const char *what, std::function<void(cudaStream_t)> issue);
// the launch checks a device makes at the call (emu_fibers.cpp)
void check_launch(const char *name, const void *kernel, const LaunchConfig &cfg);

template <typename Call>
inline void launch(const char *name, const char *instance, const void *kernel,
                   const LaunchConfig &cfg, Call &&call) {
    typedef std::decay_t<Call> C;
    auto body = [](void *f) { (*static_cast<C *>(f))(); };
    if (stream_capturing(cfg.stream)) { // recorded, with its arguments by value
        check_launch(name, kernel, cfg);
        capture_record(cfg.stream, name, [name, instance, kernel, cfg, bound = C(call), body](cudaStream_t s) {
            LaunchConfig on = cfg;
            on.stream = s;
            C copy = bound;
            run_grid(name, instance, kernel, on, body, &copy);
        });
        return;
    }
    run_grid(name, instance, kernel, cfg, body, &call);
}

} // namespace emu

#endif
