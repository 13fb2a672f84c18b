// ONNX Runtime inference time of two exported GPT-2 graphs (an ln model and
// its fold), interleaved so both see the same machine load:
//   node dev/bench/onnx_bench.js LN.onnx FOLDED.onnx V THREADS REPS B:T...
// prints one line per B:T with the median ms of each and folded / ln.
// Not a test: it asserts nothing (dev/bench/onnx_bench.sh runs it).
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', '..', 'data', 'npm_ort', 'node_modules', 'onnxruntime-node'));

function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function main() {
    const [lnPath, foldedPath, V, threads, reps, ...shapes] = process.argv.slice(2);
    const options = {executionProviders: ['cpu'], intraOpNumThreads: Number(threads),
                     interOpNumThreads: 1, logSeverityLevel: 3};
    const sessions = {ln: await ort.InferenceSession.create(lnPath, options),
                      folded: await ort.InferenceSession.create(foldedPath, options)};
    console.log(`ONNX Runtime ${ort.env.versions.common}, ${threads} threads, median of ${reps}`);
    console.log('| B | T | ln ms | folded ms | folded / ln |');
    console.log('| --- | --- | --- | --- | --- |');
    for (const shape of shapes) {
        const [B, T] = shape.split(':').map(Number);
        const ids = new BigInt64Array(B * T);
        for (let i = 0; i < ids.length; i++) {
            ids[i] = BigInt((i * 7919) % Number(V));
        }
        const feeds = {idx: new ort.Tensor('int64', ids, [B, T])};
        const times = {ln: [], folded: []};
        for (let r = 0; r <= Number(reps); r++) { // round 0 warms up
            for (const name of r % 2 ? ['folded', 'ln'] : ['ln', 'folded']) {
                const t0 = process.hrtime.bigint();
                await sessions[name].run(feeds);
                const ms = Number(process.hrtime.bigint() - t0) / 1e6;
                if (r > 0) {
                    times[name].push(ms);
                }
            }
        }
        const ln = median(times.ln), folded = median(times.folded);
        console.log(`| ${B} | ${T} | ${ln.toFixed(1)} | ${folded.toFixed(1)} | ${(folded / ln).toFixed(3)} |`);
    }
}
main().catch((e) => { console.error(`onnx_bench: ${e.message}`); process.exit(1); });
