"""GPT-2 on the GPU (llmc/cuda/gpt2_cuda.cuh): the calls of a forward, a
backward and an update, in the order the code makes them, and of whole
emulated program runs (setup included) for the check.
"""

import re
from dataclasses import dataclass

import attention
import block
from calls import Call, SMS
from kernels import (F32, XB, adamw, cbwc_centre_bias, cbwc_project, ceil_div, centre_rows, clip,
                     crossentropy, loss_mean, loss_reset,
                     matmul_backward, matmul_forward, memset, norm_backward, norm_forward,
                     params_to_x, step_loss_finish, sum_of_squares)


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


TOKEN_PIECE_ROWS = 32  # llmc/kernels/token_buckets.h


def token_pieces(buckets):
    """what token_pieces_build makes of the buckets: (pieces, whole buckets, split
    buckets, pieces of the split ones). buckets: each bucket's row count, or
    their number (then each of at most TOKEN_PIECE_ROWS rows: one piece)"""
    if isinstance(buckets, int):
        return buckets, buckets, 0, 0
    whole = sum(1 for n in buckets if n <= TOKEN_PIECE_ROWS)
    split = len(buckets) - whole
    split_pieces = sum(ceil_div(n, TOKEN_PIECE_ROWS) for n in buckets if n > TOKEN_PIECE_ROWS)
    return whole + split_pieces, whole, split, split_pieces


def encoder_backward(B, T, C, centred, buckets):
    """row means (cbwc: each dout row read, lane 0 writes the mean); wte: a thread
    a (piece, column) sums its piece's rows (row index, dout, shift a row) into
    the token's dwte row (a whole bucket) or a partial slot (a piece of a split
    bucket), then a thread a (split bucket, column) adds its pieces' partials
    in order into dwte; wpe: a thread a (t, c) sums over b"""
    BT = B * T
    pieces, whole, split, split_pieces = token_pieces(buckets)
    calls = [Call("encoder_row_means_kernel", "embedding bwd row means",
                  BT * XB * C if centred else 0, BT * F32, BT * ((XB * C if centred else 0) + F32))]
    if pieces > 0:
        # per (piece, column): piece_start[p], piece_start[p + 1], piece_dest[p], and
        # a whole bucket's dwte value; per row of the piece: rows[e], dout, shift
        calls.append(Call("encoder_backward_wte_pieces_kernel", "embedding bwd wte",
                          C * (3 * F32 * pieces + F32 * whole + (2 * F32 + XB) * BT),
                          C * F32 * pieces,
                          BT * (XB * C + 2 * F32) + 2 * C * F32 * whole + C * F32 * split_pieces +
                          2 * F32 * pieces + F32))
    if split > 0:
        # per (split bucket, column): split_first[g], split_first[g + 1], each piece's
        # partial, split_token[g] and the dwte value read; dwte written
        calls.append(Call("encoder_backward_wte_split_kernel", "embedding bwd wte (split tokens)",
                          C * (4 * F32 * split + F32 * split_pieces), C * F32 * split,
                          C * F32 * (split_pieces + 2 * split) + 2 * F32 * split + F32))
    calls.append(Call("encoder_backward_wpe_kernel", "embedding bwd wpe", T * C * ((XB + F32) * B + F32),
                      T * C * F32, BT * XB * C + BT * F32 + 2 * T * C * F32))
    return calls


# ---------------------------------------------------------------- a step
def forward(s, B, T, mode, kind, targets=True, dlogits=True):
    """gpt2cuda_forward: with targets the cross-entropy (writing dlogits) and
    its mean added to the loss sum on the device"""
    L, C, NH = s.L, s.C, s.NH
    BT = B * T
    layer = mode == "ln"
    calls = [encoder_forward(B, T, C, mode == "cbwc"), norm_forward(BT, C, layer, False, "ln1 fwd")]
    for l in range(L):
        calls += matmul_forward("matmul qkv", BT, C, 3 * C)
        calls += attention.layer(kind, B, T, C, NH, True, True)
        calls += matmul_forward("matmul attn proj", BT, C, C)
        calls.append(norm_forward(BT, C, layer, True, "residual + ln2 fwd"))
        calls += block.fc_gelu_forward(BT, C, 4 * C)
        calls += matmul_forward("matmul fc proj", BT, 4 * C, C)
        calls.append(norm_forward(BT, C, layer, True, "residual + ln1/lnf fwd"))
    calls += matmul_forward("matmul lm head", BT, C, s.Vp, bias=False)
    if targets:
        calls += [crossentropy(BT, s.V, s.Vp, dlogits), loss_mean(BT)]
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
        calls += block.mlp_backward(BT, C, 4 * C)
        calls += norm_backward(BT, C, layer, "ln2 bwd", sms)
        if centred:
            calls.append(centre_rows(BT, C, "cbwc centre dy (attn)"))
        calls += block.writer_backward("matmul attn proj", BT, C, C)
        calls += attention.layer(kind, B, T, C, NH, True, False)
        calls += block.writer_backward("matmul qkv", BT, C, 3 * C)
        calls += norm_backward(BT, C, layer, "ln1 bwd", sms)
        calls += block.bias_grads_add(C, 4 * C)
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
    """grad_sync_clip with one rank: the step's loss, the gradient norm (sum of
    squares into a device scalar) and the clip scale, all on the device; then
    gpt2cuda_update_shard: an AdamW launch a tensor (reading that clip), the two
    c_proj weights fused with their projection in cbwc, then their biases
    centred"""
    calls = [step_loss_finish()] + sum_of_squares(s.params) + [clip(check_loss=True)]
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
    """one step without gradient accumulation: zero_grad (and the loss sum),
    forward with targets (dlogits written), backward, loss, grad norm and clip,
    AdamW. buckets: as token_pieces takes them"""
    return ([memset("zero grads", s.params * F32), loss_reset()] + forward(s, B, T, mode, kind) +
            backward(s, B, T, mode, kind, buckets, sms) + update(s, mode))


def model_flops(s, B, T):
    """MFU's numerator in llm.c's convention, the anchor we compare against:
    (6 N + 6 L C T) a token, as llm.c's train_gpt2.cu gpt2_estimate_mfu counts
    it (N with the tied token embedding; 6 L C T: the attention matmuls
    forward and backward with the causal half left out)"""
    return (6 * s.params + 6 * s.L * s.C * T) * B * T


def model_flops_12lct(s, B, T):
    """the numerator issue 27's report and our trainer's MFU line used:
    (6 N + 12 L C T) a token (attention's matmuls without the causal half off)"""
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
