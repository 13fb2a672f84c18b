// Runs two ONNX models (an original and its fold) in ONNX Runtime
// (onnxruntime-node, CPU) on the same seeded inputs and prints, per output,
// the largest absolute difference relative to the original's largest
// magnitude, for the ONNX fold test (test/suites/onnx_fold.sh):
//   node test/onnx_fold_ort.js A.onnx B.onnx SEED NAME:float:DIMS | NAME:int64:DIMS:V ...
// DIMS is like 2x3x64x64; float inputs are uniform in [-1, 1), int64 inputs
// uniform below V (a seeded 32-bit LCG). Prints "output NAME: rel_diff X (max |a| Y)".
// With OPTIMIZED_OUT=FILE in the environment, B's optimized graph goes to FILE.
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', 'data', 'npm_ort', 'node_modules', 'onnxruntime-node'));

async function main() {
    const [a, b, seed, ...specs] = process.argv.slice(2);
    if (specs.length === 0) {
        console.error('usage: node test/onnx_fold_ort.js A.onnx B.onnx SEED NAME:TYPE:DIMS[:V] ...');
        process.exit(2);
    }
    let state = BigInt(seed) & 0xffffffffn;
    const next = () => { // 32-bit LCG (Numerical Recipes)
        state = (state * 1664525n + 1013904223n) & 0xffffffffn;
        return Number(state);
    };
    const feeds = {};
    for (const spec of specs) {
        const [name, type, dimsText, vocab] = spec.split(':');
        const dims = dimsText.split('x').map(Number);
        const n = dims.reduce((p, d) => p * d, 1);
        if (type === 'float') {
            const x = new Float32Array(n);
            for (let i = 0; i < n; i++) x[i] = next() / 2147483648 - 1;
            feeds[name] = new ort.Tensor('float32', x, dims);
        } else {
            const x = new BigInt64Array(n);
            for (let i = 0; i < n; i++) x[i] = BigInt(next() % Number(vocab));
            feeds[name] = new ort.Tensor('int64', x, dims);
        }
    }
    const opts = {executionProviders: ['cpu'], logSeverityLevel: 3};
    const ra = await (await ort.InferenceSession.create(a, opts)).run(feeds);
    // OPTIMIZED_OUT=FILE: B's graph after ORT's optimizations (which kernels it fused)
    const optsB = process.env.OPTIMIZED_OUT ? {...opts, optimizedModelFilePath: process.env.OPTIMIZED_OUT} : opts;
    const rb = await (await ort.InferenceSession.create(b, optsB)).run(feeds);
    for (const name of Object.keys(ra)) {
        const x = ra[name].data, y = rb[name] ? rb[name].data : null;
        if (y === null || x.length !== y.length) {
            console.log(`output ${name}: missing or of another size in ${path.basename(b)}`);
            process.exit(1);
        }
        let maxAbs = 0, maxDiff = 0;
        for (let i = 0; i < x.length; i++) {
            const d = Math.abs(x[i] - y[i]);
            if (!(d <= maxDiff)) maxDiff = d; // NaN propagates
            if (Math.abs(x[i]) > maxAbs) maxAbs = Math.abs(x[i]);
        }
        console.log(`output ${name}: rel_diff ${maxDiff / maxAbs} (max |a| ${maxAbs}, dims ${ra[name].dims})`);
    }
}
main().catch((e) => { console.error(`onnx_fold_ort: ${e.message}`); process.exit(1); });
