"""One kernel launch or library call of a training step, and its H200 roofline.

A Call carries what the cost model says a launch (or `launches` identical
ones) asks of the device:
  - read, written: bytes issued, every load and store of the kernel's threads
    (tile re-reads, the same word read by 32 lanes, all counted): what the
    emulator counts with EMU_TRAFFIC=1 (dev/cuda/emu/emu_traffic.h);
  - unique: bytes once, each tensor the kernel touches read or written once:
    what HBM must move when every re-read hits a cache;
  - tensor: FLOPs on tensor cores (cuBLASLt GEMMs, 2 m n k, and mma.sync,
    4096 a warp-wide m16n8k16); gemm and mma split them as the emulator does;
  - fma: fp32 FLOPs on the CUDA cores (hand counts from the loops: the
    emulator sees no arithmetic); sfu: exp/log/tanh evaluations;
  - counted: False for what the emulator's table leaves out (memsets).
The roofline of a call is its launches times a fixed cost plus the slowest
of its units; it uses the unique bytes (the issued ones are an upper bound
on HBM traffic with no cache reuse at all, reported beside).
"""

from dataclasses import dataclass

# H200 (SXM, 132 SMs): what a well-made kernel can sustain, not the data sheet
TENSOR_FLOPS = 790e12  # bf16 dense, usable (peak 989.4e12)
FMA_FLOPS = 60e12      # fp32 FMA (peak 67e12)
SFU_OPS = 4e12         # exp2/tanh: 16 a clock an SM at ~1.9 GHz
HBM_BYTES = 4e12       # of 4.8e12
LAUNCH_S = 3e-6        # per launch: launch, ramp-up and drain, not overlapped
PEAK_BF16 = 989.4e12   # MFU's denominator
SMS = 132              # H200 SMs (grid sizes that depend on the device)
MMA_FLOPS = 2 * 16 * 8 * 16


@dataclass
class Call:
    name: str          # the kernel as launched ("norm_backward_kernel<true>") or the library entry
    what: str          # its role in the step ("norm bwd", "matmul fc fwd", ...)
    read: int
    written: int
    unique: int
    gemm: int = 0      # FLOPs of cuBLAS/cuBLASLt GEMMs (tensor cores in bf16)
    mma: int = 0       # warp-wide mma.m16n8k16
    fma: int = 0
    sfu: int = 0
    launches: int = 1
    counted: bool = True

    @property
    def tensor(self):
        return self.gemm + self.mma * MMA_FLOPS

    def unit_seconds(self, issued=False):
        """seconds each unit needs: tensor, fma, sfu, hbm"""
        bytes_ = self.read + self.written if issued else self.unique
        return {"tensor": self.tensor / TENSOR_FLOPS, "fma": self.fma / FMA_FLOPS,
                "sfu": self.sfu / SFU_OPS, "hbm": bytes_ / HBM_BYTES}

    def seconds(self, issued=False):
        return self.launches * LAUNCH_S + max(self.unit_seconds(issued).values())

    def bound(self):
        units = self.unit_seconds()
        unit = max(units, key=units.get)
        return unit if units[unit] >= self.launches * LAUNCH_S else "launch"


def total_seconds(calls, issued=False):
    return sum(c.seconds(issued) for c in calls)


def group(calls, key):
    """calls merged by key(call), in order of first appearance; seconds summed per call"""
    out = {}
    for c in calls:
        k = key(c)
        g = out.get(k)
        if g is None:
            out[k] = g = {"name": c.name, "what": c.what, "launches": 0, "read": 0, "written": 0,
                          "unique": 0, "tensor": 0, "gemm": 0, "mma": 0, "fma": 0, "sfu": 0,
                          "seconds": 0.0, "issued_seconds": 0.0, "bounds": set(), "counted": c.counted}
        g["launches"] += c.launches
        for f in ("read", "written", "unique", "gemm", "mma", "fma", "sfu"):
            g[f] += getattr(c, f)
        g["tensor"] += c.tensor
        g["seconds"] += c.seconds()
        g["issued_seconds"] += c.seconds(issued=True)
        g["bounds"].add(c.bound())
    return out
