// CUDA emulation (a logic check, not a device run): cp.async, the copies from
// global to shared memory that run beside the thread (PTX ISA 9.0, "Data
// Movement and Conversion Instructions: cp.async", 9.7.9.25), as
// llmc/cuda/cp_async.cuh issues them (dev/cuda/emu/emu_async.cpp). A copy is
// queued at issue and lands at the cp.async.wait_group / wait_all that covers
// it, not before: the destination keeps its old bytes (NaN when never
// written) until then. The race detector (emu_race.cpp) sees the copy's
// destination as written and its source as read at issue and again at the
// landing, and reports any access to a destination between the two, and
// any write to a source between the two.
#ifndef FOLDNORM_EMU_ASYNC_H
#define FOLDNORM_EMU_ASYNC_H

namespace emu {
// cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_bytes: bytes 4, 8 or
// 16 (cg: 16 only); the first src_bytes (<= bytes) come from src, the rest
// are zero (src is not read when src_bytes is 0)
void cp_async(void *dst, const void *src, int bytes, int src_bytes, bool cache_global);
// cp.async.commit_group: the thread's copies since the last commit become a group
void cp_async_commit();
// cp.async.wait_group n: every group but the newest n committed lands;
// n < 0: cp.async.wait_all (commit, then wait for every group)
void cp_async_wait(int n);
// the running thread leaves the kernel: aborts when copies are still pending
void cp_async_thread_exits();
} // namespace emu

#endif
