"""ViT (llmc/cuda/vit_cuda.cuh) and Swin (llmc/cuda/swin_cuda.cuh) on the GPU:
the calls of a training step and of the emulated train_vitcu runs the check
holds to the emulator. Swin's attention is the tensor-core window kernel
(swin_window_attention_tc.cuh, the bf16 default); -at window is not modelled.
"""

from dataclasses import dataclass, field

import attention
import block
from calls import Call, SMS
from kernels import (F32, XB, adamw, cbwc_centre_bias, cbwc_project, centre_rows, ceil_div,
                     classifier_loss, clip, column_sum, gelu_backward, gelu_forward, gemm,
                     loss_mean, loss_reset, matmul_backward, matmul_forward, memset,
                     norm_backward, norm_forward, params_to_x, step_loss_finish, sum_of_squares)


# ---------------------------------------------------------------- shared: the patch embedding
def patch_embed_forward(B, Cin, S, P, C, what="patch embed"):
    """im2col (an fp32 pixel read, a bf16 value written each) + a cuBLASLt matmul"""
    n = B * (S // P) ** 2 * Cin * P * P
    return [Call("patches_from_images_kernel", what + " im2col", F32 * n, XB * n, (F32 + XB) * n)] + \
        matmul_forward("matmul " + what, B * (S // P) ** 2, Cin * P * P, C)


def patch_embed_backward(N, PD, C, what="patch embed"):
    """column sums of dout (the bias) and dW += dout^T patches (fp32, beta 1)"""
    return column_sum(N, C, "bias grad " + what) + [
        gemm("matmul %s bwd dW" % what, PD, C, N, d_bytes=F32, beta=True)]


def labelled_loss(B, K):
    """a forward with labels: the per-image losses, and their mean kept on the
    device (the loss sum reset, then this forward's mean added)"""
    return [classifier_loss(B, K, False), loss_reset(), loss_mean(B)]


def step_scalars(P):
    """vision_grad_sync_update with one rank, before AdamW: the step's loss, the
    gradients' sum of squares over the device vector of P values, the clip"""
    return [step_loss_finish()] + sum_of_squares(P) + [clip(check_loss=True)]


# ---------------------------------------------------------------- ViT
@dataclass
class ViTShape:
    S: int = 224    # image side
    Cin: int = 3
    P: int = 16     # patch
    C: int = 192
    L: int = 12
    NH: int = 3
    R: int = 4      # MLP ratio
    K: int = 1000   # classes

    @property
    def T(self):
        return (self.S // self.P) ** 2 + 1

    @property
    def PD(self):
        return self.Cin * self.P * self.P

    def tensor_sizes(self):
        C, L, H, T, K = self.C, self.L, self.C * self.R, self.T, self.K
        return [C * self.PD, C, C, T * C, L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C,
                L * C, L * C, L * C, L * H * C, L * H, L * C * H, L * C, C, C, K * C, K]


def vit_forward(s, B, mode, kind, labels=True):
    C, L, NH, H, T = s.C, s.L, s.NH, s.C * s.R, s.T
    BT, layer = B * T, mode == "ln"
    calls = patch_embed_forward(B, s.Cin, s.S, s.P, C)
    # vit_tokens_forward_kernel: a warp a row, a value a lane (not packs), src and
    # pos read twice (the mean, then the row), in every mode
    calls.append(Call("vit_tokens_forward_kernel", "cls + pos", BT * 4 * XB * C, BT * XB * C,
                      BT * XB * C + T * XB * C + BT * XB * C))
    calls.append(norm_forward(BT, C, layer, False, "ln1 fwd"))
    for _ in range(L):
        calls += matmul_forward("matmul qkv", BT, C, 3 * C)
        calls += attention.layer(kind, B, T, C, NH, False, True)
        calls += matmul_forward("matmul attn proj", BT, C, C)
        calls.append(norm_forward(BT, C, layer, True, "residual + ln2 fwd"))
        calls += block.fc_gelu_forward(BT, C, H)
        calls += matmul_forward("matmul fc proj", BT, H, C)
        calls.append(norm_forward(BT, C, layer, True, "residual + ln1/lnf fwd"))
    calls.append(Call("vit_cls_rows_kernel", "cls rows", XB * B * C, XB * B * C, 2 * XB * B * C))
    calls += matmul_forward("matmul head", B, C, s.K)
    if labels:
        calls += labelled_loss(B, s.K)
    return calls


def vit_backward(s, B, mode, kind, sms=SMS):
    C, L, NH, H, T = s.C, s.L, s.NH, s.C * s.R, s.T
    BT, layer, centred = B * T, mode == "ln", mode == "cbwc"
    calls = [classifier_loss(B, s.K, True)] + column_sum(B, s.K, "bias grad head")
    calls += matmul_backward("matmul head", B, C, s.K)
    calls.append(Call("vit_cls_rows_backward_kernel", "cls rows bwd", XB * B * C, XB * BT * C,
                      XB * B * C + XB * BT * C))
    calls.append(memset("dresidual = 0", XB * BT * C))
    calls += norm_backward(BT, C, layer, "lnf bwd", sms)
    for _ in range(L):
        if centred:
            calls.append(centre_rows(BT, C, "cbwc centre dy (mlp)"))
        calls += block.mlp_backward(BT, C, H)
        calls += norm_backward(BT, C, layer, "ln2 bwd", sms)
        if centred:
            calls.append(centre_rows(BT, C, "cbwc centre dy (attn)"))
        calls += block.writer_backward("matmul attn proj", BT, C, C)
        calls += attention.layer(kind, B, T, C, NH, False, False)
        calls += block.writer_backward("matmul qkv", BT, C, 3 * C)
        calls += norm_backward(BT, C, layer, "ln1 bwd", sms)
        calls += block.bias_grads_add(C, H)
    if centred:
        calls.append(centre_rows(BT, C, "cbwc centre dy (tokens)"))
    # vit_tokens_backward_kernel: a thread a (t, c) sums over b, adds into dpos (and dcls)
    calls.append(Call("vit_tokens_backward_kernel", "cls + pos bwd", T * C * (XB * B + F32) + F32 * C,
                      F32 * (T * C + C), XB * BT * C + 2 * F32 * (T * C + C)))
    n = B * (T - 1) * C
    calls.append(Call("vit_patch_rows_kernel", "patch rows bwd", XB * n, XB * n, 2 * XB * n))
    calls += patch_embed_backward(B * (T - 1), s.PD, C)
    return calls


def vit_cbwc_refresh(s):
    C, L, H = s.C, s.L, s.C * s.R
    bias = "cbwc refresh bias"
    return [cbwc_project(1, C, s.PD, False, "cbwc refresh patch"), cbwc_centre_bias(1, C, bias),
            cbwc_project(L, C, C, False, "cbwc refresh attn proj"), cbwc_centre_bias(L, C, bias),
            cbwc_project(L, C, H, False, "cbwc refresh fc proj"), cbwc_centre_bias(L, C, bias)]


def vit_update(s, mode):
    """the step's scalars (loss, norm, clip) and vitcuda_update_queued: an
    adamw_kernel a tensor; cbwc fuses the patch, attn proj and fc2 weights with
    their projection, then centres their biases"""
    C, L, H = s.C, s.L, s.C * s.R
    sizes = s.tensor_sizes()
    calls = step_scalars(sum(sizes))
    fused = {0: (1, C, s.PD), 8: (L, C, C), 14: (L, C, H)}
    for i, n in enumerate(sizes):
        if mode == "cbwc" and i in fused:
            calls.append(cbwc_project(*fused[i], True, "adamw + cbwc projection"))
        else:
            calls.append(adamw(n, "adamw", sliced=False))
    if mode == "cbwc":
        what = "cbwc centre biases"
        calls += [cbwc_centre_bias(1, C, what), cbwc_centre_bias(L, C, what),
                  cbwc_centre_bias(L, C, what)]
    return calls


def vit_train_step(s, B, mode, kind, sms=SMS):
    return (vit_forward(s, B, mode, kind) + [memset("zero grads", F32 * sum(s.tensor_sizes()))] +
            vit_backward(s, B, mode, kind, sms) + vit_update(s, mode))


def vit_train_program(s, B, mode, kind, steps, eval_batches, sms=4):
    """train_vitcu -x steps: setup, cbwc's first projection, the steps, then the
    test set's forward passes (eval_batches: the image count of each)"""
    calls = [params_to_x("setup: bf16 parameters", sum(s.tensor_sizes()))]
    if mode == "cbwc":
        calls += vit_cbwc_refresh(s)
    for _ in range(steps):
        calls += vit_train_step(s, B, mode, kind, sms)
    for n in eval_batches:
        calls += vit_forward(s, n, mode, kind)
    return calls


# ---------------------------------------------------------------- Swin
@dataclass
class SwinShape:
    S: int = 224
    Cin: int = 3
    P: int = 4
    E: int = 96
    depths: list = field(default_factory=lambda: [2, 2, 6, 2])
    heads: list = field(default_factory=lambda: [3, 6, 12, 24])
    W: int = 7
    R: int = 4
    K: int = 1000
    centre_ops: int = 0
    paper_variant: int = 0

    @property
    def PD(self):
        return self.Cin * self.P * self.P

    def res(self, stage):
        return (self.S // self.P) >> stage

    def window(self, stage):
        return min(self.W, self.res(stage))

    def rms_in_cbwc(self, stage):
        last = len(self.depths) - 1
        return bool(self.paper_variant or self.centre_ops or (stage == last and stage >= 1))

    def merge_rms_in_cbwc(self):
        return bool(self.paper_variant or self.centre_ops)

    def tensors(self):
        """(size, centred-in-cbwc tag) in swin_layout's order"""
        E, out = self.E, []
        out += [(E * self.PD, "patchw"), (E, "patchb"), (E, ""), (E, "")]
        C = E
        for st, depth in enumerate(self.depths):
            C = E << st
            if st > 0:
                out += [(2 * C, ""), (2 * C, ""), (C * 2 * C, "redw")]
            side = 2 * self.window(st) - 1
            H, NH = C * self.R, self.heads[st]
            for _ in range(depth):
                out += [(C, ""), (C, ""), (3 * C * C, ""), (3 * C, ""), (side * side * NH, ""),
                        (C * C, "projw"), (C, "projb"), (C, ""), (C, ""), (H * C, ""), (H, ""),
                        (C * H, "fc2w"), (C, "fc2b")]
        out += [(C, ""), (C, ""), (self.K * C, ""), (self.K, "")]
        return out

    def dev_parameters(self):
        """each tensor padded to 16 elements on the device (SWINCUDA_ALIGN)"""
        return sum((n + 15) // 16 * 16 for n, _ in self.tensors())


def swin_tc_forward(B, res, W, shift, C, NH):
    """swin_window_attention_tc_forward_kernel: a block a (window, head); q, k, v
    rows and the head's bias table column read once; a warp a 16-row strip, key
    steps of 64"""
    T, T16, hs, side = W * W, ceil_div(W * W, 16) * 16, C // NH, 2 * W - 1
    D = attention.padded_head(hs)
    blocks = B * (res // W) ** 2 * NH
    mma = (T16 // 16) * sum(ceil_div(min(64, T - k0), 16) * D // 4 for k0 in range(0, T, 64))
    r = 3 * T * XB * hs + side * side * XB
    w = T * (XB * hs + F32)
    return Call("swin_window_attention_tc_forward_kernel<D>", "window attention fwd", blocks * r,
                blocks * w, blocks * (3 * T * XB * hs + w) + side * side * NH * XB, mma=blocks * mma,
                fma=blocks * T * T * 8, sfu=blocks * T * T)


def swin_tc_backward(B, res, W, shift, C, NH):
    """swin_window_attention_tc_backward_kernel: a block a (chunk of windows, head);
    per window q, k, v, dy, the table, lse, dy . y (dout and out rows) read; every
    (i, j) of the window adds dS into the chunk's fp32 partial (read back after
    the chunk's first window); dq, dk, dv written. Then the partials summed over
    the chunks and the table gradient gathered (swin_window_table_gradient_cuda)"""
    T, T16, hs, side = W * W, ceil_div(W * W, 16) * 16, C // NH, 2 * W - 1
    D = attention.padded_head(hs)
    G = B * (res // W) ** 2
    chunks = min(G, 512)
    strips = T16 // 16
    mma_window = strips * sum(3 * ceil_div(min(64, T - k0), 16) * D // 8 for k0 in range(0, T, 64)) + \
        strips * strips * D // 4
    r_window = 4 * T * XB * hs + side * side * XB + T * F32 + T * 2 * XB * hs
    w_window = T * T * F32 + 3 * T * XB * hs
    r = NH * (G * r_window + (G - chunks) * T * T * F32)
    w = NH * G * w_window
    scores, entries = NH * T * T, side * side * NH
    k = Call("swin_window_attention_tc_backward_kernel<D>", "window attention bwd", r, w,
             NH * G * (8 * T * XB * hs + T * F32) + chunks * scores * F32,
             mma=NH * G * mma_window, fma=NH * G * T * T * 12, sfu=NH * G * T * T)
    s_ = Call("swin_score_sum_kernel", "window attention bwd (score sums)", chunks * scores * F32,
              scores * F32, (chunks + 1) * scores * F32)
    t_ = Call("swin_bias_table_backward_kernel", "window attention bwd (table)",
              scores * F32 + entries * F32, entries * F32, scores * F32 + 2 * entries * F32)
    return [k, s_, t_]


def _swin_blocks(s):
    """(stage, C, NH, res, W, shift, rms) of every block"""
    out = []
    for st, depth in enumerate(s.depths):
        res, W = s.res(st), s.window(st)
        for i in range(depth):
            shift = W // 2 if i % 2 == 1 and res > s.W else 0
            out.append((st, s.E << st, s.heads[st], res, W, shift, s.rms_in_cbwc(st)))
    return out


def _layer(mode, rms):
    """swincuda_layer: LN, or RMS for a foldable norm in cbwc and every norm in rms"""
    return mode == "ln" or (mode == "cbwc" and not rms)


def swin_cbwc_refresh(s):
    """swincuda_cbwc_refresh: V = P W (and P b) of every centred layer, one launch each"""
    calls = [cbwc_project(1, s.E, s.PD, False, "cbwc refresh"), cbwc_centre_bias(1, s.E, "cbwc refresh")]
    for st in range(1, len(s.depths)):
        if s.rms_in_cbwc(st):
            Cin = (s.E << st) // 2
            calls.append(cbwc_project(1, 2 * Cin, 4 * Cin, False, "cbwc refresh"))
    for st, C, NH, res, W, shift, rms in _swin_blocks(s):
        if rms:
            what = "cbwc refresh"
            calls += [cbwc_project(1, C, C, False, what), cbwc_centre_bias(1, C, what),
                      cbwc_project(1, C, C * s.R, False, what), cbwc_centre_bias(1, C, what)]
    return calls


def swin_forward(s, B, mode, labels=True):
    E, N0 = s.E, s.res(0) ** 2
    calls = swin_cbwc_refresh(s) if mode == "cbwc" else []  # stale after every update
    calls += patch_embed_forward(B, s.Cin, s.S, s.P, E)
    calls.append(norm_forward(B * N0, E, mode == "ln", False, "patch norm fwd"))
    if s.centre_ops:
        calls.append(centre_rows(B * N0, E, "centring op"))
    blocks = _swin_blocks(s)
    for st in range(len(s.depths)):
        if st > 0:
            Cin, n = (s.E << st) // 2, B * s.res(st) ** 2
            if s.centre_ops:
                calls.append(centre_rows(4 * n, Cin, "centring op"))
            calls.append(Call("swin_patch_merge_forward_kernel<P>", "patch merge fwd", XB * 4 * n * Cin,
                              XB * 4 * n * Cin, 2 * XB * 4 * n * Cin))
            layer = _layer(mode, s.merge_rms_in_cbwc())
            calls.append(norm_forward(n, 4 * Cin, layer, False, "merge norm fwd"))
            calls += matmul_forward("matmul merge reduction", n, 4 * Cin, 2 * Cin, bias=False)
        for (bst, C, NH, res, W, shift, rms) in blocks:
            if bst != st:
                continue
            BN, H, layer = B * res * res, C * s.R, _layer(mode, rms)
            calls.append(norm_forward(BN, C, layer, False, "ln1 fwd"))
            calls += matmul_forward("matmul qkv", BN, C, 3 * C)
            calls.append(swin_tc_forward(B, res, W, shift, C, NH))
            calls += matmul_forward("matmul attn proj", BN, C, C)
            calls.append(norm_forward(BN, C, layer, True, "residual + ln2 fwd"))
            calls += matmul_forward("matmul fc", BN, C, H)
            calls.append(gelu_forward(BN * H))
            calls += matmul_forward("matmul fc proj", BN, H, C)
            calls.append(Call("swincuda_add_kernel", "residual add", 2 * XB * BN * C, XB * BN * C,
                              3 * XB * BN * C))
    CL, NL = s.E << (len(s.depths) - 1), s.res(len(s.depths) - 1) ** 2
    layer = _layer(mode, s.rms_in_cbwc(len(s.depths) - 1))
    calls.append(norm_forward(B * NL, CL, layer, False, "final norm fwd"))
    calls.append(Call("swincuda_pool_kernel", "mean pool", XB * B * NL * CL, XB * B * CL,
                      XB * B * NL * CL + XB * B * CL))
    calls += matmul_forward("matmul head", B, CL, s.K)
    if labels:
        calls += labelled_loss(B, s.K)
    return calls


def swin_backward(s, B, mode, sms=SMS):
    E, N0, last = s.E, s.res(0) ** 2, len(s.depths) - 1
    CL, NL = s.E << last, s.res(last) ** 2
    cbwc = mode == "cbwc"
    calls = [classifier_loss(B, s.K, True)] + column_sum(B, s.K, "bias grad head")
    calls += matmul_backward("matmul head", B, CL, s.K)
    n = B * NL * CL
    calls.append(Call("swincuda_pool_backward_kernel", "mean pool bwd", XB * n, XB * n,
                      XB * (n + B * CL)))
    calls.append(memset("d = 0", XB * n))
    calls += norm_backward(B * NL, CL, _layer(mode, s.rms_in_cbwc(last)), "final norm bwd", sms)
    blocks = _swin_blocks(s)
    for st in range(last, -1, -1):
        for (bst, C, NH, res, W, shift, rms) in reversed(blocks):
            if bst != st:
                continue
            BN, H, layer = B * res * res, C * s.R, _layer(mode, rms)
            if cbwc and rms:
                calls.append(centre_rows(BN, C, "cbwc centre dy (mlp)"))
            calls += column_sum(BN, C, "bias grad fc proj")
            calls += matmul_backward("matmul fc proj", BN, H, C)
            calls.append(gelu_backward(BN * H))
            calls += column_sum(BN, H, "bias grad fc")
            calls += matmul_backward("matmul fc", BN, C, H)
            calls += norm_backward(BN, C, layer, "ln2 bwd", sms)
            if cbwc and rms:
                calls.append(centre_rows(BN, C, "cbwc centre dy (attn)"))
            calls += column_sum(BN, C, "bias grad attn proj")
            calls += matmul_backward("matmul attn proj", BN, C, C)
            calls += swin_tc_backward(B, res, W, shift, C, NH)
            calls += column_sum(BN, 3 * C, "bias grad qkv")
            calls += matmul_backward("matmul qkv", BN, C, 3 * C)
            calls += norm_backward(BN, C, layer, "ln1 bwd", sms)
        if st > 0:
            Cin, n = (s.E << st) // 2, B * s.res(st) ** 2
            if cbwc and s.rms_in_cbwc(st):
                calls.append(centre_rows(n, 2 * Cin, "cbwc centre dy (merge)"))
            calls += matmul_backward("matmul merge reduction", n, 4 * Cin, 2 * Cin)
            calls.append(memset("merge d = 0", XB * n * 4 * Cin))
            layer = _layer(mode, s.merge_rms_in_cbwc())
            calls += norm_backward(n, 4 * Cin, layer, "merge norm bwd", sms)
            calls.append(Call("swin_patch_merge_backward_kernel<P>", "patch merge bwd", XB * 4 * n * Cin,
                              XB * 4 * n * Cin, 2 * XB * 4 * n * Cin))
            if s.centre_ops:
                calls.append(centre_rows(4 * n, Cin, "centring op bwd"))
    if s.centre_ops:
        calls.append(centre_rows(B * N0, E, "centring op bwd"))
    calls.append(memset("dln = 0", XB * B * N0 * E))
    calls += norm_backward(B * N0, E, mode == "ln", "patch norm bwd", sms)
    if cbwc:
        calls.append(centre_rows(B * N0, E, "cbwc centre dy (patch)"))
    calls += patch_embed_backward(B * N0, s.PD, E)
    return calls


def swin_update(s):
    """the step's scalars (the norm over the padded vector) and
    swincuda_update_queued: an adamw_kernel a tensor"""
    return step_scalars(s.dev_parameters()) + [adamw(n, "adamw", sliced=False)
                                               for n, _ in s.tensors()]


def swin_train_step(s, B, mode, sms=SMS):
    return (swin_forward(s, B, mode) + [memset("zero grads", F32 * s.dev_parameters())] +
            swin_backward(s, B, mode, sms) + swin_update(s))


def swin_train_program(s, B, mode, steps, eval_batches, sms=4):
    calls = [params_to_x("setup: bf16 parameters", s.dev_parameters())]
    for _ in range(steps):
        calls += swin_train_step(s, B, mode, sms)
    for n in eval_batches:
        calls += swin_forward(s, n, mode)
    return calls
