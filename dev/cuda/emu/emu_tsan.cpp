// CUDA emulation (a logic check, not a device run): the entry points that
// g++'s -fsanitize=thread instrumentation calls, linked instead of TSan's
// runtime (the emulated programs' objects are instrumented, the emulator's
// are not). Outside a kernel's fiber a hook is one thread-local test; inside,
// it hands the access to the race detector (emu_race.cpp) with its code
// address. The objects reference exactly these (nm -u); a new reference
// (an __tsan_atomic* for a std::atomic in device code, say) fails the link.
#include "emu_race.h"

namespace {
inline void hook(const void *p, size_t n, emu::race::Access kind, const void *pc) {
    if (__builtin_expect(emu::race::active, 0)) emu::race::access(p, n, kind, pc);
}
} // namespace

#define EMU_TSAN_HOOKS(n)                                                                       \
    extern "C" void __tsan_read##n(void *p) {                                                   \
        hook(p, n, emu::race::READ, __builtin_return_address(0));                               \
    }                                                                                           \
    extern "C" void __tsan_write##n(void *p) {                                                  \
        hook(p, n, emu::race::WRITE, __builtin_return_address(0));                              \
    }                                                                                           \
    extern "C" void __tsan_unaligned_read##n(void *p) {                                         \
        hook(p, n, emu::race::READ, __builtin_return_address(0));                               \
    }                                                                                           \
    extern "C" void __tsan_unaligned_write##n(void *p) {                                        \
        hook(p, n, emu::race::WRITE, __builtin_return_address(0));                              \
    }
EMU_TSAN_HOOKS(1)
EMU_TSAN_HOOKS(2)
EMU_TSAN_HOOKS(4)
EMU_TSAN_HOOKS(8)
EMU_TSAN_HOOKS(16)

// block copies (structs wider than 16 bytes)
extern "C" void __tsan_read_range(void *p, unsigned long n) {
    hook(p, n, emu::race::READ, __builtin_return_address(0));
}
extern "C" void __tsan_write_range(void *p, unsigned long n) {
    hook(p, n, emu::race::WRITE, __builtin_return_address(0));
}

// every instrumented object's constructor calls __tsan_init; function entry
// and exit are not instrumented (--param=tsan-instrument-func-entry-exit=0)
// and virtual calls have no device meaning: nothing to do
extern "C" void __tsan_init(void) {}
extern "C" void __tsan_func_entry(void *) {}
extern "C" void __tsan_func_exit(void) {}
extern "C" void __tsan_vptr_update(void **, void *) {}
extern "C" void __tsan_vptr_read(void **) {}
