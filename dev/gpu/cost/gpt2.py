"""GPT-2 on the GPU (llmc/cuda/gpt2_cuda.cuh): the calls of a forward, a
backward and an update, in the order the code makes them, and of whole
emulated program runs (setup included) for the check.
"""

import re
from dataclasses import dataclass

import attention
from calls import Call, SMS
from kernels import (F32, XB, adamw, cbwc_centre_bias, cbwc_project, centre_rows, column_sum,
                     crossentropy, gelu_backward, gelu_forward, matmul_backward, matmul_forward,
                     memset, norm_backward, norm_forward, params_to_x, sum_of_squares)


@dataclass
class GPT2Shape:
    L: int
    C: int
    NH: int
    V: int
    maxT: int

    @property
    def Vp(self):
        return (self.V + 127) // 128 * 128

    def tensor_sizes(self):
        """the 16 parameter tensors in llm.c's order (gpt2.h)"""
        L, C = self.L, self.C
        return [self.Vp * C, self.maxT * C, L * C, L * C, L * 3 * C * C, L * 3 * C,
                L * C * C, L * C, L * C, L * C, L * 4 * C * C, L * 4 * C, L * 4 * C * C, L * C,
                C, C]

    @property
    def params(self):
        return sum(self.tensor_sizes())


def parse_descriptor(d):
    """d12, d1c128h2v256t64, ... as llmc/gpt2/gpt2.c reads them"""
    m = re.fullmatch(r"d(\d+)((?:[chvt]\d+)*)", d)
    if m is None:
        raise ValueError("not a model descriptor: " + d)
    L = int(m.group(1))
    fields = dict((k, int(v)) for k, v in re.findall(r"([chvt])(\d+)", m.group(2)))
    C = fields.get("c") or {6: 384, 12: 768, 24: 1024, 36: 1280, 48: 1600}.get(L, 64 * L)
    NH = fields.get("h")
    if NH is None:
        NH = max(C // 64, 1)
        while C % NH:
            NH -= 1
    return GPT2Shape(L, C, NH, fields.get("v", 50257), fields.get("t", 1024))


# ---------------------------------------------------------------- the embedding (encoder.cuh)
def encoder_forward(B, T, C, centred):
    """a warp a row: every lane loads the row's token; cbwc reads e and p twice
    (the means first)"""
    BT = B * T
    reads = 32 * F32 + (2 if centred else 1) * 2 * XB * C
    return Call("encoder_forward_kernel", "embedding fwd", BT * reads, BT * XB * C,
                BT * (F32 + 2 * XB * C) + T * XB * C, fma=BT * C * (4 if centred else 1))


def encoder_backward(B, T, C, centred, buckets):
    """row means (cbwc: each dout row read, lane 0 writes the mean), wte: a thread
    a (bucket, column) sums its bucket's rows (row index, dout, shift a row),
    wpe: a thread a (t, c) sums over b"""
    BT = B * T
    calls = [Call("encoder_row_means_kernel", "embedding bwd row means",
                  BT * XB * C if centred else 0, BT * F32, BT * ((XB * C if centred else 0) + F32))]
    if buckets > 0:
        # per (bucket, column): start[u], start[u + 1], token[u], dwte read;
        # per row of the bucket: rows[e], dout, shift
        calls.append(Call("encoder_backward_wte_kernel", "embedding bwd wte",
                          C * (4 * F32 * buckets + (2 * F32 + XB) * BT), C * F32 * buckets,
                          BT * (XB * C + 2 * F32) + 2 * C * F32 * buckets + 3 * F32 * buckets))
    calls.append(Call("encoder_backward_wpe_kernel", "embedding bwd wpe", T * C * ((XB + F32) * B + F32),
                      T * C * F32, BT * XB * C + BT * F32 + 2 * T * C * F32))
    return calls


# ---------------------------------------------------------------- a step
def forward(s, B, T, mode, kind, targets=True, dlogits=True):
    """gpt2cuda_forward: with targets the cross-entropy (writing dlogits)"""
    L, C, NH = s.L, s.C, s.NH
    BT = B * T
    layer = mode == "ln"
    calls = [encoder_forward(B, T, C, mode == "cbwc"), norm_forward(BT, C, layer, False, "ln1 fwd")]
    for l in range(L):
        calls += matmul_forward("matmul qkv", BT, C, 3 * C)
        calls += attention.layer(kind, B, T, C, NH, True, True)
        calls += matmul_forward("matmul attn proj", BT, C, C)
        calls.append(norm_forward(BT, C, layer, True, "residual + ln2 fwd"))
        calls += matmul_forward("matmul fc", BT, C, 4 * C)
        calls.append(gelu_forward(BT * 4 * C))
        calls += matmul_forward("matmul fc proj", BT, 4 * C, C)
        calls.append(norm_forward(BT, C, layer, True, "residual + ln1/lnf fwd"))
    calls += matmul_forward("matmul lm head", BT, C, s.Vp, bias=False)
    if targets:
        calls.append(crossentropy(BT, s.V, s.Vp, dlogits))
    return calls


def backward(s, B, T, mode, kind, buckets, sms=SMS):
    """gpt2cuda_backward after a forward that wrote dlogits"""
    L, C, NH = s.L, s.C, s.NH
    BT = B * T
    layer = mode == "ln"
    centred = mode == "cbwc"
    calls = matmul_backward("matmul lm head", BT, C, s.Vp)
    calls.append(memset("dresidual = 0", BT * C * XB))
    calls += norm_backward(BT, C, layer, "lnf bwd", sms)
    for l in range(L):
        if centred:
            calls.append(centre_rows(BT, C, "cbwc centre dy (mlp)"))
        calls += column_sum(BT, C, "bias grad fc proj")
        calls += matmul_backward("matmul fc proj", BT, 4 * C, C)
        calls.append(gelu_backward(BT * 4 * C))
        calls += column_sum(BT, 4 * C, "bias grad fc")
        calls += matmul_backward("matmul fc", BT, C, 4 * C)
        calls += norm_backward(BT, C, layer, "ln2 bwd", sms)
        if centred:
            calls.append(centre_rows(BT, C, "cbwc centre dy (attn)"))
        calls += column_sum(BT, C, "bias grad attn proj")
        calls += matmul_backward("matmul attn proj", BT, C, C)
        calls += attention.layer(kind, B, T, C, NH, True, False)
        calls += column_sum(BT, 3 * C, "bias grad qkv")
        calls += matmul_backward("matmul qkv", BT, C, 3 * C)
        calls += norm_backward(BT, C, layer, "ln1 bwd", sms)
    calls += encoder_backward(B, T, C, centred, buckets)
    return calls


def cbwc_refresh(s):
    """gpt2cuda_cbwc_refresh: V = P W and P b of both c_proj (a forward after
    anything but the fused update)"""
    L, C = s.L, s.C
    return [cbwc_project(L, C, C, False, "cbwc refresh attn proj"),
            cbwc_centre_bias(L, C, "cbwc refresh attn proj bias"),
            cbwc_project(L, C, 4 * C, False, "cbwc refresh fc proj"),
            cbwc_centre_bias(L, C, "cbwc refresh fc proj bias")]


def update(s, mode):
    """the gradient norm (sum of squares; its 512 partials go to the host) and
    gpt2cuda_update_shard with one rank: an AdamW launch a tensor, the two c_proj
    weights fused with their projection in cbwc, then their biases centred"""
    calls = [sum_of_squares(s.params)]
    for i, n in enumerate(s.tensor_sizes()):
        if mode == "cbwc" and i in (6, 12):
            calls.append(cbwc_project(s.L, s.C, s.C if i == 6 else 4 * s.C, True,
                                      "adamw + cbwc projection"))
        else:
            calls.append(adamw(n, "adamw"))
    if mode == "cbwc":
        calls += [cbwc_centre_bias(s.L, s.C, "cbwc centre biases")] * 2
    return calls


def train_step(s, B, T, mode, kind, buckets, sms=SMS):
    """one step without gradient accumulation: zero_grad, forward with targets
    (dlogits written), backward, grad norm, AdamW"""
    return ([memset("zero grads", s.params * F32)] + forward(s, B, T, mode, kind) +
            backward(s, B, T, mode, kind, buckets, sms) + update(s, mode))


def model_flops(s, B, T):
    """MFU's numerator, as train_gpt2.cu prints it: (6 N + 12 L C T) a token"""
    return (6 * s.params + 12 * s.L * s.C * T) * B * T


# ---------------------------------------------------------------- emulated runs (the check)
def train_program(s, B, T, mode, kind, buckets, steps=1, sms=4):
    """train_gpt2cu -x steps without val, samples or checkpoints: setup (the
    bf16 copy), cbwc's projection at the first forward, then the steps"""
    calls = [params_to_x("setup: bf16 parameters", s.params)]
    if mode == "cbwc":
        calls += cbwc_refresh(s)
    for _ in range(steps):
        calls += train_step(s, B, T, mode, kind, buckets, sms)
    return calls


def inference_program(s, B, T, mode, kind, passes):
    """train_gpt2cu -inf passes: setup, a warmup forward and the timed ones, no targets"""
    calls = [params_to_x("setup: bf16 parameters", s.params)]
    if mode == "cbwc":
        calls += cbwc_refresh(s)
    for _ in range(passes + 1):
        calls += forward(s, B, T, mode, kind, targets=False)
    return calls
