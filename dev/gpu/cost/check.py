"""The model's issued bytes and FLOPs held to the emulator's counts: the
table an emulated program prints at exit with EMU_TRAFFIC=1
(dev/cuda/emu/emu_traffic.cpp: kernel, launches, bytes read, bytes written,
mma, GEMM FLOPs), kernel by kernel. Both sides are integer counts of the same
accesses, so they must agree exactly, except where a tolerance names its
reason (`tolerances`)."""

from calls import group


def parse_traffic(text):
    """{kernel: (launches, read, written, mma, gemm_flops)} of every traffic table in text"""
    rows, inside = {}, False
    for line in text.splitlines():
        if line.startswith("emulated global-memory traffic"):
            inside = True
            continue
        if not inside or line.startswith("kernel ") or not line.strip():
            continue
        parts = line.rsplit(None, 5)
        if len(parts) != 6 or not all(p.isdigit() for p in parts[1:]):
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
    for name in sorted(set(model) | set(counted)):
        m = model.get(name)
        want = (m["launches"], m["read"], m["written"], m["mma"], m["gemm"]) if m else (0,) * 5
        got = counted.get(name, (0,) * 5)
        rel, why = tolerances.get(name, (0.0, ""))
        diffs = []
        for label, g, w in zip(("launches", "read", "written", "mma", "GEMM FLOPs"), got, want):
            if g != w and (label == "launches" or abs(g - w) > rel * max(abs(w), 1)):
                diffs.append("%s counted %d, model %d" % (label, g, w))
        if diffs:
            fails += 1
            out("FAIL %-50s %s" % (name, "; ".join(diffs)))
        else:
            note = " (within %.1f %%: %s)" % (100 * rel, why) if rel and got != want else ""
            out("ok   %-50s %4d launches, %12d B read, %12d B written, %8d mma, %14d GEMM FLOPs%s"
                % ((name,) + tuple(got) + (note,)))
    return fails
