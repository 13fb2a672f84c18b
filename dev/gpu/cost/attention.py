"""Attention of one layer (B, T, C, NH) for each kind (llmc/cuda/attention_kind.cuh):
tc (flash_attention_tc.cuh, tensor cores), flash (flash_attention.cuh, fp32
FMAs), cublas (attention.cuh, batched cuBLAS + softmax), cudnn (cuDNN's fused
kernels: not counted by the emulator, modelled as tc's unique bytes and FLOPs).
The flash-style kernels' counts come from walking their grids block by block
(tails, causal skips and all), one (b, h) at a time: every (b, h) is the same.
"""

import copy
import functools

from calls import Call
from kernels import XB, F32, ceil_div, gemm


def padded_head(hs):
    """tc_padded_head: the mma tile width"""
    for d in (16, 32, 64, 128):
        if hs <= d:
            return d
    raise ValueError("head size %d > 128" % hs)


def row_dot(B, T, NH, hs, what):
    """flash_attention_row_dot_kernel: D = dy . y, a warp a row"""
    rows = B * NH * T
    return Call("flash_attention_row_dot_kernel", what, rows * 2 * XB * hs, rows * F32,
                rows * (2 * XB * hs + F32), fma=rows * 2 * hs, shared_read=0, shared_written=0)


def _flash_style_unique(B, T, C, NH, part):
    """bytes once: forward q, k, v in, out and lse out; the backward's D = dy . y
    (dy, out in, D out), dq (q, dy, k, v, lse, D in, dq out), dk/dv (the same
    in, dk, dv out)"""
    btc, rows = B * T * C, B * NH * T
    return {"fwd": XB * 4 * btc + F32 * rows,
            "dot": XB * 2 * btc + F32 * rows,
            "dq": XB * 5 * btc + 2 * F32 * rows,
            "dkdv": XB * 6 * btc + 2 * F32 * rows}[part]


def _pairs(T, causal):
    return T * (T + 1) // 2 if causal else T * T


# shared memory of the tensor-core kernels (mma.cuh): an A strip of 16 rows x
# 16 features is one ldmatrix.x4 (4 matrices of 128 B); in the backward every
# mma's B fragment is one ldmatrix.x2 (256 B: S = Q K^T through mma_load_b_nk,
# the P V-like products through mma_load_b_kn); tiles are written by
# tc_load_rows (tc_load_rows_async in the forward: cp.async, counted as the
# same bytes), a whole tile of rows (zero past the valid ones) whatever is valid
LDMATRIX_MATRIX = 128
B_FRAGMENT = 2 * LDMATRIX_MATRIX
A_STRIP = 4 * LDMATRIX_MATRIX
# the forward's warps own 32 rows (two strips): one ldmatrix.x4 (512 B) loads
# two B fragments, each feeding both strips' mma: 4 mma a load, 128 B an mma
B_PAIR_PER_MMA = 4 * LDMATRIX_MATRIX // 4


def tc(B, T, C, NH, causal, forward):
    """the tensor-core kernels' calls (_tc_calls, walked once a shape)"""
    return [copy.copy(c) for c in _tc_calls(B, T, C, NH, causal, forward)]


@functools.lru_cache(maxsize=None)
def _tc_calls(B, T, C, NH, causal, forward):
    """the tensor-core kernels, walked block by block: the forward (blocks of
    128 query rows, 4 warps of 32) and the backward (blocks of 128 keys, 8
    warps of 16, then the dQ reduce), each below; a warp skips tiles past its
    rows (causal) and 16-key chunks past its last row; one mma covers 16 x 8 x
    16. Shared memory: A strips and B fragments as ldmatrix loads them, tiles
    written whole (cp.async counted as the same bytes), and the backward's
    lse and D of a query tile (D read for every score element of a lane, lse
    only where the mask keeps the pair) and its dS^T"""
    hs = C // NH
    D = padded_head(hs)
    bh = B * NH
    nb = ceil_div(T, 64)
    row_b = XB * hs
    tile_row = XB * D  # a shared tile row: D bf16 (the padding past D never touched)
    strip = (D // 16) * A_STRIP
    pairs = _pairs(T, causal)
    if forward:
        # blocks of 128 query rows (4 warps of 32, two strips each), key tiles
        # of 64 (32 at D = 128), double-buffered; Q's strips read once a warp
        # (D <= 64: kept in registers) or once a tile the warp works on (D = 128)
        BKf = 64 if D <= 64 else 32
        r = w = mma = sw = sr_q = 0
        for bx in range(ceil_div(T, 128)):
            q0 = 128 * bx
            rows = min(128, T - q0)
            r += rows * row_b
            k_end = min(q0 + 128, T) if causal else T
            sw += 128 * tile_row + ceil_div(k_end, BKf) * 2 * BKf * tile_row
            for k0 in range(0, k_end, BKf):
                keys = min(BKf, T - k0)
                r += 2 * keys * row_b
                for warp in range(4):
                    r0 = q0 + 32 * warp
                    if r0 >= T or (causal and k0 > r0 + 31):
                        continue
                    seen = min(keys, r0 + 32 - k0) if causal else keys
                    # S (D/16 x 2 n-tiles x 2 strips) + P V (D/8 x 2 strips) a 16-key chunk
                    mma += ceil_div(seen, 16) * D // 2
                    if D > 64:
                        sr_q += 2 * strip
            if D <= 64:
                sr_q += 4 * 2 * strip
            w += rows * (row_b + F32)
        sr = sr_q + B_PAIR_PER_MMA * mma
        return [Call("flash_attention_tc_forward_kernel<D, CAUSAL>", "attention fwd", bh * r, bh * w,
                     _flash_style_unique(B, T, C, NH, "fwd"), mma=bh * mma, fma=bh * 8 * pairs,
                     sfu=bh * pairs, shared_read=bh * sr, shared_written=bh * sw)]
    # backward: blocks of BKEYS keys (8 warps of 16) stream 32-query tiles from
    # the block's first key (causal) or 0; per tile and warp that sees them:
    # S^T, dP^T, dV += P^T dO, dK += dS^T Q (mma.cuh's x2 B fragments), dS^T to
    # shared memory; then dQ's part of the tile, dS K, a warp a 16-query strip
    # by 16 features (an x4.trans A and an x4 B pair a 16-key chunk: 2 mma),
    # written as fp32 rows of hs; the reduce kernel sums them per query
    BKEYS, BQ = 128, 32
    nkb = ceil_div(T, BKEYS)
    r = w = m = sr = sw = part_rows = 0
    for kb in range(nkb):
        first = BKEYS * kb
        keys = min(BKEYS, T - first)
        q_first = first if causal else 0
        part_rows += T - q_first
        r += 2 * keys * row_b
        w += 2 * keys * row_b + (T - q_first) * F32 * hs  # dk, dv; the dQ partials
        sw += 2 * BKEYS * tile_row
        for q0 in range(q_first, T, BQ):
            queries = min(BQ, T - q0)
            r += 2 * queries * row_b + 2 * F32 * queries  # q, dy rows; lse, D (cp.async 4 B each)
            sw += 2 * BQ * tile_row + 2 * BQ * F32
            q16 = ceil_div(queries, 16)
            for warp in range(8):
                kr0 = first + 16 * warp
                if kr0 >= T or (causal and q0 + BQ - 1 < kr0):
                    continue
                m += q16 * D // 2  # S^T, dP^T, P^T dO, dS^T Q: q16 x D/8 each
                # k, v strips; the x2 B fragments; lse_s and D_s of a lane's two
                # queries of each n-tile; dS^T stored
                sr += 2 * strip + B_FRAGMENT * q16 * D // 2 + 32 * (BQ // 8) * 4 * F32
                sw += (BQ // 8) * 32 * 4 * XB
            DQF = min(D, 16)  # TC_DQ_FEATURES
            for u in range((BQ // 16) * (D // DQF)):
                qs = 16 * (u % (BQ // 16))
                seen = min(keys, q0 + qs + 16 - first) if causal else keys
                # a 16-key chunk: one x4.trans dS^T fragment, DQF / 16 x4 B pairs, DQF / 8 mma
                m += (DQF // 8) * ceil_div(seen, 16)
                sr += 4 * LDMATRIX_MATRIX * (1 + DQF // 16) * ceil_div(seen, 16)
    # the reduce: each query's rows over the key blocks that add to it
    adds = sum(t // BKEYS + 1 if causal else nkb for t in range(T))
    rd = row_dot(B, T, NH, hs, "attention bwd (D = dy . y)")
    btc, rows = B * T * C, B * NH * T
    partial_bytes = bh * part_rows * F32 * hs
    return [rd,
            Call("flash_attention_tc_backward_kernel<D, CAUSAL>", "attention bwd", bh * r, bh * w,
                 XB * 6 * btc + 2 * F32 * rows + partial_bytes, mma=bh * m,
                 fma=bh * 5 * pairs, sfu=bh * pairs, shared_read=bh * sr, shared_written=bh * sw),
            Call("flash_attention_tc_dq_reduce_kernel<CAUSAL>", "attention bwd dq (reduce)",
                 bh * adds * F32 * hs, XB * btc, partial_bytes + XB * btc, fma=bh * adds * hs,
                 shared_read=0, shared_written=0)]


def flash(B, T, C, NH, causal, forward):
    """the fp32 FMA kernels' calls (_flash_calls, walked once a shape)"""
    return [copy.copy(c) for c in _flash_calls(B, T, C, NH, causal, forward)]


@functools.lru_cache(maxsize=None)
def _flash_calls(B, T, C, NH, causal, forward):
    """the fp32 FMA kernels: blocks of 16 rows (4 warps x 4), tiles of 32 keys or
    queries through shared memory; dq reads lse and D from global memory for
    every pair it sees. FMAs: 4 hs a pair forward, 6 hs in dq, 8 hs in dk/dv.
    Shared memory (fp32): the row and tile buffers written whole (zeros past
    the valid rows); a warp's row and a tile: each lane that sees its key
    reads both operands of its dot products (q and k forward; q, k, dy, v in
    dq; q, k, dy, v, its lse and D in dk/dv), and each seen key (query) adds
    a row of the tile to the lanes' dimensions (v forward, k in dq, dy and q in
    dk/dv)"""
    hs = C // NH
    bh = B * NH
    nb = ceil_div(T, 16)
    row_b = XB * hs
    tile_b = F32 * hs  # a row of a shared buffer (the + 1 padding never touched)
    pairs = _pairs(T, causal)
    if forward:
        r = w = sr = sw = 0
        for bx in range(nb):
            q0 = 16 * bx
            q_end = min(q0 + 16, T)
            r += (q_end - q0) * row_b
            sw += 16 * tile_b
            for k0 in range(0, q_end if causal else T, 32):
                r += 2 * min(32, T - k0) * row_b
                sw += 2 * 32 * tile_b
                for tq in range(q0, q_end):
                    if not (causal and k0 > tq):  # keys seen by the row in this tile
                        sr += 3 * tile_b * (min(32, tq - k0 + 1) if causal else min(32, T - k0))
            w += (q_end - q0) * (row_b + F32)
        return [Call("flash_attention_forward_kernel<CAUSAL>", "attention fwd", bh * r, bh * w,
                     _flash_style_unique(B, T, C, NH, "fwd"), fma=bh * 4 * hs * pairs, sfu=bh * pairs,
                     shared_read=bh * sr, shared_written=bh * sw)]
    rq = wq = rk = wk = 0
    srq = swq = srk = swk = 0
    for bx in range(nb):
        first = 16 * bx
        end = min(first + 16, T)
        rows = end - first
        rq += 2 * rows * row_b
        swq += 2 * 16 * tile_b
        for k0 in range(0, end if causal else T, 32):
            rq += 2 * min(32, T - k0) * row_b
            swq += 2 * 32 * tile_b
            for tq in range(first, end):
                if not (causal and k0 > tq):
                    srq += 5 * tile_b * (min(32, tq - k0 + 1) if causal else min(32, T - k0))
        wq += rows * row_b
        rk += 2 * rows * row_b
        swk += 2 * 16 * tile_b
        for q0 in range(first if causal else 0, T, 32):
            queries = min(32, T - q0)
            rk += 2 * queries * row_b + 2 * F32 * queries
            swk += 2 * 32 * tile_b + 2 * 32 * F32
            for tk in range(first, end):
                sees = max(0, queries - max(0, tk - q0)) if causal else queries
                srk += sees * (6 * tile_b + 2 * F32)
        wk += 2 * rows * row_b
    rq += 2 * F32 * pairs  # lse[row] and D[row] loaded by every lane that sees its key
    rd = row_dot(B, T, NH, hs, "attention bwd (D = dy . y)")
    return [rd,
            Call("flash_attention_backward_dq_kernel<CAUSAL>", "attention bwd dq", bh * rq, bh * wq,
                 _flash_style_unique(B, T, C, NH, "dq"), fma=bh * 6 * hs * pairs, sfu=bh * pairs,
                 shared_read=bh * srq, shared_written=bh * swq),
            Call("flash_attention_backward_dkdv_kernel<CAUSAL>", "attention bwd dk dv", bh * rk,
                 bh * wk, _flash_style_unique(B, T, C, NH, "dkdv"), fma=bh * 8 * hs * pairs,
                 sfu=bh * pairs, shared_read=bh * srk, shared_written=bh * swk)]


def cublas(B, T, C, NH, causal, forward):
    """split q, k, v; batched GEMMs (fp32 scores); a softmax warp a row reading
    its seen scores three times (max, sum, write) forward, twice backward;
    att (B, NH, T, T) bf16 kept; heads gathered back"""
    hs = C // NH
    bh = B * NH
    btc = B * T * C
    seen = bh * _pairs(T, causal)  # scores a row reads (causal: t + 1 in row t)
    split = Call("attention_split_kernel", "attention split q k v", 3 * XB * btc, 3 * XB * btc,
                 6 * XB * btc)
    heads = Call("attention_heads_kernel", "attention heads", XB * btc, XB * btc, 2 * XB * btc)
    bmm = "cublasGemmStridedBatchedEx"
    if forward:
        return [split,
                gemm("attention q k^T", T, T, hs, d_bytes=F32, batch=bh, name=bmm),
                Call("attention_softmax_forward_kernel", "attention softmax fwd", 3 * F32 * seen,
                     XB * bh * T * T, F32 * seen + XB * bh * T * T, fma=4 * seen, sfu=2 * seen),
                gemm("attention att v", hs, T, T, batch=bh, name=bmm),
                heads]
    return [split, heads,
            gemm("attention dy v^T", T, T, hs, d_bytes=F32, batch=bh, name=bmm),
            gemm("attention att^T dy", hs, T, T, batch=bh, name=bmm),
            Call("attention_softmax_backward_kernel", "attention softmax bwd", 2 * (XB + F32) * seen,
                 XB * bh * T * T, (XB + F32) * seen + XB * bh * T * T, fma=4 * seen),
            gemm("attention dS k", hs, T, T, batch=bh, name=bmm),
            gemm("attention dS^T q", hs, T, T, batch=bh, name=bmm),
            Call("attention_merge_grads_kernel", "attention merge dq dk dv", 3 * XB * btc,
                 3 * XB * btc, 6 * XB * btc)]


def cudnn(B, T, C, NH, causal, forward):
    """cuDNN's fused kernels (not in the emulator's table): the useful FLOPs of
    the pairs on tensor cores at cuBLAS's rate (cuDNN's Hopper kernels use
    wgmma, not mma.sync: issue 27's figure kept), the flash-style unique bytes"""
    hs = C // NH
    pairs = B * NH * _pairs(T, causal)
    flops = (4 if forward else 10) * hs * pairs
    u = (_flash_style_unique(B, T, C, NH, "fwd") if forward else
         sum(_flash_style_unique(B, T, C, NH, p) for p in ("dot", "dq", "dkdv")))
    return [Call("cudnn", "attention %s (cuDNN)" % ("fwd" if forward else "bwd"), u, 0, u,
                 gemm=flops, sfu=pairs * (1 if forward else 2), launches=1 if forward else 2,
                 counted=False)]


KINDS = {"tc": tc, "flash": flash, "cublas": cublas, "cudnn": cudnn}


def layer(kind, B, T, C, NH, causal, forward):
    return KINDS[kind](B, T, C, NH, causal, forward)
