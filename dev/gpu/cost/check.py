"""The model's issued bytes and FLOPs held to the emulator's counts: the
table an emulated program prints at exit with EMU_TRAFFIC=1
(dev/cuda/emu/emu_traffic.cpp: kernel, launches, bytes read, bytes written,
mma, GEMM FLOPs, shared-memory bytes read and written), kernel by kernel.
Both sides are integer counts of the same accesses, so they must agree
exactly, except where a tolerance names its reason (`tolerances`). The
shared-memory columns are compared where the model follows the kernel's
shared memory (Call.shared_read not None); a kernel with counted shared
traffic that the model does not follow is listed as such, not failed."""

from calls import group


def parse_traffic(text):
    """{kernel: (launches, read, written, mma, gemm_flops, shared_read, shared_written)} of
    every traffic table in text"""
    rows, inside = {}, False
    for line in text.splitlines():
        if line.startswith("emulated global-memory traffic"):
            inside = True
            continue
        if not inside or line.startswith("kernel ") or not line.strip():
            continue
        parts = line.rsplit(None, 7)
        if len(parts) != 8 or not all(p.isdigit() for p in parts[1:]):
            inside = False
            continue
        rows[parts[0].strip()] = tuple(int(p) for p in parts[1:])
    return rows


def compare(calls, counted, tolerances=None, out=print):
    """every counted kernel against the model's calls of that name; returns the
    number of mismatches. tolerances: {kernel: (relative, why)}"""
    tolerances = tolerances or {}
    model = group([c for c in calls if c.counted], lambda c: c.name)
    fails = 0
    labels = ("launches", "read", "written", "mma", "GEMM FLOPs", "shared read", "shared written")
    for name in sorted(set(model) | set(counted)):
        m = model.get(name)
        want = ((m["launches"], m["read"], m["written"], m["mma"], m["gemm"], m["shared_read"],
                 m["shared_written"]) if m else (0,) * 7)
        got = counted.get(name, (0,) * 7)
        rel, why = tolerances.get(name, (0.0, ""))
        diffs = []
        for label, g, w in zip(labels, got, want):
            if w is None:
                continue  # shared memory the model does not follow
            if g != w and (label == "launches" or abs(g - w) > rel * max(abs(w), 1)):
                diffs.append("%s counted %d, model %d" % (label, g, w))
        if diffs:
            fails += 1
            out("FAIL %-50s %s" % (name, "; ".join(diffs)))
        else:
            note = " (within %.1f %%: %s)" % (100 * rel, why) if rel and got != want else ""
            if want[5] is None and got[5] + got[6] > 0:
                shared = "%12d B shared (not modelled)" % (got[5] + got[6])
            else:
                shared = "%12d B shared" % (got[5] + got[6])
            out("ok   %-50s %4d launches, %12d B read, %12d B written, %8d mma, %14d GEMM FLOPs, %s%s"
                % ((name,) + tuple(got[:5]) + (shared, note)))
    return fails
