#!/usr/bin/env bash
# ONNX Runtime inference, a PyTorch export vs its bin/fold (issue 34): a
# random GPT-2-shaped model written in plain torch.nn (pre-LN, GELU MLP, tied
# head, learned positions up to 4096, symbolic batch and sequence axes),
# exported by torch.onnx.export (opset 17), folded by bin/fold (every LN ->
# the RMS norm ONNX Runtime fuses into SimplifiedLayerNormalization), both
# timed interleaved in onnxruntime-node (CPU) over B:T shapes
# (dev/bench/onnx_bench.js). Not a test: it prints a table, asserts nothing.
#   dev/bench/onnx_fold_bench.sh [L C NH [THREADS [REPS [B:T ...]]]]
set -euo pipefail
cd "$(dirname "$0")/../.."
L=${1:-6} C=${2:-384} NH=${3:-6}
threads=${4:-2}
reps=${5:-3}
shift $(( $# < 5 ? $# : 5 ))
shapes=${*:-1:128 1:512 1:1024 1:2048 1:4096 4:128 4:512 4:1024}
out=${BENCH_OUT:-out/onnx_fold_bench}
mkdir -p "$out"
make -s fold
[ -f data/npm_ort/node_modules/onnxruntime-node/package.json ] || scripts/deps/onnx.sh
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo none), GPT-2-shaped L=$L C=$C NH=$NH V=1024"
model=$out/gpt_L${L}C${C}.onnx
/usr/bin/python3 - "$model" "$L" "$C" "$NH" <<'PYEOF' 2>&1 | { grep -v Warn || true; }
import sys, torch, torch.nn as nn
path, L, C, NH = sys.argv[1], *map(int, sys.argv[2:5])
V, T = 1024, 4096

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = nn.MultiheadAttention(C, NH, batch_first=True)
        self.fc, self.proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.proj(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))

class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList([Block() for _ in range(L)])
        self.ln_f = nn.LayerNorm(C)
    def forward(self, idx):
        t = idx.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        x = self.wte(idx) + self.wpe(torch.arange(t))
        for b in self.blocks:
            x = b(x, mask)
        return self.ln_f(x) @ self.wte.weight.t()

torch.manual_seed(0)
torch.onnx.export(GPT().eval(), (torch.randint(0, V, (1, 16)),), path, opset_version=17,
                  input_names=["idx"], output_names=["logits"],
                  dynamic_axes={"idx": {0: "B", 1: "T"}})
PYEOF
bin/fold "$model" "${model%.onnx}_folded.onnx"
node dev/bench/onnx_bench.js "$model" "${model%.onnx}_folded.onnx" 1024 "$threads" "$reps" $shapes
