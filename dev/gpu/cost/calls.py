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
  - shared_read, shared_written: shared-memory bytes issued, per lane
    (ldmatrix's 128 B a warp-wide 8x8 matrix included), as the emulator
    counts them; None where the model does not follow the kernel's shared
    memory (the check then compares nothing for that column);
  - counted: False for what the emulator's table leaves out (memsets).
The roofline of a call is its launches times a fixed cost plus the slowest
of its units; it uses the unique bytes (the issued ones are an upper bound
on HBM traffic with no cache reuse at all, reported beside). Two
calibrations (CALIBRATIONS): issue 27's, the first, and issue 36's, which
adds a shared-memory roof, charges mma.sync at FlashAttention-2's H100 rate
and gives every launch a latency floor.
"""

from dataclasses import dataclass

# H200 (SXM, 132 SMs): what a well-made kernel can sustain, not the data sheet
TENSOR_FLOPS = 790e12  # bf16 dense through cuBLASLt, usable (peak 989.4e12)
FMA_FLOPS = 60e12      # fp32 FMA (peak 67e12)
SFU_OPS = 4e12         # exp2/tanh: 16 a clock an SM at ~1.9 GHz
HBM_BYTES = 4e12       # of 4.8e12
LAUNCH_S = 3e-6        # per launch: launch, ramp-up and drain, not overlapped
PEAK_BF16 = 989.4e12   # MFU's denominator (H100/H200 SXM dense bf16, llm.c's figure for H100 SXM)
SMS = 132              # H200 SMs (grid sizes that depend on the device)
MMA_FLOPS = 2 * 16 * 8 * 16
CLOCK_HZ = 1.98e9      # H100/H200 SXM boost clock
# shared memory: 32 banks of 4 bytes an SM, one wavefront (128 B) a clock,
# 132 SMs at 1.98 GHz: 33.45 TB/s aggregate (bank-conflict-free accesses)
SMEM_BYTES = SMS * 128 * CLOCK_HZ
# mma.sync (Ampere-style warp MMA, no wgmma/TMA) on H100: FlashAttention-2's
# best forward + backward, 335 TFLOP/s at head size 128 (Dao 2023, "FlashAttention-2:
# Faster Attention with Better Parallelism and Work Partitioning", arXiv
# 2307.08691, section 4.1 and figure 7: the A100 kernels run unchanged on an
# H100 SXM5): 34 % of the 989.4 TFLOP/s peak. An upper bound for our kernels
# (head size 64, T 1024, plainer pipelining)
MMA_SYNC_FLOPS = 335e12
# a launch's device time is at least this: a first global round trip
# (~600-800 clocks, 0.4 us at 1.98 GHz), a block reduction through shared
# memory with its barriers, the dependent store, and the grid's drain: the
# ~2 us an empty-to-tiny kernel occupies the device beyond the 3 us of launch
# gap (what the 97 tiny reduce launches of a d12 step cost)
KERNEL_MIN_S = 2e-6

# name: (mma.sync FLOP/s, shared-memory bytes/s or None, latency floor a launch)
CALIBRATIONS = {"issue27": (TENSOR_FLOPS, None, 0.0),
                "issue36": (MMA_SYNC_FLOPS, SMEM_BYTES, KERNEL_MIN_S)}
calibration = "issue36"


def use_calibration(name):
    """the roofline's constants from now on (issue27: before issue 36)"""
    global calibration
    if name not in CALIBRATIONS:
        raise ValueError("no calibration " + name)
    calibration = name


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
    shared_read: int = None
    shared_written: int = None

    @property
    def tensor(self):
        return self.gemm + self.mma * MMA_FLOPS

    @property
    def shared(self):
        """shared-memory bytes issued (0 where not modelled)"""
        return (self.shared_read or 0) + (self.shared_written or 0)

    def unit_seconds(self, issued=False):
        """seconds each unit needs: tensor (cuBLAS GEMMs and mma.sync at their
        own rates), fma, sfu, hbm, smem, and the launches' latency floor"""
        mma_rate, smem_rate, floor = CALIBRATIONS[calibration]
        bytes_ = self.read + self.written if issued else self.unique
        units = {"tensor": self.gemm / TENSOR_FLOPS + self.mma * MMA_FLOPS / mma_rate,
                 "fma": self.fma / FMA_FLOPS, "sfu": self.sfu / SFU_OPS, "hbm": bytes_ / HBM_BYTES}
        if smem_rate:
            units["smem"] = self.shared / smem_rate
        if floor:
            units["latency"] = self.launches * floor
        return units

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
                          "shared_read": 0, "shared_written": 0,
                          "seconds": 0.0, "issued_seconds": 0.0, "bounds": set(), "counted": c.counted}
        g["launches"] += c.launches
        for f in ("read", "written", "unique", "gemm", "mma", "fma", "sfu"):
            g[f] += getattr(c, f)
        for f in ("shared_read", "shared_written"):  # None once any call of the group is not modelled
            g[f] = None if g[f] is None or getattr(c, f) is None else g[f] + getattr(c, f)
        g["tensor"] += c.tensor
        g["seconds"] += c.seconds()
        g["issued_seconds"] += c.seconds(issued=True)
        g["bounds"].add(c.bound())
    return out
