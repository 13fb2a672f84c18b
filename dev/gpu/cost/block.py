"""The parts of the pre-LN block (llmc/cuda/transformer_block.cuh) that -fe
changes, shared by GPT-2 (gpt2.py) and ViT (vision.py): with the epilogues
fused (-fe 1, the trainers' default) GELU rides the fc GEMM (GELU_AUX_BIAS),
its gradient and fc's bias gradient the fc-proj dx GEMM (DGELU_BGRAD), the
other bias gradients the dW GEMMs (BGRADB), and one launch a layer adds the
four to the gradients; with -fe 0 separate GELU kernels and column sums.
"""

from kernels import (column_sum, gelu_backward, gelu_forward, matmul_backward,
                     matmul_backward_dgelu, matmul_backward_weight_bgrad, matmul_forward,
                     matmul_forward_gelu, segments_accumulate)

FUSED = True  # -fe 1


def fc_gelu_forward(BT, C, H, fused=FUSED):
    """fch = ln2 Wfc + bfc, fch_gelu = GELU(fch)"""
    if fused:
        return matmul_forward_gelu("matmul fc", BT, C, H)
    return matmul_forward("matmul fc", BT, C, H) + [gelu_forward(BT * H)]


def writer_backward(what, BT, IC, OC, fused=FUSED):
    """a linear layer's bias gradient, dW and dx (qkv, attn proj)"""
    if fused:
        return matmul_backward_weight_bgrad(what, BT, IC, OC) + \
            matmul_backward(what, BT, IC, OC)[:1]
    return column_sum(BT, OC, "bias grad " + what) + matmul_backward(what, BT, IC, OC)


def mlp_backward(BT, C, H, fused=FUSED):
    """fc proj's bias gradient, dW and dx, GELU's backward, fc's bias gradient,
    dW and dx (the output gradient already centred in cbwc)"""
    if fused:
        return (matmul_backward_weight_bgrad("matmul fc proj", BT, H, C) +
                matmul_backward_dgelu("matmul fc proj", BT, H, C) +
                matmul_backward("matmul fc", BT, C, H))
    return (writer_backward("matmul fc proj", BT, H, C, False) + [gelu_backward(BT * H)] +
            column_sum(BT, H, "bias grad fc") + matmul_backward("matmul fc", BT, C, H))


def bias_grads_add(C, H, fused=FUSED):
    """the layer's four epilogue bias gradients added: fc proj, fc, attn proj, qkv"""
    return [segments_accumulate(C + H + C + 3 * C)] if fused else []
