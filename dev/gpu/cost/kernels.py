"""The kernels and library calls the models share (llmc/cuda/*.cuh), bf16 builds.

Each function returns the Call of one launch at the given shape. The issued
bytes follow the kernel's loads and stores thread by thread (a value every
lane of a warp loads is 32 loads); they are what the emulator counts, and
cost_model.py check holds them to its table. XB: bytes of a floatX (bf16).
Shared-memory bytes are per lane as issued (a value 32 lanes read is 32
reads); NO_SHARED marks a kernel that has none.
"""

from calls import Call, SMS

XB = 2     # floatX: bf16
PACK = 8   # floatX values in a 16-byte pack
F32 = 4
NO_SHARED = dict(shared_read=0, shared_written=0)


def ceil_div(a, b):
    return -(-a // b)


# ---------------------------------------------------------------- cuBLASLt / cuBLAS
def gemm(what, m, n, k, d_bytes=XB, beta=False, bias=False, batch=1,
         name="cublasLtMatmul", aux_out=False, aux_in=False, bgrad=0):
    """D (m, n) = A (m, k) B (k, n) [+ beta C] [+ bias (m)]: the emulated library
    reads each operand once and writes D once (emu_blas.cpp: count_gemm); the
    GELU epilogues write (aux_out) or read (aux_in) the floatX pre-activation
    (m, n), a BGRAD epilogue writes bgrad fp32 sums"""
    r = XB * (m * k + k * n) + (d_bytes * m * n if beta else 0) + (XB * m if bias else 0) + \
        (XB * m * n if aux_in else 0)
    w = d_bytes * m * n + (XB * m * n if aux_out else 0) + F32 * bgrad
    return Call(name, what, batch * r, batch * w, batch * (r + w), gemm=batch * 2 * m * n * k)


def matmul_forward(what, N, IC, OC, bias=True):
    """out (N, OC) = inp (N, IC) W^T + b (matmul_forward_cuda)"""
    return [gemm(what + " fwd", OC, N, IC, bias=bias)]


def matmul_forward_gelu(what, N, IC, OC):
    """out = GELU(pre), pre = inp W^T + b kept: one GEMM (GELU_AUX_BIAS, -fe 1)"""
    return [gemm(what + " fwd + gelu", OC, N, IC, bias=True, aux_out=True)]


def matmul_backward_dgelu(what, N, IC, OC):
    """dpre = (dout W) GELU'(pre) and its column sums: one GEMM (DGELU_BGRAD, -fe 1)"""
    return [gemm(what + " bwd dx + dgelu + dbias", IC, N, OC, aux_in=True, bgrad=IC)]


def matmul_backward_weight_bgrad(what, N, IC, OC):
    """dW += dout^T inp (fp32, beta 1) and the column sums of dout (BGRADB, -fe 1)"""
    return [gemm(what + " bwd dW + dbias", IC, OC, N, d_bytes=F32, beta=True, bgrad=OC)]


def segments_accumulate(n, what="bias grads += epilogues' (a layer)"):
    """float_segments_accumulate_kernel: n fp32 values dst += src"""
    return Call("float_segments_accumulate_kernel", what, 2 * F32 * n, F32 * n, 3 * F32 * n,
                fma=n, **NO_SHARED)


def matmul_backward(what, N, IC, OC):
    """dinp = dout W (bf16), dW += dout^T inp (fp32, beta 1): matmul_backward_cuda"""
    return [gemm(what + " bwd dx", IC, N, OC),
            gemm(what + " bwd dW", IC, OC, N, d_bytes=F32, beta=True)]


# ---------------------------------------------------------------- elementwise
def params_to_x(what, n):
    """float_to_floatx_kernel: the bf16 copy of n fp32 parameters"""
    return Call("float_to_floatx_kernel", what, F32 * n, XB * n, (F32 + XB) * n, **NO_SHARED)


def gelu_forward(n):
    return Call("gelu_forward_kernel", "gelu fwd", XB * n, XB * n, 2 * XB * n, fma=15 * n, sfu=n,
                **NO_SHARED)


def gelu_backward(n):
    return Call("gelu_backward_kernel", "gelu bwd", 2 * XB * n, XB * n, 3 * XB * n, fma=25 * n,
                sfu=n, **NO_SHARED)


def memset(what, nbytes):
    """cudaMemsetAsync: not a kernel of the emulator's table"""
    return Call("cudaMemsetAsync", what, 0, nbytes, nbytes, counted=False)


# ---------------------------------------------------------------- norms (norm.cuh)
def norm_forward(N, C, layer, residual, what):
    """residual_norm_forward_kernel: a warp a row; pass 1 reads a (and b, writing
    a + b), LN's pass 2 re-reads x for the variance, pass 3 reads x, gain, bias
    and writes out; lane 0 writes mean (LN) and rstd"""
    row = XB * C
    reads = row * ((2 if residual else 1) + (1 if layer else 0) + 3)
    writes = row * ((1 if residual else 0) + 1) + F32 * (2 if layer else 1)
    unique = N * (row * (2 if residual else 1) + writes) + 2 * row
    name = "residual_norm_forward_kernel<%s>" % ("true" if layer else "false")
    return Call(name, what, N * reads, N * writes, unique, fma=N * C * (7 if layer else 5),
                **NO_SHARED)


def norm_backward_blocks(N, C, sms=SMS):
    """norm_backward_blocks: as many blocks as fit at once (shared memory 4 warps
    x 2C floats a block; 228 KiB an SM, 1 KiB reserved a block; 16 blocks of 128
    threads), never more than the rows need"""
    shared = 4 * 2 * C * F32
    per_sm = min(2048 // 128, (228 * 1024) // (shared + 1024), 32)
    return min(ceil_div(N, 4), per_sm * sms)


def norm_backward(N, C, layer, what, sms=SMS):
    """norm_backward_kernel + norm_partials_reduce_kernel. A warp a row: all 32
    lanes load mean (LN) and rstd; pass 1 reads inp, dout, gain; pass 2 reads
    them and dresidual, writes dresidual; a block writes its 2C partials.
    The reduce reads every block's partials and adds into dgain, dbias.
    Shared memory: a block zeroes its 4 warps' 2C sums, every row adds
    (reads and writes) its 2C values into its warp's, and the block's 2C
    partials read the 4 warps' sums; the reduce is column_sum's (a 32 x 16
    block per 32 columns of each half)."""
    blocks = norm_backward_blocks(N, C, sms)
    row = XB * C
    stats = 32 * F32 * (2 if layer else 1)
    kname = "norm_backward_kernel<%s>" % ("true" if layer else "false")
    acc = N * 2 * C * F32 + blocks * 4 * 2 * C * F32
    k = Call(kname, what, N * (stats + 7 * row), N * row + blocks * 2 * C * F32,
             N * (4 * row + F32 * (2 if layer else 1)) + row + blocks * 2 * C * F32,
             fma=N * C * 12, shared_read=acc, shared_written=acc)
    r = Call("norm_partials_reduce_kernel", what + " (partials)", (blocks + 1) * 2 * C * F32,
             2 * C * F32, (blocks + 2) * 2 * C * F32, fma=blocks * 2 * C,
             shared_read=2 * GROUP_SUM_READ * C,
             shared_written=2 * ceil_div(C, 32) * GROUP_SUMS_BYTES)
    return [k, r]


# ---------------------------------------------------------------- reductions (reduce.cuh)
# a (32 x 16) block's reduce of 32 columns: every thread writes its group's
# sum (16 x 32 floats), thread y = 0 of a valid column reads its 16
GROUP_SUMS_BYTES = 16 * 32 * F32
GROUP_SUM_READ = 16 * F32


def column_sum(N, OC, what):
    """column_sum_accumulate: partials of 64-row chunks (16-byte loads when
    OC % 8 == 0, else one value a thread), then the chunks summed into out"""
    chunks = ceil_div(N, 64)
    name = "column_sum_partials_kernel<%s>" % ("true" if OC % PACK == 0 else "false")
    p = Call(name, what, XB * N * OC, F32 * chunks * OC, XB * N * OC + F32 * chunks * OC,
             fma=N * OC, **NO_SHARED)
    r = Call("column_sum_reduce_kernel", what + " (partials)", F32 * (chunks + 1) * OC, F32 * OC,
             F32 * (chunks + 2) * OC, fma=chunks * OC, shared_read=GROUP_SUM_READ * OC,
             shared_written=ceil_div(OC, 32) * GROUP_SUMS_BYTES)
    return [p, r]


SUMSQ_BLOCKS = 512


def halving_tree_bytes(threads, value):
    """shared bytes read (= written) by a block's halving tree of `threads`
    values: each thread writes its own, each step's lower half reads two and
    writes one, thread 0 reads the total"""
    return threads * value + (threads - 1) * value, (threads - 1) * 2 * value + value


def sum_of_squares(n, accumulate=False):
    """sum_of_squares_device: n fp32 values in, 512 double partials out
    (sum_of_squares_partials_kernel), then one thread adds them in block order
    into the device scalar (sum_of_squares_total_kernel; with accumulate it
    reads the scalar first and adds)"""
    total_read = 8 * SUMSQ_BLOCKS + (8 if accumulate else 0)
    w, r = halving_tree_bytes(256, 8)  # 256 threads, doubles
    return [Call("sum_of_squares_partials_kernel", "grad norm", F32 * n, 8 * SUMSQ_BLOCKS,
                 F32 * n + 8 * SUMSQ_BLOCKS, fma=2 * n, shared_read=SUMSQ_BLOCKS * r,
                 shared_written=SUMSQ_BLOCKS * w),
            Call("sum_of_squares_total_kernel", "grad norm (partials)", total_read, 8,
                 total_read + 8, fma=SUMSQ_BLOCKS, **NO_SHARED)]


# ---------------------------------------------------------------- the step's scalars (step_scalars.cuh)
# StepScalars on the device: loss_sum, sumsq, norm (doubles), loss, step_loss
# (floats), clip {scale (float), apply (int)}
LOSS_MEAN_THREADS = 256


def loss_reset():
    """step_loss_reset: loss_sum = 0 (cudaMemsetAsync)"""
    return memset("loss sum = 0", 8)


def loss_mean(n):
    """loss_mean_kernel, one block: the n per-row losses read once (thread t its
    contiguous rows), loss_sum read; loss and loss_sum written by thread 0"""
    w, r = halving_tree_bytes(LOSS_MEAN_THREADS, 8)
    return Call("loss_mean_kernel", "mean loss", F32 * n + 8, F32 + 8, F32 * n + 8 + F32 + 8,
                fma=n + LOSS_MEAN_THREADS, shared_read=r, shared_written=w)


def step_loss_finish():
    """step_loss_finish_kernel: step_loss = loss_sum / micro-steps (thread 0)"""
    return Call("step_loss_finish_kernel", "step loss", 8, F32, 8 + F32, **NO_SHARED)


def clip(check_loss=True):
    """clip_kernel (thread 0): reads sumsq (and, checking the loss, step_loss: read
    when the norm is finite, as in the runs), writes norm, clip.scale, clip.apply"""
    r = 8 + (F32 if check_loss else 0)
    return Call("clip_kernel", "clip scale", r, 8 + 2 * F32, r + 8 + 2 * F32, **NO_SHARED)


# ---------------------------------------------------------------- AdamW, CBWC
# AdamW reads the clip the GPU computed (AdamWClip: scale, apply) from device
# memory: every thread with an element loads apply (the skip test) and scale
CLIP_READ = 2 * F32


def adamw(n, what, sliced=True):
    """adamw_slices_kernel / adamw_kernel: reads p, g, m, v and the clip; writes
    p, m, v and the bf16 copy"""
    name = "adamw_slices_kernel" if sliced else "adamw_kernel"
    return Call(name, what, (4 * F32 + CLIP_READ) * n, (3 * F32 + XB) * n,
                (7 * F32 + XB) * n + CLIP_READ, fma=12 * n, sfu=n, **NO_SHARED)


CBWC_COLUMNS, CBWC_THREADS = 32, 256  # a block: 32 columns x 8 row slices
# a block's shared memory: 256 slice sums written, read by the 32 threads of
# slice 0 (8 each), 32 means written, read by the threads of each column
# inside the matrix whose row slice is not empty, and by slice 0's threads of
# the columns past IC (where the compiled code (g++ -O2, emulated) puts the
# load: a device compiler may place it otherwise; a few hundred bytes a call)
CBWC_SLICES = CBWC_THREADS // CBWC_COLUMNS
CBWC_SHARED_WRITTEN = CBWC_THREADS * F32 + CBWC_COLUMNS * F32


def cbwc_shared_read(L, OC, IC):
    rows = ceil_div(OC, CBWC_SLICES)
    slices = sum(1 for k in range(CBWC_SLICES) if k * rows < OC)
    cols = ceil_div(IC, CBWC_COLUMNS) * CBWC_COLUMNS
    return L * (cols * CBWC_SLICES * F32 + IC * slices * F32 + (cols - IC) * F32)


def cbwc_project(L, OC, IC, with_adamw, what):
    """cbwc_project_kernel: every weight read (with AdamW: updated, its g, m, v
    and the clip's scale read, W, m, v, W_x written; every thread of the grid,
    (IC / 32, L) blocks of 256, loads the clip's apply first), then read again
    for V = W - column mean, written bf16. Unique: W read once (the second read
    from cache)"""
    n = L * OC * IC
    blocks = L * ceil_div(IC, CBWC_COLUMNS)
    sh = dict(shared_read=cbwc_shared_read(L, OC, IC), shared_written=blocks * CBWC_SHARED_WRITTEN)
    if with_adamw:
        threads = L * ceil_div(IC, CBWC_COLUMNS) * CBWC_THREADS
        return Call("cbwc_project_kernel<true>", what, (5 * F32 + F32) * n + F32 * threads,
                    (3 * F32 + 2 * XB) * n, (7 * F32 + 2 * XB) * n + CLIP_READ, fma=14 * n, sfu=n,
                    **sh)
    return Call("cbwc_project_kernel<false>", what, 2 * F32 * n, XB * n, (F32 + XB) * n, fma=2 * n,
                **sh)


def cbwc_centre_bias(L, OC, what):
    """cbwc_centre_bias_kernel: a block of 256 threads a layer reads its bias
    twice, writes P b; its block_sum: 8 warp sums written and read by warp 0,
    the result written once and read by all 256 threads"""
    return Call("cbwc_centre_bias_kernel", what, 2 * F32 * L * OC, XB * L * OC, (F32 + XB) * L * OC,
                shared_read=L * (8 * F32 + 256 * F32), shared_written=L * (8 * F32 + F32))


def centre_rows(N, C, what):
    """centre_rows_kernel: a warp a row, read twice (mean, then x - mean), written once"""
    return Call("centre_rows_kernel", what, 2 * XB * N * C, XB * N * C, 2 * XB * N * C, fma=2 * N * C,
                **NO_SHARED)


# ---------------------------------------------------------------- losses
def crossentropy(N, V, Vp, write_grad):
    """crossentropy_kernel, a block of 512 threads a row: every thread loads the
    target; one online max/sum pass over the V real columns; x[target] loaded
    once (only thread 0 uses it: the compiler moves the load into its branch);
    with write_grad a pass over Vp reading and writing each value"""
    reads = 512 * F32 + XB + XB * V + (XB * Vp if write_grad else 0)
    writes = F32 + (XB * Vp if write_grad else 0)
    unique = F32 + XB * Vp + writes
    # block_softmax_merge: 16 warp states (8 B) written, read by warp 0's first 16
    # lanes, the result written once and read by all 512 threads
    return Call("crossentropy_kernel", "cross-entropy" + (" + dlogits" if write_grad else ""),
                N * reads, N * writes, N * unique, fma=N * V * (6 if write_grad else 3),
                sfu=N * V * (2 if write_grad else 1), shared_read=N * (16 * 8 + 512 * 8),
                shared_written=N * (16 * 8 + 8))


def classifier_loss(N, K, with_grad):
    """classifier_loss_kernel, a warp an image: max pass, a sum pass reading each
    logit once (its two uses share one load), all lanes load the label, lane 0
    the logits of the two targets (the same one without mixup / cutmix: the
    batches modelled here are unmixed); with the gradient a third pass"""
    reads = XB * K * (3 if with_grad else 2) + 32 * F32 + 2 * XB
    writes = F32 + (XB * K if with_grad else 0)
    return Call("classifier_loss_kernel", "classifier loss" + (" + dlogits" if with_grad else ""),
                N * reads, N * writes, N * (XB * K + F32 + writes), fma=N * K * 6, sfu=N * K * 2)
