// Runs an exported GPT-2 ONNX graph in ONNX Runtime (onnxruntime-node, CPU)
// on B x T token ids drawn from a seeded LCG below V, for the ONNX export
// test (test/suites/onnx_export.sh):
//   node test/onnx_ort.js MODEL.onnx B T V SEED OUTPREFIX
// writes OUTPREFIX.tokens.i32 (B*T int32), OUTPREFIX.logits.f32 (B*T*V
// float32, little-endian) and OUTPREFIX.opt.onnx (the graph after ORT's
// optimizations, to see which kernels it fused).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', 'data', 'npm_ort', 'node_modules', 'onnxruntime-node'));

async function main() {
    const [model, B, T, V, seed, out] = process.argv.slice(2);
    if (out === undefined) {
        console.error('usage: node test/onnx_ort.js MODEL.onnx B T V SEED OUTPREFIX');
        process.exit(2);
    }
    const n = Number(B) * Number(T);
    const ids = new BigInt64Array(n);
    const ids32 = new Int32Array(n);
    let state = BigInt(seed) & 0xffffffffn;
    for (let i = 0; i < n; i++) { // 32-bit LCG (Numerical Recipes)
        state = (state * 1664525n + 1013904223n) & 0xffffffffn;
        ids32[i] = Number(state % BigInt(V));
        ids[i] = BigInt(ids32[i]);
    }
    const session = await ort.InferenceSession.create(model, {
        executionProviders: ['cpu'],
        logSeverityLevel: 3, // errors only (not the optimizer's notes)
        optimizedModelFilePath: out + '.opt.onnx',
    });
    const result = await session.run({idx: new ort.Tensor('int64', ids, [Number(B), Number(T)])});
    const logits = result.logits;
    if (logits.dims.join(',') !== [B, T, V].join(',')) {
        console.error(`logits have dims ${logits.dims}, expected ${[B, T, V]}`);
        process.exit(1);
    }
    fs.writeFileSync(out + '.tokens.i32', Buffer.from(ids32.buffer));
    fs.writeFileSync(out + '.logits.f32', Buffer.from(logits.data.buffer, logits.data.byteOffset,
                                                      logits.data.byteLength));
    console.log(`onnx_ort: ${path.basename(model)}: logits [${logits.dims}] from ONNX Runtime ${ort.env.versions.common}`);
}
main().catch((e) => { console.error(`onnx_ort: ${e.message}`); process.exit(1); });
